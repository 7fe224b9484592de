//! Phases that isl's scheduler fused into one band by shifting them apart run one after
//! the other again.
//!
//! isl fuses statements greedily. Where a row's statistic is reduced over `j` and then used
//! over the same `j` (layer norm: the mean, then the variance, then the normalised row),
//! the only fusion of the `j` loops that keeps the dependences shifts each phase past the
//! end of the one before: `S_1 -> (r, j)`, `S_3 -> (r, 2047 + j)`, `S_4 -> (r, 4094 + j)`.
//! The band is permutable, so tiling cuts its shifted member into tiles that straddle the
//! phases, and the guards and partial tiles that follow cost 5–10× on layer norm written
//! without temporaries.
//!
//! For such a band, this splits the band after the outer members and runs the phases in
//! sequence below them, each with its own band over the remaining members, shifted back to
//! start at 0 where its start is a constant:
//! - the statements' values along a member `m ≥ 1` are compared over all their instances:
//!   a statement comes before another when none of its values is larger than any of the
//!   other's, and not the reverse; statements that neither precedes form one phase;
//! - the split applies when every member above `m` is coincident (the phases then run
//!   one row at a time under parallel loops), the phases are totally ordered that way,
//!   every statement that sweeps walks along `m` only through the last index of the
//!   tensors it touches (a phase that walks a column, such as correlation's column
//!   statistics, keeps the blocking of isl's tiled band), and at least two of them sweep (take more than one value along `m`): a statement at one point, such as
//!   an initialisation at `0` before a reduction, is no reason to split (a GEMM's band
//!   stays whole);
//! - for a fixed value of the outer members, the new order runs every instance of one
//!   phase before the next, as the shifted member did; where two phases meet at one value,
//!   the order below the band decided, so the result is checked against every dependence
//!   and kept only where it holds;
//! - the phases' bands get their coincident flags from the dependences between their own
//!   instances; a phase whose statements take one value only gets no band.
//!
//! `--isl-option phases=0` keeps isl's band.

use crate::deps::{respects, Deps};
use crate::isl::{Ctx, IslResultExt};
use crate::scop::Scop;
use isl_rs::{
    DimType, Map, MultiUnionPwAff, Schedule, ScheduleNode, ScheduleNodeType, Set, UnionMap,
    UnionSet, UnionSetList,
};

/// One band's split: the member it splits before, and its phases in order (statement
/// indices).
struct Plan {
    member: usize,
    phases: Vec<Vec<usize>>,
}

/// `schedule` with every band of shifted phases split (see the module's doc), and one note
/// per split, or `None` where no band is of that kind.
pub fn split_phases(
    ctx: &Ctx,
    scop: &Scop,
    deps: &Deps,
    schedule: &Schedule,
) -> miette::Result<Option<(Schedule, Vec<String>)>> {
    let root = schedule.get_root().isl("reading the schedule root")?;
    let mut notes = Vec::new();
    let root = visit(ctx, scop, deps, root, &mut notes)?;
    if notes.is_empty() {
        return Ok(None);
    }
    let split = root.get_schedule().isl("reading the split schedule")?;
    Ok(Some((split, notes)))
}

/// Splits the band at `node` where it applies, then the bands below; returns the node at
/// the same position.
fn visit(
    ctx: &Ctx,
    scop: &Scop,
    deps: &Deps,
    node: ScheduleNode,
    notes: &mut Vec<String>,
) -> miette::Result<ScheduleNode> {
    let mut node = node;
    if node.get_type().isl("reading a node type")? == ScheduleNodeType::Band {
        if let Some(plan) = phase_plan(scop, &node)? {
            let before = node.copy().isl("copying a band")?;
            let after = apply(ctx, scop, deps, node, &plan)?;
            let s = after.get_schedule().isl("reading a split schedule")?;
            if respects(deps, &s)? {
                notes.push(note(scop, &plan));
                node = after;
            } else {
                node = before;
            }
        }
    }
    for i in 0..node.n_children().isl("reading a node")? {
        let child = node.child(i).isl("reading a child")?;
        node = visit(ctx, scop, deps, child, notes)?
            .parent()
            .isl("returning to a parent")?;
    }
    Ok(node)
}

