//! What `polyc explain --target gpu` says per kernel: the grid and the block, shared
//! memory, registers, global-memory traffic and FLOPs counted exactly, and the kernel's
//! arithmetic intensity against the description's roofline ridge point.
//!
//! Counts come from the kernel IR with every size bound: each statement instance and copy
//! is counted once per execution, over all blocks and threads (a `Block` or `Thread` loop
//! covers its whole range once across the grid or the block). A loop whose body's control
//! flow does not depend on its iterator is counted as trips × one body, so a GEMM's
//! counts take microseconds, not a walk of its 10⁹ instances.

use std::collections::HashMap;
use std::fmt::Write;

use miette::{miette, Result};
use polyhedral::ir::{flops_per_instance, Program};

use crate::codegen::kir::{KExpr, KNode, LocalRef, MemSpace};
use crate::gpu::device::{each_launch, DeviceKernel, GpuModule};

/// Exact counts of one kernel over one launch sequence.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelCounts {
    /// Global-memory element reads, in bytes.
    pub read_bytes: u64,
    /// Global-memory element writes, in bytes.
    pub write_bytes: u64,
    /// Floating-point (or integer) operations of the statements.
    pub flops: u64,
    /// Launches of the kernel (host loops around it).
    pub launches: u64,
    /// Blocks over all launches.
    pub blocks: u64,
}

/// Counting state: values of the iterators in scope.
struct Counter<'a> {
    prog: &'a Program,
    env: HashMap<String, i64>,
}

