//! Row kernels: a chain of row reductions and row-wise statements (softmax, layer norm)
//! as one GPU kernel with a block per row and the row's elements spread over the block's
//! threads (`polyc dump --stage rows`).
//!
//! isl's schedule for such a chain fuses the statements along both the row and the
//! element dimension, shifting each consumer behind its reduction. Mapped as it is, every
//! thread then owns whole rows: a warp reads 32 rows at a stride of a row (no coalescing),
//! and a block holds a handful of threads. This pass replaces that schedule, on the GPU,
//! where the whole program has the shape of a row chain:
//!
//! - every statement's first iterator is its row `r`, and every access to a tensor the
//!   program writes has `r` as its first index, so no dependence crosses rows;
//! - every statement is per row (`mean(r) = mean(r) / N`), element-wise within the row
//!   (`d(r, j) = X(r, j) - mean(r)`), a reduction of the row into one value per row
//!   (`s(r) +=! e(r, j)`, with `+`, `*`, `max` or `min`), or a reduction whose left side
//!   keeps inner indices (they map to threads; the reduction runs inside each thread);
//! - at least one is a reduction of the row into one value;
//! - no statement is inside a sequential loop, and there is no tile spec;
//! - at bound sizes, rows of at least 32 elements, and a statement that reduces inside
//!   each thread runs at most 2^18 iterations per row (symbolic sizes: none such).
//!
//! The new tree: one band over `r` (coincident: it maps to the blocks of one kernel), then
//! the statements in program order, which keeps every dependence because none crosses rows
//! and comprehension statements only read what earlier statements wrote. A per-row
//! statement has no band (one thread of the block runs it); an element-wise statement has
//! a coincident band over its inner indices (mapped to threads by the mapping pass); a
//! reduction of the row gets a [`Mark::Reduce`] above its band: lowering spreads the band's
//! first member over the block's threads, each thread accumulates a private partial
//! result, and the block combines them into the row's element (warp shuffles on CUDA, a
//! tree in local memory on OpenCL). Reassociating the reduction is what `op=` allows.

use miette::Result;
use polyhedral::ir::{Aff, AssignOp, DType, Program, StmtBody};
use schedule_tree::{Band, Mark, Node, NodeKind, Pass, ScheduleTree};

use crate::passes::PassCx;

/// How one statement runs inside a row kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RowRole {
    /// Once per row (no inner indices): one thread of the block.
    PerRow,
    /// A band over the inner indices whose leading members (the left side's inner
    /// indices) are coincident and map to threads.
    Threads {
        /// Per inner index: coincident (a left-side index) or not (reduced).
        coincident: Vec<bool>,
    },
    /// Reduces the whole row into the row's one element with this operator.
    Reduce(AssignOp),
}

/// The pass (see the module documentation).
pub struct RowKernels;

impl<'a> Pass<PassCx<'a>> for RowKernels {
    fn name(&self) -> &'static str {
        "rows"
    }
    fn run(&self, tree: ScheduleTree, cx: &PassCx<'a>) -> Result<ScheduleTree> {
        if cx.tile_spec.is_some()
            || !cx.default_tiling
            || std::env::var("POLYC_ROW_KERNELS").is_ok_and(|v| v == "0")
        {
            return Ok(tree);
        }
        let Some(roles) = row_roles(cx.program) else {
            return Ok(tree);
        };
        if short_rows(cx, &roles) || heavy_rows(cx, &roles) {
            return Ok(tree);
        }
        let shared = shared_for_temporaries(cx);
        let registers = cx
            .levels
            .iter()
            .find(|l| l.role == schedule_tree::BufferRole::Registers)
            .map(|l| l.buffer);
        let Some(new) = row_tree(&tree, cx.program, &roles, shared, registers) else {
            return Ok(tree);
        };
        // What tiling and post-tiling fusion did no longer applies.
        cx.fuse_locals.borrow_mut().clear();
        *cx.fuse_report.borrow_mut() = None;
        cx.notes
            .borrow_mut()
            .retain(|n| !n.starts_with("note: post-tiling fusion"));
        let reduced: Vec<&str> = roles
            .iter()
            .zip(&cx.program.stmts)
            .filter(|(r, _)| matches!(r, RowRole::Reduce(_)))
            .map(|(_, s)| s.name.as_str())
            .collect();
        cx.target_report.borrow_mut().push(format!(
            "row kernel: every statement runs per row `{}` in one kernel, a block per row; {} reduce{} the row across the block's threads\n",
            cx.program.stmts[0].iters[0].name,
            reduced.join(", "),
            if reduced.len() == 1 { "s" } else { "" }
        ));
        Ok(new)
    }
}

