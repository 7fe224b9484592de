//! Mapping a schedule tree to GPU blocks and threads (`polyc dump --stage mapped`).
//!
//! The pass inserts two typed marks:
//!
//! - [`Mark::Kernel`] above the outermost band of every group that becomes one device
//!   kernel. Leading members of that band that are not coincident (a time loop, a
//!   sequential reduction outside everything) are split off first and stay host loops
//!   around the launches. The band's leading coincident members, at most three, map to the
//!   grid (`blockIdx`; the innermost mapped member is `x`). A group without bands (a
//!   scalar statement) becomes a kernel of one thread.
//! - [`Mark::Thread`] above the first band inside a kernel whose leading member is
//!   coincident: its leading coincident members, at most three, map to the threads of a
//!   block (`threadIdx`; the innermost mapped member is `x`, so that consecutive threads
//!   touch consecutive elements). Bands whose leading members are not coincident (the
//!   K-tile loop of a GEMM) stay sequential loops that every thread of the block runs in
//!   step, with barriers between them where needed. Promotion's copy bands inside a
//!   kernel are coincident, so block-cooperative copies get their own `Thread` marks.
//!
//! Nothing is marked below a `Thread` mark: the loops there run inside one thread (a
//! register tile's point loops, its copies). Skipped subtrees are left alone.

use std::ffi::CString;

use isl_rs::{Id, Schedule, ScheduleNode, ScheduleNodeType};
use miette::{miette, Result};
use polyhedral::isl::ffi::ast_build as ffi;
use polyhedral::isl::IslResultExt;
use schedule_tree::mark::Mark;

/// What the mapping did, for `polyc explain`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MapReport {
    /// Kernels created.
    pub kernels: usize,
    /// Host loops split off above kernels.
    pub host_loops: usize,
    /// Thread-mapped bands.
    pub thread_bands: usize,
}

/// Inserts the kernel and thread marks (see the module documentation).
pub fn map_to_gpu(schedule: Schedule) -> Result<(Schedule, MapReport)> {
    let root = schedule.get_root().isl("reading the schedule's root")?;
    drop(schedule);
    let mut report = MapReport::default();
    let root = visit_host(root, &mut report)?;
    Ok((root.get_schedule().isl("rebuilding the schedule")?, report))
}

/// The number of leading coincident members of the band `node`.
fn leading_coincident(node: &ScheduleNode) -> Result<i32> {
    let n = node.band_n_member().isl("reading a band")?;
    let mut k = 0;
    while k < n
        && node
            .band_member_get_coincident(k)
            .isl("reading a band member's coincidence")?
    {
        k += 1;
    }
    Ok(k)
}

/// The number of leading members that are not coincident.
fn leading_sequential(node: &ScheduleNode) -> Result<i32> {
    let n = node.band_n_member().isl("reading a band")?;
    let mut k = 0;
    while k < n
        && !node
            .band_member_get_coincident(k)
            .isl("reading a band member's coincidence")?
    {
        k += 1;
    }
    Ok(k)
}

