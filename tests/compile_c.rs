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
            "parse",
            "model",
            "deps",
            "schedule",
            "tiled",
            "fused",
            "wavefront",
            "promoted",
            "parallel",
            "codegen",
            "total"
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

/// The emitted C compiles cleanly (`-Wall -Werror`) with the system compiler and clang,
/// with OpenMP.
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
        // gcc and clang, each with and without -march=native (the vector-width pragmas
        // are chosen by what the machine has).
        for (cc, native) in [
            ("cc", false),
            ("cc", true),
            ("clang", false),
            ("clang", true),
        ] {
            let _ = std::fs::remove_file(&obj);
            let out = Command::new(cc)
                .args([
                    "-std=c11", "-c", "-O2", "-fopenmp", "-Wall", "-Werror", "-o",
                ])
                .arg(&obj)
                .args(native.then_some("-march=native"))
                .arg(&c)
                .output()
                .expect("compiler starts");
            assert!(
                out.status.success(),
                "{prog}: {cc} (native: {native}) failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(std::fs::metadata(&obj).unwrap().len() > 0);
        }
    }
}

/// Runs `polyc ARGS` with the C compiler `cc` (the runner's `$CC`).
fn polyc_with_cc(cc: &str, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_polyc"))
        .args(args)
        .env("CC", cc)
        .current_dir(root())
        .output()
        .expect("polyc starts")
}

/// Issue 25: the CPU's C calls `polyc_fma_f32`/`polyc_fma_f64` for a multiply-accumulate,
/// which clang contracts into one FMA (so that it keeps a register tile in registers).
/// Under gcc (`fmaf`) the results stay those of the interpreter bit for bit; under clang
/// they are exact where clang keeps each product with its sum (GEMM), and within the
/// check's tolerance where its SLP vectoriser shares a product between two sums (2mm: 1.4e-6,
/// the conv chain: 2.4e-7), in f32 and f64, with partial tiles in every dimension.
#[test]
fn multiply_accumulates_are_exact_under_clang_and_gcc() {
    let dir = tempdir();
    let mm64 = write(
        dir.path(),
        "mm64.tc",
        "def mm64(f64(M, K) A, f64(K, N) B) -> (f64(M, N) C) {\n  C(i, j) +=! A(i, k) * B(k, j)\n}\n",
    );
    let cases: [(&str, &str); 4] = [
        (MM, "M=67,N=45,K=53"),
        (&mm64, "M=37,N=71,K=29"),
        ("examples/mm2.tc", "NI=33,NK=41,NJ=27,NL=19"),
        ("examples/conv_chain.tc", "H=45,W=39,KH=5,KW=3"),
    ];
    for cc in ["clang", "cc"] {
        for (prog, params) in cases {
            let o = polyc_with_cc(cc, &["run", prog, "--param", params, "--check"]);
            let out = stdout(&o);
            assert!(
                o.status.success() && !out.is_empty(),
                "CC={cc} {prog}:\n{out}\n{}",
                stderr(&o)
            );
            let exact = cc == "cc" || prog == MM || prog.ends_with("mm64.tc");
            for line in out.lines() {
                assert!(line.ends_with(" ok"), "CC={cc} {prog}: {line}");
                assert!(
                    !exact || line.ends_with("max_abs_err=0.000e0 max_rel_err=0.000e0 ok"),
                    "CC={cc} {prog}: not exact: {line}"
                );
            }
        }
    }
}

/// Under plain `clang -O3 -march=native` the helper is one FMA instruction (no call of
/// `fmaf`), and a register tile of it keeps its accumulators in registers: the file asks
/// for the vector width the tile was sized for (the description's 64 bytes; clang's own
/// choice on AVX-512 machines is 256 bits, at which the 8 × 32 tile spills), and the
/// hottest loop of GEMM's full tile has 512-bit FMAs and no spill. The built-in `cpu`
/// description is an AVX-512 machine's (32 vector registers of 64 bytes): on a host without
/// AVX-512 (an AMD Zen 3 has 16 registers of 32 bytes) the C is compiled for the machine
/// it describes (`-march=x86-64-v4`) instead of the host.
#[test]
fn clang_keeps_the_gemm_register_tile_in_registers() {
    let avx512 = std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|c| c.contains(" avx512f"));
    let march = if avx512 {
        "-march=native"
    } else {
        "-march=x86-64-v4"
    };
    let dir = tempdir();
    let c = dir.path().join("mm.c");
    let s = dir.path().join("mm.s");
    let cs = c.display().to_string();
    polyc_ok(&[MM, "--param", "M=1024,N=1024,K=1024", "-o", &cs]);
    let out = Command::new("clang")
        .args(["-O3", march, "-S", "-o"])
        .arg(&s)
        .arg(&c)
        .output()
        .expect("clang starts");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let asm = std::fs::read_to_string(&s).unwrap();
    assert!(!asm.contains("fmaf"), "a call of fmaf is left");
    // The basic block with the most FMAs is the reduction loop of the full register tile.
    let mut blocks: Vec<Vec<&str>> = Vec::new();
    for line in asm.lines() {
        if line.starts_with(".LBB") {
            blocks.push(Vec::new());
        } else if let Some(b) = blocks.last_mut() {
            b.push(line);
        }
    }
    let fmas = |b: &Vec<&str>| b.iter().filter(|l| l.contains("vfmadd")).count();
    let hot = blocks.iter().max_by_key(|b| fmas(b)).expect("blocks");
    assert!(fmas(hot) >= 16, "{}", hot.join("\n"));
    assert!(
        hot.iter()
            .filter(|l| l.contains("vfmadd"))
            .all(|l| l.contains("zmm")),
        "{}",
        hot.join("\n")
    );
    // With `fmaf` (before issue 25), clang 14 spilled 49 vectors per 64 FMAs here.
    let spills = hot.iter().filter(|l| l.contains("Spill")).count();
    assert_eq!(spills, 0, "{}", hot.join("\n"));
}

