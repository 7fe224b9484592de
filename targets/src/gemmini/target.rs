//! The Gemmini target: tensorised contractions as Gemmini instructions, everything else
//! as plain C on the host core, in one function.

use miette::{miette, Result};
use polyhedral::ir::{AssignOp, DType, Func, Program, StmtBody};
use schedule_tree::{BufferRole, Pass, ScheduleTree};

use crate::codegen::kir::{KNode, Kernel};
use crate::desc::TargetDesc;
use crate::passes::{PassCx, Tile};
use crate::target::{BuildInput, RewriteCx, Target};
use crate::{EmitOptions, Executable};

use super::codegen::{gemm_program, Geometry, Placement, Tiles};
use super::recognise::{recognise, AccScale, Gemm};

/// The most instruction programs the default policy counts per GEMM.
pub const MAX_SEARCH_POINTS: usize = 40;

/// The Gemmini NPU (`kind: gemmini`).
#[derive(Clone, Debug)]
pub struct GemminiTarget {
    /// The description.
    pub desc: TargetDesc,
}

/// The first lines of every emitted file: the real `gemmini.h`, or polyc's host header
/// when built for the host (`-DPOLYC_GEMMINI_HOST`).
const INCLUDE: &str = "#ifdef POLYC_GEMMINI_HOST\n#include \"polyc_gemmini_host.h\"\n#else\n#include \"include/gemmini.h\"\n#endif\n";

impl GemminiTarget {
    /// The target for a description of kind `gemmini`.
    pub fn new(desc: TargetDesc) -> GemminiTarget {
        GemminiTarget { desc }
    }

    /// Tensorises what the array can run (the notes say what and why not), and, given the
    /// `final` tree, the `tensorised` tree of the same plan ([`super::tree`]).
    fn rewrite(
        &self,
        cx: &RewriteCx,
        kernel: Kernel,
        fin: Option<&ScheduleTree>,
    ) -> Result<(Kernel, Vec<String>, Option<ScheduleTree>)> {
        let prog = cx.program;
        let (geo, elem, acc) = self.memories()?;
        check_types(prog, &self.desc, elem, acc)?;
        // With nothing tensorised, the `tensorised` tree is the `final` one.
        let untouched = fin.cloned();
        if !cx.optimised {
            return Ok((kernel, Vec::new(), untouched));
        }
        let mut notes = vec![format!("gemmini ({}):", self.desc.name)];
        if !matches!(
            (elem, acc),
            (DType::I8, DType::I32) | (DType::F32, DType::F32)
        ) {
            notes.push(format!(
                "  nothing is tensorised: this version tensorises int8 × int8 → int32 and f32 × f32 → f32, and `{}` holds {elem} → {acc}; every statement runs on the host",
                self.desc.name
            ));
            return Ok((kernel, notes, untouched));
        }
        let Some(sizes) = cx
            .param_values
            .iter()
            .copied()
            .collect::<Option<Vec<i64>>>()
        else {
            notes.push(
                "  nothing is tensorised: the sizes are symbolic (bind them with --param); every statement runs on the host"
                    .into(),
            );
            return Ok((kernel, notes, untouched));
        };
        let (gemms, folded) = self.plan(cx, &geo, &sizes, elem, acc, &mut notes)?;
        unfused_relu_notes(prog, &gemms, &folded, &mut notes);
        unfused_requant_notes(prog, &gemms, &folded, &mut notes);
        host_notes(prog, &folded, &mut notes);
        let (parts, loop_iters, tree_parts) = assemble(&kernel, &gemms, &folded, &geo)?;
        let tree = match fin {
            Some(fin) => Some(self.tensorised_tree(prog, fin, tree_parts, &gemms, &geo)?),
            None => None,
        };
        Ok((
            Kernel {
                body: KNode::Block(parts),
                loop_iters,
                pipeline_stages: Vec::new(),
                folds: Vec::new(),
                full_tile_conds: Vec::new(),
            },
            notes,
            tree,
        ))
    }

