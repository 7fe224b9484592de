//! Memory promotion at memory marks: copy-in and copy-out statements into local buffers,
//! grafted into the schedule tree as extension nodes.
//!
//! For every `Mem(buffer)` mark below a tile band, [`analyse_mark`] computes, per tensor
//! the subtree touches, the exact data footprint of one tile: a relation from the tile
//! (the mark's prefix schedule, `p`) to the tensor elements the tile reads and writes. Its
//! fixed box hull (isl's `get_range_simple_fixed_box_hull`) gives an offset `o(p)` and
//! constant sizes: the shape of the local buffer. A promoted tensor `T` then gets:
//!
//! - a copy-in statement `copyin_<k>_<T>[e]` for every element `e` the tile reads (the
//!   exact read footprint), run before the tile's original subtree;
//! - a copy-out statement `copyout_<k>_<T>[e]` for every element the tile writes (the
//!   exact write footprint), run after it;
//! - inside the tile, every access `T[e]` reads or writes the local buffer at `e - o(p)`.
//!
//! In the tree this is one extension node under the mark whose child is a sequence:
//! the copy-ins, the original subtree, the copy-outs; each copy runs over its elements
//! with a band whose innermost member is the tensor's last dimension. `k` numbers the
//! promotions of a tree in pre-order; code generation ([`crate::codegen::lower`]) recomputes the
//! offsets with [`promotions_in`] from the same tree, so the tree alone carries the
//! promotion.
//!
//! Which tensors a buffer takes comes from the buffer's [`PromoteKind`]:
//!
//! - [`PromoteKind::Registers`] (a CPU `reg` tile, GPU registers): scalar replacement.
//!   Tensors whose tile is reused (at least 2 accesses per element) are taken in order of
//!   reuse, as long as the sum of their footprints times the buffer's stages fits its
//!   capacity: written tiles (accumulators), and read-only tiles of at most an eighth of
//!   the register file (a filter's weights). Nothing below a register tile is promoted
//!   again.
//! - [`PromoteKind::Pack`] (CPU cache levels): packed tiles, as [`PackPolicy`] says.
//! - [`PromoteKind::Shared`] (GPU shared memory): read-only tiles reused at least twice
//!   per element, while they fit; the copies are spread over the block's threads.
//! - [`PromoteKind::None`]: nothing is copied.
//!
//! A temporary that post-tiling fusion made private to the live-out tiles
//! ([`PromoteOptions::locals`]) becomes a **tile-local buffer**, whatever the level's
//! kind: it lives at the deepest memory mark below which every statement that touches it
//! runs, provided each tile writes every element it reads. Nothing is copied: the
//! extension holds one `local_<k>_<T>[]` instance per tile, which declares the buffer,
//! and code generation allocates no global array for `T` (the report says how many
//! bytes that saves). Otherwise the temporary stays global, and the report says why.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use isl_rs::{DimType, Map, Schedule, ScheduleNode, ScheduleNodeType, Set, UnionMap, UnionSet};
use miette::{miette, Result};
use polyhedral::deps::Deps;
use polyhedral::ir::Program;
use polyhedral::isl::ffi::model::map_text;
use polyhedral::isl::{Ctx, IslResultExt};
use polyhedral::scop::Scop;
use schedule_tree::mark::{Buffer, Mark};
use schedule_tree::{Band, Node, NodeKind, ScheduleTree};

/// How a memory level takes data when a tile is placed in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PromoteKind {
    /// Scalar replacement into a register tile.
    Registers,
    /// Packed copies of tiles (CPU caches).
    Pack,
    /// Block-cooperative copies into memory the threads of a block share (GPU shared
    /// memory): read-only tiles that each element of which is used at least twice, most
    /// reused first, while they fit the capacity.
    Shared,
    /// Nothing is copied.
    None,
}

/// Which tensors a [`PromoteKind::Pack`] level packs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PackPolicy {
    /// Read-only tensors whose tile is reused at least 4 times per element and whose tile
    /// takes at most half the level's capacity.
    #[default]
    Auto,
    /// Every tensor with a rectangular tile that fits the level.
    All,
    /// No packing.
    None,
}

/// One memory level as promotion sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LevelInfo {
    /// The buffer.
    pub buffer: Buffer,
    /// Capacity in bytes.
    pub bytes: u64,
    /// How many copies of a tile the level holds at once (double buffering = 2).
    pub stages: u64,
    /// How the level takes data.
    pub kind: PromoteKind,
}

/// Promotion settings.
#[derive(Clone, Debug, Default)]
pub struct PromoteOptions {
    /// The target's levels.
    pub levels: Vec<LevelInfo>,
    /// What the packing levels pack.
    pub pack: PackPolicy,
    /// Whether register levels take register tiles.
    pub registers: bool,
    /// Whether packed tiles move above the tile loops they do not depend on
    /// ([`crate::passes::hoist`]).
    pub hoist: bool,
    /// Temporaries that post-tiling fusion made private to the live-out tiles (by name).
    /// Each becomes a local buffer of the deepest memory mark below which all its
    /// accesses run, with no copies at all, and its global array is not allocated.
    pub locals: Vec<String>,
    /// Other temporaries to make tile-local where that is exact: all their accesses run
    /// below one memory mark, each tile writes every element it reads, and each element
    /// is written in one tile only (a sum split across tiles stays global). Those that
    /// cannot be placed stay global silently.
    pub exclusive_locals: Vec<String>,
    /// Only the tiles that read an element they did not write copy in (a GEMM's `C`
    /// register tile is not copied in during the reduction's first step, which writes it
    /// whole). `false`: when some tile must copy in, every tile does. The GPU sets it: its
    /// register tiles stay in registers across the reduction steps
    /// (`gpu::device::hoist_register_tiles`), so no copy-in is left. The CPU does not: the
    /// guard turns gcc's register tile of a 1024³ f32 GEMM into a 6 % slower kernel.
    pub copy_in_where_exposed: bool,
}

/// The tile of one tensor below one mark.
pub struct TensorTile {
    /// The tensor (index into `Program::tensors`).
    pub tensor: usize,
    /// From the tile (`[p0, …]`, the mark's prefix schedule) to the first element of the
    /// box.
    pub offset: Map,
    /// The box's extent per tensor dimension.
    pub sizes: Vec<i64>,
    /// Tile → elements read (exact), if the tile reads the tensor.
    pub reads: Option<Map>,
    /// Tile → elements written (exact), if the tile writes the tensor.
    pub writes: Option<Map>,
    /// Accesses per tile (an upper bound: instance boxes times accesses per instance).
    pub accesses: i64,
}

impl TensorTile {
    /// Elements of the box.
    pub fn elems(&self) -> i64 {
        self.sizes.iter().product()
    }
    /// Accesses per element of the box.
    pub fn reuse(&self) -> f64 {
        self.accesses as f64 / self.elems().max(1) as f64
    }
}

/// What one mark's subtree touches.
pub struct MarkAnalysis {
    /// The mark's schedule depth (dimensions of the tile coordinates `p`).
    pub depth: usize,
    /// Every tensor with a rectangular tile, by tensor number.
    pub tiles: Vec<TensorTile>,
}

/// One promotion the pass made.
#[derive(Clone, Debug, PartialEq)]
pub struct PromotedTile {
    /// Its number `k` (in `copyin_<k>_<T>`).
    pub id: usize,
    /// The tensor's name.
    pub tensor: String,
    /// The buffer.
    pub buffer: Buffer,
    /// The statements below the mark.
    pub stmts: Vec<String>,
    /// The local buffer's extents.
    pub sizes: Vec<i64>,
    /// Its bytes.
    pub bytes: u64,
    /// Accesses per element.
    pub reuse: f64,
    /// Whether it is copied in / out.
    pub copy_in: bool,
    /// See [`PromotedTile::copy_in`].
    pub copy_out: bool,
    /// For a tile-local temporary (no copies, no global array): the bytes of the global
    /// array it replaces.
    pub replaces: Option<u64>,
    /// Stored in blocks of these extents, the tiles of the memory marks nested below
    /// (see [`blocking`]); `None`: row-major.
    pub block: Option<Vec<i64>>,
    /// Stored (within each block) with its dimensions in this order, outermost first,
    /// rather than in the tensor's: the register tiles below read the tile with their
    /// vector member walking the last (see [`vector_order`]). `None`: the tensor's order.
    pub order: Option<Vec<usize>>,
}

/// What the pass did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PromoteReport {
    /// Every promotion, in tree order.
    pub tiles: Vec<PromotedTile>,
    /// Tile-local temporaries that stay global arrays, with the reason.
    pub kept_global: Vec<(String, String)>,
}

