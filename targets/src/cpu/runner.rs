//! Compiling emitted C with the system compiler and running it in-process.
//!
//! [`compile_c`] writes the source to a fresh temporary directory, runs
//! `$CC` (or `cc`) with `-O3 -march=native -fopenmp -shared -fPIC -ffp-contract=off
//! -fwrapv`, on x86 `-mprefer-vector-width=<bits>` from the target description's
//! `vector_bytes` (see [`CcOptions::vector_bytes`]), then [`CcOptions::extra_flags`],
//! which come last and so can override these. It loads the shared library with
//! `libloading`. [`run`] calls the kernel's entry wrapper (see [`crate::codegen::cfamily`] for the ABI)
//! on [`TensorData`] buffers.
//!
//! `-ffp-contract=off` keeps every float operation rounded as written, so results match
//! the reference interpreter bit for bit where the order of operations is the same.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use miette::{miette, IntoDiagnostic, Result, WrapErr};
use polyhedral::data::{Buffer, TensorData};
use polyhedral::ir::{InputRef, Program, TensorId, TensorRole};

use crate::codegen::cfamily::entry_symbol;
use crate::desc::TargetDesc;
use crate::target::{division_by_zero, RunStats};

/// The floating-point contraction flag the runner passes (`scripts/bench` reads it from
/// this line; keep it a single string literal).
pub const FP_CONTRACT_FLAG: &str = "-ffp-contract=off";

/// How to invoke the C compiler.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CcOptions {
    /// The compiler; `None` means `$CC`, or `cc` when `CC` is unset.
    pub compiler: Option<String>,
    /// Flags appended after the default ones.
    pub extra_flags: Vec<String>,
    /// Also pass `-fopenmp` (default `true`). Without it, `parallel` loops run serially.
    pub openmp: bool,
    /// The preferred SIMD vector width in bytes (a target description's `vector_bytes`).
    /// On x86 and x86-64, where gcc and clang accept it, 16, 32 and 64 become
    /// `-mprefer-vector-width=128`, `256` and `512`; elsewhere, and for other widths, no
    /// flag is passed. `None` leaves the compiler's choice. The default is the built-in
    /// CPU description's value (64).
    pub vector_bytes: Option<u32>,
}

impl Default for CcOptions {
    fn default() -> Self {
        CcOptions {
            compiler: None,
            extra_flags: Vec::new(),
            openmp: true,
            vector_bytes: builtin_vector_bytes(),
        }
    }
}

/// `vector_bytes` of the built-in CPU description, read once.
fn builtin_vector_bytes() -> Option<u32> {
    static V: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    *V.get_or_init(|| TargetDesc::builtin_cpu().ok().and_then(|d| d.vector_bytes))
}

/// The flag that asks the C compiler for `bytes`-wide vectors on this machine:
/// `-mprefer-vector-width=<bytes × 8>` on x86 and x86-64 (gcc and clang accept 128, 256
/// and 512 there), `None` on other architectures or for other widths.
pub fn prefer_vector_width_flag(bytes: u32) -> Option<String> {
    prefer_vector_width_flag_for(std::env::consts::ARCH, bytes)
}

fn prefer_vector_width_flag_for(arch: &str, bytes: u32) -> Option<String> {
    let bits = bytes.checked_mul(8)?;
    if matches!(arch, "x86" | "x86_64") && matches!(bits, 128 | 256 | 512) {
        Some(format!("-mprefer-vector-width={bits}"))
    } else {
        None
    }
}

impl CcOptions {
    /// The default options with the target description's vector width (`None` when the
    /// description gives none).
    pub fn for_target(desc: &TargetDesc) -> CcOptions {
        CcOptions {
            vector_bytes: desc.vector_bytes,
            ..CcOptions::default()
        }
    }
    /// The compiler command that will run.
    pub fn compiler(&self) -> String {
        self.compiler
            .clone()
            .or_else(|| std::env::var("CC").ok().filter(|s| !s.trim().is_empty()))
            .unwrap_or_else(|| "cc".to_string())
    }
    /// Every flag passed before the file names.
    pub fn flags(&self) -> Vec<String> {
        let mut f: Vec<String> = ["-O3", "-march=native"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        if self.openmp {
            f.push("-fopenmp".into());
        }
        f.extend(
            ["-shared", "-fPIC", FP_CONTRACT_FLAG, "-fwrapv"]
                .iter()
                .map(|s| s.to_string()),
        );
        f.extend(self.vector_bytes.and_then(prefer_vector_width_flag));
        f.extend(self.extra_flags.iter().cloned());
        f
    }
}

/// A compiled and loaded kernel library.
pub struct CompiledKernel {
    // Field order matters: the library is unloaded before the directory is deleted.
    lib: libloading::Library,
    dir: tempfile::TempDir,
    c_path: PathBuf,
}

impl CompiledKernel {
    /// The C file the library was built from (deleted with the kernel).
    pub fn c_path(&self) -> &Path {
        &self.c_path
    }
    /// The temporary directory holding the source and the library.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl std::fmt::Debug for CompiledKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledKernel")
            .field("c_path", &self.c_path)
            .finish()
    }
}

