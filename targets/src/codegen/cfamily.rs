//! The C emitter: one complete C11 (GNU) translation unit per `def`.
//!
//! # The emitted C contract
//!
//! **Headers.** `stdint.h`, `stdlib.h`, `string.h`, `math.h`; nothing else is needed.
//!
//! **The kernel function.**
//! `void <def>(<sizes>, <inputs in def order>, <outputs in order>)`:
//! - every *symbolic* size first, as `int64_t NAME`, in the order of `Program::params`
//!   (sizes bound to a number are compiled in as constants and are not parameters);
//! - then each entry of `Program::inputs`, in order: a tensor as `T *restrict NAME`
//!   (`const T *restrict NAME` when no statement writes it), a scalar by value as `T NAME`;
//! - then each output tensor as `T *restrict NAME`.
//!
//! `T` is [`DType::c_type`] (`_Float16`, `float`, `double`, `int8_t`, `int32_t`,
//! `int64_t`). Tensors are row-major and contiguous; element `(i0, …, in)` of a tensor of
//! shape `(d0, …, dn)` is at `((i0 · d1 + i1) · d2 + …) · dn + in`. Temporaries are
//! `malloc`ed at the start of the function and `free`d at its end (with
//! [`EmitOptions::poison_temps`], code that first fills them with `0xFF` bytes, NaN for
//! floats and −1 for integers, and so the local buffers of tile-local temporaries, is
//! emitted under `#ifdef POLYC_POISON`: only `polyc run --check` defines it, so compiled
//! kernels never spend time filling memory). A temporary that the code only touches
//! through local buffers (a tile-local temporary, see [`crate::passes::promote`]) is not allocated
//! at all. A name that is a C keyword or clashes with the prelude (for example
//! `int`, `exp`, `free`, anything starting with `polyc_`) gets a trailing `_` in C.
//!
//! **The entry wrapper** (the only symbol the runner calls):
//! `int <def>__polyc_entry(void **args)`. `args` has one pointer per size of
//! `Program::params` (to an `int64_t`; *every* size, bound or not), then one per input
//! in `Program::inputs` order (a tensor's data pointer, or a pointer to a scalar's value),
//! then one per output (data pointer). It returns 0 on success, `p + 1` when bound size
//! `p` was passed a value other than the one compiled in (nothing runs then), and −1 when
//! a temporary could not be allocated, and `−2 − p` when dynamic size `p` (`--dynamic`)
//! is outside the values the kernel was compiled for (the status is thread-local, so different threads
//! may run the same kernel at once on different buffers).
//!
//! **Loops** come from isl's AST: `for (int64_t c0 = …; c0 <= …; c0 += 1)`. A loop of a
//! [`KNode::For`] with `parallel` set gets its dialect's parallel-loop pragma
//! ([`Dialect::parallel_pragma`]) on the line before it (only when its condition has the
//! canonical form `c <= e` / `c < e`).
//!
//! **Statement instances** are blocks that bind the statement's iterators and perform
//! the update:
//! `{ const int64_t h = c0; const int64_t w = c1 + 2; C[h * 64 + w] = …; }` (one
//! declaration per line). Index expressions are [`polyhedral::ir::Aff::to_c`] with the
//! size texts, parenthesised where needed; the prelude
//! defines `polyc_floord`, `polyc_mod` (floor division and modulo towards −∞),
//! `polyc_min` and `polyc_max` over `int64_t`.
//!
//! **Arithmetic** follows the typing rule of [`polyhedral::ir::Expr`]: every operation
//! happens in the statement's type `S` (the left side's). Reads, scalars, iterator
//! values and literals are converted to `S` first (`((float)A[…])`), comparisons give
//! `(S)1` or `(S)0`, `select(c, a, b)` is `c != 0 ? a : b`, and `cast<T>(e)` is
//! `(S)((T)(e))`. In detail:
//! - `f16`: values are `_Float16`; every `+ - * / %` converts both operands to `float`,
//!   computes, and rounds back to `_Float16` after *each* operation (`polyc_add_f16`, …),
//!   which equals IEEE half arithmetic with per-operation rounding (float has more than
//!   twice half's precision). Every built-in function is evaluated in `float` (`expf`,
//!   …) and rounded to half once. Negation is exact.
//! - `i8`: every operand is converted to `int8_t` (wrapping) and promoted to `int32_t`
//!   (`((int32_t)(int8_t)x)`; literals too), arithmetic happens in `int32_t` as C's
//!   integer promotion does, and the result is converted to `int8_t` only at the store
//!   (wrapping modulo 2⁸; gcc and clang define this conversion).
//! - Integer `+ - *` wrap (the file says so to gcc with `#pragma GCC optimize("wrapv")`,
//!   and the runner compiles with `-fwrapv`); `/` truncates and `%` is
//!   C's remainder. Integer division by zero (and `MIN / -1`) is undefined in C, as it
//!   is not checked.
//! - Float `%` is `fmodf`/`fmod`.
//! - Functions: `exp`, `log`, `sqrt`, `tanh` → `expf`/`exp`, … (`logf`, `sqrtf`,
//!   `tanhf`); `rsqrt(x)` = `1/sqrt(x)`; `sigmoid(x)` = `1/(1+exp(-x))`; `abs` is
//!   `fabsf`/`fabs` for floats and `x < 0 ? -x : x` for integers; `relu(x)` =
//!   `x > 0 ? x : 0`; `max(a, b)` = `a > b ? a : b`; `min(a, b)` = `a < b ? a : b`.
//!   (Float-only functions applied to an integer statement are evaluated in `double`.)
//! - `select(c, a, b)` is `c != 0 ? a : b`, or `polyc_select_<type>(c != 0, a, b)`
//!   where a branch reads a tensor (both branches' loads then run unconditionally; see
//!   [`loads_unconditionally`], a gcc 12 workaround).
//! - Reductions: the init sets 0 (`+`), 1 (`*`), the lowest value (`max`: `-INFINITY`,
//!   `INT8_MIN`, `INT32_MIN`, `INT64_MIN`) or the highest (`min`: `INFINITY`,
//!   `INT8_MAX`, …). Updates: `lhs = lhs + v`, `lhs = lhs * v`, `max=`:
//!   `lhs = v > lhs ? v : lhs` (that is `max(v, lhs)`), `min=`: `lhs = v < lhs ? v : lhs`.
//!   The current value of `lhs` is converted to `S` like any read.
//! - The runner compiles with `-ffp-contract=off`, so no multiply-add is fused behind the
//!   program's back and every float operation rounds as written. The one fused operation
//!   is the multiply-accumulate `lhs += a * b` in f32 and f64, emitted as
//!   `lhs = fmaf(a, b, lhs)` (`fma` for f64; the CPU's C calls `polyc_fma_f32` and
//!   `polyc_fma_f64`, [`FMA_HELPERS`], the same operation); the reference interpreter
//!   computes it the same way, with one rounding.

use std::collections::HashSet;
use std::fmt::Write;

use polyhedral::ir::{
    Aff, AssignOp, BinOp, DType, Expr, Func, InputRef, Program, Stmt, StmtBody, TensorId,
};

use crate::codegen::kir::{
    BlockRef, IntrinsicArg, KCmp, KExpr, KNode, Kernel, LocalRef, LoopKind, MemSpace,
};
use std::cell::RefCell;
use std::collections::HashMap;

/// Options of [`emit_c`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EmitOptions {
    /// Emit code, under `#ifdef POLYC_POISON`, that fills temporaries with `0xFF` bytes
    /// right after `malloc` (for `--check`, which defines `POLYC_POISON`: a read of a
    /// temporary element that no statement wrote shows up as NaN or −1).
    pub poison_temps: bool,
    /// Dynamic sizes (`--dynamic`): the kernel starts by checking each against its
    /// values and, outside them, sets status `−2 − p` (`p` the size's index in
    /// `Program::params`) and returns without touching memory.
    pub dynamic: Vec<crate::codegen::microkernel::DynamicSize>,
}

/// The name of the entry wrapper that runners call: `<def>__polyc_entry`.
pub fn entry_symbol(prog: &Program) -> String {
    format!("{}__polyc_entry", c_ident(&prog.name))
}

/// True when `param_texts[p]` is a number, i.e. the size is bound and compiled in.
pub fn is_bound(text: &str) -> bool {
    text.trim().parse::<i64>().is_ok()
}

/// The C spelling of a program name: the name itself, or the name with a trailing `_`
/// when it is a C keyword or clashes with a name the emitted code uses.
pub fn c_ident(name: &str) -> String {
    const RESERVED: &[&str] = &[
        // C keywords (C11 and common extensions)
        "auto",
        "break",
        "case",
        "char",
        "const",
        "continue",
        "default",
        "do",
        "double",
        "else",
        "enum",
        "extern",
        "float",
        "for",
        "goto",
        "if",
        "inline",
        "int",
        "long",
        "register",
        "restrict",
        "return",
        "short",
        "signed",
        "sizeof",
        "static",
        "struct",
        "switch",
        "typedef",
        "union",
        "unsigned",
        "void",
        "volatile",
        "while",
        "asm",
        "typeof",
        "_Bool",
        "_Complex",
        "_Imaginary",
        "_Float16",
        "_Alignas",
        "_Alignof",
        "_Atomic",
        "_Generic",
        "_Noreturn",
        "_Static_assert",
        "_Thread_local",
        // names the emitted code and its headers use
        "int8_t",
        "int32_t",
        "int64_t",
        "size_t",
        "NULL",
        "malloc",
        "free",
        "memset",
        "abs",
        "exp",
        "expf",
        "log",
        "logf",
        "sqrt",
        "sqrtf",
        "tanh",
        "tanhf",
        "fabs",
        "fabsf",
        "fmod",
        "fmodf",
        "INFINITY",
        "NAN",
        "main",
    ];
    if RESERVED.contains(&name) || name.starts_with("polyc_") || name.starts_with("__") {
        format!("{name}_")
    } else {
        name.to_string()
    }
}

/// The suffix of the per-type helper functions (`polyc_max_f32`, …).
pub(crate) fn suffix(t: DType) -> &'static str {
    match t {
        DType::F16 => "f16",
        DType::F32 => "f32",
        DType::F64 => "f64",
        DType::I8 | DType::I32 => "i32",
        DType::I64 => "i64",
    }
}

/// The type arithmetic of a statement of type `t` happens in.
fn compute_type(t: DType) -> DType {
    if t == DType::I8 {
        DType::I32
    } else {
        t
    }
}

fn uses_f16(prog: &Program) -> bool {
    fn expr_has(e: &Expr) -> bool {
        match e {
            Expr::Cast(t, a) => *t == DType::F16 || expr_has(a),
            Expr::Lit(_)
            | Expr::Scalar(_)
            | Expr::IterValue(_)
            | Expr::SizeValue(_)
            | Expr::Read { .. } => false,
            Expr::Neg(a) => expr_has(a),
            Expr::Bin(_, a, b) | Expr::Cmp(_, a, b) => expr_has(a) || expr_has(b),
            Expr::Call(_, v) => v.iter().any(expr_has),
            Expr::Select(c, a, b) => expr_has(c) || expr_has(a) || expr_has(b),
        }
    }
    prog.tensors.iter().any(|t| t.dtype == DType::F16)
        || prog.scalars.iter().any(|s| s.dtype == DType::F16)
        || prog.stmts.iter().any(|s| {
            s.dtype == DType::F16 || matches!(&s.body, StmtBody::Update(_, e) if expr_has(e))
        })
}

