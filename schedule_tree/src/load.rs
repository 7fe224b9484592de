//! Loading a schedule tree from a user's isl YAML file (`--load-tree PASS=file`).
//!
//! isl's reader reports problems poorly: with polyc's context it only says "syntax
//! error", with no position. So the file is first read by a small parser for the YAML
//! subset isl understands (block and flow mappings and sequences, double-quoted strings,
//! plain scalars, `#` comments) that remembers where everything is, and checked against
//! the schedule-tree schema: known keys, keys that belong together, isl texts that isl can
//! parse as the right kind of object, known mark names. Only then is the text handed to
//! isl.

use crate::mark::Mark;
use crate::messages::{strip_isl_kind, unknown_mark_help};
use crate::tree::{Node, NodeKind, ScheduleTree};
use polyhedral::diag::{SourceError, SourceFile};
use polyhedral::ir::Span;
use polyhedral::isl::Ctx;

/// Every key isl's schedule reader knows.
const KEYS: [&str; 16] = [
    "child",
    "coincident",
    "context",
    "contraction",
    "domain",
    "expansion",
    "extension",
    "filter",
    "guard",
    "leaf",
    "mark",
    "options",
    "permutable",
    "schedule",
    "sequence",
    "set",
];

/// A parsed YAML value with its place in the file.
#[derive(Debug)]
enum Value {
    /// A scalar; `quoted` if it was in double quotes. The span excludes the quotes.
    Scalar { text: String, quoted: bool },
    /// A mapping: (key, key span, value) in file order.
    Map(Vec<(String, Span, YNode)>),
    /// A sequence.
    Seq(Vec<YNode>),
}

#[derive(Debug)]
struct YNode {
    value: Value,
    span: Span,
}

type PResult<T> = Result<T, Box<SourceError>>;

struct Parser<'a> {
    file: &'a SourceFile,
    b: &'a [u8],
    pos: usize,
}

const YAML_HELP: &str = "write the tree in isl's YAML form, as `polyc dump --format isl` prints it: \
`key: value` lines, nested nodes indented under `child:`, sequence children as `- filter: \"...\"` items";

