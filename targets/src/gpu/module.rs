//! The data of a program for a GPU ([`GpuModule`]): its device kernels with their block and
//! grid sizes, the block shapes a kernel runs with along a dynamic size ([`BlockShapes`])
//! and the figures that rank them ([`BlockModel`]). [`super::device`] builds it from the
//! lowered kernel IR, and [`super::blockshape`] chooses the shapes.

use crate::codegen::kir::{KExpr, KNode, LocalBuf, LoopKind, MemSpace};
use crate::codegen::microkernel::DynamicSize;

/// The kernel argument holding the first block index a launch runs along the dynamic
/// dimension.
pub const BLOCK_LO: &str = "polyc_blo";
/// The kernel argument holding the block index past the last one a launch runs.
pub const BLOCK_HI: &str = "polyc_bhi";

/// Threads one SM holds at most (A100 and H100).
pub const THREADS_PER_SM: i64 = 2048;
/// 32-bit registers per SM (A100 and H100).
pub const REGISTERS_PER_SM: i64 = 65536;
/// Blocks one SM holds at most (A100 and H100).
pub const BLOCKS_PER_SM: i64 = 32;
/// At most this many block shapes per kernel (the full one included): each is a kernel
/// function of its own.
pub const MAX_BLOCK_SHAPES: usize = 4;

/// The figures of the target that rank block shapes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockModel {
    /// Streaming multiprocessors.
    pub sms: i64,
    /// Threads per warp.
    pub warp: i64,
    /// Registers a thread is given (the description's register buffer).
    pub registers_per_thread: i64,
    /// Shared memory one SM gives its blocks, in bytes (the description's).
    pub shared_bytes: i64,
}

impl BlockModel {
    /// Blocks of `threads` threads using `shared` bytes of shared memory that one SM
    /// holds at once (at least 1).
    pub fn resident(&self, threads: i64, shared: i64) -> i64 {
        let threads = threads.max(1);
        let mut r = (THREADS_PER_SM / threads)
            .min(REGISTERS_PER_SM / (threads * self.registers_per_thread.max(1)))
            .min(BLOCKS_PER_SM);
        if shared > 0 {
            r = r.min(self.shared_bytes / shared);
        }
        r.max(1)
    }
    /// The model's figures, as `polyc explain` prints them.
    pub fn describe(&self) -> String {
        format!(
            "{} SMs, warps of {}, {} registers per thread, {THREADS_PER_SM} threads, {REGISTERS_PER_SM} registers and {} bytes of shared memory per SM",
            self.sms, self.warp, self.registers_per_thread, self.shared_bytes
        )
    }
}

/// One candidate for a grid dimension: a `Block` loop's bounds, evaluated on the host.
#[derive(Clone, Debug, PartialEq)]
pub struct TripExpr {
    /// The loop's first value.
    pub init: KExpr,
    /// Its last value (inclusive).
    pub upper: KExpr,
    /// Its step.
    pub step: i64,
}

impl TripExpr {
    /// The trip count for the given host values (0 when the loop runs no iteration).
    pub fn eval(&self, env: &impl Fn(&str) -> Option<i64>) -> Option<i64> {
        let a = self.init.eval(env)?;
        let b = self.upper.eval(env)?;
        Some(if b < a { 0 } else { (b - a) / self.step + 1 })
    }
}

/// How many blocks run along one grid dimension.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct GridDim {
    /// The trip counts of the dimension's `Block` loops: the grid takes the largest.
    pub trips: Vec<TripExpr>,
    /// Some `Block` loop's bounds depend on values only the device knows (another block
    /// loop's iterator): the grid then has at least [`FALLBACK_BLOCKS`] blocks, and the
    /// grid-stride loop covers the rest.
    pub fallback: bool,
}

/// Blocks per grid dimension when a block loop's trip count is not known on the host.
pub const FALLBACK_BLOCKS: i64 = 64;

/// Threads per block dimension when a thread loop's trip count has no constant bound.
pub const DEFAULT_THREADS: [i64; 3] = [32, 4, 1];

