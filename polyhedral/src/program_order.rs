//! Program order as a schedule: every statement's instances in the order the program
//! lists them, each statement's own loops as one band. Dependences are computed against
//! it ([`reference_schedule`]), and `--scheduler initial` uses it with band flags.

use crate::isl::IslResultExt;
use crate::scop::Scop;
use isl_rs::{Map, MultiUnionPwAff, Schedule, ScheduleNode, Set, UnionMap, UnionSet, UnionSetList};

/// The reference order as a schedule tree without band flags: Domain → (if 2+
/// statements) Sequence → Filter `{S_i}` → Band over `S_i`'s own iterators.
pub fn reference_schedule(scop: &Scop) -> miette::Result<Schedule> {
    program_order(scop, None)
}

/// Program order (see [`reference_schedule`]); with `validity`, the bands get their
/// coincidence and permutability flags from it.
pub(crate) fn program_order(scop: &Scop, validity: Option<&UnionMap>) -> miette::Result<Schedule> {
    // Statements that never run (empty domain for every size) get no filter: isl drops
    // their space from the domain union anyway.
    let mut live = Vec::new();
    for (i, d) in scop.stmt_domains.iter().enumerate() {
        let runs = !d
            .copy()
            .isl("copying a domain")?
            .intersect_params(scop.context.copy().isl("copying the context")?)
            .isl("restricting a domain")?
            .is_empty()
            .isl("testing a domain for emptiness")?;
        if runs {
            live.push(i);
        }
    }
    let schedule = Schedule::from_domain(scop.domain.copy().isl("copying the domain")?)
        .isl("creating a schedule")?;
    if live.is_empty() {
        return Ok(schedule);
    }
    let mut node = schedule
        .get_root()
        .isl("getting the schedule root")?
        .child(0)
        .isl("descending the schedule")?;
    if live.len() >= 2 {
        let ctx = schedule.get_ctx();
        let mut filters = UnionSetList::alloc(&ctx, live.len() as i32).isl("allocating filters")?;
        for &i in &live {
            let d = scop.stmt_domains[i].copy().isl("copying a domain")?;
            filters = filters
                .add(UnionSet::from_set(d).isl("making a filter")?)
                .isl("adding a filter")?;
        }
        node = node
            .insert_sequence(filters)
            .isl("inserting the statement sequence")?;
        for (pos, &i) in live.iter().enumerate() {
            let leaf = node
                .child(pos as i32)
                .isl("descending to a filter")?
                .child(0)
                .isl("descending below a filter")?;
            node = insert_band(scop, i, leaf, validity)?
                .ancestor(2)
                .isl("returning to the sequence")?;
        }
    } else {
        node = insert_band(scop, live[0], node, validity)?;
    }
    node.get_schedule().isl("extracting the schedule")
}

/// Inserts statement `i`'s identity band at `leaf` (nothing for a statement without
/// iterators) and returns the node at the same depth (the band or the leaf).
fn insert_band(
    scop: &Scop,
    i: usize,
    leaf: ScheduleNode,
    validity: Option<&UnionMap>,
) -> miette::Result<ScheduleNode> {
    let names = &scop.iter_names[i];
    if names.is_empty() {
        return Ok(leaf);
    }
    let stmt = &scop.stmt_names[i];
    let text = format!(
        "{}{{ {stmt}[{}] -> [{}] }}",
        scop.param_prefix(),
        names.join(", "),
        names.join(", ")
    );
    let ctx = leaf.get_ctx();
    let umap = UnionMap::read_from_str(&ctx, &text).isl("reading an identity schedule")?;
    let mupa = MultiUnionPwAff::from_union_map(umap).isl("building a band schedule")?;
    let mut band = leaf.insert_partial_schedule(mupa).isl("inserting a band")?;
    if let Some(v) = validity {
        let (coincident, permutable) = band_flags(scop, i, v)?;
        for (k, c) in coincident.iter().enumerate() {
            band = band
                .band_member_set_coincident(k as i32, i32::from(*c))
                .isl("setting a coincident flag")?;
        }
        band = band
            .band_set_permutable(i32::from(permutable))
            .isl("setting the permutable flag")?;
    }
    Ok(band)
}

/// Exact coincident flags (one per iterator) and the permutable flag of statement `i`'s
/// identity band, from its self-dependences.
fn band_flags(scop: &Scop, i: usize, validity: &UnionMap) -> miette::Result<(Vec<bool>, bool)> {
    let space = scop.stmt_space(i)?;
    let pair = space
        .copy()
        .isl("copying a space")?
        .map_from_domain_and_range(space)
        .isl("building a dependence space")?;
    let self_deps: Map = validity
        .extract_map(pair)
        .isl("extracting self-dependences")?;
    let deltas = self_deps
        .deltas()
        .isl("computing dependence distances")?
        .intersect_params(scop.context.copy().isl("copying the context")?)
        .isl("computing dependence distances")?;
    let n = scop.iter_names[i].len();
    let dims: Vec<String> = (0..n).map(|k| format!("__polyc_d{k}")).collect();
    let stmt = &scop.stmt_names[i];
    let ctx = deltas.get_ctx();
    let set = |cons: &str| -> miette::Result<Set> {
        let text = format!(
            "{}{{ {stmt}[{}] : {cons} }}",
            scop.param_prefix(),
            dims.join(", ")
        );
        Set::read_from_str(&ctx, &text).isl(&format!("reading `{text}`"))
    };
    let mut coincident = Vec::with_capacity(n);
    for k in 0..n {
        let mut cons: Vec<String> = dims[..k].iter().map(|d| format!("{d} = 0")).collect();
        cons.push(format!("({0} < 0 or {0} > 0)", dims[k]));
        let carried = deltas
            .copy()
            .isl("copying distances")?
            .intersect(set(&cons.join(" and "))?)
            .isl("testing a coincident member")?;
        coincident.push(carried.is_empty().isl("testing a coincident member")?);
    }
    let nonneg: Vec<String> = dims.iter().map(|d| format!("{d} >= 0")).collect();
    let permutable = deltas
        .is_subset(&set(&nonneg.join(" and "))?)
        .isl("testing permutability")?;
    Ok((coincident, permutable))
}
