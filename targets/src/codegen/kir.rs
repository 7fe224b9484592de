//! The kernel IR: loops, guards and statement instances, as isl's AST generator produces
//! them, in a form that the emitters (C today; CUDA and OpenCL later) print without
//! touching isl.
//!
//! All integer expressions ([`KExpr`]) are over `int64_t` loop iterators and size
//! parameters. Their division and remainder operators keep isl's distinctions so that an
//! emitter can pick the cheapest correct C operator for each.

/// A comparison operator in a [`KExpr::Cmp`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KCmp {
    /// `==`
    Eq,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl KCmp {
    /// The C spelling.
    pub fn c_op(self) -> &'static str {
        match self {
            KCmp::Eq => "==",
            KCmp::Lt => "<",
            KCmp::Le => "<=",
            KCmp::Gt => ">",
            KCmp::Ge => ">=",
        }
    }
}

/// An integer expression of the kernel IR (64-bit, signed).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum KExpr {
    /// A constant.
    Int(i64),
    /// A loop iterator (named as in [`KNode::For::iter`]) or a size parameter (named as in
    /// `Program::params`; the emitter replaces bound sizes by their value).
    Var(String),
    /// `a + b`
    Add(Box<KExpr>, Box<KExpr>),
    /// `a - b`
    Sub(Box<KExpr>, Box<KExpr>),
    /// `a * b`
    Mul(Box<KExpr>, Box<KExpr>),
    /// `-a`
    Neg(Box<KExpr>),
    /// Floor division `⌊a / b⌋` (isl `fdiv_q`; `b` is positive). C: `polyc_floord(a, b)`.
    FloorDiv(Box<KExpr>, Box<KExpr>),
    /// Division where C's truncating `/` is correct: isl `div` (exact) and `pdiv_q`
    /// (non-negative dividend, positive divisor).
    Div(Box<KExpr>, Box<KExpr>),
    /// C's remainder `a % b`, used for isl `pdiv_r` (non-negative dividend, so it equals
    /// the mathematical modulo) and `zdiv_r` (only ever compared with zero, where C's `%`
    /// is equally correct).
    Rem(Box<KExpr>, Box<KExpr>),
    /// Minimum of two or more values.
    Min(Vec<KExpr>),
    /// Maximum of two or more values.
    Max(Vec<KExpr>),
    /// A comparison, 1 or 0.
    Cmp(KCmp, Box<KExpr>, Box<KExpr>),
    /// Logical and (short-circuit; isl `and` and `and_then`).
    And(Box<KExpr>, Box<KExpr>),
    /// Logical or (short-circuit; isl `or` and `or_else`).
    Or(Box<KExpr>, Box<KExpr>),
    /// `c ? a : b` (isl `cond` and `select`).
    Select(Box<KExpr>, Box<KExpr>, Box<KExpr>),
}

