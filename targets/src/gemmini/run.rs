//! Running a Gemmini kernel without the chip, two ways, and counting it without running.
//!
//! - [`ModelRun`] (`--via model`, the default): interprets the kernel IR. Host loops,
//!   guards and host statements run in Rust; every instruction ([`KNode::Intrinsic`]) is
//!   decoded into an [`Insn`] and executed by the functional model on a flat DRAM that holds
//!   every tensor.
//! - [`HostCRun`] (`--via c`): builds the emitted C against polyc's host header with the
//!   system compiler and runs it; the header's macros execute on the same model.
//! - [`count`]: walks the kernel IR's control flow with the sizes but no data and counts
//!   the instructions, the rows and bytes they move, the rows the array writes and the
//!   MACs, by the same accounting rules the model documents ([`Counters`]). `polyc
//!   explain` prints these; the tests compare them with the model's counters after a run.

use std::collections::HashMap;

use miette::{miette, Result};
use polyhedral::data::TensorData;
use polyhedral::ir::{AssignOp, BinOp, CmpOp, DType, Expr, Func, InputRef, Program, StmtBody};

use crate::codegen::kir::{Intrinsic, IntrinsicArg, KExpr, KNode, Kernel};
use crate::RunStats;

use super::codegen::Geometry;
use super::host::{compile_host, HostCcOptions, HostKernel};
use super::model::{
    Activation, Counters, Dataflow, ElemTypes, FlatMemory, Fp32, Gemmini, GemminiConfig, Insn,
    Int8, ACC_BIT, GARBAGE_ADDR,
};

/// The model configuration for a geometry (int8 elements, int32 accumulator).
fn model_config(geo: &Geometry) -> GemminiConfig {
    GemminiConfig {
        dim: geo.dim as usize,
        sp_banks: geo.sp_banks as usize,
        sp_bank_rows: geo.sp_bank_rows as usize,
        acc_rows: (geo.acc_banks * geo.acc_bank_rows) as usize,
        acc_banks: geo.acc_banks as usize,
        max_bytes: GemminiConfig::default().max_bytes,
    }
}

/// The counters as `run` prints them.
pub fn counters_text(c: &Counters) -> String {
    format!(
        "Gemmini functional model: {} instructions (config_ex {}, config_ld {}, config_st {}, mvin {}, mvout {}, preload {}, compute_preloaded {}, compute_accumulated {}, fence {}); DRAM→scratchpad {} rows {} bytes; DRAM→accumulator {} rows {} bytes; accumulator→DRAM {} rows {} bytes; array→accumulator {} rows; MACs {}",
        c.total_insns(),
        c.config_ex,
        c.config_ld,
        c.config_st,
        c.mvin,
        c.mvout,
        c.preload,
        c.compute_preloaded,
        c.compute_accumulated,
        c.fence,
        c.dram_to_spad_rows,
        c.dram_to_spad_bytes,
        c.dram_to_acc_rows,
        c.dram_to_acc_bytes,
        c.acc_to_dram_rows,
        c.acc_to_dram_bytes,
        c.array_to_acc_rows,
        c.macs
    )
}

/// Where each tensor lives in the flat DRAM.
fn layout(prog: &Program, sizes: &[i64]) -> (Vec<usize>, usize) {
    let mut offs = Vec::new();
    let mut at = 64usize;
    for t in &prog.tensors {
        offs.push(at);
        let n: i64 = t.shape.iter().map(|a| a.eval(&[], sizes).max(0)).product();
        at += (n as usize * t.dtype.size_bytes()).div_ceil(64) * 64 + 64;
    }
    (offs, at)
}

