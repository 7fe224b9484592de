//! The default tiling policy, used for statements without a spec.

use crate::analysis::{
    collect_bands, live_out_band, member_carries_self_dependence, permutable_prefix,
    tile_footprint, BandInfo,
};
use crate::cx::TileCx;
use crate::fuse::FuseCost;
use crate::fusion_tile::plan_fusion_tile;
use crate::spec::{fixed_level, DimSpec, LevelSize, SizeSpec, StmtSpec, TileSpec};
use polyhedral::deps::DepKind;
use polyhedral::ir::TensorRole;
use polyhedral::ir::{Aff, Span};
use polyhedral::isl::isl_rs::DimType;
use polyhedral::isl::IslResultExt;
use schedule_tree::{Buffer, BufferRole, Level, ScheduleTree};

/// The rule [`default_spec`] follows, in words (for `--help` texts and reports).
pub const DEFAULT_POLICY: &str = "\
every outermost band is tiled over its permutable prefix (bands inside other bands are \
left alone), unless all the data the band touches already fits in half of L1. A band whose \
tilable members (at least three) are all sequential (a time-iterated stencil that isl \
skewed, such as `(t, 2t + i, 2t + j)`), and whose innermost member carries no statement's \
dependence on itself, keeps that member whole and gets one tile \
level at L2 (L1 without one) over the others: the largest power-of-two box up to 256 per \
member whose footprint fits half of it, halving the largest member first (the outermost \
on ties); it is left untiled when its data fits half of that cache. On the CPU such tiles \
run in wavefronts (the `wavefront` stage). For other bands, trailing \
members with fewer than 8 iterations, or whose tile would cover their whole extent, are \
left whole. L1 sizes start at the largest power of two <= min(extent, 256) per member; \
while the footprint of one L1 tile exceeds half of L1, the largest size is halved (the \
outermost one on ties), giving square-ish power-of-two tiles clamped to the extents. L2 \
sizes are the L1 sizes times the largest power of two f such that the L2 tile \
(min(f * L1 size, extent) per member) fits half of L2; the L2 level is dropped when it \
equals the L1 tile or covers the whole band. A member whose extent is symbolic (unknown \
until run time) is sized as if its extent were 1024 (`ASSUMED_EXTENT`), and a tile never \
counts as covering it: it always gets a tile loop, its last tile partial. Capacities do \
not depend on the extent: every footprint at a checked level must be a box bounded by the \
tile sizes, so a band whose tile spans a symbolic extent that no level tiles (an inner band, \
a member outside the permutable prefix) is left untiled, as are bands with no tilable \
member or no tile that fits. The spec names a live-out statement of \
the band (one whose results no other statement of the band reads or overwrites). \
Register tiles: when the target has a register file and the band's tilable prefix has a \
reduction member (not coincident) besides at least two coincident ones, the band gets a \
register tile instead of the L1 level: the two innermost coincident members u, v get \
`reg` sizes r and R / (2 * 8 * element bytes) (a tile of the written tensor in half the \
register file R: 8 x 32 for f32 in 2 KiB, two vectors per row on AVX-512), where r is 8 \
when some operand spans v but not u (GEMM's B: its vectors are shared by the rows) and 4 \
otherwise (the conv chain's window: rows share nothing and only add register pressure); \
reductions stay whole at `reg`, and other coincident members get 1. When one row panel \
(u at r, v and the reductions whole) fits half of L2, the data streams through the \
caches with its reuse and there is no L2 level. Otherwise, at `L2`, each reduction member \
with at least 8 iterations gets the largest power of two <= 512 for which one register \
tile's sweep over it (footprint of u, v at their reg sizes) fits 3/4 of L1 (smaller ones \
stay whole), v the whole extent if the tile (r rows) fits half of L2 (else halved, rounded \
up to a multiple of its reg size, until it does), and u the largest multiple of r <= 256 for which the operand tiles (all but the \
accumulator, which stays in registers) fit half of L2 and the whole L2 tile fits L2. \
Trailing members that no level tiles are left out of the spec. \
Accumulator rows: a band whose tilable prefix (bound extents) has exactly one coincident \
member p besides reductions, where every tensor the band writes is one element while p is \
fixed (matrix-vector products, column sums: each statement updates an accumulator indexed \
by p alone, or runs once per p), gets a `reg` size on p and keeps the reductions whole, \
when the data of one such tile fits half of L2: 8 rows (halved while the band's \
accumulators would take more than 16 registers, one each), or, when a second value of p \
moves every tensor it moves along its last dimension only (`y(j) += A(i, j) * t(i)`: the \
accumulators are vectors), R / (8 * element bytes * accumulators) lanes (32 for f64, 64 \
for f32). The accumulators then stay in registers across the whole reduction, as that \
many independent chains. \
Fusion planning: when the live-out band (the one holding the last statement) reads a \
temporary produced outside it at an index that leaves out a tiled member, that member is \
made whole at an outermost `L2` level (added if absent), whose other sizes halve from their \
`L2` sizes (or min(extent, 256)) down to their inner sizes until the tile fits half of \
L2; inner sizes are clamped to the outer ones. \
Epilogue rows: when the live-out band is element-wise (every member coincident) and reads, \
at its own iterators, a tensor that a band with a reduction member accumulates (a division \
or scaling after a product), its outermost row size grows to the largest power of two <= \
256 (and <= the rows' extent) for which one row block of that band (other members whole) \
and of the live-out band each fit half of L2, if that is more rows (an `L2` level is added \
if absent): post-tiling fusion runs the product in that tile. \
When instead the live-out band's only level is its register tiles and it reads such a \
temporary through a window (every member in the index, with offsets: a convolution of the \
temporary), the target's cost figures weigh three ways: fusing at the register tile \
(recomputing its halo, the producer interleaved with the arithmetic), fusing at an outer \
`L2` row block (whole along the members after the register tile's row member, as many \
rows as fit half of L2; a smaller halo, but the producer runs apart from the arithmetic, \
its inputs read from DRAM) and not fusing; the row block is added when it is the \
cheapest (`polyc explain` prints the three).";

/// Rows of a default register tile.
const REG_ROWS: i64 = 8;

/// Inner band members with fewer iterations than this are not tiled by the default policy.
const MIN_TILED_EXTENT: i64 = 8;

/// The extent the default policy assumes, for choosing tile sizes, for a member whose extent
/// is symbolic: dynamic shapes are assumed large. Tile sizes are fixed numbers whatever the
/// run-time extent; the capacity checks use the tile sizes only (see [`DEFAULT_POLICY`]).
pub const ASSUMED_EXTENT: i64 = 1024;

/// Builds a spec for the bands that `given` does not touch, following [`DEFAULT_POLICY`]
/// with the `L1` and (if present) `L2` capacities of `cx`. Without an `L1` capacity the
/// result is empty. Append its statements to `given` to tile everything:
/// `spec.stmts.extend(default.stmts)`.
pub fn default_spec(
    tree: &ScheduleTree,
    cx: &TileCx,
    given: Option<&TileSpec>,
) -> miette::Result<TileSpec> {
    Ok(default_plan(tree, cx, given, None)?.spec)
}

