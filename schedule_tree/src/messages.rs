//! Texts of schedule-tree errors that converting and loading trees share.

use crate::mark::Mark;

/// The error for a mark name polyc does not know.
pub(crate) fn unknown_mark_help() -> String {
    format!("polyc knows the marks: {}", Mark::known_names().join(", "))
}

/// `[Invalid] syntax error` → `syntax error`.
pub(crate) fn strip_isl_kind(msg: &str) -> String {
    match msg.strip_prefix('[').and_then(|r| r.split_once("] ")) {
        Some((_, rest)) => rest.to_string(),
        None => msg.to_string(),
    }
}
