//! Dependences (RAW, WAR, WAW) from isl's dataflow analysis, and the legality check.
//!
//! All three relations are computed by `isl_union_access_info_compute_flow` against the
//! reference order of the language (statements in textual order, each over its domain in
//! lexicographic order; [`crate::program_order::reference_schedule`]):
//!
//! - **RAW** (flow): sink = reads, must-source = writes. Every write of an element kills
//!   the earlier ones, so this is the exact value-based flow: each read instance depends
//!   on the one write instance whose value it reads.
//! - **WAR** (anti): sink = writes, may-source = reads. May-sources kill nothing, so each
//!   write depends on every earlier read of the element (memory-based).
//! - **WAW** (output): sink = writes, must-source = writes: each write depends on the
//!   previous write of the element (the chain orders all writes transitively).
//!
//! Without array expansion, a schedule is legal iff it orders the source of every such
//! pair strictly before its target ([`check_schedule`]).

use crate::isl::ffi::model::{map_text, union_map_text};
use crate::isl::IslResultExt;
use crate::scop::Scop;
use isl_rs::{DimType, Map, Schedule, Set, Space, UnionAccessInfo, UnionMap, UnionSet};
use std::fmt;

/// `rel` with the pieces of each statement pair's relation coalesced where isl's
/// `coalesce` keeps every piece as simple as before: a map whose coalesced form needs more
/// constraints per piece than its largest piece is kept as it is. A 7-point stencil's
/// seven uniform dependences (each a box with three equalities) coalesce into one
/// octahedron-like polyhedron with a dozen skewed faces; isl's scheduler then spends
/// minutes in its Farkas step (`isl_set_coefficients`) on heat-3d, against seconds on the
/// seven boxes.
fn coalesce_simply(rel: UnionMap, what: &str) -> miette::Result<UnionMap> {
    let list = rel.get_map_list().isl(what)?;
    let mut out = UnionMap::empty(rel.get_space().isl(what)?).isl(what)?;
    for i in 0..list.n_map().isl(what)? {
        let map = list.get_at(i).isl(what)?;
        let merged = map.copy().isl(what)?.coalesce().isl(what)?;
        let keep = if most_constraints(&merged, what)? > most_constraints(&map, what)? {
            map
        } else {
            merged
        };
        out = out.union(UnionMap::from_map(keep).isl(what)?).isl(what)?;
    }
    Ok(out)
}

/// Per statement pair, `all` (a write's dependences on every earlier read of its
/// element), except where the two statements share a sequential loop and `all` reaches
/// from one iteration of the outermost one to a later iteration but the next: there, `next`
/// (the reads since the element's previous write only). Both are sound: with the chain of
/// writes (WAW), a read before the next write is also before every later one. For an
/// in-place stencil `next` is uniform (`t' = t + 1`, where `all` has `t < t' < T`), and isl's
/// scheduler took 1 s on jacobi-2d's dependences against 7.7 s, and 1 s on heat-3d's where
/// it ran past its budget. Elsewhere `next` is kept out: on lu's triangular loops, whose
/// elements are written within one iteration of `i`, it made isl's scheduler run past its
/// budget (0.5 s before).
fn across_loops_to_next_write(
    scop: &Scop,
    all: UnionMap,
    next: &UnionMap,
) -> miette::Result<UnionMap> {
    let what = "choosing WAR dependences";
    let list = all.get_map_list().isl(what)?;
    let mut out = UnionMap::empty(all.get_space().isl(what)?).isl(what)?;
    for i in 0..list.n_map().isl(what)? {
        let map = list.get_at(i).isl(what)?;
        let keep = if reaches_past_next_iteration(scop, &map)? {
            next.extract_map(map.get_space().isl(what)?).isl(what)?
        } else {
            map
        };
        out = out.union(UnionMap::from_map(keep).isl(what)?).isl(what)?;
    }
    Ok(out)
}

