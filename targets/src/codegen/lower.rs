//! Lowering a schedule tree to the kernel IR with isl's AST generator.
//!
//! [`lower`] runs `isl_ast_build_node_from_schedule` (with `atomic_upper_bound` and
//! `detect_min_max` set, so loop bounds come out as `c <= min(a, b)` rather than as
//! conjunctions) and translates isl's AST into [`KNode`]s:
//!
//! - isl `for` → [`KNode::For`] (a degenerate, single-iteration `for` becomes a loop
//!   with condition `iter <= init`);
//! - isl `if` → [`KNode::If`], isl blocks → [`KNode::Block`];
//! - isl user nodes, which are calls `S_i(e0, e1, …)`, → [`KNode::Stmt`] for the
//!   statement whose name is `S_i`, with the `e_k` as the values of its iterators;
//! - mark nodes are typed with [`Mark::from_isl_name`]: [`Mark::Skipped`] drops its
//!   subtree, [`Mark::Parallel`] sets `parallel` on the loop of the first member of the
//!   band below it (and on nothing if isl did not need a loop for that member because it
//!   has a single value), and every other mark is transparent. An unknown mark is an
//!   error.
//!
//! Before generating the AST, the point band under every memory mark is permuted so that
//! its innermost member is one the C compiler can vectorise
//! ([`crate::passes::interchange::sink_vectorizable_members`]).
//!
//! Loop iterators are isl's `c0, c1, …` (`c<depth>`). If any of those names is also a
//! name in the program (a tensor, scalar, size, statement iterator or the `def`), every
//! loop iterator is renamed to `polyc_c<depth>` instead.

use std::collections::{BTreeSet, HashSet};
use std::ffi::CString;

use isl_rs::{
    ASTExpr, ASTExprOpType, ASTExprType, ASTNode, DimType, Id, Map, PwAff, PwMultiAff, Schedule,
    ScheduleNode, ScheduleNodeType, Set, Space, UnionMap, Val,
};
use miette::{miette, Result};
use polyhedral::ir::{AssignOp, Program, StmtBody};
use polyhedral::isl::ffi::ast_build::{self as ffi, AstNodeKind};
use polyhedral::isl::ffi::promote as pffi;
use polyhedral::isl::{Ctx, IslResultExt};
use polyhedral::scop::Scop;
use schedule_tree::mark::Mark;
use schedule_tree::Level;
use std::ffi::c_void;
use std::os::raw::c_int;

use crate::codegen::kir::{
    BlockRef, Intrinsic, IntrinsicArg, KCmp, KExpr, KNode, Kernel, LocalBuf, LocalRef, LoopKind,
    MemSpace,
};
use crate::passes::promote::{parse_copy_stmt, CopyKind, Promotion};

/// Lowers `schedule` (whose domain names statements `S_0`, `S_1`, … of `prog`) to a
/// kernel with isl's AST generator. See the module documentation for how each isl AST
/// node and each mark is translated.
///
/// `ctx` must be the context the schedule belongs to. The AST-generation options
/// `ast_build_atomic_upper_bound` and `ast_build_detect_min_max` are switched on in it.
pub fn lower(ctx: &Ctx, prog: &Program, schedule: &Schedule) -> Result<Kernel> {
    lower_with(ctx, prog, None, schedule, &LowerOptions::cpu())
}

/// What lowering needs to know about the target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LowerOptions {
    /// The target's memory levels (register files are told apart by role).
    pub levels: Vec<Level>,
    /// Permute point bands so that the innermost member vectorises
    /// ([`crate::passes::interchange::sink_vectorizable_members`]): for C compilers' vectorisers.
    pub sink_vectorizable: bool,
}

impl LowerOptions {
    /// The built-in CPU description's levels, with vectorising interchange.
    pub fn cpu() -> LowerOptions {
        LowerOptions {
            levels: crate::desc::TargetDesc::builtin_cpu()
                .map(|d| d.levels())
                .unwrap_or_default(),
            sink_vectorizable: true,
        }
    }
}

/// [`lower`] for a schedule that may hold promoted tiles (copy statements grafted by
/// [`crate::passes::promote::promote`]): `scop` is the program's model, from which the tiles'
/// offsets are recomputed. Without `scop`, a schedule with copy statements is an error.
pub fn lower_with(
    ctx: &Ctx,
    prog: &Program,
    scop: Option<&Scop>,
    schedule: &Schedule,
    opts: &LowerOptions,
) -> Result<Kernel> {
    let raw = lower_raw(ctx, prog, scop, schedule, opts, "")?;
    let _s = polyhedral::substeps::span("codegen:normalize");
    Ok(crate::codegen::normalize::normalize_loops(raw))
}

/// [`lower_with`] for a dynamic-shape kernel (`--dynamic`): code generation assumes every
/// dynamic size within its values (the kernel checks them at run time), and the partial
/// tiles along those sizes are composed from micro-kernels chosen with `model` (see
/// [`crate::codegen::microkernel`]). Returns the kernel, the chosen micro-kernel sets, each with
/// the statements of its tiles, and notes for `polyc explain` (the small-size version,
/// [`crate::codegen::microkernel::small_size_version`]).
pub fn lower_dynamic(
    ctx: &Ctx,
    prog: &Program,
    scop: Option<&Scop>,
    schedule: &Schedule,
    opts: &LowerOptions,
    sizes: &[crate::codegen::microkernel::DynamicSize],
    model: crate::codegen::microkernel::MicroKernelModel,
) -> Result<(Kernel, crate::codegen::microkernel::ChosenSets, Vec<String>)> {
    let context = sizes
        .iter()
        .map(|s| format!("{} <= {} <= {}", s.lo(), s.name, s.hi()))
        .collect::<Vec<_>>()
        .join(" and ");
    let names: Vec<&str> = sizes.iter().map(|s| s.name.as_str()).collect();
    let context = format!("[{}] -> {{ : {context} }}", names.join(", "));
    let kernel = lower_raw(ctx, prog, scop, schedule, opts, &context)?;
    let mut buffers = std::collections::HashMap::new();
    kernel.body.walk(&mut |n| {
        if let KNode::Local { bufs, .. } = n {
            for b in bufs {
                buffers.insert(b.promo, b.clone());
            }
        }
    });
    let shift = crate::codegen::microkernel::ShiftInfo {
        stmt_lhs: prog.stmts.iter().map(|s| s.lhs).collect(),
        dim_sizes: prog
            .tensors
            .iter()
            .map(|t| {
                t.shape
                    .iter()
                    .map(|a| {
                        sizes
                            .iter()
                            .filter(|s| {
                                prog.param_index(&s.name)
                                    .is_some_and(|p| aff_mentions_param(a, p))
                            })
                            .map(|s| s.name.clone())
                            .collect()
                    })
                    .collect()
            })
            .collect(),
        buffers,
    };
    let mut cx = crate::codegen::microkernel::ComposeCx {
        sizes,
        model,
        next_id: 0,
        chosen: Vec::new(),
        shift: Some(shift),
    };
    let mut kernel = crate::codegen::normalize::normalize_loops_dynamic(kernel, &mut cx);
    let mut notes = Vec::new();
    if let [size] = sizes {
        if let Some(p) = prog.param_index(&size.name) {
            let independent: Vec<bool> = prog
                .tensors
                .iter()
                .map(|t| !t.shape.iter().any(|a| aff_mentions_param(a, p)))
                .collect();
            let (body, note) = crate::codegen::microkernel::small_size_version(
                std::mem::replace(&mut kernel.body, KNode::Block(Vec::new())),
                size,
                &independent,
            );
            kernel.body = body;
            notes.extend(note);
        }
    }
    Ok((kernel, cx.chosen, notes))
}

