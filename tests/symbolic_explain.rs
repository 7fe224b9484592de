//! `polyc explain` at symbolic sizes: the exact per-tile footprints, data moved per level
//! and recomputation of post-tiling fusion, as quasi-polynomials (barvinok), against isl's
//! enumeration of the same quantities in the model built at bound shapes.
//!
//! For each case (a program, a tile spec, the sizes left symbolic) and each bound shape:
//! - data moved per level and tensor: the quasi-polynomial evaluated by barvinok equals
//!   isl's count of the pairs (tile, element) of the bound model;
//! - the largest per-tile footprint: the bound evaluated at the shape equals (tight) or is
//!   at least (not tight) the largest count over the bound model's tiles, and the maximum
//!   over every size is at least it;
//! - the recomputation of an overlapping producer: the quasi-polynomials of the instances
//!   the tiles run, and of the producer's instances, equal the bound-size explain's
//!   numbers.
//!
//! Needs barvinok (`scripts/install-barvinok`).

mod common;
use common::*;

use polyc::pipeline::options::CompileOptions;
use polyc::pipeline::stages::{analyse, Front, Mode};
use polyhedral::barvinok::Barvinok;
use polyhedral::sched::SchedulerKind;
use targets::codegen::microkernel::{DynamicSize, SizeValues};
use tiling::symbolic::{self, Maximum};
use tiling::{ExplainReport, TileCx};

