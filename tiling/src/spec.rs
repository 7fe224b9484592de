//! The tile-spec language (`--tile-spec tiles.txt`), as `shared/design/tile-spec.md`
//! defines it.
//!
//! ```text
//! # the paper's grammar
//! S_4: 32@L1, 32@L1
//! # several levels for one dimension, outer to inner, separated by spaces
//! S_2: 64@L2 8@L1, 64@L2 8@L1, 32@L1
//! # search steering (resolved to fixed sizes by `crate::search` before tiling)
//! S_1: ?@L1, [16..128]@L1, {16, 32, 64}@L1
//! ```
//!
//! The entries of a statement's list go to the loop dimensions that enclose the statement,
//! outermost first, across nested bands. Parsing checks what needs no program: the syntax,
//! buffer names (against the target's buffers), sizes `>= 1`, the order of levels within one
//! dimension (outer buffer first) and duplicate statements. What needs the program (unknown
//! statements, too many entries, disagreeing specs, clamping, capacities) is checked by
//! [`crate::tile`].

// The parser's internal functions return the located error by value; it is built once
// per failed parse, so its size does not matter.
#![allow(clippy::result_large_err)]

use polyhedral::diag::{SourceError, SourceFile};
use polyhedral::ir::Span;
use schedule_tree::Buffer;
use std::fmt;

/// One tile size as written: fixed, or a constraint for the search.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SizeSpec {
    /// A fixed size (`32`), always `>= 1`.
    Fixed(i64),
    /// `?`: any legal size.
    Any,
    /// `[lo..hi]`: any size in the closed range.
    Range {
        /// Smallest size.
        lo: i64,
        /// Largest size.
        hi: i64,
    },
    /// `{a, b, c}`: one of these sizes.
    Choice(Vec<i64>),
}

impl SizeSpec {
    /// The size if it is fixed.
    pub fn fixed(&self) -> Option<i64> {
        match self {
            SizeSpec::Fixed(v) => Some(*v),
            _ => None,
        }
    }
}

impl fmt::Display for SizeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SizeSpec::Fixed(v) => write!(f, "{v}"),
            SizeSpec::Any => f.write_str("?"),
            SizeSpec::Range { lo, hi } => write!(f, "[{lo}..{hi}]"),
            SizeSpec::Choice(v) => {
                let parts: Vec<String> = v.iter().map(|x| x.to_string()).collect();
                write!(f, "{{{}}}", parts.join(", "))
            }
        }
    }
}

/// `size@buffer`: the tile size of one dimension at one memory level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LevelSize {
    /// The size.
    pub size: SizeSpec,
    /// The buffer the tile's data lives in.
    pub buffer: Buffer,
    /// The whole `size@buffer` text.
    pub span: Span,
    /// The size's text.
    pub size_span: Span,
    /// The buffer name's text.
    pub buffer_span: Span,
    /// `size@buffer:stages`: copies into this level's tiles are pipelined over this many
    /// stages (GPU shared memory; `1`: not pipelined; `None`: the target decides).
    pub stages: Option<i64>,
    /// The stage count's text (empty when not given).
    pub stages_span: Span,
}

/// The levels of one dimension, outer buffer first (`64@L2 8@L1`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DimSpec {
    /// One or more levels.
    pub levels: Vec<LevelSize>,
    /// The entry's text.
    pub span: Span,
}

impl DimSpec {
    /// The level for `buffer`, if the entry names it.
    pub fn level(&self, buffer: Buffer) -> Option<&LevelSize> {
        self.levels.iter().find(|l| l.buffer == buffer)
    }
}

/// `S_i: entry, entry, …`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StmtSpec {
    /// The statement (`S_4`).
    pub stmt: String,
    /// The statement id's text.
    pub stmt_span: Span,
    /// One entry per loop dimension, outermost first.
    pub dims: Vec<DimSpec>,
    /// The whole spec's text (statement id to last entry).
    pub span: Span,
}

/// A parsed tile-spec file.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct TileSpec {
    /// The statement specs, in file order (each statement at most once).
    pub stmts: Vec<StmtSpec>,
    /// The target's buffers from outermost to innermost: the order of tiling levels.
    pub buffers: Vec<Buffer>,
}

