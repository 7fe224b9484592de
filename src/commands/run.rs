//! `polyc run`: build the emitted C, execute it on real data, and check it against an
//! oracle.
//!
//! The oracle is the reference interpreter (the original program in its reference order)
//! when the work is small enough, otherwise the untransformed program (reference order, no
//! passes) built through the same emitter. Outputs, and inputs the program updates in
//! place, are compared with per-dtype tolerances (exact for integers).

use crate::pipeline::driver::{build, compile};
use crate::pipeline::options::CompileOptions;
use crate::pipeline::stages::{Compiled, Mode};
use miette::{miette, Result};
use polyhedral::data::TensorData;
use polyhedral::data::{compare, generate_data, Comparison};
use polyhedral::interp::{count_instances, interpret};
use polyhedral::ir::{InputRef, Program, TensorRole};
use polyhedral::npy::{read_npy, write_npy};
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::path::PathBuf;

/// Which oracle `--check` compares against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OracleChoice {
    /// The interpreter when the instance count is at most the limit, else the untransformed
    /// program.
    Auto,
    /// Always the reference interpreter.
    Interpreter,
    /// Always the untransformed program through the C emitter.
    Untransformed,
}

/// Options of `polyc run`.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Compare with an oracle.
    pub check: bool,
    /// Seed for generated inputs.
    pub seed: u64,
    /// Load inputs from `DIR/NAME.npy` instead of generating them.
    pub inputs_dir: Option<PathBuf>,
    /// Write every input and output as `DIR/NAME.npy`.
    pub save_io: Option<PathBuf>,
    /// The oracle.
    pub oracle: OracleChoice,
    /// The largest instance count the interpreter is used for under [`OracleChoice::Auto`].
    pub max_interp_instances: u64,
    /// How many times the kernel runs, each on fresh copies of its inputs (at least 1);
    /// the report keeps the best time. The results of the last run are checked.
    pub repeat: u32,
}

/// The check of one tensor.
#[derive(Clone, Debug)]
pub struct TensorCheck {
    /// Tensor name.
    pub name: String,
    /// Errors against the oracle.
    pub comparison: Comparison,
    /// Elements the oracle never wrote (still poison after it ran): the program does not
    /// define them, so they are not evidence either way.
    pub unwritten: usize,
    /// Elements of the tensor.
    pub elements: usize,
}

impl TensorCheck {
    /// True when the tensor matches and the oracle wrote at least one element of it: a
    /// check that compared nothing is a failure, not a pass.
    pub fn ok(&self) -> bool {
        self.comparison.ok && !self.nothing_checked()
    }
    /// True when there was nothing to compare: the tensor has no element at these sizes,
    /// or the oracle wrote none of them.
    pub fn nothing_checked(&self) -> bool {
        self.unwritten == self.elements
    }
}

/// What `polyc run` measured.
#[derive(Clone, Debug)]
pub struct RunReport {
    /// `reference interpreter (N instances)` or `untransformed program through the C emitter`.
    pub oracle: Option<String>,
    /// One entry per compared tensor (outputs, then inputs updated in place).
    pub checks: Vec<TensorCheck>,
    /// Time to compile the C, in ms.
    pub cc_ms: f64,
    /// Time of the kernel call, in ms: the best of [`RunOptions::repeat`] runs.
    pub run_ms: f64,
    /// The time of every run, in ms, in the order they ran.
    pub run_ms_all: Vec<f64>,
    /// Which device ran the kernel, for targets with several.
    pub device: Option<String>,
}

impl RunReport {
    /// True when every compared tensor matches.
    pub fn all_ok(&self) -> bool {
        self.checks.iter().all(TensorCheck::ok)
    }
    /// The largest absolute error over all checks.
    pub fn max_abs_err(&self) -> f64 {
        self.checks
            .iter()
            .map(|c| c.comparison.max_abs_err)
            .fold(0.0, f64::max)
    }
}

