//! Sequential `for` loops in the language: their meaning (checked against hand-written
//! Rust transliterations of the C loops, not only against the interpreter), their
//! program-order tree, the GPU target, and their located errors.

mod common;
use common::*;
use std::path::Path;

const JACOBI_1D: &str = "\
def jacobi1d(f64(N) A, f64(N) B) -> (f64(N) C) {
  for t in 0:T {
    B(i) = 0.33333 * (A(i - 1) + A(i) + A(i + 1)) where i in 1:N - 1
    A(i) = 0.33333 * (B(i - 1) + B(i) + B(i + 1)) where i in 1:N - 1
  }
  C(i) = A(i)
}
";

const LU: &str = "\
def lu(f64(N, N) A) -> (f64(N, N) LU) {
  for i in 0:N {
    for j in 0:i {
      A(i, j) -= A(i, k) * A(k, j) where k in 0:j
      A(i, j) = A(i, j) / A(j, j)
    }
    for j in i:N {
      A(i, j) -= A(i, k) * A(k, j) where k in 0:i
    }
  }
  LU(i, j) = A(i, j)
}
";

fn close(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-9 * (1.0 + w.abs()),
            "{what}[{k}]: polyc {g}, C loops {w}"
        );
    }
}

/// Runs `text` with `--check` (every tensor equal to the interpreter's) and `--save-io`,
/// on `target`, and returns the folder with the inputs and outputs.
fn run_saved(dir: &Path, text: &str, params: &str, target: &str) -> std::path::PathBuf {
    let prog = write(dir, "p.tc", text);
    let io = dir.join(format!("io-{target}"));
    let io_s = io.display().to_string();
    run_checked(&[
        "run",
        &prog,
        "--param",
        params,
        "--target",
        target,
        "--check",
        "--save-io",
        &io_s,
    ]);
    io
}

/// PolyBench's jacobi-1d: two arrays updated in place over T steps, the steps written as
/// a `for` loop. The result equals the C loops' at N = 31, T = 7 (not a time-expanded
/// array: the def has only the two N-arrays), on the CPU and on the GPU target.
#[test]
fn a_time_loop_updates_in_place_as_the_c_loops_do() {
    let tmp = tempdir();
    for target in ["cpu", "gpu"] {
        let io = run_saved(tmp.path(), JACOBI_1D, "N=31,T=7", target);
        let (mut a, mut b) = (f64s(&io, "A.npy"), f64s(&io, "B.npy"));
        let n = a.len();
        for _ in 0..7 {
            for i in 1..n - 1 {
                b[i] = 0.33333 * (a[i - 1] + a[i] + a[i + 1]);
            }
            for i in 1..n - 1 {
                a[i] = 0.33333 * (b[i - 1] + b[i] + b[i + 1]);
            }
        }
        close(&f64s(&io, "C.npy"), &a, "C");
        close(&f64s(&io, "A.out.npy"), &a, "A");
        close(&f64s(&io, "B.out.npy"), &b, "B");
    }
}

/// PolyBench's lu (loops over rows and columns whose bounds use the outer index, a
/// division between two reductions that read its result) equals the C loops at N = 13.
#[test]
fn nested_loops_with_dependent_bounds_compute_lu_in_place() {
    let tmp = tempdir();
    let io = run_saved(tmp.path(), LU, "N=13", "cpu");
    let mut a = f64s(&io, "A.npy");
    let n = 13;
    for i in 0..n {
        for j in 0..i {
            for k in 0..j {
                a[i * n + j] -= a[i * n + k] * a[k * n + j];
            }
            a[i * n + j] /= a[j * n + j];
        }
        for j in i..n {
            for k in 0..i {
                a[i * n + j] -= a[i * n + k] * a[k * n + j];
            }
        }
    }
    close(&f64s(&io, "LU.npy"), &a, "LU");
}

