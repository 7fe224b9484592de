//! Partially bound sizes: `--param` binds some sizes of a program and leaves the others
//! symbolic. isl's scheduler first tries the symbolic sizes at a large value; that point
//! must not empty a statement that runs for other sizes (a kernel larger than a bound
//! image), and a run of isl's scheduler stops at its operation budget with an error
//! instead of running for hours.

mod common;
use common::*;

const CONV: &str = "examples/conv_chain_temp.tc";

/// The kernel sizes symbolic, the image 64 x 64: `KH = KW = 1024` would leave the
/// convolution without instances, so the scheduler schedules for every size at once.
/// This used to fail with "the schedule leaves instances of S_1, S_2, S_3, S_4
/// unscheduled".
#[test]
fn symbolic_kernel_in_a_bound_image() {
    let out = polyc_ok(&["explain", CONV, "--param", "H=64,W=64"]);
    for line in [
        "S_0: tiled band #0",
        "S_4: tiled band #1",
        "band #1 (S_1, S_2, S_3, S_4; spec of S_4): Band {S_1 -> (h, w, 0); \
         S_2 -> (h, w, kh); S_3 -> (h, w, 63); S_4 -> (h, w, 63)} permutable \
         coincident=[1,1,0]",
    ] {
        assert!(
            out.lines().any(|l| l == line),
            "missing line `{line}` in:\n{out}"
        );
    }
    // The same program with every size bound still matches the reference interpreter.
    assert_eq!(
        polyc_ok(&["run", CONV, "--param", "H=20,W=18,KH=3,KW=5", "--check"]),
        "C: max_abs_err=0.000e0 max_rel_err=0.000e0 ok\n"
    );
}

/// When isl's scheduler uses up its budget, polyc stops with an error naming the stage,
/// the symbolic sizes and the remedies (no silent fallback to another scheduler).
#[test]
fn scheduler_budget_is_an_error() {
    let err = polyc_err(&[
        "explain",
        CONV,
        "--param",
        "H=64,W=64",
        "--isl-option",
        "max_operations=1000",
    ]);
    assert_eq!(err, concat!(
        "  × schedule: isl's scheduler stopped after 1000 operations, its budget: the scheduling problem is\n",
        "  │ too hard for isl here\n",
        "  help: bind more sizes with --param (symbolic here: KH, KW), choose another scheduler\n",
        "        (`--scheduler ilp` or `--scheduler initial`), or raise the budget with `--isl-option\n",
        "        max_operations=N`\n"
    ));
    // Without symbolic sizes the help does not suggest binding any.
    let err = polyc_err(&[
        "compile",
        CONV,
        "--param",
        "H=64,W=64,KH=3,KW=3",
        "--isl-option",
        "max_operations=1000",
    ]);
    assert_eq!(err, concat!(
        "  × schedule: isl's scheduler stopped after 1000 operations, its budget: the scheduling problem is\n",
        "  │ too hard for isl here\n",
        "  help: choose another scheduler (`--scheduler ilp` or `--scheduler initial`), or raise the budget\n",
        "        with `--isl-option max_operations=N`\n"
    ));
    let err = polyc_err(&[CONV, "--isl-option", "max_operations=0"]);
    assert_eq!(
        err,
        concat!(
            "  × invalid value `0` for isl scheduler option `max_operations`\n",
            "  help: `max_operations` accepts a positive integer\n"
        )
    );
}
