//! Seeded inputs, poison values and output comparison.

use half::f16;
use polyhedral::data::{
    compare, generate_inputs, tolerance, Buffer, Comparison, TensorData, POISON_I32, POISON_I64,
    POISON_I8,
};
use polyhedral::ir::*;

fn tensor(name: &str, dtype: DType, shape: Vec<Aff>, role: TensorRole) -> Tensor {
    Tensor {
        name: name.to_string(),
        dtype,
        shape,
        role,
        span: Span::default(),
    }
}

/// `def f(f32(N, 3) A, i8 k, i32(N) B, f16 h) -> (f64(N) C)` plus an i64 temp, no statements.
fn prog() -> Program {
    let n = Aff::Param(0);
    Program {
        loops: vec![],
        name: "f".to_string(),
        params: vec![Param {
            name: "N".to_string(),
            span: Span::default(),
        }],
        tensors: vec![
            tensor(
                "A",
                DType::F32,
                vec![n.clone(), Aff::Const(3)],
                TensorRole::Input,
            ),
            tensor("B", DType::I32, vec![n.clone()], TensorRole::Input),
            tensor("C", DType::F64, vec![n.clone()], TensorRole::Output),
            tensor(
                "T",
                DType::I64,
                vec![Aff::Mul(2, Box::new(n))],
                TensorRole::Temp,
            ),
        ],
        scalars: vec![
            Scalar {
                name: "k".to_string(),
                dtype: DType::I8,
                span: Span::default(),
            },
            Scalar {
                name: "h".to_string(),
                dtype: DType::F16,
                span: Span::default(),
            },
        ],
        inputs: vec![
            InputRef::Tensor(0),
            InputRef::Scalar(0),
            InputRef::Tensor(1),
            InputRef::Scalar(1),
        ],
        outputs: vec![2],
        stmts: vec![],
    }
}

#[test]
fn generated_inputs_are_deterministic_and_in_range() {
    let p = prog();
    let (ts, ss) = generate_inputs(&p, &[50], 7);
    assert_eq!(ts.len(), 4);
    assert_eq!(ss.len(), 2);
    assert_eq!(ts[0].shape, vec![50, 3]);
    assert_eq!(ts[1].shape, vec![50]);
    assert_eq!(ss[0].shape, Vec::<usize>::new());
    assert_eq!((ss[0].dtype(), ss[1].dtype()), (DType::I8, DType::F16));
    // Same seed, same data; another seed, other data.
    // (Bitwise, through the .npy bytes: the poisoned NaNs are not `==`.)
    let bits = |v: &[TensorData]| {
        v.iter()
            .map(polyhedral::npy::to_npy_bytes)
            .collect::<Vec<_>>()
    };
    let again = generate_inputs(&p, &[50], 7);
    assert_eq!((bits(&again.0), bits(&again.1)), (bits(&ts), bits(&ss)));
    assert_ne!(generate_inputs(&p, &[50], 8).0[0], ts[0]);
    // Ranges.
    let Buffer::F32(a) = &ts[0].buf else { panic!() };
    assert!(a.iter().all(|v| (-1.0..1.0).contains(v)));
    assert!(a.iter().any(|v| *v < -0.5) && a.iter().any(|v| *v > 0.5));
    let Buffer::I32(b) = &ts[1].buf else { panic!() };
    assert!(b.iter().all(|v| (-8..=8).contains(v)));
    // Outputs and temporaries are poisoned.
    let Buffer::F64(c) = &ts[2].buf else { panic!() };
    assert!(c.len() == 50 && c.iter().all(|v| v.is_nan()));
    assert_eq!(ts[3].buf, Buffer::I64(vec![POISON_I64; 100]));
    // The stream is fixed: these exact values guard against accidental changes of the
    // generator (ChaCha8 from seed_from_u64(7), one u64 per element, inputs in order).
    let first: Vec<f32> = a[..3].to_vec();
    insta::assert_snapshot!(
        "seed7_values",
        format!(
            "A[..3] = {first:?}\nk = {:?}\nB[..8] = {:?}\nh = {:?}",
            ss[0].buf,
            &b[..8],
            ss[1].buf
        )
    );
}

#[test]
fn random_values_cover_the_ranges() {
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let t = TensorData::random(DType::I8, vec![4000], &mut rng);
    let Buffer::I8(v) = &t.buf else { panic!() };
    for x in -8..=8i8 {
        assert!(v.contains(&x), "{x} never drawn");
    }
    assert!(v.iter().all(|x| (-8..=8).contains(x)));
    let t = TensorData::random(DType::F16, vec![4000], &mut rng);
    let Buffer::F16(h) = &t.buf else { panic!() };
    assert!(h.iter().all(|x| x.to_f32() >= -1.0 && x.to_f32() < 1.0));
    assert!(h.contains(&f16::from_f32(-1.0)) || h.iter().any(|x| x.to_f32() < -0.99));
    let t = TensorData::random(DType::F64, vec![1000], &mut rng);
    let Buffer::F64(d) = &t.buf else { panic!() };
    assert!(d.iter().all(|x| (-1.0..1.0).contains(x)));
    // Not on a coarse grid: f64 values use 52 bits.
    assert!(d.iter().any(|x| (x * 2f64.powi(30)).fract() != 0.0));
}

