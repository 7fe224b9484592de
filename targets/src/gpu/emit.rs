//! CUDA and OpenCL from one kernel IR, through the C-family printer's dialects.
//!
//! # Calling conventions
//!
//! **CUDA** (`--emit cuda`, the GPU target's default): the file holds the `__global__`
//! kernels and one host function
//!
//! ```c
//! extern "C" cudaError_t <def>(<sizes>, <inputs>, <outputs>, cudaStream_t stream);
//! ```
//!
//! whose parameters are the C function's (symbolic sizes as `int64_t`, tensors as device
//! pointers, scalars by value), plus the stream. It allocates the temporaries the kernels
//! need with `cudaMallocAsync` on `stream` (filled with `0xFF` bytes, NaN, when compiled
//! with `-DPOLYC_POISON`), launches the kernels in order on `stream` (host loops around
//! launches included), frees the temporaries with `cudaFreeAsync` (stream-ordered: no
//! device-wide synchronisation, so back-to-back calls queue) and returns
//! `cudaGetLastError()`. A kernel whose shared tiles exceed CUDA's 48 KB static limit
//! takes them from dynamic shared memory, which the host function sizes and enables
//! (`cudaFuncSetAttribute`) before the launch.
//! A program that divides integers by a value that may be 0 has one more parameter,
//! `int *polyc_fault_status` (a host pointer, or `NULL`): the function waits for the
//! kernels and stores there 0, or 1 + `k` when statement `S_k` divided by zero first
//! (the kernels computed 0 there; polyc's C entry returns `-1000 - k` for the same).
//!
//! **OpenCL** (`--emit opencl`): OpenCL C 1.2 kernels only; the host (polyc's runner, or
//! yours) launches them in order as [`crate::gpu::launch_plan`] computes. Every kernel
//! takes, in this order ([`kernel_params`]): the symbolic sizes (`long`), the tensors it
//! touches in global memory in program order (`__global T *`), the program's scalars by
//! value, the host loop iterators it reads (`long`), and, when its statements divide
//! integers by a value that may be 0, the fault status (`__global int *`, one `int` the
//! host sets to 0 before the launches: a kernel that divides by zero stores 1 + the
//! statement's index there, the first fault wins). The work-group size is the kernel's
//! block, and the global size is grid × block per dimension.
//!
//! Both dialects name each kernel `<def>_k<N>_<statements>`; `Block` and `Thread` loops
//! are grid- and block-stride loops over `blockIdx`/`threadIdx` (OpenCL:
//! `get_group_id`/`get_local_id`).

use std::fmt::Write;

use polyhedral::ir::{Aff, DType, InputRef, Program};

use crate::codegen::cfamily::{c_ident, function_params, helpers, Dialect, Emitter, FAULT_PARAM};
use crate::codegen::kir::{KExpr, KNode};
use crate::gpu::device::{DeviceKernel, GpuModule, TripExpr};
use crate::gpu::dialect::GpuDialect;
use crate::gpu::reduce;

/// One kernel parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelParam {
    /// A symbolic size (index into `Program::params`), `int64_t`.
    Size(usize),
    /// A tensor in global memory (index into `Program::tensors`).
    Tensor(usize),
    /// A scalar input (index into `Program::scalars`), by value.
    Scalar(usize),
    /// A host loop iterator, `int64_t`.
    Host(String),
    /// The first block index along the dimension of block shapes (`polyc_blo`).
    BlockLo,
    /// The block index past the last one along it (`polyc_bhi`).
    BlockHi,
    /// The fault status (`int *polyc_fault`, in global memory), for a kernel whose
    /// statements divide integers by a value that may be 0: the first such division
    /// stores 1 + the statement's index there (compare-and-swap from 0); the host sets it
    /// to 0 before the launches and reads it back after them.
    Fault,
}

/// The parameters of a kernel, in order (see the module docs).
pub fn kernel_params(prog: &Program, param_texts: &[String], k: &DeviceKernel) -> Vec<KernelParam> {
    let mut v = Vec::new();
    for (p, t) in param_texts.iter().enumerate().take(prog.params.len()) {
        if !crate::codegen::cfamily::is_bound(t) {
            v.push(KernelParam::Size(p));
        }
    }
    for t in k.body.global_tensors(prog) {
        v.push(KernelParam::Tensor(t));
    }
    for input in &prog.inputs {
        if let InputRef::Scalar(s) = input {
            v.push(KernelParam::Scalar(*s));
        }
    }
    v.extend(k.host_args.iter().cloned().map(KernelParam::Host));
    if k.range_dim.is_some() {
        v.push(KernelParam::BlockLo);
        v.push(KernelParam::BlockHi);
    }
    if takes_fault(prog, k) {
        v.push(KernelParam::Fault);
    }
    v
}

/// Whether kernel `k` takes the fault status ([`KernelParam::Fault`]).
fn takes_fault(prog: &Program, k: &DeviceKernel) -> bool {
    k.stmts
        .iter()
        .any(|&s| crate::codegen::cfamily::stmt_may_fault(prog, s))
}

