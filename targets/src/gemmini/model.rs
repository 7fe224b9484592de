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

use std::fmt;

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

/// The element types of a Gemmini configuration and their arithmetic, as Gemmini's
/// reference simulator computes them.
pub trait ElemTypes: Clone + fmt::Debug + Default + 'static {
    /// `elem_t` (scratchpad, inputs, weights).
    type Elem: Copy + Default + PartialEq + fmt::Debug;
    /// `acc_t` (accumulator, PE sums).
    type Acc: Copy + Default + PartialEq + fmt::Debug;
    /// `sizeof(elem_t)`.
    const ELEM_BYTES: usize;
    /// `sizeof(acc_t)`.
    const ACC_BYTES: usize;
    /// Decodes a little-endian `elem_t`.
    fn elem_from_le(b: &[u8]) -> Self::Elem;
    /// Encodes a little-endian `elem_t`.
    fn elem_to_le(e: Self::Elem, out: &mut [u8]);
    /// Decodes a little-endian `acc_t`.
    fn acc_from_le(b: &[u8]) -> Self::Acc;
    /// Encodes a little-endian `acc_t`.
    fn acc_to_le(a: Self::Acc, out: &mut [u8]);
    /// `elem_t` → `acc_t` (exact).
    fn widen(e: Self::Elem) -> Self::Acc;
    /// `MVIN_SCALE` (into the scratchpad, or into the accumulator from `elem_t`).
    fn mvin_scale(e: Self::Elem, scale: f32) -> Self::Elem;
    /// `MVIN_SCALE_ACC` (into the accumulator from `acc_t`).
    fn mvin_scale_acc(a: Self::Acc, scale: f32) -> Self::Acc;
    /// `ACC_SCALE` with saturation to `elem_t` (`mvout` from the accumulator).
    fn acc_scale(a: Self::Acc, scale: f32) -> Self::Elem;
    /// `ROUNDING_RIGHT_SHIFT` with saturation to `elem_t` (array results into the
    /// scratchpad).
    fn sys_shift(a: Self::Acc, shift: u32) -> Self::Elem;
    /// ReLU.
    fn relu(e: Self::Elem) -> Self::Elem;
    /// Accumulating addition.
    fn add(x: Self::Acc, y: Self::Acc) -> Self::Acc;
    /// `acc + a × b` (a multiply, then an add).
    fn mac(acc: Self::Acc, a: Self::Acc, b: Self::Acc) -> Self::Acc;
}

/// The default configuration's types: `elem_t` = int8, `acc_t` = int32, float scales.
/// Integer arithmetic wraps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Int8;

impl ElemTypes for Int8 {
    type Elem = i8;
    type Acc = i32;
    const ELEM_BYTES: usize = 1;
    const ACC_BYTES: usize = 4;
    fn elem_from_le(b: &[u8]) -> i8 {
        b[0] as i8
    }
    fn elem_to_le(e: i8, out: &mut [u8]) {
        out[0] = e as u8;
    }
    fn acc_from_le(b: &[u8]) -> i32 {
        i32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }
    fn acc_to_le(a: i32, out: &mut [u8]) {
        out.copy_from_slice(&a.to_le_bytes());
    }
    fn widen(e: i8) -> i32 {
        e as i32
    }
    fn mvin_scale(e: i8, scale: f32) -> i8 {
        mvin_scale(e, scale)
    }
    /// The default configuration has no `HAS_MVIN_ACC_SCALE`: int32 loads are not scaled.
    fn mvin_scale_acc(a: i32, _scale: f32) -> i32 {
        a
    }
    fn acc_scale(a: i32, scale: f32) -> i8 {
        acc_scale(a, scale)
    }
    fn sys_shift(a: i32, shift: u32) -> i8 {
        sys_shift(a, shift)
    }
    fn relu(e: i8) -> i8 {
        e.max(0)
    }
    fn add(x: i32, y: i32) -> i32 {
        x.wrapping_add(y)
    }
    fn mac(acc: i32, a: i32, b: i32) -> i32 {
        acc.wrapping_add(a.wrapping_mul(b))
    }
}

/// The float configuration's types: `elem_t` = `acc_t` = f32, float scales. Scaling is a
/// plain f32 multiply (no rounding to integers, no saturation), the shift of array
/// results divides by `2^shift`, and a MAC is an f32 multiply followed by an f32 add (no
/// fused multiply-add).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fp32;

impl ElemTypes for Fp32 {
    type Elem = f32;
    type Acc = f32;
    const ELEM_BYTES: usize = 4;
    const ACC_BYTES: usize = 4;
    fn elem_from_le(b: &[u8]) -> f32 {
        f32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }
    fn elem_to_le(e: f32, out: &mut [u8]) {
        out.copy_from_slice(&e.to_le_bytes());
    }
    fn acc_from_le(b: &[u8]) -> f32 {
        Self::elem_from_le(b)
    }
    fn acc_to_le(a: f32, out: &mut [u8]) {
        Self::elem_to_le(a, out)
    }
    fn widen(e: f32) -> f32 {
        e
    }
    fn mvin_scale(e: f32, scale: f32) -> f32 {
        e * scale
    }
    fn mvin_scale_acc(a: f32, scale: f32) -> f32 {
        a * scale
    }
    fn acc_scale(a: f32, scale: f32) -> f32 {
        a * scale
    }
    fn sys_shift(a: f32, shift: u32) -> f32 {
        a / (1u64 << shift) as f32
    }
    /// `value > 0 ? value : 0` (NaN and −0 give +0).
    fn relu(e: f32) -> f32 {
        if e > 0.0 {
            e
        } else {
            0.0
        }
    }
    fn add(x: f32, y: f32) -> f32 {
        x + y
    }
    fn mac(acc: f32, a: f32, b: f32) -> f32 {
        let p = a * b;
        acc + p
    }
}

/// The dataflow (`config_ex`, `rs1[2]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dataflow {
    /// `OUTPUT_STATIONARY` (0): results stay in the PEs.
    OutputStationary,
    /// `WEIGHT_STATIONARY` (1): the weights stay in the PEs.
    WeightStationary,
}

/// An activation (`NO_ACTIVATION` = 0, `RELU` = 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activation {
    /// `NO_ACTIVATION`.
    None,
    /// `RELU`: negative values become 0.
    Relu,
}

impl Activation {
    fn code(self) -> u64 {
        match self {
            Activation::None => 0,
            Activation::Relu => 1,
        }
    }
    fn decode(code: u64, what: &str) -> Result<Activation, ModelError> {
        match code {
            0 => Ok(Activation::None),
            1 => Ok(Activation::Relu),
            2 => Err(ModelError::Unsupported(format!(
                "the LAYERNORM activation in {what}"
            ))),
            _ => Err(ModelError::Unsupported(format!(
                "the IGELU activation in {what}"
            ))),
        }
    }
    /// Applies the activation to an int8.
    pub fn apply(self, x: i8) -> i8 {
        match self {
            Activation::None => x,
            Activation::Relu => x.max(0),
        }
    }
}