/// Whether the two statements of `map` share a sequential loop and some pair of `map` is
/// two or more iterations of the outermost one apart.
fn reaches_past_next_iteration(scop: &Scop, map: &Map) -> miette::Result<bool> {
    let what = "reading WAR dependences";
    let index = |dim| -> miette::Result<Option<usize>> {
        let name = map.get_tuple_name(dim).isl(what)?;
        Ok(scop.stmt_names.iter().position(|n| n == name))
    };
    let (Some(a), Some(b)) = (index(DimType::In)?, index(DimType::Out)?) else {
        return Ok(false);
    };
    let (la, lb) = (&scop.stmt_loops[a], &scop.stmt_loops[b]);
    if la.is_empty() || lb.is_empty() || la[0] != lb[0] {
        return Ok(false);
    }
    let vars = |n: usize, stem: &str| (0..n).map(|k| format!("{stem}{k}")).collect::<Vec<_>>();
    let (xs, ys) = (
        vars(scop.iter_names[a].len(), "x"),
        vars(scop.iter_names[b].len(), "y"),
    );
    let text = format!(
        "{}{{ {}[{}] -> {}[{}] : y0 >= x0 + 2 }}",
        scop.param_prefix(),
        scop.stmt_names[a],
        xs.join(", "),
        scop.stmt_names[b],
        ys.join(", ")
    );
    let far = Map::read_from_str(&map.get_ctx(), &text).isl(&format!("reading `{text}`"))?;
    let hit = map.copy().isl(what)?.intersect(far).isl(what)?;
    Ok(!hit.is_empty().isl(what)?)
}

/// The most constraints (equalities and inequalities) of one piece of `map`.
fn most_constraints(map: &Map, what: &str) -> miette::Result<i32> {
    let pieces = map.get_basic_map_list().isl(what)?;
    let mut most = 0;
    for i in 0..pieces.n_basic_map().isl(what)? {
        most = most.max(pieces.get_at(i).isl(what)?.n_constraint().isl(what)?);
    }
    Ok(most)
}

/// The three kinds of dependence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DepKind {
    /// Read after write (flow, true dependence).
    Raw,
    /// Write after read (anti dependence).
    War,
    /// Write after write (output dependence).
    Waw,
}

impl DepKind {
    /// `RAW`, `WAR` or `WAW`.
    pub fn name(self) -> &'static str {
        match self {
            DepKind::Raw => "RAW",
            DepKind::War => "WAR",
            DepKind::Waw => "WAW",
        }
    }
}

impl fmt::Display for DepKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The dependences of a [`Scop`], as relations between statement instances
/// `S_i[..] -> S_j[..]` (source before target in the reference order).
pub struct Deps {
    /// Read after write: write instance -> the read instance that reads its value.
    pub raw: UnionMap,
    /// Write after read: read instance -> every later write of the same element.
    pub war: UnionMap,
    /// Write after write: write instance -> the next write of the same element.
    pub waw: UnionMap,
    /// The iteration domain the relations live on (a copy of [`Scop::domain`]).
    pub domain: UnionSet,
    /// The context (a copy of [`Scop::context`]).
    pub context: Set,
    /// Statement names, by number.
    pub stmt_names: Vec<String>,
    /// Statement domain spaces, by number.
    pub stmt_spaces: Vec<Space>,
    /// The symbolic sizes (isl parameters), in order.
    pub symbolic: Vec<String>,
}

/// Above this many statements, the dependences are computed one tensor at a time, each
/// against the program order of the statements that access it: isl's dataflow analysis
/// of the whole program grows faster than its size (the four analyses of a chain of 40
/// element-wise statements take 33 ms, of 160 185 ms and of 320 540 ms), while accesses
/// to different tensors never depend on each other.
pub const DATAFLOW_APART_ABOVE: usize = 24;

/// The accesses one dataflow analysis works on, and the order it analyses them in.
struct FlowInput {
    reads: UnionMap,
    writes: UnionMap,
    order: Schedule,
}

/// The whole program's accesses against its reference order.
fn whole_program(scop: &Scop) -> miette::Result<FlowInput> {
    let order = crate::substeps::timed("deps:reference_schedule", || {
        crate::program_order::reference_schedule(scop)
    })?;
    Ok(FlowInput {
        reads: scop.reads.copy().isl("copying accesses")?,
        writes: scop.writes.copy().isl("copying accesses")?,
        order,
    })
}

