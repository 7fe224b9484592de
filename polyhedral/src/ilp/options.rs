//! The ILP scheduler's options: the fusion strategy, the solver, pinned loop orders,
//! and the bounds on schedule coefficients.

use std::fmt;
use std::str::FromStr;

use super::constraints::Pin;

/// The largest iterator coefficient of a schedule row.
pub const MAX_COEFFICIENT: i64 = 4;
/// The largest constant shift of a schedule row. Shifts are not multiplied by sizes, so
/// with symbolic sizes only small constant shifts are possible; the cap keeps schedules for
/// bound sizes close to those for symbolic ones (a producer is not fused with a consumer
/// that needs a shift as large as a size).
pub const MAX_SHIFT: i64 = 4;

/// The largest distance `φ_T − φ_S` a row may give an unsatisfied dependence between two
/// *different* statements. So two statements share a row only if their distance in it
/// does not grow with the sizes: with symbolic sizes this is Pluto's bound with `u = 0`
/// for inter-statement dependences; with bound sizes it stops "fusions" that only work
/// because a size is small (e.g. `Out(i)` of Jacobi at row `4i + 4` next to `t`).
pub const MAX_FUSED_DISTANCE: i64 = 8;

/// Fusion strategy at a cut (Pluto's `--maxfuse`, `--smartfuse`, `--nofuse`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Fuse {
    /// Fuse everything the dependences allow: nothing is distributed up front, and a cut
    /// splits the components (in topological order) after the longest prefix that still
    /// has a legal row; the rest is scheduled (and cut again if needed) on its own.
    Max,
    /// Fuse components only when they have the same dimensionality: up front and at every
    /// cut, consecutive components (topological order) go into one group iff their
    /// largest iterator counts are equal; a cut where that yields one group uses the
    /// `max` rule.
    #[default]
    Smart,
    /// Distribute every component at the outermost level (a sequence of the components in
    /// topological order), and separate all components at every later cut.
    None,
}

impl Fuse {
    /// The names `--fuse` accepts.
    pub const NAMES: [&'static str; 3] = ["max", "smart", "none"];
    /// This strategy's name.
    pub fn name(self) -> &'static str {
        match self {
            Fuse::Max => "max",
            Fuse::Smart => "smart",
            Fuse::None => "none",
        }
    }
}

impl fmt::Display for Fuse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Fuse {
    type Err = miette::Report;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "max" => Ok(Fuse::Max),
            "smart" => Ok(Fuse::Smart),
            "none" => Ok(Fuse::None),
            _ => Err(miette::miette!(
                help = format!("valid fusion strategies: {}", Self::NAMES.join(", ")),
                "unknown fusion strategy `{s}`"
            )),
        }
    }
}

/// The ILP solver behind `good_lp`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Solver {
    /// microlp, pure Rust (always available).
    #[default]
    Microlp,
    /// HiGHS (cargo feature `highs`).
    Highs,
    /// COIN-OR CBC (cargo feature `cbc`).
    Cbc,
}

impl Solver {
    /// The names accepted by [`FromStr`].
    pub const NAMES: [&'static str; 3] = ["microlp", "highs", "cbc"];
    /// This solver's name.
    pub fn name(self) -> &'static str {
        match self {
            Solver::Microlp => "microlp",
            Solver::Highs => "highs",
            Solver::Cbc => "cbc",
        }
    }
}

impl fmt::Display for Solver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Solver {
    type Err = miette::Report;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "microlp" => Ok(Solver::Microlp),
            "highs" => Ok(Solver::Highs),
            "cbc" => Ok(Solver::Cbc),
            _ => Err(miette::miette!(
                help = format!("valid solvers: {}", Self::NAMES.join(", ")),
                "unknown ILP solver `{s}`"
            )),
        }
    }
}

/// Options of the ILP scheduler.
#[derive(Clone, Debug)]
pub struct IlpOptions {
    /// Fusion strategy.
    pub fuse: Fuse,
    /// Every row of a statement uses exactly one iterator, with coefficient 1 (no skewing,
    /// no scaling; coefficients are never negative in any mode).
    pub no_skew: bool,
    /// Pinned loop orders ([`parse_constraints`]).
    pub pins: Vec<Pin>,
    /// Prefer coincident (parallel) rows at every level (see the module docs).
    pub maximize_parallelism: bool,
    /// The ILP solver.
    pub solver: Solver,
}

impl Default for IlpOptions {
    fn default() -> Self {
        IlpOptions {
            fuse: Fuse::Smart,
            no_skew: false,
            pins: Vec::new(),
            maximize_parallelism: true,
            solver: Solver::Microlp,
        }
    }
}
