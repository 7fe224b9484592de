//! Name resolution, typing, statement numbering and shape inference: one [`ast::Def`] to
//! an [`ir::Program`].

use super::ast::{self, ExprKind, Ident, ParamDecl};
use super::infer::{self, Access, Bounds};
use super::lin::{Atom, Lin};
use super::Res;
use crate::diag::{SourceError, SourceFile};
use crate::ir::{
    self, AssignOp, DType, Func, InputRef, Iter, Param, Program, RangeSource, Scalar, Span,
    StmtBody, Tensor, TensorId, TensorRole,
};
use std::collections::HashMap;

#[path = "sema_tc.rs"]
mod sema_tc;

/// The built-in functions, as listed in errors.
const KNOWN_FUNCTIONS: &str =
    "exp, log, sqrt, rsqrt, abs, tanh, sigmoid, relu, max, min, sat_i8, select(cond, a, b), cast<T>(e)";

fn func_by_name(name: &str) -> Option<Func> {
    // `requant_i8` is not written by name: the language writes it `sat_i8(x * s)`.
    Func::ALL
        .into_iter()
        .find(|f| *f != Func::RequantI8 && f.name() == name)
}

/// Whether `e` is a call of `sat_i8`.
fn is_sat_i8(e: &ast::Expr) -> bool {
    matches!(&e.kind, ExprKind::Call { name, .. } if name.name == "sat_i8")
}

fn is_builtin(name: &str) -> bool {
    func_by_name(name).is_some() || matches!(name, "select" | "floordiv" | "cast")
}

/// Resolves and types one def of polyc's language.
pub fn lower(src: &SourceFile, def: &ast::Def) -> Res<Program> {
    lower_lang(src, def, false)
}

/// Resolves and types one def; `tc` selects Tensor Comprehensions' meaning (see
/// [`super::tc`] and the README's "Tensor Comprehensions programs").
pub fn lower_lang(src: &SourceFile, def: &ast::Def, tc: bool) -> Res<Program> {
    let mut s = Sema {
        tc,
        src,
        params: Vec::new(),
        param_idx: HashMap::new(),
        scalars: Vec::new(),
        scalar_idx: HashMap::new(),
        tensors: Vec::new(),
        tensor_idx: HashMap::new(),
        declared: HashMap::new(),
        inputs: Vec::new(),
        outputs: Vec::new(),
        stmts: Vec::new(),
        iters: Vec::new(),
        lhs_names: HashMap::new(),
        sat_i8_stmt: false,
        loops: Vec::new(),
    };
    for st in &def.stmts {
        s.lhs_names
            .entry(st.lhs.name.clone())
            .or_insert(st.lhs.span);
    }
    s.header(def)?;
    for st in &def.stmts {
        s.stmt(st)?;
    }
    s.finish(def)
}

/// A tensor while the def is being resolved.
struct TInfo {
    name: String,
    dtype: Option<DType>,
    shape: Option<Vec<Lin>>,
    role: TensorRole,
    /// Declaration, or the first write for a temporary.
    span: Span,
    /// True once a statement has written it (inputs count as written).
    written: bool,
}

/// How a name inside an index, shape or bound is resolved.
#[derive(Clone, Copy)]
enum Mode {
    /// A shape in the header: unknown names become sizes.
    Shape,
    /// A tensor index: unknown names become iterators.
    Index,
    /// A `where` bound of the iterator at this position: unknown names become sizes.
    Where(usize),
}

impl Mode {
    fn what(self) -> &'static str {
        match self {
            Mode::Shape => "extent",
            Mode::Index => "index",
            Mode::Where(_) => "bound",
        }
    }
}

struct Sema<'a> {
    src: &'a SourceFile,
    params: Vec<Param>,
    param_idx: HashMap<String, usize>,
    scalars: Vec<Scalar>,
    scalar_idx: HashMap<String, usize>,
    tensors: Vec<TInfo>,
    tensor_idx: HashMap<String, TensorId>,
    /// Every name declared in the header, with its declaration.
    declared: HashMap<String, Span>,
    inputs: Vec<InputRef>,
    outputs: Vec<TensorId>,
    stmts: Vec<ir::Stmt>,
    /// The current statement's iterators and their first mentions.
    iters: Vec<(String, Span)>,
    /// The first write of every name written in the def.
    lhs_names: HashMap<String, Span>,
    /// Tensor Comprehensions' meaning.
    tc: bool,
    /// The current statement is `Q(…) = sat_i8(e)` into an i8 tensor (computed in i32).
    sat_i8_stmt: bool,
    /// The def's loops by id, once a statement inside has resolved their ranges.
    loops: Vec<Option<ir::Loop>>,
}

impl<'a> Sema<'a> {
    fn err(
        &self,
        span: Span,
        message: impl Into<String>,
        label: impl Into<String>,
        help: impl Into<String>,
    ) -> Box<SourceError> {
        Box::new(self.src.error(span, message, label, help))
    }

    /// A built-in function name (TC's too, in a TC file).
    fn is_builtin(&self, name: &str) -> bool {
        is_builtin(name) || (self.tc && super::tc::builtin(name).is_some())
    }

    fn line(&self, span: Span) -> usize {
        self.src.line_col(span.start).0
    }

    // ---- header ----

    fn header(&mut self, def: &ast::Def) -> Res<()> {
        let names = def
            .params
            .iter()
            .map(|p| p.name())
            .chain(def.outputs.iter().map(|o| &o.name))
            .chain(def.locals.iter().map(|o| &o.name));
        for n in names {
            if let Some(prev) = self.declared.get(&n.name) {
                return Err(Box::new(
                    self.src
                        .error(
                            n.span,
                            format!("`{}` is declared twice", n.name),
                            "second declaration",
                            "give every input, output and temporary of a def its own name",
                        )
                        .with_related(super::common::note(
                            self.src,
                            *prev,
                            "the first declaration",
                            "first declared here",
                        )),
                ));
            }
            self.declared.insert(n.name.clone(), n.span);
        }
        for p in &def.params {
            match p {
                ParamDecl::Tensor { ty, shape, name } => {
                    let shape = self.shape(shape)?;
                    let id = self.add_tensor(TInfo {
                        name: name.name.clone(),
                        dtype: Some(ty.dtype),
                        shape: Some(shape),
                        role: TensorRole::Input,
                        span: name.span,
                        written: true,
                    });
                    self.inputs.push(InputRef::Tensor(id));
                }
                ParamDecl::Scalar { ty, name } => {
                    let id = self.scalars.len();
                    self.scalars.push(Scalar {
                        name: name.name.clone(),
                        dtype: ty.dtype,
                        span: name.span,
                    });
                    self.scalar_idx.insert(name.name.clone(), id);
                    self.inputs.push(InputRef::Scalar(id));
                }
            }
        }
        for o in &def.outputs {
            let shape = match &o.shape {
                Some(sh) => Some(self.shape(sh)?),
                None => None,
            };
            let id = self.add_tensor(TInfo {
                name: o.name.name.clone(),
                dtype: o.ty.map(|t| t.dtype),
                shape,
                role: TensorRole::Output,
                span: o.name.span,
                written: false,
            });
            self.outputs.push(id);
        }
        for o in &def.locals {
            let shape = match &o.shape {
                Some(sh) => Some(self.shape(sh)?),
                None => None,
            };
            self.add_tensor(TInfo {
                name: o.name.name.clone(),
                dtype: o.ty.map(|t| t.dtype),
                shape,
                role: TensorRole::Temp,
                span: o.name.span,
                written: false,
            });
        }
        Ok(())
    }

