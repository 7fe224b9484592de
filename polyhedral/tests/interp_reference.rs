//! The reference interpreter on hand-built programs, against direct Rust computations.

use half::f16;
use polyhedral::data::{Buffer, TensorData};
use polyhedral::interp::{count_instances, interpret, try_count_instances, InterpStats};
use polyhedral::ir::*;

// ---- builders -------------------------------------------------------------------------

fn c(v: i64) -> Aff {
    Aff::Const(v)
}
fn p(k: usize) -> Aff {
    Aff::Param(k)
}
fn i(k: usize) -> Aff {
    Aff::Iter(k)
}
fn add(a: Aff, b: Aff) -> Aff {
    Aff::Add(Box::new(a), Box::new(b))
}
fn iter(name: &str, lo: Aff, hi: Aff) -> Iter {
    Iter {
        name: name.to_string(),
        lower: vec![lo],
        upper: vec![hi],
        source: RangeSource::Where,
        span: Span::default(),
    }
}
fn tensor(name: &str, dtype: DType, shape: Vec<Aff>, role: TensorRole) -> Tensor {
    Tensor {
        name: name.to_string(),
        dtype,
        shape,
        role,
        span: Span::default(),
    }
}
fn rd(t: TensorId, index: Vec<Aff>) -> Expr {
    Expr::Read {
        tensor: t,
        index,
        span: Span::default(),
    }
}
fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
    Expr::Bin(op, Box::new(a), Box::new(b))
}
fn call(f: Func, args: Vec<Expr>) -> Expr {
    Expr::Call(f, args)
}
fn stmt(
    n: usize,
    iters: Vec<Iter>,
    n_lhs: usize,
    lhs: TensorId,
    lhs_index: Vec<Aff>,
    body: StmtBody,
    dtype: DType,
) -> Stmt {
    Stmt {
        name: format!("S_{n}"),
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
fn program(
    params: &[&str],
    tensors: Vec<Tensor>,
    scalars: Vec<Scalar>,
    stmts: Vec<Stmt>,
) -> Program {
    let inputs = tensors
        .iter()
        .enumerate()
        .filter(|(_, t)| t.role == TensorRole::Input)
        .map(|(k, _)| InputRef::Tensor(k))
        .chain((0..scalars.len()).map(InputRef::Scalar))
        .collect();
    let outputs = tensors
        .iter()
        .enumerate()
        .filter(|(_, t)| t.role == TensorRole::Output)
        .map(|(k, _)| k)
        .collect();
    Program {
        loops: vec![],
        name: "test".to_string(),
        params: params
            .iter()
            .map(|n| Param {
                name: n.to_string(),
                span: Span::default(),
            })
            .collect(),
        tensors,
        scalars,
        inputs,
        outputs,
        stmts,
    }
}
fn f32s(t: &TensorData) -> &[f32] {
    match &t.buf {
        Buffer::F32(v) => v,
        b => panic!("expected f32, got {:?}", b.dtype()),
    }
}
fn with_f32(shape: Vec<usize>, f: impl Fn(usize) -> f32) -> TensorData {
    let n = shape.iter().product();
    TensorData {
        shape,
        buf: Buffer::F32((0..n).map(f).collect()),
    }
}
/// A deterministic, irregular f32 value in [-1, 1).
fn val(k: usize, salt: usize) -> f32 {
    let h = (k as u64 * 2654435761 + salt as u64 * 40503 + 12345) % 2000;
    (h as f32 - 1000.0) / 1000.0 + 1.0 / 3.0 * ((k % 7) as f32 / 7.0) - 0.1
}

/// `C(i, j) +=! A(i, k) * B(k, j)` over sizes M, N, K.
fn matmul(dt: DType, acc: DType) -> Program {
    let (m, n, k) = (p(0), p(1), p(2));
    program(
        &["M", "N", "K"],
        vec![
            tensor("A", dt, vec![m.clone(), k.clone()], TensorRole::Input),
            tensor("B", dt, vec![k.clone(), n.clone()], TensorRole::Input),
            tensor("C", acc, vec![m.clone(), n.clone()], TensorRole::Output),
        ],
        vec![],
        vec![
            stmt(
                0,
                vec![iter("i", c(0), m.clone()), iter("j", c(0), n.clone())],
                2,
                2,
                vec![i(0), i(1)],
                StmtBody::Init(AssignOp::Add),
                acc,
            ),
            stmt(
                1,
                vec![iter("i", c(0), m), iter("j", c(0), n), iter("k", c(0), k)],
                2,
                2,
                vec![i(0), i(1)],
                StmtBody::Update(
                    AssignOp::Add,
                    bin(BinOp::Mul, rd(0, vec![i(0), i(2)]), rd(1, vec![i(2), i(1)])),
                ),
                acc,
            ),
        ],
    )
}

// ---- tests ----------------------------------------------------------------------------

#[test]
fn matmul_f32_matches_triple_loop_exactly() {
    let prog = matmul(DType::F32, DType::F32);
    let (m, n, k) = (7usize, 5usize, 9usize);
    let sizes = [m as i64, n as i64, k as i64];
    let a = with_f32(vec![m, k], |x| val(x, 1));
    let b = with_f32(vec![k, n], |x| val(x, 2));
    let mut ts = vec![
        a.clone(),
        b.clone(),
        TensorData::poisoned(DType::F32, vec![m, n]),
    ];
    let stats = interpret(&prog, &sizes, &mut ts, &[]).unwrap();
    assert_eq!(
        stats,
        InterpStats {
            instances: (m * n + m * n * k) as u64
        }
    );
    assert_eq!(count_instances(&prog, &sizes), (m * n + m * n * k) as u64);
    let (av, bv) = (f32s(&a), f32s(&b));
    let mut want = vec![0f32; m * n];
    for ii in 0..m {
        for jj in 0..n {
            let mut s = 0f32;
            for kk in 0..k {
                // `C += A * B` is one fused multiply-add per instance.
                s = av[ii * k + kk].mul_add(bv[kk * n + jj], s);
            }
            want[ii * n + jj] = s;
        }
    }
    assert_eq!(f32s(&ts[2]), &want[..]);
    // Inputs are untouched.
    assert_eq!(ts[0], a);
    assert_eq!(ts[1], b);
}

#[test]
fn int8_gemm_widens_to_i32_exactly() {
    let prog = matmul(DType::I8, DType::I32);
    let (m, n, k) = (3usize, 4usize, 6usize);
    let sizes = [m as i64, n as i64, k as i64];
    // Products up to 127*127 and sums up to 6*16129: far outside i8, inside i32.
    let av: Vec<i8> = (0..m * k)
        .map(|x| [127, -128, 100, -99, 64, 3][x % 6])
        .collect();
    let bv: Vec<i8> = (0..k * n)
        .map(|x| [127, 120, -128, 77, -1, 90, 5][x % 7])
        .collect();
    let mut ts = vec![
        TensorData {
            shape: vec![m, k],
            buf: Buffer::I8(av.clone()),
        },
        TensorData {
            shape: vec![k, n],
            buf: Buffer::I8(bv.clone()),
        },
        TensorData::poisoned(DType::I32, vec![m, n]),
    ];
    interpret(&prog, &sizes, &mut ts, &[]).unwrap();
    let mut want = vec![0i32; m * n];
    for ii in 0..m {
        for jj in 0..n {
            want[ii * n + jj] = (0..k)
                .map(|kk| av[ii * k + kk] as i32 * bv[kk * n + jj] as i32)
                .sum();
        }
    }
    assert_eq!(ts[2].buf, Buffer::I32(want.clone()));
    assert!(
        want.iter().any(|v| v.abs() > 20000),
        "the test must overflow i8 by far"
    );
}

/// `R(i) max=! X(i, j)`.
#[test]
fn max_reduction_starts_from_minus_infinity() {
    let prog = program(
        &["N", "M"],
        vec![
            tensor("X", DType::F32, vec![p(0), p(1)], TensorRole::Input),
            tensor("R", DType::F32, vec![p(0)], TensorRole::Output),
        ],
        vec![],
        vec![
            stmt(
                0,
                vec![iter("i", c(0), p(0))],
                1,
                1,
                vec![i(0)],
                StmtBody::Init(AssignOp::Max),
                DType::F32,
            ),
            stmt(
                1,
                vec![iter("i", c(0), p(0)), iter("j", c(0), p(1))],
                1,
                1,
                vec![i(0)],
                StmtBody::Update(AssignOp::Max, rd(0, vec![i(0), i(1)])),
                DType::F32,
            ),
        ],
    );
    // Row 0 all negative, row 1 mixed, row 2 has M = 0 columns? No: rows share M.
    let x = TensorData {
        shape: vec![3, 4],
        buf: Buffer::F32(vec![
            -5.0, -2.5, -7.0, -3.0, 1.0, 9.5, -9.0, 9.25, -0.0, -1e30, -2.0, -1.0,
        ]),
    };
    let mut ts = vec![x, TensorData::poisoned(DType::F32, vec![3])];
    interpret(&prog, &[3, 4], &mut ts, &[]).unwrap();
    assert_eq!(f32s(&ts[1]), &[-2.5, 9.5, -0.0]);
    // With no columns the result is the identity, -inf.
    let mut ts = vec![
        TensorData::zeros(DType::F32, vec![2, 0]),
        TensorData::poisoned(DType::F32, vec![2]),
    ];
    let st = interpret(&prog, &[2, 0], &mut ts, &[]).unwrap();
    assert_eq!(st.instances, 2);
    assert_eq!(f32s(&ts[1]), &[f32::NEG_INFINITY, f32::NEG_INFINITY]);
    // min=! starts from +inf, and i32 max=! from i32::MIN.
    let mut prog_i = prog.clone();
    prog_i.tensors[0].dtype = DType::I32;
    prog_i.tensors[1].dtype = DType::I32;
    for s in &mut prog_i.stmts {
        s.dtype = DType::I32;
    }
    let mut ts = vec![
        TensorData::zeros(DType::I32, vec![1, 0]),
        TensorData::poisoned(DType::I32, vec![1]),
    ];
    interpret(&prog_i, &[1, 0], &mut ts, &[]).unwrap();
    assert_eq!(ts[1].buf, Buffer::I32(vec![i32::MIN]));
}

/// `y(i) +=! L(i, k) * x(k) where k in 0:i+1` — a lower-triangular matrix-vector product.
#[test]
fn triangular_kernel_and_its_count() {
    let n = 6usize;
    let prog = program(
        &["N"],
        vec![
            tensor("L", DType::F64, vec![p(0), p(0)], TensorRole::Input),
            tensor("x", DType::F64, vec![p(0)], TensorRole::Input),
            tensor("y", DType::F64, vec![p(0)], TensorRole::Output),
        ],
        vec![],
        vec![
            stmt(
                0,
                vec![iter("i", c(0), p(0))],
                1,
                2,
                vec![i(0)],
                StmtBody::Init(AssignOp::Add),
                DType::F64,
            ),
            stmt(
                1,
                vec![iter("i", c(0), p(0)), iter("k", c(0), add(i(0), c(1)))],
                1,
                2,
                vec![i(0)],
                StmtBody::Update(
                    AssignOp::Add,
                    bin(BinOp::Mul, rd(0, vec![i(0), i(1)]), rd(1, vec![i(1)])),
                ),
                DType::F64,
            ),
        ],
    );
    let lv: Vec<f64> = (0..n * n).map(|k| val(k, 3) as f64).collect();
    let xv: Vec<f64> = (0..n).map(|k| val(k, 4) as f64).collect();
    let mut ts = vec![
        TensorData {
            shape: vec![n, n],
            buf: Buffer::F64(lv.clone()),
        },
        TensorData {
            shape: vec![n],
            buf: Buffer::F64(xv.clone()),
        },
        TensorData::poisoned(DType::F64, vec![n]),
    ];
    let st = interpret(&prog, &[n as i64], &mut ts, &[]).unwrap();
    let want_count = (n + n * (n + 1) / 2) as u64;
    assert_eq!(st.instances, want_count);
    assert_eq!(count_instances(&prog, &[n as i64]), want_count);
    let want: Vec<f64> = (0..n)
        .map(|r| {
            let mut s = 0.0;
            for k in 0..=r {
                s += lv[r * n + k] * xv[k];
            }
            s
        })
        .collect();
    assert_eq!(ts[2].buf, Buffer::F64(want));
}

#[test]
fn count_instances_of_nested_non_rectangular_domains() {
    // (i, j, k): 0 <= i < N, i <= j < N, 0 <= k < 3 (k is a box inside; j depends on i).
    let prog = program(
        &["N"],
        vec![tensor(
            "T",
            DType::F32,
            vec![p(0), p(0), c(3)],
            TensorRole::Output,
        )],
        vec![],
        vec![stmt(
            0,
            vec![
                iter("i", c(0), p(0)),
                iter("j", i(0), p(0)),
                iter("k", c(0), c(3)),
            ],
            3,
            0,
            vec![i(0), i(1), i(2)],
            StmtBody::Update(AssignOp::Assign, Expr::IterValue(1)),
            DType::F32,
        )],
    );
    for n in [0i64, 1, 5, 40] {
        let want = (n * (n + 1) / 2 * 3) as u64;
        assert_eq!(count_instances(&prog, &[n]), want, "N = {n}");
    }
    // Large sizes are counted without enumerating the inner box.
    assert_eq!(
        count_instances(&prog, &[100_000]),
        100_000u64 * 100_001 / 2 * 3
    );
    // A wrong number of sizes is an error (and "unaffordable").
    assert_eq!(count_instances(&prog, &[]), u64::MAX);
    let e = try_count_instances(&prog, &[1, 2]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "`test` has 1 size parameter(s) but 2 value(s) were given"
    );
}

/// Softmax over rows: `m(i) max=! X(i,j)`, `E(i,j) = exp(X(i,j) - m(i))`,
/// `s(i) +=! E(i,j)`, `Y(i,j) = E(i,j) / s(i)`.
#[test]
fn softmax_matches_direct_computation() {
    let (n, m) = (4usize, 11usize);
    let (x, mx, e, s, y) = (0, 1, 2, 3, 4);
    let row = || iter("i", c(0), p(0));
    let col = || iter("j", c(0), p(1));
    let prog = program(
        &["N", "M"],
        vec![
            tensor("X", DType::F32, vec![p(0), p(1)], TensorRole::Input),
            tensor("m", DType::F32, vec![p(0)], TensorRole::Temp),
            tensor("E", DType::F32, vec![p(0), p(1)], TensorRole::Temp),
            tensor("s", DType::F32, vec![p(0)], TensorRole::Temp),
            tensor("Y", DType::F32, vec![p(0), p(1)], TensorRole::Output),
        ],
        vec![],
        vec![
            stmt(
                0,
                vec![row()],
                1,
                mx,
                vec![i(0)],
                StmtBody::Init(AssignOp::Max),
                DType::F32,
            ),
            stmt(
                1,
                vec![row(), col()],
                1,
                mx,
                vec![i(0)],
                StmtBody::Update(AssignOp::Max, rd(x, vec![i(0), i(1)])),
                DType::F32,
            ),
            stmt(
                2,
                vec![row(), col()],
                2,
                e,
                vec![i(0), i(1)],
                StmtBody::Update(
                    AssignOp::Assign,
                    call(
                        Func::Exp,
                        vec![bin(BinOp::Sub, rd(x, vec![i(0), i(1)]), rd(mx, vec![i(0)]))],
                    ),
                ),
                DType::F32,
            ),
            stmt(
                3,
                vec![row()],
                1,
                s,
                vec![i(0)],
                StmtBody::Init(AssignOp::Add),
                DType::F32,
            ),
            stmt(
                4,
                vec![row(), col()],
                1,
                s,
                vec![i(0)],
                StmtBody::Update(AssignOp::Add, rd(e, vec![i(0), i(1)])),
                DType::F32,
            ),
            stmt(
                5,
                vec![row(), col()],
                2,
                y,
                vec![i(0), i(1)],
                StmtBody::Update(
                    AssignOp::Assign,
                    bin(BinOp::Div, rd(e, vec![i(0), i(1)]), rd(s, vec![i(0)])),
                ),
                DType::F32,
            ),
        ],
    );
    let xd = with_f32(vec![n, m], |k| 4.0 * val(k, 5));
    let sizes = [n as i64, m as i64];
    let mut ts: Vec<TensorData> = prog
        .tensors
        .iter()
        .enumerate()
        .map(|(t, d)| TensorData::poisoned(d.dtype, TensorData::shape_of(&prog, t, &sizes)))
        .collect();
    ts[x] = xd.clone();
    interpret(&prog, &sizes, &mut ts, &[]).unwrap();
    let xv = f32s(&xd);
    let mut want = vec![0f32; n * m];
    for r in 0..n {
        let row = &xv[r * m..(r + 1) * m];
        let mut mxv = f32::NEG_INFINITY;
        for &v in row {
            if v > mxv {
                mxv = v;
            }
        }
        let ev: Vec<f32> = row.iter().map(|v| (v - mxv).exp()).collect();
        let mut sum = 0f32;
        for v in &ev {
            sum += v;
        }
        for j in 0..m {
            want[r * m + j] = ev[j] / sum;
        }
    }
    assert_eq!(f32s(&ts[y]), &want[..]);
    let total: f32 = f32s(&ts[y])[..m].iter().sum();
    assert!((total - 1.0).abs() < 1e-5);
}

/// `Y(i) = A(i) * B(i) + A(i) - 0.1` in f16: rounded to f16 after every operation.
#[test]
fn f16_rounds_after_every_operation() {
    let n = 64usize;
    let prog = program(
        &["N"],
        vec![
            tensor("A", DType::F16, vec![p(0)], TensorRole::Input),
            tensor("B", DType::F16, vec![p(0)], TensorRole::Input),
            tensor("Y", DType::F16, vec![p(0)], TensorRole::Output),
        ],
        vec![],
        vec![stmt(
            0,
            vec![iter("i", c(0), p(0))],
            1,
            2,
            vec![i(0)],
            StmtBody::Update(
                AssignOp::Assign,
                bin(
                    BinOp::Sub,
                    bin(
                        BinOp::Add,
                        bin(BinOp::Mul, rd(0, vec![i(0)]), rd(1, vec![i(0)])),
                        rd(0, vec![i(0)]),
                    ),
                    Expr::Lit(0.1),
                ),
            ),
            DType::F16,
        )],
    );
    let av: Vec<f16> = (0..n).map(|k| f16::from_f32(3.0 * val(k, 6))).collect();
    let bv: Vec<f16> = (0..n).map(|k| f16::from_f32(val(k, 7))).collect();
    let mut ts = vec![
        TensorData {
            shape: vec![n],
            buf: Buffer::F16(av.clone()),
        },
        TensorData {
            shape: vec![n],
            buf: Buffer::F16(bv.clone()),
        },
        TensorData::poisoned(DType::F16, vec![n]),
    ];
    interpret(&prog, &[n as i64], &mut ts, &[]).unwrap();
    let r = |x: f32| f16::from_f32(x).to_f32();
    let lit = f16::from_f64(0.1).to_f32();
    let want: Vec<f16> = (0..n)
        .map(|k| {
            let (a, b) = (av[k].to_f32(), bv[k].to_f32());
            f16::from_f32(r(r(a * b) + a) - lit)
        })
        .collect();
    let once: Vec<f16> = (0..n)
        .map(|k| {
            let (a, b) = (av[k].to_f32(), bv[k].to_f32());
            f16::from_f32(a * b + a - lit)
        })
        .collect();
    assert_eq!(ts[2].buf, Buffer::F16(want.clone()));
    assert_ne!(
        want, once,
        "the data must tell per-operation rounding from single rounding"
    );
}

/// One-statement program `Y(i) = <e>` over `0 <= i < N` with `A`, `B` inputs of type `dt`.
fn elementwise(dt: DType, e: Expr) -> Program {
    program(
        &["N"],
        vec![
            tensor("A", dt, vec![p(0)], TensorRole::Input),
            tensor("B", dt, vec![p(0)], TensorRole::Input),
            tensor("Y", dt, vec![p(0)], TensorRole::Output),
        ],
        vec![],
        vec![stmt(
            0,
            vec![iter("i", c(0), p(0))],
            1,
            2,
            vec![i(0)],
            StmtBody::Update(AssignOp::Assign, e),
            dt,
        )],
    )
}
fn run_i32(e: Expr, a: Vec<i32>, b: Vec<i32>) -> miette::Result<Vec<i32>> {
    let n = a.len();
    let prog = elementwise(DType::I32, e);
    let mut ts = vec![
        TensorData {
            shape: vec![n],
            buf: Buffer::I32(a),
        },
        TensorData {
            shape: vec![n],
            buf: Buffer::I32(b),
        },
        TensorData::poisoned(DType::I32, vec![n]),
    ];
    interpret(&prog, &[n as i64], &mut ts, &[])?;
    match &ts[2].buf {
        Buffer::I32(v) => Ok(v.clone()),
        _ => unreachable!(),
    }
}
fn a0() -> Expr {
    rd(0, vec![i(0)])
}
fn b0() -> Expr {
    rd(1, vec![i(0)])
}

#[test]
fn integer_division_by_zero_is_an_error_naming_the_instance() {
    let e = run_i32(
        bin(BinOp::Div, a0(), b0()),
        vec![7, 8, 9, 10],
        vec![2, -3, 0, 1],
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "S_0: integer division by zero at instance (i=2) (found by the reference interpreter)"
    );
    assert_eq!(
        e.help().unwrap().to_string(),
        "the data has a zero divisor; guard it, e.g. `select(d != 0, n / d, 0)`, or compute in a float type"
    );
    let e = run_i32(bin(BinOp::Rem, a0(), b0()), vec![7, 8], vec![0, 1]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "S_0: integer remainder by zero at instance (i=0) (found by the reference interpreter)"
    );
    // select evaluates only the chosen branch.
    let guarded = Expr::Select(
        Box::new(Expr::Cmp(
            CmpOp::Ne,
            Box::new(b0()),
            Box::new(Expr::Lit(0.0)),
        )),
        Box::new(bin(BinOp::Div, a0(), b0())),
        Box::new(Expr::Lit(-1.0)),
    );
    assert_eq!(
        run_i32(guarded, vec![7, 8, 9, 10], vec![2, -3, 0, 1]).unwrap(),
        vec![3, -2, -1, 10]
    );
}

#[test]
fn integer_division_and_remainder_follow_c() {
    let a = vec![7, -7, 7, -7, i32::MIN, 5];
    let b = vec![3, 3, -3, -3, -1, 7];
    assert_eq!(
        run_i32(bin(BinOp::Div, a0(), b0()), a.clone(), b.clone()).unwrap(),
        vec![2, -2, -2, 2, i32::MIN, 0]
    );
    assert_eq!(
        run_i32(bin(BinOp::Rem, a0(), b0()), a, b).unwrap(),
        vec![1, -1, 1, -1, 0, 5]
    );
    // Wrapping arithmetic, comparisons as 1/0, iterator values, relu/abs/max/min.
    let big = vec![i32::MAX, -4, 3];
    assert_eq!(
        run_i32(
            bin(BinOp::Add, a0(), Expr::Lit(1.0)),
            big.clone(),
            vec![0; 3]
        )
        .unwrap(),
        vec![i32::MIN, -3, 4]
    );
    assert_eq!(
        run_i32(
            Expr::Cmp(CmpOp::Lt, Box::new(a0()), Box::new(b0())),
            vec![1, 2, 3],
            vec![2, 2, 2]
        )
        .unwrap(),
        vec![1, 0, 0]
    );
    assert_eq!(
        run_i32(
            bin(BinOp::Mul, Expr::IterValue(0), Expr::Lit(10.0)),
            vec![0; 3],
            vec![0; 3]
        )
        .unwrap(),
        vec![0, 10, 20]
    );
    assert_eq!(
        run_i32(call(Func::Relu, vec![a0()]), vec![-3, 0, 5], vec![0; 3]).unwrap(),
        vec![0, 0, 5]
    );
    assert_eq!(
        run_i32(
            call(Func::Abs, vec![a0()]),
            vec![-3, i32::MIN, 5],
            vec![0; 3]
        )
        .unwrap(),
        vec![3, i32::MIN, 5]
    );
    assert_eq!(
        run_i32(call(Func::Max, vec![a0(), b0()]), vec![1, 5], vec![4, 2]).unwrap(),
        vec![4, 5]
    );
    assert_eq!(
        run_i32(call(Func::Min, vec![a0(), b0()]), vec![1, 5], vec![4, 2]).unwrap(),
        vec![1, 2]
    );
    // A float-only function in an integer statement is rejected.
    let e = run_i32(call(Func::Exp, vec![a0()]), vec![1], vec![1]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "S_0: `exp` is defined on floating-point types only, and this statement computes in i32"
    );
}

/// `requant_i8(x, s)` (the language's `sat_i8(x * s)` with an f32 scale): Gemmini's
/// `ACC_SCALE`, `(f32)x * s` rounded half to even and saturated to int8.
#[test]
fn requant_i8_rounds_half_to_even_and_saturates() {
    let rq = |s: f32, a: Vec<i32>| {
        let n = a.len();
        run_i32(
            call(Func::RequantI8, vec![a0(), Expr::Lit(s as f64)]),
            a,
            vec![0; n],
        )
        .unwrap()
    };
    assert_eq!(
        rq(0.5, vec![1, 3, 5, -1, -3, -5, 7, 300, -300]),
        vec![0, 2, 2, 0, -2, -2, 4, 127, -128]
    );
    assert_eq!(rq(0.37, vec![3, 5, -5, 100]), vec![1, 2, -2, 37]);
    // (f32)16777217 rounds to 16777216 before the scale: 16777216 / 2^24 = 1.
    assert_eq!(rq(1.0 / 16777216.0, vec![16777217]), vec![1]);
    assert_eq!(rq(f32::NAN, vec![5]), vec![0]);
    assert_eq!(polyhedral::interp::requant_i8(255, 0.5), 127);
    assert_eq!(polyhedral::interp::requant_i8(-255, 0.5), -128);
    assert_eq!(polyhedral::interp::requant_i8(5, -0.5), -2);
}

#[test]
fn i8_statements_compute_in_i32_and_wrap_on_store() {
    let prog = elementwise(
        DType::I8,
        // (A * B) / 4 : 100*3 = 300 in int, / 4 = 75 (no wrap before the store).
        bin(BinOp::Div, bin(BinOp::Mul, a0(), b0()), Expr::Lit(4.0)),
    );
    let mut ts = vec![
        TensorData {
            shape: vec![3],
            buf: Buffer::I8(vec![100, -128, 127]),
        },
        TensorData {
            shape: vec![3],
            buf: Buffer::I8(vec![3, -1, 127]),
        },
        TensorData::poisoned(DType::I8, vec![3]),
    ];
    interpret(&prog, &[3], &mut ts, &[]).unwrap();
    // 300/4 = 75; 128/4 = 32; 16129/4 = 4032 -> wraps to 4032 - 16*256 = -64.
    assert_eq!(ts[2].buf, Buffer::I8(vec![75, 32, -64]));
    // cast<i8> wraps in the middle of the expression.
    let prog = elementwise(
        DType::I8,
        bin(
            BinOp::Div,
            Expr::Cast(DType::I8, Box::new(bin(BinOp::Mul, a0(), b0()))),
            Expr::Lit(4.0),
        ),
    );
    interpret(&prog, &[3], &mut ts, &[]).unwrap();
    // 300 -> 44 -> 11; 128 -> -128 -> -32; 16129 -> 1 -> 0.
    assert_eq!(ts[2].buf, Buffer::I8(vec![11, -32, 0]));
}

#[test]
fn casts_convert_to_the_type_and_back() {
    let prog = elementwise(DType::F32, Expr::Cast(DType::I32, Box::new(a0())));
    let mut ts = vec![
        with_f32(vec![5], |k| [2.7, -2.7, 1e20, -0.5, f32::NAN][k]),
        with_f32(vec![5], |_| 0.0),
        TensorData::poisoned(DType::F32, vec![5]),
    ];
    interpret(&prog, &[5], &mut ts, &[]).unwrap();
    // Truncation toward zero; out of range saturates (Rust `as`); NaN gives 0.
    assert_eq!(f32s(&ts[2]), &[2.0, -2.0, i32::MAX as f32, 0.0, 0.0]);
    let prog = elementwise(DType::F32, Expr::Cast(DType::F16, Box::new(a0())));
    let mut ts = vec![
        with_f32(vec![2], |k| [0.1, 70000.0][k]),
        with_f32(vec![2], |_| 0.0),
        TensorData::poisoned(DType::F32, vec![2]),
    ];
    interpret(&prog, &[2], &mut ts, &[]).unwrap();
    assert_eq!(f32s(&ts[2]), &[f16::from_f32(0.1).to_f32(), f32::INFINITY]);
}

#[test]
fn float_specials_are_not_errors() {
    let prog = elementwise(DType::F32, bin(BinOp::Div, a0(), b0()));
    let mut ts = vec![
        with_f32(vec![3], |k| [1.0, 0.0, -2.0][k]),
        with_f32(vec![3], |_| 0.0),
        TensorData::poisoned(DType::F32, vec![3]),
    ];
    interpret(&prog, &[3], &mut ts, &[]).unwrap();
    let y = f32s(&ts[2]);
    assert_eq!((y[0], y[2]), (f32::INFINITY, f32::NEG_INFINITY));
    assert!(y[1].is_nan());
    // fmod, sigmoid, rsqrt, tanh in f32.
    for (f, want) in [
        (bin(BinOp::Rem, a0(), b0()), (-7.5f32) % 2.0),
        (call(Func::Sigmoid, vec![a0()]), 1.0 / (1.0 + 7.5f32.exp())),
        (
            call(Func::Rsqrt, vec![call(Func::Abs, vec![a0()])]),
            1.0 / 7.5f32.sqrt(),
        ),
        (call(Func::Tanh, vec![a0()]), (-7.5f32).tanh()),
        (call(Func::Relu, vec![a0()]), 0.0),
    ] {
        let prog = elementwise(DType::F32, f);
        let mut ts = vec![
            with_f32(vec![1], |_| -7.5),
            with_f32(vec![1], |_| 2.0),
            TensorData::poisoned(DType::F32, vec![1]),
        ];
        interpret(&prog, &[1], &mut ts, &[]).unwrap();
        assert_eq!(f32s(&ts[2]), &[want]);
    }
}

#[test]
fn out_of_bounds_access_is_an_error() {
    // Y(i) = A(i + 1) over 0 <= i < N reads A(N).
    let prog = elementwise(DType::F32, rd(0, vec![add(i(0), c(1))]));
    let mut ts = vec![
        with_f32(vec![4], |_| 1.0),
        with_f32(vec![4], |_| 0.0),
        TensorData::poisoned(DType::F32, vec![4]),
    ];
    let e = interpret(&prog, &[4], &mut ts, &[]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "S_0: access A(4) is outside the tensor's shape (4) at instance (i=3)"
    );
    // The instances before the failing one ran.
    assert_eq!(&f32s(&ts[2])[..3], &[1.0, 1.0, 1.0]);
    // Buffers that do not match the program are rejected up front.
    let mut ts = vec![
        with_f32(vec![3], |_| 1.0),
        with_f32(vec![4], |_| 0.0),
        TensorData::poisoned(DType::F32, vec![4]),
    ];
    let e = interpret(&prog, &[4], &mut ts, &[]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "tensor `A` must be f32 of shape [4], the buffer given is f32 of shape [3]"
    );
}

#[test]
fn quasi_affine_indices_scalars_and_sizes() {
    // Y(i) = A(floordiv(i, 2)) * s + N + (i % 3)   (f64, N = 6, s = 0.5)
    let n = 6usize;
    let prog = program(
        &["N"],
        vec![
            tensor(
                "A",
                DType::F64,
                vec![Aff::FloorDiv(Box::new(add(p(0), c(1))), 2)],
                TensorRole::Input,
            ),
            tensor("Y", DType::F64, vec![p(0)], TensorRole::Output),
        ],
        vec![Scalar {
            name: "s".to_string(),
            dtype: DType::F64,
            span: Span::default(),
        }],
        vec![stmt(
            0,
            vec![iter("i", c(0), p(0))],
            1,
            1,
            vec![i(0)],
            StmtBody::Update(
                AssignOp::Assign,
                bin(
                    BinOp::Add,
                    bin(
                        BinOp::Add,
                        bin(
                            BinOp::Mul,
                            rd(0, vec![Aff::FloorDiv(Box::new(i(0)), 2)]),
                            Expr::Scalar(0),
                        ),
                        Expr::SizeValue(0),
                    ),
                    Expr::Cast(
                        DType::I64,
                        Box::new(bin(BinOp::Rem, Expr::IterValue(0), Expr::Lit(3.0))),
                    ),
                ),
            ),
            DType::F64,
        )],
    );
    assert_eq!(TensorData::shape_of(&prog, 0, &[n as i64]), vec![3]);
    let mut ts = vec![
        TensorData {
            shape: vec![3],
            buf: Buffer::F64(vec![10.0, 20.0, 30.0]),
        },
        TensorData::poisoned(DType::F64, vec![n]),
    ];
    let s = [TensorData::scalar(DType::F64, 0.5)];
    interpret(&prog, &[n as i64], &mut ts, &s).unwrap();
    assert_eq!(
        ts[1].buf,
        Buffer::F64(vec![11.0, 12.0, 18.0, 16.0, 22.0, 23.0])
    );
}

#[test]
fn statements_without_iterators_run_once() {
    // s() = 3 ; s() *= 2   on a 0-d i64 tensor.
    let prog = program(
        &[],
        vec![tensor("s", DType::I64, vec![], TensorRole::Output)],
        vec![],
        vec![
            stmt(
                0,
                vec![],
                0,
                0,
                vec![],
                StmtBody::Update(AssignOp::Assign, Expr::Lit(3.0)),
                DType::I64,
            ),
            stmt(
                1,
                vec![],
                0,
                0,
                vec![],
                StmtBody::Update(AssignOp::Mul, Expr::Lit(2.0)),
                DType::I64,
            ),
        ],
    );
    let mut ts = vec![TensorData::poisoned(DType::I64, vec![])];
    let st = interpret(&prog, &[], &mut ts, &[]).unwrap();
    assert_eq!(st.instances, 2);
    assert_eq!(count_instances(&prog, &[]), 2);
    assert_eq!(ts[0].buf, Buffer::I64(vec![6]));
}

#[test]
fn product_and_min_reductions() {
    // P(i) *=! X(i, j) ; M(i) min=! X(i, j)   (i64)
    let red = |lhs: TensorId, op: AssignOp, n0: usize| {
        vec![
            stmt(
                n0,
                vec![iter("i", c(0), p(0))],
                1,
                lhs,
                vec![i(0)],
                StmtBody::Init(op),
                DType::I64,
            ),
            stmt(
                n0 + 1,
                vec![iter("i", c(0), p(0)), iter("j", c(0), p(1))],
                1,
                lhs,
                vec![i(0)],
                StmtBody::Update(op, rd(0, vec![i(0), i(1)])),
                DType::I64,
            ),
        ]
    };
    let mut stmts = red(1, AssignOp::Mul, 0);
    stmts.extend(red(2, AssignOp::Min, 2));
    let prog = program(
        &["N", "M"],
        vec![
            tensor("X", DType::I64, vec![p(0), p(1)], TensorRole::Input),
            tensor("P", DType::I64, vec![p(0)], TensorRole::Output),
            tensor("Mn", DType::I64, vec![p(0)], TensorRole::Output),
        ],
        vec![],
        stmts,
    );
    let mut ts = vec![
        TensorData {
            shape: vec![2, 3],
            buf: Buffer::I64(vec![2, -3, 4, 5, 1, 7]),
        },
        TensorData::poisoned(DType::I64, vec![2]),
        TensorData::poisoned(DType::I64, vec![2]),
    ];
    interpret(&prog, &[2, 3], &mut ts, &[]).unwrap();
    assert_eq!(ts[1].buf, Buffer::I64(vec![-24, 35]));
    assert_eq!(ts[2].buf, Buffer::I64(vec![-3, 1]));
    let mut ts = vec![
        TensorData::zeros(DType::I64, vec![1, 0]),
        TensorData::poisoned(DType::I64, vec![1]),
        TensorData::poisoned(DType::I64, vec![1]),
    ];
    interpret(&prog, &[1, 0], &mut ts, &[]).unwrap();
    assert_eq!(
        (&ts[1].buf, &ts[2].buf),
        (&Buffer::I64(vec![1]), &Buffer::I64(vec![i64::MAX]))
    );
}

#[test]
fn reads_are_converted_to_the_statement_type() {
    // An i32 statement reading f32 truncates (saturating); an f32 statement reading i8
    // widens exactly; an i8 statement's iterator value wraps to i8.
    let prog = program(
        &["N"],
        vec![
            tensor("F", DType::F32, vec![p(0)], TensorRole::Input),
            tensor("B", DType::I8, vec![p(0)], TensorRole::Input),
            tensor("Yi", DType::I32, vec![p(0)], TensorRole::Output),
            tensor("Yf", DType::F32, vec![p(0)], TensorRole::Output),
            tensor("Yb", DType::I8, vec![p(0)], TensorRole::Output),
        ],
        vec![],
        vec![
            stmt(
                0,
                vec![iter("i", c(0), p(0))],
                1,
                2,
                vec![i(0)],
                StmtBody::Update(
                    AssignOp::Assign,
                    bin(BinOp::Add, rd(0, vec![i(0)]), rd(0, vec![i(0)])),
                ),
                DType::I32,
            ),
            stmt(
                1,
                vec![iter("i", c(0), p(0))],
                1,
                3,
                vec![i(0)],
                StmtBody::Update(
                    AssignOp::Assign,
                    bin(BinOp::Mul, rd(1, vec![i(0)]), Expr::Lit(0.5)),
                ),
                DType::F32,
            ),
            stmt(
                2,
                vec![iter("i", c(0), p(0))],
                1,
                4,
                vec![i(0)],
                StmtBody::Update(
                    AssignOp::Assign,
                    bin(BinOp::Add, Expr::IterValue(0), Expr::Lit(126.0)),
                ),
                DType::I8,
            ),
        ],
    );
    let mut ts = vec![
        with_f32(vec![3], |k| [1.9, -1.9, 3e9][k]),
        TensorData {
            shape: vec![3],
            buf: Buffer::I8(vec![-128, 3, 127]),
        },
        TensorData::poisoned(DType::I32, vec![3]),
        TensorData::poisoned(DType::F32, vec![3]),
        TensorData::poisoned(DType::I8, vec![3]),
    ];
    interpret(&prog, &[3], &mut ts, &[]).unwrap();
    // 1 + 1; -1 + -1; MAX + MAX wraps to -2.
    assert_eq!(ts[2].buf, Buffer::I32(vec![2, -2, -2]));
    assert_eq!(f32s(&ts[3]), &[-64.0, 1.5, 63.5]);
    // 126, 127, then 2 + 126 = 128 in int, stored as -128.
    assert_eq!(ts[4].buf, Buffer::I8(vec![126, 127, -128]));
}

#[test]
fn malformed_programs_are_errors() {
    let base = elementwise(DType::F32, a0());
    let bufs = || {
        vec![
            with_f32(vec![2], |_| 1.0),
            with_f32(vec![2], |_| 1.0),
            TensorData::poisoned(DType::F32, vec![2]),
        ]
    };
    // A bound that uses its own iterator.
    let mut prog = base.clone();
    prog.stmts[0].iters[0].upper = vec![i(0)];
    let e = interpret(&prog, &[2], &mut bufs(), &[]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "S_0: bad range of iterator `i`: iterator #0 is used where only the first 0 iterators are defined"
    );
    assert_eq!(count_instances(&prog, &[2]), u64::MAX);
    // The wrong number of indices.
    let mut prog = base.clone();
    prog.stmts[0].lhs_index = vec![i(0), i(0)];
    let e = interpret(&prog, &[2], &mut bufs(), &[]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "S_0: tensor `Y` has 1 dimensions but is accessed with 2 indices"
    );
    // A missing scalar value, a wrong number of sizes.
    let mut prog = base.clone();
    prog.stmts[0].body = StmtBody::Update(AssignOp::Assign, Expr::Scalar(0));
    let e = interpret(&prog, &[2], &mut bufs(), &[]).unwrap_err();
    assert_eq!(e.to_string(), "S_0: scalar #0 has no value");
    let e = interpret(&base, &[], &mut bufs(), &[]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "`test` has 1 size parameter(s) but 0 value(s) were given"
    );
    // A floordiv by zero in an index.
    let mut prog = base;
    prog.stmts[0].lhs_index = vec![Aff::FloorDiv(Box::new(i(0)), 0)];
    let e = interpret(&prog, &[2], &mut bufs(), &[]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "S_0: bad index of `Y`: floordiv/mod by the non-positive constant 0"
    );
}
