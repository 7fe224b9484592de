//! Targets are data plus a trait: a [`TargetDesc`] (from `specs/targets/*.yaml`) and one
//! implementation of [`Target`], chosen by the description's `kind` in
//! [`crate::registry::target_for`].
//! The implementation supplies the pass list, the default tiling policy, the promotion
//! policy, the emitters and the runners; passes and drivers hold a `&dyn Target` and
//! never branch on a target's kind or a buffer's name.

use miette::{miette, Result};
use polyhedral::ir::Program;
use schedule_tree::{BufferRole, Pass, ScheduleTree};

use polyhedral::data::TensorData;

use crate::codegen::cfamily::EmitOptions;
use crate::codegen::kir::Kernel;
use crate::codegen::lower::LowerOptions;
use crate::desc::{Scope, TargetDesc};
use crate::passes::promote::{LevelInfo, PackPolicy, PromoteKind, PromoteOptions};
use crate::passes::PassCx;

/// Which device runs GPU kernels (`polyc run --device`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Device {
    /// CUDA when a driver is present, else OpenCL.
    #[default]
    Auto,
    /// CUDA through the driver (cudarc).
    Cuda,
    /// OpenCL (any platform; PoCL on machines without a GPU).
    OpenCl,
}

/// The user's promotion switches (`--pack`, `--no-register-tiles`, `--no-hoist`), which
/// a target turns into [`PromoteOptions`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PromoteSettings {
    /// What cache levels pack.
    pub pack: PackPolicy,
    /// Register levels take register tiles.
    pub registers: bool,
    /// Packed tiles move above the tile loops they do not depend on.
    pub hoist: bool,
}

impl Default for PromoteSettings {
    fn default() -> Self {
        PromoteSettings {
            pack: PackPolicy::Auto,
            registers: true,
            hoist: true,
        }
    }
}

/// What building a compiled program for execution needs.
pub struct BuildInput<'a> {
    /// The program.
    pub program: &'a Program,
    /// Each size as the code writes it (its value if bound, else its name).
    pub param_texts: &'a [String],
    /// The kernel IR.
    pub kernel: &'a Kernel,
    /// The source the target emitted in its default format.
    pub source: &'a str,
    /// Build for `--check`: unwritten temporaries read as NaN (C: `-DPOLYC_POISON`).
    pub poison: bool,
    /// How to run, for targets that can run a kernel in several ways (`--via`); `None`
    /// is the target's default.
    pub via: Option<&'a str>,
    /// The dynamic sizes the kernel was compiled for (`--dynamic`; empty otherwise).
    pub dynamic: &'a [crate::codegen::microkernel::DynamicSize],
}

/// What [`Target::rewrite_kernel`] sees besides the kernel.
pub struct RewriteCx<'a> {
    /// The program.
    pub program: &'a Program,
    /// Its polyhedral model (access relations, domains).
    pub scop: &'a polyhedral::scop::Scop,
    /// Each size's value if bound.
    pub param_values: &'a [Option<i64>],
    /// The tile spec tiling applied (the user's, completed by the default policy), if any.
    pub spec: Option<&'a (tiling::TileSpec, polyhedral::diag::SourceFile)>,
    /// False for the untransformed reference order (no target passes ran).
    pub optimised: bool,
    /// The scheduled tree (before the target's passes): the band members a tile spec's
    /// entries refer to.
    pub scheduled: &'a ScheduleTree,
    /// The tiling policy `--policy` chose (one of [`Target::policies`]; `default`).
    pub policy: &'a str,
}

