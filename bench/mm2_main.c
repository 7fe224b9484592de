/* 2mm (E = (A * B) * C), f32: polyc's kernel against the naive loops of three compilers,
 * one thread. FLOPs: 2*NI*NJ*NK + 2*NI*NL*NJ. */
#include "harness.h"

typedef void (*mm2_fn)(const float *restrict, const float *restrict, const float *restrict,
                       float *restrict);
void mm2(const float *restrict, const float *restrict, const float *restrict, float *restrict);
void naive_gcc(const float *restrict, const float *restrict, const float *restrict,
               float *restrict);
void naive_clang(const float *restrict, const float *restrict, const float *restrict,
                 float *restrict);
void naive_polly(const float *restrict, const float *restrict, const float *restrict,
                 float *restrict);

struct ctx { const float *A, *B, *C; float *E; mm2_fn f; };
static void run_fn(void *p) { struct ctx *c = p; c->f(c->A, c->B, c->C, c->E); }

int main(void) {
  size_t nE = (size_t)NI * NL;
  float *A = bench_alloc((size_t)NI * NK), *B = bench_alloc((size_t)NK * NJ);
  float *C = bench_alloc((size_t)NJ * NL), *ref = bench_alloc(nE), *E = bench_alloc(nE);
  bench_fill(A, (size_t)NI * NK, 5);
  bench_fill(B, (size_t)NK * NJ, 6);
  bench_fill(C, (size_t)NJ * NL, 7);
  double flops = 2.0 * NI * NJ * NK + 2.0 * NI * NL * NJ, tol = 1e-4;
  int bad = 0;
  struct ctx c = {A, B, C, ref, naive_gcc};
  double t = bench_time(NULL, run_fn, &c);
  bad |= bench_report("2mm", "gcc-O3", flops, t, 0.0, tol);
  const char *names[] = {"polyc", "clang-O3", "clang-O3-polly"};
  mm2_fn fns[] = {mm2, naive_clang, naive_polly};
  for (int i = 0; i < 3; i++) {
    if (i > 0 && bench_polyc_only()) break;
    memset(E, 0xFF, sizeof(float) * nE);
    c.E = E;
    c.f = fns[i];
    t = bench_time(NULL, run_fn, &c);
    bad |= bench_report("2mm", names[i], flops, t, bench_err(E, ref, nE), tol);
  }
  return bad;
}
