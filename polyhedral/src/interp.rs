//! The reference interpreter: runs a [`Program`] in its reference order.
//!
//! Statements run in order; each one runs over its domain in lexicographic order of its
//! iteration vector. Iterator `k` ranges over `max(lower_k) <= i_k < min(upper_k)`, the
//! bounds evaluated with the concrete sizes and the earlier iterators. Every schedule
//! polyc produces is checked against this order.
//!
//! # Arithmetic (the typing rule of [`Expr`], made concrete)
//!
//! Arithmetic happens in the statement's type [`Stmt::dtype`]. Every tensor read, scalar,
//! iterator value, size value and literal is converted to that type first; the
//! conversions are those of Rust's `as` (C's conversions where C defines them):
//! - int → float and float → narrower float round to nearest even;
//! - float → int truncates toward zero and **saturates** (C leaves out-of-range
//!   float → int conversions undefined; polyc's emitted code must not rely on them);
//! - int → narrower int wraps (two's complement, what gcc and clang do);
//! - a literal of an integer statement is truncated to an integer first (`2.0` → `2`).
//!
//! Per type:
//! - **f16**: every operation converts its operands to f32, computes in f32 and rounds the
//!   result back to f16 (one rounding per operation), as C's `_Float16` does under
//!   `FLT_EVAL_METHOD` 0 with per-operation rounding.
//! - **f32** computes in f32 (never widened to f64), **f64** in f64.
//! - **i32**, **i64**: wrapping two's-complement arithmetic in the statement's type.
//! - **i8**: operands are converted to i8, then computed in i32 (C's integer promotion),
//!   wrapping; the result wraps to i8 when it is stored (and at `cast<i8>`).
//! - Integer `/` truncates toward zero and `%` is C's remainder (sign of the dividend);
//!   `i32::MIN / -1` wraps. A division or remainder by zero is an error naming the
//!   statement and the instance. Float `/` follows IEEE (±inf, NaN), float `%` is `fmod`.
//! - Comparisons give 1 or 0 in the statement's type; `select(c, a, b)` evaluates `c`, then
//!   only the chosen branch (so a division by zero in the other branch is no error);
//!   any non-zero `c` (NaN included) chooses `a`.
//! - `cast<T>(e)` converts the value of `e` to `T` and back to the statement's type.
//! - Functions: `exp`, `log`, `sqrt`, `tanh` are Rust's f32/f64 functions (the C library's
//!   on Linux); `rsqrt(x) = 1/sqrt(x)`, `sigmoid(x) = 1/(1+exp(-x))` computed in the
//!   type (for f16: computed in f32 and rounded once); `abs` (wrapping for integers),
//!   `relu(x) = x > 0 ? x : 0`, `max(a, b) = a > b ? a : b`, `min(a, b) = a < b ? a : b`,
//!   `sat_i8(x) = x < -128 ? -128 : x > 127 ? 127 : x` (the statement computes in i32).
//!   `requant_i8(x, s)` ([`requant_i8`], the language's `sat_i8(x * s)` with an f32
//!   scale): `(f32)x * s` in f32, rounded half to even, saturated to int8, NaN → 0;
//!   the scale is read as f32, never converted to the statement's type.
//!   Float-only functions in an integer statement are an error.
//! - `Init(op)` stores the identity: 0 for `+`, 1 for `*`, the lowest value for `max`
//!   (−inf for floats, `MIN` for integers), the highest for `min`. `Update(Assign, e)`
//!   stores `e`; `Update(Add, e)` stores `lhs + e`, `Mul` `lhs * e`, `Max`
//!   `e > lhs ? e : lhs`, `Min` `e < lhs ? e : lhs`. In f32 and f64, `Update(Add, a * b)`
//!   is one fused multiply-add (`fma(a, b, lhs)`, a single rounding), as the emitted C
//!   computes it: multiply-accumulate is the operation of every target's compute units.
//!
//! An access outside its tensor at run time is an error naming the statement, the tensor
//! and the index. The interpreter never panics on a well-typed [`Program`]; malformed ones
//! (wrong index counts, references to later iterators, …) are errors too.

use crate::data::{Buffer, TensorData};
use crate::ir::{
    Aff, AssignOp, BinOp, CmpOp, DType, Expr, Func, OrderItem, Program, Stmt, StmtBody,
};
use half::f16;
use miette::{miette, Result};

/// What [`interpret`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InterpStats {
    /// Statement instances executed.
    pub instances: u64,
}

// ---------------------------------------------------------------------------------------
// Affine expressions, compiled for a fixed set of sizes.
// ---------------------------------------------------------------------------------------

/// An [`Aff`] with the sizes substituted.
#[derive(Clone, Debug)]
enum CAff {
    /// `c + Σ coeff · it[k]` over the listed iterators.
    Lin { c: i64, terms: Vec<(usize, i64)> },
    /// A quasi-affine expression (floordiv/mod of iterators), evaluated recursively.
    Tree(Aff),
}

/// Checks that `a` only mentions iterators `< n_iters` and known sizes, and that its
/// divisors are positive.
fn check_aff(a: &Aff, n_iters: usize, n_params: usize) -> std::result::Result<(), String> {
    match a {
        Aff::Const(_) => Ok(()),
        Aff::Iter(i) if *i < n_iters => Ok(()),
        Aff::Iter(i) => Err(format!(
            "iterator #{i} is used where only the first {n_iters} iterators are defined"
        )),
        Aff::Param(p) if *p < n_params => Ok(()),
        Aff::Param(p) => Err(format!(
            "size #{p} is used but the program has {n_params} sizes"
        )),
        Aff::Add(x, y) | Aff::Sub(x, y) => {
            check_aff(x, n_iters, n_params)?;
            check_aff(y, n_iters, n_params)
        }
        Aff::Mul(_, x) | Aff::Neg(x) => check_aff(x, n_iters, n_params),
        Aff::FloorDiv(x, c) | Aff::Mod(x, c) => {
            if *c <= 0 {
                return Err(format!("floordiv/mod by the non-positive constant {c}"));
            }
            check_aff(x, n_iters, n_params)
        }
    }
}

/// Evaluates a checked `Aff` with wrapping arithmetic.
fn eval_tree(a: &Aff, it: &[i64], p: &[i64]) -> i64 {
    match a {
        Aff::Const(c) => *c,
        Aff::Iter(i) => it[*i],
        Aff::Param(q) => p[*q],
        Aff::Add(x, y) => eval_tree(x, it, p).wrapping_add(eval_tree(y, it, p)),
        Aff::Sub(x, y) => eval_tree(x, it, p).wrapping_sub(eval_tree(y, it, p)),
        Aff::Mul(c, x) => c.wrapping_mul(eval_tree(x, it, p)),
        Aff::Neg(x) => eval_tree(x, it, p).wrapping_neg(),
        Aff::FloorDiv(x, c) => eval_tree(x, it, p).div_euclid(*c),
        Aff::Mod(x, c) => eval_tree(x, it, p).rem_euclid(*c),
    }
}

