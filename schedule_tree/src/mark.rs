//! Typed marks. A mark node in isl carries an `isl_id` whose name is a string; polyc's
//! passes only ever see [`Mark`], and the string form lives in this file alone.

use std::fmt;

/// A level of a memory hierarchy that data can be placed in, named as the target
/// description names it (`L1`, `shared`, `scratchpad`, `L0A`, …).
///
/// Buffers are data: their names, capacities and roles come from the target description
/// (`specs/targets/*.yaml`), never from a closed list in the code. A `Buffer` is an
/// interned name, so it is `Copy` and compares by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Buffer(&'static str);

/// `name`, interned: each distinct name is stored once, for the life of the process.
fn intern(name: &str) -> &'static str {
    use std::collections::HashSet;
    use std::sync::{Mutex, OnceLock};
    static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(|| Mutex::new(HashSet::new()))
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(n) = names.get(name) {
        return n;
    }
    let leaked: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.insert(leaked);
    leaked
}

impl Buffer {
    /// The buffer named `name` (interned: each distinct name is stored once).
    pub fn new(name: &str) -> Buffer {
        Buffer(intern(name))
    }
    /// A buffer from a name known at compile time (for tests and built-in tables).
    pub const fn from_static(name: &'static str) -> Buffer {
        Buffer(name)
    }
    /// The name used in tile specs, marks and target descriptions.
    pub fn name(self) -> &'static str {
        self.0
    }
    /// Whether `s` can name a buffer: a letter or `_` followed by letters, digits and `_`.
    pub fn is_valid_name(s: &str) -> bool {
        let mut c = s.chars();
        matches!(c.next(), Some(f) if f.is_ascii_alphabetic() || f == '_')
            && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
    }
    /// Parses a buffer name (`None` if it is not a valid name; whether a target has the
    /// buffer is the target description's business).
    pub fn from_name(s: &str) -> Option<Buffer> {
        Buffer::is_valid_name(s).then(|| Buffer::new(s))
    }
}

/// What a buffer is, as its target description says (`role:` in the YAML). Passes ask
/// for a role, never for a buffer's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BufferRole {
    /// A hardware-managed cache (CPU L1, L2, L3): tiles bound its working set; packing
    /// copies tiles into contiguous local arrays.
    Cache,
    /// A register file: only the tensors promoted into it occupy it (register tiles).
    Registers,
    /// Software-managed memory shared by the threads of a block (GPU shared memory).
    SharedMemory,
    /// Software-managed on-chip memory for operands (Gemmini's scratchpad, Ascend's L1,
    /// L0A, L0B, UB).
    Scratchpad,
    /// Software-managed memory for results that adds on write (Gemmini's accumulator,
    /// Ascend's L0C).
    Accumulator,
}

impl BufferRole {
    /// Every role, in the order descriptions list them in messages.
    pub const ALL: [BufferRole; 5] = [
        BufferRole::Cache,
        BufferRole::Registers,
        BufferRole::SharedMemory,
        BufferRole::Scratchpad,
        BufferRole::Accumulator,
    ];
    /// The spelling in target descriptions.
    pub fn name(self) -> &'static str {
        match self {
            BufferRole::Cache => "cache",
            BufferRole::Registers => "registers",
            BufferRole::SharedMemory => "shared_memory",
            BufferRole::Scratchpad => "scratchpad",
            BufferRole::Accumulator => "accumulator",
        }
    }
    /// Parses a role name.
    pub fn from_name(s: &str) -> Option<BufferRole> {
        BufferRole::ALL.into_iter().find(|r| r.name() == s)
    }
    /// A register file: only the tensors promoted into it (a register tile) occupy it,
    /// so its capacity is checked by promotion, not against a tile's whole working set.
    pub fn is_register_file(self) -> bool {
        self == BufferRole::Registers
    }
}

/// Which tensors of a tile a buffer holds (`holds:` in a target description), so that a
/// capacity check counts only those: a cache holds everything a tile touches, Gemmini's
/// accumulator only the results and its scratchpad only the operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Holds {
    /// Every tensor the tile touches.
    All,
    /// The tensors the tile's statements write.
    Results,
    /// The tensors the tile's statements only read.
    Operands,
}

