//! The parts of name resolution and typing that give a Tensor Comprehensions file TC's
//! meaning: TC's type promotion (the type of an output without one), TC's built-ins,
//! TC's integer division (rounding towards −∞, a remainder that is never negative), and
//! the split of a statement at a conditional whose condition is affine in the indices.

use super::super::ast::{self, ExprKind, Ident};
use super::super::lin::Lin;
use super::super::tc::{self, match_types, Builtin, TcType};
use super::super::Res;
use super::{Mode, Sema};
use crate::ir::{self, BinOp, CmpOp, DType, Func, Iter, TensorId};

/// Conditionals split per statement, at most (each split at most doubles or triples the
/// statement's pieces).
const MAX_SPLITS: usize = 3;

/// One piece of a split statement: its iterators (with the branch's bounds added) and its
/// right-hand side.
type Piece = (Vec<Iter>, ir::Expr);

fn lit(v: f64) -> Box<ir::Expr> {
    Box::new(ir::Expr::Lit(v))
}

fn bin(op: BinOp, a: ir::Expr, b: ir::Expr) -> ir::Expr {
    ir::Expr::Bin(op, Box::new(a), Box::new(b))
}

fn cmp(op: CmpOp, a: ir::Expr, b: ir::Expr) -> ir::Expr {
    ir::Expr::Cmp(op, Box::new(a), Box::new(b))
}

fn select(c: ir::Expr, a: ir::Expr, b: ir::Expr) -> ir::Expr {
    ir::Expr::Select(Box::new(c), Box::new(a), Box::new(b))
}

impl<'a> Sema<'a> {
    /// The TC type of an expression, by TC's rules: integer literals, indices and sizes
    /// are `int32`, literals with a fraction `float`, comparisons `bool`; arithmetic
    /// promotes its operands ([`match_types`]); built-ins other than `min`/`max` are at
    /// least `float`.
    pub(super) fn tc_type(&self, e: &ast::Expr) -> TcType {
        match &e.kind {
            ExprKind::Int(_) => TcType::INT32,
            ExprKind::Float(_) => TcType::FLOAT,
            ExprKind::Name(n) => match self.scalar_idx.get(n) {
                Some(&k) if !self.iters.iter().any(|(x, _)| x == n) => {
                    TcType::of(self.scalars[k].dtype)
                }
                _ => TcType::INT32,
            },
            ExprKind::Call { name, args } => {
                if let Some(&t) = self.tensor_idx.get(&name.name) {
                    return TcType::of(self.tensors[t].dtype.unwrap_or(DType::F32));
                }
                let all = |start: Option<TcType>| {
                    args.iter()
                        .map(|a| self.tc_type(a))
                        .fold(start, |acc, t| Some(acc.map_or(t, |a| match_types(a, t))))
                        .unwrap_or(TcType::FLOAT)
                };
                match name.name.as_str() {
                    "select" if args.len() == 3 => {
                        match_types(self.tc_type(&args[1]), self.tc_type(&args[2]))
                    }
                    "min" | "max" | "abs" | "relu" => all(None),
                    _ => all(Some(TcType::FLOAT)),
                }
            }
            ExprKind::Cast { ty, .. } => TcType::of(ty.dtype),
            ExprKind::Neg(a) => self.tc_type(a),
            ExprKind::Bin(_, a, b) => match_types(self.tc_type(a), self.tc_type(b)),
            ExprKind::Cmp(..) => TcType::BOOL,
        }
    }

    /// The element type TC gives a tensor that its first statement defines: the type of
    /// the right-hand side.
    pub(super) fn tc_infer_type(&self, st: &ast::Stmt, lhs: TensorId) -> Res<DType> {
        let t = self.tc_type(&st.rhs);
        if let Some(d) = t.dtype() {
            return Ok(d);
        }
        let name = &self.tensors[lhs].name;
        let help = if t == TcType::BOOL {
            format!(
                "a comparison is a `bool` in TC; write `cond ? 1.0 : 0.0` (or `float(cond)`) \
                 to store numbers, or declare `{name}` with a type after `->`"
            )
        } else {
            format!(
                "cast the right-hand side to one of {} (e.g. `int32(…)`), or declare `{name}` \
                 with such a type after `->`",
                tc::SUPPORTED_TYPES
            )
        };
        Err(self.err(
            st.rhs.span,
            format!(
                "TC makes `{name}` a `{}` tensor, a type polyc does not have",
                t.name()
            ),
            format!("this expression is a `{}`", t.name()),
            help,
        ))
    }

