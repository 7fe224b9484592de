//! isl's scheduler on worker threads, one isl context each, for the instances of a
//! program at other sizes ([`crate::sched_scaled`]) and its parametric model
//! ([`crate::sched_parametric`]): the [`Job`]s.
//!
//! isl objects belong to their context and a context to one thread at a time, so a worker
//! builds its own model of the program (through [`BuildInstance`]), schedules it, and
//! hands back only text. The instances are independent, so on a machine with two cores
//! they take about half the time of their sum; and they run while the real sizes are
//! probed on the compiling thread.
//!
//! The result does not depend on how the runs are spread over threads: every run has the
//! budgets it has alone, and the caller reads the results in the order of the jobs (the
//! compiling thread may wait for one while the others run: [`Wait`]).
//! Workers whose results are no longer needed (the probe succeeded, or the first instance
//! found no schedule) are stopped through a [`Cancel`].

use crate::deps::Deps;
use crate::isl::Ctx;
use crate::sched::{run_isl, IslRun, IslSchedOptions};
use crate::scop::Scop;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Builds the model and dependences of the program at other sizes, on the context given
/// (a worker's own); `None` when that fails (the real sizes are then scheduled as they
/// are).
pub type BuildInstance<'a> = dyn Fn(&Ctx, &[Option<i64>]) -> Option<(Scop, Deps)> + Sync + 'a;

/// A worker's stack: isl's scheduler recurses over the dependence graph's components.
const WORKER_STACK: usize = 64 << 20;

/// What one run of isl's scheduler on an instance gave, as text.
pub enum InstanceRun {
    /// The schedule's text (domain included), the run's note, and the isl option of the
    /// retry it needed (see [`IslRun::Schedule`]).
    Schedule(String, Option<String>, Option<&'static str>),
    /// isl found no schedule (or ran past its time budget with every retry), and why.
    NoSchedule(String),
    /// The model could not be built at these sizes, or the run was cancelled.
    Unbuilt,
}

/// The longest isl's scheduler runs on one instance of a [`Job::At`] (symbolic sizes in a
/// context that fixes them): twice the real sizes' probe. Symbolic sizes make isl's
/// problem larger than bound ones (cholesky at `N = 32` runs past isl's 1 s budget with
/// `N` a parameter fixed by the context, not when `N` is bound), and without the
/// instances the program is scheduled as before.
pub const SYMBOLIC_INSTANCE_TIME: std::time::Duration = std::time::Duration::from_millis(300);

/// One piece of work for [`run_all`].
#[derive(Clone, Debug)]
pub enum Job {
    /// The program at these sizes (`None`: symbolic), scheduled as
    /// [`crate::sched::run_isl`] does.
    Sizes(Vec<Option<i64>>),
    /// The program at these sizes, where the symbolic ones are each at least their value
    /// in the second list, scheduled once ([`crate::sched_parametric`]).
    Parametric(Vec<Option<i64>>, Vec<i64>),
    /// The program at these sizes (`None`: symbolic) in the context where each named
    /// symbolic size has the value given, scheduled as [`crate::sched::run_isl`] does.
    At(Vec<Option<i64>>, Vec<(String, i64)>),
}

/// Stops workers' isl computations from another thread.
#[derive(Default)]
struct Cancel {
    /// Set once the results are no longer needed.
    cancelled: AtomicBool,
    /// The workers' live `isl_ctx*`s; the lock keeps them alive while another thread
    /// lowers their budgets.
    ctxs: Mutex<Vec<usize>>,
}

impl Cancel {
    fn attach(&self, ctx: &Ctx) {
        if let Ok(mut p) = self.ctxs.lock() {
            p.push(ctx.ptr());
        }
    }

    fn detach(&self, ctx: &Ctx) {
        if let Ok(mut p) = self.ctxs.lock() {
            p.retain(|c| *c != ctx.ptr());
        }
    }

    fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }

    /// Marks the work cancelled and makes isl's next operation on every live context
    /// fail. isl's runs set their own budgets when they start, so this is repeated until
    /// the workers have finished (see [`run_all`]).
    fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
        if let Ok(p) = self.ctxs.lock() {
            for ctx in p.iter() {
                // SAFETY: a context is alive while it is in the list, and the lock is held
                // (a worker detaches it, under the same lock, before freeing it); the
                // budget is one word that isl reads at its next operation, as the
                // scheduler's watchdog does.
                unsafe { crate::isl::ffi::sched::isl_ctx_set_max_operations(*ctx, 1) };
            }
        }
    }
}

