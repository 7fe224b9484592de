//! The GPU's two languages: CUDA C++ device code and OpenCL C 1.2 kernels. Both run as
//! threads of a block: `__syncthreads()` or `barrier(…)` between block-wide steps, the
//! hardware `expf`, `#pragma unroll`, and a fault status passed to every kernel.

use crate::codegen::cfamily::{Dialect, DivisionFault};

/// Which GPU language a printer writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GpuDialect {
    /// CUDA C++ device code.
    Cuda,
    /// OpenCL C 1.2 kernels.
    OpenCl,
}

/// The comment both languages put before the integer-division helpers.
const FAULT_COMMENT: &str =
    "/* f: the kernel's fault status, 1 + the first statement that divided by zero (0: none). */\n";

impl GpuDialect {
    /// The address space of global-memory pointers (`__global ` in OpenCL).
    pub fn global_space(self) -> &'static str {
        match self {
            GpuDialect::Cuda => "",
            GpuDialect::OpenCl => "__global ",
        }
    }
    /// The address space of a block's shared-memory tiles.
    pub fn shared_space(self) -> &'static str {
        match self {
            GpuDialect::Cuda => "__shared__",
            GpuDialect::OpenCl => "__local",
        }
    }
}

impl Dialect for GpuDialect {
    fn fn_prefix(&self) -> &'static str {
        match self {
            GpuDialect::Cuda => "static __host__ __device__ __forceinline__",
            GpuDialect::OpenCl => "static inline",
        }
    }
    fn restrict(&self) -> &'static str {
        match self {
            GpuDialect::Cuda => "__restrict__",
            GpuDialect::OpenCl => "restrict",
        }
    }
    fn exp_f32(&self) -> &'static str {
        "expf"
    }
    fn exp_f32_helper(&self) -> Option<&'static str> {
        None
    }
    fn unroll_pragma(&self, _trip: i64) -> String {
        "#pragma unroll".into()
    }
    fn parallel_pragma(&self) -> Option<&'static str> {
        None
    }
    fn block_sync(&self) -> &'static str {
        match self {
            GpuDialect::Cuda => "__syncthreads();",
            GpuDialect::OpenCl => "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);",
        }
    }
    fn async_copy(&self, dst: &str, src: &str, bytes: usize) -> Option<String> {
        match self {
            // cp.async copies 4, 8 or 16 bytes (sm_80 and later; cuda_pipeline.h copies
            // synchronously on older devices).
            GpuDialect::Cuda if matches!(bytes, 4 | 8 | 16) => {
                Some(format!("__pipeline_memcpy_async(&{dst}, &{src}, {bytes});"))
            }
            _ => None,
        }
    }
    fn vector_copy(&self, dst: &str, src: &str) -> Option<String> {
        // 16 bytes as four 32-bit words, whatever the element type.
        Some(match self {
            GpuDialect::Cuda => format!("*(uint4 *)&{dst} = *(const uint4 *)&{src};"),
            // `POLYC_VECTOR_COPY_FAULT=1` (tests only) reads one element further, to show
            // that `run --check` sees the vector copies.
            GpuDialect::OpenCl if std::env::var_os("POLYC_VECTOR_COPY_FAULT").is_some() => {
                format!(
                    "vstore4(vload4(0, (__global const uint *)(&{src} + 1)), 0, (__local uint *)&{dst});"
                )
            }
            GpuDialect::OpenCl => format!(
                "vstore4(vload4(0, (__global const uint *)&{src}), 0, (__local uint *)&{dst});"
            ),
        })
    }
    fn async_commit(&self) -> Option<&'static str> {
        match self {
            GpuDialect::Cuda => Some("__pipeline_commit();"),
            GpuDialect::OpenCl => None,
        }
    }
    fn async_wait_prior(&self, pending: i64) -> Option<String> {
        match self {
            GpuDialect::Cuda => Some(format!("__pipeline_wait_prior({pending});")),
            GpuDialect::OpenCl => None,
        }
    }
    fn async_land(&self, tiles: &[(String, i64)], stage: &str, stages: i64) -> Option<String> {
        match self {
            GpuDialect::Cuda => None,
            GpuDialect::OpenCl => Some(opencl_land(tiles, stage, stages)),
        }
    }
    fn division_fault(&self) -> DivisionFault {
        match self {
            GpuDialect::Cuda => DivisionFault {
                preamble: FAULT_COMMENT,
                prefix: "static __device__ __forceinline__",
                param: ", int *f",
                record: "atomicCAS(f, 0, s + 1); ",
            },
            GpuDialect::OpenCl => DivisionFault {
                preamble: FAULT_COMMENT,
                prefix: "static inline",
                param: ", __global int *f",
                record: "atomic_cmpxchg(f, 0, s + 1); ",
            },
        }
    }
    fn device_code(&self) -> bool {
        true
    }
    fn unfused_mul_names(&self) -> Option<[&'static str; 2]> {
        match self {
            GpuDialect::Cuda => Some(["__fmul_rn", "__dmul_rn"]),
            GpuDialect::OpenCl => None,
        }
    }
}

/// OpenCL's emulated wait (see [`Dialect::async_land`]): with the copies landing at their
/// wait, every work-item's shadow copies are complete (a barrier), then the work-group
/// moves stage `stage` of each tile into place; the pipeline's own barrier follows.
fn opencl_land(tiles: &[(String, i64)], stage: &str, stages: i64) -> String {
    use crate::codegen::cfamily::ASYNC_SHADOW;
    let mut out = format!("#if {ASYNC_SHADOW} /* the copies of this step land now */\n");
    out.push_str("barrier(CLK_LOCAL_MEM_FENCE);\n");
    for (name, one) in tiles {
        out.push_str(&format!(
            "for (int polyc_e = (int)(get_local_id(0) + get_local_size(0) * (get_local_id(1) + get_local_size(1) * get_local_id(2))); \
             polyc_e < {one}; polyc_e += (int)(get_local_size(0) * get_local_size(1) * get_local_size(2))) \
             {name}[({stage}) * {one} + polyc_e] = {name}[(({stage}) + {stages}) * {one} + polyc_e];\n"
        ));
    }
    out.push_str("#endif\n");
    out
}