impl fmt::Display for PromoteReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.tiles.is_empty() && self.kept_global.is_empty() {
            return writeln!(f, "promotion: no tensor promoted");
        }
        writeln!(f, "promotion:")?;
        for t in &self.tiles {
            let dims = dims_text(&t.sizes);
            let copies = match (t.copy_in, t.copy_out) {
                (true, true) => "copy in and out",
                (true, false) => "copy in",
                (false, true) => "copy out",
                (false, false) => "no copies",
            };
            let local = match t.replaces {
                Some(g) => format!(
                    "; tile-local: the global array ({g} bytes) is not allocated, saving {} bytes",
                    g.saturating_sub(t.bytes)
                ),
                None => String::new(),
            };
            let blocks = match &t.block {
                Some(b) => {
                    let b: Vec<String> = b.iter().map(|s| s.to_string()).collect();
                    format!("; stored in blocks of {} (the inner tiles)", b.join(" x "))
                }
                None => String::new(),
            };
            let order = match &t.order {
                Some(o) => {
                    let o: Vec<String> = o.iter().map(|d| d.to_string()).collect();
                    format!(
                        "; dimensions stored in the order {} (the register tiles' vectors walk the last)",
                        o.join(", ")
                    )
                }
                None => String::new(),
            };
            writeln!(
                f,
                "  #{} {} in {} below {}: {} = {} bytes, {:.1} accesses per element, {copies}{local}{blocks}{order}",
                t.id,
                t.tensor,
                t.buffer.name(),
                t.stmts.join(", "),
                dims,
                t.bytes,
                t.reuse
            )?;
        }
        for (t, why) in &self.kept_global {
            writeln!(f, "  {t} stays a global array: {why}")?;
        }
        Ok(())
    }
}

/// What a statement grafted by promotion does with its tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyKind {
    /// `copyin_<k>_<T>[e]`: tensor element `e` into the local buffer.
    In,
    /// `copyout_<k>_<T>[e]`: local buffer back to tensor element `e`.
    Out,
    /// `local_<k>_<T>[]`: once per tile, declares that `T` lives only in the local buffer
    /// (a tile-local temporary); it copies nothing.
    Local,
}

impl CopyKind {
    fn prefix(self) -> &'static str {
        match self {
            CopyKind::In => "copyin",
            CopyKind::Out => "copyout",
            CopyKind::Local => "local",
        }
    }
}

/// The name of promotion `k`'s statement of `kind` for `tensor`.
pub fn copy_stmt_name(k: usize, tensor: &str, kind: CopyKind) -> String {
    format!("{}_{k}_{tensor}", kind.prefix())
}

/// Splits a promotion statement's name into (kind, promotion number, tensor name).
pub fn parse_copy_stmt(name: &str) -> Option<(CopyKind, usize, &str)> {
    let (kind, rest) = [CopyKind::In, CopyKind::Out, CopyKind::Local]
        .into_iter()
        .find_map(|k| Some((k, name.strip_prefix(k.prefix())?.strip_prefix('_')?)))?;
    let (k, t) = rest.split_once('_')?;
    Some((kind, k.parse().ok()?, t))
}

/// `{ [i0, …, i(n-1)] -> [i0, …, i(d-1)] }`.
fn projection_text(n: usize, d: usize) -> String {
    let all: Vec<String> = (0..n).map(|i| format!("i{i}")).collect();
    format!("{{ [{}] -> [{}] }}", all.join(", "), all[..d].join(", "))
}

/// One mark of a tree, in pre-order.
pub struct MarkTiles {
    /// The mark's path (child indices from the root).
    pub path: Vec<usize>,
    /// The mark.
    pub mark: Mark,
    /// Its schedule depth: the dimensions of the tile coordinates.
    pub depth: usize,
    /// Inside a `skipped` subtree (never runs).
    pub dead: bool,
    /// Statement instance → tile coordinates, for every program statement instance that
    /// runs below the mark (instances added by extension nodes included).
    pub inst: UnionMap,
    /// The statements of [`MarkTiles::inst`]'s domain, sorted naturally.
    pub stmts: Vec<String>,
}

impl MarkTiles {
    /// The tiles that run (the range of [`MarkTiles::inst`]).
    pub fn tiles(&self) -> Result<Set> {
        Set::from_union_set(
            self.inst
                .copy()
                .isl("copying a map")?
                .range()
                .isl("reading the tiles of a mark")?,
        )
        .isl("reading the tiles of a mark")
    }
}

/// Every mark of the tree below `root` in pre-order, with the tiles of the instances
/// below it. isl's own prefix-schedule queries refuse extension nodes that add instances,
/// so the relation is built top-down: a band appends its members, a filter restricts, an
/// extension adds its instances with the outer schedule it maps them from.
pub fn mark_tiles(ctx: &Ctx, scop: &Scop, root: &ScheduleNode) -> Result<Vec<MarkTiles>> {
    let dom = root
        .domain_get_domain()
        .isl("reading the schedule's domain")?;
    let r = UnionMap::from_domain(dom).isl("starting the prefix schedule")?;
    let mut out = Vec::new();
    let mut open = Vec::new();
    let mut path = Vec::new();
    let n = root.n_children().isl("counting children")?;
    for i in 0..n {
        let c = root
            .copy()
            .isl("copying a node")?
            .child(i)
            .isl("visiting a child")?;
        path.push(i as usize);
        let mut w = Walk {
            ctx,
            scop,
            out: &mut out,
            open: &mut open,
            path: &mut path,
        };
        w.node(&c, r.copy().isl("copying a map")?, 0, false)?;
        path.pop();
    }
    for m in &mut out {
        m.stmts = stmt_names(&m.inst)?;
    }
    Ok(out)
}

/// [`mark_tiles`] of a typed tree.
pub fn tree_marks(ctx: &Ctx, scop: &Scop, tree: &ScheduleTree) -> Result<Vec<MarkTiles>> {
    let schedule = tree.to_isl(ctx)?;
    let root = schedule.get_root().isl("reading the root")?;
    mark_tiles(ctx, scop, &root)
}

struct Walk<'a, 'b> {
    ctx: &'a Ctx,
    scop: &'a Scop,
    out: &'b mut Vec<MarkTiles>,
    open: &'b mut Vec<usize>,
    path: &'b mut Vec<usize>,
}

impl Walk<'_, '_> {
    /// The program's domain of the statements `r` schedules (copy statements have none):
    /// the leaf's few statements, not every statement of the program.
    fn program_domain_of(&self, r: &UnionMap) -> Result<UnionSet> {
        let list = r.get_map_list().isl("listing maps")?;
        let mut out = UnionSet::read_from_str(&self.ctx.isl, "{ }").isl("an empty set")?;
        for i in 0..list.n_map().isl("counting maps")? {
            let m = list.get_at(i).isl("reading a map")?;
            if !m.has_tuple_name(DimType::In).isl("reading a tuple name")? {
                continue;
            }
            let name = m.get_tuple_name(DimType::In).isl("reading a tuple name")?;
            if let Some(s) = self.scop.stmt_names.iter().position(|n| n == name) {
                out = out
                    .add_set(self.scop.stmt_domains[s].copy().isl("copying a domain")?)
                    .isl("collecting statement domains")?;
            }
        }
        Ok(out)
    }

    fn node(&mut self, node: &ScheduleNode, r: UnionMap, k: usize, dead: bool) -> Result<()> {
        let mut r = r;
        let mut k = k;
        let mut dead = dead;
        let mut pushed = false;
        match node.get_type().isl("reading a node type")? {
            ScheduleNodeType::Leaf => {
                if !dead {
                    let program = self.program_domain_of(&r)?;
                    for &m in self.open.iter() {
                        let d = self.out[m].depth;
                        let proj = UnionMap::read_from_str(&self.ctx.isl, &projection_text(k, d))
                            .isl("building a projection")?;
                        let rel = r
                            .copy()
                            .isl("copying a map")?
                            .apply_range(proj)
                            .isl("projecting a prefix schedule")?
                            .intersect_domain(program.copy().isl("copying the domain")?)
                            .isl("restricting to the program's statements")?;
                        let acc = std::mem::replace(
                            &mut self.out[m].inst,
                            UnionMap::read_from_str(&self.ctx.isl, "{ }").isl("an empty map")?,
                        );
                        self.out[m].inst = acc.union(rel).isl("uniting prefix schedules")?;
                    }
                }
                return Ok(());
            }
            ScheduleNodeType::Band => {
                let n = node.band_n_member().isl("reading a band")? as usize;
                if n > 0 {
                    let b = node
                        .band_get_partial_schedule_union_map()
                        .isl("reading a band's schedule")?;
                    r = r.flat_range_product(b).isl("extending a prefix schedule")?;
                    k += n;
                }
            }
            ScheduleNodeType::Filter => {
                let f = node.filter_get_filter().isl("reading a filter")?;
                r = r.intersect_domain(f).isl("filtering a prefix schedule")?;
            }
            ScheduleNodeType::Extension => {
                let e = node
                    .extension_get_extension()
                    .isl("reading an extension")?
                    .reverse()
                    .isl("reversing an extension")?;
                r = r.union(e).isl("adding extension instances")?;
            }
            ScheduleNodeType::Mark => {
                let name = node
                    .mark_get_id()
                    .isl("reading a mark")?
                    .get_name()
                    .isl("reading a mark")?
                    .to_string();
                let mark = Mark::from_isl_name(&name).ok_or_else(|| {
                    miette!(
                        help = format!("known marks: {}", Mark::known_names().join(", ")),
                        "unknown mark {name:?} in the schedule tree"
                    )
                })?;
                self.out.push(MarkTiles {
                    path: self.path.clone(),
                    mark,
                    depth: k,
                    dead,
                    inst: UnionMap::read_from_str(&self.ctx.isl, "{ }").isl("an empty map")?,
                    stmts: Vec::new(),
                });
                if mark == Mark::Skipped {
                    dead = true;
                }
                self.open.push(self.out.len() - 1);
                pushed = true;
            }
            _ => {}
        }
        let n = node.n_children().isl("counting children")?;
        for i in 0..n {
            let c = node
                .copy()
                .isl("copying a node")?
                .child(i)
                .isl("visiting a child")?;
            self.path.push(i as usize);
            let res = self.node(&c, r.copy().isl("copying a map")?, k, dead);
            self.path.pop();
            res?;
        }
        if pushed {
            self.open.pop();
        }
        Ok(())
    }
}