impl Holds {
    /// Every value, in the order messages list them.
    pub const ALL: [Holds; 3] = [Holds::All, Holds::Results, Holds::Operands];
    /// The spelling in target descriptions.
    pub fn name(self) -> &'static str {
        match self {
            Holds::All => "all",
            Holds::Results => "results",
            Holds::Operands => "operands",
        }
    }
    /// Parses a spelling.
    pub fn from_name(s: &str) -> Option<Holds> {
        Holds::ALL.into_iter().find(|h| h.name() == s)
    }
    /// Whether a tensor is held, given whether the tile's statements write it.
    pub fn holds(self, written: bool) -> bool {
        match self {
            Holds::All => true,
            Holds::Results => written,
            Holds::Operands => !written,
        }
    }
}

/// One memory level of a target as passes see it: a buffer, its capacity in bytes per
/// tile, its role, and which tensors of a tile it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Level {
    /// The buffer.
    pub buffer: Buffer,
    /// What one tile may use of it, in bytes.
    pub bytes: u64,
    /// What kind of memory it is.
    pub role: BufferRole,
    /// Which tensors of a tile it holds (the capacity check counts only those).
    pub holds: Holds,
}

impl Level {
    /// A level that holds every tensor of a tile (for tables and tests).
    pub const fn new(buffer: Buffer, bytes: u64, role: BufferRole) -> Level {
        Level {
            buffer,
            bytes,
            role,
            holds: Holds::All,
        }
    }
    /// The level, holding only `holds`.
    pub const fn holding(self, holds: Holds) -> Level {
        Level { holds, ..self }
    }
}

/// The level of `buffer` in `levels`, if the target has it.
pub fn level_of(levels: &[Level], buffer: Buffer) -> Option<&Level> {
    levels.iter().find(|l| l.buffer == buffer)
}

impl fmt::Display for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A tensor of the program, by name (interned, so `Copy`), as a mark names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TensorName(&'static str);

impl TensorName {
    /// The tensor named `name`.
    pub fn new(name: &str) -> TensorName {
        TensorName(intern(name))
    }
    /// The name.
    pub fn name(self) -> &'static str {
        self.0
    }
}

/// What a tensorised band computes on a matrix engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Contraction {
    /// A (batched) matrix product.
    Gemm,
    /// A convolution through implicit im2col (filter offsets as outer loops).
    Conv,
}

/// How a systolic array runs a tensorised band.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dataflow {
    /// The weights stay in the processing elements.
    WeightStationary,
    /// The outputs stay in the processing elements.
    OutputStationary,
}

/// How a statement folded into a tensorised one runs without instructions of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fold {
    /// An initialisation to zero: the first reduction step overwrites the accumulator.
    Init,
    /// A bias: preloaded into the accumulator (`mvin` there) before the products.
    Preload,
    /// An epilogue: applied by the `mvout` that leaves the accumulator (ReLU, scaling,
    /// saturation).
    Mvout,
}