/// One decoded Gemmini instruction, with the meaning of the `gemmini.h` macro that emits it.
///
/// Local addresses are the raw 32-bit values of the macros ([`ACC_BIT`], [`ACCUMULATE_BIT`],
/// [`FULL_ACC_BIT`], [`GARBAGE_ADDR`]). DRAM addresses are whatever the [`Dram`] in use
/// understands (host pointers for [`HostMemory`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Insn {
    /// `gemmini_extended3_config_ex(dataflow, act, sys_shift, acc_scale, C_stride,
    /// A_stride, A_transpose, B_transpose, set_only_strides)`; `gemmini_config_ex(df, act,
    /// shift)` is `A_stride = C_stride = 1`, no transposes, `acc_scale = 1.0`.
    ConfigEx {
        /// The dataflow.
        dataflow: Dataflow,
        /// The activation of results the array writes into the scratchpad.
        activation: Activation,
        /// The rounding right shift of OS results written into the scratchpad (< 32).
        sys_shift: u32,
        /// `sys_acc_scale` (kept in the state; the array does not use it).
        sys_acc_scale: f32,
        /// Row step between consecutive C rows written by the array.
        c_stride: u16,
        /// Row step between consecutive A rows read by the array.
        a_stride: u16,
        /// Read A transposed.
        a_transpose: bool,
        /// Read B transposed.
        b_transpose: bool,
        /// Only set `a_stride` and `c_stride`.
        set_only_strides: bool,
    },
    /// `gemmini_extended5_config_ld(stride, scale, shrunk, block_mvin_stride,
    /// pixel_repeats, id)`; `gemmini_extended_config_ld(stride, scale)` is `shrunk =
    /// false`, block stride DIM, one pixel, id 0.
    ConfigLd {
        /// DRAM bytes between consecutive rows of an `mvin`.
        stride: u64,
        /// The `mvin` scale (`scale_t`, float).
        scale: f32,
        /// Accumulator `mvin`s read int8 (scaled) instead of int32.
        shrunk: bool,
        /// Local rows between the DIM-column blocks of one `mvin` row.
        block_stride: u16,
        /// `pixel_repeats` (first-layer optimisation); 0 means 1.
        pixel_repeats: u8,
        /// Which `mvin` this configures: 0 `mvin`, 1 `mvin2`, 2 `mvin3`.
        id: u8,
    },
    /// `gemmini_extended_config_st(stride, act, acc_scale)` (pooling is not modelled).
    ConfigSt {
        /// DRAM bytes between consecutive rows of an `mvout`.
        stride: u32,
        /// The activation on `mvout` from the accumulator.
        activation: Activation,
        /// The accumulator scale (`acc_scale_t`, float).
        acc_scale: f32,
    },
    /// `gemmini_extended_mvin(dram_addr, local, cols, rows)` (`id` 0), `_mvin2` (1),
    /// `_mvin3` (2).
    Mvin {
        /// The load configuration used (0, 1, 2).
        id: u8,
        /// Source; 0 loads zeros.
        dram_addr: u64,
        /// Destination local address.
        local: u32,
        /// Elements per row.
        cols: u16,
        /// Rows.
        rows: u16,
    },
    /// `gemmini_extended_mvout(dram_addr, local, cols, rows)`.
    Mvout {
        /// Destination.
        dram_addr: u64,
        /// Source local address.
        local: u32,
        /// Elements per row.
        cols: u16,
        /// Rows.
        rows: u16,
    },
    /// `gemmini_extended_preload(BD, C, BD_cols, BD_rows, C_cols, C_rows)`.
    Preload {
        /// B (WS) or D (OS), loaded into the PEs by the next `compute_preloaded`.
        bd: u32,
        /// Where the next compute's result goes.
        c: u32,
        /// Columns of `bd`.
        bd_cols: u16,
        /// Rows of `bd`.
        bd_rows: u16,
        /// Columns of C written.
        c_cols: u16,
        /// Rows of C written.
        c_rows: u16,
    },
    /// `gemmini_extended_compute_preloaded(A, BD, A_cols, A_rows, BD_cols, BD_rows)`
    /// (`preloaded = true`) or `gemmini_extended_compute_accumulated(…)` (`false`).
    Compute {
        /// Whether the preloaded operand is loaded first (`compute_preloaded`).
        preloaded: bool,
        /// A.
        a: u32,
        /// D (WS) or B (OS).
        bd: u32,
        /// Columns of A.
        a_cols: u16,
        /// Rows of A.
        a_rows: u16,
        /// Columns of BD.
        bd_cols: u16,
        /// Rows of BD.
        bd_rows: u16,
    },
    /// `gemmini_flush(skip)`.
    Flush {
        /// The `skip` argument.
        skip: u64,
    },
    /// `gemmini_fence()`.
    Fence,
}

/// The kinds of instructions, for counting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum InsnKind {
    /// `config_ex`.
    ConfigEx,
    /// `config_ld`.
    ConfigLd,
    /// `config_st`.
    ConfigSt,
    /// `mvin`, `mvin2`, `mvin3`.
    Mvin,
    /// `mvout`.
    Mvout,
    /// `preload`.
    Preload,
    /// `compute_preloaded`.
    ComputePreloaded,
    /// `compute_accumulated`.
    ComputeAccumulated,
    /// `flush`.
    Flush,
    /// `fence`.
    Fence,
}

impl Insn {
    /// `gemmini_config_ex(dataflow, act, shift)`.
    pub fn config_ex(dataflow: Dataflow, activation: Activation, sys_shift: u32) -> Insn {
        Insn::ConfigEx {
            dataflow,
            activation,
            sys_shift,
            sys_acc_scale: 1.0,
            c_stride: 1,
            a_stride: 1,
            a_transpose: false,
            b_transpose: false,
            set_only_strides: false,
        }
    }
    /// `gemmini_extended_config_ld(stride, scale)`; `DIM` is the block stride.
    pub fn config_ld(stride: u64, scale: f32, dim: usize) -> Insn {
        Insn::ConfigLd {
            stride,
            scale,
            shrunk: false,
            block_stride: dim as u16,
            pixel_repeats: 1,
            id: 0,
        }
    }
    /// `gemmini_extended_config_st(stride, act, acc_scale)`.
    pub fn config_st(stride: u32, activation: Activation, acc_scale: f32) -> Insn {
        Insn::ConfigSt {
            stride,
            activation,
            acc_scale,
        }
    }
    /// `gemmini_extended_mvin(dram_addr, local, cols, rows)`.
    pub fn mvin(dram_addr: u64, local: u32, cols: u16, rows: u16) -> Insn {
        Insn::Mvin {
            id: 0,
            dram_addr,
            local,
            cols,
            rows,
        }
    }
    /// `gemmini_extended_mvout(dram_addr, local, cols, rows)`.
    pub fn mvout(dram_addr: u64, local: u32, cols: u16, rows: u16) -> Insn {
        Insn::Mvout {
            dram_addr,
            local,
            cols,
            rows,
        }
    }
    /// `gemmini_extended_preload(bd, c, bd_cols, bd_rows, c_cols, c_rows)`.
    pub fn preload(bd: u32, c: u32, bd_cols: u16, bd_rows: u16, c_cols: u16, c_rows: u16) -> Insn {
        Insn::Preload {
            bd,
            c,
            bd_cols,
            bd_rows,
            c_cols,
            c_rows,
        }
    }
    /// `gemmini_extended_compute_preloaded(a, bd, a_cols, a_rows, bd_cols, bd_rows)`.
    pub fn compute_preloaded(
        a: u32,
        bd: u32,
        a_cols: u16,
        a_rows: u16,
        bd_cols: u16,
        bd_rows: u16,
    ) -> Insn {
        Insn::Compute {
            preloaded: true,
            a,
            bd,
            a_cols,
            a_rows,
            bd_cols,
            bd_rows,
        }
    }
    /// `gemmini_extended_compute_accumulated(a, bd, a_cols, a_rows, bd_cols, bd_rows)`.
    pub fn compute_accumulated(
        a: u32,
        bd: u32,
        a_cols: u16,
        a_rows: u16,
        bd_cols: u16,
        bd_rows: u16,
    ) -> Insn {
        Insn::Compute {
            preloaded: false,
            a,
            bd,
            a_cols,
            a_rows,
            bd_cols,
            bd_rows,
        }
    }

