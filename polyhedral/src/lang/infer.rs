//! Range inference for statement iterators that have no `where`.
//!
//! Every tensor access dimension with a known extent `E` gives the constraint
//! `0 <= e < E` on its index expression `e`.
//!
//! - **Pass 1.** For a dimension `a·i + c` where `c` mentions no iterator, `i` gets the
//!   exact bounds that keep the access inside `[0, E)`: for `a = 1`, `-c <= i < E - c`;
//!   other coefficients go through `floordiv`. All such bounds are kept (duplicates
//!   dropped, and of two bounds that differ only by a constant the tighter one kept): the
//!   range is their intersection.
//! - **Pass 2**, repeated until nothing changes, for iterators still unbounded: a
//!   dimension `a·i + Σ b_j·j + c` whose other iterators `j` all have exactly one lower and
//!   one upper bound, both free of iterators, bounds `i` so that the access stays inside for
//!   every value of the others (e.g. `h` in `A(h + kh)` gets `h < H - (KH - 1)`). Each
//!   round sees only the bounds found before it.
//!
//! Dimensions where `i` occurs inside `floordiv`/`%` give no bound.

use super::lin::Lin;

/// Half-open bounds `max(lower) <= i < min(upper)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Bounds {
    /// Lower bounds (inclusive).
    pub lower: Vec<Lin>,
    /// Upper bounds (exclusive).
    pub upper: Vec<Lin>,
}

impl Bounds {
    /// The single lower and upper bound, if there is exactly one of each and both are free
    /// of iterators.
    pub fn single_param_only(&self) -> Option<(&Lin, &Lin)> {
        match (self.lower.as_slice(), self.upper.as_slice()) {
            ([lo], [hi]) if lo.is_param_only() && hi.is_param_only() => Some((lo, hi)),
            _ => None,
        }
    }

    /// Adds a lower and an upper bound. A bound that differs from a kept one only by its
    /// constant is merged with it (the larger lower, the smaller upper wins), so
    /// `A(i) - A(i + 1)` gives `0 <= i < N - 1`, not `max(0, -1) <= i < min(N, N - 1)`.
    fn push(&mut self, lo: Lin, hi: Lin) {
        self.push_lower(lo);
        self.push_upper(hi);
    }

    /// Adds a lower bound (merged with a kept one that differs only by its constant).
    pub fn push_lower(&mut self, lo: Lin) {
        merge(&mut self.lower, lo, |new, old| new > old);
    }

    /// Adds an upper bound (merged with a kept one that differs only by its constant).
    pub fn push_upper(&mut self, hi: Lin) {
        merge(&mut self.upper, hi, |new, old| new < old);
    }
}

fn merge(list: &mut Vec<Lin>, b: Lin, better: impl Fn(i64, i64) -> bool) {
    match list.iter_mut().find(|x| x.terms == b.terms) {
        Some(x) => {
            if better(b.c, x.c) {
                *x = b;
            }
        }
        None => list.push(b),
    }
}

/// Bound arithmetic overflowed 64 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Overflow;

/// One access: its index expressions and, if known, its tensor's extents.
pub struct Access<'a> {
    /// One form per dimension.
    pub index: &'a [Lin],
    /// The tensor's shape, if known.
    pub extents: Option<&'a [Lin]>,
}

