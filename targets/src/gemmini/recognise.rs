//! Recognising the contractions the systolic array runs (GEMMs and convolutions), from the
//! polyhedral model's access relations (never from names).
//!
//! A statement is run by the array when:
//! - it is `C[…] += X[…] · Y[…]` (an `Add` update whose right side multiplies two reads),
//!   with `C` in the accumulator's element type and `X`, `Y` in the scratchpad's;
//! - every left-hand iterator ranges over a box whose bounds are bound sizes, and so does
//!   every reduction iterator, except that a reduction iterator that is not the array's
//!   reduction may also have bounds that depend on the left-hand iterators (padding:
//!   [`Guard`]s);
//! - `C` holds each left-hand iterator in its own dimension; the operands may use any
//!   affine index (a sliding window `2·ow + kw` included): only their flat offsets
//!   `c0 + Σ coef[t] · t` matter;
//! - some choice of rows `i` and columns `j` among the left-hand iterators (`j` may be
//!   the unit column: one element per row) and of the reduction `k` among the reduction
//!   iterators has `C` contiguous along `j`, one operand (`A`) holding `i` and `k` but not
//!   `j`, the other (`B`) `k` and `j` but not `i`, each contiguous along one of its two
//!   (stored as is, or transposed). The plain reading (`j` = `C`'s last index, `i` the one
//!   before) is tried first; else the choice that uses most of the DIM×DIM array.
//!
//! The other left-hand iterators are batch loops; the other reduction iterators are filter
//! offsets (implicit im2col: per offset, strided `mvin` rows of the operands, accumulated).

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

/// A bound of a filter offset that depends on the left-hand iterators (padding):
/// `iter >= bound` (lower) or `iter < bound` (upper).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Guard {
    /// The filter offset (an iterator of [`Gemm::outer`]).
    pub iter: usize,
    /// A lower bound (else an upper one).
    pub lower: bool,
    /// The bound, over the left-hand iterators.
    pub bound: Lin,
}

/// A folded `C(…) = X(…)`: the accumulator starts from `X`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Preload {
    /// The folded statement.
    pub stmt: usize,
    /// The tensor read.
    pub tensor: usize,
    /// Its flat offset over the GEMM statement's iterators (and the unit column).
    pub off: Lin,
}

/// The scale an `mvout` from the accumulator applies (`config_st`'s `acc_scale`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AccScale {
    /// A constant (1 for a plain `sat_i8`).
    Lit(f32),
    /// A scalar input of the program (its value as f32).
    Scalar(usize),
}

/// A fused `Q(…) = sat_i8(relu(C(…)))` (or `sat_i8(C(…))`), or a requantisation
/// `sat_i8(C(…) * s)`, `sat_i8(relu(C(…) * s))`, `sat_i8(relu(C(…)) * s)` (the last with a
/// literal `s ≥ 0`, where the ReLU before or after the scaling gives the same value).
#[derive(Clone, Debug, PartialEq)]
pub struct Epilogue {
    /// The fused statement.
    pub stmt: usize,
    /// The int8 tensor written.
    pub tensor: usize,
    /// Its flat offset over the GEMM statement's iterators (and the unit column).
    pub off: Lin,
    /// With the ReLU.
    pub relu: bool,
    /// The scale (`Lit(1.0)` without a requantisation).
    pub scale: AccScale,
}

/// A recognised GEMM statement.
#[derive(Clone, Debug, PartialEq)]
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
    /// The other reduction iterators (positions), outermost first: the filter offsets of
    /// a convolution. Per point of them, the operands are read through strided `mvin`
    /// rows (implicit im2col) and the products accumulate in the accumulator.
    pub outer: Vec<usize>,
    /// Bounds of the filter offsets that depend on the left-hand iterators (a padded
    /// convolution): per offset, the rows of `C` it reaches are a sub-range of each block,
    /// so the `mvin` and the compute cover only those rows (nothing is padded in DRAM),
    /// and the accumulator starts from zeros.
    pub guards: Vec<Guard>,
    /// A statement `C(…) = X(…)` just before the update (no init), folded into the
    /// accumulator's first contents: `X` is moved in with `mvin3` (a row stride of 0
    /// broadcasts one row, as for a bias).
    pub preload: Option<Preload>,
    /// A statement `Q(…) = sat_i8(relu(C(…)))` (or without the ReLU) just after the
    /// update, fused into the `mvout`: the rows leave the accumulator through Gemmini's
    /// scaling (identity scale, round and saturate to int8) and activation, into `Q`.
    pub epilogue: Option<Epilogue>,
    /// Per iterator: `[lo, hi)`, then the unit column `(0, 1)` at position
    /// `stmt.iters.len()` (what `j` is when each row of `C` has one element).
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
    let mut dims = Vec::new();
    for (d, ix) in index.iter().enumerate() {
        let (_, coef) = linearize(ix, n, sizes).ok_or_else(|| {
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
                    "dimension {d} of the result `{}` is indexed by several iterators (each dimension of the result must be one iterator)",
                    ten.name
                ))
            }
        };
        dims.push(di);
    }
    Ok((dims, flat_offset(prog, tensor, index, n, sizes)?))
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