    /// The instruction's kind.
    pub fn kind(&self) -> InsnKind {
        match self {
            Insn::ConfigEx { .. } => InsnKind::ConfigEx,
            Insn::ConfigLd { .. } => InsnKind::ConfigLd,
            Insn::ConfigSt { .. } => InsnKind::ConfigSt,
            Insn::Mvin { .. } => InsnKind::Mvin,
            Insn::Mvout { .. } => InsnKind::Mvout,
            Insn::Preload { .. } => InsnKind::Preload,
            Insn::Compute {
                preloaded: true, ..
            } => InsnKind::ComputePreloaded,
            Insn::Compute {
                preloaded: false, ..
            } => InsnKind::ComputeAccumulated,
            Insn::Flush { .. } => InsnKind::Flush,
            Insn::Fence => InsnKind::Fence,
        }
    }

    /// The RoCC encoding `(funct, rs1, rs2)`, bit for bit what `gemmini.h`'s macros pass
    /// to the instruction (fence: [`funct::HOST_FENCE`], zeros).
    pub fn encode(&self) -> (u32, u64, u64) {
        fn sized(addr: u32, cols: u16, rows: u16) -> u64 {
            ((rows as u64) << 48) | ((cols as u64) << 32) | addr as u64
        }
        match *self {
            Insn::ConfigEx {
                dataflow,
                activation,
                sys_shift,
                sys_acc_scale,
                c_stride,
                a_stride,
                a_transpose,
                b_transpose,
                set_only_strides,
            } => {
                let df = matches!(dataflow, Dataflow::WeightStationary) as u64;
                let rs1 = ((sys_acc_scale.to_bits() as u64) << 32)
                    | ((a_stride as u64) << 16)
                    | ((b_transpose as u64) << 9)
                    | ((a_transpose as u64) << 8)
                    | ((set_only_strides as u64) << 7)
                    | (activation.code() << 3)
                    | (df << 2);
                let rs2 = ((c_stride as u64) << 48) | sys_shift as u64;
                (funct::CONFIG, rs1, rs2)
            }
            Insn::ConfigLd {
                stride,
                scale,
                shrunk,
                block_stride,
                pixel_repeats,
                id,
            } => {
                let rs1 = ((scale.to_bits() as u64) << 32)
                    | ((block_stride as u64) << 16)
                    | ((pixel_repeats as u64) << 8)
                    | ((id as u64) << 3)
                    | ((shrunk as u64) << 2)
                    | 1;
                (funct::CONFIG, rs1, stride)
            }
            Insn::ConfigSt {
                stride,
                activation,
                acc_scale,
            } => {
                let rs1 = (activation.code() << 2) | 2;
                let rs2 = ((acc_scale.to_bits() as u64) << 32) | stride as u64;
                (funct::CONFIG, rs1, rs2)
            }
            Insn::Mvin {
                id,
                dram_addr,
                local,
                cols,
                rows,
            } => {
                let f = match id {
                    1 => funct::MVIN2,
                    2 => funct::MVIN3,
                    _ => funct::MVIN,
                };
                (f, dram_addr, sized(local, cols, rows))
            }
            Insn::Mvout {
                dram_addr,
                local,
                cols,
                rows,
            } => (funct::MVOUT, dram_addr, sized(local, cols, rows)),
            Insn::Preload {
                bd,
                c,
                bd_cols,
                bd_rows,
                c_cols,
                c_rows,
            } => (
                funct::PRELOAD,
                sized(bd, bd_cols, bd_rows),
                sized(c, c_cols, c_rows),
            ),
            Insn::Compute {
                preloaded,
                a,
                bd,
                a_cols,
                a_rows,
                bd_cols,
                bd_rows,
            } => (
                if preloaded {
                    funct::COMPUTE_PRELOADED
                } else {
                    funct::COMPUTE_ACCUMULATED
                },
                sized(a, a_cols, a_rows),
                sized(bd, bd_cols, bd_rows),
            ),
            Insn::Flush { skip } => (funct::FLUSH, skip, 0),
            Insn::Fence => (funct::HOST_FENCE, 0, 0),
        }
    }

    /// Decodes a RoCC instruction as Gemmini's reference simulator does. Instructions this
    /// model does not cover are [`ModelError::Unsupported`]; unknown instructions are
    /// [`ModelError::Invalid`]. Operand values are checked when the instruction executes.
    pub fn decode(funct: u32, rs1: u64, rs2: u64) -> Result<Insn, ModelError> {
        let addr = |r: u64| r as u32;
        let cols = |r: u64| (r >> 32) as u16;
        let rows = |r: u64| (r >> 48) as u16;
        match funct {
            funct::CONFIG => match rs1 & 3 {
                0 => {
                    let dataflow = if (rs1 >> 2) & 1 == 1 {
                        Dataflow::WeightStationary
                    } else {
                        Dataflow::OutputStationary
                    };
                    let activation = Activation::decode((rs1 >> 3) & 3, "config_ex")?;
                    let sys_shift = rs2 as u32;
                    let a_transpose = (rs1 >> 8) & 1 == 1;
                    let b_transpose = (rs1 >> 9) & 1 == 1;
                    let set_only_strides = (rs1 >> 7) & 1 == 1;
                    Ok(Insn::ConfigEx {
                        dataflow,
                        activation,
                        sys_shift,
                        sys_acc_scale: f32::from_bits((rs1 >> 32) as u32),
                        c_stride: (rs2 >> 48) as u16,
                        a_stride: (rs1 >> 16) as u16,
                        a_transpose,
                        b_transpose,
                        set_only_strides,
                    })
                }
                1 => {
                    let id = ((rs1 >> 3) & 3) as u8;
                    if id > 2 {
                        return Err(ModelError::Invalid(
                            "config_ld: load configuration id 3 does not exist".into(),
                        ));
                    }
                    Ok(Insn::ConfigLd {
                        stride: rs2,
                        scale: f32::from_bits((rs1 >> 32) as u32),
                        shrunk: (rs1 >> 2) & 1 == 1,
                        block_stride: (rs1 >> 16) as u16,
                        pixel_repeats: (rs1 >> 8) as u8,
                        id,
                    })
                }
                2 => {
                    if (rs1 >> 4) & 3 != 0 {
                        return Err(ModelError::Unsupported(
                            "pooling on mvout (config_st with a pool stride)".into(),
                        ));
                    }
                    Ok(Insn::ConfigSt {
                        stride: rs2 as u32,
                        activation: Activation::decode((rs1 >> 2) & 3, "config_st")?,
                        acc_scale: f32::from_bits((rs2 >> 32) as u32),
                    })
                }
                _ => Err(ModelError::Unsupported(
                    "config_norm (normalisation activations)".into(),
                )),
            },
            funct::MVIN | funct::MVIN2 | funct::MVIN3 => Ok(Insn::Mvin {
                id: match funct {
                    funct::MVIN => 0,
                    funct::MVIN2 => 1,
                    _ => 2,
                },
                dram_addr: rs1,
                local: addr(rs2),
                cols: cols(rs2),
                rows: rows(rs2),
            }),
            funct::MVOUT => Ok(Insn::Mvout {
                dram_addr: rs1,
                local: addr(rs2),
                cols: cols(rs2),
                rows: rows(rs2),
            }),
            funct::PRELOAD => Ok(Insn::Preload {
                bd: addr(rs1),
                c: addr(rs2),
                bd_cols: cols(rs1),
                bd_rows: rows(rs1),
                c_cols: cols(rs2),
                c_rows: rows(rs2),
            }),
            funct::COMPUTE_PRELOADED | funct::COMPUTE_ACCUMULATED => Ok(Insn::Compute {
                preloaded: funct == funct::COMPUTE_PRELOADED,
                a: addr(rs1),
                bd: addr(rs2),
                a_cols: cols(rs1),
                a_rows: rows(rs1),
                bd_cols: cols(rs2),
                bd_rows: rows(rs2),
            }),
            funct::FLUSH => Ok(Insn::Flush { skip: rs1 }),
            funct::HOST_FENCE => Ok(Insn::Fence),
            8..=13 | 15..=21 => Err(ModelError::Unsupported(format!(
                "the hardware loop instructions (funct {funct}: gemmini_loop_ws / \
                 gemmini_loop_conv_ws)"
            ))),
            126 => Err(ModelError::Unsupported("the performance counters".into())),
            _ => Err(ModelError::Invalid(format!(
                "unknown Gemmini instruction funct {funct}"
            ))),
        }
    }
}

