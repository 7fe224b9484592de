//! The CPU's C: host C (the [`Dialect`] defaults: gcc's unroll pragma, a vectorisable
//! `expf` of polyc's own, a static fault status for integer division by zero) with OpenMP
//! for parallel loops and vector reductions, and multiply-accumulates that clang keeps in
//! registers ([`FMA_HELPERS`]).

use polyhedral::ir::Program;

use crate::codegen::cfamily::{emit_translation_unit, Dialect, EmitOptions, FMA_HELPERS};
use crate::codegen::kir::Kernel;

/// C11 (GNU) with OpenMP, for the CPU, with vectors of the target description's width.
#[derive(Clone, Copy, Debug)]
pub struct CDialect {
    /// The preferred vector width in bytes (the description's `vector_bytes`; the
    /// built-in CPU's 64 by default), which the file asks the C compiler for itself.
    pub vector_bytes: u32,
}

impl Default for CDialect {
    fn default() -> Self {
        CDialect { vector_bytes: 64 }
    }
}

impl Dialect for CDialect {
    /// Helpers are always inlined: gcc's inliner otherwise leaves calls of them in large
    /// functions (PolyBench's cholesky at N = 1000: a register tile of `polyc_fma_f64`
    /// calls, 1.65 s, against 0.66 s inlined, in the same code).
    fn fn_prefix(&self) -> &'static str {
        "static inline __attribute__((always_inline))"
    }
    fn vector_width_pragmas(&self) -> Option<(String, &'static str)> {
        vector_width_pragmas(self.vector_bytes)
    }
    fn parallel_pragma(&self) -> Option<&'static str> {
        Some("#pragma omp parallel for")
    }
    /// gcc and clang's `__builtin_expect`: gcc 12 otherwise guessed the full-tile branch
    /// of A·B at 96 × 2048 × 200 (partial tiles along the rows and the reduction at once)
    /// cold and left its register tiles scalar, 4 GFLOP/s against 53 at 128 rows.
    fn likely(&self, cond: &str) -> Option<String> {
        Some(format!("__builtin_expect(!!({cond}), 1)"))
    }
    fn omp_simd_reductions(&self) -> bool {
        true
    }
    fn outline_parallel_bodies(&self) -> bool {
        true
    }
    fn fma_names(&self) -> [&'static str; 2] {
        ["polyc_fma_f32", "polyc_fma_f64"]
    }
    fn fma_helper(&self) -> Option<&'static str> {
        Some(FMA_HELPERS)
    }
}

/// The pragmas that ask gcc and clang, in the file itself, for vectors of `bytes` bytes
/// (16, 32 or 64; `None` for other widths), whatever the compiler's tuning for the machine
/// prefers. Both keep to 256-bit vectors on AVX-512 servers unless told otherwise
/// (`-mprefer-vector-width=512`, which polyc's runner passes), and a register tile sized
/// for 512-bit vectors then spills (issue 25: GEMM 1024³ under plain `clang -O3
/// -march=native` at 68 GFLOP/s, with the pragma about twice that). gcc takes the width
/// as a target option (`prefer-vector-width=N`); clang has no such option in source, so
/// the file asks it for Skylake's tuning (`tune=skylake`: tuning only, the instruction
/// set stays `-march`'s), which does not prefer 256-bit vectors, on x86-64 machines with
/// AVX-512 and for a 64-byte width only. A width given on the command line still wins.
/// Returns the text before the file's first function and the text after its last.
fn vector_width_pragmas(bytes: u32) -> Option<(String, &'static str)> {
    if !matches!(bytes, 16 | 32 | 64) {
        return None;
    }
    let bits = bytes * 8;
    let mut open = format!(
        "/* Vectors of {bits} bits (the target description's width), whatever the compiler's
   tuning prefers. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#pragma GCC target(\"prefer-vector-width={bits}\")
"
    );
    if bytes == 64 {
        open.push_str(
            "#elif defined(__clang__) && defined(__x86_64__) && defined(__AVX512F__)
#pragma clang attribute push (__attribute__((target(\"tune=skylake\"))), apply_to = function)
",
        );
    }
    open.push_str("#endif\n\n");
    let close = if bytes == 64 {
        "\n#if defined(__clang__) && defined(__x86_64__) && defined(__AVX512F__)
#pragma clang attribute pop
#endif
"
    } else {
        ""
    };
    Some((open, close))
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
    emit_translation_unit(prog, param_texts, kernel, opts, &CDialect::default())
}

/// [`emit_c`] for a CPU whose description prefers vectors of `vector_bytes` bytes.
pub fn emit_c_for(
    prog: &Program,
    param_texts: &[String],
    kernel: &Kernel,
    opts: &EmitOptions,
    vector_bytes: u32,
) -> String {
    emit_translation_unit(prog, param_texts, kernel, opts, &CDialect { vector_bytes })
}
