//! polyc: the library pipeline behind the `polyc` binary.
//!
//! The CLI (`src/main.rs`) parses flags into an immutable [`options::CompileOptions`] and
//! calls into this library:
//!
//! - [`pipeline`]: parse → model → dependences → schedule, then the target's passes →
//!   lowering → emission, keeping the schedule tree of every stage for `polyc dump` and
//!   `--load-tree`.
//! - [`driver`]: [`driver::compile`] (the pipeline with the tile-size search between its
//!   halves) and [`driver::build`].
//! - [`count`]: `polyc count`: exact instance, FLOP and footprint counts in the sizes.
//! - [`check`]: `polyc run`: inputs, execution, the oracle, comparison, `.npy` I/O.
//! - [`report`]: `polyc schedule-report`, isl's scheduler against polyc's ILP.
//! - [`search`]: the tile-size search in the pipeline (`--search model|measure`).
//! - [`suite`]: `polyc suite`: programs × shapes from YAML, in parallel, with a summary;
//!   one shard of it with `--shard i/n` ([`shard`]: the cost-balanced partition).
//! - [`signals`]: SIGINT and SIGTERM: stop children, remove temporary folders, exit 130
//!   or 143 (a suite first writes its partial result).
//! - [`merge`]: `polyc suite merge`: shard result files into one table, a baseline diff,
//!   and the fastest point of a sharded `--search measure`.
#![warn(missing_docs)]

pub mod check;
pub mod count;
pub mod driver;
pub mod merge;
pub mod options;
pub mod pipeline;
pub mod progress;
pub mod report;
pub mod search;
pub mod shard;
pub mod signals;
pub mod suite;
