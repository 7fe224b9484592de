//! Canonical quasi-affine forms: a sum of integer multiples of atoms plus a constant.
//!
//! Atoms are iterators, size parameters, and `floordiv`/`mod` of a nested form by a
//! positive constant. Terms are kept sorted (iterators, then sizes, then divisions), so two
//! forms are equal exactly when they are the same sum; [`Lin::to_aff`] turns a form into
//! the IR's [`Aff`] in that canonical order (`h + kh`, `H - KH + 1`). All arithmetic is
//! checked: `None` means a 64-bit overflow.

use crate::ir::Aff;
use std::collections::BTreeMap;

/// A term of a [`Lin`].
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Atom {
    /// A statement iterator (position in the statement's iterators).
    Iter(usize),
    /// A size parameter (position in the program's parameters).
    Param(usize),
    /// `floordiv(e, c)`, `c > 1`.
    Div(Lin, i64),
    /// `e % c`, `c > 1`.
    Mod(Lin, i64),
}

/// `Σ coeff·atom + c` with no zero coefficients.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Lin {
    /// Non-zero coefficients.
    pub terms: BTreeMap<Atom, i64>,
    /// Constant.
    pub c: i64,
}

impl Lin {
    /// A constant.
    pub fn constant(c: i64) -> Lin {
        Lin {
            terms: BTreeMap::new(),
            c,
        }
    }

    /// One atom.
    pub fn atom(a: Atom) -> Lin {
        let mut terms = BTreeMap::new();
        terms.insert(a, 1);
        Lin { terms, c: 0 }
    }

    /// An iterator.
    pub fn iter(i: usize) -> Lin {
        Lin::atom(Atom::Iter(i))
    }

    /// A size parameter.
    pub fn param(p: usize) -> Lin {
        Lin::atom(Atom::Param(p))
    }

    /// The constant value, if the form has no terms.
    pub fn as_const(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.c)
    }

    /// `self + other`.
    pub fn add(&self, other: &Lin) -> Option<Lin> {
        let mut out = self.clone();
        out.c = out.c.checked_add(other.c)?;
        for (a, k) in &other.terms {
            let v = out.terms.get(a).copied().unwrap_or(0).checked_add(*k)?;
            if v == 0 {
                out.terms.remove(a);
            } else {
                out.terms.insert(a.clone(), v);
            }
        }
        Some(out)
    }

    /// `k · self`.
    pub fn scale(&self, k: i64) -> Option<Lin> {
        if k == 0 {
            return Some(Lin::constant(0));
        }
        let mut out = Lin::constant(self.c.checked_mul(k)?);
        for (a, v) in &self.terms {
            out.terms.insert(a.clone(), v.checked_mul(k)?);
        }
        Some(out)
    }

    /// `self - other`.
    pub fn sub(&self, other: &Lin) -> Option<Lin> {
        self.add(&other.scale(-1)?)
    }

    /// `self + k`.
    pub fn add_const(&self, k: i64) -> Option<Lin> {
        let mut out = self.clone();
        out.c = out.c.checked_add(k)?;
        Some(out)
    }

    /// `floordiv(self, d)` for `d > 0`, simplified when exact.
    pub fn floordiv(&self, d: i64) -> Option<Lin> {
        debug_assert!(d > 0);
        if d == 1 {
            return Some(self.clone());
        }
        if let Some(c) = self.as_const() {
            return Some(Lin::constant(c.checked_div_euclid(d)?));
        }
        if self.c % d == 0 && self.terms.values().all(|k| k % d == 0) {
            let mut out = Lin::constant(self.c / d);
            for (a, k) in &self.terms {
                out.terms.insert(a.clone(), k / d);
            }
            return Some(out);
        }
        Some(Lin::atom(Atom::Div(self.clone(), d)))
    }

    /// `self mod d` (in `[0, d)`) for `d > 0`, simplified when exact.
    pub fn modulo(&self, d: i64) -> Option<Lin> {
        debug_assert!(d > 0);
        if d == 1 {
            return Some(Lin::constant(0));
        }
        if let Some(c) = self.as_const() {
            return Some(Lin::constant(c.checked_rem_euclid(d)?));
        }
        if self.c % d == 0 && self.terms.values().all(|k| k % d == 0) {
            return Some(Lin::constant(0));
        }
        Some(Lin::atom(Atom::Mod(self.clone(), d)))
    }

    /// The coefficient of iterator `i` outside divisions.
    pub fn coeff(&self, i: usize) -> i64 {
        self.terms.get(&Atom::Iter(i)).copied().unwrap_or(0)
    }

    /// The form without the plain term of iterator `i`.
    pub fn without_iter(&self, i: usize) -> Lin {
        let mut out = self.clone();
        out.terms.remove(&Atom::Iter(i));
        out
    }

    /// True if iterator `i` occurs inside a `floordiv` or `mod`.
    pub fn iter_in_division(&self, i: usize) -> bool {
        self.terms.keys().any(|a| match a {
            Atom::Div(l, _) | Atom::Mod(l, _) => l.mentions_iter(i),
            _ => false,
        })
    }

    /// True if iterator `i` occurs anywhere.
    pub fn mentions_iter(&self, i: usize) -> bool {
        self.terms.keys().any(|a| match a {
            Atom::Iter(j) => *j == i,
            Atom::Param(_) => false,
            Atom::Div(l, _) | Atom::Mod(l, _) => l.mentions_iter(i),
        })
    }

    /// The largest iterator position that occurs anywhere (inside divisions too).
    pub fn max_iter(&self) -> Option<usize> {
        self.terms
            .keys()
            .filter_map(|a| match a {
                Atom::Iter(j) => Some(*j),
                Atom::Param(_) => None,
                Atom::Div(l, _) | Atom::Mod(l, _) => l.max_iter(),
            })
            .max()
    }

    /// True if no iterator occurs anywhere.
    pub fn is_param_only(&self) -> bool {
        self.terms.keys().all(|a| match a {
            Atom::Iter(_) => false,
            Atom::Param(_) => true,
            Atom::Div(l, _) | Atom::Mod(l, _) => l.is_param_only(),
        })
    }

    /// Splits into plain iterator terms and the rest, or `None` if an iterator occurs inside
    /// a division.
    pub fn split_iters(&self) -> Option<(Vec<(usize, i64)>, Lin)> {
        let mut iters = Vec::new();
        let mut rest = Lin::constant(self.c);
        for (a, k) in &self.terms {
            match a {
                Atom::Iter(i) => iters.push((*i, *k)),
                Atom::Param(_) => {
                    rest.terms.insert(a.clone(), *k);
                }
                Atom::Div(l, _) | Atom::Mod(l, _) => {
                    if !l.is_param_only() {
                        return None;
                    }
                    rest.terms.insert(a.clone(), *k);
                }
            }
        }
        Some((iters, rest))
    }

    /// The IR form, terms in canonical order.
    pub fn to_aff(&self) -> Aff {
        let mut acc: Option<Aff> = None;
        for (a, k) in &self.terms {
            let atom = a.to_aff();
            acc = Some(match acc {
                None => match *k {
                    1 => atom,
                    -1 => Aff::Neg(Box::new(atom)),
                    k => Aff::Mul(k, Box::new(atom)),
                },
                Some(acc) => {
                    let (neg, mag) = if *k < 0 && *k != i64::MIN {
                        (true, -*k)
                    } else {
                        (false, *k)
                    };
                    let term = if mag == 1 {
                        atom
                    } else {
                        Aff::Mul(mag, Box::new(atom))
                    };
                    if neg {
                        Aff::Sub(Box::new(acc), Box::new(term))
                    } else {
                        Aff::Add(Box::new(acc), Box::new(term))
                    }
                }
            });
        }
        match acc {
            None => Aff::Const(self.c),
            Some(acc) if self.c == 0 => acc,
            Some(acc) if self.c < 0 && self.c != i64::MIN => {
                Aff::Sub(Box::new(acc), Box::new(Aff::Const(-self.c)))
            }
            Some(acc) => Aff::Add(Box::new(acc), Box::new(Aff::Const(self.c))),
        }
    }
}