    fn add_tensor(&mut self, t: TInfo) -> TensorId {
        let id = self.tensors.len();
        self.tensor_idx.insert(t.name.clone(), id);
        self.tensors.push(t);
        id
    }

    /// A declared shape; a constant extent must be positive (as a `--param` size must).
    fn shape(&mut self, dims: &[ast::Expr]) -> Res<Vec<Lin>> {
        dims.iter()
            .map(|e| {
                let l = self.lin(e, Mode::Shape)?;
                match l.as_const() {
                    Some(c) if c < 1 => Err(self.err(
                        e.span,
                        format!("extent {c} is not positive"),
                        "a tensor's extent must be at least 1",
                        "give every dimension a positive extent, or a size (e.g. `N`) bound with --param",
                    )),
                    _ => Ok(l),
                }
            })
            .collect()
    }

    // ---- affine expressions ----

    fn non_affine(
        &self,
        mode: Mode,
        span: Span,
        label: impl Into<String>,
        help: impl Into<String>,
    ) -> Box<SourceError> {
        self.err(span, format!("non-affine {}", mode.what()), label, help)
    }

    fn overflow(&self, mode: Mode, span: Span) -> Box<SourceError> {
        self.err(
            span,
            format!("integer overflow in {}", mode.what()),
            "the value does not fit in 64 bits",
            "use smaller constants",
        )
    }

    /// A positive integer constant (the divisor of `floordiv` and `%`).
    fn divisor(&mut self, e: &ast::Expr, mode: Mode, op: &str) -> Res<i64> {
        let l = self.lin(e, mode)?;
        match l.as_const() {
            Some(c) if c > 0 => Ok(c),
            Some(c) => Err(self.non_affine(
                mode,
                e.span,
                format!("divisor {c} is not positive"),
                format!("{op} needs a positive integer constant divisor"),
            )),
            None => Err(self.non_affine(
                mode,
                e.span,
                "not a constant",
                format!(
                    "{op} needs a positive integer constant divisor; a division by an index \
                     or a size is not affine"
                ),
            )),
        }
    }

    fn lin(&mut self, e: &ast::Expr, mode: Mode) -> Res<Lin> {
        let ovf = |s: &Self| s.overflow(mode, e.span);
        match &e.kind {
            ExprKind::Int(v) => Ok(Lin::constant(*v)),
            ExprKind::Float(_) => Err(self.non_affine(
                mode,
                e.span,
                "not an integer",
                "indices, extents and bounds are integer affine expressions",
            )),
            ExprKind::Name(n) => self.name_lin(n, e.span, mode),
            ExprKind::Neg(a) => self.lin(a, mode)?.scale(-1).ok_or_else(|| ovf(self)),
            ExprKind::Bin(op, a, b) => {
                use ir::BinOp::*;
                match op {
                    Add | Sub | Mul => {
                        let la = self.lin(a, mode)?;
                        let lb = self.lin(b, mode)?;
                        let r = match op {
                            Add => la.add(&lb),
                            Sub => la.sub(&lb),
                            _ => match (la.as_const(), lb.as_const()) {
                                (Some(k), _) => lb.scale(k),
                                (_, Some(k)) => la.scale(k),
                                _ => {
                                    return Err(self.non_affine(
                                        mode,
                                        e.span,
                                        "product of two non-constant expressions",
                                        "an affine expression multiplies indices and sizes \
                                         by integer constants only, e.g. `2 * i`",
                                    ))
                                }
                            },
                        };
                        r.ok_or_else(|| ovf(self))
                    }
                    // In TC, integer division rounds towards minus infinity: by a
                    // positive constant it is `floordiv`.
                    Div if self.tc => {
                        let la = self.lin(a, mode)?;
                        let d = self.divisor(b, mode, "`/`")?;
                        la.floordiv(d).ok_or_else(|| ovf(self))
                    }
                    Div => Err(self.non_affine(
                        mode,
                        e.span,
                        "`/` is not affine",
                        "write `floordiv(e, c)` to divide by a positive integer constant",
                    )),
                    Rem => {
                        let la = self.lin(a, mode)?;
                        let d = self.divisor(b, mode, "`%`")?;
                        la.modulo(d).ok_or_else(|| ovf(self))
                    }
                }
            }
            ExprKind::Cmp(..) => Err(self.non_affine(
                mode,
                e.span,
                "a comparison",
                "indices, extents and bounds are integer affine expressions",
            )),
            ExprKind::Cast { .. } => Err(self.non_affine(
                mode,
                e.span,
                "a cast",
                "indices, extents and bounds are integer affine expressions",
            )),
            ExprKind::Call { name, args } => {
                if name.name == "floordiv" {
                    if args.len() != 2 {
                        return Err(self.err(
                            e.span,
                            format!("`floordiv` takes 2 arguments, {} given", args.len()),
                            "wrong number of arguments",
                            "write `floordiv(e, c)` with a positive integer constant `c`",
                        ));
                    }
                    let la = self.lin(&args[0], mode)?;
                    let d = self.divisor(&args[1], mode, "`floordiv`")?;
                    return la.floordiv(d).ok_or_else(|| ovf(self));
                }
                if self.tensor_idx.contains_key(&name.name)
                    || self.declared.contains_key(&name.name)
                {
                    return Err(self.non_affine(
                        mode,
                        e.span,
                        "a tensor read",
                        "an index cannot depend on tensor values (indirect access is not \
                         affine); indices use iterators, sizes and integer constants",
                    ));
                }
                Err(self.non_affine(
                    mode,
                    e.span,
                    format!("`{}(…)` is not affine", name.name),
                    "inside indices, extents and bounds only + - `*` by a constant, \
                     floordiv(e, c) and `e % c` (c a positive constant) are allowed",
                ))
            }
        }
    }

