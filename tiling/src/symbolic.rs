//! Exact counts in the symbolic sizes for `polyc explain`, through barvinok: per tiled
//! level and tensor, the footprint of one tile (clipped at the edges) and the data all
//! tiles move; per producer that post-tiling fusion would recompute, the instances the
//! tiles run. Each count is a quasi-polynomial in the unbound sizes, with its maximum over
//! the tiles and over every size the model's context allows (`--dynamic` ranges bound
//! sizes) where one exists.
//!
//! The sets are built with polyc's isl ([`crate::analysis::tile_data_maps`]) and cross to
//! barvinok as text. At bound sizes the same sets are counted by isl's enumeration
//! ([`moved_by_enumeration`], [`per_tile_max_by_enumeration`]), which the tests compare
//! with the quasi-polynomials evaluated at those sizes.

use crate::analysis::{tile_data_maps, BandInfo};
use polyhedral::barvinok::{Barvinok, BarvinokError, BoundKind};
use polyhedral::isl::ffi::count::set_count;
use polyhedral::isl::ffi::model::{map_text, set_text};
use polyhedral::isl::isl_rs::{DimType, Map, Set};
use polyhedral::isl::{Ctx, IslResultExt};
use polyhedral::qpoly::{pretty_fold, QPoly};
use polyhedral::scop::Scop;
use schedule_tree::Buffer;
use std::fmt;

fn bv(e: BarvinokError) -> miette::Report {
    miette::miette!(help = e.help(), "{e}")
}

/// An exact count: isl's text of the quasi-polynomial (for tools and tests) and its
/// readable form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Count {
    /// isl's text, e.g. `[M, K] -> { (M * K) : M > 0 and K > 0 }`.
    pub isl: String,
    /// Readable form, e.g. `M·K`.
    pub text: String,
}

impl Count {
    fn new(isl: String) -> miette::Result<Count> {
        // isl's own text where polyc's reader does not follow it.
        let text = QPoly::parse(&isl)
            .map(|q| q.pretty())
            .unwrap_or_else(|_| isl.clone());
        Ok(Count { isl, text })
    }
}

/// The largest value of a count over a domain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Maximum {
    /// The maximum in readable form; `tight` is false when isl only knows an upper bound.
    Value {
        /// Readable form (a number when no size is left).
        text: String,
        /// isl knows the bound to be reached.
        tight: bool,
    },
    /// No finite maximum: the count grows with these sizes, unbounded in the context.
    Unbounded(Vec<String>),
}

impl fmt::Display for Maximum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Maximum::Value { text, tight: true } => write!(f, "{text}"),
            Maximum::Value { text, tight: false } => write!(f, "≤ {text}"),
            Maximum::Unbounded(v) if v.is_empty() => write!(f, "none (unbounded)"),
            Maximum::Unbounded(v) => write!(f, "none (grows with {})", v.join(", ")),
        }
    }
}

/// The exact counts of one tensor at one tiled level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorMovement {
    /// Tensor name.
    pub tensor: String,
    /// Tensor id.
    pub tensor_id: usize,
    /// The elements one tile touches, clipped at the edges, as a quasi-polynomial over the
    /// tile's position (window starts, outer band points) and the sizes (isl text).
    pub per_tile: String,
    /// The same over the tile's position and the sizes, all in the domain (isl text).
    pub per_tile_all: String,
    /// The data moved over the sizes in the domain (isl text).
    pub moved_all: String,
    /// Its maximum over the tiles, a function of the sizes.
    pub per_tile_max: Maximum,
    /// isl's text of that maximum (a piecewise fold over the sizes).
    pub per_tile_max_isl: String,
    /// The number of pieces of [`TensorMovement::per_tile_max`] (it prints in full up to
    /// [`MAX_PIECES`]).
    pub per_tile_pieces: usize,
    /// Its maximum over the tiles and every size the context allows.
    pub per_tile_max_all: Maximum,
    /// Σ over the tiles of each tile's footprint: the elements moved into this level.
    pub moved: Count,
    /// Its maximum over every size the context allows.
    pub moved_max: Maximum,
    /// Bytes of one element.
    pub elem_bytes: u64,
}

