/* Naive 2mm without scaling: T = A * B, E = T * C (f32), the temporary on the heap.
 *
 * C99 2-D array indexing (`A[i][k]`) so that Polly's matmul pattern optimisation can fire
 * (it does not on flat `A[i * NK + k]` indexing; see bench/gemm_naive.c). The exported
 * entry keeps the flat-pointer signature the harness calls. */
#include <stdlib.h>
static void kernel(const float A[restrict NI][NK], const float B[restrict NK][NJ],
                   const float C[restrict NJ][NL], float E[restrict NI][NL],
                   float T[restrict NI][NJ]) {
  for (int i = 0; i < NI; i++)
    for (int j = 0; j < NJ; j++) {
      T[i][j] = 0.0f;
      for (int k = 0; k < NK; k++)
        T[i][j] += A[i][k] * B[k][j];
    }
  for (int i = 0; i < NI; i++)
    for (int l = 0; l < NL; l++) {
      E[i][l] = 0.0f;
      for (int j = 0; j < NJ; j++)
        E[i][l] += T[i][j] * C[j][l];
    }
}

void NAIVE(const float *restrict A, const float *restrict B, const float *restrict C,
           float *restrict E) {
  float *T = malloc(sizeof(float) * (size_t)NI * NJ);
  if (!T) return;
  kernel((const float (*)[NK])A, (const float (*)[NJ])B, (const float (*)[NL])C,
         (float (*)[NL])E, (float (*)[NJ])T);
  free(T);
}
