//! Parametric quasi-polynomials as isl prints them, read back for display and evaluation.
//!
//! barvinok's counts arrive as isl text (see [`crate::barvinok`]), e.g.
//! `[N] -> { (1/2 * N + 1/2 * N^2) : N > 0 }`, with isl's nested Horner form. [`QPoly`]
//! parses that text (parameter domains only), expands every piece into a sum of
//! monomials with rational coefficients over the parameters and `floor(…)` terms, and
//! prints it factored where the factors are exact: the rational content, the common
//! monomial, and products of polynomials over disjoint parameters (tested by rebuilding
//! the product), e.g. `N·(N + 1)/2` or `(H - KH + 1)·(W - KW + 1)·KH·KW`.
//! [`QPoly::eval`] evaluates it at integer parameter values.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// An exact rational `num/den` with `den > 0` and `gcd(num, den) = 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rat {
    /// Numerator.
    pub num: i128,
    /// Denominator (positive).
    pub den: i128,
}

fn gcd(a: i128, b: i128) -> i128 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Rat {
    /// `num/den`, normalised.
    pub fn new(num: i128, den: i128) -> Rat {
        assert!(den != 0, "zero denominator");
        let g = gcd(num, den).max(1);
        let s = if den < 0 { -1 } else { 1 };
        Rat {
            num: s * num / g,
            den: s * den / g,
        }
    }
    /// An integer.
    pub fn int(n: i128) -> Rat {
        Rat { num: n, den: 1 }
    }
    fn zero() -> Rat {
        Rat::int(0)
    }
    fn one() -> Rat {
        Rat::int(1)
    }
    fn is_zero(self) -> bool {
        self.num == 0
    }
    fn add(self, o: Rat) -> Rat {
        Rat::new(self.num * o.den + o.num * self.den, self.den * o.den)
    }
    fn mul(self, o: Rat) -> Rat {
        Rat::new(self.num * o.num, self.den * o.den)
    }
    fn div(self, o: Rat) -> Rat {
        Rat::new(self.num * o.den, self.den * o.num)
    }
    fn neg(self) -> Rat {
        Rat::new(-self.num, self.den)
    }
    /// `⌊self⌋`.
    pub fn floor(self) -> i128 {
        self.num.div_euclid(self.den)
    }
}

impl std::fmt::Display for Rat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.den == 1 {
            write!(f, "{}", self.num)
        } else {
            write!(f, "{}/{}", self.num, self.den)
        }
    }
}

/// A factor of a monomial: a parameter, or the floor of a polynomial.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Atom {
    /// A parameter by name.
    Var(String),
    /// `floor(p)`.
    Floor(Poly),
}

/// A monomial: atoms with positive exponents.
type Mono = BTreeMap<Atom, u32>;

/// A polynomial with rational coefficients over [`Atom`]s.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Poly {
    terms: BTreeMap<Mono, Rat>,
}

impl Poly {
    fn constant(c: Rat) -> Poly {
        let mut p = Poly::default();
        if !c.is_zero() {
            p.terms.insert(Mono::new(), c);
        }
        p
    }
    fn atom(a: Atom) -> Poly {
        let mut m = Mono::new();
        m.insert(a, 1);
        let mut p = Poly::default();
        p.terms.insert(m, Rat::one());
        p
    }
    fn add_term(&mut self, m: Mono, c: Rat) {
        let e = self.terms.entry(m).or_insert_with(Rat::zero);
        *e = e.add(c);
        if e.is_zero() {
            self.terms.retain(|_, c| !c.is_zero());
        }
    }
    fn add(&self, o: &Poly) -> Poly {
        let mut r = self.clone();
        for (m, c) in &o.terms {
            r.add_term(m.clone(), *c);
        }
        r
    }
    fn scale(&self, k: Rat) -> Poly {
        let mut r = Poly::default();
        if !k.is_zero() {
            for (m, c) in &self.terms {
                r.terms.insert(m.clone(), c.mul(k));
            }
        }
        r
    }
    fn mul(&self, o: &Poly) -> Poly {
        let mut r = Poly::default();
        for (m1, c1) in &self.terms {
            for (m2, c2) in &o.terms {
                let mut m = m1.clone();
                for (a, e) in m2 {
                    *m.entry(a.clone()).or_insert(0) += e;
                }
                r.add_term(m, c1.mul(*c2));
            }
        }
        r
    }
    fn pow(&self, e: u32) -> Poly {
        let mut r = Poly::constant(Rat::one());
        for _ in 0..e {
            r = r.mul(self);
        }
        r
    }
    fn as_constant(&self) -> Option<Rat> {
        match self.terms.len() {
            0 => Some(Rat::zero()),
            1 => self.terms.get(&Mono::new()).copied(),
            _ => None,
        }
    }
    fn atoms(&self) -> Vec<Atom> {
        let mut v: Vec<Atom> = self.terms.keys().flat_map(|m| m.keys().cloned()).collect();
        v.sort();
        v.dedup();
        v
    }

