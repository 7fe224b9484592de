//! Every bundled example, at the first two shapes `specs/suites/smoke.yaml` gives it, under
//! every scheduler (`initial`, `isl`, `ilp`), through `polyc run --check`. This duplicates the smoke suite on purpose,
//! so that `cargo test` alone covers it.

mod common;
use common::*;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

#[derive(Deserialize)]
struct Suite {
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    program: String,
    #[serde(default)]
    entry: Option<String>,
    shapes: Vec<BTreeMap<String, i64>>,
}

struct Job {
    program: String,
    entry: Option<String>,
    shape: String,
    scheduler: &'static str,
}

/// The schedulers every example runs under.
const SCHEDULERS: [&str; 3] = ["initial", "isl", "ilp"];

/// The examples, by file name.
fn examples() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(root().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tc"))
        .collect();
    v.sort();
    v
}

fn jobs() -> Vec<Job> {
    let text = std::fs::read_to_string(root().join("specs/suites/smoke.yaml")).unwrap();
    let suite: Suite = serde_yaml::from_str(&text).expect("smoke.yaml parses");
    let names = examples();
    assert!(
        names.len() >= 12,
        "only {} examples: {names:?}",
        names.len()
    );
    let mut jobs = Vec::new();
    let mut missing = Vec::new();
    for name in &names {
        let path = format!("../../examples/{name}");
        let Some(case) = suite.cases.iter().find(|c| c.program == path) else {
            missing.push(name.clone());
            continue;
        };
        assert!(case.shapes.len() >= 2, "{name}: fewer than two shapes");
        for shape in &case.shapes[..2] {
            let shape: Vec<String> = shape.iter().map(|(k, v)| format!("{k}={v}")).collect();
            for scheduler in SCHEDULERS {
                jobs.push(Job {
                    program: format!("examples/{name}"),
                    entry: case.entry.clone(),
                    shape: shape.join(","),
                    scheduler,
                });
            }
        }
    }
    assert!(
        missing.is_empty(),
        "examples without an entry in specs/suites/smoke.yaml: {missing:?}"
    );
    jobs
}

/// Runs one job; `None` when it passed, else a description of the failure.
fn run(job: &Job) -> Option<String> {
    let mut args = vec![
        "run",
        job.program.as_str(),
        "--param",
        job.shape.as_str(),
        "--check",
        "--scheduler",
        job.scheduler,
    ];
    if let Some(e) = &job.entry {
        args.extend(["--entry", e.as_str()]);
    }
    let o = polyc(&args);
    let out = stdout(&o);
    let ok = o.status.code() == Some(0)
        && !out.is_empty()
        && out
            .lines()
            .all(|l| l.ends_with(" ok") && l.contains(": max_abs_err="));
    (!ok).then(|| {
        format!(
            "polyc {}: exit {:?}\n{}{}",
            args.join(" "),
            o.status.code(),
            out,
            stderr(&o)
        )
    })
}

#[test]
fn every_example_checks_under_every_scheduler() {
    let jobs = jobs();
    assert!(jobs.len() >= 72, "{} runs", jobs.len());
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 4));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(job) = jobs.get(i) else { break };
                if let Some(f) = run(job) {
                    failures.lock().unwrap().push(f);
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {} runs failed:\n{}",
        failures.len(),
        jobs.len(),
        failures.join("\n")
    );
}
