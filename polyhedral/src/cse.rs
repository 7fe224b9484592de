//! Shared costly subexpressions: a value such as `exp(X(r, j) - mx(r))` that two statements
//! both compute is computed once, into a new temporary, by a new statement placed before
//! the first of them.
//!
//! Softmax written with the exponential inside both the sum and the normalisation
//! (`s(r) +=! exp(X(r, j) - mx(r))`, then `Y(r, j) = exp(X(r, j) - mx(r)) / s(r)`)
//! otherwise evaluates `exp` twice per element; with the temporary it is the program with
//! `e(r, j) = exp(…)` written out, which tiling then keeps tile-local.
//!
//! A subexpression is shared when, in two or more statements:
//! - it calls `exp`, `log`, `sqrt`, `rsqrt`, `tanh` or `sigmoid` and reads a tensor or an
//!   iterator;
//! - it is the same expression up to the names of the iterators it uses, and each of those
//!   iterators has one lower and one upper bound, the same in every statement, over sizes
//!   only (so the temporary's shape is a box);
//! - the statements compute in the same type, f32 or f64, stand in no sequential loop, and
//!   run over boxes (every iterator bounded by sizes only);
//! - nothing from the first of them to the last writes a tensor the subexpression reads.
//!
//! Then every instance of every user computes the same value as the new statement, which
//! evaluates it once at each point of the box: the rewrite changes no result, bit for
//! bit (the temporary has the statements' type).

use std::collections::HashMap;

use crate::ir::{
    Aff, BinOp, DType, Expr, Func, Iter, Program, RangeSource, Span, Stmt, StmtBody, Tensor,
    TensorRole,
};

/// Subexpressions shared per program at most (each adds a statement and a temporary).
const MAX_SHARED: usize = 16;

/// One subexpression computed once into a new temporary.
#[derive(Clone, Debug, PartialEq)]
pub struct SharedValue {
    /// The subexpression, as source text over the first user's iterators.
    pub text: String,
    /// The new temporary's name.
    pub tensor: String,
    /// The new statement's name (after renumbering).
    pub stmt: String,
    /// The statements that now read the temporary (after renumbering).
    pub users: Vec<String>,
}

/// Computes each costly subexpression that several statements share once, into a new
/// temporary written by a new statement before its first user. Statements are renumbered
/// `S_0, S_1, …` afterwards. Returns what was shared, in order.
pub fn share_costly_subexpressions(prog: &mut Program) -> Vec<SharedValue> {
    let mut shared = Vec::new();
    while shared.len() < MAX_SHARED {
        let Some(pick) = best_candidate(prog) else {
            break;
        };
        shared.push(apply(prog, &pick));
    }
    shared
}

/// A shared subexpression found in the program: its canonical key and its users.
struct Candidate {
    key: String,
    /// Statement indices, ascending, without repeats.
    users: Vec<usize>,
}

/// An occurrence of a costly subexpression in one statement.
struct Occurrence {
    key: String,
    size: usize,
}

/// The largest shared subexpression whose users may share it (ties: the earliest first
/// user).
fn best_candidate(prog: &Program) -> Option<Candidate> {
    let mut by_key: HashMap<String, (usize, Vec<usize>)> = HashMap::new();
    for (s, stmt) in prog.stmts.iter().enumerate() {
        if !eligible_stmt(stmt) {
            continue;
        }
        let StmtBody::Update(_, e) = &stmt.body else {
            continue;
        };
        let mut found = Vec::new();
        occurrences(e, stmt, &mut found);
        for occ in found {
            let entry = by_key.entry(occ.key).or_insert((occ.size, Vec::new()));
            if entry.1.last() != Some(&s) {
                entry.1.push(s);
            }
        }
    }
    let mut cands: Vec<(usize, Candidate)> = by_key
        .into_iter()
        .filter(|(_, (_, users))| users.len() >= 2)
        .map(|(key, (size, users))| (size, Candidate { key, users }))
        .filter(|(_, c)| no_write_between(prog, c))
        .collect();
    cands.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.users[0].cmp(&b.1.users[0])));
    cands.into_iter().next().map(|(_, c)| c)
}

