//! polyc's temporary folders and child processes, registered in one place.
//!
//! Every temporary folder polyc makes (the C and `.so` of a kernel, nvcc's output, the
//! Gemmini host build) comes from [`tempdir`], and every child it waits for (the C
//! compiler, nvcc, a suite's `polyc run`) runs through [`output`] or [`output_in_group`].
//! So an interrupted polyc (SIGINT, SIGTERM: `src/signals.rs`) can stop its children and
//! remove its folders with [`shutdown`], from ordinary code, not from a signal handler.
//!
//! A folder is named `polyc-KIND-PID-START-TAG-XXXXXX`: the owner's process id, its start
//! time (clock ticks since boot, field 22 of `/proc/PID/stat`), a tag of the host name and
//! the pid namespace (so that polycs in containers that share a temporary directory never
//! judge each other's pids), and tempfile's random suffix. A polyc that died without
//! cleaning up (SIGKILL, a crash) leaves its folders; [`sweep_stale`], run when polyc
//! starts, removes the folders whose owner is gone: no process with that pid, a zombie, or
//! a process with that pid but another start time (the pid was reused). Folders of live
//! processes, of another host or namespace, of another user, and kept folders ([`keep`])
//! are never touched.
//!
//! Children run with `PR_SET_PDEATHSIG` = SIGTERM on Linux, so they stop when the polyc
//! that waits for them dies, even by SIGKILL.

use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// The prefix of every temporary folder polyc makes.
pub const PREFIX: &str = "polyc-";

/// A child being waited for.
#[derive(Clone, Copy, Debug)]
struct Tracked {
    pid: u32,
    /// It leads its own process group: signals go to the group.
    group: bool,
}

/// What polyc has made and started and not yet cleaned up.
struct Registry {
    dirs: Vec<PathBuf>,
    children: Vec<Tracked>,
    /// Set by [`stop_children`] and [`shutdown`]: no new folder or child.
    closed: bool,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    dirs: Vec::new(),
    children: Vec::new(),
    closed: false,
});

fn registry() -> MutexGuard<'static, Registry> {
    // A panic while holding the lock leaves consistent data (pushes and retains only).
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

fn stopping() -> io::Error {
    io::Error::new(
        io::ErrorKind::Interrupted,
        "polyc is stopping (interrupted)",
    )
}

/// This process's owner mark: `PID-START-TAG`.
fn owner_mark() -> &'static str {
    static MARK: OnceLock<String> = OnceLock::new();
    MARK.get_or_init(|| {
        let pid = std::process::id();
        format!("{pid}-{}-{}", start_time(pid).unwrap_or(0), namespace_tag())
    })
}

/// The start time of process `pid` in clock ticks since boot, and whether it is a zombie;
/// `None` when there is no such process (or no `/proc`).
fn proc_stat(pid: u32) -> Option<(u64, bool)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `PID (COMM) STATE ...`: COMM may hold spaces and parentheses; the last `)` ends it.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // Field 3 (STATE) is fields[0]; field 22 (STARTTIME) is fields[19].
    let zombie = matches!(fields.first(), Some(&"Z") | Some(&"X"));
    Some((fields.get(19)?.parse().ok()?, zombie))
}

fn start_time(pid: u32) -> Option<u64> {
    proc_stat(pid).map(|(s, _)| s)
}

/// 8 hex digits of FNV-1a over the host name and the pid namespace.
fn namespace_tag() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let ns = std::fs::read_link("/proc/self/ns/pid")
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let mut h: u32 = 0x811c_9dc5;
    for b in host.trim().bytes().chain([0]).chain(ns.bytes()) {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    format!("{h:08x}")
}

/// Makes a temporary folder `polyc-KIND-PID-START-TAG-XXXXXX` in the system's temporary
/// directory (`$TMPDIR`, else `/tmp`) and registers it, so that an interrupted polyc
/// removes it. It is removed when the returned value drops, as any `TempDir`. An error
/// (`Interrupted`) once polyc is stopping.
pub fn tempdir(kind: &str) -> io::Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new()
        .prefix(&format!("{PREFIX}{kind}-{}-", owner_mark()))
        .tempdir()?;
    let mut reg = registry();
    if reg.closed {
        drop(reg);
        drop(dir);
        return Err(stopping());
    }
    reg.dirs.retain(|d| d.exists());
    reg.dirs.push(dir.path().to_path_buf());
    Ok(dir)
}

