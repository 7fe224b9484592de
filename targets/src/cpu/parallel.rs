//! The `parallel` pass ([`MarkParallel`]): OpenMP-style outer-loop parallelism for the CPU.

use std::ffi::CString;

use isl_rs::{Id, Schedule, ScheduleNode, ScheduleNodeType, UnionMap, UnionSet};
use miette::{miette, Result};
use polyhedral::isl::ffi::ast_build as ffi;
use polyhedral::isl::IslResultExt;
use schedule_tree::mark::Mark;
use schedule_tree::{level_of, Level, Pass, ScheduleTree};

use crate::passes::PassCx;

/// Inserts a [`Mark::Parallel`] mark above the outermost coincident band member on every
/// root-to-leaf path of the schedule tree.
///
/// When the first coincident member of a band is member `k > 0`, the band is split at `k`
/// (`isl_schedule_node_band_split`) so that the coincident member starts its own band, and
/// the mark goes above that inner band. Below a mark nothing more is marked (no nested
/// parallelism), and subtrees already under a `parallel` or `skipped` mark, or below a
/// register file's memory mark (a register tile), are left alone.
/// Bands without coincident members, or whose coincident members run one iteration each
/// (see [`single_iteration`]), are passed through, and the search continues below them.
/// The bands of promotion copies are never marked ([`only_copies`]), nor bands nested in
/// sequential loops with too little work per run ([`too_little_work`]).
pub fn mark_outer_parallel(schedule: Schedule, levels: &[Level]) -> Result<Schedule> {
    let root = schedule.get_root().isl("reading the schedule's root")?;
    drop(schedule);
    let root = visit(root, levels)?;
    root.get_schedule().isl("rebuilding the schedule")
}

/// Visits `node` and its subtree; returns a node at the same position in the new tree.
fn visit(node: ScheduleNode, levels: &[Level]) -> Result<ScheduleNode> {
    let mut node = node;
    match node.get_type().isl("reading a schedule node's type")? {
        ScheduleNodeType::Mark => {
            let id = node.mark_get_id().isl("reading a mark")?;
            let name = id.get_name().isl("reading a mark's name")?;
            match Mark::from_isl_name(name) {
                Some(Mark::Parallel | Mark::Skipped) => return Ok(node),
                // A register tile's point loops are unrolled and vectorised, and the
                // lowering reorders them (reductions outside the rows): never threads.
                Some(Mark::Mem(b))
                    if level_of(levels, b).is_some_and(|l| l.role.is_register_file()) =>
                {
                    return Ok(node)
                }
                _ => {}
            }
        }
        ScheduleNodeType::Band => {
            if only_copies(&node)? {
                return Ok(node);
            }
            let n = node.band_n_member().isl("reading a band")?;
            let mut first = None;
            for k in 0..n {
                if node
                    .band_member_get_coincident(k)
                    .isl("reading a band member's coincidence")?
                    && !single_iteration(&node, k)?
                {
                    first = Some(k);
                    break;
                }
            }
            if first.is_some() && too_little_work(&node)? {
                first = None;
            }
            if let Some(k) = first {
                let id = parallel_id(&node)?;
                if k == 0 {
                    return node.insert_mark(id).isl("inserting a parallel mark");
                }
                node = node.band_split(k).isl("splitting a band")?;
                node = node.child(0).isl("visiting the split band")?;
                node = node.insert_mark(id).isl("inserting a parallel mark")?;
                return node.parent().isl("visiting the split band");
            }
        }
        _ => {}
    }
    let n = node.n_children().isl("counting a node's children")?;
    for i in 0..n {
        node = node.child(i).isl("visiting a schedule node")?;
        node = visit(node, levels)?;
        node = node.parent().isl("visiting a schedule node")?;
    }
    Ok(node)
}