/// The default policy's spec and what its fusion planning weighed.
#[derive(Clone, Debug, Default)]
pub struct DefaultPlan {
    /// The spec ([`default_spec`]).
    pub spec: TileSpec,
    /// Where fusion of a window chain runs, both sides and the verdict, one line each,
    /// for `polyc explain` (empty when no chain qualifies, or without cost figures).
    pub fusion: Vec<String>,
}

/// [`default_spec`], with the target's cost figures for choosing the tile at which a
/// chain read through a window fuses (see [`crate::fusion_tile`]).
pub fn default_plan(
    tree: &ScheduleTree,
    cx: &TileCx,
    given: Option<&TileSpec>,
    cost: Option<&FuseCost>,
) -> miette::Result<DefaultPlan> {
    let mut fusion = Vec::new();
    let spec = policy_spec(tree, cx, given, cost, &mut fusion)?;
    Ok(DefaultPlan { spec, fusion })
}

/// The `L1` tile (the largest power-of-two box up to 256 per member whose footprint fits
/// half of `l1`, halving its largest member) and, with an `L2` of `l2` bytes, the `L2`
/// tile (the `L1` tile doubled while it fits half of `l2`; `None` when that adds nothing).
/// `None` when no `L1` tile fits.
#[allow(clippy::type_complexity)]
fn cache_sizes(
    ext: &[i64],
    l1: u64,
    l2: Option<u64>,
    bytes: &dyn Fn(&[i64]) -> miette::Result<Option<u64>>,
    covers: &dyn Fn(usize, i64) -> bool,
) -> miette::Result<Option<(Vec<i64>, Option<Vec<i64>>)>> {
    let mut s1: Vec<i64> = ext.iter().map(|&e| pow2_floor(e.min(256))).collect();
    let fits_l1 = loop {
        match bytes(&s1)? {
            None => break false,
            Some(b) if b <= l1 / 2 => break true,
            Some(_) => {}
        }
        let Some(m) = largest(&s1) else { break false };
        if s1[m] <= 1 {
            break false;
        }
        s1[m] /= 2;
    };
    if !fits_l1 {
        return Ok(None);
    }
    for (s, e) in s1.iter_mut().zip(ext) {
        *s = (*s).min(*e);
    }
    let mut s2: Option<Vec<i64>> = None;
    if let Some(l2) = l2 {
        let mut f = 2;
        loop {
            let cand: Vec<i64> = s1.iter().zip(ext).map(|(s, e)| (s * f).min(*e)).collect();
            if s2.as_ref() == Some(&cand) {
                break;
            }
            match bytes(&cand)? {
                Some(b) if b <= l2 / 2 => s2 = Some(cand),
                _ => break,
            }
            if f > 1 << 20 {
                break;
            }
            f *= 2;
        }
        if let Some(v) = &s2 {
            if *v == s1 || (0..ext.len()).all(|m| covers(m, v[m])) {
                s2 = None;
            }
        }
    }
    Ok(Some((s1, s2)))
}

/// What sizing a band's tiles reads: its extents (symbolic ones at their bound or
/// [`ASSUMED_EXTENT`]), which are symbolic, the window of a tile, and the footprint of a
/// tile in bytes without one tensor.
#[allow(clippy::type_complexity)]
struct Fit<'f> {
    ext_all: &'f [i64],
    sym: &'f [bool],
    windows: &'f dyn Fn(&[i64]) -> Vec<Option<i64>>,
    bytes_but: &'f dyn Fn(&[i64], Option<usize>) -> miette::Result<Option<u64>>,
}

/// The spec of a band's register tiles with their `L2` tiles ([`register_tiles`]), for
/// the live-out statement; `None` when the band has none.
#[allow(clippy::too_many_arguments)]
fn register_spec(
    cx: &TileCx,
    bands: &[BandInfo],
    bi: usize,
    band: &BandInfo,
    tilable: usize,
    fit: &Fit,
    (reg_buf, reg_bytes): (Buffer, u64),
    (l1, l2): (u64, u64),
    l2_buf: Buffer,
) -> miette::Result<Option<StmtSpec>> {
    let elem = cx.elem_bytes();
    let names = &cx.scop.stmt_names;
    let stmt = live_out(cx, band)?;
    let acc = cx.program.stmts[stmt].lhs;
    let ebytes = elem[acc] as i64;
    // Bytes of a tile: all of it, or (true) without the accumulator.
    let footprint =
        |s: &[i64], resident: bool| (fit.bytes_but)(s, if resident { Some(acc) } else { None });
    // Whether some operand other than the accumulator spans member `v` but not
    // member `u` (GEMM's B row): its vectors are shared by the register tile's rows.
    let shared_rows = |u: usize, v: usize| -> miette::Result<bool> {
        let boxes = |su: i64, sv: i64| -> miette::Result<Vec<(usize, Option<u64>)>> {
            let s: Vec<i64> = (0..fit.ext_all.len())
                .map(|m| match m {
                    _ if m == u => su,
                    _ if m == v => sv,
                    _ => 1,
                })
                .collect();
            let fps = tile_footprint(
                cx.ctx,
                cx.scop,
                bands,
                bi,
                &(fit.windows)(&s),
                &cx.elem_bytes(),
            )?;
            Ok(fps
                .iter()
                .filter(|f| f.tensor_id != acc)
                .map(|f| (f.tensor_id, f.elements))
                .collect())
        };
        let (one, rows, cols) = (boxes(1, 1)?, boxes(2, 1)?, boxes(1, 2)?);
        Ok(one.iter().zip(&rows).zip(&cols).any(|((o, r), c)| {
            o.1.is_some() && r.1 == o.1 && c.1.zip(o.1).is_some_and(|(c, o)| c > o)
        }))
    };
    let dims = match accumulator_rows(cx, bands, bi, tilable, fit, (reg_bytes, l2))? {
        Some(dims) => Some(dims),
        None => register_tiles(
            &band.coincident[..tilable],
            fit.ext_all,
            fit.sym,
            reg_bytes,
            ebytes,
            l1,
            l2,
            &footprint,
            &shared_rows,
        )?,
    };
    if let Some(dims) = dims {
        return Ok(Some(StmtSpec {
            stmt: names[stmt].clone(),
            stmt_span: Span::default(),
            dims: dims
                .into_iter()
                .map(|(l2s, regs)| {
                    let mut levels: Vec<LevelSize> =
                        l2s.into_iter().map(|s| fixed_level(s, l2_buf)).collect();
                    if let Some(r) = regs {
                        levels.push(fixed_level(r, reg_buf));
                    }
                    DimSpec {
                        levels,
                        span: Span::default(),
                    }
                })
                .collect(),
            span: Span::default(),
        }));
    }
    Ok(None)
}