/// The integer helpers every emitted file defines.
const INDEX_HELPERS: &str = r#"/* Index helpers: floor division and modulo towards -infinity, min, max. */
static inline int64_t polyc_floord(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline int64_t polyc_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
static inline int64_t polyc_min(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t polyc_max(int64_t a, int64_t b) { return a > b ? a : b; }
"#;

/// The 32-bit index helpers of device code, for kernels whose indices are `int` (see
/// [`crate::codegen::ranges`]).
const INDEX32_HELPERS: &str = r#"static inline int polyc_ifloord(int a, int b) {
  int q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline int polyc_imin(int a, int b) { return a < b ? a : b; }
static inline int polyc_imax(int a, int b) { return a > b ? a : b; }
"#;

/// Turns off gcc's loop distribution for the file. gcc 12.2 (Debian 12's) at `-O3` with
/// the CPU runner's flags and AVX-512 distributes a scheduled loop whose body zero-fills an element
/// and then accumulates into it, turns the fill into a `memset`, and places the `memset`
/// after the accumulation, so the result is zero (found by `tests/random_chains.rs`;
/// `-fno-tree-loop-distribution` and `-O2` both compile it right). polyc's schedule has
/// already distributed and fused the loops, and the benchmarks run as fast without the
/// pass. A pragma rather than a flag, so that the C compiles right wherever it is built.
///
/// The same pragma makes signed integer arithmetic wrap (`wrapv`, as `-fwrapv` does),
/// which the module's contract promises for integer `+ - *` and which polyc's runners
/// also ask for on the command line. Under plain `gcc -O3 -march=native` it is also
/// faster (issue 25): without it gcc 12 leaves the full register tiles of the conv chain's
/// last column block scalar (600 instead of 800 vector FMAs in the file), and the chain
/// with a temporary under its two-level spec ran at half the speed of polyc's own build.
const GCC_NO_LOOP_DISTRIBUTION: &str = r#"/* gcc 12 can misorder a zero-fill it distributes into memset; polyc's loops are already
   distributed as scheduled, so gcc's loop distribution is off in this file. Signed
   integer arithmetic wraps, as polyc's semantics say (and gcc then vectorises every
   register tile of polyc's loops without -fwrapv on the command line). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-tree-loop-distribution", "wrapv")
#endif

"#;

/// Turns off gcc's loop vectoriser for the file. gcc 12.2 (Debian 12's) at `-O3` with
/// `-march=native` vectorises a loop that carries a flow dependence of distance 1 once it
/// has unrolled the loop inside it: in `for j in 1..4, for k in 1..2: X[3j + k] =
/// relu(X[3(j - 1) + k - 1])` it loads the previous row before storing it (fuzzer finding
/// F1, `FUZZ_FINDINGS.md`; `-fno-tree-loop-vectorize` and `-O2` compile it right). Emitted
/// only for programs where a statement reads, at another index, the tensor it writes
/// ([`reads_own_output_elsewhere`]): the loops that then carry flow dependences between
/// elements are the ones gcc can get wrong), and only where a sequential loop holds loops
/// that gcc unrolls completely around such a statement ([`unrolls_into_a_sequential_loop`];
/// a register tile's reduction loop around its accumulations does not count): at other sizes gcc
/// vectorises the innermost loops, which it gets right (jacobi-1d runs 2-3x slower without
/// them). Basic-block (SLP) vectorisation stays on.
const GCC_NO_LOOP_VECTORIZE: &str = r#"/* gcc 12 can vectorise a loop that carries a flow dependence between the elements of a
   tensor a statement both reads and writes; its loop vectoriser is off in this file. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-tree-loop-vectorize")
#endif

"#;

/// The macro that, defined when an OpenCL source is built, makes its pipelined copies land
/// only at their wait ([`Dialect::async_land`]).
pub const ASYNC_AT_WAIT: &str = "POLYC_ASYNC_AT_WAIT";

/// The macro an emulating source defines from [`ASYNC_AT_WAIT`]: 1 (copies write the
/// shadow stages, which land at the wait) or 0 (copies land when issued).
pub const ASYNC_SHADOW: &str = "POLYC_SHADOW_STAGES";

/// True when some statement reads the tensor it writes at an index other than the one it
/// writes (an in-place stencil such as `X(j, k) = f(X(j - 1, k - 1))`): see
/// [`GCC_NO_LOOP_VECTORIZE`].
fn reads_own_output_elsewhere(prog: &Program) -> bool {
    prog.stmts.iter().any(self_read_elsewhere)
}

/// Whether statement `s` reads the tensor it writes at an index other than the one it
/// writes.
fn self_read_elsewhere(s: &polyhedral::ir::Stmt) -> bool {
    s.reads()
        .iter()
        .any(|(t, idx, _)| *t == s.lhs && *idx != s.lhs_index)
}

/// The most iterations of a constant loop that gcc unrolls completely at `-O3`
/// (`max-completely-peel-times`).
const GCC_PEELED_TRIP: i64 = 16;

/// True when a sequential loop of `n` holds loops, and every loop inside it has a constant
/// trip count of at most [`GCC_PEELED_TRIP`] (or is unrolled by polyc's pragma): gcc then
/// unrolls them completely and may vectorise the sequential loop itself.
fn unrolls_into_a_sequential_loop(prog: &Program, n: &KNode) -> bool {
    let mut found = false;
    n.walk(&mut |m| {
        if let KNode::For {
            body,
            kind: LoopKind::Seq,
            ..
        } = m
        {
            found |=
                loop_depth(body) >= 1 && all_loops_peeled(body) && reads_own_output(prog, body);
        }
    });
    found
}

/// Whether a statement in `n` reads, at another index, the tensor it writes (see
/// [`reads_own_output_elsewhere`]). A register tile's reduction loop holds only
/// accumulations into the element each writes, which gcc vectorises right.
fn reads_own_output(prog: &Program, n: &KNode) -> bool {
    let mut found = false;
    n.walk(&mut |m| {
        if let KNode::Stmt { stmt, .. } = m {
            found |= self_read_elsewhere(&prog.stmts[*stmt]);
        }
    });
    found
}

/// Whether every loop in `n` is one gcc unrolls completely: a constant trip count of at
/// most [`GCC_PEELED_TRIP`], or polyc's unroll pragma.
fn all_loops_peeled(n: &KNode) -> bool {
    let mut all = true;
    n.walk(&mut |m| {
        if let KNode::For {
            iter,
            init,
            cond,
            step,
            kind,
            ..
        } = m
        {
            let short = const_trip(iter, init, cond, *step).is_some_and(|t| t <= GCC_PEELED_TRIP);
            all &= short || *kind == LoopKind::Unrolled;
        }
    });
    all
}

fn prelude(prog: &Program, dialect: &dyn Dialect) -> String {
    let mut s = String::new();
    s.push_str(
        "#include <stdint.h>\n#include <stdlib.h>\n#include <string.h>\n#include <math.h>\n\n",
    );
    // Helpers a kernel does not call are normal here; clang warns of them under -Wall.
    s.push_str("#if defined(__clang__)\n#pragma clang diagnostic ignored \"-Wunused-function\"\n#endif\n\n");
    if let Some((open, _)) = dialect.vector_width_pragmas() {
        s.push_str(&open);
    }
    s.push_str(GCC_NO_LOOP_DISTRIBUTION);
    s.push_str(&helpers(prog, dialect));
    if let (true, Some(exp)) = (uses_exp(prog), dialect.exp_f32_helper()) {
        s.push_str(&exp.replace("static inline", dialect.fn_prefix()));
    }
    if let (true, Some(fma)) = (uses_fma(prog), dialect.fma_helper()) {
        s.push_str(&fma.replace("static inline", dialect.fn_prefix()));
    }
    s.push_str(
        "\n/* 0: success; -1: a temporary could not be allocated. */\nstatic _Thread_local int polyc_status;\n",
    );
    s
}

/// The parameters of the function a `def` becomes, as C declarations: every symbolic
/// size (`int64_t`), the inputs in order (tensors as pointers, `const` when no statement
/// writes them; scalars by value), then the outputs. `restrict` is the qualifier written
/// before each pointer's name (`"restrict "`, or `""`). The CPU's kernel and the CUDA
/// host launcher share it.
pub(crate) fn function_params(prog: &Program, bound: &[bool], restrict: &str) -> Vec<String> {
    let written: HashSet<TensorId> = prog.stmts.iter().map(|s| s.lhs).collect();
    let mut params: Vec<String> = Vec::new();
    for (p, param) in prog.params.iter().enumerate() {
        if !bound[p] {
            params.push(format!("int64_t {}", c_ident(&param.name)));
        }
    }
    for input in &prog.inputs {
        match *input {
            InputRef::Tensor(t) => {
                let ten = &prog.tensors[t];
                let konst = if written.contains(&t) { "" } else { "const " };
                params.push(format!(
                    "{konst}{} *{restrict}{}",
                    ten.dtype.c_type(),
                    c_ident(&ten.name)
                ));
            }
            InputRef::Scalar(s) => {
                let sc = &prog.scalars[s];
                params.push(format!("{} {}", sc.dtype.c_type(), c_ident(&sc.name)));
            }
        }
    }
    for &t in &prog.outputs {
        let ten = &prog.tensors[t];
        params.push(format!(
            "{} *{restrict}{}",
            ten.dtype.c_type(),
            c_ident(&ten.name)
        ));
    }
    params
}

/// What the C-family printer writes differently for each target's language. The printer
/// keeps expressions, accesses, statements and loops once; each target folder implements
/// this trait for the languages it emits (the CPU's C in `cpu/`, CUDA and OpenCL in
/// `gpu/`, Gemmini's C in `gemmini/`). The defaults describe plain single-threaded host
/// C; a dialect overrides what it writes otherwise.
pub trait Dialect {
    /// How helper functions are declared (`static inline`).
    fn fn_prefix(&self) -> &'static str {
        "static inline"
    }
    /// The restrict qualifier of pointer parameters.
    fn restrict(&self) -> &'static str {
        "restrict"
    }
    /// The single-precision exponential the code calls (by default polyc's own,
    /// [`EXP_F32`]).
    fn exp_f32(&self) -> &'static str {
        "polyc_exp_f32"
    }
    /// The definition of that exponential, when the dialect defines its own
    /// ([`EXP_F32`]); `None` where the language has a fast one.
    fn exp_f32_helper(&self) -> Option<&'static str> {
        Some(EXP_F32)
    }
    /// The text that asks the C compiler for the dialect's vector width, before the file's
    /// first function, and the text that ends that request after its last; `None` (the
    /// default): the compiler's own choice.
    fn vector_width_pragmas(&self) -> Option<(String, &'static str)> {
        None
    }
    /// The functions a multiply-accumulate `lhs += a * b` calls in f32 and f64, with one
    /// rounding (by default the C library's `fmaf` and `fma`).
    fn fma_names(&self) -> [&'static str; 2] {
        ["fmaf", "fma"]
    }
    /// The functions an f32 and an f64 product calls where the compiler would otherwise be
    /// free to fuse it with an addition into one multiply-add (`None`, the default: the
    /// source's `*`, for compilers run with contraction off, as `-ffp-contract=off` and
    /// OpenCL's `FP_CONTRACT OFF` are). nvcc fuses by default whatever flags a user
    /// builds with, so CUDA names the round-to-nearest intrinsics, which it never fuses:
    /// every product is then rounded as the reference interpreter rounds it.
    fn unfused_mul_names(&self) -> Option<[&'static str; 2]> {
        None
    }
    /// The definitions of those functions, when the dialect defines its own
    /// ([`FMA_HELPERS`]); `None`, the default, where they are the library's.
    fn fma_helper(&self) -> Option<&'static str> {
        None
    }
    /// The pragma that asks for a fully unrolled loop of `trip` iterations (by default
    /// gcc's).
    fn unroll_pragma(&self, trip: i64) -> String {
        format!("#pragma GCC unroll {trip}")
    }
    /// The pragma before a parallel loop in canonical form (`None`, the default: parallel
    /// loops are mapped another way, or run sequentially).
    fn parallel_pragma(&self) -> Option<&'static str> {
        None
    }
    /// Whether sums, maxima and minima over a sequential loop are emitted as vector
    /// reductions ([`Emitter::reduction_loop`]: partial results in lanes), with OpenMP's
    /// `#pragma omp simd reduction(…)` where the loop's bound does not allow blocks of
    /// lanes; `false`, the default: no such reductions.
    fn omp_simd_reductions(&self) -> bool {
        false
    }
    /// The statement that makes the threads of a block wait for each other (by default a
    /// comment: host code runs one thread per tile).
    fn block_sync(&self) -> &'static str {
        "/* barrier */"
    }
    /// `cond` (a C condition) marked as almost always true, for a branch to a full tile's
    /// code (`None`, the default: printed as it is). gcc's guessed branch probabilities
    /// can otherwise take that code for cold and leave its register tiles scalar.
    fn likely(&self, _cond: &str) -> Option<String> {
        None
    }
    /// A statement that starts an asynchronous copy of one `bytes`-byte element from
    /// global `src` into shared `dst` (software pipelining, [`crate::codegen::pipeline`]),
    /// or `None` (the default) to copy with a plain store.
    fn async_copy(&self, _dst: &str, _src: &str, _bytes: usize) -> Option<String> {
        None
    }
    /// A statement that copies 16 bytes from `src` to `dst` (C lvalues, both 16-byte
    /// aligned) as one vector access, or `None` (the default) where the dialect has none
    /// (then copies stay element by element, see [`Emitter::vector_copy_width`]).
    fn vector_copy(&self, _dst: &str, _src: &str) -> Option<String> {
        None
    }
    /// Closes the group of asynchronous copies issued since the last one (`None`: nothing
    /// to print).
    fn async_commit(&self) -> Option<&'static str> {
        None
    }
    /// Waits until every group of asynchronous copies but the `pending` most recent has
    /// landed (this thread's copies; a barrier then makes all threads' copies visible).
    fn async_wait_prior(&self, _pending: i64) -> Option<String> {
        None
    }
    /// For a dialect whose copies into the stages are plain stores (OpenCL), the
    /// emulation of asynchronous copies that land only at their wait: when the source is
    /// built with [`ASYNC_AT_WAIT`] defined, the copies write shadow stages (the
    /// [`ASYNC_SHADOW`] macro is then 1), and at step `stage`'s wait these statements move
    /// that stage of each tile (`(name, elements of one stage)`) from its shadow into place.
    /// A missing wait then leaves a stage unfilled, which `run --check` sees. `None` (the
    /// default): the copies are asynchronous for real (CUDA) or there is no such mode.
    fn async_land(&self, _tiles: &[(String, i64)], _stage: &str, _stages: i64) -> Option<String> {
        None
    }
    /// How the integer-division helpers record the first statement that divided by zero
    /// (by default in a static the entry returns, [`HOST_DIVISION_FAULT`]).
    fn division_fault(&self) -> DivisionFault {
        HOST_DIVISION_FAULT
    }
    /// Whether the code runs as a GPU thread: local tiles are private arrays the compiler
    /// keeps in registers (not aligned stack or heap arrays), unrolling has no budget, local
    /// tiles are not poisoned, and division helpers take the kernel's fault pointer
    /// ([`FAULT_PARAM`]). False by default.
    fn device_code(&self) -> bool {
        false
    }
    /// Whether each parallel loop's body becomes a `static` function with `restrict`
    /// pointer parameters (see `outline_print`). False by default.
    fn outline_parallel_bodies(&self) -> bool {
        false
    }
}

/// Host C's record of a division by zero: the first statement that divided by zero, plus
/// 1, in a static that the entry function returns as `-1000 - k`.
pub const HOST_DIVISION_FAULT: DivisionFault = DivisionFault {
    preamble: "/* The first statement that divided by zero, plus 1 (0: none); the entry returns -1000 - k for S_k. */\nstatic int polyc_fault;\n",
    prefix: "static inline",
    param: "",
    record: "int none = 0; __atomic_compare_exchange_n(&polyc_fault, &none, s + 1, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED); ",
};

/// How a dialect's integer-division helpers record a fault (see [`Dialect::division_fault`]).
#[derive(Clone, Copy, Debug)]
pub struct DivisionFault {
    /// Declarations and comments before the helpers.
    pub preamble: &'static str,
    /// How the helpers are declared.
    pub prefix: &'static str,
    /// The fault pointer parameter, with its leading comma (empty: none).
    pub param: &'static str,
    /// The statement that records statement `s` as the first that divided by zero.
    pub record: &'static str,
}

/// A single-precision exponential in portable C: a branch-free polynomial that compilers
/// vectorise (libm's `expf` is a scalar call). `exp(x) = 2^n · exp(r)` with `n` the
/// nearest integer to `x / ln 2` (the 1.5 · 2²³ rounding trick), `r = x − n · ln 2` in two
/// parts (Cody–Waite), and `exp(r)`, `|r| ≤ ln 2 / 2`, by its Taylor polynomial of degree
/// 7 (truncation below 2⁻²⁵ relative). `2^n` is built in the exponent bits. Below
/// `−87.34` (where `expf` becomes subnormal) the result is 0, above `88.72` it is +∞,
/// and NaN stays NaN. Against glibc's `expf`, its relative error is at most 1.2e-7
/// (2 ulp) for `|x| ≤ 80`, and at most 1.8e-6 near the ends of the range, where results
/// are within 2⁷ of the smallest or largest float (test `exp_f32_matches_libm`).
///
/// The range and NaN tests are integer masks on the bits, with no comparison of floats
/// and no `?:` on them: gcc 12 without AVX-512 does not if-convert a float comparison
/// under `-ftrapping-math` (the default; "tree could trap"), nor the float arithmetic it
/// duplicates into the branches of a `?:`, and then leaves every loop around an
/// exponential scalar (softmax with the exponential inside its sum: 60 ms at 2048², one
/// thread, on an AVX2 machine).
pub const EXP_F32: &str = "\
/* exp for float: a branch-free polynomial the compiler vectorises (see polyc's c.rs);
   its range and NaN tests are integer masks on the bits. Its multiply-adds are fused
   where the machine has FMA, whatever -ffp-contract says. */
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
#define POLYC_EXP_MA(a, b, c) __builtin_fmaf((a), (b), (c))
#else
#define POLYC_EXP_MA(a, b, c) ((a) * (b) + (c))
#endif
static inline float polyc_exp_f32(float x) {
  union { float f; uint32_t u; } in = { x }, xc, y;
  uint32_t ax = in.u & 0x7fffffffu;
  uint32_t neg = in.u >> 31;
  uint32_t nan = -(uint32_t)(ax > 0x7f800000u);
  uint32_t over = -(uint32_t)(ax > 0x42b17218u) & (neg - 1u) & ~nan;
  uint32_t under = -(uint32_t)(ax > 0x42aeac50u) & -neg & ~nan;
  xc.u = in.u & ~(nan | over | under);
  float t = POLYC_EXP_MA(xc.f, 1.44269504f, 12582912.0f);
  float n = t - 12582912.0f;
  int32_t ni = (int32_t)n;
  ni = ni < -125 ? -125 : ni;
  float nf = (float)ni;
  float r = POLYC_EXP_MA(-nf, 1.42860677e-6f, POLYC_EXP_MA(-nf, 0.693145752f, xc.f));
  float p = POLYC_EXP_MA(r, 0.000198412701f, 0.00138888892f);
  p = POLYC_EXP_MA(r, p, 0.00833333377f);
  p = POLYC_EXP_MA(r, p, 0.0416666679f);
  p = POLYC_EXP_MA(r, p, 0.166666672f);
  p = POLYC_EXP_MA(r, p, 0.5f);
  p = POLYC_EXP_MA(r, p, 1.0f);
  p = POLYC_EXP_MA(r, p, 1.0f);
  union { uint32_t u; float f; } b;
  b.u = (uint32_t)(ni + 126) << 23;
  y.f = p * b.f * 2.0f;
  y.u = (y.u & ~(nan | over | under)) | (in.u & nan) | (0x7f800000u & over);
  return y.f;
}
";

/// The statements of a loop body made of blocks and statements only: (statement, its
/// iterator values, its local buffers). `None` when the body holds anything else.
fn flat_stmts<'n>(n: &'n KNode, out: &mut Vec<(usize, &'n [KExpr], &'n [LocalRef])>) -> Option<()> {
    match n {
        KNode::Block(v) => {
            for c in v {
                flat_stmts(c, out)?;
            }
            Some(())
        }
        KNode::Stmt { stmt, args, locals } => {
            out.push((*stmt, args.as_slice(), locals.as_slice()));
            Some(())
        }
        _ => None,
    }
}

/// Whether every read of tensor `t` in `e` is at exactly `index` (as written).
fn reads_only_at(e: &Expr, t: TensorId, index: &[Aff]) -> bool {
    match e {
        Expr::Read {
            tensor, index: ix, ..
        } => *tensor != t || ix.as_slice() == index,
        Expr::Call(_, args) => args.iter().all(|a| reads_only_at(a, t, index)),
        Expr::Cast(_, a) | Expr::Neg(a) => reads_only_at(a, t, index),
        Expr::Bin(_, a, b) | Expr::Cmp(_, a, b) => {
            reads_only_at(a, t, index) && reads_only_at(b, t, index)
        }
        Expr::Select(c, a, b) => {
            reads_only_at(c, t, index) && reads_only_at(a, t, index) && reads_only_at(b, t, index)
        }
        Expr::Lit(_) | Expr::Scalar(_) | Expr::IterValue(_) | Expr::SizeValue(_) => true,
    }
}

/// Whether `ok` holds for the index of every read in `e`.
fn all_reads(e: &Expr, ok: &impl Fn(&[Aff]) -> bool) -> bool {
    match e {
        Expr::Read { index, .. } => ok(index),
        Expr::Call(_, args) => args.iter().all(|a| all_reads(a, ok)),
        Expr::Cast(_, a) | Expr::Neg(a) => all_reads(a, ok),
        Expr::Bin(_, a, b) | Expr::Cmp(_, a, b) => all_reads(a, ok) && all_reads(b, ok),
        Expr::Select(c, a, b) => all_reads(c, ok) && all_reads(a, ok) && all_reads(b, ok),
        Expr::Lit(_) | Expr::Scalar(_) | Expr::IterValue(_) | Expr::SizeValue(_) => true,
    }
}

/// Whether `e` reads tensor `t`.
fn reads_tensor(e: &Expr, t: TensorId) -> bool {
    match e {
        Expr::Read { tensor, .. } => *tensor == t,
        Expr::Call(_, args) => args.iter().any(|a| reads_tensor(a, t)),
        Expr::Cast(_, a) | Expr::Neg(a) => reads_tensor(a, t),
        Expr::Bin(_, a, b) | Expr::Cmp(_, a, b) => reads_tensor(a, t) || reads_tensor(b, t),
        Expr::Select(c, a, b) => reads_tensor(c, t) || reads_tensor(a, t) || reads_tensor(b, t),
        Expr::Lit(_) | Expr::Scalar(_) | Expr::IterValue(_) | Expr::SizeValue(_) => false,
    }
}

/// Whether a statement of `prog` calls `exp` or `sigmoid` (the C prelude then defines
/// [`EXP_F32`]).
fn uses_exp(prog: &Program) -> bool {
    calls(prog, &|f| matches!(f, Func::Exp | Func::Sigmoid))
}

/// True when some statement is a float multiply-accumulate `lhs += a * b`, which the
/// emitter prints as a call of [`Dialect::fma_names`].
fn uses_fma(prog: &Program) -> bool {
    prog.stmts.iter().any(|st| {
        matches!(
            st.body,
            StmtBody::Update(AssignOp::Add, Expr::Bin(BinOp::Mul, _, _))
        ) && matches!(st.dtype, DType::F32 | DType::F64)
    })
}

/// The multiply-accumulate of host C that is fast under any compiler's flags (issue 25):
/// clang 14 vectorises a register tile of `fmaf` calls (LLVM's `fma` intrinsic) into
/// spills and register shuffles (GEMM 1024³ at `-O3 -march=native`: 24 GFLOP/s), while
/// `a * b + c` under `#pragma clang fp contract(fast)`, scoped to the helper's body,
/// becomes the same one-rounding FMA instruction and keeps the tile in registers (71
/// GFLOP/s, the same results bit for bit). Contraction is allowed, not forced: where
/// clang's SLP vectoriser shares one product between two sums it rounds the product
/// (2mm, the conv chain: within the check's tolerance, 1.4e-6 at most in the tests).
/// Contraction is only asked for where the target has an FMA unit (`__FMA__`); elsewhere,
/// and under gcc (bit for bit the interpreter's), the helpers are `fmaf` and `fma`.
pub(crate) const FMA_HELPERS: &str = r#"
/* Multiply-accumulate with one rounding (the interpreter's): the C library's fmaf and
   fma, except under clang with an FMA unit: a * b + c contracted in the helper's body only
   (clang keeps a register tile of these in registers, not of fmaf calls; where it shares
   a product between two sums, that product is rounded). */
