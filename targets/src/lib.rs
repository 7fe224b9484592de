//! polyc's targets: target descriptions, the shared passes after scheduling, the shared code
//! generator, one folder per target, and the registry that picks a target for a
//! description. See `ARCHITECTURE.md` at the repository root for the rule of which layer
//! may import which.
//!
//! Shared, target-independent layers (they never import a target folder):
//! - [`desc`]: target descriptions (`specs/targets/*.yaml`): buffers, scopes, capacities.
//! - [`target`]: the [`Target`] trait every target implements, and what it is given.
//! - [`passes`]: tiling, post-tiling fusion, memory promotion (with hoisting and loop
//!   interchange), and what a pass sees ([`passes::PassCx`]).
//! - [`codegen`]: the kernel IR, lowering from isl's AST, normalisation, the micro-kernels
//!   of dynamic shapes and the C-family printer.
//! - [`scratch`]: temporary folders and child processes, registered so that an interrupted
//!   polyc removes and stops them, and a later one sweeps the folders of a dead one.
//!
//! Targets (each implements [`Target`] in its own folder):
//! - [`cpu`]: C with parallel loops, built with the system C compiler and loaded
//!   in-process.
//! - [`gpu`]: blocks and threads, shared memory and registers, CUDA and OpenCL, and their
//!   runtimes.
//! - [`gemmini`]: the Gemmini NPU: recognition, instruction programs, its functional model
//!   and host header.
//! - [`npu`]: the analysis-only kind (tiling, fusion and promotion are explained; no code).
//!
//! Above them, [`registry`] picks the implementation for a description's kind.
#![warn(missing_docs)]

pub mod codegen;
pub mod cpu;
pub mod desc;
#[cfg(feature = "gemmini")]
pub mod gemmini;
#[cfg(feature = "gpu")]
pub mod gpu;
pub mod npu;
pub mod passes;
pub mod registry;
pub mod scratch;
pub mod target;

pub use codegen::cfamily::EmitOptions;
pub use codegen::kir::{Intrinsic, IntrinsicArg, KCmp, KExpr, KNode, Kernel, LoopKind};
pub use codegen::lower::lower;
pub use cpu::parallel::mark_outer_parallel;
pub use cpu::{compile_c, emit_c, run, CcOptions, CompiledKernel, CpuTarget};
pub use registry::target_for;
pub use target::{BuildInput, Device, Executable, PromoteSettings, RewriteCx, RunStats, Target};
