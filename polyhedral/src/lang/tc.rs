//! What is particular to Tensor Comprehensions (TC) files: TC's type names and their
//! polyc element types, TC's type promotion (to infer the type of an output), TC's
//! built-in functions, detection of a TC file, and `where x = e` let substitution.
//!
//! The parser and the resolver ([`super::parser`], [`super::sema`]) read TC files with a
//! flag; this module holds the tables and small helpers they share.

use super::ast::{Expr, ExprKind};
use super::lexer::{Tok, Token};
use crate::ir::{DType, Func};

/// TC's scalar type names, with the polyc element type each maps to (`None`: polyc has no
/// such type and says so).
pub const TYPES: [(&str, TcType, Option<DType>); 15] = [
    ("bool", TcType::new(TcKind::Bool, 1), None),
    ("uint8", TcType::new(TcKind::UInt, 8), None),
    ("uint16", TcType::new(TcKind::UInt, 16), None),
    ("uint32", TcType::new(TcKind::UInt, 32), None),
    ("uint64", TcType::new(TcKind::UInt, 64), None),
    ("int8", TcType::new(TcKind::Int, 8), Some(DType::I8)),
    ("int16", TcType::new(TcKind::Int, 16), None),
    ("int32", TcType::new(TcKind::Int, 32), Some(DType::I32)),
    ("int64", TcType::new(TcKind::Int, 64), Some(DType::I64)),
    ("half", TcType::new(TcKind::Float, 16), Some(DType::F16)),
    ("float16", TcType::new(TcKind::Float, 16), Some(DType::F16)),
    ("float", TcType::new(TcKind::Float, 32), Some(DType::F32)),
    ("float32", TcType::new(TcKind::Float, 32), Some(DType::F32)),
    ("double", TcType::new(TcKind::Float, 64), Some(DType::F64)),
    ("float64", TcType::new(TcKind::Float, 64), Some(DType::F64)),
];

/// The TC type names polyc compiles, as listed in errors.
pub const SUPPORTED_TYPES: &str =
    "float (float32), double (float64), half (float16), int8, int32 and int64";

/// The entry of a TC type name.
pub fn type_by_name(name: &str) -> Option<(TcType, Option<DType>)> {
    TYPES
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, t, d)| (*t, *d))
}

/// True for a TC scalar type name.
pub fn is_type_name(name: &str) -> bool {
    type_by_name(name).is_some()
}

/// The kind of a TC scalar type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcKind {
    /// Signed integers.
    Int,
    /// Unsigned integers.
    UInt,
    /// Floating point.
    Float,
    /// `bool` (what comparisons yield).
    Bool,
}

/// A TC scalar type: a kind and a width in bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcType {
    /// Integer, unsigned, float or bool.
    pub kind: TcKind,
    /// Width in bits.
    pub bits: u8,
}

impl TcType {
    /// A type of this kind and width.
    pub const fn new(kind: TcKind, bits: u8) -> TcType {
        TcType { kind, bits }
    }
    /// TC's type of integer literals, indices and sizes.
    pub const INT32: TcType = TcType::new(TcKind::Int, 32);
    /// TC's type of literals with a fraction or an exponent.
    pub const FLOAT: TcType = TcType::new(TcKind::Float, 32);
    /// What comparisons yield.
    pub const BOOL: TcType = TcType::new(TcKind::Bool, 1);

    /// The TC type of a polyc element type.
    pub fn of(d: DType) -> TcType {
        match d {
            DType::F16 => TcType::new(TcKind::Float, 16),
            DType::F32 => TcType::FLOAT,
            DType::F64 => TcType::new(TcKind::Float, 64),
            DType::I8 => TcType::new(TcKind::Int, 8),
            DType::I32 => TcType::INT32,
            DType::I64 => TcType::new(TcKind::Int, 64),
        }
    }

    /// The polyc element type, if there is one.
    pub fn dtype(self) -> Option<DType> {
        TYPES
            .iter()
            .find(|(_, t, d)| *t == self && d.is_some())
            .and_then(|(_, _, d)| *d)
    }

    /// TC's name of the type.
    pub fn name(self) -> &'static str {
        TYPES
            .iter()
            .find(|(n, t, _)| *t == self && !matches!(*n, "half" | "float32" | "float64"))
            .map_or("?", |(n, _, _)| n)
    }

    /// True for floating-point types.
    pub fn is_float(self) -> bool {
        self.kind == TcKind::Float
    }

    /// True for integer and bool types (TC's integral types).
    pub fn is_integral(self) -> bool {
        !self.is_float()
    }
}