/// A statement whose subexpressions may be shared: an update over a box, in no loop, in
/// f32 or f64 (f16 statements compute their calls in f32, which an f16 temporary would
/// round).
fn eligible_stmt(stmt: &Stmt) -> bool {
    matches!(stmt.body, StmtBody::Update(..))
        && stmt.loops.is_empty()
        && matches!(stmt.dtype, DType::F32 | DType::F64)
        && stmt
            .iters
            .iter()
            .all(|it| it.lower.iter().chain(&it.upper).all(Aff::is_param_only))
}

/// No statement from the first user to the last writes a tensor the subexpression reads.
fn no_write_between(prog: &Program, c: &Candidate) -> bool {
    let first = c.users[0];
    let last = *c.users.last().expect("two users at least");
    let StmtBody::Update(_, e) = &prog.stmts[first].body else {
        return false;
    };
    let Some(sub) = find_by_key(e, &prog.stmts[first], &c.key) else {
        return false;
    };
    let mut read = Vec::new();
    sub.for_each_read(&mut |t, _, _| read.push(t));
    !prog.stmts[first..=last]
        .iter()
        .any(|s| read.contains(&s.lhs))
}

/// Whether the function is costly enough to be worth a temporary.
fn costly(f: Func) -> bool {
    matches!(
        f,
        Func::Exp | Func::Log | Func::Sqrt | Func::Rsqrt | Func::Tanh | Func::Sigmoid
    )
}

/// Whether `e` calls a costly function somewhere.
fn has_costly_call(e: &Expr) -> bool {
    match e {
        Expr::Call(f, args) => costly(*f) || args.iter().any(has_costly_call),
        _ => e.children().into_iter().any(has_costly_call),
    }
}

/// Number of nodes of `e`.
fn size(e: &Expr) -> usize {
    1 + e.children().into_iter().map(size).sum::<usize>()
}

/// Every costly subexpression of `e` that may be shared, with its key.
fn occurrences(e: &Expr, stmt: &Stmt, out: &mut Vec<Occurrence>) {
    if has_costly_call(e) {
        if let Some(key) = key_of(e, stmt) {
            out.push(Occurrence { key, size: size(e) });
        }
        for c in e.children() {
            occurrences(c, stmt, out);
        }
    }
}

/// The first subexpression of `e` (pre-order) with key `key`.
fn find_by_key<'a>(e: &'a Expr, stmt: &Stmt, key: &str) -> Option<&'a Expr> {
    if key_of(e, stmt).as_deref() == Some(key) {
        return Some(e);
    }
    e.children()
        .into_iter()
        .find_map(|c| find_by_key(c, stmt, key))
}

/// The statement's iterators that `e` uses, in order of first appearance.
fn used_iters(e: &Expr) -> Vec<usize> {
    fn aff(a: &Aff, out: &mut Vec<usize>) {
        match a {
            Aff::Const(_) | Aff::Param(_) => {}
            Aff::Iter(i) => {
                if !out.contains(i) {
                    out.push(*i)
                }
            }
            Aff::Add(x, y) | Aff::Sub(x, y) => {
                aff(x, out);
                aff(y, out);
            }
            Aff::Mul(_, x) | Aff::Neg(x) | Aff::FloorDiv(x, _) | Aff::Mod(x, _) => aff(x, out),
        }
    }
    fn walk(e: &Expr, out: &mut Vec<usize>) {
        match e {
            Expr::IterValue(i) => {
                if !out.contains(i) {
                    out.push(*i)
                }
            }
            Expr::Read { index, .. } => index.iter().for_each(|a| aff(a, out)),
            _ => e.children().into_iter().for_each(|c| walk(c, out)),
        }
    }
    let mut out = Vec::new();
    walk(e, &mut out);
    out
}

/// `e` with iterator `order[k]` renamed to `k` (and spans cleared when `clear_spans`).
fn renamed(e: &Expr, order: &[usize], clear_spans: bool) -> Expr {
    fn rename(e: &mut Expr, pos: &dyn Fn(usize) -> usize, clear_spans: bool) {
        match e {
            Expr::IterValue(i) => *i = pos(*i),
            Expr::Read { index, span, .. } => {
                for a in index.iter_mut() {
                    *a = renamed_aff(a, pos);
                }
                if clear_spans {
                    *span = Span::default();
                }
            }
            _ => e
                .children_mut()
                .into_iter()
                .for_each(|c| rename(c, pos, clear_spans)),
        }
    }
    let pos = |i: usize| order.iter().position(|&j| j == i).expect("used iterator");
    let mut out = e.clone();
    rename(&mut out, &pos, clear_spans);
    out
}

