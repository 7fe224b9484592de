//! [`Prog::validate`]: the rules every generated or shrunk program obeys (see the module
//! documentation of `gen`), and the magnitude bounds behind them.

use super::*;

/// The most statement instances a case may run (keeps the interpreter and the kernel
/// cheap whatever the shrinker or the generator does).
pub const MAX_INSTANCES: i64 = 60_000;

impl Prog {
    /// Checks every rule of a fair program; `Err` says which one is broken.
    pub fn validate(&self) -> Result<(), String> {
        self.check_shapes()?;
        let mut defined: Vec<bool> = self
            .tensors
            .iter()
            .map(|t| matches!(t.role, Role::Input | Role::Output { inout: true }))
            .collect();
        let mut written = vec![false; self.tensors.len()];
        let mut bound: Vec<f64> = self.tensors.iter().map(|t| t.dtype.input_bound()).collect();
        for (k, s) in self.stmts.iter().enumerate() {
            self.check_stmt(s, &defined)
                .map_err(|e| format!("S{k} `{}`: {e}", self.stmt_text(s)))?;
            let b = self
                .stmt_bound(s, &bound)
                .map_err(|e| format!("S{k} `{}`: {e}", self.stmt_text(s)))?;
            bound[s.lhs] = bound[s.lhs].max(b);
            defined[s.lhs] = true;
            written[s.lhs] = true;
        }
        for (t, w) in self.tensors.iter().zip(&written) {
            if !w && matches!(t.role, Role::Output { .. } | Role::Temp) {
                return Err(format!("`{}` is never written", t.name));
            }
        }
        self.check_temp_types()?;
        if !self
            .tensors
            .iter()
            .any(|t| matches!(t.role, Role::Output { .. }))
        {
            return Err("no output".into());
        }
        if self.instances() > MAX_INSTANCES {
            return Err(format!("{} instances", self.instances()));
        }
        Ok(())
    }

    /// A temporary takes the type of the first tensor (or else scalar) its first
    /// statement reads: that must be the program's type.
    fn check_temp_types(&self) -> Result<(), String> {
        for (k, t) in self.tensors.iter().enumerate() {
            if t.role != Role::Temp {
                continue;
            }
            let Some(s) = self.stmts.iter().find(|s| s.lhs == k) else {
                continue;
            };
            let mut first: Option<Option<DType>> = None;
            let mut scalar = false;
            s.rhs.visit(&mut |e| match e {
                Expr::Read { t, .. } if first.is_none() => {
                    first = Some(Some(self.tensors[*t].dtype));
                }
                Expr::Scalar(_) => scalar = true,
                _ => {}
            });
            let typed = match first {
                Some(d) => d == Some(self.dtype),
                None => scalar,
            };
            if !typed {
                return Err(format!(
                    "the type of temporary `{}` is not the program's",
                    t.name
                ));
            }
        }
        Ok(())
    }

    /// Sizes, windows, tensor dimensions and input types.
    fn check_shapes(&self) -> Result<(), String> {
        if self.sizes.iter().any(|&v| v < 1) {
            return Err("a size below 1".into());
        }
        if self.sizes[0] < self.sizes[3] || self.sizes[1] < self.sizes[4] {
            return Err("a window larger than its axis".into());
        }
        if self.stmts.is_empty() {
            return Err("no statement".into());
        }
        for t in &self.tensors {
            for (a, d) in t.dims.iter().enumerate() {
                if t.dims[..a].iter().any(|e| e.fam == d.fam) {
                    return Err(format!("`{}` has family {} twice", t.name, d.fam));
                }
                if d.valid && window_of(d.fam).is_none() {
                    return Err(format!("`{}` has a valid extent without a window", t.name));
                }
            }
            if t.role == Role::Input && t.dtype == DType::I8 && self.dtype != DType::I32 {
                return Err("i8 inputs only in integer programs".into());
            }
        }
        Ok(())
    }

