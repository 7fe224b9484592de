//! The bands of an isl schedule with their flags, outermost first, for the checks that
//! read them ([`crate::sched`]'s flag checks, [`crate::sched_parallel`]).

use crate::isl::IslResultExt;
use isl_rs::{ScheduleNode, ScheduleNodeType, UnionMap};

/// A band of a schedule: its prefix schedule, its partial schedule, its coincident flags
/// and its permutable flag.
pub(crate) type BandFlags = (UnionMap, UnionMap, Vec<bool>, bool);

/// The bands below `node`, outermost first.
pub(crate) fn collect_band_flags(
    node: ScheduleNode,
    out: &mut Vec<BandFlags>,
) -> miette::Result<()> {
    if node.get_type().isl("reading a node type")? == ScheduleNodeType::Band {
        let n = node.band_n_member().isl("reading a band")?;
        let coincident = (0..n)
            .map(|k| {
                node.band_member_get_coincident(k)
                    .isl("reading a coincident flag")
            })
            .collect::<miette::Result<Vec<bool>>>()?;
        out.push((
            node.get_prefix_schedule_union_map()
                .isl("reading a prefix schedule")?,
            node.band_get_partial_schedule_union_map()
                .isl("reading a band schedule")?,
            coincident,
            node.band_get_permutable()
                .isl("reading a permutable flag")?,
        ));
    }
    for i in 0..node.n_children().isl("reading a node")? {
        let child = node
            .copy()
            .isl("copying a node")?
            .child(i)
            .isl("reading a child")?;
        collect_band_flags(child, out)?;
    }
    Ok(())
}
