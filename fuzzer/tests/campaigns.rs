//! The campaigns can fail: a fault injected into the kernels is caught and shrunk, a
//! crashing kernel is survived and reported, a misbehaving binary fails the hostile
//! campaign. And a short real campaign of each kind passes.

use polyc_fuzz::campaign::{case_for, Settings};
use polyc_fuzz::case::{Tgt, Tiles};
use polyc_fuzz::gen::DType;
use polyc_fuzz::shrink::Budget;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

fn fuzz(envs: &[(&str, &str)], args: &[&str]) -> Output {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_polyc-fuzz"));
    cmd.args(args).current_dir(&root);
    for (k, _) in std::env::vars() {
        if k.starts_with("POLYC_FUZZ") {
            cmd.env_remove(k);
        }
    }
    cmd.envs(envs.iter().copied());
    cmd.output().expect("polyc-fuzz starts")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The polyc binary next to this test's polyc-fuzz (built by `cargo build --workspace`).
fn polyc_binary() -> PathBuf {
    let p = Path::new(env!("CARGO_BIN_EXE_polyc-fuzz")).with_file_name("polyc");
    assert!(
        p.exists(),
        "{} is missing: build the workspace first (cargo build --release --workspace)",
        p.display()
    );
    p
}

/// The first case of the CI seed on the CPU, in f32, whose program takes a maximum, with
/// the default tile policy.
fn a_case_with_a_maximum() -> u64 {
    let s = Settings {
        seed: polyc_fuzz::CI_SEED,
        cases: 0,
        seconds: 0.0,
        jobs: 1,
        only: None,
        out: PathBuf::new(),
        gpu_share: polyc_fuzz::campaign::GPU_SHARE,
        gemmini_share: polyc_fuzz::campaign::GEMMINI_SHARE,
        o3_share: polyc_fuzz::campaign::O3_SHARE,
        inject: None,
        shrink: Budget {
            attempts: 0,
            time: Duration::ZERO,
        },
        case_limit: Duration::ZERO,
        verbose: false,
    };
    (0..10_000)
        .find(|&i| {
            let c = case_for(&s, i);
            let t = c.prog.render();
            c.cfg.target == Tgt::Cpu
                && c.prog.dtype == DType::F32
                && c.cfg.tiles == Tiles::Default
                && c.prog.stmts.len() == 3
                && (t.contains("max(") || t.contains("max=!"))
        })
        .expect("some case takes a maximum")
}

#[test]
fn an_injected_wrong_result_is_caught_and_shrunk() {
    let i = a_case_with_a_maximum().to_string();
    let out = tempfile::tempdir().unwrap();
    let o = fuzz(
        &[
            ("POLYC_FUZZ_CASE", &i),
            ("POLYC_FUZZ_INJECT", "max-is-min"),
            ("POLYC_FUZZ_OUT", out.path().to_str().unwrap()),
            ("POLYC_FUZZ_SHRINK_SECONDS", "90"),
        ],
        &["diff"],
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("FAILURE") && t.contains("(mismatch)"), "{t}");
    let dir = out.path().join(format!("{}-{i}", polyc_fuzz::CI_SEED));
    let small = std::fs::read_to_string(dir.join("prog.tc")).unwrap();
    let original = std::fs::read_to_string(dir.join("original.tc")).unwrap();
    let statements = |p: &str| p.lines().filter(|l| l.starts_with("  ")).count();
    assert!(small.contains("max"), "{small}");
    assert!(statements(&small) <= 2, "not shrunk:\n{small}");
    assert!(
        statements(&small) < statements(&original),
        "{small}\n{original}"
    );
    let cmd = std::fs::read_to_string(dir.join("cmd.txt")).unwrap();
    assert!(
        cmd.contains("polyc run prog.tc") && cmd.contains("--check"),
        "{cmd}"
    );
    // Without the injected fault, polyc itself computes the shrunk program right.
    let mut args: Vec<&str> = cmd.split_whitespace().collect();
    let env_cc = args
        .first()
        .and_then(|a| a.strip_prefix("CC=./"))
        .map(|w| dir.join(w));
    if env_cc.is_some() {
        args.remove(0);
    }
    let mut run = Command::new(polyc_binary());
    run.args(&args[1..]).current_dir(&dir);
    if let Some(w) = env_cc {
        run.env("CC", w);
    }
    let r = run.output().unwrap();
    assert_eq!(r.status.code(), Some(0), "{}", text(&r));
}

#[test]
fn a_crashing_kernel_is_a_failure_and_the_campaign_goes_on() {
    let out = tempfile::tempdir().unwrap();
    let o = fuzz(
        &[
            ("POLYC_FUZZ_CASES", "3"),
            ("POLYC_FUZZ_JOBS", "1"),
            ("POLYC_FUZZ_GPU_SHARE", "0"),
            ("POLYC_FUZZ_GEMMINI_SHARE", "0"),
            ("POLYC_FUZZ_INJECT", "trap"),
            ("POLYC_FUZZ_OUT", out.path().to_str().unwrap()),
            ("POLYC_FUZZ_SHRINK_RUNS", "3"),
        ],
        &["diff"],
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("(crash)") && t.contains("signal 4"), "{t}");
    assert!(t.contains("3 cases in"), "{t}");
    assert!(t.contains("0 passed, 0 known, 3 failed"), "{t}");
    // A crash keeps the random tile spec the worker compiled with (F10: the worker's
    // spec was lost with it, and the saved command ran the default policy instead).
    // (The shrinker may then drop it, since the injected trap crashes any kernel; the
    // original case keeps it.)
    let mut with_spec = 0;
    for entry in std::fs::read_dir(out.path()).unwrap() {
        let dir = entry.unwrap().path();
        let cmd = std::fs::read_to_string(dir.join("original.txt")).unwrap();
        let kept = dir.join("original.tiles.txt").exists();
        assert_eq!(
            kept,
            cmd.contains("--tile-spec original.tiles.txt"),
            "{cmd}"
        );
        with_spec += usize::from(kept);
    }
    assert!(with_spec > 0, "no crash kept its spec:\n{t}");
}

#[test]
fn a_short_differential_campaign_passes() {
    let out = tempfile::tempdir().unwrap();
    let o = fuzz(
        &[
            ("POLYC_FUZZ_CASES", "40"),
            ("POLYC_FUZZ_GPU_SHARE", "0"),
            ("POLYC_FUZZ_OUT", out.path().to_str().unwrap()),
        ],
        &["diff"],
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("seed 22") && t.contains("40 cases in"), "{t}");
}

/// Writes an executable shell script standing in for polyc.
fn fake_polyc(dir: &Path, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join("fake-polyc");
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

#[test]
fn the_hostile_campaign_fails_on_signals_panics_and_silent_errors() {
    for (body, expect) in [
        ("kill -SEGV $$", "killed by signal 11"),
        (
            "echo 'thread main panicked' >&2; exit 101",
            "a panic (exit 101)",
        ),
        ("exit 1", "exit 1 with nothing on standard error"),
        ("exit 2", "exit 2"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let polyc = fake_polyc(dir.path(), body);
        let o = fuzz(
            &[
                ("POLYC", polyc.to_str().unwrap()),
                ("POLYC_FUZZ_HOSTILE_CASES", "6"),
                ("POLYC_FUZZ_OUT", dir.path().to_str().unwrap()),
                ("POLYC_FUZZ_NO_KNOWN", "1"),
            ],
            &["hostile"],
        );
        let t = text(&o);
        assert_eq!(o.status.code(), Some(1), "{body}: {t}");
        assert!(t.contains(expect), "{body}: {t}");
    }
    let dir = tempfile::tempdir().unwrap();
    let polyc = fake_polyc(dir.path(), "echo 'error: no' >&2; exit 1");
    let o = fuzz(
        &[
            ("POLYC", polyc.to_str().unwrap()),
            ("POLYC_FUZZ_HOSTILE_CASES", "6"),
            ("POLYC_FUZZ_OUT", dir.path().to_str().unwrap()),
        ],
        &["hostile"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn a_short_hostile_campaign_passes() {
    let out = tempfile::tempdir().unwrap();
    let polyc = polyc_binary();
    let o = fuzz(
        &[
            ("POLYC", polyc.to_str().unwrap()),
            ("POLYC_FUZZ_HOSTILE_CASES", "30"),
            ("POLYC_FUZZ_OUT", out.path().to_str().unwrap()),
        ],
        &["hostile"],
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("30 invocations in"), "{t}");
}