    /// Per statement, the GEMM it is recognised as and its tiles (`None`: it runs on the
    /// host), and which statements a GEMM folds (its init, bias preload or epilogue);
    /// says what and why in `notes`.
    fn plan(
        &self,
        cx: &RewriteCx,
        geo: &Geometry,
        sizes: &[i64],
        elem: DType,
        acc: DType,
        notes: &mut Vec<String>,
    ) -> Result<(Plans, Vec<bool>)> {
        let prog = cx.program;
        let n = prog.stmts.len();
        let mut gemms: Plans = vec![None; n];
        let mut folded = vec![false; n];
        #[allow(clippy::needless_range_loop)]
        for s in 0..n {
            match recognise(prog, cx.scop, s, sizes, elem, acc, geo.dim) {
                Ok(g) => {
                    let (t, how) = self.tiles(cx, &g, geo, sizes)?;
                    let p = geo.place(&t).map_err(|e| miette!("internal error: {e}"))?;
                    gemm_notes(prog, s, &g, &t, &p, how, notes);
                    if let Some(e) = &g.epilogue {
                        folded[e.stmt] = true;
                    }
                    if let Some(p) = &g.preload {
                        folded[p.stmt] = true;
                    }
                    if let Some(i) = g.init {
                        folded[i] = true;
                    }
                    gemms[s] = Some((g, t));
                }
                Err(why) => {
                    if !matches!(prog.stmts[s].body, StmtBody::Init(_)) {
                        notes.push(format!(
                            "  {}: runs on the host, not tensorised: {why}",
                            prog.stmts[s].name
                        ));
                    }
                }
            }
        }
        Ok((gemms, folded))
    }

    /// The `tensorised` tree of the plan: `fin` with the parts of the program (host
    /// statements or GEMMs, in program order) as Gemmini's tiles and buffers.
    fn tensorised_tree(
        &self,
        prog: &Program,
        fin: &ScheduleTree,
        tree_parts: Vec<TreePart>,
        gemms: &Plans,
        geo: &Geometry,
    ) -> Result<ScheduleTree> {
        let mut tparts = Vec::new();
        for part in tree_parts {
            tparts.push(match part {
                Err(host) => super::tree::Part::Host(host),
                Ok(s) => {
                    let Some((g, t)) = &gemms[s] else {
                        return Err(miette!("internal error: statement {s} has no plan"));
                    };
                    super::tree::Part::Tensorised {
                        gemm: g,
                        tiles: *t,
                        place: geo.place(t).map_err(|e| miette!("internal error: {e}"))?,
                    }
                }
            });
        }
        let role = |r: BufferRole| {
            self.desc
                .buffers
                .iter()
                .find(|b| b.role() == r)
                .map(|b| schedule_tree::Buffer::new(&b.name))
                .ok_or_else(|| miette!("internal error: no {} buffer", r.name()))
        };
        let bufs = super::tree::Buffers {
            operands: role(BufferRole::Scratchpad)?,
            results: role(BufferRole::Accumulator)?,
        };
        super::tree::tensorised_tree(prog, fin, &tparts, &bufs, geo.dim)
    }

    /// The description's scratchpad and accumulator, with their element types.
    fn memories(&self) -> Result<(Geometry, DType, DType)> {
        let find = |role: BufferRole| {
            self.desc.buffers.iter().find(|b| b.role() == role).ok_or_else(|| {
                miette!(
                    "target `{}` has no buffer with role {}: a Gemmini description needs a scratchpad and an accumulator",
                    self.desc.name,
                    role.name()
                )
            })
        };
        let sp = find(BufferRole::Scratchpad)?;
        let acc = find(BufferRole::Accumulator)?;
        // `TargetDesc::load` checks all of this, with located errors; a description built
        // in code is checked here, so that a degenerate geometry is an error, not a
        // division by zero.
        let dim = self.desc.array.as_ref().map(|a| a.dim as i64).unwrap_or(16);
        if dim < 1 {
            return Err(miette!(
                help = "give the array's side, e.g. `array: {dim: 16}`",
                "target `{}` has an array of {dim} x {dim} processing elements",
                self.desc.name
            ));
        }
        let rows = |b: &crate::desc::BufferDesc| -> Result<(i64, i64, DType)> {
            let elem = b.elem_type().ok_or_else(|| {
                miette!(
                    "buffer `{}` of target `{}` has no element type",
                    b.name,
                    self.desc.name
                )
            })?;
            let row_bytes = b.row_elems.map(|r| r as i64).unwrap_or(dim) * elem.size_bytes() as i64;
            let banks = b.banks.unwrap_or(1) as i64;
            if row_bytes < 1 || banks < 1 || (b.bytes as i64) / row_bytes / banks < dim {
                return Err(miette!(
                    help = "a Gemmini buffer has rows of DIM elements in one or more banks, each bank at least DIM rows (see specs/targets/gemmini.yaml)",
                    "buffer `{}` of target `{}` ({} bytes, rows of {row_bytes} bytes, {banks} bank(s)) cannot hold one {dim} x {dim} block per bank",
                    b.name,
                    self.desc.name,
                    b.bytes
                ));
            }
            Ok((banks, b.bytes as i64 / row_bytes / banks, elem))
        };
        let (sp_banks, sp_bank_rows, elem) = rows(sp)?;
        let (acc_banks, acc_bank_rows, acc_t) = rows(acc)?;
        Ok((
            Geometry {
                dim,
                sp_banks,
                sp_bank_rows,
                acc_banks,
                acc_bank_rows,
                elem_bytes: elem.size_bytes() as i64,
                acc_bytes: acc_t.size_bytes() as i64,
            },
            elem,
            acc_t,
        ))
    }

