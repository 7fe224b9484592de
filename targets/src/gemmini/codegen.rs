//! The instruction program of a recognised GEMM, as kernel IR: host loops over tiles, and
//! Gemmini instructions as [`KNode::Intrinsic`] calls of `gemmini.h`'s macros.
//!
//! The weight-stationary dataflow. For each batch index and each `TI × TJ` tile of `C`
//! (kept in the accumulator while the reduction runs), for each `TK`-deep step of the
//! reduction: the `TI × TK` tile of `A` and the `TK × TJ` tile of `B` move into the
//! scratchpad in blocks of `DIM × DIM` (one `mvin` per block, with the block's real rows and
//! columns: nothing is padded in DRAM); then, per `DIM`-wide block column `jj` and block
//! row `kk` of `B`, one `preload` of the weights and one `compute` per block row `ii` of
//! `A` accumulate into the `C` block. After the reduction, one `mvout` per `C` block stores
//! the raw `int32` rows. A `+=!` init is folded: the first step overwrites the accumulator
//! rows instead of accumulating. Without an init, the `C` tile is first moved into the
//! accumulator (`mvin3`).
//!
//! When both operands are stored transposed (which the weight-stationary dataflow cannot
//! read), the program runs output-stationary: per `C` block, the step's `k` blocks
//! accumulate in the PEs and the last compute writes the accumulator.
//!
//! Convolutions: the filter offsets (reduction iterators other than `k`) are host loops
//! around the reduction steps; per offset the operand blocks are read straight from the
//! tensors with the offset's base and the row iterator's stride (implicit im2col), and
//! the products keep accumulating. With padding (offset bounds that depend on the output
//! position), per offset each block's `mvin` and compute cover only the rows the offset
//! reaches, every reached block preloads its weights, and the accumulator starts from
//! zeros (`mvin3` from DRAM address 0). A folded `C(…) = X(…)` moves `X` into the
//! accumulator instead of `C` (a bias with row stride 0).
//!
//! Memory is allocated per bank: the `A` tiles take the first half of the scratchpad
//! banks, the `B` tiles the second half; when a tile fits one bank, consecutive reduction
//! steps alternate between two banks (double buffering). The accumulator's `C` tiles
//! alternate between its banks the same way when one tile fits one bank.

use crate::codegen::kir::{Intrinsic, IntrinsicArg, KCmp, KExpr, KNode};

use super::model::{ACCUMULATE_BIT, ACC_BIT, FULL_ACC_BIT, GARBAGE_ADDR};
use super::recognise::{AccScale, Gemm, Lin};

/// The Gemmini sizes the code generator needs (from the target description).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// DIM.
    pub dim: i64,
    /// Scratchpad banks.
    pub sp_banks: i64,
    /// Rows per scratchpad bank.
    pub sp_bank_rows: i64,
    /// Accumulator banks.
    pub acc_banks: i64,
    /// Rows per accumulator bank.
    pub acc_bank_rows: i64,
    /// Bytes of a scratchpad element (`elem_t`: 1 for int8, 4 for f32).
    pub elem_bytes: i64,
    /// Bytes of an accumulator element (`acc_t`: 4 for int32 and f32).
    pub acc_bytes: i64,
}

/// Tile sizes, in elements (multiples of DIM).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tiles {
    /// Rows of the `C` tile (along `i`).
    pub ti: i64,
    /// Columns of the `C` tile (along `j`).
    pub tj: i64,
    /// Depth of a reduction step (along `k`).
    pub tk: i64,
}

/// Where the tiles live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Scratchpad rows of one `A` tile.
    pub a_rows: i64,
    /// Scratchpad rows of one `B` tile.
    pub b_rows: i64,
    /// Accumulator rows of one `C` tile.
    pub c_rows: i64,
    /// `A` and `B` alternate between two banks each.
    pub sp_double: bool,
    /// `C` alternates between two accumulator banks (or the two halves of a lone bank).
    pub acc_double: bool,
}

impl Geometry {
    /// The rows of one of the two halves `C` tiles alternate between when double-buffered:
    /// a bank when the accumulator has two or more, else half of its one bank (Gemmini's
    /// float configuration).
    pub fn acc_slot_rows(&self) -> i64 {
        if self.acc_banks >= 2 {
            self.acc_bank_rows
        } else {
            self.acc_bank_rows / 2
        }
    }
    /// Where tiles of these sizes go, or why they do not fit.
    pub fn place(&self, t: &Tiles) -> Result<Placement, String> {
        if self.dim < 1 {
            return Err(format!("the array is {0} x {0}", self.dim));
        }
        let d = self.dim;
        let (nib, njb, nkb) = (t.ti / d, t.tj / d, t.tk / d);
        let a_rows = nib * nkb * d;
        let b_rows = nkb * njb * d;
        let c_rows = nib * njb * d;
        let half = (self.sp_banks / 2).max(1);
        let sp_double =
            self.sp_banks >= 4 && a_rows <= self.sp_bank_rows && b_rows <= self.sp_bank_rows;
        if !sp_double && (a_rows > half * self.sp_bank_rows || b_rows > half * self.sp_bank_rows) {
            return Err(format!(
                "the A tile needs {a_rows} scratchpad rows and the B tile {b_rows}, but each has half of the scratchpad, {} rows",
                half * self.sp_bank_rows
            ));
        }
        let acc_double = c_rows <= self.acc_slot_rows();
        if c_rows > self.acc_banks * self.acc_bank_rows {
            return Err(format!(
                "the C tile needs {c_rows} accumulator rows, but the accumulator has {}",
                self.acc_banks * self.acc_bank_rows
            ));
        }
        Ok(Placement {
            a_rows,
            b_rows,
            c_rows,
            sp_double,
            acc_double,
        })
    }

