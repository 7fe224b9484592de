//! Loops one iteration at a time: a schedule for programs with sequential `for` loops on
//! which isl's scheduler, given the whole program, runs out of time.
//!
//! A `for` loop that updates tensors in place relates every statement of its body at one
//! iteration to the others at the next, and isl's problem grows with those dependences:
//! PolyBench's adi (a time loop around two sweeps of seven statements each) never
//! finishes, at any size, while its body alone schedules in milliseconds. Here each loop
//! keeps its index as an outer band member that runs in order (parallel where no
//! dependence crosses its iterations), with its items below it in program order: loops
//! the same way, and each group of consecutive statements between loops scheduled by isl
//! with the dependences between instances of one iteration only (fused, interchanged and
//! tiled as isl likes; nothing moves across iterations, so no skewed time tiles). A group
//! that isl cannot schedule in time keeps program order. Band members that only repeat
//! the index of an enclosing loop are dropped at the end.

use crate::deps::Deps;
use crate::ir::OrderItem;
use crate::isl::{Ctx, IslResultExt};
use crate::program_order::{live_statements, loop_indices, program_order_of, stmts_filter};
use crate::sched_compute::{compute_on, Computed, Limits};
use crate::scop::Scop;
use isl_rs::{Schedule, ScheduleNode, ScheduleNodeType, Set, UnionMap};

/// Whether some statement is inside a sequential loop (else the schedule here is isl's on
/// the whole program).
pub fn has_loops(scop: &Scop) -> bool {
    scop.stmt_loops.iter().any(|l| !l.is_empty())
}

/// Above this many pieces of dependences (basic relations), a program with sequential
/// loops is scheduled with its loops apart from the start, without isl's run on the whole
/// program: on PolyBench at LARGE sizes, the three kernels above it (adi: 140 pieces,
/// deriche: 125, ludcmp: 71) are the three whose whole-program run never finishes (adi,
/// deriche) or whose schedule does not hold at the real sizes (ludcmp), and each of the
/// others has at most 36.
pub const LOOPS_APART_ABOVE: usize = 64;

/// Whether the loops are scheduled apart from the start, and why when the user did not
/// ask (`Some(None)`: `loops_apart=1`; `Some(Some(why))`: more than
/// [`LOOPS_APART_ABOVE`] pieces of dependences; `None`: isl's scheduler on the whole
/// program first).
pub(crate) fn direct(
    scop: &Scop,
    deps: &Deps,
    loops_apart: Option<bool>,
) -> miette::Result<Option<Option<String>>> {
    if loops_apart == Some(false) || !has_loops(scop) {
        return Ok(None);
    }
    if loops_apart == Some(true) {
        return Ok(Some(None));
    }
    let list = deps.validity()?.get_map_list().isl("listing dependences")?;
    let mut pieces = 0;
    for k in 0..list.size().isl("counting dependences")? {
        let map = list.get_at(k).isl("reading a dependence")?;
        pieces += map.n_basic_map().isl("counting dependence pieces")? as usize;
    }
    Ok((pieces > LOOPS_APART_ABOVE).then(|| {
        Some(format!(
            "the dependences of this program with `for` loops have {pieces} pieces (more \
             than {LOOPS_APART_ABOVE}): polyc schedules each loop one iteration at a time \
             (its index outermost, isl's scheduler on the statements between loops, within \
             one iteration; no schedule across iterations); `--isl-option loops_apart=0` \
             runs isl's scheduler on the whole program first"
        ))
    }))
}

/// What the parts of one schedule share.
struct Env<'a> {
    ctx: &'a Ctx,
    scop: &'a Scop,
    validity: &'a UnionMap,
    context: &'a Set,
    limits: Limits,
    /// How many parts kept program order (isl found no schedule for them).
    in_order: std::cell::Cell<usize>,
}

