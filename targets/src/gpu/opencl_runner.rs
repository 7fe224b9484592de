//! Running OpenCL C kernels on any OpenCL device, through the `opencl3` crate.
//!
//! [`run_opencl`] builds an OpenCL C program for one device and runs a launch plan
//! ([`crate::gpu::launch`]) over host byte buffers. On machines without a GPU the device is
//! PoCL's CPU device (Debian packages `pocl-opencl-icd ocl-icd-opencl-dev`, installed by
//! `scripts/install-deps`).
//!
//! - Device choice: the first device of the first platform that has one, or, when the
//!   environment variable `POLYC_OPENCL_DEVICE` is set, the first device whose device or
//!   platform name contains its value (case-insensitive). [`opencl_devices`] lists them.
//! - The OpenCL library is loaded at run time (`libOpenCL.so.1`, or a path in
//!   `OPENCL_DYLIB_PATH`), so polyc builds and runs without OpenCL; asking for it then is
//!   an error telling what to install, never a panic.
//! - The program is built with no options ([`build_options`]; OpenCL C 1.2 unless the
//!   source asks otherwise), except on PoCL, where it is built with `-cl-opt-disable`:
//!   PoCL 3.1 forms work-groups after LLVM's optimiser, and on optimised kernels whose
//!   uniform loops hold barriers around thread loops of partial tiles (a GEMM's K steps
//!   at M = 67, N = 45, K = 53) it drops whole regions of work-items or aborts on its
//!   own assertion ("Incoming edges to non-entry block"). The same kernels run
//!   correctly unoptimised, under PoCL's `repl` work-group method, and as threads with
//!   barriers under ThreadSanitizer. Pragmas such as `cl_khr_fp64`, `cl_khr_fp16` or
//!   `FP_CONTRACT OFF` belong in the source. A launch with a `double` or `half` argument on a device without that type is
//!   an error before anything runs.
//! - PoCL caches its compiled kernels in `POCL_CACHE_DIR` (default `~/.cache/pocl`): the
//!   first build of a source takes seconds, later ones a tenth of a second.

use std::collections::HashMap;
use std::ptr;
use std::time::{Duration, Instant};

use miette::{miette, Result};
use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::device::{Device, CL_DEVICE_TYPE_ALL};
use opencl3::error_codes::{ClError, CL_BUILD_PROGRAM_FAILURE};
use opencl3::kernel::Kernel;
use opencl3::memory::{Buffer, ClMem, CL_MEM_READ_WRITE};
use opencl3::platform::get_platforms;
use opencl3::program::Program;
use opencl3::types::{cl_device_id, cl_double, cl_float, cl_int, cl_long, cl_mem, CL_BLOCKING};

use crate::gpu::launch::{validate_plan, Launch, LaunchArg};

/// The environment variable that selects an OpenCL device by a substring of its device or
/// platform name.
pub const DEVICE_ENV: &str = "POLYC_OPENCL_DEVICE";

/// What to install when there is no OpenCL device (shared by all "no device" errors).
const INSTALL_HINT: &str = "install an OpenCL driver: on Debian, `apt-get install \
                            pocl-opencl-icd ocl-icd-opencl-dev` (scripts/install-deps does)";

/// OpenCL's "no platform" code from the ICD loader (`CL_PLATFORM_NOT_FOUND_KHR`).
const PLATFORM_NOT_FOUND_KHR: cl_int = -1001;
/// cl3's code for "libOpenCL could not be loaded".
const RUNTIME_LOAD_FAILED: cl_int = -2000;

/// The result of [`run_opencl`].
#[derive(Clone, Debug)]
pub struct OpenClRun {
    /// The device's name (`CL_DEVICE_NAME`), e.g. `pthread-skylake-avx512-…` on PoCL.
    pub device: String,
    /// The platform's name (`CL_PLATFORM_NAME`), e.g. `Portable Computing Language`.
    pub platform: String,
    /// Wall time of building the program (PoCL's cache makes rebuilds fast).
    pub build_time: Duration,
    /// Wall time from the first launch's enqueue to the end of the last launch (buffer
    /// copies excluded).
    pub launch_time: Duration,
    /// How many launches ran (launches with an empty grid are skipped).
    pub launches_run: usize,
}

/// An OpenCL device found on this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenClDeviceInfo {
    /// The device's name.
    pub name: String,
    /// Its platform's name.
    pub platform: String,
    /// The device's OpenCL version string (`CL_DEVICE_VERSION`).
    pub version: String,
    /// Whether the device has `double` (`cl_khr_fp64` or a non-zero double FP config).
    pub fp64: bool,
    /// Whether the device has `half` arithmetic (`cl_khr_fp16`).
    pub fp16: bool,
}