    /// The value at the given parameter values; `None` if a parameter has no value.
    pub fn eval(&self, values: &[(String, i64)]) -> Option<Rat> {
        let mut sum = Rat::zero();
        for (m, c) in &self.terms {
            let mut t = *c;
            for (a, e) in m {
                let v = match a {
                    Atom::Var(n) => Rat::int(values.iter().find(|(k, _)| k == n)?.1 as i128),
                    Atom::Floor(p) => Rat::int(p.eval(values)?.floor()),
                };
                for _ in 0..*e {
                    t = t.mul(v);
                }
            }
            sum = sum.add(t);
        }
        Some(sum)
    }
}

/// One piece: a polynomial and the condition (isl text) on the parameters where it holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Piece {
    /// The polynomial.
    pub poly: Poly,
    /// isl's condition text, `None` for everywhere.
    pub cond: Option<String>,
}

/// A piecewise quasi-polynomial over parameters only; zero outside its pieces.
#[derive(Clone, Debug, PartialEq)]
pub struct QPoly {
    /// The parameter names, as isl lists them.
    pub params: Vec<String>,
    /// The pieces (disjoint domains).
    pub pieces: Vec<Piece>,
}

impl QPoly {
    /// Parses isl's text of a quasi-polynomial over parameters, as
    /// `isl_union_pw_qpolynomial_to_str` prints it.
    pub fn parse(text: &str) -> Result<QPoly, String> {
        let (params, raw) = split_pieces(text)?;
        let mut pieces = Vec::new();
        for (expr, cond) in raw {
            let poly = Parser::new(&expr)
                .parse_all()
                .map_err(|m| format!("cannot read the quasi-polynomial `{text}`: {m}"))?;
            pieces.push(Piece { poly, cond });
        }
        Ok(QPoly { params, pieces })
    }

    /// The value at the given parameter values: the piece whose condition holds, decided
    /// by the caller's `holds` (isl conditions are not interpreted here). With one piece
    /// and no condition, `holds` is not called.
    pub fn eval_with(
        &self,
        values: &[(String, i64)],
        mut holds: impl FnMut(&str) -> bool,
    ) -> Option<Rat> {
        for p in &self.pieces {
            if p.cond.as_deref().is_none_or(&mut holds) {
                return p.poly.eval(values);
            }
        }
        Some(Rat::zero())
    }

    /// The value where there is exactly one piece without condition (or none: zero).
    pub fn eval(&self, values: &[(String, i64)]) -> Option<Rat> {
        match self.pieces.as_slice() {
            [] => Some(Rat::zero()),
            [p] if p.cond.is_none() => p.poly.eval(values),
            _ => None,
        }
    }

    /// Readable form: each piece factored (`N·(N + 1)/2`), its condition after `if`
    /// (with `≤`/`≥`), pieces separated by `; `, and `0` for no piece.
    pub fn pretty(&self) -> String {
        if self.pieces.is_empty() {
            return "0".to_string();
        }
        let parts: Vec<String> = self
            .pieces
            .iter()
            .map(|p| {
                let e = pretty_poly(&p.poly, &self.params);
                match &p.cond {
                    Some(c) => format!("{e} if {}", pretty_cond(c)),
                    None => e,
                }
            })
            .collect();
        let mut s = parts.join("; ");
        if self.pieces.iter().any(|p| p.cond.is_some()) {
            s.push_str(" (else 0)");
        }
        s
    }
}

