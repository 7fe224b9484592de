//! Requantisation on the Gemmini target: `Q(i, j) = sat_i8(x * scale)` with an f32 scale
//! (a scalar input or a literal) means Gemmini's `ACC_SCALE` (the int32 value times the
//! scale in f32, rounded half to even, saturated to int8). The reference interpreter, the
//! CPU's C, the functional model (`--via model`) and the emitted Gemmini C on the host
//! header (`--via c`) agree bit for bit; the scale is fused into the mvout through
//! `config_st`; wrong uses are located errors.

mod common;

use common::*;
use polyhedral::data::{Buffer, TensorData};
use polyhedral::npy::{read_npy, write_npy};
use std::path::Path;

const REQUANT: &str = "examples/gemmini/gemm_requant.tc";
const REQUANT_LIT: &str = "examples/gemmini/gemm_requant_lit.tc";
const CONV_REQUANT: &str = "examples/gemmini/conv2d_requant.tc";

/// `polyc run PROG --param P --check` with `extra`; asserts every tensor matched and
/// returns standard error.
fn check(prog: &str, params: &str, extra: &[&str]) -> String {
    let mut args = vec!["run", prog, "--param", params, "--check"];
    args.extend_from_slice(extra);
    run_checked(&args)
}

#[test]
fn requantised_gemms_and_convolutions_match_the_interpreter_on_every_path() {
    let cases: &[(&str, &str)] = &[
        (REQUANT, "M=37,N=29,K=23"),
        (REQUANT, "M=53,N=61,K=97"),
        (REQUANT, "M=1,N=70,K=5"),
        (REQUANT_LIT, "M=37,N=29,K=23"),
        (REQUANT_LIT, "M=64,N=48,K=80"),
        (CONV_REQUANT, "N=1,H=14,W=13,CI=19,CO=21,KH=3,KW=3"),
    ];
    for (prog, params) in cases {
        let model = gemmini_counters(&check(
            prog,
            params,
            &["--target", "gemmini", "--via", "model"],
        ));
        let c = gemmini_counters(&check(prog, params, &["--target", "gemmini", "--via", "c"]));
        assert_eq!(
            model, c,
            "{prog} {params}: the two paths counted differently"
        );
        // The CPU's C computes the requantisation as the interpreter does.
        check(prog, params, &[]);
    }
    // So does the GPU's (OpenCL on PoCL), through the same helper.
    check(REQUANT, "M=37,N=29,K=23", &["--target", "gpu"]);
}

/// The inputs of a 2×5×1 GEMM whose products are `1, 3, 5, -3, 127` in row 0 and their
/// negations in row 1, with the given scale, in a fresh directory.
fn tie_inputs(dir: &Path, scale: f32) -> String {
    let w = |name: &str, t: TensorData| write_npy(&dir.join(name), &t).expect("npy");
    w(
        "A.npy",
        TensorData {
            shape: vec![2, 1],
            buf: Buffer::I8(vec![1, -1]),
        },
    );
    w(
        "B.npy",
        TensorData {
            shape: vec![1, 5],
            buf: Buffer::I8(vec![1, 3, 5, -3, 127]),
        },
    );
    w(
        "scale.npy",
        TensorData {
            shape: vec![],
            buf: Buffer::F32(vec![scale]),
        },
    );
    dir.to_str().expect("path").to_string()
}

/// `Q` of `gemm_requant` on the tie inputs, through `extra`.
fn q_of(scale: f32, extra: &[&str]) -> Vec<i8> {
    let dir = tempdir();
    let inputs = dir.path().join("in");
    std::fs::create_dir(&inputs).expect("mkdir");
    let inputs = tie_inputs(&inputs, scale);
    let out = dir.path().join("out");
    let out_s = out.to_str().expect("path").to_string();
    let mut args = vec!["--inputs", inputs.as_str(), "--save-io", out_s.as_str()];
    args.extend_from_slice(extra);
    check(REQUANT, "M=2,N=5,K=1", &args);
    match read_npy(&out.join("Q.npy")).expect("Q.npy").buf {
        Buffer::I8(v) => v,
        other => panic!("Q is {:?}", other.dtype()),
    }
}

#[test]
fn requantisation_rounds_half_to_even_saturates_and_applies_the_relu_after_the_scale() {
    // Q = sat_i8(relu(C * scale)): 0.5, 1.5, 2.5, −1.5, 63.5 round to 0, 2, 2, −2, 64;
    // the ReLU (after the scale, as Gemmini's mvout applies it) clears the negatives;
    // ×3 saturates 381 to 127; a negative scale keeps the negated products' positives.
    let want: &[(f32, [i8; 10])] = &[
        (0.5, [0, 2, 2, 0, 64, 0, 0, 0, 2, 0]),
        (3.0, [3, 9, 15, 0, 127, 0, 0, 0, 9, 0]),
        (-0.5, [0, 0, 0, 2, 0, 0, 2, 2, 0, 64]),
        (0.37, [0, 1, 2, 0, 47, 0, 0, 0, 1, 0]),
    ];
    for (scale, q) in want {
        for extra in [
            &[][..],
            &["--target", "gemmini", "--via", "model"][..],
            &["--target", "gemmini", "--via", "c"][..],
        ] {
            assert_eq!(q_of(*scale, extra), q, "scale {scale} {extra:?}");
        }
    }
}

