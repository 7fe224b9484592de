//! isl's scheduler at scaled-down sizes, for programs whose sizes are all bound, and for
//! the instance at [`LARGE_SIZE`] of programs with symbolic sizes.
//!
//! isl's scheduler solves integer programs whose constants grow with the bound sizes (the
//! dependence polyhedra's vertices). Its exact arithmetic and cutting planes then take time
//! that grows with the sizes themselves: PolyBench's 2mm takes 140 ms at sizes near 100 and
//! 6.8 s at its LARGE sizes (800 to 1200), gemver 87 ms at N = 64 and 20 s at N = 2000,
//! while the schedule isl finds is the same up to constants such as `N - 1`.
//!
//! So polyc schedules the same program at small sizes and carries the result over:
//! 1. the *base* instance gives every distinct bound size above [`SCALE_ABOVE`] a small
//!    value (in the same order: [`SCALE_BASE`], then [`SCALE_SPACING`] apart, above every
//!    size that stays as it is);
//! 2. one more instance per distinct scaled value moves that value (every size that has
//!    it) by [`SCALE_STEP`];
//! 3. the schedule texts of all instances must agree except in their integers; each integer
//!    is then an affine function of the scaled values with integer slopes, read off the
//!    instances and evaluated at the real sizes (`31` at N = 32 and `39` at N = 40 is
//!    `1999` at N = 2000);
//! 4. the schedule so built is kept only if it schedules every instance of the real model,
//!    respects every dependence of the real model, and its coincident and permutable flags
//!    hold there. Otherwise (and whenever the instances disagree) polyc schedules at the
//!    real sizes, as before.
//!
//! Not every program is slow at large sizes (a stencil's problem costs about the same at
//! any size). So polyc first schedules the real sizes for [`PROBE_MIN`], and keeps isl's
//! own result when it comes in time; only when it does not are the instances scheduled and
//! the result carried over. (A second probe, after the base instance and for as long as
//! it took, never succeeded on PolyBench at LARGE sizes, on either target, and cost
//! heat-3d 0.28 s and ludcmp up to 1 s; programs whose problem does not grow with the
//! sizes, such as chains of element-wise statements, mostly need no search at all, see
//! [`crate::sched_aligned`].) `--isl-option scale_probe=0` always carries it over, and
//! `scale_sizes=0` schedules the real sizes only.
//!
//! The instances are built and scheduled on worker threads, each on its own isl context
//! ([`crate::sched_workers`]), while the compiling thread probes the real sizes and then
//! joins them; the result is the one of running them one after another.
//!
//! Where every dependence is one-to-one (stencils), a worker first schedules the program
//! with the scaled sizes as parameters, and that schedule is taken when the probe gives
//! nothing and it holds at the real sizes ([`crate::sched_parametric`]).
//!
//! Where isl finds no schedule at the base sizes or at another instance's (or runs past
//! its time budget with every retry), the real sizes get the program-order schedule, with
//! a note that says so: their problem is larger still.
//!
//! **Symbolic sizes.** [`crate::sched`] schedules a program with symbolic sizes with each
//! at [`LARGE_SIZE`] first, and keeps that schedule where it holds for every size. That
//! problem is scaled the same way, with the sizes kept symbolic in each instance and fixed
//! by its context ([`Job::At`]): the carried-over schedule is checked for every size, and
//! where it fails only that check ([`Scaled::NotForEverySize`]), isl's own run at
//! [`LARGE_SIZE`] is skipped. No parametric model is tried, and where an instance finds
//! no schedule in [`crate::sched_workers::SYMBOLIC_INSTANCE_TIME`], the program is
//! scheduled as it was without instances.

use crate::deps::{respects, Deps};
use crate::isl::{Ctx, IslResultExt};
use crate::sched::{
    covers, flags_hold, initial_schedule, large_context, run_isl, IslRun, IslSchedOptions,
    IslScheduled, LARGE_SIZE,
};
use crate::sched_parametric::{instantiate, one_to_one};
pub use crate::sched_workers::BuildInstance;
use crate::sched_workers::{run_all, InstanceRun, Job, Wait};
use crate::scop::Scop;
use isl_rs::Schedule;