/// Whether some kernel of `module` takes the fault status (the CUDA host function then
/// has its `polyc_fault_status` parameter).
pub fn module_may_fault(prog: &Program, module: &GpuModule) -> bool {
    module.all_kernels().iter().any(|k| takes_fault(prog, k))
}

fn param_decl(prog: &Program, dialect: GpuDialect, k: &DeviceKernel, p: &KernelParam) -> String {
    let written: Vec<usize> = k.stmts.iter().map(|s| prog.stmts[*s].lhs).collect();
    match p {
        KernelParam::Size(i) => format!("int64_t {}", c_ident(&prog.params[*i].name)),
        KernelParam::Tensor(t) => {
            let ten = &prog.tensors[*t];
            // Only tensors the kernel never writes are `restrict`. Through a restrict
            // pointer that other threads of the block write, nvcc moved the reads of a
            // row reduction's result above the barrier after it (each thread then read
            // the value before thread 0 stored it: softmax with a dynamic row count gave
            // zeros on an H100). The read-only restrict pointers already tell the compiler
            // that no store aliases them.
            let (konst, restrict) = if written.contains(t) {
                ("", "")
            } else {
                ("const ", dialect.restrict())
            };
            let space = dialect.global_space();
            format!(
                "{space}{konst}{} *{restrict}{}{}",
                ten.dtype.c_type(),
                if restrict.is_empty() { "" } else { " " },
                c_ident(&ten.name)
            )
        }
        KernelParam::Scalar(s) => {
            let sc = &prog.scalars[*s];
            // f16 scalars are passed as float (exact): OpenCL devices without
            // cl_khr_fp16 take no half arguments.
            let t = if sc.dtype == DType::F16 {
                "float"
            } else {
                sc.dtype.c_type()
            };
            format!("{t} {}", c_ident(&sc.name))
        }
        KernelParam::Host(h) => format!("int64_t {h}"),
        KernelParam::BlockLo => format!("int64_t {}", crate::gpu::blockshape::BLOCK_LO),
        KernelParam::BlockHi => format!("int64_t {}", crate::gpu::blockshape::BLOCK_HI),
        KernelParam::Fault => {
            let space = dialect.global_space();
            format!("{space}int *{FAULT_PARAM}")
        }
    }
}

const CUDA_INDEX: &str = "\
#ifdef __NVCC__
/* Not every helper is used by every kernel. */
#pragma nv_diag_suppress 177
#endif
#define polyc_bid0 ((int64_t)blockIdx.x)
#define polyc_bid1 ((int64_t)blockIdx.y)
#define polyc_bid2 ((int64_t)blockIdx.z)
#define polyc_nbid0 ((int64_t)gridDim.x)
#define polyc_nbid1 ((int64_t)gridDim.y)
#define polyc_nbid2 ((int64_t)gridDim.z)
#define polyc_tid0 ((int64_t)threadIdx.x)
#define polyc_tid1 ((int64_t)threadIdx.y)
#define polyc_tid2 ((int64_t)threadIdx.z)
#define polyc_ntid0 ((int64_t)blockDim.x)
#define polyc_ntid1 ((int64_t)blockDim.y)
#define polyc_ntid2 ((int64_t)blockDim.z)
#define polyc_tidf (polyc_tid0 + polyc_ntid0 * (polyc_tid1 + polyc_ntid1 * polyc_tid2))
#define polyc_ntidf (polyc_ntid0 * polyc_ntid1 * polyc_ntid2)
#define polyc_aligned16(p) ((((size_t)(p)) & 15) == 0)
";

const OPENCL_PRELUDE: &str = "\
/* Every float operation rounds as written (the reference interpreter's semantics). */
#pragma OPENCL FP_CONTRACT OFF
typedef long int64_t;
typedef int int32_t;
typedef char int8_t;
#define INT8_MIN CHAR_MIN
#define INT8_MAX CHAR_MAX
#define INT32_MIN INT_MIN
#define INT32_MAX INT_MAX
#define INT64_MIN LONG_MIN
#define INT64_MAX LONG_MAX
/* OpenCL's math functions are overloaded: the C names map onto them. */
#define expf exp
#define logf log
#define sqrtf sqrt
#define tanhf tanh
#define fabsf fabs
#define fmodf fmod
#define fmaf fma
#define polyc_bid0 ((int64_t)get_group_id(0))
#define polyc_bid1 ((int64_t)get_group_id(1))
#define polyc_bid2 ((int64_t)get_group_id(2))
#define polyc_nbid0 ((int64_t)get_num_groups(0))
#define polyc_nbid1 ((int64_t)get_num_groups(1))
#define polyc_nbid2 ((int64_t)get_num_groups(2))
#define polyc_tid0 ((int64_t)get_local_id(0))
#define polyc_tid1 ((int64_t)get_local_id(1))
#define polyc_tid2 ((int64_t)get_local_id(2))
#define polyc_ntid0 ((int64_t)get_local_size(0))
#define polyc_ntid1 ((int64_t)get_local_size(1))
#define polyc_ntid2 ((int64_t)get_local_size(2))
#define polyc_tidf (polyc_tid0 + polyc_ntid0 * (polyc_tid1 + polyc_ntid1 * polyc_tid2))
#define polyc_ntidf (polyc_ntid0 * polyc_ntid1 * polyc_ntid2)
#define polyc_aligned16(p) ((((size_t)(p)) & 15) == 0)
";

