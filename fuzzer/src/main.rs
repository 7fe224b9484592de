//! `polyc-fuzz`: polyc's differential fuzzer and hostile-input campaign.
//!
//! ```text
//! polyc-fuzz [diff]      random programs checked against the interpreter (the default)
//! polyc-fuzz hostile     mutated inputs through the polyc binary: exit 0, 1 or 3 only
//! polyc-fuzz replay F    rerun a saved case (F: a failure folder or its case.json)
//! polyc-fuzz shrink F    shrink a saved case further and save it again
//! polyc-fuzz show I      run case I of the seed in case-I/ (program, spec, kernel)
//! polyc-fuzz worker DIR  (internal) runs cases for the parent, in DIR
//! ```
//!
//! Settings come from the environment (see `scripts/fuzz` and the README):
//! `POLYC_FUZZ_SEED` (a number, or `random`), `POLYC_FUZZ_CASES`, `POLYC_FUZZ_SECONDS`,
//! `POLYC_FUZZ_CASE` (one case), `POLYC_FUZZ_JOBS`, `POLYC_FUZZ_OUT`, `POLYC_FUZZ_GPU_SHARE`,
//! `POLYC_FUZZ_GEMMINI_SHARE`, `POLYC_FUZZ_INJECT`, `POLYC_FUZZ_VERBOSE`, and for
//! `hostile` `POLYC_FUZZ_HOSTILE_CASES`, `POLYC_FUZZ_HOSTILE_SECONDS` and `POLYC`.

use polyc_fuzz::campaign::{run_campaign, Settings};
use polyc_fuzz::case::{execute, Case, Inject};
use polyc_fuzz::report::summary_text;
use polyc_fuzz::shrink::Budget;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// An environment variable's value, or `default` when unset or unreadable.
fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// The differential campaign's settings, from the environment.
fn settings() -> Settings {
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let inject = std::env::var("POLYC_FUZZ_INJECT").ok();
    Settings {
        seed: polyc_fuzz::seed_from_env(),
        cases: env("POLYC_FUZZ_CASES", 2000),
        seconds: env("POLYC_FUZZ_SECONDS", 300.0),
        jobs: env("POLYC_FUZZ_JOBS", jobs),
        only: std::env::var("POLYC_FUZZ_CASE")
            .ok()
            .and_then(|v| v.parse().ok()),
        out: PathBuf::from(env("POLYC_FUZZ_OUT", "tests/fuzz_failures".to_string())),
        gpu_share: env("POLYC_FUZZ_GPU_SHARE", polyc_fuzz::campaign::GPU_SHARE),
        gemmini_share: env(
            "POLYC_FUZZ_GEMMINI_SHARE",
            polyc_fuzz::campaign::GEMMINI_SHARE,
        ),
        o3_share: env("POLYC_FUZZ_O3_SHARE", polyc_fuzz::campaign::O3_SHARE),
        inject: inject.as_deref().and_then(Inject::parse),
        shrink: Budget {
            attempts: env("POLYC_FUZZ_SHRINK_RUNS", 3000),
            time: Duration::from_secs_f64(env("POLYC_FUZZ_SHRINK_SECONDS", 120.0)),
        },
        case_limit: Duration::from_secs_f64(env("POLYC_FUZZ_CASE_SECONDS", 120.0)),
        verbose: env("POLYC_FUZZ_VERBOSE", 0) != 0,
    }
}

