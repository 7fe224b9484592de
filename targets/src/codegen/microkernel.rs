//! Dynamic-shape kernels in FTuner's manner (`--dynamic T=1..128`): one kernel for a range
//! (or a set) of values of a size, whose partial tiles along that size are composed at run
//! time from a small set of *micro-kernels*, full-tile bodies with fewer rows.
//!
//! # Where the micro-kernels come from
//!
//! Parametric tiling ([`crate::codegen::normalize::version_tiles`]) already emits every promoted
//! tile twice: the full tile, whose loops have constant trip counts (a register tile of
//! `R` rows stays in registers), and the partial tile at the edge, whose row loops run to
//! `min(e, R − 1)` with `e` depending on the size. Along a dynamic size, the partial tile
//! is what remains once the full tiles are done: `r = T mod R` rows (1 ≤ r < R). A loop
//! with a run-time trip count keeps its accumulators in memory, so those rows run several
//! times slower than full ones.
//!
//! [`compose_partial`] replaces the partial tile by a *composition*: for each micro-kernel
//! size `m` of the chosen set, largest first, as many copies of the tile body with exactly
//! `m` rows (constant trip counts, so the C compiler keeps them in registers) as fit in
//! the rows left, each at its row offset. The set always holds `R` and 1, so every `r` is
//! covered exactly: no padding and no row loop with a run-time trip count.
//!
//! # The model (after FTuner's alignment, padding and occupancy criteria)
//!
//! A micro-kernel of `m` rows × `c` columns keeps `m·⌈c / v⌉` vector accumulators (`v`
//! elements per vector). Per reduction step it issues that many FMAs, loads `⌈c / v⌉`
//! vectors of the shared operand and broadcasts `m` values. [`MicroKernelModel::cycles`] takes the
//! largest of three bounds: FMA throughput (`acc / fma_ports`), the FMA latency (each
//! accumulator is a dependence chain: fewer than `latency · ports` accumulators leave the
//! FMA units idle: FTuner's *occupancy*) and the load ports. A micro-kernel must fit the
//! register file with its operands (FTuner's register bound). Its *efficiency* is the
//! fraction of the FMA units it keeps busy.
//!
//! The set is chosen by [`choose_set`]: every set of at most [`MAX_MICRO_KERNELS`] sizes
//! that holds `R` and 1 is scored by the modelled cycles of the remainders `T mod R` over
//! every size the range (or set) allows, composed greedily as the emitted code does;
//! the lowest total wins, then the smaller set, then sizes that divide `R` (*alignment*:
//! the composed pieces of a power-of-two `R` then start at aligned rows). *Padding* is
//! reported against the alternative of running the full `R`-row body on zero-padded
//! rows.

use crate::codegen::kir::{KCmp, KExpr, KNode, LocalBuf, LocalRef};

/// The values a dynamic size may take at run time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SizeValues {
    /// Every integer in `lo..=hi`.
    Range(i64, i64),
    /// Exactly these values (sorted, distinct).
    Set(Vec<i64>),
}

/// One `--dynamic NAME=…` size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DynamicSize {
    /// The size's name in the program.
    pub name: String,
    /// The values it may take.
    pub values: SizeValues,
}