/// One device together with its handle.
struct Found {
    id: cl_device_id,
    info: OpenClDeviceInfo,
}

/// Turns an OpenCL error code into a message with its name and number.
fn cl_text(e: ClError) -> String {
    format!("{e} ({})", e.0)
}

/// Every OpenCL device of every platform, in platform order.
fn all_devices() -> Result<Vec<Found>> {
    let platforms = get_platforms().map_err(|e| match e.0 {
        RUNTIME_LOAD_FAILED => miette!(
            "no OpenCL library (libOpenCL.so.1) on this machine: {INSTALL_HINT}, or point \
             OPENCL_DYLIB_PATH at the library"
        ),
        PLATFORM_NOT_FOUND_KHR => miette!(
            "no OpenCL platform on this machine (the ICD loader found no driver): \
             {INSTALL_HINT}"
        ),
        _ => miette!(
            "listing OpenCL platforms failed: {}; {INSTALL_HINT}",
            cl_text(e)
        ),
    })?;
    let mut found = Vec::new();
    for p in platforms {
        let platform = p
            .name()
            .map_err(|e| miette!("reading an OpenCL platform's name: {}", cl_text(e)))?;
        // A platform without devices answers CL_DEVICE_NOT_FOUND: skip it.
        let Ok(ids) = p.get_devices(CL_DEVICE_TYPE_ALL) else {
            continue;
        };
        for id in ids {
            let d = Device::new(id);
            let name = d
                .name()
                .map_err(|e| miette!("reading an OpenCL device's name: {}", cl_text(e)))?;
            let version = d.version().unwrap_or_default();
            let exts = d.extensions().unwrap_or_default();
            let fp64 = d.double_fp_config().unwrap_or(0) != 0 || exts.contains("cl_khr_fp64");
            found.push(Found {
                id,
                info: OpenClDeviceInfo {
                    name: name.trim().to_string(),
                    platform: platform.trim().to_string(),
                    version: version.trim().to_string(),
                    fp64,
                    fp16: exts.contains("cl_khr_fp16"),
                },
            });
        }
    }
    Ok(found)
}

/// The device [`run_opencl`] would use (`selector` plays the part of
/// `POLYC_OPENCL_DEVICE`; `None` reads that variable). Errors as [`run_opencl`]'s.
pub fn opencl_device(selector: Option<&str>) -> Result<OpenClDeviceInfo> {
    let env = std::env::var(DEVICE_ENV).ok();
    Ok(pick_device(selector.or(env.as_deref()))?.info)
}

/// Lists the OpenCL devices on this machine. No OpenCL library or no platform is an error
/// saying what to install; an empty list means platforms exist but have no device.
pub fn opencl_devices() -> Result<Vec<OpenClDeviceInfo>> {
    Ok(all_devices()?.into_iter().map(|f| f.info).collect())
}

/// The device [`run_opencl`] would use: the first one, or the first whose device or
/// platform name contains `selector` (case-insensitive; `None` or empty: the first).
fn pick_device(selector: Option<&str>) -> Result<Found> {
    let devices = all_devices()?;
    let listing = devices
        .iter()
        .map(|d| format!("`{}` ({})", d.info.name, d.info.platform))
        .collect::<Vec<_>>()
        .join(", ");
    match selector {
        Some(want) if !want.is_empty() => {
            let w = want.to_lowercase();
            let none = devices.is_empty();
            let hit = devices.into_iter().find(|d| {
                d.info.name.to_lowercase().contains(&w)
                    || d.info.platform.to_lowercase().contains(&w)
            });
            match hit {
                Some(d) => Ok(d),
                None if none => Err(miette!(
                    "the OpenCL device selector `{want}` ({DEVICE_ENV}) matches no device: \
                     there are none; {INSTALL_HINT}"
                )),
                None => Err(miette!(
                    "the OpenCL device selector `{want}` ({DEVICE_ENV}) matches no device; the \
                     devices are: {listing}"
                )),
            }
        }
        _ => devices.into_iter().next().ok_or_else(|| {
            miette!("no OpenCL device on this machine (platforms have none): {INSTALL_HINT}")
        }),
    }
}

