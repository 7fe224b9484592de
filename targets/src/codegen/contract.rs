//! Storage contraction (modulo allocation): a temporary whose values along one index are
//! live only a few at a time is stored modulo a small number along that index.
//!
//! A program written with an explicit time dimension (`U(t + 1, i, j) = f(U(t, …))`) keeps
//! every plane of `U` in the comprehension's meaning, but the final schedule only ever
//! needs the last few. [`storage_folds`] finds, for each temporary the code touches in its
//! global array, the first index `d` (not the last one) and the smallest `m` below its
//! extent such that storing element `x` at `x` with `x_d mod m` in place of `x_d` changes
//! no value any statement reads, **under the final schedule**:
//!
//! - the values are exact (isl's dataflow analysis of the tensor against program order:
//!   for each read instance `r`, the write `w` whose value it reads); a tensor with a read
//!   that no write covers is never folded;
//! - two elements `x ≠ x'` share storage when they differ only along `d`, by a multiple of
//!   `m`;
//! - the fold is refused when some write `w'` of such an `x'` is not known to run before
//!   `w` and the read `r` is not known to run before `w'`: `w'` could then overwrite the
//!   value `r` needs (a dead write counts too);
//! - "runs before" is the final schedule tree's order with every coincident band member,
//!   and the first member of a band under a `parallel` mark, taken as unordered (their
//!   iterations may run at once, on cores or in vector lanes), and the children of a `set`
//!   node as unordered too.
//!
//! Tensors with promoted tiles, copies or recomputed instances (extension nodes, skipped
//! subtrees) are left alone: their accesses do not run where their statements stand in
//! the tree.

use std::fmt::Write as _;

use isl_rs::{
    MultiUnionPwAff, Schedule, ScheduleNode, ScheduleNodeType, UnionAccessInfo, UnionMap, UnionSet,
};
use miette::Result;
use polyhedral::ir::{Program, TensorId};
use polyhedral::isl::IslResultExt;
use polyhedral::scop::Scop;
use schedule_tree::mark::Mark;

pub use crate::codegen::kir::StorageFold;

/// The largest modulus tried along one index.
pub const MAX_FOLD: i64 = 8;

/// The folds of the temporaries in `candidates` under `schedule` (see the module
/// documentation), with `extent(t, d)` giving an index's extent where it is a number.
pub fn storage_folds(
    scop: &Scop,
    program: &Program,
    schedule: &Schedule,
    candidates: &[TensorId],
    extent: &dyn Fn(TensorId, usize) -> Option<i64>,
) -> Result<Vec<StorageFold>> {
    let mut out = Vec::new();
    for &t in candidates {
        let rank = program.tensors[t].shape.len();
        if rank < 2 {
            continue;
        }
        let Some(facts) = TensorFacts::of(scop, schedule, t)? else {
            continue;
        };
        'dims: for d in 0..rank - 1 {
            let limit = extent(t, d).map_or(MAX_FOLD, |e| (e - 1).min(MAX_FOLD));
            for m in 1..=limit {
                if facts.fold_is_safe(scop, t, d, m)? {
                    out.push(StorageFold {
                        tensor: t,
                        dim: d,
                        modulus: m,
                    });
                    break 'dims;
                }
            }
        }
    }
    Ok(out)
}

/// What the fold test needs of one tensor: its value flow and the final order of the
/// instances that touch it.
struct TensorFacts {
    /// Write instance → the read instances that read its value.
    flow: UnionMap,
    /// Write instance → the element it writes.
    writes: UnionMap,
    /// `a → b`: instance `a` surely runs before instance `b` in the final code.
    before: UnionMap,
    /// `a → a` for every instance that touches the tensor.
    same: UnionMap,
}

