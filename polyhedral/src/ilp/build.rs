//! Turns the scheduler's [`Node`] tree into an isl schedule of the same form as isl's:
//! bands with permutable and coincident flags, and sequences of filters for distributed
//! groups. Band expressions keep the statements' iterator names
//! (`S_0[h, w] -> [(h)]`).

use super::core::{affine_text, Member, Node};
use crate::isl::IslResultExt;
use crate::scop::Scop;
use isl_rs::{MultiUnionPwAff, Schedule, ScheduleNode, UnionMap, UnionSet, UnionSetList};

/// The isl schedule over the Scop's domain with `tree` below the domain node.
pub fn to_schedule(scop: &Scop, tree: &Node) -> miette::Result<Schedule> {
    let schedule = Schedule::from_domain(scop.domain.copy().isl("copying the domain")?)
        .isl("creating a schedule")?;
    let node = schedule
        .get_root()
        .isl("getting the schedule root")?
        .child(0)
        .isl("descending the schedule")?;
    let node = insert(scop, node, tree)?;
    node.get_schedule().isl("extracting the schedule")
}

/// Inserts `tree` at `node` (a leaf) and returns the node at the same position.
fn insert(scop: &Scop, node: ScheduleNode, tree: &Node) -> miette::Result<ScheduleNode> {
    match tree {
        Node::Leaf => Ok(node),
        Node::Band { members, child } => {
            let mupa = band_schedule(scop, members)?;
            let mut band = node.insert_partial_schedule(mupa).isl("inserting a band")?;
            band = band
                .band_set_permutable(1)
                .isl("setting the permutable flag")?;
            for (k, m) in members.iter().enumerate() {
                band = band
                    .band_member_set_coincident(k as i32, i32::from(m.coincident))
                    .isl("setting a coincident flag")?;
            }
            let below = band.child(0).isl("descending below a band")?;
            insert(scop, below, child)?
                .parent()
                .isl("returning to a band")
        }
        Node::Sequence(children) => {
            let ctx = node.get_ctx();
            let mut filters =
                UnionSetList::alloc(&ctx, children.len() as i32).isl("allocating filters")?;
            for (stmts, _) in children {
                filters = filters.add(filter(scop, stmts)?).isl("adding a filter")?;
            }
            let mut seq = node.insert_sequence(filters).isl("inserting a sequence")?;
            for (pos, (_, child)) in children.iter().enumerate() {
                let below = seq
                    .child(pos as i32)
                    .isl("descending to a filter")?
                    .child(0)
                    .isl("descending below a filter")?;
                seq = insert(scop, below, child)?
                    .ancestor(2)
                    .isl("returning to a sequence")?;
            }
            Ok(seq)
        }
    }
}

/// `{ S_0[h, w]; S_1[h, w, kh, kw] }`: the statements' whole spaces, as isl's filters.
fn filter(scop: &Scop, stmts: &[usize]) -> miette::Result<UnionSet> {
    let parts: Vec<String> = stmts
        .iter()
        .map(|&s| format!("{}[{}]", scop.stmt_names[s], scop.iter_names[s].join(", ")))
        .collect();
    let text = format!("{}{{ {} }}", scop.param_prefix(), parts.join("; "));
    UnionSet::read_from_str(&scop.context.get_ctx(), &text)
        .isl(&format!("reading a filter `{text}`"))
}

/// `[S_0[h, w] -> [(h), (h + w)]; …]` as a multi union piecewise affine expression.
fn band_schedule(scop: &Scop, members: &[Member]) -> miette::Result<MultiUnionPwAff> {
    let Some(first) = members.first() else {
        return Err(miette::miette!("internal error: an empty band"));
    };
    let parts: Vec<String> = first
        .rows
        .iter()
        .map(|(s, _)| {
            let names = &scop.iter_names[*s];
            let exprs: Vec<String> = members
                .iter()
                .map(|m| {
                    m.rows.iter().find(|(x, _)| x == s).map_or_else(
                        || "0".to_string(),
                        |(_, r)| format!("({})", affine_text(r, names)),
                    )
                })
                .collect();
            format!(
                "{}[{}] -> [{}]",
                scop.stmt_names[*s],
                names.join(", "),
                exprs.join(", ")
            )
        })
        .collect();
    let text = format!("{}{{ {} }}", scop.param_prefix(), parts.join("; "));
    let ctx = scop.context.get_ctx();
    let umap = UnionMap::read_from_str(&ctx, &text).isl(&format!("reading a band `{text}`"))?;
    MultiUnionPwAff::from_union_map(umap).isl("building a band schedule")
}