    /// The tiles the policy picks for `g`, and how to name that choice.
    ///
    /// - `gemmini-default`: Gemmini's own `tiled_matmul_auto` rule
    ///   ([`Geometry::default_tiles`]), the baseline.
    /// - `default` (polyc's): a local search by BACO's EDP that starts from the baseline's
    ///   tiles. It tries doubling, halving, growing and shrinking by DIM each of the I, J
    ///   and K tiles (whole DIM blocks, at most the rounded-up extent, double-buffered in
    ///   the scratchpad and the accumulator, as the baseline's), keeps a move
    ///   when the GEMM's instruction program, counted without running it
    ///   ([`super::run::count_node`]), has a smaller EDP, and stops when no move helps
    ///   (or after [`MAX_SEARCH_POINTS`] programs). It is never worse than the baseline.
    fn policy_tiles(
        &self,
        cx: &RewriteCx,
        g: &Gemm,
        geo: &Geometry,
        sizes: &[i64],
    ) -> Result<(Tiles, &'static str)> {
        let base = geo.default_tiles(g);
        if cx.policy == "gemmini-default" {
            return Ok((
                base,
                "Gemmini's tiled_matmul_auto rule (--policy gemmini-default)",
            ));
        }
        let edp = |t: &Tiles| -> Result<Option<f64>> {
            let p = match geo.place(t) {
                Ok(p) if p.sp_double && p.acc_double => p,
                _ => return Ok(None),
            };
            let body = gemm_program(g, geo, t, &p, "s_");
            let counts = super::run::count_node(cx.program, &body, sizes, geo)?;
            Ok(super::cost::cost(&self.desc, geo, &counts).map(|c| c.edp))
        };
        let Some(mut best_edp) = edp(&base)? else {
            return Ok((base, "the default policy (no cost model: Gemmini's rule)"));
        };
        let d = geo.dim;
        let cap = |e: i64| (e + d - 1) / d * d;
        let caps = [cap(g.extent(g.i)), cap(g.extent(g.j)), cap(g.extent(g.k))];
        let mut best = base;
        let mut seen = vec![(best.ti, best.tj, best.tk)];
        let mut points = 1;
        'search: loop {
            let mut moved = false;
            for axis in 0..3 {
                let cur = [best.ti, best.tj, best.tk][axis];
                let half = (cur / 2 / d).max(1) * d;
                for next in [cur * 2, half, cur + d, cur - d] {
                    let next = next.min(caps[axis]);
                    if next < d || next == cur {
                        continue;
                    }
                    let mut t = best;
                    match axis {
                        0 => t.ti = next,
                        1 => t.tj = next,
                        _ => t.tk = next,
                    }
                    if seen.contains(&(t.ti, t.tj, t.tk)) {
                        continue;
                    }
                    seen.push((t.ti, t.tj, t.tk));
                    if points >= MAX_SEARCH_POINTS {
                        break 'search;
                    }
                    points += 1;
                    if let Some(e) = edp(&t)? {
                        if e < best_edp {
                            (best, best_edp) = (t, e);
                            moved = true;
                        }
                    }
                }
            }
            if !moved {
                break;
            }
        }
        Ok((
            best,
            "the default policy (EDP search from tiled_matmul_auto's tiles)",
        ))
    }

    /// The tiles of `g`: from the tile spec where it gives sizes, else the policy's.
    fn tiles(
        &self,
        cx: &RewriteCx,
        g: &Gemm,
        geo: &Geometry,
        sizes: &[i64],
    ) -> Result<(Tiles, &'static str)> {
        let prog = cx.program;
        let (mut t, policy) = self.policy_tiles(cx, g, geo, sizes)?;
        let Some((spec, file)) = cx.spec else {
            return Ok((t, policy));
        };
        let name = &prog.stmts[g.stmt].name;
        let Some(ss) = spec.get(name) else {
            return Ok((t, policy));
        };
        let scheduled = cx.scheduled;
        let buf = |role: BufferRole| {
            self.desc
                .buffers
                .iter()
                .find(|b| b.role() == role)
                .map(|b| b.buffer())
        };
        let (sp, acc) = (buf(BufferRole::Scratchpad), buf(BufferRole::Accumulator));
        let mut from_spec = false;
        let members = band_iters(scheduled, name, &prog.stmts[g.stmt].iter_names());
        let mut pick = |iter: usize,
                        first: Option<schedule_tree::Buffer>,
                        second: Option<schedule_tree::Buffer>|
         -> Result<Option<i64>> {
            let Some(pos) = members.iter().position(|m| *m == Some(iter)) else {
                return Ok(None);
            };
            let Some(dim) = ss.dims.get(pos) else {
                return Ok(None);
            };
            let level = [first, second]
                .into_iter()
                .flatten()
                .find_map(|b| dim.level(b));
            let Some(l) = level else { return Ok(None) };
            let Some(size) = l.size.fixed() else {
                return Ok(None);
            };
            if size % geo.dim != 0 {
                let err = file.error(
                    l.size_span,
                    format!(
                        "{name}: tile size {size} is not a multiple of Gemmini's DIM ({})",
                        geo.dim
                    ),
                    "not a multiple of DIM",
                    format!(
                        "Gemmini tiles are whole {d}×{d} blocks; use {} or {} (sizes that are not multiples of DIM are handled by the instructions' row and column arguments, at the edges only)",
                        (size / geo.dim).max(1) * geo.dim,
                        (size / geo.dim + 1) * geo.dim,
                        d = geo.dim
                    ),
                );
                return Err(err.into());
            }
            from_spec = true;
            // As tiling does, a tile larger than the extent is the whole extent (in
            // whole blocks).
            let whole = (g.extent(iter) + geo.dim - 1) / geo.dim * geo.dim;
            Ok(Some(size.min(whole)))
        };
        if let Some(v) = pick(g.i, acc, sp)? {
            t.ti = v;
        }
        if let Some(v) = pick(g.j, acc, sp)? {
            t.tj = v;
        }
        if let Some(v) = pick(g.k, sp, acc)? {
            t.tk = v;
        }
        let how = if from_spec { "the tile spec" } else { policy };
        if let Err(why) = geo.place(&t) {
            return Err(miette::Report::new(file.error(
                ss.span,
                format!(
                    "{name}: the Gemmini tiles {}×{}×{} do not fit: {why}",
                    t.ti, t.tj, t.tk
                ),
                "these tiles",
                "choose smaller sizes at @scratchpad (the reduction depth) or @accumulator (the C tile)",
            )));
        }
        Ok((t, how))
    }
}

