//! Band tiling from a [`TileSpec`]: planning (mapping entries to band members, agreement,
//! clamping, legality, footprints and capacities) and rewriting the typed tree.
//!
//! ## How a band is tiled
//!
//! For a band whose members get sizes at levels `L2` and `L1` (outer to inner, in the
//! target's order), the band node is replaced by
//!
//! ```text
//! Band (tile loops of L2: floor(t_d / s2_d) for each member with an L2 size)  permutable
//!   Mark "mem:L2"
//!     Band (tile loops of L1: floor(t_d / s1_d) for each member with an L1 size)  permutable
//!       Mark "mem:L1"
//!         Band (the original band: the point loops, unchanged)
//! ```
//!
//! The tile partial schedules are built here with floor divisions of the original members
//! (not with `isl_schedule_node_band_tile`), because a member may be tiled at one level
//! and not at another: a tile band holds only the members that have a size at its level.
//! Tile loops are not scaled and point loops not shifted (isl's `tile_scale_tile_loops=0`,
//! `tile_shift_point_loops=0` in effect), so the point band is the original band and
//! partial tiles (sizes that do not divide extents) are left to isl's AST generator, which
//! intersects the tile with the domain. A tile member inherits the coincidence of its
//! member; tile bands are permutable.
//!
//! Only the members a spec names are tiled, and they must form a permutable prefix of the
//! band: every dependence that lives at the band (both ends reach it, and the outer
//! schedule does not separate them) must have a non-negative distance on each of them.

use crate::analysis::{
    collect_bands, permutable_prefix, tile_footprint, tile_schedule_text, BandInfo, Blocker,
    TensorFootprint,
};
use crate::cx::TileCx;
use crate::report::{BandReport, LevelReport, TileReport};
use crate::spec::{LevelSize, StmtSpec, TileSpec};
use polyhedral::deps::DepKind;
use polyhedral::diag::{SourceError, SourceFile};
use polyhedral::ir::Span;
use polyhedral::scop::Scop;
use schedule_tree::{Band, Buffer, Mark, Node, NodeKind, ScheduleTree};

/// The sizes one band gets: per member, the `(buffer, size)` levels (outer first).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BandPlan {
    /// Index into the band list.
    pub band: usize,
    /// Per member; empty = untiled.
    pub members: Vec<Vec<(Buffer, i64)>>,
    /// The spec that gave the sizes (index into `TileSpec::stmts`), if any.
    pub spec: Option<usize>,
    /// The entry spans per member, for diagnostics.
    pub spans: Vec<Option<Span>>,
}

impl BandPlan {
    /// The levels used, in hierarchy order.
    pub fn levels(&self, order: &[Buffer]) -> Vec<Buffer> {
        order
            .iter()
            .copied()
            .filter(|b| self.members.iter().any(|m| m.iter().any(|(x, _)| x == b)))
            .collect()
    }
    /// Number of leading members that are tiled.
    pub fn tiled(&self) -> usize {
        self.members
            .iter()
            .rposition(|m| !m.is_empty())
            .map_or(0, |p| p + 1)
    }
    /// [`BandPlan::windows`] for the capacity check of a level that holds `holds`. A
    /// buffer that holds only results or only operands sits beside the target's other
    /// software-managed buffers rather than inside them, so a member with no size at
    /// `level` or outside it takes its size at the nearest inner level (Gemmini: the `A`
    /// tile in the scratchpad spans the I tile given at the accumulator).
    pub fn held_windows(
        &self,
        level: Buffer,
        order: &[Buffer],
        holds: schedule_tree::Holds,
    ) -> Vec<Option<i64>> {
        let mut w = self.windows(level, order);
        if holds != schedule_tree::Holds::All {
            let rank = |b: Buffer| order.iter().position(|x| *x == b).unwrap_or(usize::MAX);
            let r = rank(level);
            for (m, slot) in w.iter_mut().enumerate() {
                if slot.is_none() {
                    *slot = self.members[m]
                        .iter()
                        .filter(|(b, _)| rank(*b) > r)
                        .min_by_key(|(b, _)| rank(*b))
                        .map(|(_, s)| *s);
                }
            }
        }
        w
    }
    /// Per member, the window at `level`: its size at `level`, else its size at the nearest
    /// outer level, else unrestricted.
    pub fn windows(&self, level: Buffer, order: &[Buffer]) -> Vec<Option<i64>> {
        let rank = |b: Buffer| order.iter().position(|x| *x == b).unwrap_or(usize::MAX);
        let r = rank(level);
        self.members
            .iter()
            .map(|m| {
                m.iter()
                    .filter(|(b, _)| rank(*b) <= r)
                    .max_by_key(|(b, _)| rank(*b))
                    .map(|(_, s)| *s)
            })
            .collect()
    }
}

