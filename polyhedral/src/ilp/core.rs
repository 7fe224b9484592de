//! The level-by-level search for schedule hyperplanes (Pluto's algorithm).

use super::coef::CoefSet;
use super::linalg::{null_space, rank};
use super::lp::{Lin, Model};
use super::scc::{group_by_dim, sccs_in_order};
use super::{Fuse, IlpOptions, Pin, MAX_COEFFICIENT, MAX_FUSED_DISTANCE, MAX_SHIFT};
use crate::deps::{DepKind, Deps};
use crate::isl::ffi::model::map_text;
use crate::isl::IslResultExt;
use crate::scop::Scop;
use isl_rs::{Map, Space, UnionMap};

/// One affine row `coeffs·x + shift` of a statement's schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// One coefficient per iterator.
    pub coeffs: Vec<i64>,
    /// The constant.
    pub shift: i64,
}

/// A band member: one row per statement of the band, and the coincident flag.
#[derive(Clone, Debug)]
pub struct Member {
    /// `(statement, row)` for every statement under the band.
    pub rows: Vec<(usize, Row)>,
    /// Every dependence live at the start of the band (not satisfied by an outer band)
    /// has a zero distance in this member, so its loop is parallel even after tiling.
    pub coincident: bool,
}

/// The scheduler's own tree, turned into an isl schedule by [`super::build`].
#[derive(Clone, Debug)]
pub enum Node {
    /// Nothing more to order.
    Leaf,
    /// A permutable band.
    Band {
        /// The members, outermost first.
        members: Vec<Member>,
        /// What follows.
        child: Box<Node>,
    },
    /// Distributed groups, in order: the statements of each filter and its subtree.
    Sequence(Vec<(Vec<usize>, Node)>),
}

impl Node {
    /// The most members of one band in this tree (every band is permutable).
    pub fn permutable_depth(&self) -> usize {
        match self {
            Node::Leaf => 0,
            Node::Band { members, child } => members.len().max(child.permutable_depth()),
            Node::Sequence(children) => children
                .iter()
                .map(|(_, c)| c.permutable_depth())
                .max()
                .unwrap_or(0),
        }
    }
}

/// A dependence between two statements of a group, not yet satisfied.
struct Dep {
    src: usize,
    dst: usize,
    map: Map,
}

impl Dep {
    fn copy(&self) -> miette::Result<Dep> {
        Ok(Dep {
            src: self.src,
            dst: self.dst,
            map: self.map.copy().isl("copying a dependence")?,
        })
    }
}

/// A dependence's coefficient set.
struct DepCoef {
    src: usize,
    dst: usize,
    coef: CoefSet,
}

/// How a level's ILP asks for rows independent of the earlier ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Indep {
    /// Pluto's rule on the orthogonal complement.
    Pluto,
    /// Pluto's rule with every complement vector reversed.
    Reversed,
    /// Complement vector `j` times the sign has a product >= 1 with the row.
    Single(usize, i64),
}

/// The variables of one level's ILP.
struct Vars {
    /// Statement -> iterator coefficient variables.
    c: Vec<Option<Vec<usize>>>,
    /// Statement -> shift variable.
    c0: Vec<Option<usize>>,
    u: Vec<usize>,
    w: usize,
}

/// The search state.
pub struct Search<'a> {
    scop: &'a Scop,
    deps: &'a Deps,
    opts: &'a IlpOptions,
    params: Space,
    n_params: usize,
    dims: Vec<usize>,
    /// Independent linear parts found so far, per statement.
    rows: Vec<Vec<Vec<i64>>>,
    pins: Vec<Option<&'a Pin>>,
}

const BIG: i64 = 1 << 24;

