//! Running Gemmini C on the host, over the functional model.
//!
//! [`HOST_H`] is a C header of our own that implements the names of `gemmini.h`'s API
//! (macros, types, constants of the default configuration). Its instruction macros pass
//! the RoCC operands (the same bits the real macros give the instruction) to a function
//! pointer, `polyc_gemmini_dispatch`, which [`HostKernel::run`] points at a
//! [`Gemmini`] model for the duration of a call.
//!
//! The C source picks the header with `#ifdef POLYC_GEMMINI_HOST` (see
//! [`HOST_H_NAME`]); [`compile_host`] defines that macro and puts the header on the include
//! path. DRAM addresses in the instructions are host pointers: the model reads and writes
//! the host's memory through them ([`HostMemory`]), which is why running is `unsafe`.

use std::ffi::c_void;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::process::Command;

use miette::{miette, IntoDiagnostic, Result, WrapErr};

use super::model::{Counters, ElemTypes, Gemmini, HostMemory, ModelError};

/// The host header's text.
pub const HOST_H: &str = include_str!("host.h");
/// The file name C includes the host header by.
pub const HOST_H_NAME: &str = "polyc_gemmini_host.h";
/// The macro that selects the host header in C meant for both paths.
pub const HOST_DEFINE: &str = "POLYC_GEMMINI_HOST";
/// The macro that switches the host header to Gemmini's float configuration (pass
/// `-DPOLYC_GEMMINI_FP32` in [`HostCcOptions::extra_flags`], and run on a
/// `Gemmini<Fp32>` with [`GemminiConfig::fp32`](super::model::GemminiConfig::fp32)).
pub const FP32_DEFINE: &str = "POLYC_GEMMINI_FP32";

/// How the C compiler runs.
#[derive(Clone, Debug, Default)]
pub struct HostCcOptions {
    /// The compiler; `None` means `$CC`, or `cc` when `CC` is unset.
    pub compiler: Option<String>,
    /// Flags after the default ones: `-O2 -shared -fPIC -fwrapv
    /// -Werror=implicit-function-declaration -DPOLYC_GEMMINI_HOST` and `-I` with the
    /// directory of the header.
    pub extra_flags: Vec<String>,
}

impl HostCcOptions {
    /// The compiler command that will run.
    pub fn compiler(&self) -> String {
        self.compiler
            .clone()
            .or_else(|| std::env::var("CC").ok().filter(|s| !s.trim().is_empty()))
            .unwrap_or_else(|| "cc".to_string())
    }
}

/// A C library built against [`HOST_H`] and loaded.
pub struct HostKernel {
    // Field order matters: the library is unloaded before the directory is deleted.
    lib: libloading::Library,
    dir: tempfile::TempDir,
    c_path: PathBuf,
}

impl std::fmt::Debug for HostKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostKernel")
            .field("c_path", &self.c_path)
            .finish()
    }
}

/// What one [`HostKernel::run`] gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostRun {
    /// The entry's return value.
    pub status: i32,
    /// The model's counters after the call (cumulative: reset them before for one call's
    /// counts).
    pub counters: Counters,
}

/// Builds `c_src` (which includes [`HOST_H_NAME`] under `#ifdef POLYC_GEMMINI_HOST`) into a
/// shared library with the host's C compiler, and loads it.
///
/// A compiler failure is an error carrying the compiler's standard error; the source is
/// then kept on disk and the error names it.
pub fn compile_host(c_src: &str, opts: &HostCcOptions) -> Result<HostKernel> {
    let dir = crate::scratch::tempdir("gemmini")
        .into_diagnostic()
        .wrap_err("creating a temporary directory for the C compiler")?;
    let c_path = dir.path().join("kernel.c");
    let h_path = dir.path().join(HOST_H_NAME);
    let so_path = dir.path().join("kernel.so");
    for (path, text) in [(&c_path, c_src), (&h_path, HOST_H)] {
        std::fs::write(path, text)
            .into_diagnostic()
            .wrap_err_with(|| format!("writing {}", path.display()))?;
    }
    let cc = opts.compiler();
    let output = crate::scratch::output(
        Command::new(&cc)
            .args(["-O2", "-shared", "-fPIC", "-fwrapv"])
            // A Gemmini API name the host header lacks must be an error, not an implicit call.
            .arg("-Werror=implicit-function-declaration")
            .arg(format!("-D{HOST_DEFINE}"))
            .arg("-I")
            .arg(dir.path())
            .args(&opts.extra_flags)
            .arg("-o")
            .arg(&so_path)
            .arg(&c_path)
            .arg("-lm"),
    )
    .map_err(|e| {
        miette!(
            help = "install a C compiler or point $CC at one",
            "could not run the C compiler `{cc}`: {e}"
        )
    })?;
    if !output.status.success() {
        let kept = crate::scratch::keep(dir);
        let c_path = kept.join("kernel.c");
        return Err(miette!(
            help = format!("the C source is kept at {}", c_path.display()),
            "the C compiler `{cc}` failed ({}) on {}:\n{}",
            output.status,
            c_path.display(),
            String::from_utf8_lossy(&output.stderr).trim_end()
        ));
    }
    // SAFETY: loading a library we just built from a plain C translation unit.
    let lib = unsafe { libloading::Library::new(&so_path) }
        .into_diagnostic()
        .wrap_err_with(|| format!("loading {}", so_path.display()))?;
    Ok(HostKernel { lib, dir, c_path })
}

