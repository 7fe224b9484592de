//! f32 GEMMs and convolutions tensorised on `--target gemmini-fp32` (DIM 4, f32 scratchpad
//! and accumulator): checked against the reference interpreter (within the f32
//! tolerance) on the float functional model and through the emitted C, with exact
//! instruction counts, `explain`'s counts equal to the model's, and the C compiled for
//! RISC-V against the real header.

mod common;

use common::*;
use std::path::{Path, PathBuf};

/// `polyc run … --target gemmini-fp32 --check --via VIA`; the counters line.
fn check(prog: &str, params: &str, via: &str) -> String {
    gemmini_counters(&run_checked(&[
        "run",
        prog,
        "--param",
        params,
        "--target",
        "gemmini-fp32",
        "--check",
        "--via",
        via,
    ]))
}

const CONV: &str = "def convf(f32(N, H, W, CI) I, f32(KH, KW, CI, CO) Wt) -> (f32(N, H - KH + 1, W - KW + 1, CO) O) {\n  O(n, oh, ow, co) +=! I(n, oh + kh, ow + kw, ci) * Wt(kh, kw, ci, co)\n}\n";

#[test]
fn f32_gemms_and_convolutions_match_the_interpreter_on_both_paths() {
    let dir = tempdir();
    let conv = write(dir.path(), "convf.tc", CONV);
    let cases: Vec<(&str, &str)> = vec![
        ("examples/matmul.tc", "M=37,N=29,K=23"),
        ("examples/matmul.tc", "M=1,N=70,K=5"),
        ("examples/matmul.tc", "M=13,N=3,K=64"),
        (conv.as_str(), "N=1,H=9,W=11,CI=5,CO=7,KH=3,KW=3"),
    ];
    for (prog, params) in cases {
        let model = check(prog, params, "model");
        let c = check(prog, params, "c");
        assert_eq!(
            model, c,
            "{prog} {params}: the two paths counted differently"
        );
        let ex = polyc_ok(&[
            "explain",
            prog,
            "--param",
            params,
            "--target",
            "gemmini-fp32",
        ]);
        assert!(ex.contains(": tensorised as a GEMM"), "{ex}");
        assert!(!ex.contains("runs on the host"), "{ex}");
    }
}

#[test]
fn exact_instruction_counts_of_a_small_f32_gemm() {
    // 9×7×5 on DIM 4, one 12×8×8 tile: 3×2 C blocks (6 mvouts), 2 k blocks; A 3×2 and B
    // 2×2 blocks (10 mvins); per (j, k) block one compute_preloaded and two
    // compute_accumulated (one per row block of A), each after a preload naming its C
    // block (12); strides in bytes (4 per element).
    let line = check("examples/matmul.tc", "M=9,N=7,K=5", "model");
    let ex = polyc_ok(&[
        "explain",
        "examples/matmul.tc",
        "--param",
        "M=9,N=7,K=5",
        "--target",
        "gemmini-fp32",
    ]);
    let insns = ex
        .lines()
        .find(|l| l.trim_start().starts_with("instructions:"))
        .expect("instructions line")
        .trim()
        .to_string();
    assert_eq!(
        insns,
        "instructions: 45 (config_ex 1, config_ld 2, config_st 1, mvin 10, mvout 6, preload 12, compute_preloaded 4, compute_accumulated 8, fence 1)"
    );
    assert!(
        line.contains("45 instructions") && line.contains("accumulator→DRAM 18 rows 252 bytes"),
        "{line}"
    );
    let c = polyc_ok(&[
        "examples/matmul.tc",
        "--param",
        "M=9,N=7,K=5",
        "--target",
        "gemmini-fp32",
    ]);
    for want in [
        "gemmini_extended3_config_ld(20, 1.0f, 0, 0);",
        "gemmini_extended3_config_ld(28, 1.0f, 0, 1);",
        "gemmini_extended_config_st(28, NO_ACTIVATION, 1.0f);",
    ] {
        assert!(c.contains(want), "no `{want}` in:\n{c}");
    }
}

#[test]
fn f32_c_compiles_for_riscv_against_the_real_header() {
    let api = std::env::var_os("POLYC_GEMMINI_API")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("../shared/gemmini-api"));
    let skip = std::env::var("POLYC_SKIP_RISCV").is_ok_and(|v| v == "1");
    if !api.join("include/gemmini.h").is_file() {
        assert!(skip, "the real Gemmini header is not at {}", api.display());
        return;
    }
    let dir = tempdir();
    let c = dir.path().join("k.c");
    let c = c.to_str().expect("path");
    polyc_ok(&[
        "examples/matmul.tc",
        "--param",
        "M=37,N=29,K=23",
        "--target",
        "gemmini-fp32",
        "-o",
        c,
    ]);
    let out = riscv_compile(&api, Path::new(c), &dir.path().join("k.o"));
    match out {
        Ok(o) => assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr)),
        Err(e) => assert!(skip, "could not run riscv64-unknown-elf-gcc: {e}"),
    }
}