/// Fewer elements per row than a warp has threads: a block per row would leave most of
/// its threads idle, where the usual mapping (a thread per row) keeps them busy.
fn short_rows(cx: &PassCx, roles: &[RowRole]) -> bool {
    roles.iter().enumerate().any(|(k, r)| {
        matches!(r, RowRole::Reduce(_))
            && row_extent(&cx.scop.stmt_domains[k]).is_some_and(|n| n < 32)
    })
}

/// The most iterations per row that a statement reducing inside each thread (a left side
/// that keeps inner indices, such as attention's `S(i, j) +=! Q(i, d) * K(j, d)`) may
/// have: every block reads that statement's other operands whole, so a large one (a GEMM
/// of 4096³ followed by a softmax) belongs in a tiled kernel, not in a row kernel.
const MAX_THREAD_REDUCTION_PER_ROW: i64 = 1 << 18;

/// A statement reducing inside each thread with more than
/// [`MAX_THREAD_REDUCTION_PER_ROW`] iterations per row, or with symbolic sizes.
fn heavy_rows(cx: &PassCx, roles: &[RowRole]) -> bool {
    roles.iter().enumerate().any(|(k, r)| match r {
        RowRole::Threads { coincident } if coincident.contains(&false) => {
            row_extent(&cx.scop.stmt_domains[k]).is_none_or(|n| n > MAX_THREAD_REDUCTION_PER_ROW)
        }
        _ => false,
    })
}

/// The number of points of statement domain `dom` in one row (the product of its inner
/// dimensions' ranges), when the sizes are bound.
fn row_extent(dom: &isl_rs::Set) -> Option<i64> {
    let bounds = polyhedral::isl::ffi::count::bounds(dom)?;
    let points: i128 = bounds
        .iter()
        .skip(1)
        .map(|(lo, hi)| (hi - lo + 1).max(0))
        .product();
    i64::try_from(points).ok()
}

/// Whether `a` is exactly iterator `k`.
fn is_iter(a: &Aff, k: usize) -> bool {
    *a == Aff::Iter(k)
}

/// The role of every statement when the whole program is a row chain (see the module
/// documentation), `None` otherwise.
pub fn row_roles(prog: &Program) -> Option<Vec<RowRole>> {
    let written: Vec<usize> = prog.stmts.iter().map(|s| s.lhs).collect();
    let mut roles = Vec::with_capacity(prog.stmts.len());
    for s in &prog.stmts {
        if !s.loops.is_empty() || s.iters.is_empty() || s.lhs_index.is_empty() {
            return None;
        }
        if !matches!(s.dtype, DType::F32 | DType::F64) {
            return None;
        }
        // Every access to a written tensor stays in the statement's row.
        if !is_iter(&s.lhs_index[0], 0) {
            return None;
        }
        let mut own_elsewhere = false;
        let mut crosses = false;
        if let StmtBody::Update(_, e) = &s.body {
            e.for_each_read(&mut |t, idx, _| {
                if written.contains(&t) && idx.first().is_none_or(|a| !is_iter(a, 0)) {
                    crosses = true;
                }
                if t == s.lhs && idx != s.lhs_index.as_slice() {
                    own_elsewhere = true;
                }
            });
        }
        if crosses || own_elsewhere {
            return None;
        }
        let n = s.iters.len();
        let n_lhs = s.n_lhs_iters;
        if s.lhs_index.len() != n_lhs || (1..n_lhs).any(|k| !is_iter(&s.lhs_index[k], k)) {
            return None;
        }
        let op = match &s.body {
            StmtBody::Init(_) => AssignOp::Assign,
            StmtBody::Update(op, _) => *op,
        };
        roles.push(if n == 1 {
            RowRole::PerRow
        } else if n_lhs == n {
            RowRole::Threads {
                coincident: vec![true; n - 1],
            }
        } else if op == AssignOp::Assign {
            return None;
        } else if n_lhs == 1 {
            if !reads_rows_along(s, 1) {
                return None;
            }
            RowRole::Reduce(op)
        } else {
            let mut coincident = vec![true; n_lhs - 1];
            coincident.extend(std::iter::repeat_n(false, n - n_lhs));
            RowRole::Threads { coincident }
        });
    }
    roles
        .iter()
        .any(|r| matches!(r, RowRole::Reduce(_)))
        .then_some(roles)
}

