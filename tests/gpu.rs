//! The GPU target through the polyc binary: mapped trees, runs checked against the
//! reference interpreter on OpenCL (PoCL here), CUDA that nvcc compiles without spills,
//! the explain report, and exact error texts.

mod common;
use common::*;

/// Every example at one shape, as `(program, sizes)` (smaller than the smoke suite's
/// second shapes, which `scripts/test` runs on the GPU through `polyc suite`).
const EXAMPLES: &[(&str, &str)] = &[
    ("examples/matmul.tc", "M=64,N=48,K=32"),
    ("examples/matmul_at.tc", "M=32,N=40,K=24"),
    ("examples/matmul_bt.tc", "M=32,N=40,K=24"),
    ("examples/batch_matmul.tc", "BS=3,M=16,N=24,K=8"),
    (
        "examples/conv2d_stride2.tc",
        "CI=3,CO=4,H=17,W=16,KH=3,KW=3",
    ),
    ("examples/depthwise_conv.tc", "C=4,H=20,W=18,KH=3,KW=3"),
    ("examples/maxpool.tc", "C=3,H=16,W=16"),
    ("examples/conv_chain.tc", "H=64,W=64,KH=3,KW=3"),
    ("examples/conv_chain_temp.tc", "H=64,W=64,KH=3,KW=3"),
    ("examples/softmax.tc", "R=16,N=64"),
    ("examples/layernorm.tc", "R=16,N=64"),
    ("examples/attention.tc", "L=32,D=16"),
    ("examples/jacobi1d.tc", "T=10,N=64"),
    ("examples/jacobi2d.tc", "T=5,N=32"),
    ("examples/trmm.tc", "N=32,M=24"),
    ("examples/gemm_i8.tc", "M=64,N=48,K=32"),
    ("examples/pixel_shuffle.tc", "H=16,W=8"),
    ("examples/mm2.tc", "NI=32,NJ=24,NK=16,NL=20"),
    ("examples/epilogue.tc", "R=16,N=64"),
];

fn run_gpu(prog: &str, params: &str, extra: &[&str]) -> String {
    let mut args = vec!["run", prog, "--param", params, "--target", "gpu", "--check"];
    args.extend_from_slice(extra);
    let o = polyc(&args);
    assert_code(&o, 0);
    let err = stderr(&o);
    assert!(
        err.contains("polyc: ran on OpenCL: ") || err.contains("polyc: ran on CUDA: "),
        "{err}"
    );
    let out = stdout(&o);
    assert!(
        out.lines().all(|l| l.ends_with(" ok")) && !out.is_empty(),
        "{out}"
    );
    out
}

#[test]
fn matmul_mapped_tree() {
    insta::assert_snapshot!(polyc_ok(&[
        "dump",
        "examples/matmul.tc",
        "--param",
        "M=128,N=128,K=96",
        "--target",
        "gpu",
        "--stage",
        "mapped",
    ]));
}

#[test]
fn conv_chain_mapped_tree() {
    insta::assert_snapshot!(polyc_ok(&[
        "dump",
        "examples/conv_chain.tc",
        "--param",
        "H=64,W=64,KH=3,KW=3",
        "--target",
        "gpu",
        "--stage",
        "mapped",
    ]));
}

/// The conv chain with a temporary fuses at the block level: one kernel computes each
/// block's halo of `Ab` into shared memory (tile-local, never in global memory), then
/// the convolution in register tiles.
#[test]
fn conv_chain_with_a_temporary_fuses_per_block() {
    let args = [
        "examples/conv_chain_temp.tc",
        "--param",
        "H=200,W=150,KH=5,KW=5",
        "--target",
        "gpu",
    ];
    let mut dump = vec!["dump"];
    dump.extend_from_slice(&args);
    dump.extend_from_slice(&["--stage", "mapped"]);
    insta::assert_snapshot!(polyc_ok(&dump));
    let mut explain = vec!["explain"];
    explain.extend_from_slice(&args);
    let out = polyc_ok(&explain);
    assert!(out.contains("gpu kernels (1):"), "{out}");
    assert!(
        out.contains(
            "  fused S_0, per tile a 68 x 68 box, runs 33496 instances for 30000 (+11.7%)"
        ),
        "{out}"
    );
    let src = polyc_ok(&args);
    assert!(
        src.contains(
            "__shared__ __align__(16) float polyc_tile0[5440]; /* tile of Ab (68 x 68) in shared memory */"
        ),
        "{src}"
    );
    run_gpu("examples/conv_chain_temp.tc", "H=200,W=150,KH=5,KW=5", &[]);
    run_gpu("examples/conv_chain_temp.tc", "H=37,W=23,KH=5,KW=2", &[]);
}

/// The spec: 64 x 64 block tiles, an 8 x 8 register tile per thread (64
/// threads), a K step of 32 in shared memory; sizes that divide nothing.
#[test]
fn matmul_spec_with_shared_and_register_levels_runs_on_odd_sizes() {
    let dir = tempdir();
    let spec = write(
        dir.path(),
        "mm.tiles",
        "S_1: 64@shared 8@register, 64@shared 8@register, 32@shared\n",
    );
    run_gpu(
        "examples/matmul.tc",
        "M=200,N=130,K=77",
        &["--tile-spec", &spec],
    );
    run_gpu(
        "examples/matmul.tc",
        "M=67,N=71,K=37",
        &["--tile-spec", &spec],
    );
    let src = polyc_ok(&[
        "examples/matmul.tc",
        "--param",
        "M=200,N=130,K=77",
        "--target",
        "gpu",
        "--tile-spec",
        &spec,
    ]);
    assert!(
        src.contains("reqd_work_group_size") || src.contains("__launch_bounds__(64, 1)"),
        "{src}"
    );
    assert!(
        src.contains("__shared__ __align__(16) float polyc_tile0["),
        "{src}"
    );
    assert!(src.contains("__syncthreads();"), "{src}");
    assert!(src.contains("float polyc_tile2[64];"), "{src}");
}

#[test]
fn default_policy_runs_every_example_at_one_shape() {
    for (prog, params) in EXAMPLES {
        run_gpu(prog, params, &[]);
    }
}

#[test]
fn prime_and_unit_sizes_run() {
    run_gpu("examples/matmul.tc", "M=1,N=7,K=1", &[]);
    run_gpu("examples/matmul.tc", "M=97,N=89,K=83", &[]);
    run_gpu("examples/softmax.tc", "R=7,N=53", &[]);
    run_gpu("examples/conv_chain.tc", "H=37,W=23,KH=5,KW=2", &[]);
}

#[test]
fn opencl_source_is_written_with_emit() {
    let src = polyc_ok(&[
        "examples/matmul.tc",
        "--param",
        "M=64,N=64,K=64",
        "--target",
        "gpu",
        "--emit",
        "opencl",
    ]);
    assert!(
        src.contains(
            "__kernel __attribute__((reqd_work_group_size(16, 16, 1))) void matmul_k0_S_0_S_1("
        ),
        "{src}"
    );
    assert!(
        src.contains("__local __attribute__((aligned(16))) float polyc_tile0["),
        "{src}"
    );
    assert!(
        src.contains("barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);"),
        "{src}"
    );
}

