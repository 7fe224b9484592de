/* Naive GEMM, C = A * B (f32, row-major), as the tensor program states it: i-j-k loops.
 *
 * The loops index C99 2-D arrays (`A[i][k]`), not flat pointers (`A[i * K + k]`): Polly's
 * matmul pattern optimisation only fires on the 2-D form (clang 14 + Polly, 1024^3: about
 * 12 GFLOP/s flat, 32 GFLOP/s 2-D, 40-50 GFLOP/s 2-D with -ffp-contract=fast). gcc and
 * plain clang run both forms at the same speed. The exported entry keeps the flat-pointer
 * signature the harness calls and casts to array pointers (the kernel is inlined). */
/* -DBT: C = A * B^T with B stored N x K (examples/matmul_bt.tc, a linear layer). */
#ifdef BT
#define B_ROWS N
#define B_COLS K
#define B_AT(k, j) B[j][k]
#else
#define B_ROWS K
#define B_COLS N
#define B_AT(k, j) B[k][j]
#endif

static void kernel(const float A[restrict M][K], const float B[restrict B_ROWS][B_COLS],
                   float C[restrict M][N]) {
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      C[i][j] = 0.0f;
      for (int k = 0; k < K; k++)
        C[i][j] += A[i][k] * B_AT(k, j);
    }
}

void NAIVE(const float *restrict A, const float *restrict B, float *restrict C) {
  kernel((const float (*)[K])A, (const float (*)[B_COLS])B, (float (*)[N])C);
}
