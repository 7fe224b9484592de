//! Launch plans: what the GPU emitters hand to the runners.
//!
//! A plan is a list of [`Launch`]es run in order on one device, over a slice of byte
//! buffers that the caller owns (`buffers: &mut [&mut [u8]]`). Both runners,
//! [`crate::gpu::opencl_runner::run_opencl`] and [`crate::gpu::cuda_tools::run_cuda`], take the
//! same plan:
//!
//! - each host buffer becomes one device buffer of the same length (at least one byte, so
//!   that empty tensors work), filled with the host bytes before the first launch and
//!   copied back to the host after the last one;
//! - the launches run in order, each one seeing the device writes of those before it;
//! - [`Launch::grid`] counts blocks (CUDA) or work-groups (OpenCL) per dimension x, y, z,
//!   and [`Launch::block`] counts threads (work-items) per block per dimension. OpenCL's
//!   global size is therefore `grid[d] * block[d]` and its local size `block[d]`;
//! - a launch whose grid has a zero dimension has no work and is skipped (CUDA and
//!   OpenCL 1.2 both reject empty grids, while a zero-sized tensor is legal in polyc);
//! - a block dimension of zero, or a [`LaunchArg::Buffer`] index past the end of the
//!   buffer slice, is an error naming the launch (it is a bug in whoever built the plan).
//!
//! Scalars are passed by value with the C type named in [`LaunchArg`]; a kernel's
//! parameter list must match the argument list exactly, in order and type.

use miette::{miette, Result};

/// One kernel launch.
#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    /// The kernel's symbol name: the `__kernel` function name in OpenCL C, the
    /// `__global__` function's symbol in the PTX for CUDA (declare kernels `extern "C"`
    /// so that the symbol is the plain name).
    pub kernel: String,
    /// Number of blocks (work-groups) per dimension x, y, z.
    pub grid: [usize; 3],
    /// Number of threads (work-items) per block per dimension x, y, z.
    pub block: [usize; 3],
    /// The kernel's arguments, in parameter order.
    pub args: Vec<LaunchArg>,
    /// Dynamic shared memory in bytes (CUDA: the launch's third parameter, with the
    /// kernel's `MAX_DYNAMIC_SHARED_SIZE_BYTES` raised to it; 0 for kernels whose shared
    /// arrays are static). OpenCL kernels declare their local arrays and ignore it.
    pub dynamic_shared: usize,
}

/// One kernel argument.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LaunchArg {
    /// A device buffer: the index of a host buffer in the `buffers` slice given to the
    /// runner. The kernel parameter is a pointer (`__global T*` in OpenCL, `T*` in CUDA).
    Buffer(usize),
    /// A `long` (OpenCL) / `long long` or `int64_t` (CUDA) by value.
    I64(i64),
    /// An `int` by value.
    I32(i32),
    /// A `float` by value.
    F32(f32),
    /// A `double` by value (OpenCL needs `cl_khr_fp64` on the device).
    F64(f64),
    /// A `char` / `signed char` by value.
    I8(i8),
    /// A `half` (OpenCL, needs `cl_khr_fp16`) / `__half` (CUDA) by value.
    F16(half::f16),
}

impl LaunchArg {
    /// The argument's C type, for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            LaunchArg::Buffer(_) => "buffer",
            LaunchArg::I64(_) => "int64",
            LaunchArg::I32(_) => "int32",
            LaunchArg::F32(_) => "float",
            LaunchArg::F64(_) => "double",
            LaunchArg::I8(_) => "int8",
            LaunchArg::F16(_) => "half",
        }
    }
}

impl Launch {
    /// The total number of work-items per dimension (OpenCL's global size):
    /// `grid[d] * block[d]`, or `None` if a product overflows `usize`.
    pub fn global_size(&self) -> Option<[usize; 3]> {
        Some([
            self.grid[0].checked_mul(self.block[0])?,
            self.grid[1].checked_mul(self.block[1])?,
            self.grid[2].checked_mul(self.block[2])?,
        ])
    }

