//! polyc's tiling: the tile-spec language, band tiling with memory marks, exact footprints,
//! and the default CPU policy.
//!
//! - [`spec`]: the tile-spec language ([`parse_tile_spec`], [`TileSpec`]).
//! - [`tile()`]: tiles the bands a spec names, at every level it names, with a
//!   `Mark::Mem(buffer)` below each tile band; checks legality against the dependences and
//!   the footprints against the buffers' capacities.
//! - [`explain`]: the sizes, footprints and capacity left, per statement and band.
//! - [`default_spec`]: the default policy when no spec is given.
//! - [`search()`]: the tile-size search that resolves `?`, `[lo..hi]` and `{a, b}` entries
//!   (candidates, legality, a data-movement cost model).
//! - [`regshape`]: which statements keep a register-tile shape under a schedule.
//! - [`fuse()`]: reverse strategy and post-tiling fusion of the producers into the
//!   live-out tiles (an extension node, `skipped` marks), with fallbacks and a report.
//!
//! Capacities come in as plain `(Buffer, bytes)` pairs ([`TileCx::capacities`]); the
//! target descriptions that hold them live in `targets::desc`, since tiling must not know
//! about code emission.
//!
//! API note: [`tile()`] takes a [`TileCx`] (isl context, program, Scop, dependences,
//! capacities) instead of separate arguments; the program is needed for element sizes.
#![warn(missing_docs)]

pub mod analysis;
pub mod contiguous;
mod cx;
mod default;
pub mod fuse;
mod fusion_tile;
pub mod regshape;
pub mod report;
pub mod search;
pub mod spec;
pub mod symbolic;
mod tile;

pub use analysis::TensorFootprint;
pub use cx::TileCx;
pub use default::{
    default_plan, default_spec, live_out, DefaultPlan, ASSUMED_EXTENT, DEFAULT_POLICY,
};
pub use fuse::{fuse, Fallback, FuseOptions, FuseReport, FusedProducer, LocalBuffer};
pub use report::{BandReport, ExplainReport, LevelReport, TileReport};
pub use search::{search, SearchOptions, SearchResult};
pub use spec::fixed_level;
pub use spec::{parse_tile_spec, DimSpec, LevelSize, SizeSpec, StmtSpec, TileSpec};
pub use tile::tile;

use polyhedral::diag::SourceFile;
use schedule_tree::ScheduleTree;

/// What `polyc explain-tiles` prints: for each statement, the tiled bands around it, and
/// for each band the sizes per level, the footprint of one tile per tensor (elements and
/// bytes) and the capacity left. Fails exactly where [`tile()`] would (search entries are
/// an error here too).
pub fn explain(
    tree: &ScheduleTree,
    cx: &TileCx,
    spec: &TileSpec,
    file: &SourceFile,
) -> miette::Result<ExplainReport> {
    let plan = tile::plan(tree, cx, spec, file, false)?;
    let mut statements = Vec::new();
    for (i, name) in cx.scop.stmt_names.iter().enumerate() {
        let v: Vec<usize> = plan
            .report
            .bands
            .iter()
            .enumerate()
            .filter(|(_, b)| {
                plan.bands
                    .iter()
                    .any(|bi| bi.path == b.path && bi.stmts.contains(&i))
            })
            .map(|(k, _)| k)
            .collect();
        statements.push((name.clone(), v));
    }
    let mut tiles = plan.report;
    let mut movement = Vec::new();
    if !cx.scop.symbolic.is_empty() {
        match polyhedral::barvinok::Barvinok::load() {
            Ok(barvinok) => {
                add_symbolic_footprints(cx, &plan.bands, &mut tiles, &barvinok)?;
                let budget = symbolic::Budget::new(symbolic::EXPLAIN_SECONDS);
                movement = level_movements(cx, &plan.bands, &tiles, &budget)?;
                if budget.exhausted() {
                    tiles.notes.push(format!(
                        "the exact counts in the sizes stop where barvinok did not finish within {} s (the rest is left out)",
                        budget.seconds
                    ));
                }
            }
            Err(e) => tiles.notes.push(format!(
                "footprints that depend on the sizes are shown as `?`, and the exact counts in the sizes (per-tile footprints, data moved per level) are not given: {e}; {}",
                e.help()
            )),
        }
    }
    Ok(ExplainReport {
        statements,
        tiles,
        movement,
    })
}

/// With symbolic sizes: per tiled level and tensor, the exact per-tile footprint and the
/// data moved, as quasi-polynomials (see [`symbolic`]).
fn level_movements(
    cx: &TileCx,
    bands: &[analysis::BandInfo],
    tiles: &TileReport,
    budget: &symbolic::Budget,
) -> miette::Result<Vec<symbolic::LevelMovement>> {
    let context = symbolic::SizeContext::of(cx.scop)?;
    let elem_bytes = cx.elem_bytes();
    let mut out = Vec::new();
    for (i, b) in tiles.bands.iter().enumerate() {
        let Some(bi) = bands.iter().position(|x| x.path == b.path) else {
            continue;
        };
        for l in &b.levels {
            let tensors = symbolic::level_movement(
                cx.ctx,
                cx.scop,
                bands,
                bi,
                &l.windows,
                &elem_bytes,
                budget,
                &context,
            )?;
            if tensors.is_empty() && budget.exhausted() {
                return Ok(out);
            }
            let total = symbolic::level_total(&tensors, budget, &context)?;
            out.push(symbolic::LevelMovement {
                band: i,
                buffer: l.buffer,
                tensors,
                total,
                capacity: l.capacity.filter(|_| !l.register_file),
            });
        }
    }
    Ok(out)
}

/// With symbolic sizes, the footprints that are not fixed-size boxes get their largest
/// value over the tiles as quasi-polynomials (barvinok).
fn add_symbolic_footprints(
    cx: &TileCx,
    bands: &[analysis::BandInfo],
    tiles: &mut TileReport,
    barvinok: &polyhedral::barvinok::Barvinok,
) -> miette::Result<()> {
    use polyhedral::isl::IslResultExt;
    let needed = tiles.bands.iter().any(|b| {
        b.levels
            .iter()
            .any(|l| l.footprints.iter().any(|f| f.elements.is_none()))
    });
    if !needed {
        return Ok(());
    }
    // Every size ≥ 1 and every tensor non-empty.
    let mut context = cx.scop.context.copy().isl("copying the context")?;
    for ext in &cx.scop.tensor_extents {
        let nonempty = ext
            .copy()
            .isl("copying a tensor's extent")?
            .params()
            .isl("computing where a tensor is non-empty")?;
        context = context.intersect(nonempty).isl("restricting the context")?;
    }
    let context = polyhedral::isl::ffi::model::set_text(&context);
    let elem_bytes = cx.elem_bytes();
    for b in &mut tiles.bands {
        let Some(bi) = bands.iter().position(|x| x.path == b.path) else {
            continue;
        };
        for l in &mut b.levels {
            if l.footprints.iter().all(|f| f.elements.is_some()) {
                continue;
            }
            let sym = analysis::symbolic_footprints(
                cx.ctx,
                cx.scop,
                bands,
                bi,
                &l.windows,
                &elem_bytes,
                barvinok,
                &context,
            )?;
            for f in &mut l.footprints {
                if f.elements.is_none() {
                    f.symbolic = sym
                        .iter()
                        .find(|(t, _)| *t == f.tensor_id)
                        .map(|(_, s)| s.clone());
                }
            }
        }
    }
    Ok(())
}
