//! The `polyc` command line: a thin layer over the `polyc` library.

use clap::{Args, Parser, Subcommand, ValueEnum};
use miette::{miette, Result};
use polyc::commands::run::{format_checks, OracleChoice, RunOptions};
use polyc::pipeline::driver::compile;
use polyc::pipeline::options::{
    parse_dynamic, parse_load_tree, parse_params, parse_sizes, CompileOptions,
};
use polyc::pipeline::stages::{Compiled, Mode};
use polyhedral::isl::Ctx;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

/// jemalloc for every allocation of the process, isl's included (see `Cargo.toml`).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// polyc — a polyhedral scheduling compiler for tensor programs.
///
/// `polyc PROG [flags]` compiles (the default command); `polyc run`, `polyc dump` and
/// `polyc suite` build and check, show schedule trees, and run regression suites.
#[derive(Parser)]
#[command(name = "polyc", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// `--device` values.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum DeviceArg {
    /// CUDA when a driver is present, else OpenCL.
    Auto,
    /// CUDA through the driver.
    Cuda,
    /// OpenCL (PoCL on machines without a GPU).
    Opencl,
}

/// `--pack` values.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum PackArg {
    /// Read-only, reused tiles.
    Auto,
    /// Every tile that fits.
    All,
    /// No packing.
    None,
}

