//! The human dumps: the indented tree text and Graphviz DOT.
//!
//! Both work on isl's printed texts alone (no isl context), so they are deterministic and
//! cheap. A text that does not have isl's printed shape is shown as it is.

use crate::isl_text::{braces_body, matching, natural_key, split_top, strip_params};
use crate::tree::{Band, Node, NodeKind, ScheduleTree};

/// `S_0[h, w] : h > 0` → `S_0(h, w) : h > 0`.
fn brackets_to_parens(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '[' => '(',
            ']' => ')',
            c => c,
        })
        .collect()
}

/// The statement name a piece of an isl union object starts with (`S_0` in `S_0[h] -> …`).
fn piece_name(piece: &str) -> &str {
    piece.split(['[', '(']).next().unwrap_or("").trim()
}

/// Tree-text form of an isl union set of statement instances (domain, filter):
/// `{S_0(h, w) : 0 <= h <= 63; S_1(h)}`.
fn instance_set(text: &str) -> String {
    match braces_body(strip_params(text)) {
        Some(body) => {
            let mut parts: Vec<String> = split_top(body, ';')
                .into_iter()
                .map(|p| brackets_to_parens(p.trim()))
                .filter(|p| !p.is_empty())
                .collect();
            // isl prints union pieces in hash order; dumps list statements naturally.
            parts.sort_by_cached_key(|p| natural_key(piece_name(p)));
            format!("{{{}}}", parts.join("; "))
        }
        None => text.trim().to_string(),
    }
}

/// Tree-text form of any other isl object: params dropped, braces tightened.
fn isl_object(text: &str) -> String {
    let s = strip_params(text);
    match braces_body(s) {
        Some(body) => {
            let mut parts: Vec<&str> = split_top(body, ';').into_iter().map(str::trim).collect();
            parts.sort_by_cached_key(|p| natural_key(piece_name(p)));
            format!("{{{}}}", parts.join("; "))
        }
        None => s.to_string(),
    }
}

/// The first `->` not inside brackets.
fn top_arrow(s: &str) -> Option<usize> {
    let mut depth = 0i32;
    let b = s.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b'-' if depth == 0 && b.get(i + 1) == Some(&b'>') => return Some(i),
            _ => {}
        }
    }
    None
}

/// `(h + 1)` → `h + 1`, but `(h) + (w)` stays.
fn strip_outer_parens(s: &str) -> &str {
    let s = s.trim();
    if s.starts_with('(') && matching(s, 0) == Some(s.len() - 1) {
        s[1..s.len() - 1].trim()
    } else {
        s
    }
}

/// One piece of a member: `S_0[h, w] -> [(h)] : h >= 0` → (`S_0`, `h`, `h >= 0`).
fn band_piece(p: &str) -> Option<(String, String, Option<String>)> {
    let p = p.trim();
    let arrow = top_arrow(p)?;
    let tuple = p[..arrow].trim();
    let rest = p[arrow + 2..].trim_start();
    if !rest.starts_with('[') {
        return None;
    }
    let close = matching(rest, 0)?;
    let expr = strip_outer_parens(&rest[1..close]).to_string();
    let after = rest[close + 1..].trim();
    let cond = match after.strip_prefix(':') {
        Some(c) => Some(c.trim().to_string()),
        None if after.is_empty() => None,
        None => return None,
    };
    let name = match tuple.split_once('[') {
        Some((n, _)) if !n.trim().is_empty() => n.trim().to_string(),
        _ => brackets_to_parens(tuple),
    };
    Some((name, expr, cond))
}

/// One piece of a band member for one statement: its expression and its condition.
type Piece = (String, Option<String>);