impl<'a> Search<'a> {
    /// A search over `live` statements.
    pub fn new(scop: &'a Scop, deps: &'a Deps, opts: &'a IlpOptions) -> miette::Result<Self> {
        let params = scop
            .context
            .get_space()
            .isl("getting the parameter space")?;
        let n = scop.stmt_names.len();
        let mut pins = vec![None; n];
        for p in &opts.pins {
            if p.stmt < n {
                pins[p.stmt] = Some(p);
            }
        }
        Ok(Search {
            scop,
            deps,
            opts,
            params,
            n_params: scop.symbolic.len(),
            dims: scop.iter_names.iter().map(Vec::len).collect(),
            rows: vec![Vec::new(); n],
            pins,
        })
    }

    /// Schedules the statements `stmts` (the live ones of the Scop) from scratch.
    ///
    /// When no legal hyperplane is found for the dependences as the dependence analysis
    /// coalesced them, the search starts again on the dependences split by the loop that
    /// carries them in program order, uncoalesced ([`crate::sched::split_by_program_order`]):
    /// with loops of extent 2, a coalesced reduction's polyhedron can have rational points
    /// at distance zero, which no hyperplane carries (Farkas sees only rational points).
    pub fn run(&mut self, stmts: Vec<usize>) -> miette::Result<Node> {
        let validity = self.deps.validity()?;
        let live = self.live_deps(&stmts, &validity, true)?;
        let err = match self.group(stmts.clone(), live, true) {
            Ok(node) => return Ok(node),
            Err(e) => e,
        };
        let Some(split) = crate::sched::split_by_program_order(self.scop, &validity)? else {
            return Err(err);
        };
        self.rows = vec![Vec::new(); self.rows.len()];
        let live = self.live_deps(&stmts, &split, false)?;
        self.group(stmts, live, true).map_err(|_| err)
    }

    /// The non-empty dependences of `validity` between statements of `stmts`, one per
    /// pair, each coalesced when `coalesce`.
    fn live_deps(
        &self,
        stmts: &[usize],
        validity: &UnionMap,
        coalesce: bool,
    ) -> miette::Result<Vec<Dep>> {
        let mut live = Vec::new();
        for &s in stmts {
            for &t in stmts {
                let space = self.deps.stmt_spaces[s]
                    .copy()
                    .isl("copying a space")?
                    .map_from_domain_and_range(
                        self.deps.stmt_spaces[t].copy().isl("copying a space")?,
                    )
                    .isl("building a dependence space")?;
                let mut map = validity.extract_map(space).isl("extracting a dependence")?;
                if coalesce {
                    map = map.coalesce().isl("simplifying a dependence")?;
                }
                if !map.is_empty().isl("testing a dependence")? {
                    live.push(Dep {
                        src: s,
                        dst: t,
                        map,
                    });
                }
            }
        }
        Ok(live)
    }

    fn needs_row(&self, s: usize) -> bool {
        self.rows[s].len() < self.dims[s]
    }

