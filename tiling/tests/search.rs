//! The tile-size search: candidates, legality, the cost model's ranking (exact picks on
//! small matmuls, with the expected figures computed by hand from the model) and errors.

mod common;

use common::*;
use schedule_tree::Buffer;
use tiling::search::{entry_candidates, resolve, searched_text, Strategy};
use tiling::{search, SearchOptions, SizeSpec};

fn mm(n: i64) -> Fixture {
    Fixture::new("matmul.tc", &[("M", n), ("N", n), ("K", n)], true)
}

fn run(fx: &Fixture, text: &str, budget: usize) -> (tiling::TileSpec, tiling::SearchResult) {
    let (f, s) = parse(text);
    let r = search(&fx.tree, &fx.cx(), &s, &f, &SearchOptions { budget }).expect("search");
    (s, r)
}

fn search_err(fx: &Fixture, text: &str) -> String {
    let (f, s) = parse(text);
    err_text(search(&fx.tree, &fx.cx(), &s, &f, &SearchOptions::default()).expect_err("fails"))
}

#[test]
fn candidates_of_any() {
    assert_eq!(
        entry_candidates(&SizeSpec::Any, Some(100)),
        vec![1, 2, 4, 8, 16, 32, 64, 100]
    );
    assert_eq!(
        entry_candidates(&SizeSpec::Any, Some(64)),
        vec![1, 2, 4, 8, 16, 32, 64]
    );
    assert_eq!(
        entry_candidates(&SizeSpec::Any, None),
        vec![1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    );
}

#[test]
fn candidates_of_ranges() {
    let r = |lo, hi| SizeSpec::Range { lo, hi };
    // Powers of two in the range, both ends, and one clamped representative (the extent).
    assert_eq!(entry_candidates(&r(64, 1024), Some(100)), vec![64, 100]);
    assert_eq!(
        entry_candidates(&r(64, 1024), None),
        vec![64, 128, 256, 512, 1024]
    );
    assert_eq!(
        entry_candidates(&r(100, 300), Some(1000)),
        vec![100, 128, 256, 300]
    );
    // At most 16 values: every integer.
    assert_eq!(
        entry_candidates(&r(3, 10), Some(256)),
        vec![3, 4, 5, 6, 7, 8, 9, 10]
    );
    // Everything above the extent, which the range does not contain: the smallest stays.
    assert_eq!(entry_candidates(&r(2000, 4000), Some(256)), vec![2000]);
}

#[test]
fn candidates_of_sets() {
    let c = |v: &[i64]| SizeSpec::Choice(v.to_vec());
    assert_eq!(
        entry_candidates(&c(&[256, 64, 128]), None),
        vec![64, 128, 256]
    );
    assert_eq!(
        entry_candidates(&c(&[64, 128, 256]), Some(100)),
        vec![64, 128]
    );
    assert_eq!(entry_candidates(&c(&[512, 256]), Some(100)), vec![256]);
    assert_eq!(entry_candidates(&SizeSpec::Fixed(7), Some(100)), vec![7]);
}

#[test]
fn one_level_exhaustive_picks_the_largest_tile_that_fits() {
    // 8 candidates per dimension = 512 points = the budget: exhaustive. A tile (a, b, c)
    // needs 4 (ac + cb + ab) bytes of L1 (49152); 481 points fit. Bytes moved into L1 =
    // (128/a)(128/b)(128/c) x footprint: 64^3 moves 8 x 49152, weighted x4 (L1 is one level
    // inside L2 in this fixture's [L2, L1, reg]).
    let fx = mm(128);
    let (spec, r) = run(&fx, "S_1: ?@L1, ?@L1, ?@L1\n", 512);
    assert_eq!(r.strategy, Strategy::Exhaustive);
    assert_eq!(r.space, 512);
    assert_eq!((r.candidates, r.legal), (512, 481));
    assert_eq!(r.best().sizes, vec![64, 64, 64]);
    assert_eq!(r.best().cost.weighted, 1_572_864);
    assert_eq!(r.best().cost.tiles, 8);
    assert_eq!(
        r.best().cost.moved,
        vec![(Buffer::from_static("L1"), 393_216)]
    );
    // Runner-up: ties on cost and tiles, larger sizes first.
    assert_eq!(r.ranked[1].sizes, vec![64, 64, 32]);
    assert_eq!(r.ranked[2].sizes, vec![64, 32, 64]);
    assert_eq!(r.ranked[1].cost.weighted, 2_097_152);
    let resolved = resolve(&spec, &r.vars, &r.best().sizes);
    assert_eq!(resolved.to_string(), "S_1: 64@L1, 64@L1, 64@L1\n");
    assert_eq!(resolved.first_search_entry(), None);
}

#[test]
fn coordinate_descent_over_budget() {
    let fx = mm(128);
    let (_, r) = run(&fx, "S_1: ?@L1, ?@L1, ?@L1\n", 100);
    assert_eq!(r.strategy, Strategy::CoordinateDescent);
    // It reaches the exhaustive optimum here, visiting far fewer points.
    assert_eq!(r.best().sizes, vec![64, 64, 64]);
    assert!(r.candidates < 100, "visited {}", r.candidates);
    assert_eq!(r.legal, r.ranked.len());
}

#[test]
fn two_levels_shrink_and_tie_break() {
    // 16 points; the 7 where an L1 size (32) exceeds its L2 size (16) are skipped. k stays
    // 64 at L2, so the L1 window of k is 64. Cost = 16 x L2 bytes + 4 x L1 bytes:
    // (64, 32, 64, 32) moves 49152 bytes into L2 (1 tile) and 81920 into L1 (4 tiles).
    let fx = mm(64);
    let (spec, r) = run(
        &fx,
        "S_1: {16, 64}@L2 {8, 32}@L1, {16, 64}@L2 {8, 32}@L1, 64@L2\n",
        512,
    );
    assert_eq!((r.candidates, r.legal), (9, 9));
    let order: Vec<(Vec<i64>, u128, u128)> = r
        .ranked
        .iter()
        .map(|p| (p.sizes.clone(), p.cost.weighted, p.cost.tiles))
        .collect();
    assert_eq!(
        order,
        vec![
            (vec![64, 32, 64, 32], 1_114_112, 5),
            (vec![64, 32, 64, 8], 1_507_328, 17),
            (vec![64, 8, 64, 32], 1_507_328, 17),
            (vec![64, 8, 64, 8], 1_900_544, 65),
            (vec![64, 32, 16, 8], 2_293_760, 20),
            (vec![16, 8, 64, 32], 2_293_760, 20),
            (vec![64, 8, 16, 8], 2_686_976, 68),
            (vec![16, 8, 64, 8], 2_686_976, 68),
            (vec![16, 8, 16, 8], 3_473_408, 80),
        ]
    );
    assert_eq!(
        r.best().cost.moved,
        vec![
            (Buffer::from_static("L2"), 49_152),
            (Buffer::from_static("L1"), 81_920)
        ]
    );
    let resolved = resolve(&spec, &r.vars, &r.best().sizes);
    assert_eq!(
        searched_text(&resolved, &r.vars),
        "S_1: 64@L2 32@L1, 64@L2 32@L1, 64@L2"
    );
    assert_eq!(
        r.summary("model"),
        "9 candidates, 9 legal (model, exhaustive)"
    );
}

#[test]
fn capacity_makes_points_illegal() {
    // L1 holds 49152 bytes: with k whole (128), an L1 tile a x b needs
    // 4 (128a + 128b + ab) bytes. Of {16, 32, 64}^2 only (64, 64) (81920 bytes), (64, 32)
    // and (32, 64) (57344 bytes) do not fit. (32, 32) is cheapest of the rest.
    let fx = mm(128);
    let (_, r) = run(&fx, "S_1: {16, 32, 64}@L1, {16, 32, 64}@L1\n", 512);
    assert_eq!((r.candidates, r.legal), (9, 6));
    assert_eq!(r.best().sizes, vec![32, 32]);
    // (64, 16) and (16, 64) tie with each other; the larger sizes rank first.
    let second: Vec<Vec<i64>> = r.ranked[1..3].iter().map(|p| p.sizes.clone()).collect();
    assert_eq!(second, vec![vec![64, 16], vec![16, 64]]);
}

#[test]
fn register_files_are_not_checked() {
    // As in tiling, promotion decides what lives in registers: every reg point is legal,
    // even 8 x 8 with k whole (4352 bytes > 2048); the model takes the largest reg tile.
    // 64 is above the enclosing L1 size 32, so its points are skipped.
    let fx = mm(64);
    let (_, r) = run(&fx, "S_1: 32@L1 {4, 8, 64}@reg, 32@L1 {4, 8}@reg\n", 512);
    assert_eq!((r.candidates, r.legal), (4, 4));
    assert_eq!(r.best().sizes, vec![8, 8]);
}

#[test]
fn no_legal_candidate_is_a_located_error() {
    let fx = mm(256);
    insta::assert_snapshot!(
        "no_legal_candidate",
        search_err(&fx, "S_1: {128, 256}@L1, {64, 128}@L1\n")
    );
}

#[test]
fn shrink_violations_everywhere_are_an_error() {
    let fx = mm(64);
    insta::assert_snapshot!(
        "all_points_skipped",
        search_err(&fx, "S_1: {8}@L2 {16, 32}@L1\n")
    );
}

#[test]
fn size_independent_errors_come_first() {
    let fx = mm(64);
    insta::assert_snapshot!("unknown_statement", search_err(&fx, "S_9: ?@L1\n"));
}

#[test]
fn spec_without_search_entries_gives_one_point() {
    let fx = mm(64);
    let (_, r) = run(&fx, "S_1: 32@L1\n", 512);
    assert!(r.vars.is_empty());
    assert_eq!(r.ranked.len(), 1);
    assert_eq!(r.best().sizes, Vec::<i64>::new());
}

#[test]
fn empty_set_and_empty_range_do_not_parse() {
    let f = spec_file("S_1: {}@L1\n");
    let e = tiling::parse_tile_spec(&f, &CPU.map(|l| l.buffer)).expect_err("empty set");
    insta::assert_snapshot!("empty_set", err_text(e));
    let f = spec_file("S_1: [64..16]@L1\n");
    let e = tiling::parse_tile_spec(&f, &CPU.map(|l| l.buffer)).expect_err("empty range");
    insta::assert_snapshot!("empty_range", err_text(e));
}
