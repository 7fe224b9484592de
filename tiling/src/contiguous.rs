//! Contiguous inner loops: a band member that walks the last index of the tensors below it
//! moves below the loops that walk their other indices.
//!
//! isl's scheduler puts the members it can run in parallel outermost, and a member that
//! only the loops written inside it depend on stays above them. PolyBench's gramschmidt
//! reads and writes a column of `A` per `j`: isl's band is `(k, j)` with the statements'
//! `i` loops below it, so the innermost loops walk `A(i, j)` down a column, 8 KB apart at
//! LARGE size, and the kernel runs at a tenth of Polly's speed. Moved below them, `j`
//! walks rows of `A` and `R`, and `Q(i, k)` is one value per row.
//!
//! For a band whose statements below walk, innermost, an index that is not the last one of
//! some tensor they touch (a *strided* access), this tries the schedule in which the band's
//! last member moves down to the leaves of the band's subtree:
//! - the band keeps its other members; below them, the member becomes a band of its own
//!   above each leaf, restricted to the leaf's statements, except where the outer members
//!   fix its value (one value, no loop);
//! - a set node whose children the member used to order (one child's values never above
//!   another's under the same outer loops) becomes a sequence in that order;
//! - the bands of the subtree get their coincident and permutable flags from the
//!   dependences again, since the member no longer separates their instances.
//!
//! The result is kept when it makes fewer strided innermost accesses (the accesses of
//! deeper statements first: they run more often) and respects every dependence (loop
//! distribution is not always legal, and the check decides). `--isl-option contiguous=0`
//! keeps isl's order.

use polyhedral::deps::{respects, Deps};
use polyhedral::isl::ffi::schedule_tree::multi_union_pw_aff_text;
use polyhedral::isl::isl_rs::{
    DimType, Map, MultiUnionPwAff, Schedule, ScheduleNode, Set, UnionMap, UnionPwAff, UnionSet,
};
use polyhedral::isl::{Ctx, IslResultExt};
use polyhedral::scop::Scop;
use schedule_tree::{Band, Node, NodeKind, ScheduleTree};

/// The most candidate schedules one compile tries.
const MAX_TRIES: usize = 16;

/// The statements (names) to which the default tiling policy gives register tiles or
/// accumulator rows under a tree.
pub type RegisterTiled<'a> = dyn Fn(&ScheduleTree) -> miette::Result<Vec<String>> + 'a;

/// `tree` with band members moved below inner loops where that makes the innermost loops
/// walk contiguous elements (see the module's doc), and one note per move; `None` where no
/// move helps. A band whose statements `register_tiled` names keeps the order of its
/// members (its register tiles order their accesses themselves); it is asked at most once.
pub fn contiguous_inner_loops(
    ctx: &Ctx,
    scop: &Scop,
    deps: &Deps,
    tree: &ScheduleTree,
    register_tiled: &RegisterTiled,
) -> miette::Result<Option<(ScheduleTree, Vec<String>)>> {
    let mut inner = innermost(scop, &tree.to_isl(ctx)?)?;
    if inner.iter().all(|i| i.strided == 0) {
        return Ok(None);
    }
    // The dependences, once, for the flags of every candidate's bands.
    let validity = deps
        .validity()?
        .intersect_params(scop.context.copy().isl("copying the context")?)
        .isl("restricting dependences")?;
    let mut tree = tree.clone();
    let mut notes = Vec::new();
    let mut tiled: Option<Vec<String>> = None;
    let mut tried = 0;
    'search: while tried < MAX_TRIES {
        for path in tree.bands() {
            if tried >= MAX_TRIES {
                break 'search;
            }
            let mut candidates =
                permuted_bands(ctx, scop, &validity, (&tree, &path), &inner, &mut || {
                    if tiled.is_none() {
                        tiled = Some(register_tiled(&tree)?);
                    }
                    Ok(tiled.clone().unwrap_or_default())
                })?;
            candidates.extend(sink_last_member(
                ctx, scop, &validity, &tree, &path, &inner,
            )?);
            let mut best: Option<(u128, ScheduleTree, Vec<Inner>)> = None;
            for candidate in candidates {
                tried += 1;
                let schedule = candidate.to_isl(ctx)?;
                let after = innermost(scop, &schedule)?;
                let c = cost(scop, &after);
                let better = best.as_ref().map_or(c < cost(scop, &inner), |b| c < b.0);
                if better && respects(deps, &schedule)? {
                    best = Some((c, candidate, after));
                }
            }
            if let Some((_, candidate, after)) = best {
                notes.push(note(scop, &inner, &after));
                tree = candidate;
                inner = after;
                continue 'search;
            }
        }
        break;
    }
    Ok((!notes.is_empty()).then_some((tree, notes)))
}

