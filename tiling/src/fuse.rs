//! Reverse strategy and post-tiling fusion (AKG, PLDI'21 §4; Zhao & Di, MICRO'20).
//!
//! The tile pass tiles the band of the *live-out* group (the last filter of the top-level
//! sequence, e.g. `S_4` of the conv chain). [`fuse`] then pulls into every tile exactly the
//! instances of the earlier statements (the *producers*) that the tile needs, and skips the
//! producers' original subtrees:
//!
//! ```text
//! Sequence
//!   Filter S_1                       Filter S_4
//!     Mark "skipped"                   Band (tile loops)
//!       Band (S_1 ...)                   Mark "mem:L1"
//!   ...                                    Extension { [t0, t1] -> S_1[..]; ... }
//!   Filter S_4                               Sequence
//!     Band (tile loops)                        Filter S_1 / Band (S_1 ...)   (a copy)
//!       Mark "mem:L1"                          ...
//!         Band (point loops)                   Filter S_4 / Band (point loops)
//! ```
//!
//! ## What a tile needs
//!
//! With `T` the prefix schedule at the point band (live-out instances → tile coordinates),
//! the needed relation starts as `T⁻¹` (tile → live-out instances) and grows breadth-first:
//! `tile → instances → reads → writes⁻¹` (the writers, among the fused producers, of the
//! elements those instances read), de-duplicated, until no new pair appears. A convolution
//! thus needs a `(T+KH−1)×(T+KW−1)` block of its input's producer per `T×T` tile (the
//! halo). The statement graph (who writes what who reads) is a petgraph graph; only
//! producers the live-out group reaches in it are candidates.
//!
//! ## Placement
//!
//! The extension node goes directly above the point subtree, i.e. *below* the innermost
//! `mem` mark, so the producers' tile data is covered by the same memory mark. Its
//! domain is the whole prefix schedule there (every enclosing tile band). Below it, a
//! sequence holds a copy of each fused producer's original filter subtree (program order,
//! each with its band over its iterators, so isl's AST is ordered) and then the original
//! point subtree under the live-out filter. The copies leave out the tile bands and memory
//! marks the producer got of its own (from the default policy): inside the live-out tile
//! they would only nest small tile loops, and the live-out tile's marks place the data.
//!
//! ## When fusion falls back (per producer; the reason is in [`FuseReport::fallbacks`])
//!
//! - **Recomputation of an impure producer.** When tiles need overlapping instances of a
//!   producer (the halo), those instances run more than once. That is only allowed when
//!   the producer writes tile-local temporaries (written by fused producers only, read by
//!   the fused group only) and reads nothing the fused group writes except such
//!   temporaries. An in-place update of an input (the conv chain's `S_0`,
//!   `A(h, w) = A(h, w) + bias`) would add the bias twice: it falls back and keeps its
//!   place (it then runs before the fused nest). Producers whose instances the tiles need
//!   exactly once may be in-place updates (the conv chain's `S_1`–`S_3` on `C`).
//! - **Recomputation cost.** The extra instances (`Σ over tiles of needed instances −
//!   instances`, counted exactly with isl) times their operations (FLOPs, reads and the
//!   write) at the target's peak rate must take no longer than the traffic fusion saves:
//!   unfused, the temporary is written to the smallest level of the description that holds
//!   it and read back, at that level's bandwidth ([`FuseCost::weigh`]). Targets without
//!   these figures use a flat limit on `extra / instances`
//!   ([`FuseOptions::max_recompute`]). With symbolic sizes overlapping producers fall
//!   back; the instances the tiles would run are counted as quasi-polynomials in the
//!   sizes (barvinok, when installed; [`crate::symbolic::recompute`]) for the report.
//! - **Results used elsewhere.** A producer with a dependence to a statement that is not
//!   fused and comes after it in the sequence cannot move into the tiles.
//! - **Results partly needed.** When the tiles do not need every instance of a producer,
//!   the rest would be skipped: only allowed for tile-local temporaries.
//!
//! Producers that fall back keep their subtree; producers only reached through them are
//! not fused either. Finally, the new order of every instance that runs exactly once is
//! checked exactly against every dependence (RAW, WAR, WAW) between fused statements; a
//! violation cancels the fusion as a whole.
//!
//! With [`FuseOptions::first_tile_overlaps`] (off by default), a producer that must not be
//! recomputed runs each instance once, in the lexicographically first tile that needs it,
//! instead of falling back: the conv chain then becomes one loop nest, as in the paper's
//! figure (every overlapping producer then runs once, and the exact order check covers
//! all of them).
//!
//! ## Parallel tiles
//!
//! The tile bands' coincidence is recomputed: a tile member stays coincident only if no
//! dependence between instances that run once crosses tiles along it (with equal outer
//! tile coordinates), and no producer is recomputed (recomputed producers write shared
//! global arrays as long as tile-local buffers are not applied). The `parallel` pass reads
//! these flags.
//!
//! ## Tile-local buffers
//!
//! A fused temporary that only the fused group touches is reported in
//! [`FuseReport::buffers`] with the bytes a tile-local buffer saves (the global array
//! minus one tile's box). The promotion pass (`targets::promote`) then gives it a local
//! buffer in each tile, with no copies, and code generation no longer allocates the
//! global array.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;

use petgraph::graph::{DiGraph, NodeIndex};
use polyhedral::deps::DepKind;
use polyhedral::ir::TensorRole;
use polyhedral::isl::ffi::count::set_count;
use polyhedral::isl::ffi::model::union_map_text;
use polyhedral::isl::isl_rs::{DimType, Map, MultiUnionPwAff, Set, UnionMap, UnionSet};
use polyhedral::isl::IslResultExt;
use schedule_tree::{Buffer, Mark, Node, NodeKind, ScheduleTree};

use crate::analysis::node_at;
use crate::cx::TileCx;

/// Options of post-tiling fusion.
#[derive(Clone, Debug, PartialEq)]
pub struct FuseOptions {
    /// The largest recomputation overhead allowed for a producer, as a fraction of its
    /// instances (`0.25` = 25 % more instances than the unfused program runs).
    pub max_recompute: f64,
    /// Instead of falling back, run the overlapping instances of a producer that must not
    /// be recomputed (an in-place update, an output) once, in the lexicographically first
    /// tile that needs them; later tiles read the result. The tiles then depend on each
    /// other (their loops lose their coincidence), and the new order is checked exactly
    /// against the dependences like every instance that runs once. Off by default.
    pub first_tile_overlaps: bool,
    /// Fuse at the outermost memory level of the live-out's tiles instead of the innermost:
    /// the extension goes below the first `mem` mark, and the tiles that decide what is
    /// recomputed are the outermost ones (a GPU block's tile, whose inner levels are
    /// thread and register tiles).
    pub outermost: bool,
    /// The caller gives every tile-local temporary ([`FuseReport::buffers`]) a buffer of
    /// its own in each tile (promotion does, and fails loudly where it cannot): then
    /// recomputing a producer that writes only such temporaries does not make the tile
    /// loops sequential.
    pub local_buffers: bool,
    /// The target's cost figures. With them, recomputing a producer's overlaps is decided
    /// by cost ([`FuseCost::weigh`]) instead of by [`FuseOptions::max_recompute`].
    pub cost: Option<FuseCost>,
}

impl Default for FuseOptions {
    fn default() -> Self {
        FuseOptions {
            max_recompute: 0.25,
            first_tile_overlaps: false,
            outermost: false,
            local_buffers: false,
            cost: None,
        }
    }
}

/// A place an unfused temporary lives in: a cache level, or the memory behind them.
#[derive(Clone, Debug, PartialEq)]
pub struct Home {
    /// Its name in the description (`L2`, `DRAM`).
    pub name: String,
    /// Its capacity; `None` for the memory, which holds anything.
    pub bytes: Option<u64>,
    /// Its bandwidth for one core (one GPU for a GPU target), in GB/s (10⁹ bytes).
    pub gbytes_per_s: f64,
}

/// The figures of a target's description that fusion weighs: how fast work runs and how
/// fast each level moves data.
#[derive(Clone, Debug, PartialEq)]
pub struct FuseCost {
    /// Operations per second, in 10⁹: the peak arithmetic rate of what runs one tile.
    pub gops: f64,
    /// Where an unfused temporary can live, smallest first, the memory last.
    pub homes: Vec<Home>,
    /// Operations one call of a built-in function costs, by source name (`tanh`); an
    /// unlisted function costs one.
    pub call_ops: BTreeMap<String, u64>,
}

/// Both sides of a fusion decision by cost, and the verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct CostVerdict {
    /// The recomputed statements: name, instances run more than once over all tiles,
    /// and operations per instance (FLOPs plus one per read and one for the write).
    pub work: Vec<(String, u64, u64)>,
    /// The temporaries whose traffic fusion saves: name, bytes no longer moved (written
    /// once and read back once, unfused), and the level they would live in.
    pub saved: Vec<(String, u64, String)>,
    /// Seconds the recomputation costs at [`FuseCost::gops`].
    pub recompute_s: f64,
    /// Seconds the saved traffic costs at the levels' bandwidths.
    pub saved_s: f64,
}