fn fmt_local(addr: u32) -> String {
    if addr == GARBAGE_ADDR {
        "GARBAGE_ADDR".to_string()
    } else {
        format!("{addr:#x}")
    }
}

impl fmt::Display for Insn {
    /// The instruction as the `gemmini.h` macro call that emits it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let act = |a: &Activation| match a {
            Activation::None => "NO_ACTIVATION",
            Activation::Relu => "RELU",
        };
        match self {
            Insn::ConfigEx {
                dataflow,
                activation,
                sys_shift,
                sys_acc_scale,
                c_stride,
                a_stride,
                a_transpose,
                b_transpose,
                set_only_strides,
            } => write!(
                f,
                "gemmini_extended3_config_ex({}, {}, {sys_shift}, {sys_acc_scale:?}, {c_stride}, \
                 {a_stride}, {}, {}, {})",
                match dataflow {
                    Dataflow::OutputStationary => "OUTPUT_STATIONARY",
                    Dataflow::WeightStationary => "WEIGHT_STATIONARY",
                },
                act(activation),
                *a_transpose as u8,
                *b_transpose as u8,
                *set_only_strides as u8
            ),
            Insn::ConfigLd {
                stride,
                scale,
                shrunk,
                block_stride,
                pixel_repeats,
                id,
            } => write!(
                f,
                "gemmini_extended5_config_ld({stride}, {scale:?}, {}, {block_stride}, \
                 {pixel_repeats}, {id})",
                *shrunk as u8
            ),
            Insn::ConfigSt {
                stride,
                activation,
                acc_scale,
            } => write!(
                f,
                "gemmini_extended_config_st({stride}, {}, {acc_scale:?})",
                act(activation)
            ),
            Insn::Mvin {
                id,
                dram_addr,
                local,
                cols,
                rows,
            } => {
                let n = match id {
                    0 => String::new(),
                    i => (i + 1).to_string(),
                };
                write!(
                    f,
                    "gemmini_extended_mvin{n}({dram_addr:#x}, {}, {cols}, {rows})",
                    fmt_local(*local)
                )
            }
            Insn::Mvout {
                dram_addr,
                local,
                cols,
                rows,
            } => write!(
                f,
                "gemmini_extended_mvout({dram_addr:#x}, {}, {cols}, {rows})",
                fmt_local(*local)
            ),
            Insn::Preload {
                bd,
                c,
                bd_cols,
                bd_rows,
                c_cols,
                c_rows,
            } => write!(
                f,
                "gemmini_extended_preload({}, {}, {bd_cols}, {bd_rows}, {c_cols}, {c_rows})",
                fmt_local(*bd),
                fmt_local(*c)
            ),
            Insn::Compute {
                preloaded,
                a,
                bd,
                a_cols,
                a_rows,
                bd_cols,
                bd_rows,
            } => write!(
                f,
                "gemmini_extended_compute_{}({}, {}, {a_cols}, {a_rows}, {bd_cols}, {bd_rows})",
                if *preloaded {
                    "preloaded"
                } else {
                    "accumulated"
                },
                fmt_local(*a),
                fmt_local(*bd)
            ),
            Insn::Flush { skip } => write!(f, "gemmini_flush({skip})"),
            Insn::Fence => write!(f, "gemmini_fence()"),
        }
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

/// The DRAM the model reads and writes: byte addresses as `mvin`/`mvout` carry them.
pub trait Dram {
    /// Reads `buf.len()` bytes from `addr`.
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), ModelError>;
    /// Writes `data` at `addr`.
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), ModelError>;
}

/// A flat DRAM: `bytes[i]` is at address `base + i`. Address 0 means "zeros" to `mvin`,
/// so `base` should not be 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlatMemory {
    /// The address of `bytes[0]`.
    pub base: u64,
    /// The contents.
    pub bytes: Vec<u8>,
}

impl FlatMemory {
    /// The default base address of [`FlatMemory::zeroed`].
    pub const DEFAULT_BASE: u64 = 0x1000_0000;

    /// `size` zero bytes at [`FlatMemory::DEFAULT_BASE`].
    pub fn zeroed(size: usize) -> FlatMemory {
        FlatMemory {
            base: Self::DEFAULT_BASE,
            bytes: vec![0; size],
        }
    }
    /// The byte range of `[addr, addr + len)` in `bytes`, if inside.
    fn range(&self, addr: u64, len: usize) -> Result<std::ops::Range<usize>, ModelError> {
        let err = ModelError::Dram { addr, len };
        let off = addr.checked_sub(self.base).ok_or(err.clone())?;
        let off = usize::try_from(off).map_err(|_| err.clone())?;
        let end = off.checked_add(len).ok_or(err.clone())?;
        if end > self.bytes.len() {
            return Err(err);
        }
        Ok(off..end)
    }
    /// The address of byte `offset`.
    pub fn addr(&self, offset: usize) -> u64 {
        self.base + offset as u64
    }
}

impl Dram for FlatMemory {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), ModelError> {
        let r = self.range(addr, buf.len())?;
        buf.copy_from_slice(&self.bytes[r]);
        Ok(())
    }
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), ModelError> {
        let r = self.range(addr, data.len())?;
        self.bytes[r].copy_from_slice(data);
        Ok(())
    }
}

/// The host's own memory: DRAM addresses are host pointers (the host-header path, where C
/// passes its pointers to the model).
#[derive(Debug)]
pub struct HostMemory {
    _private: (),
}

impl HostMemory {
    /// A view of the whole address space.
    ///
    /// # Safety
    /// Every DRAM address that the executed instructions carry, with the bytes they read or
    /// write from there, must be valid host memory for that access while the model runs
    /// (reads of memory that is being written elsewhere, or writes to memory Rust holds a
    /// reference to, are undefined behaviour).
    pub unsafe fn new() -> HostMemory {
        HostMemory { _private: () }
    }
}