impl DynamicSize {
    /// The smallest value.
    pub fn lo(&self) -> i64 {
        match &self.values {
            SizeValues::Range(lo, _) => *lo,
            SizeValues::Set(v) => v.first().copied().unwrap_or(1),
        }
    }
    /// The largest value.
    pub fn hi(&self) -> i64 {
        match &self.values {
            SizeValues::Range(_, hi) => *hi,
            SizeValues::Set(v) => v.last().copied().unwrap_or(1),
        }
    }
    /// Whether `v` is one of the values.
    pub fn contains(&self, v: i64) -> bool {
        match &self.values {
            SizeValues::Range(lo, hi) => *lo <= v && v <= *hi,
            SizeValues::Set(s) => s.contains(&v),
        }
    }
    /// Every value, in increasing order.
    pub fn all(&self) -> Vec<i64> {
        match &self.values {
            SizeValues::Range(lo, hi) => (*lo..=*hi).collect(),
            SizeValues::Set(s) => s.clone(),
        }
    }
    /// The values as the flag writes them: `1..128` or `{1, 5, 24}`.
    pub fn values_text(&self) -> String {
        match &self.values {
            SizeValues::Range(lo, hi) => format!("{lo}..{hi}"),
            SizeValues::Set(s) => format!(
                "{{{}}}",
                s.iter()
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
    /// The sizes at which `polyc explain` shows compositions: every value of a set; for a
    /// range its ends and FTuner's samples (5, 24, 43, 53, 62, 81, 100, 119) inside it.
    pub fn explain_samples(&self) -> Vec<i64> {
        match &self.values {
            SizeValues::Set(v) => v.clone(),
            SizeValues::Range(lo, hi) => {
                let mut v = vec![*lo];
                v.extend(
                    [5, 24, 43, 53, 62, 81, 100, 119]
                        .into_iter()
                        .filter(|x| x > lo && x < hi),
                );
                if hi > lo {
                    v.push(*hi);
                }
                v
            }
        }
    }
    /// The C condition that holds exactly for the allowed values of the variable `var`.
    pub fn c_condition(&self, var: &str) -> String {
        match &self.values {
            SizeValues::Range(lo, hi) => format!("{var} >= {lo} && {var} <= {hi}"),
            SizeValues::Set(s) => s
                .iter()
                .map(|v| format!("{var} == {v}"))
                .collect::<Vec<_>>()
                .join(" || "),
        }
    }
}

/// At most this many micro-kernel sizes per tile (the full one and 1 included): each one
/// is a copy of the tile body in the emitted code.
pub const MAX_MICRO_KERNELS: usize = 4;

/// Modelled cycles each piece of a composition adds (its loop's start and the tile's
/// addressing), so that fewer, larger pieces win ties.
pub const PIECE_OVERHEAD: i64 = 1;

/// What one micro-kernel runs on, as far as the model cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelUnit {
    /// One core with vector FMAs over SIMD lanes, which also runs the tiles before (a CPU
    /// core): a piece may be shifted back over rows it already computed.
    VectorCore,
    /// One thread among many that run the tiles side by side (a GPU thread, whose warp is
    /// the SIMD unit): scalar FMAs, operands loaded from shared memory; the rows before
    /// belong to another thread.
    ScalarThread,
}

/// The analytic model of an FMA pipeline that ranks micro-kernels; each target that
/// supports dynamic sizes fills in its own figures (a CPU core's, one GPU thread's).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MicroKernelModel {
    /// What runs one micro-kernel.
    pub unit: ModelUnit,
    /// Elements per SIMD vector.
    pub vector_elems: i64,
    /// Vector registers.
    pub registers: i64,
    /// Cycles from an FMA's issue to its result.
    pub fma_latency: i64,
    /// FMAs issued per cycle.
    pub fma_ports: i64,
    /// Vector loads (or broadcasts) issued per cycle.
    pub load_ports: i64,
}

impl MicroKernelModel {
    /// The model's figures, as `polyc explain` prints them.
    pub fn describe(&self) -> String {
        match self.unit {
            ModelUnit::VectorCore => format!(
                "{} elements per vector, {} registers, FMA latency {}, {} FMA ports",
                self.vector_elems, self.registers, self.fma_latency, self.fma_ports
            ),
            ModelUnit::ScalarThread => format!(
                "one GPU thread, scalar FMAs, {} registers, FMA latency {}, {} FMA and {} shared-memory load per cycle",
                self.registers, self.fma_latency, self.fma_ports, self.load_ports
            ),
        }
    }
    /// Vector accumulators of a micro-kernel of `rows × cols`.
    pub fn accumulators(&self, rows: i64, cols: i64) -> i64 {
        rows * self.vectors(cols)
    }
    fn vectors(&self, cols: i64) -> i64 {
        (cols + self.vector_elems - 1) / self.vector_elems
    }
    /// Modelled cycles of one reduction step of a micro-kernel of `rows × cols`.
    pub fn cycles(&self, rows: i64, cols: i64) -> i64 {
        let acc = self.accumulators(rows, cols);
        let fma = (acc + self.fma_ports - 1) / self.fma_ports;
        let loads = (self.vectors(cols) + rows + self.load_ports - 1) / self.load_ports;
        fma.max(self.fma_latency).max(loads)
    }
    /// [`MicroKernelModel::cycles`] plus [`PIECE_OVERHEAD`]: what one piece of a composition
    /// costs.
    pub fn piece_cycles(&self, rows: i64, cols: i64) -> i64 {
        self.cycles(rows, cols) + PIECE_OVERHEAD
    }
    /// The fraction of the FMA units a micro-kernel keeps busy (1 = peak).
    pub fn efficiency(&self, rows: i64, cols: i64) -> f64 {
        self.accumulators(rows, cols) as f64 / (self.fma_ports * self.cycles(rows, cols)) as f64
    }
    /// Whether the accumulators, one row of the shared operand and a broadcast fit the
    /// register file.
    pub fn fits(&self, rows: i64, cols: i64) -> bool {
        self.accumulators(rows, cols) + self.vectors(cols) < self.registers
    }
}

/// How `rows` rows are covered by the sizes `set` (largest first, greedily, as the
/// emitted code does): `(size, count)` pairs with a non-zero count.
pub fn compose(rows: i64, set: &[i64]) -> Vec<(i64, i64)> {
    let mut left = rows;
    let mut out = Vec::new();
    for &m in set {
        if m > 0 && left >= m {
            out.push((m, left / m));
            left %= m;
        }
    }
    out
}

/// `43 = 5×8 + 2 + 1`.
pub fn composition_text(rows: i64, pieces: &[(i64, i64)]) -> String {
    let parts: Vec<String> = pieces
        .iter()
        .map(|&(m, n)| {
            if n == 1 {
                format!("{m}")
            } else {
                format!("{n}×{m}")
            }
        })
        .collect();
    if parts.is_empty() {
        format!("{rows} = 0")
    } else {
        format!("{rows} = {}", parts.join(" + "))
    }
}

/// `(size, count)` pairs of a composition, largest size first.
pub type Pieces = Vec<(i64, i64)>;

/// The micro-kernels chosen for one tile.
#[derive(Clone, Debug, PartialEq)]
pub struct MicroKernelSet {
    /// The dynamic size the tile's rows run along.
    pub size: DynamicSize,
    /// Rows of the full tile.
    pub full_rows: i64,
    /// Columns of one row (the vectorised loop's trip count).
    pub cols: i64,
    /// The chosen sizes, largest first (the full one first, 1 last).
    pub sizes: Vec<i64>,
    /// Remainders `r` run as one piece of `m > r` rows shifted back by `m − r` rows over
    /// rows the tile before already computed (they are recomputed, not stored), when the
    /// modelled cycles are fewer than the composition's and the size is at least `m`:
    /// `(r, m)` pairs.
    pub shifted: Vec<(i64, i64)>,
    /// The model.
    pub model: MicroKernelModel,
}

impl MicroKernelSet {
    /// Modelled cycles per reduction step of the whole size `t`: full tiles, then the
    /// composed remainder.
    pub fn cycles(&self, t: i64) -> i64 {
        let (pieces, shifted) = self.plan(t);
        pieces
            .iter()
            .map(|&(m, n)| n * self.model.piece_cycles(m, self.cols))
            .sum::<i64>()
            + shifted.map_or(0, |(_, m)| self.model.piece_cycles(m, self.cols))
    }
    /// How size `t` runs: the full tiles and the composed remainder, or the full tiles
    /// and one shifted piece `(r, m)`.
    pub fn plan(&self, t: i64) -> (Pieces, Option<(i64, i64)>) {
        let r = t % self.full_rows;
        match self.shifted.iter().find(|&&(rr, m)| rr == r && t >= m) {
            Some(&(r, m)) => (compose(t - r, &self.sizes), Some((r, m))),
            None => (compose(t, &self.sizes), None),
        }
    }
    /// Modelled cycles with padding instead: `⌈t / R⌉` full tiles.
    pub fn padded_cycles(&self, t: i64) -> i64 {
        ((t + self.full_rows - 1) / self.full_rows)
            * self.model.piece_cycles(self.full_rows, self.cols)
    }
    /// The `polyc explain` text: the micro-kernels and how sample sizes are composed.
    pub fn explain(&self, stmts: &str, samples: &[i64]) -> String {
        let mut s = format!(
            "micro-kernels of {stmts} along {} = {} (tiles of {} rows × {} columns; model: {}):\n",
            self.size.name,
            self.size.values_text(),
            self.full_rows,
            self.cols,
            self.model.describe()
        );
        s.push_str("  rows  accumulators  cycles/step  efficiency\n");
        for &m in &self.sizes {
            let _ = std::fmt::Write::write_fmt(
                &mut s,
                format_args!(
                    "  {:>4}  {:>12}  {:>11}  {:>9.0}%\n",
                    m,
                    self.model.accumulators(m, self.cols),
                    self.model.cycles(m, self.cols),
                    100.0 * self.model.efficiency(m, self.cols)
                ),
            );
        }
        s.push_str("  composition at sample sizes (modelled cycles per reduction step, composed / padded to full tiles):\n");
        for &t in samples {
            let (pieces, shifted) = self.plan(t);
            let text = match shifted {
                None => composition_text(t, &pieces),
                Some((r, m)) => {
                    let mut c = composition_text(t - r, &pieces);
                    if t == r {
                        c = format!("{t} =");
                    }
                    let sep = if t == r { " " } else { " + " };
                    format!(
                        "{}{sep}{m} shifted back {}",
                        c.replacen(&format!("{} =", t - r), &format!("{t} ="), 1),
                        m - r
                    )
                }
            };
            let _ = std::fmt::Write::write_fmt(
                &mut s,
                format_args!(
                    "  {}={}: {}  ({} / {})\n",
                    self.size.name,
                    t,
                    text,
                    self.cycles(t),
                    self.padded_cycles(t)
                ),
            );
        }
        s
    }
}

/// Chooses the micro-kernel sizes for tiles of `full_rows × cols` along `size` (see the
/// module documentation).
///
/// `register_tile` says whether the tile lives in registers; a cache tile's micro-kernels
/// need not fit the register file, and only divisors of `full_rows` are candidates
/// (pieces start at aligned rows).
pub fn choose_set(
    size: &DynamicSize,
    full_rows: i64,
    cols: i64,
    model: MicroKernelModel,
    register_tile: bool,
) -> Vec<i64> {
    let values = size.all();
    let cost = |set: &[i64]| -> i64 {
        values
            .iter()
            .map(|&t| {
                compose(t % full_rows, set)
                    .iter()
                    .map(|&(m, n)| n * model.piece_cycles(m, cols))
                    .sum::<i64>()
            })
            .sum()
    };
    // Candidate middle sizes: those that fit the registers.
    let middle: Vec<i64> = (2..full_rows)
        .rev()
        .filter(|&m| {
            if register_tile {
                model.fits(m, cols)
            } else {
                full_rows % m == 0
            }
        })
        .collect();
    let mut best: Option<(i64, usize, usize, Vec<i64>)> = None;
    let extra = MAX_MICRO_KERNELS.saturating_sub(2);
    let mut consider = |mids: Vec<i64>| {
        let mut set = vec![full_rows];
        set.extend(mids.iter().copied());
        if full_rows > 1 {
            set.push(1);
        }
        let c = cost(&set);
        let misaligned = mids.iter().filter(|&&m| full_rows % m != 0).count();
        let key = (c, set.len(), misaligned);
        if best
            .as_ref()
            .is_none_or(|(bc, bl, bm, _)| key < (*bc, *bl, *bm))
        {
            best = Some((c, set.len(), misaligned, set));
        }
    };
    consider(Vec::new());
    for (i, &a) in middle.iter().enumerate() {
        if extra >= 1 {
            consider(vec![a]);
        }
        if extra >= 2 {
            for &b in &middle[i + 1..] {
                consider(vec![a, b]);
            }
        }
    }
    best.map(|b| b.3).unwrap_or_else(|| vec![full_rows, 1])
}

/// The micro-kernel sets chosen for a kernel, each with the statements of its tiles.
pub type ChosenSets = Vec<(MicroKernelSet, Vec<usize>)>;

/// What [`compose_partial`] needs besides the tile.
pub struct ComposeCx<'a> {
    /// The dynamic sizes.
    pub sizes: &'a [DynamicSize],
    /// The model.
    pub model: MicroKernelModel,
    /// A counter for fresh names.
    pub next_id: usize,
    /// The sets chosen so far, with the statements of their tiles.
    pub chosen: ChosenSets,
    /// What shifted pieces need to know of the program (`None`: no shifted pieces).
    pub shift: Option<ShiftInfo>,
}

