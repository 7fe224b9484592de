//! Helpers shared by the end-to-end tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs the polyc binary from the repository root.
pub fn polyc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_polyc"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("polyc starts")
}

/// Standard output as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Standard error as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A fresh temporary directory.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

/// Writes `text` to `dir/name` and returns the path as a string.
pub fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p.display().to_string()
}

/// The exit code (panics when polyc died from a signal).
pub fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or_else(|| {
        panic!(
            "polyc died from a signal\nstdout:\n{}\nstderr:\n{}",
            stdout(o),
            stderr(o)
        )
    })
}

/// Asserts the exit code, showing both streams when it differs.
pub fn assert_code(o: &Output, want: i32) {
    assert_eq!(
        o.status.code(),
        Some(want),
        "unexpected exit status\nstdout:\n{}\nstderr:\n{}",
        stdout(o),
        stderr(o)
    );
}

/// Runs polyc, asserts exit code 0 and returns standard output.
pub fn polyc_ok(args: &[&str]) -> String {
    let o = polyc(args);
    assert_code(&o, 0);
    stdout(&o)
}

/// Runs polyc, asserts exit code 1 (a user error), that nothing went to standard output,
/// and returns standard error.
pub fn polyc_err(args: &[&str]) -> String {
    let o = polyc(args);
    assert_code(&o, 1);
    assert_eq!(stdout(&o), "", "a failing polyc printed on stdout");
    stderr(&o)
}

/// `tests/fixtures/NAME` relative to the repository root (polyc runs from there).
pub fn fixture(name: &str) -> String {
    format!("tests/fixtures/{name}")
}

/// Runs the polyc binary with `dir` as the working directory (so relative file names in
/// messages do not depend on where the temporary directory is).
pub fn polyc_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_polyc"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("polyc starts")
}

/// `root()/rel` as a string, for runs from another working directory.
pub fn abs(rel: &str) -> String {
    root().join(rel).display().to_string()
}

/// Compiles the Gemmini C file `c` into `obj` with Debian's RISC-V GCC and picolibc,
/// against the real `gemmini.h` under `api` (its `include/` folder). `Err` when the
/// compiler cannot be started.
pub fn riscv_compile(api: &Path, c: &Path, obj: &Path) -> std::io::Result<Output> {
    Command::new("riscv64-unknown-elf-gcc")
        .args([
            "--specs=picolibc.specs",
            "-march=rv64gc",
            "-mabi=lp64d",
            "-O2",
            "-Werror=implicit-function-declaration",
            "-I",
        ])
        .arg(api)
        .arg("-c")
        .arg(c)
        .arg("-o")
        .arg(obj)
        .output()
}

/// `polyc ARGS` (a `run … --check`): asserts exit 0 and that every tensor matched the
/// interpreter; returns standard error.
pub fn run_checked(args: &[&str]) -> String {
    assert_checked(&polyc(args), &format!("{args:?}"))
}

/// The output of a `run … --check` (`what` names it in a failure): asserts exit 0 and that
/// every tensor matched the interpreter; returns standard error.
pub fn assert_checked(o: &Output, what: &str) -> String {
    assert_code(o, 0);
    let out = stdout(o);
    assert!(
        !out.is_empty() && out.lines().all(|l| l.ends_with(" ok")),
        "{what}:\n{out}\n{}",
        stderr(o)
    );
    stderr(o)
}

/// The Gemmini functional model's counters line in a run's standard error.
pub fn gemmini_counters(err: &str) -> String {
    err.lines()
        .find(|l| l.starts_with("polyc: ran on Gemmini functional model:"))
        .unwrap_or_else(|| panic!("no counters in:\n{err}"))
        .to_string()
}

/// An error text with the line wrapping of the report undone.
pub fn flat(s: &str) -> String {
    s.replace('│', " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The f64 tensor saved as `name` (a `.npy` file) in `dir` (`--save-io`).
pub fn f64s(dir: &Path, name: &str) -> Vec<f64> {
    let t: polyhedral::data::TensorData =
        polyhedral::npy::read_npy(&dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e:?}"));
    match t.buf {
        polyhedral::data::Buffer::F64(v) => v,
        other => panic!("{name}: expected f64, got {:?}", other.dtype()),
    }
}

/// Runs `file` at `params` with `--check` on `threads` threads (`OMP_NUM_THREADS`):
/// asserts that every tensor matched the interpreter.
pub fn checked_on(file: &str, params: &str, threads: &str) {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_polyc"))
        .args(["run", file, "--param", params, "--check"])
        .env("OMP_NUM_THREADS", threads)
        .output()
        .expect("polyc runs");
    assert_checked(&o, &format!("{file} {params} on {threads} threads"));
}

/// `polyc compile FILE --param PARAMS [EXTRA...] -o OUT`: asserts exit 0; returns (standard
/// error, the emitted C).
pub fn compiled_c(file: &str, params: &str, extra: &[&str]) -> (String, String) {
    let dir = tempdir();
    let out = dir.path().join("k.c");
    let out = out.to_str().expect("a UTF-8 path");
    let mut args = vec!["compile", file, "--param", params, "-o", out];
    args.extend_from_slice(extra);
    let o = polyc(&args);
    assert_code(&o, 0);
    let c = std::fs::read_to_string(out).expect("the emitted C");
    (stderr(&o), c)
}