/// The statement iterator each loop dimension enclosing statement `name` schedules,
/// outermost first across nested bands (what a tile spec's entries refer to); `None` for
/// a member that is not a plain iterator (a skewed or constant dimension).
fn band_iters(tree: &ScheduleTree, name: &str, iters: &[String]) -> Vec<Option<usize>> {
    let mut out = Vec::new();
    for path in tree.bands() {
        let Some(node) = tree.node_at(&path) else {
            continue;
        };
        let line = schedule_tree::text::node_line(&node.kind);
        let key = format!("{name} -> (");
        let Some(at) = line
            .match_indices(&key)
            .find(|(i, _)| line[..*i].ends_with('{') || line[..*i].ends_with("; "))
            .map(|(i, _)| i + key.len())
        else {
            continue;
        };
        let Some(end) = line[at..].find(')') else {
            continue;
        };
        for member in line[at..at + end].split(',') {
            let m = member.trim();
            out.push(iters.iter().position(|n| n == m));
        }
    }
    out
}

/// Per statement, its GEMM and tiles when it is tensorised.
type Plans = Vec<Option<(Gemm, Tiles)>>;

/// A part of the program for the `tensorised` tree: `Err(host statements)` or `Ok(GEMM)`.
type TreePart = std::result::Result<usize, Vec<usize>>;

