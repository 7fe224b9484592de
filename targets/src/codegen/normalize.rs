//! Loop normalisation in the kernel IR: every unit-step loop starts at 0.
//!
//! isl's AST generator writes point loops in absolute coordinates,
//! `for (c6 = 4 * c3; c6 <= 4 * c3 + 3; c6 += 1)`. C compilers do not always see that
//! such a loop has a constant trip count, and then neither unroll nor vectorise a register
//! tile (measured: 37 against 85 GFLOP/s for a 4 x 64 GEMM register tile with gcc 12).
//! [`normalize_loops`] rewrites each loop with step 1 and a non-constant start `s` as
//! `for (c = 0; c <= u - s; c += 1)` and replaces `c` by `s + c` in its body, simplifying
//! affine expressions on the way, so the bound above becomes `c6 <= 3`. A start that is
//! not affine (a `max`) is computed once before the loop, in a [`KNode::Let`].

use std::collections::BTreeMap;

use crate::codegen::kir::{KCmp, KExpr, KNode, Kernel, LoopKind};

use crate::codegen::affine::{add, from_linear, linear, minus, scale, simplify, Linear};

/// Rewrites every loop of `kernel` with step 1 and a non-constant start to start at 0
/// (see the module documentation), then versions promoted tiles into full and partial
/// ones ([`version_tiles`]).
pub fn normalize_loops(kernel: Kernel) -> Kernel {
    let mut full = kernel.full_tile_conds;
    let body = version_tiles_with(node(kernel.body), &mut |_, _| None, &mut full);
    Kernel {
        body: split_versions(body),
        loop_iters: kernel.loop_iters,
        pipeline_stages: kernel.pipeline_stages,
        folds: kernel.folds,
        full_tile_conds: full,
    }
}

/// [`normalize_loops`] for a dynamic-shape kernel: the partial tiles along the dynamic
/// sizes are composed from micro-kernels ([`crate::codegen::microkernel::compose_partial`]); the
/// chosen sets are left in `cx.chosen`.
pub fn normalize_loops_dynamic(
    kernel: Kernel,
    cx: &mut crate::codegen::microkernel::ComposeCx,
) -> Kernel {
    let mut full = kernel.full_tile_conds;
    let body = version_tiles_with(
        node(kernel.body),
        &mut |bufs, body| crate::codegen::microkernel::compose_partial(bufs, body, cx),
        &mut full,
    );
    Kernel {
        body: sink_parallel(split_versions(body)),
        loop_iters: kernel.loop_iters,
        pipeline_stages: kernel.pipeline_stages,
        folds: kernel.folds,
        full_tile_conds: full,
    }
}

/// Moves a parallel loop whose whole body is one sequential loop with bounds of its own
/// inside that loop (legal: the parallel loop carries no dependence). Dynamic-shape
/// kernels use it: their tiling puts the parallel tile loop over `N` outside the
/// reduction's tile loop over `K` (dense: `c0` over 2 halves of `N`, `c1` over 6 tiles of
/// `K`), and the static kernels' order, `K` tiles outside, ran 3–5 % faster on one
/// thread at T = 32..128 (AVX-512, dense (T, 2304, 768)).
pub fn sink_parallel(n: KNode) -> KNode {
    let n = n.map_children(&mut sink_parallel);
    let KNode::For {
        iter,
        init,
        cond,
        step,
        body,
        kind: LoopKind::Parallel,
    } = n
    else {
        return n;
    };
    let inner = match *body {
        KNode::Block(mut v) if v.len() == 1 => v.pop().unwrap_or(KNode::Block(Vec::new())),
        other => other,
    };
    match inner {
        KNode::For {
            iter: i2,
            init: a2,
            cond: c2,
            step: s2,
            body: b2,
            kind: LoopKind::Seq,
        } if !a2.mentions(&iter)
            && !c2.mentions(&iter)
            && !init.mentions(&i2)
            && !cond.mentions(&i2) =>
        {
            KNode::For {
                iter: i2,
                init: a2,
                cond: c2,
                step: s2,
                body: Box::new(KNode::For {
                    iter,
                    init,
                    cond,
                    step,
                    body: b2,
                    kind: LoopKind::Parallel,
                }),
                kind: LoopKind::Seq,
            }
        }
        other => KNode::For {
            iter,
            init,
            cond,
            step,
            body: Box::new(other),
            kind: LoopKind::Parallel,
        },
    }
}