impl Dram for HostMemory {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), ModelError> {
        if addr == 0 {
            return Err(ModelError::Dram {
                addr,
                len: buf.len(),
            });
        }
        // SAFETY: the contract of `HostMemory::new`.
        unsafe {
            std::ptr::copy_nonoverlapping(addr as usize as *const u8, buf.as_mut_ptr(), buf.len())
        };
        Ok(())
    }
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), ModelError> {
        if addr == 0 {
            return Err(ModelError::Dram {
                addr,
                len: data.len(),
            });
        }
        // SAFETY: the contract of `HostMemory::new`.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), addr as usize as *mut u8, data.len())
        };
        Ok(())
    }
}

/// What the model counted.
///
/// Rows are local rows (a scratchpad row is DIM int8, an accumulator row DIM int32): an
/// `mvin`/`mvout` row of `cols` elements touches `ceil(cols / DIM)` local rows. Bytes are
/// DRAM bytes (an `mvin` from address 0 reads none).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// `config_ex` instructions.
    pub config_ex: u64,
    /// `config_ld` instructions.
    pub config_ld: u64,
    /// `config_st` instructions.
    pub config_st: u64,
    /// `mvin` instructions (all three load configurations).
    pub mvin: u64,
    /// `mvout` instructions.
    pub mvout: u64,
    /// `preload` instructions.
    pub preload: u64,
    /// `compute_preloaded` instructions.
    pub compute_preloaded: u64,
    /// `compute_accumulated` instructions.
    pub compute_accumulated: u64,
    /// `flush` instructions.
    pub flush: u64,
    /// `fence`s.
    pub fence: u64,
    /// Scratchpad rows written by `mvin`.
    pub dram_to_spad_rows: u64,
    /// DRAM bytes read by `mvin` into the scratchpad.
    pub dram_to_spad_bytes: u64,
    /// Accumulator rows written by `mvin`.
    pub dram_to_acc_rows: u64,
    /// DRAM bytes read by `mvin` into the accumulator.
    pub dram_to_acc_bytes: u64,
    /// Accumulator rows read by `mvout`.
    pub acc_to_dram_rows: u64,
    /// DRAM bytes written by `mvout` from the accumulator.
    pub acc_to_dram_bytes: u64,
    /// Scratchpad rows read by `mvout`.
    pub spad_to_dram_rows: u64,
    /// DRAM bytes written by `mvout` from the scratchpad.
    pub spad_to_dram_bytes: u64,
    /// Accumulator rows the array wrote (accumulating or overwriting).
    pub array_to_acc_rows: u64,
    /// Scratchpad rows the array wrote.
    pub array_to_spad_rows: u64,
    /// Useful MACs: per compute, A's rows × the shared dimension (A's columns, capped by
    /// the rows of B or of the weights) × B's columns, each capped at DIM.
    pub macs: u64,
    /// MACs the array performs whatever the sizes: DIM³ per compute.
    pub array_macs: u64,
}

impl Counters {
    /// The count of one kind of instruction.
    pub fn insns(&self, kind: InsnKind) -> u64 {
        match kind {
            InsnKind::ConfigEx => self.config_ex,
            InsnKind::ConfigLd => self.config_ld,
            InsnKind::ConfigSt => self.config_st,
            InsnKind::Mvin => self.mvin,
            InsnKind::Mvout => self.mvout,
            InsnKind::Preload => self.preload,
            InsnKind::ComputePreloaded => self.compute_preloaded,
            InsnKind::ComputeAccumulated => self.compute_accumulated,
            InsnKind::Flush => self.flush,
            InsnKind::Fence => self.fence,
        }
    }
    /// All instructions.
    pub fn total_insns(&self) -> u64 {
        self.config_ex
            + self.config_ld
            + self.config_st
            + self.mvin
            + self.mvout
            + self.preload
            + self.compute_preloaded
            + self.compute_accumulated
            + self.flush
            + self.fence
    }
    fn bump(&mut self, kind: InsnKind) {
        let c = match kind {
            InsnKind::ConfigEx => &mut self.config_ex,
            InsnKind::ConfigLd => &mut self.config_ld,
            InsnKind::ConfigSt => &mut self.config_st,
            InsnKind::Mvin => &mut self.mvin,
            InsnKind::Mvout => &mut self.mvout,
            InsnKind::Preload => &mut self.preload,
            InsnKind::ComputePreloaded => &mut self.compute_preloaded,
            InsnKind::ComputeAccumulated => &mut self.compute_accumulated,
            InsnKind::Flush => &mut self.flush,
            InsnKind::Fence => &mut self.fence,
        };
        *c += 1;
    }
}

/// One load configuration (`config_ld` with its `id`).
#[derive(Clone, Debug, PartialEq)]
pub struct LoadConfig {
    /// DRAM bytes between rows.
    pub stride: u64,
    /// The `mvin` scale.
    pub scale: f32,
    /// Accumulator `mvin`s read int8.
    pub shrunk: bool,
    /// Local rows between DIM-column blocks.
    pub block_stride: u64,
    /// Pixel repeats (at least 1).
    pub pixel_repeats: u64,
}

/// The configuration registers.
///
/// At reset they hold what the shortest config macros would set (`config_ex(OS,
/// NO_ACTIVATION, 0)`, `config_ld(DIM)`, `config_st(DIM)`); programs should configure
/// before use, as on the chip.
#[derive(Clone, Debug, PartialEq)]
pub struct Registers {
    /// The dataflow.
    pub dataflow: Dataflow,
    /// The activation of array results written into the scratchpad.
    pub sys_act: Activation,
    /// The rounding right shift of OS results written into the scratchpad.
    pub sys_shift: u32,
    /// `config_ex`'s accumulator scale (stored, unused by the array).
    pub sys_acc_scale: f32,
    /// Row step of A reads.
    pub a_stride: u64,
    /// Row step of C writes.
    pub c_stride: u64,
    /// A is read transposed.
    pub a_transpose: bool,
    /// B is read transposed.
    pub b_transpose: bool,
    /// The three load configurations (`mvin`, `mvin2`, `mvin3`).
    pub load: [LoadConfig; 3],
    /// DRAM bytes between `mvout` rows.
    pub store_stride: u64,
    /// The activation on `mvout` from the accumulator.
    pub acc_act: Activation,
    /// The accumulator scale on `mvout`.
    pub acc_scale: f32,
}

/// The operands named by the last `preload`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PreloadState {
    /// B (WS) or D (OS).
    pub bd: u32,
    /// Columns of `bd`.
    pub bd_cols: u16,
    /// Rows of `bd`.
    pub bd_rows: u16,
    /// Where results go.
    pub c: u32,
    /// Columns written.
    pub c_cols: u16,
    /// Rows written.
    pub c_rows: u16,
}

/// `MVIN_SCALE`: `x × scale` in f32, rounded to nearest even, saturated to int8.
pub fn mvin_scale(x: i8, scale: f32) -> i8 {
    saturate_i8((x as f32) * scale)
}

/// `ACC_SCALE`: `x × scale` in f32 (the int32 rounded to f32 first, as C converts it),
/// rounded to nearest even, saturated to int8. NaN gives 0.
pub fn acc_scale(x: i32, scale: f32) -> i8 {
    saturate_i8((x as f32) * scale)
}