#[derive(Subcommand)]
enum Command {
    /// Compile a program to C (the default command: `polyc PROG` means `polyc compile PROG`).
    Compile {
        #[command(flatten)]
        common: CommonArgs,
        /// Write the C here instead of standard output.
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Compile, build with the system C compiler, execute, and optionally verify.
    Run {
        #[command(flatten)]
        common: CommonArgs,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Print the schedule tree after a stage.
    Dump {
        #[command(flatten)]
        common: CommonArgs,
        /// The stage: initial, scheduled, tiled, fused, promoted, parallel or final; with
        /// --target gemmini also tensorised (the tiles, scratchpad/accumulator marks and
        /// tensorised DIM×DIM×DIM bands of the instruction program).
        #[arg(long, default_value = "final")]
        stage: String,
        /// Output format.
        #[arg(long, value_enum, default_value_t = DumpFormat::Tree)]
        format: DumpFormat,
        /// Write the dump here instead of standard output.
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Explain the tiling: per statement, its band, the sizes per level, the footprint of
    /// one tile per tensor per buffer, and the capacity left (alias: explain-tiles).
    #[command(alias = "explain-tiles")]
    Explain {
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Exact counts in the unbound sizes: per statement the instances and FLOPs, per
    /// tensor the distinct elements read and written (quasi-polynomials through barvinok;
    /// numbers when every size is bound).
    Count {
        /// The tensor program (`.tc`).
        program: String,
        /// Which `def` to count when the file has several.
        #[arg(long)]
        entry: Option<String>,
        /// Bind sizes: NAME=VALUE[,NAME=VALUE...]; unbound sizes stay symbolic.
        #[arg(long = "param", value_name = "NAME=VALUE,...")]
        params: Vec<String>,
    },
    /// Compare the isl and ilp schedulers on every case of a suite (first shape of each):
    /// permutable band depth, fused groups, coincident dimensions, scheduling time.
    ScheduleReport {
        /// The suite whose programs and first shapes are compared.
        #[arg(long, default_value = "specs/suites/smoke.yaml")]
        suite: PathBuf,
    },
    /// Run a regression suite (programs × shapes from a YAML file), or one shard of it;
    /// `polyc suite merge` combines shard result files.
    Suite(SuiteArgs),
}

/// `polyc suite FILE [--shard i/n] [--json OUT]` or `polyc suite merge FILES...`.
#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
struct SuiteArgs {
    #[command(subcommand)]
    action: Option<SuiteAction>,
    /// The suite file, e.g. specs/suites/smoke.yaml.
    file: Option<PathBuf>,
    /// Cases run at once (default: the number of cores).
    #[arg(long, short = 'j')]
    jobs: Option<usize>,
    /// Write the result file (suite hash, shard, polyc version, target, host, every run's
    /// key, status, times and errors) as JSON here.
    #[arg(long, value_name = "OUT")]
    json: Option<PathBuf>,
    /// Run only part i of n of the suite (1-based), balanced by estimated cost.
    #[arg(long, value_name = "i/n")]
    shard: Option<String>,
    /// The target every case runs on (a built-in name or a description file); overrides
    /// the suite file's `target` (default `cpu`).
    #[arg(long, value_name = "NAME|FILE")]
    target: Option<String>,
    /// How every run runs its kernel, as `polyc run --via`: on Gemmini `model` (the
    /// default) or `c` (the emitted C against polyc's host header). Checked against the
    /// target first.
    #[arg(long, value_name = "WAY")]
    via: Option<String>,
}

/// Subcommands of `polyc suite`.
#[derive(Subcommand)]
enum SuiteAction {
    /// Combine shard result files (of `polyc suite --json`, or of `--search-json`) into one
    /// table; check that every shard is there once and that all ran the same suite.
    Merge {
        /// The result files, e.g. out/*.json.
        #[arg(required = true, value_name = "RESULT")]
        files: Vec<PathBuf>,
        /// Write the merged result as JSON here.
        #[arg(long, value_name = "OUT")]
        json: Option<PathBuf>,
        /// A result file (merged or whole) to diff against: new failures, fixed runs, and
        /// compile and run times that moved by more than --threshold.
        #[arg(long, value_name = "FILE")]
        baseline: Option<PathBuf>,
        /// With --baseline: the relative change, in percent, a time must exceed to be
        /// reported.
        #[arg(long, value_name = "PCT", default_value_t = polyc::commands::merge::DEFAULT_THRESHOLD_PCT)]
        threshold: f64,
        /// With --baseline: the absolute change, in ms, a time must also exceed.
        #[arg(long = "min-ms", value_name = "MS", default_value_t = polyc::commands::merge::DEFAULT_MIN_MS)]
        min_ms: f64,
        /// Search shards: write the fastest point's tile spec here.
        #[arg(long = "search-out", value_name = "FILE")]
        search_out: Option<PathBuf>,
    },
}

/// Flags shared by compile, run and dump.
#[derive(Args, Clone)]
struct CommonArgs {
    /// The tensor program (`.tc`).
    program: String,
    /// Which `def` to compile when the file has several.
    #[arg(long)]
    entry: Option<String>,
    /// The language of the program: `polyc`, `tc` (Tensor Comprehensions) or `auto` (detected
    /// from the def headers' type names).
    #[arg(long, value_name = "LANG", default_value = "auto")]
    lang: String,
    /// Bind sizes: NAME=VALUE[,NAME=VALUE...]; unbound sizes stay symbolic.
    #[arg(long = "param", value_name = "NAME=VALUE,...")]
    params: Vec<String>,
    /// A dynamic size: NAME=LO..HI or NAME={V,...} (repeatable, one size each). The size
    /// stays a run-time argument; the kernel is compiled for these values only, and its
    /// partial tiles along the size are composed from micro-kernels.
    #[arg(long = "dynamic", value_name = "NAME=LO..HI|NAME={V,...}")]
    dynamic: Vec<String>,
    /// The scheduler: `isl` (isl's ILP scheduler), `initial` (program order) or `ilp` (polyc's
    /// Pluto-style scheduler on good_lp).
    #[arg(long, default_value = "isl")]
    scheduler: String,
    /// An isl scheduler option, NAME=VALUE (repeatable): serialize_sccs, outer_coincidence,
    /// maximize_coincidence, whole_component, max_constant_term, max_coefficient,
    /// treat_coalescing, maximize_band_depth, separate_components, carry_self_first,
    /// split_scaled, algorithm; and polyc's own: max_operations and time_budget_ms (the
    /// budgets of one run of isl's scheduler), scale_sizes, scale_probe and scale_parametric
    /// (scheduling large bound sizes at scaled-down ones, or as parameters where every
    /// dependence is one-to-one; see the README's "Large bound sizes"), and aligned
    /// (default 1: where all statements' loops fused as written give every dependence
    /// distance zero, that schedule is taken without running isl's scheduler, unless
    /// serialize_sccs=1 or algorithm=feautrier is given; 0 always runs it), phases
    /// (default 1: a band in which isl shifted whole phases apart, such as a row's
    /// reductions and their use, runs them one after the other under its parallel outer
    /// members; see the README's "Shifted phases"; 0 keeps isl's band), contiguous
    /// (default 1: a band member that walks the last index of the tensors below it moves
    /// below inner loops that walk other indices, where the dependences allow; see the
    /// README's "Contiguous inner loops"; 0 keeps isl's order), and loops_apart (each `for`
    /// loop one iteration at a time, isl's scheduler on the statements between loops; by
    /// default for programs with loops and more than 64 pieces of dependences, and after
    /// the whole-program run ran out of time; 1 always, 0 never; see the README's "Loops
    /// one iteration at a time").
    #[arg(long = "isl-option", value_name = "NAME=VALUE")]
    isl_options: Vec<String>,
    /// Replace the tree after STAGE with the one in FILE (isl YAML); it is checked against
    /// the domain and every dependence first.
    #[arg(long = "load-tree", value_name = "STAGE=FILE")]
    load_trees: Vec<String>,
    /// Tile sizes per statement and memory level (see the README's tile-spec section).
    #[arg(long = "tile-spec", value_name = "FILE")]
    tile_spec: Option<String>,
    /// How the tile-size search resolves `?`, `[lo..hi]` and `{a, b}` entries of the tile
    /// spec: `model` (default; the data-movement cost model, or the target's own: the GPU
    /// timing model on a GPU description with a peak and a bandwidth, BACO's EDP on
    /// Gemmini) or `measure` (compile, run and time the model's best `--search-top` points;
    /// CPU, bound sizes).
    #[arg(long = "search", value_name = "MODE", default_value = "model")]
    search: String,
    /// Tile-size search: enumerate every point when there are at most N, else run a
    /// deterministic coordinate descent.
    #[arg(long = "search-budget", value_name = "N", default_value_t = tiling::search::DEFAULT_BUDGET)]
    search_budget: usize,
    /// Tile-size search with `--search measure`: how many of the model's best points are
    /// compiled and timed.
    #[arg(long = "search-top", value_name = "K", default_value_t = polyc::pipeline::options::DEFAULT_TOP)]
    search_top: usize,
    /// Tile-size search: write the resolved tile spec (a valid tile-spec file with a comment
    /// header saying how it was found) to FILE.
    #[arg(long = "search-out", value_name = "FILE")]
    search_out: Option<String>,
    /// Tile-size search with `--search measure`: measure only part i of n of the model's best
    /// `--search-top` points (e.g. one task of a job array); `polyc suite merge` picks the
    /// fastest over the shards' `--search-json` files.
    #[arg(long = "search-shard", value_name = "i/n")]
    search_shard: Option<String>,
    /// Tile-size search with `--search measure`: write the measured points (with their
    /// times, the search's hash, the shard, polyc's version, the target and the host) as
    /// JSON to FILE.
    #[arg(long = "search-json", value_name = "FILE")]
    search_json: Option<String>,
    /// Leave statements without a tile spec untiled (default: the target's policy tiles them).
    #[arg(long = "no-default-tiling")]
    no_default_tiling: bool,
    /// The target's tiling policy for the statements a tile spec leaves out: `default`
    /// (polyc's), or one the target names (on Gemmini, `gemmini-default`: Gemmini's own
    /// `tiled_matmul_auto` rule, the baseline). An unknown name is an error listing the
    /// target's policies.
    #[arg(long = "policy", value_name = "NAME")]
    policy: Option<String>,
    /// The target: a built-in name (`cpu` (default), `gpu` (= `a100`), `a100`, `h100`,
    /// `gemmini`) or a target description YAML (e.g. specs/targets/ascend.yaml). Its buffers
    /// drive tiling and promotion; its kind picks the back end. `--target-desc` is an alias.
    #[arg(
        long = "target",
        visible_alias = "target-desc",
        value_name = "NAME|FILE"
    )]
    target: Option<String>,
    /// The source format to write: the target's default (`c` for the CPU, `cuda` for a GPU)
    /// or another it offers (`opencl` for a GPU).
    #[arg(long = "emit", value_name = "FORMAT")]
    emit: Option<String>,
    /// Which device runs GPU kernels: `auto` (CUDA when a driver is present, else
    /// OpenCL), `cuda` or `opencl`.
    #[arg(long, value_enum, default_value_t = DeviceArg::Auto)]
    device: DeviceArg,
    /// How a target that runs kernels in several ways runs this one (Gemmini: `model`,
    /// the default, interprets the kernel IR on polyc's functional model; `c` builds the
    /// emitted C against polyc's host header and runs it on the model).
    #[arg(long, value_name = "HOW")]
    via: Option<String>,
    /// ILP scheduler: Pluto's fusion strategy, `max`, `smart` (default) or `none`.
    #[arg(long, default_value = "smart")]
    fuse: String,
    /// ILP scheduler: non-negative coefficients, no hyperplane mixes iterators (no skewing).
    #[arg(long = "no-skew")]
    no_skew: bool,
    /// ILP scheduler: pinned loop orders, one `S_2=h,w,kh,kw` per line (`#` comments).
    #[arg(long = "schedule-constraints", value_name = "FILE")]
    schedule_constraints: Option<String>,
    /// Skip post-tiling fusion (live-out tiles pulling in their producers' instances).
    #[arg(long = "no-tile-fusion")]
    no_tile_fusion: bool,
    /// Post-tiling fusion runs an overlapped in-place producer once, in the first tile that
    /// needs it: one loop nest as in the AKG paper, but the tile loops lose parallelism.
    #[arg(long = "tile-fusion-one-nest")]
    tile_fusion_one_nest: bool,
    /// Which tensors the cache levels' memory marks (L1, L2) copy into packed local tiles:
    /// `auto` (read-only tiles reused at least 4 times per element that take at most half
    /// the level), `all` (every rectangular tile that fits) or `none`.
    #[arg(long, value_enum, default_value_t = PackArg::Auto)]
    pack: PackArg,
    /// No register tiles: `reg` marks keep their tiles in memory instead of local
    /// accumulators (scalar replacement).
    #[arg(long = "no-register-tiles")]
    no_register_tiles: bool,
    /// Pack every tile below its own memory mark: do not move a packed tile above the tile
    /// loops its box does not depend on (a GEMM's B tile is then packed again for every
    /// i tile).
    #[arg(long = "no-hoist")]
    no_hoist: bool,
    /// Keep every temporary's full shape: do not store a temporary modulo a small number
    /// along an index where the final schedule keeps only that many of its values live at
    /// once (CPU target; see the README's "Storage folding").
    #[arg(long = "no-fold")]
    no_fold: bool,
    /// Compute a costly subexpression (one that calls `exp`, `log`, `sqrt`, `rsqrt`, `tanh`
    /// or `sigmoid`) in every statement that writes it, instead of once into a new
    /// temporary shared by those statements (see the README's "Shared subexpressions").
    #[arg(long = "no-share")]
    no_share: bool,
    /// Check the tree after every pass against the domain and every dependence (slower;
    /// the test suites turn it on).
    #[arg(long = "verify-passes")]
    verify_passes: bool,
    /// ILP scheduler: the solver, `microlp` (pure Rust, default), `cbc` or `highs` (these
    /// two only in a polyc built with the cargo feature of the same name).
    #[arg(long = "ilp-solver", default_value = "microlp")]
    ilp_solver: String,
    /// Print the milliseconds of every pipeline step and of its timed sub-steps
    /// (`tile:footprints`, `codegen:ast_build`, ...), then the slowest sub-steps, to
    /// standard error.
    #[arg(long)]
    timings: bool,
    /// The most statements (inits counted) a program may have; a larger program is an
    /// error instead of a compile that runs for minutes.
    #[arg(long = "max-statements", value_name = "N", default_value_t = polyc::pipeline::options::DEFAULT_MAX_STATEMENTS)]
    max_statements: usize,
    /// A compile-time budget in seconds: isl's scheduler gets 40% of it (instead of its
    /// default 1 s); past that, polyc schedules again more cheaply (constant terms bounded
    /// by 20 and each strongly connected component apart, keeping the one that runs more
    /// under parallel loops, then program order), and says so in a note. An explicit
    /// `--isl-option time_budget_ms=N` wins.
    #[arg(
        long = "compile-budget",
        value_name = "SECONDS",
        allow_hyphen_values = true
    )]
    compile_budget: Option<String>,
}

