//! What tiling reads ([`TileCx`]): the program, its model and dependences, and the
//! target's memory levels.

use crate::analysis::TensorFootprint;
use polyhedral::deps::Deps;
use polyhedral::ir::Program;
use polyhedral::isl::Ctx;
use polyhedral::scop::Scop;
use schedule_tree::{level_of, Buffer, Level};

/// What tiling reads: the program and its model, and the target's capacities.
pub struct TileCx<'a> {
    /// The isl context of the model.
    pub ctx: &'a Ctx,
    /// The program (for element sizes).
    pub program: &'a Program,
    /// Its polyhedral model.
    pub scop: &'a Scop,
    /// Its dependences.
    pub deps: &'a Deps,
    /// The target's memory levels, outermost first (e.g. `L2` 2 MiB cache, `L1` 48 KiB
    /// cache, `reg` 2 KiB register file). A buffer missing here is not checked.
    pub levels: &'a [Level],
}

impl TileCx<'_> {
    /// The capacity of `b` in bytes, if the target has it.
    pub(crate) fn capacity(&self, b: Buffer) -> Option<u64> {
        level_of(self.levels, b).map(|l| l.bytes)
    }
    /// Whether `b` is a register file of the target (its footprint is not checked: only
    /// what promotion puts there occupies it).
    pub(crate) fn is_register_file(&self, b: Buffer) -> bool {
        level_of(self.levels, b).is_some_and(|l| l.role.is_register_file())
    }
    /// The footprints of a tile of the statements `stmts` that `level` holds (its
    /// [`schedule_tree::Holds`]: every tensor, the ones the statements write, or the
    /// ones they only read), so a capacity check counts each tensor in the buffer the
    /// target keeps it in.
    pub(crate) fn held(
        &self,
        level: Buffer,
        stmts: &[usize],
        fps: Vec<TensorFootprint>,
    ) -> Vec<TensorFootprint> {
        let holds = self.holds(level);
        let written = |t: usize| {
            stmts
                .iter()
                .any(|&s| self.program.stmts.get(s).is_some_and(|st| st.lhs == t))
        };
        fps.into_iter()
            .filter(|f| holds.holds(written(f.tensor_id)))
            .collect()
    }
    /// Which tensors `level` holds ([`schedule_tree::Holds::All`] for a buffer the target
    /// does not list).
    pub(crate) fn holds(&self, level: Buffer) -> schedule_tree::Holds {
        level_of(self.levels, level).map_or(schedule_tree::Holds::All, |l| l.holds)
    }
    pub(crate) fn elem_bytes(&self) -> Vec<u64> {
        self.program
            .tensors
            .iter()
            .map(|t| t.dtype.size_bytes() as u64)
            .collect()
    }
}
