//! The ILP scheduler on the examples: golden block YAML, legality, statistics, timing.

use polyhedral::deps::{check_schedule, Deps};
use polyhedral::diag::{render_plain, SourceFile};
use polyhedral::ilp::{ilp_schedule, schedule_stats, Fuse, IlpOptions, ScheduleStats};
use polyhedral::isl::ffi::schedule_to_block_yaml;
use polyhedral::isl::Ctx;
use polyhedral::sched::{isl_schedule, IslSchedOptions};
use polyhedral::scop::Scop;
use std::time::{Duration, Instant};

fn example(name: &str) -> SourceFile {
    let path = format!("{}/../examples/{name}.tc", env!("CARGO_MANIFEST_DIR"));
    SourceFile::read(&path).expect("example exists")
}

/// Sizes by name (`None`: all symbolic).
fn values(prog: &polyhedral::ir::Program, sizes: Option<&[(&str, i64)]>) -> Vec<Option<i64>> {
    prog.params
        .iter()
        .map(|p| {
            sizes.map(|s| {
                s.iter()
                    .find(|(n, _)| *n == p.name)
                    .unwrap_or_else(|| panic!("no size for {}", p.name))
                    .1
            })
        })
        .collect()
}

struct Run {
    yaml: String,
    stats: ScheduleStats,
    time: Duration,
    isl_stats: ScheduleStats,
}

/// Schedules `name` with the ILP scheduler (checked legal) and with isl.
fn run(name: &str, sizes: Option<&[(&str, i64)]>, opts: &IlpOptions) -> Run {
    let src = example(name);
    let prog = polyhedral::lang::compile(&src, None)
        .unwrap_or_else(|e| panic!("{}", render_plain(e.as_ref())));
    let ctx = Ctx::new();
    let scop = Scop::build(&ctx, &prog, &values(&prog, sizes), &src).expect("model");
    let deps = Deps::compute(&scop).expect("deps");
    let t = Instant::now();
    let s = ilp_schedule(&ctx, &scop, &deps, opts)
        .unwrap_or_else(|e| panic!("{name}: {}", render_plain(e.as_ref())));
    let time = t.elapsed();
    assert_eq!(check_schedule(&deps, &s).unwrap(), Ok(()), "{name}");
    let isl = isl_schedule(&ctx, &scop, &deps, &IslSchedOptions::default()).expect("isl");
    Run {
        yaml: schedule_to_block_yaml(&s).expect("prints"),
        stats: schedule_stats(&s).expect("stats"),
        time,
        isl_stats: schedule_stats(&isl).expect("stats"),
    }
}

fn default() -> IlpOptions {
    IlpOptions::default()
}

#[test]
fn matmul_golden() {
    let r = run("matmul", None, &default());
    insta::assert_snapshot!("matmul_ilp_symbolic", r.yaml);
    let r = run(
        "matmul",
        Some(&[("M", 64), ("N", 48), ("K", 32)]),
        &default(),
    );
    insta::assert_snapshot!("matmul_ilp_concrete", r.yaml);
    let max = IlpOptions {
        fuse: Fuse::Max,
        ..default()
    };
    let r = run("matmul", None, &max);
    insta::assert_snapshot!("matmul_ilp_fuse_max", r.yaml);
    assert_eq!(
        r.stats,
        ScheduleStats {
            max_permutable_depth: 3,
            fused_groups: 1,
            coincident_dims: vec![2]
        }
    );
}

#[test]
fn conv_chain_golden() {
    let r = run("conv_chain", None, &default());
    insta::assert_snapshot!("conv_chain_ilp_symbolic", r.yaml);
    let sizes = [("H", 8), ("W", 8), ("KH", 3), ("KW", 3)];
    let r = run("conv_chain", Some(&sizes), &default());
    insta::assert_snapshot!("conv_chain_ilp_concrete", r.yaml);
    for fuse in [Fuse::Max, Fuse::None] {
        let opts = IlpOptions { fuse, ..default() };
        let r = run("conv_chain", Some(&sizes), &opts);
        insta::assert_snapshot!(format!("conv_chain_ilp_fuse_{fuse}"), r.yaml);
    }
    let r = run(
        "conv_chain",
        Some(&sizes),
        &IlpOptions {
            no_skew: true,
            ..default()
        },
    );
    insta::assert_snapshot!("conv_chain_ilp_no_skew", r.yaml);
}

#[test]
fn jacobi1d_golden() {
    for (tag, sizes) in [
        ("symbolic", None),
        ("concrete", Some(&[("T", 10), ("N", 64)][..])),
    ] {
        let r = run("jacobi1d", sizes, &default());
        insta::assert_snapshot!(format!("jacobi1d_ilp_{tag}"), r.yaml);
        // A skewed, fully permutable band of depth 2.
        assert!(r.yaml.contains("S_0[t, i] -> [(t + i)]"), "{}", r.yaml);
        assert_eq!(r.stats.max_permutable_depth, 2);
    }
    // Without skewing, t and i cannot share a band.
    let r = run(
        "jacobi1d",
        None,
        &IlpOptions {
            no_skew: true,
            ..default()
        },
    );
    assert_eq!(r.stats.max_permutable_depth, 1);
    insta::assert_snapshot!("jacobi1d_ilp_no_skew", r.yaml);
}

