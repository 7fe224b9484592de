//! Dynamic-shape kernels (issue 14, point 4): `--dynamic T=LO..HI` / `T={…}` compiles one
//! kernel whose partial tiles along `T` are composed from micro-kernels; `explain` shows
//! the composition, the kernel passes `--check` at every size of its range, and sizes
//! outside it are errors.

mod common;
use common::*;

/// An error text with the line wrapping of the report undone.
fn flat(s: &str) -> String {
    s.replace('│', " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The micro-kernel section of `polyc explain`.
fn micro_kernels(args: &[&str]) -> String {
    let mut all = vec!["explain"];
    all.extend_from_slice(args);
    let out = polyc_ok(&all);
    let at = out.find("dynamic sizes:").expect("a dynamic section");
    out[at..].to_string()
}

#[test]
fn explain_lists_micro_kernels_and_compositions() {
    let got = micro_kernels(&[
        "examples/dense.tc",
        "--param",
        "N=64,K=16",
        "--dynamic",
        "T={3,13,21}",
    ]);
    let want = "\
dynamic sizes: T={3, 13, 21}
micro-kernels of S_0, S_1 along T = {3, 13, 21} (tiles of 8 rows × 32 columns; model: 16 elements per vector, 32 registers, FMA latency 4, 2 FMA ports):
  rows  accumulators  cycles/step  efficiency
     8            16            8        100%
     5            10            5        100%
     3             6            4         75%
     1             2            4         25%
  composition at sample sizes (modelled cycles per reduction step, composed / padded to full tiles):
  T=3: 3 = 3  (5 / 9)
  T=13: 13 = 8 + 5  (15 / 18)
  T=21: 21 = 2×8 + 5  (24 / 27)
";
    assert_eq!(got, want);
}

#[test]
fn the_range_picks_its_own_set() {
    let got = micro_kernels(&[
        "examples/dense.tc",
        "--param",
        "N=64,K=16",
        "--dynamic",
        "T=1..128",
    ]);
    assert!(
        got.contains("  T=43: 43 = 5×8 + 2 + 1  (55 / 54)\n"),
        "{got}"
    );
    assert!(got.contains("  T=53: 53 = 6×8 + 5  (60 / 63)\n"), "{got}");
}

#[test]
fn the_kernel_composes_partial_tiles_and_checks_its_range() {
    let c = polyc_ok(&[
        "examples/dense.tc",
        "--param",
        "N=64,K=16",
        "--dynamic",
        "T=1..128",
    ]);
    assert!(
        c.contains("  if (!(T >= 1 && T <= 128)) { /* T = 1..128: the sizes this kernel was compiled for */\n    polyc_status = -2;\n    return;\n  }\n"),
        "{c}"
    );
    // One loop per micro-kernel size, each body with constant row counts.
    for m in [8, 5, 2, 1] {
        assert!(
            c.contains(&format!("+= {m}) {{")),
            "no micro-kernel of {m} rows:\n{c}"
        );
    }
}

/// `--run-param T=v` for every `v`.
fn run_at(prog: &str, params: &str, dynamic: &str, sizes: &[i64]) -> String {
    let name = dynamic.split('=').next().unwrap_or("T");
    let flags: Vec<String> = sizes.iter().map(|v| format!("{name}={v}")).collect();
    let mut args = vec![
        "run",
        prog,
        "--param",
        params,
        "--dynamic",
        dynamic,
        "--check",
    ];
    for f in &flags {
        args.push("--run-param");
        args.push(f);
    }
    polyc_ok(&args)
}

#[test]
fn dense_passes_check_at_every_size_of_its_range() {
    let sizes: Vec<i64> = (1..=64).collect();
    let out = run_at("examples/dense.tc", "N=48,K=16", "T=1..64", &sizes);
    assert_eq!(out.matches("  Y: ").count(), 64, "{out}");
    assert_eq!(out.matches(" ok\n").count(), 64, "{out}");
}

#[test]
fn batched_matmul_and_softmax_pass_check_at_the_samples() {
    let samples = [1, 5, 24, 43, 53, 62, 81, 100, 119, 128];
    for (prog, params, dynamic) in [
        ("examples/batch_matmul.tc", "BS=2,N=40,K=24", "M=1..128"),
        ("examples/softmax.tc", "N=96", "R=1..128"),
        ("examples/softmax.tc", "R=9", "N=1..128"),
    ] {
        let out = run_at(prog, params, dynamic, &samples);
        assert_eq!(
            out.matches(" ok\n").count(),
            samples.len(),
            "{prog} {dynamic}:\n{out}"
        );
    }
}

#[test]
fn sets_run_at_their_values_only() {
    let out = run_at(
        "examples/dense.tc",
        "N=64,K=16",
        "T={3,13,21}",
        &[3, 13, 21],
    );
    assert_eq!(out.matches(" ok\n").count(), 3, "{out}");
    let err = polyc_err(&[
        "run",
        "examples/dense.tc",
        "--param",
        "N=64,K=16",
        "--dynamic",
        "T={3,13,21}",
        "--run-param",
        "T=4",
    ]);
    assert!(
        flat(&err).contains("--run-param: T=4 is outside the sizes the kernel was compiled for (--dynamic T={3, 13, 21}) help: run at a size in {3, 13, 21}, or compile with a --dynamic that includes 4"),
        "{err}"
    );
}

#[test]
fn out_of_range_run_sizes_are_errors() {
    let err = polyc_err(&[
        "run",
        "examples/dense.tc",
        "--param",
        "N=64,K=16",
        "--dynamic",
        "T=1..128",
        "--run-param",
        "T=129",
    ]);
    assert!(
        flat(&err).contains("--run-param: T=129 is outside the sizes the kernel was compiled for (--dynamic T=1..128) help: run at a size in 1..128, or compile with a --dynamic that includes 129"),
        "{err}"
    );
}

#[test]
fn bad_dynamic_flags_are_errors() {
    for (flag, want) in [
        ("T", "--dynamic: `T` is not of the form NAME=LO..HI or NAME={V,...}"),
        ("T=1-128", "--dynamic: `1-128` in `T=1-128` is neither a range LO..HI nor a set {V,...}"),
        ("T=128..1", "--dynamic: the range `128..1` in `T=128..1` is empty help: write the smaller bound first, e.g. --dynamic T=1..128"),
        ("T=0..8", "--dynamic: `0` in `T=0..8` is not a positive size"),
        ("T=1..x", "--dynamic: `x` in `T=1..x` is not an integer"),
        ("T={}", "--dynamic: the set in `T={}` is empty"),
        ("T={1,2", "--dynamic: the set in `T={1,2` has no closing `}`"),
        ("Q=1..8", "--dynamic: `Q` is not a size of `dense` help: the sizes of `dense` are: T, K, N"),
    ] {
        let err = polyc_err(&["examples/dense.tc", "--dynamic", flag]);
        assert!(flat(&err).contains(want), "{flag}: {err}");
    }
    let err = polyc_err(&["examples/dense.tc", "--param", "T=4", "--dynamic", "T=1..8"]);
    assert!(
        flat(&err).contains("--dynamic: `T` is also bound to 4 with --param help: drop `T` from --param to keep it dynamic"),
        "{err}"
    );
    let err = polyc_err(&[
        "examples/dense.tc",
        "--dynamic",
        "T=1..8",
        "--dynamic",
        "T=2..9",
    ]);
    assert!(
        flat(&err).contains("--dynamic: `T` is given twice"),
        "{err}"
    );
}

#[test]
fn targets_without_a_micro_kernel_model_say_dynamic_is_not_supported_yet() {
    let err = polyc_err(&[
        "examples/dense.tc",
        "--dynamic",
        "T=1..8",
        "--target",
        "gemmini",
    ]);
    assert!(
        flat(&err).contains(
            "--dynamic is not supported yet on target `gemmini` (only on CPU and GPU targets)"
        ),
        "{err}"
    );
}

/// On the GPU target (OpenCL on PoCL), one `--dynamic` kernel runs and matches the
/// reference interpreter at sizes that end in full thread tiles, in every remainder, and
/// at the range's ends; the thread's partial register tile is composed of micro-kernels.
#[test]
fn gpu_dynamic_kernel_checks_at_every_remainder() {
    let out = polyc_ok(&[
        "run",
        "examples/dense.tc",
        "--target",
        "gpu",
        "--param",
        "N=64,K=24",
        "--dynamic",
        "T=1..128",
        "--check",
        "--run-param",
        "T=1",
        "--run-param",
        "T=43",
        "--run-param",
        "T=53",
        "--run-param",
        "T=62",
        "--run-param",
        "T=64",
        "--run-param",
        "T=127",
        "--run-param",
        "T=128",
    ]);
    assert_eq!(
        out.matches("Y: max_abs_err=0.000e0 max_rel_err=0.000e0 ok")
            .count(),
        7,
        "{out}"
    );
    let src = polyc_ok(&[
        "examples/dense.tc",
        "--target",
        "gpu",
        "--emit",
        "opencl",
        "--param",
        "N=64,K=24",
        "--dynamic",
        "T=1..128",
    ]);
    assert!(
        src.contains("const int64_t polyc_mk0_rows = polyc_min(T - 64 * c0 - 4 * c3 - 1, 3) + 1;"),
        "{src}"
    );
    let err = polyc_err(&[
        "run",
        "examples/dense.tc",
        "--target",
        "gpu",
        "--param",
        "N=64,K=24",
        "--dynamic",
        "T=1..128",
        "--run-param",
        "T=129",
    ]);
    assert!(
        flat(&err).contains("--run-param: T=129 is outside the sizes the kernel was compiled for (--dynamic T=1..128)"),
        "{err}"
    );
}

#[test]
fn gpu_explain_lists_the_thread_micro_kernels() {
    let out = polyc_ok(&[
        "explain",
        "examples/dense.tc",
        "--target",
        "gpu",
        "--param",
        "N=256,K=96",
        "--dynamic",
        "T=1..128",
    ]);
    let start = out.find("micro-kernels of").expect("the micro-kernels");
    let section: Vec<&str> = out[start..].lines().take(9).collect();
    assert_eq!(
        section.join("\n"),
        "micro-kernels of S_0, S_1 along T = 1..128 (tiles of 4 rows × 4 columns; model: one GPU thread, scalar FMAs, 128 registers, FMA latency 4, 1 FMA and 1 shared-memory load per cycle):
  rows  accumulators  cycles/step  efficiency
     4            16           16        100%
     3            12           12        100%
     2             8            8        100%
     1             4            5         80%
  composition at sample sizes (modelled cycles per reduction step, composed / padded to full tiles):
  T=1: 1 = 1  (6 / 17)
  T=5: 5 = 4 + 1  (23 / 34)"
    );
}

/// The CUDA of a `--dynamic` kernel compiles with nvcc for sm_80 without spills.
#[test]
fn gpu_dynamic_cuda_compiles_with_nvcc() {
    let Some(nvcc) = targets::cuda_tools::find_nvcc() else {
        assert!(
            std::env::var_os("POLYC_SKIP_NVCC").is_some(),
            "nvcc is not installed: run scripts/install-deps (or set POLYC_SKIP_NVCC=1 to skip)"
        );
        eprintln!("skipping: POLYC_SKIP_NVCC is set and nvcc is not installed");
        return;
    };
    let dir = tempdir();
    let src = polyc_ok(&[
        "examples/dense.tc",
        "--target",
        "gpu",
        "--param",
        "N=256,K=96",
        "--dynamic",
        "T=1..128",
    ]);
    assert!(src.contains("polyc_mk0_rows"), "{src}");
    let cu = write(dir.path(), "k.cu", &src);
    let o = std::process::Command::new(&nvcc)
        .args(["-arch=sm_80", "-c", &cu, "-o"])
        .arg(dir.path().join("k.o"))
        .args(["-Xptxas", "-v"])
        .output()
        .expect("nvcc runs");
    let log = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{log}");
    let kernels = targets::cuda_tools::parse_ptxas_output(&log);
    assert!(!kernels.is_empty(), "{log}");
    for k in kernels {
        assert_eq!(
            (k.spill_store_bytes, k.spill_load_bytes),
            (0, 0),
            "{}: {log}",
            k.name
        );
    }
}
