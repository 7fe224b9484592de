//! Compile-time budgets: isl's scheduler stops at its time budget (`--isl-option
//! time_budget_ms`, `--compile-budget`) and polyc schedules again, more cheaply, with a
//! note, and the result still matches the reference interpreter.

mod common;
use common::*;

/// `n` chained matrix-vector products: isl's scheduler needs more than 200 000
/// operations for them (without a bound on constant terms).
fn reductions(n: usize) -> String {
    let mut s = format!("def reductions(f32(N, N) A, f32(N) V0) -> (f32(N) V{n}) {{\n");
    for k in 1..=n {
        s.push_str(&format!("  V{k}(i) +=! A(i, j) * V{}(j)\n", k - 1));
    }
    s + "}\n"
}

/// The note for a components-apart schedule taken over the bounded one.
const MORE_PARALLEL: &str = "polyc: note: isl's scheduler ran past its time budget (1000 ms); \
     polyc scheduled each strongly connected component apart instead (isl with \
     serialize_sccs=1: no fusion by the scheduler); with constant terms of at most 20 instead, \
     less of the program ran under parallel loops; raise the budget with `--isl-option \
     time_budget_ms=N` or `--compile-budget`";

#[test]
fn isl_past_its_time_budget_schedules_again() {
    let dir = tempdir();
    let prog = write(dir.path(), "reductions.tc", &reductions(40));
    let o = polyc(&[
        "run",
        &prog,
        "--param",
        "N=12",
        "--isl-option",
        "time_budget_ms=1",
        "--check",
    ]);
    assert_code(&o, 0);
    let err = stderr(&o);
    assert!(
        err.lines().any(|l| l
            == "polyc: note: isl's scheduler ran past its time budget (1 ms); polyc scheduled \
                each strongly connected component apart instead (isl with serialize_sccs=1: no \
                fusion by the scheduler); raise the budget with `--isl-option time_budget_ms=N` \
                or `--compile-budget`"),
        "{err}"
    );
    assert_eq!(
        stdout(&o),
        "V40: max_abs_err=0.000e0 max_rel_err=0.000e0 ok\n"
    );
}

/// At N = 1024 the first run takes about 2.9 s, past the default budget (1 s). The run with
/// bounded constant terms takes about 0.1 s, but it fuses consecutive products along
/// sequential loops (`S_2 -> (i); S_3 -> (i); S_5 -> (j)`, not coincident); the components
/// scheduled apart are each parallel, so polyc takes those and says why (one thread:
/// 11.7 ms against 95 ms with the bounded schedule, `--isl-option max_constant_term=20`).
#[test]
fn isl_past_its_time_budget_keeps_the_more_parallel_retry() {
    let dir = tempdir();
    let prog = write(dir.path(), "reductions.tc", &reductions(40));
    let out = dir.path().join("r.c");
    let o = polyc(&[
        "compile",
        &prog,
        "--param",
        "N=1024",
        // At the real sizes: scaled down (N = 32), isl schedules them within the budget.
        "--isl-option",
        "scale_sizes=0",
        "-o",
        out.to_str().expect("a path"),
    ]);
    assert_code(&o, 0);
    let err = stderr(&o);
    assert!(err.lines().any(|l| l == MORE_PARALLEL), "{err}");
}

#[test]
fn the_more_parallel_retry_wins() {
    let prog = abs("examples/polybench/deriche.tc");
    let o = polyc(&[
        "dump",
        &prog,
        "--param",
        "W=37,H=29",
        "--stage",
        "scheduled",
        // The whole-program run and its retries (by default, deriche's 125 pieces of
        // dependences send it to its loops apart; see tests/loops_apart.rs).
        "--isl-option",
        "loops_apart=0",
    ]);
    assert_code(&o, 0);
    let err = stderr(&o);
    assert!(err.lines().any(|l| l == MORE_PARALLEL), "{err}");
    let tree = stdout(&o);
    for band in [
        "Band {S_9 -> (i, j)} permutable coincident=[1,0]",
        "Band {S_16 -> (i, j)} permutable coincident=[0,1]",
        "Band {S_20 -> (i, j)} permutable coincident=[1,1]",
    ] {
        assert!(tree.contains(band), "{band}: {tree}");
    }
    for threads in ["1", "2"] {
        checked_on(&prog, "W=37,H=29", threads);
    }
}

#[test]
fn compile_budget_gives_the_scheduler_its_share() {
    let o = polyc(&[
        "compile",
        "examples/matmul.tc",
        "--param",
        "M=8,K=8,N=8",
        "--compile-budget",
        "2",
    ]);
    assert_code(&o, 0);
    assert_eq!(
        stderr(&o),
        "polyc: note: --compile-budget 2 s: isl's scheduler gets 800 ms (past it, polyc \
         schedules again with constant terms of at most 20 and each strongly connected \
         component apart, keeping the one that runs more under parallel loops, then in \
         program order)\n"
    );
}

#[test]
fn compile_budget_must_be_a_positive_number() {
    for bad in ["0", "-1", "abc", "inf"] {
        let err = polyc_err(&["compile", "examples/matmul.tc", "--compile-budget", bad]);
        assert_eq!(
            err,
            format!(
                "  × --compile-budget: `{bad}` is not a positive number of seconds\n  help: give \
                 a positive number of seconds, e.g. `--compile-budget 2` or `--compile-budget \
                 0.5`\n"
            )
        );
    }
}
