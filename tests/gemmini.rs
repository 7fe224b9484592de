//! The Gemmini target end to end: tensorised GEMMs checked bit for bit against the
//! reference interpreter on the functional model (`--via model`) and through the emitted
//! C on polyc's host header (`--via c`), exact instruction counts, `explain` counts equal
//! to the model's, exact error texts, and the emitted C compiled for RISC-V against the
//! real `gemmini.h`.
//!
//! The RISC-V check needs `riscv64-unknown-elf-gcc` with picolibc (Debian:
//! `gcc-riscv64-unknown-elf`, `picolibc-riscv64-unknown-elf`, installed by
//! scripts/install-deps) and the real header in `$POLYC_GEMMINI_API` (default:
//! `../shared/gemmini-api` next to the repository). Without them the test fails, unless
//! `POLYC_SKIP_RISCV=1`.

mod common;

use common::*;
use std::path::{Path, PathBuf};

/// `polyc run … --check` via `via`; returns the counters line the run printed.
fn check(prog: &str, params: &str, via: &str, extra: &[&str]) -> String {
    let mut args = vec![
        "run", prog, "--param", params, "--target", "gemmini", "--check", "--via", via,
    ];
    args.extend_from_slice(extra);
    gemmini_counters(&run_checked(&args))
}

#[test]
fn gemms_match_the_interpreter_on_both_paths_at_many_shapes() {
    let cases: &[(&str, &str)] = &[
        ("examples/gemmini/gemm.tc", "M=32,N=48,K=64"),
        ("examples/gemmini/gemm.tc", "M=37,N=29,K=23"),
        ("examples/gemmini/gemm.tc", "M=31,N=17,K=13"),
        ("examples/gemmini/gemm.tc", "M=1,N=70,K=5"),
        ("examples/gemmini/gemm.tc", "M=67,N=1,K=3"),
        ("examples/gemmini/gemm.tc", "M=2,N=3,K=150"),
        ("examples/gemmini/gemm_at.tc", "M=37,N=29,K=23"),
        ("examples/gemmini/gemm_bt.tc", "M=19,N=33,K=41"),
        ("examples/gemmini/gemm_atbt.tc", "M=41,N=19,K=37"),
        ("examples/gemmini/gemm_acc.tc", "M=37,N=29,K=23"),
        ("examples/gemmini/gemm_relu_host.tc", "M=23,N=17,K=29"),
        ("examples/gemmini/batch_gemm.tc", "Bt=3,M=20,N=17,K=33"),
    ];
    for (prog, params) in cases {
        let model = check(prog, params, "model", &[]);
        let c = check(prog, params, "c", &[]);
        assert_eq!(
            model, c,
            "{prog} {params}: the two paths counted differently"
        );
    }
}

#[test]
fn exact_instruction_counts_of_a_small_case() {
    // 37×29×23: default tiles 48×32×32, one C tile; A: 3×2 blocks, B: 2×2 blocks.
    let line = check("examples/gemmini/gemm.tc", "M=37,N=29,K=23", "model", &[]);
    assert_eq!(
        line,
        "polyc: ran on Gemmini functional model: 45 instructions (config_ex 1, config_ld 2, \
         config_st 1, mvin 10, mvout 6, preload 12, compute_preloaded 4, \
         compute_accumulated 8, fence 1); DRAM→scratchpad 120 rows 1518 bytes; \
         DRAM→accumulator 0 rows 0 bytes; accumulator→DRAM 74 rows 4292 bytes; \
         array→accumulator 148 rows; MACs 24679"
    );
}

/// The value after `key` in `text` (`key` ends before the number).
fn number_after(text: &str, key: &str) -> u64 {
    let at = text
        .find(key)
        .unwrap_or_else(|| panic!("no `{key}` in:\n{text}"));
    text[at + key.len()..]
        .trim_start()
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no number after `{key}` in:\n{text}"))
}