#[test]
fn explain_reports_kernels() {
    let out = polyc_ok(&[
        "explain",
        "examples/matmul.tc",
        "--param",
        "M=128,N=128,K=96",
        "--target",
        "gpu",
    ]);
    assert!(out.contains("gpu kernels (1):"), "{out}");
    assert!(
        out.contains("    grid 2 x 2 x 1 blocks; block 16 x 16 x 1 = 256 threads"),
        "{out}"
    );
    assert!(
        out.contains(
            "    shared memory 33792 bytes per block; register tiles 16 registers per thread\n    indices: 32-bit (every value provably within ±2^29)\n    shared-memory accesses (bank-conflict degree: the most distinct words one bank serves in a warp's request; 1 = conflict-free):\n      copy of A into shared memory: 32-bit, degree 1\n      copy of B into shared memory: 128-bit, degree 1\n      S_1 reads A: 128-bit, degree 1\n      S_1 reads B: 128-bit, degree 1\n    pipelined: 1 shared-memory loop(s) in 4 stages (the copies of step k + 3 load while step k computes)"
        ),
        "{out}"
    );
    // A and B: 128 x 96 each, read once per block row / column (2 blocks each way); C:
    // 128 x 128, written once and never read: each thread's 4 x 4 register tile stays in
    // registers across the 6 K steps of 16, and the first step sets it to 0.
    let a_b = 2 * (128 * 96 * 4 * 2);
    let c = 128 * 128 * 4;
    assert!(
        out.contains(&format!(
            "    global traffic {} bytes ({} read, {} written) over 1 launch(es); {} FLOPs",
            a_b + c,
            a_b,
            c,
            2 * 128 * 128 * 96
        )),
        "{out}"
    );
    assert!(out.contains("ridge point 12.54 FLOP/byte"), "{out}");
}

/// Under the default policy, GEMM 1024³ is compute-bound on the A100 in the roofline
/// model: 2·1024³ FLOPs over A and B read once per 64-wide block row or column and C
/// written once (never read: its register tiles start at 0).
#[test]
fn gemm_1024_is_compute_bound_on_a100() {
    let out = polyc_ok(&[
        "explain",
        "examples/matmul.tc",
        "--param",
        "M=1024,N=1024,K=1024",
        "--target",
        "gpu",
    ]);
    let a_b: u64 = 2 * 1024 * 1024 * 4 * (1024 / 64);
    let c: u64 = 1024 * 1024 * 4;
    assert!(
        out.contains(&format!(
            "    global traffic {} bytes ({} read, {} written) over 1 launch(es); {} FLOPs",
            a_b + c,
            a_b,
            c,
            2u64 << 30
        )),
        "{out}"
    );
    assert!(
        out.contains(
            "    arithmetic intensity 15.52 FLOP/byte; ridge point 12.54 FLOP/byte: compute-bound"
        ),
        "{out}"
    );
}

fn nvcc() -> Option<std::path::PathBuf> {
    let found = targets::gpu::cuda_tools::find_nvcc();
    if found.is_none() {
        assert!(
            std::env::var_os("POLYC_SKIP_NVCC").is_some(),
            "nvcc is not installed: run scripts/install-deps (or set POLYC_SKIP_NVCC=1 to skip)"
        );
        eprintln!("skipping: POLYC_SKIP_NVCC is set and nvcc is not installed");
    }
    found
}

/// The CUDA of every example compiles (kernels and host launcher) for sm_80 and sm_90,
/// and ptxas reports no spills under the default policy.
#[test]
fn cuda_of_every_example_compiles_without_spills() {
    let Some(nvcc) = nvcc() else { return };
    let dir = tempdir();
    for (prog, params) in EXAMPLES {
        let src = polyc_ok(&[prog, "--param", params, "--target", "gpu"]);
        let cu = write(dir.path(), "k.cu", &src);
        for arch in ["sm_80", "sm_90"] {
            let o = std::process::Command::new(&nvcc)
                .args([&format!("-arch={arch}"), "-c", &cu, "-o"])
                .arg(dir.path().join("k.o"))
                .args(["-Xptxas", "-v"])
                .output()
                .expect("nvcc runs");
            let log = String::from_utf8_lossy(&o.stderr);
            assert!(o.status.success(), "{prog} {arch}:\n{log}");
            let kernels = targets::gpu::cuda_tools::parse_ptxas_output(&log);
            assert!(!kernels.is_empty(), "{prog} {arch}: no kernel in\n{log}");
            for k in kernels {
                assert_eq!(
                    (k.spill_store_bytes, k.spill_load_bytes),
                    (0, 0),
                    "{prog} {arch}: {} spills\n{log}",
                    k.name
                );
            }
        }
    }
}

/// Attention at its benchmark size (L = 1024, D = 64): one kernel's shared tiles (160 KiB)
/// exceed CUDA's 48 KiB static limit, so they live in dynamic shared memory, the launcher
/// raises the kernel's limit to the same bytes and passes them, and nvcc accepts it
/// (ptxas rejected the static arrays: "uses too much shared data").
#[test]
fn shared_tiles_over_the_static_limit_are_dynamic() {
    let o = polyc_envs(
        &[
            "examples/attention.tc",
            "--param",
            "L=1024,D=64",
            "--target",
            "h100",
        ],
        &[TILED_ATTENTION],
    );
    assert_code(&o, 0);
    let src = stdout(&o);
    let declared: Vec<&str> = src
        .lines()
        .filter(|l| l.contains("extern __shared__"))
        .collect();
    assert_eq!(
        declared,
        ["  extern __shared__ __align__(16) unsigned char polyc_dynamic_shared[];"],
        "{src}"
    );
    assert!(
        src.contains("/* 164128 bytes of shared memory, over CUDA's 49152-byte limit for static arrays: dynamic, sized by the launch */"),
        "{src}"
    );
    let kernel = "attention_k7_S_7_S_8_S_9";
    assert!(
        src.contains(&format!(
            "cudaFuncSetAttribute((const void *){kernel}, cudaFuncAttributeMaxDynamicSharedMemorySize, 164128);"
        )) && src.contains(&format!("{kernel}<<<polyc_grid, polyc_block, 164128, stream>>>")),
        "{src}"
    );
    // Kernels under the limit keep static arrays and launch with no dynamic memory.
    assert!(
        src.contains("__shared__ __align__(16) float polyc_tile0["),
        "{src}"
    );
    assert!(
        src.contains("attention_k2_S_1<<<polyc_grid, polyc_block, 0, stream>>>"),
        "{src}"
    );
    nvcc_compiles_for_sm_90(&src);
}

/// Runs polyc from the repository root with one more environment variable.
fn polyc_env(args: &[&str], var: (&str, &str)) -> std::process::Output {
    polyc_envs(args, &[var])
}

/// Runs polyc from the repository root with more environment variables.
fn polyc_envs(args: &[&str], vars: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_polyc"));
    cmd.args(args).current_dir(root());
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.output().expect("polyc runs")
}

/// Attention as a tiled kernel chain (its row kernel turned off): the programs that are
/// not row chains take this path, and it exercises pipelines, dynamic shared memory and
/// transposed shared tiles.
const TILED_ATTENTION: (&str, &str) = ("POLYC_ROW_KERNELS", "0");

