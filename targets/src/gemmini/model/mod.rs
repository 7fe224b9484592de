//! A functional model of the Gemmini ISA (the RoCC instructions that `gemmini.h` emits).
//!
//! The model keeps Gemmini's architectural state — scratchpad, accumulator, the PE array's
//! registers, the configuration registers and the last `preload` — and executes decoded
//! instructions ([`Insn`]) against a DRAM given as a [`Dram`] implementation. It follows the
//! semantics of Gemmini's reference simulator (Spike with the Gemmini extension), which the
//! default `gemmini_params.h` configures:
//!
//! - **`mvin`**: `rows` DRAM rows, `load stride` bytes apart, of `cols` elements each. A row
//!   wider than DIM is split in blocks of DIM columns; block `b` lands `b × block stride`
//!   local rows further (the block stride is `DIM` unless `config_ld` says otherwise). Into
//!   the scratchpad, every int8 is scaled: `y = round_ties_even(x × scale as f32)`, then
//!   saturated to int8 (`MVIN_SCALE`). Into the accumulator, the DRAM elements are `acc_t`
//!   (int32, not scaled: the default configuration has no `HAS_MVIN_ACC_SCALE`), or int8
//!   scaled as above when `config_ld` set `shrunk`. Bit 30 of the local address adds into
//!   the accumulator row instead of overwriting it. A DRAM address of 0 loads zeros.
//! - **`mvout`**: from the scratchpad, the int8 rows are copied. From the accumulator, each
//!   int32 is scaled by `config_st`'s float scale, rounded to nearest even, saturated to
//!   int8 (`ACC_SCALE`), then the activation applies (ReLU: negative → 0); with bit 29 of
//!   the local address, the raw int32 are stored instead (no scale, no activation).
//! - **`preload` / `compute`**: see [`Gemmini::execute`]. In WS, `compute_preloaded` loads
//!   the preloaded B (the weights) into the PEs, then computes `C = D + A·B` with D the
//!   compute's BD operand; `compute_accumulated` keeps the weights. In OS,
//!   `compute_preloaded` loads the preloaded D into the PEs' accumulators, and every compute
//!   adds `A·B` (B is the compute's BD operand) to them; after each compute, the PEs'
//!   values go to the C address of the preceding `preload` (nothing when it is
//!   `GARBAGE_ADDR`). Results written into the accumulator are raw int32 (accumulated or
//!   overwriting per bit 30); results written into the scratchpad are rounded-right-shifted
//!   by `sys_shift` (OS only), saturated to int8, then `config_ex`'s activation applies.
//!   Operand rows and columns beyond the instruction's `rows`/`cols` read as zeros.
//! - Integer arithmetic wraps (two's complement), like the int32 datapath.
//!
//! The model is generic over the element types ([`ElemTypes`]): [`Int8`] is the default
//! configuration described above ([`GemminiConfig::default`]); [`Fp32`] is Gemmini's float
//! configuration ([`GemminiConfig::fp32`]: f32 everywhere, scales are plain multiplies,
//! no rounding or saturation, accumulator loads scaled too since it has
//! `HAS_MVIN_ACC_SCALE`, the array's shift divides by `2^shift`).
//!
//! What is not modelled, and is refused with [`ModelError::Unsupported`]: the hardware loop
//! FSMs (`gemmini_loop_ws`, `gemmini_loop_conv_ws`), pooling on `mvout`, the LayerNorm,
//! IGELU and Softmax activations (`config_norm`), preloads from the accumulator, and the
//! performance counters. Timing is not modelled: instructions complete in order, so
//! `fence` only counts.
//!
//! Where the reference simulator crashes or is silent, the model chooses and documents:
//! operands read by the array (A, B, D, the preloaded operand) must be scratchpad
//! addresses ([`ModelError::Unsupported`] otherwise); row and column counts above DIM on
//! `preload`/`compute`, and `mvin`/`mvout` rows wider than `MAX_BYTES`, are
//! [`ModelError::Invalid`]; a local row outside the scratchpad or accumulator is
//! [`ModelError::Invalid`]. The C address of a `preload` stays in force until the next
//! `preload`, so a compute with no `preload` before it writes to the same C again (as the
//! simulator does). A `config_ld` scale of 0.0 is 0.0 (some simulator versions read the
//! all-zero bits as 1.0; the macros always pass a scale, 1.0 by default). The
//! registers' reset values are documented on [`Registers`].
//!
//! The model counts what it executes in [`Counters`]: instructions by kind, rows and bytes
//! moved between DRAM and the scratchpad or accumulator, rows written by the array, and
//! MACs.

mod arith;
mod counters;
mod insn;
mod machine;
mod memory;

pub use arith::*;
pub use counters::*;
pub use insn::*;
pub use machine::*;
pub use memory::*;