/// `{S_0 -> (h, w); S_1 -> (h, 0)}` from a band's `multi_union_pw_aff` text, or `None` if
/// the text does not have isl's printed shape.
fn band_schedule(text: &str) -> Option<String> {
    let s = strip_params(text);
    if !s.starts_with('[') || matching(s, 0) != Some(s.len() - 1) {
        return None;
    }
    let inner = s[1..s.len() - 1].trim();
    let members: Vec<&str> = if inner.is_empty() {
        Vec::new()
    } else {
        split_top(inner, ',')
    };
    let n = members.len();
    // statement name → per member, its pieces (expression, condition)
    let mut stmts: Vec<(String, Vec<Vec<Piece>>)> = Vec::new();
    for (m, member) in members.iter().enumerate() {
        let body = braces_body(member)?;
        if body.is_empty() {
            continue;
        }
        for piece in split_top(body, ';') {
            let (name, expr, cond) = band_piece(piece)?;
            let idx = match stmts.iter().position(|(s, _)| *s == name) {
                Some(i) => i,
                None => {
                    stmts.push((name, vec![Vec::new(); n]));
                    stmts.len() - 1
                }
            };
            stmts[idx].1[m].push((expr, cond));
        }
    }
    stmts.sort_by_cached_key(|(name, _)| natural_key(name));
    let rendered: Vec<String> = stmts
        .iter()
        .map(|(name, members)| {
            let exprs: Vec<String> = members
                .iter()
                .map(|pieces| match pieces.as_slice() {
                    [] => "?".to_string(),
                    [(e, None)] => e.clone(),
                    ps => {
                        let v: Vec<String> = ps
                            .iter()
                            .map(|(e, c)| match c {
                                Some(c) => format!("{e} : {c}"),
                                None => e.clone(),
                            })
                            .collect();
                        format!("{{{}}}", v.join("; "))
                    }
                })
                .collect();
            format!("{name} -> ({})", exprs.join(", "))
        })
        .collect();
    Some(format!("{{{}}}", rendered.join("; ")))
}

fn band_attrs(b: &Band) -> String {
    let mut s = String::new();
    if b.permutable {
        s.push_str("permutable ");
    }
    let c: String = b
        .coincident
        .iter()
        .map(|c| if *c { "1" } else { "0" })
        .collect::<Vec<_>>()
        .join(",");
    s.push_str(&format!("coincident=[{c}]"));
    if let Some(o) = &b.ast_options {
        s.push_str(&format!(" options={}", isl_object(o)));
    }
    s
}

/// The lines of a node's label: its kind, its data, its attributes.
fn label_parts(kind: &NodeKind) -> (String, Option<String>, Option<String>) {
    let name = kind.name().to_string();
    match kind {
        NodeKind::Domain { domain: s } | NodeKind::Filter { filter: s } => {
            (name, Some(instance_set(s)), None)
        }
        NodeKind::Band(b) => (
            name,
            Some(band_schedule(&b.schedule).unwrap_or_else(|| b.schedule.trim().to_string())),
            Some(band_attrs(b)),
        ),
        NodeKind::Mark(m) => (name, Some(format!("\"{}\"", m.to_isl_name())), None),
        NodeKind::Extension { extension: s }
        | NodeKind::Context { context: s }
        | NodeKind::Guard { guard: s } => (name, Some(isl_object(s)), None),
        NodeKind::Expansion {
            contraction,
            expansion,
        } => (
            name,
            Some(format!(
                "contraction={} expansion={}",
                isl_object(contraction),
                isl_object(expansion)
            )),
            None,
        ),
        NodeKind::Sequence | NodeKind::Set | NodeKind::Leaf => (name, None, None),
    }
}

/// One line of the tree text for a node (without indentation).
pub fn node_line(kind: &NodeKind) -> String {
    let (name, data, attrs) = label_parts(kind);
    let mut s = name;
    for part in [data, attrs].into_iter().flatten() {
        s.push(' ');
        s.push_str(&part);
    }
    s
}

fn tree_text(node: &Node, depth: usize, out: &mut String) {
    if node.is_leaf() {
        return;
    }
    out.push_str(&"  ".repeat(depth));
    out.push_str(&node_line(&node.kind));
    out.push('\n');
    for c in &node.children {
        tree_text(c, depth + 1, out);
    }
}

/// Escapes a string for a double-quoted DOT attribute.
fn dot_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => {}
            c => o.push(c),
        }
    }
    o
}

