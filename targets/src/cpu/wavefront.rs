//! The `wavefront` pass ([`Wavefront`]): parallel tiles and guard-free row loops for tiled
//! bands whose members are all sequential.
//!
//! isl skews a time-iterated stencil (`for t { B = f(A); A = g(B) }`) into a permutable
//! band such as `(t, 2t + i, 2t + j)` in which no member is coincident: every tile depends
//! on its neighbours, so [`crate::cpu::parallel`] finds nothing to run in parallel, and
//! the statements, shifted against each other along every member, share one innermost
//! loop full of guards that keep it scalar. For each such band that the tiling pass tiled
//! (a band with a memory mark below it), this pass
//!
//! 1. runs its tiles as **wavefronts**: member 0 of the tile band becomes the sum of
//!    members 0 and 1, and member 1 becomes coincident (tiles on one anti-diagonal are
//!    independent), so the parallel pass runs member 1 in parallel inside a sequential
//!    wavefront loop;
//! 2. **distributes the innermost member** of the point band over its statements: at one
//!    point of the outer members, each statement runs its own loop along the innermost
//!    member, in an order that every dependence between them allows.
//!
//! Both steps are checked against the dependences with isl before they apply, and each is
//! left out where the check fails. The pass runs only when every size is bound.

use std::collections::BTreeSet;

use isl_rs::{
    MultiUnionPwAff, Schedule, ScheduleNode, ScheduleNodeType, UnionMap, UnionSet, UnionSetList,
};
use miette::Result;
use polyhedral::isl::IslResultExt;
use schedule_tree::mark::Mark;
use schedule_tree::{Pass, ScheduleTree};

use crate::passes::PassCx;

/// What the pass did, one line per band (for `--verbose` notes).
#[derive(Debug, Default)]
pub struct WavefrontReport {
    /// One line per transformed band.
    pub lines: Vec<String>,
}

/// Applies the pass to `schedule` against the validity dependences `deps`.
pub fn wavefront(schedule: Schedule, deps: &UnionMap) -> Result<(Schedule, WavefrontReport)> {
    let mut report = WavefrontReport::default();
    let root = schedule.get_root().isl("reading the schedule's root")?;
    drop(schedule);
    let root = visit(root, deps, &mut report)?;
    let schedule = root.get_schedule().isl("rebuilding the schedule")?;
    Ok((schedule, report))
}

/// Visits `node` and its subtree; returns a node at the same position in the new tree.
fn visit(
    node: ScheduleNode,
    deps: &UnionMap,
    report: &mut WavefrontReport,
) -> Result<ScheduleNode> {
    let mut node = node;
    match node.get_type().isl("reading a schedule node's type")? {
        ScheduleNodeType::Mark => {
            if matches!(mark_of(&node)?, Some(Mark::Parallel | Mark::Skipped)) {
                return Ok(node);
            }
        }
        ScheduleNodeType::Extension => return Ok(node),
        ScheduleNodeType::Band if is_sequential_tile_band(&node)? => {
            return transform_chain(node, deps, report);
        }
        _ => {}
    }
    let n = node.n_children().isl("counting a node's children")?;
    for i in 0..n {
        node = node.child(i).isl("visiting a schedule node")?;
        node = visit(node, deps, report)?;
        node = node.parent().isl("visiting a schedule node")?;
    }
    Ok(node)
}

/// The mark at `node`, when polyc knows it.
fn mark_of(node: &ScheduleNode) -> Result<Option<Mark>> {
    let id = node.mark_get_id().isl("reading a mark")?;
    let name = id.get_name().isl("reading a mark's name")?;
    Ok(Mark::from_isl_name(name))
}

/// Whether `node` is a tile band (a memory mark right below it) with at least two members,
/// permutable, none of them coincident, with no extension node (promotion copies, fused
/// producers) anywhere below it.
fn is_sequential_tile_band(node: &ScheduleNode) -> Result<bool> {
    let n = node.band_n_member().isl("reading a band")?;
    if n < 2 || !node.band_get_permutable().isl("reading a band")? {
        return Ok(false);
    }
    for k in 0..n {
        if node
            .band_member_get_coincident(k)
            .isl("reading a band member's coincidence")?
        {
            return Ok(false);
        }
    }
    let child = node.get_child(0).isl("reading a band's child")?;
    if child.get_type().isl("reading a node's type")? != ScheduleNodeType::Mark
        || !matches!(mark_of(&child)?, Some(Mark::Mem(_)))
    {
        return Ok(false);
    }
    Ok(!has_extension(node)?)
}

