//! The compilation pipeline: parse → model → dependences → schedule ([`analyse`]), then
//! the target's passes → lowering → emission ([`finish`]).
//!
//! Every stage leaves a schedule tree behind ([`Stage`]), so `polyc dump` can show any of
//! them and `--load-tree STAGE=FILE` can replace one. A loaded tree is checked before use:
//! it must cover the same statement instances and respect every dependence.

use crate::pipeline::options::CompileOptions;
use miette::{miette, Result};
use polyhedral::deps::{check_schedule, Deps};
use polyhedral::diag::SourceFile;
use polyhedral::ilp::{ilp_schedule, parse_constraints, IlpOptions};
use polyhedral::ir::Program;
use polyhedral::isl::{Ctx, IslResultExt};
use polyhedral::sched::{initial_schedule, isl_schedule, isl_schedule_or_initial, SchedulerKind};
use polyhedral::sched_scaled::isl_schedule_scaled;
use polyhedral::scop::{param_texts, Scop};
use schedule_tree::{NodeKind, ScheduleTree};
use std::time::Instant;
use targets::desc::TargetDesc;
use targets::passes::{PassCx, TileFusion};
use targets::Target;

/// The target the options name (`--target NAME|FILE`; default: the built-in CPU), as
/// its implementation.
pub fn load_target(opts: &CompileOptions) -> Result<Box<dyn Target>> {
    let desc = TargetDesc::resolve(opts.target.as_deref().unwrap_or("cpu"))?;
    targets::target_for(desc, opts.device)
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
    /// The step's timed sub-steps (`tile:footprints`, `codegen:ast_build`, ...), in the
    /// order they first ran; nested sub-steps are also counted in the enclosing one.
    pub parts: Vec<polyhedral::substeps::SubStep>,
}

/// The result of compiling one `def`.
pub struct Compiled {
    /// The source file.
    pub source: SourceFile,
    /// The resolved program, with shared subexpressions computed once (see
    /// [`polyhedral::cse`]).
    pub program: Program,
    /// The program as written: the reference interpreter's (it has the same tensors as
    /// `program`, less the shared temporaries at the end).
    pub written: Program,
    /// Each size's value if bound (in `program.params` order).
    pub param_values: Vec<Option<i64>>,
    /// Each size as the emitted code writes it: its value if bound, else its name.
    pub param_texts: Vec<String>,
    /// The tree after every stage, in pipeline order; the last is the `final` tree.
    pub stages: Vec<Stage>,
    /// The kernel IR the code is printed from (`None` when scheduling only).
    pub kernel: Option<targets::Kernel>,
    /// The emitted source, in the target's default format (`--emit` picks another).
    pub code: String,
    /// Per-step wall times.
    pub timings: Vec<Timing>,
    /// Notes and warnings from the passes.
    pub notes: Vec<String>,
    /// The `polyc explain` report, when the options asked for it.
    pub explain: Option<String>,
    /// The `--dynamic` sizes the kernel was compiled for.
    pub dynamic: Vec<targets::codegen::microkernel::DynamicSize>,
}

/// How far the pipeline goes.
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

/// Stage names a `--load-tree` or `--stage` may use for `target`, in order, for error
/// messages.
pub fn stage_names(target: &dyn Target) -> Vec<String> {
    let mut v = vec!["initial".to_string(), "scheduled".to_string()];
    v.extend(target.passes().iter().map(|p| p.name().to_string()));
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
    /// Notes on standard error when the steps take long.
    watch: crate::pipeline::progress::Watch,
}

impl Timer {
    fn new() -> Self {
        polyhedral::substeps::take();
        Timer {
            timings: Vec::new(),
            start: Instant::now(),
            watch: crate::pipeline::progress::Watch::start(),
        }
    }
    fn lap(&mut self, step: &str) {
        self.watch.finished(step);
        let now = Instant::now();
        self.timings.push(Timing {
            step: step.to_string(),
            ms: (now - self.start).as_secs_f64() * 1e3,
            parts: polyhedral::substeps::take(),
        });
        self.start = now;
    }
}