/// nvcc compiles `src` (kernels and launcher) for sm_90 (nothing to do when
/// `POLYC_SKIP_NVCC` is set and nvcc is missing).
fn nvcc_compiles_for_sm_90(src: &str) {
    let Some(nvcc) = nvcc() else { return };
    let dir = tempdir();
    let cu = write(dir.path(), "k.cu", src);
    let o = std::process::Command::new(&nvcc)
        .args(["-arch=sm_90", "-c", &cu, "-o"])
        .arg(dir.path().join("k.o"))
        .output()
        .expect("nvcc runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// The text of `src` from the first `start` (which ends with `{`) to its matching `}`.
fn braced_after<'a>(src: &'a str, start: &str) -> &'a str {
    let at = src
        .find(start)
        .unwrap_or_else(|| panic!("missing `{start}` in\n{src}"));
    let mut depth = 0;
    for (i, ch) in src[at..].char_indices() {
        match ch {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return &src[at..=at + i];
                }
            }
            _ => {}
        }
    }
    panic!("unbalanced braces after `{start}` in\n{src}")
}

/// A GEMM's K loop is pipelined in 4 stages (the most whose tiles fit 48 KiB of static
/// shared memory): CUDA issues the copies 3 steps ahead with `cp.async`
/// (`__pipeline_memcpy_async`), each step waits for all but the 2 most recent groups (its
/// own copies have landed) and synchronises once, before it refills the stage the last
/// step read, and the shared tiles hold 4 steps.
#[test]
fn gemm_k_loop_is_pipelined_in_four_stages() {
    // (2048 x 2048: too few blocks for the policy's 128 x 128 tile, see
    // `wide_gemm_tiles_where_they_fill_four_waves`)
    let src = polyc_ok(&[
        "examples/matmul.tc",
        "--param",
        "M=2048,N=2048,K=4096",
        "--target",
        "h100",
    ]);
    for want in [
        "#include <cuda_pipeline.h>",
        "  __shared__ __align__(16) float polyc_tile0[4096]; /* tile of A (64 x 16) in shared memory */",
        "  __shared__ __align__(16) float polyc_tile1[4352]; /* tile of B (16 x 64) in shared memory */",
        "{ /* pipelined, 4 stages: the copies of step c2 + 3 load while step c2 computes */",
        "const int c2 = 0 + 2;",
        "const int polyc_stage_c2 = ((c2 - (0)) / 1) % 4;",
        "const int c2_next = c2 + 3;",
        "if (c2_next <= 255) {",
        "__pipeline_memcpy_async(&polyc_tile0[((polyc_stage_c2 + 3) % 4) * 1024 + ",
        "const int polyc_stage_c2 = ((c2 - (0)) / 1) % 4;\n            __pipeline_wait_prior(2);\n            __syncthreads();\n            {\n              const int c2_next = c2 + 3;",
    ] {
        assert!(src.contains(want), "missing `{want}` in\n{src}");
    }
    assert_eq!(src.matches("__pipeline_commit();").count(), 4, "{src}");
    // One barrier per step, and one after the loop.
    let main_loop = braced_after(&src, "for (int c2 = 0; c2 <= 255; c2 += 1) {");
    assert_eq!(
        main_loop.matches("__syncthreads();").count(),
        1,
        "{main_loop}"
    );
    assert!(
        src.contains(&format!(
            "{main_loop}\n          __syncthreads();\n        }}"
        )),
        "{src}"
    );
    nvcc_compiles_for_sm_90(&src);
}

/// Pipelined kernels run the same schedule on OpenCL (plain copies into the stages),
/// checked against the interpreter with 2, 3 and 4 stages at trip counts of 1, 2, 3 and
/// many K steps, partial tiles in every dimension, f32 and f64; and a pipeline that writes
/// the next step into the stage being read (`POLYC_PIPELINE_FAULT=same-stage`) fails the
/// check.
#[test]
fn pipelined_kernels_check_at_odd_sizes_and_a_broken_pipeline_fails() {
    // (program, sizes, pipelined loops: one per kind of block tile the code generator
    // separates; 0 where the K loop has a single step and no loop is left)
    let cases = [
        ("examples/matmul.tc", "M=67,N=45,K=53", 1),
        ("examples/matmul.tc", "M=65,N=64,K=17", 3),
        ("examples/matmul.tc", "M=70,N=66,K=32", 3),
        ("examples/matmul.tc", "M=13,N=29,K=97", 1),
        ("examples/matmul.tc", "M=70,N=66,K=16", 0),
        ("examples/matmul.tc", "M=1,N=1,K=1", 0),
        ("examples/matmul_at.tc", "M=33,N=40,K=47", 1),
        ("examples/batch_matmul.tc", "BS=3,M=17,N=29,K=41", 1),
        ("examples/attention.tc", "L=50,D=37", 1),
    ];
    for stages in ["2", "3", "4"] {
        for (prog, params, loops) in cases {
            let o = polyc_envs(
                &[
                    prog, "--param", params, "--target", "gpu", "--emit", "opencl",
                ],
                &[("POLYC_PIPELINE_STAGES", stages), TILED_ATTENTION],
            );
            assert_code(&o, 0);
            let opencl = stdout(&o);
            // The most stages that fit (CUDA's static limit), at most the number asked.
            let got: Vec<i64> = opencl
                .split("pipelined, ")
                .skip(1)
                .map(|t| t.split(' ').next().unwrap().parse().unwrap())
                .collect();
            assert_eq!(
                got.len(),
                loops,
                "{prog} {params}, {stages} stages:\n{opencl}"
            );
            let most: i64 = stages.parse().unwrap();
            assert!(
                got.iter().all(|&g| (2..=most).contains(&g)),
                "{prog} {params}: {got:?}"
            );
            let o = polyc_envs(
                &["run", prog, "--param", params, "--target", "gpu", "--check"],
                &[("POLYC_PIPELINE_STAGES", stages), TILED_ATTENTION],
            );
            assert_code(&o, 0);
            assert!(
                stdout(&o).lines().all(|l| l.ends_with(" ok")),
                "{}",
                stdout(&o)
            );
        }
    }
    let dir = tempdir();
    let f64_prog = write(
        dir.path(),
        "mm64.tc",
        "def mm64(f64(M, K) A, f64(K, N) B) -> (f64(M, N) C) {\n  C(i, j) +=! A(i, k) * B(k, j)\n}\n",
    );
    run_gpu(&f64_prog, "M=37,N=71,K=45", &[]);
    let args = [
        "run",
        "examples/matmul.tc",
        "--param",
        "M=67,N=45,K=53",
        "--target",
        "gpu",
        "--check",
    ];
    // Writing the next step into the stage being read: where copies land at issue, other
    // threads' compute reads the overwritten stage; where they land at their wait, each
    // step lands the shadow the step `s` earlier filled. Without its wait, a pipeline
    // still computes right when copies land at issue (plain stores), but not when they
    // land only at their wait. `--check` runs both modes, and they disagree.
    for fault in ["same-stage", "no-wait"] {
        let o = polyc_env(&args, ("POLYC_PIPELINE_FAULT", fault));
        assert_code(&o, 1);
        assert!(
            stderr(&o).contains(
                "`C` differs when the pipelined copies land only at their wait (OpenCL built with"
            ),
            "{fault}: {}",
            stderr(&o)
        );
    }
    let o = polyc_env(&args[..6], ("POLYC_PIPELINE_FAULT", "no-wait"));
    assert_code(&o, 0);
}

