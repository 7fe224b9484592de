//! Compile-time benchmark, for the CPU (C) and the GPU (CUDA):
//!
//! - the median wall time from parse to emitted code for every case of
//!   `specs/suites/smoke.yaml` (first shape, isl scheduler), over 15 runs each, with the
//!   per-step medians;
//! - the scaling group: element-wise chains of 40, 80, 160 and 320 statements
//!   (`T_k(i, j) = T_{k-1}(i, j) * 1.01 + 0.5`, 1024 × 1024), a chain of 40 reductions
//!   (matrix-vector products), and a 12-layer MLP (matmul, bias, GELU), each compiled once,
//!   with the slowest sub-steps, the process's peak memory so far, and the exponent `b` of
//!   `time ≈ a·n^b` fitted over the chains;
//! - the polybench group: each of PolyBench/C 4.2's 30 kernels (`examples/polybench`) at
//!   PolyBench's LARGE sizes (the `/* LARGE: … */` line of `bench/polybench/K.c`), deriche
//!   and seidel-2d among them, compiled once each, with the count under 1 s (the goal: all).
//!
//! The bench uses jemalloc, as the `polyc` binary does.
//!
//! Run: `cargo bench --bench compile_time` (`-- gpu` or `-- cpu` for one target only,
//! `-- scaling`, `-- smoke` or `-- polybench` for one group only; both may be given).

use polyc::pipeline::driver::compile;
use polyc::pipeline::options::CompileOptions;
use polyc::pipeline::stages::Mode;
use std::path::Path;

const RUNS: usize = 15;

/// The `polyc` binary's allocator (see `src/main.rs`), so that these times are its times.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let only_target = args.iter().find(|a| *a == "cpu" || *a == "gpu");
    let only_group = args
        .iter()
        .find(|a| *a == "smoke" || *a == "scaling" || *a == "polybench");
    for (target, goal) in [("cpu", 200.0), ("gpu", 300.0)] {
        if only_target.is_some_and(|o| o != target) {
            continue;
        }
        if only_group.is_none_or(|g| g == "smoke") {
            println!("== target {target}: smoke suite");
            bench(target, goal);
        }
        if only_group.is_none_or(|g| g == "scaling") {
            println!("== target {target}: scaling group");
            scaling(target);
        }
        if only_group.is_none_or(|g| g == "polybench") {
            println!("== target {target}: polybench group (LARGE sizes)");
            polybench(target);
        }
    }
}

/// One compile: its milliseconds, and its three slowest sub-steps as text.
fn compile_once(opts: &CompileOptions) -> (f64, Vec<String>) {
    let c = compile(opts, Mode::Optimised).expect("compiles");
    let ms: f64 = c.timings.iter().map(|t| t.ms).sum();
    let parts = polyc::pipeline::timing_report::slowest_sub_steps(&c.timings);
    let top = parts
        .iter()
        .take(3)
        .map(|(n, v)| format!("{n} {v:.0}"))
        .collect();
    (ms, top)
}

/// The sizes of PolyBench kernel `k` at LARGE, from its C file's `/* LARGE: N=…,… */` line.
fn large_sizes(root: &Path, k: &str) -> Vec<(String, i64)> {
    let c = std::fs::read_to_string(root.join(format!("bench/polybench/{k}.c")))
        .expect("the kernel's C file");
    let line = c
        .lines()
        .find_map(|l| l.strip_prefix("/* LARGE: ")?.strip_suffix(" */"))
        .expect("a LARGE line");
    line.split(',')
        .map(|kv| {
            let (k, v) = kv.split_once('=').expect("NAME=VALUE");
            (k.to_string(), v.parse().expect("an integer"))
        })
        .collect()
}

fn polybench(target: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut kernels: Vec<String> = std::fs::read_dir(root.join("examples/polybench"))
        .expect("examples/polybench")
        .filter_map(|e| {
            let name = e.ok()?.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".tc").map(str::to_string)
        })
        .collect();
    kernels.sort();
    println!("{:<16} {:>10}   slowest sub-steps (ms)", "kernel", "ms");
    let (mut under, mut logs) = (0, 0.0);
    for k in &kernels {
        let opts = CompileOptions {
            params: large_sizes(root, k),
            target: Some(target.to_string()),
            ..CompileOptions::for_program(
                root.join(format!("examples/polybench/{k}.tc"))
                    .display()
                    .to_string(),
            )
        };
        let (ms, top) = compile_once(&opts);
        println!("{k:<16} {ms:>10.1}   {}", top.join(", "));
        under += usize::from(ms < 1000.0);
        logs += ms.ln();
    }
    println!(
        "{under} of {} under 1 s (goal: all); geometric mean {:.0} ms",
        kernels.len(),
        (logs / kernels.len() as f64).exp()
    );
}

