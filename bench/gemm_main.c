/* GEMM 1024^3 f32 (C = A * B, or A * B^T with -DBT): polyc's kernel against the naive loops of three compilers and
 * OpenBLAS cblas_sgemm, one thread. */
#include "harness.h"
/* cblas_sgemm, declared here because <cblas.h> names its parameters M, N, K, which are
 * macros in this harness. Enum values from the CBLAS standard. */
void cblas_sgemm(int order, int transa, int transb, int m, int n, int k, float alpha,
                 const float *a, int lda, const float *b, int ldb, float beta, float *c,
                 int ldc);
enum { CblasRowMajor = 101, CblasNoTrans = 111, CblasTrans = 112 };

/* -DBT: C = A * B^T, B stored N x K (polyc's examples/matmul_bt.tc). */
#ifdef BT
#define POLYC matmul_bt
#define TRANS_B CblasTrans
#define LDB K
#else
#define POLYC matmul
#define TRANS_B CblasNoTrans
#define LDB N
#endif
void POLYC(const float *restrict A, const float *restrict B, float *restrict C); /* polyc */
void naive_gcc(const float *restrict A, const float *restrict B, float *restrict C);
void naive_clang(const float *restrict A, const float *restrict B, float *restrict C);
void naive_polly(const float *restrict A, const float *restrict B, float *restrict C);
void openblas_set_num_threads(int);
int openblas_get_num_threads(void);
char *openblas_get_config(void);

typedef void (*gemm_fn)(const float *restrict, const float *restrict, float *restrict);
struct ctx { const float *A, *B; float *C; gemm_fn f; };
static void run_fn(void *p) { struct ctx *c = p; c->f(c->A, c->B, c->C); }
static void run_blas(void *p) {
  struct ctx *c = p;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, TRANS_B, M, N, K, 1.0f, c->A, K, c->B, LDB, 0.0f,
              c->C, N);
}

int main(void) {
  openblas_set_num_threads(1);
  /* Measured on the development machine: with one thread, CPU time equals wall time
   * (getrusage) and sgemm reaches ~130 GFLOP/s (SkylakeX kernels, AVX-512). */
  if (openblas_get_num_threads() != 1) {
    fprintf(stderr, "bench: OpenBLAS runs %d threads, not 1\n", openblas_get_num_threads());
    return 2;
  }
  fprintf(stderr, "bench: %s, %d thread\n", openblas_get_config(), openblas_get_num_threads());
  float *A = bench_alloc((size_t)M * K), *B = bench_alloc((size_t)K * N);
  float *ref = bench_alloc((size_t)M * N), *C = bench_alloc((size_t)M * N);
  bench_fill(A, (size_t)M * K, 1);
  bench_fill(B, (size_t)K * N, 2);
  double flops = 2.0 * M * N * K, tol = 1e-4;
  int bad = 0;
  struct ctx c = {A, B, ref, naive_gcc};
  double t = bench_time(NULL, run_fn, &c);
  bad |= bench_report("gemm", "gcc-O3", flops, t, 0.0, tol);
  const char *names[] = {"polyc", "clang-O3", "clang-O3-polly"};
  gemm_fn fns[] = {POLYC, naive_clang, naive_polly};
  for (int i = 0; i < 3; i++) {
    if (i > 0 && bench_polyc_only()) break;
    memset(C, 0xFF, sizeof(float) * (size_t)M * N);
    c.C = C;
    c.f = fns[i];
    t = bench_time(NULL, run_fn, &c);
    bad |= bench_report("gemm", names[i], flops, t, bench_err(C, ref, (size_t)M * N), tol);
  }
  if (bench_polyc_only()) return bad;
  memset(C, 0xFF, sizeof(float) * (size_t)M * N);
  t = bench_time(NULL, run_blas, &c);
  bad |= bench_report("gemm", "openblas", flops, t, bench_err(C, ref, (size_t)M * N), tol);
  return bad;
}
