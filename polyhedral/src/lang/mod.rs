//! The `.tc` front end: lexer, parser, name resolution, typing and range inference.
//!
//! It reads polyc's own language and Tensor Comprehensions' ([`Lang`]; TC files are
//! detected by [`tc::detect`]). A TC file gets TC's meaning: TC's typing and built-ins
//! ([`tc`]), range inference from the right-hand side in rounds ([`tc_infer`]), integer
//! division rounding towards −∞, immutable inputs, and a statement split at a conditional
//! whose condition is affine in the indices. The decisions below are polyc's language's.
//!
//! [`compile`] turns one `def` of a source file into an [`ir::Program`]; [`def_names`]
//! lists the defs of a file. Every failure is a located [`crate::diag::SourceError`]
//! (file:line:col, the offending text underlined, a remedy), returned as a
//! [`miette::Report`]; no input makes the front end panic (nesting depth is limited to
//! [`Limits::max_depth`], integer literals and affine arithmetic are checked for overflow).
//!
//! Decisions the language description leaves open:
//! - Iterators of a statement: the names in the left-hand indices in order of first
//!   appearance, then the names that appear only in the right-hand side's tensor indices,
//!   in order of first appearance. A name in an index that is not a size is an iterator.
//! - Sizes ([`ir::Program::params`]): unknown names in the header's shapes, in order of
//!   first appearance, then unknown names in `where` bounds.
//! - Affine forms are canonicalised: iterators (in statement order), then sizes, then
//!   `floordiv`/`mod` terms, then the constant, so `h + kh` and `H - KH + 1` print as
//!   `(h + kh)` and `((H - KH) + 1)`.
//! - A name read as `x(…)` that is neither a tensor nor a built-in is an "undefined tensor"
//!   if it starts with an upper-case letter or is written later in the def, else an
//!   "unknown function".
//! - Reading an output or temporary before any statement writes it is an error; updating
//!   a temporary with `op=` (without `!`) before it is written is an error; updating an
//!   output that way reads the value the caller passed in.
//! - Outputs may be declared `f32(M, N) C`, `f32 C` (shape inferred) or `C` (both inferred).
//! - A size used as a value becomes [`ir::Expr::SizeValue`].

pub mod ast;
pub mod common;
pub mod infer;
pub mod lexer;
pub mod lin;
pub mod parser;
pub mod sema;
pub mod tc;
pub mod tc_infer;

use crate::diag::{SourceError, SourceFile};
use crate::ir;
pub use common::{Limits, Res, LIMITS};

#[allow(clippy::boxed_local)]
fn report(e: Box<SourceError>) -> miette::Report {
    miette::Report::new(*e)
}

/// The language a source file is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Lang {
    /// polyc's own `.tc` language (`f32`, `i8`, … types; newline-terminated statements).
    Polyc,
    /// Tensor Comprehensions' language (`float`, `int32`, … types; `c ? a : b`; TC's
    /// range inference and typing).
    Tc,
    /// Tensor Comprehensions when a def header uses TC's type names (see
    /// [`tc::detect`]), else polyc's language.
    #[default]
    Auto,
}

impl std::str::FromStr for Lang {
    type Err = miette::Report;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "polyc" => Ok(Lang::Polyc),
            "tc" => Ok(Lang::Tc),
            "auto" => Ok(Lang::Auto),
            _ => Err(miette::miette!(
                help = "pass `--lang polyc`, `--lang tc` or `--lang auto` (the default)",
                "unknown language `{s}`"
            )),
        }
    }
}

impl Lang {
    /// True when `src` is to be read as Tensor Comprehensions. A file that does not lex is
    /// read as polyc's language (whose lexer then reports the error).
    pub fn is_tc(self, src: &SourceFile) -> bool {
        match self {
            Lang::Polyc => false,
            Lang::Tc => true,
            Lang::Auto => lexer::lex(src).is_ok_and(|t| tc::detect(&t)),
        }
    }
}

/// Names of the defs in a file, in order (for `--entry` errors and listing); the language
/// is detected.
pub fn def_names(src: &SourceFile) -> miette::Result<Vec<String>> {
    def_names_as(src, Lang::Auto)
}

/// Names of the defs in a file written in `lang`.
pub fn def_names_as(src: &SourceFile, lang: Lang) -> miette::Result<Vec<String>> {
    let defs = parser::parse_lang(src, lang.is_tc(src)).map_err(report)?;
    Ok(defs.into_iter().map(|d| d.name.name).collect())
}

/// Parses and resolves one def, detecting the language ([`Lang::Auto`]). With
/// `entry = None` the file must hold exactly one def; otherwise the error lists the defs
/// and suggests `--entry`.
pub fn compile(src: &SourceFile, entry: Option<&str>) -> miette::Result<ir::Program> {
    compile_as(src, entry, Lang::Auto)
}

/// [`compile`] for a file written in `lang`.
pub fn compile_as(
    src: &SourceFile,
    entry: Option<&str>,
    lang: Lang,
) -> miette::Result<ir::Program> {
    let tc = lang.is_tc(src);
    let defs = parser::parse_lang(src, tc).map_err(report)?;
    let list = defs
        .iter()
        .map(|d| format!("`{}`", d.name.name))
        .collect::<Vec<_>>()
        .join(", ");
    let def = match entry {
        Some(name) => match defs.iter().find(|d| d.name.name == name) {
            Some(d) => d,
            None => {
                return Err(report(Box::new(src.error(
                    defs[0].name.span,
                    format!("no def named `{name}` in {}", src.name),
                    format!("the file's defs are {list}"),
                    format!("pass `--entry` one of {list}"),
                ))))
            }
        },
        None => {
            if defs.len() > 1 {
                return Err(report(Box::new(src.error(
                    defs[1].name.span,
                    format!("{} holds {} defs; choose one", src.name, defs.len()),
                    "a second def",
                    format!("pass `--entry NAME` with one of {list}"),
                ))));
            }
            &defs[0]
        }
    };
    sema::lower_lang(src, def, tc).map_err(report)
}
