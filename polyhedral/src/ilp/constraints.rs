//! The schedule-constraints file: pinned loop orders.
//!
//! One pin per line, `#` starts a comment, blank lines are ignored:
//!
//! ```text
//! # keep the convolution's output loops outermost
//! S_2 = h, w, kh, kw
//! ```
//!
//! A pin lists every iterator of the statement exactly once. It forces the statement's
//! k-th linearly independent schedule hyperplane to be its k-th listed iterator (plus a
//! constant shift the scheduler chooses).

use crate::diag::SourceFile;
use crate::ir::Span;
use crate::scop::Scop;

/// A pinned loop order for one statement.
#[derive(Clone, Debug)]
pub struct Pin {
    /// The statement number (`S_2` → 2).
    pub stmt: usize,
    /// Iterator positions (in the statement's iterator list), outermost first; a
    /// permutation of `0..n`.
    pub order: Vec<usize>,
    /// The pin's text in the constraints file (for diagnostics).
    pub span: Span,
    /// The constraints file (for diagnostics).
    pub file: SourceFile,
}

/// Parses a constraints file against the statements and iterators of `scop`.
pub fn parse_constraints(file: &SourceFile, scop: &Scop) -> miette::Result<Vec<Pin>> {
    let text = file.text.as_str();
    let mut pins: Vec<Pin> = Vec::new();
    let mut name_spans: Vec<Span> = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let content = line.split('#').next().unwrap_or("");
        let content = content.trim_end_matches(['\n', '\r']);
        let lead = content.len() - content.trim_start().len();
        let body = content.trim();
        if body.is_empty() {
            continue;
        }
        let body_span = Span::new(start + lead, start + lead + body.len());
        let Some(eq) = body.find('=') else {
            return Err(file
                .error(
                    body_span,
                    "expected `STATEMENT=ITERATORS`",
                    "no `=` in this line",
                    "write a pin like `S_2=h,w,kh,kw` (a statement, `=`, its iterators in order)",
                )
                .into());
        };
        let name_raw = &body[..eq];
        let name = name_raw.trim();
        let name_start = body_span.start + (name_raw.len() - name_raw.trim_start().len());
        let name_span = Span::new(name_start, name_start + name.len());
        if name.is_empty() {
            return Err(file
                .error(
                    Span::new(body_span.start, body_span.start + eq + 1),
                    "expected a statement name before `=`",
                    "missing statement",
                    "write a pin like `S_2=h,w,kh,kw`",
                )
                .into());
        }
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(file
                .error(
                    name_span,
                    format!("`{name}` is not a statement name"),
                    "expected a name like `S_2`",
                    "write a pin like `S_2=h,w,kh,kw`",
                )
                .into());
        }
        let Some(stmt) = scop.stmt_names.iter().position(|s| s == name) else {
            return Err(file
                .error(
                    name_span,
                    format!("unknown statement `{name}`"),
                    "not a statement of this program",
                    format!("valid statements: {}", scop.stmt_names.join(", ")),
                )
                .into());
        };
        if let Some(k) = pins.iter().position(|p| p.stmt == stmt) {
            let first = name_spans[k];
            return Err(file
                .error(
                    name_span,
                    format!("duplicate pin for {name}"),
                    "pinned again here",
                    "keep one loop order per statement",
                )
                .with_related(file.error(
                    first,
                    "first pinned here",
                    "first pin",
                    "remove one of the pins",
                ))
                .into());
        }
        let order = parse_order(file, &scop.iter_names[stmt], name, body, body_span, eq)?;
        pins.push(Pin {
            stmt,
            order,
            span: body_span,
            file: file.clone(),
        });
        name_spans.push(name_span);
    }
    Ok(pins)
}

/// The loop order after the `=` of a pin (`body`, at `body_span`, with its `=` at byte
/// `eq`): a permutation of `iters`, the iterators of statement `name`, as positions.
fn parse_order(
    file: &SourceFile,
    iters: &[String],
    name: &str,
    body: &str,
    body_span: Span,
    eq: usize,
) -> miette::Result<Vec<usize>> {
    let mut order = Vec::new();
    let mut item_start = body_span.start + eq + 1;
    let rest = &body[eq + 1..];
    let items: Vec<&str> = rest.split(',').collect();
    for (k, raw) in items.iter().enumerate() {
        let item = raw.trim();
        let s = item_start + (raw.len() - raw.trim_start().len());
        let span = Span::new(s, s + item.len());
        if item.is_empty() {
            if iters.is_empty() && items.len() == 1 {
                break;
            }
            let at = Span::new(item_start, item_start + raw.len().max(1));
            return Err(file
                .error(
                    at,
                    "expected an iterator name",
                    if k + 1 == items.len() {
                        "missing iterator"
                    } else {
                        "empty entry between commas"
                    },
                    format!(
                        "list {name}'s iterators separated by commas: {}",
                        iters.join(",")
                    ),
                )
                .into());
        }
        let Some(pos) = iters.iter().position(|i| i == item) else {
            return Err(file
                .error(
                    span,
                    format!("{name} has no iterator `{item}`"),
                    "unknown iterator",
                    format!("{name}'s iterators: {}", iters.join(", ")),
                )
                .into());
        };
        if order.contains(&pos) {
            return Err(file
                .error(
                    span,
                    format!(
                        "the loop order of {name} is not a permutation: `{item}` is listed twice"
                    ),
                    "listed again here",
                    format!("list each of {name}'s iterators once: {}", iters.join(", ")),
                )
                .into());
        }
        order.push(pos);
        item_start += raw.len() + 1;
    }
    if order.len() != iters.len() {
        let missing: Vec<&str> = (0..iters.len())
            .filter(|p| !order.contains(p))
            .map(|p| iters[p].as_str())
            .collect();
        let rest_start = body_span.start + eq + 1;
        return Err(file
            .error(
                Span::new(rest_start, body_span.end.max(rest_start)),
                format!(
                    "the loop order of {name} is not a permutation: {} missing",
                    missing
                        .iter()
                        .map(|m| format!("`{m}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                        + if missing.len() == 1 { " is" } else { " are" }
                ),
                "incomplete loop order",
                format!("list each of {name}'s iterators once: {}", iters.join(", ")),
            )
            .into());
    }
    Ok(order)
}
