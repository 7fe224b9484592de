//! Band tiling on real programs: tree shapes, reports and error texts.

mod common;

use common::*;
use tiling::{default_spec, explain, tile};

fn mm() -> Fixture {
    Fixture::new("matmul.tc", &[("M", 64), ("N", 64), ("K", 64)], true)
}

fn tiled_text(fx: &Fixture, spec: &str) -> (String, tiling::TileReport) {
    let (f, s) = parse(spec);
    let (t, r) = tile(fx.tree.clone(), &fx.cx(), &s, &f).expect("tiles");
    (t.to_tree_text(), r)
}

fn tile_err(fx: &Fixture, spec: &str) -> String {
    let (f, s) = parse(spec);
    err_text(tile(fx.tree.clone(), &fx.cx(), &s, &f).expect_err("must fail"))
}

#[test]
fn matmul_one_level() {
    let fx = mm();
    let (t, r) = tiled_text(&fx, "S_1: 32@L1, 32@L1, 16@L1\n");
    insta::assert_snapshot!("matmul_1level", t);
    assert!(r.notes.is_empty() && r.warnings.is_empty(), "{r:?}");
    let l = &r.bands[0].levels[0];
    // A 32x16, B 16x32, C 32x32 floats.
    assert_eq!(l.total_bytes, Some((512 + 512 + 1024) * 4));
}

#[test]
fn matmul_two_levels() {
    let fx = mm();
    let (t, _) = tiled_text(&fx, "S_1: 64@L2 16@L1, 32@L2 16@L1, 8@L1\n");
    insta::assert_snapshot!("matmul_2level", t);
}

#[test]
fn matmul_partial_spec_leaves_inner_dims() {
    let fx = mm();
    let (t, _) = tiled_text(&fx, "S_1: 16@L1\n");
    insta::assert_snapshot!("matmul_outer_only", t);
}

#[test]
fn conv_chain_s4() {
    let fx = Fixture::new(
        "conv_chain.tc",
        &[("H", 64), ("W", 64), ("KH", 3), ("KW", 3)],
        true,
    );
    let (t, r) = tiled_text(&fx, "S_4: 32@L1, 32@L1\n");
    insta::assert_snapshot!("conv_chain_s4", t);
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}

#[test]
fn derived_statement_warns() {
    let fx = Fixture::new(
        "conv_chain.tc",
        &[("H", 64), ("W", 64), ("KH", 3), ("KW", 3)],
        true,
    );
    let (_, r) = tiled_text(&fx, "S_2: 32@L1, 32@L1\n");
    insta::assert_snapshot!("derived_warning", r.warnings.join("\n"));
}

#[test]
fn sizes_above_extents_are_clamped() {
    let fx = Fixture::new("matmul.tc", &[("M", 37), ("N", 29), ("K", 5)], true);
    let (_, r) = tiled_text(&fx, "S_1: 100@L1, 8@L1\n");
    assert_eq!(
        r.notes,
        vec!["S_1: the L1 size 100 of dimension 1 is larger than the dimension's extent 37; clamped to 37"]
    );
}

#[test]
fn explain_table() {
    let fx = mm();
    let (f, s) = parse("S_1: 64@L2 32@L1, 64@L2 32@L1, 64@L2 8@L1\n");
    let e = explain(&fx.tree, &fx.cx(), &s, &f).expect("explains");
    insta::assert_snapshot!("explain_matmul", e.to_string());
}

#[test]
fn default_policy() {
    let fx = Fixture::new("matmul.tc", &[("M", 512), ("N", 512), ("K", 512)], true);
    // Without a register file: L2 and L1 tiles.
    let mut cx = fx.cx();
    let caches = [CPU[0], CPU[1]];
    cx.levels = &caches;
    let d = default_spec(&fx.tree, &cx, None).expect("default");
    assert_eq!(
        d.to_string(),
        "S_1: 128@L2 32@L1, 128@L2 32@L1, 256@L2 64@L1\n"
    );
    let f = spec_file("");
    let (t, r) = tile(fx.tree.clone(), &cx, &d, &f).expect("tiles");
    assert_eq!(
        r.bands[0].levels[1].total_bytes,
        Some((32 * 64 + 64 * 32 + 32 * 32) * 4)
    );
    assert!(t.to_tree_text().contains("Mark \"mem:L1\""));
    // With the register file: an 8 x 32 register tile; k's L2 size lets one register
    // tile's sweep (8 x 128 of A, 128 x 32 of B, 8 x 32 of C: 21 KiB; 41 KiB with 256)
    // fit 3/4 of L1.
    let d = default_spec(&fx.tree, &fx.cx(), None).expect("default");
    assert_eq!(d.to_string(), "S_1: 256@L2 8@reg, 512@L2 32@reg, 128@L2\n");
    let (t, _) = tile(fx.tree.clone(), &fx.cx(), &d, &f).expect("tiles");
    assert!(t.to_tree_text().contains("Mark \"mem:reg\""));
    // A row panel (8 rows of A and C, all of B) that fits half of L2: no L2 level.
    let small = Fixture::new("matmul.tc", &[("M", 64), ("N", 96), ("K", 64)], true);
    let d = default_spec(&small.tree, &small.cx(), None).expect("default");
    assert_eq!(d.to_string(), "S_1: 8@reg, 32@reg\n");
}