impl Atom {
    fn to_aff(&self) -> Aff {
        match self {
            Atom::Iter(i) => Aff::Iter(*i),
            Atom::Param(p) => Aff::Param(*p),
            Atom::Div(l, d) => Aff::FloorDiv(Box::new(l.to_aff()), *d),
            Atom::Mod(l, d) => Aff::Mod(Box::new(l.to_aff()), *d),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(l: &Lin) -> String {
        l.to_aff()
            .to_isl(&["i".into(), "j".into()], &["N".into(), "M".into()])
    }

    #[test]
    fn canonical_order_and_signs() {
        let l = Lin::param(0)
            .sub(&Lin::param(1))
            .unwrap()
            .add_const(1)
            .unwrap();
        assert_eq!(show(&l), "((N - M) + 1)");
        let l = Lin::param(0).add(&Lin::iter(1).scale(-2).unwrap()).unwrap();
        assert_eq!(show(&l), "((-2 * j) + N)");
        let l = Lin::iter(0).add_const(-1).unwrap();
        assert_eq!(show(&l), "(i - 1)");
        assert_eq!(show(&Lin::constant(-3)), "-3");
        let l = Lin::iter(0).sub(&Lin::iter(0)).unwrap();
        assert_eq!(show(&l), "0");
    }

    #[test]
    fn divisions_simplify_when_exact() {
        let two_i = Lin::iter(0).scale(2).unwrap().add_const(4).unwrap();
        assert_eq!(show(&two_i.floordiv(2).unwrap()), "(i + 2)");
        assert_eq!(show(&two_i.modulo(2).unwrap()), "0");
        assert_eq!(show(&Lin::constant(-7).floordiv(2).unwrap()), "-4");
        assert_eq!(show(&Lin::constant(-7).modulo(2).unwrap()), "1");
        let n = Lin::param(0).add_const(-1).unwrap();
        assert_eq!(show(&n.floordiv(2).unwrap()), "floor(((N - 1))/2)");
        assert_eq!(show(&Lin::iter(1).modulo(4).unwrap()), "((j) mod 4)");
    }

    #[test]
    fn overflow_is_none() {
        assert!(Lin::constant(i64::MAX).add_const(1).is_none());
        assert!(Lin::iter(0).scale(i64::MAX).unwrap().scale(2).is_none());
    }
}