impl KExpr {
    /// A variable.
    pub fn var(name: &str) -> KExpr {
        KExpr::Var(name.to_string())
    }
    /// Replaces every [`KExpr::Var`] with `f(name)` where `f` returns `Some`.
    pub fn substitute(&self, f: &impl Fn(&str) -> Option<KExpr>) -> KExpr {
        let b = |e: &KExpr| Box::new(e.substitute(f));
        match self {
            KExpr::Int(v) => KExpr::Int(*v),
            KExpr::Var(n) => f(n).unwrap_or_else(|| KExpr::Var(n.clone())),
            KExpr::Add(x, y) => KExpr::Add(b(x), b(y)),
            KExpr::Sub(x, y) => KExpr::Sub(b(x), b(y)),
            KExpr::Mul(x, y) => KExpr::Mul(b(x), b(y)),
            KExpr::Neg(x) => KExpr::Neg(b(x)),
            KExpr::FloorDiv(x, y) => KExpr::FloorDiv(b(x), b(y)),
            KExpr::Div(x, y) => KExpr::Div(b(x), b(y)),
            KExpr::Rem(x, y) => KExpr::Rem(b(x), b(y)),
            KExpr::Min(v) => KExpr::Min(v.iter().map(|e| e.substitute(f)).collect()),
            KExpr::Max(v) => KExpr::Max(v.iter().map(|e| e.substitute(f)).collect()),
            KExpr::Cmp(op, x, y) => KExpr::Cmp(*op, b(x), b(y)),
            KExpr::And(x, y) => KExpr::And(b(x), b(y)),
            KExpr::Or(x, y) => KExpr::Or(b(x), b(y)),
            KExpr::Select(c, x, y) => KExpr::Select(b(c), b(x), b(y)),
        }
    }
    /// Calls `f` with the name of every [`KExpr::Var`] in `self`, in order.
    pub fn for_each_var(&self, f: &mut impl FnMut(&str)) {
        match self {
            KExpr::Int(_) => {}
            KExpr::Var(n) => f(n),
            KExpr::Add(a, b)
            | KExpr::Sub(a, b)
            | KExpr::Mul(a, b)
            | KExpr::FloorDiv(a, b)
            | KExpr::Div(a, b)
            | KExpr::Rem(a, b)
            | KExpr::Cmp(_, a, b)
            | KExpr::And(a, b)
            | KExpr::Or(a, b) => {
                a.for_each_var(f);
                b.for_each_var(f);
            }
            KExpr::Neg(a) => a.for_each_var(f),
            KExpr::Min(v) | KExpr::Max(v) => v.iter().for_each(|x| x.for_each_var(f)),
            KExpr::Select(c, a, b) => {
                c.for_each_var(f);
                a.for_each_var(f);
                b.for_each_var(f);
            }
        }
    }
    /// Whether `self` mentions the variable `name`.
    pub fn mentions(&self, name: &str) -> bool {
        let mut found = false;
        self.for_each_var(&mut |n| found |= n == name);
        found
    }
    /// Evaluates with the given variable values (for tests and simulators). `None` if a
    /// variable is unknown or a division by zero occurs.
    pub fn eval(&self, env: &impl Fn(&str) -> Option<i64>) -> Option<i64> {
        let bin = |x: &KExpr, y: &KExpr| Some((x.eval(env)?, y.eval(env)?));
        Some(match self {
            KExpr::Int(v) => *v,
            KExpr::Var(n) => env(n)?,
            KExpr::Add(x, y) => {
                let (a, b) = bin(x, y)?;
                a.wrapping_add(b)
            }
            KExpr::Sub(x, y) => {
                let (a, b) = bin(x, y)?;
                a.wrapping_sub(b)
            }
            KExpr::Mul(x, y) => {
                let (a, b) = bin(x, y)?;
                a.wrapping_mul(b)
            }
            KExpr::Neg(x) => x.eval(env)?.wrapping_neg(),
            KExpr::FloorDiv(x, y) => {
                let (a, b) = bin(x, y)?;
                if b == 0 {
                    return None;
                }
                a.div_euclid(b) - if b < 0 && a.rem_euclid(b) != 0 { 1 } else { 0 }
            }
            KExpr::Div(x, y) => {
                let (a, b) = bin(x, y)?;
                a.checked_div(b)?
            }
            KExpr::Rem(x, y) => {
                let (a, b) = bin(x, y)?;
                a.checked_rem(b)?
            }
            KExpr::Min(v) => v
                .iter()
                .map(|e| e.eval(env))
                .collect::<Option<Vec<_>>>()?
                .into_iter()
                .min()?,
            KExpr::Max(v) => v
                .iter()
                .map(|e| e.eval(env))
                .collect::<Option<Vec<_>>>()?
                .into_iter()
                .max()?,
            KExpr::Cmp(op, x, y) => {
                let (a, b) = bin(x, y)?;
                let r = match op {
                    KCmp::Eq => a == b,
                    KCmp::Lt => a < b,
                    KCmp::Le => a <= b,
                    KCmp::Gt => a > b,
                    KCmp::Ge => a >= b,
                };
                r as i64
            }
            KExpr::And(x, y) => (x.eval(env)? != 0 && y.eval(env)? != 0) as i64,
            KExpr::Or(x, y) => (x.eval(env)? != 0 || y.eval(env)? != 0) as i64,
            KExpr::Select(c, x, y) => {
                if c.eval(env)? != 0 {
                    x.eval(env)?
                } else {
                    y.eval(env)?
                }
            }
        })
    }
}

