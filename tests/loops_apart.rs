//! Loops one iteration at a time (`polyhedral::sched_loops`): each sequential `for` loop
//! keeps its index as an outer band, parallel where no dependence crosses its iterations,
//! and isl's scheduler orders the statements between loops within one iteration. Programs
//! with loops and more than 64 pieces of dependences go there directly (PolyBench's adi,
//! whose whole-program isl run never finishes); `--isl-option loops_apart=1` asks for it,
//! `0` never uses it. Every run is checked against the reference interpreter.

mod common;
use common::*;

/// A time loop around a scalar and two sweeps in different directions (rows: a
/// recurrence along `j`, parallel in `i`; columns: along `i`, parallel in `j`), in type
/// `t`.
fn two_sweeps(t: &str) -> String {
    format!(
        "def two_sweeps({t}(N, M) A) -> ({t}(N, M) B) {{
  for t in 0:T {{
    s() = cast<{t}>(0.5)
    for i in 0:N {{
      for j in 1:M {{
        A(i, j) = A(i, j) * s() + A(i, j - 1) * 0.25
      }}
    }}
    for j in 0:M {{
      for i in 1:N {{
        A(i, j) = A(i, j) + A(i - 1, j) * s()
      }}
    }}
  }}
  B(i, j) = A(i, j)
}}
"
    )
}

#[test]
fn a_time_loop_around_two_sweeps_runs_each_sweep_in_parallel() {
    let dir = tempdir();
    let prog = write(dir.path(), "two.tc", &two_sweeps("f64"));
    let tree = polyc_ok(&[
        "dump",
        &prog,
        "--param",
        "N=37,M=45,T=3",
        "--isl-option",
        "loops_apart=1",
        "--stage",
        "scheduled",
    ]);
    insta::assert_snapshot!("two_sweeps_scheduled", tree);
    // isl on the whole program instead: one band over the time loop and both sweeps.
    let whole = polyc_ok(&[
        "dump",
        &prog,
        "--param",
        "N=37,M=45,T=3",
        "--isl-option",
        "loops_apart=0",
        "--stage",
        "scheduled",
    ]);
    assert!(
        whole.contains("Band {S_0 -> (t); S_1 -> (t); S_2 -> (t); S_3 -> (2 + i)}"),
        "{whole}"
    );
}

#[test]
fn loops_apart_computes_what_the_program_says() {
    let dir = tempdir();
    for t in ["f32", "f64"] {
        let prog = write(dir.path(), &format!("two_{t}.tc"), &two_sweeps(t));
        for params in ["N=37,M=45,T=3", "N=5,M=130,T=2", "N=1,M=7,T=4"] {
            for target in ["cpu", "gpu"] {
                run_checked(&[
                    "run",
                    &prog,
                    "--param",
                    params,
                    "--isl-option",
                    "loops_apart=1",
                    "--target",
                    target,
                    "--check",
                ]);
            }
        }
    }
}

/// The note adi gets, at any size: its dependences have 140 pieces.
const ADI_NOTE: &str = "polyc: note: the dependences of this program with `for` loops have \
    140 pieces (more than 64): polyc schedules each loop one iteration at a time (its index \
    outermost, isl's scheduler on the statements between loops, within one iteration; no \
    schedule across iterations); `--isl-option loops_apart=0` runs isl's scheduler on the \
    whole program first";

#[test]
fn adi_goes_to_its_loops_apart_and_runs_its_sweeps_in_parallel() {
    let prog = abs("examples/polybench/adi.tc");
    for target in ["cpu", "gpu"] {
        let err = run_checked(&[
            "run", &prog, "--param", "N=37,T=5", "--target", target, "--check",
        ]);
        assert!(err.lines().any(|l| l == ADI_NOTE), "{err}");
    }
    for threads in ["1", "2"] {
        checked_on(&prog, "N=29,T=3", threads);
    }
    // The time loop runs in order; each of its two sweeps in parallel over `i`, its
    // forward pass and back substitution in one iteration as written; and the copy.
    let (err, c) = compiled_c(&prog, "N=1000,T=500", &[]);
    assert!(err.lines().any(|l| l == ADI_NOTE), "{err}");
    assert_eq!(c.matches("#pragma omp parallel for").count(), 3, "{c}");
    assert!(
        c.contains("for (int64_t c0 = 1; c0 <= 500; c0 += 1) {"),
        "{c}"
    );
}

#[test]
fn loops_apart_takes_zero_or_one() {
    let err = polyc_err(&[
        "compile",
        "examples/matmul.tc",
        "--isl-option",
        "loops_apart=2",
    ]);
    assert_eq!(
        err,
        "  × invalid value `2` for isl scheduler option `loops_apart`\n  help: \
         `loops_apart` accepts 0, 1, true or false\n"
    );
}
