//! Typed, immutable configuration parsed once from the command line (or a suite entry).

use crate::pipeline::shard::Shard;
use miette::{miette, Result};
use polyhedral::sched::{IslSchedOptions, SchedulerKind};
use std::str::FromStr;

/// A `--load-tree STAGE=FILE` request.
#[derive(Clone, Debug)]
pub struct LoadTree {
    /// The stage whose output is replaced.
    pub stage: String,
    /// The file holding the tree in isl's YAML form.
    pub file: String,
}

/// Everything that decides what a compilation produces.
#[derive(Clone, Debug)]
pub struct CompileOptions {
    /// The `.tc` file.
    pub program: String,
    /// `--entry`: which `def` to compile.
    pub entry: Option<String>,
    /// `--lang`: polyc's language, Tensor Comprehensions', or detected from the file.
    pub lang: polyhedral::lang::Lang,
    /// `--param NAME=VALUE,...`: bound sizes, in the order given.
    pub params: Vec<(String, i64)>,
    /// `--scheduler`.
    pub scheduler: SchedulerKind,
    /// `--isl-option NAME=VALUE` settings, raw (validated by [`IslSchedOptions::parse`]).
    pub isl_options: Vec<String>,
    /// `--load-tree` requests.
    pub load_trees: Vec<LoadTree>,
    /// `--tile-spec FILE`.
    pub tile_spec: Option<String>,
    /// `--no-default-tiling`: statements without a spec stay untiled.
    pub no_default_tiling: bool,
    /// `--policy NAME`: the target's tiling policy for statements the tile spec leaves
    /// out (`None`: the target's `default`).
    pub policy: Option<String>,
    /// `--target NAME|FILE` (alias `--target-desc`): a built-in target name (`cpu`, `gpu`,
    /// `a100`, `h100`, `gemmini`) or a target description file (default: `cpu`).
    pub target: Option<String>,
    /// `--emit FORMAT`: the source format to write (default: the target's first).
    pub emit: Option<String>,
    /// `--device`: which device runs GPU kernels.
    pub device: targets::Device,
    /// `--via`: how a target that can run a kernel in several ways runs it (Gemmini:
    /// `model` interprets the kernel on the functional model, `c` builds the emitted C
    /// against polyc's host header).
    pub via: Option<String>,
    /// Emit source code at the end (off for `dump` and `explain`, which also work for
    /// targets without an emitter).
    pub codegen: bool,
    /// Compute the `polyc explain` report (tiles, footprints, capacity left).
    pub explain: bool,
    /// `--fuse` for the ILP scheduler.
    pub fuse: polyhedral::ilp::Fuse,
    /// `--no-skew` for the ILP scheduler.
    pub no_skew: bool,
    /// `--schedule-constraints FILE` for the ILP scheduler.
    pub schedule_constraints: Option<String>,
    /// `--ilp-solver` for the ILP scheduler.
    pub ilp_solver: polyhedral::ilp::Solver,
    /// `--verify-passes`: check every pass's tree against the domain and the dependences.
    pub verify_passes: bool,
    /// `--no-tile-fusion`: skip post-tiling fusion.
    pub no_tile_fusion: bool,
    /// `--tile-fusion-one-nest`: run an overlapped in-place producer once, in the first
    /// tile that needs it (the AKG paper's single nest; the tile loops lose parallelism).
    pub tile_fusion_one_nest: bool,
    /// `--pack`: which tensors the cache levels' marks pack into local tiles.
    pub pack: targets::passes::promote::PackPolicy,
    /// `--no-register-tiles`: no scalar replacement at register marks.
    pub no_register_tiles: bool,
    /// `--no-hoist`: packed tiles stay below their own memory mark.
    pub no_hoist: bool,
    /// `--no-fold`: every temporary keeps its full shape (no storage contraction).
    pub no_fold: bool,
    /// `--no-share`: costly subexpressions that several statements write are computed in
    /// each of them (no shared temporary).
    pub no_share: bool,
    /// `--search`, `--search-budget`, `--search-top`, `--search-out`: how search entries
    /// of the tile spec are resolved.
    pub search: SearchSettings,
    /// `--dynamic NAME=LO..HI` or `NAME={V,...}`: sizes that stay symbolic, compiled for
    /// these values only, with partial tiles composed from micro-kernels.
    pub dynamic: Vec<targets::codegen::microkernel::DynamicSize>,
    /// `--max-statements N`: the most statements (inits counted) a program may have; a
    /// larger one is a located error, not a compile that runs for minutes.
    pub max_statements: usize,
}