/// Index-set splitting of versioned tiles: a unit-step loop whose body is a guard (under
/// local-buffer scopes), such as the full-tile test of [`version_tiles`], no longer tests
/// it on every iteration. Conjuncts that do not depend on the loop are hoisted above it
/// (unswitching), and conjuncts `a·c + r ≥ 0` in the loop's iterator `c` alone split its
/// range: full tiles run in one loop, the partial tiles at the edges in loops of their
/// own. gcc keeps a register tile in registers only when the loop body has no such branch
/// (measured on the conv chain's 4 × 32 register tile: 1.05 → 1.5 × the best peer).
/// Guards with other conjuncts are left as they are.
///
/// A conjunct whose remainder mentions sizes, never loop iterators (`T - 8·c3 - 8 ≥ 0`,
/// the full register tiles of a dynamic size), splits the range at a bound computed from
/// the sizes, on CPU loops.
pub fn split_versions(n: KNode) -> KNode {
    let mut iters = Vec::new();
    n.walk(&mut |x| {
        if let KNode::For { iter, .. } = x {
            if !iters.contains(iter) {
                iters.push(iter.clone());
            }
        }
    });
    split_versions_in(n, &iters)
}

fn split_versions_in(n: KNode, iters: &[String]) -> KNode {
    let n = inline_single_iteration(n);
    match split_loop(n.map_children(&mut |c| split_versions_in(c, iters)), iters) {
        // A range the split left with one iteration (the last tile): inlined, so that
        // the guards inside it can split in turn.
        KNode::Block(v) => KNode::Block(
            v.into_iter()
                .map(|x| {
                    if is_single_iteration(&x) {
                        split_versions_in(x, iters)
                    } else {
                        x
                    }
                })
                .collect(),
        ),
        other => other,
    }
}

/// The conjuncts of a condition.
fn conjuncts(e: &KExpr, out: &mut Vec<KExpr>) {
    match e {
        KExpr::And(a, b) => {
            conjuncts(a, out);
            conjuncts(b, out);
        }
        other => out.push(other.clone()),
    }
}

/// `l ≥ 0` for an affine comparison.
fn nonneg_form(e: &KExpr) -> Option<Linear> {
    let KExpr::Cmp(op, a, b) = e else { return None };
    let d = add(linear(a)?, linear(b)?, -1);
    Some(match op {
        KCmp::Ge => d,
        KCmp::Gt => add(d, (BTreeMap::new(), 1), -1),
        KCmp::Le => scale(d, -1),
        KCmp::Lt => add(scale(d, -1), (BTreeMap::new(), 1), -1),
        KCmp::Eq => return None,
    })
}

fn and_all(v: Vec<KExpr>) -> Option<KExpr> {
    v.into_iter()
        .reduce(|a, b| KExpr::And(Box::new(a), Box::new(b)))
}

/// [`split_versions`] on one node whose children are done.
fn split_loop(n: KNode, iters: &[String]) -> KNode {
    let KNode::For {
        iter,
        init,
        cond,
        step,
        body,
        kind,
    } = &n
    else {
        return n;
    };
    let upper = match cond {
        KExpr::Cmp(KCmp::Le, c, u) if *step == 1 && **c == KExpr::Var(iter.clone()) => {
            (**u).clone()
        }
        _ => return n,
    };
    // The same loop over `init..=upper` with another body.
    let with = |init: KExpr, upper: KExpr, body: KNode| KNode::For {
        iter: iter.clone(),
        init,
        cond: KExpr::Cmp(
            KCmp::Le,
            Box::new(KExpr::Var(iter.clone())),
            Box::new(upper),
        ),
        step: *step,
        body: Box::new(body),
        kind: *kind,
    };
    // The body: local scopes around one guard.
    let mut scopes = Vec::new();
    let mut inner = &**body;
    while let KNode::Local { bufs, body } = inner {
        scopes.push(bufs.clone());
        inner = body;
    }
    let KNode::If {
        cond: guard,
        then,
        els,
    } = inner
    else {
        return n;
    };
    let wrap = |n: KNode| -> KNode {
        scopes.iter().rev().fold(n, |b, bufs| KNode::Local {
            bufs: bufs.clone(),
            body: Box::new(b),
        })
    };
    let mut parts = Vec::new();
    conjuncts(guard, &mut parts);
    let (mut invariant, mut varying, mut lo, mut hi) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for c in &parts {
        if !c.mentions(iter) {
            invariant.push(c.clone());
            continue;
        }
        // `a·iter + r ≥ 0` with `r` affine in other variables (sizes and outer loops).
        match nonneg_form(c) {
            Some((m, r)) if m.contains_key(iter) => {
                let a = m[iter];
                let mut rest = m.clone();
                rest.remove(iter);
                let symbolic = !rest.is_empty();
                // Only sizes in the remainder; GPU block and thread loops keep their
                // ranges whole (every thread of a block must reach the same barriers).
                if symbolic
                    && (rest.keys().any(|v| iters.contains(v))
                        || !matches!(kind, LoopKind::Seq | LoopKind::Parallel))
                {
                    return n;
                }
                if a > 0 {
                    // iter ≥ ⌈−r / a⌉ = ⌊(−r + a − 1) / a⌋
                    lo.push(if symbolic {
                        simplify(&KExpr::FloorDiv(
                            Box::new(from_linear(&add(
                                scale((rest, r), -1),
                                (BTreeMap::new(), a - 1),
                                1,
                            ))),
                            Box::new(KExpr::Int(a)),
                        ))
                    } else {
                        KExpr::Int((-r).div_euclid(a) + i64::from((-r).rem_euclid(a) != 0))
                    });
                } else {
                    // iter ≤ ⌊r / −a⌋
                    hi.push(if symbolic {
                        simplify(&KExpr::FloorDiv(
                            Box::new(from_linear(&(rest, r))),
                            Box::new(KExpr::Int(-a)),
                        ))
                    } else {
                        KExpr::Int(r.div_euclid(-a))
                    });
                }
                varying.push(c.clone());
            }
            _ => return n,
        }
    }
    // A range bounded on both sides with a symbolic bound could leave the partial ranges
    // overlapping when it is empty: not split.
    let symbolic = |v: &[KExpr]| v.iter().any(|e| !matches!(e, KExpr::Int(_)));
    if !lo.is_empty() && !hi.is_empty() && (symbolic(&lo) || symbolic(&hi)) {
        return n;
    }
    let els = els.as_deref().cloned();
    if !invariant.is_empty() {
        // Unswitch: test the invariant conjuncts once, outside the loop.
        let guarded = match and_all(varying) {
            Some(r) => KNode::If {
                cond: r,
                then: then.clone(),
                els: els.clone().map(Box::new),
            },
            None => (**then).clone(),
        };
        let full = split_loop(with(init.clone(), upper.clone(), wrap(guarded)), iters);
        let partial = els.map(|e| with(init.clone(), upper.clone(), wrap(e)));
        return KNode::If {
            cond: and_all(invariant).unwrap_or(KExpr::Int(1)),
            then: Box::new(full),
            els: partial.map(Box::new),
        };
    }
    let els = els.map(wrap);
    split_ranges(&with, init, upper, (lo, hi), wrap((**then).clone()), els)
}

