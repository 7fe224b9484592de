//! The polyhedral model: domains, accesses, context, the bounds check.
mod model_support;

use model_support::*;
use polyhedral::diag::render_plain;
use polyhedral::isl::ffi::model::{map_text, set_text, union_map_text, union_set_text};
use polyhedral::isl::Ctx;
use polyhedral::scop::{param_texts, Scop};

fn build(case: &Case, vals: &[Option<i64>]) -> (Ctx, Scop) {
    let ctx = Ctx::new();
    let scop = Scop::build(&ctx, &case.prog, vals, &case.src).expect("model builds");
    (ctx, scop)
}

fn build_err(case: &Case, vals: &[Option<i64>]) -> String {
    let ctx = Ctx::new();
    match Scop::build(&ctx, &case.prog, vals, &case.src) {
        Ok(_) => panic!("expected an error"),
        Err(e) => render_plain(e.as_ref()),
    }
}

#[test]
fn param_texts_bound_and_symbolic() {
    let m = matmul();
    assert_eq!(
        param_texts(&m.prog, &[Some(64), None, Some(-3)]),
        vec!["64", "K", "(-3)"]
    );
}

#[test]
fn matmul_concrete() {
    let m = matmul();
    let (_ctx, s) = build(&m, &bound(&[4, 5, 6]));
    assert_eq!(set_text(&s.context), "{  :  }");
    assert!(s.symbolic.is_empty());
    assert_eq!(
        s.stmt_domain_text(0),
        "{ S_0[i, j] : 0 <= i <= 3 and 0 <= j <= 5 }"
    );
    assert_eq!(
        s.stmt_domain_text(1),
        "{ S_1[i, j, k] : 0 <= i <= 3 and 0 <= j <= 5 and 0 <= k <= 4 }"
    );
    assert_eq!(
        union_set_text(&s.domain),
        "{ S_1[i, j, k] : 0 <= i <= 3 and 0 <= j <= 5 and 0 <= k <= 4; S_0[i, j] : 0 <= i <= 3 and 0 <= j <= 5 }"
    );
    assert_eq!(
        map_text(&s.stmt_writes[1].map),
        "{ S_1[i, j, k] -> C[i, j] : 0 <= i <= 3 and 0 <= j <= 5 and 0 <= k <= 4 }"
    );
    let reads: Vec<String> = s.stmt_reads[1].iter().map(|a| map_text(&a.map)).collect();
    assert_eq!(
        reads,
        vec![
            "{ S_1[i, j, k] -> C[i, j] : 0 <= i <= 3 and 0 <= j <= 5 and 0 <= k <= 4 }",
            "{ S_1[i, j, k] -> A[i, k] : 0 <= i <= 3 and 0 <= j <= 5 and 0 <= k <= 4 }",
            "{ S_1[i, j, k] -> B[k, j] : 0 <= i <= 3 and 0 <= j <= 5 and 0 <= k <= 4 }",
        ]
    );
    assert!(s.stmt_reads[0].is_empty(), "an init reads nothing");
    assert_eq!(
        union_map_text(&s.writes),
        "{ S_0[i, j] -> C[i, j] : 0 <= i <= 3 and 0 <= j <= 5; S_1[i, j, k] -> C[i, j] : 0 <= i <= 3 and 0 <= j <= 5 and 0 <= k <= 4 }"
    );
    assert_eq!(
        set_text(&s.tensor_extents[0]),
        "{ A[d0, d1] : 0 <= d0 <= 3 and 0 <= d1 <= 4 }"
    );
    assert!(s.notes.is_empty());
}

#[test]
fn matmul_symbolic() {
    let m = matmul();
    let (_ctx, s) = build(&m, &symbolic(3));
    assert_eq!(s.symbolic, vec!["M", "K", "N"]);
    assert_eq!(
        set_text(&s.context),
        "[M, K, N] -> {  : M > 0 and K > 0 and N > 0 }"
    );
    assert_eq!(
        union_set_text(&s.domain),
        "[M, K, N] -> { S_1[i, j, k] : 0 <= i < M and 0 <= j < N and 0 <= k < K; S_0[i, j] : 0 <= i < M and 0 <= j < N }"
    );
    assert_eq!(
        union_map_text(&s.reads),
        "[M, K, N] -> { S_1[i, j, k] -> B[k, j] : 0 <= i < M and 0 <= j < N and 0 <= k < K; S_1[i, j, k] -> A[i, k] : 0 <= i < M and 0 <= j < N and 0 <= k < K; S_1[i, j, k] -> C[i, j] : 0 <= i < M and 0 <= j < N and 0 <= k < K }"
    );
}