impl Counter<'_> {
    fn eval(&self, e: &KExpr) -> Result<i64> {
        e.eval(&|v| {
            self.env
                .get(v)
                .copied()
                .or_else(|| v.starts_with("polyc_").then_some(0))
        })
        .ok_or_else(|| {
            miette!("internal error: an expression of the kernel reads an unknown value")
        })
    }

    /// Whether the element a tensor access goes to is in global memory.
    fn global(&self, t: usize, locals: &[LocalRef]) -> bool {
        !locals.iter().any(|l| l.tensor == t)
    }

    fn count(&mut self, n: &KNode) -> Result<KernelCounts> {
        let mut c = KernelCounts::default();
        match n {
            KNode::Block(v) => {
                for x in v {
                    add(&mut c, &self.count(x)?);
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
                let start = self.eval(init)?;
                let invariant = !mentions(body, iter);
                let mut i = start;
                let mut trips = 0u64;
                let mut one: Option<KernelCounts> = None;
                loop {
                    self.env.insert(iter.clone(), i);
                    if self.eval(cond)? == 0 {
                        break;
                    }
                    if invariant {
                        if one.is_none() {
                            one = Some(self.count(body)?);
                        }
                    } else {
                        add(&mut c, &self.count(body)?);
                    }
                    trips += 1;
                    i += step;
                }
                self.env.remove(iter);
                if let Some(o) = one {
                    add(&mut c, &scale(&o, trips));
                }
            }
            KNode::If { cond, then, els } => {
                if self.eval(cond)? != 0 {
                    c = self.count(then)?;
                } else if let Some(e) = els {
                    c = self.count(e)?;
                }
            }
            KNode::Let { name, value, body } => {
                let v = self.eval(value)?;
                self.env.insert(name.clone(), v);
                c = self.count(body)?;
                self.env.remove(name);
            }
            KNode::Local { body, .. } | KNode::Device { body, .. } => c = self.count(body)?,
            KNode::Stmt { stmt, locals, .. } => {
                let s = &self.prog.stmts[*stmt];
                let eb = |t: usize| self.prog.tensors[t].dtype.size_bytes() as u64;
                c.flops = flops_per_instance(s);
                if self.global(s.lhs, locals) {
                    c.write_bytes += eb(s.lhs);
                    if matches!(s.body, polyhedral::ir::StmtBody::Update(op, _) if op != polyhedral::ir::AssignOp::Assign)
                    {
                        c.read_bytes += eb(s.lhs);
                    }
                }
                for (t, ..) in s.reads() {
                    if self.global(t, locals) {
                        c.read_bytes += eb(t);
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
                let far_local = locals
                    .iter()
                    .any(|l| l.tensor == *tensor && l.promo != *promo);
                if !far_local {
                    let b = self.prog.tensors[*tensor].dtype.size_bytes() as u64;
                    if *copy_in {
                        c.read_bytes += b;
                    } else {
                        c.write_bytes += b;
                    }
                }
            }
            KNode::Barrier | KNode::Intrinsic(_) => {}
        }
        Ok(c)
    }
}

fn add(a: &mut KernelCounts, b: &KernelCounts) {
    a.read_bytes += b.read_bytes;
    a.write_bytes += b.write_bytes;
    a.flops += b.flops;
    a.launches += b.launches;
    a.blocks += b.blocks;
}

fn scale(a: &KernelCounts, k: u64) -> KernelCounts {
    KernelCounts {
        read_bytes: a.read_bytes * k,
        write_bytes: a.write_bytes * k,
        flops: a.flops * k,
        launches: a.launches * k,
        blocks: a.blocks * k,
    }
}

/// Whether `iter` occurs in the control flow of `n` (loop bounds, guards, constants); the
/// statements' own indices do not change what is counted.
fn mentions(n: &KNode, iter: &str) -> bool {
    let mut found = false;
    let check = |e: &KExpr, found: &mut bool| {
        *found |= e.mentions(iter);
    };
    n.walk(&mut |x| match x {
        KNode::For { init, cond, .. } => {
            check(init, &mut found);
            check(cond, &mut found);
        }
        KNode::If { cond, .. } => check(cond, &mut found),
        KNode::Let { value, .. } => check(value, &mut found),
        _ => {}
    });
    found
}

/// Exact counts per kernel for bound sizes (`sizes[p]` for every size).
pub fn count_kernels(
    prog: &Program,
    module: &GpuModule,
    sizes: &[i64],
) -> Result<Vec<KernelCounts>> {
    let mut out = vec![KernelCounts::default(); module.kernels.len()];
    each_launch(prog, module, sizes, &mut |k, env| {
        let mut c = Counter {
            prog,
            env: env.clone(),
        };
        let mut counts = c.count(&k.body)?;
        counts.launches = 1;
        let host = |v: &str| env.get(v).copied();
        // (A grid the host cannot compute here counts as one block per launch.)
        counts.blocks = k
            .grid_for(&host)
            .map_or(1, |g| g.iter().product::<i64>().max(0)) as u64;
        add(&mut out[k.id], &counts);
        Ok(())
    })?;
    Ok(out)
}

/// Bytes of shared memory a kernel declares (rows padded as printed).
pub fn shared_bytes(prog: &Program, param_texts: &[String], k: &DeviceKernel) -> u64 {
    let e = crate::gpu::emit::kernel_emitter(
        prog,
        param_texts,
        &crate::gpu::dialect::GpuDialect::Cuda,
        k,
    );
    k.shared
        .iter()
        .map(|b| {
            e.tile_elems(b.promo, b.tensor) as u64
                * prog.tensors[b.tensor].dtype.size_bytes() as u64
        })
        .sum()
}

/// 32-bit registers one thread's register tiles take (private buffers).
pub fn tile_registers(prog: &Program, k: &DeviceKernel) -> u64 {
    let mut regs = 0u64;
    k.body.walk(&mut |n| {
        if let KNode::Local { bufs, .. } = n {
            for b in bufs.iter().filter(|b| b.space == MemSpace::Private) {
                let elems: i64 = b.sizes.iter().product();
                let bytes = prog.tensors[b.tensor].dtype.size_bytes() as u64;
                regs += elems as u64 * bytes.div_ceil(4);
            }
        }
    });
    regs
}

/// The roofline figures of a description: (peak GFLOP/s, DRAM GB/s).
pub type Roofline = Option<(u64, u64)>;

/// The per-kernel report (see the module docs); `ptxas` adds ptxas's own register and
/// spill counts where nvcc ran.
pub fn explain(
    prog: &Program,
    param_texts: &[String],
    module: &GpuModule,
    sizes: Option<&[i64]>,
    roofline: Roofline,
    ptxas: Option<&crate::gpu::cuda_tools::PtxasReport>,
    machine: Option<&crate::gpu::timing::Machine>,
) -> Result<String> {
    let mut out = String::new();
    let counts = match sizes {
        Some(s) => Some(count_kernels(prog, module, s)?),
        None => None,
    };
    let ridge = roofline.map(|(f, b)| f as f64 / b.max(1) as f64);
    let _ = writeln!(out, "gpu kernels ({}):", module.kernels.len());
    for k in &module.kernels {
        let stmts: Vec<&str> = k
            .stmts
            .iter()
            .map(|s| prog.stmts[*s].name.as_str())
            .collect();
        let _ = writeln!(out, "  kernel {} `{}` ({})", k.id, k.name, stmts.join(", "));
        let grid = match sizes {
            Some(s) => {
                let env = |v: &str| prog.params.iter().position(|p| p.name == v).map(|i| s[i]);
                match k.grid_for(&env) {
                    Ok(g) => format!("{} x {} x {}", g[0], g[1], g[2]),
                    Err(_) => "computed at launch".into(),
                }
            }
            None => "computed at launch (symbolic sizes)".into(),
        };
        let _ = writeln!(
            out,
            "    grid {grid} blocks; block {} x {} x {} = {} threads",
            k.block[0],
            k.block[1],
            k.block[2],
            k.threads()
        );
        let _ = writeln!(
            out,
            "    shared memory {} bytes per block; register tiles {} registers per thread",
            shared_bytes(prog, param_texts, k),
            tile_registers(prog, k)
        );
        let _ = writeln!(
            out,
            "    indices: {}",
            if crate::gpu::emit::indices_fit_32_bits(prog, param_texts, k) {
                "32-bit (every value provably within ±2^29)"
            } else {
                "64-bit (a symbolic size, or a value not proven within ±2^29)"
            }
        );
        bank_lines(&mut out, prog, param_texts, k);
        let stages = crate::gpu::emit::pipeline_stages(prog, param_texts, k);
        if !stages.is_empty() {
            let _ = writeln!(
                out,
                "    pipelined: {} shared-memory loop(s) in {} stages (the copies of step k + {} load while step k computes)",
                stages.len(),
                stages[0],
                stages[0] - 1
            );
        }
        if let Some(r) = ptxas.and_then(|p| p.kernel(&k.name)) {
            let _ = writeln!(
                out,
                "    ptxas: {} registers, {} bytes shared, {} bytes spill stores, {} bytes spill loads",
                r.registers, r.shared_bytes, r.spill_store_bytes, r.spill_load_bytes
            );
        }
        if let Some(sh) = &k.shapes {
            for v in &sh.variants {
                if let Some(r) = ptxas.and_then(|p| p.kernel(&v.name)) {
                    let _ = writeln!(
                        out,
                        "    ptxas `{}`: {} registers, {} bytes shared, {} bytes spill stores, {} bytes spill loads",
                        v.name, r.registers, r.shared_bytes, r.spill_store_bytes, r.spill_load_bytes
                    );
                }
            }
            let d = sh.grid_dim as usize;
            let other = (0..3).filter(|&x| x != d).try_fold(1i64, |acc, x| {
                let g = &k.grid[x];
                if g.fallback {
                    return None;
                }
                let mut n = 1;
                for t in &g.trips {
                    n = n.max(t.eval(&|_| None)?);
                }
                Some(acc * n)
            });
            out.push_str(&sh.explain(&k.name, &sh.size.explain_samples(), other));
        }
        if let Some(c) = counts.as_ref().map(|c| &c[k.id]) {
            let bytes = c.read_bytes + c.write_bytes;
            let _ = writeln!(
                out,
                "    global traffic {} bytes ({} read, {} written) over {} launch(es); {} FLOPs",
                bytes, c.read_bytes, c.write_bytes, c.launches, c.flops
            );
            if bytes > 0 {
                let ai = c.flops as f64 / bytes as f64;
                match ridge {
                    Some(r) => {
                        let _ = writeln!(
                            out,
                            "    arithmetic intensity {ai:.2} FLOP/byte; ridge point {r:.2} FLOP/byte: {}",
                            if ai >= r {
                                "compute-bound"
                            } else {
                                "memory-bound"
                            }
                        );
                    }
                    None => {
                        let _ = writeln!(out, "    arithmetic intensity {ai:.2} FLOP/byte");
                    }
                }
            }
            let load = kernel_load(prog, param_texts, k, c);
            if let Some(e) = machine.and_then(|m| crate::gpu::timing::estimate(m, &load)) {
                let _ = writeln!(out, "    {}", e.describe());
                let _ = writeln!(
                    out,
                    "      (its inputs: {} registers per thread, the register tiles' and {} more, at most what one block per SM allows; {} step(s) of the K loop in {} stage(s))",
                    load.registers,
                    crate::gpu::timing::REGISTER_OVERHEAD,
                    load.steps,
                    load.stages
                );
            }
        }
    }
    Ok(out)
}

/// What the timing model ([`crate::gpu::timing`]) needs of kernel `k`, with its exact
/// counts `c`: the blocks, threads, shared memory and registers (register tiles plus
/// [`crate::gpu::timing::REGISTER_OVERHEAD`], at most 255, and at most what lets one block
/// fit an SM, as ptxas caps them) of a block, and the steps and
/// stages of its K loop (the first sequential loop with a barrier in its body; its
/// constant trip bound).
pub fn kernel_load(
    prog: &Program,
    param_texts: &[String],
    k: &DeviceKernel,
    c: &KernelCounts,
) -> crate::gpu::timing::KernelLoad {
    let mut steps = 1;
    let mut found = false;
    k.body.walk(&mut |n| {
        if let KNode::For {
            init,
            cond,
            step,
            body,
            kind: crate::codegen::kir::LoopKind::Seq,
            ..
        } = n
        {
            let mut barrier = false;
            body.walk(&mut |m| barrier |= matches!(m, KNode::Barrier));
            if barrier && !found {
                found = true;
                steps = crate::gpu::device::trip_bound(init, cond, *step).unwrap_or(1);
            }
        }
    });
    let stages = crate::gpu::emit::pipeline_stages(prog, param_texts, k);
    let launches = c.launches.max(1);
    crate::gpu::timing::KernelLoad {
        blocks: (c.blocks / launches).max(1) as i64,
        threads: k.threads(),
        shared: shared_bytes(prog, param_texts, k) as i64,
        // ptxas keeps a block within one SM's register file (the launcher's bounds ask
        // for one block per SM) and spills the rest.
        registers: (tile_registers(prog, k) as i64 + crate::gpu::timing::REGISTER_OVERHEAD)
            .min(255)
            .min(crate::gpu::module::REGISTERS_PER_SM / k.threads().max(1)),
        flops: c.flops,
        bytes: c.read_bytes + c.write_bytes,
        launches,
        steps: steps.max(1),
        stages: stages.first().copied().unwrap_or(1).max(1),
    }
}

/// The timing model's total for every kernel of `module` at the bound `sizes`, in
/// milliseconds; infinite where a kernel's block does not fit an SM.
pub fn modelled_ms(
    prog: &Program,
    param_texts: &[String],
    module: &GpuModule,
    sizes: &[i64],
    machine: &crate::gpu::timing::Machine,
) -> Result<f64> {
    let counts = count_kernels(prog, module, sizes)?;
    Ok(module
        .kernels
        .iter()
        .map(|k| {
            let load = kernel_load(prog, param_texts, k, &counts[k.id]);
            crate::gpu::timing::estimate(machine, &load).map_or(f64::INFINITY, |e| e.total_ms)
        })
        .sum())
}

/// The bank-conflict degree of each shared-memory access of kernel `k`
/// ([`crate::gpu::banks`]).
fn bank_lines(out: &mut String, prog: &Program, param_texts: &[String], k: &DeviceKernel) {
    if k.shared.is_empty() {
        return;
    }
    let dialect = crate::gpu::dialect::GpuDialect::Cuda;
    let e = crate::gpu::emit::kernel_emitter(prog, param_texts, &dialect, k);
    match crate::gpu::banks::bank_degrees(&e, prog, param_texts, k) {
        Some(sites) => {
            let _ = writeln!(
                out,
                "    shared-memory accesses (bank-conflict degree: the most distinct words one bank serves in a warp's request; 1 = conflict-free):"
            );
            for s in sites {
                let _ = writeln!(
                    out,
                    "      {}: {}-bit, degree {}",
                    s.site,
                    s.bytes * 8,
                    s.degree
                );
            }
        }
        None => {
            let _ = writeln!(
                out,
                "    shared-memory bank conflicts: computed at bound sizes only (give every size with --param)"
            );
        }
    }
}