/// `a` with every iterator renamed by `pos`.
fn renamed_aff(a: &Aff, pos: &dyn Fn(usize) -> usize) -> Aff {
    match a {
        Aff::Const(_) | Aff::Param(_) => a.clone(),
        Aff::Iter(i) => Aff::Iter(pos(*i)),
        Aff::Add(x, y) => Aff::Add(Box::new(renamed_aff(x, pos)), Box::new(renamed_aff(y, pos))),
        Aff::Sub(x, y) => Aff::Sub(Box::new(renamed_aff(x, pos)), Box::new(renamed_aff(y, pos))),
        Aff::Mul(c, x) => Aff::Mul(*c, Box::new(renamed_aff(x, pos))),
        Aff::Neg(x) => Aff::Neg(Box::new(renamed_aff(x, pos))),
        Aff::FloorDiv(x, c) => Aff::FloorDiv(Box::new(renamed_aff(x, pos)), *c),
        Aff::Mod(x, c) => Aff::Mod(Box::new(renamed_aff(x, pos)), *c),
    }
}

/// The key of a subexpression that may be shared: its type, its shape up to iterator
/// names, and the ranges of the iterators it uses. `None` when it uses no iterator and
/// reads no tensor, or an iterator without exactly one lower and one upper bound.
fn key_of(e: &Expr, stmt: &Stmt) -> Option<String> {
    let order = used_iters(e);
    if order.is_empty() {
        return None;
    }
    let mut ranges = Vec::new();
    for &i in &order {
        let it = &stmt.iters[i];
        if it.lower.len() != 1 || it.upper.len() != 1 {
            return None;
        }
        ranges.push((&it.lower[0], &it.upper[0]));
    }
    Some(format!(
        "{}|{:?}|{:?}",
        stmt.dtype,
        renamed(e, &order, true),
        ranges
    ))
}

/// Computes the candidate's subexpression into a new temporary before its first user,
/// reads it in every user, and renumbers the statements.
fn apply(prog: &mut Program, c: &Candidate) -> SharedValue {
    let first = c.users[0];
    let stmt = prog.stmts[first].clone();
    let StmtBody::Update(_, e) = &stmt.body else {
        unreachable!("users are updates");
    };
    let sub = find_by_key(e, &stmt, &c.key)
        .expect("the first user has it")
        .clone();
    let order = used_iters(&sub);
    let text = expr_text(&sub, prog, &stmt);
    let iters: Vec<Iter> = order
        .iter()
        .map(|&i| Iter {
            source: RangeSource::Where,
            ..stmt.iters[i].clone()
        })
        .collect();
    let tensor_name = fresh_name(prog);
    let tensor = prog.tensors.len();
    let mut read_span: Option<Span> = None;
    sub.for_each_read(&mut |_, _, sp| {
        read_span = Some(read_span.map_or(sp, |r| r.join(sp)));
    });
    let span = read_span.unwrap_or(stmt.span);
    prog.tensors.push(Tensor {
        name: tensor_name.clone(),
        dtype: stmt.dtype,
        shape: iters
            .iter()
            .map(|it| extent(&it.lower[0], &it.upper[0]))
            .collect(),
        role: TensorRole::Temp,
        span,
    });
    let lhs_index: Vec<Aff> = iters
        .iter()
        .enumerate()
        .map(|(k, it)| offset(Aff::Iter(k), &it.lower[0]))
        .collect();
    for &u in &c.users {
        let user = &mut prog.stmts[u];
        let user_copy = user.clone();
        if let StmtBody::Update(_, e) = &mut user.body {
            replace_all(e, &user_copy, &c.key, tensor, span, &iters);
        }
    }
    let new_stmt = Stmt {
        name: String::new(),
        n_lhs_iters: iters.len(),
        lhs: tensor,
        lhs_index,
        body: StmtBody::Update(crate::ir::AssignOp::Assign, renamed(&sub, &order, false)),
        dtype: stmt.dtype,
        span: stmt.span,
        lhs_span: span,
        loops: Vec::new(),
        iters,
    };
    // Before the init of a reduction that uses it (so the reduction's init and update stay
    // together, as when the temporary is written out by hand).
    let at = match prog.stmts.get(first.wrapping_sub(1)) {
        Some(init) if matches!(init.body, StmtBody::Init(_)) && init.lhs == stmt.lhs => first - 1,
        _ => first,
    };
    prog.stmts.insert(at, new_stmt);
    for (k, s) in prog.stmts.iter_mut().enumerate() {
        s.name = format!("S_{k}");
    }
    SharedValue {
        text,
        tensor: tensor_name,
        stmt: format!("S_{at}"),
        users: c.users.iter().map(|u| format!("S_{}", u + 1)).collect(),
    }
}

