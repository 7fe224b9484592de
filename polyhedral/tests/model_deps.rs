//! Dependences and the legality check of schedules.
mod model_support;

use model_support::*;
use polyhedral::deps::{check_schedule, DepKind, Deps, Violation};
use polyhedral::isl::isl_rs::Schedule;
use polyhedral::isl::Ctx;
use polyhedral::sched::{initial_schedule, isl_schedule, IslSchedOptions};
use polyhedral::scop::Scop;

fn model(case: &Case, vals: &[Option<i64>]) -> (Ctx, Scop, Deps) {
    let ctx = Ctx::new();
    let scop = Scop::build(&ctx, &case.prog, vals, &case.src).expect("model builds");
    let deps = Deps::compute(&scop).expect("dependences");
    (ctx, scop, deps)
}

fn texts(d: &Deps) -> [String; 3] {
    [
        d.text(DepKind::Raw),
        d.text(DepKind::War),
        d.text(DepKind::Waw),
    ]
}

fn read_schedule(ctx: &Ctx, yaml: &str) -> Schedule {
    Schedule::read_from_str(&ctx.isl, yaml).expect("schedule parses")
}

fn violation(deps: &Deps, s: &Schedule) -> Violation {
    check_schedule(deps, s)
        .expect("check runs")
        .expect_err("schedule must be rejected")
}

#[test]
fn matmul_concrete_deps() {
    let (_c, _s, d) = model(&matmul(), &bound(&[4, 5, 6]));
    assert_eq!(
        texts(&d),
        [
            "{ S_1[i, j, k] -> S_1[i' = i, j' = j, k' = 1 + k] : 0 <= i <= 3 and 0 <= j <= 5 and 0 <= k <= 3; S_0[i, j] -> S_1[i' = i, j' = j, k = 0] : 0 <= i <= 3 and 0 <= j <= 5 }".to_string(),
            "{ S_1[i, j, k] -> S_1[i' = i, j' = j, k'] : 0 <= i <= 3 and 0 <= j <= 5 and k >= 0 and k < k' <= 4 }".to_string(),
            "{ S_1[i, j, k] -> S_1[i' = i, j' = j, k' = 1 + k] : 0 <= i <= 3 and 0 <= j <= 5 and 0 <= k <= 3; S_0[i, j] -> S_1[i' = i, j' = j, k = 0] : 0 <= i <= 3 and 0 <= j <= 5 }".to_string(),
        ]
    );
    // Per statement pair.
    assert_eq!(
        d.between_text(DepKind::Raw, 0, 1).unwrap(),
        "{ S_0[i, j] -> S_1[i' = i, j' = j, k = 0] : 0 <= i <= 3 and 0 <= j <= 5 }"
    );
    assert_eq!(
        d.between_text(DepKind::Raw, 1, 0).unwrap(),
        "{ S_1[i, j, k] -> S_0[i', j'] : false }"
    );
}

#[test]
fn matmul_symbolic_deps() {
    let (_c, _s, d) = model(&matmul(), &symbolic(3));
    assert_eq!(
        texts(&d),
        [
            "[M, K, N] -> { S_1[i, j, k] -> S_1[i' = i, j' = j, k' = 1 + k] : M > 0 and K > 0 and N > 0 and 0 <= i < M and 0 <= j < N and 0 <= k <= -2 + K; S_0[i, j] -> S_1[i' = i, j' = j, k = 0] : M > 0 and K > 0 and N > 0 and 0 <= i < M and 0 <= j < N }".to_string(),
            "[M, K, N] -> { S_1[i, j, k] -> S_1[i' = i, j' = j, k'] : M > 0 and K > 0 and N > 0 and 0 <= i < M and 0 <= j < N and k >= 0 and k < k' < K }".to_string(),
            "[M, K, N] -> { S_1[i, j, k] -> S_1[i' = i, j' = j, k' = 1 + k] : M > 0 and K > 0 and N > 0 and 0 <= i < M and 0 <= j < N and 0 <= k <= -2 + K; S_0[i, j] -> S_1[i' = i, j' = j, k = 0] : M > 0 and K > 0 and N > 0 and 0 <= i < M and 0 <= j < N }".to_string(),
        ]
    );
}

