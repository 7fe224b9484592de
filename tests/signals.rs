//! Signals (issue 22, item 13): a suite stopped by SIGINT or SIGTERM stops its children,
//! prints and writes the runs that finished, marked partial, removes its temporary
//! folders and exits 130 or 143; a single `polyc run` does the same; a SIGKILLed suite
//! child is a failed run naming the signal; a later polyc removes the folders of dead
//! polycs and never those of live ones; `polyc suite merge` refuses partial results.
//!
//! Each test runs polyc with its own `$TMPDIR`, so that the folders and the processes it
//! looks at are its own.
#![cfg(target_os = "linux")]

mod common;
use common::*;
use serde_json::Value;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// A slow run: `polyc run` checks a 2048³ GEMM against the untransformed program (tens of
/// seconds of kernel and oracle), long enough to be caught running.
const SLOW: &str = "M=2048,N=2048,K=2048";

/// Starts polyc with `tmp` as `$TMPDIR`, SIGINT and SIGTERM at their defaults (a test
/// harness started in the background may ignore SIGINT, and polyc keeps ignored signals
/// ignored), output captured.
fn start(tmp: &Path, cwd: &Path, args: &[&str]) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_polyc"));
    cmd.args(args)
        .current_dir(cwd)
        .env("TMPDIR", tmp)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: signal() is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
            Ok(())
        });
    }
    cmd.spawn().expect("polyc starts")
}

/// Waits for `child` at most `limit` (killing it and failing after); returns its status,
/// standard output and standard error.
fn finish(mut child: Child, limit: Duration) -> (ExitStatus, String, String) {
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let until = Instant::now() + limit;
    let mut stdout = String::new();
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            panic!("polyc did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    stdout.push_str(&out_reader.join().unwrap_or_default());
    (status, stdout, reader.join().unwrap_or_default())
}

/// Polls `f` every 20 ms for at most `limit`; the first `Some`.
fn wait_for<T>(limit: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let until = Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `/proc/PID/stat`: (parent pid, state).
fn stat(pid: u32) -> Option<(u32, char)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    let mut f = rest.split_whitespace();
    let state = f.next()?.chars().next()?;
    Some((f.next()?.parse().ok()?, state))
}

/// Whether `pid` is a process that has not exited (zombies have).
fn alive(pid: u32) -> bool {
    stat(pid).is_some_and(|(_, s)| s != 'Z' && s != 'X')
}

fn all_pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect()
}

/// The live children of `pid`, with their command lines.
fn children(pid: u32) -> Vec<(u32, String)> {
    all_pids()
        .into_iter()
        .filter(|&p| alive(p) && stat(p).is_some_and(|(pp, _)| pp == pid))
        .map(|p| {
            let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
            (p, String::from_utf8_lossy(&cmd).replace('\0', " "))
        })
        .collect()
}

/// Live processes whose environment holds `TMPDIR=tmp`: what polyc started under this
/// test (polyc's children, their C compilers), wherever they were reparented; as
/// `PID COMMAND LINE`.
fn processes_under(tmp: &Path) -> Vec<String> {
    let needle = format!("TMPDIR={}", tmp.display());
    all_pids()
        .into_iter()
        .filter(|&p| {
            alive(p)
                && std::fs::read(format!("/proc/{p}/environ"))
                    .is_ok_and(|e| e.split(|&b| b == 0).any(|v| v == needle.as_bytes()))
        })
        .map(|p| {
            let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
            format!("{p} {}", String::from_utf8_lossy(&cmd).replace('\0', " "))
        })
        .collect()
}

/// The names of the `polyc-*` entries of `tmp`.
fn polyc_dirs(tmp: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(tmp)
        .expect("tmp")
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| n.starts_with("polyc-"))
        .collect();
    v.sort();
    v
}

