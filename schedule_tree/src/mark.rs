//! Typed marks. A mark node in isl carries an `isl_id` whose name is a string; polyc's
//! passes only ever see [`Mark`], and the string form lives in this file alone.

use std::fmt;

/// A level of a memory hierarchy that data can be placed in.
///
/// Target descriptions (`specs/targets/*.yaml`) say which of these a target has and how
/// large each is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Buffer {
    /// CPU level-3 cache.
    L3,
    /// CPU level-2 cache.
    L2,
    /// CPU level-1 data cache.
    L1,
    /// CPU registers (a register tile).
    Reg,
    /// GPU shared memory (`__shared__`, OpenCL `__local`).
    Shared,
    /// GPU registers (private memory).
    Register,
    /// Gemmini scratchpad.
    Scratchpad,
    /// Gemmini accumulator.
    Accumulator,
}

impl Buffer {
    /// Every buffer kind.
    pub const ALL: [Buffer; 8] = [
        Buffer::L3,
        Buffer::L2,
        Buffer::L1,
        Buffer::Reg,
        Buffer::Shared,
        Buffer::Register,
        Buffer::Scratchpad,
        Buffer::Accumulator,
    ];
    /// The name used in tile specs and target descriptions.
    pub fn name(self) -> &'static str {
        match self {
            Buffer::L3 => "L3",
            Buffer::L2 => "L2",
            Buffer::L1 => "L1",
            Buffer::Reg => "reg",
            Buffer::Shared => "shared",
            Buffer::Register => "register",
            Buffer::Scratchpad => "scratchpad",
            Buffer::Accumulator => "accumulator",
        }
    }
    /// A register file: only the tensors promoted into it (a register tile) occupy it,
    /// so its capacity is checked by promotion, not against a tile's whole working set.
    pub fn is_register_file(self) -> bool {
        matches!(self, Buffer::Reg | Buffer::Register)
    }
    /// Parses a buffer name.
    pub fn from_name(s: &str) -> Option<Buffer> {
        Buffer::ALL.into_iter().find(|b| b.name() == s)
    }
}

impl fmt::Display for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a mark node means.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mark {
    /// The subtree below was pulled into a consumer's tile by post-tiling fusion; code
    /// generation emits nothing for it.
    Skipped,
    /// The data of the tile below lives in this buffer.
    Mem(Buffer),
    /// The outermost loop of the band below runs in parallel (OpenMP on the CPU).
    Parallel,
    /// The subtree below is one device kernel.
    Kernel,
    /// The band below is mapped to threads.
    Thread,
}

impl Mark {
    /// The string stored in isl's mark id: `skipped`, `mem:L1`, `parallel`, `kernel`,
    /// `thread`.
    pub fn to_isl_name(self) -> String {
        match self {
            Mark::Skipped => "skipped".into(),
            Mark::Mem(b) => format!("mem:{}", b.name()),
            Mark::Parallel => "parallel".into(),
            Mark::Kernel => "kernel".into(),
            Mark::Thread => "thread".into(),
        }
    }
    /// Parses an isl mark id. `None` for a string polyc does not know.
    pub fn from_isl_name(s: &str) -> Option<Mark> {
        match s {
            "skipped" => Some(Mark::Skipped),
            "parallel" => Some(Mark::Parallel),
            "kernel" => Some(Mark::Kernel),
            "thread" => Some(Mark::Thread),
            _ => s
                .strip_prefix("mem:")
                .and_then(Buffer::from_name)
                .map(Mark::Mem),
        }
    }
    /// Every string [`Mark::from_isl_name`] accepts, for error messages.
    pub fn known_names() -> Vec<String> {
        let mut v: Vec<String> = vec!["skipped".into(), "parallel".into(), "kernel".into()];
        v.push("thread".into());
        v.extend(Buffer::ALL.iter().map(|b| format!("mem:{}", b.name())));
        v
    }
}

impl fmt::Display for Mark {
    /// The form the `tree` dump shows: `skipped`, `Mem(L1)`, `parallel`, …
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mark::Mem(b) => write!(f, "Mem({b})"),
            m => f.write_str(&m.to_isl_name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mark_round_trips_through_its_isl_name() {
        let mut all = vec![Mark::Skipped, Mark::Parallel, Mark::Kernel, Mark::Thread];
        all.extend(Buffer::ALL.iter().map(|b| Mark::Mem(*b)));
        for m in all {
            assert_eq!(Mark::from_isl_name(&m.to_isl_name()), Some(m));
        }
        assert_eq!(Mark::from_isl_name("mem:L9"), None);
        assert_eq!(Mark::from_isl_name("Skipped"), None);
    }
}
