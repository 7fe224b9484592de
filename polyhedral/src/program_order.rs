//! Program order as a schedule: every statement's instances in the order the program
//! lists them, each statement's own loops as one band. Dependences are computed against
//! it ([`reference_schedule`]), and `--scheduler initial` uses it with band flags.

use crate::ir::OrderItem;
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
    let all: Vec<usize> = (0..scop.stmt_domains.len()).collect();
    let domain = scop.domain.copy().isl("copying the domain")?;
    order_of(scop, &all, domain, validity)
}

/// The reference order of statements `which` only (ascending), over their instances: what
/// the dataflow analysis of one tensor needs.
/// `which` is not empty.
pub fn reference_schedule_of(scop: &Scop, which: &[usize]) -> miette::Result<Schedule> {
    order_of(scop, which, stmts_filter(scop, which)?, None)
}

/// Program order of statements `which` (ascending) over `domain`, their instances.
fn order_of(
    scop: &Scop,
    which: &[usize],
    domain: UnionSet,
    validity: Option<&UnionMap>,
) -> miette::Result<Schedule> {
    // Statements that never run (empty domain for every size) get no filter: isl drops
    // their space from the domain union anyway.
    let live = live_statements(scop, which)?;
    let schedule = Schedule::from_domain(domain).isl("creating a schedule")?;
    if live.is_empty() {
        return Ok(schedule);
    }
    let node = schedule
        .get_root()
        .isl("getting the schedule root")?
        .child(0)
        .isl("descending the schedule")?;
    let items = scop.order_items(&live);
    let node = insert_items(scop, &items, node, validity)?;
    node.get_schedule().isl("extracting the schedule")
}