/// The default of `--max-statements`: compile time grows faster than linearly with the
/// statements (320 element-wise statements take about 18 s of CPU time), so larger
/// programs are refused unless asked for.
pub const DEFAULT_MAX_STATEMENTS: usize = 256;

/// Parses `H=64,W=64` (one or more `--param` flags) into name/value pairs.
///
/// Errors name the offending text and show the expected form.
pub fn parse_params(flags: &[String]) -> Result<Vec<(String, i64)>> {
    parse_sizes(flags, "--param")
}

/// Parses `H=64,W=64` (one or more flags named `flag`, e.g. `--param` or `--run-param`)
/// into name/value pairs; errors name the flag, the offending text and the expected form.
pub fn parse_sizes(flags: &[String], flag: &str) -> Result<Vec<(String, i64)>> {
    let mut out: Vec<(String, i64)> = Vec::new();
    for text in flags {
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let Some((name, value)) = item.split_once('=') else {
                return Err(miette!(
                    help = format!("write sizes as NAME=VALUE pairs separated by commas, e.g. {flag} H=64,W=64"),
                    "{flag}: `{item}` is not of the form NAME=VALUE"
                ));
            };
            let name = name.trim();
            let value: i64 = value.trim().parse().map_err(|_| {
                miette!(
                    help = format!("size values are integers, e.g. {flag} H=64"),
                    "{flag}: the value of `{name}` is `{}`, which is not an integer",
                    value.trim()
                )
            })?;
            if value < 1 {
                return Err(miette!(
                    help = "sizes are extents and must be at least 1",
                    "{flag}: `{name}={value}` is not a positive size"
                ));
            }
            if out.iter().any(|(n, _)| n == name) {
                return Err(miette!(
                    help = "give each size once",
                    "{flag}: `{name}` is given twice"
                ));
            }
            out.push((name.to_string(), value));
        }
    }
    Ok(out)
}

/// Parses `--dynamic` flags, one size each: `T=1..128` (every value from 1 to 128) or
/// `T={1,5,24}` (those values). Errors name the offending text and show the forms.
pub fn parse_dynamic(flags: &[String]) -> Result<Vec<targets::codegen::microkernel::DynamicSize>> {
    use targets::codegen::microkernel::{DynamicSize, SizeValues};
    const FORMS: &str = "write --dynamic NAME=LO..HI (e.g. --dynamic T=1..128) or --dynamic NAME={V,...} (e.g. --dynamic T={1,5,24}); repeat the flag for several sizes";
    let mut out: Vec<DynamicSize> = Vec::new();
    for text in flags {
        let text = text.trim();
        let Some((name, values)) = text.split_once('=') else {
            return Err(miette!(
                help = FORMS,
                "--dynamic: `{text}` is not of the form NAME=LO..HI or NAME={{V,...}}"
            ));
        };
        let (name, values) = (name.trim(), values.trim());
        let valid_name = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid_name {
            return Err(miette!(
                help = FORMS,
                "--dynamic: `{name}` in `{text}` is not a size name"
            ));
        }
        let int = |v: &str| -> Result<i64> {
            let v = v.trim();
            let n: i64 = v.parse().map_err(|_| {
                miette!(
                    help = FORMS,
                    "--dynamic: `{v}` in `{text}` is not an integer"
                )
            })?;
            if n < 1 {
                return Err(miette!(
                    help = "sizes are extents and must be at least 1",
                    "--dynamic: `{n}` in `{text}` is not a positive size"
                ));
            }
            Ok(n)
        };
        let values = if let Some(inner) = values.strip_prefix('{') {
            let Some(inner) = inner.strip_suffix('}') else {
                return Err(miette!(
                    help = FORMS,
                    "--dynamic: the set in `{text}` has no closing `}}`"
                ));
            };
            let mut v = inner
                .split(',')
                .filter(|s| !s.trim().is_empty())
                .map(int)
                .collect::<Result<Vec<i64>>>()?;
            if v.is_empty() {
                return Err(miette!(
                    help = FORMS,
                    "--dynamic: the set in `{text}` is empty"
                ));
            }
            v.sort_unstable();
            v.dedup();
            SizeValues::Set(v)
        } else if let Some((lo, hi)) = values.split_once("..") {
            let (lo, hi) = (int(lo)?, int(hi)?);
            if lo > hi {
                return Err(miette!(
                    help =
                        format!("write the smaller bound first, e.g. --dynamic {name}={hi}..{lo}"),
                    "--dynamic: the range `{lo}..{hi}` in `{text}` is empty"
                ));
            }
            SizeValues::Range(lo, hi)
        } else {
            return Err(miette!(
                help = FORMS,
                "--dynamic: `{values}` in `{text}` is neither a range LO..HI nor a set {{V,...}}"
            ));
        };
        if out.iter().any(|d| d.name == name) {
            return Err(miette!(
                help = "give each size once",
                "--dynamic: `{name}` is given twice"
            ));
        }
        out.push(DynamicSize {
            name: name.to_string(),
            values,
        });
    }
    Ok(out)
}

