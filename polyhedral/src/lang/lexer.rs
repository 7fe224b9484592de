//! The `.tc` lexer: source text to a flat list of tokens with spans.
//!
//! Newlines are tokens (they end statements); `#` starts a comment that runs to the end of
//! the line; spaces, tabs and carriage returns separate tokens. The list always ends with
//! [`Tok::Eof`].

use super::{Res, LIMITS};
use crate::diag::SourceFile;
use crate::ir::Span;

/// A token kind.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// An identifier (keywords such as `def`, `where`, `in` and type names are identifiers
    /// too; the parser recognises them by their text).
    Ident(String),
    /// An integer literal.
    Int(i64),
    /// A literal with a fractional part or an exponent.
    Float(f64),
    /// `(`
    LParen,
    /// `)`
    RParen,
    /// `{`
    LBrace,
    /// `}`
    RBrace,
    /// `,`
    Comma,
    /// `;`
    Semi,
    /// `:`
    Colon,
    /// `->`
    Arrow,
    /// `+`
    Plus,
    /// `-`
    Minus,
    /// `*`
    Star,
    /// `/`
    Slash,
    /// `%`
    Percent,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    EqEq,
    /// `!=`
    Ne,
    /// `=`
    Assign,
    /// `+=`
    PlusEq,
    /// `*=`
    StarEq,
    /// `!`
    Bang,
    /// `?` (Tensor Comprehensions' conditional)
    Question,
    /// `&&` (Tensor Comprehensions)
    AndAnd,
    /// `||` (Tensor Comprehensions)
    OrOr,
    /// A line break.
    Newline,
    /// The end of the file.
    Eof,
}

impl Tok {
    /// How the token is named in "expected …, found …" messages.
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Int(i) => format!("the number `{i}`"),
            Tok::Float(f) => format!("the number `{f}`"),
            Tok::Newline => "the end of the line".to_string(),
            Tok::Eof => "the end of the file".to_string(),
            other => format!("`{}`", other.symbol()),
        }
    }

    /// The spelling of a punctuation token.
    pub fn symbol(&self) -> &'static str {
        match self {
            Tok::LParen => "(",
            Tok::RParen => ")",
            Tok::LBrace => "{",
            Tok::RBrace => "}",
            Tok::Comma => ",",
            Tok::Semi => ";",
            Tok::Colon => ":",
            Tok::Arrow => "->",
            Tok::Plus => "+",
            Tok::Minus => "-",
            Tok::Star => "*",
            Tok::Slash => "/",
            Tok::Percent => "%",
            Tok::Lt => "<",
            Tok::Le => "<=",
            Tok::Gt => ">",
            Tok::Ge => ">=",
            Tok::EqEq => "==",
            Tok::Ne => "!=",
            Tok::Assign => "=",
            Tok::PlusEq => "+=",
            Tok::StarEq => "*=",
            Tok::Bang => "!",
            Tok::Question => "?",
            Tok::AndAnd => "&&",
            Tok::OrOr => "||",
            Tok::Ident(_) | Tok::Int(_) | Tok::Float(_) | Tok::Newline | Tok::Eof => "",
        }
    }
}

/// A token and where it is.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    /// What it is.
    pub tok: Tok,
    /// Where it is.
    pub span: Span,
}

