/* Naive GEMM, C = A * B (f32, row-major), as the tensor program states it: i-j-k loops. */
void NAIVE(const float *restrict A, const float *restrict B, float *restrict C) {
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      C[i * N + j] = 0.0f;
      for (int k = 0; k < K; k++)
        C[i * N + j] += A[i * K + k] * B[k * N + j];
    }
}
