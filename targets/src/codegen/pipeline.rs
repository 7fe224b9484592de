//! Multi-stage software pipelining of a kernel's shared-memory K loop (ALCOP's
//! load–compute overlap), found on the kernel IR.
//!
//! A sequential loop inside a kernel whose body is, after flattening nested blocks,
//!
//! ```text
//! copies into shared tiles P (copy-in only), barrier, compute, barrier
//! ```
//!
//! is printed with `s` copies (stages) of each tile of P: the copies of the first `s - 1`
//! steps run before the loop, and step `k` first waits until its own copies have landed
//! (all but the `s - 2` most recent groups, which belong to later steps), synchronises
//! once, then issues the copies of step `k + s - 1` into stage `(k + s - 1) mod s` and
//! computes, with no barrier after the compute (see `Emitter::pipelined_for`): one barrier
//! per step, as CUTLASS's multistage main loop has. The stage step `k` refills is the one
//! step `k - 1` read, and step `k`'s barrier guarantees that no thread still reads it; one
//! barrier after the loop separates the last step from what follows. On CUDA the copies are
//! asynchronous (`__pipeline_memcpy_async`, `cp.async` on sm_80 and later), so the loads of
//! later steps overlap the arithmetic of step `k` (with 2 stages, the load of step `k + 1`);
//! elsewhere they are plain stores, and the same schedule runs (and is checked) on OpenCL.
//!
//! A loop qualifies only when moving its copies one step earlier cannot change a value:
//! the tensors P copies are written by no statement and no copy-out of the kernel, and P's
//! tiles are used nowhere else in the kernel.

use std::collections::HashSet;

use polyhedral::ir::Program;

use crate::codegen::kir::{KNode, LoopKind, MemSpace};

/// One pipelined loop: the loop node and the shared tiles (promotions) it stages.
#[derive(Clone, Debug)]
pub struct Pipeline {
    /// The `For` node (identity: its address in the kernel body being printed).
    pub lp: *const KNode,
    /// The promotions whose tiles get `stages` copies.
    pub promos: Vec<usize>,
    /// How many steps' tiles are in shared memory at once (2 to [`MAX_STAGES`]).
    pub stages: i64,
}

/// The most stages a pipeline gets.
pub const MAX_STAGES: i64 = 4;

/// The body of a loop with nested blocks flattened, and scopes of shared tiles opened
/// (a kernel declares its shared tiles once, at its top: such a scope only delimits them).
fn flatten<'a>(n: &'a KNode, out: &mut Vec<&'a KNode>) {
    match n {
        KNode::Block(v) => v.iter().for_each(|c| flatten(c, out)),
        KNode::Local { bufs, body } if bufs.iter().all(|b| b.space == MemSpace::Shared) => {
            flatten(body, out)
        }
        other => out.push(other),
    }
}

/// Whether a subtree holds nothing but copy-ins into `shared` tiles (under loops, guards,
/// lets and blocks); the promotions it fills are added to `promos`.
fn copy_only(n: &KNode, shared: &dyn Fn(usize) -> bool, promos: &mut Vec<usize>) -> bool {
    match n {
        KNode::Copy {
            promo,
            copy_in: true,
            ..
        } if shared(*promo) => {
            if !promos.contains(promo) {
                promos.push(*promo);
            }
            true
        }
        KNode::Block(v) => v.iter().all(|c| copy_only(c, shared, promos)),
        KNode::For { body, .. } | KNode::Let { body, .. } => copy_only(body, shared, promos),
        KNode::If { then, els, .. } => {
            copy_only(then, shared, promos)
                && els.as_ref().is_none_or(|e| copy_only(e, shared, promos))
        }
        _ => false,
    }
}

