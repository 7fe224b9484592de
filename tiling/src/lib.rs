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
mod default;
pub mod fuse;
pub mod report;
pub mod search;
pub mod spec;
mod tile;

pub use analysis::TensorFootprint;
pub use default::{default_spec, level, live_out, DEFAULT_POLICY};
pub use fuse::{fuse, Fallback, FuseOptions, FuseReport, FusedProducer, LocalBuffer};
pub use report::{BandReport, ExplainReport, LevelReport, TileReport};
pub use search::{search, SearchOptions, SearchResult};
pub use spec::{parse_tile_spec, DimSpec, LevelSize, SizeSpec, StmtSpec, TileSpec};
pub use tile::{tile, TileCx};

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
    Ok(ExplainReport {
        statements,
        tiles: plan.report,
    })
}
