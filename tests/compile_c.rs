//! `polyc PROG` (compile): the emitted C's interface, OpenMP pragmas, `--timings`, and that
//! the C compiles with the system compiler.

mod common;
use common::*;
use std::process::Command;

const MM: &str = "examples/matmul.tc";

/// The line that starts the definition of `void NAME(`.
fn prototype(c: &str, name: &str) -> String {
    let start = format!("void {name}(");
    let lines: Vec<&str> = c.lines().filter(|l| l.starts_with(&start)).collect();
    assert_eq!(lines.len(), 1, "{c}");
    lines[0].to_string()
}

#[test]
fn symbolic_sizes_are_arguments_in_order_of_appearance() {
    let c = polyc_ok(&[MM]);
    assert_eq!(
        prototype(&c, "matmul"),
        "void matmul(int64_t M, int64_t K, int64_t N, const float *restrict A, const float *restrict B, float *restrict C) {"
    );
}

#[test]
fn bound_sizes_are_not_arguments() {
    let c = polyc_ok(&[MM, "--param", "M=64,K=64,N=64"]);
    assert_eq!(
        prototype(&c, "matmul"),
        "void matmul(const float *restrict A, const float *restrict B, float *restrict C) {"
    );
    // Partly bound: the rest stay, in order.
    let c = polyc_ok(&[MM, "--param", "K=8"]);
    assert_eq!(
        prototype(&c, "matmul"),
        "void matmul(int64_t M, int64_t N, const float *restrict A, const float *restrict B, float *restrict C) {"
    );
}

/// Scalars are passed by value, inputs written in place are not const, and element types
/// follow the declarations.
#[test]
fn prototypes_of_other_examples() {
    for (prog, name, want) in [
        (
            "examples/conv_chain.tc",
            "conv_chain",
            "void conv_chain(int64_t H, int64_t W, int64_t KH, int64_t KW, float *restrict A, const float *restrict B, float bias, float *restrict C) {",
        ),
        (
            "examples/epilogue.tc",
            "epilogue",
            "void epilogue(int64_t R, int64_t N, const float *restrict X, const float *restrict bias, const float *restrict res, double *restrict Y) {",
        ),
        (
            "examples/gemm_i8.tc",
            "gemm_i8",
            "void gemm_i8(int64_t M, int64_t K, int64_t N, const int8_t *restrict A, const int8_t *restrict B, int32_t *restrict C) {",
        ),
    ] {
        assert_eq!(prototype(&polyc_ok(&[prog]), name), want);
    }
}

/// isl fuses matmul's init and update under one band whose outer loop is coincident: one
/// `omp parallel for`, on the outermost loop.
#[test]
fn isl_matmul_outer_loop_is_parallel() {
    let c = polyc_ok(&[
        MM,
        "--param",
        "M=64,K=64,N=64",
        "--scheduler",
        "isl",
        "--no-default-tiling",
    ]);
    let lines: Vec<&str> = c.lines().collect();
    let at: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].trim() == "#pragma omp parallel for")
        .collect();
    assert_eq!(at.len(), 1, "{c}");
    assert!(lines[at[0] - 1].starts_with("void matmul("), "{c}");
    assert_eq!(
        lines[at[0] + 1].trim(),
        "for (int64_t c0 = 0; c0 <= 63; c0 += 1) {"
    );
}

/// Golden C of the symbolic matmul function under isl (helpers excluded).
#[test]
fn isl_matmul_symbolic_golden() {
    let c = polyc_ok(&[MM]);
    let start = c.find("void matmul(").expect("the function");
    insta::assert_snapshot!(&c[start..]);
}

/// `-o FILE` writes the C there and nothing to stdout.
#[test]
fn output_file() {
    let dir = tempdir();
    let path = dir.path().join("mm.c");
    let p = path.display().to_string();
    assert_eq!(polyc_ok(&[MM, "-o", &p]), "");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), polyc_ok(&[MM]));
    // `compile` spelled out is the same command.
    assert_eq!(polyc_ok(&["compile", MM]), polyc_ok(&[MM]));
}