/// The loop `with(init, upper, ·)` split at the guard's bounds `lo` (the `max` of them)
/// and `hi` (the `min`): `partial_body` below `lo`, `full` from `lo` to `hi`,
/// `partial_body` above `hi`, each iteration exactly once; ranges that never run are
/// dropped.
fn split_ranges(
    with: &dyn Fn(KExpr, KExpr, KNode) -> KNode,
    init: &KExpr,
    upper: KExpr,
    (lo, hi): (Vec<KExpr>, Vec<KExpr>),
    full: KNode,
    partial_body: Option<KNode>,
) -> KNode {
    let bound = |e: KExpr| simplify(&e);
    let lo = (!lo.is_empty()).then(|| bound(KExpr::Max(lo)));
    let hi = (!hi.is_empty()).then(|| bound(KExpr::Min(hi)));
    let mut out = Vec::new();
    let plus =
        |e: &KExpr, k: i64| simplify(&KExpr::Add(Box::new(e.clone()), Box::new(KExpr::Int(k))));
    // A partial range with a bound in the sizes runs under a test that it is not empty.
    // The loop is the same, but gcc then compiles the full-tile loop beside it as it does
    // without it: dense (T, 2304, 768) at T = 64 ran 13 % slower per row with the bare
    // loop than with it (one thread, AVX-512).
    let partial = |s: KExpr, u: KExpr, body: KNode| -> KNode {
        if matches!((&s, &u), (KExpr::Int(_), KExpr::Int(_))) {
            return with(s, u, body);
        }
        KNode::If {
            cond: KExpr::Cmp(KCmp::Le, Box::new(s.clone()), Box::new(u.clone())),
            then: Box::new(with(s, u, body)),
            els: None,
        }
    };
    if let (Some(lo), Some(e)) = (&lo, &partial_body) {
        let u = bound(KExpr::Min(vec![upper.clone(), plus(lo, -1)]));
        out.push(partial(init.clone(), u, e.clone()));
    }
    let start = match &lo {
        Some(lo) => bound(KExpr::Max(vec![init.clone(), lo.clone()])),
        None => init.clone(),
    };
    let end = match &hi {
        Some(hi) => bound(KExpr::Min(vec![upper.clone(), hi.clone()])),
        None => upper.clone(),
    };
    out.push(with(start, end, full));
    if let (Some(hi), Some(e)) = (&hi, &partial_body) {
        // Past the full range, and past the first partial range: when the guard holds
        // nowhere (`lo > hi`, both constant), `hi + 1 < lo` and the two partial ranges
        // would both run `[hi + 1, lo - 1]` (a register tile computed twice).
        let mut starts = vec![init.clone(), plus(hi, 1)];
        starts.extend(lo.clone());
        let s = bound(KExpr::Max(starts));
        out.push(partial(s, upper.clone(), e.clone()));
    }
    KNode::Block(out.into_iter().filter(|n| !empty_range(n)).collect())
}

