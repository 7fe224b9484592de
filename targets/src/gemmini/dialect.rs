//! Gemmini's C: host C (the [`Dialect`] defaults) for the RISC-V core beside the array,
//! where the instructions are `gemmini.h` macro calls (kernel-IR intrinsics, printed as
//! calls). The core is a single bare-metal hart: no parallel loops; sums over a loop carry
//! OpenMP's `simd` pragma, which gcc honours for a vector unit and otherwise ignores.

use polyhedral::ir::Program;

use crate::codegen::cfamily::{emit_translation_unit, Dialect, EmitOptions};
use crate::codegen::kir::Kernel;

/// C for Gemmini's host core.
#[derive(Clone, Copy, Debug, Default)]
pub struct GemminiC;

impl Dialect for GemminiC {
    fn omp_simd_reductions(&self) -> bool {
        true
    }
}

/// The C translation unit of a Gemmini kernel, without its header include (see
/// [`super::target::emit_gemmini_c`]).
pub fn emit_kernel_c(
    prog: &Program,
    param_texts: &[String],
    kernel: &Kernel,
    opts: &EmitOptions,
) -> String {
    emit_translation_unit(prog, param_texts, kernel, opts, &GemminiC)
}