/// The loops-apart schedule of the whole program in `context` (the real one, or the
/// large sizes' for symbolic programs), and how many parts kept program order.
pub(crate) fn loops_apart(
    ctx: &Ctx,
    scop: &Scop,
    deps: &Deps,
    context: &Set,
    limits: Limits,
) -> miette::Result<(Schedule, usize)> {
    let validity = deps.validity()?;
    let env = Env {
        ctx,
        scop,
        validity: &validity,
        context,
        limits,
        in_order: std::cell::Cell::new(0),
    };
    let all: Vec<usize> = (0..scop.stmt_domains.len()).collect();
    let live = live_statements(scop, &all)?;
    let items = scop.order_items(&live);
    let schedule = match items_schedule(&env, &items, 0)? {
        Some(s) => drop_degenerate(s.get_root().isl("reading the schedule root")?)?
            .get_schedule()
            .isl("extracting a schedule")?,
        // No statement runs: the domain alone.
        None => Schedule::from_domain(scop.domain.copy().isl("copying the domain")?)
            .isl("creating a schedule")?,
    };
    Ok((schedule, env.in_order.get()))
}

/// The items of one body (or the program), at loop depth `depth` (their statements' first
/// `depth` iterators are the indices of the loops around them), in sequence: each loop
/// alone ([`loop_schedule`]), consecutive statements between loops together
/// ([`group_schedule`]). `None` for no items.
fn items_schedule(
    env: &Env,
    items: &[OrderItem],
    depth: usize,
) -> miette::Result<Option<Schedule>> {
    let mut out: Option<Schedule> = None;
    let mut k = 0;
    while k < items.len() {
        let part = if let OrderItem::Loop(_, body) = &items[k] {
            k += 1;
            loop_schedule(env, &items[k - 1].stmts(), body, depth)?
        } else {
            let end = (k..items.len())
                .find(|&e| matches!(items[e], OrderItem::Loop(..)))
                .unwrap_or(items.len());
            let which: Vec<usize> = items[k..end].iter().flat_map(OrderItem::stmts).collect();
            k = end;
            group_schedule(env, &which, depth)?
        };
        out = Some(match out {
            None => part,
            Some(before) => before
                .sequence(part)
                .isl("putting the parts of a body in sequence")?,
        });
    }
    Ok(out)
}

/// Statements `which`, consecutive and outside any loop of their body, for one iteration
/// of the `depth` loops around them: isl's schedule, or program order where isl finds none
/// in time. Leading statements without iterators of their own (a time step's constants)
/// run first, on their own: isl fuses them into the other statements' bands at a fixed
/// point, where the band then carries their dependences and loses its parallel loops.
fn group_schedule(env: &Env, which: &[usize], depth: usize) -> miette::Result<Schedule> {
    let scop = env.scop;
    let scalars = which
        .iter()
        .take_while(|&&i| scop.iter_names[i].len() == depth)
        .count();
    if scalars > 0 && scalars < which.len() {
        let (head, rest) = which.split_at(scalars);
        let head_validity = restricted(env, head, depth)?;
        return program_order_of(scop, head, &head_validity)?
            .sequence(group_schedule(env, rest, depth)?)
            .isl("putting a group's constants first");
    }
    let validity = restricted(env, which, depth)?;
    if let Some(s) = isl_part(env, which, &validity)? {
        return Ok(s);
    }
    env.in_order.set(env.in_order.get() + 1);
    program_order_of(scop, which, &validity)
}

/// A loop over statements `which` (its body's items `body`) at depth `depth`: its index
/// as a one-member band, coincident where no dependence crosses its iterations, and below
/// it the body's items, for one iteration.
fn loop_schedule(
    env: &Env,
    which: &[usize],
    body: &[OrderItem],
    depth: usize,
) -> miette::Result<Schedule> {
    let inner = restricted(env, which, depth + 1)?;
    let below = match items_schedule(env, body, depth + 1)? {
        Some(s) => s,
        None => program_order_of(env.scop, which, &inner)?,
    };
    let index = loop_indices(env.scop, which, depth, depth + 1)?;
    let schedule = below
        .insert_partial_schedule(index)
        .isl("inserting a loop's band")?;
    let carried = !restricted(env, which, depth)?
        .subtract(inner)
        .isl("comparing dependences")?
        .is_empty()
        .isl("testing dependences")?;
    schedule
        .get_root()
        .isl("reading the schedule root")?
        .child(0)
        .isl("descending to the loop's band")?
        .band_member_set_coincident(0, i32::from(!carried))
        .isl("setting a coincident flag")?
        .get_schedule()
        .isl("extracting a schedule")
}

