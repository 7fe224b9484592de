//! polyc's targets: the kernel IR, lowering from schedule trees, emitters and runners.
//!
//! - [`kir`]: the kernel IR (loops, guards, statement instances).
//! - [`mod@lower`]: schedule tree → kernel IR with isl's AST generator (marks are honoured).
//! - [`parallel`]: the `mark_outer_parallel` pass.
//! - [`interchange`]: point-band permutation so that the innermost loop vectorises.
//! - [`c`]: the C emitter; its module documentation is the contract of the emitted C.
//! - [`cpu_runner`]: compile with the system C compiler, load, run.
//! - [`gpu_launch`]: GPU launch plans (kernel, grid, block, arguments) shared by the runners.
//! - [`opencl_runner`]: run OpenCL C on any OpenCL device (PoCL without a GPU).
//! - [`cuda_tools`]: find nvcc, compile CUDA (ptxas resource report, PTX), run PTX via cudarc.
//! - [`gemmini`]: the Gemmini NPU's functional model and host header (verification substrate).
//! - [`gpu`]: the GPU target (mapping, shared memory and registers, CUDA and OpenCL).
//! - [`target`]: targets are data plus the [`Target`] trait: passes and drivers hold a
//!   `&dyn Target` and never branch on a target's kind or a buffer's name.
//! - [`passes`]: the schedule-tree passes targets compose.
//! - [`scratch`]: temporary folders and child processes, registered so that an interrupted
//!   polyc removes and stops them, and a later one sweeps the folders of a dead one.
#![warn(missing_docs)]

pub mod c;
pub mod cpu_runner;
pub mod cuda_tools;
pub mod desc;
pub mod gemmini;
pub mod gpu;
pub mod gpu_launch;
pub mod hoist;
pub mod interchange;
pub mod kir;
pub mod lower;
pub mod microkernel;
pub mod normalize;
pub mod opencl_runner;
pub mod parallel;
pub mod passes;
pub mod promote;
pub mod scratch;
pub mod target;

pub use c::{emit_c, EmitOptions};
pub use cpu_runner::{compile_c, run, CcOptions, CompiledKernel, RunStats};
pub use kir::{Intrinsic, IntrinsicArg, KCmp, KExpr, KNode, Kernel, LoopKind};
pub use lower::lower;
pub use parallel::mark_outer_parallel;
pub use target::{target_for, BuildInput, CpuTarget, PromoteSettings, RewriteCx, Target};

use polyhedral::data::TensorData;
use polyhedral::ir::Program;

/// A kernel built for a target, ready to run.
pub trait Executable {
    /// Runs the kernel on `tensors` (indexed by `TensorId`; temporaries are ignored) and
    /// `scalars` (indexed by `ScalarId`), with `sizes` holding every size's value.
    fn run(
        &self,
        prog: &Program,
        sizes: &[i64],
        tensors: &mut [TensorData],
        scalars: &[TensorData],
    ) -> miette::Result<RunStats>;
}

impl Executable for CompiledKernel {
    fn run(
        &self,
        prog: &Program,
        sizes: &[i64],
        tensors: &mut [TensorData],
        scalars: &[TensorData],
    ) -> miette::Result<RunStats> {
        cpu_runner::run(self, prog, sizes, tensors, scalars)
    }
}
