/* Layer normalisation, R x N f32: polyc's kernel against the naive loops of three
 * compilers, one thread. FLOPs counted as 8 per element (mean sum, subtract, square and
 * sum, scale, multiply by g, add b) plus 5 per row. */
#include "harness.h"

typedef void (*ln_fn)(const float *restrict, const float *restrict, const float *restrict,
                      float *restrict);
void layernorm(const float *restrict X, const float *restrict g, const float *restrict b,
               float *restrict Y);
void naive_gcc(const float *restrict, const float *restrict, const float *restrict,
               float *restrict);
void naive_clang(const float *restrict, const float *restrict, const float *restrict,
                 float *restrict);
void naive_polly(const float *restrict, const float *restrict, const float *restrict,
                 float *restrict);

struct ctx { const float *X, *g, *b; float *Y; ln_fn f; };
static void run_fn(void *p) { struct ctx *c = p; c->f(c->X, c->g, c->b, c->Y); }

int main(void) {
  size_t n = (size_t)R * N;
  float *X = bench_alloc(n), *g = bench_alloc(N), *b = bench_alloc(N);
  float *ref = bench_alloc(n), *Y = bench_alloc(n);
  bench_fill(X, n, 5);
  bench_fill(g, N, 6);
  bench_fill(b, N, 7);
  double flops = 8.0 * (double)n + 5.0 * R, tol = 1e-3;
  int bad = 0;
  struct ctx c = {X, g, b, ref, naive_gcc};
  double t = bench_time(NULL, run_fn, &c);
  bad |= bench_report("layernorm", "gcc-O3", flops, t, 0.0, tol);
  const char *names[] = {"polyc", "clang-O3", "clang-O3-polly"};
  ln_fn fns[] = {layernorm, naive_clang, naive_polly};
  for (int i = 0; i < 3; i++) {
    if (i > 0 && bench_polyc_only()) break;
    memset(Y, 0xFF, sizeof(float) * n);
    c.Y = Y;
    c.f = fns[i];
    t = bench_time(NULL, run_fn, &c);
    bad |= bench_report("layernorm", names[i], flops, t, bench_err(Y, ref, n), tol);
  }
  return bad;
}
