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
        let text = QPoly::parse(&isl)
            .map_err(|e| miette::miette!("{e}"))?
            .pretty();
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

/// The maximum of `qp` (a quasi-polynomial with no parameters left) over its domain, or
/// [`Maximum::Unbounded`] naming the sizes in `names` that the context leaves unbounded
/// when barvinok finds no finite bound.
fn max_of(
    barvinok: &Barvinok,
    qp: &str,
    context: &Set,
    names: &[String],
) -> miette::Result<Maximum> {
    let (fold, tight) = barvinok.bound(qp, BoundKind::Max).map_err(bv)?;
    if fold.contains("infty") || fold.contains("NaN") {
        let grows = unbounded_sizes(context, names)?;
        return Ok(Maximum::Unbounded(grows));
    }
    let text = pretty_fold(&fold).map_err(|e| miette::miette!("{e}"))?;
    Ok(Maximum::Value { text, tight })
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

/// The exact per-tile footprints and data moved of one level of `band` (windows as in
/// [`crate::analysis::tile_footprint`]), counted by barvinok.
#[allow(clippy::too_many_arguments)]
pub fn level_movement(
    ctx: &Ctx,
    scop: &Scop,
    bands: &[BandInfo],
    band: usize,
    windows: &[Option<i64>],
    elem_bytes: &[u64],
    barvinok: &Barvinok,
    context: &SizeContext,
) -> miette::Result<Vec<TensorMovement>> {
    let mut out = Vec::new();
    for (tid, map) in tile_data_maps(ctx, scop, bands, band, windows)? {
        let map = map
            .intersect_params(context.set.copy().isl("copying the context")?)
            .isl("restricting to the context")?;
        // Per tile: position -> number of elements; its maximum over the positions.
        let per_tile = barvinok.map_card(&map_text(&map)).map_err(bv)?;
        let (fold, tight) = barvinok
            .bound_in(&per_tile, BoundKind::Max, Some(&context.text))
            .map_err(bv)?;
        let per_tile_max = if fold.contains("infty") {
            Maximum::Unbounded(Vec::new())
        } else {
            Maximum::Value {
                text: pretty_fold(&fold).map_err(|e| miette::miette!("{e}"))?,
                tight,
            }
        };
        let per_tile_pieces = fold.matches(';').count() + 1;
        // Over the sizes too: the sizes join the position in the domain.
        let (all, _) = params_to_domain(map.copy().isl("copying a map")?)?;
        let all_qp = barvinok.map_card(&map_text(&all)).map_err(bv)?;
        let grows = sizes_in(&per_tile, &context.set)?;
        let per_tile_max_all = max_of(barvinok, &all_qp, &context.set, &grows)?;
        // Σ over the tiles: the pairs (tile, element).
        let pairs = map.wrap().isl("the pairs of tiles and elements")?;
        let moved_qp = barvinok
            .gist_params(
                &barvinok
                    .set_card(&set_text(&pairs.copy().isl("copying a set")?))
                    .map_err(bv)?,
                &context.text,
            )
            .map_err(bv)?;
        let moved = Count::new(moved_qp)?;
        let (by_size, _) = params_to_domain(Map::from_range(pairs).isl("pairs as a map")?)?;
        let by_size_qp = barvinok.map_card(&map_text(&by_size)).map_err(bv)?;
        let grows = sizes_in(&moved.isl, &context.set)?;
        let moved_max = max_of(barvinok, &by_size_qp, &context.set, &grows)?;
        let name = scop.tensor_extents[tid]
            .get_tuple_name()
            .map(|s| s.to_string())
            .unwrap_or_else(|_| format!("tensor {tid}"));
        out.push(TensorMovement {
            tensor: name,
            tensor_id: tid,
            per_tile,
            per_tile_max,
            per_tile_max_isl: fold,
            per_tile_pieces,
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
/// producer instance), counted by barvinok under the sizes' context. `None` when barvinok
/// is not installed.
pub fn recompute(
    stmt: &str,
    need: &Map,
    domain: &Set,
    context: &SizeContext,
) -> miette::Result<Option<SymbolicRecompute>> {
    let Ok(barvinok) = Barvinok::load() else {
        return Ok(None);
    };
    let count = |s: &Set| -> miette::Result<String> {
        let s = s
            .copy()
            .isl("copying a set")?
            .intersect_params(context.set.copy().isl("copying the context")?)
            .isl("restricting to the context")?;
        let q = barvinok.set_card(&set_text(&s)).map_err(bv)?;
        barvinok.gist_params(&q, &context.text).map_err(bv)
    };
    let instances = count(domain)?;
    let executed = count(&need.copy().isl("copying a map")?.wrap().isl("wrapping")?)?;
    let minus = barvinok.scale(&instances, -1).map_err(bv)?;
    let extra = barvinok
        .gist_params(&barvinok.add(&executed, &minus).map_err(bv)?, &context.text)
        .map_err(bv)?;
    Ok(Some(SymbolicRecompute {
        stmt: stmt.to_string(),
        instances: Count::new(instances)?,
        executed: Count::new(executed)?,
        extra: Count::new(extra)?,
    }))
}

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
    }
    out
}

/// The words post-tiling fusion gives for a producer whose tiles overlap at symbolic sizes:
/// the instances the tiles would run and the extra ones, as quasi-polynomials (recorded in
/// `out`, one entry per producer), or how to get them without barvinok.
pub(crate) fn recompute_note(
    cx: &crate::tile::TileCx,
    stmt: &str,
    need: &Map,
    domain: &Set,
    out: &mut Vec<SymbolicRecompute>,
) -> miette::Result<String> {
    let context = SizeContext::of(cx.scop)?;
    let Some(r) = recompute(stmt, need, domain, &context)? else {
        return Ok(format!(
            "the recomputation is not counted at symbolic sizes without barvinok ({})",
            polyhedral::barvinok::INSTALL_HELP
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
