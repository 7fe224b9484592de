//! What tiling needs to know about the bands of a tree, computed exactly with isl: which
//! statements reach each band, the extent of each member, the permutable prefix (from the
//! dependences), and the data footprint of one tile.

use polyhedral::deps::{DepKind, Deps};
use polyhedral::isl::ffi::model::union_set_text;
use polyhedral::isl::isl_rs::{
    DimType, FixedBox, Map, MultiAff, MultiUnionPwAff, Schedule, ScheduleNode, Set, UnionMap,
    UnionSet,
};
use polyhedral::isl::{Ctx, IslResultExt};
use polyhedral::scop::Scop;
use schedule_tree::{NodeKind, ScheduleTree};

/// One band of the tree, with what the analyses found.
pub struct BandInfo {
    /// Child positions from the root.
    pub path: Vec<usize>,
    /// The band's partial schedule (isl text).
    pub schedule: String,
    /// Coincidence of each member.
    pub coincident: Vec<bool>,
    /// The tree text of the band node.
    pub line: String,
    /// The statements (by number) that reach the band.
    pub stmts: Vec<usize>,
    /// The statement instances that reach the band.
    pub domain: UnionSet,
    /// The band's partial schedule as a union map, restricted to [`BandInfo::domain`].
    pub map: UnionMap,
    /// Every access (reads and writes) of the statements that reach the band: a tile's
    /// data is its image (per footprint, the whole program's accesses would be walked).
    pub accesses: UnionMap,
    /// The data each point of the band touches (`[t] -> T[e]`, one relation per tensor
    /// rather than per statement), built on first use: the footprint of a window of a
    /// band without outer bands is its image.
    pub point_data: std::cell::OnceCell<UnionMap>,
    /// The prefix schedule of the band (outer bands, as isl computes it).
    pub prefix: UnionMap,
    /// Extent of each member (`max - min + 1`) when the sizes are bound.
    pub extents: Vec<Option<i64>>,
    /// Indices (in the band list) of the bands enclosing this one, outermost first.
    pub outer: Vec<usize>,
    /// The largest extent of each member over every size the model's context allows,
    /// when that is finite (a symbolic extent under `--dynamic T=1..128`); `None`
    /// otherwise.
    pub max_extents: Vec<Option<i64>>,
}

impl BandInfo {
    /// Number of members.
    pub fn n_members(&self) -> usize {
        self.coincident.len()
    }
}

/// The isl node at `path` of `schedule`.
pub fn node_at(schedule: &Schedule, path: &[usize]) -> miette::Result<ScheduleNode> {
    let mut n = schedule.get_root().isl("reading the schedule root")?;
    for &i in path {
        n = n.child(i as i32).isl("descending the schedule tree")?;
    }
    Ok(n)
}

/// Collects every band of `tree`, in pre-order.
pub fn collect_bands(
    ctx: &Ctx,
    scop: &Scop,
    tree: &ScheduleTree,
) -> miette::Result<(Schedule, Vec<BandInfo>)> {
    let schedule = tree.to_isl(ctx)?;
    let mut bands: Vec<BandInfo> = Vec::new();
    for path in tree.bands() {
        let Some(node) = tree.node_at(&path) else {
            continue;
        };
        let NodeKind::Band(b) = &node.kind else {
            continue;
        };
        let inode = node_at(&schedule, &path)?;
        let domain = inode.get_domain().isl("reading the domain at a band")?;
        let map = inode
            .band_get_partial_schedule_union_map()
            .isl("reading a band's schedule")?
            .intersect_domain(domain.copy().isl("copying a set")?)
            .isl("restricting a band's schedule")?;
        let prefix = inode
            .get_prefix_schedule_union_map()
            .isl("reading a prefix schedule")?
            .intersect_domain(domain.copy().isl("copying a set")?)
            .isl("restricting a prefix schedule")?;
        let stmts = stmts_of(scop, &domain)?;
        let accesses = accesses_of(scop, &stmts)?;
        let extents = member_extents(&map, b.n_members())?;
        let max_extents = if extents.iter().any(Option::is_none) {
            bounded_extents(&map, &scop.context, b.n_members())?
        } else {
            extents.clone()
        };
        let outer = bands
            .iter()
            .enumerate()
            .filter(|(_, o)| path.starts_with(&o.path))
            .map(|(k, _)| k)
            .collect();
        bands.push(BandInfo {
            path: path.clone(),
            schedule: b.schedule.clone(),
            coincident: b.coincident.clone(),
            line: schedule_tree::text::node_line(&node.kind),
            stmts,
            domain,
            map,
            accesses,
            point_data: std::cell::OnceCell::new(),
            prefix,
            extents,
            outer,
            max_extents,
        });
    }
    Ok((schedule, bands))
}

/// The schedule values of a band as one set in `[n]`, or `None` when the band schedules
/// nothing.
fn value_set(map: &UnionMap) -> miette::Result<Option<Set>> {
    let range = map.copy().isl("copying a map")?.range().isl("band range")?;
    if range.is_empty().isl("testing a set for emptiness")? {
        return Ok(None);
    }
    Ok(Some(Set::from_union_set(range).isl("band range as a set")?))
}

