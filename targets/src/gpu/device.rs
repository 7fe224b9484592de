//! From a lowered GPU kernel IR to launchable device kernels: the host/device split, the
//! block and grid sizes, barriers and single-thread guards.
//!
//! The lowering leaves one [`KNode::Device`] per `kernel` mark, with `Block` and `Thread`
//! loops inside (grid-stride and block-stride loops, correct for any grid and block
//! size). [`prepare`] then, per device node, in launch order:
//!
//! - numbers it and names it after its statements (`<def>_k0_S_0_S_1`);
//! - finds the host values its body reads (loop iterators of host loops around it) that
//!   become kernel arguments;
//! - sizes the block: per thread dimension, the largest trip count of its `Thread` loops
//!   that hold register tiles (else of those that contain statements, else of any), from the
//!   difference of the loop's bounds (`64·c0 + 63 − 64·c0` + 1 = 64), then halved along
//!   its largest dimension until the block has at most `max_threads_per_block` threads
//!   (recorded in [`DeviceKernel::asked`]: the GPU target refuses such a kernel where the
//!   user's tile spec asked for it);
//! - sizes the grid: per block dimension, the host-computable trip counts of its `Block`
//!   loops (the host evaluates them before the launch);
//! - hoists shared-memory buffers to the top of the kernel (OpenCL requires `__local`
//!   arrays at kernel scope);
//! - keeps a thread's register tile (a private buffer below its `Thread` loops) in
//!   registers across a sequential loop around those thread loops that the tile does not
//!   depend on (a GEMM's K steps): its copy-in moves before the loop and its copy-out
//!   after it, under copies of the thread loops, when every thread owns at most one tile
//!   ([`hoist_register_tiles`]);
//! - inserts barriers in the block-uniform part of the body (outside `Thread` loops, where
//!   every thread of the block runs the same control flow): between two consecutive parts
//!   where one writes what the other reads or writes, in shared memory or in global
//!   memory (another thread of the block may touch it), and at the end of a uniform loop
//!   body that writes such memory (the next iteration may overwrite what others still
//!   read);
//! - spreads one-dimensional thread nests over every thread of a block of several
//!   dimensions (a flattened thread index);
//! - guards every statement instance and copy that is not inside a loop of some used
//!   block or thread dimension with `idx == 0` for that dimension, so that it runs once
//!   per block (or once per grid), not once per thread.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use miette::{miette, Result};
use polyhedral::ir::Program;

use crate::codegen::kir::{KCmp, KExpr, KNode, Kernel, LocalBuf, LocalRef, LoopKind, MemSpace};
use crate::gpu::module::{has_private_tile, walk_loops, BlockModel};
pub use crate::gpu::module::{
    DeviceKernel, GpuModule, GridDim, TripExpr, DEFAULT_THREADS, FALLBACK_BLOCKS,
};

impl DeviceKernel {
    /// Threads per block.
    pub fn threads(&self) -> i64 {
        self.block.iter().product()
    }
    /// The refusal of a kernel whose thread loops ask for more than `max` threads per
    /// block, if they do.
    pub fn too_many_threads(&self, max: i64) -> Option<TooManyThreads> {
        (self.asked.iter().product::<i64>() > max.max(1)).then(|| TooManyThreads {
            kernel: self.id,
            block: self.asked,
            max,
            stmts: self.stmts.clone(),
        })
    }
    /// The grid for the given host values (sizes and host iterators).
    pub fn grid_for(&self, env: &impl Fn(&str) -> Option<i64>) -> Result<[i64; 3]> {
        let mut g = [1i64; 3];
        for (d, dim) in self.grid.iter().enumerate() {
            let mut n = if dim.fallback { FALLBACK_BLOCKS } else { 1 };
            for t in &dim.trips {
                let v = t.eval(env).ok_or_else(|| {
                    miette!(
                        "internal error: the grid of kernel `{}` needs a value the host does not have",
                        self.name
                    )
                })?;
                n = n.max(v);
            }
            g[d] = n.max(1);
        }
        Ok(g)
    }
}

/// The values of sizes and host loop iterators at a launch.
pub type HostEnv = HashMap<String, i64>;

/// Runs the host part of `module` with every size bound (`sizes[p]` for `Program::params`),
/// calling `f(kernel, env)` at every launch, in order.
pub fn each_launch(
    prog: &Program,
    module: &GpuModule,
    sizes: &[i64],
    f: &mut dyn FnMut(&DeviceKernel, &HostEnv) -> Result<()>,
) -> Result<()> {
    let mut env: HostEnv = prog
        .params
        .iter()
        .zip(sizes)
        .map(|(p, v)| (p.name.clone(), *v))
        .collect();
    host_walk(module, &module.host, &mut env, f)
}