/// Bound sizes above this are scaled down (smaller ones are cheap for isl already).
pub const SCALE_ABOVE: i64 = 64;
/// The smallest value a scaled size gets in the base instance.
pub const SCALE_BASE: i64 = 32;
/// The distance between consecutive distinct scaled values in the base instance.
pub const SCALE_SPACING: i64 = 16;
/// How far each further instance moves one scaled value.
pub const SCALE_STEP: i64 = 8;
/// The real sizes are first scheduled for this long (every probe of PolyBench at LARGE
/// sizes that succeeds takes under 110 ms; one that fails is time lost).
pub const PROBE_MIN: std::time::Duration = std::time::Duration::from_millis(150);

/// Which sizes are scaled, and to what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScalePlan {
    /// Every size's value in the base instance.
    pub base: Vec<i64>,
    /// The real values.
    pub real: Vec<i64>,
    /// The distinct scaled real values, ascending, each with the sizes that have it.
    pub groups: Vec<(i64, Vec<usize>)>,
}

impl ScalePlan {
    /// The plan for `values`, or `None` when a size is symbolic or none is above
    /// [`SCALE_ABOVE`].
    pub fn new(values: &[Option<i64>]) -> Option<ScalePlan> {
        let real: Vec<i64> = values.iter().copied().collect::<Option<Vec<_>>>()?;
        let mut distinct: Vec<i64> = real.iter().copied().filter(|v| *v > SCALE_ABOVE).collect();
        distinct.sort_unstable();
        distinct.dedup();
        if distinct.is_empty() {
            return None;
        }
        let kept_max = real.iter().copied().filter(|v| *v <= SCALE_ABOVE).max();
        let first = SCALE_BASE.max(kept_max.map_or(0, |m| m + 1));
        let groups: Vec<(i64, Vec<usize>)> = distinct
            .iter()
            .map(|d| (*d, (0..real.len()).filter(|k| real[*k] == *d).collect()))
            .collect();
        let mut base = real.clone();
        for (rank, (_, members)) in groups.iter().enumerate() {
            for k in members {
                base[*k] = first + SCALE_SPACING * rank as i64;
            }
        }
        Some(ScalePlan { base, real, groups })
    }

    /// The sizes of the base instance, then of each group's moved instance.
    pub fn instances(&self) -> Vec<Vec<Option<i64>>> {
        let mut all = vec![self.base.iter().map(|v| Some(*v)).collect::<Vec<_>>()];
        for (_, members) in &self.groups {
            let mut moved: Vec<Option<i64>> = self.base.iter().map(|v| Some(*v)).collect();
            for k in members {
                moved[*k] = Some(self.base[*k] + SCALE_STEP);
            }
            all.push(moved);
        }
        all
    }

    /// The sizes of the parametric model ([`crate::sched_parametric`]): the real values,
    /// with every scaled size symbolic (`None`).
    pub fn parametric_sizes(&self) -> Vec<Option<i64>> {
        let mut sizes: Vec<Option<i64>> = self.real.iter().map(|v| Some(*v)).collect();
        for (_, members) in &self.groups {
            for k in members {
                sizes[*k] = None;
            }
        }
        sizes
    }

    /// The job that schedules the program with the scaled sizes symbolic, each at least
    /// its base value ([`crate::sched_parametric`]).
    pub fn parametric_job(&self) -> Job {
        let sizes = self.parametric_sizes();
        let at_least = (0..sizes.len())
            .filter(|k| sizes[*k].is_none())
            .map(|k| self.base[k])
            .collect();
        Job::Parametric(sizes, at_least)
    }

    /// `base=…` for notes: the scaled sizes' values in the base instance.
    fn describe(&self, names: &[String]) -> String {
        let mut parts = Vec::new();
        for (_, members) in &self.groups {
            for k in members {
                let name = names.get(*k).map_or("?", String::as_str);
                parts.push(format!("{name}={}", self.base[*k]));
            }
        }
        parts.join(",")
    }
}