    fn name_lin(&mut self, n: &str, span: Span, mode: Mode) -> Res<Lin> {
        if let Some(&p) = self.param_idx.get(n) {
            return Ok(Lin::param(p));
        }
        if self.scalar_idx.contains_key(n) {
            return Err(self.non_affine(
                mode,
                span,
                format!("`{n}` is a scalar input"),
                "scalar values cannot be used in indices, extents or bounds; use a size (a \
                 name that appears in a shape)",
            ));
        }
        if self.tensor_idx.contains_key(n) || self.declared.contains_key(n) {
            return Err(self.non_affine(
                mode,
                span,
                format!("`{n}` is a tensor"),
                format!(
                    "a tensor cannot be an index, extent or bound; read an element with \
                     `{n}(…)` in the right-hand side instead"
                ),
            ));
        }
        match mode {
            Mode::Shape => Ok(Lin::param(self.new_param(n, span))),
            Mode::Index => {
                if let Some(k) = self.iters.iter().position(|(x, _)| x == n) {
                    Ok(Lin::iter(k))
                } else {
                    self.iters.push((n.to_string(), span));
                    Ok(Lin::iter(self.iters.len() - 1))
                }
            }
            Mode::Where(pos) => match self.iters.iter().position(|(x, _)| x == n) {
                Some(k) if k < pos => Ok(Lin::iter(k)),
                Some(k) => {
                    let me = &self.iters[pos].0;
                    let order = self
                        .iters
                        .iter()
                        .map(|(x, _)| format!("`{x}`"))
                        .collect::<Vec<_>>()
                        .join(", ");
                    Err(self.err(
                        span,
                        format!("the range of `{me}` uses `{n}`, which comes after it"),
                        if k == pos {
                            "the index being bounded".to_string()
                        } else {
                            format!("`{n}` is not bound yet")
                        },
                        format!(
                            "the bounds of an index may use sizes and the indices before it \
                             only; this statement's indices are {order} (left-hand indices \
                             first, then reduction indices in order of appearance)"
                        ),
                    ))
                }
                None => Ok(Lin::param(self.new_param(n, span))),
            },
        }
    }

    fn new_param(&mut self, n: &str, span: Span) -> usize {
        let p = self.params.len();
        self.params.push(Param {
            name: n.to_string(),
            span,
        });
        self.param_idx.insert(n.to_string(), p);
        p
    }

    // ---- statements ----

    fn stmt(&mut self, st: &ast::Stmt) -> Res<()> {
        let lhs = self.lhs_tensor(&st.lhs, st.lhs_span)?;
        self.check_write(st, lhs)?;
        let (lhs_index, n_lhs) = self.stmt_iters(st)?;
        let fixed = self.explicit_ranges(st)?;
        self.tc_check_reduction_op(st, n_lhs)?;
        let dtype = self.stmt_dtype(st, lhs)?;

        // The right-hand side, with its accesses.
        let mut reads: Vec<(TensorId, Vec<Lin>)> = Vec::new();
        let rhs = self.value(&st.rhs, dtype, &mut reads)?;
        for e in &st.exists {
            self.value(e, dtype, &mut reads)?;
        }

        let (iters, inferred) = self.stmt_ranges(st, lhs, &lhs_index, &reads, &fixed, n_lhs)?;
        let pieces = self.stmt_pieces(st, &iters, dtype, rhs)?;
        self.push_stmts(st, lhs, &lhs_index, &iters[..n_lhs], dtype, pieces);
        self.record_write(st, lhs, dtype, &lhs_index, &inferred)
    }

    /// Whether statement `st` may write tensor `lhs`: not a TC input, with the tensor's
    /// rank, and a temporary's first write not an update of a value it does not hold.
    fn check_write(&self, st: &ast::Stmt, lhs: TensorId) -> Res<()> {
        if self.tc && self.tensors[lhs].role == TensorRole::Input {
            return Err(self.err(
                st.lhs.span,
                format!("`{}` is an input; TC inputs are immutable", st.lhs.name),
                "written here",
                format!(
                    "write the result into an output (add it after `->`), e.g. \
                     `{}_out`; polyc's own language (`--lang polyc`) allows updating inputs",
                    st.lhs.name
                ),
            ));
        }
        self.check_rank(lhs, st.lhs_index.len(), st.lhs_span)?;
        let first_write = !self.tensors[lhs].written;
        if first_write
            && self.tensors[lhs].role == TensorRole::Temp
            && st.op != AssignOp::Assign
            && !st.init
        {
            let sym = st.op.symbol();
            return Err(self.err(
                st.op_span,
                format!(
                    "`{}` is updated with `{sym}` before it holds a value",
                    st.lhs.name
                ),
                "reads the temporary before any write",
                format!(
                    "write `{sym}!` to start the reduction from its identity, or assign \
                     `{}` in an earlier statement",
                    st.lhs.name
                ),
            ));
        }
        Ok(())
    }

    /// The statement's iterators (into `self.iters`): left-hand indices, then the reads'
    /// indices in order, then `where` indices used only as values. Returns the left-hand
    /// index forms and how many iterators the left side introduces.
    fn stmt_iters(&mut self, st: &ast::Stmt) -> Res<(Vec<Lin>, usize)> {
        self.iters.clear();
        for l in &st.loops {
            self.iters
                .push((l.range.iter.name.clone(), l.range.iter.span));
        }
        let mut lhs_index = Vec::with_capacity(st.lhs_index.len());
        for e in &st.lhs_index {
            lhs_index.push(self.lin(e, Mode::Index)?);
        }
        let n_lhs = self.iters.len();
        self.collect(&st.rhs)?;
        for e in &st.exists {
            self.collect(e)?;
        }

        // A `where` may also introduce an index that the right-hand side uses only as a
        // value (`s() +=! k where k in 0:K`); it comes after the others.
        for r in &st.ranges {
            if !self.iters.iter().any(|(x, _)| *x == r.iter.name)
                && !self.param_idx.contains_key(&r.iter.name)
                && !self.scalar_idx.contains_key(&r.iter.name)
            {
                if let Some(span) = value_use(&st.rhs, &r.iter.name) {
                    self.iters.push((r.iter.name.clone(), span));
                }
            }
        }
        Ok((lhs_index, n_lhs))
    }

    /// The explicit (`where`) ranges of the statement's iterators, per iterator.
    fn explicit_ranges(&mut self, st: &ast::Stmt) -> Res<Vec<Option<Bounds>>> {
        let mut fixed: Vec<Option<Bounds>> = vec![None; self.iters.len()];
        for (pos, l) in st.loops.iter().enumerate() {
            let lo = self.lin(&l.range.lo, Mode::Where(pos))?;
            let hi = self.lin(&l.range.hi, Mode::Where(pos))?;
            if self.loops.len() <= l.id {
                self.loops.resize(l.id + 1, None);
            }
            if self.loops[l.id].is_none() {
                self.loops[l.id] = Some(ir::Loop {
                    name: l.range.iter.name.clone(),
                    lower: vec![lo.to_aff()],
                    upper: vec![hi.to_aff()],
                    depth: pos,
                    span: l.span,
                });
            }
            fixed[pos] = Some(Bounds {
                lower: vec![lo],
                upper: vec![hi],
            });
        }
        for r in &st.ranges {
            let Some(pos) = self.iters.iter().position(|(x, _)| *x == r.iter.name) else {
                let list = self
                    .iters
                    .iter()
                    .map(|(x, _)| format!("`{x}`"))
                    .collect::<Vec<_>>()
                    .join(", ");
                return Err(self.err(
                    r.iter.span,
                    format!("`{}` is not an index of this statement", r.iter.name),
                    "not used in the statement",
                    if list.is_empty() {
                        "this statement has no indices; remove the range".to_string()
                    } else {
                        format!(
                            "this statement's indices are {list}; remove the range or fix the name"
                        )
                    },
                ));
            };
            // Several ranges of one index intersect (`kh in 0:KH, kh in 1 - oh : H + 1 - oh`:
            // the filter rows that stay inside a padded image).
            let lo = self.lin(&r.lo, Mode::Where(pos))?;
            let hi = self.lin(&r.hi, Mode::Where(pos))?;
            match &mut fixed[pos] {
                Some(b) => {
                    b.lower.push(lo);
                    b.upper.push(hi);
                }
                None => {
                    fixed[pos] = Some(Bounds {
                        lower: vec![lo],
                        upper: vec![hi],
                    })
                }
            }
        }
        Ok(fixed)
    }

