//! Choosing the fusion tile of a window chain (part of the default policy).
//!
//! Post-tiling fusion recomputes a producer inside the outermost tile of the live-out
//! statement. When the live-out reads the producer's temporary through a window (the conv
//! chain's `Ab(h + kh, w + kw)`), every tile recomputes its halo, so the tile fusion runs
//! at decides how much work is repeated. The default policy gives such a band register
//! tiles and no cache level, so by itself fusion would run at the register tile. This
//! planning step weighs three ways to run the chain with the target's cost figures
//! ([`FuseCost`]) and keeps the cheapest:
//!
//! - **at the register tile**: the producer is recomputed with the register tile's halo
//!   (the conv chain: +125 %), but its reads of its inputs are interleaved with the
//!   consumer's arithmetic, a few rows at a time, so they cost no time of their own;
//! - **at an outer tile**: an `L2` row block (whole along the members after the register
//!   tile's row member, so that inputs stream along whole rows, with as many rows as fit
//!   half of `L2`) holds the register tiles. The halo is small (+12.5 % for 32 rows of
//!   the conv chain), but the producer then runs as a phase of its own in every block: its
//!   inputs, one element of each per recomputed instance, come from DRAM (a kernel reads
//!   them once per call) without any arithmetic to overlap with;
//! - **unfused**: the producer runs as a phase of its own once (its inputs from DRAM), and
//!   the temporary is written to, then read back from, the smallest level that holds it.
//!
//! Only the outer tile changes the spec (an `L2` level added above the register tiles);
//! the fusion pass then decides at the spec's outermost level as always. A built-in call
//! costs what the description's `call_ops` says (one if it says nothing).
//!
//! Measured on the development machine (AMD EPYC, one thread, `scripts/bench`'s harness,
//! 2048², 5×5): with `Ab = A + bias` (3 operations per instance) the register tile ran 100
//! to 108 GFLOP/s, a 32 x 2044 `L2` row block 96 to 98 and 32 x 128 `L1` tiles 62 to 72;
//! with a degree-3 polynomial (10 operations) 106 against 97; with a degree-13 one (41
//! operations) the row block ran 61 against 55 unfused; with `tanh(A + bias)` (a scalar
//! libm call, 1493 operations with the CPU description's `call_ops`) unfused ran 4.6,
//! the row block 4.1 and the register tile 2.1. The model picks the faster in all four.

use crate::analysis::{live_out_band, tile_footprint, BandInfo};
use crate::cx::TileCx;
use crate::fuse::{ops_per_instance, seconds, FuseCost};
use crate::spec::{fixed_level, SizeSpec, TileSpec};
use polyhedral::ir::{AssignOp, StmtBody, TensorRole};
use polyhedral::isl::ffi::count::set_count;
use schedule_tree::Buffer;

/// A producer of a temporary the live-out band reads through a window.
struct Producer {
    /// Statement number.
    stmt: usize,
    /// The temporary it writes.
    temp: usize,
    /// Its instances (one per element of the temporary).
    instances: u64,
    /// Operations per instance ([`ops_per_instance`]).
    ops: u64,
    /// Bytes of one element of each tensor it reads (its inputs).
    input_bytes: u64,
}

/// One way to run the chain, with its modelled time.
struct Way {
    text: String,
    seconds: f64,
}

/// The live-out's register tile: one register level per member with a fixed size, or
/// `None` when its spec is anything else.
fn register_sizes(cx: &TileCx, out: &TileSpec, si: usize) -> Option<Vec<i64>> {
    let mut reg = Vec::new();
    for d in &out.stmts[si].dims {
        match d.levels.as_slice() {
            [l] if cx.is_register_file(l.buffer) => match l.size {
                SizeSpec::Fixed(v) => reg.push(v),
                _ => return None,
            },
            _ => return None,
        }
    }
    Some(reg)
}

/// Runs of each producer with tiles of `sizes` over extents `ext`: the tiles times the
/// temporary's box per tile (`fps`), or its instances where the box is unknown.
fn recomputed_runs(
    ext: &[i64],
    sizes: &[i64],
    producers: &[Producer],
    fps: &[crate::analysis::TensorFootprint],
) -> Vec<u64> {
    let tiles: u64 = ext
        .iter()
        .zip(sizes)
        .map(|(e, s)| (e + s - 1) / s)
        .product::<i64>() as u64;
    producers
        .iter()
        .map(|p| {
            fps.iter()
                .find(|f| f.tensor_id == p.temp)
                .and_then(|f| f.elements)
                .map_or(p.instances, |e| tiles * e)
        })
        .collect()
}

/// What running the producers `runs` times costs beyond one run each: the text per
/// producer and the seconds at `gops` operations per second.
fn recompute_cost(cx: &TileCx, producers: &[Producer], runs: &[u64], gops: f64) -> (String, f64) {
    let mut parts = Vec::new();
    let mut s = 0.0;
    for (p, &r) in producers.iter().zip(runs) {
        let extra = r.saturating_sub(p.instances);
        s += extra as f64 * p.ops as f64 / gops;
        parts.push(format!(
            "{} recomputed +{:.1}% ({extra} instances x {} ops)",
            cx.scop.stmt_names[p.stmt],
            100.0 * extra as f64 / p.instances.max(1) as f64,
            p.ops
        ));
    }
    (parts.join(", "), s)
}

