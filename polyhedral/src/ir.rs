//! The resolved, typed program that every later stage works from.
//!
//! The front end ([`crate::lang`]) turns a `.tc` source into a [`Program`]: names are
//! resolved to ids, statements are numbered `S_0, S_1, …` (reduction inits counted), every
//! statement knows its iterators and their ranges, and every tensor knows its shape and
//! element type. Nothing here refers to the surface syntax except the [`Span`]s kept for
//! diagnostics, so targets can emit code from it without knowing the language.

use std::fmt;

/// A byte range in the source file, kept for diagnostics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Span {
    /// Byte offset of the first character.
    pub start: usize,
    /// Byte offset one past the last character.
    pub end: usize,
}

impl Span {
    /// A span from `start` to `end` (byte offsets).
    pub fn new(start: usize, end: usize) -> Self {
        Span { start, end }
    }
    /// The smallest span covering both.
    pub fn join(self, other: Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }
    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.end.saturating_sub(self.start)
    }
    /// True for an empty span.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The six element types of the language.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// IEEE half precision.
    F16,
    /// IEEE single precision.
    F32,
    /// IEEE double precision.
    F64,
    /// Signed 8-bit integer.
    I8,
    /// Signed 32-bit integer.
    I32,
    /// Signed 64-bit integer.
    I64,
}

impl DType {
    /// All types, in the order the language lists them.
    pub const ALL: [DType; 6] = [
        DType::F16,
        DType::F32,
        DType::F64,
        DType::I8,
        DType::I32,
        DType::I64,
    ];
    /// The name used in `.tc` sources (`f32`, `i8`, …).
    pub fn name(self) -> &'static str {
        match self {
            DType::F16 => "f16",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::I8 => "i8",
            DType::I32 => "i32",
            DType::I64 => "i64",
        }
    }
    /// Parses a `.tc` type name.
    pub fn from_name(s: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == s)
    }
    /// The C type the emitters use (`_Float16` for f16).
    pub fn c_type(self) -> &'static str {
        match self {
            DType::F16 => "_Float16",
            DType::F32 => "float",
            DType::F64 => "double",
            DType::I8 => "int8_t",
            DType::I32 => "int32_t",
            DType::I64 => "int64_t",
        }
    }
    /// Size of one element in bytes.
    pub fn size_bytes(self) -> usize {
        match self {
            DType::F16 => 2,
            DType::F32 => 4,
            DType::F64 => 8,
            DType::I8 => 1,
            DType::I32 => 4,
            DType::I64 => 8,
        }
    }
    /// True for f16, f32, f64.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::F32 | DType::F64)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A quasi-affine integer expression over a statement's iterators and the size parameters.
///
/// Tensor shapes use only [`Aff::Param`] and constants; indices and ranges may also use
/// [`Aff::Iter`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Aff {
    /// An integer constant.
    Const(i64),
    /// The statement iterator with this position in [`Stmt::iters`].
    Iter(usize),
    /// The size parameter with this position in [`Program::params`].
    Param(usize),
    /// Sum.
    Add(Box<Aff>, Box<Aff>),
    /// Difference.
    Sub(Box<Aff>, Box<Aff>),
    /// Product of a constant and an expression.
    Mul(i64, Box<Aff>),
    /// Negation.
    Neg(Box<Aff>),
    /// `floordiv(e, c)` with a positive constant `c` (rounds towards −∞).
    FloorDiv(Box<Aff>, i64),
    /// `e % c` with a positive constant `c` (the result is in `[0, c)`).
    Mod(Box<Aff>, i64),
}

impl Aff {
    /// Whether the expression mentions iterator `i` (syntactically: `0 * i` counts).
    pub fn uses_iter(&self, i: usize) -> bool {
        match self {
            Aff::Const(_) | Aff::Param(_) => false,
            Aff::Iter(j) => *j == i,
            Aff::Add(a, b) | Aff::Sub(a, b) => a.uses_iter(i) || b.uses_iter(i),
            Aff::Mul(_, a) | Aff::Neg(a) | Aff::FloorDiv(a, _) | Aff::Mod(a, _) => a.uses_iter(i),
        }
    }