/// The exact counts of one tiled level of one band.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LevelMovement {
    /// Index of the band in the report.
    pub band: usize,
    /// The level.
    pub buffer: Buffer,
    /// Per tensor the tiles touch.
    pub tensors: Vec<TensorMovement>,
    /// The sums over the tensors, in bytes (`None` when the budget ran out).
    pub total: Option<LevelTotal>,
    /// The level's capacity in bytes, when the target gives one and it is not a register
    /// file.
    pub capacity: Option<u64>,
}

/// The bytes of every tensor together at one level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LevelTotal {
    /// The largest footprint of one tile over the tiles and every size, in bytes.
    pub per_tile_max_all: Maximum,
    /// The bytes the level moves.
    pub moved: Count,
    /// Their maximum over every size.
    pub moved_max: Maximum,
}

/// One tensor's share of a level's totals: the per-tile count over position and sizes,
/// the data moved, the data moved over the sizes (isl text), and its element bytes.
type Part = (String, String, String, i64);

/// The byte totals of a level's tensors (see [`LevelTotal`]), within `budget`.
pub fn level_total(
    tensors: &[TensorMovement],
    budget: &Budget,
    context: &SizeContext,
) -> miette::Result<Option<LevelTotal>> {
    if tensors.is_empty() {
        return Ok(None);
    }
    let parts: Vec<Part> = tensors
        .iter()
        .map(|t| {
            (
                t.per_tile_all.clone(),
                t.moved.isl.clone(),
                t.moved_all.clone(),
                t.elem_bytes as i64,
            )
        })
        .collect();
    let ctx_t = context.text.clone();
    let raw = budget.run(move |b| {
        let sum = |pick: &dyn Fn(&Part) -> &String| {
            let mut acc: Option<String> = None;
            for p in &parts {
                let q = b.scale(pick(p), p.3)?;
                acc = Some(match acc {
                    None => q,
                    Some(a) => b.add(&a, &q)?,
                });
            }
            Ok::<String, BarvinokError>(acc.unwrap_or_default())
        };
        let all = sum(&|p| &p.0)?;
        let (all_fold, all_tight) = bound_value(b, &all)?;
        let moved = b.gist_params(&sum(&|p| &p.1)?, &ctx_t)?;
        let (moved_fold, moved_tight) = bound_value(b, &sum(&|p| &p.2)?)?;
        Ok((all_fold, all_tight, moved, moved_fold, moved_tight))
    })?;
    let Some((all_fold, all_tight, moved, moved_fold, moved_tight)) = raw else {
        return Ok(None);
    };
    let mut grows_tile = Vec::new();
    let mut grows_moved = Vec::new();
    for t in tensors {
        if let Maximum::Unbounded(v) = &t.per_tile_max_all {
            grows_tile.extend(v.iter().cloned());
        }
        if let Maximum::Unbounded(v) = &t.moved_max {
            grows_moved.extend(v.iter().cloned());
        }
    }
    let dedup = |mut v: Vec<String>| {
        let mut seen = Vec::new();
        v.retain(|x| {
            let new = !seen.contains(x);
            seen.push(x.clone());
            new
        });
        v
    };
    Ok(Some(LevelTotal {
        per_tile_max_all: maximum(&all_fold, all_tight, &context.set, &dedup(grows_tile))?,
        moved: Count::new(moved)?,
        moved_max: maximum(&moved_fold, moved_tight, &context.set, &dedup(grows_moved))?,
    }))
}

/// Whether a tile fits `capacity` bytes at every size, from its largest footprint.
fn fits_text(max: &Maximum, capacity: u64, buffer: Buffer) -> String {
    match max {
        Maximum::Value { text, tight } => match text.parse::<u64>() {
            Ok(v) if v <= capacity => format!("{buffer} holds {capacity}: fits at every size"),
            Ok(_) if *tight => {
                format!("{buffer} holds {capacity}: does not fit at every size")
            }
            _ => format!("{buffer} holds {capacity}: may not fit at every size"),
        },
        Maximum::Unbounded(_) => {
            format!("{buffer} holds {capacity}: does not fit at every size")
        }
    }
}

