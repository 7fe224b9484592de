/* PolyBench gemm (examples/polybench/gemm.tc): C := alpha * A * B + beta * C, in
 * PolyBench's loop order (i, then j to scale C's row, then k and j). */
/* LARGE: NI=1000,NJ=1100,NK=1200 */
#include "pb.h"

static void kernel(PB_T alpha, PB_T beta, PB_T A[restrict NI][NK], PB_T B[restrict NK][NJ],
                   PB_T C[restrict NI][NJ]) {
  for (int i = 0; i < NI; i++) {
    for (int j = 0; j < NJ; j++) C[i][j] *= beta;
    for (int k = 0; k < NK; k++)
      for (int j = 0; j < NJ; j++) C[i][j] += alpha * A[i][k] * B[k][j];
  }
}

int main(int argc, char **argv) {
  pb_init(argc, argv, "gemm");
  PB_T alpha = pb_scalar("alpha"), beta = pb_scalar("beta");
  PB_T(*A)[NK] = pb_in("A", (size_t)NI * NK);
  PB_T(*B)[NJ] = pb_in("B", (size_t)NK * NJ);
  PB_T(*C)[NJ] = pb_in("C", (size_t)NI * NJ);
  PB_RUN(kernel(alpha, beta, A, B, C));
  pb_check("C", C, (size_t)NI * NJ);
  return pb_finish();
}