/// `a` as `c + Σ coeffs[k]·it[k]` (dense coefficients), or `None` for a floordiv/mod that
/// depends on iterators.
fn linearize(a: &Aff, n: usize, p: &[i64]) -> Option<(i64, Vec<i64>)> {
    Some(match a {
        Aff::Const(c) => (*c, vec![0; n]),
        Aff::Iter(i) => {
            let mut v = vec![0; n];
            v[*i] = 1;
            (0, v)
        }
        Aff::Param(q) => (p[*q], vec![0; n]),
        Aff::Add(x, y) | Aff::Sub(x, y) => {
            let (cx, vx) = linearize(x, n, p)?;
            let (cy, vy) = linearize(y, n, p)?;
            let s: i64 = if matches!(a, Aff::Add(..)) { 1 } else { -1 };
            let v = vx
                .iter()
                .zip(&vy)
                .map(|(a, b)| a.wrapping_add(s.wrapping_mul(*b)))
                .collect();
            (cx.wrapping_add(s.wrapping_mul(cy)), v)
        }
        Aff::Mul(k, x) => {
            let (c, v) = linearize(x, n, p)?;
            (
                k.wrapping_mul(c),
                v.into_iter().map(|e| k.wrapping_mul(e)).collect(),
            )
        }
        Aff::Neg(x) => {
            let (c, v) = linearize(x, n, p)?;
            (
                c.wrapping_neg(),
                v.into_iter().map(i64::wrapping_neg).collect(),
            )
        }
        Aff::FloorDiv(x, k) | Aff::Mod(x, k) => {
            let (c, v) = linearize(x, n, p)?;
            if v.iter().any(|e| *e != 0) {
                return None;
            }
            let r = if matches!(a, Aff::FloorDiv(..)) {
                c.div_euclid(*k)
            } else {
                c.rem_euclid(*k)
            };
            (r, vec![0; n])
        }
    })
}

impl CAff {
    /// Compiles a checked `Aff` (iterators `< n`) for the sizes `p`.
    fn new(a: &Aff, n: usize, p: &[i64]) -> CAff {
        match linearize(a, n, p) {
            Some((c, v)) => CAff::Lin {
                c,
                terms: v.into_iter().enumerate().filter(|(_, e)| *e != 0).collect(),
            },
            None => CAff::Tree(a.clone()),
        }
    }

    #[inline(always)]
    fn eval(&self, it: &[i64], p: &[i64]) -> i64 {
        match self {
            CAff::Lin { c, terms } => {
                let mut v = *c;
                for &(k, e) in terms {
                    v = v.wrapping_add(e.wrapping_mul(it[k]));
                }
                v
            }
            CAff::Tree(a) => eval_tree(a, it, p),
        }
    }

    /// The largest iterator position mentioned, if any.
    fn max_iter(&self) -> Option<usize> {
        fn walk(a: &Aff, m: &mut Option<usize>) {
            match a {
                Aff::Const(_) | Aff::Param(_) => {}
                Aff::Iter(i) => *m = Some(m.map_or(*i, |x: usize| x.max(*i))),
                Aff::Add(x, y) | Aff::Sub(x, y) => {
                    walk(x, m);
                    walk(y, m);
                }
                Aff::Mul(_, x) | Aff::Neg(x) | Aff::FloorDiv(x, _) | Aff::Mod(x, _) => walk(x, m),
            }
        }
        match self {
            CAff::Lin { terms, .. } => terms.iter().map(|(k, _)| *k).max(),
            CAff::Tree(a) => {
                let mut m = None;
                walk(a, &mut m);
                m
            }
        }
    }
}

/// The compiled iteration domain of a statement.
struct Domain {
    lower: Vec<Vec<CAff>>,
    upper: Vec<Vec<CAff>>,
}

impl Domain {
    fn new(prog: &Program, s: &Stmt, sizes: &[i64]) -> Result<Domain> {
        let np = prog.params.len();
        let mut lower = Vec::new();
        let mut upper = Vec::new();
        for (k, it) in s.iters.iter().enumerate() {
            if it.lower.is_empty() || it.upper.is_empty() {
                return Err(miette!(
                    "{}: iterator `{}` has no lower or no upper bound",
                    s.name,
                    it.name
                ));
            }
            let comp = |v: &[Aff]| -> Result<Vec<CAff>> {
                v.iter()
                    .map(|a| {
                        check_aff(a, k, np).map_err(|e| {
                            miette!("{}: bad range of iterator `{}`: {e}", s.name, it.name)
                        })?;
                        Ok(CAff::new(a, k, sizes))
                    })
                    .collect()
            };
            lower.push(comp(&it.lower)?);
            upper.push(comp(&it.upper)?);
        }
        Ok(Domain { lower, upper })
    }

    /// `[lo, hi)` of iterator `k` given the earlier iterators in `it`.
    #[inline(always)]
    fn bounds(&self, k: usize, it: &[i64], p: &[i64]) -> (i64, i64) {
        let lo = self.lower[k]
            .iter()
            .map(|a| a.eval(it, p))
            .max()
            .unwrap_or(0);
        let hi = self.upper[k]
            .iter()
            .map(|a| a.eval(it, p))
            .min()
            .unwrap_or(0);
        (lo, hi)
    }

    /// Exact instance count, saturating at `u64::MAX`.
    fn count(&self, p: &[i64]) -> u64 {
        let n = self.lower.len();
        // The first level from which on every iterator's bounds only use iterators
        // before that level: the suffix is a box for each point of the prefix.
        let mut split = n;
        while split > 0 {
            let l = split - 1;
            let ok = (l..n).all(|k| {
                self.lower[k]
                    .iter()
                    .chain(&self.upper[k])
                    .all(|a| a.max_iter().is_none_or(|m| m < l))
            });
            if ok {
                split = l;
            } else {
                break;
            }
        }
        let mut it = vec![0i64; n];
        self.count_rec(0, split, &mut it, p)
    }

    fn count_rec(&self, level: usize, split: usize, it: &mut [i64], p: &[i64]) -> u64 {
        let n = self.lower.len();
        if level == split {
            let mut prod: u64 = 1;
            for k in split..n {
                let (lo, hi) = self.bounds(k, it, p);
                if hi <= lo {
                    return 0;
                }
                prod = prod.saturating_mul((hi as i128 - lo as i128).min(u64::MAX as i128) as u64);
            }
            return prod;
        }
        let (lo, hi) = self.bounds(level, it, p);
        let mut total: u64 = 0;
        let mut v = lo;
        while v < hi {
            it[level] = v;
            total = total.saturating_add(self.count_rec(level + 1, split, it, p));
            v += 1;
        }
        total
    }
}