/// What a code-generation target does. Everything else about a target is data
/// ([`Target::desc`]).
pub trait Target {
    /// The description.
    fn desc(&self) -> &TargetDesc;
    /// The target's name (`cpu`, `a100`, …), for messages and file names only.
    fn name(&self) -> &str {
        &self.desc().name
    }
    /// What `explain` says when no band of the schedule tree is tiled, if the target
    /// tiles elsewhere (`None`: the generic "no band is tiled" line).
    fn untiled_explain(&self) -> Option<&'static str> {
        None
    }
    /// The tiling policies `--policy` may name, with a line saying what each does; the
    /// first is the default. Every target has polyc's own, `default`.
    fn policies(&self) -> Vec<(&'static str, &'static str)> {
        vec![("default", "polyc's tiling policy for this target")]
    }
    /// isl scheduler options the target sets before the user's `--isl-option`s (which
    /// override them), as `NAME=VALUE`.
    fn isl_options(&self) -> Vec<String> {
        Vec::new()
    }
    /// The passes after scheduling, in order.
    fn passes<'a>(&self) -> Vec<Box<dyn Pass<PassCx<'a>>>>;
    /// The default tiling policy: a spec for the bands `given` leaves untouched, and what
    /// its fusion planning weighed. By default the cache policy of
    /// [`tiling::default_plan`] (over the description's cache and register levels, with
    /// the cost figures of [`Target::fuse_options`]).
    fn default_plan(
        &self,
        tree: &ScheduleTree,
        cx: &tiling::TileCx,
        given: Option<&tiling::TileSpec>,
    ) -> Result<tiling::DefaultPlan> {
        tiling::default_plan(tree, cx, given, self.fuse_options().cost.as_ref())
    }
    /// Post-tiling fusion settings: by default, fusion is decided at the outermost memory
    /// level of the live-out's tiles (inner levels, register tiles included, then tile the
    /// fused tile), recomputed temporaries get tile-local buffers (so the tile loops stay
    /// parallel), and recomputation is weighed with the description's cost figures.
    fn fuse_options(&self) -> tiling::fuse::FuseOptions {
        tiling::fuse::FuseOptions {
            outermost: true,
            local_buffers: true,
            cost: self.desc().fuse_cost(),
            ..tiling::fuse::FuseOptions::default()
        }
    }
    /// The promotion policy: how each level takes data. By default caches pack and
    /// register files take register tiles ([`cache_promote_options`]).
    fn promote_options(&self, settings: &PromoteSettings) -> PromoteOptions {
        cache_promote_options(self.desc(), settings)
    }
    /// How lowering treats the target.
    fn lower_options(&self) -> LowerOptions {
        LowerOptions {
            levels: self.desc().levels(),
            sink_vectorizable: true,
        }
    }
    /// The source formats `--emit` accepts for this target; the first is the default.
    fn emit_formats(&self) -> &'static [&'static str];
    /// Emits `kernel` in `format` (one of [`Target::emit_formats`]). `param_texts[p]` is a
    /// bound size's value or a symbolic size's name.
    fn emit(
        &self,
        prog: &Program,
        param_texts: &[String],
        kernel: &Kernel,
        format: &str,
        opts: &EmitOptions,
    ) -> Result<String>;
    /// Rewrites the lowered kernel before emission (for example, tensorisation: a
    /// statement becomes accelerator instructions). The default keeps the kernel. The
    /// returned lines go to `polyc explain`.
    fn rewrite_kernel(&self, _cx: &RewriteCx, kernel: Kernel) -> Result<(Kernel, Vec<String>)> {
        Ok((kernel, Vec::new()))
    }
    /// [`Target::rewrite_kernel`], and the schedule tree its rewrite implies, from the
    /// same decisions (the `tensorised` dump stage: for a target that tiles statements
    /// itself on the kernel, the `final` tree with those tiles, buffers and instructions
    /// as bands and marks). `final` is the tree the kernel was lowered from. The default
    /// rewrites and has no such tree.
    fn rewrite_kernel_and_tree(
        &self,
        cx: &RewriteCx,
        kernel: Kernel,
        _final: &schedule_tree::ScheduleTree,
    ) -> Result<(Kernel, Vec<String>, Option<schedule_tree::ScheduleTree>)> {
        let (k, notes) = self.rewrite_kernel(cx, kernel)?;
        Ok((k, notes, None))
    }
    /// Whether the kernel's C allocates its own temporaries, so that a temporary may be
    /// stored modulo a number along one index ([`crate::codegen::contract`]). The default:
    /// no (the runner allocates them from their shapes).
    fn folds_storage(&self) -> bool {
        false
    }
    /// The ways `--via` may name to run a kernel (the first is the default); empty for a
    /// target that runs kernels one way only, where `--via` is an error.
    fn run_ways(&self) -> &'static [&'static str] {
        &[]
    }
    /// Builds the compiled program into something that runs.
    fn build(&self, input: &BuildInput) -> Result<Box<dyn Executable>>;
    /// The name of the figure the target's own cost model gives a compiled program
    /// (`EDP` for Gemmini), which the tile-size search then ranks points by; `None`
    /// when the search's data-movement model decides alone.
    fn cost_model(&self) -> Option<&'static str> {
        None
    }
    /// The figure [`Target::cost_model`] names for a compiled program, at the bound
    /// `sizes` (lower is better).
    fn model_cost(&self, _input: &BuildInput, _sizes: &[i64]) -> Result<f64> {
        Err(miette!(
            "internal error: target `{}` has no cost model",
            self.name()
        ))
    }
    /// The analytic model `--dynamic` chooses micro-kernels with, for `program`; `None`
    /// where dynamic-shape kernels are not supported (yet).
    fn micro_kernel_model(
        &self,
        _program: &Program,
    ) -> Option<crate::codegen::microkernel::MicroKernelModel> {
        None
    }
    /// What `polyc explain` adds about the lowered program (per kernel, for targets with
    /// several); `sizes` holds every size's value when all are bound.
    fn explain_kernels(
        &self,
        _input: &BuildInput,
        _sizes: Option<&[i64]>,
    ) -> Result<Option<String>> {
        Ok(None)
    }
}

