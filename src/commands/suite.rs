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
//! Each case × shape × scheduler (a run, named by its key, [`job_key`]) runs `polyc run …
//! --check` in its own process (so a crash in generated code fails one run, not the
//! suite), `--jobs` at a time, with a progress bar. The summary table lists program,
//! shape, scheduler, status, compile ms, run ms and max error.
//!
//! `--shard i/n` runs one part of the runs, cut by [`crate::pipeline::shard`] from each run's
//! estimated cost ([`estimated_cost_us`]: statements and statement instances of the
//! polyhedral model at the run's shape). `--json OUT` writes a [`ShardResult`]: the
//! suite's hash ([`suite_hash`]), the shard, polyc's version, the target, the host and
//! every run; `polyc suite merge` ([`crate::commands::merge`]) combines the shards' files.
//!
//! A SIGINT or SIGTERM ([`crate::commands::signals`]) stops the runs in progress and starts no more;
//! the table, the summary and the result file then hold the runs that finished, marked
//! partial ([`ShardResult::partial`], [`summary_line`]). A run whose process dies from a
//! signal (SIGKILL, a crash) is a failed run naming the signal.

use crate::commands::run::RunReport;
use crate::pipeline::host::Host;
use crate::pipeline::shard::Shard;
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
    /// The target every case runs on (`--target` overrides it; default `cpu`).
    #[serde(default)]
    pub target: Option<String>,
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
    /// Dynamic sizes (`dynamic: {T: 1..128}` or `{T: "{1,5,24}"}`): each run compiles the
    /// program once with `--dynamic` and runs and checks it at every size of `samples`.
    #[serde(default)]
    pub dynamic: BTreeMap<String, serde_yaml::Value>,
    /// The run-time values of the one dynamic size (with `dynamic`).
    #[serde(default)]
    pub samples: Vec<i64>,
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
            "ok": c.ok(),
            "unwritten": c.unwritten,
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
            "a suite has `name`, optional `schedulers`, and `cases` with `program`, `shapes`, and optional `entry`, `schedulers`, `isl_options`, `dynamic` with `samples` (see the README)",
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

/// The format tag of a shard's result file (`--json`).
pub const RESULT_FORMAT: &str = "polyc-suite-result/1";

/// Estimated cost of one run, in microseconds: the fixed part (starting polyc, building
/// the C with the system compiler).
pub const COST_FIXED_US: u64 = 100_000;
/// Estimated compile time per statement, in microseconds (scheduling, tiling, fusion and
/// promotion grow with the statements: on the smoke suite, 2 statements compile in about
/// 0.4 s and 5 in about 1 s).
pub const COST_STMT_US: u64 = 150_000;
/// Estimated cost per statement instance run by the reference interpreter, in nanoseconds.
pub const COST_INTERP_NS: u64 = 20;
/// Estimated cost per statement instance run as compiled C (the kernel, and the
/// untransformed program when it is the oracle), in nanoseconds.
pub const COST_C_NS: u64 = 1;
/// The interpreter's limit under `--oracle auto` (the default of `polyc run`
/// `--max-interp-instances`): above it the oracle is the untransformed program.
pub const INTERP_LIMIT: u64 = 200_000_000;

/// One run of a suite: a case × shape × scheduler.
#[derive(Clone, Debug)]
pub struct Job {
    /// Position in the suite's order (cases, then shapes, then schedulers).
    pub index: usize,
    /// The run's key, unique in the suite (see [`job_key`]).
    pub key: String,
    /// Program path as written in the suite.
    pub program: String,
    /// The path polyc reads.
    pub program_path: PathBuf,
    /// `--entry`.
    pub entry: Option<String>,
    /// `M=64,N=48,K=32`.
    pub shape: String,
    /// The scheduler.
    pub scheduler: String,
    /// `--isl-option` values.
    pub isl_options: Vec<String>,
    /// Statement instances at this shape, from the polyhedral model (`None` when the
    /// program cannot be modelled; the run then reports why).
    pub instances: Option<u64>,
    /// Statements of the program (`None` as for `instances`).
    pub statements: Option<usize>,
    /// Estimated cost in microseconds (see [`estimated_cost_us`]).
    pub cost_us: u64,
    /// `--dynamic` flags (`T=1..128`).
    pub dynamic: Vec<String>,
    /// `--run-param` flags, one per sample (`T=43`).
    pub run_params: Vec<String>,
}