#[test]
fn explain_counts_equal_the_models() {
    for (prog, params, spec) in [
        ("examples/gemmini/gemm.tc", "M=100,N=90,K=70", None),
        (
            "examples/gemmini/gemm.tc",
            "M=100,N=90,K=70",
            Some("S_1: 32@accumulator, 16@accumulator, 64@scratchpad\n"),
        ),
        ("examples/gemmini/gemm_acc.tc", "M=37,N=29,K=23", None),
        ("examples/gemmini/gemm_atbt.tc", "M=41,N=19,K=37", None),
        (
            "examples/gemmini/batch_gemm.tc",
            "Bt=2,M=20,N=17,K=33",
            None,
        ),
        (
            "examples/gemmini/conv2d.tc",
            "N=2,H=19,W=37,CI=20,CO=17,KH=3,KW=3",
            None,
        ),
        (
            "examples/gemmini/conv2d_pad.tc",
            "N=1,H=20,W=45,CI=17,CO=19,KH=3,KW=3",
            None,
        ),
        (
            "examples/gemmini/conv2d_bias.tc",
            "N=1,H=10,W=19,CI=6,CO=18,KH=3,KW=3",
            None,
        ),
        (
            "examples/gemmini/conv2d_bias_relu_i8.tc",
            "N=1,H=13,W=19,CI=20,CO=17,KH=3,KW=3",
            None,
        ),
        // A tile spec on a convolution: its band members are (oh, ow, co, kh), kw, ci.
        (
            "examples/gemmini/conv2d.tc",
            "N=1,H=19,W=37,CI=40,CO=40,KH=3,KW=3",
            Some("S_1: 1@accumulator, 16@accumulator, 32@accumulator, 1@accumulator, 1@accumulator, 16@scratchpad\n"),
        ),
    ] {
        let dir = tempdir();
        let mut extra = Vec::new();
        if let Some(s) = spec {
            extra.push("--tile-spec".to_string());
            extra.push(write(dir.path(), "t.spec", s));
        }
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let run = check(prog, params, "model", &extra);
        let mut args = vec!["explain", prog, "--param", params, "--target", "gemmini"];
        args.extend_from_slice(&extra);
        let ex = polyc_ok(&args);
        let run_n = |k: &str| number_after(&run, k);
        let ex_n = |k: &str| number_after(&ex, k);
        for kind in [
            "config_ex",
            "config_ld",
            "config_st",
            "mvin",
            "mvout",
            "preload",
            "compute_preloaded",
            "compute_accumulated",
            "fence",
        ] {
            assert_eq!(
                run_n(&format!("{kind} ")),
                ex_n(&format!("{kind} ")),
                "{prog}: {kind}"
            );
        }
        assert_eq!(
            run_n("DRAM→scratchpad"),
            ex_n("DRAM → scratchpad:"),
            "{prog}"
        );
        assert_eq!(
            run_n("DRAM→accumulator"),
            ex_n("DRAM → accumulator:"),
            "{prog}"
        );
        assert_eq!(
            run_n("accumulator→DRAM"),
            ex_n("accumulator → DRAM:"),
            "{prog}"
        );
        for (r, e) in [
            ("DRAM→scratchpad", "DRAM → scratchpad:"),
            ("DRAM→accumulator", "DRAM → accumulator:"),
            ("accumulator→DRAM", "accumulator → DRAM:"),
        ] {
            let rb = number_after(&run[run.find(r).expect("key")..], "rows");
            let eb = number_after(&ex[ex.find(e).expect("key")..], "rows,");
            assert_eq!(rb, eb, "{prog}: bytes {r}");
        }
        assert_eq!(run_n("array→accumulator"), ex_n("array → accumulator:"));
        assert_eq!(run_n("MACs"), ex_n("MACs:"));
        assert!(ex.contains("BACO: latency"), "{ex}");
    }
}

#[test]
fn emitted_code_uses_the_gemmini_api_with_the_cpu_calling_convention() {
    let dir = tempdir();
    let out = dir.path().join("k.c");
    let out = out.to_str().expect("path");
    polyc_ok(&[
        "examples/gemmini/gemm.tc",
        "--param",
        "M=37,N=29,K=23",
        "--target",
        "gemmini",
        "-o",
        out,
    ]);
    let c = std::fs::read_to_string(out).expect("k.c");
    assert!(c.contains(
        "void gemm_i8(const int8_t *restrict A, const int8_t *restrict B, int32_t *restrict C) {"
    ));
    for name in [
        "gemmini_extended_config_ex(WEIGHT_STATIONARY, NO_ACTIVATION, 0, 1, 0, 0);",
        "gemmini_extended_config_st(116, NO_ACTIVATION, 1.0f);",
        "gemmini_extended3_config_ld(23, 1.0f, 0, 0);",
        "gemmini_extended_mvin(",
        "gemmini_extended_mvin2(",
        "gemmini_extended_preload(",
        "gemmini_extended_compute_preloaded(",
        "gemmini_extended_compute_accumulated(",
        "gemmini_extended_mvout(",
        "gemmini_fence();",
        "#include \"include/gemmini.h\"",
    ] {
        assert!(c.contains(name), "missing `{name}` in:\n{c}");
    }
}

