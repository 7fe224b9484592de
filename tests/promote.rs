//! Memory promotion through the binary: golden `promoted` trees, the promotion report of
//! `polyc explain`, the emitted local buffers, and `polyc run --check` (against the
//! reference interpreter) over programs, tile specs, packing policies and sizes that do
//! not divide the tiles.

mod common;
use common::*;

const MM: &str = "examples/matmul.tc";

/// `polyc dump --stage promoted` with a tile spec.
fn promoted(prog: &str, params: &str, spec: &str, extra: &[&str]) -> String {
    let dir = tempdir();
    let f = write(dir.path(), "tiles.txt", spec);
    let mut args = vec![
        "dump",
        prog,
        "--param",
        params,
        "--tile-spec",
        &f,
        "--stage",
        "promoted",
    ];
    args.extend_from_slice(extra);
    polyc_ok(&args)
}

/// `polyc run --check` passes (exit 0, every output `ok`).
fn check(prog: &str, params: &str, spec: &str, extra: &[&str]) {
    let dir = tempdir();
    let f = write(dir.path(), "tiles.txt", spec);
    let mut args = vec!["run", prog, "--param", params, "--tile-spec", &f, "--check"];
    args.extend_from_slice(extra);
    let o = polyc(&args);
    let err = format!("{}{}", stdout(&o), stderr(&o));
    assert_code(&o, 0);
    let results: Vec<&str> = err.lines().filter(|l| l.contains("max_abs_err")).collect();
    assert!(!results.is_empty(), "{err}");
    assert!(
        results.iter().all(|l| l.ends_with(" ok")),
        "{spec} {extra:?}\n{err}"
    );
}

#[test]
fn matmul_register_tile_and_packed_l2_tree() {
    insta::assert_snapshot!(promoted(
        MM,
        "M=64,N=64,K=64",
        "S_1: 32@L2 4@reg, 64@L2 16@reg, 32@L2\n",
        &[]
    ));
}

#[test]
fn conv_chain_fused_register_tile_tree() {
    insta::assert_snapshot!(promoted(
        "examples/conv_chain.tc",
        "H=16,W=16,KH=3,KW=3",
        "S_4: 4@reg, 8@reg\n",
        &["--scheduler", "initial", "--no-default-tiling"]
    ));
}

#[test]
fn register_tile_c_has_local_accumulators() {
    let dir = tempdir();
    let f = write(
        dir.path(),
        "tiles.txt",
        "S_1: 32@L2 4@reg, 64@L2 64@reg, 32@L2\n",
    );
    let c = polyc_ok(&[
        MM,
        "--param",
        "M=64,N=64,K=64",
        "--tile-spec",
        &f,
        "--pack",
        "none",
    ]);
    assert!(c.contains("/* tile of C (4 x 64) */"), "{c}");
    assert!(
        c.contains("float polyc_tile0_s[256] __attribute__((aligned(64)));"),
        "{c}"
    );
    // Used through a restrict pointer only (gcc keeps the accumulators in registers).
    assert!(
        c.contains("float *restrict polyc_tile0 = polyc_tile0_s;"),
        "{c}"
    );
    // The point loops start at 0 with constant bounds: 4 rows, 64 columns innermost.
    assert!(
        c.contains("for (int64_t c6 = 0; c6 <= 3; c6 += 1) {"),
        "{c}"
    );
    assert!(
        c.contains("for (int64_t c7 = 0; c7 <= 63; c7 += 1) {"),
        "{c}"
    );
    assert!(
        c.contains("polyc_tile0[((i - (32 * c0 + 4 * c3))) * 64 + (j - 0)] = polyc_fma_f32(A[i * 64 + k], B[k * 64 + j], polyc_tile0[((i - (32 * c0 + 4 * c3))) * 64 + (j - 0)]);"),
        "{c}"
    );
    assert!(
        c.contains("C[(32 * c0 + 4 * c3 + c5) * 64 + c6] = polyc_tile0[(((32 * c0 + 4 * c3 + c5) - (32 * c0 + 4 * c3))) * 64 + (c6 - 0)];"),
        "{c}"
    );
}