impl<'a> Parser<'a> {
    fn err(
        &self,
        start: usize,
        end: usize,
        msg: &str,
        label: &str,
        help: &str,
    ) -> Box<SourceError> {
        // Spans end on character boundaries (a caret may sit under a non-ASCII character).
        let text = self.file.text.as_str();
        let mut end = end.max(start).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        Box::new(self.file.error(Span::new(start, end), msg, label, help))
    }
    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }
    fn peek_at(&self, i: usize) -> Option<u8> {
        self.b.get(i).copied()
    }
    fn col(&self, pos: usize) -> usize {
        pos - self.b[..pos]
            .iter()
            .rposition(|c| *c == b'\n')
            .map_or(0, |i| i + 1)
    }
    fn at_eol(&self) -> bool {
        matches!(self.peek(), None | Some(b'\n') | Some(b'\r'))
    }
    /// Whether `pos` starts a comment (a `#` at the start or after white space).
    fn is_comment(&self, pos: usize) -> bool {
        self.peek_at(pos) == Some(b'#')
            && (pos == 0
                || matches!(
                    self.b[pos - 1],
                    b' ' | b'\t' | b'\n' | b'\r' | b',' | b'{' | b'['
                ))
    }
    fn skip_comment(&mut self) {
        if self.is_comment(self.pos) {
            while !self.at_eol() {
                self.pos += 1;
            }
        }
    }
    /// Skips spaces and a trailing comment, not the line break.
    fn skip_inline(&mut self) {
        while matches!(self.peek(), Some(b' ') | Some(b'\t')) {
            self.pos += 1;
        }
        self.skip_comment();
    }
    /// Skips white space, line breaks and comments. Tabs in indentation are an error.
    fn skip_blank(&mut self) -> PResult<()> {
        loop {
            match self.peek() {
                Some(b' ') | Some(b'\n') | Some(b'\r') => self.pos += 1,
                Some(b'\t') => {
                    return Err(self.err(
                        self.pos,
                        self.pos + 1,
                        "a tab in the indentation",
                        "tab",
                        "indent with spaces; YAML does not allow tabs",
                    ))
                }
                Some(b'#') if self.is_comment(self.pos) => self.skip_comment(),
                _ => return Ok(()),
            }
        }
    }
    /// Skips white space, line breaks and comments inside `{ }` / `[ ]` (tabs are fine).
    /// After a flow item: consumes `,` (false: more items follow) or `close` (true: the
    /// collection ends); anything else is a located error.
    fn flow_separator(&mut self, close: u8, within: &str) -> PResult<bool> {
        self.skip_flow_blank();
        match self.peek() {
            Some(b',') => {
                self.pos += 1;
                Ok(false)
            }
            Some(c) if c == close => {
                self.pos += 1;
                Ok(true)
            }
            _ => {
                let close = close as char;
                Err(self.err(
                    self.pos,
                    self.pos + 1,
                    &format!("expected `,` or `{close}` {within}"),
                    &format!("expected `,` or `{close}`"),
                    YAML_HELP,
                ))
            }
        }
    }

    fn skip_flow_blank(&mut self) {
        loop {
            match self.peek() {
                Some(b' ') | Some(b'\n') | Some(b'\r') | Some(b'\t') => self.pos += 1,
                Some(b'#') if self.is_comment(self.pos) => self.skip_comment(),
                _ => return,
            }
        }
    }
    fn expect_eol(&mut self) -> PResult<()> {
        self.skip_inline();
        if self.at_eol() {
            return Ok(());
        }
        let start = self.pos;
        let mut end = start;
        while end < self.b.len() && self.b[end] != b'\n' {
            end += 1;
        }
        Err(self.err(
            start,
            end,
            "unexpected text after a value",
            "unexpected",
            YAML_HELP,
        ))
    }
    fn text(&self, start: usize, end: usize) -> String {
        String::from_utf8_lossy(&self.b[start..end]).into_owned()
    }

    /// A double-quoted string; `pos` is at the opening quote.
    fn quoted(&mut self) -> PResult<YNode> {
        let open = self.pos;
        let mut i = open + 1;
        while i < self.b.len() && self.b[i] != b'"' && self.b[i] != b'\n' {
            i += 1;
        }
        if self.peek_at(i) != Some(b'"') {
            return Err(self.err(
                open,
                open + 1,
                "unterminated string",
                "this string has no closing `\"` on its line",
                "close the string with `\"` on the same line (isl strings cannot span lines)",
            ));
        }
        self.pos = i + 1;
        Ok(YNode {
            value: Value::Scalar {
                text: self.text(open + 1, i),
                quoted: true,
            },
            span: Span::new(open + 1, i),
        })
    }

    /// A plain scalar ending at a line break, a comment, `: `, or (in flow) `,]}`.
    fn plain(&mut self, flow: bool) -> YNode {
        let start = self.pos;
        let mut end = start;
        while end < self.b.len() {
            let c = self.b[end];
            if c == b'\n' || c == b'\r' || self.is_comment(end) {
                break;
            }
            if c == b':'
                && matches!(
                    self.peek_at(end + 1),
                    None | Some(b' ') | Some(b'\n') | Some(b'\r') | Some(b'\t')
                )
            {
                break;
            }
            if flow && matches!(c, b',' | b']' | b'}' | b':') {
                break;
            }
            end += 1;
        }
        let mut t_end = end;
        while t_end > start && matches!(self.b[t_end - 1], b' ' | b'\t') {
            t_end -= 1;
        }
        self.pos = end;
        YNode {
            value: Value::Scalar {
                text: self.text(start, t_end),
                quoted: false,
            },
            span: Span::new(start, t_end),
        }
    }

    /// The rest of the line (up to a comment) as an unquoted scalar.
    fn rest_of_line(&mut self) -> YNode {
        let start = self.pos;
        while !self.at_eol() && !self.is_comment(self.pos) {
            self.pos += 1;
        }
        let mut end = self.pos;
        while end > start && matches!(self.b[end - 1], b' ' | b'\t') {
            end -= 1;
        }
        YNode {
            value: Value::Scalar {
                text: self.text(start, end),
                quoted: false,
            },
            span: Span::new(start, end),
        }
    }

    /// A flow value (`{..}`, `[..]`, a string or a plain scalar).
    fn flow_value(&mut self) -> PResult<YNode> {
        self.skip_flow_blank();
        let start = self.pos;
        match self.peek() {
            None => Err(self.err(
                start,
                start,
                "expected a value, found the end of the file",
                "here",
                YAML_HELP,
            )),
            Some(b'{') => {
                self.pos += 1;
                let mut entries = Vec::new();
                self.skip_flow_blank();
                if self.peek() == Some(b'}') {
                    self.pos += 1;
                } else {
                    loop {
                        self.skip_flow_blank();
                        let key = self.key(true)?;
                        self.skip_flow_blank();
                        if matches!(self.peek(), Some(b',') | Some(b'}')) {
                            // `{ leaf }`: a key without a value.
                            let at = self.pos;
                            entries.push((
                                key.0,
                                key.1,
                                YNode {
                                    value: Value::Scalar {
                                        text: String::new(),
                                        quoted: false,
                                    },
                                    span: Span::new(at, at),
                                },
                            ));
                            if self.peek() == Some(b',') {
                                self.pos += 1;
                                continue;
                            }
                            self.pos += 1;
                            break;
                        }
                        if self.peek() != Some(b':') {
                            return Err(self.err(
                                self.pos,
                                self.pos + 1,
                                "expected `:` after a key",
                                "expected `:`",
                                YAML_HELP,
                            ));
                        }
                        self.pos += 1;
                        let v = self.flow_value()?;
                        entries.push((key.0, key.1, v));
                        if self.flow_separator(b'}', "in a `{ ... }` mapping")? {
                            break;
                        }
                    }
                }
                Ok(YNode {
                    value: Value::Map(entries),
                    span: Span::new(start, self.pos),
                })
            }
            Some(b'[') => {
                self.pos += 1;
                let mut items = Vec::new();
                self.skip_flow_blank();
                if self.peek() == Some(b']') {
                    self.pos += 1;
                } else {
                    loop {
                        items.push(self.flow_value()?);
                        if self.flow_separator(b']', "in a `[ ... ]` sequence")? {
                            break;
                        }
                    }
                }
                Ok(YNode {
                    value: Value::Seq(items),
                    span: Span::new(start, self.pos),
                })
            }
            Some(b'"') => self.quoted(),
            Some(_) => Ok(self.plain(true)),
        }
    }

    /// A mapping key (plain or quoted); `pos` is at its first character.
    fn key(&mut self, flow: bool) -> PResult<(String, Span)> {
        let n = if self.peek() == Some(b'"') {
            self.quoted()?
        } else {
            self.plain(flow)
        };
        match n.value {
            Value::Scalar { text, .. } if !text.is_empty() => Ok((text, n.span)),
            _ => Err(self.err(
                self.pos,
                self.pos + 1,
                "expected a key",
                "expected `key:`",
                YAML_HELP,
            )),
        }
    }

    /// A value in block context whose first character must be right of column
    /// `parent` (or exactly at `seq_col` for a `- ` sequence).
    fn block(&mut self, parent: Option<usize>, seq_col: Option<usize>) -> PResult<YNode> {
        self.skip_blank()?;
        let start = self.pos;
        let Some(c) = self.peek() else {
            return Err(self.err(
                start,
                start,
                "expected a value, found the end of the file",
                "here",
                YAML_HELP,
            ));
        };
        let col = self.col(start);
        let is_dash = c == b'-'
            && matches!(
                self.peek_at(start + 1),
                None | Some(b' ') | Some(b'\n') | Some(b'\r')
            );
        let indented = parent.is_none_or(|p| col > p);
        if !(indented || (is_dash && seq_col == Some(col))) {
            return Err(self.err(
                start,
                start + 1,
                "expected an indented value",
                "not indented under its key",
                "indent a nested node further than the key it belongs to",
            ));
        }
        if is_dash {
            return self.block_seq(col);
        }
        match c {
            b'{' | b'[' => {
                let v = self.flow_value()?;
                self.expect_eol()?;
                Ok(v)
            }
            _ => {
                let first = if c == b'"' {
                    self.quoted()?
                } else {
                    self.plain(false)
                };
                self.skip_inline();
                if self.peek() == Some(b':') {
                    let (Value::Scalar { text, .. }, span) = (first.value, first.span) else {
                        unreachable!("keys are scalars")
                    };
                    self.block_map(start, col, text, span)
                } else {
                    self.expect_eol()?;
                    Ok(first)
                }
            }
        }
    }

    /// A block mapping starting at `start`, keys at column `col`; its first key is read,
    /// `pos` is at the `:`.
    fn block_map(
        &mut self,
        start: usize,
        col: usize,
        first_key: String,
        first_span: Span,
    ) -> PResult<YNode> {
        let mut entries = Vec::new();
        let (mut key, mut key_span) = (first_key, first_span);
        loop {
            // at ':'
            self.pos += 1;
            self.skip_inline();
            let isl_text = IslKind::of_key(&key).is_some();
            let value = if self.at_eol() {
                self.block(Some(col), Some(col))?
            } else if isl_text && matches!(self.peek(), Some(b'{') | Some(b'[')) {
                // An isl text someone forgot to quote: keep it whole so the schema check
                // can say so (read as YAML, its braces would make a flow mapping).
                self.rest_of_line()
            } else {
                match self.peek() {
                    Some(b'{') | Some(b'[') => {
                        let v = self.flow_value()?;
                        self.expect_eol()?;
                        v
                    }
                    Some(b'"') => {
                        let v = self.quoted()?;
                        self.expect_eol()?;
                        v
                    }
                    _ => {
                        let v = self.plain(false);
                        if self.peek() == Some(b':') {
                            return Err(self.err(
                                v.span.start,
                                self.pos + 1,
                                "a mapping cannot start on the line of its key",
                                "nested `key:` here",
                                "start the nested mapping on the next line, indented",
                            ));
                        }
                        self.expect_eol()?;
                        v
                    }
                }
            };
            entries.push((key, key_span, value));
            self.skip_blank()?;
            if self.peek().is_none() {
                break;
            }
            let c = self.col(self.pos);
            if c < col {
                break;
            }
            if c > col {
                return Err(self.err(
                    self.pos,
                    self.pos + 1,
                    "unexpected indentation",
                    "indented deeper than the keys before it",
                    "keys of one node must start in the same column",
                ));
            }
            if self.peek() == Some(b'-') {
                return Err(self.err(
                    self.pos,
                    self.pos + 1,
                    "expected a key, found a sequence item",
                    "`- ` here",
                    YAML_HELP,
                ));
            }
            let k = self.key(false)?;
            key = k.0;
            key_span = k.1;
            self.skip_inline();
            if self.peek() != Some(b':') {
                return Err(self.err(
                    key_span.start,
                    key_span.end,
                    "expected `key: value`",
                    "no `:` after this",
                    YAML_HELP,
                ));
            }
        }
        Ok(YNode {
            value: Value::Map(entries),
            span: Span::new(start, self.pos),
        })
    }

    /// A block sequence whose dashes are at column `col`; `pos` is at the first dash.
    fn block_seq(&mut self, col: usize) -> PResult<YNode> {
        let start = self.pos;
        let mut items = Vec::new();
        loop {
            // at '-'
            self.pos += 1;
            self.skip_inline();
            items.push(self.block(Some(col), None)?);
            self.skip_blank()?;
            if self.peek().is_none() {
                break;
            }
            let c = self.col(self.pos);
            if c < col {
                break;
            }
            let is_dash = self.peek() == Some(b'-')
                && matches!(
                    self.peek_at(self.pos + 1),
                    None | Some(b' ') | Some(b'\n') | Some(b'\r')
                );
            if c > col {
                return Err(self.err(
                    self.pos,
                    self.pos + 1,
                    "unexpected indentation",
                    "indented deeper than the sequence items",
                    "items of one sequence start with `- ` in the same column",
                ));
            }
            if !is_dash {
                break;
            }
        }
        Ok(YNode {
            value: Value::Seq(items),
            span: Span::new(start, self.pos),
        })
    }

    fn document(&mut self) -> PResult<YNode> {
        let v = self.block(None, None)?;
        self.skip_blank()?;
        if self.pos < self.b.len() {
            return Err(self.err(
                self.pos,
                self.pos + 1,
                "unexpected text after the schedule tree",
                "unexpected",
                YAML_HELP,
            ));
        }
        Ok(v)
    }
}

