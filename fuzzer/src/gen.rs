//! Random valid programs in polyc's language, in the style of Csmith and YARPGen.
//!
//! A program is kept as a small typed AST ([`Prog`]) so that the shrinker can edit it
//! structurally, and rendered to `.tc` text by [`Prog::render`]. Every program the
//! generator or the shrinker produces passes [`Prog::validate`], which enforces the
//! properties that make it a fair test:
//!
//! - **In bounds for every size.** Tensor dimensions and loop ranges are built from five
//!   sizes (`N`/`i`, `M`/`j`, `K`/`k`, and the windows `R`/`r` and `S`/`s`) and the
//!   "valid" extents `N - R + 1` and `M - S + 1`. A read `X(i + r)` of a dimension of
//!   extent `N` from a statement whose `i` runs over `N - R + 1` stays inside for every
//!   value of the sizes, not only the bound ones.
//! - **Defined before read.** A tensor is read only after a statement wrote all of it (or
//!   it is an input, or an output that starts from given data); statements that write only
//!   part of a tensor (shifted reads such as `A(i - 1)`) only update tensors that are
//!   already whole.
//! - **Bounded values.** Every sub-expression has a magnitude bound, so floats never
//!   overflow and sums stay within the checker's tolerance whatever order a schedule adds
//!   them in, and integers never leave 2^28 (wrap-around is not what is tested).
//! - **No undefined operations.** Integer division and remainder only by positive
//!   literals; float division by `abs(x) + 1`; `sqrt` and `log` of non-negative values.

use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// The size names and the index each size's axis uses: `N`/`i`, `M`/`j`, `K`/`k` are data
/// axes, `R`/`r` and `S`/`s` the windows of `i` and `j`.
pub const SIZES: [(&str, &str); 5] = [("N", "i"), ("M", "j"), ("K", "k"), ("R", "r"), ("S", "s")];

/// The largest magnitude any float sub-expression or tensor may reach.
const FLOAT_LIMIT: f64 = 1e4;
/// The largest magnitude any integer sub-expression or tensor may reach.
const INT_LIMIT: f64 = (1u64 << 28) as f64;

/// The window family of a data family (`i` → `r`, `j` → `s`).
pub fn window_of(fam: u8) -> Option<u8> {
    match fam {
        0 => Some(3),
        1 => Some(4),
        _ => None,
    }
}

/// An element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DType {
    /// `f32`
    F32,
    /// `f64`
    F64,
    /// `i32`
    I32,
    /// `i8` (inputs of integer programs only: widened on read)
    I8,
}

impl DType {
    /// The type's name in the language.
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::I32 => "i32",
            DType::I8 => "i8",
        }
    }
    /// Whether the type is a float.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }
    /// The magnitude bound of generated input data (floats in [-1, 1), integers in [-8, 8]).
    fn input_bound(self) -> f64 {
        if self.is_float() {
            1.0
        } else {
            8.0
        }
    }
    /// The magnitude a reduction's operand may have (floats: so that a reordered sum stays
    /// within the checker's tolerance).
    fn reduce_limit(self) -> f64 {
        match self {
            DType::F32 => 16.0,
            DType::F64 => 1e3,
            _ => INT_LIMIT / 1e3,
        }
    }
    /// The largest magnitude a value of this type may reach.
    fn limit(self) -> f64 {
        if self.is_float() {
            FLOAT_LIMIT
        } else {
            INT_LIMIT
        }
    }
}

/// The extent of one axis: a size, or the valid extent of a window (`N - R + 1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ext {
    /// The size family (index into [`SIZES`]).
    pub fam: u8,
    /// `N - R + 1` instead of `N` (data families 0 and 1 only).
    pub valid: bool,
}