#[test]
fn explain_lists_the_promoted_tiles() {
    let dir = tempdir();
    let f = write(
        dir.path(),
        "tiles.txt",
        "S_1: 32@L2 4@reg, 64@L2 16@reg, 32@L2\n",
    );
    let out = polyc_ok(&[
        "explain",
        MM,
        "--param",
        "M=64,N=64,K=64",
        "--tile-spec",
        &f,
    ]);
    let promo: String = out
        .lines()
        .skip_while(|l| !l.starts_with("promotion:"))
        .collect::<Vec<_>>()
        .join("\n");
    insta::assert_snapshot!(promo);
}

#[test]
fn no_register_tiles_and_no_packing_leave_the_tree_alone() {
    let spec = "S_1: 32@L2 4@reg, 64@L2 16@reg, 32@L2\n";
    let fused = {
        let dir = tempdir();
        let f = write(dir.path(), "tiles.txt", spec);
        polyc_ok(&[
            "dump",
            MM,
            "--param",
            "M=64,N=64,K=64",
            "--tile-spec",
            &f,
            "--stage",
            "fused",
        ])
    };
    let promoted = promoted(
        MM,
        "M=64,N=64,K=64",
        spec,
        &["--pack", "none", "--no-register-tiles"],
    );
    assert_eq!(promoted, fused);
}

#[test]
fn matmul_promotions_check() {
    for (params, spec) in [
        ("M=64,N=64,K=64", "S_1: 32@L2 4@reg, 64@L2 16@reg, 32@L2\n"),
        ("M=100,N=70,K=33", "S_1: 32@L2 4@reg, 64@L2 16@reg, 32@L2\n"),
        ("M=96,N=80,K=72", "S_1: 48@L2 32@L1, 32@L2 16@L1, 128@L2\n"),
        (
            "M=96,N=80,K=72",
            "S_1: 32@L2 32@L1 4@reg, 32@L2 16@L1 16@reg, 32@L2\n",
        ),
        ("M=37,N=29,K=5", "S_1: 100@L2 8@reg, 8@L2 8@reg\n"),
    ] {
        for pack in ["auto", "all", "none"] {
            check(MM, params, spec, &["--pack", pack]);
        }
    }
}

#[test]
fn fused_chains_with_register_tiles_check() {
    check(
        "examples/conv_chain.tc",
        "H=67,W=101,KH=5,KW=3",
        "S_4: 4@reg, 64@reg\n",
        &["--scheduler", "initial"],
    );
    check(
        "examples/conv_chain.tc",
        "H=40,W=37,KH=3,KW=3",
        "S_4: 16@L2 2@reg, 16@L2 8@reg\n",
        &["--scheduler", "initial", "--pack", "all"],
    );
    check(
        "examples/mm2.tc",
        "NI=33,NJ=20,NK=17,NL=40",
        "S_3: 8@L2 4@reg, 16@L2 8@reg, 8@L2\n",
        &["--pack", "all"],
    );
    check(
        "examples/softmax.tc",
        "R=19,N=70",
        "S_5: 8@L1, 16@L1\n",
        &["--scheduler", "initial", "--pack", "all"],
    );
}

/// The fully fused temporary `T` of 2mm lives in a tile-local buffer: no global array is
/// allocated, the report says what it saves, and the results are right.
#[test]
fn fused_temporary_becomes_tile_local() {
    let dir = tempdir();
    let f = write(dir.path(), "tiles.txt", "S_3: 8@L1\n");
    let args = [
        "examples/mm2.tc",
        "--scheduler",
        "initial",
        "--param",
        "NI=19,NJ=11,NK=7,NL=17",
        "--tile-spec",
        &f,
    ];
    let c = polyc_ok(&args);
    assert!(!c.contains("malloc"), "{c}");
    assert!(!c.contains("T["), "{c}");
    assert!(c.contains("/* tile of T (8 x 11) */"), "{c}");
    let mut explain = vec!["explain"];
    explain.extend_from_slice(&args);
    let out = polyc_ok(&explain);
    let lines: Vec<&str> = out.lines().filter(|l| l.contains("tile-local")).collect();
    assert_eq!(
        lines,
        [
            "  tile-local T: global 836 bytes, one tile 352 bytes, saves 484 bytes (promotion gives it a local buffer)",
            "  #3 T in L1 below S_0, S_1, S_2, S_3: 8 x 11 = 352 bytes, 32.0 accesses per element, no copies; tile-local: the global array (836 bytes) is not allocated, saving 484 bytes",
        ]
    );
    let tree = promoted(
        "examples/mm2.tc",
        "NI=19,NJ=11,NK=7,NL=17",
        "S_3: 8@L1\n",
        &["--scheduler", "initial"],
    );
    assert!(
        tree.contains("[i0] -> local_3_T[] : 0 <= i0 <= 2"),
        "{tree}"
    );
}

