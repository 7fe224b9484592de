//! Strongly connected components of the dependence graph (petgraph), in a topological
//! order, and the fusion rules that group them at a cut.

use petgraph::algo::tarjan_scc;
use petgraph::graph::DiGraph;
use std::collections::BTreeSet;

/// The SCCs of the graph on `stmts` with `edges` (statement pairs; self-loops ignored),
/// each sorted, listed in a topological order that takes the component with the smallest
/// statement number first whenever there is a choice (so the program order is kept where
/// the dependences allow it).
pub fn sccs_in_order(stmts: &[usize], edges: &[(usize, usize)]) -> Vec<Vec<usize>> {
    let mut g = DiGraph::<usize, ()>::new();
    let nodes: Vec<_> = stmts.iter().map(|&s| g.add_node(s)).collect();
    let index = |s: usize| stmts.iter().position(|&x| x == s);
    for &(a, b) in edges {
        if a == b {
            continue;
        }
        if let (Some(i), Some(j)) = (index(a), index(b)) {
            g.update_edge(nodes[i], nodes[j], ());
        }
    }
    let mut comps: Vec<Vec<usize>> = tarjan_scc(&g)
        .into_iter()
        .map(|c| {
            let mut v: Vec<usize> = c.into_iter().map(|n| g[n]).collect();
            v.sort_unstable();
            v
        })
        .collect();
    comps.sort();
    let comp_of = |s: usize| comps.iter().position(|c| c.contains(&s));
    let m = comps.len();
    let mut succ = vec![BTreeSet::new(); m];
    let mut indeg = vec![0usize; m];
    for &(a, b) in edges {
        if let (Some(i), Some(j)) = (comp_of(a), comp_of(b)) {
            if i != j && index(a).is_some() && index(b).is_some() && succ[i].insert(j) {
                indeg[j] += 1;
            }
        }
    }
    // Kahn's algorithm, smallest first (components are sorted by their first statement).
    let mut ready: BTreeSet<usize> = (0..m).filter(|&i| indeg[i] == 0).collect();
    let mut out = Vec::with_capacity(m);
    while let Some(i) = ready.pop_first() {
        out.push(comps[i].clone());
        for &j in &succ[i] {
            indeg[j] -= 1;
            if indeg[j] == 0 {
                ready.insert(j);
            }
        }
    }
    out
}

/// Groups consecutive components whose `dim` is equal (the smart-fusion rule).
pub fn group_by_dim(comps: &[Vec<usize>], dim: impl Fn(&[usize]) -> usize) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut last = None;
    for c in comps {
        let d = dim(c);
        match out.last_mut() {
            Some(g) if last == Some(d) => g.extend(c.iter().copied()),
            _ => out.push(c.clone()),
        }
        last = Some(d);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topological_components() {
        // 2 -> 0, 1 independent, 3 <-> 4 a cycle after 0.
        let c = sccs_in_order(&[0, 1, 2, 3, 4], &[(2, 0), (0, 3), (3, 4), (4, 3), (1, 1)]);
        assert_eq!(c, vec![vec![1], vec![2], vec![0], vec![3, 4]]);
        let g = group_by_dim(&[vec![0], vec![1], vec![2], vec![3]], |c| {
            [2, 2, 3, 2][c[0]]
        });
        assert_eq!(g, vec![vec![0, 1], vec![2], vec![3]]);
    }
}