impl CostVerdict {
    /// Fusion pays: the recomputation takes no longer than the traffic it saves.
    pub fn pays(&self) -> bool {
        self.recompute_s <= self.saved_s
    }
}

impl fmt::Display for CostVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let work: Vec<String> = self
            .work
            .iter()
            .map(|(s, n, ops)| format!("{n} instances of {s} x {ops} ops"))
            .collect();
        let saved: Vec<String> = self
            .saved
            .iter()
            .map(|(t, b, home)| format!("{t} would move {b} bytes through {home}"))
            .collect();
        write!(
            f,
            "recomputing {} costs {}; unfused, {} (written, then read back), {}: {}",
            work.join(", "),
            seconds(self.recompute_s),
            if saved.is_empty() {
                "no temporary is saved".to_string()
            } else {
                saved.join(", ")
            },
            seconds(self.saved_s),
            if self.pays() {
                "fusion pays"
            } else {
                "fusion does not pay"
            }
        )
    }
}

/// A duration in the unit that reads best.
pub(crate) fn seconds(s: f64) -> String {
    if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.3} us", s * 1e6)
    }
}

impl FuseCost {
    /// Weighs recomputing `work` (statement, extra instances, operations per instance)
    /// against the traffic of the temporaries `temps` (name, bytes): unfused, each is
    /// written to the smallest home that holds it and read back from there.
    pub fn weigh(&self, work: Vec<(String, u64, u64)>, temps: &[(String, u64)]) -> CostVerdict {
        let mut saved = Vec::new();
        let mut saved_s = 0.0;
        for (t, bytes) in temps {
            let home = self
                .homes
                .iter()
                .find(|h| h.bytes.is_none_or(|b| b >= *bytes))
                .or(self.homes.last());
            let (name, bw) = home.map_or(("memory".to_string(), f64::INFINITY), |h| {
                (h.name.clone(), h.gbytes_per_s)
            });
            saved_s += 2.0 * *bytes as f64 / (bw * 1e9);
            saved.push((t.clone(), 2 * bytes, name));
        }
        let ops: f64 = work.iter().map(|(_, n, o)| *n as f64 * *o as f64).sum();
        CostVerdict {
            work,
            saved,
            recompute_s: ops / (self.gops * 1e9),
            saved_s,
        }
    }
}

/// A producer pulled into the live-out tiles.
#[derive(Clone, Debug, PartialEq)]
pub struct FusedProducer {
    /// Statement name (`S_1`).
    pub stmt: String,
    /// Its instances, when the sizes are bound.
    pub instances: Option<u64>,
    /// Σ over tiles of the instances each tile runs, when the sizes are bound.
    pub executed: Option<u64>,
    /// `executed / instances − 1`, when both are known.
    pub recompute: Option<f64>,
    /// The fixed-size box of the instances one tile needs, when isl finds one.
    pub tile_box: Option<Vec<u64>>,
    /// The decision by cost, when the producer is recomputed and the target has figures.
    pub cost: Option<CostVerdict>,
}

/// A producer that was not fused, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fallback {
    /// Statement name.
    pub stmt: String,
    /// Why it keeps its original subtree.
    pub reason: String,
}

/// A fused intermediate that could live in a tile-local buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalBuffer {
    /// Tensor name.
    pub tensor: String,
    /// Bytes of the global array, when the sizes are bound.
    pub global_bytes: Option<u64>,
    /// Bytes of one tile's box of the tensor, when isl finds a fixed box.
    pub tile_bytes: Option<u64>,
    /// `global_bytes − tile_bytes`.
    pub saved_bytes: Option<u64>,
}

/// What [`fuse`] did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FuseReport {
    /// Whether the tree was changed.
    pub applied: bool,
    /// The statements of the live-out group (empty when fusion does not apply).
    pub live_out: Vec<String>,
    /// The fused producers, in program order.
    pub fused: Vec<FusedProducer>,
    /// Producers the live-out group reads (transitively) that were not fused.
    pub fallbacks: Vec<Fallback>,
    /// Fused temporaries that could be tile-local.
    pub buffers: Vec<LocalBuffer>,
    /// Why fusion does not apply at all, or other remarks.
    pub notes: Vec<String>,
    /// What the producer copies keep of their register tiles inside the fused tiles.
    pub copies: Vec<String>,
    /// With symbolic sizes: the recomputation of the producers whose tiles overlap, as
    /// quasi-polynomials (barvinok), one entry per producer.
    pub symbolic: Vec<crate::symbolic::SymbolicRecompute>,
}

impl FuseReport {
    /// The lines `--explain` prints.
    pub fn explain(&self) -> String {
        let mut out = String::new();
        for n in &self.notes {
            out.push_str(&format!("fusion: {n}\n"));
        }
        if !self.live_out.is_empty() {
            out.push_str(&format!(
                "fusion: live-out group {{{}}}: {}\n",
                self.live_out.join(", "),
                if self.applied { "fused" } else { "not fused" }
            ));
        }
        for f in &self.fused {
            let shape = f
                .tile_box
                .as_ref()
                .map(|b| {
                    let v: Vec<String> = b.iter().map(|x| x.to_string()).collect();
                    if v.is_empty() {
                        ", per tile one instance".to_string()
                    } else {
                        format!(", per tile a {} box", v.join(" x "))
                    }
                })
                .unwrap_or_default();
            let cost = match (f.executed, f.instances, f.recompute) {
                (Some(e), Some(n), Some(r)) => {
                    format!(", runs {e} instances for {n} (+{:.1}%)", r * 100.0)
                }
                _ => String::new(),
            };
            out.push_str(&format!("  fused {}{shape}{cost}\n", f.stmt));
            if let Some(v) = &f.cost {
                out.push_str(&format!("    {v}\n"));
            }
        }
        for c in &self.copies {
            out.push_str(&format!("  {c}\n"));
        }
        for f in &self.fallbacks {
            out.push_str(&format!("  not fused {}: {}\n", f.stmt, f.reason));
        }
        for b in &self.buffers {
            let fmt_b = |x: Option<u64>| x.map_or("?".to_string(), |v| v.to_string());
            out.push_str(&format!(
                "  tile-local {}: global {} bytes, one tile {} bytes, saves {} bytes (promotion gives it a local buffer)\n",
                b.tensor,
                fmt_b(b.global_bytes),
                fmt_b(b.tile_bytes),
                fmt_b(b.saved_bytes),
            ));
        }
        out
    }
}

impl fmt::Display for FuseReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.explain())
    }
}

/// The shape fusion works on.
struct Shape {
    /// Path of the top-level sequence.
    seq: Vec<usize>,
    /// Per filter of the sequence: its statements.
    filters: Vec<Vec<usize>>,
    /// Path of the `mem` mark of the live-out group where fusion grafts the copies (the
    /// outermost or the innermost, as [`FuseOptions::outermost`] says).
    mark: Vec<usize>,
    /// The buffer of that mark: the producer copies keep their tile levels inside it.
    buffer: Buffer,
}

impl Shape {
    /// The filter holding statement `s`.
    fn filter_of(&self, s: usize) -> Option<usize> {
        self.filters.iter().position(|f| f.contains(&s))
    }
}

fn not_applicable(tree: ScheduleTree, why: &str) -> (ScheduleTree, FuseReport) {
    let rep = FuseReport {
        notes: vec![format!("not applicable: {why}")],
        ..FuseReport::default()
    };
    (tree, rep)
}

/// The statements of earlier filters the live-out group `live` reaches backwards in the
/// statement graph (an edge P -> C when C reads a tensor P writes).
/// A statement inside a sequential loop updates its tensors in place, loop iteration
/// after iteration: the instances a tile needs are then every earlier iteration's. Such
/// candidates are dropped, with a fallback each.
/// A recurrence (a statement that reads what its own earlier instances wrote to other
/// elements, such as a stencil over an explicit time dimension) is dropped as well: a tile
/// would recompute the whole history of its cone, one step after another.
fn drop_looped(
    cx: &TileCx,
    candidates: &mut BTreeSet<usize>,
    rep: &mut FuseReport,
) -> miette::Result<()> {
    for s in candidates.clone() {
        let reason = if !cx.scop.stmt_loops[s].is_empty() {
            "it is inside a sequential loop (its tensors are updated in place)"
        } else if is_recurrence(cx, s)? {
            "it reads what its own earlier instances wrote to other elements (a recurrence): each tile would recompute every earlier step"
        } else {
            continue;
        };
        candidates.remove(&s);
        rep.fallbacks.push(Fallback {
            stmt: cx.scop.stmt_names[s].clone(),
            reason: reason.into(),
        });
    }
    Ok(())
}