/// Builds the model of `job` on a context of its own and schedules it with `opts`.
fn run_instance(
    build: &BuildInstance,
    job: &Job,
    opts: &IslSchedOptions,
    cancel: &Cancel,
) -> miette::Result<InstanceRun> {
    let ctx = Ctx::new();
    cancel.attach(&ctx);
    let result = match job {
        Job::Sizes(sizes) => schedule_on(&ctx, build, (sizes, &[]), opts, cancel),
        Job::At(sizes, fixed) => schedule_on(&ctx, build, (sizes, fixed), opts, cancel),
        Job::Parametric(sizes, at_least) => parametric_on(&ctx, build, (sizes, at_least), opts),
    };
    cancel.detach(&ctx);
    result
}

/// [`run_instance`]'s work on the worker's context (every isl object of it is dropped
/// before the context).
fn schedule_on(
    ctx: &Ctx,
    build: &BuildInstance,
    (sizes, fixed): (&[Option<i64>], &[(String, i64)]),
    opts: &IslSchedOptions,
    cancel: &Cancel,
) -> miette::Result<InstanceRun> {
    if cancel.is_cancelled() {
        return Ok(InstanceRun::Unbuilt);
    }
    let built = crate::substeps::timed("schedule:scaled_models", || build(ctx, sizes));
    let Some((mut scop, mut deps)) = built else {
        return Ok(InstanceRun::Unbuilt);
    };
    if !fixed.is_empty() {
        let ranges: Vec<(String, i64, i64)> =
            fixed.iter().map(|(n, v)| (n.clone(), *v, *v)).collect();
        scop.assume_sizes(ctx, &ranges)?;
        deps.assume_context(&scop.context)?;
    }
    if cancel.is_cancelled() {
        return Ok(InstanceRun::Unbuilt);
    }
    // An instance of symbolic sizes stops at its time limit, with none of the retries:
    // the caller then schedules the program itself, as it would have without instances.
    let limit = (!fixed.is_empty()).then_some(SYMBOLIC_INSTANCE_TIME);
    let run = run_isl(ctx, &scop, &deps, opts, limit);
    if cancel.is_cancelled() {
        // Stopped part-way (its error is the stop's).
        return Ok(InstanceRun::Unbuilt);
    }
    Ok(match run? {
        IslRun::Schedule(s, note, retried) => {
            // A stop may come while the schedule is printed: isl then fails to print it.
            let text = crate::isl::ffi::model::schedule_text(&s);
            let _ = ctx.take_error();
            match text {
                Some(text) if !cancel.is_cancelled() => InstanceRun::Schedule(text, note, retried),
                _ if cancel.is_cancelled() => InstanceRun::Unbuilt,
                _ => miette::bail!("isl could not print the schedule of a scaled instance"),
            }
        }
        IslRun::NoSchedule(why) => InstanceRun::NoSchedule(why),
        // (A run without a probe's limit reports running out of time as no schedule.)
        IslRun::OutOfTime => InstanceRun::NoSchedule("it ran past its time budget".into()),
    })
}

/// [`run_instance`]'s work for a [`Job::Parametric`].
fn parametric_on(
    ctx: &Ctx,
    build: &BuildInstance,
    (sizes, at_least): (&[Option<i64>], &[i64]),
    opts: &IslSchedOptions,
) -> miette::Result<InstanceRun> {
    let built = crate::substeps::timed("schedule:parametric_model", || build(ctx, sizes));
    let Some((scop, deps)) = built else {
        return Ok(InstanceRun::Unbuilt);
    };
    let text = crate::substeps::timed("schedule:parametric", || {
        crate::sched_parametric::parametric_text(ctx, (&scop, &deps), at_least, opts)
    })?;
    Ok(text.map_or(InstanceRun::Unbuilt, |t| {
        InstanceRun::Schedule(t, None, None)
    }))
}

/// The results of [`run_all`], in the order of the instances.
type Results = Mutex<Vec<Option<miette::Result<InstanceRun>>>>;

/// Waits for the result of one job of [`run_all`] (runs it on the calling thread when no
/// worker has taken it) and takes it out of the results.
pub type Wait<'a> = dyn Fn(usize) -> miette::Result<InstanceRun> + 'a;

