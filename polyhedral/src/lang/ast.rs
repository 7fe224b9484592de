//! The syntax tree the parser builds, before names are resolved.

use crate::ir::{AssignOp, BinOp, CmpOp, DType, Span};

/// A name and where it is written.
#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    /// The text.
    pub name: String,
    /// Where.
    pub span: Span,
}

/// A type name.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TypeName {
    /// The type.
    pub dtype: DType,
    /// Where it is written.
    pub span: Span,
}

/// One `def`.
#[derive(Clone, Debug, PartialEq)]
pub struct Def {
    /// Its name.
    pub name: Ident,
    /// The `def` parameters, in order.
    pub params: Vec<ParamDecl>,
    /// The outputs, in order.
    pub outputs: Vec<OutputDecl>,
    /// The statements, in order.
    pub stmts: Vec<Stmt>,
    /// Temporaries declared in the body (`f32(T, N) U`), in order: their type and shape
    /// are given, not inferred from the first write.
    pub locals: Vec<OutputDecl>,
    /// From `def` to the closing `}`.
    pub span: Span,
}

/// A `def` parameter.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamDecl {
    /// `f32(H, W) A`
    Tensor {
        /// Element type.
        ty: TypeName,
        /// One extent per dimension.
        shape: Vec<Expr>,
        /// Name.
        name: Ident,
    },
    /// `f32 bias`
    Scalar {
        /// Type.
        ty: TypeName,
        /// Name.
        name: Ident,
    },
}

impl ParamDecl {
    /// The declared name.
    pub fn name(&self) -> &Ident {
        match self {
            ParamDecl::Tensor { name, .. } | ParamDecl::Scalar { name, .. } => name,
        }
    }
}

/// An output: `f32(M, N) C`, `f32 C` (shape inferred) or `C` (type and shape inferred).
#[derive(Clone, Debug, PartialEq)]
pub struct OutputDecl {
    /// Declared element type.
    pub ty: Option<TypeName>,
    /// Declared shape.
    pub shape: Option<Vec<Expr>>,
    /// Name.
    pub name: Ident,
}

/// `lhs(index, …) op rhs [where ranges]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    /// The written tensor.
    pub lhs: Ident,
    /// Its indices.
    pub lhs_index: Vec<Expr>,
    /// The whole left-hand access.
    pub lhs_span: Span,
    /// The operator without `!`.
    pub op: AssignOp,
    /// True for `op=!`.
    pub init: bool,
    /// The operator as written.
    pub op_span: Span,
    /// The right-hand side.
    pub rhs: Expr,
    /// `where` ranges.
    pub ranges: Vec<Range>,
    /// TC's `where exists e` clauses: expressions whose accesses take part in range
    /// inference without being computed.
    pub exists: Vec<Expr>,
    /// The whole statement.
    pub span: Span,
    /// The `for` loops around the statement, outermost first.
    pub loops: Vec<LoopHead>,
}

/// The head of a sequential loop `for t in lo:hi { … }`.
#[derive(Clone, Debug, PartialEq)]
pub struct LoopHead {
    /// Numbers the loops of a def in textual order (two loops with the same index name
    /// are different loops).
    pub id: usize,
    /// The loop index and its half-open range.
    pub range: Range,
    /// From `for` to the `{` that opens the body.
    pub span: Span,
}

/// `i in lo:hi`
#[derive(Clone, Debug, PartialEq)]
pub struct Range {
    /// The index.
    pub iter: Ident,
    /// Inclusive lower bound.
    pub lo: Expr,
    /// Exclusive upper bound.
    pub hi: Expr,
    /// The whole range.
    pub span: Span,
}

/// An expression (values, indices, shapes and bounds all use this syntax).
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// What it is.
    pub kind: ExprKind,
    /// Where.
    pub span: Span,
    /// Height of the tree (a leaf is 1); bounded by the parser so that later recursive
    /// passes cannot overflow the stack.
    pub depth: usize,
}

/// Expression kinds.
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// An integer literal.
    Int(i64),
    /// A literal with a fractional part or an exponent.
    Float(f64),
    /// A bare name (index, size or scalar).
    Name(String),
    /// `name(args)`: a tensor access or a function call.
    Call {
        /// The tensor or function.
        name: Ident,
        /// Arguments.
        args: Vec<Expr>,
    },
    /// `cast<T>(e)`
    Cast {
        /// Target type.
        ty: TypeName,
        /// Operand.
        arg: Box<Expr>,
    },
    /// `-e`
    Neg(Box<Expr>),
    /// Arithmetic.
    Bin(BinOp, Box<Expr>, Box<Expr>),
    /// Comparison.
    Cmp(CmpOp, Box<Expr>, Box<Expr>),
}

impl Expr {
    /// A leaf.
    pub fn leaf(kind: ExprKind, span: Span) -> Expr {
        Expr {
            kind,
            span,
            depth: 1,
        }
    }
}
