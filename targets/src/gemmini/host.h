/*
 * polyc's host implementation of the Gemmini C API.
 *
 * C written against Gemmini's `gemmini.h` (ucb-bar/gemmini-rocc-tests, default
 * `gemmini_params.h`) compiles on the host with this header instead, when built with
 * -DPOLYC_GEMMINI_HOST:
 *
 *     #ifdef POLYC_GEMMINI_HOST
 *     #include "polyc_gemmini_host.h"
 *     #else
 *     #include "include/gemmini.h"
 *     #endif
 *
 * Every instruction macro passes the RoCC operands that the real macro would put in rs1
 * and rs2 (same bit layout) to `polyc_gemmini_dispatch`, a function pointer that polyc's
 * runner sets, with `polyc_gemmini_ctx`, before it calls the kernel; the runner executes
 * them on its functional model of Gemmini. DRAM addresses are host pointers.
 * `gemmini_fence()` is reported with funct 128 (on the chip it is the core's `fence`).
 *
 * Provided: the types and constants of the default configuration (or, with
 * -DPOLYC_GEMMINI_FP32, of Gemmini's float configuration), the mvin/mvout,
 * preload, compute, config_ex/config_ld/config_st families, gemmini_flush and
 * gemmini_fence. Not provided (using them does not compile): the hardware loops
 * (gemmini_loop_ws, gemmini_loop_conv_ws), tiled_matmul_* / tiled_conv_*, config_norm
 * and the counters.
 */
#ifndef POLYC_GEMMINI_HOST_H
#define POLYC_GEMMINI_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- The configuration ---------------------------------------------------------------
 * Default: gemmini_params.h's (int8 inputs, int32 accumulator, DIM 16).
 * With -DPOLYC_GEMMINI_FP32: Gemmini's float configuration (f32 everywhere, DIM 4). */

#ifdef POLYC_GEMMINI_FP32

#define DIM 4
#define ADDR_LEN 32
#define BANK_NUM 4
#define BANK_ROWS 4096
#define ACC_ROWS 4096
#define MAX_BYTES 64
#define MAX_BLOCK_LEN (MAX_BYTES / (DIM * 4))
#define MAX_BLOCK_LEN_ACC (MAX_BYTES / (DIM * 4))

typedef float elem_t;
typedef float acc_t;
typedef double full_t;
typedef uint32_t elem_t_bits;
typedef uint32_t acc_t_bits;
typedef float scale_t;
typedef uint32_t scale_t_bits;
typedef float scale_acc_t;
typedef uint32_t scale_acc_t_bits;
typedef float acc_scale_t;
typedef uint32_t acc_scale_t_bits;

__attribute__((unused)) static const elem_t elem_t_max = 3.4028235E38f;
__attribute__((unused)) static const elem_t elem_t_min = -3.4028235E38f;

#define ELEM_T_IS_FLOAT
#define HAS_MVIN_SCALE
#define HAS_MVIN_ACC_SCALE
#define ACC_SCALE_T_IS_FLOAT
#define MVIN_SCALE_IDENTITY 1.0
#define ACC_SCALE_IDENTITY 1.0

#else

#define DIM 16
#define ADDR_LEN 32
#define BANK_NUM 4
#define BANK_ROWS 4096
#define ACC_ROWS 1024
#define MAX_BYTES 64
#define MAX_BLOCK_LEN (MAX_BYTES / (DIM * 1))
#define MAX_BLOCK_LEN_ACC (MAX_BYTES / (DIM * 4))

typedef int8_t elem_t;
typedef int32_t acc_t;
typedef int64_t full_t;
typedef float scale_t;
typedef uint32_t scale_t_bits;
typedef int32_t scale_acc_t;
typedef uint32_t scale_acc_t_bits;
typedef float acc_scale_t;
typedef uint32_t acc_scale_t_bits;

__attribute__((unused)) static const elem_t elem_t_max = 127;
__attribute__((unused)) static const elem_t elem_t_min = -128;

#define HAS_MVIN_SCALE
#define ACC_SCALE_T_IS_FLOAT
#define MVIN_SCALE_IDENTITY 1.0
#define ACC_SCALE_IDENTITY 1.0

