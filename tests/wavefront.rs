//! The CPU's `wavefront` stage: time-iterated stencils whose skewed bands have no
//! coincident member run their tiles in parallel wavefronts, with one guard-free row loop
//! per statement. Results are checked against the interpreter (`--check`) and, for
//! jacobi-2d, against a Rust transliteration of PolyBench's C loops, at sizes that leave
//! partial tiles along every member.

mod common;
use common::*;

const JACOBI_2D_F32: &str = "\
def jacobi2d(f32(N, M) A, f32(N, M) B) -> (f32(N, M) Aout) {
  for t in 0:T {
    B(i, j) = 0.2 * (A(i, j) + A(i, j - 1) + A(i, j + 1) + A(i + 1, j) + A(i - 1, j)) where i in 1:N - 1, j in 1:M - 1
    A(i, j) = 0.2 * (B(i, j) + B(i, j - 1) + B(i, j + 1) + B(i + 1, j) + B(i - 1, j)) where i in 1:N - 1, j in 1:M - 1
  }
  Aout(i, j) = A(i, j)
}
";

/// PolyBench's jacobi-2d example.
fn jacobi_2d() -> String {
    root()
        .join("examples/polybench/jacobi_2d.tc")
        .display()
        .to_string()
}

/// jacobi-2d's tree at N = 301, T = 13 after `stage`.
fn jacobi_2d_tree(stage: &str) -> String {
    let prog = jacobi_2d();
    polyc_ok(&["dump", &prog, "--param", "N=301,T=13", "--stage", stage])
}

/// The notes of a compile's standard error that the wavefront pass wrote.
fn wavefront_notes(err: &str) -> Vec<String> {
    err.lines()
        .filter(|l| l.contains("note: wavefront:"))
        .map(str::to_string)
        .collect()
}

/// PolyBench's jacobi-2d at N = 301, T = 13 (its data, 1.4 MB, does not fit half of L2,
/// so the default policy tiles it): the tiles run in wavefronts and each statement gets
/// its own row loop; two threads compute exactly what PolyBench's C loops compute.
#[test]
fn jacobi_2d_runs_in_wavefronts_as_the_c_loops_do() {
    let tmp = tempdir();
    let io = tmp.path().join("io");
    let io_s = io.display().to_string();
    let prog = jacobi_2d();
    let out = polyc(&[
        "run",
        &prog,
        "--param",
        "N=301,T=13",
        "--check",
        "--save-io",
        &io_s,
    ]);
    assert_code(&out, 0);
    let err = stderr(&out);
    assert_eq!(
        wavefront_notes(&err),
        [
            "polyc: note: wavefront: the tiles of S_0, S_1, S_2 run in wavefronts (tile members 0 + 1 in sequence, member 1 in parallel)",
            "polyc: note: wavefront: S_0, S_1, S_2 each run their own innermost loop, in this order",
        ],
        "{err}"
    );
    let (mut a, mut b) = (f64s(&io, "A.npy"), f64s(&io, "B.npy"));
    let n = 301;
    for _ in 0..13 {
        for i in 1..n - 1 {
            for j in 1..n - 1 {
                b[i * n + j] = 0.2
                    * (a[i * n + j]
                        + a[i * n + j - 1]
                        + a[i * n + j + 1]
                        + a[(i + 1) * n + j]
                        + a[(i - 1) * n + j]);
            }
        }
        for i in 1..n - 1 {
            for j in 1..n - 1 {
                a[i * n + j] = 0.2
                    * (b[i * n + j]
                        + b[i * n + j - 1]
                        + b[i * n + j + 1]
                        + b[(i + 1) * n + j]
                        + b[(i - 1) * n + j]);
            }
        }
    }
    // The same additions in the same order: bit-identical.
    assert_eq!(f64s(&io, "Aout.npy"), a, "Aout");
    assert_eq!(f64s(&io, "A.out.npy"), a, "A");
    assert_eq!(f64s(&io, "B.out.npy"), b, "B");
}

/// The tree after the `wavefront` stage, exactly: the tile band's member 0 is the sum of
/// the two tile members and member 1 is coincident; below the point band's outer members,
/// a sequence runs each statement's innermost member on its own.
#[test]
fn the_wavefront_tree_of_jacobi_2d() {
    let tree = jacobi_2d_tree("wavefront");
    insta::assert_snapshot!(tree);
}