#[test]
fn tile_spec_errors_are_located() {
    let dir = tempdir();
    let spec = write(
        dir.path(),
        "t.spec",
        "S_1: 24@accumulator, 16@accumulator, 64@scratchpad\n",
    );
    let e = flat(&polyc_err(&[
        "examples/gemmini/gemm.tc",
        "--param",
        "M=100,N=90,K=70",
        "--target",
        "gemmini",
        "--tile-spec",
        &spec,
    ]));
    assert!(
        e.contains(&format!(
            "{spec}:1:6: S_1: tile size 24 is not a multiple of Gemmini's DIM (16)"
        )),
        "{e}"
    );
    let spec = write(
        dir.path(),
        "u.spec",
        "S_1: 512@accumulator, 512@accumulator, 16@scratchpad\n",
    );
    // Tiling's own capacity check comes first: the located tile-spec error. It counts C
    // (the result) in the accumulator only, and A and B (the operands) in the scratchpad
    // only, as the description's `holds:` says.
    let e = flat(&polyc_err(&[
        "examples/gemmini/gemm.tc",
        "--param",
        "M=512,N=512,K=16",
        "--target",
        "gemmini",
        "--tile-spec",
        &spec,
    ]));
    assert!(
        e.contains(&format!(
            "{spec}:1:1: the accumulator tile of `S_1` needs 1048576 bytes, but accumulator holds 65536 bytes"
        )),
        "{e}"
    );
    let spec = write(
        dir.path(),
        "v.spec",
        "S_1: 64@accumulator, 64@accumulator, 4096@scratchpad\n",
    );
    let e = flat(&polyc_err(&[
        "examples/gemmini/gemm.tc",
        "--param",
        "M=64,N=64,K=4096",
        "--target",
        "gemmini",
        "--tile-spec",
        &spec,
    ]));
    assert!(
        e.contains(&format!(
            "{spec}:1:1: the scratchpad tile of `S_1` needs 524288 bytes, but scratchpad holds 262144 bytes"
        )),
        "{e}"
    );
}

#[test]
fn float_programs_name_the_float_description() {
    let e = flat(&polyc_err(&[
        "examples/matmul.tc",
        "--param",
        "M=8,N=8,K=8",
        "--target",
        "gemmini",
    ]));
    assert!(e.contains("tensor `A` of `matmul` is f32, which target `gemmini` cannot hold (its scratchpad holds i8, its accumulator i32)"), "{e}");
    assert!(
        e.contains("compile for --target gemmini-fp32, whose description holds floats (f32)"),
        "{e}"
    );
    let e = flat(&polyc_err(&[
        "examples/gemmini/gemm.tc",
        "--param",
        "M=8,N=8,K=8",
        "--target",
        "gemmini-fp32",
    ]));
    assert!(
        e.contains("tensor `A` of `gemm_i8` is i8, which target `gemmini-fp32` cannot hold"),
        "{e}"
    );
    assert!(
        e.contains(
            "compile for --target gemmini, whose description holds int8 operands and int32 results"
        ),
        "{e}"
    );
}

#[test]
fn explain_says_why_a_statement_runs_on_the_host() {
    let ex = polyc_ok(&[
        "explain",
        "examples/gemmini/gemm_relu_host.tc",
        "--param",
        "M=23,N=17,K=29",
        "--target",
        "gemmini",
    ]);
    assert!(ex.contains("  S_1: tensorised as a GEMM (C = `C`, A = `A`, B = `B`, i = i, j = j, k = k), weight-stationary"), "{ex}");
    assert!(
        ex.contains("  S_2: runs on the host, not tensorised: not a `+=` accumulation of products (the array runs `C += A·B`; the only element-wise work Gemmini does is its mvout's ReLU, scaling and saturation to int8)\n"),
        "{ex}"
    );
    assert!(
        ex.contains("    S_2: the ReLU of `C` is not fused into its mvout: Gemmini applies activations when it scales accumulator rows to int8, and full int32 rows bypass them"),
        "{ex}"
    );
}

fn skip_riscv() -> bool {
    std::env::var("POLYC_SKIP_RISCV").is_ok_and(|v| v == "1")
}

