/* PolyBench durbin (examples/polybench/durbin.tc): first r := R0 / (2N) (the .tc's
 * diagonally dominant Toeplitz data), then the Levinson-Durbin recursion for y, in
 * PolyBench's loop order with its scalars alpha, beta, sum and its array z (here an input
 * updated in place). */
/* LARGE: N=2000 */
#include "pb.h"

static void kernel(PB_T R0[restrict N], PB_T z[restrict N], PB_T y[restrict N],
                   PB_T r[restrict N]) {
  PB_T alpha, beta, sum;
  for (int i = 0; i < N; i++) r[i] = R0[i] / (2.0 * N);
  y[0] = -r[0];
  beta = 1.0;
  alpha = -r[0];
  for (int k = 1; k < N; k++) {
    beta = (1 - alpha * alpha) * beta;
    sum = 0.0;
    for (int i = 0; i < k; i++) sum += r[k - i - 1] * y[i];
    alpha = -(r[k] + sum) / beta;
    for (int i = 0; i < k; i++) z[i] = y[i] + alpha * y[k - i - 1];
    for (int i = 0; i < k; i++) y[i] = z[i];
    y[k] = alpha;
  }
}

int main(int argc, char **argv) {
  pb_init(argc, argv, "durbin");
  PB_T *R0 = pb_in("R0", (size_t)N);
  PB_T *z = pb_in("z", (size_t)N);
  PB_T *y = pb_out((size_t)N);
  PB_T *r = pb_out((size_t)N);
  PB_RUN(kernel(R0, z, y, r));
  pb_check("y", y, (size_t)N);
  pb_check("z", z, (size_t)N);
  return pb_finish();
}
