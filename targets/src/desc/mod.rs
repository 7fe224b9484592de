//! Target descriptions: the data half of a target (`specs/targets/*.yaml`).
//!
//! A description names the target, its kind, a few machine figures, and its buffers from
//! outermost to innermost (the order of tiling levels): by scope (the chip's, a core's,
//! a block's, a thread's), and in the listed order within a scope, where a cache is at
//! least as large as every level inside it. One schema covers the CPU (cache
//! levels and the register file), GPUs (shared memory and registers) and Gemmini
//! (scratchpad and accumulator with element types and row widths):
//!
//! ```yaml
//! name: cpu
//! kind: cpu
//! buffers:
//!   - name: L2
//!     bytes: 2097152
//!   - name: L1
//!     bytes: 49152
//! ```
//!
//! A CPU description may also give `vector_bytes`, the preferred SIMD vector width in
//! bytes (64 for AVX-512), which the CPU runner passes on to the C compiler.
//!
//! Tiling does not depend on this crate: drivers pass [`TargetDesc::capacities`] to
//! `tiling::TileCx` and [`TargetDesc::buffer_order`] to `tiling::parse_tile_spec`.

use polyhedral::ir::DType;
use schedule_tree::{Buffer, BufferRole, Holds, Level};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod check;
mod host_caches;
mod load;
mod locate;

pub use host_caches::{detect_host_caches, HostCache};
pub use load::{BUILTIN, BUILTIN_CPU_YAML};

/// What kind of machine a description is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TargetKind {
    /// A CPU (C, with parallel loops over its cores).
    Cpu,
    /// A GPU (CUDA / OpenCL).
    Gpu,
    /// The Gemmini NPU.
    Gemmini,
    /// Another NPU (an Ascend-like core): tiling, fusion, promotion and `explain` only;
    /// polyc has no code emitter for it.
    Npu,
}

impl TargetKind {
    /// Every kind, for messages.
    pub const ALL: [TargetKind; 4] = [
        TargetKind::Cpu,
        TargetKind::Gpu,
        TargetKind::Gemmini,
        TargetKind::Npu,
    ];
    /// The spelling in descriptions.
    pub fn name(self) -> &'static str {
        match self {
            TargetKind::Cpu => "cpu",
            TargetKind::Gpu => "gpu",
            TargetKind::Gemmini => "gemmini",
            TargetKind::Npu => "npu",
        }
    }
}

/// A systolic array (Gemmini).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArrayDesc {
    /// The array is `dim × dim` processing elements.
    pub dim: u32,
    /// Supported dataflows (`ws`, `os`).
    #[serde(default)]
    pub dataflows: Vec<String>,
}

/// BACO's analytical cost model of a systolic array (thesis ch. 6, Tables 6.2 and 6.3):
/// bandwidths in words per cycle, energies per access (EPA) in the thesis' units.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostModel {
    /// Energy of one MAC.
    pub mac_energy: f64,
    /// EPA of the PE registers (level 0).
    pub register_epa: f64,
    /// Accumulator EPA = `accumulator_epa_base + accumulator_epa_slope · C1 / √N_PE`, C1
    /// the accumulator's capacity in KiB.
    pub accumulator_epa_base: f64,
    /// See [`CostModel::accumulator_epa_base`].
    pub accumulator_epa_slope: f64,
    /// Scratchpad EPA = `scratchpad_epa_base + scratchpad_epa_slope · C2`, C2 the
    /// scratchpad's capacity in KiB.
    pub scratchpad_epa_base: f64,
    /// See [`CostModel::scratchpad_epa_base`].
    pub scratchpad_epa_slope: f64,
    /// EPA of DRAM.
    pub dram_epa: f64,
    /// DRAM bandwidth in words per cycle (registers: 2·N_PE; accumulator and scratchpad:
    /// 2·√N_PE, from the array's size).
    pub dram_words_per_cycle: f64,
}

// The model's numbers are finite constants from a YAML file: equality is reflexive.
impl Eq for CostModel {}

/// Where a buffer lives and who shares it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Private to one thread (GPU registers).
    Thread,
    /// Shared by the threads of one block (GPU shared memory).
    Block,
    /// Private to one core (CPU L1, L2, registers; an NPU core's buffers).
    Core,
    /// Shared by every core of the chip (CPU L3).
    Chip,
}

impl Scope {
    /// The spelling in descriptions.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Thread => "thread",
            Scope::Block => "block",
            Scope::Core => "core",
            Scope::Chip => "chip",
        }
    }
}

