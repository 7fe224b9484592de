//! The target registry: which implementation of [`Target`] serves a description. It sits
//! above the target folders (`cpu/`, `gpu/`, `gemmini/`, `npu/`), which never import it.
//! The GPU and Gemmini targets are Cargo features (`gpu`, `gemmini`, both on by default);
//! a polyc built without one says so when a description of that kind is asked for.

use miette::Result;

use crate::cpu::{CcOptions, CpuTarget};
use crate::desc::{TargetDesc, TargetKind};
use crate::npu::AnalysisTarget;
use crate::target::{Device, Target};

/// The implementation for a description, chosen by its kind (`device` says which device
/// runs GPU kernels). This is the one place that looks at the kind. An error when the
/// kind's back end was left out of this build (its Cargo feature).
pub fn target_for(desc: TargetDesc, device: Device) -> Result<Box<dyn Target>> {
    Ok(match desc.kind {
        TargetKind::Cpu => Box::new(CpuTarget {
            cc: CcOptions::for_target(&desc),
            desc,
        }),
        TargetKind::Gpu => gpu(desc, device)?,
        TargetKind::Gemmini => gemmini(desc)?,
        TargetKind::Npu => Box::new(AnalysisTarget { desc }),
    })
}

#[cfg(feature = "gpu")]
fn gpu(desc: TargetDesc, device: Device) -> Result<Box<dyn Target>> {
    Ok(Box::new(crate::gpu::GpuTarget { desc, device }))
}

#[cfg(not(feature = "gpu"))]
fn gpu(desc: TargetDesc, _device: Device) -> Result<Box<dyn Target>> {
    Err(left_out(&desc, "gpu", "CUDA and OpenCL kernels for GPUs"))
}

#[cfg(feature = "gemmini")]
fn gemmini(desc: TargetDesc) -> Result<Box<dyn Target>> {
    Ok(Box::new(crate::gemmini::GemminiTarget::new(desc)))
}

#[cfg(not(feature = "gemmini"))]
fn gemmini(desc: TargetDesc) -> Result<Box<dyn Target>> {
    Err(left_out(&desc, "gemmini", "the Gemmini NPU"))
}

/// The error for a description whose back end this build left out.
#[cfg(any(not(feature = "gpu"), not(feature = "gemmini")))]
fn left_out(desc: &TargetDesc, feature: &str, what: &str) -> miette::Report {
    miette::miette!(
        help = format!(
            "rebuild polyc with the feature: `cargo build --release --features {feature}` (default builds have it; `--no-default-features` leaves it out)"
        ),
        "target `{}` (kind {}) needs polyc's `{feature}` feature ({what}), and this polyc was built without it",
        desc.name,
        desc.kind.name()
    )
}
