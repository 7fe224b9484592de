//! Schedulers: the program-order schedule (`initial`) and isl's scheduler (`isl`).
//!
//! Both return an `isl_schedule` tree over [`Scop::domain`]. The initial schedule is the
//! reference order of the language: a sequence of the statements in textual order, each
//! with an identity band over its own iterators whose coincident and permutable flags are
//! computed exactly from the dependences.

use crate::deps::{respects, Deps};
use crate::isl::{Ctx, IslResultExt};
pub use crate::program_order::reference_schedule;
use crate::sched_bands::collect_band_flags;
use crate::sched_compute::{compute_on, hard_stop_after, Computed, Limits};
pub use crate::sched_compute::{SCHED_HARD_STOP_BUDGETS, SCHED_HARD_STOP_MIN_MS};
use crate::sched_parallel::parallel_weight;
use crate::scop::Scop;
use isl_rs::{
    Context, LibISLError, MultiUnionPwAff, Options, Schedule, Set, Stat, UnionMap, UnionSet,
};
use std::fmt;
use std::str::FromStr;

/// Which scheduler orders the statements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedulerKind {
    /// Program order ([`initial_schedule`]).
    Initial,
    /// isl's scheduler ([`isl_schedule`]).
    Isl,
    /// The ILP scheduler on `good_lp` ([`crate::ilp::ilp_schedule`]).
    Ilp,
}

impl SchedulerKind {
    /// The names `--scheduler` accepts.
    pub const NAMES: [&'static str; 3] = ["initial", "isl", "ilp"];
    /// The name of this scheduler.
    pub fn name(self) -> &'static str {
        match self {
            SchedulerKind::Initial => "initial",
            SchedulerKind::Isl => "isl",
            SchedulerKind::Ilp => "ilp",
        }
    }
}

impl fmt::Display for SchedulerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SchedulerKind {
    type Err = miette::Report;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "initial" => Ok(SchedulerKind::Initial),
            "isl" => Ok(SchedulerKind::Isl),
            "ilp" => Ok(SchedulerKind::Ilp),
            _ => Err(miette::miette!(
                help = format!("valid schedulers: {}", Self::NAMES.join(", ")),
                "unknown scheduler `{s}`"
            )),
        }
    }
}

/// isl's scheduling algorithm (`isl_options_set_schedule_algorithm`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IslAlgorithm {
    /// The Pluto-like algorithm (isl's default).
    Isl,
    /// Feautrier's multidimensional scheduling.
    Feautrier,
}

/// Options of isl's scheduler; `None` keeps isl's default. Each is set on the context
/// for one [`isl_schedule`] call and restored afterwards.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IslSchedOptions {
    /// `serialize_sccs`: put strongly connected components in sequence, no fusion.
    pub serialize_sccs: Option<bool>,
    /// `outer_coincidence`: require the outer band members to be coincident.
    pub outer_coincidence: Option<bool>,
    /// `maximize_coincidence`: prefer coincident members.
    pub maximize_coincidence: Option<bool>,
    /// `whole_component`: schedule a whole component at once (no incremental SCCs).
    pub whole_component: Option<bool>,
    /// `max_constant_term`: bound on constant terms (-1 = unlimited).
    pub max_constant_term: Option<i32>,
    /// `max_coefficient`: bound on coefficients (-1 = unlimited).
    pub max_coefficient: Option<i32>,
    /// `treat_coalescing`: avoid schedules that prevent loop coalescing.
    pub treat_coalescing: Option<bool>,
    /// `maximize_band_depth`: split bands when fewer members would result.
    pub maximize_band_depth: Option<bool>,
    /// `separate_components`: schedule components separately.
    pub separate_components: Option<bool>,
    /// `carry_self_first`: carry self-dependences first in Feautrier fallback.
    pub carry_self_first: Option<bool>,
    /// `split_scaled`: split off a common scaling factor.
    pub split_scaled: Option<bool>,
    /// `algorithm`: `isl` or `feautrier`.
    pub algorithm: Option<IslAlgorithm>,
    /// `max_operations`: polyc's budget for one run of isl's scheduler, in isl's basic
    /// steps (default [`SCHED_MAX_OPERATIONS`]); not an isl option.
    pub max_operations: Option<u64>,
    /// `time_budget_ms`: polyc's wall-clock budget for one run of isl's scheduler, in
    /// milliseconds (default [`SCHED_TIME_BUDGET_MS`]); past it, polyc schedules again with
    /// constant terms bounded ([`SCHED_MAX_CONSTANT_TERM`]), then each strongly connected
    /// component apart, with a note; not an isl option.
    pub time_budget_ms: Option<u64>,
    /// `scale_sizes`: with every size bound and some above
    /// [`crate::sched_scaled::SCALE_ABOVE`], schedule at scaled-down sizes first and carry
    /// the schedule over (default on; see [`crate::sched_scaled`]); not an isl option.
    pub scale_sizes: Option<bool>,
    /// `scale_probe`: with [`IslSchedOptions::scale_sizes`], first schedule the real sizes
    /// for [`crate::sched_scaled::PROBE_MIN`], and keep isl's own result when that is
    /// enough (default on); off, the scaled schedule is always carried over.
    pub scale_probe: Option<bool>,
    /// `scale_parametric`: with [`IslSchedOptions::scale_sizes`], when the real sizes'
    /// probe gives nothing, schedule the program with its scaled sizes as parameters once
    /// and take that schedule where it holds at the real sizes (default on; see
    /// [`crate::sched_parametric`]); not an isl option.
    pub scale_parametric: Option<bool>,
    /// `aligned`: where every dependence has distance zero with all statements' loops
    /// fused as written, take that schedule without running isl's scheduler (default on;
    /// see [`crate::sched_aligned`]); not an isl option.
    pub aligned: Option<bool>,
    /// `phases`: split bands in which isl shifted whole phases apart, so that they run one
    /// after the other (default on; see [`crate::sched_phases`]); not an isl option.
    pub phases: Option<bool>,
    /// `loops_apart`: schedule each sequential `for` loop one iteration at a time, isl's
    /// scheduler on its body (see [`crate::sched_loops`]): 1 goes there directly, 0 never
    /// (by default, after isl's scheduler ran past its time budget on the whole program);
    /// not an isl option.
    pub loops_apart: Option<bool>,
    /// `contiguous`: move a band member below inner loops where that makes the innermost
    /// loops walk the last index of the tensors they touch (default on; see the `tiling`
    /// crate's `contiguous` pass); not an isl option.
    pub contiguous: Option<bool>,
    /// With symbolic sizes, schedule with every one at [`LARGE_SIZE`] first, and keep that
    /// schedule when it holds for every size (default on); `Some(false)` schedules in the
    /// real context only. Set by polyc ([`crate::sched_scaled::Scaled`]), not an option
    /// name.
    pub large_first: Option<bool>,
}

