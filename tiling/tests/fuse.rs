//! Post-tiling fusion on real programs: golden fused trees, reports, and the exact
//! fallback reasons.

mod common;

use common::*;
use polyhedral::deps::Deps;
use polyhedral::diag::SourceFile;
use polyhedral::isl::Ctx;
use polyhedral::sched::initial_schedule;
use polyhedral::scop::Scop;
use schedule_tree::ScheduleTree;
use tiling::{fuse, tile, FuseOptions, FuseReport};

const CONV: [(&str, i64); 4] = [("H", 37), ("W", 29), ("KH", 3), ("KW", 3)];
const MM2: [(&str, i64); 4] = [("NI", 16), ("NK", 16), ("NJ", 16), ("NL", 16)];

/// Tiles the fixture's tree with `spec`, then fuses.
fn fused(fx: &Fixture, spec: &str, max_recompute: f64) -> (String, FuseReport) {
    let (f, s) = parse(spec);
    let (t, _) = tile(fx.tree.clone(), &fx.cx(), &s, &f).expect("tiles");
    let (t, r) = fuse(
        t,
        &fx.cx(),
        &FuseOptions {
            max_recompute,
            ..FuseOptions::default()
        },
    )
    .expect("fuses");
    // The fused tree is a valid isl schedule tree.
    t.to_isl(&fx.ctx).expect("converts to isl");
    (t.to_tree_text(), r)
}

fn reason<'a>(r: &'a FuseReport, stmt: &str) -> &'a str {
    &r.fallbacks
        .iter()
        .find(|f| f.stmt == stmt)
        .unwrap_or_else(|| panic!("no fallback for {stmt}: {r:?}"))
        .reason
}

#[test]
fn conv_chain_initial_8x8() {
    let fx = Fixture::new("conv_chain.tc", &CONV, false);
    let (t, r) = fused(&fx, "S_4: 8@L1, 8@L1\n", 0.25);
    insta::assert_snapshot!("conv_chain_fused_tree", t);
    insta::assert_snapshot!("conv_chain_fused_explain", r.explain());
    assert!(r.applied);
    assert_eq!(
        reason(&r, "S_0"),
        "neighbouring tiles need overlapping instances of S_0 (a 10 x 10 block of S_0 per tile), which would be recomputed; S_0 updates A in place, so running an instance twice would apply the update twice"
    );
    // The tile band stays parallel: every fused instance runs in exactly one tile.
    assert!(
        t.contains("Band {S_4 -> (floor((h)/8), floor((w)/8))} permutable coincident=[1,1]"),
        "{t}"
    );
    // C is the output: no tile-local buffer is proposed.
    assert!(r.buffers.is_empty());
}

#[test]
fn conv_chain_halo_counts() {
    // With KH = KW = 3, an 8 x 8 tile needs a 10 x 10 block of S_0: (T+KH-1) x (T+KW-1).
    let fx = Fixture::new(
        "conv_chain.tc",
        &[("H", 66), ("W", 66), ("KH", 3), ("KW", 3)],
        false,
    );
    let (_, r) = fused(&fx, "S_4: 8@L1, 16@L1\n", 100.0);
    assert!(
        reason(&r, "S_0").contains("(a 10 x 18 block of S_0 per tile)"),
        "{r:?}"
    );
    let s2 = r.fused.iter().find(|f| f.stmt == "S_2").expect("S_2 fused");
    assert_eq!(s2.tile_box, Some(vec![8, 16, 3, 3]));
    assert_eq!(s2.instances, Some(64 * 64 * 9));
    assert_eq!(s2.executed, Some(64 * 64 * 9));
    assert_eq!(s2.recompute, Some(0.0));
}

#[test]
fn mm2_row_tiles() {
    let fx = Fixture::new("mm2.tc", &MM2, false);
    let (t, r) = fused(&fx, "S_3: 8@L1\n", 0.25);
    insta::assert_snapshot!("mm2_rows_fused_tree", t);
    insta::assert_snapshot!("mm2_rows_fused_explain", r.explain());
    // T is 16 x 16 floats; one row tile writes 8 x 16 of it.
    assert_eq!(r.buffers.len(), 1);
    let b = &r.buffers[0];
    assert_eq!(
        (
            b.tensor.as_str(),
            b.global_bytes,
            b.tile_bytes,
            b.saved_bytes,
        ),
        ("T", Some(1024), Some(512), Some(512))
    );
}

#[test]
fn mm2_2d_tiles_over_threshold() {
    let fx = Fixture::new("mm2.tc", &MM2, false);
    let (t, r) = fused(&fx, "S_3: 8@L1, 8@L1\n", 0.25);
    assert_eq!(
        reason(&r, "S_1"),
        "recomputing the overlaps (a 8 x 16 x 16 block of S_1 per tile) runs 8192 instances of S_1 instead of 4096 (+100.0%), over the limit of 25.0%"
    );
    assert_eq!(
        reason(&r, "S_0"),
        "recomputing the overlaps (a 8 x 16 block of S_0 per tile) runs 512 instances of S_0 instead of 256 (+100.0%), over the limit of 25.0%"
    );
    // Only E's init is fused; S_0 and S_1 keep their subtrees.
    assert_eq!(t.matches("Mark \"skipped\"").count(), 1, "{t}");
    let names: Vec<&str> = r.fused.iter().map(|f| f.stmt.as_str()).collect();
    assert_eq!(names, ["S_2"]);
}