/// The parameters and the `(expression, condition)` pieces of isl's text of a
/// piecewise object over parameters (`[N] -> { e1 : c1; e2 }`).
type RawPieces = (Vec<String>, Vec<(String, Option<String>)>);

fn split_pieces(text: &str) -> Result<RawPieces, String> {
    let err = |m: &str| format!("cannot read the quasi-polynomial `{text}`: {m}");
    let t = text.trim();
    let (params, body) = match t.find("->") {
        Some(k) if t.starts_with('[') => {
            let head = t[..k].trim();
            let names = head
                .strip_prefix('[')
                .and_then(|h| h.strip_suffix(']'))
                .ok_or_else(|| err("bad parameter list"))?;
            let params: Vec<String> = names
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect();
            (params, t[k + 2..].trim())
        }
        _ => (Vec::new(), t),
    };
    let inner = body
        .strip_prefix('{')
        .and_then(|b| b.strip_suffix('}'))
        .ok_or_else(|| err("expected `{ … }`"))?;
    let mut pieces = Vec::new();
    for piece in split_top(inner, ';') {
        let piece = piece.trim();
        if piece.is_empty() {
            continue;
        }
        let (expr, cond) = match split_top_once(piece, ':') {
            Some((e, c)) => (e.trim(), Some(c.trim().to_string())),
            None => (piece, None),
        };
        if expr.contains("->") || expr.starts_with('[') {
            return Err(err("only quasi-polynomials over parameters are read"));
        }
        pieces.push((expr.to_string(), cond));
    }
    Ok((params, pieces))
}

/// Readable form of a piecewise fold (a bound) as `isl_union_pw_qpolynomial_fold_to_str`
/// prints it, e.g. `[K] -> { max(32 * K) : K > 0 }` gives `32·K if K > 0 (else 0)`;
/// a fold of several polynomials prints as `max(a, b)`.
pub fn pretty_fold(text: &str) -> Result<String, String> {
    let (params, raw) = split_pieces(text)?;
    if raw.is_empty() {
        return Ok("0".to_string());
    }
    let mut parts = Vec::new();
    let mut conditional = false;
    for (expr, cond) in &raw {
        let (kind, args) = match expr
            .strip_prefix("max(")
            .map(|a| ("max", a))
            .or_else(|| expr.strip_prefix("min(").map(|a| ("min", a)))
        {
            Some((k, rest)) => (
                k,
                rest.strip_suffix(')')
                    .ok_or_else(|| format!("cannot read the bound `{text}`"))?,
            ),
            None => ("", expr.as_str()),
        };
        let polys = split_top(args, ',')
            .into_iter()
            .map(|a| Parser::new(a.trim()).parse_all())
            .collect::<Result<Vec<Poly>, String>>()
            .map_err(|m| format!("cannot read the bound `{text}`: {m}"))?;
        let shown: Vec<String> = polys.iter().map(|p| pretty_poly(p, &params)).collect();
        let e = if shown.len() == 1 || kind.is_empty() {
            shown.join(", ")
        } else {
            format!("{kind}({})", shown.join(", "))
        };
        parts.push(match cond {
            Some(c) => {
                conditional = true;
                format!("{e} if {}", pretty_cond(c))
            }
            None => e,
        });
    }
    let mut s = parts.join("; ");
    if conditional {
        s.push_str(" (else 0)");
    }
    Ok(s)
}

/// isl's condition text with `≤`, `≥`.
fn pretty_cond(c: &str) -> String {
    c.replace("<=", "≤").replace(">=", "≥")
}

