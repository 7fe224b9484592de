/* PolyBench deriche (examples/polybench/deriche.tc): the Deriche recursive edge-detection
 * filter on a W x H image (f64 here; PolyBench's default is float): causal and anti-causal
 * passes along the rows into y1 and y2, summed into imgOut, then the same along the columns
 * of imgOut, in PolyBench's loop order with its carried scalars (xm1, ym1, ...). */
/* LARGE: W=4096,H=2160 */
#include "pb.h"

static void kernel(PB_T alpha, PB_T imgIn[restrict W][H], PB_T imgOut[restrict W][H],
                   PB_T y1[restrict W][H], PB_T y2[restrict W][H]) {
  PB_T xm1, tm1, ym1, ym2, xp1, xp2, tp1, tp2, yp1, yp2;
  PB_T k, a1, a2, a3, a4, a5, a6, a7, a8, b1, b2, c1, c2;
  k = (1.0 - exp(-alpha)) * (1.0 - exp(-alpha)) /
      (1.0 + 2.0 * alpha * exp(-alpha) - exp(2.0 * alpha));
  a1 = a5 = k;
  a2 = a6 = k * exp(-alpha) * (alpha - 1.0);
  a3 = a7 = k * exp(-alpha) * (alpha + 1.0);
  a4 = a8 = -k * exp(-2.0 * alpha);
  b1 = pow(2.0, -alpha);
  b2 = -exp(-2.0 * alpha);
  c1 = c2 = 1;

  for (int i = 0; i < W; i++) {
    ym1 = 0.0;
    ym2 = 0.0;
    xm1 = 0.0;
    for (int j = 0; j < H; j++) {
      y1[i][j] = a1 * imgIn[i][j] + a2 * xm1 + b1 * ym1 + b2 * ym2;
      xm1 = imgIn[i][j];
      ym2 = ym1;
      ym1 = y1[i][j];
    }
  }
  for (int i = 0; i < W; i++) {
    yp1 = 0.0;
    yp2 = 0.0;
    xp1 = 0.0;
    xp2 = 0.0;
    for (int j = H - 1; j >= 0; j--) {
      y2[i][j] = a3 * xp1 + a4 * xp2 + b1 * yp1 + b2 * yp2;
      xp2 = xp1;
      xp1 = imgIn[i][j];
      yp2 = yp1;
      yp1 = y2[i][j];
    }
  }
  for (int i = 0; i < W; i++)
    for (int j = 0; j < H; j++) imgOut[i][j] = c1 * (y1[i][j] + y2[i][j]);

  for (int j = 0; j < H; j++) {
    tm1 = 0.0;
    ym1 = 0.0;
    ym2 = 0.0;
    for (int i = 0; i < W; i++) {
      y1[i][j] = a5 * imgOut[i][j] + a6 * tm1 + b1 * ym1 + b2 * ym2;
      tm1 = imgOut[i][j];
      ym2 = ym1;
      ym1 = y1[i][j];
    }
  }
  for (int j = 0; j < H; j++) {
    tp1 = 0.0;
    tp2 = 0.0;
    yp1 = 0.0;
    yp2 = 0.0;
    for (int i = W - 1; i >= 0; i--) {
      y2[i][j] = a7 * tp1 + a8 * tp2 + b1 * yp1 + b2 * yp2;
      tp2 = tp1;
      tp1 = imgOut[i][j];
      yp2 = yp1;
      yp1 = y2[i][j];
    }
  }
  for (int i = 0; i < W; i++)
    for (int j = 0; j < H; j++) imgOut[i][j] = c2 * (y1[i][j] + y2[i][j]);
}

int main(int argc, char **argv) {
  pb_init(argc, argv, "deriche");
  PB_T alpha = pb_scalar("alpha");
  PB_T(*imgIn)[H] = pb_in("imgIn", (size_t)W * H);
  PB_T(*imgOut)[H] = pb_out((size_t)W * H);
  PB_T(*y1)[H] = pb_out((size_t)W * H);
  PB_T(*y2)[H] = pb_out((size_t)W * H);
  PB_RUN(kernel(alpha, imgIn, imgOut, y1, y2));
  pb_check("imgOut", imgOut, (size_t)W * H);
  pb_check("y1", y1, (size_t)W * H);
  pb_check("y2", y2, (size_t)W * H);
  return pb_finish();
}
