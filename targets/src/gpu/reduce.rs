//! Block reductions: the device helpers behind [`Mark::Reduce`](schedule_tree::Mark)
//! (see [`crate::gpu::rows`]).
//!
//! Lowering leaves, around a reduction spread over a block's threads, two calls that every
//! thread of the block makes: `polyc_reduce_init(acc, identity)` before the thread loop
//! and `polyc_block_reduce_<op>_<type>(acc, dst, scratch)` after it. The combine leaves
//! `*dst = *dst op (the block's partial results)`, written by thread 0, and ends with a
//! block barrier, so every thread then reads the new value. `scratch` is a kernel-scope
//! array in shared (local) memory with one element per thread of the block,
//! `polyc_red_<type>`.

use std::collections::BTreeSet;
use std::fmt::Write;

use crate::codegen::kir::KNode;
use crate::gpu::device::DeviceKernel;
use crate::gpu::dialect::GpuDialect;

/// The prefix of the combine calls.
const COMBINE: &str = "polyc_block_reduce_";

/// Threads per block of a kernel with a block reduction (at most).
pub const REDUCE_THREADS: i64 = 256;

/// The type suffixes (`f32`, `f64`) of the block reductions in `body`.
pub fn reduce_types(body: &KNode) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    body.walk(&mut |n| {
        if let KNode::Intrinsic(call) = n {
            if let Some(rest) = call.name.strip_prefix(COMBINE) {
                if let Some((_, ty)) = rest.rsplit_once('_') {
                    out.insert(ty.to_string());
                }
            }
        }
    });
    out
}

fn c_type(suffix: &str) -> &'static str {
    if suffix == "f64" {
        "double"
    } else {
        "float"
    }
}

/// The helpers for the block reductions of `kernels`, empty when there are none.
pub fn helpers<'a>(dialect: GpuDialect, kernels: impl Iterator<Item = &'a DeviceKernel>) -> String {
    let types: BTreeSet<String> = kernels.flat_map(|k| reduce_types(&k.body)).collect();
    if types.is_empty() {
        return String::new();
    }
    let cuda = dialect == GpuDialect::Cuda;
    let (prefix, sync, tid, ntid) = if cuda {
        (
            "static __device__ __forceinline__",
            "__syncthreads();",
            "(int)polyc_tidf",
            "(int)polyc_ntidf",
        )
    } else {
        (
            "static inline",
            "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);",
            "(int)polyc_tidf",
            "(int)polyc_ntidf",
        )
    };
    let loc = if cuda { "" } else { "__local " };
    let mut s = String::from(
        "\n/* Block reductions: every thread of the block calls them. polyc_block_total_* leaves the\n   block's total in thread 0; polyc_block_reduce_* combines it into *dst (any memory), then\n   a barrier. */\n#define polyc_reduce_init(acc, v) ((acc)[0] = (v))\n",
    );
    for ty in &types {
        let c = c_type(ty);
        for (op, expr) in [
            ("add", "a + b"),
            ("mul", "a * b"),
            ("max", "a > b ? a : b"),
            ("min", "a < b ? a : b"),
        ] {
            let _ = writeln!(
                s,
                "{prefix} {c} polyc_red_{op}_{ty}({c} a, {c} b) {{ return {expr}; }}"
            );
            let _ = writeln!(
                s,
                "{prefix} {c} polyc_block_total_{op}_{ty}({c} v, {loc}{c} *scratch) {{\n  const int t = {tid}, n = {ntid};"
            );
            if cuda {
                // Whole warps: shuffles within each, one value per warp in shared memory.
                let _ = writeln!(
                    s,
                    "  if ((n & 31) == 0) {{\n    for (int o = 16; o > 0; o >>= 1) v = polyc_red_{op}_{ty}(v, __shfl_xor_sync(0xffffffffu, v, o));\n    if ((t & 31) == 0) scratch[t >> 5] = v;\n    {sync}\n    if (t == 0) for (int w = 1; w < (n >> 5); w++) v = polyc_red_{op}_{ty}(v, scratch[w]);\n    return v;\n  }}"
                );
            }
            // Any block: a tree over the threads' values. (`POLYC_BLOCK_REDUCE_FAULT`
            // leaves out the last step, so that a test can show `--check` catches it.)
            let last = if std::env::var_os("POLYC_BLOCK_REDUCE_FAULT").is_some() {
                2
            } else {
                1
            };
            let _ = writeln!(
                s,
                "  scratch[t] = v;\n  {sync}\n  for (int m = n; m > {last};) {{\n    const int h = (m + 1) >> 1;\n    if (t < m - h) scratch[t] = polyc_red_{op}_{ty}(scratch[t], scratch[t + h]);\n    {sync}\n    m = h;\n  }}\n  return scratch[0];\n}}"
            );
            let _ = writeln!(
                s,
                "#define {COMBINE}{op}_{ty}(acc, dst, scratch) do {{ const {c} polyc_total = polyc_block_total_{op}_{ty}((acc)[0], scratch); if ({tid} == 0) *(dst) = polyc_red_{op}_{ty}(*(dst), polyc_total); {sync} }} while (0)"
            );
        }
    }
    s
}

/// The kernel-scope scratch arrays of `k`'s block reductions.
pub fn scratch_decls(dialect: GpuDialect, k: &DeviceKernel) -> String {
    let mut s = String::new();
    for ty in reduce_types(&k.body) {
        let _ = writeln!(
            s,
            "  {} {} polyc_red_{ty}[{}]; /* partial results of block reductions */",
            dialect.shared_space(),
            c_type(&ty),
            k.threads().max(1)
        );
    }
    s
}