fn uses_f16(prog: &Program) -> bool {
    prog.tensors.iter().any(|t| t.dtype == DType::F16)
        || prog.scalars.iter().any(|t| t.dtype == DType::F16)
        || prog.stmts.iter().any(|s| s.dtype == DType::F16)
}

fn uses_f64(prog: &Program) -> bool {
    prog.tensors.iter().any(|t| t.dtype == DType::F64)
        || prog.scalars.iter().any(|t| t.dtype == DType::F64)
        || prog.stmts.iter().any(|s| s.dtype == DType::F64)
}

/// Prints one kernel's function.
fn kernel_fn(
    out: &mut String,
    prog: &Program,
    param_texts: &[String],
    dialect: GpuDialect,
    k: &DeviceKernel,
) {
    let balanced;
    let k = if dialect == GpuDialect::OpenCl {
        balanced = DeviceKernel {
            body: balance_barriers(k.body.clone()),
            ..k.clone()
        };
        &balanced
    } else {
        k
    };
    let e = kernel_emitter(prog, param_texts, &dialect, k);
    let params: Vec<String> = kernel_params(prog, param_texts, k)
        .iter()
        .map(|p| param_decl(prog, dialect, k, p))
        .collect();
    let stmts: Vec<&str> = k
        .stmts
        .iter()
        .map(|s| prog.stmts[*s].name.as_str())
        .collect();
    let _ = writeln!(
        out,
        "/* kernel {}: {}; block {} x {} x {} threads */",
        k.id,
        stmts.join(", "),
        k.block[0],
        k.block[1],
        k.block[2]
    );
    let params = if params.is_empty() {
        "void".to_string()
    } else {
        params.join(", ")
    };
    match dialect {
        GpuDialect::Cuda => {
            let _ = writeln!(
                out,
                "extern \"C\" __global__ void __launch_bounds__({}, {}) {}({params}) {{",
                k.threads(),
                min_blocks_per_sm(),
                k.name
            );
        }
        _ => {
            let _ = writeln!(
                out,
                "__kernel __attribute__((reqd_work_group_size({}, {}, {}))) void {}({params}) {{",
                k.block[0], k.block[1], k.block[2], k.name
            );
        }
    }
    let dynamic = match dialect {
        GpuDialect::Cuda => dynamic_shared_layout(prog, &e, k),
        _ => None,
    };
    if let Some(layout) = &dynamic {
        let _ = writeln!(
            out,
            "  /* {} bytes of shared memory, over CUDA's {CUDA_STATIC_SHARED_BYTES}-byte limit for static arrays: dynamic, sized by the launch */
  extern __shared__ __align__(16) unsigned char {DYNAMIC_SHARED}[];",
            layout.bytes
        );
    }
    for (i, b) in k.shared.iter().enumerate() {
        let ten = &prog.tensors[b.tensor];
        let space = dialect.shared_space();
        let dims = crate::passes::promote::dims_text(&b.sizes);
        let c = ten.dtype.c_type();
        let name = crate::codegen::cfamily::tile_name(b.promo);
        match &dynamic {
            Some(layout) => {
                let _ = writeln!(
                    out,
                    "  {c} *const {name} = ({c} *)({DYNAMIC_SHARED} + {}); /* tile of {} ({}) in shared memory */",
                    layout.offsets[i], ten.name, dims
                );
            }
            None => {
                // 16-byte aligned: vector copies and 128-bit reads of its rows.
                let align = match dialect {
                    GpuDialect::Cuda => " __align__(16)",
                    _ => " __attribute__((aligned(16)))",
                };
                // An emulating dialect's staged tiles have a shadow of each stage (see
                // `Dialect::async_land`), present when the source is built for it.
                let shadow = if e.is_staged(b.promo) && dialect.async_land(&[], "0", 1).is_some() {
                    format!("(1 + {}) * ", crate::codegen::cfamily::ASYNC_SHADOW)
                } else {
                    String::new()
                };
                let _ = writeln!(
                    out,
                    "  {space}{align} {c} {name}[{shadow}{}]; /* tile of {} ({}) in shared memory */",
                    e.tile_elems(b.promo, b.tensor),
                    ten.name,
                    dims
                );
            }
        }
    }
    out.push_str(&reduce::scratch_decls(dialect, k));
    e.node(out, &k.body, 1);
    out.push_str("}\n\n");
}

/// Whether `node` holds a block barrier (outside thread loops, where barriers are).
fn has_barrier(node: &KNode) -> bool {
    let mut found = false;
    node.walk(&mut |n| found |= matches!(n, KNode::Barrier));
    found
}

