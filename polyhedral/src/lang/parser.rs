//! Recursive-descent parser for `.tc` files.
//!
//! Precedence, loosest first: comparison, additive, multiplicative, unary minus,
//! call/primary. Statements end at a newline or `;` (or just before the closing `}`).
//! Inside parentheses, and everywhere in a `def` header, newlines are ignored; in a
//! statement a newline directly after a binary operator or a comma continues the line.
//!
//! In a Tensor Comprehensions file ([`parse_lang`] with `tc`), newlines are plain spaces,
//! as in TC: a statement ends where its expression (and its `where` clauses) cannot go on.
//! The TC mode also reads TC's type names, `T(e)` casts, `c ? a : b`, `&&`, `||`, unary
//! `!`, `where x = e` bindings and `where exists e` clauses, and a 0-d left side written
//! without parentheses; it rejects TC's `for` loops, `<=>` and `T.1` with located errors.

use super::ast::*;
use super::lexer::{lex, Tok, Token};
use super::{tc, Res, LIMITS};
use crate::diag::{SourceError, SourceFile};
use crate::ir::{AssignOp, BinOp, CmpOp, DType, Span};

/// Parses a whole polyc-language file into its `def`s (at least one; names distinct).
pub fn parse(src: &SourceFile) -> Res<Vec<Def>> {
    parse_lang(src, false)
}

/// Parses a whole file into its `def`s, in Tensor Comprehensions' syntax when `tc` is set.
pub fn parse_lang(src: &SourceFile, tc: bool) -> Res<Vec<Def>> {
    let mut toks = lex(src)?;
    if tc {
        toks.retain(|t| t.tok != Tok::Newline);
    }
    let mut p = Parser {
        src,
        toks,
        pos: 0,
        nest: 0,
        depth: 0,
        tc,
    };
    let mut defs: Vec<Def> = Vec::new();
    loop {
        p.skip_newlines();
        let t = p.peek().clone();
        match &t.tok {
            Tok::Eof => break,
            Tok::Ident(s) if s == "def" => {
                let d = p.def()?;
                if let Some(prev) = defs.iter().find(|x| x.name.name == d.name.name) {
                    let (line, _) = src.line_col(prev.name.span.start);
                    return Err(Box::new(
                        src.error(
                            d.name.span,
                            format!("duplicate def `{}`", d.name.name),
                            "defined a second time here",
                            format!(
                                "rename one of the two defs (the first is at line {line}); \
                                 `--entry` picks a def by its name"
                            ),
                        )
                        .with_related(super::common::note(
                            src,
                            prev.name.span,
                            "the first definition",
                            "first defined here",
                        )),
                    ));
                }
                defs.push(d);
            }
            _ => {
                return Err(p.unexpected(
                    &t,
                    "`def`",
                    "a .tc file is a list of `def NAME(inputs) -> (outputs) { statements }`",
                ))
            }
        }
    }
    if defs.is_empty() {
        return Err(Box::new(src.error(
            p.peek().span,
            "the file holds no def",
            "expected `def`",
            "write an operator such as `def f(f32(N) A) -> (f32(N) B) { B(i) = A(i) }`",
        )));
    }
    Ok(defs)
}

struct Parser<'a> {
    src: &'a SourceFile,
    toks: Vec<Token>,
    pos: usize,
    /// While positive, newlines are skipped (inside parentheses and def headers).
    nest: usize,
    /// Current recursion depth of the expression parser.
    depth: usize,
    /// Tensor Comprehensions' syntax.
    tc: bool,
}

impl<'a> Parser<'a> {
    fn cur(&self) -> usize {
        let mut i = self.pos;
        if self.nest > 0 {
            while i + 1 < self.toks.len() && self.toks[i].tok == Tok::Newline {
                i += 1;
            }
        }
        i.min(self.toks.len() - 1)
    }

    fn peek(&self) -> &Token {
        &self.toks[self.cur()]
    }

    /// The token after [`Parser::peek`], skipping newlines like it does.
    fn peek2(&self) -> &Token {
        let mut i = (self.cur() + 1).min(self.toks.len() - 1);
        if self.nest > 0 {
            while i + 1 < self.toks.len() && self.toks[i].tok == Tok::Newline {
                i += 1;
            }
        }
        &self.toks[i]
    }

    fn bump(&mut self) -> Token {
        let i = self.cur();
        let t = self.toks[i].clone();
        if t.tok != Tok::Eof {
            self.pos = i + 1;
        }
        t
    }

    fn skip_newlines(&mut self) {
        while self.toks[self.pos].tok == Tok::Newline {
            self.pos += 1;
        }
    }

    fn err(
        &self,
        span: Span,
        message: impl Into<String>,
        label: impl Into<String>,
        help: impl Into<String>,
    ) -> Box<SourceError> {
        Box::new(self.src.error(span, message, label, help))
    }

    /// "expected X, found Y".
    fn unexpected(&self, found: &Token, expected: &str, help: &str) -> Box<SourceError> {
        let label = if found.tok == Tok::Eof {
            format!("the file ends after this; expected {expected}")
        } else {
            format!("expected {expected} here")
        };
        self.err(
            found.span,
            format!("expected {expected}, found {}", found.tok.describe()),
            label,
            help,
        )
    }

    fn expect(&mut self, tok: Tok, help: &str) -> Res<Token> {
        let t = self.peek().clone();
        if t.tok == tok {
            Ok(self.bump())
        } else {
            Err(self.unexpected(&t, &format!("`{}`", tok.symbol()), help))
        }
    }