/// The maps of a union map, by the name of their range tuple.
fn by_range_name(u: &UnionMap) -> Result<BTreeMap<String, Map>> {
    let list = u.get_map_list().isl("listing maps")?;
    let n = list.n_map().isl("counting maps")?;
    let mut out = BTreeMap::new();
    for i in 0..n {
        let m = list.get_at(i).isl("reading a map")?;
        let name = m
            .get_tuple_name(DimType::Out)
            .isl("reading a tuple name")?
            .to_string();
        let m = match out.remove(&name) {
            None => m,
            Some(prev) => {
                let prev: Map = prev;
                prev.union(m).isl("uniting maps")?
            }
        };
        out.insert(name, m);
    }
    Ok(out)
}

fn box_sizes(m: &Map) -> Result<Option<(Map, Vec<i64>)>> {
    let _s = polyhedral::substeps::span("promote:box_sizes");
    let bx = m
        .get_range_simple_fixed_box_hull()
        .isl("computing a footprint box")?;
    if !bx.is_valid().isl("checking a footprint box")? {
        return Ok(None);
    }
    let size = bx.get_size().isl("reading a box size")?;
    let n = size.size().isl("reading a box size")?;
    let mut sizes = Vec::with_capacity(n as usize);
    for i in 0..n {
        let v = size.get_at(i).isl("reading a box size")?;
        if !v.is_int().isl("reading a box size")? {
            return Ok(None);
        }
        sizes.push(v.get_num_si().isl("reading a box size")?);
    }
    let offset = Map::from_multi_aff(bx.get_offset().isl("reading a box offset")?)
        .isl("converting a box offset")?;
    Ok(Some((offset, sizes)))
}

/// How many footprint boxes [`BOXES`] keeps before it starts again (a long-lived process,
/// such as the Python package's, compiles many programs).
const BOXES_KEPT: usize = 4096;

thread_local! {
    /// [`box_sizes`] by the map's text without its range's name, for every mark of every
    /// stage on this thread: the offset as text (isl objects belong to one context), and
    /// the sizes. The statements of a fused band (and the tensors they touch) have tiles
    /// of the same shape, and the analysis of a mark runs at promotion and again at code
    /// generation.
    static BOXES: std::cell::RefCell<BoxTexts> = std::cell::RefCell::new(BoxTexts::new());
}

/// A map's text → its box's offset text and sizes (`None`: no fixed box).
type BoxTexts = std::collections::HashMap<String, Option<(String, Vec<i64>)>>;

/// [`box_sizes`] remembered in [`BOXES`] (isl's answer depends on the map only, and not on
/// its range's name).
fn remembered_box_sizes(m: &Map) -> Result<Option<(Map, Vec<i64>)>> {
    let anonymous = m
        .copy()
        .isl("copying a map")?
        .reset_tuple_id(DimType::Out)
        .isl("dropping a range's name")?;
    let key = anonymous.to_str().isl("printing a map")?.to_string();
    let known = BOXES.with(|b| b.borrow().get(&key).cloned());
    let found = match known {
        Some(found) => found,
        None => {
            let found = match box_sizes(&anonymous)? {
                Some((offset, sizes)) => Some((
                    offset.to_str().isl("printing a box offset")?.to_string(),
                    sizes,
                )),
                None => None,
            };
            BOXES.with(|b| {
                let mut b = b.borrow_mut();
                if b.len() >= BOXES_KEPT {
                    b.clear();
                }
                b.insert(key, found.clone());
            });
            found
        }
    };
    let Some((offset, sizes)) = found else {
        return Ok(None);
    };
    let mut offset = Map::read_from_str(&m.get_ctx(), &offset).isl("reading a box offset")?;
    if m.has_tuple_id(DimType::Out).isl("reading a range's name")? {
        offset = offset
            .set_tuple_id(DimType::Out, m.get_tuple_id(DimType::Out).isl("a name")?)
            .isl("naming a box offset")?;
    }
    Ok(Some((offset, sizes)))
}

/// The tiles of every tensor the subtree of a mark touches (see the module
/// documentation). `None` when the mark is at depth 0 (no tile) or never runs.
/// Tensors of no dimensions (scalars) have no tile here: see [`analyse_mark_with`].
pub fn analyse_mark(scop: &Scop, m: &MarkTiles) -> Result<Option<MarkAnalysis>> {
    analyse_mark_with(scop, m, false)
}

/// [`analyse_mark`], with the one-element tiles of tensors of no dimensions too when
/// `scalars` (a 0-d temporary that post-tiling fusion recomputes in every tile gets a
/// one-element tile-local buffer; nothing else promotes scalars).
pub fn analyse_mark_with(
    scop: &Scop,
    m: &MarkTiles,
    scalars: bool,
) -> Result<Option<MarkAnalysis>> {
    let _s = polyhedral::substeps::span("promote:analyse_mark");
    let depth = m.depth;
    if depth == 0 || m.dead {
        return Ok(None);
    }
    let inst = m.inst.copy().isl("copying a map")?;
    let rev = inst
        .copy()
        .isl("copying a map")?
        .reverse()
        .isl("reversing a map")?;
    let reads = by_range_name(
        &rev.copy()
            .isl("copying a map")?
            .apply_range(scop.reads.copy().isl("copying reads")?)
            .isl("computing read footprints")?,
    )?;
    let writes = by_range_name(
        &rev.apply_range(scop.writes.copy().isl("copying writes")?)
            .isl("computing write footprints")?,
    )?;
    // Instances per tile, per statement (box sizes), for the access counts.
    let per_stmt = by_domain_name(&inst)?;
    let mut inst_count: BTreeMap<String, i64> = BTreeMap::new();
    for (s, m) in per_stmt {
        let r = m.reverse().isl("reversing a map")?;
        // With symbolic sizes, a statement whose instances per tile grow with a size (a
        // tile loop over it lies below the mark) is counted at the extent the default
        // policy assumes (this only ranks tiles by reuse; their boxes are exact).
        let c = match remembered_box_sizes(&r)? {
            Some((_, sizes)) => sizes.iter().product(),
            None => match crate::passes::assumed_sizes::assumed_sizes(
                r.get_space().isl("reading a space")?,
            )? {
                Some(params) => {
                    let fixed = r.intersect_params(params).isl("fixing the sizes")?;
                    box_sizes(&fixed)?.map_or(0, |(_, sizes)| sizes.iter().product())
                }
                None => 0,
            },
        };
        inst_count.insert(s, c);
    }
    let mut tiles = Vec::new();
    let names: BTreeSet<&String> = reads.keys().chain(writes.keys()).collect();
    for name in names {
        let Some(t) = scop_tensor(scop, name) else {
            continue;
        };
        let r = reads
            .get(name)
            .map(|m| m.copy())
            .transpose()
            .isl("copying a map")?;
        let w = writes
            .get(name)
            .map(|m| m.copy())
            .transpose()
            .isl("copying a map")?;
        let all = match (&r, &w) {
            (Some(a), Some(b)) => a
                .copy()
                .isl("copying")?
                .union(b.copy().isl("copying")?)
                .isl("uniting footprints")?,
            (Some(a), None) | (None, Some(a)) => a.copy().isl("copying")?,
            (None, None) => continue,
        };
        let Some((offset, sizes)) = remembered_box_sizes(&all)? else {
            continue;
        };
        if (sizes.is_empty() && !scalars) || sizes.iter().any(|&s| s <= 0) {
            continue;
        }
        let mut accesses = 0i64;
        for (s, acc) in scop.stmt_reads.iter().enumerate() {
            // Reads of the same element in one instance count once (the compiler loads it
            // once): `A(h, w) * A(h, w)` does not make `A` reused.
            let mut distinct: Vec<&Vec<polyhedral::ir::Aff>> = Vec::new();
            for a in acc.iter().filter(|a| a.tensor == t) {
                if !distinct.contains(&&a.index) {
                    distinct.push(&a.index);
                }
            }
            let n_acc = distinct.len() as i64 + (scop.stmt_writes[s].tensor == t) as i64;
            accesses += n_acc * inst_count.get(&scop.stmt_names[s]).copied().unwrap_or(0);
        }
        tiles.push(TensorTile {
            tensor: t,
            offset,
            sizes,
            reads: r,
            writes: w,
            accesses,
        });
    }
    Ok(Some(MarkAnalysis { depth, tiles }))
}