#endif

#define row_align(blocks) __attribute__((aligned((blocks) * DIM * sizeof(elem_t))))
#define row_align_acc(blocks) __attribute__((aligned((blocks) * DIM * sizeof(acc_t))))

/* ---- Constants of the API ------------------------------------------------------------ */

#define GARBAGE_ADDR ((uint32_t)0xFFFFFFFFu)
#define OUTPUT_STATIONARY 0
#define WEIGHT_STATIONARY 1
#define NO_ACTIVATION 0
#define RELU 1

/* RoCC funct values (the model decodes these). */
#define POLYC_GM_CONFIG 0
#define POLYC_GM_MVIN2 1
#define POLYC_GM_MVIN 2
#define POLYC_GM_MVOUT 3
#define POLYC_GM_COMPUTE_PRELOADED 4
#define POLYC_GM_COMPUTE_ACCUMULATED 5
#define POLYC_GM_PRELOAD 6
#define POLYC_GM_FLUSH 7
#define POLYC_GM_MVIN3 14
#define POLYC_GM_HOST_FENCE 128

/* ---- The link to the model ----------------------------------------------------------- */

typedef void (*polyc_gemmini_dispatch_fn)(void *ctx, uint32_t funct, uint64_t rs1,
                                          uint64_t rs2);

/* Set by the runner before the kernel runs (weak, so that several translation units
 * including this header share one definition). */
__attribute__((weak, visibility("default"))) polyc_gemmini_dispatch_fn polyc_gemmini_dispatch = 0;
__attribute__((weak, visibility("default"))) void *polyc_gemmini_ctx = 0;
/* The DIM and element size this header was built for; the runner checks them against its
 * model. */
__attribute__((weak, visibility("default"))) const uint32_t polyc_gemmini_host_dim = DIM;
__attribute__((weak, visibility("default"))) const uint32_t polyc_gemmini_host_elem_bytes =
    sizeof(elem_t);

static inline void polyc_gemmini_insn(uint32_t funct, uint64_t rs1, uint64_t rs2) {
    if (polyc_gemmini_dispatch == 0) {
        fprintf(stderr, "polyc_gemmini_host.h: no Gemmini model is attached "
                        "(polyc_gemmini_dispatch is not set)\n");
        abort();
    }
    polyc_gemmini_dispatch(polyc_gemmini_ctx, funct, rs1, rs2);
}

static inline uint64_t polyc_gemmini_f32_bits(float x) {
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    return (uint64_t)bits;
}

/* A local address with its column and row counts, as rs1/rs2 carry them. */
static inline uint64_t polyc_gemmini_sized(uint32_t local, uint64_t cols, uint64_t rows) {
    return (rows << (ADDR_LEN + 16)) | (cols << ADDR_LEN) | (uint64_t)local;
}

#define POLYC_GM_DRAM(p) ((uint64_t)(uintptr_t)(p))

/* ---- Data movement ------------------------------------------------------------------- */

#define gemmini_extended_mvin(dram_addr, spad_addr, cols, rows)                              \
    polyc_gemmini_insn(POLYC_GM_MVIN, POLYC_GM_DRAM(dram_addr),                            \
                       polyc_gemmini_sized((uint32_t)(spad_addr), (cols), (rows)))
#define gemmini_extended_mvin2(dram_addr, spad_addr, cols, rows)                             \
    polyc_gemmini_insn(POLYC_GM_MVIN2, POLYC_GM_DRAM(dram_addr),                           \
                       polyc_gemmini_sized((uint32_t)(spad_addr), (cols), (rows)))
#define gemmini_extended_mvin3(dram_addr, spad_addr, cols, rows)                             \
    polyc_gemmini_insn(POLYC_GM_MVIN3, POLYC_GM_DRAM(dram_addr),                           \
                       polyc_gemmini_sized((uint32_t)(spad_addr), (cols), (rows)))
#define gemmini_block_mvin(dram_addr, spad_addr, len)                                        \
    gemmini_extended_mvin(dram_addr, spad_addr, (len) * DIM, DIM)
