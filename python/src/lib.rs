//! `polyc._native`: the compiler half of the Python package.
//!
//! The Python half (`python/pysrc/polyc`) owns everything about tensors: it checks the
//! arguments, binds sizes from shapes, allocates outputs, keeps the compile cache and calls
//! a CPU kernel's entry through `ctypes`, with no copy. This module compiles: it turns the
//! options into the same [`CompileOptions`] the CLI builds (checked by the same parsers),
//! runs the pipeline, and returns the kernel's signature as JSON ([`meta`]). For the CPU it
//! also builds the shared library and copies it where the cache wants it; for the GPU
//! target it keeps the built executable in a [`GpuKernel`], which copies numpy buffers in
//! and out around each run (OpenCL or CUDA own their memory).

mod meta;
mod options;

use miette::Report;
use polyc::pipeline::driver::{build, compile};
use polyc::pipeline::options::CompileOptions;
use polyc::pipeline::stages::{Compiled, Mode};
use polyhedral::data::{Buffer, TensorData};
use polyhedral::ir::{InputRef, Program};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::path::Path;
use targets::Executable;

pyo3::create_exception!(
    _native,
    CompileError,
    pyo3::exceptions::PyException,
    "A program, tile spec or option polyc cannot compile (the located message of the CLI)."
);

/// A miette report as a Python `CompileError` carrying the CLI's plain rendering, unwrapped
/// (the Python side may put `<string>` for a cache path, and the reader's terminal wraps).
fn to_py(report: Report) -> PyErr {
    let handler =
        miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor())
            .with_width(1000);
    let mut text = String::new();
    if handler.render_report(&mut text, report.as_ref()).is_err() {
        text = format!("{report}");
    }
    CompileError::new_err(text)
}

/// Compiles as `polyc compile` would (`explain` and `codegen` as for `polyc explain` and
/// `polyc dump`).
fn compile_with(
    mut opts: CompileOptions,
    explain: bool,
    codegen: bool,
) -> miette::Result<Compiled> {
    opts.explain = explain;
    opts.codegen = codegen;
    opts.isl_sched_options()?;
    compile(&opts, Mode::Optimised)
}

/// [`compile_with`] for the JSON object the Python side built (see `options::parse`).
fn compile_json(options: &str, explain: bool, codegen: bool) -> miette::Result<Compiled> {
    compile_with(options::parse(options)?, explain, codegen)
}

/// Compiles a program. Returns the kernel's signature and notes as JSON, and, for GPU
/// targets, the built kernel. For the CPU target, the shared library is copied to
/// `library` and the C to `library` with the extension `.c`.
#[pyfunction]
#[pyo3(signature = (options, library=None))]
fn compile_kernel(options: &str, library: Option<&str>) -> PyResult<(String, Option<GpuKernel>)> {
    let (meta, gpu) = (|| -> miette::Result<(String, Option<GpuKernel>)> {
        let opts = options::parse(options)?;
        let compiled = compile_with(opts.clone(), false, true)?;
        let exec = build(&compiled, &opts, false)?;
        let meta = meta::signature(&compiled, opts.target.as_deref().unwrap_or("cpu"));
        match exec.library_path() {
            Some(so) => {
                let dest = library.ok_or_else(|| {
                    miette::miette!("internal error: no path was given for the CPU library")
                })?;
                copy_library(&so, Path::new(dest), &compiled.code)?;
                Ok((meta, None))
            }
            None => Ok((meta, Some(GpuKernel::new(compiled, exec)))),
        }
    })()
    .map_err(to_py)?;
    Ok((meta, gpu))
}

/// The CUDA C++ (kernels and their host launcher, `extern "C" cudaError_t NAME(...,
/// cudaStream_t stream)`) of a GPU target's program for these options: what `polyc
/// compile --emit cuda` writes. The Python side builds it with nvcc and launches it on
/// PyTorch's CUDA tensors, in place, on their stream.
#[pyfunction]
fn cuda_source(py: Python<'_>, options: &str) -> PyResult<String> {
    py.allow_threads(|| -> miette::Result<String> {
        let mut opts = options::parse(options)?;
        opts.emit = Some("cuda".into());
        Ok(compile_with(opts, false, true)?.code)
    })
    .map_err(to_py)
}

