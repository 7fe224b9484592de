//! Loading a description: the built-in ones, files, and `--target NAME|FILE`; each is
//! parsed, checked ([`super::check`]) and its buffers put in nesting order.

use polyhedral::diag::SourceFile;
use polyhedral::ir::Span;

use super::check;
use super::locate::offset_of;
use super::TargetDesc;

/// The text of the built-in CPU description, `specs/targets/cpu.yaml`.
pub const BUILTIN_CPU_YAML: &str = include_str!("../../../specs/targets/cpu.yaml");

/// The built-in descriptions `--target NAME` accepts: name, file in `specs/targets/`, text.
/// `gpu` is the A100.
pub const BUILTIN: &[(&str, &str, &str)] = &[
    ("cpu", "cpu.yaml", BUILTIN_CPU_YAML),
    (
        "gpu",
        "a100.yaml",
        include_str!("../../../specs/targets/a100.yaml"),
    ),
    (
        "a100",
        "a100.yaml",
        include_str!("../../../specs/targets/a100.yaml"),
    ),
    (
        "h100",
        "h100.yaml",
        include_str!("../../../specs/targets/h100.yaml"),
    ),
    (
        "gemmini",
        "gemmini.yaml",
        include_str!("../../../specs/targets/gemmini.yaml"),
    ),
    (
        "gemmini-fp32",
        "gemmini-fp32.yaml",
        include_str!("../../../specs/targets/gemmini-fp32.yaml"),
    ),
];

impl TargetDesc {
    /// Parses and validates a description. Syntax and schema errors are located at the
    /// line and column serde_yaml reports; every other error (a value out of its range, a
    /// field the kind does not use, a buffer whose role, scope or capacity does not fit,
    /// a kind's missing buffer) at the offending node, with the value and a remedy (see
    /// [`check`]). The buffers come back in nesting order: by scope (chip, core, block,
    /// thread), in the listed order within a scope.
    pub fn load(file: &SourceFile) -> miette::Result<TargetDesc> {
        let desc: TargetDesc = serde_yaml::from_str(&file.text).map_err(|e| {
            let off = e
                .location()
                .map_or(0, |l| offset_of(&file.text, l.line(), l.column()));
            let msg = e.to_string();
            let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
            miette::Report::new(file.error(
                Span::new(off, off),
                format!("invalid target description: {msg}"),
                "here",
                "see specs/targets/cpu.yaml for the schema: name, kind (cpu, gpu, gemmini, npu), buffers (name, role, scope, bytes, …) from outermost to innermost",
            ))
        })?;
        check::Check::new(file, &desc).all()?;
        // Buffers nest by scope whatever their order in the file (item: a GPU's register
        // file listed before its shared memory is still inside it).
        let order = check::nesting_order(&desc);
        let mut desc = desc;
        desc.buffers = order.iter().map(|&i| desc.buffers[i].clone()).collect();
        Ok(desc)
    }

    /// The built-in CPU description ([`BUILTIN_CPU_YAML`]).
    pub fn builtin_cpu() -> miette::Result<TargetDesc> {
        TargetDesc::load(&SourceFile::new(
            "<built-in specs/targets/cpu.yaml>",
            BUILTIN_CPU_YAML,
        ))
    }

    /// The built-in description `name` (see [`BUILTIN`]).
    pub fn builtin(name: &str) -> Option<miette::Result<TargetDesc>> {
        BUILTIN
            .iter()
            .find(|(n, _, _)| *n == name)
            .map(|(_, file, text)| {
                TargetDesc::load(&SourceFile::new(
                    format!("<built-in specs/targets/{file}>"),
                    *text,
                ))
            })
    }

    /// What `--target NAME|FILE` names: a built-in description, or a YAML file (any
    /// argument with a `/` or ending in `.yaml`/`.yml`, or an existing file). Anything else
    /// is an error that lists the built-in names.
    pub fn resolve(arg: &str) -> miette::Result<TargetDesc> {
        if let Some(d) = TargetDesc::builtin(arg) {
            return d;
        }
        let looks_like_file = arg.contains('/')
            || arg.ends_with(".yaml")
            || arg.ends_with(".yml")
            || std::path::Path::new(arg).is_file();
        if looks_like_file {
            return TargetDesc::load_path(arg);
        }
        let names: Vec<&str> = BUILTIN.iter().map(|(n, _, _)| *n).collect();
        Err(miette::miette!(
            help = format!(
                "built-in targets are {}; or give a description file, e.g. --target specs/targets/ascend.yaml",
                names.join(", ")
            ),
            "--target {arg}: there is no built-in target `{arg}` and no file of that name"
        ))
    }

    /// Reads and loads a file.
    pub fn load_path(path: &str) -> miette::Result<TargetDesc> {
        TargetDesc::load(&SourceFile::read(path)?)
    }
}