#define gemmini_mvin(dram_addr, spad_addr) gemmini_extended_mvin(dram_addr, spad_addr, DIM, DIM)

#define gemmini_extended_mvout(dram_addr, spad_addr, cols, rows)                             \
    polyc_gemmini_insn(POLYC_GM_MVOUT, POLYC_GM_DRAM(dram_addr),                           \
                       polyc_gemmini_sized((uint32_t)(spad_addr), (cols), (rows)))
#define gemmini_mvout(dram_addr, spad_addr) gemmini_extended_mvout(dram_addr, spad_addr, DIM, DIM)

/* ---- The array ----------------------------------------------------------------------- */

#define gemmini_extended_preload(BD, C, BD_cols, BD_rows, C_cols, C_rows)                    \
    polyc_gemmini_insn(POLYC_GM_PRELOAD,                                                   \
                       polyc_gemmini_sized((uint32_t)(BD), (BD_cols), (BD_rows)),          \
                       polyc_gemmini_sized((uint32_t)(C), (C_cols), (C_rows)))
#define gemmini_preload(BD, C) gemmini_extended_preload(BD, C, DIM, DIM, DIM, DIM)
#define gemmini_preload_zeros(C) gemmini_preload(GARBAGE_ADDR, C)

#define gemmini_extended_compute_preloaded(A, BD, A_cols, A_rows, BD_cols, BD_rows)          \
    polyc_gemmini_insn(POLYC_GM_COMPUTE_PRELOADED,                                         \
                       polyc_gemmini_sized((uint32_t)(A), (A_cols), (A_rows)),             \
                       polyc_gemmini_sized((uint32_t)(BD), (BD_cols), (BD_rows)))
#define gemmini_extended_compute_accumulated(A, BD, A_cols, A_rows, BD_cols, BD_rows)        \
    polyc_gemmini_insn(POLYC_GM_COMPUTE_ACCUMULATED,                                       \
                       polyc_gemmini_sized((uint32_t)(A), (A_cols), (A_rows)),             \
                       polyc_gemmini_sized((uint32_t)(BD), (BD_cols), (BD_rows)))
#define gemmini_compute_preloaded(A, BD)                                                     \
    gemmini_extended_compute_preloaded(A, BD, DIM, DIM, DIM, DIM)
#define gemmini_compute_accumulated(A, BD)                                                   \
    gemmini_extended_compute_accumulated(A, BD, DIM, DIM, DIM, DIM)

/* ---- Configuration ------------------------------------------------------------------- */

static inline void polyc_gemmini_config_ex(uint64_t dataflow, uint64_t act, uint64_t shift,
                                           acc_scale_t acc_scale, uint64_t c_stride,
                                           uint64_t a_stride, uint64_t a_transpose,
                                           uint64_t b_transpose, uint64_t set_only_strides) {
    uint64_t rs1 = (polyc_gemmini_f32_bits(acc_scale) << 32) | (a_stride << 16) |
                   (b_transpose << 9) | (a_transpose << 8) | (set_only_strides << 7) |
                   (act << 3) | (dataflow << 2) | 0;
    uint64_t rs2 = (c_stride << 48) | shift;
    polyc_gemmini_insn(POLYC_GM_CONFIG, rs1, rs2);
}

#define gemmini_extended3_config_ex(dataflow, sys_act, sys_shift, sys_acc_scale, C_stride,   \
                                    A_stride, A_transpose, B_transpose, set_only_strides)    \
    polyc_gemmini_config_ex((dataflow), (sys_act), (sys_shift), (acc_scale_t)(sys_acc_scale), \
                            (C_stride), (A_stride), (A_transpose), (B_transpose),            \
                            (set_only_strides))
#define gemmini_extended2_config_ex(dataflow, sys_act, sys_shift, A_stride, A_transpose,     \
                                    B_transpose)                                             \
    gemmini_extended3_config_ex(dataflow, sys_act, sys_shift, ACC_SCALE_IDENTITY, 1,         \
                                A_stride, A_transpose, B_transpose, false)