    /// Gemmini's own rule (`tiled_matmul_auto`): starting from one DIM block each, grow
    /// the `I`, `J` and `K` tiles in turn by DIM while the double-buffered tiles still
    /// fit and the tile does not pass the (rounded-up) extent.
    pub fn default_tiles(&self, g: &Gemm) -> Tiles {
        // (A geometry from a description has DIM >= 1; one built in code is not divided by
        // zero.)
        let d = self.dim.max(1);
        let cap = |e: i64| (e + d - 1) / d * d;
        let (ci, cj, ck) = (cap(g.extent(g.i)), cap(g.extent(g.j)), cap(g.extent(g.k)));
        let mut t = Tiles {
            ti: d,
            tj: d,
            tk: d,
        };
        let fits = |t: &Tiles| {
            self.place(t)
                .map(|p| p.sp_double && p.acc_double)
                .unwrap_or(false)
        };
        loop {
            let mut grew = false;
            for which in 0..3 {
                let mut n = t;
                match which {
                    0 if n.ti < ci => n.ti += d,
                    1 if n.tj < cj => n.tj += d,
                    2 if n.tk < ck => n.tk += d,
                    _ => continue,
                }
                if fits(&n) {
                    t = n;
                    grew = true;
                }
            }
            if !grew {
                return t;
            }
        }
    }
}

fn int(v: i64) -> KExpr {
    KExpr::Int(v)
}
fn var(n: &str) -> KExpr {
    KExpr::var(n)
}
fn add(a: KExpr, b: KExpr) -> KExpr {
    match (&a, &b) {
        (KExpr::Int(0), _) => b,
        (_, KExpr::Int(0)) => a,
        _ => KExpr::Add(Box::new(a), Box::new(b)),
    }
}
fn sub(a: KExpr, b: KExpr) -> KExpr {
    match &b {
        KExpr::Int(0) => a,
        _ => KExpr::Sub(Box::new(a), Box::new(b)),
    }
}
fn mul(a: KExpr, b: i64) -> KExpr {
    match b {
        0 => int(0),
        1 => a,
        _ => KExpr::Mul(Box::new(a), Box::new(int(b))),
    }
}
fn div(a: KExpr, b: i64) -> KExpr {
    if b == 1 {
        a
    } else {
        KExpr::Div(Box::new(a), Box::new(int(b)))
    }
}
fn min2(a: KExpr, b: KExpr) -> KExpr {
    KExpr::Min(vec![a, b])
}

/// `for (v = from; v < to; v += step)`.
fn for_lt(v: &str, from: KExpr, to: KExpr, step: i64, body: KNode) -> KNode {
    KNode::For {
        iter: v.to_string(),
        init: from,
        cond: KExpr::Cmp(KCmp::Lt, Box::new(var(v)), Box::new(to)),
        step,
        body: Box::new(body),
        kind: crate::codegen::kir::LoopKind::Seq,
    }
}

fn call(name: &str, args: Vec<IntrinsicArg>) -> KNode {
    KNode::Intrinsic(Intrinsic {
        name: name.to_string(),
        args,
    })
}
fn i(e: KExpr) -> IntrinsicArg {
    IntrinsicArg::Int(e)
}
fn named(name: &str, value: i64) -> IntrinsicArg {
    IntrinsicArg::Named {
        name: name.to_string(),
        value,
    }
}

/// The flat offset `lin` with iterator `t` replaced by the expressions in `at`.
fn offset(lin: &Lin, at: &[(usize, KExpr)]) -> KExpr {
    let mut e = int(lin.c0);
    for (t, x) in at {
        e = add(e, mul(x.clone(), lin.coef[*t]));
    }
    e
}