/// TC's promotion of the two operand types of an arithmetic operation: an integer and a
/// float give the float; two floats, or two unsigned integers, the wider; two integers of
/// which one is signed, the signed integer of the larger width.
pub fn match_types(a: TcType, b: TcType) -> TcType {
    use TcKind::*;
    if a == b {
        return a;
    }
    match (a.is_float(), b.is_float()) {
        (false, true) => b,
        (true, false) => a,
        (true, true) => {
            if a.bits > b.bits {
                a
            } else {
                b
            }
        }
        (false, false) => {
            let bits = a.bits.max(b.bits);
            if matches!(a.kind, UInt | Bool) && matches!(b.kind, UInt | Bool) {
                TcType::new(UInt, bits)
            } else {
                TcType::new(Int, bits.max(8))
            }
        }
    }
}

/// A TC built-in function as polyc computes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Builtin {
    /// One of polyc's functions (`fmax` is [`Func::Max`], `fabs` is [`Func::Abs`], …).
    Func(Func),
    /// `fdivide(a, b)`: `a / b`.
    Fdivide,
    /// `fdim(a, b)`: `max(a - b, 0)`.
    Fdim,
    /// `fma(a, b, c)`: `a * b + c` (rounded twice, within the checks' tolerance).
    Fma,
}

impl Builtin {
    /// Number of arguments.
    pub fn arity(self) -> usize {
        match self {
            Builtin::Func(f) => f.arity(),
            Builtin::Fdivide | Builtin::Fdim => 2,
            Builtin::Fma => 3,
        }
    }
}

/// The TC built-ins polyc computes, as listed in errors.
pub const SUPPORTED_BUILTINS: &str = "exp, log, sqrt, rsqrt, tanh, fabs, fmax, fmin, fdivide, \
     fdim, fma, min and max (and polyc's abs, relu, sigmoid and select)";

/// TC's built-in functions that polyc does not compute (from TC's list of CUDA math
/// functions), with their arity.
const UNSUPPORTED_BUILTINS: &[(&str, usize)] = &[
    ("acos", 1),
    ("acosh", 1),
    ("asin", 1),
    ("asinh", 1),
    ("atan2", 2),
    ("atan", 1),
    ("atanh", 1),
    ("cbrt", 1),
    ("ceil", 1),
    ("copysign", 2),
    ("cos", 1),
    ("cosh", 1),
    ("cospi", 1),
    ("cyl_bessel_i0", 1),
    ("cyl_bessel_i1", 1),
    ("erfc", 1),
    ("erfcinv", 1),
    ("erfcx", 1),
    ("erf", 1),
    ("erfinv", 1),
    ("exp10", 1),
    ("exp2", 1),
    ("expm1", 1),
    ("floor", 1),
    ("fmod", 2),
    ("hypot", 2),
    ("j0", 1),
    ("j1", 1),
    ("lgamma", 1),
    ("log10", 1),
    ("log1p", 1),
    ("log2", 1),
    ("logb", 1),
    ("nextafter", 2),
    ("norm3d", 3),
    ("norm4d", 4),
    ("normcdf", 1),
    ("normcdfinv", 1),
    ("pow", 2),
    ("rcbrt", 1),
    ("remainder", 2),
    ("rhypot", 2),
    ("rnorm3d", 3),
    ("rnorm4d", 4),
    ("round", 1),
    ("sin", 1),
    ("sinh", 1),
    ("sinpi", 1),
    ("tan", 1),
    ("tgamma", 1),
    ("trunc", 1),
    ("y0", 1),
    ("y1", 1),
];

/// A TC built-in: `Some(Ok(b))` for one polyc computes, `Some(Err(()))` for one of TC's
/// built-ins that polyc does not compute, `None` for a name that is not a TC built-in.
#[allow(clippy::result_unit_err)]
pub fn builtin(name: &str) -> Option<Result<Builtin, ()>> {
    let f = match name {
        "exp" => Builtin::Func(Func::Exp),
        "log" => Builtin::Func(Func::Log),
        "sqrt" => Builtin::Func(Func::Sqrt),
        "rsqrt" => Builtin::Func(Func::Rsqrt),
        "tanh" => Builtin::Func(Func::Tanh),
        "fabs" => Builtin::Func(Func::Abs),
        "fmax" | "max" => Builtin::Func(Func::Max),
        "fmin" | "min" => Builtin::Func(Func::Min),
        "fdivide" => Builtin::Fdivide,
        "fdim" => Builtin::Fdim,
        "fma" => Builtin::Fma,
        _ => {
            return UNSUPPORTED_BUILTINS
                .iter()
                .any(|(n, _)| *n == name)
                .then_some(Err(()));
        }
    };
    Some(Ok(f))
}

