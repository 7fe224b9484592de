//! The `parallel` stage's work rule: a loop nested in sequential loops stays sequential
//! when one run of it has too few statement instances for a parallel region per run to
//! pay (durbin's per-step copies), and becomes parallel once it has enough. `--repeat`
//! runs a kernel several times on fresh inputs and reports the best time.

mod common;
use common::*;

const DURBIN: &str = "examples/polybench/durbin.tc";

/// The number of OpenMP parallel loops in the C of `prog` at `params`.
fn parallel_loops(prog: &str, params: &str) -> usize {
    let c = polyc_ok(&["compile", prog, "--param", params, "-o", "-"]);
    c.matches("#pragma omp parallel for").count()
}

/// durbin's loops run inside its sequential `k` loop: at N = 2000 each run of the copy
/// `y(i) = z(i)` has at most 1999 instances (one parallel region per step cost 250 ms to
/// 2 s on two threads of a busy 2-core machine, against 1.7 ms on one), so nothing is
/// parallel; at N = 100 000 the copy of the last steps has over 2^15 instances, and it is.
#[test]
fn nested_loops_with_little_work_stay_sequential() {
    assert_eq!(parallel_loops(DURBIN, "N=2000"), 0);
    assert_eq!(parallel_loops(DURBIN, "N=100000"), 1);
    // A top-level parallel loop is entered once per call: it stays parallel with little
    // work (matmul at 37 × 41 × 13: 21 238 instances, under 2^15; its two nests).
    assert_eq!(parallel_loops("examples/matmul.tc", "M=37,N=41,K=13"), 2);
}

/// The sequential durbin matches the interpreter, on two threads too.
#[test]
fn sequential_durbin_matches_the_interpreter() {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_polyc"))
        .args(["run", DURBIN, "--param", "N=301", "--check"])
        .env("OMP_NUM_THREADS", "2")
        .current_dir(root())
        .output()
        .expect("polyc starts");
    assert_code(&o, 0);
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        lines[0].starts_with("y: ") && lines[0].ends_with(" ok"),
        "{out}"
    );
    assert!(
        lines[1].starts_with("z: ") && lines[1].ends_with(" ok"),
        "{out}"
    );
}

/// `--repeat 4` runs the kernel four times on fresh copies of its inputs: an in-place
/// update (gemm's `C`) still matches the interpreter, and the time line names the runs.
#[test]
fn repeat_reports_the_best_of_several_runs() {
    let err = run_checked(&[
        "run",
        "examples/polybench/gemm.tc",
        "--param",
        "NI=23,NJ=29,NK=31",
        "--repeat",
        "4",
        "--check",
    ]);
    let line = err
        .lines()
        .find(|l| l.contains("kernel ran in"))
        .expect("a time line");
    assert!(line.contains(" ms (best of 4; median "), "{line}");
    let err = polyc_err(&["run", "examples/matmul.tc", "--repeat", "0"]);
    assert!(
        err.contains("invalid value '0' for '--repeat <N>': 0 is not in 1..=4294967295"),
        "{err}"
    );
}
