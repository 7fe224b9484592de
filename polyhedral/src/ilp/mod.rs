//! The ILP scheduler (`--scheduler ilp`): Pluto's algorithm on `good_lp`.
//!
//! # Algorithm
//!
//! Every statement `S` gets schedule rows `φ_S(x) = c_S·x + c_0` (non-negative integer
//! iterator coefficients, at most [`MAX_COEFFICIENT`]; a constant shift in
//! `0..=`[`MAX_SHIFT`]; no size coefficients). Rows are found level by level, one small
//! integer program per level:
//!
//! - **tiling condition**: `φ_T(y) − φ_S(x) >= 0` for every dependence `S[x] -> T[y]`
//!   (RAW ∪ WAR ∪ WAW) not satisfied by an earlier *band*; so every band is permutable;
//! - **bound**: `u·n + w >= φ_T(y) − φ_S(x)` for every dependence not yet satisfied
//!   (`n` = the symbolic sizes; with bound sizes `u` disappears and `w` is a constant);
//! - **linear independence** (Pluto's rule): for every statement that still needs rows,
//!   with `h_1…h_m` spanning the orthogonal complement of its rows (each oriented to a
//!   non-negative sum), `h_j·c >= 0` and `Σ h_j·c >= 1`;
//! - **fusion proximity**: `φ_T − φ_S <=` [`MAX_FUSED_DISTANCE`] for every unsatisfied
//!   dependence between two different statements;
//! - **objective**, lexicographically: `Σu`, `w`, the sum of iterator coefficients, the sum
//!   of shifts, then a weight that prefers outer iterators to inner ones (so matmul keeps
//!   `i, j, k`). The lexicographic minimum is computed by successive solves, fixing each
//!   objective at its optimum.
//!
//! The "for all points of the dependence" constraints are made linear by Farkas' lemma,
//! computed by isl: the constraints of `isl_set_coefficients` of the dependence (its
//! distance set for a self-dependence, the wrapped relation otherwise) are constraints on
//! the coefficients of every affine form that is non-negative on it; substituting the
//! schedule coefficients gives linear constraints for `good_lp` (module `coef`).
//!
//! **Outer parallelism** ([`IlpOptions::maximize_parallelism`], on by default): each level
//! is first solved with the extra equalities `φ_T − φ_S = 0` for every unsatisfied
//! dependence (a coincident row); if that is infeasible the level is solved without them.
//! Coincident flags are then computed exactly with isl, with isl's meaning: a member is
//! coincident iff every dependence live at the start of its band (not satisfied by an
//! outer band) has a zero distance in it. (Zero distance only for the dependences the
//! outer members of the same band leave unsatisfied is not enough: after tiling, the
//! member's tile loop is outside the outer members' point loops.)
//!
//! When no row exists for the band's dependences, the band ends and the dependences its
//! rows satisfy are dropped. When no row exists even for a fresh band, the group is **cut**
//! between strongly connected components of its dependence graph (petgraph; the components
//! in a topological order that keeps program order where it can), following [`Fuse`].
//! Every returned schedule is checked with [`crate::deps::check_schedule`].
//!
//! # Solvers
//!
//! [`Solver::Microlp`] (pure Rust) is always available. [`Solver::Highs`] and
//! [`Solver::Cbc`] need polyhedral's cargo features `highs` / `cbc` (they build the
//! HiGHS / COIN-OR CBC C++ libraries); asking for one that is not compiled in is an error.

mod build;
mod coef;
mod constraints;
mod core;
mod linalg;
mod lp;
mod options;
mod scc;
mod stats;

pub use constraints::{parse_constraints, Pin};
pub use options::{Fuse, IlpOptions, Solver, MAX_COEFFICIENT, MAX_FUSED_DISTANCE, MAX_SHIFT};
pub use stats::{schedule_stats, ScheduleStats};

use crate::deps::{check_schedule, Deps};
use crate::isl::{Ctx, IslResultExt};
use crate::scop::Scop;

