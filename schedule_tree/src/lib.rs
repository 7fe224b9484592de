//! A typed Rust view of isl schedule trees.
//!
//! - [`tree`]: [`NodeKind`], [`Band`], [`Node`], [`ScheduleTree`] and the [`Pass`] trait.
//! - [`mark`]: typed marks ([`Mark`], [`Buffer`]) and their isl names.
//! - conversion to and from isl ([`ScheduleTree::from_isl`], [`ScheduleTree::to_isl`],
//!   [`ScheduleTree::to_isl_yaml`]), loading a user's YAML file
//!   ([`ScheduleTree::from_yaml_file`]), and the dumps ([`ScheduleTree::to_tree_text`],
//!   [`ScheduleTree::to_dot`]).
#![warn(missing_docs)]

mod convert;
mod isl_text;
mod load;
pub mod mark;
mod messages;
pub mod text;
pub mod tree;

pub use convert::leaf_under_marks;
pub use mark::{level_of, Buffer, BufferRole, Holds, Level, Mark};
pub use tree::{Band, Node, NodeKind, Pass, ScheduleTree};