/// Every size's value; an error lists the unbound ones.
pub fn concrete_sizes(compiled: &Compiled) -> Result<Vec<i64>> {
    let unbound = compiled.unbound_sizes();
    if !unbound.is_empty() {
        let example: Vec<String> = unbound.iter().map(|n| format!("{n}=64")).collect();
        return Err(miette!(
            help = format!(
                "bind every size, e.g. --param {0}, or give the symbolic sizes at run time, e.g. --run-param {0}",
                example.join(",")
            ),
            "polyc run needs concrete sizes, but {} {} symbolic",
            unbound.join(", "),
            if unbound.len() == 1 { "is" } else { "are" }
        ));
    }
    Ok(compiled
        .param_values
        .iter()
        .map(|v| v.unwrap_or(0))
        .collect())
}

/// Every size's value for one run: the bound sizes as compiled, the symbolic ones from
/// `run_params` (`--run-param`). Errors: a name that is not a size of the program, a value
/// for a size bound at compile time, and a symbolic size left without a value.
pub fn run_sizes(compiled: &Compiled, run_params: &[(String, i64)]) -> Result<Vec<i64>> {
    let program = &compiled.program;
    let mut sizes: Vec<Option<i64>> = compiled.param_values.clone();
    for (name, value) in run_params {
        let Some(p) = program.params.iter().position(|p| &p.name == name) else {
            let all: Vec<&str> = program.params.iter().map(|p| p.name.as_str()).collect();
            return Err(miette!(
                help = format!("the sizes of `{}` are {}", program.name, all.join(", ")),
                "--run-param: `{name}` is not a size of `{}`",
                program.name
            ));
        };
        if let Some(bound) = compiled.param_values[p] {
            return Err(miette!(
                help = format!(
                    "--run-param gives values to the sizes left symbolic at compile time; drop `{name}` from --param to choose it at run time"
                ),
                "--run-param: `{name}` is bound at compile time to {bound} (--param), so the kernel cannot run with {name}={value}"
            ));
        }
        if let Some(d) = compiled.dynamic.iter().find(|d| &d.name == name) {
            if !d.contains(*value) {
                return Err(miette!(
                    help = format!(
                        "run at a size in {}, or compile with a --dynamic that includes {value}",
                        d.values_text()
                    ),
                    "--run-param: {name}={value} is outside the sizes the kernel was compiled for (--dynamic {name}={})",
                    d.values_text()
                ));
            }
        }
        sizes[p] = Some(*value);
    }
    let missing: Vec<String> = program
        .params
        .iter()
        .zip(&sizes)
        .filter(|(_, v)| v.is_none())
        .map(|(p, _)| p.name.clone())
        .collect();
    if !missing.is_empty() {
        let example: Vec<String> = missing.iter().map(|n| format!("{n}=64")).collect();
        return Err(miette!(
            help = format!(
                "give every symbolic size a value at run time, e.g. --run-param {} (or bind it at compile time with --param)",
                example.join(",")
            ),
            "polyc run needs concrete sizes, but {} {} symbolic",
            missing.join(", "),
            if missing.len() == 1 { "is" } else { "are" }
        ));
    }
    Ok(sizes.into_iter().map(|v| v.unwrap_or(0)).collect())
}

pub use polyhedral::data::sizes_text;

pub use polyhedral::data::inout_outputs;

/// Generates inputs (and the initial values of in/out outputs) from the seed.
fn seeded_data(program: &Program, sizes: &[i64], seed: u64) -> (Vec<TensorData>, Vec<TensorData>) {
    let (mut tensors, scalars) = generate_data(program, sizes, seed, false);
    // A separate stream, so adding an in/out output never changes the inputs of a seed.
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x00c0_ffee_0000_0001);
    for t in inout_outputs(program) {
        let shape = TensorData::shape_of(program, t, sizes);
        tensors[t] = TensorData::random(program.tensors[t].dtype, shape, &mut rng);
    }
    (tensors, scalars)
}

/// Tensors whose final values are compared: outputs, then inputs written in place.
fn compared_tensors(program: &Program) -> Vec<usize> {
    let mut v: Vec<usize> = program.outputs.clone();
    for (i, t) in program.tensors.iter().enumerate() {
        if t.role == TensorRole::Input && program.stmts.iter().any(|s| s.lhs == i) {
            v.push(i);
        }
    }
    v
}

