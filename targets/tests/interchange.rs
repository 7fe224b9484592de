//! Point-band interchange (`targets::passes::interchange`): the innermost loop of a tile becomes a
//! vectorisable one, only under memory marks; in a band that is not permutable only
//! coincident members move.

mod common;

use common::*;
use polyhedral::ir::DType;
use polyhedral::isl::Ctx;
use targets::{KExpr, KNode, Kernel};

/// Matmul with one three-member band (i, j, k), optionally under a mark.
fn yaml(mark: Option<&str>, permutable: u8) -> String {
    let band = format!(
        r#"schedule: "[{{ S_0[i, j] -> [(i)]; S_1[i, j, k] -> [(i)] }}, {{ S_0[i, j] -> [(j)]; S_1[i, j, k] -> [(j)] }}, {{ S_0[i, j] -> [(0)]; S_1[i, j, k] -> [(k)] }}]"
  permutable: {permutable}
  coincident: [ 1, 1, 0 ]
  child:
    sequence:
    - filter: "{{ S_0[i, j] }}"
    - filter: "{{ S_1[i, j, k] }}""#
    );
    let domain = matmul_domain("64", "64", "64");
    let indent = |pad: &str| {
        band.lines()
            .map(|l| format!("{pad}{l}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    match mark {
        Some(m) => format!(
            "domain: \"{domain}\"\nchild:\n  mark: \"{m}\"\n  child:\n{}\n",
            indent("    ")
        ),
        None => format!("domain: \"{domain}\"\nchild:\n{}\n", indent("  ")),
    }
}

/// The arguments of the first instance of statement 1 (`S_1`).
fn update_args(k: &Kernel) -> Vec<KExpr> {
    let mut out = None;
    k.body.walk(&mut |n| {
        if let KNode::Stmt { stmt: 1, args, .. } = n {
            if out.is_none() {
                out = Some(args.clone());
            }
        }
    });
    out.expect("S_1 occurs")
}

/// The loop iterators from the outside in, along the first path.
fn loop_order(n: &KNode, out: &mut Vec<String>) {
    match n {
        KNode::For { iter, body, .. } => {
            out.push(iter.clone());
            loop_order(body, out);
        }
        KNode::Block(v) => {
            if let Some(last) = v.last() {
                loop_order(last, out);
            }
        }
        KNode::If { then, .. } => loop_order(then, out),
        KNode::Local { body, .. } | KNode::Let { body, .. } | KNode::Device { body, .. } => {
            loop_order(body, out)
        }
        KNode::Stmt { .. } | KNode::Copy { .. } | KNode::Barrier | KNode::Intrinsic(_) => {}
    }
}

fn vars(v: &[&str]) -> Vec<KExpr> {
    v.iter().map(|s| KExpr::var(s)).collect()
}

#[test]
fn the_point_band_under_a_memory_mark_gets_j_innermost() {
    let ctx = Ctx::new();
    let prog = matmul("matmul", DType::F32, DType::F32);
    let kernel = lower_yaml(&ctx, &prog, &yaml(Some("mem:L1"), 1));
    // Loops c0, c1, c2 are now i, k, j: S_1(i, j, k) = S_1(c0, c2, c1).
    assert_eq!(update_args(&kernel), vars(&["c0", "c2", "c1"]));
    let mut order = Vec::new();
    loop_order(&kernel.body, &mut order);
    assert_eq!(order, vec!["c0", "c1", "c2"]);
}

#[test]
fn a_band_without_a_memory_mark_keeps_its_order() {
    let ctx = Ctx::new();
    let prog = matmul("matmul", DType::F32, DType::F32);
    let kernel = lower_yaml(&ctx, &prog, &yaml(None, 1));
    assert_eq!(update_args(&kernel), vars(&["c0", "c1", "c2"]));
}

#[test]
fn a_non_permutable_band_moves_only_coincident_members() {
    let ctx = Ctx::new();
    let prog = matmul("matmul", DType::F32, DType::F32);
    // j is coincident (no dependence is carried along it), so it may sink below k.
    let kernel = lower_yaml(&ctx, &prog, &yaml(Some("mem:L1"), 0));
    assert_eq!(update_args(&kernel), vars(&["c0", "c2", "c1"]));
    // With no coincident member nothing moves.
    let text =
        yaml(Some("mem:L1"), 0).replace("coincident: [ 1, 1, 0 ]", "coincident: [ 0, 0, 0 ]");
    let kernel = lower_yaml(&ctx, &prog, &text);
    assert_eq!(update_args(&kernel), vars(&["c0", "c1", "c2"]));
}

#[test]
fn the_interchanged_matmul_computes_the_product() {
    let ctx = Ctx::new();
    let prog = matmul("matmul", DType::F32, DType::F32);
    let kernel = lower_yaml(&ctx, &prog, &yaml(Some("mem:L1"), 1));
    let (m, n, k) = (64usize, 64usize, 64usize);
    let mut r = Rng(7);
    let a: Vec<f32> = (0..m * k).map(|_| r.f()).collect();
    let b: Vec<f32> = (0..k * n).map(|_| r.f()).collect();
    let mut want = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut s = 0f32;
            for kk in 0..k {
                s += a[i * k + kk] * b[kk * n + j];
            }
            want[i * n + j] = s;
        }
    }
    let data = vec![
        polyhedral::data::TensorData {
            shape: vec![m, k],
            buf: polyhedral::data::Buffer::F32(a),
        },
        polyhedral::data::TensorData {
            shape: vec![k, n],
            buf: polyhedral::data::Buffer::F32(b),
        },
        polyhedral::data::TensorData::zeros(DType::F32, vec![m, n]),
    ];
    let (_, out) = compile_and_run(
        &prog,
        &kernel,
        &texts(&["64", "64", "64"]),
        &[64, 64, 64],
        data,
        &[],
    );
    assert_close(f32s(&out[2]), &want);
}
