//! [`generate`]: random programs (chains, reductions, transposed layouts, windows, in-place
//! and shifted updates, temporaries) that pass [`Prog::validate`].

use super::*;

/// The statement being generated: its indices and what it may add.
struct Ctx {
    vars: Vec<Ext>,
    /// New indices may be added (reductions).
    new_vars: bool,
    /// Reads may be shifted (`i - 1`): only in updates of whole tensors.
    offsets: bool,
    lhs: usize,
    lhs_defined: bool,
}

impl Ctx {
    /// The extent of the statement's index of family `fam`, if it has one.
    fn ext(&self, fam: u8) -> Option<Ext> {
        self.vars.iter().find(|e| e.fam == fam).copied()
    }
}

struct Gen<'a> {
    rng: &'a mut ChaCha8Rng,
    p: Prog,
    defined: Vec<bool>,
    windows: bool,
}

/// A random valid program named `name` (retries until [`Prog::validate`] accepts one).
pub fn generate(rng: &mut ChaCha8Rng, name: &str) -> Prog {
    generate_typed(rng, name, None)
}

/// [`generate`] with the arithmetic type fixed (`None`: drawn at random).
pub fn generate_typed(rng: &mut ChaCha8Rng, name: &str, dtype: Option<DType>) -> Prog {
    for _ in 0..200 {
        let p = attempt(rng, name, dtype);
        if p.validate().is_ok() {
            return p;
        }
    }
    fallback(name)
}

/// The program [`generate`] returns if no random one validates (never in practice).
fn fallback(name: &str) -> Prog {
    let x = Tensor {
        name: "X0".into(),
        dtype: DType::F32,
        dims: vec![Ext::full(0)],
        role: Role::Input,
    };
    let y = Tensor {
        name: "T0".into(),
        role: Role::Output { inout: false },
        ..x.clone()
    };
    Prog {
        name: name.into(),
        dtype: DType::F32,
        sizes: [3, 3, 3, 1, 1],
        tensors: vec![x, y],
        scalars: vec![],
        stmts: vec![Stmt {
            lhs: 1,
            op: Op::Assign,
            init: false,
            rhs: Expr::Read {
                t: 0,
                idx: vec![Idx::Var { fam: 0, off: 0 }],
            },
            vars: vec![Ext::full(0)],
            explicit: false,
        }],
    }
}

/// One random program (maybe invalid: [`generate`] validates and retries).
fn attempt(rng: &mut ChaCha8Rng, name: &str, dtype: Option<DType>) -> Prog {
    let drawn = match rng.gen_range(0..20) {
        0..=8 => DType::F32,
        9..=12 => DType::F64,
        _ => DType::I32,
    };
    let dtype = dtype.unwrap_or(drawn);
    let n = small_size(rng, 20);
    let m = small_size(rng, 20);
    let k = small_size(rng, 20);
    let sizes = [
        n,
        m,
        k,
        rng.gen_range(1..=3).min(n),
        rng.gen_range(1..=3).min(m),
    ];
    let windows = rng.gen_bool(0.35);
    let mut g = Gen {
        rng,
        p: Prog {
            name: name.into(),
            dtype,
            sizes,
            tensors: Vec::new(),
            scalars: Vec::new(),
            stmts: Vec::new(),
        },
        defined: Vec::new(),
        windows,
    };
    let count = pick(g.rng, &[1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 5, 6]);
    for _ in 0..count {
        let s = g.stmt();
        g.defined[s.lhs] = true;
        g.p.stmts.push(s);
    }
    g.choose_outputs();
    g.p
}