/// The whole instruction program of `g` with tiles `t` placed as `p`, as kernel IR.
/// `prefix` makes the loop variables unique within the kernel.
pub fn gemm_program(g: &Gemm, geo: &Geometry, t: &Tiles, p: &Placement, prefix: &str) -> KNode {
    let f = Frame::new(g, geo, t, prefix);
    let (a_addr, b_addr, c_row) = f.block_addresses(p);
    // Padding: per filter offset, the rows of the block it reaches, and whether the
    // offset reaches the batch point at all.
    let guards = guard_parts(g, &|s: &str| f.v(s));
    let rows = f.rows(&guards, &c_row);
    let (load_a, load_b) = f.loads(&rows, &a_addr, &b_addr);
    let computes = if g.os() {
        f.os_computes(&rows, a_addr, b_addr, f.c_addr_os(&c_row))
    } else {
        let c_addr = f.c_addr_ws(&rows, &c_row);
        f.ws_computes(&rows, a_addr, b_addr, c_addr)
    };
    let step_body = KNode::Block(vec![load_a, load_b, computes]);
    let k_loop = f.reduction_loops(step_body, guards.step);
    let body = f.tile_loops(&rows, c_row, k_loop);
    let mut prog = f.configs();
    prog.push(body);
    prog.push(call("gemmini_fence", vec![]));
    KNode::Block(prog)
}

/// What the steps of [`gemm_program`] share: the GEMM, the sizes, the loop variables'
/// names and the iterator substitutions of the batch and filter-offset loops.
struct Frame<'a> {
    g: &'a Gemm,
    geo: &'a Geometry,
    t: &'a Tiles,
    prefix: &'a str,
    /// DIM.
    d: i64,
    /// Bounds of `i`, `j`, `k`.
    bi: (i64, i64),
    bj: (i64, i64),
    bk: (i64, i64),
    /// The tile loops' variables.
    i0: String,
    j0: String,
    k0: String,
    /// The block loops' variables.
    ii: String,
    jj: String,
    kk: String,
    /// The batch iterators, each replaced by its host loop's variable.
    batch_at: Vec<(usize, KExpr)>,
    /// The filter offsets (the other reduction iterators): host loops around the
    /// reduction steps.
    outer_at: Vec<(usize, KExpr)>,
    /// The first point of the filter offsets (`None` without any).
    outer_first: Option<KExpr>,
}

/// The row counts of the blocks, with a padded convolution's row guards.
struct Rows {
    /// Rows of the `A` block (and of the `C` block).
    i_rows: KExpr,
    /// The first row of the block the filter offset reaches.
    i_start: KExpr,
    /// The rows the filter offset reaches (`i_rows` without guards).
    i_rows_step: KExpr,
    /// Whether the rows are guarded (a padded convolution's row bounds).
    row_guarded: bool,
    /// The accumulator row of the first reached row of the block.
    c_row_step: KExpr,
    /// Columns of the `B` and `C` blocks.
    j_cols: KExpr,
    /// Rows of the `B` block (columns of the `A` block).
    k_rows: KExpr,
}

impl Rows {
    /// `n` under the condition that the filter offset reaches some rows of the block
    /// (`n` itself without row guards).
    fn some_rows(&self, n: KNode) -> KNode {
        if self.row_guarded {
            KNode::If {
                cond: KExpr::Cmp(
                    KCmp::Gt,
                    Box::new(self.i_rows_step.clone()),
                    Box::new(int(0)),
                ),
                then: Box::new(n),
                els: None,
            }
        } else {
            n
        }
    }
}

impl<'a> Frame<'a> {
    /// The names and substitutions of `g`'s program with loop-variable prefix `prefix`.
    fn new(g: &'a Gemm, geo: &'a Geometry, t: &'a Tiles, prefix: &'a str) -> Self {
        let v = |s: &str| format!("{prefix}{s}");
        let batch_at: Vec<(usize, KExpr)> = g
            .batch
            .iter()
            .map(|&b| (b, var(&v(&format!("b{b}")))))
            .collect();
        let outer_at: Vec<(usize, KExpr)> = g
            .outer
            .iter()
            .map(|&r| (r, var(&v(&format!("r{r}")))))
            .collect();
        let outer_first = outer_at.iter().fold(None, |acc: Option<KExpr>, (r, x)| {
            let eq = KExpr::Cmp(KCmp::Eq, Box::new(x.clone()), Box::new(int(g.bounds[*r].0)));
            Some(match acc {
                None => eq,
                Some(a) => KExpr::And(Box::new(a), Box::new(eq)),
            })
        });
        Frame {
            g,
            geo,
            t,
            prefix,
            d: geo.dim,
            bi: g.bounds[g.i],
            bj: g.bounds[g.j],
            bk: g.bounds[g.k],
            i0: v("i0"),
            j0: v("j0"),
            k0: v("k0"),
            ii: v("ii"),
            jj: v("jj"),
            kk: v("kk"),
            batch_at,
            outer_at,
            outer_first,
        }
    }

    /// The loop variable `s`, made unique by the prefix.
    fn v(&self, s: &str) -> String {
        format!("{}{s}", self.prefix)
    }

    /// The batch and filter-offset substitutions, then `extra`.
    fn at(&self, extra: &[(usize, KExpr)]) -> Vec<(usize, KExpr)> {
        let mut all = self.batch_at.clone();
        all.extend(self.outer_at.iter().cloned());
        all.extend(extra.iter().cloned());
        all
    }

