//! Block-shape micro-kernels for dynamic sizes on the GPU (`--dynamic` with a GPU
//! target), in FTuner's manner.
//!
//! A kernel whose blocks run along a dynamic size `T` (one grid dimension whose block
//! count is `⌈T / R⌉` for a block tile of `R` rows) has, at most sizes, one *partial*
//! block: the last one, with `T mod R` rows. With one block shape, that block launches as
//! many threads as a full one, and the threads whose rows lie past `T` idle. Here polyc
//! compiles the kernel once per *block shape*: the same body with fewer threads along the
//! thread dimension that covers `T` inside a block (`16 × 8`, `16 × 4`, … instead of
//! `16 × 16`), each a kernel function of its own (its launch bounds, or OpenCL's
//! required work-group size, follow the shape; its register tiles are kept in registers
//! across the reduction only where every thread then owns one tile). The host covers `T`
//! at run time with launches of the chosen shapes: the full blocks in one launch of the
//! full shape, then the partial block in one launch of the smallest shape whose threads
//! cover its rows, one pass each. Every kernel takes the range of block indices it runs
//! along that dimension (`polyc_blo ≤ block < polyc_bhi`), so that the two launches
//! split the blocks between them.
//!
//! # The model (FTuner's alignment, padding and occupancy criteria)
//!
//! - **Alignment.** A shape has `s` threads along the dimension, a divisor of the full
//!   block's `F` (its pieces start at aligned rows), and a whole number of warps.
//! - **Padding.** A launch's idle threads are those whose rows all lie past `T`; the
//!   partial block's shape is the smallest that covers its rows in one pass.
//! - **Occupancy.** A wave is what the GPU runs at once: the SMs times the blocks one SM
//!   holds, limited by its threads (2048), its registers (65536, at the registers the
//!   description gives a thread), its shared memory (the description's) and 32 blocks.
//!   Two launches on one stream run one after the other, so the split is taken only when
//!   its waves (full blocks, then the partial one) are no more than those of one launch
//!   of full blocks; otherwise one launch of full blocks runs (as without shapes).
//!
//! The set is chosen by scoring every set of at most [`MAX_BLOCK_SHAPES`] candidate
//! shapes that holds the full one over every value of the size: the fewest total waves
//! win, then the fewest idle threads, then the smaller set.

use std::fmt::Write;

use miette::Result;

use crate::codegen::kir::{KCmp, KExpr, KNode, LoopKind};
use crate::codegen::microkernel::DynamicSize;
use crate::gpu::module::{has_private_tile, walk_loops, DeviceKernel, TripExpr};
pub use crate::gpu::module::{
    BlockModel, BlockShapes, ShapeLaunch, BLOCKS_PER_SM, BLOCK_HI, BLOCK_LO, MAX_BLOCK_SHAPES,
    REGISTERS_PER_SM, THREADS_PER_SM,
};

fn ceil_div(a: i64, b: i64) -> i64 {
    (a + b - 1) / b.max(1)
}