/// The extents of the members with the sizes restricted to `context` and then
/// projected out: finite for a symbolic size with an upper bound.
fn bounded_extents(map: &UnionMap, context: &Set, n: usize) -> miette::Result<Vec<Option<i64>>> {
    let Some(set) = value_set(map)? else {
        return Ok(vec![None; n]);
    };
    let set = set
        .intersect_params(context.copy().isl("copying the context")?)
        .isl("restricting a band's values to the context")?;
    let np = set.dim(DimType::Param).isl("counting parameters")?;
    let set = set
        .project_out(DimType::Param, 0, np as u32)
        .isl("projecting out the sizes")?;
    let map = UnionMap::from_map(Map::from_range(set).isl("a band's values as a map")?)
        .isl("a band's values as a union map")?;
    member_extents(&map, n)
}

fn member_extents(map: &UnionMap, n: usize) -> miette::Result<Vec<Option<i64>>> {
    let Some(set) = value_set(map)? else {
        return Ok(vec![None; n]);
    };
    let mut v = Vec::with_capacity(n);
    for d in 0..n {
        let lo = set.copy().isl("copying a set")?.dim_min_val(d as i32);
        let hi = set.copy().isl("copying a set")?.dim_max_val(d as i32);
        let ext = match (lo, hi) {
            (Ok(lo), Ok(hi)) if lo.is_int().unwrap_or(false) && hi.is_int().unwrap_or(false) => {
                match (lo.get_num_si(), hi.get_num_si()) {
                    (Ok(l), Ok(h)) => Some(h - l + 1),
                    _ => None,
                }
            }
            _ => None,
        };
        v.push(ext);
    }
    Ok(v)
}

/// A dependence that forbids tiling a member of a band.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blocker {
    /// The member (0-based) with a negative distance.
    pub member: usize,
    /// RAW, WAR or WAW.
    pub kind: DepKind,
    /// Source statement.
    pub source: String,
    /// Target statement.
    pub target: String,
    /// One pair of instances with a negative distance, and the distance vector.
    pub example: Option<String>,
    /// Whether skewing the band would make it tilable: every such dependence is carried by
    /// an earlier member, with a distance on this member bounded from below.
    pub skew_helps: bool,
}

/// `n` names `t0, …` and the tuple text `[t0, …]`.
fn tuple(n: usize, stem: &str) -> (Vec<String>, String) {
    let names: Vec<String> = (0..n).map(|k| format!("{stem}{k}")).collect();
    let t = format!("[{}]", names.join(", "));
    (names, t)
}

/// The dependences that live at `band`: both ends reach it and the outer schedule does not
/// separate them.
fn live_deps(band: &BandInfo, rel: &UnionMap) -> miette::Result<UnionMap> {
    // Each dependence is compared with the prefix of its own two statements (isl's
    // `eq_at`), not with every pair of statements of the band.
    let prefix = MultiUnionPwAff::from_union_map(band.prefix.copy().isl("copying a map")?)
        .isl("the band's prefix schedule as a function")?;
    rel.copy()
        .isl("copying dependences")?
        .intersect_domain(band.domain.copy().isl("copying a set")?)
        .isl("restricting dependences")?
        .intersect_range(band.domain.copy().isl("copying a set")?)
        .isl("restricting dependences")?
        .eq_at_multi_union_pw_aff(prefix)
        .isl("restricting dependences to the band")
}

/// Whether some statement of `band` depends on itself across `member` at one value of the
/// members before it: a loop along `member` over one statement's instances (its row loop,
/// once the statements are distributed) would then run in order, not as vector lanes.
pub fn member_carries_self_dependence(
    ctx: &Ctx,
    deps: &Deps,
    band: &BandInfo,
    member: usize,
) -> miette::Result<bool> {
    let live = live_deps(band, &deps.validity()?)?;
    let list = live.get_map_list().isl("listing dependences")?;
    let mut own = UnionMap::empty(live.get_space().isl("reading a space")?)
        .isl("an empty dependence relation")?;
    for i in 0..list.n_map().isl("counting dependences")? {
        let m = list.get_at(i).isl("reading dependences")?;
        let src = m.get_tuple_name(DimType::In).isl("reading a source")?;
        let dst = m.get_tuple_name(DimType::Out).isl("reading a target")?;
        if src == dst {
            own = own
                .union(UnionMap::from_map(m).isl("converting dependences")?)
                .isl("collecting self-dependences")?;
        }
    }
    let (a, at) = tuple(band.n_members(), "a");
    let (b, bt) = tuple(band.n_members(), "b");
    let mut cons: Vec<String> = (0..member)
        .map(|k| format!("{} = {}", b[k], a[k]))
        .collect();
    cons.push(format!("{} != {}", b[member], a[member]));
    let text = format!("{{ {at} -> {bt} : {} }}", cons.join(" and "));
    let carried = UnionMap::read_from_str(&ctx.isl, &text).isl("reading a distance condition")?;
    let hit = band_distances(band, own)?
        .intersect(carried)
        .isl("selecting carried self-dependences")?;
    Ok(!hit.is_empty().isl("testing dependences")?)
}

