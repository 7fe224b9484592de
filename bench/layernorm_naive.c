/* Naive layer normalisation over the last axis of an R x N matrix (examples/layernorm.tc),
 * f32, temporaries on the heap as the tensor program declares them, loops in program
 * order. */
#include <math.h>
#include <stdlib.h>
void NAIVE(const float *restrict X, const float *restrict g, const float *restrict b,
           float *restrict Y) {
  float *restrict mean = malloc(sizeof(float) * R), *restrict var = malloc(sizeof(float) * R);
  float *restrict d = malloc(sizeof(float) * (size_t)R * N);
  if (!mean || !var || !d) { free(mean); free(var); free(d); return; }
  for (int r = 0; r < R; r++) {
    mean[r] = 0.0f;
    for (int j = 0; j < N; j++)
      mean[r] += X[r * N + j];
  }
  for (int r = 0; r < R; r++)
    mean[r] = mean[r] / N;
  for (int r = 0; r < R; r++)
    for (int j = 0; j < N; j++)
      d[r * N + j] = X[r * N + j] - mean[r];
  for (int r = 0; r < R; r++) {
    var[r] = 0.0f;
    for (int j = 0; j < N; j++)
      var[r] += d[r * N + j] * d[r * N + j];
  }
  for (int r = 0; r < R; r++)
    for (int j = 0; j < N; j++)
      Y[r * N + j] = d[r * N + j] * (1.0f / sqrtf(var[r] / N + 0.00001f)) * g[j] + b[j];
  free(mean); free(var); free(d);
}