/// The nvcc polyc uses (`$POLYC_NVCC`, `nvcc` on `PATH`, the `nvidia-cuda-nvcc` wheel of
/// `python3`), or `None` where there is none.
#[pyfunction]
fn find_nvcc() -> Option<String> {
    targets::gpu::cuda_tools::find_nvcc().map(|p| p.display().to_string())
}

/// Copies the built library (and its C beside it) into the cache, through a temporary
/// name and a rename, so that a reader never sees half a file.
fn copy_library(so: &Path, dest: &Path, code: &str) -> miette::Result<()> {
    use miette::{IntoDiagnostic, WrapErr};
    let tmp = dest.with_extension(format!("so.tmp{}", std::process::id()));
    std::fs::copy(so, &tmp)
        .into_diagnostic()
        .wrap_err_with(|| format!("copying the kernel library to {}", tmp.display()))?;
    std::fs::write(dest.with_extension("c"), code)
        .into_diagnostic()
        .wrap_err_with(|| format!("writing {}", dest.with_extension("c").display()))?;
    std::fs::rename(&tmp, dest)
        .into_diagnostic()
        .wrap_err_with(|| format!("moving the kernel library to {}", dest.display()))
}

/// `polyc explain` for these options.
#[pyfunction]
fn explain(py: Python<'_>, options: &str) -> PyResult<String> {
    py.allow_threads(|| compile_json(options, true, false).map(|c| c.explain.unwrap_or_default()))
        .map_err(to_py)
}

/// `polyc dump --stage STAGE --format FORMAT` for these options.
#[pyfunction]
fn tree(py: Python<'_>, options: &str, stage: &str, format: &str) -> PyResult<String> {
    py.allow_threads(|| -> miette::Result<String> {
        if !matches!(format, "tree" | "dot" | "isl") {
            return Err(miette::miette!(
                help = "use format=\"tree\", \"dot\" or \"isl\"",
                "format `{format}` is not a tree format"
            ));
        }
        let compiled = compile_json(options, false, false)?;
        let tree = &compiled.stage(stage)?.tree;
        Ok(match format {
            "tree" => tree.to_tree_text(),
            "dot" => tree.to_dot(),
            _ => tree.to_isl_yaml(&polyhedral::isl::Ctx::new())?,
        })
    })
    .map_err(to_py)
}

/// A kernel built for a GPU target (OpenCL on PoCL, or CUDA where a driver exists).
#[pyclass(unsendable)]
struct GpuKernel {
    program: Program,
    exec: Box<dyn Executable>,
}

impl GpuKernel {
    fn new(compiled: Compiled, exec: Box<dyn Executable>) -> Self {
        GpuKernel {
            program: compiled.program,
            exec,
        }
    }
}

#[pymethods]
impl GpuKernel {
    /// Runs the kernel. `tensors[t]` is the address of tensor `t`'s C-contiguous buffer
    /// (0 for temporaries), which the Python side checked against the signature; `scalars`
    /// holds each scalar input's value. Outputs and inputs the program writes are copied
    /// back. Returns the kernel's time in ms and the device that ran it.
    fn run(
        &self,
        sizes: Vec<i64>,
        tensors: Vec<usize>,
        scalars: Vec<f64>,
    ) -> PyResult<(f64, Option<String>)> {
        let prog = &self.program;
        if tensors.len() != prog.tensors.len() || scalars.len() != prog.scalars.len() {
            return Err(PyRuntimeError::new_err(
                "internal error: wrong argument count",
            ));
        }
        // SAFETY: the Python side checked each address against the tensor's dtype and
        // shape at these sizes and keeps the arrays alive for the call.
        let mut data: Vec<TensorData> = unsafe { read_tensors(prog, &sizes, &tensors) };
        let scalar_data = scalar_values(prog, &scalars);
        let stats = self
            .exec
            .run(prog, &sizes, &mut data, &scalar_data)
            .map_err(to_py)?;
        // SAFETY: as above.
        unsafe { write_results(prog, &mut data, &tensors) };
        Ok((stats.run_ms, stats.device))
    }
}