/// Keeps a folder of [`tempdir`] for the user to inspect (a build that failed): renames
/// it to `polyc-KIND-kept-XXXXXX`, which neither an interrupt nor [`sweep_stale`]
/// removes, and returns its path (the old one if the rename failed).
///
/// Once polyc is stopping (the build failed because its compiler was stopped), the folder
/// is removed instead.
pub fn keep(dir: tempfile::TempDir) -> PathBuf {
    let path = dir.keep();
    {
        let mut reg = registry();
        reg.dirs.retain(|d| d != &path);
        if reg.closed {
            let _ = std::fs::remove_dir_all(&path);
            return path;
        }
    }
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return path;
    };
    let kept = parse_name(name).map(|(kind, _, _, _, suffix)| format!("{kind}-kept-{suffix}"));
    match kept {
        Some(k) => {
            let to = path.with_file_name(format!("{PREFIX}{k}"));
            match std::fs::rename(&path, &to) {
                Ok(()) => to,
                Err(_) => path,
            }
        }
        None => path,
    }
}

/// `polyc-KIND-PID-START-TAG-SUFFIX` → (KIND, PID, START, TAG, SUFFIX).
fn parse_name(name: &str) -> Option<(&str, u32, u64, &str, &str)> {
    let rest = name.strip_prefix(PREFIX)?;
    let mut parts = rest.splitn(5, '-');
    let kind = parts.next()?;
    let pid = parts.next()?.parse().ok()?;
    let start = parts.next()?.parse().ok()?;
    let tag = parts.next()?;
    let suffix = parts.next()?;
    let ok = !kind.is_empty()
        && kind.bytes().all(|b| b.is_ascii_alphanumeric())
        && tag.len() == 8
        && tag.bytes().all(|b| b.is_ascii_hexdigit())
        && !suffix.is_empty();
    ok.then_some((kind, pid, start, tag, suffix))
}

/// Whether the process that made a folder named `pid`, `start` is gone.
fn owner_gone(pid: u32, start: u64) -> bool {
    if pid == std::process::id() {
        return false;
    }
    if Path::new("/proc/self/stat").exists() {
        return match proc_stat(pid) {
            None => true,
            Some((_, true)) => true,
            Some((s, false)) => start != 0 && s != start,
        };
    }
    // No /proc: only a pid that no process has is gone.
    // SAFETY: kill with signal 0 only checks that the process exists.
    let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
    r != 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

/// Removes the temporary folders of polyc processes that are gone (see the module
/// documentation); returns how many it removed. Errors are ignored: another polyc may be
/// sweeping the same folder.
pub fn sweep_stale() -> usize {
    use std::os::unix::fs::MetadataExt;
    let tag = namespace_tag();
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((_, pid, start, t, _)) = name.to_str().and_then(parse_name) else {
            continue;
        };
        if t != tag {
            continue;
        }
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.is_dir() || meta.uid() != uid || !owner_gone(pid, start) {
            continue;
        }
        if std::fs::remove_dir_all(&path).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Runs `cmd` to completion as `Command::output` does (standard input closed, output
/// captured), registered so that an interrupted polyc stops it.
///
/// Where polyc leads its own process group (a suite's run; a command typed at a shell with
/// job control), the child joins it: a suite that stops the group stops the C compiler's
/// own children too, and Ctrl-C at the terminal reaches them all. Elsewhere the child
/// leads a new group, which polyc stops as a whole.
pub fn output(cmd: &mut Command) -> io::Result<Output> {
    // SAFETY: getpgrp and getpid have no preconditions.
    let leader = unsafe { libc::getpgrp() == libc::getpid() };
    run_tracked(cmd, !leader)
}

/// [`output`], with the child leading its own process group whatever polyc's: a suite's
/// `polyc run`, which the suite stops, with all it started, by stopping the group.
pub fn output_in_group(cmd: &mut Command) -> io::Result<Output> {
    run_tracked(cmd, true)
}

/// Runs `cmd` registered; `group`: in a new process group that it leads. When the child
/// has exited, whatever is left in its group gets SIGKILL.
fn run_tracked(cmd: &mut Command, group: bool) -> io::Result<Output> {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if group {
        cmd.process_group(0);
    }
    die_with_parent(cmd);
    let mut child = {
        let mut reg = registry();
        if reg.closed {
            return Err(stopping());
        }
        let child = cmd.spawn()?;
        reg.children.push(Tracked {
            pid: child.id(),
            group,
        });
        child
    };
    let pid = child.id();
    let mut out_pipe = child.stdout.take();
    let err_pipe = child.stderr.take();
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut p) = err_pipe {
            let _ = p.read_to_end(&mut buf);
        }
        buf
    });
    let mut stdout = Vec::new();
    if let Some(p) = out_pipe.as_mut() {
        let _ = p.read_to_end(&mut stdout);
    }
    // Wait without reaping, stop the rest of the group (the unreaped leader keeps its pid
    // and group id from being reused), forget the pid, then reap.
    wait_exited(pid);
    if group {
        signal(pid, true, libc::SIGKILL);
    }
    registry().children.retain(|c| c.pid != pid);
    let status = child.wait()?;
    if group {
        wait_group_gone(pid, Duration::from_secs(1));
    }
    let stderr = err_reader.join().unwrap_or_default();
    if stopped_with_polyc(&status) {
        return Err(stopping());
    }
    Ok(Output {
        status,
        stdout,
        stderr,
    })
}