/// A loop `for (c = a; c <= b; …)` with constants `a > b`: it never runs.
fn empty_range(n: &KNode) -> bool {
    matches!(n, KNode::For { init: KExpr::Int(a), cond: KExpr::Cmp(KCmp::Le, _, u), .. }
        if matches!(**u, KExpr::Int(b) if *a > b))
}

/// Full-tile versioning: in the body of each promoted tile ([`KNode::Local`]), a loop bound
/// `min(e, K)` with a constant `K` and an `e` that does not depend on the tile's own loops
/// is `K` in every full tile. The body is emitted twice, under `if (e >= K && …)` with
/// the constant bounds (which the C compiler unrolls and vectorises, keeping a register
/// tile in registers) and, for the partial tiles at the edges, as it was.
pub fn version_tiles(n: KNode) -> KNode {
    version_tiles_with(n, &mut |_, _| None, &mut Vec::new())
}

/// [`version_tiles`] with `partial(bufs, body)` offered every partial tile, and the full
/// tiles' conditions (each `e >= K`) added to `full`: when `partial` returns
/// a node, that node replaces the partial version (dynamic-shape kernels compose it from
/// micro-kernels, see [`crate::codegen::microkernel`]).
pub fn version_tiles_with(
    n: KNode,
    partial: &mut impl FnMut(&[crate::codegen::kir::LocalBuf], &KNode) -> Option<KNode>,
    full_conds: &mut Vec<KExpr>,
) -> KNode {
    match n {
        KNode::Local { bufs, body } => {
            let body = version_tiles_with(*body, partial, full_conds);
            let mut inner = Vec::new();
            body.walk(&mut |x| {
                if let KNode::For { iter, .. } = x {
                    inner.push(iter.clone());
                }
            });
            let mut conds: Vec<(KExpr, i64)> = Vec::new();
            collect_edges(&body, &inner, &mut conds);
            if conds.is_empty() {
                return KNode::Local {
                    bufs,
                    body: Box::new(body),
                };
            }
            let mut full = replace_edges(body.clone(), &conds);
            // Bounds `min(e, K)` whose `e` moves with the tile's own loops (the last
            // inner tile of a partial outer one: `min(N - 256 c1 - 64 c3 - 1, 63)`) are `K`
            // for every value of those loops when `e` at its smallest over their (now
            // constant) ranges is at least `K`: one more conjunct each, until none is left.
            loop {
                let before = conds.len();
                full = full_inner_bounds(full, &inner, &mut Vec::new(), &mut conds);
                if conds.len() == before {
                    break;
                }
            }
            // A constant conjunct: a false one means that no tile is full (a bound whose
            // smallest value over the inner loops' ranges is below its `K`: a 36-row box
            // split into blocks of 32 and 4 rows), so there is one version; a true one
            // says nothing.
            let constant = |(e, k): &(KExpr, i64)| match simplify(e) {
                KExpr::Int(v) => Some(v >= *k),
                _ => None,
            };
            if conds.iter().any(|c| constant(c) == Some(false)) {
                return KNode::Local {
                    bufs,
                    body: Box::new(body),
                };
            }
            conds.retain(|c| constant(c).is_none());
            if conds.is_empty() {
                return KNode::Local {
                    bufs,
                    body: Box::new(full),
                };
            }
            let each: Vec<KExpr> = conds
                .iter()
                .map(|(e, k)| KExpr::Cmp(KCmp::Ge, Box::new(e.clone()), Box::new(KExpr::Int(*k))))
                .collect();
            for c in &each {
                if !full_conds.contains(c) {
                    full_conds.push(c.clone());
                }
            }
            let cond = each
                .into_iter()
                .reduce(|a, b| KExpr::And(Box::new(a), Box::new(b)))
                .unwrap_or(KExpr::Int(1));
            let els = partial(&bufs, &body).unwrap_or(body);
            KNode::Local {
                bufs,
                body: Box::new(KNode::If {
                    cond,
                    then: Box::new(full),
                    els: Some(Box::new(els)),
                }),
            }
        }
        other => other.map_children(&mut |c| version_tiles_with(c, partial, full_conds)),
    }
}

