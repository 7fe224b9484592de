//! Large bound sizes scheduled at scaled-down ones and carried over (README "Large bound
//! sizes: scheduled small, carried over"; `polyhedral/src/sched_scaled.rs`). With
//! `--isl-option scale_probe=0` the carried-over schedule is always used, so these tests
//! do not depend on the machine's speed: it must give exactly the C that isl's schedule at
//! the real sizes gives (`scale_sizes=0`), on programs whose schedules hold constants that
//! grow with the sizes (`N - 1`, `2T - 1`, …), f32 and f64, sizes that are not powers of
//! two; and the kernels must match the interpreter.

mod common;
use common::*;

/// `compile` of `prog` at `params` with `--isl-option` each of `options`: the C and the
/// timings.
fn compile(prog: &str, params: &str, options: &[&str]) -> (String, String) {
    compile_for(prog, &["--param", params], options)
}

/// `polyc compile prog` with the arguments `args`, `--timings` and `--isl-option` each of
/// `options`: the code and the timings.
fn compile_for(prog: &str, args: &[&str], options: &[&str]) -> (String, String) {
    let dir = tempdir();
    let out = dir.path().join("k.out");
    let mut all = vec!["compile", prog, "--timings"];
    all.extend(args);
    for o in options {
        all.extend(["--isl-option", o]);
    }
    all.extend(["-o", out.to_str().unwrap()]);
    let o = polyc(&all);
    assert_code(&o, 0);
    (std::fs::read_to_string(&out).unwrap(), stderr(&o))
}

/// Programs whose isl schedules at these sizes hold size-dependent constants (or none),
/// with sizes above the scaling threshold (64) in every case and below it in some.
const CASES: [(&str, &str); 12] = [
    ("examples/polybench/gesummv.tc", "N=130"),
    ("examples/polybench/lu.tc", "N=70"),
    ("examples/polybench/correlation.tc", "N=70,M=66"),
    ("examples/polybench/covariance.tc", "N=97,M=75"),
    ("examples/polybench/durbin.tc", "N=100"),
    ("examples/polybench/doitgen.tc", "NQ=70,NR=66,NP=81"),
    ("examples/polybench/jacobi_1d.tc", "N=90,T=70"),
    ("examples/polybench/fdtd_2d.tc", "NX=67,NY=73,T=79"),
    ("examples/polybench/2mm.tc", "NI=67,NJ=79,NK=73,NL=85"),
    ("examples/polybench/gramschmidt.tc", "M=73,N=67"),
    ("examples/matmul.tc", "M=67,N=45,K=53"),
    ("examples/layernorm.tc", "R=100,N=33"),
];

#[test]
fn carried_over_schedules_give_the_code_of_the_real_sizes() {
    for (prog, params) in CASES {
        let (carried, timings) = compile(prog, params, &["scale_probe=0", "scale_parametric=0"]);
        assert!(
            timings.contains("schedule:scaled_carried"),
            "{prog} {params}: the scaled schedule was not carried over:\n{timings}"
        );
        let (real, real_timings) = compile(prog, params, &["scale_sizes=0"]);
        assert!(!real_timings.contains("schedule:isl_scaled"), "{prog}");
        assert_eq!(carried, real, "{prog} {params}");
    }
}

#[test]
fn carried_over_kernels_match_the_interpreter() {
    for (prog, params) in [
        ("examples/polybench/gesummv.tc", "N=130"),
        ("examples/polybench/lu.tc", "N=70"),
        ("examples/polybench/jacobi_1d.tc", "N=90,T=70"),
        ("examples/polybench/correlation.tc", "N=70,M=66"),
        ("examples/matmul.tc", "M=67,N=45,K=53"),
    ] {
        // Every output matches the interpreter (`run_checked` asserts it).
        run_checked(&[
            "run",
            prog,
            "--param",
            params,
            "--check",
            "--isl-option",
            "scale_probe=0",
            "--isl-option",
            "scale_parametric=0",
        ]);
    }
}

/// Where isl finds no schedule at the base sizes, the real ones run in program order, and
/// the note names the scaled sizes.
#[test]
fn no_schedule_at_the_scaled_sizes_is_program_order_with_a_note() {
    let err = run_checked(&[
        "run",
        "examples/matmul.tc",
        "--param",
        "M=67,N=31,K=13",
        "--check",
        "--isl-option",
        "max_coefficient=0",
    ]);
    let notes: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("polyc: note: isl's scheduler"))
        .collect();
    assert_eq!(
        notes,
        ["polyc: note: isl's scheduler found no schedule at the scaled sizes M=32 (unable to carry dependences); polyc uses the program-order schedule instead, as `--scheduler initial` does"]
    );
}

