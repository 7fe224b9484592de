//! The compilation pipeline: parse → model → dependences → schedule → passes → C.
//!
//! Every stage leaves a schedule tree behind ([`Stage`]), so `polyc dump` can show any of
//! them and `--load-tree STAGE=FILE` can replace one. A loaded tree is checked before use:
//! it must cover the same statement instances and respect every dependence.

use crate::options::CompileOptions;
use miette::{miette, Result};
use polyhedral::deps::{check_schedule, Deps};
use polyhedral::diag::SourceFile;
use polyhedral::ilp::{ilp_schedule, parse_constraints, IlpOptions};
use polyhedral::ir::Program;
use polyhedral::isl::{Ctx, IslResultExt};
use polyhedral::sched::{initial_schedule, isl_schedule, SchedulerKind};
use polyhedral::scop::{param_texts, Scop};
use schedule_tree::{NodeKind, Pass, ScheduleTree};
use std::time::Instant;

/// The built-in CPU target description (`specs/targets/cpu.yaml`).
pub const CPU_DESC: &str = include_str!("../specs/targets/cpu.yaml");

/// Loads the target description the options name, or the built-in CPU one.
pub fn load_target_desc(opts: &CompileOptions) -> Result<targets::desc::TargetDesc> {
    match &opts.target_desc {
        Some(path) => targets::desc::TargetDesc::load_path(path),
        None => targets::desc::TargetDesc::load(&SourceFile::new(
            "<built-in specs/targets/cpu.yaml>",
            CPU_DESC,
        )),
    }
}

/// What a pass sees besides the tree: the program and its polyhedral model.
pub struct PassCx<'a> {
    /// The isl context every object belongs to.
    pub ctx: &'a Ctx,
    /// The resolved program.
    pub program: &'a Program,
    /// Its polyhedral model.
    pub scop: &'a Scop,
    /// Its dependences.
    pub deps: &'a Deps,
    /// The target's buffers, outermost first, with their capacities in bytes.
    pub capacities: &'a [(schedule_tree::Buffer, u64)],
    /// The parsed `--tile-spec` and its file, if any.
    pub tile_spec: Option<&'a (tiling::TileSpec, SourceFile)>,
    /// Whether statements without a spec get the target's default tiles.
    pub default_tiling: bool,
    /// Notes and warnings passes leave for the user (clamped sizes, derived specs, …).
    pub notes: std::cell::RefCell<Vec<String>>,
    /// Post-tiling fusion settings.
    pub tile_fusion: TileFusion,
    /// The fusion pass's explanation, for `polyc explain`.
    pub fuse_report: std::cell::RefCell<Option<String>>,
    /// The temporaries fusion made private to the live-out tiles (promotion gives them
    /// tile-local buffers).
    pub fuse_locals: std::cell::RefCell<Vec<String>>,
    /// Memory promotion settings.
    pub promote: targets::promote::PromoteOptions,
    /// The promotion pass's report, for `polyc explain`.
    pub promote_report: std::cell::RefCell<Option<String>>,
}

impl PassCx<'_> {
    fn tile_cx(&self) -> tiling::TileCx<'_> {
        tiling::TileCx {
            ctx: self.ctx,
            program: self.program,
            scop: self.scop,
            deps: self.deps,
            capacities: self.capacities,
        }
    }
    /// The spec tiling applies: the user's, completed by the default policy unless
    /// `--no-default-tiling`. `None` when there is nothing to tile.
    pub fn effective_spec(
        &self,
        tree: &ScheduleTree,
    ) -> Result<Option<(tiling::TileSpec, SourceFile)>> {
        let cx = self.tile_cx();
        let mut spec = match self.tile_spec {
            Some((s, f)) => (s.clone(), f.clone()),
            None => (
                tiling::TileSpec {
                    stmts: Vec::new(),
                    buffers: self.capacities.iter().map(|(b, _)| *b).collect(),
                },
                SourceFile::new("<default tiling policy>", ""),
            ),
        };
        if self.default_tiling {
            let defaults = tiling::default_spec(tree, &cx, Some(&spec.0))?;
            spec.0.stmts.extend(defaults.stmts);
        }
        Ok(if spec.0.stmts.is_empty() {
            None
        } else {
            Some(spec)
        })
    }
}

/// The schedule tree after one stage.
#[derive(Clone, Debug)]
pub struct Stage {
    /// `initial`, `scheduled`, or a pass name.
    pub name: String,
    /// The tree after the stage.
    pub tree: ScheduleTree,
}

