//! Matmul through lowering, C emission, compilation and a real run.

mod common;

use common::*;
use polyhedral::data::{Buffer, TensorData};
use polyhedral::ir::DType;
use polyhedral::isl::Ctx;
use targets::{emit_c, mark_outer_parallel, EmitOptions, KNode};

fn matmul_inputs(m: usize, n: usize, k: usize, seed: u64) -> (Vec<f32>, Vec<f32>) {
    let mut r = Rng(seed);
    let a: Vec<f32> = (0..m * k).map(|_| r.f()).collect();
    let b: Vec<f32> = (0..k * n).map(|_| r.f()).collect();
    (a, b)
}

fn matmul_ref(a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> Vec<f32> {
    let mut c = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut s = 0f32;
            for kk in 0..k {
                s += a[i * k + kk] * b[kk * n + j];
            }
            c[i * n + j] = s;
        }
    }
    c
}

fn tensors(a: Vec<f32>, b: Vec<f32>, m: usize, n: usize, k: usize) -> Vec<TensorData> {
    vec![
        TensorData {
            shape: vec![m, k],
            buf: Buffer::F32(a),
        },
        TensorData {
            shape: vec![k, n],
            buf: Buffer::F32(b),
        },
        TensorData::zeros(DType::F32, vec![m, n]),
    ]
}

#[test]
fn matmul_bound_sizes_emits_the_expected_c() {
    let ctx = Ctx::new();
    let prog = matmul("matmul", DType::F32, DType::F32);
    let yaml = matmul_schedule_yaml(&matmul_domain("64", "64", "64"), [1, 1]);
    let kernel = lower_yaml(&ctx, &prog, &yaml);
    let src = emit_c(
        &prog,
        &texts(&["64", "64", "64"]),
        &kernel,
        &EmitOptions::default(),
    );
    insta::assert_snapshot!("matmul_bound_c", src);
}

#[test]
fn matmul_bound_sizes_computes_the_product() {
    let ctx = Ctx::new();
    let (m, n, k) = (33usize, 17usize, 29usize);
    let prog = matmul("matmul", DType::F32, DType::F32);
    let yaml = matmul_schedule_yaml(&matmul_domain("33", "17", "29"), [1, 1]);
    let kernel = lower_yaml(&ctx, &prog, &yaml);
    let (a, b) = matmul_inputs(m, n, k, 7);
    let want = matmul_ref(&a, &b, m, n, k);
    let (_, out) = compile_and_run(
        &prog,
        &kernel,
        &texts(&["33", "17", "29"]),
        &[33, 17, 29],
        tensors(a, b, m, n, k),
        &[],
    );
    assert_close(f32s(&out[2]), &want);
}

#[test]
fn matmul_symbolic_sizes_computes_the_product() {
    let ctx = Ctx::new();
    let (m, n, k) = (13usize, 21usize, 8usize);
    let prog = matmul("mm_sym", DType::F32, DType::F32);
    let yaml = matmul_schedule_yaml(&matmul_domain("M", "N", "K"), [1, 1]);
    let kernel = lower_yaml(&ctx, &prog, &yaml);
    let (a, b) = matmul_inputs(m, n, k, 11);
    let want = matmul_ref(&a, &b, m, n, k);
    let (src, out) = compile_and_run(
        &prog,
        &kernel,
        &texts(&["M", "N", "K"]),
        &[13, 21, 8],
        tensors(a, b, m, n, k),
        &[],
    );
    assert!(
        src.contains("void mm_sym(int64_t M, int64_t N, int64_t K, const float *restrict A, const float *restrict B, float *restrict C)"),
        "{src}"
    );
    assert_close(f32s(&out[2]), &want);
}

/// Every loop of the kernel, outermost first, with its `parallel` flag.
fn loops_and_parallel(kernel: &targets::Kernel) -> Vec<(String, bool)> {
    let mut par = Vec::new();
    kernel.body.walk(&mut |n| {
        if let KNode::For { iter, kind, .. } = n {
            par.push((iter.clone(), *kind == targets::LoopKind::Parallel));
        }
    });
    par
}

#[test]
fn parallel_marked_matmul_has_the_pragma_and_computes_the_product() {
    let ctx = Ctx::new();
    let (m, n, k) = (40usize, 24usize, 16usize);
    let prog = matmul("mm_par", DType::F32, DType::F32);
    let yaml = matmul_schedule_yaml(&matmul_domain("M", "N", "K"), [1, 1]);
    let sched = mark_outer_parallel(schedule(&ctx, &yaml), &[]).expect("pass runs");
    let kernel = targets::lower(&ctx, &prog, &sched).expect("lowering succeeds");
    // Exactly the outer loop is parallel.
    assert_eq!(
        loops_and_parallel(&kernel),
        vec![
            ("c0".to_string(), true),
            ("c1".to_string(), false),
            ("c2".to_string(), false)
        ]
    );
    let (a, b) = matmul_inputs(m, n, k, 3);
    let want = matmul_ref(&a, &b, m, n, k);
    let (src, out) = compile_and_run(
        &prog,
        &kernel,
        &texts(&["M", "N", "K"]),
        &[40, 24, 16],
        tensors(a, b, m, n, k),
        &[],
    );
    assert!(
        src.contains("  #pragma omp parallel for\n  for (int64_t c0 = 0; c0 < M; c0 += 1) {"),
        "{src}"
    );
    assert_eq!(src.matches("#pragma omp").count(), 1, "{src}");
    assert_close(f32s(&out[2]), &want);
}

#[test]
fn parallel_mark_splits_a_band_whose_first_coincident_member_is_inner() {
    let ctx = Ctx::new();
    let (m, n, k) = (9usize, 30usize, 5usize);
    let prog = matmul("mm_split", DType::F32, DType::F32);
    let yaml = matmul_schedule_yaml(&matmul_domain("9", "30", "5"), [0, 1]);
    let sched = mark_outer_parallel(schedule(&ctx, &yaml), &[]).expect("pass runs");
    let kernel = targets::lower(&ctx, &prog, &sched).expect("lowering succeeds");
    assert_eq!(
        loops_and_parallel(&kernel),
        vec![
            ("c0".to_string(), false),
            ("c1".to_string(), true),
            ("c2".to_string(), false)
        ]
    );
    let (a, b) = matmul_inputs(m, n, k, 5);
    let want = matmul_ref(&a, &b, m, n, k);
    let (src, out) = compile_and_run(
        &prog,
        &kernel,
        &texts(&["9", "30", "5"]),
        &[9, 30, 5],
        tensors(a, b, m, n, k),
        &[],
    );
    assert!(
        src.contains("#pragma omp parallel for\n    for (int64_t c1"),
        "{src}"
    );
    assert_close(f32s(&out[2]), &want);
}
