//! Tiled schedules run: schedule tree → tiling → lower → C → cc → run, compared with the
//! reference interpreter. Sizes that do not divide the extents, sizes above the extents and
//! multi-level specs.

mod example_run;

use example_run::{load_example, run_and_compare, CPU};
use polyhedral::deps::Deps;
use polyhedral::diag::SourceFile;
use polyhedral::isl::Ctx;
use polyhedral::sched::{initial_schedule, isl_schedule, IslSchedOptions};
use polyhedral::scop::Scop;
use schedule_tree::ScheduleTree;
use tiling::{parse_tile_spec, tile, TileCx};

/// Tiles `example` with `spec`, runs it, and compares every output (and in-place input)
/// with the interpreter. Returns the tiled tree text.
fn run_tiled(example: &str, params: &[(&str, i64)], isl: bool, spec: &str) -> String {
    let ex = load_example(example, params);
    let (src, prog, values) = (&ex.src, &ex.prog, &ex.values);
    let ctx = Ctx::new();
    let scop = Scop::build(&ctx, prog, values, src).expect("model");
    let deps = Deps::compute(&scop).expect("deps");
    let sched = if isl {
        isl_schedule(&ctx, &scop, &deps, &IslSchedOptions::default()).expect("schedule")
    } else {
        initial_schedule(&scop, &deps).expect("schedule")
    };
    let tree = ScheduleTree::from_isl(&sched).expect("tree");
    let file = SourceFile::new("tiles.txt", spec);
    let ts = parse_tile_spec(&file, &CPU.map(|l| l.buffer)).expect("spec");
    let cx = TileCx {
        ctx: &ctx,
        program: prog,
        scop: &scop,
        deps: &deps,
        levels: &CPU,
    };
    let (tiled, _report) = tile(tree, &cx, &ts, &file).expect("tiles");
    let text = tiled.to_tree_text();
    assert!(text.contains("Mark \"mem:"), "no memory mark in\n{text}");
    let schedule = tiled.to_isl(&ctx).expect("isl schedule");
    run_and_compare(&ctx, &ex, &scop.param_texts, &schedule, &text);
    text
}

const MM_ODD: [(&str, i64); 3] = [("M", 37), ("N", 29), ("K", 23)];
const CONV: [(&str, i64); 4] = [("H", 37), ("W", 29), ("KH", 3), ("KW", 3)];

#[test]
fn matmul_tile_8_does_not_divide() {
    run_tiled("matmul.tc", &MM_ODD, true, "S_1: 8@L1, 8@L1, 8@L1\n");
}

#[test]
fn matmul_tile_above_extent() {
    run_tiled("matmul.tc", &MM_ODD, true, "S_1: 100@L1, 8@L1, 100@L1\n");
}

#[test]
fn matmul_two_levels() {
    run_tiled(
        "matmul.tc",
        &MM_ODD,
        true,
        "S_1: 16@L2 8@L1, 16@L2 3@L1, 7@L1\n",
    );
}

#[test]
fn matmul_two_levels_mixed_dims() {
    // Dimension 1 only at L2, dimension 2 only at L1, dimension 3 at both.
    run_tiled("matmul.tc", &MM_ODD, true, "S_1: 12@L2, 5@L1, 9@L2 4@L1\n");
}

#[test]
fn matmul_initial_schedule_separate_bands() {
    run_tiled(
        "matmul.tc",
        &MM_ODD,
        false,
        "S_0: 8@L1, 5@L1\nS_1: 8@L1, 8@L1, 6@L1\n",
    );
}

#[test]
fn conv_chain_s4_32() {
    run_tiled("conv_chain.tc", &CONV, true, "S_4: 32@L1, 32@L1\n");
}

#[test]
fn conv_chain_two_levels_odd() {
    run_tiled(
        "conv_chain.tc",
        &CONV,
        true,
        "S_4: 16@L2 8@L1, 16@L2 5@L1\n",
    );
}

#[test]
fn conv_chain_initial_nested_entries() {
    // Under the initial scheduler S_2 has one band (h, w, kh, kw); its permutable prefix is
    // (h, w, kh).
    run_tiled(
        "conv_chain.tc",
        &CONV,
        false,
        "S_2: 8@L1, 8@L1, 2@L1\nS_4: 100@L1, 7@L1\n",
    );
}

#[test]
fn jacobi1d_skewed_by_isl() {
    run_tiled(
        "jacobi1d.tc",
        &[("T", 13), ("N", 41)],
        true,
        "S_0: 4@L1, 8@L1\n",
    );
}

#[test]
fn conv_chain_entries_across_nested_bands() {
    // Under the isl scheduler S_2 sits in an outer band of 3 members and an inner band
    // (kw); the fourth entry tiles the inner band.
    let t = run_tiled(
        "conv_chain.tc",
        &CONV,
        true,
        "S_2: 8@L1, 8@L1, 2@L1, 2@L1\n",
    );
    assert_eq!(t.matches("Mark \"mem:L1\"").count(), 2, "{t}");
}
