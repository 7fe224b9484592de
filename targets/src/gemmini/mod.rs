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
pub mod host;
pub mod model;
pub mod recognise;
pub mod run;
pub mod target;
pub mod tree;

pub use target::GemminiTarget;

use miette::{miette, Result};
use polyhedral::ir::{DType, Program};

use crate::desc::TargetDesc;

/// Checks that the description can hold the program's data: an integer program needs an
/// integer Gemmini (`gemmini`), a float program a float one (`gemmini-fp32`).
pub fn check_types(prog: &Program, desc: &TargetDesc, elem: DType, acc: DType) -> Result<()> {
    let float_target = elem.is_float() || acc.is_float();
    for t in &prog.tensors {
        if t.dtype.is_float() != float_target {
            let (want, holds) = if t.dtype.is_float() {
                ("gemmini-fp32", "floats (f32)")
            } else {
                ("gemmini", "int8 operands and int32 results")
            };
            return Err(miette!(
                help = format!("compile for --target {want}, whose description holds {holds}"),
                "tensor `{}` of `{}` is {}, which target `{}` cannot hold (its scratchpad holds {elem}, its accumulator {acc})",
                t.name,
                prog.name,
                t.dtype,
                desc.name
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod model_tests;