/// The box each iterator of `st` runs over (a range made of sizes only, at `sizes`),
/// and the guards of a reduction iterator whose range also depends on the left-hand
/// iterators (a padded convolution's filter offsets); an error when a range is not a box.
#[allow(clippy::type_complexity)]
fn box_bounds(
    st: &polyhedral::ir::Stmt,
    n: usize,
    sizes: &[i64],
) -> Result<(Vec<(i64, i64)>, Vec<Guard>), String> {
    let mut bounds = Vec::new();
    let mut guards = Vec::new();
    for (t, it) in st.iters.iter().enumerate() {
        let not_box = || {
            format!(
                "the range of `{}` depends on another iterator (not a box)",
                it.name
            )
        };
        // A reduction iterator's range may also depend on the left-hand iterators (a
        // padded convolution's filter offsets): those bounds become guards.
        for (lower, list) in [(true, &it.lower), (false, &it.upper)] {
            for a in list.iter().filter(|a| !a.is_param_only()) {
                let (c0, coef) = linearize(a, n, sizes).ok_or_else(not_box)?;
                if t < st.n_lhs_iters || coef[st.n_lhs_iters..].iter().any(|&x| x != 0) {
                    return Err(not_box());
                }
                guards.push(Guard {
                    iter: t,
                    lower,
                    bound: Lin { c0, coef },
                });
            }
        }
        let lo = it
            .lower
            .iter()
            .filter(|a| a.is_param_only())
            .map(|a| a.eval(&[], sizes))
            .max();
        let hi = it
            .upper
            .iter()
            .filter(|a| a.is_param_only())
            .map(|a| a.eval(&[], sizes))
            .min();
        // Without a bound made of sizes only on one side, there is no box to loop over.
        let (Some(lo), Some(hi)) = (lo, hi) else {
            return Err(not_box());
        };
        if hi <= lo {
            return Err(format!("`{}` has an empty range", it.name));
        }
        bounds.push((lo, hi));
    }
    Ok((bounds, guards))
}

/// The two operands of statement `s` besides its result, each with its flat offset (any
/// affine index, sliding windows included); an error unless there are exactly two, of
/// type `elem`, neither of them the result.
fn operand_forms(
    prog: &Program,
    scop: &Scop,
    s: usize,
    n: usize,
    sizes: &[i64],
    elem: DType,
) -> Result<Vec<(usize, Lin)>, String> {
    let c = prog.stmts[s].lhs;
    let w = &scop.stmt_writes[s];
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
    // Each operand: its flat offset (any affine index, sliding windows included).
    let mut forms = Vec::new();
    for r in &reads {
        let off = flat_offset(prog, r.tensor, &r.index, n, sizes)?;
        forms.push((r.tensor, off));
    }
    Ok(forms)
}

