/* PolyBench lu (examples/polybench/lu.tc): first A := M*M' + N*I (the .tc's symmetric
 * positive definite input), then A's LU decomposition in place without pivoting (L with a
 * unit diagonal below, U on and above the diagonal), in PolyBench's loop order. */
/* LARGE: N=2000 */
#include "pb.h"

static void kernel(PB_T Min[restrict N][N], PB_T A[restrict N][N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      A[i][j] = 0.0;
      for (int k = 0; k < N; k++) A[i][j] += Min[i][k] * Min[j][k];
    }
  for (int i = 0; i < N; i++) A[i][i] += N;
  for (int i = 0; i < N; i++) {
    for (int j = 0; j < i; j++) {
      for (int k = 0; k < j; k++) A[i][j] -= A[i][k] * A[k][j];
      A[i][j] /= A[j][j];
    }
    for (int j = i; j < N; j++)
      for (int k = 0; k < i; k++) A[i][j] -= A[i][k] * A[k][j];
  }
}

int main(int argc, char **argv) {
  pb_init(argc, argv, "lu");
  PB_T(*Min)[N] = pb_in("M", (size_t)N * N);
  PB_T(*A)[N] = pb_out((size_t)N * N);
  PB_RUN(kernel(Min, A));
  pb_check("A", A, (size_t)N * N);
  return pb_finish();
}