impl TensorFacts {
    /// The facts of tensor `t`, or `None` when it cannot be folded whatever the index: a
    /// read no write covers, no read at all, or instances that do not run where the
    /// tree places them.
    fn of(scop: &Scop, schedule: &Schedule, t: TensorId) -> Result<Option<TensorFacts>> {
        let stmts: Vec<usize> = (0..scop.stmt_names.len())
            .filter(|&s| {
                scop.stmt_writes[s].tensor == t || scop.stmt_reads[s].iter().any(|a| a.tensor == t)
            })
            .collect();
        if stmts.is_empty() {
            return Ok(None);
        }
        let space = scop.reads.get_space().isl("the accesses' space")?;
        let mut reads = UnionMap::empty(space.copy().isl("copying a space")?).isl("no reads")?;
        let mut writes = UnionMap::empty(space).isl("no writes")?;
        let mut domain: Option<UnionSet> = None;
        for &s in &stmts {
            let d = UnionSet::from_set(scop.stmt_domains[s].copy().isl("copying a domain")?)
                .isl("a domain as a union set")?;
            domain = Some(match domain {
                Some(u) => u.union(d).isl("uniting domains")?,
                None => d,
            });
            let add = |u: UnionMap, m: &isl_rs::Map| -> Result<UnionMap> {
                let m = UnionMap::from_map(m.copy().isl("copying an access")?)
                    .isl("an access as a union map")?;
                u.union(m).isl("uniting accesses")
            };
            for a in scop.stmt_reads[s].iter().filter(|a| a.tensor == t) {
                reads = add(reads, &a.map)?;
            }
            if scop.stmt_writes[s].tensor == t {
                writes = add(writes, &scop.stmt_writes[s].map)?;
            }
        }
        let Some(domain) = domain else {
            return Ok(None);
        };
        if reads.is_empty().isl("testing reads")? {
            return Ok(None);
        }
        let order = polyhedral::program_order::reference_schedule_of(scop, &stmts)?;
        let info = UnionAccessInfo::from_sink(reads)
            .isl("setting up the dataflow of a temporary")?
            .set_must_source(writes.copy().isl("copying writes")?)
            .isl("setting must-sources")?
            .set_schedule(order)
            .isl("setting the reference order")?;
        let what = "the dataflow of a temporary";
        let flows = info.compute_flow().isl(what)?;
        let uncovered = flows.get_may_no_source().isl(what)?;
        let uncovered = uncovered
            .intersect_params(scop.context.copy().isl("copying the context")?)
            .isl(what)?;
        if !uncovered.is_empty().isl(what)? {
            return Ok(None);
        }
        let flow = flows.get_may_dependence().isl(what)?;
        let same = domain.copy().isl(what)?.identity().isl(what)?;
        let root = schedule
            .get_root()
            .isl("reading the final schedule's root")?;
        let Some(before) = order_below(root, domain, false)? else {
            return Ok(None);
        };
        Ok(Some(TensorFacts {
            flow,
            writes,
            before,
            same,
        }))
    }

    /// Whether storing tensor `t` modulo `m` along index `d` keeps every value read.
    fn fold_is_safe(&self, scop: &Scop, t: TensorId, d: usize, m: i64) -> Result<bool> {
        let what = "testing a storage fold";
        let alias = alias_map(scop, t, d, m)?;
        // w → w': a write of an element that shares w's element's storage.
        let clash = self
            .writes
            .copy()
            .isl(what)?
            .apply_range(alias)
            .isl(what)?
            .apply_range(self.writes.copy().isl(what)?.reverse().isl(what)?)
            .isl(what)?;
        // ... unless w' surely runs before w.
        let clash = clash
            .subtract(self.before.copy().isl(what)?.reverse().isl(what)?)
            .isl(what)?;
        // [r → w'] for each read r of w's value.
        let pairs = self
            .flow
            .copy()
            .isl(what)?
            .range_product(clash)
            .isl(what)?
            .range()
            .isl(what)?;
        // ... unless r surely runs before w', or is w' (an instance reads its operands
        // before it writes).
        let bad = pairs
            .subtract(self.before.copy().isl(what)?.wrap().isl(what)?)
            .isl(what)?
            .subtract(self.same.copy().isl(what)?.wrap().isl(what)?)
            .isl(what)?
            .intersect_params(scop.context.copy().isl(what)?)
            .isl(what)?;
        bad.is_empty().isl(what)
    }
}

/// `T[x] → T[x']`: distinct elements of tensor `t` that differ only along index `d`, by a
/// multiple of `m`.
fn alias_map(scop: &Scop, t: TensorId, d: usize, m: i64) -> Result<UnionMap> {
    let ext = &scop.tensor_extents[t];
    let name = ext.get_tuple_name().isl("reading a tensor's name")?;
    let rank = ext
        .dim(isl_rs::DimType::Set)
        .isl("reading a tensor's rank")? as usize;
    let xs: Vec<String> = (0..rank).map(|i| format!("x{i}")).collect();
    let ys: Vec<String> = (0..rank).map(|i| format!("y{i}")).collect();
    let mut cons = String::new();
    for i in (0..rank).filter(|&i| i != d) {
        let _ = write!(cons, "y{i} = x{i} and ");
    }
    let _ = write!(
        cons,
        "(y{d} < x{d} or y{d} > x{d}) and exists (k : y{d} = x{d} + {m} * k)"
    );
    let text = format!(
        "{{ {name}[{}] -> {name}[{}] : {cons} }}",
        xs.join(", "),
        ys.join(", ")
    );
    UnionMap::read_from_str(&ext.get_ctx(), &text).isl(&format!("reading `{text}`"))
}