/// `polyc-fuzz diff`: the differential campaign; exit 1 on an unexplained failure.
fn diff() -> ExitCode {
    let s = settings();
    println!(
        "polyc-fuzz: seed {} (rerun with {}scripts/fuzz diff), up to {} cases in {} s, {} jobs{}",
        s.seed,
        polyc_fuzz::report::rerun_env(&s),
        s.cases,
        s.seconds,
        s.jobs,
        s.inject
            .map(|i| format!(", injected fault {i:?}"))
            .unwrap_or_default()
    );
    let sum = run_campaign(&s);
    print!("{}", summary_text(&s, &sum));
    if s.only.is_none() && sum.cases < s.cases {
        println!(
            "polyc-fuzz: note: the time budget ({} s) ended the run after {} of {} cases",
            s.seconds, sum.cases, s.cases
        );
    }
    if sum.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Reads a saved case: a failure folder or its `case.json`.
fn load_case(path: &str) -> Option<Case> {
    let mut p = PathBuf::from(path);
    if p.is_dir() {
        p = p.join("case.json");
    }
    match std::fs::read_to_string(&p)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
    {
        Ok(c) => Some(c),
        Err(e) => {
            eprintln!("polyc-fuzz: cannot read {}: {e}", p.display());
            None
        }
    }
}

/// `polyc-fuzz shrink F`: shrinks a saved case further (with the settings' budget) and
/// saves the result next to the other failures.
fn shrink_saved(path: &str) -> ExitCode {
    let Some(case) = load_case(path) else {
        return ExitCode::FAILURE;
    };
    let s = settings();
    let Ok(mut worker) = polyc_fuzz::worker::Worker::new() else {
        return ExitCode::FAILURE;
    };
    let mut run = |c: &Case| {
        let req = polyc_fuzz::worker::Request {
            case: c.clone(),
            inject: s.inject,
        };
        worker.run(&req, s.case_limit)
    };
    let first = run(&case);
    if first.outcome == polyc_fuzz::case::Outcome::Pass {
        println!("polyc-fuzz: {path} passes now");
        return ExitCode::SUCCESS;
    }
    let (small, r, tried) = polyc_fuzz::shrink::shrink(&case, &first, s.shrink, &mut run);
    polyc_fuzz::report::save_failure(&s, &case, &first, &small, &r, tried);
    ExitCode::FAILURE
}

/// `polyc-fuzz replay F`: reruns a saved case and prints its outcome.
fn replay(path: &str) -> ExitCode {
    let Some(case) = load_case(path) else {
        return ExitCode::FAILURE;
    };
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("polyc-fuzz: {e}");
            return ExitCode::FAILURE;
        }
    };
    let r = execute(&case, dir.path(), None);
    println!("{}\n{}", r.outcome.class(), r.outcome.message());
    if r.outcome == polyc_fuzz::case::Outcome::Pass {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// `polyc-fuzz show I`: runs case `I` of the seed in `case-I/` (program, spec, kernel,
/// case.json) and prints its command and outcome.
fn show(index: &str) -> ExitCode {
    let Ok(i) = index.parse::<u64>() else {
        eprintln!("polyc-fuzz show: `{index}` is not a case index");
        return ExitCode::FAILURE;
    };
    let case = polyc_fuzz::campaign::case_for(&settings(), i);
    let dir = PathBuf::from(format!("case-{i}"));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("polyc-fuzz show: {e}");
        return ExitCode::FAILURE;
    }
    let r = execute(&case, &dir, None);
    let json = serde_json::to_string_pretty(&case).unwrap_or_default();
    let _ = std::fs::write(dir.join("case.json"), json);
    println!("{}", polyc_fuzz::report::command(&case, r.spec.as_deref()));
    println!("{}: {}", r.outcome.class(), r.outcome.message());
    println!("written to {}", dir.display());
    ExitCode::SUCCESS
}

/// Dispatches the command.
fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        None | Some("diff") => diff(),
        Some("hostile") => polyc_fuzz::hostile::main(),
        Some("replay") if args.len() == 2 => replay(&args[1]),
        Some("show") if args.len() == 2 => show(&args[1]),
        Some("shrink") if args.len() == 2 => shrink_saved(&args[1]),
        Some("worker") if args.len() == 2 => {
            match polyc_fuzz::worker::worker_main(Path::new(&args[1])) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("polyc-fuzz worker: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Some(other) => {
            eprintln!(
                "polyc-fuzz: unknown command `{other}`; use diff, hostile, replay F, shrink F, show I or worker DIR"
            );
            ExitCode::from(2)
        }
    }
}