/// Whether `a` mentions size parameter `p`.
fn aff_mentions_param(a: &polyhedral::ir::Aff, p: usize) -> bool {
    use polyhedral::ir::Aff;
    match a {
        Aff::Param(q) => *q == p,
        Aff::Const(_) | Aff::Iter(_) => false,
        Aff::Add(x, y) | Aff::Sub(x, y) => aff_mentions_param(x, p) || aff_mentions_param(y, p),
        Aff::Mul(_, x) | Aff::Neg(x) | Aff::FloorDiv(x, _) | Aff::Mod(x, _) => {
            aff_mentions_param(x, p)
        }
    }
}

/// Lowering before loop normalisation; `context` (isl set text over the parameters, or
/// empty) is what code generation may assume of the sizes.
fn lower_raw(
    ctx: &Ctx,
    prog: &Program,
    scop: Option<&Scop>,
    schedule: &Schedule,
    opts: &LowerOptions,
    context_text: &str,
) -> Result<Kernel> {
    // SAFETY: plain option setters on a live context.
    unsafe {
        ffi::isl_options_set_ast_build_atomic_upper_bound(ctx.ptr(), 1);
        ffi::isl_options_set_ast_build_detect_min_max(ctx.ptr(), 1);
    }
    let schedule = schedule
        .copy()
        .isl("copying the schedule for code generation")?;
    let schedule = if opts.sink_vectorizable {
        let _s = polyhedral::substeps::span("codegen:sink_vectorizable");
        crate::passes::interchange::sink_vectorizable_members(ctx, prog, &schedule, &opts.levels)?
    } else {
        schedule
    };
    let promos = match scop {
        Some(scop) => {
            let _s = polyhedral::substeps::span("codegen:promotions");
            crate::passes::promote::promotions_in(ctx, prog, scop, &schedule, &opts.levels)?
        }
        None => Vec::new(),
    };
    let schedule = tag_marks(ctx, schedule, &promos)?;
    let mut state = Box::new(CallbackState {
        promos,
        stack: Vec::new(),
        infos: Vec::new(),
        error: None,
        ctx: ctx.ptr(),
        stmt_tensors: statement_tensors(prog),
    });

    let space = schedule
        .get_domain()
        .isl("reading the schedule's domain")?
        .get_space()
        .isl("reading the schedule's parameter space")?
        .params()
        .isl("reading the schedule's parameter space")?;
    let mut context = Set::universe(space).isl("building the code generation context")?;
    if !context_text.is_empty() {
        let assumed = Set::read_from_str(&ctx.isl, context_text)
            .isl(&format!("reading the size context `{context_text}`"))?;
        context = context
            .intersect_params(assumed)
            .isl("restricting the code generation context")?;
    }
    context.do_not_free_on_drop();
    let mut schedule = schedule;
    schedule.do_not_free_on_drop();
    // SAFETY: `from_context` takes the set, `node_from_schedule` keeps the build and takes
    // the schedule (ownership of both was released above), and the build is freed here.
    let ast_span = polyhedral::substeps::span("codegen:ast_build");
    let ast_ptr = unsafe {
        let mut build = ffi::isl_ast_build_from_context(context.ptr);
        if build != 0 {
            let user = &mut *state as *mut CallbackState as *mut std::ffi::c_void;
            build = pffi::isl_ast_build_set_at_each_domain(build, at_each_domain, user);
            build = pffi::isl_ast_build_set_before_each_mark(build, before_each_mark, user);
            build = pffi::isl_ast_build_set_after_each_mark(build, after_each_mark, user);
        }
        if build == 0 {
            ffi::isl_ast_build_free(0);
            0
        } else {
            let node = ffi::isl_ast_build_node_from_schedule(build, schedule.ptr);
            ffi::isl_ast_build_free(build);
            node
        }
    };
    drop(ast_span);
    if let Some(e) = state.error.take() {
        if ast_ptr != 0 {
            // SAFETY: the node is ours and not used again.
            unsafe { pffi::isl_ast_node_free(ast_ptr) };
        }
        return Err(miette!(
            help = "this is an internal error in polyc's memory promotion; please report it with the program",
            "re-indexing promoted tiles failed: {e}"
        ));
    }
    if ast_ptr == 0 {
        let msg = ctx
            .take_error()
            .unwrap_or_else(|| "unknown isl error".into());
        return Err(miette!(
            help = "this is an internal error in polyc's use of isl; please report it with the program",
            "isl failed to generate an AST from the schedule: {msg}"
        ));
    }
    let ast = ASTNode {
        ptr: ast_ptr,
        should_free_on_drop: true,
    };

    let mut lw = Lowerer {
        prog,
        shared: opts
            .levels
            .iter()
            .filter(|l| l.role == schedule_tree::BufferRole::SharedMemory)
            .map(|l| l.buffer)
            .collect(),
        scope: Vec::new(),
        state: &state,
    };
    let to_kir = polyhedral::substeps::span("codegen:ast_to_kir");
    let body = prune(lw.node(&ast)?);
    drop(to_kir);

    // Rename loop iterators if they collide with a program name.
    let mut iters = Vec::new();
    body.walk(&mut |n| {
        if let KNode::For { iter, .. } = n {
            if !iters.contains(iter) {
                iters.push(iter.clone());
            }
        }
    });
    let taken = program_names(prog);
    let body = if iters.iter().any(|i| taken.contains(i)) {
        let renamed: Vec<String> = iters.iter().map(|i| format!("polyc_{i}")).collect();
        let body = rename_iters(&body, &|n: &str| {
            iters
                .iter()
                .position(|i| i == n)
                .map(|p| renamed[p].clone())
        });
        iters = renamed;
        body
    } else {
        body
    };
    Ok(Kernel {
        body,
        loop_iters: iters,
        pipeline_stages: Vec::new(),
        folds: Vec::new(),
        full_tile_conds: Vec::new(),
    })
}

/// Every name a program declares (tensors, scalars, sizes, statement iterators, the def).
fn program_names(prog: &Program) -> HashSet<String> {
    let mut s = HashSet::new();
    s.insert(prog.name.clone());
    s.extend(prog.params.iter().map(|p| p.name.clone()));
    s.extend(prog.tensors.iter().map(|t| t.name.clone()));
    s.extend(prog.scalars.iter().map(|t| t.name.clone()));
    for st in &prog.stmts {
        s.extend(st.iters.iter().map(|i| i.name.clone()));
    }
    s
}