/// `n` (the full-tile version of a tile's body) with every loop bound `min(e, K)` whose
/// linear `e` mentions loops of `inner` that all run over constant ranges around it
/// replaced by `K`; each such bound adds `(min of e over those ranges, K)` to `conds`.
/// `env` holds the constant ranges `(iterator, first, last)` of the enclosing loops.
fn full_inner_bounds(
    n: KNode,
    inner: &[String],
    env: &mut Vec<(String, i64, i64)>,
    conds: &mut Vec<(KExpr, i64)>,
) -> KNode {
    match n {
        KNode::For {
            iter,
            init,
            cond,
            step,
            body,
            kind,
        } => {
            let cond = match cond {
                KExpr::Cmp(KCmp::Le, c, u) => {
                    let u = match *u {
                        KExpr::Min(v) => match v.as_slice() {
                            [e, KExpr::Int(k)] => match smallest_over(e, inner, env) {
                                Some(low) => {
                                    if !conds.iter().any(|(f, j)| *f == low && j == k) {
                                        conds.push((low, *k));
                                    }
                                    KExpr::Int(*k)
                                }
                                None => KExpr::Min(v),
                            },
                            _ => KExpr::Min(v),
                        },
                        other => other,
                    };
                    KExpr::Cmp(KCmp::Le, c, Box::new(u))
                }
                other => other,
            };
            let range = match (&init, &cond) {
                (KExpr::Int(a), KExpr::Cmp(KCmp::Le, c, u)) if step == 1 => match &**u {
                    KExpr::Int(b) if **c == KExpr::Var(iter.clone()) => Some((*a, *b)),
                    _ => None,
                },
                _ => None,
            };
            let pushed = range.map(|(a, b)| env.push((iter.clone(), a, b))).is_some();
            let body = full_inner_bounds(*body, inner, env, conds);
            if pushed {
                env.pop();
            }
            KNode::For {
                iter,
                init,
                cond,
                step,
                body: Box::new(body),
                kind,
            }
        }
        other => other.map_children(&mut |c| full_inner_bounds(c, inner, env, conds)),
    }
}

/// The smallest value of the linear `e` over the ranges of `env`, as an expression in the
/// other names, when `e` mentions some loop of `inner` and every such loop is in `env`.
fn smallest_over(e: &KExpr, inner: &[String], env: &[(String, i64, i64)]) -> Option<KExpr> {
    let (terms, c) = linear(e)?;
    let mut rest = BTreeMap::new();
    let mut constant = c;
    let mut moved = false;
    for (name, coef) in terms {
        if !inner.contains(&name) {
            rest.insert(name, coef);
            continue;
        }
        let &(_, a, b) = env.iter().rev().find(|(i, _, _)| *i == name)?;
        constant += coef * if coef > 0 { a } else { b };
        moved = true;
    }
    moved.then(|| simplify(&from_linear(&(rest, constant))))
}

/// The `(e, K)` of every loop bound `min(e, K)` below `n` whose `e` mentions none of
/// `inner`.
fn collect_edges(n: &KNode, inner: &[String], out: &mut Vec<(KExpr, i64)>) {
    n.walk(&mut |x| {
        if let KNode::For {
            cond: KExpr::Cmp(KCmp::Le, _, u),
            ..
        } = x
        {
            if let KExpr::Min(v) = &**u {
                if let [e, KExpr::Int(k)] = v.as_slice() {
                    if !inner.iter().any(|i| e.mentions(i))
                        && !out.iter().any(|(f, j)| f == e && j == k)
                    {
                        out.push((e.clone(), *k));
                    }
                }
            }
        }
    });
}

/// `n` with every loop bound `min(e, K)` of `edges` replaced by `K`.
fn replace_edges(n: KNode, edges: &[(KExpr, i64)]) -> KNode {
    match n {
        KNode::For {
            iter,
            init,
            cond,
            step,
            body,
            kind,
        } => {
            let cond = match cond {
                KExpr::Cmp(KCmp::Le, c, u) => {
                    let u = match *u {
                        KExpr::Min(v) => match v.as_slice() {
                            [e, KExpr::Int(k)] if edges.iter().any(|(f, j)| f == e && j == k) => {
                                KExpr::Int(*k)
                            }
                            _ => KExpr::Min(v),
                        },
                        other => other,
                    };
                    KExpr::Cmp(KCmp::Le, c, Box::new(u))
                }
                other => other,
            };
            KNode::For {
                iter,
                init,
                cond,
                step,
                body: Box::new(replace_edges(*body, edges)),
                kind,
            }
        }
        other => other.map_children(&mut |c| replace_edges(c, edges)),
    }
}

fn node(n: KNode) -> KNode {
    match n {
        KNode::For {
            iter,
            init,
            cond,
            step,
            body,
            kind,
        } => {
            let body = node(*body);
            let upper = match &cond {
                KExpr::Cmp(KCmp::Le, c, u) if **c == KExpr::Var(iter.clone()) => Some(u),
                _ => None,
            };
            match upper {
                Some(u) if step == 1 && !matches!(init, KExpr::Int(_)) && !init.mentions(&iter) => {
                    // A start that is not affine (a `max` of a peeled or partial tile) is
                    // computed once, in a named constant: gcc then keeps the register
                    // tile's row addresses as one pointer and constant offsets (a hoisted
                    // GEMM: 0.72 -> 0.85 x OpenBLAS).
                    let (start, named) = if linear(&init).is_some() {
                        (init.clone(), None)
                    } else {
                        let name = format!("polyc_{iter}_start");
                        (KExpr::Var(name.clone()), Some(name))
                    };
                    let shifted = simplify(&KExpr::Add(
                        Box::new(start.clone()),
                        Box::new(KExpr::Var(iter.clone())),
                    ));
                    let body = substitute(body, &iter, &shifted);
                    let l = KNode::For {
                        cond: KExpr::Cmp(
                            KCmp::Le,
                            Box::new(KExpr::Var(iter.clone())),
                            Box::new(minus(u, &start)),
                        ),
                        iter,
                        init: KExpr::Int(0),
                        step,
                        body: Box::new(body),
                        kind,
                    };
                    match named {
                        None => l,
                        Some(name) => KNode::Let {
                            name,
                            value: init,
                            body: Box::new(l),
                        },
                    }
                }
                _ => KNode::For {
                    iter,
                    init,
                    cond,
                    step,
                    body: Box::new(body),
                    kind,
                },
            }
        }
        other => other.map_children(&mut node),
    }
}

