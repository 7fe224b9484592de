//! What the model counts.

use super::InsnKind;

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
    pub(super) fn bump(&mut self, kind: InsnKind) {
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
