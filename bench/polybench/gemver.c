/* PolyBench gemver (examples/polybench/gemver.tc): A := A + u1*v1' + u2*v2',
 * x := x + beta*A'*y, x := x + z, w := w + alpha*A*x, as PolyBench's four loop nests. */
/* LARGE: N=2000 */
#include "pb.h"

static void kernel(PB_T alpha, PB_T beta, PB_T A[restrict N][N], PB_T u1[restrict N],
                   PB_T v1[restrict N], PB_T u2[restrict N], PB_T v2[restrict N],
                   PB_T w[restrict N], PB_T x[restrict N], PB_T y[restrict N],
                   PB_T z[restrict N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) A[i][j] = A[i][j] + u1[i] * v1[j] + u2[i] * v2[j];
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) x[i] = x[i] + beta * A[j][i] * y[j];
  for (int i = 0; i < N; i++) x[i] = x[i] + z[i];
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) w[i] = w[i] + alpha * A[i][j] * x[j];
}

int main(int argc, char **argv) {
  pb_init(argc, argv, "gemver");
  PB_T alpha = pb_scalar("alpha"), beta = pb_scalar("beta");
  PB_T(*A)[N] = pb_in("A", (size_t)N * N);
  PB_T *u1 = pb_in("u1", (size_t)N);
  PB_T *v1 = pb_in("v1", (size_t)N);
  PB_T *u2 = pb_in("u2", (size_t)N);
  PB_T *v2 = pb_in("v2", (size_t)N);
  PB_T *x = pb_in("x", (size_t)N);
  PB_T *y = pb_in("y", (size_t)N);
  PB_T *z = pb_in("z", (size_t)N);
  PB_T *w = pb_in("w", (size_t)N);
  PB_RUN(kernel(alpha, beta, A, u1, v1, u2, v2, w, x, y, z));
  pb_check("w", w, (size_t)N);
  pb_check("A", A, (size_t)N * N);
  pb_check("x", x, (size_t)N);
  return pb_finish();
}