/// The shared-memory buffer that holds one row of every temporary, when all sizes are
/// bound and one row of all of them fits in half the description's shared memory (the
/// rest is left for the block's other buffers); `None` otherwise (they stay in global
/// memory).
fn shared_for_temporaries(cx: &PassCx) -> Option<schedule_tree::Buffer> {
    let level = cx
        .levels
        .iter()
        .find(|l| l.role == schedule_tree::BufferRole::SharedMemory)?;
    let values: Option<Vec<i64>> = cx.scop.param_values.iter().copied().collect();
    let values = values?;
    let mut bytes = 0i64;
    for t in &cx.program.tensors {
        if t.role != polyhedral::ir::TensorRole::Temp {
            continue;
        }
        let row: i64 = t
            .shape
            .iter()
            .skip(1)
            .map(|a| a.eval(&[], &values))
            .product();
        bytes += row * t.dtype.size_bytes() as i64;
    }
    (bytes > 0 && bytes <= level.bytes as i64 / 2).then_some(level.buffer)
}

/// Whether every read of `s` that moves with iterator `k` moves along its tensor's last
/// dimension (and only there), so that the threads a reduction spreads along `k` read
/// consecutive elements: a row sum does, a column sum (`Y(j) +=! X(r, j)`, whose row is
/// `j`) does not.
fn reads_rows_along(s: &polyhedral::ir::Stmt, k: usize) -> bool {
    let mut ok = true;
    if let StmtBody::Update(_, e) = &s.body {
        e.for_each_read(&mut |_, idx, _| {
            if let Some((last, rest)) = idx.split_last() {
                if rest.iter().any(|a| a.uses_iter(k)) || (last.uses_iter(k) && !is_iter(last, k)) {
                    ok = false;
                }
            }
        });
    }
    ok
}

