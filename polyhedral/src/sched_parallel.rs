//! How much of a schedule runs under parallel loops, to choose between two schedules that
//! isl's retries found after its time budget ran out (see `sched::retry_after_timeout`).
//!
//! A statement counts when some band above it has a coincident member along which the
//! statement takes more than one value. Statements with more iterators run more often, so
//! one counts 256 times a statement with one iterator fewer (the weight the
//! contiguous-loops pass gives strided accesses).

use crate::isl::IslResultExt;
use crate::sched_bands::collect_band_flags;
use crate::scop::Scop;
use isl_rs::{DimType, Map, Schedule, UnionSet};

/// The weighted number of statements of `schedule` that run under a parallel loop.
pub(crate) fn parallel_weight(scop: &Scop, schedule: &Schedule) -> miette::Result<u128> {
    let mut bands = Vec::new();
    collect_band_flags(
        schedule.get_root().isl("reading the schedule root")?,
        &mut bands,
    )?;
    let mut parallel = vec![false; scop.stmt_names.len()];
    for (_prefix, partial, coincident, _permutable) in &bands {
        if !coincident.iter().any(|&c| c) {
            continue;
        }
        for (s, is_parallel) in parallel.iter_mut().enumerate() {
            if *is_parallel {
                continue;
            }
            let dom = UnionSet::from_set(scop.stmt_domains[s].copy().isl("copying a domain")?)
                .isl("a statement's domain as a union set")?;
            let map = partial
                .copy()
                .isl("copying a band schedule")?
                .intersect_domain(dom)
                .isl("restricting a band schedule to a statement")?;
            if map.is_empty().isl("testing a band for a statement")? {
                continue;
            }
            let map = Map::from_union_map(map).isl("a statement's band schedule")?;
            for (m, _) in coincident.iter().enumerate().filter(|(_, &c)| c) {
                if varies(&map, m)? {
                    *is_parallel = true;
                    break;
                }
            }
        }
    }
    Ok((0..parallel.len())
        .filter(|&s| parallel[s])
        .map(|s| 256u128.saturating_pow(scop.iter_names[s].len() as u32))
        .fold(0u128, u128::saturating_add))
}

/// Whether a statement's band schedule `map` takes more than one value at member `m`.
pub fn varies(map: &Map, m: usize) -> miette::Result<bool> {
    let n = map.dim(DimType::Out).isl("counting band members")? as u32;
    let m = m as u32;
    let row = map
        .copy()
        .isl("copying a map")?
        .project_out(DimType::Out, m + 1, n - m - 1)
        .isl("dropping later members")?
        .project_out(DimType::Out, 0, m)
        .isl("dropping earlier members")?;
    let values = row.range().isl("a member's values")?;
    Ok(!values.is_singleton().isl("testing for one value")?)
}
