//! `polyc suite merge RESULT... [--json OUT] [--baseline FILE] [--threshold PCT]`:
//! combines the result files of a suite's shards (`polyc suite FILE --shard i/n --json
//! OUT`), or of a sharded tile-size search (`--search measure --search-shard i/n
//! --search-json OUT`), into one result.
//!
//! Checks, in this order, each an error (exit 1) that names the files involved:
//! every file is a polyc result of one kind; all ran the same suite (suite hash) or the
//! same search (search hash), with the same polyc version and target, cut into the same
//! number of shards; no shard appears twice; no shard is missing; for a suite, every run
//! of the suite is in exactly one shard. A partial suite result (a shard that SIGINT or
//! SIGTERM stopped: `"partial": true`) is refused, as a shard (before the shard checks)
//! and as a baseline.
//!
//! A suite merge prints one table in the suite's order and the shards' hosts, and exits 3
//! when any run failed. With `--baseline FILE` (a merged result, or the result of a whole,
//! unsharded run) it also lists new failures, fixed runs, runs only in one of the two,
//! and compile and run times of runs that pass in both that moved by more than
//! `--threshold` percent and by more than `--min-ms` ms.
//!
//! A search merge prints every measured point in the model's order and picks the fastest
//! (the model's order breaks ties); `--search-out FILE` writes its tile spec.

use crate::commands::suite::{format_table, write_json, ShardResult, SuiteInfo, SuiteRow};
use crate::pipeline::host::Host;
use crate::pipeline::shard::Shard;
use crate::pipeline::tile_search::{SearchShardResult, SEARCH_RESULT_FORMAT};
use miette::{miette, Result};
use polyhedral::diag::SourceFile;
use polyhedral::ir::Span;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The default `--threshold`: times that moved by more than this many percent are listed.
pub const DEFAULT_THRESHOLD_PCT: f64 = 20.0;
/// The default `--min-ms`: times must also move by more than this many ms.
pub const DEFAULT_MIN_MS: f64 = 1.0;
/// The format tag of a merged suite result.
pub const MERGED_FORMAT: &str = "polyc-suite-merged/1";
/// The format tag of a merged search result.
pub const SEARCH_MERGED_FORMAT: &str = "polyc-search-merged/1";

/// The flags of `polyc suite merge`.
#[derive(Clone, Debug)]
pub struct MergeOptions {
    /// The result files.
    pub files: Vec<PathBuf>,
    /// `--json OUT`.
    pub json: Option<PathBuf>,
    /// `--baseline FILE`.
    pub baseline: Option<PathBuf>,
    /// `--threshold PCT`.
    pub threshold_pct: f64,
    /// `--min-ms MS`.
    pub min_ms: f64,
    /// `--search-out FILE`.
    pub search_out: Option<PathBuf>,
}

/// One shard in a merged result.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MergedShard {
    /// Which part.
    pub shard: Shard,
    /// Its result file.
    pub file: String,
    /// Where it ran.
    pub host: Host,
    /// Its wall time in ms.
    pub wall_ms: f64,
    /// Runs (or points) in it.
    pub runs: usize,
}

/// A merged suite result.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MergedSuite {
    /// [`MERGED_FORMAT`].
    pub format: String,
    /// The suite.
    pub suite: SuiteInfo,
    /// polyc's version.
    pub polyc: String,
    /// The target's name.
    pub target: String,
    /// The shards, in order.
    pub shards: Vec<MergedShard>,
    /// Runs that passed.
    pub passed: usize,
    /// Runs that failed.
    pub failed: usize,
    /// Every run, in the suite's order.
    pub cases: Vec<SuiteRow>,
    /// The diff against `--baseline`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<BaselineDiff>,
}

/// A time that moved against the baseline.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Moved {
    /// The run.
    pub key: String,
    /// `compile` or `run`.
    pub time: String,
    /// Baseline ms.
    pub before_ms: f64,
    /// This result's ms.
    pub after_ms: f64,
    /// Relative change in percent (positive: slower).
    pub change_pct: f64,
}