/// Flags of `polyc run`.
#[derive(Args, Clone)]
struct RunArgs {
    /// Compare every output with an oracle (exit 3 on a mismatch).
    #[arg(long)]
    check: bool,
    /// Seed for generated inputs.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Load inputs from DIR/NAME.npy (scalars as 0-d arrays) instead of generating them.
    #[arg(long, value_name = "DIR")]
    inputs: Option<PathBuf>,
    /// Write every input (NAME.npy) and output (NAME.npy; NAME.out.npy for inputs updated in
    /// place) to DIR.
    #[arg(long = "save-io", value_name = "DIR")]
    save_io: Option<PathBuf>,
    /// The oracle for --check.
    #[arg(long, value_enum, default_value_t = OracleArg::Auto)]
    oracle: OracleArg,
    /// With --oracle auto, the largest number of statement instances the interpreter runs;
    /// above it the untransformed program is the oracle.
    #[arg(long, default_value_t = 200_000_000)]
    max_interp_instances: u64,
    /// Sizes chosen at run time: NAME=VALUE[,NAME=VALUE...] for the sizes left symbolic
    /// at compile time (no --param). Repeat the flag to run the one compiled kernel at
    /// several sizes, each checked on its own with --check.
    #[arg(long = "run-param", value_name = "NAME=VALUE,...")]
    run_params: Vec<String>,
    /// Run the kernel N times, each on fresh copies of its inputs (the copies are not
    /// timed), and report the best time and the median; --check checks the last run.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
    /// Print one JSON line with the results (used by `polyc suite`).
    #[arg(long, hide = true)]
    result_json: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum DumpFormat {
    /// Indented tree, like the AKG paper's figures.
    Tree,
    /// isl's YAML block form, readable by isl and by --load-tree.
    Isl,
    /// Graphviz.
    Dot,
}

#[derive(Clone, Copy, ValueEnum)]
enum OracleArg {
    /// The interpreter when affordable, else the untransformed program.
    Auto,
    /// The reference interpreter.
    Interp,
    /// The untransformed program through the C emitter.
    Untransformed,
}

/// Exit codes.
const EXIT_USER_ERROR: u8 = 1;
const EXIT_MISMATCH: u8 = 3;

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().collect();
    // `polyc PROG ...` is `polyc compile PROG ...`.
    let known = [
        "compile",
        "run",
        "dump",
        "suite",
        "explain",
        "explain-tiles",
        "count",
        "schedule-report",
        "help",
        "--help",
        "-h",
        "--version",
        "-V",
    ];
    if args.len() > 1 && !known.contains(&args[1].as_str()) {
        args.insert(1, "compile".to_string());
    }
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { EXIT_USER_ERROR } else { 0 });
        }
    };
    // SIGINT and SIGTERM: stop children, remove temporary folders, exit 130 or 143.
    polyc::commands::signals::start();
    let code = match dispatch(cli.command) {
        Ok(code) => code,
        Err(report) => {
            // A stopped polyc's errors are those of the work the signal cut short.
            if !polyc::commands::signals::stopping() {
                print_report(&report);
            }
            EXIT_USER_ERROR
        }
    };
    ExitCode::from(polyc::commands::signals::finish(code))
}