// ---------------------------------------------------------------------------------------
// Accesses.
// ---------------------------------------------------------------------------------------

/// A compiled tensor access.
struct Access {
    tensor: usize,
    dims: Vec<CAff>,
    extents: Vec<i64>,
    strides: Vec<i64>,
}

impl Access {
    fn new(
        prog: &Program,
        s: &Stmt,
        tensor: usize,
        index: &[Aff],
        tensors: &[TensorData],
        sizes: &[i64],
    ) -> Result<Access> {
        let t = prog
            .tensors
            .get(tensor)
            .ok_or_else(|| miette!("{}: tensor #{tensor} does not exist", s.name))?;
        let shape = &tensors[tensor].shape;
        if index.len() != shape.len() {
            return Err(miette!(
                "{}: tensor `{}` has {} dimensions but is accessed with {} indices",
                s.name,
                t.name,
                shape.len(),
                index.len()
            ));
        }
        let n = s.iters.len();
        let mut dims = Vec::new();
        for a in index {
            check_aff(a, n, prog.params.len())
                .map_err(|e| miette!("{}: bad index of `{}`: {e}", s.name, t.name))?;
            dims.push(CAff::new(a, n, sizes));
        }
        let extents: Vec<i64> = shape.iter().map(|&e| e as i64).collect();
        let mut strides = vec![1i64; shape.len()];
        for d in (0..shape.len().saturating_sub(1)).rev() {
            strides[d] = strides[d + 1].wrapping_mul(extents[d + 1]);
        }
        Ok(Access {
            tensor,
            dims,
            extents,
            strides,
        })
    }

    /// The row-major offset, or `None` when an index is outside the shape.
    #[inline(always)]
    fn offset(&self, it: &[i64], p: &[i64]) -> Option<usize> {
        let mut off = 0i64;
        for ((d, &ext), &st) in self.dims.iter().zip(&self.extents).zip(&self.strides) {
            let v = d.eval(it, p);
            if v < 0 || v >= ext {
                return None;
            }
            off += v * st;
        }
        Some(off as usize)
    }
}

// ---------------------------------------------------------------------------------------
// Numbers.
// ---------------------------------------------------------------------------------------

/// The value type of an i8 statement: an i8 promoted to i32, as in C.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
struct I8w(i32);

/// Arithmetic in one statement type.
trait Num: Copy + PartialOrd + 'static {
    const FLOAT: bool;
    /// `lhs += a * b` is one fused multiply-add (one rounding): true for f32 and f64.
    const FUSED_MAC: bool = false;
    /// `self + a * b`, fused where [`Num::FUSED_MAC`] says so.
    #[inline(always)]
    fn mac(self, a: Self, b: Self) -> Self {
        self.add(a.mul(b))
    }
    fn from_f16(x: f16) -> Self;
    fn from_f32(x: f32) -> Self;
    fn from_f64(x: f64) -> Self;
    fn from_i8(x: i8) -> Self;
    fn from_i32(x: i32) -> Self;
    fn from_i64(x: i64) -> Self;
    fn to_f16(self) -> f16;
    fn to_f32(self) -> f32;
    fn to_f64(self) -> f64;
    fn to_i8(self) -> i8;
    fn to_i32(self) -> i32;
    fn to_i64(self) -> i64;
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    /// `None` for an integer division by zero.
    fn div(self, o: Self) -> Option<Self>;
    /// `None` for an integer remainder by zero.
    fn rem(self, o: Self) -> Option<Self>;
    fn neg(self) -> Self;
    fn abs(self) -> Self;
    /// A float-only function (only called for float types).
    fn float_fn(self, f: Func) -> Self;
    fn zero() -> Self;
    fn one() -> Self;
    fn lowest() -> Self;
    fn highest() -> Self;

    fn from_lit(x: f64) -> Self {
        if Self::FLOAT {
            Self::from_f64(x)
        } else {
            Self::from_i64(x as i64)
        }
    }
    #[inline(always)]
    fn truth(self) -> bool {
        // `!(self == 0)`, so NaN is true as in C.
        self != Self::zero()
    }
    #[inline(always)]
    fn from_bool(b: bool) -> Self {
        if b {
            Self::one()
        } else {
            Self::zero()
        }
    }
    #[inline(always)]
    fn load(buf: &Buffer, i: usize) -> Self {
        match buf {
            Buffer::F16(v) => Self::from_f16(v[i]),
            Buffer::F32(v) => Self::from_f32(v[i]),
            Buffer::F64(v) => Self::from_f64(v[i]),
            Buffer::I8(v) => Self::from_i8(v[i]),
            Buffer::I32(v) => Self::from_i32(v[i]),
            Buffer::I64(v) => Self::from_i64(v[i]),
        }
    }
    #[inline(always)]
    fn store(self, buf: &mut Buffer, i: usize) {
        match buf {
            Buffer::F16(v) => v[i] = self.to_f16(),
            Buffer::F32(v) => v[i] = self.to_f32(),
            Buffer::F64(v) => v[i] = self.to_f64(),
            Buffer::I8(v) => v[i] = self.to_i8(),
            Buffer::I32(v) => v[i] = self.to_i32(),
            Buffer::I64(v) => v[i] = self.to_i64(),
        }
    }
    /// `cast<t>(self)`: to `t` and back.
    fn cast_via(self, t: DType) -> Self {
        match t {
            DType::F16 => Self::from_f16(self.to_f16()),
            DType::F32 => Self::from_f32(self.to_f32()),
            DType::F64 => Self::from_f64(self.to_f64()),
            DType::I8 => Self::from_i8(self.to_i8()),
            DType::I32 => Self::from_i32(self.to_i32()),
            DType::I64 => Self::from_i64(self.to_i64()),
        }
    }
}

/// Conversions of a primitive type through `as`.
macro_rules! prim_conv {
    ($t:ty) => {
        #[inline(always)]
        fn from_f32(x: f32) -> Self {
            x as $t
        }
        #[inline(always)]
        fn from_f64(x: f64) -> Self {
            x as $t
        }
        #[inline(always)]
        fn from_i8(x: i8) -> Self {
            x as $t
        }
        #[inline(always)]
        fn from_i32(x: i32) -> Self {
            x as $t
        }
        #[inline(always)]
        fn from_i64(x: i64) -> Self {
            x as $t
        }
        #[inline(always)]
        fn to_f32(self) -> f32 {
            self as f32
        }
        #[inline(always)]
        fn to_f64(self) -> f64 {
            self as f64
        }
        #[inline(always)]
        fn to_i8(self) -> i8 {
            self as i8
        }
        #[inline(always)]
        fn to_i32(self) -> i32 {
            self as i32
        }
        #[inline(always)]
        fn to_i64(self) -> i64 {
            self as i64
        }
    };
}

