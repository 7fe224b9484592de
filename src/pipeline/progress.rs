//! Progress on long compiles: while one half of the pipeline runs (analysis, then the
//! target's passes and code generation), a watcher thread prints `polyc: still working,
//! 12.3 s in (finished: parse, model, deps)` on standard error, first after 10 s, then
//! after 20, 40, 80 s and so on, naming the steps of that half finished so far. It speaks only
//! when standard error is a terminal (a script's or a test's output stays as it was),
//! unless `POLYC_PROGRESS_AFTER_MS` sets the first delay in milliseconds (for tests and
//! logs). Nothing runs, no thread is started, when it would stay silent.
//!
//! While no step is named as running, the note names the sub-step the compiler is in
//! (`(running: tile:footprints; finished: …)`, see [`polyhedral::substeps`]).
//!
//! A step may also be named as running ([`Watch::running`]): the C compiler building a
//! kernel, or the reference interpreter checking one, then shows in the note as
//! `(running: cc on 12 kB of C; finished: …)`.

use std::io::IsTerminal;
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

/// The first delay when standard error is a terminal.
const FIRST_NOTICE: Duration = Duration::from_secs(10);

/// The watcher of one half of the pipeline; it stops when dropped.
pub struct Watch {
    steps: Option<Sender<Msg>>,
}

/// What the watched side tells the watcher.
enum Msg {
    /// A step finished.
    Finished(String),
    /// A step started (and runs until the next message).
    Running(String),
}

impl Watch {
    /// Starts watching (see the module documentation).
    pub fn start() -> Watch {
        let first = match std::env::var("POLYC_PROGRESS_AFTER_MS") {
            Ok(ms) => ms.parse().ok().map(Duration::from_millis),
            Err(_) if std::io::stderr().is_terminal() => Some(FIRST_NOTICE),
            Err(_) => None,
        };
        let Some(first) = first else {
            return Watch { steps: None };
        };
        let (tx, rx) = channel::<Msg>();
        std::thread::spawn(move || {
            let start = Instant::now();
            let mut done: Vec<String> = Vec::new();
            let mut running: Option<String> = None;
            let mut wait = first;
            let mut next = start + first;
            loop {
                match rx.recv_timeout(next.saturating_duration_since(Instant::now())) {
                    Ok(Msg::Finished(step)) => {
                        running = None;
                        done.push(step)
                    }
                    Ok(Msg::Running(step)) => running = Some(step),
                    Err(RecvTimeoutError::Timeout) => {
                        let finished = if done.is_empty() {
                            "none of this half's steps yet".to_string()
                        } else {
                            done.join(", ")
                        };
                        // The sub-step the compiling thread is in (`tile:footprints`).
                        let inside = polyhedral::substeps::current().map(str::to_string);
                        let running = running.clone().or(inside);
                        match &running {
                            Some(r) if done.is_empty() => eprintln!(
                                "polyc: still working, {:.1} s in (running: {r})",
                                start.elapsed().as_secs_f64()
                            ),
                            Some(r) => eprintln!(
                                "polyc: still working, {:.1} s in (running: {r}; finished: {finished})",
                                start.elapsed().as_secs_f64()
                            ),
                            None => eprintln!(
                                "polyc: still working, {:.1} s in (finished: {finished})",
                                start.elapsed().as_secs_f64()
                            ),
                        }
                        wait *= 2;
                        next = start + wait;
                    }
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            }
        });
        Watch { steps: Some(tx) }
    }

    /// Records that `step` finished.
    pub fn finished(&self, step: &str) {
        if let Some(tx) = &self.steps {
            // The watcher only stops when this side is dropped.
            let _ = tx.send(Msg::Finished(step.to_string()));
        }
    }

    /// Records that `step` is running (until the next step finishes or starts).
    pub fn running(&self, step: &str) {
        if let Some(tx) = &self.steps {
            let _ = tx.send(Msg::Running(step.to_string()));
        }
    }
}