#[test]
fn emitted_c_compiles_for_riscv_against_the_real_header() {
    let api = std::env::var_os("POLYC_GEMMINI_API")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("../shared/gemmini-api"));
    if !api.join("include/gemmini.h").is_file() {
        if skip_riscv() {
            eprintln!("POLYC_SKIP_RISCV=1: skipping the RISC-V compile check");
            return;
        }
        panic!(
            "the real Gemmini header is not at {}: set POLYC_GEMMINI_API to the directory \
             holding include/gemmini.h, or POLYC_SKIP_RISCV=1 to skip this check",
            api.join("include/gemmini.h").display()
        );
    }
    let dir = tempdir();
    for (prog, params) in [
        ("examples/gemmini/gemm.tc", "M=37,N=29,K=23"),
        ("examples/gemmini/gemm_at.tc", "M=37,N=29,K=23"),
        ("examples/gemmini/gemm_atbt.tc", "M=37,N=29,K=23"),
        ("examples/gemmini/gemm_acc.tc", "M=37,N=29,K=23"),
        ("examples/gemmini/gemm_relu_host.tc", "M=37,N=29,K=23"),
        ("examples/gemmini/batch_gemm.tc", "Bt=2,M=37,N=29,K=23"),
        (
            "examples/gemmini/conv2d.tc",
            "N=2,H=9,W=11,CI=5,CO=7,KH=3,KW=3",
        ),
        (
            "examples/gemmini/conv2d_pad.tc",
            "N=1,H=9,W=11,CI=5,CO=7,KH=3,KW=3",
        ),
        (
            "examples/gemmini/conv2d_chw.tc",
            "CI=3,H=13,W=17,CO=20,KH=3,KW=3",
        ),
        (
            "examples/gemmini/depthwise_conv.tc",
            "C=3,H=12,W=21,KH=3,KW=3",
        ),
        (
            "examples/gemmini/depthwise_nhwc.tc",
            "N=1,H=10,W=12,C=20,KH=3,KW=3",
        ),
        ("examples/gemmini/conv_chain.tc", "H=20,W=35,KH=3,KW=3"),
        ("examples/gemmini/gemm_bias.tc", "M=37,N=29,K=23"),
        (
            "examples/gemmini/conv2d_bias.tc",
            "N=1,H=10,W=19,CI=6,CO=18,KH=3,KW=3",
        ),
        ("examples/gemmini/gemm_bias_relu_i8.tc", "M=37,N=29,K=23"),
        (
            "examples/gemmini/conv2d_bias_relu_i8.tc",
            "N=1,H=13,W=19,CI=20,CO=17,KH=3,KW=3",
        ),
        ("examples/gemmini/gemm_requant.tc", "M=37,N=29,K=23"),
        ("examples/gemmini/gemm_requant_lit.tc", "M=37,N=29,K=23"),
        (
            "examples/gemmini/conv2d_requant.tc",
            "N=1,H=14,W=13,CI=19,CO=21,KH=3,KW=3",
        ),
    ] {
        let c = dir.path().join("k.c");
        let c = c.to_str().expect("path");
        polyc_ok(&[prog, "--param", params, "--target", "gemmini", "-o", c]);
        let obj = dir.path().join("k.o");
        let cc = "riscv64-unknown-elf-gcc";
        let out = riscv_compile(&api, Path::new(c), &obj);
        let out = match out {
            Ok(o) => o,
            Err(e) => {
                if skip_riscv() {
                    eprintln!("POLYC_SKIP_RISCV=1: skipping the RISC-V compile check ({e})");
                    return;
                }
                panic!(
                    "could not run `{cc}` ({e}): install Debian's gcc-riscv64-unknown-elf and \
                     picolibc-riscv64-unknown-elf (scripts/install-deps), or set POLYC_SKIP_RISCV=1"
                );
            }
        };
        assert!(
            out.status.success(),
            "{cc} failed on the C of {prog}:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(std::fs::metadata(&obj).map(|m| m.len()).unwrap_or(0) > 0);
    }
}

#[test]
fn via_is_checked_against_the_target() {
    let e = flat(&polyc_err(&[
        "run",
        "examples/gemmini/gemm.tc",
        "--param",
        "M=9,N=7,K=5",
        "--target",
        "gemmini",
        "--via",
        "x",
    ]));
    assert!(
        e.contains("× --via x: target `gemmini` cannot run a kernel via `x` help: target `gemmini` runs kernels via: model, c"),
        "{e}"
    );
    let e = flat(&polyc_err(&[
        "run",
        "examples/matmul.tc",
        "--param",
        "M=9,N=7,K=5",
        "--via",
        "c",
    ]));
    assert!(
        e.contains("× --via c: target `cpu` cannot run a kernel via `c` help: target `cpu` runs kernels one way only; drop --via"),
        "{e}"
    );
}

#[test]
fn float_programs_run_on_the_float_description_through_the_host_header() {
    let o = polyc(&[
        "run",
        "examples/matmul.tc",
        "--param",
        "M=9,N=7,K=5",
        "--target",
        "gemmini-fp32",
        "--check",
        "--via",
        "c",
    ]);
    assert_code(&o, 0);
    assert!(stdout(&o).contains("C: max_abs_err="), "{}", stdout(&o));
    assert!(stdout(&o).trim_end().ends_with(" ok"), "{}", stdout(&o));
}

