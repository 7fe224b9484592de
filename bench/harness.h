/* Shared helpers of polyc's benchmark harnesses (see scripts/bench).
 *
 * Each harness times every implementation of one kernel in one process, best of N, checks
 * each result against a reference (the gcc -O3 naive loops) within a relative tolerance,
 * and prints one line per implementation:
 *   RESULT <kernel> <impl> <GFLOP/s> <best ms> <ok|MISMATCH>
 */
#ifndef POLYC_BENCH_HARNESS_H
#define POLYC_BENCH_HARNESS_H

#define _POSIX_C_SOURCE 200112L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double bench_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static float *bench_alloc(size_t n) {
  void *p = NULL;
  if (posix_memalign(&p, 64, sizeof(float) * (n ? n : 1)) != 0) {
    fprintf(stderr, "bench: out of memory\n");
    exit(2);
  }
  return (float *)p;
}

/* Deterministic values in [-0.5, 0.5). */
static void bench_fill(float *x, size_t n, uint32_t seed) {
  uint32_t s = seed * 2654435761u + 12345u;
  for (size_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    x[i] = (float)(s >> 8) / 16777216.0f - 0.5f;
  }
}

/* Largest |x - ref| / (1 + |ref|). */
static double bench_err(const float *x, const float *ref, size_t n) {
  double worst = 0.0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)x[i] - (double)ref[i]) / (1.0 + fabs((double)ref[i]));
    if (!(d <= worst)) worst = d; /* NaN counts as worst */
    if (isnan(d)) return INFINITY;
  }
  return worst;
}

/* Runs `setup(ctx)` (untimed) then `run(ctx)` (timed) repeatedly: at least 3 times and
 * for at least 1 s in total, at most 100 times, but once a single run takes over 2 s, two
 * runs are enough. Returns the best time in seconds. A fast kernel (GEMM 1024^3 runs in
 * ~20 ms) is thus timed over a full second rather than 10 runs in 0.2 s: on a shared
 * machine a burst of other load could cover all of those (one run measured polyc's GEMM
 * at 65 GFLOP/s, the next at 100, for the same C). */
static double bench_time(void (*setup)(void *), void (*run)(void *), void *ctx) {
  double best = INFINITY, total = 0.0;
  for (int n = 0; n < 100; n++) {
    if (setup) setup(ctx);
    double t0 = bench_now();
    run(ctx);
    double t = bench_now() - t0;
    total += t;
    if (t < best) best = t;
    if (n + 1 >= 3 && total >= 1.0) break;
    if (n + 1 >= 2 && best > 2.0) break;
  }
  return best;
}

/* BENCH_POLYC_ONLY=1 (scripts/bench's runs of polyc's C built under plain flags): time the
 * reference and polyc's kernel only, and skip the other peers. */
static int bench_polyc_only(void) {
  const char *e = getenv("BENCH_POLYC_ONLY");
  return e != NULL && e[0] == '1';
}

static int bench_report(const char *kernel, const char *impl, double flops, double secs,
                        double err, double tol) {
  int ok = err <= tol;
  printf("RESULT %s %s %.3f %.3f %s %.2e\n", kernel, impl, flops / secs * 1e-9, secs * 1e3,
         ok ? "ok" : "MISMATCH", err);
  fflush(stdout);
  return ok ? 0 : 1;
}

#endif
