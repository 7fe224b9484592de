/* PolyBench gesummv (examples/polybench/gesummv.tc): y := alpha*A*x + beta*B*x, through the
 * row sums tmp = A*x and y = B*x, in PolyBench's loop order (one loop over i holding both
 * sums over j). */
/* LARGE: N=1300 */
#include "pb.h"

static void kernel(PB_T alpha, PB_T beta, PB_T A[restrict N][N], PB_T B[restrict N][N],
                   PB_T tmp[restrict N], PB_T x[restrict N], PB_T y[restrict N]) {
  for (int i = 0; i < N; i++) {
    tmp[i] = 0.0;
    y[i] = 0.0;
    for (int j = 0; j < N; j++) {
      tmp[i] = A[i][j] * x[j] + tmp[i];
      y[i] = B[i][j] * x[j] + y[i];
    }
    y[i] = alpha * tmp[i] + beta * y[i];
  }
}

int main(int argc, char **argv) {
  pb_init(argc, argv, "gesummv");
  PB_T alpha = pb_scalar("alpha"), beta = pb_scalar("beta");
  PB_T(*A)[N] = pb_in("A", (size_t)N * N);
  PB_T(*B)[N] = pb_in("B", (size_t)N * N);
  PB_T *x = pb_in("x", (size_t)N);
  PB_T *tmp = pb_out((size_t)N);
  PB_T *y = pb_out((size_t)N);
  PB_RUN(kernel(alpha, beta, A, B, tmp, x, y));
  pb_check("tmp", tmp, (size_t)N);
  pb_check("y", y, (size_t)N);
  return pb_finish();
}