/// The float functions of a primitive float type.
macro_rules! float_fns {
    ($t:ty) => {
        fn float_fn(self, f: Func) -> Self {
            match f {
                Func::Exp => self.exp(),
                Func::Log => self.ln(),
                Func::Sqrt => self.sqrt(),
                Func::Rsqrt => 1.0 / self.sqrt(),
                Func::Tanh => self.tanh(),
                Func::Sigmoid => 1.0 / (1.0 + (-self).exp()),
                Func::Abs => self.abs(),
                Func::Relu => {
                    if self > 0.0 {
                        self
                    } else {
                        0.0
                    }
                }
                // Two-argument functions are evaluated by the caller; `sat_i8` is
                // rejected in float statements when the statement is compiled.
                Func::Max | Func::Min | Func::SatI8 | Func::RequantI8 => self,
            }
        }
    };
}

macro_rules! float_num {
    ($t:ty) => {
        impl Num for $t {
            const FLOAT: bool = true;
            const FUSED_MAC: bool = true;
            #[inline(always)]
            fn mac(self, a: Self, b: Self) -> Self {
                a.mul_add(b, self)
            }
            prim_conv!($t);
            float_fns!($t);
            #[inline(always)]
            fn from_f16(x: f16) -> Self {
                x.to_f64() as $t
            }
            #[inline(always)]
            fn to_f16(self) -> f16 {
                f16::from_f64(self as f64)
            }
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self + o
            }
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                self - o
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self * o
            }
            #[inline(always)]
            fn div(self, o: Self) -> Option<Self> {
                Some(self / o)
            }
            #[inline(always)]
            fn rem(self, o: Self) -> Option<Self> {
                Some(self % o)
            }
            #[inline(always)]
            fn neg(self) -> Self {
                -self
            }
            #[inline(always)]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            fn zero() -> Self {
                0.0
            }
            fn one() -> Self {
                1.0
            }
            fn lowest() -> Self {
                <$t>::NEG_INFINITY
            }
            fn highest() -> Self {
                <$t>::INFINITY
            }
        }
    };
}

float_num!(f32);
float_num!(f64);

macro_rules! int_num {
    ($t:ty) => {
        impl Num for $t {
            const FLOAT: bool = false;
            prim_conv!($t);
            #[inline(always)]
            fn from_f16(x: f16) -> Self {
                x.to_f32() as $t
            }
            #[inline(always)]
            fn to_f16(self) -> f16 {
                f16::from_f64(self as f64)
            }
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                self.wrapping_sub(o)
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
            #[inline(always)]
            fn div(self, o: Self) -> Option<Self> {
                (o != 0).then(|| self.wrapping_div(o))
            }
            #[inline(always)]
            fn rem(self, o: Self) -> Option<Self> {
                (o != 0).then(|| self.wrapping_rem(o))
            }
            #[inline(always)]
            fn neg(self) -> Self {
                self.wrapping_neg()
            }
            #[inline(always)]
            fn abs(self) -> Self {
                self.wrapping_abs()
            }
            fn float_fn(self, f: Func) -> Self {
                match f {
                    Func::Abs => self.wrapping_abs(),
                    Func::Relu => self.max(0),
                    Func::SatI8 => self.clamp(-128, 127),
                    // Rejected when the statement is compiled.
                    _ => self,
                }
            }
            fn zero() -> Self {
                0
            }
            fn one() -> Self {
                1
            }
            fn lowest() -> Self {
                <$t>::MIN
            }
            fn highest() -> Self {
                <$t>::MAX
            }
        }
    };
}

int_num!(i32);
int_num!(i64);

/// f16: every operation in f32, rounded back to f16.
impl Num for f16 {
    const FLOAT: bool = true;
    #[inline(always)]
    fn from_f16(x: f16) -> Self {
        x
    }
    #[inline(always)]
    fn from_f32(x: f32) -> Self {
        f16::from_f32(x)
    }
    #[inline(always)]
    fn from_f64(x: f64) -> Self {
        f16::from_f64(x)
    }
    #[inline(always)]
    fn from_i8(x: i8) -> Self {
        f16::from_f32(x as f32)
    }
    #[inline(always)]
    fn from_i32(x: i32) -> Self {
        f16::from_f64(x as f64)
    }
    #[inline(always)]
    fn from_i64(x: i64) -> Self {
        f16::from_f64(x as f64)
    }
    #[inline(always)]
    fn to_f16(self) -> f16 {
        self
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        f16::to_f32(self)
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
    #[inline(always)]
    fn to_i8(self) -> i8 {
        f16::to_f32(self) as i8
    }
    #[inline(always)]
    fn to_i32(self) -> i32 {
        f16::to_f32(self) as i32
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        f16::to_f32(self) as i64
    }
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        f16::from_f32(f16::to_f32(self) + f16::to_f32(o))
    }
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        f16::from_f32(f16::to_f32(self) - f16::to_f32(o))
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        f16::from_f32(f16::to_f32(self) * f16::to_f32(o))
    }
    #[inline(always)]
    fn div(self, o: Self) -> Option<Self> {
        Some(f16::from_f32(f16::to_f32(self) / f16::to_f32(o)))
    }
    #[inline(always)]
    fn rem(self, o: Self) -> Option<Self> {
        Some(f16::from_f32(f16::to_f32(self) % f16::to_f32(o)))
    }
    #[inline(always)]
    fn neg(self) -> Self {
        -self
    }
    #[inline(always)]
    fn abs(self) -> Self {
        f16::from_f32(f16::to_f32(self).abs())
    }
    fn float_fn(self, f: Func) -> Self {
        f16::from_f32(f16::to_f32(self).float_fn(f))
    }
    fn zero() -> Self {
        f16::ZERO
    }
    fn one() -> Self {
        f16::ONE
    }
    fn lowest() -> Self {
        f16::NEG_INFINITY
    }
    fn highest() -> Self {
        f16::INFINITY
    }
}