/// What [`compose_partial`] needs to know of the program to shift a piece back over rows
/// already computed (see [`MicroKernelSet::shifted`]).
pub struct ShiftInfo {
    /// Per statement, the tensor it writes.
    pub stmt_lhs: Vec<usize>,
    /// Per tensor, per dimension, the names of the sizes its extent mentions.
    pub dim_sizes: Vec<Vec<Vec<String>>>,
    /// Every local buffer of the kernel, by promotion.
    pub buffers: std::collections::HashMap<usize, LocalBuf>,
}

/// The row loops of a partial tile: loops `iter <= min(e, K)` whose `e` mentions a
/// dynamic size, as `(iter, e, K)`.
fn row_loops(n: &KNode, sizes: &[DynamicSize]) -> Vec<(String, KExpr, i64)> {
    let mut out = Vec::new();
    n.walk(&mut |x| {
        if let KNode::For {
            iter,
            cond: KExpr::Cmp(KCmp::Le, _, u),
            ..
        } = x
        {
            if let KExpr::Min(v) = &**u {
                if let [e, KExpr::Int(k)] = v.as_slice() {
                    if sizes.iter().any(|s| e.mentions(&s.name)) {
                        out.push((iter.clone(), e.clone(), *k));
                    }
                }
            }
        }
    });
    out
}