    /// One statement: its indices, every node of its right side, and a first write that
    /// covers the whole tensor.
    fn check_stmt(&self, s: &Stmt, defined: &[bool]) -> Result<(), String> {
        let lhs = &self.tensors[s.lhs];
        if lhs.dtype != self.dtype {
            return Err("the left side's type is not the program's".into());
        }
        for (a, v) in s.vars.iter().enumerate() {
            if s.vars[..a].iter().any(|e| e.fam == v.fam) {
                return Err("an index twice".into());
            }
        }
        for d in &lhs.dims {
            if s.vars.iter().find(|e| e.fam == d.fam) != Some(d) {
                return Err("the left side's index extents differ from its dimensions".into());
            }
        }
        let mut err = None;
        s.rhs.visit(&mut |e| {
            if err.is_none() {
                err = self.check_node(e, s, defined).err();
            }
        });
        if let Some(e) = err {
            return Err(e);
        }
        let m = self.margins(s);
        let lhs_fams: Vec<u8> = lhs.dims.iter().map(|d| d.fam).collect();
        let shifted_reduction = s.vars.iter().any(|v| {
            let mm = &m[v.fam as usize];
            !lhs_fams.contains(&v.fam) && (mm.lo != 0 || mm.hi != 0)
        });
        if s.init && matches!(s.op, Op::Max | Op::Min) && shifted_reduction {
            return Err("a max/min reduction that may be empty".into());
        }
        if !defined[s.lhs] {
            if lhs
                .dims
                .iter()
                .any(|d| m[d.fam as usize].lo != 0 || m[d.fam as usize].hi != 0)
            {
                return Err("the first write of a tensor covers only part of it".into());
            }
            if s.op != Op::Assign && !s.init {
                return Err("accumulates into a tensor nothing wrote".into());
            }
        }
        Ok(())
    }

