//! Tensor Comprehensions programs (`examples/tc/`), in TC's own syntax, through the polyc
//! binary: each one runs with `run --check` at two shapes on the CPU target (the only
//! target polyc has) and must match the reference interpreter on every output. TC's
//! constructs that polyc does not compile, and TC programs that TC itself rejects, give
//! exact located errors.

mod common;
use common::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Every program of `examples/tc/`: its file, two shapes, and its outputs in the order
/// `--check` reports them.
const PROGRAMS: &[(&str, [&str; 2], &[&str])] = &[
    ("matmul_tt.tc", ["M=7,N=5,K=9", "M=16,N=33,K=12"], &["C"]),
    (
        "batch_matmul.tc",
        ["NB=2,M=7,N=5,K=9", "NB=3,M=12,N=17,K=8"],
        &["Z"],
    ),
    (
        "group_conv.tc",
        [
            "N=2,G=2,C=3,F=2,H=7,W=6,KH=3,KW=2",
            "N=1,G=4,C=2,F=3,H=9,W=10,KH=3,KW=3",
        ],
        &["O"],
    ),
    (
        "group_norm.tc",
        ["N=2,G=3,D=4,H=5,W=6", "N=3,G=2,D=2,H=7,W=3"],
        &["Y", "mu", "sigma2"],
    ),
    (
        "kronecker.tc",
        ["M=3,N=4,P=2,Q=3,S=2", "M=5,N=2,P=4,Q=4,S=3"],
        &["K", "Y"],
    ),
    ("moments.tc", ["N=5,K=7", "N=16,K=33"], &["mean", "var"]),
    (
        "causal_conv1d.tc",
        ["B=2,C=3,T=17,F=4,K=3", "B=1,C=5,T=40,F=2,K=5"],
        &["Y"],
    ),
    (
        "softmax.tc",
        ["N=4,D=9", "N=13,D=32"],
        &["mx", "total", "Y"],
    ),
    (
        "reductions.tc",
        ["N=4,J=5", "N=9,J=12"],
        &["lo", "hi", "prod", "acc"],
    ),
    ("int_arith.tc", ["N=4,K=6", "N=11,K=9"], &["S", "Q", "T"]),
    ("builtins.tc", ["N=10", "N=37"], &["C", "D", "E"]),
    (
        "masks.tc",
        ["N=6", "N=13"],
        &["L", "Band", "Fill", "Scaled"],
    ),
    (
        "upsample_pool.tc",
        ["N=2,H=5,W=3", "N=1,H=8,W=9"],
        &["Up", "Pool"],
    ),
    ("half_axpy.tc", ["N=37", "N=8"], &["Z", "dot"]),
    (
        "mlp.tc",
        ["B=3,K=5,H=4,O=3", "B=8,K=16,H=12,O=5"],
        &["O1", "O2"],
    ),
];

/// Runs one program at one shape on `target`; `None` when every output checks, else a
/// description.
fn run(file: &str, shape: &str, outputs: &[&str], target: &str) -> Option<String> {
    let path = format!("examples/tc/{file}");
    let args = [
        "run",
        path.as_str(),
        "--param",
        shape,
        "--check",
        "--target",
        target,
    ];
    let o = polyc(&args);
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    let ok = o.status.code() == Some(0)
        && lines.len() == outputs.len()
        && lines
            .iter()
            .zip(outputs)
            .all(|(l, name)| l.starts_with(&format!("{name}: max_abs_err=")) && l.ends_with(" ok"));
    (!ok).then(|| {
        format!(
            "polyc {}: exit {:?}\n{}{}",
            args.join(" "),
            o.status.code(),
            out,
            stderr(&o)
        )
    })
}

#[test]
fn every_tc_program_checks_at_two_shapes() {
    checks_on("cpu");
}

/// The same programs on the GPU target (OpenCL on PoCL here): every target that exists
/// with a back end.
#[test]
fn every_tc_program_checks_at_two_shapes_on_the_gpu() {
    checks_on("gpu");
}

fn checks_on(target: &str) {
    let jobs: Vec<(&str, &str, &[&str])> = PROGRAMS
        .iter()
        .flat_map(|(f, shapes, outs)| shapes.iter().map(move |s| (*f, *s, *outs)))
        .collect();
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 4));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some((f, shape, outs)) = jobs.get(i) else {
                    break;
                };
                if let Some(e) = run(f, shape, outs, target) {
                    failures.lock().unwrap().push(e);
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {} runs failed:\n{}",
        failures.len(),
        jobs.len(),
        failures.join("\n")
    );
}

#[test]
fn every_tc_example_is_tested() {
    let mut files: Vec<String> = std::fs::read_dir(root().join("examples/tc"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tc"))
        .collect();
    files.sort();
    let mut listed: Vec<String> = PROGRAMS.iter().map(|p| p.0.to_string()).collect();
    listed.sort();
    assert_eq!(files, listed);
    assert!(files.len() >= 10);
}

#[test]
fn tc_files_are_detected_and_lang_overrides() {
    let prog = "examples/tc/matmul_tt.tc";
    let auto = polyc_ok(&[prog, "--param", "M=4,N=4,K=4"]);
    let tc = polyc_ok(&[prog, "--param", "M=4,N=4,K=4", "--lang", "tc"]);
    assert_eq!(auto, tc);
    insta::assert_snapshot!(polyc_err(&[prog, "--lang", "polyc"]));
    // polyc's own examples are not TC.
    polyc_ok(&[
        "examples/matmul.tc",
        "--param",
        "M=4,N=4,K=4",
        "--lang",
        "auto",
    ]);
    insta::assert_snapshot!(polyc_err(&[prog, "--lang", "halide"]));
}

macro_rules! tc_error {
    ($name:ident, $file:expr $(, $extra:expr)*) => {
        #[test]
        fn $name() {
            let f = fixture(concat!("tc/", $file));
            insta::assert_snapshot!(polyc_err(&[f.as_str(), "--param", "N=8" $(, $extra)*]));
        }
    };
}

/// TC's timestep loops run with polyc's loop meaning (checked against the interpreter).
#[test]
fn for_loop_runs() {
    let f = fixture("tc/for_loop.tc");
    run_checked(&["run", f.as_str(), "--param", "N=8,T=5", "--check"]);
}

tc_error!(uint8_has_no_polyc_type, "uint8.tc");
tc_error!(unsupported_builtin, "pow.tc");
tc_error!(inputs_are_immutable, "input_written.tc");
tc_error!(assignment_with_reduction_index, "assign_with_reduction.tc");
tc_error!(dimension_specifier, "dim_specifier.tc");
tc_error!(float_remainder, "float_remainder.tc");
tc_error!(bool_output, "bool_output.tc");
tc_error!(narrowing_without_cast, "narrowing.tc");
tc_error!(output_not_starting_at_zero, "offset_output.tc");
tc_error!(
    polyc_type_name_in_tc_file,
    "polyc_type_in_tc.tc",
    "--lang",
    "tc"
);
tc_error!(index_only_on_the_left, "lhs_only_index.tc");
tc_error!(equivalence_annotation, "equivalent.tc");
tc_error!(function_call, "call.tc");
tc_error!(missing_operator, "missing_operator.tc");