fn host_walk(
    module: &GpuModule,
    n: &KNode,
    env: &mut HostEnv,
    f: &mut dyn FnMut(&DeviceKernel, &HostEnv) -> Result<()>,
) -> Result<()> {
    let eval = |e: &KExpr, env: &HostEnv| {
        e.eval(&|v| env.get(v).copied()).ok_or_else(|| {
            miette!("internal error: a host expression reads a value the host does not have")
        })
    };
    match n {
        KNode::Block(v) => {
            for c in v {
                host_walk(module, c, env, f)?;
            }
        }
        KNode::For {
            iter,
            init,
            cond,
            step,
            body,
            ..
        } => {
            let mut i = eval(init, env)?;
            loop {
                env.insert(iter.clone(), i);
                if eval(cond, env)? == 0 {
                    break;
                }
                host_walk(module, body, env, f)?;
                i += step;
            }
            env.remove(iter);
        }
        KNode::If { cond, then, els } => {
            if eval(cond, env)? != 0 {
                host_walk(module, then, env, f)?;
            } else if let Some(e) = els {
                host_walk(module, e, env, f)?;
            }
        }
        KNode::Let { name, value, body } => {
            let v = eval(value, env)?;
            env.insert(name.clone(), v);
            host_walk(module, body, env, f)?;
            env.remove(name);
        }
        KNode::Device { id, .. } => f(&module.kernels[*id], env)?,
        _ => {
            return Err(miette!(
                "internal error: a statement instance is outside every GPU kernel"
            ))
        }
    }
    Ok(())
}

/// Splits a lowered kernel into host code and device kernels (see the module docs).
pub fn prepare(prog: &Program, kernel: &Kernel, max_threads: i64) -> Result<GpuModule> {
    prepare_dynamic(prog, kernel, max_threads, None)
}

/// [`prepare`] for a kernel with dynamic sizes: kernels whose blocks run along one get
/// block shapes ([`crate::gpu::blockshape`]) chosen with `model`.
pub fn prepare_dynamic(
    prog: &Program,
    kernel: &Kernel,
    max_threads: i64,
    dynamic: Option<(&[crate::codegen::microkernel::DynamicSize], BlockModel)>,
) -> Result<GpuModule> {
    let mut kernels = Vec::new();
    let sizes: HashSet<String> = prog.params.iter().map(|p| p.name.clone()).collect();
    let cx = SplitCx {
        prog,
        sizes: &sizes,
        max_threads,
        dynamic,
    };
    let host = split(&cx, &kernel.body, &mut Vec::new(), &mut kernels)?;
    for k in &mut kernels {
        k.stages = kernel
            .pipeline_stages
            .iter()
            .filter(|(s, _)| k.stmts.contains(s))
            .map(|(_, n)| *n)
            .max();
        let stages = k.stages;
        if let Some(sh) = k.shapes.as_mut() {
            sh.variants.iter_mut().for_each(|v| v.stages = stages);
        }
    }
    Ok(GpuModule { host, kernels })
}

struct SplitCx<'a> {
    prog: &'a Program,
    sizes: &'a HashSet<String>,
    max_threads: i64,
    dynamic: Option<(&'a [crate::codegen::microkernel::DynamicSize], BlockModel)>,
}

fn split(
    cx: &SplitCx,
    n: &KNode,
    host_vars: &mut Vec<String>,
    out: &mut Vec<DeviceKernel>,
) -> Result<KNode> {
    Ok(match n {
        KNode::Device { body, .. } => {
            let id = out.len();
            let make = |force: Option<[i64; 3]>| {
                device_kernel(
                    cx.prog,
                    id,
                    body,
                    cx.sizes,
                    host_vars,
                    cx.max_threads,
                    force,
                )
            };
            let k = make(None)?;
            let k = match cx.dynamic {
                Some((dynamic, model)) => {
                    crate::gpu::blockshape::attach(k, dynamic, model, &|b| make(Some(b)))?
                }
                None => k,
            };
            out.push(k);
            KNode::Device {
                id,
                body: body.clone(),
            }
        }
        KNode::Block(v) => KNode::Block(
            v.iter()
                .map(|c| split(cx, c, host_vars, out))
                .collect::<Result<_>>()?,
        ),
        KNode::For {
            iter,
            init,
            cond,
            step,
            body,
            ..
        } => {
            host_vars.push(iter.clone());
            let b = split(cx, body, host_vars, out);
            host_vars.pop();
            KNode::For {
                iter: iter.clone(),
                init: init.clone(),
                cond: cond.clone(),
                step: *step,
                body: Box::new(b?),
                kind: LoopKind::Seq,
            }
        }
        KNode::If { cond, then, els } => KNode::If {
            cond: cond.clone(),
            then: Box::new(split(cx, then, host_vars, out)?),
            els: match els {
                Some(e) => Some(Box::new(split(cx, e, host_vars, out)?)),
                None => None,
            },
        },
        KNode::Let { name, value, body } => {
            host_vars.push(name.clone());
            let b = split(cx, body, host_vars, out);
            host_vars.pop();
            KNode::Let {
                name: name.clone(),
                value: value.clone(),
                body: Box::new(b?),
            }
        }
        KNode::Stmt { .. }
        | KNode::Copy { .. }
        | KNode::Local { .. }
        | KNode::Barrier
        | KNode::Intrinsic(_) => {
            return Err(miette!(
                help = "this is an internal error in polyc's GPU mapping; please report it with the program",
                "a statement instance is outside every GPU kernel"
            ))
        }
    })
}

/// A kernel whose thread loops ask for more threads per block than the target allows,
/// where the user's tile spec tiles its statements. The GPU target locates it in the tile
/// spec (see `GpuTarget::rewrite_kernel`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooManyThreads {
    /// The kernel's number.
    pub kernel: usize,
    /// Threads per block along x, y, z.
    pub block: [i64; 3],
    /// The target's limit.
    pub max: i64,
    /// The kernel's statements.
    pub stmts: Vec<usize>,
}