#if defined(__clang__) && defined(__FMA__)
static inline float polyc_fma_f32(float a, float b, float c) {
#pragma clang fp contract(fast)
  return a * b + c;
}
static inline double polyc_fma_f64(double a, double b, double c) {
#pragma clang fp contract(fast)
  return a * b + c;
}
#else
static inline float polyc_fma_f32(float a, float b, float c) { return fmaf(a, b, c); }
static inline double polyc_fma_f64(double a, double b, double c) { return fma(a, b, c); }
#endif
"#;

/// `requant_i8(x, s)` ([`Func::RequantI8`]): `(float)x * s`, rounded half to even,
/// saturated to int8, NaN → 0 (Gemmini's `ACC_SCALE`), without the C library: past the
/// saturation bounds the value is clamped, inside them the truncation is exact.
const REQUANT_I8: &str = "\n/* Requantisation (sat_i8(x * scale)): x * scale in float, rounded half to even, saturated to int8. */
static inline int32_t polyc_requant_i8(int32_t x, float s) {
  float y = (float)x * s;
  if (y != y) return 0;
  if (y >= 127.0f) return 127;
  if (y <= -128.0f) return -128;
  int32_t i = (int32_t)y;
  float r = y - (float)i;
  if (r > 0.5f || (r == 0.5f && (i & 1))) i += 1;
  else if (r < -0.5f || (r == -0.5f && (i & 1))) i -= 1;
  return i;
}
";

/// Whether a statement of `prog` calls a function `wanted` accepts.
fn calls(prog: &Program, wanted: &dyn Fn(Func) -> bool) -> bool {
    fn any(e: &Expr, wanted: &dyn Fn(Func) -> bool) -> bool {
        match e {
            Expr::Call(g, args) => wanted(*g) || args.iter().any(|a| any(a, wanted)),
            Expr::Cast(_, a) | Expr::Neg(a) => any(a, wanted),
            Expr::Bin(_, a, b) | Expr::Cmp(_, a, b) => any(a, wanted) || any(b, wanted),
            Expr::Select(c, a, b) => any(c, wanted) || any(a, wanted) || any(b, wanted),
            Expr::Lit(_)
            | Expr::Scalar(_)
            | Expr::IterValue(_)
            | Expr::SizeValue(_)
            | Expr::Read { .. } => false,
        }
    }
    prog.stmts.iter().any(|s| match &s.body {
        StmtBody::Update(_, e) => any(e, wanted),
        StmtBody::Init(_) => false,
    })
}

/// Whether a `select(c, a, b)` in compute type `ct` is emitted as a call of
/// `polyc_select_<type>(c, a, b)`, whose arguments C evaluates before the call, rather
/// than as `c ? a : b`: where a branch reads a tensor, and evaluating both branches
/// can neither fault nor report a fault (no integer division, which the division helpers
/// check). Every read of a statement is in bounds at every instance of its domain (the
/// model refuses any other program, and the domain is inferred from the accesses), so
/// reading both branches' elements is safe.
///
/// The reason is a gcc 12.2 (Debian 12's) wrong-code bug: in a loop inside an OpenMP
/// parallel region, with `-O3 -march=native -fopenmp`, gcc if-converts and vectorises
/// `c ? X[2k + s] : 1.0f` with a masked load of the strided elements whose mask it
/// permutes wrongly, so a lane takes its neighbour's element (differential fuzzer, seed
/// 241405529, case 740: `T2(j, k) max=! select(X12(i, s, j, k) < X13(j, k, i, s),
/// X14(j, k, i, s), 1.0)`; `-fno-tree-loop-if-convert`, or no `-fopenmp`, computes it
/// right). Loads before the selection leave nothing to if-convert.
fn loads_unconditionally(ct: DType, a: &Expr, b: &Expr) -> bool {
    let reads = |e: &Expr| expr_reads_tensor(e);
    (reads(a) || reads(b)) && (ct.is_float() || !(guarded_division(a) || guarded_division(b)))
}

/// Whether `e` reads a tensor element.
fn expr_reads_tensor(e: &Expr) -> bool {
    match e {
        Expr::Read { .. } => true,
        Expr::Bin(_, a, b) | Expr::Cmp(_, a, b) => expr_reads_tensor(a) || expr_reads_tensor(b),
        Expr::Neg(a) | Expr::Cast(_, a) => expr_reads_tensor(a),
        Expr::Call(_, args) => args.iter().any(expr_reads_tensor),
        Expr::Select(c, a, b) => {
            expr_reads_tensor(c) || expr_reads_tensor(a) || expr_reads_tensor(b)
        }
        _ => false,
    }
}

/// True when `e` divides (or takes a remainder) by something other than a literal that
/// is neither 0 nor −1: such a division needs [`int_division_helpers`].
fn guarded_division(e: &Expr) -> bool {
    match e {
        Expr::Bin(BinOp::Div | BinOp::Rem, a, b) => {
            !matches!(**b, Expr::Lit(v) if v != 0.0 && v != -1.0)
                || guarded_division(a)
                || guarded_division(b)
        }
        Expr::Bin(_, a, b) | Expr::Cmp(_, a, b) => guarded_division(a) || guarded_division(b),
        Expr::Neg(a) | Expr::Cast(_, a) => guarded_division(a),
        Expr::Call(_, args) => args.iter().any(guarded_division),
        Expr::Select(c, a, b) => guarded_division(c) || guarded_division(a) || guarded_division(b),
        _ => false,
    }
}

/// Whether statement `s` divides integers by a value that may be 0 (or −1): its kernel
/// calls the division helpers, which record a division by zero (in C the `polyc_fault`
/// variable, on a GPU the kernel's [`FAULT_PARAM`] argument).
pub(crate) fn stmt_may_fault(prog: &Program, s: usize) -> bool {
    let st = &prog.stmts[s];
    !compute_type(st.dtype).is_float()
        && matches!(&st.body, StmtBody::Update(_, e) if guarded_division(e))
}

/// The name of a GPU kernel's fault argument (`int *`: 0, or 1 + the first statement
/// that divided by zero), and of the CUDA host function's device copy of it.
pub(crate) const FAULT_PARAM: &str = "polyc_fault";

/// The integer compute types (`i32`, `i64`) in which some statement divides by a value
/// that may be 0 or −1.
fn guarded_division_types(prog: &Program) -> Vec<DType> {
    let mut v: Vec<DType> = Vec::new();
    for (i, st) in prog.stmts.iter().enumerate() {
        let t = compute_type(st.dtype);
        if stmt_may_fault(prog, i) && !v.contains(&t) {
            v.push(t);
        }
    }
    v.sort_by_key(|t| DType::ALL.iter().position(|u| u == t));
    v
}

/// Integer `/` and `%` with polyc's rule: `x / 0` and `x % 0` give 0 (the kernel also
/// records the first statement that did so: in C in `polyc_fault`, which the entry
/// reports; on a GPU through the kernel's [`FAULT_PARAM`] pointer, which the host reads
/// back), `MIN / -1` wraps to `MIN` and `MIN % -1` is 0. C's own operators trap on both
/// (SIGFPE).
fn int_division_helpers(prog: &Program, dialect: &dyn Dialect) -> String {
    let types = guarded_division_types(prog);
    if types.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "\n/* Integer division: x / 0 and x % 0 are 0, MIN / -1 wraps (C would trap). */\n",
    );
    let DivisionFault {
        preamble,
        prefix,
        param,
        record: fault,
    } = dialect.division_fault();
    s.push_str(preamble);
    for t in types {
        let c = t.c_type();
        let x = suffix(t);
        let min = if t == DType::I64 {
            "(-9223372036854775807L - 1)"
        } else {
            "(-2147483647 - 1)"
        };
        let _ = writeln!(
            s,
            "{prefix} {c} polyc_div_{x}({c} a, {c} b, int s{param}) {{\n  if (b == 0) {{ {fault}return 0; }}\n  return b == -1 ? (a == ({c}){min} ? a : -a) : a / b;\n}}"
        );
        let _ = writeln!(
            s,
            "{prefix} {c} polyc_rem_{x}({c} a, {c} b, int s{param}) {{\n  if (b == 0) {{ {fault}return 0; }}\n  return b == -1 ? 0 : a % b;\n}}"
        );
    }
    s
}

/// The index and value helpers every dialect's prelude has, declared for `dialect`.
pub(crate) fn helpers(prog: &Program, dialect: &dyn Dialect) -> String {
    let mut s = String::new();
    s.push_str(INDEX_HELPERS);
    if dialect.device_code() {
        s.push_str(INDEX32_HELPERS);
    }
    let mut types: Vec<DType> = Vec::new();
    for st in &prog.stmts {
        let t = compute_type(st.dtype);
        if !types.contains(&t) {
            types.push(t);
        }
    }
    let f16 = uses_f16(prog);
    if f16 && !types.contains(&DType::F16) {
        types.push(DType::F16);
    }
    types.sort_by_key(|t| DType::ALL.iter().position(|u| u == t));
    if !types.is_empty() {
        s.push_str("\n/* Value helpers, one set per arithmetic type. */\n");
    }
    for t in types {
        let c = t.c_type();
        let x = suffix(t);
        if t == DType::F16 {
            s.push_str("/* f16: compute in float, round to half after every operation. */\n");
            for (name, op) in [("add", "+"), ("sub", "-"), ("mul", "*"), ("div", "/")] {
                let _ = writeln!(
                    s,
                    "static inline _Float16 polyc_{name}_f16(_Float16 a, _Float16 b) {{ return (_Float16)((float)a {op} (float)b); }}"
                );
            }
            s.push_str(
                "static inline _Float16 polyc_rem_f16(_Float16 a, _Float16 b) { return (_Float16)fmodf((float)a, (float)b); }\n",
            );
        }
        let _ = writeln!(
            s,
            "static inline {c} polyc_max_{x}({c} a, {c} b) {{ return a > b ? a : b; }}"
        );
        let _ = writeln!(
            s,
            "static inline {c} polyc_min_{x}({c} a, {c} b) {{ return a < b ? a : b; }}"
        );
        let _ = writeln!(
            s,
            "static inline {c} polyc_relu_{x}({c} x) {{ return x > ({c})0 ? x : ({c})0; }}"
        );
        let _ = writeln!(
            s,
            "static inline {c} polyc_select_{x}(int c, {c} a, {c} b) {{ return c ? a : b; }}"
        );
        let abs = match t {
            DType::F16 => "(_Float16)fabsf((float)x)",
            DType::F32 => "fabsf(x)",
            DType::F64 => "fabs(x)",
            _ => "x < 0 ? -x : x",
        };
        let _ = writeln!(
            s,
            "static inline {c} polyc_abs_{x}({c} x) {{ return {abs}; }}"
        );
    }
    if calls(prog, &|f| f == Func::RequantI8) {
        s.push_str(REQUANT_I8);
    }
    let mut s = s.replace("static inline", dialect.fn_prefix());
    // (with their own prefix: on CUDA they are device functions, for `atomicCAS`)
    s.push_str(&int_division_helpers(prog, dialect));
    s
}

/// Emits the complete C translation unit for `kernel` (see the module documentation for
/// the contract). `param_texts[p]` is the value (`"64"`) of a bound size or the name
/// (`"H"`) of a symbolic one, one per `Program::params` entry.
pub fn emit_translation_unit(
    prog: &Program,
    param_texts: &[String],
    kernel: &Kernel,
    opts: &EmitOptions,
    dialect: &dyn Dialect,
) -> String {
    let mut e = Emitter::new(prog, param_texts, dialect);
    e.poison = opts.poison_temps;
    e.folds = kernel
        .folds
        .iter()
        .map(|f| (f.tensor, (f.dim, f.modulus)))
        .collect();
    e.register_tiles(&kernel.body);
    e.full_tile_conds = kernel.full_tile_conds.clone();
    let mut out = String::new();
    let _ = writeln!(out, "/* Generated by polyc from `def {}`. */", prog.name);
    out.push_str(&prelude(prog, dialect));
    if reads_own_output_elsewhere(prog) && unrolls_into_a_sequential_loop(prog, &kernel.body) {
        out.push_str(GCC_NO_LOOP_VECTORIZE);
    }
    out.push('\n');

    // The kernel function.
    let written: HashSet<TensorId> = prog.stmts.iter().map(|s| s.lhs).collect();
    let params = function_params(prog, &e.bound, "restrict ");
    let fname = c_ident(&prog.name);
    let params_text = if params.is_empty() {
        "void".to_string()
    } else {
        params.join(", ")
    };
    let kernel_at = out.len();
    let _ = writeln!(out, "void {fname}({params_text}) {{");
    for d in &opts.dynamic {
        if let Some(p) = prog.params.iter().position(|p| p.name == d.name) {
            let var = c_ident(&d.name);
            let _ = writeln!(
                out,
                "  if (!({})) {{ /* {} = {}: the sizes this kernel was compiled for */\n    polyc_status = {};\n    return;\n  }}",
                d.c_condition(&var),
                d.name,
                d.values_text(),
                -2 - p as i64
            );
        }
    }

    // Temporaries the code touches in their global arrays (a tile-local temporary lives
    // only in its tiles' local buffers and is not allocated).
    let global = kernel.body.global_tensors(prog);
    let temps: Vec<TensorId> = prog.temps().filter(|t| global.contains(t)).collect();
    for &t in &temps {
        let ten = &prog.tensors[t];
        let c = ten.dtype.c_type();
        let name = c_ident(&ten.name);
        let n = e.numel(t);
        let _ = writeln!(
            out,
            "  {c} *restrict {name} = ({c} *)malloc(sizeof({c}) * (size_t)polyc_max(1, {n}));"
        );
    }
    if !temps.is_empty() {
        let cond = temps
            .iter()
            .map(|&t| format!("!{}", c_ident(&prog.tensors[t].name)))
            .collect::<Vec<_>>()
            .join(" || ");
        let _ = writeln!(out, "  if ({cond}) {{");
        for &t in &temps {
            let _ = writeln!(out, "    free({});", c_ident(&prog.tensors[t].name));
        }
        out.push_str("    polyc_status = -1;\n    return;\n  }\n");
        if opts.poison_temps {
            out.push_str("#ifdef POLYC_POISON\n");
            for &t in &temps {
                let ten = &prog.tensors[t];
                let _ = writeln!(
                    out,
                    "  memset({}, 0xFF, sizeof({}) * (size_t)polyc_max(1, {}));",
                    c_ident(&ten.name),
                    ten.dtype.c_type(),
                    e.numel(t)
                );
            }
            out.push_str("#endif\n");
        }
    }
    let functions = e.body_outlined(&mut out, &kernel.body, (&fname, &params, &temps));
    for &t in &temps {
        let _ = writeln!(out, "  free({});", c_ident(&prog.tensors[t].name));
    }
    out.push_str("}\n\n");
    out.insert_str(kernel_at, &functions.concat());

    // The entry wrapper.
    let _ = writeln!(out, "int {}(void **args) {{", entry_symbol(prog));
    let mut call_args = Vec::new();
    let mut k = 0usize;
    for (p, param) in prog.params.iter().enumerate() {
        if e.bound[p] {
            let _ = writeln!(
                out,
                "  if (*(const int64_t *)args[{k}] != {}) return {}; /* size {} is compiled in */",
                e.texts[p],
                p + 1,
                param.name
            );
        } else {
            call_args.push(format!("*(const int64_t *)args[{k}]"));
        }
        k += 1;
    }
    for input in &prog.inputs {
        match *input {
            InputRef::Tensor(t) => {
                let ten = &prog.tensors[t];
                let konst = if written.contains(&t) { "" } else { "const " };
                call_args.push(format!("({konst}{} *)args[{k}]", ten.dtype.c_type()));
            }
            InputRef::Scalar(s) => {
                let c = prog.scalars[s].dtype.c_type();
                call_args.push(format!("*(const {c} *)args[{k}]"));
            }
        }
        k += 1;
    }
    for &t in &prog.outputs {
        call_args.push(format!("({} *)args[{k}]", prog.tensors[t].dtype.c_type()));
        k += 1;
    }
    out.push_str("  polyc_status = 0;\n");
    let faults = !guarded_division_types(prog).is_empty();
    if faults {
        out.push_str("  polyc_fault = 0;\n");
    }
    let _ = writeln!(out, "  {fname}({});", call_args.join(", "));
    if faults {
        out.push_str("  if (polyc_status == 0 && polyc_fault != 0) return -999 - polyc_fault;\n");
    }
    out.push_str("  return polyc_status;\n}\n");
    if let Some((_, close)) = dialect.vector_width_pragmas() {
        out.push_str(close);
    }
    out
}