    fn ident(&mut self, what: &str, help: &str) -> Res<Ident> {
        let t = self.peek().clone();
        match t.tok {
            Tok::Ident(name) => {
                self.bump();
                Ok(Ident { name, span: t.span })
            }
            _ => Err(self.unexpected(&t, what, help)),
        }
    }

    fn type_name(&mut self) -> Res<TypeName> {
        if self.tc {
            return self.tc_type_name();
        }
        let t = self.peek().clone();
        match &t.tok {
            Tok::Ident(name) => match DType::from_name(name) {
                Some(dtype) => {
                    self.bump();
                    Ok(TypeName {
                        dtype,
                        span: t.span,
                    })
                }
                None => Err(self.err(
                    t.span,
                    format!("unknown type `{name}`"),
                    "not a type",
                    format!(
                        "the types are f16, f32, f64, i8, i32 and i64{}",
                        type_hint(name)
                    ),
                )),
            },
            _ => Err(self.unexpected(&t, "a type", "the types are f16, f32, f64, i8, i32 and i64")),
        }
    }

    /// A TC type name (`float`, `int32`, …) as a polyc element type.
    fn tc_type_name(&mut self) -> Res<TypeName> {
        let t = self.peek().clone();
        let Tok::Ident(name) = &t.tok else {
            return Err(self.unexpected(
                &t,
                "a type",
                &format!("the TC types polyc compiles are {}", tc::SUPPORTED_TYPES),
            ));
        };
        match tc::type_by_name(name) {
            Some((_, Some(dtype))) => {
                self.bump();
                Ok(TypeName {
                    dtype,
                    span: t.span,
                })
            }
            Some((_, None)) => Err(self.err(
                t.span,
                format!("TC type `{name}` has no polyc equivalent"),
                "polyc cannot hold this type",
                format!(
                    "polyc compiles the TC types {}; declare the tensor with one of them \
                     (e.g. `int32` for small unsigned or boolean values)",
                    tc::SUPPORTED_TYPES
                ),
            )),
            None => {
                let polyc = DType::from_name(name).map_or(String::new(), |d| {
                    let tc_name = tc::TcType::of(d).name();
                    format!(
                        "; `{name}` is polyc's own name, and this file is read as Tensor \
                     Comprehensions: write `{tc_name}` (or pass `--lang polyc`)"
                    )
                });
                Err(self.err(
                    t.span,
                    format!("unknown type `{name}`"),
                    "not a TC type",
                    format!(
                        "the TC types polyc compiles are {}{polyc}",
                        tc::SUPPORTED_TYPES
                    ),
                ))
            }
        }
    }

    fn def(&mut self) -> Res<Def> {
        let kw = self.bump();
        self.nest += 1;
        let name = self.ident(
            "the def's name",
            "write `def NAME(inputs) -> (outputs) { … }`",
        )?;
        self.expect(
            Tok::LParen,
            "the inputs follow the def's name in parentheses, e.g. `def f(f32(N) A)`",
        )?;
        let mut params = Vec::new();
        if self.peek().tok != Tok::RParen {
            loop {
                params.push(self.param()?);
                if self.peek().tok == Tok::Comma {
                    self.bump();
                } else {
                    break;
                }
            }
        }
        self.expect(
            Tok::RParen,
            "separate inputs with `,` and close the list with `)`",
        )?;
        self.expect(
            Tok::Arrow,
            "the outputs follow `->` in parentheses, e.g. `-> (f32(N) B)`",
        )?;
        self.expect(
            Tok::LParen,
            "the outputs follow `->` in parentheses, e.g. `-> (f32(N) B)`",
        )?;
        let mut outputs = Vec::new();
        loop {
            outputs.push(self.output()?);
            if self.peek().tok == Tok::Comma {
                self.bump();
            } else {
                break;
            }
        }
        self.expect(
            Tok::RParen,
            "separate outputs with `,` and close the list with `)`",
        )?;
        let open = self.expect(
            Tok::LBrace,
            "the statements follow in braces: `{ C(i) = A(i) }`",
        )?;
        self.nest -= 1;
        let mut stmts = Vec::new();
        let mut locals = Vec::new();
        let mut open_loops: Vec<(LoopHead, Token, usize)> = Vec::new();
        let mut n_loops = 0;
        loop {
            self.skip_newlines();
            let t = self.peek().clone();
            match t.tok {
                Tok::RBrace => {
                    self.bump();
                    if let Some((head, _, first)) = open_loops.pop() {
                        if stmts.len() == first {
                            return Err(self.err(
                                head.span,
                                format!(
                                    "the loop over `{}` has no statements",
                                    head.range.iter.name
                                ),
                                "an empty body",
                                "write statements between the braces, or remove the loop",
                            ));
                        }
                        continue;
                    }
                    return Ok(Def {
                        name,
                        params,
                        outputs,
                        stmts,
                        locals,
                        span: kw.span.join(t.span),
                    });
                }
                Tok::Semi => {
                    self.bump();
                }
                Tok::Eof => return Err(self.unterminated(&t, &name, &open, &open_loops)),
                _ if self.at_local_decl() => locals.push(self.local_decl()?),
                _ if self.at_loop() => {
                    let head = self.loop_head(n_loops, &open_loops)?;
                    n_loops += 1;
                    open_loops.push((head, t, stmts.len()));
                }
                _ => {
                    let mut st = self.stmt()?;
                    st.loops = open_loops.iter().map(|(h, _, _)| h.clone()).collect();
                    stmts.push(st);
                }
            }
        }
    }