impl BlockShapes {
    /// The block of shape `i`.
    pub fn block_of(&self, i: usize) -> [i64; 3] {
        let mut b = self.block;
        b[self.thread_dim as usize] = self.shapes[i];
        b
    }
    /// Threads of a block of shape `i`.
    pub fn threads(&self, i: usize) -> i64 {
        self.block_of(i).iter().product()
    }
    /// The smallest shape whose threads cover `rem` rows in one pass.
    pub fn pick(&self, rem: i64) -> usize {
        let mut best = 0;
        for (i, &s) in self.shapes.iter().enumerate() {
            if s * self.rows_per_thread >= rem {
                best = i;
            }
        }
        best
    }
    /// The launches that cover size `t` with `nb` blocks along the dimension and `g`
    /// blocks in the other grid dimensions (see the module documentation).
    pub fn plan(&self, t: i64, nb: i64, g: i64) -> Vec<ShapeLaunch> {
        let nf = (t / self.rows).min(nb).max(0);
        let rem = t - self.rows * nf;
        let single = vec![ShapeLaunch {
            shape: 0,
            first: 0,
            count: nb,
        }];
        if rem <= 0 || nb != nf + 1 {
            return single;
        }
        let i = self.pick(rem);
        let full_waves = |n: i64| {
            if n > 0 {
                ceil_div(n * g, self.per_wave[0])
            } else {
                0
            }
        };
        let split = full_waves(nf) + ceil_div(g, self.per_wave[i]);
        if i == 0 || split > full_waves(nb) {
            return single;
        }
        let mut v = Vec::new();
        if nf > 0 {
            v.push(ShapeLaunch {
                shape: 0,
                first: 0,
                count: nf,
            });
        }
        v.push(ShapeLaunch {
            shape: i,
            first: nf,
            count: 1,
        });
        v
    }
    /// Modelled waves, idle threads and launched threads of a plan, at size `t` with `g`
    /// blocks in the other grid dimensions.
    pub fn cost(&self, t: i64, plan: &[ShapeLaunch], g: i64) -> (i64, i64, i64) {
        let mut waves = 0;
        let mut launched = 0;
        let mut busy = 0;
        let other = self.threads(0) / self.shapes[0];
        for l in plan {
            waves += ceil_div(l.count * g, self.per_wave[l.shape]);
            launched += l.count * g * self.threads(l.shape);
            for b in l.first..l.first + l.count {
                let rows = (t - b * self.rows).clamp(0, self.rows);
                let thread_rows = ceil_div(rows, self.rows_per_thread).min(self.shapes[l.shape]);
                busy += g * thread_rows * other;
            }
        }
        (waves, launched - busy, launched)
    }
    /// The `polyc explain` text: the shapes and how sample sizes are covered, with `g`
    /// blocks in the other grid dimensions (`None` when they depend on unbound sizes:
    /// then 1).
    pub fn explain(&self, kernel: &str, samples: &[i64], g: Option<i64>) -> String {
        let gv = g.unwrap_or(1);
        let dims = ["x", "y", "z"];
        let mut s = format!(
            "  block shapes of kernel `{kernel}` along {} = {} (block tile of {} rows: {} threads along {} × {} rows each; model: {}):\n",
            self.size.name,
            self.size.values_text(),
            self.rows,
            self.shapes[0],
            dims[self.thread_dim as usize],
            self.rows_per_thread,
            self.model.describe()
        );
        s.push_str("    threads      rows  warps  blocks/wave  kernel\n");
        for (i, _) in self.shapes.iter().enumerate() {
            let b = self.block_of(i);
            let name = if i == 0 {
                kernel.to_string()
            } else {
                self.variants[i - 1].name.clone()
            };
            let _ = writeln!(
                s,
                "    {:<11}  {:>4}  {:>5}  {:>11}  {name}",
                format!("{} x {} x {}", b[0], b[1], b[2]),
                self.shapes[i] * self.rows_per_thread,
                ceil_div(self.threads(i), self.model.warp),
                self.per_wave[i]
            );
        }
        let _ = writeln!(
            s,
            "    composition at sample sizes ({} block(s) in the other grid dimensions{}; blocks × rows of each launch, idle threads / launched, waves; then one launch of full blocks):",
            gv,
            if g.is_none() { ", taken as 1: they depend on unbound sizes" } else { "" }
        );
        for &t in samples {
            let nb = ceil_div(t, self.rows);
            let plan = self.plan(t, nb, gv);
            let single = [ShapeLaunch {
                shape: 0,
                first: 0,
                count: nb,
            }];
            let (w, idle, all) = self.cost(t, &plan, gv);
            let (w1, idle1, all1) = self.cost(t, &single, gv);
            let parts: Vec<String> = plan
                .iter()
                .map(|l| {
                    format!(
                        "{}×{} ({} x {})",
                        l.count,
                        self.shapes[l.shape] * self.rows_per_thread,
                        self.block_of(l.shape)[0],
                        self.block_of(l.shape)[1]
                    )
                })
                .collect();
            let pct = |a: i64, b: i64| 100.0 * a as f64 / b.max(1) as f64;
            let _ = writeln!(
                s,
                "    {}={}: {}  idle {} / {} ({:.1}%), {} wave(s); full blocks: idle {} / {} ({:.1}%), {} wave(s)",
                self.size.name,
                t,
                parts.join(" + "),
                idle,
                all,
                pct(idle, all),
                w,
                idle1,
                all1,
                pct(idle1, all1),
                w1
            );
        }
        s
    }
}

