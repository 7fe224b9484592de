//! The target registry: which implementation of [`Target`] serves a description. It sits
//! above the target folders (`cpu/`, `gpu/`, `gemmini/`, `npu/`), which never import it.

use crate::cpu::{CcOptions, CpuTarget};
use crate::desc::{TargetDesc, TargetKind};
use crate::gemmini::GemminiTarget;
use crate::gpu::{Device, GpuTarget};
use crate::npu::AnalysisTarget;
use crate::target::Target;

/// The implementation for a description, chosen by its kind (`device` says which device
/// runs GPU kernels). This is the one place that looks at the kind.
pub fn target_for(desc: TargetDesc, device: Device) -> Box<dyn Target> {
    match desc.kind {
        TargetKind::Cpu => Box::new(CpuTarget {
            cc: CcOptions::for_target(&desc),
            desc,
        }),
        TargetKind::Gpu => Box::new(GpuTarget { desc, device }),
        TargetKind::Gemmini => Box::new(GemminiTarget::new(desc)),
        TargetKind::Npu => Box::new(AnalysisTarget { desc }),
    }
}
