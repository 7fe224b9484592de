//! The layer rule: which folders may not import which. Each rule names the files it
//! governs (a path prefix) and the prefixes they must not import; `ARCHITECTURE.md` says
//! why each layer sits where it does.

use crate::modules::CrateTree;
use crate::Edge;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// Files under the first prefix must not import files under any of the others.
pub const RULES: &[(&str, &[&str])] = &[
    // The root package: the library pipeline never uses a CLI command.
    ("src/pipeline/", &["src/commands/", "src/main.rs"]),
    // targets: desc < passes < codegen < target.rs < one folder per target < registry.
    ("targets/src/scratch.rs", TARGETS_ABOVE_SHARED),
    (
        "targets/src/desc/",
        &[
            "targets/src/passes/",
            "targets/src/codegen/",
            "targets/src/target.rs",
            "targets/src/cpu/",
            "targets/src/gpu/",
            "targets/src/gemmini/",
            "targets/src/npu/",
            "targets/src/registry.rs",
            "targets/src/lib.rs",
        ],
    ),
    (
        "targets/src/passes/",
        &[
            "targets/src/codegen/",
            "targets/src/target.rs",
            "targets/src/cpu/",
            "targets/src/gpu/",
            "targets/src/gemmini/",
            "targets/src/npu/",
            "targets/src/registry.rs",
            "targets/src/lib.rs",
        ],
    ),
    (
        "targets/src/codegen/",
        &[
            "targets/src/target.rs",
            "targets/src/cpu/",
            "targets/src/gpu/",
            "targets/src/gemmini/",
            "targets/src/npu/",
            "targets/src/registry.rs",
            "targets/src/lib.rs",
        ],
    ),
    ("targets/src/target.rs", TARGETS_ABOVE_SHARED),
    (
        "targets/src/cpu/",
        &[
            "targets/src/gpu/",
            "targets/src/gemmini/",
            "targets/src/npu/",
            "targets/src/registry.rs",
            "targets/src/lib.rs",
        ],
    ),
    (
        "targets/src/gpu/",
        &[
            "targets/src/cpu/",
            "targets/src/gemmini/",
            "targets/src/npu/",
            "targets/src/registry.rs",
            "targets/src/lib.rs",
        ],
    ),
    (
        "targets/src/gemmini/",
        &[
            "targets/src/cpu/",
            "targets/src/gpu/",
            "targets/src/npu/",
            "targets/src/registry.rs",
            "targets/src/lib.rs",
        ],
    ),
    (
        "targets/src/npu/",
        &[
            "targets/src/cpu/",
            "targets/src/gpu/",
            "targets/src/gemmini/",
            "targets/src/registry.rs",
            "targets/src/lib.rs",
        ],
    ),
];

/// What the shared layers of `targets` must not import: the target folders and what sits
/// above them.
const TARGETS_ABOVE_SHARED: &[&str] = &[
    "targets/src/cpu/",
    "targets/src/gpu/",
    "targets/src/gemmini/",
    "targets/src/npu/",
    "targets/src/registry.rs",
    "targets/src/lib.rs",
];

/// The imports of a crate that break a rule, with the names that make them.
pub fn broken_rules(tree: &CrateTree) -> Vec<Edge> {
    let mut edges: BTreeMap<(PathBuf, PathBuf), BTreeSet<String>> = BTreeMap::new();
    for (from, to, name) in tree.imports() {
        let (f, t) = (slash(&from), slash(&to));
        let broken = RULES.iter().any(|(governed, forbidden)| {
            f.starts_with(governed) && forbidden.iter().any(|p| t.starts_with(p))
        });
        if broken && from != to {
            edges.entry((from, to)).or_default().insert(name);
        }
    }
    edges
        .into_iter()
        .map(|((from, to), names)| Edge {
            from,
            to,
            names: names.into_iter().collect(),
        })
        .collect()
}

fn slash(p: &std::path::Path) -> String {
    p.to_string_lossy().replace('\\', "/")
}
