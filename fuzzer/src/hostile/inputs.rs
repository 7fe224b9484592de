//! The hostile invocations: mutated programs, tile specs, target descriptions and flags.

use crate::gen::generate;
use polyhedral::diag::SourceFile;
use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_yaml::Value;
use std::path::Path;

/// What an invocation mutates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The program text.
    Program,
    /// The tile spec.
    Spec,
    /// The target description.
    Desc,
    /// A flag's value or a size.
    Flags,
}

/// One run of the polyc binary.
#[derive(Clone, Debug)]
pub struct Invocation {
    /// What it mutates.
    pub kind: Kind,
    /// The arguments (relative paths name `files`).
    pub args: Vec<String>,
    /// Files written into the run's folder first.
    pub files: Vec<(String, Vec<u8>)>,
    /// What was mutated, for the report.
    pub note: String,
    /// A `run --check` (exit 3 allowed).
    pub checks: bool,
}

impl Invocation {
    /// Every argument and file as text (for the known-bug tests).
    pub fn all_text(&self) -> String {
        let mut t = self.args.join(" ");
        for (_, d) in &self.files {
            t.push('\n');
            t.push_str(&String::from_utf8_lossy(d));
        }
        t
    }
}

/// Tokens the program mutator inserts.
const VOCAB: &[&str] = &[
    "(",
    ")",
    ",",
    "+",
    "-",
    "*",
    "/ 0",
    "% 0",
    "=",
    "+=!",
    "max=!",
    "where",
    " in ",
    ":",
    "0:",
    "i",
    "N",
    "2147483648",
    "4611686018427387904",
    "-1",
    "1e308",
    "def",
    "{",
    "}",
    ";",
    "\n",
    "exp(",
    "select(",
    "cast<i8>(",
    "f16",
    "i64",
    "#",
    "\u{0}",
    "\u{feff}",
];

/// Invocation `rng` draws: one of the four kinds.
pub fn invocation(rng: &mut ChaCha8Rng, seeds: &[(String, String)], root: &Path) -> Invocation {
    match rng.gen_range(0..10) {
        0..=3 => program_invocation(rng, seeds),
        4..=5 => spec_invocation(rng, root),
        6..=7 => desc_invocation(rng, root),
        _ => flags_invocation(rng, root),
    }
}

/// The size names of the first `def` of `text`, if it parses.
fn size_names(text: &str) -> Vec<String> {
    let src = SourceFile::new("p.tc", text);
    let first = polyhedral::lang::def_names(&src)
        .ok()
        .and_then(|v| v.first().cloned());
    polyhedral::lang::compile(&src, first.as_deref())
        .map(|p| p.params.iter().map(|s| s.name.clone()).collect())
        .unwrap_or_default()
}