/// `upper - lower`, simplified where `lower` is 0.
fn extent(lower: &Aff, upper: &Aff) -> Aff {
    if *lower == Aff::Const(0) {
        upper.clone()
    } else {
        Aff::Sub(Box::new(upper.clone()), Box::new(lower.clone()))
    }
}

/// `a - lower`, simplified where `lower` is 0.
fn offset(a: Aff, lower: &Aff) -> Aff {
    if *lower == Aff::Const(0) {
        a
    } else {
        Aff::Sub(Box::new(a), Box::new(lower.clone()))
    }
}

/// Replaces every subexpression of `e` with key `key` by a read of `tensor`.
fn replace_all(e: &mut Expr, stmt: &Stmt, key: &str, tensor: usize, span: Span, iters: &[Iter]) {
    if key_of(e, stmt).as_deref() == Some(key) {
        let order = used_iters(e);
        let index = order
            .iter()
            .zip(iters)
            .map(|(&i, it)| offset(Aff::Iter(i), &it.lower[0]))
            .collect();
        *e = Expr::Read {
            tensor,
            index,
            span,
        };
        return;
    }
    for c in e.children_mut() {
        replace_all(c, stmt, key, tensor, span, iters);
    }
}

/// A tensor name that no tensor, scalar or size of the program has: `polyc_shared<k>`.
fn fresh_name(prog: &Program) -> String {
    let taken = |n: &str| {
        prog.tensors.iter().any(|t| t.name == n)
            || prog.scalars.iter().any(|s| s.name == n)
            || prog.params.iter().any(|p| p.name == n)
    };
    (0..)
        .map(|k| format!("polyc_shared{k}"))
        .find(|n| !taken(n))
        .expect("a free name")
}

/// How tightly `e` binds in source text (higher binds tighter).
fn precedence(e: &Expr) -> u8 {
    match e {
        Expr::Cmp(..) => 1,
        Expr::Bin(BinOp::Add | BinOp::Sub, ..) => 2,
        Expr::Bin(..) => 3,
        Expr::Neg(_) => 4,
        _ => 5,
    }
}

/// `e` as source text, over the iterators of `stmt`, with the parentheses precedence needs.
pub fn expr_text(e: &Expr, prog: &Program, stmt: &Stmt) -> String {
    let iters = stmt.iter_names();
    let params = prog.param_names();
    let text = |a: &Expr| expr_text(a, prog, stmt);
    // `a` as an operand that must bind tighter than `min` (at least as tight with `or_equal`).
    let operand = |a: &Expr, min: u8, or_equal: bool| {
        let p = precedence(a);
        if p < min || (p == min && !or_equal) {
            format!("({})", text(a))
        } else {
            text(a)
        }
    };
    match e {
        Expr::Lit(v) => format!("{v:?}"),
        Expr::Scalar(s) => prog.scalars[*s].name.clone(),
        Expr::IterValue(i) => iters[*i].clone(),
        Expr::SizeValue(p) => params[*p].clone(),
        Expr::Read { tensor, index, .. } => {
            let idx: Vec<String> = index.iter().map(|a| a.to_isl(&iters, &params)).collect();
            format!("{}({})", prog.tensors[*tensor].name, idx.join(", "))
        }
        Expr::Neg(a) => format!("-{}", operand(a, 4, true)),
        Expr::Cast(t, a) => format!("cast<{t}>({})", text(a)),
        Expr::Bin(op, a, b) => {
            let p = precedence(e);
            format!(
                "{} {} {}",
                operand(a, p, true),
                op.symbol(),
                operand(b, p, false)
            )
        }
        Expr::Cmp(op, a, b) => format!(
            "{} {} {}",
            operand(a, 2, true),
            op.symbol(),
            operand(b, 2, true)
        ),
        Expr::Call(f, args) => {
            let args: Vec<String> = args.iter().map(text).collect();
            format!("{}({})", f.name(), args.join(", "))
        }
        Expr::Select(c, a, b) => format!("select({}, {}, {})", text(c), text(a), text(b)),
    }
}
