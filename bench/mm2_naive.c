/* Naive 2mm without scaling: T = A * B, E = T * C (f32), the temporary on the heap. */
#include <stdlib.h>
void NAIVE(const float *restrict A, const float *restrict B, const float *restrict C,
           float *restrict E) {
  float *restrict T = malloc(sizeof(float) * (size_t)NI * NJ);
  if (!T) return;
  for (int i = 0; i < NI; i++)
    for (int j = 0; j < NJ; j++) {
      T[i * NJ + j] = 0.0f;
      for (int k = 0; k < NK; k++)
        T[i * NJ + j] += A[i * NK + k] * B[k * NJ + j];
    }
  for (int i = 0; i < NI; i++)
    for (int l = 0; l < NL; l++) {
      E[i * NL + l] = 0.0f;
      for (int j = 0; j < NJ; j++)
        E[i * NL + l] += T[i * NJ + j] * C[j * NL + l];
    }
  free(T);
}
