/* PolyBench fdtd-2d (examples/polybench/fdtd_2d.tc): T steps of the 2-D finite-difference
 * time-domain kernel (ey's first row from the source fict[t], then ey, ex and hz updated in
 * place, each from the others' newest values), in PolyBench's loop order; then H := hz. */
/* LARGE: NX=1000,NY=1200,T=500 */
#include "pb.h"

static void kernel(PB_T ex[restrict NX][NY], PB_T ey[restrict NX][NY],
                   PB_T hz[restrict NX][NY], PB_T fict[restrict T], PB_T H[restrict NX][NY]) {
  for (int t = 0; t < T; t++) {
    for (int j = 0; j < NY; j++) ey[0][j] = fict[t];
    for (int i = 1; i < NX; i++)
      for (int j = 0; j < NY; j++) ey[i][j] = ey[i][j] - 0.5 * (hz[i][j] - hz[i - 1][j]);
    for (int i = 0; i < NX; i++)
      for (int j = 1; j < NY; j++) ex[i][j] = ex[i][j] - 0.5 * (hz[i][j] - hz[i][j - 1]);
    for (int i = 0; i < NX - 1; i++)
      for (int j = 0; j < NY - 1; j++)
        hz[i][j] = hz[i][j] - 0.7 * (ex[i][j + 1] - ex[i][j] + ey[i + 1][j] - ey[i][j]);
  }
  for (int i = 0; i < NX; i++)
    for (int j = 0; j < NY; j++) H[i][j] = hz[i][j];
}

int main(int argc, char **argv) {
  pb_init(argc, argv, "fdtd_2d");
  PB_T(*ex)[NY] = pb_in("ex", (size_t)NX * NY);
  PB_T(*ey)[NY] = pb_in("ey", (size_t)NX * NY);
  PB_T(*hz)[NY] = pb_in("hz", (size_t)NX * NY);
  PB_T *fict = pb_in("fict", (size_t)T);
  PB_T(*H)[NY] = pb_out((size_t)NX * NY);
  PB_RUN(kernel(ex, ey, hz, fict, H));
  pb_check("ex", ex, (size_t)NX * NY);
  pb_check("ey", ey, (size_t)NX * NY);
  pb_check("hz", hz, (size_t)NX * NY);
  pb_check("H", H, (size_t)NX * NY);
  return pb_finish();
}
