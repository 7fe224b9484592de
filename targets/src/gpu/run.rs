//! Running GPU kernels: the host part of a [`GpuModule`] is evaluated here (its loops,
//! guards and grid sizes), and the launches go to OpenCL or CUDA with the same tensors
//! the CPU runner takes. Under `--check`, temporaries are device buffers filled with `0xFF`
//! bytes (NaN), so a kernel that reads an element nobody wrote fails the check.

use std::collections::HashMap;
use std::time::Instant;

use miette::{miette, Result};
use polyhedral::data::{Buffer as Data, TensorData};
use polyhedral::ir::{Program, TensorRole};

use crate::gpu::device::{each_launch, GpuModule};
use crate::gpu::emit::{dynamic_shared_bytes, emit_cuda, emit_opencl, kernel_params, KernelParam};
use crate::gpu::launch::{Launch, LaunchArg};
use crate::target::BuildInput;
use crate::target::{Device, Executable, RunStats};

/// A GPU program ready to run on one device.
pub struct GpuExecutable {
    module: GpuModule,
    param_texts: Vec<String>,
    device: Chosen,
    /// Fill temporaries with NaN bytes before the run (`--check`).
    poison: bool,
}

enum Chosen {
    OpenCl { source: String },
    Cuda { ptx: String },
}

/// Builds `module` for `device` (`auto` prefers CUDA when a driver exists); CUDA is
/// compiled for `cuda_arch` (`sm_80`).
pub fn build(
    device: Device,
    cuda_arch: &str,
    input: &BuildInput,
    module: GpuModule,
) -> Result<Box<dyn Executable>> {
    let use_cuda = match device {
        Device::OpenCl => false,
        Device::Cuda => {
            crate::gpu::cuda_tools::cuda_driver_status()?;
            true
        }
        Device::Auto => crate::gpu::cuda_tools::cuda_driver_status().is_ok(),
    };
    let device = if use_cuda {
        let src = emit_cuda(input.program, input.param_texts, &module);
        Chosen::Cuda {
            ptx: crate::gpu::cuda_tools::compile_ptx(&src, cuda_arch)?,
        }
    } else {
        Chosen::OpenCl {
            source: emit_opencl(input.program, input.param_texts, &module),
        }
    };
    Ok(Box::new(GpuExecutable {
        module,
        param_texts: input.param_texts.to_vec(),
        device,
        poison: input.poison,
    }))
}

/// The launches the host part of `module` makes for these values, in order: tensor `t`
/// is buffer `buffer_of(t)`, and the kernels' fault status (one `i32`, 0 before the
/// launches) is buffer `fault_buffer`.
pub fn launch_plan(
    prog: &Program,
    param_texts: &[String],
    module: &GpuModule,
    sizes: &[i64],
    scalars: &[TensorData],
    buffer_of: &impl Fn(usize) -> usize,
    fault_buffer: usize,
) -> Result<Vec<Launch>> {
    let mut out = Vec::new();
    each_launch(prog, module, sizes, &mut |k, env| {
        let grid = k.grid_for(&|v| env.get(v).copied())?;
        let unknown = || miette!("internal error: a kernel argument has no value on the host");
        let args = |k: &crate::gpu::DeviceKernel, lo: i64, hi: i64| -> Result<Vec<LaunchArg>> {
            let mut args = Vec::new();
            for p in kernel_params(prog, param_texts, k) {
                args.push(match p {
                    KernelParam::Size(i) => {
                        LaunchArg::I64(*env.get(&prog.params[i].name).ok_or_else(unknown)?)
                    }
                    KernelParam::Tensor(t) => LaunchArg::Buffer(buffer_of(t)),
                    KernelParam::Scalar(s) => scalar_arg(&scalars[s])?,
                    KernelParam::Host(h) => LaunchArg::I64(*env.get(&h).ok_or_else(unknown)?),
                    KernelParam::BlockLo => LaunchArg::I64(lo),
                    KernelParam::BlockHi => LaunchArg::I64(hi),
                    KernelParam::Fault => LaunchArg::Buffer(fault_buffer),
                });
            }
            Ok(args)
        };
        match &k.shapes {
            None => out.push(Launch {
                kernel: k.name.clone(),
                grid: grid.map(|g| g as usize),
                block: k.block.map(|b| b as usize),
                args: args(k, 0, 0)?,
                dynamic_shared: dynamic_shared_bytes(prog, param_texts, k) as usize,
            }),
            Some(sh) => {
                let d = sh.grid_dim as usize;
                let t = *env.get(&sh.size.name).ok_or_else(unknown)?;
                let other: i64 = (0..3).filter(|&x| x != d).map(|x| grid[x]).product();
                for l in sh.plan(t, grid[d], other) {
                    let kernel = if l.shape == 0 {
                        k
                    } else {
                        &sh.variants[l.shape - 1]
                    };
                    let mut g = grid;
                    g[d] = l.count;
                    out.push(Launch {
                        kernel: kernel.name.clone(),
                        grid: g.map(|x| x as usize),
                        block: sh.block_of(l.shape).map(|b| b as usize),
                        args: args(kernel, l.first, l.first + l.count)?,
                        dynamic_shared: dynamic_shared_bytes(prog, param_texts, kernel) as usize,
                    });
                }
            }
        }
        Ok(())
    })?;
    Ok(out)
}