/// The spec of a statement's cache tiles: its first `k` members at `s1` in `l1_buf`, and
/// at `s2` in `l2_buf` outside them where there is an `L2` tile.
fn cache_spec(
    stmt: &str,
    k: usize,
    s1: &[i64],
    s2: Option<&[i64]>,
    l1_buf: Buffer,
    l2_buf: Buffer,
) -> StmtSpec {
    let dims = (0..k)
        .map(|m| {
            let mut levels = Vec::new();
            if let Some(v) = s2 {
                levels.push(fixed_level(v[m], l2_buf));
            }
            levels.push(fixed_level(s1[m], l1_buf));
            DimSpec {
                levels,
                span: Span::default(),
            }
        })
        .collect();
    StmtSpec {
        stmt: stmt.to_string(),
        stmt_span: Span::default(),
        dims,
        span: Span::default(),
    }
}

/// The body of [`default_plan`].
fn policy_spec(
    tree: &ScheduleTree,
    cx: &TileCx,
    given: Option<&TileSpec>,
    cost: Option<&FuseCost>,
    fusion: &mut Vec<String>,
) -> miette::Result<TileSpec> {
    let buffers: Vec<Buffer> = cx.levels.iter().map(|l| l.buffer).collect();
    let mut out = TileSpec {
        stmts: Vec::new(),
        buffers: buffers.clone(),
    };
    // The cache levels by role, outermost first: the innermost is "L1", the one outside it
    // "L2" (whatever the description calls them).
    let caches: Vec<&Level> = cx
        .levels
        .iter()
        .filter(|l| l.role == BufferRole::Cache)
        .collect();
    let Some(&&Level {
        buffer: l1_buf,
        bytes: l1,
        ..
    }) = caches.last()
    else {
        return Ok(out);
    };
    let l2_level = caches.len().checked_sub(2).map(|i| *caches[i]);
    let l2 = l2_level.map(|l| l.bytes);
    // Only used where `l2` is present.
    let l2_buf = l2_level.map_or(l1_buf, |l| l.buffer);
    let reg = cx
        .levels
        .iter()
        .find(|l| l.role.is_register_file())
        .map(|l| (l.buffer, l.bytes));
    let (_s, bands) = collect_bands(cx.ctx, cx.scop, tree)?;
    let elem = cx.elem_bytes();
    let names = &cx.scop.stmt_names;
    for (bi, band) in bands.iter().enumerate() {
        if !band.outer.is_empty() || band.stmts.is_empty() {
            continue;
        }
        if let Some(g) = given {
            if band.stmts.iter().any(|&s| g.get(&names[s]).is_some()) {
                continue;
            }
        }
        let (tilable, _) = permutable_prefix(cx.ctx, cx.deps, band, band.n_members())?;
        if tilable == 0 {
            continue;
        }
        // Symbolic extents: sizes are chosen as if they were ASSUMED_EXTENT, but no tile
        // covers them.
        let sym: Vec<bool> = band.extents[..tilable]
            .iter()
            .map(|e| e.is_none())
            .collect();
        // A symbolic extent with an upper bound (`--dynamic T=1..128`) is sized at it.
        let ext_all: Vec<i64> = band.extents[..tilable]
            .iter()
            .zip(&band.max_extents)
            .map(|(e, b)| e.or(*b).unwrap_or(ASSUMED_EXTENT))
            .collect();
        // Whether a tile of `size` covers member `m` whole.
        let covers = |m: usize, size: i64| !sym[m] && size >= ext_all[m];
        let windows = |s: &[i64]| -> Vec<Option<i64>> {
            (0..band.n_members()).map(|m| s.get(m).copied()).collect()
        };
        // The footprint of a tile in bytes, without the tensor `skip` if given.
        let bytes_but = |s: &[i64], skip: Option<usize>| -> miette::Result<Option<u64>> {
            let fps = tile_footprint(cx.ctx, cx.scop, &bands, bi, &windows(s), &elem)?;
            Ok(fps
                .iter()
                .filter(|f| Some(f.tensor_id) != skip)
                .map(|f| f.bytes)
                .sum())
        };
        let bytes = |s: &[i64]| bytes_but(s, None);
        let fit = Fit {
            ext_all: &ext_all,
            sym: &sym,
            windows: &windows,
            bytes_but: &bytes_but,
        };
        if let (Some(reg), Some(l2)) = (reg, l2) {
            if let Some(spec) =
                register_spec(cx, &bands, bi, band, tilable, &fit, reg, (l1, l2), l2_buf)?
            {
                out.stmts.push(spec);
                continue;
            }
        }
        if let Some(spec) = wavefront_spec(cx, band, tilable, &fit, (l1, l2, l1_buf, l2_buf))? {
            out.stmts.push(spec);
            continue;
        }
        // Inner members with tiny extents (a reduction over a 3x3 window, the position of
        // fused statements) gain nothing from tiles: leave them whole.
        let mut k = tilable;
        while k > 0 && ext_all[k - 1] < MIN_TILED_EXTENT {
            k -= 1;
        }
        if k == 0 {
            continue;
        }
        let ext = &ext_all[..k];
        // A band whose whole data already fits in half of L1 gains nothing from tiles.
        if !sym.iter().any(|&x| x) && matches!(bytes(ext)?, Some(b) if b <= l1 / 2) {
            continue;
        }
        let Some((s1, s2)) = cache_sizes(ext, l1, l2, &bytes, &covers)? else {
            continue;
        };
        // Trailing members whose tiles cover their whole extent at every level would only
        // add a one-iteration tile loop: leave them out of the spec (untiled).
        let whole = |m: usize| covers(m, s1[m]) && s2.as_ref().is_none_or(|v| covers(m, v[m]));
        while k > 0 && whole(k - 1) {
            k -= 1;
        }
        if k == 0 {
            continue;
        }
        let stmt = live_out(cx, band)?;
        out.stmts.push(cache_spec(
            &names[stmt],
            k,
            &s1,
            s2.as_deref(),
            l1_buf,
            l2_buf,
        ));
    }
    if let Some(l2) = l2 {
        plan_fusion(cx, &bands, &mut out, l2_buf, l2, &elem)?;
        if let Some((bi, spec)) = live_out_spec(cx, &bands, &mut out) {
            plan_epilogue_rows(cx, (&bands, bi), spec, (l2_buf, l2), &elem)?;
        }
        if let Some(cost) = cost {
            *fusion = plan_fusion_tile(cx, &bands, &mut out, (l2_buf, l2), &elem, cost)?;
        }
        if let Some((reg_buf, _)) = reg {
            plan_packing(cx, &bands, &mut out, (l1_buf, l1), l2_buf, reg_buf, &elem)?;
        }
    }
    Ok(out)
}

/// The fewest tilable members a band needs for [`wavefront_spec`]: two tiled ones besides
/// the innermost, which stays whole.
const WAVEFRONT_MIN_MEMBERS: usize = 3;

