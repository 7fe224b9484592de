//! The generator, the validator and the shrinker's candidates, without running polyc.

use polyc_fuzz::campaign::{case_for, Settings};
use polyc_fuzz::case::{Tgt, Tiles};
use polyc_fuzz::gen::{generate, Bin, DType, Expr, Ext, Idx, Op, Prog, Role, Stmt, Tensor};
use polyc_fuzz::shrink::{candidates, same_failure, tidy, Budget};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::time::Duration;

fn settings() -> Settings {
    Settings {
        seed: polyc_fuzz::CI_SEED,
        cases: 2000,
        seconds: 300.0,
        jobs: 1,
        only: None,
        out: "unused".into(),
        gpu_share: polyc_fuzz::campaign::GPU_SHARE,
        gemmini_share: polyc_fuzz::campaign::GEMMINI_SHARE,
        o3_share: polyc_fuzz::campaign::O3_SHARE,
        inject: None,
        shrink: Budget {
            attempts: 1,
            time: Duration::from_secs(1),
        },
        case_limit: Duration::from_secs(1),
        verbose: false,
    }
}

/// `C(i, j) +=! A(i, k) * B(k, j)` over f32.
fn matmul() -> Prog {
    let full = Ext::full;
    let t = |name: &str, dims: Vec<Ext>, role| Tensor {
        name: name.into(),
        dtype: DType::F32,
        dims,
        role,
    };
    let v = |fam| Idx::Var { fam, off: 0 };
    Prog {
        name: "mm".into(),
        dtype: DType::F32,
        sizes: [3, 5, 7, 1, 1],
        tensors: vec![
            t("A", vec![full(0), full(2)], Role::Input),
            t("B", vec![full(2), full(1)], Role::Input),
            t("C", vec![full(0), full(1)], Role::Output { inout: false }),
        ],
        scalars: vec![],
        stmts: vec![Stmt {
            lhs: 2,
            op: Op::Add,
            init: true,
            rhs: Expr::Bin(
                Bin::Mul,
                Box::new(Expr::Read {
                    t: 0,
                    idx: vec![v(0), v(2)],
                }),
                Box::new(Expr::Read {
                    t: 1,
                    idx: vec![v(2), v(1)],
                }),
            ),
            vars: vec![full(0), full(1), full(2)],
            explicit: false,
        }],
    }
}

#[test]
fn renders_the_program_it_holds() {
    let p = matmul();
    assert_eq!(
        p.render(),
        "def mm(f32(N, K) A, f32(K, M) B) -> (f32(N, M) C) {\n  C(i, j) +=! A(i, k) * B(k, j)\n}\n"
    );
    assert_eq!(p.params_text(), "N=3,M=5,K=7");
    assert_eq!(p.validate(), Ok(()));
}

#[test]
fn windows_and_shifts_get_the_ranges_they_need() {
    let mut p = matmul();
    // C over the valid extent of a window: C(i, j) +=! A(i + r, k) * B(k, j).
    p.sizes[3] = 2;
    let valid = Ext {
        fam: 0,
        valid: true,
    };
    p.tensors[2].dims[0] = valid;
    p.stmts[0].vars = vec![valid, Ext::full(1), Ext::full(2), Ext::full(3)];
    if let Expr::Bin(_, a, _) = &mut p.stmts[0].rhs {
        **a = Expr::Read {
            t: 0,
            idx: vec![Idx::Win { fam: 0 }, Idx::Var { fam: 2, off: 0 }],
        };
    }
    assert_eq!(p.validate(), Ok(()));
    assert!(p
        .render()
        .contains("C(i, j) +=! A(i + r, k) * B(k, j) where r in 0:R"));
    assert!(p.render().contains("f32(N - R + 1, M) C"));
    // A shifted read in an update of a whole tensor: its index starts at 1.
    p.stmts.push(Stmt {
        lhs: 2,
        op: Op::Assign,
        init: false,
        rhs: Expr::Read {
            t: 2,
            idx: vec![Idx::Var { fam: 0, off: -1 }, Idx::Var { fam: 1, off: 0 }],
        },
        vars: vec![valid, Ext::full(1)],
        explicit: false,
    });
    assert_eq!(p.validate(), Ok(()));
    assert!(p
        .render()
        .contains("C(i, j) = C(i - 1, j) where i in 1:N - R + 1"));
}

#[test]
fn the_validator_rejects_unfair_programs() {
    // A read that may leave its tensor: A(i + r, k) with i over the whole of N.
    let mut p = matmul();
    p.sizes[3] = 2;
    p.stmts[0].vars.push(Ext::full(3));
    if let Expr::Bin(_, a, _) = &mut p.stmts[0].rhs {
        **a = Expr::Read {
            t: 0,
            idx: vec![Idx::Win { fam: 0 }, Idx::Var { fam: 2, off: 0 }],
        };
    }
    assert!(p.validate().is_err());
    // A read of a tensor before anything wrote it.
    let mut p = matmul();
    p.tensors[0].role = Role::Temp;
    assert!(p.validate().unwrap_err().contains("before it is written"));
    // A shifted first write: part of a fresh tensor.
    let mut p = matmul();
    p.stmts[0].rhs = Expr::Read {
        t: 0,
        idx: vec![Idx::Var { fam: 0, off: 1 }, Idx::Var { fam: 2, off: 0 }],
    };
    assert!(p.validate().unwrap_err().contains("only part"));
    // A product reduction of unbounded factors.
    let mut p = matmul();
    p.stmts[0].op = Op::Mul;
    p.stmts[0].rhs = Expr::Lit(3.0);
    assert!(p.validate().is_err());
    // A window larger than its axis.
    let mut p = matmul();
    p.sizes[3] = 4;
    assert!(p.validate().is_err());
}