struct Case {
    program: &'static str,
    spec: &'static str,
    /// Sizes bound in every run.
    bound: &'static [(&'static str, i64)],
    /// Values of the symbolic sizes, one list per shape.
    shapes: &'static [&'static [(&'static str, i64)]],
    dynamic: Option<(&'static str, i64, i64)>,
}

const CASES: &[Case] = &[
    Case {
        program: "examples/matmul.tc",
        spec: "S_1: 4@L1, 4@L1, 4@L1\n",
        bound: &[],
        shapes: &[
            &[("M", 5), ("K", 7), ("N", 9)],
            &[("M", 8), ("K", 3), ("N", 4)],
            &[("M", 11), ("K", 6), ("N", 1)],
        ],
        dynamic: None,
    },
    Case {
        program: "examples/dense.tc",
        spec: "S_1: 8@L2 4@L1, 8@L2 4@L1, 4@L1\n",
        bound: &[("N", 9), ("K", 6)],
        shapes: &[&[("T", 1)], &[("T", 7)], &[("T", 13)], &[("T", 16)]],
        dynamic: Some(("T", 1, 16)),
    },
    Case {
        program: "examples/conv_chain_temp.tc",
        spec: "S_4: 4@L1, 4@L1\n",
        bound: &[("KH", 3), ("KW", 3)],
        shapes: &[
            &[("H", 8), ("W", 8)],
            &[("H", 11), ("W", 7)],
            &[("H", 6), ("W", 13)],
        ],
        dynamic: None,
    },
];

fn options(case: &Case, spec: &str, values: &[(&str, i64)]) -> CompileOptions {
    let mut params: Vec<(String, i64)> = case
        .bound
        .iter()
        .map(|(n, v)| (n.to_string(), *v))
        .collect();
    params.extend(values.iter().map(|(n, v)| (n.to_string(), *v)));
    let dynamic = match (case.dynamic, values.is_empty()) {
        (Some((n, lo, hi)), true) => vec![DynamicSize {
            name: n.to_string(),
            values: SizeValues::Range(lo, hi),
        }],
        _ => Vec::new(),
    };
    CompileOptions {
        params,
        tile_spec: Some(spec.to_string()),
        scheduler: SchedulerKind::Initial,
        dynamic,
        ..CompileOptions::for_program(root().join(case.program).display().to_string())
    }
}

fn explain(front: &Front) -> ExplainReport {
    let levels = front.target.desc().levels();
    let cx = TileCx {
        ctx: &front.ctx,
        program: &front.program,
        scop: &front.scop,
        deps: &front.deps,
        levels: &levels,
    };
    let (spec, file) = front.tile_spec.as_ref().expect("a tile spec");
    tiling::explain(front.scheduled(), &cx, spec, file).unwrap_or_else(|e| panic!("{e:?}"))
}

fn integer(s: &str) -> i64 {
    s.parse()
        .unwrap_or_else(|_| panic!("`{s}` is not an integer"))
}

#[test]
fn data_moved_and_footprints_equal_enumeration() {
    let b = Barvinok::load().unwrap_or_else(|e| panic!("{e}: {}", e.help()));
    let dir = tempdir();
    for case in CASES {
        let spec = write(dir.path(), "spec.txt", case.spec);
        let sym = analyse(&options(case, &spec, &[]), Mode::Optimised).expect("symbolic model");
        let sym_report = explain(&sym);
        assert!(
            !sym_report.movement.is_empty(),
            "{}: no exact counts at symbolic sizes",
            case.program
        );
        for shape in case.shapes {
            let values: Vec<(String, i64)> =
                shape.iter().map(|(n, v)| (n.to_string(), *v)).collect();
            let bound =
                analyse(&options(case, &spec, shape), Mode::Optimised).expect("bound model");
            let report = explain(&bound);
            let (_, bands) =
                tiling::analysis::collect_bands(&bound.ctx, &bound.scop, bound.scheduled())
                    .expect("bands");
            for lm in &sym_report.movement {
                let band = &report.tiles.bands[lm.band];
                let level = band
                    .levels
                    .iter()
                    .find(|l| l.buffer == lm.buffer)
                    .expect("the same level at bound sizes");
                let bi = bands
                    .iter()
                    .position(|x| x.path == band.path)
                    .expect("the band");
                let moved = symbolic::moved_by_enumeration(
                    &bound.ctx,
                    &bound.scop,
                    &bands,
                    bi,
                    &level.windows,
                )
                .expect("enumeration");
                let largest = symbolic::per_tile_max_by_enumeration(
                    &bound.ctx,
                    &bound.scop,
                    &bands,
                    bi,
                    &level.windows,
                )
                .expect("enumeration");
                let at = format!(
                    "{} band #{} {} at {values:?}",
                    case.program, lm.band, lm.buffer
                );
                assert_eq!(
                    moved.len(),
                    lm.tensors.len(),
                    "{at}: the tensors the tiles touch"
                );
                let total = lm.total.as_ref().expect("the level's totals");
                let bytes: i64 = lm
                    .tensors
                    .iter()
                    .map(|t| {
                        let n = moved
                            .iter()
                            .find(|(id, _)| *id == t.tensor_id)
                            .and_then(|(_, n)| *n)
                            .expect("counted");
                        n as i64 * t.elem_bytes as i64
                    })
                    .sum();
                assert_eq!(
                    integer(&b.eval(&total.moved.isl, &values).expect("eval")),
                    bytes,
                    "{at}: bytes moved: {}",
                    total.moved.isl
                );
                for t in &lm.tensors {
                    let want = moved
                        .iter()
                        .find(|(id, _)| *id == t.tensor_id)
                        .and_then(|(_, n)| *n)
                        .unwrap_or_else(|| panic!("{at}: {} not counted", t.tensor));
                    let got = integer(&b.eval(&t.moved.isl, &values).expect("eval"));
                    assert_eq!(
                        got, want as i64,
                        "{at}: {} moved: {}",
                        t.tensor, t.moved.isl
                    );
                    let big = largest
                        .iter()
                        .find(|(id, _)| *id == t.tensor_id)
                        .and_then(|(_, n)| *n)
                        .expect("largest tile");
                    let bound_at = integer(
                        &b.eval_fold(&t.per_tile_max_isl, &values)
                            .expect("eval fold"),
                    );
                    match &t.per_tile_max {
                        Maximum::Value { tight: true, .. } => assert_eq!(
                            bound_at, big as i64,
                            "{at}: {} largest tile: {}",
                            t.tensor, t.per_tile_max_isl
                        ),
                        _ => assert!(
                            bound_at >= big as i64,
                            "{at}: {} largest tile {big} above its bound {bound_at}",
                            t.tensor
                        ),
                    }
                    if let Maximum::Value { text, .. } = &t.per_tile_max_all {
                        assert!(
                            integer(text) >= big as i64,
                            "{at}: {} largest tile {big} above the maximum over every size {text}",
                            t.tensor
                        );
                    }
                }
            }
        }
        // With a dynamic range, the maximum of the data moved over every size is the
        // largest value the quasi-polynomial takes in the range.
        if let Some((name, lo, hi)) = case.dynamic {
            for lm in &sym_report.movement {
                let total = lm.total.as_ref().expect("the level's totals");
                let max = (lo..=hi)
                    .map(|v| {
                        let p = vec![(name.to_string(), v)];
                        integer(&b.eval(&total.moved.isl, &p).expect("eval"))
                    })
                    .max()
                    .unwrap_or(0);
                assert_eq!(
                    total.moved_max,
                    Maximum::Value {
                        text: max.to_string(),
                        tight: true
                    },
                    "{}: bytes moved over {name}={lo}..{hi}",
                    case.program
                );
                for t in &lm.tensors {
                    let values: Vec<i64> = (lo..=hi)
                        .map(|v| {
                            let mut p: Vec<(String, i64)> = vec![(name.to_string(), v)];
                            p.retain(|(n, _)| t.moved.isl.contains(n.as_str()));
                            integer(&b.eval(&t.moved.isl, &p).expect("eval"))
                        })
                        .collect();
                    let max = values.iter().max().copied().unwrap_or(0);
                    assert_eq!(
                        t.moved_max,
                        Maximum::Value {
                            text: max.to_string(),
                            tight: true
                        },
                        "{}: {} moved over {name}={lo}..{hi}",
                        case.program,
                        t.tensor
                    );
                }
            }
        } else {
            // Unbounded sizes: the data moved has no finite maximum.
            for lm in &sym_report.movement {
                for t in &lm.tensors {
                    assert!(
                        matches!(t.moved_max, Maximum::Unbounded(ref v) if !v.is_empty()),
                        "{}: {} moved: {:?}",
                        case.program,
                        t.tensor,
                        t.moved_max
                    );
                }
            }
        }
    }
}

/// The numbers after `runs` in the bound-size explain's line on `stmt`: the instances the
/// tiles run and the producer's instances.
fn bound_recompute(explain: &str, stmt: &str) -> (i64, i64) {
    for line in explain.lines() {
        let line = line.trim();
        if !(line.starts_with(&format!("fused {stmt},"))
            || line.starts_with(&format!("not fused {stmt}:")))
        {
            continue;
        }
        let words: Vec<&str> = line
            .split(|c: char| !c.is_ascii_digit())
            .filter(|w| !w.is_empty())
            .collect();
        let k = line.find("runs ").expect("runs");
        let tail = &line[k + 5..];
        let nums: Vec<i64> = tail
            .split(|c: char| !c.is_ascii_digit())
            .filter(|w| !w.is_empty())
            .map(|w| w.parse().unwrap())
            .collect();
        assert!(!words.is_empty());
        return (nums[0], nums[1]);
    }
    panic!("no line on {stmt} in\n{explain}");
}

#[test]
fn recomputation_of_fusion_equals_bound_counts() {
    let b = Barvinok::load().unwrap_or_else(|e| panic!("{e}: {}", e.help()));
    let dir = tempdir();
    let case = &CASES[2];
    let spec = write(dir.path(), "spec.txt", case.spec);
    let opts = options(case, &spec, &[]);
    let front = analyse(&opts, Mode::Optimised).expect("symbolic model");
    let compiled = polyc::pipeline::driver::compile(&opts, Mode::Optimised).expect("compiles");
    let tiled = compiled.stage("tiled").expect("tiled stage").tree.clone();
    let levels = front.target.desc().levels();
    let cx = TileCx {
        ctx: &front.ctx,
        program: &front.program,
        scop: &front.scop,
        deps: &front.deps,
        levels: &levels,
    };
    let (_, rep) = tiling::fuse(tiled, &cx, &front.target.fuse_options()).expect("fuses");
    let s0 = rep
        .symbolic
        .iter()
        .find(|r| r.stmt == "S_0")
        .unwrap_or_else(|| panic!("no symbolic recomputation of S_0: {rep:?}"));
    for shape in case.shapes {
        let values: Vec<(String, i64)> = shape.iter().map(|(n, v)| (n.to_string(), *v)).collect();
        let bound = CompileOptions {
            explain: true,
            ..options(case, &spec, shape)
        };
        let text = polyc::pipeline::driver::compile(&bound, Mode::Optimised)
            .expect("compiles")
            .explain
            .expect("explain");
        let (executed, instances) = bound_recompute(&text, "S_0");
        let ev = |q: &str| integer(&b.eval(q, &values).expect("eval"));
        assert_eq!(ev(&s0.executed.isl), executed, "executed at {values:?}");
        assert_eq!(ev(&s0.instances.isl), instances, "instances at {values:?}");
        assert_eq!(
            ev(&s0.extra.isl),
            executed - instances,
            "extra at {values:?}"
        );
    }
}

/// An independent check of the sets themselves: matmul's 4×4×4 tiles move `M·K·⌈N/4⌉`
/// elements of A (every (i, k) block once per column tile), `K·N·⌈M/4⌉` of B and
/// `M·N·⌈K/4⌉` of C.
#[test]
fn matmul_data_moved_matches_the_closed_form() {
    let b = Barvinok::load().unwrap_or_else(|e| panic!("{e}: {}", e.help()));
    let dir = tempdir();
    let case = &CASES[0];
    let spec = write(dir.path(), "spec.txt", case.spec);
    let sym = analyse(&options(case, &spec, &[]), Mode::Optimised).expect("symbolic model");
    let report = explain(&sym);
    let l1 = &report.movement[0];
    let up = |a: i64| (a + 3) / 4;
    for (m, k, n) in [(1, 1, 1), (5, 7, 9), (13, 4, 8), (64, 3, 17)] {
        let values = vec![
            ("M".to_string(), m),
            ("K".to_string(), k),
            ("N".to_string(), n),
        ];
        for (tensor, want) in [
            ("A", m * k * up(n)),
            ("B", k * n * up(m)),
            ("C", m * n * up(k)),
        ] {
            let t = l1
                .tensors
                .iter()
                .find(|t| t.tensor == tensor)
                .expect("tensor");
            let got = integer(&b.eval(&t.moved.isl, &values).expect("eval"));
            assert_eq!(got, want, "{tensor} at M={m}, K={k}, N={n}");
        }
    }
}

#[test]
fn explain_prints_exact_counts_at_symbolic_sizes() {
    let dir = tempdir();
    let spec = write(dir.path(), "mm.spec", "S_1: 32@L1, 32@L1, 32@L1\n");
    let out = polyc_ok(&["explain", "examples/matmul.tc", "--tile-spec", &spec]);
    let start = out.find("exact counts in the sizes").expect("the section");
    let section: Vec<&str> = out[start..].lines().take(10).collect();
    assert_eq!(
        section.join("\n"),
        "exact counts in the sizes (barvinok; elements; a tile's footprint is clipped at the edges, and the data a level moves is the sum over its tiles):
band #0 at L1:
  A  per tile: max over tiles piecewise in the sizes (9 pieces); over every size 1024
     moved: M·K·⌊(N + 31)/32⌋; over every size none (grows with M, K, N)
  B  per tile: max over tiles piecewise in the sizes (9 pieces); over every size 1024
     moved: K·N·⌊(M + 31)/32⌋; over every size none (grows with M, K, N)
  C  per tile: max over tiles piecewise in the sizes (9 pieces); over every size 1024
     moved: M·N·⌊(K + 31)/32⌋; over every size none (grows with M, K, N)
  all tensors, in bytes  per tile: over every size 12288 (L1 holds 49152: fits at every size)
                         moved: 4·M·K·⌊(N + 31)/32⌋ + 4·M·N·⌊(K + 31)/32⌋ + 4·K·N·⌊(M + 31)/32⌋; over every size none (grows with M, K, N)"
    );
}

#[test]
fn explain_without_barvinok_keeps_the_bound_parts() {
    let dir = tempdir();
    let spec = write(dir.path(), "mm.spec", "S_1: 32@L1, 32@L1, 32@L1\n");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_polyc"))
        .args(["explain", "examples/matmul.tc", "--tile-spec", &spec])
        .env("POLYC_BARVINOK", dir.path())
        .current_dir(root())
        .output()
        .expect("polyc starts");
    assert_code(&o, 0);
    let out = stdout(&o);
    assert!(
        out.contains(
            "  L1           32 x 32 x 32     A        32 x 32              1024       4096"
        ),
        "{out}"
    );
    assert!(
        !out.contains("exact counts in the sizes (barvinok"),
        "{out}"
    );
    let note: Vec<&str> = out.lines().filter(|l| l.starts_with("note: ")).collect();
    assert_eq!(
        note,
        vec![format!(
            "note: footprints that depend on the sizes are shown as `?`, and the exact counts in the sizes (per-tile footprints, data moved per level) are not given: symbolic counting needs the barvinok library, which is not installed: no libbarvinok*.so in {} ($POLYC_BARVINOK); {}",
            dir.path().display(),
            polyhedral::barvinok::INSTALL_HELP
        )]
    );
}
