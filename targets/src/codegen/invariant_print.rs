//! Loop-invariant subexpressions computed once before their loop.
//!
//! A statement such as `Y(r, j) = (X(r, j) - m(r)) * rsqrt(v(r) / N + eps)` computes
//! `rsqrt(v(r) / N + eps)` for every `j`, though it depends on `r` only. C compilers do not
//! always move it out of the `j` loop: `sqrtf` may set `errno`, and gcc does not see that
//! the loop's stores leave `v` alone when `v` is a local temporary. Layer norm written this
//! way ran 4× slower than with the statistic in a temporary.
//!
//! Before a loop whose body is statements only (no guard, copy or inner loop between the
//! loop and them), each statement's largest subexpressions that
//! - compute something costly (a floating-point division or remainder, or a math function
//!   other than `max`, `min`, `relu` and `abs`),
//! - read no element that depends on the loop's iterator (every index uses only
//!   iterators whose values do not involve it or anything the body defines),
//! - and read no tensor that a statement of the body writes,
//!
//! are evaluated once into `const` locals (`polyc_invK`), in a block around the loop, and
//! the statement uses the local. The value is evaluated only where the loop runs at least
//! once (its condition at its first iteration), so an empty loop reads nothing.

use std::fmt::Write;

use polyhedral::ir::{BinOp, DType, Expr, Func, Stmt, StmtBody};

use super::{c_ident, compute_type, indent, Emitter};
use crate::codegen::kir::{KExpr, KNode, LocalRef};

/// One statement of a loop body: the statement, its iterators' values and its tiles.
type BodyStmt<'k> = (usize, &'k [KExpr], &'k [LocalRef]);

impl Emitter<'_> {
    /// Prints the loop `n` inside a block that first computes its statements' invariant
    /// subexpressions, and returns `true`; returns `false` (printing nothing) where none
    /// applies.
    pub(crate) fn hoisted_loop(&self, out: &mut String, n: &KNode, level: usize) -> bool {
        if self.dialect.device_code() {
            return false;
        }
        let KNode::For {
            iter,
            init,
            cond,
            body,
            ..
        } = n
        else {
            return false;
        };
        let mut stmts = Vec::new();
        let mut defined = vec![iter.clone()];
        if !body_statements(body, &mut stmts, &mut defined) {
            return false;
        }
        let written: Vec<usize> = stmts
            .iter()
            .map(|(s, _, _)| self.prog.stmts[*s].lhs)
            .collect();
        let mut decls = Vec::new();
        let mut hoists = Vec::new();
        for (s, args, locals) in &stmts {
            let st = &self.prog.stmts[*s];
            let variant: Vec<bool> = args
                .iter()
                .map(|a| defined.iter().any(|d| a.mentions(d)))
                .collect();
            let found = invariant_parts(st, &variant, &written);
            if found.is_empty() {
                continue;
            }
            let k = self.hoist_count.get();
            self.hoist_count.set(k + 1);
            let names: Vec<String> = st
                .iters
                .iter()
                .map(|i| format!("polyc_inv{k}_{}", c_ident(&i.name)))
                .collect();
            *self.cur.borrow_mut() = locals.to_vec();
            let mut values: Vec<(String, String)> = Vec::new();
            for e in found {
                let text = self.expr(st, &names, e);
                // The same value written twice gets one local.
                let name = match values.iter().find(|(_, v)| *v == text) {
                    Some((name, _)) => name.clone(),
                    None => {
                        let name = format!("polyc_inv{k}_{}", values.len());
                        values.push((name.clone(), text));
                        name
                    }
                };
                hoists.push((e as *const Expr, name));
            }
            self.cur.borrow_mut().clear();
            decls.push((st, args, names, values));
        }
        if hoists.is_empty() {
            return false;
        }
        let first = cond.substitute(&|v| (v == iter.as_str()).then(|| init.clone()));
        let pushed = hoists.len();
        self.hoisted.borrow_mut().extend(hoists);
        let mut inner = String::new();
        self.node_unhoisted(&mut inner, n, level + 1);
        let keep = self.hoisted.borrow().len() - pushed;
        let hoists: Vec<(*const Expr, String)> = self.hoisted.borrow_mut().split_off(keep);
        let used = |name: &str| uses_name(&inner, name);
        if !hoists.iter().any(|(_, name)| used(name)) {
            // No local is used: the loop as printed, one level out (no block around it).
            for line in inner.lines() {
                out.push_str(line.strip_prefix("  ").unwrap_or(line));
                out.push('\n');
            }
            return true;
        }
        indent(out, level);
        out.push_str("{\n");
        // (A loop that always runs, such as `c1 <= 2047` from 0, needs no test.)
        let runs = match first.eval(&|_| None) {
            Some(v) if v != 0 => None,
            _ => Some(self.kexpr(&first, 0)),
        };
        for (st, args, names, values) in decls {
            let values: Vec<_> = values.into_iter().filter(|(name, _)| used(name)).collect();
            if values.is_empty() {
                continue;
            }
            for (name, a) in names.iter().zip(args.iter()) {
                if values.iter().any(|(_, v)| uses_name(v, name)) {
                    indent(out, level + 1);
                    let _ = writeln!(out, "const {} {name} = {};", self.ix(), self.kexpr(a, 0));
                }
            }
            let c = compute_type(st.dtype).c_type();
            for (name, v) in values {
                indent(out, level + 1);
                match &runs {
                    Some(runs) => {
                        let _ = writeln!(out, "const {c} {name} = ({runs}) ? {v} : ({c})0;");
                    }
                    None => {
                        let _ = writeln!(out, "const {c} {name} = {v};");
                    }
                }
            }
        }
        out.push_str(&inner);
        indent(out, level);
        out.push_str("}\n");
        true
    }

    /// The replacement of `e` by a hoisted local, if it has one.
    pub(crate) fn hoisted_name(&self, e: &Expr) -> Option<String> {
        self.hoisted
            .borrow()
            .iter()
            .find(|(p, _)| std::ptr::eq(*p, e))
            .map(|(_, name)| name.clone())
    }
}

