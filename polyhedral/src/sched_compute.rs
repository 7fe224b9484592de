//! One run of isl's scheduler within budgets: a number of isl operations and a wall-clock
//! time, past which a watchdog thread stops it ([`compute_on`]). Used by the schedulers of
//! [`crate::sched`] and by the parts of [`crate::sched_loops`].

use crate::isl::{Ctx, IslResultExt};
use isl_rs::{Schedule, ScheduleConstraints, Set, UnionMap, UnionSet};

/// The budgets of one run of isl's scheduler.
#[derive(Clone, Copy)]
pub(crate) struct Limits {
    /// isl's operations.
    pub(crate) operations: u64,
    /// Wall-clock time.
    pub(crate) time: std::time::Duration,
    /// The operations isl may still do once the time is up (see [`Watchdog`]):
    /// [`crate::sched::SCHED_TIMEOUT_MIN_OPERATIONS`], or 0 for a probe that stops at once.
    pub(crate) floor: u64,
    /// With symbolic sizes, schedule with each at [`crate::sched::LARGE_SIZE`] first (kept
    /// when valid for every size); `false` goes to the real context directly.
    pub(crate) large_first: bool,
}

/// After its time budget and this many more (at least [`SCHED_HARD_STOP_MIN_MS`]), isl's
/// scheduler stops at its next operation, however few it did: a safety net for problems
/// whose operations are slow.
pub const SCHED_HARD_STOP_BUDGETS: u32 = 1;

/// The shortest wait from the time budget to the hard stop, so that tiny budgets (tests)
/// still end in [`crate::sched::SCHED_TIMEOUT_MIN_OPERATIONS`] operations on a machine that is not
/// much slower than ours.
pub const SCHED_HARD_STOP_MIN_MS: u64 = 1_000;

/// How long after its time budget `budget` a run of isl's scheduler stops at its next
/// operation ([`SCHED_HARD_STOP_BUDGETS`], [`SCHED_HARD_STOP_MIN_MS`]).
pub(crate) fn hard_stop_after(budget: std::time::Duration) -> std::time::Duration {
    (budget * SCHED_HARD_STOP_BUDGETS).max(std::time::Duration::from_millis(SCHED_HARD_STOP_MIN_MS))
}

/// A thread that stops isl's computation on a context when a time budget runs out: it
/// lowers the context's operation budget to [`crate::sched::SCHED_TIMEOUT_MIN_OPERATIONS`] (isl checks it
/// at every allocation and pivot), so the computation stops at once if it did that many
/// operations already, else when it does, or at the latest
/// [`SCHED_HARD_STOP_BUDGETS`] budgets later.
struct Watchdog {
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<bool>>,
}

impl Watchdog {
    /// Watches `ctx` for `budget`; then lowers its operation budget to `lowered`.
    fn start(ctx: &Ctx, budget: std::time::Duration, lowered: u64) -> Watchdog {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let ptr = ctx.ptr();
        let thread = std::thread::spawn(move || {
            match rx.recv_timeout(budget) {
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    // SAFETY: the context outlives this thread (`stop` joins it before the
                    // compute call's caller can free the context); the budget is one
                    // aligned word that isl reads at its next operation.
                    unsafe { crate::isl::ffi::sched::isl_ctx_set_max_operations(ptr, lowered) };
                    // Operations can be slow (deriche's: 0.5 ms each, so 200 000 of them
                    // take 100 s): past one more budget (at least 1 s), stop at the next operation.
                    let hard = hard_stop_after(budget);
                    if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(hard) {
                        // SAFETY: as above.
                        unsafe { crate::isl::ffi::sched::isl_ctx_set_max_operations(ptr, 1) };
                    }
                    true
                }
                _ => false,
            }
        });
        Watchdog {
            stop: Some(tx),
            thread: Some(thread),
        }
    }

    /// Stops the watchdog; whether it lowered the operation budget.
    fn stop(mut self) -> bool {
        self.stop.take();
        self.thread
            .take()
            .map(|t| t.join().unwrap_or(false))
            .unwrap_or(false)
    }
}

/// What one run of isl's scheduler gave.
pub(crate) enum Computed {
    /// A schedule.
    Schedule(Schedule),
    /// isl stopped at its operation budget.
    OutOfBudget,
    /// isl ran past its time budget (polyc aborted it).
    OutOfTime,
    /// isl found no schedule, and why (isl's message).
    NoSchedule(String),
}

/// One isl schedule computation of the instances `domain` under `validity` (validity =
/// proximity = coincidence) with the given context, within `limits`.
pub(crate) fn compute_on(
    ctx: &Ctx,
    domain: UnionSet,
    validity: &UnionMap,
    context: Set,
    limits: Limits,
) -> miette::Result<Computed> {
    let budget = limits.operations;
    let mut sc = ScheduleConstraints::on_domain(domain)
        .isl("creating schedule constraints")?
        .set_context(context)
        .isl("setting the context")?
        .set_validity(validity.copy().isl("copying dependences")?)
        .isl("setting validity constraints")?
        .set_proximity(validity.copy().isl("copying dependences")?)
        .isl("setting proximity constraints")?
        .set_coincidence(validity.copy().isl("copying dependences")?)
        .isl("setting coincidence constraints")?;
    sc.do_not_free_on_drop();
    ctx.isl.reset_operations();
    ctx.isl.set_max_operations(budget);
    let watchdog = Watchdog::start(ctx, limits.time, budget.min(limits.floor.max(1)));
    // SAFETY: `sc` is a valid schedule constraints object whose ownership passes to isl
    // (it is no longer freed on drop); the result is a new schedule or NULL.
    let ptr = unsafe { crate::isl::ffi::sched::isl_schedule_constraints_compute_schedule(sc.ptr) };
    let timed_out = watchdog.stop();
    let error = ctx.isl.last_error();
    ctx.isl.set_max_operations(0);
    ctx.isl.reset_operations();
    let s = Schedule {
        ptr,
        should_free_on_drop: true,
    };
    if error == isl_rs::Error::Quota {
        ctx.isl.reset_error();
        // Past the time budget, the lowered budget stopped it (unless the user's own
        // budget is lower still).
        return Ok(if timed_out && budget > limits.floor {
            let _ = ctx.take_error();
            Computed::OutOfTime
        } else {
            Computed::OutOfBudget
        });
    }
    if ptr == 0 || error != isl_rs::Error::None_ {
        let why = ctx.take_error().unwrap_or_else(|| "no reason given".into());
        return Ok(Computed::NoSchedule(why));
    }
    Ok(Computed::Schedule(s))
}