/// A run's key: `PROGRAM[#ENTRY] SHAPE SCHEDULER[ ISL_OPTIONS]`, e.g.
/// `../../examples/matmul.tc M=64,N=48,K=32 isl`.
pub fn job_key(
    program: &str,
    entry: Option<&str>,
    shape: &str,
    scheduler: &str,
    isl_options: &[String],
) -> String {
    let mut k = program.to_string();
    if let Some(e) = entry {
        k.push('#');
        k.push_str(e);
    }
    k.push(' ');
    k.push_str(if shape.is_empty() { "-" } else { shape });
    k.push(' ');
    k.push_str(scheduler);
    if !isl_options.is_empty() {
        k.push(' ');
        k.push_str(&isl_options.join(","));
    }
    k
}

/// The estimated cost of a run of `statements` statements and `instances` statement
/// instances, in microseconds: [`COST_FIXED_US`], plus [`COST_STMT_US`] per statement,
/// plus the kernel at [`COST_C_NS`] per instance, plus the oracle (the interpreter at
/// [`COST_INTERP_NS`] per instance up to [`INTERP_LIMIT`] instances, the untransformed
/// program at [`COST_C_NS`] per instance above). A program that cannot be modelled costs
/// the fixed part.
pub fn estimated_cost_us(model: Option<(u64, usize)>) -> u64 {
    let Some((n, statements)) = model else {
        return COST_FIXED_US;
    };
    let oracle_ns = if n <= INTERP_LIMIT {
        n.saturating_mul(COST_INTERP_NS)
    } else {
        n.saturating_mul(COST_C_NS)
    };
    let ns = n.saturating_mul(COST_C_NS).saturating_add(oracle_ns);
    COST_FIXED_US
        .saturating_add(COST_STMT_US.saturating_mul(statements as u64))
        .saturating_add(ns / 1000)
}

/// Statement instances and statements of `program` (its `entry`) at `shape`, exactly:
/// the points of every statement's iteration domain, counted by
/// [`polyhedral::interp::try_count_instances`] (the innermost loops whose bounds use only
/// outer iterators are multiplied as a box, the rest enumerated; a GEMM costs three
/// multiplications, where isl's point count would scan 10⁹ points of a 1024³ one). An
/// error when the program does not compile, or a size is unknown or unbound.
pub fn count_model_instances(
    source: &SourceFile,
    entry: Option<&str>,
    shape: &BTreeMap<String, i64>,
) -> Result<(u64, usize)> {
    let program = polyhedral::lang::compile(source, entry)?;
    let given: Vec<(String, i64)> = shape.iter().map(|(k, v)| (k.clone(), *v)).collect();
    let values = crate::pipeline::stages::bind_params(&program, &given)?;
    let sizes: Option<Vec<i64>> = values.into_iter().collect();
    let sizes = sizes.ok_or_else(|| miette!("some sizes are not bound"))?;
    let n = polyhedral::interp::try_count_instances(&program, &sizes)?;
    Ok((n, program.stmts.len()))
}