    /// `c` and the filter offsets at their first point.
    fn and_first(&self, c: KExpr) -> KExpr {
        match &self.outer_first {
            None => c,
            Some(f) => KExpr::And(Box::new(f.clone()), Box::new(c)),
        }
    }

    /// The rows of the block starting at `x` below `hi`: at most DIM.
    fn rows_left(&self, x: &str, hi: i64) -> KExpr {
        min2(int(self.d), sub(int(hi), var(x)))
    }

    /// The number of the block at `x` within the tile at `x0`.
    fn blk(&self, x: &str, x0: &str) -> KExpr {
        div(sub(var(x), var(x0)), self.d)
    }

    /// The end of the tile at `x0`: `min(x0 + tile, hi)`.
    fn end(&self, x0: &str, tile: i64, hi: i64) -> KExpr {
        min2(add(var(x0), int(tile)), int(hi))
    }

    /// `body` in the loop over the block rows `ii` of the `i` tile.
    fn over_ii(&self, body: KNode) -> KNode {
        let (i0, t) = (&self.i0, self.t);
        for_lt(
            &self.ii,
            var(i0),
            self.end(i0, t.ti, self.bi.1),
            self.d,
            body,
        )
    }

    /// `body` in the loop over the block columns `jj` of the `j` tile.
    fn over_jj(&self, body: KNode) -> KNode {
        let (j0, t) = (&self.j0, self.t);
        for_lt(
            &self.jj,
            var(j0),
            self.end(j0, t.tj, self.bj.1),
            self.d,
            body,
        )
    }

    /// `body` in the loop over the blocks `kk` of the reduction step.
    fn over_kk(&self, body: KNode) -> KNode {
        let (k0, t) = (&self.k0, self.t);
        for_lt(
            &self.kk,
            var(k0),
            self.end(k0, t.tk, self.bk.1),
            self.d,
            body,
        )
    }

    /// The scratchpad addresses of the `A` and `B` blocks and the accumulator row of the
    /// `C` block, with the banks placed as `p`.
    fn block_addresses(&self, p: &Placement) -> (KExpr, KExpr, KExpr) {
        let (g, geo, t, d) = (self.g, self.geo, self.t, self.d);
        let (bi, bj, bk) = (self.bi, self.bj, self.bk);
        let (njb, nkb) = (t.tj / d, t.tk / d);
        // Scratchpad bases: A in the first half of the banks, B in the second half; with
        // double buffering, the step's parity picks one of two banks.
        let half = (geo.sp_banks / 2).max(1) * geo.sp_bank_rows;
        // The step number: the filter offsets' point, then the reduction step.
        let k_steps = (bk.1 - bk.0 + t.tk - 1) / t.tk;
        let mut step = int(0);
        for (r, x) in &self.outer_at {
            step = add(mul(step, g.extent(*r)), sub(x.clone(), int(g.bounds[*r].0)));
        }
        let step = add(mul(step, k_steps), div(sub(var(&self.k0), int(bk.0)), t.tk));
        let step_parity = KExpr::Rem(Box::new(step), Box::new(int(2)));
        let (a_base, b_base) = if p.sp_double {
            (
                mul(step_parity.clone(), geo.sp_bank_rows),
                add(int(half), mul(step_parity, geo.sp_bank_rows)),
            )
        } else {
            (int(0), int(half))
        };
        let tile_parity = KExpr::Rem(
            Box::new(add(
                mul(
                    div(sub(var(&self.i0), int(bi.0)), t.ti),
                    (bj.1 - bj.0 + t.tj - 1) / t.tj,
                ),
                div(sub(var(&self.j0), int(bj.0)), t.tj),
            )),
            Box::new(int(2)),
        );
        let c_base = if p.acc_double {
            mul(tile_parity, geo.acc_slot_rows())
        } else {
            int(0)
        };
        // A block (ii, kk) lives at a_base + (bi·nkb + bk)·DIM; B block (kk, jj) at b_base +
        // (bk·njb + bj)·DIM; C block (ii, jj) at c_base + (bi·njb + bj)·DIM.
        let (ii, jj, kk) = (&self.ii, &self.jj, &self.kk);
        let (i0, j0, k0) = (&self.i0, &self.j0, &self.k0);
        let a_addr = add(
            a_base,
            mul(add(mul(self.blk(ii, i0), nkb), self.blk(kk, k0)), d),
        );
        let b_addr = add(
            b_base,
            mul(add(mul(self.blk(kk, k0), njb), self.blk(jj, j0)), d),
        );
        let c_row = add(
            c_base,
            mul(add(mul(self.blk(ii, i0), njb), self.blk(jj, j0)), d),
        );
        (a_addr, b_addr, c_row)
    }