fn saturate_i8(y: f32) -> i8 {
    let y = y.round_ties_even();
    if y > 127.0 {
        127
    } else if y < -128.0 {
        -128
    } else {
        y as i8
    }
}

/// `ROUNDING_RIGHT_SHIFT(x, shift)` (round half to even), then saturation to int8.
pub fn sys_shift(x: i32, shift: u32) -> i8 {
    let v = rounding_right_shift(x, shift);
    v.clamp(i8::MIN as i32, i8::MAX as i32) as i8
}

/// `ROUNDING_RIGHT_SHIFT(x, shift)` of `gemmini_params.h`: an arithmetic right shift by
/// `shift` that rounds half to even (`shift < 32`).
pub fn rounding_right_shift(x: i32, shift: u32) -> i32 {
    if shift == 0 {
        return x;
    }
    let q = x >> shift;
    let half = (x >> (shift - 1)) & 1;
    let rest = if shift <= 1 {
        0
    } else {
        x & ((1i32 << (shift - 1)) - 1)
    };
    q + (half & (((rest != 0) as i32) | (q & 1)))
}

/// A Gemmini: state plus counters. See the module documentation for the semantics. `T`
/// gives the element types: [`Int8`] (the default configuration) or [`Fp32`].
#[derive(Clone, Debug)]
pub struct Gemmini<T: ElemTypes = Int8> {
    cfg: GemminiConfig,
    spad: Vec<T::Elem>,
    acc: Vec<T::Acc>,
    /// WS: the weights; OS: the partial sums.
    pe: Vec<T::Acc>,
    /// Rows and columns of the weights loaded into the PEs (WS), for counting MACs.
    pe_extent: (usize, usize),
    regs: Registers,
    preload: PreloadState,
    counters: Counters,
    executed: u64,
    trace: Option<Vec<Insn>>,
}

impl Gemmini<Int8> {
    /// An int8 Gemmini in reset state (see [`Gemmini::with_types`]).
    pub fn new(cfg: GemminiConfig) -> Gemmini<Int8> {
        Self::with_types(cfg)
    }
}

impl<T: ElemTypes> Gemmini<T> {
    /// A Gemmini in reset state: memories zero, registers as documented on [`Registers`].
    pub fn with_types(cfg: GemminiConfig) -> Gemmini<T> {
        let dim = cfg.dim;
        let load = LoadConfig {
            stride: dim as u64,
            scale: 1.0,
            shrunk: false,
            block_stride: dim as u64,
            pixel_repeats: 1,
        };
        Gemmini {
            spad: vec![T::Elem::default(); cfg.sp_rows() * dim],
            acc: vec![T::Acc::default(); cfg.acc_rows * dim],
            pe: vec![T::Acc::default(); dim * dim],
            pe_extent: (0, 0),
            regs: Registers {
                dataflow: Dataflow::OutputStationary,
                sys_act: Activation::None,
                sys_shift: 0,
                sys_acc_scale: 1.0,
                a_stride: 1,
                c_stride: 1,
                a_transpose: false,
                b_transpose: false,
                load: [load.clone(), load.clone(), load],
                store_stride: dim as u64,
                acc_act: Activation::None,
                acc_scale: 1.0,
            },
            preload: PreloadState {
                bd: GARBAGE_ADDR,
                bd_cols: 0,
                bd_rows: 0,
                c: GARBAGE_ADDR,
                c_cols: 0,
                c_rows: 0,
            },
            counters: Counters::default(),
            executed: 0,
            trace: None,
            cfg,
        }
    }

    /// The sizes.
    pub fn config(&self) -> &GemminiConfig {
        &self.cfg
    }
    /// The configuration registers.
    pub fn registers(&self) -> &Registers {
        &self.regs
    }
    /// The last `preload`'s operands.
    pub fn preload_state(&self) -> &PreloadState {
        &self.preload
    }
    /// What was counted so far.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }
    /// Zeroes the counters.
    pub fn reset_counters(&mut self) {
        self.counters = Counters::default();
    }
    /// Starts (`true`, with an empty trace) or stops (`false`, dropping it) recording the
    /// instructions that execute successfully.
    pub fn record_trace(&mut self, on: bool) {
        self.trace = on.then(Vec::new);
    }
    /// The recorded instructions (empty when not recording).
    pub fn trace(&self) -> &[Insn] {
        self.trace.as_deref().unwrap_or(&[])
    }
    /// Scratchpad row `row` (panics when out of range).
    pub fn spad_row(&self, row: usize) -> &[T::Elem] {
        let d = self.cfg.dim;
        &self.spad[row * d..(row + 1) * d]
    }
    /// Accumulator row `row` (panics when out of range).
    pub fn acc_row(&self, row: usize) -> &[T::Acc] {
        let d = self.cfg.dim;
        &self.acc[row * d..(row + 1) * d]
    }

    /// Decodes and executes one RoCC instruction (see [`Insn::decode`]).
    pub fn execute_raw(
        &mut self,
        funct: u32,
        rs1: u64,
        rs2: u64,
        mem: &mut dyn Dram,
    ) -> Result<(), ModelError> {
        match Insn::decode(funct, rs1, rs2) {
            Ok(insn) => self.execute(&insn, mem),
            Err(e) => Err(ModelError::At {
                index: self.executed,
                insn: format!("funct {funct}, rs1 {rs1:#x}, rs2 {rs2:#x}"),
                source: Box::new(e),
            }),
        }
    }

    /// Executes one instruction. An error leaves the state as far as the instruction got
    /// and names the instruction ([`ModelError::At`]).
    pub fn execute(&mut self, insn: &Insn, mem: &mut dyn Dram) -> Result<(), ModelError> {
        let r = self.step(insn, mem);
        let index = self.executed;
        self.executed += 1;
        match r {
            Ok(()) => {
                self.counters.bump(insn.kind());
                if let Some(t) = &mut self.trace {
                    t.push(insn.clone());
                }
                Ok(())
            }
            Err(e) => Err(ModelError::At {
                index,
                insn: insn.to_string(),
                source: Box::new(e),
            }),
        }
    }

    /// Executes instructions in order, stopping at the first error.
    pub fn run(&mut self, insns: &[Insn], mem: &mut dyn Dram) -> Result<(), ModelError> {
        insns.iter().try_for_each(|i| self.execute(i, mem))
    }