/// Replaces every `parallel` mark with an equal-named mark whose id carries the schedule
/// depth of the mark (as the id's user pointer, plus one), so that the AST walk knows
/// which loop the mark refers to, and every memory mark with promoted tiles with one whose
/// id carries the mark's pre-order number plus one (an index into `promos`). Checks every
/// mark name on the way.
fn tag_marks(ctx: &Ctx, schedule: Schedule, promos: &[Vec<Promotion>]) -> Result<Schedule> {
    let root = schedule.get_root().isl("reading the schedule's root")?;
    let mut count = 0usize;
    let root = tag_node(ctx, root, promos, &mut count)?;
    root.get_schedule().isl("rebuilding the schedule")
}

fn tag_node(
    ctx: &Ctx,
    node: ScheduleNode,
    promos: &[Vec<Promotion>],
    count: &mut usize,
) -> Result<ScheduleNode> {
    let mut node = node;
    if node.get_type().isl("reading a schedule node's type")? == ScheduleNodeType::Mark {
        let id = node.mark_get_id().isl("reading a mark")?;
        let name = id.get_name().isl("reading a mark's name")?.to_string();
        let mark = parse_mark(&name)?;
        let ordinal = *count;
        *count += 1;
        let tag = match mark {
            Mark::Parallel => Some(
                node.get_schedule_depth()
                    .isl("reading a mark's schedule depth")? as usize
                    + 1,
            ),
            Mark::Mem(_) if promos.get(ordinal).is_some_and(|p| !p.is_empty()) => Some(ordinal + 1),
            Mark::Reduce => Some(
                // The band's first member maps to threads (see `gpu::rows`).
                node.get_schedule_depth()
                    .isl("reading a mark's schedule depth")? as usize
                    + 1
                    + (1 << 16),
            ),
            Mark::Kernel | Mark::Thread => {
                // The schedule depth, and how many leading coincident members of the band
                // below (at most three) map to blocks or threads.
                let depth = node
                    .get_schedule_depth()
                    .isl("reading a mark's schedule depth")? as usize;
                let child = node
                    .copy()
                    .isl("copying a schedule node")?
                    .child(0)
                    .isl("visiting a mark's child")?;
                let mut mapped = 0usize;
                if child.get_type().isl("reading a schedule node's type")? == ScheduleNodeType::Band
                {
                    let n = child.band_n_member().isl("reading a band")?;
                    while (mapped as i32) < n.min(3)
                        && child
                            .band_member_get_coincident(mapped as i32)
                            .isl("reading a band member's coincidence")?
                    {
                        mapped += 1;
                    }
                }
                Some((depth + 1) | (mapped << 16))
            }
            _ => None,
        };
        if let Some(tag) = tag {
            node = node.delete().isl("replacing a mark")?;
            let tagged = alloc_id(ctx, &name, tag)?;
            node = node.insert_mark(tagged).isl("replacing a mark")?;
        }
    }
    let n = node.n_children().isl("counting a node's children")?;
    for i in 0..n {
        node = node.child(i).isl("visiting a schedule node")?;
        node = tag_node(ctx, node, promos, count)?;
        node = node.parent().isl("visiting a schedule node")?;
    }
    Ok(node)
}

/// What the AST-build callbacks share with the lowering.
struct CallbackState {
    /// Promotions per mark (pre-order number).
    promos: Vec<Vec<Promotion>>,
    /// The marks the generator is inside, with the promoted tiles each one opens.
    stack: Vec<Vec<ActiveTile>>,
    /// Per annotated statement instance: the promoted tiles in scope.
    infos: Vec<Vec<TileInfo>>,
    /// The first failure inside a callback.
    error: Option<String>,
    /// The isl context.
    ctx: usize,
    /// Per statement name: the tensors it reads or writes (its instances need the tiles of
    /// those tensors only); a copy statement needs the tile it copies.
    stmt_tensors: std::collections::HashMap<String, Vec<usize>>,
}

/// Per statement name: the tensors it reads or writes.
fn statement_tensors(prog: &Program) -> std::collections::HashMap<String, Vec<usize>> {
    prog.stmts
        .iter()
        .map(|s| {
            let mut ts = vec![s.lhs];
            for (t, _, _) in s.reads() {
                if !ts.contains(&t) {
                    ts.push(t);
                }
            }
            (s.name.clone(), ts)
        })
        .collect()
}

/// A promoted tile as one statement instance sees it, as isl expressions of the loop
/// iterators.
struct TileInfo {
    /// Promotion number.
    promo: usize,
    /// Tensor.
    tensor: usize,
    /// The tile's first element.
    offset: Vec<ASTExpr>,
    /// For a buffer stored in blocks: the block's number and first element per dimension.
    block: Option<(Vec<ASTExpr>, Vec<ASTExpr>)>,
}

/// A promoted tile the generator is inside.
struct ActiveTile {
    /// Promotion number.
    id: usize,
    /// Tensor.
    tensor: usize,
    /// The buffer's extents (for a view: the block's).
    sizes: Vec<i64>,
    /// The block extents of a buffer stored in blocks.
    block: Option<Vec<i64>>,
    /// A view of the blocks of promotion `id` at a nested mark.
    view: bool,
    /// Dimensions of the build's schedule at the mark.
    outer: u32,
    /// From the build's schedule at the mark to the tile's first element.
    offset: Map,
}

/// The build's current schedule (instances → its schedule dimensions).
fn build_schedule(build: usize) -> Result<UnionMap> {
    // SAFETY: the build is alive during the callback; the result is ours.
    let ptr = unsafe { pffi::isl_ast_build_get_schedule(build) };
    if ptr == 0 {
        return Err(miette!("isl could not give the AST build's schedule"));
    }
    Ok(UnionMap {
        ptr,
        should_free_on_drop: true,
    })
}

/// Each needed tile's offset as a function of the build's schedule (whose range space
/// `space` may be nested); `None` for the tiles not needed.
fn offsets_in_build(
    space: Space,
    active: &[&ActiveTile],
    needed: &[bool],
) -> Result<Vec<Option<PwMultiAff>>> {
    // From the build's schedule space to its flat dimensions.
    let ident = Map::identity(space.map_from_set().isl("building a projection")?)
        .isl("building a projection")?
        .flatten_range()
        .isl("building a projection")?;
    let n = ident
        .dim(DimType::Out)
        .isl("counting schedule dimensions")? as u32;
    let mut pmas = Vec::with_capacity(active.len());
    for (p, &need) in active.iter().zip(needed) {
        if !need {
            pmas.push(None);
            continue;
        }
        let d = p.outer;
        if d > n {
            return Err(miette!(
                "a promoted tile's depth {d} exceeds the schedule's {n}"
            ));
        }
        let proj = ident
            .copy()
            .isl("copying a map")?
            .project_out(DimType::Out, d, n - d)
            .isl("projecting the schedule")?
            .reset_tuple_id(DimType::Out)
            .isl("projecting the schedule")?;
        let comp = proj
            .apply_range(p.offset.copy().isl("copying an offset")?)
            .isl("composing an offset")?;
        pmas.push(Some(
            PwMultiAff::from_map(comp).isl("an offset as a function")?,
        ));
    }
    Ok(pmas)
}

