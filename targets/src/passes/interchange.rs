//! Point-loop interchange for vectorisation: inside a tile, make the innermost loop one
//! that the C compiler can vectorise.
//!
//! [`sink_vectorizable_members`] visits every band that is the direct child of a memory
//! mark (`mem:L1`, `mem:L2`, …: the point band of a tiling level) and is permutable. For
//! each member it finds, per statement of the band, the member's direction in the
//! statement's iteration space (the member must be one affine piece per statement) and
//! classifies every access of the statement along that direction: *invariant* (the
//! address does not change), *contiguous* (only the last index changes, by ±1) or
//! *strided*. A member is **vectorisable** when it is coincident (no dependence is carried
//! by it) and no access is strided along it. Its cost is the number of accesses that move
//! along it (the written tensor counts twice: it is read and written), strided ones eight
//! times over.
//!
//! When some member is vectorisable, the cheapest one (the innermost on ties) becomes the
//! band's last member; the others keep their order. Any permutation of a permutable band
//! is legal, so the schedule's meaning is unchanged. Bands not directly under a memory
//! mark (in particular the band under a `parallel` mark, whose first member carries the
//! parallel loop) are never touched.
//!
//! For `C(i, j) += A(i, k) * B(k, j)` tiled as `(i, j, k)` the point band becomes
//! `(i, k, j)`: `j` moves `C` and `B` contiguously and leaves `A` invariant.
//!
//! A point band is a band below a memory mark with no other band in between (extension,
//! sequence, set and filter nodes may be, as promotion and fusion insert them). Below a
//! register-file mark (`mem:reg`) whose tiles are promoted (copy statements in the
//! extension right below it), the members along which no promoted tensor moves (the
//! reduction loops of a register tile) also move outermost, so that the register tile
//! stays in registers across them: the GEMM point band becomes `(k, i, j)`.

use isl_rs::{DimType, MultiUnionPwAff, Schedule, ScheduleNode, ScheduleNodeType};
use miette::{miette, Result};
use polyhedral::ir::{Aff, Program};
use polyhedral::isl::ffi::schedule_tree::multi_union_pw_aff_text;
use polyhedral::isl::{Ctx, IslResultExt};
use schedule_tree::mark::Mark;
use schedule_tree::{level_of, Level, NodeKind, ScheduleTree};

/// Returns `schedule` with the point band of every memory mark permuted so that its
/// innermost member is the cheapest vectorisable one (see the module documentation).
/// Bands without a vectorisable member, or whose members are not affine per statement,
/// are left as they are.
pub fn sink_vectorizable_members(
    ctx: &Ctx,
    prog: &Program,
    schedule: &Schedule,
    levels: &[Level],
) -> Result<Schedule> {
    let root = schedule.get_root().isl("reading the schedule's root")?;
    let mut plans = Vec::new();
    visit(prog, levels, &root, None, &mut Vec::new(), &mut plans)?;
    if plans.is_empty() {
        return schedule.copy().isl("copying the schedule");
    }
    // Bands below extension nodes cannot be replaced in isl's tree ("anchored"), so the
    // permutations are applied to the typed tree.
    let mut tree = ScheduleTree::from_isl(schedule)?;
    for p in &plans {
        apply(ctx, &mut tree, p)?;
    }
    tree.to_isl(ctx)
}

/// A change to one band: its new member order (old member per new position), and
/// whether every member is generated in separate pieces (a register tile).
struct Plan {
    path: Vec<usize>,
    /// The band's schedule depth (outer band members above it).
    depth: usize,
    order: Vec<i32>,
    separate: bool,
}

fn apply(ctx: &Ctx, tree: &mut ScheduleTree, p: &Plan) -> Result<()> {
    let Some(node) = tree.node_at_mut(&p.path) else {
        return Err(miette!("internal error: a point band moved"));
    };
    permute_band(ctx, node, p.depth, &p.order)?;
    let NodeKind::Band(band) = &mut node.kind else {
        return Err(miette!("internal error: a point band is not a band"));
    };
    if p.separate {
        let members: Vec<String> = (0..p.order.len())
            .map(|m| format!("separate[{m}]"))
            .collect();
        band.ast_options = Some(format!("{{ {} }}", members.join("; ")));
    }
    Ok(())
}

