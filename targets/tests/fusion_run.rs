//! Fused schedules run: schedule tree (distributed program order) → tiling → post-tiling
//! fusion → lower → C → cc → run, compared with the reference interpreter on every output
//! and every input updated in place. Sizes that do not divide the tiles.

mod example_run;

use example_run::{load_example, run_and_compare, CPU};
use polyhedral::deps::Deps;
use polyhedral::diag::SourceFile;
use polyhedral::isl::Ctx;
use polyhedral::sched::initial_schedule;
use polyhedral::scop::Scop;
use schedule_tree::ScheduleTree;
use tiling::{fuse, parse_tile_spec, tile, FuseOptions, FuseReport, TileCx};

/// Tiles `example` (initial schedule) with `spec`, fuses with `max_recompute`, runs it and
/// compares. Returns the fused tree text and the report.
fn run_fused(
    example: &str,
    params: &[(&str, i64)],
    spec: &str,
    max_recompute: f64,
) -> (String, FuseReport) {
    run_fused_with(
        example,
        params,
        spec,
        &FuseOptions {
            max_recompute,
            ..FuseOptions::default()
        },
        false,
    )
}

/// As [`run_fused`], with all options, optionally through the `parallel` pass (OpenMP).
fn run_fused_with(
    example: &str,
    params: &[(&str, i64)],
    spec: &str,
    opts: &FuseOptions,
    parallel: bool,
) -> (String, FuseReport) {
    let ex = load_example(example, params);
    let (src, prog, values) = (&ex.src, &ex.prog, &ex.values);
    let ctx = Ctx::new();
    let scop = Scop::build(&ctx, prog, values, src).expect("model");
    let deps = Deps::compute(&scop).expect("deps");
    let sched = initial_schedule(&scop, &deps).expect("schedule");
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
    let (tiled, _) = tile(tree, &cx, &ts, &file).expect("tiles");
    let (fused, report) = fuse(tiled, &cx, opts).expect("fuses");
    let text = fused.to_tree_text();
    let mut schedule = fused.to_isl(&ctx).expect("isl schedule");
    if parallel {
        schedule = targets::mark_outer_parallel(schedule, &CPU).expect("parallel marks");
    }
    run_and_compare(
        &ctx,
        &ex,
        &scop.param_texts,
        &schedule,
        &format!("{text}\n{}", report.explain()),
    );
    (text, report)
}

fn fused_names(r: &FuseReport) -> Vec<&str> {
    r.fused.iter().map(|f| f.stmt.as_str()).collect()
}

fn fallback_names(r: &FuseReport) -> Vec<&str> {
    r.fallbacks.iter().map(|f| f.stmt.as_str()).collect()
}

const CONV: [(&str, i64); 4] = [("H", 37), ("W", 29), ("KH", 3), ("KW", 3)];
const MM2: [(&str, i64); 4] = [("NI", 19), ("NK", 13), ("NJ", 11), ("NL", 17)];
const SOFTMAX: [(&str, i64); 2] = [("R", 19), ("N", 23)];

#[test]
fn conv_chain_fused_8x8() {
    let (t, r) = run_fused("conv_chain.tc", &CONV, "S_4: 8@L1, 8@L1\n", 0.25);
    assert!(r.applied);
    assert_eq!(fused_names(&r), ["S_1", "S_2", "S_3"]);
    assert_eq!(fallback_names(&r), ["S_0"]);
    assert_eq!(t.matches("Mark \"skipped\"").count(), 3, "{t}");
    assert_eq!(t.matches("Extension").count(), 1, "{t}");
}

#[test]
fn conv_chain_in_place_never_recomputed() {
    // Even with any recomputation allowed, the in-place bias add must not run twice.
    let (_, r) = run_fused("conv_chain.tc", &CONV, "S_4: 8@L1, 5@L1\n", 100.0);
    assert_eq!(fallback_names(&r), ["S_0"]);
    assert!(r.fallbacks[0].reason.contains("apply the update twice"));
}

#[test]
fn conv_chain_two_levels() {
    let (t, r) = run_fused(
        "conv_chain.tc",
        &CONV,
        "S_4: 16@L2 8@L1, 16@L2 5@L1\n",
        0.25,
    );
    assert!(r.applied);
    assert_eq!(fused_names(&r), ["S_1", "S_2", "S_3"]);
    assert_eq!(t.matches("Extension").count(), 1, "{t}");
}

