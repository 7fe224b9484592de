/* PolyBench jacobi-1d (examples/polybench/jacobi_1d.tc): T sweeps of a 3-point average over
 * the inner points, from A into B and back from B into A (both updated in place), in
 * PolyBench's loop order; then C := A. */
/* LARGE: N=2000,T=500 */
#include "pb.h"

static void kernel(PB_T A[restrict N], PB_T B[restrict N], PB_T C[restrict N]) {
  for (int t = 0; t < T; t++) {
    for (int i = 1; i < N - 1; i++) B[i] = 0.33333 * (A[i - 1] + A[i] + A[i + 1]);
    for (int i = 1; i < N - 1; i++) A[i] = 0.33333 * (B[i - 1] + B[i] + B[i + 1]);
  }
  for (int i = 0; i < N; i++) C[i] = A[i];
}

int main(int argc, char **argv) {
  pb_init(argc, argv, "jacobi_1d");
  PB_T *A = pb_in("A", (size_t)N);
  PB_T *B = pb_in("B", (size_t)N);
  PB_T *C = pb_out((size_t)N);
  PB_RUN(kernel(A, B, C));
  pb_check("A", A, (size_t)N);
  pb_check("B", B, (size_t)N);
  pb_check("C", C, (size_t)N);
  return pb_finish();
}