/// Wall time of one step of the pipeline.
#[derive(Clone, Debug)]
pub struct Timing {
    /// The step (`parse`, `model`, `deps`, `schedule`, a pass name, `codegen`).
    pub step: String,
    /// Milliseconds.
    pub ms: f64,
}

/// The result of compiling one `def`.
pub struct Compiled {
    /// The source file.
    pub source: SourceFile,
    /// The resolved program.
    pub program: Program,
    /// Each size's value if bound (in `program.params` order).
    pub param_values: Vec<Option<i64>>,
    /// Each size as the emitted code writes it: its value if bound, else its name.
    pub param_texts: Vec<String>,
    /// The tree after every stage, in pipeline order; the last is the `final` tree.
    pub stages: Vec<Stage>,
    /// The emitted C translation unit.
    pub c_source: String,
    /// Per-step wall times.
    pub timings: Vec<Timing>,
    /// Notes and warnings from the passes.
    pub notes: Vec<String>,
    /// The `polyc explain` report, when the options asked for it.
    pub explain: Option<String>,
}

/// How far [`compile`] goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The full pipeline as the options say.
    Optimised,
    /// Reference order, no passes: the untransformed program, used as an oracle when the
    /// interpreter would take too long.
    Untransformed,
    /// Stop after scheduling (no passes, no code): for `polyc schedule-report`.
    ScheduleOnly,
}

/// The code-generation target for a target description. Only the CPU exists so far;
/// everything downstream holds a `&dyn Target`, so a new target plugs in here. The C
/// compiler's flags follow the description (its `vector_bytes`).
pub fn target_for(desc: &targets::desc::TargetDesc) -> Box<dyn targets::Target> {
    Box::new(targets::CpuTarget {
        cc: targets::CcOptions::for_target(desc),
    })
}

/// The code-generation target the options name (`--target-desc`, or the built-in CPU
/// description).
pub fn target(opts: &CompileOptions) -> Result<Box<dyn targets::Target>> {
    Ok(target_for(&load_target_desc(opts)?))
}

/// The CPU pass list. Each pass is a value with a name; the pipeline runs them in order and
/// records the tree after each.
pub fn cpu_passes<'a>() -> Vec<Box<dyn Pass<PassCx<'a>>>> {
    vec![
        Box::new(Tile),
        Box::new(Fuse),
        Box::new(Promote),
        Box::new(MarkParallel),
    ]
}

/// Memory promotion: copy-in and copy-out of the tiles placed at memory marks, as
/// extension nodes, with the accesses inside re-indexed into local buffers.
struct Promote;

impl<'a> Pass<PassCx<'a>> for Promote {
    fn name(&self) -> &'static str {
        "promoted"
    }
    fn run(&self, tree: ScheduleTree, cx: &PassCx<'a>) -> Result<ScheduleTree> {
        let opts = targets::promote::PromoteOptions {
            locals: cx.fuse_locals.borrow().clone(),
            ..cx.promote.clone()
        };
        let tree = if opts.hoist {
            let (tree, hoisted) =
                targets::hoist::hoist_packed_tiles(cx.ctx, cx.program, cx.scop, &tree, &opts)?;
            cx.notes
                .borrow_mut()
                .extend(hoisted.iter().map(|h| format!("note: {h}")));
            tree
        } else {
            tree
        };
        let (tree, report) = targets::promote::promote(cx.ctx, cx.program, cx.scop, &tree, &opts)?;
        *cx.promote_report.borrow_mut() = Some(report.to_string());
        Ok(tree)
    }
}

/// The promotion settings for a target: each buffer's kind comes from its description
/// (a register file takes register tiles; a per-core cache packs; a shared cache and
/// everything else takes nothing).
pub fn promote_options(
    desc: &targets::desc::TargetDesc,
    opts: &CompileOptions,
) -> targets::promote::PromoteOptions {
    use targets::promote::{LevelInfo, PromoteKind, PromoteOptions};
    let levels = desc
        .buffers
        .iter()
        .filter_map(|b| {
            let kind = if b.registers.is_some() {
                PromoteKind::Registers
            } else if b.shared == Some(true) {
                PromoteKind::None
            } else {
                PromoteKind::Pack
            };
            Some(LevelInfo {
                buffer: b.buffer()?,
                bytes: b.bytes,
                stages: 1,
                kind,
            })
        })
        .collect();
    PromoteOptions {
        levels,
        pack: opts.pack,
        registers: !opts.no_register_tiles,
        hoist: !opts.no_hoist,
        locals: Vec::new(),
    }
}

/// Post-tiling fusion (reverse strategy): live-out tiles pull in the producer instances
/// they need through an extension node; the producers' original subtrees are skipped.
struct Fuse;

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
            ..Default::default()
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