/// Permutes the members of the band `node` (at schedule depth `depth`): new member `q`
/// is old member `order[q]`. Extension nodes below follow the new order.
pub(crate) fn permute_band(
    ctx: &Ctx,
    node: &mut schedule_tree::Node,
    depth: usize,
    order: &[i32],
) -> Result<()> {
    let NodeKind::Band(band) = &mut node.kind else {
        return Err(miette!(
            "internal error: permuting a node that is not a band"
        ));
    };
    if order.iter().copied().eq(0..order.len() as i32) {
        return Ok(());
    }
    let mupa = MultiUnionPwAff::read_from_str(&ctx.isl, &band.schedule)
        .isl("reading a band's schedule")?;
    let mut permuted = mupa.copy().isl("copying a band's schedule")?;
    for (pos, &m) in order.iter().enumerate() {
        let upa = mupa.get_at(m).isl("reading a band member")?;
        permuted = permuted
            .set_at(pos as i32, upa)
            .isl("permuting a band's members")?;
    }
    band.schedule = multi_union_pw_aff_text(&permuted)
        .ok_or_else(|| miette!("isl could not print a band's schedule"))?;
    band.coincident = order.iter().map(|&m| band.coincident[m as usize]).collect();
    // Extension nodes below (promotion's copies, fused producers) map from the outer
    // schedule, this band's members included: their domains follow the new member order.
    for c in &mut node.children {
        permute_extensions(ctx, c, depth, order)?;
    }
    Ok(())
}

/// Renumbers the outer-schedule dimensions `depth..depth + order.len()` of the domain of
/// every extension node in `node`'s subtree: new position `q` takes old dimension
/// `depth + order[q]`.
fn permute_extensions(
    ctx: &Ctx,
    node: &mut schedule_tree::Node,
    depth: usize,
    order: &[i32],
) -> Result<()> {
    if let NodeKind::Extension { extension } = &mut node.kind {
        let ext =
            isl_rs::UnionMap::read_from_str(&ctx.isl, extension).isl("reading an extension")?;
        let list = ext.get_map_list().isl("listing an extension's maps")?;
        let mut out: Option<isl_rs::UnionMap> = None;
        for i in 0..list.n_map().isl("counting maps")? {
            let m = list.get_at(i).isl("reading a map")?;
            let n = m.dim(DimType::In).isl("reading a map's dimensions")? as usize;
            if n < depth + order.len() {
                return Err(miette!(
                    "internal error: an extension below a permuted band has too few dimensions"
                ));
            }
            let old: Vec<String> = (0..n).map(|k| format!("a{k}")).collect();
            let mut new = old.clone();
            for (q, &o) in order.iter().enumerate() {
                new[depth + q] = old[depth + o as usize].clone();
            }
            let perm = isl_rs::Map::read_from_str(
                &ctx.isl,
                &format!("{{ [{}] -> [{}] }}", old.join(", "), new.join(", ")),
            )
            .isl("building a permutation")?;
            let m = isl_rs::UnionMap::from_map(
                m.apply_domain(perm)
                    .isl("permuting an extension's domain")?,
            )
            .isl("an extension")?;
            out = Some(match out {
                None => m,
                Some(u) => u.union(m).isl("uniting an extension")?,
            });
        }
        if let Some(u) = out {
            *extension = polyhedral::isl::ffi::model::union_map_text(&u);
        }
    }
    for c in &mut node.children {
        permute_extensions(ctx, c, depth, order)?;
    }
    Ok(())
}