/// One random text mutation of `t`; returns its description.
fn mutate_text(rng: &mut ChaCha8Rng, t: &mut String) -> String {
    let len = t.len();
    let at = |rng: &mut ChaCha8Rng, t: &str| {
        let mut p = rng.gen_range(0..=t.len());
        while !t.is_char_boundary(p) {
            p -= 1;
        }
        p
    };
    match rng.gen_range(0..9) {
        0 => {
            let nums: Vec<(usize, usize)> = number_spans(t);
            if let Some(&(s, e)) = nums.get(rng.gen_range(0..nums.len().max(1))) {
                let v = hostile_number(rng);
                t.replace_range(s..e, v);
                return format!("a number replaced by `{v}`");
            }
            "no number to replace".into()
        }
        1 if len > 0 => {
            let s = at(rng, t);
            let mut e = (s + rng.gen_range(1..12)).min(len);
            while !t.is_char_boundary(e) {
                e -= 1;
            }
            let cut: String = t[s..e].to_string();
            t.replace_range(s..e, "");
            format!("deleted {cut:?}")
        }
        2 | 3 => {
            let mut lines: Vec<String> = t.lines().map(str::to_string).collect();
            if lines.len() < 2 {
                return "too short to move lines".into();
            }
            let (a, b) = (rng.gen_range(0..lines.len()), rng.gen_range(0..lines.len()));
            let what = if rng.gen_bool(0.5) {
                lines.swap(a, b);
                format!("swapped lines {} and {}", a + 1, b + 1)
            } else {
                let l = lines[a].clone();
                lines.insert(b, l);
                format!("copied line {} before line {}", a + 1, b + 1)
            };
            *t = lines.join("\n") + "\n";
            what
        }
        4 | 5 => {
            let tok = *choose(rng, VOCAB);
            let p = at(rng, t);
            t.insert_str(p, tok);
            format!("inserted {tok:?}")
        }
        6 => {
            let types = ["f16", "f32", "f64", "i8", "i32", "i64"];
            let (from, to) = (*choose(rng, &types), *choose(rng, &types));
            *t = t.replacen(from, to, 1);
            format!("the first {from} made {to}")
        }
        7 => {
            // A division by zero at the end of the first statement.
            match t.find(")\n").filter(|&p| t[..p].contains('=')) {
                Some(p) => {
                    let op = if rng.gen_bool(0.5) { " / 0" } else { " % 0" };
                    t.insert_str(p + 1, op);
                    format!("`{op}` appended to a statement")
                }
                None => "no statement to divide".into(),
            }
        }
        _ => {
            let p = at(rng, t);
            t.truncate(p);
            format!("truncated at byte {p}")
        }
    }
}

/// The byte spans of the decimal numbers in `t`.
fn number_spans(t: &str) -> Vec<(usize, usize)> {
    let b = t.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit()
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
        {
            let s = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            out.push((s, i));
        } else {
            i += 1;
        }
    }
    out
}