/// The first half of the pipeline: parse, model, dependences and scheduling. The second
/// half ([`finish`]) runs the target's passes with a resolved tile spec; the tile-size
/// search (`crate::pipeline::tile_search`) sits between the two and calls [`finish`] as an evaluator.
pub struct Front {
    /// The source file.
    pub source: SourceFile,
    /// The resolved program, with shared subexpressions computed once.
    pub program: Program,
    /// The program as written (see [`Compiled::written`]).
    pub written: Program,
    /// Each size's value if bound.
    pub param_values: Vec<Option<i64>>,
    /// Each size as the emitted code writes it.
    pub param_texts: Vec<String>,
    /// The `initial` and `scheduled` stages.
    pub stages: Vec<Stage>,
    /// Per-step wall times so far.
    pub timings: Vec<Timing>,
    /// The validated `--load-tree` requests.
    pub loads: Vec<crate::pipeline::options::LoadTree>,
    /// The target.
    pub target: Box<dyn Target>,
    /// The parsed `--tile-spec` and its file (search entries unresolved).
    pub tile_spec: Option<(tiling::TileSpec, SourceFile)>,
    /// Notes on the scheduling choices (printed with the pipeline's notes).
    pub schedule_notes: Vec<String>,
    // isl objects below; the context must be dropped last (fields drop in order).
    /// Dependences.
    pub deps: Deps,
    /// The polyhedral model.
    pub scop: Scop,
    /// The isl context every object belongs to.
    pub ctx: Ctx,
}

impl Front {
    /// The scheduled tree.
    pub fn scheduled(&self) -> &ScheduleTree {
        &self.stages[self.stages.len() - 1].tree
    }
}

/// A program with more statements than `--max-statements` allows is a located error at
/// the first statement over the limit.
fn check_statement_count(program: &Program, source: &SourceFile, max: usize) -> Result<()> {
    let Some(first_over) = program.stmts.get(max) else {
        return Ok(());
    };
    Err(source
        .error(
            first_over.span,
            format!(
                "`{}` has {} statements (inits counted), more than the {max} polyc compiles by default",
                program.name,
                program.stmts.len()
            ),
            format!("statement {} of {}", max + 1, program.stmts.len()),
            format!(
                "compile time grows faster than the number of statements (400 take about 30 s); \
                 to compile it anyway, pass --max-statements {}",
                program.stmts.len()
            ),
        )
        .into())
}

/// The note on one shared subexpression.
fn shared_note(s: &polyhedral::cse::SharedValue) -> String {
    format!(
        "note: `{}` is computed once, into the new temporary {} (new statement {}, read by {}; later statements renumbered; --no-share computes it in each)",
        s.text,
        s.tensor,
        s.stmt,
        s.users.join(" and ")
    )
}

/// Parses, models, computes dependences and schedules, as the options say.
pub fn analyse(opts: &CompileOptions, mode: Mode) -> Result<Front> {
    let mut timer = Timer::new();
    let source = SourceFile::read(&opts.program)?;
    let mut program = polyhedral::lang::compile_as(&source, opts.entry.as_deref(), opts.lang)?;
    check_statement_count(&program, &source, opts.max_statements)?;
    let written = program.clone();
    let mut schedule_notes = Vec::new();
    if mode != Mode::Untransformed && !opts.no_share {
        let shared = polyhedral::cse::share_costly_subexpressions(&mut program);
        schedule_notes.extend(shared.iter().map(shared_note));
    }
    let param_values = bind_params(&program, &opts.params)?;
    check_dynamic(opts, &program, &param_values)?;
    let texts = param_texts(&program, &param_values);
    timer.lap("parse");

    let ctx = Ctx::new();
    let mut scop = Scop::build(&ctx, &program, &param_values, &source)?;
    let ranges: Vec<(String, i64, i64)> = opts
        .dynamic
        .iter()
        .map(|d| (d.name.clone(), d.lo(), d.hi()))
        .collect();
    scop.assume_sizes(&ctx, &ranges)?;
    timer.lap("model");
    let deps = Deps::compute(&scop)?;
    timer.lap("deps");

    let target = load_target(opts)?;
    if let Some(p) = &opts.policy {
        let known = target.policies();
        if !known.iter().any(|(name, _)| name == p) {
            let list: Vec<String> = known
                .iter()
                .map(|(name, what)| format!("`{name}` ({what})"))
                .collect();
            return Err(miette!(
                help = format!("target `{}` has: {}", target.name(), list.join("; ")),
                "--policy {p}: target `{}` has no tiling policy of that name",
                target.name()
            ));
        }
    }
    if !opts.dynamic.is_empty() && target.micro_kernel_model(&program).is_none() {
        return Err(miette!(
            help = "compile for a CPU or GPU target, or leave the size symbolic without --dynamic (parametric tiling works on every target)",
            "--dynamic is not supported yet on target `{}` (only on CPU and GPU targets)",
            target.name()
        ));
    }
    let loads = validate_load_requests(opts, target.as_ref())?;
    let tile_spec = match &opts.tile_spec {
        Some(path) => {
            let file = SourceFile::read(path)?;
            let spec = tiling::parse_tile_spec(&file, &target.desc().buffer_order())?;
            check_stage_counts(&spec, &file, target.as_ref())?;
            Some((spec, file))
        }
        None => None,
    };
    let mut stages = Vec::new();
    let initial = initial_schedule(&scop, &deps)?;
    let mut tree = ScheduleTree::from_isl(&initial)?;
    tree = apply_load(
        (&ctx, &scop, &deps, target.as_ref()),
        "initial",
        tree,
        &loads,
    )?;
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
    polyhedral::order::check_interleaving(&scop, &program, &source)?;
    match scheduler {
        SchedulerKind::Initial => {}
        SchedulerKind::Isl => {
            let (isl_tree, notes) = isl_scheduled(
                (&ctx, &program, &source),
                (&scop, &deps),
                target.as_ref(),
                opts,
                mode,
            )?;
            tree = isl_tree;
            schedule_notes.extend(notes);
        }
        SchedulerKind::Ilp => {
            let s = ilp_schedule(&ctx, &scop, &deps, &ilp_options(opts, &scop)?)?;
            tree = ScheduleTree::from_isl(&s)?;
        }
    }
    tree = apply_load(
        (&ctx, &scop, &deps, target.as_ref()),
        "scheduled",
        tree,
        &loads,
    )?;
    if scop.symbolic.is_empty() {
        let _s = polyhedral::substeps::span("schedule:check_limits");
        polyhedral::limits::check_schedule(&tree.to_isl(&ctx)?)?;
    }
    stages.push(Stage {
        name: "scheduled".into(),
        tree,
    });
    timer.lap("schedule");
    Ok(Front {
        source,
        program,
        written,
        param_values,
        param_texts: texts,
        stages,
        timings: timer.timings,
        loads,
        target,
        tile_spec,
        schedule_notes,
        deps,
        scop,
        ctx,
    })
}