/// Post-tiling fusion settings.
#[derive(Clone, Copy, Debug)]
pub struct TileFusion {
    /// Run the fusion pass at all.
    pub enabled: bool,
    /// Run overlapped in-place producers once, in the first tile that needs them.
    pub one_nest: bool,
}

/// Tiles bands as the tile spec (and the default policy) say, with `Mem` marks.
struct Tile;

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

/// Marks the outermost coincident loop of every band path for OpenMP.
struct MarkParallel;

impl<'a> Pass<PassCx<'a>> for MarkParallel {
    fn name(&self) -> &'static str {
        "parallel"
    }
    fn run(&self, tree: ScheduleTree, cx: &PassCx<'a>) -> Result<ScheduleTree> {
        let schedule = tree.to_isl(cx.ctx)?;
        let marked = targets::mark_outer_parallel(schedule)?;
        ScheduleTree::from_isl(&marked)
    }
}

/// Stage names a `--load-tree` or `--stage` may use, in order, for error messages.
pub fn stage_names() -> Vec<String> {
    let mut v = vec!["initial".to_string(), "scheduled".to_string()];
    v.extend(cpu_passes().iter().map(|p| p.name().to_string()));
    v.push("final".to_string());
    v
}

/// Binds `--param` values to the program's sizes; an unknown name is an error that lists
/// the sizes the program has.
pub fn bind_params(program: &Program, given: &[(String, i64)]) -> Result<Vec<Option<i64>>> {
    let mut values = vec![None; program.params.len()];
    for (name, value) in given {
        match program.param_index(name) {
            Some(i) => values[i] = Some(*value),
            None => {
                let names = program.param_names();
                return Err(miette!(
                    help = if names.is_empty() {
                        "this def has no sizes; drop --param".to_string()
                    } else {
                        format!("the sizes of `{}` are: {}", program.name, names.join(", "))
                    },
                    "--param: `{name}` is not a size of `{}`",
                    program.name
                ));
            }
        }
    }
    Ok(values)
}

struct Timer {
    timings: Vec<Timing>,
    start: Instant,
}

impl Timer {
    fn new() -> Self {
        Timer {
            timings: Vec::new(),
            start: Instant::now(),
        }
    }
    fn lap(&mut self, step: &str) {
        let now = Instant::now();
        self.timings.push(Timing {
            step: step.to_string(),
            ms: (now - self.start).as_secs_f64() * 1e3,
        });
        self.start = now;
    }
}

