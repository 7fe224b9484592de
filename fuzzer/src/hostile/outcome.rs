//! How one invocation of polyc ended, and whether that keeps the rules (exit 0, 1 with a
//! message, or 3 for a failed check; never a panic, a signal or a hang).

use super::inputs::Invocation;

/// How one invocation ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this code.
    Code(i32),
    /// A signal killed it.
    Signal(i32),
    /// It ran past the limit (and was killed).
    Timeout,
}

/// What one invocation gave.
#[derive(Clone, Debug)]
pub struct Ran {
    /// How it ended.
    pub exit: Exit,
    /// Its standard error (the first 4 KiB).
    pub stderr: String,
}

impl Ran {
    /// Why this ending breaks the rules, or `None` when it keeps them.
    pub fn violation(&self, inv: &Invocation) -> Option<String> {
        match self.exit {
            Exit::Code(0) => None,
            Exit::Code(1) if self.stderr.trim().is_empty() => {
                Some("exit 1 with nothing on standard error".into())
            }
            Exit::Code(1) => None,
            Exit::Code(3) if inv.checks => None,
            Exit::Code(101) => Some("a panic (exit 101)".into()),
            Exit::Code(c) => Some(format!("exit {c}")),
            Exit::Signal(s) => Some(format!("killed by signal {s}")),
            Exit::Timeout => Some("no exit within the time limit".into()),
        }
    }
}
