//! The GPU's default tiling policy ([`GPU_POLICY`]).

use miette::Result;
use polyhedral::ir::Span;
use schedule_tree::{Buffer, BufferRole, ScheduleTree};
use tiling::analysis::{collect_bands, permutable_prefix, tile_footprint};
use tiling::{fixed_level, live_out, DimSpec, StmtSpec, TileCx, TileSpec};

/// The rule [`default_spec`] follows, in words.
pub const GPU_POLICY: &str = "\
every outermost band, and every band of statements inside the program's `for` loops that \
only sequential bands (with no coincident member, which the host runs) enclose, is tiled over its permutable prefix when that \
prefix has a coincident member; c is its innermost coincident member and r the coincident member just outside it, \
if any. With a reduction member (not coincident) in the prefix (GEMM, convolution): a \
block tile of 64 x 64 (r x c) in shared memory with a 4 x 4 register tile per thread \
(16 x 16 = 256 threads), and 16 iterations of each reduction per shared-memory step; in \
f32, where the description gives its SMs and 128 x 128 blocks number at least 4 per SM \
(4 full waves at one block per SM), 128 x 128 with 8 x 8 per thread instead. \
Without one (element-wise): a block tile of 8 x 32 in shared memory, one element per \
thread (256 threads). With one coincident member only: 256 of it per block. Other \
coincident members get blocks of 1 (they map to further grid dimensions). Sizes are \
clamped to the extents. The threads of a block (per coincident member, its block tile \
over its register tile) are at most 256 and at most the description's \
max_threads_per_block: the member with the most threads is halved until they are \
(without a register level, a GEMM's block tile is 16 x 16). When the shared-memory \
footprint of a block tile does not fit the description's shared memory, the largest shared \
size is halved (register tiles shrink with it) until it fits. A symbolic extent with an \
upper bound (`--dynamic T=1..128`) counts as that bound, unless a block tile would then \
span an untiled symbolic extent (a dynamic reduction axis). Bands with other symbolic extents or no coincident member are left \
untiled (they still run, mapped as they are).";

/// The policy's first (shared size, register size) per member of a tilable prefix with
/// coincidence `coincident`, `c` its innermost coincident member and `r` the one just
/// outside it (see [`GPU_POLICY`]).
fn first_sizes(coincident: &[bool], c: usize, r: Option<usize>) -> Vec<(i64, Option<i64>)> {
    let reduction = coincident.iter().any(|x| !x);
    (0..coincident.len())
        .map(|m| {
            if !coincident[m] {
                (16, None)
            } else if m == c {
                match (reduction, r.is_some()) {
                    (true, true) => (64, Some(4)),
                    (false, true) => (32, None),
                    _ => (THREADS, None),
                }
            } else if Some(m) == r {
                if reduction {
                    (64, Some(4))
                } else {
                    (THREADS / 32, None)
                }
            } else {
                (1, None)
            }
        })
        .collect()
}