    /// The error at the end of the file inside a def's body (or one of its loops).
    fn unterminated(
        &self,
        t: &Token,
        name: &Ident,
        open: &Token,
        open_loops: &[(LoopHead, Token, usize)],
    ) -> Box<SourceError> {
        let (what, opened) = match open_loops.last() {
            Some((h, _, _)) => (format!("loop over `{}`", h.range.iter.name), h.span),
            None => (format!("def `{}`", name.name), open.span),
        };
        Box::new(
            self.src
                .error(
                    t.span,
                    format!("unterminated {what}"),
                    "the file ends after this; expected `}`",
                    if open_loops.is_empty() {
                        "close the def's body with `}`"
                    } else {
                        "close the loop's body with `}`, then the def's"
                    },
                )
                .with_related(super::common::note(
                    self.src,
                    opened,
                    "the body opened here",
                    "this `{` is never closed",
                )),
        )
    }

    /// True at `TYPE(extents) NAME`: a temporary's declaration (polyc's language only; a
    /// tensor named like a type is still written `f32(i) = …`).
    fn at_local_decl(&self) -> bool {
        if self.tc {
            return false;
        }
        let mut toks = self.toks[self.pos..]
            .iter()
            .filter(|t| t.tok != Tok::Newline);
        let (Some(first), Some(second)) = (toks.next(), toks.next()) else {
            return false;
        };
        if !matches!(&first.tok, Tok::Ident(n) if DType::from_name(n).is_some())
            || second.tok != Tok::LParen
        {
            return false;
        }
        // After the matching `)`, a declaration names the tensor.
        let mut depth = 1;
        for t in toks.by_ref() {
            match t.tok {
                Tok::LParen => depth += 1,
                Tok::RParen => depth -= 1,
                Tok::Eof => return false,
                _ => {}
            }
            if depth == 0 {
                break;
            }
        }
        matches!(toks.next(), Some(t) if matches!(t.tok, Tok::Ident(_)))
    }

    /// `TYPE(extents) NAME`: a temporary declared with its type and shape.
    fn local_decl(&mut self) -> Res<OutputDecl> {
        let ty = self.type_name()?;
        let shape = self.shape()?;
        let name = self.ident(
            "the temporary's name",
            "a temporary is declared `f32(T, N) U`, then written by statements",
        )?;
        Ok(OutputDecl {
            ty: Some(ty),
            shape: Some(shape),
            name,
        })
    }

    /// True at `for NAME in`: a sequential loop (a tensor named `for` is still written
    /// `for(i) = …`).
    fn at_loop(&self) -> bool {
        matches!(&self.peek().tok, Tok::Ident(s) if s == "for")
            && matches!(self.peek2().tok, Tok::Ident(_))
    }

    /// `for NAME in lo:hi {`, numbered `id`; its index may not repeat an enclosing one.
    fn loop_head(&mut self, id: usize, open_loops: &[(LoopHead, Token, usize)]) -> Res<LoopHead> {
        let kw = self.bump();
        let range = self.range()?;
        if let Some((outer, _, _)) = open_loops
            .iter()
            .find(|(h, _, _)| h.range.iter.name == range.iter.name)
        {
            return Err(Box::new(
                self.src
                    .error(
                        range.iter.span,
                        format!(
                            "`{}` is already the index of an enclosing loop",
                            range.iter.name
                        ),
                        "the same name again",
                        "give the inner loop another index name",
                    )
                    .with_related(super::common::note(
                        self.src,
                        outer.range.iter.span,
                        "the enclosing loop",
                        "its index",
                    )),
            ));
        }
        let brace = self.expect(
            Tok::LBrace,
            &format!(
                "a loop's body follows in braces: `for {} in lo:hi {{ … }}`",
                range.iter.name
            ),
        )?;
        Ok(LoopHead {
            id,
            span: kw.span.join(brace.span),
            range,
        })
    }

    fn param(&mut self) -> Res<ParamDecl> {
        let t = self.peek().clone();
        if let Tok::Ident(name) = &t.tok {
            if matches!(self.peek2().tok, Tok::Comma | Tok::RParen) {
                return Err(self.err(
                    t.span,
                    format!("input `{name}` has no type"),
                    "type missing",
                    format!(
                        "write the type and shape first, e.g. `f32(N) {name}` for a tensor or \
                         `f32 {name}` for a scalar"
                    ),
                ));
            }
        }
        let ty = self.type_name()?;
        if self.peek().tok == Tok::LParen {
            let shape = self.shape()?;
            let name = self.ident(
                "the input's name",
                "an input tensor is written `TYPE(extents) NAME`, e.g. `f32(M, K) A`",
            )?;
            Ok(ParamDecl::Tensor { ty, shape, name })
        } else {
            let name = self.ident(
                "the input's name or its shape",
                "write `f32(M, K) A` for a tensor or `f32 alpha` for a scalar",
            )?;
            Ok(ParamDecl::Scalar { ty, name })
        }
    }