#define gemmini_extended_config_ex(dataflow, sys_act, sys_shift, A_stride, A_transpose,      \
                                   B_transpose)                                              \
    gemmini_extended2_config_ex(dataflow, sys_act, sys_shift, A_stride, A_transpose,         \
                                B_transpose)
#define gemmini_config_ex(dataflow, sys_act, sys_shift)                                      \
    gemmini_extended_config_ex(dataflow, sys_act, sys_shift, 1, 0, 0)

static inline void polyc_gemmini_config_ld(uint64_t stride, scale_t scale, uint64_t shrunk,
                                           uint64_t block_stride, uint64_t pixel_repeats,
                                           uint64_t id) {
    uint64_t rs1 = (polyc_gemmini_f32_bits(scale) << 32) | (block_stride << 16) |
                   (pixel_repeats << 8) | (id << 3) | (shrunk << 2) | 1;
    polyc_gemmini_insn(POLYC_GM_CONFIG, rs1, stride);
}

#define gemmini_extended5_config_ld(stride, scale, shrunk, block_mvin_stride, pixel_repeats, \
                                    id)                                                      \
    polyc_gemmini_config_ld((stride), (scale_t)(scale), (shrunk), (block_mvin_stride),       \
                            (pixel_repeats), (id))
#define gemmini_extended4_config_ld(stride, scale, shrunk, block_mvin_stride, id)            \
    gemmini_extended5_config_ld(stride, scale, shrunk, block_mvin_stride, 1, id)
#define gemmini_extended3_config_ld(stride, scale, shrunk, id)                               \
    gemmini_extended4_config_ld(stride, scale, shrunk, DIM, id)
#define gemmini_extended2_config_ld(stride, scale, shrunk)                                   \
    gemmini_extended3_config_ld(stride, scale, shrunk, 0)
#define gemmini_extended_config_ld(stride, scale)                                            \
    gemmini_extended2_config_ld(stride, scale, false)
#define gemmini_config_ld(stride) gemmini_extended_config_ld(stride, MVIN_SCALE_IDENTITY)

static inline void polyc_gemmini_config_st(uint64_t stride, uint64_t act, acc_scale_t scale,
                                           uint64_t pool_stride, uint64_t pool_size,
                                           uint64_t pool_out_dim, uint64_t porows,
                                           uint64_t pocols, uint64_t orows, uint64_t ocols,
                                           uint64_t upad, uint64_t lpad) {
    uint64_t rs1 = (ocols << 56) | (orows << 48) | (pocols << 40) | (porows << 32) |
                   (pool_out_dim << 24) | (lpad << 10) | (upad << 8) | (pool_size << 6) |
                   (pool_stride << 4) | (act << 2) | 2;
    uint64_t rs2 = (polyc_gemmini_f32_bits(scale) << 32) | (uint64_t)(uint32_t)stride;
    polyc_gemmini_insn(POLYC_GM_CONFIG, rs1, rs2);
}

#define gemmini_extended2_config_st(stride, acc_act, acc_scale, pool_stride, pool_size,      \
                                    pool_out_dim, porows, pocols, orows, ocols, upad, lpad)  \
    polyc_gemmini_config_st((stride), (acc_act), (acc_scale_t)(acc_scale), (pool_stride),    \
                            (pool_size), (pool_out_dim), (porows), (pocols), (orows),        \
                            (ocols), (upad), (lpad))
#define gemmini_extended_config_st(stride, acc_act, acc_scale)                               \
    gemmini_extended2_config_st(stride, acc_act, acc_scale, 0, 0, 0, 0, 0, 0, 0, 0, 0)
#define gemmini_config_st(stride)                                                            \
    gemmini_extended_config_st(stride, NO_ACTIVATION, ACC_SCALE_IDENTITY)

/* ---- Synchronisation ----------------------------------------------------------------- */

#define gemmini_flush(skip) polyc_gemmini_insn(POLYC_GM_FLUSH, (uint64_t)(skip), 0)
#define gemmini_fence() polyc_gemmini_insn(POLYC_GM_HOST_FENCE, 0, 0)

#endif /* POLYC_GEMMINI_HOST_H */