/// Every run of the suite, in the suite's order, with keys and estimated costs. Two runs
/// with the same key are an error.
pub fn suite_jobs(path: &Path, suite: &SuiteFile) -> Result<Vec<Job>> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut jobs: Vec<Job> = Vec::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut sources: BTreeMap<PathBuf, Option<SourceFile>> = BTreeMap::new();
    for (ci, case) in suite.cases.iter().enumerate() {
        let program_path = dir.join(&case.program);
        let source = sources
            .entry(program_path.clone())
            .or_insert_with(|| SourceFile::read(&program_path.display().to_string()).ok())
            .clone();
        let schedulers = case.schedulers.clone().unwrap_or(suite.schedulers.clone());
        let (dynamic, run_params) = dynamic_flags(path, ci, case)?;
        for shape in &case.shapes {
            let shape_text: Vec<String> = shape.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let mut shape_text = shape_text.join(",");
            if !dynamic.is_empty() {
                if !shape_text.is_empty() {
                    shape_text.push(' ');
                }
                shape_text.push_str(&format!(
                    "dynamic {} at {}",
                    dynamic.join(" "),
                    case.samples
                        .iter()
                        .map(|v| v.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                ));
            }
            let model = source
                .as_ref()
                .and_then(|s| count_model_instances(s, case.entry.as_deref(), shape).ok());
            for s in &schedulers {
                let key = job_key(
                    &case.program,
                    case.entry.as_deref(),
                    &shape_text,
                    s,
                    &case.isl_options,
                );
                if let Some(other) = seen.insert(key.clone(), ci) {
                    let which = if other == ci {
                        format!("case {} runs `{key}` twice", ci + 1)
                    } else {
                        format!("cases {} and {} both run `{key}`", other + 1, ci + 1)
                    };
                    return Err(miette!(
                        help = "give each program, entry, shape and scheduler once (isl_options tell otherwise equal runs apart)",
                        "{}: {which}",
                        path.display()
                    ));
                }
                jobs.push(Job {
                    index: jobs.len(),
                    key,
                    program: case.program.clone(),
                    program_path: program_path.clone(),
                    entry: case.entry.clone(),
                    shape: shape_text.clone(),
                    scheduler: s.clone(),
                    isl_options: case.isl_options.clone(),
                    instances: model.map(|m| m.0),
                    statements: model.map(|m| m.1),
                    cost_us: estimated_cost_us(model),
                    dynamic: dynamic.clone(),
                    run_params: run_params.clone(),
                });
            }
        }
    }
    Ok(jobs)
}