#[test]
fn mm2_rows_fused_without_recomputation() {
    let (_, r) = run_fused("mm2.tc", &MM2, "S_3: 8@L1\n", 0.25);
    assert_eq!(fused_names(&r), ["S_0", "S_1", "S_2"]);
    assert!(r.fallbacks.is_empty(), "{r:?}");
    assert_eq!(r.buffers.len(), 1);
    assert_eq!(r.buffers[0].tensor, "T");
}

#[test]
fn mm2_2d_tiles_fall_back_over_threshold() {
    let (_, r) = run_fused("mm2.tc", &MM2, "S_3: 8@L1, 8@L1\n", 0.25);
    assert_eq!(fused_names(&r), ["S_2"]);
    assert_eq!(fallback_names(&r), ["S_0", "S_1"]);
}

#[test]
fn mm2_2d_tiles_recomputed() {
    // T is a tile-local temporary: its producers may be recomputed on every column tile.
    let (_, r) = run_fused("mm2.tc", &MM2, "S_3: 8@L1, 8@L1\n", 10.0);
    assert_eq!(fused_names(&r), ["S_0", "S_1", "S_2"]);
    // NL = 17 → 3 column tiles: T is computed 3 times.
    assert_eq!(r.fused[0].executed, Some(3 * 19 * 11));
    assert_eq!(r.fused[0].instances, Some(19 * 11));
}

#[test]
fn softmax_rows_fused() {
    let (_, r) = run_fused("softmax.tc", &SOFTMAX, "S_5: 4@L1\n", 0.25);
    assert_eq!(fused_names(&r), ["S_0", "S_1", "S_2", "S_3", "S_4"]);
    assert!(r.fallbacks.is_empty(), "{r:?}");
}

#[test]
fn softmax_2d_tiles_recomputed() {
    let (_, r) = run_fused("softmax.tc", &SOFTMAX, "S_5: 4@L1, 8@L1\n", 10.0);
    assert_eq!(fused_names(&r), ["S_0", "S_1", "S_2", "S_3", "S_4"]);
}

#[test]
fn attention_rows_fused() {
    let (_, r) = run_fused(
        "attention.tc",
        &[("L", 13), ("D", 7)],
        "S_9: 4@L1, 3@L1\n",
        0.25,
    );
    assert!(r.applied, "{}", r.explain());
}

#[test]
fn conv_chain_one_nest_first_tile() {
    let opts = FuseOptions {
        first_tile_overlaps: true,
        ..FuseOptions::default()
    };
    for spec in ["S_4: 8@L1, 8@L1\n", "S_4: 16@L2 8@L1, 16@L2 5@L1\n"] {
        let (t, r) = run_fused_with("conv_chain.tc", &CONV, spec, &opts, false);
        assert_eq!(fused_names(&r), ["S_0", "S_1", "S_2", "S_3"], "{t}");
        assert_eq!(t.matches("Mark \"skipped\"").count(), 4, "{t}");
    }
}

#[test]
fn fused_trees_through_the_parallel_pass() {
    // Independent tiles keep a parallel tile loop; recomputing or first-tile tiles do not.
    let (_, r) = run_fused_with(
        "conv_chain.tc",
        &CONV,
        "S_4: 8@L1, 8@L1\n",
        &FuseOptions::default(),
        true,
    );
    assert!(r.applied);
    let opts = FuseOptions {
        first_tile_overlaps: true,
        ..FuseOptions::default()
    };
    run_fused_with("conv_chain.tc", &CONV, "S_4: 8@L1, 8@L1\n", &opts, true);
    let opts = FuseOptions {
        max_recompute: 10.0,
        ..FuseOptions::default()
    };
    run_fused_with("mm2.tc", &MM2, "S_3: 8@L1, 8@L1\n", &opts, true);
    run_fused_with("softmax.tc", &SOFTMAX, "S_5: 4@L1, 8@L1\n", &opts, true);
}

#[test]
fn attention_row_tiles_all_fused() {
    let (_, r) = run_fused("attention.tc", &[("L", 13), ("D", 7)], "S_9: 4@L1\n", 0.25);
    assert_eq!(
        fused_names(&r),
        ["S_0", "S_1", "S_2", "S_3", "S_4", "S_5", "S_6", "S_7", "S_8"]
    );
}
