/* Every instruction macro form of the Gemmini API that polyc's host header provides, once.
 * Built against the host header (the model decodes each) and against the real gemmini.h
 * for RISC-V (the names and arities exist there too). */
#ifdef POLYC_GEMMINI_HOST
#include "polyc_gemmini_host.h"
#else
#include "include/gemmini.h"
#endif

int all(void **args) {
    elem_t *p = (elem_t *)args[0];
    gemmini_config_ex(WEIGHT_STATIONARY, RELU, 3);
    gemmini_extended_config_ex(OUTPUT_STATIONARY, NO_ACTIVATION, 2, 5, true, true);
    gemmini_extended3_config_ex(WEIGHT_STATIONARY, NO_ACTIVATION, 0, 0.5, 7, 9, true, false, false);
    gemmini_config_ld(48);
    gemmini_extended_config_ld(32, 0.25);
    gemmini_extended3_config_ld(20, 2.0, true, 2);
    gemmini_extended5_config_ld(21, 1.5, false, 33, 2, 1);
    gemmini_config_st(64);
    gemmini_extended_config_st(17, RELU, 0.125);
    gemmini_mvin(p, 3);
    gemmini_block_mvin(p + 1, 40, 2);
    gemmini_extended_mvin2(p + 2, 64, 5, 6);
    gemmini_extended_mvin3(p + 3, (1u << 31) | (1u << 30) | 8, 16, 2);
    gemmini_mvout(p + 4, 3);
    gemmini_extended_mvout(p + 5, (1u << 31) | (1u << 29) | 8, 4, 2);
    gemmini_preload(16, 1u << 31);
    gemmini_preload_zeros(32);
    gemmini_extended_preload(GARBAGE_ADDR, (3u << 30) | 4, 16, 16, 7, 9);
    gemmini_compute_preloaded(0, GARBAGE_ADDR);
    gemmini_compute_accumulated(0, 16);
    gemmini_extended_compute_preloaded(48, 64, 3, 4, 5, 6);
    gemmini_extended_compute_accumulated(48, GARBAGE_ADDR, 16, 1, 16, 16);
    gemmini_flush(0);
    gemmini_fence();
    return 0;
}
