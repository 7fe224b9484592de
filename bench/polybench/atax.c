/* PolyBench atax (examples/polybench/atax.tc): y := A^T * (A * x) through tmp := A * x, in
 * PolyBench's loop order (one loop over the rows i computing tmp(i), then adding its
 * contribution to every y(j)). */
/* LARGE: M=1900,N=2100 */
#include "pb.h"

static void kernel(PB_T A[restrict M][N], PB_T x[restrict N], PB_T y[restrict N],
                   PB_T tmp[restrict M]) {
  for (int i = 0; i < N; i++) y[i] = 0.0;
  for (int i = 0; i < M; i++) {
    tmp[i] = 0.0;
    for (int j = 0; j < N; j++) tmp[i] = tmp[i] + A[i][j] * x[j];
    for (int j = 0; j < N; j++) y[j] = y[j] + A[i][j] * tmp[i];
  }
}

int main(int argc, char **argv) {
  pb_init(argc, argv, "atax");
  PB_T(*A)[N] = pb_in("A", (size_t)M * N);
  PB_T *x = pb_in("x", (size_t)N);
  PB_T *y = pb_out((size_t)N);
  PB_T *tmp = pb_out((size_t)M);
  PB_RUN(kernel(A, x, y, tmp));
  pb_check("y", y, (size_t)N);
  pb_check("tmp", tmp, (size_t)M);
  return pb_finish();
}