/// Splits `src` into tokens. The final [`Tok::Eof`] carries the span of the last token
/// (or an empty span at 0 for a file without tokens).
pub fn lex(src: &SourceFile) -> Res<Vec<Token>> {
    let text = src.text.as_str();
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let start = i;
        let single = |tok: Tok| Token {
            tok,
            span: Span::new(start, start + 1),
        };
        let double = |tok: Tok| Token {
            tok,
            span: Span::new(start, start + 2),
        };
        let next = bytes.get(i + 1).copied();
        match b {
            b' ' | b'\t' | b'\r' => i += 1,
            b'\n' => {
                out.push(single(Tok::Newline));
                i += 1;
            }
            b'#' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                out.push(Token {
                    tok: Tok::Ident(text[start..i].to_string()),
                    span: Span::new(start, i),
                });
            }
            b'0'..=b'9' => {
                i = lex_number(src, start, &mut out)?;
            }
            b'.' if next.is_some_and(|c| c.is_ascii_digit()) => {
                i = lex_number(src, start, &mut out)?;
            }
            _ => {
                let (tok, len) = match (b, next) {
                    (b'-', Some(b'>')) => (Tok::Arrow, 2),
                    (b'<', Some(b'=')) => (Tok::Le, 2),
                    (b'>', Some(b'=')) => (Tok::Ge, 2),
                    (b'=', Some(b'=')) => (Tok::EqEq, 2),
                    (b'!', Some(b'=')) => (Tok::Ne, 2),
                    (b'+', Some(b'=')) => (Tok::PlusEq, 2),
                    (b'*', Some(b'=')) => (Tok::StarEq, 2),
                    (b'&', Some(b'&')) => (Tok::AndAnd, 2),
                    (b'|', Some(b'|')) => (Tok::OrOr, 2),
                    (b'?', _) => (Tok::Question, 1),
                    (b'(', _) => (Tok::LParen, 1),
                    (b')', _) => (Tok::RParen, 1),
                    (b'{', _) => (Tok::LBrace, 1),
                    (b'}', _) => (Tok::RBrace, 1),
                    (b',', _) => (Tok::Comma, 1),
                    (b';', _) => (Tok::Semi, 1),
                    (b':', _) => (Tok::Colon, 1),
                    (b'+', _) => (Tok::Plus, 1),
                    (b'-', _) => (Tok::Minus, 1),
                    (b'*', _) => (Tok::Star, 1),
                    (b'/', _) => (Tok::Slash, 1),
                    (b'%', _) => (Tok::Percent, 1),
                    (b'<', _) => (Tok::Lt, 1),
                    (b'>', _) => (Tok::Gt, 1),
                    (b'=', _) => (Tok::Assign, 1),
                    (b'!', _) => (Tok::Bang, 1),
                    _ => {
                        // Report the whole (possibly multi-byte) character.
                        let ch = text[start..].chars().next().unwrap_or('?');
                        let end = start + ch.len_utf8();
                        return Err(Box::new(src.error(
                            Span::new(start, end),
                            format!("unexpected character `{}`", ch.escape_default()),
                            "not part of the language",
                            "names use ASCII letters, digits and `_`; operators are \
                             + - * / % < <= > >= == != and the assignments = += *= max= min= \
                             (with `!` for a reduction init)",
                        )));
                    }
                };
                out.push(if len == 2 { double(tok) } else { single(tok) });
                i += len;
            }
        }
        if out.len() > LIMITS.max_tokens {
            return Err(Box::new(src.error(
                Span::new(start, i.max(start + 1).min(bytes.len())),
                "the file is too long",
                "the front end stops here",
                format!(
                    "a .tc file may hold at most {} tokens; split it into several files",
                    LIMITS.max_tokens
                ),
            )));
        }
    }
    // The end of the file is shown on the last token: miette cannot draw a caret past the
    // last character.
    let end = out
        .iter()
        .rev()
        .find(|t| t.tok != Tok::Newline)
        .map_or(Span::new(0, 0), |t| t.span);
    out.push(Token {
        tok: Tok::Eof,
        span: end,
    });
    Ok(out)
}

/// Lexes a number starting at `start`; returns the offset after it.
fn lex_number(src: &SourceFile, start: usize, out: &mut Vec<Token>) -> Res<usize> {
    let text = src.text.as_str();
    let bytes = text.as_bytes();
    let mut i = start;
    let digits = |i: &mut usize| {
        while *i < bytes.len() && bytes[*i].is_ascii_digit() {
            *i += 1;
        }
    };
    digits(&mut i);
    let mut is_float = false;
    if i < bytes.len() && bytes[i] == b'.' {
        is_float = true;
        i += 1;
        digits(&mut i);
    }
    if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
        let mut j = i + 1;
        if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
            j += 1;
        }
        if j < bytes.len() && bytes[j].is_ascii_digit() {
            is_float = true;
            i = j;
            digits(&mut i);
        }
    }
    let span = Span::new(start, i);
    let lit = &text[start..i];
    let tok = if is_float {
        match lit.parse::<f64>() {
            Ok(v) if v.is_finite() => Tok::Float(v),
            _ => {
                return Err(Box::new(src.error(
                    span,
                    format!("number `{lit}` is out of range"),
                    "too large for a 64-bit float",
                    "use a value whose magnitude is below about 1.8e308",
                )))
            }
        }
    } else {
        match lit.parse::<i64>() {
            Ok(v) => Tok::Int(v),
            Err(_) => {
                return Err(Box::new(src.error(
                    span,
                    format!("integer literal `{lit}` is too large"),
                    "does not fit in 64 bits",
                    format!("integers must be at most {}", i64::MAX),
                )))
            }
        }
    };
    out.push(Token { tok, span });
    Ok(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<Tok> {
        let src = SourceFile::new("t.tc", text);
        lex(&src).unwrap().into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn operators_and_numbers() {
        assert_eq!(
            kinds("C(i) +=! 1.5e3 # x\n-> <= != max= 7 .5"),
            vec![
                Tok::Ident("C".into()),
                Tok::LParen,
                Tok::Ident("i".into()),
                Tok::RParen,
                Tok::PlusEq,
                Tok::Bang,
                Tok::Float(1500.0),
                Tok::Newline,
                Tok::Arrow,
                Tok::Le,
                Tok::Ne,
                Tok::Ident("max".into()),
                Tok::Assign,
                Tok::Int(7),
                Tok::Float(0.5),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn exponent_needs_digits() {
        // `2e` is the integer 2 followed by the name `e`.
        assert_eq!(
            kinds("2e"),
            vec![Tok::Int(2), Tok::Ident("e".into()), Tok::Eof]
        );
    }

    #[test]
    fn overflow_is_an_error() {
        let src = SourceFile::new("t.tc", "99999999999999999999");
        assert!(lex(&src).is_err());
        let src = SourceFile::new("t.tc", "1e999");
        assert!(lex(&src).is_err());
    }

    #[test]
    fn non_ascii_is_an_error_with_a_char_span() {
        let src = SourceFile::new("t.tc", "A(i) = é");
        let e = lex(&src).unwrap_err();
        assert_eq!(e.span.offset(), 7);
        assert_eq!(e.span.len(), 2);
    }
}
