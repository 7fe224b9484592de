//! Point-loop interchange for vectorisation: inside a tile, make the innermost loop one
//! that the C compiler can vectorise.
//!
//! [`sink_vectorizable_members`] visits every band that is the direct child of a memory
//! mark (`mem:L1`, `mem:L2`, …: the point band of a tiling level) and is permutable. For
//! each member it finds, per statement of the band, the member's direction in the
//! statement's iteration space (the member must be one affine piece per statement) and
//! classifies every access of the statement along that direction: *invariant* (the
//! address does not change), *contiguous* (only the last index changes, by ±1) or
//! *strided*. A member is **vectorisable** when it is coincident (no dependence is carried
//! by it) and no access is strided along it. Its cost is the number of accesses that move
//! along it (the written tensor counts twice: it is read and written), strided ones eight
//! times over.
//!
//! When some member is vectorisable, the cheapest one (the innermost on ties) becomes the
//! band's last member; the others keep their order. Any permutation of a permutable band
//! is legal, so the schedule's meaning is unchanged. Bands not directly under a memory
//! mark (in particular the band under a `parallel` mark, whose first member carries the
//! parallel loop) are never touched.
//!
//! For `C(i, j) += A(i, k) * B(k, j)` tiled as `(i, j, k)` the point band becomes
//! `(i, k, j)`: `j` moves `C` and `B` contiguously and leaves `A` invariant.

use isl_rs::{DimType, MultiUnionPwAff, Schedule, ScheduleNode, ScheduleNodeType};
use miette::Result;
use polyhedral::ir::{Aff, Program};
use polyhedral::isl::IslResultExt;
use schedule_tree::mark::Mark;

/// Returns `schedule` with the point band of every memory mark permuted so that its
/// innermost member is the cheapest vectorisable one (see the module documentation).
/// Bands without a vectorisable member, or whose members are not affine per statement,
/// are left as they are.
pub fn sink_vectorizable_members(prog: &Program, schedule: &Schedule) -> Result<Schedule> {
    let root = schedule.get_root().isl("reading the schedule's root")?;
    let root = visit(prog, root, false)?;
    root.get_schedule().isl("rebuilding the schedule")
}

fn visit(prog: &Program, node: ScheduleNode, under_mem: bool) -> Result<ScheduleNode> {
    let mut node = node;
    let ty = node.get_type().isl("reading a schedule node's type")?;
    if ty == ScheduleNodeType::Band && under_mem {
        node = permute_band(prog, node)?;
    }
    let mem_mark = ty == ScheduleNodeType::Mark && {
        let id = node.mark_get_id().isl("reading a mark")?;
        let name = id.get_name().isl("reading a mark's name")?.to_string();
        matches!(Mark::from_isl_name(&name), Some(Mark::Mem(_)))
    };
    let n = node.n_children().isl("counting a node's children")?;
    for i in 0..n {
        node = node.child(i).isl("visiting a schedule node")?;
        node = visit(prog, node, mem_mark)?;
        node = node.parent().isl("visiting a schedule node")?;
    }
    Ok(node)
}

/// The per-member cost, or `None` when the member is not vectorisable or not affine.
fn member_cost(prog: &Program, mupa: &MultiUnionPwAff, m: i32) -> Result<Option<u64>> {
    let upa = mupa.get_at(m).isl("reading a band member")?;
    let list = upa.get_pw_aff_list().isl("reading a band member")?;
    let k = list.size().isl("reading a band member")?;
    let mut cost = 0u64;
    for p in 0..k {
        let pa = list.get_at(p).isl("reading a band member")?;
        if pa.n_piece().isl("reading a band member")? != 1 {
            return Ok(None);
        }
        let space = pa.get_domain_space().isl("reading a band member")?;
        let name = space
            .get_tuple_name(DimType::Set)
            .isl("reading a statement name")?
            .to_string();
        let Some(stmt) = prog.stmts.iter().find(|s| s.name == name) else {
            return Ok(None);
        };
        let aff = pa.as_aff().isl("reading a band member")?;
        let mut dir = Vec::with_capacity(stmt.iters.len());
        for d in 0..stmt.iters.len() {
            let v = aff
                .get_coefficient_val(DimType::In, d as i32)
                .isl("reading a coefficient")?;
            if !v.is_int().isl("reading a coefficient")? {
                return Ok(None);
            }
            dir.push(v.get_num_si().isl("reading a coefficient")?);
        }
        let mut accesses: Vec<(&[Aff], u64)> = vec![(&stmt.lhs_index, 2)];
        let reads = stmt.reads();
        accesses.extend(reads.iter().map(|(_, idx, _)| (idx.as_slice(), 1)));
        for (idx, weight) in accesses {
            match access_class(idx, &dir, stmt.iters.len(), prog.params.len()) {
                Class::Invariant => {}
                Class::Contiguous => cost += weight,
                Class::Strided => return Ok(None),
            }
        }
    }
    Ok(Some(cost))
}

