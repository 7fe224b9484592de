/* PolyBench jacobi-2d (examples/polybench/jacobi_2d.tc): T steps of a 5-point Jacobi
 * stencil over the inner points of an N x N grid, from A into B and back from B into A
 * (both updated in place, borders untouched), in PolyBench's loop order; then Aout := A. */
/* LARGE: N=1300,T=500 */
#include "pb.h"

static void kernel(PB_T A[restrict N][N], PB_T B[restrict N][N], PB_T Aout[restrict N][N]) {
  for (int t = 0; t < T; t++) {
    for (int i = 1; i < N - 1; i++)
      for (int j = 1; j < N - 1; j++)
        B[i][j] = 0.2 * (A[i][j] + A[i][j - 1] + A[i][j + 1] + A[i + 1][j] + A[i - 1][j]);
    for (int i = 1; i < N - 1; i++)
      for (int j = 1; j < N - 1; j++)
        A[i][j] = 0.2 * (B[i][j] + B[i][j - 1] + B[i][j + 1] + B[i + 1][j] + B[i - 1][j]);
  }
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) Aout[i][j] = A[i][j];
}

int main(int argc, char **argv) {
#ifndef PB_AOUT_ONLY
  pb_init(argc, argv, "jacobi_2d");
#else
  pb_init(argc, argv, "jacobi_2d_time");
#endif
  PB_T(*A)[N] = pb_in("A", (size_t)N * N);
  PB_T(*B)[N] = pb_in("B", (size_t)N * N);
  PB_T(*Aout)[N] = pb_out((size_t)N * N);
  PB_RUN(kernel(A, B, Aout));
#ifndef PB_AOUT_ONLY /* jacobi_2d_time.c: the time form leaves A and B alone */
  pb_check("A", A, (size_t)N * N);
  pb_check("B", B, (size_t)N * N);
#endif
  pb_check("Aout", Aout, (size_t)N * N);
  return pb_finish();
}