/// Whether statement `s` is a recurrence: one of its instances reads a value that another
/// of its instances wrote to a different element (`U(k + 1, i, j) = f(U(k, i - 1, j), …)`,
/// `P(i) = P(i - 1) + A(i)`). A reduction's accumulation, which reads the element it
/// writes, is none.
pub fn is_recurrence(cx: &TileCx, s: usize) -> miette::Result<bool> {
    let dep = cx.deps.between(DepKind::Raw, s, s)?;
    if dep
        .is_empty()
        .isl("testing a self-dependence for emptiness")?
    {
        return Ok(false);
    }
    let write = &cx.scop.stmt_writes[s].map;
    let elements = dep
        .apply_domain(write.copy().isl("copying a write")?)
        .isl("mapping a self-dependence's sources to their elements")?
        .apply_range(write.copy().isl("copying a write")?)
        .isl("mapping a self-dependence's targets to their elements")?;
    let same = Map::identity(elements.get_space().isl("the space of written elements")?)
        .isl("the identity on written elements")?;
    Ok(!elements
        .is_subset(&same)
        .isl("testing whether a self-dependence stays on its element")?)
}

fn reverse_candidates(cx: &TileCx, shape: &Shape, live: &[usize]) -> BTreeSet<usize> {
    let scop = cx.scop;
    let nf = shape.filters.len();
    // The statement graph: an edge P -> C when C reads a tensor P writes.
    let ns = scop.stmt_names.len();
    let mut g: DiGraph<usize, usize> = DiGraph::new();
    let idx: Vec<NodeIndex> = (0..ns).map(|s| g.add_node(s)).collect();
    for p in 0..ns {
        let t = scop.stmt_writes[p].tensor;
        for c in 0..ns {
            if c != p && scop.stmt_reads[c].iter().any(|a| a.tensor == t) {
                g.add_edge(idx[p], idx[c], t);
            }
        }
    }
    // Candidates: statements of earlier filters the live-out group reaches backwards.
    let mut candidates = BTreeSet::new();
    let mut queue: VecDeque<usize> = live.iter().copied().collect();
    let mut seen: BTreeSet<usize> = live.iter().copied().collect();
    while let Some(s) = queue.pop_front() {
        for p in g.neighbors_directed(idx[s], petgraph::Direction::Incoming) {
            let p = g[p];
            if seen.insert(p) {
                if shape.filter_of(p).is_some_and(|f| f < nf - 1) {
                    candidates.insert(p);
                }
                queue.push_back(p);
            }
        }
    }
    candidates
}

/// Drops the candidates whose filter cannot move as a whole: a filter with a statement
/// that is not a candidate, or a group of statements with register tiles of its own. A
/// producer filter moves as a whole: every statement of it must be a candidate. A
/// group of statements with register tiles of its own is not fused: its copy keeps
/// only the levels inside the fused tile (see `copy_inside`), so its register tiles
/// lose the cache levels that pack their operands, which costs a contraction over a
/// long reduction (2mm's `T = A·B`: 95 GFLOP/s fused against 233 apart) far more
/// than the traffic fusion saves.
fn prune_candidates(
    tree: &ScheduleTree,
    cx: &TileCx,
    shape: &Shape,
    candidates: &mut BTreeSet<usize>,
    rep: &mut FuseReport,
) -> miette::Result<()> {
    let names = &cx.scop.stmt_names;
    let seq_node = tree.node_at(&shape.seq).cloned();
    for &p in candidates.clone().iter() {
        let f = shape.filter_of(p).unwrap_or(0);
        let group = &shape.filters[f];
        if group.len() > 1
            && seq_node
                .as_ref()
                .and_then(|n| n.children.get(f))
                .is_some_and(|n| holds_register_tile(n, cx))
        {
            candidates.remove(&p);
            rep.fallbacks.push(Fallback {
                stmt: names[p].clone(),
                reason: format!(
                    "its group ({}) has register tiles of its own, whose packing levels its copy inside the live-out tiles would lose",
                    group.iter().map(|&s| names[s].as_str()).collect::<Vec<_>>().join(", ")
                ),
            });
            continue;
        }
        if let Some(&q) = group.iter().find(|q| !candidates.contains(q)) {
            candidates.remove(&p);
            rep.fallbacks.push(Fallback {
                stmt: names[p].clone(),
                reason: format!(
                    "its filter also holds {}, which the live-out group does not read; a group of statements is fused as a whole",
                    names[q]
                ),
            });
        }
    }
    drop_looped(cx, candidates, rep)
}

/// The prefix schedule at the point subtree: live-out instance -> tile.
fn tile_schedule(tree: &ScheduleTree, cx: &TileCx, shape: &Shape) -> miette::Result<UnionMap> {
    let schedule = tree.to_isl(cx.ctx)?;
    let mut point_path = shape.mark.clone();
    point_path.push(0);
    let pnode = node_at(&schedule, &point_path)?;
    let tile_of = pnode
        .get_prefix_schedule_union_map()
        .isl("reading the tile schedule")?
        .intersect_domain(pnode.get_domain().isl("reading the tile's domain")?)
        .isl("restricting the tile schedule")?;
    drop(pnode);
    drop(schedule);

    Ok(tile_of)
}

/// A filter moves as a whole: the rest of a failing statement's filter fails with it,
/// and so does a filter some statement of which the tiles do not reach.
fn whole_filters(
    cx: &TileCx,
    shape: &Shape,
    fused: &BTreeSet<usize>,
    failures: &mut Vec<(usize, String)>,
) {
    let names = &cx.scop.stmt_names;
    let mut out: Vec<usize> = failures.iter().map(|f| f.0).collect();
    for &p in fused {
        let f = shape.filter_of(p).unwrap_or(0);
        if let Some(&q) = shape.filters[f].iter().find(|q| !fused.contains(q)) {
            out.push(q);
        }
    }
    for &q in out.clone().iter() {
        let f = shape.filter_of(q).unwrap_or(0);
        for &p in &shape.filters[f] {
            if fused.contains(&p) && !failures.iter().any(|x| x.0 == p) {
                failures.push((
                    p,
                    format!(
                        "its filter also holds {}, which is not fused; a group of statements is fused as a whole",
                        names[q]
                    ),
                ));
            }
        }
    }
}