impl TooManyThreads {
    /// The remedy.
    pub const HELP: &'static str = "give the thread-mapped level smaller tiles, or add a register level so that each thread computes several points (e.g. `64@shared 4@register` gives 16 threads along that dimension)";
}

impl std::fmt::Display for TooManyThreads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [x, y, z] = self.block;
        write!(
            f,
            "kernel {} maps {x} x {y} x {z} = {} threads to a block, more than the {} threads per block the target allows",
            self.kernel,
            x * y * z,
            self.max
        )
    }
}

impl std::error::Error for TooManyThreads {}

impl miette::Diagnostic for TooManyThreads {
    fn help<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        Some(Box::new(Self::HELP))
    }
}

fn device_kernel(
    prog: &Program,
    id: usize,
    body: &KNode,
    sizes: &HashSet<String>,
    host_vars: &[String],
    max_threads: i64,
    force_block: Option<[i64; 3]>,
) -> Result<DeviceKernel> {
    // Host values the body reads.
    // (`map_exprs` visits every expression but takes a `Fn`: collect through a RefCell.)
    let used_cell = std::cell::RefCell::new(BTreeSet::new());
    body.clone().map_exprs(&|e: &KExpr| {
        e.for_each_var(&mut |v| {
            used_cell.borrow_mut().insert(v.to_string());
        });
        e.clone()
    });
    let used = used_cell.into_inner();
    let host_args: Vec<String> = host_vars
        .iter()
        .filter(|v| used.contains(*v))
        .cloned()
        .collect();
    let host_visible: HashSet<String> = sizes.iter().chain(host_vars).cloned().collect();

    let (asked, grid) = block_and_grid(body, &host_visible);
    let max_threads = if crate::gpu::reduce::reduce_types(body).is_empty() {
        max_threads
    } else {
        max_threads.min(crate::gpu::reduce::REDUCE_THREADS)
    };
    let mut block = fit_block(asked, max_threads);
    // A block shape of a dynamic size (fewer threads than the loops ask for).
    if let Some(b) = force_block {
        block = b;
    }

    // Shared buffers, hoisted.
    let mut shared = Vec::new();
    body.walk(&mut |n| {
        if let KNode::Local { bufs, .. } = n {
            for b in bufs {
                if b.space == MemSpace::Shared && !shared.contains(b) {
                    shared.push(b.clone());
                }
            }
        }
    });
    let spaces: HashMap<usize, MemSpace> = {
        let mut m = HashMap::new();
        body.walk(&mut |n| {
            if let KNode::Local { bufs, .. } = n {
                for b in bufs {
                    m.insert(b.promo, b.space);
                }
            }
        });
        m
    };

    let body = hoist_register_tiles(prog, body.clone(), &block);
    let body = if block[1] * block[2] > 1 {
        flatten_1d_nests(body)
    } else {
        body
    };
    let body = insert_barriers(prog, &body, &spaces);
    let used_block: Vec<u8> = (0..3u8)
        .filter(|d| !grid[*d as usize].trips.is_empty() || grid[*d as usize].fallback)
        .collect();
    let used_thread: Vec<u8> = (0..3u8).filter(|d| block[*d as usize] > 1).collect();
    let body = guard_leaves(body, &used_block, &used_thread, &mut Vec::new());

    let stmts = body.stmts();
    let mut name = format!("{}_k{id}", crate::codegen::cfamily::c_ident(&prog.name));
    for s in stmts.iter().take(4) {
        name.push('_');
        name.push_str(&prog.stmts[*s].name);
    }
    Ok(DeviceKernel {
        id,
        name,
        body,
        block,
        asked,
        grid,
        host_args,
        shared,
        stmts,
        range_dim: None,
        shapes: None,
        stages: None,
    })
}

/// The threads per block the thread loops of `body` ask for (per dimension: the largest
/// trip count of the register-tiled nests, else of the nests with statements, else of any),
/// and the grid its block loops span (bounds the host can evaluate: `host_visible`).
fn block_and_grid(body: &KNode, host_visible: &HashSet<String>) -> ([i64; 3], [GridDim; 3]) {
    let mut with_tiles = [None::<i64>; 3];
    let mut with_stmts = [None::<i64>; 3];
    let mut any = [None::<i64>; 3];
    let mut unknown = [false; 3];
    let mut grid: [GridDim; 3] = Default::default();
    walk_loops(body, &mut |kind, init, cond, step, loop_body| match kind {
        LoopKind::Thread(d) => {
            let d = d as usize;
            match trip_bound(init, cond, step) {
                Some(t) => {
                    any[d] = Some(any[d].map_or(t, |x: i64| x.max(t)));
                    if has_private_tile(loop_body) {
                        with_tiles[d] = Some(with_tiles[d].map_or(t, |x: i64| x.max(t)));
                    }
                    if has_stmt(loop_body) {
                        with_stmts[d] = Some(with_stmts[d].map_or(t, |x: i64| x.max(t)));
                    }
                }
                None => unknown[d] = true,
            }
        }
        LoopKind::Block(d) => {
            let d = d as usize;
            let upper = upper_bound(cond);
            match upper {
                Some(u) if only_vars(init, host_visible) && only_vars(&u, host_visible) => {
                    grid[d].trips.push(TripExpr {
                        init: init.clone(),
                        upper: u,
                        step,
                    })
                }
                _ => grid[d].fallback = true,
            }
        }
        _ => {}
    });
    let mut block = [1i64; 3];
    for d in 0..3 {
        // The register-tiled compute nest decides, then any nest with statements (a
        // fused producer's halo nest is larger than the block and strides over it).
        let main = if with_tiles.iter().any(Option::is_some) {
            with_tiles[d]
        } else {
            with_stmts[d].or(any[d])
        };
        block[d] = match (main, unknown[d]) {
            (Some(t), false) => t,
            (Some(t), true) => t.max(DEFAULT_THREADS[d]),
            (None, true) => DEFAULT_THREADS[d],
            (None, false) => 1,
        }
        .clamp(1, 1024);
    }
    (block, grid)
}