/// The note for one split.
fn note(scop: &Scop, plan: &Plan) -> String {
    let phases: Vec<String> = plan
        .phases
        .iter()
        .map(|p| {
            let names: Vec<&str> = p.iter().map(|&s| scop.stmt_names[s].as_str()).collect();
            names.join(" ")
        })
        .collect();
    let outer = match plan.member {
        1 => "its parallel outer member".to_string(),
        m => format!("its {m} parallel outer members"),
    };
    format!(
        "note: isl's schedule fused {} phases into one band by shifting them apart along its member {} \
         ({}); polyc runs them one after the other below {outer} (--isl-option phases=0 keeps isl's band)",
        plan.phases.len(),
        plan.member,
        phases.join(", then ")
    )
}

/// The split of the band at `node`, if one applies: the first member with ordered phases.
fn phase_plan(scop: &Scop, node: &ScheduleNode) -> miette::Result<Option<Plan>> {
    let n = node.band_n_member().isl("reading a band")? as usize;
    if n < 2 {
        return Ok(None);
    }
    let domain = node.get_domain().isl("reading a band's domain")?;
    let partial = node
        .band_get_partial_schedule()
        .isl("reading a band's schedule")?;
    let instances = statement_instances(scop, &domain)?;
    for m in 1..n {
        // The members above the split must be parallel: the phases then run row by row
        // under a parallel loop (a sequential outer member is left to isl's band).
        if !node
            .band_member_get_coincident(m as i32 - 1)
            .isl("reading a coincident flag")?
        {
            break;
        }
        let upa = partial
            .get_union_pw_aff(m as i32)
            .isl("reading a band member")?;
        let member = UnionMap::from_union_pw_aff(upa)
            .isl("reading a band member")?
            .intersect_domain(domain.copy().isl("copying a domain")?)
            .isl("restricting a band member")?;
        let ranges = statement_ranges(scop, &instances, &member)?;
        if ranges.len() < 2 {
            continue;
        }
        let Some(phases) = ordered_phases(&ranges)? else {
            continue;
        };
        let mut sweeping = 0;
        let mut contiguous = true;
        for p in &phases {
            let mut sweeps = false;
            for &k in p {
                if !ranges[k].1.is_singleton().isl("testing a range")? {
                    sweeps = true;
                    contiguous &= sweeps_rows(scop, &instances[k], &member)?;
                }
            }
            sweeping += usize::from(sweeps);
        }
        if sweeping >= 2 && contiguous {
            let phases = phases
                .into_iter()
                .map(|p| p.into_iter().map(|k| ranges[k].0).collect())
                .collect();
            return Ok(Some(Plan { member: m, phases }));
        }
    }
    Ok(None)
}

