//! Hand-built programs beyond matmul, compiled and run, compared with Rust loops.

mod common;

use common::*;
use half::f16;
use polyhedral::data::{Buffer, TensorData};
use polyhedral::ir::*;
use polyhedral::isl::Ctx;
use targets::{compile_c, emit_c, mark_outer_parallel, run, CcOptions, EmitOptions, KNode};

/// `T(i) = A(i) * 2` for i in 0..N+1 (T a temporary), then `B(i) = T(i) + T(i + 1)`.
fn chain() -> Program {
    let n = p(0);
    let n1 = add(n.clone(), c(1));
    Program {
        loops: vec![],
        name: "chain".into(),
        params: vec![param("N")],
        tensors: vec![
            tensor("A", DType::F32, vec![n1.clone()], TensorRole::Input),
            tensor("T", DType::F32, vec![n1.clone()], TensorRole::Temp),
            tensor("B", DType::F32, vec![n.clone()], TensorRole::Output),
        ],
        scalars: vec![],
        inputs: vec![InputRef::Tensor(0)],
        outputs: vec![2],
        stmts: vec![
            stmt(
                "S_0",
                vec![iter("i", c(0), n1)],
                1,
                1,
                vec![it(0)],
                StmtBody::Update(
                    AssignOp::Assign,
                    bin(BinOp::Mul, read(0, vec![it(0)]), Expr::Lit(2.0)),
                ),
                DType::F32,
            ),
            stmt(
                "S_1",
                vec![iter("i", c(0), n)],
                1,
                2,
                vec![it(0)],
                StmtBody::Update(
                    AssignOp::Assign,
                    bin(
                        BinOp::Add,
                        read(1, vec![it(0)]),
                        read(1, vec![add(it(0), c(1))]),
                    ),
                ),
                DType::F32,
            ),
        ],
    }
}

const CHAIN_DOMAIN: &str = "[N] -> { S_0[i] : 0 <= i <= N; S_1[i] : 0 <= i < N }";

fn chain_sequential(mark: Option<&str>) -> String {
    let s0 = match mark {
        Some(m) => format!(
            "    child:\n      mark: \"{m}\"\n      child:\n        schedule: \"[{{ S_0[i] -> [(i)] }}]\""
        ),
        None => "    child:\n      schedule: \"[{ S_0[i] -> [(i)] }]\"".to_string(),
    };
    format!(
        r#"domain: "{CHAIN_DOMAIN}"
child:
  sequence:
  - filter: "{{ S_0[i] }}"
{s0}
  - filter: "{{ S_1[i] }}"
    child:
      schedule: "[{{ S_1[i] -> [(i)] }}]"
"#
    )
}

/// S_1[i] runs at time i + 1, right after S_0[i + 1]: guards appear in the loop.
fn chain_fused() -> String {
    format!(
        r#"domain: "{CHAIN_DOMAIN}"
child:
  schedule: "[{{ S_0[i] -> [(i)]; S_1[i] -> [(i + 1)] }}]"
  child:
    sequence:
    - filter: "{{ S_0[i] }}"
    - filter: "{{ S_1[i] }}"
"#
    )
}

fn chain_ref(a: &[f32]) -> Vec<f32> {
    let t: Vec<f32> = a.iter().map(|x| x * 2.0).collect();
    (0..a.len() - 1).map(|i| t[i] + t[i + 1]).collect()
}

fn chain_tensors(a: &[f32]) -> Vec<TensorData> {
    let n = a.len() - 1;
    vec![
        TensorData {
            shape: vec![n + 1],
            buf: Buffer::F32(a.to_vec()),
        },
        TensorData::zeros(DType::F32, vec![0]),
        TensorData::zeros(DType::F32, vec![n]),
    ]
}

