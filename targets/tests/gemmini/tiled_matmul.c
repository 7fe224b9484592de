/*
 * A tiled int8 matmul written against Gemmini's public C API only (gemmini.h names).
 *
 * C[M×N] = act(scale · (A[M×K] · B[K×N])), int8 in and out, all row-major and dense.
 * Tiles of DIM×DIM; the last tile of each dimension uses the instructions' row and column
 * arguments (nothing is padded in DRAM). The partial sums live in the accumulator; the
 * scaling, rounding, saturation and activation happen on mvout.
 *
 * (Names must not clash with gemmini.h's own functions, such as tiled_matmul.)
 *
 * Built two ways by polyc's tests: on the host against polyc's header (which runs the
 * instructions on polyc's Gemmini model), and for RISC-V against the real gemmini.h.
 */
#ifdef POLYC_GEMMINI_HOST
#include "polyc_gemmini_host.h"
#else
#include "include/gemmini.h"
#endif

#define MIN(a, b) ((a) < (b) ? (a) : (b))

static void polyc_tiled_matmul(const elem_t *A, const elem_t *B, elem_t *C, size_t M, size_t N,
                         size_t K, int act, acc_scale_t scale, int dataflow) {
    /* Scratchpad: two buffers of (A tile, B tile), alternating with k. */
    const uint32_t sp_tile = DIM;
    const uint32_t acc_c = 1u << 31;            /* accumulator row 0, overwrite */
    const uint32_t acc_c_accumulate = 3u << 30; /* accumulator row 0, accumulate */

    gemmini_extended_config_ex(dataflow, NO_ACTIVATION, 0, 1, false, false);
    gemmini_extended_config_st(N * sizeof(elem_t), act, scale);
    gemmini_extended3_config_ld(K * sizeof(elem_t), MVIN_SCALE_IDENTITY, false, 0);
    gemmini_extended3_config_ld(N * sizeof(elem_t), MVIN_SCALE_IDENTITY, false, 1);

    const size_t k_tiles = (K + DIM - 1) / DIM;
    for (size_t i0 = 0; i0 < M; i0 += DIM) {
        const size_t rows = MIN((size_t)DIM, M - i0);
        for (size_t j0 = 0; j0 < N; j0 += DIM) {
            const size_t cols = MIN((size_t)DIM, N - j0);
            for (size_t t = 0; t < k_tiles; t++) {
                const size_t k0 = t * DIM;
                const size_t kk = MIN((size_t)DIM, K - k0);
                const uint32_t a_sp = (uint32_t)((t % 2) * 2 * sp_tile);
                const uint32_t b_sp = a_sp + sp_tile;
                gemmini_extended_mvin(A + i0 * K + k0, a_sp, kk, rows);
                gemmini_extended_mvin2(B + k0 * N + j0, b_sp, cols, kk);
                if (dataflow == WEIGHT_STATIONARY) {
                    gemmini_extended_preload(b_sp, t == 0 ? acc_c : acc_c_accumulate, cols, kk,
                                             cols, rows);
                    gemmini_extended_compute_preloaded(a_sp, GARBAGE_ADDR, kk, rows, DIM, DIM);
                } else {
                    /* OS: the sum stays in the PEs; the last compute writes it out. */
                    gemmini_extended_preload(GARBAGE_ADDR, t + 1 == k_tiles ? acc_c : GARBAGE_ADDR,
                                             DIM, DIM, cols, rows);
                    /* Braces: the real macros expand to blocks. */
                    if (t == 0) {
                        gemmini_extended_compute_preloaded(a_sp, b_sp, kk, rows, cols, kk);
                    } else {
                        gemmini_extended_compute_accumulated(a_sp, b_sp, kk, rows, cols, kk);
                    }
                }
            }
            gemmini_extended_mvout(C + i0 * N + j0, acc_c, cols, rows);
        }
    }
    gemmini_fence();
}

/* args: A, B, C, int64_t params[5] = {M, N, K, act, dataflow}, float *scale. */
int polyc_gemmini_test(void **args) {
    const int64_t *p = (const int64_t *)args[3];
    const float scale = *(const float *)args[4];
    polyc_tiled_matmul((const elem_t *)args[0], (const elem_t *)args[1], (elem_t *)args[2],
                 (size_t)p[0], (size_t)p[1], (size_t)p[2], (int)p[3], scale, (int)p[4]);
    return 0;
}
