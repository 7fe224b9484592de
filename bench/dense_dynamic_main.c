/* Harness of scripts/bench-dynamic: dense Y(t, n) = sum_k X(t, k) W(k, n) at one T,
 * f32, one thread. Times (best of REPS warm calls) polyc's one --dynamic kernel, the
 * kernel compiled for this T, padding (the kernel for the next multiple of 32 and the
 * kernel for T = 128, on inputs zero-padded beforehand: only the kernel is timed), and
 * OpenBLAS cblas_sgemm. Compile with -DT=… -DTP=… (next multiple of 32) -DN=… -DK=…
 * and the kernels renamed dense_dyn, dense_static, dense_pad, dense_pad128. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void dense_dyn(int64_t T_, const float *restrict X, const float *restrict W, float *restrict Y);
void dense_static(const float *restrict X, const float *restrict W, float *restrict Y);
void dense_pad(const float *restrict X, const float *restrict W, float *restrict Y);
void dense_pad128(const float *restrict X, const float *restrict W, float *restrict Y);
/* Declared here because <cblas.h> names its parameters M, N, K. */
void cblas_sgemm(int order, int transa, int transb, int m, int n, int k, float alpha,
                 const float *a, int lda, const float *b, int ldb, float beta, float *c,
                 int ldc);
void openblas_set_num_threads(int);

#ifndef REPS
#define REPS 15
#endif

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

#define BEST(var, call)                      \
  do {                                       \
    var = 1e30;                              \
    for (int r = 0; r < REPS + 1; r++) {     \
      double t0 = now_ms();                  \
      call;                                  \
      double dt = now_ms() - t0;             \
      if (r > 0 && dt < var) var = dt;       \
    }                                        \
  } while (0)

static float max_err(const float *a, const float *b, size_t n) {
  float m = 0;
  for (size_t i = 0; i < n; i++) m = fmaxf(m, fabsf(a[i] - b[i]));
  return m;
}

int main(void) {
  openblas_set_num_threads(1);
  float *X = aligned_alloc(64, sizeof(float) * 128 * K);
  float *W = aligned_alloc(64, sizeof(float) * K * N);
  float *Y = aligned_alloc(64, sizeof(float) * 128 * N);
  float *R = aligned_alloc(64, sizeof(float) * 128 * N);
  srand(1);
  memset(X, 0, sizeof(float) * 128 * K); /* rows T.. stay zero: the padded input */
  for (size_t i = 0; i < (size_t)T * K; i++) X[i] = (float)rand() / RAND_MAX - 0.5f;
  for (size_t i = 0; i < (size_t)K * N; i++) W[i] = (float)rand() / RAND_MAX - 0.5f;
  double dyn, stat, pad, pad128, blas;
  BEST(blas, cblas_sgemm(101, 111, 111, T, N, K, 1.0f, X, K, W, N, 0.0f, R, N));
  BEST(dyn, dense_dyn(T, X, W, Y));
  float err = max_err(Y, R, (size_t)T * N);
  BEST(stat, dense_static(X, W, Y));
  err = fmaxf(err, max_err(Y, R, (size_t)T * N));
  BEST(pad, dense_pad(X, W, Y));
  err = fmaxf(err, max_err(Y, R, (size_t)T * N));
  BEST(pad128, dense_pad128(X, W, Y));
  err = fmaxf(err, max_err(Y, R, (size_t)T * N));
  printf("%d %.4f %.4f %.4f %.4f %.4f %.2e\n", T, dyn, stat, pad, pad128, blas, err);
  return err > 1e-2f ? 3 : 0;
}