#[test]
fn every_generated_program_is_valid() {
    for seed in 0..3000u64 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let p = generate(&mut rng, "f");
        assert_eq!(p.validate(), Ok(()), "seed {seed}:\n{}", p.render());
        assert!(p.render().starts_with("def f("));
    }
}

#[test]
fn cases_cover_targets_schedulers_and_specs() {
    let s = settings();
    let cases: Vec<_> = (0..2000).map(|i| case_for(&s, i)).collect();
    let count = |f: &dyn Fn(&polyc_fuzz::case::Case) -> bool| cases.iter().filter(|c| f(c)).count();
    assert!(count(&|c| c.cfg.target == Tgt::Gpu) >= 5);
    assert!(count(&|c| c.cfg.target == Tgt::Gemmini) >= 60);
    for sched in ["isl", "initial", "ilp"] {
        assert!(count(&|c| c.cfg.scheduler == sched) >= 300, "{sched}");
    }
    assert!(count(&|c| matches!(c.cfg.tiles, Tiles::Random(_))) >= 800);
    let text = |c: &polyc_fuzz::case::Case| c.prog.render();
    for (what, pat) in [
        ("sums", "+=!"),
        ("maxima", "max=!"),
        ("minima", "min=!"),
        ("products", "*=!"),
        ("windows", " + r"),
        ("shifts", " - 1"),
        ("i8 operands", "i8("),
        ("f64", "f64("),
        ("selects", "select("),
    ] {
        assert!(count(&|c| text(c).contains(pat)) >= 20, "few {what}");
    }
    // Case i depends on the seed and i alone.
    assert_eq!(case_for(&s, 17), case_for(&s, 17));
    let mut other = settings();
    other.seed = 23;
    assert_ne!(case_for(&s, 17).prog, case_for(&other, 17).prog);
}

#[test]
fn shrink_candidates_are_valid_and_smaller() {
    let s = settings();
    for i in 0..200 {
        let c = case_for(&s, i);
        for k in candidates(&c) {
            assert_eq!(k.prog.validate(), Ok(()), "case {i}");
            assert!(k.prog.stmts.len() <= c.prog.stmts.len());
        }
    }
    // Dropping the only statement leaves no program: never a candidate.
    let one = polyc_fuzz::case::Case {
        id: "t".into(),
        prog: matmul(),
        cfg: polyc_fuzz::case::Config::plain(Tgt::Cpu),
    };
    assert!(candidates(&one).iter().all(|c| !c.prog.stmts.is_empty()));
}

#[test]
fn tidy_drops_unused_tensors_and_makes_unread_results_outputs() {
    let mut p = matmul();
    p.tensors.push(Tensor {
        name: "Z".into(),
        dtype: DType::F32,
        dims: vec![Ext::full(0)],
        role: Role::Input,
    });
    p.tensors[2].role = Role::Temp;
    let q = tidy(p);
    assert_eq!(q.tensors.len(), 3);
    assert_eq!(q.tensors[2].role, Role::Output { inout: false });
}

#[test]
fn failures_compare_by_class_and_first_line() {
    use polyc_fuzz::case::Outcome::*;
    assert!(same_failure(&Mismatch("a".into()), &Mismatch("b".into())));
    assert!(!same_failure(&Mismatch("a".into()), &Pass));
    assert!(same_failure(
        &CompileError("× /tmp/x/prog.tc:4:3: cannot infer `T2`".into()),
        &CompileError("× /tmp/y/prog.tc:2:3: cannot infer `T7`".into())
    ));
    assert!(!same_failure(
        &Panic("index out of bounds at a.rs:1".into()),
        &Panic("overflow at b.rs:2".into())
    ));
}

#[test]
fn dropping_a_statement_renumbers_the_spec() {
    let mut p = matmul();
    // S_0 `C(i, j) = 1`, then S_1/S_2 the matmul (init, update).
    let mut first = p.stmts[0].clone();
    first.op = Op::Assign;
    first.init = false;
    first.rhs = Expr::Lit(1.0);
    p.tensors[2].role = Role::Output { inout: false };
    p.tensors.push(Tensor {
        name: "D".into(),
        ..p.tensors[2].clone()
    });
    first.lhs = 3;
    p.stmts.insert(0, first);
    assert_eq!(p.validate(), Ok(()));
    let case = polyc_fuzz::case::Case {
        id: "t".into(),
        prog: p,
        cfg: polyc_fuzz::case::Config {
            tiles: Tiles::Text("S_0: 2@L1\nS_2: 4@L1, 4@L1\n".into()),
            ..polyc_fuzz::case::Config::plain(Tgt::Cpu)
        },
    };
    let dropped_first = candidates(&case)
        .into_iter()
        .find(|c| c.prog.stmts.len() == 1 && c.prog.stmts[0].init)
        .expect("a candidate without S_0");
    assert_eq!(
        dropped_first.cfg.tiles,
        Tiles::Text("S_1: 4@L1, 4@L1\n".into())
    );
}
