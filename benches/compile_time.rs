//! Compile-time benchmark: the median wall time from parse to emitted code for every case
//! of `specs/suites/smoke.yaml` (first shape, isl scheduler), over 15 runs each, with the
//! per-step medians, for the CPU (C) and the GPU (CUDA). Run: `cargo bench --bench
//! compile_time` (`-- gpu` or `-- cpu` for one target only).

use polyc::pipeline::driver::compile;
use polyc::pipeline::options::CompileOptions;
use polyc::pipeline::stages::Mode;
use std::path::Path;

const RUNS: usize = 15;

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let only: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    for (target, goal) in [("cpu", 200.0), ("gpu", 300.0)] {
        if only.as_deref().is_some_and(|o| o != target) {
            continue;
        }
        println!("== target {target}");
        bench(target, goal);
    }
}

fn bench(target: &str, goal: f64) {
    let suite_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("specs/suites/smoke.yaml");
    let suite = polyc::commands::suite::load_suite(&suite_path).expect("smoke suite");
    let dir = suite_path.parent().expect("suite dir").to_path_buf();
    println!(
        "{:<28} {:>10} {:>10}   per-step medians (ms)",
        "program", "median ms", "max ms"
    );
    let mut worst: f64 = 0.0;
    for case in &suite.cases {
        let shape = &case.shapes[0];
        let opts = CompileOptions {
            entry: case.entry.clone(),
            params: shape.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            target: Some(target.to_string()),
            ..CompileOptions::for_program(dir.join(&case.program).display().to_string())
        };
        let mut totals = Vec::new();
        let mut steps: Vec<(String, Vec<f64>)> = Vec::new();
        for _ in 0..RUNS {
            let c = compile(&opts, Mode::Optimised).expect("compiles");
            totals.push(c.timings.iter().map(|t| t.ms).sum::<f64>());
            for (i, t) in c.timings.iter().enumerate() {
                if steps.len() <= i {
                    steps.push((t.step.clone(), Vec::new()));
                }
                steps[i].1.push(t.ms);
            }
        }
        let max = totals.iter().cloned().fold(0.0, f64::max);
        let med = median(&mut totals);
        worst = worst.max(med);
        let per: Vec<String> = steps
            .iter_mut()
            .map(|(n, v)| format!("{n} {:.1}", median(v)))
            .collect();
        let name = Path::new(&case.program)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        println!("{name:<28} {med:>10.1} {max:>10.1}   {}", per.join(", "));
    }
    println!("slowest median: {worst:.1} ms (target: under {goal} ms)");
}
