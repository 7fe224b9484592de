//! Dynamic-shape kernels (issue 14, point 4): `--dynamic T=LO..HI` / `T={…}` compiles one
//! kernel whose partial tiles along `T` are composed from micro-kernels; `explain` shows
//! the composition, the kernel passes `--check` at every size of its range, and sizes
//! outside it are errors.

mod common;
use common::*;

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
    // The 3 rows left at T = 43 run as one 5-row piece shifted back over 2 rows of the
    // tile before (6 modelled cycles instead of 2 + 1 rows' 10).
    assert!(
        got.contains("  T=43: 43 = 5×8 + 5 shifted back 2  (51 / 54)\n"),
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
    // Shifted pieces: 3 or 4 rows left run 5 rows from 5 - rows back, 6 or 7 run 8; they
    // store only their new rows (the copy-out row loop starts past the recomputed ones).
    for (rows, m) in [
        ("polyc_mk0_rows == 3 || polyc_mk0_rows == 4", 5),
        ("polyc_mk0_rows == 6 || polyc_mk0_rows == 7", 8),
    ] {
        assert!(c.contains(&format!("if (({rows}) && T >= {m}) {{")), "{c}");
        assert!(
            c.contains(&format!(
                "const int64_t polyc_mk0_sh{m} = polyc_mk0_rows - {m};"
            )),
            "{c}"
        );
        assert!(c.contains(&format!(" = {m} - polyc_mk0_rows; ")), "{c}");
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

/// Below 4 rows a packed `W` does not pay (the static kernels do not pack it): the kernel
/// runs a version that reads `W` in place there, and both versions match the interpreter
/// on either side of the threshold.
#[test]
fn small_sizes_read_the_weights_in_place() {
    let explain = micro_kernels(&[
        "examples/dense.tc",
        "--param",
        "N=1152,K=256",
        "--dynamic",
        "T=1..128",
    ]);
    assert!(
        explain.contains("small sizes: T < 4 runs a version of the kernel that reads 1 tensor(s) in place instead of packing them (each element is used T times there, fewer than the 4 a packed tile needs)"),
        "{explain}"
    );
    let src = polyc_ok(&[
        "examples/dense.tc",
        "--param",
        "N=1152,K=256",
        "--dynamic",
        "T=1..128",
    ]);
    let small = src.find("if (T < 4) {").expect("the small-size version");
    let packed = src.find("} else {").expect("the packed version");
    assert!(small < packed, "{src}");
    // In place below the threshold, packed above it.
    assert!(src[small..packed].contains("W[k * 1152 + n]"), "{src}");
    assert!(!src[small..packed].contains("tile of W"), "{src}");
    assert!(src[packed..].contains("tile of W"), "{src}");
    let out = run_at(
        "examples/dense.tc",
        "N=1152,K=256",
        "T=1..128",
        &[1, 2, 3, 4, 43],
    );
    assert_eq!(out.matches(" ok\n").count(), 5, "{out}");
    // A range that starts at the threshold needs no such version.
    let src = polyc_ok(&[
        "examples/dense.tc",
        "--param",
        "N=1152,K=256",
        "--dynamic",
        "T=4..128",
    ]);
    assert!(!src.contains("if (T < 4)"), "{src}");
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

/// The launches `polyc run … --check` makes at [`GPU_SAMPLES`], after asserting that the
/// output `Y` matches the interpreter exactly at every sample.
fn checked_launches(args: &[&str]) -> Vec<String> {
    let (out, launches) = run_with_launches(args);
    assert_eq!(
        out.matches("Y: max_abs_err=0.000e0 max_rel_err=0.000e0 ok")
            .count(),
        GPU_SAMPLES.len(),
        "{out}"
    );
    launches
}

/// The launches `polyc run` makes (`POLYC_DEBUG_LAUNCH`), and its standard output.
fn run_with_launches(args: &[&str]) -> (String, Vec<String>) {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_polyc"))
        .args(args)
        .current_dir(root())
        .env("POLYC_DEBUG_LAUNCH", "1")
        .output()
        .expect("polyc starts");
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let launches = err
        .lines()
        .filter_map(|l| l.strip_prefix("polyc: launch "))
        .map(str::to_string)
        .collect();
    (stdout(&o), launches)
}

/// FTuner's samples, 1, the block edges 64, 127, 128: one `--run-param` each.
const GPU_SAMPLES: [i64; 12] = [1, 5, 24, 43, 53, 62, 64, 81, 100, 119, 127, 128];

fn run_at_samples<'a>(mut args: Vec<&'a str>, texts: &'a [String]) -> Vec<&'a str> {
    for t in texts {
        args.push("--run-param");
        args.push(t);
    }
    args
}

/// On the GPU target (OpenCL on PoCL), one `--dynamic` kernel runs and matches the
/// reference interpreter at FTuner's samples and the block edges; the thread's partial
/// register tile is composed of micro-kernels, and a partial block alone (T < 64) runs on
/// the smallest block shape that covers it.
#[test]
fn gpu_dynamic_kernel_checks_at_every_remainder() {
    let texts: Vec<String> = GPU_SAMPLES.iter().map(|t| format!("T={t}")).collect();
    let args = run_at_samples(
        vec![
            "run",
            "examples/dense.tc",
            "--target",
            "gpu",
            "--param",
            "N=64,K=24",
            "--dynamic",
            "T=1..128",
            "--check",
        ],
        &texts,
    );
    let launches = checked_launches(&args);
    // One block along N (108 SMs hold every block in one wave): the partial block runs
    // apart only when it is the only one.
    let full = |rows: usize| format!("dense_k0_S_0_S_1 grid [1, {rows}, 1] block [16, 16, 1]");
    let b = |s: usize| format!("dense_k0_S_0_S_1_b{s} grid [1, 1, 1] block [16, {s}, 1]");
    let mut want = vec![b(2), b(2), b(8)];
    want.extend([1, 1, 1, 1, 2, 2, 2, 2, 2].map(full));
    assert_eq!(launches, want);
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

/// With one SM (a description of the A100 with `sms: 1`), one launch of the 2 × 2 full
/// blocks of T = 81 takes 2 waves; the full blocks then the partial one on 16 × 8
/// threads also take 2: the host splits, and the results still match the interpreter.
#[test]
fn gpu_dynamic_splits_full_and_partial_blocks() {
    let dir = tempdir();
    let a100 = std::fs::read_to_string(root().join("specs/targets/a100.yaml")).expect("a100.yaml");
    assert!(a100.contains("\nsms: 108\n"));
    let one = write(
        dir.path(),
        "one_sm.yaml",
        &a100.replace("\nsms: 108\n", "\nsms: 1\n"),
    );
    let texts: Vec<String> = GPU_SAMPLES.iter().map(|t| format!("T={t}")).collect();
    let args = run_at_samples(
        vec![
            "run",
            "examples/dense.tc",
            "--target",
            &one,
            "--param",
            "N=128,K=24",
            "--dynamic",
            "T=1..128",
            "--check",
        ],
        &texts,
    );
    let launches = checked_launches(&args);
    let full = |rows: usize| format!("dense_k0_S_0_S_1 grid [2, {rows}, 1] block [16, 16, 1]");
    let b = |s: usize| format!("dense_k0_S_0_S_1_b{s} grid [2, 1, 1] block [16, {s}, 1]");
    let mut want = vec![b(2), b(2), b(8), full(1), full(1), full(1), full(1)];
    // T = 81: 64 rows on full blocks, 17 on 16 x 8 threads.
    want.extend([full(1), b(8)]);
    want.extend([2, 2, 2, 2].map(full));
    assert_eq!(launches, want);
}

#[test]
fn gpu_explain_lists_the_block_shapes() {
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
    let start = out
        .find("  block shapes of kernel")
        .expect("the block shapes");
    let section: Vec<&str> = out[start..].lines().take(12).collect();
    assert_eq!(
        section.join("\n"),
        "  block shapes of kernel `dense_k0_S_0_S_1` along T = 1..128 (block tile of 64 rows: 16 threads along y × 4 rows each; model: 108 SMs, warps of 32, 128 registers per thread, 2048 threads, 65536 registers and 166912 bytes of shared memory per SM):
    threads      rows  warps  blocks/wave  kernel
    16 x 16 x 1    64      8          216  dense_k0_S_0_S_1
    16 x 8 x 1     32      4          432  dense_k0_S_0_S_1_b8
    16 x 4 x 1     16      2          864  dense_k0_S_0_S_1_b4
    16 x 2 x 1      8      1         1728  dense_k0_S_0_S_1_b2
    composition at sample sizes (4 block(s) in the other grid dimensions; blocks × rows of each launch, idle threads / launched, waves; then one launch of full blocks):
    T=1: 1×8 (16 x 2)  idle 64 / 128 (50.0%), 1 wave(s); full blocks: idle 960 / 1024 (93.8%), 1 wave(s)
    T=5: 1×8 (16 x 2)  idle 0 / 128 (0.0%), 1 wave(s); full blocks: idle 896 / 1024 (87.5%), 1 wave(s)
    T=24: 1×32 (16 x 8)  idle 128 / 512 (25.0%), 1 wave(s); full blocks: idle 640 / 1024 (62.5%), 1 wave(s)
    T=43: 1×64 (16 x 16)  idle 320 / 1024 (31.2%), 1 wave(s); full blocks: idle 320 / 1024 (31.2%), 1 wave(s)
    T=53: 1×64 (16 x 16)  idle 128 / 1024 (12.5%), 1 wave(s); full blocks: idle 128 / 1024 (12.5%), 1 wave(s)"
    );
}

/// The CUDA of a `--dynamic` kernel compiles with nvcc for sm_80 without spills.
#[test]
fn gpu_dynamic_cuda_compiles_with_nvcc() {
    let Some(nvcc) = targets::gpu::cuda_tools::find_nvcc() else {
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
    for v in [
        "dense_k0_S_0_S_1_b8",
        "dense_k0_S_0_S_1_b4",
        "dense_k0_S_0_S_1_b2",
    ] {
        assert!(src.contains(&format!("{v}<<<")), "{src}");
    }
    let cu = write(dir.path(), "k.cu", &src);
    let o = std::process::Command::new(&nvcc)
        .args(["-arch=sm_80", "-c", &cu, "-o"])
        .arg(dir.path().join("k.o"))
        .args(["-Xptxas", "-v"])
        .output()
        .expect("nvcc runs");
    let log = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{log}");
    let kernels = targets::gpu::cuda_tools::parse_ptxas_output(&log);
    assert_eq!(
        kernels.len(),
        4,
        "the kernel and its three block shapes: {log}"
    );
    for k in kernels {
        assert_eq!(
            (k.spill_store_bytes, k.spill_load_bytes),
            (0, 0),
            "{}: {log}",
            k.name
        );
    }
}