/// `tile`: `None` outside a tile; inside one, the tensors promoted into a register file
/// at the nearest memory mark above.
fn visit(
    prog: &Program,
    levels: &[Level],
    node: &ScheduleNode,
    tile: Option<&[usize]>,
    path: &mut Vec<usize>,
    plans: &mut Vec<Plan>,
) -> Result<()> {
    let ty = node.get_type().isl("reading a schedule node's type")?;
    if ty == ScheduleNodeType::Band {
        if let Some(reg) = tile {
            if let Some((order, separate)) = plan_band(prog, node, reg)? {
                let depth = node
                    .get_schedule_depth()
                    .isl("reading a band's schedule depth")? as usize;
                plans.push(Plan {
                    path: path.clone(),
                    depth,
                    order,
                    separate,
                });
            }
        }
    }
    let mark = if ty == ScheduleNodeType::Mark {
        let id = node.mark_get_id().isl("reading a mark")?;
        let name = id.get_name().isl("reading a mark's name")?.to_string();
        Mark::from_isl_name(&name)
    } else {
        None
    };
    let below: Option<Vec<usize>> = match mark {
        Some(Mark::Mem(b)) => Some(match tile {
            // A tile nested inside a register tile (a fused producer's own tiling) keeps
            // the register tile's tensors.
            Some(reg) if !reg.is_empty() => reg.to_vec(),
            _ if level_of(levels, b).is_some_and(|l| l.role.is_register_file()) => {
                promoted_tensors(prog, node)?
            }
            _ => Vec::new(),
        }),
        // Inside a register tile every band is a point band of the tile (a fused
        // producer's own tile bands included).
        _ if tile.is_some_and(|t| !t.is_empty()) => tile.map(|t| t.to_vec()),
        _ => match ty {
            ScheduleNodeType::Extension
            | ScheduleNodeType::Sequence
            | ScheduleNodeType::Set
            | ScheduleNodeType::Filter => tile.map(|t| t.to_vec()),
            _ => None,
        },
    };
    let n = node.n_children().isl("counting a node's children")?;
    for i in 0..n {
        let c = node
            .copy()
            .isl("copying a node")?
            .child(i)
            .isl("visiting a schedule node")?;
        path.push(i as usize);
        let r = visit(prog, levels, &c, below.as_deref(), path, plans);
        path.pop();
        r?;
    }
    Ok(())
}

/// The tensors with copy-out statements (written register tiles) in the extension right
/// below the mark `node`.
fn promoted_tensors(prog: &Program, node: &ScheduleNode) -> Result<Vec<usize>> {
    let c = node
        .copy()
        .isl("copying a node")?
        .child(0)
        .isl("visiting a schedule node")?;
    if c.get_type().isl("reading a schedule node's type")? != ScheduleNodeType::Extension {
        return Ok(Vec::new());
    }
    let ext = c.extension_get_extension().isl("reading an extension")?;
    let range = ext.range().isl("reading an extension")?;
    let list = range.get_set_list().isl("reading an extension")?;
    let n = list.n_set().isl("reading an extension")?;
    let mut out = Vec::new();
    for i in 0..n {
        let set = list.get_at(i).isl("reading an extension")?;
        let name = set
            .get_tuple_name()
            .isl("reading a statement name")?
            .to_string();
        // Only written tiles (accumulators, with a copy-out) must stay put across the
        // reduction loops; read-only ones may move.
        if let Some((crate::passes::promote::CopyKind::Out, _, t)) =
            crate::passes::promote::parse_copy_stmt(&name)
        {
            if let Some(t) = prog.tensors.iter().position(|x| x.name == t) {
                if !out.contains(&t) {
                    out.push(t);
                }
            }
        }
    }
    Ok(out)
}

/// The per-member cost, or `None` when the member is not vectorisable or not affine; and
/// whether no tensor of `reg` moves along the member (`false` when not affine).
fn member_cost(
    prog: &Program,
    mupa: &MultiUnionPwAff,
    m: i32,
    reg: &[usize],
) -> Result<(Option<u64>, bool)> {
    let upa = mupa.get_at(m).isl("reading a band member")?;
    let list = upa.get_pw_aff_list().isl("reading a band member")?;
    let k = list.size().isl("reading a band member")?;
    let mut cost = Some(0u64);
    let mut reg_free = true;
    for p in 0..k {
        let pa = list.get_at(p).isl("reading a band member")?;
        if pa.n_piece().isl("reading a band member")? != 1 {
            return Ok((None, false));
        }
        let space = pa.get_domain_space().isl("reading a band member")?;
        let name = space
            .get_tuple_name(DimType::Set)
            .isl("reading a statement name")?
            .to_string();
        let Some(stmt) = prog.stmts.iter().find(|s| s.name == name) else {
            // A copy statement: it has its own band and does not constrain this one.
            continue;
        };
        // A piece defined on the statement's instances only (a band whose schedule was
        // restricted to its domain) is the same function on all of its space.
        let defined = pa
            .copy()
            .isl("copying a band member")?
            .domain()
            .isl("reading a band member's domain")?;
        let aff = pa
            .gist(defined)
            .isl("simplifying a band member")?
            .as_aff()
            .isl("reading a band member")?;
        let mut dir = Vec::with_capacity(stmt.iters.len());
        for d in 0..stmt.iters.len() {
            let v = aff
                .get_coefficient_val(DimType::In, d as i32)
                .isl("reading a coefficient")?;
            if !v.is_int().isl("reading a coefficient")? {
                return Ok((None, false));
            }
            dir.push(v.get_num_si().isl("reading a coefficient")?);
        }
        let mut accesses: Vec<(usize, &[Aff], u64)> = vec![(stmt.lhs, &stmt.lhs_index, 2)];
        let reads = stmt.reads();
        accesses.extend(reads.iter().map(|(t, idx, _)| (*t, idx.as_slice(), 1)));
        for (t, idx, weight) in accesses {
            let class = access_class(idx, &dir, stmt.iters.len(), prog.params.len());
            if class != Class::Invariant && reg.contains(&t) {
                reg_free = false;
            }
            match class {
                Class::Invariant => {}
                Class::Contiguous => cost = cost.map(|c| c + weight),
                Class::Strided => cost = None,
            }
        }
    }
    Ok((cost, reg_free))
}

