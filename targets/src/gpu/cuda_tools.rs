//! CUDA tooling: finding `nvcc`, compiling CUDA C++ to cubin (with ptxas's resource
//! report) or PTX, and running PTX on a real GPU through `cudarc`.
//!
//! # nvcc
//!
//! [`find_nvcc`] looks, in order, at `$POLYC_NVCC`, `nvcc` on `PATH`, and the PyPI wheel
//! `nvidia-cuda-nvcc` (CUDA 13: `<site-packages>/nvidia/cu13/bin/nvcc`; CUDA 12 layouts
//! `nvidia/cu12/bin/nvcc` and `nvidia/cuda_nvcc/bin/nvcc` too), asking `python3` for its
//! site-packages directories. The wheel's `nvcc.profile` already adds its `include/` and
//! the `nvidia-cuda-cccl` headers (`include/cccl`), so `cuda_runtime.h`, `cuda_fp16.h`,
//! `mma.h` and `cuda_pipeline.h` work with no `-I`. nvcc runs the host compiler's
//! preprocessor even for device-only output, so `gcc` must be on `PATH` (Debian 12's
//! gcc 12 works with CUDA 13; `scripts/install-deps` installs it).
//!
//! # Running
//!
//! [`run_cuda`] loads PTX with the CUDA driver (`libcuda`, loaded at run time, so polyc
//! builds and runs without CUDA). cudarc panics when the driver is missing, so every entry
//! first checks that `libcuda` loads, then initialises the driver and counts devices,
//! mapping each failure to an error, and runs the rest under `catch_unwind` as a last
//! guard. The driver compiles the PTX for the device at load time; it must be at least
//! as new as the nvcc that wrote the PTX (CUDA 13 PTX needs a CUDA 13 driver).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use cudarc::driver::{CudaContext, CudaSlice, LaunchConfig, PushKernelArg};
use miette::{miette, IntoDiagnostic, Result, WrapErr};

use crate::gpu::launch::{validate_plan, Launch, LaunchArg};

/// The environment variable naming the nvcc to use.
pub const NVCC_ENV: &str = "POLYC_NVCC";

/// The message of every "no CUDA driver" error.
pub const NO_DRIVER: &str = "no CUDA driver (libcuda) on this machine: use --device opencl";

/// The remedy when nvcc cannot be found.
const NVCC_HINT: &str = "run scripts/install-deps (it installs nvcc with `python3 -m pip \
                         install nvidia-cuda-nvcc nvidia-cuda-cccl`), or set POLYC_NVCC to \
                         an nvcc binary";

/// Where [`find_nvcc`] looks in a site-packages directory, newest layout first.
const WHEEL_LAYOUTS: [&str; 3] = [
    "nvidia/cu13/bin/nvcc",
    "nvidia/cu12/bin/nvcc",
    "nvidia/cuda_nvcc/bin/nvcc",
];

/// The nvcc to use, or why there is none (computed once).
fn locate_nvcc() -> &'static std::result::Result<PathBuf, String> {
    static NVCC: OnceLock<std::result::Result<PathBuf, String>> = OnceLock::new();
    NVCC.get_or_init(|| {
        if let Some(p) = std::env::var_os(NVCC_ENV).filter(|p| !p.is_empty()) {
            let p = PathBuf::from(p);
            return if p.is_file() {
                Ok(p)
            } else {
                Err(format!("{NVCC_ENV}={} is not a file", p.display()))
            };
        }
        if let Some(p) = on_path("nvcc") {
            return Ok(p);
        }
        for dir in python_site_dirs() {
            for layout in WHEEL_LAYOUTS {
                let p = dir.join(layout);
                if p.is_file() {
                    return Ok(p);
                }
            }
        }
        Err("nvcc is not installed (not on PATH, not in python3's site-packages)".into())
    })
}

