//! The tile-size search in the pipeline: `--search model|measure`, `--search-budget`,
//! `--search-top` and `--search-out`.
//!
//! When the `--tile-spec` file has search entries (`?`, `[lo..hi]`, `{a, b}`), the
//! pipeline calls [`resolve_tile_spec`] once, on the scheduled tree, before any pass: it
//! runs [`tiling::search()`] (candidates, legality and the data-movement model are
//! documented in `tiling::search`) and the rest of the pipeline tiles with the resolved,
//! fixed spec. The spec's spans are kept, so later notes still point into the file.
//!
//! - `--search model` (default): the model's best point.
//! - `--search measure` (CPU target, bound sizes): the model's best `--search-top K` points
//!   (default [`DEFAULT_TOP`]) are each compiled by the full pipeline, built with the
//!   system C compiler and run on the inputs of seed 0 (the same data `polyc run --seed 0`
//!   generates; no check); the fastest of three runs counts, and the fastest point wins
//!   (the model's order breaks ties). Progress goes to standard error, as a bar when it is
//!   a terminal and as plain lines otherwise.
//!
//! The pipeline prints one note, e.g. `search: 37 candidates, 29 legal (model,
//! exhaustive); picked S_1: 32@L2 8@reg, 256@L2 32@reg, 128@L2`; `polyc explain` shows it
//! with the model's five best points. `--search-out FILE` writes the resolved spec as a
//! tile-spec file with a comment header saying how it was found.

use crate::pipeline::options::{CompileOptions, SearchMode};
use crate::pipeline::shard::Shard;
use crate::pipeline::stages::{finish, Front, Mode, SpecChoice};
use miette::{miette, Result};
use polyhedral::data::inout_outputs;
use polyhedral::data::{generate_data, TensorData};
use polyhedral::diag::SourceFile;
use serde::{Deserialize, Serialize};
use std::io::IsTerminal;
use tiling::search::{resolve, searched_text};
use tiling::{SearchOptions, TileSpec};

/// Runs per measured point; the fastest counts.
pub const RUNS_PER_POINT: usize = 3;

/// The format tag of a search shard's result file (`--search-json`).
pub const SEARCH_RESULT_FORMAT: &str = "polyc-search-result/1";

/// What a search result file says about its search.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SearchInfo {
    /// The program as given.
    pub program: String,
    /// `--entry`.
    #[serde(default)]
    pub entry: Option<String>,
    /// The bound sizes, `M=64,N=64,K=64`.
    pub params: String,
    /// The `--tile-spec` file.
    pub tile_spec: String,
    /// SHA-256 of the program's text, the entry, the sizes, the spec file's text and the
    /// tile specs of the measured points in the model's order: shards agree on it exactly
    /// when they measure parts of one list of points.
    pub hash: String,
    /// Points measured over all shards (`--search-top`, or fewer legal points).
    pub measured: usize,
}

/// One measured point.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MeasuredPoint {
    /// Its place in the model's order, from 1.
    pub rank: usize,
    /// The searched entries, e.g. `S_1: 32@L1, 64@L1`.
    pub label: String,
    /// The whole resolved tile spec.
    pub spec: String,
    /// The fastest of [`RUNS_PER_POINT`] runs, in ms.
    pub ms: f64,
}

/// A search shard's result file.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SearchShardResult {
    /// [`SEARCH_RESULT_FORMAT`].
    pub format: String,
    /// The search.
    pub search: SearchInfo,
    /// Which part of the points.
    pub shard: Shard,
    /// polyc's version.
    pub polyc: String,
    /// The target description's name.
    pub target: String,
    /// Where it ran.
    pub host: crate::pipeline::host::Host,
    /// Wall time of the measurements in ms.
    pub wall_ms: f64,
    /// The points this shard measured, in the model's order.
    pub points: Vec<MeasuredPoint>,
}