#[test]
fn conv_chain_deps_concrete() {
    let (_c, _s, d) = model(&conv_chain(), &bound(&[8, 8, 3, 3]));
    let t = |k, a, b| d.between_text(k, a, b).unwrap();
    // S_0 (bias add in place) feeds the conv update through a 3x3 window.
    assert_eq!(
        t(DepKind::Raw, 0, 2),
        "{ S_0[h, w] -> S_2[h', w', kh = h - h', kw = w - w'] : h' >= -2 + h and 0 <= h' <= 5 and h' <= h and w' >= -2 + w and 0 <= w' <= 5 and w' <= w }"
    );
    assert_eq!(
        t(DepKind::Raw, 1, 2),
        "{ S_1[h, w] -> S_2[h' = h, w' = w, kh = 0, kw = 0] : 0 <= h <= 5 and 0 <= w <= 5 }"
    );
    assert_eq!(
        t(DepKind::Raw, 2, 2),
        "{ S_2[h, w, kh, kw] -> S_2[h' = h, w' = w, kh' = kh, kw' = 1 + kw] : 0 <= h <= 5 and 0 <= w <= 5 and 0 <= kh <= 2 and 0 <= kw <= 1; S_2[h, w, kh, kw = 2] -> S_2[h' = h, w' = w, kh' = 1 + kh, kw' = 0] : 0 <= h <= 5 and 0 <= w <= 5 and 0 <= kh <= 1 }"
    );
    assert_eq!(
        t(DepKind::Raw, 2, 3),
        "{ S_2[h, w, kh = 2, kw = 2] -> S_3[h' = h, w' = w] : 0 <= h <= 5 and 0 <= w <= 5 }"
    );
    assert_eq!(
        t(DepKind::Raw, 3, 4),
        "{ S_3[h, w] -> S_4[h' = h, w' = w] : 0 <= h <= 5 and 0 <= w <= 5 }"
    );
    // No S_1 -> S_3 flow: S_2 overwrites every element first (value-based).
    assert_eq!(
        t(DepKind::Raw, 1, 3),
        "{ S_1[h, w] -> S_3[h', w'] : false }"
    );
    // Memory-based WAR: every read of C(h, w) by S_2 precedes S_3's write.
    assert_eq!(
        t(DepKind::War, 2, 3),
        "{ S_2[h, w, kh, kw] -> S_3[h' = h, w' = w] : 0 <= h <= 5 and 0 <= w <= 5 and 0 <= kh <= 2 and 0 <= kw <= 2 }"
    );
    assert_eq!(
        t(DepKind::War, 2, 4),
        "{ S_2[h, w, kh, kw] -> S_4[h' = h, w' = w] : 0 <= h <= 5 and 0 <= w <= 5 and 0 <= kh <= 2 and 0 <= kw <= 2 }"
    );
    // S_0 reads A(h, w) then writes it in the same instance: no WAR between instances.
    assert_eq!(
        t(DepKind::War, 0, 0),
        "{ S_0[h, w] -> S_0[h', w'] : false }"
    );
    // WAW: the chain of writes to C.
    assert_eq!(
        t(DepKind::Waw, 1, 2),
        "{ S_1[h, w] -> S_2[h' = h, w' = w, kh = 0, kw = 0] : 0 <= h <= 5 and 0 <= w <= 5 }"
    );
    assert_eq!(
        t(DepKind::Waw, 1, 3),
        "{ S_1[h, w] -> S_3[h', w'] : false }"
    );
    assert_eq!(
        t(DepKind::Waw, 2, 3),
        "{ S_2[h, w, kh = 2, kw = 2] -> S_3[h' = h, w' = w] : 0 <= h <= 5 and 0 <= w <= 5 }"
    );
    assert_eq!(
        t(DepKind::Waw, 3, 4),
        "{ S_3[h, w] -> S_4[h' = h, w' = w] : 0 <= h <= 5 and 0 <= w <= 5 }"
    );
}