    /// Evaluates with concrete iterator and parameter values.
    pub fn eval(&self, iters: &[i64], params: &[i64]) -> i64 {
        match self {
            Aff::Const(c) => *c,
            Aff::Iter(i) => iters[*i],
            Aff::Param(p) => params[*p],
            Aff::Add(a, b) => a.eval(iters, params) + b.eval(iters, params),
            Aff::Sub(a, b) => a.eval(iters, params) - b.eval(iters, params),
            Aff::Mul(c, a) => c * a.eval(iters, params),
            Aff::Neg(a) => -a.eval(iters, params),
            Aff::FloorDiv(a, c) => a.eval(iters, params).div_euclid(*c),
            Aff::Mod(a, c) => a.eval(iters, params).rem_euclid(*c),
        }
    }

    /// Renders the expression with the given names for iterators and parameters, in a
    /// syntax that is both valid isl and valid `.tc` (`floor(e/c)` is printed as
    /// `floor((e)/c)`, which isl reads; use [`Aff::to_c`] for C).
    pub fn to_isl(&self, iter_names: &[String], param_names: &[String]) -> String {
        match self {
            Aff::Const(c) => format!("{c}"),
            Aff::Iter(i) => iter_names[*i].clone(),
            Aff::Param(p) => param_names[*p].clone(),
            Aff::Add(a, b) => format!(
                "({} + {})",
                a.to_isl(iter_names, param_names),
                b.to_isl(iter_names, param_names)
            ),
            Aff::Sub(a, b) => format!(
                "({} - {})",
                a.to_isl(iter_names, param_names),
                b.to_isl(iter_names, param_names)
            ),
            Aff::Mul(c, a) => format!("({c} * {})", a.to_isl(iter_names, param_names)),
            Aff::Neg(a) => format!("(-{})", a.to_isl(iter_names, param_names)),
            Aff::FloorDiv(a, c) => format!("floor(({})/{c})", a.to_isl(iter_names, param_names)),
            Aff::Mod(a, c) => format!("(({}) mod {c})", a.to_isl(iter_names, param_names)),
        }
    }

    /// Renders the expression as C over `int64_t` values, using the helper macros
    /// `polyc_floord(a, b)` and `polyc_mod(a, b)` that every emitted C file defines.
    pub fn to_c(&self, iter_names: &[String], param_names: &[String]) -> String {
        match self {
            Aff::Const(c) => format!("{c}"),
            Aff::Iter(i) => iter_names[*i].clone(),
            Aff::Param(p) => param_names[*p].clone(),
            Aff::Add(a, b) => format!(
                "({} + {})",
                a.to_c(iter_names, param_names),
                b.to_c(iter_names, param_names)
            ),
            Aff::Sub(a, b) => format!(
                "({} - {})",
                a.to_c(iter_names, param_names),
                b.to_c(iter_names, param_names)
            ),
            Aff::Mul(c, a) => format!("({c} * {})", a.to_c(iter_names, param_names)),
            Aff::Neg(a) => format!("(-{})", a.to_c(iter_names, param_names)),
            Aff::FloorDiv(a, c) => {
                format!("polyc_floord({}, {c})", a.to_c(iter_names, param_names))
            }
            Aff::Mod(a, c) => format!("polyc_mod({}, {c})", a.to_c(iter_names, param_names)),
        }
    }

    /// True if the expression mentions no iterator.
    pub fn is_param_only(&self) -> bool {
        match self {
            Aff::Const(_) | Aff::Param(_) => true,
            Aff::Iter(_) => false,
            Aff::Add(a, b) | Aff::Sub(a, b) => a.is_param_only() && b.is_param_only(),
            Aff::Mul(_, a) | Aff::Neg(a) | Aff::FloorDiv(a, _) | Aff::Mod(a, _) => {
                a.is_param_only()
            }
        }
    }
}

/// A tensor's role in its `def`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TensorRole {
    /// A tensor parameter (read, and possibly updated in place).
    Input,
    /// A result of the `def`.
    Output,
    /// Written and read inside the `def` only; emitted code allocates it inside.
    Temp,
}

/// Index of a tensor in [`Program::tensors`].
pub type TensorId = usize;
/// Index of a scalar input in [`Program::scalars`].
pub type ScalarId = usize;

/// A tensor with its shape and element type.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    /// Source name.
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// Extent of each dimension (parameter-only affine expressions), row-major.
    pub shape: Vec<Aff>,
    /// Input, output or temporary.
    pub role: TensorRole,
    /// Where the tensor is declared (or first written, for an inferred one).
    pub span: Span,
}

