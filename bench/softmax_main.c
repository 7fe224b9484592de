/* Row-wise softmax, R x N f32: polyc's kernel against the naive loops of three compilers,
 * one thread. FLOPs counted as 5 per element (max, subtract, exp, sum, divide). */
#include "harness.h"

typedef void (*softmax_fn)(const float *restrict, float *restrict);
void softmax(const float *restrict X, float *restrict Y);
void naive_gcc(const float *restrict, float *restrict);
void naive_clang(const float *restrict, float *restrict);
void naive_polly(const float *restrict, float *restrict);

struct ctx { const float *X; float *Y; softmax_fn f; };
static void run_fn(void *p) { struct ctx *c = p; c->f(c->X, c->Y); }

int main(void) {
  size_t n = (size_t)R * N;
  float *X = bench_alloc(n), *ref = bench_alloc(n), *Y = bench_alloc(n);
  bench_fill(X, n, 8);
  for (size_t i = 0; i < n; i++) X[i] *= 8.0f;
  double flops = 5.0 * (double)n, tol = 1e-4;
  int bad = 0;
  struct ctx c = {X, ref, naive_gcc};
  double t = bench_time(NULL, run_fn, &c);
  bad |= bench_report("softmax", "gcc-O3", flops, t, 0.0, tol);
  const char *names[] = {"polyc", "clang-O3", "clang-O3-polly"};
  softmax_fn fns[] = {softmax, naive_clang, naive_polly};
  for (int i = 0; i < 3; i++) {
    if (i > 0 && bench_polyc_only()) break;
    memset(Y, 0xFF, sizeof(float) * n);
    c.Y = Y;
    c.f = fns[i];
    t = bench_time(NULL, run_fn, &c);
    bad |= bench_report("softmax", names[i], flops, t, bench_err(Y, ref, n), tol);
  }
  return bad;
}
