/* PolyBench heat-3d (examples/polybench/heat_3d.tc): T steps of a 7-point heat stencil over
 * the inner points of an N x N x N grid, from A into B and back from B into A (both updated
 * in place, borders untouched), in PolyBench's loop order; then Aout := A. */
/* LARGE: N=120,T=500 */
#include "pb.h"

static void kernel(PB_T A[restrict N][N][N], PB_T B[restrict N][N][N],
                   PB_T Aout[restrict N][N][N]) {
  for (int t = 1; t <= T; t++) {
    for (int i = 1; i < N - 1; i++)
      for (int j = 1; j < N - 1; j++)
        for (int k = 1; k < N - 1; k++)
          B[i][j][k] = 0.125 * (A[i + 1][j][k] - 2.0 * A[i][j][k] + A[i - 1][j][k]) +
                       0.125 * (A[i][j + 1][k] - 2.0 * A[i][j][k] + A[i][j - 1][k]) +
                       0.125 * (A[i][j][k + 1] - 2.0 * A[i][j][k] + A[i][j][k - 1]) +
                       A[i][j][k];
    for (int i = 1; i < N - 1; i++)
      for (int j = 1; j < N - 1; j++)
        for (int k = 1; k < N - 1; k++)
          A[i][j][k] = 0.125 * (B[i + 1][j][k] - 2.0 * B[i][j][k] + B[i - 1][j][k]) +
                       0.125 * (B[i][j + 1][k] - 2.0 * B[i][j][k] + B[i][j - 1][k]) +
                       0.125 * (B[i][j][k + 1] - 2.0 * B[i][j][k] + B[i][j][k - 1]) +
                       B[i][j][k];
  }
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      for (int k = 0; k < N; k++) Aout[i][j][k] = A[i][j][k];
}

int main(int argc, char **argv) {
  pb_init(argc, argv, "heat_3d");
  PB_T(*A)[N][N] = pb_in("A", (size_t)N * N * N);
  PB_T(*B)[N][N] = pb_in("B", (size_t)N * N * N);
  PB_T(*Aout)[N][N] = pb_out((size_t)N * N * N);
  PB_RUN(kernel(A, B, Aout));
  pb_check("A", A, (size_t)N * N * N);
  pb_check("B", B, (size_t)N * N * N);
  pb_check("Aout", Aout, (size_t)N * N * N);
  return pb_finish();
}