#[test]
fn producer_consumer_chain_with_a_temporary() {
    let ctx = Ctx::new();
    let prog = chain();
    let mut r = Rng(99);
    let a: Vec<f32> = (0..38).map(|_| r.f()).collect();
    let want = chain_ref(&a);
    for yaml in [chain_sequential(None), chain_fused()] {
        let kernel = lower_yaml(&ctx, &prog, &yaml);
        for (texts_, sizes) in [(texts(&["N"]), [37i64]), (texts(&["37"]), [37])] {
            let (src, out) =
                compile_and_run(&prog, &kernel, &texts_, &sizes, chain_tensors(&a), &[]);
            assert!(
                src.contains("float *restrict T = (float *)malloc("),
                "{src}"
            );
            assert!(src.contains("memset(T, 0xFF"), "{src}");
            assert!(src.contains("free(T);"), "{src}");
            assert_eq!(f32s(&out[2]), &want[..], "{src}");
        }
    }
}

/// Poisoning is compiled in only on request (`polyc run --check` defines POLYC_POISON):
/// with it, a temporary no statement wrote reads as NaN; the emitted C is the same.
#[test]
fn poisoning_is_compiled_in_only_on_request() {
    let ctx = Ctx::new();
    let prog = chain();
    // S_0, the only writer of T, is skipped: S_1 reads T unwritten.
    let kernel = lower_yaml(&ctx, &prog, &chain_sequential(Some("skipped")));
    let src = emit_c(
        &prog,
        &texts(&["37"]),
        &kernel,
        &EmitOptions {
            poison_temps: true,
            ..Default::default()
        },
    );
    assert!(
        src.contains("#ifdef POLYC_POISON\n  memset(T, 0xFF"),
        "{src}"
    );
    let mut r = Rng(7);
    let a: Vec<f32> = (0..38).map(|_| r.f()).collect();
    let cc = CcOptions {
        extra_flags: vec!["-DPOLYC_POISON".into()],
        ..CcOptions::default()
    };
    let k = compile_c(&src, &cc).expect("compiles");
    let mut tensors = chain_tensors(&a);
    run(&k, &prog, &[37], &mut tensors, &[]).expect("runs");
    assert!(f32s(&tensors[2]).iter().all(|v| v.is_nan()), "{src}");
}

#[test]
fn fused_chain_has_guards() {
    let ctx = Ctx::new();
    let kernel = lower_yaml(&ctx, &chain(), &chain_fused());
    let mut ifs = 0;
    kernel.body.walk(&mut |n| {
        if matches!(n, KNode::If { .. }) {
            ifs += 1;
        }
    });
    assert!(ifs >= 1, "{kernel:?}");
}

#[test]
fn skipped_mark_removes_its_subtree() {
    let ctx = Ctx::new();
    let prog = chain();
    let yaml = chain_sequential(Some("skipped"));
    assert!(yaml.contains("mark: \"skipped\""), "{yaml}");
    let kernel = lower_yaml(&ctx, &prog, &yaml);
    assert_eq!(kernel.body.stmts(), vec![1], "{kernel:?}");
    let src = emit_c(&prog, &texts(&["N"]), &kernel, &EmitOptions::default());
    assert!(!src.contains("T[i] ="), "{src}");
    assert!(src.contains("B[i] = (T[i] + T[(i + 1)]);"), "{src}");
    // Other known marks are transparent.
    let kernel = lower_yaml(&ctx, &prog, &chain_sequential(Some("mem:L1")));
    assert_eq!(kernel.body.stmts(), vec![0, 1]);
}

#[test]
fn unknown_mark_is_an_error() {
    let ctx = Ctx::new();
    let prog = chain();
    let s = schedule(&ctx, &chain_sequential(Some("bogus")));
    let err = targets::lower(&ctx, &prog, &s).expect_err("unknown mark is rejected");
    let text = format!("{err:?}");
    assert!(text.contains("unknown mark \"bogus\""), "{text}");
    assert!(text.contains("mem:<buffer>"), "{text}");
}

#[test]
fn unknown_statement_is_an_error() {
    let ctx = Ctx::new();
    let prog = chain();
    let s = schedule(&ctx, "domain: \"[N] -> { S_7[i] : 0 <= i < N }\"\n");
    let err = targets::lower(&ctx, &prog, &s).expect_err("unknown statement");
    assert!(format!("{err:?}").contains("\"S_7\""), "{err:?}");
}