/// isl's schedule (scaled down first where the sizes allow, see
/// `polyhedral::sched_scaled`), with the register-shape rescheduling, and its notes.
fn isl_scheduled(
    (ctx, program, source): (&Ctx, &Program, &SourceFile),
    (scop, deps): (&Scop, &Deps),
    target: &dyn Target,
    opts: &CompileOptions,
    mode: Mode,
) -> Result<(ScheduleTree, Vec<String>)> {
    let mut all = target.isl_options();
    all.extend(opts.isl_options.iter().cloned());
    let sched_opts = polyhedral::sched::IslSchedOptions::parse(&all)?;
    let names: Vec<String> = program.params.iter().map(|p| p.name.clone()).collect();
    // The models at other sizes, built on worker threads' own isl contexts.
    let build = |ctx: &Ctx, sizes: &[Option<i64>]| -> Option<(Scop, Deps)> {
        let small = Scop::build(ctx, program, sizes, source).ok()?;
        let deps = Deps::compute(&small).ok()?;
        Some((small, deps))
    };
    // (Not where isl is asked for no fusion, or for Feautrier's algorithm, whose trees
    // differ from the fused one.)
    let feautrier = sched_opts.algorithm == Some(polyhedral::sched::IslAlgorithm::Feautrier);
    if sched_opts.aligned != Some(false) && sched_opts.serialize_sccs != Some(true) && !feautrier {
        let aligned = polyhedral::substeps::timed("schedule:aligned", || {
            polyhedral::sched_aligned::aligned_schedule(scop, deps)
        })?;
        if let Some(schedule) = aligned {
            return Ok((ScheduleTree::from_isl(&schedule)?, Vec::new()));
        }
    }
    let s = polyhedral::substeps::timed("schedule:isl", || {
        match isl_schedule_scaled(ctx, scop, deps, &names, &build, &sched_opts)?
            .kept_or(&sched_opts)
        {
            Ok(s) => Ok(s),
            Err(direct) => isl_schedule_or_initial(ctx, scop, deps, &direct),
        }
    })?;
    let mut tree = ScheduleTree::from_isl(&s.schedule)?;
    let mut notes = s.notes;
    let has_registers = target
        .desc()
        .levels()
        .iter()
        .any(|l| l.role.is_register_file());
    if mode == Mode::Optimised
        && has_registers
        && !s.fell_back
        && sched_opts.serialize_sccs.is_none()
    {
        if let Some((apart, note)) =
            polyhedral::substeps::timed("schedule:register_shapes", || {
                keep_register_shapes(ctx, (scop, deps), (&names, &build), &sched_opts, &tree)
            })?
        {
            tree = apart;
            notes.push(note);
        }
    }
    if mode == Mode::Optimised && !s.fell_back && sched_opts.phases != Some(false) {
        let split = polyhedral::substeps::timed("schedule:phases", || {
            polyhedral::sched_phases::split_phases(ctx, scop, deps, &tree.to_isl(ctx)?)
        })?;
        if let Some((split, split_notes)) = split {
            tree = ScheduleTree::from_isl(&split)?;
            notes.extend(split_notes);
        }
    }
    // Contiguous inner loops order one core's loops for its caches and vector registers:
    // a target without a register file (a scratchpad accelerator, whose tiles move by
    // DMA) keeps isl's order, and the GPU target turns it off in its isl options.
    if mode == Mode::Optimised
        && has_registers
        && !s.fell_back
        && sched_opts.contiguous != Some(false)
    {
        let levels = target.desc().levels();
        let register_tiled = |t: &ScheduleTree| -> miette::Result<Vec<String>> {
            let cx = tiling::TileCx {
                ctx,
                program,
                scop,
                deps,
                levels: &levels,
            };
            let plan = target.default_plan(t, &cx, None)?;
            Ok(plan
                .spec
                .stmts
                .into_iter()
                .filter(|st| {
                    st.dims.iter().any(|d| {
                        d.levels.iter().any(|l| {
                            levels
                                .iter()
                                .any(|v| v.buffer == l.buffer && v.role.is_register_file())
                        })
                    })
                })
                .map(|st| st.stmt)
                .collect())
        };
        let moved = polyhedral::substeps::timed("schedule:contiguous", || {
            tiling::contiguous::contiguous_inner_loops(ctx, scop, deps, &tree, &register_tiled)
        })?;
        if let Some((moved, moved_notes)) = moved {
            tree = moved;
            notes.extend(moved_notes);
        }
    }
    Ok((tree, notes))
}

