/* PolyBench symm (examples/polybench/symm.tc): C := alpha*A*B + beta*C with A symmetric and
 * only its lower triangle read, in PolyBench's loop order (i, j, then k < i, with the scalar
 * temp2 per (i, j)). */
/* LARGE: M=1000,N=1200 */
#include "pb.h"

static void kernel(PB_T alpha, PB_T beta, PB_T A[restrict M][M], PB_T B[restrict M][N],
                   PB_T C[restrict M][N]) {
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      PB_T temp2 = 0.0;
      for (int k = 0; k < i; k++) {
        C[k][j] += alpha * B[i][j] * A[i][k];
        temp2 += B[k][j] * A[i][k];
      }
      C[i][j] = beta * C[i][j] + alpha * B[i][j] * A[i][i] + alpha * temp2;
    }
}

int main(int argc, char **argv) {
  pb_init(argc, argv, "symm");
  PB_T alpha = pb_scalar("alpha"), beta = pb_scalar("beta");
  PB_T(*A)[M] = pb_in("A", (size_t)M * M);
  PB_T(*B)[N] = pb_in("B", (size_t)M * N);
  PB_T(*C)[N] = pb_in("C", (size_t)M * N);
  PB_RUN(kernel(alpha, beta, A, B, C));
  pb_check("C", C, (size_t)M * N);
  return pb_finish();
}
