//! What the schedule-tree passes see besides the tree ([`PassCx`]).
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
use schedule_tree::{Level, ScheduleTree};

/// What the passes ask of the target: its default tiling policy and its post-tiling fusion
/// settings. [`crate::Target`] provides it for `&dyn Target`.
pub trait TilingPolicy {
    /// A tile spec for the bands `given` leaves untouched, and what its fusion planning
    /// weighed.
    fn default_plan(
        &self,
        tree: &ScheduleTree,
        cx: &tiling::TileCx,
        given: Option<&tiling::TileSpec>,
    ) -> Result<tiling::DefaultPlan>;
    /// Post-tiling fusion settings.
    fn fuse_options(&self) -> tiling::fuse::FuseOptions;
}

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
    /// The target's tiling policy.
    pub policy: &'a dyn TilingPolicy,
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
    pub promote: crate::passes::promote::PromoteOptions,
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
            let defaults = self.policy.default_plan(tree, &cx, Some(&spec.0))?;
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