    /// The row counts of the blocks, and the rows a padded convolution's filter offset
    /// reaches (`guards`); `c_row` is the `C` block's accumulator row.
    fn rows(&self, guards: &GuardParts, c_row: &KExpr) -> Rows {
        let (d, ii) = (self.d, &self.ii);
        let i_rows = self.rows_left(ii, self.bi.1);
        let row_guarded = !guards.i_lo.is_empty() || !guards.i_hi.is_empty();
        let i_start = if guards.i_lo.is_empty() {
            var(ii)
        } else {
            let mut v = vec![var(ii)];
            v.extend(guards.i_lo.iter().cloned());
            KExpr::Max(v)
        };
        let i_rows_step = if row_guarded {
            let mut v = vec![add(var(ii), int(d)), int(self.bi.1)];
            v.extend(guards.i_hi.iter().cloned());
            sub(KExpr::Min(v), i_start.clone())
        } else {
            i_rows.clone()
        };
        // The accumulator row of the first reached row of the block.
        let c_row_step = if row_guarded {
            add(c_row.clone(), sub(i_start.clone(), var(ii)))
        } else {
            c_row.clone()
        };
        Rows {
            i_rows,
            i_start,
            i_rows_step,
            row_guarded,
            c_row_step,
            j_cols: self.rows_left(&self.jj, self.bj.1),
            k_rows: self.rows_left(&self.kk, self.bk.1),
        }
    }

    /// The step's `mvin`s of the `A` and `B` blocks into the scratchpad at `a_addr` and
    /// `b_addr`.
    fn loads(&self, r: &Rows, a_addr: &KExpr, b_addr: &KExpr) -> (KNode, KNode) {
        let g = self.g;
        // mvin A: normal, a DRAM row is a row of A along k (rows = i); transposed, along i
        // (rows = k).
        let a_at = self.at(&[(g.i, r.i_start.clone()), (g.k, var(&self.kk))]);
        let (a_cols, a_rows_arg) = if g.a_transposed {
            (r.i_rows_step.clone(), r.k_rows.clone())
        } else {
            (r.k_rows.clone(), r.i_rows_step.clone())
        };
        let mvin_a = call(
            "gemmini_extended_mvin",
            vec![
                IntrinsicArg::Addr {
                    tensor: g.a,
                    offset: offset(&g.a_off, &a_at),
                },
                i(a_addr.clone()),
                i(a_cols),
                i(a_rows_arg),
            ],
        );
        let mvin_a = r.some_rows(mvin_a);
        let b_at = self.at(&[(g.k, var(&self.kk)), (g.j, var(&self.jj))]);
        let (b_cols, b_rows_arg) = if g.b_transposed {
            (r.k_rows.clone(), r.j_cols.clone())
        } else {
            (r.j_cols.clone(), r.k_rows.clone())
        };
        let mvin_b = call(
            "gemmini_extended_mvin2",
            vec![
                IntrinsicArg::Addr {
                    tensor: g.b,
                    offset: offset(&g.b_off, &b_at),
                },
                i(b_addr.clone()),
                i(b_cols),
                i(b_rows_arg),
            ],
        );
        let load_a = self.over_ii(self.over_kk(mvin_a));
        let load_b = self.over_kk(self.over_jj(mvin_b));
        (load_a, load_b)
    }

    /// `c_row` with the overwrite bit on the first step of a folded init (`first`), else
    /// the accumulate bit.
    fn overwrite_on_first(&self, first: KExpr, c_row: &KExpr) -> KExpr {
        let acc = int(ACC_BIT as i64);
        let accumulate = int((ACC_BIT | ACCUMULATE_BIT) as i64);
        if self.g.init.is_some() {
            add(
                KExpr::Select(
                    Box::new(self.and_first(first)),
                    Box::new(acc),
                    Box::new(accumulate),
                ),
                c_row.clone(),
            )
        } else {
            add(accumulate, c_row.clone())
        }
    }

    /// The C address of a weight-stationary compute: overwrite on the first step of a
    /// folded init, else accumulate.
    fn c_addr_ws(&self, r: &Rows, c_row: &KExpr) -> KExpr {
        if !self.g.guards.is_empty() {
            let accumulate = int((ACC_BIT | ACCUMULATE_BIT) as i64);
            return add(accumulate, r.c_row_step.clone());
        }
        let (k0, kk) = (&self.k0, &self.kk);
        let first = KExpr::And(
            Box::new(KExpr::Cmp(
                KCmp::Eq,
                Box::new(var(k0)),
                Box::new(int(self.bk.0)),
            )),
            Box::new(KExpr::Cmp(KCmp::Eq, Box::new(var(kk)), Box::new(var(k0)))),
        );
        self.overwrite_on_first(first, c_row)
    }

    /// The C address of the output-stationary program: it writes where the WS one does,
    /// but only once per step: overwrite on the first step of a folded init.
    fn c_addr_os(&self, c_row: &KExpr) -> KExpr {
        let first = KExpr::Cmp(KCmp::Eq, Box::new(var(&self.k0)), Box::new(int(self.bk.0)));
        self.overwrite_on_first(first, c_row)
    }