/// The build's schedule (reversed) composed with a mark's instance → tile map: the tile
/// coordinates as a relation of the build's flat schedule dimensions; `None` when no
/// instance below the mark reaches this part of the build.
fn relate_to_tiles(sched_rev: &UnionMap, inst: &UnionMap) -> Result<Option<Map>> {
    let b2p = sched_rev
        .copy()
        .isl("copying a map")?
        .apply_range(inst.copy().isl("copying a map")?)
        .isl("relating the build's schedule to the tiles")?;
    if b2p.is_empty().isl("checking a map")? {
        return Ok(None);
    }
    Ok(Some(
        Map::from_union_map(b2p)
            .isl("relating the build's schedule to the tiles")?
            .flatten_domain()
            .isl("relating the build's schedule to the tiles")?
            .reset_tuple_id(DimType::In)
            .isl("relating the build's schedule to the tiles")?
            .reset_tuple_id(DimType::Out)
            .isl("relating the build's schedule to the tiles")?,
    ))
}

impl CallbackState {
    /// The tiles a mark opens: each promotion's offset as a function of the build's
    /// schedule at the mark. (The build's schedule dimensions need not be the tree's
    /// prefix dimensions one to one, since isl drops dimensions that are constant; the
    /// relation between the two comes from the instances that reach the mark.)
    fn open(&self, ordinal: usize, build: usize) -> Result<Vec<ActiveTile>> {
        let Some(promos) = self.promos.get(ordinal) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        let sched_rev = build_schedule(build)?
            .reverse()
            .isl("reversing the build's schedule")?;
        // The promotions of one mark share one instance map (the same isl object): relate
        // the build's schedule to its tiles once per map, not once per promotion.
        let mut related: Vec<(usize, Option<Map>)> = Vec::new();
        for p in promos {
            let key = p.inst.ptr;
            let b2p = match related.iter().find(|(k, _)| *k == key) {
                Some((_, m)) => m
                    .as_ref()
                    .map(|m| m.copy().isl("copying a map"))
                    .transpose()?,
                None => {
                    let m = relate_to_tiles(&sched_rev, &p.inst)?;
                    let copy = m
                        .as_ref()
                        .map(|m| m.copy().isl("copying a map"))
                        .transpose()?;
                    related.push((key, m));
                    copy
                }
            };
            let Some(b2p) = b2p else {
                continue;
            };
            let outer = b2p.dim(DimType::In).isl("counting dimensions")? as u32;
            let off = p
                .offset
                .copy()
                .isl("copying an offset")?
                .reset_tuple_id(DimType::In)
                .isl("reading an offset")?;
            let offset = b2p.apply_range(off).isl("composing an offset")?;
            if !offset.is_single_valued().isl("checking an offset")? {
                return Err(miette!(
                    "the tile of {} is not a function of the loops around its mark",
                    p.id
                ));
            }
            out.push(ActiveTile {
                id: p.id,
                tensor: p.tensor,
                sizes: p.sizes.clone(),
                block: p.block.clone(),
                view: p.view,
                outer,
                offset,
            });
        }
        Ok(out)
    }

    /// Which of the `active` tiles the instances of statement `stmt` use: the tiles of the
    /// tensors it accesses (a copy statement: of the tensor it copies). A statement polyc
    /// does not know keeps them all.
    fn needed_tiles(&self, stmt: &str, active: &[&ActiveTile]) -> Vec<bool> {
        let tensors: Vec<usize> = match parse_copy_stmt(stmt) {
            Some((_, k, _)) => active
                .iter()
                .filter(|p| p.id == k)
                .map(|p| p.tensor)
                .collect(),
            None => match self.stmt_tensors.get(stmt) {
                Some(ts) => ts.clone(),
                None => return vec![true; active.len()],
            },
        };
        active.iter().map(|p| tensors.contains(&p.tensor)).collect()
    }

    /// The offsets of every promoted tile in scope, in terms of the build's loop
    /// iterators, and for buffers stored in blocks the block each instance touches: at a
    /// view (a nested mark), the view's tile is one block; at a copy statement of the
    /// buffer, the block of the copied element.
    fn offsets(&self, build: usize) -> Result<Vec<TileInfo>> {
        let active: Vec<&ActiveTile> = self.stack.iter().flatten().collect();
        if active.is_empty() {
            return Ok(Vec::new());
        }
        let sched =
            Map::from_union_map(build_schedule(build)?).isl("reading the build's schedule")?;
        let stmt = sched
            .get_tuple_name(DimType::In)
            .isl("reading a statement name")?
            .to_string();
        let space = sched
            .get_space()
            .isl("reading the schedule space")?
            .range()
            .isl("reading the schedule space")?;
        let needed = self.needed_tiles(&stmt, &active);
        let pmas = offsets_in_build(space, &active, &needed)?;
        let pma = |i: usize| {
            pmas[i]
                .as_ref()
                .ok_or_else(|| miette!("internal error: tile {i}'s offset was not computed"))
        };
        let mut out = Vec::new();
        for (i, p) in active.iter().enumerate() {
            if !needed[i] {
                continue;
            }
            let dims = pma(i)?
                .dim(DimType::Out)
                .isl("counting offset dimensions")?;
            let mut offset = Vec::with_capacity(dims as usize);
            for j in 0..dims {
                offset.push(ast_expr(
                    build,
                    pma(i)?.get_at(j).isl("reading an offset")?,
                )?);
            }
            let block = match &p.block {
                None => None,
                Some(b) => {
                    // (the buffer's offset, the element or the view's offset, the
                    // buffer's extents)
                    let parts = if p.view {
                        let o = active[..i]
                            .iter()
                            .rposition(|q| q.id == p.id && !q.view)
                            .ok_or_else(|| {
                                miette!("a view of tile {} is outside the tile", p.id)
                            })?;
                        Some((
                            o,
                            pma(i)?.copy().isl("copying an offset")?,
                            &active[o].sizes,
                        ))
                    } else if parse_copy_stmt(&stmt).is_some_and(|(_, k, _)| k == p.id) {
                        let elem = PwMultiAff::from_map(
                            sched
                                .copy()
                                .isl("copying a map")?
                                .reverse()
                                .isl("reversing the schedule")?,
                        )
                        .isl("a copied element as a function")?;
                        Some((i, elem, &p.sizes))
                    } else {
                        None
                    };
                    match parts {
                        None => None,
                        Some((o, at, sizes)) => {
                            let mut index = Vec::with_capacity(b.len());
                            let mut origin = Vec::with_capacity(b.len());
                            for (j, (&bs, &s)) in b.iter().zip(sizes.iter()).enumerate() {
                                let j = j as i32;
                                let base = pma(o)?.get_at(j).isl("reading an offset")?;
                                let ctx = base.get_ctx();
                                let v = |x: i64| Val::int_from_si(&ctx, x);
                                if bs >= s {
                                    let zero = base
                                        .copy()
                                        .isl("copying an offset")?
                                        .scale_val(v(0).isl("zero")?)
                                        .isl("building zero")?;
                                    index.push(ast_expr(build, zero)?);
                                    origin.push(ast_expr(build, base)?);
                                    continue;
                                }
                                let e = at.get_at(j).isl("reading an element")?;
                                let q = e
                                    .sub(base.copy().isl("copying an offset")?)
                                    .isl("locating a block")?
                                    .scale_down_val(v(bs).isl("a block size")?)
                                    .isl("locating a block")?
                                    .floor()
                                    .isl("locating a block")?;
                                let first = if p.view {
                                    at.get_at(j).isl("reading an offset")?
                                } else {
                                    base.add(
                                        q.copy()
                                            .isl("copying a block number")?
                                            .scale_val(v(bs).isl("a block size")?)
                                            .isl("locating a block")?,
                                    )
                                    .isl("locating a block")?
                                };
                                index.push(ast_expr(build, q)?);
                                origin.push(ast_expr(build, first)?);
                            }
                            Some((index, origin))
                        }
                    }
                }
            };
            out.push(TileInfo {
                promo: p.id,
                tensor: p.tensor,
                offset,
                block,
            });
        }
        Ok(out)
    }
}