/// Whether member `member` of `band`, tiled with `sizes` (`None`: a member this level
/// does not tile), stays coincident in the tile band: no live dependence joins two
/// instances in the same tile of every earlier tiled member and in different tiles of
/// `member`. The point band's flag says less: a member is coincident there where the
/// earlier members are *equal*, so a dependence of distance (2, 1) carried by the first
/// member leaves the second coincident, yet two tiles of the second member within one
/// tile of the first then depend on each other (fuzzer finding F9).
pub fn tile_member_coincident(
    ctx: &Ctx,
    deps: &Deps,
    band: &BandInfo,
    sizes: &[Option<i64>],
    member: usize,
) -> miette::Result<bool> {
    let Some(own) = sizes.get(member).copied().flatten() else {
        return Ok(false);
    };
    let live = live_deps(band, &deps.validity()?)?;
    let (a, at) = tuple(band.n_members(), "a");
    let (b, bt) = tuple(band.n_members(), "b");
    let mut cons: Vec<String> = (0..member)
        .filter_map(|k| sizes[k].map(|s| format!("floor({}/{s}) = floor({}/{s})", b[k], a[k])))
        .collect();
    cons.push(format!(
        "floor({}/{own}) != floor({}/{own})",
        b[member], a[member]
    ));
    let text = format!("{{ {at} -> {bt} : {} }}", cons.join(" and "));
    let across = UnionMap::read_from_str(&ctx.isl, &text).isl("reading a tile condition")?;
    let hit = band_distances(band, live)?
        .intersect(across)
        .isl("selecting dependences across tiles")?;
    hit.is_empty().isl("testing dependences")
}

/// The live dependences as pairs of band values (`[a] -> [b]`, every statement in one
/// space): a member's distances are read from it without relating every pair of the band's
/// statements.
fn band_distances(band: &BandInfo, live: UnionMap) -> miette::Result<UnionMap> {
    live.apply_domain(band.map.copy().isl("copying a map")?)
        .isl("dependences in band values")?
        .apply_range(band.map.copy().isl("copying a map")?)
        .isl("dependences in band values")
}

/// The condition "non-negative distance on the members before `member`, negative on
/// `member`" over pairs of band values.
fn negative_condition(ctx: &Ctx, n: usize, member: usize) -> miette::Result<UnionMap> {
    let (a, at) = tuple(n, "a");
    let (b, bt) = tuple(n, "b");
    let mut cons: Vec<String> = (0..member)
        .map(|k| format!("{} >= {}", b[k], a[k]))
        .collect();
    cons.push(format!("{} < {}", b[member], a[member]));
    let text = format!("{{ {at} -> {bt} : {} }}", cons.join(" and "));
    UnionMap::read_from_str(&ctx.isl, &text).isl("reading a distance condition")
}

/// Pairs of instances whose band values have a negative distance on `member` (and none on
/// earlier members).
fn negative_pairs(
    ctx: &Ctx,
    band: &BandInfo,
    live: UnionMap,
    member: usize,
) -> miette::Result<UnionMap> {
    let neg = negative_condition(ctx, band.n_members(), member)?;
    let sel = band
        .map
        .copy()
        .isl("copying a map")?
        .apply_range(neg)
        .isl("composing")?
        .apply_range(
            band.map
                .copy()
                .isl("copying a map")?
                .reverse()
                .isl("reverse")?,
        )
        .isl("composing")?;
    live.intersect(sel).isl("selecting negative distances")
}

/// The number of leading members of `band` that can be tiled together (non-negative
/// distance of every live dependence on each of them), and the dependence that stops the
/// prefix (if it is shorter than `want`). Only the first `want` members are examined.
pub fn permutable_prefix(
    ctx: &Ctx,
    deps: &Deps,
    band: &BandInfo,
    want: usize,
) -> miette::Result<(usize, Option<Blocker>)> {
    let _s = polyhedral::substeps::span("tile:permutable_prefix");
    let live_all = live_deps(band, &deps.validity()?)?;
    let distances = band_distances(band, live_all)?;
    for m in 0..want.min(band.n_members()) {
        let bad = distances
            .copy()
            .isl("copying")?
            .intersect(negative_condition(ctx, band.n_members(), m)?)
            .isl("selecting negative distances")?;
        if bad.is_empty().isl("testing dependences")? {
            continue;
        }
        // Name the first offending dependence: kind, then statement pair.
        for kind in [DepKind::Raw, DepKind::War, DepKind::Waw] {
            let live = live_deps(band, deps.of_kind(kind))?;
            let bad = negative_pairs(ctx, band, live, m)?;
            for &s in &band.stmts {
                for &t in &band.stmts {
                    let m_st = deps.between(kind, s, t)?;
                    let part = bad
                        .copy()
                        .isl("copying")?
                        .intersect(UnionMap::from_map(m_st).isl("converting")?)
                        .isl("selecting a statement pair")?;
                    if part.is_empty().isl("testing dependences")? {
                        continue;
                    }
                    let pair = Map::from_union_map(part).isl("a statement pair's map")?;
                    let example = polyhedral::deps::example_pair(
                        &pair,
                        &deps.stmt_names[s],
                        &deps.stmt_names[t],
                    );
                    let skew_helps = skew_helps(band, &pair, m)?;
                    return Ok((
                        m,
                        Some(Blocker {
                            member: m,
                            kind,
                            source: deps.stmt_names[s].clone(),
                            target: deps.stmt_names[t].clone(),
                            example,
                            skew_helps,
                        }),
                    ));
                }
            }
        }
        return Ok((m, None));
    }
    Ok((want.min(band.n_members()), None))
}