fn report(e: SourceError) -> miette::Report {
    miette::Report::new(e)
}

fn ordinal_list(v: &[String]) -> String {
    match v.len() {
        0 => String::new(),
        1 => v[0].clone(),
        _ => format!("{} and {}", v[..v.len() - 1].join(", "), v[v.len() - 1]),
    }
}

/// Everything [`tile`] and [`crate::explain`] compute before rewriting the tree.
pub(crate) struct Plan {
    pub bands: Vec<BandInfo>,
    pub plans: Vec<BandPlan>,
    pub report: TileReport,
}

/// The bands enclosing statement `s`, outermost first.
fn chain(bands: &[BandInfo], s: usize) -> Vec<usize> {
    (0..bands.len())
        .filter(|&b| bands[b].stmts.contains(&s))
        .collect()
}

/// Refuses a spec with search entries (unless `allow_search`) or naming a statement the
/// program does not have.
fn check_statements(
    cx: &TileCx,
    spec: &TileSpec,
    file: &SourceFile,
    allow_search: bool,
) -> miette::Result<()> {
    let scop = cx.scop;
    if !allow_search {
        if let Some(l) = spec.first_search_entry() {
            return Err(report(file.error(
                l.size_span,
                "this tile spec has search entries; resolve them before tiling",
                "a search entry",
                format!(
                    "run `tiling::search::search` and tile its resolved spec (polyc does this itself), or replace `{}` with a fixed size such as `32`",
                    l.size
                ),
            )));
        }
    }
    // Unknown statements.
    for s in &spec.stmts {
        if !scop.stmt_names.contains(&s.stmt) {
            return Err(report(file.error(
                s.stmt_span,
                format!("unknown statement `{}`", s.stmt),
                "no such statement",
                format!(
                    "the statements of this program are {}",
                    scop.stmt_names.join(", ")
                ),
            )));
        }
    }
    Ok(())
}