pub(crate) struct Emitter<'a> {
    prog: &'a Program,
    /// The language written.
    pub(crate) dialect: &'a dyn Dialect,
    /// C text of each size: the number, or the (escaped) name.
    texts: Vec<String>,
    /// Whether each size is bound (compiled in) rather than a parameter.
    pub(crate) bound: Vec<bool>,
    /// Extents of each promoted tile's local buffer, by promotion number.
    tiles: HashMap<usize, Vec<i64>>,
    /// Block extents of the local buffers stored in blocks, by promotion number.
    blocks: HashMap<usize, Vec<i64>>,
    /// Elements from one block to the next of each buffer stored in blocks (see
    /// [`block_stride`]).
    block_strides: HashMap<usize, i64>,
    /// Elements of padding after each row of a shared buffer, by promotion number, where
    /// the target chose them (see [`Emitter::set_row_pad`]); else [`padded_shared_row`].
    row_pads: HashMap<usize, i64>,
    /// The order each local buffer's dimensions are stored in (within each block), by
    /// promotion number, when it is not the tensor's own.
    orders: HashMap<usize, Vec<usize>>,
    /// The promoted tiles in scope of the statement being emitted (outermost first).
    cur: RefCell<Vec<LocalRef>>,
    /// Fill local buffers with `0xFF` bytes too (see [`EmitOptions::poison_temps`]).
    poison: bool,
    /// How many local-buffer scopes (promoted tiles) enclose the node being emitted.
    in_tile: std::cell::Cell<usize>,
    /// The product of the trip counts of the `#pragma GCC unroll` loops around the node
    /// being printed (see [`UNROLL_BUDGET`]).
    unrolled: std::cell::Cell<i64>,
    /// Promotions whose buffers are in shared memory (rows padded against bank
    /// conflicts).
    shared: HashSet<usize>,
    /// Inside a sum-reduction loop ([`Emitter::reduction`]): the statement's target is
    /// this scalar instead of its access.
    red_lhs: RefCell<Vec<(*const Stmt, String)>>,
    /// Temporaries stored modulo a number along one index: tensor → (index, modulus)
    /// (see [`crate::codegen::contract`]).
    folds: HashMap<TensorId, (usize, i64)>,
    /// The block (threads per dimension x, y, z) of the GPU kernel being printed: a
    /// block-stride loop with at most that many iterations runs once per thread.
    block: Option<[i64; 3]>,
    /// The tensor of each registered local buffer, by promotion number.
    promo_tensor: HashMap<usize, TensorId>,
    /// Pipelined loops of the kernel being printed (by address, see
    /// [`crate::codegen::pipeline`]): the promotions each stages, and its stages.
    pipelined: HashMap<*const KNode, (Vec<usize>, i64)>,
    /// Staged promotions: the elements of one stage, and the number of stages.
    staged: HashMap<usize, (i64, i64)>,
    /// The stage the code being printed uses, per staged promotion (a C expression).
    stage_expr: RefCell<HashMap<usize, String>>,
    /// Copy-ins being printed start asynchronous copies (the dialect's `async_copy`).
    async_copies: std::cell::Cell<bool>,
    /// Integer indices are 32-bit `int` (see [`crate::codegen::ranges`]), not `int64_t`.
    index32: bool,
    /// Loop-invariant subexpressions computed before the loop being printed, by address
    /// in the program, with their locals' names (see `invariant_print`).
    hoisted: RefCell<Vec<(*const Expr, String)>>,
    /// Where parallel loops' bodies become functions of their own (see
    /// `outline_print`): the kernel's variables and the functions printed; `None`: not
    /// outlined.
    outline: RefCell<Option<Outline>>,
    /// The iterators of the loops around the node being printed, outermost first.
    loop_vars: RefCell<Vec<String>>,
    /// How many statements have had subexpressions hoisted (numbers the locals).
    hoist_count: std::cell::Cell<usize>,
    /// The kernel's full-tile conditions ([`Kernel::full_tile_conds`]): a branch on them
    /// alone is marked likely where the dialect can ([`Dialect::likely`]).
    full_tile_conds: Vec<KExpr>,
}

/// Loops with fewer iterations than this are never emitted as vectorised reductions: a
/// 5-tap window is better unrolled around the vector loop outside it.
const MIN_REDUCTION_TRIP: i64 = 64;

/// The most sums one reduction loop keeps in scalars and lanes ([`Emitter::reduction`]):
/// each takes [`REDUCTION_LANE_BYTES`] of lanes.
const MAX_LOOP_SUMS: usize = 4;

/// One sum of a reduction loop: the `+=` (or `max=`, `min=`) statement, its iterator
/// values and its tiles.
type LoopSum<'n> = (&'n Stmt, &'n [KExpr], &'n [LocalRef]);

/// The operator of a reduction loop's statement (`+`, `max` or `min`).
fn sum_op(st: &Stmt) -> AssignOp {
    match &st.body {
        StmtBody::Update(op, _) => *op,
        StmtBody::Init(op) => *op,
    }
}

/// `red = red op lane` in C for a reduction of type `t` (a lane joins its scalar).
fn join_lane(op: AssignOp, t: DType, red: &str, lane: &str) -> String {
    match op {
        AssignOp::Max => format!("{red} = polyc_max_{}({lane}, {red});", suffix(t)),
        AssignOp::Min => format!("{red} = polyc_min_{}({lane}, {red});", suffix(t)),
        _ => format!("{red} += {lane};"),
    }
}

/// OpenMP's `#pragma omp simd` with one `reduction` clause per operator over a loop's
/// scalars (`polyc_red`, `polyc_red1`, …; `ops[k]` is the operator of the `k`-th).
fn omp_simd_reduction(ops: &[AssignOp]) -> String {
    let mut text = String::from("#pragma omp simd");
    for (op, clause) in [
        (AssignOp::Add, "+"),
        (AssignOp::Max, "max"),
        (AssignOp::Min, "min"),
    ] {
        let names: Vec<String> = (0..ops.len())
            .filter(|&k| ops[k] == op)
            .map(|k| sum_name("polyc_red", k))
            .collect();
        if !names.is_empty() {
            let _ = write!(text, " reduction({clause}:{})", names.join(", "));
        }
    }
    text
}

/// The scalar (`polyc_red`) or lane array (`polyc_lane`) of the `k`-th sum of a reduction
/// loop: the first sum keeps the plain name.
fn sum_name(base: &str, k: usize) -> String {
    if k == 0 {
        base.to_string()
    } else {
        format!("{base}{k}")
    }
}

/// The bytes of partial sums a vector-lane reduction keeps (two 512-bit vectors: 32 f32
/// lanes, 16 f64), so that the adds of one block do not wait for each other.
const REDUCTION_LANE_BYTES: usize = 128;

/// True when `e` is `iter` plus terms free of `iter` (one step of `iter` moves `e` by
/// exactly one).
fn unit_in(e: &KExpr, iter: &str) -> bool {
    match e {
        KExpr::Var(v) => v == iter,
        KExpr::Add(a, b) => {
            (unit_in(a, iter) && !b.mentions(iter)) || (unit_in(b, iter) && !a.mentions(iter))
        }
        KExpr::Sub(a, b) => unit_in(a, iter) && !b.mentions(iter),
        _ => false,
    }
}

/// True when the loop bound `cond` holds for a prefix of the iterations of an ascending
/// loop over `iter`: upper bounds on `iter` alone (`iter <= e`, `iter < e`, `e >= iter`,
/// `e > iter`, with `e` free of `iter`) and conjunctions of them. Then the bound at a
/// block's last iteration holds for the whole block.
fn ascending_bound(iter: &str, cond: &KExpr) -> bool {
    let is_iter = |e: &KExpr| matches!(e, KExpr::Var(v) if v == iter);
    match cond {
        KExpr::And(a, b) => ascending_bound(iter, a) && ascending_bound(iter, b),
        KExpr::Cmp(KCmp::Le | KCmp::Lt, a, b) => is_iter(a) && !b.mentions(iter),
        KExpr::Cmp(KCmp::Ge | KCmp::Gt, a, b) => is_iter(b) && !a.mentions(iter),
        _ => false,
    }
}

/// Inside a promoted tile, loops with a constant trip count up to this that enclose
/// another loop, and no tile of their own, get `#pragma GCC unroll`: the register tile's reduction loops over a
/// small window (a 5 × 5 filter, around the tile's row and column loops) then leave the
/// tile in registers (measured on the conv chain with a 4 × 32 register tile: 1.5 → 1.75
/// × the best peer), and the row loop around a register tile's vector loop is unrolled
/// before gcc's loop interchange can move the reduction loop inside it (which keeps the
/// accumulators in memory: a GEMM with a blocked B fell from 84 to 22 GFLOP/s).
const UNROLL_TRIP: i64 = 8;

/// The most statement copies that nested `#pragma GCC unroll` loops may ask for: the
/// trip counts of the unrolled loops around a statement times [`unrolled_weight`] of
/// their body. The conv chain's 5 × 5 window around a 4-row register tile asks for 100;
/// group norm at size 7, whose nests are five loops of 7, asked for 2 401 copies of a
/// 7-iteration loop and gcc took minutes (now: seconds).
const UNROLL_BUDGET: i64 = 128;

/// Loops of at most this many iterations count as unrolled in [`unrolled_weight`]: gcc
/// peels such small constant loops completely on its own when their bodies are small.
const PEELED_TRIP: i64 = 8;

/// Innermost loops of fewer iterations than this (a 256-bit vector of floats) count as
/// unrolled in [`unrolled_weight`]; longer ones are vectorised.
const SHORT_INNER_TRIP: i64 = 8;

/// The statements of `n` once the small constant loops inside it are unrolled: a
/// statement is 1, a block the sum, a loop of at most [`PEELED_TRIP`] constant iterations
/// around another loop, or of fewer than [`SHORT_INNER_TRIP`] innermost, its trip count
/// times its body; any other loop (an innermost loop gcc vectorises, a loop of unknown
/// trip) its body once.
fn unrolled_weight(n: &KNode) -> i64 {
    match n {
        KNode::Block(v) => v.iter().map(unrolled_weight).sum(),
        KNode::For {
            iter,
            init,
            cond,
            step,
            body,
            ..
        } => {
            let w = unrolled_weight(body);
            match const_trip(iter, init, cond, *step) {
                Some(t) if t <= PEELED_TRIP && loop_depth(body) >= 1 => t.max(1) * w,
                // Shorter than a vector: gcc peels it rather than vectorise it.
                Some(t) if t < SHORT_INNER_TRIP => t.max(1) * w,
                _ => w,
            }
        }
        KNode::If { then, els, .. } => {
            unrolled_weight(then).max(els.as_deref().map_or(0, unrolled_weight))
        }
        KNode::Local { body, .. } | KNode::Let { body, .. } | KNode::Device { body, .. } => {
            unrolled_weight(body)
        }
        KNode::Stmt { .. } | KNode::Copy { .. } | KNode::Barrier | KNode::Intrinsic(_) => 1,
    }
    .min(1 << 20)
}

/// Local buffers up to this many bytes live on the stack; larger ones are `malloc`ed.
const STACK_TILE_BYTES: i64 = 64 * 1024;

/// The row length (elements) of a local buffer whose last extent is `last`: padded by one
/// 64-byte line when a row is a multiple of 1 KiB, so that the rows of a tile do not all
/// fall into the same cache sets (an L1 set repeats every 4 KiB on x86).
fn padded_row(last: i64, elem_bytes: i64) -> i64 {
    if last * elem_bytes >= 1024 && (last * elem_bytes) % 1024 == 0 {
        last + (64 / elem_bytes).max(1)
    } else {
        last
    }
}

/// The row length (elements) of a shared-memory buffer whose last extent is `last`: one
/// element more when a row is a multiple of the 32 four-byte banks, so that the threads
/// reading a column hit 32 different banks.
fn padded_shared_row(last: i64, elem_bytes: i64) -> i64 {
    if (last * elem_bytes) % 128 == 0 {
        last + (4 / elem_bytes).max(1)
    } else {
        last
    }
}

/// Elements from one block of a buffer stored in blocks to the next. In shared memory, a
/// block of a multiple of 128 bytes is followed by 16 bytes of padding: the threads of a
/// quarter warp that read one 128-bit vector each from consecutive blocks then hit
/// different banks (a 64-float block would put all eight in the same four banks), and
/// every block stays 16-byte aligned.
fn block_stride(block: &[i64], elem_bytes: i64, shared: bool) -> i64 {
    let per_block: i64 = block.iter().product();
    if shared && elem_bytes > 0 && (per_block * elem_bytes) % 128 == 0 {
        per_block + (16 / elem_bytes).max(1)
    } else {
        per_block
    }
}

#[path = "invariant_print.rs"]
mod invariant_print;
#[path = "outline_print.rs"]
mod outline_print;

/// What the kernel being printed offers an outlined body.
pub(crate) struct Outline {
    /// The kernel function's name (the outlined functions are named after it).
    pub(crate) kernel: String,
    /// The kernel's parameters and temporaries: (name, declaration as a parameter).
    pub(crate) vars: Vec<(String, String)>,
    /// The functions printed so far, in order (a nested one before its caller).
    pub(crate) functions: Vec<String>,
}

#[path = "pipeline_print.rs"]
mod pipeline_print;

/// The C name of promotion `k`'s local buffer.
pub(crate) fn tile_name(k: usize) -> String {
    format!("polyc_tile{k}")
}

fn indent(out: &mut String, level: usize) {
    for _ in 0..level {
        out.push_str("  ");
    }
}

impl<'a> Emitter<'a> {
    pub(crate) fn new(prog: &'a Program, param_texts: &[String], dialect: &'a dyn Dialect) -> Self {
        let mut texts = Vec::new();
        let mut bound = Vec::new();
        for (p, param) in prog.params.iter().enumerate() {
            let t = param_texts
                .get(p)
                .cloned()
                .unwrap_or_else(|| param.name.clone());
            if is_bound(&t) {
                let t = t.trim().to_string();
                texts.push(if t.starts_with('-') {
                    format!("({t})")
                } else {
                    t
                });
                bound.push(true);
            } else {
                texts.push(c_ident(&t));
                bound.push(false);
            }
        }
        Emitter {
            prog,
            dialect,
            texts,
            bound,
            tiles: HashMap::new(),
            blocks: HashMap::new(),
            block_strides: HashMap::new(),
            row_pads: HashMap::new(),
            orders: HashMap::new(),
            cur: RefCell::new(Vec::new()),
            poison: false,
            in_tile: std::cell::Cell::new(0),
            unrolled: std::cell::Cell::new(1),
            red_lhs: RefCell::new(Vec::new()),
            folds: HashMap::new(),
            block: None,
            promo_tensor: HashMap::new(),
            pipelined: HashMap::new(),
            staged: HashMap::new(),
            stage_expr: RefCell::new(HashMap::new()),
            async_copies: std::cell::Cell::new(false),
            index32: false,
            shared: HashSet::new(),
            hoisted: RefCell::new(Vec::new()),
            outline: RefCell::new(None),
            loop_vars: RefCell::new(Vec::new()),
            hoist_count: std::cell::Cell::new(0),
            full_tile_conds: Vec::new(),
        }
    }

    /// Whether every conjunct of `cond` is one of the kernel's full-tile conditions.
    fn full_tile_branch(&self, cond: &KExpr) -> bool {
        fn all_in(e: &KExpr, conds: &[KExpr]) -> bool {
            match e {
                KExpr::And(a, b) => all_in(a, conds) && all_in(b, conds),
                other => conds.contains(other),
            }
        }
        !self.full_tile_conds.is_empty() && all_in(cond, &self.full_tile_conds)
    }

    /// Records the extents of every local buffer declared in `body`.
    pub(crate) fn register_tiles(&mut self, body: &KNode) {
        let mut bufs = Vec::new();
        body.walk(&mut |n| {
            if let KNode::Local { bufs: b, .. } = n {
                bufs.extend(b.iter().cloned());
            }
        });
        for b in &bufs {
            self.register_buf(b);
        }
    }

    /// Records one local buffer's extents (and, for shared memory, its padding rule).
    pub(crate) fn register_buf(&mut self, b: &crate::codegen::kir::LocalBuf) {
        self.tiles.insert(b.promo, b.sizes.clone());
        self.promo_tensor.insert(b.promo, b.tensor);
        if let Some(blk) = &b.block {
            self.blocks.insert(b.promo, blk.clone());
            let elem = self
                .prog
                .tensors
                .get(b.tensor)
                .map_or(4, |t| t.dtype.size_bytes() as i64);
            self.block_strides.insert(
                b.promo,
                block_stride(blk, elem, b.space == MemSpace::Shared),
            );
        }
        if let Some(o) = &b.order {
            self.orders.insert(b.promo, o.clone());
        }
        if b.space == MemSpace::Shared {
            self.shared.insert(b.promo);
        }
    }

    /// Number of elements of tensor `t`, as a C `int64_t` expression.
    pub(crate) fn numel(&self, t: TensorId) -> String {
        let shape = &self.prog.tensors[t].shape;
        if shape.is_empty() {
            return "1".into();
        }
        (0..shape.len())
            .map(|d| self.stored_extent(t, d))
            .collect::<Vec<_>>()
            .join(" * ")
    }

    /// The extent tensor `t`'s global array has along index `d` (parenthesised C): its
    /// shape's, or the modulus it is folded by.
    fn stored_extent(&self, t: TensorId, d: usize) -> String {
        match self.folds.get(&t) {
            Some(&(fd, m)) if fd == d => m.to_string(),
            _ => paren(&self.prog.tensors[t].shape[d].to_c(&[], &self.texts)),
        }
    }

    /// `NAME[flat index]` for an access of tensor `t` with C index texts: into the
    /// innermost promoted tile of `t` in scope, if any, else into the tensor.
    fn access(&self, t: TensorId, index: &[String]) -> String {
        let local = self
            .cur
            .borrow()
            .iter()
            .rev()
            .find(|l| l.tensor == t)
            .cloned();
        match local {
            Some(l) => self.tile_access(&l, index),
            None => self.tensor_access(t, index),
        }
    }

    /// Pads each row of shared buffer `promo` with `pad` elements (instead of
    /// [`padded_shared_row`]'s rule); a buffer of one dimension or stored in blocks keeps
    /// its layout.
    pub(crate) fn set_row_pad(&mut self, promo: usize, pad: i64) {
        self.row_pads.insert(promo, pad);
    }

    /// Returns shared buffer `promo` to the default row padding.
    pub(crate) fn clear_row_pad(&mut self, promo: usize) {
        self.row_pads.remove(&promo);
    }

    /// The shared buffers whose rows can be padded: two dimensions or more, not stored
    /// in blocks.
    pub(crate) fn paddable_shared(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self
            .shared
            .iter()
            .copied()
            .filter(|p| !self.blocks.contains_key(p))
            .filter(|p| self.tiles.get(p).is_some_and(|t| t.len() >= 2))
            .collect();
        v.sort_unstable();
        v
    }

    /// Whether promotion `promo`'s buffer is in shared memory.
    pub(crate) fn is_shared(&self, promo: usize) -> bool {
        self.shared.contains(&promo)
    }

    /// The C text of the flat element index into tile `l`'s buffer (one stage of it) of
    /// the element at tensor coordinates `index` (C texts), as the kernel prints it.
    pub(crate) fn tile_index_text(&self, l: &LocalRef, index: &[String]) -> String {
        let text = self.tile_access(l, index);
        let open = text.find('[').map_or(0, |i| i + 1);
        let close = text.rfind(']').unwrap_or(text.len());
        text[open..close].to_string()
    }

    /// The C text of a size-and-iterator expression, with the statement iterators named
    /// `names`.
    pub(crate) fn aff_text(&self, a: &polyhedral::ir::Aff, names: &[String]) -> String {
        a.to_c(names, &self.texts)
    }