/// The interpreter's state.
struct Interp<'a, T: ElemTypes = Int8> {
    prog: &'a Program,
    env: HashMap<String, i64>,
    mem: FlatMemory,
    offs: Vec<usize>,
    scalars: Vec<i64>,
    /// The scalars' values as floats (the scales of `requant_i8`).
    fscalars: Vec<f64>,
    sizes: &'a [i64],
    model: Option<Gemmini<T>>,
    /// Static counting (no model, no data).
    counts: Counters,
    pe_extent: (u64, u64),
    /// The dataflow `config_ex` set is output-stationary.
    os: bool,
    preload: Option<(u32, u32, u64, u64, u64)>,
    dim: u64,
    /// Bytes of a scratchpad and of an accumulator element (for counting).
    elem_bytes: u64,
    /// See [`Interp::elem_bytes`].
    acc_bytes: u64,
}

fn eval_k(e: &KExpr, env: &HashMap<String, i64>) -> Result<i64> {
    e.eval(&|n| env.get(n).copied())
        .ok_or_else(|| miette!("internal error: cannot evaluate `{e:?}` in the Gemmini runner"))
}

/// Wraps `v` to the width of `t` (two's complement).
fn wrap(v: i64, t: DType) -> i64 {
    match t {
        DType::I8 => v as i8 as i64,
        DType::I32 => v as i32 as i64,
        _ => v,
    }
}

/// The type integer arithmetic of a statement of type `t` happens in (C's promotion).
fn compute_type(t: DType) -> DType {
    match t {
        DType::I8 | DType::I32 => DType::I32,
        other => other,
    }
}

