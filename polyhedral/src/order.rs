//! Warnings for programs whose comprehension order likely differs from what was meant.
//!
//! A comprehension runs each statement over its whole domain before the next statement
//! starts. Imperative loop nests (PolyBench's lu, cholesky, the stencils' time loops)
//! interleave their statements instead, iteration by iteration. When such a nest is
//! written as comprehensions, an earlier statement reads an element that a later
//! statement writes at an iteration that, in the loop nest, would have run first: the
//! comprehension reads the old value, the loop nest the new one. polyc accepts the
//! program (its meaning is the comprehension's, and is well defined) but warns, naming
//! both statements and one instance pair.

use crate::diag::SourceFile;
use crate::ir::{Program, Stmt};
use crate::isl::IslResultExt;
use crate::scop::Scop;
use isl_rs::{DimType, Map};

/// One warning per statement pair `(S_a, S_b)`, `a < b`, where `S_a` reads an element of
/// a tensor that `S_b` writes at an instance whose shared loop indices come first (the
/// first `min` of the two statements' left-hand indices, compared lexicographically).
pub fn interleaving_warnings(
    scop: &Scop,
    prog: &Program,
    src: &SourceFile,
) -> miette::Result<Vec<String>> {
    let mut out = Vec::new();
    for (a, sa) in prog.stmts.iter().enumerate() {
        for (b, sb) in prog.stmts.iter().enumerate().skip(a + 1) {
            let shared = sa.n_lhs_iters.min(sb.n_lhs_iters);
            if shared == 0 {
                continue;
            }
            let w = &scop.stmt_writes[b];
            for r in scop.stmt_reads[a].iter().filter(|r| r.tensor == w.tensor) {
                let pairs = r
                    .map
                    .copy()
                    .isl("copying a read")?
                    .apply_range(
                        w.map
                            .copy()
                            .isl("copying a write")?
                            .reverse()
                            .isl("reversing a write")?,
                    )
                    .isl("pairing a read with a later write")?;
                let earlier = written_first(scop, sa, sb, shared)?;
                let bad = pairs
                    .intersect(earlier)
                    .isl("restricting to writes that come first")?
                    .intersect_params(scop.context.copy().isl("copying the context")?)
                    .isl("restricting to the context")?;
                if bad.is_empty().isl("testing for out-of-order reads")? {
                    continue;
                }
                let tensor = &prog.tensors[w.tensor].name;
                let example = example(&bad, sa, sb).unwrap_or_default();
                let (la, _) = src.line_col(sa.span.start);
                let (lb, _) = src.line_col(sb.span.start);
                out.push(format!(
                    "warning: {}:{la}: {} reads `{tensor}`, which the later {} ({}:{lb}) writes at instances that a loop nest over their shared indices would run first{example}; a comprehension runs all of {} before {}, so those reads see the old values. If the statements should interleave as in a loop nest, this program does not say so (polyc's language has no sequential loops yet)",
                    src.name, sa.name, sb.name, src.name, sa.name, sb.name
                ));
                break;
            }
        }
    }
    Ok(out)
}

/// `S_a[x] -> S_b[y]` with the first `n` coordinates of `y` lexicographically before
/// those of `x`.
fn written_first(scop: &Scop, sa: &Stmt, sb: &Stmt, n: usize) -> miette::Result<Map> {
    let xs: Vec<String> = (0..sa.iters.len()).map(|k| format!("x{k}")).collect();
    let ys: Vec<String> = (0..sb.iters.len()).map(|k| format!("y{k}")).collect();
    let mut alts = Vec::with_capacity(n);
    for k in 0..n {
        let mut c: Vec<String> = (0..k).map(|j| format!("y{j} = x{j}")).collect();
        c.push(format!("y{k} < x{k}"));
        alts.push(format!("({})", c.join(" and ")));
    }
    let text = format!(
        "{}{{ {}[{}] -> {}[{}] : {} }}",
        scop.param_prefix(),
        sa.name,
        xs.join(", "),
        sb.name,
        ys.join(", "),
        alts.join(" or ")
    );
    Map::read_from_str(&scop.context.get_ctx(), &text).isl(&format!("reading `{text}`"))
}

/// `: S_0(i=0, j=1, k=0) reads what S_1(i=0, j=0) writes` for one pair of `bad`.
fn example(bad: &Map, sa: &Stmt, sb: &Stmt) -> Option<String> {
    let pt = bad.copy().ok()?.wrap().ok()?.sample_point().ok()?;
    if pt.is_void().ok()? {
        return None;
    }
    let coord = |k: usize| -> Option<i64> {
        pt.get_coordinate_val(DimType::Set, k as i32)
            .ok()?
            .get_num_si()
            .ok()
    };
    let show = |s: &Stmt, base: usize| -> Option<String> {
        let parts: Vec<String> = s
            .iters
            .iter()
            .enumerate()
            .map(|(k, it)| coord(base + k).map(|v| format!("{}={v}", it.name)))
            .collect::<Option<_>>()?;
        Some(format!("{}({})", s.name, parts.join(", ")))
    };
    Some(format!(
        " (e.g. {} reads what {} writes)",
        show(sa, 0)?,
        show(sb, sa.iters.len())?
    ))
}