/// Checks that the device supports the scalar argument types of `launches`.
fn check_arg_types(info: &OpenClDeviceInfo, launches: &[Launch]) -> Result<()> {
    let needs = |f: fn(&LaunchArg) -> bool| {
        launches
            .iter()
            .find(|l| l.args.iter().any(f))
            .map(|l| l.kernel.clone())
    };
    if let Some(k) = needs(|a| matches!(a, LaunchArg::F64(_))) {
        if !info.fp64 {
            return Err(miette!(
                "kernel `{k}` takes a double argument, but OpenCL device `{}` ({}) has no \
                 double precision (cl_khr_fp64); choose another device with {DEVICE_ENV} or \
                 use float",
                info.name,
                info.platform
            ));
        }
    }
    if let Some(k) = needs(|a| matches!(a, LaunchArg::F16(_))) {
        if !info.fp16 {
            return Err(miette!(
                "kernel `{k}` takes a half argument, but OpenCL device `{}` ({}) lacks \
                 cl_khr_fp16; choose another device with {DEVICE_ENV}",
                info.name,
                info.platform
            ));
        }
    }
    Ok(())
}

/// Writes a source that failed to build to a kept temporary file; returns its path, or
/// why it could not be written.
fn keep_source(source: &str) -> String {
    let saved = tempfile::Builder::new()
        .prefix("polyc-opencl-")
        .suffix(".cl")
        .tempfile()
        .and_then(|mut f| {
            std::io::Write::write_all(&mut f, source.as_bytes())?;
            f.keep().map_err(|e| e.error)
        });
    match saved {
        Ok((_, path)) => path.display().to_string(),
        Err(e) => format!("(not saved: {e})"),
    }
}

/// The options programs are built with on a platform: `-cl-opt-disable` on PoCL, whose
/// work-group formation miscompiles optimised kernels with barriers in loops (see the
/// module documentation), none elsewhere.
pub fn build_options(platform: &str) -> &'static str {
    if platform.contains("Portable Computing Language") {
        "-cl-opt-disable"
    } else {
        ""
    }
}

/// Builds `source` for one device; a build failure carries the compiler's log.
fn build_program(context: &Context, found: &Found, source: &str) -> Result<Program> {
    let mut program = Program::create_from_source(context, source)
        .map_err(|e| miette!("creating the OpenCL program failed: {}", cl_text(e)))?;
    if let Err(e) = program.build(&[found.id], build_options(&found.info.platform)) {
        let log = program
            .get_build_log(found.id)
            .unwrap_or_else(|le| format!("(the build log could not be read: {})", cl_text(le)));
        let what = if e.0 == CL_BUILD_PROGRAM_FAILURE {
            "the OpenCL C source does not compile"
        } else {
            "building the OpenCL program failed"
        };
        let kept = keep_source(source);
        return Err(miette!(
            help = "if polyc emitted this source, this is a bug in polyc's OpenCL emitter: \
                    please report it with the source",
            "{what} on device `{}` ({}): {}\nsource: {kept}\nbuild log:\n{}",
            found.info.name,
            found.info.platform,
            cl_text(e),
            log.trim_end()
        ));
    }
    Ok(program)
}

/// One kernel object per distinct name the launches use, checked against the launches'
/// argument counts.
fn create_kernels<'l>(
    program: &Program,
    launches: &'l [Launch],
) -> Result<HashMap<&'l str, Kernel>> {
    let mut kernels: HashMap<&str, Kernel> = HashMap::new();
    for l in launches {
        if !kernels.contains_key(l.kernel.as_str()) {
            let k = Kernel::create(program, &l.kernel).map_err(|e| {
                miette!(
                    "kernel `{}` is not in the OpenCL program ({}); it defines: {}",
                    l.kernel,
                    cl_text(e),
                    program.kernel_names()
                )
            })?;
            kernels.insert(&l.kernel, k);
        }
        let n = kernels[l.kernel.as_str()]
            .num_args()
            .map_err(|e| miette!("reading kernel `{}`'s arguments: {}", l.kernel, cl_text(e)))?;
        if n as usize != l.args.len() {
            return Err(miette!(
                "kernel `{}` takes {n} arguments but the launch passes {} (a bug in polyc's \
                 GPU emitter if it made the plan)",
                l.kernel,
                l.args.len()
            ));
        }
    }

    Ok(kernels)
}

/// Sets the arguments of launch `li` (`l`) on its kernel; buffers are `mems[b]`.
fn set_args(kernel: &Kernel, l: &Launch, li: usize, mems: &[cl_mem]) -> Result<()> {
    for (ai, arg) in l.args.iter().enumerate() {
        let idx = ai as u32;
        let r = unsafe {
            match *arg {
                LaunchArg::Buffer(b) => kernel.set_arg(idx, &mems[b]),
                LaunchArg::I64(v) => kernel.set_arg(idx, &(v as cl_long)),
                LaunchArg::I32(v) => kernel.set_arg(idx, &(v as cl_int)),
                LaunchArg::F32(v) => kernel.set_arg(idx, &(v as cl_float)),
                LaunchArg::F64(v) => kernel.set_arg(idx, &(v as cl_double)),
                LaunchArg::I8(v) => kernel.set_arg(idx, &v),
                LaunchArg::F16(v) => kernel.set_arg(idx, &v.to_bits()),
            }
        };
        r.map_err(|e| {
            miette!(
                "launch {li}: setting argument {ai} ({}) of kernel `{}` failed: {} (the \
                 kernel's parameter type differs from the launch's)",
                arg.type_name(),
                l.kernel,
                cl_text(e)
            )
        })?;
    }
    Ok(())
}