/// The coefficient of `var` in the affine `e` (`None` if `e` is not affine in it).
fn coefficient(e: &KExpr, var: &str) -> Option<i64> {
    let at = |v: i64| e.eval(&|n: &str| Some(if n == var { v } else { 0 }));
    let (a, b, c) = (at(0)?, at(1)?, at(2)?);
    (c - b == b - a).then_some(b - a)
}

/// How each promoted tile's origin moves with the rows, from its copies' coordinates:
/// (promotion id, coefficients per copy argument); `None` when a copy does not move
/// linearly with the rows (or sits outside them).
fn row_shifts(
    bufs: &[LocalBuf],
    partial: &KNode,
    edge: &KExpr,
    k: i64,
) -> Option<Vec<(usize, Vec<i64>)>> {
    let mut shifts: Vec<(usize, Vec<i64>)> = Vec::new();
    for b in bufs {
        let mut shift: Option<Vec<i64>> = None;
        let mut ok = true;
        copies_in_rows(
            partial,
            b.promo,
            &(edge.clone(), k),
            None,
            &mut |args, iter| {
                // A copy outside the rows cannot move with them.
                let s: Option<Vec<i64>> =
                    iter.and_then(|it| args.iter().map(|a| coefficient(a, it)).collect());
                match (&shift, s) {
                    (_, None) => ok = false,
                    (None, Some(s)) => shift = Some(s),
                    (Some(old), Some(s)) => ok &= *old == s,
                }
            },
        );
        match shift {
            Some(s) if ok => shifts.push((b.promo, s)),
            _ => return None,
        }
    }
    Some(shifts)
}

/// The chain of micro-kernel loops over the rows `rows_var` of a partial tile: for each
/// size `m` of `sizes`, largest first, `for (o = start; o <= rows - m; o += m) body(m, o)`,
/// each loop starting where the one before stopped.
#[allow(clippy::too_many_arguments)]
fn piece_chain(
    partial: &KNode,
    edge: &KExpr,
    k: i64,
    sizes: &[i64],
    id: usize,
    rows_var: &str,
    shifts: &[(usize, Vec<i64>)],
) -> Option<KNode> {
    let mut chain: Option<KNode> = None;
    for (i, &m) in sizes.iter().enumerate().rev() {
        let start = if i == 0 {
            KExpr::Int(0)
        } else {
            KExpr::var(&format!("polyc_mk{id}_s{i}"))
        };
        let o = format!("polyc_mk{id}_o{i}");
        let body = micro_kernel(partial, edge, k, m, &o, shifts);
        let lp = KNode::For {
            iter: o.clone(),
            init: start.clone(),
            cond: KExpr::Cmp(
                KCmp::Le,
                Box::new(KExpr::var(&o)),
                Box::new(KExpr::Sub(
                    Box::new(KExpr::var(rows_var)),
                    Box::new(KExpr::Int(m)),
                )),
            ),
            step: m,
            body: Box::new(body),
            kind: Default::default(),
        };
        let node = match chain.take() {
            None => lp,
            Some(rest) => {
                // The next start: past the pieces of size `m`.
                let next = KExpr::Add(
                    Box::new(start.clone()),
                    Box::new(KExpr::Mul(
                        Box::new(KExpr::Div(
                            Box::new(KExpr::Sub(
                                Box::new(KExpr::var(rows_var)),
                                Box::new(start.clone()),
                            )),
                            Box::new(KExpr::Int(m)),
                        )),
                        Box::new(KExpr::Int(m)),
                    )),
                );
                KNode::Block(vec![
                    lp,
                    KNode::Let {
                        name: format!("polyc_mk{id}_s{}", i + 1),
                        value: next,
                        body: Box::new(rest),
                    },
                ])
            }
        };
        chain = Some(node);
    }
    chain
}