/// What a copy-in of `t` must bring: `None` when every element a tile reads was written
/// before by an instance of the same tile, else the whole footprint `t.reads` (of the
/// tiles where some read is not, with `only_exposed_tiles`). A read is
/// covered when its exact (last-writer) source, from the RAW dependences, writes that
/// element in the same tile: the dependences order that write before the read in any
/// legal schedule, and the write goes to the tile's buffer. The conv chain's register
/// tile of `C` is covered whole by its initialisation `C = 0`, so it is not read from
/// memory.
fn exposed_reads(
    scop: &Scop,
    deps: &Deps,
    m: &MarkTiles,
    t: &TensorTile,
    only_exposed_tiles: bool,
) -> Result<Option<Map>> {
    let Some(reads) = &t.reads else {
        return Ok(None);
    };
    let of_tensor = |u: &UnionMap| -> Result<UnionMap> {
        let ext = UnionSet::from_set(
            scop.tensor_extents[t.tensor]
                .copy()
                .isl("copying a tensor's extent")?,
        )
        .isl("a tensor's extent")?;
        u.copy()
            .isl("copying accesses")?
            .intersect_range(ext)
            .isl("accesses of one tensor")
    };
    let r = of_tensor(&scop.reads)?;
    let w = of_tensor(&scop.writes)?;
    let inst_rev = m
        .inst
        .copy()
        .isl("copying a map")?
        .reverse()
        .isl("tiles to instances")?;
    // t -> [r -> x]: the read accesses of each tile.
    let to_pair = r
        .copy()
        .isl("copying reads")?
        .domain_map()
        .isl("read pairs")?
        .reverse()
        .isl("read pairs")?;
    let all = inst_rev
        .copy()
        .isl("copying a map")?
        .apply_range(to_pair.copy().isl("copying a map")?)
        .isl("the reads of each tile")?;
    // w -> [r -> x]: w is r's source and writes x.
    let by_source = deps
        .raw
        .copy()
        .isl("copying RAW dependences")?
        .apply_range(to_pair)
        .isl("sources of read pairs")?;
    let by_element = w
        .apply_range(
            r.range_map()
                .isl("read pairs by element")?
                .reverse()
                .isl("read pairs by element")?,
        )
        .isl("writers of read elements")?;
    let sourced = by_source
        .intersect(by_element)
        .isl("read pairs with their source")?;
    // t -> [r -> x] whose source runs in the tile t too.
    let covered = inst_rev
        .apply_range(sourced)
        .isl("read pairs sourced in a tile")?
        .intersect(all.copy().isl("copying a map")?)
        .isl("covered reads of each tile")?;
    let exposed = all
        .subtract(covered)
        .isl("exposed reads of each tile")?
        .range_factor_range()
        .isl("exposed elements of each tile")?;
    if exposed.is_empty().isl("testing a map for emptiness")? {
        return Ok(None);
    }
    // Some tile reads a value it did not write: those tiles copy in their whole footprint,
    // whose box does not vary with the loops hoisting may move it above; the others copy
    // nothing (a GEMM's `C` register tile is covered in the first reduction step only, so
    // that step's copy-in goes, and where the GPU keeps the tile in registers across the
    // steps, `gpu::device::hoist_register_tiles`, no copy-in is left).
    if !only_exposed_tiles {
        return Ok(Some(reads.copy().isl("copying a map")?));
    }
    let space = reads
        .get_space()
        .isl("a footprint's space")?
        .domain()
        .isl("the tile space")?;
    let tiles = exposed
        .domain()
        .isl("tiles with exposed reads")?
        .extract_set(space)
        .isl("tiles with exposed reads")?;
    Ok(Some(
        reads
            .copy()
            .isl("copying a map")?
            .intersect_domain(tiles)
            .isl("the footprints of tiles with exposed reads")?,
    ))
}

fn by_domain_name(u: &UnionMap) -> Result<BTreeMap<String, Map>> {
    let rev = u
        .copy()
        .isl("copying a map")?
        .reverse()
        .isl("reversing a map")?;
    let mut out = BTreeMap::new();
    for (k, m) in by_range_name(&rev)? {
        out.insert(k, m.reverse().isl("reversing a map")?);
    }
    Ok(out)
}

fn scop_tensor(scop: &Scop, name: &str) -> Option<usize> {
    scop.tensor_extents
        .iter()
        .position(|s| s.get_tuple_name().map(|n| n == name).unwrap_or(false))
}

/// The tensors the policy promotes at one mark, as indices into `a.tiles`: none of the
/// tensors in `skip` and no scalar (those are analysed only to place tile-local
/// temporaries), and `used` bytes of the level are taken already (by tiles packed at
/// enclosing marks of the same buffer).
pub(crate) fn choose(
    a: &MarkAnalysis,
    prog: &Program,
    level: &LevelInfo,
    opts: &PromoteOptions,
    skip: &BTreeSet<usize>,
    used: u64,
) -> Vec<usize> {
    let bytes =
        |t: &TensorTile| t.elems() as u64 * prog.tensors[t.tensor].dtype.size_bytes() as u64;
    let mut order: Vec<usize> = (0..a.tiles.len())
        .filter(|&i| !skip.contains(&a.tiles[i].tensor) && !a.tiles[i].sizes.is_empty())
        .collect();
    order.sort_by(|&x, &y| {
        a.tiles[y]
            .reuse()
            .partial_cmp(&a.tiles[x].reuse())
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(x.cmp(&y))
    });
    let budget = level.bytes / level.stages.max(1);
    let mut used = used;
    let mut out = Vec::new();
    for i in order {
        let t = &a.tiles[i];
        let b = bytes(t);
        let take = match level.kind {
            PromoteKind::None => false,
            // Accumulators (written tiles), and read-only tiles of a few registers (a
            // filter's weights); a larger read-only tile is better loaded in vectors
            // where it is used than copied.
            PromoteKind::Registers => {
                opts.registers
                    && t.reuse() >= 2.0
                    && used + b <= budget
                    && (t.writes.is_some() || b <= level.bytes / 8)
            }
            PromoteKind::Shared => t.writes.is_none() && t.reuse() >= 2.0 && used + b <= budget,
            PromoteKind::Pack => match opts.pack {
                PackPolicy::None => false,
                PackPolicy::All => used + b <= budget,
                PackPolicy::Auto => {
                    t.writes.is_none() && t.reuse() >= 4.0 && used + b <= budget / 2
                }
            },
        };
        if take {
            used += b;
            out.push(i);
        }
    }
    out.sort_unstable();
    out
}

/// One tile to graft under a mark: its promotion number, the tile, and whether it is a
/// tile-local temporary (no copies).
struct GraftTile {
    id: usize,
    tile: TensorTile,
    local: bool,
    block: Option<Vec<i64>>,
}

/// The promotions to graft under one mark: its path and the tiles.
type Graft = (Vec<usize>, Vec<GraftTile>);

/// Where the tile-local temporaries go: every memory mark's analysis when some must be
/// placed (else none yet), the (mark index, tile index) of each placed one, and each
/// placed one's (mark index, tensor). The ones that cannot be placed are reported as
/// kept global.
#[allow(clippy::type_complexity)]
fn place_locals(
    prog: &Program,
    scop: &Scop,
    marks: &[MarkTiles],
    opts: &PromoteOptions,
    report: &mut PromoteReport,
) -> Result<(
    Vec<Option<MarkAnalysis>>,
    Vec<(usize, usize)>,
    Vec<(usize, usize)>,
)> {
    // Every memory mark's analysis, when tile-local temporaries must be placed; otherwise
    // each mark is analysed only when its level promotes something.
    let mut analyses: Vec<Option<MarkAnalysis>> = Vec::with_capacity(marks.len());
    for m in marks {
        analyses.push(match m.mark {
            Mark::Mem(_) if !opts.locals.is_empty() || !opts.exclusive_locals.is_empty() => {
                analyse_mark_with(scop, m, true)?
            }
            _ => None,
        });
    }
    // Tile-local temporaries: (mark index, tile index) for each that can be placed.
    let mut locals: Vec<(usize, usize)> = Vec::new();
    for name in &opts.locals {
        match place_local(prog, scop, (marks, &opts.levels), &analyses, name, false)? {
            Ok(at) => locals.push(at),
            Err(why) => report.kept_global.push((name.clone(), why)),
        }
    }
    for name in &opts.exclusive_locals {
        if let Ok(at) = place_local(prog, scop, (marks, &opts.levels), &analyses, name, true)? {
            locals.push(at);
        }
    }
    // Each tile-local temporary: the mark that holds it, and the tensor.
    let local_tensors: Vec<(usize, usize)> = locals
        .iter()
        .filter_map(|&(m, i)| Some((m, analyses[m].as_ref()?.tiles[i].tensor)))
        .collect();
    Ok((analyses, locals, local_tensors))
}

