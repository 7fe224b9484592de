//! The tile-size search: resolving the search entries of a tile spec (`?`, `[lo..hi]`,
//! `{a, b, c}`) to fixed sizes.
//!
//! ## Candidates
//!
//! Every search entry (one `size@buffer` whose size is not fixed) is a *search variable*
//! with a list of candidate sizes ([`entry_candidates`]), from the extent of the band
//! member the entry tiles:
//!
//! - `?`: the powers of two below the extent, and the extent itself; with a symbolic
//!   extent, the powers of two from 1 to [`UNKNOWN_EXTENT`] (1024).
//! - `[lo..hi]`: every integer of the range when it holds at most 16 values, else every
//!   power of two in the range plus `lo` and `hi`.
//! - `{a, b, c}`: exactly the set.
//!
//! Sizes above the extent all clamp to the same tile, so only one of them is kept: the
//! extent itself when the entry allows it (`?`, or a range that contains it), else the
//! smallest size of the set above the extent (tiling then clamps it, with a note).
//!
//! A *point* gives every variable one candidate. Points whose levels do not shrink from
//! outer to inner in some dimension (an `L1` size above the `L2` size that encloses it,
//! compared after clamping) are skipped: they are not counted as candidates.
//!
//! ## Legality
//!
//! The spec is first planned with every search entry at size 1 (the smallest tile). Errors
//! there (unknown statements, too many entries, a dependence that forbids tiling, or a
//! fixed part of the spec whose footprint does not fit even with size 1) do not depend on
//! the search and are reported as they are. A point is then legal when every tile of every
//! level fits its buffer: the footprints are computed exactly with
//! [`crate::analysis::tile_footprint`] (memoised per band, level and window), as
//! [`crate::tile()`] does. Like tiling, the search does not check register files (`reg`,
//! `register`): promotion puts only what fits there. The winner is planned once more with the real tiling code before
//! it is returned.
//!
//! ## The cost model
//!
//! For each tiled band and each level `B` it is tiled at, the bytes moved into `B` are
//! `(number of B tiles) x (footprint of one B tile, summed over tensors)`. The number of
//! tiles is the product over the band's members of `ceil(extent / window)` (the window at
//! `B` is the member's size at `B`, else at the nearest outer level, else the whole
//! extent), times the number of points of the enclosing bands. A symbolic extent counts as
//! [`UNKNOWN_EXTENT`]; a footprint that is not a fixed-size box (symbolic sizes) counts as
//! zero bytes. The cost of a point is the sum over bands and levels of the bytes moved,
//! weighted by [`LEVEL_WEIGHT`] (4) per level outward from the target's innermost buffer:
//! on the CPU (`L3`, `L2`, `L1`, `reg`) a byte moved into `reg` costs 1, into `L1` 4, into
//! `L2` 16 and into `L3` 64, because an outer buffer is filled from a slower one.
//!
//! Points are ranked by cost, then by fewer tiles (summed over levels), then by
//! lexicographically larger sizes (the variables in file order).
//!
//! ## Strategy
//!
//! When the cross product of the candidate lists has at most [`SearchOptions::budget`]
//! points (default [`DEFAULT_BUDGET`], 512), every point is evaluated
//! ([`Strategy::Exhaustive`]). Otherwise a deterministic coordinate descent runs
//! ([`Strategy::CoordinateDescent`]): it starts from the middle candidate of every variable
//! (the smallest candidates when that point is not legal); then, as long as it improves,
//! it moves to the best legal point that changes one variable to a neighbouring candidate
//! (steepest descent, which grows sizes evenly); finally, variable by variable in file
//! order, it moves to the best legal candidate with the others fixed, repeating full passes
//! until a pass changes nothing (at most [`MAX_PASSES`] passes). Ties and orders are fixed,
//! so the result is deterministic; it is a local optimum of the model.

// Located errors are built once per failed search.
#![allow(clippy::result_large_err)]

use crate::analysis::{tile_footprint, BandInfo};
use crate::cx::TileCx;
use crate::spec::{SizeSpec, TileSpec};
use crate::tile::{plan, BandPlan};
use polyhedral::diag::SourceFile;
use polyhedral::ir::Span;
use schedule_tree::{level_of, Buffer, ScheduleTree};
use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap};
use std::fmt;

/// The default [`SearchOptions::budget`]: the most points evaluated exhaustively.
pub const DEFAULT_BUDGET: usize = 512;