    /// Threads per block (`block[0] * block[1] * block[2]`, saturating).
    pub fn threads_per_block(&self) -> usize {
        self.block
            .iter()
            .fold(1usize, |acc, &b| acc.saturating_mul(b))
    }

    /// `true` when the grid has a zero dimension: the launch has no work and the runners
    /// skip it.
    pub fn is_empty(&self) -> bool {
        self.grid.contains(&0)
    }

    /// Checks the launch against a plan with `n_buffers` buffers: block dimensions are at
    /// least 1, buffer indices exist, the global size fits in `usize`, and the kernel name
    /// is a non-empty identifier.
    pub fn validate(&self, n_buffers: usize) -> Result<()> {
        let ident = !self.kernel.is_empty()
            && !self.kernel.starts_with(|c: char| c.is_ascii_digit())
            && self
                .kernel
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ident {
            return Err(miette!(
                "launch plan: kernel name `{}` is not an identifier (this is a bug in polyc's \
                 GPU emitter if it made the plan)",
                self.kernel.escape_debug()
            ));
        }
        if self.block.contains(&0) {
            return Err(miette!(
                "launch plan: kernel `{}` has a zero block dimension {:?} (this is a bug in \
                 polyc's GPU emitter if it made the plan)",
                self.kernel,
                self.block
            ));
        }
        if self.global_size().is_none() {
            return Err(miette!(
                "launch plan: kernel `{}`: grid {:?} times block {:?} overflows",
                self.kernel,
                self.grid,
                self.block
            ));
        }
        for (i, arg) in self.args.iter().enumerate() {
            if let LaunchArg::Buffer(b) = arg {
                if *b >= n_buffers {
                    return Err(miette!(
                        "launch plan: kernel `{}` argument {i} names buffer {b}, but only {} \
                         buffers were given (this is a bug in polyc's GPU emitter if it made \
                         the plan)",
                        self.kernel,
                        n_buffers
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Checks every launch of a plan with [`Launch::validate`].
pub fn validate_plan(launches: &[Launch], n_buffers: usize) -> Result<()> {
    launches.iter().try_for_each(|l| l.validate(n_buffers))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(kernel: &str, grid: [usize; 3], block: [usize; 3], args: Vec<LaunchArg>) -> Launch {
        Launch {
            dynamic_shared: 0,
            kernel: kernel.into(),
            grid,
            block,
            args,
        }
    }

    #[test]
    fn global_size_multiplies_grid_and_block() {
        let l = launch("k", [3, 2, 1], [16, 8, 1], vec![]);
        assert_eq!(l.global_size(), Some([48, 16, 1]));
        assert_eq!(l.threads_per_block(), 128);
        assert!(!l.is_empty());
        assert!(launch("k", [0, 2, 1], [16, 8, 1], vec![]).is_empty());
    }

    #[test]
    fn validation_errors_name_the_problem() {
        let bad_buf = launch("k", [1, 1, 1], [1, 1, 1], vec![LaunchArg::Buffer(2)]);
        let e = bad_buf.validate(2).unwrap_err().to_string();
        assert!(
            e.contains("argument 0 names buffer 2, but only 2 buffers"),
            "{e}"
        );
        let zero_block = launch("k", [1, 1, 1], [0, 1, 1], vec![]);
        let e = zero_block.validate(0).unwrap_err().to_string();
        assert!(e.contains("zero block dimension [0, 1, 1]"), "{e}");
        let bad_name = launch("k\0x", [1, 1, 1], [1, 1, 1], vec![]);
        assert!(bad_name.validate(0).is_err());
        let overflow = launch("k", [usize::MAX, 1, 1], [2, 1, 1], vec![]);
        assert!(overflow
            .validate(0)
            .unwrap_err()
            .to_string()
            .contains("overflows"));
        assert!(validate_plan(&[launch("ok_1", [1, 1, 1], [1, 1, 1], vec![])], 0).is_ok());
    }
}
