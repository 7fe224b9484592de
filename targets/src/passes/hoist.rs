//! Hoisting packed tiles above the tile loops they do not depend on.
//!
//! A packed tile is copied once per tile of the band above its memory mark. When its box
//! does not move with some members of that band (a GEMM's `B[k, j]` tile under the `i`
//! tile loop), the same data is packed again on every iteration of those members. This
//! pass moves such members below a second mark of the same buffer:
//!
//! ```text
//! Band (i, j, k)            Band (j, k)
//!   Mark mem:L2       =>      Mark mem:L2        <- B[k, j] is packed here, once per (j, k)
//!     …                         Band (i)
//!                                 Mark mem:L2    <- A[i, k] is packed here
//!                                   …
//! ```
//!
//! The band must be permutable (any order of its members is legal). Among the tiles the
//! level packs at the mark ([`crate::passes::promote`]'s policy), the largest one whose box
//! offset does not involve some band members is hoisted; those members must run more
//! than one tile, and at least one member must stay outside. Promotion then packs each
//! tensor at the outermost of the nested marks of a buffer where its box is no larger than
//! at the innermost one (see [`crate::passes::promote::promote`]).

use isl_rs::{DimType, MultiUnionPwAff};
use miette::{miette, Result};
use polyhedral::ir::Program;
use polyhedral::isl::ffi::schedule_tree::multi_union_pw_aff_text;
use polyhedral::isl::{Ctx, IslResultExt};
use polyhedral::scop::Scop;
use schedule_tree::mark::Mark;
use schedule_tree::{Band, Node, NodeKind, ScheduleTree};

use crate::passes::interchange::permute_band;
use crate::passes::promote::{
    analyse_mark, choose, tree_marks, MarkTiles, PromoteKind, PromoteOptions,
};

/// One hoist: the band above a memory mark is permuted (`order`) and split after
/// `outer` members, with a new mark of `mark` between the two parts.
struct Hoist {
    band: Vec<usize>,
    depth: usize,
    order: Vec<i32>,
    outer: usize,
    mark: Mark,
    tensor: String,
}

/// What [`hoist_packed_tiles`] did, one line per hoist, for `--explain` and the notes.
pub type HoistReport = Vec<String>;

/// Hoists packed tiles above the tile loops they do not depend on (see the module
/// documentation).
pub fn hoist_packed_tiles(
    ctx: &Ctx,
    prog: &Program,
    scop: &Scop,
    tree: &ScheduleTree,
    opts: &PromoteOptions,
) -> Result<(ScheduleTree, HoistReport)> {
    let marks = tree_marks(ctx, scop, tree)?;
    let mut plans = Vec::new();
    for m in &marks {
        if let Some(h) = plan(prog, scop, tree, opts, m)? {
            plans.push(h);
        }
    }
    let mut out = tree.clone();
    let mut report = Vec::new();
    // Deeper bands first, so that the paths of the others stay valid.
    plans.sort_by_key(|h| std::cmp::Reverse(h.band.len()));
    for h in plans {
        apply(ctx, &mut out, &h)?;
        report.push(format!(
            "the packed tile of {} moves above the tile loops it does not depend on \
             (band members reordered to {:?}, {} outside the new {} mark)",
            h.tensor,
            h.order,
            h.outer,
            h.mark.to_isl_name()
        ));
    }
    Ok((out, report))
}