/// The footprint of every tiled band at every level, checked against the level's
/// capacity (an error with the smallest fix when it overflows), into the report.
fn check_capacities(
    cx: &TileCx,
    file: &SourceFile,
    spec: &TileSpec,
    bands: &[BandInfo],
    plans: &[BandPlan],
    rep: &mut TileReport,
) -> miette::Result<()> {
    let scop = cx.scop;
    let order = &spec.buffers;
    let elem_bytes = cx.elem_bytes();
    for p in plans {
        let band = &bands[p.band];
        let s = &spec.stmts[p.spec.unwrap_or(0)];
        let mut levels = Vec::new();
        for level in p.levels(order) {
            let windows = p.held_windows(level, order, cx.holds(level));
            let fps = tile_footprint(cx.ctx, scop, bands, p.band, &windows, &elem_bytes)?;
            let fps = cx.held(level, &band.stmts, fps);
            let total = sum_bytes(&fps);
            let capacity = cx.capacity(level);
            // A register file holds only the tensors promoted into it; promotion picks
            // them within its capacity.
            let checked = if cx.is_register_file(level) {
                None
            } else {
                capacity
            };
            if let (Some(t), Some(c)) = (total, checked) {
                if t > c {
                    let stmt = stmt_of(scop, &s.stmt);
                    let fix = smallest_fix(cx, bands, p, stmt, level, order, c, &elem_bytes)?;
                    return Err(overflow(file, s, level, &fps, t, c, fix));
                }
            }
            if total.is_none() {
                if let Some(c) = checked {
                    // With symbolic sizes the capacity must hold for every size: each
                    // footprint must be a box bounded by the tile sizes.
                    return Err(unbounded(file, s, level, &fps, c));
                }
                rep.notes.push(format!(
                    "{}: the {level} footprint is not a fixed-size box (symbolic sizes?); its capacity is not checked",
                    s.stmt
                ));
            }
            levels.push(LevelReport {
                register_file: cx.is_register_file(level),
                buffer: level,
                sizes: p
                    .members
                    .iter()
                    .map(|m| m.iter().find(|(b, _)| *b == level).map(|(_, s)| *s))
                    .collect(),
                windows,
                footprints: fps,
                total_bytes: total,
                capacity,
            });
        }
        rep.bands.push(BandReport {
            path: band.path.clone(),
            line: band.line.clone(),
            statements: band
                .stmts
                .iter()
                .map(|&i| scop.stmt_names[i].clone())
                .collect(),
            spec_stmt: Some(s.stmt.clone()),
            levels,
        });
    }
    Ok(())
}

/// Warnings for specs that name a statement whose tiles are derived (one that is not
/// live-out of its fused group: another statement of the group reads or overwrites its
/// results).
fn derived_tile_warnings(
    cx: &TileCx,
    file: &SourceFile,
    spec: &TileSpec,
    bands: &[BandInfo],
    rep: &mut TileReport,
) -> miette::Result<()> {
    let scop = cx.scop;
    for s in &spec.stmts {
        let stmt = stmt_of(scop, &s.stmt);
        // The outermost band the spec tiles (`_` entries leave outer loops untiled).
        let mut k = 0;
        let mut first_tiled = None;
        for &b in &chain(bands, stmt) {
            let n = bands[b].n_members();
            if s.dims.iter().skip(k).take(n).any(|d| !d.levels.is_empty()) {
                first_tiled = Some(b);
                break;
            }
            k += n;
        }
        let Some(outer) = first_tiled else { continue };
        let group = &bands[outer].stmts;
        let mut consumers = Vec::new();
        for &t in group {
            if t == stmt {
                continue;
            }
            for kind in [DepKind::Raw, DepKind::Waw] {
                let m = cx.deps.between(kind, stmt, t)?;
                if !m.is_empty().map_err(|e| miette::miette!("{e}"))? {
                    let what = if kind == DepKind::Raw {
                        "reads"
                    } else {
                        "overwrites"
                    };
                    consumers.push(format!("{} {what} its results", scop.stmt_names[t]));
                    break;
                }
            }
        }
        if !consumers.is_empty() {
            let group_names: Vec<&str> =
                group.iter().map(|&i| scop.stmt_names[i].as_str()).collect();
            let (l, c) = file.line_col(s.stmt_span.start);
            rep.warnings.push(format!(
                "{}:{l}:{c}: `{}` is not live-out of its fused group {{{}}} ({}): its tiles are derived from the live-out statement's by the reverse strategy; name the live-out statement instead (this spec is applied to the shared band as given)",
                file.name,
                s.stmt,
                group_names.join(", "),
                consumers.join(", ")
            ));
        }
    }
    Ok(())
}