/// Each `polyc-*` entry of `tmp` with what it holds, for messages.
fn polyc_dirs_listed(tmp: &Path) -> Vec<String> {
    polyc_dirs(tmp)
        .into_iter()
        .map(|n| {
            let mut inside: Vec<String> = std::fs::read_dir(tmp.join(&n))
                .map(|r| {
                    r.flatten()
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            inside.sort();
            format!("{n} {inside:?}")
        })
        .collect()
}

/// The `polyc-cpu-PID-…` folders of `pid` in `tmp`.
fn dirs_of(tmp: &Path, pid: u32) -> Vec<String> {
    let p = format!("polyc-cpu-{pid}-");
    polyc_dirs(tmp)
        .into_iter()
        .filter(|n| n.starts_with(&p))
        .collect()
}

fn send(pid: u32, signal: i32) {
    // SAFETY: signalling a process this test started.
    assert_eq!(unsafe { libc::kill(pid as libc::pid_t, signal) }, 0);
}

/// A private `$TMPDIR` inside a fresh temporary folder (whose `.tmp…` name no polyc
/// sweeps).
fn private_tmp() -> (tempfile::TempDir, PathBuf) {
    let dir = tempdir();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).expect("tmp");
    (dir, tmp)
}

/// A suite of two fast matmul runs followed by two slow ones, as `dir/slow.yaml`.
fn slow_suite(dir: &Path) -> String {
    write(
        dir,
        "slow.yaml",
        &format!(
            "name: slow\nschedulers: [initial]\ncases:\n  - program: {}\n    shapes: [{{M: 8, N: 8, K: 8}}, {{M: 9, N: 7, K: 5}}, {{M: 2048, N: 2048, K: 2048}}, {{M: 2047, N: 2048, K: 2048}}]\n",
            abs("examples/matmul.tc")
        ),
    )
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("result file")).expect("json")
}