/// The tensors mark `marks[mi]` (analysed as `a`) does not pack at `level`, and the
/// bytes of the level already taken above it: tensors packed at an enclosing mark of the
/// same buffer, tensors whose box grows below it, blocks read in place (`views`), and
/// tile-local temporaries (except into register tiles strictly below their mark).
#[allow(clippy::too_many_arguments)]
fn skipped_tensors(
    scop: &Scop,
    marks: &[MarkTiles],
    mi: usize,
    a: &MarkAnalysis,
    level: &LevelInfo,
    local_tensors: &[(usize, usize)],
    packed: &[(Vec<usize>, Buffer, usize, u64)],
    views: &[(usize, usize)],
) -> Result<(BTreeSet<usize>, u64)> {
    let m = &marks[mi];
    let mut skip: BTreeSet<usize> = local_tensors
        .iter()
        .filter(|&&(at, _)| {
            let strictly_below =
                m.path.len() > marks[at].path.len() && m.path.starts_with(&marks[at].path);
            level.kind != PromoteKind::Registers || !strictly_below
        })
        .map(|&(_, t)| t)
        .collect();
    let mut used = 0;
    for (path, b, tensor, bytes) in packed {
        if *b == level.buffer && m.path.starts_with(path) {
            skip.insert(*tensor);
            used += bytes;
        }
    }
    skip.extend(growing_below(scop, marks, mi, a)?);
    skip.extend(views.iter().filter(|v| v.0 == mi).map(|v| v.1));
    Ok((skip, used))
}

/// Runs promotion on `tree` (see the module documentation).
pub fn promote(
    ctx: &Ctx,
    prog: &Program,
    scop: &Scop,
    deps: &Deps,
    tree: &ScheduleTree,
    opts: &PromoteOptions,
) -> Result<(ScheduleTree, PromoteReport)> {
    let schedule = tree.to_isl(ctx)?;
    let root = schedule.get_root().isl("reading the root")?;
    let marks = polyhedral::substeps::timed("promote:mark_tiles", || mark_tiles(ctx, scop, &root))?;
    let regs: Vec<Buffer> = opts
        .levels
        .iter()
        .filter(|l| l.kind == PromoteKind::Registers)
        .map(|l| l.buffer)
        .collect();
    let mut report = PromoteReport::default();
    let (mut analyses, locals, local_tensors) =
        place_locals(prog, scop, &marks, opts, &mut report)?;
    let mut plans: Vec<Graft> = Vec::new();
    // Register tiles made so far: nothing below them is promoted again (a fused
    // producer's own tiles inside a register tile would only copy data around).
    let mut reg_tiles: Vec<Vec<usize>> = Vec::new();
    // Every tile promoted so far: mark path, buffer, tensor, bytes.
    let mut packed: Vec<(Vec<usize>, Buffer, usize, u64)> = Vec::new();
    // Nested marks whose tile of a tensor is a block of a tile stored in blocks above
    // them (mark index, tensor): they read the block in place, so they do not pack it.
    // Neither do the marks in between whose box is the whole tile (a fused producer's
    // own cache tiles inside the fused tile): their copy would index the blocks as rows.
    let mut views: Vec<(usize, usize)> = Vec::new();
    for (mi, m) in marks.iter().enumerate() {
        let Mark::Mem(buf) = m.mark else { continue };
        let level = opts
            .levels
            .iter()
            .find(|l| l.buffer == buf && l.kind != PromoteKind::None)
            .filter(|_| !reg_tiles.iter().any(|p| m.path.starts_with(p)));
        let mut picks: Vec<(usize, bool)> = locals
            .iter()
            .filter(|&&(at, _)| at == mi)
            .map(|&(_, i)| (i, true))
            .collect();
        if level.is_none() && picks.is_empty() {
            continue;
        }
        let a = match analyses[mi].take() {
            Some(a) => a,
            None => match analyse_mark(scop, m)? {
                Some(a) => a,
                None => continue,
            },
        };
        if let Some(level) = level {
            // A tensor packed at an enclosing mark of the same buffer is not packed again,
            // and its bytes stay taken; a tensor whose box grows with the tile loops
            // between this mark and a nested one of the same buffer waits for that one.
            // A tile-local temporary is not packed again, except into register tiles
            // below the mark that holds it (a fused contraction's accumulator:
            // attention's `S` row block).
            let (skip, used) =
                skipped_tensors(scop, &marks, mi, &a, level, &local_tensors, &packed, &views)?;
            let chosen = choose(&a, prog, level, opts, &skip, used);
            if level.kind == PromoteKind::Registers && !chosen.is_empty() {
                reg_tiles.push(m.path.clone());
            }
            picks.extend(chosen.into_iter().map(|i| (i, false)));
        }
        if picks.is_empty() {
            continue;
        }
        picks.sort_unstable();
        let below = m.stmts.clone();
        let mut chosen = Vec::new();
        let mut tiles: Vec<Option<TensorTile>> = a.tiles.into_iter().map(Some).collect();
        for (i, local) in picks {
            let Some(mut t) = tiles[i].take() else {
                continue;
            };
            // No copy-in when each tile writes what it reads before reading it.
            if !local && t.reads.is_some() {
                t.reads = exposed_reads(scop, deps, m, &t, opts.copy_in_where_exposed)?;
            }
            // Shared memory keeps tiles row-major: its copies are spread over threads, and
            // blocks of register tiles would only shorten the rows they stride along.
            let block = if local || level.is_some_and(|l| l.kind == PromoteKind::Shared) {
                None
            } else {
                blocking(ctx, scop, &marks, mi, &t)?.map(|b| {
                    views.extend(b.inner.iter().map(|(j, _)| (*j, t.tensor)));
                    views.extend(b.through.iter().map(|&j| (j, t.tensor)));
                    b.sizes
                })
            };
            let order = if !local
                && level.is_some_and(|l| matches!(l.kind, PromoteKind::Pack | PromoteKind::Shared))
            {
                vector_order(ctx, prog, scop, &root, &marks, mi, t.tensor, &regs)?
            } else {
                None
            };
            let id = report.tiles.len();
            let ten = &prog.tensors[t.tensor];
            let eb = ten.dtype.size_bytes() as u64;
            if !local {
                packed.push((m.path.clone(), buf, t.tensor, t.elems() as u64 * eb));
            }
            report.tiles.push(PromotedTile {
                id,
                tensor: ten.name.clone(),
                buffer: buf,
                stmts: below.clone(),
                sizes: t.sizes.clone(),
                bytes: t.elems() as u64 * eb,
                reuse: t.reuse(),
                copy_in: !local && t.reads.is_some(),
                copy_out: !local && t.writes.is_some(),
                replaces: if local {
                    let ext = &scop.tensor_extents[t.tensor];
                    polyhedral::isl::ffi::count::set_count(ext).map(|n| n * eb)
                } else {
                    None
                },
                block: block.clone(),
                order,
            });
            chosen.push(GraftTile {
                id,
                tile: t,
                local,
                block,
            });
        }
        plans.push((m.path.clone(), chosen));
    }
    // Apply deeper marks first so that the paths of the others stay valid.
    let mut out = tree.clone();
    plans.sort_by_key(|p| std::cmp::Reverse(p.0.len()));
    for (p, tiles) in plans {
        graft(&mut out, &p, prog, &tiles)?;
    }
    Ok((out, report))
}