/// Whether band `bi` is outermost, or a band enclosed by sequential bands only (no
/// coincident member), which the host runs, launching the kernels of the bands inside
/// them, and whose statements post-tiling fusion leaves alone, so that the band's tiles
/// stay its own: statements inside the program's `for` loops (PolyBench's time and row
/// loops) and recurrences (a stencil over an explicit time dimension, whose time band isl
/// made sequential; see [`tiling::fuse::is_recurrence`]).
fn inside_host_loops_only(
    cx: &TileCx,
    bands: &[tiling::analysis::BandInfo],
    bi: usize,
) -> Result<bool> {
    let band = &bands[bi];
    if band.outer.is_empty() {
        return Ok(true);
    }
    if !band
        .outer
        .iter()
        .all(|&o| bands[o].coincident.iter().all(|c| !c))
    {
        return Ok(false);
    }
    for &s in &band.stmts {
        if cx.scop.stmt_loops[s].is_empty() && !tiling::fuse::is_recurrence(cx, s)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Threads per block the policy aims at.
const THREADS: i64 = 256;

/// The wide GEMM tile per dimension (shared size, register size): 128 × 128 blocks with
/// 8 × 8 per thread, twice the FMAs per shared float of 64 × 64 with 4 × 4.
const WIDE_GEMM: (i64, Option<i64>) = (128, Some(8));

/// Full waves of wide blocks (at one block per SM) a GEMM needs before the policy takes
/// the wide tile: its 8 × 8 register tiles need about 150 registers per thread, one
/// 256-thread block per SM, so with fewer blocks the last wave leaves SMs idle for a
/// large share of the time (at 4 waves, at most a fifth).
const WIDE_GEMM_WAVES: i64 = 4;

/// Whether a GEMM band with coincident members `coincident` (`r` and `c` the two inner
/// ones) has at least [`WIDE_GEMM_WAVES`] × `sms` blocks of the wide tile.
fn wide_gemm_fills_waves(
    coincident: &[usize],
    r: usize,
    c: usize,
    ext: &dyn Fn(usize) -> i64,
    sms: i64,
) -> bool {
    let blocks: i64 = coincident
        .iter()
        .map(|&m| {
            if m == r || m == c {
                (ext(m) + WIDE_GEMM.0 - 1) / WIDE_GEMM.0
            } else {
                ext(m)
            }
        })
        .fold(1i64, |a, b| a.saturating_mul(b));
    blocks >= WIDE_GEMM_WAVES * sms
}

/// Threads of a block tile: per coincident member, its block (shared) size over its
/// register size.
fn threads(sizes: &[(i64, Option<i64>)], coincident: &[bool]) -> i64 {
    sizes
        .iter()
        .zip(coincident)
        .filter(|(_, c)| **c)
        .map(|((s, r), _)| (s + r.unwrap_or(1) - 1) / r.unwrap_or(1).max(1))
        .product()
}

/// Halves the block tile of the coincident member with the most threads until the block
/// has at most `limit` threads.
fn fit_threads(sizes: &mut [(i64, Option<i64>)], coincident: &[bool], limit: i64) {
    while threads(sizes, coincident) > limit.max(1) {
        let Some((m, _)) = sizes
            .iter()
            .enumerate()
            .filter(|(m, _)| coincident[*m])
            .map(|(m, (s, r))| (m, (s + r.unwrap_or(1) - 1) / r.unwrap_or(1).max(1)))
            .filter(|(_, t)| *t > 1)
            .max_by_key(|(m, t)| (*t, std::cmp::Reverse(*m)))
        else {
            return;
        };
        sizes[m].0 = (sizes[m].0 + 1) / 2;
        sizes[m].1 = sizes[m].1.map(|x| x.min(sizes[m].0));
    }
}

/// Builds a spec for the bands `given` leaves untouched (see [`GPU_POLICY`]), for a target
/// that allows `max_threads` threads per block.
pub fn default_spec(
    tree: &ScheduleTree,
    cx: &TileCx,
    given: Option<&TileSpec>,
    max_threads: i64,
    sms: Option<i64>,
) -> Result<TileSpec> {
    let buffers: Vec<Buffer> = cx.levels.iter().map(|l| l.buffer).collect();
    let mut out = TileSpec {
        stmts: Vec::new(),
        buffers,
    };
    let Some(shared) = cx
        .levels
        .iter()
        .find(|l| l.role == BufferRole::SharedMemory)
        .copied()
    else {
        return Ok(out);
    };
    let register = cx
        .levels
        .iter()
        .find(|l| l.role == BufferRole::Registers)
        .copied();
    let (_s, bands) = collect_bands(cx.ctx, cx.scop, tree)?;
    let elem: Vec<u64> = cx
        .program
        .tensors
        .iter()
        .map(|t| t.dtype.size_bytes() as u64)
        .collect();
    let names = &cx.scop.stmt_names;
    for (bi, band) in bands.iter().enumerate() {
        if band.stmts.is_empty() || !inside_host_loops_only(cx, &bands, bi)? {
            continue;
        }
        if let Some(g) = given {
            if band.stmts.iter().any(|&s| g.get(&names[s]).is_some()) {
                continue;
            }
        }
        let (tilable, _) = permutable_prefix(cx.ctx, cx.deps, band, band.n_members())?;
        let extents: Vec<Option<i64>> = (0..band.n_members())
            .map(|m| band.extents[m].or(band.max_extents[m]))
            .collect();
        if tilable == 0 || extents[..tilable].iter().any(|e| e.is_none()) {
            continue;
        }
        let coincident: Vec<usize> = (0..tilable).filter(|&m| band.coincident[m]).collect();
        let Some(&c) = coincident.last() else {
            continue;
        };
        let r = coincident.iter().rev().nth(1).copied();
        let reduction = (0..tilable).any(|m| !band.coincident[m]);
        let ext = |m: usize| extents[m].unwrap_or(1).max(1);
        let f32_only = band
            .stmts
            .iter()
            .all(|&st| cx.program.stmts[st].dtype.size_bytes() == 4);
        let mut sizes = first_sizes(&band.coincident[..tilable], c, r);
        if register.is_none() {
            for s in &mut sizes {
                s.1 = None;
            }
        }
        if let (true, Some(rm), Some(sms), true) = (reduction, r, sms, f32_only) {
            if register.is_some() && wide_gemm_fills_waves(&coincident, rm, c, &ext, sms) {
                sizes[rm] = WIDE_GEMM;
                sizes[c] = WIDE_GEMM;
            }
        }
        // Clamp to the extents, fit the threads to the limit, then shrink until the block
        // tile fits shared memory.
        for (m, s) in sizes.iter_mut().enumerate() {
            s.0 = s.0.min(ext(m));
            s.1 = s.1.map(|x| x.min(s.0));
        }
        fit_threads(
            &mut sizes,
            &band.coincident[..tilable],
            THREADS.min(max_threads),
        );
        let mut bounded = true;
        loop {
            let windows: Vec<Option<i64>> = (0..band.n_members())
                .map(|m| sizes.get(m).map(|s| s.0))
                .collect();
            let fps = tile_footprint(cx.ctx, cx.scop, &bands, bi, &windows, &elem)?;
            // A tile that spans an untiled symbolic extent (a dynamic reduction axis) has
            // no fixed-size footprint: the band stays untiled, as with other symbolic sizes.
            if fps.iter().any(|f| f.bytes.is_none()) {
                bounded = false;
                break;
            }
            let bytes: u64 = fps.iter().map(|f| f.bytes.unwrap_or(u64::MAX / 4)).sum();
            if bytes <= shared.bytes {
                break;
            }
            let Some((m, _)) = sizes
                .iter()
                .enumerate()
                .filter(|(_, s)| s.0 > 1)
                .max_by_key(|(m, s)| (s.0, std::cmp::Reverse(*m)))
            else {
                break;
            };
            sizes[m].0 /= 2;
            sizes[m].1 = sizes[m].1.map(|x| x.min(sizes[m].0));
        }
        if !bounded {
            continue;
        }
        let stmt = live_out(cx, band)?;
        // The members of the host loops around the band come first, untiled.
        let host: usize = band.outer.iter().map(|&o| bands[o].n_members()).sum();
        let untiled = (0..host).map(|_| DimSpec {
            levels: Vec::new(),
            span: Span::default(),
        });
        let dims = untiled
            .chain(sizes.iter().map(|(s, reg)| {
                let mut levels = vec![fixed_level(*s, shared.buffer)];
                if let (Some(rg), Some(rl)) = (reg, register) {
                    if *rg < *s {
                        levels.push(fixed_level(*rg, rl.buffer));
                    }
                }
                DimSpec {
                    levels,
                    span: Span::default(),
                }
            }))
            .collect();
        out.stmts.push(StmtSpec {
            stmt: names[stmt].clone(),
            stmt_span: Span::default(),
            dims,
            span: Span::default(),
        });
    }
    Ok(out)
}
