//! The tile-spec language: round trips and error texts.

mod common;

use common::*;
use polyhedral::diag::render_plain;
use schedule_tree::Buffer;
use tiling::{parse_tile_spec, SizeSpec};

fn parse_err(text: &str) -> String {
    let f = spec_file(text);
    let e = parse_tile_spec(&f, &CPU.map(|l| l.buffer)).expect_err("must fail");
    render_plain(e.as_ref())
}

#[test]
fn paper_grammar_round_trips() {
    let (_, s) = parse("S_4: 32@L1, 32@L1        # the paper's example\n");
    assert_eq!(s.to_string(), "S_4: 32@L1, 32@L1\n");
    assert_eq!(s.stmts[0].dims.len(), 2);
    assert_eq!(s.stmts[0].dims[1].levels[0].size, SizeSpec::Fixed(32));
    assert_eq!(
        s.stmts[0].dims[1].levels[0].buffer,
        Buffer::from_static("L1")
    );
}

#[test]
fn extensions_round_trip() {
    let text = "\n# comment line\nS_2: 64@L2 8@L1, 64@L2 8@reg,32@L1\n\nS_1: ?@L1, [16..128]@L1, {16, 32,64}@L2\nS_0: 1@L2 S_3: 7@L1\n";
    let (_, s) = parse(text);
    let canon = s.to_string();
    assert_eq!(
        canon,
        "S_2: 64@L2 8@L1, 64@L2 8@reg, 32@L1\nS_1: ?@L1, [16..128]@L1, {16, 32, 64}@L2\nS_0: 1@L2\nS_3: 7@L1\n"
    );
    // Parsing the canonical text gives the same spec (spans aside).
    let (_, again) = parse(&canon);
    assert_eq!(again.to_string(), canon);
    assert_eq!(
        s.stmts[1].dims[1].levels[0].size,
        SizeSpec::Range { lo: 16, hi: 128 }
    );
    assert_eq!(
        s.stmts[1].dims[2].levels[0].size,
        SizeSpec::Choice(vec![16, 32, 64])
    );
    assert!(s.first_search_entry().is_some());
}

#[test]
fn empty_file_is_an_empty_spec() {
    let (_, s) = parse("# nothing\n\n");
    assert!(s.stmts.is_empty());
}

#[test]
fn error_texts() {
    insta::assert_snapshot!("unknown_buffer", parse_err("S_4: 32@L1, 32@shared\n"));
    insta::assert_snapshot!("zero_size", parse_err("S_4: 0@L1\n"));
    insta::assert_snapshot!("negative_size", parse_err("S_4: 32@L1, -4@L1\n"));
    insta::assert_snapshot!("missing_at", parse_err("S_4: 32 L1\n"));
    insta::assert_snapshot!("bad_stmt_id", parse_err("conv: 32@L1\n"));
    insta::assert_snapshot!("missing_colon", parse_err("S_4 32@L1\n"));
    insta::assert_snapshot!("trailing_comma", parse_err("S_4: 32@L1,\n"));
    insta::assert_snapshot!("duplicate_stmt", parse_err("S_4: 32@L1\nS_4: 16@L1\n"));
    insta::assert_snapshot!("levels_out_of_order", parse_err("S_4: 8@L1 64@L2\n"));
    insta::assert_snapshot!("inner_larger", parse_err("S_4: 8@L2 64@L1\n"));
    insta::assert_snapshot!("empty_range", parse_err("S_4: [64..16]@L1\n"));
    insta::assert_snapshot!("bad_char", parse_err("S_4: 32@L1; 32@L1\n"));
    insta::assert_snapshot!("same_buffer_twice", parse_err("S_4: 32@L1 16@L1\n"));
}