    /// One node of a right side: reads in bounds of written tensors, known scalars and
    /// indices, functions of the program's type, select conditions on inputs.
    fn check_node(&self, e: &Expr, s: &Stmt, defined: &[bool]) -> Result<(), String> {
        let float = self.dtype.is_float();
        let ext = |fam: u8| s.vars.iter().find(|e| e.fam == fam).copied();
        match e {
            Expr::Read { t, idx } => {
                let tensor = self.tensors.get(*t).ok_or("no such tensor")?;
                if !defined[*t] {
                    return Err(format!("reads `{}` before it is written", tensor.name));
                }
                if idx.len() != tensor.dims.len() {
                    return Err("wrong number of indices".into());
                }
                for (d, i) in tensor.dims.iter().zip(idx) {
                    check_index(d, i, &ext)?;
                }
            }
            Expr::Scalar(k) if *k >= self.scalars.len() => return Err("no such scalar".into()),
            Expr::Index(f) if ext(*f).is_none() => return Err("an unknown index value".into()),
            Expr::Bin(Bin::SafeDiv, ..) if !float => return Err("float division".into()),
            Expr::Un(op, _) => {
                let float_only =
                    matches!(op, Un::Tanh | Un::Exp | Un::Sigmoid | Un::Sqrt | Un::Log);
                let int_only = matches!(op, Un::DivBy(_) | Un::RemBy(_));
                if (float_only && !float) || (int_only && float) {
                    return Err("a function of the wrong type".into());
                }
                if let Un::DivBy(c) | Un::RemBy(c) = op {
                    if *c < 1 {
                        return Err("division by a non-positive literal".into());
                    }
                }
            }
            Expr::Select(v) if float => {
                for c in &v[..2] {
                    let Expr::Read { t, .. } = c else {
                        return Err("a select condition that is not a read".into());
                    };
                    let written = self.stmts.iter().any(|st| st.lhs == *t);
                    if self.tensors[*t].role != Role::Input || written {
                        return Err("a select condition on computed values".into());
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The magnitude bound of what `s` leaves in its left side, or an error when a
    /// sub-expression or the result exceeds the limits.
    fn stmt_bound(&self, s: &Stmt, bound: &[f64]) -> Result<f64, String> {
        let rhs = self.expr_bound(&s.rhs, s, bound)?;
        let lhs_dims: Vec<u8> = self.tensors[s.lhs].dims.iter().map(|d| d.fam).collect();
        let m = self.margins(s);
        let reduced: f64 = s
            .vars
            .iter()
            .filter(|v| !lhs_dims.contains(&v.fam) && m[v.fam as usize].used)
            .map(|v| v.value(&self.sizes).max(1) as f64)
            .product();
        let old = if s.init { 0.0 } else { bound[s.lhs] };
        let out = match s.op {
            Op::Assign => rhs.max(if s.init { 0.0 } else { old }),
            Op::Add => {
                if rhs > self.dtype.reduce_limit() {
                    return Err(format!("a sum of terms up to {rhs}"));
                }
                old + rhs * reduced
            }
            Op::Mul => {
                if rhs > 1.0 || old > self.dtype.reduce_limit() {
                    return Err(format!("a product of factors up to {rhs}"));
                }
                old.max(1.0)
            }
            Op::Max | Op::Min => old.max(rhs),
        };
        if out > self.dtype.limit() || !out.is_finite() {
            return Err(format!("a result up to {out}"));
        }
        Ok(out)
    }

    /// The magnitude bound of `e` in statement `s`, or an error when some node exceeds the
    /// type's limit.
    pub(crate) fn expr_bound(&self, e: &Expr, s: &Stmt, bound: &[f64]) -> Result<f64, String> {
        let b = match e {
            Expr::Read { t, .. } => bound[*t],
            Expr::Scalar(_) => self.dtype.input_bound(),
            Expr::Lit(v) => v.abs(),
            Expr::Index(f) => s
                .vars
                .iter()
                .find(|v| v.fam == *f)
                .map_or(0, |v| v.value(&self.sizes)) as f64,
            Expr::Bin(op, a, c) => {
                let (a, c) = (self.expr_bound(a, s, bound)?, self.expr_bound(c, s, bound)?);
                match op {
                    Bin::Add | Bin::Sub => a + c,
                    Bin::Mul => a * c,
                    Bin::SafeDiv => a,
                    Bin::Max | Bin::Min => a.max(c),
                }
            }
            Expr::Un(op, a) => {
                let a = self.expr_bound(a, s, bound)?;
                match op {
                    Un::Neg | Un::Abs | Un::Relu | Un::DivBy(_) => a,
                    Un::Tanh | Un::Sigmoid => 1.0,
                    Un::Exp if a > 50.0 => return Err(format!("exp of up to {a}")),
                    Un::Exp => (0.1 * a).exp(),
                    Un::Sqrt => a.sqrt(),
                    Un::Log => (a + 1.0).ln(),
                    Un::RemBy(c) => a.min((*c - 1) as f64),
                }
            }
            Expr::Select(v) => {
                for c in &v[..2] {
                    self.expr_bound(c, s, bound)?;
                }
                let x = self.expr_bound(&v[2], s, bound)?;
                x.max(self.expr_bound(&v[3], s, bound)?)
            }
        };
        if b > self.dtype.limit() || !b.is_finite() {
            return Err(format!("a value up to {b}"));
        }
        Ok(b)
    }
}

/// Checks one index of a read of a dimension of extent `d`; `ext` gives the statement's
/// index extents.
fn check_index(d: &Ext, i: &Idx, ext: &dyn Fn(u8) -> Option<Ext>) -> Result<(), String> {
    match *i {
        Idx::Var { fam, .. } => {
            let e = ext(fam).ok_or("an index the statement does not declare")?;
            if !d.covers(&e) {
                return Err(format!(
                    "`{}` may leave a dimension of extent {}",
                    var(fam),
                    d.text()
                ));
            }
        }
        Idx::Win { fam } => {
            let w = window_of(fam).ok_or("a window on a family without one")?;
            let e = ext(fam).ok_or("a window index the statement does not declare")?;
            let we = ext(w).ok_or("a window without its window index")?;
            if *d != Ext::full(fam) || !e.valid || e.fam != fam || we != Ext::full(w) {
                return Err("a window that may leave its dimension".into());
            }
        }
        Idx::Zero => {}
    }
    Ok(())
}