/// isl's expression for `pa` in the build (takes `pa`).
fn ast_expr(build: usize, pa: PwAff) -> Result<ASTExpr> {
    let mut pa = pa;
    pa.do_not_free_on_drop();
    // SAFETY: takes the pw_aff, keeps the live build; the result is ours.
    let e = unsafe { pffi::isl_ast_build_expr_from_pw_aff(build, pa.ptr) };
    if e == 0 {
        return Err(miette!("isl could not build an expression for an offset"));
    }
    Ok(ASTExpr {
        ptr: e,
        should_free_on_drop: true,
    })
}

/// isl's at-each-domain callback: annotates the statement instance with the offsets of
/// the promoted tiles in scope.
unsafe extern "C" fn at_each_domain(node: usize, build: usize, user: *mut c_void) -> usize {
    // SAFETY: `user` is the `CallbackState` that `lower_with` keeps alive during the build.
    let state = unsafe { &mut *(user as *mut CallbackState) };
    if state.error.is_some() || node == 0 {
        return node;
    }
    let offsets = {
        let _s = polyhedral::substeps::span("codegen:ast_offsets");
        state.offsets(build)
    };
    match offsets {
        Ok(v) if v.is_empty() => node,
        Ok(v) => {
            state.infos.push(v);
            let tag = state.infos.len();
            let id = {
                let cname = c"polyc_locals";
                // SAFETY: isl copies the name; the user pointer is an integer.
                unsafe { ffi::isl_id_alloc(state.ctx, cname.as_ptr(), tag as *mut c_void) }
            };
            let n = ASTNode {
                ptr: node,
                should_free_on_drop: true,
            };
            match n.set_annotation(Id {
                ptr: id,
                should_free_on_drop: true,
            }) {
                Ok(mut n) => {
                    n.do_not_free_on_drop();
                    n.ptr
                }
                Err(e) => {
                    state.error = Some(e.to_string());
                    0
                }
            }
        }
        Err(e) => {
            state.error = Some(format!("{e}"));
            node
        }
    }
}

/// isl's before-each-mark callback: enters a mark.
unsafe extern "C" fn before_each_mark(mark: usize, build: usize, user: *mut c_void) -> c_int {
    // SAFETY: as in `at_each_domain`; `mark` is a live id.
    let state = unsafe { &mut *(user as *mut CallbackState) };
    let id = Id {
        ptr: mark,
        should_free_on_drop: false,
    };
    let is_mem = matches!(
        id.get_name().ok().and_then(Mark::from_isl_name),
        Some(Mark::Mem(_))
    );
    // SAFETY: reads the user pointer of a live id.
    let tag = unsafe { ffi::isl_id_get_user(mark) } as usize;
    let tiles = if is_mem && tag > 0 && state.error.is_none() {
        let _s = polyhedral::substeps::span("codegen:ast_open_tiles");
        match state.open(tag - 1, build) {
            Ok(t) => t,
            Err(e) => {
                state.error = Some(format!("{e}"));
                Vec::new()
            }
        }
    } else {
        Vec::new()
    };
    state.stack.push(tiles);
    0
}

/// isl's after-each-mark callback: leaves a mark.
unsafe extern "C" fn after_each_mark(node: usize, _build: usize, user: *mut c_void) -> usize {
    // SAFETY: as in `at_each_domain`.
    let state = unsafe { &mut *(user as *mut CallbackState) };
    state.stack.pop();
    node
}

/// An isl id with a name and an integer stored as its user pointer.
fn alloc_id(ctx: &Ctx, name: &str, user: usize) -> Result<Id> {
    let cname = CString::new(name).map_err(|_| miette!("mark name {name:?} contains NUL"))?;
    // SAFETY: isl copies the name; the user pointer is an integer isl never dereferences
    // (no free_user callback is set).
    let ptr = unsafe { ffi::isl_id_alloc(ctx.ptr(), cname.as_ptr(), user as *mut _) };
    if ptr == 0 {
        return Err(miette!("isl failed to allocate the id {name:?}"));
    }
    Ok(Id {
        ptr,
        should_free_on_drop: true,
    })
}

/// The typed mark for an isl mark name, or an error listing the known names.
/// Whether `n` holds a loop spread over the threads of a block.
fn has_thread_loop(n: &KNode) -> bool {
    let mut found = false;
    n.walk(&mut |x| {
        if let KNode::For { kind, .. } = x {
            found |= kind.is_thread();
        }
    });
    found
}

fn parse_mark(name: &str) -> Result<Mark> {
    Mark::from_isl_name(name).ok_or_else(|| {
        miette!(
            help = format!("known marks: {}", Mark::known_names().join(", ")),
            "unknown mark {name:?} in the schedule tree"
        )
    })
}

struct Lowerer<'a> {
    prog: &'a Program,
    /// The buffers that are shared memory (their tiles are [`MemSpace::Shared`]).
    shared: Vec<schedule_tree::Buffer>,
    /// isl names of the loop iterators in scope.
    scope: Vec<String>,
    /// What the AST-build callbacks recorded.
    state: &'a CallbackState,
}

