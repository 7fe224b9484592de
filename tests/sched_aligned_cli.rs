//! The schedule without search through the `polyc` binary: it gives the C of isl's own
//! schedule, the kernels match the interpreter, and the options that ask isl for another
//! tree (`aligned=0`, `serialize_sccs=1`, `algorithm=feautrier`) bypass it.

mod common;
use common::*;

/// A chain of `n` element-wise statements over `dtype` tensors, with a fan-in every third
/// statement.
fn chain(n: usize, dtype: &str) -> String {
    let mut s = format!("def chain({dtype}(N, M) T0) -> ({dtype}(N, M) T{n}) {{\n");
    for k in 1..=n {
        let extra = if k % 3 == 0 && k >= 2 {
            format!(" - T{}(i, j)", k - 2)
        } else {
            String::new()
        };
        s.push_str(&format!(
            "  T{k}(i, j) = T{}(i, j) * 1.01 + 0.5{extra}\n",
            k - 1
        ));
    }
    s + "}\n"
}

/// The C and the `--timings` report of `file` at `params`, with `options` as isl options.
fn compile(file: &str, params: &str, target: &str, options: &[&str]) -> (String, String) {
    let dir = tempdir();
    let out = dir.path().join("k.out");
    let mut args = vec![
        "compile",
        file,
        "--param",
        params,
        "--target",
        target,
        "--timings",
        "-o",
    ];
    let out_s = out.to_str().unwrap().to_string();
    args.push(&out_s);
    for o in options {
        args.push("--isl-option");
        args.push(o);
    }
    let o = polyc(&args);
    assert_code(&o, 0);
    (std::fs::read_to_string(&out).unwrap(), stderr(&o))
}

fn has_step(timings: &str, step: &str) -> bool {
    timings
        .lines()
        .any(|l| l.split_whitespace().nth(1) == Some(step))
}

#[test]
fn aligned_schedule_gives_isl_s_code() {
    let dir = tempdir();
    for (n, dtype, params) in [(12, "f32", "N=1024,M=1024"), (7, "f64", "N=67,M=45")] {
        let file = write(dir.path(), &format!("chain{n}.tc"), &chain(n, dtype));
        for target in ["cpu", "gpu"] {
            let (fast, t_fast) = compile(&file, params, target, &[]);
            let (isl, t_isl) = compile(&file, params, target, &["aligned=0"]);
            assert_eq!(fast, isl, "chain of {n} ({dtype}) on {target}");
            assert!(has_step(&t_fast, "schedule:aligned"), "{t_fast}");
            assert!(!has_step(&t_fast, "schedule:isl"), "{t_fast}");
            assert!(has_step(&t_isl, "schedule:isl"), "{t_isl}");
        }
    }
}

#[test]
fn options_that_ask_isl_for_another_tree_bypass_it() {
    let dir = tempdir();
    let file = write(dir.path(), "chain.tc", &chain(6, "f32"));
    for option in ["serialize_sccs=1", "algorithm=feautrier", "aligned=0"] {
        let (_, t) = compile(&file, "N=40,M=50", "cpu", &[option]);
        assert!(!has_step(&t, "schedule:aligned"), "{option}:\n{t}");
        assert!(has_step(&t, "schedule:isl"), "{option}:\n{t}");
    }
}

#[test]
fn aligned_kernels_match_the_interpreter() {
    let dir = tempdir();
    for (dtype, params) in [("f32", "N=37,M=53"), ("f64", "N=67,M=45")] {
        let file = write(dir.path(), &format!("c_{dtype}.tc"), &chain(9, dtype));
        let err = run_checked(&["run", &file, "--param", params, "--check"]);
        assert!(err.contains("oracle"), "{err}");
    }
}