/// The cost of a byte grows by this factor per level outward (see the module docs).
pub const LEVEL_WEIGHT: u128 = 4;

/// The extent assumed for a symbolic band member (candidates of `?`, tile counts).
pub const UNKNOWN_EXTENT: i64 = 1024;

/// The most full passes of the coordinate descent.
pub const MAX_PASSES: usize = 64;

/// Ranges with at most this many values offer every integer as a candidate.
const SMALL_RANGE: i64 = 16;

/// How the search runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SearchOptions {
    /// Enumerate every point when there are at most this many; otherwise run a coordinate
    /// descent.
    pub budget: usize,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions {
            budget: DEFAULT_BUDGET,
        }
    }
}

/// How the points were visited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Every point of the cross product.
    Exhaustive,
    /// Coordinate descent from the middle candidates (the cross product was over budget).
    CoordinateDescent,
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Strategy::Exhaustive => "exhaustive",
            Strategy::CoordinateDescent => "coordinate descent",
        })
    }
}

/// One search entry of the spec and its candidate sizes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchVar {
    /// The statement whose spec holds the entry (`S_1`).
    pub stmt: String,
    /// Index of that statement's spec in [`TileSpec::stmts`].
    pub spec_index: usize,
    /// The entry (dimension) index in the statement's list, 0-based.
    pub dim: usize,
    /// The level index within the entry, 0-based (outer first).
    pub level: usize,
    /// The buffer of the level.
    pub buffer: Buffer,
    /// The size as written.
    pub size: SizeSpec,
    /// The size's text in the spec file.
    pub span: Span,
    /// The extent of the band member the entry tiles (`None`: symbolic).
    pub extent: Option<i64>,
    /// The candidate sizes, ascending.
    pub candidates: Vec<i64>,
}

impl SearchVar {
    /// `S_1 dimension 2 [64..1024]@L2`.
    pub fn describe(&self) -> String {
        format!(
            "`{}` dimension {} `{}@{}`",
            self.stmt,
            self.dim + 1,
            self.size,
            self.buffer
        )
    }
}

/// The model's estimate for one point.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Cost {
    /// Σ over bands and levels of bytes moved × the level's weight.
    pub weighted: u128,
    /// Σ over bands and levels of the number of tiles.
    pub tiles: u128,
    /// Bytes moved into each level (unweighted), in the target's order (levels no band is
    /// tiled at are left out).
    pub moved: Vec<(Buffer, u128)>,
}

/// One legal point: a size per search variable, and its cost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Point {
    /// One size per [`SearchResult::vars`] entry.
    pub sizes: Vec<i64>,
    /// The model's cost.
    pub cost: Cost,
}

/// What [`search`] found.
#[derive(Clone, Debug)]
pub struct SearchResult {
    /// The search variables, in file order.
    pub vars: Vec<SearchVar>,
    /// How the points were visited.
    pub strategy: Strategy,
    /// The size of the cross product of the candidate lists (saturating).
    pub space: u128,
    /// Points evaluated (inner-not-above-outer points only).
    pub candidates: usize,
    /// Points that fit every buffer.
    pub legal: usize,
    /// The legal points, best first (never empty).
    pub ranked: Vec<Point>,
}

impl SearchResult {
    /// The best point of the model.
    pub fn best(&self) -> &Point {
        &self.ranked[0]
    }
    /// `37 candidates, 29 legal (model, exhaustive)`.
    pub fn summary(&self, how: &str) -> String {
        format!(
            "{} candidate{}, {} legal ({how}, {})",
            self.candidates,
            if self.candidates == 1 { "" } else { "s" },
            self.legal,
            self.strategy
        )
    }
    /// The best points of the model, one line each (`#1 S_1: … cost …`), at most `k`.
    pub fn ranking_text(&self, spec: &TileSpec, k: usize) -> String {
        let mut s = String::new();
        for (i, p) in self.ranked.iter().take(k).enumerate() {
            let resolved = resolve(spec, &self.vars, &p.sizes);
            let moved: Vec<String> = p
                .cost
                .moved
                .iter()
                .map(|(b, v)| format!("{b} {v}"))
                .collect();
            s.push_str(&format!(
                "  #{} {}  cost {} (bytes moved: {}; {} tiles)\n",
                i + 1,
                searched_text(&resolved, &self.vars),
                p.cost.weighted,
                moved.join(", "),
                p.cost.tiles
            ));
        }
        s
    }
}