impl<T: ElemTypes> Interp<'_, T> {
    fn arg(&self, a: &IntrinsicArg) -> Result<u64> {
        Ok(match a {
            IntrinsicArg::Int(e) => eval_k(e, &self.env)? as u64,
            IntrinsicArg::Addr { tensor, offset } => {
                let off = eval_k(offset, &self.env)?;
                let bytes = self.prog.tensors[*tensor].dtype.size_bytes() as i64;
                self.mem
                    .addr((self.offs[*tensor] as i64 + off * bytes) as usize)
            }
            IntrinsicArg::Float(v) => v.to_bits() as u64,
            IntrinsicArg::Scalar(k) => (self.fscalars[*k] as f32).to_bits() as u64,
            IntrinsicArg::Named { value, .. } => *value as u64,
            IntrinsicArg::Elem { .. } => {
                return Err(miette!(
                    "internal error: a GPU block reduction's element address in a Gemmini program"
                ))
            }
        })
    }

    fn float(&self, a: &IntrinsicArg) -> Result<f32> {
        match a {
            IntrinsicArg::Float(v) => Ok(*v),
            IntrinsicArg::Scalar(k) => Ok(self.fscalars[*k] as f32),
            other => Err(miette!("internal error: expected a float, got {other:?}")),
        }
    }

    /// The instruction an intrinsic stands for.
    fn insn(&self, call: &Intrinsic) -> Result<Insn> {
        let a = &call.args;
        let n = |i: usize| self.arg(&a[i]);
        let act = |v: u64| {
            if v == 0 {
                Activation::None
            } else {
                Activation::Relu
            }
        };
        Ok(match call.name.as_str() {
            "gemmini_extended_config_ex" => Insn::ConfigEx {
                dataflow: if n(0)? == 1 {
                    Dataflow::WeightStationary
                } else {
                    Dataflow::OutputStationary
                },
                activation: act(n(1)?),
                sys_shift: n(2)? as u32,
                sys_acc_scale: 1.0,
                c_stride: 1,
                a_stride: n(3)? as u16,
                a_transpose: n(4)? != 0,
                b_transpose: n(5)? != 0,
                set_only_strides: false,
            },
            "gemmini_extended_config_st" => Insn::ConfigSt {
                stride: n(0)? as u32,
                activation: act(n(1)?),
                acc_scale: self.float(&a[2])?,
            },
            "gemmini_extended3_config_ld" => Insn::ConfigLd {
                stride: n(0)?,
                scale: self.float(&a[1])?,
                shrunk: n(2)? != 0,
                block_stride: self.dim as u16,
                pixel_repeats: 1,
                id: n(3)? as u8,
            },
            "gemmini_extended_mvin" | "gemmini_extended_mvin2" | "gemmini_extended_mvin3" => {
                Insn::Mvin {
                    id: match call.name.as_str() {
                        "gemmini_extended_mvin" => 0,
                        "gemmini_extended_mvin2" => 1,
                        _ => 2,
                    },
                    dram_addr: n(0)?,
                    local: n(1)? as u32,
                    cols: n(2)? as u16,
                    rows: n(3)? as u16,
                }
            }
            "gemmini_extended_mvout" => {
                Insn::mvout(n(0)?, n(1)? as u32, n(2)? as u16, n(3)? as u16)
            }
            "gemmini_extended_preload" => Insn::preload(
                n(0)? as u32,
                n(1)? as u32,
                n(2)? as u16,
                n(3)? as u16,
                n(4)? as u16,
                n(5)? as u16,
            ),
            "gemmini_extended_compute_preloaded" | "gemmini_extended_compute_accumulated" => {
                Insn::Compute {
                    preloaded: call.name.ends_with("preloaded"),
                    a: n(0)? as u32,
                    bd: n(1)? as u32,
                    a_cols: n(2)? as u16,
                    a_rows: n(3)? as u16,
                    bd_cols: n(4)? as u16,
                    bd_rows: n(5)? as u16,
                }
            }
            "gemmini_fence" => Insn::Fence,
            other => {
                return Err(miette!(
                    "internal error: unknown Gemmini intrinsic `{other}`"
                ))
            }
        })
    }

    /// Counts one instruction by the model's accounting rules (no data).
    fn count(&mut self, insn: &Insn) {
        let c = &mut self.counts;
        let d = self.dim;
        match *insn {
            Insn::ConfigEx { dataflow, .. } => {
                c.config_ex += 1;
                self.os = dataflow == Dataflow::OutputStationary;
            }
            Insn::ConfigLd { .. } => c.config_ld += 1,
            Insn::ConfigSt { .. } => c.config_st += 1,
            Insn::Flush { .. } => c.flush += 1,
            Insn::Fence => c.fence += 1,
            Insn::Mvin {
                dram_addr,
                local,
                cols,
                rows,
                ..
            } => {
                c.mvin += 1;
                let (rows, cols) = (rows as u64, cols as u64);
                let blocks = cols.div_ceil(d);
                let to_acc = local & ACC_BIT != 0;
                let elem = if to_acc {
                    self.acc_bytes
                } else {
                    self.elem_bytes
                };
                let bytes = if dram_addr == 0 {
                    0
                } else {
                    rows * cols * elem
                };
                if to_acc {
                    c.dram_to_acc_rows += rows * blocks;
                    c.dram_to_acc_bytes += bytes;
                } else {
                    c.dram_to_spad_rows += rows * blocks;
                    c.dram_to_spad_bytes += bytes;
                }
            }
            Insn::Mvout {
                local, cols, rows, ..
            } => {
                c.mvout += 1;
                let (rows, cols) = (rows as u64, cols as u64);
                let blocks = cols.div_ceil(d);
                if local & ACC_BIT != 0 {
                    let elem = if local & super::model::FULL_ACC_BIT != 0 {
                        self.acc_bytes
                    } else {
                        self.elem_bytes
                    };
                    c.acc_to_dram_rows += rows * blocks;
                    c.acc_to_dram_bytes += rows * cols * elem;
                } else {
                    c.spad_to_dram_rows += rows * blocks;
                    c.spad_to_dram_bytes += rows * cols * self.elem_bytes;
                }
            }
            Insn::Preload {
                bd,
                c: cad,
                bd_cols,
                bd_rows,
                c_rows,
                ..
            } => {
                c.preload += 1;
                self.preload = Some((bd, cad, bd_rows as u64, bd_cols as u64, c_rows as u64));
            }
            Insn::Compute {
                preloaded,
                a,
                bd: cbd,
                a_cols,
                a_rows,
                bd_cols: cbd_cols,
                bd_rows: cbd_rows,
            } => {
                if preloaded {
                    c.compute_preloaded += 1;
                } else {
                    c.compute_accumulated += 1;
                }
                let (bd, cad, bd_rows, bd_cols, c_rows) =
                    self.preload
                        .unwrap_or((GARBAGE_ADDR, GARBAGE_ADDR, 0, 0, 0));
                if preloaded {
                    self.pe_extent = if bd == GARBAGE_ADDR {
                        (0, 0)
                    } else {
                        (bd_rows, bd_cols)
                    };
                }
                let a_eff = if a == GARBAGE_ADDR { 0 } else { a_rows as u64 };
                // WS: the weights in the PEs; OS: the compute's B operand.
                let (br, bc) = if !self.os {
                    self.pe_extent
                } else if cbd == GARBAGE_ADDR {
                    (0, 0)
                } else {
                    (cbd_rows as u64, cbd_cols as u64)
                };
                c.macs += a_eff * (a_cols as u64).min(br) * bc;
                c.array_macs += d * d * d;
                if cad != GARBAGE_ADDR {
                    if cad & ACC_BIT != 0 {
                        c.array_to_acc_rows += c_rows;
                    } else {
                        c.array_to_spad_rows += c_rows;
                    }
                }
            }
        }
    }

    fn exec(&mut self, n: &KNode) -> Result<()> {
        match n {
            KNode::Block(v) => {
                for x in v {
                    self.exec(x)?;
                }
            }
            KNode::For {
                iter,
                init,
                cond,
                step,
                body,
                ..
            } => {
                let mut v = eval_k(init, &self.env)?;
                let saved = self.env.get(iter).copied();
                loop {
                    self.env.insert(iter.clone(), v);
                    if eval_k(cond, &self.env)? == 0 {
                        break;
                    }
                    self.exec(body)?;
                    v += step;
                }
                match saved {
                    Some(s) => self.env.insert(iter.clone(), s),
                    None => self.env.remove(iter),
                };
            }
            KNode::If { cond, then, els } => {
                if eval_k(cond, &self.env)? != 0 {
                    self.exec(then)?;
                } else if let Some(e) = els {
                    self.exec(e)?;
                }
            }
            KNode::Let { name, value, body } => {
                let v = eval_k(value, &self.env)?;
                let saved = self.env.insert(name.clone(), v);
                self.exec(body)?;
                match saved {
                    Some(s) => self.env.insert(name.clone(), s),
                    None => self.env.remove(name),
                };
            }
            KNode::Stmt { stmt, args, .. } => {
                if self.model.is_some() {
                    let it: Vec<i64> = args
                        .iter()
                        .map(|a| eval_k(a, &self.env))
                        .collect::<Result<_>>()?;
                    self.stmt(*stmt, &it)?;
                }
            }
            KNode::Intrinsic(call) => {
                let insn = self.insn(call)?;
                match self.model.as_mut() {
                    Some(m) => m
                        .execute(&insn, &mut self.mem)
                        .map_err(|e| miette!("the Gemmini model stopped: {e}"))?,
                    None => self.count(&insn),
                }
            }
            KNode::Local { .. } | KNode::Copy { .. } | KNode::Barrier | KNode::Device { .. } => {
                return Err(miette!(
                    "internal error: the Gemmini runner met a promoted tile or a device kernel"
                ))
            }
        }
        Ok(())
    }

    /// The byte range of element `flat` of tensor `t`, or an error outside the tensor.
    fn element(&self, t: usize, flat: i64) -> Result<std::ops::Range<usize>> {
        let ten = &self.prog.tensors[t];
        let n: i64 = ten.shape.iter().map(|a| a.eval(&[], self.sizes)).product();
        if flat < 0 || flat >= n {
            return Err(miette!(
                "a host statement accesses element {flat} of `{}`, which has {n}",
                ten.name
            ));
        }
        let sz = ten.dtype.size_bytes();
        let at = self.offs[t] + flat as usize * sz;
        Ok(at..at + sz)
    }

    fn load(&self, t: usize, flat: i64) -> Result<i64> {
        let b = &self.mem.bytes[self.element(t, flat)?];
        Ok(match self.prog.tensors[t].dtype {
            DType::I8 => b[0] as i8 as i64,
            DType::I32 => i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64,
            _ => {
                let mut w = [0u8; 8];
                w.copy_from_slice(&b[..8]);
                i64::from_le_bytes(w)
            }
        })
    }

    fn store(&mut self, t: usize, flat: i64, v: i64) -> Result<()> {
        let r = self.element(t, flat)?;
        let sz = r.len();
        self.mem.bytes[r].copy_from_slice(&v.to_le_bytes()[..sz]);
        Ok(())
    }

    fn flat(&self, t: usize, index: &[polyhedral::ir::Aff], it: &[i64]) -> i64 {
        let shape = &self.prog.tensors[t].shape;
        let mut f = 0;
        for (d, ix) in index.iter().enumerate() {
            f = f * shape[d].eval(&[], self.sizes) + ix.eval(it, self.sizes);
        }
        f
    }

    /// One statement instance, in integer arithmetic as the emitted C computes it.
    fn stmt(&mut self, s: usize, it: &[i64]) -> Result<()> {
        let st = &self.prog.stmts[s];
        let ty = st.dtype;
        if ty.is_float() {
            return Err(miette!(
                "the Gemmini model runs host statements in integer arithmetic only, and {} is {ty}; use --via c",
                st.name
            ));
        }
        let lhs = self.flat(st.lhs, &st.lhs_index, it);
        let v = match &st.body {
            StmtBody::Init(op) => match op {
                AssignOp::Add | AssignOp::Assign => 0,
                AssignOp::Mul => 1,
                AssignOp::Max => match ty {
                    DType::I8 => i8::MIN as i64,
                    DType::I32 => i32::MIN as i64,
                    _ => i64::MIN,
                },
                AssignOp::Min => match ty {
                    DType::I8 => i8::MAX as i64,
                    DType::I32 => i32::MAX as i64,
                    _ => i64::MAX,
                },
            },
            StmtBody::Update(op, e) => {
                let x = self.expr(e, ty, it)?;
                let cur = wrap(self.load(st.lhs, lhs)?, ty);
                let ct = compute_type(ty);
                match op {
                    AssignOp::Assign => x,
                    AssignOp::Add => wrap(cur.wrapping_add(x), ct),
                    AssignOp::Mul => wrap(cur.wrapping_mul(x), ct),
                    AssignOp::Max => x.max(cur),
                    AssignOp::Min => x.min(cur),
                }
            }
        };
        self.store(st.lhs, lhs, wrap(v, ty))
    }

    fn expr(&self, e: &Expr, ty: DType, it: &[i64]) -> Result<i64> {
        let ct = compute_type(ty);
        let w = |v: i64| wrap(v, ct);
        Ok(match e {
            Expr::Lit(v) => wrap(*v as i64, ty),
            Expr::Scalar(s) => wrap(self.scalars[*s], ty),
            Expr::IterValue(i) => wrap(it[*i], ty),
            Expr::SizeValue(p) => wrap(self.sizes[*p], ty),
            Expr::Read { tensor, index, .. } => {
                let f = self.flat(*tensor, index, it);
                wrap(self.load(*tensor, f)?, ty)
            }
            Expr::Neg(a) => w(self.expr(a, ty, it)?.wrapping_neg()),
            Expr::Bin(op, a, b) => {
                let (x, y) = (self.expr(a, ty, it)?, self.expr(b, ty, it)?);
                match op {
                    BinOp::Add => w(x.wrapping_add(y)),
                    BinOp::Sub => w(x.wrapping_sub(y)),
                    BinOp::Mul => w(x.wrapping_mul(y)),
                    BinOp::Div | BinOp::Rem => {
                        if y == 0 {
                            return Err(miette!("integer division by zero in a host statement"));
                        }
                        if *op == BinOp::Div {
                            w(x.wrapping_div(y))
                        } else {
                            w(x.wrapping_rem(y))
                        }
                    }
                }
            }
            Expr::Cmp(op, a, b) => {
                let (x, y) = (self.expr(a, ty, it)?, self.expr(b, ty, it)?);
                let r = match op {
                    CmpOp::Lt => x < y,
                    CmpOp::Le => x <= y,
                    CmpOp::Gt => x > y,
                    CmpOp::Ge => x >= y,
                    CmpOp::Eq => x == y,
                    CmpOp::Ne => x != y,
                };
                r as i64
            }
            Expr::Call(Func::RequantI8, args) if args.len() == 2 => {
                let x = self.expr(&args[0], ty, it)?;
                let scale = match &args[1] {
                    Expr::Lit(v) => *v as f32,
                    Expr::Scalar(s) => self.fscalars[*s] as f32,
                    other => {
                        return Err(miette!(
                            "internal error: the scale of requant_i8 is {other:?}"
                        ))
                    }
                };
                polyhedral::interp::requant_i8(x as i32, scale) as i64
            }
            Expr::Call(f, args) => {
                let v: Vec<i64> = args
                    .iter()
                    .map(|a| self.expr(a, ty, it))
                    .collect::<Result<_>>()?;
                match f {
                    Func::Relu => v[0].max(0),
                    Func::Max => v[0].max(v[1]),
                    Func::Min => v[0].min(v[1]),
                    Func::Abs => w(v[0].wrapping_abs()),
                    Func::SatI8 => v[0].clamp(-128, 127),
                    other => {
                        return Err(miette!(
                        "the Gemmini model does not evaluate `{}` in a host statement; use --via c",
                        other.name()
                    ))
                    }
                }
            }
            Expr::Select(c, a, b) => {
                if self.expr(c, ty, it)? != 0 {
                    self.expr(a, ty, it)?
                } else {
                    self.expr(b, ty, it)?
                }
            }
            Expr::Cast(t, a) => {
                if t.is_float() {
                    return Err(miette!(
                        "the Gemmini model does not evaluate float casts in a host statement; use --via c"
                    ));
                }
                wrap(wrap(self.expr(a, ty, it)?, *t), ty)
            }
        })
    }
}