/// Sizes for `names`: small odd values, one sometimes hostile.
fn sizes_arg(rng: &mut ChaCha8Rng, names: &[String], hostile: bool) -> String {
    let bad = hostile.then(|| rng.gen_range(0..names.len().max(1)));
    names
        .iter()
        .enumerate()
        .map(|(k, n)| {
            let v = if Some(k) == bad {
                hostile_number(rng).to_string()
            } else {
                choose(rng, &[1, 2, 3, 5, 7, 11, 13]).to_string()
            };
            format!("{n}={v}")
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// A mutated program, compiled (sometimes for the GPU or Gemmini) or run with `--check`.
fn program_invocation(rng: &mut ChaCha8Rng, seeds: &[(String, String)]) -> Invocation {
    let (origin, mut text) = if seeds.is_empty() || rng.gen_bool(0.2) {
        ("generated".to_string(), generated_seed(rng))
    } else {
        let (p, t) = choose(rng, seeds).clone();
        (p, t)
    };
    let names = size_names(&text);
    let mut notes = vec![origin];
    for _ in 0..rng.gen_range(1..=3) {
        notes.push(mutate_text(rng, &mut text));
    }
    let run = rng.gen_bool(0.3);
    let mut args: Vec<String> = Vec::new();
    if run {
        args.push("run".into());
    }
    args.push("prog.tc".into());
    if !names.is_empty() && (run || rng.gen_bool(0.8)) {
        args.push("--param".into());
        let hostile = rng.gen_bool(0.15);
        args.push(sizes_arg(rng, &names, hostile));
    }
    if run {
        args.push("--check".into());
    } else {
        if rng.gen_bool(0.25) {
            args.extend([
                "--target".into(),
                choose(rng, &["gpu", "gemmini"]).to_string(),
            ]);
        }
        args.extend(["-o".into(), "out.c".into()]);
    }
    Invocation {
        kind: Kind::Program,
        args,
        files: vec![("prog.tc".into(), text.into_bytes())],
        note: notes.join("; "),
        checks: run,
    }
}

/// Valid (program, sizes, spec, target) starting points for spec mutations.
const SPEC_SEEDS: &[(&str, &str, &str, &str)] = &[
    (
        "examples/matmul.tc",
        "M=37,N=29,K=23",
        "S_1: 32@L2 8@L1, 16@L1, 8@L1\n",
        "cpu",
    ),
    (
        "examples/conv_chain.tc",
        "H=20,W=20,KH=3,KW=3",
        "S_4: 8@L1, 8@L1\n",
        "cpu",
    ),
    (
        "examples/conv_chain_temp.tc",
        "H=20,W=18,KH=3,KW=2",
        "S_4: 8@L2 4@L1, 8@L1\n",
        "cpu",
    ),
    (
        "examples/matmul.tc",
        "M=37,N=29,K=23",
        "S_1: 32@shared 4@register, 32@shared 4@register, 8@shared\n",
        "gpu",
    ),
    (
        "examples/gemmini/gemm.tc",
        "M=37,N=29,K=23",
        "S_1: 32@accumulator, 32@accumulator, 64@scratchpad\n",
        "gemmini",
    ),
];

/// Pieces the spec mutator inserts.
const SPEC_VOCAB: &[&str] = &[
    "?",
    "[0..4611686018427387904]",
    "[5..1]",
    "{0, -1}",
    "{}",
    "@L9",
    "@shared",
    "@reg",
    ", 4@L1",
    " 2@L1",
    "S_99: 4@L1\n",
    "S_-1",
    "S_0: 0@L1\n",
    ":",
    ",",
    "@",
    "\n",
    "#",
];

/// A mutated tile spec for a program it was valid for.
fn spec_invocation(rng: &mut ChaCha8Rng, root: &Path) -> Invocation {
    let (prog, sizes, spec, target) = *choose(rng, SPEC_SEEDS);
    let mut text = spec.to_string();
    let mut notes = Vec::new();
    for _ in 0..rng.gen_range(1..=2) {
        if rng.gen_bool(0.5) {
            let tok = *choose(rng, SPEC_VOCAB);
            let mut p = rng.gen_range(0..=text.len());
            while !text.is_char_boundary(p) {
                p -= 1;
            }
            text.insert_str(p, tok);
            notes.push(format!("inserted {tok:?}"));
        } else {
            notes.push(mutate_text(rng, &mut text));
        }
    }
    let run = target != "gpu" && rng.gen_bool(0.2);
    let mut args: Vec<String> = Vec::new();
    if run {
        args.push("run".into());
    }
    args.push(root.join(prog).display().to_string());
    args.extend([
        "--param".into(),
        sizes.into(),
        "--tile-spec".into(),
        "tiles.txt".into(),
    ]);
    if target != "cpu" {
        args.extend(["--target".into(), target.into()]);
    }
    if run {
        args.push("--check".into());
    } else {
        args.extend(["-o".into(), "out.c".into()]);
    }
    Invocation {
        kind: Kind::Spec,
        args,
        files: vec![("tiles.txt".into(), text.into_bytes())],
        note: format!("{target} spec {spec:?}: {}", notes.join("; ")),
        checks: run,
    }
}

/// Every path to a node of `v` (mapping keys and sequence positions).
fn paths(v: &Value, prefix: &mut Vec<Value>, out: &mut Vec<Vec<Value>>) {
    out.push(prefix.clone());
    match v {
        Value::Mapping(m) => {
            for (k, c) in m {
                prefix.push(k.clone());
                paths(c, prefix, out);
                prefix.pop();
            }
        }
        Value::Sequence(s) => {
            for (i, c) in s.iter().enumerate() {
                prefix.push(Value::from(i as u64));
                paths(c, prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

/// The node of `v` at `path`, mutably.
fn node_mut<'a>(v: &'a mut Value, path: &[Value]) -> Option<&'a mut Value> {
    let Some((first, rest)) = path.split_first() else {
        return Some(v);
    };
    let child = match v {
        Value::Mapping(m) => m.get_mut(first)?,
        Value::Sequence(s) => s.get_mut(first.as_u64()? as usize)?,
        _ => return None,
    };
    node_mut(child, rest)
}

/// `buffers.0.bytes`: a path as text.
fn path_text(p: &[Value]) -> String {
    p.iter()
        .map(|v| match v {
            Value::String(s) => s.clone(),
            other => serde_yaml::to_string(other)
                .unwrap_or_default()
                .trim()
                .to_string(),
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// One random mutation of a description; returns its description.
fn mutate_desc(rng: &mut ChaCha8Rng, doc: &mut Value) -> String {
    let mut all = Vec::new();
    paths(doc, &mut Vec::new(), &mut all);
    all.retain(|p| !p.is_empty());
    let Some(path) = all.get(rng.gen_range(0..all.len().max(1))).cloned() else {
        return "an empty description".into();
    };
    let where_ = path_text(&path);
    let (parent_path, last) = path.split_at(path.len() - 1);
    let Some(parent) = node_mut(doc, parent_path) else {
        return "no such node".into();
    };
    match (rng.gen_range(0..4), parent) {
        (0, Value::Mapping(m)) => {
            m.remove(&last[0]);
            format!("deleted {where_}")
        }
        (1, Value::Sequence(s)) if s.len() >= 2 => {
            let (a, b) = (rng.gen_range(0..s.len()), rng.gen_range(0..s.len()));
            s.swap(a, b);
            format!("swapped {} elements {a} and {b}", path_text(parent_path))
        }
        (1, Value::Sequence(s)) => {
            s.clear();
            format!("emptied {}", path_text(parent_path))
        }
        (_, parent) => {
            let Some(node) = node_mut(parent, last) else {
                return "no such node".into();
            };
            let text = hostile_number(rng);
            let new = match text.parse::<i64>() {
                Ok(n) => Value::from(n),
                Err(_) => match text.parse::<f64>() {
                    Ok(f) if rng.gen_bool(0.5) => Value::from(f),
                    _ => Value::from(text),
                },
            };
            *node = new;
            format!("{where_} set to `{text}`")
        }
    }
}

/// A mutated target description, used to compile, explain or run a GEMM.
fn desc_invocation(rng: &mut ChaCha8Rng, root: &Path) -> Invocation {
    let files = ["cpu", "a100", "h100", "gemmini", "gemmini-fp32", "ascend"];
    let name = *choose(rng, &files);
    let original = std::fs::read_to_string(root.join(format!("specs/targets/{name}.yaml")))
        .unwrap_or_default();
    let mut doc: Value = serde_yaml::from_str(&original).unwrap_or(Value::Null);
    let mut notes = vec![format!("{name}.yaml")];
    for _ in 0..rng.gen_range(1..=3) {
        notes.push(mutate_desc(rng, &mut doc));
    }
    let text = serde_yaml::to_string(&doc).unwrap_or_default();
    let gemmini = name.starts_with("gemmini");
    let prog = match (gemmini, name) {
        (true, "gemmini-fp32") => "examples/matmul.tc",
        (true, _) => "examples/gemmini/gemm.tc",
        _ => "examples/matmul.tc",
    };
    let sizes = format!(
        "M={},N={},K={}",
        rng.gen_range(1..=40),
        rng.gen_range(1..=40),
        rng.gen_range(1..=40)
    );
    let mode = rng.gen_range(0..10);
    let runs = name == "cpu" || gemmini || (mode == 9 && name != "ascend");
    let (verb, tail): (Option<&str>, Vec<&str>) = match mode {
        0..=4 => (None, vec!["-o", "out.c"]),
        5..=6 => (Some("explain"), vec![]),
        _ if runs => (Some("run"), vec!["--check"]),
        _ => (None, vec!["-o", "out.c"]),
    };
    let mut args: Vec<String> = verb.map(|v| vec![v.to_string()]).unwrap_or_default();
    args.push(root.join(prog).display().to_string());
    args.extend([
        "--param".into(),
        sizes,
        "--target".into(),
        "desc.yaml".into(),
    ]);
    args.extend(tail.iter().map(|s| s.to_string()));
    Invocation {
        kind: Kind::Desc,
        checks: verb == Some("run"),
        args,
        files: vec![("desc.yaml".into(), text.into_bytes())],
        note: notes.join("; "),
    }
}

/// Flags whose values are mutated, with the value kinds they take.
const FLAG_VALUES: &[(&str, &[&str])] = &[
    ("--search-budget", &[]),
    ("--search-top", &[]),
    ("--seed", &[]),
    ("--max-interp-instances", &[]),
    (
        "--isl-option",
        &[
            "max_operations=",
            "max_coefficient=",
            "serialize_sccs=",
            "algorithm=",
            "bogus=",
        ],
    ),
    ("--dynamic", &["N=1..", "N={", "M=0.."]),
    ("--scheduler", &["isl", "ilp", "bogus", ""]),
    ("--fuse", &["max", "none", "bogus"]),
    ("--pack", &["all", "bogus"]),
    ("--emit", &["opencl", "cuda", "c", "bogus"]),
    ("--via", &["c", "model", "bogus"]),
    ("--policy", &["gemmini-default", "bogus"]),
    ("--entry", &["matmul", "nope", ""]),
    ("--oracle", &["untransformed", "bogus"]),
    ("--inputs", &["/nonexistent", "."]),
    ("--load-tree", &["scheduled=/nonexistent", "bogus"]),
    ("-o", &["/nonexistent/out.c", ".", "-"]),
];

/// A hostile size or flag value for a small example.
fn flags_invocation(rng: &mut ChaCha8Rng, root: &Path) -> Invocation {
    let (prog, names): (&str, &[&str]) = *choose(
        rng,
        &[
            ("examples/matmul.tc", &["M", "N", "K"][..]),
            ("examples/conv_chain.tc", &["H", "W", "KH", "KW"][..]),
            ("examples/softmax.tc", &["R", "N"][..]),
        ],
    );
    let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    let run = rng.gen_bool(0.4);
    let mut args: Vec<String> = Vec::new();
    if run {
        args.push("run".into());
    }
    args.push(root.join(prog).display().to_string());
    let hostile_size = rng.gen_bool(0.35);
    args.extend(["--param".into(), sizes_arg(rng, &names, hostile_size)]);
    let mut note = if hostile_size {
        "a hostile size".to_string()
    } else {
        String::new()
    };
    if !hostile_size || rng.gen_bool(0.3) {
        let (flag, forms) = *choose(rng, FLAG_VALUES);
        let value = match forms.len() {
            0 => hostile_number(rng).to_string(),
            _ => {
                let f = *choose(rng, forms);
                if f.ends_with('=') || f.ends_with("..") || f.ends_with('{') {
                    format!("{f}{}", hostile_number(rng))
                } else {
                    f.to_string()
                }
            }
        };
        note = format!("{note} {flag} {value:?}");
        args.extend([flag.to_string(), value]);
    }
    if run {
        args.push("--check".into());
    } else if !args.contains(&"-o".to_string()) {
        args.extend(["-o".into(), "out.c".into()]);
    }
    Invocation {
        kind: Kind::Flags,
        args,
        files: Vec::new(),
        note: note.trim().to_string(),
        checks: run,
    }
}

/// The hostile numbers: zero, negatives, the edges of 32 and 64 bits, primes, and text
/// that is not a number.
pub const HOSTILE_NUMBERS: &[&str] = &[
    "0",
    "-1",
    "1",
    "3",
    "7",
    "13",
    "7919",
    "65537",
    "2147483647",
    "2147483648",
    "4294967296",
    "4611686018427387904",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "1e9",
    "2.5",
    "0x10",
    "",
    "abc",
];

/// A random hostile number (as text).
pub fn hostile_number(rng: &mut ChaCha8Rng) -> &'static str {
    HOSTILE_NUMBERS[rng.gen_range(0..HOSTILE_NUMBERS.len())]
}

/// Shuffles and picks helpers for the mutators.
pub(crate) fn choose<'a, T>(rng: &mut ChaCha8Rng, v: &'a [T]) -> &'a T {
    v.choose(rng).expect("non-empty choice")
}

/// A generated program as a further seed (names its sizes `N, M, K, R, S`).
pub(crate) fn generated_seed(rng: &mut ChaCha8Rng) -> String {
    generate(rng, "h").render()
}