impl Lowerer<'_> {
    fn node(&mut self, n: &ASTNode) -> Result<KNode> {
        match ffi::ast_node_kind(n.ptr) {
            AstNodeKind::For => {
                let iter = n
                    .for_get_iterator()
                    .isl("reading a loop iterator")?
                    .get_id()
                    .isl("reading a loop iterator")?
                    .get_name()
                    .isl("reading a loop iterator")?
                    .to_string();
                let init = self.expr(&n.for_get_init().isl("reading a loop's start")?)?;
                self.scope.push(iter.clone());
                let cond = self.expr(&n.for_get_cond().isl("reading a loop's condition")?);
                let inc = self.expr(&n.for_get_inc().isl("reading a loop's increment")?);
                let body = n
                    .for_get_body()
                    .isl("reading a loop's body")
                    .and_then(|b| self.node(&b));
                self.scope.pop();
                let step = match inc? {
                    KExpr::Int(s) if s > 0 => s,
                    other => {
                        return Err(miette!(
                        "isl generated a loop with a non-constant or non-positive step {other:?}"
                    ))
                    }
                };
                Ok(KNode::For {
                    iter,
                    init,
                    cond: cond?,
                    step,
                    body: Box::new(body?),
                    kind: LoopKind::Seq,
                })
            }
            AstNodeKind::If => {
                let cond = self.expr(&n.if_get_cond().isl("reading a guard")?)?;
                let then = self.node(&n.if_get_then_node().isl("reading a guard's body")?)?;
                let els = if n.if_has_else_node().isl("reading a guard")? {
                    Some(Box::new(self.node(
                        &n.if_get_else_node().isl("reading a guard's else")?,
                    )?))
                } else {
                    None
                };
                Ok(KNode::If {
                    cond,
                    then: Box::new(then),
                    els,
                })
            }
            AstNodeKind::Block => {
                let list = n.block_get_children().isl("reading a block")?;
                let k = list.n_ast_node().isl("reading a block")?;
                let mut out = Vec::with_capacity(k as usize);
                for i in 0..k {
                    out.push(self.node(&list.get_at(i).isl("reading a block")?)?);
                }
                Ok(KNode::Block(out))
            }
            AstNodeKind::Mark => self.mark_node(n),
            AstNodeKind::User => self.user_node(n),
            AstNodeKind::Error => Err(miette!("isl returned an invalid AST node")),
        }
    }

    /// A mark node: skipped subtrees vanish, parallel, kernel and thread marks set their loops' kinds, memory marks open local buffers.
    fn mark_node(&mut self, n: &ASTNode) -> Result<KNode> {
        let id = n.mark_get_id().isl("reading a mark")?;
        let name = id.get_name().isl("reading a mark's name")?.to_string();
        let mark = parse_mark(&name)?;
        if mark == Mark::Skipped {
            return Ok(KNode::Block(Vec::new()));
        }
        let mut child = self.node(&n.mark_get_node().isl("reading a mark's child")?)?;
        // SAFETY: `id` is a live isl id; the user pointer is only read.
        let tag = unsafe { ffi::isl_id_get_user(id.ptr) } as usize;
        if mark == Mark::Parallel && tag > 0 {
            mark_first_loop(&mut child, &format!("c{}", tag - 1));
        }
        if mark == Mark::Reduce && tag > 0 {
            let depth = (tag & 0xffff) - 1;
            set_loop_kind(&mut child, &format!("c{depth}"), LoopKind::Thread(0));
            return self.block_reduction(child);
        }
        if matches!(mark, Mark::Kernel | Mark::Thread) && tag > 0 {
            let depth = (tag & 0xffff) - 1;
            let mapped = tag >> 16;
            for m in 0..mapped {
                let dim = (mapped - 1 - m) as u8;
                let kind = if mark == Mark::Kernel {
                    LoopKind::Block(dim)
                } else {
                    LoopKind::Thread(dim)
                };
                set_loop_kind(&mut child, &format!("c{}", depth + m), kind);
            }
            if mark == Mark::Kernel {
                return Ok(KNode::Device {
                    id: 0,
                    body: Box::new(child),
                });
            }
            return Ok(child);
        }
        if let (Mark::Mem(_), true) = (mark, tag > 0) {
            // A tile above thread loops is read and written by several threads:
            // a private copy per thread would hold only what its own thread
            // copied (the copies are spread over the block, or run by thread 0).
            // Such a tile lives in shared memory, where the copies are
            // block-cooperative and barriers order them.
            let spans_threads = has_thread_loop(&child);
            let bufs = self
                .state
                .promos
                .get(tag - 1)
                .map(|v| {
                    v.iter()
                        .filter(|p| !p.view)
                        .map(|p| LocalBuf {
                            space: match mark {
                                Mark::Mem(b) if self.shared.contains(&b) => MemSpace::Shared,
                                _ if spans_threads => MemSpace::Shared,
                                _ => MemSpace::Private,
                            },
                            promo: p.id,
                            tensor: p.tensor,
                            sizes: p.sizes.clone(),
                            block: p.block.clone(),
                            order: p.order.clone(),
                        })
                        .collect()
                })
                .unwrap_or_default();
            return Ok(KNode::Local {
                bufs,
                body: Box::new(child),
            });
        }
        Ok(child)
    }

    /// A reduction spread over the threads of a block (`child`, a [`Mark::Reduce`]'s
    /// lowered band, its first loop a thread loop): each thread accumulates into a private
    /// one-element buffer that starts at the operator's identity, and the block combines
    /// the partial results into the statement's element
    /// (`polyc_block_reduce_<op>_<type>`, which all threads call).
    fn block_reduction(&self, child: KNode) -> Result<KNode> {
        let Some((stmt, args, locals)) = first_stmt(&child) else {
            return Ok(child);
        };
        let st = &self.prog.stmts[stmt];
        let StmtBody::Update(op, _) = &st.body else {
            return Err(miette!(
                "internal error: a reduce mark above a statement that is not a reduction"
            ));
        };
        let (name, identity) = match op {
            AssignOp::Add => ("add", "0"),
            AssignOp::Mul => ("mul", "1"),
            AssignOp::Max => ("max", "-INFINITY"),
            AssignOp::Min => ("min", "INFINITY"),
            AssignOp::Assign => {
                return Err(miette!("internal error: a reduce mark above an assignment"))
            }
        };
        let promo = self
            .state
            .promos
            .iter()
            .flatten()
            .map(|p| p.id + 1)
            .max()
            .unwrap_or(0)
            + 1000
            + stmt;
        let ty = st.dtype.c_type();
        let tile = crate::codegen::cfamily::tile_name(promo);
        let offset = vec![args[0].clone()];
        let local = LocalRef {
            promo,
            tensor: st.lhs,
            offset: offset.clone(),
            block: None,
        };
        let body = add_local(child, stmt, &local);
        let named = |n: String| IntrinsicArg::Named { name: n, value: 0 };
        let init = Intrinsic {
            name: "polyc_reduce_init".into(),
            args: vec![named(tile.clone()), named(format!("({ty}){identity}"))],
        };
        let combine = Intrinsic {
            name: format!(
                "polyc_block_reduce_{name}_{}",
                crate::codegen::cfamily::suffix(st.dtype)
            ),
            args: vec![
                named(tile),
                IntrinsicArg::Elem {
                    tensor: st.lhs,
                    index: offset.clone(),
                    locals,
                },
                named(format!(
                    "polyc_red_{}",
                    crate::codegen::cfamily::suffix(st.dtype)
                )),
            ],
        };
        Ok(KNode::Local {
            bufs: vec![LocalBuf {
                space: MemSpace::Private,
                promo,
                tensor: st.lhs,
                sizes: vec![1],
                block: None,
                order: None,
            }],
            body: Box::new(KNode::Block(vec![
                KNode::Intrinsic(init),
                body,
                KNode::Intrinsic(combine),
            ])),
        })
    }

    /// A statement instance (or a copy), with the local tiles its annotation names.
    fn user_node(&mut self, n: &ASTNode) -> Result<KNode> {
        let call = n.user_get_expr().isl("reading a statement call")?;
        let ann = n.get_annotation().isl("reading a statement's annotation")?;
        let info = if ann.ptr == 0 {
            0
        } else {
            // SAFETY: reads the user pointer of a live id.
            unsafe { ffi::isl_id_get_user(ann.ptr) as usize }
        };
        let mut locals = Vec::new();
        if info > 0 {
            for t in self.state.infos.get(info - 1).into_iter().flatten() {
                let exprs = |v: &[ASTExpr], me: &mut Self| -> Result<Vec<KExpr>> {
                    v.iter().map(|e| me.expr(e)).collect()
                };
                let offset = exprs(&t.offset, self)?;
                let block = match &t.block {
                    Some((index, origin)) => Some(BlockRef {
                        index: exprs(index, self)?,
                        origin: exprs(origin, self)?,
                    }),
                    None => None,
                };
                locals.push(LocalRef {
                    promo: t.promo,
                    tensor: t.tensor,
                    offset,
                    block,
                });
            }
        }
        self.user(&call, locals)
    }

    /// Whether `l` refers to a tile stored in blocks without saying which block: reading
    /// it there would index the blocks as rows.
    fn blocked_without_block(&self, l: &LocalRef) -> bool {
        l.block.is_none()
            && self
                .state
                .promos
                .iter()
                .flatten()
                .any(|p| p.id == l.promo && p.block.is_some())
    }

    fn user(&mut self, call: &ASTExpr, locals: Vec<LocalRef>) -> Result<KNode> {
        let is_call = call.get_type().isl("reading a statement call")? == ASTExprType::Op
            && call.get_op_type().isl("reading a statement call")? == ASTExprOpType::Call;
        if !is_call {
            return Err(miette!("isl produced a user node that is not a call"));
        }
        let n = call.get_op_n_arg().isl("reading a statement call")?;
        let f = call.get_op_arg(0).isl("reading a statement call")?;
        let name = f
            .get_id()
            .isl("reading a statement name")?
            .get_name()
            .isl("reading a statement name")?
            .to_string();
        if let Some((kind, promo, tname)) = parse_copy_stmt(&name) {
            let tensor = self
                .prog
                .tensors
                .iter()
                .position(|t| t.name == tname)
                .ok_or_else(|| {
                    miette!("the copy statement {name} names no tensor of the program")
                })?;
            if !locals.iter().any(|l| l.promo == promo) {
                return Err(miette!(
                    help = "copy statements are made by the promotion pass and must stay below their memory mark",
                    "the copy statement {name} runs outside the tile it copies"
                ));
            }
            // The copy reads (or writes) the innermost enclosing tile of the tensor in the
            // layout that tile is stored in: code generation indexes a tile stored in blocks
            // by the block each element falls in when the copy runs in no block of it.
            let copy_in = match kind {
                CopyKind::In => true,
                CopyKind::Out => false,
                // The tile's local buffer is the tensor: nothing to copy.
                CopyKind::Local => return Ok(KNode::Block(Vec::new())),
            };
            let mut args = Vec::new();
            for i in 1..n {
                args.push(self.expr(&call.get_op_arg(i).isl("reading a copy's argument")?)?);
            }
            if args.len() != self.prog.tensors[tensor].shape.len() {
                return Err(miette!(
                    "the copy statement {name} has the wrong number of coordinates"
                ));
            }
            return Ok(KNode::Copy {
                promo,
                tensor,
                copy_in,
                args,
                locals,
            });
        }
        let stmt = self
            .prog
            .stmts
            .iter()
            .position(|s| s.name == name)
            .ok_or_else(|| {
                miette!(
                    help = "the schedule's domain must name statements as the program does (S_0, S_1, …)",
                    "the schedule mentions a statement {name:?} that the program `{}` does not have",
                    self.prog.name
                )
            })?;
        let mut args = Vec::new();
        for i in 1..n {
            args.push(self.expr(&call.get_op_arg(i).isl("reading a statement argument")?)?);
        }
        let want = self.prog.stmts[stmt].iters.len();
        if args.len() != want {
            return Err(miette!(
                help = "each statement's domain tuple must have one dimension per iterator",
                "statement {name} has {want} iterators but the schedule gives it {} dimensions",
                args.len()
            ));
        }
        // A tile stored in blocks is only read through its blocks (promotion checks that
        // every reader runs below a nested tile); anything else would index it wrongly.
        let s = &self.prog.stmts[stmt];
        for t in std::iter::once(s.lhs).chain(s.reads().into_iter().map(|r| r.0)) {
            let Some(l) = locals.iter().rev().find(|l| l.tensor == t) else {
                continue;
            };
            if self.blocked_without_block(l) {
                return Err(miette!(
                    help = "this is an internal error in polyc's memory promotion; please report it with the program",
                    "statement {name} reads {} outside the blocks of its packed tile",
                    self.prog.tensors[t].name
                ));
            }
        }
        Ok(KNode::Stmt { stmt, args, locals })
    }

    fn expr(&mut self, e: &ASTExpr) -> Result<KExpr> {
        match e.get_type().isl("reading an AST expression")? {
            ASTExprType::Int => {
                let v = e.get_val().isl("reading an integer")?;
                if !v.is_int().isl("reading an integer")? {
                    return Err(miette!("isl produced a non-integer constant in the AST"));
                }
                Ok(KExpr::Int(v.get_num_si().isl("reading an integer")?))
            }
            ASTExprType::Id => {
                let name = e
                    .get_id()
                    .isl("reading an identifier")?
                    .get_name()
                    .isl("reading an identifier")?
                    .to_string();
                if self.scope.contains(&name) || self.prog.param_index(&name).is_some() {
                    Ok(KExpr::Var(name))
                } else {
                    Err(miette!(
                        help = "the schedule's parameters must be the program's sizes",
                        "the generated code refers to {name:?}, which is neither a loop iterator nor a size of `{}`",
                        self.prog.name
                    ))
                }
            }
            ASTExprType::Op => self.op(e),
            ASTExprType::Error => Err(miette!("isl returned an invalid AST expression")),
        }
    }

    fn op(&mut self, e: &ASTExpr) -> Result<KExpr> {
        let ty = e.get_op_type().isl("reading an AST operation")?;
        let n = e.get_op_n_arg().isl("reading an AST operation")?;
        let mut args = Vec::with_capacity(n as usize);
        for i in 0..n {
            args.push(self.expr(&e.get_op_arg(i).isl("reading an AST operand")?)?);
        }
        let want = |k: usize| -> Result<()> {
            if args.len() == k {
                Ok(())
            } else {
                Err(miette!(
                    "isl AST operation {ty:?} has {} operands, expected {k}",
                    args.len()
                ))
            }
        };
        use ASTExprOpType as O;
        match ty {
            O::Max | O::Min if !args.is_empty() => {}
            O::Minus => want(1)?,
            O::Cond | O::Select => want(3)?,
            O::And
            | O::AndThen
            | O::Or
            | O::OrElse
            | O::Add
            | O::Sub
            | O::Mul
            | O::Div
            | O::FdivQ
            | O::PdivQ
            | O::PdivR
            | O::ZdivR
            | O::Eq
            | O::Le
            | O::Lt
            | O::Ge
            | O::Gt => want(2)?,
            _ => {
                return Err(miette!(
                    "isl produced an AST operation polyc does not support: {ty:?}"
                ))
            }
        }
        if matches!(ty, O::Max | O::Min) {
            return Ok(if ty == O::Max {
                KExpr::Max(args)
            } else {
                KExpr::Min(args)
            });
        }
        // The operand counts were checked above, so the defaults are never used.
        let mut it = args.into_iter();
        let mut next = || Box::new(it.next().unwrap_or(KExpr::Int(0)));
        Ok(match ty {
            O::Minus => KExpr::Neg(next()),
            O::And | O::AndThen => KExpr::And(next(), next()),
            O::Or | O::OrElse => KExpr::Or(next(), next()),
            O::Add => KExpr::Add(next(), next()),
            O::Sub => KExpr::Sub(next(), next()),
            O::Mul => KExpr::Mul(next(), next()),
            O::Div | O::PdivQ => KExpr::Div(next(), next()),
            O::FdivQ => KExpr::FloorDiv(next(), next()),
            O::PdivR | O::ZdivR => KExpr::Rem(next(), next()),
            O::Cond | O::Select => KExpr::Select(next(), next(), next()),
            O::Eq => KExpr::Cmp(KCmp::Eq, next(), next()),
            O::Le => KExpr::Cmp(KCmp::Le, next(), next()),
            O::Lt => KExpr::Cmp(KCmp::Lt, next(), next()),
            O::Ge => KExpr::Cmp(KCmp::Ge, next(), next()),
            _ => KExpr::Cmp(KCmp::Gt, next(), next()),
        })
    }
}

