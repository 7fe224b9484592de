/* PolyBench bicg (examples/polybench/bicg.tc): s := A^T * r and q := A * p, both from zero,
 * in PolyBench's single fused loop nest over the rows i and columns j. */
/* LARGE: M=1900,N=2100 */
#include "pb.h"

static void kernel(PB_T A[restrict N][M], PB_T p[restrict M], PB_T r[restrict N],
                   PB_T s[restrict M], PB_T q[restrict N]) {
  for (int i = 0; i < M; i++) s[i] = 0.0;
  for (int i = 0; i < N; i++) {
    q[i] = 0.0;
    for (int j = 0; j < M; j++) {
      s[j] = s[j] + r[i] * A[i][j];
      q[i] = q[i] + A[i][j] * p[j];
    }
  }
}

int main(int argc, char **argv) {
  pb_init(argc, argv, "bicg");
  PB_T(*A)[M] = pb_in("A", (size_t)N * M);
  PB_T *p = pb_in("p", (size_t)M);
  PB_T *r = pb_in("r", (size_t)N);
  PB_T *s = pb_out((size_t)M);
  PB_T *q = pb_out((size_t)N);
  PB_RUN(kernel(A, p, r, s, q));
  pb_check("s", s, (size_t)M);
  pb_check("q", q, (size_t)N);
  return pb_finish();
}
