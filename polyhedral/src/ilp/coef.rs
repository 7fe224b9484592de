//! Farkas elimination through isl's coefficient sets.
//!
//! For a dependence polyhedron `P` (pairs `S[x] -> T[y]` with the symbolic sizes `n`),
//! `isl_set_coefficients` of `P` wrapped as a set is the set of every `(c_0, c_n, c_x, c_y)`
//! with `c_0 + c_n·n + c_x·x + c_y·y >= 0` on all of `P`: the Farkas multipliers are
//! already eliminated. Its constraints are linear in those coefficients, so substituting
//! the schedule coefficients (`c_x = -φ_S`, `c_y = φ_T`, …) gives linear constraints on
//! the schedule that say "this affine form is non-negative on the dependence". As in
//! isl's scheduler, a self-dependence uses its distance set `y - x` (fewer dimensions),
//! and existentially quantified variables are dropped (`remove_divs`, before and again after
//! taking the distances, whose projection can create new ones), which only enlarges `P`
//! and so keeps every derived schedule legal.

use super::lp::{Cons, Lin};
use crate::isl::IslResultExt;
use isl_rs::{BasicSet, DimType, Map, Space};

/// The constraints of a coefficient set, over `[c_0, c_n…, c_vars…]`.
#[derive(Clone, Debug)]
pub struct CoefSet {
    /// Number of size coefficients `c_n`.
    pub n_params: usize,
    /// Number of variable coefficients (the distance dimensions of a self-dependence, or
    /// source then target dimensions).
    pub n_vars: usize,
    /// `(coefficients over [c_0, c_n…, c_vars…], constant, is_equality)`.
    pub cons: Vec<(Vec<i64>, i64, bool)>,
}

impl CoefSet {
    /// The coefficient set of the dependence `map` (from `S` to `T`; a self-dependence if
    /// `self_dep`), with the size parameters aligned to `params` (the Scop's context
    /// space).
    pub fn of_dependence(map: &Map, self_dep: bool, params: &Space) -> miette::Result<CoefSet> {
        let map = map
            .copy()
            .isl("copying a dependence")?
            .align_params(params.copy().isl("copying a space")?)
            .isl("aligning parameters")?
            .remove_divs()
            .isl("dropping existential variables")?;
        let n_params = map.dim(DimType::Param).isl("counting parameters")? as usize;
        let set = if self_dep {
            map.deltas().isl("computing dependence distances")?
        } else {
            map.wrap().isl("wrapping a dependence")?
        };
        // Projecting onto the distances can bring integer divisions back (an integer
        // projection is not always a polyhedron); drop them again, enlarging the set.
        let set = set
            .remove_divs()
            .isl("dropping existential variables of the distances")?;
        let n_vars = set.dim(DimType::Set).isl("counting dimensions")? as usize;
        let coef = set
            .coefficients()
            .isl("computing the coefficient set (Farkas)")?;
        Self::from_basic_set(&coef, n_params, n_vars)
    }

    fn from_basic_set(coef: &BasicSet, n_params: usize, n_vars: usize) -> miette::Result<CoefSet> {
        let dims = coef
            .dim(DimType::Set)
            .isl("counting coefficient dimensions")? as usize;
        let divs = coef.dim(DimType::Div).isl("counting coefficient divs")? as usize;
        if dims != 1 + n_params + n_vars || divs != 0 {
            return Err(miette::miette!(
                "internal error: unexpected coefficient set layout ({dims} dimensions, {divs} divs, expected {})",
                1 + n_params + n_vars
            ));
        }
        let list = coef
            .get_constraint_list()
            .isl("listing coefficient constraints")?;
        let n = list.size().isl("counting coefficient constraints")?;
        let mut cons = Vec::with_capacity(n as usize);
        for k in 0..n {
            let c = list.get_at(k).isl("reading a coefficient constraint")?;
            let int = |v: isl_rs::Val| -> miette::Result<i64> {
                let den = v.get_den_si().isl("reading a coefficient")?;
                if den != 1 {
                    return Err(miette::miette!(
                        "internal error: a non-integer coefficient in a coefficient set"
                    ));
                }
                v.get_num_si().isl("reading a coefficient")
            };
            let mut row = Vec::with_capacity(dims);
            for d in 0..dims {
                row.push(int(c
                    .get_coefficient_val(DimType::Set, d as i32)
                    .isl("reading a coefficient")?)?);
            }
            let cst = int(c.get_constant_val().isl("reading a constant")?)?;
            let eq = c.is_equality().isl("reading a constraint kind")?;
            cons.push((row, cst, eq));
        }
        Ok(CoefSet {
            n_params,
            n_vars,
            cons,
        })
    }

    /// The schedule constraints saying that the affine form with constant `c0`, size
    /// coefficients `cn` and variable coefficients `cv` is non-negative on the
    /// dependence.
    pub fn nonneg(&self, c0: &Lin, cn: &[Lin], cv: &[Lin]) -> Vec<Cons> {
        debug_assert_eq!(cn.len(), self.n_params);
        debug_assert_eq!(cv.len(), self.n_vars);
        self.cons
            .iter()
            .map(|(row, cst, eq)| {
                let mut lin = Lin::constant(*cst);
                lin.add_scaled(c0, row[0]);
                for (k, l) in cn.iter().enumerate() {
                    lin.add_scaled(l, row[1 + k]);
                }
                for (k, l) in cv.iter().enumerate() {
                    lin.add_scaled(l, row[1 + self.n_params + k]);
                }
                Cons { lin, eq: *eq }
            })
            .collect()
    }
}
