//! Affine simplification of kernel-IR expressions: an expression's affine part as a map
//! from variables to coefficients ([`Linear`]), and [`simplify`], which folds constants and
//! cancels terms.

use std::collections::BTreeMap;

use crate::codegen::kir::KExpr;

/// An affine expression: variable coefficients and a constant.
pub(crate) type Linear = (BTreeMap<String, i64>, i64);

pub(crate) fn linear(e: &KExpr) -> Option<Linear> {
    Some(match e {
        KExpr::Int(v) => (BTreeMap::new(), *v),
        KExpr::Var(n) => (BTreeMap::from([(n.clone(), 1)]), 0),
        KExpr::Add(a, b) => add(linear(a)?, linear(b)?, 1),
        KExpr::Sub(a, b) => add(linear(a)?, linear(b)?, -1),
        KExpr::Neg(a) => scale(linear(a)?, -1),
        KExpr::Mul(a, b) => {
            let (x, y) = (linear(a)?, linear(b)?);
            if x.0.is_empty() {
                scale(y, x.1)
            } else if y.0.is_empty() {
                scale(x, y.1)
            } else {
                return None;
            }
        }
        _ => return None,
    })
}

pub(crate) fn add(a: Linear, b: Linear, sign: i64) -> Linear {
    let (mut m, c) = a;
    for (k, v) in b.0 {
        *m.entry(k).or_insert(0) += sign * v;
    }
    m.retain(|_, v| *v != 0);
    (m, c + sign * b.1)
}

pub(crate) fn scale(a: Linear, f: i64) -> Linear {
    let (mut m, c) = a;
    for v in m.values_mut() {
        *v *= f;
    }
    m.retain(|_, v| *v != 0);
    (m, c * f)
}

/// The canonical expression of a linear form: terms in name order, then the constant.
pub(crate) fn from_linear(l: &Linear) -> KExpr {
    let mut acc: Option<KExpr> = None;
    for (name, &c) in &l.0 {
        let v = KExpr::Var(name.clone());
        let (term, neg) = match c {
            1 => (v, false),
            -1 => (v, true),
            c if c < 0 => (KExpr::Mul(Box::new(KExpr::Int(-c)), Box::new(v)), true),
            c => (KExpr::Mul(Box::new(KExpr::Int(c)), Box::new(v)), false),
        };
        acc = Some(match (acc, neg) {
            (None, false) => term,
            (None, true) => KExpr::Neg(Box::new(term)),
            (Some(a), false) => KExpr::Add(Box::new(a), Box::new(term)),
            (Some(a), true) => KExpr::Sub(Box::new(a), Box::new(term)),
        });
    }
    match acc {
        None => KExpr::Int(l.1),
        Some(a) if l.1 > 0 => KExpr::Add(Box::new(a), Box::new(KExpr::Int(l.1))),
        Some(a) if l.1 < 0 => KExpr::Sub(Box::new(a), Box::new(KExpr::Int(-l.1))),
        Some(a) => a,
    }
}

/// Simplifies affine parts of `e` (folds constants, cancels terms).
pub fn simplify(e: &KExpr) -> KExpr {
    if let Some(l) = linear(e) {
        return from_linear(&l);
    }
    let b = |x: &KExpr| Box::new(simplify(x));
    match e {
        KExpr::Add(x, y) => KExpr::Add(b(x), b(y)),
        KExpr::Sub(x, y) => KExpr::Sub(b(x), b(y)),
        KExpr::Mul(x, y) => KExpr::Mul(b(x), b(y)),
        KExpr::Neg(x) => KExpr::Neg(b(x)),
        KExpr::FloorDiv(x, y) => KExpr::FloorDiv(b(x), b(y)),
        KExpr::Div(x, y) => KExpr::Div(b(x), b(y)),
        KExpr::Rem(x, y) => KExpr::Rem(b(x), b(y)),
        KExpr::Min(v) | KExpr::Max(v) => {
            let is_min = matches!(e, KExpr::Min(_));
            let args: Vec<KExpr> = v.iter().map(simplify).collect();
            let consts: Vec<i64> = args
                .iter()
                .filter_map(|a| {
                    if let KExpr::Int(c) = a {
                        Some(*c)
                    } else {
                        None
                    }
                })
                .collect();
            let mut rest: Vec<KExpr> = args
                .into_iter()
                .filter(|a| !matches!(a, KExpr::Int(_)))
                .collect();
            let folded = if is_min {
                consts.iter().min()
            } else {
                consts.iter().max()
            };
            if let Some(c) = folded {
                rest.push(KExpr::Int(*c));
            }
            if rest.len() == 1 {
                rest.pop().unwrap_or(KExpr::Int(0))
            } else if is_min {
                KExpr::Min(rest)
            } else {
                KExpr::Max(rest)
            }
        }
        KExpr::Cmp(op, x, y) => KExpr::Cmp(*op, b(x), b(y)),
        KExpr::And(x, y) => KExpr::And(b(x), b(y)),
        KExpr::Or(x, y) => KExpr::Or(b(x), b(y)),
        KExpr::Select(c, x, y) => KExpr::Select(b(c), b(x), b(y)),
        other => other.clone(),
    }
}

/// `u - s`, distributing over a minimum (`min(a, b) - s = min(a - s, b - s)`).
pub(crate) fn minus(u: &KExpr, s: &KExpr) -> KExpr {
    match u {
        KExpr::Min(v) => simplify(&KExpr::Min(v.iter().map(|a| minus(a, s)).collect())),
        _ => simplify(&KExpr::Sub(Box::new(u.clone()), Box::new(s.clone()))),
    }
}