impl Gen<'_> {
    /// Adds a tensor named `prefix` and a number; returns its id.
    fn add_tensor(&mut self, prefix: &str, dtype: DType, dims: Vec<Ext>, role: Role) -> usize {
        let k = self
            .p
            .tensors
            .iter()
            .filter(|t| t.name.starts_with(prefix))
            .count();
        self.p.tensors.push(Tensor {
            name: format!("{prefix}{k}"),
            dtype,
            dims,
            role,
        });
        self.defined.push(role == Role::Input);
        self.p.tensors.len() - 1
    }

    /// Random dimensions for a new tensor: up to three data families in a random order,
    /// some with the valid extent of their window.
    fn new_dims(&mut self) -> Vec<Ext> {
        let n = pick(self.rng, &[0, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3]);
        let mut fams = vec![0u8, 1, 2];
        fams.shuffle(self.rng);
        fams.truncate(n);
        if self.rng.gen_bool(0.5) {
            fams.sort_unstable();
        }
        fams.into_iter()
            .map(|fam| Ext {
                fam,
                valid: self.windows && window_of(fam).is_some() && self.rng.gen_bool(0.5),
            })
            .collect()
    }

    /// A random statement: a new tensor or an update of a written one, an operator, and a
    /// right side whose reads may add reduction indices.
    fn stmt(&mut self) -> Stmt {
        let written: Vec<usize> = (0..self.p.tensors.len())
            .filter(|&t| self.defined[t] && self.p.tensors[t].dtype == self.p.dtype)
            .collect();
        let update = !written.is_empty() && self.rng.gen_bool(0.3);
        let (lhs, op, init) = if update {
            let lhs = pick(self.rng, &written);
            let (op, init) = pick(
                self.rng,
                &[
                    (Op::Assign, false),
                    (Op::Assign, false),
                    (Op::Assign, false),
                    (Op::Add, false),
                    (Op::Add, false),
                    (Op::Max, false),
                    (Op::Min, false),
                    (Op::Add, true),
                    (Op::Mul, false),
                ],
            );
            (lhs, op, init)
        } else {
            let (op, init) = pick(
                self.rng,
                &[
                    (Op::Assign, false),
                    (Op::Assign, false),
                    (Op::Assign, false),
                    (Op::Add, true),
                    (Op::Add, true),
                    (Op::Add, true),
                    (Op::Max, true),
                    (Op::Min, true),
                    (Op::Mul, true),
                    (Op::Add, false),
                ],
            );
            let role = if init || op == Op::Assign {
                Role::Temp
            } else {
                Role::Output { inout: true }
            };
            let dims = self.new_dims();
            (self.add_tensor("T", self.p.dtype, dims, role), op, init)
        };
        let reduce = op != Op::Assign;
        let mut cx = Ctx {
            vars: self.p.tensors[lhs].dims.clone(),
            new_vars: reduce || self.rng.gen_bool(0.05),
            offsets: update && !(init && op != Op::Add) && self.rng.gen_bool(0.4),
            lhs,
            lhs_defined: update,
        };
        let depth = self.rng.gen_range(0..=3);
        let rhs = self.expr(&mut cx, depth);
        let mut s = Stmt {
            lhs,
            op,
            init,
            rhs,
            vars: cx.vars,
            explicit: self.rng.gen_bool(0.3),
        };
        self.bound_rhs(&mut s);
        s
    }

    /// Wraps sub-expressions (floats in `tanh`, integers in `% 97`) until every bound of
    /// [`Prog::validate`] holds for the statement.
    fn bound_rhs(&mut self, s: &mut Stmt) {
        let bounds = self.bounds();
        let rhs = std::mem::replace(&mut s.rhs, Expr::Lit(0.0));
        s.rhs = self.fix(rhs, s, &bounds);
        let b = self
            .p
            .expr_bound(&s.rhs, s, &bounds)
            .unwrap_or(f64::INFINITY);
        let limit = match s.op {
            Op::Mul => 1.0,
            Op::Add => self.p.dtype.reduce_limit() / 8.0,
            _ => self.p.dtype.limit() / 64.0,
        };
        if b > limit {
            let e = std::mem::replace(&mut s.rhs, Expr::Lit(0.0));
            s.rhs = self.squash(e, s.op == Op::Mul);
        }
    }

    /// The magnitude bound of every tensor after the statements so far.
    fn bounds(&self) -> Vec<f64> {
        let mut b: Vec<f64> = self
            .p
            .tensors
            .iter()
            .map(|t| t.dtype.input_bound())
            .collect();
        for s in &self.p.stmts {
            let r = self.p.expr_bound(&s.rhs, s, &b).unwrap_or(f64::INFINITY);
            let red: f64 = s
                .vars
                .iter()
                .map(|v| v.value(&self.p.sizes) as f64)
                .product();
            b[s.lhs] = b[s.lhs].max(if s.op == Op::Add { r * red } else { r.max(1.0) });
        }
        b
    }

    /// Bounds `e`: `tanh` for floats, `% 97` (or `% 2` for a product's factor) for integers.
    fn squash(&mut self, e: Expr, unit: bool) -> Expr {
        if self.p.dtype.is_float() {
            Expr::Un(Un::Tanh, Box::new(e))
        } else {
            Expr::Un(Un::RemBy(if unit { 2 } else { 97 }), Box::new(e))
        }
    }

    /// Bottom-up: wraps the operands of any node whose bound exceeds the limit.
    fn fix(&mut self, e: Expr, s: &Stmt, bounds: &[f64]) -> Expr {
        let e = match e {
            Expr::Bin(op, a, b) => {
                let a = self.fix(*a, s, bounds);
                let b = self.fix(*b, s, bounds);
                Expr::Bin(op, Box::new(a), Box::new(b))
            }
            Expr::Un(op, a) => {
                let a = self.fix(*a, s, bounds);
                let too_big = op == Un::Exp
                    && self.p.expr_bound(&a, s, bounds).unwrap_or(f64::INFINITY) > 20.0;
                let a = if too_big { self.squash(a, false) } else { a };
                Expr::Un(op, Box::new(a))
            }
            other => other,
        };
        let limit = self.p.dtype.limit() / 64.0;
        if self.p.expr_bound(&e, s, bounds).unwrap_or(f64::INFINITY) <= limit {
            return e;
        }
        match e {
            Expr::Bin(op, a, b) => {
                let a = self.squash(*a, false);
                let b = self.squash(*b, false);
                Expr::Bin(op, Box::new(a), Box::new(b))
            }
            other => self.squash(other, false),
        }
    }

    /// A random expression of at most `depth` levels.
    fn expr(&mut self, cx: &mut Ctx, depth: u32) -> Expr {
        if depth == 0 || self.rng.gen_bool(0.25) {
            return self.leaf(cx);
        }
        let float = self.p.dtype.is_float();
        if self.rng.gen_bool(0.6) {
            let ops: &[Bin] = if float {
                &[
                    Bin::Add,
                    Bin::Add,
                    Bin::Sub,
                    Bin::Mul,
                    Bin::Mul,
                    Bin::SafeDiv,
                    Bin::Max,
                    Bin::Min,
                ]
            } else {
                &[
                    Bin::Add,
                    Bin::Add,
                    Bin::Sub,
                    Bin::Mul,
                    Bin::Mul,
                    Bin::Max,
                    Bin::Min,
                ]
            };
            let op = pick(self.rng, ops);
            let a = self.expr(cx, depth - 1);
            let b = self.expr(cx, depth - 1);
            Expr::Bin(op, Box::new(a), Box::new(b))
        } else {
            let op = if float {
                pick(
                    self.rng,
                    &[
                        Un::Neg,
                        Un::Abs,
                        Un::Relu,
                        Un::Tanh,
                        Un::Exp,
                        Un::Sigmoid,
                        Un::Sqrt,
                        Un::Log,
                    ],
                )
            } else {
                let c = pick(self.rng, &[2, 3, 5, 7]);
                pick(
                    self.rng,
                    &[Un::Neg, Un::Abs, Un::Relu, Un::DivBy(c), Un::RemBy(c)],
                )
            };
            let a = self.expr(cx, depth - 1);
            Expr::Un(op, Box::new(a))
        }
    }

    /// A random leaf: a read, a literal, a scalar, an index value, or a select.
    fn leaf(&mut self, cx: &mut Ctx) -> Expr {
        match self.rng.gen_range(0..100) {
            0..=71 => self.read(cx),
            72..=79 => {
                let v = pick(self.rng, &[0.5, 2.0, 3.0, -1.0, 0.25, 1.5, 7.0]);
                Expr::Lit(if self.p.dtype.is_float() {
                    v
                } else {
                    v.trunc()
                })
            }
            80..=86 => {
                if self.p.scalars.is_empty() || (self.p.scalars.len() < 2 && self.rng.gen_bool(0.3))
                {
                    let k = self.p.scalars.len();
                    self.p.scalars.push(format!("a{k}"));
                }
                Expr::Scalar(self.rng.gen_range(0..self.p.scalars.len()))
            }
            87..=91 if !cx.vars.is_empty() => {
                let v = pick(self.rng, &cx.vars);
                Expr::Index(v.fam)
            }
            92..=99 => self.select(cx),
            _ => self.read(cx),
        }
    }

    /// `select(a < b, x, y)` with `a` and `b` fresh inputs.
    fn select(&mut self, cx: &mut Ctx) -> Expr {
        let saved = cx.new_vars;
        // Conditions read fresh inputs only: exact values on every target.
        let a = self.fresh_read(cx);
        let b = self.fresh_read(cx);
        cx.new_vars = saved;
        let x = self.read(cx);
        let y = self.leaf(cx);
        Expr::Select(Box::new([a, b, x, y]))
    }

    /// A read of a tensor written before (or an input), or of a fresh input.
    fn read(&mut self, cx: &mut Ctx) -> Expr {
        let candidates: Vec<usize> = (0..self.p.tensors.len())
            .filter(|&t| self.defined[t] && (t != cx.lhs || cx.lhs_defined))
            .collect();
        if !candidates.is_empty() && self.rng.gen_bool(0.6) {
            let t = pick(self.rng, &candidates);
            let saved = cx.vars.clone();
            if let Some(idx) = self.indices(t, cx) {
                return Expr::Read { t, idx };
            }
            cx.vars = saved;
        }
        self.fresh_read(cx)
    }

    /// The indices of a read of `t`, adding reduction indices where allowed; `None` when
    /// some dimension cannot be read in bounds.
    fn indices(&mut self, t: usize, cx: &mut Ctx) -> Option<Vec<Idx>> {
        let dims = self.p.tensors[t].dims.clone();
        let mut idx = Vec::new();
        for d in dims {
            idx.push(self.index(d, cx)?);
        }
        Some(idx)
    }

    /// The index of a read of a dimension of extent `d`: the statement's index (maybe
    /// shifted, or windowed over a valid extent), a new reduction index, or `0`; `None`
    /// when none stays in bounds.
    fn index(&mut self, d: Ext, cx: &mut Ctx) -> Option<Idx> {
        if let Some(e) = cx.ext(d.fam) {
            let win = window_of(d.fam);
            let can_win = d == Ext::full(d.fam)
                && e.valid
                && win.is_some_and(|w| match cx.ext(w) {
                    Some(we) => we == Ext::full(w),
                    None => cx.new_vars,
                });
            if can_win && self.rng.gen_bool(0.7) {
                let w = win?;
                if cx.ext(w).is_none() {
                    cx.vars.push(Ext::full(w));
                }
                return Some(Idx::Win { fam: d.fam });
            }
            if d.covers(&e) {
                let off = if cx.offsets && self.rng.gen_bool(0.4) {
                    pick(self.rng, &[-1i8, 1, -2])
                } else {
                    0
                };
                return Some(Idx::Var { fam: d.fam, off });
            }
            return self.rng.gen_bool(0.3).then_some(Idx::Zero);
        }
        if cx.new_vars && self.rng.gen_bool(0.9) {
            cx.vars.push(d);
            return Some(Idx::Var { fam: d.fam, off: 0 });
        }
        self.rng.gen_bool(0.5).then_some(Idx::Zero)
    }

    /// A read of a new input whose dimensions follow the statement's indices (some
    /// dropped, some reduction indices added, windows over valid extents, any order).
    fn fresh_read(&mut self, cx: &mut Ctx) -> Expr {
        let mut dims: Vec<Ext> = Vec::new();
        for v in cx.vars.clone() {
            if !self.rng.gen_bool(0.75) {
                continue;
            }
            let windowed = v.valid && self.rng.gen_bool(0.6);
            dims.push(if windowed { Ext::full(v.fam) } else { v });
        }
        if cx.new_vars && self.rng.gen_bool(0.6) {
            let free: Vec<u8> = (0..3u8).filter(|f| cx.ext(*f).is_none()).collect();
            if let Some(&f) = free.choose(self.rng) {
                dims.push(Ext::full(f));
            }
        }
        if self.windows && cx.new_vars && self.rng.gen_bool(0.3) {
            // A filter: `W(r, s)` over the windows of the valid indices.
            for f in [0u8, 1] {
                if cx.ext(f).is_some_and(|e| e.valid) {
                    let w = window_of(f).unwrap_or(3);
                    if !dims.iter().any(|d| d.fam == w) {
                        dims.push(Ext::full(w));
                    }
                }
            }
        }
        if self.rng.gen_bool(0.4) {
            dims.shuffle(self.rng);
        }
        let dtype = if self.p.dtype == DType::I32 && self.rng.gen_bool(0.3) {
            DType::I8
        } else {
            self.p.dtype
        };
        let t = self.add_tensor("X", dtype, dims, Role::Input);
        let saved = cx.vars.clone();
        let forced = cx.new_vars;
        cx.new_vars = true;
        let idx = self.indices(t, cx);
        cx.new_vars = forced;
        match idx {
            Some(idx) if forced || cx.vars == saved => Expr::Read { t, idx },
            _ => {
                // No in-bounds read of that shape: a scalar instead.
                cx.vars = saved;
                self.p.tensors.pop();
                self.defined.pop();
                if self.p.scalars.is_empty() {
                    self.p.scalars.push("a0".into());
                }
                Expr::Scalar(0)
            }
        }
    }

    /// Makes the last statement's tensor, every tensor nothing reads afterwards, and some
    /// others outputs.
    fn choose_outputs(&mut self) {
        let n = self.p.stmts.len();
        for (k, s) in self.p.stmts.iter().enumerate() {
            let t = s.lhs;
            if self.p.tensors[t].role != Role::Temp {
                continue;
            }
            let read_later = self.p.stmts[k + 1..].iter().any(|s2| {
                let mut r = false;
                s2.rhs.visit(&mut |e| {
                    if let Expr::Read { t: u, .. } = e {
                        r |= *u == t;
                    }
                });
                r
            });
            if k + 1 == n || !read_later || self.rng.gen_bool(0.3) {
                self.p.tensors[t].role = Role::Output { inout: false };
            }
        }
    }
}