impl ScheduleTree {
    /// The indented tree dump (two spaces per level, one node per line, leaves omitted):
    ///
    /// ```text
    /// Domain {S_0(h, w) : 0 <= h <= 63 and 0 <= w <= 63}
    ///   Band {S_0 -> (h, w)} permutable coincident=[1,1]
    /// ```
    ///
    /// Statement instances print as `S_0(h, w)`, parameter prefixes are dropped, a band
    /// prints one `S_i -> (e0, e1, …)` tuple per statement (a member that is piecewise
    /// prints its pieces as `{e : cond; e : cond}`), then ` permutable` if set, then
    /// `coincident=[…]` (always) and ` options={…}` if the band has AST build options.
    /// Marks print their isl name in quotes; context, guard and extension nodes their isl
    /// text; an expansion node `contraction={…} expansion={…}`.
    pub fn to_tree_text(&self) -> String {
        let mut out = String::new();
        tree_text(&self.root, 0, &mut out);
        out
    }

    /// A Graphviz digraph with one box per node (leaves omitted), numbered `n0, n1, …` in
    /// pre-order; edges go from parent to child, labelled with the child position below a
    /// sequence or set.
    pub fn to_dot(&self) -> String {
        let mut nodes = String::new();
        let mut edges = String::new();
        let mut next = 0usize;
        fn walk(n: &Node, next: &mut usize, nodes: &mut String, edges: &mut String) {
            let id = *next;
            *next += 1;
            let (name, data, attrs) = label_parts(&n.kind);
            let label: Vec<String> = [Some(name), data, attrs].into_iter().flatten().collect();
            nodes.push_str(&format!(
                "  n{id} [label=\"{}\"];\n",
                dot_escape(&label.join("\n"))
            ));
            let numbered = matches!(n.kind, NodeKind::Sequence | NodeKind::Set);
            for (i, c) in n.children.iter().enumerate() {
                if c.is_leaf() {
                    continue;
                }
                // The child's number is the next one; its edge goes before its subtree's.
                let cid = *next;
                if numbered {
                    edges.push_str(&format!("  n{id} -> n{cid} [label=\"{i}\"];\n"));
                } else {
                    edges.push_str(&format!("  n{id} -> n{cid};\n"));
                }
                walk(c, next, nodes, edges);
            }
        }
        if !self.root.is_leaf() {
            walk(&self.root, &mut next, &mut nodes, &mut edges);
        }
        format!(
            "digraph schedule_tree {{\n  node [shape=box, fontname=\"monospace\"];\n{nodes}{edges}}}\n"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_are_dropped_only_before_an_object() {
        assert_eq!(strip_params("[H, W] -> { S[i] }"), "{ S[i] }");
        assert_eq!(
            strip_params("[H] -> [{ S[i] -> [(i)] }]"),
            "[{ S[i] -> [(i)] }]"
        );
        assert_eq!(strip_params("{ S[i] }"), "{ S[i] }");
        assert_eq!(strip_params("[{ S[i] -> [(i)] }]"), "[{ S[i] -> [(i)] }]");
    }

    #[test]
    fn band_pieces_render_per_statement() {
        assert_eq!(
            band_schedule(
                "[N] -> [{ T[] -> [(0)]; S[i] -> [(i)] }, { T[] -> [(1)]; S[i] -> [(N - i)] }]"
            )
            .as_deref(),
            Some("{S -> (i, N - i); T -> (0, 1)}")
        );
        assert_eq!(
            band_schedule("[{ S[i] -> [(i)] : i > 0; S[i] -> [(0)] : i <= 0 }]").as_deref(),
            Some("{S -> ({i : i > 0; 0 : i <= 0})}")
        );
        assert_eq!(
            band_schedule("[{ S[i, j] -> [(floor((i)/32))] }]").as_deref(),
            Some("{S -> (floor((i)/32))}")
        );
        assert_eq!(band_schedule("[]").as_deref(), Some("{}"));
        assert_eq!(band_schedule("not isl"), None);
    }

    #[test]
    fn instance_sets_use_parentheses_and_natural_order() {
        assert_eq!(
            instance_set("[H] -> { S_1[h, w] : 0 <= h < H; S_0[i0] }"),
            "{S_0(i0); S_1(h, w) : 0 <= h < H}"
        );
        assert_eq!(
            crate::isl_text::tuple_names("[H] -> { S_1[h, w] : 0 <= h < H; S_0[i0] }"),
            ["S_1", "S_0"]
        );
    }

    #[test]
    fn dot_labels_are_escaped() {
        assert_eq!(dot_escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
