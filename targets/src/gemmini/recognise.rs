//! Recognising the contractions the systolic array runs, from the polyhedral model's access
//! relations (never from names).
//!
//! A statement is a GEMM when:
//! - it is `C[…] += X[…] · Y[…]` (an `Add` update whose right side multiplies two reads),
//!   with `C` in the accumulator's element type and `X`, `Y` in the scratchpad's;
//! - it has exactly one reduction iterator `k`, and every iterator ranges over a box whose
//!   bounds are bound sizes;
//! - every tensor index is a constant or one iterator times a positive coefficient plus a
//!   constant;
//! - `C`'s last dimension is indexed by a left-hand iterator `j` with coefficient 1 (its
//!   rows are contiguous), its second-to-last by another, `i`; its other dimensions are
//!   batch iterators;
//! - one operand (`A`) holds `i` and `k`, the other (`B`) holds `k` and `j`; each operand's
//!   last dimension is one of its two (coefficient 1), so `A` is stored `i`-major (normal)
//!   or `k`-major (transposed), `B` `k`-major (normal) or `j`-major (transposed); the other
//!   dimensions of the operands hold batch iterators or constants.
//!
//! The flat element offset of every access is then `c0 + Σ coef[t] · t` over the
//! statement's iterators, which is all the instruction program needs.

use polyhedral::ir::{Aff, AssignOp, DType, Expr, Program, StmtBody};
use polyhedral::scop::Scop;

/// A flat element offset `c0 + Σ coef[t] · t` over a statement's iterators.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lin {
    /// The constant part.
    pub c0: i64,
    /// One coefficient per statement iterator.
    pub coef: Vec<i64>,
}

/// A recognised GEMM statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gemm {
    /// The update statement.
    pub stmt: usize,
    /// The `+=!` init statement just before it that sets `C` to zero, folded into the
    /// first accumulation (overwrite instead of accumulate).
    pub init: Option<usize>,
    /// The output tensor.
    pub c: usize,
    /// The operand holding `i` and `k`.
    pub a: usize,
    /// The operand holding `k` and `j`.
    pub b: usize,
    /// Iterator positions of `i`, `j`, `k`.
    pub i: usize,
    /// See [`Gemm::i`].
    pub j: usize,
    /// See [`Gemm::i`].
    pub k: usize,
    /// The batch iterators (positions), outermost first.
    pub batch: Vec<usize>,
    /// Per iterator: `[lo, hi)`.
    pub bounds: Vec<(i64, i64)>,
    /// Flat offsets of the three accesses.
    pub a_off: Lin,
    /// See [`Gemm::a_off`].
    pub b_off: Lin,
    /// See [`Gemm::a_off`].
    pub c_off: Lin,
    /// `A` is stored `k`-major (its DRAM rows run along `i`).
    pub a_transposed: bool,
    /// `B` is stored `j`-major (its DRAM rows run along `k`).
    pub b_transposed: bool,
}

impl Gemm {
    /// The extent of iterator `t`.
    pub fn extent(&self, t: usize) -> i64 {
        self.bounds[t].1 - self.bounds[t].0
    }
    /// Whether the program runs output-stationary: when both operands are stored
    /// transposed, which the weight-stationary dataflow cannot read.
    pub fn os(&self) -> bool {
        self.a_transposed && self.b_transposed
    }
    /// Multiply-accumulates of the statement.
    pub fn macs(&self) -> u64 {
        self.bounds
            .iter()
            .map(|(l, h)| (h - l).max(0) as u64)
            .product()
    }
}

/// `a` as `(c, coef)` over `n` iterators with the sizes `p`, or `None` (floordiv/mod).
fn linearize(a: &Aff, n: usize, p: &[i64]) -> Option<(i64, Vec<i64>)> {
    Some(match a {
        Aff::Const(c) => (*c, vec![0; n]),
        Aff::Iter(i) => {
            let mut v = vec![0; n];
            v[*i] = 1;
            (0, v)
        }
        Aff::Param(q) => (p[*q], vec![0; n]),
        Aff::Add(x, y) | Aff::Sub(x, y) => {
            let (cx, vx) = linearize(x, n, p)?;
            let (cy, vy) = linearize(y, n, p)?;
            let s = if matches!(a, Aff::Add(..)) { 1 } else { -1 };
            let v = vx.iter().zip(&vy).map(|(a, b)| a + s * b).collect();
            (cx + s * cy, v)
        }
        Aff::Mul(c, x) => {
            let (cx, vx) = linearize(x, n, p)?;
            (c * cx, vx.iter().map(|v| c * v).collect())
        }
        Aff::Neg(x) => {
            let (cx, vx) = linearize(x, n, p)?;
            (-cx, vx.iter().map(|v| -v).collect())
        }
        Aff::FloorDiv(x, c) | Aff::Mod(x, c) => {
            let (cx, vx) = linearize(x, n, p)?;
            if vx.iter().any(|&v| v != 0) {
                return None;
            }
            if matches!(a, Aff::FloorDiv(..)) {
                (cx.div_euclid(*c), vx)
            } else {
                (cx.rem_euclid(*c), vx)
            }
        }
    })
}

