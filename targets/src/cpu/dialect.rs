//! The CPU's C: C11 (GNU) with OpenMP for parallel loops and vector reductions, gcc's
//! unroll pragma, a vectorisable `expf` of polyc's own, and a static fault status for
//! integer division by zero.

use polyhedral::ir::Program;

use crate::codegen::cfamily::{
    emit_translation_unit, Dialect, DivisionFault, EmitOptions, EXP_F32,
};
use crate::codegen::kir::Kernel;

/// C11 (GNU) with OpenMP, for the CPU.
#[derive(Clone, Copy, Debug, Default)]
pub struct CDialect;

impl Dialect for CDialect {
    fn fn_prefix(&self) -> &'static str {
        "static inline"
    }
    fn restrict(&self) -> &'static str {
        "restrict"
    }
    fn exp_f32(&self) -> &'static str {
        "polyc_exp_f32"
    }
    fn exp_f32_helper(&self) -> Option<&'static str> {
        Some(EXP_F32)
    }
    fn unroll_pragma(&self, trip: i64) -> String {
        format!("#pragma GCC unroll {trip}")
    }
    fn parallel_pragma(&self) -> Option<&'static str> {
        Some("#pragma omp parallel for")
    }
    fn simd_reduction_pragma(&self) -> Option<&'static str> {
        Some("#pragma omp simd reduction(+:polyc_red)")
    }
    fn block_sync(&self) -> &'static str {
        "/* barrier */"
    }
    fn division_fault(&self) -> DivisionFault {
        DivisionFault {
            preamble: "/* The first statement that divided by zero, plus 1 (0: none); the entry returns -1000 - k for S_k. */\nstatic int polyc_fault;\n",
            prefix: "static inline",
            param: "",
            record: "int none = 0; __atomic_compare_exchange_n(&polyc_fault, &none, s + 1, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED); ",
        }
    }
    fn device_code(&self) -> bool {
        false
    }
}

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