fn new_interp<'a, T: ElemTypes>(
    prog: &'a Program,
    sizes: &'a [i64],
    geo: &Geometry,
) -> Interp<'a, T> {
    let dim = geo.dim;
    let (offs, total) = layout(prog, sizes);
    let mut env = HashMap::new();
    for (p, v) in prog.params.iter().zip(sizes) {
        env.insert(p.name.clone(), *v);
    }
    Interp {
        prog,
        env,
        mem: FlatMemory::zeroed(total),
        offs,
        scalars: Vec::new(),
        // Counting runs without values: a scale of 1 (counts do not depend on it).
        fscalars: vec![1.0; prog.scalars.len()],
        sizes,
        model: None,
        counts: Counters::default(),
        pe_extent: (0, 0),
        os: false,
        preload: None,
        dim: dim as u64,
        elem_bytes: geo.elem_bytes as u64,
        acc_bytes: geo.acc_bytes as u64,
    }
}

/// The instructions and data movement of `kernel` at `sizes`, counted without running
/// (see the module documentation).
pub fn count(prog: &Program, kernel: &Kernel, sizes: &[i64], geo: &Geometry) -> Result<Counters> {
    count_node(prog, &kernel.body, sizes, geo)
}

/// The counters of one piece of a kernel (a GEMM's instruction program), counted without
/// running it, as [`count`] does for the whole kernel.
pub fn count_node(prog: &Program, node: &KNode, sizes: &[i64], geo: &Geometry) -> Result<Counters> {
    let mut it = new_interp::<Int8>(prog, sizes, geo);
    it.mem = FlatMemory::zeroed(0);
    // Addresses only need to be numbers here; give the tensors a base.
    it.exec(node)?;
    Ok(it.counts)
}

