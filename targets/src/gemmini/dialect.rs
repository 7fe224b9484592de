//! Gemmini's C: C11 for the RISC-V core beside the array, where the instructions are
//! `gemmini.h` macro calls (kernel-IR intrinsics, printed as calls). The core is a single
//! bare-metal hart: no parallel loops; otherwise gcc's pragmas and polyc's own `expf`, as
//! on the CPU.

use polyhedral::ir::Program;

use crate::codegen::cfamily::{
    emit_translation_unit, Dialect, DivisionFault, EmitOptions, EXP_F32,
};
use crate::codegen::kir::Kernel;

/// C for Gemmini's host core.
#[derive(Clone, Copy, Debug, Default)]
pub struct GemminiC;

impl Dialect for GemminiC {
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
        None
    }
    fn simd_reduction_pragma(&self) -> Option<&'static str> {
        // gcc vectorises the sum for the core's vector unit where it has one, and ignores
        // the pragma where it has none.
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