/// A status change against the baseline.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct StatusChange {
    /// The run.
    pub key: String,
    /// Baseline status.
    pub before: String,
    /// This result's status.
    pub after: String,
}

/// The differences from a baseline.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct BaselineDiff {
    /// The baseline file.
    pub file: String,
    /// `--threshold`.
    pub threshold_pct: f64,
    /// `--min-ms`.
    pub min_ms: f64,
    /// Runs that passed in the baseline and fail now.
    pub new_failures: Vec<StatusChange>,
    /// Runs that failed in the baseline and pass now.
    pub fixed: Vec<StatusChange>,
    /// Times that moved (runs that pass in both).
    pub moved: Vec<Moved>,
    /// Runs not in the baseline.
    pub added: Vec<String>,
    /// Runs only in the baseline.
    pub removed: Vec<String>,
}

fn read_json(path: &Path) -> Result<serde_json::Value> {
    let file = SourceFile::read(&path.display().to_string())?;
    serde_json::from_str(&file.text).map_err(|e| {
        // serde_json's line and column are 1-based; the column counts bytes.
        let line_start: usize = file
            .text
            .split_inclusive('\n')
            .take(e.line().saturating_sub(1))
            .map(str::len)
            .sum();
        let at = (line_start + e.column().saturating_sub(1)).min(file.text.len());
        let end = file.text[at..]
            .chars()
            .next()
            .map_or(at, |c| at + c.len_utf8());
        miette::Report::new(file.error(
            Span::new(at, end),
            format!("not a polyc result file: {e}"),
            "here",
            "give the files `polyc suite --json` or `--search-json` wrote",
        ))
    })
}

fn parse_as<T: for<'de> Deserialize<'de>>(path: &Path, v: serde_json::Value) -> Result<T> {
    serde_json::from_value(v).map_err(|e| {
        miette!(
            help = "the file may come from another polyc version; rerun that shard",
            "{}: not a polyc result file: {e}",
            path.display()
        )
    })
}

/// What every shard of one merge must agree on.
struct Identity<'a> {
    file: &'a Path,
    what: &'static str,
    hash: &'a str,
    polyc: &'a str,
    target: &'a str,
    shard: Shard,
}

fn short(hash: &str) -> &str {
    &hash[..hash.len().min(12)]
}

/// Checks hashes, versions, targets, shard counts, duplicates and missing shards.
fn check_shards(ids: &[Identity]) -> Result<()> {
    let Some(first) = ids.first() else {
        return Err(miette!("polyc suite merge: no result files"));
    };
    let help = "merge the results of one polyc version on one target; rerun the shards that differ";
    for id in &ids[1..] {
        if id.hash != first.hash {
            return Err(miette!(
                help = format!(
                    "the shards ran different {}s (or programs); rerun them from one checkout",
                    first.what
                ),
                "{}: {} hash {} differs from {}'s {}",
                id.file.display(),
                first.what,
                short(id.hash),
                first.file.display(),
                short(first.hash)
            ));
        }
        if id.polyc != first.polyc {
            return Err(miette!(
                help = help,
                "{}: polyc {} differs from {}'s polyc {}",
                id.file.display(),
                id.polyc,
                first.file.display(),
                first.polyc
            ));
        }
        if id.target != first.target {
            return Err(miette!(
                help = help,
                "{}: target `{}` differs from {}'s target `{}`",
                id.file.display(),
                id.target,
                first.file.display(),
                first.target
            ));
        }
        if id.shard.count != first.shard.count {
            return Err(miette!(
                help = "merge the shards of one i/n split",
                "{} is shard {} but {} is shard {}: different splits",
                id.file.display(),
                id.shard,
                first.file.display(),
                first.shard
            ));
        }
    }
    let mut by_index: BTreeMap<usize, &Path> = BTreeMap::new();
    for id in ids {
        if let Some(other) = by_index.insert(id.shard.index, id.file) {
            return Err(miette!(
                help = "give each shard's result once",
                "shard {} appears twice: {} and {}",
                id.shard,
                other.display(),
                id.file.display()
            ));
        }
    }
    let n = first.shard.count;
    let missing: Vec<String> = (1..=n)
        .filter(|i| !by_index.contains_key(i))
        .map(|i| format!("{i}/{n}"))
        .collect();
    match missing.len() {
        0 => Ok(()),
        1 => Err(miette!(
            help = format!(
                "run the {} with --{}shard {} and merge again with its result",
                first.what,
                if first.what == "search" {
                    "search-"
                } else {
                    ""
                },
                missing[0]
            ),
            "shard {} is missing",
            missing[0]
        )),
        _ => Err(miette!(
            help = "run the missing shards and merge again with their results",
            "shards {} are missing",
            missing.join(", ")
        )),
    }
}

