//! Checks the shape of polyc's source tree: that no two files import each other, directly or
//! round a longer circle, and that no function is longer than a limit.
//!
//! Every crate of the workspace is read from its root file (`src/lib.rs`, `src/main.rs`)
//! through its `mod` declarations. An import is any path that names an item of the same
//! crate: a `use` tree, or a path in code (`crate::x::f()`, `super::T`, `child::g`). A path
//! is followed through `use` re-exports (`pub use inner::Name` in `lib.rs` or `mod.rs`) to
//! the file that defines the item, so a circle through a crate root is seen as the circle
//! between the two files it really ties. A re-export itself (`pub use`) ties the
//! re-exporting file to the item's file only where that file's own code uses the name: a
//! `mod.rs` may define what its children share and re-export what they define. Test code (`#[cfg(test)]` modules, `#[test]`
//! functions, files whose name ends in `tests.rs`) is left out of both checks.

mod graph;
mod layers;
mod modules;

use std::path::Path;

pub use graph::{circles, Circle, Edge};
pub use layers::{broken_rules, Layer, LAYERS};
pub use modules::{load_crate, CrateTree, LongFn};

/// What the check found.
#[derive(Debug, Default)]
pub struct Report {
    /// Import circles between files, one per strongly connected group of files.
    pub circles: Vec<Circle>,
    /// Imports that break the layer rule ([`LAYERS`]).
    pub layer_breaks: Vec<Edge>,
    /// Functions over the limit, longest first.
    pub long_fns: Vec<LongFn>,
    /// Files read.
    pub files: usize,
}

/// The crates of the workspace: (package folder, root files).
pub const CRATES: &[(&str, &[&str])] = &[
    (".", &["src/lib.rs", "src/main.rs"]),
    ("polyhedral", &["src/lib.rs"]),
    ("schedule_tree", &["src/lib.rs"]),
    ("tiling", &["src/lib.rs"]),
    ("targets", &["src/lib.rs"]),
    ("fuzzer", &["src/lib.rs", "src/main.rs"]),
    ("house", &["src/lib.rs", "src/main.rs"]),
    ("python", &["src/lib.rs"]),
];

/// The folders whose functions must stay under the limit (relative to the root).
pub const LENGTH_CHECKED: &[&str] = &[
    "src/",
    "tiling/src/",
    "targets/src/",
    "polyhedral/src/",
    "schedule_tree/src/",
    "python/src/",
];

/// Checks every crate under `root`, with functions allowed `max_lines` lines.
pub fn check(root: &Path, max_lines: usize) -> Result<Report, String> {
    let mut report = Report::default();
    for (dir, roots) in CRATES {
        for r in *roots {
            let root_file = root.join(dir).join(r);
            if !root_file.exists() {
                continue;
            }
            let tree = load_crate(root, &root_file)?;
            report.files += tree
                .modules
                .iter()
                .filter(|m| m.inline_of.is_none())
                .count();
            report.circles.extend(circles(&tree));
            report.layer_breaks.extend(broken_rules(&tree));
            for m in &tree.modules {
                if m.inline_of.is_some() {
                    continue;
                }
                let rel = m.file.to_string_lossy().replace('\\', "/");
                let checked =
                    LENGTH_CHECKED.iter().any(|p| rel.starts_with(p)) && !rel.ends_with("tests.rs");
                if checked {
                    report.long_fns.extend(modules::long_fns(m, max_lines));
                }
            }
        }
    }
    report
        .long_fns
        .sort_by(|a, b| b.lines.cmp(&a.lines).then(a.file.cmp(&b.file)));
    report.long_fns.dedup();
    Ok(report)
}

/// The report as text, one finding per line; empty when nothing was found.
pub fn render(report: &Report, max_lines: usize) -> String {
    let mut s = String::new();
    for c in &report.circles {
        let files: Vec<String> = c.files.iter().map(|f| f.display().to_string()).collect();
        s += &format!("import circle: {}\n", files.join(" ↔ "));
        for e in &c.edges {
            s += &format!(
                "  {} → {} ({})\n",
                e.from.display(),
                e.to.display(),
                e.names.join(", ")
            );
        }
    }
    for e in &report.layer_breaks {
        s += &format!(
            "layer rule: {} must not import {} ({})\n",
            e.from.display(),
            e.to.display(),
            e.names.join(", ")
        );
    }
    for f in &report.long_fns {
        s += &format!(
            "{}:{}: `{}` is {} lines (at most {max_lines})\n",
            f.file.display(),
            f.line,
            f.name,
            f.lines
        );
    }
    s
}
