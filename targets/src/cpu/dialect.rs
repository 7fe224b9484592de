//! The CPU's C: host C (the [`Dialect`] defaults: gcc's unroll pragma, a vectorisable
//! `expf` of polyc's own, a static fault status for integer division by zero) with OpenMP
//! for parallel loops and vector reductions, and multiply-accumulates that clang keeps in
//! registers ([`FMA_HELPERS`]).

use polyhedral::ir::Program;

use crate::codegen::cfamily::{emit_translation_unit, Dialect, EmitOptions, FMA_HELPERS};
use crate::codegen::kir::Kernel;

/// C11 (GNU) with OpenMP, for the CPU.
#[derive(Clone, Copy, Debug, Default)]
pub struct CDialect;

impl Dialect for CDialect {
    fn parallel_pragma(&self) -> Option<&'static str> {
        Some("#pragma omp parallel for")
    }
    fn simd_reduction_pragma(&self) -> Option<&'static str> {
        Some(OMP_SIMD_REDUCTION)
    }
    fn fma_names(&self) -> [&'static str; 2] {
        ["polyc_fma_f32", "polyc_fma_f64"]
    }
    fn fma_helper(&self) -> Option<&'static str> {
        Some(FMA_HELPERS)
    }
}

/// OpenMP's vector reduction over `polyc_red`.
const OMP_SIMD_REDUCTION: &str = "#pragma omp simd reduction(+:polyc_red)";

/// Emits the complete C translation unit of `kernel` for the CPU (see
/// [`crate::codegen::cfamily`] for the contract). `param_texts[p]` is the value (`"64"`)
/// of a bound size or the name (`"H"`) of a symbolic one, one per `Program::params` entry.
pub fn emit_c(
    prog: &Program,
    param_texts: &[String],
    kernel: &Kernel,
    opts: &EmitOptions,
) -> String {
    emit_translation_unit(prog, param_texts, kernel, opts, &CDialect)
}