/// What [`choose`] needs to know of a kernel.
pub struct ShapeInput<'a> {
    /// The dynamic size.
    pub size: &'a DynamicSize,
    /// Rows per block along it.
    pub rows: i64,
    /// Rows per thread.
    pub rows_per_thread: i64,
    /// The full block.
    pub block: [i64; 3],
    /// The thread dimension along the size.
    pub thread_dim: u8,
    /// Shared memory of one block, in bytes.
    pub shared: i64,
    /// Blocks in the other grid dimensions, when known at compile time.
    pub other_blocks: Option<i64>,
}

/// Chooses the shapes (threads along the thread dimension, largest first) and their
/// blocks per wave (see the module documentation).
pub fn choose(input: &ShapeInput, model: BlockModel) -> (Vec<i64>, Vec<i64>) {
    let full = input.block[input.thread_dim as usize];
    let other: i64 = input.block.iter().product::<i64>() / full.max(1);
    let per_wave = |s: i64| model.sms.max(1) * model.resident(s * other, input.shared);
    let candidates: Vec<i64> = (1..full)
        .rev()
        .filter(|&s| full % s == 0 && (s * other) % model.warp.max(1) == 0)
        .collect();
    let g = input.other_blocks.unwrap_or(1).max(1);
    let values = input.size.all();
    let score = |shapes: &[i64]| -> (i64, i64) {
        let set = BlockShapes {
            size: input.size.clone(),
            grid_dim: 0,
            thread_dim: input.thread_dim,
            rows: input.rows,
            rows_per_thread: input.rows_per_thread,
            block: input.block,
            shapes: shapes.to_vec(),
            per_wave: shapes.iter().map(|&s| per_wave(s)).collect(),
            variants: Vec::new(),
            model,
        };
        let mut total = (0, 0);
        for &t in &values {
            let nb = ceil_div(t, input.rows);
            let (w, idle, _) = set.cost(t, &set.plan(t, nb, g), g);
            total.0 += w;
            total.1 += idle;
        }
        total
    };
    let mut best: Option<((i64, i64, usize), Vec<i64>)> = None;
    let n = candidates.len();
    for mask in 0u32..(1u32 << n.min(16)) {
        if mask.count_ones() as usize + 1 > MAX_BLOCK_SHAPES {
            continue;
        }
        let mut set = vec![full];
        set.extend(
            candidates
                .iter()
                .enumerate()
                .filter(|(i, _)| mask & (1 << i) != 0)
                .map(|(_, &s)| s),
        );
        let (w, idle) = score(&set);
        let key = (w, idle, set.len());
        if best.as_ref().is_none_or(|(k, _)| key < *k) {
            best = Some((key, set));
        }
    }
    let shapes = best.map(|b| b.1).unwrap_or_else(|| vec![full]);
    let waves = shapes.iter().map(|&s| per_wave(s)).collect();
    (shapes, waves)
}