/// How a loop's iterations run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum LoopKind {
    /// One after the other.
    #[default]
    Seq,
    /// In parallel on the cores (the CPU's parallel-loop pragma).
    Parallel,
    /// In order, fully unrolled by the compiler (constant trip count).
    Unrolled,
    /// Spread over the blocks of a GPU grid along dimension 0 (x), 1 (y) or 2 (z): block
    /// `b` runs iterations `b, b + grid, b + 2·grid, …` (a grid-stride loop), so any grid
    /// size is correct.
    Block(u8),
    /// Spread over the threads of a block along dimension 0 (x), 1 (y) or 2 (z): thread
    /// `t` runs iterations `t, t + block, …` (a block-stride loop).
    Thread(u8),
    /// Spread over all threads of a block, numbered x fastest (`x + X·(y + Y·z)`): a
    /// one-dimensional nest in a block of several dimensions keeps every thread busy.
    ThreadFlat,
}

impl LoopKind {
    /// Whether the iterations are spread over the threads of a block.
    pub fn is_thread(self) -> bool {
        matches!(self, LoopKind::Thread(_) | LoopKind::ThreadFlat)
    }
}

/// A node of the kernel IR.
#[derive(Clone, Debug, PartialEq)]
pub enum KNode {
    /// Children run in order.
    Block(Vec<KNode>),
    /// `for (int64_t iter = init; cond; iter += step) body`.
    For {
        /// The iterator's name (unique within the kernel, never a program name).
        iter: String,
        /// Initial value.
        init: KExpr,
        /// Loop condition (usually `iter <= upper`).
        cond: KExpr,
        /// Increment (positive).
        step: i64,
        /// The loop body.
        body: Box<KNode>,
        /// How the iterations run: in order, in parallel (a parallel loop on the CPU's cores),
        /// unrolled, or spread over GPU blocks or threads.
        kind: LoopKind,
    },
    /// A guard.
    If {
        /// Condition.
        cond: KExpr,
        /// Runs when `cond` is non-zero.
        then: Box<KNode>,
        /// Runs otherwise.
        els: Option<Box<KNode>>,
    },
    /// One instance of a statement.
    Stmt {
        /// Index into `Program::stmts`.
        stmt: usize,
        /// The value of each of the statement's iterators, in `Stmt::iters` order.
        args: Vec<KExpr>,
        /// The promoted tiles in scope, outermost first: an access to a tensor goes to
        /// the innermost tile of that tensor, if any.
        locals: Vec<LocalRef>,
    },
    /// Local buffers (promoted tiles) that live while `body` runs.
    Local {
        /// The buffers.
        bufs: Vec<LocalBuf>,
        /// The code that uses them.
        body: Box<KNode>,
    },
    /// `const int64_t name = value;` in scope for `body` only (a loop start computed once,
    /// see [`crate::codegen::normalize`]).
    Let {
        /// The constant's name (unique along any path; never a program name).
        name: String,
        /// Its value.
        value: KExpr,
        /// The code that uses it.
        body: Box<KNode>,
    },
    /// A device kernel (GPU): `body` runs on every thread of every block of a launch;
    /// its `Block` and `Thread` loops spread the work. What encloses it runs on the host.
    Device {
        /// The kernel's number, in launch order.
        id: usize,
        /// The kernel body.
        body: Box<KNode>,
    },
    /// A barrier across the threads of a block (its dialect's block sync), after which every
    /// thread sees the block's shared-memory and global writes made before it.
    Barrier,
    /// One element copy between a tensor and a promoted tile.
    Copy {
        /// The promotion (a [`LocalBuf::promo`]).
        promo: usize,
        /// The tensor.
        tensor: usize,
        /// Into the tile (copy-in) or out of it (copy-out).
        copy_in: bool,
        /// The element's coordinates in the tensor.
        args: Vec<KExpr>,
        /// The promoted tiles in scope, outermost first, this copy's own included: the
        /// tensor side goes to the innermost *other* tile of the tensor, if any.
        locals: Vec<LocalRef>,
    },
    /// A call of a target intrinsic (an accelerator instruction such as Gemmini's
    /// `gemmini_extended_mvin`), printed as `name(args);`. What it does is defined by the
    /// target that put it there; shared passes only carry it.
    Intrinsic(Intrinsic),
}

