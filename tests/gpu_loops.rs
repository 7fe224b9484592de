//! The GPU target and the program's `for` loops (`targets::gpu::policy`): a band of
//! statements inside `for` loops, enclosed only by sequential bands that the host runs,
//! gets the policy's block tiles like an outermost band (PolyBench's jacobi-2d: 8 × 32
//! tiles, 128 threads per block, where each launch ran one thread per block), with `_`
//! in the tile spec for the host loops' members. Checked on OpenCL (PoCL) against the
//! interpreter, in f32 and f64, at sizes with partial tiles; and fusion that would need a
//! tile-local buffer larger than shared memory is cancelled with a note. A recurrence (a
//! stencil over an explicit time dimension) is never fused, so its spatial band, under
//! the sequential time band isl made, gets block tiles too.

mod common;
use common::*;

/// `polyc run PROG --param PARAMS --target gpu --check`: asserts every tensor matched.
fn checked_gpu(prog: &str, params: &str, extra: &[&str]) -> String {
    let mut args = vec!["run", prog, "--param", params, "--target", "gpu", "--check"];
    args.extend_from_slice(extra);
    assert_checked(&polyc(&args), &format!("{prog} {params} {extra:?}"))
}

#[test]
fn bands_inside_host_loops_get_block_tiles() {
    let file = abs("examples/polybench/jacobi_2d.tc");
    let out = polyc_ok(&["explain", &file, "--param", "N=130,T=20", "--target", "gpu"]);
    assert!(
        out.contains("tile spec:\nS_0: _, 8@shared, 32@shared\nS_1: _, 8@shared, 32@shared\n"),
        "{out}"
    );
    assert!(
        out.contains(
            "kernel 0 `jacobi_2d_k0_S_0` (S_0)\n    grid 5 x 17 x 1 blocks; block 32 x 4 x 1 = 128 threads"
        ),
        "{out}"
    );
    assert!(!out.contains("block 1 x 1 x 1 = 1 threads"), "{out}");
}

#[test]
fn loop_kernels_match_the_interpreter_on_opencl() {
    let dir = tempdir();
    let jacobi = std::fs::read_to_string(abs("examples/polybench/jacobi_2d.tc")).expect("jacobi");
    let jacobi_f32 = write(dir.path(), "j32.tc", &jacobi.replace("f64", "f32"));
    let cases = [
        (abs("examples/polybench/jacobi_2d.tc"), "N=37,T=5"),
        (jacobi_f32, "N=45,T=3"),
        (abs("examples/polybench/fdtd_2d.tc"), "NX=19,NY=37,T=4"),
        (abs("examples/polybench/lu.tc"), "N=29"),
        (abs("examples/polybench/gramschmidt.tc"), "M=21,N=13"),
        (abs("examples/polybench/jacobi_1d.tc"), "N=300,T=7"),
    ];
    for (file, params) in &cases {
        checked_gpu(file, params, &[]);
    }
}

#[test]
fn untiled_entries_round_trip_through_a_tile_spec() {
    let dir = tempdir();
    let spec = write(
        dir.path(),
        "j.tiles",
        "S_0: _, 4@shared, 16@shared\nS_1: _, 8@shared, 8@shared\n",
    );
    let file = abs("examples/polybench/jacobi_2d.tc");
    let explain = |spec: &str| {
        polyc(&[
            "explain",
            &file,
            "--param",
            "N=37,T=5",
            "--target",
            "gpu",
            "--tile-spec",
            spec,
        ])
    };
    let o = explain(&spec);
    assert_code(&o, 0);
    let out = stdout(&o);
    assert!(
        out.contains("S_0: _, 4@shared, 16@shared\nS_1: _, 8@shared, 8@shared\n"),
        "{out}"
    );
    checked_gpu(&file, "N=37,T=5", &["--tile-spec", &spec]);
    // `_` alone is not a size.
    let bad = write(dir.path(), "bad.tiles", "S_0: _@shared\n");
    let o = explain(&bad);
    assert_code(&o, 1);
    let err = flat(&stderr(&o));
    assert!(
        err.contains("bad.tiles:1:7: expected `,` after `_`, found `@`")
            && err.contains("`_` alone leaves a dimension untiled"),
        "{err}"
    );
}

#[test]
fn fusion_that_would_overflow_shared_memory_is_cancelled() {
    // Each tile of C reads T's row at j and at K - 1 - j: its box spans the whole row.
    let dir = tempdir();
    let file = write(
        dir.path(),
        "mirror.tc",
        "def mirror(f32(M, K) A) -> (f32(M, K) C) {\n  T(i, k) = A(i, k) * 2.0\n  \
         C(i, j) = T(i, j) + T(i, K - 1 - j)\n}\n",
    );
    let out = polyc_ok(&[
        "explain",
        &file,
        "--param",
        "M=37,K=8000",
        "--target",
        "gpu",
    ]);
    assert!(
        out.contains(
            "fusion: fusion cancelled: the tile-local buffer of T (256000 bytes per tile) would \
             not fit shared (166912 bytes)"
        ),
        "{out}"
    );
    checked_gpu(&file, "M=37,K=8000", &[]);
}

/// The fallback a recurrence gets from post-tiling fusion.
const RECURRENCE: &str = "it reads what its own earlier instances wrote to other elements (a \
                          recurrence): each tile would recompute every earlier step";

#[test]
fn explicit_time_stencils_launch_a_parallel_kernel_per_step() {
    // isl puts the stencil's time dimension in a sequential band of its own; fusion leaves
    // the recurrence alone (it pulled every plane into one block before), so its spatial
    // band gets block tiles and the host launches it once per step.
    let file = abs("examples/polybench/jacobi_2d_time.tc");
    let out = polyc_ok(&["explain", &file, "--param", "N=30,T=20", "--target", "gpu"]);
    assert!(
        out.contains(&format!("  not fused S_9: {RECURRENCE}\n")),
        "{out}"
    );
    assert!(
        out.contains(
            "kernel 9 `jacobi_2d_time_k9_S_9` (S_9)\n    grid 2 x 4 x 1 blocks; block 32 x 4 x 1 = 128 threads"
        ),
        "{out}"
    );
    let dir = tempdir();
    let text = std::fs::read_to_string(&file).expect("jacobi_2d_time");
    let f32_file = write(dir.path(), "jt32.tc", &text.replace("f64", "f32"));
    checked_gpu(&file, "N=37,T=9", &[]);
    checked_gpu(&f32_file, "N=45,T=4", &[]);
    // A running sum down the rows, in program order: its recurrence is not fused either.
    let scan = write(
        dir.path(),
        "scan.tc",
        "def scan(f32(N, M) A) -> (f32(N, M) C) {\n  f32(N, M) P\n  P(0, j) = A(0, j)\n  \
         P(i, j) = P(i - 1, j) + A(i, j) where i in 1:N\n  C(i, j) = P(i, j) * 2.0\n}\n",
    );
    let args = [
        "--param",
        "N=37,M=45",
        "--target",
        "gpu",
        "--scheduler",
        "initial",
    ];
    let out = polyc_ok(&[&["explain", scan.as_str()][..], &args[..]].concat());
    assert!(
        out.contains(&format!("  not fused S_1: {RECURRENCE}\n")),
        "{out}"
    );
    checked_gpu(&scan, "N=37,M=45", &["--scheduler", "initial"]);
}
