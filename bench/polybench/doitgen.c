/* PolyBench doitgen (examples/polybench/doitgen.tc): every row A(r, q, :) is replaced by
 * A(r, q, :) * C4, through the buffer sum (which ends holding the last row's product), in
 * PolyBench's loop order. */
/* LARGE: NQ=140,NR=150,NP=160 */
#include "pb.h"

static void kernel(PB_T A[restrict NR][NQ][NP], PB_T C4[restrict NP][NP],
                   PB_T sum[restrict NP]) {
  for (int r = 0; r < NR; r++)
    for (int q = 0; q < NQ; q++) {
      for (int p = 0; p < NP; p++) {
        sum[p] = 0.0;
        for (int s = 0; s < NP; s++) sum[p] += A[r][q][s] * C4[s][p];
      }
      for (int p = 0; p < NP; p++) A[r][q][p] = sum[p];
    }
}

int main(int argc, char **argv) {
  pb_init(argc, argv, "doitgen");
  PB_T(*A)[NQ][NP] = pb_in("A", (size_t)NR * NQ * NP);
  PB_T(*C4)[NP] = pb_in("C4", (size_t)NP * NP);
  PB_T *sum = pb_out((size_t)NP);
  PB_RUN(kernel(A, C4, sum));
  pb_check("sum", sum, (size_t)NP);
  pb_check("A", A, (size_t)NR * NQ * NP);
  return pb_finish();
}
