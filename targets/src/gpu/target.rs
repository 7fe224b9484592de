//! [`GpuTarget`]: a GPU's description and device, its pass list ([`MapGpu`] after
//! promotion), and its implementation of [`Target`].

use miette::Result;
use polyhedral::ir::Program;
use schedule_tree::{BufferRole, Pass, ScheduleTree};

use crate::codegen::cfamily::EmitOptions;
use crate::codegen::kir::Kernel;
use crate::codegen::lower::LowerOptions;
use crate::desc::TargetDesc;
use crate::gpu::device::{self, prepare, GpuModule};
use crate::gpu::{blockshape, emit, map, policy, report, rows, run};
use crate::passes::promote::{LevelInfo, PromoteKind, PromoteOptions};
use crate::passes::{Fuse, PassCx, Promote, Tile};
use crate::target::Executable;
use crate::target::{BuildInput, Device, PromoteSettings, Target};

/// A GPU: its description, and which device runs kernels.
#[derive(Clone, Debug)]
pub struct GpuTarget {
    /// The description (`kind: gpu`).
    pub desc: TargetDesc,
    /// The device `build` runs on.
    pub device: Device,
}

impl GpuTarget {
    /// Threads per block at most (the description's, else 1024).
    pub fn max_threads(&self) -> i64 {
        self.desc.max_threads_per_block.unwrap_or(1024) as i64
    }
    /// The kernels of a lowered program.
    pub fn module(&self, prog: &Program, kernel: &Kernel) -> Result<GpuModule> {
        prepare(prog, kernel, self.max_threads())
    }
    /// The kernels of a lowered program with `dynamic` sizes (`--dynamic`): kernels whose
    /// blocks run along one get block shapes ([`blockshape`]).
    pub fn module_dynamic(
        &self,
        prog: &Program,
        kernel: &Kernel,
        dynamic: &[crate::codegen::microkernel::DynamicSize],
    ) -> Result<GpuModule> {
        if dynamic.is_empty() {
            return self.module(prog, kernel);
        }
        device::prepare_dynamic(
            prog,
            kernel,
            self.max_threads(),
            Some((dynamic, self.block_model())),
        )
    }
    /// The figures of the timing model ([`crate::gpu::timing`]), where the description
    /// gives its SMs, peak and DRAM bandwidth.
    pub fn machine(&self) -> Option<crate::gpu::timing::Machine> {
        self.desc.sms?;
        Some(crate::gpu::timing::Machine {
            blocks: self.block_model(),
            peak_gflops: self.desc.peak_gflops? as f64,
            dram_gbytes_per_s: self.desc.dram_gbytes_per_s? as f64,
        })
    }
    /// The figures that rank block shapes: the description's SMs (1 when unset), warp
    /// size (32), registers of a thread's register buffer (128) and shared memory (48 KiB).
    pub fn block_model(&self) -> blockshape::BlockModel {
        let buffer = |role: BufferRole| self.desc.buffers.iter().find(|b| b.role() == role);
        blockshape::BlockModel {
            sms: self.desc.sms.unwrap_or(1) as i64,
            warp: self.desc.warp_size.unwrap_or(32) as i64,
            registers_per_thread: buffer(BufferRole::Registers)
                .and_then(|b| b.registers)
                .unwrap_or(128) as i64,
            shared_bytes: buffer(BufferRole::SharedMemory).map_or(49152, |b| b.bytes as i64),
        }
    }
}

/// Maps the promoted tree to blocks and threads (see [`map`]).
pub struct MapGpu;

impl<'a> Pass<PassCx<'a>> for MapGpu {
    fn name(&self) -> &'static str {
        "mapped"
    }
    fn run(&self, tree: ScheduleTree, cx: &PassCx<'a>) -> Result<ScheduleTree> {
        let schedule = tree.to_isl(cx.ctx)?;
        let (mapped, report) = map::map_to_gpu(schedule)?;
        cx.target_report.borrow_mut().push(format!(
            "gpu mapping: {} kernel(s), {} thread-mapped band(s), {} host loop(s)\n",
            report.kernels, report.thread_bands, report.host_loops
        ));
        ScheduleTree::from_isl(&mapped)
    }
}