/// The notes of statement `s`, tensorised as `g` with tiles `t` (from `how`) placed as
/// `p`: the dataflow, the tiles and buffers, and what the GEMM fuses, folds and guards.
fn gemm_notes(
    prog: &Program,
    s: usize,
    g: &Gemm,
    t: &Tiles,
    p: &Placement,
    how: &str,
    notes: &mut Vec<String>,
) {
    notes.push(format!(
        "  {}: tensorised as a GEMM ({}), {}",
        prog.stmts[s].name,
        describe_gemm(prog, g),
        if g.os() {
            "output-stationary (both operands are stored transposed)"
        } else {
            "weight-stationary"
        }
    ));
    notes.push(format!(
        "    tiles {}×{}×{} (i×j×k, from {how}); scratchpad: A {} rows, B {} rows{}; accumulator: C {} rows{}",
        t.ti,
        t.tj,
        t.tk,
        p.a_rows,
        p.b_rows,
        if p.sp_double { ", double-buffered across banks" } else { ", single-buffered" },
        p.c_rows,
        if p.acc_double { ", double-buffered across banks" } else { ", single-buffered" },
    ));
    if let Some(e) = &g.epilogue {
        notes.push(format!(
            "    {} is fused into the mvout: `{}`'s rows leave the accumulator through Gemmini's scaling ({}, rounded half to even and saturated to int8){} into `{}`; `{}` never reaches DRAM",
            prog.stmts[e.stmt].name,
            prog.tensors[g.c].name,
            match e.scale {
                AccScale::Lit(1.0) => "identity scale".to_string(),
                AccScale::Lit(v) => format!("scale {v:?} fused into config_st"),
                AccScale::Scalar(k) => format!(
                    "scale `{}` fused into config_st",
                    prog.scalars[k].name
                ),
            },
            if e.relu { " and ReLU" } else { "" },
            prog.tensors[e.tensor].name,
            prog.tensors[g.c].name
        ));
    }
    if let Some(p) = &g.preload {
        notes.push(format!(
            "    {} is folded: `{}` is moved into the accumulator (mvin3{}) before the reduction",
            prog.stmts[p.stmt].name,
            prog.tensors[p.tensor].name,
            if p.off.coef[g.i] == 0 {
                ", row stride 0: one row broadcast to every row"
            } else {
                ""
            }
        ));
    }
    if !g.guards.is_empty() {
        let names: Vec<String> = g
            .outer
            .iter()
            .filter(|r| g.guards.iter().any(|x| x.iter == **r))
            .map(|&r| format!("`{}`", prog.stmts[s].iters[r].name))
            .collect();
        notes.push(format!(
            "    padding: the ranges of {} depend on the output position, so per filter offset each block's `mvin` and compute cover only the rows it reaches (nothing is padded in DRAM)",
            names.join(", ")
        ));
    }
    if let Some(i) = g.init {
        notes.push(if g.guards.is_empty() {
            format!(
                "    {} (the init of `{}`) is folded: the first reduction step overwrites the accumulator",
                prog.stmts[i].name, prog.tensors[g.c].name
            )
        } else {
            format!(
                "    {} (the init of `{}`) is folded: the accumulator starts from zeros (mvin3 from DRAM address 0), since the first filter offset may not reach every row",
                prog.stmts[i].name, prog.tensors[g.c].name
            )
        });
    }
}