/// The kinds of isl text a key holds.
#[derive(Clone, Copy, Debug)]
enum IslKind {
    UnionSet,
    Set,
    UnionMap,
    MultiUnionPwAff,
    UnionPwMultiAff,
}

impl IslKind {
    fn of_key(key: &str) -> Option<IslKind> {
        Some(match key {
            "domain" | "filter" | "options" => IslKind::UnionSet,
            "context" | "guard" => IslKind::Set,
            "extension" | "expansion" => IslKind::UnionMap,
            "schedule" => IslKind::MultiUnionPwAff,
            "contraction" => IslKind::UnionPwMultiAff,
            _ => return None,
        })
    }
    fn name(self) -> &'static str {
        match self {
            IslKind::UnionSet => "union set",
            IslKind::Set => "set",
            IslKind::UnionMap => "union map",
            IslKind::MultiUnionPwAff => "multi union piecewise affine expression",
            IslKind::UnionPwMultiAff => "union piecewise multi-affine expression",
        }
    }
    fn example(self) -> &'static str {
        match self {
            IslKind::UnionSet => "[N] -> { S_0[i] : 0 <= i < N; S_1[i, j] }",
            IslKind::Set => "[N] -> { : N >= 1 }",
            IslKind::UnionMap => "[N] -> { S_0[i] -> S_1[i, 0] }",
            IslKind::MultiUnionPwAff => "[N] -> [{ S_0[i] -> [(i)] }, { S_0[i] -> [(0)] }]",
            IslKind::UnionPwMultiAff => "{ S_0[i] -> T[(i)] }",
        }
    }
    /// isl's complaint, if `text` is not a valid object of this kind.
    fn check(self, ctx: &Ctx, text: &str) -> Result<(), String> {
        if text.contains('\0') {
            return Err("the text contains a NUL character".into());
        }
        let r = match self {
            IslKind::UnionSet => isl_rs::UnionSet::read_from_str(&ctx.isl, text).map(drop),
            IslKind::Set => isl_rs::Set::read_from_str(&ctx.isl, text).map(drop),
            IslKind::UnionMap => isl_rs::UnionMap::read_from_str(&ctx.isl, text).map(drop),
            IslKind::MultiUnionPwAff => {
                isl_rs::MultiUnionPwAff::read_from_str(&ctx.isl, text).map(drop)
            }
            IslKind::UnionPwMultiAff => {
                isl_rs::UnionPwMultiAff::read_from_str(&ctx.isl, text).map(drop)
            }
        };
        r.map_err(|e| {
            let m = strip_isl_kind(&e.to_string());
            if m.contains("Assertion") && m.contains("obj.type") {
                format!("isl read a different kind of object, not a {}", self.name())
            } else {
                m
            }
        })
    }
}