    /// TC assigns a value to a tensor of a narrower type only through an explicit cast.
    pub(super) fn tc_check_narrowing(&self, st: &ast::Stmt, d: DType) -> Res<()> {
        let t = self.tc_type(&st.rhs);
        let want = TcType::of(d);
        if match_types(t, want) == want {
            return Ok(());
        }
        Err(self.err(
            st.rhs.span,
            format!(
                "TC does not assign a `{}` value to `{}`, a `{}` tensor, without a cast",
                t.name(),
                st.lhs.name,
                want.name()
            ),
            format!("this expression is a `{}`", t.name()),
            format!(
                "cast the right-hand side, `{}(…)`, or give `{}` a wider type",
                want.name(),
                st.lhs.name
            ),
        ))
    }

    /// `a / b` and `a % b` with TC's meaning: on integers, division rounds towards −∞ for
    /// a positive divisor (towards +∞ for a negative one) and the remainder is never
    /// negative (Halide's Euclidean division); on floats `/` is the usual division and `%`
    /// is refused.
    pub(super) fn tc_division(
        &mut self,
        op: BinOp,
        a: &ast::Expr,
        b: &ast::Expr,
        span: ir::Span,
        dt: DType,
        reads: &mut Vec<(TensorId, Vec<Lin>)>,
    ) -> Res<ir::Expr> {
        let t = match_types(self.tc_type(a), self.tc_type(b));
        if t.is_float() && op == BinOp::Rem {
            return Err(self.err(
                span,
                "TC's `%` on floating-point values is not supported by polyc",
                format!("a `{}` remainder", t.name()),
                "TC's floating-point `%` follows the divisor's sign, C's `fmod` the \
                 dividend's; compute it with integers, or as `a - b * …` explicitly",
            ));
        }
        let va = self.value(a, dt, reads)?;
        let vb = self.value(b, dt, reads)?;
        if t.is_float() {
            return Ok(bin(BinOp::Div, va, vb));
        }
        let b_pos = || cmp(CmpOp::Gt, vb.clone(), ir::Expr::Lit(0.0));
        let quotient = if dt.is_float() {
            // The operands are integers held in floats: the exact quotient rounded by
            // hand, through a truncating conversion to i64.
            let x = bin(BinOp::Div, va.clone(), vb.clone());
            let t = ir::Expr::Cast(DType::I64, Box::new(x.clone()));
            let floor = select(
                cmp(CmpOp::Lt, x.clone(), t.clone()),
                ir::Expr::Bin(BinOp::Sub, Box::new(t.clone()), lit(1.0)),
                t.clone(),
            );
            let ceil = select(
                cmp(CmpOp::Gt, x, t.clone()),
                ir::Expr::Bin(BinOp::Add, Box::new(t.clone()), lit(1.0)),
                t,
            );
            select(b_pos(), floor, ceil)
        } else {
            let q = bin(BinOp::Div, va.clone(), vb.clone());
            let r = bin(BinOp::Rem, va.clone(), vb.clone());
            if op == BinOp::Rem {
                return Ok(select(
                    cmp(CmpOp::Lt, r.clone(), ir::Expr::Lit(0.0)),
                    select(
                        b_pos(),
                        bin(BinOp::Add, r.clone(), vb.clone()),
                        bin(BinOp::Sub, r.clone(), vb.clone()),
                    ),
                    r,
                ));
            }
            select(
                cmp(CmpOp::Lt, r, ir::Expr::Lit(0.0)),
                select(
                    b_pos(),
                    ir::Expr::Bin(BinOp::Sub, Box::new(q.clone()), lit(1.0)),
                    ir::Expr::Bin(BinOp::Add, Box::new(q.clone()), lit(1.0)),
                ),
                q,
            )
        };
        Ok(match op {
            BinOp::Rem => bin(BinOp::Sub, va, bin(BinOp::Mul, vb, quotient)),
            _ => quotient,
        })
    }