    fn group(&mut self, stmts: Vec<usize>, live: Vec<Dep>, top: bool) -> miette::Result<Node> {
        if top && self.opts.fuse != Fuse::Max && stmts.len() > 1 {
            let comps = self.components(&stmts, &live);
            let groups = match self.opts.fuse {
                Fuse::None => comps,
                _ => group_by_dim(&comps, |c| self.dim_of(c)),
            };
            if groups.len() > 1 {
                return self.sequence(groups, live);
            }
        }
        if !stmts.iter().any(|&s| self.needs_row(s)) {
            if live.is_empty() {
                return Ok(Node::Leaf);
            }
            return self.cut(stmts, live);
        }
        // One band: as many members as the tiling condition on the band's dependences
        // allows.
        let band_coefs = self.coef_sets(&live)?;
        let rows_before = self.rows.clone();
        let all_live = live
            .iter()
            .map(Dep::copy)
            .collect::<miette::Result<Vec<_>>>()?;
        let mut live = live;
        let mut members = Vec::new();
        while stmts.iter().any(|&s| self.needs_row(s)) {
            let live_coefs = self.coef_sets(&live)?;
            let Some(rows) = self.hyperplane(&stmts, &band_coefs, &live_coefs)? else {
                break;
            };
            let mut next = Vec::with_capacity(live.len());
            // Coincident as isl means it: a zero distance for every dependence live at the
            // start of the band, not only for those the outer members leave unsatisfied.
            // After tiling, the tile loop of this member is outside the point loops of the
            // outer members, so a dependence they carry may cross its tiles
            // (Jacobi's `(t, t + i)`: `t + i` carries nothing under `t`, yet its tile
            // loop is not parallel).
            let mut coincident = true;
            for d in &all_live {
                let zero = self.same_time(d, &rows)?;
                if !d.map.is_subset(&zero).isl("comparing dependences")? {
                    coincident = false;
                    break;
                }
            }
            for d in &live {
                let zero = self.same_time(d, &rows)?;
                let m = d
                    .map
                    .copy()
                    .isl("copying a dependence")?
                    .intersect(zero)
                    .isl("restricting a dependence")?
                    .coalesce()
                    .isl("simplifying a dependence")?;
                if !m.is_empty().isl("testing a dependence")? {
                    next.push(Dep {
                        src: d.src,
                        dst: d.dst,
                        map: m,
                    });
                }
            }
            for (s, row) in &rows {
                if self.needs_row(*s) {
                    let mut r = self.rows[*s].clone();
                    r.push(row.coeffs.clone());
                    if rank(&r, self.dims[*s]) == r.len() {
                        self.rows[*s] = r;
                    }
                }
            }
            members.push(Member { rows, coincident });
            live = next;
        }
        if members.is_empty() {
            return self.cut(stmts, live);
        }
        let ended_early = stmts.iter().any(|&s| self.needs_row(s));
        let child = self.group(stmts.clone(), live, false)?;
        let fused = Node::Band {
            members,
            child: Box::new(child),
        };
        if ended_early && self.opts.fuse == Fuse::Smart && stmts.len() > 1 {
            return self.deeper_of(stmts, all_live, rows_before, fused);
        }
        Ok(fused)
    }

    /// Smart fusion's depth rule. `fused` is the schedule of `stmts` under one band that
    /// ended before every statement had all its rows (some dependence between two fused
    /// statements stops the band, as `s(r) += e(r, j)` followed by `Y(r, j) = e / s(r)`
    /// does). If distributing the dependence graph's components of `stmts` right here
    /// gives a strictly deeper permutable band, that schedule is returned instead; fusion
    /// is kept whenever it costs no tiling depth. `rows_before` are the rows found before
    /// `fused`'s band (restored for the alternative).
    fn deeper_of(
        &mut self,
        stmts: Vec<usize>,
        live: Vec<Dep>,
        rows_before: Vec<Vec<Vec<i64>>>,
        fused: Node,
    ) -> miette::Result<Node> {
        let comps = self.components(&stmts, &live);
        if comps.len() < 2 {
            return Ok(fused);
        }
        let rows_fused = std::mem::replace(&mut self.rows, rows_before);
        // An alternative that cannot be scheduled (a pin, say) just loses.
        match self.sequence(comps, live) {
            Ok(split) if split.permutable_depth() > fused.permutable_depth() => Ok(split),
            _ => {
                self.rows = rows_fused;
                Ok(fused)
            }
        }
    }

    fn dim_of(&self, comp: &[usize]) -> usize {
        comp.iter().map(|&s| self.dims[s]).max().unwrap_or(0)
    }

    fn components(&self, stmts: &[usize], live: &[Dep]) -> Vec<Vec<usize>> {
        let edges: Vec<(usize, usize)> = live.iter().map(|d| (d.src, d.dst)).collect();
        sccs_in_order(stmts, &edges)
    }

    /// Distributes `groups` (in order) and schedules each on its own.
    fn sequence(&mut self, groups: Vec<Vec<usize>>, live: Vec<Dep>) -> miette::Result<Node> {
        let mut children = Vec::with_capacity(groups.len());
        for g in groups {
            let sub = live
                .iter()
                .filter(|d| g.contains(&d.src) && g.contains(&d.dst))
                .map(Dep::copy)
                .collect::<miette::Result<Vec<_>>>()?;
            match self.group(g.clone(), sub, false)? {
                // A group that is itself distributed right away joins this sequence.
                Node::Sequence(inner) => children.extend(inner),
                node => children.push((g, node)),
            }
        }
        Ok(Node::Sequence(children))
    }