/// A statement's innermost loop under a schedule.
struct Inner {
    /// The iterators it moves.
    moving: Vec<usize>,
    /// How many of the statement's accesses (reads and the write) it moves along an index
    /// other than the tensor's last.
    strided: u32,
}

/// The note for one move.
fn note(scop: &Scop, before: &[Inner], after: &[Inner]) -> String {
    let names = |s: usize, iters: &[usize]| -> String {
        let v: Vec<&str> = iters
            .iter()
            .map(|&k| scop.iter_names[s][k].as_str())
            .collect();
        v.join(" and ")
    };
    let moved: Vec<String> = (0..before.len())
        .filter(|&s| after[s].strided < before[s].strided)
        .map(|s| {
            format!(
                "{} along {} instead of {}",
                scop.stmt_names[s],
                names(s, &after[s].moving),
                names(s, &before[s].moving)
            )
        })
        .collect();
    format!(
        "note: polyc moved a loop inward so that innermost loops walk the last index of the \
         tensors they touch: {} (--isl-option contiguous=0 keeps isl's order)",
        moved.join(", ")
    )
}

/// The weighted number of strided innermost accesses: a statement with more iterators
/// runs more often, so its accesses count 256 times those of a statement with one fewer.
fn cost(scop: &Scop, inner: &[Inner]) -> u128 {
    inner
        .iter()
        .enumerate()
        .map(|(s, i)| u128::from(i.strided) << (8 * scop.iter_names[s].len().min(12)))
        .sum()
}

/// Per statement, its innermost loop under `schedule`.
fn innermost(scop: &Scop, schedule: &Schedule) -> miette::Result<Vec<Inner>> {
    let map = schedule
        .get_map()
        .isl("reading the schedule map")?
        .intersect_domain(schedule.get_domain().isl("reading the schedule domain")?)
        .isl("restricting the schedule map")?;
    let mut out = Vec::with_capacity(scop.stmt_names.len());
    for s in 0..scop.stmt_names.len() {
        let dom = UnionSet::from_set(scop.stmt_domains[s].copy().isl("copying a domain")?)
            .isl("reading a domain")?;
        let m = map
            .copy()
            .isl("copying the schedule map")?
            .intersect_domain(dom)
            .isl("restricting the schedule map")?;
        if m.is_empty().isl("testing a statement's schedule")? {
            out.push(Inner {
                moving: Vec::new(),
                strided: 0,
            });
            continue;
        }
        let m = Map::from_union_map(m).isl("reading a statement's schedule")?;
        let moving = innermost_iterators(scop, s, m)?;
        let accesses = scop.stmt_reads[s]
            .iter()
            .chain(std::iter::once(&scop.stmt_writes[s]));
        let n = accesses
            .filter(|a| {
                let outer = a.index.len().saturating_sub(1);
                a.index[..outer]
                    .iter()
                    .any(|ix| moving.iter().any(|&k| ix.uses_iter(k)))
            })
            .count();
        out.push(Inner {
            moving,
            strided: n as u32,
        });
    }
    Ok(out)
}

/// The iterators of statement `s` that its innermost loop (the last schedule dimension
/// that is not constant on its instances) moves.
fn innermost_iterators(scop: &Scop, s: usize, m: Map) -> miette::Result<Vec<usize>> {
    let dom = m
        .copy()
        .isl("copying a schedule")?
        .domain()
        .isl("reading a domain")?;
    let n = m.dim(DimType::Out).isl("reading a schedule's dimensions")? as u32;
    let iters = m.dim(DimType::In).isl("reading a schedule's dimensions")? as usize;
    let iters = iters.min(scop.iter_names[s].len());
    let mut fallback = Vec::new();
    for d in (0..n).rev() {
        let one = m
            .copy()
            .isl("copying a schedule")?
            .project_out(DimType::Out, d + 1, n - d - 1)
            .isl("projecting a schedule")?
            .project_out(DimType::Out, 0, d)
            .isl("projecting a schedule")?
            .gist_domain(dom.copy().isl("copying a domain")?)
            .isl("simplifying a schedule dimension")?;
        let mut moving = Vec::new();
        for k in 0..iters {
            if one
                .involves_dims(DimType::In, k as u32, 1)
                .isl("testing a schedule dimension")?
            {
                moving.push(k);
            }
        }
        // A short loop (a pooling window's row) is unrolled by the C compiler: the loop
        // around it is the one that walks memory.
        let mut short = true;
        for &k in &moving {
            short &= is_short(scop, s, k)?;
        }
        if !moving.is_empty() && !short {
            return Ok(moving);
        }
        if !moving.is_empty() && fallback.is_empty() {
            fallback = moving;
        }
    }
    Ok(fallback)
}