#[test]
fn int8_gemm_accumulates_in_int32() {
    let ctx = Ctx::new();
    let (m, n, k) = (12usize, 10usize, 70usize);
    let prog = matmul("gemm_i8", DType::I8, DType::I32);
    let yaml = matmul_schedule_yaml(&matmul_domain("M", "N", "K"), [1, 1]);
    let kernel = lower_yaml(&ctx, &prog, &yaml);
    let mut r = Rng(1234);
    let a: Vec<i8> = (0..m * k).map(|_| r.i8()).collect();
    let b: Vec<i8> = (0..k * n).map(|_| r.i8()).collect();
    let mut want = vec![0i32; m * n];
    for i in 0..m {
        for j in 0..n {
            for kk in 0..k {
                want[i * n + j] += a[i * k + kk] as i32 * b[kk * n + j] as i32;
            }
        }
    }
    // Large enough that i8 or i16 arithmetic would overflow.
    assert!(want.iter().any(|v| v.abs() > 40000));
    let tensors = vec![
        TensorData {
            shape: vec![m, k],
            buf: Buffer::I8(a),
        },
        TensorData {
            shape: vec![k, n],
            buf: Buffer::I8(b),
        },
        TensorData::zeros(DType::I32, vec![m, n]),
    ];
    let (src, out) = compile_and_run(
        &prog,
        &kernel,
        &texts(&["M", "N", "K"]),
        &[12, 10, 70],
        tensors,
        &[],
    );
    assert!(
        src.contains("C[i * N + j] += (((int32_t)A[i * K + k]) * ((int32_t)B[k * N + j]));"),
        "{src}"
    );
    assert_eq!(out[2].buf, Buffer::I32(want));
}

/// `Z(i) = max(X(i) * s + Y(i), X(i) - 0.1) / Y(i)` in f16, and `W(i) = X(i) * 3` in f32.
fn f16_program() -> Program {
    let n = p(0);
    let x = || read(0, vec![it(0)]);
    let y = || read(1, vec![it(0)]);
    let z = Expr::Call(
        Func::Max,
        vec![
            bin(BinOp::Add, bin(BinOp::Mul, x(), Expr::Scalar(0)), y()),
            bin(BinOp::Sub, x(), Expr::Lit(0.1)),
        ],
    );
    let z = bin(BinOp::Div, z, y());
    Program {
        loops: vec![],
        name: "f16_ew".into(),
        params: vec![param("N")],
        tensors: vec![
            tensor("X", DType::F16, vec![n.clone()], TensorRole::Input),
            tensor("Y", DType::F16, vec![n.clone()], TensorRole::Input),
            tensor("Z", DType::F16, vec![n.clone()], TensorRole::Output),
            tensor("W", DType::F32, vec![n.clone()], TensorRole::Output),
        ],
        scalars: vec![Scalar {
            name: "s".into(),
            dtype: DType::F16,
            span: Span::default(),
        }],
        inputs: vec![
            InputRef::Tensor(0),
            InputRef::Tensor(1),
            InputRef::Scalar(0),
        ],
        outputs: vec![2, 3],
        stmts: vec![
            stmt(
                "S_0",
                vec![iter("i", c(0), n.clone())],
                1,
                2,
                vec![it(0)],
                StmtBody::Update(AssignOp::Assign, z),
                DType::F16,
            ),
            stmt(
                "S_1",
                vec![iter("i", c(0), n.clone())],
                1,
                3,
                vec![it(0)],
                StmtBody::Update(AssignOp::Assign, bin(BinOp::Mul, x(), Expr::Lit(3.0))),
                DType::F32,
            ),
        ],
    }
}