    /// `polyc_tileK[flat]` for the element at tensor coordinates `index` of tile `l`.
    fn tile_access(&self, l: &LocalRef, index: &[String]) -> String {
        if let Some(b) = self.blocks.get(&l.promo) {
            return match &l.block {
                Some(r) => self.block_access(l.promo, b, r, index),
                None => self.block_access_anywhere(l, b, index),
            };
        }
        let sizes = self.tile_dims(l.promo, l.tensor);
        let mut flat = String::new();
        for (k, d) in self
            .stored_order(l.promo, index.len())
            .into_iter()
            .enumerate()
        {
            let off = l
                .offset
                .get(d)
                .map(|o| self.kexpr(o, 7))
                .unwrap_or_else(|| "0".into());
            let ix = format!("({} - {off})", paren(&index[d]));
            if k == 0 {
                flat = ix;
            } else {
                let ext = sizes.get(k).copied().unwrap_or(1);
                flat = format!("({flat}) * {ext} + {ix}");
            }
        }
        if flat.is_empty() {
            flat = "0".into();
        }
        self.tile_index(l.promo, flat)
    }

    /// `polyc_tileK[flat]` in a buffer stored in blocks of extents `b`, read through the
    /// block `r` the reader runs in.
    fn block_access(&self, promo: usize, b: &[i64], r: &BlockRef, index: &[String]) -> String {
        let q: Vec<Option<String>> = (0..index.len())
            .map(|d| r.index.get(d).map(|e| self.kexpr(e, 7)))
            .collect();
        let within: Vec<String> = (0..index.len())
            .map(|d| {
                let o = r
                    .origin
                    .get(d)
                    .map(|e| self.kexpr(e, 7))
                    .unwrap_or_else(|| "0".into());
                format!("({} - {o})", paren(&index[d]))
            })
            .collect();
        self.blocked_flat(promo, b, &q, &within)
    }

    /// `polyc_tileK[flat]` in a buffer stored in blocks of extents `b`, read by code that
    /// runs in no particular block (a copy into a nested tile): the block and the place
    /// in it are computed from the element's place in the tile, `index - offset`, which
    /// is never negative inside the tile.
    fn block_access_anywhere(&self, l: &LocalRef, b: &[i64], index: &[String]) -> String {
        let sizes = self.tiles.get(&l.promo).cloned().unwrap_or_default();
        let mut q = Vec::with_capacity(index.len());
        let mut within = Vec::with_capacity(index.len());
        for (d, ix) in index.iter().enumerate() {
            let off = l
                .offset
                .get(d)
                .map(|o| self.kexpr(o, 7))
                .unwrap_or_else(|| "0".into());
            let rel = format!("({} - {off})", paren(ix));
            let bs = b.get(d).copied().unwrap_or(1).max(1);
            if sizes.get(d).copied().unwrap_or(1) > bs {
                q.push(Some(format!("{rel} / {bs}")));
                within.push(format!("{rel} % {bs}"));
            } else {
                q.push(None);
                within.push(rel);
            }
        }
        self.blocked_flat(l.promo, b, &q, &within)
    }

    /// `polyc_tileK[flat]` in a buffer stored in blocks of extents `b`: the blocks in
    /// row-major order (`q`: the block's number along each dimension), each block in its
    /// stored order (`within`: the element's place in the block along each dimension).
    fn blocked_flat(
        &self,
        promo: usize,
        b: &[i64],
        q: &[Option<String>],
        within: &[String],
    ) -> String {
        let sizes = self.tiles.get(&promo).cloned().unwrap_or_default();
        let per_block: i64 = self
            .block_strides
            .get(&promo)
            .copied()
            .unwrap_or_else(|| b.iter().product());
        let mut outer = String::new();
        let mut inner = String::new();
        for d in 0..within.len() {
            let bs = b.get(d).copied().unwrap_or(1);
            let nb = (sizes.get(d).copied().unwrap_or(1) + bs - 1) / bs.max(1);
            if let Some(q) = q.get(d).cloned().flatten().filter(|_| nb > 1) {
                outer = if outer.is_empty() {
                    q
                } else {
                    format!("({outer}) * {nb} + {q}")
                };
            } else if !outer.is_empty() {
                outer = format!("({outer}) * {nb}");
            }
        }
        // Inside a block, the dimensions in their stored order.
        for (k, d) in self
            .stored_order(promo, within.len())
            .into_iter()
            .enumerate()
        {
            let bs = b.get(d).copied().unwrap_or(1);
            let ix = &within[d];
            inner = if k == 0 {
                ix.clone()
            } else {
                format!("({inner}) * {bs} + {ix}")
            };
        }
        let flat = match (outer.is_empty(), inner.is_empty()) {
            (true, true) => "0".to_string(),
            (true, false) => inner,
            (false, _) => format!("({outer}) * {per_block} + {inner}"),
        };
        self.tile_index(promo, flat)
    }

    /// The tensor dimensions of local buffer `promo` (of `rank` dimensions) in the order
    /// they are stored, outermost first.
    fn stored_order(&self, promo: usize, rank: usize) -> Vec<usize> {
        match self.orders.get(&promo) {
            Some(o) if o.len() == rank => o.clone(),
            _ => (0..rank).collect(),
        }
    }

    /// Elements of a local buffer as laid out: [`Emitter::stage_elems`] times its pipeline
    /// stages.
    pub(crate) fn tile_elems(&self, promo: usize, tensor: TensorId) -> i64 {
        let one = self.stage_elems(promo, tensor);
        one * self.staged.get(&promo).map_or(1, |(_, stages)| *stages)
    }

    /// Stages the tiles of pipelined loops (see [`crate::codegen::pipeline`]): their
    /// buffers hold one copy per stage, and the loops print as pipelines.
    pub(crate) fn set_pipelines(&mut self, pipes: &[crate::codegen::pipeline::Pipeline]) {
        for p in pipes {
            for &promo in &p.promos {
                if let Some(&t) = self.promo_tensor.get(&promo) {
                    let one = self.stage_elems(promo, t);
                    self.staged.insert(promo, (one, p.stages));
                }
            }
            self.pipelined.insert(p.lp, (p.promos.clone(), p.stages));
        }
    }

    /// Whether `promo`'s buffer holds pipeline stages.
    pub(crate) fn is_staged(&self, promo: usize) -> bool {
        self.staged.contains_key(&promo)
    }

    /// The stages of each pipelined loop of the kernel being printed.
    pub(crate) fn pipeline_stages(&self) -> Vec<i64> {
        self.pipelined.values().map(|(_, s)| *s).collect()
    }

    /// `polyc_tileK[flat]`, offset to the stage in use for a staged buffer.
    fn tile_index(&self, promo: usize, flat: String) -> String {
        match (
            self.staged.get(&promo),
            self.stage_expr.borrow().get(&promo),
        ) {
            (Some((one, _)), Some(stage)) => {
                format!("{}[({stage}) * {one} + {flat}]", tile_name(promo))
            }
            _ => format!("{}[{flat}]", tile_name(promo)),
        }
    }

    /// Elements of one stage of a local buffer as laid out: [`Emitter::tile_dims`], or
    /// whole blocks.
    fn stage_elems(&self, promo: usize, tensor: TensorId) -> i64 {
        match (self.blocks.get(&promo), self.tiles.get(&promo)) {
            (Some(b), Some(s)) => {
                let blocks: i64 = b
                    .iter()
                    .zip(s)
                    .map(|(&b, &s)| (s + b - 1) / b.max(1))
                    .product();
                let stride = self
                    .block_strides
                    .get(&promo)
                    .copied()
                    .unwrap_or_else(|| b.iter().product());
                blocks * stride
            }
            _ => self.tile_dims(promo, tensor).iter().product(),
        }
    }

    /// The extents of a local buffer as laid out, in its stored order (the last one padded, see
    /// [`padded_row`]).
    fn tile_dims(&self, promo: usize, tensor: TensorId) -> Vec<i64> {
        let natural = self.tiles.get(&promo).cloned().unwrap_or_default();
        let mut sizes: Vec<i64> = self
            .stored_order(promo, natural.len())
            .into_iter()
            .map(|d| natural.get(d).copied().unwrap_or(1))
            .collect();
        let elem = self.prog.tensors[tensor].dtype.size_bytes() as i64;
        let shared = self.shared.contains(&promo);
        if sizes.len() >= 2 {
            if let Some(last) = sizes.last_mut() {
                *last = if let (true, Some(pad)) = (shared, self.row_pads.get(&promo)) {
                    *last + pad
                } else if shared {
                    padded_shared_row(*last, elem)
                } else {
                    padded_row(*last, elem)
                };
            }
        }
        sizes
    }

    /// `NAME[flat index]` for an access of tensor `t` in global memory.
    fn tensor_access(&self, t: TensorId, index: &[String]) -> String {
        let ten = &self.prog.tensors[t];
        let mut flat = String::new();
        for (d, ix) in index.iter().enumerate() {
            let ix = match self.folds.get(&t) {
                // Indices are never negative: `%` is the modulo.
                Some(&(fd, m)) if fd == d => format!("{} % {m}", paren(ix)),
                _ => ix.clone(),
            };
            let ix = paren(&ix);
            if d == 0 {
                flat = ix;
            } else {
                let ext = self.stored_extent(t, d);
                flat = if d == 1 {
                    format!("{flat} * {ext} + {ix}")
                } else {
                    format!("({flat}) * {ext} + {ix}")
                };
            }
        }
        if flat.is_empty() {
            flat = "0".into();
        }
        format!("{}[{flat}]", c_ident(&ten.name))
    }

    /// A sequential loop of the C dialect, with at least [`MIN_REDUCTION_TRIP`] iterations
    /// (or a trip count known at run time), whose body is a list of statements: one to
    /// [`MAX_LOOP_SUMS`] floating-point `+=` updates of elements that do not move with the
    /// loop (row sums: `s(r) += e(r, j)` over `j`, or the sums of `x` and `x²` side by
    /// side), of one type, and others that write elements moving with the loop (`d(r, j) =
    /// X(r, j) − mean(r)`). Tensors written in the loop are read only at the indices
    /// written, and the updated ones not at all, so no value crosses iterations but the
    /// sums. Returns the updates with the iterator values their targets need.
    fn reduction<'n>(&'n self, n: &'n KNode) -> Option<Vec<LoopSum<'n>>> {
        let KNode::For {
            iter,
            init,
            cond,
            step,
            body,
            kind: LoopKind::Seq,
        } = n
        else {
            return None;
        };
        if !self.dialect.omp_simd_reductions() {
            return None;
        }
        if const_trip(iter, init, cond, *step).is_some_and(|t| t < MIN_REDUCTION_TRIP) {
            return None;
        }
        let mut stmts = Vec::new();
        flat_stmts(body, &mut stmts)?;
        // A folded temporary's elements share storage across iterations: its loops keep
        // their order (no `omp simd`, no sums in scalars).
        let folded = |k: usize| {
            let st = &self.prog.stmts[k];
            self.folds.contains_key(&st.lhs)
                || st
                    .reads()
                    .iter()
                    .any(|(t, _, _)| self.folds.contains_key(t))
        };
        if stmts.iter().any(|&(k, _, _)| folded(k)) {
            return None;
        }
        let moves = |st: &Stmt, args: &[KExpr]| {
            (0..st.iters.len()).any(|i| {
                st.lhs_index.iter().any(|a| a.uses_iter(i))
                    && args.get(i).is_none_or(|a| a.mentions(iter))
            })
        };
        let mut red: Vec<LoopSum<'n>> = Vec::new();
        for &(k, args, locals) in &stmts {
            let st = &self.prog.stmts[k];
            if moves(st, args) {
                continue;
            }
            let StmtBody::Update(AssignOp::Add | AssignOp::Max | AssignOp::Min, e) = &st.body
            else {
                return None;
            };
            let ct = compute_type(st.dtype);
            if red.len() >= MAX_LOOP_SUMS
                || red
                    .first()
                    .is_some_and(|(first, _, _)| first.dtype != st.dtype)
                || st.dtype != ct
                || !matches!(ct, DType::F32 | DType::F64)
                || reads_tensor(e, st.lhs)
            {
                return None;
            }
            red.push((st, args, locals));
        }
        let args = red.first()?.1;
        // The statements run at the same iterator values, so equal index expressions
        // name equal elements.
        if stmts.windows(2).any(|w| w[0].1 != w[1].1) {
            return None;
        }
        // Vector lanes must load contiguous elements: every access moves with the loop in
        // its last index only (a naive GEMM's `B(k, j)` over `k` is left alone).
        let moving: Vec<bool> = args.iter().map(|a| a.mentions(iter)).collect();
        let contiguous = |index: &[Aff]| {
            index.iter().rev().skip(1).all(|ix| {
                !moving
                    .iter()
                    .enumerate()
                    .any(|(i, &m)| m && ix.uses_iter(i))
            })
        };
        for &(k, _, _) in &stmts {
            let st = &self.prog.stmts[k];
            if !contiguous(&st.lhs_index) {
                return None;
            }
            if let StmtBody::Update(_, e) = &st.body {
                if !all_reads(e, &contiguous) {
                    return None;
                }
            }
        }
        // Every read of a tensor the loop writes is at the written index; the sums'
        // tensors are not read, and no two statements write one tensor.
        for &(k, _, _) in &stmts {
            let w = &self.prog.stmts[k];
            for &(j, _, _) in &stmts {
                let r = &self.prog.stmts[j];
                if let StmtBody::Update(_, e) = &r.body {
                    let reads_a_sum = red
                        .iter()
                        .any(|(rs, _, _)| !std::ptr::eq(*rs, r) && reads_tensor(e, rs.lhs));
                    if !reads_only_at(e, w.lhs, &w.lhs_index) || reads_a_sum {
                        return None;
                    }
                }
                if j != k && r.lhs == w.lhs {
                    return None;
                }
            }
        }
        Some(red)
    }

    /// Emits a [`Emitter::reduction`] loop: each sum's target in a scalar `polyc_red`
    /// (`polyc_red1`, … for the others); where the loop's bound is an upper bound on its
    /// iterator ([`ascending_bound`]), blocks of lanes with a partial sum each
    /// ([`Emitter::lane_loop`], vectorised by any C compiler at `-O3` with no OpenMP or
    /// reassociation flag), then the iterations left into the scalars, then the lanes added
    /// to them; elsewhere the whole loop under the dialect's
    /// OpenMP's `#pragma omp simd reduction(…)` ([`omp_simd_reduction`]). Either way the sums are reassociated, within the
    /// interpreter's tolerance. Then the scalars are stored back.
    fn reduction_loop(&self, out: &mut String, n: &KNode, sums: Vec<LoopSum<'_>>, level: usize) {
        let KNode::For {
            iter,
            init,
            cond,
            step,
            body,
            ..
        } = n
        else {
            return;
        };
        let Some(&(first_st, args, _)) = sums.first() else {
            return;
        };
        // Every sum runs at the same iterator values: one block declares those their
        // targets use.
        indent(out, level);
        out.push_str("{\n");
        let names: Vec<String> = first_st.iters.iter().map(|i| c_ident(&i.name)).collect();
        for (i, (name, a)) in names.iter().zip(args).enumerate() {
            if sums
                .iter()
                .any(|(st, _, _)| st.lhs_index.iter().any(|x| x.uses_iter(i)))
            {
                indent(out, level + 1);
                let _ = writeln!(out, "const {} {name} = {};", self.ix(), self.kexpr(a, 0));
            }
        }
        let mut lhs = Vec::with_capacity(sums.len());
        for (k, &(st, _, locals)) in sums.iter().enumerate() {
            let idx: Vec<String> = st
                .lhs_index
                .iter()
                .map(|a| a.to_c(&names, &self.texts))
                .collect();
            *self.cur.borrow_mut() = locals.to_vec();
            lhs.push(self.access(st.lhs, &idx));
            self.cur.borrow_mut().clear();
            indent(out, level + 1);
            let _ = writeln!(
                out,
                "{} {} = {};",
                st.dtype.c_type(),
                sum_name("polyc_red", k),
                lhs[k]
            );
        }
        let lanes = (REDUCTION_LANE_BYTES / first_st.dtype.size_bytes().max(1)) as i64;
        let first = if *step > 0 && ascending_bound(iter, cond) {
            self.lane_loop(
                out,
                (iter, init, cond, *step, body),
                &sums,
                lanes,
                level + 1,
            );
            "polyc_v".to_string()
        } else {
            indent(out, level + 1);
            let ops: Vec<AssignOp> = sums.iter().map(|(st, _, _)| sum_op(st)).collect();
            let _ = writeln!(out, "{}", omp_simd_reduction(&ops));
            self.kexpr(init, 0)
        };
        indent(out, level + 1);
        let _ = writeln!(
            out,
            "for ({} {iter} = {first}; {}; {iter} += {step}) {{",
            self.ix(),
            self.kexpr(cond, 0)
        );
        *self.red_lhs.borrow_mut() = sums
            .iter()
            .enumerate()
            .map(|(k, (st, _, _))| (*st as *const Stmt, sum_name("polyc_red", k)))
            .collect();
        self.node(out, body, level + 2);
        self.red_lhs.borrow_mut().clear();
        indent(out, level + 1);
        out.push_str("}\n");
        for (k, target) in lhs.iter().enumerate() {
            let red = sum_name("polyc_red", k);
            if first == "polyc_v" {
                let st = sums[k].0;
                let lane = format!("{}[polyc_l]", sum_name("polyc_lane", k));
                indent(out, level + 1);
                let _ = writeln!(
                    out,
                    "for (int64_t polyc_l = 0; polyc_l < {lanes}; polyc_l += 1) {}",
                    join_lane(sum_op(st), st.dtype, &red, &lane)
                );
            }
            indent(out, level + 1);
            let _ = writeln!(out, "{target} = {red};");
        }
        indent(out, level);
        out.push_str("}\n");
    }

