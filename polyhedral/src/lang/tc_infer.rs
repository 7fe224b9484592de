//! Range inference as Tensor Comprehensions defines it, for TC files.
//!
//! TC infers ranges from the accesses of the right-hand side (and of `where exists`
//! clauses), never from the left-hand side, in rounds:
//!
//! - every access dimension `e` of a tensor with extent `E` gives two inequalities,
//!   `e >= 0` and `E - 1 - e >= 0`;
//! - indices with a `where` range are eliminated first: each inequality must hold for
//!   every value of the range (its worst-case end is substituted);
//! - in each round, every unsolved index takes the largest interval that satisfies the
//!   inequalities that mention it and no other unsolved index (their intersection). An
//!   index bounded on both sides is solved and those inequalities are used up; at the end
//!   of the round the solved indices are eliminated from the remaining inequalities as
//!   above, so the next round sees the earlier rounds' ranges;
//! - rounds stop when every index is solved or a round solves nothing.
//!
//! An inequality left without any index is a precondition that TC only warns about;
//! polyc drops it here, and its check of every access against the tensor's shape
//! (`Scop::build`) then reports any access that could leave its tensor. An inequality
//! whose elimination would need the larger (or smaller) of several bounds, or whose index
//! sits inside `floordiv`/`%`, is dropped the same way: a range inferred without it is
//! either TC's (when every access stays inside) or rejected by that check.

use super::infer::{Access, Bounds, Overflow};
use super::lin::Lin;

/// Infers ranges for every index whose `fixed` entry (a `where` range) is `None`, from
/// `accesses` (the right-hand side's reads and the `exists` clauses' reads). Returns one
/// entry per index: the explicit bounds, the inferred ones, or `None` when TC's rounds do
/// not bound it.
pub fn infer(
    fixed: &[Option<Bounds>],
    accesses: &[Access],
) -> Result<Vec<Option<Bounds>>, Overflow> {
    let n = fixed.len();
    let mut out: Vec<Option<Bounds>> = fixed.to_vec();
    let mut ineqs: Vec<Lin> = Vec::new();
    for a in accesses {
        let Some(ext) = a.extents else { continue };
        for (e, x) in a.index.iter().zip(ext) {
            ineqs.push(e.clone());
            ineqs.push(x.add_const(-1).ok_or(Overflow)?.sub(e).ok_or(Overflow)?);
        }
    }
    let where_fixed: Vec<usize> = (0..n).filter(|&i| fixed[i].is_some()).collect();
    ineqs = eliminate_all(ineqs, &where_fixed, &out)?;

    let mut unsolved: Vec<usize> = (0..n)
        .filter(|&i| fixed[i].is_none() && ineqs.iter().any(|g| g.mentions_iter(i)))
        .collect();
    while !unsolved.is_empty() {
        let mut newly = Vec::new();
        let mut still = Vec::new();
        for &v in &unsolved {
            let mut b = Bounds {
                lower: Vec::new(),
                upper: Vec::new(),
            };
            let mut used = vec![false; ineqs.len()];
            for (k, g) in ineqs.iter().enumerate() {
                let Some(r) = only_iter(g, v) else { continue };
                let a = g.coeff(v);
                if a > 0 {
                    // a·v + r >= 0  =>  v >= -floor(r / a)
                    b.push_lower(r.floordiv(a).ok_or(Overflow)?.scale(-1).ok_or(Overflow)?);
                } else {
                    // r - |a|·v >= 0  =>  v <= floor(r / |a|)
                    let d = a.checked_neg().ok_or(Overflow)?;
                    b.push_upper(
                        r.floordiv(d)
                            .ok_or(Overflow)?
                            .add_const(1)
                            .ok_or(Overflow)?,
                    );
                }
                used[k] = true;
            }
            if !b.lower.is_empty() && !b.upper.is_empty() {
                out[v] = Some(b);
                let mut k = 0;
                ineqs.retain(|_| {
                    k += 1;
                    !used[k - 1]
                });
                newly.push(v);
            } else {
                still.push(v);
            }
        }
        if newly.is_empty() {
            break;
        }
        ineqs = eliminate_all(ineqs, &newly, &out)?;
        unsolved = still;
    }
    Ok(out)
}

/// `g` without its term in `v` when `v` is the only index in `g` and occurs outside
/// divisions only; `None` otherwise.
fn only_iter(g: &Lin, v: usize) -> Option<Lin> {
    if g.coeff(v) == 0 || g.iter_in_division(v) {
        return None;
    }
    let rest = g.without_iter(v);
    rest.is_param_only().then_some(rest)
}