#[test]
fn f16_elementwise_rounds_after_every_operation() {
    let ctx = Ctx::new();
    let prog = f16_program();
    let yaml = r#"domain: "[N] -> { S_0[i] : 0 <= i < N; S_1[i] : 0 <= i < N }"
child:
  schedule: "[{ S_0[i] -> [(i)]; S_1[i] -> [(i)] }]"
  child:
    sequence:
    - filter: "{ S_0[i] }"
    - filter: "{ S_1[i] }"
"#;
    let kernel = lower_yaml(&ctx, &prog, yaml);
    let n = 500;
    let mut r = Rng(77);
    let x: Vec<f16> = (0..n).map(|_| f16::from_f32(r.f() * 3.0)).collect();
    let y: Vec<f16> = (0..n).map(|_| f16::from_f32(1.0 + r.f() * 0.5)).collect();
    let s = f16::from_f32(1.37);
    let h = |v: f32| f16::from_f32(v);
    let want_z: Vec<f16> = (0..n)
        .map(|i| {
            let a = h(h(x[i].to_f32() * s.to_f32()).to_f32() + y[i].to_f32());
            let b = h(x[i].to_f32() - f16::from_f64(0.1).to_f32());
            let m = if a > b { a } else { b };
            h(m.to_f32() / y[i].to_f32())
        })
        .collect();
    let want_w: Vec<f32> = x.iter().map(|v| v.to_f32() * 3.0).collect();
    let tensors = vec![
        TensorData {
            shape: vec![n],
            buf: Buffer::F16(x.clone()),
        },
        TensorData {
            shape: vec![n],
            buf: Buffer::F16(y.clone()),
        },
        TensorData::zeros(DType::F16, vec![n]),
        TensorData::zeros(DType::F32, vec![n]),
    ];
    let scalars = vec![TensorData {
        shape: vec![],
        buf: Buffer::F16(vec![s]),
    }];
    let (src, out) = compile_and_run(
        &prog,
        &kernel,
        &texts(&["N"]),
        &[n as i64],
        tensors,
        &scalars,
    );
    assert!(
        src.contains("_Float16 s, _Float16 *restrict Z, float *restrict W)"),
        "{src}"
    );
    assert!(
        src.contains("Z[i] = polyc_div_f16(polyc_max_f16(polyc_add_f16(polyc_mul_f16(X[i], s), Y[i]), polyc_sub_f16(X[i], ((_Float16)0.1))), Y[i]);"),
        "{src}"
    );
    // Bit-exact: the same per-operation rounding as the half crate.
    let Buffer::F16(z) = &out[2].buf else {
        panic!()
    };
    let zb: Vec<u16> = z.iter().map(|v| v.to_bits()).collect();
    let wb: Vec<u16> = want_z.iter().map(|v| v.to_bits()).collect();
    assert_eq!(zb, wb);
    assert_eq!(f32s(&out[3]), &want_w[..]);
}

/// `y(i) +=! L(i, k) * x(k) where k in 0:i+1` in i64.
fn triangular() -> Program {
    let n = p(0);
    Program {
        loops: vec![],
        name: "trmv".into(),
        params: vec![param("N")],
        tensors: vec![
            tensor(
                "L",
                DType::I64,
                vec![n.clone(), n.clone()],
                TensorRole::Input,
            ),
            tensor("x", DType::I64, vec![n.clone()], TensorRole::Input),
            tensor("y", DType::I64, vec![n.clone()], TensorRole::Output),
        ],
        scalars: vec![],
        inputs: vec![InputRef::Tensor(0), InputRef::Tensor(1)],
        outputs: vec![2],
        stmts: vec![
            stmt(
                "S_0",
                vec![iter("i", c(0), n.clone())],
                1,
                2,
                vec![it(0)],
                StmtBody::Init(AssignOp::Add),
                DType::I64,
            ),
            stmt(
                "S_1",
                vec![
                    iter("i", c(0), n.clone()),
                    iter("k", c(0), add(it(0), c(1))),
                ],
                1,
                2,
                vec![it(0)],
                StmtBody::Update(
                    AssignOp::Add,
                    bin(
                        BinOp::Mul,
                        read(0, vec![it(0), it(1)]),
                        read(1, vec![it(1)]),
                    ),
                ),
                DType::I64,
            ),
        ],
    }
}

