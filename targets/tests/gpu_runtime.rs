//! The GPU runtime layer on hand-written kernels: OpenCL through PoCL (run and compared
//! with plain Rust loops), CUDA through nvcc (ptxas's resource report), and the cudarc
//! driver guard.
//!
//! The OpenCL tests need an OpenCL device and the CUDA compile tests need nvcc; both are
//! installed by `scripts/install-deps`. Without nvcc the CUDA tests fail with that hint,
//! unless `POLYC_SKIP_NVCC=1`, which skips them with a message.

use targets::gpu::cuda_tools::{
    compile_cuda, compile_ptx, cuda_driver_status, find_nvcc, run_cuda, NO_DRIVER,
};
use targets::gpu::launch::{Launch, LaunchArg};
use targets::gpu::opencl_runner::{opencl_device, opencl_devices, run_opencl};

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_ne_bytes()).collect()
}

fn bytes_f32(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_ne_bytes(c.try_into().unwrap()))
        .collect()
}

/// Deterministic values in [-1, 1) (a small LCG; no rand dependency needed).
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32) / ((1u64 << 23) as f32) - 1.0
        })
        .collect()
}

fn launch(kernel: &str, grid: [usize; 3], block: [usize; 3], args: Vec<LaunchArg>) -> Launch {
    Launch {
        dynamic_shared: 0,
        kernel: kernel.into(),
        grid,
        block,
        args,
    }
}

/// A 16x16 work-group tiled matmul with `__local` tiles and barriers, bounds-guarded for
/// any size, with `long` sizes. Contraction is off so that it rounds like the Rust loop.
const MATMUL_CL: &str = r#"
#pragma OPENCL FP_CONTRACT OFF
#define T 16
__kernel void matmul(__global const float* A, __global const float* B,
                     __global float* C, long M, long N, long K) {
  __local float As[T][T + 1];
  __local float Bs[T][T + 1];
  const int tx = get_local_id(0), ty = get_local_id(1);
  const long i = (long)get_group_id(1) * T + ty;
  const long j = (long)get_group_id(0) * T + tx;
  float acc = 0.0f;
  for (long k0 = 0; k0 < K; k0 += T) {
    As[ty][tx] = (i < M && k0 + tx < K) ? A[i * K + k0 + tx] : 0.0f;
    Bs[ty][tx] = (j < N && k0 + ty < K) ? B[(k0 + ty) * N + j] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < T; ++k) {
      if (k0 + k < K) acc += As[ty][k] * Bs[k][tx];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (i < M && j < N) C[i * N + j] = acc;
}
"#;

fn matmul_ref(a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> Vec<f32> {
    let mut c = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0f32;
            for kk in 0..k {
                acc += a[i * k + kk] * b[kk * n + j];
            }
            c[i * n + j] = acc;
        }
    }
    c
}

#[test]
fn opencl_tiled_matmul_matches_rust_at_odd_sizes() {
    let (m, n, k) = (37usize, 53usize, 29usize);
    let a = values(m * k, 1);
    let b = values(k * n, 2);
    let mut ab = f32_bytes(&a);
    let mut bb = f32_bytes(&b);
    let mut cb = f32_bytes(&vec![f32::NAN; m * n]);
    let plan = [launch(
        "matmul",
        [n.div_ceil(16), m.div_ceil(16), 1],
        [16, 16, 1],
        vec![
            LaunchArg::Buffer(0),
            LaunchArg::Buffer(1),
            LaunchArg::Buffer(2),
            LaunchArg::I64(m as i64),
            LaunchArg::I64(n as i64),
            LaunchArg::I64(k as i64),
        ],
    )];
    let run = run_opencl(MATMUL_CL, &plan, &mut [&mut ab, &mut bb, &mut cb]).unwrap();
    assert_eq!(run.launches_run, 1);
    assert!(!run.device.is_empty() && !run.platform.is_empty());
    let got = bytes_f32(&cb);
    let want = matmul_ref(&a, &b, m, n, k);
    for (idx, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "C[{}][{}]", idx / n, idx % n);
    }
    // Inputs come back unchanged.
    assert_eq!(bytes_f32(&ab), a);
}