#[test]
fn mm2_2d_tiles_recomputed_lose_parallelism() {
    let fx = Fixture::new("mm2.tc", &MM2, false);
    let (t, r) = fused(&fx, "S_3: 8@L1, 8@L1\n", 1.0);
    let names: Vec<&str> = r.fused.iter().map(|f| f.stmt.as_str()).collect();
    assert_eq!(names, ["S_0", "S_1", "S_2"]);
    assert_eq!(r.fused[1].recompute, Some(1.0));
    assert!(
        t.contains("Band {S_3 -> (floor((i)/8), floor((l)/8))} permutable coincident=[0,0]"),
        "{t}"
    );
    assert_eq!(
        r.notes,
        ["the tiles recompute S_0, S_1 into shared global arrays, so the tile loops are no longer parallel (tile-local buffers would make them so)"]
    );
}

#[test]
fn softmax_row_tiles() {
    let fx = Fixture::new("softmax.tc", &[("R", 16), ("N", 16)], false);
    let (t, r) = fused(&fx, "S_5: 4@L1\n", 0.25);
    insta::assert_snapshot!("softmax_rows_fused_tree", t);
    insta::assert_snapshot!("softmax_rows_fused_explain", r.explain());
}

#[test]
fn attention_tiles() {
    let fx = Fixture::new("attention.tc", &[("L", 16), ("D", 8)], false);
    let (_, r) = fused(&fx, "S_9: 4@L1, 4@L1\n", 0.25);
    insta::assert_snapshot!("attention_fused_explain", r.explain());
}

/// At symbolic sizes an overlapping producer is not recomputed; the report counts what
/// recomputation would run as quasi-polynomials (barvinok), which at the bound sizes
/// equal the bound fixture's exact counts.
#[test]
fn symbolic_sizes_count_recomputation_as_quasi_polynomials() {
    let fx = Fixture::new("mm2.tc", &[], false);
    let (_, r) = fused(&fx, "S_3: 8@L1, 8@L1, 8@L1\n", 1.0);
    let why = reason(&r, "S_1");
    assert!(
        why.starts_with(
            "neighbouring tiles need overlapping instances of S_1; recomputing the overlaps would run "
        ) && why.ends_with(
            "(exact, in the sizes); fusion at symbolic sizes does not recompute (bind the sizes with --param to weigh it)"
        ),
        "{why}"
    );
    let sym = r
        .symbolic
        .iter()
        .find(|x| x.stmt == "S_1")
        .unwrap_or_else(|| panic!("{r:?}"));
    let bound = Fixture::new("mm2.tc", &MM2, false);
    let (_, rb) = fused(&bound, "S_3: 8@L1, 8@L1, 8@L1\n", 1.0);
    let fp = rb
        .fused
        .iter()
        .find(|f| f.stmt == "S_1")
        .unwrap_or_else(|| panic!("{rb:?}"));
    let b = polyhedral::barvinok::Barvinok::load().unwrap_or_else(|e| panic!("{e}: {}", e.help()));
    let at: Vec<(String, i64)> = MM2.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    let ev = |q: &str| -> u64 { b.eval(q, &at).expect("eval").parse().expect("an integer") };
    assert_eq!(Some(ev(&sym.executed.isl)), fp.executed);
    assert_eq!(Some(ev(&sym.instances.isl)), fp.instances);
    assert_eq!(
        ev(&sym.extra.isl),
        fp.executed.unwrap() - fp.instances.unwrap()
    );
}

#[test]
fn not_applicable_to_isl_fused_schedule() {
    let fx = Fixture::new("conv_chain.tc", &CONV, true);
    let (t0, _) = {
        let (f, s) = parse("S_4: 8@L1, 8@L1\n");
        tile(fx.tree.clone(), &fx.cx(), &s, &f).expect("tiles")
    };
    let (t, r) = fuse(t0.clone(), &fx.cx(), &FuseOptions::default()).expect("runs");
    assert_eq!(t, t0);
    assert!(!r.applied);
    insta::assert_snapshot!("not_applicable_isl", r.explain());
}

#[test]
fn not_applicable_without_tiles() {
    let fx = Fixture::new("conv_chain.tc", &CONV, false);
    let (t, r) = fuse(fx.tree.clone(), &fx.cx(), &FuseOptions::default()).expect("runs");
    assert_eq!(t, fx.tree);
    assert_eq!(
        r.notes,
        ["not applicable: the live-out group (the last filter) has no tile band with a memory mark: tile it first (a tile spec naming its live-out statement)"]
    );
}