impl TileSpec {
    /// The spec of `stmt`, if any.
    pub fn get(&self, stmt: &str) -> Option<&StmtSpec> {
        self.stmts.iter().find(|s| s.stmt == stmt)
    }
    /// The first size that is not fixed (a search entry), if any.
    pub fn first_search_entry(&self) -> Option<&LevelSize> {
        self.stmts
            .iter()
            .flat_map(|s| &s.dims)
            .flat_map(|d| &d.levels)
            .find(|l| l.size.fixed().is_none())
    }
    /// Position of `buffer` in the hierarchy (0 = outermost).
    pub fn level_rank(&self, buffer: Buffer) -> usize {
        self.buffers
            .iter()
            .position(|b| *b == buffer)
            .unwrap_or(usize::MAX)
    }
}

impl fmt::Display for StmtSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.stmt)?;
        for (k, d) in self.dims.iter().enumerate() {
            if k > 0 {
                f.write_str(", ")?;
            }
            if d.levels.is_empty() {
                f.write_str("_")?;
            }
            for (j, l) in d.levels.iter().enumerate() {
                if j > 0 {
                    f.write_str(" ")?;
                }
                write!(f, "{}@{}", l.size, l.buffer)?;
                if let Some(st) = l.stages {
                    write!(f, ":{st}")?;
                }
            }
        }
        Ok(())
    }
}

impl fmt::Display for TileSpec {
    /// The canonical text: one statement per line, `S_i: a@B c@D, e@F`; parsing it gives the
    /// same spec (spans aside).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for s in &self.stmts {
            writeln!(f, "{s}")?;
        }
        Ok(())
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Int(i64),
    Colon,
    Comma,
    At,
    Question,
    LBracket,
    RBracket,
    DotDot,
    LBrace,
    RBrace,
    Eof,
}

impl Tok {
    fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Int(v) => format!("`{v}`"),
            Tok::Colon => "`:`".into(),
            Tok::Comma => "`,`".into(),
            Tok::At => "`@`".into(),
            Tok::Question => "`?`".into(),
            Tok::LBracket => "`[`".into(),
            Tok::RBracket => "`]`".into(),
            Tok::DotDot => "`..`".into(),
            Tok::LBrace => "`{`".into(),
            Tok::RBrace => "`}`".into(),
            Tok::Eof => "the end of the file".into(),
        }
    }
}

fn lex(file: &SourceFile) -> Result<Vec<(Tok, Span)>, SourceError> {
    let text = file.text.as_str();
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        match c {
            b' ' | b'\t' | b'\r' | b'\n' => i += 1,
            b'#' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b':' | b',' | b'@' | b'?' | b'[' | b']' | b'{' | b'}' => {
                let t = match c {
                    b':' => Tok::Colon,
                    b',' => Tok::Comma,
                    b'@' => Tok::At,
                    b'?' => Tok::Question,
                    b'[' => Tok::LBracket,
                    b']' => Tok::RBracket,
                    b'{' => Tok::LBrace,
                    _ => Tok::RBrace,
                };
                i += 1;
                out.push((t, Span::new(start, i)));
            }
            b'.' if bytes.get(i + 1) == Some(&b'.') => {
                i += 2;
                out.push((Tok::DotDot, Span::new(start, i)));
            }
            b'-' | b'0'..=b'9' => {
                i += 1;
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
                let s = &text[start..i];
                if s == "-" {
                    return Err(file.error(
                        Span::new(start, i),
                        "expected a number after `-`",
                        "a lone minus sign",
                        "tile sizes are positive integers, e.g. `32@L1`",
                    ));
                }
                let v: i64 = s.parse().map_err(|_| {
                    file.error(
                        Span::new(start, i),
                        format!("the number `{s}` is too large"),
                        "too large",
                        "tile sizes must fit in 64 bits",
                    )
                })?;
                out.push((Tok::Int(v), Span::new(start, i)));
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                out.push((Tok::Ident(text[start..i].to_string()), Span::new(start, i)));
            }
            _ => {
                let ch = text[start..].chars().next().unwrap_or('?');
                let end = start + ch.len_utf8();
                return Err(file.error(
                    Span::new(start, end),
                    format!("unexpected character `{ch}`"),
                    "not part of a tile spec",
                    "a tile spec line reads `S_4: 32@L1, 32@L1`; comments start with `#`",
                ));
            }
        }
    }
    out.push((Tok::Eof, Span::new(text.len(), text.len())));
    Ok(out)
}