/// Every one of `jobs` built and scheduled with `opts`, on worker threads (as many as the
/// machine has cores, at least one beside `first`, at most one per job), while this
/// thread runs `first`; then this thread works on them too. `first` may wait for a job's
/// result (see [`Wait`]). When `first` returns true the results are not needed: the
/// workers are stopped and the answer is `None`. When the first [`Job::Sizes`] (or [`Job::At`]) gives no
/// schedule, or needed a retry, the others are stopped (their results are then
/// [`InstanceRun::Unbuilt`], as is a result that `first` took). The workers' sub-step
/// timings are merged into this thread's.
pub fn run_all(
    build: &BuildInstance,
    jobs: &[Job],
    opts: &IslSchedOptions,
    first: Option<&mut dyn FnMut(&Wait) -> bool>,
) -> Option<Vec<miette::Result<InstanceRun>>> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let spawned = if first.is_some() { cores.max(2) } else { cores } - 1;
    let spawned = spawned.min(jobs.len());
    let next = AtomicUsize::new(0);
    let results: Results = Mutex::new((0..jobs.len()).map(|_| None).collect());
    let (cancel, steps) = (Cancel::default(), Mutex::new(Vec::new()));
    let shared = (&next, &results, &cancel);
    let work = |on_worker: bool| {
        work_through(build, jobs, opts, shared);
        // On a worker, the thread's timings go back to the compiling thread.
        if on_worker {
            if let Ok(mut s) = steps.lock() {
                s.push(crate::substeps::take());
            }
        }
    };
    let wait = |k: usize| wait_for(build, (jobs, k), opts, shared);
    let needed = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..spawned)
            .filter_map(|_| {
                std::thread::Builder::new()
                    .name("polyc-isl".into())
                    .stack_size(WORKER_STACK)
                    .spawn_scoped(scope, || work(true))
                    .ok()
            })
            .collect();
        if first.is_some_and(|f| f(&wait)) {
            while workers.iter().any(|w| !w.is_finished()) {
                cancel.cancel();
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            return false;
        }
        work(false);
        true
    });
    for taken in steps.into_inner().unwrap_or_default() {
        crate::substeps::add(taken);
    }
    let results = results.into_inner().unwrap_or_default();
    needed.then(|| {
        results
            .into_iter()
            .map(|r| r.unwrap_or(Ok(InstanceRun::Unbuilt)))
            .collect()
    })
}

/// [`Wait`]: job `k`'s result, taken out of the results once a worker stored it, or run
/// here when no worker has taken the job yet.
fn wait_for(
    build: &BuildInstance,
    (jobs, k): (&[Job], usize),
    opts: &IslSchedOptions,
    (next, results, cancel): (&AtomicUsize, &Results, &Cancel),
) -> miette::Result<InstanceRun> {
    let Some(job) = jobs.get(k) else {
        return Ok(InstanceRun::Unbuilt);
    };
    loop {
        if let Ok(mut r) = results.lock() {
            if let Some(done) = r[k].take() {
                return done;
            }
        }
        if next
            .compare_exchange(k, k + 1, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return run_instance(build, job, opts, cancel);
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// One thread's share of [`run_all`]: the next job not taken yet, until none is left; a
/// first [`Job::Sizes`] or [`Job::At`] without a schedule (or that needed a retry) cancels
/// the rest.
fn work_through(
    build: &BuildInstance,
    jobs: &[Job],
    opts: &IslSchedOptions,
    (next, results, cancel): (&AtomicUsize, &Results, &Cancel),
) {
    let base = jobs
        .iter()
        .position(|j| matches!(j, Job::Sizes(_) | Job::At(..)));
    loop {
        let k = next.fetch_add(1, Ordering::SeqCst);
        let Some(job) = jobs.get(k) else {
            break;
        };
        let result = run_instance(build, job, opts, cancel);
        // The others ran with `opts` for nothing when the first found no schedule, or
        // needed a retry that `opts` did not ask for (they are scheduled again with its
        // option).
        let expected = |r: &Option<&'static str>| opts.with_retry(*r) == *opts;
        if Some(k) == base && !matches!(&result, Ok(InstanceRun::Schedule(_, _, r)) if expected(r))
        {
            cancel.cancel();
        }
        if let Ok(mut r) = results.lock() {
            r[k] = Some(result);
        }
    }
}