/// Resolves the search entries of `spec` for `tree` as `opts.search` says (see the module
/// docs). A spec without search entries is returned as it is (and written to
/// `--search-out` if asked).
pub fn resolve_tile_spec(opts: &CompileOptions, front: &Front) -> Result<SpecChoice> {
    if opts.search.mode != SearchMode::Measure {
        for (flag, given) in [
            ("--search-shard", opts.search.shard.is_some()),
            ("--search-json", opts.search.json.is_some()),
        ] {
            if given {
                return Err(miette!(
                    help = "shard the measured points with --search measure --search-shard i/n --search-json OUT",
                    "{flag} needs --search measure"
                ));
            }
        }
    }
    let tree = front.scheduled();
    let Some((spec, file)) = front.tile_spec.clone() else {
        if let Some(out) = &opts.search.out {
            return Err(miette!(
                help = "give a tile spec with search entries, e.g. `S_1: ?@L1, ?@L1`, with --tile-spec",
                "--search-out {out}: there is no --tile-spec to resolve"
            ));
        }
        return Ok(SpecChoice {
            spec: None,
            note: None,
            explain: None,
        });
    };
    if spec.first_search_entry().is_none() {
        if let Some(out) = &opts.search.out {
            write_out(
                out,
                &spec,
                &format!("{} has no search entries; written as given", file.name),
            )?;
        }
        return Ok(SpecChoice {
            spec: Some((spec, file)),
            note: None,
            explain: None,
        });
    }
    if opts.search.mode == SearchMode::Measure {
        require_bound_sizes(front)?;
    }
    let levels = front.target.desc().levels();
    let cx = tiling::TileCx {
        ctx: &front.ctx,
        program: &front.program,
        scop: &front.scop,
        deps: &front.deps,
        levels: &levels,
    };
    let result = tiling::search(
        tree,
        &cx,
        &spec,
        &file,
        &SearchOptions {
            budget: opts.search.budget.max(1),
        },
    )?;
    let bound = front.param_values.iter().all(|v| v.is_some());
    let (sizes, how) = match opts.search.mode {
        SearchMode::Model => match front.target.cost_model().filter(|_| bound) {
            Some(name) => rank_by_target_cost(opts, front, &spec, &file, &result, name)?,
            None => (result.best().sizes.clone(), result.summary("model")),
        },
        SearchMode::Measure => {
            let (sizes, measured, ms) = measure(opts, front, &spec, &file, &result)?;
            let part = match opts.search.shard {
                Some(s) => format!(" in shard {s}"),
                None => String::new(),
            };
            (
                sizes,
                format!(
                    "{}, {measured} measured{part} (fastest {ms:.3} ms, best of {RUNS_PER_POINT})",
                    result.summary("model")
                ),
            )
        }
    };
    let resolved = resolve(&spec, &result.vars, &sizes);
    let picked = searched_text(&resolved, &result.vars);
    let note = format!("search: {how}; picked {picked}");
    if let Some(out) = &opts.search.out {
        write_out(
            out,
            &resolved,
            &format!(
                "found by `polyc` from {} on {}: {how}",
                file.name, opts.program
            ),
        )?;
    }
    let explain = format!(
        "{note}\nthe model's best points (cost = bytes moved x {}^levels outward):\n{}",
        tiling::search::LEVEL_WEIGHT,
        result.ranking_text(&spec, 5)
    );
    Ok(SpecChoice {
        spec: Some((resolved, file)),
        note: Some(note),
        explain: Some(explain),
    })
}

fn write_out(path: &str, spec: &TileSpec, how: &str) -> Result<()> {
    let text = format!("# tile spec resolved by the tile-size search\n# {how}\n{spec}");
    polyhedral::files::write_output("--search-out", std::path::Path::new(path), text.as_bytes())
}

/// Compiles and times the model's best points; returns the fastest one's sizes, how many
/// were measured and its time in ms.
fn measure(
    opts: &CompileOptions,
    front: &Front,
    spec: &TileSpec,
    file: &SourceFile,
    result: &tiling::SearchResult,
) -> Result<(Vec<i64>, usize, f64)> {
    require_bound_sizes(front)?;
    let sizes: Vec<i64> = front.param_values.iter().map(|v| v.unwrap_or(0)).collect();
    measure_at(opts, front, spec, file, result, sizes)
}

/// `--search measure` runs the program: every size must be bound.
fn require_bound_sizes(front: &Front) -> Result<()> {
    let unbound: Vec<String> = front
        .program
        .params
        .iter()
        .zip(&front.param_values)
        .filter(|(_, v)| v.is_none())
        .map(|(p, _)| p.name.clone())
        .collect();
    if !unbound.is_empty() {
        let example: Vec<String> = unbound.iter().map(|n| format!("{n}=64")).collect();
        return Err(miette!(
            help = format!(
                "bind every size, e.g. --param {}, or use --search model",
                example.join(",")
            ),
            "--search measure runs the program, but {} {} symbolic",
            unbound.join(", "),
            if unbound.len() == 1 { "is" } else { "are" }
        ));
    }
    Ok(())
}