#[test]
fn errors_are_exact() {
    let e = polyc_err(&[
        "run",
        "examples/matmul.tc",
        "--param",
        "M=8,N=8,K=8",
        "--target",
        "gpu",
        "--device",
        "cuda",
    ]);
    if !e.contains("no CUDA driver") {
        // A machine with a GPU: nothing to check here.
        return;
    }
    assert!(
        e.contains("× no CUDA driver (libcuda) on this machine: use --device opencl"),
        "{e}"
    );
    let e = polyc_err(&["examples/matmul.tc", "--emit", "opencl"]);
    assert!(
        e.contains("× --emit opencl: target `cpu` cannot emit `opencl`")
            && e.contains("help: target `cpu` emits: c"),
        "{e}"
    );
    let e = polyc_err(&["examples/matmul.tc", "--target", "tpu"]);
    assert!(
        e.contains("× --target tpu: there is no built-in target `tpu` and no file of that name"),
        "{e}"
    );
    let e = polyc_err(&[
        "examples/matmul.tc",
        "--target",
        "specs/targets/ascend.yaml",
    ]);
    assert!(
        e.contains("× target `ascend` (kind npu) has no code emitter in this version of polyc"),
        "{e}"
    );
}

/// A spec whose thread-mapped level has more points than a block has threads is refused.
#[test]
fn too_many_threads_per_block_is_an_error() {
    let dir = tempdir();
    let spec = write(
        dir.path(),
        "t.tiles",
        "S_1: 64@shared, 64@shared, 16@shared\n",
    );
    assert!(spec.ends_with("t.tiles"));
    // Run from the spec's folder so that the located message names `t.tiles`.
    let o = polyc_in(
        dir.path(),
        &[
            &abs("examples/matmul.tc"),
            "--param",
            "M=128,N=128,K=64",
            "--target",
            "gpu",
            "--tile-spec",
            "t.tiles",
        ],
    );
    assert_code(&o, 1);
    let e = stderr(&o);
    assert!(
        e.contains("× t.tiles:1:1: kernel 0 maps 64 x 64 x 1 = 4096 threads to a block, more than the 1024 threads\n  │ per block the target allows\n"),
        "{e}"
    );
    assert!(
        e.contains(" 1 │ S_1: 64@shared, 64@shared, 16@shared\n"),
        "{e}"
    );
    assert!(e.contains("╰── these tiles\n"), "{e}");
    assert!(
        e.contains("help: give the thread-mapped level smaller tiles, or add a register level"),
        "{e}"
    );
}

/// An Ascend-like chip is data alone: its buffers parse in tile specs and `explain`
/// prints footprints per buffer.
#[test]
fn ascend_description_is_data_only() {
    let dir = tempdir();
    let spec = write(
        dir.path(),
        "a.tiles",
        "S_1: 64@L1 16@L0A, 64@L1 16@L0B, 64@L1 16@L0C\n",
    );
    let out = polyc_ok(&[
        "explain",
        "examples/matmul.tc",
        "--param",
        "M=256,N=256,K=256",
        "--target",
        "specs/targets/ascend.yaml",
        "--tile-spec",
        &spec,
    ]);
    for b in ["L1 ", "L0A", "L0B", "L0C"] {
        assert!(out.contains(&format!("  {b}")), "{b}:\n{out}");
    }
    assert!(
        out.contains("total 49152 bytes of 1048576 (999424 left)"),
        "{out}"
    );
}

/// Issue 22, item 2 (hostile-input campaign): partial blocks together with partial K steps.
/// Rows 64–66 of 67 × 45 × 53 and rows 4–6 of 7 × 300 × 97 came out NaN (never written),
/// with f32 and with f16 inputs. The kernels were right (they check unoptimised, under
/// PoCL's `repl` work-group method, and as threads under ThreadSanitizer): PoCL 3.1
/// miscompiled them after LLVM's optimiser, so polyc builds for PoCL with
/// `-cl-opt-disable` (`targets::gpu::opencl_runner::build_options`).
#[test]
fn partial_blocks_with_partial_k_steps_check() {
    run_gpu("examples/matmul.tc", "M=67,N=45,K=53", &[]);
    run_gpu("examples/matmul.tc", "M=7,N=300,K=97", &[]);
    run_gpu("tests/fixtures/matmul_f16.tc", "M=67,N=45,K=53", &[]);
}

/// Found by the odd-size sweep: trmm's last K step split its register-tile loop at a guard
/// that held nowhere (`c3 >= 4` and `c3 <= -1`), and both partial ranges ran `c3 = 0`: row
/// 32 of N = 33 added its last K step twice (`normalize::split_versions`).
#[test]
fn a_register_tile_of_an_empty_full_range_runs_once() {
    run_gpu("examples/trmm.tc", "N=33,M=2", &[]);
    run_gpu("examples/trmm.tc", "N=17,M=2", &[]);
    run_gpu("examples/trmm.tc", "N=35,M=3", &[]);
}

/// Issue 22, item 15: the default policy never produces what the target refuses. These
/// shapes mapped up to 129 x 129 threads to a block (a copy nest or a fused halo nest along
/// a dimension the compute nest leaves alone) and were refused; the policy's kernels are
/// now fitted to `max_threads_per_block`, and `explain` says so.
#[test]
fn default_policy_stays_within_the_thread_limit() {
    for (prog, sizes) in [
        ("examples/matmul.tc", "M=97,N=1,K=67"),
        ("examples/matmul_at.tc", "M=67,N=1,K=63"),
        ("examples/gemm_i8.tc", "M=129,N=1,K=33"),
        ("examples/attention.tc", "L=129,D=1"),
        ("examples/softmax.tc", "R=65,N=1"),
        ("examples/layernorm.tc", "R=129,N=2"),
        ("examples/conv_chain_temp.tc", "H=5,W=131,KH=1,KW=3"),
        ("examples/conv_chain_poly.tc", "H=5,W=98,KH=1,KW=2"),
        ("tests/fixtures/seidel2d.tc", "T=3,N=33"),
    ] {
        run_gpu(prog, sizes, &[]);
    }
    let text = polyc_ok(&[
        "explain",
        "examples/matmul.tc",
        "--param",
        "M=97,N=1,K=67",
        "--target",
        "gpu",
    ]);
    assert!(
        flat(&text).contains("kernel 0: its thread loops ask for 97 x 16 x 1 threads per block, more than the 1024 the target allows; it runs blocks of 49 x 16 x 1 (thread loops stride over the rest)"),
        "{text}"
    );
}

