/* PolyBench adi (examples/polybench/adi.tc): T steps of an alternating-direction implicit
 * 2-D heat solve, a column sweep into v then a row sweep into u, each a tridiagonal solve
 * through p and q (u, v, p, q all updated in place), in PolyBench's loop order with its
 * scalar coefficients (computed once, as PolyBench does; the .tc recomputes the same values
 * at every step); then Uout := u. */
/* LARGE: N=1000,T=500 */
#include "pb.h"

static void kernel(PB_T u[restrict N][N], PB_T v[restrict N][N], PB_T p[restrict N][N],
                   PB_T q[restrict N][N], PB_T Uout[restrict N][N]) {
  PB_T DX, DY, DT, B1, B2, mul1, mul2, a, b, c, d, e, f;
  DX = 1.0 / (PB_T)N;
  DY = 1.0 / (PB_T)N;
  DT = 1.0 / (PB_T)T;
  B1 = 2.0;
  B2 = 1.0;
  mul1 = B1 * DT / (DX * DX);
  mul2 = B2 * DT / (DY * DY);
  a = -mul1 / 2.0;
  b = 1.0 + mul1;
  c = a;
  d = -mul2 / 2.0;
  e = 1.0 + mul2;
  f = d;

  for (int t = 1; t <= T; t++) {
    for (int i = 1; i < N - 1; i++) {
      v[0][i] = 1.0;
      p[i][0] = 0.0;
      q[i][0] = v[0][i];
      for (int j = 1; j < N - 1; j++) {
        p[i][j] = -c / (a * p[i][j - 1] + b);
        q[i][j] = (-d * u[j][i - 1] + (1.0 + 2.0 * d) * u[j][i] - f * u[j][i + 1] -
                   a * q[i][j - 1]) /
                  (a * p[i][j - 1] + b);
      }
      v[N - 1][i] = 1.0;
      for (int j = N - 2; j >= 1; j--) v[j][i] = p[i][j] * v[j + 1][i] + q[i][j];
    }
    for (int i = 1; i < N - 1; i++) {
      u[i][0] = 1.0;
      p[i][0] = 0.0;
      q[i][0] = u[i][0];
      for (int j = 1; j < N - 1; j++) {
        p[i][j] = -f / (d * p[i][j - 1] + e);
        q[i][j] = (-a * v[i - 1][j] + (1.0 + 2.0 * a) * v[i][j] - c * v[i + 1][j] -
                   d * q[i][j - 1]) /
                  (d * p[i][j - 1] + e);
      }
      u[i][N - 1] = 1.0;
      for (int j = N - 2; j >= 1; j--) u[i][j] = p[i][j] * u[i][j + 1] + q[i][j];
    }
  }
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) Uout[i][j] = u[i][j];
}

int main(int argc, char **argv) {
  pb_init(argc, argv, "adi");
  PB_T(*u)[N] = pb_in("u", (size_t)N * N);
  PB_T(*v)[N] = pb_in("v", (size_t)N * N);
  PB_T(*p)[N] = pb_in("p", (size_t)N * N);
  PB_T(*q)[N] = pb_in("q", (size_t)N * N);
  PB_T(*Uout)[N] = pb_out((size_t)N * N);
  PB_RUN(kernel(u, v, p, q, Uout));
  pb_check("u", u, (size_t)N * N);
  pb_check("v", v, (size_t)N * N);
  pb_check("p", p, (size_t)N * N);
  pb_check("q", q, (size_t)N * N);
  pb_check("Uout", Uout, (size_t)N * N);
  return pb_finish();
}