fn print_report(report: &miette::Report) {
    if std::io::stderr().is_terminal() {
        let mut out = String::new();
        let handler = miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode());
        if handler.render_report(&mut out, report.as_ref()).is_ok() {
            eprint!("{out}");
            return;
        }
    }
    eprint!("{}", polyhedral::diag::render_plain(report.as_ref()));
}

fn compile_options(c: &CommonArgs) -> Result<CompileOptions> {
    Ok(CompileOptions {
        program: c.program.clone(),
        entry: c.entry.clone(),
        lang: c.lang.parse()?,
        params: parse_params(&c.params)?,
        scheduler: c.scheduler.parse()?,
        isl_options: with_compile_budget(&c.isl_options, c.compile_budget.as_deref())?,
        load_trees: c
            .load_trees
            .iter()
            .map(|s| parse_load_tree(s))
            .collect::<Result<_>>()?,
        tile_spec: c.tile_spec.clone(),
        search: polyc::pipeline::options::SearchSettings {
            mode: c.search.parse()?,
            budget: c.search_budget,
            top: c.search_top,
            out: c.search_out.clone(),
            shard: c
                .search_shard
                .as_deref()
                .map(|s| polyc::pipeline::shard::Shard::parse("--search-shard", s))
                .transpose()?,
            json: c.search_json.clone(),
        },
        no_default_tiling: c.no_default_tiling,
        policy: c.policy.clone(),
        target: c.target.clone(),
        emit: c.emit.clone(),
        codegen: true,
        device: match c.device {
            DeviceArg::Auto => targets::Device::Auto,
            DeviceArg::Cuda => targets::Device::Cuda,
            DeviceArg::Opencl => targets::Device::OpenCl,
        },
        via: c.via.clone(),
        explain: false,
        fuse: c.fuse.parse()?,
        no_skew: c.no_skew,
        schedule_constraints: c.schedule_constraints.clone(),
        ilp_solver: c.ilp_solver.parse()?,
        verify_passes: c.verify_passes,
        no_tile_fusion: c.no_tile_fusion,
        tile_fusion_one_nest: c.tile_fusion_one_nest,
        pack: match c.pack {
            PackArg::Auto => targets::passes::promote::PackPolicy::Auto,
            PackArg::All => targets::passes::promote::PackPolicy::All,
            PackArg::None => targets::passes::promote::PackPolicy::None,
        },
        no_register_tiles: c.no_register_tiles,
        no_hoist: c.no_hoist,
        no_fold: c.no_fold,
        no_share: c.no_share,
        dynamic: parse_dynamic(&c.dynamic)?,
        max_statements: c.max_statements,
    })
}

