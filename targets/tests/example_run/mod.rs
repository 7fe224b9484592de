//! Shared by the run tests of tiled and fused schedules: load a bundled example with
//! bound sizes, and run a schedule of it against the reference interpreter.
#![allow(dead_code)]

use polyhedral::data::{compare, generate_inputs};
use polyhedral::diag::SourceFile;
use polyhedral::interp::interpret;
use polyhedral::ir::{Program, TensorRole};
use polyhedral::isl::Ctx;
use schedule_tree::{Buffer, BufferRole, Level};
use targets::{compile_c, emit_c, lower, run, CcOptions, EmitOptions};

/// The CPU buffers the tests tile for (outermost first).
pub const CPU: [Level; 3] = [
    Level::new(Buffer::from_static("L2"), 2097152, BufferRole::Cache),
    Level::new(Buffer::from_static("L1"), 49152, BufferRole::Cache),
    Level::new(Buffer::from_static("reg"), 2048, BufferRole::Registers),
];

/// A bundled example with every size bound.
pub struct Example {
    /// The source file.
    pub src: SourceFile,
    /// The program.
    pub prog: Program,
    /// Each size's value, as the model takes them.
    pub values: Vec<Option<i64>>,
    /// Each size's value.
    pub sizes: Vec<i64>,
}

/// Loads `examples/<example>` and binds `params` (every size must be given).
pub fn load_example(example: &str, params: &[(&str, i64)]) -> Example {
    let path = format!("{}/../examples/{example}", env!("CARGO_MANIFEST_DIR"));
    let src = SourceFile::read(&path).expect("example exists");
    let prog = polyhedral::lang::compile(&src, None).expect("compiles");
    let values: Vec<Option<i64>> = prog
        .params
        .iter()
        .map(|p| params.iter().find(|(n, _)| *n == p.name).map(|(_, v)| *v))
        .collect();
    let sizes: Vec<i64> = values.iter().map(|v| v.expect("all sizes bound")).collect();
    Example {
        src,
        prog,
        values,
        sizes,
    }
}

/// Lowers, emits, compiles and runs `schedule`, then compares every output and every
/// input updated in place with the interpreter; `context` is printed on a mismatch.
/// Returns the C.
pub fn run_and_compare(
    ctx: &Ctx,
    ex: &Example,
    param_texts: &[String],
    schedule: &isl_rs::Schedule,
    context: &str,
) -> String {
    let prog = &ex.prog;
    let kernel = lower(ctx, prog, schedule).expect("lowers");
    let c = emit_c(
        prog,
        param_texts,
        &kernel,
        &EmitOptions {
            poison_temps: true,
            ..Default::default()
        },
    );
    let k = compile_c(&c, &CcOptions::default()).expect("compiles");
    let (mut tensors, scalars) = generate_inputs(prog, &ex.sizes, 11);
    let mut reference = tensors.clone();
    run(&k, prog, &ex.sizes, &mut tensors, &scalars).expect("runs");
    interpret(prog, &ex.sizes, &mut reference, &scalars).expect("interprets");
    let mut checked = prog.outputs.clone();
    for (i, t) in prog.tensors.iter().enumerate() {
        if t.role == TensorRole::Input && prog.stmts.iter().any(|s| s.lhs == i) {
            checked.push(i);
        }
    }
    for t in checked {
        let cmp = compare(&reference[t], &tensors[t]);
        assert!(cmp.ok, "{}: {cmp:?}\n{context}\n{c}", prog.tensors[t].name);
    }
    c
}
