/* PolyBench floyd-warshall (examples/polybench/floyd_warshall.tc): all-pairs shortest
 * paths, relaxing path in place through each k (f64 here; PolyBench's default is int), in
 * PolyBench's loop order; then paths := path. */
/* LARGE: N=2800 */
#include "pb.h"

static void kernel(PB_T path[restrict N][N], PB_T paths[restrict N][N]) {
  for (int k = 0; k < N; k++)
    for (int i = 0; i < N; i++)
      for (int j = 0; j < N; j++)
        path[i][j] =
            path[i][j] < path[i][k] + path[k][j] ? path[i][j] : path[i][k] + path[k][j];
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) paths[i][j] = path[i][j];
}

int main(int argc, char **argv) {
  pb_init(argc, argv, "floyd_warshall");
  PB_T(*path)[N] = pb_in("path", (size_t)N * N);
  PB_T(*paths)[N] = pb_out((size_t)N * N);
  PB_RUN(kernel(path, paths));
  pb_check("path", path, (size_t)N * N);
  pb_check("paths", paths, (size_t)N * N);
  return pb_finish();
}
