//! The differential campaign: cases drawn from a seed, run by worker processes in
//! parallel, failures explained by [`crate::known`] or shrunk, saved and printed.
//!
//! Case `i` of seed `s` depends on `(s, i)` alone, whatever the number of jobs or the
//! time budget, so `POLYC_FUZZ_SEED=s POLYC_FUZZ_CASE=i` reruns exactly that case.

use crate::case::{Case, CaseResult, Config, Outcome, Tgt, Tiles};
use crate::gen::{gemm_like, generate, generate_typed, DType, Prog};
pub use crate::settings::{Settings, Summary, GEMMINI_SHARE, GPU_SHARE, O3_SHARE};
use crate::shrink::shrink;
use crate::worker::{Request, Worker};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::channel;
use std::sync::Arc;
use std::time::Instant;

/// Mixes the seed and the case index into the case's own seed (SplitMix64).
pub fn case_seed(seed: u64, index: u64) -> u64 {
    let mut z = seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Case `index` of `settings.seed`: a target, a program and random settings.
pub fn case_for(settings: &Settings, index: u64) -> Case {
    let mut rng = ChaCha8Rng::seed_from_u64(case_seed(settings.seed, index));
    let draw: f64 = rng.gen();
    let target = if draw < settings.gpu_share {
        Tgt::Gpu
    } else if draw < settings.gpu_share + settings.gemmini_share {
        Tgt::Gemmini
    } else {
        Tgt::Cpu
    };
    let prog = match target {
        Tgt::Gemmini if rng.gen_bool(0.7) => gemm_program(&mut rng),
        // Gemmini holds i8 and i32 only.
        Tgt::Gemmini => generate_typed(&mut rng, "f", Some(DType::I32)),
        _ => generate(&mut rng, "f"),
    };
    Case {
        id: format!("{}:{index}", settings.seed),
        prog,
        cfg: random_config(&mut rng, target, settings.o3_share),
    }
}

/// A GEMM-like program for Gemmini (a generic integer one if none validates).
fn gemm_program(rng: &mut ChaCha8Rng) -> Prog {
    for _ in 0..50 {
        let p = gemm_like(rng, "g");
        if p.validate().is_ok() {
            return p;
        }
    }
    generate(rng, "g")
}

/// Random settings for `target`: a scheduler, a spec or not, promotion and fusion flags,
/// and `-O3` for a share `o3` of the kernels (`-O1` for the others).
pub fn random_config(rng: &mut ChaCha8Rng, target: Tgt, o3: f64) -> Config {
    let mut c = Config::plain(target);
    c.scheduler = match rng.gen_range(0..10) {
        0..=3 => "isl",
        4..=6 => "initial",
        _ => "ilp",
    }
    .into();
    if c.scheduler == "ilp" && rng.gen_bool(0.4) {
        c.fuse = Some(if rng.gen_bool(0.6) { "max" } else { "none" }.into());
    }
    if c.scheduler == "isl" && rng.gen_bool(0.15) {
        let o = [
            "serialize_sccs=1",
            "maximize_band_depth=1",
            "outer_coincidence=1",
            "whole_component=1",
            "algorithm=feautrier",
        ];
        c.isl_options.push(o[rng.gen_range(0..o.len())].into());
    }
    if rng.gen_bool(0.55) {
        c.tiles = Tiles::Random(rng.gen());
    }
    c.pack = match rng.gen_range(0..10) {
        0..=5 => None,
        6..=8 => Some("all".into()),
        _ => Some("none".into()),
    };
    c.no_hoist = rng.gen_bool(0.15);
    c.no_tile_fusion = rng.gen_bool(0.15);
    c.tile_fusion_one_nest = rng.gen_bool(0.1);
    c.no_register_tiles = rng.gen_bool(0.1);
    c.no_default_tiling = rng.gen_bool(0.1);
    c.verify_passes = rng.gen_bool(0.06);
    if rng.gen::<f64>() >= o3 {
        c.cc = crate::case::CcMode::O1;
    }
    if target == Tgt::Gemmini {
        c.policy = rng.gen_bool(0.3).then(|| "gemmini-default".into());
        c.via_c = rng.gen_bool(0.25);
    }
    c
}

/// The message of one finished case, for the main thread.
enum Event {
    Done {
        index: u64,
        case: Box<Case>,
        result: CaseResult,
        known: Option<&'static crate::known::Known>,
        saved: Option<PathBuf>,
    },
}

/// Runs the campaign and prints progress, failures and the summary.
pub fn run_campaign(settings: &Settings) -> Summary {
    let start = Instant::now();
    let cpu_start = crate::case::cpu_ms();
    let next = Arc::new(AtomicU64::new(settings.only.unwrap_or(0)));
    let last = settings.only.map_or(settings.cases, |i| i + 1);
    let (tx, rx) = channel::<Event>();
    let mut handles = Vec::new();
    for _ in 0..settings.jobs.max(1) {
        let (next, tx, settings) = (next.clone(), tx.clone(), settings.clone());
        handles.push(std::thread::spawn(move || {
            job(&settings, &next, last, start, &tx);
        }));
    }
    drop(tx);
    let mut sum = Summary::default();
    for ev in rx {
        let Event::Done {
            index,
            case,
            result,
            known,
            saved,
        } = ev;
        record(&mut sum, settings, index, &case, &result, known, saved);
    }
    for h in handles {
        let _ = h.join();
    }
    sum.seconds = start.elapsed().as_secs_f64();
    sum.cpu_seconds = (crate::case::cpu_ms() - cpu_start) / 1e3;
    sum
}

/// Counts one finished case into the summary (and prints it in verbose mode).
fn record(
    sum: &mut Summary,
    settings: &Settings,
    index: u64,
    case: &Case,
    result: &CaseResult,
    known: Option<&'static crate::known::Known>,
    saved: Option<PathBuf>,
) {
    sum.cases += 1;
    sum.per_target[case.cfg.target as usize] += 1;
    sum.spec_rejected += u64::from(result.spec_rejected.is_some());
    sum.with_spec += u64::from(result.spec.is_some());
    if settings.verbose {
        println!(
            "case {index}: {} ({:.0} ms: analyse {:.0}, finish {:.0}, run {:.0} (cc {:.0} ms); {}){}",
            result.outcome.class(),
            result.ms,
            result.steps[0],
            result.steps[1],
            result.steps[2],
            result.steps[3],
            case.cfg
                .flags(result.spec.as_ref().map(|_| "spec"))
                .join(" "),
            known
                .map(|k| format!(" known: {}", k.name))
                .unwrap_or_default()
        );
        if let Some(r) = &result.spec_rejected {
            let first = r.lines().map(str::trim).find(|l| !l.is_empty());
            println!("  spec rejected: {}", first.unwrap_or_default());
        }
    }
    match (&result.outcome, known, saved) {
        (Outcome::Pass, _, _) => sum.passed += 1,
        (_, Some(k), _) => sum.known.push((case.id.clone(), k)),
        (_, None, Some(dir)) => sum.failures.push(dir),
        (_, None, None) => sum.failures.push(PathBuf::from(&case.id)),
    }
}

/// One job: a worker process, and the loop that takes the next case index, runs it, and
/// explains or shrinks and saves a failure.
fn job(
    settings: &Settings,
    next: &AtomicU64,
    last: u64,
    start: Instant,
    tx: &std::sync::mpsc::Sender<Event>,
) {
    let Ok(mut worker) = Worker::new() else {
        eprintln!("polyc-fuzz: cannot find its own executable");
        return;
    };
    loop {
        if start.elapsed().as_secs_f64() > settings.seconds {
            break;
        }
        let index = next.fetch_add(1, Ordering::SeqCst);
        if index >= last {
            break;
        }
        let case = case_for(settings, index);
        let mut run = |c: &Case| {
            worker.run(
                &Request {
                    case: c.clone(),
                    inject: settings.inject,
                },
                settings.case_limit,
            )
        };
        let result = run(&case);
        let mut known = None;
        let mut saved = None;
        if result.outcome != Outcome::Pass {
            known = crate::known::explain(&case, &result.outcome, &mut |c| run(c).outcome);
            if known.is_none() {
                let (small, small_result, tried) =
                    shrink(&case, &result, settings.shrink, &mut run);
                saved = crate::report::save_failure(
                    settings,
                    &case,
                    &result,
                    &small,
                    &small_result,
                    tried,
                );
            }
        }
        let _ = tx.send(Event::Done {
            index,
            case: Box::new(case),
            result,
            known,
            saved,
        });
    }
}