#[test]
fn matmul_partly_bound() {
    let m = matmul();
    let (_ctx, s) = build(&m, &[Some(16), None, Some(8)]);
    assert_eq!(s.symbolic, vec!["K"]);
    assert_eq!(set_text(&s.context), "[K] -> {  : K > 0 }");
    assert_eq!(
        s.stmt_domain_text(1),
        "[K] -> { S_1[i, j, k] : 0 <= i <= 15 and 0 <= j <= 7 and 0 <= k < K }"
    );
}

#[test]
fn conv_chain_domains() {
    let cc = conv_chain();
    let (_ctx, s) = build(&cc, &symbolic(4));
    let doms: Vec<String> = (0..5).map(|i| s.stmt_domain_text(i)).collect();
    assert_eq!(
        doms,
        vec![
            "[H, W, KH, KW] -> { S_0[h, w] : 0 <= h < H and 0 <= w < W }",
            "[H, W, KH, KW] -> { S_1[h, w] : 0 <= h <= H - KH and 0 <= w <= W - KW }",
            "[H, W, KH, KW] -> { S_2[h, w, kh, kw] : 0 <= h <= H - KH and 0 <= w <= W - KW and 0 <= kh < KH and 0 <= kw < KW }",
            "[H, W, KH, KW] -> { S_3[h, w] : 0 <= h <= H - KH and 0 <= w <= W - KW }",
            "[H, W, KH, KW] -> { S_4[h, w] : 0 <= h <= H - KH and 0 <= w <= W - KW }",
        ]
    );
    assert_eq!(
        map_text(&s.stmt_reads[2][1].map),
        "[H, W, KH, KW] -> { S_2[h, w, kh, kw] -> A[h + kh, w + kw] : 0 <= h <= H - KH and 0 <= w <= W - KW and 0 <= kh < KH and 0 <= kw < KW }"
    );
    assert_eq!(
        set_text(&s.tensor_extents[2]),
        "[H, W, KH, KW] -> { C[d0, d1] : 0 <= d0 <= H - KH and 0 <= d1 <= W - KW }"
    );
    let (_ctx, s) = build(&cc, &bound(&[64, 64, 3, 3]));
    assert_eq!(
        s.stmt_domain_text(2),
        "{ S_2[h, w, kh, kw] : 0 <= h <= 61 and 0 <= w <= 61 and 0 <= kh <= 2 and 0 <= kw <= 2 }"
    );
}

#[test]
fn jacobi_and_triangular_domains() {
    let (_ctx, s) = build(&jacobi(), &symbolic(2));
    assert_eq!(
        s.stmt_domain_text(0),
        "[T, N] -> { S_0[t, i] : 0 <= t <= -2 + T and 0 < i <= -2 + N }"
    );
    assert_eq!(
        map_text(&s.stmt_writes[0].map),
        "[T, N] -> { S_0[t, i] -> A[1 + t, i] : 0 <= t <= -2 + T and 0 < i <= -2 + N }"
    );
    let (_ctx, s) = build(&triangular(), &symbolic(1));
    assert_eq!(
        s.stmt_domain_text(1),
        "[N] -> { S_1[i, k] : 0 <= i < N and 0 <= k <= i }"
    );
    let (_ctx, s) = build(&triangular(), &bound(&[5]));
    assert_eq!(
        s.stmt_domain_text(1),
        "{ S_1[i, k] : 0 <= i <= 4 and 0 <= k <= i }"
    );
}

#[test]
fn statement_without_iterators() {
    let (_ctx, s) = build(&sum(), &bound(&[4]));
    assert_eq!(s.stmt_domain_text(0), "{ S_0[] }");
    assert_eq!(map_text(&s.stmt_writes[0].map), "{ S_0[] -> s[] }");
    assert_eq!(union_set_text(&s.domain), "{ S_1[i] : 0 <= i <= 3; S_0[] }");
}

#[test]
fn empty_domains_are_noted() {
    // H = 2 < KH = 3: the conv output is empty, so S_1..S_4 never run.
    let (_ctx, s) = build(&conv_chain(), &bound(&[2, 8, 3, 3]));
    assert_eq!(
        s.notes,
        vec![
            "S_1 never runs: its domain is empty for these sizes",
            "S_2 never runs: its domain is empty for these sizes",
            "S_3 never runs: its domain is empty for these sizes",
            "S_4 never runs: its domain is empty for these sizes",
        ]
    );
    assert_eq!(
        union_set_text(&s.domain),
        "{ S_0[h, w] : 0 <= h <= 1 and 0 <= w <= 7 }"
    );
}

