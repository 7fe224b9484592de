/* Naive scaled dot-product attention for one head (examples/attention.tc), L x D f32,
 * temporaries on the heap as the tensor program declares them, loops in program order. */
#include <math.h>
#include <stdlib.h>
void NAIVE(const float *restrict Q, const float *restrict K, const float *restrict V,
           float *restrict O) {
  float *restrict S = malloc(sizeof(float) * (size_t)L * L);
  float *restrict P = malloc(sizeof(float) * (size_t)L * L);
  float *restrict mx = malloc(sizeof(float) * L), *restrict l = malloc(sizeof(float) * L);
  if (!S || !P || !mx || !l) { free(S); free(P); free(mx); free(l); return; }
  for (int i = 0; i < L; i++)
    for (int j = 0; j < L; j++) {
      S[i * L + j] = 0.0f;
      for (int d = 0; d < D; d++)
        S[i * L + j] += Q[i * D + d] * K[j * D + d];
    }
  for (int i = 0; i < L; i++) {
    mx[i] = -INFINITY;
    for (int j = 0; j < L; j++)
      mx[i] = S[i * L + j] > mx[i] ? S[i * L + j] : mx[i];
  }
  for (int i = 0; i < L; i++)
    for (int j = 0; j < L; j++)
      P[i * L + j] = expf((S[i * L + j] - mx[i]) / sqrtf((float)D));
  for (int i = 0; i < L; i++) {
    l[i] = 0.0f;
    for (int j = 0; j < L; j++)
      l[i] += P[i * L + j];
  }
  for (int i = 0; i < L; i++)
    for (int e = 0; e < D; e++) {
      O[i * D + e] = 0.0f;
      for (int j = 0; j < L; j++)
        O[i * D + e] += P[i * L + j] * V[j * D + e];
    }
  for (int i = 0; i < L; i++)
    for (int e = 0; e < D; e++)
      O[i * D + e] = O[i * D + e] / l[i];
  free(S); free(P); free(mx); free(l);
}
