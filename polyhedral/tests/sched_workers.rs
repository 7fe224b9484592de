//! isl's scheduler on worker threads (`sched_workers`): each instance gets the schedule it
//! gets on the compiling thread, in the order asked; work that is no longer needed stops.

use polyhedral::deps::Deps;
use polyhedral::diag::SourceFile;
use polyhedral::isl::Ctx;
use polyhedral::lang::{parser, sema};
use polyhedral::sched::{isl_schedule, IslSchedOptions};
use polyhedral::sched_workers::{run_all, InstanceRun, Job, Wait};
use polyhedral::scop::Scop;

/// The program of the PolyBench kernel `name` (from `examples/polybench`).
fn polybench(name: &str) -> (SourceFile, polyhedral::ir::Program) {
    let path = format!(
        "{}/../examples/polybench/{name}.tc",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).expect("the example exists");
    let src = SourceFile::new(&path, &text);
    let defs = parser::parse(&src).unwrap_or_else(|e| panic!("{e:?}"));
    let prog = sema::lower(&src, &defs[0]).unwrap_or_else(|e| panic!("{e:?}"));
    (src, prog)
}

/// The model builder of `prog` that the compiler gives the workers.
fn builder<'a>(
    src: &'a SourceFile,
    prog: &'a polyhedral::ir::Program,
) -> impl Fn(&Ctx, &[Option<i64>]) -> Option<(Scop, Deps)> + Sync + 'a {
    move |ctx: &Ctx, s: &[Option<i64>]| {
        let scop = Scop::build(ctx, prog, s, src).ok()?;
        let deps = Deps::compute(&scop).ok()?;
        Some((scop, deps))
    }
}

/// isl's schedule of `prog` at `sizes` on this thread, as text.
fn here(src: &SourceFile, prog: &polyhedral::ir::Program, sizes: &[Option<i64>]) -> String {
    let ctx = Ctx::new();
    let scop = Scop::build(&ctx, prog, sizes, src).expect("model builds");
    let deps = Deps::compute(&scop).expect("dependences");
    let s = isl_schedule(&ctx, &scop, &deps, &IslSchedOptions::default()).expect("isl");
    s.to_str().expect("prints").to_string()
}

#[test]
fn every_instance_gets_its_own_schedule_in_order() {
    for (name, instances) in [
        (
            "2mm",
            vec![
                vec![32, 48, 40, 56],
                vec![40, 48, 40, 56],
                vec![32, 56, 40, 56],
            ],
        ),
        ("lu", vec![vec![32], vec![40], vec![37]]),
        (
            "jacobi_1d",
            vec![vec![48, 32], vec![56, 32], vec![48, 40], vec![41, 33]],
        ),
    ] {
        let (src, prog) = polybench(name);
        let sizes: Vec<Vec<Option<i64>>> = instances
            .iter()
            .map(|v| v.iter().map(|x| Some(*x)).collect())
            .collect();
        let build = builder(&src, &prog);
        let jobs: Vec<Job> = sizes.iter().cloned().map(Job::Sizes).collect();
        let runs = run_all(&build, &jobs, &IslSchedOptions::default(), None).expect("needed");
        assert_eq!(runs.len(), sizes.len());
        for (run, s) in runs.into_iter().zip(&sizes) {
            match run.expect("no error") {
                InstanceRun::Schedule(text, note, retried) => {
                    assert_eq!(text, here(&src, &prog, s), "{name} at {s:?}");
                    assert_eq!((note, retried), (None, None), "{name} at {s:?}");
                }
                _ => panic!("{name} at {s:?}: no schedule"),
            }
        }
    }
}

#[test]
fn an_instance_that_cannot_be_built_is_unbuilt() {
    let (src, prog) = polybench("lu");
    // This builder gives no model below N = 20.
    let build = |ctx: &Ctx, s: &[Option<i64>]| {
        let scop = Scop::build(ctx, &prog, s, &src).ok()?;
        (s[0] > Some(20)).then_some(())?;
        let deps = Deps::compute(&scop).ok()?;
        Some((scop, deps))
    };
    let jobs = [Job::Sizes(vec![Some(10)])];
    let runs = run_all(&build, &jobs, &IslSchedOptions::default(), None);
    assert!(matches!(runs.as_deref(), Some([Ok(InstanceRun::Unbuilt)])));
}

