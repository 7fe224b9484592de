//! A typed Rust view of isl schedule trees.
#![warn(missing_docs)]

pub mod mark;
pub use mark::{Buffer, Mark};