/// Loads `DIR/NAME.npy` for every input, checking dtype and shape.
fn load_inputs(
    program: &Program,
    sizes: &[i64],
    dir: &std::path::Path,
    tensors: &mut [TensorData],
    scalars: &mut [TensorData],
) -> Result<()> {
    for input in &program.inputs {
        let (name, dtype, shape, slot): (&str, _, Vec<usize>, &mut TensorData) = match *input {
            InputRef::Tensor(t) => (
                &program.tensors[t].name,
                program.tensors[t].dtype,
                TensorData::shape_of(program, t, sizes),
                &mut tensors[t],
            ),
            InputRef::Scalar(s) => (
                &program.scalars[s].name,
                program.scalars[s].dtype,
                Vec::new(),
                &mut scalars[s],
            ),
        };
        let path = dir.join(format!("{name}.npy"));
        let data = read_npy(&path)?;
        if data.dtype() != dtype || data.shape != shape {
            return Err(miette!(
                help = "write the array with the dtype and shape the program declares (numpy: np.save(path, a.astype(...)))",
                "{}: `{name}` must be {dtype} with shape {:?}, but the file holds {} with shape {:?}",
                path.display(),
                shape,
                data.dtype(),
                data.shape
            ));
        }
        *slot = data;
    }
    // In/out outputs start from DIR/NAME.in.npy when it exists (what --save-io writes).
    for t in inout_outputs(program) {
        let path = dir.join(format!("{}.in.npy", program.tensors[t].name));
        if path.is_file() {
            let data = read_npy(&path)?;
            let shape = TensorData::shape_of(program, t, sizes);
            if data.dtype() != program.tensors[t].dtype || data.shape != shape {
                return Err(miette!(
                    help = "write the array with the output's dtype and shape",
                    "{}: `{}` must be {} with shape {:?}, but the file holds {} with shape {:?}",
                    path.display(),
                    program.tensors[t].name,
                    program.tensors[t].dtype,
                    shape,
                    data.dtype(),
                    data.shape
                ));
            }
            tensors[t] = data;
        }
    }
    Ok(())
}

/// Builds the kernel (the target's compiler: cc, nvcc, …), with progress notes that say
/// the compiler is running when it runs long.
fn build_watched(
    compiled: &Compiled,
    copts: &CompileOptions,
    poison: bool,
) -> Result<Box<dyn targets::Executable>> {
    let watch = crate::pipeline::progress::Watch::start();
    watch.running(&format!(
        "the target's compiler (cc) on {} kB of emitted code",
        compiled.code.len().div_ceil(1024)
    ));
    build(compiled, copts, poison)
}

/// The kernel's time as `polyc run` prints it: `12.345 ms`, or with several runs
/// `12.345 ms (best of 5; median 12.500 ms)`.
pub fn run_time_text(report: &RunReport) -> String {
    let n = report.run_ms_all.len();
    if n <= 1 {
        return format!("{:.3} ms", report.run_ms);
    }
    let mut sorted = report.run_ms_all.clone();
    sorted.sort_by(f64::total_cmp);
    let median = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    };
    format!(
        "{:.3} ms (best of {n}; median {median:.3} ms)",
        report.run_ms
    )
}

/// Runs the compiled program and, with `check`, compares it with the oracle.
pub fn run(compiled: &Compiled, copts: &CompileOptions, ropts: &RunOptions) -> Result<RunReport> {
    let sizes = concrete_sizes(compiled)?;
    let cc_start = std::time::Instant::now();
    let kernel = build_watched(compiled, copts, ropts.check)?;
    let cc_ms = cc_start.elapsed().as_secs_f64() * 1e3;
    let mut report = run_built(compiled, copts, ropts, kernel.as_ref(), &sizes)?;
    report.cc_ms = cc_ms;
    Ok(report)
}

