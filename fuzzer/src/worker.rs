//! Cases run in a worker process, so that a kernel that crashes (a signal) or hangs takes
//! down only the worker: the parent sees it, records the case as a crash or a hang, and
//! starts a new worker.
//!
//! The protocol is one JSON [`Request`] per line on the worker's standard input and one
//! JSON [`CaseResult`] per line on a private copy of its standard output (file
//! descriptor 1 itself is pointed at standard error, so that nothing a library prints
//! can corrupt the protocol). After a panic the worker answers and exits, and the parent
//! starts a fresh one.

use crate::case::{execute, Case, CaseResult, Inject, Outcome};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::sync::Mutex;
use std::time::Duration;

/// One case for a worker.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Request {
    /// The case.
    pub case: Case,
    /// A fault to inject into the kernel.
    pub inject: Option<Inject>,
}

/// The last panic's message, kept by the panic hook for the reply.
static PANIC: Mutex<Option<String>> = Mutex::new(None);

/// The worker's main loop (`polyc-fuzz worker DIR`): runs requests until standard input
/// ends, writing each case's files under `dir` (the parent's, which removes it even when
/// the worker dies).
pub fn worker_main(dir: &std::path::Path) -> std::io::Result<()> {
    // SAFETY: plain descriptor duplication on this process's own descriptors.
    let proto = unsafe {
        let fd = libc::dup(1);
        if fd < 0 || libc::dup2(2, 1) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        use std::os::fd::FromRawFd;
        std::fs::File::from_raw_fd(fd)
    };
    let mut proto = std::io::LineWriter::new(proto);
    std::panic::set_hook(Box::new(|info| {
        let msg = match info.payload().downcast_ref::<&str>() {
            Some(s) => s.to_string(),
            None => info
                .payload()
                .downcast_ref::<String>()
                .cloned()
                .unwrap_or_else(|| "a panic".into()),
        };
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        if let Ok(mut p) = PANIC.lock() {
            *p = Some(format!("{msg}{at}"));
        }
    }));
    for line in std::io::stdin().lock().lines() {
        let req: Request = match serde_json::from_str(&line?) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("polyc-fuzz worker: bad request: {e}");
                continue;
            }
        };
        let result = std::panic::catch_unwind(|| execute(&req.case, dir, req.inject));
        let (result, panicked) = match result {
            Ok(r) => (r, false),
            Err(_) => {
                let msg = PANIC
                    .lock()
                    .ok()
                    .and_then(|mut p| p.take())
                    .unwrap_or_else(|| "a panic".into());
                let r = CaseResult {
                    outcome: Outcome::Panic(msg),
                    spec: None,
                    spec_rejected: None,
                    ms: 0.0,
                    steps: [0.0; 4],
                };
                (r, true)
            }
        };
        writeln!(proto, "{}", serde_json::to_string(&result)?)?;
        proto.flush()?;
        if panicked {
            break;
        }
    }
    Ok(())
}

/// The parent's handle on one worker process.
pub struct Worker {
    child: Option<(Child, ChildStdin, Receiver<String>)>,
    exe: std::path::PathBuf,
    /// The running worker's folder, removed when it stops.
    dir: Option<tempfile::TempDir>,
}

impl Worker {
    /// A handle that starts the worker (this executable, `worker`) on first use.
    pub fn new() -> std::io::Result<Worker> {
        Ok(Worker {
            child: None,
            exe: std::env::current_exe()?,
            dir: None,
        })
    }

    /// Starts a worker process in a fresh folder, with a thread reading its replies.
    fn start(&mut self) -> std::io::Result<()> {
        let dir = tempfile::Builder::new().prefix("polyc-fuzz-").tempdir()?;
        let mut child = Command::new(&self.exe)
            .arg("worker")
            .arg(dir.path())
            // polyc's own temporary folders (kernel C, libraries) go inside the worker's,
            // so they go with it even when a kernel kills the worker.
            .env("TMPDIR", dir.path())
            // Idle OpenMP threads sleep instead of spinning: cases are tiny.
            .env("OMP_WAIT_POLICY", "passive")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("no stdin"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("no stdout"))?;
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        self.child = Some((child, stdin, rx));
        self.dir = Some(dir);
        Ok(())
    }

    /// Stops the worker process (it is this handle's own child).
    fn stop(&mut self) -> Option<std::process::ExitStatus> {
        let (mut child, stdin, _) = self.child.take()?;
        drop(stdin);
        let _ = child.kill();
        let status = child.wait().ok();
        self.dir = None;
        status
    }

    /// Runs `req` with a time limit; a worker that dies or hangs gives a crash or a hang,
    /// and the next request starts a new worker.
    pub fn run(&mut self, req: &Request, limit: Duration) -> CaseResult {
        let start = std::time::Instant::now();
        let failed = |outcome| CaseResult {
            outcome,
            spec: None,
            spec_rejected: None,
            ms: start.elapsed().as_secs_f64() * 1e3,
            steps: [0.0; 4],
        };
        if self.child.is_none() {
            if let Err(e) = self.start() {
                return failed(Outcome::RunError(format!("cannot start a worker: {e}")));
            }
        }
        let Some((_, stdin, rx)) = self.child.as_mut() else {
            return failed(Outcome::RunError("no worker".into()));
        };
        let line = match serde_json::to_string(req) {
            Ok(l) => l,
            Err(e) => return failed(Outcome::RunError(format!("encoding the case: {e}"))),
        };
        let sent = writeln!(stdin, "{line}").and_then(|_| stdin.flush());
        let reply = match sent {
            Ok(()) => rx.recv_timeout(limit),
            Err(_) => Err(RecvTimeoutError::Disconnected),
        };
        match reply {
            Ok(line) => match serde_json::from_str::<CaseResult>(&line) {
                Ok(r) => {
                    if matches!(r.outcome, Outcome::Panic(_)) {
                        self.stop();
                    }
                    r
                }
                Err(e) => {
                    self.stop();
                    failed(Outcome::RunError(format!("a garbled reply: {e}")))
                }
            },
            Err(RecvTimeoutError::Timeout) => {
                let spec = self.spec_left();
                self.stop();
                CaseResult {
                    spec,
                    ..failed(Outcome::Hang(format!(
                        "no answer within {:.0} s",
                        limit.as_secs_f64()
                    )))
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                // The worker died: wait for it, so the status is its own.
                let status = self.child.take().and_then(|(mut c, _, _)| c.wait().ok());
                let spec = self.spec_left();
                self.dir = None;
                let what = match status {
                    Some(s) => match s.signal() {
                        Some(sig) => format!("the worker died from signal {sig}"),
                        None => format!("the worker exited with {s}"),
                    },
                    None => "the worker vanished".into(),
                };
                // With the spec it compiled with, so that the report and the shrinker
                // run the same kernel (a random spec is drawn in the worker).
                CaseResult {
                    spec,
                    ..failed(Outcome::Crash(what))
                }
            }
        }
    }
}

impl Worker {
    /// The tile spec the running case compiled with, which the worker writes to its
    /// folder before it runs the kernel (and removes when a case starts).
    fn spec_left(&self) -> Option<String> {
        let dir = self.dir.as_ref()?;
        std::fs::read_to_string(dir.path().join("tiles.txt")).ok()
    }
}

impl Drop for Worker {
    /// Stops the worker.
    fn drop(&mut self) {
        self.stop();
    }
}