/// `name` in one of `PATH`'s directories, if it is a file there.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// python3's site-packages directories (global and user, and, inside a virtual
/// environment, those of the Python it was made from, where `pip install
/// nvidia-cuda-nvcc` put nvcc before the environment existed), or none without python3.
fn python_site_dirs() -> Vec<PathBuf> {
    let script = "import site, sys, sysconfig\n\
                  base = sysconfig.get_paths(vars={'base': sys.base_prefix, 'platbase': sys.base_prefix})\n\
                  for d in site.getsitepackages() + [site.getusersitepackages(), base['purelib'], base['platlib']]: print(d)";
    match Command::new("python3").args(["-c", script]).output() {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| PathBuf::from(l.trim()))
            .collect(),
        _ => Vec::new(),
    }
}

/// The nvcc polyc uses: `$POLYC_NVCC`, else `nvcc` on `PATH`, else the one from the
/// `nvidia-cuda-nvcc` wheel in python3's site-packages. The answer is cached for the
/// process.
pub fn find_nvcc() -> Option<PathBuf> {
    locate_nvcc().as_ref().ok().cloned()
}

/// The nvcc path, or an error saying how to install it.
fn nvcc() -> Result<&'static Path> {
    locate_nvcc()
        .as_ref()
        .map(PathBuf::as_path)
        .map_err(|why| miette!("{why}: {NVCC_HINT}"))
}

/// ptxas's resource usage of one kernel (`nvcc -Xptxas -v`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelResources {
    /// The kernel's symbol (its plain name for `extern "C"` kernels, else the mangled
    /// C++ name).
    pub name: String,
    /// Registers per thread.
    pub registers: u32,
    /// Static shared memory per block, in bytes (dynamic shared memory is not counted).
    pub shared_bytes: u64,
    /// Bytes of register spill stores per thread.
    pub spill_store_bytes: u64,
    /// Bytes of register spill loads per thread.
    pub spill_load_bytes: u64,
    /// Stack frame bytes per thread: local memory, e.g. a private array indexed at run
    /// time (a register tile that did not stay in registers), or spills.
    pub stack_frame_bytes: u64,
}

/// ptxas's report for one compilation: one entry per kernel (`__global__` function), in
/// the order ptxas printed them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PtxasReport {
    /// The kernels.
    pub kernels: Vec<KernelResources>,
    /// ptxas's and nvcc's full output (warnings included), for display.
    pub log: String,
}

impl PtxasReport {
    /// The kernel named `name`: an exact symbol match, else the one C++ kernel whose
    /// mangled name contains `<len><name>` (e.g. `_Z2mmPf` for `mm`).
    pub fn kernel(&self, name: &str) -> Option<&KernelResources> {
        if let Some(k) = self.kernels.iter().find(|k| k.name == name) {
            return Some(k);
        }
        let needle = format!("_Z{}{}", name.len(), name);
        let mut hits = self.kernels.iter().filter(|k| k.name.starts_with(&needle));
        match (hits.next(), hits.next()) {
            (Some(k), None) => Some(k),
            _ => None,
        }
    }
}

