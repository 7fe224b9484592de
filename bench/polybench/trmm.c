/* PolyBench trmm (examples/polybench/trmm.tc): B := alpha*A'*B with A unit lower triangular
 * (only A(k, i), k > i, read), in PolyBench's loop order (i, j, then k > i), B updated in
 * place; then the copy B_out := B that the .tc adds. */
/* LARGE: M=1000,N=1200 */
#include "pb.h"

static void kernel(PB_T alpha, PB_T A[restrict M][M], PB_T B[restrict M][N],
                   PB_T B_out[restrict M][N]) {
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      for (int k = i + 1; k < M; k++) B[i][j] += A[k][i] * B[k][j];
      B[i][j] = alpha * B[i][j];
    }
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) B_out[i][j] = B[i][j];
}

int main(int argc, char **argv) {
  pb_init(argc, argv, "trmm");
  PB_T alpha = pb_scalar("alpha");
  PB_T(*A)[M] = pb_in("A", (size_t)M * M);
  PB_T(*B)[N] = pb_in("B", (size_t)M * N);
  PB_T(*B_out)[N] = pb_out((size_t)M * N);
  PB_RUN(kernel(alpha, A, B, B_out));
  pb_check("B_out", B_out, (size_t)M * N);
  pb_check("B", B, (size_t)M * N);
  return pb_finish();
}
