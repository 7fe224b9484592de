//! Blocks of whole register tiles through the `polyc` binary (`tiling::default`): where a
//! band's vector member is halved to fit `L2`, the block is rounded up to a multiple of its
//! register size, so that every register tile but the extent's last has constant trip
//! counts (PolyBench's gemm at 1000 × 1100 × 1200: 560-wide blocks, not 550). A register
//! tile's reduction loop no longer turns gcc's loop vectoriser off for the whole file; an
//! in-place stencil over short inner loops still does.

mod common;
use common::*;

/// The `S_1` line of `polyc explain FILE --param PARAMS`'s tile spec.
fn spec_line(file: &str, params: &str) -> String {
    let out = polyc_ok(&["explain", file, "--param", params]);
    out.lines()
        .find(|l| l.starts_with("S_1: "))
        .unwrap_or_else(|| panic!("no S_1 spec: {out}"))
        .to_string()
}

/// Each `A@L2 B@reg` pair of a spec line: (A, B).
fn blocks(line: &str) -> Vec<(i64, i64)> {
    line.trim_start_matches("S_1: ")
        .split(", ")
        .filter_map(|dim| {
            let mut l2 = None;
            let mut reg = None;
            for part in dim.split(' ') {
                if let Some(v) = part.strip_suffix("@L2") {
                    l2 = v.parse().ok();
                }
                if let Some(v) = part.strip_suffix("@reg") {
                    reg = v.parse().ok();
                }
            }
            l2.zip(reg)
        })
        .collect()
}

#[test]
fn blocks_hold_whole_register_tiles() {
    let dir = tempdir();
    let gemm = abs("examples/polybench/gemm.tc");
    let text = std::fs::read_to_string(&gemm).expect("gemm");
    let gemm32 = write(dir.path(), "gemm32.tc", &text.replace("f64", "f32"));
    assert_eq!(
        spec_line(&gemm, "NI=1000,NJ=1100,NK=1200"),
        "S_1: 256@L2 8@reg, 560@L2 16@reg, 128@L2"
    );
    let cases = [
        (gemm.as_str(), "NI=1000,NJ=1100,NK=1200"),
        (gemm.as_str(), "NI=999,NJ=1003,NK=1201"),
        (gemm32.as_str(), "NI=1000,NJ=2200,NK=1200"),
    ];
    // (f32 gemm at NJ = 1100 keeps the whole extent as its block: only its last tile is
    // partial.)
    let syr2k = abs("examples/polybench/syr2k.tc");
    for (file, params) in cases.into_iter().chain([(syr2k.as_str(), "M=1000,N=1200")]) {
        let line = spec_line(file, params);
        let b = blocks(&line);
        assert!(!b.is_empty(), "{file} {params}: {line}");
        for (l2, reg) in b {
            assert_eq!(l2 % reg, 0, "{file} {params}: {line}");
        }
    }
    // The whole tiles of gemm's 560-wide blocks run 16 columns, a constant.
    let c = dir.path().join("gemm.c");
    let c = c.to_str().expect("a UTF-8 path");
    polyc_ok(&[
        "compile",
        &gemm,
        "--param",
        "NI=1000,NJ=1100,NK=1200",
        "-o",
        c,
    ]);
    let code = std::fs::read_to_string(c).expect("the emitted C");
    assert!(
        code.contains("if (__builtin_expect(!!(-(560 * c0) - 16 * c4 + 1099 >= 15), 1)) {"),
        "{code}"
    );
    assert!(!code.contains("no-tree-loop-vectorize"), "{code}");
}

#[test]
fn partial_blocks_match_the_interpreter() {
    // Sizes where the rounded block leaves a partial block and a partial register tile;
    // f32 and f64.
    let dir = tempdir();
    let gemm = abs("examples/polybench/gemm.tc");
    let text = std::fs::read_to_string(&gemm).expect("gemm");
    let gemm32 = write(dir.path(), "gemm32.tc", &text.replace("f64", "f32"));
    // 1203 = a 608-wide block and 595 (37 tiles of 16 and 3); 2003 = a 1024-wide block and
    // 979 (30 tiles of 32 and 19); the rows and the reduction end in partial tiles too.
    for (file, params, block) in [
        (&gemm, "NI=37,NJ=1203,NK=700", "608@L2 16@reg"),
        (&gemm32, "NI=20,NJ=2003,NK=1000", "1024@L2 32@reg"),
    ] {
        let line = spec_line(file, params);
        assert!(line.contains(block), "{line}");
        assert!(
            blocks(&line).iter().all(|(l2, reg)| l2 % reg == 0),
            "{line}"
        );
        for threads in ["1", "2"] {
            checked_on(file, params, threads);
        }
    }
}