/// The value type of an option, for parsing and error messages.
#[derive(Clone, Copy)]
enum OptType {
    Bool,
    Int,
    Algorithm,
    Budget,
}

/// Every option name `parse` accepts, with its type, in the order errors list them.
const OPTIONS: [(&str, OptType); 21] = [
    ("serialize_sccs", OptType::Bool),
    ("outer_coincidence", OptType::Bool),
    ("maximize_coincidence", OptType::Bool),
    ("whole_component", OptType::Bool),
    ("max_constant_term", OptType::Int),
    ("max_coefficient", OptType::Int),
    ("treat_coalescing", OptType::Bool),
    ("maximize_band_depth", OptType::Bool),
    ("separate_components", OptType::Bool),
    ("carry_self_first", OptType::Bool),
    ("split_scaled", OptType::Bool),
    ("algorithm", OptType::Algorithm),
    ("max_operations", OptType::Budget),
    ("time_budget_ms", OptType::Budget),
    ("scale_sizes", OptType::Bool),
    ("scale_probe", OptType::Bool),
    ("scale_parametric", OptType::Bool),
    ("aligned", OptType::Bool),
    ("phases", OptType::Bool),
    ("contiguous", OptType::Bool),
    ("loops_apart", OptType::Bool),
];

type Getter = fn(&Context) -> Result<i32, LibISLError>;
type Setter = fn(&Context, i32) -> Result<Stat, LibISLError>;

impl IslSchedOptions {
    /// Parses `NAME=VALUE` settings. Booleans take `0`, `1`, `true` or `false`;
    /// `max_constant_term` and `max_coefficient` take an integer `>= -1` (-1 = unlimited);
    /// `algorithm` takes `isl` or `feautrier`; `max_operations` and `time_budget_ms` a
    /// positive integer. A later
    /// setting of the same name wins.
    pub fn parse(settings: &[String]) -> miette::Result<Self> {
        let mut o = IslSchedOptions::default();
        let valid = || {
            OPTIONS
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        };
        for setting in settings {
            let Some((name, value)) = setting.split_once('=') else {
                return Err(miette::miette!(
                    help = format!("write NAME=VALUE; valid names: {}", valid()),
                    "isl scheduler option `{setting}` has no value"
                ));
            };
            let (name, value) = (name.trim(), value.trim());
            if name == "nonneg_var_coefficient" {
                return Err(miette::miette!(
                    help = "non-negative variable coefficients will come with `--scheduler ilp` (not implemented yet)",
                    "isl scheduler option `nonneg_var_coefficient` exists only in AKG's fork of isl, not in upstream isl 0.27 that polyc uses"
                ));
            }
            let Some((_, ty)) = OPTIONS.iter().find(|(n, _)| *n == name) else {
                return Err(miette::miette!(
                    help = format!("valid names: {}", valid()),
                    "unknown isl scheduler option `{name}`"
                ));
            };
            let bad = |accepted: &str| {
                miette::miette!(
                    help = format!("`{name}` accepts {accepted}"),
                    "invalid value `{value}` for isl scheduler option `{name}`"
                )
            };
            match ty {
                OptType::Bool => {
                    let b = match value {
                        "1" | "true" => true,
                        "0" | "false" => false,
                        _ => return Err(bad("0, 1, true or false")),
                    };
                    *o.bool_field(name) = Some(b);
                }
                OptType::Int => {
                    let v: i32 = value
                        .parse()
                        .ok()
                        .filter(|v| *v >= -1)
                        .ok_or_else(|| bad("an integer >= -1 (-1 = unlimited)"))?;
                    if name == "max_constant_term" {
                        o.max_constant_term = Some(v);
                    } else {
                        o.max_coefficient = Some(v);
                    }
                }
                OptType::Budget => {
                    let v: u64 = value
                        .parse()
                        .ok()
                        .filter(|v| *v >= 1)
                        .ok_or_else(|| bad("a positive integer"))?;
                    if name == "time_budget_ms" {
                        o.time_budget_ms = Some(v);
                    } else {
                        o.max_operations = Some(v);
                    }
                }
                OptType::Algorithm => {
                    o.algorithm = Some(match value {
                        "isl" => IslAlgorithm::Isl,
                        "feautrier" => IslAlgorithm::Feautrier,
                        _ => return Err(bad("isl or feautrier")),
                    });
                }
            }
        }
        Ok(o)
    }

    fn bool_field(&mut self, name: &str) -> &mut Option<bool> {
        match name {
            "serialize_sccs" => &mut self.serialize_sccs,
            "outer_coincidence" => &mut self.outer_coincidence,
            "maximize_coincidence" => &mut self.maximize_coincidence,
            "whole_component" => &mut self.whole_component,
            "treat_coalescing" => &mut self.treat_coalescing,
            "maximize_band_depth" => &mut self.maximize_band_depth,
            "separate_components" => &mut self.separate_components,
            "carry_self_first" => &mut self.carry_self_first,
            "scale_sizes" => &mut self.scale_sizes,
            "scale_probe" => &mut self.scale_probe,
            "scale_parametric" => &mut self.scale_parametric,
            "aligned" => &mut self.aligned,
            "phases" => &mut self.phases,
            "contiguous" => &mut self.contiguous,
            "loops_apart" => &mut self.loops_apart,
            _ => &mut self.split_scaled,
        }
    }