/// The longest loop that counts as short: at most this many values.
const SHORT_LOOP: i64 = 8;

/// Whether iterator `k` of statement `s` takes at most [`SHORT_LOOP`] values, whatever the
/// sizes.
fn is_short(scop: &Scop, s: usize, k: usize) -> miette::Result<bool> {
    let dom = || -> miette::Result<Set> {
        scop.stmt_domains[s]
            .copy()
            .isl("copying a domain")?
            .intersect_params(scop.context.copy().isl("copying the context")?)
            .isl("restricting a domain")
    };
    let max = dom()?.dim_max_val(k as i32).isl("bounding an iterator")?;
    let min = dom()?.dim_min_val(k as i32).isl("bounding an iterator")?;
    let ints = max.is_int().isl("reading a bound")? && min.is_int().isl("reading a bound")?;
    if !ints {
        return Ok(false);
    }
    let max = max.get_num_si().isl("reading a bound")?;
    let min = min.get_num_si().isl("reading a bound")?;
    Ok(max - min < SHORT_LOOP)
}

/// The isl node at `path` (child positions from the root) of `schedule`.
fn isl_node_at(schedule: &Schedule, path: &[usize]) -> miette::Result<ScheduleNode> {
    let mut node = schedule.get_root().isl("reading the schedule root")?;
    for &i in path {
        node = node.child(i as i32).isl("reading a child")?;
    }
    Ok(node)
}

/// The statements (indices) with instances in `set`.
fn statements_in(scop: &Scop, set: &UnionSet) -> miette::Result<Vec<usize>> {
    let mut out = Vec::new();
    for s in 0..scop.stmt_names.len() {
        let part = set
            .extract_set(scop.stmt_space(s)?)
            .isl("reading a statement's instances")?;
        if !part.is_empty().isl("testing a statement's instances")? {
            out.push(s);
        }
    }
    Ok(out)
}

/// The band at `path` with its last member moved to the leaves of its subtree, if the
/// band has a band below it and a statement below it has strided innermost accesses.
fn sink_last_member(
    ctx: &Ctx,
    scop: &Scop,
    validity: &UnionMap,
    tree: &ScheduleTree,
    path: &[usize],
    inner: &[Inner],
) -> miette::Result<Option<ScheduleTree>> {
    let Some(node) = tree.node_at(path) else {
        return Ok(None);
    };
    let NodeKind::Band(band) = &node.kind else {
        return Ok(None);
    };
    let below = node.children[0].preorder();
    if band.ast_options.is_some() || !below.iter().any(|n| matches!(n.kind, NodeKind::Band(_))) {
        return Ok(None);
    }
    let Some((mupa, stmts)) = strided_band(ctx, scop, band, inner)? else {
        return Ok(None);
    };
    let n = band.n_members();
    let member = mupa
        .get_union_pw_aff(n as i32 - 1)
        .isl("reading a band member")?;
    let isl = tree.to_isl(ctx)?;
    let outer = outer_schedule(&isl_node_at(&isl, path)?, &mupa, n)?;
    let fixed = fixed_statements(scop, &stmts, &outer, &member)?;
    let reach = member
        .copy()
        .isl("copying a member")?
        .domain()
        .isl("reading a domain")?;
    let sunk = sink(ctx, scop, &node.children[0], &member, reach, &fixed)?;
    let mut new_tree = tree.clone();
    let (replacement, sunk_path) = if n >= 2 {
        let kept = mupa
            .drop_dims(DimType::Out, n as u32 - 1, 1)
            .isl("dropping a band member")?;
        let kept = Band {
            schedule: text(&kept)?,
            permutable: band.permutable,
            coincident: band.coincident[..n - 1].to_vec(),
            ast_options: None,
        };
        let mut p = path.to_vec();
        p.push(0);
        (Node::with_child(NodeKind::Band(kept), sunk), p)
    } else {
        (sunk, path.to_vec())
    };
    *new_tree.node_at_mut(path).ok_or_else(|| lost_path(path))? = replacement;
    order_sets(ctx, scop, &mut new_tree, &sunk_path, &member)?;
    refresh_flags(ctx, scop, validity, &mut new_tree, &sunk_path)?;
    Ok(Some(new_tree))
}