    fn output(&mut self) -> Res<OutputDecl> {
        let t = self.peek().clone();
        if let Tok::Ident(_) = &t.tok {
            if matches!(self.peek2().tok, Tok::Comma | Tok::RParen) {
                let name = self.ident("", "")?;
                return Ok(OutputDecl {
                    ty: None,
                    shape: None,
                    name,
                });
            }
        }
        let ty = self.type_name()?;
        let shape = if self.peek().tok == Tok::LParen {
            Some(self.shape()?)
        } else {
            None
        };
        let name = self.ident(
            "the output's name",
            "an output is written `f32(M, N) C`, `f32 C` or just `C` (inferred)",
        )?;
        Ok(OutputDecl {
            ty: Some(ty),
            shape,
            name,
        })
    }

    /// `( e, e, … )` (possibly empty).
    fn shape(&mut self) -> Res<Vec<Expr>> {
        self.expect(Tok::LParen, "")?;
        let args = self.list_tail("separate the extents with `,` and close with `)`")?;
        Ok(args.0)
    }

    /// After `(`: `[e ("," e)*] ")"`; returns the expressions and the `)` span.
    fn list_tail(&mut self, help: &str) -> Res<(Vec<Expr>, Span)> {
        self.nest += 1;
        let mut args = Vec::new();
        if self.peek().tok != Tok::RParen {
            loop {
                args.push(self.expr()?);
                if self.peek().tok == Tok::Comma {
                    self.bump();
                } else {
                    break;
                }
            }
        }
        let close = self.expect(Tok::RParen, help)?;
        self.nest -= 1;
        Ok((args, close.span))
    }

    fn stmt(&mut self) -> Res<Stmt> {
        let t = self.peek().clone();
        if self.tc {
            self.tc_unsupported_stmt(&t)?;
        }
        let lhs = match &t.tok {
            Tok::Ident(name) => Ident {
                name: name.clone(),
                span: t.span,
            },
            _ => {
                return Err(self.unexpected(
                    &t,
                    "a statement",
                    "a statement is `TENSOR(indices) OP expression`, e.g. `C(i) = A(i) + 1`, \
                     or the `}` that ends the def",
                ))
            }
        };
        self.bump();
        let bare_lhs = self.tc && self.peek().tok != Tok::LParen && self.at_assign_op();
        if self.peek().tok != Tok::LParen && !bare_lhs {
            let t = self.peek().clone();
            return Err(self.err(
                t.span,
                format!(
                    "expected `(` after `{}`, found {}",
                    lhs.name,
                    t.tok.describe()
                ),
                "expected the indices of the written tensor",
                format!(
                    "a statement writes a tensor element: `{}(i, j) = …` (a 0-d tensor is \
                     written `{}() = …`)",
                    lhs.name, lhs.name
                ),
            ));
        }
        let (lhs_index, lhs_span) = if bare_lhs {
            (Vec::new(), lhs.span)
        } else {
            self.bump();
            let (lhs_index, close) =
                self.list_tail("separate the indices with `,` and close the list with `)`")?;
            (lhs_index, lhs.span.join(close))
        };
        let (op, init, op_span, negate) = self.assign_op()?;
        let mut rhs = self.expr()?;
        if negate {
            rhs = Expr {
                span: rhs.span,
                depth: rhs.depth + 1,
                kind: ExprKind::Neg(Box::new(rhs)),
            };
        }
        let mut end = rhs.span;
        let mut ranges = Vec::new();
        if self.tc {
            self.tc_equivalent()?;
            let (rhs, exists, end) = self.tc_where(rhs, &mut ranges)?;
            self.tc_stmt_end()?;
            return Ok(Stmt {
                lhs,
                lhs_index,
                lhs_span,
                op,
                init,
                op_span,
                span: lhs_span.join(end),
                rhs,
                ranges,
                exists,
                loops: Vec::new(),
            });
        }
        if matches!(&self.peek().tok, Tok::Ident(s) if s == "where") {
            self.bump();
            loop {
                let r = self.range()?;
                end = r.span;
                ranges.push(r);
                if self.peek().tok == Tok::Comma {
                    self.bump();
                    self.skip_newlines();
                } else {
                    break;
                }
            }
        }
        let t = self.peek().clone();
        match t.tok {
            Tok::Newline | Tok::Semi => {
                self.bump();
            }
            Tok::RBrace => {}
            Tok::Eof => {
                return Err(self.err(
                    t.span,
                    "unexpected end of file after a statement",
                    "the file ends after this; expected `}`",
                    "close the def's body with `}`",
                ))
            }
            _ => {
                let help = if matches!(t.tok, Tok::Ident(_)) && ranges.is_empty() {
                    "end the statement with a newline or `;`; explicit ranges are written \
                     `where i in lo:hi, j in lo:hi`"
                } else {
                    "end the statement with a newline or `;`"
                };
                return Err(self.unexpected(&t, "the end of the statement", help));
            }
        }
        Ok(Stmt {
            lhs,
            lhs_index,
            lhs_span,
            op,
            init,
            op_span,
            rhs,
            ranges,
            exists: Vec::new(),
            span: t_span_join(lhs_span, end),
            loops: Vec::new(),
        })
    }

    /// True when the next tokens are an assignment operator.
    fn at_assign_op(&self) -> bool {
        match &self.peek().tok {
            Tok::Assign | Tok::PlusEq | Tok::StarEq => true,
            Tok::Ident(s) => (s == "max" || s == "min") && self.peek2().tok == Tok::Assign,
            _ => false,
        }
    }

