//! The CPU target: C with OpenMP, compiled by the system C compiler and loaded in-process.
//!
//! [`CpuTarget`] lists the passes (tiling, fusion, [`wavefront::Wavefront`], promotion
//! to the cache levels, then [`parallel::MarkParallel`]); [`runner`] builds and runs the C.

pub mod dialect;
pub mod parallel;
pub mod runner;
pub mod wavefront;

use miette::Result;
use polyhedral::data::TensorData;
use polyhedral::ir::Program;
use schedule_tree::{BufferRole, Pass};

use crate::codegen::cfamily::EmitOptions;
use crate::codegen::kir::Kernel;
use crate::desc::TargetDesc;
use crate::passes::{Fuse, PassCx, Promote, Tile};
use crate::target::{BuildInput, Executable, RunStats, Target};
pub use dialect::{emit_c, emit_c_for, CDialect};
use parallel::MarkParallel;
pub use runner::{compile_c, run, CcOptions, CompiledKernel};
use wavefront::Wavefront;

/// The CPU: C with OpenMP, compiled by the system C compiler and loaded in-process.
#[derive(Clone, Debug)]
pub struct CpuTarget {
    /// The description.
    pub desc: TargetDesc,
    /// How to call the C compiler.
    pub cc: CcOptions,
}

impl CpuTarget {
    /// The built-in CPU (`specs/targets/cpu.yaml`).
    pub fn builtin() -> Result<CpuTarget> {
        let desc = TargetDesc::builtin_cpu()?;
        Ok(CpuTarget {
            cc: CcOptions::for_target(&desc),
            desc,
        })
    }
}

impl Target for CpuTarget {
    fn desc(&self) -> &TargetDesc {
        &self.desc
    }
    fn folds_storage(&self) -> bool {
        true
    }
    fn passes<'a>(&self) -> Vec<Box<dyn Pass<PassCx<'a>>>> {
        vec![
            Box::new(Tile),
            Box::new(Fuse),
            Box::new(Wavefront),
            Box::new(Promote),
            Box::new(MarkParallel),
        ]
    }
    /// One core's model: the description's vector width (64 bytes when unset), its
    /// register file's registers (16 when unset) and the program's widest element; FMA
    /// latency 4 and two FMA and two load ports are those of current x86 cores (Skylake-X
    /// to Zen 4).
    fn micro_kernel_model(
        &self,
        program: &Program,
    ) -> Option<crate::codegen::microkernel::MicroKernelModel> {
        let vector_bytes = self.desc.vector_bytes.unwrap_or(64);
        let registers = self
            .desc
            .buffers
            .iter()
            .find(|b| b.role() == BufferRole::Registers)
            .and_then(|b| b.registers)
            .unwrap_or(16);
        let elem = program
            .tensors
            .iter()
            .map(|t| t.dtype.size_bytes() as u32)
            .max()
            .unwrap_or(4);
        Some(crate::codegen::microkernel::MicroKernelModel {
            unit: crate::codegen::microkernel::ModelUnit::VectorCore,
            vector_elems: (vector_bytes / elem.max(1)).max(1) as i64,
            registers: registers.max(1) as i64,
            fma_latency: 4,
            fma_ports: 2,
            load_ports: 2,
        })
    }
    fn emit_formats(&self) -> &'static [&'static str] {
        &["c"]
    }
    fn emit(
        &self,
        prog: &Program,
        param_texts: &[String],
        kernel: &Kernel,
        _format: &str,
        opts: &EmitOptions,
    ) -> Result<String> {
        let vector_bytes = self.desc.vector_bytes.unwrap_or(64);
        Ok(emit_c_for(prog, param_texts, kernel, opts, vector_bytes))
    }
    fn build(&self, input: &BuildInput) -> Result<Box<dyn Executable>> {
        if input.poison {
            let mut cc = self.cc.clone();
            cc.extra_flags.push("-DPOLYC_POISON".into());
            return Ok(Box::new(compile_c(input.source, &cc)?));
        }
        Ok(Box::new(compile_c(input.source, &self.cc)?))
    }
}

impl Executable for CompiledKernel {
    fn run(
        &self,
        prog: &Program,
        sizes: &[i64],
        tensors: &mut [TensorData],
        scalars: &[TensorData],
    ) -> miette::Result<RunStats> {
        run(self, prog, sizes, tensors, scalars)
    }
    fn library_path(&self) -> Option<std::path::PathBuf> {
        Some(self.dir().join("kernel.so"))
    }
}
