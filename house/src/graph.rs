//! The file-level import graph of one crate and its circles.

use crate::modules::CrateTree;
use petgraph::algo::tarjan_scc;
use petgraph::graph::DiGraph;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// One import edge between two files, with the names that make it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edge {
    /// The importing file.
    pub from: PathBuf,
    /// The file that defines what is imported.
    pub to: PathBuf,
    /// The imported names.
    pub names: Vec<String>,
}

/// A group of files that import each other round a circle.
#[derive(Clone, Debug)]
pub struct Circle {
    /// The files, sorted.
    pub files: Vec<PathBuf>,
    /// The edges between them.
    pub edges: Vec<Edge>,
}

/// The circles of a crate's file graph: each strongly connected group of two or more files.
pub fn circles(tree: &CrateTree) -> Vec<Circle> {
    let mut edges: BTreeMap<(PathBuf, PathBuf), BTreeSet<String>> = BTreeMap::new();
    for (from, to, name) in tree.imports() {
        if from != to {
            edges.entry((from, to)).or_default().insert(name);
        }
    }
    let mut g = DiGraph::<PathBuf, ()>::new();
    let mut ix = BTreeMap::new();
    for (from, to) in edges.keys() {
        for f in [from, to] {
            ix.entry(f.clone()).or_insert_with(|| g.add_node(f.clone()));
        }
        g.add_edge(ix[from], ix[to], ());
    }
    let mut out = Vec::new();
    for scc in tarjan_scc(&g) {
        if scc.len() < 2 {
            continue;
        }
        let mut files: Vec<PathBuf> = scc.iter().map(|n| g[*n].clone()).collect();
        files.sort();
        let inside: BTreeSet<&PathBuf> = files.iter().collect();
        let edges = edges
            .iter()
            .filter(|((f, t), _)| inside.contains(f) && inside.contains(t))
            .map(|((f, t), n)| Edge {
                from: f.clone(),
                to: t.clone(),
                names: n.iter().cloned().collect(),
            })
            .collect();
        out.push(Circle { files, edges });
    }
    out.sort_by(|a, b| a.files.cmp(&b.files));
    out
}