    /// TC statements polyc does not compile: `for` loops and TC function calls.
    fn tc_unsupported_stmt(&self, t: &Token) -> Res<()> {
        if matches!(&t.tok, Tok::Ident(s) if s == "for") {
            return Err(self.err(
                t.span,
                "expected a loop index after `for`",
                "a loop without its index",
                "a sequential loop is written `for t in lo:hi { statements }` (half-open \
                     range)",
            ));
        }
        if matches!(t.tok, Tok::Ident(_)) && self.peek2().tok == Tok::Comma {
            return Err(self.err(
                t.span,
                "TC function calls (`a, b = f(x)`) are not supported by polyc",
                "a call of another def",
                "write the called def's statements in this def instead",
            ));
        }
        Ok(())
    }

    /// True at TC's `<=>`.
    fn at_equivalent(&self) -> bool {
        let t = self.peek();
        t.tok == Tok::Le && self.peek2().tok == Tok::Gt && self.peek2().span.start == t.span.end
    }

    /// TC's `<=>` (an equivalent-statement annotation) is rejected.
    fn tc_equivalent(&self) -> Res<()> {
        let t = self.peek();
        if self.at_equivalent() {
            return Err(self.err(
                t.span.join(self.peek2().span),
                "TC's `<=>` annotations are not supported by polyc",
                "an equivalent-statement annotation",
                "remove the `<=> NAME(…)` part; it does not change what is computed",
            ));
        }
        Ok(())
    }

    /// TC's `where` clauses: ranges `i in lo:hi`, bindings `x = e` (substituted into the
    /// statement) and `exists e`; several, separated by `,` (a repeated `where` is allowed).
    /// Returns the right-hand side with the bindings substituted, the `exists`
    /// expressions, and the span of the statement's last part.
    fn tc_where(&mut self, rhs: Expr, ranges: &mut Vec<Range>) -> Res<(Expr, Vec<Expr>, Span)> {
        let mut end = rhs.span;
        let mut lets: Vec<(String, Expr)> = Vec::new();
        let mut exists = Vec::new();
        let is_where = |p: &Self| matches!(&p.peek().tok, Tok::Ident(s) if s == "where");
        while is_where(self) {
            self.bump();
            loop {
                let t = self.peek().clone();
                if matches!(&t.tok, Tok::Ident(s) if s == "exists") {
                    self.bump();
                    let e = tc::substitute(&self.expr()?, &lets);
                    self.check_depth(e.depth, e.span)?;
                    end = e.span;
                    exists.push(e);
                } else if matches!(t.tok, Tok::Ident(_)) && self.peek2().tok == Tok::Assign {
                    let name = self.ident("", "")?;
                    self.bump();
                    let e = tc::substitute(&self.expr()?, &lets);
                    self.check_depth(e.depth, e.span)?;
                    end = e.span;
                    lets.push((name.name, e));
                } else {
                    let mut r = self.range()?;
                    r.lo = tc::substitute(&r.lo, &lets);
                    r.hi = tc::substitute(&r.hi, &lets);
                    end = r.span;
                    ranges.push(r);
                }
                if self.peek().tok == Tok::Comma {
                    self.bump();
                    if is_where(self) {
                        self.bump();
                    }
                } else {
                    break;
                }
            }
        }
        let rhs = tc::substitute(&rhs, &lets);
        self.check_depth(rhs.depth, rhs.span)?;
        Ok((rhs, exists, end))
    }

    /// In a TC file a statement ends where the next statement, or the `}`, starts.
    fn tc_stmt_end(&mut self) -> Res<()> {
        let t = self.peek().clone();
        match t.tok {
            Tok::Ident(_) | Tok::RBrace => Ok(()),
            Tok::Semi => {
                self.bump();
                Ok(())
            }
            Tok::Eof => Err(self.err(
                t.span,
                "unexpected end of file after a statement",
                "the file ends after this; expected `}`",
                "close the def's body with `}`",
            )),
            _ => Err(self.unexpected(
                &t,
                "the next statement or `}`",
                "a statement is `TENSOR(indices) OP expression [where i in lo:hi, …]`; an \
                 operator may be missing between two parts of the expression",
            )),
        }
    }

