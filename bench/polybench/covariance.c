/* PolyBench covariance (examples/polybench/covariance.tc): column means of the N x M data
 * (float_n = N), the data centred in place, then the symmetric M x M covariance matrix
 * divided by float_n - 1, in PolyBench's loop order. */
/* LARGE: N=1400,M=1200 */
#include "pb.h"

static void kernel(PB_T data[restrict N][M], PB_T cov[restrict M][M], PB_T mean[restrict M]) {
  PB_T float_n = (PB_T)N;
  for (int j = 0; j < M; j++) {
    mean[j] = 0.0;
    for (int i = 0; i < N; i++) mean[j] += data[i][j];
    mean[j] /= float_n;
  }
  for (int i = 0; i < N; i++)
    for (int j = 0; j < M; j++) data[i][j] -= mean[j];
  for (int i = 0; i < M; i++)
    for (int j = i; j < M; j++) {
      cov[i][j] = 0.0;
      for (int k = 0; k < N; k++) cov[i][j] += data[k][i] * data[k][j];
      cov[i][j] /= (float_n - 1.0);
      cov[j][i] = cov[i][j];
    }
}

int main(int argc, char **argv) {
  pb_init(argc, argv, "covariance");
  PB_T(*data)[M] = pb_in("data", (size_t)N * M);
  PB_T(*cov)[M] = pb_out((size_t)M * M);
  PB_T *mean = pb_out((size_t)M);
  PB_RUN(kernel(data, cov, mean));
  pb_check("cov", cov, (size_t)M * M);
  pb_check("mean", mean, (size_t)M);
  pb_check("data", data, (size_t)N * M);
  return pb_finish();
}
