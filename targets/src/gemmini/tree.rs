//! The `tensorised` schedule tree: the instruction programs of the tensorised statements
//! as bands and typed marks, built from the plan [`super::target`] generates code from
//! (the recognised [`Gemm`]s, their [`Tiles`] and [`Placement`]s), so the tree and the
//! code cannot disagree.
//!
//! The parts run in program order, as the kernel does. A host part is the `final` tree
//! restricted to its statements. A tensorised statement, with the statements folded into
//! it (init, preload, epilogue), becomes:
//!
//! ```text
//! Filter {init; S; epilogue}
//!   Band (batch iterators)                                   if any
//!     Band (I×J tile starts)                                 one C tile per point
//!       Mark "holds:<accumulator>:C:double|single"
//!         Sequence: Filter {init} | Filter {S} … | Filter {epilogue}
//!                   (the folded ones with a Mark "folded:init|preload|mvout" below)
//!           Band (filter offsets)                            a convolution's
//!             Band (K tile starts)                           one reduction step
//!               Mark "holds:<scratchpad>:A:…"
//!                 Mark "holds:<scratchpad>:B:…"
//!                   Band (DIM blocks, in the order the instructions run)
//!                     Mark "tensorised:gemm|conv:ws|os"
//!                       Band (i, j, k inside the DIM×DIM×DIM block)
//! ```

use miette::Result;
use polyhedral::ir::Program;
use polyhedral::isl::isl_rs::{MultiUnionPwAff, UnionSet};
use polyhedral::isl::{Ctx, IslResultExt};
use schedule_tree::mark::{Contraction, Dataflow, Fold, TensorName};
use schedule_tree::{Band, Buffer, Mark, Node, NodeKind, ScheduleTree};

use super::codegen::{Placement, Tiles};
use super::recognise::Gemm;

/// One part of the kernel, in program order.
pub enum Part<'a> {
    /// Statements that run on the host.
    Host(Vec<usize>),
    /// A tensorised statement with its plan.
    Tensorised {
        /// The recognised contraction.
        gemm: &'a Gemm,
        /// Its tiles.
        tiles: Tiles,
        /// Where they live.
        place: Placement,
    },
}

/// The names of the buffers that hold operands (the scratchpad) and results (the
/// accumulator), from the target description.
pub struct Buffers {
    /// Operands.
    pub operands: Buffer,
    /// Results.
    pub results: Buffer,
}

/// `{ S[i, j]; … }`: every instance of the statements.
fn universe(prog: &Program, stmts: &[usize]) -> String {
    let parts: Vec<String> = stmts
        .iter()
        .map(|&s| {
            let st = &prog.stmts[s];
            let names: Vec<&str> = st.iters.iter().map(|x| x.name.as_str()).collect();
            format!("{}[{}]", st.name, names.join(", "))
        })
        .collect();
    format!("{{ {} }}", parts.join("; "))
}

/// The start of the `size`-tile holding `x` in a range starting at `lo`.
fn tile_start(x: &str, lo: i64, size: i64) -> String {
    if lo == 0 {
        format!("{size}*floor(({x})/{size})")
    } else {
        format!("{lo} + {size}*floor(({x} - {lo})/{size})")
    }
}

/// A band over `stmts` whose members are, per statement, the given expressions of its
/// iterators (`member(statement, iterator names)`), read and printed back by isl.
fn band(
    ctx: &Ctx,
    prog: &Program,
    stmts: &[usize],
    n: usize,
    member: &dyn Fn(usize, usize, &[String]) -> String,
    coincident: Vec<bool>,
    permutable: bool,
) -> Result<Band> {
    let mut members = Vec::new();
    for m in 0..n {
        let pieces: Vec<String> = stmts
            .iter()
            .map(|&s| {
                let st = &prog.stmts[s];
                let names: Vec<String> = st.iters.iter().map(|x| x.name.clone()).collect();
                format!(
                    "{}[{}] -> [({})]",
                    st.name,
                    names.join(", "),
                    member(s, m, &names)
                )
            })
            .collect();
        members.push(format!("{{ {} }}", pieces.join("; ")));
    }
    let text = format!("[{}]", members.join(", "));
    let mupa = MultiUnionPwAff::read_from_str(&ctx.isl, &text).isl("reading a Gemmini band")?;
    let schedule = mupa.to_str().isl("printing a Gemmini band")?.to_string();
    Ok(Band {
        schedule,
        permutable,
        coincident,
        ast_options: None,
    })
}

/// A node with one child.
fn wrap(kind: NodeKind, child: Node) -> Node {
    Node::with_child(kind, child)
}

/// The filter node of `stmts` over `child`.
fn filter(prog: &Program, stmts: &[usize], child: Node) -> Node {
    wrap(
        NodeKind::Filter {
            filter: universe(prog, stmts),
        },
        child,
    )
}

/// The name of the GEMM's iterator at `pos` in a statement of its group whose iterators
/// are `names` (`0` for the unit column, position `unit`): the folded statements share
/// the left-hand iterators' positions.
fn gemm_iter(names: &[String], pos: usize, unit: usize) -> String {
    if pos == unit || pos >= names.len() {
        "0".to_string()
    } else {
        names[pos].clone()
    }
}