/// A sequential loop with one iteration, `for (c = a; c <= a; c++)` with a constant `a`
/// (the last, partial tile of a band split into full and partial tiles), becomes its body
/// with `c` replaced by `a`, so that the guards below it that mention `c` become guards
/// in the inner loop's iterator alone, which [`split_loop`] can split.
fn inline_single_iteration(n: KNode) -> KNode {
    if !is_single_iteration(&n) {
        return n;
    }
    match n {
        KNode::For {
            iter,
            init: KExpr::Int(a),
            cond: KExpr::Cmp(KCmp::Le, c, u),
            step: 1,
            body,
            kind: LoopKind::Seq,
        } if *c == KExpr::Var(iter.clone()) && *u == KExpr::Int(a) => {
            inline_single_iteration(substitute(*body, &iter, &KExpr::Int(a)))
        }
        other => other,
    }
}

/// Whether `n` is a sequential loop `for (c = a; c <= a; c++)` with a constant `a`.
fn is_single_iteration(n: &KNode) -> bool {
    matches!(n, KNode::For {
        iter,
        init: KExpr::Int(a),
        cond: KExpr::Cmp(KCmp::Le, c, u),
        step: 1,
        kind: LoopKind::Seq,
        ..
    } if **c == KExpr::Var(iter.clone()) && **u == KExpr::Int(*a))
}

