/* PolyBench syr2k (examples/polybench/syr2k.tc): C := alpha*A*B' + alpha*B*A' + beta*C on
 * the lower triangle (j <= i) of C, in PolyBench's loop order (i; scale row i; then k, j). */
/* LARGE: M=1000,N=1200 */
#include "pb.h"

static void kernel(PB_T alpha, PB_T beta, PB_T A[restrict N][M], PB_T B[restrict N][M],
                   PB_T C[restrict N][N]) {
  for (int i = 0; i < N; i++) {
    for (int j = 0; j <= i; j++) C[i][j] *= beta;
    for (int k = 0; k < M; k++)
      for (int j = 0; j <= i; j++)
        C[i][j] += A[j][k] * alpha * B[i][k] + B[j][k] * alpha * A[i][k];
  }
}

int main(int argc, char **argv) {
  pb_init(argc, argv, "syr2k");
  PB_T alpha = pb_scalar("alpha"), beta = pb_scalar("beta");
  PB_T(*A)[M] = pb_in("A", (size_t)N * M);
  PB_T(*B)[M] = pb_in("B", (size_t)N * M);
  PB_T(*C)[N] = pb_in("C", (size_t)N * N);
  PB_RUN(kernel(alpha, beta, A, B, C));
  pb_check("C", C, (size_t)N * N);
  return pb_finish();
}