#[test]
fn triangular_loop_runs_the_triangle_only() {
    let ctx = Ctx::new();
    let prog = triangular();
    let yaml = r#"domain: "[N] -> { S_0[i] : 0 <= i < N; S_1[i, k] : 0 <= i < N and 0 <= k <= i }"
child:
  schedule: "[{ S_0[i] -> [(i)]; S_1[i, k] -> [(i)] }]"
  coincident: [ 1 ]
  child:
    sequence:
    - filter: "{ S_0[i] }"
    - filter: "{ S_1[i, k] }"
      child:
        schedule: "[{ S_1[i, k] -> [(k)] }]"
"#;
    let sched = mark_outer_parallel(schedule(&ctx, yaml), &[]).expect("pass runs");
    let kernel = targets::lower(&ctx, &prog, &sched).expect("lowers");
    let n = 45usize;
    let mut r = Rng(5);
    // The upper triangle holds huge values: reading it would show in the result.
    let l: Vec<i64> = (0..n * n)
        .map(|e| {
            if e % n <= e / n {
                (r.next() % 1000) as i64 - 500
            } else {
                1 << 40
            }
        })
        .collect();
    let x: Vec<i64> = (0..n).map(|_| (r.next() % 1000) as i64 - 500).collect();
    let want: Vec<i64> = (0..n)
        .map(|i| (0..=i).map(|k| l[i * n + k] * x[k]).sum())
        .collect();
    let tensors = vec![
        TensorData {
            shape: vec![n, n],
            buf: Buffer::I64(l),
        },
        TensorData {
            shape: vec![n],
            buf: Buffer::I64(x),
        },
        TensorData::zeros(DType::I64, vec![n]),
    ];
    let (src, out) = compile_and_run(&prog, &kernel, &texts(&["N"]), &[n as i64], tensors, &[]);
    assert!(
        src.contains("for (int64_t c1 = 0; c1 <= c0; c1 += 1) {"),
        "{src}"
    );
    assert!(
        src.contains("#pragma omp parallel for\n  for (int64_t c0 = 0; c0 < N; c0 += 1)"),
        "{src}"
    );
    assert_eq!(out[2].buf, Buffer::I64(want));
}

/// `B(i) = A(i) + 2 * A((i + 5) % 7) + (A(floordiv(i - 10, 4) + 3) - A((i - 10) % 4))`, i32, tiled by 8 with a
/// symbolic N: exercises `polyc_mod`, `polyc_floord` and `min` in loop bounds.
#[test]
fn tiled_loop_with_quasi_affine_indices() {
    let ctx = Ctx::new();
    let n = p(0);
    let prog = Program {
        loops: vec![],
        name: "quasi".into(),
        params: vec![param("N")],
        tensors: vec![
            tensor("A", DType::I32, vec![n.clone()], TensorRole::Input),
            tensor("B", DType::I32, vec![n.clone()], TensorRole::Output),
        ],
        scalars: vec![],
        inputs: vec![InputRef::Tensor(0)],
        outputs: vec![1],
        stmts: vec![stmt(
            "S_0",
            vec![iter("i", c(0), n.clone())],
            1,
            1,
            vec![it(0)],
            StmtBody::Update(
                AssignOp::Assign,
                bin(
                    BinOp::Add,
                    bin(
                        BinOp::Add,
                        read(0, vec![it(0)]),
                        bin(
                            BinOp::Mul,
                            Expr::Lit(2.0),
                            read(0, vec![Aff::Mod(Box::new(add(it(0), c(5))), 7)]),
                        ),
                    ),
                    bin(
                        BinOp::Sub,
                        read(
                            0,
                            vec![add(
                                Aff::FloorDiv(
                                    Box::new(Aff::Sub(Box::new(it(0)), Box::new(c(10)))),
                                    4,
                                ),
                                c(3),
                            )],
                        ),
                        read(
                            0,
                            vec![Aff::Mod(
                                Box::new(Aff::Sub(Box::new(it(0)), Box::new(c(10)))),
                                4,
                            )],
                        ),
                    ),
                ),
            ),
            DType::I32,
        )],
    };
    let yaml = r#"domain: "[N] -> { S_0[i] : 0 <= i < N }"
child:
  schedule: "[{ S_0[i] -> [(floor(i/8))] }]"
  child:
    schedule: "[{ S_0[i] -> [(i)] }]"
"#;
    let kernel = lower_yaml(&ctx, &prog, yaml);
    let n = 29usize;
    let a: Vec<i32> = (0..n as i32).map(|v| v * v - 40).collect();
    let want: Vec<i32> = (0..n as i64)
        .map(|i| {
            let (u, v) = ((i - 10).div_euclid(4) + 3, (i - 10).rem_euclid(4));
            let i = i as usize;
            a[i] + 2 * a[(i + 5) % 7] + (a[u as usize] - a[v as usize])
        })
        .collect();
    let tensors = vec![
        TensorData {
            shape: vec![n],
            buf: Buffer::I32(a),
        },
        TensorData::zeros(DType::I32, vec![n]),
    ];
    let (src, out) = compile_and_run(&prog, &kernel, &texts(&["N"]), &[n as i64], tensors, &[]);
    assert!(src.contains("polyc_floord("), "{src}");
    assert!(src.contains("polyc_min("), "{src}");
    assert!(src.contains("A[polyc_mod((i + 5), 7)]"), "{src}");
    assert_eq!(out[1].buf, Buffer::I32(want));
}