/// The first number in `text` after `prefix`, e.g. `("Used 31 registers", "Used ")`.
fn number_after(text: &str, prefix: &str) -> Option<u64> {
    let at = text.find(prefix)? + prefix.len();
    let digits: String = text[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

/// The number just before `suffix` in `text`, e.g. `("2176 bytes smem", " bytes smem")`.
fn number_before(text: &str, suffix: &str) -> Option<u64> {
    let at = text.find(suffix)?;
    let digits: String = text[..at]
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    digits.parse().ok()
}

/// The text between the first pair of single quotes in `line`.
fn quoted(line: &str) -> Option<&str> {
    let a = line.find('\'')? + 1;
    let b = a + line[a..].find('\'')?;
    Some(&line[a..b])
}

/// Parses `ptxas -v` output into per-kernel resources.
///
/// ptxas prints, per entry function: `Compiling entry function 'NAME' for 'sm_XX'`,
/// `Function properties for NAME` followed by `N bytes stack frame, N bytes spill stores,
/// N bytes spill loads`, then `Used N registers[, used N barriers][, N bytes smem][, …]`.
/// Non-entry functions get properties lines only and are not reported.
pub fn parse_ptxas_output(text: &str) -> Vec<KernelResources> {
    let mut kernels: Vec<KernelResources> = Vec::new();
    // Spill figures by function name (they may come before or after "Used").
    let mut props: Vec<(String, u64, u64, u64)> = Vec::new();
    let mut props_of: Option<String> = None;
    let mut current: Option<usize> = None;
    for line in text.lines() {
        let l = line.trim();
        if l.contains("Compiling entry function") {
            if let Some(name) = quoted(l) {
                kernels.push(KernelResources {
                    name: name.to_string(),
                    registers: 0,
                    shared_bytes: 0,
                    spill_store_bytes: 0,
                    spill_load_bytes: 0,
                    stack_frame_bytes: 0,
                });
                current = Some(kernels.len() - 1);
            }
        } else if let Some(rest) = l.split("Function properties for ").nth(1) {
            props_of = Some(rest.trim().to_string());
        } else if l.contains("bytes spill stores") {
            if let Some(name) = props_of.take() {
                props.push((
                    name,
                    number_before(l, " bytes stack frame").unwrap_or(0),
                    number_before(l, " bytes spill stores").unwrap_or(0),
                    number_before(l, " bytes spill loads").unwrap_or(0),
                ));
            }
        } else if l.contains("Used ") && l.contains(" registers") {
            if let Some(k) = current.take() {
                kernels[k].registers = number_after(l, "Used ").unwrap_or(0) as u32;
                kernels[k].shared_bytes = number_before(l, " bytes smem").unwrap_or(0);
            }
        }
    }
    for k in &mut kernels {
        if let Some((_, stack, st, ld)) = props.iter().find(|p| p.0 == k.name) {
            k.stack_frame_bytes = *stack;
            k.spill_store_bytes = *st;
            k.spill_load_bytes = *ld;
        }
    }
    kernels
}

/// Checks an architecture name such as `sm_80`, `sm_90a` or `compute_90`.
fn check_arch(arch: &str) -> Result<()> {
    let body = arch
        .strip_prefix("sm_")
        .or_else(|| arch.strip_prefix("compute_"));
    let ok = body.is_some_and(|b| {
        let digits = b.trim_end_matches(|c: char| c.is_ascii_lowercase());
        !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
    });
    if ok {
        Ok(())
    } else {
        Err(miette!(
            "`{arch}` is not a CUDA architecture: write it like sm_80, sm_90 or sm_90a"
        ))
    }
}

/// Runs nvcc on `source` with `flags`, producing `out_name` in a fresh temporary
/// directory; returns the output file's contents and nvcc's combined output.
fn run_nvcc(source: &str, arch: &str, flags: &[&str], out_name: &str) -> Result<(Vec<u8>, String)> {
    check_arch(arch)?;
    let nvcc = nvcc()?;
    let dir = crate::scratch::tempdir("cuda")
        .into_diagnostic()
        .wrap_err("creating a temporary directory for nvcc")?;
    let cu = dir.path().join("kernel.cu");
    let out = dir.path().join(out_name);
    std::fs::write(&cu, source)
        .into_diagnostic()
        .wrap_err_with(|| format!("writing {}", cu.display()))?;
    let result = crate::scratch::output(
        Command::new(nvcc)
            .arg(format!("-arch={arch}"))
            .args(flags)
            .arg("-o")
            .arg(&out)
            .arg(&cu)
            .current_dir(dir.path()),
    )
    .into_diagnostic()
    .wrap_err_with(|| format!("running {}", nvcc.display()))?;
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&result.stdout),
        String::from_utf8_lossy(&result.stderr)
    );
    if !result.status.success() {
        let kept = crate::scratch::keep(dir);
        return Err(miette!(
            help = "if polyc emitted this source, this is a bug in polyc's CUDA emitter",
            "nvcc failed ({}) compiling {} for {arch}:\n{}",
            result.status,
            kept.join("kernel.cu").display(),
            log.trim_end()
        ));
    }
    let bytes = std::fs::read(&out)
        .into_diagnostic()
        .wrap_err_with(|| format!("reading nvcc's output {}", out.display()))?;
    Ok((bytes, log))
}