    /// The weight-stationary computes of a step: per block column `jj` and block row `kk`
    /// of `B`, one `preload` of the weights and one compute per block row `ii` of `A`.
    fn ws_computes(&self, r: &Rows, a_addr: KExpr, b_addr: KExpr, c_addr: KExpr) -> KNode {
        let d = self.d;
        let garbage = i(int(GARBAGE_ADDR as i64));
        let first_row = KExpr::Cmp(KCmp::Eq, Box::new(var(&self.ii)), Box::new(var(&self.i0)));
        let preload_compute = KNode::Block(vec![
            call(
                "gemmini_extended_preload",
                vec![
                    i(b_addr),
                    i(c_addr.clone()),
                    i(r.j_cols.clone()),
                    i(r.k_rows.clone()),
                    i(r.j_cols.clone()),
                    i(r.i_rows_step.clone()),
                ],
            ),
            call(
                "gemmini_extended_compute_preloaded",
                vec![
                    i(a_addr.clone()),
                    garbage.clone(),
                    i(r.k_rows.clone()),
                    i(r.i_rows_step.clone()),
                    i(int(d)),
                    i(int(d)),
                ],
            ),
        ]);
        let accumulate_compute = KNode::Block(vec![
            call(
                "gemmini_extended_preload",
                vec![
                    garbage.clone(),
                    i(c_addr),
                    i(int(d)),
                    i(int(d)),
                    i(r.j_cols.clone()),
                    i(r.i_rows_step.clone()),
                ],
            ),
            call(
                "gemmini_extended_compute_accumulated",
                vec![
                    i(a_addr),
                    garbage,
                    i(r.k_rows.clone()),
                    i(r.i_rows_step.clone()),
                    i(int(d)),
                    i(int(d)),
                ],
            ),
        ]);
        // Padded, a block may start past its first row or be skipped: every reached block
        // preloads its weights.
        let compute = if r.row_guarded {
            r.some_rows(preload_compute)
        } else {
            KNode::If {
                cond: first_row,
                then: Box::new(preload_compute),
                els: Some(Box::new(accumulate_compute)),
            }
        };
        self.over_jj(self.over_kk(self.over_ii(compute)))
    }

    /// Output-stationary (both operands stored transposed, which WS cannot read): per C
    /// block, the step's k blocks accumulate in the PEs (`compute_preloaded` on the first,
    /// `compute_accumulated` after), and the last one's result goes to the accumulator
    /// at `c_addr_os` (overwriting or accumulating); the other preloads name no output.
    fn os_computes(&self, r: &Rows, a_addr: KExpr, b_addr: KExpr, c_addr_os: KExpr) -> KNode {
        let (d, t, kk, k0) = (self.d, self.t, &self.kk, &self.k0);
        let last_kk = KExpr::Cmp(
            KCmp::Ge,
            Box::new(add(var(kk), int(d))),
            Box::new(self.end(k0, t.tk, self.bk.1)),
        );
        let first_kk = KExpr::Cmp(KCmp::Eq, Box::new(var(kk)), Box::new(var(k0)));
        let c_out = KExpr::Select(
            Box::new(last_kk),
            Box::new(c_addr_os),
            Box::new(int(GARBAGE_ADDR as i64)),
        );
        let args = |a: KExpr, b: KExpr| {
            vec![
                i(a),
                i(b),
                i(r.k_rows.clone()),
                i(r.i_rows.clone()),
                i(r.j_cols.clone()),
                i(r.k_rows.clone()),
            ]
        };
        let body = KNode::Block(vec![
            call(
                "gemmini_extended_preload",
                vec![
                    i(int(GARBAGE_ADDR as i64)),
                    i(c_out),
                    i(int(d)),
                    i(int(d)),
                    i(r.j_cols.clone()),
                    i(r.i_rows.clone()),
                ],
            ),
            KNode::If {
                cond: first_kk,
                then: Box::new(call(
                    "gemmini_extended_compute_preloaded",
                    args(a_addr.clone(), b_addr.clone()),
                )),
                els: Some(Box::new(call(
                    "gemmini_extended_compute_accumulated",
                    args(a_addr, b_addr),
                ))),
            },
        ]);
        self.over_ii(self.over_jj(self.over_kk(body)))
    }

    /// The reduction steps around `step_body` (under the padded convolution's
    /// `step_guards`), inside the host loops over the filter offsets.
    fn reduction_loops(&self, step_body: KNode, step_guards: Vec<KExpr>) -> KNode {
        let g = self.g;
        let step_body = match step_guards
            .into_iter()
            .reduce(|a, b| KExpr::And(Box::new(a), Box::new(b)))
        {
            Some(cond) => KNode::If {
                cond,
                then: Box::new(step_body),
                els: None,
            },
            None => step_body,
        };
        let mut k_loop = for_lt(
            &self.k0,
            int(self.bk.0),
            int(self.bk.1),
            self.t.tk,
            step_body,
        );
        for &r in g.outer.iter().rev() {
            k_loop = for_lt(
                &self.v(&format!("r{r}")),
                int(g.bounds[r].0),
                int(g.bounds[r].1),
                1,
                k_loop,
            );
        }
        k_loop
    }