    /// The options that are set, as isl's int values with their getter and setter.
    fn settings(&self) -> Vec<(&'static str, i32, Getter, Setter)> {
        let b = |v: Option<bool>| v.map(i32::from);
        let all: [(&'static str, Option<i32>, Getter, Setter); 12] = [
            (
                "serialize_sccs",
                b(self.serialize_sccs),
                Options::get_schedule_serialize_sccs,
                Options::set_schedule_serialize_sccs,
            ),
            (
                "outer_coincidence",
                b(self.outer_coincidence),
                Options::get_schedule_outer_coincidence,
                Options::set_schedule_outer_coincidence,
            ),
            (
                "maximize_coincidence",
                b(self.maximize_coincidence),
                Options::get_schedule_maximize_coincidence,
                Options::set_schedule_maximize_coincidence,
            ),
            (
                "whole_component",
                b(self.whole_component),
                Options::get_schedule_whole_component,
                Options::set_schedule_whole_component,
            ),
            (
                "max_constant_term",
                self.max_constant_term,
                Options::get_schedule_max_constant_term,
                Options::set_schedule_max_constant_term,
            ),
            (
                "max_coefficient",
                self.max_coefficient,
                Options::get_schedule_max_coefficient,
                Options::set_schedule_max_coefficient,
            ),
            (
                "treat_coalescing",
                b(self.treat_coalescing),
                Options::get_schedule_treat_coalescing,
                Options::set_schedule_treat_coalescing,
            ),
            (
                "maximize_band_depth",
                b(self.maximize_band_depth),
                Options::get_schedule_maximize_band_depth,
                Options::set_schedule_maximize_band_depth,
            ),
            (
                "separate_components",
                b(self.separate_components),
                Options::get_schedule_separate_components,
                Options::set_schedule_separate_components,
            ),
            (
                "carry_self_first",
                b(self.carry_self_first),
                Options::get_schedule_carry_self_first,
                Options::set_schedule_carry_self_first,
            ),
            (
                "split_scaled",
                b(self.split_scaled),
                Options::get_schedule_split_scaled,
                Options::set_schedule_split_scaled,
            ),
            (
                "algorithm",
                self.algorithm.map(|a| match a {
                    IslAlgorithm::Isl => 0,
                    IslAlgorithm::Feautrier => 1,
                }),
                Options::get_schedule_algorithm,
                Options::set_schedule_algorithm,
            ),
        ];
        all.into_iter()
            .filter_map(|(n, v, g, s)| v.map(|v| (n, v, g, s)))
            .collect()
    }
}

/// Program order: Domain → (if 2+ statements) Sequence → Filter `{S_i}` → Band over
/// `S_i`'s iterators (identity, in order; statements without iterators get no band).
///
/// Band member `k` is coincident iff no dependence between two instances of the
/// statement that agree on members `0..k` has a non-zero distance in member `k`; the band
/// is permutable iff every self-dependence has non-negative distances in all members.
pub fn initial_schedule(scop: &Scop, deps: &Deps) -> miette::Result<Schedule> {
    let validity = deps.validity()?;
    crate::program_order::program_order(scop, Some(&validity))
}

/// isl's scheduler on the Scop: validity = proximity = coincidence = `deps.validity()`
/// (RAW ∪ WAR ∪ WAW, as PPCG does without live-range reordering), context =
/// `scop.context`. `opts` are set on the context for this call and restored afterwards.
///
/// When isl cannot carry the dependences as given, they are split by the loop that
/// carries them in program order and scheduled again (see [`split_by_program_order`]);
/// when isl still finds no schedule, this is an error ([`isl_schedule_or_initial`] falls
/// back to program order instead).
pub fn isl_schedule(
    ctx: &Ctx,
    scop: &Scop,
    deps: &Deps,
    opts: &IslSchedOptions,
) -> miette::Result<Schedule> {
    match run_isl(ctx, scop, deps, opts, None)? {
        IslRun::Schedule(s, _, _) => Ok(s),
        IslRun::OutOfTime => Err(miette::miette!(
            help = "raise the budget with `--isl-option time_budget_ms=N`",
            "isl's scheduler ran past its time budget"
        )),
        IslRun::NoSchedule(why) => Err(miette::miette!(
            help = "relax the isl scheduler options (e.g. max_coefficient=-1) or use `--scheduler initial`",
            "isl's scheduler found no schedule: {why}"
        )),
    }
}

/// What [`isl_schedule_or_initial`] gives.
pub struct IslScheduled {
    /// The schedule: isl's, or program order where isl found none.
    pub schedule: Schedule,
    /// Notes for the user (`note: …`): how isl's schedule was found, or why program order
    /// replaces it.
    pub notes: Vec<String>,
    /// Whether isl found no schedule and `schedule` is program order.
    pub fell_back: bool,
}

/// [`isl_schedule`], falling back to the program-order schedule ([`initial_schedule`])
/// with a note where isl finds no schedule. Running out of isl's operation budget stays an
/// error (see [`SCHED_MAX_OPERATIONS`]).
pub fn isl_schedule_or_initial(
    ctx: &Ctx,
    scop: &Scop,
    deps: &Deps,
    opts: &IslSchedOptions,
) -> miette::Result<IslScheduled> {
    Ok(match run_isl(ctx, scop, deps, opts, None)? {
        IslRun::Schedule(schedule, note, _) => IslScheduled {
            schedule,
            notes: note.into_iter().collect(),
            fell_back: false,
        },
        IslRun::OutOfTime => IslScheduled {
            schedule: initial_schedule(scop, deps)?,
            notes: vec![
                "note: isl's scheduler ran past its time budget; polyc uses the \
                 program-order schedule instead, as `--scheduler initial` does"
                    .to_string(),
            ],
            fell_back: true,
        },
        IslRun::NoSchedule(why) => IslScheduled {
            schedule: initial_schedule(scop, deps)?,
            notes: vec![format!(
                "note: isl's scheduler found no schedule ({why}); polyc uses the program-order \
                 schedule instead, as `--scheduler initial` does"
            )],
            fell_back: true,
        },
    })
}

/// What [`run_isl`] gave.
pub(crate) enum IslRun {
    /// A schedule, with a note when the dependences had to be split for isl, and the isl
    /// option of the retry that found it after the time budget ran out (if one did).
    Schedule(Schedule, Option<String>, Option<&'static str>),
    /// isl found no schedule, and why.
    NoSchedule(String),
    /// isl ran past its time budget.
    OutOfTime,
}

/// isl's scheduler with `opts` set on the context (and restored afterwards).
///
/// With `probe`, the run stops as soon as that much time has passed, and running out of
/// time gives [`IslRun::OutOfTime`] without the cheaper retries.
pub(crate) fn run_isl(
    ctx: &Ctx,
    scop: &Scop,
    deps: &Deps,
    opts: &IslSchedOptions,
    probe: Option<std::time::Duration>,
) -> miette::Result<IslRun> {
    with_settings(ctx, opts, || run_isl_set(ctx, scop, deps, opts, probe))
}

/// Runs `f` with `opts`' isl settings on the context, and restores the old ones after.
pub(crate) fn with_settings<T>(
    ctx: &Ctx,
    opts: &IslSchedOptions,
    f: impl FnOnce() -> miette::Result<T>,
) -> miette::Result<T> {
    let settings = opts.settings();
    let mut saved = Vec::with_capacity(settings.len());
    for (name, _, get, _) in &settings {
        saved.push(get(&ctx.isl).isl(&format!("reading isl option {name}"))?);
    }
    let mut result = Ok(());
    for (name, value, _, set) in &settings {
        if let Err(e) = set(&ctx.isl, *value).isl(&format!("setting isl option {name}")) {
            result = Err(e);
            break;
        }
    }
    let run = result.and_then(|()| f());
    for ((name, _, _, set), old) in settings.iter().zip(saved) {
        set(&ctx.isl, old).isl(&format!("restoring isl option {name}"))?;
    }
    run
}

/// [`run_isl`] with the options already set on the context.
fn run_isl_set(
    ctx: &Ctx,
    scop: &Scop,
    deps: &Deps,
    opts: &IslSchedOptions,
    probe: Option<std::time::Duration>,
) -> miette::Result<IslRun> {
    let budget = opts.max_operations.unwrap_or(SCHED_MAX_OPERATIONS);
    let limits = Limits {
        operations: budget,
        time: probe.unwrap_or(std::time::Duration::from_millis(
            opts.time_budget_ms.unwrap_or(SCHED_TIME_BUDGET_MS),
        )),
        floor: if probe.is_some() {
            0
        } else {
            SCHED_TIMEOUT_MIN_OPERATIONS
        },
        large_first: opts.large_first != Some(false),
    };
    let started = std::time::Instant::now();
    let run = match crate::sched_loops::direct(scop, deps, opts.loops_apart)? {
        Some(why) => {
            let _s = crate::substeps::span("schedule:loops_apart");
            match schedule_loops_apart(ctx, scop, deps, limits)? {
                IslRun::Schedule(s, note, _) => {
                    let note = why.map(|w| format!("note: {w}")).into_iter().chain(note);
                    let note = note.collect::<Vec<_>>().join("\n");
                    IslRun::Schedule(s, (!note.is_empty()).then_some(note), Some("loops_apart"))
                }
                other => other,
            }
        }
        None => schedule_deps(ctx, scop, deps, limits)?,
    };
    if !matches!(run, IslRun::OutOfTime) || probe.is_some() {
        return Ok(run);
    }
    // A run that went on to its hard stop did slow operations (adi's and deriche's at
    // LARGE sizes: 20 s each), and a retry that runs out of time would do the same: the
    // retries then stop at their time budget, with no floor of operations (one that needs
    // little, as deriche's bounded run, still ends).
    let limits = if started.elapsed() >= limits.time + hard_stop_after(limits.time) {
        Limits { floor: 0, ..limits }
    } else {
        limits
    };
    // The retries the user's options leave open, cheapest change first.
    let mut retries = Vec::new();
    if opts.loops_apart != Some(false) && crate::sched_loops::has_loops(scop) {
        retries.push(loops_apart_retry());
    }
    if opts.max_constant_term.is_none() {
        retries.push(bounded_retry());
    }
    if opts.serialize_sccs != Some(true) {
        retries.push(serialized_retry());
    }
    Ok(
        match retry_after_timeout(ctx, scop, deps, limits, &retries)? {
            IslRun::OutOfTime => IslRun::NoSchedule(format!(
                "it ran past its time budget of {} ms",
                limits.time.as_millis()
            )),
            other => other,
        },
    )
}

/// A cheaper run of isl's scheduler after one ran past its time budget, and what the
/// note says polyc did.
struct Retry {
    /// The sub-step it is timed as.
    step: &'static str,
    /// The option's name (for error contexts, and [`IslSchedOptions::with_retry`]).
    option: &'static str,
    /// What the retry changes.
    kind: RetryKind,
    /// What polyc did, for the note ("scheduled again with …").
    did: String,
    /// What the first run lacked, for the error when the retry runs out too.
    without: &'static str,
    /// What the retry changed, for the note when another retry's schedule is taken.
    changed: String,
}

/// What a [`Retry`] changes.
enum RetryKind {
    /// An isl option (getter, setter and value), set for the run.
    Option(Getter, Setter, i32),
    /// Each sequential loop one iteration at a time ([`crate::sched_loops`]).
    LoopsApart,
}

impl IslSchedOptions {
    /// These options with the setting of the retry named `option` (the third field of
    /// [`IslRun::Schedule`]) made explicit, so that a run under them goes straight to
    /// what that retry did.
    pub(crate) fn with_retry(&self, option: Option<&str>) -> IslSchedOptions {
        let mut o = self.clone();
        match option {
            Some("max_constant_term") => o.max_constant_term = Some(SCHED_MAX_CONSTANT_TERM),
            Some("serialize_sccs") => o.serialize_sccs = Some(true),
            Some("loops_apart") => o.loops_apart = Some(true),
            _ => {}
        }
        o
    }
}

/// Isl's constant terms bounded by [`SCHED_MAX_CONSTANT_TERM`] (fusion kept).
fn bounded_retry() -> Retry {
    Retry {
        step: "schedule:isl_bounded",
        option: "max_constant_term",
        kind: RetryKind::Option(
            Options::get_schedule_max_constant_term,
            Options::set_schedule_max_constant_term,
            SCHED_MAX_CONSTANT_TERM,
        ),
        did: format!(
            "scheduled again with constant terms of at most {SCHED_MAX_CONSTANT_TERM} \
             (isl's max_constant_term, Polly's default bound)"
        ),
        without: "a bound on constant terms",
        changed: format!("constant terms of at most {SCHED_MAX_CONSTANT_TERM}"),
    }
}

/// Each strongly connected component scheduled apart (`serialize_sccs`: small problems,
/// no fusion by the scheduler).
fn serialized_retry() -> Retry {
    Retry {
        step: "schedule:isl_serialized",
        option: "serialize_sccs",
        kind: RetryKind::Option(
            Options::get_schedule_serialize_sccs,
            Options::set_schedule_serialize_sccs,
            1,
        ),
        did: "scheduled each strongly connected component apart instead (isl with \
              serialize_sccs=1: no fusion by the scheduler)"
            .into(),
        without: "serialize_sccs",
        changed: "the components apart".into(),
    }
}

/// Each sequential loop one iteration at a time, isl's scheduler on its body
/// ([`crate::sched_loops`]).
fn loops_apart_retry() -> Retry {
    Retry {
        step: "schedule:loops_apart",
        option: "loops_apart",
        kind: RetryKind::LoopsApart,
        did: "scheduled each `for` loop one iteration at a time instead (its index outermost, \
              isl's scheduler on its body within one iteration: no schedule across iterations; \
              `--isl-option loops_apart=1` goes there directly)"
            .into(),
        without: "the loops apart",
        changed: "the loops one iteration at a time".into(),
    }
}

/// After isl's scheduler ran past its time budget: the first of `retries` (with a note),
/// then, if that runs out too, the next; none left: no schedule (program order follows).
/// Where the first finds a schedule, the next runs too, and its schedule is taken instead
/// if it runs more of the program under parallel loops ([`parallel_weight`]): with bounded
/// constant terms, isl may still fuse whole passes into one sequential loop (PolyBench's
/// deriche: its row and column passes along one loop, `-i` for the rows and `j` for the
/// columns, none parallel), where the components scheduled apart are each parallel.
fn retry_after_timeout(
    ctx: &Ctx,
    scop: &Scop,
    deps: &Deps,
    limits: Limits,
    retries: &[Retry],
) -> miette::Result<IslRun> {
    let ms = limits.time.as_millis();
    let Some((r, rest)) = retries.split_first() else {
        return Ok(IslRun::OutOfTime);
    };
    Ok(match run_retry(ctx, scop, deps, limits, r)? {
        IslRun::Schedule(s, note, _) => {
            let mut chosen = (s, note, r, None);
            if let Some(next) = rest.first() {
                if let IslRun::Schedule(t, t_note, _) = run_retry(ctx, scop, deps, limits, next)? {
                    let (first, second) = (
                        parallel_weight(scop, &chosen.0)?,
                        parallel_weight(scop, &t)?,
                    );
                    if second > first {
                        let why = format!(
                            "; with {} instead, less of the program ran under parallel loops",
                            r.changed
                        );
                        chosen = (t, t_note, next, Some(why));
                    }
                }
            }
            let (s, note, r, why) = chosen;
            IslRun::Schedule(
                s,
                Some(
                    format!(
                        "note: isl's scheduler ran past its time budget ({ms} ms); polyc {}{}; \
                         raise the budget with `--isl-option time_budget_ms=N` or \
                         `--compile-budget`",
                        r.did,
                        why.unwrap_or_default()
                    ) + &note.map(|n| format!("\n{n}")).unwrap_or_default(),
                ),
                Some(r.option),
            )
        }
        IslRun::OutOfTime if !rest.is_empty() => {
            retry_after_timeout(ctx, scop, deps, limits, rest)?
        }
        IslRun::OutOfTime => IslRun::NoSchedule(format!(
            "it ran past its time budget of {ms} ms, with and without {}",
            r.without
        )),
        other => other,
    })
}

/// One run of isl's scheduler with the retry's option set (and restored afterwards).
fn run_retry(
    ctx: &Ctx,
    scop: &Scop,
    deps: &Deps,
    limits: Limits,
    r: &Retry,
) -> miette::Result<IslRun> {
    let _s = crate::substeps::span(r.step);
    let RetryKind::Option(get, set, value) = r.kind else {
        return schedule_loops_apart(ctx, scop, deps, limits);
    };
    let old = get(&ctx.isl).isl(&format!("reading isl option {}", r.option))?;
    set(&ctx.isl, value).isl(&format!("setting isl option {}", r.option))?;
    let run = schedule_deps(ctx, scop, deps, limits);
    set(&ctx.isl, old).isl(&format!("restoring isl option {}", r.option))?;
    run
}

/// The loops-apart schedule ([`crate::sched_loops`]): with symbolic sizes, first with
/// every size at [`LARGE_SIZE`] (kept when valid for every size), else in the real
/// context. Its note counts the parts that kept program order.
fn schedule_loops_apart(
    ctx: &Ctx,
    scop: &Scop,
    deps: &Deps,
    limits: Limits,
) -> miette::Result<IslRun> {
    if !scop.symbolic.is_empty() {
        if let Some(large) = large_context(ctx, scop)? {
            let (s, in_order) = crate::sched_loops::loops_apart(ctx, scop, deps, &large, limits)?;
            if covers(scop, &s)? && respects(deps, &s)? && flags_hold(ctx, scop, deps, &s)? {
                return Ok(loops_apart_run(s, in_order));
            }
        }
    }
    let context = scop.context.copy().isl("copying the context")?;
    let (s, in_order) = crate::sched_loops::loops_apart(ctx, scop, deps, &context, limits)?;
    if !(covers(scop, &s)? && respects(deps, &s)?) {
        return Err(miette::miette!(
            help = "this is a bug in polyc; `--isl-option loops_apart=0` avoids it",
            "the schedule of the loops one iteration at a time violates a dependence"
        ));
    }
    Ok(loops_apart_run(s, in_order))
}

/// The loops-apart schedule `s` as a run, with a note when `in_order` parts of it kept
/// program order.
fn loops_apart_run(s: Schedule, in_order: usize) -> IslRun {
    let note = (in_order > 0).then(|| {
        format!(
            "note: with the loops apart, isl's scheduler found no schedule in time for \
             {in_order} part(s) of the program; they run in program order"
        )
    });
    IslRun::Schedule(s, note, None)
}

/// isl's scheduler on the dependences as [`Deps::validity`] gives them, then, if isl
/// cannot carry them, split by program order.
///
/// Why isl may fail on valid programs: isl's scheduler works on the rational relaxation of
/// each dependence polyhedron (Farkas), and a dependence can only be carried by an affine
/// schedule if no rational point of its polyhedron has distance zero. Coalescing (in the
/// dependence analysis) keeps the integer points of a relation but not its rational ones.
/// With two or more loops of extent 2 (a 2 × 2 kernel window, `KH=KW=2`; group norm's
/// `D=H=W=2` reductions), the pieces of a reduction's "every later iteration" relation
/// over a box of 0/1 coordinates coalesce into one polyhedron with skewed faces whose
/// rational relaxation contains the diagonal (the convolution's `kh = kh' = kw = kw' =
/// 1/2` with `ci' = ci`): isl then reports "unable to carry dependences", at any size of
/// the other loops (`CI=16, CO=16, H=W=34, KH=KW=2` too), while program order (which
/// needs no Farkas) is valid. Split by the loop that carries them in program order,
/// each piece states that distance (`t_k(y) ≥ t_k(x) + 1` with the outer ones equal)
/// as a constraint that its rational points keep, so program order itself carries every
/// piece, and isl finds a schedule again.
fn schedule_deps(ctx: &Ctx, scop: &Scop, deps: &Deps, limits: Limits) -> miette::Result<IslRun> {
    let budget = limits.operations;
    let validity = deps.validity()?;
    let why = match schedule_validity(ctx, scop, deps, &validity, limits)? {
        Computed::Schedule(s) => return Ok(IslRun::Schedule(s, None, None)),
        Computed::OutOfTime => return Ok(IslRun::OutOfTime),
        Computed::OutOfBudget => return Err(out_of_budget(scop, budget)),
        Computed::NoSchedule(why) => why,
    };
    let Some(split) = split_by_program_order(scop, &validity)? else {
        return Ok(IslRun::NoSchedule(why));
    };
    Ok(match schedule_validity(ctx, scop, deps, &split, limits)? {
        Computed::Schedule(s) => IslRun::Schedule(
            s,
            Some(format!(
                "note: isl's scheduler could not carry the dependences as merged by the \
                 dependence analysis ({why}); polyc split them by the loop that carries \
                 each in program order, and isl scheduled them"
            )),
            None,
        ),
        Computed::OutOfBudget => return Err(out_of_budget(scop, budget)),
        Computed::OutOfTime => IslRun::OutOfTime,
        Computed::NoSchedule(_) => IslRun::NoSchedule(why),
    })
}

/// One schedule for `validity` (validity = proximity = coincidence): with symbolic sizes,
/// first at [`LARGE_SIZE`] (kept when valid for every size), else in the real context.
fn schedule_validity(
    ctx: &Ctx,
    scop: &Scop,
    deps: &Deps,
    validity: &UnionMap,
    limits: Limits,
) -> miette::Result<Computed> {
    // With symbolic sizes, isl's proximity cost counts a dependence distance bounded by a
    // size (GEMM's `k < K` between the initialisation and the update) as a cost in that
    // size, and it then splits bands that it fuses at any bound size. Schedule for large
    // sizes first; keep that schedule when it is valid for every size.
    if limits.large_first && !scop.symbolic.is_empty() {
        if let Some(large) = large_context(ctx, scop)? {
            let first = compute(ctx, scop, validity, large, limits)?;
            if let Computed::OutOfTime = first {
                return Ok(first);
            }
            if let Computed::Schedule(s) = first {
                if covers(scop, &s)? && respects(deps, &s)? && flags_hold(ctx, scop, deps, &s)? {
                    return Ok(Computed::Schedule(s));
                }
            }
        }
    }
    let context = scop.context.copy().isl("copying the context")?;
    compute(ctx, scop, validity, context, limits)
}

/// `validity` as the union of its parts carried at each level of program order (the
/// statement's position, then its iterators, outermost first; see [`program_order`]),
/// each a union of its own basic relations, or `None` when some dependence does not go
/// forward in program order (then the split would lose it). Each part states its
/// distance at its level as a constraint, so its rational points keep it (see
/// `schedule_deps`): schedulers that reason on rational points (isl's, and the ILP
/// scheduler through Farkas) can carry every part, where they may not carry the relation
/// the dependence analysis coalesced.
pub fn split_by_program_order(
    scop: &Scop,
    validity: &UnionMap,
) -> miette::Result<Option<UnionMap>> {
    let times = scop.order_vectors();
    let depth = times.iter().map(Vec::len).max().unwrap_or(0);
    let mut parts = Vec::with_capacity(scop.stmt_names.len());
    for ((stmt, names), mut time) in scop.stmt_names.iter().zip(&scop.iter_names).zip(times) {
        time.resize(depth, "0".into());
        parts.push(format!(
            "{stmt}[{}] -> [{}]",
            names.join(", "),
            time.join(", ")
        ));
    }
    if parts.is_empty() {
        return Ok(None);
    }
    let text = format!("{}{{ {} }}", scop.param_prefix(), parts.join("; "));
    let order = MultiUnionPwAff::from_union_map(
        UnionMap::read_from_str(&validity.get_ctx(), &text).isl(&format!("reading `{text}`"))?,
    )
    .isl("building the program order")?;
    let split = validity
        .copy()
        .isl("copying dependences")?
        .lex_lt_at_multi_union_pw_aff(order)
        .isl("splitting dependences by program order")?;
    let kept = validity
        .is_subset(&split)
        .isl("comparing split dependences")?;
    Ok(kept.then_some(split))
}

/// The size at least which [`isl_schedule`] first schedules every symbolic size.
pub const LARGE_SIZE: i64 = 1024;

/// The context with every symbolic size equal to [`LARGE_SIZE`], or `None` when that
/// point is outside the real context or leaves a statement without instances that runs
/// for other sizes (a kernel size larger than a bound image size): a schedule for that
/// point would then not schedule the statement at all.
pub(crate) fn large_context(ctx: &Ctx, scop: &Scop) -> miette::Result<Option<Set>> {
    let text = format!(
        "{}{{ : {} }}",
        scop.param_prefix(),
        scop.symbolic
            .iter()
            .map(|s| format!("{s} = {LARGE_SIZE}"))
            .collect::<Vec<_>>()
            .join(" and ")
    );
    let large = Set::read_from_str(&ctx.isl, &text)
        .isl(&format!("reading `{text}`"))?
        .intersect(scop.context.copy().isl("copying the context")?)
        .isl("restricting the large sizes to the context")?;
    if large.is_empty().isl("testing the large sizes")? {
        return Ok(None);
    }
    for d in &scop.stmt_domains {
        let runs = |context: &Set| -> miette::Result<bool> {
            Ok(!d
                .copy()
                .isl("copying a domain")?
                .intersect_params(context.copy().isl("copying a context")?)
                .isl("restricting a domain")?
                .is_empty()
                .isl("testing a domain for emptiness")?)
        };
        if runs(&scop.context)? && !runs(&large)? {
            return Ok(None);
        }
    }
    Ok(Some(large))
}

/// Whether `s` schedules every instance of the domain that the context lets run.
pub(crate) fn covers(scop: &Scop, s: &Schedule) -> miette::Result<bool> {
    let covered = s
        .get_map()
        .isl("getting the schedule map")?
        .intersect_domain(s.get_domain().isl("getting the schedule domain")?)
        .isl("restricting the schedule map")?
        .domain()
        .isl("getting the scheduled instances")?;
    scop.domain
        .copy()
        .isl("copying the domain")?
        .intersect_params(scop.context.copy().isl("copying the context")?)
        .isl("restricting the domain")?
        .is_subset(&covered)
        .isl("comparing domains")
}

/// Whether every band member of `s` that is marked coincident carries no dependence, and
/// every band marked permutable has non-negative distances, for every size of the real
/// context (the flags of a schedule computed in a smaller context).
pub(crate) fn flags_hold(
    ctx: &Ctx,
    scop: &Scop,
    deps: &Deps,
    s: &Schedule,
) -> miette::Result<bool> {
    let mut bands = Vec::new();
    collect_band_flags(s.get_root().isl("reading the schedule root")?, &mut bands)?;
    let validity = deps
        .validity()?
        .intersect_params(scop.context.copy().isl("copying the context")?)
        .isl("restricting dependences")?;
    for (prefix, partial, coincident, permutable) in bands {
        let (can_permute, can_coincide) =
            band_flags(ctx, scop, &validity, &prefix, &partial, coincident.len())?;
        if permutable && !can_permute {
            return Ok(false);
        }
        if coincident
            .iter()
            .zip(&can_coincide)
            .any(|(&c, &ok)| c && !ok)
        {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The flags the dependences of `validity` allow a band of `n` members (`partial`, below
/// `prefix`, both union maps from the instances): whether it is permutable (every distance
/// non-negative), and per member whether it is coincident (carries no dependence).
pub fn band_flags(
    ctx: &Ctx,
    scop: &Scop,
    validity: &UnionMap,
    prefix: &UnionMap,
    partial: &UnionMap,
    n: usize,
) -> miette::Result<(bool, Vec<bool>)> {
    let dist = band_distances(validity, prefix, partial)?;
    if n == 0 || dist.is_empty().isl("testing band distances")? {
        return Ok((true, vec![true; n]));
    }
    let dims: Vec<String> = (0..n).map(|k| format!("__polyc_d{k}")).collect();
    let nonneg: Vec<String> = dims.iter().map(|d| format!("{d} >= 0")).collect();
    let text = format!(
        "{}{{ [{}] : {} }}",
        scop.param_prefix(),
        dims.join(", "),
        nonneg.join(" and ")
    );
    let cone = UnionSet::read_from_str(&ctx.isl, &text).isl(&format!("reading `{text}`"))?;
    let permutable = dist
        .copy()
        .isl("copying distances")?
        .is_subset(&cone)
        .isl("testing permutability")?;
    let mut coincident = Vec::with_capacity(n);
    for k in 0..n {
        coincident.push(!carried_at(ctx, scop, &dist, k, n)?);
    }
    Ok((permutable, coincident))
}

/// The distances, in a band's members, of the dependences of `validity` between instances
/// that the band's prefix schedule does not separate (`prefix` and `partial` as union
/// maps from the instances).
pub(crate) fn band_distances(
    validity: &UnionMap,
    prefix: &UnionMap,
    partial: &UnionMap,
) -> miette::Result<UnionSet> {
    let same_prefix = prefix
        .copy()
        .isl("copying a prefix schedule")?
        .apply_range(
            prefix
                .copy()
                .isl("copying a prefix schedule")?
                .reverse()
                .isl("reversing a prefix schedule")?,
        )
        .isl("pairing instances of a prefix")?;
    let inner = validity
        .copy()
        .isl("copying dependences")?
        .intersect(same_prefix)
        .isl("restricting dependences to a band")?;
    partial
        .copy()
        .isl("copying a band schedule")?
        .reverse()
        .isl("reversing a band schedule")?
        .apply_range(inner)
        .isl("mapping dependences to a band")?
        .apply_range(partial.copy().isl("copying a band schedule")?)
        .isl("mapping dependences to a band")?
        .deltas()
        .isl("computing band distances")
}

/// Whether some distance of `dist` (in a band of `n` members) is zero in the members
/// before `k` and not zero in member `k`: member `k` carries a dependence.
pub(crate) fn carried_at(
    ctx: &Ctx,
    scop: &Scop,
    dist: &UnionSet,
    k: usize,
    n: usize,
) -> miette::Result<bool> {
    let dims: Vec<String> = (0..n).map(|d| format!("__polyc_d{d}")).collect();
    let mut cons: Vec<String> = dims[..k].iter().map(|d| format!("{d} = 0")).collect();
    cons.push(format!("({0} < 0 or {0} > 0)", dims[k]));
    let text = format!(
        "{}{{ [{}] : {} }}",
        scop.param_prefix(),
        dims.join(", "),
        cons.join(" and ")
    );
    let at = UnionSet::read_from_str(&ctx.isl, &text).isl(&format!("reading `{text}`"))?;
    let carried = dist
        .copy()
        .isl("copying distances")?
        .intersect(at)
        .isl("testing a member")?;
    Ok(!carried.is_empty().isl("testing a member")?)
}

/// The default budget of one run of isl's scheduler, in isl's basic steps (mostly simplex
/// pivots). isl's scheduling problem can grow without bound: with symbolic sizes next to
/// large bound ones its exact integer arithmetic blows up (`conv_chain_temp.tc --param
/// H=2048,W=2048` ran for hours), and the budget turns that into an error. The runs of the
/// test suites and the examples take at most about 105 000 steps, a twentieth of it.
/// `--isl-option max_operations=N` changes it.
pub const SCHED_MAX_OPERATIONS: u64 = 2_000_000;

/// The largest constant term isl's scheduler may use (`max_constant_term`) when it runs
/// again after its time budget ran out (unless the user set one), as Polly does always
/// (its `-polly-opt-max-constant-term` is 20): unbounded constant terms make isl's
/// problems huge for long chains of reductions (40 chained matrix-vector products: 27 s,
/// and 0.4 s with the bound). It is not the default: some examples' schedules use larger
/// constants (`conv_chain_temp.tc` with symbolic kernel sizes: 63).
pub const SCHED_MAX_CONSTANT_TERM: i32 = 20;

/// The default wall-clock budget of one run of isl's scheduler (`time_budget_ms`): a
/// scheduling problem that takes longer (40 chained reductions at N = 1024: 2.9 s on a
/// 2-core machine) is scheduled again with bounded constant terms
/// ([`SCHED_MAX_CONSTANT_TERM`]), and if that runs out too, one strongly connected
/// component at a time. Every run of the tests, examples and PolyBench at LARGE sizes that
/// isl finishes at all (at scaled sizes) takes under 0.4 s, except ludcmp's on the GPU
/// target (2 s, at N = 40; see [`SCHED_TIMEOUT_MIN_OPERATIONS`]); adi's and deriche's
/// first runs never finish.
pub const SCHED_TIME_BUDGET_MS: u64 = 1_000;

/// Past its time budget, isl's scheduler still runs up to this many operations (until the
/// hard stop, [`SCHED_HARD_STOP_MIN_MS`]): the largest run of the tests and examples takes
/// about 105 000, so whether a schedule falls back does not depend on how busy the machine
/// is for them, unless a run is slower than budget and hard stop together (ludcmp's on the
/// GPU target at N = 40 takes 2 s, the closest).
pub const SCHED_TIMEOUT_MIN_OPERATIONS: u64 = 200_000;

/// One isl schedule computation of the whole program with the given context, within
/// `limits`.
pub(crate) fn compute(
    ctx: &Ctx,
    scop: &Scop,
    validity: &UnionMap,
    context: Set,
    limits: Limits,
) -> miette::Result<Computed> {
    let domain = scop.domain.copy().isl("copying the domain")?;
    compute_on(ctx, domain, validity, context, limits)
}

/// The error for a run of isl's scheduler that used up its `budget` of operations.
fn out_of_budget(scop: &Scop, budget: u64) -> miette::Report {
    let bind = if scop.symbolic.is_empty() {
        String::new()
    } else {
        format!(
            "bind more sizes with --param (symbolic here: {}), ",
            scop.symbolic.join(", ")
        )
    };
    miette::miette!(
        help = format!(
            "{bind}choose another scheduler (`--scheduler ilp` or `--scheduler initial`), \
             or raise the budget with `--isl-option max_operations=N`"
        ),
        "schedule: isl's scheduler stopped after {budget} operations, its budget: the \
         scheduling problem is too hard for isl here"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn scheduler_names() {
        assert_eq!(
            "initial".parse::<SchedulerKind>().unwrap(),
            SchedulerKind::Initial
        );
        assert_eq!("isl".parse::<SchedulerKind>().unwrap(), SchedulerKind::Isl);
        assert_eq!("ilp".parse::<SchedulerKind>().unwrap(), SchedulerKind::Ilp);
        let e = "pluto".parse::<SchedulerKind>().unwrap_err();
        assert_eq!(e.to_string(), "unknown scheduler `pluto`");
        assert_eq!(
            e.help().map(|h| h.to_string()).as_deref(),
            Some("valid schedulers: initial, isl, ilp")
        );
    }

    #[test]
    fn parse_options() {
        let o = IslSchedOptions::parse(&s(&[
            "serialize_sccs=1",
            "outer_coincidence=true",
            "maximize_coincidence=0",
            "whole_component=false",
            "max_constant_term=-1",
            "max_coefficient=4",
            "treat_coalescing=1",
            "maximize_band_depth=1",
            "separate_components=0",
            "carry_self_first=1",
            "split_scaled=0",
            "algorithm=feautrier",
            "max_operations=500",
            "time_budget_ms=250",
            "scale_sizes=0",
            "scale_probe=0",
            "scale_parametric=0",
            "aligned=0",
            "phases=0",
            "contiguous=0",
            "loops_apart=1",
        ]))
        .unwrap();
        assert_eq!(
            o,
            IslSchedOptions {
                serialize_sccs: Some(true),
                outer_coincidence: Some(true),
                maximize_coincidence: Some(false),
                whole_component: Some(false),
                max_constant_term: Some(-1),
                max_coefficient: Some(4),
                treat_coalescing: Some(true),
                maximize_band_depth: Some(true),
                separate_components: Some(false),
                carry_self_first: Some(true),
                split_scaled: Some(false),
                algorithm: Some(IslAlgorithm::Feautrier),
                max_operations: Some(500),
                time_budget_ms: Some(250),
                scale_sizes: Some(false),
                scale_probe: Some(false),
                scale_parametric: Some(false),
                aligned: Some(false),
                phases: Some(false),
                contiguous: Some(false),
                loops_apart: Some(true),
                large_first: None,
            }
        );
        assert_eq!(o.settings().len(), 12);
        assert_eq!(
            IslSchedOptions::parse(&[]).unwrap(),
            IslSchedOptions::default()
        );
    }

    fn err(v: &[&str]) -> (String, String) {
        let e = IslSchedOptions::parse(&s(v)).unwrap_err();
        (
            e.to_string(),
            e.help().map(|h| h.to_string()).unwrap_or_default(),
        )
    }

    #[test]
    fn option_errors() {
        assert_eq!(
            err(&["fuse=1"]),
            (
                "unknown isl scheduler option `fuse`".into(),
                "valid names: serialize_sccs, outer_coincidence, maximize_coincidence, \
                 whole_component, max_constant_term, max_coefficient, treat_coalescing, \
                 maximize_band_depth, separate_components, carry_self_first, split_scaled, \
                 algorithm, max_operations, time_budget_ms, scale_sizes, scale_probe, scale_parametric, aligned, phases, contiguous, \
                 loops_apart"
                    .into()
            )
        );
        assert_eq!(
            err(&["serialize_sccs=yes"]),
            (
                "invalid value `yes` for isl scheduler option `serialize_sccs`".into(),
                "`serialize_sccs` accepts 0, 1, true or false".into()
            )
        );
        assert_eq!(
            err(&["max_coefficient=-2"]),
            (
                "invalid value `-2` for isl scheduler option `max_coefficient`".into(),
                "`max_coefficient` accepts an integer >= -1 (-1 = unlimited)".into()
            )
        );
        assert_eq!(
            err(&["max_operations=-1"]),
            (
                "invalid value `-1` for isl scheduler option `max_operations`".into(),
                "`max_operations` accepts a positive integer".into()
            )
        );
        assert_eq!(
            err(&["algorithm=pluto"]),
            (
                "invalid value `pluto` for isl scheduler option `algorithm`".into(),
                "`algorithm` accepts isl or feautrier".into()
            )
        );
        assert_eq!(
            err(&["serialize_sccs"]).0,
            "isl scheduler option `serialize_sccs` has no value"
        );
        assert_eq!(
            err(&["nonneg_var_coefficient=1"]),
            (
                "isl scheduler option `nonneg_var_coefficient` exists only in AKG's fork of \
                 isl, not in upstream isl 0.27 that polyc uses"
                    .into(),
                "non-negative variable coefficients will come with `--scheduler ilp` (not \
                 implemented yet)"
                    .into()
            )
        );
    }
}