/// `--via model`: the kernel IR interpreted on the functional model.
pub struct ModelRun {
    /// The kernel.
    pub kernel: Kernel,
    /// The Gemmini's sizes.
    pub geo: Geometry,
}

impl crate::Executable for ModelRun {
    fn run(
        &self,
        prog: &Program,
        sizes: &[i64],
        tensors: &mut [TensorData],
        scalars: &[TensorData],
    ) -> Result<RunStats> {
        // A float description (4-byte elements in the scratchpad) runs the float model.
        if self.geo.elem_bytes == 4 {
            run_model::<Fp32>(&self.kernel, &self.geo, prog, sizes, tensors, scalars)
        } else {
            run_model::<Int8>(&self.kernel, &self.geo, prog, sizes, tensors, scalars)
        }
    }
}

/// Runs `kernel` on a functional model with the element types `T`.
fn run_model<T: ElemTypes>(
    kernel: &Kernel,
    geo: &Geometry,
    prog: &Program,
    sizes: &[i64],
    tensors: &mut [TensorData],
    scalars: &[TensorData],
) -> Result<RunStats> {
    {
        check_buffers(prog, sizes, tensors, scalars)?;
        let start = std::time::Instant::now();
        let mut it = new_interp::<T>(prog, sizes, geo);
        it.model = Some(Gemmini::<T>::with_types(model_config(geo)));
        it.scalars = scalars.iter().map(|s| s.buf.get_i64(0)).collect();
        it.fscalars = scalars.iter().map(|s| s.buf.get_f64(0)).collect();
        for (t, data) in tensors.iter().enumerate().take(prog.tensors.len()) {
            let bytes = as_bytes(data);
            if prog.tensors[t].role != polyhedral::ir::TensorRole::Temp {
                let o = it.offs[t];
                it.mem.bytes[o..o + bytes.len()].copy_from_slice(&bytes);
            }
        }
        it.exec(&kernel.body)?;
        // Outputs, and inputs a statement updates in place, come back from DRAM.
        for t in 0..prog.tensors.len().min(tensors.len()) {
            if prog.tensors[t].role == polyhedral::ir::TensorRole::Temp {
                continue;
            }
            let o = it.offs[t];
            let n = tensors[t].len() * prog.tensors[t].dtype.size_bytes();
            from_bytes(&mut tensors[t], &it.mem.bytes[o..o + n]);
        }
        let counters = it
            .model
            .as_ref()
            .map(|m| m.counters().clone())
            .unwrap_or_default();
        Ok(RunStats {
            run_ms: start.elapsed().as_secs_f64() * 1e3,
            device: Some(counters_text(&counters)),
        })
    }
}

