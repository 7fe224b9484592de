/* PolyBench seidel-2d (examples/polybench/seidel_2d.tc): T Gauss-Seidel sweeps of a
 * 9-point average over the inner points of A, in place (each point reads its neighbours
 * above and to the left already updated), in PolyBench's loop order; then B := A. */
/* LARGE: N=2000,T=500 */
#include "pb.h"

static void kernel(PB_T A[restrict N][N], PB_T B[restrict N][N]) {
  for (int t = 0; t <= T - 1; t++)
    for (int i = 1; i <= N - 2; i++)
      for (int j = 1; j <= N - 2; j++)
        A[i][j] = (A[i - 1][j - 1] + A[i - 1][j] + A[i - 1][j + 1] + A[i][j - 1] + A[i][j] +
                   A[i][j + 1] + A[i + 1][j - 1] + A[i + 1][j] + A[i + 1][j + 1]) /
                  9.0;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) B[i][j] = A[i][j];
}

int main(int argc, char **argv) {
  pb_init(argc, argv, "seidel_2d");
  PB_T(*A)[N] = pb_in("A", (size_t)N * N);
  PB_T(*B)[N] = pb_out((size_t)N * N);
  PB_RUN(kernel(A, B));
  pb_check("A", A, (size_t)N * N);
  pb_check("B", B, (size_t)N * N);
  return pb_finish();
}