/// Integer semantics: C division and remainder, select, comparisons, abs, max, casts
/// and i8 statements that wrap at the store.
#[test]
fn integer_semantics() {
    let ctx = Ctx::new();
    let n = p(0);
    let x = || read(0, vec![it(0)]);
    let sel = Expr::Select(
        Box::new(Expr::Cmp(
            CmpOp::Lt,
            Box::new(x()),
            Box::new(Expr::Lit(0.0)),
        )),
        Box::new(bin(
            BinOp::Div,
            Expr::Call(Func::Abs, vec![x()]),
            Expr::Lit(3.0),
        )),
        Box::new(bin(BinOp::Rem, x(), Expr::Lit(5.0))),
    );
    let e32 = bin(
        BinOp::Add,
        bin(
            BinOp::Add,
            bin(
                BinOp::Add,
                sel,
                Expr::Call(Func::Max, vec![x(), Expr::Lit(-7.0)]),
            ),
            Expr::Cast(DType::I8, Box::new(bin(BinOp::Mul, x(), Expr::Lit(50.0)))),
        ),
        bin(
            BinOp::Div,
            bin(BinOp::Sub, Expr::Lit(0.0), x()),
            Expr::Lit(4.0),
        ),
    );
    // 200 is -56 as an i8: -56 / 3 = -18 (an int literal 200 would give 66).
    let e8 = bin(
        BinOp::Add,
        bin(
            BinOp::Add,
            bin(BinOp::Mul, x(), Expr::Lit(3.0)),
            Expr::Lit(100.0),
        ),
        bin(BinOp::Div, Expr::Lit(200.0), Expr::Lit(3.0)),
    );
    let prog = Program {
        loops: vec![],
        name: "ints".into(),
        params: vec![param("N")],
        tensors: vec![
            tensor("X", DType::I8, vec![n.clone()], TensorRole::Input),
            tensor("Y", DType::I32, vec![n.clone()], TensorRole::Output),
            tensor("Z", DType::I8, vec![n.clone()], TensorRole::Output),
        ],
        scalars: vec![],
        inputs: vec![InputRef::Tensor(0)],
        outputs: vec![1, 2],
        stmts: vec![
            stmt(
                "S_0",
                vec![iter("i", c(0), n.clone())],
                1,
                1,
                vec![it(0)],
                StmtBody::Update(AssignOp::Assign, e32),
                DType::I32,
            ),
            stmt(
                "S_1",
                vec![iter("i", c(0), n.clone())],
                1,
                2,
                vec![it(0)],
                StmtBody::Update(AssignOp::Assign, e8),
                DType::I8,
            ),
        ],
    };
    let yaml = r#"domain: "[N] -> { S_0[i] : 0 <= i < N; S_1[i] : 0 <= i < N }"
child:
  sequence:
  - filter: "{ S_0[i] }"
    child:
      schedule: "[{ S_0[i] -> [(i)] }]"
  - filter: "{ S_1[i] }"
    child:
      schedule: "[{ S_1[i] -> [(i)] }]"
"#;
    let kernel = lower_yaml(&ctx, &prog, yaml);
    let xs: Vec<i8> = (-128..=127).map(|v: i32| v as i8).collect();
    let n = xs.len();
    let want_y: Vec<i32> = xs
        .iter()
        .map(|&v| {
            let v = v as i32;
            let sel = if v < 0 { v.abs() / 3 } else { v % 5 };
            sel + v.max(-7) + (v.wrapping_mul(50) as i8) as i32 + (0 - v) / 4
        })
        .collect();
    let want_z: Vec<i8> = xs
        .iter()
        .map(|&v| (v as i32 * 3 + 100 + (-56 / 3)) as i8)
        .collect();
    let tensors = vec![
        TensorData {
            shape: vec![n],
            buf: Buffer::I8(xs),
        },
        TensorData::zeros(DType::I32, vec![n]),
        TensorData::zeros(DType::I8, vec![n]),
    ];
    let (src, out) = compile_and_run(&prog, &kernel, &texts(&["N"]), &[n as i64], tensors, &[]);
    assert!(src.contains("Z[i] = (int8_t)"), "{src}");
    assert_eq!(out[1].buf, Buffer::I32(want_y), "{src}");
    assert_eq!(out[2].buf, Buffer::I8(want_z), "{src}");
}