/// Compiles one `def` as the options say.
pub fn compile(opts: &CompileOptions, mode: Mode) -> Result<Compiled> {
    let mut timer = Timer::new();
    let source = SourceFile::read(&opts.program)?;
    let program = polyhedral::lang::compile(&source, opts.entry.as_deref())?;
    let param_values = bind_params(&program, &opts.params)?;
    let texts = param_texts(&program, &param_values);
    timer.lap("parse");

    let ctx = Ctx::new();
    let scop = Scop::build(&ctx, &program, &param_values, &source)?;
    timer.lap("model");
    let deps = Deps::compute(&scop)?;
    timer.lap("deps");

    let loads = validate_load_requests(opts)?;
    let desc = load_target_desc(opts)?;
    let capacities = desc.capacities();
    let tile_spec = match &opts.tile_spec {
        Some(path) => {
            let file = SourceFile::read(path)?;
            Some((tiling::parse_tile_spec(&file, &desc.buffer_order())?, file))
        }
        None => None,
    };
    let mut stages = Vec::new();
    let initial = initial_schedule(&scop, &deps)?;
    let mut tree = ScheduleTree::from_isl(&initial)?;
    tree = apply_load(&ctx, &scop, &deps, "initial", tree, &loads)?;
    stages.push(Stage {
        name: "initial".into(),
        tree: tree.clone(),
    });

    let scheduler = match mode {
        Mode::Optimised | Mode::ScheduleOnly => opts.scheduler,
        Mode::Untransformed => SchedulerKind::Initial,
    };
    if scheduler != SchedulerKind::Initial && loads.iter().any(|l| l.stage == "initial") {
        return Err(miette!(
            help = "load the tree as `scheduled` to replace the scheduler's result, or use --scheduler initial",
            "--load-tree initial=…: the {} scheduler computes its schedule from the dependences and does not read the initial tree",
            scheduler.name()
        ));
    }
    match scheduler {
        SchedulerKind::Initial => {}
        SchedulerKind::Isl => {
            let sched_opts = opts.isl_sched_options()?;
            let s = isl_schedule(&ctx, &scop, &deps, &sched_opts)?;
            tree = ScheduleTree::from_isl(&s)?;
        }
        SchedulerKind::Ilp => {
            let s = ilp_schedule(&ctx, &scop, &deps, &ilp_options(opts, &scop)?)?;
            tree = ScheduleTree::from_isl(&s)?;
        }
    }
    tree = apply_load(&ctx, &scop, &deps, "scheduled", tree, &loads)?;
    stages.push(Stage {
        name: "scheduled".into(),
        tree: tree.clone(),
    });
    timer.lap("schedule");
    if mode == Mode::ScheduleOnly {
        return Ok(Compiled {
            source,
            program,
            param_values,
            param_texts: texts,
            stages,
            c_source: String::new(),
            timings: timer.timings,
            notes: Vec::new(),
            explain: None,
        });
    }

    let mut notes = Vec::new();
    let mut explain = None;
    if mode == Mode::Optimised {
        // The tile-size search resolves `?`, `[lo..hi]` and `{…}` entries (crate::search).
        let searched = crate::search::resolve_tile_spec(
            opts,
            &crate::search::SearchCx {
                ctx: &ctx,
                program: &program,
                scop: &scop,
                deps: &deps,
                capacities: &capacities,
                param_values: &param_values,
            },
            &tree,
            tile_spec.clone(),
        )?;
        let tile_spec = searched.spec;
        let cx = PassCx {
            ctx: &ctx,
            program: &program,
            scop: &scop,
            deps: &deps,
            capacities: &capacities,
            tile_spec: tile_spec.as_ref(),
            default_tiling: !opts.no_default_tiling,
            notes: std::cell::RefCell::new(searched.note.into_iter().collect()),
            tile_fusion: TileFusion {
                enabled: !opts.no_tile_fusion,
                one_nest: opts.tile_fusion_one_nest,
            },
            fuse_report: std::cell::RefCell::new(None),
            fuse_locals: std::cell::RefCell::new(Vec::new()),
            promote: promote_options(&desc, opts),
            promote_report: std::cell::RefCell::new(None),
        };
        if opts.explain {
            explain = Some(match cx.effective_spec(&tree)? {
                Some((spec, file)) => {
                    let report = tiling::explain(&tree, &cx.tile_cx(), &spec, &file)?;
                    format!("tile spec:\n{spec}\n{report}")
                }
                None => no_band_tiled(opts),
            });
            if let (Some(text), Some(search)) = (explain.as_mut(), &searched.explain) {
                text.insert_str(0, &format!("{search}\n"));
            }
        }
        for pass in cpu_passes() {
            tree = pass.run(tree, &cx)?;
            // A tree with extension nodes runs some instances twice (recomputation), which
            // the generic check cannot judge; the fusion pass checks its own result exactly.
            if opts.verify_passes
                && tree
                    .find(&|k| matches!(k, NodeKind::Extension { .. }))
                    .is_empty()
            {
                let schedule = tree.to_isl(&ctx)?;
                verify_tree(&scop, &deps, &schedule, &format!("pass `{}`", pass.name()))
                    .map_err(|e| miette!("internal error (please report it): {e:?}"))?;
            }
            tree = apply_load(&ctx, &scop, &deps, pass.name(), tree, &loads)?;
            stages.push(Stage {
                name: pass.name().into(),
                tree: tree.clone(),
            });
            timer.lap(pass.name());
        }
        if let (Some(text), Some(fuse)) = (explain.as_mut(), cx.fuse_report.borrow().as_ref()) {
            text.push_str("\npost-tiling fusion:\n");
            text.push_str(fuse);
        }
        if let (Some(text), Some(p)) = (explain.as_mut(), cx.promote_report.borrow().as_ref()) {
            text.push('\n');
            text.push_str(p);
        }
        notes = cx.notes.into_inner();
    }
    tree = apply_load(&ctx, &scop, &deps, "final", tree, &loads)?;
    stages.push(Stage {
        name: "final".into(),
        tree: tree.clone(),
    });

    let schedule = tree.to_isl(&ctx)?;
    let kernel = targets::lower::lower_with(&ctx, &program, Some(&scop), &schedule)?;
    let c_source = target_for(&desc).emit(
        &program,
        &texts,
        &kernel,
        &targets::EmitOptions { poison_temps: true },
    )?;
    timer.lap("codegen");
    drop(schedule);
    drop(deps);
    drop(scop);
    drop(ctx);
    Ok(Compiled {
        source,
        program,
        param_values,
        param_texts: texts,
        stages,
        c_source,
        timings: timer.timings,
        notes,
        explain,
    })
}

