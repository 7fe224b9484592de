/* PolyBench gramschmidt (examples/polybench/gramschmidt.tc): first A := A0 + M*I (the .tc's
 * well-conditioned M x N input, A a scratch array), then modified Gram-Schmidt QR of A
 * (A overwritten, R upper triangular, Q orthonormal columns) in PolyBench's loop order,
 * then the copy Aout := A that the .tc adds. */
/* PolyBench's LARGE is M = 1000 rows, N = 1200 columns: with more columns than rows, the
 * last N - M columns of Q are rounding noise (R's diagonal drops to about 1e-14 there), and
 * no two compilers agree on them. The bench takes the transposed shape, which keeps the
 * work and makes every column checkable. */
/* LARGE: M=1200,N=1000 */
/* MINI: M=30,N=20 */
#include "pb.h"

static void kernel(PB_T A0[restrict M][N], PB_T R[restrict N][N], PB_T Q[restrict M][N],
                   PB_T Aout[restrict M][N], PB_T A[restrict M][N]) {
  PB_T nrm;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) A[i][j] = A0[i][j] + (i == j ? 1.0 * M : 0.0);
  for (int k = 0; k < N; k++) {
    nrm = 0.0;
    for (int i = 0; i < M; i++) nrm += A[i][k] * A[i][k];
    R[k][k] = sqrt(nrm);
    for (int i = 0; i < M; i++) Q[i][k] = A[i][k] / R[k][k];
    for (int j = k + 1; j < N; j++) {
      R[k][j] = 0.0;
      for (int i = 0; i < M; i++) R[k][j] += Q[i][k] * A[i][j];
      for (int i = 0; i < M; i++) A[i][j] = A[i][j] - Q[i][k] * R[k][j];
    }
  }
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) Aout[i][j] = A[i][j];
}

int main(int argc, char **argv) {
  pb_init(argc, argv, "gramschmidt");
  PB_T(*A0)[N] = pb_in("A0", (size_t)M * N);
  PB_T(*R)[N] = pb_out((size_t)N * N);
  PB_T(*Q)[N] = pb_out((size_t)M * N);
  PB_T(*Aout)[N] = pb_out((size_t)M * N);
  PB_T(*A)[N] = pb_out((size_t)M * N);
  PB_RUN(kernel(A0, R, Q, Aout, A));
  pb_check("R", R, (size_t)N * N);
  pb_check("Q", Q, (size_t)M * N);
  pb_check("Aout", Aout, (size_t)M * N);
  return pb_finish();
}
