//! Property: random dependence-carrying programs get a legal ILP schedule (checked with
//! `check_schedule`) under every fusion strategy, with and without skewing, for bound and
//! symbolic sizes. (Values are compared with the interpreter in
//! `targets/tests/ilp_values.rs`.)
mod ilp_support;

use polyhedral::deps::{check_schedule, Deps};
use polyhedral::diag::{render_plain, SourceFile};
use polyhedral::ilp::{ilp_schedule, Fuse, IlpOptions};
use polyhedral::isl::Ctx;
use polyhedral::scop::Scop;
use proptest::prelude::*;

fn legal(t: usize, k: &[u8], fuse: Fuse, no_skew: bool, bound: bool) {
    let (text, sizes) = ilp_support::program(t, k);
    let src = SourceFile::new("p.tc", text.clone());
    let prog = polyhedral::lang::compile(&src, None)
        .unwrap_or_else(|e| panic!("{text}\n{}", render_plain(e.as_ref())));
    let vals: Vec<Option<i64>> = prog
        .params
        .iter()
        .map(|p| bound.then(|| sizes.iter().find(|(n, _)| *n == p.name).expect("size").1))
        .collect();
    let ctx = Ctx::new();
    let scop = Scop::build(&ctx, &prog, &vals, &src).expect("model");
    let deps = Deps::compute(&scop).expect("deps");
    let opts = IlpOptions {
        fuse,
        no_skew,
        ..IlpOptions::default()
    };
    let s = ilp_schedule(&ctx, &scop, &deps, &opts)
        .unwrap_or_else(|e| panic!("{text}\n{}", render_plain(e.as_ref())));
    assert_eq!(check_schedule(&deps, &s).unwrap(), Ok(()), "{text}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn random_programs_get_legal_schedules(
        t in 0usize..ilp_support::TEMPLATES,
        k in proptest::collection::vec(any::<u8>(), 8),
        fuse in 0usize..3,
        no_skew in any::<bool>(),
        bound in any::<bool>(),
    ) {
        let fuse = [Fuse::Max, Fuse::Smart, Fuse::None][fuse];
        legal(t, &k, fuse, no_skew, bound);
    }
}

#[test]
fn every_template_compiles_and_schedules() {
    for t in 0..ilp_support::TEMPLATES {
        for k in [[0u8; 8], [1; 8], [2; 8], [7; 8]] {
            for fuse in [Fuse::Max, Fuse::Smart, Fuse::None] {
                legal(t, &k, fuse, false, true);
                legal(t, &k, fuse, true, false);
            }
        }
    }
}