/// The parameter context as barvinok text and as a set of polyc's isl.
pub struct SizeContext {
    /// The sizes' context (every size ≥ 1, every tensor non-empty, `--dynamic` ranges).
    pub set: Set,
    /// Its isl text.
    pub text: String,
}

impl SizeContext {
    /// The model's context restricted to non-empty tensors.
    pub fn of(scop: &Scop) -> miette::Result<SizeContext> {
        let mut context = scop.context.copy().isl("copying the context")?;
        for ext in &scop.tensor_extents {
            let nonempty = ext
                .copy()
                .isl("copying a tensor's extent")?
                .params()
                .isl("computing where a tensor is non-empty")?;
            context = context.intersect(nonempty).isl("restricting the context")?;
        }
        let text = set_text(&context);
        Ok(SizeContext { set: context, text })
    }
}

/// Moves every parameter of `map` to the end of its input tuple and returns their names.
fn params_to_domain(mut map: Map) -> miette::Result<(Map, Vec<String>)> {
    let n = map.dim(DimType::Param).isl("counting parameters")? as u32;
    let mut names = Vec::new();
    for k in 0..n {
        names.push(
            map.get_dim_name(DimType::Param, k)
                .isl("a parameter's name")?
                .to_string(),
        );
    }
    if n > 0 {
        let at = map.dim(DimType::In).isl("counting input dimensions")? as u32;
        map = map
            .move_dims(DimType::In, at, DimType::Param, 0, n)
            .isl("moving the sizes into the domain")?;
    }
    Ok((map, names))
}

/// The sizes of `names` that the context does not bound from above.
fn unbounded_sizes(context: &Set, names: &[String]) -> miette::Result<Vec<String>> {
    let n = context.dim(DimType::Param).isl("counting parameters")?;
    let mut out = Vec::new();
    for k in 0..n {
        let name = context
            .get_dim_name(DimType::Param, k as u32)
            .isl("a parameter's name")?
            .to_string();
        if !names.contains(&name) {
            continue;
        }
        // The context as a set over its parameters: move them into the tuple.
        let set = context
            .copy()
            .isl("copying the context")?
            .move_dims(DimType::Set, 0, DimType::Param, k as u32, 1)
            .isl("moving a size into the tuple")?;
        if !set
            .dim_has_upper_bound(DimType::Set, 0)
            .isl("testing for an upper bound")?
        {
            out.push(name);
        }
    }
    Ok(out)
}

/// The sizes (parameters of `context`) whose names occur in the isl text `qp`.
fn sizes_in(qp: &str, context: &Set) -> miette::Result<Vec<String>> {
    let words: Vec<&str> = qp
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .collect();
    let n = context.dim(DimType::Param).isl("counting parameters")?;
    let mut out = Vec::new();
    for k in 0..n {
        let name = context
            .get_dim_name(DimType::Param, k as u32)
            .isl("a parameter's name")?
            .to_string();
        if words.contains(&name.as_str()) {
            out.push(name);
        }
    }
    Ok(out)
}

/// A time budget for barvinok: its bounds can take very long on some polytopes (skewed
/// tiles of a stencil). Each computation runs in a worker thread that loads barvinok
/// itself; one that does not answer before the deadline is abandoned (it goes on until
/// it ends or the process exits, holding [`polyhedral::barvinok::LOCK`], so no two barvinok computations ever
/// run at once), and everything after it is skipped.
pub struct Budget {
    deadline: std::time::Instant,
    /// The budget in seconds, for messages.
    pub seconds: u64,
    exhausted: std::cell::Cell<bool>,
}

impl Budget {
    /// A budget of `seconds` from now.
    pub fn new(seconds: u64) -> Budget {
        Budget {
            deadline: std::time::Instant::now() + std::time::Duration::from_secs(seconds),
            seconds,
            exhausted: std::cell::Cell::new(false),
        }
    }

    /// Whether a computation ran out of time.
    pub fn exhausted(&self) -> bool {
        self.exhausted.get()
    }