/// A fixture from source text (initial schedule).
fn fixture_src(src: &str, params: &[(&str, i64)]) -> Fixture {
    let file = SourceFile::new("inline.tc", src);
    let program = polyhedral::lang::compile(&file, None).expect("compiles");
    let values: Vec<Option<i64>> = program
        .params
        .iter()
        .map(|p| params.iter().find(|(n, _)| *n == p.name).map(|(_, v)| *v))
        .collect();
    let ctx = Ctx::new();
    let scop = Scop::build(&ctx, &program, &values, &file).expect("model");
    let deps = Deps::compute(&scop).expect("deps");
    let sched = initial_schedule(&scop, &deps).expect("schedule");
    let tree = ScheduleTree::from_isl(&sched).expect("tree");
    drop(sched);
    Fixture {
        ctx,
        program,
        scop,
        deps,
        tree,
    }
}

#[test]
fn producer_used_by_a_later_unfused_statement() {
    // Z reads T but is not a producer of Y: T's producer must stay before Z.
    let fx = fixture_src(
        "def f(f32(N) A) -> (f32(N) Y, f32(N) Z) {\n  T(i) = A(i) * 2\n  Z(i) = T(i) + 1\n  Y(i) = T(i) * 3\n}\n",
        &[("N", 20)],
    );
    let (t, r) = fused(&fx, "S_2: 8@L1\n", 0.25);
    assert_eq!(
        reason(&r, "S_0"),
        "S_1 (not fused) must run after it (a RAW dependence S_0 -> S_1); moving S_0 into the tiles of the live-out group would reorder them"
    );
    assert!(!r.applied);
    assert!(!t.contains("Extension"), "{t}");
}

#[test]
fn partly_needed_output_is_not_fused() {
    // Y reads only half of P, an output: skipping the other half would lose results.
    let fx = fixture_src(
        "def f(f32(N) A) -> (f32(N) P, f32(M) Y) {\n  P(i) = A(i) * 2\n  Y(i) = P(i) + 1 where i in 0:M\n}\n",
        &[("N", 20), ("M", 10)],
    );
    let (_, r) = fused(&fx, "S_1: 4@L1\n", 0.25);
    assert_eq!(
        reason(&r, "S_0"),
        "the tiles need only some of its instances, but it writes P, which is an output the fused group does not own; skipping the other instances would lose results"
    );
}

#[test]
fn conv_chain_one_nest_first_tile() {
    // Opt-in: the in-place bias add runs once, in the first tile that needs each element;
    // the whole chain becomes one loop nest, and the tile loops are no longer parallel.
    let fx = Fixture::new("conv_chain.tc", &CONV, false);
    let (f, s) = parse("S_4: 8@L1, 8@L1\n");
    let (t, _) = tile(fx.tree.clone(), &fx.cx(), &s, &f).expect("tiles");
    let opts = FuseOptions {
        first_tile_overlaps: true,
        ..FuseOptions::default()
    };
    let (t, r) = fuse(t, &fx.cx(), &opts).expect("fuses");
    let text = t.to_tree_text();
    insta::assert_snapshot!("conv_chain_one_nest_tree", text);
    assert!(r.fallbacks.is_empty(), "{r:?}");
    let s0 = &r.fused[0];
    assert_eq!(
        (s0.stmt.as_str(), s0.instances, s0.executed),
        ("S_0", Some(37 * 29), Some(37 * 29))
    );
    assert_eq!(
        r.notes,
        ["S_0 runs in the first tile that needs it, not recomputed; the tiles depend on each other"]
    );
    assert_eq!(text.matches("Mark \"skipped\"").count(), 4, "{text}");
    assert!(
        text.contains("Band {S_4 -> (floor((h)/8), floor((w)/8))} permutable coincident=[0,0]"),
        "{text}"
    );
}

#[test]
fn producer_reached_only_through_a_fallback() {
    // S_1 updates the input B in place and the tiles need overlapping instances of it, so
    // it stays; S_0 is needed only through S_1 and stays too.
    let fx = fixture_src(
        "def f(f32(N) A, f32(N) B) -> (f32(M) Y) {\n  T(i) = A(i) * 2\n  B(i) = B(i) + T(i)\n  Y(i) = B(i) + B(i + 1) where i in 0:M\n}\n",
        &[("N", 21), ("M", 20)],
    );
    let (t, r) = fused(&fx, "S_2: 4@L1\n", 10.0);
    assert!(!r.applied);
    assert_eq!(
        reason(&r, "S_0"),
        "the tiles need none of its instances (directly, or through fused producers)"
    );
    assert_eq!(
        reason(&r, "S_1"),
        "neighbouring tiles need overlapping instances of S_1 (a 5 block of S_1 per tile), which would be recomputed; S_1 updates B in place, so running an instance twice would apply the update twice"
    );
    assert!(!t.contains("Extension"), "{t}");
}
