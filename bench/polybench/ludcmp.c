/* PolyBench ludcmp (examples/polybench/ludcmp.tc): first A := M0*M0' + N*I (the .tc's
 * symmetric positive definite input), then A's LU decomposition in place without pivoting,
 * forward substitution L y = b and back substitution U x = y, in PolyBench's loop order
 * with its scalar w. */
/* LARGE: N=2000 */
#include "pb.h"

static void kernel(PB_T M0[restrict N][N], PB_T b[restrict N], PB_T x[restrict N],
                   PB_T y[restrict N], PB_T A[restrict N][N]) {
  PB_T w;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      A[i][j] = 0.0;
      for (int k = 0; k < N; k++) A[i][j] += M0[i][k] * M0[j][k];
    }
  for (int i = 0; i < N; i++) A[i][i] += N;
  for (int i = 0; i < N; i++) {
    for (int j = 0; j < i; j++) {
      w = A[i][j];
      for (int k = 0; k < j; k++) w -= A[i][k] * A[k][j];
      A[i][j] = w / A[j][j];
    }
    for (int j = i; j < N; j++) {
      w = A[i][j];
      for (int k = 0; k < i; k++) w -= A[i][k] * A[k][j];
      A[i][j] = w;
    }
  }
  for (int i = 0; i < N; i++) {
    w = b[i];
    for (int j = 0; j < i; j++) w -= A[i][j] * y[j];
    y[i] = w;
  }
  for (int i = N - 1; i >= 0; i--) {
    w = y[i];
    for (int j = i + 1; j < N; j++) w -= A[i][j] * x[j];
    x[i] = w / A[i][i];
  }
}

int main(int argc, char **argv) {
  pb_init(argc, argv, "ludcmp");
  PB_T(*M0)[N] = pb_in("M0", (size_t)N * N);
  PB_T *b = pb_in("b", (size_t)N);
  PB_T *x = pb_in("x", (size_t)N);
  PB_T *y = pb_in("y", (size_t)N);
  PB_T(*A)[N] = pb_out((size_t)N * N);
  PB_RUN(kernel(M0, b, x, y, A));
  pb_check("A", A, (size_t)N * N);
  pb_check("x", x, (size_t)N);
  pb_check("y", y, (size_t)N);
  return pb_finish();
}