/// One tensor dimension's index: a constant, or `coef · iter + c`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DimIndex {
    Const,
    Iter { iter: usize, coef: i64 },
}

/// Per dimension, the index's shape, and the access's flat offset.
fn access_form(
    prog: &Program,
    tensor: usize,
    index: &[Aff],
    n: usize,
    sizes: &[i64],
) -> Result<(Vec<DimIndex>, Lin), String> {
    let ten = &prog.tensors[tensor];
    let shape: Vec<i64> = ten.shape.iter().map(|a| a.eval(&[], sizes)).collect();
    let mut dims = Vec::new();
    let mut flat = Lin {
        c0: 0,
        coef: vec![0; n],
    };
    for (d, ix) in index.iter().enumerate() {
        let (c, coef) = linearize(ix, n, sizes).ok_or_else(|| {
            format!(
                "the index of dimension {d} of `{}` divides an iterator",
                ten.name
            )
        })?;
        let used: Vec<usize> = (0..n).filter(|&t| coef[t] != 0).collect();
        let di = match used.as_slice() {
            [] => DimIndex::Const,
            [t] if coef[*t] > 0 => DimIndex::Iter {
                iter: *t,
                coef: coef[*t],
            },
            [_] => {
                return Err(format!(
                    "dimension {d} of `{}` runs backwards (negative coefficient)",
                    ten.name
                ))
            }
            _ => {
                return Err(format!(
                    "dimension {d} of `{}` is indexed by several iterators (a sliding window, which needs im2col)",
                    ten.name
                ))
            }
        };
        dims.push(di);
        let stride: i64 = shape[d + 1..].iter().product();
        flat.c0 += c * stride;
        for (f, c) in flat.coef.iter_mut().zip(&coef) {
            *f += c * stride;
        }
    }
    Ok((dims, flat))
}

fn dim_iter(d: &DimIndex) -> Option<(usize, i64)> {
    match d {
        DimIndex::Iter { iter, coef } => Some((*iter, *coef)),
        DimIndex::Const => None,
    }
}

/// The two reads of `X · Y` (through casts), if the expression is that.
fn product_reads(e: &Expr) -> bool {
    let read = |e: &Expr| {
        let mut x = e;
        while let Expr::Cast(_, inner) = x {
            x = inner;
        }
        matches!(x, Expr::Read { .. })
    };
    matches!(e, Expr::Bin(polyhedral::ir::BinOp::Mul, x, y) if read(x) && read(y))
}