/// Builds the compiled program once and runs it (and, with `check`, compares it with the
/// oracle) at every set of run-time sizes in `size_sets` (one `--run-param` flag each; see
/// [`run_sizes`]). The reports come in the order of `size_sets`, each with its sizes; the
/// C compile time is in the first.
pub fn run_many(
    compiled: &Compiled,
    copts: &CompileOptions,
    ropts: &RunOptions,
    size_sets: &[Vec<(String, i64)>],
) -> Result<Vec<(Vec<i64>, RunReport)>> {
    let sizes: Vec<Vec<i64>> = size_sets
        .iter()
        .map(|set| run_sizes(compiled, set))
        .collect::<Result<_>>()?;
    let cc_start = std::time::Instant::now();
    let kernel = build_watched(compiled, copts, ropts.check)?;
    let cc_ms = cc_start.elapsed().as_secs_f64() * 1e3;
    let mut out = Vec::with_capacity(sizes.len());
    for (i, s) in sizes.into_iter().enumerate() {
        let mut report = run_built(compiled, copts, ropts, kernel.as_ref(), &s)?;
        report.cc_ms = if i == 0 { cc_ms } else { 0.0 };
        out.push((s, report));
    }
    Ok(out)
}

/// Runs an already built kernel of `compiled` at `sizes` (every size's value) and, with
/// `check`, compares it with the oracle. `cc_ms` of the report is 0.
fn run_built(
    compiled: &Compiled,
    copts: &CompileOptions,
    ropts: &RunOptions,
    kernel: &dyn targets::Executable,
    sizes: &[i64],
) -> Result<RunReport> {
    let program = &compiled.program;
    let sizes = sizes.to_vec();
    let on_device = copts
        .target
        .as_deref()
        .is_some_and(|t| !matches!(t, "cpu") && !t.contains("gemmini"));
    polyhedral::data::ensure_memory(program, &sizes, on_device, &compiled.folds(), ropts.check)?;
    // Kernels allocate their temporaries themselves (a CPU kernel possibly folded, see
    // `targets::codegen::contract`); only the interpreter needs them here.
    let (mut tensors, mut scalars) = seeded_data(program, &sizes, ropts.seed);
    if let Some(dir) = &ropts.inputs_dir {
        load_inputs(program, &sizes, dir, &mut tensors, &mut scalars)?;
    }
    if let Some(dir) = &ropts.save_io {
        std::fs::create_dir_all(dir)
            .map_err(|e| miette!("cannot create --save-io directory {}: {e}", dir.display()))?;
        for input in &program.inputs {
            let (name, data) = match *input {
                InputRef::Tensor(t) => (&program.tensors[t].name, &tensors[t]),
                InputRef::Scalar(s) => (&program.scalars[s].name, &scalars[s]),
            };
            write_npy(&dir.join(format!("{name}.npy")), data)?;
        }
        for t in inout_outputs(program) {
            let name = &program.tensors[t].name;
            write_npy(&dir.join(format!("{name}.in.npy")), &tensors[t])?;
        }
    }
    let inputs_snapshot = tensors.to_vec();

    let mut times = Vec::new();
    let mut stats = None;
    for r in 0..ropts.repeat.max(1) {
        if r > 0 {
            tensors.clone_from(&inputs_snapshot);
        }
        let s = kernel
            .run(program, &sizes, &mut tensors, &scalars)
            .map_err(|e| locate_fault(e, copts, program))?;
        times.push(s.run_ms);
        stats = Some(s);
    }
    let stats = stats.expect("the kernel ran at least once");

    if let Some(dir) = &ropts.save_io {
        for &t in &compared_tensors(program) {
            let name = &program.tensors[t].name;
            let file = if program.tensors[t].role == TensorRole::Input {
                format!("{name}.out.npy")
            } else {
                format!("{name}.npy")
            };
            write_npy(&dir.join(file), &tensors[t])?;
        }
    }

    let mut report = RunReport {
        oracle: None,
        checks: Vec::new(),
        cc_ms: 0.0,
        run_ms: times.iter().copied().fold(f64::INFINITY, f64::min),
        run_ms_all: times,
        device: stats.device.clone(),
    };
    if !ropts.check {
        return Ok(report);
    }

    let instances = count_instances(program, &sizes);
    let use_interp = match ropts.oracle {
        OracleChoice::Interpreter => true,
        OracleChoice::Untransformed => false,
        OracleChoice::Auto => instances <= ropts.max_interp_instances,
    };
    let mut reference = inputs_snapshot;
    let watch = crate::pipeline::progress::Watch::start();
    watch.running(&format!(
        "the oracle ({} over {instances} statement instances)",
        if use_interp {
            "the reference interpreter"
        } else {
            "the untransformed program"
        }
    ));
    if use_interp {
        for (t, ten) in program.tensors.iter().enumerate() {
            if ten.role == TensorRole::Temp {
                let shape = TensorData::shape_of(program, t, &sizes);
                reference[t] = TensorData::poisoned(ten.dtype, shape);
            }
        }
        // The program as written: a shared subexpression's temporary (at the end of the
        // tensors) is the compiled program's own.
        let written = &compiled.written;
        interpret(
            written,
            &sizes,
            &mut reference[..written.tensors.len()],
            &scalars,
        )
        .map_err(|e| locate_fault(e, copts, written))?;
        report.oracle = Some(format!("reference interpreter ({instances} instances)"));
    } else {
        // The untransformed program in program order, on the CPU: an oracle for every
        // target (its C is the reference order, whatever the target under test).
        let mut cpu = copts.clone();
        cpu.target = Some("cpu".into());
        cpu.emit = None;
        let base = compile(&cpu, Mode::Untransformed)?;
        let k = build(&base, &cpu, true)?;
        k.run(program, &sizes, &mut reference, &scalars)?;
        report.oracle = Some(match ropts.oracle {
            OracleChoice::Auto => format!(
                "untransformed program through the C emitter ({instances} instances is over the interpreter's limit of {})",
                ropts.max_interp_instances
            ),
            _ => format!(
                "untransformed program through the C emitter (as --oracle asked; {instances} instances)"
            ),
        });
    }
    for &t in &compared_tensors(program) {
        report.checks.push(TensorCheck {
            name: program.tensors[t].name.clone(),
            comparison: compare(&reference[t], &tensors[t]),
            unwritten: reference[t].count_poison(),
            elements: reference[t].len(),
        });
    }
    Ok(report)
}