/// Splits at `sep` outside parentheses, brackets and braces.
fn split_top(s: &str, sep: char) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, ch) in s.char_indices() {
        match ch {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            c if c == sep && depth == 0 => {
                out.push(&s[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn split_top_once(s: &str, sep: char) -> Option<(&str, &str)> {
    let parts = split_top(s, sep);
    if parts.len() < 2 {
        return None;
    }
    let k = parts[0].len();
    Some((&s[..k], &s[k + sep.len_utf8()..]))
}

/// A recursive-descent reader of isl's quasi-polynomial expressions.
struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
}

impl<'a> Parser<'a> {
    fn new(s: &'a str) -> Self {
        Parser {
            s: s.as_bytes(),
            pos: 0,
        }
    }
    fn ws(&mut self) {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.pos).copied()
    }
    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn parse_all(mut self) -> Result<Poly, String> {
        let p = self.expr()?;
        if self.peek().is_some() {
            return Err(format!("unexpected text at offset {}", self.pos));
        }
        Ok(p)
    }
    fn expr(&mut self) -> Result<Poly, String> {
        let mut p = self.term()?;
        loop {
            if self.eat(b'+') {
                p = p.add(&self.term()?);
            } else if self.eat(b'-') {
                p = p.add(&self.term()?.scale(Rat::int(-1)));
            } else {
                return Ok(p);
            }
        }
    }
    fn term(&mut self) -> Result<Poly, String> {
        let mut p = self.unary()?;
        loop {
            if self.eat(b'*') {
                p = p.mul(&self.unary()?);
            } else if self.eat(b'/') {
                let d = self.int()?;
                if d == 0 {
                    return Err("division by zero".into());
                }
                p = p.scale(Rat::new(1, d));
            } else {
                return Ok(p);
            }
        }
    }
    fn unary(&mut self) -> Result<Poly, String> {
        if self.eat(b'-') {
            return Ok(self.unary()?.scale(Rat::int(-1)));
        }
        let base = self.atom()?;
        if self.eat(b'^') {
            let e = self.int()?;
            let e = u32::try_from(e).map_err(|_| "bad exponent".to_string())?;
            return Ok(base.pow(e));
        }
        Ok(base)
    }
    fn int(&mut self) -> Result<i128, String> {
        self.ws();
        let start = self.pos;
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_digit() {
            self.pos += 1;
        }
        std::str::from_utf8(&self.s[start..self.pos])
            .ok()
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| format!("expected an integer at offset {start}"))
    }
    fn atom(&mut self) -> Result<Poly, String> {
        match self.peek() {
            Some(b'(') => {
                self.pos += 1;
                let p = self.expr()?;
                if !self.eat(b')') {
                    return Err(format!("expected `)` at offset {}", self.pos));
                }
                Ok(p)
            }
            Some(c) if c.is_ascii_digit() => {
                let k = Poly::constant(Rat::int(self.int()?));
                // isl writes a coefficient against its variable inside divisions
                // (`floor((960 + 64C)/1024)`): a name right after the digits multiplies.
                match self.s.get(self.pos) {
                    Some(&c) if c.is_ascii_alphabetic() || c == b'_' => Ok(k.mul(&self.atom()?)),
                    _ => Ok(k),
                }
            }
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                let start = self.pos;
                while self.pos < self.s.len()
                    && (self.s[self.pos].is_ascii_alphanumeric()
                        || self.s[self.pos] == b'_'
                        || self.s[self.pos] == b'\'')
                {
                    self.pos += 1;
                }
                let name = String::from_utf8_lossy(&self.s[start..self.pos]).into_owned();
                if name == "floor" {
                    if !self.eat(b'(') {
                        return Err("expected `(` after floor".into());
                    }
                    let inner = self.expr()?;
                    if !self.eat(b')') {
                        return Err("expected `)` closing floor".into());
                    }
                    return Ok(match inner.as_constant() {
                        Some(c) => Poly::constant(Rat::int(c.floor())),
                        None => Poly::atom(Atom::Floor(inner)),
                    });
                }
                if matches!(name.as_str(), "NaN" | "infty" | "max" | "min") {
                    return Err(format!("`{name}` is not a polynomial"));
                }
                Ok(Poly::atom(Atom::Var(name)))
            }
            _ => Err(format!("unexpected text at offset {}", self.pos)),
        }
    }
}

// ---- printing ----------------------------------------------------------------------------

/// Sort key of an atom: parameters in the order given, then other names, then floors.
fn atom_key(a: &Atom, params: &[String]) -> (usize, String) {
    match a {
        Atom::Var(n) => (
            params.iter().position(|p| p == n).unwrap_or(params.len()),
            n.clone(),
        ),
        Atom::Floor(_) => (params.len() + 1, String::new()),
    }
}

fn mono_degree(m: &Mono) -> u32 {
    m.values().sum()
}

/// Terms in print order: higher degree first, then by the parameters' order.
fn ordered_terms<'p>(p: &'p Poly, params: &[String]) -> Vec<(&'p Mono, Rat)> {
    let mut v: Vec<(&Mono, Rat)> = p.terms.iter().map(|(m, c)| (m, *c)).collect();
    v.sort_by_key(|(m, _)| {
        let mut atoms: Vec<((usize, String), u32)> = m
            .iter()
            .map(|(a, e)| (atom_key(a, params), u32::MAX - *e))
            .collect();
        atoms.sort();
        (u32::MAX - mono_degree(m), atoms)
    });
    v
}

