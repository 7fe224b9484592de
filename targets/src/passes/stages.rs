//! The schedule-tree passes every target composes into its pass list: tiling, post-tiling
//! fusion and memory promotion.

use miette::Result;
use schedule_tree::{Pass, ScheduleTree};

use crate::passes::cx::PassCx;

/// Tiles bands as the tile spec (and the default policy) say, with `Mem` marks.
pub struct Tile;

impl<'a> Pass<PassCx<'a>> for Tile {
    fn name(&self) -> &'static str {
        "tiled"
    }
    fn run(&self, tree: ScheduleTree, cx: &PassCx<'a>) -> Result<ScheduleTree> {
        let Some((spec, file)) = cx.effective_spec(&tree)? else {
            return Ok(tree);
        };
        let (tiled, report) = tiling::tile(tree, &cx.tile_cx(), &spec, &file)?;
        let mut notes = cx.notes.borrow_mut();
        notes.extend(report.warnings.iter().map(|w| format!("warning: {w}")));
        notes.extend(report.notes.iter().map(|n| format!("note: {n}")));
        Ok(tiled)
    }
}

/// Post-tiling fusion (reverse strategy): live-out tiles pull in the producer instances
/// they need through an extension node; the producers' original subtrees are skipped.
pub struct Fuse;

impl<'a> Pass<PassCx<'a>> for Fuse {
    fn name(&self) -> &'static str {
        "fused"
    }
    fn run(&self, tree: ScheduleTree, cx: &PassCx<'a>) -> Result<ScheduleTree> {
        if !cx.tile_fusion.enabled {
            return Ok(tree);
        }
        let opts = tiling::fuse::FuseOptions {
            first_tile_overlaps: cx.tile_fusion.one_nest,
            ..cx.policy.fuse_options()
        };
        let (fused, report) = tiling::fuse::fuse(tree, &cx.tile_cx(), &opts)?;
        if report.applied {
            cx.notes.borrow_mut().push(format!(
                "note: post-tiling fusion: {}",
                report.explain().trim_end().replace('\n', "\n  ")
            ));
        }
        *cx.fuse_report.borrow_mut() = Some(report.explain());
        *cx.fuse_locals.borrow_mut() = if report.applied {
            report.buffers.iter().map(|b| b.tensor.clone()).collect()
        } else {
            Vec::new()
        };
        Ok(fused)
    }
}

/// Memory promotion: copy-in and copy-out of the tiles placed at memory marks, as
/// extension nodes, with the accesses inside re-indexed into local buffers.
pub struct Promote;

impl<'a> Pass<PassCx<'a>> for Promote {
    fn name(&self) -> &'static str {
        "promoted"
    }
    fn run(&self, tree: ScheduleTree, cx: &PassCx<'a>) -> Result<ScheduleTree> {
        let fused = cx.fuse_locals.borrow().clone();
        // Every other temporary becomes tile-local too where that is exact (one that
        // isl's schedule already fused with its consumers into one tile, such as a
        // depthwise convolution's result under its ReLU6).
        let exclusive_locals = cx
            .program
            .tensors
            .iter()
            .filter(|t| t.role == polyhedral::ir::TensorRole::Temp && !fused.contains(&t.name))
            .map(|t| t.name.clone())
            .collect();
        let opts = crate::passes::promote::PromoteOptions {
            locals: fused,
            exclusive_locals,
            ..cx.promote.clone()
        };
        let tree = if opts.hoist {
            let (tree, hoisted) = crate::passes::hoist::hoist_packed_tiles(
                cx.ctx, cx.program, cx.scop, &tree, &opts,
            )?;
            cx.notes
                .borrow_mut()
                .extend(hoisted.iter().map(|h| format!("note: {h}")));
            tree
        } else {
            tree
        };
        let (tree, report) =
            crate::passes::promote::promote(cx.ctx, cx.program, cx.scop, cx.deps, &tree, &opts)?;
        // Fusion counted on tile-local buffers for these: without them the tiles would
        // race on one global array.
        if cx.policy.fuse_options().local_buffers {
            if let Some((t, why)) = report.kept_global.first() {
                return Err(miette::miette!(
                    help = "fuse at another level (a tile spec), or compile with --no-tile-fusion",
                    "post-tiling fusion recomputes `{t}` in every tile, but it cannot have a tile-local buffer: {why}"
                ));
            }
        }
        *cx.promote_report.borrow_mut() = Some(report.to_string());
        Ok(tree)
    }
}