/// How an access moves along a direction of the iteration space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Invariant,
    Contiguous,
    Strided,
}

/// Classifies the access `idx` along `dir`: the change of each index between the points
/// `x` and `x + dir` for a few sample points `x` (an index that is not affine changes
/// differently at different points and counts as strided).
fn access_class(idx: &[Aff], dir: &[i64], n_iters: usize, n_params: usize) -> Class {
    let params: Vec<i64> = vec![1000; n_params];
    let mut class = Class::Invariant;
    for base in [0i64, 7, 13] {
        let x: Vec<i64> = (0..n_iters).map(|d| base + 3 * d as i64).collect();
        let y: Vec<i64> = x.iter().zip(dir).map(|(a, b)| a + b).collect();
        let delta: Vec<i64> = idx
            .iter()
            .map(|e| e.eval(&y, &params) - e.eval(&x, &params))
            .collect();
        let here = match delta.split_last() {
            None => Class::Invariant,
            Some((last, rest)) if rest.iter().all(|&d| d == 0) => match last.abs() {
                0 => Class::Invariant,
                1 => Class::Contiguous,
                _ => Class::Strided,
            },
            Some(_) => Class::Strided,
        };
        if base == 0 {
            class = here;
        } else if here != class {
            return Class::Strided;
        }
    }
    class
}

fn permute_band(prog: &Program, node: ScheduleNode) -> Result<ScheduleNode> {
    let n = node.band_n_member().isl("reading a band")?;
    if n < 2 || !node.band_get_permutable().isl("reading a band")? {
        return Ok(node);
    }
    let mupa = node
        .band_get_partial_schedule()
        .isl("reading a band's schedule")?;
    let mut best: Option<(u64, i32)> = None;
    for m in 0..n {
        if !node.band_member_get_coincident(m).isl("reading a band")? {
            continue;
        }
        if let Some(c) = member_cost(prog, &mupa, m)? {
            if !matches!(best, Some((bc, _)) if c > bc) {
                best = Some((c, m));
            }
        }
    }
    let Some((_, pick)) = best else {
        return Ok(node);
    };
    if pick == n - 1 {
        return Ok(node);
    }
    let order: Vec<i32> = (0..n).filter(|&m| m != pick).chain([pick]).collect();
    let mut coincident = Vec::with_capacity(n as usize);
    let mut permuted = mupa.copy().isl("copying a band's schedule")?;
    for (p, &m) in order.iter().enumerate() {
        coincident.push(node.band_member_get_coincident(m).isl("reading a band")?);
        let upa = mupa.get_at(m).isl("reading a band member")?;
        permuted = permuted
            .set_at(p as i32, upa)
            .isl("permuting a band's members")?;
    }
    let mut node = node
        .delete()
        .isl("replacing a band")?
        .insert_partial_schedule(permuted)
        .isl("replacing a band")?
        .band_set_permutable(1)
        .isl("replacing a band")?;
    for (p, c) in coincident.into_iter().enumerate() {
        node = node
            .band_member_set_coincident(p as i32, c as i32)
            .isl("replacing a band")?;
    }
    Ok(node)
}