/// Plans the tiling of `tree` by `spec`: checks the spec's statements, distributes each
/// statement's entries over the bands enclosing it, checks legality and clamps sizes to the
/// extents, then checks every level's footprint against its capacity.
pub(crate) fn plan(
    tree: &ScheduleTree,
    cx: &TileCx,
    spec: &TileSpec,
    file: &SourceFile,
    allow_search: bool,
) -> miette::Result<Plan> {
    let scop = cx.scop;
    check_statements(cx, spec, file, allow_search)?;
    let (_schedule, bands) = collect_bands(cx.ctx, scop, tree)?;
    let mut plans: Vec<BandPlan> = Vec::new();
    let mut rep = TileReport::default();

    for (si, s) in spec.stmts.iter().enumerate() {
        let stmt = scop
            .stmt_names
            .iter()
            .position(|n| *n == s.stmt)
            .unwrap_or(0);
        let ch = chain(&bands, stmt);
        // A statement split over sibling subtrees has no single chain.
        for w in ch.windows(2) {
            if !bands[w[1]].path.starts_with(&bands[w[0]].path) {
                return Err(report(file.error(
                    s.stmt_span,
                    format!(
                        "the instances of `{}` are split over several subtrees; tiling such a statement is not supported",
                        s.stmt
                    ),
                    "split statement",
                    "tile the statements of each subtree instead, or use a schedule that keeps the statement in one band chain",
                )));
            }
        }
        let total: usize = ch.iter().map(|&b| bands[b].n_members()).sum();
        if s.dims.len() > total {
            let extra = &s.dims[total];
            let desc: Vec<String> = ch
                .iter()
                .map(|&b| format!("{}", bands[b].n_members()))
                .collect();
            let help = if ch.is_empty() {
                format!("`{}` is in no band; remove its spec", s.stmt)
            } else {
                format!(
                    "give at most {total} entries, one per loop dimension from outermost to innermost (its bands have {} members)",
                    ordinal_list(&desc)
                )
            };
            return Err(report(file.error(
                Span::new(extra.span.start, s.span.end),
                format!(
                    "`{}` has {} entries, but only {total} loop dimension{} enclose{} it",
                    s.stmt,
                    s.dims.len(),
                    if total == 1 { "" } else { "s" },
                    if total == 1 { "s" } else { "" },
                ),
                "too many entries",
                help,
            )));
        }
        // Distribute the entries over the chain.
        let mut k = 0;
        for &b in &ch {
            if k >= s.dims.len() {
                break;
            }
            let n = bands[b].n_members();
            let mut members = vec![Vec::new(); n];
            let mut spans = vec![None; n];
            for m in 0..n {
                if let Some(d) = s.dims.get(k + m) {
                    members[m] = d
                        .levels
                        .iter()
                        .map(|l: &LevelSize| (l.buffer, l.size.fixed().unwrap_or(1)))
                        .collect();
                    spans[m] = Some(d.span);
                }
            }
            k += n;
            // `_` for every member: a loop outside the band the spec tiles.
            if members.iter().all(Vec::is_empty) {
                continue;
            }
            let new = BandPlan {
                band: b,
                members,
                spec: Some(si),
                spans,
            };
            if let Some(old) = plans.iter().find(|p| p.band == b) {
                if old.members != new.members {
                    let other = &spec.stmts[old.spec.unwrap_or(0)];
                    return Err(disagree(file, s, other, &bands[b]));
                }
                continue;
            }
            plans.push(new);
        }
    }

    // Legality, clamping, footprints, capacities.
    for p in plans.iter_mut() {
        let band = &bands[p.band];
        let s = &spec.stmts[p.spec.unwrap_or(0)];
        let want = p.tiled();
        let (ok, blocker) = permutable_prefix(cx.ctx, cx.deps, band, want)?;
        if ok < want {
            let span = p.spans[ok].unwrap_or(s.span);
            return Err(illegal(file, s, band, ok, span, blocker));
        }
        for (m, levels) in p.members.iter_mut().enumerate() {
            let Some(ext) = band.extents[m] else { continue };
            for (buf, size) in levels.iter_mut() {
                if *size > ext {
                    rep.notes.push(format!(
                        "{}: the {buf} size {size} of dimension {} is larger than the dimension's extent {ext}; clamped to {ext}",
                        s.stmt,
                        entry_index(&bands, p.band, stmt_of(scop, &s.stmt), m) + 1,
                    ));
                    *size = ext;
                }
            }
        }
    }
    check_capacities(cx, file, spec, &bands, &plans, &mut rep)?;
    derived_tile_warnings(cx, file, spec, &bands, &mut rep)?;
    Ok(Plan {
        bands,
        plans,
        report: rep,
    })
}