/// Replaces the partial tile `partial` (the body of a [`KNode::Local`] with buffers
/// `bufs`, at a tile edge) by its composition from micro-kernels, when its rows run along
/// one dynamic size; `None` when the tile does not qualify (see the module
/// documentation).
pub fn compose_partial(bufs: &[LocalBuf], partial: &KNode, cx: &mut ComposeCx) -> Option<KNode> {
    // Only the innermost tiles.
    let mut nested = false;
    partial.walk(&mut |x| nested |= matches!(x, KNode::Local { .. }));
    if nested || bufs.iter().any(|b| b.block.is_some() || b.order.is_some()) {
        return None;
    }
    let rows = row_loops(partial, cx.sizes);
    let (_, edge, k) = rows.first()?.clone();
    if rows.iter().any(|(_, e, kk)| *e != edge || *kk != k) {
        return None;
    }
    let size = cx.sizes.iter().find(|s| edge.mentions(&s.name))?.clone();
    let full_rows = k + 1;
    let row_iters: Vec<String> = rows.iter().map(|r| r.0.clone()).collect();
    let shifts = row_shifts(bufs, partial, &edge, k)?;
    // Columns: the longest constant loop directly inside a row loop (the outermost loops
    // of its body; a reduction nested in the column loop, as in a GPU thread's tile, is
    // not a column).
    let mut cols = 1;
    partial.walk(&mut |x| {
        if let KNode::For { iter, body, .. } = x {
            if row_iters.contains(iter) {
                cols = cols.max(outer_constant_loop(body));
            }
        }
    });
    // A register tile: its rows × columns fit the register file.
    let register_tile = full_rows * cols <= cx.model.registers * cx.model.vector_elems;
    let sizes = choose_set(&size, full_rows, cols, cx.model, register_tile);
    let id = cx.next_id;
    cx.next_id += 1;
    let rows_var = format!("polyc_mk{id}_rows");
    // Remainders that run faster as one larger piece shifted back over computed rows.
    let mut shifted: Vec<(i64, i64)> = Vec::new();
    if shift_allowed(partial, bufs, &size, &row_iters, &edge, k, cx) {
        for r in 1..full_rows {
            let greedy: i64 = compose(r, &sizes)
                .iter()
                .map(|&(m, n)| n * cx.model.piece_cycles(m, cols))
                .sum();
            let best = sizes
                .iter()
                .filter(|&&m| m > r)
                .map(|&m| (cx.model.piece_cycles(m, cols), m))
                .min();
            if let Some((c, m)) = best {
                if c < greedy {
                    shifted.push((r, m));
                }
            }
        }
    }
    let mut chain = piece_chain(partial, &edge, k, &sizes, id, &rows_var, &shifts);
    let mut stmts = Vec::new();
    partial.walk(&mut |x| {
        if let KNode::Stmt { stmt, .. } = x {
            if !stmts.contains(stmt) {
                stmts.push(*stmt);
            }
        }
    });
    // Shifted pieces: `if ((rows == r1 || …) && T >= m) { piece(m, rows − m) } else …`.
    let mut ms: Vec<i64> = shifted.iter().map(|p| p.1).collect();
    ms.dedup();
    for &m in ms.iter().rev() {
        let rs: Vec<i64> = shifted.iter().filter(|p| p.1 == m).map(|p| p.0).collect();
        let o = format!("polyc_mk{id}_sh{m}");
        let piece = micro_kernel(
            &restrict_copy_out(partial.clone(), &(edge.clone(), k), m, &rows_var),
            &edge,
            k,
            m,
            &o,
            &shifts,
        );
        let cond = rs
            .iter()
            .map(|&r| {
                KExpr::Cmp(
                    KCmp::Eq,
                    Box::new(KExpr::var(&rows_var)),
                    Box::new(KExpr::Int(r)),
                )
            })
            .reduce(|a, b| KExpr::Or(Box::new(a), Box::new(b)))
            .unwrap_or(KExpr::Int(0));
        let cond = KExpr::And(
            Box::new(cond),
            Box::new(KExpr::Cmp(
                KCmp::Ge,
                Box::new(KExpr::var(&size.name)),
                Box::new(KExpr::Int(m)),
            )),
        );
        chain = Some(KNode::If {
            cond,
            then: Box::new(KNode::Let {
                name: o,
                value: KExpr::Sub(Box::new(KExpr::var(&rows_var)), Box::new(KExpr::Int(m))),
                body: Box::new(piece),
            }),
            els: chain.map(Box::new),
        });
    }
    let set = MicroKernelSet {
        size,
        full_rows,
        cols,
        sizes,
        shifted,
        model: cx.model,
    };
    if !cx.chosen.iter().any(|(s, st)| *s == set && *st == stmts) {
        cx.chosen.push((set, stmts));
    }
    Some(KNode::Let {
        name: rows_var,
        value: KExpr::Add(
            Box::new(KExpr::Min(vec![edge, KExpr::Int(k)])),
            Box::new(KExpr::Int(1)),
        ),
        body: Box::new(chain?),
    })
}