/// The order to store the packed tile of tensor `t` at `marks[mi]` in, so that the
/// register tiles below read it contiguously: when, in every register tile nested below
/// (a mark of one of the buffers `regs`), one step of the vector member (the last
/// coincident member of the point band below the mark, which code generation keeps
/// innermost) moves every access of `t` along one dimension `p` other than the last, or
/// leaves it in place, the order puts `p` last (`B` of `A·Bᵀ`, read `B(j, k)` with
/// vectors along `j`, is stored `k`-major). `None` when some register tile reads `t`
/// along its last dimension already, or diagonally, or when no register tile below
/// reads it. The promotion pass and code generation ([`promotions_in`]) both call it on
/// the same tree (before and after the copies are grafted), so they agree.
#[allow(clippy::too_many_arguments)]
fn vector_order(
    ctx: &Ctx,
    prog: &Program,
    scop: &Scop,
    root: &ScheduleNode,
    marks: &[MarkTiles],
    mi: usize,
    t: usize,
    regs: &[Buffer],
) -> Result<Option<Vec<usize>>> {
    let ten = &prog.tensors[t];
    let rank = ten.shape.len();
    if rank < 2 {
        return Ok(None);
    }
    let here = &marks[mi].path;
    let still = scop.unit_steps(&ctx.isl, &ten.name, rank, rank)?;
    let mut along: Option<usize> = None;
    for m in marks {
        let Mark::Mem(b) = m.mark else { continue };
        if !regs.contains(&b) || m.dead || m.path.len() <= here.len() || !m.path.starts_with(here) {
            continue;
        }
        let Some(point) = point_band_below(node_at(root, &m.path)?)? else {
            continue;
        };
        let n = point.band_n_member().isl("reading a band")?;
        let mut v = None;
        for k in 0..n {
            if point.band_member_get_coincident(k).isl("reading a band")? {
                v = Some(k as usize);
            }
        }
        let Some(v) = v else { continue };
        let schedule = point
            .band_get_partial_schedule()
            .isl("reading a band's schedule")?;
        let Some(text) = polyhedral::isl::ffi::schedule_tree::multi_union_pw_aff_text(&schedule)
        else {
            continue;
        };
        for step in scop.member_steps(&ctx.isl, &text, n as usize, v)? {
            if step.tensor != t || step.deltas.is_subset(&still).isl("testing steps")? {
                continue;
            }
            let mut dim = None;
            for p in 0..rank {
                let unit = scop.unit_steps(&ctx.isl, &ten.name, rank, p)?;
                if step
                    .deltas
                    .is_subset(&unit)
                    .isl("testing the access steps")?
                {
                    dim = Some(p);
                    break;
                }
            }
            match (dim, along) {
                (Some(p), None) if p + 1 < rank => along = Some(p),
                (Some(p), Some(q)) if p == q => {}
                _ => return Ok(None),
            }
        }
    }
    Ok(along.map(|p| (0..rank).filter(|&d| d != p).chain([p]).collect()))
}

/// The point band right below a memory mark: its child, or, once copies are grafted
/// there (an extension over a sequence of copies and the original subtree), the band of
/// the sequence's child that holds no copy statement.
fn point_band_below(mark: ScheduleNode) -> Result<Option<ScheduleNode>> {
    let mut c = mark.child(0).isl("visiting a child")?;
    if c.get_type().isl("reading a node type")? == ScheduleNodeType::Extension {
        let seq = c.child(0).isl("visiting a child")?;
        if seq.get_type().isl("reading a node type")? != ScheduleNodeType::Sequence {
            return Ok(None);
        }
        let mut found = None;
        for i in 0..seq.n_children().isl("counting children")? {
            let f = seq
                .copy()
                .isl("copying a node")?
                .child(i)
                .isl("visiting a child")?;
            let filter = f.filter_get_filter().isl("reading a filter")?;
            let names = polyhedral::isl::ffi::model::union_set_text(&filter);
            if !names.contains("copyin_") && !names.contains("copyout_") {
                found = Some(f.child(0).isl("visiting a child")?);
                break;
            }
        }
        let Some(f) = found else { return Ok(None) };
        c = f;
    }
    Ok((c.get_type().isl("reading a node type")? == ScheduleNodeType::Band).then_some(c))
}

/// The tensors of `a` (the analysis of `marks[mi]`) whose box is smaller at a memory mark
/// of the same buffer nested below (the first such mark on each path): the tile loops in
/// between move it, so the nested mark is where it belongs.
fn growing_below(
    scop: &Scop,
    marks: &[MarkTiles],
    mi: usize,
    a: &MarkAnalysis,
) -> Result<BTreeSet<usize>> {
    let outer = &marks[mi];
    let mut nested: Vec<usize> = Vec::new();
    let mut out = BTreeSet::new();
    for (j, m) in marks.iter().enumerate().skip(mi + 1) {
        if !m.path.starts_with(&outer.path) {
            break;
        }
        if m.mark != outer.mark
            || m.dead
            || nested.iter().any(|&k| m.path.starts_with(&marks[k].path))
        {
            continue;
        }
        nested.push(j);
        let Some(inner) = analyse_mark(scop, m)? else {
            continue;
        };
        for t in &a.tiles {
            if inner
                .tiles
                .iter()
                .any(|x| x.tensor == t.tensor && x.sizes != t.sizes)
            {
                out.insert(t.tensor);
            }
        }
    }
    Ok(out)
}

/// How a packed tile is stored in blocks (see [`blocking`]).
pub struct Blocking {
    /// The extents of one block.
    pub sizes: Vec<i64>,
    /// The memory marks nested below (indices into the mark list) whose tiles of the
    /// tensor are the blocks, with the tensor's box offset there (inner tile → first
    /// element).
    pub inner: Vec<(usize, Map)>,
    /// The memory marks in between (indices into the mark list) whose box of the tensor
    /// is the tile's own: they see the tile as it is stored, so they must not pack the
    /// tensor again (a copy there would read the blocks as rows).
    pub through: Vec<usize>,
}

/// Whether the read-only tile `t` of mark `marks[mi]` is stored in blocks: when the
/// memory marks nested right below (the first ones on each path) all take a box of the
/// same extents `b` of the tensor, smaller than the tile in some dimension other than the
/// first, every instance below the mark that reads the tensor runs below one of them, and
/// each of their boxes is exactly one block of the tile split into `b`-sized blocks
/// (starting at the tile's first element). Then each inner tile reads one contiguous
/// block: a register tile sweeping a micro-panel of a packed GEMM operand, for instance.
/// The marks in between whose box is the whole tile are looked through
/// ([`Blocking::through`]).
pub fn blocking(
    ctx: &Ctx,
    scop: &Scop,
    marks: &[MarkTiles],
    mi: usize,
    t: &TensorTile,
) -> Result<Option<Blocking>> {
    if t.writes.is_some() || t.reads.is_none() || t.sizes.len() < 2 {
        return Ok(None);
    }
    let outer = &marks[mi];
    // The memory marks nested below the mark, the first on each path whose box of the
    // tensor is smaller than the tile (marks with the same box are looked through).
    let mut nested: Vec<usize> = Vec::new();
    let mut sizes: Option<Vec<i64>> = None;
    let mut inner = Vec::new();
    let mut through = Vec::new();
    let mut covered: Option<isl_rs::UnionSet> = None;
    for (j, m) in marks.iter().enumerate().skip(mi + 1) {
        if !m.path.starts_with(&outer.path) {
            break;
        }
        if !matches!(m.mark, Mark::Mem(_)) || m.dead {
            continue;
        }
        if nested.iter().any(|&k| m.path.starts_with(&marks[k].path)) {
            continue;
        }
        let Some(a) = analyse_mark(scop, m)? else {
            continue;
        };
        let Some(it) = a.tiles.into_iter().find(|x| x.tensor == t.tensor) else {
            continue;
        };
        if it.sizes == t.sizes {
            through.push(j);
            continue;
        }
        nested.push(j);
        if sizes.as_ref().is_some_and(|s| *s != it.sizes) {
            return Ok(None);
        }
        sizes = Some(it.sizes.clone());
        let dom = marks[j]
            .inst
            .copy()
            .isl("copying a map")?
            .domain()
            .isl("reading the instances of a tile")?;
        covered = Some(match covered {
            None => dom,
            Some(c) => c.union(dom).isl("uniting instances")?,
        });
        inner.push((j, it.offset));
    }
    let (Some(b), Some(covered)) = (sizes, covered) else {
        return Ok(None);
    };
    let s = &t.sizes;
    if b.len() != s.len()
        || b.iter().zip(s).any(|(b, s)| b > s || *b <= 0)
        || !b.iter().zip(s).skip(1).any(|(b, s)| b < s)
    {
        return Ok(None);
    }
    // Every instance below the mark that reads the tensor runs below a nested mark.
    let ext = isl_rs::UnionSet::from_set(
        scop.tensor_extents[t.tensor]
            .copy()
            .isl("copying a tensor's extent")?,
    )
    .isl("reading a tensor's extent")?;
    let readers = scop
        .reads
        .copy()
        .isl("copying reads")?
        .intersect_range(ext)
        .isl("finding a tensor's readers")?
        .domain()
        .isl("finding a tensor's readers")?;
    let below = outer
        .inst
        .copy()
        .isl("copying a map")?
        .domain()
        .isl("reading the instances of a tile")?
        .intersect(readers)
        .isl("finding a tensor's readers")?;
    if !below.is_subset(&covered).isl("comparing instances")? {
        return Ok(None);
    }
    // Each inner box starts at a block boundary of the tile: inner offset minus outer
    // offset is a multiple of the block, inside the tile's blocks.
    let n = s.len();
    let xs: Vec<String> = (0..n).map(|d| format!("x{d}")).collect();
    let qs: Vec<String> = (0..n).map(|d| format!("q{d}")).collect();
    let cons: Vec<String> = (0..n)
        .map(|d| {
            let nb = (s[d] + b[d] - 1) / b[d];
            format!("x{d} = {} q{d} and 0 <= q{d} <= {}", b[d], nb - 1)
        })
        .collect();
    let lattice_text = format!(
        "{{ [{}] : exists ({} : {}) }}",
        xs.join(", "),
        qs.join(", "),
        cons.join(" and ")
    );
    let plain = |m: &Map| -> Result<Map> {
        m.copy()
            .isl("copying an offset")?
            .reset_tuple_id(DimType::In)
            .isl("reading an offset")?
            .reset_tuple_id(DimType::Out)
            .isl("reading an offset")
    };
    let o_out = plain(&t.offset)?;
    for (j, o_in) in &inner {
        let m = &marks[*j];
        let tiles = m.tiles()?;
        let o_in = plain(o_in)?
            .intersect_domain(tiles)
            .isl("restricting an offset")?;
        let proj = Map::read_from_str(&ctx.isl, &projection_text(m.depth, outer.depth))
            .isl("building a projection")?;
        let o_out_in = proj
            .apply_range(o_out.copy().isl("copying an offset")?)
            .isl("composing an offset")?;
        let deltas = o_out_in
            .reverse()
            .isl("reversing an offset")?
            .apply_range(o_in)
            .isl("relating offsets")?
            .deltas()
            .isl("subtracting offsets")?;
        let lattice = Set::read_from_str(&ctx.isl, &lattice_text)
            .isl("building the block lattice")?
            .align_params(deltas.get_space().isl("reading a space")?)
            .isl("aligning parameters")?;
        if !deltas.is_subset(&lattice).isl("checking block alignment")? {
            return Ok(None);
        }
    }
    Ok(Some(Blocking {
        sizes: b,
        inner,
        through,
    }))
}