/// Every scalar argument type reaches the kernel with its value (int64 sizes included,
/// one larger than 2^32).
#[test]
fn opencl_scalar_arguments_of_every_type() {
    let src = r#"
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void scalars(__global long* out, long a, int b, float c, double d, char e) {
  if (get_global_id(0) == 0) {
    out[0] = a; out[1] = b; out[2] = (long)(c * 4.0f); out[3] = (long)(d * 8.0); out[4] = e;
  }
}
"#;
    if !opencl_device(None).unwrap().fp64 {
        // The device check must refuse the double argument before building.
        let mut out = vec![0u8; 40];
        let plan = [launch(
            "scalars",
            [1, 1, 1],
            [1, 1, 1],
            vec![LaunchArg::Buffer(0), LaunchArg::F64(1.0)],
        )];
        let e = run_opencl(src, &plan, &mut [&mut out]).unwrap_err();
        assert!(e.to_string().contains("has no double precision"), "{e}");
        return;
    }
    let mut out = vec![0u8; 5 * 8];
    let plan = [launch(
        "scalars",
        [1, 1, 1],
        [1, 1, 1],
        vec![
            LaunchArg::Buffer(0),
            LaunchArg::I64(5_000_000_007),
            LaunchArg::I32(-7),
            LaunchArg::F32(2.5),
            LaunchArg::F64(-0.625),
            LaunchArg::I8(-3),
        ],
    )];
    run_opencl(src, &plan, &mut [&mut out]).unwrap();
    let got: Vec<i64> = out
        .chunks_exact(8)
        .map(|c| i64::from_ne_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(got, vec![5_000_000_007, -7, 10, -5, -3]);
}

/// A `half` argument runs where the device has `cl_khr_fp16` and is refused clearly where
/// it does not (PoCL's CPU device has none).
#[test]
fn opencl_half_argument_needs_fp16() {
    let src = r#"
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
__kernel void widen(__global float* out, half x) { out[0] = (float)x; }
"#;
    let mut out = vec![0u8; 4];
    let plan = [launch(
        "widen",
        [1, 1, 1],
        [1, 1, 1],
        vec![
            LaunchArg::Buffer(0),
            LaunchArg::F16(half::f16::from_f32(-1.5)),
        ],
    )];
    let dev = opencl_device(None).unwrap();
    let r = run_opencl(src, &plan, &mut [&mut out]);
    if dev.fp16 {
        r.unwrap();
        assert_eq!(bytes_f32(&out), vec![-1.5]);
    } else {
        let e = r.unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "kernel `widen` takes a half argument, but OpenCL device `{}` ({}) lacks \
                 cl_khr_fp16; choose another device with POLYC_OPENCL_DEVICE",
                dev.name, dev.platform
            )
        );
    }
}

/// Launches run in order: the second reads what the first wrote, the third updates it in
/// place; an empty-grid launch is skipped and an empty buffer is fine.
#[test]
fn opencl_launches_run_in_order() {
    let src = r#"
__kernel void twice(__global const float* x, __global float* y, long n) {
  long i = get_global_id(0);
  if (i < n) y[i] = 2.0f * x[i];
}
__kernel void add_one(__global const float* y, __global float* z, long n) {
  long i = get_global_id(0);
  if (i < n) z[i] = y[i] + 1.0f;
}
__kernel void square_in_place(__global float* z, __global float* unused, long n) {
  long i = get_global_id(0);
  if (i < n) z[i] = z[i] * z[i];
}
"#;
    let n = 100usize;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut xb = f32_bytes(&x);
    let mut yb = f32_bytes(&vec![f32::NAN; n]);
    let mut zb = f32_bytes(&vec![f32::NAN; n]);
    let mut empty: Vec<u8> = Vec::new();
    let nn = LaunchArg::I64(n as i64);
    let blocks = [n.div_ceil(32), 1, 1];
    let plan = [
        launch(
            "twice",
            blocks,
            [32, 1, 1],
            vec![LaunchArg::Buffer(0), LaunchArg::Buffer(1), nn],
        ),
        launch(
            "add_one",
            blocks,
            [32, 1, 1],
            vec![LaunchArg::Buffer(1), LaunchArg::Buffer(2), nn],
        ),
        // No work: skipped (it would fail on its zero-sized argument otherwise).
        launch(
            "twice",
            [0, 1, 1],
            [32, 1, 1],
            vec![
                LaunchArg::Buffer(3),
                LaunchArg::Buffer(3),
                LaunchArg::I64(0),
            ],
        ),
        launch(
            "square_in_place",
            blocks,
            [32, 1, 1],
            vec![LaunchArg::Buffer(2), LaunchArg::Buffer(3), nn],
        ),
    ];
    let run = run_opencl(src, &plan, &mut [&mut xb, &mut yb, &mut zb, &mut empty]).unwrap();
    assert_eq!(run.launches_run, 3);
    let y = bytes_f32(&yb);
    let z = bytes_f32(&zb);
    for i in 0..n {
        let yi = 2.0 * i as f32;
        assert_eq!(y[i], yi, "y[{i}]");
        assert_eq!(z[i], (yi + 1.0) * (yi + 1.0), "z[{i}]");
    }
}