/// `node` with a barrier appended to the arm without one of every two-armed conditional
/// whose other arm has one. The conditions around barriers are uniform across the block (a
/// partial tile's test), so the extra barrier is reached by every work-item or none and
/// changes nothing by OpenCL's rules; PoCL needs it: with a barrier in one branch only,
/// it ran the other branch twice for some work-items (a GPU fuzz case, seed 4242 case
/// 167, double-counted an update there; the same kernels ran right under CUDA on an H100).
fn balance_barriers(node: KNode) -> KNode {
    match node {
        KNode::If { cond, then, els } => {
            let then = balance_barriers(*then);
            let els = els.map(|e| balance_barriers(*e));
            let in_then = has_barrier(&then);
            let in_els = els.as_ref().is_some_and(has_barrier);
            let add = |b: KNode| KNode::Block(vec![b, KNode::Barrier]);
            // (Only two-armed conditionals: a one-armed one around barriers, such as a
            // pipeline's prologue step, is what the pipeline printer looks for.)
            let (then, els) = match (in_then, els) {
                (true, Some(e)) if !in_els => (then, Some(add(e))),
                (false, Some(e)) if in_els => (add(then), Some(e)),
                (_, els) => (then, els),
            };
            KNode::If {
                cond,
                then: Box::new(then),
                els: els.map(Box::new),
            }
        }
        other => other.map_children(&mut balance_barriers),
    }
}

/// CUDA's limit on statically declared `__shared__` arrays per block, on every
/// architecture: a kernel that needs more declares one `extern __shared__` array, and its
/// launch passes the size and raises `cudaFuncAttributeMaxDynamicSharedMemorySize` (up to
/// the description's shared-memory capacity per block, which tiling already respects).
pub const CUDA_STATIC_SHARED_BYTES: u64 = 48 * 1024;

/// The name of the dynamic shared-memory array.
const DYNAMIC_SHARED: &str = "polyc_dynamic_shared";

/// Where each shared tile of a kernel lies in its dynamic shared memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DynamicShared {
    /// The byte offset of each of `DeviceKernel::shared`, in order (multiples of 16, so
    /// that 128-bit accesses stay aligned).
    pub offsets: Vec<u64>,
    /// The bytes the launch asks for.
    pub bytes: u64,
}

fn dynamic_shared_layout(prog: &Program, e: &Emitter, k: &DeviceKernel) -> Option<DynamicShared> {
    let mut offsets = Vec::with_capacity(k.shared.len());
    let mut at = 0u64;
    for b in &k.shared {
        offsets.push(at);
        let bytes = e.tile_elems(b.promo, b.tensor).max(0) as u64
            * prog.tensors[b.tensor].dtype.size_bytes() as u64;
        at += bytes.div_ceil(16) * 16;
    }
    (at > CUDA_STATIC_SHARED_BYTES).then_some(DynamicShared { offsets, bytes: at })
}

/// The dynamic shared memory a CUDA kernel's launch must pass, in bytes: 0 when its
/// shared tiles fit CUDA's static limit ([`CUDA_STATIC_SHARED_BYTES`]) and are declared
/// as `__shared__` arrays.
pub fn dynamic_shared_bytes(prog: &Program, param_texts: &[String], k: &DeviceKernel) -> u64 {
    let e = kernel_emitter(prog, param_texts, &GpuDialect::Cuda, k);
    dynamic_shared_layout(prog, &e, k).map_or(0, |l| l.bytes)
}

/// The most pipeline stages: `POLYC_PIPELINE_STAGES` (a whole number from 1, for
/// measuring; 1 turns pipelining off), else [`crate::codegen::pipeline::MAX_STAGES`]. A
/// value that is not one is ignored with a warning on standard error (once).
fn stage_cap() -> i64 {
    static WARNED: std::sync::Once = std::sync::Once::new();
    let default = crate::codegen::pipeline::MAX_STAGES;
    env_whole("POLYC_PIPELINE_STAGES", default, "stages at most", &WARNED)
}

/// The blocks per SM a CUDA kernel's `__launch_bounds__` asks for: `POLYC_MIN_BLOCKS`
/// (a whole number from 1, for measuring), else 1. ptxas then keeps the kernel's
/// registers within what that many blocks of its threads leave per thread.
fn min_blocks_per_sm() -> i64 {
    static WARNED: std::sync::Once = std::sync::Once::new();
    env_whole("POLYC_MIN_BLOCKS", 1, "block per SM", &WARNED)
}

/// The whole number from 1 in the environment variable `name`, else `default`; any other
/// value is ignored with a warning on standard error (once per variable).
fn env_whole(name: &str, default: i64, unit: &str, warned: &std::sync::Once) -> i64 {
    match std::env::var(name) {
        Err(_) => default,
        Ok(v) => match v.trim().parse::<i64>() {
            Ok(n) if n >= 1 => n,
            _ => {
                warned.call_once(|| {
                    eprintln!(
                        "polyc: warning: {name}=`{v}` is not a whole number from 1; using {default} {unit}"
                    )
                });
                default
            }
        },
    }
}

/// The stages of each pipelined loop of a kernel (empty when none is pipelined).
pub fn pipeline_stages(prog: &Program, param_texts: &[String], k: &DeviceKernel) -> Vec<i64> {
    kernel_emitter(prog, param_texts, &GpuDialect::Cuda, k).pipeline_stages()
}

