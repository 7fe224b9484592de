//! The schedule-tree passes targets compose into their pass lists, and what they see
//! ([`PassCx`]).
//!
//! Every pass is a value with a name (the stage name `polyc dump --stage` and
//! `--load-tree STAGE=FILE` use) and `run(tree, cx) -> tree`. A target's
//! [`crate::Target::passes`] lists them in order; the pipeline runs them and records the
//! tree after each. Passes never ask which target they run for: what differs between
//! targets comes through [`PassCx`] (the levels and their roles, the target's default
//! tiling policy and its promotion options).

use std::cell::RefCell;

use miette::Result;
use polyhedral::deps::Deps;
use polyhedral::diag::SourceFile;
use polyhedral::ir::Program;
use polyhedral::isl::Ctx;
use polyhedral::scop::Scop;
use schedule_tree::{Level, Pass, ScheduleTree};

use crate::Target;

/// Post-tiling fusion settings.
#[derive(Clone, Copy, Debug)]
pub struct TileFusion {
    /// Run the fusion pass at all.
    pub enabled: bool,
    /// Run overlapped in-place producers once, in the first tile that needs them.
    pub one_nest: bool,
}

/// What a pass sees besides the tree: the program, its polyhedral model and the target.
pub struct PassCx<'a> {
    /// The isl context every object belongs to.
    pub ctx: &'a Ctx,
    /// The resolved program.
    pub program: &'a Program,
    /// Its polyhedral model.
    pub scop: &'a Scop,
    /// Its dependences.
    pub deps: &'a Deps,
    /// The target.
    pub target: &'a dyn Target,
    /// The target's memory levels, outermost first.
    pub levels: &'a [Level],
    /// The resolved tile spec and its file, if any (search entries already resolved).
    pub tile_spec: Option<&'a (tiling::TileSpec, SourceFile)>,
    /// Whether statements without a spec get the target's default tiles.
    pub default_tiling: bool,
    /// Notes and warnings passes leave for the user (clamped sizes, derived specs, …).
    pub notes: RefCell<Vec<String>>,
    /// Post-tiling fusion settings.
    pub tile_fusion: TileFusion,
    /// The fusion pass's explanation, for `polyc explain`.
    pub fuse_report: RefCell<Option<String>>,
    /// The temporaries fusion made private to the live-out tiles (promotion gives them
    /// tile-local buffers).
    pub fuse_locals: RefCell<Vec<String>>,
    /// Memory promotion settings.
    pub promote: crate::promote::PromoteOptions,
    /// The promotion pass's report, for `polyc explain`.
    pub promote_report: RefCell<Option<String>>,
    /// Reports of target passes after promotion (mapping), for `polyc explain`.
    pub target_report: RefCell<Vec<String>>,
}

/// A tile spec and the file it was read from (for located errors).
pub type SpecAndFile = (tiling::TileSpec, SourceFile);

impl PassCx<'_> {
    /// What tiling reads.
    pub fn tile_cx(&self) -> tiling::TileCx<'_> {
        tiling::TileCx {
            ctx: self.ctx,
            program: self.program,
            scop: self.scop,
            deps: self.deps,
            levels: self.levels,
        }
    }
    /// The spec tiling applies: the user's, completed by the target's default policy
    /// unless `--no-default-tiling`. `None` when there is nothing to tile.
    pub fn effective_spec(&self, tree: &ScheduleTree) -> Result<Option<SpecAndFile>> {
        Ok(self.effective_plan(tree)?.0)
    }
    /// [`PassCx::effective_spec`], and the lines of the default policy's fusion planning
    /// (for `polyc explain`).
    pub fn effective_plan(
        &self,
        tree: &ScheduleTree,
    ) -> Result<(Option<SpecAndFile>, Vec<String>)> {
        let cx = self.tile_cx();
        let mut spec = match self.tile_spec {
            Some((s, f)) => (s.clone(), f.clone()),
            None => (
                tiling::TileSpec {
                    stmts: Vec::new(),
                    buffers: self.levels.iter().map(|l| l.buffer).collect(),
                },
                SourceFile::new("<default tiling policy>", ""),
            ),
        };
        let mut fusion = Vec::new();
        if self.default_tiling {
            let defaults = self.target.default_plan(tree, &cx, Some(&spec.0))?;
            spec.0.stmts.extend(defaults.spec.stmts);
            fusion = defaults.fusion;
        }
        let spec = if spec.0.stmts.is_empty() {
            None
        } else {
            Some(spec)
        };
        Ok((spec, fusion))
    }
}

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
            ..cx.target.fuse_options()
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
        let opts = crate::promote::PromoteOptions {
            locals: fused,
            exclusive_locals,
            ..cx.promote.clone()
        };
        let tree = if opts.hoist {
            let (tree, hoisted) =
                crate::hoist::hoist_packed_tiles(cx.ctx, cx.program, cx.scop, &tree, &opts)?;
            cx.notes
                .borrow_mut()
                .extend(hoisted.iter().map(|h| format!("note: {h}")));
            tree
        } else {
            tree
        };
        let (tree, report) =
            crate::promote::promote(cx.ctx, cx.program, cx.scop, cx.deps, &tree, &opts)?;
        // Fusion counted on tile-local buffers for these: without them the tiles would
        // race on one global array.
        if cx.target.fuse_options().local_buffers {
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

/// Marks the outermost coincident loop of every band path as parallel (OpenMP on the
/// CPU).
pub struct MarkParallel;

impl<'a> Pass<PassCx<'a>> for MarkParallel {
    fn name(&self) -> &'static str {
        "parallel"
    }
    fn run(&self, tree: ScheduleTree, cx: &PassCx<'a>) -> Result<ScheduleTree> {
        let schedule = tree.to_isl(cx.ctx)?;
        let marked = crate::parallel::mark_outer_parallel(schedule, cx.levels)?;
        ScheduleTree::from_isl(&marked)
    }
}