/// The best way to run the statement on the array: over every (rows, columns)
/// pair of left-hand iterators (or the unit column) and every reduction iterator that runs
/// over a box, array use first, then operands read as stored; the canonical assignment
/// (`j` the result's last index, `i` the one before) wins when it works.
#[allow(clippy::too_many_arguments)]
fn best_candidate(
    n_lhs: usize,
    reductions: &[usize],
    unit: usize,
    guards: &[Guard],
    c_off: &Lin,
    forms: &[(usize, Lin)],
    canonical: Option<(usize, usize)>,
    ext: &dyn Fn(usize) -> i64,
    dim: i64,
) -> Option<(i64, Cand)> {
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for j in (0..n_lhs).chain([unit]) {
        for i in 0..n_lhs {
            if i != j && !pairs.contains(&(i, j)) {
                pairs.push((i, j));
            }
        }
    }
    let mut best: Option<(i64, Cand)> = None;
    for (i, j) in pairs {
        for &k in reductions {
            // The reduction runs over a box; the guards may restrict rows, not columns.
            if guards
                .iter()
                .any(|g| g.iter == k || (j != unit && g.bound.coef[j] != 0))
            {
                continue;
            }
            let Some(mut cand) = assign(c_off, forms, i, j, k, unit) else {
                continue;
            };
            if !guards.is_empty() && cand.a_transposed && cand.b_transposed {
                continue;
            }
            let d = dim.max(1);
            // Array use first; then operands read as stored rather than transposed.
            let mut score = (ext(i).min(d) * ext(j).min(d) * ext(k).min(d)) * 4
                + 2 * i64::from(!cand.a_transposed)
                + i64::from(!cand.b_transposed);
            if canonical == Some((i, j)) {
                cand.canonical = true;
                score += i64::MAX / 2;
            }
            if best.as_ref().is_none_or(|b| score > b.0) {
                best = Some((score, cand));
            }
        }
    }
    best
}

/// The statement just before `s` that Gemmini folds into it, over the same points of
/// `C`: an initialisation `C(…) = 0` (`init`), or `C(…) = X(…)`, whose `X` goes straight
/// into the accumulator (`preload`).
fn folded_before(
    prog: &Program,
    scop: &Scop,
    s: usize,
    n: usize,
    sizes: &[i64],
    acc: DType,
    (i, j, unit): (usize, usize, usize),
) -> (Option<usize>, Option<Preload>) {
    let st = &prog.stmts[s];
    let c = st.lhs;
    // The statement just before, over the same points of `C`.
    let same_points = |p: usize| {
        let ps = &prog.stmts[p];
        ps.lhs == c
            && ps.lhs_index == st.lhs_index
            && ps.iters.len() == st.n_lhs_iters
            && ps
                .iters
                .iter()
                .zip(&st.iters)
                .all(|(x, y)| x.lower == y.lower && x.upper == y.upper)
    };
    let init = s
        .checked_sub(1)
        .filter(|&p| matches!(prog.stmts[p].body, StmtBody::Init(AssignOp::Add)) && same_points(p));
    // `C(…) = X(…)` just before a plain `+=`: `X` goes straight into the accumulator.
    let preload = match s.checked_sub(1) {
        Some(p) if init.is_none() && same_points(p) => {
            preload_of(prog, scop, p, c, n, sizes, acc, i, j, unit)
        }
        _ => None,
    };
    (init, preload)
}