/// Whether every instance reaching the band `node` is a promotion's copy: packing a tile
/// is a short, memory-bound loop, and a parallel region of its own per tile costs more
/// than it gains (a hoisted GEMM pack: 0.82 -> 0.85 x OpenBLAS on one thread). The tile
/// loops around the copies carry the parallelism instead.
fn only_copies(node: &ScheduleNode) -> Result<bool> {
    // The band's own schedule names its statements (isl's domain query refuses the
    // extension nodes above a copy band).
    let list = node
        .band_get_partial_schedule_union_map()
        .isl("reading a band's schedule")?
        .get_map_list()
        .isl("listing a band's statements")?;
    let n = list.n_map().isl("counting a band's statements")?;
    if n == 0 {
        return Ok(false);
    }
    for i in 0..n {
        let m = list.get_at(i).isl("reading a band's statements")?;
        let name = m
            .get_tuple_name(isl_rs::DimType::In)
            .isl("reading a statement name")?;
        if crate::passes::promote::parse_copy_stmt(name).is_none() {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Whether member `k` of the band `node` runs one iteration for each iteration of the
/// loops around it (a tile loop whose tile covers the whole extent): such a loop has
/// nothing to run in parallel, and the search goes on below it. Bands below an extension
/// node are not checked (isl's prefix schedule refuses them) and count as loops.
/// Symbolic sizes count as [`tiling::ASSUMED_EXTENT`], the size the default
/// policy chose its tiles for: a tile loop over a symbolic extent whose one tile covers
/// that size is passed over for a loop with more iterations (any coincident loop is
/// correct at every size; this only picks the one that has work to share).
fn single_iteration(node: &ScheduleNode, k: i32) -> Result<bool> {
    let mut up = node.copy().isl("copying a schedule node")?;
    while up.has_parent().isl("reading a schedule node's parent")? {
        up = up.parent().isl("visiting a schedule node's parent")?;
        if up.get_type().isl("reading a schedule node's type")? == ScheduleNodeType::Extension {
            return Ok(false);
        }
    }
    let prefix = node
        .get_prefix_schedule_union_map()
        .isl("reading a band's prefix schedule")?;
    let member = UnionMap::from_union_pw_aff(
        node.band_get_partial_schedule()
            .isl("reading a band's schedule")?
            .get_at(k)
            .isl("reading a band member")?,
    )
    .isl("reading a band member")?
    .intersect_domain(at_assumed_sizes(
        node.get_domain().isl("reading a band's instances")?,
    )?)
    .isl("restricting a band member to its instances")?;
    prefix
        .reverse()
        .isl("reversing a prefix schedule")?
        .apply_range(member)
        .isl("relating a member to its outer loops")?
        .is_single_valued()
        .isl("counting a member's iterations")
}

/// The fewest statement instances one run of a parallel loop nested in sequential loops
/// must have: below it, entering and leaving the parallel region (a fork and a barrier,
/// microseconds, and far more when the machine is busy) costs more than sharing the work
/// gains. durbin at N = 2000 copies at most 2000 elements per step in a loop nested in its
/// `k` loop: 1.7 ms on one thread, 250 ms to 2 s on two threads of a busy 2-core machine
/// with the loop parallel.
pub const PARALLEL_MIN_INSTANCES: u64 = 1 << 15;

/// Whether the band `node` sits inside sequential loops (its prefix schedule has members)
/// and one run of it, at some point of those loops, has fewer than
/// [`PARALLEL_MIN_INSTANCES`] statement instances: such a loop stays sequential (a parallel
/// region per iteration of the outer loops would cost more than it saves). The count is
/// an upper bound: per statement, the product of its instances' extents along each
/// dimension at one point of the outer loops, maximised over the points (symbolic sizes at
/// [`tiling::ASSUMED_EXTENT`]). Bands below an extension node are not checked.
fn too_little_work(node: &ScheduleNode) -> Result<bool> {
    let what = "estimating a parallel loop's work";
    let mut up = node.copy().isl(what)?;
    while up.has_parent().isl(what)? {
        up = up.parent().isl(what)?;
        if up.get_type().isl(what)? == ScheduleNodeType::Extension {
            return Ok(false);
        }
    }
    let prefix = node.get_prefix_schedule_union_map().isl(what)?;
    let per_point = prefix
        .reverse()
        .isl(what)?
        .intersect_range(at_assumed_sizes(node.get_domain().isl(what)?)?)
        .isl(what)?;
    let list = per_point.get_map_list().isl(what)?;
    let mut total: u64 = 0;
    for i in 0..list.n_map().isl(what)? {
        let map = list.get_at(i).isl(what)?;
        if map.dim(isl_rs::DimType::In).isl(what)? == 0 {
            return Ok(false); // not nested in any loop: the region is entered once
        }
        let mut count: u64 = 1;
        for d in 0..map.dim(isl_rs::DimType::Out).isl(what)? {
            let hi = map.copy().isl(what)?.dim_max(d).isl(what)?;
            let lo = map.copy().isl(what)?.dim_min(d).isl(what)?;
            let extent = hi.sub(lo).isl(what)?.max_val().isl(what)?;
            if !extent.is_int().isl(what)? {
                return Ok(false); // unbounded or empty: no estimate, keep the loop parallel
            }
            let e = extent.get_num_si().isl(what)?.max(0) as u64 + 1;
            count = count.saturating_mul(e);
        }
        total = total.saturating_add(count);
        if total >= PARALLEL_MIN_INSTANCES {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `instances` with every size parameter fixed at [`tiling::ASSUMED_EXTENT`].
fn at_assumed_sizes(instances: UnionSet) -> Result<UnionSet> {
    match crate::passes::assumed_sizes::assumed_sizes(
        instances.get_space().isl("reading a set's space")?,
    )? {
        Some(params) => instances
            .intersect_params(params)
            .isl("fixing the sizes of a set"),
        None => Ok(instances),
    }
}

/// A fresh isl id named like [`Mark::Parallel`].
fn parallel_id(node: &ScheduleNode) -> Result<Id> {
    let ctx = node.get_ctx();
    let name = CString::new(Mark::Parallel.to_isl_name())
        .map_err(|_| miette!("mark name contains NUL"))?;
    // SAFETY: isl copies the name; no user pointer.
    let ptr = unsafe { ffi::isl_id_alloc(ctx.ptr, name.as_ptr(), std::ptr::null_mut()) };
    if ptr == 0 {
        return Err(miette!("isl failed to allocate a mark id"));
    }
    Ok(Id {
        ptr,
        should_free_on_drop: true,
    })
}

/// Marks the outermost coincident loop of every band path as parallel (OpenMP on the
/// CPU).
pub struct MarkParallel;

impl<'a> Pass<PassCx<'a>> for MarkParallel {
    fn name(&self) -> &'static str {
        "parallel"
    }
    fn run(&self, tree: ScheduleTree, cx: &PassCx<'a>) -> Result<ScheduleTree> {
        let schedule = tree.to_isl(cx.ctx)?;
        let marked = mark_outer_parallel(schedule, cx.levels)?;
        ScheduleTree::from_isl(&marked)
    }
}