/// One argument of an [`Intrinsic`].
#[derive(Clone, Debug, PartialEq)]
pub enum IntrinsicArg {
    /// An integer.
    Int(KExpr),
    /// The address of element `offset` (flat, row-major) of a tensor.
    Addr {
        /// The tensor.
        tensor: usize,
        /// The flat element offset.
        offset: KExpr,
    },
    /// A floating-point constant (printed with a `f` suffix).
    Float(f32),
    /// The value of a scalar input of the program, as a float (printed as its name).
    Scalar(usize),
    /// The address of a tensor element as a statement sees it: in the innermost of
    /// `locals` that holds the tensor, else in the tensor.
    Elem {
        /// The tensor.
        tensor: usize,
        /// The element's coordinates.
        index: Vec<KExpr>,
        /// The promoted tiles in scope, outermost first.
        locals: Vec<LocalRef>,
    },
    /// A named constant of the target's API (`WEIGHT_STATIONARY`), with its value.
    Named {
        /// The name the C code uses.
        name: String,
        /// Its value.
        value: i64,
    },
}

/// A target intrinsic: a named operation with arguments.
#[derive(Clone, Debug, PartialEq)]
pub struct Intrinsic {
    /// The C name of the call.
    pub name: String,
    /// The arguments, in call order.
    pub args: Vec<IntrinsicArg>,
}

impl Intrinsic {
    /// The intrinsic with `f` applied to every integer expression of its arguments.
    pub fn map_exprs(&self, f: &impl Fn(&KExpr) -> KExpr) -> Intrinsic {
        Intrinsic {
            name: self.name.clone(),
            args: self
                .args
                .iter()
                .map(|a| match a {
                    IntrinsicArg::Int(e) => IntrinsicArg::Int(f(e)),
                    IntrinsicArg::Elem {
                        tensor,
                        index,
                        locals,
                    } => IntrinsicArg::Elem {
                        tensor: *tensor,
                        index: index.iter().map(f).collect(),
                        locals: locals.clone(),
                    },
                    IntrinsicArg::Addr { tensor, offset } => IntrinsicArg::Addr {
                        tensor: *tensor,
                        offset: f(offset),
                    },
                    other => other.clone(),
                })
                .collect(),
        }
    }
}

/// A promoted tile as seen from one statement instance: the tensor element `e` lives at
/// `e - offset` in the tile's local buffer.
#[derive(Clone, Debug, PartialEq)]
pub struct LocalRef {
    /// The promotion (a [`LocalBuf::promo`]).
    pub promo: usize,
    /// The tensor.
    pub tensor: usize,
    /// The tile's first element, per tensor dimension.
    pub offset: Vec<KExpr>,
    /// For a buffer stored in blocks ([`LocalBuf::block`]): the block the statement's
    /// elements lie in.
    pub block: Option<BlockRef>,
}

/// The block of a blocked local buffer that one statement instance touches.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockRef {
    /// The block's number along each tensor dimension (0 along dimensions that are not
    /// split into blocks).
    pub index: Vec<KExpr>,
    /// The block's first element, per tensor dimension: element `e` is at `e - origin`
    /// inside the block.
    pub origin: Vec<KExpr>,
}

impl LocalRef {
    /// The reference with `f` applied to every expression it holds.
    pub fn map_exprs(&self, f: &impl Fn(&KExpr) -> KExpr) -> LocalRef {
        LocalRef {
            promo: self.promo,
            tensor: self.tensor,
            offset: self.offset.iter().map(f).collect(),
            block: self.block.as_ref().map(|b| BlockRef {
                index: b.index.iter().map(f).collect(),
                origin: b.origin.iter().map(f).collect(),
            }),
        }
    }
}

/// Where a local buffer lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum MemSpace {
    /// Private to the thread that declares it (CPU stack or registers, GPU registers).
    #[default]
    Private,
    /// Shared by the threads of a block (the GPU dialects' shared address space).
    Shared,
}