    /// No hyperplane exists for the whole group: split it between SCCs by the fusion rule.
    fn cut(&mut self, stmts: Vec<usize>, live: Vec<Dep>) -> miette::Result<Node> {
        let comps = self.components(&stmts, &live);
        if comps.len() < 2 {
            return Err(self.stuck(&stmts, &live));
        }
        let done = !stmts.iter().any(|&s| self.needs_row(s));
        let groups = match self.opts.fuse {
            // Without rows to come, fusing is pointless: separate every component.
            _ if done => comps,
            Fuse::None => comps,
            Fuse::Smart => {
                let g = group_by_dim(&comps, |c| self.dim_of(c));
                if g.len() > 1 {
                    g
                } else {
                    self.max_split(&comps, &live)?
                }
            }
            Fuse::Max => self.max_split(&comps, &live)?,
        };
        self.sequence(groups, live)
    }

    /// The longest prefix of `comps` that still has a legal hyperplane, then the rest.
    fn max_split(&mut self, comps: &[Vec<usize>], live: &[Dep]) -> miette::Result<Vec<Vec<usize>>> {
        let mut k = 1;
        for cand in (2..comps.len()).rev() {
            let prefix: Vec<usize> = comps[..cand].concat();
            if !prefix.iter().any(|&s| self.needs_row(s)) {
                k = cand;
                break;
            }
            let sub: Vec<Dep> = live
                .iter()
                .filter(|d| prefix.contains(&d.src) && prefix.contains(&d.dst))
                .map(Dep::copy)
                .collect::<miette::Result<_>>()?;
            let coefs = self.coef_sets(&sub)?;
            let feasible = self
                .independence_options(&prefix)
                .into_iter()
                .map(|ind| {
                    self.model(&prefix, &coefs, &coefs, false, ind)
                        .0
                        .feasible(self.opts.solver)
                })
                .find(|r| !matches!(r, Ok(false)))
                .transpose()?
                .is_some();
            if feasible {
                k = cand;
                break;
            }
        }
        Ok(vec![comps[..k].concat(), comps[k..].concat()])
    }

    fn coef_sets(&self, deps: &[Dep]) -> miette::Result<Vec<DepCoef>> {
        deps.iter()
            .map(|d| {
                Ok(DepCoef {
                    src: d.src,
                    dst: d.dst,
                    coef: CoefSet::of_dependence(&d.map, d.src == d.dst, &self.params)?,
                })
            })
            .collect()
    }

