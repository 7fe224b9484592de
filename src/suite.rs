//! `polyc suite FILE.yaml`: regression runs over programs × shapes × schedulers.
//!
//! A suite file:
//!
//! ```yaml
//! name: smoke
//! schedulers: [initial, isl]        # default for every case
//! cases:
//!   - program: ../../examples/matmul.tc   # relative to the suite file
//!     entry: matmul                       # optional
//!     shapes:
//!       - {M: 64, N: 48, K: 32}
//!       - {M: 17, N: 31, K: 13}
//!     schedulers: [isl]                   # optional, overrides the default
//!     isl_options: [outer_coincidence=1]  # optional
//! ```
//!
//! Each case × shape × scheduler runs `polyc run … --check` in its own process (so a crash
//! in generated code fails one case, not the suite), `--jobs` at a time, with a progress
//! bar. The summary table lists program, shape, scheduler, status, compile ms, run ms and
//! max error; `--json` writes the same rows.

use crate::check::RunReport;
use miette::{miette, Result};
use polyhedral::diag::SourceFile;
use polyhedral::ir::Span;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A suite file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteFile {
    /// The suite's name.
    pub name: String,
    /// Default schedulers for every case.
    #[serde(default = "default_schedulers")]
    pub schedulers: Vec<String>,
    /// The cases.
    pub cases: Vec<SuiteCase>,
}

fn default_schedulers() -> Vec<String> {
    vec!["isl".into()]
}

/// One program with its shapes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteCase {
    /// Path of the `.tc` file, relative to the suite file.
    pub program: String,
    /// The `def` to compile.
    #[serde(default)]
    pub entry: Option<String>,
    /// Size bindings, one map per shape.
    pub shapes: Vec<BTreeMap<String, i64>>,
    /// Schedulers for this case (default: the suite's).
    #[serde(default)]
    pub schedulers: Option<Vec<String>>,
    /// isl scheduler options.
    #[serde(default)]
    pub isl_options: Vec<String>,
}

/// The result of one run.
#[derive(Clone, Debug, Serialize)]
pub struct SuiteRow {
    /// Program path as written in the suite.
    pub program: String,
    /// `M=64,N=48,K=32`.
    pub shape: String,
    /// Scheduler.
    pub scheduler: String,
    /// `ok`, `MISMATCH` or `ERROR`.
    pub status: String,
    /// polyc's compile time.
    pub compile_ms: f64,
    /// Kernel time.
    pub run_ms: f64,
    /// Largest absolute error.
    pub max_abs_err: f64,
    /// The oracle, or the error message.
    pub detail: String,
}

/// The JSON line `polyc run --result-json` prints.
pub fn result_json(report: &RunReport, compile_ms: f64) -> serde_json::Value {
    serde_json::json!({
        "status": if report.all_ok() { "ok" } else { "MISMATCH" },
        "compile_ms": compile_ms,
        "cc_ms": report.cc_ms,
        "run_ms": report.run_ms,
        "max_abs_err": report.max_abs_err(),
        "oracle": report.oracle,
        "checks": report.checks.iter().map(|c| serde_json::json!({
            "tensor": c.name,
            "ok": c.comparison.ok,
            "max_abs_err": c.comparison.max_abs_err,
            "max_rel_err": c.comparison.max_rel_err,
        })).collect::<Vec<_>>(),
    })
}

/// Reads and validates a suite file; errors are located in the YAML.
pub fn load_suite(path: &Path) -> Result<SuiteFile> {
    let file = SourceFile::read(&path.display().to_string())?;
    let suite: SuiteFile = serde_yaml::from_str(&file.text).map_err(|e| {
        let offset = e.location().map_or(0, |l| l.index());
        let end = file.text[offset..]
            .find('\n')
            .map_or(file.text.len(), |n| offset + n);
        miette::Report::new(file.error(
            Span::new(offset, end.max(offset)),
            format!("invalid suite file: {e}"),
            "here",
            "a suite has `name`, optional `schedulers`, and `cases` with `program`, `shapes`, and optional `entry`, `schedulers`, `isl_options` (see the README)",
        ))
    })?;
    let dir = path.parent().unwrap_or(Path::new("."));
    for case in &suite.cases {
        let p = dir.join(&case.program);
        if !p.is_file() {
            return Err(miette!(
                help = "program paths in a suite are relative to the suite file",
                "{}: program `{}` not found (looked for {})",
                path.display(),
                case.program,
                p.display()
            ));
        }
        if case.shapes.is_empty() {
            return Err(miette!(
                help = "give at least one shape, e.g. shapes: [{{M: 64, N: 64, K: 64}}]",
                "{}: case `{}` has no shapes",
                path.display(),
                case.program
            ));
        }
    }
    Ok(suite)
}

struct Job {
    program_label: String,
    program_path: PathBuf,
    entry: Option<String>,
    shape: String,
    scheduler: String,
    isl_options: Vec<String>,
}

