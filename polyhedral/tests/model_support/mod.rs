//! Hand-built programs for the model tests (independent of the front end).
#![allow(dead_code)]

use polyhedral::diag::SourceFile;
use polyhedral::ir::*;

/// A program with the source text its spans point into.
pub struct Case {
    pub prog: Program,
    pub src: SourceFile,
}

pub fn c(v: i64) -> Aff {
    Aff::Const(v)
}
pub fn it(i: usize) -> Aff {
    Aff::Iter(i)
}
pub fn p(i: usize) -> Aff {
    Aff::Param(i)
}
pub fn add(a: Aff, b: Aff) -> Aff {
    Aff::Add(Box::new(a), Box::new(b))
}
pub fn sub(a: Aff, b: Aff) -> Aff {
    Aff::Sub(Box::new(a), Box::new(b))
}

/// The span of the `nth` (0-based) occurrence of `needle` in `text`.
pub fn span(text: &str, needle: &str, nth: usize) -> Span {
    let mut from = 0;
    for _ in 0..nth {
        from += text[from..].find(needle).expect("needle") + needle.len();
    }
    let start = from + text[from..].find(needle).expect("needle");
    Span::new(start, start + needle.len())
}

fn params(text: &str, names: &[&str]) -> Vec<Param> {
    names
        .iter()
        .map(|n| Param {
            name: n.to_string(),
            span: span(text, n, 0),
        })
        .collect()
}

fn tensor(text: &str, name: &str, shape: Vec<Aff>, role: TensorRole) -> Tensor {
    Tensor {
        name: name.into(),
        dtype: DType::F32,
        shape,
        role,
        span: span(text, name, 0),
    }
}

/// `name in lo:hi` (one lower and one upper bound).
pub fn iter(text: &str, name: &str, lo: Aff, hi: Aff) -> Iter {
    Iter {
        name: name.into(),
        lower: vec![lo],
        upper: vec![hi],
        source: RangeSource::Inferred,
        span: span(text, name, 0),
    }
}

fn read(text: &str, tensor: TensorId, index: Vec<Aff>, needle: &str, nth: usize) -> Expr {
    Expr::Read {
        tensor,
        index,
        span: span(text, needle, nth),
    }
}

fn mul(a: Expr, b: Expr) -> Expr {
    Expr::Bin(BinOp::Mul, Box::new(a), Box::new(b))
}

#[allow(clippy::too_many_arguments)]
fn stmt(
    text: &str,
    n: usize,
    iters: Vec<Iter>,
    n_lhs: usize,
    lhs: TensorId,
    lhs_index: Vec<Aff>,
    body: StmtBody,
    lhs_needle: (&str, usize),
    line: &str,
) -> Stmt {
    Stmt {
        name: format!("S_{n}"),
        iters,
        n_lhs_iters: n_lhs,
        lhs,
        lhs_index,
        body,
        dtype: DType::F32,
        span: span(text, line, 0),
        lhs_span: span(text, lhs_needle.0, lhs_needle.1),
        loops: vec![],
    }
}

pub const MATMUL: &str = "def matmul(f32(M, K) A, f32(K, N) B) -> (f32(M, N) C) {
  C(i, j) +=! A(i, k) * B(k, j)
}
";

/// `C(i, j) +=! A(i, k) * B(k, j)`: S_0 init over (i, j), S_1 update over (i, j, k).
pub fn matmul() -> Case {
    let t = MATMUL;
    let (m, k, n) = (0, 1, 2);
    let (a, b, cc) = (0, 1, 2);
    let line = "C(i, j) +=! A(i, k) * B(k, j)";
    let i_ = iter(t, "i", c(0), p(m));
    let j_ = iter(t, "j", c(0), p(n));
    let k_ = iter(t, "k", c(0), p(k));
    let prog = Program {
        loops: vec![],
        name: "matmul".into(),
        params: params(t, &["M", "K", "N"]),
        tensors: vec![
            tensor(t, "A", vec![p(m), p(k)], TensorRole::Input),
            tensor(t, "B", vec![p(k), p(n)], TensorRole::Input),
            tensor(t, "C", vec![p(m), p(n)], TensorRole::Output),
        ],
        scalars: vec![],
        inputs: vec![InputRef::Tensor(a), InputRef::Tensor(b)],
        outputs: vec![cc],
        stmts: vec![
            stmt(
                t,
                0,
                vec![i_.clone(), j_.clone()],
                2,
                cc,
                vec![it(0), it(1)],
                StmtBody::Init(AssignOp::Add),
                ("C(i, j)", 0),
                line,
            ),
            stmt(
                t,
                1,
                vec![i_, j_, k_],
                2,
                cc,
                vec![it(0), it(1)],
                StmtBody::Update(
                    AssignOp::Add,
                    mul(
                        read(t, a, vec![it(0), it(2)], "A(i, k)", 0),
                        read(t, b, vec![it(2), it(1)], "B(k, j)", 0),
                    ),
                ),
                ("C(i, j)", 0),
                line,
            ),
        ],
    };
    Case {
        prog,
        src: SourceFile::new("matmul.tc", t),
    }
}