/// A local buffer holding a promoted tile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalBuf {
    /// Where it lives.
    pub space: MemSpace,
    /// The promotion number (`k` of `copyin_<k>_<T>`).
    pub promo: usize,
    /// The tensor whose tile it holds.
    pub tensor: usize,
    /// The tile's extents.
    pub sizes: Vec<i64>,
    /// Stored in blocks of these extents (each block row-major, the blocks row-major)
    /// rather than row-major: the tiles of an inner memory level, each contiguous.
    pub block: Option<Vec<i64>>,
    /// The order its dimensions are stored in (within each block), outermost first;
    /// `None`: the tensor's own order.
    pub order: Option<Vec<usize>>,
}

impl KNode {
    /// True for a node that does nothing (an empty block, or blocks of empty blocks).
    pub fn is_empty(&self) -> bool {
        match self {
            KNode::Block(v) => v.iter().all(KNode::is_empty),
            _ => false,
        }
    }
    /// A statement or copy with `f` applied to the local buffers in its scope (`f` also
    /// gets a copy's tensor); other nodes come back as they are, children unvisited.
    pub fn map_locals(
        self,
        f: impl FnOnce(Vec<LocalRef>, Option<usize>) -> Vec<LocalRef>,
    ) -> KNode {
        match self {
            KNode::Stmt { stmt, args, locals } => KNode::Stmt {
                stmt,
                args,
                locals: f(locals, None),
            },
            KNode::Copy {
                promo,
                tensor,
                copy_in,
                args,
                locals,
            } => KNode::Copy {
                promo,
                tensor,
                copy_in,
                args,
                locals: f(locals, Some(tensor)),
            },
            other => other,
        }
    }
    /// The node with `f` applied to each of its child nodes (block items, loop bodies,
    /// branches, the body of a local scope); statements and copies come back as they are.
    pub fn map_children(self, f: &mut impl FnMut(KNode) -> KNode) -> KNode {
        match self {
            KNode::Block(v) => KNode::Block(v.into_iter().map(&mut *f).collect()),
            KNode::For {
                iter,
                init,
                cond,
                step,
                body,
                kind,
            } => KNode::For {
                iter,
                init,
                cond,
                step,
                body: Box::new(f(*body)),
                kind,
            },
            KNode::If { cond, then, els } => KNode::If {
                cond,
                then: Box::new(f(*then)),
                els: els.map(|e| Box::new(f(*e))),
            },
            KNode::Local { bufs, body } => KNode::Local {
                bufs,
                body: Box::new(f(*body)),
            },
            KNode::Let { name, value, body } => KNode::Let {
                name,
                value,
                body: Box::new(f(*body)),
            },
            KNode::Device { id, body } => KNode::Device {
                id,
                body: Box::new(f(*body)),
            },
            other => other,
        }
    }
    /// The node with `f` applied to every expression in it and below it: loop bounds,
    /// guards, statement and copy arguments, and the offsets and blocks of the tiles they
    /// see.
    pub fn map_exprs(self, f: &impl Fn(&KExpr) -> KExpr) -> KNode {
        let locals = |v: Vec<LocalRef>| v.iter().map(|l| l.map_exprs(f)).collect();
        match self.map_children(&mut |c| c.map_exprs(f)) {
            KNode::For {
                iter,
                init,
                cond,
                step,
                body,
                kind,
            } => KNode::For {
                iter,
                init: f(&init),
                cond: f(&cond),
                step,
                body,
                kind,
            },
            KNode::If { cond, then, els } => KNode::If {
                cond: f(&cond),
                then,
                els,
            },
            KNode::Let { name, value, body } => KNode::Let {
                name,
                value: f(&value),
                body,
            },
            KNode::Stmt {
                stmt,
                args,
                locals: l,
            } => KNode::Stmt {
                stmt,
                args: args.iter().map(f).collect(),
                locals: locals(l),
            },
            KNode::Copy {
                promo,
                tensor,
                copy_in,
                args,
                locals: l,
            } => KNode::Copy {
                promo,
                tensor,
                copy_in,
                args: args.iter().map(f).collect(),
                locals: locals(l),
            },
            KNode::Intrinsic(i) => KNode::Intrinsic(i.map_exprs(f)),
            other => other,
        }
    }
    /// Calls `f` on every node, parents before children.
    pub fn walk<'a>(&'a self, f: &mut impl FnMut(&'a KNode)) {
        f(self);
        match self {
            KNode::Block(v) => v.iter().for_each(|n| n.walk(f)),
            KNode::For { body, .. } => body.walk(f),
            KNode::If { then, els, .. } => {
                then.walk(f);
                if let Some(e) = els {
                    e.walk(f);
                }
            }
            KNode::Local { body, .. } | KNode::Let { body, .. } | KNode::Device { body, .. } => {
                body.walk(f)
            }
            KNode::Stmt { .. } | KNode::Copy { .. } | KNode::Barrier | KNode::Intrinsic(_) => {}
        }
    }
    /// The statement indices that occur in the tree, in order of first occurrence.
    pub fn stmts(&self) -> Vec<usize> {
        let mut out = Vec::new();
        self.walk(&mut |n| {
            if let KNode::Stmt { stmt, .. } = n {
                if !out.contains(stmt) {
                    out.push(*stmt);
                }
            }
        });
        out
    }
    /// The tensors the tree reads or writes in their global arrays, not through a local
    /// buffer: what a kernel must allocate. A tile-local temporary is missing from it.
    pub fn global_tensors(&self, prog: &polyhedral::ir::Program) -> Vec<usize> {
        let mut out = Vec::new();
        let mut add = |t: usize| {
            if !out.contains(&t) {
                out.push(t);
            }
        };
        self.walk(&mut |n| match n {
            KNode::Stmt { stmt, locals, .. } => {
                let s = &prog.stmts[*stmt];
                let touched = std::iter::once(s.lhs).chain(s.reads().into_iter().map(|r| r.0));
                for t in touched {
                    if !locals.iter().any(|l| l.tensor == t) {
                        add(t);
                    }
                }
            }
            // The tensor side of a copy is the innermost other tile of the tensor, if any.
            KNode::Copy {
                promo,
                tensor,
                locals,
                ..
            } if !locals
                .iter()
                .any(|l| l.tensor == *tensor && l.promo != *promo) =>
            {
                add(*tensor);
            }
            KNode::Intrinsic(i) => {
                for a in &i.args {
                    if let IntrinsicArg::Addr { tensor, .. } = a {
                        add(*tensor);
                    }
                }
            }
            _ => {}
        });
        out.sort_unstable();
        out
    }

