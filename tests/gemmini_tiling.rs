//! Tiling's capacity check on Gemmini: each tensor counts in the buffer the description
//! says holds it (`holds: operands` for the scratchpad, `holds: results` for the
//! accumulator), with the I and J tiles given at the accumulator spanning the operand
//! tiles in the scratchpad; so GEMM specs need no sizes at `@scratchpad` for I and J, and
//! convolution specs are searched by EDP.

mod common;

use common::*;

/// The EDP of explain's BACO line (`BACO: latency … EDP 3.8355e13`).
fn edp(report: &str) -> f64 {
    let line = report
        .lines()
        .find(|l| l.trim_start().starts_with("BACO: latency"))
        .expect("a BACO line");
    let at = line.find(" EDP ").expect("an EDP") + 5;
    line[at..]
        .split_whitespace()
        .next()
        .and_then(|w| w.trim_end_matches(',').parse().ok())
        .expect("a number")
}

#[test]
fn operands_count_in_the_scratchpad_and_results_in_the_accumulator() {
    // 1024 × 512 × 256 with 128×128×256 tiles. Counting every tensor at every level, with
    // I and J unrestricted at the scratchpad, A (1024 × 256) and B (256 × 512) would need
    // 384 KiB of the 256 KiB scratchpad; held where Gemmini keeps them, the scratchpad
    // has A 128 × 256 and B 256 × 128, the accumulator C 128 × 128 in int32.
    let dir = tempdir();
    let spec = write(
        dir.path(),
        "t.spec",
        "S_1: 128@accumulator, 128@accumulator, 256@scratchpad\n",
    );
    let ex = polyc_ok(&[
        "explain",
        "examples/gemmini/gemm.tc",
        "--param",
        "M=1024,N=512,K=256",
        "--target",
        "gemmini",
        "--tile-spec",
        &spec,
    ]);
    let flat: Vec<String> = ex
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    for want in [
        "scratchpad - x - x 256 A 128 x 256 32768 32768",
        "B 256 x 128 32768 32768",
        "total 65536 bytes of 262144 (196608 left)",
        "accumulator 128 x 128 x - C 128 x 128 16384 65536",
        "total 65536 bytes of 65536 (0 left)",
    ] {
        assert!(
            flat.iter().any(|l| l.contains(want)),
            "no `{want}` in:\n{ex}"
        );
    }
    assert!(
        ex.contains("tiles 128×128×256 (i×j×k, from the tile spec)"),
        "{ex}"
    );
    // An accumulator tile that does not fit is still the located error.
    let big = write(
        dir.path(),
        "big.spec",
        "S_1: 256@accumulator, 128@accumulator, 256@scratchpad\n",
    );
    let e = polyc_err(&[
        "explain",
        "examples/gemmini/gemm.tc",
        "--param",
        "M=1024,N=512,K=256",
        "--target",
        "gemmini",
        "--tile-spec",
        &big,
    ]);
    let e = e
        .replace('│', " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        e.contains("big.spec:1:1: the accumulator tile of `S_1` needs 131072 bytes, but accumulator holds 65536 bytes"),
        "{e}"
    );
    assert!(
        e.contains("footprints per tile: C 256 x 128 = 32768 elements (131072 bytes); the smallest change that fits: make dimension 1 `128@accumulator` (65536 bytes)"),
        "{e}"
    );
}

#[test]
fn a_convolution_spec_is_searched_by_edp_and_runs_exactly() {
    // conv2d.tc's S_1 is enclosed by (oh, ow, co, kh), (kw), (ci): rows ow, columns co,
    // reduction ci; the batch oh and the filter offsets kh, kw take 1.
    let params = "N=1,H=19,W=37,CI=20,CO=17,KH=3,KW=3";
    let dir = tempdir();
    let spec = write(
        dir.path(),
        "c.spec",
        "S_1: 1@accumulator, {16,32}@accumulator, {16,32}@accumulator, 1@scratchpad, 1@scratchpad, {16,32}@scratchpad\n",
    );
    let base = polyc_ok(&[
        "explain",
        "examples/gemmini/conv2d.tc",
        "--param",
        params,
        "--target",
        "gemmini",
        "--policy",
        "gemmini-default",
    ]);
    let o = polyc(&[
        "explain",
        "examples/gemmini/conv2d.tc",
        "--param",
        params,
        "--target",
        "gemmini",
        "--tile-spec",
        &spec,
    ]);
    assert_code(&o, 0);
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(
        err.contains("search: 8 candidates, 8 legal (model, exhaustive), ranked by the target's EDP (8 points compiled"),
        "{err}"
    );
    assert!(out.contains("from the tile spec"), "{out}");
    // The baseline's tiles (32×32×32 here) are among the points, so the search is at
    // least as good.
    assert!(base.contains("tiles 32×32×32"), "{base}");
    assert!(
        edp(&out) <= edp(&base),
        "searched {} > baseline {}",
        edp(&out),
        edp(&base)
    );
    for via in ["model", "c"] {
        let o = polyc(&[
            "run",
            "examples/gemmini/conv2d.tc",
            "--param",
            params,
            "--target",
            "gemmini",
            "--tile-spec",
            &spec,
            "--check",
            "--via",
            via,
        ]);
        assert_code(&o, 0);
        assert!(stdout(&o).trim_end().ends_with(" ok"), "{}", stdout(&o));
    }
}

#[test]
fn an_unknown_holds_value_is_a_located_error() {
    let dir = tempdir();
    let text = std::fs::read_to_string(root().join("specs/targets/gemmini.yaml"))
        .expect("gemmini.yaml")
        .replace("holds: results", "holds: partial_sums");
    let desc = write(dir.path(), "g.yaml", &text);
    let e = polyc_err(&[
        "examples/gemmini/gemm.tc",
        "--param",
        "M=16,N=16,K=16",
        "--target",
        &desc,
    ]);
    let flat = e.split_whitespace().collect::<Vec<_>>().join(" ");
    for want in [
        "unknown `holds` value `partial_sums`",
        "a buffer holds all, results, operands of a tile's tensors (all: every tensor; results: the tensors the tile writes; operands: the tensors it only reads)",
    ] {
        assert!(flat.contains(want), "no `{want}` in:\n{e}");
    }
    assert!(e.contains("g.yaml:"), "{e}");
}
