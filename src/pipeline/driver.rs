//! The top of the library: the tile-size search between the two halves of the pipeline,
//! and building compiled programs for the target.
//!
//! Modules depend downwards only: `driver` → `tile_search` → `stages` → `options`, and
//! the commands (`crate::commands`) → `driver`. The stages take a resolved tile spec and
//! never call the search.

use crate::pipeline::options::CompileOptions;
use crate::pipeline::stages::{analyse, finish, load_target, Compiled, Mode, SpecChoice};
use miette::{miette, Result};
use targets::{BuildInput, Executable, Target};

/// Compiles one `def` as the options say: the first half of the pipeline, the tile-size
/// search (for search entries in the spec), then the target's passes.
pub fn compile(opts: &CompileOptions, mode: Mode) -> Result<Compiled> {
    let front = analyse(opts, mode)?;
    let choice = match mode {
        Mode::Optimised => crate::pipeline::tile_search::resolve_tile_spec(opts, &front)?,
        Mode::Untransformed | Mode::ScheduleOnly => SpecChoice::default(),
    };
    finish(&front, opts, mode, &choice)
}

/// Builds a compiled program for the target the options name, ready to run; `poison`
/// builds it for `--check` (temporaries no statement wrote read as NaN).
pub fn build(
    compiled: &Compiled,
    opts: &CompileOptions,
    poison: bool,
) -> Result<Box<dyn Executable>> {
    let target = load_target(opts)?;
    if let Some(via) = &opts.via {
        check_via(target.as_ref(), via)?;
    }
    let kernel = compiled.kernel.as_ref().ok_or_else(|| {
        miette!("internal error: the program was only scheduled, so there is nothing to build")
    })?;
    target.build(&BuildInput {
        program: &compiled.program,
        param_texts: &compiled.param_texts,
        kernel,
        source: &compiled.code,
        poison,
        via: opts.via.as_deref(),
        dynamic: &compiled.dynamic,
    })
}

/// Checks `--via WAY` against the ways `target` runs kernels ([`Target::run_ways`]): an
/// error that lists them when it cannot.
pub fn check_via(target: &dyn Target, via: &str) -> Result<()> {
    let ways = target.run_ways();
    if !ways.contains(&via) {
        return Err(miette!(
            help = if ways.is_empty() {
                format!(
                    "target `{}` runs kernels one way only; drop --via",
                    target.name()
                )
            } else {
                format!(
                    "target `{}` runs kernels via: {}",
                    target.name(),
                    ways.join(", ")
                )
            },
            "--via {via}: target `{}` cannot run a kernel via `{via}`",
            target.name()
        ));
    }
    Ok(())
}