/// Recognises statement `s` as a GEMM the array can run with operands of `elem` and
/// results of `acc`; the error says why not.
pub fn recognise(
    prog: &Program,
    scop: &Scop,
    s: usize,
    sizes: &[i64],
    elem: DType,
    acc: DType,
) -> Result<Gemm, String> {
    let st = &prog.stmts[s];
    let e = match &st.body {
        StmtBody::Update(AssignOp::Add, e) => e,
        StmtBody::Init(_) => return Err("an initialisation".into()),
        _ => return Err("not a `+=` accumulation".into()),
    };
    if !product_reads(e) {
        return Err("its right side is not a product of two tensor reads".into());
    }
    let n = st.iters.len();
    if n - st.n_lhs_iters != 1 {
        return Err(format!(
            "it has {} reduction iterators; the array reduces over exactly one",
            n - st.n_lhs_iters
        ));
    }
    let k = st.n_lhs_iters;
    let mut bounds = Vec::new();
    for it in &st.iters {
        let all = it.lower.iter().chain(&it.upper);
        if all.clone().any(|a| !a.is_param_only()) {
            return Err(format!(
                "the range of `{}` depends on another iterator (not a box)",
                it.name
            ));
        }
        let lo = it
            .lower
            .iter()
            .map(|a| a.eval(&[], sizes))
            .max()
            .unwrap_or(0);
        let hi = it
            .upper
            .iter()
            .map(|a| a.eval(&[], sizes))
            .min()
            .unwrap_or(0);
        if hi <= lo {
            return Err(format!("`{}` has an empty range", it.name));
        }
        bounds.push((lo, hi));
    }
    let c = st.lhs;
    if prog.tensors[c].dtype != acc || st.dtype != acc {
        return Err(format!(
            "its result is {}, but the accumulator holds {acc}",
            prog.tensors[c].dtype
        ));
    }
    let w = &scop.stmt_writes[s];
    let (cdims, c_off) = access_form(prog, c, &w.index, n, sizes)?;
    let reads: Vec<_> = scop.stmt_reads[s]
        .iter()
        .filter(|r| !(r.tensor == c && r.index == w.index))
        .collect();
    if reads.len() != 2 {
        return Err("it does not read exactly two operands besides its result".into());
    }
    if reads.iter().any(|r| r.tensor == c) {
        return Err(format!(
            "it reads `{}`, which it writes",
            prog.tensors[c].name
        ));
    }
    for r in &reads {
        if prog.tensors[r.tensor].dtype != elem {
            return Err(format!(
                "operand `{}` is {}, but the scratchpad holds {elem}",
                prog.tensors[r.tensor].name, prog.tensors[r.tensor].dtype
            ));
        }
    }
    // Each operand: its dims' iterators.
    let mut forms = Vec::new();
    for r in &reads {
        let (dims, off) = access_form(prog, r.tensor, &r.index, n, sizes)?;
        forms.push((r.tensor, dims, off));
    }
    if cdims.len() < 2 {
        return Err(format!(
            "`{}` has fewer than two dimensions",
            prog.tensors[c].name
        ));
    }
    let (j, jc) = dim_iter(&cdims[cdims.len() - 1])
        .ok_or_else(|| format!("the last index of `{}` is a constant", prog.tensors[c].name))?;
    if jc != 1 {
        return Err(format!(
            "the last index of `{}` is strided",
            prog.tensors[c].name
        ));
    }
    let (i, _) = dim_iter(&cdims[cdims.len() - 2]).ok_or_else(|| {
        format!(
            "the second-to-last index of `{}` is a constant",
            prog.tensors[c].name
        )
    })?;
    let mut batch = Vec::new();
    for d in &cdims[..cdims.len() - 2] {
        if let Some((t, _)) = dim_iter(d) {
            batch.push(t);
        }
    }
    let mut used = batch.clone();
    used.extend([i, j]);
    used.sort_unstable();
    used.dedup();
    if used.len() != batch.len() + 2 || used.len() != st.n_lhs_iters {
        return Err(format!(
            "`{}` repeats an iterator across its dimensions",
            prog.tensors[c].name
        ));
    }
    let holds =
        |dims: &[DimIndex], t: usize| dims.iter().any(|d| dim_iter(d).map(|x| x.0) == Some(t));
    let (ai, bi) = if holds(&forms[0].1, i) {
        (0, 1)
    } else {
        (1, 0)
    };
    let (a, adims, a_off) = forms[ai].clone();
    let (b, bdims, b_off) = forms[bi].clone();
    let name = |t: usize| prog.tensors[t].name.clone();
    if !holds(&adims, i) || !holds(&adims, k) || holds(&adims, j) {
        return Err(format!(
            "operand `{}` does not hold exactly the row and reduction iterators",
            name(a)
        ));
    }
    if !holds(&bdims, j) || !holds(&bdims, k) || holds(&bdims, i) {
        return Err(format!(
            "operand `{}` does not hold exactly the reduction and column iterators",
            name(b)
        ));
    }
    let last = |dims: &[DimIndex]| dims.last().and_then(dim_iter);
    let a_transposed = match last(&adims) {
        Some((t, 1)) if t == k => false,
        Some((t, 1)) if t == i => true,
        _ => {
            return Err(format!(
            "the last index of `{}` is neither its row nor its reduction iterator with stride 1",
            name(a)
        ))
        }
    };
    let b_transposed = match last(&bdims) {
        Some((t, 1)) if t == j => false,
        Some((t, 1)) if t == k => true,
        _ => {
            return Err(format!(
            "the last index of `{}` is neither its reduction nor its column iterator with stride 1",
            name(b)
        ))
        }
    };
    for (t, dims) in [(a, &adims), (b, &bdims)] {
        for d in dims {
            if let Some((it, _)) = dim_iter(d) {
                if it != i && it != j && it != k && !batch.contains(&it) {
                    return Err(format!(
                        "`{}` is indexed by an unexpected iterator",
                        name(t)
                    ));
                }
            }
        }
        let mut seen: Vec<usize> = dims.iter().filter_map(dim_iter).map(|x| x.0).collect();
        let before = seen.len();
        seen.sort_unstable();
        seen.dedup();
        if seen.len() != before {
            return Err(format!(
                "`{}` repeats an iterator across its dimensions",
                name(t)
            ));
        }
    }
    let init = s.checked_sub(1).filter(|&p| {
        let ps = &prog.stmts[p];
        matches!(ps.body, StmtBody::Init(AssignOp::Add))
            && ps.lhs == c
            && ps.lhs_index == st.lhs_index
            && ps.iters.len() == st.n_lhs_iters
            && ps
                .iters
                .iter()
                .zip(&st.iters)
                .all(|(x, y)| x.lower == y.lower && x.upper == y.upper)
    });
    Ok(Gemm {
        stmt: s,
        init,
        c,
        a,
        b,
        i,
        j,
        k,
        batch,
        bounds,
        a_off,
        b_off,
        c_off,
        a_transposed,
        b_transposed,
    })
}