    fn step(&mut self, insn: &Insn, mem: &mut dyn Dram) -> Result<(), ModelError> {
        match *insn {
            Insn::ConfigEx {
                dataflow,
                activation,
                sys_shift,
                sys_acc_scale,
                c_stride,
                a_stride,
                a_transpose,
                b_transpose,
                set_only_strides,
            } => {
                if sys_shift >= 32 {
                    return Err(ModelError::Invalid(format!(
                        "config_ex: sys_shift {sys_shift} is not below 32"
                    )));
                }
                if !set_only_strides {
                    match dataflow {
                        Dataflow::OutputStationary if !a_transpose && b_transpose => {
                            return Err(ModelError::Invalid(
                                "config_ex: OS does not support transposing B alone".into(),
                            ))
                        }
                        Dataflow::WeightStationary if a_transpose && b_transpose => {
                            return Err(ModelError::Invalid(
                                "config_ex: WS does not support transposing both A and B".into(),
                            ))
                        }
                        _ => {}
                    }
                    self.regs.dataflow = dataflow;
                    self.regs.sys_act = activation;
                    self.regs.sys_shift = sys_shift;
                    self.regs.sys_acc_scale = sys_acc_scale;
                    self.regs.a_transpose = a_transpose;
                    self.regs.b_transpose = b_transpose;
                }
                self.regs.c_stride = c_stride as u64;
                self.regs.a_stride = a_stride as u64;
                Ok(())
            }
            Insn::ConfigLd {
                stride,
                scale,
                shrunk,
                block_stride,
                pixel_repeats,
                id,
            } => {
                let l = self.regs.load.get_mut(id as usize).ok_or_else(|| {
                    ModelError::Invalid(format!("load configuration id {id} does not exist"))
                })?;
                *l = LoadConfig {
                    stride,
                    scale,
                    shrunk,
                    block_stride: block_stride as u64,
                    pixel_repeats: (pixel_repeats as u64).max(1),
                };
                Ok(())
            }
            Insn::ConfigSt {
                stride,
                activation,
                acc_scale,
            } => {
                self.regs.store_stride = stride as u64;
                self.regs.acc_act = activation;
                self.regs.acc_scale = acc_scale;
                Ok(())
            }
            Insn::Mvin {
                id,
                dram_addr,
                local,
                cols,
                rows,
            } => self.mvin(id, dram_addr, local, cols as usize, rows as usize, mem),
            Insn::Mvout {
                dram_addr,
                local,
                cols,
                rows,
            } => self.mvout(dram_addr, local, cols as usize, rows as usize, mem),
            Insn::Preload {
                bd,
                c,
                bd_cols,
                bd_rows,
                c_cols,
                c_rows,
            } => {
                self.preload = PreloadState {
                    bd,
                    bd_cols,
                    bd_rows,
                    c,
                    c_cols,
                    c_rows,
                };
                Ok(())
            }
            Insn::Compute {
                preloaded,
                a,
                bd,
                a_cols,
                a_rows,
                bd_cols,
                bd_rows,
            } => self.compute(
                preloaded,
                (a, a_cols as usize, a_rows as usize),
                (bd, bd_cols as usize, bd_rows as usize),
            ),
            Insn::Flush { .. } | Insn::Fence => Ok(()),
        }
    }

    fn spad_index(&self, row: u64, col: usize, what: &str) -> Result<usize, ModelError> {
        if row >= self.cfg.sp_rows() as u64 {
            return Err(ModelError::Invalid(format!(
                "{what}: scratchpad row {row} is beyond the {} rows",
                self.cfg.sp_rows()
            )));
        }
        Ok(row as usize * self.cfg.dim + col)
    }

    fn acc_index(&self, row: u64, col: usize, what: &str) -> Result<usize, ModelError> {
        if row >= self.cfg.acc_rows as u64 {
            return Err(ModelError::Invalid(format!(
                "{what}: accumulator row {row} is beyond the {} rows",
                self.cfg.acc_rows
            )));
        }
        Ok(row as usize * self.cfg.dim + col)
    }

    fn mvin(
        &mut self,
        id: u8,
        dram_addr: u64,
        local: u32,
        cols: usize,
        rows: usize,
        mem: &mut dyn Dram,
    ) -> Result<(), ModelError> {
        let dim = self.cfg.dim;
        let to_acc = local & ACC_BIT != 0;
        let accumulate = local & ACCUMULATE_BIT != 0;
        let base = (local & ROW_MASK) as u64;
        let lc = self.regs.load[id as usize].clone();
        let elem_bytes = if to_acc && !lc.shrunk {
            T::ACC_BYTES
        } else {
            T::ELEM_BYTES
        };
        // The DMA moves at most MAX_BYTES of DRAM elements per row.
        let max_cols = self.cfg.max_block_len(elem_bytes) * dim;
        if local == GARBAGE_ADDR {
            return Err(ModelError::Invalid(
                "mvin into GARBAGE_ADDR (no destination)".into(),
            ));
        }
        if cols > max_cols {
            return Err(ModelError::Invalid(format!(
                "mvin of {cols} columns: at most {max_cols} fit one DMA row ({} bytes)",
                self.cfg.max_bytes
            )));
        }
        let zeros = dram_addr == 0;
        let mut row_bytes = vec![0u8; cols * elem_bytes];
        for r in 0..rows {
            if !zeros {
                let a = dram_addr.wrapping_add(r as u64 * lc.stride);
                mem.read(a, &mut row_bytes)?;
            }
            for c in 0..cols {
                let block = (c / dim) as u64;
                let lcol = c % dim;
                let lrow = base + r as u64 + block * lc.block_stride;
                let mut pixel = 0u64;
                while pixel < lc.pixel_repeats && pixel <= lrow {
                    let trow = lrow - pixel;
                    let tcol = lcol + pixel as usize * cols;
                    if tcol >= dim {
                        return Err(ModelError::Invalid(format!(
                            "mvin with {} pixel repeats writes column {tcol} of a {dim}-wide row",
                            lc.pixel_repeats
                        )));
                    }
                    let bytes = &row_bytes[c * elem_bytes..(c + 1) * elem_bytes];
                    if to_acc {
                        let v = if zeros {
                            T::Acc::default()
                        } else if lc.shrunk {
                            T::widen(T::mvin_scale(T::elem_from_le(bytes), lc.scale))
                        } else {
                            T::mvin_scale_acc(T::acc_from_le(bytes), lc.scale)
                        };
                        let i = self.acc_index(trow, tcol, "mvin")?;
                        if accumulate {
                            self.acc[i] = T::add(self.acc[i], v);
                        } else {
                            self.acc[i] = v;
                        }
                    } else {
                        let v = if zeros {
                            T::Elem::default()
                        } else {
                            T::mvin_scale(T::elem_from_le(bytes), lc.scale)
                        };
                        let i = self.spad_index(trow, tcol, "mvin")?;
                        self.spad[i] = v;
                    }
                    pixel += 1;
                }
            }
        }
        let blocks = cols.div_ceil(dim) as u64;
        let bytes = if zeros {
            0
        } else {
            (rows * cols * elem_bytes) as u64
        };
        if to_acc {
            self.counters.dram_to_acc_rows += rows as u64 * blocks;
            self.counters.dram_to_acc_bytes += bytes;
        } else {
            self.counters.dram_to_spad_rows += rows as u64 * blocks;
            self.counters.dram_to_spad_bytes += bytes;
        }
        Ok(())
    }