/// Sets `parallel` on every loop named `iter` that is the first loop on its path below
/// `node`. A first loop with another name means isl needed no loop for the marked band
/// member; nothing is marked on that path then.
fn mark_first_loop(node: &mut KNode, iter: &str) {
    match node {
        KNode::For {
            iter: name, kind, ..
        } => {
            if name == iter {
                *kind = LoopKind::Parallel;
            }
        }
        KNode::Block(v) => v.iter_mut().for_each(|n| mark_first_loop(n, iter)),
        KNode::If { then, els, .. } => {
            mark_first_loop(then, iter);
            if let Some(e) = els {
                mark_first_loop(e, iter);
            }
        }
        KNode::Local { body, .. } | KNode::Let { body, .. } | KNode::Device { body, .. } => {
            mark_first_loop(body, iter)
        }
        KNode::Stmt { .. } | KNode::Copy { .. } | KNode::Barrier | KNode::Intrinsic(_) => {}
    }
}

/// Gives every loop named `iter` below `node` the kind `kind` (loop names are unique per
/// schedule depth, so these are the loops of one band member).
/// `node` with `local` as the innermost tile of every instance of statement `stmt`.
fn add_local(node: KNode, stmt: usize, local: &LocalRef) -> KNode {
    match node {
        KNode::Stmt { stmt: s, .. } if s == stmt => node.map_locals(|mut v, _| {
            v.push(local.clone());
            v
        }),
        other => other.map_children(&mut |c| add_local(c, stmt, local)),
    }
}