/// A fresh isl id for `mark`.
fn mark_id(node: &ScheduleNode, mark: Mark) -> Result<Id> {
    let ctx = node.get_ctx();
    let name = CString::new(mark.to_isl_name()).map_err(|_| miette!("mark name contains NUL"))?;
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

fn is_skipped(node: &ScheduleNode) -> Result<bool> {
    is_mark(node, Mark::Skipped)
}

/// Whether `node` is the mark `mark`.
fn is_mark(node: &ScheduleNode, mark: Mark) -> Result<bool> {
    if node.get_type().isl("reading a schedule node's type")? != ScheduleNodeType::Mark {
        return Ok(false);
    }
    let id = node.mark_get_id().isl("reading a mark")?;
    let name = id.get_name().isl("reading a mark's name")?;
    Ok(Mark::from_isl_name(name) == Some(mark))
}

/// Outside any kernel: the first band of every branch becomes a kernel (after splitting
/// off leading sequential members as host loops); a branch that reaches a leaf without
/// a band becomes a one-thread kernel.
fn visit_host(node: ScheduleNode, report: &mut MapReport) -> Result<ScheduleNode> {
    let mut node = node;
    if is_skipped(&node)? {
        return Ok(node);
    }
    match node.get_type().isl("reading a schedule node's type")? {
        ScheduleNodeType::Band => {
            let n = node.band_n_member().isl("reading a band")?;
            let seq = leading_sequential(&node)?;
            if seq > 0 && seq < n {
                // Host loops above, the rest a kernel.
                report.host_loops += seq as usize;
                node = node.band_split(seq).isl("splitting off host loops")?;
                node = node.child(0).isl("visiting the split band")?;
                node = kernel_at(node, report)?;
                return node.parent().isl("visiting the split band");
            }
            if seq == n && has_band_below(&node)? {
                // Only sequential members, with more bands inside: a host loop.
                report.host_loops += n as usize;
                node = node.child(0).isl("visiting a host loop's body")?;
                node = visit_host(node, report)?;
                return node.parent().isl("visiting a host loop");
            }
            return kernel_at(node, report);
        }
        ScheduleNodeType::Leaf => {
            // Statements without any band: one kernel of one thread.
            report.kernels += 1;
            let id = mark_id(&node, Mark::Kernel)?;
            return node.insert_mark(id).isl("inserting a kernel mark");
        }
        _ => {}
    }
    let n = node.n_children().isl("counting a node's children")?;
    for i in 0..n {
        node = node.child(i).isl("visiting a schedule node")?;
        node = visit_host(node, report)?;
        node = node.parent().isl("visiting a schedule node")?;
    }
    Ok(node)
}

/// Whether a band node appears anywhere below `node`.
fn has_band_below(node: &ScheduleNode) -> Result<bool> {
    let n = node.n_children().isl("counting a node's children")?;
    for i in 0..n {
        let c = node
            .copy()
            .isl("copying a schedule node")?
            .child(i)
            .isl("visiting a schedule node")?;
        if c.get_type().isl("reading a schedule node's type")? == ScheduleNodeType::Band
            || has_band_below(&c)?
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Marks the band `node` as a kernel and maps its inside to threads.
fn kernel_at(node: ScheduleNode, report: &mut MapReport) -> Result<ScheduleNode> {
    report.kernels += 1;
    let mut node = node.child(0).isl("visiting a kernel's body")?;
    node = visit_kernel(node, report)?;
    node = node.parent().isl("visiting a kernel")?;
    let id = mark_id(&node, Mark::Kernel)?;
    node.insert_mark(id).isl("inserting a kernel mark")
}

/// Inside a kernel: the first band with a coincident leading member on every branch gets
/// a thread mark.
fn visit_kernel(node: ScheduleNode, report: &mut MapReport) -> Result<ScheduleNode> {
    let mut node = node;
    if is_skipped(&node)? || is_mark(&node, Mark::Reduce)? {
        // A reduce mark maps its band itself (see `rows`).
        return Ok(node);
    }
    if node.get_type().isl("reading a schedule node's type")? == ScheduleNodeType::Band {
        let n = node.band_n_member().isl("reading a band")?;
        let seq = leading_sequential(&node)?;
        if seq == 0 && leading_coincident(&node)? > 0 {
            report.thread_bands += 1;
            let id = mark_id(&node, Mark::Thread)?;
            return node.insert_mark(id).isl("inserting a thread mark");
        }
        if seq > 0 && seq < n {
            node = node.band_split(seq).isl("splitting a band")?;
        }
    }
    let n = node.n_children().isl("counting a node's children")?;
    for i in 0..n {
        node = node.child(i).isl("visiting a schedule node")?;
        node = visit_kernel(node, report)?;
        node = node.parent().isl("visiting a schedule node")?;
    }
    Ok(node)
}