/// A scalar input (`f32 bias`).
#[derive(Clone, Debug, PartialEq)]
pub struct Scalar {
    /// Source name.
    pub name: String,
    /// Type.
    pub dtype: DType,
    /// Declaration.
    pub span: Span,
}

/// Where an iterator's range comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum RangeSource {
    /// An explicit `where i in lo:hi`.
    Where,
    /// Inferred from the accesses the iterator appears in.
    Inferred,
}

/// A statement iterator and its half-open range `max(lower) <= i < min(upper)`.
///
/// Bounds may use size parameters and the iterators before this one.
#[derive(Clone, Debug, PartialEq)]
pub struct Iter {
    /// Source name.
    pub name: String,
    /// Lower bounds (the range starts at their maximum). Never empty.
    pub lower: Vec<Aff>,
    /// Upper bounds, exclusive (the range ends before their minimum). Never empty.
    pub upper: Vec<Aff>,
    /// Explicit or inferred.
    pub source: RangeSource,
    /// First mention of the iterator.
    pub span: Span,
}

/// The update operator of a statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AssignOp {
    /// `=`
    Assign,
    /// `+=` (the update of `+=!` too)
    Add,
    /// `*=`
    Mul,
    /// `max=`
    Max,
    /// `min=`
    Min,
}

impl AssignOp {
    /// The source spelling (`+=`, `max=`, …).
    pub fn symbol(self) -> &'static str {
        match self {
            AssignOp::Assign => "=",
            AssignOp::Add => "+=",
            AssignOp::Mul => "*=",
            AssignOp::Max => "max=",
            AssignOp::Min => "min=",
        }
    }
}

/// A binary arithmetic operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/` (truncating for integers, as in C)
    Div,
    /// `%` (C remainder for integers, `fmod` for floats)
    Rem,
}

/// A comparison; it yields 1 or 0 in the statement's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

impl BinOp {
    /// The operator as the language and C write it.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
        }
    }
}

impl CmpOp {
    /// The comparison as the language and C write it.
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
        }
    }
}

/// Built-in functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Func {
    /// e^x (floats only)
    Exp,
    /// natural log (floats only)
    Log,
    /// square root (floats only)
    Sqrt,
    /// 1/sqrt(x) (floats only)
    Rsqrt,
    /// absolute value
    Abs,
    /// hyperbolic tangent (floats only)
    Tanh,
    /// 1/(1+e^-x) (floats only)
    Sigmoid,
    /// max(x, 0)
    Relu,
    /// larger of two (`a > b ? a : b`)
    Max,
    /// smaller of two (`a < b ? a : b`)
    Min,
    /// saturation to int8: `x < -128 ? -128 : x > 127 ? 127 : x` (integers only). Only the
    /// whole right side of a statement into an `i8` tensor, which then computes in `i32`
    /// (its reads are not narrowed first) and stores the saturated value.
    SatI8,
    /// Requantisation to int8, as Gemmini's `mvout` scales accumulator rows
    /// (`ACC_SCALE`): `requant_i8(x, s)` converts the integer `x` to f32, multiplies it by
    /// the f32 scale `s` in f32, rounds half to even and saturates to [-128, 127] (NaN
    /// gives 0). The scale (second argument) is an f32 scalar input or a literal taken as
    /// f32, never converted to the statement's type. Only in an `i8` statement's
    /// `sat_i8(x * s)` (which computes in `i32`); the language writes it `sat_i8(x * s)`.
    RequantI8,
}

impl Func {
    /// Every built-in function.
    pub const ALL: [Func; 12] = [
        Func::Exp,
        Func::Log,
        Func::Sqrt,
        Func::Rsqrt,
        Func::Abs,
        Func::Tanh,
        Func::Sigmoid,
        Func::Relu,
        Func::Max,
        Func::Min,
        Func::SatI8,
        Func::RequantI8,
    ];
    /// Source name.
    pub fn name(self) -> &'static str {
        match self {
            Func::Exp => "exp",
            Func::Log => "log",
            Func::Sqrt => "sqrt",
            Func::Rsqrt => "rsqrt",
            Func::Abs => "abs",
            Func::Tanh => "tanh",
            Func::Sigmoid => "sigmoid",
            Func::Relu => "relu",
            Func::Max => "max",
            Func::Min => "min",
            Func::SatI8 => "sat_i8",
            Func::RequantI8 => "requant_i8",
        }
    }
    /// Number of arguments.
    pub fn arity(self) -> usize {
        match self {
            Func::Max | Func::Min | Func::RequantI8 => 2,
            _ => 1,
        }
    }
    /// True if the function is defined only on floating-point types.
    pub fn float_only(self) -> bool {
        matches!(
            self,
            Func::Exp | Func::Log | Func::Sqrt | Func::Rsqrt | Func::Tanh | Func::Sigmoid
        )
    }
}

