//! `polyc schedule-report`: isl's scheduler and polyc's ILP scheduler side by side.
//!
//! For every case of a suite (its first shape), both schedulers run on the same model and
//! the table gives, per scheduler, the deepest permutable band, the number of fused groups
//! (outermost loop nests), the coincident members of each band (depth-first), and the
//! scheduling time.

use crate::pipeline::driver::compile;
use crate::pipeline::options::CompileOptions;
use crate::pipeline::stages::Mode;
use miette::Result;
use polyhedral::ilp::schedule_stats;
use polyhedral::isl::Ctx;
use polyhedral::sched::SchedulerKind;
use std::path::Path;

/// One scheduler's figures for one program.
struct Figures {
    depth: usize,
    groups: usize,
    coincident: String,
    ms: f64,
}

fn figures(opts: &CompileOptions) -> Result<Figures> {
    let compiled = compile(opts, Mode::ScheduleOnly)?;
    let ms = compiled
        .timings
        .iter()
        .find(|t| t.step == "schedule")
        .map_or(0.0, |t| t.ms);
    let ctx = Ctx::new();
    let schedule = compiled.stage("scheduled")?.tree.to_isl(&ctx)?;
    let stats = schedule_stats(&schedule)?;
    let coincident: Vec<String> = stats
        .coincident_dims
        .iter()
        .map(|c| c.to_string())
        .collect();
    Ok(Figures {
        depth: stats.max_permutable_depth,
        groups: stats.fused_groups,
        coincident: format!("[{}]", coincident.join(",")),
        ms,
    })
}

/// The report for every case of the suite at `path`, as an aligned table.
pub fn schedule_report(path: &Path) -> Result<String> {
    let suite = crate::commands::suite::load_suite(path)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut rows: Vec<[String; 9]> = Vec::new();
    let mut not_deeper = Vec::new();
    for case in &suite.cases {
        let base = CompileOptions {
            entry: case.entry.clone(),
            params: case.shapes[0]
                .iter()
                .map(|(k, v)| (k.clone(), *v))
                .collect(),
            ..CompileOptions::for_program(dir.join(&case.program).display().to_string())
        };
        let isl = figures(&CompileOptions {
            scheduler: SchedulerKind::Isl,
            ..base.clone()
        })?;
        let ilp = figures(&CompileOptions {
            scheduler: SchedulerKind::Ilp,
            ..base
        })?;
        let name = Path::new(&case.program)
            .file_stem()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        if ilp.depth < isl.depth {
            not_deeper.push(name.clone());
        }
        rows.push([
            name,
            isl.depth.to_string(),
            ilp.depth.to_string(),
            isl.groups.to_string(),
            ilp.groups.to_string(),
            isl.coincident,
            ilp.coincident,
            format!("{:.1}", isl.ms),
            format!("{:.1}", ilp.ms),
        ]);
    }
    let header = [
        "program",
        "depth isl",
        "depth ilp",
        "groups isl",
        "groups ilp",
        "coincident isl",
        "coincident ilp",
        "ms isl",
        "ms ilp",
    ];
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(&widths).enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            if i == 0 {
                s.push_str(&format!("{c:<w$}"));
            } else {
                s.push_str(&format!("{c:>w$}"));
            }
        }
        s + "\n"
    };
    let mut out = line(header.to_vec());
    for r in &rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
    }
    if not_deeper.is_empty() {
        out.push_str(
            "the ilp scheduler's permutable band is at least as deep as isl's on every program\n",
        );
    } else {
        out.push_str(&format!(
            "the ilp scheduler's permutable band is shallower than isl's on: {}\n",
            not_deeper.join(", ")
        ));
    }
    Ok(out)
}
