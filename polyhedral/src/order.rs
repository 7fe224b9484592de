//! Programs whose meaning depends on whether their statements interleave.
//!
//! Statements run one after another in textual order, each over its whole domain
//! (inside a `for` loop: within each iteration). Imperative loop nests (PolyBench's lu,
//! cholesky, a stencil's sweep) interleave their statements instead, iteration by
//! iteration. When such a nest is written as plain statements, an earlier statement
//! reads an element that a later statement writes at an iteration that, in the loop
//! nest, would have run first: the statements read the old value, the loop nest the new
//! one. polyc cannot tell which was meant, so the program is an error that shows one
//! instance pair and both ways to say it: a `for` loop around both statements
//! (interleaved), or one `for` loop around each (one after the other).

use crate::diag::{SourceError, SourceFile};
use crate::ir::{Program, Stmt};
use crate::isl::IslResultExt;
use crate::scop::Scop;
use isl_rs::{DimType, Map};

/// The first pair of statements outside every loop `(S_a, S_b)`, `a < b`, where `S_a`
/// reads an element of a tensor that `S_b` writes at an instance whose shared indices
/// (the leading left-hand indices both statements name alike, compared
/// lexicographically) come first: a located error.
pub fn check_interleaving(scop: &Scop, prog: &Program, src: &SourceFile) -> miette::Result<()> {
    for (a, sa) in prog.stmts.iter().enumerate() {
        for (b, sb) in prog.stmts.iter().enumerate().skip(a + 1) {
            // Statements inside a `for` loop say how they run: the error is for plain
            // statements, whose interleaving no loop states.
            if !sa.loops.is_empty() || !sb.loops.is_empty() {
                continue;
            }
            let l = sa.loops.len();
            // The loops a nest would share: the leading left-hand indices the two
            // statements name alike (`B(i)` and `A(i)` share `i`; `m(j)` and `X(i, j)`
            // share nothing).
            let shared = (l..sa.n_lhs_iters.min(sb.n_lhs_iters))
                .take_while(|&k| sa.iters[k].name == sb.iters[k].name)
                .count();
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
                let earlier = written_first(scop, sa, sb, l, shared)?;
                let bad = pairs
                    .intersect(earlier)
                    .isl("restricting to writes that come first")?
                    .intersect_params(scop.context.copy().isl("copying the context")?)
                    .isl("restricting to the context")?;
                if bad.is_empty().isl("testing for out-of-order reads")? {
                    continue;
                }
                let example = example(&bad, sa, sb).unwrap_or_default();
                return Err(interleaving_error(prog, src, sa, sb, r.span, shared, &example).into());
            }
        }
    }
    Ok(())
}

/// The error for `S_a` reading (at `read`) what the later `S_b` writes first in a loop
/// nest over their `shared` own indices.
fn interleaving_error(
    prog: &Program,
    src: &SourceFile,
    sa: &Stmt,
    sb: &Stmt,
    read: crate::ir::Span,
    shared: usize,
    example: &str,
) -> SourceError {
    let l = sa.loops.len();
    let tensor = &prog.tensors[sb.lhs].name;
    let names = sa.iter_names();
    let params = prog.param_names();
    let bound = |v: &[crate::ir::Aff], f: &str| -> String {
        let parts: Vec<String> = v.iter().map(|a| a.to_isl(&names, &params)).collect();
        match parts.as_slice() {
            [one] => one.clone(),
            _ => format!("{f}({})", parts.join(", ")),
        }
    };
    let loops: Vec<String> = sa.iters[l..l + shared]
        .iter()
        .map(|it| {
            format!(
                "for {} in {}:{}",
                it.name,
                bound(&it.lower, "max"),
                bound(&it.upper, "min")
            )
        })
        .collect();
    let heads = loops.join(" { ");
    let closes = " }".repeat(loops.len() - 1);
    src.error(
        read,
        format!(
            "{} reads `{tensor}`, which the later {} writes at instances that a loop nest \
             over their shared indices would run first{example}",
            sa.name, sb.name
        ),
        format!("reads `{tensor}` before {} writes it", sb.name),
        format!(
            "statements run one after another, each over its whole domain, so {0} reads \
             the old values; a loop nest would interleave them and read the new ones. Say \
             which you mean: `{heads} {{ …both statements… }}{closes}` interleaves them; \
             `{heads} {{ {0} }}{closes}` followed by `{heads} {{ {1} }}{closes}` runs them \
             one after the other (or write {1}'s result into another tensor)",
            sa.name, sb.name
        ),
    )
    .with_related(crate::lang::common::note(
        src,
        sb.lhs_span,
        format!("{} writes `{tensor}` here", sb.name),
        "the later statement",
    ))
}

/// `S_a[x] -> S_b[y]` with the `l` loop coordinates equal and the next `n` coordinates
/// of `y` lexicographically before those of `x`.
fn written_first(scop: &Scop, sa: &Stmt, sb: &Stmt, l: usize, n: usize) -> miette::Result<Map> {
    let xs: Vec<String> = (0..sa.iters.len()).map(|k| format!("x{k}")).collect();
    let ys: Vec<String> = (0..sb.iters.len()).map(|k| format!("y{k}")).collect();
    let mut alts = Vec::with_capacity(n);
    for k in l..l + n {
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
