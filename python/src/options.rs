//! The Python keyword arguments, as JSON, into the CLI's [`CompileOptions`].
//!
//! Each value goes through the parser of the flag it stands for, so an error reads as
//! the CLI's would (`--param: ...`, `--lang: ...`).

use miette::{miette, IntoDiagnostic, Result, WrapErr};
use polyc::pipeline::options::{parse_dynamic, parse_sizes, CompileOptions};
use serde_json::Value;

/// The keys `polyc.compile` sends; anything else is an internal error.
const KEYS: [&str; 12] = [
    "program",
    "entry",
    "lang",
    "params",
    "scheduler",
    "isl_options",
    "tile_spec",
    "policy",
    "target",
    "dynamic",
    "device",
    "max_statements",
];

/// Parses the JSON object the Python side built into compile options.
pub fn parse(json: &str) -> Result<CompileOptions> {
    let v: Value = serde_json::from_str(json)
        .into_diagnostic()
        .wrap_err("internal error: the options are not JSON")?;
    let obj = v
        .as_object()
        .ok_or_else(|| miette!("internal error: the options are not an object"))?;
    if let Some(k) = obj.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(miette!("internal error: unknown option `{k}`"));
    }
    let program = text(&v, "program")?.ok_or_else(|| miette!("internal error: no program"))?;
    let mut opts = CompileOptions::for_program(program);
    opts.entry = text(&v, "entry")?;
    if let Some(lang) = text(&v, "lang")? {
        opts.lang = lang.parse()?;
    }
    opts.params = parse_sizes(&list(&v, "params")?, "--param")?;
    if let Some(s) = text(&v, "scheduler")? {
        opts.scheduler = s.parse()?;
    }
    opts.isl_options = list(&v, "isl_options")?;
    opts.tile_spec = text(&v, "tile_spec")?;
    opts.policy = text(&v, "policy")?;
    opts.target = text(&v, "target")?;
    opts.dynamic = parse_dynamic(&list(&v, "dynamic")?)?;
    opts.device = match text(&v, "device")?.as_deref() {
        None | Some("auto") => targets::Device::Auto,
        Some("cuda") => targets::Device::Cuda,
        Some("opencl") => targets::Device::OpenCl,
        Some(other) => {
            return Err(miette!(
                help = "use device=\"auto\", \"cuda\" or \"opencl\"",
                "device `{other}` is not a device kind"
            ))
        }
    };
    if let Some(n) = v.get("max_statements").and_then(Value::as_u64) {
        opts.max_statements = n as usize;
    }
    Ok(opts)
}

/// A string field, `None` when absent or null.
fn text(v: &Value, key: &str) -> Result<Option<String>> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(miette!(
            "internal error: option `{key}` is {other}, not a string"
        )),
    }
}

/// A list of strings, empty when absent.
fn list(v: &Value, key: &str) -> Result<Vec<String>> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| {
                i.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| miette!("internal error: option `{key}` holds {i}"))
            })
            .collect(),
        Some(other) => Err(miette!(
            "internal error: option `{key}` is {other}, not a list"
        )),
    }
}
