//! What every part of the front end shares: its result type, its resource limits, and
//! related notes of a diagnostic.

use crate::diag::{SourceError, SourceFile};
use crate::ir;

/// Results inside the front end (boxed: a `SourceError` is large).
pub type Res<T> = Result<T, Box<SourceError>>;

/// Resource limits of the front end.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Deepest expression nesting accepted.
    pub max_depth: usize,
    /// Most tokens in one file.
    pub max_tokens: usize,
}

/// The limits in force.
pub const LIMITS: Limits = Limits {
    max_depth: 256,
    max_tokens: 4_000_000,
};

/// A related note (a second location of an error), without a help line.
pub(crate) fn note(
    src: &SourceFile,
    span: ir::Span,
    message: impl Into<String>,
    label: impl Into<String>,
) -> SourceError {
    let mut e = src.error(span, message, label, "");
    e.help = None;
    e
}