/// Runs `polyc suite merge`; returns true when every run passed.
pub fn merge(opts: &MergeOptions) -> Result<bool> {
    for (flag, v) in [
        ("--threshold", opts.threshold_pct),
        ("--min-ms", opts.min_ms),
    ] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(miette!(
                help = "e.g. --threshold 20 --min-ms 1",
                "{flag}: `{v}` is not a number at least 0"
            ));
        }
    }
    let mut values = Vec::new();
    for f in &opts.files {
        values.push((f.clone(), read_json(f)?));
    }
    let format_of =
        |v: &serde_json::Value| v.get("format").and_then(|f| f.as_str()).map(str::to_string);
    let (first_file, first_format) = match values.first() {
        Some((f, v)) => (f.clone(), format_of(v)),
        None => return Err(miette!("polyc suite merge: no result files")),
    };
    for (f, v) in &values {
        let fmt = format_of(v);
        let known = [crate::commands::suite::RESULT_FORMAT, SEARCH_RESULT_FORMAT];
        if !fmt.as_deref().is_some_and(|x| known.contains(&x)) {
            return Err(miette!(
                help = "give the files `polyc suite --json` or `--search-json` wrote (a merged result cannot be merged again)",
                "{}: not a shard result (its format is {}, expected {} or {})",
                f.display(),
                fmt.map_or("missing".to_string(), |x| format!("`{x}`")),
                known[0],
                known[1]
            ));
        }
        if fmt != first_format {
            return Err(miette!(
                help = "merge suite results and search results separately",
                "{} and {} are results of different kinds ({} and {})",
                first_file.display(),
                f.display(),
                first_format.clone().unwrap_or_default(),
                fmt.unwrap_or_default()
            ));
        }
    }
    if first_format.as_deref() == Some(SEARCH_RESULT_FORMAT) {
        let mut shards = Vec::new();
        for (f, v) in values {
            shards.push((f.clone(), parse_as::<SearchShardResult>(&f, v)?));
        }
        merge_search(opts, &shards)?;
        return Ok(true);
    }
    let mut shards = Vec::new();
    for (f, v) in values {
        shards.push((f.clone(), parse_as::<ShardResult>(&f, v)?));
    }
    merge_suite(opts, shards)
}

/// An error for a partial result (a shard a signal stopped), which no merge or baseline
/// takes: its missing runs would read as runs that were never in the suite.
fn refuse_partial(path: &Path, r: &ShardResult, role: &str) -> Result<()> {
    if !r.partial {
        return Ok(());
    }
    Err(miette!(
        help = format!(
            "rerun the {} and give its complete result",
            if r.shard == Shard::WHOLE {
                "suite".to_string()
            } else {
                format!("shard with --shard {}", r.shard)
            }
        ),
        "{role}{} is a partial result: shard {} was stopped by {} after {} of {} runs",
        path.display(),
        r.shard,
        r.interrupted_by.as_deref().unwrap_or("a signal"),
        r.cases.len(),
        if r.shard_runs > 0 {
            r.shard_runs.to_string()
        } else {
            "its".into()
        }
    ))
}