/// One buffer (memory level). What it is comes from the description: its `role`, its
/// `scope` and its element type are data, and passes read them rather than the name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BufferDesc {
    /// The name tile specs and marks use (`L1`, `shared`, `scratchpad`, `L0A`, …): any
    /// identifier.
    pub name: String,
    /// What kind of memory it is: `cache`, `registers`, `shared_memory`, `scratchpad` or
    /// `accumulator` (see [`BufferRole`]).
    pub role: String,
    /// Who shares it: `thread`, `block`, `core` or `chip`.
    pub scope: Scope,
    /// Capacity in bytes: what one tile may use (per thread for registers, per block for
    /// shared memory).
    pub bytes: u64,
    /// Number of registers, for register files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registers: Option<u64>,
    /// Bytes per register or row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row_bytes: Option<u64>,
    /// The element type the buffer holds, if fixed (`i8`, `i32`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elem: Option<String>,
    /// Elements per row, if the buffer is row-addressed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row_elems: Option<u64>,
    /// Number of banks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub banks: Option<u32>,
    /// Bandwidth in GB/s for one core (reads plus writes), for the cost of post-tiling
    /// fusion: a cache that holds an unfused temporary moves it at this rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gbytes_per_s: Option<u64>,
    /// Which tensors of a tile the buffer holds, for the capacity check: `all` (the
    /// default: a cache), `results` (the tensors the tile writes: Gemmini's accumulator)
    /// or `operands` (the tensors it only reads: Gemmini's scratchpad).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holds: Option<String>,
}

impl BufferDesc {
    /// The buffer.
    pub fn buffer(&self) -> Buffer {
        Buffer::new(&self.name)
    }
    /// The role (validated by [`TargetDesc::load`]; an unknown one reads as a cache).
    pub fn role(&self) -> BufferRole {
        BufferRole::from_name(&self.role).unwrap_or(BufferRole::Cache)
    }
    /// The element type, if the buffer fixes one.
    pub fn elem_type(&self) -> Option<DType> {
        self.elem.as_deref().and_then(DType::from_name)
    }
    /// The level passes see.
    pub fn level(&self) -> Level {
        let holds = self
            .holds
            .as_deref()
            .and_then(Holds::from_name)
            .unwrap_or(Holds::All);
        Level::new(self.buffer(), self.bytes, self.role()).holding(holds)
    }
}

/// A target description.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetDesc {
    /// The target's name.
    pub name: String,
    /// The kind of machine.
    pub kind: TargetKind,
    /// CPU cores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores: Option<u32>,
    /// GPU streaming multiprocessors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sms: Option<u32>,
    /// GPU threads per warp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warp_size: Option<u32>,
    /// GPU threads per block, at most.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_threads_per_block: Option<u32>,
    /// GPU registers one thread may use, at most.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registers_per_thread: Option<u32>,
    /// Asynchronous global→shared copies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub async_copy: Option<bool>,
    /// Peak arithmetic throughput in GFLOP/s (FP32), for the roofline model of `explain`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_gflops: Option<u64>,
    /// DRAM bandwidth in GB/s, for the roofline model of `explain`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dram_gbytes_per_s: Option<u64>,
    /// Operations one call of a built-in function costs in the fusion cost model, by the
    /// function's source name (`exp`, `tanh`, …), at `peak_gflops`; an unlisted function
    /// costs one, like a FLOP.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub call_ops: BTreeMap<String, u64>,
    /// The CUDA architecture kernels are compiled for (`sm_80`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_arch: Option<String>,
    /// The systolic array (Gemmini).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array: Option<ArrayDesc>,
    /// The preferred SIMD vector width in bytes (CPU: 64 for AVX-512, 32 for AVX2, 16
    /// for SSE or NEON): a power of two from 16 to 256. The CPU runner turns it into
    /// `-mprefer-vector-width=<bytes × 8>` on x86 (see
    /// [`crate::cpu::runner::CcOptions::vector_bytes`]); without it, gcc keeps to 256-bit
    /// vectors even where AVX-512 is available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector_bytes: Option<u32>,
    /// BACO's cost model (Gemmini), for `polyc explain`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostModel>,
    /// Buffers from outermost to innermost. [`TargetDesc::load`] orders them by scope
    /// (chip, core, block, thread), keeping the listed order within a scope.
    pub buffers: Vec<BufferDesc>,
}

impl TargetDesc {
    /// The buffers, outermost first (the order of tiling levels).
    pub fn buffer_order(&self) -> Vec<Buffer> {
        self.buffers.iter().map(BufferDesc::buffer).collect()
    }