struct Parser<'a> {
    file: &'a SourceFile,
    toks: Vec<(Tok, Span)>,
    pos: usize,
    buffers: &'a [Buffer],
}

impl Parser<'_> {
    fn peek(&self) -> &(Tok, Span) {
        &self.toks[self.pos.min(self.toks.len() - 1)]
    }
    fn bump(&mut self) -> (Tok, Span) {
        let t = self.peek().clone();
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
        t
    }
    fn err(&self, span: Span, msg: String, label: &str, help: &str) -> SourceError {
        self.file.error(span, msg, label, help)
    }
    fn buffer_list(&self) -> String {
        let v: Vec<&str> = self.buffers.iter().map(|b| b.name()).collect();
        v.join(", ")
    }

    fn spec_file(&mut self) -> Result<Vec<StmtSpec>, SourceError> {
        let mut stmts: Vec<StmtSpec> = Vec::new();
        loop {
            let (tok, span) = self.peek().clone();
            match tok {
                Tok::Eof => return Ok(stmts),
                Tok::Ident(_) => {
                    let s = self.stmt_spec()?;
                    if let Some(prev) = stmts.iter().find(|p| p.stmt == s.stmt) {
                        return Err(self
                            .err(
                                s.stmt_span,
                                format!("`{}` has two tile specs", s.stmt),
                                "second spec",
                                "give each statement one spec; merge the two lines",
                            )
                            .with_related(self.file.error(
                                prev.stmt_span,
                                format!("the first spec of `{}` is here", s.stmt),
                                "first spec",
                                "keep one of them",
                            )));
                    }
                    stmts.push(s);
                }
                t => {
                    return Err(self.err(
                        span,
                        format!("expected a statement id like `S_4`, found {}", t.describe()),
                        "expected `S_<number>`",
                        "a tile spec line reads `S_4: 32@L1, 32@L1`",
                    ))
                }
            }
        }
    }

    fn stmt_spec(&mut self) -> Result<StmtSpec, SourceError> {
        let (tok, stmt_span) = self.bump();
        let name = match tok {
            Tok::Ident(n) => n,
            _ => unreachable!("stmt_spec starts at an identifier"),
        };
        let ok_name = name
            .strip_prefix("S_")
            .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()));
        if !ok_name {
            return Err(self.err(
                stmt_span,
                format!("`{name}` is not a statement id"),
                "expected `S_<number>`",
                "statements are named `S_0`, `S_1`, … in textual order (`polyc dump` shows them)",
            ));
        }
        let (tok, span) = self.bump();
        if tok != Tok::Colon {
            return Err(self.err(
                span,
                format!("expected `:` after `{name}`, found {}", tok.describe()),
                "expected `:`",
                "a tile spec line reads `S_4: 32@L1, 32@L1`",
            ));
        }
        let mut dims = vec![self.entry()?];
        while self.peek().0 == Tok::Comma {
            self.bump();
            dims.push(self.entry()?);
        }
        let end = dims.last().map_or(stmt_span.end, |d| d.span.end);
        Ok(StmtSpec {
            stmt: name,
            stmt_span,
            dims,
            span: Span::new(stmt_span.start, end),
        })
    }

    fn starts_size(t: &Tok) -> bool {
        matches!(t, Tok::Int(_) | Tok::Question | Tok::LBracket | Tok::LBrace)
    }

    fn entry(&mut self) -> Result<DimSpec, SourceError> {
        // `_`: the dimension stays untiled (an outer loop before the band to tile).
        if let (Tok::Ident(name), span) = self.peek().clone() {
            if name == "_" {
                self.bump();
                let (next, at) = self.peek().clone();
                if !matches!(next, Tok::Comma | Tok::Eof | Tok::Ident(_)) {
                    return Err(self.err(
                        at,
                        format!("expected `,` after `_`, found {}", next.describe()),
                        "`_` takes no size or buffer",
                        "`_` alone leaves a dimension untiled; write a size such as `32@L1` to tile it",
                    ));
                }
                return Ok(DimSpec {
                    levels: Vec::new(),
                    span,
                });
            }
        }
        let mut levels: Vec<LevelSize> = Vec::new();
        loop {
            let (tok, span) = self.peek().clone();
            if !Self::starts_size(&tok) {
                if levels.is_empty() {
                    return Err(self.err(
                        span,
                        format!("expected a tile size, found {}", tok.describe()),
                        "expected `SIZE@BUFFER`",
                        "each entry is one or more `SIZE@BUFFER`, e.g. `32@L1` or `64@L2 8@L1`, or `_` for a dimension left untiled",
                    ));
                }
                break;
            }
            let l = self.level()?;
            if let Some(prev) = levels.iter().find(|p| p.buffer == l.buffer) {
                return Err(self
                    .err(
                        l.buffer_span,
                        format!("`{}` appears twice in one dimension", l.buffer),
                        "second size for this buffer",
                        "give one size per buffer and dimension",
                    )
                    .with_related(self.file.error(
                        prev.buffer_span,
                        "the first size for it is here".to_string(),
                        "first",
                        "remove one of them",
                    )));
            }
            if let Some(prev) = levels.last() {
                let rank = |b: Buffer| self.buffers.iter().position(|x| *x == b);
                if rank(l.buffer) < rank(prev.buffer) {
                    return Err(self.err(
                        l.span,
                        format!(
                            "`{}` is outside `{}`, but comes after it",
                            l.buffer, prev.buffer
                        ),
                        "out of order",
                        &format!(
                            "write the levels of a dimension from outer to inner (the target's order is {})",
                            self.buffer_list()
                        ),
                    ));
                }
                if let (Some(outer), Some(inner)) = (prev.size.fixed(), l.size.fixed()) {
                    if inner > outer {
                        return Err(self.err(
                            l.size_span,
                            format!(
                                "the {} size {inner} is larger than the {} size {outer} that encloses it",
                                l.buffer, prev.buffer
                            ),
                            "larger than the outer tile",
                            "an inner tile must not be larger than the outer tile of the same dimension",
                        ));
                    }
                }
            }
            levels.push(l);
        }
        let span = Span::new(
            levels.first().map_or(0, |l| l.span.start),
            levels.last().map_or(0, |l| l.span.end),
        );
        Ok(DimSpec { levels, span })
    }

    fn int(&mut self, what: &str) -> Result<(i64, Span), SourceError> {
        let (tok, span) = self.bump();
        match tok {
            Tok::Int(v) if v >= 1 => Ok((v, span)),
            Tok::Int(v) => Err(self.err(
                span,
                format!("tile size {v} is not positive"),
                "must be at least 1",
                "a tile size is a positive integer; leave a dimension out of the list to keep it untiled",
            )),
            t => Err(self.err(
                span,
                format!("expected {what}, found {}", t.describe()),
                "expected a number",
                "sizes are positive integers, `?`, `[lo..hi]` or `{a, b, c}`",
            )),
        }
    }

    fn level(&mut self) -> Result<LevelSize, SourceError> {
        let (tok, start) = self.peek().clone();
        let (size, size_span) = match tok {
            Tok::Int(_) => {
                let (v, sp) = self.int("a tile size")?;
                (SizeSpec::Fixed(v), sp)
            }
            Tok::Question => {
                self.bump();
                (SizeSpec::Any, start)
            }
            Tok::LBracket => {
                self.bump();
                let (lo, lo_sp) = self.int("the smallest size of the range")?;
                let (t, sp) = self.bump();
                if t != Tok::DotDot {
                    return Err(self.err(
                        sp,
                        format!("expected `..` in a size range, found {}", t.describe()),
                        "expected `..`",
                        "a size range reads `[16..128]`",
                    ));
                }
                let (hi, hi_sp) = self.int("the largest size of the range")?;
                let (t, sp) = self.bump();
                if t != Tok::RBracket {
                    return Err(self.err(
                        sp,
                        format!(
                            "expected `]` to close the size range, found {}",
                            t.describe()
                        ),
                        "expected `]`",
                        "a size range reads `[16..128]`",
                    ));
                }
                if lo > hi {
                    return Err(self.err(
                        Span::new(lo_sp.start, hi_sp.end),
                        format!("the size range [{lo}..{hi}] is empty"),
                        "lower bound above upper bound",
                        "write the smaller size first",
                    ));
                }
                (SizeSpec::Range { lo, hi }, Span::new(start.start, sp.end))
            }
            Tok::LBrace => {
                self.bump();
                if let (Tok::RBrace, close) = self.peek().clone() {
                    return Err(self.err(
                        Span::new(start.start, close.end),
                        "the size set `{}` is empty".to_string(),
                        "no candidate size",
                        "list at least one candidate, e.g. `{16, 32, 64}`, or write `?` to let the search pick any size",
                    ));
                }
                let mut v = vec![self.int("a candidate size")?.0];
                loop {
                    let (t, sp) = self.bump();
                    match t {
                        Tok::Comma => v.push(self.int("a candidate size")?.0),
                        Tok::RBrace => break (SizeSpec::Choice(v), Span::new(start.start, sp.end)),
                        t => {
                            return Err(self.err(
                                sp,
                                format!(
                                    "expected `,` or `}}` in a size set, found {}",
                                    t.describe()
                                ),
                                "expected `,` or `}`",
                                "a size set reads `{16, 32, 64}`",
                            ))
                        }
                    }
                }
            }
            _ => unreachable!("level starts at a size"),
        };
        let (t, sp) = self.bump();
        if t != Tok::At {
            return Err(self.err(
                sp,
                format!("expected `@` after the size, found {}", t.describe()),
                "expected `@BUFFER`",
                &format!(
                    "every size names the buffer its tile lives in, e.g. `32@L1`; this target's buffers are {}",
                    self.buffer_list()
                ),
            ));
        }
        let (t, bsp) = self.bump();
        let name = match t {
            Tok::Ident(n) => n,
            t => {
                return Err(self.err(
                    bsp,
                    format!("expected a buffer name after `@`, found {}", t.describe()),
                    "expected a buffer",
                    &format!("this target's buffers are {}", self.buffer_list()),
                ))
            }
        };
        let buffer = match Buffer::from_name(&name).filter(|b| self.buffers.contains(b)) {
            Some(b) => b,
            None => {
                return Err(self.err(
                    bsp,
                    format!("unknown buffer `{name}`"),
                    "not a buffer of this target",
                    &format!("this target's buffers are {}", self.buffer_list()),
                ))
            }
        };
        let (stages, stages_span) = self.stages()?;
        Ok(LevelSize {
            size,
            buffer,
            span: Span::new(size_span.start, stages_span.end.max(bsp.end)),
            size_span,
            buffer_span: bsp,
            stages,
            stages_span,
        })
    }

    /// `:N` after a level's buffer: its pipeline stages (a whole number from 1).
    fn stages(&mut self) -> Result<(Option<i64>, Span), SourceError> {
        if self.peek().0 != Tok::Colon {
            return Ok((None, Span::default()));
        }
        let (_, colon) = self.bump();
        let (t, sp) = self.bump();
        match t {
            Tok::Int(v) if v >= 1 => Ok((Some(v), Span::new(colon.start, sp.end))),
            t => Err(self.err(
                Span::new(colon.start, sp.end),
                format!(
                    "expected a stage count (a whole number from 1) after `:`, found {}",
                    t.describe()
                ),
                "not a stage count",
                "`64@shared:3` pipelines the copies into the shared tiles over 3 stages; `:1` turns pipelining off",
            )),
        }
    }
}

/// Parses a tile-spec file. `buffers` are the target's buffers from outermost to innermost
/// (e.g. `[L2, L1, reg]` for the CPU); a buffer not in the list is an error that lists them.
pub fn parse_tile_spec(file: &SourceFile, buffers: &[Buffer]) -> miette::Result<TileSpec> {
    let toks = lex(file).map_err(miette::Report::new)?;
    let mut p = Parser {
        file,
        toks,
        pos: 0,
        buffers,
    };
    let stmts = p.spec_file().map_err(miette::Report::new)?;
    Ok(TileSpec {
        stmts,
        buffers: buffers.to_vec(),
    })
}

/// A fixed `size@buffer` level (no source span).
pub fn fixed_level(size: i64, buffer: Buffer) -> LevelSize {
    LevelSize {
        size: SizeSpec::Fixed(size),
        buffer,
        span: Span::default(),
        size_span: Span::default(),
        buffer_span: Span::default(),
        stages: None,
        stages_span: Span::default(),
    }
}