/// Compiles CUDA C++ for `arch` (e.g. `"sm_80"`) to a cubin with
/// `nvcc -arch=<arch> -cubin -Xptxas -v` and returns ptxas's per-kernel resources.
///
/// A compile error is an error carrying nvcc's output and the path of the kept `.cu`
/// file; no nvcc is an error saying to run `scripts/install-deps`.
pub fn compile_cuda(source: &str, arch: &str) -> Result<PtxasReport> {
    let (_cubin, log) = run_nvcc(source, arch, &["-cubin", "-Xptxas", "-v"], "kernel.cubin")?;
    Ok(PtxasReport {
        kernels: parse_ptxas_output(&log),
        log,
    })
}

/// Compiles CUDA C++ for `arch` to PTX text (`nvcc -arch=<arch> -ptx`), for [`run_cuda`].
pub fn compile_ptx(source: &str, arch: &str) -> Result<String> {
    let (ptx, _log) = run_nvcc(source, arch, &["-ptx"], "kernel.ptx")?;
    String::from_utf8(ptx).map_err(|_| miette!("nvcc wrote PTX that is not UTF-8"))
}

/// The result of [`run_cuda`].
#[derive(Clone, Debug)]
pub struct CudaRun {
    /// The device's name (device 0).
    pub device: String,
    /// Wall time of loading the PTX (the driver's JIT).
    pub load_time: Duration,
    /// Wall time from the first launch to the end of the last (copies excluded).
    pub launch_time: Duration,
    /// How many launches ran (launches with an empty grid are skipped).
    pub launches_run: usize,
}

/// A driver error with context.
fn driver_err(what: &str, e: cudarc::driver::DriverError) -> miette::Report {
    miette!("{what}: {e}")
}

/// Runs `f` and turns a panic into an error (cudarc panics on some driver failures).
fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            Err(miette!("{what}: the CUDA driver layer panicked: {msg}"))
        }
    }
}

/// Opens device 0 after checking, in order, that `libcuda` loads, that the driver
/// initialises and that it has a device. Every failure is an error starting with
/// [`NO_DRIVER`] (or naming the driver's error), never a panic.
fn open_device() -> Result<Arc<CudaContext>> {
    // SAFETY: only tries to dlopen libcuda and drops the handle.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(miette!("{NO_DRIVER}"));
    }
    guarded("opening the CUDA device", || {
        cudarc::driver::result::init()
            .map_err(|e| miette!("{NO_DRIVER} (the driver did not initialise: {e})"))?;
        let n = CudaContext::device_count()
            .map_err(|e| miette!("{NO_DRIVER} (counting devices failed: {e})"))?;
        if n < 1 {
            return Err(miette!("{NO_DRIVER} (the driver reports no device)"));
        }
        CudaContext::new(0).map_err(|e| driver_err("opening CUDA device 0", e))
    })
}

/// The name of CUDA device 0, or an error (starting with "no CUDA driver (libcuda) on
/// this machine: use --device opencl" when there is no usable driver). Never panics.
pub fn cuda_driver_status() -> Result<String> {
    let ctx = open_device()?;
    guarded("reading the CUDA device's name", || {
        ctx.name()
            .map_err(|e| driver_err("reading the CUDA device's name", e))
    })
}

/// A scalar argument, kept alive while a launch is built.
enum Scalar {
    I64(i64),
    I32(i32),
    F32(f32),
    F64(f64),
    I8(i8),
    /// `half` as its bits (cudarc's `f16` support is a feature we leave off).
    F16(u16),
}

/// The kernels a plan launches, from a loaded module, each with its dynamic
/// shared-memory limit raised to what its launches ask for.
fn load_functions<'a>(
    module: &Arc<cudarc::driver::CudaModule>,
    launches: &'a [Launch],
) -> Result<std::collections::HashMap<&'a str, cudarc::driver::CudaFunction>> {
    let mut functions = std::collections::HashMap::new();
    for l in launches {
        if functions.contains_key(l.kernel.as_str()) {
            continue;
        }
        let f = module.load_function(&l.kernel).map_err(|e| {
            miette!(
                "kernel `{}` is not in the PTX ({e}); declare kernels extern \"C\"",
                l.kernel
            )
        })?;
        let most = launches
            .iter()
            .filter(|x| x.kernel == l.kernel)
            .map(|x| x.dynamic_shared)
            .max()
            .unwrap_or(0);
        if most > 0 {
            let bytes = i32::try_from(most).map_err(|_| {
                miette!(
                    "kernel `{}`: {most} bytes of dynamic shared memory",
                    l.kernel
                )
            })?;
            f.set_attribute(
                cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes,
            )
            .map_err(|e| {
                miette!(
                    "kernel `{}`: the device refused {most} bytes of dynamic shared memory: {e}",
                    l.kernel
                )
            })?;
        }
        functions.insert(l.kernel.as_str(), f);
    }
    Ok(functions)
}