/// Infers bounds for every iterator whose `fixed` entry (explicit `where`) is `None`.
///
/// Returns one entry per iterator: the explicit bounds for fixed ones, the inferred bounds
/// otherwise, or `None` when no bound could be found.
pub fn infer(
    fixed: &[Option<Bounds>],
    accesses: &[Access],
) -> Result<Vec<Option<Bounds>>, Overflow> {
    let n = fixed.len();
    let mut out: Vec<Option<Bounds>> = fixed.to_vec();
    let dims: Vec<(&Lin, &Lin)> = accesses
        .iter()
        .filter_map(|a| a.extents.map(|e| (a.index, e)))
        .flat_map(|(idx, ext)| idx.iter().zip(ext.iter()))
        .collect();

    // Pass 1: dimensions `a·i + r` whose rest `r` uses sizes and constants only.
    for i in 0..n {
        if fixed[i].is_some() {
            continue;
        }
        out[i] = bounds_from_dims(i, &dims, |e| {
            let rest = e.without_iter(i);
            Ok(rest.is_param_only().then(|| (rest.clone(), rest)))
        })?;
    }

    // Pass 2: the rest may use other iterators whose ranges are known (one parameter-only
    // lower and upper bound each); the bound must hold for all their values.
    loop {
        let snapshot = out.clone();
        let mut changed = false;
        for i in 0..n {
            if snapshot[i].is_some() {
                continue;
            }
            let found = bounds_from_dims(i, &dims, |e| {
                let Some((others, c)) = e.without_iter(i).split_iters() else {
                    return Ok(None);
                };
                let mut rest_min = c.clone();
                let mut rest_max = c;
                for (j, bj) in others {
                    let Some((lo, hi)) = snapshot[j].as_ref().and_then(|b| b.single_param_only())
                    else {
                        return Ok(None);
                    };
                    let last = hi.add_const(-1).ok_or(Overflow)?;
                    let (min_j, max_j) = if bj > 0 { (lo, &last) } else { (&last, lo) };
                    rest_min = rest_min
                        .add(&min_j.scale(bj).ok_or(Overflow)?)
                        .ok_or(Overflow)?;
                    rest_max = rest_max
                        .add(&max_j.scale(bj).ok_or(Overflow)?)
                        .ok_or(Overflow)?;
                }
                Ok(Some((rest_min, rest_max)))
            })?;
            if found.is_some() {
                out[i] = found;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    Ok(out)
}

/// Bounds on iterator `i` from every access dimension `0 <= a·i + r < ext` in which `i`
/// appears outside divisions; `rest_range(e)` gives the range `[r_min, r_max]` of the rest
/// of `e`, or `None` when that dimension cannot bound `i`. `None` when no dimension does.
fn bounds_from_dims(
    i: usize,
    dims: &[(&Lin, &Lin)],
    rest_range: impl Fn(&Lin) -> Result<Option<(Lin, Lin)>, Overflow>,
) -> Result<Option<Bounds>, Overflow> {
    let mut b = Bounds {
        lower: Vec::new(),
        upper: Vec::new(),
    };
    for (e, ext) in dims {
        let a = e.coeff(i);
        if a == 0 || e.iter_in_division(i) {
            continue;
        }
        let Some((r_min, r_max)) = rest_range(e)? else {
            continue;
        };
        let (lo, hi) = derive(a, &r_min, &r_max, ext).ok_or(Overflow)?;
        b.push(lo, hi);
    }
    Ok((!b.lower.is_empty()).then_some(b))
}

/// Bounds on `i` from `0 <= a·i + r < ext` for all `r` in `[c_lo, c_hi]`.
fn derive(a: i64, c_lo: &Lin, c_hi: &Lin, ext: &Lin) -> Option<(Lin, Lin)> {
    // ext - 1 - c_hi: the largest value a·i may take.
    let room = ext.sub(c_hi)?.add_const(-1)?;
    if a > 0 {
        // a·i >= -c_lo  =>  i >= -floor(c_lo / a)
        let lo = c_lo.floordiv(a)?.scale(-1)?;
        // a·i <= room   =>  i <= floor(room / a)
        let hi = room.floordiv(a)?.add_const(1)?;
        Some((lo, hi))
    } else {
        let b = a.checked_neg()?;
        // -b·i + c_lo >= 0  =>  i <= floor(c_lo / b)
        let hi = c_lo.floordiv(b)?.add_const(1)?;
        // -b·i <= room      =>  i >= -floor(room / b)
        let lo = room.floordiv(b)?.scale(-1)?;
        Some((lo, hi))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(l: &Lin) -> String {
        l.to_aff().to_isl(
            &["h".into(), "kh".into(), "i".into()],
            &["H".into(), "KH".into()],
        )
    }

    fn shows(b: &Option<Bounds>) -> String {
        match b {
            None => "none".into(),
            Some(b) => format!(
                "[{}] .. [{}]",
                b.lower.iter().map(show).collect::<Vec<_>>().join(", "),
                b.upper.iter().map(show).collect::<Vec<_>>().join(", ")
            ),
        }
    }

    #[test]
    fn conv_pass_two() {
        // A(h + kh) with A of extent H, B(kh) with B of extent KH; h and kh inferred.
        let h_kh = vec![Lin::iter(0).add(&Lin::iter(1)).unwrap()];
        let kh = vec![Lin::iter(1)];
        let ea = vec![Lin::param(0)];
        let eb = vec![Lin::param(1)];
        let acc = [
            Access {
                index: &h_kh,
                extents: Some(&ea),
            },
            Access {
                index: &kh,
                extents: Some(&eb),
            },
        ];
        let r = infer(&[None, None], &acc).unwrap();
        assert_eq!(shows(&r[0]), "[0] .. [((H - KH) + 1)]");
        assert_eq!(shows(&r[1]), "[0] .. [KH]");
    }

    #[test]
    fn strides_and_reversal() {
        let ea = vec![Lin::param(0)];
        // A(2*i + 1): 0 <= 2i+1 < H  =>  0 <= i < floor((H-2)/2) + 1
        let idx = vec![Lin::iter(2).scale(2).unwrap().add_const(1).unwrap()];
        let r = infer(
            &[None, None, None],
            &[Access {
                index: &idx,
                extents: Some(&ea),
            }],
        )
        .unwrap();
        assert_eq!(shows(&r[2]), "[0] .. [(floor(((H - 2))/2) + 1)]");
        // A(H - 1 - i): 0 <= i < H
        let idx = vec![Lin::param(0)
            .sub(&Lin::iter(2))
            .unwrap()
            .add_const(-1)
            .unwrap()];
        let r = infer(
            &[None, None, None],
            &[Access {
                index: &idx,
                extents: Some(&ea),
            }],
        )
        .unwrap();
        assert_eq!(shows(&r[2]), "[0] .. [H]");
        // A(i - 1): 1 <= i < H + 1
        let idx = vec![Lin::iter(2).add_const(-1).unwrap()];
        let r = infer(
            &[None, None, None],
            &[Access {
                index: &idx,
                extents: Some(&ea),
            }],
        )
        .unwrap();
        assert_eq!(shows(&r[2]), "[1] .. [(H + 1)]");
    }

    #[test]
    fn circular_stays_unbounded() {
        // A(h + kh) alone: neither can be bounded.
        let idx = vec![Lin::iter(0).add(&Lin::iter(1)).unwrap()];
        let ea = vec![Lin::param(0)];
        let r = infer(
            &[None, None],
            &[Access {
                index: &idx,
                extents: Some(&ea),
            }],
        )
        .unwrap();
        assert!(r[0].is_none() && r[1].is_none());
    }
}