#[test]
fn opencl_build_failure_carries_the_log() {
    let src = "__kernel void broken(__global float* x) { x[0] = not_declared_anywhere; }\n";
    let plan = [launch(
        "broken",
        [1, 1, 1],
        [1, 1, 1],
        vec![LaunchArg::Buffer(0)],
    )];
    let mut x = vec![0u8; 4];
    let e = run_opencl(src, &plan, &mut [&mut x]).unwrap_err();
    let text = format!("{e:?}");
    assert!(
        text.contains("the OpenCL C source does not compile"),
        "{text}"
    );
    assert!(text.contains("CL_BUILD_PROGRAM_FAILURE"), "{text}");
    // The compiler's own diagnostic, from the build log.
    assert!(text.contains("not_declared_anywhere"), "{text}");
    assert!(text.contains("bug in polyc's OpenCL emitter"), "{text}");
}

#[test]
fn opencl_plan_errors_are_explained() {
    let src = "__kernel void one(__global float* x, long n) { x[0] = (float)n; }\n";
    let mut x = vec![0u8; 4];
    let missing = [launch(
        "two",
        [1, 1, 1],
        [1, 1, 1],
        vec![LaunchArg::Buffer(0), LaunchArg::I64(1)],
    )];
    let e = run_opencl(src, &missing, &mut [&mut x])
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("kernel `two` is not in the OpenCL program")
            && e.ends_with("it defines: one"),
        "{e}"
    );
    let arity = [launch(
        "one",
        [1, 1, 1],
        [1, 1, 1],
        vec![LaunchArg::Buffer(0)],
    )];
    let e = run_opencl(src, &arity, &mut [&mut x])
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "kernel `one` takes 2 arguments but the launch passes 1 (a bug in polyc's GPU \
         emitter if it made the plan)"
    );
    let bad_buffer = [launch(
        "one",
        [1, 1, 1],
        [1, 1, 1],
        vec![LaunchArg::Buffer(1), LaunchArg::I64(1)],
    )];
    let e = run_opencl(src, &bad_buffer, &mut [&mut x])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("argument 0 names buffer 1, but only 1 buffers"),
        "{e}"
    );
    // A parameter whose size differs from the argument's (int given for long).
    let wrong_type = [launch(
        "one",
        [1, 1, 1],
        [1, 1, 1],
        vec![LaunchArg::Buffer(0), LaunchArg::I32(1)],
    )];
    let e = run_opencl(src, &wrong_type, &mut [&mut x])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("setting argument 1 (int32) of kernel `one` failed"),
        "{e}"
    );
}

#[test]
fn opencl_device_selection() {
    let devices = opencl_devices().unwrap();
    assert!(!devices.is_empty());
    let first = opencl_device(Some(&devices[0].name)).unwrap();
    assert_eq!(first, devices[0]);
    let e = opencl_device(Some("no-such-device-xyz"))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(
            "the OpenCL device selector `no-such-device-xyz` (POLYC_OPENCL_DEVICE) matches no \
             device; the devices are: `"
        ),
        "{e}"
    );
}

