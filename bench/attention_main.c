/* Scaled dot-product attention for one head, L x D f32: polyc's kernel against the naive
 * loops of three compilers, one thread. FLOPs counted as 4·L²·D for the two products plus
 * 5 per score (max, subtract, scale, exp, sum) and one division per output. */
#include "harness.h"

typedef void (*att_fn)(const float *restrict, const float *restrict, const float *restrict,
                       float *restrict);
void attention(const float *restrict Q, const float *restrict K, const float *restrict V,
               float *restrict O);
void naive_gcc(const float *restrict, const float *restrict, const float *restrict,
               float *restrict);
void naive_clang(const float *restrict, const float *restrict, const float *restrict,
                 float *restrict);
void naive_polly(const float *restrict, const float *restrict, const float *restrict,
                 float *restrict);

struct ctx { const float *Q, *K, *V; float *O; att_fn f; };
static void run_fn(void *p) { struct ctx *c = p; c->f(c->Q, c->K, c->V, c->O); }

int main(void) {
  size_t n = (size_t)L * D;
  float *Q = bench_alloc(n), *K = bench_alloc(n), *V = bench_alloc(n);
  float *ref = bench_alloc(n), *O = bench_alloc(n);
  bench_fill(Q, n, 11);
  bench_fill(K, n, 12);
  bench_fill(V, n, 13);
  for (size_t i = 0; i < n; i++) { Q[i] *= 4.0f; K[i] *= 4.0f; }
  double flops = 4.0 * L * (double)L * D + 5.0 * L * (double)L + (double)n, tol = 1e-4;
  int bad = 0;
  struct ctx c = {Q, K, V, ref, naive_gcc};
  double t = bench_time(NULL, run_fn, &c);
  bad |= bench_report("attention", "gcc-O3", flops, t, 0.0, tol);
  const char *names[] = {"polyc", "clang-O3", "clang-O3-polly"};
  att_fn fns[] = {attention, naive_clang, naive_polly};
  for (int i = 0; i < 3; i++) {
    if (i > 0 && bench_polyc_only()) break;
    memset(O, 0xFF, sizeof(float) * n);
    c.O = O;
    c.f = fns[i];
    t = bench_time(NULL, run_fn, &c);
    bad |= bench_report("attention", names[i], flops, t, bench_err(O, ref, n), tol);
  }
  return bad;
}