/// The printer of one kernel: its register and shared tiles registered, its block set,
/// and its pipelined loops staged ([`crate::codegen::pipeline`]) with the most stages
/// (at most 4) whose tiles keep the kernel's shared memory within CUDA's static limit.
pub(crate) fn kernel_emitter<'a>(
    prog: &'a Program,
    param_texts: &[String],
    dialect: &'a GpuDialect,
    k: &DeviceKernel,
) -> Emitter<'a> {
    let mut e = Emitter::new(prog, param_texts, dialect);
    e.register_tiles(&k.body);
    e.set_block(k.block);
    if indices_fit_32_bits(prog, param_texts, k) {
        e.set_index32();
    }
    for b in &k.shared {
        e.register_buf(b);
    }
    // (Before the stages: padding changes the bytes of a stage.)
    crate::gpu::banks::choose_row_padding(&mut e, prog, param_texts, k);
    let shared: std::collections::HashSet<usize> = k.shared.iter().map(|b| b.promo).collect();
    let bytes = |b: &crate::codegen::kir::LocalBuf| {
        e.tile_elems(b.promo, b.tensor).max(0) as u64
            * prog.tensors[b.tensor].dtype.size_bytes() as u64
    };
    let single: u64 = k.shared.iter().map(bytes).sum();
    let mut pipes = crate::codegen::pipeline::find(prog, &k.body, &|p| shared.contains(&p));
    let staged: u64 = pipes
        .iter()
        .flat_map(|p| p.promos.iter())
        .filter_map(|p| k.shared.iter().find(|b| b.promo == *p))
        .map(bytes)
        .sum();
    // The stages the tile spec asks for (`64@shared:3`; over 48 KiB the tiles go to
    // dynamic shared memory, and the target has checked the capacity), else the most (up
    // to MAX_STAGES, or POLYC_PIPELINE_STAGES; 1: no pipelining) whose copies keep the
    // kernel's shared memory within CUDA's static limit.
    let stages = match k.stages {
        Some(s) => (s >= 2).then_some(s),
        None => (2..=stage_cap())
            .rev()
            .find(|s| single + (*s as u64 - 1) * staged <= CUDA_STATIC_SHARED_BYTES),
    };
    match stages {
        Some(s) => pipes.iter_mut().for_each(|p| p.stages = s),
        None => pipes.clear(),
    }
    e.set_pipelines(&pipes);
    e
}

/// The value of a size expression, `None` where it uses a symbolic size.
fn aff_value(a: &Aff, sizes: &[Option<i64>]) -> Option<i128> {
    Some(match a {
        Aff::Const(c) => i128::from(*c),
        Aff::Param(p) => i128::from((*sizes.get(*p)?)?),
        Aff::Iter(_) => return None,
        Aff::Add(x, y) => aff_value(x, sizes)? + aff_value(y, sizes)?,
        Aff::Sub(x, y) => aff_value(x, sizes)? - aff_value(y, sizes)?,
        Aff::Mul(c, x) => i128::from(*c) * aff_value(x, sizes)?,
        Aff::Neg(x) => -aff_value(x, sizes)?,
        Aff::FloorDiv(x, c) => aff_value(x, sizes)?.div_euclid(i128::from(*c)),
        Aff::Mod(x, c) => aff_value(x, sizes)?.rem_euclid(i128::from(*c)),
    })
}

/// Whether kernel `k` can use 32-bit indices: every tensor of the program holds at most
/// 2²⁹ elements, and every integer value of the kernel provably lies within ±2²⁹
/// ([`crate::codegen::ranges`]; symbolic sizes have no range, so their kernels keep
/// `int64_t`).
pub fn indices_fit_32_bits(prog: &Program, param_texts: &[String], k: &DeviceKernel) -> bool {
    use crate::codegen::ranges::{fits_in_32_bits, INDEX32_LIMIT};
    // `POLYC_INDEX64=1` (measurements only) keeps 64-bit indices everywhere.
    if std::env::var_os("POLYC_INDEX64").is_some() {
        return false;
    }
    let sizes: Vec<Option<i64>> = param_texts
        .iter()
        .take(prog.params.len())
        .map(|t| t.trim().parse::<i64>().ok())
        .collect();
    let small = prog.tensors.iter().all(|t| {
        t.shape
            .iter()
            .try_fold(1i128, |n, d| Some(n * aff_value(d, &sizes)?.max(0)))
            .is_some_and(|n| n <= INDEX32_LIMIT)
    });
    let block = k.block;
    let outer = |n: &str| -> Option<(i64, i64)> {
        if let Some(p) = prog.param_index(n) {
            return sizes.get(p).copied().flatten().map(|v| (v, v));
        }
        let d = match n {
            "polyc_tidf" => return Some((0, block.iter().product::<i64>() - 1)),
            "polyc_tid0" => 0,
            "polyc_tid1" => 1,
            "polyc_tid2" => 2,
            _ => return None,
        };
        Some((0, block[d] - 1))
    };
    small && fits_in_32_bits(&k.body, &outer)
}

