//! The compiler as a library, each file one step of it; modules depend downwards only:
//! [`driver`] → [`tile_search`] → [`stages`] → [`options`].
//!
//! - [`options`]: the immutable [`options::CompileOptions`] the CLI parses flags into.
//! - [`stages`]: parse → model → dependences → schedule ([`stages::analyse`]), then the
//!   target's passes → lowering → emission ([`stages::finish`]), keeping the schedule tree
//!   of every stage for `polyc dump` and `--load-tree`.
//! - [`tile_search`]: the tile-size search between the two halves (`--search
//!   model|measure`), which calls [`stages::finish`] as an evaluator.
//! - [`driver`]: [`driver::compile`] (the halves with the search between them) and
//!   [`driver::build`].
//! - [`shard`]: the cost-balanced partition behind `--shard` and `--search-shard`.
//! - [`host`]: the machine a measurement ran on.
//! - [`progress`]: progress notes on long compiles.
//! - [`timing_report`]: the `--timings` report (steps, sub-steps, the slowest).

pub mod driver;
pub mod host;
pub mod options;
pub mod progress;
pub mod shard;
pub mod stages;
pub mod tile_search;
pub mod timing_report;