fn superscript(e: u32) -> String {
    const D: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    e.to_string()
        .chars()
        .map(|c| D[c.to_digit(10).unwrap_or(0) as usize])
        .collect()
}

fn pretty_atom(a: &Atom, params: &[String]) -> String {
    match a {
        Atom::Var(n) => n.clone(),
        Atom::Floor(p) => format!("⌊{}⌋", pretty_poly(p, params)),
    }
}

fn pretty_mono(m: &Mono, params: &[String]) -> String {
    let mut atoms: Vec<(&Atom, &u32)> = m.iter().collect();
    atoms.sort_by_key(|(a, _)| atom_key(a, params));
    atoms
        .iter()
        .map(|(a, e)| {
            let s = pretty_atom(a, params);
            if **e == 1 {
                s
            } else {
                format!("{s}{}", superscript(**e))
            }
        })
        .collect::<Vec<_>>()
        .join("·")
}

/// A sum of terms, expanded: `H - KH + 1`, `1/2·N² + 1/2·N`.
fn pretty_sum(p: &Poly, params: &[String]) -> String {
    let mut s = String::new();
    let mut terms = ordered_terms(p, params);
    // Lead with the first positive term: `⌊(H + K)/2⌋ - K + 1`, not `-K + ⌊(H + K)/2⌋ + 1`.
    if let Some(k) = terms.iter().position(|(_, c)| c.num > 0) {
        let t = terms.remove(k);
        terms.insert(0, t);
    }
    for (k, (m, c)) in terms.into_iter().enumerate() {
        let neg = c.num < 0;
        let a = if neg { c.neg() } else { c };
        if k == 0 {
            if neg {
                s.push('-');
            }
        } else {
            s.push_str(if neg { " - " } else { " + " });
        }
        let mono = pretty_mono(m, params);
        if mono.is_empty() {
            let _ = write!(s, "{a}");
        } else if a == Rat::one() {
            s.push_str(&mono);
        } else {
            let _ = write!(s, "{a}·{mono}");
        }
    }
    if s.is_empty() {
        s.push('0');
    }
    s
}

/// The content (a rational) and primitive part of `p`, with the first term positive.
fn content(p: &Poly, params: &[String]) -> (Rat, Poly) {
    let terms = ordered_terms(p, params);
    let Some((_, first)) = terms.first() else {
        return (Rat::zero(), Poly::default());
    };
    let mut num = 0i128;
    let mut den = 1i128;
    for (_, c) in &terms {
        num = gcd(num, c.num);
        den = den / gcd(den, c.den) * c.den;
    }
    let mut k = Rat::new(num, den);
    if first.num < 0 {
        k = k.neg();
    }
    (k, p.scale(Rat::one().div(k)))
}