/// Per tensor (by id, ascending), its reads and writes against the reference order of the
/// statements that access it.
fn tensor_accesses(scop: &Scop) -> miette::Result<Vec<FlowInput>> {
    let space = scop.reads.get_space().isl("the accesses' space")?;
    let mut by_tensor: std::collections::BTreeMap<_, (Vec<usize>, Vec<&Map>, Vec<&Map>)> =
        std::collections::BTreeMap::new();
    for s in 0..scop.stmt_names.len() {
        let write = &scop.stmt_writes[s];
        let entry = by_tensor.entry(write.tensor).or_default();
        entry.0.push(s);
        entry.2.push(&write.map);
        for read in &scop.stmt_reads[s] {
            let entry = by_tensor.entry(read.tensor).or_default();
            entry.0.push(s);
            entry.1.push(&read.map);
        }
    }
    let mut out = Vec::with_capacity(by_tensor.len());
    for (_, (mut stmts, reads, writes)) in by_tensor {
        stmts.dedup();
        let union = |maps: &[&Map]| -> miette::Result<UnionMap> {
            let mut u = UnionMap::empty(space.copy().isl("copying a space")?).isl("no accesses")?;
            for m in maps {
                let m = UnionMap::from_map(m.copy().isl("copying an access")?)
                    .isl("an access as a union map")?;
                u = u.union(m).isl("uniting accesses")?;
            }
            Ok(u)
        };
        let order = crate::substeps::timed("deps:reference_schedule", || {
            crate::program_order::reference_schedule_of(scop, &stmts)
        })?;
        out.push(FlowInput {
            reads: union(&reads)?,
            writes: union(&writes)?,
            order,
        });
    }
    Ok(out)
}

/// isl's dataflow analysis of `input`: RAW, WAR, WAR up to the next write, and WAW.
fn flows(input: &FlowInput) -> miette::Result<[UnionMap; 4]> {
    let (r, w) = (&input.reads, &input.writes);
    Ok([
        flow(input, r, Some(w), None, None, "computing RAW dependences")?,
        flow(input, w, None, Some(r), None, "computing WAR dependences")?,
        flow(
            input,
            w,
            None,
            Some(r),
            Some(w),
            "computing WAR dependences up to the next write",
        )?,
        flow(input, w, Some(w), None, None, "computing WAW dependences")?,
    ])
}

/// One analysis: the may-dependences from `must` and `may` sources to `sink`, with
/// `kill`, against `input`'s order.
fn flow(
    input: &FlowInput,
    sink: &UnionMap,
    must: Option<&UnionMap>,
    may: Option<&UnionMap>,
    kill: Option<&UnionMap>,
    what: &str,
) -> miette::Result<UnionMap> {
    let mut info = UnionAccessInfo::from_sink(sink.copy().isl("copying accesses")?)
        .isl("setting up dataflow analysis")?;
    if let Some(m) = must {
        info = info
            .set_must_source(m.copy().isl("copying accesses")?)
            .isl("setting must-sources")?;
    }
    if let Some(m) = may {
        info = info
            .set_may_source(m.copy().isl("copying accesses")?)
            .isl("setting may-sources")?;
    }
    if let Some(k) = kill {
        info = info
            .set_kill(k.copy().isl("copying accesses")?)
            .isl("setting kills")?;
    }
    info = info
        .set_schedule(input.order.copy().isl("copying the reference schedule")?)
        .isl("setting the reference schedule")?;
    let _s = crate::substeps::span("deps:dataflow");
    let flow = info.compute_flow().isl(what)?;
    flow.get_may_dependence().isl(what)
}

/// `a ∪ b`, relation by relation.
fn unite4(a: [UnionMap; 4], b: [UnionMap; 4]) -> miette::Result<[UnionMap; 4]> {
    let [a0, a1, a2, a3] = a;
    let [b0, b1, b2, b3] = b;
    let what = "uniting dependences";
    Ok([
        a0.union(b0).isl(what)?,
        a1.union(b1).isl(what)?,
        a2.union(b2).isl(what)?,
        a3.union(b3).isl(what)?,
    ])
}