/// Whether a partial tile may run a piece shifted back over rows the tile before already
/// computed: on a CPU core (on a GPU those rows belong to another thread); every statement
/// writes the tile's own buffers (so the recomputed rows are not stored); every copy out
/// sits in a row loop of copies only (so it can skip the recomputed rows); and every
/// other local buffer the tile reads spans the whole range along the size (so the rows
/// before are in it, and they were copied in: they are rows of the size).
fn shift_allowed(
    partial: &KNode,
    bufs: &[LocalBuf],
    size: &DynamicSize,
    row_iters: &[String],
    edge: &KExpr,
    k: i64,
    cx: &ComposeCx,
) -> bool {
    let Some(info) = cx.shift.as_ref() else {
        return false;
    };
    if cx.model.unit != ModelUnit::VectorCore {
        return false;
    }
    let own: Vec<usize> = bufs.iter().map(|b| b.promo).collect();
    let locals_ok = |locals: &[LocalRef]| {
        locals.iter().filter(|l| !own.contains(&l.promo)).all(|l| {
            let Some(buf) = info.buffers.get(&l.promo) else {
                return false;
            };
            let dims = info.dim_sizes.get(l.tensor).cloned().unwrap_or_default();
            dims.iter().enumerate().all(|(d, names)| {
                !names.contains(&size.name) || buf.sizes.get(d).is_some_and(|&n| n >= size.hi())
            })
        })
    };
    let mut ok = true;
    partial.walk(&mut |x| match x {
        KNode::Stmt { stmt, locals, .. } => {
            let lhs = info.stmt_lhs.get(*stmt).copied();
            ok &= locals_ok(locals)
                && locals
                    .iter()
                    .any(|l| Some(l.tensor) == lhs && own.contains(&l.promo));
        }
        KNode::Copy { locals, .. } => ok &= locals_ok(locals),
        _ => {}
    });
    // Copies out only in row loops of copies.
    fn copies_out_ok(n: &KNode, row_iters: &[String], edge: &(KExpr, i64), in_row: bool) -> bool {
        match n {
            KNode::Copy { copy_in: false, .. } => in_row,
            KNode::For {
                iter, cond, body, ..
            } => {
                if row_iters.contains(iter) && is_row_loop(cond, edge) {
                    let mut stmt = false;
                    let mut out = false;
                    body.walk(&mut |x| {
                        stmt |= matches!(x, KNode::Stmt { .. });
                        out |= matches!(x, KNode::Copy { copy_in: false, .. });
                    });
                    !out || (!stmt && copies_out_ok(body, row_iters, edge, true))
                } else {
                    copies_out_ok(body, row_iters, edge, in_row)
                }
            }
            KNode::Block(v) => v.iter().all(|c| copies_out_ok(c, row_iters, edge, in_row)),
            KNode::If { then, els, .. } => {
                copies_out_ok(then, row_iters, edge, in_row)
                    && els
                        .as_deref()
                        .is_none_or(|e| copies_out_ok(e, row_iters, edge, in_row))
            }
            KNode::Local { body, .. } | KNode::Let { body, .. } | KNode::Device { body, .. } => {
                copies_out_ok(body, row_iters, edge, in_row)
            }
            _ => true,
        }
    }
    ok && copies_out_ok(partial, row_iters, &(edge.clone(), k), false)
}

/// The partial tile `n` as a shifted piece of `m` rows will run it (rows `rows − m ..
/// rows` of the tile, [`micro_kernel`] then shifts them): its row loops of copies out
/// start at `m − rows`, past the rows the tile before computed.
fn restrict_copy_out(n: KNode, edge: &(KExpr, i64), m: i64, rows_var: &str) -> KNode {
    let n = n.map_children(&mut |c| restrict_copy_out(c, edge, m, rows_var));
    match n {
        KNode::For {
            iter,
            init: KExpr::Int(0),
            cond,
            step,
            body,
            kind,
        } if is_row_loop(&cond, edge) && {
            let mut stmt = false;
            let mut out = false;
            body.walk(&mut |x| {
                stmt |= matches!(x, KNode::Stmt { .. });
                out |= matches!(x, KNode::Copy { copy_in: false, .. });
            });
            out && !stmt
        } =>
        {
            KNode::For {
                iter,
                init: KExpr::Sub(Box::new(KExpr::Int(m)), Box::new(KExpr::var(rows_var))),
                cond,
                step,
                body,
                kind,
            }
        }
        other => other,
    }
}

/// Whether a loop condition is `iter <= min(e, K)` with the row edge `(e, K)`.
/// The longest constant loop `for (x = 0; x <= K; x++)` among the outermost loops of
/// `n` (loops inside loops are not looked at), or 1.
fn outer_constant_loop(n: &KNode) -> i64 {
    match n {
        KNode::For {
            init: KExpr::Int(0),
            cond: KExpr::Cmp(KCmp::Le, _, u),
            step: 1,
            ..
        } => match **u {
            KExpr::Int(b) => b + 1,
            _ => 1,
        },
        KNode::For { .. } => 1,
        KNode::Block(v) => v.iter().map(outer_constant_loop).max().unwrap_or(1),
        KNode::If { then, els, .. } => {
            let e = els.as_deref().map_or(1, outer_constant_loop);
            outer_constant_loop(then).max(e)
        }
        KNode::Local { body, .. } | KNode::Let { body, .. } | KNode::Device { body, .. } => {
            outer_constant_loop(body)
        }
        KNode::Stmt { .. } | KNode::Copy { .. } | KNode::Barrier | KNode::Intrinsic(_) => 1,
    }
}