/// Whether a child that died from SIGINT, SIGTERM, SIGHUP or SIGQUIT got it with polyc
/// (Ctrl-C reaches the terminal's whole foreground group; a suite signals a run's whole
/// group): then polyc is stopping too, which its signal watcher says within moments by
/// closing the registry. Without this wait, the caller could report the child's failure
/// (and keep its folder) before the watcher starts to stop polyc.
fn stopped_with_polyc(status: &std::process::ExitStatus) -> bool {
    use std::os::unix::process::ExitStatusExt;
    let by_signal = status
        .signal()
        .is_some_and(|s| [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT].contains(&s));
    let until = Instant::now() + Duration::from_millis(500);
    while by_signal && Instant::now() < until {
        if registry().closed {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    by_signal && registry().closed
}

/// Sends `sig` to process `pid`, or to the process group it leads.
fn signal(pid: u32, group: bool, sig: i32) {
    let pid = pid as libc::pid_t;
    // SAFETY: kill has no memory-safety preconditions; the process is a child of ours.
    unsafe {
        libc::kill(if group { -pid } else { pid }, sig);
    }
}

/// Waits until process group `pgid` has no process left, at most `limit`.
fn wait_group_gone(pgid: u32, limit: Duration) {
    let until = Instant::now() + limit;
    // SAFETY: signal 0 only checks that the group exists.
    while unsafe { libc::kill(-(pgid as libc::pid_t), 0) } == 0 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Blocks until child `pid` has exited, leaving it to be reaped.
fn wait_exited(pid: u32) {
    loop {
        // SAFETY: siginfo_t is plain data; waitid writes it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waiting for our own child without reaping it (WNOWAIT).
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
}

/// On Linux, the child gets SIGTERM when the thread that started it dies.
#[cfg(target_os = "linux")]
fn die_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: getpid before the fork; prctl and getppid are async-signal-safe.
    let parent = unsafe { libc::getpid() };
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                // The parent died before the prctl (no allocation after a fork).
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_cmd: &mut Command) {}

fn signal_children(reg: &Registry, signal: i32) {
    for c in &reg.children {
        // The pid is a child not yet reaped: it names that child, and its group.
        self::signal(c.pid, c.group, signal);
    }
}

/// Stops new folders and children, and sends `signal` to every running child (to its
/// group where it leads one). The children's waits then return as usual.
pub fn stop_children(signal: i32) {
    let mut reg = registry();
    reg.closed = true;
    signal_children(&reg, signal);
}

/// Waits until no child is running, at most `limit`; true when none is.
pub fn wait_children(limit: Duration) -> bool {
    let until = Instant::now() + limit;
    loop {
        if registry().children.is_empty() {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Sends SIGKILL to every child still running, and to its group.
pub fn kill_children() {
    signal_children(&registry(), libc::SIGKILL);
}

/// Removes every registered folder that still exists; returns how many.
pub fn remove_dirs() -> usize {
    let dirs = std::mem::take(&mut registry().dirs);
    dirs.iter()
        .filter(|d| std::fs::remove_dir_all(d).is_ok())
        .count()
}

/// Everything an interrupted polyc does before it exits: [`stop_children`] with `signal`,
/// up to `grace` for them to end, SIGKILL for the rest (and a second for them to go),
/// then [`remove_dirs`] and [`sweep_stale`] (the folders of children that were killed).
///
/// Two threads that call it at once (the signal watcher, and the main thread finishing)
/// run it one after the other, so that neither exits while the other is removing folders.
pub fn shutdown(signal: i32, grace: Duration) {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    stop_children(signal);
    if !wait_children(grace) {
        kill_children();
        wait_children(Duration::from_secs(1));
    }
    remove_dirs();
    sweep_stale();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_kept_names_do_not() {
        let n = "polyc-cpu-123-456-0a1b2c3d-Xy12Zq";
        assert_eq!(parse_name(n), Some(("cpu", 123, 456, "0a1b2c3d", "Xy12Zq")));
        assert_eq!(parse_name("polyc-cpu-kept-Xy12Zq"), None);
        assert_eq!(parse_name("polyc-cpu-Xy12Zq"), None);
        assert_eq!(parse_name("polyc-cpu-1-2-nothex!!-Xy"), None);
    }

    #[test]
    fn own_folders_carry_this_process_and_are_never_stale() {
        let dir = tempdir("unit").expect("tempdir");
        let name = dir
            .path()
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        let (kind, pid, _, _, _) = parse_name(&name).expect("a polyc name");
        assert_eq!((kind, pid), ("unit", std::process::id()));
        assert!(!owner_gone(pid, start_time(pid).unwrap_or(0)));
        let kept = keep(dir);
        assert!(kept.is_dir());
        assert!(kept
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("polyc-unit-kept-"));
        std::fs::remove_dir_all(kept).unwrap();
    }
}