/// The OpenCL C source of a module's kernels.
pub fn emit_opencl(prog: &Program, param_texts: &[String], module: &GpuModule) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "/* Generated by polyc from `def {}`: OpenCL C 1.2 kernels, launched in order. */",
        prog.name
    );
    if uses_f64(prog) {
        out.push_str("#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n");
    }
    out.push_str(OPENCL_PRELUDE);
    let _ = writeln!(
        out,
        "/* Pipelined copies land when issued, or only at their wait when built with -D{at} (a check). */\n#ifdef {at}\n#define {sh} 1\n#else\n#define {sh} 0\n#endif",
        at = crate::codegen::cfamily::ASYNC_AT_WAIT,
        sh = crate::codegen::cfamily::ASYNC_SHADOW
    );
    out.push_str(&helpers(prog, &GpuDialect::OpenCl));
    out.push_str(&reduce::helpers(
        GpuDialect::OpenCl,
        module.all_kernels().into_iter(),
    ));
    out.push('\n');
    for k in module.all_kernels() {
        kernel_fn(&mut out, prog, param_texts, GpuDialect::OpenCl, k);
    }
    out
}

/// The CUDA source: kernels and the host function (see the module docs).
pub fn emit_cuda(prog: &Program, param_texts: &[String], module: &GpuModule) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "/* Generated by polyc from `def {}`: CUDA kernels and their host launcher. */",
        prog.name
    );
    out.push_str(
        "#include <cuda_runtime.h>\n#include <cuda_pipeline.h>\n#include <stdint.h>\n#include <math.h>\n\n",
    );
    if uses_f16(prog) {
        // nvcc has no native _Float16 in device code: f16 values are __half, computed
        // in float and rounded after every operation as in the C.
        out.push_str("#include <cuda_fp16.h>\n#define _Float16 __half\n\n");
    }
    out.push_str(CUDA_INDEX);
    out.push_str(&helpers(prog, &GpuDialect::Cuda));
    out.push_str(&reduce::helpers(
        GpuDialect::Cuda,
        module.all_kernels().into_iter(),
    ));
    out.push('\n');
    for k in module.all_kernels() {
        kernel_fn(&mut out, prog, param_texts, GpuDialect::Cuda, k);
    }
    host_fn(&mut out, prog, param_texts, module);
    out
}

/// The CUDA host function's fault status parameter (a host pointer, or `NULL`).
const FAULT_STATUS: &str = "polyc_fault_status";

/// The CUDA host function.
fn host_fn(out: &mut String, prog: &Program, param_texts: &[String], module: &GpuModule) {
    let e = Emitter::new(prog, param_texts, &GpuDialect::Cuda);
    let mut params = function_params(prog, &e.bound, "");
    params.push("cudaStream_t stream".into());
    let faults = module_may_fault(prog, module);
    if faults {
        params.push(format!("int *{FAULT_STATUS}"));
    }
    let _ = writeln!(
        out,
        "/* Launches the kernels of `{}` in order on `stream`; the pointers are device pointers. */",
        prog.name
    );
    let _ = writeln!(
        out,
        "extern \"C\" cudaError_t {}({}) {{",
        c_ident(&prog.name),
        params.join(", ")
    );
    if faults {
        let _ = writeln!(
            out,
            "  int *{FAULT_PARAM} = NULL; /* 1 + the first statement that divided by zero, 0: none */\n  if (cudaMalloc((void **)&{FAULT_PARAM}, sizeof(int)) != cudaSuccess) return cudaErrorMemoryAllocation;\n  cudaMemsetAsync({FAULT_PARAM}, 0, sizeof(int), stream);"
        );
    }
    // Temporaries the kernels use in global memory.
    let mut temps: Vec<usize> = Vec::new();
    for k in &module.kernels {
        for t in k.body.global_tensors(prog) {
            if prog.temps().any(|x| x == t) && !temps.contains(&t) {
                temps.push(t);
            }
        }
    }
    temps.sort_unstable();
    for &t in &temps {
        let ten = &prog.tensors[t];
        let c = ten.dtype.c_type();
        let name = c_ident(&ten.name);
        let bytes = format!("sizeof({c}) * (size_t)polyc_max(1, {})", e.numel(t));
        let _ = writeln!(out, "  {c} *{name} = NULL;");
        let _ = writeln!(
            out,
            "  if (cudaMallocAsync((void **)&{name}, {bytes}, stream) != cudaSuccess) return cudaErrorMemoryAllocation;"
        );
        let _ = writeln!(
            out,
            "#ifdef POLYC_POISON\n  cudaMemsetAsync({name}, 0xFF, {bytes}, stream);\n#endif"
        );
    }
    host_node(out, &e, prog, param_texts, module, &module.host, 1);
    if faults {
        let _ = writeln!(
            out,
            "  if ({FAULT_STATUS} != NULL) {{\n    *{FAULT_STATUS} = 0;\n    cudaMemcpyAsync({FAULT_STATUS}, {FAULT_PARAM}, sizeof(int), cudaMemcpyDeviceToHost, stream);\n    cudaStreamSynchronize(stream);\n  }}\n  cudaFree({FAULT_PARAM});"
        );
    }
    for &t in &temps {
        let _ = writeln!(
            out,
            "  cudaFreeAsync({}, stream);",
            c_ident(&prog.tensors[t].name)
        );
    }
    out.push_str("  return cudaGetLastError();\n}\n");
}