#[test]
fn conv_chain_deps_symbolic() {
    let (_c, _s, d) = model(&conv_chain(), &symbolic(4));
    assert_eq!(
        d.between_text(DepKind::Raw, 0, 2).unwrap(),
        "[H, W, KH, KW] -> { S_0[h, w] -> S_2[h', w', kh = h - h', kw = w - w'] : H > 0 and W > 0 and KH > 0 and KW > 0 and h' >= 0 and -KH + h < h' <= h and h' <= H - KH and w' >= 0 and -KW + w < w' <= w and w' <= W - KW }"
    );
    assert_eq!(
        d.between_text(DepKind::Raw, 2, 3).unwrap(),
        "[H, W, KH, KW] -> { S_2[h, w, kh = -1 + KH, kw = -1 + KW] -> S_3[h' = h, w' = w] : H > 0 and W > 0 and KH > 0 and KW > 0 and 0 <= h <= H - KH and 0 <= w <= W - KW }"
    );
}

#[test]
fn jacobi_and_triangular_deps() {
    let (_c, _s, d) = model(&jacobi(), &symbolic(2));
    assert_eq!(
        texts(&d),
        [
            // Three uniform dependences, not coalesced into one polyhedron: coalescing
            // adds constraints to the piece (see `coalesce_simply` in polyhedral's deps).
            "[T, N] -> { S_0[t, i] -> S_0[t' = 1 + t, i' = 1 + i] : T > 0 and N > 0 and 0 <= t <= -3 + T and 0 < i <= -3 + N; S_0[t, i] -> S_0[t' = 1 + t, i' = i] : T > 0 and N > 0 and 0 <= t <= -3 + T and 0 < i <= -2 + N; S_0[t, i] -> S_0[t' = 1 + t, i' = -1 + i] : T > 0 and N > 0 and 0 <= t <= -3 + T and 2 <= i <= -2 + N }".to_string(),
            "[T, N] -> {  }".to_string(),
            "[T, N] -> {  }".to_string(),
        ]
    );
    let (_c, _s, d) = model(&triangular(), &bound(&[5]));
    assert_eq!(
        texts(&d),
        [
            "{ S_0[i] -> S_1[i' = i, k = 0] : 0 <= i <= 4; S_1[i, k] -> S_1[i' = i, k' = 1 + k] : i <= 4 and 0 <= k < i }".to_string(),
            "{ S_1[i, k] -> S_1[i' = i, k'] : i <= 4 and k >= 0 and k < k' <= i }".to_string(),
            "{ S_0[i] -> S_1[i' = i, k = 0] : 0 <= i <= 4; S_1[i, k] -> S_1[i' = i, k' = 1 + k] : i <= 4 and 0 <= k < i }".to_string(),
        ]
    );
}

#[test]
fn initial_and_isl_schedules_are_legal() {
    let cases: Vec<(&str, Case, Vec<Option<i64>>)> = vec![
        ("matmul", matmul(), bound(&[4, 5, 6])),
        ("matmul", matmul(), symbolic(3)),
        ("conv", conv_chain(), bound(&[8, 8, 3, 3])),
        ("conv", conv_chain(), symbolic(4)),
        ("conv-empty", conv_chain(), bound(&[2, 8, 3, 3])),
        ("jacobi", jacobi(), bound(&[10, 20])),
        ("jacobi", jacobi(), symbolic(2)),
        ("trmv", triangular(), bound(&[5])),
        ("trmv", triangular(), symbolic(1)),
        ("chain", chain(), symbolic(1)),
        ("sum", sum(), bound(&[4])),
    ];
    for (name, case, vals) in cases {
        let (ctx, scop, deps) = model(&case, &vals);
        let init = initial_schedule(&scop, &deps).unwrap();
        assert_eq!(
            check_schedule(&deps, &init).unwrap(),
            Ok(()),
            "{name} {vals:?} initial"
        );
        let isl = isl_schedule(&ctx, &scop, &deps, &IslSchedOptions::default()).unwrap();
        assert_eq!(
            check_schedule(&deps, &isl).unwrap(),
            Ok(()),
            "{name} {vals:?} isl"
        );
    }
}