/// The statements of `which` with instances for some size the context allows.
pub(crate) fn live_statements(scop: &Scop, which: &[usize]) -> miette::Result<Vec<usize>> {
    let mut live = Vec::new();
    for &i in which {
        let d = &scop.stmt_domains[i];
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
    Ok(live)
}

/// Inserts the order of `items` at `leaf`: a sequence of one filter per item when there
/// are several, each item's loop band or statement band below. Returns the node at
/// `leaf`'s position.
fn insert_items(
    scop: &Scop,
    items: &[OrderItem],
    leaf: ScheduleNode,
    validity: Option<&UnionMap>,
) -> miette::Result<ScheduleNode> {
    let [item] = items else {
        let ctx = leaf.get_ctx();
        let mut filters =
            UnionSetList::alloc(&ctx, items.len() as i32).isl("allocating filters")?;
        for item in items {
            filters = filters
                .add(stmts_filter(scop, &item.stmts())?)
                .isl("adding a filter")?;
        }
        let mut node = leaf
            .insert_sequence(filters)
            .isl("inserting the statement sequence")?;
        for (pos, item) in items.iter().enumerate() {
            let below = node
                .child(pos as i32)
                .isl("descending to a filter")?
                .child(0)
                .isl("descending below a filter")?;
            node = insert_item(scop, item, below, validity)?
                .ancestor(2)
                .isl("returning to the sequence")?;
        }
        return Ok(node);
    };
    insert_item(scop, item, leaf, validity)
}

/// Program order of statements `which` (ascending, not empty) over their instances, with
/// band flags from `validity`: a fallback for a part of a program.
pub(crate) fn program_order_of(
    scop: &Scop,
    which: &[usize],
    validity: &UnionMap,
) -> miette::Result<Schedule> {
    order_of(scop, which, stmts_filter(scop, which)?, Some(validity))
}

/// The union of the domains of statements `which`.
pub(crate) fn stmts_filter(scop: &Scop, which: &[usize]) -> miette::Result<UnionSet> {
    let mut it = which.iter();
    let first = it.next().copied().unwrap_or(0);
    let mut u = UnionSet::from_set(scop.stmt_domains[first].copy().isl("copying a domain")?)
        .isl("making a filter")?;
    for &i in it {
        let d = UnionSet::from_set(scop.stmt_domains[i].copy().isl("copying a domain")?)
            .isl("making a filter")?;
        u = u.union(d).isl("joining filters")?;
    }
    Ok(u)
}

/// Inserts one item at `leaf`: a statement's band, or a loop's one-member band over the
/// loop index of every statement inside (not coincident, not permutable: the loop runs
/// in order) with its body below. Returns the node at `leaf`'s position.
fn insert_item(
    scop: &Scop,
    item: &OrderItem,
    leaf: ScheduleNode,
    validity: Option<&UnionMap>,
) -> miette::Result<ScheduleNode> {
    let OrderItem::Loop(_, body) = item else {
        let OrderItem::Stmt(i) = item else {
            unreachable!("an item is a statement or a loop")
        };
        return insert_band(scop, *i, leaf, validity);
    };
    let stmts = item.stmts();
    let depth = scop.stmt_loops[stmts[0]]
        .iter()
        .position(|l| matches!(item, OrderItem::Loop(id, _) if id == l))
        .unwrap_or(0);
    let mupa = loop_indices(scop, &stmts, depth, depth + 1)?;
    let band = leaf
        .insert_partial_schedule(mupa)
        .isl("inserting a loop band")?;
    let below = band.child(0).isl("descending below a loop band")?;
    insert_items(scop, body, below, validity)?
        .parent()
        .isl("returning to the loop band")
}

/// `{ S[i_0, …] -> [i_from, …, i_(to-1)] }` over statements `which`: the indices of the
/// loops `from..to` around them.
pub(crate) fn loop_indices(
    scop: &Scop,
    which: &[usize],
    from: usize,
    to: usize,
) -> miette::Result<MultiUnionPwAff> {
    let parts: Vec<String> = which
        .iter()
        .map(|&i| {
            let names = &scop.iter_names[i];
            format!(
                "{}[{}] -> [{}]",
                scop.stmt_names[i],
                names.join(", "),
                names[from..to].join(", ")
            )
        })
        .collect();
    let text = format!("{}{{ {} }}", scop.param_prefix(), parts.join("; "));
    let ctx = scop.context.get_ctx();
    let umap = UnionMap::read_from_str(&ctx, &text).isl(&format!("reading `{text}`"))?;
    MultiUnionPwAff::from_union_map(umap).isl("building loop indices")
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
    let own = &names[scop.stmt_loops[i].len()..];
    if own.is_empty() {
        return Ok(leaf);
    }
    let stmt = &scop.stmt_names[i];
    let text = format!(
        "{}{{ {stmt}[{}] -> [{}] }}",
        scop.param_prefix(),
        names.join(", "),
        own.join(", ")
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

/// Exact coincident flags (one per own iterator) and the permutable flag of statement
/// `i`'s identity band, from its self-dependences within one iteration of its loops.
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
    let l = scop.stmt_loops[i].len();
    let dims: Vec<String> = (0..n).map(|k| format!("__polyc_d{k}")).collect();
    let same_iteration: Vec<String> = dims[..l].iter().map(|d| format!("{d} = 0")).collect();
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
    let mut coincident = Vec::with_capacity(n - l);
    for k in l..n {
        let mut cons: Vec<String> = dims[..k].iter().map(|d| format!("{d} = 0")).collect();
        cons.push(format!("({0} < 0 or {0} > 0)", dims[k]));
        let carried = deltas
            .copy()
            .isl("copying distances")?
            .intersect(set(&cons.join(" and "))?)
            .isl("testing a coincident member")?;
        coincident.push(carried.is_empty().isl("testing a coincident member")?);
    }
    let mut nonneg: Vec<String> = dims[l..].iter().map(|d| format!("{d} >= 0")).collect();
    nonneg.extend(same_iteration.iter().cloned());
    let within = if same_iteration.is_empty() {
        deltas
    } else {
        deltas
            .intersect(set(&same_iteration.join(" and "))?)
            .isl("restricting distances to one loop iteration")?
    };
    let permutable = within
        .is_subset(&set(&nonneg.join(" and "))?)
        .isl("testing permutability")?;
    Ok((coincident, permutable))
}