    /// The tensor and offset the accumulator starts from without an init: `C` itself, or
    /// the folded `C(…) = X(…)`'s `X`.
    fn start(&self) -> (usize, &'a Lin) {
        let g = self.g;
        match &g.preload {
            Some(p) => (p.tensor, &p.off),
            None => (g.c, &g.c_off),
        }
    }

    /// The host loops over the batch and the `C` tiles around each tile's accumulator
    /// start, its reduction `k_loop` and its `mvout`s.
    fn tile_loops(&self, r: &Rows, c_row: KExpr, k_loop: KNode) -> KNode {
        let g = self.g;
        let acc = int(ACC_BIT as i64);
        let c_at = self.at(&[(g.i, var(&self.ii)), (g.j, var(&self.jj))]);
        let c_blocks = |node: KNode| self.over_ii(self.over_jj(node));
        // The rows leave the accumulator as int32 (bit 29), or through the fused epilogue's
        // scaling and activation into its int8 tensor.
        let (out_tensor, out_off, out_bits) = match &g.epilogue {
            Some(e) => (e.tensor, &e.off, ACC_BIT),
            None => (g.c, &g.c_off, ACC_BIT | FULL_ACC_BIT),
        };
        let mvout = c_blocks(call(
            "gemmini_extended_mvout",
            vec![
                IntrinsicArg::Addr {
                    tensor: out_tensor,
                    offset: offset(out_off, &c_at),
                },
                i(add(int(out_bits as i64), c_row.clone())),
                i(r.j_cols.clone()),
                i(r.i_rows.clone()),
            ],
        ));
        let mut tile_body = Vec::new();
        let (start_tensor, start_off) = self.start();
        if !g.guards.is_empty() && g.init.is_some() {
            // Padded, a filter offset may reach only some rows: the accumulator starts from
            // zeros (an mvin from DRAM address 0 writes zeros).
            tile_body.push(c_blocks(call(
                "gemmini_extended_mvin3",
                vec![
                    i(int(0)),
                    i(add(acc.clone(), c_row.clone())),
                    i(r.j_cols.clone()),
                    i(r.i_rows.clone()),
                ],
            )));
        }
        if g.init.is_none() {
            tile_body.push(c_blocks(call(
                "gemmini_extended_mvin3",
                vec![
                    IntrinsicArg::Addr {
                        tensor: start_tensor,
                        offset: offset(start_off, &c_at),
                    },
                    i(add(acc, c_row)),
                    i(r.j_cols.clone()),
                    i(r.i_rows.clone()),
                ],
            )));
        }
        tile_body.push(k_loop);
        tile_body.push(mvout);
        let (t, bi, bj) = (self.t, self.bi, self.bj);
        let mut body = for_lt(
            &self.i0,
            int(bi.0),
            int(bi.1),
            t.ti,
            for_lt(
                &self.j0,
                int(bj.0),
                int(bj.1),
                t.tj,
                KNode::Block(tile_body),
            ),
        );
        for &b in g.batch.iter().rev() {
            body = for_lt(
                &self.v(&format!("b{b}")),
                int(g.bounds[b].0),
                int(g.bounds[b].1),
                1,
                body,
            );
        }
        body
    }

    /// The configuration instructions that start the program: the dataflow, the store
    /// (stride, activation, scale) and the loads' strides in bytes.
    fn configs(&self) -> Vec<KNode> {
        let (g, geo) = (self.g, self.geo);
        let row = |lin: &Lin, t: usize| lin.coef[t];
        // DRAM strides are in bytes.
        let a_stride = geo.elem_bytes
            * if g.a_transposed {
                row(&g.a_off, g.k)
            } else {
                row(&g.a_off, g.i)
            };
        let b_stride = geo.elem_bytes
            * if g.b_transposed {
                row(&g.b_off, g.j)
            } else {
                row(&g.b_off, g.k)
            };
        let c_stride = row(&g.c_off, g.i) * geo.acc_bytes;
        let (st_stride, st_act) = match &g.epilogue {
            Some(e) if e.relu => (row(&e.off, g.i) * geo.elem_bytes, named("RELU", 1)),
            Some(e) => (row(&e.off, g.i) * geo.elem_bytes, named("NO_ACTIVATION", 0)),
            None => (c_stride, named("NO_ACTIVATION", 0)),
        };
        let config_ld = |stride: i64, id: i64| {
            call(
                "gemmini_extended3_config_ld",
                vec![
                    i(int(stride)),
                    IntrinsicArg::Float(1.0),
                    i(int(0)),
                    i(int(id)),
                ],
            )
        };
        let mut prog = vec![
            call(
                "gemmini_extended_config_ex",
                vec![
                    if g.os() {
                        named("OUTPUT_STATIONARY", 0)
                    } else {
                        named("WEIGHT_STATIONARY", 1)
                    },
                    named("NO_ACTIVATION", 0),
                    i(int(0)),
                    i(int(1)),
                    i(int(g.a_transposed as i64)),
                    i(int(g.b_transposed as i64)),
                ],
            ),
            call(
                "gemmini_extended_config_st",
                vec![
                    i(int(st_stride)),
                    st_act,
                    match g.epilogue.as_ref().map(|e| e.scale) {
                        Some(AccScale::Scalar(k)) => IntrinsicArg::Scalar(k),
                        Some(AccScale::Lit(v)) => IntrinsicArg::Float(v),
                        None => IntrinsicArg::Float(1.0),
                    },
                ],
            ),
            config_ld(a_stride, 0),
            config_ld(b_stride, 1),
        ];
        if g.init.is_none() || !g.guards.is_empty() {
            let (_, start_off) = self.start();
            prog.push(config_ld(row(start_off, g.i) * geo.acc_bytes, 2));
        }
        prog
    }
}