/// True when the def headers in `toks` use TC's type names and not polyc's: some `def`
/// header (from `def` to its `{`) holds a TC type name followed by `(` or by a name, as in
/// `float(M, K) A` or `float alpha`, and none holds one of polyc's type names (`f32`, `i8`,
/// …) that way. A polyc file therefore never matches, and a file that mixes both is read
/// as polyc's language (whose error then names the TC type).
pub fn detect(toks: &[Token]) -> bool {
    let mut in_header = false;
    let (mut tc, mut polyc) = (false, false);
    for (i, t) in toks.iter().enumerate() {
        match &t.tok {
            Tok::Ident(s) if s == "def" => in_header = true,
            Tok::LBrace => in_header = false,
            Tok::Ident(s) if in_header => {
                let next = toks[i + 1..].iter().find(|t| t.tok != Tok::Newline);
                if matches!(next.map(|t| &t.tok), Some(Tok::LParen | Tok::Ident(_))) {
                    tc |= is_type_name(s);
                    polyc |= DType::from_name(s).is_some();
                }
            }
            _ => {}
        }
    }
    tc && !polyc
}

/// `e` with every bare name bound by a `where x = …` clause replaced by its expression
/// (the bindings are already substituted into one another, in order).
pub fn substitute(e: &Expr, lets: &[(String, Expr)]) -> Expr {
    if lets.is_empty() {
        return e.clone();
    }
    let kind = match &e.kind {
        ExprKind::Name(n) => {
            if let Some((_, v)) = lets.iter().rev().find(|(x, _)| x == n) {
                return v.clone();
            }
            return e.clone();
        }
        ExprKind::Int(_) | ExprKind::Float(_) => return e.clone(),
        ExprKind::Call { name, args } => ExprKind::Call {
            name: name.clone(),
            args: args.iter().map(|a| substitute(a, lets)).collect(),
        },
        ExprKind::Cast { ty, arg } => ExprKind::Cast {
            ty: *ty,
            arg: Box::new(substitute(arg, lets)),
        },
        ExprKind::Neg(a) => ExprKind::Neg(Box::new(substitute(a, lets))),
        ExprKind::Bin(op, a, b) => ExprKind::Bin(
            *op,
            Box::new(substitute(a, lets)),
            Box::new(substitute(b, lets)),
        ),
        ExprKind::Cmp(op, a, b) => ExprKind::Cmp(
            *op,
            Box::new(substitute(a, lets)),
            Box::new(substitute(b, lets)),
        ),
    };
    let depth = 1 + match &kind {
        ExprKind::Call { args, .. } => args.iter().map(|a| a.depth).max().unwrap_or(0),
        ExprKind::Cast { arg, .. } | ExprKind::Neg(arg) => arg.depth,
        ExprKind::Bin(_, a, b) | ExprKind::Cmp(_, a, b) => a.depth.max(b.depth),
        _ => 0,
    };
    Expr {
        kind,
        span: e.span,
        depth,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn promotion_follows_tc() {
        let i8t = TcType::new(TcKind::Int, 8);
        let u8t = TcType::new(TcKind::UInt, 8);
        let f64t = TcType::new(TcKind::Float, 64);
        assert_eq!(match_types(TcType::INT32, TcType::FLOAT), TcType::FLOAT);
        assert_eq!(match_types(TcType::FLOAT, f64t), f64t);
        assert_eq!(match_types(i8t, TcType::INT32), TcType::INT32);
        assert_eq!(match_types(u8t, i8t), i8t);
        assert_eq!(TcType::INT32.dtype(), Some(DType::I32));
        assert_eq!(u8t.dtype(), None);
        assert_eq!(u8t.name(), "uint8");
        assert_eq!(TcType::of(DType::F64).name(), "double");
    }

    #[test]
    fn builtins() {
        assert_eq!(builtin("fmax"), Some(Ok(Builtin::Func(Func::Max))));
        assert_eq!(builtin("pow"), Some(Err(())));
        assert_eq!(builtin("A"), None);
    }
}