/// The row-kernel tree for `tree`'s domain (with a memory mark for `shared` below the row
/// band), `None` if the tree's root is not a domain.
fn row_tree(
    tree: &ScheduleTree,
    prog: &Program,
    roles: &[RowRole],
    shared: Option<schedule_tree::Buffer>,
    registers: Option<schedule_tree::Buffer>,
) -> Option<ScheduleTree> {
    let NodeKind::Domain { domain } = &tree.root.kind else {
        return None;
    };
    let params = match domain.find("->") {
        Some(p) if domain.trim_start().starts_with('[') => format!("{} ", &domain[..p + 2]),
        _ => String::new(),
    };
    let tuple = |k: usize| {
        let s = &prog.stmts[k];
        let names: Vec<String> = (0..s.iters.len()).map(|i| format!("i{i}")).collect();
        format!("{}[{}]", s.name, names.join(", "))
    };
    let rows: Vec<String> = (0..prog.stmts.len())
        .map(|k| format!("{} -> [(i0)]", tuple(k)))
        .collect();
    let mut filters = Vec::new();
    for (k, role) in roles.iter().enumerate() {
        let n = prog.stmts[k].iters.len();
        let members = |from: usize, to: usize| -> String {
            let m: Vec<String> = (from..to)
                .map(|i| format!("{{ {} -> [(i{i})] }}", tuple(k)))
                .collect();
            format!("{params}[{}]", m.join(", "))
        };
        let child = match role {
            RowRole::PerRow => Node::leaf(),
            RowRole::Threads { coincident } => {
                let lhs = coincident.iter().filter(|c| **c).count();
                match registers {
                    // A reduction inside each thread: the thread's element of the left
                    // side stays in a register across it.
                    Some(reg) if lhs < n - 1 => {
                        let mut outer = Band::new(members(1, lhs + 1), lhs);
                        outer.coincident = vec![true; lhs];
                        let inner = Band::new(members(lhs + 1, n), n - 1 - lhs);
                        Node::with_child(
                            NodeKind::Band(outer),
                            Node::with_child(
                                NodeKind::Mark(Mark::Mem(reg)),
                                Node::with_child(NodeKind::Band(inner), Node::leaf()),
                            ),
                        )
                    }
                    _ => {
                        let mut band = Band::new(members(1, n), n - 1);
                        band.coincident = coincident.clone();
                        Node::with_child(NodeKind::Band(band), Node::leaf())
                    }
                }
            }
            RowRole::Reduce(_) => Node::with_child(
                NodeKind::Mark(Mark::Reduce),
                Node::with_child(
                    NodeKind::Band(Band::new(members(1, n), n - 1)),
                    Node::leaf(),
                ),
            ),
        };
        filters.push(Node::with_child(
            NodeKind::Filter {
                filter: format!("{params}{{ {} }}", tuple(k)),
            },
            child,
        ));
    }
    let mut band = Band::new(format!("{params}[{{ {} }}]", rows.join("; ")), 1);
    band.coincident = vec![true];
    band.permutable = true;
    let mut body = Node::new(NodeKind::Sequence, filters);
    if let Some(b) = shared {
        body = Node::with_child(NodeKind::Mark(Mark::Mem(b)), body);
    }
    let root = Node::with_child(
        NodeKind::Domain {
            domain: domain.clone(),
        },
        Node::with_child(NodeKind::Band(band), body),
    );
    Some(ScheduleTree::new(root))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roles_of(src: &str) -> Option<Vec<RowRole>> {
        let file = polyhedral::diag::SourceFile::new("t.tc", src);
        let prog = polyhedral::lang::compile(&file, None).unwrap();
        row_roles(&prog)
    }

    #[test]
    fn softmax_is_a_row_chain() {
        let r = roles_of(
            "def softmax(f32(R, N) X) -> (f32(R, N) Y) {\n  mx(r) max=! X(r, j)\n  e(r, j) = exp(X(r, j) - mx(r))\n  s(r) +=! e(r, j)\n  Y(r, j) = e(r, j) / s(r)\n}\n",
        )
        .unwrap();
        assert_eq!(
            r,
            vec![
                RowRole::PerRow,
                RowRole::Reduce(AssignOp::Max),
                RowRole::Threads {
                    coincident: vec![true]
                },
                RowRole::PerRow,
                RowRole::Reduce(AssignOp::Add),
                RowRole::Threads {
                    coincident: vec![true]
                },
            ]
        );
    }

    #[test]
    fn other_shapes_are_not() {
        // No reduction of the row.
        assert!(
            roles_of("def f(f32(R, N) X) -> (f32(R, N) Y) {\n  Y(r, j) = X(r, j) * 2.0\n}\n")
                .is_none()
        );
        // A column reduction: its row is `j`, and the threads would read a column.
        assert!(roles_of("def f(f32(R, N) X) -> (f32(N) Y) {\n  Y(j) +=! X(r, j)\n}\n").is_none());
        // A column sum beside a row sum (PolyBench's bicg): the threads of a block per
        // `j` would read a column.
        assert!(roles_of(
            "def f(f32(N, M) A, f32(M) p, f32(N) r) -> (f32(M) s, f32(N) q) {\n  s(j) +=! r(i) * A(i, j)\n  q(i) +=! A(i, j) * p(j)\n}\n"
        )
        .is_none());
        // A read of another row of a written tensor.
        assert!(roles_of(
            "def f(f32(R, N) X) -> (f32(R) Y, f32(R) Z) {\n  Y(r) +=! X(r, j)\n  Z(r) = Y(R - 1 - r)\n}\n"
        )
        .is_none());
    }
}