/// The internal error for a node path that a rewrite lost.
fn lost_path(path: &[usize]) -> miette::Report {
    miette::miette!(
        "internal error: no schedule-tree node at path {path:?} while moving a band member"
    )
}

/// The permutable band at `path` with each of its other members moved last, one tree
/// per member, if a statement of the band has strided innermost accesses. A band with a
/// statement that `register_tiled` names keeps its order: its register tiles (or
/// accumulator rows) choose their own order of memory accesses.
fn permuted_bands(
    ctx: &Ctx,
    scop: &Scop,
    validity: &UnionMap,
    (tree, path): (&ScheduleTree, &[usize]),
    inner: &[Inner],
    register_tiled: &mut dyn FnMut() -> miette::Result<Vec<String>>,
) -> miette::Result<Vec<ScheduleTree>> {
    let Some(Node {
        kind: NodeKind::Band(band),
        ..
    }) = tree.node_at(path)
    else {
        return Ok(Vec::new());
    };
    let n = band.n_members();
    if !band.permutable || n < 2 || band.ast_options.is_some() {
        return Ok(Vec::new());
    }
    let Some((mupa, stmts)) = strided_band(ctx, scop, band, inner)? else {
        return Ok(Vec::new());
    };
    let tiled = register_tiled()?;
    if stmts.iter().any(|&s| tiled.contains(&scop.stmt_names[s])) {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for m in 0..n - 1 {
        let order: Vec<usize> = (0..n)
            .filter(|&k| k != m)
            .chain(std::iter::once(m))
            .collect();
        let mut permuted = mupa.copy().isl("copying a band")?;
        for (pos, &k) in order.iter().enumerate() {
            let upa = mupa
                .get_union_pw_aff(k as i32)
                .isl("reading a band member")?;
            permuted = permuted
                .set_union_pw_aff(pos as i32, upa)
                .isl("permuting a band")?;
        }
        let mut t = tree.clone();
        if let Some(Node {
            kind: NodeKind::Band(b),
            ..
        }) = t.node_at_mut(path)
        {
            b.schedule = text(&permuted)?;
        }
        refresh_flags(ctx, scop, validity, &mut t, path)?;
        out.push(t);
    }
    Ok(out)
}

/// The band's schedule and its statements, if one of them has strided innermost accesses.
fn strided_band(
    ctx: &Ctx,
    scop: &Scop,
    band: &Band,
    inner: &[Inner],
) -> miette::Result<Option<(MultiUnionPwAff, Vec<usize>)>> {
    let mupa = MultiUnionPwAff::read_from_str(&ctx.isl, &band.schedule)
        .isl("reading a band's schedule")?;
    let domain = mupa
        .copy()
        .isl("copying a band")?
        .domain()
        .isl("reading a band's domain")?;
    let stmts = statements_in(scop, &domain)?;
    if stmts.iter().all(|&s| inner[s].strided == 0) {
        return Ok(None);
    }
    Ok(Some((mupa, stmts)))
}

/// isl's text of `mupa`.
fn text(mupa: &MultiUnionPwAff) -> miette::Result<String> {
    multi_union_pw_aff_text(mupa)
        .ok_or_else(|| miette::miette!("isl could not print a band's partial schedule"))
}

/// The schedule above the member: the prefix schedule of the band at `node` followed by
/// the band's first `n - 1` members (of `mupa`), as a union map from the instances.
fn outer_schedule(
    node: &ScheduleNode,
    mupa: &MultiUnionPwAff,
    n: usize,
) -> miette::Result<UnionMap> {
    let prefix = node
        .get_prefix_schedule_union_map()
        .isl("reading a prefix schedule")?;
    if n < 2 {
        return Ok(prefix);
    }
    let kept = mupa
        .copy()
        .isl("copying a band")?
        .drop_dims(DimType::Out, n as u32 - 1, 1)
        .isl("dropping a band member")?;
    let kept = UnionMap::from_multi_union_pw_aff(kept).isl("reading a band as a map")?;
    prefix
        .flat_range_product(kept)
        .isl("appending a band to its prefix")
}

/// The statements of `stmts` whose value along `member` the outer schedule fixes.
fn fixed_statements(
    scop: &Scop,
    stmts: &[usize],
    outer: &UnionMap,
    member: &UnionPwAff,
) -> miette::Result<Vec<usize>> {
    let member = UnionMap::from_union_pw_aff(member.copy().isl("copying a member")?)
        .isl("reading a member as a map")?;
    let mut out = Vec::new();
    for &s in stmts {
        let dom = UnionSet::from_set(
            scop.stmt_domains[s]
                .copy()
                .isl("copying a domain")?
                .intersect_params(scop.context.copy().isl("copying the context")?)
                .isl("restricting a domain")?,
        )
        .isl("reading a domain")?;
        let o = outer
            .copy()
            .isl("copying a schedule")?
            .intersect_domain(dom.copy().isl("copying a domain")?)
            .isl("restricting a schedule")?;
        let m = member
            .copy()
            .isl("copying a member")?
            .intersect_domain(dom)
            .isl("restricting a member")?;
        let by_outer = o
            .reverse()
            .isl("reversing a schedule")?
            .apply_range(m)
            .isl("relating a member to its outer loops")?;
        if by_outer.is_single_valued().isl("testing a member")? {
            out.push(s);
        }
    }
    Ok(out)
}

/// `node`'s subtree with a band of `member` (restricted to the instances that reach it)
/// above every leaf that has a statement whose value the outer loops leave free.
fn sink(
    ctx: &Ctx,
    scop: &Scop,
    node: &Node,
    member: &UnionPwAff,
    reach: UnionSet,
    fixed: &[usize],
) -> miette::Result<Node> {
    match &node.kind {
        NodeKind::Leaf => {
            let stmts = statements_in(scop, &reach)?;
            if stmts.iter().all(|s| fixed.contains(s)) {
                return Ok(Node::leaf());
            }
            let part = member
                .copy()
                .isl("copying a member")?
                .intersect_domain(reach)
                .isl("restricting a member")?;
            let mupa = MultiUnionPwAff::from_union_pw_aff(part).isl("reading a member")?;
            Ok(Node::with_child(
                NodeKind::Band(Band::new(text(&mupa)?, 1)),
                Node::leaf(),
            ))
        }
        kind => {
            let reach = match kind {
                NodeKind::Filter { filter } => reach
                    .intersect(UnionSet::read_from_str(&ctx.isl, filter).isl("reading a filter")?)
                    .isl("restricting to a filter")?,
                _ => reach,
            };
            let mut children = Vec::with_capacity(node.children.len());
            for c in &node.children {
                let r = reach.copy().isl("copying instances")?;
                children.push(sink(ctx, scop, c, member, r, fixed)?);
            }
            Ok(Node::new(kind.clone(), children))
        }
    }
}

/// Turns every set node below `path` whose children `member` orders (under the same outer
/// loops, no value of one child above a value of the next) into a sequence in that order.
fn order_sets(
    ctx: &Ctx,
    scop: &Scop,
    tree: &mut ScheduleTree,
    path: &[usize],
    member: &UnionPwAff,
) -> miette::Result<()> {
    let sets = paths_below(tree, path, &|k| matches!(k, NodeKind::Set));
    if sets.is_empty() {
        return Ok(());
    }
    let isl = tree.to_isl(ctx)?;
    let member = UnionMap::from_union_pw_aff(member.copy().isl("copying a member")?)
        .isl("reading a member as a map")?;
    // Deepest first: reordering a set's children moves the paths below it.
    for p in sets.into_iter().rev() {
        let node = isl_node_at(&isl, &p)?;
        let prefix = node
            .get_prefix_schedule_union_map()
            .isl("reading a prefix schedule")?;
        let here = member
            .copy()
            .isl("copying a member")?
            .intersect_domain(node.get_domain().isl("reading a node's instances")?)
            .isl("restricting a member")?;
        let set = tree.node_at(&p).ok_or_else(|| lost_path(&p))?;
        let filters: Vec<UnionSet> = set
            .children
            .iter()
            .map(|c| match &c.kind {
                NodeKind::Filter { filter } => {
                    UnionSet::read_from_str(&ctx.isl, filter).isl("reading a filter")
                }
                _ => Err(miette::miette!("a set's child is not a filter")),
            })
            .collect::<miette::Result<_>>()?;
        let Some(order) = member_order(ctx, scop, &prefix, &here, &filters)? else {
            continue;
        };
        let set = tree.node_at_mut(&p).ok_or_else(|| lost_path(&p))?;
        let mut slots: Vec<Option<Node>> = std::mem::take(&mut set.children)
            .into_iter()
            .map(Some)
            .collect();
        set.children = order.iter().filter_map(|&i| slots[i].take()).collect();
        set.kind = NodeKind::Sequence;
    }
    Ok(())
}

/// An order of the children (`filters`) in which, under equal `prefix`, no child takes a
/// value of `member` above a later child's; `None` where there is none.
fn member_order(
    ctx: &Ctx,
    scop: &Scop,
    prefix: &UnionMap,
    member: &UnionMap,
    filters: &[UnionSet],
) -> miette::Result<Option<Vec<usize>>> {
    let n = filters.len();
    let mut before = vec![vec![true; n]; n];
    let negative = Set::read_from_str(
        &ctx.isl,
        &format!("{}{{ [d] : d < 0 }}", scop.param_prefix()),
    )
    .isl("reading a condition")?;
    let negative = UnionSet::from_set(negative).isl("reading a condition")?;
    let restrict = |m: &UnionMap, f: &UnionSet| -> miette::Result<UnionMap> {
        m.copy()
            .isl("copying a map")?
            .intersect_domain(f.copy().isl("copying a filter")?)
            .isl("restricting to a filter")
    };
    for a in 0..n {
        for b in 0..n {
            if a == b {
                continue;
            }
            let pairs = restrict(prefix, &filters[a])?
                .apply_range(restrict(prefix, &filters[b])?.reverse().isl("reversing")?)
                .isl("pairing instances under equal outer loops")?;
            let values = restrict(member, &filters[a])?
                .reverse()
                .isl("reversing a member")?
                .apply_range(pairs)
                .isl("relating values")?
                .apply_range(restrict(member, &filters[b])?)
                .isl("relating values")?
                .deltas()
                .isl("comparing values")?;
            let later_below = values
                .intersect(negative.copy().isl("copying a condition")?)
                .isl("comparing values")?;
            before[a][b] = later_below.is_empty().isl("comparing values")?;
        }
    }
    let mut left: Vec<usize> = (0..n).collect();
    let mut order = Vec::with_capacity(n);
    while !left.is_empty() {
        let Some(k) = left
            .iter()
            .position(|&a| left.iter().all(|&b| a == b || before[a][b]))
        else {
            return Ok(None);
        };
        order.push(left.remove(k));
    }
    Ok(Some(order))
}

/// The paths of the nodes at or below `path` whose kind `pred` accepts, in pre-order.
fn paths_below(
    tree: &ScheduleTree,
    path: &[usize],
    pred: &dyn Fn(&NodeKind) -> bool,
) -> Vec<Vec<usize>> {
    tree.find(pred)
        .into_iter()
        .filter(|p| p.starts_with(path))
        .collect()
}

/// Sets the coincident and permutable flags of every band below `path` from the
/// dependences (`validity`, restricted to the context).
fn refresh_flags(
    ctx: &Ctx,
    scop: &Scop,
    validity: &UnionMap,
    tree: &mut ScheduleTree,
    path: &[usize],
) -> miette::Result<()> {
    let bands = paths_below(tree, path, &|k| matches!(k, NodeKind::Band(_)));
    if bands.is_empty() {
        return Ok(());
    }
    let isl = tree.to_isl(ctx)?;
    for p in bands {
        let node = isl_node_at(&isl, &p)?;
        let prefix = node
            .get_prefix_schedule_union_map()
            .isl("reading a prefix schedule")?;
        let partial = node
            .band_get_partial_schedule_union_map()
            .isl("reading a band's schedule")?;
        let Some(Node {
            kind: NodeKind::Band(band),
            ..
        }) = tree.node_at_mut(&p)
        else {
            continue;
        };
        let n = band.n_members();
        let (permutable, coincident) =
            polyhedral::sched::band_flags(ctx, scop, validity, &prefix, &partial, n)?;
        band.permutable = permutable;
        band.coincident = coincident;
    }
    Ok(())
}
