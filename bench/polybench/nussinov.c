/* PolyBench nussinov (examples/polybench/nussinov.tc): RNA folding by dynamic programming,
 * maximising table in place with i running downwards, in PolyBench's loop order. As in the
 * .tc, the bases 0..3 come from the random input seq as seq mod 4 (first, a plain loop),
 * table starts from its random input, and out := table at the end. The data are int32
 * (PolyBench's default int), compared exactly. */
/* LARGE: N=2500 */
#define PB_I32
#include "pb.h"

static inline int max_score(int s1, int s2) { return s1 >= s2 ? s1 : s2; }
static inline int match(int b1, int b2) { return b1 + b2 == 3 ? 1 : 0; }

static void kernel(int seq[restrict N], int base[restrict N], int table[restrict N][N],
                   int out[restrict N][N]) {
  for (int i = 0; i < N; i++) base[i] = ((seq[i] % 4) + 4) % 4;
  for (int i = N - 1; i >= 0; i--) {
    for (int j = i + 1; j < N; j++) {
      if (j - 1 >= 0) table[i][j] = max_score(table[i][j], table[i][j - 1]);
      if (i + 1 < N) table[i][j] = max_score(table[i][j], table[i + 1][j]);
      if (j - 1 >= 0 && i + 1 < N) {
        if (i < j - 1)
          table[i][j] = max_score(table[i][j], table[i + 1][j - 1] + match(base[i], base[j]));
        else
          table[i][j] = max_score(table[i][j], table[i + 1][j - 1]);
      }
      for (int k = i + 1; k < j; k++)
        table[i][j] = max_score(table[i][j], table[i][k] + table[k + 1][j]);
    }
  }
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) out[i][j] = table[i][j];
}

int main(int argc, char **argv) {
  pb_init(argc, argv, "nussinov");
  int *seq = pb_in("seq", (size_t)N);
  int(*table)[N] = pb_in("table", (size_t)N * N);
  int *base = pb_out((size_t)N);
  int(*out)[N] = pb_out((size_t)N * N);
  PB_RUN(kernel(seq, base, table, out));
  pb_check("table", table, (size_t)N * N);
  pb_check("out", out, (size_t)N * N);
  return pb_finish();
}