/// Splits off the common monomial: `(atoms with exponents, rest)`.
fn monomial_gcd(p: &Poly) -> (Mono, Poly) {
    let mut common: Option<Mono> = None;
    for m in p.terms.keys() {
        common = Some(match common {
            None => m.clone(),
            Some(c) => c
                .into_iter()
                .filter_map(|(a, e)| m.get(&a).map(|f| (a, e.min(*f))))
                .collect(),
        });
    }
    let common = common.unwrap_or_default();
    let mut rest = Poly::default();
    for (m, c) in &p.terms {
        let mut m = m.clone();
        for (a, e) in &common {
            let left = m[a] - e;
            if left == 0 {
                m.remove(a);
            } else {
                m.insert(a.clone(), left);
            }
        }
        rest.terms.insert(m, *c);
    }
    (common, rest)
}

/// `p = A·B` with `A` over the atoms in `left` and `B` over the others, if it holds.
fn split_product(p: &Poly, left: &[Atom]) -> Option<(Poly, Poly)> {
    let part = |m: &Mono, l: bool| -> Mono {
        m.iter()
            .filter(|(a, _)| left.contains(a) == l)
            .map(|(a, e)| (a.clone(), *e))
            .collect()
    };
    let (m0, c0) = p.terms.iter().next()?;
    let (a0, b0) = (part(m0, true), part(m0, false));
    let mut a = Poly::default();
    let mut b = Poly::default();
    for (m, c) in &p.terms {
        let (ma, mb) = (part(m, true), part(m, false));
        if mb == b0 {
            a.terms.insert(ma.clone(), *c);
        }
        if ma == a0 {
            b.terms.insert(mb, c.div(*c0));
        }
    }
    if a.as_constant().is_some() || b.as_constant().is_some() {
        return None;
    }
    (a.mul(&b) == *p).then_some((a, b))
}

/// Exact factors of a primitive polynomial over disjoint atom sets.
fn split_factors(p: &Poly, out: &mut Vec<Poly>) {
    let atoms = p.atoms();
    let n = atoms.len();
    if (2..=10).contains(&n) {
        // Subsets containing atom 0, not all atoms.
        for mask in 0..(1u32 << (n - 1)) - 1 {
            let left: Vec<Atom> = std::iter::once(atoms[0].clone())
                .chain(
                    (1..n)
                        .filter(|k| mask & (1 << (k - 1)) != 0)
                        .map(|k| atoms[k].clone()),
                )
                .collect();
            if let Some((a, b)) = split_product(p, &left) {
                split_factors(&a, out);
                split_factors(&b, out);
                return;
            }
        }
    }
    out.push(p.clone());
}

/// The first atom of a factor in print order (to order factors).
fn factor_key(p: &Poly, params: &[String]) -> (usize, String) {
    p.atoms()
        .iter()
        .map(|a| atom_key(a, params))
        .min()
        .unwrap_or((usize::MAX, String::new()))
}

/// The sign of `p` at a sample point: parameters listed earlier larger (`100, 90, …`;
/// programs list data sizes before window sizes), else every parameter 1, else 2 (0 if
/// all are 0).
fn sample_sign(p: &Poly, params: &[String]) -> i32 {
    let decreasing: Vec<(String, i64)> = params
        .iter()
        .enumerate()
        .map(|(k, n)| (n.clone(), 100 - 10 * (k as i64 % 9)))
        .collect();
    let same = |v: i64| -> Vec<(String, i64)> { params.iter().map(|n| (n.clone(), v)).collect() };
    for values in [decreasing, same(1), same(2)] {
        if let Some(r) = p.eval(&values) {
            if r.num != 0 {
                return r.num.signum() as i32;
            }
        }
    }
    0
}