    /// In a TC file, a statement with reduction indices (iterators past the first
    /// `n_lhs`) needs a reduction operator.
    fn tc_check_reduction_op(&self, st: &ast::Stmt, n_lhs: usize) -> Res<()> {
        if self.tc && st.op == AssignOp::Assign && self.iters.len() > n_lhs {
            let (r, span) = self.iters[n_lhs].clone();
            return Err(self.err(
                span,
                format!("`{r}` is a reduction index, but the statement assigns with `=`"),
                "appears on the right only",
                format!(
                    "TC needs a reduction operator for a statement with reduction indices: \
                     write `+=!` (or `*=!`, `max=!`, `min=!`) to reduce over `{r}`, or index \
                     the left side with `{r}` too"
                ),
            ));
        }
        Ok(())
    }

    /// The type the statement computes in (and, for a tensor without one, the type it
    /// gives `lhs`); sets [`Sema::sat_i8_stmt`].
    fn stmt_dtype(&mut self, st: &ast::Stmt, lhs: TensorId) -> Res<DType> {
        self.sat_i8_stmt =
            !self.tc && self.tensors[lhs].dtype == Some(DType::I8) && is_sat_i8(&st.rhs);
        let root_cast = match &st.rhs.kind {
            ExprKind::Cast { ty, .. } => Some(ty.dtype),
            _ => None,
        };
        Ok(match self.tensors[lhs].dtype {
            Some(d) if self.tc => {
                self.tc_check_narrowing(st, d)?;
                d
            }
            // `Q(…) = sat_i8(e)` into an i8 tensor computes `e` in i32 and stores the
            // saturated value.
            Some(DType::I8) if !self.tc && is_sat_i8(&st.rhs) => DType::I32,
            Some(d) => d,
            None if self.tc => self.tc_infer_type(st, lhs)?,
            // A temporary whose first statement's right side is `cast<T>(…)` holds `T`
            // (an i32 accumulator of int8 products: `C(i, j) +=! cast<i32>(A(i, k) *
            // B(k, j))`).
            None if root_cast.is_some() && !self.tc => root_cast.unwrap_or(DType::I32),
            None => match self.first_read_type(&st.rhs) {
                Some(d) => d,
                None => return Err(self.untyped_error(st, lhs)),
            },
        })
    }

    /// The error for a tensor `lhs` whose element type statement `st` does not tell.
    fn untyped_error(&self, st: &ast::Stmt, lhs: TensorId) -> Box<SourceError> {
        let t = &self.tensors[lhs];
        let help = if t.role == TensorRole::Output {
            format!(
                "declare the type of `{}` in the def's outputs, e.g. `f32 {}` or \
                 `f32(N) {}`",
                t.name, t.name, t.name
            )
        } else {
            format!(
                "the type of a temporary is that of the first tensor (or else \
                 scalar) its first statement reads; read one here, or make `{}` \
                 an output with a declared type",
                t.name
            )
        };
        self.err(
            st.lhs_span,
            format!("cannot infer the element type of `{}`", t.name),
            "this statement reads no tensor or scalar",
            help,
        )
    }

    /// The ranges of the statement's iterators, explicit (`fixed`) or inferred: polyc
    /// infers from every access, the left side's included; TC from the right-hand side's
    /// (and `exists`) only, in rounds. Returns the iterators and their bounds.
    fn stmt_ranges(
        &self,
        st: &ast::Stmt,
        lhs: TensorId,
        lhs_index: &[Lin],
        reads: &[(TensorId, Vec<Lin>)],
        fixed: &[Option<Bounds>],
        n_lhs: usize,
    ) -> Res<(Vec<Iter>, Vec<Bounds>)> {
        let lhs_access = (!self.tc).then_some((lhs, lhs_index));
        let accesses: Vec<Access> = lhs_access
            .into_iter()
            .chain(reads.iter().map(|(t, idx)| (*t, idx.as_slice())))
            .map(|(t, idx)| Access {
                index: idx,
                extents: self.tensors[t].shape.as_deref(),
            })
            .collect();
        let bounds = if self.tc {
            super::tc_infer::infer(fixed, &accesses)
        } else {
            infer::infer(fixed, &accesses)
        };
        let bounds = bounds.map_err(|_| {
            self.err(
                st.span,
                "integer overflow while inferring ranges",
                "the bounds of this statement do not fit in 64 bits",
                "use smaller constants or add explicit `where` ranges",
            )
        })?;
        let mut iters = Vec::with_capacity(bounds.len());
        let mut inferred: Vec<Bounds> = Vec::with_capacity(bounds.len());
        for (k, b) in bounds.into_iter().enumerate() {
            let (name, span) = self.iters[k].clone();
            let Some(b) = b else {
                let in_known = accesses
                    .iter()
                    .any(|a| a.extents.is_some() && a.index.iter().any(|e| e.mentions_iter(k)));
                return Err(self.unbounded_error(&name, span, in_known, k < n_lhs));
            };
            iters.push(Iter {
                name,
                lower: b.lower.iter().map(Lin::to_aff).collect(),
                upper: b.upper.iter().map(Lin::to_aff).collect(),
                source: if fixed[k].is_some() {
                    RangeSource::Where
                } else {
                    RangeSource::Inferred
                },
                span,
            });
            inferred.push(b);
        }
        Ok((iters, inferred))
    }

    /// The error for iterator `name` (first mentioned at `span`) whose range is neither
    /// explicit nor inferred; `in_known`: it indexes a tensor of known shape; `on_lhs`: it
    /// is a left-hand index.
    fn unbounded_error(
        &self,
        name: &str,
        span: Span,
        in_known: bool,
        on_lhs: bool,
    ) -> Box<SourceError> {
        if self.tc {
            return self.err(
                span,
                format!("cannot infer the range of `{name}`"),
                if in_known {
                    format!(
                        "TC's rounds do not bound `{name}`: no access bounds it once \
                         the others are known"
                    )
                } else if on_lhs {
                    format!(
                        "`{name}` indexes no tensor on the right; TC infers ranges \
                         from the right-hand side only"
                    )
                } else {
                    format!("`{name}` indexes no tensor of known shape")
                },
                format!(
                    "add `where {name} in lo:hi` (half-open: lo <= {name} < hi) after \
                     the statement"
                ),
            );
        }
        self.err(
            span,
            format!("cannot infer the range of `{name}`"),
            if in_known {
                format!("the accesses do not bound `{name}` on their own")
            } else {
                format!("`{name}` indexes no tensor of known shape")
            },
            format!("add `where {name} in lo:hi` (half-open) at the end of the statement"),
        )
    }