impl Ext {
    /// The whole size.
    pub fn full(fam: u8) -> Ext {
        Ext { fam, valid: false }
    }
    /// The extent as affine text, less `minus` (`N - R + 1`, `N - 1`).
    pub fn text_minus(&self, minus: i64) -> String {
        let (base, c) = match (self.valid, window_of(self.fam)) {
            (true, Some(w)) => (
                format!("{} - {}", SIZES[self.fam as usize].0, SIZES[w as usize].0),
                1 - minus,
            ),
            _ => (SIZES[self.fam as usize].0.to_string(), -minus),
        };
        match c.cmp(&0) {
            std::cmp::Ordering::Equal => base,
            std::cmp::Ordering::Greater => format!("{base} + {c}"),
            std::cmp::Ordering::Less => format!("{base} - {}", -c),
        }
    }
    /// The extent as affine text.
    pub fn text(&self) -> String {
        self.text_minus(0)
    }
    /// The extent's value at `sizes`.
    pub fn value(&self, sizes: &[i64; 5]) -> i64 {
        let base = sizes[self.fam as usize];
        match (self.valid, window_of(self.fam)) {
            (true, Some(w)) => base - sizes[w as usize] + 1,
            _ => base,
        }
    }
    /// Whether an index running over `inner` stays inside a dimension of this extent for
    /// every value of the sizes.
    pub fn covers(&self, inner: &Ext) -> bool {
        self.fam == inner.fam && (self.valid == inner.valid || !self.valid)
    }
}

/// What a tensor is to the `def`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    /// An input (may be updated in place).
    Input,
    /// An output; `inout` outputs start from given data (their first write is `+=`).
    Output {
        /// Starts from given data.
        inout: bool,
    },
    /// Written and read, neither input nor output.
    Temp,
}

/// A tensor of the program.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tensor {
    /// Its name.
    pub name: String,
    /// Its element type.
    pub dtype: DType,
    /// One extent per dimension (no family twice).
    pub dims: Vec<Ext>,
    /// Its role.
    pub role: Role,
}

/// One index of an access.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Idx {
    /// The family's index plus a small offset (`i`, `i - 1`).
    Var {
        /// The size family.
        fam: u8,
        /// The offset.
        off: i8,
    },
    /// A window: `i + r` (the family's index plus its window's).
    Win {
        /// The data family.
        fam: u8,
    },
    /// The constant 0 (a broadcast).
    Zero,
}

/// A binary operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Bin {
    /// `a + b`
    Add,
    /// `a - b`
    Sub,
    /// `a * b`
    Mul,
    /// floats: `a / (abs(b) + 1)`
    SafeDiv,
    /// `max(a, b)`
    Max,
    /// `min(a, b)`
    Min,
}

/// A unary function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Un {
    /// `-a`
    Neg,
    /// `abs(a)`
    Abs,
    /// `relu(a)`
    Relu,
    /// `tanh(a)` (floats)
    Tanh,
    /// `exp(a * 0.1)` (floats)
    Exp,
    /// `sigmoid(a)` (floats)
    Sigmoid,
    /// `sqrt(abs(a))` (floats)
    Sqrt,
    /// `log(abs(a) + 1)` (floats)
    Log,
    /// integers: `a / c` for a positive literal `c`
    DivBy(i64),
    /// integers: `a % c` for a positive literal `c`
    RemBy(i64),
}

/// A right-hand side expression.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Expr {
    /// A read of tensor `t`.
    Read {
        /// The tensor.
        t: usize,
        /// One index per dimension.
        idx: Vec<Idx>,
    },
    /// A scalar input.
    Scalar(usize),
    /// A literal.
    Lit(f64),
    /// The value of an index (`i`).
    Index(u8),
    /// A binary operation.
    Bin(Bin, Box<Expr>, Box<Expr>),
    /// A unary function.
    Un(Un, Box<Expr>),
    /// `select(a < b, x, y)`; `a` and `b` read inputs only (exact on every target).
    Select(Box<[Expr; 4]>),
}

/// The assignment operator of a statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    /// `=`
    Assign,
    /// `+=`
    Add,
    /// `*=`
    Mul,
    /// `max=`
    Max,
    /// `min=`
    Min,
}

impl Op {
    /// The operator as written (`+=!` with `init`).
    fn text(self, init: bool) -> String {
        let s = match self {
            Op::Assign => "=",
            Op::Add => "+=",
            Op::Mul => "*=",
            Op::Max => "max=",
            Op::Min => "min=",
        };
        if init && self != Op::Assign {
            format!("{s}!")
        } else {
            s.to_string()
        }
    }
}

