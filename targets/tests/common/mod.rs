//! Hand-built programs and helpers shared by the targets tests.
#![allow(dead_code)]

use polyhedral::data::{Buffer, TensorData};
use polyhedral::ir::*;
use polyhedral::isl::{Ctx, IslResultExt};
use targets::{compile_c, emit_c, lower, run, CcOptions, EmitOptions, Kernel};

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

pub fn iter(name: &str, lo: Aff, hi: Aff) -> Iter {
    Iter {
        name: name.into(),
        lower: vec![lo],
        upper: vec![hi],
        source: RangeSource::Inferred,
        span: Span::default(),
    }
}

pub fn tensor(name: &str, dtype: DType, shape: Vec<Aff>, role: TensorRole) -> Tensor {
    Tensor {
        name: name.into(),
        dtype,
        shape,
        role,
        span: Span::default(),
    }
}

pub fn param(name: &str) -> Param {
    Param {
        name: name.into(),
        span: Span::default(),
    }
}

pub fn read(t: TensorId, index: Vec<Aff>) -> Expr {
    Expr::Read {
        tensor: t,
        index,
        span: Span::default(),
    }
}

pub fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
    Expr::Bin(op, Box::new(a), Box::new(b))
}

#[allow(clippy::too_many_arguments)]
pub fn stmt(
    name: &str,
    iters: Vec<Iter>,
    n_lhs: usize,
    lhs: TensorId,
    lhs_index: Vec<Aff>,
    body: StmtBody,
    dtype: DType,
) -> Stmt {
    Stmt {
        name: name.into(),
        iters,
        n_lhs_iters: n_lhs,
        lhs,
        lhs_index,
        body,
        dtype,
        span: Span::default(),
        lhs_span: Span::default(),
        loops: vec![],
    }
}

/// `def <name>(T(M, K) A, T(K, N) B) -> (R(M, N) C) { C(i, j) +=! A(i, k) * B(k, j) }`
/// with sizes M, N, K: S_0 is the init, S_1 the update.
pub fn matmul(name: &str, in_t: DType, out_t: DType) -> Program {
    let (m, n, k) = (p(0), p(1), p(2));
    let ij = || vec![iter("i", c(0), m.clone()), iter("j", c(0), n.clone())];
    let mut ijk = ij();
    ijk.push(iter("k", c(0), k.clone()));
    Program {
        name: name.into(),
        loops: vec![],
        params: vec![param("M"), param("N"), param("K")],
        tensors: vec![
            tensor("A", in_t, vec![m.clone(), k.clone()], TensorRole::Input),
            tensor("B", in_t, vec![k.clone(), n.clone()], TensorRole::Input),
            tensor("C", out_t, vec![m.clone(), n.clone()], TensorRole::Output),
        ],
        scalars: vec![],
        inputs: vec![InputRef::Tensor(0), InputRef::Tensor(1)],
        outputs: vec![2],
        stmts: vec![
            stmt(
                "S_0",
                ij(),
                2,
                2,
                vec![it(0), it(1)],
                StmtBody::Init(AssignOp::Add),
                out_t,
            ),
            stmt(
                "S_1",
                ijk,
                2,
                2,
                vec![it(0), it(1)],
                StmtBody::Update(
                    AssignOp::Add,
                    bin(
                        BinOp::Mul,
                        read(0, vec![it(0), it(2)]),
                        read(1, vec![it(2), it(1)]),
                    ),
                ),
                out_t,
            ),
        ],
    }
}

/// The matmul domain with the given size texts substituted (numbers or names).
pub fn matmul_domain(m: &str, n: &str, k: &str) -> String {
    let params: Vec<&str> = [m, n, k]
        .into_iter()
        .filter(|s| s.parse::<i64>().is_err())
        .collect();
    format!(
        "[{}] -> {{ S_0[i, j] : 0 <= i < {m} and 0 <= j < {n}; \
         S_1[i, j, k] : 0 <= i < {m} and 0 <= j < {n} and 0 <= k < {k} }}",
        params.join(", ")
    )
}

/// The usual matmul schedule: band (i, j) over both statements with the given
/// coincidence flags, then S_0 before the k loop of S_1.
pub fn matmul_schedule_yaml(domain: &str, coincident: [u8; 2]) -> String {
    format!(
        r#"domain: "{domain}"
child:
  schedule: "[{{ S_0[i, j] -> [(i)]; S_1[i, j, k] -> [(i)] }}, {{ S_0[i, j] -> [(j)]; S_1[i, j, k] -> [(j)] }}]"
  coincident: [ {}, {} ]
  child:
    sequence:
    - filter: "{{ S_0[i, j] }}"
    - filter: "{{ S_1[i, j, k] }}"
      child:
        schedule: "[{{ S_1[i, j, k] -> [(k)] }}]"
"#,
        coincident[0], coincident[1]
    )
}

pub fn schedule(ctx: &Ctx, yaml: &str) -> isl_rs::Schedule {
    isl_rs::Schedule::read_from_str(&ctx.isl, yaml)
        .isl("reading a test schedule")
        .expect("test schedule parses")
}

pub fn lower_yaml(ctx: &Ctx, prog: &Program, yaml: &str) -> Kernel {
    let s = schedule(ctx, yaml);
    lower(ctx, prog, &s).expect("lowering succeeds")
}

/// Emits, compiles and runs; returns the tensors after the run.
pub fn compile_and_run(
    prog: &Program,
    kernel: &Kernel,
    param_texts: &[String],
    sizes: &[i64],
    mut tensors: Vec<TensorData>,
    scalars: &[TensorData],
) -> (String, Vec<TensorData>) {
    let src = emit_c(
        prog,
        param_texts,
        kernel,
        &EmitOptions {
            poison_temps: true,
            ..Default::default()
        },
    );
    let k = match compile_c(&src, &CcOptions::default()) {
        Ok(k) => k,
        Err(e) => panic!("compile failed: {e:?}\n{src}"),
    };
    run(&k, prog, sizes, &mut tensors, scalars).expect("run succeeds");
    (src, tensors)
}

/// Deterministic pseudo-random values (xorshift).
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Uniform in [-1, 1).
    pub fn f(&mut self) -> f32 {
        ((self.next() >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
    pub fn i8(&mut self) -> i8 {
        (self.next() >> 56) as u8 as i8
    }
}

pub fn f32s(t: &TensorData) -> &[f32] {
    match &t.buf {
        Buffer::F32(v) => v,
        _ => panic!("not f32"),
    }
}

pub fn assert_close(got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let tol = 1e-4 * w.abs().max(1.0);
        assert!((g - w).abs() <= tol, "element {i}: got {g}, want {w}");
    }
}

pub fn texts(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}