#[test]
fn timings_one_line_per_step() {
    let o = polyc(&[MM, "--param", "M=8,K=8,N=8", "--timings"]);
    assert_code(&o, 0);
    assert!(stdout(&o).contains("void matmul("));
    let err = stderr(&o);
    let mut steps = Vec::new();
    let mut values = Vec::new();
    let mut sub_steps = Vec::new();
    let mut slowest = None;
    for line in err.lines() {
        let rest = line
            .strip_prefix("polyc: ")
            .unwrap_or_else(|| panic!("{line:?}"));
        if let Some(s) = rest.strip_prefix("slowest sub-steps: ") {
            slowest = Some(s.to_string());
            continue;
        }
        let parts: Vec<&str> = rest.split_whitespace().collect();
        // A sub-step: `stage:part  1.23 ms  (N calls)`, under its step.
        if parts.len() == 5 && parts[0].contains(':') {
            assert_eq!(parts[2], "ms", "{line:?}");
            let ms: f64 = parts[1].parse().unwrap_or_else(|_| panic!("{line:?}"));
            let step = *values.last().unwrap_or_else(|| panic!("{line:?}"));
            assert!(
                ms >= 0.0 && ms <= step + 0.05,
                "{line:?} in a step of {step} ms"
            );
            sub_steps.push(parts[0].to_string());
            continue;
        }
        assert_eq!(parts.len(), 3, "{line:?}");
        assert_eq!(parts[2], "ms", "{line:?}");
        steps.push(parts[0].to_string());
        let ms: f64 = parts[1].parse().unwrap_or_else(|_| panic!("{line:?}"));
        assert!(ms >= 0.0, "{line:?}");
        values.push(ms);
    }
    assert_eq!(
        steps,
        [
            "parse", "model", "deps", "schedule", "tiled", "fused", "promoted", "parallel",
            "codegen", "total"
        ]
    );
    let sum: f64 = values[..values.len() - 1].iter().sum();
    let total = values[values.len() - 1];
    assert!((sum - total).abs() <= 0.05, "{err}");
    // Every stage of the target's passes and codegen names its sub-steps, and the summary
    // names the slowest of them.
    for want in [
        "deps:dataflow",
        "schedule:isl",
        "tile:plan",
        "tile:footprints",
        "promote:analyse_mark",
        "codegen:ast_build",
        "codegen:normalize",
        "codegen:emit",
    ] {
        assert!(sub_steps.iter().any(|s| s == want), "no {want}:\n{err}");
    }
    let slowest = slowest.unwrap_or_else(|| panic!("no summary:\n{err}"));
    assert!(
        slowest.contains(" ms (") && slowest.contains("%)"),
        "{slowest}"
    );
    // Without the flag there is nothing on stderr.
    let o = polyc(&[MM, "--param", "M=8,K=8,N=8"]);
    assert_code(&o, 0);
    assert_eq!(stderr(&o), "");
}

/// The emitted C compiles cleanly with the system compiler, with OpenMP.
#[test]
fn emitted_c_compiles() {
    let dir = tempdir();
    for (prog, params, sched) in [
        ("examples/matmul.tc", "", "isl"),
        ("examples/conv_chain.tc", "H=64,W=64,KH=3,KW=3", "isl"),
        ("examples/epilogue.tc", "", "initial"),
        ("examples/attention.tc", "L=32,D=16", "isl"),
        ("examples/trmm.tc", "", "isl"),
    ] {
        let stem = prog.trim_start_matches("examples/").trim_end_matches(".tc");
        let c = dir.path().join(format!("{stem}.c"));
        let obj = dir.path().join(format!("{stem}.o"));
        let cs = c.display().to_string();
        let mut args = vec![prog, "--scheduler", sched, "-o", &cs];
        if !params.is_empty() {
            args.extend(["--param", params]);
        }
        polyc_ok(&args);
        let out = Command::new("cc")
            .args([
                "-std=c11", "-c", "-O2", "-fopenmp", "-Wall", "-Werror", "-o",
            ])
            .arg(&obj)
            .arg(&c)
            .output()
            .expect("cc starts");
        assert!(
            out.status.success(),
            "{prog}: cc failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(std::fs::metadata(&obj).unwrap().len() > 0);
    }
}
