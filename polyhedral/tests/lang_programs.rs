//! Valid `.tc` programs through the front end: exact IR for the conv chain, and golden
//! dumps for programs that use every grammar feature.

use polyhedral::diag::{render_plain, SourceFile};
use polyhedral::ir::{
    AssignOp, BinOp, DType, Expr, InputRef, Program, RangeSource, Stmt, StmtBody, TensorRole,
};
use polyhedral::lang::{compile, def_names};

fn ok(text: &str) -> Program {
    let src = SourceFile::new("test.tc", text);
    match compile(&src, None) {
        Ok(p) => p,
        Err(e) => panic!("{}", render_plain(e.as_ref())),
    }
}

fn ranges(p: &Program, s: &Stmt) -> String {
    let names = s.iter_names();
    let params = p.param_names();
    s.iters
        .iter()
        .map(|it| {
            let show = |v: &[polyhedral::ir::Aff]| {
                v.iter()
                    .map(|a| a.to_isl(&names, &params))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let src = match it.source {
                RangeSource::Where => "where",
                RangeSource::Inferred => "inferred",
            };
            format!(
                "{} in [{}]:[{}] ({src})",
                it.name,
                show(&it.lower),
                show(&it.upper)
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn show_expr(p: &Program, s: &Stmt, e: &Expr) -> String {
    let names = s.iter_names();
    let params = p.param_names();
    let r = |e: &Expr| show_expr(p, s, e);
    match e {
        Expr::Lit(v) => format!("{v}"),
        Expr::Scalar(k) => format!("${}", p.scalars[*k].name),
        Expr::IterValue(k) => format!("iter({})", names[*k]),
        Expr::SizeValue(k) => format!("size({})", params[*k]),
        Expr::Read { tensor, index, .. } => format!(
            "{}[{}]",
            p.tensors[*tensor].name,
            index
                .iter()
                .map(|a| a.to_isl(&names, &params))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Expr::Neg(a) => format!("-({})", r(a)),
        Expr::Bin(op, a, b) => format!("({} {:?} {})", r(a), op, r(b)),
        Expr::Cmp(op, a, b) => format!("({} {:?} {})", r(a), op, r(b)),
        Expr::Call(f, args) => format!(
            "{}({})",
            f.name(),
            args.iter().map(r).collect::<Vec<_>>().join(", ")
        ),
        Expr::Select(c, a, b) => format!("select({}, {}, {})", r(c), r(a), r(b)),
        Expr::Cast(t, a) => format!("cast<{t}>({})", r(a)),
    }
}

/// A readable dump of a whole program.
fn dump(p: &Program) -> String {
    let params = p.param_names();
    let mut out = format!("def {} sizes [{}]\n", p.name, params.join(", "));
    for (i, t) in p.tensors.iter().enumerate() {
        out += &format!(
            "  tensor {i} {:?} {} {}({})\n",
            t.role,
            t.name,
            t.dtype,
            t.shape
                .iter()
                .map(|a| a.to_isl(&[], &params))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    for s in &p.scalars {
        out += &format!("  scalar {} {}\n", s.name, s.dtype);
    }
    out += &format!("  inputs {:?} outputs {:?}\n", p.inputs, p.outputs);
    for s in &p.stmts {
        let names = s.iter_names();
        let lhs = format!(
            "{}[{}]",
            p.tensors[s.lhs].name,
            s.lhs_index
                .iter()
                .map(|a| a.to_isl(&names, &params))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let body = match &s.body {
            StmtBody::Init(op) => format!("init {}", op.symbol()),
            StmtBody::Update(op, e) => format!("{} {}", op.symbol(), show_expr(p, s, e)),
        };
        out += &format!(
            "  {} ({}, lhs iters {}): {lhs} {body}\n      {}\n",
            s.name,
            s.dtype,
            s.n_lhs_iters,
            ranges(p, s)
        );
    }
    out
}

const CONV_CHAIN: &str = "\
# bias add in place, 2-D convolution, abs, relu
def conv_chain(f32(H, W) A, f32(KH, KW) B, f32 bias) -> (f32(H - KH + 1, W - KW + 1) C) {
  A(h, w) = A(h, w) + bias                    # S_0
  C(h, w) +=! A(h + kh, w + kw) * B(kh, kw)   # S_1 init, S_2 update
  C(h, w) = abs(C(h, w))                      # S_3
  C(h, w) = relu(C(h, w))                     # S_4
}
";

#[test]
fn conv_chain_exact_ir() {
    let p = ok(CONV_CHAIN);
    assert_eq!(p.name, "conv_chain");
    assert_eq!(p.param_names(), vec!["H", "W", "KH", "KW"]);
    let params = p.param_names();
    let names: Vec<_> = p
        .tensors
        .iter()
        .map(|t| (t.name.as_str(), t.role))
        .collect();
    assert_eq!(
        names,
        vec![
            ("A", TensorRole::Input),
            ("B", TensorRole::Input),
            ("C", TensorRole::Output)
        ]
    );
    let shape = |i: usize| {
        p.tensors[i]
            .shape
            .iter()
            .map(|a| a.to_isl(&[], &params))
            .collect::<Vec<_>>()
    };
    assert_eq!(shape(0), vec!["H", "W"]);
    assert_eq!(shape(1), vec!["KH", "KW"]);
    assert_eq!(shape(2), vec!["((H - KH) + 1)", "((W - KW) + 1)"]);
    assert!(p.tensors.iter().all(|t| t.dtype == DType::F32));
    assert_eq!(p.scalars.len(), 1);
    assert_eq!(p.scalars[0].name, "bias");
    assert_eq!(
        p.inputs,
        vec![
            InputRef::Tensor(0),
            InputRef::Tensor(1),
            InputRef::Scalar(0)
        ]
    );
    assert_eq!(p.outputs, vec![2]);

    let names: Vec<_> = p.stmts.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, vec!["S_0", "S_1", "S_2", "S_3", "S_4"]);
    let lhs: Vec<_> = p.stmts.iter().map(|s| s.lhs).collect();
    assert_eq!(lhs, vec![0, 2, 2, 2, 2]);

    let s0 = &p.stmts[0];
    assert_eq!(s0.iter_names(), vec!["h", "w"]);
    assert_eq!(s0.n_lhs_iters, 2);
    assert_eq!(
        ranges(&p, s0),
        "h in [0]:[H] (inferred); w in [0]:[W] (inferred)"
    );
    match &s0.body {
        StmtBody::Update(AssignOp::Assign, Expr::Bin(BinOp::Add, a, b)) => {
            assert!(matches!(**a, Expr::Read { tensor: 0, .. }));
            assert_eq!(**b, Expr::Scalar(0));
        }
        other => panic!("{other:?}"),
    }

    let s1 = &p.stmts[1];
    assert_eq!(s1.body, StmtBody::Init(AssignOp::Add));
    assert_eq!(s1.iter_names(), vec!["h", "w"]);
    assert_eq!(s1.n_lhs_iters, 2);
    assert_eq!(
        ranges(&p, s1),
        "h in [0]:[((H - KH) + 1)] (inferred); w in [0]:[((W - KW) + 1)] (inferred)"
    );

    let s2 = &p.stmts[2];
    assert_eq!(s2.iter_names(), vec!["h", "w", "kh", "kw"]);
    assert_eq!(s2.n_lhs_iters, 2);
    // h, w bounded by C directly (pass 1); kh, kw by B; A is not needed.
    assert_eq!(
        ranges(&p, s2),
        "h in [0]:[((H - KH) + 1)] (inferred); w in [0]:[((W - KW) + 1)] (inferred); \
         kh in [0]:[KH] (inferred); kw in [0]:[KW] (inferred)"
    );
    assert_eq!(
        show_expr(
            &p,
            s2,
            match &s2.body {
                StmtBody::Update(AssignOp::Add, e) => e,
                other => panic!("{other:?}"),
            }
        ),
        "(A[(h + kh), (w + kw)] Mul B[kh, kw])"
    );
    let reads: Vec<_> = s2.reads().iter().map(|r| r.0).collect();
    assert_eq!(reads, vec![2, 0, 1]);

    for s in &p.stmts[3..] {
        assert_eq!(s.iter_names(), vec!["h", "w"]);
        assert!(matches!(s.body, StmtBody::Update(AssignOp::Assign, _)));
        assert_eq!(s.dtype, DType::F32);
    }
    // Spans point at the source text.
    let text = CONV_CHAIN;
    let at = |sp: polyhedral::ir::Span| &text[sp.start..sp.end];
    assert_eq!(at(s2.span), "C(h, w) +=! A(h + kh, w + kw) * B(kh, kw)");
    assert_eq!(at(s2.lhs_span), "C(h, w)");
    assert_eq!(at(s2.iters[2].span), "kh");
    assert_eq!(at(p.tensors[2].span), "C");
    assert_eq!(at(p.params[2].span), "KH");
}

#[test]
fn conv_with_inferred_output_uses_pass_two() {
    let p = ok("def conv(f32(H, W) A, f32(KH, KW) B) -> (C) {\n  \
                C(h, w) +=! A(h + kh, w + kw) * B(kh, kw)\n}\n");
    let params = p.param_names();
    assert_eq!(p.tensors[2].role, TensorRole::Output);
    assert_eq!(p.tensors[2].dtype, DType::F32);
    let shape: Vec<_> = p.tensors[2]
        .shape
        .iter()
        .map(|a| a.to_isl(&[], &params))
        .collect();
    assert_eq!(shape, vec!["((H - KH) + 1)", "((W - KW) + 1)"]);
    assert_eq!(
        ranges(&p, &p.stmts[1]),
        "h in [0]:[((H - KH) + 1)] (inferred); w in [0]:[((W - KW) + 1)] (inferred); \
         kh in [0]:[KH] (inferred); kw in [0]:[KW] (inferred)"
    );
}

#[test]
fn entry_selects_a_def() {
    let text = "def a(f32(N) X) -> (f32(N) Y) { Y(i) = X(i) }\n\
                def b(f32(N) X) -> (f32(N) Y) { Y(i) = -X(i) }\n";
    let src = SourceFile::new("two.tc", text);
    assert_eq!(def_names(&src).unwrap(), vec!["a", "b"]);
    let p = compile(&src, Some("b")).unwrap();
    assert_eq!(p.name, "b");
    assert!(compile(&src, None).is_err());
    assert!(compile(&src, Some("c")).is_err());
}

#[test]
fn several_where_ranges_of_one_index_intersect() {
    // A padded 1-D convolution: the filter taps that stay inside X.
    let p = ok("def pad(f32(H) X, f32(K) F) -> (f32(H) Y) {\n  Y(h) +=! X(h + k - 1) * F(k) where k in 0:K, k in 1 - h : H + 1 - h\n}\n");
    assert_eq!(
        ranges(&p, &p.stmts[1]),
        "h in [0]:[H] (inferred); k in [0, ((-h) + 1)]:[K, (((-h) + H) + 1)] (where)"
    );
}

#[test]
fn sat_i8_saturates_an_int32_right_side_into_int8() {
    use polyhedral::data::{Buffer, TensorData};
    // The right side is computed in i32 (X is not narrowed first), then clamped.
    let p = ok("def q(i32(N) X) -> (i8(N) Q, i8(N) R) {\n  Q(i) = sat_i8(X(i))\n  R(i) = sat_i8(relu(X(i) * 2))\n}\n");
    assert_eq!(p.stmts[0].dtype, DType::I32);
    let x = vec![-100000, -129, -128, -1, 0, 63, 64, 127, 128, 300, i32::MAX];
    let n = x.len();
    let mut ts = vec![
        TensorData {
            shape: vec![n],
            buf: Buffer::I32(x),
        },
        TensorData::poisoned(DType::I8, vec![n]),
        TensorData::poisoned(DType::I8, vec![n]),
    ];
    polyhedral::interp::interpret(&p, &[n as i64], &mut ts, &[]).expect("runs");
    assert_eq!(
        ts[1].buf,
        Buffer::I8(vec![-128, -128, -128, -1, 0, 63, 64, 127, 127, 127, 127])
    );
    // i32::MAX * 2 wraps to -2 in i32, whose ReLU is 0.
    assert_eq!(
        ts[2].buf,
        Buffer::I8(vec![0, 0, 0, 0, 0, 126, 127, 127, 127, 127, 0])
    );
}

/// Every operator, non-rectangular ranges, floordiv/% indices, every type, casts,
/// select, scalars, several outputs, inferred outputs, temporaries, sizes as values,
/// widening inputs.
const FEATURES: &[(&str, &str)] = &[
    (
        "ops",
        "def ops(f32(N, K) A) -> (f32(N) S, f32(N) P, f32(N) MX, f32(N) MN, f32(N) T) {
  S(i) +=! A(i, k)
  P(i) *=! A(i, k)
  MX(i) max=! A(i, k)
  MN(i) min=! A(i, k)
  T(i) = S(i); T(i) += P(i); T(i) *= 2; T(i) max= MX(i); T(i) min= MN(i)
  S(i) += A(i, k)
  S(i) *= A(i, k)
  S(i) max= A(i, k)
  S(i) min= A(i, k)
}",
    ),
    (
        "triangular",
        "def tri(f64(N, N) L, f64(N) x) -> (f64(N) y) {
  y(i) +=! L(i, k) * x(k) where k in 0:i+1
  y(i) = y(i) / 2 where i in 1:N
}",
    ),
    (
        "quasi_affine",
        "def q(f32(H, W, 4) I) -> (f32(2 * H, 2 * W) O, f32(floordiv(H, 2)) P) {
  O(y, x) = I(floordiv(y, 2), floordiv(x, 2), 2 * (y % 2) + x % 2)
  P(i) = I(2 * i, 0, 0) + I(2 * i + 1, 0, 0)
}",
    ),
    (
        "types",
        "def types(f16(N) a, f32(N) b, f64(N) c, i8(N) d, i32(N) e, i64(N) f) -> (f64(N) o, i64(N) p) {
  o(i) = cast<f64>(a(i)) + b(i) + c(i) + cast<f32>(d(i)) + e(i)
  p(i) = cast<i32>(d(i)) * e(i) + f(i) + cast<i8>(3) % 2
}",
    ),
    (
        "select_and_values",
        "def sel(f32(N) a, f32(N) b, f32 alpha, i32 shift) -> (f32(N) m, o) {
  m(i) = select(a(i) > b(i), a(i), b(i)) * alpha + max(a(i), -1.5e-3) - min(i, N)
  o(i) = m(i) >= 0 == 1 != (a(i) < b(i)) + (a(i) <= 2) + shift
}",
    ),
    (
        "gemm_i8",
        "def gemm_i8(i8(M, K) A, i8(K, N) B) -> (i32(M, N) C) {
  C(i, j) +=! A(i, k) * B(k, j)
}",
    ),
    (
        "temps_and_inferred",
        "def softmax(f32(R, N) X) -> (Y) {
  mx(r) max=! X(r, j)
  e(r, j) = exp(X(r, j) - mx(r))
  s(r) +=! e(r, j)
  Y(r, j) = e(r, j) / s(r) + 0 * N
}",
    ),
    (
        "stride_inferred",
        "def conv2d_stride2(f32(CI, H, W) I, f32(CO, CI, KH, KW) Wt) -> (O) {
  O(co, h, w) +=! I(ci, 2 * h + kh, 2 * w + kw) * Wt(co, ci, kh, kw)
}",
    ),
    (
        "layout",
        "def layout(
    f32(M, K) A,   # newlines inside the header
    f32 beta
) -> (
    f32(M) s
) {

  s(i) = 0; s(i) += A(i, k) *
      beta   # continued after an operator

  s(i) = s(i) + A(i,
      k) where i in 0:M,
      k in 0:K
}",
    ),
    (
        "scalar_only_temp_and_zero_dim",
        "def z(f32(N) A, f32 alpha) -> (f32 total) {
  t() = alpha
  total() +=! A(i) * t()
  w(i) = i * 2 + alpha where i in 0:4
}",
    ),
    (
        "where_introduces_a_size",
        "def w(f32(N) A) -> (f32(N) B) {
  B(i) +=! A(i) * k where k in 0:K
  B(i) max= A(N - 1 - i) + K + A(j) * m where m in 0:j + 1
}",
    ),
    (
        "reverse_and_shift",
        "def rs(f32(N) A) -> (f32(N) B, C) {
  B(i) = A(N - 1 - i)
  C(i) = A(i + 1) - A(i)
}",
    ),
];

#[test]
fn features() {
    for (name, text) in FEATURES {
        let p = ok(text);
        insta::assert_snapshot!(format!("features_{name}"), dump(&p));
    }
}

#[test]
fn examples_directory_compiles() {
    // The example programs of the repository (if present) must all compile.
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "tc"))
        .collect();
    paths.sort();
    for path in paths {
        let src = SourceFile::read(path.to_str().unwrap()).unwrap();
        let names = def_names(&src).unwrap();
        for n in names {
            if let Err(e) = compile(&src, Some(&n)) {
                panic!("{}", render_plain(e.as_ref()));
            }
        }
    }
}