/// Fused chains whose temporaries become tile-local, with default tiles for the other
/// statements (nested tiles inside the fused tile, whose bands interchange permutes
/// above promotion's extensions), over the packing policies.
#[test]
fn tile_local_temporaries_check() {
    for (prog, params, spec) in [
        ("examples/mm2.tc", "NI=19,NJ=11,NK=7,NL=17", "S_3: 8@L1\n"),
        (
            "examples/mm2.tc",
            "NI=19,NJ=11,NK=7,NL=17",
            "S_3: 4@L2 2@L1\n",
        ),
        ("examples/softmax.tc", "R=13,N=9", "S_5: 4@L1\n"),
        ("examples/softmax.tc", "R=13,N=9", "S_5: 8@L2 2@L1\n"),
        ("examples/layernorm.tc", "R=13,N=9", "S_6: 4@L1\n"),
        ("examples/attention.tc", "L=13,D=5", "S_9: 4@L1\n"),
        ("examples/attention.tc", "L=13,D=5", "S_9: 4@L2 2@L1\n"),
        ("examples/attention.tc", "L=13,D=5", "S_9: 3@L1, 2@L1\n"),
    ] {
        for pack in ["auto", "all", "none"] {
            check(
                prog,
                params,
                spec,
                &["--scheduler", "initial", "--pack", pack],
            );
        }
        check(
            prog,
            params,
            spec,
            &["--scheduler", "initial", "--no-register-tiles"],
        );
    }
}

/// Register tiles of the conv chain: full tiles run in their own loops (the partial
/// column tile and the partial row strip apart), and the 5 × 3 window loops around the
/// tile's rows and columns are unrolled; the results are right.
#[test]
fn conv_chain_full_tiles_split_and_window_unrolled() {
    let dir = tempdir();
    let f = write(dir.path(), "tiles.txt", "S_4: 4@reg, 32@reg\n");
    let args = [
        "examples/conv_chain.tc",
        "--scheduler",
        "initial",
        "--param",
        "H=67,W=101,KH=5,KW=3",
        "--tile-spec",
        &f,
    ];
    let c = polyc_ok(&args);
    // The parallel loop over row strips calls its body, a function of its own.
    for line in [
        "  for (int64_t c0 = 0; c0 <= 14; c0 += 1) {",
        "    conv_chain_par1(A, B, C, c0);",
        "  for (int64_t c1 = 0; c1 <= 2; c1 += 1) {",
        "  for (int64_t c1 = 3; c1 <= 3; c1 += 1) {",
        "      #pragma GCC unroll 8",
    ] {
        assert!(c.lines().any(|l| l == line), "{line:?} missing in\n{c}");
    }
    check(
        "examples/conv_chain.tc",
        "H=67,W=101,KH=5,KW=3",
        "S_4: 4@reg, 32@reg\n",
        &["--scheduler", "initial"],
    );
}

