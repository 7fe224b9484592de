//! Value ranges of a kernel's integer expressions, to print its indices as 32-bit `int`
//! where every value provably fits (GPU kernels: 64-bit integer arithmetic costs two or
//! more instructions per operation there, and 64-bit loop counters hold two registers).
//!
//! The analysis is interval arithmetic over the kernel IR, sound for every value the
//! kernel computes:
//!
//! - a size parameter has its bound value; a symbolic one (or any other name the walk
//!   does not know: a host loop iterator, a block index) has no range, and the kernel keeps
//!   64-bit indices;
//! - a thread index `polyc_tidD` (`polyc_tidf`) lies in `[0, block extent − 1]`;
//! - a loop iterator lies between its initial value's lower end and the upper bound its
//!   condition states (`iter <= e`, `iter < e`, `e >= iter`, `e > iter`, or a conjunction
//!   holding one of them); a loop whose condition states no such bound has no range;
//! - a `Let` constant has its value's range, and every subexpression of every condition,
//!   statement argument, copy argument and tile offset is checked, not only its result.
//!
//! Every range must lie within ±[`INDEX32_LIMIT`] (2²⁹): a loop stepping past its bound
//! (a grid- or block-stride loop adds at most one more stride, never more than the loop's
//! own range, or a pipelined loop looks a few steps ahead) then stays below 2³¹. Tensor
//! offsets are `subscript · stride` sums within the tensor, so every tensor the kernel
//! touches must also hold at most 2²⁹ elements (checked by the caller, which knows the
//! shapes).

use std::collections::HashMap;

use crate::codegen::kir::{KCmp, KExpr, KNode, LocalRef};

/// The largest magnitude any value may have for the kernel to use 32-bit indices.
pub const INDEX32_LIMIT: i128 = 1 << 29;

/// A closed interval of integers.
type Range = (i128, i128);

/// The ranges known at one point of the walk.
struct Scope<'a> {
    /// Loop iterators and `Let` constants in scope.
    vars: HashMap<String, Range>,
    /// Names defined outside the kernel body (bound sizes, thread indices).
    outer: &'a dyn Fn(&str) -> Option<Range>,
}

fn fits(r: Range) -> bool {
    r.0 >= -INDEX32_LIMIT && r.1 <= INDEX32_LIMIT
}

/// The range of `e`, or `None` when some subexpression has no range or leaves ±2²⁹.
fn range(e: &KExpr, s: &Scope) -> Option<Range> {
    let r = match e {
        KExpr::Int(v) => (*v as i128, *v as i128),
        KExpr::Var(n) => match s.vars.get(n) {
            Some(r) => *r,
            None => (s.outer)(n)?,
        },
        KExpr::Add(a, b) => {
            let (x, y) = (range(a, s)?, range(b, s)?);
            (x.0 + y.0, x.1 + y.1)
        }
        KExpr::Sub(a, b) => {
            let (x, y) = (range(a, s)?, range(b, s)?);
            (x.0 - y.1, x.1 - y.0)
        }
        KExpr::Neg(a) => {
            let x = range(a, s)?;
            (-x.1, -x.0)
        }
        KExpr::Mul(a, b) => {
            let (x, y) = (range(a, s)?, range(b, s)?);
            let c = [x.0 * y.0, x.0 * y.1, x.1 * y.0, x.1 * y.1];
            (*c.iter().min()?, *c.iter().max()?)
        }
        KExpr::FloorDiv(a, b) | KExpr::Div(a, b) => {
            let (x, y) = (range(a, s)?, range(b, s)?);
            if y.0 <= 0 {
                return None;
            }
            // Positive divisor: the quotient's magnitude is at most the dividend's.
            let m = x.0.abs().max(x.1.abs());
            (x.0.min(0).max(-m), x.1.max(0).min(m))
        }
        KExpr::Rem(a, b) => {
            let (x, y) = (range(a, s)?, range(b, s)?);
            let m = y.0.abs().max(y.1.abs());
            if m == 0 {
                return None;
            }
            if x.0 >= 0 {
                (0, (m - 1).min(x.1))
            } else {
                (-(m - 1), m - 1)
            }
        }
        KExpr::Min(v) | KExpr::Max(v) => {
            let rs = v.iter().map(|x| range(x, s)).collect::<Option<Vec<_>>>()?;
            let lo = rs.iter().map(|r| r.0);
            let hi = rs.iter().map(|r| r.1);
            if matches!(e, KExpr::Min(_)) {
                (lo.min()?, hi.min()?)
            } else {
                (lo.max()?, hi.max()?)
            }
        }
        KExpr::Cmp(_, a, b) | KExpr::And(a, b) | KExpr::Or(a, b) => {
            range(a, s)?;
            range(b, s)?;
            (0, 1)
        }
        KExpr::Select(c, a, b) => {
            range(c, s)?;
            let (x, y) = (range(a, s)?, range(b, s)?);
            (x.0.min(y.0), x.1.max(y.1))
        }
    };
    fits(r).then_some(r)
}