/// What [`isl_schedule_scaled`] gave.
pub enum Scaled {
    /// A schedule: carried over, the probe's, or program order where the instances had
    /// none.
    Kept(IslScheduled),
    /// Not applicable, or the instances disagree or gave nothing: schedule `scop` itself.
    NotTaken,
    /// Symbolic sizes: the instances agree, but their schedule carried over to
    /// [`LARGE_SIZE`] does not hold for every size. isl's own schedule at that size is the
    /// same up to its integers, so it is not tried: `scop` is scheduled in its real context
    /// directly ([`IslSchedOptions::large_first`] off).
    NotForEverySize,
}

impl Scaled {
    /// The schedule kept, or else the options with which to schedule `scop` itself.
    pub fn kept_or(self, opts: &IslSchedOptions) -> Result<IslScheduled, IslSchedOptions> {
        match self {
            Scaled::Kept(s) => Ok(s),
            Scaled::NotTaken => Err(opts.clone()),
            Scaled::NotForEverySize => Err(IslSchedOptions {
                large_first: Some(false),
                ..opts.clone()
            }),
        }
    }
}

/// isl's scheduler at scaled sizes (see the module's doc), carried over to `scop`.
/// [`Scaled::NotTaken`]: not applicable, or the instances disagree, or the result fails at
/// the real sizes; schedule at the real sizes then ([`Scaled::kept_or`] says with which
/// options). `names` are the sizes' names, for the notes.
///
/// The instances run on worker threads, each on its own isl context
/// ([`crate::sched_workers`]), while the real sizes are probed on this one.
pub fn isl_schedule_scaled(
    ctx: &Ctx,
    scop: &Scop,
    deps: &Deps,
    names: &[String],
    build: &BuildInstance,
    opts: &IslSchedOptions,
) -> miette::Result<Scaled> {
    if opts.scale_sizes == Some(false) {
        return Ok(Scaled::NotTaken);
    }
    // Symbolic sizes are scheduled at [`LARGE_SIZE`] first ([`crate::sched`]): scale that
    // instance instead, and keep the result only where it holds for every size.
    let symbolic = scop.param_values.iter().any(Option::is_none);
    if symbolic && (opts.large_first == Some(false) || large_context(ctx, scop)?.is_none()) {
        return Ok(Scaled::NotTaken);
    }
    let values: Vec<Option<i64>> = scop
        .param_values
        .iter()
        .map(|v| Some(v.unwrap_or(LARGE_SIZE)))
        .collect();
    let Some(plan) = ScalePlan::new(&values) else {
        return Ok(Scaled::NotTaken);
    };
    let _s = crate::substeps::span("schedule:isl_scaled");
    let instances = plan.instances();
    // Where every dependence is one-to-one, a worker schedules the program with the scaled
    // sizes as parameters first ([`crate::sched_parametric`]).
    let parametric =
        !symbolic && opts.scale_parametric != Some(false) && one_to_one(&deps.validity()?)?;
    let mut jobs = Vec::with_capacity(instances.len() + 1);
    if parametric {
        jobs.push(plan.parametric_job());
    }
    let skip = jobs.len();
    // A symbolic size stays symbolic in the instances, in a context that fixes its value.
    let instance_job = |sizes: &Vec<Option<i64>>| {
        if !symbolic {
            return Job::Sizes(sizes.clone());
        }
        let fixed = (0..sizes.len())
            .filter(|k| scop.param_values[*k].is_none())
            .filter_map(|k| Some((names.get(k)?.clone(), sizes[k]?)))
            .collect();
        let bound = (0..sizes.len())
            .map(|k| scop.param_values[k].and(sizes[k]))
            .collect();
        Job::At(bound, fixed)
    };
    let instance_jobs: Vec<Job> = instances.iter().map(instance_job).collect();
    jobs.extend(instance_jobs.iter().cloned());
    // The real sizes are probed on this thread while workers schedule the others; where
    // that gives nothing, the parametric schedule is taken if it holds at the real sizes.
    // (With symbolic sizes, the probe is isl's run at `LARGE_SIZE`, then in the real
    // context where that schedule does not hold for every size.)
    let probing = opts.scale_probe != Some(false);
    let mut probed: miette::Result<Option<IslScheduled>> = Ok(None);
    let mut probe_first = |wait: &Wait| {
        if probing {
            probed = probe(ctx, scop, deps, opts, PROBE_MIN);
        }
        if matches!(probed, Ok(None)) && parametric {
            probed = match wait(0) {
                Ok(InstanceRun::Schedule(text, _, _)) => {
                    at_real_sizes(ctx, (scop, deps), (&plan, names), &text)
                }
                _ => Ok(None),
            };
        }
        !matches!(probed, Ok(None))
    };
    let first: Option<&mut dyn FnMut(&Wait) -> bool> =
        (probing || parametric).then_some(&mut probe_first);
    let Some(mut runs) = run_all(build, &jobs, opts, first) else {
        return Ok(probed?.map_or(Scaled::NotTaken, Scaled::Kept));
    };
    let mut runs = runs.split_off(skip);
    let (text, note, retried) = match runs.remove(0)? {
        InstanceRun::Schedule(text, note, retried) => (text, note, retried),
        InstanceRun::Unbuilt => return Ok(Scaled::NotTaken),
        InstanceRun::NoSchedule(_) if symbolic => return Ok(Scaled::NotTaken),
        InstanceRun::NoSchedule(why) => {
            return Ok(Scaled::Kept(program_order(scop, deps, &plan, names, &why)?));
        }
    };
    let texts = match other_texts(build, (&instance_jobs[1..], runs), opts, retried)? {
        Others::Texts(texts) => texts,
        Others::Unbuilt => return Ok(Scaled::NotTaken),
        Others::Failed(_) if symbolic => return Ok(Scaled::NotTaken),
        // As for the base instance (the real sizes' problem is larger still).
        Others::Failed(why) => {
            return Ok(Scaled::Kept(program_order(scop, deps, &plan, names, &why)?));
        }
    };
    let texts: Vec<String> = std::iter::once(text).chain(texts).collect();
    let Some(text) = extrapolate(&texts, &plan) else {
        return Ok(Scaled::NotTaken);
    };
    let Some(schedule) = valid_at_real(ctx, scop, deps, &text)? else {
        return Ok(if symbolic {
            Scaled::NotForEverySize
        } else {
            Scaled::NotTaken
        });
    };
    // Recorded for `--timings` (and the tests): the carried-over schedule was kept.
    crate::substeps::timed("schedule:scaled_carried", || ());
    Ok(Scaled::Kept(IslScheduled {
        schedule,
        notes: note.into_iter().collect(),
        fell_back: false,
    }))
}