#[test]
fn out_of_bounds_read_concrete() {
    assert_eq!(
        build_err(&shifted(), &bound(&[64, 64])),
        "  × shifted.tc:2:13: `A(h + 1, w)` may access outside `A` (shape H x W = 64 x 64)
   ╭─[shifted.tc:2:13]
 1 │ def shifted(f32(H, W) A) -> (f32(H, W) C) {
 2 │   C(h, w) = A(h + 1, w) where h in 0:H, w in 0:W
   ·             ─────┬─────
   ·                  ╰── out of bounds for h = 63, w = 0 (index (64, 0))
 3 │ }
   ╰────
  help: restrict the iterators with `where`, or enlarge the tensor
"
    );
}

#[test]
fn out_of_bounds_read_symbolic() {
    assert_eq!(
        build_err(&shifted(), &symbolic(2)),
        "  × shifted.tc:2:13: `A(h + 1, w)` may access outside `A` (shape H x W)
   ╭─[shifted.tc:2:13]
 1 │ def shifted(f32(H, W) A) -> (f32(H, W) C) {
 2 │   C(h, w) = A(h + 1, w) where h in 0:H, w in 0:W
   ·             ─────┬─────
   ·                  ╰── out of bounds for h = 0, w = 0 when H = 1, W = 1 (index (1, 0))
 3 │ }
   ╰────
  help: restrict the iterators with `where`, or enlarge the tensor
"
    );
}

#[test]
fn out_of_bounds_write() {
    // `t in 0:T` instead of `0:T-1`: A(t + 1, i) writes row T.
    let mut j = jacobi();
    j.prog.stmts[0].iters[0].upper = vec![p(0)];
    assert_eq!(
        build_err(&j, &bound(&[10, 20])),
        "  × jacobi.tc:2:3: `A(t + 1, i)` may access outside `A` (shape T x N = 10 x 20)
   ╭─[jacobi.tc:2:3]
 1 │ def jacobi(f32(T, N) A) -> (A) {
 2 │   A(t + 1, i) = (A(t, i - 1) + A(t, i) + A(t, i + 1)) / 3 where t in 0:T-1, i in 1:N-1
   ·   ─────┬─────
   ·        ╰── out of bounds for t = 9, i = 1 (index (10, 1))
 3 │ }
   ╰────
  help: restrict the iterators with `where`, or enlarge the tensor
"
    );
}

#[test]
fn in_bounds_for_all_sizes_is_required() {
    // The conv chain is in bounds for every H, W, KH, KW >= 1. With the output shrunk to
    // (H - KH) x (W - KW), the init writes C(H - KH, ..) at h = H - KH: out of bounds for
    // every size, and the example shows the sizes isl picked.
    let mut cc = conv_chain();
    cc.prog.tensors[2].shape = vec![sub(p(0), p(2)), sub(p(1), p(3))];
    let e = build_err(&cc, &symbolic(4));
    assert_eq!(
        e,
        "  × conv_chain.tc:3:3: `C(h, w)` may access outside `C` (shape (H - KH) x (W - KW))
   ╭─[conv_chain.tc:3:3]
 2 │   A(h, w) = A(h, w) + bias
 3 │   C(h, w) +=! A(h + kh, w + kw) * B(kh, kw)
   ·   ───┬───
   ·      ╰── out of bounds for h = 0, w = 0 when H = 1, W = 1, KH = 1, KW = 1 (index (0, 0))
 4 │   C(h, w) = abs(C(h, w))
   ╰────
  help: restrict the iterators with `where`, or enlarge the tensor
"
    );
}

#[test]
fn reserved_names_are_rejected() {
    let mut m = matmul();
    m.prog.params[1].name = "Max".into();
    let e = build_err(&m, &symbolic(3));
    assert!(
        e.starts_with("  × matmul.tc:1:19: the size name `Max` is reserved by isl\n"),
        "{e}"
    );
    assert!(e.contains("help: rename it; polyc cannot use these names (in any case): exists, and, or, implies, not,"), "{e}");
}

#[test]
fn wrong_number_of_sizes_is_an_error() {
    let m = matmul();
    let ctx = Ctx::new();
    let e = Scop::build(&ctx, &m.prog, &[None], &m.src)
        .err()
        .expect("error");
    assert_eq!(
        e.to_string(),
        "internal error: 1 size values given for the 3 sizes of `matmul`"
    );
}