fn merge_suite(opts: &MergeOptions, mut shards: Vec<(PathBuf, ShardResult)>) -> Result<bool> {
    for (f, r) in &shards {
        refuse_partial(f, r, "")?;
    }
    let ids: Vec<Identity> = shards
        .iter()
        .map(|(f, r)| Identity {
            file: f,
            what: "suite",
            hash: &r.suite.hash,
            polyc: &r.polyc,
            target: &r.target,
            shard: r.shard,
        })
        .collect();
    check_shards(&ids)?;
    shards.sort_by_key(|(_, r)| r.shard.index);
    let total = shards[0].1.suite.runs;
    let mut slots: Vec<Option<(SuiteRow, Shard)>> = vec![None; total];
    for (f, r) in &shards {
        for row in &r.cases {
            let Some(slot) = slots.get_mut(row.index) else {
                return Err(miette!(
                    "{}: run {} (`{}`) is outside the suite's {total} runs",
                    f.display(),
                    row.index,
                    row.key
                ));
            };
            if let Some((other, s)) = slot {
                return Err(miette!(
                    help = "the shards were cut differently; rerun them with one polyc",
                    "run `{}` is in shard {} and in shard {}",
                    other.key,
                    s,
                    r.shard
                ));
            }
            *slot = Some((row.clone(), r.shard));
        }
    }
    if let Some(i) = slots.iter().position(Option::is_none) {
        return Err(miette!(
            help = "the shards were cut differently; rerun them with one polyc",
            "run {} of the suite is in no shard",
            i + 1
        ));
    }
    let rows: Vec<SuiteRow> = slots.into_iter().flatten().map(|(r, _)| r).collect();
    let failed = rows.iter().filter(|r| r.status != "ok").count();
    let suite = shards[0].1.suite.clone();
    print!("{}", format_table(&rows));
    for (f, r) in &shards {
        println!(
            "shard {}: {} runs in {:.1} s on {} ({}, {} cores) [{}]",
            r.shard,
            r.cases.len(),
            r.wall_ms / 1e3,
            r.host.hostname,
            r.host.cpu,
            r.host.cores,
            f.display()
        );
    }
    println!(
        "suite {}: {} shards merged: {} passed, {} failed",
        suite.name,
        shards.len(),
        rows.len() - failed,
        failed
    );
    let baseline = match &opts.baseline {
        Some(b) => {
            let base = read_baseline(b)?;
            let diff = diff_baseline(b, &base, &rows, opts.threshold_pct, opts.min_ms);
            print!("{}", format_diff(&diff));
            Some(diff)
        }
        None => None,
    };
    if let Some(out) = &opts.json {
        let merged = MergedSuite {
            format: MERGED_FORMAT.into(),
            suite,
            polyc: shards[0].1.polyc.clone(),
            target: shards[0].1.target.clone(),
            shards: shards
                .iter()
                .map(|(f, r)| MergedShard {
                    shard: r.shard,
                    file: f.display().to_string(),
                    host: r.host.clone(),
                    wall_ms: r.wall_ms,
                    runs: r.cases.len(),
                })
                .collect(),
            passed: rows.len() - failed,
            failed,
            cases: rows,
            baseline,
        };
        write_json(out, &merged)?;
    }
    Ok(failed == 0)
}

