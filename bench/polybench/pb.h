/* The harness of the PolyBench peers (scripts/bench polybench).
 *
 * Each bench/polybench/<kernel>.c holds our own C translation of one PolyBench/C 4.2
 * kernel, written to compute exactly what examples/polybench/<kernel>.tc computes (the
 * same loops, the same arithmetic, the same order as PolyBench's C), and a main() built
 * from these helpers. The inputs are the ones polyc generated for the same program:
 * `polyc run <kernel>.tc --param ... --save-io DIR` writes every input as DIR/NAME.npy
 * (the starting values of an output that is read and updated as DIR/NAME.in.npy) and every
 * result as DIR/NAME.npy (an input updated in place as DIR/NAME.out.npy). The peer loads
 * the inputs, runs its kernel RUNS times on fresh copies of them (the copies are not
 * timed), and compares its results with polyc's.
 *
 * Usage: ./peer DIR RUNS LABEL      prints
 *   RESULT <kernel> <LABEL> <best ms> <ok|MISMATCH> <max error>
 * where the error is max |x - polyc| / (1 + |polyc|) over every result (elements that polyc
 * marks as never written by the program, a NaN with payload 0xA5A5..., are skipped). Sizes
 * come as -D macros (-DN=1300 -DT=500), the element type as PB_T (double; float with
 * -DPB_F32; int with -DPB_I32, compared exactly; define it before including pb.h).
 *
 * A translation looks like this:
 *
 *   #include "pb.h"
 *   static void kernel(PB_T alpha, PB_T A[restrict NI][NK], ...) { ...PolyBench's loops... }
 *   int main(int argc, char **argv) {
 *     pb_init(argc, argv, "gemm");
 *     PB_T alpha = pb_scalar("alpha");
 *     PB_T(*A)[NK] = pb_in("A", (size_t)NI * NK);    // NAME.in.npy, else NAME.npy
 *     PB_T(*C)[NJ] = pb_in("C", (size_t)NI * NJ);
 *     PB_T *tmp = pb_out((size_t)NI);                // a result or a scratch array
 *     PB_RUN(kernel(alpha, beta, A, B, C));
 *     pb_check("C", C, (size_t)NI * NJ);             // NAME.out.npy, else NAME.npy
 *     return pb_finish();
 *   }
 */
#ifndef POLYC_PB_H
#define POLYC_PB_H

#define _POSIX_C_SOURCE 200112L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(PB_I32)
typedef int PB_T;
#define PB_DESCR "<i4"
#elif defined(PB_F32)
typedef float PB_T;
#define PB_DESCR "<f4"
#else
typedef double PB_T;
#define PB_DESCR "<f8"
#endif

/* Tolerance on max |x - polyc| / (1 + |polyc|); -DPB_TOL=... overrides. */
#ifndef PB_TOL
#if defined(PB_I32)
#define PB_TOL 0
#elif defined(PB_F32)
#define PB_TOL 1e-3
#else
#define PB_TOL 1e-8
#endif
#endif

#define PB_MAX_BUFS 32

#if defined(__GNUC__)
#define PB_UNUSED __attribute__((unused))
#else
#define PB_UNUSED
#endif

static struct {
  const char *dir, *label, *kernel;
  int runs;
  int nbufs;
  PB_T *buf[PB_MAX_BUFS];     /* what the kernel works on */
  PB_T *pristine[PB_MAX_BUFS]; /* the values before a run (NULL: zeroed) */
  size_t len[PB_MAX_BUFS];
  double best_ms, max_err;
  int checked, failed;
} pb;

static void pb_die(const char *what, const char *name) {
  fprintf(stderr, "%s: %s: %s\n", pb.kernel ? pb.kernel : "pb", what, name);
  exit(2);
}

static void pb_init(int argc, char **argv, const char *kernel) {
  pb.kernel = kernel;
  if (argc != 4) {
    fprintf(stderr, "usage: %s DIR RUNS LABEL\n", argv[0]);
    exit(2);
  }
  pb.dir = argv[1];
  pb.runs = atoi(argv[2]);
  pb.label = argv[3];
  if (pb.runs < 1) pb_die("RUNS must be at least 1", argv[2]);
  pb.best_ms = INFINITY;
}

static PB_T *pb_alloc(size_t n) {
  void *p = NULL;
  if (posix_memalign(&p, 64, sizeof(PB_T) * (n ? n : 1)) != 0) pb_die("out of memory", "");
  return (PB_T *)p;
}