/// Sizes up to 64 are scheduled as they are.
#[test]
fn small_sizes_are_not_scaled() {
    let (_, small) = compile("examples/matmul.tc", "M=64,N=45,K=53", &["scale_probe=0"]);
    assert!(!small.contains("schedule:isl_scaled"), "{small}");
}

/// `compile` of `prog` with no `--param` (every size symbolic, or bound by `params`) for
/// `target`, with `--isl-option` each of `options`: the code and the timings.
fn compile_symbolic(
    prog: &str,
    params: &[&str],
    target: &str,
    options: &[&str],
) -> (String, String) {
    let mut args = vec!["--target", target];
    for p in params {
        args.extend(["--param", p]);
    }
    compile_for(prog, &args, options)
}

/// Symbolic sizes are first scheduled with each at 1024: that instance is scaled down and
/// carried over as bound sizes are, and kept only where it holds for every size. The code
/// is exactly that of isl's own run (`scale_sizes=0`), on both targets: where the carried
/// schedule holds (2mm, a matmul with one size bound), and where its constants hold only
/// up to 1024 (attention's fused schedule shifts its phases by `1023`), so that the real
/// context is scheduled (attention's components apart, for their register tiles, are
/// carried over).
#[test]
fn symbolic_sizes_are_scaled_and_give_isls_code() {
    let cases: [(&str, &[&str]); 4] = [
        ("examples/mm2.tc", &[]),
        ("examples/polybench/2mm.tc", &[]),
        ("examples/matmul.tc", &["M=640"]),
        ("examples/attention.tc", &[]),
    ];
    for target in ["cpu", "gpu"] {
        for (prog, params) in cases {
            let (code, timings) = compile_symbolic(prog, params, target, &["scale_probe=0"]);
            assert!(
                timings.contains("schedule:scaled_carried"),
                "{prog} {target}:\n{timings}"
            );
            let (real, real_timings) = compile_symbolic(prog, params, target, &["scale_sizes=0"]);
            assert!(!real_timings.contains("schedule:isl_scaled"), "{prog}");
            assert_eq!(code, real, "{prog} {target}");
        }
    }
}

/// A three-point stencil in f32, in place in a time loop (every dependence one-to-one).
const SMOOTH_F32: &str = "def smooth(f32(N) A, f32(N) B) -> (f32(N) C) {
  for t in 0:T {
    B(i) = 0.25 * (A(i - 1) + 2.0 * A(i) + A(i + 1)) where i in 1:N - 1
    A(i) = 0.5 * B(i) + 0.25 * (B(i - 1) + B(i + 1)) where i in 1:N - 1
  }
  C(i) = A(i)
}
";

/// Programs whose every dependence is one-to-one (stencils) take the schedule of the
/// program with its large sizes as parameters (`polyhedral/src/sched_parametric.rs`) when
/// the real sizes are not probed, in f64 and f32, with one size scaled or several, and
/// the kernels match the interpreter.
#[test]
fn parametric_schedules_of_stencils_match_the_interpreter() {
    let dir = tempdir();
    let smooth = write(dir.path(), "smooth.tc", SMOOTH_F32);
    for (prog, params) in [
        ("examples/polybench/heat_3d.tc", "N=66,T=9"),
        ("examples/polybench/jacobi_2d.tc", "N=83,T=71"),
        ("examples/polybench/fdtd_2d.tc", "NX=67,NY=73,T=79"),
        ("examples/polybench/jacobi_1d.tc", "N=90,T=70"),
        (smooth.as_str(), "N=101,T=67"),
    ] {
        let err = run_checked(&[
            "run",
            prog,
            "--param",
            params,
            "--check",
            "--timings",
            "--isl-option",
            "scale_probe=0",
        ]);
        assert!(
            err.contains("schedule:parametric_kept"),
            "{prog} {params}: the parametric schedule was not kept:\n{err}"
        );
        assert!(!err.contains("schedule:scaled_carried"), "{prog}");
    }
}

/// A program with a dependence that is not one-to-one (GEMM's reduction) never schedules
/// its parametric model: the instances are carried over as before; and
/// `scale_parametric=0` leaves the parametric model out for stencils too.
#[test]
fn parametric_model_only_where_every_dependence_is_one_to_one() {
    let (_, gemm) = compile("examples/matmul.tc", "M=67,N=45,K=53", &["scale_probe=0"]);
    assert!(gemm.contains("schedule:scaled_carried"), "{gemm}");
    assert!(!gemm.contains("schedule:parametric"), "{gemm}");
    let (_, off) = compile(
        "examples/polybench/jacobi_1d.tc",
        "N=90,T=70",
        &["scale_probe=0", "scale_parametric=0"],
    );
    assert!(off.contains("schedule:scaled_carried"), "{off}");
    assert!(!off.contains("schedule:parametric"), "{off}");
}