fn stmt_of(scop: &Scop, name: &str) -> usize {
    scop.stmt_names.iter().position(|n| n == name).unwrap_or(0)
}

/// The position of member `m` of band `b` in the entry list of statement `s`.
fn entry_index(bands: &[BandInfo], b: usize, s: usize, m: usize) -> usize {
    chain(bands, s)
        .iter()
        .take_while(|&&x| x != b)
        .map(|&x| bands[x].n_members())
        .sum::<usize>()
        + m
}

fn sum_bytes(fps: &[TensorFootprint]) -> Option<u64> {
    fps.iter().map(|f| f.bytes).sum()
}

fn disagree(file: &SourceFile, s: &StmtSpec, other: &StmtSpec, band: &BandInfo) -> miette::Report {
    report(
        file.error(
            s.span,
            format!(
                "the tile specs of `{}` and `{}` disagree, but both statements are in the same band",
                s.stmt, other.stmt
            ),
            "this spec",
            format!(
                "statements that share a band are tiled together; give them the same sizes for that band, or keep only one spec (the band is `{}`)",
                band.line
            ),
        )
        .with_related(file.error(
            other.span,
            format!("the spec of `{}` is here", other.stmt),
            "other spec",
            "make the two agree",
        )),
    )
}

fn illegal(
    file: &SourceFile,
    s: &StmtSpec,
    band: &BandInfo,
    ok: usize,
    span: Span,
    blocker: Option<Blocker>,
) -> miette::Report {
    let dim = ok + 1;
    let (msg, detail) = match &blocker {
        Some(b) => (
            format!(
                "cannot tile dimension {dim} of `{}`: the {} dependence {} -> {} has a negative distance on it",
                s.stmt, b.kind, b.source, b.target
            ),
            b.example
                .as_ref()
                .map(|e| format!("for example {e}; "))
                .unwrap_or_default(),
        ),
        None => (
            format!("cannot tile dimension {dim} of `{}`: the band is not permutable there", s.stmt),
            String::new(),
        ),
    };
    let keep = if ok == 0 {
        "no dimension of this band can be tiled as scheduled".to_string()
    } else {
        format!(
            "only the first {ok} dimension{} of this band can be tiled: give at most {ok} entr{}",
            if ok == 1 { "" } else { "s" },
            if ok == 1 { "y" } else { "ies" }
        )
    };
    let skew = match &blocker {
        Some(b) if b.skew_helps => "; a skewing schedule would make the band tilable: use `--scheduler isl` (or the ILP scheduler), which skews such bands".to_string(),
        Some(_) => "; skewing does not help here (the dependence is not carried by an outer dimension of the band with a bounded distance)".to_string(),
        None => String::new(),
    };
    report(file.error(
        span,
        msg,
        "tiling this dimension reverses a dependence",
        format!("{detail}{keep} (band `{}`){skew}", band.line),
    ))
}

/// A change of one level's sizes that makes the tile fit, and the bytes it then needs.
pub(crate) struct Fix {
    pub text: String,
    pub bytes: u64,
}