impl Target for GpuTarget {
    fn desc(&self) -> &TargetDesc {
        &self.desc
    }
    fn isl_options(&self) -> Vec<String> {
        // As PPCG does: the outermost band of every group must be coincident where the
        // dependences allow, so that it maps to blocks (without it, isl may fuse and skew
        // a chain into a band with no parallel member, and the GPU would launch a kernel
        // per host iteration).
        // The contiguous-inner-loops pass orders one thread's loops for a CPU's caches and
        // vector lanes; on a GPU, what counts is that neighbouring threads touch
        // neighbouring elements, which the thread mapping decides, so it stays off (a
        // user's `--isl-option contiguous=1` turns it on).
        vec!["outer_coincidence=1".into(), "contiguous=0".into()]
    }
    fn passes<'a>(&self) -> Vec<Box<dyn Pass<PassCx<'a>>>> {
        vec![
            Box::new(Tile),
            Box::new(Fuse),
            Box::new(rows::RowKernels),
            Box::new(Promote),
            Box::new(MapGpu),
        ]
    }
    fn default_plan(
        &self,
        tree: &ScheduleTree,
        cx: &tiling::TileCx,
        given: Option<&tiling::TileSpec>,
    ) -> Result<tiling::DefaultPlan> {
        Ok(tiling::DefaultPlan {
            spec: policy::default_spec(
                tree,
                cx,
                given,
                self.max_threads(),
                self.desc.sms.map(i64::from),
            )?,
            fusion: Vec::new(),
        })
    }
    fn promote_options(&self, s: &PromoteSettings) -> PromoteOptions {
        PromoteOptions {
            levels: self
                .desc
                .buffers
                .iter()
                .map(|b| LevelInfo {
                    buffer: b.buffer(),
                    bytes: b.bytes,
                    stages: 1,
                    kind: match b.role() {
                        BufferRole::SharedMemory => PromoteKind::Shared,
                        BufferRole::Registers => PromoteKind::Registers,
                        _ => PromoteKind::None,
                    },
                })
                .collect(),
            pack: s.pack,
            registers: s.registers,
            // Hoisting a tile above the tile loops it does not depend on would move it
            // above block-mapped loops; every block loads its own tiles.
            hoist: false,
            locals: Vec::new(),
            exclusive_locals: Vec::new(),
            copy_in_where_exposed: true,
        }
    }
    /// Checks the threads per block of every kernel now: a kernel whose thread loops ask for
    /// more threads than the target allows is an error located at the tile spec's entry for
    /// one of its statements. A kernel no entry of the user's spec tiles (the default
    /// policy's, or untiled) runs with its block fitted to the limit.
    fn rewrite_kernel(
        &self,
        cx: &crate::target::RewriteCx,
        mut kernel: Kernel,
    ) -> Result<(Kernel, Vec<String>)> {
        if !cx.optimised {
            return Ok((kernel, Vec::new()));
        }
        kernel.pipeline_stages = spec_stages(cx);
        let module = self.module(cx.program, &kernel)?;
        self.check_staged_capacity(cx, &module)?;
        let mut notes = Vec::new();
        for k in &module.kernels {
            let Some(t) = k.too_many_threads(self.max_threads()) else {
                continue;
            };
            // The user's entries have a place in the spec file; the policy's have none.
            let entry = cx.spec.and_then(|(spec, file)| {
                t.stmts
                    .iter()
                    .filter_map(|&s| spec.get(&cx.program.stmts[s].name))
                    .find(|ss| ss.span != polyhedral::ir::Span::default())
                    .map(|ss| (ss.span, file))
            });
            match entry {
                Some((span, file)) => {
                    return Err(miette::Report::new(file.error(
                        span,
                        t.to_string(),
                        "these tiles",
                        device::TooManyThreads::HELP,
                    )));
                }
                None => notes.push(format!(
                    "  kernel {}: its thread loops ask for {} x {} x {} threads per block, more than the {} the target allows; it runs blocks of {} x {} x {} (thread loops stride over the rest)",
                    k.id,
                    k.asked[0],
                    k.asked[1],
                    k.asked[2],
                    self.max_threads(),
                    k.block[0],
                    k.block[1],
                    k.block[2]
                )),
            }
        }
        Ok((kernel, notes))
    }
    /// One thread's model (FTuner's GPU criteria, at the thread's register tile): the
    /// micro-kernels are shapes of a thread's register tile along the dynamic size. Scalar
    /// FMAs, one issued per cycle, with a latency of 4 cycles that the thread's independent
    /// accumulators must cover (with fewer, the thread stalls unless other warps fill in:
    /// occupancy); one shared-memory operand load per cycle; and the registers the
    /// description gives a thread's tiles (128 when unset) for the accumulators and the
    /// operands of a step (more would lower occupancy or spill).
    fn micro_kernel_model(
        &self,
        _program: &Program,
    ) -> Option<crate::codegen::microkernel::MicroKernelModel> {
        let registers = self
            .desc
            .buffers
            .iter()
            .find(|b| b.role() == BufferRole::Registers)
            .and_then(|b| b.registers)
            .unwrap_or(128);
        Some(crate::codegen::microkernel::MicroKernelModel {
            unit: crate::codegen::microkernel::ModelUnit::ScalarThread,
            vector_elems: 1,
            registers: registers.max(1) as i64,
            fma_latency: 4,
            fma_ports: 1,
            load_ports: 1,
        })
    }
    fn lower_options(&self) -> LowerOptions {
        LowerOptions {
            levels: self.desc.levels(),
            sink_vectorizable: false,
        }
    }
    fn emit_formats(&self) -> &'static [&'static str] {
        &["cuda", "opencl"]
    }
    fn emit(
        &self,
        prog: &Program,
        param_texts: &[String],
        kernel: &Kernel,
        format: &str,
        opts: &EmitOptions,
    ) -> Result<String> {
        let module = self.module_dynamic(prog, kernel, &opts.dynamic)?;
        Ok(match format {
            "opencl" => emit::emit_opencl(prog, param_texts, &module),
            _ => emit::emit_cuda(prog, param_texts, &module),
        })
    }
    fn build(&self, input: &BuildInput) -> Result<Box<dyn Executable>> {
        let module = self.module_dynamic(input.program, input.kernel, input.dynamic)?;
        run::build(
            self.device,
            self.desc.cuda_arch.as_deref().unwrap_or("sm_80"),
            input,
            module,
        )
    }
    fn cost_model(&self) -> Option<&'static str> {
        self.machine().map(|_| "modelled time (ms)")
    }
    /// The timing model's total over the kernels ([`crate::gpu::timing`]).
    fn model_cost(&self, input: &BuildInput, sizes: &[i64]) -> Result<f64> {
        let machine = self
            .machine()
            .ok_or_else(|| miette::miette!("target `{}` has no timing model", self.desc.name))?;
        let module = self.module_dynamic(input.program, input.kernel, input.dynamic)?;
        report::modelled_ms(input.program, input.param_texts, &module, sizes, &machine)
    }
    fn explain_kernels(&self, input: &BuildInput, sizes: Option<&[i64]>) -> Result<Option<String>> {
        let module = self.module_dynamic(input.program, input.kernel, input.dynamic)?;
        // ptxas's own counts where nvcc is installed.
        let ptxas = match crate::gpu::cuda_tools::find_nvcc() {
            Some(_) => {
                let src = emit::emit_cuda(input.program, input.param_texts, &module);
                let arch = self.desc.cuda_arch.as_deref().unwrap_or("sm_80");
                crate::gpu::cuda_tools::compile_cuda(&src, arch).ok()
            }
            None => None,
        };
        let roofline = self.desc.peak_gflops.zip(self.desc.dram_gbytes_per_s);
        let mut text = report::explain(
            input.program,
            input.param_texts,
            &module,
            sizes,
            roofline,
            ptxas.as_ref(),
            self.machine().as_ref(),
        )?;
        if ptxas.is_none() {
            text.push_str("    (ptxas counts: nvcc not found; scripts/install-deps installs it)\n");
        }
        Ok(Some(text))
    }
}

