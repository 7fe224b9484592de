//! The CLI's commands beyond compiling, each in its own file. They use
//! [`crate::pipeline`]; the pipeline never uses them.
//!
//! - [`run`]: `polyc run`: inputs, execution, the oracle, comparison, `.npy` I/O.
//! - [`count`]: `polyc count`: exact instance, FLOP and footprint counts in the sizes.
//! - [`schedule_report`]: `polyc schedule-report`, isl's scheduler against polyc's ILP.
//! - [`suite`]: `polyc suite`: programs × shapes from YAML, in parallel, with a summary;
//!   one shard of it with `--shard i/n`.
//! - [`merge`]: `polyc suite merge`: shard result files into one table, a baseline diff,
//!   and the fastest point of a sharded `--search measure`.
//! - [`signals`]: SIGINT and SIGTERM: stop children, remove temporary folders, exit 130
//!   or 143 (a suite first writes its partial result).

pub mod count;
pub mod merge;
pub mod run;
pub mod schedule_report;
pub mod signals;
pub mod suite;