/// A statement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stmt {
    /// The tensor written.
    pub lhs: usize,
    /// The operator.
    pub op: Op,
    /// `op=!`: initialise first.
    pub init: bool,
    /// The right side.
    pub rhs: Expr,
    /// The extent of every index the statement may use (the left side's from its
    /// dimensions, then the reduction indices).
    pub vars: Vec<Ext>,
    /// Give every index an explicit range (`where`), not only those that need one.
    pub explicit: bool,
}

/// A generated program.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Prog {
    /// The `def`'s name.
    pub name: String,
    /// The arithmetic type of every statement.
    pub dtype: DType,
    /// The values of `N, M, K, R, S`.
    pub sizes: [i64; 5],
    /// Tensors (inputs, outputs, temporaries).
    pub tensors: Vec<Tensor>,
    /// Scalar inputs (names; of the program's type).
    pub scalars: Vec<String>,
    /// Statements in order.
    pub stmts: Vec<Stmt>,
}

/// Where an index of a statement runs: `lo .. extent - hi`.
#[derive(Clone, Copy, Debug, Default)]
struct Margin {
    lo: i64,
    hi: i64,
    used: bool,
    /// Some access uses the index alone in a dimension of exactly its extent.
    exact: bool,
    /// Some access uses the index alone in a dimension of another extent (polyc's
    /// inference then sees several bounds and asks for a range).
    mixed: bool,
}

impl Expr {
    /// Calls `f` on every node, pre-order.
    pub fn visit(&self, f: &mut dyn FnMut(&Expr)) {
        f(self);
        match self {
            Expr::Bin(_, a, b) => {
                a.visit(f);
                b.visit(f);
            }
            Expr::Un(_, a) => a.visit(f),
            Expr::Select(v) => v.iter().for_each(|e| e.visit(f)),
            _ => {}
        }
    }
    /// The number of nodes.
    pub fn size(&self) -> usize {
        let mut n = 0;
        self.visit(&mut |_| n += 1);
        n
    }
}

/// The index name of a family.
fn var(fam: u8) -> &'static str {
    SIZES[fam as usize].1
}

/// One index as written (`i`, `i - 1`, `i + r`, `0`).
fn idx_text(i: &Idx) -> String {
    match *i {
        Idx::Var { fam, off } if off > 0 => format!("{} + {off}", var(fam)),
        Idx::Var { fam, off } if off < 0 => format!("{} - {}", var(fam), -off),
        Idx::Var { fam, .. } => var(fam).to_string(),
        Idx::Win { fam } => format!("{} + {}", var(fam), var(window_of(fam).unwrap_or(3))),
        Idx::Zero => "0".to_string(),
    }
}

/// A literal as written for a program of type `dtype` (negative ones in parentheses).
fn lit_text(v: f64, dtype: DType) -> String {
    let s = if dtype.is_float() {
        let s = format!("{v}");
        if s.contains('.') || s.contains('e') {
            s
        } else {
            format!("{s}.0")
        }
    } else {
        format!("{}", v as i64)
    };
    if v < 0.0 {
        format!("({s})")
    } else {
        s
    }
}