/// Checks every isl text of a typed subtree; the error names the node path and key.
pub(crate) fn check_tree_texts(ctx: &Ctx, root: &Node) -> Result<(), String> {
    let mut err = None;
    root.visit(&mut |path, n| {
        if err.is_some() {
            return;
        }
        let texts: Vec<(&str, &str)> = match &n.kind {
            NodeKind::Domain { domain } => vec![("domain", domain)],
            NodeKind::Filter { filter } => vec![("filter", filter)],
            NodeKind::Context { context } => vec![("context", context)],
            NodeKind::Guard { guard } => vec![("guard", guard)],
            NodeKind::Extension { extension } => vec![("extension", extension)],
            NodeKind::Expansion {
                contraction,
                expansion,
            } => vec![("contraction", contraction), ("expansion", expansion)],
            NodeKind::Band(b) => {
                let mut v = vec![("schedule", b.schedule.as_str())];
                if let Some(o) = &b.ast_options {
                    v.push(("options", o));
                }
                v
            }
            _ => vec![],
        };
        for (key, text) in texts {
            let kind = IslKind::of_key(key).expect("every key above has a kind");
            if let Err(m) = kind.check(ctx, text) {
                err = Some(format!(
                    "the `{key}` of the {} node at path {path:?} is not a valid isl {} ({m}): `{text}`",
                    n.kind.name(),
                    kind.name()
                ));
                return;
            }
        }
    });
    err.map_or(Ok(()), Err)
}

