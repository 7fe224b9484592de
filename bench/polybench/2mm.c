/* PolyBench 2mm (examples/polybench/2mm.tc): tmp := alpha * A * B, then
 * D := beta * D + tmp * C, in PolyBench's loop order (i, j, then k for each product). */
/* LARGE: NI=800,NJ=900,NK=1100,NL=1200 */
#include "pb.h"

static void kernel(PB_T alpha, PB_T beta, PB_T A[restrict NI][NK], PB_T B[restrict NK][NJ],
                   PB_T C[restrict NJ][NL], PB_T tmp[restrict NI][NJ],
                   PB_T D[restrict NI][NL]) {
  for (int i = 0; i < NI; i++)
    for (int j = 0; j < NJ; j++) {
      tmp[i][j] = 0.0;
      for (int k = 0; k < NK; k++) tmp[i][j] += alpha * A[i][k] * B[k][j];
    }
  for (int i = 0; i < NI; i++)
    for (int j = 0; j < NL; j++) {
      D[i][j] *= beta;
      for (int k = 0; k < NJ; k++) D[i][j] += tmp[i][k] * C[k][j];
    }
}

int main(int argc, char **argv) {
  pb_init(argc, argv, "2mm");
  PB_T alpha = pb_scalar("alpha"), beta = pb_scalar("beta");
  PB_T(*A)[NK] = pb_in("A", (size_t)NI * NK);
  PB_T(*B)[NJ] = pb_in("B", (size_t)NK * NJ);
  PB_T(*C)[NL] = pb_in("C", (size_t)NJ * NL);
  PB_T(*D)[NL] = pb_in("D", (size_t)NI * NL);
  PB_T(*tmp)[NJ] = pb_out((size_t)NI * NJ);
  PB_RUN(kernel(alpha, beta, A, B, C, tmp, D));
  pb_check("tmp", tmp, (size_t)NI * NJ);
  pb_check("D", D, (size_t)NI * NL);
  return pb_finish();
}