/// Compiles C source into a shared library and loads it.
///
/// A compiler failure is an error carrying the compiler's standard error and the path of
/// the `.c` file, which is then kept on disk for inspection.
pub fn compile_c(c_src: &str, opts: &CcOptions) -> Result<CompiledKernel> {
    let dir = crate::scratch::tempdir("cpu")
        .into_diagnostic()
        .wrap_err("creating a temporary directory for the C compiler")?;
    let c_path = dir.path().join("kernel.c");
    let so_path = dir.path().join("kernel.so");
    std::fs::write(&c_path, c_src)
        .into_diagnostic()
        .wrap_err_with(|| format!("writing {}", c_path.display()))?;
    let cc = opts.compiler();
    let output = crate::scratch::output(
        Command::new(&cc)
            .args(opts.flags())
            .arg("-o")
            .arg(&so_path)
            .arg(&c_path)
            .arg("-lm"),
    );
    let output = match output {
        Ok(o) => o,
        Err(e) => {
            return Err(miette!(
                help = "install a C compiler or point $CC at one",
                "could not run the C compiler `{cc}`: {e}"
            ))
        }
    };
    if !output.status.success() {
        let kept = crate::scratch::keep(dir);
        let c_path = kept.join("kernel.c");
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(miette!(
            help = format!("the generated C is kept at {}", c_path.display()),
            "the C compiler `{cc}` failed ({}) on {}:\n{}",
            output.status,
            c_path.display(),
            stderr.trim_end()
        ));
    }
    // SAFETY: loading a library we just built; its initialisers are those of a plain C
    // translation unit (and of libgomp).
    let lib = unsafe { libloading::Library::new(&so_path) }
        .into_diagnostic()
        .wrap_err_with(|| format!("loading {}", so_path.display()))?;
    pin_openmp_runtime();
    Ok(CompiledKernel { lib, dir, c_path })
}

/// Keeps an OpenMP runtime that a kernel library pulled in loaded for the rest of the
/// process. Its worker threads outlive the parallel regions; if unloading a kernel
/// unloaded the runtime too, those threads would crash.
#[cfg(unix)]
fn pin_openmp_runtime() {
    for name in ["libgomp.so.1", "libomp.so", "libomp.so.5", "libiomp5.so"] {
        // SAFETY: RTLD_NOLOAD only finds a library that is already loaded (so no
        // initialiser runs); RTLD_NODELETE pins it, and the handle is intentionally leaked.
        let lib = unsafe {
            libloading::os::unix::Library::open(
                Some(name),
                libc::RTLD_NOW | libc::RTLD_NOLOAD | libc::RTLD_NODELETE,
            )
        };
        if let Ok(lib) = lib {
            std::mem::forget(lib);
        }
    }
}

#[cfg(not(unix))]
fn pin_openmp_runtime() {}