    /// The figures post-tiling fusion weighs ([`tiling::fuse::FuseCost`]): the peak rate,
    /// and every cache with a bandwidth plus the DRAM as homes of an unfused temporary.
    /// `None` without `peak_gflops` and `dram_gbytes_per_s`.
    pub fn fuse_cost(&self) -> Option<tiling::fuse::FuseCost> {
        let gops = self.peak_gflops? as f64;
        let dram = self.dram_gbytes_per_s? as f64;
        let mut homes: Vec<tiling::fuse::Home> = self
            .buffers
            .iter()
            .filter(|b| b.role() == BufferRole::Cache)
            .filter_map(|b| {
                Some(tiling::fuse::Home {
                    name: b.name.clone(),
                    bytes: Some(b.bytes),
                    gbytes_per_s: b.gbytes_per_s? as f64,
                })
            })
            .collect();
        homes.sort_by_key(|h| h.bytes);
        homes.push(tiling::fuse::Home {
            name: "DRAM".to_string(),
            bytes: None,
            gbytes_per_s: dram,
        });
        Some(tiling::fuse::FuseCost {
            gops,
            homes,
            call_ops: self.call_ops.clone(),
        })
    }
    /// The levels, outermost first: what `tiling::TileCx` takes.
    pub fn levels(&self) -> Vec<Level> {
        self.buffers.iter().map(BufferDesc::level).collect()
    }

    /// The description of `buffer`, if the target has it.
    pub fn buffer_desc(&self, buffer: Buffer) -> Option<&BufferDesc> {
        self.buffers.iter().find(|b| b.name == buffer.name())
    }
}

#[cfg(test)]
mod tests {
    use super::host_caches::parse_size;
    use super::*;
    use polyhedral::diag::SourceFile;

    fn load(text: &str) -> miette::Result<TargetDesc> {
        TargetDesc::load(&SourceFile::new("t.yaml", text))
    }

