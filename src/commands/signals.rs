//! SIGINT and SIGTERM: polyc stops its children, removes its temporary folders and exits
//! 130 or 143 (128 + the signal's number).
//!
//! [`start`] (called first thing by the binary) sweeps the temporary folders of dead polyc
//! processes ([`targets::scratch::sweep_stale`]) and starts a watcher thread. The signal
//! handler itself only wakes that thread (signal-hook's self-pipe); everything else runs
//! in the thread, as ordinary code:
//!
//! - By default (a compile, a `run`), the watcher stops the children (the C compiler),
//!   removes the temporary folders and exits at once.
//! - While a [`Graceful`] guard lives (`polyc suite` running its runs), the watcher records
//!   the signal ([`received`]), forwards it to the children (SIGKILL for those still there
//!   after [`GRACE`]) and returns; the suite notices, stops starting runs, prints and writes
//!   the runs that finished, marked partial, and the binary exits through [`finish`]. A
//!   second signal stops at once.
//!
//! A signal that was ignored when polyc started (`nohup`, a background job of a
//! non-interactive shell) stays ignored.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Duration;

/// How long children get to stop after the signal is forwarded, before SIGKILL.
pub const GRACE: Duration = Duration::from_secs(5);

/// The first SIGINT or SIGTERM received (0: none).
static RECEIVED: AtomicI32 = AtomicI32::new(0);
/// Whether a [`Graceful`] guard lives.
static GRACEFUL: AtomicBool = AtomicBool::new(false);
/// Set when polyc stops at once (no graceful guard, or a second signal).
static STOPPING: AtomicBool = AtomicBool::new(false);
/// Set once `polyc: stopped by …` is printed.
static NOTED: AtomicBool = AtomicBool::new(false);

/// The signals polyc handles.
const HANDLED: [i32; 2] = [libc::SIGINT, libc::SIGTERM];

/// The signal's name (`SIGINT`), or `signal N`.
pub fn name(signal: i32) -> String {
    match signal {
        libc::SIGHUP => "SIGHUP".into(),
        libc::SIGINT => "SIGINT".into(),
        libc::SIGQUIT => "SIGQUIT".into(),
        libc::SIGILL => "SIGILL".into(),
        libc::SIGTRAP => "SIGTRAP".into(),
        libc::SIGABRT => "SIGABRT".into(),
        libc::SIGBUS => "SIGBUS".into(),
        libc::SIGFPE => "SIGFPE".into(),
        libc::SIGKILL => "SIGKILL".into(),
        libc::SIGSEGV => "SIGSEGV".into(),
        libc::SIGPIPE => "SIGPIPE".into(),
        libc::SIGALRM => "SIGALRM".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGXCPU => "SIGXCPU".into(),
        libc::SIGXFSZ => "SIGXFSZ".into(),
        n => format!("signal {n}"),
    }
}

/// The exit code of a polyc stopped by `signal`: 128 + its number (130 for SIGINT, 143
/// for SIGTERM).
pub fn exit_code(signal: i32) -> u8 {
    u8::try_from(128 + signal.clamp(0, 127)).unwrap_or(u8::MAX)
}

/// The signal received, if one was.
pub fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// Whether polyc is stopping at once: the errors of the work a signal cut short (a C
/// compiler that was stopped) are then not worth printing.
pub fn stopping() -> bool {
    STOPPING.load(Ordering::SeqCst)
}

/// Prints `polyc: stopped by SIGNAL` once.
fn note_stopped(signal: i32) {
    if !NOTED.swap(true, Ordering::SeqCst) {
        note(&format!("polyc: stopped by {}", name(signal)));
    }
}

/// While it lives, a first SIGINT or SIGTERM is only recorded and forwarded to the
/// children; the code that holds it checks [`received`] and finishes its work.
pub struct Graceful(());

impl Graceful {
    /// Starts graceful handling.
    pub fn new() -> Graceful {
        GRACEFUL.store(true, Ordering::SeqCst);
        Graceful(())
    }
}

impl Default for Graceful {
    fn default() -> Self {
        Graceful::new()
    }
}

impl Drop for Graceful {
    fn drop(&mut self) {
        GRACEFUL.store(false, Ordering::SeqCst);
    }
}

/// Whether `signal` is ignored (SIG_IGN) in this process.
fn ignored(signal: i32) -> bool {
    // SAFETY: sigaction with a null new action only reads the current one.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction == libc::SIG_IGN
    }
}

/// Sweeps stale temporary folders and starts the watcher thread (see the module
/// documentation). A failure to install the handlers is a note on standard error, and
/// polyc goes on with the default signal behaviour.
pub fn start() {
    targets::scratch::sweep_stale();
    let wanted: Vec<i32> = HANDLED.into_iter().filter(|s| !ignored(*s)).collect();
    if wanted.is_empty() {
        return;
    }
    let mut signals = match signal_hook::iterator::Signals::new(&wanted) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("polyc: note: cannot handle SIGINT and SIGTERM ({e}); an interrupted polyc may leave temporary folders");
            return;
        }
    };
    let spawned = std::thread::Builder::new()
        .name("polyc-signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                on_signal(signal);
            }
        });
    if let Err(e) = spawned {
        eprintln!("polyc: note: cannot watch for signals ({e})");
    }
}

/// Writes a line to standard error directly (not through std's lock, which the main thread
/// may hold while blocked on a full pipe).
fn note(msg: &str) {
    let line = format!("{msg}\n");
    // SAFETY: writing our own buffer to file descriptor 2.
    unsafe {
        libc::write(2, line.as_ptr().cast(), line.len());
    }
}

fn on_signal(signal: i32) {
    let first = RECEIVED
        .compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok();
    if first && GRACEFUL.load(Ordering::SeqCst) {
        note(&format!(
            "polyc: {}: stopping the runs in progress (again to stop at once)",
            name(signal)
        ));
        targets::scratch::stop_children(signal);
        // Escalate in another thread, so that a second signal is still heard.
        let _ = std::thread::Builder::new().spawn(|| {
            if !targets::scratch::wait_children(GRACE) {
                targets::scratch::kill_children();
            }
        });
        return;
    }
    STOPPING.store(true, Ordering::SeqCst);
    let first = received().unwrap_or(signal);
    targets::scratch::shutdown(signal, Duration::from_secs(2));
    note_stopped(first);
    // Exit without running atexit handlers and library destructors under the feet of the
    // main thread (which may be inside isl or a kernel).
    // SAFETY: _exit ends the process; nothing runs after it.
    unsafe { libc::_exit(i32::from(exit_code(first))) }
}

/// The exit code of the command: `code`, or, when a signal was received, 128 + its number
/// after removing what is left (children, temporary folders) and printing `polyc: stopped
/// by SIGNAL`.
pub fn finish(code: u8) -> u8 {
    match received() {
        None => code,
        Some(signal) => {
            targets::scratch::shutdown(signal, Duration::from_secs(2));
            note_stopped(signal);
            exit_code(signal)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_128_plus_the_signal() {
        assert_eq!(exit_code(libc::SIGINT), 130);
        assert_eq!(exit_code(libc::SIGTERM), 143);
        assert_eq!(name(libc::SIGKILL), "SIGKILL");
        assert_eq!(name(64), "signal 64");
    }
}