/// Finds the smallest change of the sizes at `level` that fits `cap`: first a single
/// member reduced as little as possible (the member whose new size keeps the most of its
/// old size), else every tiled member capped at one common size.
#[allow(clippy::too_many_arguments)]
fn smallest_fix(
    cx: &TileCx,
    bands: &[BandInfo],
    p: &BandPlan,
    stmt: usize,
    level: Buffer,
    order: &[Buffer],
    cap: u64,
    elem_bytes: &[u64],
) -> miette::Result<Option<Fix>> {
    let fits = |windows: &[Option<i64>]| -> miette::Result<Option<u64>> {
        let fps = tile_footprint(cx.ctx, cx.scop, bands, p.band, windows, elem_bytes)?;
        let fps = cx.held(level, &bands[p.band].stmts, fps);
        Ok(sum_bytes(&fps).filter(|&t| t <= cap))
    };
    let base = p.held_windows(level, order, cx.holds(level));
    let mut best: Option<(f64, usize, i64, u64)> = None;
    for m in 0..base.len() {
        let has = p.members[m].iter().any(|(b, _)| *b == level);
        let Some(cur) = base[m] else { continue };
        if !has || cur <= 1 {
            continue;
        }
        // Largest size below `cur` that fits (footprints grow with the size).
        let (mut lo, mut hi) = (0i64, cur - 1);
        let mut found = None;
        while lo < hi || (lo == hi && lo >= 1) {
            let mid = (lo + hi + 1) / 2;
            if mid < 1 {
                break;
            }
            let mut w = base.clone();
            w[m] = Some(mid);
            match fits(&w)? {
                Some(bytes) => {
                    found = Some((mid, bytes));
                    lo = mid;
                    if lo == hi {
                        break;
                    }
                }
                None => {
                    hi = mid - 1;
                    if hi < 1 {
                        break;
                    }
                }
            }
        }
        if let Some((size, bytes)) = found {
            let keep = size as f64 / cur as f64;
            if best.as_ref().is_none_or(|b| keep > b.0) {
                best = Some((keep, m, size, bytes));
            }
        }
    }
    if let Some((_, m, size, bytes)) = best {
        return Ok(Some(Fix {
            text: format!(
                "make dimension {} `{size}@{level}`",
                entry_index(bands, p.band, stmt, m) + 1
            ),
            bytes,
        }));
    }
    // Cap all members at one size.
    let maxs = base.iter().flatten().copied().max().unwrap_or(1);
    let mut c = maxs - 1;
    while c >= 1 {
        let w: Vec<Option<i64>> = base
            .iter()
            .enumerate()
            .map(|(m, s)| {
                let has = p.members[m].iter().any(|(b, _)| *b == level);
                if has {
                    s.map(|x| x.min(c))
                } else {
                    *s
                }
            })
            .collect();
        if let Some(bytes) = fits(&w)? {
            return Ok(Some(Fix {
                text: format!("make every {level} size at most {c}"),
                bytes,
            }));
        }
        c = if c > 64 { c * 3 / 4 } else { c - 1 };
    }
    Ok(None)
}

fn overflow(
    file: &SourceFile,
    s: &StmtSpec,
    level: Buffer,
    fps: &[TensorFootprint],
    total: u64,
    cap: u64,
    fix: Option<Fix>,
) -> miette::Report {
    let parts: Vec<String> = fps
        .iter()
        .map(|f| {
            let shape = f
                .box_sizes
                .as_ref()
                .map(|v| {
                    v.iter()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join(" x ")
                })
                .unwrap_or_else(|| {
                    if f.boxes > 1 {
                        format!("{} boxes", f.boxes)
                    } else {
                        "?".into()
                    }
                });
            format!(
                "{} {shape} = {} elements ({} bytes)",
                f.tensor,
                f.elements.map_or("?".into(), |e| e.to_string()),
                f.bytes.map_or("?".into(), |e| e.to_string())
            )
        })
        .collect();
    let fix_text = match fix {
        Some(f) => format!(
            "; the smallest change that fits: {} ({} bytes)",
            f.text, f.bytes
        ),
        None => "; no smaller tile fits: drop this level".to_string(),
    };
    report(file.error(
        s.span,
        format!(
            "the {level} tile of `{}` needs {total} bytes, but {level} holds {cap} bytes",
            s.stmt
        ),
        format!("{level} footprint {total} > {cap} bytes"),
        format!("footprints per tile: {}{fix_text}", parts.join(", ")),
    ))
}