#[test]
fn reversed_reduction_violates_raw() {
    let (ctx, _s, d) = model(&matmul(), &bound(&[4, 5, 6]));
    let s = read_schedule(
        &ctx,
        r#"domain: "{ S_1[i, j, k] : 0 <= i <= 3 and 0 <= j <= 5 and 0 <= k <= 4; S_0[i, j] : 0 <= i <= 3 and 0 <= j <= 5 }"
child:
  sequence:
  - filter: "{ S_0[i, j] }"
    child:
      schedule: "[{ S_0[i, j] -> [(i)] }, { S_0[i, j] -> [(j)] }]"
  - filter: "{ S_1[i, j, k] }"
    child:
      schedule: "[{ S_1[i, j, k] -> [(i)] }, { S_1[i, j, k] -> [(j)] }, { S_1[i, j, k] -> [(-k)] }]"
"#,
    );
    let v = violation(&d, &s);
    assert_eq!(v.kind, DepKind::Raw);
    assert_eq!((v.source.as_str(), v.target.as_str()), ("S_1", "S_1"));
    assert_eq!(
        v.to_string(),
        "the schedule violates a RAW dependence S_1 -> S_1: S_1 reads a value written by S_1, but is not scheduled after it
  example: S_1[0, 0, 0] -> S_1[0, 0, 1]
  violated pairs: { S_1[i, j, k] -> S_1[i' = i, j' = j, k' = 1 + k] : 0 <= i <= 3 and 0 <= j <= 5 and 0 <= k <= 3 }"
    );
}

#[test]
fn consumer_before_producer_violates_raw() {
    let (ctx, _s, d) = model(&chain(), &symbolic(1));
    let s = read_schedule(
        &ctx,
        r#"domain: "[N] -> { S_0[i] : 0 <= i < N; S_1[i] : 0 <= i < N }"
child:
  sequence:
  - filter: "[N] -> { S_1[i] }"
    child:
      schedule: "[N] -> [{ S_1[i] -> [(i)] }]"
  - filter: "[N] -> { S_0[i] }"
    child:
      schedule: "[N] -> [{ S_0[i] -> [(i)] }]"
"#,
    );
    assert_eq!(
        violation(&d, &s).to_string(),
        "the schedule violates a RAW dependence S_0 -> S_1: S_1 reads a value written by S_0, but is not scheduled after it
  example: S_0[0] -> S_1[0] for N = 1
  violated pairs: [N] -> { S_0[i] -> S_1[i' = i] : N > 0 and 0 <= i < N }"
    );
    // Fused with the consumer first inside each iteration: still S_0 -> S_1.
    let s = read_schedule(
        &ctx,
        r#"domain: "[N] -> { S_0[i] : 0 <= i < N; S_1[i] : 0 <= i < N }"
child:
  schedule: "[N] -> [{ S_0[i] -> [(i)]; S_1[i] -> [(i)] }]"
  child:
    sequence:
    - filter: "[N] -> { S_1[i] }"
    - filter: "[N] -> { S_0[i] }"
"#,
    );
    let v = violation(&d, &s);
    assert_eq!(
        (v.kind, v.source.as_str(), v.target.as_str()),
        (DepKind::Raw, "S_0", "S_1")
    );
    // Fused with a shift by one: legal.
    let s = read_schedule(
        &ctx,
        r#"domain: "[N] -> { S_0[i] : 0 <= i < N; S_1[i] : 0 <= i < N }"
child:
  schedule: "[N] -> [{ S_0[i] -> [(i)]; S_1[i] -> [(i + 1)] }]"
"#,
    );
    assert_eq!(check_schedule(&d, &s).unwrap(), Ok(()));
}

#[test]
fn jacobi_interchange_is_illegal() {
    let (ctx, _s, d) = model(&jacobi(), &bound(&[10, 20]));
    let s = read_schedule(
        &ctx,
        r#"domain: "{ S_0[t, i] : 0 <= t <= 8 and 0 < i <= 18 }"
child:
  schedule: "[{ S_0[t, i] -> [(i)] }, { S_0[t, i] -> [(t)] }]"
"#,
    );
    assert_eq!(
        violation(&d, &s).to_string(),
        "the schedule violates a RAW dependence S_0 -> S_0: S_0 reads a value written by S_0, but is not scheduled after it
  example: S_0[0, 2] -> S_0[1, 1]
  violated pairs: { S_0[t, i] -> S_0[t' = 1 + t, i' = -1 + i] : 0 <= t <= 7 and 2 <= i <= 18 }"
    );
    // Skewed (t, t + i) is legal.
    let s = read_schedule(
        &ctx,
        r#"domain: "{ S_0[t, i] : 0 <= t <= 8 and 0 < i <= 18 }"
child:
  schedule: "[{ S_0[t, i] -> [(t + i)] }, { S_0[t, i] -> [(t)] }]"
"#,
    );
    assert_eq!(check_schedule(&d, &s).unwrap(), Ok(()));
}

const CONV_DOMAIN: &str = "{ S_0[h, w] : 0 <= h <= 7 and 0 <= w <= 7; S_1[h, w] : 0 <= h <= 5 and 0 <= w <= 5; S_2[h, w, kh, kw] : 0 <= h <= 5 and 0 <= w <= 5 and 0 <= kh <= 2 and 0 <= kw <= 2; S_3[h, w] : 0 <= h <= 5 and 0 <= w <= 5; S_4[h, w] : 0 <= h <= 5 and 0 <= w <= 5 }";

/// A sequence of the conv chain's statements in `order`, each with its identity band.
fn conv_sequence(order: &[usize]) -> String {
    let iters = ["h, w", "h, w", "h, w, kh, kw", "h, w", "h, w"];
    let mut y = format!("domain: \"{CONV_DOMAIN}\"\nchild:\n  sequence:\n");
    for &i in order {
        let it = iters[i];
        let members: Vec<String> = it
            .split(", ")
            .map(|v| format!("{{ S_{i}[{it}] -> [({v})] }}"))
            .collect();
        y.push_str(&format!(
            "  - filter: \"{{ S_{i}[{it}] }}\"\n    child:\n      schedule: \"[{}]\"\n",
            members.join(", ")
        ));
    }
    y
}

#[test]
fn conv_chain_violations() {
    let (ctx, _s, d) = model(&conv_chain(), &bound(&[8, 8, 3, 3]));
    // The reference order written by hand is legal.
    let s = read_schedule(&ctx, &conv_sequence(&[0, 1, 2, 3, 4]));
    assert_eq!(check_schedule(&d, &s).unwrap(), Ok(()));
    // abs (S_3) before the conv update (S_2).
    let s = read_schedule(&ctx, &conv_sequence(&[0, 1, 3, 2, 4]));
    let v = violation(&d, &s);
    assert_eq!(
        (v.kind, v.source.as_str(), v.target.as_str()),
        (DepKind::Raw, "S_2", "S_3")
    );
    assert_eq!(v.example.as_deref(), Some("S_2[0, 0, 2, 2] -> S_3[0, 0]"));
    // The bias add (S_0) after the conv update.
    let s = read_schedule(&ctx, &conv_sequence(&[1, 2, 0, 3, 4]));
    let v = violation(&d, &s);
    assert_eq!(
        (v.kind, v.source.as_str(), v.target.as_str()),
        (DepKind::Raw, "S_0", "S_2")
    );
    assert_eq!(v.example.as_deref(), Some("S_0[0, 0] -> S_2[0, 0, 0, 0]"));
    // Filters without bands run all instances of a statement at the same time, which
    // breaks the reduction's own chain first.
    let s = read_schedule(
        &ctx,
        &format!(
            "domain: \"{CONV_DOMAIN}\"\nchild:\n  sequence:\n{}",
            (0..5)
                .map(|i| format!(
                    "  - filter: \"{{ S_{i}[{}] }}\"\n",
                    ["h, w", "h, w", "h, w, kh, kw", "h, w", "h, w"][i]
                ))
                .collect::<String>()
        ),
    );
    let v = violation(&d, &s);
    assert_eq!(
        (v.kind, v.source.as_str(), v.target.as_str()),
        (DepKind::Raw, "S_2", "S_2")
    );
}

#[test]
fn war_and_waw_violations() {
    // S_0 reads A(i), S_1 overwrites it: only a WAR dependence.
    let mut c = chain();
    c.prog.stmts[1].lhs = 0;
    c.prog.stmts[1].body = polyhedral::ir::StmtBody::Update(
        polyhedral::ir::AssignOp::Assign,
        polyhedral::ir::Expr::Lit(1.0),
    );
    let (ctx, _s, d) = model(&c, &bound(&[4]));
    assert_eq!(texts(&d)[0], "{  }");
    assert_eq!(texts(&d)[1], "{ S_0[i] -> S_1[i' = i] : 0 <= i <= 3 }");
    let swapped = r#"domain: "{ S_0[i] : 0 <= i <= 3; S_1[i] : 0 <= i <= 3 }"
child:
  sequence:
  - filter: "{ S_1[i] }"
    child:
      schedule: "[{ S_1[i] -> [(i)] }]"
  - filter: "{ S_0[i] }"
    child:
      schedule: "[{ S_0[i] -> [(i)] }]"
"#;
    assert_eq!(
        violation(&d, &read_schedule(&ctx, swapped)).to_string(),
        "the schedule violates a WAR dependence S_0 -> S_1: S_1 overwrites an element read by S_0, but is not scheduled after it
  example: S_0[0] -> S_1[0]
  violated pairs: { S_0[i] -> S_1[i' = i] : 0 <= i <= 3 }"
    );
    // S_0 and S_1 both write C(i) (S_1 without reading): only a WAW dependence.
    let mut c = chain();
    c.prog.stmts[0].lhs = 2;
    c.prog.stmts[1].body = polyhedral::ir::StmtBody::Update(
        polyhedral::ir::AssignOp::Assign,
        polyhedral::ir::Expr::Lit(1.0),
    );
    let (ctx, _s, d) = model(&c, &bound(&[4]));
    assert_eq!(
        texts(&d),
        [
            "{  }".to_string(),
            "{  }".to_string(),
            "{ S_0[i] -> S_1[i' = i] : 0 <= i <= 3 }".to_string()
        ]
    );
    assert_eq!(
        violation(&d, &read_schedule(&ctx, swapped)).to_string(),
        "the schedule violates a WAW dependence S_0 -> S_1: S_1 overwrites an element written by S_0, but is not scheduled after it
  example: S_0[0] -> S_1[0]
  violated pairs: { S_0[i] -> S_1[i' = i] : 0 <= i <= 3 }"
    );
}

#[test]
fn unscheduled_instances_are_an_error() {
    let (ctx, _s, d) = model(&chain(), &bound(&[4]));
    let s = read_schedule(
        &ctx,
        r#"domain: "{ S_0[i] : 0 <= i <= 3; S_1[i] : 0 <= i <= 2 }"
child:
  schedule: "[{ S_0[i] -> [(i)]; S_1[i] -> [(i + 1)] }]"
"#,
    );
    let e = check_schedule(&d, &s).unwrap_err();
    assert_eq!(
        e.to_string(),
        "the schedule leaves instances of S_1 unscheduled"
    );
}