/// The tensorised DIM×DIM×DIM blocks of the GEMM statement: the block band (j, k, i
/// weight-stationary; i, j, k output-stationary), the `tensorised` mark and the point band.
fn dim_blocks(ctx: &Ctx, prog: &Program, g: &Gemm, unit: usize, dim: i64) -> Result<Node> {
    let s = g.stmt;
    let it = |names: &[String], pos: usize| gemm_iter(names, pos, unit);
    let lo = |pos: usize| g.bounds[pos].0;
    let (gi, gj, gk) = (g.i, g.j, g.k);
    // Innermost first: the DIM×DIM×DIM block.
    let point = band(
        ctx,
        prog,
        &[s],
        3,
        &|_, m, names| {
            let pos = [gi, gj, gk][m];
            let x = it(names, pos);
            if x == "0" {
                x
            } else {
                format!("{x} - ({})", tile_start(&x, lo(pos), dim))
            }
        },
        vec![true, true, false],
        true,
    )?;
    let mark = Mark::Tensorised {
        kind: if g.outer.is_empty() {
            Contraction::Gemm
        } else {
            Contraction::Conv
        },
        dataflow: if g.os() {
            Dataflow::OutputStationary
        } else {
            Dataflow::WeightStationary
        },
    };
    // The blocks run j, k, i (weight-stationary: one preload of B per j, k block, then
    // the rows of A) or i, j, k (output-stationary).
    let order = if g.os() { [gi, gj, gk] } else { [gj, gk, gi] };
    let blocks = band(
        ctx,
        prog,
        &[s],
        3,
        &|_, m, names| {
            let x = it(names, order[m]);
            if x == "0" {
                x
            } else {
                tile_start(&x, lo(order[m]), dim)
            }
        },
        order.iter().map(|&x| x != gk).collect(),
        true,
    )?;
    Ok(wrap(
        NodeKind::Band(blocks),
        wrap(
            NodeKind::Mark(mark),
            wrap(NodeKind::Band(point), Node::leaf()),
        ),
    ))
}

/// The GEMM's subtree `node` in a sequence with the statements folded into it: the
/// initialisation and preload before it, the epilogue (`after`) after it, each under its
/// `folded` mark.
fn with_folded(prog: &Program, g: &Gemm, after: &[usize], node: Node) -> Node {
    let folded = |x: usize, f: Fold| {
        filter(
            prog,
            &[x],
            wrap(NodeKind::Mark(Mark::Folded(f)), Node::leaf()),
        )
    };
    let mut children: Vec<Node> = g
        .init
        .iter()
        .map(|&x| folded(x, Fold::Init))
        .chain(g.preload.as_ref().map(|x| folded(x.stmt, Fold::Preload)))
        .collect();
    children.push(filter(prog, &[g.stmt], node));
    children.extend(after.iter().map(|&x| folded(x, Fold::Mvout)));
    Node::new(NodeKind::Sequence, children)
}

/// The subtree of one tensorised statement (see the module documentation).
fn tensorised(
    ctx: &Ctx,
    prog: &Program,
    g: &Gemm,
    t: &Tiles,
    p: &Placement,
    bufs: &Buffers,
    dim: i64,
) -> Result<Node> {
    let s = g.stmt;
    let unit = prog.stmts[s].iters.len();
    let before: Vec<usize> = g
        .init
        .into_iter()
        .chain(g.preload.as_ref().map(|x| x.stmt))
        .collect();
    let after: Vec<usize> = g.epilogue.as_ref().map(|e| e.stmt).into_iter().collect();
    let group: Vec<usize> = before
        .iter()
        .copied()
        .chain([s])
        .chain(after.iter().copied())
        .collect();
    // An iterator of the GEMM (or the unit column, `0`) as a statement of the group names
    // it: the folded statements share the left-hand iterators' positions.
    let it = |names: &[String], pos: usize| gemm_iter(names, pos, unit);
    let lo = |pos: usize| g.bounds[pos].0;
    let (gi, gj, gk) = (g.i, g.j, g.k);
    let holds = |buffer: Buffer, tensor: usize, double: bool| {
        NodeKind::Mark(Mark::Holds {
            buffer,
            tensor: TensorName::new(&prog.tensors[tensor].name),
            double,
        })
    };
    let mut node = dim_blocks(ctx, prog, g, unit, dim)?;
    node = wrap(
        holds(bufs.operands, g.a, p.sp_double),
        wrap(holds(bufs.operands, g.b, p.sp_double), node),
    );
    let ktile = band(
        ctx,
        prog,
        &[s],
        1,
        &|_, _, names| tile_start(&it(names, gk), lo(gk), t.tk),
        vec![false],
        true,
    )?;
    node = wrap(NodeKind::Band(ktile), node);
    if !g.outer.is_empty() {
        let outer = band(
            ctx,
            prog,
            &[s],
            g.outer.len(),
            &|_, m, names| it(names, g.outer[m]),
            vec![false; g.outer.len()],
            false,
        )?;
        node = wrap(NodeKind::Band(outer), node);
    }
    if group.len() > 1 {
        node = with_folded(prog, g, &after, node);
    }
    node = wrap(holds(bufs.results, g.c, p.acc_double), node);
    let ij = [(gi, t.ti), (gj, t.tj)];
    let tiles = band(
        ctx,
        prog,
        &group,
        2,
        &|_, m, names| {
            let (pos, size) = ij[m];
            let x = it(names, pos);
            if x == "0" {
                x
            } else {
                tile_start(&x, lo(pos), size)
            }
        },
        vec![true, true],
        true,
    )?;
    node = wrap(NodeKind::Band(tiles), node);
    if !g.batch.is_empty() {
        let batch = band(
            ctx,
            prog,
            &group,
            g.batch.len(),
            &|_, m, names| it(names, g.batch[m]),
            vec![true; g.batch.len()],
            true,
        )?;
        node = wrap(NodeKind::Band(batch), node);
    }
    Ok(filter(prog, &group, node))
}

