//! Gemmini (UC Berkeley's systolic-array NPU): the verification substrate.
//!
//! - [`model`]: a functional model of the Gemmini ISA in Rust (state, instructions,
//!   scaling, rounding, saturation, both dataflows, counters).
//! - [`host`]: a C header of our own ([`host::HOST_H`]) that implements `gemmini.h`'s
//!   macro names over the model, and the runner that builds such C with the system compiler
//!   and runs it on a model instance.

pub mod host;
pub mod model;

#[cfg(test)]
mod model_tests;