/// The candidates of one entry for a band member of `extent` (see the module docs),
/// ascending. A fixed size gives itself.
pub fn entry_candidates(size: &SizeSpec, extent: Option<i64>) -> Vec<i64> {
    let pow2_in = |lo: i64, hi: i64| -> Vec<i64> {
        let mut v = Vec::new();
        let mut p: i64 = 1;
        while p <= hi {
            if p >= lo {
                v.push(p);
            }
            match p.checked_mul(2) {
                Some(n) => p = n,
                None => break,
            }
        }
        v
    };
    let mut raw: BTreeSet<i64> = BTreeSet::new();
    match size {
        SizeSpec::Fixed(v) => {
            raw.insert(*v);
        }
        SizeSpec::Any => {
            let top = extent.unwrap_or(UNKNOWN_EXTENT).max(1);
            raw.extend(pow2_in(1, top));
            if extent.is_some() {
                raw.insert(top);
            }
        }
        SizeSpec::Range { lo, hi } => {
            if hi.saturating_sub(*lo) < SMALL_RANGE {
                raw.extend(*lo..=*hi);
            } else {
                raw.extend(pow2_in(*lo, *hi));
                raw.insert(*lo);
                raw.insert(*hi);
            }
        }
        SizeSpec::Choice(v) => raw.extend(v.iter().copied()),
    }
    let Some(ext) = extent else {
        return raw.into_iter().collect();
    };
    let mut out: Vec<i64> = raw.iter().copied().filter(|&v| v <= ext).collect();
    if let Some(&smallest_above) = raw.iter().find(|&&v| v > ext) {
        let allows_extent = match size {
            SizeSpec::Any => true,
            SizeSpec::Range { lo, hi } => *lo <= ext && ext <= *hi,
            _ => false,
        };
        let rep = if allows_extent { ext } else { smallest_above };
        if !out.contains(&rep) {
            out.push(rep);
        }
    }
    out
}

/// `spec` with every search variable replaced by its size in `sizes` (one per `vars`
/// entry, in order). Spans are kept, so later diagnostics still point into the spec file.
pub fn resolve(spec: &TileSpec, vars: &[SearchVar], sizes: &[i64]) -> TileSpec {
    let mut out = spec.clone();
    for (v, &size) in vars.iter().zip(sizes) {
        if let Some(l) = out
            .stmts
            .get_mut(v.spec_index)
            .and_then(|s| s.dims.get_mut(v.dim))
            .and_then(|d| d.levels.get_mut(v.level))
        {
            l.size = SizeSpec::Fixed(size);
        }
    }
    out
}

/// The statements of `resolved` that held search variables, as one line
/// (`S_1: 32@L2 8@reg, 256@L2`; several statements are joined by `; `).
pub fn searched_text(resolved: &TileSpec, vars: &[SearchVar]) -> String {
    let mut seen: Vec<usize> = vars.iter().map(|v| v.spec_index).collect();
    seen.dedup();
    seen.iter()
        .filter_map(|&i| resolved.stmts.get(i))
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join("; ")
}

/// The search variables of `spec`, in file order, without candidates or extents.
fn collect_vars(spec: &TileSpec) -> Vec<SearchVar> {
    let mut v = Vec::new();
    for (si, s) in spec.stmts.iter().enumerate() {
        for (d, dim) in s.dims.iter().enumerate() {
            for (k, l) in dim.levels.iter().enumerate() {
                if l.size.fixed().is_none() {
                    v.push(SearchVar {
                        stmt: s.stmt.clone(),
                        spec_index: si,
                        dim: d,
                        level: k,
                        buffer: l.buffer,
                        size: l.size.clone(),
                        span: l.size_span,
                        extent: None,
                        candidates: Vec::new(),
                    });
                }
            }
        }
    }
    v
}

/// Where a level's size comes from in a point.
#[derive(Clone, Copy, Debug)]
enum Src {
    Fixed(i64),
    Var(usize),
}

/// One planned band, with its member levels as sources.
struct BandModel {
    /// The preliminary plan (sizes of search entries are placeholders).
    plan: BandPlan,
    /// Per member, per level: the buffer and where its size comes from.
    members: Vec<Vec<(Buffer, Src)>>,
    /// The spec statement that gave the sizes (for messages).
    stmt: String,
    /// Points of the enclosing bands (product of their extents).
    outer_points: u128,
}