    /// Builds the ILP of one level for `stmts`.
    fn model(
        &self,
        stmts: &[usize],
        band: &[DepCoef],
        live_coefs: &[DepCoef],
        coincident: bool,
        indep: Indep,
    ) -> (Model, Vars) {
        let n = self.dims.len();
        let mut m = Model::default();
        let mut v = Vars {
            c: vec![None; n],
            c0: vec![None; n],
            u: Vec::new(),
            w: 0,
        };
        let max_c = if self.opts.no_skew {
            1
        } else {
            MAX_COEFFICIENT
        };
        for &s in stmts {
            let pinned = match (self.pins[s], self.needs_row(s)) {
                (Some(p), true) => Some(p.order[self.rows[s].len()]),
                _ => None,
            };
            let cs: Vec<usize> = (0..self.dims[s])
                .map(|k| match pinned {
                    Some(it) => {
                        let x = i64::from(k == it);
                        m.var(x, x)
                    }
                    None => m.var(0, max_c),
                })
                .collect();
            if self.opts.no_skew {
                let mut sum = Lin::constant(1);
                for &c in &cs {
                    sum.add_scaled(&Lin::var(c), -1);
                }
                m.ge0(sum);
            }
            if pinned.is_none() && self.needs_row(s) {
                let null = null_space(&self.rows[s], self.dims[s]);
                let dot = |h: &[i64], sign: i64| {
                    let mut d = Lin::default();
                    for (k, &hk) in h.iter().enumerate() {
                        d.add_scaled(&Lin::var(cs[k]), hk * sign);
                    }
                    d
                };
                match indep {
                    Indep::Single(j, sign) if j < null.len() => {
                        // Exact alternative: ±h_j·c >= 1.
                        let mut d = dot(&null[j], sign);
                        d.cst -= 1;
                        m.ge0(d);
                    }
                    _ => {
                        // Pluto's rule: h·c >= 0 for every vector h of the orthogonal
                        // complement of the rows found so far (oriented to a non-negative
                        // sum, or all reversed), and Σ h·c >= 1.
                        let flip = if indep == Indep::Reversed { -1 } else { 1 };
                        let mut total = Lin::constant(-1);
                        for h in &null {
                            let sum: i64 = h.iter().sum();
                            let first = h.iter().copied().find(|&x| x != 0).unwrap_or(0);
                            let sign = if sum < 0 || (sum == 0 && first < 0) {
                                -1
                            } else {
                                1
                            };
                            let d = dot(h, sign * flip);
                            total.add_scaled(&d, 1);
                            m.ge0(d);
                        }
                        m.ge0(total);
                    }
                }
            }
            v.c0[s] = Some(m.var(0, MAX_SHIFT));
            v.c[s] = Some(cs);
        }
        v.u = (0..self.n_params).map(|_| m.var(0, BIG)).collect();
        v.w = m.var(0, BIG);
        let coef = |s: usize| -> Vec<Lin> {
            v.c[s]
                .as_ref()
                .map(|cs| cs.iter().map(|&c| Lin::var(c)).collect())
                .unwrap_or_default()
        };
        let shift = |s: usize| v.c0[s].map(Lin::var).unwrap_or_default();
        let zeros = vec![Lin::default(); self.n_params];
        // diff = φ_T(y) - φ_S(x) as (constant, variable coefficients) for a coefficient set.
        let diff = |d: &DepCoef| -> (Lin, Vec<Lin>) {
            if d.src == d.dst {
                (Lin::default(), coef(d.src))
            } else {
                let c0 = shift(d.dst).sub(&shift(d.src));
                let mut cv: Vec<Lin> = coef(d.src).iter().map(Lin::neg).collect();
                cv.extend(coef(d.dst));
                (c0, cv)
            }
        };
        // Band dependences: the tiling condition φ_T - φ_S >= 0.
        for d in band {
            let (c0, cv) = diff(d);
            for c in d.coef.nonneg(&c0, &zeros, &cv) {
                m.cons.push(c);
            }
        }
        let u: Vec<Lin> = v.u.iter().map(|&x| Lin::var(x)).collect();
        for d in live_coefs {
            let cs = &d.coef;
            let (c0, cv) = diff(d);
            let neg: Vec<Lin> = cv.iter().map(Lin::neg).collect();
            // Bound: u·n + w - (φ_T - φ_S) >= 0.
            let mut b0 = Lin::var(v.w);
            b0.add_scaled(&c0, -1);
            for c in cs.nonneg(&b0, &u, &neg) {
                m.cons.push(c);
            }
            if coincident {
                for c in cs.nonneg(&c0.neg(), &zeros, &neg) {
                    m.cons.push(c);
                }
            }
            if d.src != d.dst {
                // Fusion proximity: MAX_FUSED_DISTANCE - (φ_T - φ_S) >= 0.
                let mut k0 = Lin::constant(MAX_FUSED_DISTANCE);
                k0.add_scaled(&c0, -1);
                for c in cs.nonneg(&k0, &zeros, &neg) {
                    m.cons.push(c);
                }
            }
        }
        (m, v)
    }