/// The isl options with the scheduler's share of `--compile-budget` put first (so that an
/// explicit `time_budget_ms` given with `--isl-option` wins).
fn with_compile_budget(isl_options: &[String], budget: Option<&str>) -> Result<Vec<String>> {
    let Some(text) = budget else {
        return Ok(isl_options.to_vec());
    };
    let seconds: f64 = text
        .trim()
        .parse()
        .ok()
        .filter(|s: &f64| s.is_finite() && *s > 0.0)
        .ok_or_else(|| {
            miette!(
                help = "give a positive number of seconds, e.g. `--compile-budget 2` or `--compile-budget 0.5`",
                "--compile-budget: `{text}` is not a positive number of seconds"
            )
        })?;
    let ms = ((seconds * 1000.0 * 0.4).round() as u64).max(1);
    eprintln!(
        "polyc: note: --compile-budget {seconds} s: isl's scheduler gets {ms} ms (past it, \
         polyc schedules again with constant terms of at most 20 and each strongly \
         connected component apart, keeping the one that runs more under parallel loops, \
         then in program order)"
    );
    let mut all = vec![format!("time_budget_ms={ms}")];
    all.extend(isl_options.iter().cloned());
    Ok(all)
}

fn compile_with_timings(opts: &CompileOptions, timings: bool) -> Result<Compiled> {
    // Validate isl options before any work, so a typo fails fast.
    opts.isl_sched_options()?;
    let compiled = compile(opts, Mode::Optimised)?;
    for n in &compiled.notes {
        eprintln!("polyc: {n}");
    }
    if timings {
        eprint!(
            "{}",
            polyc::pipeline::timing_report::timing_report(&compiled.timings)
        );
    }
    Ok(compiled)
}