/// A relation of the analysis restricted to the context and simplified.
fn simplified(scop: &Scop, rel: UnionMap, what: &str) -> miette::Result<UnionMap> {
    rel.intersect_params(scop.context.copy().isl("copying the context")?)
        .isl(what)
        .and_then(|m| coalesce_simply(m, what))
}

impl Deps {
    /// Runs isl's dataflow analysis (`isl_union_access_info_compute_flow`) against the
    /// reference order (textual statement order, then lexicographic iteration order).
    pub fn compute(scop: &Scop) -> miette::Result<Deps> {
        Deps::compute_by(scop, scop.stmt_names.len() > DATAFLOW_APART_ABOVE)
    }

    /// [`Deps::compute`], one tensor at a time (`apart`) or the whole program at once
    /// (the two give the same relations; see [`DATAFLOW_APART_ABOVE`]).
    pub fn compute_by(scop: &Scop, apart: bool) -> miette::Result<Deps> {
        let [raw, war_all, war_next, waw] = if apart {
            let mut all: Option<[UnionMap; 4]> = None;
            for tensor in tensor_accesses(scop)? {
                let part = flows(&tensor)?;
                all = Some(match all {
                    None => part,
                    Some(acc) => unite4(acc, part)?,
                });
            }
            match all {
                Some(all) => all,
                None => flows(&whole_program(scop)?)?,
            }
        } else {
            flows(&whole_program(scop)?)?
        };
        let raw = simplified(scop, raw, "computing RAW dependences")?;
        let war_all = simplified(scop, war_all, "computing WAR dependences")?;
        let war_next = simplified(
            scop,
            war_next,
            "computing WAR dependences up to the next write",
        )?;
        let waw = simplified(scop, waw, "computing WAW dependences")?;
        let war = across_loops_to_next_write(scop, war_all, &war_next)?;
        let stmt_spaces = (0..scop.stmt_domains.len())
            .map(|i| scop.stmt_space(i))
            .collect::<miette::Result<Vec<_>>>()?;
        Ok(Deps {
            raw,
            war,
            waw,
            domain: scop.domain.copy().isl("copying the domain")?,
            context: scop.context.copy().isl("copying the context")?,
            stmt_names: scop.stmt_names.clone(),
            stmt_spaces,
            symbolic: scop.symbolic.clone(),
        })
    }

    /// The dependences for the sizes of `context` only (a restriction of [`Deps::context`],
    /// such as [`Scop::assume_sizes`] makes): every relation keeps the pairs of those
    /// sizes, so that a schedule found there is checked there only.
    pub fn assume_context(&mut self, context: &Set) -> miette::Result<()> {
        let restrict = |m: &UnionMap| -> miette::Result<UnionMap> {
            m.copy()
                .isl("copying dependences")?
                .intersect_params(context.copy().isl("copying the context")?)
                .isl("restricting dependences to the context")
        };
        self.raw = restrict(&self.raw)?;
        self.war = restrict(&self.war)?;
        self.waw = restrict(&self.waw)?;
        self.context = context.copy().isl("copying the context")?;
        Ok(())
    }

    /// `raw ∪ war ∪ waw`: everything a schedule must respect.
    pub fn validity(&self) -> miette::Result<UnionMap> {
        self.raw
            .copy()
            .isl("copying dependences")?
            .union(self.war.copy().isl("copying dependences")?)
            .isl("uniting dependences")?
            .union(self.waw.copy().isl("copying dependences")?)
            .isl("uniting dependences")
            .and_then(|m| coalesce_simply(m, "simplifying dependences"))
    }

    /// The relation of one kind.
    pub fn of_kind(&self, kind: DepKind) -> &UnionMap {
        match kind {
            DepKind::Raw => &self.raw,
            DepKind::War => &self.war,
            DepKind::Waw => &self.waw,
        }
    }