/// The spec of a band whose tilable members are all sequential (none coincident: a
/// time-iterated stencil that isl skewed into `(t, 2t + i, 2t + j)`) and whose innermost
/// one carries no statement's dependence on itself (each statement's row could run as
/// vector lanes; Gauss-Seidel's rows cannot), `None` for other bands. Its tiles can only run in parallel as wavefronts (the CPU's
/// `wavefront` pass), and its innermost member is the one its vector loops run along, so:
/// the innermost tilable member stays whole (a tile holds whole rows, and the statements
/// under the tile run as separate, guard-free row loops), and the other members get one
/// tile level at the outermost cache (`L2` when there is one), the largest power-of-two
/// box up to 256 per member whose footprint fits half of it, halving the largest member
/// first. A band whose data fits half of that cache, or whose tiles would cover every
/// member, is left untiled.
fn wavefront_spec(
    cx: &TileCx,
    band: &BandInfo,
    tilable: usize,
    fit: &Fit,
    (l1, l2, l1_buf, l2_buf): (u64, Option<u64>, Buffer, Buffer),
) -> miette::Result<Option<StmtSpec>> {
    let ext_all = fit.ext_all;
    let bytes = |s: &[i64]| (fit.bytes_but)(s, None);
    let covers = |m: usize, size: i64| !fit.sym[m] && size >= ext_all[m];
    if tilable < WAVEFRONT_MIN_MEMBERS
        || band.coincident[..tilable].iter().any(|&c| c)
        || member_carries_self_dependence(cx.ctx, cx.deps, band, tilable - 1)?
    {
        return Ok(None);
    }
    let (budget, buf) = match l2 {
        Some(l2) => (l2, l2_buf),
        None => (l1, l1_buf),
    };
    let symbolic = band.extents[..tilable].iter().any(|e| e.is_none());
    if !symbolic && matches!(bytes(&ext_all[..tilable])?, Some(b) if b <= budget / 2) {
        return Ok(None);
    }
    let k = tilable - 1;
    let Some((sizes, _)) = cache_sizes(&ext_all[..k], budget, None, &bytes, &covers)? else {
        return Ok(None);
    };
    if (0..k).all(|m| covers(m, sizes[m])) {
        return Ok(None);
    }
    let stmt = live_out(cx, band)?;
    let name = &cx.scop.stmt_names[stmt];
    Ok(Some(cache_spec(name, k, &sizes, None, buf, buf)))
}

/// The `L1` tile of [`plan_packing`] for band `pi`, whose spec has `n` members with
/// register sizes `regs` (its vector member `v`): the sizes of those members, and of the
/// trailing reduction members when they are tiled too. [`PACKED_ROWS`] rows (then half
/// of them) with the trailing reductions whole, else halved down to [`MIN_PACKED_DEPTH`]:
/// a pack that only one or two register tiles read costs its copy for little reuse, so
/// the reduction is split before the rows go below half (A·Bᵀ at 2048 × 512 × 256, `K`
/// whole, got 8 rows, no pack of `B`, and ran at 3 GFLOP/s). Failing that, the rows halve
/// with the reductions whole, down to one register tile. `None` when nothing fits `L1`.
fn packed_tile(
    cx: &TileCx,
    (bands, pi): (&[BandInfo], usize),
    n: usize,
    (v, regs): (usize, &[i64]),
    l1: u64,
    elem: &[u64],
) -> miette::Result<Option<(Vec<i64>, Vec<i64>)>> {
    let band = &bands[pi];
    let ext = |m: usize| {
        band.extents
            .get(m)
            .copied()
            .flatten()
            .unwrap_or(ASSUMED_EXTENT)
    };
    // The trailing members the spec leaves whole can be split only if all are bound
    // reductions.
    let trailing: Vec<usize> = (n..band.n_members()).collect();
    let splittable = !trailing.is_empty()
        && trailing
            .iter()
            .all(|&m| !band.coincident[m] && band.extents.get(m).copied().flatten().is_some());
    let sizes_at = |rows: i64| -> Vec<i64> {
        (0..n)
            .map(|m| {
                let r = regs[m];
                if m == v {
                    return r;
                }
                (rows.min(ext(m)) + r - 1) / r * r
            })
            .collect()
    };
    let fits = |sizes: &[i64], depth: Option<i64>| -> miette::Result<bool> {
        let w: Vec<Option<i64>> = (0..band.n_members())
            .map(|m| sizes.get(m).copied().or(depth.map(|d| d.min(ext(m)))))
            .collect();
        let fps = tile_footprint(cx.ctx, cx.scop, bands, pi, &w, elem)?;
        let bytes: Option<u64> = fps.iter().map(|f| f.bytes).sum();
        Ok(bytes.is_some_and(|b| b <= l1))
    };
    for rows in [PACKED_ROWS, PACKED_ROWS / 2] {
        let sizes = sizes_at(rows);
        if fits(&sizes, None)? {
            return Ok(Some((sizes, Vec::new())));
        }
        if !splittable {
            continue;
        }
        let deepest = trailing.iter().map(|&m| ext(m)).max().unwrap_or(1);
        let mut depth = pow2_floor(deepest);
        if depth >= deepest {
            depth /= 2;
        }
        while depth >= MIN_PACKED_DEPTH {
            if fits(&sizes, Some(depth))? {
                let red = trailing.iter().map(|&m| depth.min(ext(m))).collect();
                return Ok(Some((sizes, red)));
            }
            depth /= 2;
        }
    }
    // Rows halved (in whole register tiles) until the tile fits L1, reductions whole.
    let mut rows = PACKED_ROWS;
    loop {
        let sizes = sizes_at(rows);
        if fits(&sizes, None)? {
            return Ok(Some((sizes, Vec::new())));
        }
        if sizes.iter().zip(regs).all(|(s, r)| s <= r) {
            return Ok(None);
        }
        rows /= 2;
    }
}

/// The smallest split of a reduction that [`packed_tile`] makes.
const MIN_PACKED_DEPTH: i64 = 32;

/// Rows of the `L1` tile [`plan_packing`] gives a producer's register tiles.
const PACKED_ROWS: i64 = 64;