pub const CONV_CHAIN: &str =
    "def conv_chain(f32(H, W) A, f32(KH, KW) B, f32 bias) -> (f32(H - KH + 1, W - KW + 1) C) {
  A(h, w) = A(h, w) + bias
  C(h, w) +=! A(h + kh, w + kw) * B(kh, kw)
  C(h, w) = abs(C(h, w))
  C(h, w) = relu(C(h, w))
}
";

/// The conv chain of language.md: S_0 bias add in place, S_1/S_2 conv, S_3 abs, S_4 relu.
pub fn conv_chain() -> Case {
    let t = CONV_CHAIN;
    let (hh, ww, kh, kw) = (0, 1, 2, 3);
    let (a, b, cc) = (0, 1, 2);
    let oh = add(sub(p(hh), p(kh)), c(1));
    let ow = add(sub(p(ww), p(kw)), c(1));
    let line = |n: usize| t.lines().nth(n + 1).unwrap().trim();
    let h_in = iter(t, "h", c(0), p(hh));
    let w_in = iter(t, "w", c(0), p(ww));
    let h_out = iter(t, "h", c(0), oh.clone());
    let w_out = iter(t, "w", c(0), ow.clone());
    let kh_ = iter(t, "kh", c(0), p(kh));
    let kw_ = iter(t, "kw", c(0), p(kw));
    let hw = vec![it(0), it(1)];
    let prog = Program {
        loops: vec![],
        name: "conv_chain".into(),
        params: params(t, &["H", "W", "KH", "KW"]),
        tensors: vec![
            tensor(t, "A", vec![p(hh), p(ww)], TensorRole::Input),
            tensor(t, "B", vec![p(kh), p(kw)], TensorRole::Input),
            tensor(t, "C", vec![oh, ow], TensorRole::Output),
        ],
        scalars: vec![Scalar {
            name: "bias".into(),
            dtype: DType::F32,
            span: span(t, "bias", 0),
        }],
        inputs: vec![
            InputRef::Tensor(a),
            InputRef::Tensor(b),
            InputRef::Scalar(0),
        ],
        outputs: vec![cc],
        stmts: vec![
            stmt(
                t,
                0,
                vec![h_in, w_in],
                2,
                a,
                hw.clone(),
                StmtBody::Update(
                    AssignOp::Assign,
                    Expr::Bin(
                        BinOp::Add,
                        Box::new(read(t, a, hw.clone(), "A(h, w)", 1)),
                        Box::new(Expr::Scalar(0)),
                    ),
                ),
                ("A(h, w)", 0),
                line(0),
            ),
            stmt(
                t,
                1,
                vec![h_out.clone(), w_out.clone()],
                2,
                cc,
                hw.clone(),
                StmtBody::Init(AssignOp::Add),
                ("C(h, w)", 0),
                line(1),
            ),
            stmt(
                t,
                2,
                vec![h_out.clone(), w_out.clone(), kh_, kw_],
                2,
                cc,
                hw.clone(),
                StmtBody::Update(
                    AssignOp::Add,
                    mul(
                        read(
                            t,
                            a,
                            vec![add(it(0), it(2)), add(it(1), it(3))],
                            "A(h + kh, w + kw)",
                            0,
                        ),
                        read(t, b, vec![it(2), it(3)], "B(kh, kw)", 0),
                    ),
                ),
                ("C(h, w)", 0),
                line(1),
            ),
            stmt(
                t,
                3,
                vec![h_out.clone(), w_out.clone()],
                2,
                cc,
                hw.clone(),
                StmtBody::Update(
                    AssignOp::Assign,
                    Expr::Call(Func::Abs, vec![read(t, cc, hw.clone(), "C(h, w)", 2)]),
                ),
                ("C(h, w)", 1),
                line(2),
            ),
            stmt(
                t,
                4,
                vec![h_out, w_out],
                2,
                cc,
                hw.clone(),
                StmtBody::Update(
                    AssignOp::Assign,
                    Expr::Call(Func::Relu, vec![read(t, cc, hw, "C(h, w)", 4)]),
                ),
                ("C(h, w)", 3),
                line(3),
            ),
        ],
    };
    Case {
        prog,
        src: SourceFile::new("conv_chain.tc", t),
    }
}