    /// Runs `f` with a barvinok of its own in a worker thread; `None` when the budget is
    /// spent before it answers.
    pub fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Barvinok) -> Result<T, BarvinokError> + Send + 'static,
    ) -> miette::Result<Option<T>> {
        let left = self
            .deadline
            .saturating_duration_since(std::time::Instant::now());
        if self.exhausted.get() || left.is_zero() {
            self.exhausted.set(true);
            return Ok(None);
        }
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _held = polyhedral::barvinok::LOCK
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            let r = Barvinok::load().and_then(|b| f(&b));
            let _ = tx.send(r);
        });
        match rx.recv_timeout(left) {
            Ok(r) => r.map(Some).map_err(bv),
            Err(_) => {
                self.exhausted.set(true);
                Ok(None)
            }
        }
    }
}

/// The bound of `qp` over its whole domain (no parameters left): a fold whose pieces
/// isl may leave with conditions on local variables only, so it is evaluated to a number
/// (`infty` when unbounded).
fn bound_value(b: &Barvinok, qp: &str) -> Result<(String, bool), BarvinokError> {
    let (fold, tight) = b.bound(qp, BoundKind::Max)?;
    if fold.contains("infty") || fold.contains("NaN") || fold.trim_start().starts_with('[') {
        return Ok((fold, tight));
    }
    Ok((b.eval_fold(&fold, &[])?, tight))
}

/// What barvinok computes for one tensor at one level (isl text).
struct RawMovement {
    per_tile: String,
    all: String,
    by_size: String,
    fold: String,
    tight: bool,
    all_fold: String,
    all_tight: bool,
    moved: String,
    moved_fold: String,
    moved_tight: bool,
}

/// The maximum a fold gives: [`Maximum::Unbounded`] naming the sizes of `names` that the
/// context leaves unbounded when barvinok finds no finite bound.
fn maximum(fold: &str, tight: bool, context: &Set, names: &[String]) -> miette::Result<Maximum> {
    if fold.contains("infty") || fold.contains("NaN") {
        return Ok(Maximum::Unbounded(unbounded_sizes(context, names)?));
    }
    let text = pretty_fold(fold).unwrap_or_else(|_| fold.to_string());
    Ok(Maximum::Value { text, tight })
}

/// The exact per-tile footprints and data moved of one level of `band` (windows as in
/// [`crate::analysis::tile_footprint`]), counted by barvinok within `budget`. The tensors
/// whose counts did not finish in time are left out (see [`Budget::exhausted`]).
#[allow(clippy::too_many_arguments)]
pub fn level_movement(
    ctx: &Ctx,
    scop: &Scop,
    bands: &[BandInfo],
    band: usize,
    windows: &[Option<i64>],
    elem_bytes: &[u64],
    budget: &Budget,
    context: &SizeContext,
) -> miette::Result<Vec<TensorMovement>> {
    let mut out = Vec::new();
    for (tid, map) in tile_data_maps(ctx, scop, bands, band, windows)? {
        let map = map
            .intersect_params(context.set.copy().isl("copying the context")?)
            .isl("restricting to the context")?;
        // Per tile: position -> number of elements. Over the sizes too: the sizes join the
        // position in the domain. Σ over the tiles: the pairs (tile, element).
        let map_t = map_text(&map);
        let (all, _) = params_to_domain(map.copy().isl("copying a map")?)?;
        let all_t = map_text(&all);
        let pairs = map.wrap().isl("the pairs of tiles and elements")?;
        let pairs_t = set_text(&pairs);
        let (by_size, _) = params_to_domain(Map::from_range(pairs).isl("pairs as a map")?)?;
        let by_size_t = map_text(&by_size);
        let ctx_t = context.text.clone();
        let raw = budget.run(move |b| {
            let per_tile = b.map_card(&map_t)?;
            let (fold, tight) = b.bound_in(&per_tile, BoundKind::Max, Some(&ctx_t))?;
            let all = b.map_card(&all_t)?;
            let (all_fold, all_tight) = bound_value(b, &all)?;
            let moved = b.gist_params(&b.set_card(&pairs_t)?, &ctx_t)?;
            let by_size = b.map_card(&by_size_t)?;
            let (moved_fold, moved_tight) = bound_value(b, &by_size)?;
            Ok(RawMovement {
                per_tile,
                all,
                by_size,
                fold,
                tight,
                all_fold,
                all_tight,
                moved,
                moved_fold,
                moved_tight,
            })
        })?;
        let Some(raw) = raw else {
            break;
        };
        let per_tile_max = maximum(&raw.fold, raw.tight, &context.set, &[])?;
        let grows = sizes_in(&raw.per_tile, &context.set)?;
        let per_tile_max_all = maximum(&raw.all_fold, raw.all_tight, &context.set, &grows)?;
        let moved = Count::new(raw.moved)?;
        let grows = sizes_in(&moved.isl, &context.set)?;
        let moved_max = maximum(&raw.moved_fold, raw.moved_tight, &context.set, &grows)?;
        let name = scop.tensor_extents[tid]
            .get_tuple_name()
            .map(|s| s.to_string())
            .unwrap_or_else(|_| format!("tensor {tid}"));
        out.push(TensorMovement {
            tensor: name,
            tensor_id: tid,
            per_tile: raw.per_tile,
            per_tile_all: raw.all,
            moved_all: raw.by_size,
            per_tile_max,
            per_tile_pieces: raw.fold.matches(';').count() + 1,
            per_tile_max_isl: raw.fold,
            per_tile_max_all,
            moved,
            moved_max,
            elem_bytes: elem_bytes.get(tid).copied().unwrap_or(1),
        });
    }
    Ok(out)
}

