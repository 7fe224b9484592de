//! Summary numbers of any schedule tree (isl's or the ILP scheduler's), for comparisons.

use crate::isl::IslResultExt;
use isl_rs::{Schedule, ScheduleNode, ScheduleNodeType};

/// Shape statistics of a schedule tree.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScheduleStats {
    /// The most members of one permutable band (a band that is not permutable counts as
    /// depth 1): how deep the schedule can be tiled.
    pub max_permutable_depth: usize,
    /// The number of outermost loop nests: the subtrees reached from the root through
    /// sequence, set, filter and other non-band nodes (a root band over every statement
    /// is one group).
    pub fused_groups: usize,
    /// For every band, in depth-first (pre-)order, the number of its coincident
    /// (parallel) members.
    pub coincident_dims: Vec<usize>,
}

/// Computes [`ScheduleStats`] by walking the tree.
pub fn schedule_stats(schedule: &Schedule) -> miette::Result<ScheduleStats> {
    let root = schedule.get_root().isl("getting the schedule root")?;
    let mut stats = ScheduleStats::default();
    walk(root, true, &mut stats)?;
    Ok(stats)
}

/// `outer`: no band above this node.
fn walk(node: ScheduleNode, outer: bool, stats: &mut ScheduleStats) -> miette::Result<()> {
    let ty = node.get_type().isl("reading a node type")?;
    let mut outer_below = outer;
    match ty {
        ScheduleNodeType::Band => {
            let n = node.band_n_member().isl("counting band members")? as usize;
            let perm = node.band_get_permutable().isl("reading a band")?;
            let depth = if perm { n } else { n.min(1) };
            stats.max_permutable_depth = stats.max_permutable_depth.max(depth);
            let mut c = 0;
            for k in 0..n {
                if node
                    .band_member_get_coincident(k as i32)
                    .isl("reading a band member")?
                {
                    c += 1;
                }
            }
            stats.coincident_dims.push(c);
            if outer {
                stats.fused_groups += 1;
            }
            outer_below = false;
        }
        ScheduleNodeType::Leaf if outer => stats.fused_groups += 1,
        _ => {}
    }
    let n = node.n_children().isl("counting children")?;
    for k in 0..n {
        let child = node
            .copy()
            .isl("copying a node")?
            .child(k)
            .isl("descending")?;
        walk(child, outer_below, stats)?;
    }
    Ok(())
}