    /// The assignment operator: `(op, init, span, negate)`; `-=` is `+=` of the negated
    /// right side (`negate`), in polyc's language only.
    fn assign_op(&mut self) -> Res<(AssignOp, bool, Span, bool)> {
        let t = self.peek().clone();
        let ops_help = "the assignments are = += -= *= max= min=, and +=! *=! max=! min=! for \
                        a reduction that starts from the identity";
        let minus_eq = t.tok == Tok::Minus
            && self.peek2().tok == Tok::Assign
            && self.peek2().span.start == t.span.end
            && !self.tc;
        let (op, mut span) = match &t.tok {
            Tok::Minus if minus_eq => {
                self.bump();
                let eq = self.bump();
                (AssignOp::Add, t.span.join(eq.span))
            }
            Tok::Assign => {
                self.bump();
                (AssignOp::Assign, t.span)
            }
            Tok::PlusEq => {
                self.bump();
                (AssignOp::Add, t.span)
            }
            Tok::StarEq => {
                self.bump();
                (AssignOp::Mul, t.span)
            }
            Tok::Ident(s) if (s == "max" || s == "min") && self.peek2().tok == Tok::Assign => {
                self.bump();
                let eq = self.bump();
                let op = if s == "max" {
                    AssignOp::Max
                } else {
                    AssignOp::Min
                };
                (op, t.span.join(eq.span))
            }
            Tok::Minus | Tok::Slash | Tok::Percent if self.peek2().tok == Tok::Assign => {
                let eq = self.peek2().span;
                return Err(self.err(
                    t.span.join(eq),
                    format!("`{}=` is not an assignment of the language", t.tok.symbol()),
                    "unsupported operator",
                    ops_help,
                ));
            }
            Tok::EqEq => {
                return Err(self.err(
                    t.span,
                    "expected an assignment, found `==`",
                    "comparison, not assignment",
                    "write `=` to assign",
                ))
            }
            _ => return Err(self.unexpected(&t, "an assignment operator", ops_help)),
        };
        let mut init = false;
        if self.peek().tok == Tok::Bang {
            let b = self.bump();
            if op == AssignOp::Assign {
                return Err(self.err(
                    span.join(b.span),
                    "`=!` is not an assignment of the language",
                    "`!` needs a reduction operator",
                    "`=` already overwrites the left side; `!` is for +=! *=! max=! min=!",
                ));
            }
            if minus_eq {
                return Err(self.err(
                    span.join(b.span),
                    "`-=!` is not an assignment of the language",
                    "a subtraction has no identity to start from",
                    "write `+=!` over the negated terms, or assign first and then subtract \
                     with `-=`",
                ));
            }
            init = true;
            span = span.join(b.span);
        }
        Ok((op, init, span, minus_eq))
    }

    fn range(&mut self) -> Res<Range> {
        let iter = self.ident(
            "an index name",
            "explicit ranges are written `where i in lo:hi` (half-open)",
        )?;
        let t = self.peek().clone();
        if !matches!(&t.tok, Tok::Ident(s) if s == "in") {
            return Err(self.unexpected(
                &t,
                "`in`",
                &format!("write `{} in lo:hi` (half-open)", iter.name),
            ));
        }
        self.bump();
        let lo = self.expr()?;
        self.expect(
            Tok::Colon,
            &format!("write `{} in lo:hi` (half-open)", iter.name),
        )?;
        let hi = self.expr()?;
        let span = iter.span.join(hi.span);
        Ok(Range { iter, lo, hi, span })
    }

    fn enter(&mut self) -> Res<()> {
        self.depth += 1;
        if self.depth > LIMITS.max_depth {
            let t = self.peek().clone();
            return Err(self.err(
                t.span,
                "expression nested too deeply",
                format!("more than {} levels", LIMITS.max_depth),
                "split the expression into several statements through a temporary tensor",
            ));
        }
        Ok(())
    }

    fn check_depth(&self, depth: usize, span: Span) -> Res<()> {
        if depth > LIMITS.max_depth {
            return Err(self.err(
                span,
                "expression nested too deeply",
                format!("more than {} levels", LIMITS.max_depth),
                "split the expression into several statements through a temporary tensor",
            ));
        }
        Ok(())
    }

    /// After a binary operator, a newline continues the expression.
    fn continue_line(&mut self) {
        self.skip_newlines();
    }

    fn expr(&mut self) -> Res<Expr> {
        self.enter()?;
        let r = if self.tc {
            self.ternary()
        } else {
            self.comparison()
        };
        self.depth -= 1;
        r
    }

    /// TC's `c ? a : b` (loosest, right-associative), as `select(c, a, b)`.
    fn ternary(&mut self) -> Res<Expr> {
        let cond = self.logic(true)?;
        if self.peek().tok != Tok::Question {
            return Ok(cond);
        }
        let q = self.bump();
        let a = self.expr()?;
        self.expect(Tok::Colon, "a conditional is written `cond ? a : b`")?;
        self.enter()?;
        let b = self.ternary();
        self.depth -= 1;
        let b = b?;
        self.select(q.span, cond, a, b)
    }

    /// `select(c, a, b)` spanning all three.
    fn select(&self, at: Span, c: Expr, a: Expr, b: Expr) -> Res<Expr> {
        let span = c.span.join(b.span);
        let depth = 1 + c.depth.max(a.depth).max(b.depth);
        self.check_depth(depth, span)?;
        Ok(Expr {
            kind: ExprKind::Call {
                name: Ident {
                    name: "select".into(),
                    span: at,
                },
                args: vec![c, a, b],
            },
            span,
            depth,
        })
    }

    /// TC's `||` (when `or`) and `&&`: `a || b` is `select(a, 1, b != 0)`, `a && b` is
    /// `select(a, b != 0, 0)`; both yield 1 or 0.
    fn logic(&mut self, or: bool) -> Res<Expr> {
        let (tok, next): (Tok, fn(&mut Self) -> Res<Expr>) = if or {
            (Tok::OrOr, |p| p.logic(false))
        } else {
            (Tok::AndAnd, |p| p.comparison())
        };
        let mut lhs = next(self)?;
        while self.peek().tok == tok {
            let op = self.bump();
            let rhs = next(self)?;
            let zero = Expr::leaf(ExprKind::Int(0), op.span);
            let one = Expr::leaf(ExprKind::Int(1), op.span);
            let truth = self.node(rhs, zero.clone(), |l, r| ExprKind::Cmp(CmpOp::Ne, l, r))?;
            lhs = if or {
                self.select(op.span, lhs, one, truth)?
            } else {
                self.select(op.span, lhs, truth, zero)?
            };
        }
        Ok(lhs)
    }