    /// The best legal hyperplane for `stmts`, or `None`.
    fn hyperplane(
        &self,
        stmts: &[usize],
        band: &[DepCoef],
        live_coefs: &[DepCoef],
    ) -> miette::Result<Option<Vec<(usize, Row)>>> {
        let tries: &[bool] = if self.opts.maximize_parallelism && !live_coefs.is_empty() {
            &[true, false]
        } else {
            &[false]
        };
        let options = self.independence_options(stmts);
        for &coincident in tries {
            for &indep in &options {
                let (m, v) = self.model(stmts, band, live_coefs, coincident, indep);
                // Objectives, lexicographically: u, w, Σ coefficients, Σ shifts, then outer
                // iterators before inner ones.
                let mut u = Lin::default();
                for &x in &v.u {
                    u.add_scaled(&Lin::var(x), 1);
                }
                let (mut sum, mut shifts, mut order) =
                    (Lin::default(), Lin::default(), Lin::default());
                for &s in stmts {
                    for (k, &c) in v.c[s].iter().flatten().enumerate() {
                        sum.add_scaled(&Lin::var(c), 1);
                        order.add_scaled(&Lin::var(c), k as i64 + 1);
                    }
                    if let Some(c0) = v.c0[s] {
                        shifts.add_scaled(&Lin::var(c0), 1);
                    }
                }
                let mut objs = Vec::new();
                if !v.u.is_empty() {
                    objs.push(u);
                }
                objs.extend([Lin::var(v.w), sum, shifts, order]);
                if let Some(values) = m.lexmin(&objs, self.opts.solver)? {
                    let rows = stmts
                        .iter()
                        .map(|&s| {
                            let coeffs = v.c[s].iter().flatten().map(|&c| values[c]).collect();
                            let shift = v.c0[s].map_or(0, |c| values[c]);
                            (s, Row { coeffs, shift })
                        })
                        .collect();
                    return Ok(Some(rows));
                }
            }
        }
        Ok(None)
    }

    /// The ways to ask for linear independence, tried in order: Pluto's rule, the rule
    /// with the complement reversed, then each complement vector alone with either sign
    /// (for one statement these alternatives together are exact: a row is independent iff
    /// some complement vector has a non-zero product with it).
    fn independence_options(&self, stmts: &[usize]) -> Vec<Indep> {
        let most = stmts
            .iter()
            .filter(|&&s| self.needs_row(s))
            .map(|&s| self.dims[s] - self.rows[s].len())
            .max()
            .unwrap_or(0);
        let mut out = vec![Indep::Pluto, Indep::Reversed];
        for j in 0..most {
            out.push(Indep::Single(j, 1));
            out.push(Indep::Single(j, -1));
        }
        out
    }

    /// `{ S[x] -> T[y] : φ_T(y) = φ_S(x) }` for the new rows.
    fn same_time(&self, d: &Dep, rows: &[(usize, Row)]) -> miette::Result<Map> {
        let row = |s: usize| rows.iter().find(|(x, _)| *x == s).map(|(_, r)| r);
        let (Some(rs), Some(rt)) = (row(d.src), row(d.dst)) else {
            return Err(miette::miette!(
                "internal error: a dependence leaves its group"
            ));
        };
        let xs: Vec<String> = (0..self.dims[d.src]).map(|k| format!("i{k}")).collect();
        let ys: Vec<String> = (0..self.dims[d.dst]).map(|k| format!("o{k}")).collect();
        let text = format!(
            "{}{{ {}[{}] -> {}[{}] : {} = {} }}",
            self.scop.param_prefix(),
            self.scop.stmt_names[d.src],
            xs.join(", "),
            self.scop.stmt_names[d.dst],
            ys.join(", "),
            affine_text(rt, &ys),
            affine_text(rs, &xs)
        );
        Map::read_from_str(&self.deps.context.get_ctx(), &text).isl(&format!("reading `{text}`"))
    }

