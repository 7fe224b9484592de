/* PolyBench correlation (examples/polybench/correlation.tc): column means and standard
 * deviations of the N x M data (float_n = N, eps = 0.1), the data centred and reduced in
 * place, then the M x M correlation matrix, in PolyBench's loop order. */
/* LARGE: N=1400,M=1200 */
#include "pb.h"

static void kernel(PB_T data[restrict N][M], PB_T corr[restrict M][M], PB_T mean[restrict M],
                   PB_T stddev[restrict M]) {
  PB_T float_n = (PB_T)N, eps = 0.1;
  for (int j = 0; j < M; j++) {
    mean[j] = 0.0;
    for (int i = 0; i < N; i++) mean[j] += data[i][j];
    mean[j] /= float_n;
  }
  for (int j = 0; j < M; j++) {
    stddev[j] = 0.0;
    for (int i = 0; i < N; i++) stddev[j] += (data[i][j] - mean[j]) * (data[i][j] - mean[j]);
    stddev[j] /= float_n;
    stddev[j] = sqrt(stddev[j]);
    stddev[j] = stddev[j] <= eps ? 1.0 : stddev[j];
  }
  for (int i = 0; i < N; i++)
    for (int j = 0; j < M; j++) {
      data[i][j] -= mean[j];
      data[i][j] /= sqrt(float_n) * stddev[j];
    }
  for (int i = 0; i < M - 1; i++) {
    corr[i][i] = 1.0;
    for (int j = i + 1; j < M; j++) {
      corr[i][j] = 0.0;
      for (int k = 0; k < N; k++) corr[i][j] += data[k][i] * data[k][j];
      corr[j][i] = corr[i][j];
    }
  }
  corr[M - 1][M - 1] = 1.0;
}

int main(int argc, char **argv) {
  pb_init(argc, argv, "correlation");
  PB_T(*data)[M] = pb_in("data", (size_t)N * M);
  PB_T(*corr)[M] = pb_out((size_t)M * M);
  PB_T *mean = pb_out((size_t)M);
  PB_T *stddev = pb_out((size_t)M);
  PB_RUN(kernel(data, corr, mean, stddev));
  pb_check("corr", corr, (size_t)M * M);
  pb_check("mean", mean, (size_t)M);
  pb_check("stddev", stddev, (size_t)M);
  pb_check("data", data, (size_t)N * M);
  return pb_finish();
}
