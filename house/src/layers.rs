//! The layer rule: which folders may not import which, as an order of layers
//! ([`LAYERS`]); `ARCHITECTURE.md` says why each layer sits where it does.

use crate::modules::CrateTree;
use crate::Edge;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// The layers of each crate that has them, lowest first: a file may import files of its
/// own layer and of the layers below, never of a layer above. Within a layer marked
/// `siblings`, no part may import another (the target folders are independent).
pub const LAYERS: &[Layer] = &[
    // targets: descriptions and scratch folders < passes < codegen < the trait < one
    // folder per target < the registry and the crate root.
    Layer {
        parts: &["targets/src/desc/", "targets/src/scratch.rs"],
        siblings: false,
    },
    Layer {
        parts: &["targets/src/passes/"],
        siblings: false,
    },
    Layer {
        parts: &["targets/src/codegen/"],
        siblings: false,
    },
    Layer {
        parts: &["targets/src/target.rs"],
        siblings: false,
    },
    Layer {
        parts: &[
            "targets/src/cpu/",
            "targets/src/gpu/",
            "targets/src/gemmini/",
            "targets/src/npu/",
        ],
        siblings: true,
    },
    Layer {
        parts: &["targets/src/registry.rs", "targets/src/lib.rs"],
        siblings: false,
    },
    // The root package: the library pipeline < the CLI's commands < the binary.
    Layer {
        parts: &["src/pipeline/"],
        siblings: false,
    },
    Layer {
        parts: &["src/commands/"],
        siblings: false,
    },
    Layer {
        parts: &["src/main.rs"],
        siblings: false,
    },
];

/// One layer: the path prefixes of its parts.
#[derive(Debug)]
pub struct Layer {
    /// The files or folders (path prefixes from the repository root).
    pub parts: &'static [&'static str],
    /// Whether its parts must not import each other.
    pub siblings: bool,
}

/// The layer and part of a file, if it is in one.
fn place(file: &str) -> Option<(usize, usize)> {
    LAYERS.iter().enumerate().find_map(|(l, layer)| {
        let part = layer.parts.iter().position(|p| file.starts_with(p))?;
        Some((l, part))
    })
}

/// Whether an import from `from` to `to` breaks the layer rule (an import stays inside
/// its crate, so the layers of two crates never meet).
fn breaks(from: &str, to: &str) -> bool {
    match (place(from), place(to)) {
        (Some((lf, pf)), Some((lt, pt))) => {
            lt > lf || (lt == lf && pf != pt && LAYERS[lf].siblings)
        }
        _ => false,
    }
}

/// The imports of a crate that break a rule, with the names that make them.
pub fn broken_rules(tree: &CrateTree) -> Vec<Edge> {
    let mut edges: BTreeMap<(PathBuf, PathBuf), BTreeSet<String>> = BTreeMap::new();
    for (from, to, name) in tree.imports() {
        let (f, t) = (slash(&from), slash(&to));
        if breaks(&f, &t) && from != to {
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