impl Prog {
    /// The program's `.tc` text.
    pub fn render(&self) -> String {
        let mut params = Vec::new();
        for t in self.tensors.iter().filter(|t| t.role == Role::Input) {
            params.push(format!(
                "{}({}) {}",
                t.dtype.name(),
                dims_text(&t.dims),
                t.name
            ));
        }
        for s in &self.scalars {
            params.push(format!("{} {s}", self.dtype.name()));
        }
        let outputs: Vec<String> = self
            .tensors
            .iter()
            .filter(|t| matches!(t.role, Role::Output { .. }))
            .map(|t| format!("{}({}) {}", t.dtype.name(), dims_text(&t.dims), t.name))
            .collect();
        let mut text = format!(
            "def {}({}) -> ({}) {{\n",
            self.name,
            params.join(", "),
            outputs.join(", ")
        );
        // A statement that writes a tensor an earlier statement reads goes into a loop of
        // one iteration: the program then says that it runs after the earlier statement
        // over its whole domain (polyc refuses plain statements a loop nest would
        // interleave), and the fuzzer exercises loops.
        let mut read_before = vec![false; self.tensors.len()];
        for s in &self.stmts {
            if read_before[s.lhs] {
                text.push_str("  for once in 0:1 {\n    ");
                text.push_str(&self.stmt_text(s));
                text.push_str("\n  }\n");
            } else {
                text.push_str("  ");
                text.push_str(&self.stmt_text(s));
                text.push('\n');
            }
            s.rhs.visit(&mut |e| {
                if let Expr::Read { t, .. } = e {
                    read_before[*t] = true;
                }
            });
        }
        text.push_str("}\n");
        text
    }

    /// One statement's text.
    pub fn stmt_text(&self, s: &Stmt) -> String {
        let t = &self.tensors[s.lhs];
        let lhs: Vec<String> = t.dims.iter().map(|d| var(d.fam).to_string()).collect();
        let margins = self.margins(s);
        let mut ranges = Vec::new();
        for (fam, m) in margins.iter().enumerate() {
            if !m.used {
                continue;
            }
            let ext = s.vars.iter().find(|e| e.fam == fam as u8).copied();
            let ext = ext.unwrap_or(Ext::full(fam as u8));
            let declared = t.role != Role::Temp && t.dims.iter().any(|d| d.fam == fam as u8);
            let inferable = m.lo == 0 && m.hi == 0 && !m.mixed && (m.exact || declared);
            if s.explicit || !inferable {
                ranges.push(format!(
                    "{} in {}:{}",
                    var(fam as u8),
                    m.lo,
                    ext.text_minus(m.hi)
                ));
            }
        }
        let where_ = if ranges.is_empty() {
            String::new()
        } else {
            format!(" where {}", ranges.join(", "))
        };
        format!(
            "{}({}) {} {}{where_}",
            t.name,
            lhs.join(", "),
            s.op.text(s.init),
            self.expr_text(&s.rhs)
        )
    }

    /// The margins of every index family in statement `s` (`used` false for families the
    /// statement does not use).
    fn margins(&self, s: &Stmt) -> [Margin; 5] {
        let mut m = [Margin::default(); 5];
        let ext_of = |fam: u8| s.vars.iter().find(|e| e.fam == fam).copied();
        for d in &self.tensors[s.lhs].dims {
            m[d.fam as usize].used = true;
        }
        s.rhs.visit(&mut |e| match e {
            Expr::Read { t, idx } => {
                for (d, i) in self.tensors[*t].dims.iter().zip(idx) {
                    match *i {
                        Idx::Var { fam, off } => {
                            let mm = &mut m[fam as usize];
                            mm.used = true;
                            mm.lo = mm.lo.max(-(off as i64));
                            mm.hi = mm.hi.max(off as i64);
                            if off == 0 && ext_of(fam) == Some(*d) {
                                mm.exact = true;
                            } else {
                                mm.mixed = true;
                            }
                        }
                        Idx::Win { fam } => {
                            m[fam as usize].used = true;
                            if let Some(w) = window_of(fam) {
                                m[w as usize].used = true;
                            }
                        }
                        Idx::Zero => {}
                    }
                }
            }
            Expr::Index(f) => m[*f as usize].used = true,
            _ => {}
        });
        m
    }

