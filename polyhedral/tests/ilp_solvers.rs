//! The ILP scheduler under the optional native solvers: each one must give legal schedules
//! with the same permutable depth and fused groups as the default (microlp), since all
//! solve the same integer programs to optimality. Compiled only with the solver's feature
//! (`cargo test -p polyhedral --features cbc`); `scripts/test` runs the CBC build.
#![cfg(any(feature = "cbc", feature = "highs"))]

use polyhedral::deps::{check_schedule, Deps};
use polyhedral::diag::SourceFile;
use polyhedral::ilp::{ilp_schedule, schedule_stats, IlpOptions, ScheduleStats, Solver};
use polyhedral::isl::Ctx;
use polyhedral::scop::Scop;

fn stats(example: &str, sizes: &[(&str, i64)], solver: Solver) -> ScheduleStats {
    let path = format!("{}/../examples/{example}", env!("CARGO_MANIFEST_DIR"));
    let src = SourceFile::read(&path).expect("example");
    let prog = polyhedral::lang::compile(&src, None).expect("compiles");
    let values: Vec<Option<i64>> = prog
        .params
        .iter()
        .map(|p| sizes.iter().find(|(n, _)| *n == p.name).map(|(_, v)| *v))
        .collect();
    let ctx = Ctx::new();
    let scop = Scop::build(&ctx, &prog, &values, &src).expect("model");
    let deps = Deps::compute(&scop).expect("deps");
    let opts = IlpOptions {
        solver,
        ..IlpOptions::default()
    };
    let s = ilp_schedule(&ctx, &scop, &deps, &opts).expect("schedules");
    assert!(
        check_schedule(&deps, &s).expect("checks").is_ok(),
        "{example}"
    );
    schedule_stats(&s).expect("stats")
}

fn agree(solver: Solver) {
    let cases: [(&str, &[(&str, i64)]); 5] = [
        ("matmul.tc", &[("M", 32), ("N", 24), ("K", 16)]),
        (
            "conv_chain.tc",
            &[("H", 16), ("W", 16), ("KH", 3), ("KW", 3)],
        ),
        ("jacobi1d.tc", &[("T", 8), ("N", 32)]),
        ("jacobi2d.tc", &[("T", 4), ("N", 16)]),
        ("softmax.tc", &[("R", 8), ("N", 16)]),
    ];
    for (ex, sizes) in cases {
        let a = stats(ex, sizes, Solver::Microlp);
        let b = stats(ex, sizes, solver);
        assert_eq!(a.max_permutable_depth, b.max_permutable_depth, "{ex}");
        assert_eq!(a.fused_groups, b.fused_groups, "{ex}");
    }
}

#[cfg(feature = "cbc")]
#[test]
fn cbc_agrees_with_microlp() {
    agree(Solver::Cbc);
}

#[cfg(feature = "highs")]
#[test]
fn highs_agrees_with_microlp() {
    agree(Solver::Highs);
}
