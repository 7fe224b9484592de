//! One fuzz case: a program, the target and the compiler settings, and how it is run
//! in-process through polyc's library (as `polyc run --check` runs it) and classified.

use crate::gen::Prog;
use polyc::commands::run::{format_checks, run, OracleChoice, RunOptions};
use polyc::pipeline::options::CompileOptions;
use polyc::pipeline::stages::{analyse, finish, Mode, SpecChoice};
use polyhedral::diag::SourceFile;
use polyhedral::sched::SchedulerKind;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Instant;

/// The target a case compiles for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Tgt {
    /// `--target cpu` (the default).
    Cpu,
    /// `--target gpu`: OpenCL on PoCL here.
    Gpu,
    /// `--target gemmini`: the functional model.
    Gemmini,
}

/// The tile spec of a case.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Tiles {
    /// None: the target's default policy.
    Default,
    /// A random valid spec drawn from the scheduled tree's bands with this seed.
    Random(u64),
    /// This spec text.
    Text(String),
}

/// The compiler settings of a case.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Config {
    /// The target.
    pub target: Tgt,
    /// `--scheduler isl|initial|ilp`.
    pub scheduler: String,
    /// `--fuse` for the ILP scheduler (`None`: smart).
    pub fuse: Option<String>,
    /// `--isl-option` settings.
    pub isl_options: Vec<String>,
    /// The tile spec.
    pub tiles: Tiles,
    /// `--pack` (`None`: auto).
    pub pack: Option<String>,
    /// `--no-hoist`.
    pub no_hoist: bool,
    /// `--no-tile-fusion`.
    pub no_tile_fusion: bool,
    /// `--tile-fusion-one-nest`.
    pub tile_fusion_one_nest: bool,
    /// `--no-register-tiles`.
    pub no_register_tiles: bool,
    /// `--no-default-tiling`.
    pub no_default_tiling: bool,
    /// `--verify-passes`.
    pub verify_passes: bool,
    /// `--policy` (Gemmini: `gemmini-default`).
    pub policy: Option<String>,
    /// `--via c` (Gemmini: build the emitted C against the host header).
    pub via_c: bool,
    /// How the C compiler runs (through a `$CC` wrapper that appends flags).
    #[serde(default)]
    pub cc: CcMode,
}

/// The C compiler's mode: polyc's own flags, or a `$CC` wrapper that appends some.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum CcMode {
    /// polyc's flags (`-O3`).
    #[default]
    Default,
    /// `-O1` appended: gcc at `-O3` spends seconds on large tiled kernels, `-O1` a
    /// fraction.
    O1,
    /// `-fno-tree-loop-vectorize` appended (to tell gcc's loop vectoriser's bugs apart).
    NoLoopVectorize,
}

impl CcMode {
    /// The wrapper's file name and the flags it appends (`None` for the default).
    pub fn wrapper(self) -> Option<(&'static str, &'static str)> {
        match self {
            CcMode::Default => None,
            CcMode::O1 => Some(("cc-O1", "-O1")),
            CcMode::NoLoopVectorize => Some(("cc-novec", "-fno-tree-loop-vectorize")),
        }
    }
    /// The wrapper script: the `$CC` of the worker's start (or `cc`) with the flags last.
    pub fn script(self) -> Option<String> {
        let (_, flags) = self.wrapper()?;
        Some(format!(
            "#!/bin/sh\nexec ${{POLYC_FUZZ_CC:-cc}} \"$@\" {flags}\n"
        ))
    }
}

impl Config {
    /// The default settings for `target`.
    pub fn plain(target: Tgt) -> Config {
        Config {
            target,
            scheduler: "isl".into(),
            fuse: None,
            isl_options: Vec::new(),
            tiles: Tiles::Default,
            pack: None,
            no_hoist: false,
            no_tile_fusion: false,
            tile_fusion_one_nest: false,
            no_register_tiles: false,
            no_default_tiling: false,
            verify_passes: false,
            policy: None,
            via_c: false,
            cc: CcMode::Default,
        }
    }