    /// An expression's text.
    pub fn expr_text(&self, e: &Expr) -> String {
        match e {
            Expr::Read { t, idx } => {
                let v: Vec<String> = idx.iter().map(idx_text).collect();
                format!("{}({})", self.tensors[*t].name, v.join(", "))
            }
            Expr::Scalar(s) => self.scalars[*s].clone(),
            Expr::Lit(v) => lit_text(*v, self.dtype),
            Expr::Index(f) => var(*f).to_string(),
            Expr::Bin(op, a, b) => {
                let (a, b) = (self.expr_text(a), self.expr_text(b));
                match op {
                    Bin::Add => format!("({a} + {b})"),
                    Bin::Sub => format!("({a} - {b})"),
                    Bin::Mul => format!("{a} * {b}"),
                    Bin::SafeDiv => format!("{a} / (abs({b}) + 1)"),
                    Bin::Max => format!("max({a}, {b})"),
                    Bin::Min => format!("min({a}, {b})"),
                }
            }
            Expr::Un(op, a) => {
                let a = self.expr_text(a);
                match op {
                    Un::Neg => format!("-({a})"),
                    Un::Abs => format!("abs({a})"),
                    Un::Relu => format!("relu({a})"),
                    Un::Tanh => format!("tanh({a})"),
                    Un::Exp => format!("exp({a} * 0.1)"),
                    Un::Sigmoid => format!("sigmoid({a})"),
                    Un::Sqrt => format!("sqrt(abs({a}))"),
                    Un::Log => format!("log(abs({a}) + 1)"),
                    Un::DivBy(c) => format!("({a}) / {c}"),
                    Un::RemBy(c) => format!("({a}) % {c}"),
                }
            }
            Expr::Select(v) => format!(
                "select({} < {}, {}, {})",
                self.expr_text(&v[0]),
                self.expr_text(&v[1]),
                self.expr_text(&v[2]),
                self.expr_text(&v[3])
            ),
        }
    }

    /// `N=5,M=3`: the sizes the program uses, for `--param`.
    pub fn params_text(&self) -> String {
        let text = self.render();
        SIZES
            .iter()
            .enumerate()
            .filter(|(_, (n, _))| mentions(&text, n))
            .map(|(k, (n, _))| format!("{n}={}", self.sizes[k]))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The sizes the program uses, as `--param` pairs.
    pub fn params(&self) -> Vec<(String, i64)> {
        let text = self.render();
        SIZES
            .iter()
            .enumerate()
            .filter(|(_, (n, _))| mentions(&text, n))
            .map(|(k, (n, _))| (n.to_string(), self.sizes[k]))
            .collect()
    }

    /// The number of statement instances at the bound sizes (an upper bound).
    pub fn instances(&self) -> i64 {
        self.stmts
            .iter()
            .map(|s| {
                let m = self.margins(s);
                (0..5)
                    .filter(|&f| m[f].used)
                    .map(|f| {
                        let e = s.vars.iter().find(|e| e.fam == f as u8);
                        e.map_or(self.sizes[f], |e| e.value(&self.sizes)).max(1)
                    })
                    .product::<i64>()
            })
            .sum()
    }
}

/// A tensor's extents as written in its declaration.
fn dims_text(dims: &[Ext]) -> String {
    dims.iter().map(Ext::text).collect::<Vec<_>>().join(", ")
}

/// Whether `text` mentions the identifier `name` as a whole word.
pub fn mentions(text: &str, name: &str) -> bool {
    let b = text.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    text.match_indices(name).any(|(p, _)| {
        let before = p == 0 || !ident(b[p - 1]);
        let after = p + name.len() >= b.len() || !ident(b[p + name.len()]);
        before && after
    })
}

#[path = "gen_check.rs"]
mod check;
#[path = "gen_random.rs"]
mod random;

pub use random::{generate, generate_typed};

/// Random helpers shared by the generators.
pub(crate) fn pick<T: Copy>(rng: &mut ChaCha8Rng, v: &[T]) -> T {
    *v.choose(rng).expect("non-empty choice")
}

/// A small size, odd and prime values favoured: 1..=`max`.
pub fn small_size(rng: &mut ChaCha8Rng, max: i64) -> i64 {
    let v = match rng.gen_range(0..10) {
        0..=3 => pick(rng, &[1, 2, 3, 5, 7]),
        4..=7 => pick(rng, &[2, 3, 5, 7, 11, 13, 17, 19]),
        _ => rng.gen_range(1..=20),
    };
    v.clamp(1, max)
}

#[path = "gen_gemm.rs"]
mod gemm;

pub use gemm::gemm_like;
