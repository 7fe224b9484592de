//! polyc's polyhedral core.
//!
//! - [`barvinok`]: exact symbolic counts (Ehrhart quasi-polynomials) through barvinok, loaded at run time.
//! - [`qpoly`]: quasi-polynomials read back from isl text, factored for display, evaluated.
//! - [`ir`]: the resolved, typed program every stage works from.
//! - [`lang`]: the `.tc` front end (lexer, parser, semantic analysis, range inference).
//! - [`isl`]: the isl context and the FFI declarations `isl-rs` lacks.
//! - [`scop`]: the polyhedral model (domains, accesses, tensors) built on isl.
//! - [`deps`]: RAW/WAR/WAW dependences from isl's dataflow analysis, and the legality check.
//! - [`sched`]: schedulers (`initial`, `isl`).
//! - [`sched_scaled`]: isl's scheduler at scaled-down sizes, carried over to the real ones.
//! - [`order`]: warnings for programs whose comprehension order likely differs from a loop nest's.
//! - [`data`], [`npy`], [`interp`]: tensor values, `.npy` I/O, the reference interpreter.
//! - [`diag`]: located diagnostics.
//! - [`limits`]: the magnitudes 64-bit index arithmetic holds, proven with isl.
//! - [`substeps`]: named sub-step timings of the stages (`--timings`).
//! - [`files`]: inputs (`-` is standard input, sizes capped) and outputs that never overwrite an input.
#![warn(missing_docs)]

pub mod barvinok;
pub mod cse;
pub mod data;
pub mod deps;
pub mod diag;
pub mod files;
pub mod ilp;
pub mod interp;
pub mod ir;
pub mod isl;
pub mod lang;
pub mod limits;
pub mod npy;
pub mod order;
pub mod program_order;
pub mod qpoly;
pub mod sched;
pub mod sched_aligned;
pub mod sched_bands;
pub mod sched_compute;
pub mod sched_loops;
pub mod sched_parallel;
pub mod sched_parametric;
pub mod sched_phases;
pub mod sched_scaled;
pub mod sched_workers;
pub mod scop;
pub mod substeps;
