//! [`gemm_like`]: int8 programs of the shapes Gemmini's recogniser tensorises (GEMM with
//! either operand transposed, a bias loaded first, depthwise and channel convolutions
//! through windows), with host epilogues. `i8` operands accumulate in `i32`.

use super::*;

/// A read of tensor `t`.
fn read(t: usize, idx: &[Idx]) -> Expr {
    Expr::Read {
        t,
        idx: idx.to_vec(),
    }
}

/// The plain index of family `fam`.
fn v(fam: u8) -> Idx {
    Idx::Var { fam, off: 0 }
}

/// An input tensor.
fn input(name: &str, dtype: DType, dims: Vec<Ext>) -> Tensor {
    Tensor {
        name: name.into(),
        dtype,
        dims,
        role: Role::Input,
    }
}

/// A random GEMM-like integer program named `name`, valid for [`Prog::validate`].
pub fn gemm_like(rng: &mut ChaCha8Rng, name: &str) -> Prog {
    let size = |rng: &mut ChaCha8Rng| match rng.gen_range(0..4) {
        0 => rng.gen_range(1..=8),
        1 => pick(rng, &[15, 16, 17, 31, 32, 33]),
        _ => rng.gen_range(1..=37),
    };
    let (n, m, k) = (size(rng), size(rng), size(rng));
    let (r, s) = (rng.gen_range(1..=3).min(n), rng.gen_range(1..=3).min(m));
    let kind = rng.gen_range(0..10);
    let (i, j) = (Ext::full(0), Ext::full(1));
    let out_dims = match kind {
        0..=5 => vec![i, j],
        6..=7 => vec![
            Ext::full(2),
            Ext {
                fam: 0,
                valid: true,
            },
            Ext {
                fam: 1,
                valid: true,
            },
        ],
        _ => vec![
            Ext {
                fam: 0,
                valid: true,
            },
            j,
        ],
    };
    let mut tensors = Vec::new();
    let (a, b) = match kind {
        // C(i, j) += A(i, k) * B(k, j), each operand possibly transposed.
        0..=5 => {
            let ad = if rng.gen_bool(0.7) { [0u8, 2] } else { [2, 0] };
            let bd = if rng.gen_bool(0.7) { [2u8, 1] } else { [1, 2] };
            tensors.push(input(
                "A",
                DType::I8,
                ad.iter().map(|&f| Ext::full(f)).collect(),
            ));
            tensors.push(input(
                "B",
                DType::I8,
                bd.iter().map(|&f| Ext::full(f)).collect(),
            ));
            (
                read(0, &[v(ad[0]), v(ad[1])]),
                read(1, &[v(bd[0]), v(bd[1])]),
            )
        }
        // Depthwise: O(c, h, w) += I(c, h + r, w + s) * F(c, r, s).
        6..=7 => {
            tensors.push(input("I", DType::I8, vec![Ext::full(2), i, j]));
            tensors.push(input(
                "F",
                DType::I8,
                vec![Ext::full(2), Ext::full(3), Ext::full(4)],
            ));
            (
                read(0, &[v(2), Idx::Win { fam: 0 }, Idx::Win { fam: 1 }]),
                read(1, &[v(2), v(3), v(4)]),
            )
        }
        // 1-D convolution with channels: O(i, co) += I(i + r, ci) * W(r, ci, co).
        _ => {
            tensors.push(input("I", DType::I8, vec![i, Ext::full(2)]));
            tensors.push(input("W", DType::I8, vec![Ext::full(3), Ext::full(2), j]));
            (
                read(0, &[Idx::Win { fam: 0 }, v(2)]),
                read(1, &[v(3), v(2), v(1)]),
            )
        }
    };
    let mut vars = out_dims.clone();
    vars.extend(match kind {
        0..=5 => vec![Ext::full(2)],
        6..=7 => vec![Ext::full(3), Ext::full(4)],
        _ => vec![Ext::full(2), Ext::full(3)],
    });
    tensors.push(Tensor {
        name: "C".into(),
        dtype: DType::I32,
        dims: out_dims.clone(),
        role: Role::Output { inout: false },
    });
    let c = tensors.len() - 1;
    let product = Expr::Bin(Bin::Mul, Box::new(a), Box::new(b));
    let mut stmts = Vec::new();
    if kind < 6 && rng.gen_bool(0.3) {
        // A bias loaded into the accumulator, then the products added onto it.
        tensors.push(input("bias", DType::I32, vec![j]));
        stmts.push(Stmt {
            lhs: c,
            op: Op::Assign,
            init: false,
            rhs: read(tensors.len() - 1, &[v(1)]),
            vars: out_dims.clone(),
            explicit: false,
        });
    }
    let init = stmts.is_empty();
    stmts.push(Stmt {
        lhs: c,
        op: Op::Add,
        init,
        rhs: product,
        vars,
        explicit: rng.gen_bool(0.3),
    });
    let mut p = Prog {
        name: name.into(),
        dtype: DType::I32,
        sizes: [n, m, k, r, s],
        tensors,
        scalars: Vec::new(),
        stmts,
    };
    epilogue(rng, &mut p, c, &out_dims);
    p
}

/// Host statements after the product: a ReLU into a second output, or a scaling in
/// place.
fn epilogue(rng: &mut ChaCha8Rng, p: &mut Prog, c: usize, dims: &[Ext]) {
    let idx: Vec<Idx> = dims.iter().map(|d| v(d.fam)).collect();
    match rng.gen_range(0..4) {
        0 => {
            p.tensors.push(Tensor {
                name: "Y".into(),
                dtype: DType::I32,
                dims: dims.to_vec(),
                role: Role::Output { inout: false },
            });
            p.stmts.push(Stmt {
                lhs: p.tensors.len() - 1,
                op: Op::Assign,
                init: false,
                rhs: Expr::Un(Un::Relu, Box::new(read(c, &idx))),
                vars: dims.to_vec(),
                explicit: false,
            });
        }
        1 => p.stmts.push(Stmt {
            lhs: c,
            op: Op::Assign,
            init: false,
            rhs: Expr::Bin(
                Bin::Mul,
                Box::new(read(c, &idx)),
                Box::new(Expr::Lit(pick(rng, &[2.0, 3.0, -1.0]))),
            ),
            vars: dims.to_vec(),
            explicit: false,
        }),
        _ => {}
    }
}