/// Runs a launch plan on CUDA device 0 from PTX (e.g. from [`compile_ptx`]).
///
/// Same contract as [`crate::gpu::opencl_runner::run_opencl`]: one device buffer per host
/// buffer (at least 1 byte), filled from the host; launches in order with
/// `grid`/`block` as CUDA's grid and block dimensions and [`Launch::dynamic_shared`] bytes of dynamic shared memory; every
/// buffer copied back. Without a driver: an error starting with [`NO_DRIVER`], never a
/// panic.
pub fn run_cuda(ptx: &str, launches: &[Launch], buffers: &mut [&mut [u8]]) -> Result<CudaRun> {
    validate_plan(launches, buffers.len())?;
    let to_u32 = |l: &Launch, v: [usize; 3], what: &str| -> Result<(u32, u32, u32)> {
        let c = |x: usize| {
            u32::try_from(x).map_err(|_| {
                miette!(
                    "kernel `{}`: {what} {v:?} does not fit CUDA's limits",
                    l.kernel
                )
            })
        };
        Ok((c(v[0])?, c(v[1])?, c(v[2])?))
    };
    let configs = launches
        .iter()
        .map(|l| {
            Ok(LaunchConfig {
                grid_dim: to_u32(l, l.grid, "grid")?,
                block_dim: to_u32(l, l.block, "block")?,
                shared_mem_bytes: u32::try_from(l.dynamic_shared).map_err(|_| {
                    miette!(
                        "kernel `{}`: {} bytes of dynamic shared memory do not fit CUDA's limits",
                        l.kernel,
                        l.dynamic_shared
                    )
                })?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    if ptx.contains('\0') {
        return Err(miette!("the PTX text contains a NUL byte"));
    }
    let ctx = open_device()?;
    guarded("running CUDA kernels", move || {
        let device = ctx
            .name()
            .map_err(|e| driver_err("reading the CUDA device's name", e))?;
        let t_load = Instant::now();
        let module = ctx
            .load_module(cudarc::nvrtc::Ptx::from_src(ptx))
            .map_err(|e| {
                miette!(
                    "the CUDA driver could not load the PTX on `{device}`: {e} (a driver older \
                     than the nvcc that wrote the PTX cannot load it)"
                )
            })?;
        let load_time = t_load.elapsed();
        let functions = load_functions(&module, launches)?;
        let stream = ctx.default_stream();
        let mut dev_bufs: Vec<CudaSlice<u8>> = Vec::with_capacity(buffers.len());
        for (i, host) in buffers.iter().enumerate() {
            let mut d = stream
                .alloc_zeros::<u8>(host.len().max(1))
                .map_err(|e| driver_err(&format!("allocating buffer {i}"), e))?;
            if !host.is_empty() {
                stream
                    .memcpy_htod(&host[..], &mut d)
                    .map_err(|e| driver_err(&format!("copying buffer {i} to the device"), e))?;
            }
            dev_bufs.push(d);
        }
        stream
            .synchronize()
            .map_err(|e| driver_err("copying buffers to the device", e))?;

        let t_launch = Instant::now();
        let mut launches_run = 0;
        for (li, (l, cfg)) in launches.iter().zip(&configs).enumerate() {
            if l.is_empty() {
                continue;
            }
            let scalars: Vec<Option<Scalar>> = l
                .args
                .iter()
                .map(|a| match *a {
                    LaunchArg::Buffer(_) => None,
                    LaunchArg::I64(v) => Some(Scalar::I64(v)),
                    LaunchArg::I32(v) => Some(Scalar::I32(v)),
                    LaunchArg::F32(v) => Some(Scalar::F32(v)),
                    LaunchArg::F64(v) => Some(Scalar::F64(v)),
                    LaunchArg::I8(v) => Some(Scalar::I8(v)),
                    LaunchArg::F16(v) => Some(Scalar::F16(v.to_bits())),
                })
                .collect();
            let mut b = stream.launch_builder(&functions[l.kernel.as_str()]);
            for (a, s) in l.args.iter().zip(&scalars) {
                match (a, s) {
                    (LaunchArg::Buffer(i), _) => b.arg(&dev_bufs[*i]),
                    (_, Some(Scalar::I64(v))) => b.arg(v),
                    (_, Some(Scalar::I32(v))) => b.arg(v),
                    (_, Some(Scalar::F32(v))) => b.arg(v),
                    (_, Some(Scalar::F64(v))) => b.arg(v),
                    (_, Some(Scalar::I8(v))) => b.arg(v),
                    (_, Some(Scalar::F16(v))) => b.arg(v),
                    (_, None) => unreachable!("scalars mirror the arguments"),
                };
            }
            // SAFETY: the arguments follow the kernel's parameter list, as the plan's
            // contract requires; buffers are device allocations that outlive the launch.
            unsafe { b.launch(*cfg) }.map_err(|e| {
                driver_err(
                    &format!(
                        "launch {li}: kernel `{}` with grid {:?} and block {:?}",
                        l.kernel, l.grid, l.block
                    ),
                    e,
                )
            })?;
            launches_run += 1;
        }
        stream
            .synchronize()
            .map_err(|e| driver_err("running the kernels", e))?;
        let launch_time = t_launch.elapsed();

        for (i, (host, d)) in buffers.iter_mut().zip(&dev_bufs).enumerate() {
            if !host.is_empty() {
                let n = host.len();
                stream
                    .memcpy_dtoh(&d.slice(..n), &mut host[..])
                    .map_err(|e| driver_err(&format!("copying buffer {i} back"), e))?;
            }
        }
        stream
            .synchronize()
            .map_err(|e| driver_err("copying buffers back", e))?;
        Ok(CudaRun {
            device,
            load_time,
            launch_time,
            launches_run,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ptxas_verbose_output() {
        let out = "ptxas info    : 0 bytes gmem\n\
            ptxas info    : Compiling entry function '_Z2mmPKfS0_Pflll' for 'sm_80'\n\
            ptxas info    : Function properties for _Z2mmPKfS0_Pflll\n\
            \x20   8 bytes stack frame, 12 bytes spill stores, 16 bytes spill loads\n\
            ptxas info    : Used 31 registers, used 1 barriers, 2176 bytes smem, 400 bytes cmem[0]\n\
            ptxas info    : Compiling entry function 'k' for 'sm_90'\n\
            ptxas info    : Function properties for k\n\
            \x20   0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
            ptxas info    : Used 6 registers, used 0 barriers\n";
        let ks = parse_ptxas_output(out);
        assert_eq!(
            ks,
            vec![
                KernelResources {
                    name: "_Z2mmPKfS0_Pflll".into(),
                    registers: 31,
                    shared_bytes: 2176,
                    spill_store_bytes: 12,
                    spill_load_bytes: 16,
                    stack_frame_bytes: 8,
                },
                KernelResources {
                    name: "k".into(),
                    registers: 6,
                    shared_bytes: 0,
                    spill_store_bytes: 0,
                    spill_load_bytes: 0,
                    stack_frame_bytes: 0,
                },
            ]
        );
        let r = PtxasReport {
            kernels: ks,
            log: String::new(),
        };
        assert_eq!(r.kernel("mm").map(|k| k.registers), Some(31));
        assert_eq!(r.kernel("k").map(|k| k.registers), Some(6));
        assert!(r.kernel("m").is_none());
    }

    #[test]
    fn architecture_names_are_checked() {
        assert!(check_arch("sm_80").is_ok());
        assert!(check_arch("sm_90a").is_ok());
        assert!(check_arch("compute_90").is_ok());
        let e = check_arch("80").unwrap_err().to_string();
        assert_eq!(
            e,
            "`80` is not a CUDA architecture: write it like sm_80, sm_90 or sm_90a"
        );
        assert!(check_arch("sm_").is_err());
        assert!(check_arch("sm_8x0").is_err());
    }
}