/// Starts the slow suite with 2 jobs, waits until both slow runs are running (so both fast
/// ones have finished) and one has its kernel's folder, sends `signal` to the suite, and
/// checks what it left: the exit code, the partial summary and result, no process and no
/// folder.
fn interrupt_suite(signal: i32, name: &str, code: i32) {
    let (dir, tmp) = private_tmp();
    let d = dir.path();
    let suite = slow_suite(d);
    let child = start(&tmp, d, &["suite", &suite, "-j", "2", "--json", "out.json"]);
    let pid = child.id();
    let mut seen = std::collections::BTreeSet::new();
    wait_for(Duration::from_secs(300), "both slow runs", || {
        let slow: Vec<u32> = children(pid)
            .into_iter()
            .filter(|(_, c)| c.contains("2048"))
            .map(|(p, _)| p)
            .collect();
        seen.extend(slow.iter().copied());
        // With -j 2 the fast runs are done, so a folder is a slow run's.
        (slow.len() == 2 && !polyc_dirs(&tmp).is_empty()).then_some(())
    });
    for p in seen.clone() {
        seen.extend(children(p).into_iter().map(|(c, _)| c));
    }
    send(pid, signal);
    let (status, out, err) = finish(child, Duration::from_secs(60));
    assert_eq!(
        status.code(),
        Some(code),
        "{status}\nstdout:\n{out}\nstderr:\n{err}"
    );
    assert!(
        out.contains(&format!(
            "suite slow: 2 passed, 0 failed (partial: stopped by {name}; 2 of 4 runs finished, 2 not run)"
        )),
        "{out}\n{err}"
    );
    assert!(out.contains("M=9,N=7"), "{out}");
    let r = json(&d.join("out.json"));
    assert_eq!(r["partial"], true, "{r}");
    assert_eq!(r["interrupted_by"], name);
    assert_eq!(r["shard_runs"], 4);
    let keys: Vec<&str> = r["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| c["key"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(keys.len(), 2, "{keys:?}");
    assert!(keys
        .iter()
        .all(|k| k.contains("K=8,M=8,N=8") || k.contains("K=5,M=9,N=7")));
    for p in &seen {
        assert!(
            !alive(*p),
            "process {p} (a child of the suite) is still running"
        );
    }
    assert_eq!(
        processes_under(&tmp),
        Vec::<String>::new(),
        "processes left"
    );
    assert_eq!(
        polyc_dirs_listed(&tmp),
        Vec::<String>::new(),
        "folders left"
    );
    // A partial result is no shard to merge and no baseline.
    let o = polyc_in(d, &["suite", "merge", "out.json"]);
    assert_code(&o, 1);
    assert!(
        flat(&stderr(&o)).contains(&format!(
            "out.json is a partial result: shard 1/1 was stopped by {name} after 2 of 4 runs"
        )),
        "{}",
        stderr(&o)
    );
}

#[test]
fn sigint_stops_a_suite_with_a_partial_result_and_exit_130() {
    interrupt_suite(libc::SIGINT, "SIGINT", 130);
}

#[test]
fn sigterm_stops_a_suite_with_a_partial_result_and_exit_143() {
    interrupt_suite(libc::SIGTERM, "SIGTERM", 143);
}

/// SIGKILL of one suite child: that run fails naming the signal, the suite goes on, and
/// the child's folder is removed.
#[test]
fn a_killed_suite_child_is_a_failed_run_naming_the_signal() {
    let (dir, tmp) = private_tmp();
    let d = dir.path();
    let suite = slow_suite(d);
    // Only the first fast run and the first slow one.
    let text = std::fs::read_to_string(&suite)
        .expect("suite")
        .replace("{M: 9, N: 7, K: 5}, ", "")
        .replace(", {M: 2047, N: 2048, K: 2048}", "");
    std::fs::write(&suite, text).expect("suite");
    let child = start(&tmp, d, &["suite", &suite, "-j", "1", "--json", "out.json"]);
    let pid = child.id();
    // With -j 1 the fast run is done, so a folder is the slow run's.
    let slow = wait_for(Duration::from_secs(300), "the slow run's folder", || {
        children(pid)
            .into_iter()
            .find(|(_, c)| c.contains("2048"))
            .filter(|_| !polyc_dirs(&tmp).is_empty())
            .map(|(p, _)| p)
    });
    send(slow, libc::SIGKILL);
    let (status, out, err) = finish(child, Duration::from_secs(60));
    assert_eq!(status.code(), Some(3), "{status}\n{out}\n{err}");
    assert!(out.contains("suite slow: 1 passed, 1 failed\n"), "{out}");
    let r = json(&d.join("out.json"));
    let failed = &r["cases"][1];
    assert_eq!(failed["status"], "ERROR");
    assert!(
        failed["detail"]
            .as_str()
            .is_some_and(|s| s.starts_with("stopped by SIGKILL")),
        "{failed}"
    );
    assert_eq!(r["partial"], false);
    assert_eq!(
        processes_under(&tmp),
        Vec::<String>::new(),
        "processes left"
    );
    assert_eq!(
        polyc_dirs_listed(&tmp),
        Vec::<String>::new(),
        "folders left"
    );
}

/// A single `polyc run` stopped by SIGTERM while its kernel runs: exit 143, no folder, no
/// process.
#[test]
fn sigterm_stops_a_run_and_removes_its_folder() {
    let (dir, tmp) = private_tmp();
    let program = abs("examples/matmul.tc");
    let child = start(
        &tmp,
        dir.path(),
        &["run", &program, "--param", SLOW, "--check"],
    );
    let pid = child.id();
    wait_for(Duration::from_secs(300), "the run's folder", || {
        (!polyc_dirs(&tmp).is_empty()).then_some(())
    });
    send(pid, libc::SIGTERM);
    let (status, out, err) = finish(child, Duration::from_secs(60));
    assert_eq!(status.code(), Some(143), "{status}\n{out}\n{err}");
    assert!(err.contains("polyc: stopped by SIGTERM"), "{err}");
    assert_eq!(
        processes_under(&tmp),
        Vec::<String>::new(),
        "processes left"
    );
    assert_eq!(
        polyc_dirs_listed(&tmp),
        Vec::<String>::new(),
        "folders left"
    );
}

/// `polyc-cpu-PID-START-TAG-SUFFIX` → (PID, START, TAG).
fn owner(name: &str) -> (u32, u64, String) {
    let parts: Vec<&str> = name.splitn(6, '-').collect();
    assert_eq!(parts.len(), 6, "not an owned folder name: {name}");
    (
        parts[2].parse().expect("pid"),
        parts[3].parse().expect("start"),
        parts[4].to_string(),
    )
}

/// Any polyc removes the folders of dead polycs (SIGKILLed, a pid now another process's)
/// and keeps those of live ones, kept folders, and folders it cannot judge.
#[test]
fn a_later_polyc_sweeps_the_folders_of_dead_ones_only() {
    let (dir, tmp) = private_tmp();
    let d = dir.path();
    let program = abs("examples/matmul.tc");
    let args = ["run", program.as_str(), "--param", SLOW, "--check"];
    // A live polyc and one SIGKILLed, each with its kernel's folder.
    let live = start(&tmp, d, &args);
    let live_dirs = wait_for(Duration::from_secs(300), "a live run's folder", || {
        Some(polyc_dirs(&tmp)).filter(|v| !v.is_empty())
    });
    // The folder names its owner.
    assert_eq!(owner(&live_dirs[0]).0, live.id(), "{live_dirs:?}");
    let killed = start(&tmp, d, &args);
    let killed_dirs = wait_for(Duration::from_secs(300), "a run's folder", || {
        Some(dirs_of(&tmp, killed.id())).filter(|v| !v.is_empty())
    });
    send(killed.id(), libc::SIGKILL);
    let (status, _, _) = finish(killed, Duration::from_secs(30));
    assert_eq!(status.code(), None);
    // Forged folders with this host's tag: a pid that has exited, a live pid with another
    // start time (the pid was reused), and this test's own pid and start time.
    let (_, _, tag) = owner(&live_dirs[0]);
    let mut t = Command::new("true").spawn().expect("true");
    let exited = t.id();
    t.wait().expect("true ends");
    let me = std::process::id();
    let my_start: u64 = {
        let text = std::fs::read_to_string("/proc/self/stat").expect("stat");
        let rest = &text[text.rfind(')').expect(")") + 1..];
        rest.split_whitespace()
            .nth(19)
            .expect("start")
            .parse()
            .expect("start")
    };
    let dead = format!("polyc-cpu-{exited}-123-{tag}-forged");
    let reused = format!("polyc-cpu-{me}-{}-{tag}-forged", my_start + 1);
    let mine = format!("polyc-cpu-{me}-{my_start}-{tag}-forged");
    let other_host = format!(
        "polyc-cpu-{exited}-123-{}-forged",
        if tag == "00000000" {
            "00000001"
        } else {
            "00000000"
        }
    );
    let kept = "polyc-cpu-kept-forged".to_string();
    let old_style = "polyc-cpu-AbC123".to_string();
    for n in [&dead, &reused, &mine, &other_host, &kept, &old_style] {
        std::fs::create_dir(tmp.join(n)).expect("forged folder");
        std::fs::write(tmp.join(n).join("kernel.c"), "int x;\n").expect("file");
    }
    let o = Command::new(env!("CARGO_BIN_EXE_polyc"))
        .args(["compile", &program, "-o", "/dev/null"])
        .env("TMPDIR", &tmp)
        .output()
        .expect("polyc");
    assert_code(&o, 0);
    let left = polyc_dirs(&tmp);
    for gone in killed_dirs.iter().chain([&dead, &reused]) {
        assert!(!left.contains(gone), "{gone} was not swept: {left:?}");
    }
    for stays in live_dirs
        .iter()
        .chain([&mine, &other_host, &kept, &old_style])
    {
        assert!(left.contains(stays), "{stays} was swept: {left:?}");
    }
    send(live.id(), libc::SIGTERM);
    let (status, _, err) = finish(live, Duration::from_secs(60));
    assert_eq!(status.code(), Some(143), "{err}");
    for n in &live_dirs {
        assert!(!tmp.join(n).exists(), "{n} left after SIGTERM");
    }
}

/// A result file marked partial is refused by `polyc suite merge`, as a shard and as a
/// baseline; the same file unmarked merges.
#[test]
fn merge_refuses_partial_results() {
    let (dir, tmp) = private_tmp();
    let d = dir.path();
    let suite = write(
        d,
        "one.yaml",
        &format!(
            "name: one\nschedulers: [initial]\ncases:\n  - program: {}\n    shapes: [{{M: 3, N: 2, K: 2}}]\n",
            abs("examples/matmul.tc")
        ),
    );
    let (status, out, err) = finish(
        start(&tmp, d, &["suite", &suite, "--json", "whole.json"]),
        Duration::from_secs(300),
    );
    assert_eq!(status.code(), Some(0), "{out}\n{err}");
    let mut r = json(&d.join("whole.json"));
    assert_eq!(r["partial"], false);
    assert_eq!(r["shard_runs"], 1);
    assert_code(&polyc_in(d, &["suite", "merge", "whole.json"]), 0);
    r["partial"] = Value::Bool(true);
    r["interrupted_by"] = Value::String("SIGTERM".into());
    r["shard_runs"] = Value::from(3);
    std::fs::write(d.join("partial.json"), r.to_string()).expect("write");
    let e = flat(&polyc_err_in(d, &["suite", "merge", "partial.json"]));
    assert!(
        e.contains(
            "partial.json is a partial result: shard 1/1 was stopped by SIGTERM after 1 of 3 runs"
        ),
        "{e}"
    );
    assert!(
        e.contains("rerun the suite and give its complete result"),
        "{e}"
    );
    let e = flat(&polyc_err_in(
        d,
        &["suite", "merge", "whole.json", "--baseline", "partial.json"],
    ));
    assert!(
        e.contains("--baseline partial.json is a partial result"),
        "{e}"
    );
}

/// `polyc ARGS` in `dir`: asserts exit 1 and returns standard error.
fn polyc_err_in(dir: &Path, args: &[&str]) -> String {
    let o = polyc_in(dir, args);
    assert_code(&o, 1);
    stderr(&o)
}