/// A loop's body split as the pipeline needs it: the copy part, and what follows its
/// first barrier up to and including the trailing barrier; with the promotions copied.
pub fn split<'a>(
    n: &'a KNode,
    shared: &dyn Fn(usize) -> bool,
) -> Option<(Vec<&'a KNode>, Vec<&'a KNode>, Vec<usize>)> {
    let KNode::For {
        body, kind, step, ..
    } = n
    else {
        return None;
    };
    if *kind != LoopKind::Seq || *step < 1 {
        return None;
    }
    let mut items = Vec::new();
    flatten(body, &mut items);
    let first_barrier = items.iter().position(|x| matches!(x, KNode::Barrier))?;
    if first_barrier == 0 || !matches!(items.last(), Some(KNode::Barrier)) {
        return None;
    }
    if first_barrier + 1 >= items.len() {
        return None;
    }
    let mut promos = Vec::new();
    if !items[..first_barrier]
        .iter()
        .all(|c| copy_only(c, shared, &mut promos))
    {
        return None;
    }
    Some((
        items[..first_barrier].to_vec(),
        items[first_barrier + 1..].to_vec(),
        promos,
    ))
}

/// How many nodes of `n` mention promotion `p` (copies of it, and statements or copies
/// that see its tile).
fn mentions(n: &KNode, p: usize) -> usize {
    let mut count = 0;
    n.walk(&mut |x| {
        let hit = match x {
            KNode::Copy { promo, locals, .. } => *promo == p || locals.iter().any(|l| l.promo == p),
            KNode::Stmt { locals, .. } => locals.iter().any(|l| l.promo == p),
            KNode::Local { bufs, .. } => bufs.iter().any(|b| b.promo == p),
            _ => false,
        };
        count += usize::from(hit);
    });
    count
}

/// The loops of a kernel body that can be pipelined, with the tiles each stages.
pub fn find(prog: &Program, body: &KNode, shared: &dyn Fn(usize) -> bool) -> Vec<Pipeline> {
    // Tensors the kernel writes: statement targets and copy-out destinations.
    let mut written: HashSet<usize> = HashSet::new();
    body.walk(&mut |x| match x {
        KNode::Stmt { stmt, .. } => {
            written.insert(prog.stmts[*stmt].lhs);
        }
        KNode::Copy {
            tensor,
            copy_in: false,
            ..
        } => {
            written.insert(*tensor);
        }
        _ => {}
    });
    let mut found: Vec<(&KNode, Vec<usize>)> = Vec::new();
    body.walk(&mut |x| {
        if let Some((_, _, promos)) = split(x, shared) {
            let fresh = promos
                .iter()
                .all(|&p| tensor_of(x, p).is_some_and(|t| !written.contains(&t)));
            if fresh && !promos.is_empty() {
                found.push((x, promos));
            }
        }
    });
    // Every mention of a staged tile must lie in a pipelined loop that stages it (the
    // code generator may split one loop into several, one per kind of tile): drop loops
    // until that holds.
    loop {
        let total = |p: usize| -> usize {
            found
                .iter()
                .filter(|(_, ps)| ps.contains(&p))
                .map(|(x, _)| mentions(x, p))
                .sum()
        };
        let before = found.len();
        let ok: Vec<bool> = found
            .iter()
            .map(|(_, ps)| ps.iter().all(|&p| total(p) == mentions(body, p)))
            .collect();
        let mut keep = ok.into_iter();
        found.retain(|_| keep.next().unwrap_or(false));
        if found.len() == before {
            break;
        }
    }
    found
        .into_iter()
        .map(|(x, promos)| Pipeline {
            lp: x as *const KNode,
            promos,
            stages: 2,
        })
        .collect()
}

/// The tensor a promotion's copies move, as a loop's copies show it.
fn tensor_of(n: &KNode, p: usize) -> Option<usize> {
    let mut t = None;
    n.walk(&mut |x| {
        if let KNode::Copy { promo, tensor, .. } = x {
            if *promo == p {
                t = Some(*tensor);
            }
        }
    });
    t
}
