/* Naive row-wise softmax (subtract the row maximum), f32, temporaries on the heap as the
 * tensor program declares them. */
#include <math.h>
#include <stdlib.h>
void NAIVE(const float *restrict X, float *restrict Y) {
  float *restrict mx = malloc(sizeof(float) * R), *restrict s = malloc(sizeof(float) * R);
  float *restrict e = malloc(sizeof(float) * (size_t)R * N);
  if (!mx || !s || !e) { free(mx); free(s); free(e); return; }
  for (int r = 0; r < R; r++) {
    mx[r] = -INFINITY;
    for (int j = 0; j < N; j++)
      mx[r] = X[r * N + j] > mx[r] ? X[r * N + j] : mx[r];
  }
  for (int r = 0; r < R; r++)
    for (int j = 0; j < N; j++)
      e[r * N + j] = expf(X[r * N + j] - mx[r]);
  for (int r = 0; r < R; r++) {
    s[r] = 0.0f;
    for (int j = 0; j < N; j++)
      s[r] += e[r * N + j];
  }
  for (int r = 0; r < R; r++)
    for (int j = 0; j < N; j++)
      Y[r * N + j] = e[r * N + j] / s[r];
  free(mx); free(s); free(e);
}