    /// The command-line flags (after `polyc run PROG --param …`), with the spec at
    /// `spec` when the case has one.
    pub fn flags(&self, spec: Option<&str>) -> Vec<String> {
        let mut f: Vec<String> = Vec::new();
        match self.target {
            Tgt::Cpu => {}
            Tgt::Gpu => f.extend(["--target".into(), "gpu".into()]),
            Tgt::Gemmini => f.extend(["--target".into(), "gemmini".into()]),
        }
        if self.scheduler != "isl" {
            f.extend(["--scheduler".into(), self.scheduler.clone()]);
        }
        if let Some(x) = &self.fuse {
            f.extend(["--fuse".into(), x.clone()]);
        }
        for o in &self.isl_options {
            f.extend(["--isl-option".into(), o.clone()]);
        }
        if let Some(s) = spec {
            f.extend(["--tile-spec".into(), s.to_string()]);
        }
        if let Some(p) = &self.pack {
            f.extend(["--pack".into(), p.clone()]);
        }
        for (on, flag) in [
            (self.no_hoist, "--no-hoist"),
            (self.no_tile_fusion, "--no-tile-fusion"),
            (self.tile_fusion_one_nest, "--tile-fusion-one-nest"),
            (self.no_register_tiles, "--no-register-tiles"),
            (self.no_default_tiling, "--no-default-tiling"),
            (self.verify_passes, "--verify-passes"),
        ] {
            if on {
                f.push(flag.into());
            }
        }
        if let Some(p) = &self.policy {
            f.extend(["--policy".into(), p.clone()]);
        }
        if self.via_c {
            f.extend(["--via".into(), "c".into()]);
        }
        f
    }

    /// The library options for the program at `program` (sizes bound to `params`).
    pub fn options(
        &self,
        program: &str,
        params: Vec<(String, i64)>,
        spec: Option<&str>,
    ) -> miette::Result<CompileOptions> {
        Ok(CompileOptions {
            params,
            scheduler: match self.scheduler.as_str() {
                "initial" => SchedulerKind::Initial,
                "ilp" => SchedulerKind::Ilp,
                _ => SchedulerKind::Isl,
            },
            fuse: self.fuse.as_deref().unwrap_or("smart").parse()?,
            isl_options: self.isl_options.clone(),
            tile_spec: spec.map(str::to_string),
            pack: match self.pack.as_deref() {
                Some("all") => targets::passes::promote::PackPolicy::All,
                Some("none") => targets::passes::promote::PackPolicy::None,
                _ => targets::passes::promote::PackPolicy::Auto,
            },
            no_hoist: self.no_hoist,
            no_tile_fusion: self.no_tile_fusion,
            tile_fusion_one_nest: self.tile_fusion_one_nest,
            no_register_tiles: self.no_register_tiles,
            no_default_tiling: self.no_default_tiling,
            verify_passes: self.verify_passes,
            policy: self.policy.clone(),
            target: match self.target {
                Tgt::Cpu => None,
                Tgt::Gpu => Some("gpu".into()),
                Tgt::Gemmini => Some("gemmini".into()),
            },
            via: self.via_c.then(|| "c".to_string()),
            ..CompileOptions::for_program(program)
        })
    }
}

/// A case: a program and its settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Case {
    /// `SEED:INDEX`, for the record.
    pub id: String,
    /// The program.
    pub prog: Prog,
    /// The settings.
    pub cfg: Config,
}

/// How a case ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    /// Every compared tensor matched the interpreter.
    Pass,
    /// Some tensor differs from the interpreter (`polyc run --check` exits 3).
    Mismatch(String),
    /// polyc rejected a valid program (an error while compiling).
    CompileError(String),
    /// Building or running the kernel failed.
    RunError(String),
    /// polyc panicked (the binary exits 101).
    Panic(String),
    /// The case killed its process (a signal), as the parent saw it.
    Crash(String),
    /// The case ran past its time limit.
    Hang(String),
}

impl Outcome {
    /// A short class name: `pass`, `mismatch`, `compile-error`, …
    pub fn class(&self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Mismatch(_) => "mismatch",
            Outcome::CompileError(_) => "compile-error",
            Outcome::RunError(_) => "run-error",
            Outcome::Panic(_) => "panic",
            Outcome::Crash(_) => "crash",
            Outcome::Hang(_) => "hang",
        }
    }
    /// The message (empty for a pass).
    pub fn message(&self) -> &str {
        match self {
            Outcome::Pass => "",
            Outcome::Mismatch(m)
            | Outcome::CompileError(m)
            | Outcome::RunError(m)
            | Outcome::Panic(m)
            | Outcome::Crash(m)
            | Outcome::Hang(m) => m,
        }
    }
}