/// What one point gives.
#[derive(Clone, Debug)]
enum Outcome {
    /// Some dimension's inner size exceeds its outer size.
    Skip(String),
    /// A tile does not fit its buffer.
    Illegal(String),
    /// Fits everywhere.
    Legal(Cost),
}

struct Evaluator<'a> {
    cx: &'a TileCx<'a>,
    bands: &'a [BandInfo],
    models: Vec<BandModel>,
    order: Vec<Buffer>,
    elem_bytes: Vec<u64>,
    /// (model, level, windows) → total bytes of one tile that the level holds.
    footprints: HashMap<FootprintKey, Option<u64>>,
}

/// A memoised footprint: the band model, the level and the windows.
type FootprintKey = (usize, Buffer, Vec<Option<i64>>);

fn ext_or_unknown(e: Option<i64>) -> i64 {
    e.unwrap_or(UNKNOWN_EXTENT).max(1)
}

impl Evaluator<'_> {
    fn weight(&self, b: Buffer) -> u128 {
        let n = self.order.len();
        let rank = self.order.iter().position(|x| *x == b).unwrap_or(n - 1);
        LEVEL_WEIGHT.saturating_pow((n.saturating_sub(1 + rank)) as u32)
    }

    fn capacity(&self, b: Buffer) -> Option<u64> {
        level_of(self.cx.levels, b).map(|l| l.bytes)
    }

    /// The bytes of the tensors `level` holds in one tile of `model`'s band.
    fn bytes(
        &mut self,
        model: usize,
        level: Buffer,
        windows: Vec<Option<i64>>,
    ) -> miette::Result<Option<u64>> {
        let key = (model, level, windows);
        if let Some(v) = self.footprints.get(&key) {
            return Ok(*v);
        }
        let band = self.models[model].plan.band;
        let fps = tile_footprint(
            self.cx.ctx,
            self.cx.scop,
            self.bands,
            band,
            &key.2,
            &self.elem_bytes,
        )?;
        let fps = self.cx.held(level, &self.bands[band].stmts, fps);
        let total: Option<u64> = fps.iter().map(|f| f.bytes).sum();
        self.footprints.insert(key, total);
        Ok(total)
    }

    fn eval(&mut self, sizes: &[i64]) -> miette::Result<Outcome> {
        let mut cost = Cost::default();
        let mut moved: Vec<u128> = vec![0; self.order.len()];
        let mut used: Vec<bool> = vec![false; self.order.len()];
        for mi in 0..self.models.len() {
            let m = &self.models[mi];
            let band = &self.bands[m.plan.band];
            let mut bp = m.plan.clone();
            for (k, levels) in m.members.iter().enumerate() {
                let ext = band.extents.get(k).copied().flatten();
                let mut prev: Option<(Buffer, i64)> = None;
                for (j, (buf, src)) in levels.iter().enumerate() {
                    let mut size = match *src {
                        Src::Fixed(v) => v,
                        Src::Var(i) => sizes[i],
                    };
                    if let Some(e) = ext {
                        size = size.min(e);
                    }
                    if let Some((pb, ps)) = prev {
                        if size > ps {
                            return Ok(Outcome::Skip(format!(
                                "the {buf} size {size} of `{}` is larger than the {pb} size {ps} that encloses it",
                                m.stmt
                            )));
                        }
                    }
                    prev = Some((*buf, size));
                    if let Some(slot) = bp.members.get_mut(k).and_then(|v| v.get_mut(j)) {
                        slot.1 = size;
                    }
                }
            }
            let stmt = m.stmt.clone();
            let outer_points = m.outer_points;
            for level in bp.levels(&self.order) {
                let windows = bp.held_windows(level, &self.order, self.cx.holds(level));
                let mut tiles: u128 = outer_points;
                for (k, w) in windows.iter().enumerate() {
                    if let Some(w) = w {
                        let e = ext_or_unknown(band.extents.get(k).copied().flatten());
                        let w = (*w).max(1);
                        tiles = tiles.saturating_mul(((e + w - 1) / w) as u128);
                    }
                }
                let total = self.bytes(mi, level, windows)?;
                // As in tiling: a register file holds only what promotion puts there, within
                // its capacity, so its footprint is not checked.
                let checked = if self.cx.is_register_file(level) {
                    None
                } else {
                    self.capacity(level)
                };
                if let (Some(t), Some(c)) = (total, checked) {
                    if t > c {
                        return Ok(Outcome::Illegal(format!(
                            "the {level} tile of `{stmt}` needs {t} bytes, but {level} holds {c} bytes"
                        )));
                    }
                }
                let bytes = (total.unwrap_or(0) as u128).saturating_mul(tiles);
                let r = self
                    .order
                    .iter()
                    .position(|x| *x == level)
                    .unwrap_or(self.order.len() - 1);
                moved[r] = moved[r].saturating_add(bytes);
                used[r] = true;
                cost.weighted = cost
                    .weighted
                    .saturating_add(bytes.saturating_mul(self.weight(level)));
                cost.tiles = cost.tiles.saturating_add(tiles);
            }
        }
        cost.moved = self
            .order
            .iter()
            .zip(moved)
            .zip(used)
            .filter(|(_, u)| *u)
            .map(|((b, v), _)| (*b, v))
            .collect();
        Ok(Outcome::Legal(cost))
    }
}