/// A right-hand-side expression.
///
/// Typing rule: arithmetic happens in the statement's type ([`Stmt::dtype`], the left
/// side's). Every tensor read and scalar is converted to it first (so i8 operands of an
/// i32 statement are widened), literals are taken in it, comparisons yield 1 or 0 in it,
/// and `cast<T>(e)` converts `e` to `T` and back (the value is rounded or truncated as `T`
/// would hold it).
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A literal, as written (`2`, `0.5`, `1e-5`).
    Lit(f64),
    /// A scalar input.
    Scalar(ScalarId),
    /// The value of an iterator, converted to the statement's type.
    IterValue(usize),
    /// The value of a size parameter (`N` in `s(r) / N`), converted to the statement's
    /// type. Emitted code uses the bound constant or the `int64_t` size argument.
    SizeValue(usize),
    /// A tensor element.
    Read {
        /// The tensor.
        tensor: TensorId,
        /// One index per dimension.
        index: Vec<Aff>,
        /// The whole access in the source.
        span: Span,
    },
    /// Unary minus.
    Neg(Box<Expr>),
    /// Binary arithmetic.
    Bin(BinOp, Box<Expr>, Box<Expr>),
    /// Comparison (1 or 0).
    Cmp(CmpOp, Box<Expr>, Box<Expr>),
    /// Built-in call.
    Call(Func, Vec<Expr>),
    /// `select(cond, a, b)`: `a` where `cond` is non-zero, else `b`.
    Select(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `cast<T>(e)`.
    Cast(DType, Box<Expr>),
}

impl Expr {
    /// The direct subexpressions, left to right.
    pub fn children(&self) -> Vec<&Expr> {
        match self {
            Expr::Lit(_)
            | Expr::Scalar(_)
            | Expr::IterValue(_)
            | Expr::SizeValue(_)
            | Expr::Read { .. } => vec![],
            Expr::Neg(a) | Expr::Cast(_, a) => vec![a],
            Expr::Bin(_, a, b) | Expr::Cmp(_, a, b) => vec![a, b],
            Expr::Call(_, args) => args.iter().collect(),
            Expr::Select(c, a, b) => vec![c, a, b],
        }
    }

    /// The direct subexpressions, left to right, for rewriting in place.
    pub fn children_mut(&mut self) -> Vec<&mut Expr> {
        match self {
            Expr::Lit(_)
            | Expr::Scalar(_)
            | Expr::IterValue(_)
            | Expr::SizeValue(_)
            | Expr::Read { .. } => vec![],
            Expr::Neg(a) | Expr::Cast(_, a) => vec![a],
            Expr::Bin(_, a, b) | Expr::Cmp(_, a, b) => vec![a, b],
            Expr::Call(_, args) => args.iter_mut().collect(),
            Expr::Select(c, a, b) => vec![c, a, b],
        }
    }

    /// Calls `f` on every tensor read, left to right.
    pub fn for_each_read<'a>(&'a self, f: &mut impl FnMut(TensorId, &'a [Aff], Span)) {
        match self {
            Expr::Lit(_) | Expr::Scalar(_) | Expr::IterValue(_) | Expr::SizeValue(_) => {}
            Expr::Read {
                tensor,
                index,
                span,
            } => f(*tensor, index, *span),
            Expr::Neg(a) | Expr::Cast(_, a) => a.for_each_read(f),
            Expr::Bin(_, a, b) | Expr::Cmp(_, a, b) => {
                a.for_each_read(f);
                b.for_each_read(f);
            }
            Expr::Call(_, args) => args.iter().for_each(|a| a.for_each_read(f)),
            Expr::Select(c, a, b) => {
                c.for_each_read(f);
                a.for_each_read(f);
                b.for_each_read(f);
            }
        }
    }
}