#[test]
fn explain_gives_the_reason_a_contraction_is_not_tensorised() {
    let dir = tempdir();
    let cases = [
        (
            "def dw(i8(N, H, W, C) I, i8(KH, KW, C) F) -> (i32(N, H - KH + 1, W - KW + 1, C) O) {\n  O(n, h, w, c) +=! I(n, h + kh, w + kw, c) * F(kh, kw, c)\n}\n",
            "N=1,H=8,W=9,C=5,KH=3,KW=3",
            "  S_1: runs on the host, not tensorised: `c` indexes the result and both operands (`I`, `F`): nothing is reduced across it (a depthwise convolution when it is the channel), so it can be neither the array's rows nor its columns, and no other assignment reads contiguous DRAM rows; mapping it onto the array would need a diagonal weight block laid out in DRAM (a copy)",
        ),
        (
            "def strided(i8(M, K) A, i8(K, N) B) -> (i32(M, N) C) {\n  C(i, j) +=! A(i, 2 * k) * B(2 * k, 2 * j) where k in 0:floordiv(K, 2), j in 0:floordiv(N, 2)\n}\n",
            "M=20,N=20,K=20",
            "  S_1: runs on the host, not tensorised: no reduction iterator has stride 1 in `A` or `B`, and no row iterator lets an operand be read transposed: the array's operand rows must be contiguous in DRAM",
        ),
        (
            "def tri(i8(N, N) A, i8(N, N) B) -> (i32(N, N) C) {\n  C(i, j) +=! A(i, k) * B(k, j) where k in 0:i\n}\n",
            "N=20",
            "  S_1: runs on the host, not tensorised: the range of `k` depends on another iterator (not a box)",
        ),
        (
            "def wide(i32(M, K) A, i8(K, N) B) -> (i32(M, N) C) {\n  C(i, j) +=! A(i, k) * B(k, j)\n}\n",
            "M=20,N=20,K=20",
            "  S_1: runs on the host, not tensorised: operand `A` is i32, but the scratchpad holds i8",
        ),
    ];
    for (k, (src, params, want)) in cases.iter().enumerate() {
        let prog = write(dir.path(), &format!("p{k}.tc"), src);
        let ex = polyc_ok(&["explain", &prog, "--param", params, "--target", "gemmini"]);
        assert!(ex.contains(want), "no `{want}` in:\n{ex}");
        // They still run, on the host, through both paths.
        for via in ["model", "c"] {
            let o = polyc(&[
                "run", &prog, "--param", params, "--target", "gemmini", "--check", "--via", via,
            ]);
            assert_code(&o, 0);
            assert!(stdout(&o).trim_end().ends_with(" ok"), "{}", stdout(&o));
        }
    }
}

#[test]
fn many_small_tiles_from_a_spec_run_exactly() {
    // 16×32×16 tiles on 50×40×70: 4 × 2 C tiles, 5 reduction steps alternating banks.
    let dir = tempdir();
    let spec = write(
        dir.path(),
        "t.spec",
        "S_1: 16@accumulator, 32@accumulator, 16@scratchpad\n",
    );
    for prog in [
        "examples/gemmini/gemm.tc",
        "examples/gemmini/gemm_at.tc",
        "examples/gemmini/gemm_bt.tc",
        "examples/gemmini/gemm_atbt.tc",
        "examples/gemmini/gemm_acc.tc",
    ] {
        let model = check(prog, "M=50,N=40,K=70", "model", &["--tile-spec", &spec]);
        let c = check(prog, "M=50,N=40,K=70", "c", &["--tile-spec", &spec]);
        assert_eq!(model, c, "{prog}");
    }
    let ex = polyc_ok(&[
        "explain",
        "examples/gemmini/gemm.tc",
        "--param",
        "M=50,N=40,K=70",
        "--target",
        "gemmini",
        "--tile-spec",
        &spec,
    ]);
    assert!(
        ex.contains("    tiles 16×32×16 (i×j×k, from the tile spec); scratchpad: A 16 rows, B 32 rows, double-buffered across banks; accumulator: C 32 rows, double-buffered across banks"),
        "{ex}"
    );
}

/// The EDP in a Gemmini explain report.
fn edp(report: &str) -> f64 {
    let line = report
        .lines()
        .find(|l| l.contains("BACO: latency"))
        .unwrap_or_else(|| panic!("no BACO line: {report}"));
    line.rsplit("EDP ").next().unwrap().trim().parse().unwrap()
}

