//! The default tiling policy, used for statements without a spec.

use crate::analysis::{collect_bands, permutable_prefix, tile_footprint, BandInfo};
use crate::spec::{DimSpec, LevelSize, SizeSpec, StmtSpec, TileSpec};
use crate::tile::TileCx;
use polyhedral::deps::DepKind;
use polyhedral::ir::Span;
use schedule_tree::{Buffer, ScheduleTree};

/// The rule [`default_spec`] follows, in words (for `--help` texts and reports).
pub const DEFAULT_POLICY: &str = "\
every outermost band is tiled over its permutable prefix (bands inside other bands are \
left alone), unless all the data the band touches already fits in half of L1; trailing \
members with fewer than 8 iterations, or whose tile would cover their whole extent, are \
left whole. L1 sizes start at the largest power of two <= min(extent, 256) per member; \
while the footprint of one L1 tile exceeds half of L1, the largest size is halved (the \
outermost one on ties), giving square-ish power-of-two tiles clamped to the extents. L2 \
sizes are the L1 sizes times the largest power of two f such that the L2 tile \
(min(f * L1 size, extent) per member) fits half of L2; the L2 level is dropped when it \
equals the L1 tile or covers the whole band. Bands with symbolic extents, no tilable \
member, or no tile that fits are left untiled. The spec names a live-out statement of \
the band (one whose results no other statement of the band reads or overwrites).";

/// Inner band members with fewer iterations than this are not tiled by the default policy.
const MIN_TILED_EXTENT: i64 = 8;

/// Builds a spec for the bands that `given` does not touch, following [`DEFAULT_POLICY`]
/// with the `L1` and (if present) `L2` capacities of `cx`. Without an `L1` capacity the
/// result is empty. Append its statements to `given` to tile everything:
/// `spec.stmts.extend(default.stmts)`.
pub fn default_spec(
    tree: &ScheduleTree,
    cx: &TileCx,
    given: Option<&TileSpec>,
) -> miette::Result<TileSpec> {
    let cap = |b: Buffer| cx.capacities.iter().find(|(x, _)| *x == b).map(|(_, c)| *c);
    let buffers: Vec<Buffer> = cx.capacities.iter().map(|(b, _)| *b).collect();
    let mut out = TileSpec {
        stmts: Vec::new(),
        buffers: buffers.clone(),
    };
    let Some(l1) = cap(Buffer::L1) else {
        return Ok(out);
    };
    let l2 = cap(Buffer::L2);
    let (_s, bands) = collect_bands(cx.ctx, cx.scop, tree)?;
    let elem = cx.elem_bytes();
    let names = &cx.scop.stmt_names;
    for (bi, band) in bands.iter().enumerate() {
        if !band.outer.is_empty() || band.stmts.is_empty() {
            continue;
        }
        if let Some(g) = given {
            if band.stmts.iter().any(|&s| g.get(&names[s]).is_some()) {
                continue;
            }
        }
        let (mut k, _) = permutable_prefix(cx.ctx, cx.deps, band, band.n_members())?;
        if k == 0 || band.extents[..k].iter().any(|e| e.is_none()) {
            continue;
        }
        // Inner members with tiny extents (a reduction over a 3x3 window, the position of
        // fused statements) gain nothing from tiles: leave them whole.
        while k > 0 && band.extents[k - 1].is_some_and(|e| e < MIN_TILED_EXTENT) {
            k -= 1;
        }
        if k == 0 {
            continue;
        }
        let ext: Vec<i64> = band.extents[..k].iter().map(|e| e.unwrap_or(1)).collect();
        let windows = |s: &[i64]| -> Vec<Option<i64>> {
            (0..band.n_members()).map(|m| s.get(m).copied()).collect()
        };
        let bytes = |s: &[i64]| -> miette::Result<Option<u64>> {
            let fps = tile_footprint(cx.ctx, cx.scop, &bands, bi, &windows(s), &elem)?;
            Ok(fps.iter().map(|f| f.bytes).sum())
        };
        // A band whose whole data already fits in half of L1 gains nothing from tiles.
        if matches!(bytes(&ext)?, Some(b) if b <= l1 / 2) {
            continue;
        }
        let mut s1: Vec<i64> = ext.iter().map(|&e| pow2_floor(e.min(256))).collect();
        let fits_l1 = loop {
            match bytes(&s1)? {
                None => break false,
                Some(b) if b <= l1 / 2 => break true,
                Some(_) => {}
            }
            let Some(m) = largest(&s1) else { break false };
            if s1[m] <= 1 {
                break false;
            }
            s1[m] /= 2;
        };
        if !fits_l1 {
            continue;
        }
        for (s, e) in s1.iter_mut().zip(&ext) {
            *s = (*s).min(*e);
        }
        let mut s2: Option<Vec<i64>> = None;
        if let Some(l2) = l2 {
            let mut f = 2;
            loop {
                let cand: Vec<i64> = s1.iter().zip(&ext).map(|(s, e)| (s * f).min(*e)).collect();
                if s2.as_ref() == Some(&cand) {
                    break;
                }
                match bytes(&cand)? {
                    Some(b) if b <= l2 / 2 => s2 = Some(cand),
                    _ => break,
                }
                if f > 1 << 20 {
                    break;
                }
                f *= 2;
            }
            if let Some(v) = &s2 {
                if *v == s1 || *v == ext {
                    s2 = None;
                }
            }
        }
        // Trailing members whose tiles cover their whole extent at every level would only
        // add a one-iteration tile loop: leave them out of the spec (untiled).
        let whole = |m: usize| s1[m] >= ext[m] && s2.as_ref().is_none_or(|v| v[m] >= ext[m]);
        while k > 0 && whole(k - 1) {
            k -= 1;
        }
        if k == 0 {
            continue;
        }
        let stmt = live_out(cx, band)?;
        let lv = |size: i64, buffer: Buffer| LevelSize {
            size: SizeSpec::Fixed(size),
            buffer,
            span: Span::default(),
            size_span: Span::default(),
            buffer_span: Span::default(),
        };
        let dims = (0..k)
            .map(|m| {
                let mut levels = Vec::new();
                if let Some(v) = &s2 {
                    levels.push(lv(v[m], Buffer::L2));
                }
                levels.push(lv(s1[m], Buffer::L1));
                DimSpec {
                    levels,
                    span: Span::default(),
                }
            })
            .collect();
        out.stmts.push(StmtSpec {
            stmt: names[stmt].clone(),
            stmt_span: Span::default(),
            dims,
            span: Span::default(),
        });
    }
    Ok(out)
}

fn pow2_floor(x: i64) -> i64 {
    let mut p = 1;
    while p * 2 <= x {
        p *= 2;
    }
    p
}

/// Index of the largest value (the first on ties).
fn largest(v: &[i64]) -> Option<usize> {
    let max = *v.iter().max()?;
    v.iter().position(|&x| x == max)
}

/// A statement of the band whose results no other statement of the band reads or
/// overwrites (the last one if several; the band's last statement if none).
fn live_out(cx: &TileCx, band: &BandInfo) -> miette::Result<usize> {
    let mut found = None;
    for &s in &band.stmts {
        let mut consumed = false;
        for &t in &band.stmts {
            if t == s {
                continue;
            }
            for kind in [DepKind::Raw, DepKind::Waw] {
                let m = cx.deps.between(kind, s, t)?;
                if !m.is_empty().map_err(|e| miette::miette!("{e}"))? {
                    consumed = true;
                }
            }
        }
        if !consumed {
            found = Some(s);
        }
    }
    Ok(found.unwrap_or_else(|| *band.stmts.last().unwrap_or(&0)))
}