/// `block` halved along its largest dimension until it has at most `max_threads` threads
/// (thread loops are block-stride loops: any block is correct).
fn fit_block(mut block: [i64; 3], max_threads: i64) -> [i64; 3] {
    while block.iter().product::<i64>() > max_threads.max(1) {
        let (d, _) = block
            .iter()
            .enumerate()
            .max_by_key(|(d, v)| (**v, std::cmp::Reverse(*d)))
            .unwrap_or((0, &1));
        block[d] = (block[d] + 1) / 2;
    }
    block
}

fn only_vars(e: &KExpr, allowed: &HashSet<String>) -> bool {
    let mut ok = true;
    e.for_each_var(&mut |v| ok &= allowed.contains(v));
    ok
}

fn has_stmt(n: &KNode) -> bool {
    let mut found = false;
    n.walk(&mut |x| found |= matches!(x, KNode::Stmt { .. }));
    found
}

/// The last value of a loop with condition `cond` (`iter <= u` or `iter < u`).
fn upper_bound(cond: &KExpr) -> Option<KExpr> {
    match cond {
        KExpr::Cmp(KCmp::Le, v, u) if matches!(**v, KExpr::Var(_)) => Some((**u).clone()),
        KExpr::Cmp(KCmp::Lt, v, u) if matches!(**v, KExpr::Var(_)) => {
            Some(KExpr::Sub(u.clone(), Box::new(KExpr::Int(1))))
        }
        _ => None,
    }
}

/// A linear form: coefficients of variables and opaque sub-expressions, and a constant.
type Linear = (BTreeMap<String, i64>, i64);

fn linear(e: &KExpr) -> Linear {
    let opaque = |e: &KExpr| -> Linear { (BTreeMap::from([(format!("{e:?}"), 1)]), 0) };
    let combine = |a: Linear, b: Linear, sign: i64| -> Linear {
        let mut m = a.0;
        for (k, v) in b.0 {
            *m.entry(k).or_insert(0) += sign * v;
        }
        m.retain(|_, v| *v != 0);
        (m, a.1 + sign * b.1)
    };
    match e {
        KExpr::Int(v) => (BTreeMap::new(), *v),
        KExpr::Var(n) => (BTreeMap::from([(n.clone(), 1)]), 0),
        KExpr::Add(a, b) => combine(linear(a), linear(b), 1),
        KExpr::Sub(a, b) => combine(linear(a), linear(b), -1),
        KExpr::Neg(a) => combine((BTreeMap::new(), 0), linear(a), -1),
        KExpr::Mul(a, b) => match (&**a, &**b) {
            (KExpr::Int(c), x) | (x, KExpr::Int(c)) => {
                let (m, k) = linear(x);
                (m.into_iter().map(|(n, v)| (n, v * c)).collect(), k * c)
            }
            _ => opaque(e),
        },
        _ => opaque(e),
    }
}

/// A constant bound on the trip count of `for (i = init; cond; i += step)`: the smallest
/// `(u − init) / step + 1` over the upper bounds `u` (the terms of a `min`) whose
/// difference from `init` is a constant.
pub fn trip_bound(init: &KExpr, cond: &KExpr, step: i64) -> Option<i64> {
    let u = upper_bound(cond)?;
    let terms: Vec<KExpr> = match u {
        KExpr::Min(v) => v,
        other => vec![other],
    };
    let li = linear(init);
    terms
        .iter()
        .filter_map(|t| {
            let lt = linear(t);
            let mut m = lt.0.clone();
            for (k, v) in &li.0 {
                *m.entry(k.clone()).or_insert(0) -= v;
            }
            m.retain(|_, v| *v != 0);
            m.is_empty().then(|| (lt.1 - li.1) / step.max(1) + 1)
        })
        .min()
        .map(|t| t.max(1))
}

/// Whether `name` occurs anywhere in `n`: loop bounds, guards, constants, statement and
/// copy arguments, and the offsets of the tiles they see.
fn mentions_anywhere(n: &KNode, name: &str) -> bool {
    let hit = std::cell::Cell::new(false);
    let _ = n.clone().map_exprs(&|e: &KExpr| {
        hit.set(hit.get() || e.mentions(name));
        e.clone()
    });
    hit.get()
}

/// A thread loop's header, to rebuild it around other bodies.
#[derive(Clone)]
struct Header {
    iter: String,
    init: KExpr,
    cond: KExpr,
    step: i64,
    kind: LoopKind,
}