/// Checks that every input and output tensor has a buffer of its type and size.
fn check_buffers(
    prog: &Program,
    sizes: &[i64],
    tensors: &[TensorData],
    scalars: &[TensorData],
) -> Result<()> {
    for (s, sc) in prog.scalars.iter().enumerate() {
        match scalars.get(s) {
            Some(d) if d.dtype() == sc.dtype && d.len() == 1 => {}
            _ => return Err(miette!("scalar `{}` needs one {} value", sc.name, sc.dtype)),
        }
    }
    if sizes.len() != prog.params.len() {
        return Err(miette!(
            "`{}` has {} sizes but {} values were given",
            prog.name,
            prog.params.len(),
            sizes.len()
        ));
    }
    for (t, ten) in prog.tensors.iter().enumerate() {
        if ten.role == polyhedral::ir::TensorRole::Temp {
            continue;
        }
        let n: i64 = ten
            .shape
            .iter()
            .map(|a| a.eval(&[], sizes).max(0))
            .product();
        match tensors.get(t) {
            Some(d) if d.dtype() == ten.dtype && d.len() as i64 == n => {}
            _ => {
                return Err(miette!(
                    "tensor `{}` needs a buffer of {n} {} elements for these sizes",
                    ten.name,
                    ten.dtype
                ))
            }
        }
    }
    Ok(())
}

