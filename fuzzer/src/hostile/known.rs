//! Known bugs (issue 22) that explain hostile-input violations. **Temporary**: delete each
//! entry when its fix is merged, so that the campaign reports the bug if it comes back.

use super::inputs::Invocation;
use super::outcome::{Exit, Ran};

/// A known bug: its name and a test of whether it explains a violation.
#[derive(Debug)]
pub struct KnownHostile {
    /// Short name.
    pub name: &'static str,
    /// The issue item.
    pub what: &'static str,
    /// Whether it explains `ran` of `inv`.
    pub explains: fn(&Invocation, &Ran) -> bool,
}

/// Known bugs being fixed in parallel. Empty this list as the fixes land.
pub const KNOWN_HOSTILE: &[KnownHostile] = &[
    KnownHostile {
        name: "isl-slow-bound-sizes",
        what: "FUZZ_FINDINGS.md F6: isl's scheduler takes minutes once a bound size reaches the thousands (examples/tc/mlp.tc at H=1000: 66 s)",
        explains: isl_slow_bound_sizes,
    },
];

/// The first known bug that explains the violation, if any (none under
/// `POLYC_FUZZ_NO_KNOWN=1`).
pub fn explain(inv: &Invocation, ran: &Ran) -> Option<&'static KnownHostile> {
    if std::env::var("POLYC_FUZZ_NO_KNOWN").is_ok_and(|v| v == "1") {
        return None;
    }
    KNOWN_HOSTILE.iter().find(|k| (k.explains)(inv, ran))
}

/// Whether any number in the invocation is 2^31 - 1 or more (or written in a form that
/// reads as one, such as `1e9`).
pub fn has_huge_number(inv: &Invocation) -> bool {
    let text = inv.all_text();
    text.contains("1e9")
        || text.contains("1e308")
        || text
            .split(|c: char| !c.is_ascii_digit())
            .any(|d| d.len() >= 10 && d.parse::<u128>().map_or(true, |v| v >= (1 << 31) - 1))
}

/// F6: a timeout with a size of 1000 or more.
fn isl_slow_bound_sizes(inv: &Invocation, ran: &Ran) -> bool {
    let large = inv.args.iter().any(|a| {
        a.split(|c: char| !c.is_ascii_digit())
            .any(|d| d.parse::<u64>().is_ok_and(|v| v >= 1000))
    });
    ran.exit == Exit::Timeout && large
}