/// The hoist for the memory mark `m`, if one applies.
fn plan(
    prog: &Program,
    scop: &Scop,
    tree: &ScheduleTree,
    opts: &PromoteOptions,
    m: &MarkTiles,
) -> Result<Option<Hoist>> {
    let Mark::Mem(buf) = m.mark else {
        return Ok(None);
    };
    if m.dead || m.path.is_empty() {
        return Ok(None);
    }
    let Some(level) = opts
        .levels
        .iter()
        .find(|l| l.buffer == buf && l.kind == PromoteKind::Pack)
    else {
        return Ok(None);
    };
    let band_path = &m.path[..m.path.len() - 1];
    let Some(NodeKind::Band(band)) = tree.node_at(band_path).map(|n| &n.kind) else {
        return Ok(None);
    };
    let n = band.n_members();
    if !band.permutable || n < 2 || band.ast_options.is_some() || m.depth < n {
        return Ok(None);
    }
    // A band that is already the inner part of a hoist stays as it is.
    if !band_path.is_empty() {
        if let Some(NodeKind::Mark(Mark::Mem(b))) = tree
            .node_at(&band_path[..band_path.len() - 1])
            .map(|p| &p.kind)
        {
            if *b == buf {
                return Ok(None);
            }
        }
    }
    let depth = m.depth - n;
    let Some(a) = analyse_mark(scop, m)? else {
        return Ok(None);
    };
    // The band members that run more than one tile (computed once for all tensors).
    let tiles = m.tiles()?;
    let total = tiles.dim(DimType::Set).isl("reading a set's dimensions")? as u32;
    let mut several = Vec::with_capacity(n);
    for d in depth..depth + n {
        let one = tiles
            .copy()
            .isl("copying tiles")?
            .project_out(DimType::Set, (d + 1) as u32, total - d as u32 - 1)
            .isl("projecting tiles")?
            .project_out(DimType::Set, 0, d as u32)
            .isl("projecting tiles")?;
        several.push(!one.is_singleton().isl("counting tiles")?);
    }
    let mut best: Option<(u64, usize, Vec<usize>)> = None;
    for i in choose(&a, prog, level, opts, &Default::default(), 0) {
        let t = &a.tiles[i];
        let mut free = Vec::new();
        for (d, &runs) in several.iter().enumerate() {
            if runs
                && !t
                    .offset
                    .involves_dims(DimType::In, (depth + d) as u32, 1)
                    .isl("reading a tile's offset")?
            {
                free.push(d);
            }
        }
        if free.is_empty() || free.len() == n {
            continue;
        }
        let bytes = t.elems() as u64 * prog.tensors[t.tensor].dtype.size_bytes() as u64;
        if best.as_ref().is_none_or(|b| bytes > b.0) {
            best = Some((bytes, t.tensor, free));
        }
    }
    let Some((_, tensor, free)) = best else {
        return Ok(None);
    };
    let mut order: Vec<i32> = (0..n)
        .filter(|d| !free.contains(d))
        .map(|d| d as i32)
        .collect();
    let outer = order.len();
    order.extend(free.iter().map(|&d| d as i32));
    Ok(Some(Hoist {
        band: band_path.to_vec(),
        depth,
        order,
        outer,
        mark: m.mark,
        tensor: prog.tensors[tensor].name.clone(),
    }))
}

/// Permutes and splits the band, and puts the new mark between its two parts.
fn apply(ctx: &Ctx, tree: &mut ScheduleTree, h: &Hoist) -> Result<()> {
    let node = tree
        .node_at_mut(&h.band)
        .ok_or_else(|| miette!("internal error: no band at the hoist's path"))?;
    permute_band(ctx, node, h.depth, &h.order)?;
    let NodeKind::Band(band) = &node.kind else {
        return Err(miette!(
            "internal error: hoisting above a node that is not a band"
        ));
    };
    let n = band.n_members();
    let mupa = MultiUnionPwAff::read_from_str(&ctx.isl, &band.schedule)
        .isl("reading a band's schedule")?;
    let text = |m: MultiUnionPwAff| {
        multi_union_pw_aff_text(&m).ok_or_else(|| miette!("isl could not print a band's schedule"))
    };
    let head = mupa
        .copy()
        .isl("copying a band's schedule")?
        .drop_dims(DimType::Out, h.outer as u32, (n - h.outer) as u32)
        .isl("splitting a band")?;
    let tail = mupa
        .drop_dims(DimType::Out, 0, h.outer as u32)
        .isl("splitting a band")?;
    let outer = Band {
        schedule: text(head)?,
        permutable: true,
        coincident: band.coincident[..h.outer].to_vec(),
        ast_options: None,
    };
    let inner = Band {
        schedule: text(tail)?,
        permutable: true,
        coincident: band.coincident[h.outer..].to_vec(),
        ast_options: None,
    };
    let children = std::mem::take(&mut node.children);
    *node = Node::with_child(
        NodeKind::Band(outer),
        Node::with_child(
            NodeKind::Mark(h.mark),
            Node::new(NodeKind::Band(inner), children),
        ),
    );
    Ok(())
}
