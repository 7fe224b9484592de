//! A small integer-program representation and its lexicographic minimisation on `good_lp`.
//!
//! The scheduler builds [`Model`]s of its own (integer variables with bounds, linear
//! constraints with integer coefficients) and hands them to the selected solver one
//! objective at a time: minimise the first objective, fix it at its optimum, minimise the
//! next, and so on. That is the "lexicographic minimum" of Pluto without a parametric
//! integer programming solver.

use super::Solver;
use good_lp::{
    Expression, ProblemVariables, ResolutionError, Solution, SolverModel, Variable,
    VariableDefinition,
};

/// A linear form `Σ coef·var + cst` over the model's variables.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Lin {
    /// `(variable, coefficient)` pairs; a variable may occur more than once (summed).
    pub terms: Vec<(usize, i64)>,
    /// The constant.
    pub cst: i64,
}

impl Lin {
    /// The form `var`.
    pub fn var(v: usize) -> Lin {
        Lin {
            terms: vec![(v, 1)],
            cst: 0,
        }
    }
    /// The constant form `c`.
    pub fn constant(c: i64) -> Lin {
        Lin {
            terms: Vec::new(),
            cst: c,
        }
    }
    /// `self + k·other`.
    pub fn add_scaled(&mut self, other: &Lin, k: i64) {
        if k == 0 {
            return;
        }
        self.terms
            .extend(other.terms.iter().map(|&(v, c)| (v, c * k)));
        self.cst += other.cst * k;
    }
    /// `-self`.
    pub fn neg(&self) -> Lin {
        let mut out = Lin::default();
        out.add_scaled(self, -1);
        out
    }
    /// `self - other`.
    pub fn sub(&self, other: &Lin) -> Lin {
        let mut out = self.clone();
        out.add_scaled(other, -1);
        out
    }
    /// Evaluates with integer variable values.
    pub fn eval(&self, values: &[i64]) -> i64 {
        self.terms.iter().map(|&(v, c)| c * values[v]).sum::<i64>() + self.cst
    }
}

/// A linear constraint: `lin >= 0`, or `lin = 0`.
#[derive(Clone, Debug, PartialEq)]
pub struct Cons {
    /// The form.
    pub lin: Lin,
    /// Equality instead of `>= 0`.
    pub eq: bool,
}

/// An integer variable with bounds.
#[derive(Clone, Debug, PartialEq)]
pub struct VarDef {
    /// Lower bound.
    pub lo: i64,
    /// Upper bound.
    pub hi: i64,
}

/// An integer linear program without objective.
#[derive(Clone, Debug, Default)]
pub struct Model {
    /// Variables, by index.
    pub vars: Vec<VarDef>,
    /// Constraints.
    pub cons: Vec<Cons>,
}

impl Model {
    /// Adds an integer variable in `[lo, hi]`, returns its index.
    pub fn var(&mut self, lo: i64, hi: i64) -> usize {
        self.vars.push(VarDef { lo, hi });
        self.vars.len() - 1
    }
    /// Adds `lin >= 0`.
    pub fn ge0(&mut self, lin: Lin) {
        self.cons.push(Cons { lin, eq: false });
    }
    /// Adds `lin = 0`.
    pub fn eq0(&mut self, lin: Lin) {
        self.cons.push(Cons { lin, eq: true });
    }

    /// Minimises the objectives lexicographically; `Ok(None)` if infeasible.
    pub fn lexmin(&self, objectives: &[Lin], solver: Solver) -> miette::Result<Option<Vec<i64>>> {
        let mut m = self.clone();
        let mut last = None;
        for obj in objectives {
            let Some(values) = solve(&m, obj, solver)? else {
                return Ok(None);
            };
            let opt = obj.eval(&values);
            let mut fix = obj.clone();
            fix.cst -= opt;
            m.eq0(fix);
            last = Some(values);
        }
        if last.is_none() {
            last = solve(&m, &Lin::default(), solver)?;
        }
        Ok(last)
    }

    /// True if the constraints have an integer solution.
    pub fn feasible(&self, solver: Solver) -> miette::Result<bool> {
        Ok(solve(self, &Lin::default(), solver)?.is_some())
    }
}

fn expr(lin: &Lin, vars: &[Variable]) -> Expression {
    let mut e = Expression::from(lin.cst as f64);
    for &(v, c) in &lin.terms {
        e += (c as f64) * vars[v];
    }
    e
}

/// One solve of `min obj` subject to the model; integer values, or `None` if infeasible.
fn solve(m: &Model, obj: &Lin, solver: Solver) -> miette::Result<Option<Vec<i64>>> {
    let mut pv = ProblemVariables::new();
    let vars: Vec<Variable> = m
        .vars
        .iter()
        .map(|d| {
            pv.add(
                VariableDefinition::new()
                    .integer()
                    .min(d.lo as f64)
                    .max(d.hi as f64),
            )
        })
        .collect();
    let objective = expr(obj, &vars);
    let constraints: Vec<good_lp::Constraint> = m
        .cons
        .iter()
        .map(|c| {
            let e = expr(&c.lin, &vars);
            if c.eq {
                good_lp::constraint::eq(e, 0.0)
            } else {
                good_lp::constraint::geq(e, 0.0)
            }
        })
        .collect();
    let problem = pv.minimise(objective);
    macro_rules! run {
        ($f:expr) => {{
            let mut model = problem.using($f);
            for c in constraints {
                model = model.with(c);
            }
            match model.solve() {
                Ok(sol) => Ok(Some(
                    vars.iter().map(|v| sol.value(*v).round() as i64).collect(),
                )),
                Err(ResolutionError::Infeasible) => Ok(None),
                Err(e) => Err(miette::miette!(
                    help = "try another solver with `--ilp-solver`, or `--scheduler isl`",
                    "the ILP solver failed while scheduling: {e}"
                )),
            }
        }};
    }
    let out: miette::Result<Option<Vec<i64>>> = match solver {
        Solver::Microlp => run!(good_lp::microlp),
        #[cfg(feature = "highs")]
        Solver::Highs => run!(good_lp::highs),
        #[cfg(feature = "cbc")]
        Solver::Cbc => run!(good_lp::coin_cbc),
        #[allow(unreachable_patterns)]
        other => Err(miette::miette!(
            help = format!(
                "rebuild polyc with `--features polyhedral/{}`, or use the default `microlp`",
                other.name()
            ),
            "the `{}` ILP solver is not compiled into this polyc",
            other.name()
        )),
    };
    let out = out?;
    // Integer solutions are checked exactly: a solver's rounding must not make an
    // illegal schedule.
    if let Some(values) = &out {
        for c in &m.cons {
            let v = c.lin.eval(values);
            if (c.eq && v != 0) || (!c.eq && v < 0) {
                return Err(miette::miette!(
                    "internal error: the ILP solver returned a solution that violates a constraint"
                ));
            }
        }
    }
    Ok(out)
}