/// The `--dynamic` and `--run-param` flags of case `ci` (empty without `dynamic`).
/// Errors: samples without a dynamic size, a dynamic size without samples, several dynamic
/// sizes (samples are values of one size), a value that is not a range or a set.
fn dynamic_flags(path: &Path, ci: usize, case: &SuiteCase) -> Result<(Vec<String>, Vec<String>)> {
    let where_ = format!("{}: case {} (`{}`)", path.display(), ci + 1, case.program);
    if case.dynamic.is_empty() {
        if !case.samples.is_empty() {
            return Err(miette!(
                help = "add `dynamic: {T: 1..128}` naming the size the samples are values of",
                "{where_} has `samples` but no `dynamic` size"
            ));
        }
        return Ok((Vec::new(), Vec::new()));
    }
    if case.dynamic.len() != 1 {
        return Err(miette!(
            help = "give one dynamic size per case; bind the others in `shapes`",
            "{where_} has {} dynamic sizes, but `samples` are values of one",
            case.dynamic.len()
        ));
    }
    if case.samples.is_empty() {
        return Err(miette!(
            help = "add the run-time sizes to check, e.g. samples: [1, 5, 24, 43, 53, 62, 81, 100, 119, 128]",
            "{where_} has a dynamic size but no `samples`"
        ));
    }
    let mut dynamic = Vec::new();
    let mut run_params = Vec::new();
    for (name, value) in &case.dynamic {
        let text = match value {
            serde_yaml::Value::String(s) => s.clone(),
            serde_yaml::Value::Sequence(v) => format!(
                "{{{}}}",
                v.iter()
                    .map(|x| x
                        .as_i64()
                        .map(|i| i.to_string())
                        .unwrap_or_else(|| "?".into()))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            serde_yaml::Value::Number(n) => n.to_string(),
            _ => String::new(),
        };
        let flag = format!("{name}={text}");
        crate::pipeline::options::parse_dynamic(std::slice::from_ref(&flag))
            .map_err(|e| miette!(help = "write the values as LO..HI or a list, e.g. dynamic: {{T: 1..128}} or dynamic: {{T: [1, 5, 24]}}", "{where_}: {e}"))?;
        dynamic.push(flag);
        run_params.extend(case.samples.iter().map(|v| format!("{name}={v}")));
    }
    Ok((dynamic, run_params))
}

/// The suite's hash: SHA-256, in hex, of the suite file's bytes followed by, for every
/// program the suite names (in order of first appearance), its path as written and its
/// bytes. Shards agree on it exactly when they ran the same suite over the same programs,
/// wherever the checkout lives.
pub fn suite_hash(path: &Path, suite: &SuiteFile) -> Result<String> {
    use sha2::{Digest, Sha256};
    let read = |p: &Path| std::fs::read(p).map_err(|e| miette!("cannot read {}: {e}", p.display()));
    let mut h = Sha256::new();
    h.update(b"polyc-suite\0");
    let bytes = read(path)?;
    h.update((bytes.len() as u64).to_le_bytes());
    h.update(&bytes);
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut done: Vec<&str> = Vec::new();
    for case in &suite.cases {
        if done.contains(&case.program.as_str()) {
            continue;
        }
        done.push(&case.program);
        let bytes = read(&dir.join(&case.program))?;
        h.update((case.program.len() as u64).to_le_bytes());
        h.update(case.program.as_bytes());
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(&bytes);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// What a result file says about its suite.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SuiteInfo {
    /// The suite's `name`.
    pub name: String,
    /// The suite file as given on the command line.
    pub file: String,
    /// [`suite_hash`].
    pub hash: String,
    /// Runs in the whole suite (all shards).
    pub runs: usize,
}

/// The result of one run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SuiteRow {
    /// Position in the suite's order.
    pub index: usize,
    /// The run's key ([`job_key`]).
    pub key: String,
    /// Program path as written in the suite.
    pub program: String,
    /// `--entry`, if the suite gives one.
    #[serde(default)]
    pub entry: Option<String>,
    /// `M=64,N=48,K=32`.
    pub shape: String,
    /// Scheduler.
    pub scheduler: String,
    /// Statement instances from the polyhedral model.
    #[serde(default)]
    pub instances: Option<u64>,
    /// The estimated cost the shards were balanced by, in microseconds.
    #[serde(default)]
    pub estimated_us: u64,
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

/// A shard's result file (`polyc suite FILE --shard i/n --json OUT`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ShardResult {
    /// [`RESULT_FORMAT`].
    pub format: String,
    /// The suite.
    pub suite: SuiteInfo,
    /// Which part (`1/1` for a whole suite).
    pub shard: Shard,
    /// polyc's version.
    pub polyc: String,
    /// The target description's name.
    pub target: String,
    /// Where it ran.
    pub host: Host,
    /// Wall time of the shard in ms.
    pub wall_ms: f64,
    /// True when a signal (SIGINT, SIGTERM) stopped the shard before all its runs
    /// finished: `cases` then holds only the runs that finished, and `polyc suite merge`
    /// refuses the file.
    #[serde(default)]
    pub partial: bool,
    /// The signal that stopped a partial shard (`SIGINT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted_by: Option<String>,
    /// Runs in the shard, finished or not (0 in files of older polycs).
    #[serde(default)]
    pub shard_runs: usize,
    /// The shard's runs, in the suite's order.
    pub cases: Vec<SuiteRow>,
}

impl Serialize for Shard {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Shard {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Shard, D::Error> {
        let s = String::deserialize(d)?;
        Shard::parse("shard", &s).map_err(|e| serde::de::Error::custom(e.to_string()))
    }
}

/// Runs one job in its own `polyc run` process (its own process group, so that an
/// interrupted suite stops it and its C compiler); `None` when the suite was interrupted
/// before the run finished (it was not started, or the signal stopped it).
fn run_job(exe: &Path, job: &Job, target: &str, via: Option<&str>) -> Option<SuiteRow> {
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("run").arg(&job.program_path);
    cmd.arg("--target").arg(target);
    if let Some(v) = via {
        cmd.arg("--via").arg(v);
    }
    if let Some(e) = &job.entry {
        cmd.arg("--entry").arg(e);
    }
    let bound = job.shape.split(' ').next().unwrap_or("");
    if !bound.is_empty() && bound != "dynamic" {
        cmd.arg("--param").arg(bound);
    }
    for d in &job.dynamic {
        cmd.arg("--dynamic").arg(d);
    }
    for r in &job.run_params {
        cmd.arg("--run-param").arg(r);
    }
    cmd.arg("--scheduler").arg(&job.scheduler);
    for o in &job.isl_options {
        cmd.arg("--isl-option").arg(o);
    }
    cmd.args(["--check", "--verify-passes", "--result-json"]);
    let mut row = SuiteRow {
        index: job.index,
        key: job.key.clone(),
        program: job.program.clone(),
        entry: job.entry.clone(),
        shape: job.shape.clone(),
        scheduler: job.scheduler.clone(),
        instances: job.instances,
        estimated_us: job.cost_us,
        status: "ERROR".into(),
        compile_ms: 0.0,
        run_ms: 0.0,
        max_abs_err: 0.0,
        detail: String::new(),
    };
    let out = match targets::scratch::output_in_group(&mut cmd) {
        Ok(o) => o,
        Err(_) if crate::commands::signals::received().is_some() => return None,
        Err(e) => {
            row.detail = format!("cannot start polyc: {e}");
            return Some(row);
        }
    };
    let stopped = stopped_by(&out.status);
    if let Some(signal) = stopped {
        if crate::commands::signals::received().is_some() {
            return None;
        }
        // A child killed outright (SIGKILL, a crash) could not remove its folders.
        if out.status.code().is_none() {
            targets::scratch::sweep_stale();
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        row.detail = format!(
            "stopped by {}{}: {}",
            crate::commands::signals::name(signal),
            out.status
                .code()
                .map_or(String::new(), |c| format!(" (exit {c})")),
            stderr.trim()
        );
        return Some(row);
    }
    fill_row(&mut row, &out);
    Some(row)
}

/// The signal that stopped a child: it died from it, or exited 130 or 143 (a polyc that
/// handled SIGINT or SIGTERM).
fn stopped_by(status: &std::process::ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    match (status.signal(), status.code()) {
        (Some(s), _) => Some(s),
        (None, Some(130)) => Some(libc::SIGINT),
        (None, Some(143)) => Some(libc::SIGTERM),
        _ => None,
    }
}

/// Fills `row` from a finished `polyc run --result-json`.
fn fill_row(row: &mut SuiteRow, out: &std::process::Output) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    // One line per run; with several (`--run-param` samples) the first failing one, with
    // the run times summed and the largest error.
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .collect();
    let parsed = if lines.len() > 1 {
        let mut v = lines
            .iter()
            .find(|l| l["status"].as_str() != Some("ok"))
            .unwrap_or(&lines[0])
            .clone();
        let sum: f64 = lines.iter().filter_map(|l| l["run_ms"].as_f64()).sum();
        let err = lines
            .iter()
            .filter_map(|l| l["max_abs_err"].as_f64())
            .fold(0.0, f64::max);
        v["run_ms"] = serde_json::json!(sum);
        v["max_abs_err"] = serde_json::json!(err);
        Some(v)
    } else {
        lines.into_iter().next_back()
    };
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
}

/// How `polyc suite FILE` runs.
#[derive(Clone, Debug)]
pub struct SuiteRunOptions {
    /// `--jobs`: runs at once (default: the number of cores).
    pub jobs: Option<usize>,
    /// `--json OUT`: the result file.
    pub json: Option<PathBuf>,
    /// `--shard i/n`.
    pub shard: Shard,
    /// `--target NAME|FILE`: overrides the suite file's `target`.
    pub target: Option<String>,
    /// `--via WAY`: how every run runs its kernel (`polyc run --via`), for a target that
    /// runs kernels more than one way (Gemmini: `model` or `c`).
    pub via: Option<String>,
}

/// The target description's name for `--target NAME|FILE` (the result files carry it).
pub fn target_name(target: &str) -> Result<String> {
    Ok(targets::desc::TargetDesc::resolve(target)?.name)
}

/// Runs a suite (its shard `opts.shard`); returns true when every run passed. Prints the
/// summary table; writes the result file when asked.
pub fn run_suite(path: &Path, opts: &SuiteRunOptions) -> Result<bool> {
    let suite = load_suite(path)?;
    let target = opts
        .target
        .clone()
        .or_else(|| suite.target.clone())
        .unwrap_or_else(|| "cpu".into());
    // A relative description path in the suite file is relative to the suite file.
    let target = match (&opts.target, &suite.target) {
        (None, Some(t)) if t.contains('/') => path
            .parent()
            .unwrap_or(Path::new("."))
            .join(t)
            .display()
            .to_string(),
        _ => target,
    };
    target_name(&target)?;
    if let Some(via) = &opts.via {
        let desc = targets::desc::TargetDesc::resolve(&target)?;
        crate::pipeline::driver::check_via(
            targets::target_for(desc, targets::Device::default())?.as_ref(),
            via,
        )?;
    }
    let exe = std::env::current_exe().map_err(|e| miette!("cannot find polyc itself: {e}"))?;
    let all = suite_jobs(path, &suite)?;
    let hash = suite_hash(path, &suite)?;
    let items: Vec<(String, u64)> = all.iter().map(|j| (j.key.clone(), j.cost_us)).collect();
    let picked = crate::pipeline::shard::select(&items, opts.shard);
    let jobs: Vec<Job> = picked.iter().map(|&i| all[i].clone()).collect();
    let n_jobs = opts
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let shard_text = if opts.shard == Shard::WHOLE {
        String::new()
    } else {
        let est: u64 = jobs.iter().map(|j| j.cost_us).sum();
        let total: u64 = all.iter().map(|j| j.cost_us).sum();
        format!(
            ", shard {} ({} of {} runs, estimated {:.1} of {:.1} s)",
            opts.shard,
            jobs.len(),
            all.len(),
            est as f64 / 1e6,
            total as f64 / 1e6
        )
    };
    eprintln!(
        "polyc suite {}: {} runs, {} at a time{shard_text}",
        suite.name,
        jobs.len(),
        n_jobs
    );
    let start = std::time::Instant::now();
    let shard_runs = jobs.len();
    let rows = {
        let _graceful = crate::commands::signals::Graceful::new();
        run_jobs(&exe, jobs, n_jobs, &target, opts.via.as_deref())?
    };
    // The folders of children that were killed (they could not remove them).
    targets::scratch::sweep_stale();
    let interrupted_by = crate::commands::signals::received()
        .filter(|_| rows.len() < shard_runs)
        .map(crate::commands::signals::name);
    let result = ShardResult {
        format: RESULT_FORMAT.into(),
        suite: SuiteInfo {
            name: suite.name.clone(),
            file: path.display().to_string(),
            hash,
            runs: all.len(),
        },
        shard: opts.shard,
        polyc: env!("CARGO_PKG_VERSION").into(),
        target: target_name(&target)?,
        host: Host::this(),
        wall_ms: start.elapsed().as_secs_f64() * 1e3,
        partial: interrupted_by.is_some(),
        interrupted_by,
        shard_runs,
        cases: rows,
    };
    print!("{}", format_table(&result.cases));
    println!("{}", summary_line(&result));
    if let Some(json) = &opts.json {
        write_json(json, &result)?;
    }
    Ok(result.cases.iter().all(|r| r.status == "ok"))
}

/// The summary's last line: `suite NAME[ (shard i/n)]: P passed, F failed`, and for a
/// partial result what stopped it and how many runs finished.
pub fn summary_line(r: &ShardResult) -> String {
    let failed = r.cases.iter().filter(|c| c.status != "ok").count();
    let shard_note = if r.shard == Shard::WHOLE {
        String::new()
    } else {
        format!(" (shard {})", r.shard)
    };
    let partial = match (&r.interrupted_by, r.partial) {
        (Some(s), true) => format!(
            " (partial: stopped by {s}; {} of {} runs finished, {} not run)",
            r.cases.len(),
            r.shard_runs,
            r.shard_runs.saturating_sub(r.cases.len())
        ),
        (None, true) => " (partial)".into(),
        _ => String::new(),
    };
    format!(
        "suite {}{shard_note}: {} passed, {} failed{partial}",
        r.suite.name,
        r.cases.len() - failed,
        failed
    )
}

/// Writes `value` as pretty JSON to `path`.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(|e| miette!("{e}"))?;
    polyhedral::files::write_output("--json", path, (text + "\n").as_bytes())
}

/// Runs `jobs`, `n` at a time, each in its own process, with a progress bar; rows come
/// back in the jobs' order. After a SIGINT or SIGTERM ([`crate::commands::signals`]) no run starts,
/// and only the runs that finished come back.
fn run_jobs(
    exe: &Path,
    jobs: Vec<Job>,
    n: usize,
    target: &str,
    via: Option<&str>,
) -> Result<Vec<SuiteRow>> {
    let bar = indicatif::ProgressBar::new(jobs.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {elapsed} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let next = Arc::new(AtomicUsize::new(0));
    let rows: Arc<Mutex<Vec<(usize, SuiteRow)>>> = Arc::new(Mutex::new(Vec::new()));
    let jobs = Arc::new(jobs);
    std::thread::scope(|scope| {
        for _ in 0..n {
            let next = next.clone();
            let rows = rows.clone();
            let jobs = jobs.clone();
            let bar = bar.clone();
            scope.spawn(move || loop {
                if crate::commands::signals::received().is_some() {
                    break;
                }
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(job) = jobs.get(i) else { break };
                bar.set_message(format!("{} {}", job.program, job.shape));
                let Some(row) = run_job(exe, job, target, via) else {
                    break;
                };
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
    Ok(rows.into_iter().map(|(_, r)| r).collect())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_entry_shape_scheduler_and_options() {
        assert_eq!(job_key("a.tc", None, "M=2", "isl", &[]), "a.tc M=2 isl");
        assert_eq!(
            job_key("a.tc", Some("f"), "", "ilp", &["x=1".into(), "y=0".into()]),
            "a.tc#f - ilp x=1,y=0"
        );
    }

    #[test]
    fn cost_grows_with_statements_and_instances() {
        assert_eq!(estimated_cost_us(None), COST_FIXED_US);
        // 2 statements, 10^6 instances: 0.1 s + 0.3 s + 1 ms (kernel) + 20 ms (interpreter).
        assert_eq!(
            estimated_cost_us(Some((1_000_000, 2))),
            100_000 + 300_000 + 1_000 + 20_000
        );
        // Above the interpreter's limit the oracle is compiled C.
        let n = INTERP_LIMIT + 1;
        assert_eq!(
            estimated_cost_us(Some((n, 1))),
            100_000 + 150_000 + 2 * n / 1000
        );
    }
}