fn run_job(exe: &Path, job: &Job) -> SuiteRow {
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("run").arg(&job.program_path);
    if let Some(e) = &job.entry {
        cmd.arg("--entry").arg(e);
    }
    if !job.shape.is_empty() {
        cmd.arg("--param").arg(&job.shape);
    }
    cmd.arg("--scheduler").arg(&job.scheduler);
    for o in &job.isl_options {
        cmd.arg("--isl-option").arg(o);
    }
    cmd.args(["--check", "--verify-passes", "--result-json"]);
    let mut row = SuiteRow {
        program: job.program_label.clone(),
        shape: job.shape.clone(),
        scheduler: job.scheduler.clone(),
        status: "ERROR".into(),
        compile_ms: 0.0,
        run_ms: 0.0,
        max_abs_err: 0.0,
        detail: String::new(),
    };
    let out = match cmd.output() {
        Ok(o) => o,
        Err(e) => {
            row.detail = format!("cannot start polyc: {e}");
            return row;
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let parsed = stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str::<serde_json::Value>(l).ok());
    match (out.status.code(), parsed) {
        (Some(0) | Some(3), Some(v)) => {
            row.status = v["status"].as_str().unwrap_or("ERROR").to_string();
            row.compile_ms = v["compile_ms"].as_f64().unwrap_or(0.0);
            row.run_ms = v["run_ms"].as_f64().unwrap_or(0.0);
            row.max_abs_err = v["max_abs_err"].as_f64().unwrap_or(0.0);
            row.detail = v["oracle"].as_str().unwrap_or("").to_string();
        }
        (code, _) => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            row.detail = format!(
                "exit {}: {}",
                code.map_or("signal".to_string(), |c| c.to_string()),
                stderr.trim()
            );
        }
    }
    row
}

/// Runs a suite; returns true when every case passed. Prints the summary table.
pub fn run_suite(path: &Path, jobs: Option<usize>, json: Option<&Path>) -> Result<bool> {
    let suite = load_suite(path)?;
    let exe = std::env::current_exe().map_err(|e| miette!("cannot find polyc itself: {e}"))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut all_jobs = Vec::new();
    for case in &suite.cases {
        let schedulers = case.schedulers.clone().unwrap_or(suite.schedulers.clone());
        for shape in &case.shapes {
            let shape_text: Vec<String> = shape.iter().map(|(k, v)| format!("{k}={v}")).collect();
            for s in &schedulers {
                all_jobs.push(Job {
                    program_label: case.program.clone(),
                    program_path: dir.join(&case.program),
                    entry: case.entry.clone(),
                    shape: shape_text.join(","),
                    scheduler: s.clone(),
                    isl_options: case.isl_options.clone(),
                });
            }
        }
    }
    let n_jobs = jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    eprintln!(
        "polyc suite {}: {} runs, {} at a time",
        suite.name,
        all_jobs.len(),
        n_jobs
    );
    let bar = indicatif::ProgressBar::new(all_jobs.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {elapsed} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let next = Arc::new(AtomicUsize::new(0));
    let rows: Arc<Mutex<Vec<(usize, SuiteRow)>>> = Arc::new(Mutex::new(Vec::new()));
    let all_jobs = Arc::new(all_jobs);
    std::thread::scope(|scope| {
        for _ in 0..n_jobs {
            let next = next.clone();
            let rows = rows.clone();
            let jobs = all_jobs.clone();
            let bar = bar.clone();
            let exe = exe.clone();
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(job) = jobs.get(i) else { break };
                bar.set_message(format!("{} {}", job.program_label, job.shape));
                let row = run_job(&exe, job);
                if let Ok(mut r) = rows.lock() {
                    r.push((i, row));
                }
                bar.inc(1);
            });
        }
    });
    bar.finish_and_clear();
    let mut rows = Arc::try_unwrap(rows)
        .map_err(|_| miette!("internal error: suite workers still running"))?
        .into_inner()
        .map_err(|_| miette!("internal error: a suite worker panicked"))?;
    rows.sort_by_key(|(i, _)| *i);
    let rows: Vec<SuiteRow> = rows.into_iter().map(|(_, r)| r).collect();
    print!("{}", format_table(&rows));
    let failed = rows.iter().filter(|r| r.status != "ok").count();
    println!(
        "suite {}: {} passed, {} failed",
        suite.name,
        rows.len() - failed,
        failed
    );
    if let Some(json) = json {
        let text = serde_json::to_string_pretty(&rows).map_err(|e| miette!("{e}"))?;
        std::fs::write(json, text).map_err(|e| miette!("cannot write {}: {e}", json.display()))?;
    }
    Ok(failed == 0)
}

/// The summary table, columns aligned.
pub fn format_table(rows: &[SuiteRow]) -> String {
    let header = [
        "program",
        "shape",
        "scheduler",
        "status",
        "compile ms",
        "run ms",
        "max error",
    ];
    let cells: Vec<[String; 7]> = rows
        .iter()
        .map(|r| {
            [
                r.program.clone(),
                r.shape.clone(),
                r.scheduler.clone(),
                r.status.clone(),
                format!("{:.1}", r.compile_ms),
                format!("{:.3}", r.run_ms),
                format!("{:.2e}", r.max_abs_err),
            ]
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for c in &cells {
        for (w, s) in widths.iter_mut().zip(c.iter()) {
            *w = (*w).max(s.chars().count());
        }
    }
    let line = |cols: Vec<&str>| -> String {
        let mut s = String::new();
        for (i, (c, w)) in cols.iter().zip(&widths).enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            s.push_str(&format!("{c:<w$}"));
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(header.to_vec());
    for c in &cells {
        out.push_str(&line(c.iter().map(String::as_str).collect()));
    }
    for r in rows.iter().filter(|r| r.status != "ok") {
        out.push_str(&format!(
            "{} {} [{}]: {} {}\n",
            r.status, r.program, r.shape, r.scheduler, r.detail
        ));
    }
    out
}
