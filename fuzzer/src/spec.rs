//! Random valid tile specs, sized from the scheduled tree's bands.
//!
//! A spec names statements and gives one entry per enclosing loop dimension, outermost
//! first, across nested bands (see `tiling::spec`). To be accepted it must: give at most
//! as many entries as dimensions enclose the statement, tile only a band's permutable
//! prefix, agree with every other spec on a shared band, and list the levels of one
//! dimension from outer to inner buffer. [`random_spec`] builds one plan per band (how
//! many leading members to tile, and their sizes per level) and derives every named
//! statement's entries from the plans of its band chain, so specs sharing a band agree by
//! construction. Sizes run from 1 to one past the extent (a size above the extent is
//! clamped with a note). Capacity is not planned: the target rejects a spec that
//! overflows a buffer, and the case then runs with the default policy (counted apart).

use polyc::pipeline::stages::Front;
use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use schedule_tree::Buffer;
use tiling::analysis::{collect_bands, permutable_prefix, BandInfo};
use tiling::TileCx;

/// One band's plan: the entries of its first members (each a list of `size@buffer`).
type Plan = Vec<Vec<(i64, Buffer)>>;

/// A random valid tile spec for the scheduled tree of `front`, or `None` when there is
/// nothing to tile (no band, or the random choice tiled nothing). Errors are isl's.
pub fn random_spec(front: &Front, rng: &mut ChaCha8Rng) -> miette::Result<Option<String>> {
    let levels = front.target.desc().levels();
    let order: Vec<Buffer> = front.target.desc().buffer_order();
    if order.is_empty() {
        return Ok(None);
    }
    let cx = TileCx {
        ctx: &front.ctx,
        program: &front.program,
        scop: &front.scop,
        deps: &front.deps,
        levels: &levels,
    };
    let (_, bands) = collect_bands(cx.ctx, cx.scop, front.scheduled())?;
    // A systolic array (Gemmini) tiles in multiples of its dimension.
    let granule = front
        .target
        .desc()
        .array
        .as_ref()
        .map_or(1, |a| i64::from(a.dim.max(1)));
    let mut plans: Vec<Plan> = Vec::new();
    for b in &bands {
        let (prefix, _) = permutable_prefix(cx.ctx, cx.deps, b, b.n_members())?;
        let tiled = if prefix == 0 || rng.gen_bool(0.2) {
            0
        } else {
            rng.gen_range(1..=prefix)
        };
        plans.push(
            (0..tiled)
                .map(|m| member_plan(b, m, &order, granule, rng))
                .collect(),
        );
    }
    let mut lines = Vec::new();
    for (s, name) in front.scop.stmt_names.iter().enumerate() {
        let chain: Vec<usize> = (0..bands.len())
            .filter(|&b| bands[b].stmts.contains(&s))
            .collect();
        // Name the statement with probability 1/2, or always when it is the last
        // statement of its outermost band (the usual live-out one).
        let last_of_band = chain
            .first()
            .is_some_and(|&b| bands[b].stmts.last() == Some(&s));
        if !(last_of_band || rng.gen_bool(0.5)) {
            continue;
        }
        let mut entries = Vec::new();
        for &b in &chain {
            entries.extend(plans[b].iter().cloned());
            if plans[b].len() < bands[b].n_members() {
                break;
            }
        }
        if entries.is_empty() {
            continue;
        }
        let text: Vec<String> = entries
            .iter()
            .map(|levels| {
                levels
                    .iter()
                    .map(|(size, buf)| format!("{size}@{buf}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        lines.push(format!("{name}: {}", text.join(", ")));
    }
    Ok((!lines.is_empty()).then(|| lines.join("\n") + "\n"))
}

/// The levels of one member: one or two buffers in the target's order, the outer size a
/// multiple of the inner one (or, sometimes, any size at least the inner one); sizes are
/// multiples of `granule` (1, or a systolic array's dimension).
fn member_plan(
    b: &BandInfo,
    m: usize,
    order: &[Buffer],
    granule: i64,
    rng: &mut ChaCha8Rng,
) -> Vec<(i64, Buffer)> {
    let ext = b.extents.get(m).copied().flatten().unwrap_or(16).max(1);
    let size = |rng: &mut ChaCha8Rng| -> i64 {
        let s = match rng.gen_range(0..6) {
            0 => 1,
            1 => ext,
            2 => ext + 1,
            _ => rng.gen_range(1..=ext.max(2)),
        };
        ((s + granule - 1) / granule) * granule
    };
    let mut bufs: Vec<Buffer> = order.to_vec();
    bufs.shuffle(rng);
    bufs.truncate(if order.len() > 1 && rng.gen_bool(0.3) {
        2
    } else {
        1
    });
    bufs.sort_by_key(|b| order.iter().position(|x| x == b));
    let inner = size(rng);
    match bufs.as_slice() {
        [outer, inner_buf] => {
            let big = if rng.gen_bool(0.8) {
                inner * rng.gen_range(1..=3)
            } else {
                size(rng).max(inner)
            };
            vec![(big, *outer), (inner, *inner_buf)]
        }
        _ => vec![(inner, bufs[0])],
    }
}
