//! How a campaign runs ([`Settings`]) and what it found ([`Summary`]).

use std::path::PathBuf;
use std::time::Duration;

use crate::case::Inject;
use crate::shrink::Budget;

/// The default share of cases on the GPU target.
pub const GPU_SHARE: f64 = 0.0075;
/// The default share of cases on the Gemmini target.
pub const GEMMINI_SHARE: f64 = 0.06;
/// The default share of kernels built at polyc's `-O3`.
pub const O3_SHARE: f64 = 0.1;

/// How a campaign runs.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The seed every case derives from.
    pub seed: u64,
    /// The most cases run.
    pub cases: u64,
    /// The most seconds spent starting cases (shrinking may run past it).
    pub seconds: f64,
    /// Worker processes in parallel.
    pub jobs: usize,
    /// Run only this case index.
    pub only: Option<u64>,
    /// Where failures are saved.
    pub out: PathBuf,
    /// The share of cases on the GPU target (OpenCL on PoCL: slow to build kernels).
    pub gpu_share: f64,
    /// The share of cases on the Gemmini target.
    pub gemmini_share: f64,
    /// The share of kernels built with polyc's own `-O3` (the others with `-O1`).
    pub o3_share: f64,
    /// A fault to inject (to show that the campaign catches a wrong kernel).
    pub inject: Option<Inject>,
    /// Shrink unexplained failures.
    pub shrink: Budget,
    /// The time limit of one case.
    pub case_limit: Duration,
    /// Print every case.
    pub verbose: bool,
}

/// What a campaign found.
#[derive(Debug, Default)]
pub struct Summary {
    /// Cases run.
    pub cases: u64,
    /// Cases that passed.
    pub passed: u64,
    /// Cases per target: CPU, GPU, Gemmini.
    pub per_target: [u64; 3],
    /// Cases whose random spec the target rejected (they ran with the default policy).
    pub spec_rejected: u64,
    /// Cases that ran with a spec.
    pub with_spec: u64,
    /// Failures explained by a known bug: (case id, bug).
    pub known: Vec<(String, &'static crate::known::Known)>,
    /// Unexplained failures: the saved folder of each.
    pub failures: Vec<PathBuf>,
    /// Wall time.
    pub seconds: f64,
    /// CPU time of the campaign and every process it ran (workers, C compilers).
    pub cpu_seconds: f64,
}