/// At bound sizes, Σ over the tiles of each tile's footprint per tensor, counted by isl's
/// enumeration (no barvinok): the numbers [`level_movement`]'s `moved` gives at those
/// sizes.
pub fn moved_by_enumeration(
    ctx: &Ctx,
    scop: &Scop,
    bands: &[BandInfo],
    band: usize,
    windows: &[Option<i64>],
) -> miette::Result<Vec<(usize, Option<u64>)>> {
    let mut out = Vec::new();
    for (tid, map) in tile_data_maps(ctx, scop, bands, band, windows)? {
        let pairs = map.wrap().isl("the pairs of tiles and elements")?;
        out.push((tid, set_count(&pairs)));
    }
    Ok(out)
}

/// At bound sizes, the largest footprint of one tile per tensor, by enumerating the tiles
/// and counting each one's elements with isl (no barvinok).
pub fn per_tile_max_by_enumeration(
    ctx: &Ctx,
    scop: &Scop,
    bands: &[BandInfo],
    band: usize,
    windows: &[Option<i64>],
) -> miette::Result<Vec<(usize, Option<u64>)>> {
    let mut out = Vec::new();
    for (tid, map) in tile_data_maps(ctx, scop, bands, band, windows)? {
        let mut positions = map.copy().isl("copying a map")?.domain().isl("tiles")?;
        let mut best: Option<u64> = Some(0);
        while !positions.is_empty().isl("testing for emptiness")? {
            let first = positions
                .copy()
                .isl("copying a set")?
                .lexmin()
                .isl("a tile")?;
            let image = map
                .copy()
                .isl("copying a map")?
                .intersect_domain(first.copy().isl("copying a set")?)
                .isl("one tile's data")?
                .range()
                .isl("one tile's data")?;
            best = match (best, set_count(&image)) {
                (Some(b), Some(c)) => Some(b.max(c)),
                _ => None,
            };
            positions = positions.subtract(first).isl("next tile")?;
        }
        out.push((tid, best));
    }
    Ok(out)
}

/// The recomputation post-tiling fusion would cause, in the symbolic sizes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SymbolicRecompute {
    /// The producer statement.
    pub stmt: String,
    /// Its instances.
    pub instances: Count,
    /// Σ over the tiles of the instances each tile needs.
    pub executed: Count,
    /// `executed − instances`: the instances run more than once.
    pub extra: Count,
}

