/* PolyBench 3mm (examples/polybench/3mm.tc): E := A * B, F := C * D, G := E * F, each
 * product in PolyBench's loop order (i, j, then k, from zero). */
/* LARGE: NI=800,NJ=900,NK=1000,NL=1100,NM=1200 */
#include "pb.h"

static void kernel(PB_T A[restrict NI][NK], PB_T B[restrict NK][NJ], PB_T C[restrict NJ][NM],
                   PB_T D[restrict NM][NL], PB_T E[restrict NI][NJ], PB_T F[restrict NJ][NL],
                   PB_T G[restrict NI][NL]) {
  for (int i = 0; i < NI; i++)
    for (int j = 0; j < NJ; j++) {
      E[i][j] = 0.0;
      for (int k = 0; k < NK; k++) E[i][j] += A[i][k] * B[k][j];
    }
  for (int i = 0; i < NJ; i++)
    for (int j = 0; j < NL; j++) {
      F[i][j] = 0.0;
      for (int k = 0; k < NM; k++) F[i][j] += C[i][k] * D[k][j];
    }
  for (int i = 0; i < NI; i++)
    for (int j = 0; j < NL; j++) {
      G[i][j] = 0.0;
      for (int k = 0; k < NJ; k++) G[i][j] += E[i][k] * F[k][j];
    }
}

int main(int argc, char **argv) {
  pb_init(argc, argv, "3mm");
  PB_T(*A)[NK] = pb_in("A", (size_t)NI * NK);
  PB_T(*B)[NJ] = pb_in("B", (size_t)NK * NJ);
  PB_T(*C)[NM] = pb_in("C", (size_t)NJ * NM);
  PB_T(*D)[NL] = pb_in("D", (size_t)NM * NL);
  PB_T(*E)[NJ] = pb_out((size_t)NI * NJ);
  PB_T(*F)[NL] = pb_out((size_t)NJ * NL);
  PB_T(*G)[NL] = pb_out((size_t)NI * NL);
  PB_RUN(kernel(A, B, C, D, E, F, G));
  pb_check("E", E, (size_t)NI * NJ);
  pb_check("F", F, (size_t)NJ * NL);
  pb_check("G", G, (size_t)NI * NL);
  return pb_finish();
}