    /// The part of `kind` from statement `src` to statement `dst` (possibly empty).
    pub fn between(&self, kind: DepKind, src: usize, dst: usize) -> miette::Result<Map> {
        let space = self.pair_space(src, dst)?;
        self.of_kind(kind)
            .extract_map(space)
            .isl("extracting dependences between two statements")
    }

    /// isl text of the part of `kind` from `src` to `dst`.
    pub fn between_text(&self, kind: DepKind, src: usize, dst: usize) -> miette::Result<String> {
        Ok(map_text(&self.between(kind, src, dst)?))
    }

    /// isl text of a whole relation.
    pub fn text(&self, kind: DepKind) -> String {
        union_map_text(self.of_kind(kind))
    }

    fn pair_space(&self, src: usize, dst: usize) -> miette::Result<Space> {
        self.stmt_spaces[src]
            .copy()
            .isl("copying a space")?
            .map_from_domain_and_range(self.stmt_spaces[dst].copy().isl("copying a space")?)
            .isl("building a dependence space")
    }
}

/// A dependence a schedule violates: its kind, the statements, the violated part of the
/// relation and one example pair of instances.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// RAW, WAR or WAW.
    pub kind: DepKind,
    /// The statement that must run first (`S_0`).
    pub source: String,
    /// The statement that must run after it.
    pub target: String,
    /// isl text of the dependence pairs that the schedule does not order source-first.
    pub relation: String,
    /// One violated pair, e.g. `S_0[0, 0] -> S_1[0, 0]`, with the sizes it needs
    /// (`… for H = 1`) when sizes are symbolic.
    pub example: Option<String>,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            DepKind::Raw => "reads a value written by",
            DepKind::War => "overwrites an element read by",
            DepKind::Waw => "overwrites an element written by",
        };
        write!(
            f,
            "the schedule violates a {} dependence {} -> {}: {} {what} {}, but is not scheduled after it",
            self.kind, self.source, self.target, self.target, self.source
        )?;
        if let Some(ex) = &self.example {
            write!(f, "\n  example: {ex}")?;
        }
        write!(f, "\n  violated pairs: {}", self.relation)
    }
}

impl std::error::Error for Violation {}

impl miette::Diagnostic for Violation {
    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(
            "every dependence source must run strictly before its target; reorder the \
             statements or loops, or use a schedule from `--scheduler isl`",
        ))
    }
}

/// Checks that `schedule` runs the source of every dependence strictly before its target
/// (in the lexicographic order of `isl_schedule_get_map`). `Ok(Err(v))` names the first
/// violated dependence (RAW, then WAR, then WAW; statement pairs in order). A schedule
/// that does not schedule every statement instance is an error.
pub fn check_schedule(deps: &Deps, schedule: &Schedule) -> miette::Result<Result<(), Violation>> {
    let (smap, range, nonpositive) = scheduled(deps, schedule)?;
    for kind in [DepKind::Raw, DepKind::War, DepKind::Waw] {
        if !backwards(deps, kind, &smap, &nonpositive)? {
            continue;
        }
        let ge = range
            .copy()
            .isl("copying a set")?
            .lex_ge_union_set(range.copy().isl("copying a set")?)
            .isl("building the lexicographic order")?;
        if let Some(v) = first_violation(deps, kind, &smap, &ge)? {
            return Ok(Err(v));
        }
    }
    Ok(Ok(()))
}