/// i8 statements: values are converted to i8, then held (and computed) as i32.
impl Num for I8w {
    const FLOAT: bool = false;
    #[inline(always)]
    fn from_f16(x: f16) -> Self {
        I8w(x.to_f32() as i8 as i32)
    }
    #[inline(always)]
    fn from_f32(x: f32) -> Self {
        I8w(x as i8 as i32)
    }
    #[inline(always)]
    fn from_f64(x: f64) -> Self {
        I8w(x as i8 as i32)
    }
    #[inline(always)]
    fn from_i8(x: i8) -> Self {
        I8w(x as i32)
    }
    #[inline(always)]
    fn from_i32(x: i32) -> Self {
        I8w(x as i8 as i32)
    }
    #[inline(always)]
    fn from_i64(x: i64) -> Self {
        I8w(x as i8 as i32)
    }
    #[inline(always)]
    fn to_f16(self) -> f16 {
        f16::from_f64(self.0 as f64)
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self.0 as f32
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self.0 as f64
    }
    #[inline(always)]
    fn to_i8(self) -> i8 {
        self.0 as i8
    }
    #[inline(always)]
    fn to_i32(self) -> i32 {
        self.0
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self.0 as i64
    }
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        I8w(self.0.wrapping_add(o.0))
    }
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        I8w(self.0.wrapping_sub(o.0))
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        I8w(self.0.wrapping_mul(o.0))
    }
    #[inline(always)]
    fn div(self, o: Self) -> Option<Self> {
        Num::div(self.0, o.0).map(I8w)
    }
    #[inline(always)]
    fn rem(self, o: Self) -> Option<Self> {
        Num::rem(self.0, o.0).map(I8w)
    }
    #[inline(always)]
    fn neg(self) -> Self {
        I8w(self.0.wrapping_neg())
    }
    #[inline(always)]
    fn abs(self) -> Self {
        I8w(self.0.wrapping_abs())
    }
    fn float_fn(self, f: Func) -> Self {
        I8w(self.0.float_fn(f))
    }
    fn zero() -> Self {
        I8w(0)
    }
    fn one() -> Self {
        I8w(1)
    }
    fn lowest() -> Self {
        I8w(i8::MIN as i32)
    }
    fn highest() -> Self {
        I8w(i8::MAX as i32)
    }
}

// ---------------------------------------------------------------------------------------
// Expressions.
// ---------------------------------------------------------------------------------------

/// A compiled expression in statement type `T`.
enum CE<T> {
    Const(T),
    Iter(usize),
    Read(usize),
    Neg(Box<CE<T>>),
    Bin(BinOp, Box<CE<T>>, Box<CE<T>>),
    Cmp(CmpOp, Box<CE<T>>, Box<CE<T>>),
    F1(Func, Box<CE<T>>),
    F2(Func, Box<CE<T>>, Box<CE<T>>),
    Select(Box<CE<T>>, Box<CE<T>>, Box<CE<T>>),
    Cast(DType, Box<CE<T>>),
    /// `requant_i8(x, scale)` with the scale known when the statement is compiled.
    Requant(Box<CE<T>>, f32),
}

/// Requantisation to int8 as Gemmini's `mvout` applies it (`ACC_SCALE` of
/// `gemmini_params.h`): `x` converted to f32 (rounded to nearest even), multiplied by
/// `scale` in f32, rounded half to even, saturated to [-128, 127]; NaN gives 0.
pub fn requant_i8(x: i32, scale: f32) -> i32 {
    let y = ((x as f32) * scale).round_ties_even();
    if y.is_nan() {
        0
    } else {
        y.clamp(-128.0, 127.0) as i32
    }
}

/// Why an instance failed.
#[derive(Clone, Copy, Debug)]
enum Fail {
    /// Access number `.0` (0 is the left side) is out of bounds.
    Oob(usize),
    /// Integer division by zero.
    DivZero,
    /// Integer remainder by zero.
    RemZero,
}

/// What expression evaluation reads.
struct Cx<'a> {
    it: &'a [i64],
    p: &'a [i64],
    tensors: &'a [TensorData],
    acc: &'a [Access],
    fast: &'a Fast,
}

/// Offsets of the accesses along the innermost loop, when every access is affine and
/// stays inside its tensor for the whole loop: access `a` is at `base[a] + v·step[a]`.
#[derive(Default)]
struct Fast {
    base: Vec<i64>,
    step: Vec<i64>,
    v: i64,
}

impl Fast {
    /// Prepares the innermost loop `lo <= it[level] < hi` (non-empty); false when an
    /// access is quasi-affine or leaves its tensor somewhere in the loop (then the checked
    /// path runs and reports the failing instance).
    fn prepare(
        &mut self,
        acc: &[Access],
        level: usize,
        lo: i64,
        hi: i64,
        it: &mut [i64],
        p: &[i64],
    ) -> bool {
        self.base.clear();
        self.step.clear();
        it[level] = 0;
        for a in acc {
            let (mut base, mut step) = (0i64, 0i64);
            for ((d, &ext), &st) in a.dims.iter().zip(&a.extents).zip(&a.strides) {
                let CAff::Lin { terms, .. } = d else {
                    return false;
                };
                let c0 = d.eval(it, p);
                let b = terms
                    .iter()
                    .find(|(k, _)| *k == level)
                    .map_or(0, |(_, e)| *e);
                let first = c0.wrapping_add(b.wrapping_mul(lo));
                let last = c0.wrapping_add(b.wrapping_mul(hi - 1));
                let (mn, mx) = (first.min(last), first.max(last));
                // The ends are exact when no product overflowed; a value of a
                // range this far out fails the test anyway.
                let exact = b.checked_mul(lo).and_then(|x| x.checked_add(c0)).is_some()
                    && b.checked_mul(hi - 1)
                        .and_then(|x| x.checked_add(c0))
                        .is_some();
                if !exact || mn < 0 || mx >= ext {
                    return false;
                }
                base = base.wrapping_add(c0.wrapping_mul(st));
                step = step.wrapping_add(b.wrapping_mul(st));
            }
            self.base.push(base);
            self.step.push(step);
        }
        true
    }

    #[inline(always)]
    fn offset(&self, a: usize) -> usize {
        self.base[a].wrapping_add(self.v.wrapping_mul(self.step[a])) as usize
    }
}