/// Collects the statements of a loop body made of blocks, `Let`s and statements only,
/// with the names the `Let`s define; `false` where anything else is in it.
fn body_statements<'k>(
    n: &'k KNode,
    out: &mut Vec<BodyStmt<'k>>,
    defined: &mut Vec<String>,
) -> bool {
    match n {
        KNode::Block(v) => v.iter().all(|c| body_statements(c, out, defined)),
        KNode::Let { name, body, .. } => {
            defined.push(name.clone());
            body_statements(body, out, defined)
        }
        KNode::Stmt { stmt, args, locals } => {
            out.push((*stmt, args, locals));
            true
        }
        _ => false,
    }
}

/// Whether `text` uses the C name `name` (not as the prefix of a longer name).
fn uses_name(text: &str, name: &str) -> bool {
    text.match_indices(name).any(|(at, _)| {
        !text[at + name.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// The largest costly subexpressions of `st`'s right-hand side that use no iterator
/// marked in `variant` and read no tensor of `written` (see the module's doc).
fn invariant_parts<'p>(st: &'p Stmt, variant: &[bool], written: &[usize]) -> Vec<&'p Expr> {
    let ct = compute_type(st.dtype);
    if ct != st.dtype || !matches!(ct, DType::F32 | DType::F64) {
        return Vec::new();
    }
    let StmtBody::Update(_, e) = &st.body else {
        return Vec::new();
    };
    let mut out = Vec::new();
    collect(e, variant, written, &mut out);
    out
}

/// Adds the largest hoistable parts of `e` to `out`; returns whether `e` itself is
/// invariant (so that its parent may be taken whole).
fn collect<'p>(e: &'p Expr, variant: &[bool], written: &[usize], out: &mut Vec<&'p Expr>) -> bool {
    let children: Vec<&Expr> = match e {
        Expr::Lit(_) | Expr::Scalar(_) | Expr::SizeValue(_) => return true,
        Expr::IterValue(i) => return !variant[*i],
        Expr::Read { tensor, index, .. } => {
            return !written.contains(tensor)
                && index
                    .iter()
                    .all(|a| (0..variant.len()).all(|i| !variant[i] || !a.uses_iter(i)));
        }
        Expr::Neg(a) | Expr::Cast(_, a) => vec![a],
        Expr::Bin(_, a, b) | Expr::Cmp(_, a, b) => vec![a, b],
        Expr::Call(_, args) => args.iter().collect(),
        Expr::Select(c, a, b) => vec![c, a, b],
    };
    let start = out.len();
    let mut all = true;
    for c in &children {
        all &= collect(c, variant, written, out);
    }
    if all {
        // The whole of `e` is invariant: its parts found so far give way to it, if it is
        // worth a local; the parent may still take it.
        out.truncate(start);
        if costly(e) {
            out.push(e);
        }
    }
    all
}

/// Whether computing `e` (one node, whose operands are invariant) is worth a local: it or
/// a part of it divides or calls a costly math function.
fn costly(e: &Expr) -> bool {
    match e {
        Expr::Bin(BinOp::Div | BinOp::Rem, _, _) => true,
        Expr::Call(f, args) => {
            !matches!(
                f,
                Func::Max | Func::Min | Func::Relu | Func::Abs | Func::SatI8 | Func::RequantI8
            ) || args.iter().any(costly)
        }
        Expr::Neg(a) | Expr::Cast(_, a) => costly(a),
        Expr::Bin(_, a, b) | Expr::Cmp(_, a, b) => costly(a) || costly(b),
        Expr::Select(c, a, b) => costly(c) || costly(a) || costly(b),
        _ => false,
    }
}
