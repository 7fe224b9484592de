/* Naive conv chain (the AKG paper's example): A += bias in place, C = A (*) B (valid 2-D
 * correlation, KH x KW), C = abs(C), C = relu(C); loops in program order.
 *
 * Flat indexing on purpose: written with C99 2-D arrays, this kernel runs at about the
 * same speed under gcc but 4x slower under clang (5 against 21 GFLOP/s) and slower under
 * Polly (5 against 7), so the flat form gives the peers their best chance. */
#include <math.h>
#define HO (H - KH + 1)
#define WO (W - KW + 1)
void NAIVE(float *restrict A, const float *restrict B, float bias, float *restrict C) {
  for (int h = 0; h < H; h++)
    for (int w = 0; w < W; w++)
      A[h * W + w] = A[h * W + w] + bias;
  for (int h = 0; h < HO; h++)
    for (int w = 0; w < WO; w++) {
      C[h * WO + w] = 0.0f;
      for (int kh = 0; kh < KH; kh++)
        for (int kw = 0; kw < KW; kw++)
          C[h * WO + w] += A[(h + kh) * W + w + kw] * B[kh * KW + kw];
    }
  for (int h = 0; h < HO; h++)
    for (int w = 0; w < WO; w++)
      C[h * WO + w] = fabsf(C[h * WO + w]);
  for (int h = 0; h < HO; h++)
    for (int w = 0; w < WO; w++)
      C[h * WO + w] = C[h * WO + w] > 0 ? C[h * WO + w] : 0.0f;
}