/// What the instances after the base one gave.
enum Others {
    /// Their schedule texts.
    Texts(Vec<String>),
    /// One could not be built (the real sizes are scheduled then).
    Unbuilt,
    /// isl found no schedule for one (or ran past its time budget with every retry), and
    /// why.
    Failed(String),
}

/// The schedule texts of the instances after the base one, as scheduled with the option
/// `retried` that the base instance needed: `runs` ran with `opts`, and those that did
/// not end with the same option run again with it.
fn other_texts(
    build: &BuildInstance,
    (instances, runs): (&[Job], Vec<miette::Result<InstanceRun>>),
    opts: &IslSchedOptions,
    retried: Option<&'static str>,
) -> miette::Result<Others> {
    let mut texts = Vec::with_capacity(runs.len());
    let mut again = Vec::new();
    for (k, run) in runs.into_iter().enumerate() {
        match run? {
            InstanceRun::Schedule(text, _, r) if r == retried => texts.push(Some(text)),
            _ if retried.is_some() => {
                texts.push(None);
                again.push(k);
            }
            other => return Ok(failed(other)),
        }
    }
    if !again.is_empty() {
        let jobs: Vec<Job> = again.iter().map(|k| instances[*k].clone()).collect();
        let reruns = run_all(build, &jobs, &opts.with_retry(retried), None).unwrap_or_default();
        for (k, run) in again.into_iter().zip(reruns) {
            match run? {
                InstanceRun::Schedule(text, _, _) => texts[k] = Some(text),
                other => return Ok(failed(other)),
            }
        }
    }
    Ok(texts
        .into_iter()
        .collect::<Option<Vec<_>>>()
        .map_or(Others::Unbuilt, Others::Texts))
}