    /// A call of one of TC's built-ins.
    pub(super) fn tc_builtin(
        &mut self,
        b: Result<Builtin, ()>,
        name: &Ident,
        args: &[ast::Expr],
        span: ir::Span,
        dt: DType,
        reads: &mut Vec<(TensorId, Vec<Lin>)>,
    ) -> Res<ir::Expr> {
        let Ok(b) = b else {
            return Err(self.err(
                name.span,
                format!("TC's built-in `{}` is not supported by polyc", name.name),
                "not computed by polyc",
                format!(
                    "the built-ins polyc computes are {}; express `{}` with them",
                    tc::SUPPORTED_BUILTINS,
                    name.name
                ),
            ));
        };
        if args.len() != b.arity() {
            let want = b.arity();
            return Err(self.err(
                span,
                format!(
                    "`{}` takes {want} argument{}, {} given",
                    name.name,
                    if want == 1 { "" } else { "s" },
                    args.len()
                ),
                "wrong number of arguments",
                format!(
                    "write `{}({})`",
                    name.name,
                    ["a", "b", "c"][..want.min(3)].join(", ")
                ),
            ));
        }
        if !dt.is_float() && !matches!(b, Builtin::Func(Func::Max | Func::Min | Func::Abs)) {
            return Err(self.type_mismatch(
                name.span,
                dt,
                format!("`{}` is defined for floating-point types only", name.name),
            ));
        }
        let mut v = Vec::with_capacity(args.len());
        for a in args {
            v.push(self.value(a, dt, reads)?);
        }
        let mut v = v.into_iter();
        let mut next = || v.next().expect("arity checked");
        Ok(match b {
            Builtin::Func(f) => {
                let mut out = vec![next()];
                if f.arity() == 2 {
                    out.push(next());
                }
                ir::Expr::Call(f, out)
            }
            Builtin::Fdivide => {
                let x = next();
                bin(BinOp::Div, x, next())
            }
            Builtin::Fdim => {
                let x = next();
                let d = bin(BinOp::Sub, x, next());
                ir::Expr::Call(Func::Max, vec![d, ir::Expr::Lit(0.0)])
            }
            Builtin::Fma => {
                let x = next();
                let p = bin(BinOp::Mul, x, next());
                bin(BinOp::Add, p, next())
            }
        })
    }

    /// The pieces of a statement's update: one per branch of the first conditional (in
    /// the order of a left-to-right walk) whose condition compares affine expressions of
    /// the indices, each over the part of the domain where that branch is taken, split
    /// again at the next such conditional (at most [`MAX_SPLITS`] deep).
    pub(super) fn tc_split_guards(
        &mut self,
        rhs: &ast::Expr,
        iters: &[Iter],
        dt: DType,
        depth: usize,
    ) -> Res<Vec<Piece>> {
        let guard = if depth < MAX_SPLITS {
            self.first_guard(rhs)
        } else {
            None
        };
        let Some((node, branches)) = guard else {
            let v = self.value(rhs, dt, &mut Vec::new())?;
            return Ok(vec![(iters.to_vec(), v)]);
        };
        let mut out = Vec::new();
        for (pieces, branch) in branches {
            let replaced = replace(rhs, node, branch);
            for conj in pieces {
                let mut its = iters.to_vec();
                for g in &conj {
                    if add_constraint(&mut its, g).is_none() {
                        return Err(self.err(
                            rhs.span,
                            "integer overflow while splitting a conditional",
                            "the bounds of this branch do not fit in 64 bits",
                            "use smaller constants in the condition",
                        ));
                    }
                }
                out.extend(self.tc_split_guards(&replaced, &its, dt, depth + 1)?);
            }
        }
        Ok(out)
    }