#[inline]
fn eval<T: Num, const FAST: bool>(e: &CE<T>, cx: &Cx) -> std::result::Result<T, Fail> {
    Ok(match e {
        CE::Const(v) => *v,
        CE::Iter(k) => T::from_i64(cx.it[*k]),
        CE::Read(a) => {
            let acc = &cx.acc[*a];
            let off = if FAST {
                cx.fast.offset(*a)
            } else {
                acc.offset(cx.it, cx.p).ok_or(Fail::Oob(*a))?
            };
            T::load(&cx.tensors[acc.tensor].buf, off)
        }
        CE::Neg(x) => eval::<T, FAST>(x, cx)?.neg(),
        CE::Bin(op, x, y) => {
            let a = eval::<T, FAST>(x, cx)?;
            let b = eval::<T, FAST>(y, cx)?;
            match op {
                BinOp::Add => a.add(b),
                BinOp::Sub => a.sub(b),
                BinOp::Mul => a.mul(b),
                BinOp::Div => a.div(b).ok_or(Fail::DivZero)?,
                BinOp::Rem => a.rem(b).ok_or(Fail::RemZero)?,
            }
        }
        CE::Cmp(op, x, y) => {
            let a = eval::<T, FAST>(x, cx)?;
            let b = eval::<T, FAST>(y, cx)?;
            T::from_bool(match op {
                CmpOp::Lt => a < b,
                CmpOp::Le => a <= b,
                CmpOp::Gt => a > b,
                CmpOp::Ge => a >= b,
                CmpOp::Eq => a == b,
                CmpOp::Ne => a != b,
            })
        }
        CE::F1(f, x) => {
            let a = eval::<T, FAST>(x, cx)?;
            match f {
                Func::Abs => a.abs(),
                Func::Relu => {
                    if a > T::zero() {
                        a
                    } else {
                        T::zero()
                    }
                }
                _ => a.float_fn(*f),
            }
        }
        CE::F2(f, x, y) => {
            let a = eval::<T, FAST>(x, cx)?;
            let b = eval::<T, FAST>(y, cx)?;
            let pick_a = match f {
                Func::Min => a < b,
                _ => a > b,
            };
            if pick_a {
                a
            } else {
                b
            }
        }
        CE::Select(c, x, y) => {
            if eval::<T, FAST>(c, cx)?.truth() {
                eval::<T, FAST>(x, cx)?
            } else {
                eval::<T, FAST>(y, cx)?
            }
        }
        CE::Cast(t, x) => eval::<T, FAST>(x, cx)?.cast_via(*t),
        CE::Requant(x, scale) => T::from_i32(requant_i8(eval::<T, FAST>(x, cx)?.to_i32(), *scale)),
    })
}

/// Compilation state of one statement.
struct Compiler<'a> {
    prog: &'a Program,
    stmt: &'a Stmt,
    sizes: &'a [i64],
    tensors: &'a [TensorData],
    scalars: &'a [TensorData],
    acc: Vec<Access>,
}

impl Compiler<'_> {
    fn expr<T: Num>(&mut self, e: &Expr) -> Result<CE<T>> {
        let s = self.stmt;
        let bx = |c: CE<T>| Box::new(c);
        Ok(match e {
            Expr::Lit(v) => CE::Const(T::from_lit(*v)),
            Expr::Scalar(id) => {
                let d = self
                    .scalars
                    .get(*id)
                    .ok_or_else(|| miette!("{}: scalar #{id} has no value", s.name))?;
                if d.len() != 1 {
                    return Err(miette!(
                        "{}: scalar `{}` must hold one value, it holds {}",
                        s.name,
                        self.prog.scalars.get(*id).map_or("?", |x| x.name.as_str()),
                        d.len()
                    ));
                }
                CE::Const(T::load(&d.buf, 0))
            }
            Expr::IterValue(k) => {
                if *k >= s.iters.len() {
                    return Err(miette!("{}: iterator #{k} does not exist", s.name));
                }
                CE::Iter(*k)
            }
            Expr::SizeValue(p) => {
                let v = self
                    .sizes
                    .get(*p)
                    .ok_or_else(|| miette!("{}: size #{p} does not exist", s.name))?;
                CE::Const(T::from_i64(*v))
            }
            Expr::Read { tensor, index, .. } => {
                let a = Access::new(self.prog, s, *tensor, index, self.tensors, self.sizes)?;
                self.acc.push(a);
                CE::Read(self.acc.len() - 1)
            }
            Expr::Neg(x) => CE::Neg(bx(self.expr(x)?)),
            Expr::Bin(op, x, y) => CE::Bin(*op, bx(self.expr(x)?), bx(self.expr(y)?)),
            Expr::Cmp(op, x, y) => CE::Cmp(*op, bx(self.expr(x)?), bx(self.expr(y)?)),
            Expr::Call(f, args) => {
                if args.len() != f.arity() {
                    return Err(miette!(
                        "{}: `{}` takes {} argument(s), got {}",
                        s.name,
                        f.name(),
                        f.arity(),
                        args.len()
                    ));
                }
                if f.float_only() && !T::FLOAT {
                    return Err(miette!(
                        help = "convert to a float type with cast<f32>(...) or make the left side a float tensor",
                        "{}: `{}` is defined on floating-point types only, and this statement computes in {}",
                        s.name,
                        f.name(),
                        s.dtype
                    ));
                }
                if *f == Func::RequantI8 {
                    if T::FLOAT {
                        return Err(miette!(
                            "{}: `requant_i8` requantises an integer, and this statement computes in {}",
                            s.name,
                            s.dtype
                        ));
                    }
                    let scale = match &args[1] {
                        Expr::Lit(v) => *v as f32,
                        Expr::Scalar(id) => match self.scalars.get(*id) {
                            Some(d) if d.len() == 1 => d.buf.get_f64(0) as f32,
                            _ => return Err(miette!("{}: scalar #{id} has no value", s.name)),
                        },
                        other => {
                            return Err(miette!(
                            "{}: the scale of `requant_i8` is a literal or a scalar, not {other:?}",
                            s.name
                        ))
                        }
                    };
                    return Ok(CE::Requant(bx(self.expr(&args[0])?), scale));
                }
                if f.arity() == 2 {
                    CE::F2(*f, bx(self.expr(&args[0])?), bx(self.expr(&args[1])?))
                } else {
                    CE::F1(*f, bx(self.expr(&args[0])?))
                }
            }
            Expr::Select(c, x, y) => {
                CE::Select(bx(self.expr(c)?), bx(self.expr(x)?), bx(self.expr(y)?))
            }
            Expr::Cast(t, x) => CE::Cast(*t, bx(self.expr(x)?)),
        })
    }
}

/// A compiled statement body.
enum Body<T> {
    /// Store this value.
    Init(T),
    /// `lhs op= e`.
    Update(AssignOp, CE<T>),
    /// `lhs += a * b` as one fused multiply-add ([`Num::FUSED_MAC`] types).
    Mac(CE<T>, CE<T>),
}

