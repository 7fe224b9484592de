//! Progress notes on long compiles (`src/pipeline/progress.rs`): on standard error, only when it is
//! a terminal or `POLYC_PROGRESS_AFTER_MS` asks for them.

mod common;
use common::*;
use std::process::Command;

fn compile(env: Option<&str>) -> String {
    let dir = tempdir();
    let out = dir.path().join("a.c");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_polyc"));
    cmd.args([
        "compile",
        "examples/attention.tc",
        "--param",
        "L=256,D=64",
        "-o",
        out.to_str().expect("a path"),
    ])
    .current_dir(root())
    .env_remove("POLYC_PROGRESS_AFTER_MS");
    if let Some(ms) = env {
        cmd.env("POLYC_PROGRESS_AFTER_MS", ms);
    }
    let o = cmd.output().expect("polyc starts");
    assert_code(&o, 0);
    stderr(&o)
}

#[test]
fn long_compiles_say_what_they_finished() {
    // A first note after 1 ms: every compile takes longer than that.
    let err = compile(Some("1"));
    let notes: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("polyc: still working, "))
        .collect();
    assert!(!notes.is_empty(), "{err}");
    assert!(
        notes
            .iter()
            .all(|l| l.contains(" s in (finished: ") || l.contains(" s in (running: ")),
        "{err}"
    );
    // Notes that land inside a timed sub-step name it (`running: codegen:ast_build`): most
    // of a compile's time after scheduling is inside one.
    let named = |l: &&str| {
        l.split("running: ")
            .nth(1)
            .and_then(|r| r.split([';', ')']).next())
            .is_some_and(|step| step.contains(':') && !step.contains(' '))
    };
    assert!(notes.iter().any(named), "no note names a sub-step:\n{err}");
}

#[test]
fn no_notes_when_standard_error_is_not_a_terminal() {
    let err = compile(None);
    assert!(!err.contains("still working"), "{err}");
}