/// The model and memory one run dispatches to.
struct Ctx<'a, T: ElemTypes> {
    model: &'a mut Gemmini<T>,
    mem: HostMemory,
    error: Option<ModelError>,
}

type DispatchFn = unsafe extern "C" fn(*mut c_void, u32, u64, u64);

/// Called by the host header's macros: executes one instruction on the model. After an
/// error, the following instructions are ignored (the error is reported when the call
/// returns).
unsafe extern "C" fn dispatch<T: ElemTypes>(ctx: *mut c_void, funct: u32, rs1: u64, rs2: u64) {
    // SAFETY: `ctx` is the `Ctx<T>` that `HostKernel::run` installed for this call.
    let ctx = unsafe { &mut *(ctx as *mut Ctx<'_, T>) };
    if ctx.error.is_some() {
        return;
    }
    let r = std::panic::catch_unwind(AssertUnwindSafe(|| {
        ctx.model.execute_raw(funct, rs1, rs2, &mut ctx.mem)
    }));
    match r {
        Ok(Ok(())) => {}
        Ok(Err(e)) => ctx.error = Some(e),
        Err(_) => {
            ctx.error = Some(ModelError::Invalid(format!(
                "the model panicked on funct {funct}, rs1 {rs1:#x}, rs2 {rs2:#x}"
            )))
        }
    }
}

impl HostKernel {
    /// The C file the library was built from (deleted with the kernel).
    pub fn c_path(&self) -> &Path {
        &self.c_path
    }
    /// The temporary directory holding the source, the header and the library.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Calls `int entry(void **args)` with the header's instructions executing on `model`.
    ///
    /// Errors: no such entry, a header written for another DIM than the model's, or an
    /// instruction the model refused (the first one; the rest of the call's instructions
    /// are skipped, and the C code still runs to its end).
    ///
    /// # Safety
    /// `args` must be what the entry expects, and every DRAM address the kernel's
    /// instructions carry must be valid host memory for the bytes they move (see
    /// [`HostMemory::new`]).
    pub unsafe fn run<T: ElemTypes>(
        &mut self,
        entry: &str,
        args: &mut [*mut c_void],
        model: &mut Gemmini<T>,
    ) -> Result<HostRun> {
        let missing = |what: &str, e: libloading::Error| {
            miette!(
                help = format!("the C must include {HOST_H_NAME} (built with -D{HOST_DEFINE})"),
                "the Gemmini host library has no `{what}`: {e}"
            )
        };
        // SAFETY: the symbols are the header's globals, with the header's types.
        let (disp, ctxp, dim, elem_bytes) = unsafe {
            let disp: libloading::Symbol<*mut Option<DispatchFn>> = self
                .lib
                .get(b"polyc_gemmini_dispatch")
                .map_err(|e| missing("polyc_gemmini_dispatch", e))?;
            let ctxp: libloading::Symbol<*mut *mut c_void> = self
                .lib
                .get(b"polyc_gemmini_ctx")
                .map_err(|e| missing("polyc_gemmini_ctx", e))?;
            let dim: libloading::Symbol<*const u32> = self
                .lib
                .get(b"polyc_gemmini_host_dim")
                .map_err(|e| missing("polyc_gemmini_host_dim", e))?;
            let elem_bytes: libloading::Symbol<*const u32> = self
                .lib
                .get(b"polyc_gemmini_host_elem_bytes")
                .map_err(|e| missing("polyc_gemmini_host_elem_bytes", e))?;
            (*disp, *ctxp, **dim, **elem_bytes)
        };
        if dim as usize != model.config().dim || elem_bytes as usize != T::ELEM_BYTES {
            return Err(miette!(
                help = format!("build with -D{FP32_DEFINE} for a float model, without for int8"),
                "the host header was built for DIM = {dim} and {elem_bytes}-byte elements but \
                 the model has DIM = {} and {}-byte elements",
                model.config().dim,
                T::ELEM_BYTES
            ));
        }
        // SAFETY: the signature is the one `run` documents.
        let f: libloading::Symbol<unsafe extern "C" fn(*mut *mut c_void) -> i32> = unsafe {
            self.lib
                .get(entry.as_bytes())
                .map_err(|e| miette!("the Gemmini host library has no entry `{entry}`: {e}"))?
        };
        let mut ctx = Ctx {
            model,
            // SAFETY: the caller's contract.
            mem: unsafe { HostMemory::new() },
            error: None,
        };
        // SAFETY: the globals are only used during the call below, from this thread; they
        // are reset before `ctx` goes out of scope.
        let status = unsafe {
            *disp = Some(dispatch::<T>);
            *ctxp = &mut ctx as *mut Ctx<'_, T> as *mut c_void;
            let status = f(args.as_mut_ptr());
            *disp = None;
            *ctxp = std::ptr::null_mut();
            status
        };
        if let Some(e) = ctx.error {
            return Err(miette!("the Gemmini model stopped running `{entry}`: {e}"));
        }
        Ok(HostRun {
            status,
            counters: ctx.model.counters().clone(),
        })
    }
}