/// Runs polyc's reference interpreter (the program in its written order, no
/// transformation) on the arguments, as [`GpuKernel::run`] takes them: the oracle that
/// `polyc run --check` compares with, for `Kernel.reference`.
#[pyfunction]
fn reference(
    options: &str,
    sizes: Vec<i64>,
    tensors: Vec<usize>,
    scalars: Vec<f64>,
) -> PyResult<()> {
    (|| -> miette::Result<()> {
        let opts = options::parse(options)?;
        let source = polyhedral::diag::SourceFile::read(&opts.program)?;
        let prog = polyhedral::lang::compile_as(&source, opts.entry.as_deref(), opts.lang)?;
        // The compiled kernel may have more tensors: the temporaries of shared
        // subexpressions (`polyhedral::cse`), which come last and which this program,
        // as written, does not have.
        if tensors.len() < prog.tensors.len() || scalars.len() != prog.scalars.len() {
            return Err(miette::miette!("internal error: wrong argument count"));
        }
        let tensors = &tensors[..prog.tensors.len()];
        // SAFETY: as in `GpuKernel::run`.
        let mut data = unsafe { read_tensors(&prog, &sizes, tensors) };
        let scalar_data = scalar_values(&prog, &scalars);
        polyhedral::interp::interpret(&prog, &sizes, &mut data, &scalar_data)?;
        // SAFETY: as above.
        unsafe { write_results(&prog, &mut data, tensors) };
        Ok(())
    })()
    .map_err(to_py)
}

/// Each scalar input's value as the interpreter and the runners take it.
fn scalar_values(prog: &Program, values: &[f64]) -> Vec<TensorData> {
    prog.scalars
        .iter()
        .zip(values)
        .map(|(s, &v)| TensorData::scalar(s.dtype, v))
        .collect()
}

/// Copies outputs and the inputs the program writes back into their Python buffers.
///
/// # Safety
/// As [`read_tensors`].
unsafe fn write_results(prog: &Program, data: &mut [TensorData], addrs: &[usize]) {
    for (t, ten) in prog.tensors.iter().enumerate() {
        let written = prog.outputs.contains(&t) || prog.stmts.iter().any(|s| s.lhs == t);
        if addrs[t] != 0 && written && ten.role != polyhedral::ir::TensorRole::Temp {
            write_back(&mut data[t].buf, addrs[t]);
        }
    }
}

/// Copies each argument tensor out of its Python buffer (temporaries get empty data).
///
/// # Safety
/// Each nonzero address must point to a live buffer of the tensor's dtype holding as many
/// elements as its shape has at `sizes`.
unsafe fn read_tensors(prog: &Program, sizes: &[i64], addrs: &[usize]) -> Vec<TensorData> {
    let mut out = Vec::with_capacity(prog.tensors.len());
    let args: Vec<usize> = prog
        .inputs
        .iter()
        .filter_map(|i| match i {
            InputRef::Tensor(t) => Some(*t),
            InputRef::Scalar(_) => None,
        })
        .chain(prog.outputs.iter().copied())
        .collect();
    for (t, ten) in prog.tensors.iter().enumerate() {
        let shape = TensorData::shape_of(prog, t, sizes);
        let mut d = TensorData::zeros(ten.dtype, shape);
        if addrs[t] != 0 && args.contains(&t) {
            let bytes = d.buf.len() * ten.dtype.size_bytes();
            std::ptr::copy_nonoverlapping(addrs[t] as *const u8, d.buf.as_mut_ptr(), bytes);
        }
        out.push(d);
    }
    out
}

/// Copies a result back into its Python buffer.
///
/// # Safety
/// `addr` must point to a live, writable buffer of `buf.len()` elements of its dtype.
unsafe fn write_back(buf: &mut Buffer, addr: usize) {
    let bytes = buf.len() * buf.dtype().size_bytes();
    std::ptr::copy_nonoverlapping(buf.as_mut_ptr(), addr as *mut u8, bytes);
}

/// The version string the compile cache keys on.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// The module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("CompileError", m.py().get_type::<CompileError>())?;
    m.add_function(wrap_pyfunction!(compile_kernel, m)?)?;
    m.add_function(wrap_pyfunction!(explain, m)?)?;
    m.add_function(wrap_pyfunction!(tree, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(reference, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_source, m)?)?;
    m.add_function(wrap_pyfunction!(find_nvcc, m)?)?;
    m.add_class::<GpuKernel>()?;
    Ok(())
}