/// Node types as isl's reader decides them: by the first key.
fn node_keys(first: &str) -> Option<(&'static str, &'static [&'static str])> {
    Some(match first {
        "domain" => ("domain", &["domain", "child"]),
        "context" => ("context", &["context", "child"]),
        "extension" => ("extension", &["extension", "child"]),
        "filter" => ("filter", &["filter", "child"]),
        "guard" => ("guard", &["guard", "child"]),
        "mark" => ("mark", &["mark", "child"]),
        "contraction" | "expansion" => ("expansion", &["contraction", "expansion", "child"]),
        "schedule" | "coincident" | "options" | "permutable" => (
            "band",
            &["schedule", "permutable", "coincident", "options", "child"],
        ),
        "sequence" => ("sequence", &["sequence"]),
        "set" => ("set", &["set"]),
        "leaf" => ("leaf", &["leaf"]),
        _ => return None,
    })
}

struct Checker<'a> {
    file: &'a SourceFile,
    ctx: &'a Ctx,
}

impl Checker<'_> {
    fn err(
        &self,
        span: Span,
        msg: impl Into<String>,
        label: impl Into<String>,
        help: impl Into<String>,
    ) -> Box<SourceError> {
        Box::new(self.file.error(span, msg, label, help))
    }

    fn node(&self, n: &YNode, parent: Option<&str>) -> PResult<()> {
        if matches!(&n.value, Value::Scalar { text, quoted: false } if text == "leaf") {
            return self.leaf_here(n.span, parent);
        }
        let Value::Map(entries) = &n.value else {
            return Err(self.err(
                n.span,
                "expected a schedule-tree node",
                "not a `key: value` mapping",
                "a node is a mapping whose first key names its type, e.g. `filter: \"{ S_0[i] }\"`",
            ));
        };
        let Some((first, first_span, _)) = entries.first() else {
            return Err(self.err(
                n.span,
                "an empty schedule-tree node",
                "no keys",
                "a node is a mapping whose first key names its type, e.g. `filter: \"{ S_0[i] }\"`",
            ));
        };
        for (k, span, _) in entries {
            if !KEYS.contains(&k.as_str()) {
                return Err(self.err(
                    *span,
                    format!("unknown key `{k}`"),
                    "not a schedule-tree key",
                    format!("the valid keys are: {}", KEYS.join(", ")),
                ));
            }
        }
        if first == "child" {
            return Err(self.err(
                *first_span,
                "a node cannot start with `child`",
                "the first key must name the node type",
                "put the node's own key first (e.g. `filter:` before `child:`); isl identifies the node type by its first key",
            ));
        }
        let (ty, allowed) = node_keys(first).expect("every known key but `child` names a type");
        if ty == "leaf" {
            let bare = entries.len() == 1
                && matches!(&entries[0].2.value, Value::Scalar { text, quoted: false } if text.is_empty());
            if !bare {
                return Err(self.err(
                    *first_span,
                    "a leaf node with a value or other keys",
                    "a leaf is `leaf` alone",
                    "write a leaf as `leaf` (block form) or `{ leaf }` (flow form), or leave the `child:` out",
                ));
            }
            return self.leaf_here(*first_span, parent);
        }
        match parent {
            None if ty != "domain" && ty != "extension" => {
                return Err(self.err(
                    *first_span,
                    format!("the root of the schedule tree is a {ty} node"),
                    "expected `domain:`",
                    "a schedule tree starts with `domain: \"<statement instances>\"` (or `extension:` for a subtree)",
                ))
            }
            Some(p @ ("sequence" | "set")) if ty != "filter" => {
                return Err(self.err(
                    *first_span,
                    format!("a child of a {p} node is a {ty} node"),
                    "expected `filter:`",
                    format!("every item of a `{p}:` list is a filter node: `- filter: \"...\"`, with its subtree under `child:`"),
                ))
            }
            _ => {}
        }
        let mut seen: Vec<&str> = Vec::new();
        for (k, span, v) in entries {
            if seen.contains(&k.as_str()) {
                return Err(self.err(
                    *span,
                    format!("duplicate key `{k}`"),
                    "second occurrence",
                    "give each key once per node",
                ));
            }
            seen.push(k);
            if !allowed.contains(&k.as_str()) {
                return Err(self.err(
                    *span,
                    format!("key `{k}` does not belong in a {ty} node"),
                    format!("not a key of a {ty} node"),
                    format!(
                        "a {ty} node has the keys: {}; start another node under `child:`",
                        allowed.join(", ")
                    ),
                ));
            }
            self.value(k, *span, v, ty)?;
        }
        let missing = |key: &str| !seen.contains(&key);
        let need = match ty {
            "mark" if missing("child") => Some(("child", "a mark node needs a `child:`", "isl reads a mark only above a subtree; to end the branch below the mark, write `child:` with `leaf` indented under it")),
            "band" if missing("schedule") => Some(("schedule", "a band node needs a `schedule:`", "add `schedule: \"[{ S_0[i] -> [(i)] }]\"` (a multi union piecewise affine expression)")),
            "expansion" if missing("contraction") => Some(("contraction", "an expansion node needs a `contraction:`", "add `contraction: \"...\"`")),
            "expansion" if missing("expansion") => Some(("expansion", "an expansion node needs an `expansion:`", "add `expansion: \"...\"`")),
            _ => None,
        };
        if let Some((key, msg, help)) = need {
            return Err(self.err(*first_span, msg, format!("no `{key}:` in this node"), help));
        }
        Ok(())
    }

    /// A leaf node is fine anywhere but at the root and in a sequence or set.
    fn leaf_here(&self, span: Span, parent: Option<&str>) -> PResult<()> {
        match parent {
            None => Err(self.err(
                span,
                "the root of the schedule tree is a leaf",
                "expected `domain:`",
                "a schedule tree starts with `domain: \"<statement instances>\"`",
            )),
            Some(p @ ("sequence" | "set")) => Err(self.err(
                span,
                format!("a child of a {p} node is a leaf"),
                "expected `filter:`",
                format!("every item of a `{p}:` list is a filter node: `- filter: \"...\"`"),
            )),
            _ => Ok(()),
        }
    }

    fn value(&self, key: &str, key_span: Span, v: &YNode, ty: &str) -> PResult<()> {
        match key {
            "child" => self.node(v, Some(ty)),
            "sequence" | "set" => {
                let Value::Seq(items) = &v.value else {
                    return Err(self.err(
                        v.span,
                        format!("`{key}:` needs a list of filter nodes"),
                        "not a list",
                        format!("write the children as `- filter: \"...\"` items under `{key}:`"),
                    ));
                };
                if items.is_empty() {
                    return Err(self.err(
                        key_span,
                        format!("an empty `{key}:` list"),
                        "no children",
                        "give at least one filter child",
                    ));
                }
                items.iter().try_for_each(|i| self.node(i, Some(key)))
            }
            "mark" => {
                let Value::Scalar { text, .. } = &v.value else {
                    return Err(self.err(
                        v.span,
                        "a mark name must be a string",
                        "not a string",
                        unknown_mark_help(),
                    ));
                };
                if Mark::from_isl_name(text).is_none() {
                    return Err(self.err(
                        v.span,
                        format!("unknown mark `{text}`"),
                        "not a polyc mark",
                        unknown_mark_help(),
                    ));
                }
                Ok(())
            }
            "permutable" => match &v.value {
                Value::Scalar { text, .. } if text.parse::<i64>().is_ok() => Ok(()),
                _ => Err(self.err(
                    v.span,
                    "`permutable:` must be 0 or 1",
                    "not an integer",
                    "write `permutable: 1` (or leave it out for 0)",
                )),
            },
            "coincident" => {
                let ok = match &v.value {
                    Value::Seq(items) => items.iter().all(|i| matches!(&i.value, Value::Scalar { text, .. } if text.parse::<i64>().is_ok())),
                    _ => false,
                };
                if ok {
                    Ok(())
                } else {
                    Err(self.err(
                        v.span,
                        "`coincident:` must be a list of 0s and 1s",
                        "expected e.g. `[ 1, 0 ]`",
                        "write one 0 or 1 per band member: `coincident: [ 1, 0 ]`",
                    ))
                }
            }
            _ => {
                let kind = IslKind::of_key(key).expect("all other keys hold isl texts");
                match &v.value {
                    Value::Scalar { text, quoted: true } => {
                        kind.check(self.ctx, text).map_err(|m| {
                            self.err(
                                v.span,
                                format!("isl cannot read the `{key}` as a {}: {m}", kind.name()),
                                format!("not a valid isl {}", kind.name()),
                                format!(
                                    "write an isl {} such as `{}`",
                                    kind.name(),
                                    kind.example()
                                ),
                            )
                        })
                    }
                    _ => Err(self.err(
                        v.span,
                        format!(
                            "the `{key}` must be an isl {} in double quotes",
                            kind.name()
                        ),
                        "not a double-quoted string",
                        format!("write `{key}: \"{}\"`", kind.example()),
                    )),
                }
            }
        }
    }
}

