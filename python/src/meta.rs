//! A compiled kernel's signature as JSON, for the Python side: sizes, arguments in the
//! entry's order, shapes as expressions over the sizes, and statement locations for
//! run-time errors.

use polyc::pipeline::stages::Compiled;
use polyhedral::ir::{Aff, InputRef, Program, TensorRole};
use serde_json::{json, Value};

/// The signature of `compiled` for `target`.
pub fn signature(compiled: &Compiled, target: &str) -> String {
    let prog = &compiled.program;
    let params: Vec<Value> = prog
        .params
        .iter()
        .zip(&compiled.param_values)
        .map(|(p, v)| json!({"name": p.name, "value": v}))
        .collect();
    let inputs: Vec<Value> = prog
        .inputs
        .iter()
        .map(|i| match *i {
            InputRef::Tensor(t) => {
                let mut v = tensor(prog, t);
                v["kind"] = json!("tensor");
                v["inplace"] = json!(prog.stmts.iter().any(|s| s.lhs == t));
                v
            }
            InputRef::Scalar(s) => json!({
                "kind": "scalar",
                "name": prog.scalars[s].name,
                "dtype": prog.scalars[s].dtype.to_string(),
                "id": s,
            }),
        })
        .collect();
    let inout = polyhedral::data::inout_outputs(prog);
    let outputs: Vec<Value> = prog
        .outputs
        .iter()
        .map(|&t| {
            let mut v = tensor(prog, t);
            v["inout"] = json!(inout.contains(&t));
            v
        })
        .collect();
    let stmts: Vec<String> = prog
        .stmts
        .iter()
        .map(|s| {
            let (line, col) = compiled.source.line_col(s.span.start);
            format!("{}:{line}:{col}", compiled.source.name)
        })
        .collect();
    let dynamic: Vec<Value> = compiled
        .dynamic
        .iter()
        .map(|d| json!({"name": d.name, "values": d.values_text()}))
        .collect();
    json!({
        "name": prog.name,
        "entry": targets::codegen::cfamily::entry_symbol(prog),
        "target": target,
        "tensors": prog.tensors.len(),
        "temporaries": prog.tensors.iter().filter(|t| t.role == TensorRole::Temp).count(),
        "params": params,
        "inputs": inputs,
        "outputs": outputs,
        "stmts": stmts,
        "dynamic": dynamic,
        "notes": compiled.notes,
        "timings": compiled.timings.iter().map(|t| json!([t.step, t.ms])).collect::<Vec<_>>(),
    })
    .to_string()
}

/// A tensor's name, dtype, id and shape.
fn tensor(prog: &Program, t: usize) -> Value {
    let ten = &prog.tensors[t];
    json!({
        "name": ten.name,
        "dtype": ten.dtype.to_string(),
        "id": t,
        "shape": ten.shape.iter().map(aff).collect::<Vec<_>>(),
    })
}

/// A shape expression: `{"c": 4}`, `{"p": 0}` (size 0), `{"add": [a, b]}`, `{"sub": [a,
/// b]}`, `{"mul": [k, a]}`, `{"neg": a}`, `{"fdiv": [a, k]}`, `{"mod": [a, k]}`.
fn aff(a: &Aff) -> Value {
    match a {
        Aff::Const(c) => json!({"c": c}),
        Aff::Param(p) => json!({"p": p}),
        Aff::Iter(i) => json!({"iter": i}),
        Aff::Add(x, y) => json!({"add": [aff(x), aff(y)]}),
        Aff::Sub(x, y) => json!({"sub": [aff(x), aff(y)]}),
        Aff::Mul(k, x) => json!({"mul": [k, aff(x)]}),
        Aff::Neg(x) => json!({"neg": aff(x)}),
        Aff::FloorDiv(x, k) => json!({"fdiv": [aff(x), k]}),
        Aff::Mod(x, k) => json!({"mod": [aff(x), k]}),
    }
}
