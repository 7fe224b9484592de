//! Shared costly subexpressions (`polyhedral::cse`): a value that several statements
//! compute, such as softmax's `exp(X(r, j) - mx(r))` written in both the sum and the
//! normalisation, is computed once into a new temporary. Every run is checked against the
//! reference interpreter, which runs the program as written.

mod common;
use common::*;

/// Softmax with the exponential written twice, in type `t`.
fn softmax_inside(t: &str) -> String {
    format!(
        "def softmax({t}(R, N) X) -> ({t}(R, N) Y) {{\n  mx(r) max=! X(r, j)\n  s(r) +=! exp(X(r, j) - mx(r))\n  Y(r, j) = exp(X(r, j) - mx(r)) / s(r)\n}}\n"
    )
}

/// The one line of the emitted C that stores into `Y`.
fn y_store(c: &str) -> Vec<&str> {
    c.lines()
        .filter(|l| l.trim_start().starts_with("Y["))
        .collect()
}

#[test]
fn softmax_with_the_exponential_written_twice_computes_it_once() {
    let dir = tempdir();
    let f32_prog = write(dir.path(), "inside32.tc", &softmax_inside("f32"));
    let f64_prog = write(dir.path(), "inside64.tc", &softmax_inside("f64"));
    let note = "polyc: note: `exp(X(r, j) - mx(r))` is computed once, into the new temporary polyc_shared0 (new statement S_2, read by S_4 and S_5; later statements renumbered; --no-share computes it in each)";
    for (prog, params) in [
        (&f32_prog, "R=37,N=45"),
        (&f32_prog, "R=5,N=300"),
        (&f64_prog, "R=19,N=130"),
    ] {
        for scheduler in ["isl", "initial"] {
            let err = run_checked(&[
                "run",
                prog,
                "--param",
                params,
                "--scheduler",
                scheduler,
                "--check",
            ]);
            assert!(err.contains(note), "{err}");
        }
    }
    let err = run_checked(&[
        "run",
        &f32_prog,
        "--param",
        "R=37,N=45",
        "--target",
        "gpu",
        "--check",
    ]);
    assert!(err.contains(note), "{err}");
    // The normalisation reads the temporary; with --no-share it calls exp again.
    let exp = "exp";
    for prog in [&f32_prog, &f64_prog] {
        let shared = polyc_ok(&[prog, "--param", "R=2048,N=2048"]);
        let stores = y_store(&shared);
        assert!(!stores.is_empty(), "{shared}");
        assert!(stores.iter().all(|l| !l.contains(exp)), "{shared}");
        let each = polyc_ok(&[prog, "--param", "R=2048,N=2048", "--no-share"]);
        let stores = y_store(&each);
        assert!(
            !stores.is_empty() && stores.iter().all(|l| l.contains(exp)),
            "{stores:?}\n{each}"
        );
    }
    let o = polyc(&[&f32_prog, "--param", "R=8,N=8", "--no-share"]);
    assert_code(&o, 0);
    assert!(!stderr(&o).contains("computed once"), "{}", stderr(&o));
}

#[test]
fn a_subexpression_is_shared_across_iterator_names_and_three_users() {
    let dir = tempdir();
    let prog = write(
        dir.path(),
        "three.tc",
        "def f(f64(N, M) X, f64(N) b) -> (f64(N) s, f64(N, M) Y, f64(M, N) Z) {\n  s(i) +=! tanh(X(i, k) * 0.5 + b(i))\n  Y(p, q) = tanh(X(p, q) * 0.5 + b(p)) * 2.0\n  Z(c, a) = 1.0 - tanh(X(a, c) * 0.5 + b(a))\n}\n",
    );
    for params in ["N=13,M=29", "N=40,M=3"] {
        let err = run_checked(&["run", &prog, "--param", params, "--check"]);
        assert!(
            err.contains("polyc: note: `tanh(X(i, k) * 0.5 + b(i))` is computed once, into the new temporary polyc_shared0 (new statement S_0, read by S_2 and S_3 and S_4; later statements renumbered; --no-share computes it in each)"),
            "{err}"
        );
    }
}

/// Cases where the value is not the same in every statement, or the statements are not
/// over the same box: nothing is shared, and the results stay right.
#[test]
fn a_value_that_differs_between_its_statements_is_not_shared() {
    let dir = tempdir();
    let cases = [
        // X is written between the two reads.
        "def f(f32(N, M) X) -> (f32(N) s, f32(N, M) Y) {\n  s(i) +=! exp(X(i, j))\n  X(i, j) = X(i, j) * 2.0\n  Y(i, j) = exp(X(i, j))\n}\n",
        // The first user writes what the subexpression reads.
        "def f(f32(N, M) X) -> (f32(N, M) Y, f32(N, M) Z) {\n  Y(i, j) = X(i, j) + 1.0\n  Y(i, j) += exp(Y(i, j))\n  Z(i, j) = exp(Y(i, j))\n}\n",
        // Different ranges of the iterator the subexpression uses.
        "def f(f32(N, M) X) -> (f32(N) s, f32(N) t) {\n  s(i) +=! exp(X(i, j)) where j in 0:M - 1\n  t(i) +=! exp(X(i, j)) where j in 1:M\n}\n",
        // Different types.
        "def f(f32(N, M) X) -> (f32(N) s, f64(N, M) Y) {\n  s(i) +=! exp(X(i, j))\n  Y(i, j) = exp(X(i, j))\n}\n",
        // Half precision: its calls compute in f32, which an f16 temporary would round.
        "def f(f16(N, M) X) -> (f16(N) s, f16(N, M) Y) {\n  s(i) +=! exp(X(i, j))\n  Y(i, j) = exp(X(i, j))\n}\n",
        // A triangular statement.
        "def f(f32(N, N) X) -> (f32(N) s, f32(N, N) Y) {\n  s(i) +=! exp(X(i, j)) where j in 0:i + 1\n  Y(i, j) = exp(X(i, j))\n}\n",
    ];
    for (k, text) in cases.iter().enumerate() {
        let prog = write(dir.path(), &format!("case{k}.tc"), text);
        let params = if text.contains('M') {
            "N=11,M=7"
        } else {
            "N=11"
        };
        let err = run_checked(&["run", &prog, "--param", params, "--check"]);
        assert!(!err.contains("computed once"), "case {k}:\n{err}");
    }
}