/// Where tile-local temporary `name` lives: `Ok((mark, tile))`, the deepest memory mark
/// below which every statement that touches it runs and whose tile writes every element
/// the tile reads (and, when `exclusive`, whose tiles write disjoint elements); or why it
/// stays a global array (the reason the deepest covering mark fails).
fn place_local(
    prog: &Program,
    scop: &Scop,
    (marks, levels): (&[MarkTiles], &[LevelInfo]),
    analyses: &[Option<MarkAnalysis>],
    name: &str,
    exclusive: bool,
) -> Result<std::result::Result<(usize, usize), String>> {
    let Some(t) = prog.tensors.iter().position(|x| x.name == name) else {
        return Ok(Err("the program has no such tensor".into()));
    };
    // A scalar gets a one-element buffer only where fusion recomputes it in every tile.
    if exclusive && prog.tensors[t].shape.is_empty() {
        return Ok(Err("it has no dimensions".into()));
    }
    let users: BTreeSet<&str> = (0..scop.stmt_names.len())
        .filter(|&s| {
            scop.stmt_writes[s].tensor == t || scop.stmt_reads[s].iter().any(|a| a.tensor == t)
        })
        .map(|s| scop.stmt_names[s].as_str())
        .collect();
    let mut candidates: Vec<(usize, usize)> = Vec::new();
    for (mi, m) in marks.iter().enumerate() {
        let Some(a) = &analyses[mi] else { continue };
        let Some(i) = a.tiles.iter().position(|x| x.tensor == t) else {
            continue;
        };
        let here = &m.stmts;
        if users.iter().all(|u| here.iter().any(|h| h == u)) {
            candidates.push((mi, i));
        }
    }
    // Deepest first (stable: the first of equally deep marks first).
    candidates.sort_by_key(|&(mi, _)| std::cmp::Reverse(marks[mi].path.len()));
    let mut first_why: Option<String> = None;
    for (mi, i) in candidates {
        let tile = &analyses[mi].as_ref().expect("analysed above").tiles[i];
        // The buffer must fit its level (a GPU block's shared memory).
        let bytes = tile.elems() as u64 * prog.tensors[t].dtype.size_bytes() as u64;
        let level = match marks[mi].mark {
            Mark::Mem(b) => levels.iter().find(|l| l.buffer == b),
            _ => None,
        };
        if let Some(l) = level.filter(|l| bytes > l.bytes) {
            first_why.get_or_insert(format!(
                "its tile at the {} mark ({bytes} bytes) does not fit {} ({} bytes)",
                l.buffer, l.buffer, l.bytes
            ));
            continue;
        }
        match local_fits(tile, exclusive)? {
            None => return Ok(Ok((mi, i))),
            Some(why) => {
                first_why.get_or_insert(why);
            }
        }
    }
    Ok(Err(first_why.unwrap_or_else(|| {
        "no memory mark with a rectangular tile of it covers all its uses".into()
    })))
}

/// Why `tile` cannot be a tile-local buffer: a tile reads elements it does not write, or
/// (when `exclusive`) several tiles write one element; `None` when it can.
fn local_fits(tile: &TensorTile, exclusive: bool) -> Result<Option<String>> {
    let covered = match (&tile.reads, &tile.writes) {
        (Some(r), Some(w)) => r.is_subset(w).isl("comparing footprints")?,
        (None, Some(_)) => true,
        _ => false,
    };
    if !covered {
        return Ok(Some(
            "a tile reads elements of it that the same tile does not write".into(),
        ));
    }
    if exclusive {
        let one_tile = match &tile.writes {
            Some(w) => w
                .copy()
                .isl("copying a map")?
                .reverse()
                .isl("reversing a map")?
                .is_single_valued()
                .isl("testing writes")?,
            None => false,
        };
        if !one_tile {
            return Ok(Some("several tiles write one element of it".into()));
        }
    }
    Ok(None)
}

/// The statements of the domain of `inst`, sorted naturally.
fn stmt_names(inst: &UnionMap) -> Result<Vec<String>> {
    let mut v: Vec<String> = by_domain_name(inst)?.into_keys().collect();
    v.sort_by_key(|s| natural(s));
    Ok(v)
}

fn natural(s: &str) -> (String, u64) {
    let digits: String = s.chars().rev().take_while(|c| c.is_ascii_digit()).collect();
    let stem = &s[..s.len() - digits.len()];
    let n: String = digits.chars().rev().collect();
    (stem.to_string(), n.parse().unwrap_or(0))
}

fn renamed(m: &Map, name: &str) -> Result<String> {
    let m = m
        .copy()
        .isl("copying a map")?
        .set_tuple_name(DimType::Out, name)
        .isl("naming a copy statement")?;
    Ok(map_text(&m))
}

/// The band of a copy over a tile of extents `sizes`: one member per dimension, in
/// order; for a tile stored in blocks, first one member per split dimension that runs
/// over the blocks (`floor(e / b)`), so that each block is copied whole.
fn copy_band(name: &str, sizes: &[i64], block: Option<&[i64]>) -> Band {
    let dims = sizes.len();
    let vars: Vec<String> = (0..dims).map(|i| format!("e{i}")).collect();
    let member = |e: String| format!("{{ {name}[{}] -> [({e})] }}", vars.join(", "));
    let mut members = Vec::new();
    if let Some(b) = block {
        for (i, (&bs, &s)) in b.iter().zip(sizes).enumerate() {
            if bs < s {
                members.push(member(format!("floor((e{i})/{bs})")));
            }
        }
    }
    members.extend((0..dims).map(|i| member(format!("e{i}"))));
    let n = members.len();
    let mut b = Band::new(format!("[{}]", members.join(", ")), n);
    b.permutable = true;
    b.coincident = vec![true; n];
    b
}

fn copy_branch(name: &str, sizes: &[i64], block: Option<&[i64]>) -> Node {
    let vars: Vec<String> = (0..sizes.len()).map(|i| format!("e{i}")).collect();
    Node::with_child(
        NodeKind::Filter {
            filter: format!("{{ {name}[{}] }}", vars.join(", ")),
        },
        Node::with_child(NodeKind::Band(copy_band(name, sizes, block)), Node::leaf()),
    )
}

