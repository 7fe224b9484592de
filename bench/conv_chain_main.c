/* Conv chain, H = W = 2048, 5x5, f32: polyc's kernel against the naive loops of three
 * compilers, one thread. A is updated in place, so it is restored (untimed) before each
 * run. FLOPs: H*W (bias) + 2*KH*KW*HO*WO (conv) + 2*HO*WO (abs, relu). */
#include "harness.h"
#define HO (H - KH + 1)
#define WO (W - KW + 1)

typedef void (*conv_fn)(float *restrict, const float *restrict, float, float *restrict);
void conv_chain(float *restrict A, const float *restrict B, float bias, float *restrict C);
void naive_gcc(float *restrict, const float *restrict, float, float *restrict);
void naive_clang(float *restrict, const float *restrict, float, float *restrict);
void naive_polly(float *restrict, const float *restrict, float, float *restrict);

struct ctx { const float *A0; float *A; const float *B; float *C; conv_fn f; };
static void setup(void *p) {
  struct ctx *c = p;
  memcpy(c->A, c->A0, sizeof(float) * (size_t)H * W);
}
static void run_fn(void *p) { struct ctx *c = p; c->f(c->A, c->B, 0.25f, c->C); }

int main(void) {
  size_t nA = (size_t)H * W, nC = (size_t)HO * WO;
  float *A0 = bench_alloc(nA), *A = bench_alloc(nA), *B = bench_alloc((size_t)KH * KW);
  float *ref = bench_alloc(nC), *C = bench_alloc(nC);
  bench_fill(A0, nA, 3);
  bench_fill(B, (size_t)KH * KW, 4);
  double flops = (double)nA + 2.0 * KH * KW * (double)nC + 2.0 * (double)nC, tol = 1e-4;
  int bad = 0;
  struct ctx c = {A0, A, B, ref, naive_gcc};
  double t = bench_time(setup, run_fn, &c);
  bad |= bench_report("conv_chain", "gcc-O3", flops, t, 0.0, tol);
  const char *names[] = {"polyc", "clang-O3", "clang-O3-polly"};
  conv_fn fns[] = {conv_chain, naive_clang, naive_polly};
  for (int i = 0; i < 3; i++) {
    if (i > 0 && bench_polyc_only()) break;
    memset(C, 0xFF, sizeof(float) * nC);
    c.C = C;
    c.f = fns[i];
    t = bench_time(setup, run_fn, &c);
    bad |= bench_report("conv_chain", names[i], flops, t, bench_err(C, ref, nC), tol);
  }
  return bad;
}