/// The runs of a baseline: a merged result, or the result of a whole suite (shard 1/1).
pub fn read_baseline(path: &Path) -> Result<Vec<SuiteRow>> {
    let v = read_json(path)?;
    let format = v.get("format").and_then(|f| f.as_str()).unwrap_or("");
    if format == MERGED_FORMAT {
        return Ok(parse_as::<MergedSuite>(path, v)?.cases);
    }
    if format == crate::commands::suite::RESULT_FORMAT {
        let r = parse_as::<ShardResult>(path, v)?;
        refuse_partial(path, &r, "--baseline ")?;
        if r.shard != Shard::WHOLE {
            return Err(miette!(
                help =
                    "give a merged result (polyc suite merge --json OUT) or a whole suite's result",
                "--baseline {}: it holds only shard {} of the suite",
                path.display(),
                r.shard
            ));
        }
        return Ok(r.cases);
    }
    Err(miette!(
        help = "give a merged result (polyc suite merge --json OUT) or the result of a whole suite (polyc suite FILE --json OUT)",
        "--baseline {}: not a suite result (format `{format}`)",
        path.display()
    ))
}

/// The differences between `rows` and a baseline's runs, matched by key.
pub fn diff_baseline(
    file: &Path,
    base: &[SuiteRow],
    rows: &[SuiteRow],
    threshold_pct: f64,
    min_ms: f64,
) -> BaselineDiff {
    let before: BTreeMap<&str, &SuiteRow> = base.iter().map(|r| (r.key.as_str(), r)).collect();
    let now: BTreeMap<&str, &SuiteRow> = rows.iter().map(|r| (r.key.as_str(), r)).collect();
    let mut d = BaselineDiff {
        file: file.display().to_string(),
        threshold_pct,
        min_ms,
        new_failures: Vec::new(),
        fixed: Vec::new(),
        moved: Vec::new(),
        added: Vec::new(),
        removed: base
            .iter()
            .filter(|r| !now.contains_key(r.key.as_str()))
            .map(|r| r.key.clone())
            .collect(),
    };
    for r in rows {
        let Some(b) = before.get(r.key.as_str()) else {
            d.added.push(r.key.clone());
            continue;
        };
        let change = StatusChange {
            key: r.key.clone(),
            before: b.status.clone(),
            after: r.status.clone(),
        };
        match (b.status == "ok", r.status == "ok") {
            (true, false) => d.new_failures.push(change),
            (false, true) => d.fixed.push(change),
            (true, true) => {
                for (time, old, new) in [
                    ("compile", b.compile_ms, r.compile_ms),
                    ("run", b.run_ms, r.run_ms),
                ] {
                    let delta = new - old;
                    if delta.abs() > min_ms
                        && old > 0.0
                        && delta.abs() > old * threshold_pct / 100.0
                    {
                        d.moved.push(Moved {
                            key: r.key.clone(),
                            time: time.into(),
                            before_ms: old,
                            after_ms: new,
                            change_pct: delta / old * 100.0,
                        });
                    }
                }
            }
            (false, false) => {}
        }
    }
    d
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The diff as text: a summary line, then one line per difference.
pub fn format_diff(d: &BaselineDiff) -> String {
    let mut out = format!(
        "baseline {}: {}, {} fixed, {} by more than {}% and {} ms, {} not in the baseline, {} only in the baseline\n",
        d.file,
        plural(d.new_failures.len(), "new failure", "new failures"),
        d.fixed.len(),
        plural(d.moved.len(), "time moved", "times moved"),
        d.threshold_pct,
        d.min_ms,
        plural(d.added.len(), "run", "runs"),
        plural(d.removed.len(), "run", "runs"),
    );
    for c in &d.new_failures {
        out.push_str(&format!(
            "  new failure: {}: {} -> {}\n",
            c.key, c.before, c.after
        ));
    }
    for c in &d.fixed {
        out.push_str(&format!(
            "  fixed: {}: {} -> {}\n",
            c.key, c.before, c.after
        ));
    }
    for m in &d.moved {
        out.push_str(&format!(
            "  {} {}: {}: {:.3} -> {:.3} ms ({:+.1}%)\n",
            m.time,
            if m.after_ms > m.before_ms {
                "slower"
            } else {
                "faster"
            },
            m.key,
            m.before_ms,
            m.after_ms,
            m.change_pct
        ));
    }
    for k in &d.added {
        out.push_str(&format!("  not in the baseline: {k}\n"));
    }
    for k in &d.removed {
        out.push_str(&format!("  only in the baseline: {k}\n"));
    }
    out
}

/// A merged search.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MergedSearch {
    /// [`SEARCH_MERGED_FORMAT`].
    pub format: String,
    /// The search (from the first shard).
    pub search: crate::pipeline::tile_search::SearchInfo,
    /// polyc's version.
    pub polyc: String,
    /// The target's name.
    pub target: String,
    /// The shards.
    pub shards: Vec<MergedShard>,
    /// Every measured point, in the model's order.
    pub points: Vec<crate::pipeline::tile_search::MeasuredPoint>,
    /// The fastest point's rank.
    pub picked: usize,
}