impl ScheduleTree {
    /// Reads a schedule tree from isl YAML (block or flow form) in a user's file.
    ///
    /// Errors are located in the file: YAML structure, unknown or misplaced keys (with the
    /// valid ones), isl texts isl cannot parse as the kind of object the key needs (with
    /// isl's message), unknown mark names (with the known ones).
    pub fn from_yaml_file(ctx: &Ctx, file: &SourceFile) -> miette::Result<ScheduleTree> {
        if let Some(i) = file.text.find('\0') {
            return Err(file
                .error(
                    Span::new(i, i + 1),
                    "a NUL character in the file",
                    "NUL",
                    "save the tree as plain UTF-8 text",
                )
                .into());
        }
        let mut p = Parser {
            file,
            b: file.text.as_bytes(),
            pos: 0,
        };
        let doc = p.document().map_err(|e| miette::Report::new(*e))?;
        Checker { file, ctx }
            .node(&doc, None)
            .map_err(|e| miette::Report::new(*e))?;
        let schedule = isl_rs::Schedule::read_from_str(&ctx.isl, &file.text).map_err(|e| {
            miette::Report::new(file.error(
                Span::new(0, 0),
                format!("isl could not read the schedule tree: {}", strip_isl_kind(&e.to_string())),
                "isl stopped reading this file",
                "the file passed polyc's checks but isl's reader rejected it; compare its layout with `polyc dump --format isl`",
            ))
        })?;
        ScheduleTree::from_isl(&schedule)
    }
}