/// Search entries are ranked by the model's EDP: the picked point has the smallest EDP of
/// all eight points, each compiled on its own.
#[test]
fn search_entries_are_ranked_by_edp() {
    let dir = tempdir();
    let prog = "examples/gemmini/gemm.tc";
    let params = "M=37,N=29,K=70";
    let spec = write(
        dir.path(),
        "s.tiles",
        "S_1: {16,32}@accumulator, {16,32}@accumulator, {16,64}@scratchpad\n",
    );
    let out = polyc_ok(&[
        "explain",
        prog,
        "--param",
        params,
        "--target",
        "gemmini",
        "--tile-spec",
        &spec,
    ]);
    let note = out
        .lines()
        .find(|l| l.starts_with("search: "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        note.starts_with(
            "search: 8 candidates, 8 legal (model, exhaustive), ranked by the target's EDP (8 points compiled; best EDP "
        ),
        "{note}"
    );
    let picked = edp(&out);
    let mut all = Vec::new();
    for i in [16, 32] {
        for j in [16, 32] {
            for k in [16, 64] {
                let one = write(
                    dir.path(),
                    "one.tiles",
                    &format!("S_1: {i}@accumulator, {j}@accumulator, {k}@scratchpad\n"),
                );
                let r = polyc_ok(&[
                    "explain",
                    prog,
                    "--param",
                    params,
                    "--target",
                    "gemmini",
                    "--tile-spec",
                    &one,
                ]);
                all.push(edp(&r));
            }
        }
    }
    let min = all.iter().cloned().fold(f64::INFINITY, f64::min);
    assert_eq!(picked, min, "{all:?}");
    assert!(all.iter().any(|&e| e > min), "the points differ: {all:?}");
}

#[test]
fn convolutions_match_the_interpreter_on_both_paths() {
    let dir = tempdir();
    let conv1d = write(
        dir.path(),
        "conv1d.tc",
        "def conv1d(i8(N) X, i8(K) W) -> (i32(M) Y) {\n  Y(i) +=! X(i + k) * W(k) where i in 0:M, k in 0:K\n}\n",
    );
    let gemv = write(
        dir.path(),
        "gemv.tc",
        "def gemv(i8(M, K) A, i8(K) x) -> (i32(M) y) {\n  y(i) +=! A(i, k) * x(k)\n}\n",
    );
    let same = write(
        dir.path(),
        "same.tc",
        "def same(i8(N, H, W, CI) I, i8(KH, KW, CI, CO) Wt) -> (i32(N, H, W, CO) O) {\n  O(n, oh, ow, co) +=! I(n, oh + kh - 1, ow + kw - 1, ci) * Wt(kh, kw, ci, co) where kh in 0:KH, kh in 1 - oh : H + 1 - oh, kw in 0:KW, kw in 1 - ow : W + 1 - ow\n}\n",
    );
    let cases: Vec<(&str, &str)> = vec![
        // NHWC, stride 2: odd sizes, channels above DIM, a tiny one.
        (
            "examples/gemmini/conv2d.tc",
            "N=2,H=19,W=37,CI=20,CO=17,KH=3,KW=3",
        ),
        (
            "examples/gemmini/conv2d.tc",
            "N=1,H=40,W=35,CI=33,CO=40,KH=3,KW=2",
        ),
        (
            "examples/gemmini/conv2d.tc",
            "N=1,H=5,W=5,CI=3,CO=4,KH=3,KW=3",
        ),
        // Padding 1, stride 2 and stride 1 ("same").
        (
            "examples/gemmini/conv2d_pad.tc",
            "N=2,H=20,W=45,CI=17,CO=19,KH=3,KW=3",
        ),
        (
            "examples/gemmini/conv2d_pad.tc",
            "N=1,H=8,W=8,CI=16,CO=16,KH=5,KW=5",
        ),
        (
            "examples/gemmini/conv2d_pad.tc",
            "N=1,H=2,W=3,CI=1,CO=1,KH=3,KW=3",
        ),
        (&same, "N=1,H=19,W=37,CI=20,CO=17,KH=3,KW=3"),
        // CHW layouts, depthwise, the conv chain's conv, a 1-D convolution and a GEMV.
        (
            "examples/gemmini/conv2d_chw.tc",
            "CI=3,H=13,W=17,CO=20,KH=3,KW=3",
        ),
        (
            "examples/gemmini/depthwise_conv.tc",
            "C=3,H=12,W=21,KH=3,KW=3",
        ),
        ("examples/gemmini/conv_chain.tc", "H=20,W=35,KH=3,KW=3"),
        (&conv1d, "N=40,K=3,M=38"),
        (&gemv, "M=37,K=23"),
        // Bias preloaded into the accumulator; ReLU and saturation to int8 on mvout.
        ("examples/gemmini/gemm_bias.tc", "M=37,N=29,K=23"),
        ("examples/gemmini/gemm_bias_relu_i8.tc", "M=37,N=29,K=23"),
        ("examples/gemmini/gemm_bias_relu_i8.tc", "M=70,N=17,K=150"),
        (
            "examples/gemmini/conv2d_bias_relu_i8.tc",
            "N=1,H=13,W=19,CI=20,CO=17,KH=3,KW=3",
        ),
        (
            "examples/gemmini/conv2d_bias.tc",
            "N=1,H=10,W=19,CI=6,CO=18,KH=3,KW=3",
        ),
    ];
    for (prog, params) in cases {
        let ex = polyc_ok(&["explain", prog, "--param", params, "--target", "gemmini"]);
        assert!(
            ex.contains("tensorised as a GEMM"),
            "{prog} {params}:\n{ex}"
        );
        let model = check(prog, params, "model", &[]);
        let c = check(prog, params, "c", &[]);
        assert_eq!(
            model, c,
            "{prog} {params}: the two paths counted differently"
        );
    }
}

#[test]
fn exact_instruction_counts_of_small_convolutions() {
    // Stride 2, 5×5 input, 3×3 filter: 2×2 outputs; per (n, oh) point 9 filter offsets,
    // each one mvin of 2 input rows (3 channels), one of 3 weight rows (4 channels), one
    // preload and one compute.
    let line = check(
        "examples/gemmini/conv2d.tc",
        "N=1,H=5,W=5,CI=3,CO=4,KH=3,KW=3",
        "model",
        &[],
    );
    assert_eq!(
        line,
        "polyc: ran on Gemmini functional model: 79 instructions (config_ex 1, config_ld 2, \
         config_st 1, mvin 36, mvout 2, preload 18, compute_preloaded 18, \
         compute_accumulated 0, fence 1); DRAM→scratchpad 90 rows 324 bytes; \
         DRAM→accumulator 0 rows 0 bytes; accumulator→DRAM 4 rows 64 bytes; \
         array→accumulator 36 rows; MACs 432"
    );
    // Padding 1, stride 2, 3×3 input: per (oh, kh) reached (2 × 2), the 3 column offsets
    // reach 1, 2 and 1 output columns; the two C tiles start from zeros (mvin3 from
    // address 0, no bytes).
    let line = check(
        "examples/gemmini/conv2d_pad.tc",
        "N=1,H=3,W=3,CI=3,CO=4,KH=3,KW=3",
        "model",
        &[],
    );
    assert_eq!(
        line,
        "polyc: ran on Gemmini functional model: 58 instructions (config_ex 1, config_ld 3, \
         config_st 1, mvin 26, mvout 2, preload 12, compute_preloaded 12, \
         compute_accumulated 0, fence 1); DRAM→scratchpad 52 rows 192 bytes; \
         DRAM→accumulator 4 rows 0 bytes; accumulator→DRAM 4 rows 64 bytes; \
         array→accumulator 16 rows; MACs 192"
    );
}

#[test]
fn explain_describes_convolutions() {
    let ex = polyc_ok(&[
        "explain",
        "examples/gemmini/conv2d_pad.tc",
        "--param",
        "N=1,H=9,W=11,CI=5,CO=7,KH=3,KW=3",
        "--target",
        "gemmini",
    ]);
    for want in [
        "  S_1: tensorised as a GEMM (C = `O`, A = `I`, B = `Wt`, i = ow, j = co, k = ci, batch n, oh, filter offsets kh, kw (implicit im2col: per offset, strided `mvin`s of `I` rows and `Wt` rows, accumulated)), weight-stationary",
        "    padding: the ranges of `kh`, `kw` depend on the output position, so per filter offset each block's `mvin` and compute cover only the rows it reaches (nothing is padded in DRAM)",
        "    S_0 (the init of `O`) is folded: the accumulator starts from zeros (mvin3 from DRAM address 0), since the first filter offset may not reach every row",
    ] {
        assert!(ex.contains(want), "no `{want}` in:\n{ex}");
    }
    let ex = polyc_ok(&[
        "explain",
        "examples/gemmini/gemm_bias.tc",
        "--param",
        "M=37,N=29,K=23",
        "--target",
        "gemmini",
    ]);
    let want = "    S_0 is folded: `bias` is moved into the accumulator (mvin3, row stride 0: one row broadcast to every row) before the reduction";
    assert!(ex.contains(want), "no `{want}` in:\n{ex}");
    assert!(!ex.contains("S_0: runs on the host"), "{ex}");
}

#[test]
fn bias_relu_and_saturation_run_as_one_kernel() {
    let params = "M=37,N=29,K=23";
    let ex = polyc_ok(&[
        "explain",
        "examples/gemmini/gemm_bias_relu_i8.tc",
        "--param",
        params,
        "--target",
        "gemmini",
    ]);
    for want in [
        "    S_2 is fused into the mvout: `C`'s rows leave the accumulator through Gemmini's scaling (identity scale, rounded half to even and saturated to int8) and ReLU into `Q`; `C` never reaches DRAM",
        "    S_0 is folded: `bias` is moved into the accumulator (mvin3, row stride 0: one row broadcast to every row) before the reduction",
    ] {
        assert!(ex.contains(want), "no `{want}` in:\n{ex}");
    }
    assert!(!ex.contains("runs on the host"), "{ex}");
    // One int8 byte per element of Q leaves the accumulator (37 × 29), and the store is
    // configured with the ReLU.
    let line = check(
        "examples/gemmini/gemm_bias_relu_i8.tc",
        params,
        "model",
        &[],
    );
    assert!(
        line.contains("accumulator→DRAM 74 rows 1073 bytes"),
        "{line}"
    );
    let dir = tempdir();
    let c = dir.path().join("k.c");
    let c = c.to_str().expect("path");
    polyc_ok(&[
        "examples/gemmini/gemm_bias_relu_i8.tc",
        "--param",
        params,
        "--target",
        "gemmini",
        "-o",
        c,
    ]);
    let text = std::fs::read_to_string(c).expect("C");
    assert!(
        text.contains("gemmini_extended_config_st(29, RELU, 1.0f);"),
        "{text}"
    );
    // The CPU's C computes sat_i8 as the interpreter does.
    let o = polyc(&[
        "run",
        "examples/gemmini/gemm_bias_relu_i8.tc",
        "--param",
        params,
        "--check",
    ]);
    assert_code(&o, 0);
    assert!(stdout(&o).trim_end().ends_with(" ok"), "{}", stdout(&o));
}

#[test]
fn sat_i8_is_only_the_whole_right_side_of_an_int8_statement() {
    let dir = tempdir();
    let prog = write(
        dir.path(),
        "bad.tc",
        "def bad(i32(N) X) -> (i32(N) Y) {\n  Y(i) = sat_i8(X(i)) + 1\n}\n",
    );
    let e = flat(&polyc_err(&[&prog, "--param", "N=3"]));
    assert!(
        e.contains("bad.tc:2:10: `sat_i8` saturates the value stored into an i8 tensor"),
        "{e}"
    );
    assert!(
        e.contains("not the whole right side of an i8 statement"),
        "{e}"
    );
}

/// `--policy gemmini-default` is Gemmini's own tiled_matmul_auto rule (the baseline);
/// polyc's default is an EDP search from its tiles, kept double-buffered, so its EDP is
/// never larger. A target without the policy is an exact error that lists its policies.
#[test]
fn policies_baseline_and_default() {
    let prog = "examples/gemmini/gemm.tc";
    let tiles = |out: &str| -> String {
        out.lines()
            .find(|l| l.trim_start().starts_with("tiles "))
            .unwrap_or_else(|| panic!("no tiles line: {out}"))
            .trim()
            .to_string()
    };
    for params in ["M=128,N=128,K=64", "M=512,N=768,K=768", "M=37,N=29,K=70"] {
        let base = polyc_ok(&[
            "explain",
            prog,
            "--param",
            params,
            "--target",
            "gemmini",
            "--policy",
            "gemmini-default",
        ]);
        let def = polyc_ok(&["explain", prog, "--param", params, "--target", "gemmini"]);
        assert!(
            tiles(&base)
                .contains("from Gemmini's tiled_matmul_auto rule (--policy gemmini-default)"),
            "{base}"
        );
        assert!(
            tiles(&def)
                .contains("from the default policy (EDP search from tiled_matmul_auto's tiles)")
                && tiles(&def).contains("double-buffered across banks; accumulator: C"),
            "{def}"
        );
        assert!(edp(&def) <= edp(&base), "{params}: {def}\n{base}");
    }
    // The baseline's 512 x 768 x 768 tiles, by its rule: I and J grow by DIM in turn while
    // the double-buffered tiles fit (A, B in half a scratchpad bank each, C in one
    // accumulator bank), then K.
    let base = polyc_ok(&[
        "explain",
        prog,
        "--param",
        "M=512,N=768,K=768",
        "--target",
        "gemmini",
        "--policy",
        "gemmini-default",
    ]);
    assert!(tiles(&base).starts_with("tiles 96×80×672 (i×j×k"), "{base}");
    let err = polyc_err(&[
        "explain",
        prog,
        "--param",
        "M=8,N=8,K=8",
        "--policy",
        "gemmini-default",
    ]);
    assert_eq!(
        err.trim_end(),
        "  × --policy gemmini-default: target `cpu` has no tiling policy of that name\n  help: target `cpu` has: `default` (polyc's tiling policy for this target)"
    );
}