/// The accumulator bit of a local address (bit 31).
pub const ACC_BIT: u32 = 1 << 31;
/// With [`ACC_BIT`]: accumulate into the row instead of overwriting it (bit 30).
pub const ACCUMULATE_BIT: u32 = 1 << 30;
/// On an `mvout` from the accumulator: store full `acc_t` values, unscaled (bit 29).
pub const FULL_ACC_BIT: u32 = 1 << 29;
/// The "no operand" local address (all ones).
pub const GARBAGE_ADDR: u32 = u32::MAX;
/// The row bits of a local address for `mvin` and the array (bits 28..0).
pub const ROW_MASK: u32 = (1 << 29) - 1;
/// The row bits of a local address for `mvout` (bits 25..0; bits 28..26 select a norm
/// command, which must be 0 here).
pub const MVOUT_ROW_MASK: u32 = (1 << 26) - 1;

/// RoCC `funct` values of the instructions (`k_*` in `gemmini.h`).
pub mod funct {
    /// `config_ex`, `config_ld`, `config_st` (told apart by `rs1[1:0]`).
    pub const CONFIG: u32 = 0;
    /// `mvin2`: an `mvin` with the second load configuration.
    pub const MVIN2: u32 = 1;
    /// `mvin`: the first load configuration.
    pub const MVIN: u32 = 2;
    /// `mvout`.
    pub const MVOUT: u32 = 3;
    /// `compute_preloaded`.
    pub const COMPUTE_PRELOADED: u32 = 4;
    /// `compute_accumulated`.
    pub const COMPUTE_ACCUMULATED: u32 = 5;
    /// `preload`.
    pub const PRELOAD: u32 = 6;
    /// `flush`.
    pub const FLUSH: u32 = 7;
    /// `mvin3`: an `mvin` with the third load configuration.
    pub const MVIN3: u32 = 14;
    /// Not a RoCC instruction: the host header reports `gemmini_fence()` with this value
    /// (on the chip, the fence is the core's own `fence`).
    pub const HOST_FENCE: u32 = 128;
}

/// Gemmini's sizes. The element types are the model's type parameter ([`ElemTypes`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GemminiConfig {
    /// The array is DIM × DIM PEs; a scratchpad row holds DIM `elem_t`, an accumulator row
    /// DIM `acc_t`.
    pub dim: usize,
    /// Scratchpad banks (`BANK_NUM`).
    pub sp_banks: usize,
    /// Rows per scratchpad bank (`BANK_ROWS`).
    pub sp_bank_rows: usize,
    /// Accumulator rows (`ACC_ROWS`).
    pub acc_rows: usize,
    /// Accumulator banks (not visible in addresses).
    pub acc_banks: usize,
    /// The widest DMA row in bytes (`MAX_BYTES`): an `mvin` row has at most
    /// `MAX_BYTES / (DIM × element size)` blocks of DIM columns.
    pub max_bytes: usize,
}

impl Default for GemminiConfig {
    /// The default configuration of `gemmini_params.h` (int8 inputs, int32 accumulator):
    /// DIM 16, 4 banks × 4096 rows of scratchpad (256 KiB), 1024 accumulator rows (64 KiB)
    /// in 2 banks, `MAX_BYTES` 64. Use it with [`Int8`].
    fn default() -> Self {
        GemminiConfig {
            dim: 16,
            sp_banks: 4,
            sp_bank_rows: 4096,
            acc_rows: 1024,
            acc_banks: 2,
            max_bytes: 64,
        }
    }
}

impl GemminiConfig {
    /// Gemmini's float configuration (`FP32DefaultConfig`: f32 inputs, weights and
    /// accumulator): a 4 × 4 array, 256 KiB of scratchpad in 4 banks (4096 rows of 4 f32
    /// each), 64 KiB of accumulator in 1 bank (4096 rows), `MAX_BYTES` 64. Use it with
    /// [`Fp32`].
    pub fn fp32() -> Self {
        GemminiConfig {
            dim: 4,
            sp_banks: 4,
            sp_bank_rows: 4096,
            acc_rows: 4096,
            acc_banks: 1,
            max_bytes: 64,
        }
    }
    /// Scratchpad rows in all banks.
    pub fn sp_rows(&self) -> usize {
        self.sp_banks * self.sp_bank_rows
    }
    /// `MAX_BLOCK_LEN` (`elem_bytes` = 1) or `MAX_BLOCK_LEN_ACC` (`elem_bytes` = 4): how
    /// many blocks of DIM columns one DMA row holds (at least 1).
    pub fn max_block_len(&self, elem_bytes: usize) -> usize {
        (self.max_bytes / (self.dim * elem_bytes)).max(1)
    }
}

/// Why the model refused an instruction.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// A feature of Gemmini that this model does not cover.
    #[error("not modelled: {0}")]
    Unsupported(String),
    /// An instruction that Gemmini's reference simulator rejects (out-of-range rows or
    /// columns, bad configurations).
    #[error("{0}")]
    Invalid(String),
    /// A DRAM access outside the memory given to the model.
    #[error("DRAM access of {len} bytes at {addr:#x} is outside the model's memory")]
    Dram {
        /// The first byte.
        addr: u64,
        /// The number of bytes.
        len: usize,
    },
    /// An instruction failed; `insn` is its text, `index` its position from 0.
    #[error("instruction {index} `{insn}`: {source}")]
    At {
        /// How many instructions ran before it.
        index: u64,
        /// The instruction, as its `gemmini.h` macro call.
        insn: String,
        /// What went wrong.
        #[source]
        source: Box<ModelError>,
    },
}
