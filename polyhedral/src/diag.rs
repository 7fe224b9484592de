//! Diagnostics with a file:line:col, the offending text under a caret, and a remedy.
//!
//! Every input language of polyc (programs, tile specs, constraint files, YAML, loaded
//! trees) reports errors as a [`SourceError`]. It is a `miette` diagnostic, so the CLI
//! renders it with a caret under the span; [`render_plain`] renders any diagnostic without
//! colour, which is what the golden error-text tests compare.

use crate::ir::Span;
use miette::{Diagnostic, GraphicalReportHandler, GraphicalTheme, NamedSource, SourceSpan};
use std::sync::Arc;

/// A source file: its name as the user gave it, and its text.
#[derive(Clone, Debug)]
pub struct SourceFile {
    /// The path as given on the command line.
    pub name: String,
    /// The whole text.
    pub text: Arc<String>,
}

impl SourceFile {
    /// Wraps a name and text.
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        SourceFile {
            name: name.into(),
            text: Arc::new(text.into()),
        }
    }
    /// Reads a file (`-`: standard input) of at most [`crate::files::MAX_TEXT_BYTES`]; a
    /// missing file is a diagnostic, not a panic. The file is remembered as an input, which
    /// no output may overwrite. A file that is not UTF-8
    /// is a located error at its first invalid byte: line, column (in characters) and the
    /// byte, with the line shown and the byte as `�` under the caret.
    pub fn read(path: &str) -> miette::Result<Self> {
        let bytes = crate::files::read_text_input(path)?;
        match String::from_utf8(bytes) {
            Ok(t) => Ok(SourceFile::new(path, t)),
            Err(e) => Err(Self::not_utf8(path, e.as_bytes(), e.utf8_error().valid_up_to()).into()),
        }
    }
    /// The error for a file whose bytes are valid UTF-8 up to `at` but not at `at`.
    fn not_utf8(path: &str, bytes: &[u8], at: usize) -> SourceError {
        let byte = bytes.get(at).copied().unwrap_or(0);
        // The lossy text keeps the valid prefix byte for byte, so `at` is where the
        // replacement character (3 bytes) for the offending byte starts.
        let text = String::from_utf8_lossy(bytes).into_owned();
        let file = SourceFile::new(path, text);
        file.error(
            Span::new(at, at + '\u{FFFD}'.len_utf8()),
            format!("the file is not UTF-8: byte 0x{byte:02X} is not part of a UTF-8 character"),
            format!("byte 0x{byte:02X}"),
            "polyc reads UTF-8 text: re-encode the file as UTF-8 (e.g. with iconv) or remove the byte",
        )
    }
    /// 1-based line and column of a byte offset (columns count characters).
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let before = &self.text[..offset];
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        (line, col)
    }
    /// An error at `span` with a label under the caret and a remedy.
    pub fn error(
        &self,
        span: Span,
        message: impl Into<String>,
        label: impl Into<String>,
        help: impl Into<String>,
    ) -> SourceError {
        let (line, col) = self.line_col(span.start);
        SourceError {
            message: message.into(),
            location: format!("{}:{line}:{col}", self.name),
            src: NamedSource::new(self.name.clone(), self.text.clone()),
            span: SourceSpan::new(span.start.into(), span.len()),
            label: label.into(),
            help: Some(help.into()),
            related: Vec::new(),
        }
    }
}

/// A located error in one of polyc's input languages.
///
/// Rendered, it reads:
///
/// ```text
///   × examples/bad.tc:3:10: undefined tensor `X`
///    ╭─[examples/bad.tc:3:10]
///  2 │ def f(f32(N) A) -> (B) {
///  3 │   B(i) = X(i)
///    ·          ──┬─
///    ·            ╰── not an input, output or earlier temporary
///    ╰────
///   help: declare `X` as an input, or write it before this statement
/// ```
#[derive(Debug, thiserror::Error, Diagnostic)]
#[error("{location}: {message}")]
pub struct SourceError {
    /// What is wrong.
    pub message: String,
    /// `file:line:col` of the span's start.
    pub location: String,
    /// The file, for the snippet.
    #[source_code]
    pub src: NamedSource<Arc<String>>,
    /// The offending text.
    #[label("{label}")]
    pub span: SourceSpan,
    /// What the caret says.
    pub label: String,
    /// The remedy.
    #[help]
    pub help: Option<String>,
    /// Further located notes (e.g. the other line of a disagreement).
    #[related]
    pub related: Vec<SourceError>,
}

impl SourceError {
    /// Adds a related note (rendered after the main error).
    pub fn with_related(mut self, note: SourceError) -> Self {
        self.related.push(note);
        self
    }
}

/// Renders a diagnostic as plain text (no colour, unicode box drawing, 100 columns):
/// the exact text that error tests compare and that the CLI prints when stderr is not a
/// terminal.
pub fn render_plain(diag: &dyn Diagnostic) -> String {
    let mut out = String::new();
    let handler =
        GraphicalReportHandler::new_themed(GraphicalTheme::unicode_nocolor()).with_width(100);
    if handler.render_report(&mut out, diag).is_err() {
        out = format!("{diag}");
    }
    out
}