/// Runs one statement in type `T` with its loop indices fixed to `prefix` (the values of
/// the loops around it); returns the instance count.
fn run_stmt<T: Num>(
    prog: &Program,
    s: &Stmt,
    sizes: &[i64],
    tensors: &mut [TensorData],
    scalars: &[TensorData],
    prefix: &[i64],
) -> Result<u64> {
    let dom = Domain::new(prog, s, sizes)?;
    let n = s.iters.len();
    let mut it = vec![0i64; n];
    it[..prefix.len()].copy_from_slice(prefix);
    // A statement's own `where` on a loop index narrows the loop for it alone.
    for k in 0..prefix.len() {
        let (lo, hi) = dom.bounds(k, &it, sizes);
        if it[k] < lo || it[k] >= hi {
            return Ok(0);
        }
    }
    let mut c = Compiler {
        prog,
        stmt: s,
        sizes,
        tensors,
        scalars,
        acc: Vec::new(),
    };
    let lhs = Access::new(prog, s, s.lhs, &s.lhs_index, tensors, sizes)?;
    c.acc.push(lhs);
    let body = match &s.body {
        StmtBody::Init(op) => Body::Init(match op {
            AssignOp::Add | AssignOp::Assign => T::zero(),
            AssignOp::Mul => T::one(),
            AssignOp::Max => T::lowest(),
            AssignOp::Min => T::highest(),
        }),
        StmtBody::Update(AssignOp::Add, Expr::Bin(BinOp::Mul, a, b)) if T::FUSED_MAC => {
            Body::Mac(c.expr::<T>(a)?, c.expr::<T>(b)?)
        }
        StmtBody::Update(op, e) => Body::Update(*op, c.expr::<T>(e)?),
    };
    let acc = c.acc;
    let mut run = Run {
        dom: &dom,
        body: &body,
        acc: &acc,
        p: sizes,
        fast: Fast::default(),
        count: 0,
    };
    let r = if n == prefix.len() {
        run.count = 1;
        exec::<T, false>(&body, &acc, &it, sizes, &run.fast, tensors)
    } else {
        run.nest(prefix.len(), &mut it, tensors)
    };
    match r {
        Ok(()) => Ok(run.count),
        Err(f) => Err(describe(prog, s, &acc, &it, sizes, f)),
    }
}

/// The state of one statement's run.
struct Run<'a, T> {
    dom: &'a Domain,
    body: &'a Body<T>,
    acc: &'a [Access],
    p: &'a [i64],
    fast: Fast,
    count: u64,
}

impl<T: Num> Run<'_, T> {
    fn nest(
        &mut self,
        level: usize,
        it: &mut [i64],
        tensors: &mut [TensorData],
    ) -> std::result::Result<(), Fail> {
        let (lo, hi) = self.dom.bounds(level, it, self.p);
        if lo >= hi {
            return Ok(());
        }
        if level + 1 == it.len() {
            if self.fast.prepare(self.acc, level, lo, hi, it, self.p) {
                for v in lo..hi {
                    it[level] = v;
                    self.fast.v = v;
                    exec::<T, true>(self.body, self.acc, it, self.p, &self.fast, tensors)?;
                }
            } else {
                for v in lo..hi {
                    it[level] = v;
                    exec::<T, false>(self.body, self.acc, it, self.p, &self.fast, tensors)?;
                    self.count += 1;
                }
                return Ok(());
            }
            self.count += (hi - lo) as u64;
        } else {
            for v in lo..hi {
                it[level] = v;
                self.nest(level + 1, it, tensors)?;
            }
        }
        Ok(())
    }
}

/// Executes one instance.
#[inline(always)]
fn exec<T: Num, const FAST: bool>(
    body: &Body<T>,
    acc: &[Access],
    it: &[i64],
    p: &[i64],
    fast: &Fast,
    tensors: &mut [TensorData],
) -> std::result::Result<(), Fail> {
    let lhs = &acc[0];
    let off = if FAST {
        fast.offset(0)
    } else {
        lhs.offset(it, p).ok_or(Fail::Oob(0))?
    };
    let v = match body {
        Body::Init(v) => *v,
        Body::Mac(a, b) => {
            let cx = Cx {
                it,
                p,
                tensors,
                acc,
                fast,
            };
            let x = eval::<T, FAST>(a, &cx)?;
            let y = eval::<T, FAST>(b, &cx)?;
            T::load(&tensors[lhs.tensor].buf, off).mac(x, y)
        }
        Body::Update(op, e) => {
            let cx = Cx {
                it,
                p,
                tensors,
                acc,
                fast,
            };
            let x = eval::<T, FAST>(e, &cx)?;
            let buf = &tensors[lhs.tensor].buf;
            match op {
                AssignOp::Assign => x,
                AssignOp::Add => T::load(buf, off).add(x),
                AssignOp::Mul => T::load(buf, off).mul(x),
                AssignOp::Max => {
                    let old = T::load(buf, off);
                    if x > old {
                        x
                    } else {
                        old
                    }
                }
                AssignOp::Min => {
                    let old = T::load(buf, off);
                    if x < old {
                        x
                    } else {
                        old
                    }
                }
            }
        }
    };
    v.store(&mut tensors[lhs.tensor].buf, off);
    Ok(())
}

/// An integer `/` or `%` whose divisor was 0 at run time, in the kernel (which then
/// computes 0, and reports the statement) or in the interpreter (which stops).
///
/// polyc's rule for integer division (README, "Division by zero"): floats follow IEEE
/// (`x / 0` is ±∞ or NaN); for integers `x / 0` and `x % 0` are 0 and the run fails
/// with this error, located at the statement; `MIN / -1` wraps.
#[derive(Debug, Clone, thiserror::Error, miette::Diagnostic)]
#[error("{stmt_name}: integer {op} by zero{} (found by {by})", instance.as_ref().map(|i| format!(" at instance {i}")).unwrap_or_default())]
#[diagnostic(help(
    "the data has a zero divisor; guard it, e.g. `select(d != 0, n / d, 0)`, or compute in a float type"
))]
pub struct IntegerDivisionByZero {
    /// The statement's index in `Program::stmts`.
    pub stmt: usize,
    /// Its name, `S_k`.
    pub stmt_name: String,
    /// `division`, `remainder`, or `division or remainder` (the kernel does not say).
    pub op: &'static str,
    /// The instance, when known (`(i=1, j=2)`).
    pub instance: Option<String>,
    /// Who found it: the kernel or the interpreter.
    pub by: &'static str,
}

/// `(i=1, j=2)`.
fn instance_text(s: &Stmt, it: &[i64]) -> String {
    let parts: Vec<String> = s
        .iters
        .iter()
        .zip(it)
        .map(|(i, v)| format!("{}={v}", i.name))
        .collect();
    format!("({})", parts.join(", "))
}

/// Turns a failure into an error naming the statement and the instance.
fn describe(
    prog: &Program,
    s: &Stmt,
    acc: &[Access],
    it: &[i64],
    p: &[i64],
    f: Fail,
) -> miette::Report {
    let inst = instance_text(s, it);
    match f {
        Fail::DivZero | Fail::RemZero => miette::Report::new(IntegerDivisionByZero {
            stmt: prog
                .stmts
                .iter()
                .position(|t| std::ptr::eq(t, s))
                .unwrap_or(0),
            stmt_name: s.name.clone(),
            op: if matches!(f, Fail::RemZero) {
                "remainder"
            } else {
                "division"
            },
            instance: Some(inst),
            by: "the reference interpreter",
        }),
        Fail::Oob(a) => {
            let a = &acc[a];
            let idx: Vec<String> = a.dims.iter().map(|d| d.eval(it, p).to_string()).collect();
            let shape: Vec<String> = a.extents.iter().map(|e| e.to_string()).collect();
            miette!(
                help = "the statement's ranges let this access leave the tensor; restrict the iterator with `where`",
                "{}: access {}({}) is outside the tensor's shape ({}) at instance {inst}",
                s.name,
                prog.tensors[a.tensor].name,
                idx.join(", "),
                shape.join(", ")
            )
        }
    }
}