/// `T_k(i, j) = T_{k-1}(i, j) * 1.01 + 0.5` for k = 1..n.
fn chain(n: usize) -> String {
    let mut s = format!("def chain(f32(N, M) T0) -> (f32(N, M) T{n}) {{\n");
    for k in 1..=n {
        s.push_str(&format!("  T{k}(i, j) = T{}(i, j) * 1.01 + 0.5\n", k - 1));
    }
    s + "}\n"
}

/// `n` matrix-vector products in a chain: `V_k(i) +=! A(i, j) * V_{k-1}(j)`.
fn reductions(n: usize) -> String {
    let mut s = format!("def reductions(f32(N, N) A, f32(N) V0) -> (f32(N) V{n}) {{\n");
    for k in 1..=n {
        s.push_str(&format!("  V{k}(i) +=! A(i, j) * V{}(j)\n", k - 1));
    }
    s + "}\n"
}

/// A transformer MLP of `n` layers: per layer a matmul, a bias and a tanh GELU.
fn mlp(n: usize) -> String {
    let ws: Vec<String> = (1..=n)
        .map(|l| format!("f32(D, D) W{l}, f32(D) B{l}"))
        .collect();
    let mut s = format!(
        "def mlp(f32(T, D) X0, {}) -> (f32(T, D) X{n}) {{\n",
        ws.join(", ")
    );
    for l in 1..=n {
        s.push_str(&format!("  H{l}(t, d) +=! X{}(t, e) * W{l}(e, d)\n", l - 1));
        s.push_str(&format!(
            "  X{l}(t, d) = 0.5 * (H{l}(t, d) + B{l}(d)) * (1 + tanh(0.79788456 * (H{l}(t, d) + B{l}(d))))\n"
        ));
    }
    s + "}\n"
}

/// The process's peak resident memory so far, in MB (Linux), if known.
fn peak_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// The exponent `b` of the least-squares fit `log t = log a + b log n`.
fn fitted_exponent(points: &[(f64, f64)]) -> f64 {
    let k = points.len() as f64;
    let (xs, ys): (Vec<f64>, Vec<f64>) = points.iter().map(|&(n, t)| (n.ln(), t.ln())).unzip();
    let mx = xs.iter().sum::<f64>() / k;
    let my = ys.iter().sum::<f64>() / k;
    let sxy: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    sxy / sxx
}

/// A program of the scaling group: name, text, sizes, and its statement count when it is
/// one of the chains the exponent is fitted over.
type ScalingCase = (String, String, Vec<(String, i64)>, Option<usize>);

fn scaling(target: &str) {
    let dir = std::env::temp_dir().join(format!("polyc-scaling-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let mut cases: Vec<ScalingCase> = Vec::new();
    for n in [40, 80, 160, 320] {
        let sizes = vec![("N".to_string(), 1024), ("M".to_string(), 1024)];
        cases.push((format!("chain{n}"), chain(n), sizes, Some(n)));
    }
    let n = vec![("N".to_string(), 1024)];
    cases.push(("reductions40".into(), reductions(40), n, None));
    let td = vec![("T".to_string(), 256), ("D".to_string(), 512)];
    cases.push(("mlp12".into(), mlp(12), td, None));
    println!(
        "{:<14} {:>10} {:>9}   slowest sub-steps (ms)",
        "program", "ms", "peak MB"
    );
    let mut points = Vec::new();
    for (name, text, sizes, n) in cases {
        let path = dir.join(format!("{name}.tc"));
        std::fs::write(&path, text).expect("the program is written");
        let opts = CompileOptions {
            params: sizes,
            target: Some(target.to_string()),
            max_statements: 1000,
            ..CompileOptions::for_program(path.display().to_string())
        };
        let (ms, top) = compile_once(&opts);
        let peak = peak_mb().map_or("?".to_string(), |m| format!("{m:.0}"));
        println!("{name:<14} {ms:>10.1} {peak:>9}   {}", top.join(", "));
        if let Some(n) = n {
            points.push((n as f64, ms));
        }
    }
    println!(
        "fitted exponent over the chains (40 to 320 statements): {:.2} (goal: at most 1.2)",
        fitted_exponent(&points)
    );
    let _ = std::fs::remove_dir_all(&dir);
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