    /// The first `select(c, a, b)` in `e` whose condition is an affine comparison that
    /// can become bounds; with, per branch, the conjunctions of `g >= 0` that describe
    /// where it is taken.
    #[allow(clippy::type_complexity)]
    fn first_guard<'e>(
        &mut self,
        e: &'e ast::Expr,
    ) -> Option<(&'e ast::Expr, Vec<(Vec<Vec<Lin>>, &'e ast::Expr)>)> {
        match &e.kind {
            ExprKind::Call { name, args } => {
                if name.name == "select"
                    && args.len() == 3
                    && !self.tensor_idx.contains_key(&name.name)
                {
                    if let Some((t, f)) = self.affine_condition(&args[0]) {
                        return Some((e, vec![(t, &args[1]), (f, &args[2])]));
                    }
                }
                args.iter().find_map(|a| self.first_guard(a))
            }
            ExprKind::Cast { arg, .. } | ExprKind::Neg(arg) => self.first_guard(arg),
            ExprKind::Bin(_, a, b) | ExprKind::Cmp(_, a, b) => {
                self.first_guard(a).or_else(|| self.first_guard(b))
            }
            _ => None,
        }
    }

    /// For `l op r` with both sides affine in the statement's indices and sizes, the
    /// pieces (conjunctions of `g >= 0`) where it holds and where it does not; `None`
    /// when a piece cannot be written as bounds of an index.
    #[allow(clippy::type_complexity)]
    fn affine_condition(&mut self, c: &ast::Expr) -> Option<(Vec<Vec<Lin>>, Vec<Vec<Lin>>)> {
        let ExprKind::Cmp(op, l, r) = &c.kind else {
            return None;
        };
        let l = self.try_lin(l)?;
        let r = self.try_lin(r)?;
        let f = l.sub(&r)?;
        let neg = f.scale(-1)?;
        let (ge, gt, le, lt) = (f.clone(), f.add_const(-1)?, neg.clone(), neg.add_const(-1)?);
        let (t, e) = match op {
            CmpOp::Ge => (vec![vec![ge]], vec![vec![lt]]),
            CmpOp::Gt => (vec![vec![gt]], vec![vec![le]]),
            CmpOp::Le => (vec![vec![le]], vec![vec![gt]]),
            CmpOp::Lt => (vec![vec![lt]], vec![vec![ge]]),
            CmpOp::Eq => (vec![vec![ge, le]], vec![vec![gt], vec![lt]]),
            CmpOp::Ne => (vec![vec![gt], vec![lt]], vec![vec![ge, le]]),
        };
        let ok = |pieces: &Vec<Vec<Lin>>| {
            pieces
                .iter()
                .flatten()
                .all(|g| last_iter(g).is_some_and(|v| !g.iter_in_division(v)))
        };
        (ok(&t) && ok(&e)).then_some((t, e))
    }

    /// The affine form of `e` when it uses only this statement's indices, sizes, integer
    /// constants, `+ - *`, `floordiv` and `%`; `None` otherwise (no new index is made).
    fn try_lin(&mut self, e: &ast::Expr) -> Option<Lin> {
        fn plain(s: &Sema, e: &ast::Expr) -> bool {
            match &e.kind {
                ExprKind::Int(_) => true,
                ExprKind::Name(n) => {
                    s.iters.iter().any(|(x, _)| x == n) || s.param_idx.contains_key(n)
                }
                ExprKind::Neg(a) => plain(s, a),
                ExprKind::Bin(BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Rem, a, b) => {
                    plain(s, a) && plain(s, b)
                }
                ExprKind::Call { name, args } => {
                    name.name == "floordiv" && args.iter().all(|a| plain(s, a))
                }
                _ => false,
            }
        }
        if !plain(self, e) {
            return None;
        }
        self.lin(e, Mode::Index).ok()
    }
}

/// The last index (in the statement's order) that `g` mentions.
fn last_iter(g: &Lin) -> Option<usize> {
    g.max_iter()
}

/// Adds `g >= 0` to the bounds of the last index in `g` (the others come before it, so
/// the bound may use them). `None` on overflow, or when `g` has no such index.
fn add_constraint(iters: &mut [Iter], g: &Lin) -> Option<()> {
    let v = last_iter(g).filter(|&v| v < iters.len())?;
    let a = g.coeff(v);
    let rest = g.without_iter(v);
    if a > 0 {
        // a·v + rest >= 0  =>  v >= -floor(rest / a)
        let lo = rest.floordiv(a)?.scale(-1)?;
        iters[v].lower.push(lo.to_aff());
    } else if a < 0 {
        // rest - |a|·v >= 0  =>  v < floor(rest / |a|) + 1
        let hi = rest.floordiv(a.checked_neg()?)?.add_const(1)?;
        iters[v].upper.push(hi.to_aff());
    } else {
        return None;
    }
    Some(())
}

/// `e` with the node `target` (compared by address) replaced by `with`.
fn replace(e: &ast::Expr, target: &ast::Expr, with: &ast::Expr) -> ast::Expr {
    if std::ptr::eq(e, target) {
        return with.clone();
    }
    let kind = match &e.kind {
        ExprKind::Call { name, args } => ExprKind::Call {
            name: name.clone(),
            args: args.iter().map(|a| replace(a, target, with)).collect(),
        },
        ExprKind::Cast { ty, arg } => ExprKind::Cast {
            ty: *ty,
            arg: Box::new(replace(arg, target, with)),
        },
        ExprKind::Neg(a) => ExprKind::Neg(Box::new(replace(a, target, with))),
        ExprKind::Bin(op, a, b) => ExprKind::Bin(
            *op,
            Box::new(replace(a, target, with)),
            Box::new(replace(b, target, with)),
        ),
        ExprKind::Cmp(op, a, b) => ExprKind::Cmp(
            *op,
            Box::new(replace(a, target, with)),
            Box::new(replace(b, target, with)),
        ),
        other => other.clone(),
    };
    ast::Expr {
        kind,
        span: e.span,
        depth: e.depth,
    }
}