fn as_bytes(d: &TensorData) -> Vec<u8> {
    let n = d.len() * d.dtype().size_bytes();
    let mut b = d.buf.clone();
    // SAFETY: the buffer holds `len` elements of its type, `n` bytes.
    unsafe { std::slice::from_raw_parts(b.as_mut_ptr() as *const u8, n) }.to_vec()
}

fn from_bytes(d: &mut TensorData, bytes: &[u8]) {
    let p = d.buf.as_mut_ptr();
    // SAFETY: `bytes` has exactly the buffer's byte length (checked by the caller's sizes).
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len()) };
}

/// `--via c`: the emitted C built against polyc's host header, run on the model.
pub struct HostCRun {
    kernel: std::cell::RefCell<HostKernel>,
    geo: Geometry,
    fp32: bool,
}

impl HostCRun {
    /// Builds the emitted C for the host.
    /// Builds the emitted C for the host; `fp32` selects Gemmini's float configuration
    /// (the header's `POLYC_GEMMINI_FP32`, run on a float model).
    pub fn build(source: &str, geo: Geometry, fp32: bool) -> Result<HostCRun> {
        let mut opts = HostCcOptions::default();
        if fp32 {
            opts.extra_flags
                .push(format!("-D{}", super::host::FP32_DEFINE));
        }
        let k = compile_host(source, &opts)?;
        Ok(HostCRun {
            kernel: std::cell::RefCell::new(k),
            geo,
            fp32,
        })
    }
}