/// The sizes of the point with candidate indices `idx`.
fn point_of(vars: &[SearchVar], idx: &[usize]) -> Vec<i64> {
    idx.iter()
        .enumerate()
        .map(|(i, &k)| vars[i].candidates[k])
        .collect()
}

/// Evaluates a point once (memoised in `seen`).
fn visit(
    ev: &mut Evaluator,
    seen: &mut HashMap<Vec<usize>, Outcome>,
    vars: &[SearchVar],
    idx: &[usize],
) -> miette::Result<Outcome> {
    if let Some(o) = seen.get(idx) {
        return Ok(o.clone());
    }
    let o = ev.eval(&point_of(vars, idx))?;
    seen.insert(idx.to_vec(), o.clone());
    Ok(o)
}

/// Best first: lower cost, then fewer tiles, then larger sizes.
fn rank(a: &Point, b: &Point) -> Ordering {
    a.cost
        .weighted
        .cmp(&b.cost.weighted)
        .then(a.cost.tiles.cmp(&b.cost.tiles))
        .then(b.sizes.cmp(&a.sizes))
}

/// Visits every point of the space, last variable fastest.
fn search_exhaustive(
    ev: &mut Evaluator,
    seen: &mut HashMap<Vec<usize>, Outcome>,
    vars: &[SearchVar],
) -> miette::Result<()> {
    let n = vars.len();
    let mut idx = vec![0usize; n];
    'all: loop {
        visit(ev, seen, vars, &idx)?;
        // Odometer, last variable fastest.
        let mut k = n;
        loop {
            if k == 0 {
                break 'all;
            }
            k -= 1;
            idx[k] += 1;
            if idx[k] < vars[k].candidates.len() {
                break;
            }
            idx[k] = 0;
        }
    }

    Ok(())
}

/// A deterministic coordinate descent from the middle of the space (or its smallest
/// point): steepest descent over neighbouring candidates, then full sweeps one variable at
/// a time, at most [`MAX_PASSES`] of them.
fn search_descent(
    ev: &mut Evaluator,
    seen: &mut HashMap<Vec<usize>, Outcome>,
    vars: &[SearchVar],
) -> miette::Result<()> {
    let n = vars.len();
    let point = |idx: &[usize], c: &Cost| Point {
        sizes: point_of(vars, idx),
        cost: c.clone(),
    };
    let mid: Vec<usize> = vars.iter().map(|v| (v.candidates.len() - 1) / 2).collect();
    let mut cur: Option<(Vec<usize>, Cost)> = None;
    for start in [mid, vec![0; n]] {
        if let Outcome::Legal(c) = visit(ev, seen, vars, &start)? {
            cur = Some((start, c));
            break;
        }
    }
    if let Some((mut idx, mut cost)) = cur {
        // Phase 1: steepest descent over neighbouring candidates (one variable one
        // step up or down), which grows the sizes evenly.
        loop {
            let mut best: Option<(Vec<usize>, Cost)> = None;
            for i in 0..n {
                for up in [false, true] {
                    let k = if up {
                        idx[i] + 1
                    } else if idx[i] > 0 {
                        idx[i] - 1
                    } else {
                        continue;
                    };
                    if k >= vars[i].candidates.len() {
                        continue;
                    }
                    let mut t = idx.clone();
                    t[i] = k;
                    if let Outcome::Legal(c) = visit(ev, seen, vars, &t)? {
                        let (bi, bc) = best.as_ref().map_or((&idx, &cost), |(a, b)| (a, b));
                        if rank(&point(&t, &c), &point(bi, bc)) == Ordering::Less {
                            best = Some((t, c));
                        }
                    }
                }
            }
            match best {
                Some((t, c)) => {
                    idx = t;
                    cost = c;
                }
                None => break,
            }
        }
        // Phase 2: full sweeps, one variable at a time over all its candidates.
        for _ in 0..MAX_PASSES {
            let mut changed = false;
            for i in 0..n {
                for k in 0..vars[i].candidates.len() {
                    if k == idx[i] {
                        continue;
                    }
                    let mut t = idx.clone();
                    t[i] = k;
                    if let Outcome::Legal(c) = visit(ev, seen, vars, &t)? {
                        if rank(&point(&t, &c), &point(&idx, &cost)) == Ordering::Less {
                            idx = t;
                            cost = c;
                            changed = true;
                        }
                    }
                }
            }
            if !changed {
                break;
            }
        }
    }

    Ok(())
}