/// What an instance's run that gave no schedule means for the others.
fn failed(run: InstanceRun) -> Others {
    match run {
        InstanceRun::NoSchedule(why) => Others::Failed(why),
        _ => Others::Unbuilt,
    }
}

/// isl's own schedule at the real sizes if it comes within `time` (a probe stops at once
/// when the time is up); `None` otherwise.
fn probe(
    ctx: &Ctx,
    scop: &Scop,
    deps: &Deps,
    opts: &IslSchedOptions,
    time: std::time::Duration,
) -> miette::Result<Option<IslScheduled>> {
    let run = crate::substeps::timed("schedule:scaled_probe", || {
        run_isl(ctx, scop, deps, opts, Some(time))
    })?;
    Ok(match run {
        IslRun::Schedule(schedule, note, _) => Some(IslScheduled {
            schedule,
            notes: note.into_iter().collect(),
            fell_back: false,
        }),
        IslRun::NoSchedule(_) | IslRun::OutOfTime => None,
    })
}

/// The parametric model's schedule `text` ([`crate::sched_parametric`]) at the real
/// sizes, where it is valid there. `names` are the sizes' names.
fn at_real_sizes(
    ctx: &Ctx,
    (scop, deps): (&Scop, &Deps),
    (plan, names): (&ScalePlan, &[String]),
    text: &str,
) -> miette::Result<Option<IslScheduled>> {
    let _s = crate::substeps::span("schedule:parametric_check");
    let sizes = plan.parametric_sizes();
    let scaled: Vec<usize> = (0..sizes.len()).filter(|k| sizes[*k].is_none()).collect();
    let Some(symbolic) = scaled
        .iter()
        .map(|k| names.get(*k).cloned())
        .collect::<Option<Vec<String>>>()
    else {
        return Ok(None);
    };
    let values: Vec<Option<i64>> = scaled.iter().map(|k| Some(plan.real[*k])).collect();
    let Some(real) = instantiate(text, &symbolic, &values) else {
        return Ok(None);
    };
    let schedule = valid_at_real(ctx, scop, deps, &real)?;
    if schedule.is_some() {
        // Recorded for `--timings` (and the tests): the parametric schedule was kept.
        crate::substeps::timed("schedule:parametric_kept", || ());
    }
    Ok(schedule.map(|schedule| IslScheduled {
        schedule,
        notes: Vec::new(),
        fell_back: false,
    }))
}

/// The program-order schedule at the real sizes, where isl found none at the base sizes.
fn program_order(
    scop: &Scop,
    deps: &Deps,
    plan: &ScalePlan,
    names: &[String],
    why: &str,
) -> miette::Result<IslScheduled> {
    Ok(IslScheduled {
        schedule: initial_schedule(scop, deps)?,
        notes: vec![format!(
            "note: isl's scheduler found no schedule at the scaled sizes {} ({why}); polyc \
             uses the program-order schedule instead, as `--scheduler initial` does",
            plan.describe(names)
        )],
        fell_back: true,
    })
}

/// The schedule `text` of `scop`, if it schedules exactly `scop`'s instances, respects
/// every dependence, and its coincident and permutable flags hold.
fn valid_at_real(
    ctx: &Ctx,
    scop: &Scop,
    deps: &Deps,
    text: &str,
) -> miette::Result<Option<Schedule>> {
    let Ok(schedule) = Schedule::read_from_str(&ctx.isl, text) else {
        let _ = ctx.take_error();
        return Ok(None);
    };
    let _s = crate::substeps::span("schedule:scaled_check");
    let domain = schedule.get_domain().isl("getting the schedule domain")?;
    let valid = domain.is_equal(&scop.domain).isl("comparing domains")?
        && covers(scop, &schedule)?
        && respects(deps, &schedule)?
        && flags_hold(ctx, scop, deps, &schedule)?;
    Ok(valid.then_some(schedule))
}