    fn comparison(&mut self) -> Res<Expr> {
        let mut lhs = self.additive()?;
        loop {
            if self.tc && self.at_equivalent() {
                return Ok(lhs);
            }
            let op = match self.peek().tok {
                Tok::Lt => CmpOp::Lt,
                Tok::Le => CmpOp::Le,
                Tok::Gt => CmpOp::Gt,
                Tok::Ge => CmpOp::Ge,
                Tok::EqEq => CmpOp::Eq,
                Tok::Ne => CmpOp::Ne,
                _ => return Ok(lhs),
            };
            self.bump();
            self.continue_line();
            let rhs = self.additive()?;
            lhs = self.node(lhs, rhs, |l, r| ExprKind::Cmp(op, l, r))?;
        }
    }

    fn additive(&mut self) -> Res<Expr> {
        let mut lhs = self.multiplicative()?;
        loop {
            let op = match self.peek().tok {
                Tok::Plus => BinOp::Add,
                Tok::Minus => BinOp::Sub,
                _ => return Ok(lhs),
            };
            self.bump();
            self.continue_line();
            let rhs = self.multiplicative()?;
            lhs = self.bin(op, lhs, rhs)?;
        }
    }

    fn bin(&self, op: BinOp, lhs: Expr, rhs: Expr) -> Res<Expr> {
        self.node(lhs, rhs, |l, r| ExprKind::Bin(op, l, r))
    }

    /// A binary node spanning both operands, with the nesting-depth limit checked.
    fn node(
        &self,
        lhs: Expr,
        rhs: Expr,
        kind: impl FnOnce(Box<Expr>, Box<Expr>) -> ExprKind,
    ) -> Res<Expr> {
        let span = lhs.span.join(rhs.span);
        let depth = 1 + lhs.depth.max(rhs.depth);
        self.check_depth(depth, span)?;
        Ok(Expr {
            kind: kind(Box::new(lhs), Box::new(rhs)),
            span,
            depth,
        })
    }

    fn multiplicative(&mut self) -> Res<Expr> {
        let mut lhs = self.unary()?;
        loop {
            let op = match self.peek().tok {
                Tok::Star => BinOp::Mul,
                Tok::Slash => BinOp::Div,
                Tok::Percent => BinOp::Rem,
                _ => return Ok(lhs),
            };
            self.bump();
            self.continue_line();
            let rhs = self.unary()?;
            lhs = self.bin(op, lhs, rhs)?;
        }
    }

    fn unary(&mut self) -> Res<Expr> {
        let t = self.peek().clone();
        match t.tok {
            Tok::Minus | Tok::Plus => {
                self.bump();
                self.enter()?;
                let e = self.unary();
                self.depth -= 1;
                let e = e?;
                if t.tok == Tok::Plus {
                    return Ok(e);
                }
                let span = t.span.join(e.span);
                // Fold `-literal` so that `-3` is a literal.
                match e.kind {
                    ExprKind::Int(v) => Ok(Expr::leaf(ExprKind::Int(v.wrapping_neg()), span)),
                    ExprKind::Float(v) => Ok(Expr::leaf(ExprKind::Float(-v), span)),
                    _ => {
                        let depth = e.depth + 1;
                        self.check_depth(depth, span)?;
                        Ok(Expr {
                            kind: ExprKind::Neg(Box::new(e)),
                            span,
                            depth,
                        })
                    }
                }
            }
            Tok::Bang if self.tc => {
                self.bump();
                self.enter()?;
                let e = self.unary();
                self.depth -= 1;
                let e = e?;
                let zero = Expr::leaf(ExprKind::Int(0), t.span);
                let mut r = self.node(e, zero, |l, r| ExprKind::Cmp(CmpOp::Eq, l, r))?;
                r.span = t.span.join(r.span);
                Ok(r)
            }
            _ => self.primary(),
        }
    }