#[test]
fn work_stops_when_the_first_task_no_longer_needs_it() {
    // adi at these sizes runs every isl run to its time budget and then retries; if the
    // workers were not stopped, their retries would show in the timings.
    let (src, prog) = polybench("adi");
    let build = builder(&src, &prog);
    let jobs = [
        Job::Sizes(vec![Some(32), Some(48)]),
        Job::Sizes(vec![Some(40), Some(48)]),
    ];
    polyhedral::substeps::take();
    let mut ran = false;
    let mut first = |_: &Wait| {
        // Long enough for the workers to be inside isl's scheduler.
        std::thread::sleep(std::time::Duration::from_millis(400));
        ran = true;
        true
    };
    let first: &mut dyn FnMut(&Wait) -> bool = &mut first;
    // Whole-program runs (adi's loops apart would be scheduled in milliseconds).
    let opts = IslSchedOptions {
        loops_apart: Some(false),
        ..IslSchedOptions::default()
    };
    let runs = run_all(&build, &jobs, &opts, Some(first));
    assert!(ran);
    assert!(runs.is_none());
    let steps = polyhedral::substeps::take();
    for retry in ["schedule:isl_bounded", "schedule:isl_serialized"] {
        assert!(
            steps.iter().all(|s| s.name != retry),
            "a stopped worker went on to {retry}: {steps:?}"
        );
    }
}

/// Instances run with a retry's option already set (the reruns after the base instance
/// needed it) all get their schedules: the retry they report does not stop the others.
#[test]
fn reruns_with_the_retry_set_are_not_stopped() {
    let (src, prog) = polybench("adi");
    let build = builder(&src, &prog);
    let jobs: Vec<Job> = [32, 40, 48, 56]
        .iter()
        .map(|n| Job::Sizes(vec![Some(*n), Some(48)]))
        .collect();
    let opts = IslSchedOptions {
        loops_apart: Some(true),
        ..IslSchedOptions::default()
    };
    let runs = run_all(&build, &jobs, &opts, None).expect("needed");
    for (k, run) in runs.into_iter().enumerate() {
        assert!(
            matches!(run, Ok(InstanceRun::Schedule(_, _, Some("loops_apart")))),
            "instance {k} has no schedule"
        );
    }
}

/// `first` can wait for a job: the parametric model of jacobi-1d (its sizes symbolic, at
/// least the values given) is scheduled by a worker, and its text has the parameters.
#[test]
fn first_waits_for_the_parametric_job() {
    let (src, prog) = polybench("jacobi_1d");
    let build = builder(&src, &prog);
    let jobs = [
        Job::Parametric(vec![None, None], vec![48, 32]),
        Job::Sizes(vec![Some(48), Some(32)]),
    ];
    let mut text = None;
    let mut first = |wait: &Wait| {
        if let Ok(InstanceRun::Schedule(t, _, _)) = wait(0) {
            text = Some(t);
        }
        true
    };
    let first: &mut dyn FnMut(&Wait) -> bool = &mut first;
    assert!(run_all(&build, &jobs, &IslSchedOptions::default(), Some(first)).is_none());
    let text = text.expect("the parametric model has a schedule");
    assert!(text.starts_with("{ domain: \"[N, T] -> {"), "{text}");
}

/// A schedule printed on a context whose operation budget another thread lowered (what
/// stopping a worker does) is no text, not a crash: `isl-rs`'s `to_str` read the NULL
/// that isl returns there as a string, which crashed about one `polyc explain` in a hundred.
#[test]
fn a_schedule_printed_after_a_stop_is_no_text() {
    let (src, prog) = polybench("gesummv");
    let ctx = Ctx::new();
    let scop = Scop::build(&ctx, &prog, &[Some(67)], &src).expect("model builds");
    let deps = Deps::compute(&scop).expect("dependences");
    let s = isl_schedule(&ctx, &scop, &deps, &IslSchedOptions::default()).expect("isl");
    let before = polyhedral::isl::ffi::model::schedule_text(&s).expect("prints");
    assert_eq!(before, s.to_str().expect("prints"));
    // SAFETY: the context is alive; the budget is what a stop sets.
    unsafe { polyhedral::isl::ffi::sched::isl_ctx_set_max_operations(ctx.ptr(), 1) };
    assert_eq!(polyhedral::isl::ffi::model::schedule_text(&s), None);
    let _ = ctx.take_error();
}