/// Reductions with max= and min= and their inits, in f32 and i32.
#[test]
fn max_and_min_reductions() {
    let ctx = Ctx::new();
    for (dt, op) in [
        (DType::F32, AssignOp::Max),
        (DType::F32, AssignOp::Min),
        (DType::I32, AssignOp::Max),
        (DType::I32, AssignOp::Min),
    ] {
        let (n, k) = (p(0), p(1));
        let prog = Program {
            loops: vec![],
            name: "red".into(),
            params: vec![param("N"), param("K")],
            tensors: vec![
                tensor("A", dt, vec![n.clone(), k.clone()], TensorRole::Input),
                tensor("R", dt, vec![n.clone()], TensorRole::Output),
            ],
            scalars: vec![],
            inputs: vec![InputRef::Tensor(0)],
            outputs: vec![1],
            stmts: vec![
                stmt(
                    "S_0",
                    vec![iter("i", c(0), n.clone())],
                    1,
                    1,
                    vec![it(0)],
                    StmtBody::Init(op),
                    dt,
                ),
                stmt(
                    "S_1",
                    vec![iter("i", c(0), n.clone()), iter("r", c(0), k.clone())],
                    1,
                    1,
                    vec![it(0)],
                    StmtBody::Update(op, read(0, vec![it(0), it(1)])),
                    dt,
                ),
            ],
        };
        let yaml = r#"domain: "[N, K] -> { S_0[i] : 0 <= i < N; S_1[i, r] : 0 <= i < N and 0 <= r < K }"
child:
  sequence:
  - filter: "{ S_0[i] }"
    child:
      schedule: "[{ S_0[i] -> [(i)] }]"
  - filter: "{ S_1[i, r] }"
    child:
      schedule: "[{ S_1[i, r] -> [(i)] }, { S_1[i, r] -> [(r)] }]"
"#;
        let kernel = lower_yaml(&ctx, &prog, yaml);
        let (rows, cols) = (7usize, 13usize);
        let mut rng = Rng(31);
        let vals: Vec<i32> = (0..rows * cols)
            .map(|_| (rng.next() % 2001) as i32 - 1000)
            .collect();
        let want: Vec<i32> = (0..rows)
            .map(|i| {
                let row = &vals[i * cols..(i + 1) * cols];
                if op == AssignOp::Max {
                    *row.iter().max().unwrap()
                } else {
                    *row.iter().min().unwrap()
                }
            })
            .collect();
        let (a, z) = if dt == DType::F32 {
            (
                Buffer::F32(vals.iter().map(|&v| v as f32).collect()),
                Buffer::F32(want.iter().map(|&v| v as f32).collect()),
            )
        } else {
            (Buffer::I32(vals.clone()), Buffer::I32(want.clone()))
        };
        let tensors = vec![
            TensorData {
                shape: vec![rows, cols],
                buf: a,
            },
            TensorData::zeros(dt, vec![rows]),
        ];
        let (src, out) = compile_and_run(
            &prog,
            &kernel,
            &texts(&["N", "K"]),
            &[rows as i64, cols as i64],
            tensors,
            &[],
        );
        assert_eq!(out[1].buf, z, "{src}");
    }
}