/// How an access moves along a direction of the iteration space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Invariant,
    Contiguous,
    Strided,
}

/// Classifies the access `idx` along `dir`: the change of each index between the points
/// `x` and `x + dir` for a few sample points `x` (an index that is not affine changes
/// differently at different points and counts as strided).
fn access_class(idx: &[Aff], dir: &[i64], n_iters: usize, n_params: usize) -> Class {
    let params: Vec<i64> = vec![1000; n_params];
    let mut class = Class::Invariant;
    for base in [0i64, 7, 13] {
        let x: Vec<i64> = (0..n_iters).map(|d| base + 3 * d as i64).collect();
        let y: Vec<i64> = x.iter().zip(dir).map(|(a, b)| a + b).collect();
        let delta: Vec<i64> = idx
            .iter()
            .map(|e| e.eval(&y, &params) - e.eval(&x, &params))
            .collect();
        let here = match delta.split_last() {
            None => Class::Invariant,
            Some((last, rest)) if rest.iter().all(|&d| d == 0) => match last.abs() {
                0 => Class::Invariant,
                1 => Class::Contiguous,
                _ => Class::Strided,
            },
            Some(_) => Class::Strided,
        };
        if base == 0 {
            class = here;
        } else if here != class {
            return Class::Strided;
        }
    }
    class
}

/// The new member order of a point band and whether it is a register tile to separate,
/// or `None` when nothing changes.
fn plan_band(
    prog: &Program,
    node: &ScheduleNode,
    reg: &[usize],
) -> Result<Option<(Vec<i32>, bool)>> {
    let n = node.band_n_member().isl("reading a band")?;
    if n < 1 {
        return Ok(None);
    }
    let permutable = node.band_get_permutable().isl("reading a band")?;
    let mut coincident = Vec::with_capacity(n as usize);
    for m in 0..n {
        coincident.push(node.band_member_get_coincident(m).isl("reading a band")?);
    }
    // In a band that is not permutable, a coincident member (no dependence is carried
    // along it: distance 0) may move anywhere, but the members that carry dependences
    // must keep their relative order.
    let legal = |order: &[i32]| {
        permutable || {
            let carried: Vec<i32> = order
                .iter()
                .copied()
                .filter(|&m| !coincident[m as usize])
                .collect();
            carried.windows(2).all(|w| w[0] < w[1])
        }
    };
    let mupa = node
        .band_get_partial_schedule()
        .isl("reading a band's schedule")?;
    let mut best: Option<(u64, i32)> = None;
    let mut reg_free = Vec::with_capacity(n as usize);
    for m in 0..n {
        let (cost, free) = member_cost(prog, &mupa, m, reg)?;
        reg_free.push(!reg.is_empty() && free);
        if !node.band_member_get_coincident(m).isl("reading a band")? {
            continue;
        }
        if let Some(c) = cost {
            if !matches!(best, Some((bc, _)) if c > bc) {
                best = Some((c, m));
            }
        }
    }
    let pick = best.map(|(_, m)| m);
    let rest = (0..n).filter(|&m| Some(m) != pick);
    let mut order: Vec<i32> = rest
        .clone()
        .filter(|&m| reg_free[m as usize])
        .chain(rest.clone().filter(|&m| !reg_free[m as usize]))
        .chain(pick)
        .collect();
    if !legal(&order) {
        order = rest.chain(pick).collect();
        if !legal(&order) {
            order = (0..n).collect();
        }
    }
    let separate = !reg.is_empty();
    if order.iter().copied().eq(0..n) && !separate {
        return Ok(None);
    }
    Ok(Some((order, separate)))
}