    /// The update's pieces: its iterators and right-hand side `rhs`. In a TC file, a
    /// conditional whose condition is affine in the indices splits the update into one
    /// statement per branch, each over its part of the domain (so that a branch's
    /// accesses need only be valid where it is taken).
    fn stmt_pieces(
        &mut self,
        st: &ast::Stmt,
        iters: &[Iter],
        dtype: DType,
        rhs: ir::Expr,
    ) -> Res<Vec<(Vec<Iter>, ir::Expr)>> {
        if !self.tc {
            return Ok(vec![(iters.to_vec(), rhs)]);
        }
        let mut pieces = self.tc_split_guards(&st.rhs, iters, dtype, 0)?;
        // A branch that reduces the identity (`+= 0`, `*= 1`) changes nothing.
        let identity = match st.op {
            AssignOp::Add => Some(0.0),
            AssignOp::Mul => Some(1.0),
            _ => None,
        };
        if pieces.len() > 1 {
            pieces.retain(|(_, e)| identity.is_none() || constant(e) != identity);
        }
        Ok(pieces)
    }

    /// Numbers the statements of `st`: its init (over the left-hand iterators
    /// `lhs_iters`) if it has one, then one update per piece.
    fn push_stmts(
        &mut self,
        st: &ast::Stmt,
        lhs: TensorId,
        lhs_index: &[Lin],
        lhs_iters: &[Iter],
        dtype: DType,
        pieces: Vec<(Vec<Iter>, ir::Expr)>,
    ) {
        let n_lhs = lhs_iters.len();
        let lhs_aff: Vec<ir::Aff> = lhs_index.iter().map(Lin::to_aff).collect();
        if st.init {
            let name = format!("S_{}", self.stmts.len());
            self.stmts.push(ir::Stmt {
                name,
                iters: lhs_iters.to_vec(),
                n_lhs_iters: n_lhs,
                lhs,
                lhs_index: lhs_aff.clone(),
                body: StmtBody::Init(st.op),
                dtype,
                span: st.span,
                lhs_span: st.lhs_span,
                loops: st.loops.iter().map(|l| l.id).collect(),
            });
        }
        for (iters, rhs) in pieces {
            let name = format!("S_{}", self.stmts.len());
            self.stmts.push(ir::Stmt {
                name,
                iters,
                n_lhs_iters: n_lhs,
                lhs,
                lhs_index: lhs_aff.clone(),
                body: StmtBody::Update(st.op, rhs),
                dtype,
                span: st.span,
                lhs_span: st.lhs_span,
                loops: st.loops.iter().map(|l| l.id).collect(),
            });
        }
    }

    /// What the write tells about tensor `lhs`: it is written, has the statement's type
    /// `dtype` if it had none, and the shape the statement's bounds give if it had none.
    fn record_write(
        &mut self,
        st: &ast::Stmt,
        lhs: TensorId,
        dtype: DType,
        lhs_index: &[Lin],
        inferred: &[Bounds],
    ) -> Res<()> {
        let t = &mut self.tensors[lhs];
        t.written = true;
        if t.dtype.is_none() {
            t.dtype = Some(dtype);
        }
        if t.shape.is_none() {
            let shape = self.infer_shape(lhs, st, lhs_index, inferred)?;
            self.tensors[lhs].shape = Some(shape);
        }
        Ok(())
    }

    /// The tensor a statement writes; creates temporaries.
    fn lhs_tensor(&mut self, name: &Ident, lhs_span: Span) -> Res<TensorId> {
        if self.scalar_idx.contains_key(&name.name) {
            return Err(self.err(
                name.span,
                format!("cannot write to scalar `{}`", name.name),
                "a scalar input",
                "scalar inputs are read-only; write the value into a tensor (a new name \
                 makes a temporary, e.g. `t() = …` for a 0-d one)",
            ));
        }
        if self.param_idx.contains_key(&name.name) {
            return Err(self.err(
                name.span,
                format!("cannot write to size `{}`", name.name),
                "a size used in a shape",
                "sizes are fixed for the whole def; write into a tensor with another name",
            ));
        }
        if let Some(&id) = self.tensor_idx.get(&name.name) {
            return Ok(id);
        }
        if self.is_builtin(&name.name) {
            return Err(self.err(
                name.span,
                format!("`{}` is a built-in function", name.name),
                "cannot be a tensor name",
                "choose another name for the tensor",
            ));
        }
        Ok(self.add_tensor(TInfo {
            name: name.name.clone(),
            dtype: None,
            shape: None,
            role: TensorRole::Temp,
            span: lhs_span,
            written: false,
        }))
    }

    fn check_rank(&self, t: TensorId, n: usize, span: Span) -> Res<()> {
        let info = &self.tensors[t];
        let Some(shape) = &info.shape else {
            return Ok(());
        };
        if shape.len() == n {
            return Ok(());
        }
        let dims = |k: usize| if k == 1 { "dimension" } else { "dimensions" };
        let idx = |k: usize| if k == 1 { "index" } else { "indices" };
        let origin = match info.role {
            TensorRole::Temp => "first written",
            _ => "declared",
        };
        Err(self.err(
            span,
            format!(
                "`{}` has {} {} but {} {} given",
                info.name,
                shape.len(),
                dims(shape.len()),
                n,
                if n == 1 { "index is" } else { "indices are" }
            ),
            format!("expected {} {}", shape.len(), idx(shape.len())),
            format!(
                "`{}` is {origin} at line {}; give one index per dimension",
                info.name,
                self.line(info.span)
            ),
        ))
    }

    /// Checks the reads of `e` and collects the iterators of their indices.
    fn collect(&mut self, e: &ast::Expr) -> Res<()> {
        match &e.kind {
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Name(_) => Ok(()),
            ExprKind::Neg(a) => self.collect(a),
            ExprKind::Cast { arg, .. } => self.collect(arg),
            ExprKind::Bin(_, a, b) | ExprKind::Cmp(_, a, b) => {
                self.collect(a)?;
                self.collect(b)
            }
            ExprKind::Call { name, args } => {
                if let Some(t) = self.readable(name, e.span)? {
                    self.check_rank(t, args.len(), e.span)?;
                    for a in args {
                        self.lin(a, Mode::Index)?;
                    }
                    Ok(())
                } else {
                    for a in args {
                        self.collect(a)?;
                    }
                    Ok(())
                }
            }
        }
    }