/// [`measure`] at the bound `sizes`.
fn measure_at(
    opts: &CompileOptions,
    front: &Front,
    spec: &TileSpec,
    file: &SourceFile,
    result: &tiling::SearchResult,
    sizes: Vec<i64>,
) -> Result<(Vec<i64>, usize, f64)> {
    let all: Vec<&tiling::search::Point> =
        result.ranked.iter().take(opts.search.top.max(1)).collect();
    let shard = opts.search.shard.unwrap_or(Shard::WHOLE);
    let items: Vec<(String, u64)> = (0..all.len()).map(|i| (format!("{i:09}"), 1)).collect();
    let mine = crate::pipeline::shard::select(&items, shard);
    if mine.is_empty() {
        return Err(miette!(
            help = format!(
                "use at most {} shards, or measure more points with --search-top",
                all.len()
            ),
            "--search-shard {shard}: the search measures {} point{}, none of them in this shard",
            all.len(),
            if all.len() == 1 { "" } else { "s" }
        ));
    }
    let top: Vec<&tiling::search::Point> = mine.iter().map(|&i| all[i]).collect();
    let start = std::time::Instant::now();
    let mut measured: Vec<MeasuredPoint> = Vec::new();
    let bar = if std::io::stderr().is_terminal() {
        let b = indicatif::ProgressBar::new(top.len() as u64);
        if let Ok(style) =
            indicatif::ProgressStyle::with_template("search: measuring {bar:30} {pos}/{len} {msg}")
        {
            b.set_style(style);
        }
        Some(b)
    } else {
        None
    };
    let mut best: Option<(usize, f64)> = None;
    for (i, p) in top.iter().enumerate() {
        let resolved = resolve(spec, &result.vars, &p.sizes);
        let label = searched_text(&resolved, &result.vars);
        if let Some(b) = &bar {
            b.set_message(label.clone());
        }
        let ms = time_point(opts, front, &sizes, (&resolved, file))?;
        match &bar {
            Some(b) => b.inc(1),
            None => eprintln!(
                "polyc: search: measured {}/{} {label}: {ms:.3} ms",
                i + 1,
                top.len()
            ),
        }
        if best.is_none_or(|(_, t)| ms < t) {
            best = Some((i, ms));
        }
        measured.push(MeasuredPoint {
            rank: mine[i] + 1,
            label,
            spec: resolved.to_string(),
            ms,
        });
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if let Some(path) = &opts.search.json {
        let wall_ms = start.elapsed().as_secs_f64() * 1e3;
        write_search_json(
            opts, front, spec, file, result, &all, shard, measured, wall_ms, path,
        )?;
    }
    let (i, ms) = best.ok_or_else(|| miette!("internal error: no point was measured"))?;
    Ok((top[i].sizes.clone(), top.len(), ms))
}

/// Finishes the pipeline with the fixed spec `resolved`, builds it and returns the
/// fastest of [`RUNS_PER_POINT`] runs in ms.
/// `--search model` on a target with a cost model of its own ([`targets::Target::cost_model`],
/// Gemmini's EDP): every legal point is compiled and ranked by that figure, ties broken by
/// the data-movement model's order. Returns the best point's sizes and the summary.
fn rank_by_target_cost(
    opts: &CompileOptions,
    front: &Front,
    spec: &TileSpec,
    file: &SourceFile,
    result: &tiling::SearchResult,
    name: &str,
) -> Result<(Vec<i64>, String)> {
    let sizes: Vec<i64> = front.param_values.iter().map(|v| v.unwrap_or(0)).collect();
    let mut best: Option<(f64, &tiling::search::Point)> = None;
    for p in &result.ranked {
        let resolved = resolve(spec, &result.vars, &p.sizes);
        let mut o = opts.clone();
        o.explain = false;
        let choice = SpecChoice {
            spec: Some((resolved, file.clone())),
            note: None,
            explain: None,
        };
        let compiled = finish(front, &o, Mode::Optimised, &choice)?;
        let input = targets::BuildInput {
            program: &front.program,
            param_texts: &compiled.param_texts,
            kernel: compiled
                .kernel
                .as_ref()
                .ok_or_else(|| miette!("internal error: no kernel IR"))?,
            source: &compiled.code,
            poison: false,
            via: o.via.as_deref(),
            dynamic: &[],
        };
        let cost = front.target.model_cost(&input, &sizes)?;
        if best.is_none_or(|(c, _)| cost < c) {
            best = Some((cost, p));
        }
    }
    let (cost, p) = best.ok_or_else(|| miette!("internal error: no legal point"))?;
    Ok((
        p.sizes.clone(),
        format!(
            "{}, ranked by the target's {name} ({} point{} compiled; best {name} {cost:.4e})",
            result.summary("model"),
            result.ranked.len(),
            if result.ranked.len() == 1 { "" } else { "s" }
        ),
    ))
}

fn time_point(
    opts: &CompileOptions,
    front: &Front,
    sizes: &[i64],
    (resolved, file): (&TileSpec, &SourceFile),
) -> Result<f64> {
    let mut o = opts.clone();
    o.explain = false;
    let choice = SpecChoice {
        spec: Some((resolved.clone(), file.clone())),
        note: None,
        explain: None,
    };
    let compiled = finish(front, &o, Mode::Optimised, &choice)?;
    let program = &front.program;
    let kernel = front.target.build(&targets::BuildInput {
        program,
        param_texts: &compiled.param_texts,
        kernel: compiled
            .kernel
            .as_ref()
            .ok_or_else(|| miette!("internal error: no kernel IR"))?,
        source: &compiled.code,
        poison: false,
        via: o.via.as_deref(),
        dynamic: &[],
    })?;
    polyhedral::data::ensure_memory(program, sizes, false, &compiled.folds(), false)?;
    let (inputs, scalars) = generate_data(program, sizes, 0, false);
    let mut rng = <rand_chacha::ChaCha8Rng as rand_chacha::rand_core::SeedableRng>::seed_from_u64(
        0x00c0_ffee_0000_0001,
    );
    let mut start = inputs;
    for t in inout_outputs(program) {
        let shape = TensorData::shape_of(program, t, sizes);
        start[t] = TensorData::random(program.tensors[t].dtype, shape, &mut rng);
    }
    let mut fastest = f64::INFINITY;
    for _ in 0..RUNS_PER_POINT {
        let mut tensors = start.clone();
        let stats = kernel.run(program, sizes, &mut tensors, &scalars)?;
        fastest = fastest.min(stats.run_ms);
    }
    Ok(fastest)
}

/// Writes a search shard's result file (see [`SearchShardResult`]).
#[allow(clippy::too_many_arguments)]
fn write_search_json(
    opts: &CompileOptions,
    front: &Front,
    spec: &TileSpec,
    file: &SourceFile,
    result: &tiling::SearchResult,
    all: &[&tiling::search::Point],
    shard: Shard,
    points: Vec<MeasuredPoint>,
    wall_ms: f64,
    path: &str,
) -> Result<()> {
    use sha2::{Digest, Sha256};
    let program = polyhedral::files::read_text_input(&opts.program)?;
    let params: Vec<String> = opts
        .params
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let params = params.join(",");
    let mut h = Sha256::new();
    let mut field = |b: &[u8]| {
        h.update((b.len() as u64).to_le_bytes());
        h.update(b);
    };
    field(b"polyc-search");
    field(&program);
    field(opts.entry.as_deref().unwrap_or("").as_bytes());
    field(params.as_bytes());
    field(file.text.as_bytes());
    for p in all {
        field(resolve(spec, &result.vars, &p.sizes).to_string().as_bytes());
    }
    let hash: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    let out = SearchShardResult {
        format: SEARCH_RESULT_FORMAT.into(),
        search: SearchInfo {
            program: opts.program.clone(),
            entry: opts.entry.clone(),
            params,
            tile_spec: file.name.clone(),
            hash,
            measured: all.len(),
        },
        shard,
        polyc: env!("CARGO_PKG_VERSION").into(),
        target: front.target.name().to_string(),
        host: crate::pipeline::host::Host::this(),
        wall_ms,
        points,
    };
    let text = serde_json::to_string_pretty(&out).map_err(|e| miette!("{e}"))?;
    polyhedral::files::write_output(
        "--search-json",
        std::path::Path::new(path),
        (text + "\n").as_bytes(),
    )
}