/// A packed operand read by register tiles narrower than its tile is stored in blocks,
/// one per register tile (a GEMM's B in micro-panels): the explain line says so, the
/// copy runs block by block, and the register tile indexes its block without division.
/// Where the register tiles straddle the packed tiles (48-wide L2 tiles, 32-wide register
/// tiles), the tile stays row-major. Both run correctly, partial tiles included.
#[test]
fn packed_operand_stored_in_register_tile_blocks() {
    let blocked = "S_1: 32@L2 4@reg, 64@L2 16@reg, 32@L2\n";
    let straddling = "S_1: 32@L2 4@reg, 48@L2 32@reg, 32@L2\n";
    let b_line = |spec: &str| {
        let dir = tempdir();
        let f = write(dir.path(), "tiles.txt", spec);
        let out = polyc_ok(&[
            "explain",
            MM,
            "--param",
            "M=64,N=96,K=64",
            "--tile-spec",
            &f,
        ]);
        out.lines()
            .find(|l| l.contains(" B in L2"))
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(
        b_line(blocked),
        "  #0 B in L2 below S_0, S_1: 32 x 64 = 8192 bytes, 64.0 accesses per element, copy in; stored in blocks of 32 x 16 (the inner tiles)"
    );
    assert_eq!(
        b_line(straddling),
        "  #0 B in L2 below S_0, S_1: 32 x 48 = 6144 bytes, 64.0 accesses per element, copy in"
    );
    let dir = tempdir();
    let f = write(dir.path(), "tiles.txt", blocked);
    let c = polyc_ok(&[MM, "--param", "M=64,N=64,K=64", "--tile-spec", &f]);
    // The copy (hoisted above the i tile loop, so one loop less around it): block (c2),
    // row (c3), column in the block (c4).
    assert!(
        c.contains("polyc_tile0[(c2) * 512 + (((32 * c1 + c3) - 32 * c1)) * 16 + ((16 * c2 + c4) - 16 * c2)] = B[(32 * c1 + c3) * 64 + (16 * c2 + c4)];"),
        "{c}"
    );
    // The register tile: its block is the register tile's column number c4.
    assert!(
        c.contains("polyc_tile0[(c4) * 512 + ((k - 32 * c1)) * 16 + (j - 16 * c4)]"),
        "{c}"
    );
    for params in ["M=64,N=96,K=64", "M=100,N=70,K=33"] {
        for spec in [blocked, straddling] {
            check(MM, params, spec, &[]);
        }
    }
}

#[test]
fn packed_tile_hoisted_above_the_loops_it_does_not_depend_on() {
    // B[k, j]'s tile does not move with the i tile loop (three i tiles of 32): its pack
    // moves above that loop, below a second L2 mark, and A's stays below it.
    let spec = "S_1: 32@L2 4@reg, 64@L2 16@reg, 32@L2\n";
    let params = "M=96,N=64,K=64";
    insta::assert_snapshot!(promoted(MM, params, spec, &[]));
    let dir = tempdir();
    let f = write(dir.path(), "tiles.txt", spec);
    let o = polyc(&[MM, "--param", params, "--tile-spec", &f]);
    assert_code(&o, 0);
    assert!(
        stderr(&o).contains(
            "note: the packed tile of B moves above the tile loops it does not depend on \
             (band members reordered to [1, 2, 0], 2 outside the new mem:L2 mark)"
        ),
        "{}",
        stderr(&o)
    );
    // B is packed once per k tile, outside the i tile loop, which runs in parallel.
    let c = stdout(&o);
    let pack_b = c.find("/* tile of B").expect("a B tile");
    let lines: Vec<&str> = c.lines().collect();
    let i_loop = lines
        .iter()
        .position(|l| l.trim_start().starts_with("for (int64_t c2 = 0; c2 <= 2;"))
        .expect("the i tile loop");
    assert_eq!(lines[i_loop - 1].trim(), "#pragma omp parallel for", "{c}");
    assert!(c.find(lines[i_loop]).is_some_and(|i| i > pack_b), "{c}");
    assert_eq!(c.matches("#pragma omp parallel for").count(), 1, "{c}");
    assert!(c.find("/* tile of A").is_some_and(|a| a > pack_b), "{c}");
    // --no-hoist keeps one L2 mark with both packs below it.
    let plain = promoted(MM, params, spec, &["--no-hoist"]);
    assert_eq!(plain.matches("Mark \"mem:L2\"").count(), 1, "{plain}");
    let hoisted = promoted(MM, params, spec, &[]);
    assert_eq!(hoisted.matches("Mark \"mem:L2\"").count(), 2, "{hoisted}");
    // The same results, with sizes that do not divide the tiles and with the default
    // policy.
    for p in ["M=64,N=96,K=64", "M=100,N=70,K=33", "M=33,N=70,K=40"] {
        check(MM, p, spec, &[]);
        check(MM, p, spec, &["--no-hoist"]);
    }
    // (A row panel of B, 520 x 520 floats, is over half of L2: the policy keeps an L2
    // level, which the hoist splits.)
    for (prog, p) in [
        (MM, "M=40,N=520,K=520"),
        ("examples/mm2.tc", "NI=40,NJ=520,NK=520,NL=30"),
    ] {
        let o = polyc(&["run", prog, "--param", p, "--check"]);
        let out = format!("{}{}", stdout(&o), stderr(&o));
        assert_code(&o, 0);
        assert!(out.contains("moves above the tile loops"), "{out}");
        assert!(
            out.lines()
                .filter(|l| l.contains("max_abs_err"))
                .all(|l| l.ends_with(" ok")),
            "{out}"
        );
    }
}

/// A register tile's point loops never run in parallel. When the tile loops around a
/// register tile run one iteration each (an 8 x 8 x 8 matmul is one register tile), the
/// parallel search stops at the register mark; it used to mark the point band, whose first
/// loop after the register lowering is the reduction `k` (a data race).
#[test]
fn register_tile_point_loops_are_never_parallel() {
    let one_tile = polyc_ok(&["compile", MM, "--param", "M=8,N=8,K=8"]);
    assert!(one_tile.contains("/* tile of C (8 x 8) */"), "{one_tile}");
    assert!(!one_tile.contains("#pragma omp"), "{one_tile}");
    // 64 x 96 x 64 with the default policy (8 x 32 register tiles, no L2 level): the i
    // tile loop (8 tiles) is the only parallel loop, and it is the outermost loop.
    let c = polyc_ok(&["compile", MM, "--param", "M=64,N=96,K=64"]);
    let lines: Vec<&str> = c.lines().map(str::trim).collect();
    let par = lines
        .iter()
        .position(|l| *l == "#pragma omp parallel for")
        .expect("a parallel loop");
    assert_eq!(
        lines[par + 1],
        "for (int64_t c0 = 0; c0 <= 7; c0 += 1) {",
        "{c}"
    );
    assert_eq!(c.matches("#pragma omp parallel for").count(), 1, "{c}");
    for p in ["M=8,N=8,K=8", "M=64,N=96,K=64", "M=13,N=40,K=9"] {
        let o = polyc(&["run", MM, "--param", p, "--check"]);
        assert_code(&o, 0);
        assert_eq!(
            stdout(&o),
            "C: max_abs_err=0.000e0 max_rel_err=0.000e0 ok\n"
        );
    }
}

/// `explain` on a register level: the tile touches more than the register file holds, but
/// only the promoted register tiles live in it, so no negative "left" is printed.
#[test]
fn explain_register_level_counts_only_register_tiles() {
    let e = polyc_ok(&["explain", MM, "--param", "M=64,N=96,K=64"]);
    assert!(e.starts_with("tile spec:\nS_1: 8@reg, 32@reg\n"), "{e}");
    assert!(
        e.contains(
            "               total 11264 bytes touched per tile; the 2048 bytes of reg hold only the register tiles\n"
        ),
        "{e}"
    );
    assert!(!e.contains("(-"), "{e}");
    assert!(
        e.contains("  #0 C in reg below S_0, S_1: 8 x 32 = 1024 bytes, 129.0 accesses per element, copy out\n"),
        "{e}"
    );
}

/// `C = A·Bᵀ` (`B(j, k)`, a linear layer's weights): the register tiles' vectors run along
/// `j`, which walks `B` across its rows, so the packed tile of `B` is stored `k`-major and
/// the register tile reads it contiguously. Outputs match the interpreter at sizes that
/// do not divide the tiles, with and without an `L2` level chosen by the default policy.
#[test]
fn transposed_operand_packed_with_the_vector_dimension_last() {
    const BT: &str = "examples/matmul_bt.tc";
    let spec = "S_1: 32@L2 4@reg, 64@L2 16@reg, 32@L2\n";
    let dir = tempdir();
    let f = write(dir.path(), "tiles.txt", spec);
    let out = polyc_ok(&[
        "explain",
        BT,
        "--param",
        "M=64,N=96,K=64",
        "--tile-spec",
        &f,
    ]);
    let line = out
        .lines()
        .find(|l| l.contains(" B in L2"))
        .unwrap_or_default();
    assert_eq!(
        line,
        "  #0 B in L2 below S_0, S_1: 64 x 32 = 8192 bytes, 64.0 accesses per element, copy in; dimensions stored in the order 1, 0 (the register tiles' vectors walk the last)"
    );
    let c = polyc_ok(&[BT, "--param", "M=64,N=64,K=64", "--tile-spec", &f]);
    // The copy writes B(j, k) at k * 64 + j; the register tile reads it at the same place.
    assert!(
        c.contains("polyc_tile0[(((32 * c1 + c3) - 32 * c1)) * 64 + (c2 - 0)] = B[c2 * 64 + (32 * c1 + c3)];"),
        "{c}"
    );
    assert!(
        c.contains("polyc_tile0[((k - 32 * c1)) * 64 + (j - 0)]"),
        "{c}"
    );
    // A's tile is read along its rows already and keeps its order.
    assert!(
        !out.contains(" A in L2 below S_0, S_1: 32 x 32 = 4096 bytes, 64.0 accesses per element, copy in; dimensions"),
        "{out}"
    );
    // With a small K the data fits L2 and the default policy gives the register tiles a
    // 64 x 32 L1 level, where B is packed k-major.
    let out = polyc_ok(&["explain", BT, "--param", "M=1024,N=1024,K=64"]);
    assert!(
        out.contains("tile spec:\nS_1: 64@L1 8@reg, 32@L1 32@reg\n"),
        "{out}"
    );
    assert!(
        out.contains(" B in L1 below S_0, S_1: 32 x 64 = 8192 bytes, 64.0 accesses per element, copy in; dimensions stored in the order 1, 0"),
        "{out}"
    );
    for params in ["M=64,N=96,K=64", "M=67,N=45,K=39", "M=300,N=1100,K=200"] {
        check(BT, params, spec, &[]);
        let o = polyc_ok(&["run", BT, "--param", params, "--check"]);
        assert!(o.trim_end().ends_with(" ok"), "{params}: {o}");
    }
}

/// A deeper reduction whose data still fits `L2` (A·Bᵀ at 2048 × 512 × 256): 64 rows with
/// `K` whole do not fit `L1`, so the packing level splits `K` into 64-deep tiles rather
/// than dropping to one register tile of rows, where `B` went unpacked and the register
/// tiles gathered it (3 GFLOP/s). `B` is packed `k`-major and read by 8 register tiles;
/// outputs match the interpreter with partial tiles in every dimension, f32 and f64.
#[test]
fn deep_transposed_reduction_is_split_for_its_pack() {
    const BT: &str = "examples/matmul_bt.tc";
    let out = polyc_ok(&["explain", BT, "--param", "M=2048,N=512,K=256"]);
    assert!(
        out.contains("tile spec:\nS_1: 64@L1 8@reg, 32@L1 32@reg, 64@L1\n"),
        "{out}"
    );
    assert!(
        out.contains(" B in L1 below S_0, S_1: 32 x 64 = 8192 bytes, 64.0 accesses per element, copy in; dimensions stored in the order 1, 0"),
        "{out}"
    );
    let dir = tempdir();
    let text = std::fs::read_to_string(BT).expect("the example");
    let f64_prog = write(dir.path(), "bt64.tc", &text.replace("f32", "f64"));
    for prog in [BT, f64_prog.as_str()] {
        for params in ["M=203,N=77,K=150", "M=1000,N=96,K=300"] {
            let o = polyc_ok(&["run", prog, "--param", params, "--check"]);
            assert!(o.trim_end().ends_with(" ok"), "{prog} {params}: {o}");
        }
    }
    let out = polyc_ok(&["explain", &f64_prog, "--param", "M=1000,N=96,K=300"]);
    assert!(
        out.contains("tile spec:\nS_1: 64@L1 8@reg, 16@L1 16@reg, 64@L1\n"),
        "{out}"
    );
}
