//! Row kernels on the GPU target (`targets/src/gpu/rows.rs`): chains of row reductions and
//! row-wise statements (softmax, layer norm, attention, GEMV-like rows) run as one kernel
//! with a block per row and reductions across the block's threads. Checked against the
//! interpreter on OpenCL (PoCL here) in f32 and f64 at odd sizes, for the examples and for
//! other ways to write the same operators; the CUDA text and nvcc; the cases that keep the
//! usual mapping; and a broken block reduction that `--check` catches.

mod common;
use common::*;

/// Softmax without the `e` temporary: the exponential is computed twice.
const SOFTMAX_RECOMPUTED: &str = "\
def softmax2(f32(R, N) X) -> (f32(R, N) Y) {
  mx(r) max=! X(r, j)
  s(r) +=! exp(X(r, j) - mx(r))
  Y(r, j) = exp(X(r, j) - mx(r)) / s(r)
}
";

/// Layer norm from the sums of x and x², in one pass over the row.
const LAYERNORM_MOMENTS: &str = "\
def layernorm2(f32(R, N) X, f32(N) g, f32(N) b) -> (f32(R, N) Y) {
  s1(r) +=! X(r, j)
  s2(r) +=! X(r, j) * X(r, j)
  Y(r, j) = (X(r, j) - s1(r) / N) * rsqrt(s2(r) / N - (s1(r) / N) * (s1(r) / N) + 0.00001) * g(j) + b(j)
}
";

/// The range of each row: a `min` and a `max` reduction into per-row results.
const ROW_RANGE: &str = "\
def rowrange(f32(R, N) X) -> (f32(R) Y) {
  lo(r) min=! X(r, j)
  hi(r) max=! X(r, j)
  Y(r) = hi(r) - lo(r)
}
";

/// A GEMM whose rows then go through a softmax.
const GEMM_SOFTMAX: &str = "\
def gemm_softmax(f32(M, K) A, f32(K, N) B) -> (f32(M, N) Y) {
  C(i, j) +=! A(i, k) * B(k, j)
  mx(i) max=! C(i, j)
  e(i, j) = exp(C(i, j) - mx(i))
  s(i) +=! e(i, j)
  Y(i, j) = e(i, j) / s(i)
}
";

/// The explain line of a row kernel, if `explain` prints one.
fn row_line(prog: &str, params: &str) -> Option<String> {
    let out = polyc_ok(&["explain", prog, "--param", params, "--target", "gpu"]);
    out.lines()
        .find(|l| l.starts_with("row kernel: "))
        .map(str::to_string)
}

/// `--check` on PoCL passes (every output `ok`).
fn checks(prog: &str, params: &str) {
    let o = polyc(&["run", prog, "--param", params, "--target", "gpu", "--check"]);
    assert_code(&o, 0);
    let out = stdout(&o);
    assert!(
        !out.is_empty() && out.lines().all(|l| l.ends_with(" ok")),
        "{prog} {params}: {out}"
    );
}

#[test]
fn row_chains_check_in_f32_and_f64_at_odd_sizes() {
    let dir = tempdir();
    let cases: Vec<(String, &str, &str)> = vec![
        (abs("examples/softmax.tc"), "R=37,N=301", "S_1, S_4 reduce"),
        (
            abs("examples/layernorm.tc"),
            "R=33,N=517",
            "S_1, S_5 reduce",
        ),
        (abs("examples/attention.tc"), "L=45,D=19", "S_3, S_6 reduce"),
        (
            abs("examples/polybench/gesummv.tc"),
            "N=67",
            "S_1, S_3 reduce",
        ),
        (
            write(dir.path(), "softmax2.tc", SOFTMAX_RECOMPUTED),
            "R=29,N=1001",
            // The exponential is computed once, by a new S_2 (README "Shared
            // subexpressions"), so the sum is S_4.
            "S_1, S_4 reduce",
        ),
        (
            write(dir.path(), "layernorm2.tc", LAYERNORM_MOMENTS),
            "R=31,N=257",
            "S_1, S_3 reduce",
        ),
        (
            write(dir.path(), "rowrange.tc", ROW_RANGE),
            "R=3,N=4099",
            "S_1, S_3 reduce",
        ),
    ];
    for (prog, params, reduced) in &cases {
        let line = row_line(prog, params).unwrap_or_else(|| panic!("{prog}: no row kernel"));
        assert!(line.contains(reduced), "{prog}: {line}");
        checks(prog, params);
        let src = std::fs::read_to_string(prog).unwrap();
        let name = std::path::Path::new(prog)
            .file_name()
            .unwrap()
            .to_string_lossy();
        let f64 = write(
            dir.path(),
            &format!("f64_{name}"),
            &src.replace("f32", "f64"),
        );
        assert!(row_line(&f64, params).is_some(), "{prog} in f64");
        checks(&f64, params);
    }
}