    /// `Some(tensor)` for a readable tensor, `None` for a built-in, an error otherwise.
    fn readable(&self, name: &Ident, span: Span) -> Res<Option<TensorId>> {
        if let Some(&t) = self.tensor_idx.get(&name.name) {
            let info = &self.tensors[t];
            if info.written {
                return Ok(Some(t));
            }
            let what = if info.role == TensorRole::Output {
                "output"
            } else {
                "temporary"
            };
            return Err(self.err(
                span,
                format!("`{}` is read before it is written", name.name),
                format!("this {what} has no value yet"),
                format!(
                    "statements run in textual order: write `{}` in an earlier statement \
                     (a reduction into it can start from the identity with `+=!`, `max=!`, …)",
                    name.name
                ),
            ));
        }
        if self.is_builtin(&name.name) {
            return Ok(None);
        }
        if self.scalar_idx.contains_key(&name.name) || self.param_idx.contains_key(&name.name) {
            let what = if self.scalar_idx.contains_key(&name.name) {
                "a scalar"
            } else {
                "a size"
            };
            return Err(self.err(
                span,
                format!("`{}` is {what}, not a tensor", name.name),
                "cannot be indexed",
                format!("write `{}` without parentheses to use its value", name.name),
            ));
        }
        let upper = name
            .name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_uppercase());
        let later = self.lhs_names.get(&name.name);
        if upper || later.is_some() {
            let help = match later {
                Some(w) => format!(
                    "`{}` is first written at line {}; statements run in textual order, so \
                     move that statement before this one",
                    name.name,
                    self.line(*w)
                ),
                None => format!(
                    "declare `{}` as an input of the def, or write it in a statement before \
                     this one",
                    name.name
                ),
            };
            Err(self.err(
                name.span,
                format!("undefined tensor `{}`", name.name),
                "not an input, an output or an earlier temporary",
                help,
            ))
        } else {
            Err(self.err(
                name.span,
                format!("unknown function `{}`", name.name),
                "not a built-in function or a known tensor",
                format!(
                    "the functions are {KNOWN_FUNCTIONS}; a tensor must be an input or be \
                     written before it is read"
                ),
            ))
        }
    }

    /// The element type of the first tensor read, else of the first scalar.
    fn first_read_type(&self, e: &ast::Expr) -> Option<DType> {
        fn tensors(s: &Sema, e: &ast::Expr) -> Option<DType> {
            match &e.kind {
                ExprKind::Call { name, args } => {
                    if let Some(&t) = s.tensor_idx.get(&name.name) {
                        return s.tensors[t].dtype;
                    }
                    args.iter().find_map(|a| tensors(s, a))
                }
                ExprKind::Neg(a) | ExprKind::Cast { arg: a, .. } => tensors(s, a),
                ExprKind::Bin(_, a, b) | ExprKind::Cmp(_, a, b) => {
                    tensors(s, a).or_else(|| tensors(s, b))
                }
                _ => None,
            }
        }
        fn scalars(s: &Sema, e: &ast::Expr) -> Option<DType> {
            match &e.kind {
                ExprKind::Name(n) => s.scalar_idx.get(n).map(|&k| s.scalars[k].dtype),
                ExprKind::Call { name, args } => {
                    if s.tensor_idx.contains_key(&name.name) {
                        return None;
                    }
                    args.iter().find_map(|a| scalars(s, a))
                }
                ExprKind::Neg(a) | ExprKind::Cast { arg: a, .. } => scalars(s, a),
                ExprKind::Bin(_, a, b) | ExprKind::Cmp(_, a, b) => {
                    scalars(s, a).or_else(|| scalars(s, b))
                }
                _ => None,
            }
        }
        tensors(self, e).or_else(|| scalars(self, e))
    }

    fn type_mismatch(&self, span: Span, dtype: DType, label: String) -> Box<SourceError> {
        self.err(
            span,
            format!("type mismatch: this statement computes in {dtype}"),
            label,
            format!(
                "arithmetic happens in the type of the written tensor ({dtype}); declare that \
                 tensor with a floating-point type (f16, f32, f64), or write an integer \
                 expression"
            ),
        )
    }

    fn value(
        &mut self,
        e: &ast::Expr,
        dt: DType,
        reads: &mut Vec<(TensorId, Vec<Lin>)>,
    ) -> Res<ir::Expr> {
        Ok(match &e.kind {
            ExprKind::Int(v) => {
                let fits = match dt {
                    DType::I8 => i8::try_from(*v).is_ok(),
                    DType::I32 => i32::try_from(*v).is_ok(),
                    _ => true,
                };
                if !fits {
                    return Err(self.err(
                        e.span,
                        format!("type mismatch: {v} does not fit in {dt}"),
                        format!("out of range for {dt}"),
                        format!(
                            "this statement computes in {dt}, the type of the written tensor; \
                             use a value in range, or declare that tensor with a wider type"
                        ),
                    ));
                }
                ir::Expr::Lit(*v as f64)
            }
            ExprKind::Float(v) => {
                if !dt.is_float() {
                    return Err(self.type_mismatch(
                        e.span,
                        dt,
                        "a fractional literal in an integer statement".into(),
                    ));
                }
                if self.tc && dt == DType::F64 {
                    // TC's literals with a fraction are `float`s, widened where needed.
                    ir::Expr::Cast(DType::F32, Box::new(ir::Expr::Lit(*v)))
                } else {
                    ir::Expr::Lit(*v)
                }
            }
            ExprKind::Name(n) => {
                if let Some(k) = self.iters.iter().position(|(x, _)| x == n) {
                    ir::Expr::IterValue(k)
                } else if let Some(&k) = self.scalar_idx.get(n) {
                    ir::Expr::Scalar(k)
                } else if let Some(&p) = self.param_idx.get(n) {
                    ir::Expr::SizeValue(p)
                } else if self.tensor_idx.contains_key(n) || self.declared.contains_key(n) {
                    return Err(self.err(
                        e.span,
                        format!("tensor `{n}` is used without indices"),
                        "a whole tensor is not a value",
                        format!("read one element: `{n}(i, …)` with one index per dimension"),
                    ));
                } else {
                    return Err(self.err(
                        e.span,
                        format!("unknown name `{n}`"),
                        "not an index, a size or a scalar",
                        "a value name is an index of this statement (one that appears in a \
                         tensor access), a size, or a scalar input of the def",
                    ));
                }
            }
            ExprKind::Neg(a) => ir::Expr::Neg(Box::new(self.value(a, dt, reads)?)),
            ExprKind::Bin(op @ (ir::BinOp::Div | ir::BinOp::Rem), _, b)
                if folded(&self.value(b, dt, &mut Vec::new())?) == Some(0.0) =>
            {
                let what = if *op == ir::BinOp::Div {
                    "division"
                } else {
                    "remainder"
                };
                return Err(self.err(
                    b.span,
                    format!("{what} by the constant 0"),
                    "this divisor is always 0",
                    "divide by a non-zero value (x / 0 has no value for integers and is \
                     always ±inf or NaN for floats)",
                ));
            }
            ExprKind::Bin(op @ (ir::BinOp::Div | ir::BinOp::Rem), a, b) if self.tc => {
                self.tc_division(*op, a, b, e.span, dt, reads)?
            }
            ExprKind::Bin(op, a, b) => ir::Expr::Bin(
                *op,
                Box::new(self.value(a, dt, reads)?),
                Box::new(self.value(b, dt, reads)?),
            ),
            ExprKind::Cmp(op, a, b) => ir::Expr::Cmp(
                *op,
                Box::new(self.value(a, dt, reads)?),
                Box::new(self.value(b, dt, reads)?),
            ),
            ExprKind::Cast { ty, arg } => {
                ir::Expr::Cast(ty.dtype, Box::new(self.value(arg, dt, reads)?))
            }
            ExprKind::Call { name, args } => return self.call_value(e, name, args, dt, reads),
        })
    }

    /// A call in a value: a tensor read, a TC built-in, `select`, or a built-in function
    /// (with its arity and type checked).
    fn call_value(
        &mut self,
        e: &ast::Expr,
        name: &ast::Ident,
        args: &[ast::Expr],
        dt: DType,
        reads: &mut Vec<(TensorId, Vec<Lin>)>,
    ) -> Res<ir::Expr> {
        if let Some(t) = self.readable(name, e.span)? {
            let mut index = Vec::with_capacity(args.len());
            for a in args {
                index.push(self.lin(a, Mode::Index)?);
            }
            let aff = index.iter().map(Lin::to_aff).collect();
            reads.push((t, index));
            return Ok(ir::Expr::Read {
                tensor: t,
                index: aff,
                span: e.span,
            });
        }
        if self.tc {
            if let Some(b) = super::tc::builtin(&name.name) {
                return self.tc_builtin(b, name, args, e.span, dt, reads);
            }
        }
        let arity_err = |s: &Self, want: usize, usage: &str| {
            s.err(
                e.span,
                format!(
                    "`{}` takes {want} argument{}, {} given",
                    name.name,
                    if want == 1 { "" } else { "s" },
                    args.len()
                ),
                "wrong number of arguments",
                format!("write {usage}"),
            )
        };
        Ok(match name.name.as_str() {
            "select" => {
                if args.len() != 3 {
                    return Err(arity_err(self, 3, "`select(cond, a, b)`"));
                }
                ir::Expr::Select(
                    Box::new(self.value(&args[0], dt, reads)?),
                    Box::new(self.value(&args[1], dt, reads)?),
                    Box::new(self.value(&args[2], dt, reads)?),
                )
            }
            "floordiv" => {
                return Err(self.err(
                    name.span,
                    "`floordiv` is only allowed in indices",
                    "used as a value",
                    "divide values with `/` (truncating for integers)",
                ))
            }
            "cast" => {
                return Err(self.err(
                    name.span,
                    "`cast` needs a type",
                    "no target type",
                    "write `cast<i32>(e)` (any of f16, f32, f64, i8, i32, i64)",
                ))
            }
            other => {
                let Some(f) = func_by_name(other) else {
                    // `readable` reports unknown names.
                    return Err(self.readable(name, e.span).err().unwrap_or_else(|| {
                        self.err(
                            name.span,
                            format!("unknown function `{other}`"),
                            "not a built-in function",
                            format!("the functions are {KNOWN_FUNCTIONS}"),
                        )
                    }));
                };
                if args.len() != f.arity() {
                    let usage = if f.arity() == 2 {
                        format!("`{other}(a, b)`")
                    } else {
                        format!("`{other}(x)`")
                    };
                    return Err(arity_err(self, f.arity(), &usage));
                }
                if f == Func::SatI8 && !self.sat_i8_stmt {
                    return Err(self.err(
                        name.span,
                        "`sat_i8` saturates the value stored into an i8 tensor".to_string(),
                        "not the whole right side of an i8 statement",
                        "write it as the whole right side of a statement whose left side is i8: `Q(i, j) = sat_i8(C(i, j))` (the right side is then computed in i32)".to_string(),
                    ));
                }
                if f == Func::SatI8 {
                    if let Some(r) = self.requant(&args[0], dt, reads)? {
                        return Ok(r);
                    }
                }
                if f.float_only() && !dt.is_float() {
                    return Err(self.type_mismatch(
                        name.span,
                        dt,
                        format!("`{other}` is defined for floating-point types only"),
                    ));
                }
                let mut out = Vec::with_capacity(args.len());
                for a in args {
                    out.push(self.value(a, dt, reads)?);
                }
                ir::Expr::Call(f, out)
            }
        })
    }

    /// The f32 scale of `sat_i8(x * scale)`: a float literal, or a scalar input of a float
    /// type (its value read as f32). `None` for anything else; an error for a float tensor
    /// element, which is no single scale.
    fn requant_scale(&self, e: &ast::Expr) -> Res<Option<ir::Expr>> {
        match &e.kind {
            ExprKind::Float(v) => Ok(Some(ir::Expr::Lit(*v))),
            ExprKind::Name(n) => Ok(self
                .scalar_idx
                .get(n)
                .filter(|&&k| self.scalars[k].dtype.is_float())
                .map(|&k| ir::Expr::Scalar(k))),
            ExprKind::Call { name, .. } => match self.tensor_idx.get(&name.name) {
                Some(&t) if self.tensors[t].dtype.is_some_and(|d| d.is_float()) => {
                    Err(self.err(
                        e.span,
                        format!(
                            "the scale of `sat_i8(x * scale)` must be one f32 value, and `{}` is an {} tensor",
                            name.name,
                            self.tensors[t].dtype.map_or("float".into(), |d| d.to_string())
                        ),
                        "a tensor element, not a scalar",
                        "declare the scale as a scalar input of the def (`f32 scale`) or write a float literal (`0.37`); requantisation applies one scale to every element, as Gemmini's mvout does",
                    ))
                }
                _ => Ok(None),
            },
            _ => Ok(None),
        }
    }

    /// `sat_i8(x * scale)` (or `sat_i8(relu(x * scale))`) with an f32 scale (a float
    /// literal or a float scalar input) in an i8 statement: requantisation of the i32 value
    /// `x`, [`Func::RequantI8`] (with the ReLU applied after it). `None` when the argument
    /// has no f32 scale.
    fn requant(
        &mut self,
        arg: &ast::Expr,
        dt: DType,
        reads: &mut Vec<(TensorId, Vec<Lin>)>,
    ) -> Res<Option<ir::Expr>> {
        let (relu, prod) = match &arg.kind {
            ExprKind::Call { name, args } if name.name == "relu" && args.len() == 1 => {
                match &args[0].kind {
                    ExprKind::Bin(ir::BinOp::Mul, ..) => (true, &args[0]),
                    _ => return Ok(None),
                }
            }
            _ => (false, arg),
        };
        let ExprKind::Bin(ir::BinOp::Mul, a, b) = &prod.kind else {
            return Ok(None);
        };
        let (x, scale) = if let Some(sc) = self.requant_scale(b)? {
            (a, sc)
        } else if let Some(sc) = self.requant_scale(a)? {
            (b, sc)
        } else {
            return Ok(None);
        };
        // The scaled value is an i32 (an accumulator's); an i8 element read directly is
        // not what requantisation scales.
        if let ExprKind::Call { name, .. } = &x.kind {
            if let Some(&t) = self.tensor_idx.get(&name.name) {
                if let Some(d @ (DType::I8 | DType::F16 | DType::F32 | DType::F64)) =
                    self.tensors[t].dtype
                {
                    return Err(self.err(
                        x.span,
                        format!(
                            "`sat_i8(x * scale)` requantises an i32 value, and `{}` is {d}",
                            name.name
                        ),
                        format!("an {d} element"),
                        "scale the i32 result of a product (`C(i, j) += A(i, k) * B(k, j)` with `i32 C`), or widen an integer operand first with `cast<i32>(…)`",
                    ));
                }
            }
        }
        let v = ir::Expr::Call(Func::RequantI8, vec![self.value(x, dt, reads)?, scale]);
        Ok(Some(if relu {
            ir::Expr::Call(Func::Relu, vec![v])
        } else {
            v
        }))
    }

    /// The shape of a tensor from its first write.
    fn infer_shape(
        &self,
        t: TensorId,
        st: &ast::Stmt,
        lhs_index: &[Lin],
        bounds: &[Bounds],
    ) -> Res<Vec<Lin>> {
        let info = &self.tensors[t];
        let mut shape = Vec::with_capacity(lhs_index.len());
        for (d, (idx, src)) in lhs_index.iter().zip(&st.lhs_index).enumerate() {
            let plain = match idx.terms.iter().next() {
                Some((Atom::Iter(k), 1)) if idx.terms.len() == 1 && idx.c == 0 => Some(*k),
                _ => None,
            };
            let problem = match plain {
                None => Some((
                    src.span,
                    format!("dimension {} is not indexed by a plain index", d + 1),
                )),
                Some(k) => {
                    let b = &bounds[k];
                    let name = &self.iters[k].0;
                    match (b.lower.as_slice(), b.upper.as_slice()) {
                        ([lo], [hi]) if lo.as_const() == Some(0) && hi.is_param_only() => {
                            shape.push(hi.clone());
                            None
                        }
                        ([lo], _) if lo.as_const() != Some(0) => Some((
                            src.span,
                            if self.tc {
                                format!(
                                    "the range of `{name}` does not start at 0 (TC would start \
                                     the tensor there; polyc's tensors start at 0)"
                                )
                            } else {
                                format!("the range of `{name}` does not start at 0")
                            },
                        )),
                        ([_], [_]) => Some((
                            src.span,
                            format!("the range of `{name}` ends at a bound that uses indices"),
                        )),
                        _ => Some((
                            src.span,
                            format!("`{name}` has several bounds, so the extent is ambiguous"),
                        )),
                    }
                }
            };
            if let Some((span, label)) = problem {
                let help = if info.role == TensorRole::Output {
                    format!(
                        "declare the shape in the def's outputs, e.g. `{}(M, N) {}`",
                        if self.tc { "float" } else { "f32" },
                        info.name
                    )
                } else {
                    format!(
                        "a temporary's shape comes from its first write: index it with plain \
                         indices whose ranges are `0:extent` (add `where i in 0:N`), or make \
                         `{}` an output with a declared shape",
                        info.name
                    )
                };
                return Err(Box::new(
                    self.src
                        .error(
                            info.span,
                            format!("cannot infer the shape of `{}`; declare it", info.name),
                            "shape unknown",
                            help,
                        )
                        .with_related(super::common::note(
                            self.src,
                            span,
                            "in its first write",
                            label,
                        )),
                ));
            }
        }
        Ok(shape)
    }

    fn finish(self, def: &ast::Def) -> Res<Program> {
        if def.stmts.is_empty() {
            return Err(self.err(
                def.name.span,
                format!("`def {}` has no statements", def.name.name),
                "nothing to compute",
                "write at least one statement that computes each output",
            ));
        }
        let mut tensors = Vec::with_capacity(self.tensors.len());
        for t in &self.tensors {
            if t.role == TensorRole::Output && !t.written && t.shape.is_some() {
                return Err(self.err(
                    t.span,
                    format!("output `{}` is never written", t.name),
                    "no statement writes it",
                    format!(
                        "write `{}` in a statement, or remove it from the outputs",
                        t.name
                    ),
                ));
            }
            let (Some(dtype), Some(shape)) = (t.dtype, &t.shape) else {
                return Err(self.err(
                    t.span,
                    format!("output `{}` is never written", t.name),
                    "its type or shape is unknown",
                    format!(
                        "write `{}` in a statement, or declare its type and shape, e.g. \
                         `f32(N) {}`",
                        t.name, t.name
                    ),
                ));
            };
            tensors.push(Tensor {
                name: t.name.clone(),
                dtype,
                shape: shape.iter().map(Lin::to_aff).collect(),
                role: t.role,
                span: t.span,
            });
        }
        Ok(Program {
            name: def.name.name.clone(),
            params: self.params,
            tensors,
            scalars: self.scalars,
            inputs: self.inputs,
            outputs: self.outputs,
            stmts: self.stmts,
            loops: self.loops.into_iter().flatten().collect(),
        })
    }
}

