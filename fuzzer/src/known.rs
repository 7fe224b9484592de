//! Bugs that are known and not fixed yet: failures they explain are counted and listed,
//! but do not fail the run.
//!
//! **This list is temporary.** Each entry names an item of issue 22 being fixed elsewhere,
//! or a finding of this fuzzer (`FUZZ_FINDINGS.md`, `F<n>`); when its fix is merged,
//! delete the entry, so that the fuzzer reports the bug again if it comes back.
//! An entry matches narrowly: it checks the failure's class and message, the case's
//! settings, and where it can, that the failure goes away when the feature at fault is
//! switched off (a re-run of the case with one setting changed).

use crate::case::{Case, Outcome};

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

/// Known bugs: none now (every finding of `FUZZ_FINDINGS.md` that the differential
/// campaign hits is fixed). Add an entry only while its fix is in progress, and delete it
/// with the fix.
pub const KNOWN_BUGS: &[Known] = &[];

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