/// Schedules `scop` with the ILP scheduler and checks the result against `deps`.
///
/// `ctx` is the context the Scop was built in (the same signature as
/// [`crate::sched::isl_schedule`]; every isl object used here comes from the Scop).
///
/// The result has isl's form: bands (all permutable, with exact coincident flags) and
/// sequences of filters for distributed groups. An illegal pin is a located error naming
/// the dependence it violates.
pub fn ilp_schedule(
    ctx: &Ctx,
    scop: &Scop,
    deps: &Deps,
    opts: &IlpOptions,
) -> miette::Result<isl_rs::Schedule> {
    let _ = ctx;
    for p in &opts.pins {
        if p.stmt >= scop.stmt_names.len() || p.order.len() != scop.iter_names[p.stmt].len() {
            return Err(miette::miette!(
                "internal error: a pin does not match the program's statements"
            ));
        }
    }
    // Statements that never run are not scheduled (isl drops them from the domain).
    let mut live = Vec::new();
    for (i, d) in scop.stmt_domains.iter().enumerate() {
        let empty = d
            .copy()
            .isl("copying a domain")?
            .intersect_params(scop.context.copy().isl("copying the context")?)
            .isl("restricting a domain")?
            .is_empty()
            .isl("testing a domain")?;
        if !empty {
            live.push(i);
        }
    }
    let tree = if live.is_empty() {
        core::Node::Leaf
    } else {
        core::Search::new(scop, deps, opts)?.run(live)?
    };
    let schedule = build::to_schedule(scop, &tree)?;
    match check_schedule(deps, &schedule)? {
        Ok(()) => Ok(schedule),
        Err(v) => Err(miette::miette!(
            help = "this is a bug in the ILP scheduler; use `--scheduler isl` and please report the program",
            "internal error: the ILP schedule is illegal: {v}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse() {
        for f in [Fuse::Max, Fuse::Smart, Fuse::None] {
            assert_eq!(f.name().parse::<Fuse>().unwrap(), f);
        }
        let e = "greedy".parse::<Fuse>().unwrap_err();
        assert_eq!(e.to_string(), "unknown fusion strategy `greedy`");
        assert_eq!(
            e.help().map(|h| h.to_string()).as_deref(),
            Some("valid fusion strategies: max, smart, none")
        );
        for s in [Solver::Microlp, Solver::Highs, Solver::Cbc] {
            assert_eq!(s.name().parse::<Solver>().unwrap(), s);
        }
        let e = "glpk".parse::<Solver>().unwrap_err();
        assert_eq!(e.to_string(), "unknown ILP solver `glpk`");
        assert_eq!(Fuse::default(), Fuse::Smart);
        let o = IlpOptions::default();
        assert!(o.maximize_parallelism && !o.no_skew && o.pins.is_empty());
    }

    #[cfg(not(feature = "highs"))]
    #[test]
    fn missing_solver_is_an_error() {
        let mut m = lp::Model::default();
        let x = m.var(0, 3);
        let e = m
            .lexmin(&[lp::Lin::var(x)], Solver::Highs)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "the `highs` ILP solver is not compiled into this polyc");
    }

    #[test]
    fn lexicographic_minimum() {
        // min (x + y, then -x) over x + y >= 3, x <= 2, y <= 2: x + y = 3, then x = 2.
        let mut m = lp::Model::default();
        let (x, y) = (m.var(0, 2), m.var(0, 2));
        let mut c = lp::Lin::var(x);
        c.add_scaled(&lp::Lin::var(y), 1);
        c.cst = -3;
        m.ge0(c.clone());
        let mut sum = c;
        sum.cst = 0;
        let v = m
            .lexmin(&[sum, lp::Lin::var(x).neg()], Solver::Microlp)
            .unwrap()
            .unwrap();
        assert_eq!((v[x], v[y]), (2, 1));
        m.eq0(lp::Lin::constant(1));
        assert_eq!(m.lexmin(&[], Solver::Microlp).unwrap(), None);
    }
}
