//! The `mark_outer_parallel` pass: OpenMP-style outer-loop parallelism for the CPU.

use std::ffi::CString;

use isl_rs::{Id, Schedule, ScheduleNode, ScheduleNodeType};
use miette::{miette, Result};
use polyhedral::isl::ffi::ast_build as ffi;
use polyhedral::isl::IslResultExt;
use schedule_tree::mark::Mark;

/// Inserts a [`Mark::Parallel`] mark above the outermost coincident band member on every
/// root-to-leaf path of the schedule tree.
///
/// When the first coincident member of a band is member `k > 0`, the band is split at `k`
/// (`isl_schedule_node_band_split`) so that the coincident member starts its own band, and
/// the mark goes above that inner band. Below a mark nothing more is marked (no nested
/// parallelism), and subtrees already under a `parallel` or `skipped` mark are left alone.
/// Bands without coincident members are passed through, and the search continues below
/// them.
pub fn mark_outer_parallel(schedule: Schedule) -> Result<Schedule> {
    let root = schedule.get_root().isl("reading the schedule's root")?;
    drop(schedule);
    let root = visit(root)?;
    root.get_schedule().isl("rebuilding the schedule")
}

/// Visits `node` and its subtree; returns a node at the same position in the new tree.
fn visit(node: ScheduleNode) -> Result<ScheduleNode> {
    let mut node = node;
    match node.get_type().isl("reading a schedule node's type")? {
        ScheduleNodeType::Mark => {
            let id = node.mark_get_id().isl("reading a mark")?;
            let name = id.get_name().isl("reading a mark's name")?;
            if matches!(
                Mark::from_isl_name(name),
                Some(Mark::Parallel | Mark::Skipped)
            ) {
                return Ok(node);
            }
        }
        ScheduleNodeType::Band => {
            let n = node.band_n_member().isl("reading a band")?;
            let mut first = None;
            for k in 0..n {
                if node
                    .band_member_get_coincident(k)
                    .isl("reading a band member's coincidence")?
                {
                    first = Some(k);
                    break;
                }
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
        node = visit(node)?;
        node = node.parent().isl("visiting a schedule node")?;
    }
    Ok(node)
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