/// The value of a constant expression (a literal, possibly cast).
fn constant(e: &ir::Expr) -> Option<f64> {
    match e {
        ir::Expr::Lit(v) => Some(*v),
        ir::Expr::Cast(_, a) => constant(a),
        _ => None,
    }
}

/// The value of an expression made of literals, `-`, `+`, `-` and `*` only (a divisor
/// such as `2 - 2`), in exact integer-valued arithmetic where it stays exact.
fn folded(e: &ir::Expr) -> Option<f64> {
    match e {
        ir::Expr::Lit(v) => Some(*v),
        ir::Expr::Cast(_, a) => folded(a),
        ir::Expr::Neg(a) => folded(a).map(|v| -v),
        ir::Expr::Bin(op, a, b) => {
            let (a, b) = (folded(a)?, folded(b)?);
            match op {
                ir::BinOp::Add => Some(a + b),
                ir::BinOp::Sub => Some(a - b),
                ir::BinOp::Mul => Some(a * b),
                ir::BinOp::Div | ir::BinOp::Rem => None,
            }
        }
        _ => None,
    }
}

/// The first use of `name` as a bare value in `e`.
fn value_use(e: &ast::Expr, name: &str) -> Option<Span> {
    match &e.kind {
        ExprKind::Name(n) => (n == name).then_some(e.span),
        ExprKind::Int(_) | ExprKind::Float(_) => None,
        ExprKind::Neg(a) | ExprKind::Cast { arg: a, .. } => value_use(a, name),
        ExprKind::Bin(_, a, b) | ExprKind::Cmp(_, a, b) => {
            value_use(a, name).or_else(|| value_use(b, name))
        }
        ExprKind::Call { args, .. } => args.iter().find_map(|a| value_use(a, name)),
    }
}