/// A ReLU of a tensorised result cannot ride on its `mvout`: say why.
fn unfused_relu_notes(prog: &Program, gemms: &Plans, folded: &[bool], notes: &mut Vec<String>) {
    for (s, st) in prog.stmts.iter().enumerate() {
        let StmtBody::Update(AssignOp::Assign, polyhedral::ir::Expr::Call(Func::Relu, args)) =
            &st.body
        else {
            continue;
        };
        let Some(polyhedral::ir::Expr::Read { tensor, .. }) = args.first() else {
            continue;
        };
        if !folded[s] && gemms[..s].iter().flatten().any(|(g, _)| g.c == *tensor) {
            notes.push(format!(
                "    {}: the ReLU of `{}` is not fused into its mvout: Gemmini applies activations when it scales accumulator rows to int8, and full int32 rows bypass them; for an int8 result, write `Q(…) = sat_i8(relu({}(…)))` into an int8 tensor with `{}` a temporary, which fuses",
                st.name,
                prog.tensors[*tensor].name,
                prog.tensors[*tensor].name,
                prog.tensors[*tensor].name
            ));
        }
    }
}

/// A requantisation whose ReLU comes before a run-time scale: say why it stays on the
/// host.
fn unfused_requant_notes(prog: &Program, gemms: &Plans, folded: &[bool], notes: &mut Vec<String>) {
    for (s, st) in prog.stmts.iter().enumerate() {
        let StmtBody::Update(AssignOp::Assign, polyhedral::ir::Expr::Call(Func::RequantI8, args)) =
            &st.body
        else {
            continue;
        };
        let (
            Some(polyhedral::ir::Expr::Call(Func::Relu, inner)),
            Some(polyhedral::ir::Expr::Scalar(k)),
        ) = (args.first(), args.get(1))
        else {
            continue;
        };
        let Some(polyhedral::ir::Expr::Read { tensor, .. }) = inner.first() else {
            continue;
        };
        if !folded[s] && gemms[..s].iter().flatten().any(|(g, _)| g.c == *tensor) {
            let (c, sc) = (&prog.tensors[*tensor].name, &prog.scalars[*k].name);
            notes.push(format!(
                "    {}: the requantisation of `{c}` is not fused into its mvout: the ReLU comes before the scale `{sc}`, whose sign is known only at run time, and Gemmini's mvout applies the ReLU after the scale (the same value only for a scale ≥ 0); write `sat_i8(relu({c}(…) * {sc}))`, which fuses",
                st.name
            ));
        }
    }
}

/// The notes of the host statements: a folded statement was looked at before the GEMM
/// that folds it (its "runs on the host" note goes), and an init of a statement that is
/// not tensorised runs on the host.
fn host_notes(prog: &Program, folded: &[bool], notes: &mut Vec<String>) {
    for (st, _) in prog.stmts.iter().zip(folded).filter(|(_, f)| **f) {
        let host = format!("  {}: runs on the host", st.name);
        notes.retain(|n| !n.starts_with(&host));
    }
    for (st, _) in prog.stmts.iter().zip(folded).filter(|(_, f)| !**f) {
        if matches!(st.body, StmtBody::Init(_)) {
            notes.push(format!(
                "  {}: runs on the host (the initialisation of a statement that is not tensorised)",
                st.name
            ));
        }
    }
}

/// The kernel's parts in program order: each statement runs over its whole domain before
/// the next, so host groups (of `kernel`'s body) and instruction programs can follow one
/// another. Also the loop variables with the programs', and the same parts for the
/// `tensorised` tree.
fn assemble(
    kernel: &Kernel,
    gemms: &Plans,
    folded: &[bool],
    geo: &Geometry,
) -> Result<(Vec<KNode>, Vec<String>, Vec<TreePart>)> {
    let mut parts = Vec::new();
    let mut loop_iters = kernel.loop_iters.clone();
    let mut host: Vec<usize> = Vec::new();
    let mut tree_parts: Vec<TreePart> = Vec::new();
    let flush = |host: &mut Vec<usize>, parts: &mut Vec<KNode>, tree_parts: &mut Vec<TreePart>| {
        if !host.is_empty() {
            tree_parts.push(Err(host.clone()));
            let keep = host.clone();
            parts.push(retain_stmts(kernel.body.clone(), &move |s| {
                keep.contains(&s)
            }));
            host.clear();
        }
    };
    for s in 0..gemms.len() {
        if folded[s] {
            continue;
        }
        match &gemms[s] {
            None => host.push(s),
            Some((g, t)) => {
                flush(&mut host, &mut parts, &mut tree_parts);
                tree_parts.push(Ok(s));
                let p = geo.place(t).map_err(|e| miette!("internal error: {e}"))?;
                let prefix = format!("g{s}_");
                let body = gemm_program(g, geo, t, &p, &prefix);
                body.walk(&mut |n| {
                    if let KNode::For { iter, .. } = n {
                        if !loop_iters.contains(iter) {
                            loop_iters.push(iter.clone());
                        }
                    }
                });
                parts.push(body);
            }
        }
    }
    flush(&mut host, &mut parts, &mut tree_parts);
    Ok((parts, loop_iters, tree_parts))
}