/* Reads DIR/<name><suffix>.npy into a new buffer of n elements; NULL when absent. */
static PB_T *pb_read(const char *name, const char *suffix, size_t n) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s%s.npy", pb.dir, name, suffix);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  unsigned char pre[10];
  if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0)
    pb_die("not a .npy file", path);
  size_t hlen = pre[8] | (size_t)pre[9] << 8;
  if (pre[6] >= 2) { /* version 2: a 4-byte header length */
    unsigned char more[2];
    if (fread(more, 1, 2, f) != 2) pb_die("truncated .npy header", path);
    hlen |= (size_t)more[0] << 16 | (size_t)more[1] << 24;
  }
  char *h = calloc(hlen + 1, 1);
  if (!h || fread(h, 1, hlen, f) != hlen) pb_die("truncated .npy header", path);
  if (!strstr(h, PB_DESCR)) pb_die("wrong element type (want " PB_DESCR ")", path);
  if (strstr(h, "'fortran_order': True")) pb_die("Fortran order is not supported", path);
  size_t count = 1;
  const char *s = strchr(strstr(h, "'shape'"), '(');
  for (s++; *s && *s != ')'; s++) {
    if (*s >= '0' && *s <= '9') {
      count *= strtoull(s, (char **)&s, 10);
      s--;
    }
  }
  free(h);
  if (count != n) {
    fprintf(stderr, "%s: %s holds %zu elements, the kernel expects %zu\n", pb.kernel, path,
            count, n);
    exit(2);
  }
  PB_T *p = pb_alloc(n);
  if (fread(p, sizeof(PB_T), n, f) != n) pb_die("truncated .npy data", path);
  fclose(f);
  return p;
}

static void *pb_track(PB_T *pristine, size_t n) {
  if (pb.nbufs == PB_MAX_BUFS) pb_die("too many arrays", "");
  int i = pb.nbufs++;
  pb.pristine[i] = pristine;
  pb.len[i] = n;
  pb.buf[i] = pb_alloc(n);
  return pb.buf[i];
}

/* An input array of n elements: DIR/NAME.in.npy (the start of an output that is read and
 * updated), else DIR/NAME.npy. */
static void *pb_in(const char *name, size_t n) {
  PB_T *p = pb_read(name, ".in", n);
  if (!p) p = pb_read(name, "", n);
  if (!p) pb_die("no input file (NAME.npy or NAME.in.npy)", name);
  return pb_track(p, n);
}

/* A scalar input: DIR/NAME.npy holding one value. */
PB_UNUSED static PB_T pb_scalar(const char *name) {
  PB_T *p = pb_read(name, "", 1);
  if (!p) pb_die("no scalar file", name);
  PB_T v = *p;
  free(p);
  return v;
}

/* An array the kernel writes before it reads it (a result or a scratch array): zeroed
 * before every run. */
PB_UNUSED static void *pb_out(size_t n) { return pb_track(NULL, n); }

static void pb_reset(void) {
  for (int i = 0; i < pb.nbufs; i++) {
    if (pb.pristine[i])
      memcpy(pb.buf[i], pb.pristine[i], sizeof(PB_T) * pb.len[i]);
    else
      memset(pb.buf[i], 0, sizeof(PB_T) * pb.len[i]);
  }
}

static double pb_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + 1e-6 * (double)t.tv_nsec;
}

/* Runs the statement `call` pb.runs times, each on fresh copies of the inputs; keeps the
 * best time. */
#define PB_RUN(call)                                     \
  do {                                                   \
    for (int pb_r = 0; pb_r < pb.runs; pb_r++) {         \
      pb_reset();                                        \
      double pb_t0 = pb_now();                           \
      call;                                              \
      double pb_ms = pb_now() - pb_t0;                   \
      if (pb_ms < pb.best_ms) pb.best_ms = pb_ms;        \
    }                                                    \
  } while (0)

/* Whether *x holds polyc's mark of an element the program never writes (a quiet NaN with
 * the payload 0xA5A5...; arithmetic never makes it): such elements are not compared. */
static int pb_is_poison(const PB_T *x) {
#if defined(PB_I32)
  const unsigned long long mark = 0xA5A5A5A5ull;
  unsigned int bits;
#elif defined(PB_F32)
  const unsigned long long mark = 0x7FC0A5A5ull;
  unsigned int bits;
#else
  const unsigned long long mark = 0x7FF80000A5A5A5A5ull;
  unsigned long long bits;
#endif
  memcpy(&bits, x, sizeof bits);
  return bits == mark;
}

/* Compares a result with polyc's (except the elements polyc marks as never written):
 * DIR/NAME.out.npy (an input updated in place), else DIR/NAME.npy. */
static void pb_check(const char *name, const void *result, size_t n) {
  PB_T *ref = pb_read(name, ".out", n);
  if (!ref) ref = pb_read(name, "", n);
  if (!ref) pb_die("no result file of polyc (NAME.out.npy or NAME.npy)", name);
  const PB_T *x = result;
  size_t compared = 0;
  for (size_t i = 0; i < n; i++) {
    if (pb_is_poison(&ref[i])) continue; /* an element the program never writes */
    compared++;
    if (x[i] == ref[i]) continue; /* equal, infinities included */
    double d = fabs((double)x[i] - (double)ref[i]) / (1.0 + fabs((double)ref[i]));
    if (!(d <= pb.max_err)) pb.max_err = isnan(d) ? INFINITY : d;
  }
  free(ref);
  if (compared == 0) pb_die("polyc wrote no element of this result", name);
  pb.checked++;
}

static int pb_finish(void) {
  if (pb.checked == 0) pb_die("no result was checked", "");
  int ok = pb.max_err <= PB_TOL;
  printf("RESULT %s %s %.3f %s %.3g\n", pb.kernel, pb.label, pb.best_ms, ok ? "ok" : "MISMATCH",
         pb.max_err);
  return ok ? 0 : 1;
}

#endif