impl Fold {
    /// Every fold, in the order the statements run.
    pub const ALL: [Fold; 3] = [Fold::Init, Fold::Preload, Fold::Mvout];
    /// The name in a mark: `init`, `preload`, `mvout`.
    pub fn name(self) -> &'static str {
        match self {
            Fold::Init => "init",
            Fold::Preload => "preload",
            Fold::Mvout => "mvout",
        }
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
    /// The outermost loop of the band below runs in parallel (on the CPU's cores).
    Parallel,
    /// The subtree below is one device kernel.
    Kernel,
    /// The band below is mapped to threads.
    Thread,
    /// The band below reduces into one element per instance of the bands above: its
    /// leading member is spread over the threads of a block, each thread accumulates a
    /// private partial result, and the block combines them (a GPU block reduction).
    Reduce,
    /// The tiles of `tensor` that the subtree below uses live in `buffer` (a
    /// software-managed memory), double-buffered (the next tile moves in while the
    /// current one is used) or not.
    Holds {
        /// The buffer.
        buffer: Buffer,
        /// The tensor.
        tensor: TensorName,
        /// Double-buffered.
        double: bool,
    },
    /// The band below is one instruction of a matrix engine (the DIM×DIM×DIM block of a
    /// systolic array): what it computes, and the dataflow.
    Tensorised {
        /// GEMM or convolution.
        kind: Contraction,
        /// The dataflow.
        dataflow: Dataflow,
    },
    /// The statements below are folded into the tensorised statement beside them: they
    /// run as part of its instructions, as the [`Fold`] says.
    Folded(Fold),
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
            Mark::Reduce => "reduce".into(),
            Mark::Holds {
                buffer,
                tensor,
                double,
            } => format!(
                "holds:{}:{}:{}",
                buffer.name(),
                tensor.name(),
                if double { "double" } else { "single" }
            ),
            Mark::Folded(f) => format!("folded:{}", f.name()),
            Mark::Tensorised { kind, dataflow } => format!(
                "tensorised:{}:{}",
                match kind {
                    Contraction::Gemm => "gemm",
                    Contraction::Conv => "conv",
                },
                match dataflow {
                    Dataflow::WeightStationary => "ws",
                    Dataflow::OutputStationary => "os",
                }
            ),
        }
    }
    /// Parses an isl mark id. `None` for a string polyc does not know.
    pub fn from_isl_name(s: &str) -> Option<Mark> {
        match s {
            "skipped" => Some(Mark::Skipped),
            "parallel" => Some(Mark::Parallel),
            "kernel" => Some(Mark::Kernel),
            "thread" => Some(Mark::Thread),
            "reduce" => Some(Mark::Reduce),
            _ => {
                if let Some(rest) = s.strip_prefix("holds:") {
                    let mut parts = rest.split(':');
                    let (Some(b), Some(t), Some(d), None) =
                        (parts.next(), parts.next(), parts.next(), parts.next())
                    else {
                        return None;
                    };
                    return Some(Mark::Holds {
                        buffer: Buffer::from_name(b)?,
                        tensor: Buffer::is_valid_name(t).then(|| TensorName::new(t))?,
                        double: match d {
                            "double" => true,
                            "single" => false,
                            _ => return None,
                        },
                    });
                }
                if let Some(rest) = s.strip_prefix("folded:") {
                    return Fold::ALL
                        .into_iter()
                        .find(|f| f.name() == rest)
                        .map(Mark::Folded);
                }
                if let Some(rest) = s.strip_prefix("tensorised:") {
                    let (k, d) = rest.split_once(':')?;
                    return Some(Mark::Tensorised {
                        kind: match k {
                            "gemm" => Contraction::Gemm,
                            "conv" => Contraction::Conv,
                            _ => return None,
                        },
                        dataflow: match d {
                            "ws" => Dataflow::WeightStationary,
                            "os" => Dataflow::OutputStationary,
                            _ => return None,
                        },
                    });
                }
                s.strip_prefix("mem:")
                    .and_then(Buffer::from_name)
                    .map(Mark::Mem)
            }
        }
    }
    /// Every string [`Mark::from_isl_name`] accepts, for error messages.
    pub fn known_names() -> Vec<String> {
        let mut v: Vec<String> = vec!["skipped".into(), "parallel".into(), "kernel".into()];
        v.push("thread".into());
        v.push("reduce".into());
        v.push("mem:<buffer> (a buffer of the target description)".into());
        v.push("holds:<buffer>:<tensor>:double|single".into());
        v.push("tensorised:gemm|conv:ws|os".into());
        v.push("folded:init|preload|mvout".into());
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
        let mut all = vec![
            Mark::Skipped,
            Mark::Parallel,
            Mark::Kernel,
            Mark::Thread,
            Mark::Reduce,
        ];
        all.extend(["L1", "shared", "L0A", "UB"].map(|b| Mark::Mem(Buffer::new(b))));
        all.push(Mark::Holds {
            buffer: Buffer::new("scratchpad"),
            tensor: TensorName::new("A"),
            double: true,
        });
        all.push(Mark::Holds {
            buffer: Buffer::new("accumulator"),
            tensor: TensorName::new("C_1"),
            double: false,
        });
        all.push(Mark::Tensorised {
            kind: Contraction::Conv,
            dataflow: Dataflow::OutputStationary,
        });
        all.push(Mark::Tensorised {
            kind: Contraction::Gemm,
            dataflow: Dataflow::WeightStationary,
        });
        all.extend(Fold::ALL.map(Mark::Folded));
        assert_eq!(Mark::from_isl_name("folded:relu"), None);
        assert_eq!(Mark::from_isl_name("holds:scratchpad:A"), None);
        assert_eq!(Mark::from_isl_name("tensorised:gemm:xs"), None);
        for m in all {
            assert_eq!(Mark::from_isl_name(&m.to_isl_name()), Some(m));
        }
        assert_eq!(Mark::from_isl_name("mem:"), None);
        assert_eq!(Mark::from_isl_name("mem:9a"), None);
        assert_eq!(Buffer::new("L0A"), Buffer::from_static("L0A"));
        assert_eq!(Mark::from_isl_name("Skipped"), None);
    }
}