/// Whether statement `s` walks along the member (`member`, over `domain`) only through
/// the last index of each tensor it reads or writes: a phase that walks a column would
/// lose the blocking along the outer members that isl's tiled band gave it.
fn sweeps_rows(scop: &Scop, instances: &(usize, Set), member: &UnionMap) -> miette::Result<bool> {
    let (s, d) = (instances.0, &instances.1);
    // (The domain's own constraints are dropped: they involve every iterator.)
    let map = Map::from_union_map(
        member
            .copy()
            .isl("copying a band member")?
            .intersect_domain(
                UnionSet::from_set(d.copy().isl("copying a statement's instances")?)
                    .isl("reading a statement's instances")?,
            )
            .isl("restricting a band member")?,
    )
    .isl("reading a statement's member")?
    .gist_domain(d.copy().isl("copying a statement's instances")?)
    .isl("simplifying a statement's member")?;
    let mut moving = Vec::new();
    for k in 0..scop.iter_names[s].len() {
        if map
            .involves_dims(DimType::In, k as u32, 1)
            .isl("testing a member's iterators")?
        {
            moving.push(k);
        }
    }
    let accesses = scop.stmt_reads[s]
        .iter()
        .chain(std::iter::once(&scop.stmt_writes[s]));
    for a in accesses {
        let outer = a.index.len().saturating_sub(1);
        if a.index[..outer]
            .iter()
            .any(|ix| moving.iter().any(|&k| ix.uses_iter(k)))
        {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Per statement that reaches the band (in statement order): its index and its instances
/// in `domain`.
fn statement_instances(scop: &Scop, domain: &UnionSet) -> miette::Result<Vec<(usize, Set)>> {
    let mut out = Vec::new();
    for i in 0..scop.stmt_names.len() {
        let d = domain
            .extract_set(scop.stmt_space(i)?)
            .isl("reading a statement's instances")?;
        if !d.is_empty().isl("testing a statement's instances")? {
            out.push((i, d));
        }
    }
    Ok(out)
}

/// Per statement of `instances` (same order): its index and its values along the member.
fn statement_ranges(
    scop: &Scop,
    instances: &[(usize, Set)],
    member: &UnionMap,
) -> miette::Result<Vec<(usize, Set)>> {
    let mut out = Vec::new();
    for (i, d) in instances {
        let d = d.copy().isl("copying a statement's instances")?;
        let values = member
            .copy()
            .isl("copying a band member")?
            .intersect_domain(UnionSet::from_set(d).isl("reading a statement's instances")?)
            .isl("restricting a band member")?
            .range()
            .isl("reading a statement's values")?;
        let values = Set::from_union_set(values)
            .isl("reading a statement's values")?
            .intersect_params(scop.context.copy().isl("copying the context")?)
            .isl("restricting a statement's values")?;
        out.push((*i, values));
    }
    Ok(out)
}

/// The phases of `ranges` (positions in it) in order, or `None` when they are not totally
/// ordered or there is one only.
fn ordered_phases(ranges: &[(usize, Set)]) -> miette::Result<Option<Vec<Vec<usize>>>> {
    let n = ranges.len();
    // at_most[a][b]: no value of a is larger than a value of b.
    let mut at_most = vec![vec![true; n]; n];
    for a in 0..n {
        for b in 0..n {
            if a != b {
                let larger = ranges[a]
                    .1
                    .copy()
                    .isl("copying a range")?
                    .lex_gt_set(ranges[b].1.copy().isl("copying a range")?)
                    .isl("comparing ranges")?;
                at_most[a][b] = larger.is_empty().isl("comparing ranges")?;
            }
        }
    }
    let precedes = |a: usize, b: usize| at_most[a][b] && !at_most[b][a];
    // Statements that neither precedes share a phase (union-find by smallest index).
    let mut phase_of: Vec<usize> = (0..n).collect();
    for a in 0..n {
        for b in a + 1..n {
            if !precedes(a, b) && !precedes(b, a) {
                let (pa, pb) = (phase_of[a], phase_of[b]);
                for p in phase_of.iter_mut() {
                    if *p == pb {
                        *p = pa;
                    }
                }
            }
        }
    }
    let mut phases: Vec<Vec<usize>> = Vec::new();
    for p in 0..n {
        let members: Vec<usize> = (0..n).filter(|&k| phase_of[k] == p).collect();
        if !members.is_empty() {
            phases.push(members);
        }
    }
    if phases.len() < 2 {
        return Ok(None);
    }
    // Every pair of phases must be ordered the same way for all their statements.
    let before = |x: &[usize], y: &[usize]| x.iter().all(|&a| y.iter().all(|&b| precedes(a, b)));
    for (i, x) in phases.iter().enumerate() {
        for y in &phases[i + 1..] {
            if !before(x, y) && !before(y, x) {
                return Ok(None);
            }
        }
    }
    let ranks: Vec<usize> = phases
        .iter()
        .map(|x| phases.iter().filter(|y| before(y, x)).count())
        .collect();
    let mut ordered: Vec<(usize, Vec<usize>)> = ranks.into_iter().zip(phases).collect();
    ordered.sort_by_key(|(rank, _)| *rank);
    Ok(Some(ordered.into_iter().map(|(_, p)| p).collect()))
}

/// The band at `node` split as `plan` says; returns the node at the outer band.
fn apply(
    ctx: &Ctx,
    scop: &Scop,
    deps: &Deps,
    node: ScheduleNode,
    plan: &Plan,
) -> miette::Result<ScheduleNode> {
    let n = node.band_n_member().isl("reading a band")? as usize;
    let domain = node.get_domain().isl("reading a band's domain")?;
    let mut filters = UnionSetList::alloc(&ctx.isl, plan.phases.len() as i32)
        .isl("building the phases' filters")?;
    for phase in &plan.phases {
        filters = filters
            .add(phase_instances(scop, &domain, phase)?)
            .isl("building the phases' filters")?;
    }
    let outer = node
        .band_split(plan.member as i32)
        .isl("splitting a band")?;
    let mut seq = outer
        .child(0)
        .isl("reading the inner band")?
        .insert_sequence(filters)
        .isl("inserting the phases")?;
    let validity = deps.validity()?;
    for (i, phase) in plan.phases.iter().enumerate() {
        let band = seq
            .child(i as i32)
            .isl("reading a phase")?
            .child(0)
            .isl("reading a phase's band")?;
        let band = phase_band(ctx, scop, &validity, band, phase, n - plan.member)?;
        seq = band
            .parent()
            .isl("returning to a phase")?
            .parent()
            .isl("returning to the phases")?;
    }
    seq.parent().isl("returning to the outer band")
}

/// The instances of `phase`'s statements in `domain`.
fn phase_instances(scop: &Scop, domain: &UnionSet, phase: &[usize]) -> miette::Result<UnionSet> {
    let mut out: Option<UnionSet> = None;
    for &s in phase {
        let d = UnionSet::from_set(
            domain
                .extract_set(scop.stmt_space(s)?)
                .isl("reading a statement's instances")?,
        )
        .isl("reading a statement's instances")?;
        out = Some(match out {
            Some(u) => u.union(d).isl("joining a phase's instances")?,
            None => d,
        });
    }
    out.ok_or_else(|| miette::miette!("a phase without statements"))
}

/// A phase's band (`members` members): shifted to start at 0 along its first member where
/// that start is a constant, with its coincident flags from `validity`; removed where
/// every statement of the phase takes one value along it. Returns the node at the band's
/// position.
fn phase_band(
    ctx: &Ctx,
    scop: &Scop,
    validity: &UnionMap,
    band: ScheduleNode,
    phase: &[usize],
    members: usize,
) -> miette::Result<ScheduleNode> {
    let domain = band.get_domain().isl("reading a phase's domain")?;
    let values = band
        .band_get_partial_schedule_union_map()
        .isl("reading a phase's schedule")?
        .intersect_domain(domain)
        .isl("restricting a phase's schedule")?
        .range()
        .isl("reading a phase's values")?;
    let values = Set::from_union_set(values)
        .isl("reading a phase's values")?
        .intersect_params(scop.context.copy().isl("copying the context")?)
        .isl("restricting a phase's values")?;
    if values.is_singleton().isl("testing a phase's values")? {
        return band.delete().isl("removing a phase's band");
    }
    let start = values
        .copy()
        .isl("copying a phase's values")?
        .project_out(DimType::Set, 1, members as u32 - 1)
        .isl("projecting a phase's values")?
        .dim_min_val(0)
        .isl("reading a phase's start")?;
    let mut band = band;
    if start.is_int().isl("reading a phase's start")? {
        let c = start.get_num_si().isl("reading a phase's start")?;
        if c != 0 {
            band = band
                .band_shift(shift(ctx, scop, phase, members, -c)?)
                .isl("shifting a phase's band")?;
        }
    }
    let flags = coincident_members(ctx, scop, validity, &band, members)?;
    for (k, c) in flags.into_iter().enumerate() {
        band = band
            .band_member_set_coincident(k as i32, i32::from(c))
            .isl("setting a coincident flag")?;
    }
    Ok(band)
}

/// The shift by `by` along the first of `members` members for `phase`'s statements.
fn shift(
    ctx: &Ctx,
    scop: &Scop,
    phase: &[usize],
    members: usize,
    by: i64,
) -> miette::Result<MultiUnionPwAff> {
    let member = |v: i64| {
        let parts: Vec<String> = phase
            .iter()
            .map(|&s| {
                format!(
                    "{}[{}] -> [({v})]",
                    scop.stmt_names[s],
                    scop.iter_names[s].join(", ")
                )
            })
            .collect();
        format!("{{ {} }}", parts.join("; "))
    };
    let mut all = vec![member(by)];
    all.extend((1..members).map(|_| member(0)));
    // (isl reads a multi_union_pw_aff without parameters only without the `[] ->`.)
    let prefix = scop.param_prefix();
    let prefix = if prefix.starts_with("[]") {
        ""
    } else {
        prefix.as_str()
    };
    let text = format!("{prefix}[{}]", all.join(", "));
    MultiUnionPwAff::read_from_str(&ctx.isl, &text).isl(&format!("reading `{text}`"))
}

/// Per member of the band at `node`: whether no dependence between two of its instances
/// that agree on the outer schedule and on the band's earlier members has a non-zero
/// distance along it.
fn coincident_members(
    ctx: &Ctx,
    scop: &Scop,
    validity: &UnionMap,
    node: &ScheduleNode,
    members: usize,
) -> miette::Result<Vec<bool>> {
    let domain = node.get_domain().isl("reading a band's domain")?;
    let prefix = node
        .get_prefix_schedule_union_map()
        .isl("reading a prefix schedule")?;
    let partial = node
        .band_get_partial_schedule_union_map()
        .isl("reading a band schedule")?
        .intersect_domain(domain)
        .isl("restricting a band schedule")?;
    let dist = crate::sched::band_distances(validity, &prefix, &partial)?;
    let mut out = Vec::with_capacity(members);
    for k in 0..members {
        out.push(!crate::sched::carried_at(ctx, scop, &dist, k, members)?);
    }
    Ok(out)
}
