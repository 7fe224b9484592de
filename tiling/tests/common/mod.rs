//! Builds a program's model, dependences and schedule from an example file.
#![allow(dead_code)]

use polyhedral::deps::Deps;
use polyhedral::diag::{render_plain, SourceFile};
use polyhedral::ir::Program;
use polyhedral::isl::Ctx;
use polyhedral::sched::{initial_schedule, isl_schedule, IslSchedOptions};
use polyhedral::scop::Scop;
use schedule_tree::{Buffer, BufferRole, Level, ScheduleTree};
use tiling::{parse_tile_spec, TileCx, TileSpec};

pub const CPU: [Level; 3] = [
    Level::new(Buffer::from_static("L2"), 2097152, BufferRole::Cache),
    Level::new(Buffer::from_static("L1"), 49152, BufferRole::Cache),
    Level::new(Buffer::from_static("reg"), 2048, BufferRole::Registers),
];

pub struct Fixture {
    pub ctx: Ctx,
    pub program: Program,
    pub scop: Scop,
    pub deps: Deps,
    pub tree: ScheduleTree,
}

impl Fixture {
    /// `example` is a file of /work/main/examples; `params` are `(name, value)`.
    pub fn new(example: &str, params: &[(&str, i64)], isl: bool) -> Fixture {
        let path = format!("{}/../examples/{example}", env!("CARGO_MANIFEST_DIR"));
        let src = SourceFile::read(&path).expect("example exists");
        let program = polyhedral::lang::compile(&src, None).expect("compiles");
        let values: Vec<Option<i64>> = program
            .params
            .iter()
            .map(|p| params.iter().find(|(n, _)| *n == p.name).map(|(_, v)| *v))
            .collect();
        let ctx = Ctx::new();
        let scop = Scop::build(&ctx, &program, &values, &src).expect("model");
        let deps = Deps::compute(&scop).expect("deps");
        let sched = if isl {
            isl_schedule(&ctx, &scop, &deps, &IslSchedOptions::default()).expect("isl schedule")
        } else {
            initial_schedule(&scop, &deps).expect("initial schedule")
        };
        let tree = ScheduleTree::from_isl(&sched).expect("tree");
        drop(sched);
        Fixture {
            ctx,
            program,
            scop,
            deps,
            tree,
        }
    }

    pub fn cx(&self) -> TileCx<'_> {
        TileCx {
            ctx: &self.ctx,
            program: &self.program,
            scop: &self.scop,
            deps: &self.deps,
            levels: &CPU,
        }
    }
}

pub fn spec_file(text: &str) -> SourceFile {
    SourceFile::new("tiles.txt", text)
}

pub fn parse(text: &str) -> (SourceFile, TileSpec) {
    let f = spec_file(text);
    let s = parse_tile_spec(&f, &CPU.map(|l| l.buffer)).expect("spec parses");
    (f, s)
}

/// The plain rendering of an error.
pub fn err_text(e: miette::Report) -> String {
    render_plain(e.as_ref())
}