/// `a → b` for instances of `here` (those of interest that reach `node`) where `a`
/// surely runs before `b`; `None` where instances of interest do not run where the tree
/// places them (added by an extension node, or in a skipped subtree). `parallel`: the node
/// is below a `parallel` mark (its band's first member runs its iterations at once).
/// The reaching instances are tracked from the root down (isl cannot give a node's
/// domain below an extension node).
fn order_below(node: ScheduleNode, here: UnionSet, parallel: bool) -> Result<Option<UnionMap>> {
    let what = "ordering the final schedule";
    let empty = |here: &UnionSet| -> Result<UnionMap> {
        UnionMap::empty(here.get_space().isl(what)?).isl(what)
    };
    if here.is_empty().isl(what)? {
        return Ok(Some(empty(&here)?));
    }
    let only_child = |node: &ScheduleNode| node.get_child(0).isl(what);
    match node.get_type().isl(what)? {
        ScheduleNodeType::Leaf => Ok(Some(empty(&here)?)),
        ScheduleNodeType::Band => band_order(node, here, parallel),
        ScheduleNodeType::Filter => {
            let here = here
                .intersect(node.filter_get_filter().isl(what)?)
                .isl(what)?;
            order_below(only_child(&node)?, here, parallel)
        }
        ScheduleNodeType::Sequence | ScheduleNodeType::Set => {
            let ordered = node.get_type().isl(what)? == ScheduleNodeType::Sequence;
            let mut acc = empty(&here)?;
            let mut earlier: Option<UnionSet> = None;
            for i in 0..node.n_children().isl(what)? {
                let child = node.get_child(i).isl(what)?;
                let part = match child.get_type().isl(what)? {
                    ScheduleNodeType::Filter => here
                        .copy()
                        .isl(what)?
                        .intersect(child.filter_get_filter().isl(what)?)
                        .isl(what)?,
                    _ => here.copy().isl(what)?,
                };
                let Some(inner) = order_below(child, here.copy().isl(what)?, false)? else {
                    return Ok(None);
                };
                acc = acc.union(inner).isl(what)?;
                if ordered {
                    if let Some(e) = &earlier {
                        let pairs = UnionMap::from_domain_and_range(
                            e.copy().isl(what)?,
                            part.copy().isl(what)?,
                        )
                        .isl(what)?;
                        acc = acc.union(pairs).isl(what)?;
                    }
                    earlier = Some(match earlier {
                        Some(e) => e.union(part).isl(what)?,
                        None => part,
                    });
                }
            }
            Ok(Some(acc))
        }
        ScheduleNodeType::Mark => {
            let id = node.mark_get_id().isl(what)?;
            let name = id.get_name().isl(what)?;
            match Mark::from_isl_name(name) {
                Some(Mark::Skipped) => Ok(None),
                Some(Mark::Parallel) => order_below(only_child(&node)?, here, true),
                _ => order_below(only_child(&node)?, here, parallel),
            }
        }
        ScheduleNodeType::Extension => {
            let ext = node.extension_get_extension().isl(what)?;
            let added = ext.range().isl(what)?;
            let ours = here.copy().isl(what)?.universe().isl(what)?;
            if !added.intersect(ours).isl(what)?.is_empty().isl(what)? {
                return Ok(None);
            }
            order_below(only_child(&node)?, here, parallel)
        }
        _ => order_below(only_child(&node)?, here, parallel),
    }
}

/// [`order_below`] at a band: instances ordered by a sequential member (the members
/// before it equal), then by the subtree among instances at the same band point.
fn band_order(node: ScheduleNode, here: UnionSet, parallel: bool) -> Result<Option<UnionMap>> {
    let what = "ordering a band of the final schedule";
    let mupa = node.band_get_partial_schedule().isl(what)?;
    let mut same = UnionMap::from_domain_and_range(here.copy().isl(what)?, here.copy().isl(what)?)
        .isl(what)?;
    let mut acc = UnionMap::empty(here.get_space().isl(what)?).isl(what)?;
    for k in 0..node.band_n_member().isl(what)? {
        let member =
            MultiUnionPwAff::from_union_pw_aff(mupa.get_union_pw_aff(k).isl(what)?).isl(what)?;
        let unordered = node.band_member_get_coincident(k).isl(what)? || (k == 0 && parallel);
        if !unordered {
            let lt = same
                .copy()
                .isl(what)?
                .lex_lt_at_multi_union_pw_aff(member.copy().isl(what)?)
                .isl(what)?;
            acc = acc.union(lt).isl(what)?;
        }
        same = same.eq_at_multi_union_pw_aff(member).isl(what)?;
    }
    let Some(inner) = order_below(node.get_child(0).isl(what)?, here, false)? else {
        return Ok(None);
    };
    let inner = inner.intersect(same).isl(what)?;
    Ok(Some(acc.union(inner).isl(what)?))
}