/// Every scheduler keeps the order the loops state (checked against the interpreter),
/// seidel-2d's in-place sweep included.
#[test]
fn schedulers_keep_the_order_of_loops() {
    let tmp = tempdir();
    let seidel = write(
        tmp.path(),
        "seidel.tc",
        "def seidel(f64(N, N) A) -> (f64(N, N) B) {
  for t in 0:T {
    for i in 1:N - 1 {
      A(i, j) = (A(i - 1, j - 1) + A(i - 1, j) + A(i - 1, j + 1) + A(i, j - 1) + A(i, j) + A(i, j + 1) + A(i + 1, j - 1) + A(i + 1, j) + A(i + 1, j + 1)) / 9.0 where j in 1:N - 1
    }
  }
  B(i, j) = A(i, j)
}
",
    );
    let lu = write(tmp.path(), "lu.tc", LU);
    for sched in ["isl", "initial", "ilp"] {
        run_checked(&[
            "run",
            &seidel,
            "--param",
            "N=11,T=3",
            "--scheduler",
            sched,
            "--check",
        ]);
    }
    for sched in ["isl", "initial"] {
        run_checked(&[
            "run",
            &lu,
            "--param",
            "N=9",
            "--scheduler",
            sched,
            "--check",
        ]);
    }
}

/// The initial tree is program order: a loop is a one-member band over the loop index of
/// every statement inside, its body a sequence below it; a statement's own indices form
/// its band.
#[test]
fn the_initial_tree_nests_statements_in_their_loops() {
    let tmp = tempdir();
    let prog = write(
        tmp.path(),
        "trisolv.tc",
        "def trisolv(f64(N, N) L, f64(N) b) -> (f64(N) x) {
  for i in 0:N {
    x(i) = b(i)
    x(i) -= L(i, j) * x(j) where j in 0:i
    x(i) = x(i) / L(i, i)
  }
}
",
    );
    let tree = polyc_ok(&["dump", &prog, "--param", "N=4", "--stage", "initial"]);
    assert_eq!(
        tree,
        "\
Domain {S_0(i) : 0 <= i <= 3; S_1(i, j) : 0 <= i <= 3 and 0 <= j < i; S_2(i) : 0 <= i <= 3}
  Band {S_0 -> (i); S_1 -> (i); S_2 -> (i)} coincident=[0]
    Sequence
      Filter {S_0(i) : 0 <= i <= 3}
      Filter {S_1(i, j) : 0 <= i <= 3 and 0 <= j < i}
        Band {S_1 -> (j)} permutable coincident=[0]
      Filter {S_2(i) : 0 <= i <= 3}
"
    );
}

/// A statement's own `where` on a loop index narrows the loop for that statement only.
#[test]
fn a_where_on_a_loop_index_guards_one_statement() {
    let tmp = tempdir();
    let io = run_saved(
        tmp.path(),
        "def g(f64(N) A) -> (f64(N) C) {
  for t in 0:5 {
    A(i) = A(i) * 2.0
    A(i) = A(i) + 1.0 where t in 1:3
  }
  C(i) = A(i)
}
",
        "N=7",
        "cpu",
    );
    let mut a = f64s(&io, "A.npy");
    for t in 0..5 {
        for x in a.iter_mut() {
            *x *= 2.0;
        }
        if (1..3).contains(&t) {
            for x in a.iter_mut() {
                *x += 1.0;
            }
        }
    }
    close(&f64s(&io, "C.npy"), &a, "C");
}

fn error_of(text: &str, params: &str) -> String {
    let tmp = tempdir();
    let prog = write(tmp.path(), "p.tc", text);
    flat(&polyc_err(&["run", &prog, "--param", params]))
}

/// Statements outside loops whose meaning depends on interleaving are refused with both
/// ways to say what is meant; the same statements inside a loop, or in loops of their
/// own, are accepted.
#[test]
fn plain_statements_that_a_loop_nest_would_interleave_are_an_error() {
    let body_b = "B(i) = (A(i - 1) + A(i) + A(i + 1)) / 3.0 where i in 1:N - 1";
    let body_a = "A(i) = B(i) where i in 1:N - 1";
    let plain = format!(
        "def f(f64(N) A, f64(N) B) -> (f64(N) C) {{\n  {body_b}\n  {body_a}\n  C(i) = A(i)\n}}\n"
    );
    // Without spaces: the report wraps long lines at any space.
    let e: String = error_of(&plain, "N=10").split_whitespace().collect();
    for want in [
        "p.tc:2:11: S_0 reads `A`, which the later S_1 writes at instances that a loop nest over their shared indices would run first (e.g. S_0(i=2) reads what S_1(i=1) writes)",
        "reads `A` before S_1 writes it",
        "Say which you mean: `for i in 1:(N - 1) { …both statements… }` interleaves them; `for i in 1:(N - 1) { S_0 }` followed by `for i in 1:(N - 1) { S_1 }` runs them one after the other (or write S_1's result into another tensor)",
        "p.tc:3:3: S_1 writes `A` here",
    ] {
        let want: String = want.split_whitespace().collect();
        assert!(e.contains(&want), "missing `{want}` in:\n{e}");
    }
    let tmp = tempdir();
    for (name, params, text) in [
        (
            "apart.tc",
            "N=10",
            "def f(f64(N) A, f64(N) B) -> (f64(N) C) {\n  for i in 1:N - 1 {\n    B(i) = (A(i - 1) + A(i) + A(i + 1)) / 3.0\n  }\n  for i in 1:N - 1 {\n    A(i) = B(i)\n  }\n  C(i) = A(i)\n}\n"
                .to_string(),
        ),
        (
            "interleaved.tc",
            "N=10",
            "def f(f64(N) A, f64(N) B) -> (f64(N) C) {\n  for i in 1:N - 1 {\n    B(i) = (A(i - 1) + A(i) + A(i + 1)) / 3.0\n    A(i) = B(i)\n  }\n  C(i) = A(i)\n}\n"
                .to_string(),
        ),
        // Indices named apart share no loop: covariance's column means then centring.
        (
            "names.tc",
            "N=10,M=7",
            "def f(f64(N, M) X) -> (f64(M) m) {\n  m(j) +=! X(i, j)\n  X(i, j) -= m(j)\n}\n"
                .to_string(),
        ),
    ] {
        let p = write(tmp.path(), name, &text);
        run_checked(&["run", &p, "--param", params, "--check"]);
    }
}