/// `polyc ARGS -o DIR/NAME.c`; returns the C file's path.
fn emit_to(dir: &std::path::Path, name: &str, args: &[&str]) -> std::path::PathBuf {
    let c = dir.join(format!("{name}.c"));
    let cs = c.display().to_string();
    let mut all = args.to_vec();
    all.extend(["-o", &cs]);
    polyc_ok(&all);
    c
}

/// Issue 25: a row sum is vectorised by gcc at plain `-O3 -march=native`, with no OpenMP
/// flag: both lane loops of layer norm's mean and variance are reported as vectorised
/// loops (under `#pragma omp simd`, which needs `-fopenmp`, gcc kept the sums scalar).
#[test]
fn row_sums_vectorise_without_openmp() {
    let dir = tempdir();
    let c = emit_to(
        dir.path(),
        "ln",
        &["examples/layernorm.tc", "--param", "R=2048,N=2048"],
    );
    let text = std::fs::read_to_string(&c).unwrap();
    let lines: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| {
            l.trim_start()
                .starts_with("for (int64_t polyc_l = 0; polyc_l < 32; polyc_l += 1) {")
        })
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(lines.len(), 2, "{text}");
    // (clang unrolls the plain sum's lane loop completely and vectorises the straight
    // code, so only gcc's notes name both loops.)
    for (cc, flag, says) in [("gcc", "-fopt-info-vec-optimized", "loop vectorized")] {
        let out = Command::new(cc)
            .args(["-O3", "-march=native", flag, "-c", "-o", "/dev/null"])
            .arg(&c)
            .output()
            .expect("compiler starts");
        assert!(
            out.status.success(),
            "{cc}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let notes = String::from_utf8_lossy(&out.stderr);
        for l in &lines {
            let at = format!("ln.c:{l}:");
            assert!(
                notes.lines().any(|n| n.contains(&at) && n.contains(says)),
                "{cc} did not vectorise the lane loop at line {l}:\n{notes}"
            );
        }
    }
}