/// What running a case gave.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CaseResult {
    /// How it ended.
    pub outcome: Outcome,
    /// The spec it ran with, when it had one.
    pub spec: Option<String>,
    /// Why a random spec was rejected (the case then ran with the default policy).
    pub spec_rejected: Option<String>,
    /// Milliseconds the case took.
    pub ms: f64,
    /// CPU milliseconds per step (the worker's and its children's): analyse (parse to
    /// schedule), finish (passes and emission), run (C compiler, kernel, interpreter);
    /// then the C compiler's wall-clock milliseconds within run.
    pub steps: [f64; 4],
}

/// A fault to inject into the emitted C, to show that the fuzzer catches and shrinks a
/// wrong kernel (`POLYC_FUZZ_INJECT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Inject {
    /// `max-is-min`: the f32 `max` helper of the CPU's C returns the smaller operand (a
    /// wrong result, only in programs that take an f32 maximum).
    MaxIsMin,
    /// `trap`: every CPU kernel executes a trap instruction first (the worker dies from
    /// SIGILL: a crash).
    Trap,
}

impl Inject {
    /// The name `POLYC_FUZZ_INJECT` takes.
    pub fn name(self) -> &'static str {
        match self {
            Inject::MaxIsMin => "max-is-min",
            Inject::Trap => "trap",
        }
    }
    /// Parses `POLYC_FUZZ_INJECT`'s value.
    pub fn parse(s: &str) -> Option<Inject> {
        match s {
            "max-is-min" => Some(Inject::MaxIsMin),
            "trap" => Some(Inject::Trap),
            _ => None,
        }
    }
    /// The emitted C with the fault injected.
    fn apply(self, code: &str) -> String {
        match self {
            Inject::MaxIsMin => code.replace(
                "polyc_max_f32(float a, float b) { return a > b",
                "polyc_max_f32(float a, float b) { return a < b",
            ),
            Inject::Trap => code.replace(
                "__polyc_entry(void **args) {",
                "__polyc_entry(void **args) { __builtin_trap();",
            ),
        }
    }
}

/// Runs `case` in this process: writes the program (and the spec) under `dir`, compiles
/// it through the library, runs the kernel and checks it against the interpreter as
/// `polyc run --check` does (seed 0, the automatic oracle).
pub fn execute(case: &Case, dir: &Path, inject: Option<Inject>) -> CaseResult {
    let start = Instant::now();
    let mut spec = None;
    let mut spec_rejected = None;
    let mut steps = [0.0; 4];
    let outcome = match execute_inner(case, dir, inject, &mut spec, &mut spec_rejected, &mut steps)
    {
        Ok(o) => o,
        Err(o) => o,
    };
    CaseResult {
        outcome,
        spec,
        spec_rejected,
        ms: start.elapsed().as_secs_f64() * 1e3,
        steps,
    }
}

/// Points `$CC` at the wrapper of `mode` in `dir` (written on first use), or back at the
/// compiler the worker started with.
fn set_cc(dir: &Path, mode: CcMode) -> std::io::Result<()> {
    static ORIGINAL: std::sync::OnceLock<Option<std::ffi::OsString>> = std::sync::OnceLock::new();
    let original = ORIGINAL.get_or_init(|| std::env::var_os("CC"));
    let (Some((name, _)), Some(script)) = (mode.wrapper(), mode.script()) else {
        match original {
            Some(cc) => std::env::set_var("CC", cc),
            None => std::env::remove_var("CC"),
        }
        return Ok(());
    };
    let wrapper = dir.join(name);
    if !wrapper.exists() {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(&wrapper, script)?;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755))?;
    }
    if let Some(cc) = original {
        std::env::set_var("POLYC_FUZZ_CC", cc);
    }
    std::env::set_var("CC", &wrapper);
    Ok(())
}

/// CPU milliseconds this process and its waited-for children have used.
pub fn cpu_ms() -> f64 {
    let ms = |who| {
        // SAFETY: getrusage fills the struct it is given.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(who, &mut u) };
        let t = |v: libc::timeval| v.tv_sec as f64 * 1e3 + v.tv_usec as f64 / 1e3;
        t(u.ru_utime) + t(u.ru_stime)
    };
    ms(libc::RUSAGE_SELF) + ms(libc::RUSAGE_CHILDREN)
}

/// An error as polyc prints it, without colours.
pub fn rendered(e: &miette::Report) -> String {
    polyhedral::diag::render_plain(e.as_ref())
}

