/* Conv chain with a temporary, H = W = 2048, 5x5, f32: polyc's kernel (post-tiling fusion
 * recomputes each tile's block of Ab in a tile-local buffer) against the naive loops of
 * three compilers, one thread. FLOPs as for conv_chain: H*W (bias) + 2*KH*KW*HO*WO (conv)
 * + 2*HO*WO (abs, relu). With -DPOLY, examples/conv_chain_poly.tc: 17*H*W for the
 * polynomial producer, and HO*WO for relu alone. */
#include "harness.h"
#define HO (H - KH + 1)
#define WO (W - KW + 1)

#ifdef POLY
#define KERNEL conv_chain_poly
#define PRODUCER_FLOPS 17.0
#define EPILOGUE_FLOPS 1.0
#else
#define KERNEL conv_chain_temp
#define PRODUCER_FLOPS 1.0
#define EPILOGUE_FLOPS 2.0
#endif
#define STR_(x) #x
#define STR(x) STR_(x)

typedef void (*conv_fn)(const float *restrict, const float *restrict, float, float *restrict);
void KERNEL(const float *restrict A, const float *restrict B, float bias,
                     float *restrict C);
void naive_gcc(const float *restrict, const float *restrict, float, float *restrict);
void naive_clang(const float *restrict, const float *restrict, float, float *restrict);
void naive_polly(const float *restrict, const float *restrict, float, float *restrict);

struct ctx { const float *A; const float *B; float *C; conv_fn f; };
static void setup(void *p) { (void)p; }
static void run_fn(void *p) { struct ctx *c = p; c->f(c->A, c->B, 0.25f, c->C); }

int main(void) {
  size_t nA = (size_t)H * W, nC = (size_t)HO * WO;
  float *A = bench_alloc(nA), *B = bench_alloc((size_t)KH * KW);
  float *ref = bench_alloc(nC), *C = bench_alloc(nC);
  bench_fill(A, nA, 3);
  bench_fill(B, (size_t)KH * KW, 4);
  double flops = PRODUCER_FLOPS * (double)nA + 2.0 * KH * KW * (double)nC +
                 EPILOGUE_FLOPS * (double)nC,
         tol = 1e-4;
  int bad = 0;
  struct ctx c = {A, B, ref, naive_gcc};
  double t = bench_time(setup, run_fn, &c);
  bad |= bench_report(STR(KERNEL), "gcc-O3", flops, t, 0.0, tol);
  const char *names[] = {"polyc", "clang-O3", "clang-O3-polly"};
  conv_fn fns[] = {KERNEL, naive_clang, naive_polly};
  for (int i = 0; i < 3; i++) {
    if (i > 0 && bench_polyc_only()) break;
    memset(C, 0xFF, sizeof(float) * nC);
    c.C = C;
    c.f = fns[i];
    t = bench_time(setup, run_fn, &c);
    bad |= bench_report(STR(KERNEL), names[i], flops, t, bench_err(C, ref, nC), tol);
  }
  return bad;
}
