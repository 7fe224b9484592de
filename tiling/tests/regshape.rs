//! Which statements the register-shape rerun considers (`regshape::register_candidates`):
//! reductions whose write keeps two iterators, and no statement whose only left-out
//! iterator is a time loop it overwrites at every step.

mod common;
use common::*;

fn candidates(example: &str, params: &[(&str, i64)]) -> Vec<String> {
    let fx = Fixture::new(example, params, false);
    tiling::regshape::register_candidates(&fx.scop)
        .into_iter()
        .map(|s| fx.scop.stmt_names[s].clone())
        .collect()
}

#[test]
fn a_contraction_is_a_candidate() {
    // S_0 zeroes C (no iterator left out), S_1 accumulates over k.
    assert_eq!(
        candidates("matmul.tc", &[("M", 8), ("N", 8), ("K", 8)]),
        ["S_1"]
    );
}

#[test]
fn a_stencil_in_a_time_loop_is_no_reduction() {
    // B = f(A) and A = f(B) leave out only `t`, and overwrite their elements.
    assert!(candidates("polybench/heat_3d.tc", &[("N", 10), ("T", 4)]).is_empty());
    assert!(candidates("polybench/jacobi_2d.tc", &[("N", 10), ("T", 4)]).is_empty());
}

#[test]
fn an_accumulation_across_a_loop_is_a_reduction() {
    // symm: temp2(j) +=! … over its own k (S_0 zeroes, S_1 accumulates), C(k, j) += … over
    // the loop's i (S_2); C(i, j) = … (S_3) keeps every iterator.
    assert_eq!(
        candidates("polybench/symm.tc", &[("M", 6), ("N", 7)]),
        ["S_2"]
    );
}
