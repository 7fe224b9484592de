//! Gemmini (UC Berkeley's systolic-array NPU): the target, and its verification substrate.
//!
//! - [`recognise`]: GEMMs (plain, transposed, batched) and convolutions (implicit
//!   im2col, strided, padded) recognised from the access relations.
//! - [`codegen`]: their instruction programs as kernel IR (tiles, banks, double buffering).
//! - [`target`]: [`GemminiTarget`], the [`crate::Target`] for descriptions of kind `gemmini`.
//! - [`run`]: running on the functional model (kernel IR interpreted, or the emitted C on
//!   the host header) and counting without running.
//! - [`tree`]: the `tensorised` schedule tree (tiles, buffer marks, tensorised blocks)
//!   of the same plan.
//! - [`cost`]: the `explain` report with BACO's latency, energy and EDP.
//! - [`model`]: a functional model of the Gemmini ISA in Rust (state, instructions,
//!   scaling, rounding, saturation, both dataflows, counters).
//! - [`host`]: a C header of our own ([`host::HOST_H`]) that implements `gemmini.h`'s
//!   macro names over the model, and the runner that builds such C with the system compiler
//!   and runs it on a model instance.

pub mod codegen;
pub mod cost;
pub mod dialect;
pub mod host;
pub mod model;
pub mod recognise;
pub mod run;
pub mod target;
pub mod tree;

#[cfg(test)]
mod model_tests;

pub use target::GemminiTarget;