/// Gives `base` block shapes along one of the `dynamic` sizes when it qualifies (one
/// grid dimension runs `⌈T / R⌉` blocks along it, and a thread dimension with register
/// tiles covers its `R` rows inside a block) and more than one shape is worth it;
/// `variant(block)` prepares the kernel's body again for a smaller block. Otherwise
/// `base` comes back unchanged.
pub fn attach(
    base: DeviceKernel,
    dynamic: &[DynamicSize],
    model: BlockModel,
    variant: &dyn Fn([i64; 3]) -> Result<DeviceKernel>,
) -> Result<DeviceKernel> {
    let Some((size, grid_dim, thread_dim, rows)) = analyse(&base, dynamic) else {
        return Ok(base);
    };
    let full = base.block[thread_dim as usize];
    let other_blocks = (0..3)
        .filter(|&d| d != grid_dim as usize)
        .try_fold(1i64, |acc, d| {
            let dim = &base.grid[d];
            if dim.fallback {
                return None;
            }
            let mut n = 1;
            for t in &dim.trips {
                n = n.max(t.eval(&|_| None)?);
            }
            Some(acc * n)
        });
    let shared: i64 = base
        .shared
        .iter()
        .map(|b| b.sizes.iter().product::<i64>() * 4)
        .sum();
    let input = ShapeInput {
        size: &size,
        rows,
        rows_per_thread: rows / full,
        block: base.block,
        thread_dim,
        shared,
        other_blocks,
    };
    let (shapes, per_wave) = choose(&input, model);
    if shapes.len() < 2 {
        return Ok(base);
    }
    let mut variants = Vec::new();
    for &s in &shapes[1..] {
        let mut b = base.block;
        b[thread_dim as usize] = s;
        let mut v = variant(b)?;
        v.name = format!("{}_b{s}", base.name);
        v.body = restrict_blocks(v.body, grid_dim);
        v.range_dim = Some(grid_dim);
        variants.push(v);
    }
    let mut k = base;
    k.body = restrict_blocks(k.body, grid_dim);
    k.range_dim = Some(grid_dim);
    k.shapes = Some(Box::new(BlockShapes {
        size,
        grid_dim,
        thread_dim,
        rows,
        rows_per_thread: rows / full,
        block: k.block,
        shapes,
        per_wave,
        variants,
        model,
    }));
    Ok(k)
}

/// The dynamic size, grid dimension, thread dimension and rows per block of a kernel
/// that qualifies for block shapes.
fn analyse(k: &DeviceKernel, dynamic: &[DynamicSize]) -> Option<(DynamicSize, u8, u8, i64)> {
    let mentions = |t: &TripExpr, name: &str| t.init.mentions(name) || t.upper.mentions(name);
    for size in dynamic {
        let dims: Vec<usize> = (0..3)
            .filter(|&d| k.grid[d].trips.iter().any(|t| mentions(t, &size.name)))
            .collect();
        let [d] = dims.as_slice() else {
            continue;
        };
        let dim = &k.grid[*d];
        if dim.fallback || dim.trips.iter().any(|t| *t != dim.trips[0]) {
            continue;
        }
        let trip = &dim.trips[0];
        let nb = |t: i64| trip.eval(&|v| (v == size.name).then_some(t));
        // The block tile: the first size at which one more row takes one more block.
        let rows =
            (1..=4096).find(|&t| matches!((nb(t), nb(t + 1)), (Some(a), Some(b)) if b == a + 1))?;
        if !size
            .all()
            .iter()
            .all(|&t| nb(t) == Some((t + rows - 1) / rows))
        {
            continue;
        }
        // The thread dimension whose register-tiled loops run along the size.
        let mut threads: Vec<u8> = Vec::new();
        walk_loops(&k.body, &mut |kind, _, cond, _, body| {
            if let LoopKind::Thread(t) = kind {
                if cond.mentions(&size.name) && has_private_tile(body) && !threads.contains(&t) {
                    threads.push(t);
                }
            }
        });
        let [t] = threads.as_slice() else {
            continue;
        };
        let full = k.block[*t as usize];
        if full < 2 || rows % full != 0 {
            continue;
        }
        return Some((size.clone(), *d as u8, *t, rows));
    }
    None
}