/// Distance vectors of `pair` in the band's schedule.
fn distances(band: &BandInfo, pair: &Map) -> miette::Result<Option<Set>> {
    let d = UnionMap::from_map(pair.copy().isl("copying")?)
        .isl("converting")?
        .apply_domain(band.map.copy().isl("copying")?)
        .isl("composing")?
        .apply_range(band.map.copy().isl("copying")?)
        .isl("composing")?
        .deltas()
        .isl("distances")?;
    if d.is_empty().isl("testing")? {
        return Ok(None);
    }
    Ok(Some(Set::from_union_set(d).isl("distances as a set")?))
}

fn skew_helps(band: &BandInfo, pair: &Map, member: usize) -> miette::Result<bool> {
    if member == 0 {
        return Ok(false);
    }
    let Some(d) = distances(band, pair)? else {
        return Ok(false);
    };
    // Bounded below on `member`?
    let lo = d.copy().isl("copying")?.dim_min_val(member as i32);
    let bounded = matches!(lo, Ok(v) if v.is_int().unwrap_or(false));
    // Carried by an earlier member: no distance has all earlier components <= 0.
    let n = band.n_members();
    let (x, xt) = tuple(n, "x");
    let cons: Vec<String> = (0..member).map(|k| format!("{} <= 0", x[k])).collect();
    let text = format!("{{ {xt} : {} }}", cons.join(" and "));
    let uncarried = Set::read_from_str(&d.get_ctx(), &text).isl("reading a condition")?;
    let rest = d.intersect(uncarried).isl("intersecting")?;
    Ok(bounded && rest.is_empty().isl("testing")?)
}

/// The data one tile touches in one tensor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorFootprint {
    /// Tensor name.
    pub tensor: String,
    /// Tensor id.
    pub tensor_id: usize,
    /// The sizes of the smallest fixed-size box holding the tile's elements, when isl finds
    /// one (always, for rectangular tiles and affine accesses with bound sizes).
    pub box_sizes: Option<Vec<u64>>,
    /// How many boxes the elements are counted in: 1, or more when the tile's pieces lie
    /// apart (`A(i, k)` and `A(j, k)` of one tile), each piece's box then counted on its own
    /// and `box_sizes` is `None`.
    pub boxes: usize,
    /// Elements in the box (or boxes).
    pub elements: Option<u64>,
    /// Bytes in the box.
    pub bytes: Option<u64>,
    /// With symbolic sizes, in `polyc explain`: the largest footprint over the tiles as
    /// quasi-polynomials in the sizes (barvinok).
    pub symbolic: Option<SymbolicFootprint>,
}