/// The upper end a loop condition states for `iter`, over the ranges in scope.
fn upper_bound(iter: &str, cond: &KExpr, s: &Scope) -> Option<i128> {
    let is_iter = |e: &KExpr| matches!(e, KExpr::Var(v) if v == iter);
    match cond {
        KExpr::And(a, b) => match (upper_bound(iter, a, s), upper_bound(iter, b, s)) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        },
        KExpr::Cmp(KCmp::Le, a, b) if is_iter(a) => Some(range(b, s)?.1),
        KExpr::Cmp(KCmp::Lt, a, b) if is_iter(a) => Some(range(b, s)?.1 - 1),
        KExpr::Cmp(KCmp::Ge, a, b) if is_iter(b) => Some(range(a, s)?.1),
        KExpr::Cmp(KCmp::Gt, a, b) if is_iter(b) => Some(range(a, s)?.1 - 1),
        _ => None,
    }
}

fn refs_fit(locals: &[LocalRef], s: &Scope) -> bool {
    locals.iter().all(|l| {
        l.offset.iter().all(|e| range(e, s).is_some())
            && l.block.as_ref().is_none_or(|b| {
                b.index
                    .iter()
                    .chain(&b.origin)
                    .all(|e| range(e, s).is_some())
            })
    })
}

/// Whether every integer value `node` computes fits (see the module documentation).
fn node_fits(node: &KNode, s: &mut Scope) -> bool {
    match node {
        KNode::Block(v) => v.iter().all(|n| node_fits(n, s)),
        KNode::For {
            iter,
            init,
            cond,
            step,
            body,
            ..
        } => {
            if *step <= 0 || i128::from(*step) > INDEX32_LIMIT {
                return false;
            }
            let Some(lo) = range(init, s) else {
                return false;
            };
            // The condition is checked with the iterator anywhere in its range.
            let Some(hi) = upper_bound(iter, cond, s) else {
                return false;
            };
            let r = (lo.0, hi.max(lo.1));
            if !fits(r) {
                return false;
            }
            let saved = s.vars.insert(iter.clone(), r);
            let ok = range(cond, s).is_some() && node_fits(body, s);
            restore(s, iter, saved);
            ok
        }
        KNode::If { cond, then, els } => {
            range(cond, s).is_some()
                && node_fits(then, s)
                && els.as_ref().is_none_or(|e| node_fits(e, s))
        }
        KNode::Stmt { args, locals, .. } => {
            args.iter().all(|a| range(a, s).is_some()) && refs_fit(locals, s)
        }
        KNode::Copy { args, locals, .. } => {
            args.iter().all(|a| range(a, s).is_some()) && refs_fit(locals, s)
        }
        KNode::Local { body, .. } | KNode::Device { body, .. } => node_fits(body, s),
        KNode::Let { name, value, body } => {
            let Some(r) = range(value, s) else {
                return false;
            };
            let saved = s.vars.insert(name.clone(), r);
            let ok = node_fits(body, s);
            restore(s, name, saved);
            ok
        }
        KNode::Barrier => true,
        // GPU kernels hold the block-reduction calls (`gpu::reduce`), whose integer
        // arguments are checked like any other; other intrinsics keep 64 bits.
        KNode::Intrinsic(call) => call.args.iter().all(|a| match a {
            crate::codegen::kir::IntrinsicArg::Int(e)
            | crate::codegen::kir::IntrinsicArg::Addr { offset: e, .. } => range(e, s).is_some(),
            crate::codegen::kir::IntrinsicArg::Elem { index, locals, .. } => {
                index.iter().all(|e| range(e, s).is_some()) && refs_fit(locals, s)
            }
            crate::codegen::kir::IntrinsicArg::Named { .. } => true,
            _ => false,
        }),
    }
}