/// Folds the temporaries of `kernel` that the code touches only in their global arrays
/// (see [`storage_folds`]), under `schedule`, the final tree the kernel was lowered from
/// with `lower` (whose point-band permutation is applied first, as lowering does), with
/// `param_values` the bound sizes. Returns the kernel with its folds and one note per fold.
pub fn fold_storage(
    ctx: &polyhedral::isl::Ctx,
    scop: &Scop,
    program: &Program,
    param_values: &[Option<i64>],
    (schedule, lower): (&Schedule, &crate::codegen::lower::LowerOptions),
    mut kernel: crate::Kernel,
) -> Result<(crate::Kernel, Vec<String>)> {
    let global = kernel.body.global_tensors(program);
    let tiled = kernel.body.tiled_tensors();
    let candidates: Vec<TensorId> = program
        .temps()
        .filter(|t| global.contains(t) && !tiled.contains(t))
        .collect();
    if candidates.is_empty() {
        return Ok((kernel, Vec::new()));
    }
    let extent = |t: TensorId, d: usize| bound_value(&program.tensors[t].shape[d], param_values);
    let _s = polyhedral::substeps::span("codegen:fold_storage");
    let permuted;
    let schedule = if lower.sink_vectorizable {
        permuted = crate::passes::interchange::sink_vectorizable_members(
            ctx,
            program,
            schedule,
            &lower.levels,
        )?;
        &permuted
    } else {
        schedule
    };
    let folds = storage_folds(scop, program, schedule, &candidates, &extent)?;
    let notes = folds
        .iter()
        .map(|f| fold_note(program, f, &extent))
        .collect();
    kernel.folds = folds;
    Ok((kernel, notes))
}

/// The note for one fold: `U (T × N × N) is stored modulo 2 along its index 1 …`.
fn fold_note(
    program: &Program,
    f: &StorageFold,
    extent: &dyn Fn(TensorId, usize) -> Option<i64>,
) -> String {
    let ten = &program.tensors[f.tensor];
    let ordinal = ["first", "second", "third", "fourth", "fifth", "sixth"]
        .get(f.dim)
        .map_or_else(|| format!("index {}", f.dim + 1), |o| format!("{o} index"));
    let whole: Option<i64> = (0..ten.shape.len()).map(|d| extent(f.tensor, d)).product();
    let size = match (whole, extent(f.tensor, f.dim)) {
        (Some(n), Some(e)) if e > 0 => {
            let bytes = ten.dtype.size_bytes() as i64;
            format!(
                ": {} instead of {}",
                bytes_text(n / e * f.modulus * bytes),
                bytes_text(n * bytes)
            )
        }
        _ => String::new(),
    };
    format!(
        "{} is stored modulo {} along its {ordinal}: under the final schedule no element is \
         overwritten while another that shares its storage is still to be read{size} \
         (--no-fold keeps its full shape)",
        ten.name, f.modulus
    )
}

/// `3.4 GB`, `13.5 MB`, `840 bytes`.
fn bytes_text(b: i64) -> String {
    match b {
        b if b >= 1 << 30 => format!("{:.1} GB", b as f64 / 1e9),
        b if b >= 1 << 20 => format!("{:.1} MB", b as f64 / 1e6),
        b if b >= 1 << 10 => format!("{:.1} kB", b as f64 / 1e3),
        b => format!("{b} bytes"),
    }
}

/// The value of a size expression where every size it uses is bound.
fn bound_value(e: &polyhedral::ir::Aff, param_values: &[Option<i64>]) -> Option<i64> {
    use polyhedral::ir::Aff;
    Some(match e {
        Aff::Const(c) => *c,
        Aff::Iter(_) => return None,
        Aff::Param(p) => (*param_values.get(*p)?)?,
        Aff::Add(a, b) => bound_value(a, param_values)? + bound_value(b, param_values)?,
        Aff::Sub(a, b) => bound_value(a, param_values)? - bound_value(b, param_values)?,
        Aff::Mul(c, a) => c * bound_value(a, param_values)?,
        Aff::Neg(a) => -bound_value(a, param_values)?,
        Aff::FloorDiv(a, c) => bound_value(a, param_values)?.div_euclid(*c),
        Aff::Mod(a, c) => bound_value(a, param_values)?.rem_euclid(*c),
    })
}