/// Parses `STAGE=FILE` for `--load-tree`.
pub fn parse_load_tree(s: &str) -> Result<LoadTree> {
    match s.split_once('=') {
        Some((stage, file)) if !stage.is_empty() && !file.is_empty() => Ok(LoadTree {
            stage: stage.to_string(),
            file: file.to_string(),
        }),
        _ => Err(miette!(
            help = "write --load-tree STAGE=FILE, e.g. --load-tree scheduled=my_tree.yaml",
            "--load-tree: `{s}` is not of the form STAGE=FILE"
        )),
    }
}

impl CompileOptions {
    /// Options for `program` with every default: no sizes bound, the isl scheduler, the
    /// built-in CPU target with its default tiling.
    pub fn for_program(program: impl Into<String>) -> Self {
        CompileOptions {
            program: program.into(),
            entry: None,
            lang: polyhedral::lang::Lang::Auto,
            params: Vec::new(),
            scheduler: SchedulerKind::Isl,
            isl_options: Vec::new(),
            load_trees: Vec::new(),
            tile_spec: None,
            no_default_tiling: false,
            policy: None,
            target: None,
            emit: None,
            device: targets::Device::Auto,
            via: None,
            codegen: true,
            explain: false,
            fuse: polyhedral::ilp::Fuse::Smart,
            no_skew: false,
            schedule_constraints: None,
            ilp_solver: polyhedral::ilp::Solver::Microlp,
            verify_passes: false,
            no_tile_fusion: false,
            tile_fusion_one_nest: false,
            pack: targets::passes::promote::PackPolicy::Auto,
            no_register_tiles: false,
            no_hoist: false,
            no_fold: false,
            no_share: false,
            search: SearchSettings::default(),
            dynamic: Vec::new(),
            max_statements: DEFAULT_MAX_STATEMENTS,
        }
    }
    /// The promotion switches (`--pack`, `--no-register-tiles`, `--no-hoist`).
    pub fn promote_settings(&self) -> targets::PromoteSettings {
        targets::PromoteSettings {
            pack: self.pack,
            registers: !self.no_register_tiles,
            hoist: !self.no_hoist,
        }
    }
    /// Validated isl scheduler options.
    pub fn isl_sched_options(&self) -> Result<IslSchedOptions> {
        IslSchedOptions::parse(&self.isl_options)
    }
}

/// The default `--search-top`: points of the model measured by `--search measure`.
pub const DEFAULT_TOP: usize = 6;

/// How the search picks among the legal points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SearchMode {
    /// The cost model's best point.
    Model,
    /// Compile, run and time the model's best points; the fastest wins.
    Measure,
}

impl FromStr for SearchMode {
    type Err = miette::Report;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "model" => Ok(SearchMode::Model),
            "measure" => Ok(SearchMode::Measure),
            _ => Err(miette!(
                help = "use `--search model` (the data-movement model, default) or `--search measure` (compile and time the model's best points)",
                "--search: unknown mode `{s}`"
            )),
        }
    }
}

/// The search settings of a compilation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchSettings {
    /// `--search`.
    pub mode: SearchMode,
    /// `--search-budget`: the most points enumerated exhaustively.
    pub budget: usize,
    /// `--search-top`: points measured by [`SearchMode::Measure`].
    pub top: usize,
    /// `--search-out FILE`: where to write the resolved spec.
    pub out: Option<String>,
    /// `--search-shard i/n`: measure only this part of the model's best points.
    pub shard: Option<Shard>,
    /// `--search-json FILE`: write the measured points as a search result file.
    pub json: Option<String>,
}

impl Default for SearchSettings {
    fn default() -> Self {
        SearchSettings {
            mode: SearchMode::Model,
            budget: tiling::search::DEFAULT_BUDGET,
            top: DEFAULT_TOP,
            out: None,
            shard: None,
            json: None,
        }
    }
}