/// Whether `schedule` runs the source of every dependence strictly before its target: the
/// test of [`check_schedule`] without finding the violated pair, for the passes that only
/// choose among candidate schedules. It never accepts a schedule that [`check_schedule`]
/// rejects. A schedule that does not schedule every statement instance is an error.
pub fn respects(deps: &Deps, schedule: &Schedule) -> miette::Result<bool> {
    let (smap, _, nonpositive) = scheduled(deps, schedule)?;
    for kind in [DepKind::Raw, DepKind::War, DepKind::Waw] {
        if backwards(deps, kind, &smap, &nonpositive)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The schedule map of `schedule` (see [`scheduled_map`]), its range, and the vectors
/// `<=lex 0` in each space of that range.
fn scheduled(deps: &Deps, schedule: &Schedule) -> miette::Result<(UnionMap, UnionSet, UnionSet)> {
    let smap = scheduled_map(deps, schedule)?;
    let range = smap
        .copy()
        .isl("copying a map")?
        .range()
        .isl("schedule range")?;
    let nonpositive = nonpositive_vectors(&range)?;
    Ok((smap, range, nonpositive))
}

/// The schedule map of `schedule` restricted to its domain; an error when it leaves an
/// instance of the model unscheduled.
fn scheduled_map(deps: &Deps, schedule: &Schedule) -> miette::Result<UnionMap> {
    // isl_schedule_get_map does not restrict the map to the schedule's domain.
    let smap = schedule
        .get_map()
        .isl("getting the schedule map")?
        .intersect_domain(schedule.get_domain().isl("getting the schedule domain")?)
        .isl("restricting the schedule map")?;
    let covered = smap
        .copy()
        .isl("copying a map")?
        .domain()
        .isl("schedule domain")?;
    let missing = deps
        .domain
        .copy()
        .isl("copying the domain")?
        .subtract(covered)
        .isl("comparing domains")?
        .intersect_params(deps.context.copy().isl("copying the context")?)
        .isl("comparing domains")?;
    if !missing.is_empty().isl("comparing domains")? {
        let mut names = Vec::new();
        for (sp, name) in deps.stmt_spaces.iter().zip(&deps.stmt_names) {
            let part = missing
                .extract_set(sp.copy().isl("copying a space")?)
                .isl("comparing domains")?;
            if !part.is_empty().isl("comparing domains")? {
                names.push(name.as_str());
            }
        }
        return Err(miette::miette!(
            help = "a schedule must run every instance of every statement; check the filters of the tree",
            "the schedule leaves instances of {} unscheduled",
            names.join(", ")
        ));
    }
    Ok(smap)
}

/// Whether some dependence of `kind` has a distance in `nonpositive` (`<=lex 0`) under
/// the schedule map `smap`. A dependence a -> b is violated where S(b) - S(a) <=lex 0 (in
/// one schedule space; points in different spaces are never compared). The differences
/// of the scheduled dependences are few and simple (constant vectors, mostly); composing
/// the schedule with the order and its inverse instead relates every statement to every
/// other (25 600 compositions for 160 statements: 52 s).
fn backwards(
    deps: &Deps,
    kind: DepKind,
    smap: &UnionMap,
    nonpositive: &UnionSet,
) -> miette::Result<bool> {
    let of_kind = deps
        .of_kind(kind)
        .copy()
        .isl("copying dependences")?
        .intersect_params(deps.context.copy().isl("copying the context")?)
        .isl("finding violated dependences")?;
    let backwards = of_kind
        .apply_domain(smap.copy().isl("copying a map")?)
        .isl("scheduling dependence sources")?
        .apply_range(smap.copy().isl("copying a map")?)
        .isl("scheduling dependence targets")?
        .deltas()
        .isl("dependence distances in the schedule")?
        .coalesce()
        .isl("simplifying dependence distances")?
        .intersect(nonpositive.copy().isl("copying a set")?)
        .isl("finding violated dependences")?;
    Ok(!backwards.is_empty().isl("finding violated dependences")?)
}

/// `{ x : x <=lex 0 }` in each space of `range`.
fn nonpositive_vectors(range: &UnionSet) -> miette::Result<UnionSet> {
    let list = range.get_set_list().isl("listing schedule spaces")?;
    let mut all =
        UnionSet::empty(range.get_space().isl("a schedule space")?).isl("an empty set")?;
    for k in 0..list.size().isl("listing schedule spaces")? {
        let space = list
            .get_at(k)
            .isl("listing schedule spaces")?
            .get_space()
            .isl("a schedule space")?;
        // lex_ge relates a to every b <=lex a: its differences b - a are the vectors <=lex 0.
        let part = Map::lex_ge(space)
            .isl("building the lexicographic order")?
            .deltas()
            .isl("vectors <=lex 0")?;
        all = all
            .union(UnionSet::from_set(part).isl("vectors <=lex 0")?)
            .isl("vectors <=lex 0")?;
    }
    Ok(all)
}

/// The first pair of statements (sources, then targets, in order) whose dependences of
/// `kind` the schedule `smap` does not order source-first (`ge`: the lexicographic order
/// `>=` on its range), as a [`Violation`].
fn first_violation(
    deps: &Deps,
    kind: DepKind,
    smap: &UnionMap,
    ge: &UnionMap,
) -> miette::Result<Option<Violation>> {
    let of_kind = deps.of_kind(kind);
    let n = deps.stmt_names.len();
    for src in 0..n {
        for dst in 0..n {
            let m = of_kind
                .extract_map(deps.pair_space(src, dst)?)
                .isl("extracting dependences")?;
            if m.is_empty().isl("finding violated dependences")? {
                continue;
            }
            let m = UnionMap::from_map(m).isl("a dependence as a union map")?;
            let at = |set: UnionSet| {
                smap.copy()
                    .isl("copying a map")?
                    .intersect_domain(set)
                    .isl("restricting the schedule map")
            };
            // a -> b such that S(a) >=lex S(b), for the two statements only.
            let not_before = at(m.copy().isl("copying a map")?.domain().isl("sources")?)?
                .apply_range(ge.copy().isl("copying a map")?)
                .isl("composing the schedule")?
                .apply_range(
                    at(m.copy().isl("copying a map")?.range().isl("targets")?)?
                        .reverse()
                        .isl("reversing the schedule")?,
                )
                .isl("composing the schedule")?;
            let bad = m
                .intersect(not_before)
                .isl("finding violated dependences")?
                .intersect_params(deps.context.copy().isl("copying the context")?)
                .isl("finding violated dependences")?
                .extract_map(deps.pair_space(src, dst)?)
                .isl("extracting violated dependences")?
                .coalesce()
                .isl("simplifying violated dependences")?;
            if bad.is_empty().isl("finding violated dependences")? {
                continue;
            }
            let example = example_pair(&bad, &deps.stmt_names[src], &deps.stmt_names[dst]);
            return Ok(Some(Violation {
                kind,
                source: deps.stmt_names[src].clone(),
                target: deps.stmt_names[dst].clone(),
                relation: map_text(&bad),
                example,
            }));
        }
    }
    Ok(None)
}

/// `S_0[0, 0] -> S_1[0, 0]`: the lexicographically first pair of a dependence relation
/// `m` from statement `src` to `dst` (with ` for H = 1, …` when sizes are symbolic), for
/// error messages. `None` when `m` is empty or isl cannot pick a point.
pub fn example_pair(m: &Map, src: &str, dst: &str) -> Option<String> {
    let n_in = m.dim(DimType::In).ok()? as usize;
    let n_out = m.dim(DimType::Out).ok()? as usize;
    // The lexicographically smallest pair (for the sizes isl picks) reads best.
    let pt = m
        .copy()
        .ok()?
        .wrap()
        .ok()?
        .lexmin()
        .ok()?
        .sample_point()
        .ok()?;
    if pt.is_void().ok()? {
        return None;
    }
    let c = |ty: DimType, k: usize| -> Option<i64> {
        pt.get_coordinate_val(ty, k as i32).ok()?.get_num_si().ok()
    };
    let coords = |from: usize, len: usize| -> Option<String> {
        let v = (from..from + len)
            .map(|k| c(DimType::Set, k).map(|x| x.to_string()))
            .collect::<Option<Vec<_>>>()?;
        Some(v.join(", "))
    };
    let mut s = format!(
        "{src}[{}] -> {dst}[{}]",
        coords(0, n_in)?,
        coords(n_in, n_out)?
    );
    let n_par = m.dim(DimType::Param).ok()? as usize;
    if n_par > 0 {
        let ps = (0..n_par)
            .map(|k| {
                let name = m.get_dim_name(DimType::Param, k as u32).ok()?;
                c(DimType::Param, k).map(|v| format!("{name} = {v}"))
            })
            .collect::<Option<Vec<_>>>()?;
        s.push_str(&format!(" for {}", ps.join(", ")));
    }
    Some(s)
}