pub const JACOBI: &str = "def jacobi(f32(T, N) A) -> (A) {
  A(t + 1, i) = (A(t, i - 1) + A(t, i) + A(t, i + 1)) / 3 where t in 0:T-1, i in 1:N-1
}
";

/// 1-D Jacobi with a time dimension: one statement over (t, i).
pub fn jacobi() -> Case {
    let t = JACOBI;
    let (tt, nn) = (0, 1);
    let a = 0;
    let line = t.lines().nth(1).unwrap().trim();
    let mut t_ = iter(t, "t", c(0), sub(p(tt), c(1)));
    let mut i_ = iter(t, "i", c(1), sub(p(nn), c(1)));
    t_.source = RangeSource::Where;
    i_.source = RangeSource::Where;
    let r = |idx: Vec<Aff>, needle: &str| read(t, a, idx, needle, 0);
    let sum = Expr::Bin(
        BinOp::Add,
        Box::new(Expr::Bin(
            BinOp::Add,
            Box::new(r(vec![it(0), sub(it(1), c(1))], "A(t, i - 1)")),
            Box::new(r(vec![it(0), it(1)], "A(t, i)")),
        )),
        Box::new(r(vec![it(0), add(it(1), c(1))], "A(t, i + 1)")),
    );
    let prog = Program {
        loops: vec![],
        name: "jacobi".into(),
        params: params(t, &["T", "N"]),
        tensors: vec![tensor(t, "A", vec![p(tt), p(nn)], TensorRole::Input)],
        scalars: vec![],
        inputs: vec![InputRef::Tensor(a)],
        outputs: vec![a],
        stmts: vec![stmt(
            t,
            0,
            vec![t_, i_],
            2,
            a,
            vec![add(it(0), c(1)), it(1)],
            StmtBody::Update(
                AssignOp::Assign,
                Expr::Bin(BinOp::Div, Box::new(sum), Box::new(Expr::Lit(3.0))),
            ),
            ("A(t + 1, i)", 0),
            line,
        )],
    };
    Case {
        prog,
        src: SourceFile::new("jacobi.tc", t),
    }
}

pub const TRIANGULAR: &str = "def trmv(f32(N, N) L, f32(N) x) -> (f32(N) y) {
  y(i) +=! L(i, k) * x(k) where k in 0:i+1
}
";

/// Lower-triangular matrix-vector product: S_0 init over i, S_1 over (i, k), k in 0:i+1.
pub fn triangular() -> Case {
    let t = TRIANGULAR;
    let nn = 0;
    let (l, x, y) = (0, 1, 2);
    let line = t.lines().nth(1).unwrap().trim();
    let i_ = iter(t, "i", c(0), p(nn));
    let mut k_ = iter(t, "k", c(0), add(it(0), c(1)));
    k_.source = RangeSource::Where;
    let prog = Program {
        loops: vec![],
        name: "trmv".into(),
        params: params(t, &["N"]),
        tensors: vec![
            tensor(t, "L", vec![p(nn), p(nn)], TensorRole::Input),
            tensor(t, "x", vec![p(nn)], TensorRole::Input),
            tensor(t, "y", vec![p(nn)], TensorRole::Output),
        ],
        scalars: vec![],
        inputs: vec![InputRef::Tensor(l), InputRef::Tensor(x)],
        outputs: vec![y],
        stmts: vec![
            stmt(
                t,
                0,
                vec![i_.clone()],
                1,
                y,
                vec![it(0)],
                StmtBody::Init(AssignOp::Add),
                ("y(i)", 0),
                line,
            ),
            stmt(
                t,
                1,
                vec![i_, k_],
                1,
                y,
                vec![it(0)],
                StmtBody::Update(
                    AssignOp::Add,
                    mul(
                        read(t, l, vec![it(0), it(1)], "L(i, k)", 0),
                        read(t, x, vec![it(1)], "x(k)", 0),
                    ),
                ),
                ("y(i)", 0),
                line,
            ),
        ],
    };
    Case {
        prog,
        src: SourceFile::new("trmv.tc", t),
    }
}

pub const SHIFTED: &str = "def shifted(f32(H, W) A) -> (f32(H, W) C) {
  C(h, w) = A(h + 1, w) where h in 0:H, w in 0:W
}
";