/// The point a search without legal points reports, with why it fails: the smallest
/// point that is only over capacity (inner sizes not above outer ones), else the smallest
/// point of all.
fn smallest_failure(
    ev: &mut Evaluator,
    seen: &mut HashMap<Vec<usize>, Outcome>,
    vars: &[SearchVar],
) -> miette::Result<(Vec<usize>, String)> {
    let n = vars.len();
    // The smallest point that is only over capacity (inner sizes not above outer
    // ones), else the smallest point of all.
    let smallest = vec![0usize; n];
    visit(ev, seen, vars, &smallest)?;
    Ok(seen
        .iter()
        .filter_map(|(idx, o)| match o {
            Outcome::Illegal(w) => Some((idx.clone(), w.clone())),
            _ => None,
        })
        .min_by_key(|(idx, _)| {
            let p = point_of(vars, idx);
            (p.iter().sum::<i64>(), p)
        })
        .or_else(|| match seen.get(&smallest) {
            Some(Outcome::Skip(w)) | Some(Outcome::Illegal(w)) => {
                Some((smallest.clone(), w.clone()))
            }
            _ => None,
        })
        .unwrap_or((smallest, "it was not visited".to_string())))
}

/// Runs the search on `spec` for `tree` (see the module docs) and returns the legal points
/// ranked by the model. `file` is the spec's source, for located errors.
///
/// Errors: anything [`crate::tile()`] reports that does not depend on the searched sizes
/// (as it reports it), a search entry in a band another statement's spec tiles, and no
/// legal point (naming the entries and why the smallest point fails). A spec without
/// search entries gives one point with no sizes.
pub fn search(
    tree: &ScheduleTree,
    cx: &TileCx,
    spec: &TileSpec,
    file: &SourceFile,
    opts: &SearchOptions,
) -> miette::Result<SearchResult> {
    let mut vars = collect_vars(spec);
    // Size-independent checks, with every search entry at 1.
    let pre = plan(tree, cx, spec, file, true)?;
    let bands = &pre.bands;
    let scop = cx.scop;

    // Where each entry goes: (band, member), as `plan` distributes them.
    let mut slot: HashMap<(usize, usize, usize), usize> = HashMap::new(); // (spec, dim, level) -> var
    for (i, v) in vars.iter().enumerate() {
        slot.insert((v.spec_index, v.dim, v.level), i);
    }
    let mut models: Vec<BandModel> = Vec::new();
    let mut placed = vec![false; vars.len()];
    for p in &pre.plans {
        let Some(si) = p.spec else { continue };
        let Some(s) = spec.stmts.get(si) else {
            continue;
        };
        let stmt = scop
            .stmt_names
            .iter()
            .position(|n| *n == s.stmt)
            .unwrap_or(0);
        let chain: Vec<usize> = (0..bands.len())
            .filter(|&b| bands[b].stmts.contains(&stmt))
            .collect();
        let first: usize = chain
            .iter()
            .take_while(|&&b| b != p.band)
            .map(|&b| bands[b].n_members())
            .sum();
        let band = &bands[p.band];
        let mut members = Vec::new();
        for k in 0..band.n_members() {
            let mut levels = Vec::new();
            if let Some(d) = s.dims.get(first + k) {
                for (j, l) in d.levels.iter().enumerate() {
                    let src = match l.size.fixed() {
                        Some(v) => Src::Fixed(v),
                        None => match slot.get(&(si, first + k, j)) {
                            Some(&i) => {
                                vars[i].extent = band.extents[k];
                                placed[i] = true;
                                Src::Var(i)
                            }
                            None => Src::Fixed(1),
                        },
                    };
                    levels.push((l.buffer, src));
                }
            }
            members.push(levels);
        }
        let outer_points = band.outer.iter().fold(1u128, |acc, &o| {
            bands[o]
                .extents
                .iter()
                .fold(acc, |a, e| a.saturating_mul(ext_or_unknown(*e) as u128))
        });
        models.push(BandModel {
            plan: p.clone(),
            members,
            stmt: s.stmt.clone(),
            outer_points,
        });
    }
    // Entries that landed in a band another spec owns (the plan kept the other's sizes).
    if let Some(i) = placed.iter().position(|p| !p) {
        let v = &vars[i];
        return Err(miette::Report::new(file.error(
            v.span,
            format!(
                "this search entry of `{}` tiles a band that another statement's spec also tiles",
                v.stmt
            ),
            "search entry in a shared band",
            "statements that share a band are tiled together: keep one spec for the band and put the search entries there",
        )));
    }
    for v in vars.iter_mut() {
        v.candidates = entry_candidates(&v.size, v.extent);
    }
    let space = vars
        .iter()
        .fold(1u128, |a, v| a.saturating_mul(v.candidates.len() as u128));

    let mut ev = Evaluator {
        cx,
        bands,
        models,
        order: spec.buffers.clone(),
        elem_bytes: cx.elem_bytes(),
        footprints: HashMap::new(),
    };
    let mut seen: HashMap<Vec<usize>, Outcome> = HashMap::new();
    let strategy = if space <= opts.budget as u128 {
        Strategy::Exhaustive
    } else {
        Strategy::CoordinateDescent
    };
    match strategy {
        Strategy::Exhaustive => search_exhaustive(&mut ev, &mut seen, &vars)?,
        Strategy::CoordinateDescent => search_descent(&mut ev, &mut seen, &vars)?,
    }

    let candidates = seen
        .values()
        .filter(|o| !matches!(o, Outcome::Skip(_)))
        .count();
    let mut ranked: Vec<Point> = seen
        .iter()
        .filter_map(|(idx, o)| match o {
            Outcome::Legal(c) => Some(Point {
                sizes: point_of(&vars, idx),
                cost: c.clone(),
            }),
            _ => None,
        })
        .collect();
    ranked.sort_by(rank);
    let legal = ranked.len();
    if ranked.is_empty() {
        let (smallest, why) = smallest_failure(&mut ev, &mut seen, &vars)?;
        return Err(no_legal(
            file,
            spec,
            &vars,
            &point_of(&vars, &smallest),
            &why,
        ));
    }
    // The winner goes through the real tiling code once (it must agree with the model).
    let best = resolve(spec, &vars, &ranked[0].sizes);
    plan(tree, cx, &best, file, false)?;
    Ok(SearchResult {
        vars,
        strategy,
        space,
        candidates,
        legal,
        ranked,
    })
}

fn no_legal(
    file: &SourceFile,
    spec: &TileSpec,
    vars: &[SearchVar],
    smallest: &[i64],
    why: &str,
) -> miette::Report {
    let Some(first) = vars.first() else {
        return miette::miette!("internal error: a failed search without search entries");
    };
    let entries: Vec<String> = vars
        .iter()
        .map(|v| {
            let c: Vec<String> = v.candidates.iter().map(|x| x.to_string()).collect();
            format!("{} (candidates {})", v.describe(), c.join(", "))
        })
        .collect();
    let resolved = resolve(spec, vars, smallest);
    let err = file.error(
        first.span,
        format!(
            "no candidate of the tile-size search is legal ({} search entr{})",
            vars.len(),
            if vars.len() == 1 { "y" } else { "ies" }
        ),
        "no size of this search fits",
        format!(
            "the entries are {}; the smallest point, {}, fails: {why}; allow smaller sizes (e.g. `?`) or name a larger buffer for these entries",
            entries.join(", "),
            searched_text(&resolved, vars)
        ),
    );
    miette::Report::new(err)
}