#[test]
fn poison_values() {
    assert_eq!(POISON_I8, -91);
    assert_eq!(POISON_I32 as u32, 0xA5A5_A5A5);
    assert_eq!(
        TensorData::poisoned(DType::I8, vec![2]).buf,
        Buffer::I8(vec![-91, -91])
    );
    assert_eq!(
        TensorData::poisoned(DType::I32, vec![1]).buf,
        Buffer::I32(vec![-1515870811])
    );
    let Buffer::F16(h) = TensorData::poisoned(DType::F16, vec![2, 2]).buf else {
        panic!()
    };
    assert!(h.len() == 4 && h.iter().all(|x| x.is_nan()));
}

fn f32t(v: Vec<f32>) -> TensorData {
    TensorData {
        shape: vec![v.len()],
        buf: Buffer::F32(v),
    }
}

#[test]
fn compare_floats_with_tolerance_and_nan() {
    assert_eq!(tolerance(DType::F32), (1e-4, 1e-3));
    // Boundary: |a - r| <= 1e-4 + 1e-3 |r|. For r = 1: 1.1e-3 passes (as computed in f64).
    let r = f32t(vec![1.0, 0.0, f32::NAN, 100.0, f32::INFINITY]);
    let ok = compare(
        &r,
        &f32t(vec![1.001, 0.0000999, f32::NAN, 100.09, f32::INFINITY]),
    );
    assert!(ok.ok, "{ok:?}");
    assert_eq!(ok.mismatches, 0);
    let bad = compare(
        &r,
        &f32t(vec![1.0012, -0.00011, 0.0, 100.0, f32::NEG_INFINITY]),
    );
    assert_eq!(bad.mismatches, 4);
    assert!(!bad.ok);
    let (idx, got, want) = bad.first_mismatch.clone().unwrap();
    assert_eq!(idx, vec![0]);
    assert_eq!((got, want), (1.0012f32 as f64, 1.0));
    assert_eq!(bad.max_abs_err, f64::INFINITY);
    // A NaN (poison) where the reference has a number is a mismatch.
    let poison = compare(
        &r,
        &f32t(vec![f32::NAN, 0.0, f32::NAN, 100.0, f32::INFINITY]),
    );
    assert_eq!(
        (poison.mismatches, poison.first_mismatch.unwrap().0),
        (1, vec![0])
    );
    // Errors are reported for passing elements too.
    let c = compare(&f32t(vec![2.0, 4.0]), &f32t(vec![2.0005, 4.0]));
    assert!(c.ok);
    assert!((c.max_abs_err - 0.0005).abs() < 1e-6);
    assert!((c.max_rel_err - 0.00025).abs() < 1e-6);
}

#[test]
fn compare_exact_boundary_in_f64() {
    // f64: atol 1e-9, rtol 1e-9; r = 1, the limit is 2e-9.
    let t = |v: f64| TensorData {
        shape: vec![],
        buf: Buffer::F64(vec![v]),
    };
    assert!(compare(&t(1.0), &t(1.0 + 1.9e-9)).ok);
    assert!(!compare(&t(1.0), &t(1.0 + 2.1e-9)).ok);
    // f16: atol 1e-2, rtol 1e-2; r = 1: 0.0195 passes, 0.0205 does not.
    let h = |v: f32| TensorData {
        shape: vec![1],
        buf: Buffer::F16(vec![f16::from_f32(v)]),
    };
    assert!(compare(&h(1.0), &h(1.0195)).ok);
    assert!(!compare(&h(1.0), &h(1.0215)).ok);
}

#[test]
fn compare_integers_exactly() {
    let t = |v: Vec<i64>| TensorData {
        shape: vec![2, 2],
        buf: Buffer::I64(v),
    };
    let big = 1i64 << 60;
    // Differ by one beyond 2^53: f64 would not see it.
    let c = compare(&t(vec![1, 2, 3, big]), &t(vec![1, 2, 3, big + 1]));
    assert_eq!(
        c,
        Comparison {
            max_abs_err: 1.0,
            max_rel_err: 1.0 / big as f64,
            mismatches: 1,
            first_mismatch: Some((vec![1, 1], (big + 1) as f64, big as f64)),
            ok: false,
        }
    );
    let i = |v: Vec<i32>| TensorData {
        shape: vec![3],
        buf: Buffer::I32(v),
    };
    assert!(compare(&i(vec![5, -5, 0]), &i(vec![5, -5, 0])).ok);
    let c = compare(&i(vec![5, -5, 0]), &i(vec![5, -5, POISON_I32]));
    assert_eq!((c.mismatches, c.first_mismatch.unwrap().0), (1, vec![2]));
    // Shape or type mismatches compare nothing.
    let c = compare(&i(vec![1, 2, 3]), &f32t(vec![1.0, 2.0, 3.0]));
    assert_eq!((c.ok, c.mismatches, c.first_mismatch), (false, 3, None));
    let c = compare(
        &i(vec![1, 2, 3]),
        &TensorData {
            shape: vec![1, 3],
            buf: Buffer::I32(vec![1, 2, 3]),
        },
    );
    assert!(!c.ok);
}