fn is_row_loop(cond: &KExpr, edge: &(KExpr, i64)) -> bool {
    matches!(cond, KExpr::Cmp(KCmp::Le, _, u)
        if matches!(&**u, KExpr::Min(v) if v.len() == 2 && v[0] == edge.0 && v[1] == KExpr::Int(edge.1)))
}

/// Calls `f(args, row_iter)` for every copy of `promo`, with the row loop around it if any.
fn copies_in_rows(
    n: &KNode,
    promo: usize,
    edge: &(KExpr, i64),
    row: Option<&str>,
    f: &mut impl FnMut(&[KExpr], Option<&str>),
) {
    match n {
        KNode::For {
            iter, cond, body, ..
        } => {
            let r = if is_row_loop(cond, edge) {
                Some(iter.as_str())
            } else {
                row
            };
            copies_in_rows(body, promo, edge, r, f);
        }
        KNode::Copy { promo: p, args, .. } if *p == promo => {
            f(args, row);
        }
        KNode::Block(v) => v
            .iter()
            .for_each(|c| copies_in_rows(c, promo, edge, row, f)),
        KNode::If { then, els, .. } => {
            copies_in_rows(then, promo, edge, row, f);
            if let Some(e) = els {
                copies_in_rows(e, promo, edge, row, f);
            }
        }
        KNode::Local { body, .. } | KNode::Let { body, .. } | KNode::Device { body, .. } => {
            copies_in_rows(body, promo, edge, row, f)
        }
        _ => {}
    }
}

/// The partial tile's body with exactly `m` rows starting at row `o` (a variable): each
/// row loop runs `0..m` and its iterator `c` becomes `c + o` inside; the origins of the
/// tile's own promoted buffers move by `o` times their shift.
fn micro_kernel(
    partial: &KNode,
    edge: &KExpr,
    k: i64,
    m: i64,
    o: &str,
    shifts: &[(usize, Vec<i64>)],
) -> KNode {
    fn go(n: KNode, edge: &KExpr, k: i64, m: i64, o: &str, shifts: &[(usize, Vec<i64>)]) -> KNode {
        let n = n.map_children(&mut |c| go(c, edge, k, m, o, shifts));
        match n {
            KNode::For {
                iter,
                init,
                cond,
                step,
                body,
                kind,
            } if is_row_loop(&cond, &(edge.clone(), k)) => {
                let it = iter.clone();
                let body = body.map_exprs(&|e: &KExpr| {
                    crate::codegen::affine::simplify(&e.substitute(&|n: &str| {
                        (n == it)
                            .then(|| KExpr::Add(Box::new(KExpr::var(&it)), Box::new(KExpr::var(o))))
                    }))
                });
                KNode::For {
                    cond: KExpr::Cmp(
                        KCmp::Le,
                        Box::new(KExpr::var(&iter)),
                        Box::new(KExpr::Int(m - 1)),
                    ),
                    iter,
                    init,
                    step,
                    body: Box::new(body),
                    kind,
                }
            }
            other => other.map_locals(|locals, _| shift_locals(locals, o, shifts)),
        }
    }
    go(partial.clone(), edge, k, m, o, shifts)
}

fn shift_locals(locals: Vec<LocalRef>, o: &str, shifts: &[(usize, Vec<i64>)]) -> Vec<LocalRef> {
    locals
        .into_iter()
        .map(|mut l| {
            if let Some((_, s)) = shifts.iter().find(|(p, _)| *p == l.promo) {
                for (d, off) in l.offset.iter_mut().enumerate() {
                    let c = s.get(d).copied().unwrap_or(0);
                    if c != 0 {
                        *off = crate::codegen::affine::simplify(&KExpr::Add(
                            Box::new(off.clone()),
                            Box::new(KExpr::Mul(Box::new(KExpr::Int(c)), Box::new(KExpr::var(o)))),
                        ));
                    }
                }
            }
            l
        })
        .collect()
}

/// A packed tile pays for its copy from this many accesses per element on
/// (`promote.rs`, `PackPolicy::Auto`): the static kernels of dense `(T, 2304, 768)` pack
/// `W` from `T = 4` on.
pub const PACK_MIN_REUSE: i64 = 4;