fn scalar_arg(d: &TensorData) -> Result<LaunchArg> {
    Ok(match &d.buf {
        Data::F32(v) => LaunchArg::F32(v[0]),
        Data::F64(v) => LaunchArg::F64(v[0]),
        Data::I8(v) => LaunchArg::I8(v[0]),
        Data::I32(v) => LaunchArg::I32(v[0]),
        Data::I64(v) => LaunchArg::I64(v[0]),
        // f16 scalars travel as float (exact), as the kernels declare them.
        Data::F16(v) => LaunchArg::F32(v[0].to_f32()),
    })
}

/// Under `--check`, a source with pipelined loops first runs with its copies landing only
/// at their wait ([`crate::codegen::cfamily::Dialect::async_land`]), on copies of the
/// buffers, whose results this returns (`None`: no pipelined loop); the normal run (copies
/// land when issued) then goes to the oracle, and [`copies_at_wait_agree`] compares them.
fn run_copies_at_wait(
    source: &str,
    launches: &[crate::gpu::launch::Launch],
    bufs: &[&mut [u8]],
) -> Result<Option<Vec<Vec<u8>>>> {
    use crate::codegen::cfamily::{ASYNC_AT_WAIT, ASYNC_SHADOW};
    // Staged tiles are declared with room for their shadows.
    if !source.contains(&format!("(1 + {ASYNC_SHADOW}) * ")) {
        return Ok(None);
    }
    let at_wait = format!("#define {ASYNC_AT_WAIT} 1\n{source}");
    let mut owned: Vec<Vec<u8>> = bufs.iter().map(|b| b.to_vec()).collect();
    let mut views: Vec<&mut [u8]> = owned.iter_mut().map(|b| b.as_mut_slice()).collect();
    crate::gpu::opencl_runner::run_opencl(&at_wait, launches, &mut views)?;
    Ok(Some(owned))
}

/// The two runs of [`run_copies_at_wait`] execute the same arithmetic in the same order, so
/// every tensor must come out bit for bit the same: a difference means that a wait is
/// missing or misplaced (on CUDA, a kernel reading a stage before its `cp.async` landed),
/// or that a stage is refilled while it is still read.
fn copies_at_wait_agree(prog: &Program, at_wait: &[Vec<u8>], bufs: &[&mut [u8]]) -> Result<()> {
    use crate::codegen::cfamily::ASYNC_AT_WAIT;
    for (t, ten) in prog.tensors.iter().enumerate() {
        if ten.role != TensorRole::Temp && at_wait[t].as_slice() != &*bufs[t] {
            return Err(miette!(
                help = "a pipelined loop reads a stage before its copies have landed, or refills a stage while it is still read: a wait or a barrier is missing or misplaced (on CUDA, a race on cp.async)",
                "`{}` differs when the pipelined copies land only at their wait (OpenCL built with -D{ASYNC_AT_WAIT}) from when they land at issue",
                ten.name
            ));
        }
    }
    Ok(())
}