/// `node` with only the statement instances `keep` accepts; loops and guards left
/// empty are dropped.
fn retain_stmts(node: KNode, keep: &dyn Fn(usize) -> bool) -> KNode {
    match node {
        KNode::Stmt { stmt, .. } if !keep(stmt) => KNode::Block(Vec::new()),
        KNode::Block(v) => KNode::Block(
            v.into_iter()
                .map(|n| retain_stmts(n, keep))
                .filter(|n| !n.is_empty())
                .collect(),
        ),
        other => {
            let n = other.map_children(&mut |c| retain_stmts(c, keep));
            let empty_body = match &n {
                KNode::For { body, .. } | KNode::Let { body, .. } | KNode::Local { body, .. } => {
                    body.is_empty()
                }
                KNode::If { then, els, .. } => {
                    then.is_empty() && els.as_ref().is_none_or(|e| e.is_empty())
                }
                _ => false,
            };
            if empty_body {
                KNode::Block(Vec::new())
            } else {
                n
            }
        }
    }
}

/// What `explain` says a recognised GEMM is: its tensors, their layout and its iterators.
pub(crate) fn describe_gemm(prog: &Program, g: &Gemm) -> String {
    let st = &prog.stmts[g.stmt];
    let it = |t: usize| {
        st.iters
            .get(t)
            .map(|x| x.name.clone())
            .unwrap_or_else(|| "one column".into())
    };
    let list = |v: &[usize]| v.iter().map(|&b| it(b)).collect::<Vec<_>>().join(", ");
    let mut text = format!(
        "C = `{}`, A = `{}`{}, B = `{}`{}, i = {}, j = {}, k = {}",
        prog.tensors[g.c].name,
        prog.tensors[g.a].name,
        if g.a_transposed { " (transposed)" } else { "" },
        prog.tensors[g.b].name,
        if g.b_transposed { " (transposed)" } else { "" },
        it(g.i),
        it(g.j),
        it(g.k),
    );
    if !g.batch.is_empty() {
        text += &format!(", batch {}", list(&g.batch));
    }
    if !g.outer.is_empty() {
        text += &format!(
            ", filter offsets {} (implicit im2col: per offset, strided `mvin`s of `{}` rows and `{}` rows, accumulated)",
            list(&g.outer),
            prog.tensors[g.a].name,
            prog.tensors[g.b].name
        );
    }
    text
}