/// A polynomial, factored where the factors are exact.
fn pretty_poly(p: &Poly, params: &[String]) -> String {
    if let Some(c) = p.as_constant() {
        return c.to_string();
    }
    let (mut k, prim) = content(p, params);
    let (mono, rest) = monomial_gcd(&prim);
    let mut factors: Vec<Poly> = Vec::new();
    for (a, e) in &mono {
        factors.push(Poly::atom(a.clone()).pow(*e));
    }
    if rest.as_constant().is_none() {
        let mut parts = Vec::new();
        split_factors(&rest, &mut parts);
        for f in parts {
            // Each factor primitive and positive at a sample point (see `sample_sign`),
            // else with a positive first term; its content goes to k.
            let (mut kf, mut pf) = content(&f, params);
            if sample_sign(&pf, params) < 0 {
                pf = pf.scale(Rat::int(-1));
                kf = kf.neg();
            }
            factors.push(pf);
            k = k.mul(kf);
        }
    }
    factors.sort_by_key(|f| (factor_key(f, params), f.terms.len() > 1));
    let n_factors = factors.len();
    if n_factors == 1 && k.den == 1 {
        // One sum times an integer: the expanded form reads best.
        return pretty_sum(p, params);
    }
    let body: Vec<String> = factors
        .iter()
        .map(|f| {
            let s = pretty_sum(f, params);
            if f.terms.len() > 1 {
                format!("({s})")
            } else {
                s
            }
        })
        .collect();
    let mut s = String::new();
    if k.num < 0 {
        s.push('-');
    }
    if k.num.abs() != 1 {
        let _ = write!(s, "{}·", k.num.abs());
    }
    s.push_str(&body.join("·"));
    if k.den != 1 {
        let _ = write!(s, "/{}", k.den);
    }
    s
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_coefficient_against_its_variable_multiplies() {
        let q = QPoly::parse("[C] -> { floor((960 + 64C)/1024) }").unwrap();
        assert_eq!(
            q.eval(&[("C".to_string(), 1)]),
            Some(Rat::int((960 + 64) / 1024))
        );
        assert_eq!(
            q.eval(&[("C".to_string(), 10)]),
            Some(Rat::int((960 + 640) / 1024))
        );
    }

    use super::*;

    fn pretty(t: &str) -> String {
        QPoly::parse(t).unwrap().pretty()
    }

    #[test]
    fn factors_and_conditions() {
        assert_eq!(
            pretty("[N] -> { (1/2 * N + 1/2 * N^2) : N > 0 }"),
            "N·(N + 1)/2 if N > 0 (else 0)"
        );
        assert_eq!(pretty("[N] -> { (1/2 * N + 1/2 * N^2) }"), "N·(N + 1)/2");
        assert_eq!(
            pretty("[H, W, KH, KW] -> { ((((1 + H) + (1 + H) * W) * KH + (-1 - W) * KH^2) * KW + ((-1 - H) * KH + KH^2) * KW^2) }"),
            "(H - KH + 1)·(W - KW + 1)·KH·KW"
        );
        assert_eq!(pretty("[N] -> { floor((2 + N)/3) }"), "⌊(N + 2)/3⌋");
        assert_eq!(pretty("{ 10 }"), "10");
        assert_eq!(
            pretty_fold("[K] -> { max(32 * K) : K > 0 }").unwrap(),
            "32·K if K > 0 (else 0)"
        );
        assert_eq!(
            pretty_fold("[K, N] -> { max(K, 2 * N) }").unwrap(),
            "max(K, 2·N)"
        );
        assert_eq!(pretty("[N] -> {  }"), "0");
        assert_eq!(pretty("[N, M] -> { (-N + 2 * M) }"), "2·M - N");
        assert_eq!(pretty("[N] -> { (-1 - N) }"), "-N - 1");
        assert_eq!(pretty("[N] -> { 3 * N^2 }"), "3·N²");
        // Factors are made positive at small sizes.
        assert_eq!(
            pretty("[H, K, C] -> { (C * (-1 - K + floor((H + K)/2))) }"),
            "(⌊(H + K)/2⌋ - K - 1)·C"
        );
    }

    #[test]
    fn eval_matches_definition() {
        let q = QPoly::parse("[N] -> { (1/2 * N + 1/2 * N^2) + floor((2 + N)/3) }").unwrap();
        for n in 0..20i64 {
            let want = n * (n + 1) / 2 + (n + 2).div_euclid(3);
            assert_eq!(q.eval(&[("N".into(), n)]), Some(Rat::int(want as i128)));
        }
    }
}