/// The first statement instance in `node`: its statement and arguments.
fn first_stmt(node: &KNode) -> Option<(usize, Vec<KExpr>, Vec<LocalRef>)> {
    let mut found = None;
    node.walk(&mut |n| {
        if let (None, KNode::Stmt { stmt, args, locals }) = (&found, n) {
            found = Some((*stmt, args.clone(), locals.clone()));
        }
    });
    found
}

fn set_loop_kind(node: &mut KNode, iter: &str, kind: LoopKind) {
    match node {
        KNode::For {
            iter: name,
            kind: k,
            body,
            ..
        } => {
            if name == iter {
                *k = kind;
            }
            set_loop_kind(body, iter, kind);
        }
        KNode::Block(v) => v.iter_mut().for_each(|n| set_loop_kind(n, iter, kind)),
        KNode::If { then, els, .. } => {
            set_loop_kind(then, iter, kind);
            if let Some(e) = els {
                set_loop_kind(e, iter, kind);
            }
        }
        KNode::Local { body, .. } | KNode::Let { body, .. } | KNode::Device { body, .. } => {
            set_loop_kind(body, iter, kind)
        }
        KNode::Stmt { .. } | KNode::Copy { .. } | KNode::Barrier | KNode::Intrinsic(_) => {}
    }
}

/// Removes empty loops, guards and blocks, and flattens nested blocks.
fn prune(node: KNode) -> KNode {
    match node {
        KNode::Block(v) => {
            let mut out = Vec::new();
            for n in v {
                match prune(n) {
                    KNode::Block(inner) => out.extend(inner),
                    other => out.push(other),
                }
            }
            if out.len() == 1 {
                out.pop().unwrap_or(KNode::Block(Vec::new()))
            } else {
                KNode::Block(out)
            }
        }
        KNode::For {
            iter,
            init,
            cond,
            step,
            body,
            kind,
        } => {
            let body = prune(*body);
            if body.is_empty() {
                return KNode::Block(Vec::new());
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
        KNode::If { cond, then, els } => {
            let then = prune(*then);
            let els = els.map(|e| prune(*e)).filter(|e| !e.is_empty());
            match (then.is_empty(), els) {
                (true, None) => KNode::Block(Vec::new()),
                (true, Some(e)) => KNode::If {
                    cond: KExpr::Cmp(KCmp::Eq, Box::new(cond), Box::new(KExpr::Int(0))),
                    then: Box::new(e),
                    els: None,
                },
                (false, els) => KNode::If {
                    cond,
                    then: Box::new(then),
                    els: els.map(Box::new),
                },
            }
        }
        KNode::Local { bufs, body } => {
            let body = prune(*body);
            if body.is_empty() {
                return KNode::Block(Vec::new());
            }
            KNode::Local {
                bufs,
                body: Box::new(body),
            }
        }
        KNode::Let { name, value, body } => {
            let body = prune(*body);
            if body.is_empty() {
                return KNode::Block(Vec::new());
            }
            KNode::Let {
                name,
                value,
                body: Box::new(body),
            }
        }
        KNode::Device { id, body } => {
            let body = prune(*body);
            if body.is_empty() {
                return KNode::Block(Vec::new());
            }
            KNode::Device {
                id,
                body: Box::new(body),
            }
        }
        s @ (KNode::Stmt { .. } | KNode::Copy { .. } | KNode::Barrier | KNode::Intrinsic(_)) => s,
    }
}

/// Renames loop iterators everywhere (`f` maps an old name to its new one).
fn rename_iters(node: &KNode, f: &impl Fn(&str) -> Option<String>) -> KNode {
    rename_loops(
        node.clone()
            .map_exprs(&|e: &KExpr| e.substitute(&|n: &str| f(n).map(KExpr::Var))),
        f,
    )
}

/// Renames the iterator of every loop (the expressions are [`rename_iters`]'s).
fn rename_loops(node: KNode, f: &impl Fn(&str) -> Option<String>) -> KNode {
    let mut node = node.map_children(&mut |c| rename_loops(c, f));
    if let KNode::For { iter, .. } = &mut node {
        if let Some(new) = f(iter) {
            *iter = new;
        }
    }
    node
}

/// The names of the statements (`S_i`) that a kernel executes, sorted.
pub fn executed_stmt_names(prog: &Program, kernel: &Kernel) -> BTreeSet<String> {
    kernel
        .body
        .stmts()
        .into_iter()
        .map(|s| prog.stmts[s].name.clone())
        .collect()
}