/// Restricts every `Block(d)` loop to the blocks `BLOCK_LO ≤ b < BLOCK_HI`.
fn restrict_blocks(n: KNode, d: u8) -> KNode {
    let n = n.map_children(&mut |c| restrict_blocks(c, d));
    match n {
        KNode::For {
            iter,
            init,
            cond,
            step,
            body,
            kind: LoopKind::Block(x),
        } if x == d => {
            let scaled = |v: &str| {
                KExpr::Add(
                    Box::new(init.clone()),
                    Box::new(KExpr::Mul(
                        Box::new(KExpr::Int(step)),
                        Box::new(KExpr::var(v)),
                    )),
                )
            };
            let below_hi = KExpr::Cmp(
                KCmp::Lt,
                Box::new(KExpr::var(&iter)),
                Box::new(scaled(BLOCK_HI)),
            );
            KNode::For {
                init: scaled(BLOCK_LO),
                cond: KExpr::And(Box::new(cond), Box::new(below_hi)),
                iter,
                step,
                body,
                kind: LoopKind::Block(x),
            }
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::microkernel::SizeValues;

    fn a100() -> BlockModel {
        BlockModel {
            sms: 108,
            warp: 32,
            registers_per_thread: 128,
            shared_bytes: 166912,
        }
    }

    fn input(size: &DynamicSize) -> ShapeInput<'_> {
        ShapeInput {
            size,
            rows: 64,
            rows_per_thread: 4,
            block: [16, 16, 1],
            thread_dim: 1,
            shared: 8192,
            other_blocks: Some(4),
        }
    }

    #[test]
    fn warp_aligned_divisors_cover_small_remainders() {
        let size = DynamicSize {
            name: "T".into(),
            values: SizeValues::Range(1, 128),
        };
        let (shapes, waves) = choose(&input(&size), a100());
        // 16 x 1 is half a warp: not a candidate.
        assert_eq!(shapes, vec![16, 8, 4, 2]);
        // 256 threads at 128 registers: 2 blocks per SM; 32 threads: 16.
        assert_eq!(waves, vec![216, 432, 864, 1728]);
    }

    #[test]
    fn sizes_without_partial_blocks_need_one_shape() {
        let size = DynamicSize {
            name: "T".into(),
            values: SizeValues::Set(vec![64, 128]),
        };
        assert_eq!(choose(&input(&size), a100()).0, vec![16]);
    }

    #[test]
    fn plans_split_only_when_no_wave_is_added() {
        let size = DynamicSize {
            name: "T".into(),
            values: SizeValues::Range(1, 128),
        };
        let (shapes, per_wave) = choose(&input(&size), a100());
        let set = BlockShapes {
            size: size.clone(),
            grid_dim: 1,
            thread_dim: 1,
            rows: 64,
            rows_per_thread: 4,
            block: [16, 16, 1],
            shapes,
            per_wave,
            variants: Vec::new(),
            model: a100(),
        };
        // T = 5: one block of 16 x 2 threads, none idle.
        let p = set.plan(5, 1, 4);
        assert_eq!(
            p,
            vec![ShapeLaunch {
                shape: 3,
                first: 0,
                count: 1
            }]
        );
        assert_eq!(set.cost(5, &p, 4), (1, 0, 128));
        // T = 81 with 300 blocks in the other dimensions: one launch of full blocks is 3
        // waves; 1 full block, then 17 rows on 16 x 8 threads (5 of 8 thread rows busy)
        // is 2 + 1: taken. With 100 (or 4), one launch is 1 wave: kept.
        let p = set.plan(81, 2, 300);
        assert_eq!(p.len(), 2);
        assert_eq!(set.shapes[p[1].shape], 8);
        assert_eq!(
            set.cost(81, &p, 300),
            (3, 300 * 3 * 16, 300 * 256 + 300 * 128)
        );
        assert_eq!(set.plan(81, 2, 4).len(), 1);
        assert_eq!(set.plan(81, 2, 100).len(), 1);
    }
}