/// F5 (FUZZ_FINDINGS.md): a register tile above the thread loops (its mark outside the
/// thread-mapped band) is read and written by several threads. It was a private array
/// that thread 0 alone filled, and the other threads read their own, never written copy;
/// such a tile now lives in shared memory, filled cooperatively behind a barrier.
#[test]
fn a_register_tile_that_several_threads_read_is_shared() {
    let dir = tempdir();
    let d = dir.path();
    for ty in ["f32", "f64"] {
        let bcast = write(
            d,
            &format!("bcast_{ty}.tc"),
            &format!("def f({ty}(K) X) -> ({ty}(M, K) T) {{\n  T(j, k) = X(k)\n}}\n"),
        );
        let spec = write(d, "bcast.tiles", "S_0: 2@register\n");
        for sizes in ["M=2,K=1", "M=3,K=1", "M=4,K=3", "M=7,K=5"] {
            run_gpu(&bcast, sizes, &["--tile-spec", &spec]);
        }
        let src = polyc_ok(&[
            &bcast,
            "--param",
            "M=3,K=1",
            "--target",
            "gpu",
            "--tile-spec",
            &spec,
        ]);
        assert!(src.contains("__shared__"), "{src}");
        assert!(src.contains("__syncthreads();"), "{src}");
        if let Some(nvcc) = nvcc() {
            let cu = write(d, "bcast.cu", &src);
            let o = std::process::Command::new(&nvcc)
                .args(["-arch=sm_80", "-c", &cu, "-o"])
                .arg(d.join("bcast.o"))
                .output()
                .expect("nvcc runs");
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        }

        let shift = write(
            d,
            &format!("shift_{ty}.tc"),
            &format!(
                "def f({ty}(K) X) -> ({ty}(N, K) T0) {{\n  T0(i, k) = 1.0\n  \
                 T0(i, k) = T0(i + 1, k) where i in 0:N - 1\n}}\n"
            ),
        );
        let spec = write(d, "shift.tiles", "S_1: 1@register\n");
        for sizes in ["N=2,K=2", "N=5,K=3", "N=9,K=1"] {
            run_gpu(&shift, sizes, &["--tile-spec", &spec]);
        }

        let prod = write(
            d,
            &format!("prod_{ty}.tc"),
            &format!(
                "def f({ty}(J) X0) -> ({ty}(J) T0, {ty}(K, I) T1) {{\n  T0(j) +=! X0(j)\n  \
                 T1(k, i) *=! T0(j)\n}}\n"
            ),
        );
        let spec = write(d, "prod.tiles", "S_3: 1@register\n");
        for sizes in ["J=3,K=2,I=3", "J=5,K=3,I=7"] {
            run_gpu(&prod, sizes, &["--tile-spec", &spec]);
        }
    }
}