/// The right-hand side of a statement.
#[derive(Clone, Debug, PartialEq)]
pub enum StmtBody {
    /// The init of an `op=!` reduction: the left side is set to the identity of `op`
    /// (0 for `+`, 1 for `*`, the lowest value for `max`, the highest for `min`).
    Init(AssignOp),
    /// `lhs op= expr` (for `=`, `lhs = expr`).
    Update(AssignOp, Expr),
}

/// One numbered statement `S_i`.
#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    /// `S_0`, `S_1`, … in textual order over the `def`, inits counted.
    pub name: String,
    /// Iteration space: the indices of the loops around the statement, then left-hand
    /// indices, then reduction indices in order of first appearance. An init statement
    /// has only the loop and left-hand indices.
    pub iters: Vec<Iter>,
    /// Number of loop and left-hand indices (the prefix of `iters` that is not reduced).
    pub n_lhs_iters: usize,
    /// The written tensor.
    pub lhs: TensorId,
    /// Its index expressions.
    pub lhs_index: Vec<Aff>,
    /// What is computed.
    pub body: StmtBody,
    /// Arithmetic type (the left side's element type).
    pub dtype: DType,
    /// The whole statement in the source.
    pub span: Span,
    /// The left-hand access in the source.
    pub lhs_span: Span,
    /// The sequential loops around the statement ([`Program::loops`] ids), outermost
    /// first. Their indices are the statement's first iterators: `iters[k]` is the index
    /// of loop `loops[k]` (and counts among the [`Stmt::n_lhs_iters`]).
    pub loops: Vec<usize>,
}

/// A sequential loop `for t in lo:hi { … }`: its body runs iteration by iteration, and
/// within one iteration its statements (and inner loops) in textual order, each over its
/// whole domain.
#[derive(Clone, Debug, PartialEq)]
pub struct Loop {
    /// The index name.
    pub name: String,
    /// Lower bounds (the range starts at their maximum), over the enclosing loops'
    /// indices (`Aff::Iter(k)` is the index of the `k`-th enclosing loop) and sizes.
    pub lower: Vec<Aff>,
    /// Upper bounds, exclusive.
    pub upper: Vec<Aff>,
    /// Number of loops around this one.
    pub depth: usize,
    /// From `for` to the `{` that opens the body.
    pub span: Span,
}

/// One item of a body in program order: a statement, or a loop with its body.
#[derive(Clone, Debug, PartialEq)]
pub enum OrderItem {
    /// Statement `S_i`.
    Stmt(usize),
    /// Loop `id` ([`Program::loops`]) and the items of its body.
    Loop(usize, Vec<OrderItem>),
}

impl OrderItem {
    /// The statements of the item, in order.
    pub fn stmts(&self) -> Vec<usize> {
        match self {
            OrderItem::Stmt(i) => vec![*i],
            OrderItem::Loop(_, body) => body.iter().flat_map(OrderItem::stmts).collect(),
        }
    }
}

impl Stmt {
    /// Iterator names, in order.
    pub fn iter_names(&self) -> Vec<String> {
        self.iters.iter().map(|i| i.name.clone()).collect()
    }
    /// Every tensor read: the left side itself for `op=` updates (which read it), then the
    /// reads of the expression.
    pub fn reads(&self) -> Vec<(TensorId, Vec<Aff>, Span)> {
        let mut out = Vec::new();
        if let StmtBody::Update(op, e) = &self.body {
            if *op != AssignOp::Assign {
                out.push((self.lhs, self.lhs_index.clone(), self.lhs_span));
            }
            e.for_each_read(&mut |t, idx, sp| out.push((t, idx.to_vec(), sp)));
        }
        out
    }
}

/// A size parameter (`H`, `W`, …).
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    /// Source name.
    pub name: String,
    /// First mention.
    pub span: Span,
}

