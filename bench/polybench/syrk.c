/* PolyBench syrk (examples/polybench/syrk.tc): C := alpha*A*A' + beta*C on the lower
 * triangle (j <= i) of C, in PolyBench's loop order (i; scale row i; then k, j). */
/* LARGE: M=1000,N=1200 */
#include "pb.h"

static void kernel(PB_T alpha, PB_T beta, PB_T A[restrict N][M], PB_T C[restrict N][N]) {
  for (int i = 0; i < N; i++) {
    for (int j = 0; j <= i; j++) C[i][j] *= beta;
    for (int k = 0; k < M; k++)
      for (int j = 0; j <= i; j++) C[i][j] += alpha * A[i][k] * A[j][k];
  }
}

int main(int argc, char **argv) {
  pb_init(argc, argv, "syrk");
  PB_T alpha = pb_scalar("alpha"), beta = pb_scalar("beta");
  PB_T(*A)[M] = pb_in("A", (size_t)N * M);
  PB_T(*C)[N] = pb_in("C", (size_t)N * N);
  PB_RUN(kernel(alpha, beta, A, C));
  pb_check("C", C, (size_t)N * N);
  return pb_finish();
}
