/* PolyBench trisolv (examples/polybench/trisolv.tc): first L's diagonal made at least 1
 * (L(i, i) := 1 + |L(i, i)|, in place), then forward substitution x := L^-1 * b, in
 * PolyBench's loop order. */
/* LARGE: N=2000 */
#include "pb.h"

static void kernel(PB_T L[restrict N][N], PB_T b[restrict N], PB_T x[restrict N]) {
  for (int i = 0; i < N; i++) L[i][i] = 1.0 + fabs(L[i][i]);
  for (int i = 0; i < N; i++) {
    x[i] = b[i];
    for (int j = 0; j < i; j++) x[i] -= L[i][j] * x[j];
    x[i] = x[i] / L[i][i];
  }
}

int main(int argc, char **argv) {
  pb_init(argc, argv, "trisolv");
  PB_T(*L)[N] = pb_in("L", (size_t)N * N);
  PB_T *b = pb_in("b", (size_t)N);
  PB_T *x = pb_out((size_t)N);
  PB_RUN(kernel(L, b, x));
  pb_check("x", x, (size_t)N);
  pb_check("L", L, (size_t)N * N);
  return pb_finish();
}
