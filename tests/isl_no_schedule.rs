//! Where isl's scheduler finds no schedule for a valid program. Loops of extent 2 once let
//! the dependence analysis coalesce a reduction's dependences into polyhedra whose rational
//! points isl cannot carry ("unable to carry dependences"). The analysis now keeps pieces
//! apart where coalescing adds constraints, and isl schedules those programs at once, with
//! no note (polyhedral's `model_sched` tests still drive the split on dependences coalesced
//! by hand: polyc splits them by the loop that carries them in program order and isl
//! schedules them). Where isl still finds none (here an isl option that rules every
//! schedule out), polyc uses program order and says so in a note. The kernels match the
//! interpreter. polyc's ILP scheduler, which reasons on the same rational points through
//! Farkas, splits the dependences the same way where it finds no legal hyperplane.

mod common;
use common::*;

const PROGRAM_ORDER: &str = "polyc: note: isl's scheduler found no schedule (unable to carry dependences); polyc uses the program-order schedule instead, as `--scheduler initial` does\n";

/// `run … --check` on `prog` at `params` with `extra` arguments: the notes before the
/// compile line of standard error, checked against the interpreter.
fn notes(prog: &str, params: &str, extra: &[&str]) -> String {
    let mut args = vec!["run", prog, "--param", params, "--check"];
    args.extend_from_slice(extra);
    let err = run_checked(&args);
    err.lines()
        .filter(|l| l.starts_with("polyc: note: isl's scheduler"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// A 2 × 2 window at stride 2 (one output pixel per channel at the shape, and a
/// layer-sized one): isl could not carry the `ci, kh, kw` reduction's dependences as
/// coalesced whole; kept apart, isl schedules them.
#[test]
fn convolution_with_a_two_by_two_window_is_scheduled_by_isl() {
    for params in [
        "CI=2,CO=2,H=2,W=2,KH=2,KW=2",
        "CI=16,CO=16,H=34,W=34,KH=2,KW=2",
    ] {
        assert_eq!(
            notes("examples/conv2d_stride2.tc", params, &[]),
            "",
            "{params}"
        );
    }
    // A 3 × 2 window needs no split.
    assert_eq!(
        notes(
            "examples/conv2d_stride2.tc",
            "CI=2,CO=3,H=9,W=8,KH=3,KW=2",
            &[]
        ),
        ""
    );
}

/// Group norm over 2 × 2 × 2 groups: the same for its two reductions.
#[test]
fn group_norm_over_two_by_two_by_two_groups_is_scheduled_by_isl() {
    assert_eq!(
        notes("examples/tc/group_norm.tc", "N=1,G=1,D=2,H=2,W=2", &[]),
        ""
    );
}

/// With every coefficient bound to 0 isl cannot order a matmul at all: program order.
#[test]
fn no_isl_schedule_falls_back_to_program_order() {
    assert_eq!(
        notes(
            "examples/matmul.tc",
            "M=17,N=31,K=13",
            &["--isl-option", "max_coefficient=0"]
        ),
        PROGRAM_ORDER
    );
    assert_eq!(
        notes(
            "examples/jacobi1d.tc",
            "T=7,N=31",
            &["--isl-option", "max_coefficient=0"]
        ),
        PROGRAM_ORDER
    );
}

/// The ILP scheduler on the same shapes (it stopped with "internal error: the ILP
/// scheduler found no legal hyperplane for S_1").
#[test]
fn ilp_schedules_extent_two_reductions() {
    for (prog, params) in [
        ("examples/conv2d_stride2.tc", "CI=2,CO=2,H=2,W=2,KH=2,KW=2"),
        ("examples/tc/group_norm.tc", "N=1,G=1,D=2,H=2,W=2"),
    ] {
        assert_eq!(notes(prog, params, &["--scheduler", "ilp"]), "", "{prog}");
    }
}

/// A statement that overwrites one element from every instance of three indices (fuzzer
/// finding F4: "the ILP scheduler found no legal hyperplane for S_0"), alone and read by a
/// later statement, in f32 and f64, at extents of 2 and odd ones, under every scheduler.
#[test]
fn overwrites_from_three_indices_are_scheduled() {
    for (prog, params) in [
        (
            "tests/fixtures/overwrite_from_three_indices.tc",
            "N=2,M=2,K=2",
        ),
        (
            "tests/fixtures/overwrite_from_three_indices.tc",
            "N=3,M=5,K=7",
        ),
        ("tests/fixtures/overwrite_then_read.tc", "N=2,M=2,K=2,L=2"),
        ("tests/fixtures/overwrite_then_read.tc", "N=3,M=2,K=5,L=3"),
    ] {
        for scheduler in ["ilp", "isl", "initial"] {
            notes(prog, params, &["--scheduler", scheduler]);
        }
    }
}