/// A schedule text split at its integers (maximal runs of ASCII digits): the text around
/// them, and their values.
fn split_integers(text: &str) -> Option<(Vec<&str>, Vec<i64>)> {
    let mut rest = Vec::new();
    let mut numbers = Vec::new();
    let bytes = text.as_bytes();
    let (mut start, mut k) = (0, 0);
    while k < bytes.len() {
        if bytes[k].is_ascii_digit() {
            let end = (k..bytes.len())
                .find(|&e| !bytes[e].is_ascii_digit())
                .unwrap_or(bytes.len());
            rest.push(&text[start..k]);
            numbers.push(text[k..end].parse().ok()?);
            start = end;
            k = end;
        } else {
            k += 1;
        }
    }
    rest.push(&text[start..]);
    Some((rest, numbers))
}

/// The schedule text at the real sizes (its domain included): every integer of the base
/// text moved by its slope per scaled group times the group's distance from its base
/// value; `None` when the texts differ other than in integers, or a slope is not an
/// integer.
pub fn extrapolate(texts: &[String], plan: &ScalePlan) -> Option<String> {
    let split: Vec<(Vec<&str>, Vec<i64>)> = texts
        .iter()
        .map(|t| split_integers(t))
        .collect::<Option<_>>()?;
    let (base_rest, base_numbers) = &split[0];
    if split.len() != plan.groups.len() + 1 || split.iter().any(|(r, _)| r != base_rest) {
        return None;
    }
    let mut out = String::new();
    for (k, value) in base_numbers.iter().enumerate() {
        let mut real = *value;
        for (g, (real_value, members)) in plan.groups.iter().enumerate() {
            let moved = split[g + 1].1[k] - value;
            if moved % SCALE_STEP != 0 {
                return None;
            }
            let base_value = plan.base[members[0]];
            real = real.checked_add((moved / SCALE_STEP).checked_mul(real_value - base_value)?)?;
        }
        out.push_str(base_rest[k]);
        if real < 0 {
            // Only a constant that isl printed unsigned can change sign: give up.
            return None;
        }
        out.push_str(&real.to_string());
    }
    out.push_str(base_rest[base_numbers.len()]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_keeps_order_and_small_sizes() {
        let p = ScalePlan::new(&[Some(2000), Some(3), Some(1200), Some(2000)]).unwrap();
        assert_eq!(p.base, vec![48, 3, 32, 48]);
        assert_eq!(p.groups, vec![(1200, vec![2]), (2000, vec![0, 3])]);
        let inst = p.instances();
        assert_eq!(inst.len(), 3);
        assert_eq!(inst[1], vec![Some(48), Some(3), Some(40), Some(48)]);
        assert_eq!(inst[2], vec![Some(56), Some(3), Some(32), Some(56)]);
        // A kept size above the base value pushes the scaled ones above it.
        let q = ScalePlan::new(&[Some(60), Some(500)]).unwrap();
        assert_eq!(q.base, vec![60, 61]);
        assert_eq!(ScalePlan::new(&[Some(64), Some(5)]), None);
        assert_eq!(ScalePlan::new(&[None, Some(500)]), None);
    }

    #[test]
    fn integers_are_carried_to_the_real_sizes() {
        let p = ScalePlan::new(&[Some(1300)]).unwrap();
        let at = |n: i64| {
            format!(
                "{{ domain: \"{{ S_0[i] : 0 <= i <= {} }}\", child: {{ schedule: \"[{{ S_0[i] -> [(2i + {})] }}]\" }} }}",
                n - 1,
                n - 1
            )
        };
        let got = extrapolate(&[at(32), at(40)], &p).unwrap();
        assert_eq!(got, at(1300));
        // Texts that differ other than in integers, or slopes that are not integers.
        let other = at(40).replace("2i", "3i + i");
        assert_eq!(extrapolate(&[at(32), other], &p), None);
        let odd = at(32).replace("+ 31)", "+ 35)");
        assert_eq!(extrapolate(&[at(32), odd], &p), None);
    }
}