#[test]
fn compiler_errors_come_back_with_the_compilers_message() {
    let err = compile_c("void broken( {\n", &CcOptions::default()).expect_err("does not compile");
    let text = format!("{err:?}");
    assert!(text.contains("error"), "{text}");
    assert!(text.contains("kernel.c"), "{text}");
    // The source is kept for inspection.
    let path = text
        .split_whitespace()
        .find(|w| w.ends_with("kernel.c") && w.starts_with('/'))
        .expect("a path in the message");
    assert!(std::path::Path::new(path).exists(), "{path}");
    let _ = std::fs::remove_dir_all(std::path::Path::new(path).parent().unwrap());
}

#[test]
fn run_rejects_wrong_sizes_and_buffers() {
    let ctx = Ctx::new();
    let prog = matmul("mm_check", DType::F32, DType::F32);
    let yaml = matmul_schedule_yaml(&matmul_domain("4", "4", "4"), [1, 1]);
    let kernel = lower_yaml(&ctx, &prog, &yaml);
    let src = emit_c(
        &prog,
        &texts(&["4", "4", "4"]),
        &kernel,
        &EmitOptions::default(),
    );
    let k = compile_c(&src, &CcOptions::default()).expect("compiles");
    let mk = |n: usize| {
        vec![
            TensorData::zeros(DType::F32, vec![n, n]),
            TensorData::zeros(DType::F32, vec![n, n]),
            TensorData::zeros(DType::F32, vec![n, n]),
        ]
    };
    // A bound size with another value.
    let err = run(&k, &prog, &[5, 5, 5], &mut mk(5), &[]).expect_err("size mismatch");
    assert!(format!("{err:?}").contains("size M = 5 differs"), "{err:?}");
    // A buffer of the wrong length.
    let mut t = mk(4);
    t[1] = TensorData::zeros(DType::F32, vec![3, 4]);
    let err = run(&k, &prog, &[4, 4, 4], &mut t, &[]).expect_err("short buffer");
    assert!(
        format!("{err:?}").contains("tensor `B` needs 16 elements"),
        "{err:?}"
    );
    // The wrong dtype.
    let mut t = mk(4);
    t[2] = TensorData::zeros(DType::F64, vec![4, 4]);
    assert!(run(&k, &prog, &[4, 4, 4], &mut t, &[]).is_err());
    // And a correct call works.
    assert!(run(&k, &prog, &[4, 4, 4], &mut mk(4), &[]).is_ok());
}

#[test]
fn loop_iterators_are_renamed_when_they_clash_with_program_names() {
    let ctx = Ctx::new();
    let mut prog = chain();
    for st in &mut prog.stmts {
        st.iters[0].name = "c0".into();
    }
    let kernel = lower_yaml(&ctx, &prog, &chain_fused());
    assert_eq!(kernel.loop_iters, vec!["polyc_c0".to_string()]);
    let mut r = Rng(4);
    let a: Vec<f32> = (0..20).map(|_| r.f()).collect();
    let (src, out) = compile_and_run(
        &prog,
        &kernel,
        &texts(&["N"]),
        &[19],
        chain_tensors(&a),
        &[],
    );
    assert!(src.contains("const int64_t c0 = polyc_c0"), "{src}");
    assert_eq!(f32s(&out[2]), &chain_ref(&a)[..]);
}