/// isl's scheduler fuses strongly connected components where it can, and may pay for a
/// fusion with the register-tile shape of a contraction (two coincident members and a
/// reduction; see `tiling::regshape`). When some statement loses that shape, this
/// schedules the components apart (`serialize_sccs`): post-tiling fusion then fuses the
/// tiled producers into the live-out tiles, AKG's order, and the contraction keeps its
/// register tiles. Returns the other tree and a note, or `None` to keep `tree` (no shape
/// lost, or none regained apart).
fn keep_register_shapes(
    ctx: &Ctx,
    (scop, deps): (&Scop, &Deps),
    (names, build): (&[String], &polyhedral::sched_scaled::BuildInstance),
    opts: &polyhedral::sched::IslSchedOptions,
    tree: &ScheduleTree,
) -> Result<Option<(ScheduleTree, String)>> {
    let candidates = tiling::regshape::register_candidates(scop);
    if candidates.is_empty() {
        return Ok(None);
    }
    use tiling::regshape::RegisterShape;
    let fused = tiling::regshape::register_shaped(ctx, scop, tree, &candidates)?;
    let lost: Vec<(usize, RegisterShape)> = candidates
        .iter()
        .zip(&fused)
        .filter(|(_, &shape)| shape != RegisterShape::Kept)
        .map(|(&s, &shape)| (s, shape))
        .collect();
    if lost.is_empty() {
        return Ok(None);
    }
    let mut apart_opts = opts.clone();
    apart_opts.serialize_sccs = Some(true);
    let apart = match isl_schedule_scaled(ctx, scop, deps, names, build, &apart_opts)?
        .kept_or(&apart_opts)
    {
        Ok(s) if !s.fell_back => s.schedule,
        Ok(_) => isl_schedule(ctx, scop, deps, &apart_opts)?,
        Err(direct) => isl_schedule(ctx, scop, deps, &direct)?,
    };
    let apart = ScheduleTree::from_isl(&apart)?;
    let lost_stmts: Vec<usize> = lost.iter().map(|&(s, _)| s).collect();
    let shaped = tiling::regshape::register_shaped(ctx, scop, &apart, &lost_stmts)?;
    let regained: Vec<(usize, RegisterShape)> = lost
        .iter()
        .zip(&shaped)
        .filter(|(_, &now)| now == RegisterShape::Kept)
        .map(|(&lost, _)| lost)
        .collect();
    if regained.is_empty() {
        return Ok(None);
    }
    let names = |clashed: bool| -> Vec<String> {
        regained
            .iter()
            .filter_map(|&(s, shape)| match shape {
                RegisterShape::Clashed(t) if clashed => Some(format!(
                    "{s} with {t}, which touches the tensor {s} writes through other indices \
                     (transposed), so no register tile holds that tensor",
                    s = scop.stmt_names[s],
                    t = scop.stmt_names[t]
                )),
                RegisterShape::Lost if !clashed => Some(scop.stmt_names[s].clone()),
                _ => None,
            })
            .collect()
    };
    let mut why = Vec::new();
    let (no_shape, clashed) = (names(false), names(true));
    if !no_shape.is_empty() {
        why.push(format!(
            "leaves {} no register-tile shape (two parallel members and a reduction)",
            no_shape.join(", ")
        ));
    }
    if !clashed.is_empty() {
        why.push(format!("fuses {}", clashed.join("; ")));
    }
    Ok(Some((
        apart,
        format!(
            "note: isl's fused schedule {}; polyc schedules the components apart and lets post-tiling fusion fuse them after tiling \
             (--isl-option serialize_sccs=0 keeps isl's fusion)",
            why.join(", and ")
        ),
    )))
}

