//! The hostile-input campaign (`polyc-fuzz hostile`): mutated programs, tile specs,
//! target descriptions, flag values and sizes, run through the `polyc` binary as careless
//! or hostile users would.
//!
//! Every invocation must end with exit 0 or 1 (3 is allowed for `run --check`, a
//! mismatch), never a signal, never 101 (a panic), within its time limit, and with a
//! message on standard error whenever it exits 1. Each child runs in a fresh folder,
//! with its address space limited (so a huge allocation fails at once instead of
//! swapping the machine) and a wall-clock limit.
//!
//! Invocation `i` of seed `s` depends on `(s, i)` alone; a failure is saved with its
//! files and command line, and printed.

use crate::campaign::case_seed;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

mod inputs;
pub mod known;
mod outcome;

pub use outcome::{Exit, Ran};

pub use inputs::{invocation, Invocation, Kind};

/// The most bytes of address space a child may map (4 GiB).
const ADDRESS_SPACE: u64 = 4 << 30;

/// Runs `inv` with `polyc` in a fresh folder under `tmp`.
pub fn run_invocation(polyc: &Path, inv: &Invocation, tmp: &Path, limit: Duration) -> Ran {
    let dir = match tempfile::Builder::new().prefix("h-").tempdir_in(tmp) {
        Ok(d) => d,
        Err(e) => {
            return Ran {
                exit: Exit::Code(-1),
                stderr: format!("polyc-fuzz: no temporary folder: {e}"),
            }
        }
    };
    for (name, data) in &inv.files {
        if let Err(e) = std::fs::write(dir.path().join(name), data) {
            return Ran {
                exit: Exit::Code(-1),
                stderr: format!("polyc-fuzz: cannot write {name}: {e}"),
            };
        }
    }
    let mut cmd = Command::new(polyc);
    cmd.args(&inv.args)
        .current_dir(dir.path())
        .env("OMP_WAIT_POLICY", "passive")
        // polyc's temporary folders go inside the run's, removed after it.
        .env("TMPDIR", dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe; the closure touches nothing else.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: ADDRESS_SPACE,
                rlim_max: ADDRESS_SPACE,
            };
            libc::setrlimit(libc::RLIMIT_AS, &lim);
            Ok(())
        });
    }
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return Ran {
                exit: Exit::Code(-1),
                stderr: format!("polyc-fuzz: cannot start {}: {e}", polyc.display()),
            }
        }
    };
    wait_limited(child, limit)
}

/// Waits for `child` up to `limit`, reading its standard error; kills it (its own
/// process, by id) when the limit passes.
fn wait_limited(mut child: std::process::Child, limit: Duration) -> Ran {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    let mut err = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(e) = err.as_mut() {
            let _ = e.read_to_end(&mut buf);
        }
        buf.truncate(4096);
        String::from_utf8_lossy(&buf).into_owned()
    });
    let start = Instant::now();
    let exit = loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                break match (status.code(), status.signal()) {
                    (Some(c), _) => Exit::Code(c),
                    (None, Some(s)) => Exit::Signal(s),
                    (None, None) => Exit::Code(-1),
                }
            }
            Ok(None) if start.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                break Exit::Timeout;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(_) => break Exit::Code(-1),
        }
    };
    let stderr = reader.join().unwrap_or_default();
    Ran { exit, stderr }
}

/// How a hostile campaign runs.
#[derive(Clone, Debug)]
pub struct HostileSettings {
    /// The seed.
    pub seed: u64,
    /// The most invocations.
    pub cases: u64,
    /// The most seconds spent starting invocations.
    pub seconds: f64,
    /// Invocations in parallel.
    pub jobs: usize,
    /// The polyc binary.
    pub polyc: PathBuf,
    /// The repository root (examples and target descriptions are read from there).
    pub root: PathBuf,
    /// Where failures are saved.
    pub out: PathBuf,
    /// The time limit of one invocation.
    pub limit: Duration,
    /// Print every invocation.
    pub verbose: bool,
}

/// What a hostile campaign found.
#[derive(Debug, Default)]
pub struct HostileSummary {
    /// Invocations run.
    pub cases: u64,
    /// Per exit: 0, 1, 3.
    pub exits: [u64; 3],
    /// Per kind of input: program, spec, description, flags.
    pub kinds: [u64; 4],
    /// Violations a known bug explains: (invocation, bug).
    pub known: Vec<(u64, &'static known::KnownHostile)>,
    /// Unexplained violations: the saved folder of each.
    pub failures: Vec<PathBuf>,
    /// Wall time.
    pub seconds: f64,
}

/// The seeds: every example program, with its text.
pub fn seed_programs(root: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for sub in ["examples", "examples/tc", "examples/gemmini"] {
        let Ok(rd) = std::fs::read_dir(root.join(sub)) else {
            continue;
        };
        let mut names: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
        names.sort();
        for p in names {
            if p.extension().is_some_and(|x| x == "tc") {
                if let Ok(t) = std::fs::read_to_string(&p) {
                    out.push((p.display().to_string(), t));
                }
            }
        }
    }
    out
}

/// Runs the hostile campaign and prints a summary line per failure and at the end.
pub fn run_hostile(s: &HostileSettings) -> HostileSummary {
    let start = Instant::now();
    let seeds = std::sync::Arc::new(seed_programs(&s.root));
    let next = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let (tx, rx) = std::sync::mpsc::channel();
    let mut handles = Vec::new();
    for _ in 0..s.jobs.max(1) {
        let (s, seeds, next, tx) = (s.clone(), seeds.clone(), next.clone(), tx.clone());
        handles.push(std::thread::spawn(move || {
            let tmp = match tempfile::Builder::new().prefix("polyc-hostile-").tempdir() {
                Ok(t) => t,
                Err(e) => {
                    eprintln!("polyc-fuzz hostile: {e}");
                    return;
                }
            };
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if i >= s.cases || start.elapsed().as_secs_f64() > s.seconds {
                    break;
                }
                let mut rng = ChaCha8Rng::seed_from_u64(case_seed(s.seed ^ 0x0405_711e, i));
                let inv = invocation(&mut rng, &seeds, &s.root);
                let ran = run_invocation(&s.polyc, &inv, tmp.path(), s.limit);
                if tx.send((i, inv, ran)).is_err() {
                    break;
                }
            }
        }));
    }
    drop(tx);
    let mut sum = HostileSummary::default();
    for (i, inv, ran) in rx {
        record(s, &mut sum, i, &inv, &ran);
    }
    for h in handles {
        let _ = h.join();
    }
    sum.seconds = start.elapsed().as_secs_f64();
    sum
}

