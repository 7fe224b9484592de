/* Naive conv chain with the bias add into a temporary (examples/conv_chain_temp.tc):
 * Ab = A + bias, C = Ab (*) B (valid 2-D correlation, KH x KW), C = abs(C), C = relu(C);
 * loops in program order, flat indexing (see conv_chain_naive.c). The temporary is
 * allocated once, on the first call, so the peers do not pay for allocating it.
 * With -DPOLY, examples/conv_chain_poly.tc instead: Ab = act(A) + bias with act the
 * degree-8 Taylor polynomial of exp in Horner form, and no abs. */
#include <math.h>
#include <stdlib.h>
#define HO (H - KH + 1)
#define WO (W - KW + 1)
#ifdef POLY
static inline float act(float x) {
  return (((((((x * 0.0000248016f + 0.000198413f) * x + 0.00138889f) * x + 0.00833333f) * x +
             0.0416667f) * x + 0.166667f) * x + 0.5f) * x + 1.0f) * x + 1.0f;
}
#else
static inline float act(float x) { return x; }
#endif
void NAIVE(const float *restrict A, const float *restrict B, float bias, float *restrict C) {
  static float *Ab;
  if (!Ab) Ab = malloc(sizeof(float) * (size_t)H * W);
  for (int h = 0; h < H; h++)
    for (int w = 0; w < W; w++)
      Ab[h * W + w] = act(A[h * W + w]) + bias;
  for (int h = 0; h < HO; h++)
    for (int w = 0; w < WO; w++) {
      C[h * WO + w] = 0.0f;
      for (int kh = 0; kh < KH; kh++)
        for (int kw = 0; kw < KW; kw++)
          C[h * WO + w] += Ab[(h + kh) * W + w + kw] * B[kh * KW + kw];
    }
#ifndef POLY
  for (int h = 0; h < HO; h++)
    for (int w = 0; w < WO; w++)
      C[h * WO + w] = fabsf(C[h * WO + w]);
#endif
  for (int h = 0; h < HO; h++)
    for (int w = 0; w < WO; w++)
      C[h * WO + w] = C[h * WO + w] > 0 ? C[h * WO + w] : 0.0f;
}