/// What the tile-size search resolved, for [`finish`].
#[derive(Default)]
pub struct SpecChoice {
    /// The spec to tile with (no search entries left), if any.
    pub spec: Option<(tiling::TileSpec, SourceFile)>,
    /// A note for the user (`search: … picked …`).
    pub note: Option<String>,
    /// Text to put at the top of the `explain` report.
    pub explain: Option<String>,
}

/// The start of `polyc explain`: the applied tile spec with the default policy's fusion
/// planning and the tiling report (or why nothing is tiled), after the search's lines.
fn spec_explain(
    opts: &CompileOptions,
    target: &dyn Target,
    cx: &PassCx,
    tree: &ScheduleTree,
    applied_spec: &Option<(tiling::TileSpec, SourceFile)>,
    planning: &[String],
    choice: &SpecChoice,
) -> Result<String> {
    let mut text = match applied_spec.clone() {
        Some((spec, file)) => {
            let report = tiling::explain(tree, &cx.tile_cx(), &spec, &file)?;
            let planning = if planning.is_empty() {
                String::new()
            } else {
                format!(
                    "fusion planning (default policy):\n{}\n\n",
                    planning.join("\n")
                )
            };
            format!("tile spec:\n{spec}\n{planning}{report}")
        }
        None => target
            .untiled_explain()
            .map_or_else(|| no_band_tiled(opts), |t| format!("{t}\n")),
    };
    if let Some(search) = &choice.explain {
        text.insert_str(0, &format!("{search}\n"));
    }
    Ok(text)
}

/// Lowers the final schedule to the kernel IR: with `--dynamic` sizes (optimised
/// only), composed from micro-kernels, whose report goes to `explain`.
fn lower_kernel(
    front: &Front,
    opts: &CompileOptions,
    mode: Mode,
    schedule: &polyhedral::isl::isl_rs::Schedule,
    explain: &mut Option<String>,
) -> Result<targets::Kernel> {
    Ok(if opts.dynamic.is_empty() || mode != Mode::Optimised {
        targets::codegen::lower::lower_with(
            &front.ctx,
            &front.program,
            Some(&front.scop),
            schedule,
            &front.target.lower_options(),
        )?
    } else {
        let (kernel, sets, dynamic_notes) = targets::codegen::lower::lower_dynamic(
            &front.ctx,
            &front.program,
            Some(&front.scop),
            schedule,
            &front.target.lower_options(),
            &opts.dynamic,
            front
                .target
                .micro_kernel_model(&front.program)
                .ok_or_else(|| {
                    miette!(
                        "internal error: --dynamic reached a target without a micro-kernel model"
                    )
                })?,
        )?;
        if let Some(text) = explain.as_mut() {
            text.push('\n');
            text.push_str(&micro_kernel_report(&front.program, &opts.dynamic, &sets));
            dynamic_notes.iter().for_each(|n| text.push_str(n));
        }
        kernel
    })
}

/// What the target adds to `polyc explain` about the lowered kernel (per kernel).
fn explain_kernels(
    front: &Front,
    opts: &CompileOptions,
    mode: Mode,
    kernel: &targets::Kernel,
    text: &mut String,
) -> Result<()> {
    let sizes: Option<Vec<i64>> = front.param_values.iter().copied().collect();
    let input = targets::BuildInput {
        program: &front.program,
        param_texts: &front.param_texts,
        kernel,
        source: "",
        poison: false,
        via: opts.via.as_deref(),
        dynamic: if mode == Mode::Optimised {
            &opts.dynamic
        } else {
            &[]
        },
    };
    if let Some(k) = front.target.explain_kernels(&input, sizes.as_deref())? {
        text.push('\n');
        text.push_str(&k);
    }

    Ok(())
}