/// Counts one invocation, and saves and prints it when it breaks the rules and no known
/// bug explains it.
fn record(s: &HostileSettings, sum: &mut HostileSummary, i: u64, inv: &Invocation, ran: &Ran) {
    sum.cases += 1;
    sum.kinds[inv.kind as usize] += 1;
    match ran.exit {
        Exit::Code(0) => sum.exits[0] += 1,
        Exit::Code(1) => sum.exits[1] += 1,
        Exit::Code(3) => sum.exits[2] += 1,
        _ => {}
    }
    let violation = ran.violation(inv);
    if s.verbose {
        println!(
            "hostile {i}: {:?} {:?} [{}] {}",
            inv.kind,
            ran.exit,
            inv.note,
            violation.as_deref().unwrap_or("ok")
        );
    }
    let Some(v) = violation else { return };
    if let Some(k) = known::explain(inv, ran) {
        sum.known.push((i, k));
        return;
    }
    let dir = s.out.join(format!("hostile-{}-{i}", s.seed));
    let cmd = format!("polyc {}", shell_words(&inv.args));
    println!(
        "polyc-fuzz hostile: FAILURE {i} ({v}): {}\n  command (in {}): {cmd}\n  stderr: {}",
        inv.note,
        dir.display(),
        ran.stderr
            .trim()
            .lines()
            .take(6)
            .collect::<Vec<_>>()
            .join("\n          ")
    );
    let save = || -> std::io::Result<()> {
        std::fs::create_dir_all(&dir)?;
        for (name, data) in &inv.files {
            std::fs::write(dir.join(name), data)?;
        }
        std::fs::write(
            dir.join("report.txt"),
            format!(
                "{v}\nmutation: {}\ncommand: {cmd}\nstderr:\n{}\n",
                inv.note, ran.stderr
            ),
        )
    };
    if let Err(e) = save() {
        eprintln!("polyc-fuzz hostile: could not save {}: {e}", dir.display());
    }
    sum.failures.push(dir);
}

/// Arguments quoted for a shell where needed.
pub fn shell_words(args: &[String]) -> String {
    args.iter()
        .map(|a| {
            let plain = !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_=.,/@:+".contains(c));
            if plain {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// An environment variable's value, or `default` when unset or unreadable.
fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// `polyc-fuzz hostile`: settings from the environment (`POLYC_FUZZ_SEED`,
/// `POLYC_FUZZ_HOSTILE_CASES`, `POLYC_FUZZ_HOSTILE_SECONDS`, `POLYC_FUZZ_JOBS`, `POLYC`,
/// `POLYC_FUZZ_OUT`, `POLYC_FUZZ_VERBOSE`).
pub fn main() -> ExitCode {
    let root = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let polyc = std::env::var_os("POLYC")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/release/polyc"));
    let s = HostileSettings {
        seed: crate::seed_from_env(),
        cases: env("POLYC_FUZZ_HOSTILE_CASES", 400),
        seconds: env("POLYC_FUZZ_HOSTILE_SECONDS", 90.0),
        jobs: env(
            "POLYC_FUZZ_JOBS",
            std::thread::available_parallelism().map_or(1, |n| n.get()),
        ),
        polyc: std::fs::canonicalize(&polyc).unwrap_or(polyc),
        out: root.join(env("POLYC_FUZZ_OUT", "tests/fuzz_failures".to_string())),
        root,
        limit: Duration::from_secs_f64(env("POLYC_FUZZ_HOSTILE_LIMIT", 30.0)),
        verbose: env("POLYC_FUZZ_VERBOSE", 0) != 0,
    };
    println!(
        "polyc-fuzz hostile: seed {} (rerun with POLYC_FUZZ_SEED={}), up to {} invocations in {} s of {}",
        s.seed,
        s.seed,
        s.cases,
        s.seconds,
        s.polyc.display()
    );
    let sum = run_hostile(&s);
    println!(
        "polyc-fuzz hostile: {} invocations in {:.1} s (seed {}): exit 0 {}, exit 1 {}, exit 3 {}; programs {}, specs {}, descriptions {}, flags {}; {} known, {} failed",
        sum.cases,
        sum.seconds,
        s.seed,
        sum.exits[0],
        sum.exits[1],
        sum.exits[2],
        sum.kinds[0],
        sum.kinds[1],
        sum.kinds[2],
        sum.kinds[3],
        sum.known.len(),
        sum.failures.len()
    );
    for (i, k) in &sum.known {
        println!("  known bug {} ({}): invocation {i}", k.name, k.what);
    }
    for f in &sum.failures {
        println!("  FAILED: {}", f.display());
    }
    if sum.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
