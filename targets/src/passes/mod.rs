//! The shared tree-to-tree passes: tiling, post-tiling fusion and memory promotion (with
//! hoisting and loop interchange), and what every pass sees ([`PassCx`]).
//!
//! Every pass is a value with a name (the stage name `polyc dump --stage` and
//! `--load-tree STAGE=FILE` use) and `run(tree, cx) -> tree`. A target's
//! [`crate::Target::passes`] lists them in order; the pipeline runs them and records the
//! tree after each. Passes never ask which target they run for, and never import a target
//! folder: what differs between targets comes through [`PassCx`].

pub mod assumed_sizes;
pub mod cx;
pub mod hoist;
pub mod interchange;
pub mod promote;
pub mod stages;

pub use cx::{PassCx, SpecAndFile, TileFusion, TilingPolicy};
pub use stages::{Fuse, Promote, Tile};