/// `polyc explain`'s first line when nothing is tiled, saying why.
fn no_band_tiled(opts: &CompileOptions) -> String {
    let spec = match &opts.tile_spec {
        Some(f) => format!("{f} names no statement"),
        None => "no --tile-spec".to_string(),
    };
    let policy = if opts.no_default_tiling {
        "--no-default-tiling"
    } else {
        "the default policy finds no band to tile (it tiles outermost permutable bands whose extents are bound)"
    };
    format!("no band is tiled: {spec}, and {policy}\n")
}

/// The ILP scheduler's options from the command line, with the constraints file parsed
/// against the model (so unknown statements and iterators are located errors).
pub fn ilp_options(opts: &CompileOptions, scop: &Scop) -> Result<IlpOptions> {
    let pins = match &opts.schedule_constraints {
        Some(path) => parse_constraints(&SourceFile::read(path)?, scop)?,
        None => Vec::new(),
    };
    Ok(IlpOptions {
        fuse: opts.fuse,
        no_skew: opts.no_skew,
        pins,
        solver: opts.ilp_solver,
        ..IlpOptions::default()
    })
}

fn validate_load_requests(opts: &CompileOptions) -> Result<Vec<crate::options::LoadTree>> {
    let names = stage_names();
    for l in &opts.load_trees {
        if !names.contains(&l.stage) {
            return Err(miette!(
                help = format!("the stages are: {}", names.join(", ")),
                "--load-tree: there is no stage `{}`",
                l.stage
            ));
        }
    }
    Ok(opts.load_trees.clone())
}

/// Replaces `tree` with the loaded one if a `--load-tree` names this stage, after checking
/// it covers the same instances and respects every dependence.
fn apply_load(
    ctx: &Ctx,
    scop: &Scop,
    deps: &Deps,
    stage: &str,
    tree: ScheduleTree,
    loads: &[crate::options::LoadTree],
) -> Result<ScheduleTree> {
    let Some(load) = loads.iter().find(|l| l.stage == stage) else {
        return Ok(tree);
    };
    let file = SourceFile::read(&load.file)?;
    let loaded = ScheduleTree::from_yaml_file(ctx, &file)?;
    let schedule = loaded.to_isl(ctx)?;
    verify_tree(scop, deps, &schedule, &load.file)?;
    Ok(loaded)
}

/// Checks that `schedule` covers exactly the model's instances and orders every dependence
/// source before its target.
pub fn verify_tree(
    scop: &Scop,
    deps: &Deps,
    schedule: &polyhedral::isl::isl_rs::Schedule,
    what: &str,
) -> Result<()> {
    let domain = schedule
        .get_domain()
        .isl("reading the loaded tree's domain")?;
    let same = domain
        .is_equal(&scop.domain)
        .isl("comparing the loaded tree's domain")?;
    if !same {
        let missing = scop
            .domain
            .copy()
            .isl("copying the domain")?
            .subtract(domain.copy().isl("copying the domain")?)
            .isl("comparing domains")?;
        let extra = domain
            .subtract(scop.domain.copy().isl("copying the domain")?)
            .isl("comparing domains")?;
        return Err(miette!(
            help = "a loaded tree must schedule exactly the program's statement instances; start from `polyc dump --format isl` of the same program and sizes",
            "{what}: the tree does not cover the program's instances\n  missing: {}\n  extra:   {}",
            missing.to_str().unwrap_or("?"),
            extra.to_str().unwrap_or("?")
        ));
    }
    let checked = check_schedule(deps, schedule).map_err(|e| {
        miette!(
            help = "a loaded tree must schedule every statement instance exactly once; start from `polyc dump --format isl` of the same program and sizes",
            "{what}: {e}"
        )
    })?;
    match checked {
        Ok(()) => Ok(()),
        Err(violation) => Err(miette!(
            help = "the tree must run every dependence source before its target; reorder the sequence or change the band so that this dependence is respected",
            "{what}: the tree violates a dependence: {violation}"
        )),
    }
}

impl Compiled {
    /// The tree after `stage` (`final` is the last one).
    pub fn stage(&self, stage: &str) -> Result<&Stage> {
        self.stages.iter().find(|s| s.name == stage).ok_or_else(|| {
            let names: Vec<&str> = self.stages.iter().map(|s| s.name.as_str()).collect();
            miette!(
                help = format!("the stages are: {}", names.join(", ")),
                "there is no stage `{stage}`"
            )
        })
    }
    /// Sizes that are still symbolic.
    pub fn unbound_sizes(&self) -> Vec<String> {
        self.program
            .params
            .iter()
            .zip(&self.param_values)
            .filter(|(_, v)| v.is_none())
            .map(|(p, _)| p.name.clone())
            .collect()
    }
}