/// The error for a tile whose footprint at a checked level is not a fixed-size box: it
/// grows with a symbolic size, so no capacity holds for every size.
fn unbounded(
    file: &SourceFile,
    s: &StmtSpec,
    level: Buffer,
    fps: &[TensorFootprint],
    cap: u64,
) -> miette::Report {
    let grows: Vec<&str> = fps
        .iter()
        .filter(|f| f.bytes.is_none())
        .map(|f| f.tensor.as_str())
        .collect();
    report(file.error(
        s.span,
        format!(
            "the {level} tile of `{}` touches data that grows with the symbolic sizes ({}), so it does not fit the {cap} bytes of {level} for every size",
            s.stmt,
            grows.join(", ")
        ),
        format!("{level} footprint not bounded by the tile sizes"),
        format!(
            "give every band member with a symbolic extent that {} span{} a size at {level} (or bind the sizes with --param)",
            grows.join(", "),
            if grows.len() == 1 { "s" } else { "" }
        ),
    ))
}

/// Tiles `tree` as `spec` says (see the module documentation), checks legality and
/// capacities, and returns the tiled tree with a report (notes, warnings, footprints).
///
/// Errors (located in `file`): a search entry (resolve it with [`crate::search`]), an unknown
/// statement, too many entries, two specs that disagree on a shared band, tiling a member
/// that a dependence forbids, and a tile whose footprint exceeds its buffer.
pub fn tile(
    tree: ScheduleTree,
    cx: &TileCx,
    spec: &TileSpec,
    file: &SourceFile,
) -> miette::Result<(ScheduleTree, TileReport)> {
    let _s = polyhedral::substeps::span("tile:apply");
    let Plan {
        bands,
        plans,
        report: rep,
    } = plan(&tree, cx, spec, file, false)?;
    let tiled = apply(tree, cx, &bands, &plans, &spec.buffers)?;
    Ok((tiled, rep))
}

/// Rewrites the tree: every planned band gets its tile bands and marks.
pub(crate) fn apply(
    mut tree: ScheduleTree,
    cx: &TileCx,
    bands: &[BandInfo],
    plans: &[BandPlan],
    order: &[Buffer],
) -> miette::Result<ScheduleTree> {
    // Deepest / latest first, so that earlier paths stay valid.
    let mut ps: Vec<&BandPlan> = plans.iter().filter(|p| p.tiled() > 0).collect();
    ps.sort_by(|a, b| bands[b.band].path.cmp(&bands[a.band].path));
    for p in ps {
        let band = &bands[p.band];
        let Some(node) = tree.node_at_mut(&band.path) else {
            return Err(miette::miette!(
                "internal error: no band at {:?}",
                band.path
            ));
        };
        let point = std::mem::replace(node, Node::leaf());
        let mut sub = point;
        for level in p.levels(order).into_iter().rev() {
            let sizes: Vec<Option<i64>> = p
                .members
                .iter()
                .map(|m| m.iter().find(|(b, _)| *b == level).map(|(_, s)| *s))
                .collect();
            let text = tile_schedule_text(cx.ctx, &band.schedule, &sizes)?;
            let mut coincident = Vec::new();
            for (m, (s, c)) in sizes.iter().zip(&band.coincident).enumerate() {
                if s.is_some() {
                    coincident.push(
                        *c && crate::analysis::tile_member_coincident(
                            cx.ctx, cx.deps, band, &sizes, m,
                        )?,
                    );
                }
            }
            let tile_band = Band {
                schedule: text,
                permutable: true,
                coincident,
                ast_options: None,
            };
            sub = Node::with_child(
                NodeKind::Band(tile_band),
                Node::with_child(NodeKind::Mark(Mark::Mem(level)), sub),
            );
        }
        *node = sub;
    }
    // Legal by construction: only the permutable prefix checked by `plan` is tiled.
    // `polyc --verify-passes` re-checks every pass's tree against the dependences.
    Ok(tree)
}