impl Header {
    fn wrap(headers: &[Header], inner: KNode) -> KNode {
        headers.iter().rev().fold(inner, |b, h| KNode::For {
            iter: h.iter.clone(),
            init: h.init.clone(),
            cond: h.cond.clone(),
            step: h.step,
            body: Box::new(b),
            kind: h.kind,
        })
    }
}

/// The nest of `Thread` loops at `n` down to a local scope of private buffers: the
/// headers, the buffers and the scope's body.
fn thread_nest(n: &KNode) -> Option<(Vec<Header>, Vec<LocalBuf>, &KNode)> {
    let mut headers = Vec::new();
    let mut cur = n;
    loop {
        match cur {
            KNode::For {
                iter,
                init,
                cond,
                step,
                body,
                kind: kind @ LoopKind::Thread(_),
            } => {
                headers.push(Header {
                    iter: iter.clone(),
                    init: init.clone(),
                    cond: cond.clone(),
                    step: *step,
                    kind: *kind,
                });
                cur = body;
            }
            KNode::Block(v) if v.len() == 1 => cur = &v[0],
            KNode::Local { bufs, body }
                if !headers.is_empty() && bufs.iter().all(|b| b.space == MemSpace::Private) =>
            {
                return Some((headers, bufs.clone(), body));
            }
            _ => return None,
        }
    }
}

/// Whether every leaf of `n` is a copy of one of `promos`, in the direction `copy_in`.
fn only_copies(n: &KNode, promos: &[usize], copy_in: bool) -> bool {
    let mut ok = true;
    let mut any = false;
    n.walk(&mut |x| match x {
        KNode::Copy {
            promo, copy_in: c, ..
        } => {
            any = true;
            ok &= promos.contains(promo) && *c == copy_in;
        }
        KNode::Stmt { .. } | KNode::Barrier | KNode::Device { .. } => ok = false,
        _ => {}
    });
    ok && any
}

/// Spreads every thread nest with a single `Thread(0)` loop over the whole block
/// ([`LoopKind::ThreadFlat`]), for blocks of several dimensions: otherwise the threads with
/// `threadIdx.y > 0` would wait behind guards while one row of the block works.
fn flatten_1d_nests(n: KNode) -> KNode {
    match n {
        KNode::For {
            iter,
            init,
            cond,
            step,
            body,
            kind: LoopKind::Thread(0),
        } if !has_thread_loop(&body) => KNode::For {
            iter,
            init,
            cond,
            step,
            body,
            kind: LoopKind::ThreadFlat,
        },
        n @ KNode::For {
            kind: LoopKind::Thread(_),
            ..
        } => n,
        other => other.map_children(&mut flatten_1d_nests),
    }
}

fn has_thread_loop(n: &KNode) -> bool {
    let mut found = false;
    n.walk(&mut |x| {
        if let KNode::For { kind, .. } = x {
            found |= kind.is_thread();
        }
    });
    found
}

/// The copy-in `c` of a register tile, hoisted above the sequential loop `iter` (from
/// `first` while `runs`): the copy-in of the loop's first step. Promotion guards a copy-in
/// by the steps that read before they write (`c2 >= 1` for a GEMM's `C`, initialised in
/// the first step), so those guards are evaluated at `iter = first`: one false there drops
/// its copies, as the first step writes the whole tile before reading it and later steps
/// find it in registers. That needs the loop to run at least once (else the copy-out
/// after it would store what was never loaded): when that is not proven, the guards are
/// dropped instead (the whole footprint is copied in, which is always right). A copy-in
/// that mentions `iter` outside guards comes back as it is (and is not hoisted).
fn first_step_copy_in(c: &KNode, iter: &str, first: &KExpr, runs: &KExpr) -> KNode {
    // The copies with every one-armed guard removed (`None`: a guard has two arms).
    fn no_guards(n: KNode) -> Option<KNode> {
        let mut two_arms = false;
        let out = n.map_children(&mut |c| match no_guards(c) {
            Some(c) => c,
            None => {
                two_arms = true;
                KNode::Block(Vec::new())
            }
        });
        match out {
            _ if two_arms => None,
            KNode::If { els: Some(_), .. } => None,
            KNode::If { then, .. } => Some(*then),
            other => Some(other),
        }
    }
    let guards_only = no_guards(c.clone()).is_some_and(|n| !mentions_anywhere(&n, iter));
    if !guards_only || !mentions_anywhere(c, iter) {
        return c.clone();
    }
    let at_first = |e: &KExpr| e.substitute(&|v| (v == iter).then(|| first.clone()));
    let proven = at_first(runs).eval(&|_| None).is_some_and(|v| v != 0);
    fn fold(n: KNode, iter: &str, proven: bool, at: &dyn Fn(&KExpr) -> KExpr) -> KNode {
        match n.map_children(&mut |c| fold(c, iter, proven, at)) {
            KNode::If { cond, then, els } if cond.mentions(iter) => {
                let cond = at(&cond);
                match (cond.eval(&|_| None), proven) {
                    (Some(0), true) => els.map_or(KNode::Block(Vec::new()), |e| *e),
                    (Some(v), _) if v != 0 => *then,
                    (_, true) => KNode::If { cond, then, els },
                    // Not proven to run: copy the whole footprint, as unguarded.
                    (_, false) => *then,
                }
            }
            other => other,
        }
    }
    fold(c.clone(), iter, proven, &at_first)
}