impl crate::Executable for HostCRun {
    fn run(
        &self,
        prog: &Program,
        sizes: &[i64],
        tensors: &mut [TensorData],
        scalars: &[TensorData],
    ) -> Result<RunStats> {
        check_buffers(prog, sizes, tensors, scalars)?;
        let start = std::time::Instant::now();
        let mut size_copies: Vec<i64> = sizes.to_vec();
        let mut scalar_copies: Vec<TensorData> = scalars.to_vec();
        let mut args: Vec<*mut std::ffi::c_void> = Vec::new();
        for v in size_copies.iter_mut() {
            args.push(v as *mut i64 as *mut std::ffi::c_void);
        }
        for input in &prog.inputs {
            match *input {
                InputRef::Tensor(t) => args.push(tensors[t].buf.as_mut_ptr() as *mut _),
                InputRef::Scalar(s) => args.push(scalar_copies[s].buf.as_mut_ptr() as *mut _),
            }
        }
        for &t in &prog.outputs {
            args.push(tensors[t].buf.as_mut_ptr() as *mut _);
        }
        let entry = crate::codegen::cfamily::entry_symbol(prog);
        // SAFETY: the arguments follow the emitted entry's contract (sizes, inputs, outputs,
        // each buffer as large as the sizes say), and the instructions address only them.
        let r = unsafe {
            if self.fp32 {
                let mut model = Gemmini::<Fp32>::with_types(GemminiConfig::fp32());
                self.kernel
                    .borrow_mut()
                    .run(&entry, &mut args, &mut model)?
            } else {
                let mut model = Gemmini::new(model_config(&self.geo));
                self.kernel
                    .borrow_mut()
                    .run(&entry, &mut args, &mut model)?
            }
        };
        if r.status != 0 {
            return Err(miette!(
                "kernel `{}` returned status {} (a size differs from the one compiled in, or a temporary could not be allocated)",
                prog.name,
                r.status
            ));
        }
        Ok(RunStats {
            run_ms: start.elapsed().as_secs_f64() * 1e3,
            device: Some(counters_text(&r.counters)),
        })
    }
}