    /// The tensors with a local buffer (a promoted tile), a copy or a target intrinsic
    /// anywhere in the tree, sorted.
    pub fn tiled_tensors(&self) -> Vec<usize> {
        let mut out = Vec::new();
        self.walk(&mut |n| match n {
            KNode::Local { bufs, .. } => out.extend(bufs.iter().map(|b| b.tensor)),
            KNode::Copy { tensor, .. } => out.push(*tensor),
            KNode::Stmt { locals, .. } => out.extend(locals.iter().map(|l| l.tensor)),
            KNode::Intrinsic(i) => {
                for a in &i.args {
                    match a {
                        IntrinsicArg::Addr { tensor, .. } | IntrinsicArg::Elem { tensor, .. } => {
                            out.push(*tensor)
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        });
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// One temporary stored modulo `modulus` along index `dim`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StorageFold {
    /// The tensor.
    pub tensor: usize,
    /// The folded index.
    pub dim: usize,
    /// Element `x` is stored at `x_dim mod modulus` along `dim`.
    pub modulus: i64,
}

/// A whole kernel: the loop nest of one `def`.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    /// The loop nest.
    pub body: KNode,
    /// Every loop iterator name used in [`Kernel::body`], in order of first use. Each is
    /// declared by its own `for`; none collides with a name of the program.
    pub loop_iters: Vec<String>,
    /// Pipeline stages the tile spec asks for (`64@shared:3`), per statement (index into
    /// `Program::stmts`): a GPU kernel pipelines its shared-memory copies over the most
    /// stages its statements ask for. Empty: the target decides.
    pub pipeline_stages: Vec<(usize, i64)>,
    /// Temporaries stored modulo a small number along one index (see
    /// [`crate::codegen::contract`]); empty: every tensor has its full shape.
    pub folds: Vec<StorageFold>,
    /// The conditions under which a promoted tile is full (each `e >= K` of
    /// [`crate::codegen::normalize::version_tiles`]): a branch whose every conjunct is one
    /// of them leads to the full-tile version, the one most tiles run.
    pub full_tile_conds: Vec<KExpr>,
}