/// Runs a kernel that [`crate::codegen::cfamily::emit_c`] emitted for `prog` and [`compile_c`] built.
///
/// `sizes` has one value per `Program::params` entry (bound sizes too: the kernel checks
/// that they match the value compiled in). `tensors` is indexed by `TensorId`; inputs
/// and outputs must have the dtype and the number of elements that their shape has for
/// these sizes, and temporaries are ignored (the kernel allocates them). `scalars` is
/// indexed by `ScalarId`, one element each. Outputs and updated inputs are written in
/// place.
pub fn run(
    kernel: &CompiledKernel,
    prog: &Program,
    sizes: &[i64],
    tensors: &mut [TensorData],
    scalars: &[TensorData],
) -> Result<RunStats> {
    if sizes.len() != prog.params.len() {
        return Err(miette!(
            "`{}` has {} sizes but {} values were given",
            prog.name,
            prog.params.len(),
            sizes.len()
        ));
    }
    let check_tensor = |t: TensorId, tensors: &[TensorData]| -> Result<()> {
        let ten = &prog.tensors[t];
        let data = tensors.get(t).ok_or_else(|| {
            miette!(
                "no buffer was given for tensor `{}` of `{}`",
                ten.name,
                prog.name
            )
        })?;
        if data.dtype() != ten.dtype {
            return Err(miette!(
                "tensor `{}` is {} but its buffer holds {}",
                ten.name,
                ten.dtype,
                data.dtype()
            ));
        }
        let n: usize = ten
            .shape
            .iter()
            .map(|a| a.eval(&[], sizes).max(0) as usize)
            .product();
        if data.len() != n {
            return Err(miette!(
                "tensor `{}` needs {n} elements for these sizes but its buffer has {}",
                ten.name,
                data.len()
            ));
        }
        Ok(())
    };
    let mut tensor_args: Vec<TensorId> = Vec::new();
    for input in &prog.inputs {
        if let InputRef::Tensor(t) = input {
            tensor_args.push(*t);
        }
    }
    tensor_args.extend(prog.outputs.iter().copied());
    for &t in &tensor_args {
        if prog.tensors[t].role == TensorRole::Temp {
            return Err(miette!(
                "temporary `{}` cannot be an argument",
                prog.tensors[t].name
            ));
        }
        check_tensor(t, tensors)?;
    }
    // Copies of the scalars, so that we can hand out pointers to them.
    let mut scalar_copies: Vec<Buffer> = Vec::new();
    for (s, sc) in prog.scalars.iter().enumerate() {
        let data = scalars
            .get(s)
            .ok_or_else(|| miette!("no value was given for scalar `{}`", sc.name))?;
        if data.dtype() != sc.dtype || data.len() != 1 {
            return Err(miette!(
                "scalar `{}` must be one {} value, got {} {} value(s)",
                sc.name,
                sc.dtype,
                data.len(),
                data.dtype()
            ));
        }
        scalar_copies.push(data.buf.clone());
    }
    let mut size_copies: Vec<i64> = sizes.to_vec();

    // Pointers: sizes, inputs, outputs (see the ABI in `crate::codegen::cfamily`).
    let mut args: Vec<*mut libc::c_void> = Vec::new();
    for v in size_copies.iter_mut() {
        args.push(v as *mut i64 as *mut libc::c_void);
    }
    let mut scalar_ptrs: Vec<*mut u8> = scalar_copies.iter_mut().map(|b| b.as_mut_ptr()).collect();
    for input in &prog.inputs {
        match *input {
            InputRef::Tensor(t) => args.push(tensors[t].buf.as_mut_ptr() as *mut libc::c_void),
            InputRef::Scalar(s) => args.push(scalar_ptrs[s] as *mut libc::c_void),
        }
    }
    for &t in &prog.outputs {
        args.push(tensors[t].buf.as_mut_ptr() as *mut libc::c_void);
    }
    scalar_ptrs.clear();

    let sym = entry_symbol(prog);
    // SAFETY: the symbol has the signature `int f(void **)` by the emitter's contract.
    let entry: libloading::Symbol<unsafe extern "C" fn(*mut *mut libc::c_void) -> i32> =
        unsafe { kernel.lib.get(sym.as_bytes()) }.map_err(|e| {
            miette!(
                help = "the library was not built from C that polyc emitted for this program",
                "the compiled kernel has no entry `{sym}`: {e}"
            )
        })?;
    let start = Instant::now();
    // SAFETY: every pointer is valid for the element count checked above, buffers of
    // different tensors do not overlap, and nothing else touches them during the call.
    let status = unsafe { entry(args.as_mut_ptr()) };
    let run_ms = start.elapsed().as_secs_f64() * 1e3;
    match status {
        0 => Ok(RunStats {
            run_ms,
            device: None,
        }),
        -1 => Err(miette!(
            "kernel `{}` could not allocate its temporaries",
            prog.name
        )),
        p if p > 0 && (p as usize) <= prog.params.len() => {
            let p = p as usize - 1;
            Err(miette!(
                help = "recompile the kernel for these sizes, or keep the size symbolic",
                "size {} = {} differs from the value the kernel was compiled for",
                prog.params[p].name,
                sizes[p]
            ))
        }
        p if p <= -2 && ((-2 - p) as usize) < prog.params.len() => {
            let p = (-2 - p) as usize;
            Err(miette!(
                help = "run the kernel at one of the sizes it was compiled for, or compile it for a wider --dynamic range",
                "size {} = {} is outside the values the kernel was compiled for (--dynamic)",
                prog.params[p].name,
                sizes[p]
            ))
        }
        k if k <= -1000 && ((-1000 - k) as usize) < prog.stmts.len() => {
            Err(division_by_zero(prog, (-1000 - k) as usize))
        }
        other => Err(miette!("kernel `{}` returned status {other}", prog.name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_width_flag() {
        assert_eq!(
            prefer_vector_width_flag_for("x86_64", 64).as_deref(),
            Some("-mprefer-vector-width=512")
        );
        assert_eq!(
            prefer_vector_width_flag_for("x86", 32).as_deref(),
            Some("-mprefer-vector-width=256")
        );
        assert_eq!(prefer_vector_width_flag_for("aarch64", 64), None);
        assert_eq!(prefer_vector_width_flag_for("x86_64", 128), None);
    }

    #[test]
    fn flags_follow_the_description() {
        let desc = TargetDesc::builtin_cpu().expect("built-in description");
        let opts = CcOptions::for_target(&desc);
        assert_eq!(opts.vector_bytes, Some(64));
        assert_eq!(CcOptions::default().vector_bytes, Some(64));
        let flags = opts.flags();
        let want = prefer_vector_width_flag(64);
        assert_eq!(
            flags
                .iter()
                .find(|f| f.starts_with("-mprefer-vector-width"))
                .cloned(),
            want
        );
        assert!(flags.contains(&FP_CONTRACT_FLAG.to_string()), "{flags:?}");
        let none = CcOptions {
            vector_bytes: None,
            ..CcOptions::default()
        };
        assert!(!none.flags().iter().any(|f| f.contains("vector-width")));
        // Extra flags come last, so they can override the others.
        let extra = CcOptions {
            extra_flags: vec!["-O1".into()],
            ..CcOptions::default()
        };
        assert_eq!(extra.flags().last().map(String::as_str), Some("-O1"));
    }
}