/// Promotion by role: register files take register tiles, per-core caches pack, shared
/// caches and everything else take nothing.
pub(crate) fn cache_promote_options(desc: &TargetDesc, s: &PromoteSettings) -> PromoteOptions {
    PromoteOptions {
        levels: cache_promote_levels(desc),
        pack: s.pack,
        registers: s.registers,
        hoist: s.hoist,
        locals: Vec::new(),
        exclusive_locals: Vec::new(),
        copy_in_where_exposed: false,
    }
}

fn cache_promote_levels(desc: &TargetDesc) -> Vec<LevelInfo> {
    desc.buffers
        .iter()
        .map(|b| LevelInfo {
            buffer: b.buffer(),
            bytes: b.bytes,
            stages: 1,
            kind: match (b.role(), b.scope) {
                (BufferRole::Registers, _) => PromoteKind::Registers,
                (BufferRole::Cache, Scope::Core | Scope::Thread) => PromoteKind::Pack,
                _ => PromoteKind::None,
            },
        })
        .collect()
}

/// A kernel built for a target, ready to run.
pub trait Executable {
    /// Runs the kernel on `tensors` (indexed by `TensorId`; temporaries are ignored) and
    /// `scalars` (indexed by `ScalarId`), with `sizes` holding every size's value.
    fn run(
        &self,
        prog: &Program,
        sizes: &[i64],
        tensors: &mut [TensorData],
        scalars: &[TensorData],
    ) -> miette::Result<RunStats>;
    /// The shared library the kernel runs from, for executables that are one (the CPU's
    /// C): the Python package copies it into its compile cache and calls its entry
    /// directly. `None` elsewhere. The file lives as long as the executable.
    fn library_path(&self) -> Option<std::path::PathBuf> {
        None
    }
}

/// What a run measured.
#[derive(Clone, Debug, PartialEq)]
pub struct RunStats {
    /// Wall time of the kernel call, in milliseconds.
    pub run_ms: f64,
    /// Which device ran it, where a target has several (`OpenCL: cpu-… (Portable
    /// Computing Language)`); `None` on the CPU.
    pub device: Option<String>,
}

impl crate::passes::TilingPolicy for &dyn Target {
    fn default_plan(
        &self,
        tree: &ScheduleTree,
        cx: &tiling::TileCx,
        given: Option<&tiling::TileSpec>,
    ) -> Result<tiling::DefaultPlan> {
        Target::default_plan(*self, tree, cx, given)
    }
    fn fuse_options(&self) -> tiling::fuse::FuseOptions {
        Target::fuse_options(*self)
    }
}

/// The error of a kernel that divided integers by zero in statement `k` (it computed 0
/// there and reported the statement): the CPU's entry returns `-1000 - k`, a GPU kernel
/// stores `1 + k` in its fault status.
pub fn division_by_zero(prog: &Program, k: usize) -> miette::Report {
    miette::Report::new(polyhedral::interp::IntegerDivisionByZero {
        stmt: k,
        stmt_name: prog.stmts[k].name.clone(),
        op: "division or remainder",
        instance: None,
        by: "the kernel, which computed 0 there",
    })
}