/// A program that divides integers by data takes the fault status: a `__global int *`
/// argument of its OpenCL kernels, an `int *` one of its CUDA kernels, and a host pointer
/// parameter of the CUDA host function, which nvcc compiles.
#[test]
fn integer_division_by_data_has_a_fault_status() {
    let prog = "tests/fixtures/hostile/div_by_data.tc";
    let cl = polyc_ok(&[
        prog, "--param", "N=5", "--target", "gpu", "--emit", "opencl",
    ]);
    assert!(cl.contains("__global int *polyc_fault)"), "{cl}");
    assert!(cl.contains("atomic_cmpxchg(f, 0, s + 1)"), "{cl}");
    let src = polyc_ok(&[prog, "--target", "gpu"]);
    assert!(
        src.contains("cudaStream_t stream, int *polyc_fault_status)"),
        "{src}"
    );
    assert!(
        src.contains("polyc_div_i32(A[i], D[i], 0, polyc_fault)"),
        "{src}"
    );
    // A program without such divisions keeps its signature.
    let mm = polyc_ok(&["examples/matmul.tc", "--target", "gpu"]);
    assert!(!mm.contains("polyc_fault"), "{mm}");
    let Some(nvcc) = nvcc() else { return };
    let dir = tempdir();
    let cu = write(dir.path(), "div.cu", &src);
    let o = std::process::Command::new(&nvcc)
        .args(["-arch=sm_80", "-c", &cu, "-o"])
        .arg(dir.path().join("div.o"))
        .output()
        .expect("nvcc runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Indices are 32-bit `int` where every value a kernel computes provably lies within
/// ±2^29 (bound sizes), and stay `int64_t` under symbolic sizes or where a tensor holds
/// more elements (30000² > 2^29); `explain` says which per kernel.
#[test]
fn indices_are_32_bit_only_where_every_value_fits() {
    let kernel = |src: &str| {
        let at = src.find("__global__").expect("a kernel");
        let end = src.find("/* Launches the kernels").expect("a launcher");
        src[at..end].to_string()
    };
    let small = polyc_ok(&[
        "examples/matmul.tc",
        "--param",
        "M=2048,N=2048,K=4096",
        "--target",
        "h100",
    ]);
    let k = kernel(&small);
    assert!(
        k.contains("for (int c0 = 0 + polyc_bid1 * 1; c0 <= 31;"),
        "{k}"
    );
    assert!(!k.contains("int64_t"), "{k}");
    nvcc_compiles_for_sm_90(&small);
    for params in [None, Some("M=30000,N=30000,K=64")] {
        let mut args = vec!["examples/matmul.tc", "--target", "h100"];
        args.extend(params.iter().flat_map(|p| ["--param", p]));
        let k = kernel(&polyc_ok(&args));
        assert!(k.contains("for (int64_t c0 = "), "{k}");
        assert!(!k.contains("for (int "), "{k}");
        let mut explain = vec!["explain"];
        explain.extend(&args);
        let out = polyc_ok(&explain);
        assert!(
            out.contains(
                "    indices: 64-bit (a symbolic size, or a value not proven within ±2^29)"
            ),
            "{out}"
        );
    }
}

/// The bank-conflict degree of every shared-memory access, at benchmark sizes under the
/// default policy (`explain`): 1 everywhere, 128-bit reads in the inner loops, and
/// 128-bit copies where rows allow, except the copies into tiles stored transposed
/// (`matmul_bt`'s B and attention's K are stored `k`-major so that the register tiles
/// read 128-bit vectors; writing a column of such a tile is 2-way, and no row padding
/// makes both sides conflict-free, see `gpu::banks`).
#[test]
fn shared_accesses_are_conflict_free_at_benchmark_sizes() {
    let gemm = [
        "copy of A into shared memory: 32-bit, degree 1",
        "copy of B into shared memory: 128-bit, degree 1",
        "S_1 reads A: 128-bit, degree 1",
        "S_1 reads B: 128-bit, degree 1",
    ];
    // The 128 x 128 tile's B blocks (16 x 8) are padded for the register tiles'
    // 128-bit reads; its copy, one vector store per 8 B elements, is then 2-way (no
    // padding serves both; an XOR swizzle does, but costs the main loop more
    // instructions than the conflict: see the README's bank-conflict section).
    let gemm_wide = [
        "copy of A into shared memory: 32-bit, degree 1",
        "copy of B into shared memory: 128-bit, degree 2",
        "S_1 reads A: 128-bit, degree 1",
        "S_1 reads B: 128-bit, degree 1",
    ];
    let conv = [
        "copy of A into shared memory: 128-bit, degree 1",
        "copy of B into shared memory: 32-bit, degree 1",
        "S_2 reads A: 128-bit, degree 1",
        "S_2 reads B: 128-bit, degree 1",
    ];
    let conv_temp = [
        "copy of B into shared memory: 32-bit, degree 1",
        "S_0 writes Ab: 32-bit, degree 1",
        "S_2 reads Ab: 128-bit, degree 1",
        "S_2 reads B: 128-bit, degree 1",
    ];
    let bt = [
        "copy of A into shared memory: 32-bit, degree 1",
        "copy of B into shared memory: 32-bit, degree 2",
        "S_1 reads A: 128-bit, degree 1",
        "S_1 reads B: 128-bit, degree 1",
    ];
    // Attention's row kernel: `S(i, j)` accumulates in a register per thread (copied
    // from and to the row of `S` in shared memory).
    let attention_rows = [
        "copy of Q into shared memory: 32-bit, degree 1",
        "S_0 writes S: 32-bit, degree 1",
        "copy of S out of shared memory: 32-bit, degree 1",
        "S_1 reads Q: 32-bit, degree 1",
        "copy of S into shared memory: 32-bit, degree 1",
        "S_2 writes mx: 32-bit, degree 1",
        "S_3 reads S: 32-bit, degree 1",
        "S_4 writes P: 32-bit, degree 1",
        "S_4 reads S: 32-bit, degree 1",
        "S_4 reads mx: 32-bit, degree 1",
        "S_5 writes l: 32-bit, degree 1",
        "S_6 reads P: 32-bit, degree 1",
        "S_8 reads P: 32-bit, degree 1",
        "S_9 reads l: 32-bit, degree 1",
    ];
    let attention = [
        "copy of K into shared memory: 32-bit, degree 2",
        "copy of Q into shared memory: 32-bit, degree 1",
        "S_1 reads Q: 128-bit, degree 1",
        "S_1 reads K: 128-bit, degree 1",
        "copy of mx into shared memory: 32-bit, degree 1",
        "S_4 reads mx: 32-bit, degree 1",
        "copy of P into shared memory: 128-bit, degree 1",
        "copy of V into shared memory: 128-bit, degree 1",
        "copy of l into shared memory: 32-bit, degree 1",
        "S_8 reads P: 32-bit, degree 1",
        "S_8 reads V: 128-bit, degree 1",
        "S_9 reads l: 32-bit, degree 1",
    ];
    let cases: [(&str, &str, &[&str]); 8] = [
        ("examples/matmul.tc", "M=4096,N=4096,K=4096", &gemm_wide),
        ("examples/matmul.tc", "M=2048,N=2048,K=2048", &gemm),
        ("examples/batch_matmul.tc", "BS=12,M=512,K=64,N=512", &gemm),
        ("examples/conv_chain.tc", "H=2048,W=2048,KH=5,KW=5", &conv),
        (
            "examples/conv_chain_temp.tc",
            "H=2048,W=2048,KH=5,KW=5",
            &conv_temp,
        ),
        ("examples/matmul_bt.tc", "M=1024,N=1024,K=1024", &bt),
        ("examples/attention.tc", "L=1024,D=64", &attention_rows),
        ("examples/attention.tc", "L=1024,D=64,tiled", &attention),
    ];
    for (prog, params, want) in cases {
        let (params, vars) = match params.strip_suffix(",tiled") {
            Some(p) => (p, vec![TILED_ATTENTION]),
            None => (params, vec![]),
        };
        let o = polyc_envs(
            &["explain", prog, "--param", params, "--target", "h100"],
            &vars,
        );
        assert_code(&o, 0);
        let out = stdout(&o);
        let got: Vec<&str> = out
            .lines()
            .filter(|l| l.contains("-bit, degree "))
            .map(str::trim)
            .collect();
        assert_eq!(got, want, "{prog}:\n{out}");
    }
    // Symbolic sizes: no addresses to compute.
    let out = polyc_ok(&[
        "explain",
        "examples/matmul.tc",
        "--target",
        "h100",
        "--tile-spec",
        "bench/gpu/gemm128.tiles",
    ]);
    assert!(
        out.contains("    shared-memory bank conflicts: computed at bound sizes only (give every size with --param)"),
        "{out}"
    );
}

/// Copies into shared tiles move 16 bytes at a time (`cp.async` of 16 bytes in a
/// pipeline) where the tile's rows hold whole vectors; the element-by-element path takes
/// a tile's edge and misaligned rows. `--check` on OpenCL sees the vector copies (one
/// that reads one element further fails), and both paths pass at aligned and odd sizes,
/// f32 and f64.
#[test]
fn shared_copies_move_16_bytes_where_rows_allow() {
    let src = polyc_ok(&[
        "examples/matmul.tc",
        "--param",
        "M=2048,N=2048,K=4096",
        "--target",
        "h100",
    ]);
    assert!(
        src.contains("for (int c4 = 0 + polyc_tid0 * 4; c4 <= 63; c4 += polyc_ntid0 * 4) { /* 16 bytes at a time */"),
        "{src}"
    );
    assert!(
        src.contains("&B[(16 * c2 + c3) * 2048 + (64 * c1 + (c4 + 0))], 16);"),
        "{src}"
    );
    nvcc_compiles_for_sm_90(&src);
    for params in ["M=64,N=64,K=64", "M=67,N=68,K=53", "M=67,N=45,K=53"] {
        run_gpu("examples/matmul.tc", params, &[]);
    }
    run_gpu("examples/conv_chain.tc", "H=71,W=68,KH=5,KW=5", &[]);
    let dir = tempdir();
    let f64_prog = write(
        dir.path(),
        "mm64.tc",
        "def mm64(f64(M, K) A, f64(K, N) B) -> (f64(M, N) C) {\n  C(i, j) +=! A(i, k) * B(k, j)\n}\n",
    );
    run_gpu(&f64_prog, "M=33,N=66,K=40", &[]);
    let fault = |params: &str| {
        polyc_env(
            &[
                "run",
                "examples/matmul.tc",
                "--param",
                params,
                "--target",
                "gpu",
                "--check",
            ],
            ("POLYC_VECTOR_COPY_FAULT", "1"),
        )
    };
    // The faulty copies read past the end of `B`, which need not read the same in the two
    // runs of a pipelined kernel under `--check` (copies landing at their wait, then at
    // issue): the check fails either on their disagreement (exit 1) or on the oracle
    // (exit 3).
    let o = fault("M=64,N=64,K=64");
    match code(&o) {
        1 => assert!(
            stderr(&o).contains("differs when the pipelined copies land only at their wait"),
            "{}",
            stderr(&o)
        ),
        _ => {
            assert_code(&o, 3);
            assert!(stdout(&o).contains(" MISMATCH ("), "{}", stdout(&o));
        }
    }
    // Rows of 45 floats are never 16-byte aligned: every copy is element by element.
    assert_code(&fault("M=67,N=45,K=53"), 0);
}

/// A shared level of the tile spec takes a stage count (`16@shared:3`): the GPU kernel
/// pipelines its copies over that many stages (`:1` turns pipelining off; over CUDA's
/// 48 KiB the stages go to dynamic shared memory), PoCL's `--check` passes at odd sizes,
/// and bad counts are located errors.
#[test]
fn tile_spec_stage_counts_pipeline_the_shared_copies() {
    let dir = tempdir();
    let spec = |name: &str, k: &str| {
        write(
            dir.path(),
            name,
            &format!("S_1: 64@shared 4@register, 64@shared 4@register, {k}\n"),
        )
    };
    let three = spec("s3.tiles", "16@shared:3");
    let big = "M=4096,N=4096,K=4096";
    let args = |s: &str| -> Vec<String> {
        [
            "examples/matmul.tc",
            "--param",
            big,
            "--target",
            "h100",
            "--tile-spec",
            s,
        ]
        .map(String::from)
        .to_vec()
    };
    let run = |v: Vec<String>| polyc_ok(&v.iter().map(String::as_str).collect::<Vec<_>>());
    let src = run(args(&three));
    for want in [
        "  __shared__ __align__(16) float polyc_tile0[3072]; /* tile of A (64 x 16) in shared memory */",
        "{ /* pipelined, 3 stages: the copies of step c2 + 2 load while step c2 computes */",
        "__pipeline_wait_prior(1);",
    ] {
        assert!(src.contains(want), "missing `{want}` in\n{src}");
    }
    let mut explain = vec!["explain".to_string()];
    explain.extend(args(&three));
    let out = run(explain);
    assert!(
        out.contains("S_1: 64@shared 4@register, 64@shared 4@register, 16@shared:3\n"),
        "{out}"
    );
    assert!(
        out.contains("    pipelined: 1 shared-memory loop(s) in 3 stages"),
        "{out}"
    );
    let one = spec("s1.tiles", "16@shared:1");
    assert!(!run(args(&one)).contains("pipelined"));
    let four = spec("s4.tiles", "32@shared:4");
    let src = run(args(&four));
    assert!(
        src.contains("cudaFuncAttributeMaxDynamicSharedMemorySize, 67584);")
            && src.contains("{ /* pipelined, 4 stages:"),
        "{src}"
    );
    nvcc_compiles_for_sm_90(&src);
    for s in [&three, &four] {
        for params in ["M=67,N=45,K=53", "M=33,N=68,K=16"] {
            run_gpu("examples/matmul.tc", params, &["--tile-spec", s]);
        }
    }
    // Errors: no count, a level that is not shared memory (GPU and CPU), too many stages
    // (compared with miette's line wrapping undone).
    let flat = |e: &str| {
        e.split_whitespace()
            .filter(|w| *w != "│")
            .collect::<Vec<_>>()
            .join(" ")
    };
    let zero = spec("s0.tiles", "16@shared:0");
    let e = polyc_err(&[
        "examples/matmul.tc",
        "--target",
        "h100",
        "--tile-spec",
        &zero,
    ]);
    assert!(
        flat(&e).contains(&flat(
            "s0.tiles:1:59: expected a stage count (a whole number from 1) after `:`, found `0`"
        )),
        "{e}"
    );
    let reg = write(
        dir.path(),
        "reg.tiles",
        "S_1: 64@shared 4@register:2, 64@shared 4@register, 16@shared\n",
    );
    let e = polyc_err(&[
        "examples/matmul.tc",
        "--target",
        "h100",
        "--tile-spec",
        &reg,
    ]);
    assert!(
        flat(&e).contains(&flat(
            "reg.tiles:1:26: `register` is not a shared-memory level: its copies are not pipelined"
        )) && flat(&e).contains(&flat("stage counts go on shared-memory levels (`shared`)")),
        "{e}"
    );
    let cpu = write(dir.path(), "cpu.tiles", "S_1: 32@L1:2, 32@L1\n");
    let e = polyc_err(&["examples/matmul.tc", "--tile-spec", &cpu]);
    assert!(
        flat(&e).contains(&flat(
            "target `cpu` has no shared memory to pipeline: remove `:2`"
        )),
        "{e}"
    );
    let many = write(
        dir.path(),
        "many.tiles",
        "S_1: 128@shared 8@register, 128@shared 8@register, 128@shared:8\n",
    );
    let mut v = args(&many);
    v.truncate(7);
    let e = polyc_err(&v.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        flat(&e).contains(&flat("many.tiles:1:62: kernel 0 needs 1054720 bytes of shared memory per block in 8 pipeline stages"))
            && flat(&e).contains(&flat("ask for fewer stages, or smaller tiles at this level")),
        "{e}"
    );
}

/// The default policy takes 128 x 128 blocks with 8 x 8 per thread for an f32 GEMM whose
/// 128 x 128 blocks fill at least four waves of the description's SMs (one block per SM),
/// and 64 x 64 with 4 x 4 otherwise.
#[test]
fn wide_gemm_tiles_where_they_fill_four_waves() {
    let spec = |prog: &str, params: &str, target: &str| -> String {
        let out = polyc_ok(&["explain", prog, "--param", params, "--target", target]);
        out.lines()
            .find(|l| l.starts_with("S_1: "))
            .unwrap_or_else(|| panic!("no spec line:\n{out}"))
            .to_string()
    };
    let wide = "S_1: 128@shared 8@register, 128@shared 8@register, 16@shared";
    let narrow = "S_1: 64@shared 4@register, 64@shared 4@register, 16@shared";
    let cases = [
        // 32 x 32 = 1024 blocks against 4 x 132 (H100) and 4 x 108 (A100).
        ("M=4096,N=4096,K=4096", "h100", wide),
        ("M=4096,N=4096,K=4096", "a100", wide),
        // 16 x 16 = 256 blocks.
        ("M=2048,N=2048,K=2048", "h100", narrow),
        // 24 x 23 = 552 and 23 x 23 = 529 blocks, partial in every dimension: at
        // least 528 on the H100; 22 x 23 = 506 is fewer.
        ("M=2950,N=2900,K=37", "h100", wide),
        ("M=2900,N=2900,K=37", "h100", wide),
        ("M=2800,N=2900,K=37", "h100", narrow),
    ];
    for (params, target, want) in cases {
        assert_eq!(
            spec("examples/matmul.tc", params, target),
            want,
            "{params} {target}"
        );
    }
    // f64: 8 x 8 doubles would take all of a thread's register buffer.
    let dir = tempdir();
    let mm64 = write(
        dir.path(),
        "mm64.tc",
        "def mm64(f64(M, K) A, f64(K, N) B) -> (f64(M, N) C) {\n  C(i, j) +=! A(i, k) * B(k, j)\n}\n",
    );
    assert_eq!(spec(&mm64, "M=4096,N=4096,K=4096", "h100"), narrow);
    // The wide tile runs (a spec forces it at a size PoCL checks quickly).
    let tiles = write(dir.path(), "wide.tiles", &format!("{wide}\n"));
    run_gpu(
        "examples/matmul.tc",
        "M=133,N=261,K=37",
        &["--tile-spec", &tiles],
    );
}

/// FUZZ_FINDINGS.md F7: a full/partial tile split whose full arm holds a barrier and whose
/// partial arm does not made PoCL run the partial arm twice for one work-item (an update
/// applied twice). OpenCL kernels now end the barrier-free arm with a barrier too.
#[test]
fn a_barrier_in_one_arm_of_a_uniform_branch_is_balanced_for_pocl() {
    let dir = tempdir();
    let prog = write(
        dir.path(),
        "f.tc",
        "def f(f32(K, N, M) X1) -> (f32(N, K) T1) {\n  T0(k, j) = X1(k, i, j)\n  for once in 0:1 {\n    X1(k, i, j) += T0(k, j)\n  }\n  T1(i, k) = 1.0\n}\n",
    );
    let tiles = write(
        dir.path(),
        "t.tiles",
        "S_1: 1@shared, 3@register, 4@shared 4@register\n",
    );
    for params in ["N=5,M=1,K=7", "N=9,M=1,K=7"] {
        run_gpu(
            &prog,
            params,
            &["--scheduler", "ilp", "--tile-spec", &tiles],
        );
    }
    let cl = polyc_ok(&[
        &prog,
        "--param",
        "N=5,M=1,K=7",
        "--target",
        "gpu",
        "--scheduler",
        "ilp",
        "--tile-spec",
        &tiles,
        "--emit",
        "opencl",
    ]);
    let kernel = &cl[cl.find("void f_k1_S_1").expect("kernel 1")..];
    let els = &kernel[kernel.find("} else {").expect("a full/partial split")..];
    let arm = &els[..els.find("\n      }\n").expect("the end of the else arm")];
    assert!(
        arm.contains("barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);"),
        "{arm}"
    );
}

/// A register tile that the reduction's first step writes whole (a GEMM's `C`, set to 0 at
/// `k = 0`) is not copied in from global memory in that step. Where the tile stays in
/// registers across the steps (whole tiles), no copy-in is left at all; where partial tiles
/// keep it inside the reduction loop, each copy-in is guarded by the later steps. The
/// copy-out stays, and the results check at odd sizes.
#[test]
fn a_register_tile_written_whole_in_the_first_step_is_not_copied_in() {
    let none = [
        ("examples/matmul.tc", "M=1024,N=1024,K=1024"),
        ("examples/matmul_at.tc", "M=256,N=256,K=256"),
        ("examples/batch_matmul.tc", "BS=4,M=128,N=128,K=128"),
    ];
    let guarded = [
        ("examples/matmul.tc", "M=67,N=45,K=53"),
        ("examples/batch_matmul.tc", "BS=3,M=17,N=29,K=41"),
    ];
    for (prog, params) in none.iter().chain(&guarded) {
        for emit in ["cuda", "opencl"] {
            let src = polyc_ok(&[prog, "--param", params, "--target", "gpu", "--emit", emit]);
            let lines: Vec<&str> = src.lines().collect();
            let reads: Vec<usize> = (0..lines.len())
                .filter(|&i| lines[i].contains("] = C["))
                .collect();
            assert!(src.contains(" C["), "{prog} {params} ({emit})");
            if none.contains(&(prog, params)) {
                assert!(reads.is_empty(), "{prog} {params} ({emit}) reads C:\n{src}");
                continue;
            }
            assert!(!reads.is_empty(), "{prog} {params} ({emit})");
            for &i in &reads {
                let guard = lines[i.saturating_sub(5)..i].iter().any(|l| {
                    let l = l.trim_start();
                    l.starts_with("if (c") && l.ends_with(" >= 1) {")
                });
                assert!(
                    guard,
                    "{prog} {params} ({emit}): line {i} unguarded:\n{src}"
                );
            }
        }
        run_gpu(prog, params, &[]);
    }
}

/// nvcc fuses `a - b * c` into one multiply-add unless told not to, which rounds
/// differently from the interpreter: gramschmidt's `A(i, j) - Q(i, k) * R(k, j)` gave
/// its rank-deficient columns an error of 0.19 on an H100 (`polyc suite
/// specs/suites/polybench-gpu.yaml --target h100`, M = 20, N = 30). CUDA therefore
/// writes every f32 and f64 product as the round-to-nearest intrinsic, which nvcc never
/// fuses, whatever flags build the source; explicit `+= a * b` reductions keep their
/// single-rounding `fma`, as the interpreter computes them. OpenCL turns contraction
/// off with its pragma and keeps `*`.
#[test]
fn cuda_products_are_never_fused_with_an_addition() {
    let cases = [
        (
            "examples/polybench/gramschmidt.tc",
            "M=20,N=30",
            "(A[i * 30 + j] - __dmul_rn(polyc_tile1[((i - 0)) * 1 + (k - c0)], R[k * 30 + j]))",
            "(A[i * 30 + j] - (polyc_tile1[((i - 0)) * 1 + (k - c0)] * R[k * 30 + j]))",
        ),
        (
            "examples/layernorm.tc",
            "R=16,N=64",
            "__fmul_rn(",
            "#pragma OPENCL FP_CONTRACT OFF",
        ),
    ];
    for (prog, params, cuda_text, opencl_text) in cases {
        let cuda = polyc_ok(&[
            prog, "--param", params, "--target", "h100", "--emit", "cuda",
        ]);
        assert!(cuda.contains(cuda_text), "{prog}:\n{cuda}");
        let opencl = polyc_ok(&[
            prog, "--param", params, "--target", "h100", "--emit", "opencl",
        ]);
        assert!(opencl.contains(opencl_text), "{prog}:\n{opencl}");
        assert!(!opencl.contains("_rn("), "{prog}:\n{opencl}");
        // No product of two floating-point operands is left to nvcc's contraction.
        for line in cuda
            .lines()
            .filter(|l| l.contains("= (") && !l.contains("int"))
        {
            assert!(
                !line.contains("] * ") && !line.contains(") * ("),
                "{prog}: a bare product in\n{line}"
            );
        }
    }
    run_gpu("examples/polybench/gramschmidt.tc", "M=20,N=30", &[]);
}

/// Only tensors a kernel never writes are `restrict` parameters. With the row reduction's
/// result `mx` a restrict pointer that thread 0 writes, nvcc moved the other threads'
/// reads of `mx[r]` above the barrier that follows the write (visible in the PTX: the
/// load sits before `bar.sync`), so softmax with a dynamic row count wrote zeros on an
/// H100 (`polyc suite specs/suites/dynamic.yaml --target h100`: `softmax.tc N=96 dynamic
/// R=1..128` failed at every sample). PoCL ran it correctly, so the check is on the
/// source: every example, static and dynamic, in both dialects.
#[test]
fn only_read_only_tensors_are_restrict() {
    let mut cases: Vec<(&str, &str, Vec<&str>)> =
        EXAMPLES.iter().map(|(p, s)| (*p, *s, Vec::new())).collect();
    cases.push(("examples/softmax.tc", "N=96", vec!["--dynamic", "R=1..128"]));
    cases.push(("examples/softmax.tc", "R=16", vec!["--dynamic", "N=1..128"]));
    let mut restrict_params = 0;
    for (prog, params, extra) in &cases {
        for emit in ["cuda", "opencl"] {
            let mut args = vec![*prog, "--param", params, "--target", "h100", "--emit", emit];
            args.extend(extra.iter().copied());
            let src = polyc_ok(&args);
            for line in src
                .lines()
                .filter(|l| l.contains("__global__ void") || l.starts_with("__kernel"))
            {
                let params = line.split_once('(').map_or("", |(_, p)| p);
                for p in params.split(',') {
                    if p.contains("restrict") {
                        restrict_params += 1;
                        assert!(
                            p.contains("const "),
                            "{prog} {params} ({emit}): `{p}` in\n{line}"
                        );
                    }
                }
            }
        }
    }
    assert!(
        restrict_params > 0,
        "no restrict parameter was seen: the check checked nothing"
    );
    let src = polyc_ok(&[
        "examples/softmax.tc",
        "--param",
        "N=96",
        "--dynamic",
        "R=1..128",
        "--target",
        "h100",
    ]);
    assert!(
        src.contains("float *Y, float *mx, float *e, float *s)"),
        "{src}"
    );
}