    fn primary(&mut self) -> Res<Expr> {
        let t = self.peek().clone();
        match t.tok {
            Tok::Int(v) => {
                self.bump();
                Ok(Expr::leaf(ExprKind::Int(v), t.span))
            }
            Tok::Float(v) => {
                self.bump();
                Ok(Expr::leaf(ExprKind::Float(v), t.span))
            }
            Tok::LParen => {
                self.bump();
                self.nest += 1;
                let e = self.expr()?;
                self.expect(Tok::RParen, "close the parenthesis with `)`")?;
                self.nest -= 1;
                Ok(e)
            }
            Tok::Ident(name) if name == "cast" && self.peek2().tok == Tok::Lt => {
                self.bump();
                self.bump();
                let ty = self.type_name()?;
                self.expect(Tok::Gt, "a cast is written `cast<i32>(e)`")?;
                self.expect(Tok::LParen, "a cast is written `cast<i32>(e)`")?;
                let (args, close) = self.list_tail("a cast takes one argument: `cast<i32>(e)`")?;
                let span = t.span.join(close);
                let mut args = args.into_iter();
                match (args.next(), args.next()) {
                    (Some(arg), None) => {
                        let depth = arg.depth + 1;
                        self.check_depth(depth, span)?;
                        Ok(Expr {
                            kind: ExprKind::Cast {
                                ty,
                                arg: Box::new(arg),
                            },
                            span,
                            depth,
                        })
                    }
                    (first, _) => Err(self.err(
                        span,
                        format!(
                            "`cast` takes 1 argument, {} given",
                            if first.is_none() { "0" } else { "more than 1" }
                        ),
                        "wrong number of arguments",
                        "write `cast<T>(e)` with exactly one expression",
                    )),
                }
            }
            Tok::Ident(name)
                if self.tc && tc::is_type_name(&name) && self.peek2().tok == Tok::LParen =>
            {
                let ty = self.tc_type_name()?;
                self.bump();
                let (args, close) =
                    self.list_tail(&format!("a cast takes one argument: `{name}(e)`"))?;
                let span = t.span.join(close);
                if args.len() != 1 {
                    return Err(self.err(
                        span,
                        format!(
                            "the cast `{name}(…)` takes 1 argument, {} given",
                            args.len()
                        ),
                        "wrong number of arguments",
                        format!("write `{name}(e)` with exactly one expression"),
                    ));
                }
                let arg = args.into_iter().next().expect("one argument");
                let depth = arg.depth + 1;
                self.check_depth(depth, span)?;
                Ok(Expr {
                    kind: ExprKind::Cast {
                        ty,
                        arg: Box::new(arg),
                    },
                    span,
                    depth,
                })
            }
            Tok::Ident(name) => {
                self.bump();
                let ident = Ident {
                    name: name.clone(),
                    span: t.span,
                };
                if self.tc {
                    let n = self.peek().clone();
                    let dot = self.src.text.as_bytes().get(n.span.start) == Some(&b'.');
                    if matches!(n.tok, Tok::Float(_)) && dot && n.span.start == t.span.end {
                        return Err(self.err(
                            t.span.join(n.span),
                            "TC's dimension specifiers (`T.1`) are not supported by polyc",
                            "the extent of a dimension",
                            format!(
                                "use the size name that `{name}`'s declaration gives that \
                                 dimension"
                            ),
                        ));
                    }
                }
                if self.peek().tok == Tok::LParen {
                    self.bump();
                    self.enter()?;
                    let r = self.list_tail(&format!(
                        "separate the arguments of `{name}` with `,` and close with `)`"
                    ));
                    self.depth -= 1;
                    let (args, close) = r?;
                    let span = t.span.join(close);
                    let depth = 1 + args.iter().map(|a| a.depth).max().unwrap_or(0);
                    self.check_depth(depth, span)?;
                    Ok(Expr {
                        kind: ExprKind::Call { name: ident, args },
                        span,
                        depth,
                    })
                } else {
                    Ok(Expr::leaf(ExprKind::Name(name), t.span))
                }
            }
            _ => Err(self.unexpected(
                &t,
                "an expression",
                "an expression is a number, a name, a tensor access `A(i, j)`, a call such as \
                 `exp(x)`, or a parenthesised expression",
            )),
        }
    }
}

fn t_span_join(a: Span, b: Span) -> Span {
    a.join(b)
}

/// A hint for common misspellings of type names.
fn type_hint(name: &str) -> String {
    let guess = match name {
        "float" | "float32" | "f" => "f32",
        "double" | "float64" => "f64",
        "half" | "float16" => "f16",
        "int" | "int32" => "i32",
        "long" | "int64" => "i64",
        "char" | "int8" | "byte" => "i8",
        _ => return String::new(),
    };
    format!(" (did you mean `{guess}`?)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_conv_chain() {
        let src = SourceFile::new(
            "c.tc",
            "def conv_chain(f32(H, W) A, f32(KH, KW) B, f32 bias) -> (f32(H - KH + 1, W - KW + 1) C) {\n\
             A(h, w) = A(h, w) + bias\n\
             C(h, w) +=! A(h + kh, w + kw) * B(kh, kw)\n\
             C(h, w) = abs(C(h, w)); C(h, w) = relu(C(h, w)) }",
        );
        let defs = parse(&src).unwrap();
        assert_eq!(defs.len(), 1);
        let d = &defs[0];
        assert_eq!(d.name.name, "conv_chain");
        assert_eq!(d.params.len(), 3);
        assert_eq!(d.stmts.len(), 4);
        assert!(d.stmts[1].init);
        assert_eq!(d.stmts[1].op, AssignOp::Add);
        assert_eq!(
            &src.text[d.stmts[1].op_span.start..d.stmts[1].op_span.end],
            "+=!"
        );
        assert_eq!(
            &src.text[d.stmts[1].span.start..d.stmts[1].span.end],
            "C(h, w) +=! A(h + kh, w + kw) * B(kh, kw)"
        );
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let text = format!(
            "def f(f32(N) A) -> (B) {{ B(i) = {}A(i){} }}",
            "(".repeat(5000),
            ")".repeat(5000)
        );
        let src = SourceFile::new("d.tc", text);
        let e = parse(&src).unwrap_err();
        assert!(e.message.contains("nested too deeply"), "{}", e.message);
        let text = format!(
            "def f(f32(N) A) -> (B) {{ B(i) = A(i){} }}",
            " + A(i)".repeat(5000)
        );
        let src = SourceFile::new("d.tc", text);
        let e = parse(&src).unwrap_err();
        assert!(e.message.contains("nested too deeply"), "{}", e.message);
        let text = format!(
            "def f(f32(N) A) -> (B) {{ B(i) = {}A(i) }}",
            "-".repeat(5000)
        );
        let src = SourceFile::new("d.tc", text);
        assert!(parse(&src).is_err());
    }
}
