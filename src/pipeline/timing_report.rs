//! The `--timings` report: every step of the pipeline with its timed sub-steps, then the
//! sub-steps that dominate the compile.

use crate::pipeline::stages::Timing;

/// How many sub-steps the summary names.
const SLOWEST: usize = 5;

/// The report, one `polyc: ` line per step and sub-step, then the total and the slowest
/// sub-steps with their share of the total. A sub-step nested in another is counted in both.
pub fn timing_report(timings: &[Timing]) -> String {
    let mut out = String::new();
    let total: f64 = timings.iter().map(|t| t.ms).sum();
    for t in timings {
        out.push_str(&format!("polyc: {:>10} {:8.2} ms\n", t.step, t.ms));
        for p in &t.parts {
            out.push_str(&format!(
                "polyc: {:>10}   {:<28} {:8.2} ms  ({} {})\n",
                "",
                p.name,
                p.ms,
                p.calls,
                if p.calls == 1 { "call" } else { "calls" }
            ));
        }
    }
    out.push_str(&format!("polyc: {:>10} {:8.2} ms\n", "total", total));
    let parts = slowest_sub_steps(timings);
    if !parts.is_empty() && total > 0.0 {
        let named: Vec<String> = parts
            .iter()
            .take(SLOWEST)
            .map(|(n, ms)| format!("{n} {ms:.0} ms ({:.0}%)", 100.0 * ms / total))
            .collect();
        out.push_str(&format!(
            "polyc: slowest sub-steps: {} (a nested sub-step counts in its parent too)\n",
            named.join(", ")
        ));
    }
    out
}

/// Every sub-step with its milliseconds summed over the steps, slowest first.
pub fn slowest_sub_steps(timings: &[Timing]) -> Vec<(&'static str, f64)> {
    let mut parts: Vec<(&'static str, f64)> = Vec::new();
    for p in timings.iter().flat_map(|t| &t.parts) {
        match parts.iter_mut().find(|(n, _)| *n == p.name) {
            Some(e) => e.1 += p.ms,
            None => parts.push((p.name, p.ms)),
        }
    }
    parts.sort_by(|a, b| b.1.total_cmp(&a.1));
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use polyhedral::substeps::SubStep;

    #[test]
    fn report_lists_steps_parts_and_the_slowest() {
        let t = |step: &str, ms: f64, parts: Vec<SubStep>| Timing {
            step: step.into(),
            ms,
            parts,
        };
        let p = |name: &'static str, ms: f64, calls: u64| SubStep { name, ms, calls };
        let report = timing_report(&[
            t("parse", 1.0, vec![]),
            t("tiled", 60.0, vec![p("tile:footprints", 50.0, 3)]),
            t("codegen", 39.0, vec![p("codegen:ast_build", 30.0, 1)]),
        ]);
        assert_eq!(
            report,
            "polyc:      parse     1.00 ms\n\
             polyc:      tiled    60.00 ms\n\
             polyc:              tile:footprints                 50.00 ms  (3 calls)\n\
             polyc:    codegen    39.00 ms\n\
             polyc:              codegen:ast_build               30.00 ms  (1 call)\n\
             polyc:      total   100.00 ms\n\
             polyc: slowest sub-steps: tile:footprints 50 ms (50%), codegen:ast_build 30 ms (30%) (a nested sub-step counts in its parent too)\n"
        );
    }
}