/// Eliminates the indices `vars` (whose bounds are in `bounds`) from every inequality:
/// each must hold over the whole range. Inequalities that cannot be eliminated exactly,
/// and those left without any index, are dropped (see the module notes).
fn eliminate_all(
    ineqs: Vec<Lin>,
    vars: &[usize],
    bounds: &[Option<Bounds>],
) -> Result<Vec<Lin>, Overflow> {
    let mut out = Vec::with_capacity(ineqs.len());
    'next: for g in ineqs {
        let had_iters = !g.is_param_only();
        let mut g = g;
        for &j in vars {
            if !g.mentions_iter(j) {
                continue;
            }
            let Some(b) = bounds[j].as_ref() else {
                continue 'next;
            };
            match eliminate(&g, j, b)? {
                Some(h) => g = h,
                None => continue 'next,
            }
        }
        if had_iters && g.is_param_only() {
            continue;
        }
        out.push(g);
    }
    Ok(out)
}

/// `g >= 0` for every `j` in its range: the worst end of the range substituted for `j`.
/// `None` when `j` occurs inside a division or that end is the larger (smaller) of several
/// bounds.
fn eliminate(g: &Lin, j: usize, b: &Bounds) -> Result<Option<Lin>, Overflow> {
    if g.iter_in_division(j) {
        return Ok(None);
    }
    let c = g.coeff(j);
    let worst = if c > 0 {
        match b.lower.as_slice() {
            [lo] => lo.clone(),
            _ => return Ok(None),
        }
    } else {
        match b.upper.as_slice() {
            [hi] => hi.add_const(-1).ok_or(Overflow)?,
            _ => return Ok(None),
        }
    };
    let h = g
        .without_iter(j)
        .add(&worst.scale(c).ok_or(Overflow)?)
        .ok_or(Overflow)?;
    Ok(Some(h))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(b: &Option<Bounds>) -> String {
        let names = ["i".to_string(), "k".to_string(), "j".to_string()];
        let params = ["N".to_string(), "K".to_string(), "M".to_string()];
        match b {
            None => "none".into(),
            Some(b) => format!(
                "[{}] .. [{}]",
                b.lower
                    .iter()
                    .map(|l| l.to_aff().to_isl(&names, &params))
                    .collect::<Vec<_>>()
                    .join(", "),
                b.upper
                    .iter()
                    .map(|l| l.to_aff().to_isl(&names, &params))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    #[test]
    fn stencil_takes_two_rounds() {
        // O(i) +=! A(i + k) * W(k): k from W in round 1, then i from A.
        let ik = vec![Lin::iter(0).add(&Lin::iter(1)).unwrap()];
        let k = vec![Lin::iter(1)];
        let (ea, ew) = (vec![Lin::param(0)], vec![Lin::param(1)]);
        let acc = [
            Access {
                index: &ik,
                extents: Some(&ea),
            },
            Access {
                index: &k,
                extents: Some(&ew),
            },
        ];
        let r = infer(&[None, None], &acc).unwrap();
        assert_eq!(show(&r[1]), "[0] .. [K]");
        assert_eq!(show(&r[0]), "[0] .. [((N - K) + 1)]");
    }

    #[test]
    fn where_ranges_take_part_in_the_first_round() {
        // O(i) = A(2*i + k) + B(i) where k in 0:2: i gets both A's and B's bounds.
        let a_idx = vec![Lin::iter(0).scale(2).unwrap().add(&Lin::iter(1)).unwrap()];
        let b_idx = vec![Lin::iter(0)];
        let (ea, eb) = (vec![Lin::param(0)], vec![Lin::param(2)]);
        let fixed = [
            None,
            Some(Bounds {
                lower: vec![Lin::constant(0)],
                upper: vec![Lin::constant(2)],
            }),
        ];
        let acc = [
            Access {
                index: &a_idx,
                extents: Some(&ea),
            },
            Access {
                index: &b_idx,
                extents: Some(&eb),
            },
        ];
        let r = infer(&fixed, &acc).unwrap();
        assert_eq!(show(&r[0]), "[0] .. [(floor(((N - 2))/2) + 1), M]");
    }

    #[test]
    fn an_index_only_on_the_left_stays_unsolved() {
        let i = vec![Lin::iter(0)];
        let e = vec![Lin::param(0)];
        let r = infer(
            &[None, None],
            &[Access {
                index: &i,
                extents: Some(&e),
            }],
        )
        .unwrap();
        assert_eq!(show(&r[0]), "[0] .. [N]");
        assert!(r[1].is_none());
    }
}