/// An out-of-bounds read: `A(h + 1, w)` for `h in 0:H`.
pub fn shifted() -> Case {
    let t = SHIFTED;
    let (hh, ww) = (0, 1);
    let (a, cc) = (0, 1);
    let line = t.lines().nth(1).unwrap().trim();
    let prog = Program {
        loops: vec![],
        name: "shifted".into(),
        params: params(t, &["H", "W"]),
        tensors: vec![
            tensor(t, "A", vec![p(hh), p(ww)], TensorRole::Input),
            tensor(t, "C", vec![p(hh), p(ww)], TensorRole::Output),
        ],
        scalars: vec![],
        inputs: vec![InputRef::Tensor(a)],
        outputs: vec![cc],
        stmts: vec![stmt(
            t,
            0,
            vec![iter(t, "h", c(0), p(hh)), iter(t, "w", c(0), p(ww))],
            2,
            cc,
            vec![it(0), it(1)],
            StmtBody::Update(
                AssignOp::Assign,
                read(t, a, vec![add(it(0), c(1)), it(1)], "A(h + 1, w)", 0),
            ),
            ("C(h, w)", 0),
            line,
        )],
    };
    Case {
        prog,
        src: SourceFile::new("shifted.tc", t),
    }
}

/// All sizes bound to the given values, in parameter order.
pub fn bound(v: &[i64]) -> Vec<Option<i64>> {
    v.iter().map(|x| Some(*x)).collect()
}

/// All `n` sizes symbolic.
pub fn symbolic(n: usize) -> Vec<Option<i64>> {
    vec![None; n]
}

pub const CHAIN: &str = "def chain(f32(N) A) -> (f32(N) C) {
  B(i) = A(i) * 2
  C(i) = B(i) + 1
}
";

/// Producer/consumer: S_0 writes the temporary B, S_1 reads it.
pub fn chain() -> Case {
    let t = CHAIN;
    let (a, b, cc) = (0, 1, 2);
    let lit = |v: f64| Box::new(Expr::Lit(v));
    let prog = Program {
        loops: vec![],
        name: "chain".into(),
        params: params(t, &["N"]),
        tensors: vec![
            tensor(t, "A", vec![p(0)], TensorRole::Input),
            tensor(t, "B", vec![p(0)], TensorRole::Temp),
            tensor(t, "C", vec![p(0)], TensorRole::Output),
        ],
        scalars: vec![],
        inputs: vec![InputRef::Tensor(a)],
        outputs: vec![cc],
        stmts: vec![
            stmt(
                t,
                0,
                vec![iter(t, "i", c(0), p(0))],
                1,
                b,
                vec![it(0)],
                StmtBody::Update(
                    AssignOp::Assign,
                    Expr::Bin(
                        BinOp::Mul,
                        Box::new(read(t, a, vec![it(0)], "A(i)", 0)),
                        lit(2.0),
                    ),
                ),
                ("B(i)", 0),
                t.lines().nth(1).unwrap().trim(),
            ),
            stmt(
                t,
                1,
                vec![iter(t, "i", c(0), p(0))],
                1,
                cc,
                vec![it(0)],
                StmtBody::Update(
                    AssignOp::Assign,
                    Expr::Bin(
                        BinOp::Add,
                        Box::new(read(t, b, vec![it(0)], "B(i)", 1)),
                        lit(1.0),
                    ),
                ),
                ("C(i)", 0),
                t.lines().nth(2).unwrap().trim(),
            ),
        ],
    };
    Case {
        prog,
        src: SourceFile::new("chain.tc", t),
    }
}

pub const SUM: &str = "def sum(f32(N) A) -> (f32 s) {
  s +=! A(i)
}
";

/// A reduction to a 0-d tensor: S_0 (init) has no iterators.
pub fn sum() -> Case {
    let t = SUM;
    let (a, s) = (0, 1);
    let line = t.lines().nth(1).unwrap().trim();
    let prog = Program {
        loops: vec![],
        name: "sum".into(),
        params: params(t, &["N"]),
        tensors: vec![
            tensor(t, "A", vec![p(0)], TensorRole::Input),
            tensor(t, "s", vec![], TensorRole::Output),
        ],
        scalars: vec![],
        inputs: vec![InputRef::Tensor(a)],
        outputs: vec![s],
        stmts: vec![
            stmt(
                t,
                0,
                vec![],
                0,
                s,
                vec![],
                StmtBody::Init(AssignOp::Add),
                ("s", 1),
                line,
            ),
            stmt(
                t,
                1,
                vec![iter(t, "i", c(0), p(0))],
                0,
                s,
                vec![],
                StmtBody::Update(AssignOp::Add, read(t, a, vec![it(0)], "A(i)", 0)),
                ("s", 1),
                line,
            ),
        ],
    };
    Case {
        prog,
        src: SourceFile::new("sum.tc", t),
    }
}