/// The `parallel` stage puts its mark on the wavefront band's member 1, inside the
/// sequential wavefront loop, and the C has one `omp parallel for` there.
#[test]
fn the_parallel_loop_is_the_tile_loop_inside_the_wavefront() {
    let tree = jacobi_2d_tree("parallel");
    let lines: Vec<&str> = tree.lines().collect();
    assert!(
        lines[1]
            .trim_start()
            .starts_with("Band {S_0 -> (floor((t)/"),
        "{tree}"
    );
    assert!(lines[1].ends_with("permutable coincident=[0]"), "{tree}");
    assert_eq!(lines[2].trim(), "Mark \"parallel\"", "{tree}");
    assert!(lines[3].ends_with("permutable coincident=[1]"), "{tree}");
    let tmp = tempdir();
    let c = tmp.path().join("j.c");
    let c_s = c.display().to_string();
    let prog = jacobi_2d();
    polyc_ok(&["compile", &prog, "--param", "N=301,T=13", "-o", &c_s]);
    let text = std::fs::read_to_string(&c).unwrap();
    assert_eq!(
        text.matches("#pragma omp parallel for").count(),
        1,
        "{text}"
    );
}

/// f32, a rectangular grid with odd sizes (partial tiles along every member), and
/// fdtd-2d (four statements, three arrays updated in place, one read at the time step):
/// both are transformed, and both equal the interpreter on one and on two threads.
#[test]
fn other_stencils_and_f32_equal_the_interpreter() {
    let tmp = tempdir();
    let f32_prog = write(tmp.path(), "j.tc", JACOBI_2D_F32);
    let fdtd = root().join("examples/polybench/fdtd_2d.tc");
    let fdtd = fdtd.display().to_string();
    let cases = [
        (f32_prog.as_str(), "N=389,M=437,T=9", 2),
        (fdtd.as_str(), "NX=203,NY=317,T=11", 4),
    ];
    for (prog, params, statements) in cases {
        for threads in ["1", "2"] {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_polyc"))
                .args(["run", prog, "--param", params, "--check"])
                .env("OMP_NUM_THREADS", threads)
                .output()
                .unwrap();
            assert_code(&out, 0);
            let err = stderr(&out);
            let notes = wavefront_notes(&err);
            assert_eq!(notes.len(), 2, "{prog}: {err}");
            let listed = notes[1].matches("S_").count();
            assert_eq!(listed, statements + 1, "{prog}: {err}");
            let checked = stdout(&out);
            let lines: Vec<&str> = checked.lines().collect();
            assert!(
                lines.len() >= 2,
                "{prog}: nothing was checked: {checked}{err}"
            );
            assert!(
                lines.iter().all(|l| l.ends_with(" ok")),
                "{prog}: {checked}"
            );
        }
    }
}

/// Bands with a coincident member keep their tiles and loops: a matrix product has no
/// wavefront stage change (its tree after `wavefront` is its tree after `fused`).
#[test]
fn bands_with_parallel_members_are_left_alone() {
    let prog = root().join("examples/matmul.tc");
    let prog = prog.display().to_string();
    let fused = polyc_ok(&[
        "dump",
        &prog,
        "--param",
        "M=512,N=512,K=512",
        "--stage",
        "fused",
    ]);
    let wave = polyc_ok(&[
        "dump",
        &prog,
        "--param",
        "M=512,N=512,K=512",
        "--stage",
        "wavefront",
    ]);
    assert_eq!(fused, wave);
}

/// With symbolic sizes the stage leaves the tree alone (isl's AST generation of the
/// wavefront loops over parametric bounds ran for minutes on jacobi-1d): jacobi-1d's
/// tiled band, sequential in both members, keeps its tiles, and compiles at once.
#[test]
fn symbolic_sizes_keep_their_sequential_tiles() {
    let prog = root().join("examples/polybench/jacobi_1d.tc");
    let prog = prog.display().to_string();
    let fused = polyc(&["dump", &prog, "--stage", "fused"]);
    assert_code(&fused, 0);
    let tree = stdout(&fused);
    assert!(tree.contains("Mark \"mem:L1\""), "{tree}");
    let wave = polyc(&["dump", &prog, "--stage", "wavefront"]);
    assert_code(&wave, 0);
    assert_eq!(stdout(&wave), tree);
    assert!(wavefront_notes(&stderr(&wave)).is_empty());
}