/// Packing levels for register tiles that read an operand across its rows (`B(j, k)` in
/// `C(i, j) += A(i, k) * B(j, k)` with vectors along `j`; attention's `K` in
/// `S(i, j) += Q(i, d) * K(j, d)`): such a band whose register tiles have no cache level
/// above them (its data fits `L2`, so the policy gave it none) gets an `L1` level right
/// above them (`PACKED_ROWS` rows, rounded to whole register tiles and halved until the
/// tile fits `L1`, by one register tile along the vector member), where promotion packs
/// the operand with the vector member's dimension last. Post-tiling fusion grafts a producer's levels inside the live-out's
/// outermost level only, so when a producer gets one and the live-out's outermost level
/// is `L1`, that level becomes `L2`: the fused tile then holds the producer's `L1` tiles.
/// Nothing changes when no band needs it.
fn plan_packing(
    cx: &TileCx,
    bands: &[BandInfo],
    out: &mut TileSpec,
    (l1_buf, l1): (Buffer, u64),
    l2_buf: Buffer,
    reg_buf: Buffer,
    elem: &[u64],
) -> miette::Result<()> {
    let scop = cx.scop;
    let Some(bi) = live_out_band(cx.scop, bands) else {
        return Ok(());
    };
    let spec_of = |out: &TileSpec, b: &BandInfo| {
        out.stmts
            .iter()
            .position(|st| b.stmts.iter().any(|&s| scop.stmt_names[s] == st.stmt))
    };
    let Some(live) = spec_of(out, &bands[bi]) else {
        return Ok(());
    };
    let first_in = |st: &StmtSpec, buf: Buffer| {
        !st.dims.is_empty()
            && st
                .dims
                .iter()
                .all(|d| d.levels.first().is_some_and(|l| l.buffer == buf))
    };
    let live_in_l1 = first_in(&out.stmts[live], l1_buf);
    let mut packed = false;
    for (pi, band) in bands.iter().enumerate() {
        if !band.outer.is_empty() {
            continue;
        }
        let Some(si) = spec_of(out, band) else {
            continue;
        };
        if !first_in(&out.stmts[si], reg_buf) {
            continue;
        }
        let n = out.stmts[si].dims.len();
        // Packing serves the rows of 2-d register tiles; accumulator rows (one coincident
        // member) read each operand element once.
        let coincident = band.coincident[..n.min(band.n_members())].iter();
        if coincident.filter(|&&c| c).count() < 2 {
            continue;
        }
        let Some(v) = band.coincident[..n.min(band.n_members())]
            .iter()
            .rposition(|&c| c)
        else {
            continue;
        };
        if !reads_across_rows(cx, band, v)? {
            continue;
        }
        let regs: Vec<i64> = out.stmts[si]
            .dims
            .iter()
            .map(|d| match d.levels.first().map(|l| &l.size) {
                Some(SizeSpec::Fixed(x)) => (*x).max(1),
                _ => 1,
            })
            .collect();
        let Some((sizes, red)) = packed_tile(cx, (bands, pi), n, (v, &regs), l1, elem)? else {
            continue;
        };
        for (d, size) in out.stmts[si].dims.iter_mut().zip(sizes) {
            d.levels.insert(0, fixed_level(size, l1_buf));
        }
        for size in red {
            out.stmts[si].dims.push(DimSpec {
                levels: vec![fixed_level(size, l1_buf)],
                span: Span::default(),
            });
        }
        packed |= pi != bi;
    }
    if packed && live_in_l1 {
        for d in &mut out.stmts[live].dims {
            d.levels[0].buffer = l2_buf;
        }
    }
    Ok(())
}