/// The result must index each left-hand iterator in one dimension of its own.
fn check_result_dims(
    prog: &Program,
    c: usize,
    cdims: &[DimIndex],
    n_lhs: usize,
) -> Result<(), String> {
    let mut lhs_used: Vec<usize> = cdims.iter().filter_map(dim_iter).map(|x| x.0).collect();
    let before = lhs_used.len();
    lhs_used.sort_unstable();
    lhs_used.dedup();
    if lhs_used.len() != before || lhs_used.len() != n_lhs {
        return Err(format!(
            "`{}` repeats an iterator across its dimensions",
            prog.tensors[c].name
        ));
    }
    Ok(())
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
    dim: i64,
) -> Result<Gemm, String> {
    let st = &prog.stmts[s];
    let e = match &st.body {
        StmtBody::Update(AssignOp::Add, e) => e,
        StmtBody::Init(_) => return Err("an initialisation".into()),
        _ => {
            return Err(
                "not a `+=` accumulation of products (the array runs `C += A·B`; the only element-wise work Gemmini does is its mvout's ReLU, scaling and saturation to int8)"
                    .into(),
            )
        }
    };
    // `C(…) +=! cast<i32>(A(…) * B(…))` (how an int32 temporary is typed): a cast to the
    // statement's own type is the identity.
    let e = match e {
        Expr::Cast(t, inner)
            if *t == st.dtype
                && matches!(st.dtype, DType::I32 | DType::I64 | DType::F32 | DType::F64) =>
        {
            inner.as_ref()
        }
        other => other,
    };
    if !product_reads(e) {
        return Err("its right side is not a product of two tensor reads".into());
    }
    let n = st.iters.len();
    if n == st.n_lhs_iters {
        return Err("it has no reduction iterator".into());
    }
    let (mut bounds, mut guards) = box_bounds(st, n, sizes)?;
    let c = st.lhs;
    if prog.tensors[c].dtype != acc || st.dtype != acc {
        return Err(format!(
            "its result is {}, but the accumulator holds {acc}",
            prog.tensors[c].dtype
        ));
    }
    let w = &scop.stmt_writes[s];
    let (cdims, c_off) = access_form(prog, c, &w.index, n, sizes)?;
    let mut forms = operand_forms(prog, scop, s, n, sizes, elem)?;
    if cdims.is_empty() {
        return Err(format!("`{}` is a scalar", prog.tensors[c].name));
    }
    check_result_dims(prog, c, &cdims, st.n_lhs_iters)?;
    // The unit column: a pseudo-iterator at position `n` with one point, which no access
    // uses (a result with one column per row).
    let unit = n;
    let mut c_off = c_off;
    c_off.coef.push(0);
    for f in &mut forms {
        f.1.coef.push(0);
    }
    bounds.push((0, 1));
    let ext = |t: usize| bounds[t].1 - bounds[t].0;
    // The canonical assignment first (`j` = the result's last index, `i` the one before),
    // then every other one, best array use first.
    let last_iter = |k: usize| cdims.get(cdims.len().wrapping_sub(k)).and_then(dim_iter);
    let canonical = match (last_iter(2), last_iter(1)) {
        (Some((i, _)), Some((j, 1))) => Some((i, j)),
        _ => None,
    };
    let reductions: Vec<usize> = (st.n_lhs_iters..n).collect();
    let best = best_candidate(
        st.n_lhs_iters,
        &reductions,
        unit,
        &guards,
        &c_off,
        &forms,
        canonical,
        &ext,
        dim,
    );
    let Some((_, cand)) = best else {
        if let Some(g) = guards.first() {
            if reductions
                .iter()
                .all(|r| guards.iter().any(|g| g.iter == *r))
            {
                return Err(format!(
                    "the range of `{}` depends on another iterator (not a box)",
                    st.iters[g.iter].name
                ));
            }
        }
        return Err(why_not(
            prog,
            &c_off,
            &forms,
            st.n_lhs_iters,
            n,
            &st.iter_names(),
        ));
    };
    let Cand {
        i,
        j,
        k,
        a_first,
        a_transposed,
        b_transposed,
        ..
    } = cand;
    let ((a, a_off), (b, b_off)) = if a_first {
        (forms[0].clone(), forms[1].clone())
    } else {
        (forms[1].clone(), forms[0].clone())
    };
    let batch: Vec<usize> = (0..st.n_lhs_iters).filter(|&t| t != i && t != j).collect();
    let outer: Vec<usize> = reductions.iter().copied().filter(|&t| t != k).collect();
    let (init, preload) = folded_before(prog, scop, s, n, sizes, acc, (i, j, unit));
    for g in &mut guards {
        g.bound.coef.push(0);
    }
    let epilogue = epilogue_of(prog, scop, s, n, sizes, elem, i, j, unit);
    Ok(Gemm {
        epilogue,
        guards,
        preload,
        outer,
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

/// One way to run a statement on the array: which iterators are the rows, columns and
/// reduction, and which operand is `A`.
#[derive(Clone, Copy, Debug)]
struct Cand {
    i: usize,
    j: usize,
    k: usize,
    a_first: bool,
    a_transposed: bool,
    b_transposed: bool,
    canonical: bool,
}

/// Whether rows `i`, columns `j` (maybe the unit column) and reduction `k` fit the array:
/// `C`'s rows contiguous along `j`, one operand (`A`) holding `i` and `k` but not `j`, the
/// other (`B`) `k` and `j` but not `i`, each contiguous along one of its two.
fn assign(
    c: &Lin,
    forms: &[(usize, Lin)],
    i: usize,
    j: usize,
    k: usize,
    unit: usize,
) -> Option<Cand> {
    if c.coef[i] <= 0 || (j != unit && c.coef[j] != 1) {
        return None;
    }
    for a_first in [true, false] {
        let (a, b) = if a_first {
            (&forms[0].1, &forms[1].1)
        } else {
            (&forms[1].1, &forms[0].1)
        };
        if a.coef[i] <= 0 || a.coef[k] <= 0 || a.coef[j] != 0 {
            continue;
        }
        if b.coef[k] <= 0 || b.coef[i] != 0 || (j != unit && b.coef[j] <= 0) {
            continue;
        }
        let a_transposed = if a.coef[k] == 1 {
            false
        } else if a.coef[i] == 1 {
            true
        } else {
            continue;
        };
        let b_transposed = if j == unit || b.coef[j] == 1 {
            false
        } else if b.coef[k] == 1 {
            true
        } else {
            continue;
        };
        return Some(Cand {
            i,
            j,
            k,
            a_first,
            a_transposed,
            b_transposed,
            canonical: false,
        });
    }
    None
}

/// Why no assignment fits, in the terms of the statement.
fn why_not(
    prog: &Program,
    c: &Lin,
    forms: &[(usize, Lin)],
    n_lhs: usize,
    n: usize,
    names: &[String],
) -> String {
    let name = |t: usize| prog.tensors[t].name.clone();
    // An iterator of the result that indexes both operands: no product pairs rows with
    // columns through it (a depthwise convolution when it is the channel).
    if let Some(t) = (0..n_lhs).find(|&t| c.coef[t] != 0 && forms.iter().all(|f| f.1.coef[t] != 0))
    {
        return format!(
            "`{}` indexes the result and both operands (`{}`, `{}`): nothing is reduced across it (a depthwise convolution when it is the channel), so it can be neither the array's rows nor its columns, and no other assignment reads contiguous DRAM rows; mapping it onto the array would need a diagonal weight block laid out in DRAM (a copy)",
            names[t],
            name(forms[0].0),
            name(forms[1].0)
        );
    }
    if (n_lhs..n).all(|k| forms.iter().all(|f| f.1.coef[k] != 1)) {
        return format!(
            "no reduction iterator has stride 1 in `{}` or `{}`, and no row iterator lets an operand be read transposed: the array's operand rows must be contiguous in DRAM",
            name(forms[0].0),
            name(forms[1].0)
        );
    }
    format!(
        "no choice of rows, columns and reduction among its iterators reads `{}` and `{}` and writes the result in contiguous DRAM rows",
        name(forms[0].0),
        name(forms[1].0)
    )
}

/// The flat element offset of an access with any affine indices (several iterators in one
/// dimension, as a sliding window has), or why not.
fn flat_offset(
    prog: &Program,
    tensor: usize,
    index: &[Aff],
    n: usize,
    sizes: &[i64],
) -> Result<Lin, String> {
    let ten = &prog.tensors[tensor];
    let shape: Vec<i64> = ten.shape.iter().map(|a| a.eval(&[], sizes)).collect();
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
        let stride: i64 = shape[d + 1..].iter().product();
        flat.c0 += c * stride;
        for (f, c) in flat.coef.iter_mut().zip(&coef) {
            *f += c * stride;
        }
    }
    Ok(flat)
}

/// Statement `p`, `C(…) = X(…)` over the points of `C`, as a preload of the accumulator:
/// `X` in the accumulator's type, read along `j` contiguously (or one element per row),
/// along `i` with any non-negative stride, and over the batch iterators.
#[allow(clippy::too_many_arguments)]
fn preload_of(
    prog: &Program,
    scop: &Scop,
    p: usize,
    c: usize,
    n: usize,
    sizes: &[i64],
    acc: DType,
    i: usize,
    j: usize,
    unit: usize,
) -> Option<Preload> {
    let ps = &prog.stmts[p];
    let StmtBody::Update(AssignOp::Assign, Expr::Read { .. }) = &ps.body else {
        return None;
    };
    let reads = &scop.stmt_reads[p];
    let [r] = reads.as_slice() else {
        return None;
    };
    if r.tensor == c || prog.tensors[r.tensor].dtype != acc {
        return None;
    }
    let mut off = flat_offset(prog, r.tensor, &r.index, ps.iters.len(), sizes).ok()?;
    off.coef.resize(n + 1, 0);
    if off.coef[i] < 0 || (j != unit && off.coef[j] != 1) {
        return None;
    }
    if off.coef.iter().any(|&x| x < 0) {
        return None;
    }
    Some(Preload {
        stmt: p,
        tensor: r.tensor,
        off,
    })
}

/// Statement `s + 1` as an epilogue of the GEMM `s` that `mvout` can apply: `Q(…) =
/// sat_i8(relu(C(…)))` or `sat_i8(C(…))` over the points of `C`, with `C` a temporary
/// that no other statement uses and `Q` in the scratchpad's type (int8), contiguous along
/// `j` (or one element per row).
#[allow(clippy::too_many_arguments)]
fn epilogue_of(
    prog: &Program,
    scop: &Scop,
    s: usize,
    n: usize,
    sizes: &[i64],
    elem: DType,
    i: usize,
    j: usize,
    unit: usize,
) -> Option<Epilogue> {
    use polyhedral::ir::TensorRole;
    let st = &prog.stmts[s];
    let c = st.lhs;
    let p = s + 1;
    let ps = prog.stmts.get(p)?;
    if prog.tensors[c].role != TensorRole::Temp || ps.lhs == c {
        return None;
    }
    let StmtBody::Update(AssignOp::Assign, rhs) = &ps.body else {
        return None;
    };
    let (relu, inner, scale) = epilogue_form(rhs)?;
    let Expr::Read { tensor, index, .. } = inner else {
        return None;
    };
    if *tensor != c || *index != st.lhs_index {
        return None;
    }
    if ps.iters.len() != st.n_lhs_iters
        || !ps
            .iters
            .iter()
            .zip(&st.iters)
            .all(|(x, y)| x.lower == y.lower && x.upper == y.upper)
    {
        return None;
    }
    let q = ps.lhs;
    if prog.tensors[q].dtype != elem {
        return None;
    }
    // Nothing else touches `C`: its init or preload, the update and the epilogue only.
    let uses_c =
        |t: usize| prog.stmts[t].lhs == c || scop.stmt_reads[t].iter().any(|r| r.tensor == c);
    if (0..prog.stmts.len()).any(|t| t != s && t != p && t + 1 != s && uses_c(t)) {
        return None;
    }
    let mut off = flat_offset(prog, q, &ps.lhs_index, ps.iters.len(), sizes).ok()?;
    off.coef.resize(n + 1, 0);
    if off.coef[i] <= 0 || (j != unit && off.coef[j] != 1) || off.coef.iter().any(|&x| x < 0) {
        return None;
    }
    Some(Epilogue {
        stmt: p,
        tensor: q,
        off,
        relu,
        scale,
    })
}

/// The scale of a requantisation's second argument.
fn acc_scale(e: &Expr) -> Option<AccScale> {
    match e {
        Expr::Lit(v) => Some(AccScale::Lit(*v as f32)),
        Expr::Scalar(k) => Some(AccScale::Scalar(*k)),
        _ => None,
    }
}

/// The right side of an epilogue `mvout` computes, as (ReLU, the value read, scale):
/// `sat_i8(x)`, `sat_i8(relu(x))` (scale 1), `requant_i8(x, s)` (`sat_i8(x * s)`),
/// `relu(requant_i8(x, s))` (`sat_i8(relu(x * s))`: Gemmini's order, scale then
/// activation), and `requant_i8(relu(x), s)` with a literal `s ≥ 0` (then the same value).
pub(crate) fn epilogue_form(rhs: &Expr) -> Option<(bool, &Expr, AccScale)> {
    use polyhedral::ir::Func;
    fn relu_of(e: &Expr) -> Option<&Expr> {
        match e {
            Expr::Call(Func::Relu, a) if a.len() == 1 => Some(&a[0]),
            _ => None,
        }
    }
    match rhs {
        Expr::Call(Func::SatI8, args) if args.len() == 1 => Some(match relu_of(&args[0]) {
            Some(x) => (true, x, AccScale::Lit(1.0)),
            None => (false, &args[0], AccScale::Lit(1.0)),
        }),
        Expr::Call(Func::RequantI8, args) if args.len() == 2 => {
            let scale = acc_scale(&args[1])?;
            match (relu_of(&args[0]), scale) {
                (Some(x), AccScale::Lit(v)) if v >= 0.0 => Some((true, x, scale)),
                (Some(_), _) => None,
                (None, _) => Some((false, &args[0], scale)),
            }
        }
        Expr::Call(Func::Relu, a) if a.len() == 1 => match &a[0] {
            Expr::Call(Func::RequantI8, args) if args.len() == 2 => {
                Some((true, &args[0], acc_scale(&args[1])?))
            }
            _ => None,
        },
        _ => None,
    }
}