/// A run-time fault of a statement (an integer division by zero), located at the
/// statement in the program's source; other errors pass through.
fn locate_fault(e: miette::Report, copts: &CompileOptions, program: &Program) -> miette::Report {
    let Some(f) = e.downcast_ref::<polyhedral::interp::IntegerDivisionByZero>() else {
        return e;
    };
    let (Some(st), Ok(src)) = (
        program.stmts.get(f.stmt),
        polyhedral::diag::SourceFile::read(&copts.program),
    ) else {
        return e;
    };
    src.error(
        st.span,
        f.to_string(),
        "a divisor of this statement was 0",
        "integer x / 0 and x % 0 are 0 in polyc's kernels, and the run fails: guard the \
         divisor, e.g. `select(d != 0, n / d, 0)`, or compute in a float type",
    )
    .into()
}

/// One line per compared tensor: `C: max_abs_err=… max_rel_err=… ok`.
pub fn format_checks(report: &RunReport) -> String {
    let mut s = String::new();
    for c in &report.checks {
        let cmp = &c.comparison;
        if c.nothing_checked() {
            if c.elements == 0 {
                s.push_str(&format!(
                    "{}: NOTHING CHECKED (it has no elements at these sizes)\n",
                    c.name
                ));
            } else {
                s.push_str(&format!(
                    "{}: NOTHING CHECKED (the program writes none of its {} elements at these sizes)\n",
                    c.name, c.elements
                ));
            }
            continue;
        }
        let unwritten = if c.unwritten > 0 {
            format!(
                " ({} of {} elements never written by the program)",
                c.unwritten, c.elements
            )
        } else {
            String::new()
        };
        s.push_str(&format!(
            "{}: max_abs_err={:.3e} max_rel_err={:.3e}{unwritten} {}",
            c.name,
            cmp.max_abs_err,
            cmp.max_rel_err,
            if cmp.ok { "ok" } else { "MISMATCH" }
        ));
        if let (false, Some((idx, got, want))) = (cmp.ok, &cmp.first_mismatch) {
            s.push_str(&format!(
                " ({} elements differ; first at {:?}: got {got}, expected {want})",
                cmp.mismatches, idx
            ));
        }
        s.push('\n');
    }
    s
}