/// Keeps register tiles in registers across sequential loops they do not depend on (see
/// the module docs).
pub fn hoist_register_tiles(prog: &Program, n: KNode, block: &[i64; 3]) -> KNode {
    match n {
        // Below thread loops everything runs in one thread.
        n @ KNode::For {
            kind: LoopKind::Thread(_),
            ..
        } => n,
        n @ KNode::For { kind, .. } => {
            let l = n.map_children(&mut |c| hoist_register_tiles(prog, c, block));
            if kind == LoopKind::Seq {
                try_hoist(prog, &l, block).unwrap_or(l)
            } else {
                l
            }
        }
        other => other.map_children(&mut |c| hoist_register_tiles(prog, c, block)),
    }
}

/// Paths (child positions through blocks and local scopes) from `n` to the thread loops
/// directly below it in the uniform part.
fn thread_paths(n: &KNode, path: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    match n {
        KNode::For {
            kind: LoopKind::Thread(_),
            ..
        } => out.push(path.clone()),
        KNode::Block(v) => {
            for (i, c) in v.iter().enumerate() {
                path.push(i);
                thread_paths(c, path, out);
                path.pop();
            }
        }
        KNode::Local { body, .. } => {
            path.push(0);
            thread_paths(body, path, out);
            path.pop();
        }
        _ => {}
    }
}

fn at<'a>(n: &'a KNode, path: &[usize]) -> Option<&'a KNode> {
    match path.split_first() {
        None => Some(n),
        Some((i, rest)) => match n {
            KNode::Block(v) => at(v.get(*i)?, rest),
            KNode::Local { body, .. } => at(body, rest),
            _ => None,
        },
    }
}

fn replace_at(n: KNode, path: &[usize], with: KNode) -> KNode {
    match path.split_first() {
        None => with,
        Some((i, rest)) => match n {
            KNode::Block(v) => KNode::Block(
                v.into_iter()
                    .enumerate()
                    .map(|(k, c)| {
                        if k == *i {
                            replace_at(c, rest, with.clone())
                        } else {
                            c
                        }
                    })
                    .collect(),
            ),
            KNode::Local { bufs, body } => KNode::Local {
                bufs,
                body: Box::new(replace_at(*body, rest, with)),
            },
            other => other,
        },
    }
}

fn try_hoist(prog: &Program, l: &KNode, block: &[i64; 3]) -> Option<KNode> {
    let KNode::For { iter, body, .. } = l else {
        return None;
    };
    let mut paths = Vec::new();
    thread_paths(body, &mut Vec::new(), &mut paths);
    // Thread nests with register tiles (copy nests are thread loops too).
    paths.retain(|p| at(body, p).and_then(thread_nest).is_some());
    let [path] = paths.as_slice() else {
        return None;
    };
    let t = at(body, path)?;
    let (headers, bufs, inner) = thread_nest(t)?;
    // Every thread runs at most one iteration of each thread loop, whatever the loop.
    for h in &headers {
        let LoopKind::Thread(d) = h.kind else {
            return None;
        };
        if h.init.mentions(iter) || h.cond.mentions(iter) {
            return None;
        }
        let trips = trip_bound(&h.init, &h.cond, h.step)?;
        if trips > block[d as usize] {
            return None;
        }
    }
    let KNode::Block(items) = inner else {
        return None;
    };
    let promos: Vec<usize> = bufs.iter().map(|b| b.promo).collect();
    let n_in = items
        .iter()
        .take_while(|c| only_copies(c, &promos, true))
        .count();
    let n_out = items[n_in..]
        .iter()
        .rev()
        .take_while(|c| only_copies(c, &promos, false))
        .count();
    if n_in == 0 || n_out == 0 || n_in + n_out >= items.len() {
        return None;
    }
    let (pre, rest) = items.split_at(n_in);
    let (mid, post) = rest.split_at(rest.len() - n_out);
    let KNode::For {
        init: first,
        cond: runs,
        ..
    } = l
    else {
        return None;
    };
    let pre: Vec<KNode> = pre
        .iter()
        .map(|c| first_step_copy_in(c, iter, first, runs))
        .collect();
    let pre = pre.as_slice();
    // (A copy sees every tile in scope; only the tiles of its own tensor matter.)
    let own_tiles = |n: &KNode| -> KNode {
        fn strip(n: KNode) -> KNode {
            n.map_children(&mut strip)
                .map_locals(|locals, copy| match copy {
                    Some(tensor) => locals.into_iter().filter(|l| l.tensor == tensor).collect(),
                    None => locals,
                })
        }
        strip(n.clone())
    };
    if pre
        .iter()
        .chain(post)
        .any(|c| mentions_anywhere(&own_tiles(c), iter))
    {
        return None;
    }
    // Nothing else in the loop touches the tiles' tensors: their copy-out waits until
    // after the loop.
    let tensors: Vec<usize> = bufs.iter().map(|b| b.tensor).collect();
    let mut other = false;
    replace_at((**body).clone(), path, KNode::Block(Vec::new())).walk(&mut |x| match x {
        KNode::Copy { tensor, .. } => other |= tensors.contains(tensor),
        KNode::Stmt { stmt, .. } => {
            let s = &prog.stmts[*stmt];
            other |= tensors.contains(&s.lhs)
                || s.reads().into_iter().any(|(t, ..)| tensors.contains(&t));
        }
        _ => {}
    });
    if other {
        return None;
    }
    let KNode::For {
        iter: li,
        init: linit,
        cond: lcond,
        step: lstep,
        kind: lkind,
        ..
    } = l
    else {
        return None;
    };
    let new_body = replace_at(
        (**body).clone(),
        path,
        Header::wrap(&headers, KNode::Block(mid.to_vec())),
    );
    Some(KNode::Local {
        bufs,
        body: Box::new(KNode::Block(vec![
            if pre
                .iter()
                .all(|c| matches!(c, KNode::Block(v) if v.is_empty()))
            {
                KNode::Block(Vec::new())
            } else {
                Header::wrap(&headers, KNode::Block(pre.to_vec()))
            },
            KNode::For {
                iter: li.clone(),
                init: linit.clone(),
                cond: lcond.clone(),
                step: *lstep,
                body: Box::new(new_body),
                kind: *lkind,
            },
            Header::wrap(&headers, KNode::Block(post.to_vec())),
        ])),
    })
}

