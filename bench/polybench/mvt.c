/* PolyBench mvt (examples/polybench/mvt.tc): x1 := x1 + A * y_1, then x2 := x2 + A^T * y_2,
 * in PolyBench's loop order (i, then j, for both). */
/* LARGE: N=2000 */
#include "pb.h"

static void kernel(PB_T A[restrict N][N], PB_T y_1[restrict N], PB_T y_2[restrict N],
                   PB_T x1[restrict N], PB_T x2[restrict N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) x1[i] = x1[i] + A[i][j] * y_1[j];
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) x2[i] = x2[i] + A[j][i] * y_2[j];
}

int main(int argc, char **argv) {
  pb_init(argc, argv, "mvt");
  PB_T(*A)[N] = pb_in("A", (size_t)N * N);
  PB_T *y_1 = pb_in("y_1", (size_t)N);
  PB_T *y_2 = pb_in("y_2", (size_t)N);
  PB_T *x1 = pb_in("x1", (size_t)N);
  PB_T *x2 = pb_in("x2", (size_t)N);
  PB_RUN(kernel(A, y_1, y_2, x1, x2));
  pb_check("x1", x1, (size_t)N);
  pb_check("x2", x2, (size_t)N);
  return pb_finish();
}