fn merge_search(opts: &MergeOptions, shards: &[(PathBuf, SearchShardResult)]) -> Result<()> {
    let ids: Vec<Identity> = shards
        .iter()
        .map(|(f, r)| Identity {
            file: f,
            what: "search",
            hash: &r.search.hash,
            polyc: &r.polyc,
            target: &r.target,
            shard: r.shard,
        })
        .collect();
    check_shards(&ids)?;
    if opts.baseline.is_some() {
        return Err(miette!(
            help = "--baseline diffs suite results",
            "--baseline: these are search results"
        ));
    }
    let mut points: Vec<(crate::pipeline::tile_search::MeasuredPoint, Shard)> = shards
        .iter()
        .flat_map(|(_, r)| r.points.iter().map(move |p| (p.clone(), r.shard)))
        .collect();
    points.sort_by_key(|(p, _)| p.rank);
    let info = &shards[0].1.search;
    if points.len() != info.measured {
        return Err(miette!(
            help = "the shards were cut differently; rerun them with one polyc",
            "the shards hold {} measured points, but the search measures {}",
            points.len(),
            info.measured
        ));
    }
    let best = points
        .iter()
        .min_by(|(a, _), (b, _)| a.ms.total_cmp(&b.ms).then(a.rank.cmp(&b.rank)))
        .map(|(p, _)| p.clone())
        .ok_or_else(|| miette!("the shards measured no point"))?;
    println!(
        "search on {} ({}): {} points measured in {} shards",
        info.program,
        info.params,
        points.len(),
        shards.len()
    );
    let w = points.iter().map(|(p, _)| p.label.len()).max().unwrap_or(5);
    println!("{:<5} {:<w$} {:>10}  shard", "rank", "point", "ms");
    for (p, s) in &points {
        println!("#{:<4} {:<w$} {:>10.3}  {s}", p.rank, p.label, p.ms);
    }
    println!("picked #{} {}: {:.3} ms", best.rank, best.label, best.ms);
    if let Some(out) = &opts.search_out {
        let text = format!(
            "# tile spec resolved by the tile-size search\n# found by `polyc suite merge` from {} shards of the search on {} ({}): fastest of {} measured points, {:.3} ms\n{}",
            shards.len(),
            info.program,
            info.params,
            points.len(),
            best.ms,
            best.spec
        );
        polyhedral::files::write_output("--search-out", out, text.as_bytes())?;
    }
    if let Some(out) = &opts.json {
        let merged = MergedSearch {
            format: SEARCH_MERGED_FORMAT.into(),
            search: info.clone(),
            polyc: shards[0].1.polyc.clone(),
            target: shards[0].1.target.clone(),
            shards: shards
                .iter()
                .map(|(f, r)| MergedShard {
                    shard: r.shard,
                    file: f.display().to_string(),
                    host: r.host.clone(),
                    wall_ms: r.wall_ms,
                    runs: r.points.len(),
                })
                .collect(),
            picked: best.rank,
            points: points.into_iter().map(|(p, _)| p).collect(),
        };
        write_json(out, &merged)?;
    }
    Ok(())
}