/// The guards of a padded convolution as kernel expressions over the loop variables of
/// [`gemm_program`] (`{prefix}b{t}` for batch iterators, `{prefix}r{t}` for filter
/// offsets).
struct GuardParts {
    /// Conditions on the batch point and the filter offset only.
    step: Vec<KExpr>,
    /// Lower bounds of the rows `i` the filter offset reaches.
    i_lo: Vec<KExpr>,
    /// Upper bounds (exclusive) of those rows.
    i_hi: Vec<KExpr>,
}

fn guard_parts(g: &Gemm, v: &dyn Fn(&str) -> String) -> GuardParts {
    let mut out = GuardParts {
        step: Vec::new(),
        i_lo: Vec::new(),
        i_hi: Vec::new(),
    };
    for gd in &g.guards {
        let r = var(&v(&format!("r{}", gd.iter)));
        // X = r − (the bound without its `i` term).
        let mut rest = int(gd.bound.c0);
        for &b in &g.batch {
            rest = add(rest, mul(var(&v(&format!("b{b}"))), gd.bound.coef[b]));
        }
        let x = sub(r.clone(), rest.clone());
        let a = gd.bound.coef[g.i];
        let floor = |e: KExpr, m: i64| {
            if m == 1 {
                e
            } else {
                KExpr::FloorDiv(Box::new(e), Box::new(int(m)))
            }
        };
        let neg = |e: KExpr| KExpr::Neg(Box::new(e));
        match (gd.lower, a.signum()) {
            // r ≥ rest, r < rest.
            (true, 0) => out
                .step
                .push(KExpr::Cmp(KCmp::Ge, Box::new(r), Box::new(rest))),
            (false, 0) => out
                .step
                .push(KExpr::Cmp(KCmp::Lt, Box::new(r), Box::new(rest))),
            // r ≥ a·i + rest ⇔ a·i ≤ X.
            (true, 1) => out.i_hi.push(add(floor(x, a), int(1))),
            (true, _) => out.i_lo.push(neg(floor(x, -a))),
            // r < a·i + rest ⇔ a·i ≥ X + 1.
            (false, 1) => out.i_lo.push(neg(floor(neg(add(x, int(1))), a))),
            (false, _) => out.i_hi.push(add(floor(neg(add(x, int(1))), -a), int(1))),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geo() -> Geometry {
        Geometry {
            dim: 16,
            sp_banks: 4,
            sp_bank_rows: 4096,
            acc_banks: 2,
            acc_bank_rows: 512,
            elem_bytes: 1,
            acc_bytes: 4,
        }
    }

    #[test]
    fn placement_counts_rows_per_bank() {
        let p = geo()
            .place(&Tiles {
                ti: 48,
                tj: 32,
                tk: 32,
            })
            .expect("fits");
        assert_eq!((p.a_rows, p.b_rows, p.c_rows), (96, 64, 96));
        assert!(p.sp_double && p.acc_double);
        // A: 16 × 17 blocks = 4352 rows > one bank: single-buffered in two banks.
        let p = geo()
            .place(&Tiles {
                ti: 256,
                tj: 16,
                tk: 272,
            })
            .expect("fits");
        assert!(!p.sp_double);
        // C: 32 × 2 blocks = 1024 rows: the whole accumulator, single-buffered.
        let p = geo()
            .place(&Tiles {
                ti: 512,
                tj: 32,
                tk: 16,
            })
            .expect("fits");
        assert!(!p.acc_double);
        assert_eq!(
            geo().place(&Tiles {
                ti: 512,
                tj: 48,
                tk: 16
            }),
            Err("the C tile needs 1536 accumulator rows, but the accumulator has 1024".into())
        );
        assert_eq!(
            geo().place(&Tiles {
                ti: 1024,
                tj: 16,
                tk: 144
            }),
            Err("the A tile needs 9216 scratchpad rows and the B tile 144, but each has half of the scratchpad, 8192 rows".into())
        );
    }
}