/// The producers run apart, before the live-out: their inputs from DRAM (`dram` bytes per
/// second) and their temporaries written and read back through the cheapest home.
fn unfused_way(
    cx: &TileCx,
    producers: &[Producer],
    elem: &[u64],
    cost: &FuseCost,
    dram: f64,
) -> Way {
    let names = |p: &Producer| cx.scop.stmt_names[p.stmt].clone();
    let bytes: u64 = producers.iter().map(|p| p.instances * p.input_bytes).sum();
    let phase = bytes as f64 / dram;
    let temps: Vec<(String, u64)> = producers
        .iter()
        .map(|p| {
            (
                cx.program.tensors[p.temp].name.clone(),
                p.instances * elem[p.temp],
            )
        })
        .collect();
    let traffic = cost.weigh(Vec::new(), &temps);
    let saved: Vec<String> = traffic
        .saved
        .iter()
        .map(|(t, b, home)| format!("{t} written and read back through {home}, {b} bytes"))
        .collect();
    Way {
        text: format!(
            "unfused: {} apart: {} inputs, {bytes} bytes from DRAM, {}; {}, {}: {}",
            match producers {
                [p] => format!("{} runs", names(p)),
                ps => format!(
                    "{} run",
                    ps.iter().map(names).collect::<Vec<_>>().join(", ")
                ),
            },
            if producers.len() == 1 { "its" } else { "their" },
            seconds(phase),
            saved.join(", "),
            seconds(traffic.saved_s),
            seconds(phase + traffic.saved_s)
        ),
        seconds: phase + traffic.saved_s,
    }
}

/// Tile sizes as `polyc explain` writes them: `4 x 64`.
fn join_dims(s: &[i64]) -> String {
    s.iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(" x ")
}

/// Chooses where the live-out band of `out` fuses a producer it reads through a window
/// (see the module documentation), adding an `L2` row block when that is cheapest.
/// Returns the lines `polyc explain` prints; none when the chain does not qualify (no
/// window read, a cache level already outermost, symbolic extents, a producer that is a
/// reduction or reads another temporary).
pub(crate) fn plan_fusion_tile(
    cx: &TileCx,
    bands: &[BandInfo],
    out: &mut TileSpec,
    (l2_buf, l2): (Buffer, u64),
    elem: &[u64],
    cost: &FuseCost,
) -> miette::Result<Vec<String>> {
    let scop = cx.scop;
    let Some(bi) = live_out_band(cx.scop, bands) else {
        return Ok(Vec::new());
    };
    let band = &bands[bi];
    let Some(si) = out
        .stmts
        .iter()
        .position(|st| band.stmts.iter().any(|&s| scop.stmt_names[s] == st.stmt))
    else {
        return Ok(Vec::new());
    };
    let Some(reg) = register_sizes(cx, out, si) else {
        return Ok(Vec::new());
    };
    let n = reg.len();
    let Some(ext) = band.extents[..n]
        .iter()
        .copied()
        .collect::<Option<Vec<i64>>>()
    else {
        return Ok(Vec::new());
    };
    let Some(producers) = window_producers(cx, band, n, cost)? else {
        return Ok(Vec::new());
    };
    // The outer tile: members before the register tile's row member at their register
    // size, the row member as many rows as fit half of L2, the members after it whole.
    let Some(u) = reg.iter().position(|&r| r > 1) else {
        return Ok(Vec::new());
    };
    let windows = |s: &[i64]| -> Vec<Option<i64>> {
        (0..band.n_members()).map(|m| s.get(m).copied()).collect()
    };
    let mut outer: Vec<i64> = (0..n)
        .map(|m| match m {
            _ if m < u => reg[m],
            _ if m == u => (ext[u].min(256) / reg[u]).max(1) * reg[u],
            _ => ext[m],
        })
        .collect();
    // The outer tile's footprints, kept for its recomputation below.
    let outer_fps = loop {
        let fps = tile_footprint(cx.ctx, scop, bands, bi, &windows(&outer), elem)?;
        let bytes: Option<u64> = fps.iter().map(|f| f.bytes).sum();
        match bytes {
            Some(b) if b <= l2 / 2 => break fps,
            Some(_) if outer[u] > reg[u] => outer[u] = ((outer[u] / 2) / reg[u]).max(1) * reg[u],
            _ => return Ok(Vec::new()),
        }
    };
    if outer[u] >= ext[u] || outer == reg {
        return Ok(Vec::new());
    }
    let gops = cost.gops * 1e9;
    let dram = cost
        .homes
        .last()
        .map_or(f64::INFINITY, |h| h.gbytes_per_s * 1e9);
    let runs = |sizes: &[i64], fps: &[crate::analysis::TensorFootprint]| {
        recomputed_runs(&ext[..n], sizes, &producers, fps)
    };
    let names = |p: &Producer| scop.stmt_names[p.stmt].clone();
    let recompute = |runs: &[u64]| recompute_cost(cx, &producers, runs, gops);
    // At the register tile.
    let (text, s) = recompute(&runs(
        &reg,
        &tile_footprint(cx.ctx, scop, bands, bi, &windows(&reg), elem)?,
    ));
    let at_reg = Way {
        text: format!(
            "at the {} register tile: {text}, {}; its inputs stream alongside the arithmetic",
            join_dims(&reg),
            seconds(s)
        ),
        seconds: s,
    };
    // At the outer tile.
    let outer_runs = runs(&outer, &outer_fps);
    let (text, s) = recompute(&outer_runs);
    let bytes: u64 = producers
        .iter()
        .zip(&outer_runs)
        .map(|(p, &r)| r * p.input_bytes)
        .sum();
    let phase = bytes as f64 / dram;
    let at_outer = Way {
        text: format!(
            "at an outer {} tile of {}: {text}, {}, and run apart from the arithmetic in every \
             tile: its inputs, {bytes} bytes from DRAM, {}: {}",
            l2_buf.name(),
            join_dims(&outer),
            seconds(s),
            seconds(phase),
            seconds(s + phase)
        ),
        seconds: s + phase,
    };
    let unfused = unfused_way(cx, &producers, elem, cost, dram);
    let best = [&at_reg, &at_outer, &unfused]
        .into_iter()
        .min_by(|a, b| a.seconds.total_cmp(&b.seconds))
        .map(|w| w.seconds)
        .unwrap_or(f64::INFINITY);
    let temp_names: Vec<String> = producers
        .iter()
        .map(|p| format!("{} (from {})", cx.program.tensors[p.temp].name, names(p)))
        .collect();
    let mut lines = vec![format!(
        "{} reads {} through a window: where to fuse",
        out.stmts[si].stmt,
        temp_names.join(", ")
    )];
    for w in [&at_reg, &at_outer, &unfused] {
        lines.push(format!("  {}", w.text));
    }
    let verdict = if at_outer.seconds <= best {
        for (m, d) in out.stmts[si].dims.iter_mut().enumerate() {
            d.levels.insert(0, fixed_level(outer[m], l2_buf));
        }
        format!(
            "chosen: the outer {} tile of {}, with the register tiles inside it",
            l2_buf.name(),
            join_dims(&outer)
        )
    } else if at_reg.seconds <= best {
        "chosen: the register tile (no outer tile: the cheapest place for the producer is \
         interleaved with the arithmetic)"
            .to_string()
    } else {
        "chosen: not fusing (no outer tile; the fusion pass weighs the register tile again, \
         with the same figures)"
            .to_string()
    };
    lines.push(format!("  {verdict}"));
    Ok(lines)
}