/// The same tiled matmul in CUDA, `extern "C"` so that its symbol is its name.
const MATMUL_CU: &str = r#"
#define T 16
extern "C" __global__ void __launch_bounds__(256)
matmul(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
       long long M, long long N, long long K) {
  __shared__ float As[T][T + 1];
  __shared__ float Bs[T][T + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const long long i = (long long)blockIdx.y * T + ty;
  const long long j = (long long)blockIdx.x * T + tx;
  float acc = 0.0f;
  for (long long k0 = 0; k0 < K; k0 += T) {
    As[ty][tx] = (i < M && k0 + tx < K) ? A[i * K + k0 + tx] : 0.0f;
    Bs[ty][tx] = (j < N && k0 + ty < K) ? B[(k0 + ty) * N + j] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < T; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (i < M && j < N) C[i * N + j] = acc;
}
"#;

/// `true` when nvcc is there; without it, fails with the install hint unless
/// `POLYC_SKIP_NVCC=1`.
fn nvcc_or_skip(test: &str) -> bool {
    if find_nvcc().is_some() {
        return true;
    }
    if std::env::var("POLYC_SKIP_NVCC").as_deref() == Ok("1") {
        eprintln!("{test}: SKIPPED: nvcc is not installed and POLYC_SKIP_NVCC=1");
        return false;
    }
    panic!(
        "{test}: nvcc is not installed: run scripts/install-deps (or set POLYC_SKIP_NVCC=1 \
         to skip the CUDA compile tests)"
    );
}

#[test]
fn cuda_tiled_matmul_compiles_without_spills() {
    if !nvcc_or_skip("cuda_tiled_matmul_compiles_without_spills") {
        return;
    }
    for arch in ["sm_80", "sm_90"] {
        let report = compile_cuda(MATMUL_CU, arch).unwrap();
        assert_eq!(report.kernels.len(), 1, "{arch}: {}", report.log);
        let k = report.kernel("matmul").unwrap();
        assert_eq!(k.name, "matmul");
        assert!(k.registers > 0 && k.registers <= 255, "{arch}: {k:?}");
        assert_eq!(k.shared_bytes, 2 * 16 * 17 * 4, "{arch}: {k:?}");
        assert_eq!(
            (k.spill_store_bytes, k.spill_load_bytes),
            (0, 0),
            "{arch}: {k:?}"
        );
    }
    let ptx = compile_ptx(MATMUL_CU, "sm_80").unwrap();
    assert!(ptx.contains(".target sm_80"), "{ptx}");
    assert!(ptx.contains(".entry matmul("), "{ptx}");
}

/// Several kernels are reported by name, and a private array indexed at run time shows up
/// as a stack frame (local memory), unlike one with constant indices after unrolling.
#[test]
fn cuda_report_lists_every_kernel_and_local_memory() {
    if !nvcc_or_skip("cuda_report_lists_every_kernel_and_local_memory") {
        return;
    }
    let src = r#"
extern "C" __global__ void dynamic_index(float* x, int j) {
  float a[64];
  for (int i = 0; i < 64; ++i) a[i] = x[i] * 2.0f;
  for (int i = 0; i < 64; ++i) a[(i * j) & 63] += a[(i + j) & 63];
  x[threadIdx.x] = a[(j + threadIdx.x) & 63];
}
extern "C" __global__ void constant_index(float* x) {
  float a[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) a[i] = x[i] * 2.0f;
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < 8; ++i) s += a[i];
  x[threadIdx.x] = s;
}
"#;
    let report = compile_cuda(src, "sm_80").unwrap();
    let mut names: Vec<&str> = report.kernels.iter().map(|k| k.name.as_str()).collect();
    names.sort();
    assert_eq!(
        names,
        vec!["constant_index", "dynamic_index"],
        "{}",
        report.log
    );
    let dynamic = report.kernel("dynamic_index").unwrap();
    let constant = report.kernel("constant_index").unwrap();
    assert!(
        dynamic.stack_frame_bytes >= 64 * 4,
        "{dynamic:?}\n{}",
        report.log
    );
    assert_eq!(
        constant.stack_frame_bytes, 0,
        "{constant:?}\n{}",
        report.log
    );
    assert_eq!(constant.shared_bytes, 0);
}

#[test]
fn cuda_compile_error_carries_nvcc_output() {
    if !nvcc_or_skip("cuda_compile_error_carries_nvcc_output") {
        return;
    }
    let src = "extern \"C\" __global__ void k(float* x) { x[0] = undeclared_thing; }\n";
    let e = format!("{:?}", compile_cuda(src, "sm_80").unwrap_err());
    assert!(e.contains("nvcc failed"), "{e}");
    assert!(e.contains("undeclared_thing"), "{e}");
    let e = compile_cuda(src, "80").unwrap_err().to_string();
    assert_eq!(
        e,
        "`80` is not a CUDA architecture: write it like sm_80, sm_90 or sm_90a"
    );
}

/// Without libcuda (this machine, CI), asking for CUDA is an error and never a panic.
#[test]
fn cuda_driver_guard_errors_without_a_driver() {
    // SAFETY: only tries to dlopen libcuda.
    let present = unsafe { cudarc::driver::sys::is_culib_present() };
    let status = cuda_driver_status();
    let mut buf = vec![0u8; 4];
    let plan = [launch(
        "k",
        [1, 1, 1],
        [1, 1, 1],
        vec![LaunchArg::Buffer(0)],
    )];
    let run = run_cuda(".version 8.0\n", &plan, &mut [&mut buf]);
    if present {
        // A machine with a driver: whatever happens, it was not a panic.
        eprintln!("libcuda is present: cuda_driver_status() = {status:?}");
        return;
    }
    assert_eq!(status.unwrap_err().to_string(), NO_DRIVER);
    assert_eq!(run.unwrap_err().to_string(), NO_DRIVER);
    assert_eq!(
        NO_DRIVER,
        "no CUDA driver (libcuda) on this machine: use --device opencl"
    );
}