    #[test]
    fn shipped_descriptions_load() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../specs/targets/");
        let cpu = TargetDesc::load_path(&format!("{root}cpu.yaml")).expect("cpu.yaml");
        let b = Buffer::from_static;
        assert_eq!(
            cpu.levels(),
            vec![
                Level::new(b("L3"), 272629760, BufferRole::Cache),
                Level::new(b("L2"), 2097152, BufferRole::Cache),
                Level::new(b("L1"), 49152, BufferRole::Cache),
                Level::new(b("reg"), 2048, BufferRole::Registers)
            ]
        );
        assert_eq!(cpu.buffers[0].scope, Scope::Chip);
        assert_eq!(cpu.vector_bytes, Some(64));
        assert_eq!(TargetDesc::builtin_cpu().expect("built-in"), cpu);
        let gpu = TargetDesc::load_path(&format!("{root}a100.yaml")).expect("a100.yaml");
        assert_eq!(gpu.buffer_order(), vec![b("shared"), b("register")]);
        assert_eq!(gpu.levels()[0].role, BufferRole::SharedMemory);
        assert_eq!(gpu.buffers[1].scope, Scope::Thread);
        assert_eq!(gpu.sms, Some(108));
        assert_eq!(
            (gpu.peak_gflops, gpu.dram_gbytes_per_s),
            (Some(19500), Some(1555))
        );
        let h = TargetDesc::load_path(&format!("{root}h100.yaml")).expect("h100.yaml");
        assert_eq!(
            (h.peak_gflops, h.dram_gbytes_per_s),
            (Some(67000), Some(3350))
        );
        let g = TargetDesc::load_path(&format!("{root}gemmini.yaml")).expect("gemmini.yaml");
        assert_eq!(
            g.levels(),
            vec![
                Level::new(b("scratchpad"), 262144, BufferRole::Scratchpad)
                    .holding(Holds::Operands),
                Level::new(b("accumulator"), 65536, BufferRole::Accumulator)
                    .holding(Holds::Results)
            ]
        );
        assert_eq!(g.buffers[1].elem_type(), Some(DType::I32));
        assert_eq!(g.array.as_ref().map(|a| a.dim), Some(16));
        // An Ascend-like chip is data alone: five buffers polyc has no names for in code.
        let a = TargetDesc::load_path(&format!("{root}ascend.yaml")).expect("ascend.yaml");
        assert_eq!(a.kind, TargetKind::Npu);
        assert_eq!(
            a.buffer_order(),
            ["L1", "UB", "L0A", "L0B", "L0C"].map(Buffer::new).to_vec()
        );
        assert_eq!(a.levels()[4].role, BufferRole::Accumulator);
    }

    #[test]
    fn target_names_resolve() {
        assert_eq!(TargetDesc::resolve("gpu").expect("gpu").name, "a100");
        assert_eq!(TargetDesc::resolve("h100").expect("h100").name, "h100");
        assert_eq!(
            TargetDesc::resolve("cpu").expect("cpu").kind,
            TargetKind::Cpu
        );
        assert_eq!(
            TargetDesc::resolve("gemmini").expect("g").kind,
            TargetKind::Gemmini
        );
        let e = TargetDesc::resolve("tpu").expect_err("unknown");
        assert_eq!(
            format!("{e}"),
            "--target tpu: there is no built-in target `tpu` and no file of that name"
        );
        for (name, file, text) in BUILTIN {
            let on_disk = std::fs::read_to_string(format!(
                "{}/../specs/targets/{file}",
                env!("CARGO_MANIFEST_DIR")
            ))
            .expect("the built-in text is the file's");
            assert_eq!(&on_disk, text, "{name}");
        }
    }

    #[test]
    fn roles_are_checked() {
        let e = load("name: x\nkind: cpu\nbuffers:\n  - name: L1\n    role: fast\n    scope: core\n    bytes: 3\n")
            .unwrap_err();
        assert_eq!(format!("{e}"), "t.yaml:5:11: unknown buffer role `fast`");
        let e = load("name: x\nkind: cpu\nbuffers:\n  - name: L1\n    role: cache\n    bytes: 3\n")
            .unwrap_err();
        assert!(
            format!("{e}").starts_with(
                "t.yaml:4:5: invalid target description: buffers[0]: missing field `scope`"
            ),
            "{e}"
        );
    }

    #[test]
    fn errors_are_located() {
        let e = load("name: x\nkind: cpu\nbuffers:\n  - name: L1\n    byts: 3\n").unwrap_err();
        let text = format!("{e}");
        assert!(
            text.starts_with(
                "t.yaml:5:5: invalid target description: buffers[0]: unknown field `byts`"
            ),
            "{text}"
        );
        let e = load("name: x\nkind: cpu\nbuffers:\n  - name: 9L\n    role: cache\n    scope: core\n    bytes: 3\n").unwrap_err();
        assert_eq!(format!("{e}"), "t.yaml:4:11: `9L` is not a buffer name");
        let e = load("name: x\nkind: tpu\nbuffers: []\n").unwrap_err();
        assert!(
            format!("{e}")
                .starts_with("t.yaml:2:7: invalid target description: kind: unknown variant `tpu`"),
            "{e}"
        );
    }

    #[test]
    fn call_ops_name_built_in_functions() {
        let d = load("name: x\nkind: cpu\ncall_ops:\n  tanh: 1490\n  exp: 60\nbuffers: []\n")
            .expect("valid");
        assert_eq!(d.call_ops.get("tanh"), Some(&1490));
        let cost = TargetDesc {
            peak_gflops: Some(1),
            dram_gbytes_per_s: Some(1),
            ..d
        }
        .fuse_cost()
        .expect("figures");
        assert_eq!(cost.call_ops.get("exp"), Some(&60));
        let e = load("name: x\nkind: cpu\ncall_ops:\n  gelu: 90\nbuffers: []\n").unwrap_err();
        assert_eq!(
            format!("{e}"),
            "t.yaml:4:3: call_ops names `gelu`, which is not a built-in function"
        );
    }

    #[test]
    fn vector_width() {
        let d = load("name: x\nkind: cpu\nvector_bytes: 32\nbuffers: []\n").expect("valid");
        assert_eq!(d.vector_bytes, Some(32));
        let d = load("name: x\nkind: cpu\nbuffers: []\n").expect("valid");
        assert_eq!(d.vector_bytes, None);
        let e = load("name: x\nkind: cpu\nvector_bytes: 48\nbuffers: []\n").unwrap_err();
        assert_eq!(
            format!("{e}"),
            "t.yaml:3:15: vector_bytes is 48, which is not a vector width"
        );
        let e = load("name: x\nkind: cpu\nvector_bytes: 512\nbuffers: []\n").unwrap_err();
        assert_eq!(
            format!("{e}"),
            "t.yaml:3:15: vector_bytes is 512, which is not a vector width"
        );
        let e = load("name: x\nkind: cpu\nvector_bytes: wide\nbuffers: []\n").unwrap_err();
        assert!(
            format!("{e}").starts_with(
                "t.yaml:3:15: invalid target description: vector_bytes: invalid type: string \"wide\""
            ),
            "{e}"
        );
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("48K"), Some(49152));
        assert_eq!(parse_size("2048K"), Some(2097152));
        assert_eq!(parse_size("260M"), Some(272629760));
        assert_eq!(parse_size("x"), None);
    }
}