/// Runs the target's passes on `tree`, each checked (`--verify-passes`), replaced by a
/// loaded tree where `--load-tree` names it, recorded as a stage and timed; then adds the
/// passes' reports to `explain`.
fn run_passes(
    front: &Front,
    opts: &CompileOptions,
    cx: &PassCx,
    mut tree: ScheduleTree,
    stages: &mut Vec<Stage>,
    timer: &mut Timer,
    explain: &mut Option<String>,
) -> Result<ScheduleTree> {
    for pass in front.target.passes() {
        tree = pass.run(tree, cx)?;
        // A tree with extension nodes runs some instances twice (recomputation), which
        // the generic check cannot judge; the fusion pass checks its own result exactly.
        if opts.verify_passes
            && tree
                .find(&|k| matches!(k, NodeKind::Extension { .. }))
                .is_empty()
        {
            let schedule = tree.to_isl(&front.ctx)?;
            verify_tree(
                &front.scop,
                &front.deps,
                &schedule,
                &format!("pass `{}`", pass.name()),
            )
            .map_err(|e| miette!("internal error (please report it): {e:?}"))?;
        }
        tree = apply_load(
            (&front.ctx, &front.scop, &front.deps, front.target.as_ref()),
            pass.name(),
            tree,
            &front.loads,
        )?;
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
    if let Some(text) = explain.as_mut() {
        for r in cx.target_report.borrow().iter() {
            text.push('\n');
            text.push_str(r);
        }
    }
    Ok(tree)
}

/// The source code of the kernel in the `--emit` format (the target's first by
/// default); empty when code generation is off.
fn emit_code(
    front: &Front,
    opts: &CompileOptions,
    mode: Mode,
    kernel: &targets::Kernel,
) -> Result<String> {
    let target = front.target.as_ref();
    let format = match &opts.emit {
        Some(f) => check_emit_format(target, f)?,
        None => target.emit_formats().first().copied().unwrap_or("c"),
    };
    Ok(if opts.codegen {
        target.emit(
            &front.program,
            &front.param_texts,
            kernel,
            format,
            &targets::EmitOptions {
                poison_temps: true,
                dynamic: if mode == Mode::Optimised {
                    opts.dynamic.clone()
                } else {
                    Vec::new()
                },
            },
        )?
    } else {
        String::new()
    })
}

/// The second half of the pipeline: the target's passes with the resolved spec, then
/// lowering and emission. `front` is not consumed, so a search can finish it many times.
pub fn finish(
    front: &Front,
    opts: &CompileOptions,
    mode: Mode,
    choice: &SpecChoice,
) -> Result<Compiled> {
    let mut timer = Timer::new();
    let (ctx, scop, deps, program) = (&front.ctx, &front.scop, &front.deps, &front.program);
    let target = front.target.as_ref();
    let loads = &front.loads;
    let mut stages = front.stages.clone();
    let mut tree = front.scheduled().clone();
    let compiled = |stages, kernel, code, timer: Timer, notes, explain| Compiled {
        source: front.source.clone(),
        program: front.program.clone(),
        written: front.written.clone(),
        param_values: front.param_values.clone(),
        param_texts: front.param_texts.clone(),
        stages,
        kernel,
        code,
        timings: front.timings.iter().cloned().chain(timer.timings).collect(),
        notes,
        explain,
        dynamic: opts.dynamic.clone(),
    };
    if mode == Mode::ScheduleOnly {
        return Ok(compiled(
            stages,
            None,
            String::new(),
            timer,
            Vec::new(),
            None,
        ));
    }

    let levels = target.desc().levels();
    let mut notes = Vec::new();
    let mut explain = None;
    let mut applied_spec = None;
    if mode == Mode::Optimised {
        let cx = PassCx {
            ctx,
            program,
            scop,
            deps,
            policy: &target,
            levels: &levels,
            tile_spec: choice.spec.as_ref(),
            default_tiling: !opts.no_default_tiling,
            notes: std::cell::RefCell::new(
                front
                    .schedule_notes
                    .iter()
                    .chain(&choice.note)
                    .cloned()
                    .collect(),
            ),
            tile_fusion: TileFusion {
                enabled: !opts.no_tile_fusion,
                one_nest: opts.tile_fusion_one_nest,
            },
            fuse_report: std::cell::RefCell::new(None),
            fuse_locals: std::cell::RefCell::new(Vec::new()),
            promote: target.promote_options(&opts.promote_settings()),
            promote_report: std::cell::RefCell::new(None),
            target_report: std::cell::RefCell::new(Vec::new()),
        };
        let (spec, planning) =
            polyhedral::substeps::timed("tile:plan", || cx.effective_plan(&tree))?;
        applied_spec = spec;
        if opts.explain {
            explain = Some(spec_explain(
                opts,
                target,
                &cx,
                &tree,
                &applied_spec,
                &planning,
                choice,
            )?);
        }
        tree = run_passes(
            front,
            opts,
            &cx,
            tree,
            &mut stages,
            &mut timer,
            &mut explain,
        )?;
        notes = cx.notes.into_inner();
    }
    tree = apply_load((ctx, scop, deps, target), "final", tree, loads)?;
    stages.push(Stage {
        name: "final".into(),
        tree: tree.clone(),
    });

    let schedule = polyhedral::substeps::timed("codegen:tree_to_isl", || tree.to_isl(ctx))?;
    let kernel = lower_kernel(front, opts, mode, &schedule, &mut explain)?;
    let rewrite = polyhedral::substeps::span("codegen:target_rewrite");
    let (kernel, rewrite_notes, rewritten_tree) = target.rewrite_kernel_and_tree(
        &targets::RewriteCx {
            program,
            scop,
            param_values: &front.param_values,
            spec: applied_spec.as_ref(),
            optimised: mode == Mode::Optimised,
            scheduled: front.scheduled(),
            policy: opts.policy.as_deref().unwrap_or("default"),
        },
        kernel,
        &tree,
    )?;
    let (kernel, fold_notes) = fold_kernel_storage(front, opts, &schedule, kernel)?;
    let rewrite_notes: Vec<String> = rewrite_notes
        .into_iter()
        .chain(fold_notes.iter().cloned())
        .collect();
    notes.extend(fold_notes);
    // The target's own tiling as a tree (Gemmini): the `tensorised` dump stage.
    if let Some(t) = rewritten_tree {
        stages.push(Stage {
            name: TENSORISED_STAGE.into(),
            tree: t,
        });
    }
    if let Some(text) = explain.as_mut() {
        for n in &rewrite_notes {
            text.push('\n');
            text.push_str(n);
        }
        if !rewrite_notes.is_empty() {
            text.push('\n');
        }
    }
    if let Some(text) = explain.as_mut() {
        explain_kernels(front, opts, mode, &kernel, text)?;
    }
    drop(rewrite);
    let code =
        polyhedral::substeps::timed("codegen:emit", || emit_code(front, opts, mode, &kernel))?;
    timer.lap("codegen");
    Ok(compiled(stages, Some(kernel), code, timer, notes, explain))
}

/// Storage folding of the lowered `kernel`'s temporaries under the final `schedule`
/// (`targets::codegen::contract`), where the target folds storage, the sizes are not
/// dynamic and `--no-fold` is not given; with one note per fold.
fn fold_kernel_storage(
    front: &Front,
    opts: &CompileOptions,
    schedule: &polyhedral::isl::isl_rs::Schedule,
    kernel: targets::Kernel,
) -> Result<(targets::Kernel, Vec<String>)> {
    let target = front.target.as_ref();
    if !target.folds_storage() || !opts.dynamic.is_empty() || opts.no_fold {
        return Ok((kernel, Vec::new()));
    }
    targets::codegen::contract::fold_storage(
        &front.ctx,
        &front.scop,
        &front.program,
        &front.param_values,
        (schedule, &target.lower_options()),
        kernel,
    )
}

/// Checks the `--dynamic` sizes: each is a size of the program, not bound with
/// `--param`, and the target is a CPU.
fn check_dynamic(
    opts: &CompileOptions,
    program: &Program,
    param_values: &[Option<i64>],
) -> Result<()> {
    for d in &opts.dynamic {
        let Some(p) = program.param_index(&d.name) else {
            return Err(miette!(
                help = format!(
                    "the sizes of `{}` are: {}",
                    program.name,
                    program.param_names().join(", ")
                ),
                "--dynamic: `{}` is not a size of `{}`",
                d.name,
                program.name
            ));
        };
        if let Some(v) = param_values[p] {
            return Err(miette!(
                help = format!("drop `{}` from --param to keep it dynamic", d.name),
                "--dynamic: `{}` is also bound to {v} with --param",
                d.name
            ));
        }
    }
    Ok(())
}

/// The sizes at which `polyc explain` shows the composition: every value of a set; for a
/// range its ends and FTuner's samples (5, 24, 43, 53, 62, 81, 100, 119) inside it.
pub fn explain_samples(d: &targets::codegen::microkernel::DynamicSize) -> Vec<i64> {
    d.explain_samples()
}

/// `polyc explain`'s micro-kernel section.
fn micro_kernel_report(
    program: &Program,
    dynamic: &[targets::codegen::microkernel::DynamicSize],
    sets: &[(targets::codegen::microkernel::MicroKernelSet, Vec<usize>)],
) -> String {
    let names: Vec<String> = dynamic
        .iter()
        .map(|d| format!("{}={}", d.name, d.values_text()))
        .collect();
    let mut s = format!(
        "dynamic sizes: {}
",
        names.join(", ")
    );
    if sets.is_empty() {
        s.push_str("no micro-kernels: no register or cache tile runs along a dynamic size with a partial tile to compose (the kernel still takes the sizes at run time)
");
    }
    for (set, stmts) in sets {
        let names: Vec<&str> = stmts
            .iter()
            .map(|&i| program.stmts[i].name.as_str())
            .collect();
        s.push_str(&set.explain(&names.join(", "), &explain_samples(&set.size)));
    }
    s
}

/// Checks `--emit FORMAT` against what the target emits.
fn check_emit_format(target: &dyn Target, format: &str) -> Result<&'static str> {
    let formats = target.emit_formats();
    formats
        .iter()
        .copied()
        .find(|f| *f == format)
        .ok_or_else(|| {
            miette!(
                help = if formats.is_empty() {
                    format!("target `{}` has no code emitter", target.name())
                } else {
                    format!("target `{}` emits: {}", target.name(), formats.join(", "))
                },
                "--emit {format}: target `{}` cannot emit `{format}`",
                target.name()
            )
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

fn validate_load_requests(
    opts: &CompileOptions,
    target: &dyn Target,
) -> Result<Vec<crate::pipeline::options::LoadTree>> {
    let names = stage_names(target);
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
    cx: (&Ctx, &Scop, &Deps, &dyn Target),
    stage: &str,
    tree: ScheduleTree,
    loads: &[crate::pipeline::options::LoadTree],
) -> Result<ScheduleTree> {
    let (ctx, scop, deps, target) = cx;
    let Some(load) = loads.iter().find(|l| l.stage == stage) else {
        return Ok(tree);
    };
    let file = SourceFile::read(&load.file)?;
    let loaded = ScheduleTree::from_yaml_file(ctx, &file)?;
    let buffers = target.desc().buffer_order();
    for (_, m) in loaded.marks() {
        if let schedule_tree::Mark::Mem(b) = m {
            if !buffers.contains(&b) {
                let names: Vec<&str> = buffers.iter().map(|b| b.name()).collect();
                return Err(miette!(
                    help = format!(
                        "the buffers of target `{}` are: {}",
                        target.name(),
                        names.join(", ")
                    ),
                    "{}: the tree places data in buffer `{b}`, which target `{}` does not have",
                    load.file,
                    target.name()
                ));
            }
        }
    }
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

/// The dump stage of a target that tiles statements itself on the kernel (Gemmini): the
/// `final` tree with those tiles, buffers and instructions as bands and marks.
pub const TENSORISED_STAGE: &str = "tensorised";

impl Compiled {
    /// The (tensor, index, modulus) of each temporary the kernel stores folded (see
    /// `targets::codegen::contract`).
    pub fn folds(&self) -> Vec<(usize, usize, i64)> {
        self.kernel.as_ref().map_or_else(Vec::new, |k| {
            k.folds
                .iter()
                .map(|f| (f.tensor, f.dim, f.modulus))
                .collect()
        })
    }
    /// The tree after `stage` (`final` is the last one; `tensorised` comes after it on a
    /// target that tensorises).
    pub fn stage(&self, stage: &str) -> Result<&Stage> {
        self.stages.iter().find(|s| s.name == stage).ok_or_else(|| {
            if stage == TENSORISED_STAGE {
                return miette!(
                    help = "the `tensorised` tree exists for a target that tensorises statements on a matrix engine and tiles them itself: --target gemmini (or gemmini-fp32); on this target, `final` is the tree the code comes from",
                    "there is no stage `tensorised`: this target does not tensorise"
                );
            }
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

/// A stage count (`64@shared:3`) is for levels in GPU shared memory, whose copies the
/// target pipelines; on any other level it is a located error.
fn check_stage_counts(
    spec: &tiling::TileSpec,
    file: &SourceFile,
    target: &dyn targets::Target,
) -> Result<()> {
    let shared: Vec<_> = target
        .desc()
        .buffers
        .iter()
        .filter(|b| b.role() == schedule_tree::BufferRole::SharedMemory)
        .map(|b| b.buffer())
        .collect();
    for ss in &spec.stmts {
        for l in ss.dims.iter().flat_map(|d| d.levels.iter()) {
            if l.stages.is_some() && !shared.contains(&l.buffer) {
                let names: Vec<String> = shared.iter().map(|b| format!("`{b}`")).collect();
                let help = if names.is_empty() {
                    format!(
                        "target `{}` has no shared memory to pipeline: remove `:{}`",
                        target.name(),
                        l.stages.unwrap_or(1)
                    )
                } else {
                    format!(
                        "stage counts go on shared-memory levels ({})",
                        names.join(", ")
                    )
                };
                return Err(miette::Report::new(file.error(
                    l.stages_span,
                    format!(
                        "`{}` is not a shared-memory level: its copies are not pipelined",
                        l.buffer
                    ),
                    "stage count on a level that has none",
                    &help,
                )));
            }
        }
    }
    Ok(())
}