fn indent(out: &mut String, level: usize) {
    for _ in 0..level {
        out.push_str("  ");
    }
}

fn trip_c(e: &Emitter, t: &TripExpr) -> String {
    let a = e.kexpr(&t.init, 1);
    let b = e.kexpr(&t.upper, 1);
    format!("({b} < {a} ? 0 : ({b} - {a}) / {} + 1)", t.step)
}

fn host_node(
    out: &mut String,
    e: &Emitter,
    prog: &Program,
    param_texts: &[String],
    module: &GpuModule,
    n: &KNode,
    level: usize,
) {
    match n {
        KNode::Block(v) => v
            .iter()
            .for_each(|c| host_node(out, e, prog, param_texts, module, c, level)),
        KNode::For {
            iter,
            init,
            cond,
            step,
            body,
            ..
        } => {
            indent(out, level);
            let _ = writeln!(
                out,
                "for (int64_t {iter} = {}; {}; {iter} += {step}) {{",
                e.kexpr(init, 0),
                e.kexpr(cond, 0)
            );
            host_node(out, e, prog, param_texts, module, body, level + 1);
            indent(out, level);
            out.push_str("}\n");
        }
        KNode::If { cond, then, els } => {
            indent(out, level);
            let _ = writeln!(out, "if ({}) {{", e.kexpr(cond, 0));
            host_node(out, e, prog, param_texts, module, then, level + 1);
            if let Some(x) = els {
                indent(out, level);
                out.push_str("} else {\n");
                host_node(out, e, prog, param_texts, module, x, level + 1);
            }
            indent(out, level);
            out.push_str("}\n");
        }
        KNode::Let { name, value, body } => {
            indent(out, level);
            out.push_str("{\n");
            indent(out, level + 1);
            let _ = writeln!(out, "const int64_t {name} = {};", e.kexpr(value, 0));
            host_node(out, e, prog, param_texts, module, body, level + 1);
            indent(out, level);
            out.push_str("}\n");
        }
        KNode::Device { id, .. } => {
            let k = &module.kernels[*id];
            let grid: Vec<String> = k
                .grid
                .iter()
                .map(|g| {
                    let mut terms: Vec<String> = g.trips.iter().map(|t| trip_c(e, t)).collect();
                    if g.fallback {
                        terms.push(crate::gpu::device::FALLBACK_BLOCKS.to_string());
                    }
                    terms.push("1".into());
                    terms
                        .into_iter()
                        .reduce(|a, b| format!("polyc_max({a}, {b})"))
                        .unwrap_or_else(|| "1".into())
                })
                .collect();
            let args = |k: &DeviceKernel, lo: &str, hi: &str| -> String {
                kernel_params(prog, param_texts, k)
                    .iter()
                    .map(|p| match p {
                        KernelParam::Size(i) => c_ident(&prog.params[*i].name),
                        KernelParam::Tensor(t) => c_ident(&prog.tensors[*t].name),
                        KernelParam::Scalar(s) => c_ident(&prog.scalars[*s].name),
                        KernelParam::Host(h) => h.clone(),
                        KernelParam::BlockLo => lo.to_string(),
                        KernelParam::BlockHi => hi.to_string(),
                        KernelParam::Fault => FAULT_PARAM.to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let pad = "  ".repeat(level);
            let launch = |k: &DeviceKernel,
                          grid: &[String],
                          block: [i64; 3],
                          lo: &str,
                          hi: &str| {
                let (attr, smem) = shared_launch_text(prog, param_texts, k, &format!("{pad}    "));
                format!(
                    "{{\n{pad}    dim3 polyc_grid((unsigned)({}), (unsigned)({}), (unsigned)({}));\n{pad}    dim3 polyc_block({}, {}, {});\n{attr}{pad}    {}<<<polyc_grid, polyc_block, {smem}, stream>>>({});\n{pad}  }}",
                    grid[0],
                    grid[1],
                    grid[2],
                    block[0],
                    block[1],
                    block[2],
                    k.name,
                    args(k, lo, hi),
                )
            };
            match &k.shapes {
                None => {
                    indent(out, level);
                    let (attr, smem) =
                        shared_launch_text(prog, param_texts, k, &format!("{pad}  "));
                    let _ = writeln!(
                        out,
                        "{{ /* kernel {id} */\n{pad}  dim3 polyc_grid((unsigned)({}), (unsigned)({}), (unsigned)({}));\n{pad}  dim3 polyc_block({}, {}, {});\n{attr}{pad}  {}<<<polyc_grid, polyc_block, {smem}, stream>>>({});\n{pad}}}",
                        grid[0],
                        grid[1],
                        grid[2],
                        k.block[0],
                        k.block[1],
                        k.block[2],
                        k.name,
                        args(k, "0", "0"),
                    );
                }
                Some(sh) => {
                    shaped_launch(out, e, k, sh, &grid, &launch, level);
                }
            }
        }
        other => {
            // `prepare` refuses statements outside kernels; nothing else reaches here.
            indent(out, level);
            let _ = writeln!(out, "/* unexpected host node {other:?} */");
        }
    }
}

/// A launch's dynamic shared memory: the line that raises the kernel's limit (empty when
/// it needs none) and the bytes for `<<<grid, block, bytes, stream>>>`.
fn shared_launch_text(
    prog: &Program,
    param_texts: &[String],
    k: &DeviceKernel,
    pad: &str,
) -> (String, u64) {
    let bytes = dynamic_shared_bytes(prog, param_texts, k);
    if bytes == 0 {
        return (String::new(), 0);
    }
    (
        format!(
            "{pad}cudaFuncSetAttribute((const void *){}, cudaFuncAttributeMaxDynamicSharedMemorySize, {bytes});\n",
            k.name
        ),
        bytes,
    )
}

/// Prints one launch: kernel, grid, block, and the block range's two arguments.
type LaunchText<'a> = dyn Fn(&DeviceKernel, &[String], [i64; 3], &str, &str) -> String + 'a;

/// The host code of a kernel with block shapes: the full blocks along the dynamic size in
/// one launch, the partial block in a launch of the smallest shape that covers it, when
/// that adds no wave (see [`crate::gpu::blockshape`]; `BlockShapes::plan` is the same
/// decision for the runner).
fn shaped_launch(
    out: &mut String,
    e: &Emitter,
    k: &DeviceKernel,
    sh: &crate::gpu::blockshape::BlockShapes,
    grid: &[String],
    launch: &LaunchText,
    level: usize,
) {
    let pad = "  ".repeat(level);
    let d = sh.grid_dim as usize;
    let size = e.kexpr(&KExpr::var(&sh.size.name), 1);
    let other: Vec<String> = (0..3)
        .filter(|&x| x != d)
        .map(|x| grid[x].clone())
        .collect();
    let with = |count: &str| -> Vec<String> {
        let mut g = grid.to_vec();
        g[d] = count.to_string();
        g
    };
    let shapes: Vec<String> = sh
        .shapes
        .iter()
        .enumerate()
        .map(|(i, _)| {
            let b = sh.block_of(i);
            format!("{} x {} x {}", b[0], b[1], b[2])
        })
        .collect();
    let _ = writeln!(
        out,
        "{pad}{{ /* kernel {}: block shapes along {} ({}): full blocks, then the partial one on the smallest shape that covers it when that adds no wave */",
        k.id,
        sh.size.name,
        shapes.join(", ")
    );
    let _ = writeln!(out, "{pad}  const int64_t polyc_nb = {};", grid[d]);
    let _ = writeln!(
        out,
        "{pad}  const int64_t polyc_g = ({}) * ({});",
        other[0], other[1]
    );
    let _ = writeln!(
        out,
        "{pad}  const int64_t polyc_nf = polyc_max(polyc_min({size} / {}, polyc_nb), 0);",
        sh.rows
    );
    let _ = writeln!(
        out,
        "{pad}  const int64_t polyc_rem = {size} - {} * polyc_nf;",
        sh.rows
    );
    let _ = writeln!(
        out,
        "{pad}  int64_t polyc_shape = 0, polyc_wave = {};",
        sh.per_wave[0]
    );
    for (i, &s) in sh.shapes.iter().enumerate().skip(1) {
        let _ = writeln!(
            out,
            "{pad}  if (polyc_rem <= {}) {{ polyc_shape = {i}; polyc_wave = {}; }}",
            s * sh.rows_per_thread,
            sh.per_wave[i]
        );
    }
    let w0 = sh.per_wave[0];
    let _ = writeln!(
        out,
        "{pad}  if (polyc_rem > 0 && polyc_nb == polyc_nf + 1 && polyc_shape != 0 && (polyc_nf > 0 ? (polyc_nf * polyc_g + {w0} - 1) / {w0} : 0) + (polyc_g + polyc_wave - 1) / polyc_wave <= (polyc_nb * polyc_g + {w0} - 1) / {w0}) {{"
    );
    let _ = writeln!(
        out,
        "{pad}    if (polyc_nf > 0) {}",
        launch(k, &with("polyc_nf"), sh.block_of(0), "0", "polyc_nf").replace("\n", "\n  ")
    );
    let _ = writeln!(out, "{pad}    switch (polyc_shape) {{");
    for (i, v) in sh.variants.iter().enumerate() {
        let _ = writeln!(
            out,
            "{pad}    case {}: {} break;",
            i + 1,
            launch(
                v,
                &with("1"),
                sh.block_of(i + 1),
                "polyc_nf",
                "polyc_nf + 1"
            )
            .replace("\n", "\n  ")
        );
    }
    let _ = writeln!(out, "{pad}    }}");
    let _ = writeln!(
        out,
        "{pad}  }} else {}",
        launch(k, &with("polyc_nb"), sh.block_of(0), "0", "polyc_nb")
    );
    let _ = writeln!(out, "{pad}}}");
}