#[test]
fn loop_syntax_errors_are_located() {
    let cases = [
        (
            "def f(f64(N) A) -> (f64(N) C) {\n  for i in 0:N {\n    for i in 0:3 {\n      C(j) = A(j)\n    }\n  }\n}\n",
            "p.tc:3:9: `i` is already the index of an enclosing loop",
        ),
        (
            "def f(f64(N) A) -> (f64(N) C) {\n  for t in 0:3 {\n  }\n  C(i) = A(i)\n}\n",
            "p.tc:2:3: the loop over `t` has no statements",
        ),
        (
            "def f(f64(N) A) -> (f64(N) C) {\n  for t in 0:3 {\n    C(i) = A(i)\n",
            "unterminated loop over `t`",
        ),
        (
            "def f(f64(N) A) -> (f64(N) C) {\n  for t in 0:3\n    C(i) = A(i)\n}\n",
            "a loop's body follows in braces: `for t in lo:hi { … }`",
        ),
        (
            "def f(f64(N) A) -> (f64 C) {\n  C() -=! A(i)\n}\n",
            "p.tc:2:7: `-=!` is not an assignment of the language",
        ),
        (
            "def f(f64(N) A) -> (f64(N) C) {\n  for t in 0:i {\n    C(i) = A(i)\n  }\n}\n",
            "the range of `t` uses `i`, which comes after it",
        ),
    ];
    for (text, want) in cases {
        let e = error_of(text, "N=5");
        assert!(e.contains(want), "missing `{want}` in:\n{e}");
    }
}

/// `a -= e` is `a += -(e)`.
#[test]
fn minus_assign_subtracts() {
    let tmp = tempdir();
    let io = run_saved(
        tmp.path(),
        "def f(f64(N) A, f64(N) B) -> (f64(N) C) {\n  C(i) = A(i)\n  C(i) -= B(i) * 2.0\n}\n",
        "N=9",
        "cpu",
    );
    let (a, b) = (f64s(&io, "A.npy"), f64s(&io, "B.npy"));
    let want: Vec<f64> = a.iter().zip(&b).map(|(x, y)| x - y * 2.0).collect();
    close(&f64s(&io, "C.npy"), &want, "C");
}

/// Tensor Comprehensions' timestep loops compile with the same meaning.
#[test]
fn tc_timestep_loops_run() {
    let tmp = tempdir();
    let prog = write(
        tmp.path(),
        "smooth.tc",
        "def smooth(double(N) A) -> (B) {\n  B(i) = A(i)\n  for t in 0:3 {\n    B(i) = B(i) * 0.5 + 1.0\n  }\n}\n",
    );
    let io = tmp.path().join("io");
    let io_s = io.display().to_string();
    run_checked(&[
        "run",
        &prog,
        "--param",
        "N=7",
        "--check",
        "--save-io",
        &io_s,
    ]);
    let mut b = f64s(&io, "A.npy");
    for _ in 0..3 {
        for x in b.iter_mut() {
            *x = *x * 0.5 + 1.0;
        }
    }
    close(&f64s(&io, "B.npy"), &b, "B");
}