/// Which tiles stay parallel after fusion. Recomputed producers that write only
/// tile-local temporaries stay inside their tiles when the caller gives those temporaries
/// tile-local buffers; otherwise the tiles recompute into shared global arrays (noted).
#[allow(clippy::too_many_arguments)]
fn parallel_tiles(
    cx: &TileCx,
    need: &UnionMap,
    tile_of: &UnionMap,
    fused: &BTreeSet<usize>,
    recomputed: &BTreeSet<usize>,
    live: &[usize],
    opts: &FuseOptions,
    rep: &mut FuseReport,
) -> miette::Result<Vec<bool>> {
    let names = &cx.scop.stmt_names;
    let local_only = opts.local_buffers
        && recomputed.iter().all(|&p| {
            let t = &cx.program.tensors[cx.program.stmts[p].lhs].name;
            rep.buffers.iter().any(|b| &b.tensor == t)
        });
    let (parallel_fused, parallel_recomputed) = if local_only {
        let f: BTreeSet<usize> = fused.difference(recomputed).copied().collect();
        (f, BTreeSet::new())
    } else {
        (fused.clone(), recomputed.clone())
    };
    let parallel = tile_parallel(
        cx,
        need,
        tile_of,
        &parallel_fused,
        &parallel_recomputed,
        live,
    )?;
    if !recomputed.is_empty() && !local_only {
        rep.notes.push(format!(
            "the tiles recompute {} into shared global arrays, so the tile loops are no longer parallel (tile-local buffers would make them so)",
            recomputed
                .iter()
                .map(|&p| names[p].as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(parallel)
}

/// The producers of `fused` whose instances the tiles need (`need`).
fn reached_producers(
    cx: &TileCx,
    need: &UnionMap,
    fused: &BTreeSet<usize>,
) -> miette::Result<BTreeSet<usize>> {
    let mut reached = BTreeSet::new();
    for &p in fused {
        if !part(need, cx, p)?
            .is_empty()
            .isl("testing a map for emptiness")?
        {
            reached.insert(p);
        }
    }
    Ok(reached)
}

/// A fallback for every candidate that is not fused and has no reason yet: the tiles need
/// none of its instances.
fn unreached_fallbacks(
    cx: &TileCx,
    candidates: &BTreeSet<usize>,
    fused: &BTreeSet<usize>,
    rep: &mut FuseReport,
) {
    let names = &cx.scop.stmt_names;
    for &p in candidates {
        if !fused.contains(&p) && !rep.fallbacks.iter().any(|f| f.stmt == names[p]) {
            rep.fallbacks.push(Fallback {
                stmt: names[p].clone(),
                reason:
                    "the tiles need none of its instances (directly, or through fused producers)"
                        .into(),
            });
        }
    }
}

/// Post-tiling fusion with the reverse strategy (see the module documentation).
///
/// Applies to a tree whose root's child is a sequence of filters (the distributed program
/// order of `--scheduler initial`, or `--fuse none`) whose last filter starts with a tile
/// band and a `mem` mark (the tile pass ran on the live-out statement). Any other tree is
/// returned unchanged, with a note saying why. Errors only on isl failures.
pub fn fuse(
    tree: ScheduleTree,
    cx: &TileCx,
    opts: &FuseOptions,
) -> miette::Result<(ScheduleTree, FuseReport)> {
    let shape = match find_shape(&tree, cx, opts.outermost)? {
        Ok(s) => s,
        Err(why) => return Ok(not_applicable(tree, &why)),
    };
    let names = &cx.scop.stmt_names;
    let nf = shape.filters.len();
    let live: Vec<usize> = shape.filters[nf - 1].clone();

    let mut candidates = reverse_candidates(cx, &shape, &live);
    let mut rep = FuseReport {
        live_out: live.iter().map(|&s| names[s].clone()).collect(),
        ..FuseReport::default()
    };
    prune_candidates(&tree, cx, &shape, &mut candidates, &mut rep)?;

    let tile_of = tile_schedule(&tree, cx, &shape)?;

    // Fixed point: fuse, check, drop the failures, again.
    let mut fused = candidates.clone();
    let mut first_tile: BTreeSet<usize> = BTreeSet::new();
    let (need, recomputed) = loop {
        let need = match needed(cx, &tile_of, &fused)? {
            Ok(n) => assign_first_tile(cx, n, &first_tile)?,
            Err(why) => {
                for &p in &fused {
                    rep.fallbacks.push(Fallback {
                        stmt: names[p].clone(),
                        reason: why.clone(),
                    });
                }
                fused.clear();
                break (None, BTreeSet::new());
            }
        };
        fused = reached_producers(cx, &need, &fused)?;
        first_tile.retain(|p| fused.contains(p));
        let mut failures = Vec::new();
        let mut assigned = false;
        let mut recomputed = BTreeSet::new();
        let mut info = Vec::new();
        for &p in &fused {
            match check_producer(cx, opts, &need, &fused, &live, &shape, p, &mut rep.symbolic)? {
                Ok(fp) => {
                    if fp.1 {
                        recomputed.insert(p);
                    }
                    info.push(fp.0);
                }
                Err((reason, impure)) => {
                    if impure && opts.first_tile_overlaps && first_tile.insert(p) {
                        assigned = true;
                    } else {
                        failures.push((p, reason));
                    }
                }
            }
        }
        if let Some(c) = &opts.cost {
            weigh_groups(
                cx,
                c,
                &shape,
                &fused,
                &live,
                &recomputed,
                &mut info,
                &mut failures,
            );
        }
        whole_filters(cx, &shape, &fused, &mut failures);
        if assigned && failures.is_empty() {
            continue;
        }
        if failures.is_empty() && !first_tile.is_empty() && !recomputed.is_empty() {
            // Mixing recomputation with first-tile instances is not checked: run every
            // overlapping producer once, so the exact order check covers them all.
            first_tile.extend(recomputed.iter().copied());
            continue;
        }
        if failures.is_empty() {
            for &p in &first_tile {
                rep.notes.push(format!(
                    "{} runs in the first tile that needs it, not recomputed; the tiles depend on each other",
                    names[p]
                ));
            }
            rep.fused = info;
            break (Some(need), recomputed);
        }
        for (p, reason) in failures {
            fused.remove(&p);
            rep.fallbacks.push(Fallback {
                stmt: names[p].clone(),
                reason,
            });
        }
    };
    unreached_fallbacks(cx, &candidates, &fused, &mut rep);
    rep.fallbacks.sort_by_key(|f| natural(&f.stmt));
    let Some(need) = need.filter(|_| !fused.is_empty()) else {
        rep.notes
            .push("no producer can be fused into the live-out tiles".into());
        rep.fused.clear();
        return Ok((tree, rep));
    };

    // Exact legality of the new order for the instances that run once.
    let orders = filter_orders(cx, &tree, &shape, &fused)?;
    if let Some(why) = check_order(
        cx,
        &need,
        &tile_of,
        &fused,
        &recomputed,
        &live,
        &shape,
        &orders,
    )? {
        cancel(&mut rep, &fused, names, &why);
        return Ok((tree, rep));
    }

    rep.buffers = local_buffers(cx, &need, &fused, &live)?;
    if let Some(why) = local_overflow(cx, &rep.buffers, shape.buffer, opts) {
        cancel(&mut rep, &fused, names, &why);
        rep.buffers.clear();
        return Ok((tree, rep));
    }
    let parallel = parallel_tiles(
        cx,
        &need,
        &tile_of,
        &fused,
        &recomputed,
        &live,
        opts,
        &mut rep,
    )?;
    let tree = rewrite(tree, &shape, &fused, &need, cx, &parallel, &mut rep.copies)?;
    rep.applied = true;
    Ok((tree, rep))
}

/// Records that fusion of `fused` is cancelled for `why`: each falls back, none is fused.
fn cancel(rep: &mut FuseReport, fused: &BTreeSet<usize>, names: &[String], why: &str) {
    for &p in fused {
        rep.fallbacks.push(Fallback {
            stmt: names[p].clone(),
            reason: why.to_string(),
        });
    }
    rep.fused.clear();
    rep.fallbacks.sort_by_key(|f| natural(&f.stmt));
    rep.notes.push(format!("fusion cancelled: {why}"));
}

fn natural(s: &str) -> (String, u64) {
    let d: String = s.chars().filter(|c| c.is_ascii_digit()).collect();
    (
        s.chars().filter(|c| !c.is_ascii_digit()).collect(),
        d.parse().unwrap_or(0),
    )
}

/// Finds the top-level sequence, the statements of each filter and the innermost `mem`
/// mark of the last filter. `Ok(Err(why))` when the tree does not have that shape.
fn find_shape(
    tree: &ScheduleTree,
    cx: &TileCx,
    outermost: bool,
) -> miette::Result<Result<Shape, String>> {
    let root = &tree.root;
    if !matches!(root.kind, NodeKind::Domain { .. }) {
        return Ok(Err("the root is not a domain node".into()));
    }
    let mut seq = vec![0];
    let mut node = match root.children.first() {
        Some(n) => n,
        None => return Ok(Err("the tree is empty".into())),
    };
    // Allow a context node above the sequence.
    while matches!(node.kind, NodeKind::Context { .. }) {
        node = &node.children[0];
        seq.push(0);
    }
    if matches!(node.kind, NodeKind::Band(_)) && cx.scop.stmt_names.len() > 1 {
        return Ok(Err(format!(
            "the scheduler already fused every statement ({}) into one outer band, so there are no separate groups to fuse after tiling (to fuse after tiling instead, start from the distributed program order: `--scheduler initial`, or `--fuse none`)",
            cx.scop.stmt_names.join(", ")
        )));
    }
    if !matches!(node.kind, NodeKind::Sequence) {
        return Ok(Err(format!(
            "the top of the tree is a {}, not a sequence of statement groups (fusion works on the distributed program order: `--scheduler initial`, or `--fuse none`)",
            node.kind.name()
        )));
    }
    if node.children.len() < 2 {
        return Ok(Err("the sequence has a single group".into()));
    }
    let mut filters = Vec::new();
    for c in &node.children {
        let NodeKind::Filter { filter } = &c.kind else {
            return Ok(Err("a child of the sequence is not a filter".into()));
        };
        let set = UnionSet::read_from_str(&cx.ctx.isl, filter).isl("reading a filter")?;
        let mut v = Vec::new();
        for i in 0..cx.scop.stmt_names.len() {
            let part = set
                .extract_set(cx.scop.stmt_space(i)?)
                .isl("extracting a statement's instances")?;
            if !part.is_empty().isl("testing a set for emptiness")? {
                v.push(i);
            }
        }
        filters.push(v);
    }
    let last = node.children.len() - 1;
    let mut path = seq.clone();
    path.push(last);
    let mut n = &node.children[last];
    path.push(0);
    n = &n.children[0];
    let mut mark = None;
    while let (NodeKind::Band(_), Some(NodeKind::Mark(Mark::Mem(b)))) =
        (&n.kind, n.children.first().map(|c| &c.kind))
    {
        path.push(0);
        mark = Some((path.clone(), *b));
        if outermost {
            break;
        }
        path.push(0);
        n = &n.children[0].children[0];
    }
    let Some((mark, buffer)) = mark else {
        return Ok(Err(
            "the live-out group (the last filter) has no tile band with a memory mark: tile it first (a tile spec naming its live-out statement)"
                .into(),
        ));
    };
    Ok(Ok(Shape {
        seq,
        filters,
        mark,
        buffer,
    }))
}

/// The part of a tile → instances relation that reaches statement `s`.
fn part(need: &UnionMap, cx: &TileCx, s: usize) -> miette::Result<UnionMap> {
    need.copy()
        .isl("copying a relation")?
        .intersect_range(
            UnionSet::from_set(cx.scop.stmt_domains[s].copy().isl("copying a domain")?)
                .isl("a domain as a union set")?,
        )
        .isl("restricting a relation to a statement")
}

/// Restricts the needed instances of each producer in `first` to the lexicographically
/// first tile that needs them.
fn assign_first_tile(
    cx: &TileCx,
    need: UnionMap,
    first: &BTreeSet<usize>,
) -> miette::Result<UnionMap> {
    if first.is_empty() {
        return Ok(need);
    }
    let doms = domains(cx, first)?;
    let rest = need
        .copy()
        .isl("copying a map")?
        .subtract_range(doms.copy().isl("copying a set")?)
        .isl("the other producers")?;
    let firsts = need
        .intersect_range(doms)
        .isl("the producers run once")?
        .reverse()
        .isl("instance -> tiles")?
        .lexmin()
        .isl("the first tile of each instance")?
        .reverse()
        .isl("tile -> instances")?;
    rest.union(firsts)
        .isl("uniting")?
        .coalesce()
        .isl("simplifying")
}

/// The part of a relation whose domain is statement `s`.
fn dom_part(m: &UnionMap, cx: &TileCx, s: usize) -> miette::Result<UnionMap> {
    m.copy()
        .isl("copying a relation")?
        .intersect_domain(
            UnionSet::from_set(cx.scop.stmt_domains[s].copy().isl("copying a domain")?)
                .isl("a domain as a union set")?,
        )
        .isl("restricting a relation to a statement")
}

fn domains(cx: &TileCx, stmts: &BTreeSet<usize>) -> miette::Result<UnionSet> {
    let mut u = UnionSet::empty_ctx(&cx.ctx.isl).isl("an empty set")?;
    for &s in stmts {
        u = u
            .union(
                UnionSet::from_set(cx.scop.stmt_domains[s].copy().isl("copying a domain")?)
                    .isl("a domain as a union set")?,
            )
            .isl("uniting domains")?;
    }
    Ok(u)
}

/// tile → instances of the fused producers the tile needs (breadth-first over
/// `reads ∘ writes⁻¹`, de-duplicated). `Ok(Err(why))` when it does not converge.
fn needed(
    cx: &TileCx,
    tile_of: &UnionMap,
    fused: &BTreeSet<usize>,
) -> miette::Result<Result<UnionMap, String>> {
    let writers = cx
        .scop
        .writes
        .copy()
        .isl("copying accesses")?
        .intersect_domain(domains(cx, fused)?)
        .isl("restricting writes")?
        .reverse()
        .isl("inverting writes")?;
    let mut frontier = tile_of
        .copy()
        .isl("copying a map")?
        .reverse()
        .isl("tiles")?;
    let mut acc = UnionMap::empty_ctx(&cx.ctx.isl).isl("an empty map")?;
    let cap = 4 * cx.scop.stmt_names.len() + 16;
    for _ in 0..cap {
        let step = frontier
            .apply_range(cx.scop.reads.copy().isl("copying accesses")?)
            .isl("the data a tile reads")?
            .apply_range(writers.copy().isl("copying a map")?)
            .isl("the producers of that data")?;
        let new = step
            .subtract(acc.copy().isl("copying a map")?)
            .isl("new needed instances")?
            .coalesce()
            .isl("simplifying")?;
        if new.is_empty().isl("testing a map for emptiness")? {
            return Ok(Ok(acc.coalesce().isl("simplifying")?));
        }
        acc = acc
            .union(new.copy().isl("copying a map")?)
            .isl("uniting needed instances")?;
        frontier = new;
    }
    Ok(Err(format!(
        "the instances the tiles need do not converge after {cap} breadth-first steps (a producer reads its own results along a chain)"
    )))
}

fn role_text(r: TensorRole) -> &'static str {
    match r {
        TensorRole::Input => "an input",
        TensorRole::Output => "an output",
        TensorRole::Temp => "a temporary",
    }
}

/// Whether tensor `t` is a temporary that only the fused group touches (and only fused
/// producers write).
fn tile_local(cx: &TileCx, t: usize, fused: &BTreeSet<usize>, live: &[usize]) -> bool {
    if cx.program.tensors[t].role != TensorRole::Temp {
        return false;
    }
    (0..cx.scop.stmt_names.len()).all(|s| {
        let writes = cx.scop.stmt_writes[s].tensor == t;
        let reads = cx.scop.stmt_reads[s].iter().any(|a| a.tensor == t);
        (!writes || fused.contains(&s)) && (!reads || fused.contains(&s) || live.contains(&s))
    })
}

/// Why producer `p` cannot move into the live-out tiles because a later statement that
/// is not fused depends on it (or it on that statement), if one does.
fn later_unfused_dependence(
    cx: &TileCx,
    shape: &Shape,
    fused: &BTreeSet<usize>,
    p: usize,
) -> miette::Result<Option<String>> {
    let names = &cx.scop.stmt_names;
    let name = &names[p];
    let fp = shape
        .filters
        .iter()
        .position(|f| f.contains(&p))
        .unwrap_or(0);
    for (q, qf) in shape
        .filters
        .iter()
        .enumerate()
        .flat_map(|(i, f)| f.iter().map(move |&q| (q, i)))
    {
        if qf <= fp || qf == shape.filters.len() - 1 || fused.contains(&q) {
            continue;
        }
        for kind in [DepKind::Raw, DepKind::War, DepKind::Waw] {
            let m = cx.deps.between(kind, p, q)?;
            if !m.is_empty().isl("testing a map for emptiness")? {
                return Ok(Some(format!(
                    "{} (not fused) must run after it (a {kind} dependence {name} -> {}); moving {name} into the tiles of the live-out group would reorder them",
                    names[q], names[q]
                )));
            }
        }
    }

    Ok(None)
}

/// The checks of one producer: `Ok((info, recomputed))` or the reason it falls back.
#[allow(clippy::too_many_arguments)]
fn check_producer(
    cx: &TileCx,
    opts: &FuseOptions,
    need: &UnionMap,
    fused: &BTreeSet<usize>,
    live: &[usize],
    shape: &Shape,
    p: usize,
    symbolic: &mut Vec<crate::symbolic::SymbolicRecompute>,
) -> miette::Result<Result<(FusedProducer, bool), (String, bool)>> {
    let scop = cx.scop;
    let names = &scop.stmt_names;
    let name = &names[p];
    let t = scop.stmt_writes[p].tensor;
    let tensor = &cx.program.tensors[t];
    let local = tile_local(cx, t, fused, live);
    let np = Map::from_union_map(part(need, cx, p)?).isl("the needed instances of a producer")?;
    let dom = &scop.stmt_domains[p];
    let tile_box = range_box(&np)?;
    let box_text = tile_box
        .as_ref()
        .map(|b| {
            let v: Vec<String> = b.iter().map(|x| x.to_string()).collect();
            format!(" (a {} block of {name} per tile)", v.join(" x "))
        })
        .unwrap_or_default();

    if let Some(why) = later_unfused_dependence(cx, shape, fused, p)? {
        return Ok(Err((why, false)));
    }

    let covered = dom
        .copy()
        .isl("copying a set")?
        .is_subset(&np.copy().isl("copying a map")?.range().isl("a range")?)
        .isl("testing coverage")?;
    if !covered && !local {
        return Ok(Err((format!(
            "the tiles need only some of its instances, but it writes {}, which is {} the fused group does not own; skipping the other instances would lose results",
            tensor.name,
            role_text(tensor.role)
        ), false)));
    }
    let overlap = !np.is_injective().isl("testing for overlapping tiles")?;
    let instances = set_count(dom);
    let executed = set_count(&np.copy().isl("copying a map")?.wrap().isl("wrapping")?);
    let recompute = match (instances, executed) {
        (Some(n), Some(e)) if n > 0 => Some((e as f64 - n as f64) / n as f64),
        _ => None,
    };
    if overlap {
        let in_place = scop.stmt_reads[p].iter().any(|a| a.tensor == t);
        if !local {
            let effect = if in_place {
                format!(
                    "{name} updates {} in place, so running an instance twice would apply the update twice",
                    tensor.name
                )
            } else {
                format!(
                    "{name} writes {}, which is {}, not a tile-local temporary",
                    tensor.name,
                    role_text(tensor.role)
                )
            };
            return Ok(Err((
                format!(
                    "neighbouring tiles need overlapping instances of {name}{box_text}, which would be recomputed; {effect}"
                ),
                true,
            )));
        }
        for a in &scop.stmt_reads[p] {
            let u = a.tensor;
            let written_by_group = fused
                .iter()
                .chain(live.iter())
                .any(|&s| scop.stmt_writes[s].tensor == u);
            if written_by_group && !tile_local(cx, u, fused, live) {
                return Ok(Err((
                    format!(
                        "neighbouring tiles need overlapping instances of {name}{box_text}, which would be recomputed, but it reads {}, which the fused group also writes",
                        cx.program.tensors[u].name
                    ),
                    true,
                )));
            }
        }
        match recompute {
            None => {
                let counted = crate::symbolic::recompute_note(cx, name, &np, dom, symbolic)?;
                return Ok(Err((
                    format!(
                    "neighbouring tiles need overlapping instances of {name}{box_text}; {counted}"
                ),
                    false,
                )));
            }
            Some(r) => {
                let runs = format!(
                    "recomputing the overlaps{box_text} runs {} instances of {name} instead of {} (+{:.1}%)",
                    executed.unwrap_or(0),
                    instances.unwrap_or(0),
                    r * 100.0,
                );
                // With cost figures, the producer's filter is weighed as a whole once
                // every producer is checked (`weigh_groups`).
                match &opts.cost {
                    Some(_) => {}
                    None if r > opts.max_recompute => {
                        return Ok(Err((
                            format!(
                                "{runs}, over the limit of {:.1}%",
                                opts.max_recompute * 100.0
                            ),
                            false,
                        )))
                    }
                    None => {}
                }
            }
        }
    }
    Ok(Ok((
        FusedProducer {
            stmt: name.clone(),
            instances,
            executed,
            recompute,
            tile_box,
            cost: None,
        },
        overlap,
    )))
}

/// The decision by cost for every producer filter whose statements all passed the other
/// checks and some of which are recomputed: the filter's extra work against the traffic
/// of the temporaries it writes. A filter that does not pay adds a failure for its first
/// recomputed statement (the rest of the filter fails with it); one that pays gets the
/// verdict on its last statement's report.
#[allow(clippy::too_many_arguments)]
fn weigh_groups(
    cx: &TileCx,
    cost: &FuseCost,
    shape: &Shape,
    fused: &BTreeSet<usize>,
    live: &[usize],
    recomputed: &BTreeSet<usize>,
    info: &mut [FusedProducer],
    failures: &mut Vec<(usize, String)>,
) {
    let scop = cx.scop;
    let nf = shape.filters.len();
    for stmts in shape.filters.iter().take(nf - 1) {
        if !stmts.iter().all(|s| fused.contains(s))
            || stmts.iter().any(|s| failures.iter().any(|f| f.0 == *s))
        {
            continue;
        }
        let mut work = Vec::new();
        for &p in stmts.iter().filter(|p| recomputed.contains(p)) {
            let Some(fp) = info.iter().find(|i| i.stmt == scop.stmt_names[p]) else {
                continue;
            };
            let extra = fp
                .executed
                .unwrap_or(0)
                .saturating_sub(fp.instances.unwrap_or(0));
            work.push((
                scop.stmt_names[p].clone(),
                extra,
                ops_per_instance(cx, p, cost),
            ));
        }
        if work.is_empty() {
            continue;
        }
        let mut temps: Vec<(String, u64)> = Vec::new();
        for &p in stmts {
            let t = scop.stmt_writes[p].tensor;
            let tensor = &cx.program.tensors[t];
            if !tile_local(cx, t, fused, live) || temps.iter().any(|x| x.0 == tensor.name) {
                continue;
            }
            let elems = set_count(&scop.tensor_extents[t]).unwrap_or(0);
            temps.push((
                tensor.name.clone(),
                elems * tensor.dtype.size_bytes() as u64,
            ));
        }
        let v = cost.weigh(work, &temps);
        if v.pays() {
            let last = &scop.stmt_names[stmts[stmts.len() - 1]];
            if let Some(fp) = info.iter_mut().find(|i| &i.stmt == last) {
                fp.cost = Some(v);
            }
        } else if let Some(&p) = stmts.iter().find(|p| recomputed.contains(p)) {
            let fp = info.iter().find(|i| i.stmt == scop.stmt_names[p]);
            let runs = fp
                .map(|fp| {
                    let b = fp
                        .tile_box
                        .as_ref()
                        .map(|b| {
                            let v: Vec<String> = b.iter().map(|x| x.to_string()).collect();
                            format!(" (a {} block of {} per tile)", v.join(" x "), fp.stmt)
                        })
                        .unwrap_or_default();
                    format!(
                        "recomputing the overlaps{b} runs {} instances of {} instead of {} (+{:.1}%); ",
                        fp.executed.unwrap_or(0),
                        fp.stmt,
                        fp.instances.unwrap_or(0),
                        fp.recompute.unwrap_or(0.0) * 100.0
                    )
                })
                .unwrap_or_default();
            failures.push((p, format!("{runs}{v}")));
        }
    }
}

/// For every statement of a fused producer filter with several statements: its order in
/// the filter's copy (see [`copy_inside`]), a map from its instances to a flat vector.
fn filter_orders(
    cx: &TileCx,
    tree: &ScheduleTree,
    shape: &Shape,
    fused: &BTreeSet<usize>,
) -> miette::Result<BTreeMap<usize, Map>> {
    let mut out = BTreeMap::new();
    let internal = || miette::miette!("internal error: the fusion shape changed");
    let seq = tree.node_at(&shape.seq).ok_or_else(internal)?;
    let nf = shape.filters.len();
    for (f, stmts) in shape.filters.iter().enumerate().take(nf - 1) {
        if stmts.len() < 2 || !stmts.iter().all(|s| fused.contains(s)) {
            continue;
        }
        let filter = &seq.children[f];
        let domain = domains(cx, &stmts.iter().copied().collect())?;
        let sub = ScheduleTree::new(Node::with_child(
            NodeKind::Domain {
                domain: polyhedral::isl::ffi::model::union_set_text(&domain),
            },
            copy_inside(
                filter.children[0].clone(),
                shape.buffer,
                cx,
                &mut Vec::new(),
            )?,
        ));
        let map = sub
            .to_isl(cx.ctx)?
            .get_map()
            .isl("reading a filter's order")?;
        for &s in stmts {
            let m = Map::from_union_map(dom_part(&map, cx, s)?).isl("a statement's order")?;
            out.insert(s, m);
        }
    }
    Ok(out)
}

/// The operations one instance of statement `p` costs in the fusion model: its FLOPs (a
/// built-in call at its price in `cost`, one if it has none), one per read and one for the
/// write.
pub(crate) fn ops_per_instance(cx: &TileCx, p: usize, cost: &FuseCost) -> u64 {
    let call = |f: polyhedral::ir::Func| cost.call_ops.get(f.name()).copied().unwrap_or(1);
    polyhedral::ir::weighted_ops(&cx.program.stmts[p], &call)
        + cx.scop.stmt_reads[p].len() as u64
        + 1
}

/// The sizes of the fixed-size box of the range of `m` for one domain point.
fn range_box(m: &Map) -> miette::Result<Option<Vec<u64>>> {
    crate::analysis::box_sizes_of(
        m.get_range_simple_fixed_box_hull()
            .isl("computing a tile's box")?,
    )
}

/// Checks the new order of every instance that runs once (fused producers without
/// overlap, and the live-out group) against the dependences between them. `Some(why)` on
/// a violation.
#[allow(clippy::too_many_arguments)]
fn check_order(
    cx: &TileCx,
    need: &UnionMap,
    tile_of: &UnionMap,
    fused: &BTreeSet<usize>,
    recomputed: &BTreeSet<usize>,
    live: &[usize],
    shape: &Shape,
    orders: &BTreeMap<usize, Map>,
) -> miette::Result<Option<String>> {
    let scop = cx.scop;
    let once: Vec<usize> = fused
        .iter()
        .filter(|p| !recomputed.contains(p))
        .copied()
        .collect();
    let mut width = once
        .iter()
        .chain(live.iter())
        .map(|&s| scop.iter_names[s].len())
        .max()
        .unwrap_or(0);
    for o in orders.values() {
        width = width.max(o.dim(DimType::Out).isl("reading a dimension")? as usize);
    }
    let prefix = scop.param_prefix();
    // The new schedule of statement s: [tile, position, order, 0...], where the order is
    // the statement's iterators, or its order inside a multi-statement filter's copy.
    let sched = |s: usize, pos: usize, tile: UnionMap| -> miette::Result<Map> {
        let it = &scop.iter_names[s];
        let rest = match orders.get(&s) {
            Some(o) => {
                let n = o.dim(DimType::Out).isl("reading a dimension")? as usize;
                let mut o = o
                    .copy()
                    .isl("copying a map")?
                    .add_dims(DimType::Out, (width - n) as u32)
                    .isl("padding an order")?;
                for d in n..width {
                    o = o
                        .fix_si(DimType::Out, d as u32, 0)
                        .isl("padding an order")?;
                }
                let text = format!(
                    "{prefix}{{ {}[{}] -> [{pos}] }}",
                    scop.stmt_names[s],
                    it.join(", ")
                );
                Map::read_from_str(&cx.ctx.isl, &text)
                    .isl("reading a schedule")?
                    .flat_range_product(o)
                    .isl("a filter's order")?
            }
            None => {
                let mut outs = vec![pos.to_string()];
                for d in 0..width {
                    outs.push(if d < it.len() {
                        it[d].clone()
                    } else {
                        "0".into()
                    });
                }
                let text = format!(
                    "{prefix}{{ {}[{}] -> [{}] }}",
                    scop.stmt_names[s],
                    it.join(", "),
                    outs.join(", ")
                );
                Map::read_from_str(&cx.ctx.isl, &text).isl("reading a schedule")?
            }
        };
        let tile = Map::from_union_map(
            tile.intersect_domain(
                UnionSet::from_set(scop.stmt_domains[s].copy().isl("copying a domain")?)
                    .isl("a domain as a union set")?,
            )
            .isl("restricting a tile map")?,
        )
        .isl("a tile map")?;
        tile.flat_range_product(rest).isl("a fused schedule")
    };
    let mut scheds: Vec<(usize, Map, bool)> = Vec::new();
    for &p in &once {
        let pos = shape
            .filters
            .iter()
            .position(|f| f.contains(&p))
            .unwrap_or(0);
        let inv = need
            .copy()
            .isl("copying a map")?
            .reverse()
            .isl("inverting")?;
        scheds.push((p, sched(p, pos, inv)?, false));
    }
    for &l in live {
        let pos = shape.filters.len() - 1;
        scheds.push((
            l,
            sched(l, pos, tile_of.copy().isl("copying a map")?)?,
            true,
        ));
    }
    for (s, ms, ls) in &scheds {
        for (d, md, ld) in &scheds {
            if *ls && *ld {
                continue; // inside the live-out group: the tiled order is unchanged
            }
            for kind in [DepKind::Raw, DepKind::War, DepKind::Waw] {
                let dep = cx.deps.between(kind, *s, *d)?;
                if dep.is_empty().isl("testing a map for emptiness")? {
                    continue;
                }
                let before = ms
                    .copy()
                    .isl("copying a map")?
                    .lex_lt_map(md.copy().isl("copying a map")?)
                    .isl("comparing schedules")?;
                if !dep.is_subset(&before).isl("checking a dependence")? {
                    return Ok(Some(format!(
                        "the fused order would reverse the {kind} dependence {} -> {}",
                        scop.stmt_names[*s], scop.stmt_names[*d]
                    )));
                }
            }
        }
    }
    Ok(None)
}

/// Per tile dimension (all tile bands, outer first): whether no dependence between
/// instances that run once (fused producers without overlap, and the live-out group, but
/// not two live-out instances, whose order the tile pass already checked) crosses tiles
/// along it while the outer tile dimensions are equal. All `false` when a producer is
/// recomputed (its global array is shared by the tiles).
fn tile_parallel(
    cx: &TileCx,
    need: &UnionMap,
    tile_of: &UnionMap,
    fused: &BTreeSet<usize>,
    recomputed: &BTreeSet<usize>,
    live: &[usize],
) -> miette::Result<Vec<bool>> {
    let scop = cx.scop;
    let l0 = Map::from_union_map(dom_part(tile_of, cx, live[0])?).isl("a tile map")?;
    let nt = l0
        .dim(polyhedral::isl::isl_rs::DimType::Out)
        .isl("tile dimensions")? as usize;
    if !recomputed.is_empty() {
        return Ok(vec![false; nt]);
    }
    let inv = need
        .copy()
        .isl("copying a map")?
        .reverse()
        .isl("inverting")?;
    let mut maps: Vec<(usize, Map, bool)> = Vec::new();
    for &p in fused {
        let m = dom_part(&inv, cx, p)?;
        maps.push((p, Map::from_union_map(m).isl("a tile map")?, false));
    }
    for &l in live {
        let m = Map::from_union_map(dom_part(tile_of, cx, l)?).isl("a tile map")?;
        maps.push((l, m, true));
    }
    let mut deltas: Vec<Set> = Vec::new();
    for (s, ms, ls) in &maps {
        for (d, md, ld) in &maps {
            if *ls && *ld {
                continue;
            }
            for kind in [DepKind::Raw, DepKind::War, DepKind::Waw] {
                let dep = cx.deps.between(kind, *s, *d)?;
                if dep.is_empty().isl("testing a map for emptiness")? {
                    continue;
                }
                let pairs = dep
                    .apply_domain(ms.copy().isl("copying a map")?)
                    .isl("tiles of a dependence")?
                    .apply_range(md.copy().isl("copying a map")?)
                    .isl("tiles of a dependence")?;
                deltas.push(pairs.deltas().isl("tile distances")?);
            }
        }
    }
    let prefix = scop.param_prefix();
    let xs: Vec<String> = (0..nt).map(|d| format!("x{d}")).collect();
    let mut out = Vec::with_capacity(nt);
    for g in 0..nt {
        let mut cons: Vec<String> = (0..g).map(|d| format!("x{d} = 0")).collect();
        cons.push(format!("(x{g} <= -1 or x{g} >= 1)"));
        let text = format!("{prefix}{{ [{}] : {} }}", xs.join(", "), cons.join(" and "));
        let mut ok = true;
        for dl in &deltas {
            let bad = Set::read_from_str(&cx.ctx.isl, &text).isl("reading a distance set")?;
            let hit = dl
                .copy()
                .isl("copying a set")?
                .intersect(bad)
                .isl("crossing tiles")?;
            if !hit.is_empty().isl("testing a set for emptiness")? {
                ok = false;
                break;
            }
        }
        out.push(ok);
    }
    Ok(out)
}

/// Why fusion at `buffer` cannot be: a target that needs tile-local buffers for the
/// recomputed temporaries (`opts.local_buffers`, a GPU's shared memory) and one of them
/// whose tile does not fit the level; `None` when they fit.
fn local_overflow(
    cx: &TileCx,
    buffers: &[LocalBuffer],
    buffer: Buffer,
    opts: &FuseOptions,
) -> Option<String> {
    let capacity = cx.capacity(buffer).filter(|_| opts.local_buffers)?;
    let b = buffers
        .iter()
        .find(|b| b.tile_bytes.is_some_and(|t| t > capacity))?;
    Some(format!(
        "the tile-local buffer of {} ({} bytes per tile) would not fit {buffer} ({capacity} bytes)",
        b.tensor,
        b.tile_bytes.unwrap_or(0)
    ))
}

/// Fused temporaries only the fused group touches: what a tile-local buffer would save.
fn local_buffers(
    cx: &TileCx,
    need: &UnionMap,
    fused: &BTreeSet<usize>,
    live: &[usize],
) -> miette::Result<Vec<LocalBuffer>> {
    let scop = cx.scop;
    let mut out = Vec::new();
    let tensors: BTreeSet<usize> = fused.iter().map(|&p| scop.stmt_writes[p].tensor).collect();
    for t in tensors {
        if !tile_local(cx, t, fused, live) {
            continue;
        }
        let eb = cx.program.tensors[t].dtype.size_bytes() as u64;
        let ext: &Set = &scop.tensor_extents[t];
        let global = set_count(ext).map(|n| n * eb);
        // tile -> elements of t written by the tile's producer instances.
        let writes = scop
            .writes
            .copy()
            .isl("copying accesses")?
            .intersect_range(
                UnionSet::from_set(ext.copy().isl("copying a set")?).isl("a union set")?,
            )
            .isl("restricting writes")?;
        let data = need
            .copy()
            .isl("copying a map")?
            .apply_range(writes)
            .isl("a tile's data")?;
        let tile = if data.is_empty().isl("testing a map for emptiness")? {
            Some(0)
        } else {
            range_box(&Map::from_union_map(data).isl("a tile's data")?)?
                .map(|b| b.iter().product::<u64>() * eb)
        };
        out.push(LocalBuffer {
            tensor: cx.program.tensors[t].name.clone(),
            global_bytes: global,
            tile_bytes: tile,
            saved_bytes: match (global, tile) {
                (Some(g), Some(t)) => Some(g.saturating_sub(t)),
                _ => None,
            },
        });
    }
    Ok(out)
}

/// The copy of a fused producer's subtree inside the live-out tiles fused at `buffer`:
/// its tile bands at or outside the fusion level are dropped (with their `mem` marks),
/// since the live-out tile already bounds the producer's share and its marks place the
/// data. Its levels inside the fusion level tile its share of the fused tile: register
/// tiles, the cache levels above them, whose marks promotion packs the register tiles'
/// operands at (attention's `K`, stored transposed for `Q·Kᵀ`), and cache levels that no
/// reduction crosses (all members coincident). A producer's tile grid is absolute, so
/// its inner tiles cut the fused tile's share exactly where the unfused tiles would. A
/// register tile with no cache level of the copy above it stays only when it streams
/// contiguous data (attention's `P·V` inside a row block), since no packing level
/// reorders its operands. (A cache level that a reduction crosses, with no register tiles
/// below, is dropped: it would split the row reductions of a fused row block, which cost
/// softmax 4× when every inner level was kept.)
fn copy_inside(
    node: Node,
    buffer: Buffer,
    cx: &TileCx,
    log: &mut Vec<String>,
) -> miette::Result<Node> {
    let fused_at = cx.levels.iter().position(|l| l.buffer == buffer);
    copy_below(node, fused_at, false, cx, log)
}

/// What [`copy_inside`] does to one node of the copy and its subtree; `packed` says that a
/// cache level of the copy encloses the node.
fn copy_below(
    mut node: Node,
    fused_at: Option<usize>,
    mut packed: bool,
    cx: &TileCx,
    log: &mut Vec<String>,
) -> miette::Result<Node> {
    // What to do with a tile band over a memory mark: drop it, keep it as a cache level,
    // or keep it as a register tile.
    enum Level {
        Drop,
        Cache,
        Keep,
    }
    let mut level = |n: &Node| -> miette::Result<Level> {
        let (NodeKind::Band(tile), [mark]) = (&n.kind, n.children.as_slice()) else {
            return Ok(Level::Keep);
        };
        let NodeKind::Mark(Mark::Mem(b)) = mark.kind else {
            return Ok(Level::Keep);
        };
        let at = cx.levels.iter().position(|l| l.buffer == b);
        let outside = match (at, fused_at) {
            (Some(a), Some(f)) => a <= f,
            _ => true,
        };
        if outside {
            return Ok(Level::Drop);
        }
        let Some(NodeKind::Band(point)) = mark.children.first().map(|c| &c.kind) else {
            return Ok(Level::Keep);
        };
        let stmts = band_statements(point, cx)?;
        if !cx.is_register_file(b) {
            if has_register_tiles(mark, cx) {
                log.push(format!(
                    "copy of {stmts} keeps its {b} tiles inside the fused tile, where its register tiles read what they pack"
                ));
                return Ok(Level::Cache);
            }
            if !tile.coincident.iter().all(|&c| c) {
                return Ok(Level::Drop);
            }
            log.push(format!(
                "copy of {stmts} keeps its {b} tiles inside the fused tile (no reduction crosses them)"
            ));
            return Ok(Level::Cache);
        }
        if packed {
            log.push(format!(
                "copy of {stmts} keeps its register tiles inside its own cache tiles"
            ));
            return Ok(Level::Keep);
        }
        match streams_contiguously(tile, point, cx)? {
            None => {
                log.push(format!(
                    "copy of {stmts} keeps its register tiles inside the fused tile"
                ));
                Ok(Level::Keep)
            }
            Some(t) => {
                log.push(format!(
                    "copy of {stmts} runs without its register tiles: they would read {} across its rows, and no level inside the fused tile packs it",
                    cx.program.tensors[t].name
                ));
                Ok(Level::Drop)
            }
        }
    };
    loop {
        match level(&node)? {
            Level::Drop => {
                let mark = node.children.pop().unwrap_or_else(Node::leaf);
                node = mark.children.into_iter().next().unwrap_or_else(Node::leaf);
            }
            Level::Cache => {
                packed = true;
                break;
            }
            Level::Keep => break,
        }
    }
    node.children = node
        .children
        .into_iter()
        .map(|c| copy_below(c, fused_at, packed, cx, log))
        .collect::<miette::Result<_>>()?;
    Ok(node)
}

/// Whether the subtree of `node` has a mark of a register file (register tiles).
fn has_register_tiles(node: &Node, cx: &TileCx) -> bool {
    matches!(node.kind, NodeKind::Mark(Mark::Mem(b)) if cx.is_register_file(b))
        || node.children.iter().any(|c| has_register_tiles(c, cx))
}

/// The statements a band schedules, by name (`S_1, S_2`).
fn band_statements(band: &schedule_tree::Band, cx: &TileCx) -> miette::Result<String> {
    let mupa = MultiUnionPwAff::read_from_str(&cx.ctx.isl, &band.schedule).isl("reading a band")?;
    let dom = mupa.domain().isl("a band's statements")?;
    let mut names = Vec::new();
    for (i, name) in cx.scop.stmt_names.iter().enumerate() {
        let part = dom
            .copy()
            .isl("copying a set")?
            .extract_set(cx.scop.stmt_space(i)?)
            .isl("extracting a statement's instances")?;
        if !part.is_empty().isl("testing a set for emptiness")? {
            names.push(name.as_str());
        }
    }
    Ok(names.join(", "))
}

/// Whether a register tile (tile band `tile` over the `point` band below its mark) reads
/// and writes contiguous data along its vector member, the last coincident member of
/// `tile`: one step of that member leaves every access of every statement in place or
/// moves it by one along its tensor's last index. `None` when it does, else the first
/// tensor that breaks it. Inside a fused tile no packing level
/// reorders a strided operand for the register tile (attention's `K` in `Q·Kᵀ`, read
/// across its rows), so such a tile would gather; the copy then runs untiled, where the
/// statement's own loop order reads it along its rows.
fn streams_contiguously(
    tile: &schedule_tree::Band,
    point: &schedule_tree::Band,
    cx: &TileCx,
) -> miette::Result<Option<usize>> {
    let Some(m) = tile.coincident.iter().rposition(|&c| c) else {
        return Ok(None);
    };
    let n = point.n_members();
    if m >= n {
        return Ok(None);
    }
    let isl = &cx.ctx.isl;
    for step in cx.scop.member_steps(isl, &point.schedule, n, m)? {
        let ten = &cx.program.tensors[step.tensor];
        let rank = ten.shape.len();
        let allowed = cx
            .scop
            .unit_steps(isl, &ten.name, rank, rank.saturating_sub(1))?;
        if !step
            .deltas
            .is_subset(&allowed)
            .isl("testing the access steps")?
        {
            return Ok(Some(step.tensor));
        }
    }
    Ok(None)
}

/// Whether a subtree holds a memory mark of a register file.
fn holds_register_tile(n: &Node, cx: &TileCx) -> bool {
    matches!(n.kind, NodeKind::Mark(Mark::Mem(b)) if cx.is_register_file(b))
        || n.children.iter().any(|c| holds_register_tile(c, cx))
}

/// Builds the fused tree: skipped marks over the fused producers' subtrees, and the
/// extension with copies of them above the live-out point subtree.
#[allow(clippy::too_many_arguments)]
fn rewrite(
    mut tree: ScheduleTree,
    shape: &Shape,
    fused: &BTreeSet<usize>,
    need: &UnionMap,
    cx: &TileCx,
    parallel: &[bool],
    copy_log: &mut Vec<String>,
) -> miette::Result<ScheduleTree> {
    let internal = || miette::miette!("internal error: the fusion shape changed");
    // Tile bands: a member stays coincident only if the fused tiles keep it parallel.
    let mut g = 0;
    let mut path = shape.seq.clone();
    path.push(shape.filters.len() - 1);
    path.push(0);
    while path.len() <= shape.mark.len() {
        if let Some(Node {
            kind: NodeKind::Band(b),
            ..
        }) = tree.node_at_mut(&path)
        {
            for c in b.coincident.iter_mut() {
                *c = *c && parallel.get(g).copied().unwrap_or(false);
                g += 1;
            }
        }
        path.push(0);
    }
    let seq = tree.node_at(&shape.seq).ok_or_else(internal)?.clone();
    let nf = seq.children.len();
    let mut copies = Vec::new();
    for (f, stmts) in shape.filters.iter().enumerate().take(nf - 1) {
        if stmts.iter().all(|s| fused.contains(s)) {
            copies.push(copy_inside(
                seq.children[f].clone(),
                shape.buffer,
                cx,
                copy_log,
            )?);
        }
    }
    // Extension text: restricted to the fused producers.
    let ext = need
        .copy()
        .isl("copying a map")?
        .intersect_range(domains(cx, fused)?)
        .isl("restricting the extension")?
        .coalesce()
        .isl("simplifying the extension")?;
    let ext_text = union_map_text(&ext);
    let live_filter = match &seq.children[nf - 1].kind {
        NodeKind::Filter { filter } => filter.clone(),
        _ => return Err(internal()),
    };
    let mark = tree.node_at_mut(&shape.mark).ok_or_else(internal)?;
    let point = std::mem::replace(&mut mark.children[0], Node::leaf());
    copies.push(Node::with_child(
        NodeKind::Filter {
            filter: live_filter,
        },
        point,
    ));
    mark.children[0] = Node::with_child(
        NodeKind::Extension {
            extension: ext_text,
        },
        Node::new(NodeKind::Sequence, copies),
    );
    let seq = tree.node_at_mut(&shape.seq).ok_or_else(internal)?;
    for (f, stmts) in shape.filters.iter().enumerate().take(nf - 1) {
        if stmts.iter().all(|s| fused.contains(s)) {
            let filter = &mut seq.children[f];
            let sub = std::mem::replace(&mut filter.children[0], Node::leaf());
            filter.children[0] = Node::with_child(NodeKind::Mark(Mark::Skipped), sub);
        }
    }
    Ok(tree)
}