/// The body of [`execute`]: `Ok` with the outcome of a run, `Err` with the failure that
/// stopped it; fills the spec, the rejection and the steps on the way.
fn execute_inner(
    case: &Case,
    dir: &Path,
    inject: Option<Inject>,
    spec_out: &mut Option<String>,
    rejected: &mut Option<String>,
    steps: &mut [f64; 4],
) -> Result<Outcome, Outcome> {
    let mut lap = cpu_ms();
    let mut step = |k: usize| {
        let now = cpu_ms();
        steps[k] = now - lap;
        lap = now;
    };
    let prog_path = dir.join("prog.tc");
    std::fs::write(&prog_path, case.prog.render())
        .map_err(|e| Outcome::RunError(format!("writing the program: {e}")))?;
    let prog = prog_path.display().to_string();
    let spec_path = dir.join("tiles.txt").display().to_string();
    // The spec of this case only: the parent reads what is left here when the worker dies.
    let _ = std::fs::remove_file(&spec_path);
    let params = case.prog.params();
    let opts = case
        .cfg
        .options(&prog, params.clone(), None)
        .map_err(|e| Outcome::RunError(rendered(&e)))?;
    let front = analyse(&opts, Mode::Optimised).map_err(|e| Outcome::CompileError(rendered(&e)))?;
    step(0);
    let text = match &case.cfg.tiles {
        Tiles::Default => None,
        Tiles::Text(t) => Some(t.clone()),
        Tiles::Random(seed) => {
            let mut rng = ChaCha8Rng::seed_from_u64(*seed);
            crate::spec::random_spec(&front, &mut rng)
                .map_err(|e| Outcome::CompileError(rendered(&e)))?
        }
    };
    let mut compiled = None;
    if let Some(text) = &text {
        // Written before compiling, so that a crash of the compiler or of the kernel
        // leaves it for the parent; removed again when the spec is rejected.
        std::fs::write(&spec_path, text)
            .map_err(|e| Outcome::RunError(format!("writing the spec: {e}")))?;
        let file = SourceFile::new(spec_path.clone(), text.clone());
        let parsed = tiling::parse_tile_spec(&file, &front.target.desc().buffer_order());
        let with_spec = case
            .cfg
            .options(&prog, params.clone(), Some(&spec_path))
            .map_err(|e| Outcome::RunError(rendered(&e)))?;
        let result = parsed.and_then(|spec| {
            let choice = SpecChoice {
                spec: Some((spec, file)),
                ..SpecChoice::default()
            };
            finish(&front, &with_spec, Mode::Optimised, &choice)
        });
        match result {
            Ok(c) => {
                *spec_out = Some(text.clone());
                compiled = Some((c, with_spec));
            }
            Err(e) if matches!(case.cfg.tiles, Tiles::Random(_)) => {
                let _ = std::fs::remove_file(&spec_path);
                *rejected = Some(rendered(&e));
            }
            Err(e) => return Err(Outcome::CompileError(rendered(&e))),
        }
    }
    let (mut compiled, opts) = match compiled {
        Some(c) => c,
        None => (
            finish(&front, &opts, Mode::Optimised, &SpecChoice::default())
                .map_err(|e| Outcome::CompileError(rendered(&e)))?,
            opts,
        ),
    };
    drop(front);
    step(1);
    if let (Some(inj), Tgt::Cpu) = (inject, case.cfg.target) {
        compiled.code = inj.apply(&compiled.code);
    }
    // For inspection (`polyc-fuzz replay`); the next case overwrites it.
    let _ = std::fs::write(dir.join("kernel.txt"), &compiled.code);
    set_cc(dir, case.cfg.cc).map_err(|e| Outcome::RunError(format!("the cc wrapper: {e}")))?;
    let ropts = RunOptions {
        check: true,
        seed: 0,
        inputs_dir: None,
        save_io: None,
        oracle: OracleChoice::Auto,
        max_interp_instances: 200_000_000,
        repeat: 1,
    };
    let report = run(&compiled, &opts, &ropts).map_err(|e| Outcome::RunError(rendered(&e)))?;
    step(2);
    steps[3] = report.cc_ms;
    if report.checks.is_empty() {
        return Err(Outcome::RunError("no tensor was checked".into()));
    }
    if !report.all_ok() {
        return Ok(Outcome::Mismatch(format_checks(&report)));
    }
    Ok(Outcome::Pass)
}
