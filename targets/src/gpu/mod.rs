//! The GPU target: schedule trees mapped to blocks and threads, shared memory and
//! registers placed at memory marks, CUDA and OpenCL printed from one kernel IR, and
//! kernels run through OpenCL (PoCL on machines without a GPU) or CUDA where a driver
//! exists.
//!
//! - [`banks`]: bank-conflict degrees of every shared-memory access.
//! - [`map`]: the `mapped` pass (kernel and thread marks).
//! - [`policy`]: the default tiling policy.
//! - [`reduce`]: the device helpers of block reductions.
//! - [`rows`]: row kernels (softmax, layer norm): a block per row, reductions across its threads.
//! - [`device`]: the host/device split, block and grid sizes, barriers, guards.
//! - [`module`]: the data of a GPU program: device kernels, grids, block shapes.
//! - [`blockshape`]: block shapes along a dynamic size, composed at launch.
//! - [`emit`]: CUDA and OpenCL, and their calling conventions.
//! - [`run`]: launching on a device, with the same tensors the CPU runner takes.
//! - [`launch`], [`opencl_runner`], [`cuda_tools`]: the OpenCL and CUDA runtimes and
//!   tools (nvcc, ptxas, the driver).
//! - [`target`]: [`GpuTarget`], the pass list and the implementation of the target trait.

pub mod banks;
pub mod blockshape;
pub mod cuda_tools;
pub mod device;
pub mod dialect;
pub mod emit;
pub mod launch;
pub mod map;
pub mod module;
pub mod opencl_runner;
pub mod policy;
pub mod reduce;
pub mod report;
pub mod rows;
pub mod run;
pub mod target;
pub mod timing;

pub use device::{prepare, DeviceKernel, GpuModule};
pub use target::{GpuTarget, MapGpu};