/// The pipeline stages the tile spec's entries ask for (`64@shared:3`), per statement:
/// the most any level of the statement's entries gives.
fn spec_stages(cx: &crate::target::RewriteCx) -> Vec<(usize, i64)> {
    let Some((spec, _)) = cx.spec else {
        return Vec::new();
    };
    cx.program
        .stmts
        .iter()
        .enumerate()
        .filter_map(|(i, st)| {
            let ss = spec.get(&st.name)?;
            let most = ss
                .dims
                .iter()
                .flat_map(|d| d.levels.iter())
                .filter_map(|l| l.stages)
                .max()?;
            Some((i, most))
        })
        .collect()
}

impl GpuTarget {
    /// A kernel whose statements' entries ask for pipeline stages must keep all its stages
    /// of shared tiles within the description's shared memory per block (tiling checked
    /// one stage): else a located error at the stage count.
    fn check_staged_capacity(
        &self,
        cx: &crate::target::RewriteCx,
        module: &GpuModule,
    ) -> Result<()> {
        let Some((spec, file)) = cx.spec else {
            return Ok(());
        };
        let Some(capacity) = self
            .desc
            .buffers
            .iter()
            .find(|b| b.role() == BufferRole::SharedMemory)
            .map(|b| b.bytes)
        else {
            return Ok(());
        };
        let texts: Vec<String> = cx
            .program
            .params
            .iter()
            .zip(cx.param_values)
            .map(|(p, v)| v.map_or_else(|| p.name.clone(), |x| x.to_string()))
            .collect();
        for k in &module.kernels {
            let Some(stages) = k.stages.filter(|s| *s >= 2) else {
                continue;
            };
            let bytes = report::shared_bytes(cx.program, &texts, k);
            if bytes <= capacity {
                continue;
            }
            let at = k
                .stmts
                .iter()
                .filter_map(|&s| spec.get(&cx.program.stmts[s].name))
                .flat_map(|ss| ss.dims.iter().flat_map(|d| d.levels.iter()))
                .find(|l| l.stages == Some(stages))
                .map(|l| l.stages_span);
            let msg = format!(
                "kernel {} needs {bytes} bytes of shared memory per block in {stages} pipeline stages, more than the {capacity} bytes the target has",
                k.id
            );
            let help = "ask for fewer stages, or smaller tiles at this level";
            return Err(match at {
                Some(span) => miette::Report::new(file.error(span, msg, "too many stages", help)),
                None => miette::miette!(help = help, "{msg}"),
            });
        }
        Ok(())
    }
}