/// The producers of the temporaries the band's statements read through a window: every
/// read of a temporary written outside the band involves every one of the first `n`
/// members (a read that leaves one out is [`crate::default`]'s row-block case). `None`
/// when there is none, or when one is not a plain assignment with one instance per
/// element, or reads a temporary itself.
fn window_producers(
    cx: &TileCx,
    band: &BandInfo,
    n: usize,
    cost: &FuseCost,
) -> miette::Result<Option<Vec<Producer>>> {
    let scop = cx.scop;
    let mut out: Vec<Producer> = Vec::new();
    for &s in &band.stmts {
        for a in &scop.stmt_reads[s] {
            let t = a.tensor;
            if cx.program.tensors[t].role != TensorRole::Temp {
                continue;
            }
            let writers: Vec<usize> = (0..scop.stmt_names.len())
                .filter(|&p| scop.stmt_writes[p].tensor == t)
                .collect();
            if writers.iter().all(|p| band.stmts.contains(p)) {
                continue;
            }
            if (0..n).any(|m| !a.index.iter().any(|ix| ix.uses_iter(m))) {
                return Ok(None);
            }
            let [p] = writers.as_slice() else {
                return Ok(None);
            };
            if out.iter().any(|q| q.stmt == *p) {
                continue;
            }
            let stmt = &cx.program.stmts[*p];
            if !matches!(stmt.body, StmtBody::Update(AssignOp::Assign, _)) {
                return Ok(None);
            }
            let instances = set_count(&scop.stmt_domains[*p]);
            let elements = set_count(&scop.tensor_extents[t]);
            let Some(instances) = instances.filter(|i| Some(*i) == elements) else {
                return Ok(None);
            };
            let mut inputs: Vec<usize> = Vec::new();
            for r in &scop.stmt_reads[*p] {
                if cx.program.tensors[r.tensor].role == TensorRole::Temp {
                    return Ok(None);
                }
                if !inputs.contains(&r.tensor) {
                    inputs.push(r.tensor);
                }
            }
            out.push(Producer {
                stmt: *p,
                temp: t,
                instances,
                ops: ops_per_instance(cx, *p, cost),
                input_bytes: inputs
                    .iter()
                    .map(|&i| cx.program.tensors[i].dtype.size_bytes() as u64)
                    .sum(),
            });
        }
    }
    Ok((!out.is_empty()).then_some(out))
}