/// One `def`, resolved and typed.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// The `def`'s name; the emitted C function has this name.
    pub name: String,
    /// Size parameters in order of first appearance (this is also the order of the
    /// `int64_t` size arguments of emitted code).
    pub params: Vec<Param>,
    /// All tensors: inputs, outputs and temporaries.
    pub tensors: Vec<Tensor>,
    /// Scalar inputs.
    pub scalars: Vec<Scalar>,
    /// The `def`'s parameters in source order (tensor and scalar inputs interleaved).
    pub inputs: Vec<InputRef>,
    /// Output tensors in source order.
    pub outputs: Vec<TensorId>,
    /// Statements in reference order.
    pub stmts: Vec<Stmt>,
    /// The sequential loops, numbered in textual order.
    pub loops: Vec<Loop>,
}

/// Groups statements `which` (with their loop lists `loops`) at loop depth `depth`.
pub fn group_order(which: &[usize], loops: &[&[usize]], depth: usize) -> Vec<OrderItem> {
    let mut out = Vec::new();
    let mut k = 0;
    while k < which.len() {
        match loops[k].get(depth) {
            None => {
                out.push(OrderItem::Stmt(which[k]));
                k += 1;
            }
            Some(&id) => {
                let end = (k..which.len())
                    .find(|&e| loops[e].get(depth) != Some(&id))
                    .unwrap_or(which.len());
                let body = group_order(&which[k..end], &loops[k..end], depth + 1);
                out.push(OrderItem::Loop(id, body));
                k = end;
            }
        }
    }
    out
}

/// One parameter of a `def`, in source order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputRef {
    /// A tensor input.
    Tensor(TensorId),
    /// A scalar input.
    Scalar(ScalarId),
}

impl Program {
    /// The program order as a tree: the statements `which` selects, grouped by the
    /// loops around them (consecutive statements inside one loop form its body).
    pub fn order_items(&self, which: &[usize]) -> Vec<OrderItem> {
        let loops: Vec<&[usize]> = which
            .iter()
            .map(|&i| self.stmts[i].loops.as_slice())
            .collect();
        group_order(which, &loops, 0)
    }

    /// Parameter names in order.
    pub fn param_names(&self) -> Vec<String> {
        self.params.iter().map(|p| p.name.clone()).collect()
    }
    /// Position of a parameter by name.
    pub fn param_index(&self, name: &str) -> Option<usize> {
        self.params.iter().position(|p| p.name == name)
    }
    /// Tensors that are temporaries.
    pub fn temps(&self) -> impl Iterator<Item = TensorId> + '_ {
        self.tensors
            .iter()
            .enumerate()
            .filter(|(_, t)| t.role == TensorRole::Temp)
            .map(|(i, _)| i)
    }
    /// Finds a tensor by name.
    pub fn tensor_by_name(&self, name: &str) -> Option<TensorId> {
        self.tensors.iter().position(|t| t.name == name)
    }
}

/// FLOPs of one instance of a statement: one per arithmetic operator (`+ - * / %`,
/// unary minus), comparison, `select`, and built-in call (`exp`, `max`, `relu`, … each
/// count one), plus one for the combine of an `op=` update (`+=`, `*=`, `max=`, `min=`).
/// Reads, literals, casts and the inits of reductions count zero.
pub fn flops_per_instance(stmt: &Stmt) -> u64 {
    weighted_ops(stmt, &|_| 1)
}

/// [`flops_per_instance`] with each built-in call counting `call(f)` operations instead of
/// one (a cost model's price of `exp` or `tanh`).
pub fn weighted_ops(stmt: &Stmt, call: &dyn Fn(Func) -> u64) -> u64 {
    fn ops(e: &Expr, call: &dyn Fn(Func) -> u64) -> u64 {
        match e {
            Expr::Lit(_)
            | Expr::Scalar(_)
            | Expr::IterValue(_)
            | Expr::SizeValue(_)
            | Expr::Read { .. } => 0,
            Expr::Cast(_, a) => ops(a, call),
            Expr::Neg(a) => 1 + ops(a, call),
            Expr::Bin(_, a, b) | Expr::Cmp(_, a, b) => 1 + ops(a, call) + ops(b, call),
            Expr::Call(f, args) => call(*f) + args.iter().map(|a| ops(a, call)).sum::<u64>(),
            Expr::Select(c, a, b) => 1 + ops(c, call) + ops(a, call) + ops(b, call),
        }
    }
    match &stmt.body {
        StmtBody::Init(_) => 0,
        StmtBody::Update(AssignOp::Assign, e) => ops(e, call),
        StmtBody::Update(_, e) => 1 + ops(e, call),
    }
}