    /// The vector part of a [`Emitter::reduction_loop`]: `lanes` partial sums in a local
    /// array `polyc_lane`, the loop over blocks of `lanes` consecutive iterations (from
    /// `polyc_v`, while the block's last iteration satisfies the loop's bound), and inside
    /// it a loop over the lanes whose body adds into `polyc_lane[polyc_l]`. Every lane is
    /// its own sum, so gcc and clang vectorise the lane loop at any flags (no
    /// reassociation, no OpenMP): the sums are reassociated only by this split, within
    /// the interpreter's tolerance. The iterations left after the last block run in the
    /// loop that follows, from `polyc_v`, into `polyc_red`.
    fn lane_loop(
        &self,
        out: &mut String,
        (iter, init, cond, step, body): (&str, &KExpr, &KExpr, i64, &KNode),
        sums: &[LoopSum<'_>],
        lanes: i64,
        level: usize,
    ) {
        let last = KExpr::Add(
            Box::new(KExpr::Var("polyc_v".into())),
            Box::new(KExpr::Int((lanes - 1) * step)),
        );
        let last_cond = cond.substitute(&|v| (v == iter).then(|| last.clone()));
        for (k, (st, _, _)) in sums.iter().enumerate() {
            let lane = sum_name("polyc_lane", k);
            indent(out, level);
            if sum_op(st) == AssignOp::Add {
                let _ = writeln!(
                    out,
                    "{} {lane}[{lanes}] __attribute__((aligned(64))) = {{0}};",
                    st.dtype.c_type()
                );
            } else {
                // A maximum or minimum starts every lane at the running value.
                let _ = writeln!(
                    out,
                    "{} {lane}[{lanes}] __attribute__((aligned(64)));",
                    st.dtype.c_type()
                );
                indent(out, level);
                let _ = writeln!(
                    out,
                    "for (int64_t polyc_l = 0; polyc_l < {lanes}; polyc_l += 1) {lane}[polyc_l] = {};",
                    sum_name("polyc_red", k)
                );
            }
        }
        indent(out, level);
        let _ = writeln!(out, "int64_t polyc_v = {};", self.kexpr(init, 0));
        indent(out, level);
        let _ = writeln!(
            out,
            "for (; {}; polyc_v += {}) {{",
            self.kexpr(&last_cond, 0),
            lanes * step
        );
        indent(out, level + 1);
        let _ = writeln!(
            out,
            "for (int64_t polyc_l = 0; polyc_l < {lanes}; polyc_l += 1) {{"
        );
        indent(out, level + 2);
        let at = if step == 1 {
            "polyc_l".to_string()
        } else {
            format!("polyc_l * {step}")
        };
        let _ = writeln!(out, "const int64_t {iter} = polyc_v + {at};");
        *self.red_lhs.borrow_mut() = sums
            .iter()
            .enumerate()
            .map(|(k, (st, _, _))| {
                (
                    *st as *const Stmt,
                    format!("{}[polyc_l]", sum_name("polyc_lane", k)),
                )
            })
            .collect();
        self.node(out, body, level + 2);
        self.red_lhs.borrow_mut().clear();
        indent(out, level + 1);
        out.push_str("}\n");
        indent(out, level);
        out.push_str("}\n");
    }

    /// Sets the block of the GPU kernel being printed (see `block`).
    pub(crate) fn set_block(&mut self, block: [i64; 3]) {
        self.block = Some(block);
    }

    /// Elements per 16-byte vector copy of the copy loop `n` when it copies one element
    /// of a tensor into its shared tile per iteration, consecutive iterations moving to
    /// consecutive elements of the tensor's last dimension (which the tile stores last
    /// too), under an upper bound on its iterator, with a constant trip count that gives
    /// every thread of a block-stride loop at least one whole vector; `None` otherwise, or
    /// where the dialect has no vector copy.
    pub(crate) fn vector_copy_width<'n>(&self, n: &'n KNode) -> Option<(i64, &'n KNode)> {
        let KNode::For {
            iter,
            init,
            cond,
            step: 1,
            body,
            kind,
        } = n
        else {
            return None;
        };
        let mut copy: &KNode = body;
        while let KNode::Block(v) = copy {
            match v.as_slice() {
                [one] => copy = one,
                _ => return None,
            }
        }
        let KNode::Copy {
            promo,
            tensor,
            copy_in: true,
            args,
            locals,
        } = copy
        else {
            return None;
        };
        // `POLYC_VECTOR_COPIES=0` (measurements only) copies element by element.
        if self.dialect.vector_copy("d", "s").is_none()
            || std::env::var("POLYC_VECTOR_COPIES").as_deref() == Ok("0")
            || !self.is_shared(*promo)
            || locals
                .iter()
                .any(|l| l.tensor == *tensor && l.promo != *promo)
            || self.blocks.contains_key(promo) && self.orders.contains_key(promo)
            || !ascending_bound(iter, cond)
        {
            return None;
        }
        let rank = args.len();
        let (last, rest) = args.split_last()?;
        if rest.iter().any(|a| a.mentions(iter)) || !unit_in(last, iter) {
            return None;
        }
        if self.stored_order(*promo, rank).last() != Some(&(rank - 1)) {
            return None;
        }
        let esize = self.prog.tensors[*tensor].dtype.size_bytes() as i64;
        if !matches!(esize, 2 | 4 | 8) {
            return None;
        }
        let w = 16 / esize;
        // Rows (or a block's rows) start 16-byte aligned and hold whole vectors, so that
        // an aligned first element inside the loop's bound puts all `w` in one row.
        let row_ok = match self.blocks.get(promo) {
            Some(b) => {
                let stride = self.block_strides.get(promo).copied().unwrap_or(0);
                b.last().is_some_and(|l| l % w == 0) && (stride * esize) % 16 == 0
            }
            None => self
                .tile_dims(*promo, *tensor)
                .last()
                .is_some_and(|l| (l * esize) % 16 == 0),
        };
        if !row_ok {
            return None;
        }
        let trip = const_trip(iter, init, cond, 1)?;
        let lanes = match kind {
            LoopKind::Thread(d) => self.block?[*d as usize],
            LoopKind::ThreadFlat => self.block?.iter().product(),
            LoopKind::Seq | LoopKind::Unrolled => 1,
            LoopKind::Parallel | LoopKind::Block(_) => return None,
        };
        (trip >= w * lanes).then_some((w, copy))
    }

    /// A copy loop of [`Emitter::vector_copy_width`] as 16-byte copies: each thread takes
    /// `w` consecutive iterations at a time and copies them as one vector where the
    /// whole vector is inside the loop's bound and both addresses are 16-byte aligned
    /// (then the tile holds the `w` elements in one row: its rows start aligned and hold
    /// whole vectors); else (a tile's edge, a misaligned row) element by element.
    fn vector_copy_loop(&self, out: &mut String, n: &KNode, level: usize) -> bool {
        let Some((w, copy)) = self.vector_copy_width(n) else {
            return false;
        };
        let (
            KNode::For {
                iter,
                init,
                cond,
                kind,
                ..
            },
            KNode::Copy {
                promo,
                tensor,
                args,
                locals,
                ..
            },
        ) = (n, copy)
        else {
            return false;
        };
        let Some(own) = locals.iter().rev().find(|l| l.promo == *promo) else {
            return false;
        };
        let ix = self.ix();
        let (first, stride) = match kind {
            LoopKind::Thread(d) => (
                format!("polyc_tid{d} * {w}"),
                format!("polyc_ntid{d} * {w}"),
            ),
            LoopKind::ThreadFlat => (format!("polyc_tidf * {w}"), format!("polyc_ntidf * {w}")),
            _ => ("0".to_string(), w.to_string()),
        };
        indent(out, level);
        let _ = writeln!(
            out,
            "for ({ix} {iter} = {} + {first}; {}; {iter} += {stride}) {{ /* {} bytes at a time */",
            self.kexpr(init, 1),
            self.kexpr(cond, 0),
            16
        );
        let at = |shift: i64| -> Vec<String> {
            args.iter()
                .map(|a| {
                    let e = a.substitute(&|v| {
                        (v == iter.as_str()).then(|| {
                            KExpr::Add(Box::new(KExpr::var(iter)), Box::new(KExpr::Int(shift)))
                        })
                    });
                    self.kexpr(&e, 0)
                })
                .collect()
        };
        let tile = self.tile_access(own, &at(0));
        let global = self.tensor_access(*tensor, &at(0));
        let last_cond = cond.substitute(&|v| {
            (v == iter.as_str())
                .then(|| KExpr::Add(Box::new(KExpr::var(iter)), Box::new(KExpr::Int(w - 1))))
        });
        indent(out, level + 1);
        let _ = writeln!(
            out,
            "if ({} && polyc_aligned16(&{tile}) && polyc_aligned16(&{global})) {{",
            self.kexpr(&last_cond, 3),
        );
        let started = self
            .async_copies
            .get()
            .then(|| self.dialect.async_copy(&tile, &global, 16))
            .flatten()
            .or_else(|| self.dialect.vector_copy(&tile, &global));
        indent(out, level + 2);
        let _ = writeln!(out, "{}", started.unwrap_or_default());
        indent(out, level + 1);
        out.push_str(
            "} else {
",
        );
        // Element by element: the same copy over iterations iter .. iter + w - 1.
        let each = format!("{iter}_e");
        let scalar = KNode::For {
            iter: each.clone(),
            init: KExpr::var(iter),
            cond: KExpr::And(
                Box::new(cond.substitute(&|v| (v == iter.as_str()).then(|| KExpr::var(&each)))),
                Box::new(KExpr::Cmp(
                    KCmp::Lt,
                    Box::new(KExpr::var(&each)),
                    Box::new(KExpr::Add(
                        Box::new(KExpr::var(iter)),
                        Box::new(KExpr::Int(w)),
                    )),
                )),
            ),
            step: 1,
            body: Box::new(copy.clone().map_exprs(&|e| {
                e.substitute(&|v| (v == iter.as_str()).then(|| KExpr::var(&each)))
            })),
            kind: LoopKind::Seq,
        };
        self.node(out, &scalar, level + 2);
        indent(out, level + 1);
        out.push_str(
            "}
",
        );
        indent(out, level);
        out.push_str(
            "}
",
        );
        true
    }

    /// Prints the indices as 32-bit `int`, with the 32-bit index helpers (`polyc_imin`, …) (the caller has
    /// proven that every value fits, see [`crate::codegen::ranges`]).
    pub(crate) fn set_index32(&mut self) {
        self.index32 = true;
    }