    fn mvout(
        &mut self,
        dram_addr: u64,
        local: u32,
        cols: usize,
        rows: usize,
        mem: &mut dyn Dram,
    ) -> Result<(), ModelError> {
        let dim = self.cfg.dim;
        if local == GARBAGE_ADDR {
            return Err(ModelError::Invalid(
                "mvout from GARBAGE_ADDR (no source)".into(),
            ));
        }
        let from_acc = local & ACC_BIT != 0;
        let full = from_acc && local & FULL_ACC_BIT != 0;
        if (local >> 26) & 7 != 0 && from_acc && !full {
            return Err(ModelError::Unsupported(
                "normalisation commands in mvout addresses (bits 28..26)".into(),
            ));
        }
        let base = (local & MVOUT_ROW_MASK) as u64;
        let elem_bytes = if full { T::ACC_BYTES } else { T::ELEM_BYTES };
        let max_cols = self.cfg.max_block_len(elem_bytes) * dim;
        if cols > max_cols {
            return Err(ModelError::Invalid(format!(
                "mvout of {cols} columns: at most {max_cols} fit one DMA row ({} bytes)",
                self.cfg.max_bytes
            )));
        }
        let mut out = vec![0u8; cols * elem_bytes];
        for r in 0..rows {
            for c in 0..cols {
                let lrow = base + (c / dim * dim) as u64 + r as u64;
                let lcol = c % dim;
                let slot = &mut out[c * elem_bytes..(c + 1) * elem_bytes];
                if from_acc {
                    let v = self.acc[self.acc_index(lrow, lcol, "mvout")?];
                    if full {
                        T::acc_to_le(v, slot);
                    } else {
                        let e =
                            activate::<T>(self.regs.acc_act, T::acc_scale(v, self.regs.acc_scale));
                        T::elem_to_le(e, slot);
                    }
                } else {
                    T::elem_to_le(self.spad[self.spad_index(lrow, lcol, "mvout")?], slot);
                }
            }
            let a = dram_addr.wrapping_add(r as u64 * self.regs.store_stride);
            mem.write(a, &out)?;
        }
        let blocks = cols.div_ceil(dim) as u64;
        let bytes = (rows * cols * elem_bytes) as u64;
        if from_acc {
            self.counters.acc_to_dram_rows += rows as u64 * blocks;
            self.counters.acc_to_dram_bytes += bytes;
        } else {
            self.counters.spad_to_dram_rows += rows as u64 * blocks;
            self.counters.spad_to_dram_bytes += bytes;
        }
        Ok(())
    }

    /// Reads an operand element from the scratchpad: `addr` must be a scratchpad address.
    fn operand(&self, addr: u32, row: u64, col: usize, what: &str) -> Result<T::Acc, ModelError> {
        if addr & (ACC_BIT | ACCUMULATE_BIT) != 0 {
            return Err(ModelError::Unsupported(format!(
                "{what} from the accumulator (address {addr:#x})"
            )));
        }
        let i = self.spad_index(addr as u64 + row, col, what)?;
        Ok(T::widen(self.spad[i]))
    }

    fn compute(
        &mut self,
        preloaded: bool,
        (a, a_cols, a_rows): (u32, usize, usize),
        (bd, bd_cols, bd_rows): (u32, usize, usize),
    ) -> Result<(), ModelError> {
        let dim = self.cfg.dim;
        let ws = self.regs.dataflow == Dataflow::WeightStationary;
        let p = self.preload;
        for (what, v) in [
            ("A columns", a_cols),
            ("A rows", a_rows),
            ("BD columns", bd_cols),
            ("BD rows", bd_rows),
            ("preloaded columns", p.bd_cols as usize),
            ("preloaded rows", p.bd_rows as usize),
            ("C columns", p.c_cols as usize),
            ("C rows", p.c_rows as usize),
        ] {
            if v > dim {
                return Err(ModelError::Invalid(format!(
                    "{v} {what} exceed the {dim}×{dim} array"
                )));
            }
        }
        // Load the preloaded operand into the PEs.
        if preloaded {
            let transpose = ws && self.regs.b_transpose;
            let (pr, pc) = (p.bd_rows as usize, p.bd_cols as usize);
            for i in 0..dim {
                for j in 0..dim {
                    let (r, c) = if transpose { (j, i) } else { (i, j) };
                    self.pe[i * dim + j] = if p.bd != GARBAGE_ADDR && i < pr && j < pc {
                        self.operand(p.bd, r as u64, c, "preload")?
                    } else {
                        T::Acc::default()
                    };
                }
            }
            self.pe_extent = if p.bd == GARBAGE_ADDR {
                (0, 0)
            } else {
                (pr, pc)
            };
        }
        // A, padded with zeros.
        let mut am = vec![T::Acc::default(); dim * dim];
        if a != GARBAGE_ADDR {
            for i in 0..a_rows {
                for k in 0..a_cols {
                    let (r, c) = if self.regs.a_transpose {
                        (self.regs.a_stride * k as u64, i)
                    } else {
                        (self.regs.a_stride * i as u64, k)
                    };
                    am[i * dim + k] = self.operand(a, r, c, "A")?;
                }
            }
        }
        // BD, padded with zeros (WS: D as given; OS: B, transposed when configured).
        let mut bdm = vec![T::Acc::default(); dim * dim];
        if bd != GARBAGE_ADDR {
            let transpose = !ws && self.regs.b_transpose;
            for i in 0..bd_rows {
                for j in 0..bd_cols {
                    let (r, c) = if transpose { (j, i) } else { (i, j) };
                    bdm[i * dim + j] = self.operand(bd, r as u64, c, "BD")?;
                }
            }
        }
        let a_eff_rows = if a == GARBAGE_ADDR { 0 } else { a_rows };
        let mut results = vec![T::Acc::default(); dim * dim];
        if ws {
            // results = D + A · W
            for i in 0..dim {
                for j in 0..dim {
                    let mut s = bdm[i * dim + j];
                    for k in 0..dim {
                        s = T::mac(s, am[i * dim + k], self.pe[k * dim + j]);
                    }
                    results[i * dim + j] = s;
                }
            }
            let (wr, wc) = self.pe_extent;
            self.counters.macs += (a_eff_rows * a_cols.min(wr) * wc) as u64;
        } else {
            // PEs += A · B
            for i in 0..dim {
                for j in 0..dim {
                    let mut s = self.pe[i * dim + j];
                    for k in 0..dim {
                        s = T::mac(s, am[i * dim + k], bdm[k * dim + j]);
                    }
                    self.pe[i * dim + j] = s;
                }
            }
            let (br, bc) = if bd == GARBAGE_ADDR {
                (0, 0)
            } else {
                (bd_rows, bd_cols)
            };
            self.counters.macs += (a_eff_rows * a_cols.min(br) * bc) as u64;
        }
        self.counters.array_macs += (dim * dim * dim) as u64;
        // Write the results to C.
        if p.c != GARBAGE_ADDR {
            let to_acc = p.c & ACC_BIT != 0;
            let accumulate = p.c & ACCUMULATE_BIT != 0;
            let base = (p.c & ROW_MASK) as u64;
            for i in 0..p.c_rows as usize {
                let row = base + self.regs.c_stride * i as u64;
                for j in 0..p.c_cols as usize {
                    let v = if ws {
                        results[i * dim + j]
                    } else {
                        self.pe[i * dim + j]
                    };
                    if to_acc {
                        let x = self.acc_index(row, j, "compute output")?;
                        self.acc[x] = if accumulate {
                            T::add(self.acc[x], v)
                        } else {
                            v
                        };
                    } else {
                        let shift = if ws { 0 } else { self.regs.sys_shift };
                        let e = activate::<T>(self.regs.sys_act, T::sys_shift(v, shift));
                        let x = self.spad_index(row, j, "compute output")?;
                        self.spad[x] = e;
                    }
                }
            }
            if to_acc {
                self.counters.array_to_acc_rows += p.c_rows as u64;
            } else {
                self.counters.array_to_spad_rows += p.c_rows as u64;
            }
        }
        Ok(())
    }
}

/// Applies an activation to an `elem_t`.
fn activate<T: ElemTypes>(act: Activation, e: T::Elem) -> T::Elem {
    match act {
        Activation::None => e,
        Activation::Relu => T::relu(e),
    }
}
