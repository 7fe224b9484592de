//! Register-tile shapes under a schedule.
//!
//! The default policy gives a band register tiles when the band has at least two coincident
//! members and a reduction member (see `default::register_tiles`). isl's scheduler may fuse
//! a contraction into a band with other statements at the price of that shape: in
//! attention, `O(i, e) += P(i, j) · V(j, e)` lands in one band with the row softmax, skewed
//! as `(i, e, L - 1 + e + j)`, and only `i` stays coincident. The functions here say which
//! statements could have the shape ([`register_candidates`]) and which do under a given
//! tree ([`register_shaped`]), so that the pipeline can prefer a schedule that keeps it and
//! leave the fusion to post-tiling fusion.

use crate::analysis::collect_bands;
use polyhedral::isl::isl_rs::{DimType, Map, UnionSet};
use polyhedral::isl::{Ctx, IslResultExt};
use polyhedral::scop::Scop;
use schedule_tree::ScheduleTree;

/// The statements that register tiles could serve: reductions whose write keeps at least
/// two iterators (the rows and columns of a register tile). A reduction's write leaves out
/// an iterator of its own, or one of the sequential `for` loops around it while it reads
/// the element it writes (symm's `C(k, j) += …` in its loop over `i`). A stencil's
/// `B(i, j) = f(A)` in a time loop leaves out the time loop's iterator only and overwrites
/// its element: it is no reduction.
pub fn register_candidates(scop: &Scop) -> Vec<usize> {
    (0..scop.stmt_names.len())
        .filter(|&s| {
            let n = scop.iter_names[s].len();
            let loops = scop.stmt_loops[s].len().min(n);
            let write = &scop.stmt_writes[s];
            let uses = |i: usize| write.index.iter().any(|e| e.uses_iter(i));
            let kept = (0..n).filter(|&i| uses(i)).count();
            let own_reduced = (loops..n).any(|i| !uses(i));
            let loop_reduced = (0..loops).any(|i| !uses(i));
            let accumulates = scop.stmt_reads[s]
                .iter()
                .any(|r| r.tensor == write.tensor && r.index == write.index);
            kept >= 2 && (own_reduced || (loop_reduced && accumulates))
        })
        .collect()
}

/// Whether each statement of `stmts` has a register-tile shape in some band of `tree`: the
/// band varies it along at least two coincident members and along at least one member
/// that is not coincident.
pub fn register_shaped(
    ctx: &Ctx,
    scop: &Scop,
    tree: &ScheduleTree,
    stmts: &[usize],
) -> miette::Result<Vec<bool>> {
    let (_schedule, bands) = collect_bands(ctx, scop, tree)?;
    let mut out = vec![false; stmts.len()];
    for band in &bands {
        for (k, &s) in stmts.iter().enumerate() {
            if out[k] || !band.stmts.contains(&s) {
                continue;
            }
            let dom = UnionSet::from_set(scop.stmt_domains[s].copy().isl("copying a domain")?)
                .isl("a statement's domain as a union set")?;
            let map = band
                .map
                .copy()
                .isl("copying a band's schedule")?
                .intersect_domain(dom)
                .isl("restricting a band's schedule to a statement")?;
            let map = Map::from_union_map(map).isl("a statement's band schedule")?;
            let (mut coincident, mut other) = (0, 0);
            for m in 0..band.n_members() {
                if !varies(&map, m)? {
                    continue;
                }
                if band.coincident[m] {
                    coincident += 1;
                } else {
                    other += 1;
                }
            }
            out[k] = coincident >= 2 && other >= 1;
        }
    }
    Ok(out)
}

/// Whether the statement's schedule `map` takes more than one value at member `m`.
fn varies(map: &Map, m: usize) -> miette::Result<bool> {
    let n = map.dim(DimType::Out).isl("counting band members")? as usize;
    let row = map
        .copy()
        .isl("copying a map")?
        .project_out(DimType::Out, (m + 1) as u32, (n - m - 1) as u32)
        .isl("dropping later members")?
        .project_out(DimType::Out, 0, m as u32)
        .isl("dropping earlier members")?;
    let values = row.range().isl("a member's values")?;
    Ok(!values.is_singleton().isl("testing for one value")?)
}