/// Whether the subtree of `node` holds an extension node.
fn has_extension(node: &ScheduleNode) -> Result<bool> {
    if node.get_type().isl("reading a node's type")? == ScheduleNodeType::Extension {
        return Ok(true);
    }
    let n = node.n_children().isl("counting a node's children")?;
    for i in 0..n {
        if has_extension(&node.get_child(i).isl("reading a node's child")?)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Wavefronts the tile band `node`, then distributes the innermost band below it (the
/// chain of bands and marks under `node` down to a band with no band below); returns the
/// node at `node`'s position.
fn transform_chain(
    node: ScheduleNode,
    deps: &UnionMap,
    report: &mut WavefrontReport,
) -> Result<ScheduleNode> {
    let mut depth = 0;
    let point = innermost_band(&node)?;
    let mut node = match wavefronted(&node, &point, deps)? {
        Some(band) => {
            report.lines.push(format!(
                "the tiles of {} run in wavefronts (tile members 0 + 1 in sequence, member 1 in parallel)",
                statements(&node)?.join(", ")
            ));
            replace_band(node, band)?
        }
        None => node,
    };
    // Down the chain to the innermost band.
    loop {
        let child = node.get_child(0).isl("reading a node's child")?;
        let ty = child.get_type().isl("reading a node's type")?;
        let below_has_band = ty == ScheduleNodeType::Band || ty == ScheduleNodeType::Mark;
        if !below_has_band {
            break;
        }
        node = node.first_child().isl("descending the tile chain")?;
        depth += 1;
    }
    if node.get_type().isl("reading a node's type")? == ScheduleNodeType::Band
        && !has_band_below(&node)?
    {
        if let Some(order) = distribution_order(&node, deps)? {
            node = distribute_innermost(node, &order)?;
            report.lines.push(format!(
                "{} each run their own innermost loop, in this order",
                order.join(", ")
            ));
        }
    }
    for _ in 0..depth {
        node = node.parent().isl("climbing the tile chain")?;
    }
    Ok(node)
}

/// The innermost band of the chain of bands and marks that starts at the band `node`.
fn innermost_band(node: &ScheduleNode) -> Result<ScheduleNode> {
    let mut band = node.copy().isl("copying a node")?;
    let mut at = node.copy().isl("copying a node")?;
    loop {
        match at.get_type().isl("reading a node's type")? {
            ScheduleNodeType::Band => band = at.copy().isl("copying a node")?,
            ScheduleNodeType::Mark => {}
            _ => return Ok(band),
        }
        at = at.get_child(0).isl("reading a node's child")?;
    }
}

/// Whether a band node lies anywhere below `node`.
fn has_band_below(node: &ScheduleNode) -> Result<bool> {
    let n = node.n_children().isl("counting a node's children")?;
    for i in 0..n {
        let c = node.get_child(i).isl("reading a node's child")?;
        if c.get_type().isl("reading a node's type")? == ScheduleNodeType::Band
            || has_band_below(&c)?
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The validity dependences between instances that reach `node` and that the loops
/// outside it run at the same iteration (those the band itself must respect).
fn live_deps(node: &ScheduleNode, deps: &UnionMap) -> Result<UnionMap> {
    let domain = node.get_domain().isl("reading a band's instances")?;
    let prefix = node
        .get_prefix_schedule_multi_union_pw_aff()
        .isl("reading a band's prefix schedule")?;
    let live = deps
        .copy()
        .isl("copying dependences")?
        .intersect_domain(domain.copy().isl("copying a set")?)
        .isl("restricting dependences")?
        .intersect_range(domain)
        .isl("restricting dependences")?;
    if prefix.size().isl("counting outer loops")? == 0 {
        return Ok(live);
    }
    live.eq_at_multi_union_pw_aff(prefix)
        .isl("selecting live dependences")
}

/// `deps` restricted to the pairs at which `band`'s members `0..n` are equal.
fn equal_at_members(deps: UnionMap, band: &MultiUnionPwAff, n: i32) -> Result<UnionMap> {
    let mut deps = deps;
    for m in 0..n {
        let member =
            MultiUnionPwAff::from_union_pw_aff(band.get_at(m).isl("reading a band member")?)
                .isl("converting a band member")?;
        deps = deps
            .eq_at_multi_union_pw_aff(member)
            .isl("selecting dependences at one point")?;
    }
    Ok(deps)
}

/// `member` of a band's schedule as a map from instances to its values.
fn member_map(schedule: &MultiUnionPwAff, member: i32) -> Result<UnionMap> {
    UnionMap::from_union_pw_aff(schedule.get_at(member).isl("reading a band member")?)
        .isl("converting a band member")
}

/// Whether every pair in `pairs`, mapped through `member` on both sides, moves by a
/// distance in `allowed` (a one-dimensional set's text).
fn distances_within(pairs: &UnionMap, member: &UnionMap, allowed: &str) -> Result<bool> {
    let d = pairs
        .copy()
        .isl("copying dependences")?
        .apply_domain(member.copy().isl("copying a map")?)
        .isl("mapping dependence sources")?
        .apply_range(member.copy().isl("copying a map")?)
        .isl("mapping dependence targets")?
        .deltas()
        .isl("computing dependence distances")?;
    if d.is_empty().isl("testing distances")? {
        return Ok(true);
    }
    let ctx = pairs.get_ctx();
    let allowed = UnionSet::read_from_str(&ctx, allowed).isl("reading a distance set")?;
    d.is_subset(&allowed).isl("comparing distances")
}

/// The wavefront schedule of the tile band `node` (member 0 replaced by members 0 + 1),
/// when every live dependence keeps a non-negative distance along each of the members of
/// `point` (the band below the tile loops) that the tile band tiles; `None` otherwise.
///
/// The check runs on the point members, which are affine: tile member `m` is
/// `floor((p_m + c) / s)` of point member `p_m` (the tiling pass strip-mines members in
/// order), which never decreases where `p_m` does not, so each tile member keeps the
/// non-negative distances, their sum too, and where the sum's distance is zero both are:
/// tiles on one wavefront are independent (member 1 is coincident). Checking the tile
/// members themselves (floors of parametric windows) took isl minutes and gigabytes on
/// jacobi-1d at symbolic sizes.
fn wavefronted(
    node: &ScheduleNode,
    point: &ScheduleNode,
    deps: &UnionMap,
) -> Result<Option<MultiUnionPwAff>> {
    let band = node
        .band_get_partial_schedule()
        .isl("reading a band's schedule")?;
    let n = band.size().isl("counting band members")?;
    let inner = point
        .band_get_partial_schedule()
        .isl("reading a band's schedule")?;
    if inner.size().isl("counting band members")? < n {
        return Ok(None);
    }
    let live = live_deps(node, deps)?;
    for m in 0..n {
        if !distances_within(&live, &member_map(&inner, m)?, "{ [d] : d >= 0 }")? {
            return Ok(None);
        }
    }
    let sum = band
        .get_at(0)
        .isl("reading a band member")?
        .add(band.get_at(1).isl("reading a band member")?)
        .isl("adding band members")?;
    Ok(Some(band.set_at(0, sum).isl("replacing a band member")?))
}

/// Replaces the band `node` with a permutable band of schedule `wave` whose member 1 is
/// coincident; returns the new band.
fn replace_band(node: ScheduleNode, wave: MultiUnionPwAff) -> Result<ScheduleNode> {
    let n = wave.size().isl("counting band members")?;
    let mut node = node
        .delete()
        .isl("removing a tile band")?
        .insert_partial_schedule(wave)
        .isl("inserting the wavefront band")?
        .band_set_permutable(1)
        .isl("marking a band permutable")?;
    for m in 0..n {
        node = node
            .band_member_set_coincident(m, i32::from(m == 1))
            .isl("marking a band member")?;
    }
    Ok(node)
}

/// The statements reaching `node`, by name, in the program's order (their numbers).
fn statements(node: &ScheduleNode) -> Result<Vec<String>> {
    let list = node
        .get_domain()
        .isl("reading a band's instances")?
        .get_set_list()
        .isl("listing a band's statements")?;
    let mut names = BTreeSet::new();
    for i in 0..list.n_set().isl("counting a band's statements")? {
        let set = list.get_at(i).isl("reading a band's statements")?;
        names.insert(
            set.get_tuple_name()
                .isl("reading a statement name")?
                .to_string(),
        );
    }
    let mut names: Vec<String> = names.into_iter().collect();
    names.sort_by_key(|n| (stmt_number(n), n.clone()));
    Ok(names)
}

/// The number in a statement name `S_<n>` (`usize::MAX` for other names).
fn stmt_number(name: &str) -> usize {
    name.strip_prefix("S_")
        .and_then(|n| n.parse().ok())
        .unwrap_or(usize::MAX)
}

/// An order of the statements of the band `node` in which each may run its own loop along
/// the innermost member: every live dependence between two of them, at one value of the
/// outer members, goes from an earlier statement to a later one (the program's order
/// breaks ties). `None` when there is one statement, or when the dependences form a cycle.
fn distribution_order(node: &ScheduleNode, deps: &UnionMap) -> Result<Option<Vec<String>>> {
    let names = statements(node)?;
    if names.len() < 2 {
        return Ok(None);
    }
    let band = node
        .band_get_partial_schedule()
        .isl("reading a band's schedule")?;
    let n = band.size().isl("counting band members")?;
    let live = equal_at_members(live_deps(node, deps)?, &band, n - 1)?;
    let mut edges = BTreeSet::new();
    let list = live.get_map_list().isl("listing dependences")?;
    for i in 0..list.n_map().isl("counting dependences")? {
        let map = list.get_at(i).isl("reading dependences")?;
        let src = map
            .get_tuple_name(isl_rs::DimType::In)
            .isl("reading a dependence's source")?
            .to_string();
        let dst = map
            .get_tuple_name(isl_rs::DimType::Out)
            .isl("reading a dependence's target")?
            .to_string();
        if src != dst && !map.is_empty().isl("testing dependences")? {
            edges.insert((src, dst));
        }
    }
    Ok(topological(&names, &edges))
}

/// `names` in an order that puts every edge's source first, the earliest name first among
/// those ready; `None` on a cycle.
fn topological(names: &[String], edges: &BTreeSet<(String, String)>) -> Option<Vec<String>> {
    let mut left: Vec<String> = names.to_vec();
    let mut order = Vec::new();
    while !left.is_empty() {
        let ready = left.iter().position(|n| {
            !edges
                .iter()
                .any(|(s, d)| d == n && s != n && left.contains(s))
        })?;
        order.push(left.remove(ready));
    }
    Some(order)
}

/// Splits off the innermost member of the band `node` and puts a sequence of one filter
/// per statement (in `order`) above it; returns the node at `node`'s position.
fn distribute_innermost(node: ScheduleNode, order: &[String]) -> Result<ScheduleNode> {
    let n = node.band_n_member().isl("reading a band")?;
    let domain = node.get_domain().isl("reading a band's instances")?;
    let mut node = node;
    let split = n > 1;
    if split {
        node = node
            .band_split(n - 1)
            .isl("splitting off the innermost member")?
            .first_child()
            .isl("visiting the innermost member")?;
    }
    let ctx = domain.get_ctx();
    let mut filters = UnionSetList::alloc(&ctx, order.len() as i32).isl("allocating filters")?;
    for name in order {
        let part = statement_part(&domain, name)?;
        filters = filters.add(part).isl("adding a filter")?;
    }
    node = node
        .insert_sequence(filters)
        .isl("distributing the innermost member")?;
    if split {
        node = node.parent().isl("climbing to the outer members")?;
    }
    Ok(node)
}

/// Every instance of statement `name` of `domain` (the filter that selects it).
fn statement_part(domain: &UnionSet, name: &str) -> Result<UnionSet> {
    let list = domain.get_set_list().isl("listing a band's statements")?;
    for i in 0..list.n_set().isl("counting a band's statements")? {
        let set = list.get_at(i).isl("reading a band's statements")?;
        if set.get_tuple_name().isl("reading a statement name")? == name {
            let all = isl_rs::Set::universe(set.get_space().isl("reading a statement's space")?)
                .isl("building a filter")?;
            return UnionSet::from_set(all).isl("converting a filter");
        }
    }
    Err(miette::miette!(
        "internal error: statement {name} vanished from a band while distributing it"
    ))
}

/// Wavefront tiles and distributed row loops for tiled bands with no coincident member
/// (the CPU's `wavefront` stage; see the module documentation).
pub struct Wavefront;

impl<'a> Pass<PassCx<'a>> for Wavefront {
    fn name(&self) -> &'static str {
        "wavefront"
    }
    fn run(&self, tree: ScheduleTree, cx: &PassCx<'a>) -> Result<ScheduleTree> {
        // With symbolic sizes, isl's AST generation of the wavefront loops (sums of
        // floors over parametric bounds) ran for minutes on jacobi-1d: sizes must be bound.
        if !cx.scop.symbolic.is_empty() {
            return Ok(tree);
        }
        let schedule = tree.to_isl(cx.ctx)?;
        let (schedule, report) = wavefront(schedule, &cx.deps.validity()?)?;
        if report.lines.is_empty() {
            return Ok(tree);
        }
        cx.notes
            .borrow_mut()
            .extend(report.lines.iter().map(|l| format!("note: wavefront: {l}")));
        ScheduleTree::from_isl(&schedule)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn edges(v: &[(&str, &str)]) -> BTreeSet<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn the_order_puts_sources_first_and_keeps_program_order_otherwise() {
        let all = names(&["S_0", "S_1", "S_2"]);
        assert_eq!(topological(&all, &edges(&[])), Some(all.clone()));
        assert_eq!(
            topological(&all, &edges(&[("S_2", "S_0")])),
            Some(names(&["S_1", "S_2", "S_0"]))
        );
        assert_eq!(
            topological(&all, &edges(&[("S_0", "S_1"), ("S_1", "S_2")])),
            Some(all.clone())
        );
    }

    #[test]
    fn a_cycle_leaves_the_statements_together() {
        let all = names(&["S_0", "S_1", "S_2"]);
        assert_eq!(
            topological(&all, &edges(&[("S_0", "S_1"), ("S_1", "S_0")])),
            None
        );
    }

    #[test]
    fn statement_numbers_order_names() {
        assert_eq!(stmt_number("S_12"), 12);
        assert_eq!(stmt_number("copyin_0_A"), usize::MAX);
    }
}
