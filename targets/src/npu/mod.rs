//! The analysis-only kind (`kind: npu`, e.g. `specs/targets/ascend.yaml`): polyc tiles,
//! fuses, promotes and explains for it, but emits no code.

use miette::{miette, Result};
use polyhedral::ir::Program;
use schedule_tree::Pass;

use crate::codegen::cfamily::EmitOptions;
use crate::codegen::kir::Kernel;
use crate::desc::TargetDesc;
use crate::passes::{Fuse, PassCx, Promote, Tile};
use crate::target::{BuildInput, Executable, Target};

/// A target polyc can tile, fuse, promote and explain for, but has no code emitter for
/// (yet): asking it for code is an error, never CPU code.
#[derive(Clone, Debug)]
pub struct AnalysisTarget {
    /// The description.
    pub desc: TargetDesc,
}

impl AnalysisTarget {
    fn no_emitter(&self) -> miette::Report {
        miette!(
            help = "polyc can tile, fuse, promote and explain for it: `polyc explain` and `polyc dump` work; compile for `--target cpu` to get code",
            "target `{}` (kind {}) has no code emitter in this version of polyc",
            self.desc.name,
            self.desc.kind.name()
        )
    }
}

impl Target for AnalysisTarget {
    fn desc(&self) -> &TargetDesc {
        &self.desc
    }
    fn passes<'a>(&self) -> Vec<Box<dyn Pass<PassCx<'a>>>> {
        vec![Box::new(Tile), Box::new(Fuse), Box::new(Promote)]
    }
    fn emit_formats(&self) -> &'static [&'static str] {
        &[]
    }
    fn emit(
        &self,
        _prog: &Program,
        _param_texts: &[String],
        _kernel: &Kernel,
        _format: &str,
        _opts: &EmitOptions,
    ) -> Result<String> {
        Err(self.no_emitter())
    }
    fn build(&self, _input: &BuildInput) -> Result<Box<dyn Executable>> {
        Err(self.no_emitter())
    }
}