/// A device kernel ready to print and launch.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceKernel {
    /// Launch order.
    pub id: usize,
    /// The kernel's function name.
    pub name: String,
    /// The body (barriers and guards inserted; shared buffers hoisted out of it).
    pub body: KNode,
    /// Threads per block, x, y, z.
    pub block: [i64; 3],
    /// The threads per block its thread loops ask for, x, y, z: [`DeviceKernel::block`]
    /// unless that was more than the target allows, and the block was fitted to the limit
    /// (its thread loops are block-stride loops, correct for any block). The GPU target
    /// refuses a kernel that asks for too many threads where the user's tile spec tiles its
    /// statements ([`TooManyThreads`]); the default policy's kernels are fitted.
    pub asked: [i64; 3],
    /// Blocks per grid dimension, x, y, z.
    pub grid: [GridDim; 3],
    /// Host loop iterators and constants the body reads, passed as `int64_t` arguments.
    pub host_args: Vec<String>,
    /// Shared-memory buffers, declared once at the top of the kernel.
    pub shared: Vec<LocalBuf>,
    /// Program statements the kernel runs (indices), in order of first occurrence.
    pub stmts: Vec<usize>,
    /// The grid dimension whose blocks the kernel runs only from `polyc_blo` to
    /// `polyc_bhi − 1` (two more `int64_t` arguments), when it has block shapes.
    pub range_dim: Option<u8>,
    /// The block shapes along a dynamic size and their kernels
    /// ([`crate::gpu::blockshape`]), on the full-shape kernel.
    pub shapes: Option<Box<BlockShapes>>,
    /// The pipeline stages the tile spec asks for (`64@shared:3`): the most that its
    /// statements' entries give; `None`: the emitter picks them.
    pub stages: Option<i64>,
}

/// A program for a GPU: host control flow with [`KNode::Device`] launches, and the
/// kernels they launch.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuModule {
    /// Host code: loops, guards and constants around `Device { id }` nodes (whose bodies
    /// are the kernels' bodies before [`prepare`]; printers launch `kernels[id]`).
    pub host: KNode,
    /// The kernels, by id.
    pub kernels: Vec<DeviceKernel>,
}

impl GpuModule {
    /// Every kernel function: each kernel, followed by its block-shape variants.
    pub fn all_kernels(&self) -> Vec<&DeviceKernel> {
        let mut v = Vec::new();
        for k in &self.kernels {
            v.push(k);
            if let Some(sh) = &k.shapes {
                v.extend(sh.variants.iter());
            }
        }
        v
    }
}

/// One launch of a composition: the shape (index into [`BlockShapes::shapes`]) and the
/// blocks it runs along the dynamic dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShapeLaunch {
    /// Index into [`BlockShapes::shapes`] (0: the full shape).
    pub shape: usize,
    /// The first block index.
    pub first: i64,
    /// How many blocks.
    pub count: i64,
}

/// The block shapes chosen for one kernel, and their kernels.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockShapes {
    /// The dynamic size the blocks run along.
    pub size: DynamicSize,
    /// The grid dimension whose blocks run along it.
    pub grid_dim: u8,
    /// The thread dimension that covers it inside a block.
    pub thread_dim: u8,
    /// Rows of the size per block (the block tile).
    pub rows: i64,
    /// Rows of the size per thread (its register tile).
    pub rows_per_thread: i64,
    /// The full block, threads along x, y, z.
    pub block: [i64; 3],
    /// Threads along [`BlockShapes::thread_dim`] per shape, largest (the full one) first.
    pub shapes: Vec<i64>,
    /// Blocks per wave of each shape (SMs × resident blocks).
    pub per_wave: Vec<i64>,
    /// The kernels of `shapes[1..]`, in order.
    pub variants: Vec<DeviceKernel>,
    /// The model.
    pub model: BlockModel,
}

/// Calls `f(kind, init, cond, step, body)` on every loop.
pub fn walk_loops(n: &KNode, f: &mut impl FnMut(LoopKind, &KExpr, &KExpr, i64, &KNode)) {
    n.walk(&mut |x| {
        if let KNode::For {
            kind,
            init,
            cond,
            step,
            body,
            ..
        } = x
        {
            f(*kind, init, cond, *step, body);
        }
    });
}

/// Whether `n` holds a private (register) buffer.
pub fn has_private_tile(n: &KNode) -> bool {
    let mut found = false;
    n.walk(&mut |x| {
        if let KNode::Local { bufs, .. } = x {
            found |= bufs.iter().any(|b| b.space == MemSpace::Private);
        }
    });
    found
}