/// Whether one step of member `v` of `band` moves a read of some tensor the band does not
/// write along a dimension other than its last (the register tile would gather it).
fn reads_across_rows(cx: &TileCx, band: &BandInfo, v: usize) -> miette::Result<bool> {
    let scop = cx.scop;
    let isl = &cx.ctx.isl;
    let written: Vec<usize> = band
        .stmts
        .iter()
        .map(|&s| scop.stmt_writes[s].tensor)
        .collect();
    for step in scop.member_steps(isl, &band.schedule, band.n_members(), v)? {
        if written.contains(&step.tensor) {
            continue;
        }
        let ten = &cx.program.tensors[step.tensor];
        let rank = ten.shape.len();
        let along_last = scop.unit_steps(isl, &ten.name, rank, rank.saturating_sub(1))?;
        if !step
            .deltas
            .is_subset(&along_last)
            .isl("testing the access steps")?
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The live-out band (the one holding the program's last statement) and its statement's
/// entry in `out`, if it has one.
fn live_out_spec<'a>(
    cx: &TileCx,
    bands: &[BandInfo],
    out: &'a mut TileSpec,
) -> Option<(usize, &'a mut StmtSpec)> {
    let bi = live_out_band(cx.scop, bands)?;
    let names = &cx.scop.stmt_names;
    let spec = out
        .stmts
        .iter_mut()
        .find(|st| bands[bi].stmts.iter().any(|&s| names[s] == st.stmt))?;
    Some((bi, spec))
}

/// Fusion planning: the live-out band (the one holding the program's last statement) reads
/// temporaries that earlier statements produce. Where such a read does not involve a band
/// member (softmax's `s(r)` in `Y(r, j) = e(r, j) / s(r)`), every tile along that member
/// needs the same producer instances, which post-tiling fusion would recompute once per
/// tile. Such members stay whole at the outermost level (an `L2` row block; an `L2` level
/// is added if the spec has none), whose other sizes halve until its footprint fits half
/// of `L2`; inner levels keep their sizes, clamped to the outer ones. Nothing changes when
/// no member qualifies, the qualifying ones are whole at the outermost level already, a
/// qualifying member's extent is symbolic, every tiled member would be whole, or no row
/// block fits.
fn plan_fusion(
    cx: &TileCx,
    bands: &[BandInfo],
    out: &mut TileSpec,
    l2_buf: Buffer,
    l2: u64,
    elem: &[u64],
) -> miette::Result<()> {
    let scop = cx.scop;
    let Some((bi, spec)) = live_out_spec(cx, bands, out) else {
        return Ok(());
    };
    let band = &bands[bi];
    let n = spec.dims.len();
    let mut whole = vec![false; n];
    for &s in &band.stmts {
        if !identity_prefix(cx, band, s, n)? {
            return Ok(());
        }
        for a in &scop.stmt_reads[s] {
            let t = a.tensor;
            let produced_elsewhere = (0..scop.stmt_names.len())
                .any(|p| !band.stmts.contains(&p) && scop.stmt_writes[p].tensor == t);
            if cx.program.tensors[t].role != TensorRole::Temp || !produced_elsewhere {
                continue;
            }
            for (m, w) in whole.iter_mut().enumerate() {
                *w |= !a.index.iter().any(|ix| ix.uses_iter(m));
            }
        }
    }
    if !whole.iter().any(|&w| w) || whole.iter().all(|&w| w) {
        return Ok(());
    }
    let mut ext = Vec::with_capacity(n);
    for (m, &w) in whole.iter().enumerate() {
        match band.extents.get(m).copied().flatten() {
            Some(e) => ext.push(e),
            None if w => return Ok(()),
            None => ext.push(ASSUMED_EXTENT),
        }
    }
    let size_at = |d: &DimSpec, i: usize| match d.levels.get(i).map(|l| &l.size) {
        Some(SizeSpec::Fixed(v)) => Some(*v),
        _ => None,
    };
    // Nothing to do when every such member is whole at the outermost level already.
    if (0..n).all(|m| !whole[m] || size_at(&spec.dims[m], 0).is_none_or(|v| v >= ext[m])) {
        return Ok(());
    }
    let has_outer = spec
        .dims
        .iter()
        .all(|d| d.levels.first().is_some_and(|l| l.buffer == l2_buf));
    // Start from the outer sizes (or the extents), whole members whole.
    let mut sizes: Vec<i64> = (0..n)
        .map(|m| {
            if whole[m] {
                ext[m]
            } else if has_outer {
                size_at(&spec.dims[m], 0).unwrap_or(ext[m])
            } else {
                ext[m].min(256)
            }
        })
        .collect();
    // The smallest each member may shrink to: its next level's size.
    let floor: Vec<i64> = (0..n)
        .map(|m| {
            let inner = if has_outer { 1 } else { 0 };
            size_at(&spec.dims[m], inner).unwrap_or(1).max(1)
        })
        .collect();
    let windows: Vec<Option<i64>> = (0..band.n_members())
        .map(|m| sizes.get(m).copied())
        .collect();
    let mut fits = false;
    let mut w = windows;
    for _ in 0..64 {
        for (m, s) in sizes.iter().enumerate() {
            w[m] = Some(*s);
        }
        let fps = tile_footprint(cx.ctx, scop, bands, bi, &w, elem)?;
        let bytes: Option<u64> = fps.iter().map(|f| f.bytes).sum();
        if bytes.is_some_and(|b| b <= l2 / 2) {
            fits = true;
            break;
        }
        let Some(m) = (0..n)
            .filter(|&m| !whole[m] && sizes[m] > floor[m])
            .max_by_key(|&m| sizes[m])
        else {
            break;
        };
        sizes[m] = (sizes[m] / 2).max(floor[m]);
    }
    if !fits {
        return Ok(());
    }
    for (m, d) in spec.dims.iter_mut().enumerate() {
        if has_outer {
            d.levels[0] = fixed_level(sizes[m], l2_buf);
        } else {
            d.levels.insert(0, fixed_level(sizes[m], l2_buf));
        }
        for l in d.levels.iter_mut().skip(1) {
            if let SizeSpec::Fixed(v) = &mut l.size {
                *v = (*v).min(sizes[m]);
            }
        }
    }
    Ok(())
}

/// Epilogue row blocks: an element-wise live-out band (every member coincident) whose
/// statements read, at their own iterators, a tensor that a reduction band accumulates
/// (attention's `O(i, e) = O(i, e) / l(i)` after `O(i, e) +=! P(i, j) * V(j, e)`) is the
/// tile that post-tiling fusion runs that reduction in. Sized by its own footprint, as any
/// element-wise band, it gets an L1-sized row block (64 rows there), and each row block
/// reads the reduction's shared operand (`V`) again. So its outermost (`L2`) row size
/// grows to the most rows, a power of two up to 256, for which one row block of the
/// reduction band (its other members whole) and of the live-out band each fit half of
/// `L2`: the row block that [`plan_fusion`] gives the reduction when it is the live-out
/// itself. Nothing changes when that is not more rows, or the row member is not the first
/// of both bands. `spec` is the live-out band `bi`'s entry.
fn plan_epilogue_rows(
    cx: &TileCx,
    (bands, bi): (&[BandInfo], usize),
    spec: &mut StmtSpec,
    (l2_buf, l2): (Buffer, u64),
    elem: &[u64],
) -> miette::Result<()> {
    let scop = cx.scop;
    let band = &bands[bi];
    if band.coincident.is_empty() || band.coincident.iter().any(|c| !c) {
        return Ok(());
    }
    let Some(SizeSpec::Fixed(current)) = spec
        .dims
        .first()
        .and_then(|d| d.levels.first())
        .map(|l| l.size.clone())
    else {
        return Ok(());
    };
    let has_outer = spec
        .dims
        .iter()
        .all(|d| d.levels.first().is_some_and(|l| l.buffer == l2_buf));
    let Some(pb) = reduction_producer(cx, bands, bi)? else {
        return Ok(());
    };
    let ext = band
        .extents
        .first()
        .copied()
        .flatten()
        .unwrap_or(ASSUMED_EXTENT);
    let mut rows = 256;
    while rows > ext {
        rows /= 2;
    }
    while rows > current {
        let fits = |b: usize| -> miette::Result<bool> {
            let mut w = vec![None; bands[b].n_members()];
            w[0] = Some(rows);
            let fps = tile_footprint(cx.ctx, scop, bands, b, &w, elem)?;
            let bytes: Option<u64> = fps.iter().map(|f| f.bytes).sum();
            Ok(bytes.is_some_and(|b| b <= l2 / 2))
        };
        if fits(pb)? && fits(bi)? {
            if has_outer {
                spec.dims[0].levels[0] = fixed_level(rows, l2_buf);
            } else {
                // A new outer level: the rows, and the other members' tiles as they are.
                for (m, d) in spec.dims.iter_mut().enumerate() {
                    let size = match (m, &d.levels[0].size) {
                        (0, _) => rows,
                        (_, SizeSpec::Fixed(v)) => *v,
                        _ => return Ok(()),
                    };
                    d.levels.insert(0, fixed_level(size, l2_buf));
                }
            }
            return Ok(());
        }
        rows /= 2;
    }
    Ok(())
}

/// A band, other than `bi` and with no outer band, with a reduction member, that writes a
/// tensor that a statement of band `bi` reads at exactly its own iterators, and whose
/// first member is that statement's first iterator as it is `bi`'s.
fn reduction_producer(cx: &TileCx, bands: &[BandInfo], bi: usize) -> miette::Result<Option<usize>> {
    let scop = cx.scop;
    let band = &bands[bi];
    for &s in &band.stmts {
        if !identity_prefix(cx, band, s, 1)? {
            continue;
        }
        let n_iters = scop.iter_names[s].len();
        for a in &scop.stmt_reads[s] {
            let own = a.index.len() == n_iters
                && a.index
                    .iter()
                    .enumerate()
                    .all(|(k, ix)| *ix == Aff::Iter(k));
            if !own {
                continue;
            }
            for (pb, other) in bands.iter().enumerate() {
                if pb == bi || !other.outer.is_empty() || other.coincident.iter().all(|c| *c) {
                    continue;
                }
                for &p in &other.stmts {
                    let w = &scop.stmt_writes[p];
                    if w.tensor == a.tensor
                        && w.index.first() == Some(&Aff::Iter(0))
                        && identity_prefix(cx, other, p, 1)?
                    {
                        return Ok(Some(pb));
                    }
                }
            }
        }
    }
    Ok(None)
}

/// Whether the band's first `n` members are the first `n` iterators of statement `s`.
fn identity_prefix(cx: &TileCx, band: &BandInfo, s: usize, n: usize) -> miette::Result<bool> {
    let it = &cx.scop.iter_names[s];
    if it.len() < n {
        return Ok(false);
    }
    let prefix = cx.scop.param_prefix();
    let text = format!(
        "{prefix}{{ {}[{}] -> [{}] }}",
        cx.scop.stmt_names[s],
        it.join(", "),
        it[..n].join(", ")
    );
    let want = polyhedral::isl::isl_rs::Map::read_from_str(&cx.ctx.isl, &text)
        .map_err(|e| miette::miette!("{e}"))?;
    let got = band
        .map
        .copy()
        .map_err(|e| miette::miette!("{e}"))?
        .intersect_domain(
            polyhedral::isl::isl_rs::UnionSet::from_set(
                cx.scop.stmt_domains[s]
                    .copy()
                    .map_err(|e| miette::miette!("{e}"))?,
            )
            .map_err(|e| miette::miette!("{e}"))?,
        )
        .map_err(|e| miette::miette!("{e}"))?;
    let got =
        polyhedral::isl::isl_rs::Map::from_union_map(got).map_err(|e| miette::miette!("{e}"))?;
    let k = got.dim(DimType::Out).map_err(|e| miette::miette!("{e}"))?;
    if (k as usize) < n {
        return Ok(false);
    }
    let got = got
        .project_out(DimType::Out, n as u32, k as u32 - n as u32)
        .map_err(|e| miette::miette!("{e}"))?;
    let want = want
        .intersect_domain(
            cx.scop.stmt_domains[s]
                .copy()
                .map_err(|e| miette::miette!("{e}"))?,
        )
        .map_err(|e| miette::miette!("{e}"))?;
    got.is_equal(&want).map_err(|e| miette::miette!("{e}"))
}

/// The bytes of a tile of the given sizes: all of it, or (`true`) only the operands that
/// stay resident (all but the accumulator). `None` when a footprint is not a fixed box.
type Footprint<'a> = dyn Fn(&[i64], bool) -> miette::Result<Option<u64>> + 'a;

/// Per member: its `L2` size (`None`: no `L2` level) and its `reg` size (`None`: whole at
/// `reg`).
type RegisterSizes = Vec<(Option<i64>, Option<i64>)>;

/// Whether some operand of the band spans member `v` but not member `u`, so that the rows
/// (`u`) of a register tile share its vectors (GEMM's `B`, not the conv chain's window).
type SharedRows<'a> = dyn Fn(usize, usize) -> miette::Result<bool> + 'a;

/// The register-tile sizes of [`DEFAULT_POLICY`]: per member, its `L2` size and its `reg`
/// size. `None` when the band has no reduction member or fewer than two coincident
/// members, or nothing fits. `ext` has [`ASSUMED_EXTENT`] for the members that `symbolic`
/// marks.
#[allow(clippy::too_many_arguments)]
fn register_tiles(
    coincident: &[bool],
    ext: &[i64],
    symbolic: &[bool],
    reg_bytes: u64,
    elem_bytes: i64,
    l1: u64,
    l2: u64,
    footprint: &Footprint,
    shared_rows: &SharedRows,
) -> miette::Result<Option<RegisterSizes>> {
    let bytes = |s: &[i64]| footprint(s, false);
    let resident = |s: &[i64]| footprint(s, true);
    let par: Vec<usize> = (0..ext.len()).filter(|&m| coincident[m]).collect();
    let red: Vec<usize> = (0..ext.len()).filter(|&m| !coincident[m]).collect();
    if par.len() < 2 || red.is_empty() {
        return Ok(None);
    }
    let (u, v) = (par[par.len() - 2], par[par.len() - 1]);
    let cols = (reg_bytes as i64 / (2 * REG_ROWS * elem_bytes.max(1))).max(1);
    let rows = if shared_rows(u, v)? {
        REG_ROWS
    } else {
        REG_ROWS / 2
    };
    let mut regs: Vec<Option<i64>> = vec![None; ext.len()];
    regs[u] = Some(rows.min(ext[u]));
    regs[v] = Some(pow2_floor(cols).min(ext[v]));
    // Every member at its reg size (reductions whole, other members 1) ...
    let mut s: Vec<i64> = (0..ext.len())
        .map(|m| regs[m].unwrap_or(if red.contains(&m) { ext[m] } else { 1 }))
        .collect();
    // ... and v whole: when one row panel's sweep fits half of L2, the data already streams
    // through the caches with its reuse, and an L2 tile would only add packing.
    // Only with bound extents: a symbolic one may be larger than assumed, and the panel
    // would have no level bounding it.
    s[v] = ext[v];
    let bounded = !symbolic[v] && red.iter().all(|&r| !symbolic[r]);
    if bounded && matches!(bytes(&s)?, Some(b) if b <= l2 / 2) {
        return Ok(Some(trim_whole(
            (0..ext.len())
                .map(|m| match regs[m] {
                    Some(r) => (None, Some(r)),
                    None if red.contains(&m) => (None, None),
                    None => (None, Some(1)),
                })
                .collect(),
            ext,
            symbolic,
        )));
    }
    s[v] = regs[v].unwrap_or(1);
    // Reductions: the largest power of two whose register sweep fits 3/4 of L1 (small
    // ones stay whole).
    for &r in &red {
        if ext[r] < MIN_TILED_EXTENT {
            continue;
        }
        let mut size = pow2_floor(ext[r].min(512));
        loop {
            s[r] = size;
            match bytes(&s)? {
                Some(b) if b <= l1 * 3 / 4 => break,
                Some(_) if size > 1 => size /= 2,
                _ => return Ok(None),
            }
        }
    }
    // v: the whole extent if the tile (its reg rows) fits half of L2, else halved, rounded
    // up to a multiple of its register size, so that every register tile of a block but
    // the extent's last is whole (1100 halves to 560, not 550, for 16-wide tiles).
    s[v] = ext[v];
    let rv = regs[v].unwrap_or(1);
    loop {
        match bytes(&s)? {
            Some(b) if b <= l2 / 2 => break,
            Some(_) if s[v] > rv => s[v] = ((s[v] / 2).max(rv) + rv - 1) / rv * rv,
            _ => return Ok(None),
        }
    }
    // u: the largest multiple of its reg size <= 256 whose operand tiles (everything but
    // the accumulator, which lives in the register tiles and only streams through L2)
    // fit half of L2, and whose whole tile fits L2.
    let step = regs[u].unwrap_or(1);
    let mut best = step;
    let mut cand = step;
    while cand <= 256.min(ext[u].max(step)) {
        s[u] = cand;
        match (resident(&s)?, bytes(&s)?) {
            (Some(r), Some(b)) if r <= l2 / 2 && b <= l2 => best = cand,
            _ => break,
        }
        cand *= 2;
    }
    s[u] = best.min(ext[u]);
    // Other coincident members: one at a time outside (size 1 tiles are loops anyway).
    Ok(Some(trim_whole(
        (0..ext.len())
            .map(|m| (Some(s[m].min(ext[m]).max(1)), regs[m]))
            .collect(),
        ext,
        symbolic,
    )))
}

/// Register tiles of accumulators (matrix-vector products, row sums): a band whose tilable
/// prefix has exactly one coincident member `p` besides reductions, where every tensor the
/// band writes stays at one element while `p` is fixed (each statement either updates an
/// accumulator indexed by `p` alone, or runs once per `p`: an initialisation or a final
/// combination). Its `p` gets a `reg` size of [`REG_ROWS`] (halved while the band's
/// accumulators would take more than `2 * REG_ROWS` registers, one each; when `p` moves
/// every tensor it moves along its last dimension only, R / (8 * element bytes *
/// accumulators) vector lanes instead), and the reductions stay whole: the accumulators live in registers across the whole reduction, and the rows
/// give that many independent multiply-add chains where a single row is one chain, bound by
/// the add's latency (gesummv at N = 1300: 7.4 ms untiled, 1.6 ms with 8 rows). Only when
/// the data of one such tile (`p` at its size, the reductions whole) fits half of L2:
/// otherwise the cache tiles keep their reuse. `None` when the band is not of this form.
fn accumulator_rows(
    cx: &TileCx,
    bands: &[BandInfo],
    bi: usize,
    tilable: usize,
    fit: &Fit,
    (reg_bytes, l2): (u64, u64),
) -> miette::Result<Option<RegisterSizes>> {
    let band = &bands[bi];
    let coincident = &band.coincident[..tilable];
    let par: Vec<usize> = (0..tilable).filter(|&m| coincident[m]).collect();
    let &[p] = par.as_slice() else {
        return Ok(None);
    };
    if tilable < 2 || fit.sym[..tilable].iter().any(|&s| s) {
        return Ok(None);
    }
    let mut written: Vec<usize> = band
        .stmts
        .iter()
        .map(|&s| cx.program.stmts[s].lhs)
        .collect();
    written.sort_unstable();
    written.dedup();
    // A band that reads a temporary another band writes (attention's row maximum of `S`)
    // is a candidate for post-tiling fusion into its producer's tiles, where register
    // tiles that read across rows are dropped: it keeps the cache tiles.
    let reads_temporary = band.stmts.iter().any(|&s| {
        cx.scop.stmt_reads[s].iter().any(|a| {
            cx.program.tensors[a.tensor].role == polyhedral::ir::TensorRole::Temp
                && !written.contains(&a.tensor)
        })
    });
    if reads_temporary {
        return Ok(None);
    }
    // One value of `p`, everything else whole: each written tensor must be one element.
    let one_row: Vec<Option<i64>> = (0..band.n_members())
        .map(|m| (m == p).then_some(1))
        .collect();
    let elem = cx.elem_bytes();
    let fps = tile_footprint(cx.ctx, cx.scop, bands, bi, &one_row, &elem)?;
    let accumulates = written.iter().all(|t| {
        fps.iter()
            .any(|f| f.tensor_id == *t && f.elements == Some(1))
    });
    if !accumulates {
        return Ok(None);
    }
    // Two values of `p`: whether the accumulators run along their last dimension (vectors).
    let two_rows: Vec<Option<i64>> = (0..band.n_members())
        .map(|m| (m == p).then_some(2))
        .collect();
    let fps2 = tile_footprint(cx.ctx, cx.scop, bands, bi, &two_rows, &elem)?;
    // Every tensor that a second value of `p` moves must move along its last dimension
    // only (`y(j) += A(i, j) * t(i)` with `p = j`), so the lanes load whole vectors.
    let along_last = fps2.iter().all(|f2| {
        let Some(f1) = fps.iter().find(|f| f.tensor_id == f2.tensor_id) else {
            return false;
        };
        match (&f1.box_sizes, &f2.box_sizes) {
            (Some(b1), Some(b2)) if b1.len() == b2.len() && !b1.is_empty() => {
                let n = b1.len() - 1;
                b1[..n] == b2[..n]
            }
            _ => false,
        }
    });
    let w = written.len() as i64;
    let rows = if along_last {
        // Vectors of accumulators: an eighth of the register file in all (4 vectors of
        // 64 bytes in a 2 KiB file), so the vectors give independent chains too.
        let ebytes = written.iter().map(|&t| elem[t]).max().unwrap_or(1) as i64;
        pow2_floor((reg_bytes as i64 / (8 * ebytes.max(1) * w)).max(1))
    } else {
        // One register per accumulator: as many as the 2-D tile's rows hold vectors.
        let mut rows = REG_ROWS;
        while rows > 1 && rows * w > 2 * REG_ROWS {
            rows /= 2;
        }
        rows
    };
    let rows = rows.min(fit.ext_all[p]);
    let mut s: Vec<i64> = fit.ext_all[..tilable].to_vec();
    s[p] = rows;
    if !matches!((fit.bytes_but)(&s, None)?, Some(b) if b <= l2 / 2) {
        return Ok(None);
    }
    let sizes = (0..tilable)
        .map(|m| {
            if m == p {
                (None, Some(rows))
            } else {
                (None, None)
            }
        })
        .collect();
    Ok(Some(trim_whole(sizes, fit.ext_all, fit.sym)))
}

/// Drops trailing members that no level tiles (no `reg` size and no `L2` size below the
/// extent): they stay untiled. A member left without any level before a tiled one gets its
/// whole extent at `reg` (one tile: every entry of a spec names a level). A symbolic
/// member with an `L2` size is always tiled.
fn trim_whole(mut sizes: RegisterSizes, ext: &[i64], symbolic: &[bool]) -> RegisterSizes {
    while let Some(&(l2, None)) = sizes.last() {
        let m = sizes.len() - 1;
        if l2.is_some_and(|s| symbolic[m] || s < ext[m]) {
            break;
        }
        sizes.pop();
    }
    for (m, d) in sizes.iter_mut().enumerate() {
        if *d == (None, None) {
            d.1 = Some(ext[m]);
        }
    }
    sizes
}

fn pow2_floor(x: i64) -> i64 {
    let mut p = 1;
    while p * 2 <= x {
        p *= 2;
    }
    p
}

/// Index of the largest value (the first on ties).
fn largest(v: &[i64]) -> Option<usize> {
    let max = *v.iter().max()?;
    v.iter().position(|&x| x == max)
}

/// A statement of the band whose results no other statement of the band reads or
/// overwrites (the last one if several; the band's last statement if none).
/// The live-out statement of a band: one whose results no other statement of the band
/// reads or overwrites (the last such), which a spec for the band names.
pub fn live_out(cx: &TileCx, band: &BandInfo) -> miette::Result<usize> {
    let mut found = None;
    for &s in &band.stmts {
        let mut consumed = false;
        for &t in &band.stmts {
            if t == s {
                continue;
            }
            for kind in [DepKind::Raw, DepKind::Waw] {
                let m = cx.deps.between(kind, s, t)?;
                if !m.is_empty().map_err(|e| miette::miette!("{e}"))? {
                    consumed = true;
                }
            }
        }
        if !consumed {
            found = Some(s);
        }
    }
    Ok(found.unwrap_or_else(|| *band.stmts.last().unwrap_or(&0)))
}