/// A place data lives in, for barrier placement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Place {
    Shared(usize),
    Global(usize),
}

#[derive(Default, Clone)]
struct Access {
    reads: HashSet<Place>,
    writes: HashSet<Place>,
}

impl Access {
    fn conflicts(&self, later: &Access) -> bool {
        self.writes
            .iter()
            .any(|p| later.reads.contains(p) || later.writes.contains(p))
            || self.reads.iter().any(|p| later.writes.contains(p))
    }
    fn extend(&mut self, o: &Access) {
        self.reads.extend(o.reads.iter().copied());
        self.writes.extend(o.writes.iter().copied());
    }
    fn clear(&mut self) {
        self.reads.clear();
        self.writes.clear();
    }
}

/// Where an access to tensor `t` goes, seen through the tiles in scope: the innermost tile
/// of `t`, if any (shared, or private and then no place), else the global array.
fn place_of(t: usize, locals: &[LocalRef], spaces: &HashMap<usize, MemSpace>) -> Option<Place> {
    match locals.iter().rev().find(|l| l.tensor == t) {
        Some(l) => match spaces.get(&l.promo) {
            Some(MemSpace::Shared) => Some(Place::Shared(l.promo)),
            _ => None,
        },
        None => Some(Place::Global(t)),
    }
}

fn access_of(prog: &Program, n: &KNode, spaces: &HashMap<usize, MemSpace>) -> Access {
    let mut a = Access::default();
    n.walk(&mut |x| match x {
        KNode::Stmt { stmt, locals, .. } => {
            let s = &prog.stmts[*stmt];
            if let Some(p) = place_of(s.lhs, locals, spaces) {
                a.writes.insert(p);
                // An update reads the old value as well.
                a.reads.insert(p);
            }
            for (t, ..) in s.reads() {
                if let Some(p) = place_of(t, locals, spaces) {
                    a.reads.insert(p);
                }
            }
        }
        KNode::Copy {
            promo,
            tensor,
            copy_in,
            locals,
            ..
        } => {
            let own = match spaces.get(promo) {
                Some(MemSpace::Shared) => Some(Place::Shared(*promo)),
                _ => None,
            };
            let other: Vec<LocalRef> = locals
                .iter()
                .filter(|l| l.promo != *promo)
                .cloned()
                .collect();
            let far = place_of(*tensor, &other, spaces);
            let (r, w) = if *copy_in { (far, own) } else { (own, far) };
            if let Some(p) = r {
                a.reads.insert(p);
            }
            if let Some(p) = w {
                a.writes.insert(p);
            }
        }
        _ => {}
    });
    a
}

/// Inserts barriers in the block-uniform part of `n` (see the module docs).
fn insert_barriers(prog: &Program, n: &KNode, spaces: &HashMap<usize, MemSpace>) -> KNode {
    place(prog, n, Access::default(), spaces).0
}

