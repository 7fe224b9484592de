/* PolyBench jacobi-2d against examples/polybench/jacobi_2d_time.tc, the same computation
 * written with an explicit time dimension: jacobi_2d.c's loop nest, comparing Aout only
 * (the .tc leaves A and B alone). */
/* LARGE: N=1300,T=500 */
#define PB_AOUT_ONLY 1
#include "jacobi_2d.c"
