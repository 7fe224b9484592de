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

use crate::analysis::{collect_bands, BandInfo};
use polyhedral::isl::isl_rs::{DimType, Map, UnionSet};
use polyhedral::isl::{Ctx, IslResultExt};
use polyhedral::sched_parallel::varies;
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

/// How a statement's register tile fares under a tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegisterShape {
    /// No band varies it along two coincident members and a member that is not coincident.
    Lost,
    /// A band gives it that shape, but another statement of the band (this one, by number)
    /// touches the tensor it writes through another function of the band's members: a
    /// transposed copy such as covariance's `cov(i, j) = cov(j, i)`, fused with the
    /// reduction as `(j, i)`. One register tile cannot hold both footprints, so promotion
    /// leaves the tensor in memory and the reduction runs as strided dot products.
    Clashed(usize),
    /// A band gives it that shape, and every access of the band to the tensor it writes is
    /// its own access shifted by at most [`SHIFT`] elements per index.
    Kept,
}

/// The largest shift, per index, between the accesses that one register tile holds.
pub const SHIFT: i32 = 8;

/// Whether each statement of `stmts` has a register-tile shape in some band of `tree`: the
/// band varies it along at least two coincident members and along at least one member
/// that is not coincident, and no other statement of the band touches the tensor it
/// writes through another function of the band's members (see [`RegisterShape`]).
pub fn register_shaped(
    ctx: &Ctx,
    scop: &Scop,
    tree: &ScheduleTree,
    stmts: &[usize],
) -> miette::Result<Vec<RegisterShape>> {
    let (_schedule, bands) = collect_bands(ctx, scop, tree)?;
    let mut out = vec![RegisterShape::Lost; stmts.len()];
    for band in &bands {
        for (k, &s) in stmts.iter().enumerate() {
            if out[k] == RegisterShape::Kept || !band.stmts.contains(&s) {
                continue;
            }
            let map = statement_schedule(scop, band, s)?;
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
            if coincident >= 2 && other >= 1 {
                out[k] = match clash(scop, band, s, &map)? {
                    Some(t) => RegisterShape::Clashed(t),
                    None => RegisterShape::Kept,
                };
            }
        }
    }
    Ok(out)
}

/// Statement `s`'s schedule in `band`, as a map from its instances to the band's points.
fn statement_schedule(scop: &Scop, band: &BandInfo, s: usize) -> miette::Result<Map> {
    let dom = UnionSet::from_set(scop.stmt_domains[s].copy().isl("copying a domain")?)
        .isl("a statement's domain as a union set")?;
    let map = band
        .map
        .copy()
        .isl("copying a band's schedule")?
        .intersect_domain(dom)
        .isl("restricting a band's schedule to a statement")?;
    Map::from_union_map(map).isl("a statement's band schedule")
}

/// The first statement of `band` (other than `s`) that touches the tensor `s` writes at
/// elements that are not `s`'s own function of the band's point, shifted by at most
/// [`SHIFT`] per index. `sched` is `s`'s band schedule. `None` also where `s`'s write is
/// no function of the band's point (the band leaves out an index's iterator), and where
/// `s`'s reduction reads along the last index of every tensor: without a register tile it
/// then runs as contiguous dot products, which the C compiler vectorises (a fused
/// `C(i, j) += A(i, k) · A(j, k)` loses nothing).
fn clash(scop: &Scop, band: &BandInfo, s: usize, sched: &Map) -> miette::Result<Option<usize>> {
    let write = &scop.stmt_writes[s];
    if !strided_reduction(scop, s) {
        return Ok(None);
    }
    let own = point_access(sched, &write.map)?;
    let n_out = own.dim(DimType::Out).isl("counting a tensor's indices")?;
    // The function `e = f(p)` alone, over every point: the equalities of the access's
    // affine hull that involve the element, without those of the band's points.
    let f = Map::from_basic_map(
        own.affine_hull()
            .isl("the affine hull of an access")?
            .drop_constraints_not_involving_dims(DimType::Out, 0, n_out as u32)
            .isl("keeping the access's own equalities")?,
    )
    .isl("an access function as a map")?;
    if !f
        .is_single_valued()
        .isl("testing an access for a function")?
    {
        return Ok(None);
    }
    for &t in band.stmts.iter().filter(|&&t| t != s) {
        let t_sched = statement_schedule(scop, band, t)?;
        let accesses = scop.stmt_reads[t]
            .iter()
            .chain(std::iter::once(&scop.stmt_writes[t]));
        for a in accesses.filter(|a| a.tensor == write.tensor) {
            let at = point_access(&t_sched, &a.map)?;
            let shifts = at
                .sum(f.copy().isl("copying a map")?.neg().isl("negating a map")?)
                .isl("the shift between two accesses")?
                .range()
                .isl("the shifts")?;
            let mut boxed = shifts.copy().isl("copying a set")?;
            for d in 0..n_out as u32 {
                boxed = boxed
                    .lower_bound_si(DimType::Set, d, -SHIFT)
                    .isl("bounding a shift")?
                    .upper_bound_si(DimType::Set, d, SHIFT)
                    .isl("bounding a shift")?;
            }
            if !boxed.is_equal(&shifts).isl("comparing shifts")? {
                return Ok(Some(t));
            }
        }
    }
    Ok(None)
}

/// Whether a read of statement `s` moves along an index other than its tensor's last one
/// with an iterator that `s`'s write leaves out (a reduction iterator), as covariance's
/// `data(k, i)` does along `k`.
fn strided_reduction(scop: &Scop, s: usize) -> bool {
    let write = &scop.stmt_writes[s];
    let reduced: Vec<usize> = (0..scop.iter_names[s].len())
        .filter(|&i| !write.index.iter().any(|e| e.uses_iter(i)))
        .collect();
    scop.stmt_reads[s]
        .iter()
        .filter(|r| r.tensor != write.tensor)
        .any(|r| {
            let outer = &r.index[..r.index.len().saturating_sub(1)];
            outer
                .iter()
                .any(|e| reduced.iter().any(|&i| e.uses_iter(i)))
        })
}

/// An access as a relation from the band's points: `sched⁻¹` followed by `access`.
fn point_access(sched: &Map, access: &Map) -> miette::Result<Map> {
    sched
        .copy()
        .isl("copying a map")?
        .reverse()
        .isl("reversing a band schedule")?
        .apply_range(access.copy().isl("copying an access")?)
        .isl("an access from the band's points")
}