#[test]
fn jacobi2d_golden() {
    for (tag, sizes) in [
        ("symbolic", None),
        ("concrete", Some(&[("T", 5), ("N", 32)][..])),
    ] {
        for fuse in [Fuse::Smart, Fuse::Max] {
            let r = run("jacobi2d", sizes, &IlpOptions { fuse, ..default() });
            if fuse == Fuse::Smart {
                insta::assert_snapshot!(format!("jacobi2d_ilp_{tag}"), r.yaml);
                assert!(r.yaml.contains("S_0[t, i, j] -> [(t + i)]"), "{}", r.yaml);
                assert!(r.yaml.contains("S_0[t, i, j] -> [(t + j)]"), "{}", r.yaml);
            } else {
                // With T = 5 the output copy fuses (shift T - 2 = 3), still skewed.
                insta::assert_snapshot!(format!("jacobi2d_ilp_{tag}_fuse_max"), r.yaml);
            }
            assert_eq!(r.stats.max_permutable_depth, 3);
        }
    }
}

#[test]
fn trmm_golden() {
    let r = run("trmm", None, &default());
    insta::assert_snapshot!("trmm_ilp_symbolic", r.yaml);
    let r = run("trmm", Some(&[("N", 32), ("M", 24)]), &default());
    insta::assert_snapshot!("trmm_ilp_concrete", r.yaml);
}

/// Every example at its first smoke-suite shape: legal, fast, and the comparison table.
#[test]
fn smoke_examples_table() {
    let cases: [(&str, &[(&str, i64)]); 18] = [
        ("matmul", &[("M", 64), ("N", 48), ("K", 32)]),
        ("matmul_at", &[("M", 32), ("N", 40), ("K", 24)]),
        ("matmul_bt", &[("M", 32), ("N", 40), ("K", 24)]),
        ("batch_matmul", &[("BS", 3), ("M", 16), ("N", 24), ("K", 8)]),
        (
            "conv2d_stride2",
            &[
                ("CI", 3),
                ("CO", 4),
                ("H", 17),
                ("W", 16),
                ("KH", 3),
                ("KW", 3),
            ],
        ),
        (
            "depthwise_conv",
            &[("C", 4), ("H", 20), ("W", 18), ("KH", 3), ("KW", 3)],
        ),
        ("maxpool", &[("C", 3), ("H", 16), ("W", 16)]),
        ("conv_chain", &[("H", 64), ("W", 64), ("KH", 3), ("KW", 3)]),
        ("softmax", &[("R", 16), ("N", 64)]),
        ("layernorm", &[("R", 16), ("N", 64)]),
        ("attention", &[("L", 32), ("D", 16)]),
        ("jacobi1d", &[("T", 10), ("N", 64)]),
        ("jacobi2d", &[("T", 5), ("N", 32)]),
        ("trmm", &[("N", 32), ("M", 24)]),
        ("gemm_i8", &[("M", 64), ("N", 48), ("K", 32)]),
        ("pixel_shuffle", &[("H", 16), ("W", 8)]),
        ("mm2", &[("NI", 32), ("NJ", 24), ("NK", 16), ("NL", 20)]),
        ("epilogue", &[("R", 16), ("N", 64)]),
    ];
    let mut table = String::from(
        "example         | ilp depth | ilp groups | ilp coincident | isl depth | isl groups | isl coincident\n",
    );
    let mut slowest = Duration::ZERO;
    for (name, sizes) in cases {
        let r = run(name, Some(sizes), &default());
        slowest = slowest.max(r.time);
        assert!(r.time < Duration::from_secs(2), "{name} took {:?}", r.time);
        assert!(
            r.stats.max_permutable_depth >= r.isl_stats.max_permutable_depth,
            "{name}: the ILP band ({}) is shallower than isl's ({})",
            r.stats.max_permutable_depth,
            r.isl_stats.max_permutable_depth
        );
        table.push_str(&format!(
            "{name:<15} | {:>9} | {:>10} | {:<14} | {:>9} | {:>10} | {:?}\n",
            r.stats.max_permutable_depth,
            r.stats.fused_groups,
            format!("{:?}", r.stats.coincident_dims),
            r.isl_stats.max_permutable_depth,
            r.isl_stats.fused_groups,
            r.isl_stats.coincident_dims,
        ));
    }
    eprintln!("{table}slowest ILP schedule: {slowest:?}");
    insta::assert_snapshot!("smoke_table", table);
}