/// Places barriers in `n`, given the accesses `pending` made since the last barrier;
/// returns the new node and the accesses pending after it. A barrier goes before a part
/// that conflicts with what is pending, and at the end of a loop body whose pending
/// accesses conflict with the next iteration's; nowhere else.
fn place(
    prog: &Program,
    n: &KNode,
    pending: Access,
    spaces: &HashMap<usize, MemSpace>,
) -> (KNode, Access) {
    match n {
        KNode::Block(v) => {
            let mut out = Vec::new();
            let mut pending = pending;
            for c in v {
                let a = access_of(prog, c, spaces);
                if pending.conflicts(&a) {
                    out.push(KNode::Barrier);
                    pending.clear();
                }
                let (c2, p) = place(prog, c, pending, spaces);
                out.push(c2);
                pending = p;
            }
            (KNode::Block(out), pending)
        }
        KNode::For {
            iter,
            init,
            cond,
            step,
            body,
            kind,
        } if !kind.is_thread() => {
            let all = access_of(prog, body, spaces);
            let rebuild = |b: KNode| KNode::For {
                iter: iter.clone(),
                init: init.clone(),
                cond: cond.clone(),
                step: *step,
                body: Box::new(b),
                kind: *kind,
            };
            // The first iteration starts with `pending`; a later one with what the
            // previous left pending, unless a barrier ends the body.
            let mut start = pending.clone();
            loop {
                let (b, p_end) = place(prog, body, start.clone(), spaces);
                if p_end.conflicts(&all) {
                    return (rebuild(KNode::Block(vec![b, KNode::Barrier])), pending);
                }
                let mut next = start.clone();
                next.extend(&p_end);
                if next.reads.len() == start.reads.len() && next.writes.len() == start.writes.len()
                {
                    let mut out = pending;
                    out.extend(&p_end);
                    return (rebuild(b), out);
                }
                start = next;
            }
        }
        KNode::If { cond, then, els } => {
            let (t, mut p) = place(prog, then, pending.clone(), spaces);
            let e = match els {
                Some(e) => {
                    let (e2, pe) = place(prog, e, pending, spaces);
                    p.extend(&pe);
                    Some(Box::new(e2))
                }
                None => {
                    p.extend(&pending);
                    None
                }
            };
            (
                KNode::If {
                    cond: cond.clone(),
                    then: Box::new(t),
                    els: e,
                },
                p,
            )
        }
        KNode::Local { bufs, body } => {
            let (b, p) = place(prog, body, pending, spaces);
            (
                KNode::Local {
                    bufs: bufs.clone(),
                    body: Box::new(b),
                },
                p,
            )
        }
        KNode::Let { name, value, body } => {
            let (b, p) = place(prog, body, pending, spaces);
            (
                KNode::Let {
                    name: name.clone(),
                    value: value.clone(),
                    body: Box::new(b),
                },
                p,
            )
        }
        // Statements, copies and thread loops: everything in them is pending after them.
        other => {
            let mut p = pending;
            p.extend(&access_of(prog, other, spaces));
            (other.clone(), p)
        }
    }
}

/// The index variable the printers define for block (`polyc_bidD`) or thread
/// (`polyc_tidD`) dimension `d`.
pub fn index_var(thread: bool, d: u8) -> String {
    if thread {
        format!("polyc_tid{d}")
    } else {
        format!("polyc_bid{d}")
    }
}

/// Wraps every statement and copy with the `idx == 0` tests of the used dimensions no
/// enclosing loop spreads (`covered` holds the enclosing loops' kinds).
fn guard_leaves(n: KNode, blocks: &[u8], threads: &[u8], covered: &mut Vec<LoopKind>) -> KNode {
    match n {
        n @ KNode::For { kind, .. } => {
            covered.push(kind);
            let r = n.map_children(&mut |c| guard_leaves(c, blocks, threads, covered));
            covered.pop();
            r
        }
        leaf @ (KNode::Stmt { .. } | KNode::Copy { .. }) => {
            let mut conds = Vec::new();
            for &d in blocks {
                if !covered.contains(&LoopKind::Block(d)) {
                    conds.push(index_var(false, d));
                }
            }
            let flat = covered.contains(&LoopKind::ThreadFlat);
            for &d in threads {
                if !flat && !covered.contains(&LoopKind::Thread(d)) {
                    conds.push(index_var(true, d));
                }
            }
            let cond = conds.into_iter().fold(None::<KExpr>, |acc, v| {
                let c = KExpr::Cmp(KCmp::Eq, Box::new(KExpr::Var(v)), Box::new(KExpr::Int(0)));
                Some(match acc {
                    Some(a) => KExpr::And(Box::new(a), Box::new(c)),
                    None => c,
                })
            });
            match cond {
                Some(c) => KNode::If {
                    cond: c,
                    then: Box::new(leaf),
                    els: None,
                },
                None => leaf,
            }
        }
        other => other.map_children(&mut |c| guard_leaves(c, blocks, threads, covered)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(n: &str) -> Box<KExpr> {
        Box::new(KExpr::var(n))
    }
    fn i(x: i64) -> Box<KExpr> {
        Box::new(KExpr::Int(x))
    }

    #[test]
    fn trip_bounds_come_from_constant_differences() {
        // for (c2 = 64*c0; c2 <= min(N - 1, 64*c0 + 63); c2 += 1): at most 64 iterations.
        let init = KExpr::Mul(i(64), v("c0"));
        let cond = KExpr::Cmp(
            KCmp::Le,
            v("c2"),
            Box::new(KExpr::Min(vec![
                KExpr::Sub(v("N"), i(1)),
                KExpr::Add(Box::new(KExpr::Mul(i(64), v("c0"))), i(63)),
            ])),
        );
        assert_eq!(trip_bound(&init, &cond, 1), Some(64));
        assert_eq!(trip_bound(&init, &cond, 8), Some(8));
        // No constant difference: unknown.
        let cond = KExpr::Cmp(KCmp::Le, v("c2"), Box::new(KExpr::Sub(v("N"), i(1))));
        assert_eq!(trip_bound(&init, &cond, 1), None);
        // Constant bounds.
        let cond = KExpr::Cmp(KCmp::Lt, v("c2"), i(10));
        assert_eq!(trip_bound(&KExpr::Int(0), &cond, 1), Some(10));
    }

    #[test]
    fn host_trip_counts() {
        let t = TripExpr {
            init: KExpr::Int(0),
            upper: KExpr::FloorDiv(Box::new(KExpr::Sub(v("N"), i(1))), i(64)),
            step: 1,
        };
        let env = |n: &str| (n == "N").then_some(130);
        assert_eq!(t.eval(&env), Some(3));
    }
}