#[test]
fn softmax_is_one_kernel_with_rows_in_shared_memory() {
    let dir = tempdir();
    let cu = dir.path().join("softmax.cu");
    polyc_ok(&[
        "examples/softmax.tc",
        "--param",
        "R=8192,N=4096",
        "--target",
        "h100",
        "-o",
        cu.to_str().unwrap(),
    ]);
    let src = std::fs::read_to_string(&cu).unwrap();
    assert_eq!(src.matches("__global__ void").count(), 1, "{src}");
    assert!(
        src.contains("/* kernel 0: S_0, S_1, S_2, S_3, S_4, S_5; block 256 x 1 x 1 threads */"),
        "{src}"
    );
    for want in [
        "float polyc_tile1[4097]; /* tile of e (1 x 4096) in shared memory */",
        "__shared__ float polyc_red_f32[256]; /* partial results of block reductions */",
        "polyc_block_reduce_max_f32(polyc_tile",
        "polyc_block_reduce_add_f32(polyc_tile",
        "__shfl_xor_sync(0xffffffffu, v, o)",
    ] {
        assert!(src.contains(want), "missing {want}:\n{src}");
    }
    // The temporary `e` lives in shared memory only: no global array for it.
    assert!(!src.contains("(void **)&e,"), "{src}");
    let out = polyc_ok(&[
        "explain",
        "examples/softmax.tc",
        "--param",
        "R=8192,N=4096",
        "--target",
        "h100",
    ]);
    assert!(
        out.contains("row kernel: every statement runs per row `r` in one kernel, a block per row; S_1, S_4 reduce the row across the block's threads\n"),
        "{out}"
    );
    if let Some(nvcc) = targets::gpu::cuda_tools::find_nvcc() {
        let o = std::process::Command::new(nvcc)
            .args(["-arch=sm_90", "-c"])
            .arg(&cu)
            .arg("-o")
            .arg(dir.path().join("k.o"))
            .output()
            .expect("nvcc runs");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    } else {
        assert!(
            std::env::var_os("POLYC_SKIP_NVCC").is_some(),
            "nvcc is not installed: run scripts/install-deps (or set POLYC_SKIP_NVCC=1 to skip)"
        );
    }
}

#[test]
fn short_rows_columns_and_tile_specs_keep_the_usual_mapping() {
    let dir = tempdir();
    // Rows shorter than a warp.
    assert_eq!(row_line("examples/softmax.tc", "R=64,N=20"), None);
    checks("examples/softmax.tc", "R=64,N=20");
    // A column sum beside a row sum: the column's threads would not read consecutive
    // elements.
    assert_eq!(row_line("examples/polybench/bicg.tc", "N=67,M=45"), None);
    checks("examples/polybench/bicg.tc", "N=67,M=45");
    // A GEMM in front: a row kernel while its per-row work is small (every block reads
    // all of B), a tiled GEMM beyond 2^18 multiply-adds per row.
    let gs = write(dir.path(), "gemm_softmax.tc", GEMM_SOFTMAX);
    assert!(row_line(&gs, "M=9,N=301,K=100").is_some());
    checks(&gs, "M=9,N=301,K=100");
    assert_eq!(row_line(&gs, "M=9,N=601,K=600"), None);
    checks(&gs, "M=9,N=601,K=600");
    // POLYC_ROW_KERNELS=0 turns the row kernels off (for measuring), and a tile spec is
    // the user's mapping.
    let spec = write(dir.path(), "s.tiles", "S_5: 8@shared, 32@shared\n");
    let explain = [
        "explain",
        "examples/softmax.tc",
        "--param",
        "R=37,N=301",
        "--target",
        "gpu",
    ];
    let mut with_spec = explain.to_vec();
    with_spec.extend(["--tile-spec", spec.as_str()]);
    for (args, off) in [(explain.to_vec(), "0"), (with_spec, "1")] {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_polyc"))
            .args(&args)
            .current_dir(root())
            .env("POLYC_ROW_KERNELS", off)
            .output()
            .expect("polyc runs");
        assert_code(&o, 0);
        assert!(
            !stdout(&o).contains("row kernel"),
            "{args:?}: {}",
            stdout(&o)
        );
    }
}

/// With the block reduction's last combining step left out
/// (`POLYC_BLOCK_REDUCE_FAULT=1`), `--check` fails: the checks above run the block
/// reductions.
#[test]
fn a_broken_block_reduction_fails_the_check() {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_polyc"))
        .args([
            "run",
            "examples/softmax.tc",
            "--param",
            "R=37,N=301",
            "--target",
            "gpu",
            "--check",
        ])
        .current_dir(root())
        .env("POLYC_BLOCK_REDUCE_FAULT", "1")
        .output()
        .expect("polyc runs");
    assert_code(&o, 3);
    assert!(stdout(&o).contains("Y: max_abs_err="), "{}", stdout(&o));
    assert!(stdout(&o).contains(" MISMATCH ("), "{}", stdout(&o));
}