    /// The C type of an index: `int64_t`, or `int` (see [`Emitter::set_index32`]).
    pub(crate) fn ix(&self) -> &'static str {
        if self.index32 {
            "int"
        } else {
            "int64_t"
        }
    }

    /// The name of an index helper (`polyc_min`, …) for the index type.
    fn ix_helper(&self, name: &'static str) -> String {
        match (self.index32, name.strip_prefix("polyc_")) {
            (true, Some(rest)) => format!("polyc_i{rest}"),
            _ => name.to_string(),
        }
    }

    /// A block-stride loop that runs at most once per thread (its constant trip count is
    /// at most the block's extent along its dimension) as straight code: the iterator is
    /// the thread's index, guarded when some threads have no iteration. A guarded body
    /// with a barrier keeps its loop (every thread must reach the barrier).
    fn single_thread_iteration(&self, out: &mut String, n: &KNode, level: usize) -> bool {
        let KNode::For {
            iter,
            init,
            cond,
            step,
            body,
            kind,
        } = n
        else {
            return false;
        };
        let (Some(block), Some(trip)) = (self.block, const_trip(iter, init, cond, *step)) else {
            return false;
        };
        let (idx, extent) = match kind {
            LoopKind::Thread(d) if (*d as usize) < 3 => {
                (format!("polyc_tid{d}"), block[*d as usize])
            }
            LoopKind::ThreadFlat => ("polyc_tidf".to_string(), block.iter().product()),
            _ => return false,
        };
        let mut barrier = false;
        body.walk(&mut |x| barrier |= matches!(x, KNode::Barrier));
        if trip > extent || trip < 1 || (trip < extent && barrier) {
            return false;
        }
        indent(out, level);
        if trip < extent {
            let _ = writeln!(out, "if ({idx} < {trip}) {{");
        } else {
            out.push_str("{\n");
        }
        indent(out, level + 1);
        let _ = writeln!(
            out,
            "const {} {iter} = {} + {idx} * {step}; /* one iteration per thread */",
            self.ix(),
            self.kexpr(init, 1)
        );
        self.node(out, body, level + 1);
        indent(out, level);
        out.push_str("}\n");
        true
    }

    /// A loop: its pragmas (parallel, unrolled), then the loop, spread over blocks or threads where it is mapped.
    fn for_node(&self, out: &mut String, n: &KNode, level: usize) {
        if self.pipelined_for(out, n, level)
            || self.vector_copy_loop(out, n, level)
            || self.single_thread_iteration(out, n, level)
        {
            return;
        }
        let KNode::For {
            iter,
            init,
            cond,
            step,
            body,
            kind,
        } = n
        else {
            return;
        };
        if let (LoopKind::Parallel, Some(pragma), true) = (
            kind,
            self.dialect.parallel_pragma(),
            is_canonical(iter, cond),
        ) {
            indent(out, level);
            let _ = writeln!(out, "{pragma}");
        }
        // (A parallel loop takes no other pragma between its pragma and the loop.)
        let mut unroll_factor = 1;
        if *kind == LoopKind::Unrolled {
            indent(out, level);
            let _ = writeln!(out, "{}", self.dialect.unroll_pragma(64));
        } else if self.in_tile.get() > 0 && matches!(kind, LoopKind::Seq) {
            if let Some(n) = const_trip(iter, init, cond, *step) {
                if (2..=UNROLL_TRIP).contains(&n)
                    && loop_depth(body) >= 1
                    && !holds_local(body)
                    && (self.dialect.device_code()
                        || self.unrolled.get() * n * unrolled_weight(body) <= UNROLL_BUDGET)
                {
                    indent(out, level);
                    let _ = writeln!(out, "{}", self.dialect.unroll_pragma(UNROLL_TRIP));
                    unroll_factor = n;
                }
            }
        }
        indent(out, level);
        // Loops spread over blocks or threads start at their index and stride by
        // the grid's or the block's size (see `LoopKind`).
        let spread = match kind {
            LoopKind::Block(d) => Some((format!("polyc_bid{d}"), format!("polyc_nbid{d}"))),
            LoopKind::Thread(d) => Some((format!("polyc_tid{d}"), format!("polyc_ntid{d}"))),
            LoopKind::ThreadFlat => Some(("polyc_tidf".into(), "polyc_ntidf".into())),
            LoopKind::Seq | LoopKind::Parallel | LoopKind::Unrolled => None,
        };
        match spread {
            Some((idx, n)) => {
                let _ = writeln!(
                    out,
                    "for ({} {iter} = {} + {idx} * {step}; {}; {iter} += {n} * {step}) {{",
                    self.ix(),
                    self.kexpr(init, 1),
                    self.kexpr(cond, 0)
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "for ({} {iter} = {}; {}; {iter} += {step}) {{",
                    self.ix(),
                    self.kexpr(init, 0),
                    self.kexpr(cond, 0)
                );
            }
        }
        let outer = self.unrolled.get();
        self.unrolled.set(outer * unroll_factor);
        self.loop_vars.borrow_mut().push(iter.clone());
        let parallel = *kind == LoopKind::Parallel
            && self.dialect.parallel_pragma().is_some()
            && is_canonical(iter, cond);
        if !(parallel && self.outlined_body(out, body, level + 1)) {
            self.node(out, body, level + 1);
        }
        self.loop_vars.borrow_mut().pop();
        self.unrolled.set(outer);
        indent(out, level);
        out.push_str("}\n");
    }

    /// A scope of local buffers (promoted tiles): their declarations (registers or stack on a device, aligned stack or heap on the host), their poisoning under `--check`, the body, and the heap buffers freed.
    fn local_node(&self, out: &mut String, n: &KNode, level: usize) {
        let KNode::Local { bufs, body } = n else {
            return;
        };
        indent(out, level);
        out.push_str("{\n");
        let mut heap = Vec::new();
        for b in bufs.iter().filter(|b| b.space == MemSpace::Private) {
            let c = self.prog.tensors[b.tensor].dtype.c_type();
            let n: i64 = self.tile_elems(b.promo, b.tensor);
            let bytes = n * self.prog.tensors[b.tensor].dtype.size_bytes() as i64;
            let name = tile_name(b.promo);
            indent(out, level + 1);
            let dims = crate::passes::promote::dims_text(&b.sizes);
            let _ = writeln!(
                out,
                "/* tile of {} ({}) */",
                self.prog.tensors[b.tensor].name, dims
            );
            indent(out, level + 1);
            if self.dialect.device_code() {
                // Device code: a private array the compiler keeps in registers
                // when its indices are constants (unrolled loops).
                let _ = writeln!(out, "{c} {name}[{n}];");
            } else if bytes <= STACK_TILE_BYTES {
                // The array is used only through a `restrict` pointer: gcc 12 kept a
                // register tile's accumulators in memory when it read an operand from a
                // stack array (attention's Q·Kᵀ at D = 64: 2.67 ms, 1.27 ms this way).
                let _ = writeln!(out, "{c} {name}_s[{n}] __attribute__((aligned(64)));");
                indent(out, level + 1);
                let _ = writeln!(out, "{c} *restrict {name} = {name}_s;");
            } else {
                let _ = writeln!(
                    out,
                    "{c} *restrict {name} = ({c} *)aligned_alloc(64, (size_t){});",
                    (bytes + 63) / 64 * 64
                );
                heap.push(name);
            }
        }
        // Buffers no copy fills or drains (tile-local temporaries) are poisoned
        // like global temporaries; the others are covered by their copies.
        let mut copied = Vec::new();
        body.walk(&mut |n| {
            if let KNode::Copy { promo, .. } = n {
                copied.push(*promo);
            }
        });
        let poison = |out: &mut String, level: usize| {
            if !self.poison || self.dialect.device_code() {
                return;
            }
            let fills: Vec<_> = bufs
                .iter()
                .filter(|b| !copied.contains(&b.promo) && b.space == MemSpace::Private)
                .collect();
            if fills.is_empty() {
                return;
            }
            out.push_str("#ifdef POLYC_POISON\n");
            for b in fills {
                let n: i64 = self.tile_elems(b.promo, b.tensor);
                let bytes = n * self.prog.tensors[b.tensor].dtype.size_bytes() as i64;
                indent(out, level);
                let _ = writeln!(out, "memset({}, 0xFF, {bytes});", tile_name(b.promo));
            }
            out.push_str("#endif\n");
        };
        if heap.is_empty() {
            poison(out, level + 1);
            self.in_tile.set(self.in_tile.get() + 1);
            self.node(out, body, level + 1);
            self.in_tile.set(self.in_tile.get() - 1);
        } else {
            let cond: Vec<String> = heap.iter().map(|h| h.to_string()).collect();
            indent(out, level + 1);
            let _ = writeln!(out, "if ({}) {{", cond.join(" && "));
            poison(out, level + 2);
            self.in_tile.set(self.in_tile.get() + 1);
            self.node(out, body, level + 2);
            self.in_tile.set(self.in_tile.get() - 1);
            indent(out, level + 1);
            out.push_str("} else {\n");
            indent(out, level + 2);
            out.push_str("polyc_status = -1;\n");
            indent(out, level + 1);
            out.push_str("}\n");
            for h in &heap {
                indent(out, level + 1);
                let _ = writeln!(out, "free({h});");
            }
        }
        indent(out, level);
        out.push_str("}\n");
    }

    pub(crate) fn node(&self, out: &mut String, n: &KNode, level: usize) {
        if matches!(n, KNode::For { .. }) && self.hoisted_loop(out, n, level) {
            return;
        }
        self.node_unhoisted(out, n, level);
    }

    /// [`Emitter::node`] without hoisting the invariant parts of a loop's statements.
    fn node_unhoisted(&self, out: &mut String, n: &KNode, level: usize) {
        if let Some(r) = self.reduction(n) {
            self.reduction_loop(out, n, r, level);
            return;
        }
        match n {
            KNode::Block(v) => {
                for c in v {
                    self.node(out, c, level);
                }
            }
            KNode::For { .. } => self.for_node(out, n, level),
            KNode::If { cond, then, els } => {
                indent(out, level);
                let text = self.kexpr(cond, 0);
                let text = if self.full_tile_branch(cond) {
                    self.dialect.likely(&text).unwrap_or(text)
                } else {
                    text
                };
                let _ = writeln!(out, "if ({text}) {{");
                self.node(out, then, level + 1);
                indent(out, level);
                if let Some(e) = els {
                    out.push_str("} else {\n");
                    self.node(out, e, level + 1);
                    indent(out, level);
                }
                out.push_str("}\n");
            }
            KNode::Stmt { stmt, args, locals } => {
                *self.cur.borrow_mut() = locals.clone();
                self.stmt(out, &self.prog.stmts[*stmt], args, level);
                self.cur.borrow_mut().clear();
            }
            KNode::Local { .. } => self.local_node(out, n, level),
            KNode::Let { name, value, body } => {
                indent(out, level);
                out.push_str("{\n");
                indent(out, level + 1);
                let _ = writeln!(
                    out,
                    "const {} {name} = {};",
                    self.ix(),
                    self.kexpr(value, 0)
                );
                self.node(out, body, level + 1);
                indent(out, level);
                out.push_str("}\n");
            }
            KNode::Barrier => {
                indent(out, level);
                let _ = writeln!(out, "{}", self.dialect.block_sync());
            }
            KNode::Intrinsic(call) => {
                indent(out, level);
                let args: Vec<String> = call.args.iter().map(|a| self.intrinsic_arg(a)).collect();
                let _ = writeln!(out, "{}({});", call.name, args.join(", "));
            }
            KNode::Device { id, body } => {
                // Only GPU printers see device nodes; they print the body as a kernel.
                indent(out, level);
                let _ = writeln!(out, "/* device kernel {id} */");
                self.node(out, body, level);
            }
            KNode::Copy {
                promo,
                tensor,
                copy_in,
                args,
                locals,
            } => {
                let idx: Vec<String> = args.iter().map(|a| self.kexpr(a, 0)).collect();
                let own = locals.iter().rev().find(|l| l.promo == *promo).cloned();
                let outer = locals
                    .iter()
                    .rev()
                    .find(|l| l.tensor == *tensor && l.promo != *promo)
                    .cloned();
                let tile = match own {
                    Some(l) => self.tile_access(&l, &idx),
                    None => format!("/* missing tile {promo} */ {}", tile_name(*promo)),
                };
                let global = match outer {
                    Some(l) => self.tile_access(&l, &idx),
                    None => self.tensor_access(*tensor, &idx),
                };
                indent(out, level);
                let bytes = self.prog.tensors[*tensor].dtype.size_bytes();
                let started = (*copy_in && self.async_copies.get())
                    .then(|| self.dialect.async_copy(&tile, &global, bytes))
                    .flatten();
                if let Some(start) = started {
                    let _ = writeln!(out, "{start}");
                } else if *copy_in {
                    let _ = writeln!(out, "{tile} = {global};");
                } else {
                    let _ = writeln!(out, "{global} = {tile};");
                }
            }
        }
    }

    /// Opens a statement's block: `{`, then a `const int64_t` per iterator. Returns the
    /// iterators' C names and the target's index texts.
    fn open_stmt(
        &self,
        out: &mut String,
        st: &Stmt,
        args: &[KExpr],
        level: usize,
    ) -> (Vec<String>, Vec<String>) {
        indent(out, level);
        out.push_str("{\n");
        let names: Vec<String> = st.iters.iter().map(|i| c_ident(&i.name)).collect();
        for (name, a) in names.iter().zip(args) {
            indent(out, level + 1);
            let _ = writeln!(out, "const {} {name} = {};", self.ix(), self.kexpr(a, 0));
        }
        let idx: Vec<String> = st
            .lhs_index
            .iter()
            .map(|a| a.to_c(&names, &self.texts))
            .collect();
        (names, idx)
    }

    fn stmt(&self, out: &mut String, st: &Stmt, args: &[KExpr], level: usize) {
        let (names, idx) = self.open_stmt(out, st, args, level);
        let red = self
            .red_lhs
            .borrow()
            .iter()
            .find(|(p, _)| std::ptr::eq(*p, st))
            .map(|(_, r)| r.clone());
        let lhs = match red {
            Some(r) => r,
            None => self.access(st.lhs, &idx),
        };
        let store = st.dtype;
        let ct = compute_type(store);
        let c = ct.c_type();
        let x = suffix(ct);
        let conv = |v: String| -> String {
            if store == ct {
                v
            } else {
                format!("({})({v})", store.c_type())
            }
        };
        let old = if store == ct {
            lhs.clone()
        } else {
            format!("(({c}){lhs})")
        };
        indent(out, level + 1);
        match &st.body {
            StmtBody::Init(op) => {
                let v = match op {
                    AssignOp::Assign | AssignOp::Add => format!("({})0", store.c_type()),
                    AssignOp::Mul => format!("({})1", store.c_type()),
                    AssignOp::Max => lowest(store),
                    AssignOp::Min => highest(store),
                };
                let _ = writeln!(out, "{lhs} = {v};");
            }
            StmtBody::Update(AssignOp::Add, Expr::Bin(BinOp::Mul, a, b))
                if store == ct && matches!(ct, DType::F32 | DType::F64) =>
            {
                let [f32_fma, f64_fma] = self.dialect.fma_names();
                let f = if ct == DType::F32 { f32_fma } else { f64_fma };
                let _ = writeln!(
                    out,
                    "{lhs} = {f}({}, {}, {lhs});",
                    self.expr(st, &names, a),
                    self.expr(st, &names, b)
                );
            }
            StmtBody::Update(op, e) => {
                let v = self.expr(st, &names, e);
                let text = match op {
                    AssignOp::Assign => format!("{lhs} = {};", conv(v)),
                    AssignOp::Add | AssignOp::Mul if ct == DType::F16 => {
                        let f = if *op == AssignOp::Add { "add" } else { "mul" };
                        format!("{lhs} = polyc_{f}_f16({old}, {v});")
                    }
                    AssignOp::Mul
                        if store == ct
                            && matches!(ct, DType::F32 | DType::F64)
                            && self.dialect.unfused_mul_names().is_some() =>
                    {
                        format!("{lhs} = {}({lhs}, {v});", self.unfused_mul(ct))
                    }
                    AssignOp::Add | AssignOp::Mul if store == ct => {
                        let o = if *op == AssignOp::Add { "+" } else { "*" };
                        format!("{lhs} {o}= {v};")
                    }
                    AssignOp::Add | AssignOp::Mul => {
                        let o = if *op == AssignOp::Add { "+" } else { "*" };
                        format!("{lhs} = {};", conv(format!("{old} {o} {v}")))
                    }
                    AssignOp::Max => {
                        format!("{lhs} = {};", conv(format!("polyc_max_{x}({v}, {old})")))
                    }
                    AssignOp::Min => {
                        format!("{lhs} = {};", conv(format!("polyc_min_{x}({v}, {old})")))
                    }
                };
                out.push_str(&text);
                out.push('\n');
            }
        }
        indent(out, level);
        out.push_str("}\n");
    }

    /// The dialect's unfused product for f32 (`ct` F32) or f64 (anything else), or `*`'s
    /// stand-in where it has none (callers check [`Dialect::unfused_mul_names`] first).
    fn unfused_mul(&self, ct: DType) -> &'static str {
        let [f32_mul, f64_mul] = self.dialect.unfused_mul_names().unwrap_or(["", ""]);
        if ct == DType::F32 {
            f32_mul
        } else {
            f64_mul
        }
    }

    /// A right-hand side in the statement's compute type; the result is always an atom
    /// (a name, an access, a call or a parenthesised expression).
    fn expr(&self, st: &Stmt, names: &[String], e: &Expr) -> String {
        if let Some(name) = self.hoisted_name(e) {
            return name;
        }
        let ct = compute_type(st.dtype);
        let c = ct.c_type();
        let x = suffix(ct);
        let sub = |a: &Expr| self.expr(st, names, a);
        // Conversion to the statement's type: in an i8 statement (computed in int32_t)
        // a value is first wrapped to int8_t, then promoted, as C would hold it.
        let narrow = st.dtype != ct;
        let conv_from = |from: Option<DType>, v: String| -> String {
            if from == Some(st.dtype) && !narrow {
                v
            } else if from == Some(st.dtype) || !narrow {
                format!("(({c}){v})")
            } else {
                format!("(({c})(int8_t){v})")
            }
        };
        match e {
            Expr::Lit(v) if narrow => conv_from(None, literal(*v, DType::I64)),
            Expr::Lit(v) => literal(*v, ct),
            Expr::Scalar(s) => {
                let sc = &self.prog.scalars[*s];
                conv_from(Some(sc.dtype), c_ident(&sc.name))
            }
            Expr::IterValue(i) => conv_from(None, names[*i].clone()),
            Expr::SizeValue(p) => conv_from(None, paren(&self.texts[*p])),
            Expr::Read { tensor, index, .. } => {
                let idx: Vec<String> = index.iter().map(|a| a.to_c(names, &self.texts)).collect();
                conv_from(
                    Some(self.prog.tensors[*tensor].dtype),
                    self.access(*tensor, &idx),
                )
            }
            Expr::Neg(a) => format!("(-{})", sub(a)),
            Expr::Bin(op, a, b) => {
                let divisor: &Expr = b;
                let (a, b) = (sub(a), sub(b));
                if ct == DType::F16 {
                    let f = match op {
                        BinOp::Add => "add",
                        BinOp::Sub => "sub",
                        BinOp::Mul => "mul",
                        BinOp::Div => "div",
                        BinOp::Rem => "rem",
                    };
                    return format!("polyc_{f}_f16({a}, {b})");
                }
                match (op, ct) {
                    (BinOp::Rem, DType::F32) => format!("fmodf({a}, {b})"),
                    (BinOp::Rem, DType::F64) => format!("fmod({a}, {b})"),
                    (BinOp::Div | BinOp::Rem, DType::I32 | DType::I64) if !matches!(divisor, Expr::Lit(v) if *v != 0.0 && *v != -1.0) =>
                    {
                        let f = if *op == BinOp::Div { "div" } else { "rem" };
                        let k = self
                            .prog
                            .stmts
                            .iter()
                            .position(|t| t.name == st.name)
                            .unwrap_or(0);
                        if self.dialect.device_code() {
                            format!("polyc_{f}_{x}({a}, {b}, {k}, {FAULT_PARAM})")
                        } else {
                            format!("polyc_{f}_{x}({a}, {b}, {k})")
                        }
                    }
                    (BinOp::Mul, DType::F32 | DType::F64)
                        if self.dialect.unfused_mul_names().is_some() =>
                    {
                        format!("{}({a}, {b})", self.unfused_mul(ct))
                    }
                    _ => {
                        format!("({a} {} {b})", op.symbol())
                    }
                }
            }
            Expr::Cmp(op, a, b) => {
                let o = op.symbol();
                format!("({} {o} {} ? ({c})1 : ({c})0)", sub(a), sub(b))
            }
            Expr::Call(f, args) => {
                let a = args.first().map(&sub).unwrap_or_else(|| "0".into());
                let b = args.get(1).map(&sub).unwrap_or_else(|| "0".into());
                match f {
                    Func::Max => format!("polyc_max_{x}({a}, {b})"),
                    Func::Min => format!("polyc_min_{x}({a}, {b})"),
                    Func::Relu => format!("polyc_relu_{x}({a})"),
                    Func::Abs => format!("polyc_abs_{x}({a})"),
                    Func::SatI8 => {
                        format!("polyc_min_{x}(polyc_max_{x}({a}, ({c})-128), ({c})127)")
                    }
                    Func::RequantI8 => {
                        let scale = match args.get(1) {
                            Some(Expr::Lit(v)) => format!("{:?}f", *v as f32),
                            Some(Expr::Scalar(k)) => {
                                format!("((float){})", c_ident(&self.prog.scalars[*k].name))
                            }
                            _ => b,
                        };
                        format!("(({c})polyc_requant_i8((int32_t){a}, {scale}))")
                    }
                    _ => math(*f, ct, &a, self.dialect.exp_f32()),
                }
            }
            Expr::Select(cnd, a, b) if loads_unconditionally(ct, a, b) => {
                format!(
                    "polyc_select_{x}({} != 0, {}, {})",
                    sub(cnd),
                    sub(a),
                    sub(b)
                )
            }
            Expr::Select(cnd, a, b) => {
                format!("({} != 0 ? {} : {})", sub(cnd), sub(a), sub(b))
            }
            Expr::Cast(t, a) => {
                let inner = sub(a);
                if *t == ct && !narrow {
                    inner
                } else {
                    conv_from(Some(*t), format!("(({}){inner})", t.c_type()))
                }
            }
        }
    }

    /// An index expression at C precedence `want` (0: any).
    /// The C text of one intrinsic argument: an integer expression, `T + offset` for a
    /// tensor address, a float literal, or a named constant.
    fn intrinsic_arg(&self, a: &IntrinsicArg) -> String {
        match a {
            IntrinsicArg::Int(e) => self.kexpr(e, 0),
            IntrinsicArg::Addr { tensor, offset } => {
                let name = c_ident(&self.prog.tensors[*tensor].name);
                match offset {
                    KExpr::Int(0) => name,
                    o => format!("{name} + {}", self.kexpr(o, 7)),
                }
            }
            IntrinsicArg::Elem {
                tensor,
                index,
                locals,
            } => {
                let saved = self.cur.replace(locals.clone());
                let texts: Vec<String> = index.iter().map(|e| self.kexpr(e, 0)).collect();
                let text = format!("&{}", self.access(*tensor, &texts));
                self.cur.replace(saved);
                text
            }
            IntrinsicArg::Float(v) => format!("{v:?}f"),
            IntrinsicArg::Scalar(k) => c_ident(&self.prog.scalars[*k].name),
            IntrinsicArg::Named { name, .. } => name.clone(),
        }
    }

    pub(crate) fn kexpr(&self, e: &KExpr, want: u8) -> String {
        let (text, prec) = self.kexpr_prec(e);
        if prec < want {
            format!("({text})")
        } else {
            text
        }
    }

    fn kexpr_prec(&self, e: &KExpr) -> (String, u8) {
        match e {
            KExpr::Int(v) => {
                if *v == i64::MIN {
                    ("INT64_MIN".into(), 9)
                } else if *v < 0 {
                    (v.to_string(), 8)
                } else {
                    (v.to_string(), 9)
                }
            }
            KExpr::Var(n) => match self.prog.param_index(n) {
                Some(p) => {
                    let t = self.texts[p].clone();
                    (t, 9)
                }
                None => (n.clone(), 9),
            },
            KExpr::Add(a, b) => (format!("{} + {}", self.kexpr(a, 6), self.kexpr(b, 7)), 6),
            KExpr::Sub(a, b) => (format!("{} - {}", self.kexpr(a, 6), self.kexpr(b, 7)), 6),
            KExpr::Mul(a, b) => (format!("{} * {}", self.kexpr(a, 7), self.kexpr(b, 8)), 7),
            KExpr::Div(a, b) => (format!("{} / {}", self.kexpr(a, 7), self.kexpr(b, 8)), 7),
            KExpr::Rem(a, b) => (format!("{} % {}", self.kexpr(a, 7), self.kexpr(b, 8)), 7),
            KExpr::Neg(a) => (format!("-{}", self.kexpr(a, 9)), 8),
            KExpr::FloorDiv(a, b) => (
                format!(
                    "{}({}, {})",
                    self.ix_helper("polyc_floord"),
                    self.kexpr(a, 0),
                    self.kexpr(b, 0)
                ),
                9,
            ),
            KExpr::Min(v) | KExpr::Max(v) => {
                let f = self.ix_helper(if matches!(e, KExpr::Min(_)) {
                    "polyc_min"
                } else {
                    "polyc_max"
                });
                let mut it = v.iter().rev();
                let mut acc = it
                    .next()
                    .map(|x| self.kexpr(x, 0))
                    .unwrap_or_else(|| "0".into());
                for x in it {
                    acc = format!("{f}({}, {acc})", self.kexpr(x, 0));
                }
                (acc, 9)
            }
            KExpr::Cmp(op, a, b) => {
                if *op == KCmp::Eq {
                    (format!("{} == {}", self.kexpr(a, 5), self.kexpr(b, 5)), 4)
                } else {
                    (
                        format!("{} {} {}", self.kexpr(a, 6), op.c_op(), self.kexpr(b, 6)),
                        5,
                    )
                }
            }
            KExpr::And(a, b) => (format!("{} && {}", self.kexpr(a, 3), self.kexpr(b, 4)), 3),
            KExpr::Or(a, b) => (format!("{} || {}", self.kexpr(a, 2), self.kexpr(b, 3)), 2),
            KExpr::Select(c, a, b) => (
                format!(
                    "{} ? {} : {}",
                    self.kexpr(c, 2),
                    self.kexpr(a, 1),
                    self.kexpr(b, 1)
                ),
                1,
            ),
        }
    }
}

