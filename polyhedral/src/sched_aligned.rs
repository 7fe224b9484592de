//! The schedule that needs no search: every statement's loops fused in one band, as they
//! are written, where every dependence then has distance zero.
//!
//! isl's scheduler costs time that grows faster than the number of statements (its
//! clustering merges statements pairwise and solves an integer program per merge: 30 ms
//! for a chain of 40 element-wise statements, 480 ms for 160). Many programs need none of
//! that search: a chain of element-wise operators, where each statement reads the others'
//! elements at its own indices. When
//! - every statement is a comprehension (no imperative loop around it) over the same
//!   number `d ≥ 1` of iterators,
//! - every dependence goes from an earlier statement to a later one, and maps each
//!   instance to the instance with the same indices (`S_a[x] -> S_b[x]`),
//! - and each statement depends on the one before it, so that program order is the only
//!   order the dependences allow,
//!
//! then the band `S_k[x] -> [x]` shared by all statements, with the statements in program
//! order below it, is valid, and it is what isl's objectives ask for: every dependence
//! distance is zero (the least proximity cost), every member is coincident, the band is
//! permutable, and it has the greatest depth. isl returns that tree for such programs too
//! (`polyhedral/tests/sched_aligned.rs` compares the two on programs of several shapes);
//! this finds it in time linear in the number of dependences. Where two statements may run
//! in either order, isl groups them under a `set` node in its own way; such programs, and
//! anything else, go to isl's scheduler, and `--isl-option aligned=0` always does (as do
//! `serialize_sccs=1`, which asks for no fusion, and `algorithm=feautrier`).

use crate::deps::Deps;
use crate::isl::IslResultExt;
use crate::scop::Scop;
use isl_rs::{DimType, Map, MultiUnionPwAff, Schedule, Set, UnionMap, UnionSet, UnionSetList};

/// The fused identity schedule (see the module's doc), or `None` where the program is not
/// of that kind.
pub fn aligned_schedule(scop: &Scop, deps: &Deps) -> miette::Result<Option<Schedule>> {
    let n = scop.stmt_names.len();
    let Some(d) = scop.iter_names.first().map(Vec::len) else {
        return Ok(None);
    };
    if n < 2
        || d == 0
        || scop.iter_names.iter().any(|names| names.len() != d)
        || scop.stmt_loops.iter().any(|loops| !loops.is_empty())
    {
        return Ok(None);
    }
    let validity = deps.validity()?;
    let Some(edges) = aligned_edges(scop, &validity)? else {
        return Ok(None);
    };
    if !in_one_order(n, &edges) {
        return Ok(None);
    }
    fused_identity(scop).map(Some)
}

/// The statement pairs `(a, b)` of `validity`'s relations, or `None` when one relation is
/// not of the form `S_a[x] -> S_b[x]` with `a < b`.
fn aligned_edges(scop: &Scop, validity: &UnionMap) -> miette::Result<Option<Vec<(usize, usize)>>> {
    let what = "reading dependences";
    let list = validity.get_map_list().isl(what)?;
    let mut edges = Vec::new();
    for k in 0..list.n_map().isl(what)? {
        let map = list.get_at(k).isl(what)?;
        let index = |dim| -> miette::Result<Option<usize>> {
            let name = map.get_tuple_name(dim).isl(what)?;
            Ok(scop.stmt_names.iter().position(|s| s == name))
        };
        let (Some(a), Some(b)) = (index(DimType::In)?, index(DimType::Out)?) else {
            return Ok(None);
        };
        if a >= b || !same_indices(scop, a, b, &map)? {
            return Ok(None);
        }
        edges.push((a, b));
    }
    Ok(Some(edges))
}

/// Whether `map` (from statement `a` to statement `b`) relates only instances with the
/// same indices.
fn same_indices(scop: &Scop, a: usize, b: usize, map: &Map) -> miette::Result<bool> {
    let xs: Vec<String> = (0..scop.iter_names[a].len())
        .map(|k| format!("x{k}"))
        .collect();
    let text = format!(
        "{}{{ {}[{}] -> {}[{}] }}",
        scop.param_prefix(),
        scop.stmt_names[a],
        xs.join(", "),
        scop.stmt_names[b],
        xs.join(", ")
    );
    let same = Map::read_from_str(&map.get_ctx(), &text).isl(&format!("reading `{text}`"))?;
    map.copy()
        .isl("copying a dependence")?
        .is_subset(&same)
        .isl("comparing a dependence with the identity")
}

/// Whether `edges` (from earlier to later statements) order all `n` statements in one
/// way only: each statement depends on the one before it.
fn in_one_order(n: usize, edges: &[(usize, usize)]) -> bool {
    let mut linked = vec![false; n];
    for &(a, b) in edges {
        if b == a + 1 {
            linked[a] = true;
        }
    }
    linked[..n - 1].iter().all(|&l| l)
}

/// Domain → Band `S_k[x] -> [x]` for every statement (permutable, every member
/// coincident) → Sequence of one filter per statement (its whole space), in program order.
fn fused_identity(scop: &Scop) -> miette::Result<Schedule> {
    let parts: Vec<String> = scop
        .stmt_names
        .iter()
        .zip(&scop.iter_names)
        .map(|(s, names)| format!("{s}[{}] -> [{}]", names.join(", "), names.join(", ")))
        .collect();
    let text = format!("{}{{ {} }}", scop.param_prefix(), parts.join("; "));
    let ctx = scop.domain.get_ctx();
    let umap = UnionMap::read_from_str(&ctx, &text).isl("reading the fused band")?;
    let mupa = MultiUnionPwAff::from_union_map(umap).isl("building the fused band")?;
    let schedule = Schedule::from_domain(scop.domain.copy().isl("copying the domain")?)
        .isl("creating a schedule")?;
    let mut band = schedule
        .get_root()
        .isl("getting the schedule root")?
        .child(0)
        .isl("descending the schedule")?
        .insert_partial_schedule(mupa)
        .isl("inserting the fused band")?;
    for k in 0..scop.iter_names[0].len() {
        band = band
            .band_member_set_coincident(k as i32, 1)
            .isl("setting a coincident flag")?;
    }
    band = band
        .band_set_permutable(1)
        .isl("setting the permutable flag")?;
    let mut filters =
        UnionSetList::alloc(&ctx, scop.stmt_names.len() as i32).isl("allocating filters")?;
    for domain in &scop.stmt_domains {
        // isl's scheduler filters by the statement's whole space; so does this.
        let space = domain.get_space().isl("a statement's space")?;
        let filter = UnionSet::from_set(Set::universe(space).isl("a statement's space")?)
            .isl("making a filter")?;
        filters = filters.add(filter).isl("adding a filter")?;
    }
    band.child(0)
        .isl("descending below the fused band")?
        .insert_sequence(filters)
        .isl("inserting the statement sequence")?
        .get_schedule()
        .isl("extracting the schedule")
}

#[cfg(test)]
mod tests {
    use super::in_one_order;

    #[test]
    fn one_order() {
        assert!(in_one_order(3, &[(0, 1), (1, 2)]));
        assert!(in_one_order(3, &[(0, 2), (1, 2), (0, 1)]));
        assert!(!in_one_order(3, &[(0, 2), (1, 2)]));
        assert!(!in_one_order(3, &[(0, 1)]));
        assert!(!in_one_order(4, &[(0, 1), (2, 3)]));
    }
}