fn restore(s: &mut Scope, name: &str, saved: Option<Range>) {
    match saved {
        Some(r) => s.vars.insert(name.to_string(), r),
        None => s.vars.remove(name),
    };
}

/// Whether every integer value of the kernel body `body` provably lies within ±2²⁹, so
/// that its indices can be 32-bit. `outer` gives the range of each name defined outside
/// the body (a bound size: its value; a thread index: `[0, extent − 1]`), `None` for the
/// others.
pub fn fits_in_32_bits(body: &KNode, outer: &dyn Fn(&str) -> Option<(i64, i64)>) -> bool {
    let widen = |n: &str| outer(n).map(|(a, b)| (i128::from(a), i128::from(b)));
    let mut s = Scope {
        vars: HashMap::new(),
        outer: &widen,
    };
    node_fits(body, &mut s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(n: &str) -> Box<KExpr> {
        Box::new(KExpr::var(n))
    }

    fn int(v: i64) -> Box<KExpr> {
        Box::new(KExpr::Int(v))
    }

    /// `for (c0 = 0; c0 <= hi; c0 += 1) S(N * c0 + polyc_tid0)`.
    fn nest(hi: KExpr) -> KNode {
        KNode::For {
            iter: "c0".into(),
            init: KExpr::Int(0),
            cond: KExpr::Cmp(KCmp::Le, var("c0"), Box::new(hi)),
            step: 1,
            kind: Default::default(),
            body: Box::new(KNode::Stmt {
                stmt: 0,
                args: vec![KExpr::Add(
                    Box::new(KExpr::Mul(var("N"), var("c0"))),
                    var("polyc_tid0"),
                )],
                locals: vec![],
            }),
        }
    }

    fn outer(n: i64) -> impl Fn(&str) -> Option<(i64, i64)> {
        move |name: &str| match name {
            "N" => Some((n, n)),
            "polyc_tid0" => Some((0, 255)),
            _ => None,
        }
    }

    #[test]
    fn bound_sizes_fit_and_large_or_symbolic_ones_do_not() {
        assert!(fits_in_32_bits(&nest(KExpr::Int(4095)), &outer(4096)));
        // 20000 · 30000 = 6·10⁸ > 2²⁹.
        assert!(!fits_in_32_bits(&nest(KExpr::Int(29999)), &outer(20000)));
        // A symbolic upper bound has no range.
        assert!(!fits_in_32_bits(&nest(KExpr::var("M")), &outer(4096)));
        // A condition without an upper bound on the iterator.
        let mut n = nest(KExpr::Int(7));
        if let KNode::For { cond, .. } = &mut n {
            *cond = KExpr::Cmp(KCmp::Eq, var("c0"), int(3));
        }
        assert!(!fits_in_32_bits(&n, &outer(4096)));
    }

    #[test]
    fn divisions_remainders_and_bounds_of_conjunctions() {
        let s = Scope {
            vars: HashMap::from([("i".to_string(), (-10, 100))]),
            outer: &|_| None,
        };
        let fd = KExpr::FloorDiv(var("i"), int(8));
        assert_eq!(range(&fd, &s), Some((-10, 100)));
        let rem = KExpr::Rem(var("i"), int(8));
        assert_eq!(range(&rem, &s), Some((-7, 7)));
        let cond = KExpr::And(
            Box::new(KExpr::Cmp(KCmp::Lt, var("j"), int(50))),
            Box::new(KExpr::Cmp(KCmp::Ge, var("i"), var("j"))),
        );
        assert_eq!(upper_bound("j", &cond, &s), Some(49));
        assert_eq!(range(&KExpr::FloorDiv(var("i"), var("i")), &s), None);
    }
}