/// Issue 25: the file asks gcc for wrapping signed arithmetic itself, so plain
/// `gcc -O3 -march=native` compiles it exactly as with polyc's `-fwrapv` (without the
/// pragma, gcc left the conv chain's last column block of full register tiles scalar).
#[test]
fn gcc_compiles_the_same_code_without_fwrapv() {
    let dir = tempdir();
    let c = emit_to(
        dir.path(),
        "cc",
        &[
            "examples/conv_chain_temp.tc",
            "--param",
            "H=2048,W=2048,KH=5,KW=5",
            "--tile-spec",
            "bench/conv_chain_temp_l1.tiles",
        ],
    );
    let asm = |extra: &[&str]| {
        let out = Command::new("gcc")
            .args(["-O3", "-march=native", "-S", "-o", "-"])
            .args(extra)
            .arg(&c)
            .output()
            .expect("gcc starts");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let plain = asm(&[]);
    assert!(plain.matches("vfmadd").count() > 0);
    assert!(
        plain == asm(&["-fwrapv"]),
        "gcc's code differs with -fwrapv"
    );
}

/// Row sums in lanes (16 f64 or 32 f32 partial sums, then the iterations left over) agree
/// with the interpreter in f64 and f32, at sizes that leave a remainder and sizes below
/// one block, under gcc and clang.
#[test]
fn row_sums_in_lanes_check_in_f64_and_f32() {
    let dir = tempdir();
    for t in ["f64", "f32"] {
        let prog = write(
            dir.path(),
            &format!("rowvar_{t}.tc"),
            &format!(
                "def rowvar({t}(R, N) X) -> ({t}(R, N) D, {t}(R) v) {{\n  m(r) +=! X(r, j)\n  D(r, j) = X(r, j) - m(r) / N\n  v(r) +=! D(r, j) * D(r, j)\n}}\n"
            ),
        );
        let lanes = if t == "f64" { 16 } else { 32 };
        let c = polyc_ok(&[&prog, "--param", "R=7,N=131"]);
        assert!(
            c.contains(
                &format!("{t} polyc_lane[{lanes}]")
                    .replace("f64", "double")
                    .replace("f32", "float")
            ),
            "{c}"
        );
        for cc in ["cc", "clang"] {
            for params in ["R=7,N=131", "R=3,N=70", "R=2,N=1000"] {
                let o = polyc_with_cc(cc, &["run", &prog, "--param", params, "--check"]);
                let out = stdout(&o);
                assert!(
                    o.status.success() && out.lines().count() == 2,
                    "CC={cc} {t} {params}:\n{out}\n{}",
                    stderr(&o)
                );
                assert!(out.lines().all(|l| l.ends_with(" ok")), "{out}");
            }
        }
    }
}

/// A parallel loop's body is a `static inline` function with `restrict` pointer
/// parameters (the ones it uses), which the loop calls: gcc's OpenMP outlining otherwise
/// reads the pointers from its argument block without `restrict`, and PolyBench adi's
/// recurrences then stored and reloaded every element (18% slower on one thread). A loop
/// with a local of the kernel's own around it (a wavefront's start) stays in place. Both
/// compile and agree with the interpreter.
#[test]
fn parallel_loop_bodies_are_functions_with_restrict_pointers() {
    let adi = abs("examples/polybench/adi.tc");
    let (_, c) = compiled_c(&adi, "N=1000,T=500", &[]);
    let signature = "static inline __attribute__((always_inline)) void adi_par0(double *restrict \
        u, double *restrict v, double *restrict p, double *restrict q, double *restrict a, \
        double *restrict b, double *restrict c, double *restrict d, double *restrict f, \
        int64_t c0, int64_t c1) {";
    assert!(c.lines().any(|l| l == signature), "{c}");
    let lines: Vec<&str> = c.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.trim() == "adi_par0(u, v, p, q, a, b, c, d, f, c0, c1);")
        .expect("the call");
    assert_eq!(lines[at - 2].trim(), "#pragma omp parallel for", "{c}");
    checked_on(&adi, "N=37,T=5", "2");
    let lu = abs("examples/polybench/lu.tc");
    let (_, c) = compiled_c(&lu, "N=33", &[]);
    let lines: Vec<&str> = c.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains("c1 <= c0 / 2 - polyc_c1_start"))
        .expect("the wavefront's loop");
    assert_eq!(lines[at - 1].trim(), "#pragma omp parallel for", "{c}");
    assert!(!c.contains("lu_par0"), "{c}");
    checked_on(&lu, "N=33", "2");
}

/// The branch to a full tile's code is marked likely (`__builtin_expect`): at 96 × 2048 ×
/// 200, with partial tiles along the rows (64 + 32) and the reduction (128 + 72) at
/// once, gcc 12 guessed the full-`K` branch cold and left its register tiles scalar (32
/// scalar and 32 vector FMAs in the assembly, 4 GFLOP/s against 53 at 128 rows). Branches
/// on other conditions (`c1 == 0`, the initialisation's) are not marked. The assembly
/// gcc makes of it now holds vector FMAs only, and the kernel matches the interpreter,
/// f32 and f64.
#[test]
fn full_tile_branches_are_likely_and_vectorised() {
    let prog = abs("examples/matmul.tc");
    let (_, c) = compiled_c(&prog, "M=96,N=2048,K=200", &[]);
    assert!(
        c.contains("if (__builtin_expect(!!(-(128 * c1) + 199 >= 127), 1)) {"),
        "{c}"
    );
    assert!(c.contains("if (c1 == 0) {"), "{c}");
    let dir = tempdir();
    let src = dir.path().join("k.c");
    std::fs::write(&src, &c).expect("write the C");
    let asm = dir.path().join("k.s");
    let out = Command::new("gcc")
        .args([
            "-O3",
            "-march=x86-64-v3",
            "-fopenmp",
            "-ffp-contract=off",
            "-fwrapv",
            "-S",
        ])
        .arg(&src)
        .arg("-o")
        .arg(&asm)
        .output()
        .expect("gcc runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let asm = std::fs::read_to_string(&asm).expect("the assembly");
    let count = |suffix: &str| {
        asm.lines()
            .filter(|l| {
                let op = l.split_whitespace().next().unwrap_or("");
                op.starts_with("vfmadd") && op.ends_with(suffix)
            })
            .count()
    };
    assert_eq!(count("ss"), 0, "scalar FMAs left in the full tiles");
    assert!(count("ps") >= 64, "{} vector FMAs", count("ps"));
    let text = std::fs::read_to_string(&prog).expect("the example");
    let f64_prog = write(dir.path(), "m64.tc", &text.replace("f32", "f64"));
    for p in [prog.as_str(), f64_prog.as_str()] {
        let o = polyc_ok(&["run", p, "--param", "M=96,N=2048,K=200", "--check"]);
        assert!(o.trim_end().ends_with(" ok"), "{p}: {o}");
    }
}