/// Writes `text` to `-o FILE` (never over an input; `-` is standard output), or prints it.
fn write_or_print(output: &Option<PathBuf>, text: &str) -> Result<()> {
    match output {
        Some(path) => polyhedral::files::write_output("-o", path, text.as_bytes()),
        None => {
            print!("{text}");
            Ok(())
        }
    }
}

fn dispatch(command: Command) -> Result<u8> {
    match command {
        Command::Compile { common, output } => {
            let opts = compile_options(&common)?;
            let compiled = compile_with_timings(&opts, common.timings)?;
            write_or_print(&output, &compiled.code)?;
            Ok(0)
        }
        Command::Dump {
            common,
            stage,
            format,
            output,
        } => {
            let mut opts = compile_options(&common)?;
            opts.codegen = false;
            let compiled = compile_with_timings(&opts, common.timings)?;
            let tree = &compiled.stage(&stage)?.tree;
            let text = match format {
                DumpFormat::Tree => tree.to_tree_text(),
                DumpFormat::Dot => tree.to_dot(),
                DumpFormat::Isl => {
                    let ctx = Ctx::new();
                    tree.to_isl_yaml(&ctx)?
                }
            };
            write_or_print(&output, &text)?;
            Ok(0)
        }
        Command::Run { common, run } => {
            let opts = compile_options(&common)?;
            let compiled = compile_with_timings(&opts, common.timings)?;
            let ropts = RunOptions {
                check: run.check,
                seed: run.seed,
                inputs_dir: run.inputs.clone(),
                save_io: run.save_io.clone(),
                oracle: match run.oracle {
                    OracleArg::Auto => OracleChoice::Auto,
                    OracleArg::Interp => OracleChoice::Interpreter,
                    OracleArg::Untransformed => OracleChoice::Untransformed,
                },
                max_interp_instances: run.max_interp_instances,
                repeat: run.repeat,
            };
            let compile_ms: f64 = compiled.timings.iter().map(|t| t.ms).sum();
            if !run.run_params.is_empty() {
                let sets = run
                    .run_params
                    .iter()
                    .map(|f| parse_sizes(std::slice::from_ref(f), "--run-param"))
                    .collect::<miette::Result<Vec<_>>>()?;
                let reports = polyc::commands::run::run_many(&compiled, &opts, &ropts, &sets)?;
                let mut all_ok = true;
                for (sizes, report) in &reports {
                    all_ok &= report.all_ok();
                    if run.result_json {
                        println!(
                            "{}",
                            polyc::commands::suite::result_json(report, compile_ms)
                        );
                        continue;
                    }
                    println!(
                        "sizes {}: kernel ran in {}",
                        polyc::commands::run::sizes_text(&compiled.program, sizes),
                        polyc::commands::run::run_time_text(report)
                    );
                    if let Some(o) = &report.oracle {
                        println!("  oracle: {o}");
                    }
                    for line in format_checks(report).lines() {
                        println!("  {line}");
                    }
                }
                if !run.result_json {
                    eprintln!(
                        "polyc: compiled once in {compile_ms:.1} ms, cc {:.0} ms, ran at {} size{}",
                        reports.first().map_or(0.0, |(_, r)| r.cc_ms),
                        reports.len(),
                        if reports.len() == 1 { "" } else { "s" }
                    );
                }
                return Ok(if all_ok { 0 } else { EXIT_MISMATCH });
            }
            let report = polyc::commands::run::run(&compiled, &opts, &ropts)?;
            if run.result_json {
                println!(
                    "{}",
                    polyc::commands::suite::result_json(&report, compile_ms)
                );
            } else {
                eprintln!(
                    "polyc: compiled in {compile_ms:.1} ms, cc {:.0} ms, kernel ran in {}",
                    report.cc_ms,
                    polyc::commands::run::run_time_text(&report)
                );
                if let Some(d) = &report.device {
                    eprintln!("polyc: ran on {d}");
                }
                if let Some(o) = &report.oracle {
                    eprintln!("polyc: oracle: {o}");
                }
                print!("{}", format_checks(&report));
            }
            Ok(if report.all_ok() { 0 } else { EXIT_MISMATCH })
        }
        Command::Explain { common } => {
            let mut opts = compile_options(&common)?;
            opts.explain = true;
            opts.codegen = false;
            let compiled = compile_with_timings(&opts, common.timings)?;
            print!("{}", compiled.explain.unwrap_or_default());
            Ok(0)
        }
        Command::Count {
            program,
            entry,
            params,
        } => {
            let counts = polyc::commands::count::count_file(
                &program,
                entry.as_deref(),
                &parse_params(&params)?,
            )?;
            print!("{}", polyc::commands::count::format_counts(&counts)?);
            Ok(0)
        }
        Command::ScheduleReport { suite } => {
            print!(
                "{}",
                polyc::commands::schedule_report::schedule_report(&suite)?
            );
            Ok(0)
        }
        Command::Suite(args) => suite(args),
    }
}