/// The bytes of a tensor's data.
fn bytes_of(d: &mut TensorData) -> &mut [u8] {
    let n = d.len() * d.dtype().size_bytes();
    // SAFETY: the buffer holds `len` elements of `size_bytes` each, contiguous.
    unsafe { std::slice::from_raw_parts_mut(d.buf.as_mut_ptr(), n) }
}

impl Executable for GpuExecutable {
    fn run(
        &self,
        prog: &Program,
        sizes: &[i64],
        tensors: &mut [TensorData],
        scalars: &[TensorData],
    ) -> Result<RunStats> {
        // Temporaries live on the device only (filled with NaN bytes under `--check`).
        let mut temps: Vec<TensorData> = Vec::new();
        let mut temp_index: HashMap<usize, usize> = HashMap::new();
        for (t, ten) in prog.tensors.iter().enumerate() {
            if ten.role == TensorRole::Temp {
                let shape = TensorData::shape_of(prog, t, sizes);
                temp_index.insert(t, temps.len());
                temps.push(if self.poison {
                    TensorData::poisoned(ten.dtype, shape)
                } else {
                    TensorData::zeros(ten.dtype, shape)
                });
            }
        }
        let n_real = tensors.len();
        let buffer_of = |t: usize| temp_index.get(&t).map_or(t, |i| n_real + i);
        // The fault status after the tensors and temporaries: 1 + the first statement
        // that divided integers by zero, 0 when none did.
        let mut fault = 0i32.to_ne_bytes();
        let launches = launch_plan(
            prog,
            &self.param_texts,
            &self.module,
            sizes,
            scalars,
            &buffer_of,
            n_real + temps.len(),
        )?;
        if std::env::var_os("POLYC_DEBUG_LAUNCH").is_some() {
            for l in &launches {
                eprintln!(
                    "polyc: launch {} grid {:?} block {:?}",
                    l.kernel, l.grid, l.block
                );
            }
        }
        let mut bufs: Vec<&mut [u8]> = tensors.iter_mut().map(bytes_of).collect();
        bufs.extend(temps.iter_mut().map(bytes_of));
        bufs.push(&mut fault);
        let start = Instant::now();
        let device = match &self.device {
            Chosen::OpenCl { source } => {
                let at_wait = match self.poison {
                    true => run_copies_at_wait(source, &launches, &bufs)?,
                    false => None,
                };
                let r = crate::gpu::opencl_runner::run_opencl(source, &launches, &mut bufs)?;
                if let Some(at_wait) = at_wait {
                    copies_at_wait_agree(prog, &at_wait, &bufs)?;
                }
                format!("OpenCL: {} ({})", r.device, r.platform)
            }
            Chosen::Cuda { ptx } => {
                let r = crate::gpu::cuda_tools::run_cuda(ptx, &launches, &mut bufs)?;
                format!("CUDA: {}", r.device)
            }
        };
        drop(bufs);
        match i32::from_ne_bytes(fault) {
            0 => {}
            k if k > 0 && (k as usize) <= prog.stmts.len() => {
                return Err(crate::target::division_by_zero(prog, k as usize - 1));
            }
            other => {
                return Err(miette!(
                    "the kernels of `{}` reported fault status {other}, which names no statement",
                    prog.name
                ))
            }
        }
        Ok(RunStats {
            run_ms: start.elapsed().as_secs_f64() * 1e3,
            device: Some(device),
        })
    }
}