#[test]
fn exact_instruction_counts_and_the_fused_config_st() {
    // The same instruction program as the plain GEMM at 37×29×23 (default tiles 48×32×32),
    // with int8 rows leaving the accumulator: 37 × 29 bytes.
    let line = gemmini_counters(&check(REQUANT, "M=37,N=29,K=23", &["--target", "gemmini"]));
    assert_eq!(
        line,
        "polyc: ran on Gemmini functional model: 45 instructions (config_ex 1, config_ld 2, \
         config_st 1, mvin 10, mvout 6, preload 12, compute_preloaded 4, \
         compute_accumulated 8, fence 1); DRAM→scratchpad 120 rows 1518 bytes; \
         DRAM→accumulator 0 rows 0 bytes; accumulator→DRAM 74 rows 1073 bytes; \
         array→accumulator 148 rows; MACs 24679"
    );
    for (prog, want) in [
        (REQUANT, "gemmini_extended_config_st(29, RELU, scale);"),
        (
            REQUANT_LIT,
            "gemmini_extended_config_st(29, RELU, 0.0625f);",
        ),
    ] {
        let c = polyc_ok(&[prog, "--param", "M=37,N=29,K=23", "--target", "gemmini"]);
        assert!(c.contains(want), "no `{want}` in the C of {prog}:\n{c}");
        assert_eq!(c.matches("gemmini_extended_mvout(").count(), 1, "{c}");
    }
}

#[test]
fn explain_says_the_scale_is_fused() {
    for (prog, params, want) in [
        (
            REQUANT,
            "M=37,N=29,K=23",
            "    S_2 is fused into the mvout: `C`'s rows leave the accumulator through Gemmini's scaling (scale `scale` fused into config_st, rounded half to even and saturated to int8) and ReLU into `Q`; `C` never reaches DRAM",
        ),
        (
            REQUANT_LIT,
            "M=37,N=29,K=23",
            "    S_2 is fused into the mvout: `C`'s rows leave the accumulator through Gemmini's scaling (scale 0.0625 fused into config_st, rounded half to even and saturated to int8) and ReLU into `Q`; `C` never reaches DRAM",
        ),
        (
            CONV_REQUANT,
            "N=1,H=14,W=13,CI=19,CO=21,KH=3,KW=3",
            "    S_2 is fused into the mvout: `T`'s rows leave the accumulator through Gemmini's scaling (scale 0.37 fused into config_st, rounded half to even and saturated to int8) into `O`; `T` never reaches DRAM",
        ),
    ] {
        let ex = polyc_ok(&["explain", prog, "--param", params, "--target", "gemmini"]);
        assert!(ex.contains(want), "no `{want}` in:\n{ex}");
        assert!(!ex.contains("runs on the host"), "{ex}");
    }
}

#[test]
fn a_relu_before_a_run_time_scale_runs_on_the_host_and_says_why() {
    let dir = tempdir();
    let prog = write(
        dir.path(),
        "host.tc",
        "def host(i8(M, K) A, i8(K, N) B, f32 scale) -> (i8(M, N) Q) {\n  C(i, j) +=! cast<i32>(A(i, k) * B(k, j))\n  Q(i, j) = sat_i8(relu(C(i, j)) * scale)\n}\n",
    );
    let ex = polyc_ok(&[
        "explain",
        &prog,
        "--param",
        "M=37,N=29,K=23",
        "--target",
        "gemmini",
    ]);
    let want = "    S_2: the requantisation of `C` is not fused into its mvout: the ReLU comes before the scale `scale`, whose sign is known only at run time, and Gemmini's mvout applies the ReLU after the scale (the same value only for a scale ≥ 0); write `sat_i8(relu(C(…) * scale))`, which fuses";
    assert!(ex.contains(want), "no `{want}` in:\n{ex}");
    for via in ["model", "c"] {
        check(
            &prog,
            "M=37,N=29,K=23",
            &["--target", "gemmini", "--via", via],
        );
    }
}

#[test]
fn wrong_requantisations_are_located_errors() {
    let dir = tempdir();
    let per_column = write(
        dir.path(),
        "col.tc",
        "def col(i8(M, K) A, i8(K, N) B, f32(N) s) -> (i8(M, N) Q) {\n  C(i, j) +=! cast<i32>(A(i, k) * B(k, j))\n  Q(i, j) = sat_i8(C(i, j) * s(j))\n}\n",
    );
    let e = flat(&polyc_err(&[&per_column, "--param", "M=3,N=4,K=5"]));
    for want in [
        "col.tc:3:30: the scale of `sat_i8(x * scale)` must be one f32 value, and `s` is an f32 tensor",
        "a tensor element, not a scalar",
        "help: declare the scale as a scalar input of the def (`f32 scale`) or write a float literal (`0.37`); requantisation applies one scale to every element, as Gemmini's mvout does",
    ] {
        assert!(e.contains(want), "no `{want}` in:\n{e}");
    }
    let int8 = write(
        dir.path(),
        "int8.tc",
        "def int8(i8(M, N) A, f32 scale) -> (i8(M, N) Q) {\n  Q(i, j) = sat_i8(A(i, j) * scale)\n}\n",
    );
    let e = flat(&polyc_err(&[&int8, "--param", "M=3,N=4"]));
    for want in [
        "int8.tc:2:20: `sat_i8(x * scale)` requantises an i32 value, and `A` is i8",
        "an i8 element",
        "help: scale the i32 result of a product (`C(i, j) += A(i, k) * B(k, j)` with `i32 C`), or widen an integer operand first with `cast<i32>(…)`",
    ] {
        assert!(e.contains(want), "no `{want}` in:\n{e}");
    }
    // Widened first, the same program is fine.
    let widened = write(
        dir.path(),
        "widened.tc",
        "def widened(i8(M, N) A, f32 scale) -> (i8(M, N) Q) {\n  Q(i, j) = sat_i8(cast<i32>(A(i, j)) * scale)\n}\n",
    );
    check(&widened, "M=3,N=4", &[]);
}