impl Target for GemminiTarget {
    fn desc(&self) -> &TargetDesc {
        &self.desc
    }
    fn passes<'a>(&self) -> Vec<Box<dyn Pass<PassCx<'a>>>> {
        vec![Box::new(Tile)]
    }
    fn emit_formats(&self) -> &'static [&'static str] {
        &["c"]
    }
    fn rewrite_kernel(&self, cx: &RewriteCx, kernel: Kernel) -> Result<(Kernel, Vec<String>)> {
        let (k, notes, _) = self.rewrite(cx, kernel, None)?;
        Ok((k, notes))
    }
    fn rewrite_kernel_and_tree(
        &self,
        cx: &RewriteCx,
        kernel: Kernel,
        fin: &ScheduleTree,
    ) -> Result<(Kernel, Vec<String>, Option<ScheduleTree>)> {
        self.rewrite(cx, kernel, Some(fin))
    }
    fn emit(
        &self,
        prog: &Program,
        param_texts: &[String],
        kernel: &Kernel,
        _format: &str,
        opts: &EmitOptions,
    ) -> Result<String> {
        Ok(emit_gemmini_c(prog, param_texts, kernel, opts))
    }
    fn build(&self, input: &BuildInput) -> Result<Box<dyn Executable>> {
        let (geo, _, _) = self.memories()?;
        match input.via.unwrap_or("model") {
            "model" => Ok(Box::new(super::run::ModelRun {
                kernel: input.kernel.clone(),
                geo,
            })),
            "c" => Ok(Box::new(super::run::HostCRun::build(
                input.source,
                geo,
                self.memories()?.1.is_float(),
            )?)),
            other => Err(miette!(
                help = "use --via model (interpret the kernel on the functional model) or --via c (build the emitted C against polyc's host header)",
                "--via {other}: target `{}` runs kernels via `model` or `c`",
                self.desc.name
            )),
        }
    }
    fn run_ways(&self) -> &'static [&'static str] {
        &["model", "c"]
    }
    fn untiled_explain(&self) -> Option<&'static str> {
        Some("no band of the schedule tree is tiled: Gemmini tiles each tensorised statement itself (its tiles, and the policy or spec entries they come from, are listed per statement below)")
    }
    fn policies(&self) -> Vec<(&'static str, &'static str)> {
        vec![
            (
                "default",
                "polyc's: a local search by BACO's EDP from tiled_matmul_auto's tiles",
            ),
            (
                "gemmini-default",
                "Gemmini's own tiled_matmul_auto rule: I, J and K tiles grown by DIM while the double-buffered tiles fit (the baseline)",
            ),
        ]
    }
    fn cost_model(&self) -> Option<&'static str> {
        self.desc.cost.as_ref().map(|_| "EDP")
    }
    /// BACO's EDP of the instruction program, counted without running it.
    fn model_cost(&self, input: &BuildInput, sizes: &[i64]) -> Result<f64> {
        let (geo, _, _) = self.memories()?;
        let counts = super::run::count(input.program, input.kernel, sizes, &geo)?;
        super::cost::cost(&self.desc, &geo, &counts)
            .map(|c| c.edp)
            .ok_or_else(|| miette!("target `{}` has no cost model", self.desc.name))
    }
    fn explain_kernels(&self, input: &BuildInput, sizes: Option<&[i64]>) -> Result<Option<String>> {
        let Some(sizes) = sizes else {
            return Ok(None);
        };
        let (geo, _, _) = self.memories()?;
        let counts = super::run::count(input.program, input.kernel, sizes, &geo)?;
        Ok(Some(super::cost::report(&self.desc, &geo, &counts)))
    }
}

/// The Gemmini C translation unit: the `gemmini.h` include, then the C of the kernel
/// (the CPU's calling convention and entry wrapper; instructions are macro calls).
pub fn emit_gemmini_c(
    prog: &Program,
    param_texts: &[String],
    kernel: &Kernel,
    opts: &EmitOptions,
) -> String {
    let c = super::dialect::emit_kernel_c(prog, param_texts, kernel, opts);
    format!("/* Gemmini C: build with -I <gemmini-rocc-tests> (gemmini.h), or -DPOLYC_GEMMINI_HOST against polyc's host header. */\n{INCLUDE}{c}")
}

/// Checks that the description can hold the program's data: an integer program needs an
/// integer Gemmini (`gemmini`), a float program a float one (`gemmini-fp32`).
fn check_types(prog: &Program, desc: &TargetDesc, elem: DType, acc: DType) -> Result<()> {
    let float_target = elem.is_float() || acc.is_float();
    for t in &prog.tensors {
        if t.dtype.is_float() != float_target {
            let (want, holds) = if t.dtype.is_float() {
                ("gemmini-fp32", "floats (f32)")
            } else {
                ("gemmini", "int8 operands and int32 results")
            };
            return Err(miette!(
                help = format!("compile for --target {want}, whose description holds {holds}"),
                "tensor `{}` of `{}` is {}, which target `{}` cannot hold (its scratchpad holds {elem}, its accumulator {acc})",
                t.name,
                prog.name,
                t.dtype,
                desc.name
            ));
        }
    }
    Ok(())
}