/// The instances of a producer and the instances its tiles would run (`need`: tile →
/// producer instance), counted by barvinok under the sizes' context within `budget`.
/// `None` when the budget ran out.
pub fn recompute(
    stmt: &str,
    need: &Map,
    domain: &Set,
    context: &SizeContext,
    budget: &Budget,
) -> miette::Result<Option<SymbolicRecompute>> {
    let restrict = |s: Set| -> miette::Result<String> {
        let s = s
            .intersect_params(context.set.copy().isl("copying the context")?)
            .isl("restricting to the context")?;
        Ok(set_text(&s))
    };
    let dom_t = restrict(domain.copy().isl("copying a set")?)?;
    let need_t = restrict(need.copy().isl("copying a map")?.wrap().isl("wrapping")?)?;
    let ctx_t = context.text.clone();
    let raw = budget.run(move |b| {
        let instances = b.gist_params(&b.set_card(&dom_t)?, &ctx_t)?;
        let executed = b.gist_params(&b.set_card(&need_t)?, &ctx_t)?;
        let minus = b.scale(&instances, -1)?;
        let extra = b.gist_params(&b.add(&executed, &minus)?, &ctx_t)?;
        Ok((instances, executed, extra))
    })?;
    let Some((instances, executed, extra)) = raw else {
        return Ok(None);
    };
    Ok(Some(SymbolicRecompute {
        stmt: stmt.to_string(),
        instances: Count::new(instances)?,
        executed: Count::new(executed)?,
        extra: Count::new(extra)?,
    }))
}

/// Seconds barvinok may spend on the exact counts of one `polyc explain`.
pub const EXPLAIN_SECONDS: u64 = 5;

/// Seconds barvinok may spend counting one producer's recomputation.
pub const RECOMPUTE_SECONDS: u64 = 3;

/// The most pieces a maximum over the tiles prints with; longer ones print their number.
pub const MAX_PIECES: usize = 3;

/// The lines `polyc explain` prints for the exact counts of every level.
pub fn format_movement(levels: &[LevelMovement]) -> String {
    let mut out = String::new();
    if levels.is_empty() {
        return out;
    }
    out.push_str(
        "\nexact counts in the sizes (barvinok; elements; a tile's footprint is clipped at the edges, and the data a level moves is the sum over its tiles):\n",
    );
    for l in levels {
        out.push_str(&format!("band #{} at {}:\n", l.band, l.buffer));
        for t in &l.tensors {
            let over_tiles = if t.per_tile_pieces <= MAX_PIECES {
                t.per_tile_max.to_string()
            } else {
                format!("piecewise in the sizes ({} pieces)", t.per_tile_pieces)
            };
            out.push_str(&format!(
                "  {}  per tile: max over tiles {over_tiles}; over every size {}\n",
                t.tensor, t.per_tile_max_all
            ));
            out.push_str(&format!(
                "  {}  moved: {}; over every size {}\n",
                " ".repeat(t.tensor.chars().count()),
                t.moved.text,
                t.moved_max
            ));
        }
        if let Some(total) = &l.total {
            let fits = l
                .capacity
                .map(|c| format!(" ({})", fits_text(&total.per_tile_max_all, c, l.buffer)))
                .unwrap_or_default();
            out.push_str(&format!(
                "  all tensors, in bytes  per tile: over every size {}{fits}\n",
                total.per_tile_max_all
            ));
            out.push_str(&format!(
                "                         moved: {}; over every size {}\n",
                total.moved.text, total.moved_max
            ));
        }
    }
    out
}

/// The words post-tiling fusion gives for a producer whose tiles overlap at symbolic sizes:
/// the instances the tiles would run and the extra ones, as quasi-polynomials (recorded in
/// `out`, one entry per producer), or how to get them without barvinok.
pub(crate) fn recompute_note(
    cx: &crate::cx::TileCx,
    stmt: &str,
    need: &Map,
    domain: &Set,
    out: &mut Vec<SymbolicRecompute>,
) -> miette::Result<String> {
    if let Err(e) = Barvinok::load() {
        return Ok(format!(
            "the recomputation is not counted at symbolic sizes without barvinok ({e}; {})",
            e.help()
        ));
    }
    let context = SizeContext::of(cx.scop)?;
    let budget = Budget::new(RECOMPUTE_SECONDS);
    let Some(r) = recompute(stmt, need, domain, &context, &budget)? else {
        return Ok(format!(
            "barvinok did not count the recomputation within {RECOMPUTE_SECONDS} s"
        ));
    };
    let text = format!(
        "recomputing the overlaps would run {} instances of {stmt} instead of {}, {} more (exact, in the sizes); fusion at symbolic sizes does not recompute (bind the sizes with --param to weigh it)",
        r.executed.text, r.instances.text, r.extra.text
    );
    out.retain(|x| x.stmt != stmt);
    out.push(r);
    Ok(text)
}