/// Checks that the buffers match the program for these sizes.
fn check_buffers(
    prog: &Program,
    sizes: &[i64],
    tensors: &[TensorData],
    scalars: &[TensorData],
) -> Result<()> {
    if sizes.len() != prog.params.len() {
        return Err(miette!(
            "`{}` has {} size parameter(s) but {} value(s) were given",
            prog.name,
            prog.params.len(),
            sizes.len()
        ));
    }
    if tensors.len() != prog.tensors.len() {
        return Err(miette!(
            "`{}` has {} tensors but {} buffers were given",
            prog.name,
            prog.tensors.len(),
            tensors.len()
        ));
    }
    for (t, (decl, data)) in prog.tensors.iter().zip(tensors).enumerate() {
        for a in &decl.shape {
            check_aff(a, 0, prog.params.len())
                .map_err(|e| miette!("tensor `{}` has a malformed shape: {e}", decl.name))?;
        }
        let shape = TensorData::shape_of(prog, t, sizes);
        if data.dtype() != decl.dtype
            || data.shape != shape
            || data.len() != shape.iter().product::<usize>()
        {
            return Err(miette!(
                "tensor `{}` must be {} of shape {:?}, the buffer given is {} of shape {:?}",
                decl.name,
                decl.dtype,
                shape,
                data.dtype(),
                data.shape
            ));
        }
    }
    if scalars.len() != prog.scalars.len() {
        return Err(miette!(
            "`{}` has {} scalar input(s) but {} value(s) were given",
            prog.name,
            prog.scalars.len(),
            scalars.len()
        ));
    }
    for (decl, data) in prog.scalars.iter().zip(scalars) {
        if data.dtype() != decl.dtype || data.len() != 1 {
            return Err(miette!(
                "scalar `{}` must be one {} value, the value given is {} of shape {:?}",
                decl.name,
                decl.dtype,
                data.dtype(),
                data.shape
            ));
        }
    }
    Ok(())
}

/// Runs the program in its reference order (see the module documentation for the exact
/// arithmetic).
///
/// `sizes` holds every size's value ([`Program::params`] order). `tensors` is indexed by
/// [`crate::ir::TensorId`]: inputs filled, outputs and temporaries pre-filled by the
/// caller (normally [`TensorData::poisoned`]); they are updated in place. `scalars` is
/// indexed by [`crate::ir::ScalarId`], each a single value.
///
/// Errors: buffers whose type or shape disagree with the program, malformed statements,
/// an out-of-bounds access, an integer division by zero. On an error the tensors hold
/// whatever the statements before the failing instance wrote.
pub fn interpret(
    prog: &Program,
    sizes: &[i64],
    tensors: &mut [TensorData],
    scalars: &[TensorData],
) -> Result<InterpStats> {
    check_buffers(prog, sizes, tensors, scalars)?;
    let all: Vec<usize> = (0..prog.stmts.len()).collect();
    let items = prog.order_items(&all);
    let mut instances = 0u64;
    let mut data = Data {
        prog,
        sizes,
        tensors,
        scalars,
    };
    run_items(&mut data, &items, &mut Vec::new(), &mut instances)?;
    Ok(InterpStats { instances })
}

/// What the interpreter runs on.
struct Data<'a, 'b> {
    prog: &'a Program,
    sizes: &'a [i64],
    tensors: &'b mut [TensorData],
    scalars: &'a [TensorData],
}

/// Runs `items` in program order with the enclosing loops' indices at `prefix`: a
/// statement over its domain, a loop iteration by iteration.
fn run_items(
    d: &mut Data,
    items: &[OrderItem],
    prefix: &mut Vec<i64>,
    instances: &mut u64,
) -> Result<()> {
    for item in items {
        match item {
            OrderItem::Stmt(i) => {
                let s = &d.prog.stmts[*i];
                let (p, sz, t, sc) = (d.prog, d.sizes, &mut *d.tensors, d.scalars);
                let n = match s.dtype {
                    DType::F16 => run_stmt::<f16>(p, s, sz, t, sc, prefix)?,
                    DType::F32 => run_stmt::<f32>(p, s, sz, t, sc, prefix)?,
                    DType::F64 => run_stmt::<f64>(p, s, sz, t, sc, prefix)?,
                    DType::I8 => run_stmt::<I8w>(p, s, sz, t, sc, prefix)?,
                    DType::I32 => run_stmt::<i32>(p, s, sz, t, sc, prefix)?,
                    DType::I64 => run_stmt::<i64>(p, s, sz, t, sc, prefix)?,
                };
                *instances = instances.saturating_add(n);
            }
            OrderItem::Loop(id, body) => {
                let l = &d.prog.loops[*id];
                let lo = l.lower.iter().map(|a| a.eval(prefix, d.sizes)).max();
                let hi = l.upper.iter().map(|a| a.eval(prefix, d.sizes)).min();
                let (Some(lo), Some(hi)) = (lo, hi) else {
                    return Err(miette!("loop `{}` has no lower or no upper bound", l.name));
                };
                for v in lo..hi {
                    prefix.push(v);
                    run_items(d, body, prefix, instances)?;
                    prefix.pop();
                }
            }
        }
    }
    Ok(())
}

/// The exact number of statement instances for these sizes, saturating at `u64::MAX`;
/// an error for a malformed program (wrong number of sizes, a bound that uses a later
/// iterator, …).
///
/// Innermost iterators whose bounds only use outer iterators form a box and are
/// multiplied; only the loops outside that box are enumerated (none for a rectangular
/// domain).
pub fn try_count_instances(prog: &Program, sizes: &[i64]) -> Result<u64> {
    if sizes.len() != prog.params.len() {
        return Err(miette!(
            "`{}` has {} size parameter(s) but {} value(s) were given",
            prog.name,
            prog.params.len(),
            sizes.len()
        ));
    }
    let mut total = 0u64;
    for s in &prog.stmts {
        let d = Domain::new(prog, s, sizes)?;
        total = total.saturating_add(d.count(sizes));
    }
    Ok(total)
}

/// The number of statement instances, to decide whether the interpreter is affordable:
/// [`try_count_instances`], with `u64::MAX` ("unaffordable") for a malformed program.
pub fn count_instances(prog: &Program, sizes: &[i64]) -> u64 {
    try_count_instances(prog, sizes).unwrap_or(u64::MAX)
}