/// `node` restricted to the instances of `keep`: filters that keep nothing are dropped,
/// bands keep their pieces for `keep` only. `None` when nothing is left.
fn restrict(ctx: &Ctx, node: &Node, keep: &str) -> Result<Option<Node>> {
    let keep_set = || UnionSet::read_from_str(&ctx.isl, keep).isl("reading a statement set");
    Ok(Some(match &node.kind {
        NodeKind::Filter { filter } => {
            let f = UnionSet::read_from_str(&ctx.isl, filter)
                .isl("reading a filter")?
                .intersect(keep_set()?)
                .isl("restricting a filter")?;
            if f.is_empty().isl("testing a filter")? {
                return Ok(None);
            }
            let child = match node.children.first() {
                Some(c) => restrict(ctx, c, keep)?.unwrap_or_else(Node::leaf),
                None => Node::leaf(),
            };
            wrap(
                NodeKind::Filter {
                    filter: f.to_str().isl("printing a filter")?.to_string(),
                },
                child,
            )
        }
        NodeKind::Sequence | NodeKind::Set => {
            let mut children = Vec::new();
            for c in &node.children {
                if let Some(c) = restrict(ctx, c, keep)? {
                    children.push(c);
                }
            }
            if children.is_empty() {
                return Ok(None);
            }
            Node::new(node.kind.clone(), children)
        }
        NodeKind::Band(b) => {
            let mupa = MultiUnionPwAff::read_from_str(&ctx.isl, &b.schedule)
                .isl("reading a band")?
                .intersect_domain(keep_set()?)
                .isl("restricting a band")?;
            let mut b = b.clone();
            b.schedule = mupa.to_str().isl("printing a band")?.to_string();
            let child = match node.children.first() {
                Some(c) => restrict(ctx, c, keep)?.unwrap_or_else(Node::leaf),
                None => Node::leaf(),
            };
            wrap(NodeKind::Band(b), child)
        }
        NodeKind::Leaf => Node::leaf(),
        other => {
            let child = match node.children.first() {
                Some(c) => restrict(ctx, c, keep)?.unwrap_or_else(Node::leaf),
                None => Node::leaf(),
            };
            wrap(other.clone(), child)
        }
    }))
}

/// The `tensorised` tree of a kernel made of `parts` (program order), from the `final`
/// tree `fin` the host parts come from.
pub fn tensorised_tree(
    prog: &Program,
    fin: &ScheduleTree,
    parts: &[Part],
    bufs: &Buffers,
    dim: i64,
) -> Result<ScheduleTree> {
    let ctx = Ctx::new();
    let below = fin
        .root
        .children
        .first()
        .cloned()
        .unwrap_or_else(Node::leaf);
    let mut children = Vec::new();
    for part in parts {
        match part {
            Part::Host(stmts) => {
                let keep = universe(prog, stmts);
                let mut sub = restrict(&ctx, &below, &keep)?.unwrap_or_else(Node::leaf);
                if matches!(sub.kind, NodeKind::Sequence | NodeKind::Set) && sub.children.len() == 1
                {
                    sub = sub.children.remove(0);
                }
                // The host part's own filter, unless the restricted tree starts with one.
                children.push(match sub.kind {
                    NodeKind::Filter { .. } => sub,
                    _ => filter(prog, stmts, sub),
                });
            }
            Part::Tensorised { gemm, tiles, place } => {
                children.push(tensorised(&ctx, prog, gemm, tiles, place, bufs, dim)?);
            }
        }
    }
    let body = if children.len() == 1 {
        children.pop().unwrap_or_else(Node::leaf)
    } else {
        Node::new(NodeKind::Sequence, children)
    };
    // A lone part's filter directly below the domain is not a sequence child: keep only
    // its subtree.
    let body = match (&body.kind, body.children.first()) {
        (NodeKind::Filter { .. }, Some(c)) => c.clone(),
        _ => body,
    };
    Ok(ScheduleTree::new(Node::with_child(
        fin.root.kind.clone(),
        body,
    )))
}
