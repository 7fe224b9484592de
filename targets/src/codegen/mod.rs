//! The shared code generator: the kernel IR every target lowers to ([`kir`]), lowering
//! from isl's AST ([`lower`]), its normalisation ([`normalize`]), the micro-kernels of
//! dynamic shapes ([`microkernel`]) and the C-family printer ([`cfamily`]) that each target
//! specialises with its dialect.

pub mod affine;
pub mod ceval;
pub mod cfamily;
pub mod contract;
pub mod kir;
pub mod lower;
pub mod microkernel;
pub mod normalize;
pub mod pipeline;
pub mod ranges;
