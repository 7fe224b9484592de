//! polyc: the library behind the `polyc` binary, in two layers.
//!
//! [`pipeline`] is the compiler: the CLI (`src/main.rs`) parses flags into an immutable
//! [`pipeline::options::CompileOptions`] and calls [`pipeline::driver::compile`]
//! (parse → model → dependences → schedule, the tile-size search, then the target's passes
//! → lowering → emission) and [`pipeline::driver::build`].
//!
//! [`commands`] holds the CLI's commands beyond compiling: `polyc run` (execute and check
//! against an oracle), `polyc count`, `polyc schedule-report`, `polyc suite` and `polyc
//! suite merge`, and the SIGINT/SIGTERM handling of long runs.
//!
//! Commands use the pipeline; the pipeline never uses a command (`ARCHITECTURE.md`).
#![warn(missing_docs)]

pub mod commands;
pub mod pipeline;