/// Runs a launch plan on the first OpenCL device (or the one `POLYC_OPENCL_DEVICE` picks).
///
/// `source` is OpenCL C holding every kernel the plan names. Each entry of `buffers`
/// becomes a device buffer (at least 1 byte) filled from the host bytes; the launches run
/// in order ([`crate::gpu::launch`] gives the rules), then every buffer is read back into
/// its host slice. Errors: no OpenCL (with what to install), a bad plan, a build failure
/// (with the build log), a kernel missing from the program or whose parameter count
/// differs from the launch's, and any OpenCL error while running (named, with its code).
pub fn run_opencl(
    source: &str,
    launches: &[Launch],
    buffers: &mut [&mut [u8]],
) -> Result<OpenClRun> {
    validate_plan(launches, buffers.len())?;
    let found = pick_device(std::env::var(DEVICE_ENV).ok().as_deref())?;
    let dev = Device::new(found.id);
    check_arg_types(&found.info, launches)?;
    let on = format!("on OpenCL device `{}`", found.info.name);

    let context = Context::from_device(&dev)
        .map_err(|e| miette!("creating an OpenCL context {on} failed: {}", cl_text(e)))?;
    // clCreateCommandQueue is the OpenCL 1.2 call, which every driver has.
    #[allow(deprecated)]
    let queue = CommandQueue::create_default(&context, 0).map_err(|e| {
        miette!(
            "creating an OpenCL command queue {on} failed: {}",
            cl_text(e)
        )
    })?;

    let t_build = Instant::now();
    let program = build_program(&context, &found, source)?;
    let build_time = t_build.elapsed();

    let kernels = create_kernels(&program, launches)?;

    // Device buffers, filled from the host.
    let mut device_bufs = Vec::with_capacity(buffers.len());
    for (i, host) in buffers.iter().enumerate() {
        let mut b = unsafe {
            Buffer::<u8>::create(
                &context,
                CL_MEM_READ_WRITE,
                host.len().max(1),
                ptr::null_mut(),
            )
        }
        .map_err(|e| {
            miette!(
                "allocating OpenCL buffer {i} ({} bytes) {on} failed: {}",
                host.len(),
                cl_text(e)
            )
        })?;
        if !host.is_empty() {
            unsafe { queue.enqueue_write_buffer(&mut b, CL_BLOCKING, 0, host, &[]) }
                .map_err(|e| miette!("copying buffer {i} to the device failed: {}", cl_text(e)))?;
        }
        device_bufs.push(b);
    }
    let mems: Vec<cl_mem> = device_bufs.iter().map(|b| b.get()).collect();

    let t_launch = Instant::now();
    let mut launches_run = 0;
    for (li, l) in launches.iter().enumerate() {
        if l.is_empty() {
            continue;
        }
        let kernel = &kernels[l.kernel.as_str()];
        set_args(kernel, l, li, &mems)?;
        let global = l.global_size().expect("validated");
        unsafe {
            queue.enqueue_nd_range_kernel(
                kernel.get(),
                3,
                ptr::null(),
                global.as_ptr(),
                l.block.as_ptr(),
                &[],
            )
        }
        .map_err(|e| {
            let max_wg = dev.max_work_group_size().unwrap_or(0);
            let kernel_wg = kernel.get_work_group_size(found.id).unwrap_or(0);
            miette!(
                "launch {li}: kernel `{}` with grid {:?} and block {:?} failed to start {on}: \
                 {} (the device allows {max_wg} work-items per group, this kernel {kernel_wg})",
                l.kernel,
                l.grid,
                l.block,
                cl_text(e)
            )
        })?;
        launches_run += 1;
    }
    queue
        .finish()
        .map_err(|e| miette!("running the kernels {on} failed: {}", cl_text(e)))?;
    let launch_time = t_launch.elapsed();

    for (i, (host, b)) in buffers.iter_mut().zip(&device_bufs).enumerate() {
        if !host.is_empty() {
            unsafe { queue.enqueue_read_buffer(b, CL_BLOCKING, 0, host, &[]) }
                .map_err(|e| miette!("copying buffer {i} back failed: {}", cl_text(e)))?;
        }
    }
    Ok(OpenClRun {
        device: found.info.name,
        platform: found.info.platform,
        build_time,
        launch_time,
        launches_run,
    })
}