/// isl's scheduler on statements `which` under `validity`; `None` where it finds no
/// schedule in time (or within its operations).
fn isl_part(env: &Env, which: &[usize], validity: &UnionMap) -> miette::Result<Option<Schedule>> {
    let domain = stmts_filter(env.scop, which)?;
    let context = env.context.copy().isl("copying the context")?;
    Ok(
        match compute_on(env.ctx, domain, validity, context, env.limits)? {
            Computed::Schedule(s) => Some(s),
            Computed::OutOfTime | Computed::OutOfBudget | Computed::NoSchedule(_) => None,
        },
    )
}

/// The dependences between statements `which` whose instances agree on the indices of
/// the `fixed` outermost loops around them.
fn restricted(env: &Env, which: &[usize], fixed: usize) -> miette::Result<UnionMap> {
    let filter = stmts_filter(env.scop, which)?;
    let within = env
        .validity
        .copy()
        .isl("copying dependences")?
        .intersect_domain(filter.copy().isl("copying a filter")?)
        .isl("restricting dependences")?
        .intersect_range(filter)
        .isl("restricting dependences")?;
    if fixed == 0 {
        return Ok(within);
    }
    within
        .eq_at_multi_union_pw_aff(loop_indices(env.scop, which, 0, fixed)?)
        .isl("keeping the dependences within one iteration")
}

/// Removes, below `node`, the band members that take one value for each value of the
/// bands above (the loop indices that isl's run on a body scheduled again: one iteration
/// each once the loop's band is outside). Returns the node at `node`'s position.
fn drop_degenerate(node: ScheduleNode) -> miette::Result<ScheduleNode> {
    let mut node = node;
    if node.get_type().isl("reading a node type")? == ScheduleNodeType::Band {
        let mut pos = 0;
        while pos < node.band_n_member().isl("reading a band")? {
            if is_degenerate(&node, pos)? {
                node = remove_member(node, pos)?;
                if node.get_type().isl("reading a node type")? != ScheduleNodeType::Band {
                    return drop_degenerate(node);
                }
            } else {
                pos += 1;
            }
        }
    }
    for i in 0..node.n_children().isl("reading a node")? {
        node = drop_degenerate(node.child(i).isl("descending a schedule")?)?
            .parent()
            .isl("ascending a schedule")?;
    }
    Ok(node)
}

/// Whether band member `pos` of `node` is a function of the schedule above the band.
fn is_degenerate(node: &ScheduleNode, pos: i32) -> miette::Result<bool> {
    let prefix = node
        .get_prefix_schedule_union_map()
        .isl("reading a prefix schedule")?;
    let part = node.band_get_partial_schedule().isl("reading a band")?;
    let member = part.get_at(pos).isl("reading a band member")?;
    let member = UnionMap::from_union_pw_aff(member)
        .isl("converting a band member")?
        .intersect_domain(node.get_domain().isl("reading a node's domain")?)
        .isl("restricting a band member")?;
    prefix
        .reverse()
        .isl("inverting a prefix schedule")?
        .apply_range(member)
        .isl("relating prefix and member")?
        .is_single_valued()
        .isl("testing a band member")
}

/// Band `node` without member `pos`: the node at its position (the band's other members,
/// in at most two bands, or its child when `pos` was its only member).
fn remove_member(node: ScheduleNode, pos: i32) -> miette::Result<ScheduleNode> {
    if node.band_n_member().isl("reading a band")? == 1 {
        return node.delete().isl("deleting a band");
    }
    let split = |n: ScheduleNode, at: i32| n.band_split(at).isl("splitting a band");
    let mut node = node;
    if pos > 0 {
        node = split(node, pos)?.child(0).isl("descending a band")?;
    }
    if node.band_n_member().isl("reading a band")? > 1 {
        node = split(node, 1)?;
    }
    node = node.delete().isl("deleting a band member")?;
    if pos > 0 {
        node = node.parent().isl("ascending a band")?;
    }
    Ok(node)
}