    /// The error when a single component has no legal hyperplane: a pin that cannot be
    /// honoured (naming the dependence it violates), or an internal error.
    fn stuck(&self, stmts: &[usize], live: &[Dep]) -> miette::Report {
        for &s in stmts {
            let (Some(pin), true) = (self.pins[s], self.needs_row(s)) else {
                continue;
            };
            let level = self.rows[s].len();
            let it = pin.order[level];
            let names = &self.scop.iter_names[s];
            for d in live.iter().filter(|d| d.src == s && d.dst == s) {
                if let Ok(Some((kind, rel))) = self.violated_by_pin(d, s, it) {
                    return pin_error(pin, self.scop, level, &names[it], kind, &rel);
                }
            }
            return miette::Report::new(pin.file.error(
                pin.span,
                format!(
                    "the pinned loop order of {} cannot be scheduled: no legal hyperplane makes `{}` its loop {}",
                    self.scop.stmt_names[s],
                    names[it],
                    level + 1
                ),
                "pinned here",
                "remove or reorder the pin",
            ));
        }
        let names: Vec<&str> = stmts
            .iter()
            .map(|&s| self.scop.stmt_names[s].as_str())
            .collect();
        miette::miette!(
            help = "use `--scheduler isl`; please report the program",
            "internal error: the ILP scheduler found no legal hyperplane for {}",
            names.join(", ")
        )
    }

    /// The kind and pairs of the self-dependence `d` of `s` that a row `x_it` violates.
    fn violated_by_pin(
        &self,
        d: &Dep,
        s: usize,
        it: usize,
    ) -> miette::Result<Option<(DepKind, String)>> {
        let n = self.dims[s];
        let xs: Vec<String> = (0..n).map(|k| format!("i{k}")).collect();
        let ys: Vec<String> = (0..n).map(|k| format!("o{k}")).collect();
        let name = &self.scop.stmt_names[s];
        let text = format!(
            "{}{{ {name}[{}] -> {name}[{}] : o{it} < i{it} }}",
            self.scop.param_prefix(),
            xs.join(", "),
            ys.join(", ")
        );
        let back = Map::read_from_str(&self.deps.context.get_ctx(), &text)
            .isl(&format!("reading `{text}`"))?;
        for kind in [DepKind::Raw, DepKind::War, DepKind::Waw] {
            let bad = self
                .deps
                .between(kind, s, s)?
                .intersect(d.map.copy().isl("copying a dependence")?)
                .isl("restricting a dependence")?
                .intersect(back.copy().isl("copying a map")?)
                .isl("restricting a dependence")?
                .coalesce()
                .isl("simplifying a dependence")?;
            if !bad.is_empty().isl("testing a dependence")? {
                return Ok(Some((kind, map_text(&bad))));
            }
        }
        Ok(None)
    }
}

/// `2*i0 + i1 + 3` for a row over `names`.
pub fn affine_text(row: &Row, names: &[String]) -> String {
    let mut parts = Vec::new();
    for (c, n) in row.coeffs.iter().zip(names) {
        match *c {
            0 => {}
            1 => parts.push(n.clone()),
            c => parts.push(format!("{c}*{n}")),
        }
    }
    if row.shift != 0 || parts.is_empty() {
        parts.push(row.shift.to_string());
    }
    parts.join(" + ")
}

fn ordinal(k: usize) -> String {
    let suffix = match (k % 10, k % 100) {
        (1, 11) | (2, 12) | (3, 13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{k}{suffix}")
}

/// A pin whose `level`-th loop (0-based) `iter` violates a dependence.
fn pin_error(
    pin: &Pin,
    scop: &Scop,
    level: usize,
    iter: &str,
    kind: DepKind,
    rel: &str,
) -> miette::Report {
    let s = &scop.stmt_names[pin.stmt];
    miette::Report::new(pin.file.error(
        pin.span,
        format!(
            "the pinned loop order of {s} is illegal: `{iter}` as its {} loop violates the {kind} dependence {s} -> {s}",
            ordinal(level + 1)
        ),
        format!("violated pairs: {rel}"),
        "reorder the iterators so that the dependence is carried by an outer loop, or remove the pin",
    ))
}
