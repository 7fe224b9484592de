//! Bugs that are known and not fixed yet: failures they explain are counted and listed,
//! but do not fail the run.
//!
//! **This list is temporary.** Each entry names an item of issue 22 being fixed elsewhere,
//! or a finding of this fuzzer (`FUZZ_FINDINGS.md`, `F<n>`); when its fix is merged,
//! delete the entry, so that the fuzzer reports the bug again if it comes back.
//! An entry matches narrowly: it checks the failure's class and message, the case's
//! settings, and where it can, that the failure goes away when the feature at fault is
//! switched off (a re-run of the case with one setting changed).

use crate::case::{Case, Outcome, Tgt};

/// Runs a variant of a case and says how it ended.
pub type Rerun<'a> = dyn FnMut(&Case) -> Outcome + 'a;

/// A known bug: a name, what it is, and a test of whether it explains a failure.
#[derive(Debug)]
pub struct Known {
    /// Short name, printed with each failure it explains.
    pub name: &'static str,
    /// The issue item and a one-line description.
    pub what: &'static str,
    /// Whether the bug explains `outcome` of `case`; `rerun` runs a variant of the case.
    pub explains: fn(&Case, &Outcome, &mut Rerun) -> bool,
}

/// Known bugs: issue 22's being fixed in parallel, then this fuzzer's findings. Empty this
/// list as the fixes land.
pub const KNOWN_BUGS: &[Known] = &[
    Known {
        name: "nested-packed-tiles",
        what: "FUZZ_FINDINGS.md F2: a packed tile copied from another packed tile of the same tensor reads it with the wrong layout (passes with --pack none)",
        explains: nested_packed_tiles,
    },
    Known {
        name: "fusion-no-tile-local-buffer",
        what: "FUZZ_FINDINGS.md F3: post-tiling fusion rejects a valid program (\"cannot have a tile-local buffer\")",
        explains: fusion_no_tile_local_buffer,
    },
];

/// The first known bug that explains `outcome`, if any (none when the environment sets
/// `POLYC_FUZZ_NO_KNOWN=1`: every failure is then shrunk and reported).
pub fn explain(case: &Case, outcome: &Outcome, rerun: &mut Rerun) -> Option<&'static Known> {
    let off = std::env::var("POLYC_FUZZ_NO_KNOWN").is_ok_and(|v| v == "1");
    if *outcome == Outcome::Pass || off {
        return None;
    }
    KNOWN_BUGS
        .iter()
        .find(|k| (k.explains)(case, outcome, rerun))
}

/// F2: a CPU mismatch that passes with `--pack none`.
fn nested_packed_tiles(case: &Case, outcome: &Outcome, rerun: &mut Rerun) -> bool {
    if case.cfg.target != Tgt::Cpu
        || case.cfg.pack.as_deref() == Some("none")
        || !matches!(outcome, Outcome::Mismatch(_))
    {
        return false;
    }
    let mut unpacked = case.clone();
    unpacked.cfg.pack = Some("none".into());
    rerun(&unpacked) == Outcome::Pass
}

/// F3: post-tiling fusion's "cannot have a tile-local buffer".
fn fusion_no_tile_local_buffer(case: &Case, outcome: &Outcome, _rerun: &mut Rerun) -> bool {
    !case.cfg.no_tile_fusion
        && matches!(outcome, Outcome::CompileError(m) if m.contains("cannot have a tile-local buffer"))
}