/// The conv chain under isl's schedule: S_1-S_4 share the (h, w, kh) band; its window
/// operand spans the rows, so the register tile has 4 rows; one row panel fits L2, so there
/// is no L2 level; the trailing 5-iteration reduction stays whole. S_0 (its own band) gets
/// L2/L1 tiles.
#[test]
fn default_policy_conv_chain() {
    let fx = Fixture::new(
        "conv_chain.tc",
        &[("H", 2048), ("W", 2048), ("KH", 5), ("KW", 5)],
        true,
    );
    let d = default_spec(&fx.tree, &fx.cx(), None).expect("default");
    assert_eq!(
        d.to_string(),
        "S_0: 512@L2 64@L1, 512@L2 64@L1\nS_4: 4@reg, 32@reg\n"
    );
}

#[test]
fn error_unknown_statement() {
    insta::assert_snapshot!("err_unknown_stmt", tile_err(&mm(), "S_7: 32@L1\n"));
}

#[test]
fn error_too_many_entries() {
    insta::assert_snapshot!(
        "err_too_many",
        tile_err(&mm(), "S_1: 8@L1, 8@L1, 8@L1, 8@L1\n")
    );
}

#[test]
fn error_disagreeing_specs() {
    insta::assert_snapshot!(
        "err_disagree",
        tile_err(&mm(), "S_0: 32@L1, 32@L1\nS_1: 32@L1, 16@L1\n")
    );
}

#[test]
fn agreeing_specs_are_fine() {
    let fx = mm();
    let (a, _) = tiled_text(&fx, "S_0: 32@L1, 32@L1, 4@L1\nS_1: 32@L1, 32@L1, 4@L1\n");
    let (b, _) = tiled_text(&fx, "S_1: 32@L1, 32@L1, 4@L1\n");
    assert_eq!(a, b);
}

#[test]
fn error_unresolved_search_entries_reach_tile() {
    insta::assert_snapshot!("err_search", tile_err(&mm(), "S_1: {16, 32}@L1\n"));
}

#[test]
fn error_capacity_overflow() {
    let fx = Fixture::new("matmul.tc", &[("M", 128), ("N", 128), ("K", 128)], true);
    insta::assert_snapshot!("err_capacity", tile_err(&fx, "S_1: 64@L1, 64@L1, 128@L1\n"));
}

#[test]
fn error_illegal_jacobi_initial() {
    let fx = Fixture::new("jacobi1d.tc", &[("T", 10), ("N", 64)], false);
    insta::assert_snapshot!("err_illegal_jacobi", tile_err(&fx, "S_0: 8@L1, 8@L1\n"));
    // The isl scheduler skews the band, and then it tiles.
    let fx = Fixture::new("jacobi1d.tc", &[("T", 10), ("N", 64)], true);
    let (t, _) = tiled_text(&fx, "S_0: 4@L1, 8@L1\n");
    insta::assert_snapshot!("jacobi_isl_tiled", t);
}

#[test]
fn error_illegal_reduction_dims() {
    // Under the initial scheduler, S_2's band (h, w, kh, kw) is permutable only over its
    // first three members.
    let fx = Fixture::new(
        "conv_chain.tc",
        &[("H", 16), ("W", 16), ("KH", 3), ("KW", 3)],
        false,
    );
    insta::assert_snapshot!(
        "err_illegal_conv",
        tile_err(&fx, "S_2: 8@L1, 8@L1, 2@L1, 2@L1\n")
    );
}