fn suite(args: SuiteArgs) -> Result<u8> {
    match args.action {
        Some(SuiteAction::Merge {
            files,
            json,
            baseline,
            threshold,
            min_ms,
            search_out,
        }) => {
            let ok = polyc::commands::merge::merge(&polyc::commands::merge::MergeOptions {
                files,
                json,
                baseline,
                threshold_pct: threshold,
                min_ms,
                search_out,
            })?;
            Ok(if ok { 0 } else { EXIT_MISMATCH })
        }
        None => {
            let Some(file) = args.file else {
                return Err(miette!(
                    help =
                        "e.g. polyc suite specs/suites/smoke.yaml, or polyc suite merge out/*.json",
                    "polyc suite: give a suite file or `merge`"
                ));
            };
            let shard = match &args.shard {
                Some(s) => polyc::pipeline::shard::Shard::parse("--shard", s)?,
                None => polyc::pipeline::shard::Shard::WHOLE,
            };
            let ok = polyc::commands::suite::run_suite(
                &file,
                &polyc::commands::suite::SuiteRunOptions {
                    jobs: args.jobs,
                    json: args.json,
                    shard,
                    target: args.target,
                    via: args.via,
                },
            )?;
            Ok(if ok { 0 } else { EXIT_MISMATCH })
        }
    }
}