/// The small-size version of a dynamic-shape kernel: a tensor with no dimension along the
/// dynamic size (dense's `W(k, n)`) is used once per value of the size by each of its
/// elements, so below [`PACK_MIN_REUSE`] its packed tile costs more to copy than it
/// saves (the static kernels at those sizes do not pack it). When the size can be that
/// small, the kernel becomes `if (T < 4) { the body reading those tensors in place }
/// else { the body }`. `independent[t]` says whether tensor `t`'s shape does not mention
/// the size. Returns the body and, if versioned, a line for `polyc explain`.
pub fn small_size_version(
    body: KNode,
    size: &DynamicSize,
    independent: &[bool],
) -> (KNode, Option<String>) {
    if size.lo() >= PACK_MIN_REUSE {
        return (body, None);
    }
    // Packed (blocked) read-only tiles of tensors without the size.
    let mut packed: Vec<(usize, usize)> = Vec::new();
    let mut written: Vec<usize> = Vec::new();
    body.walk(&mut |n| match n {
        KNode::Local { bufs, .. } => {
            for b in bufs {
                if b.block.is_some()
                    && b.space == crate::codegen::kir::MemSpace::Private
                    && independent.get(b.tensor).copied().unwrap_or(false)
                    && !packed.contains(&(b.promo, b.tensor))
                {
                    packed.push((b.promo, b.tensor));
                }
            }
        }
        KNode::Copy {
            promo,
            copy_in: false,
            ..
        } => written.push(*promo),
        _ => {}
    });
    packed.retain(|(p, _)| !written.contains(p));
    if packed.is_empty() {
        return (body, None);
    }
    let promos: Vec<usize> = packed.iter().map(|p| p.0).collect();
    let small = prune_empty(unpromote(body.clone(), &promos));
    let cond = KExpr::Cmp(
        KCmp::Lt,
        Box::new(KExpr::var(&size.name)),
        Box::new(KExpr::Int(PACK_MIN_REUSE)),
    );
    let node = KNode::If {
        cond,
        then: Box::new(small),
        els: Some(Box::new(body)),
    };
    (node, Some(format!(
        "small sizes: {} < {PACK_MIN_REUSE} runs a version of the kernel that reads {} tensor(s) in place instead of packing them (each element is used {} times there, fewer than the {PACK_MIN_REUSE} a packed tile needs)\n",
        size.name,
        packed.len(),
        size.name
    )))
}

/// `n` without the promotions `promos`: their buffers, their copies, and their tiles in
/// the statements' scopes (the statements then read the tensors in place).
fn unpromote(n: KNode, promos: &[usize]) -> KNode {
    let n = n.map_children(&mut |c| unpromote(c, promos));
    match n {
        KNode::Local { bufs, body } => {
            let bufs: Vec<LocalBuf> = bufs
                .into_iter()
                .filter(|b| !promos.contains(&b.promo))
                .collect();
            if bufs.is_empty() {
                *body
            } else {
                KNode::Local { bufs, body }
            }
        }
        KNode::Copy { promo, .. } if promos.contains(&promo) => KNode::Block(Vec::new()),
        other => other.map_locals(|locals, _| {
            locals
                .into_iter()
                .filter(|l| !promos.contains(&l.promo))
                .collect()
        }),
    }
}

/// `n` without loops, guards and scopes that do nothing.
fn prune_empty(n: KNode) -> KNode {
    let n = n.map_children(&mut prune_empty);
    let empty = |x: &KNode| x.is_empty();
    match n {
        KNode::For { ref body, .. } if empty(body) => KNode::Block(Vec::new()),
        KNode::If {
            ref then, ref els, ..
        } if empty(then) && els.as_deref().is_none_or(empty) => KNode::Block(Vec::new()),
        KNode::Block(v) => KNode::Block(v.into_iter().filter(|c| !c.is_empty()).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CPU target's model of a core with 64-byte vectors, 32 registers and 4-byte
    /// elements.
    fn core_model() -> MicroKernelModel {
        MicroKernelModel {
            unit: ModelUnit::VectorCore,
            vector_elems: 16,
            registers: 32,
            fma_latency: 4,
            fma_ports: 2,
            load_ports: 2,
        }
    }

    fn range(lo: i64, hi: i64) -> DynamicSize {
        DynamicSize {
            name: "T".into(),
            values: SizeValues::Range(lo, hi),
        }
    }

    #[test]
    fn avx512_f32_register_tiles() {
        let m = core_model();
        // 8 × 32: 16 accumulators, 8 cycles, full efficiency; 1 × 32: latency-bound.
        assert_eq!(m.cycles(8, 32), 8);
        assert_eq!(m.cycles(4, 32), 4);
        assert_eq!(m.cycles(1, 32), 4);
        assert!((m.efficiency(1, 32) - 0.25).abs() < 1e-9);
        assert!(m.fits(8, 32));
        assert!(!m.fits(16, 32));
    }

    #[test]
    fn composition_is_exact_and_greedy() {
        assert_eq!(compose(43, &[8, 4, 2, 1]), vec![(8, 5), (2, 1), (1, 1)]);
        assert_eq!(
            composition_text(43, &compose(43, &[8, 4, 2, 1])),
            "43 = 5×8 + 2 + 1"
        );
        for t in 1..200 {
            let s: i64 = compose(t, &[8, 6, 3, 1]).iter().map(|(m, n)| m * n).sum();
            assert_eq!(s, t);
        }
    }

    #[test]
    fn sets_follow_the_sizes() {
        let m = core_model();
        // Over 1..128 every remainder 1..7 occurs equally often.
        let all = choose_set(&range(1, 128), 8, 32, m, true);
        assert_eq!(all[0], 8);
        assert_eq!(*all.last().unwrap(), 1);
        assert!(all.len() <= MAX_MICRO_KERNELS);
        // Only remainders 5 and 1: one 5-row kernel covers 5 in one latency-bound step.
        let set = DynamicSize {
            name: "T".into(),
            values: SizeValues::Set(vec![1, 5, 24]),
        };
        assert_eq!(choose_set(&set, 8, 32, m, true), vec![8, 5, 1]);
    }
}