/// Replaces the variable `name` by `value` everywhere in `n`, simplifying.
fn substitute(n: KNode, name: &str, value: &KExpr) -> KNode {
    n.map_exprs(&|e: &KExpr| {
        simplify(&e.substitute(&|v: &str| if v == name { Some(value.clone()) } else { None }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::kir::LoopKind;

    fn v(n: &str) -> Box<KExpr> {
        Box::new(KExpr::var(n))
    }
    fn i(x: i64) -> Box<KExpr> {
        Box::new(KExpr::Int(x))
    }

    #[test]
    fn simplify_cancels_affine_terms() {
        // (4*c3 + 3) - 4*c3 = 3
        let e = KExpr::Sub(
            Box::new(KExpr::Add(Box::new(KExpr::Mul(i(4), v("c3"))), i(3))),
            Box::new(KExpr::Mul(i(4), v("c3"))),
        );
        assert_eq!(simplify(&e), KExpr::Int(3));
        let m = KExpr::Min(vec![KExpr::Int(5), KExpr::Int(3), KExpr::var("N")]);
        assert_eq!(
            simplify(&m),
            KExpr::Min(vec![KExpr::var("N"), KExpr::Int(3)])
        );
    }

    #[test]
    fn loops_start_at_zero_and_bodies_are_shifted() {
        let body = KNode::Stmt {
            stmt: 0,
            args: vec![KExpr::var("c6")],
            locals: Vec::new(),
        };
        let start = KExpr::Mul(i(4), v("c3"));
        let k = Kernel {
            body: KNode::For {
                iter: "c6".into(),
                init: start.clone(),
                cond: KExpr::Cmp(
                    KCmp::Le,
                    v("c6"),
                    Box::new(KExpr::Min(vec![
                        KExpr::Add(Box::new(start.clone()), i(3)),
                        KExpr::var("M"),
                    ])),
                ),
                step: 1,
                body: Box::new(body),
                kind: LoopKind::Seq,
            },
            loop_iters: vec!["c6".into()],
            pipeline_stages: Vec::new(),
            folds: Vec::new(),
            full_tile_conds: Vec::new(),
        };
        let out = normalize_loops(k);
        let KNode::For {
            init, cond, body, ..
        } = out.body
        else {
            panic!("a loop stays a loop");
        };
        assert_eq!(init, KExpr::Int(0));
        // c6 <= min(M - 4*c3, 3)
        assert_eq!(
            cond,
            KExpr::Cmp(
                KCmp::Le,
                v("c6"),
                Box::new(KExpr::Min(vec![
                    KExpr::Sub(v("M"), Box::new(KExpr::Mul(i(4), v("c3")))),
                    KExpr::Int(3)
                ]))
            )
        );
        let KNode::Stmt { args, .. } = *body else {
            panic!("the body stays a statement");
        };
        assert_eq!(
            args,
            vec![KExpr::Add(Box::new(KExpr::Mul(i(4), v("c3"))), v("c6"))]
        );
    }
    fn stmt(k: usize) -> KNode {
        KNode::Stmt {
            stmt: k,
            args: Vec::new(),
            locals: Vec::new(),
        }
    }
    fn for_loop(iter: &str, lo: i64, hi: i64, body: KNode) -> KNode {
        KNode::For {
            iter: iter.into(),
            init: KExpr::Int(lo),
            cond: KExpr::Cmp(KCmp::Le, v(iter), i(hi)),
            step: 1,
            body: Box::new(body),
            kind: LoopKind::Seq,
        }
    }
    fn local(body: KNode) -> KNode {
        KNode::Local {
            bufs: Vec::new(),
            body: Box::new(body),
        }
    }
    /// `-(32 * c) + k >= 31`: the tile of `c` is full.
    fn full(c: &str, k: i64) -> KExpr {
        KExpr::Cmp(
            KCmp::Ge,
            Box::new(KExpr::Add(
                Box::new(KExpr::Neg(Box::new(KExpr::Mul(i(32), v(c))))),
                i(k),
            )),
            i(31),
        )
    }

    #[test]
    fn a_box_split_into_unequal_blocks_has_one_version() {
        // local { for c2 in 0..=min(-c1 + 63, 1) { for c4 in 0..=min(-(32 c2) + 35, 31)
        // { S_0 } } }: the 36 rows of a tile (c1, an outer loop) run as blocks of 32 and 4
        // rows. In a full tile c2 runs 0..=1, and at c2 = 1 the bound is 3, so no tile
        // takes the 32-row bound everywhere: no full version (it was guarded by the
        // constant `3 >= 31` before).
        let bound = KExpr::Min(vec![
            KExpr::Add(
                Box::new(KExpr::Neg(Box::new(KExpr::Mul(i(32), v("c2"))))),
                i(35),
            ),
            KExpr::Int(31),
        ]);
        let inner = KNode::For {
            iter: "c4".into(),
            init: KExpr::Int(0),
            cond: KExpr::Cmp(KCmp::Le, v("c4"), Box::new(bound)),
            step: 1,
            body: Box::new(stmt(0)),
            kind: LoopKind::Seq,
        };
        let rows = KExpr::Min(vec![
            KExpr::Add(Box::new(KExpr::Neg(v("c1"))), i(63)),
            KExpr::Int(1),
        ]);
        let n = local(KNode::For {
            iter: "c2".into(),
            init: KExpr::Int(0),
            cond: KExpr::Cmp(KCmp::Le, v("c2"), Box::new(rows)),
            step: 1,
            body: Box::new(inner),
            kind: LoopKind::Seq,
        });
        assert_eq!(version_tiles(n.clone()), n);
    }

    #[test]
    fn full_tiles_split_off_the_partial_one() {
        // for c1 in 0..=63 { local { if (-(32 c1) + 2043 >= 31) S_0 else S_1 } }
        let n = for_loop(
            "c1",
            0,
            63,
            local(KNode::If {
                cond: full("c1", 2043),
                then: Box::new(stmt(0)),
                els: Some(Box::new(stmt(1))),
            }),
        );
        // The last tile's loop has one iteration: it becomes its body, at c1 = 63.
        assert_eq!(
            split_versions(n),
            KNode::Block(vec![for_loop("c1", 0, 62, local(stmt(0))), local(stmt(1)),])
        );
    }

    #[test]
    fn a_guard_that_holds_nowhere_runs_the_partial_version_once() {
        // for c3 in 0..=2 { local { if (-4 c3 >= 3 && 4 c3 >= 15) S_0 else S_1 } }: the
        // full range is c3 >= 4 and c3 <= -1, empty; every c3 runs S_1 exactly once (the
        // last K step of trmm at N = 33 on the GPU ran its register tile twice).
        let guard = KExpr::And(
            Box::new(KExpr::Cmp(
                KCmp::Ge,
                Box::new(KExpr::Mul(i(-4), v("c3"))),
                i(3),
            )),
            Box::new(KExpr::Cmp(
                KCmp::Ge,
                Box::new(KExpr::Mul(i(4), v("c3"))),
                i(15),
            )),
        );
        let n = for_loop(
            "c3",
            0,
            2,
            local(KNode::If {
                cond: guard,
                then: Box::new(stmt(0)),
                els: Some(Box::new(stmt(1))),
            }),
        );
        assert_eq!(
            split_versions(n),
            KNode::Block(vec![for_loop("c3", 0, 2, local(stmt(1)))])
        );
    }

    #[test]
    fn a_guard_on_an_outer_single_iteration_loop_splits_once_it_is_inlined() {
        // for c0 in 0..=1 { for c1 in 0..=3 { local { if (full(c0) ...) } } }: the guard
        // -(32 c0) - 8 c1 + 42 >= 7 mentions c0, an outer loop, so c1 is not split; once
        // c0's range is split into c0 = 0 and c0 = 1 and those are inlined, it splits.
        let guard = |c0: &str| {
            KExpr::Cmp(
                KCmp::Ge,
                Box::new(KExpr::Add(
                    Box::new(KExpr::Sub(
                        Box::new(KExpr::Neg(Box::new(KExpr::Mul(i(32), v(c0))))),
                        Box::new(KExpr::Mul(i(8), v("c1"))),
                    )),
                    i(42),
                )),
                i(7),
            )
        };
        let inner = for_loop(
            "c1",
            0,
            3,
            local(KNode::If {
                cond: guard("c0"),
                then: Box::new(stmt(0)),
                els: Some(Box::new(stmt(1))),
            }),
        );
        let outer = for_loop(
            "c0",
            0,
            1,
            local(KNode::If {
                cond: full("c0", 42),
                then: Box::new(inner.clone()),
                els: Some(Box::new(inner)),
            }),
        );
        let out = split_versions(outer);
        // No guard is left in any loop body: every range was split.
        let mut guards = 0;
        out.walk(&mut |x| {
            if matches!(x, KNode::If { .. }) {
                guards += 1;
            }
        });
        assert_eq!(guards, 0, "{out:?}");
    }

    #[test]
    fn invariant_conjuncts_are_unswitched() {
        // for c1 in 0..=63 { local { if (full(c0) && full(c1)) S_0 else S_1 } }
        let cond = KExpr::And(Box::new(full("c0", 2043)), Box::new(full("c1", 2043)));
        let n = for_loop(
            "c1",
            0,
            63,
            local(KNode::If {
                cond,
                then: Box::new(stmt(0)),
                els: Some(Box::new(stmt(1))),
            }),
        );
        assert_eq!(
            split_versions(n),
            KNode::If {
                cond: full("c0", 2043),
                then: Box::new(KNode::Block(vec![
                    for_loop("c1", 0, 62, local(stmt(0))),
                    for_loop("c1", 63, 63, local(stmt(1))),
                ])),
                els: Some(Box::new(for_loop("c1", 0, 63, local(stmt(1))))),
            }
        );
    }

    #[test]
    fn guards_mixing_loops_stay() {
        // -(32 c1) + c0 >= 0 mentions c1 and the outer loop c0 in one conjunct: left alone.
        let cond = KExpr::Cmp(
            KCmp::Ge,
            Box::new(KExpr::Add(
                Box::new(KExpr::Neg(Box::new(KExpr::Mul(i(32), v("c1"))))),
                v("c0"),
            )),
            i(0),
        );
        let inner = for_loop(
            "c1",
            0,
            63,
            KNode::If {
                cond,
                then: Box::new(stmt(0)),
                els: None,
            },
        );
        let n = for_loop("c0", 0, 2047, inner);
        assert_eq!(split_versions(n.clone()), n);
    }

    #[test]
    fn guards_on_sizes_split_at_a_computed_bound() {
        // T - 8 c1 - 8 >= 0 (full tiles of a size T): full tiles for c1 <= floor((T - 8) / 8),
        // the partial ones after.
        let cond = KExpr::Cmp(
            KCmp::Ge,
            Box::new(KExpr::Sub(
                Box::new(KExpr::Sub(v("T"), Box::new(KExpr::Mul(i(8), v("c1"))))),
                i(8),
            )),
            i(0),
        );
        let n = for_loop(
            "c1",
            0,
            15,
            local(KNode::If {
                cond,
                then: Box::new(stmt(0)),
                els: Some(Box::new(stmt(1))),
            }),
        );
        let hi = KExpr::FloorDiv(Box::new(KExpr::Sub(v("T"), i(8))), i(8));
        let hi_plus_1 = KExpr::Add(Box::new(hi.clone()), i(1));
        assert_eq!(
            split_versions(n),
            KNode::Block(vec![
                KNode::For {
                    iter: "c1".into(),
                    init: KExpr::Int(0),
                    cond: KExpr::Cmp(
                        KCmp::Le,
                        v("c1"),
                        Box::new(KExpr::Min(vec![hi, KExpr::Int(15)]))
                    ),
                    step: 1,
                    body: Box::new(local(stmt(0))),
                    kind: LoopKind::Seq,
                },
                // The partial range, under a test that it is not empty.
                KNode::If {
                    cond: KExpr::Cmp(
                        KCmp::Le,
                        Box::new(KExpr::Max(vec![hi_plus_1.clone(), KExpr::Int(0)])),
                        i(15)
                    ),
                    then: Box::new(KNode::For {
                        iter: "c1".into(),
                        init: KExpr::Max(vec![hi_plus_1, KExpr::Int(0)]),
                        cond: KExpr::Cmp(KCmp::Le, v("c1"), i(15)),
                        step: 1,
                        body: Box::new(local(stmt(1))),
                        kind: LoopKind::Seq,
                    }),
                    els: None,
                },
            ])
        );
    }
}