/// `text` in parentheses unless it already is an atom: a name, an integer, a call or a
/// parenthesised expression.
fn paren(text: &str) -> String {
    let t = text.trim();
    let is_name = !t.is_empty()
        && t.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
        && !t.starts_with(|ch: char| ch.is_ascii_digit());
    let is_int = t.strip_prefix('-').unwrap_or(t).parse::<u64>().is_ok();
    // A call `f(...)` or a group `(...)` whose first `(` closes at the very end.
    let closes_at_end = |from: usize| -> bool {
        let mut depth = 0i32;
        for (i, ch) in t[from..].char_indices() {
            match ch {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        return from + i + 1 == t.len();
                    }
                }
                _ => {}
            }
        }
        false
    };
    let is_group = match t.find('(') {
        Some(0) => closes_at_end(0),
        Some(k) => {
            t[..k]
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
                && closes_at_end(k)
        }
        None => false,
    };
    if is_name || is_int || is_group {
        t.to_string()
    } else {
        format!("({t})")
    }
}

/// True for a loop condition in canonical form (`iter <= e` or `iter < e`), the only one
/// a parallel-loop pragma accepts.
/// The deepest loop nesting in `n` (0: no loop).
fn loop_depth(n: &KNode) -> usize {
    match n {
        KNode::For { body, .. } => 1 + loop_depth(body),
        KNode::Block(v) => v.iter().map(loop_depth).max().unwrap_or(0),
        KNode::If { then, els, .. } => {
            loop_depth(then).max(els.as_deref().map(loop_depth).unwrap_or(0))
        }
        KNode::Local { body, .. } | KNode::Let { body, .. } | KNode::Device { body, .. } => {
            loop_depth(body)
        }
        KNode::Stmt { .. } | KNode::Copy { .. } | KNode::Barrier | KNode::Intrinsic(_) => 0,
    }
}

/// Whether `n` declares a local buffer (a promoted tile): a loop around one is a tile
/// loop, not a loop inside the innermost tile, and is not unrolled.
fn holds_local(n: &KNode) -> bool {
    let mut found = false;
    n.walk(&mut |x| found |= matches!(x, KNode::Local { .. }));
    found
}

/// The trip count of `for (iter = a; iter <= b; iter += step)` with constants `a`, `b`.
fn const_trip(iter: &str, init: &KExpr, cond: &KExpr, step: i64) -> Option<i64> {
    match (init, cond) {
        (KExpr::Int(a), KExpr::Cmp(KCmp::Le, v, b)) if step > 0 => match (&**v, &**b) {
            (KExpr::Var(n), KExpr::Int(b)) if n == iter => Some(((b - a) / step + 1).max(0)),
            _ => None,
        },
        _ => None,
    }
}

fn is_canonical(iter: &str, cond: &KExpr) -> bool {
    match cond {
        KExpr::Cmp(KCmp::Le | KCmp::Lt, a, _) => matches!(&**a, KExpr::Var(n) if n == iter),
        KExpr::Cmp(KCmp::Ge | KCmp::Gt, _, b) => matches!(&**b, KExpr::Var(n) if n == iter),
        _ => false,
    }
}

/// A literal converted to the compute type `ct`.
fn literal(v: f64, ct: DType) -> String {
    let c = ct.c_type();
    if ct.is_float() {
        if v.is_nan() {
            format!("(({c})NAN)")
        } else if v.is_infinite() {
            let s = if v < 0.0 { "-" } else { "" };
            format!("(({c}){s}INFINITY)")
        } else {
            format!("(({c}){v:?})")
        }
    } else if v.fract() == 0.0 && v.abs() < 9.0e15 {
        format!("(({c}){})", v as i64)
    } else {
        format!("(({c})({v:?}))")
    }
}

/// The lowest value of a type (the identity of `max`).
fn lowest(t: DType) -> String {
    match t {
        DType::F16 | DType::F32 | DType::F64 => format!("({})-INFINITY", t.c_type()),
        DType::I8 => "INT8_MIN".into(),
        DType::I32 => "INT32_MIN".into(),
        DType::I64 => "INT64_MIN".into(),
    }
}

/// The highest value of a type (the identity of `min`).
fn highest(t: DType) -> String {
    match t {
        DType::F16 | DType::F32 | DType::F64 => format!("({})INFINITY", t.c_type()),
        DType::I8 => "INT8_MAX".into(),
        DType::I32 => "INT32_MAX".into(),
        DType::I64 => "INT64_MAX".into(),
    }
}

/// A float-only built-in (`exp`, `log`, `sqrt`, `rsqrt`, `tanh`, `sigmoid`) of `a`, in
/// the compute type `ct`.
/// `exp_f32` names the single-precision exponential.
fn math(f: Func, ct: DType, a: &str, exp_f32: &str) -> String {
    // The body in a floating type `ft` with literal suffix `s`, function suffix `fs`.
    let body = |x: &str, fs: &str, one: &str| -> String {
        let exp = if fs == "f" {
            exp_f32.to_string()
        } else {
            format!("exp{fs}")
        };
        match f {
            Func::Exp => format!("{exp}({x})"),
            Func::Log => format!("log{fs}({x})"),
            Func::Sqrt => format!("sqrt{fs}({x})"),
            Func::Tanh => format!("tanh{fs}({x})"),
            Func::Rsqrt => format!("({one} / sqrt{fs}({x}))"),
            Func::Sigmoid => format!("({one} / ({one} + {exp}(-{x})))"),
            // Handled by the caller; kept total for safety.
            Func::Abs => format!("fabs{fs}({x})"),
            Func::Relu => format!("({x} > 0 ? {x} : 0)"),
            Func::Max | Func::Min | Func::SatI8 | Func::RequantI8 => x.to_string(),
        }
    };
    match ct {
        DType::F32 => body(a, "f", "1.0f"),
        DType::F64 => body(a, "", "1.0"),
        DType::F16 => format!(
            "((_Float16){})",
            body(&format!("((float){a})"), "f", "1.0f")
        ),
        _ => format!(
            "(({}){})",
            ct.c_type(),
            body(&format!("((double){a})"), "", "1.0")
        ),
    }
}

#[cfg(test)]
mod tests {
    use polyhedral::ir::AssignOp;

    /// Every scalar of a reduction loop is in the clause of its operator (a scalar left
    /// out would be shared by the vector lanes).
    #[test]
    fn simd_reductions_name_every_scalar_under_its_operator() {
        assert_eq!(
            super::omp_simd_reduction(&[AssignOp::Add]),
            "#pragma omp simd reduction(+:polyc_red)"
        );
        assert_eq!(
            super::omp_simd_reduction(&[AssignOp::Add, AssignOp::Max, AssignOp::Add, AssignOp::Min]),
            "#pragma omp simd reduction(+:polyc_red, polyc_red2) reduction(max:polyc_red1) reduction(min:polyc_red3)"
        );
    }

    /// The most distinct 16-byte words that the 8 threads of a quarter warp touch in one
    /// group of 4 banks, when thread `t` reads the 128-bit vector at float `base(t)`
    /// (shared memory serves a 128-bit access one quarter warp at a time).
    fn quarter_warp_degree(base: impl Fn(i64) -> i64) -> usize {
        let mut per_group: std::collections::HashMap<i64, std::collections::HashSet<i64>> =
            std::collections::HashMap::new();
        for t in 0..8 {
            let word = base(t);
            per_group.entry((word / 4) % 8).or_default().insert(word);
        }
        per_group.values().map(|s| s.len()).max().unwrap_or(0)
    }

    /// A GEMM's B tile in blocks of 16 x 4 floats (one 128-bit vector per thread and k): 64
    /// floats per block put the 8 threads of a quarter warp in the same 4 banks; the 68-float
    /// stride spreads them over all 32.
    #[test]
    fn shared_blocks_of_128_bytes_are_padded_to_conflict_free_strides() {
        assert_eq!(super::block_stride(&[16, 4], 4, true), 68);
        assert_eq!(super::block_stride(&[16, 4], 4, false), 64);
        assert_eq!(super::block_stride(&[8, 8], 8, true), 66);
        assert_eq!(super::block_stride(&[5, 4], 4, true), 20);
        for k in 0..16 {
            assert_eq!(quarter_warp_degree(|t| t * 64 + 4 * k), 8);
            let stride = super::block_stride(&[16, 4], 4, true);
            assert_eq!(quarter_warp_degree(|t| t * stride + 4 * k), 1);
        }
    }

    use super::*;

    /// [`EXP_F32`] against libm's `expf` on every 97th float in range, built with the
    /// system compiler as kernels are.
    #[test]
    fn exp_f32_matches_libm() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("exp.c");
        let main = r#"
#include <stdio.h>
int main(void) {
  double inner = 0, outer = 0;
  for (uint32_t i = 0; i < 0xffffff00u; i += 97) {
    float x; memcpy(&x, &i, 4);
    if (!(x > -87.3f && x < 88.72f)) continue;
    double a = polyc_exp_f32(x), b = expf(x), rel = fabs(a - b) / b;
    if (fabsf(x) <= 80.0f) { if (rel > inner) inner = rel; } else if (rel > outer) outer = rel;
  }
  printf("%.3e %.3e %g %g %g %g\n", inner, outer, polyc_exp_f32(NAN), polyc_exp_f32(89.0f),
         polyc_exp_f32(-88.0f), polyc_exp_f32(0.0f));
  return 0;
}
"#;
        let text =
            format!("#include <stdint.h>\n#include <string.h>\n#include <math.h>\n{EXP_F32}{main}");
        std::fs::write(&src, text).unwrap();
        let exe = dir.path().join("exp");
        // Without and with the machine's FMA (the multiply-adds fused or not).
        for flags in [&["-O2"][..], &["-O2", "-march=native"][..]] {
            let cc = std::process::Command::new("cc")
                .args(flags)
                .arg("-o")
                .arg(&exe)
                .arg(&src)
                .arg("-lm")
                .status()
                .unwrap();
            assert!(cc.success());
            let out = std::process::Command::new(&exe).output().unwrap();
            let text = String::from_utf8(out.stdout).unwrap();
            let v: Vec<&str> = text.split_whitespace().collect();
            let inner: f64 = v[0].parse().unwrap();
            let outer: f64 = v[1].parse().unwrap();
            assert!(inner <= 1.2e-7, "{flags:?}: {text}");
            assert!(outer <= 1.8e-6, "{flags:?}: {text}");
            assert_eq!(&v[2..], ["nan", "inf", "0", "1"], "{flags:?}: {text}");
        }
    }
    use polyhedral::ir::{Param, Span};

    fn prog() -> Program {
        Program {
            loops: vec![],
            name: "p".into(),
            params: vec![Param {
                name: "N".into(),
                span: Span::default(),
            }],
            tensors: vec![],
            scalars: vec![],
            inputs: vec![],
            outputs: vec![],
            stmts: vec![],
        }
    }

    fn v(n: &str) -> Box<KExpr> {
        Box::new(KExpr::var(n))
    }
    fn i(x: i64) -> Box<KExpr> {
        Box::new(KExpr::Int(x))
    }

    #[test]
    fn index_expressions_print_with_minimal_correct_parentheses() {
        let p = prog();
        let e = Emitter::new(
            &p,
            &["N".to_string()],
            &crate::cpu::CDialect { vector_bytes: 64 },
        );
        let cases: Vec<(KExpr, &str)> = vec![
            (
                KExpr::Sub(v("a"), Box::new(KExpr::Add(v("b"), v("c")))),
                "a - (b + c)",
            ),
            (
                KExpr::Add(Box::new(KExpr::Sub(v("a"), v("b"))), v("c")),
                "a - b + c",
            ),
            (
                KExpr::Mul(i(2), Box::new(KExpr::Add(v("a"), i(1)))),
                "2 * (a + 1)",
            ),
            (KExpr::Neg(Box::new(KExpr::Neg(v("a")))), "-(-a)"),
            (KExpr::Neg(i(-3)), "-(-3)"),
            (
                KExpr::Div(v("a"), Box::new(KExpr::Mul(v("b"), v("c")))),
                "a / (b * c)",
            ),
            (
                KExpr::Cmp(
                    KCmp::Le,
                    v("c0"),
                    Box::new(KExpr::Min(vec![
                        KExpr::var("N"),
                        KExpr::Add(v("c1"), i(7)),
                        KExpr::Int(3),
                    ])),
                ),
                "c0 <= polyc_min(N, polyc_min(c1 + 7, 3))",
            ),
            (
                KExpr::Or(
                    Box::new(KExpr::And(v("a"), v("b"))),
                    Box::new(KExpr::Cmp(
                        KCmp::Eq,
                        Box::new(KExpr::Rem(v("a"), i(4))),
                        i(0),
                    )),
                ),
                "a && b || a % 4 == 0",
            ),
            (
                KExpr::FloorDiv(Box::new(KExpr::Sub(v("N"), i(1))), i(8)),
                "polyc_floord(N - 1, 8)",
            ),
        ];
        for (k, want) in cases {
            assert_eq!(e.kexpr(&k, 0), want);
        }
        // A bound size prints as its value.
        let e = Emitter::new(
            &p,
            &["-5".to_string()],
            &crate::cpu::CDialect { vector_bytes: 64 },
        );
        assert_eq!(e.kexpr(&KExpr::Sub(i(1), v("N")), 0), "1 - (-5)");
    }

    #[test]
    fn paren_keeps_atoms_and_wraps_the_rest() {
        assert_eq!(paren("i"), "i");
        assert_eq!(paren("64"), "64");
        assert_eq!(paren("-1"), "-1");
        assert_eq!(paren("(i + 1)"), "(i + 1)");
        assert_eq!(paren("polyc_mod((i + 5), 7)"), "polyc_mod((i + 5), 7)");
        assert_eq!(paren("(a) + (b)"), "((a) + (b))");
        assert_eq!(paren("f(a) + g(b)"), "(f(a) + g(b))");
        assert_eq!(paren("a + b"), "(a + b)");
    }

    #[test]
    fn c_keywords_and_prelude_names_are_escaped() {
        assert_eq!(c_ident("int"), "int_");
        assert_eq!(c_ident("exp"), "exp_");
        assert_eq!(c_ident("polyc_x"), "polyc_x_");
        assert_eq!(c_ident("A"), "A");
    }

    #[test]
    fn literals_take_the_statement_type() {
        assert_eq!(literal(0.5, DType::F32), "((float)0.5)");
        assert_eq!(literal(2.0, DType::I32), "((int32_t)2)");
        assert_eq!(literal(1e-5, DType::F64), "((double)1e-5)");
        assert_eq!(
            literal(f64::NEG_INFINITY, DType::F16),
            "((_Float16)-INFINITY)"
        );
    }

    /// A tile stored in blocks reads the same element whether the reader runs in a block
    /// (a [`BlockRef`]) or in none (a copy into a nested tile, FUZZ_FINDINGS.md F2), with
    /// partial blocks and a stored order; every element has its own place in the buffer.
    #[test]
    fn blocked_tiles_read_alike_from_inside_and_outside_their_blocks() {
        let p = prog();
        let (sizes, block, off) = ([5i64, 7], [2i64, 3], [10i64, 20]);
        for order in [None, Some(vec![1, 0])] {
            let mut e = Emitter::new(
                &p,
                &["N".to_string()],
                &crate::cpu::CDialect { vector_bytes: 64 },
            );
            e.register_buf(&crate::codegen::kir::LocalBuf {
                space: MemSpace::Private,
                promo: 0,
                tensor: 0,
                sizes: sizes.to_vec(),
                block: Some(block.to_vec()),
                order: order.clone(),
            });
            let mut lines = Vec::new();
            for x in 0..sizes[0] {
                for y in 0..sizes[1] {
                    let index = [(off[0] + x).to_string(), (off[1] + y).to_string()];
                    let offset = vec![KExpr::Int(off[0]), KExpr::Int(off[1])];
                    let q = [x / block[0], y / block[1]];
                    let inside = LocalRef {
                        promo: 0,
                        tensor: 0,
                        offset: offset.clone(),
                        block: Some(BlockRef {
                            index: q.iter().map(|&v| KExpr::Int(v)).collect(),
                            origin: (0..2)
                                .map(|d| KExpr::Int(off[d] + q[d] * block[d]))
                                .collect(),
                        }),
                    };
                    let outside = LocalRef {
                        block: None,
                        ..inside.clone()
                    };
                    let flat = |l: &LocalRef| {
                        let a = e.tile_access(l, &index);
                        a["polyc_tile0[".len()..a.len() - 1].to_string()
                    };
                    lines.push(format!(
                        "  printf(\"%ld %ld\\n\", (long)({}), (long)({}));",
                        flat(&inside),
                        flat(&outside)
                    ));
                }
            }
            let dir = tempfile::tempdir().unwrap();
            let src = dir.path().join("blocks.c");
            let text = format!(
                "#include <stdio.h>\nint main(void) {{\n{}\n  return 0;\n}}\n",
                lines.join("\n")
            );
            std::fs::write(&src, text).unwrap();
            let exe = dir.path().join("blocks");
            let cc = std::process::Command::new("cc")
                .arg("-o")
                .arg(&exe)
                .arg(&src)
                .status()
                .unwrap();
            assert!(cc.success());
            let out = std::process::Command::new(&exe).output().unwrap();
            let text = String::from_utf8(out.stdout).unwrap();
            let mut seen = std::collections::BTreeSet::new();
            for l in text.lines() {
                let v: Vec<i64> = l.split(' ').map(|x| x.parse().unwrap()).collect();
                assert_eq!(v[0], v[1], "order {order:?}:\n{text}");
                assert!(seen.insert(v[0]), "order {order:?}: {} twice", v[0]);
                assert!(v[0] >= 0 && v[0] < e.tile_elems(0, 0), "{}", v[0]);
            }
            assert_eq!(seen.len() as i64, sizes[0] * sizes[1]);
        }
    }
}