/// The statements (by number, ascending) with instances in `domain`: from its own sets,
/// not by testing every statement (a band of one statement in a program of hundreds).
fn stmts_of(scop: &Scop, domain: &UnionSet) -> miette::Result<Vec<usize>> {
    let list = domain.get_set_list().isl("listing a band's statements")?;
    let mut out = Vec::new();
    for k in 0..list.size().isl("listing a band's statements")? {
        let set = list.get_at(k).isl("listing a band's statements")?;
        if set.is_empty().isl("testing a set for emptiness")? {
            continue;
        }
        let name = set.get_tuple_name().isl("a statement's name")?;
        if let Some(i) = scop.stmt_names.iter().position(|n| *n == name) {
            out.push(i);
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Every read and write of `stmts`, as one union map.
fn accesses_of(scop: &Scop, stmts: &[usize]) -> miette::Result<UnionMap> {
    let mut all =
        UnionMap::empty(scop.reads.get_space().isl("the accesses' space")?).isl("no accesses")?;
    for &s in stmts {
        for acc in std::iter::once(&scop.stmt_writes[s]).chain(&scop.stmt_reads[s]) {
            let m = UnionMap::from_map(acc.map.copy().isl("copying an access")?)
                .isl("an access as a union map")?;
            all = all.union(m).isl("uniting accesses")?;
        }
    }
    Ok(all)
}

/// The data of `image` per tensor (by id, ascending), without the tensors it has none
/// of: from its own sets, not by extracting every tensor of the program.
fn image_by_tensor(scop: &Scop, image: &UnionSet) -> miette::Result<Vec<(usize, Set)>> {
    let list = image.get_set_list().isl("listing a tile's data")?;
    let mut out: Vec<(usize, Set)> = Vec::new();
    for k in 0..list.size().isl("listing a tile's data")? {
        let set = list.get_at(k).isl("listing a tile's data")?;
        if set.is_empty().isl("testing a set for emptiness")? {
            continue;
        }
        let name = set.get_tuple_name().isl("a tensor's name")?;
        let tid = (0..scop.tensor_extents.len()).find(|&t| {
            scop.tensor_extents[t]
                .get_tuple_name()
                .is_ok_and(|n| n == name)
        });
        if let Some(tid) = tid {
            out.push((tid, set));
        }
    }
    out.sort_by_key(|(tid, _)| *tid);
    Ok(out)
}

/// The footprint of one tile of `band`, where member `d` of the band is restricted to a
/// window of `windows[d]` consecutive values (`None`: not restricted), every band in
/// `outer` is fixed to one point, and inner bands are unrestricted. `elem_bytes[t]` is the
/// element size of tensor `t`.
pub fn tile_footprint(
    ctx: &Ctx,
    scop: &Scop,
    bands: &[BandInfo],
    band: usize,
    windows: &[Option<i64>],
    elem_bytes: &[u64],
) -> miette::Result<Vec<TensorFootprint>> {
    let _s = polyhedral::substeps::span("tile:footprints");
    let key = footprint_key(scop, bands, band, windows, elem_bytes)?;
    let hit = FOOTPRINTS.with(|c| {
        let c = c.borrow();
        (c.0 == scop.id).then(|| c.1.get(&key).cloned()).flatten()
    });
    if let Some(hit) = hit {
        return Ok(hit);
    }
    let out = footprints_uncached(ctx, scop, bands, band, windows, elem_bytes)?;
    FOOTPRINTS.with(|c| {
        let mut c = c.borrow_mut();
        if c.0 != scop.id || c.1.len() >= FOOTPRINT_CACHE_LIMIT {
            c.0 = scop.id;
            c.1.clear();
        }
        c.1.insert(key, out.clone());
    });
    Ok(out)
}

/// At most this many footprints are remembered per thread.
const FOOTPRINT_CACHE_LIMIT: usize = 1024;

/// The model the remembered footprints belong to, and the footprints by key.
type FootprintCache = (u64, std::collections::HashMap<String, Vec<TensorFootprint>>);

thread_local! {
    /// Footprints already computed for one model (the latest one asked about), by
    /// [`footprint_key`]: the tiling policy, the tile pass and the reports ask for the
    /// same tile of the same band again and again.
    static FOOTPRINTS: std::cell::RefCell<FootprintCache> =
        std::cell::RefCell::new((0, std::collections::HashMap::new()));
}

/// What a footprint depends on: the model, the band's schedule and instances, the outer
/// bands' schedules (their points are parameters), the windows and the element sizes.
fn footprint_key(
    scop: &Scop,
    bands: &[BandInfo],
    band: usize,
    windows: &[Option<i64>],
    elem_bytes: &[u64],
) -> miette::Result<String> {
    let b = &bands[band];
    let outer: Vec<&str> = b
        .outer
        .iter()
        .map(|&o| bands[o].schedule.as_str())
        .collect();
    let domain = b.domain.to_str().isl("printing a band's instances")?;
    Ok(format!(
        "{}|{}|{domain}|{outer:?}|{windows:?}|{elem_bytes:?}",
        scop.id, b.schedule
    ))
}

/// [`tile_footprint`] without the cache.
fn footprints_uncached(
    ctx: &Ctx,
    scop: &Scop,
    bands: &[BandInfo],
    band: usize,
    windows: &[Option<i64>],
    elem_bytes: &[u64],
) -> miette::Result<Vec<TensorFootprint>> {
    let image = polyhedral::substeps::timed("tile:footprint_image", || {
        tile_image(ctx, bands, band, windows)
    })?;
    let _boxes = polyhedral::substeps::span("tile:footprint_boxes");
    let mut out = Vec::new();
    for (tid, part) in image_by_tensor(scop, &image)? {
        let ext = &scop.tensor_extents[tid];
        let name = ext
            .get_tuple_name()
            .map(|s| s.to_string())
            .unwrap_or_else(|_| format!("tensor {tid}"));
        let (box_sizes, elements, boxes) = match box_of_pieces(&part)? {
            Some(mut p) if p.boxes.len() == 1 => {
                let b = p.boxes.remove(0);
                let e = b.iter().product::<u64>();
                (Some(b), Some(e), 1)
            }
            Some(p) => (None, Some(p.elements()), p.boxes.len()),
            None => {
                let b = fixed_box_sizes(&part)?;
                let e = b.as_ref().map(|v| v.iter().product::<u64>());
                (b, e, 1)
            }
        };
        let eb = elem_bytes.get(tid).copied().unwrap_or(1);
        out.push(TensorFootprint {
            tensor: name,
            tensor_id: tid,
            box_sizes,
            boxes,
            elements,
            bytes: elements.map(|e| e * eb),
            symbolic: None,
        });
    }
    Ok(out)
}

/// The sizes of isl's fixed box hull of `set`, `None` when it has none.
fn fixed_box_sizes(set: &Set) -> miette::Result<Option<Vec<u64>>> {
    box_sizes_of(
        set.get_simple_fixed_box_hull()
            .isl("computing a tile's box")?,
    )
}

/// The sizes of a fixed box from isl (`None` when isl found none).
pub(crate) fn box_sizes_of(fixed: FixedBox) -> miette::Result<Option<Vec<u64>>> {
    if !fixed.is_valid().isl("checking a box")? {
        return Ok(None);
    }
    let mv = fixed.get_size().isl("box sizes")?;
    let k = mv.size().isl("box dimension")?;
    let mut v = Vec::with_capacity(k as usize);
    for d in 0..k {
        let val = mv.get_at(d).isl("box size")?;
        v.push(val.get_num_si().isl("box size")?.max(0) as u64);
    }
    Ok(Some(v))
}

/// The boxes of a footprint's pieces, grouped: pieces whose box offsets differ by
/// constants along every dimension (a stencil's shifted accesses) share one box around
/// them; pieces whose offsets differ otherwise (`A(i, k)` and `A(j, k)` of a symmetric
/// rank-k update, a transposed copy's `C(i, j)` and `C(j, i)`) get boxes of their own.
struct PieceBoxes {
    /// The sizes of each group's box.
    boxes: Vec<Vec<u64>>,
}

impl PieceBoxes {
    /// The elements of all boxes (an upper bound on the footprint: boxes may overlap).
    fn elements(&self) -> u64 {
        self.boxes.iter().map(|b| b.iter().product::<u64>()).sum()
    }
}

/// One group of [`PieceBoxes`] while they are collected: the first piece's offset and
/// each dimension's `[lo, hi)` relative to it.
struct Group {
    base: MultiAff,
    spans: Vec<(i64, i64)>,
}

/// The grouped boxes of `set`'s pieces ([`PieceBoxes`]) when every piece has a fixed box;
/// `None` when some piece has none, or when there is one piece (isl's hull is as cheap
/// then). isl's hull of the whole union takes 0.7 s per tensor on heat-3d's skewed
/// four-member tiles, where the pieces' hulls take milliseconds, and where the pieces'
/// offsets differ by more than constants it is a box around all of them: covariance's
/// `cov(i, j)` and `cov(j, i)` tiles of 64 × 64 gave a 1200 × 1200 box, so the band was
/// never tiled. With one group the box equals isl's hull of the union.
fn box_of_pieces(set: &Set) -> miette::Result<Option<PieceBoxes>> {
    let pieces = set
        .get_basic_set_list()
        .isl("listing a footprint's pieces")?;
    let n = pieces.n_basic_set().isl("counting a footprint's pieces")?;
    if n < 2 {
        return Ok(None);
    }
    let mut groups: Vec<Group> = Vec::new();
    for i in 0..n {
        let piece = Set::from_basic_set(pieces.get_at(i).isl("reading a piece")?)
            .isl("converting a piece")?;
        let fixed = piece
            .get_simple_fixed_box_hull()
            .isl("computing a piece's box")?;
        if !fixed.is_valid().isl("checking a box")? {
            return Ok(None);
        }
        let offset = fixed.get_offset().isl("a box's offset")?;
        let size = fixed.get_size().isl("a box's size")?;
        let mut sizes = Vec::new();
        for d in 0..size.size().isl("box dimension")? {
            sizes.push(
                size.get_at(d)
                    .isl("box size")?
                    .get_num_si()
                    .isl("box size")?,
            );
        }
        let mut placed = false;
        for g in groups.iter_mut() {
            if let Some(lows) = constant_shifts(&g.base, &offset)? {
                let merged: Vec<(i64, i64)> = g
                    .spans
                    .iter()
                    .zip(lows.iter().zip(&sizes))
                    .map(|(span, (lo, len))| (span.0.min(*lo), span.1.max(lo + len)))
                    .collect();
                // One box around both only when it holds no more than the two apart: a
                // stencil's neighbours overlap, but statements that isl shifted whole
                // rows apart in one band (layer norm's phases at `j`, `2047 + j`,
                // `4094 + j`) would make a box of every row between them.
                if volume(&merged) <= volume(&g.spans).saturating_add(volume_of(&sizes)) {
                    g.spans = merged;
                    placed = true;
                    break;
                }
            }
        }
        if !placed {
            groups.push(Group {
                base: offset,
                spans: sizes.iter().map(|&len| (0, len)).collect(),
            });
        }
    }
    let boxes = groups
        .iter()
        .map(|g| {
            g.spans
                .iter()
                .map(|(lo, hi)| (hi - lo).max(0) as u64)
                .collect()
        })
        .collect();
    Ok(Some(PieceBoxes { boxes }))
}

/// The elements of a box given by `[lo, hi)` per dimension.
fn volume(spans: &[(i64, i64)]) -> u64 {
    spans
        .iter()
        .map(|(lo, hi)| (hi - lo).max(0) as u64)
        .fold(1u64, |v, x| v.saturating_mul(x))
}

/// The elements of a box of the given sizes.
fn volume_of(sizes: &[i64]) -> u64 {
    sizes
        .iter()
        .map(|&x| x.max(0) as u64)
        .fold(1u64, |v, x| v.saturating_mul(x))
}

/// Per dimension, `offset - base` when it is a constant along every dimension.
fn constant_shifts(base: &MultiAff, offset: &MultiAff) -> miette::Result<Option<Vec<i64>>> {
    let dims = offset.size().isl("box dimension")?;
    let mut out = Vec::with_capacity(dims as usize);
    for d in 0..dims {
        let diff = offset
            .get_at(d)
            .isl("an offset")?
            .sub(base.get_at(d).isl("an offset")?)
            .isl("comparing offsets")?;
        if !diff.is_cst().isl("testing an offset")? {
            return Ok(None);
        }
        out.push(
            diff.get_constant_val()
                .isl("an offset")?
                .get_num_si()
                .isl("an offset")?,
        );
    }
    Ok(Some(out))
}

/// The elements one tile of `band` touches (every tensor, as one union set), with the
/// tile's position as parameters: `polyc_o{d}`, the first value of member `d`'s window,
/// and `polyc_p{k}_{d}`, the point of the `k`-th outer band (see [`tile_footprint`]).
fn tile_image(
    ctx: &Ctx,
    bands: &[BandInfo],
    band: usize,
    windows: &[Option<i64>],
) -> miette::Result<UnionSet> {
    let b = &bands[band];
    if b.outer.is_empty() {
        return window_image(ctx, b, windows);
    }
    let mut inst = b.domain.copy().isl("copying a set")?;
    // Outer bands: fixed to one point each.
    for (k, &o) in b.outer.iter().enumerate() {
        let ob = &bands[o];
        let n = ob.n_members();
        let (t, tt) = tuple(n, "t");
        let ps: Vec<String> = (0..n).map(|d| format!("polyc_p{k}_{d}")).collect();
        let cons: Vec<String> = (0..n).map(|d| format!("{} = {}", t[d], ps[d])).collect();
        let text = format!("[{}] -> {{ {tt} : {} }}", ps.join(", "), cons.join(" and "));
        inst = restrict(ctx, inst, &ob.map, &text)?;
    }
    if let Some(text) = window_text(b.n_members(), windows) {
        inst = restrict(ctx, inst, &b.map, &text)?;
    }
    b.accesses
        .copy()
        .isl("copying accesses")?
        .intersect_domain(inst)
        .isl("restricting accesses to a tile")?
        .range()
        .isl("the tile's data")
}

/// [`tile_image`] of a band without outer bands: the image of the window under the data
/// of each point ([`BandInfo::point_data`]).
fn window_image(ctx: &Ctx, b: &BandInfo, windows: &[Option<i64>]) -> miette::Result<UnionSet> {
    let point_data = match b.point_data.get() {
        Some(d) => d,
        None => {
            let d = b
                .map
                .copy()
                .isl("copying a band's schedule")?
                .reverse()
                .isl("reversing a band's schedule")?
                .apply_range(b.accesses.copy().isl("copying accesses")?)
                .isl("the data of a band's points")?;
            b.point_data.get_or_init(|| d)
        }
    };
    let data = point_data
        .copy()
        .isl("copying the data of a band's points")?;
    let Some(text) = window_text(b.n_members(), windows) else {
        return data.range().isl("the tile's data");
    };
    let window = UnionSet::read_from_str(&ctx.isl, &text).isl("reading a tile window")?;
    data.intersect_domain(window)
        .isl("restricting data to a tile")?
        .range()
        .isl("the tile's data")
}

/// The band values in the windows (`polyc_o{d} <= t{d} < polyc_o{d} + size` for each
/// member `d` with a window), as isl text with the windows' first values as parameters;
/// `None` when no member has a window.
fn window_text(n_members: usize, windows: &[Option<i64>]) -> Option<String> {
    let (t, tt) = tuple(n_members, "t");
    let mut ps = Vec::new();
    let mut cons = Vec::new();
    for (d, w) in windows.iter().enumerate() {
        if let Some(s) = w {
            let p = format!("polyc_o{d}");
            cons.push(format!("{p} <= {} < {p} + {s}", t[d]));
            ps.push(p);
        }
    }
    (!cons.is_empty())
        .then(|| format!("[{}] -> {{ {tt} : {} }}", ps.join(", "), cons.join(" and ")))
}

/// The footprint of one tile as quasi-polynomials in the symbolic sizes, counted by
/// barvinok: for each tensor, the maximum over the tile positions (windows aligned to
/// their sizes, every point of the outer bands) of the elements one tile touches, and of
/// their bytes, in readable form (`32·K`), each marked `≤` when isl's bound is not known
/// to be tight. `context` (isl text over the sizes) simplifies the conditions.
#[allow(clippy::too_many_arguments)]
pub fn symbolic_footprints(
    ctx: &Ctx,
    scop: &Scop,
    bands: &[BandInfo],
    band: usize,
    windows: &[Option<i64>],
    elem_bytes: &[u64],
    barvinok: &polyhedral::barvinok::Barvinok,
    context: &str,
) -> miette::Result<Vec<(usize, SymbolicFootprint)>> {
    use polyhedral::barvinok::BoundKind;
    use polyhedral::isl::ffi::model::map_text;
    let bv = |e: polyhedral::barvinok::BarvinokError| miette::miette!(help = e.help(), "{e}");
    let mut out = Vec::new();
    for (tid, map) in tile_data_maps(ctx, scop, bands, band, windows)? {
        let per_tile = barvinok.map_card(&map_text(&map)).map_err(bv)?;
        let eb = elem_bytes.get(tid).copied().unwrap_or(1) as i64;
        let per_tile_bytes = barvinok.scale(&per_tile, eb).map_err(bv)?;
        let show = |q: &str| -> miette::Result<String> {
            let (fold, tight) = barvinok
                .bound_in(q, BoundKind::Max, Some(context))
                .map_err(bv)?;
            let text = polyhedral::qpoly::pretty_fold(&fold).map_err(|e| miette::miette!("{e}"))?;
            Ok(if tight { text } else { format!("≤ {text}") })
        };
        out.push((
            tid,
            SymbolicFootprint {
                elements: show(&per_tile)?,
                bytes: show(&per_tile_bytes)?,
            },
        ));
    }
    Ok(out)
}

/// For each tensor one tile of `band` touches (see [`tile_footprint`]), the map from the
/// tile's position to the elements it touches: the input tuple holds the window starts
/// `polyc_o{d}` (aligned to their sizes) and the points `polyc_p{k}_{d}` of the outer
/// bands; the symbolic sizes stay parameters. Its domain is every tile that touches the
/// tensor, so counting its pairs gives the data all tiles move.
pub fn tile_data_maps(
    ctx: &Ctx,
    scop: &Scop,
    bands: &[BandInfo],
    band: usize,
    windows: &[Option<i64>],
) -> miette::Result<Vec<(usize, Map)>> {
    use polyhedral::isl::isl_rs::DimType;
    let image = tile_image(ctx, bands, band, windows)?;
    let mut out = Vec::new();
    for (tid, part) in image_by_tensor(scop, &image)? {
        // The tile position's parameters become the input tuple: position -> elements.
        let mut map = Map::from_range(part).isl("a tile's data as a map")?;
        let mut moved = Vec::new();
        loop {
            let n = map.dim(DimType::Param).isl("counting parameters")?;
            let mut found = None;
            for k in 0..n {
                let name = map
                    .get_dim_name(DimType::Param, k as u32)
                    .isl("a parameter's name")?
                    .to_string();
                if name.starts_with("polyc_") {
                    found = Some((k as u32, name));
                    break;
                }
            }
            let Some((pos, name)) = found else { break };
            let at = moved.len() as u32;
            map = map
                .move_dims(DimType::In, at, DimType::Param, pos, 1)
                .isl("moving a tile position into the domain")?;
            moved.push(name);
        }
        // Aligned windows: tiles start at multiples of their size.
        let mut cons = Vec::new();
        for (d, w) in windows.iter().enumerate() {
            if let Some(sz) = w {
                if moved.iter().any(|m| *m == format!("polyc_o{d}")) {
                    cons.push(format!("polyc_o{d} mod {sz} = 0"));
                }
            }
        }
        if !cons.is_empty() {
            let text = format!(
                "{}{{ [{}] : {} }}",
                scop.param_prefix(),
                moved.join(", "),
                cons.join(" and ")
            );
            let aligned = Set::read_from_str(&ctx.isl, &text).isl("reading aligned tiles")?;
            map = map
                .intersect_domain(aligned)
                .isl("restricting to aligned tiles")?;
        }
        out.push((tid, map));
    }
    Ok(out)
}

/// The largest footprint of one tile over the tile positions, as readable
/// quasi-polynomials in the symbolic sizes (see [`symbolic_footprints`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SymbolicFootprint {
    /// Elements.
    pub elements: String,
    /// Bytes.
    pub bytes: String,
}

/// The instances of `inst` whose value under `map` lies in the set `text`.
fn restrict(ctx: &Ctx, inst: UnionSet, map: &UnionMap, text: &str) -> miette::Result<UnionSet> {
    let set = UnionSet::read_from_str(&ctx.isl, text).isl("reading a tile window")?;
    let sel = map
        .copy()
        .isl("copying a map")?
        .intersect_range(set)
        .isl("selecting a tile")?
        .domain()
        .isl("a tile's instances")?;
    inst.intersect(sel).isl("restricting to a tile")
}

/// The tile band of one level: member `d` of `schedule` divided by `sizes[d]` and rounded
/// down, for the members with a size (in order). Returns isl's text of the new schedule.
pub fn tile_schedule_text(
    ctx: &Ctx,
    schedule: &str,
    sizes: &[Option<i64>],
) -> miette::Result<String> {
    let mupa = MultiUnionPwAff::read_from_str(&ctx.isl, schedule).isl("reading a band schedule")?;
    let umap = UnionMap::from_multi_union_pw_aff(mupa).isl("a band schedule as a map")?;
    let (t, tt) = tuple(sizes.len(), "t");
    let outs: Vec<String> = sizes
        .iter()
        .enumerate()
        .filter_map(|(d, s)| s.map(|s| format!("floor({}/{s})", t[d])))
        .collect();
    let text = format!("{{ {tt} -> [{}] }}", outs.join(", "));
    let div = UnionMap::read_from_str(&ctx.isl, &text).isl("reading a tiling map")?;
    let tiled = umap.apply_range(div).isl("tiling a band")?;
    let mupa = MultiUnionPwAff::from_union_map(tiled).isl("a tile band schedule")?;
    polyhedral::isl::ffi::schedule_tree::multi_union_pw_aff_text(&mupa)
        .ok_or_else(|| miette::miette!("isl could not print a tile band's schedule"))
}

/// isl text of a union set (for debugging messages).
pub fn uset_text(u: &UnionSet) -> String {
    union_set_text(u)
}

/// The outermost band holding the program's last statement (the live-out band that
/// post-tiling fusion fuses into), by index into `bands`.
pub(crate) fn live_out_band(scop: &Scop, bands: &[BandInfo]) -> Option<usize> {
    let last = scop.stmt_names.len().checked_sub(1)?;
    bands
        .iter()
        .position(|b| b.outer.is_empty() && b.stmts.contains(&last))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boxes(text: &str) -> Vec<Vec<u64>> {
        let ctx = Ctx::new();
        let set = Set::read_from_str(&ctx.isl, text).expect("a set");
        box_of_pieces(&set).expect("boxes").expect("pieces").boxes
    }

    #[test]
    fn neighbouring_pieces_share_a_box_and_distant_ones_do_not() {
        // A stencil's shifted reads overlap: one box around both.
        assert_eq!(
            boxes("{ A[i, j] : 0 <= i < 4 and 0 <= j < 32; A[i, j] : 1 <= i < 5 and 2 <= j < 34 }"),
            vec![vec![5, 34]]
        );
        // A phase that isl shifted 2047 columns on: a box around both would hold every
        // column between them.
        assert_eq!(
            boxes("{ A[i, j] : 0 <= i < 4 and 0 <= j < 32; A[i, j] : 0 <= i < 4 and 2047 <= j < 2079 }"),
            vec![vec![4, 32], vec![4, 32]]
        );
    }
}