/// Grafts the copies of `tiles` under the mark at `path`.
fn graft(
    tree: &mut ScheduleTree,
    path: &[usize],
    prog: &Program,
    tiles: &[GraftTile],
) -> Result<()> {
    let mut ext_parts = Vec::new();
    let mut decls = Vec::new();
    let mut before = Vec::new();
    let mut after = Vec::new();
    for g in tiles {
        let (k, t) = (g.id, &g.tile);
        let ten = &prog.tensors[t.tensor];
        if g.local {
            // One instance per tile: `local_<k>_<T>[]`.
            let name = copy_stmt_name(k, &ten.name, CopyKind::Local);
            let w = t
                .writes
                .as_ref()
                .ok_or_else(|| miette!("internal error: a tile-local tensor is not written"))?;
            let n = w.dim(DimType::Out).isl("reading a map's dimensions")?;
            let once = w
                .copy()
                .isl("copying a map")?
                .project_out(DimType::Out, 0, n as u32)
                .isl("projecting a footprint")?;
            ext_parts.push(renamed(&once, &name)?);
            decls.push(Node::with_child(
                NodeKind::Filter {
                    filter: format!("{{ {name}[] }}"),
                },
                Node::leaf(),
            ));
            continue;
        }
        if let Some(r) = &t.reads {
            let name = copy_stmt_name(k, &ten.name, CopyKind::In);
            ext_parts.push(renamed(r, &name)?);
            before.push(copy_branch(&name, &t.sizes, g.block.as_deref()));
        }
        if let Some(w) = &t.writes {
            let name = copy_stmt_name(k, &ten.name, CopyKind::Out);
            ext_parts.push(renamed(w, &name)?);
            after.push(copy_branch(&name, &t.sizes, g.block.as_deref()));
        }
    }
    let mark = tree
        .node_at_mut(path)
        .ok_or_else(|| miette!("internal error: a promoted mark moved"))?;
    let sub = std::mem::replace(&mut mark.children[0], Node::leaf());
    // The original subtree's filter: every statement instance that reaches it.
    let orig_filter = universe_filter(prog);
    let mut children = decls;
    children.extend(before);
    children.push(Node::with_child(
        NodeKind::Filter {
            filter: orig_filter,
        },
        sub,
    ));
    children.extend(after);
    let ext = union_texts(&ext_parts);
    mark.children[0] = Node::with_child(
        NodeKind::Extension { extension: ext },
        Node::new(NodeKind::Sequence, children),
    );
    Ok(())
}

/// Joins isl map texts (`[P] -> { … }` or `{ … }`) into one union map text, keeping the
/// pieces in the order given (copy-ins before copy-outs), which isl's own union would not.
fn union_texts(parts: &[String]) -> String {
    let mut params = String::new();
    let mut bodies = Vec::new();
    for p in parts {
        let (pre, body) = match p.find('{') {
            Some(i) => (&p[..i], &p[i..]),
            None => ("", p.as_str()),
        };
        if params.is_empty() {
            params = pre.trim().trim_end_matches("->").trim().to_string();
        }
        bodies.push(
            body.trim()
                .trim_start_matches('{')
                .trim_end_matches('}')
                .trim()
                .to_string(),
        );
    }
    let body = bodies.join("; ");
    if params.is_empty() {
        format!("{{ {body} }}")
    } else {
        format!("{params} -> {{ {body} }}")
    }
}

/// A filter that lets every instance of every program statement through.
fn universe_filter(prog: &Program) -> String {
    let parts: Vec<String> = prog
        .stmts
        .iter()
        .map(|s| {
            let vars: Vec<String> = s.iters.iter().map(|i| i.name.clone()).collect();
            format!("{}[{}]", s.name, vars.join(", "))
        })
        .collect();
    format!("{{ {} }}", parts.join("; "))
}

/// A promotion as code generation needs it.
pub struct Promotion {
    /// Its number `k`.
    pub id: usize,
    /// The tensor.
    pub tensor: usize,
    /// The mark's schedule depth.
    pub depth: usize,
    /// Statement instance → tile coordinates, for the instances below the mark.
    pub inst: UnionMap,
    /// Tile coordinates → first element of the local buffer.
    pub offset: Map,
    /// The local buffer's extents (for a view: the block's).
    pub sizes: Vec<i64>,
    /// The block extents of a buffer stored in blocks ([`blocking`]).
    pub block: Option<Vec<i64>>,
    /// A view, at a nested mark, of promotion `id`'s buffer stored in blocks: below the
    /// mark, the tensor is read from the block at `offset` (no buffer, no copies).
    pub view: bool,
    /// The order its dimensions are stored in ([`PromotedTile::order`]).
    pub order: Option<Vec<usize>>,
}

/// The promotions of the marks of `schedule`, per mark in pre-order (marks that are not
/// memory marks included, with no promotions): recomputed from the copy statements the
/// promotion pass grafted, with the same analysis.
///
/// `levels` are the target's memory levels: the promotions at a cache level are stored in
/// [`vector_order`] for the register tiles (marks of its register files) below, as the
/// promotion pass stored them.
pub fn promotions_in(
    ctx: &Ctx,
    prog: &Program,
    scop: &Scop,
    schedule: &Schedule,
    levels: &[schedule_tree::Level],
) -> Result<Vec<Vec<Promotion>>> {
    let root = schedule.get_root().isl("reading the root")?;
    let marks = mark_tiles(ctx, scop, &root)?;
    let regs: Vec<Buffer> = levels
        .iter()
        .filter(|l| l.role.is_register_file())
        .map(|l| l.buffer)
        .collect();
    let mut out = Vec::with_capacity(marks.len());
    let mut views: Vec<(usize, Promotion)> = Vec::new();
    for (mi, m) in marks.iter().enumerate() {
        let mut here = Vec::new();
        if let Mark::Mem(buf) = m.mark {
            let node = node_at(&root, &m.path)?;
            let ids = copy_ids_below_mark(&node)?;
            if !ids.is_empty() {
                let a = analyse_mark_with(scop, m, true)?.ok_or_else(|| {
                    miette!("a memory mark with copies has no tile band above it")
                })?;
                let depth = a.depth;
                for t in a.tiles {
                    let name = &prog.tensors[t.tensor].name;
                    if let Some((k, _)) = ids.iter().find(|(_, n)| n == name) {
                        let block = blocking(ctx, scop, &marks, mi, &t)?;
                        if let Some(b) = &block {
                            for (j, offset) in &b.inner {
                                views.push((
                                    *j,
                                    Promotion {
                                        id: *k,
                                        tensor: t.tensor,
                                        depth: marks[*j].depth,
                                        inst: marks[*j].inst.copy().isl("copying a map")?,
                                        offset: offset.copy().isl("copying an offset")?,
                                        sizes: b.sizes.clone(),
                                        block: Some(b.sizes.clone()),
                                        view: true,
                                        order: None,
                                    },
                                ));
                            }
                        }
                        let cache = levels.iter().any(|l| {
                            l.buffer == buf
                                && matches!(
                                    l.role,
                                    schedule_tree::BufferRole::Cache
                                        | schedule_tree::BufferRole::SharedMemory
                                )
                        });
                        let order = if cache {
                            vector_order(ctx, prog, scop, &root, &marks, mi, t.tensor, &regs)?
                        } else {
                            None
                        };
                        here.push(Promotion {
                            id: *k,
                            tensor: t.tensor,
                            depth,
                            inst: m.inst.copy().isl("copying a map")?,
                            offset: t.offset,
                            sizes: t.sizes,
                            block: block.map(|b| b.sizes),
                            view: false,
                            order,
                        });
                    }
                }
                if here.len() != ids.len() {
                    return Err(miette!(
                        help = "copy statements are made by the promotion pass; a hand-edited tree must keep them below the mark they were made for",
                        "the copy statements below a mem:{} mark do not match the tensors its tile touches",
                        buf.name()
                    ));
                }
            }
        }
        out.push(here);
    }
    for (j, v) in views {
        out[j].push(v);
    }
    Ok(out)
}

fn node_at(root: &ScheduleNode, path: &[usize]) -> Result<ScheduleNode> {
    let mut n = root.copy().isl("copying a node")?;
    for &i in path {
        n = n.child(i as i32).isl("visiting a child")?;
    }
    Ok(n)
}

/// The (promotion number, tensor name) pairs of the copy statements in the extension node
/// right below a mark.
fn copy_ids_below_mark(node: &ScheduleNode) -> Result<Vec<(usize, String)>> {
    let c = node
        .copy()
        .isl("copying a node")?
        .child(0)
        .isl("visiting a child")?;
    if c.get_type().isl("reading a node type")? != ScheduleNodeType::Extension {
        return Ok(Vec::new());
    }
    let ext = c.extension_get_extension().isl("reading an extension")?;
    let mut out: Vec<(usize, String)> = Vec::new();
    for name in by_range_name(&ext)?.keys() {
        if let Some((_, k, t)) = parse_copy_stmt(name) {
            if !out.iter().any(|(j, _)| *j == k) {
                out.push((k, t.to_string()));
            }
        }
    }
    Ok(out)
}

/// A tile's extents as `polyc explain` and the comments of the generated code write them,
/// `4 x 8`; `one element` for a scalar's tile (a fused 0-d temporary).
pub(crate) fn dims_text(sizes: &[i64]) -> String {
    if sizes.is_empty() {
        return "one element".into();
    }
    let dims: Vec<String> = sizes.iter().map(|s| s.to_string()).collect();
    dims.join(" x ")
}
