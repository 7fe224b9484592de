//! Bank-conflict degrees of every shared-memory access of a kernel (`polyc explain`).
//!
//! Shared memory has 32 banks of 4-byte words; a warp's request is served in phases of
//! at most 128 bytes (all 32 threads for 4-byte accesses, half warps for 8-byte ones,
//! quarter warps for 16-byte ones), and a phase takes as many cycles as the most distinct
//! words one bank must deliver: its **degree** (threads reading the same word share it).
//!
//! The degree is computed exactly for the code the kernel prints, at bound sizes:
//!
//! - the threads are warp 0's, numbered `x` fastest, with their thread indices;
//! - the walk follows the kernel IR: each thread takes its own iteration of block- and
//!   thread-stride loops, guards switch threads off, and every other loop is visited at
//!   its first and at its last iteration (all threads of a warp run those in step; a
//!   value that all threads share shifts every address by the same amount, which keeps
//!   the degree, so two visits see the full tiles and the partial one);
//! - each access's element index is the printed C text of the index, evaluated
//!   ([`crate::codegen::ceval`]) with each thread's values;
//! - an access that a loop of at most [`VECTOR_TRIP`] iterations (unrolled) walks
//!   through consecutive, aligned elements is taken as the vector access (up to 16
//!   bytes) nvcc forms from it, and served in the phases of that width.

use std::collections::{BTreeSet, HashMap};

use polyhedral::ir::{Aff, Program};

use crate::codegen::ceval::eval_c_int;
use crate::codegen::cfamily::{c_ident, Emitter};
use crate::codegen::kir::{KCmp, KExpr, KNode, LocalRef, LoopKind};
use crate::gpu::module::DeviceKernel;

/// Loops of at most this many iterations are taken as unrolled (their consecutive
/// accesses become one vector access).
pub const VECTOR_TRIP: i64 = 16;

/// The walk visits loops at their first and last iteration until this many loop visits;
/// then at their first only.
const VISIT_BUDGET: usize = 20_000;

/// One shared-memory access of a kernel and its degree.
#[derive(Clone, Debug, PartialEq)]
pub struct SharedAccess {
    /// What accesses: `S_1 reads A`, `copy of B into shared memory`, ….
    pub site: String,
    /// The promotion whose shared buffer it accesses.
    pub promo: usize,
    /// Bytes each thread moves per request (4, 8 or 16 with vector accesses).
    pub bytes: i64,
    /// The most distinct words one bank serves in one phase of a warp's request, over
    /// every visit (1: conflict-free).
    pub degree: usize,
    /// How many times one warp makes the request in a run of the kernel's block (the
    /// trip counts of the loops around it, per thread, over the vector width).
    pub requests: f64,
}

/// One thread's values of the names in scope, the latest binding of a name replacing the
/// earlier one: a short vector of names borrowed from the kernel (the walk clones one per
/// thread and visit, and a hash map of owned names made most of its time).
#[derive(Clone, Default)]
struct Env<'k>(Vec<(&'k str, i64)>);

impl<'k> Env<'k> {
    fn get(&self, name: &str) -> Option<&i64> {
        self.0.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    fn get_mut(&mut self, name: &str) -> Option<&mut i64> {
        self.0.iter_mut().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    fn insert(&mut self, name: &'k str, value: i64) {
        match self.get_mut(name) {
            Some(v) => *v = value,
            None => self.0.push((name, value)),
        }
    }
}

type Lanes<'k> = Vec<Option<Env<'k>>>;

struct Walker<'a> {
    prog: &'a Program,
    e: &'a Emitter<'a>,
    outer: HashMap<String, i64>,
    /// Enclosing loops inside the current thread loop: iterator, step, iterations, and
    /// the one being visited.
    loops: Vec<(&'a str, i64, i64, i64)>,
    sites: Vec<SharedAccess>,
    /// Sites by buffer and description (the copies of one loop nest printed twice are
    /// one site).
    site_at: HashMap<(usize, String), usize>,
    visits: usize,
    /// The iterations one thread runs of the loops around the node being walked.
    weight: f64,
    /// Only the accesses of this promotion's buffer.
    only: Option<usize>,
    /// The padding search's walk, once per candidate: the last iteration of short loops
    /// only (those whose accesses may be vectors).
    search: bool,
    /// Inside a copy loop printed as vector copies: its elements per copy.
    forced_width: Option<i64>,
    /// An access whose index could not be evaluated.
    failed: bool,
}

/// The bank-conflict degree of every shared-memory access of kernel `k`, printed by its
/// emitter `e` (the GPU target's `kernel_emitter`), in the order the kernel first reaches
/// them; `None` when a size is symbolic (the addresses are not numbers) or an index
/// could not be evaluated.
pub(crate) fn bank_degrees(
    e: &Emitter,
    prog: &Program,
    param_texts: &[String],
    k: &DeviceKernel,
) -> Option<Vec<SharedAccess>> {
    degrees_with(e, prog, param_texts, k, None, false)
}

/// Row paddings tried for each shared buffer, in elements of `esize` bytes: every whole
/// number of elements up to 64 bytes (a 16-byte multiple keeps rows aligned for 128-bit
/// accesses; other paddings spread rows over the banks).
fn pad_candidates(esize: i64) -> Vec<i64> {
    (0..=64 / esize.max(1)).collect()
}

/// Pads the rows of each shared buffer of kernel `k` (two dimensions or more, not stored
/// in blocks) by the candidate under which its accesses take the fewest bank cycles (the
/// sum over its accesses of requests × degree; then the smallest worst degree, then the
/// least padding); the emitter's default rule ([`crate::codegen::cfamily`]'s
/// one-element padding of 128-byte rows) stays where no candidate does strictly better.
/// Symbolic sizes keep the default rule.
pub(crate) fn choose_row_padding(
    e: &mut Emitter,
    prog: &Program,
    param_texts: &[String],
    k: &DeviceKernel,
) {
    // Every printer and report of a kernel builds its emitter: choose once per kernel.
    let key = {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        format!("{:?}", k.body).hash(&mut h);
        k.name.hash(&mut h);
        k.block.hash(&mut h);
        param_texts.hash(&mut h);
        prog.name.hash(&mut h);
        h.finish()
    };
    if let Some(pads) = PADS.with(|c| c.borrow().get(&key).cloned()) {
        for (promo, pad) in pads {
            e.set_row_pad(promo, pad);
        }
        return;
    }
    let chosen = best_row_pads(e, prog, param_texts, k);
    for &(promo, pad) in &chosen {
        e.set_row_pad(promo, pad);
    }
    PADS.with(|c| c.borrow_mut().insert(key, chosen));
}

/// A shared buffer's cost under one padding: its bank cycles (requests × degree, summed
/// over its accesses, rounded to whole cycles so that they compare exactly), then its
/// worst degree.
fn pad_cost(sites: &[SharedAccess], promo: usize) -> (u64, usize) {
    let mine = sites.iter().filter(|s| s.promo == promo);
    let worst = mine.clone().map(|s| s.degree).max().unwrap_or(0);
    let cycles: f64 = mine.map(|s| s.requests * s.degree as f64).sum();
    (cycles.round() as u64, worst)
}

/// The padding of each paddable shared buffer that does strictly better than the default
/// rule (see [`choose_row_padding`]), leaving the emitter's paddings at the default rule.
///
/// A buffer's bank conflicts depend on its own layout only, so one walk of the kernel
/// prices one candidate for every buffer at once (a walk per buffer and candidate made
/// this quadratic: 1.3 s of a 160-statement kernel). A walk that fails prices that
/// candidate buffer by buffer, as the walk of one buffer alone may still succeed.
fn best_row_pads(
    e: &mut Emitter,
    prog: &Program,
    param_texts: &[String],
    k: &DeviceKernel,
) -> Vec<(usize, i64)> {
    let mut promos: Vec<(usize, i64)> = Vec::new();
    for promo in e.paddable_shared() {
        if let Some(buf) = k.shared.iter().find(|b| b.promo == promo) {
            promos.push((promo, prog.tensors[buf.tensor].dtype.size_bytes() as i64));
        }
    }
    if promos.is_empty() {
        return Vec::new();
    }
    // The default rule's costs; the buffers from the first one whose walk fails on keep it.
    let walked = degrees_with(e, prog, param_texts, k, None, true);
    let mut defaults: Vec<(u64, usize)> = Vec::with_capacity(promos.len());
    for &(promo, _) in &promos {
        let cost = match &walked {
            Some(sites) => Some(pad_cost(sites, promo)),
            None => degrees_with(e, prog, param_texts, k, Some(promo), true)
                .map(|sites| pad_cost(&sites, promo)),
        };
        match cost {
            Some(c) => defaults.push(c),
            None => break,
        }
    }
    promos.truncate(defaults.len());
    let mut best: Vec<Option<((u64, usize), i64)>> = vec![None; promos.len()];
    let most = promos
        .iter()
        .map(|&(_, esize)| pad_candidates(esize).len())
        .max()
        .unwrap_or(0);
    for pad in 0..most as i64 {
        let live: Vec<usize> = (0..promos.len())
            .filter(|&i| pad_candidates(promos[i].1).contains(&pad))
            .collect();
        for (i, &(promo, _)) in promos.iter().enumerate() {
            if live.contains(&i) {
                e.set_row_pad(promo, pad);
            } else {
                e.clear_row_pad(promo);
            }
        }
        let all = degrees_with(e, prog, param_texts, k, None, true);
        for &i in &live {
            let promo = promos[i].0;
            let cost = match &all {
                Some(sites) => Some(pad_cost(sites, promo)),
                None => degrees_with(e, prog, param_texts, k, Some(promo), true)
                    .map(|sites| pad_cost(&sites, promo)),
            };
            let Some(c) = cost else { continue };
            if c < defaults[i] && best[i].as_ref().is_none_or(|(b, _)| c < *b) {
                best[i] = Some((c, pad));
            }
        }
    }
    for &(promo, _) in &promos {
        e.clear_row_pad(promo);
    }
    promos
        .iter()
        .zip(best)
        .filter_map(|(&(promo, _), b)| b.map(|(_, pad)| (promo, pad)))
        .collect()
}

thread_local! {
    /// The paddings chosen per kernel (a hash of its body, sizes and program).
    static PADS: std::cell::RefCell<HashMap<u64, Vec<(usize, i64)>>> =
        std::cell::RefCell::new(HashMap::new());
}

/// [`bank_degrees`] with the kernel's emitter `e`, for the accesses of promotion `only`'s
/// buffer where given; `search`: the padding search's walk (see [`Walker::search`]).
fn degrees_with(
    e: &Emitter,
    prog: &Program,
    param_texts: &[String],
    k: &DeviceKernel,
    only: Option<usize>,
    search: bool,
) -> Option<Vec<SharedAccess>> {
    let mut outer = HashMap::new();
    for (p, t) in prog.params.iter().zip(param_texts) {
        outer.insert(c_ident(&p.name), t.trim().parse::<i64>().ok()?);
        outer.insert(p.name.clone(), t.trim().parse::<i64>().ok()?);
    }
    for h in &k.host_args {
        outer.insert(h.clone(), 0);
    }
    for d in 0..3 {
        outer.insert(format!("polyc_ntid{d}"), k.block[d]);
        outer.insert(format!("polyc_bid{d}"), 0);
        outer.insert(format!("polyc_nbid{d}"), 1);
    }
    let threads: i64 = k.block.iter().product();
    outer.insert("polyc_ntidf".into(), threads);
    let lanes: Lanes = (0..threads.min(32))
        .map(|t| {
            let x = t % k.block[0];
            let y = (t / k.block[0]) % k.block[1];
            let z = t / (k.block[0] * k.block[1]);
            Some(Env(vec![
                ("polyc_tid0", x),
                ("polyc_tid1", y),
                ("polyc_tid2", z),
                ("polyc_tidf", t),
            ]))
        })
        .collect();
    let mut w = Walker {
        prog,
        e,
        outer,
        loops: Vec::new(),
        sites: Vec::new(),
        site_at: HashMap::new(),
        visits: 0,
        weight: 1.0,
        only,
        search,
        forced_width: None,
        failed: false,
    };
    w.walk(&k.body, &lanes);
    (!w.failed).then_some(w.sites)
}

impl<'a> Walker<'a> {
    fn value(&self, env: &Env, e: &KExpr) -> Option<i64> {
        self.value_with(env, &[], e)
    }

    fn text_value(&self, env: &Env, text: &str) -> Option<i64> {
        self.text_value_with(env, &[], text)
    }

    /// The value of a name: in `extra` (the latest binding first), then `env`, then the
    /// kernel's.
    fn lookup(&self, env: &Env, extra: &[(&str, i64)], n: &str) -> Option<i64> {
        extra
            .iter()
            .rev()
            .find(|(m, _)| *m == n)
            .map(|(_, v)| *v)
            .or_else(|| env.get(n).copied())
            .or_else(|| self.outer.get(n).copied())
    }

    fn value_with(&self, env: &Env, extra: &[(&str, i64)], e: &KExpr) -> Option<i64> {
        e.eval(&|n: &str| self.lookup(env, extra, n))
    }

    fn text_value_with(&self, env: &Env, extra: &[(&str, i64)], text: &str) -> Option<i64> {
        eval_c_int(text, &|n: &str| self.lookup(env, extra, n))
    }

    fn walk(&mut self, n: &'a KNode, lanes: &Lanes<'a>) {
        if lanes.iter().all(Option::is_none) {
            return;
        }
        match n {
            KNode::Block(v) => v.iter().for_each(|c| self.walk(c, lanes)),
            KNode::For { .. } if self.e.vector_copy_width(n).is_some() => {
                self.vector_copy_loop(n, lanes)
            }
            KNode::For { kind, .. } if kind.is_thread() => self.thread_loop(n, lanes),
            KNode::For { .. } => self.seq_loop(n, lanes),
            KNode::If { cond, then, els } => {
                let mut yes = lanes.clone();
                let mut no = lanes.clone();
                for (i, l) in lanes.iter().enumerate() {
                    if let Some(env) = l {
                        let c = self.value(env, cond).unwrap_or(1) != 0;
                        if c {
                            no[i] = None;
                        } else {
                            yes[i] = None;
                        }
                    }
                }
                self.walk(then, &yes);
                if let Some(e) = els {
                    self.walk(e, &no);
                }
            }
            KNode::Let { name, value, body } => {
                let mut next = lanes.clone();
                for env in next.iter_mut().flatten() {
                    match self.value(env, value) {
                        Some(v) => {
                            env.insert(name.as_str(), v);
                        }
                        None => self.failed = true,
                    }
                }
                self.walk(body, &next);
            }
            KNode::Local { body, .. } | KNode::Device { body, .. } => self.walk(body, lanes),
            KNode::Stmt { stmt, args, locals } => self.stmt(*stmt, args, locals, lanes),
            KNode::Copy {
                promo,
                tensor,
                copy_in,
                args,
                locals,
            } => {
                let name = &self.prog.tensors[*tensor].name;
                let own = locals.iter().rev().find(|l| l.promo == *promo);
                let other = locals
                    .iter()
                    .rev()
                    .find(|l| l.tensor == *tensor && l.promo != *promo);
                let (to, from) = if *copy_in { (own, other) } else { (other, own) };
                let sides = [
                    (to, format!("copy of {name} into shared memory")),
                    (from, format!("copy of {name} out of shared memory")),
                ];
                for (side, site) in sides {
                    if let Some(l) = side.filter(|l| self.e.is_shared(l.promo)) {
                        let at = |w: &Walker, env: &Env| {
                            let idx: Vec<String> = args
                                .iter()
                                .map(|a| w.value(env, a).map(|v| v.to_string()))
                                .collect::<Option<_>>()?;
                            w.text_value(env, &w.e.tile_index_text(l, &idx))
                        };
                        self.record(l.promo, site, *tensor, lanes, &at);
                    }
                }
            }
            KNode::Barrier | KNode::Intrinsic(_) => {}
        }
    }

    /// A copy loop printed as vector copies ([`Emitter::vector_copy_width`]): each thread
    /// at its first vector.
    fn vector_copy_loop(&mut self, n: &'a KNode, lanes: &Lanes<'a>) {
        let (
            Some((w, _)),
            KNode::For {
                iter,
                init,
                cond,
                body,
                kind,
                ..
            },
        ) = (self.e.vector_copy_width(n), n)
        else {
            return;
        };
        let idx = match kind {
            LoopKind::Thread(d) => Some(format!("polyc_tid{d}")),
            LoopKind::ThreadFlat => Some("polyc_tidf".to_string()),
            _ => None,
        };
        let extent = self.threads_along(*kind);
        let mut next = lanes.clone();
        let mut trip = 1;
        for env in next.iter_mut() {
            let Some(m) = env.as_mut() else { continue };
            let t = idx.as_ref().and_then(|i| m.get(i).copied()).unwrap_or(0);
            let (Some(first), Some(upper)) = (
                self.value(m, init),
                upper_value(iter, cond, &|e| self.value(m, e)),
            ) else {
                self.failed = true;
                return;
            };
            trip = trip.max(upper - first + 1);
            m.insert(iter.as_str(), first + t * w);
            if self.value(m, cond) == Some(0) {
                *env = None;
            }
        }
        let per_thread = ((trip + w * extent - 1) / (w * extent)).max(1);
        self.walk_in_thread(body, &next, per_thread, Some(w));
    }

    /// Walks the body of a loop spread over threads, each thread running `per_thread`
    /// iterations: the short loops outside it no longer make vectors, and `width` (a
    /// vector copy's elements) is the width of the accesses inside.
    fn walk_in_thread(
        &mut self,
        body: &'a KNode,
        lanes: &Lanes<'a>,
        per_thread: i64,
        width: Option<i64>,
    ) {
        let saved = std::mem::take(&mut self.loops);
        let weight = self.weight;
        self.weight *= per_thread as f64;
        self.forced_width = width;
        self.walk(body, lanes);
        self.forced_width = None;
        self.weight = weight;
        self.loops = saved;
    }

    /// The threads a loop of `kind` is spread over (1: not spread).
    fn threads_along(&self, kind: LoopKind) -> i64 {
        match kind {
            LoopKind::Thread(d) => self.outer.get(&format!("polyc_ntid{d}")).copied(),
            LoopKind::ThreadFlat => self.outer.get("polyc_ntidf").copied(),
            _ => Some(1),
        }
        .unwrap_or(1)
        .max(1)
    }

    /// Each thread at its own first iteration of a block-stride loop.
    fn thread_loop(&mut self, n: &'a KNode, lanes: &Lanes<'a>) {
        let KNode::For {
            iter,
            init,
            cond,
            step,
            body,
            kind,
        } = n
        else {
            return;
        };
        let idx = match kind {
            LoopKind::Thread(d) => format!("polyc_tid{d}"),
            _ => "polyc_tidf".into(),
        };
        let mut next = lanes.clone();
        for env in next.iter_mut() {
            let Some(m) = env.as_mut() else { continue };
            let Some(v) = self
                .value(m, init)
                .and_then(|i| Some(i + m.get(&idx).copied()? * step))
            else {
                self.failed = true;
                *env = None;
                continue;
            };
            m.insert(iter.as_str(), v);
            if self.value(m, cond) == Some(0) {
                *env = None;
            }
        }
        let extent = self.threads_along(*kind);
        let trip = lanes
            .iter()
            .flatten()
            .next()
            .and_then(|env| {
                let first = self.value(env, init)?;
                let upper = upper_value(iter, cond, &|e| self.value(env, e))?;
                Some(((upper - first) / step.max(&1) + 1).max(1))
            })
            .unwrap_or(1);
        self.walk_in_thread(body, &next, (trip + extent - 1) / extent, None);
    }

    /// A loop all threads run in step: its first iteration, then its last.
    fn seq_loop(&mut self, n: &'a KNode, lanes: &Lanes<'a>) {
        let KNode::For {
            iter,
            init,
            cond,
            step,
            body,
            ..
        } = n
        else {
            return;
        };
        let Some(first_env) = lanes.iter().flatten().next() else {
            return;
        };
        let (Some(first), Some(upper)) = (
            self.value(first_env, init),
            upper_value(iter, cond, &|e| self.value(first_env, e)),
        ) else {
            self.failed = true;
            return;
        };
        if upper < first || *step <= 0 {
            return;
        }
        let trip = (upper - first) / step + 1;
        let last = first + (trip - 1) * step;
        self.visits += 1;
        let mut at = vec![first];
        // (The padding search, which walks once per candidate, sees the last iteration
        // of short loops only: those whose accesses may be vectors.)
        if last != first && self.visits < VISIT_BUDGET && (!self.search || trip <= VECTOR_TRIP) {
            at.push(last);
        }
        for (i, v) in at.into_iter().enumerate() {
            let mut next = lanes.clone();
            for env in next.iter_mut() {
                let Some(m) = env.as_mut() else { continue };
                m.insert(iter.as_str(), v);
                if self.value(m, cond) == Some(0) {
                    *env = None;
                }
            }
            let pos = if i == 0 { 0 } else { trip - 1 };
            self.loops.push((iter.as_str(), *step, trip, pos));
            let weight = self.weight;
            self.weight *= trip as f64;
            self.walk(body, &next);
            self.weight = weight;
            self.loops.pop();
        }
    }

    fn stmt(&mut self, stmt: usize, args: &[KExpr], locals: &[LocalRef], lanes: &Lanes<'a>) {
        let st = &self.prog.stmts[stmt];
        let names: Vec<String> = st.iters.iter().map(|i| c_ident(&i.name)).collect();
        let mut accesses: Vec<(usize, Vec<Aff>, &str)> =
            vec![(st.lhs, st.lhs_index.clone(), "writes")];
        for (t, idx, _) in st.reads() {
            accesses.push((t, idx, "reads"));
        }
        for (t, idx, verb) in accesses {
            let Some(l) = locals.iter().rev().find(|l| l.tensor == t) else {
                continue;
            };
            if !self.e.is_shared(l.promo) || self.only.is_some_and(|p| p != l.promo) {
                continue;
            }
            let texts: Vec<String> = idx.iter().map(|a| self.e.aff_text(a, &names)).collect();
            let text = self.e.tile_index_text(l, &texts);
            let at = |w: &Walker, env: &Env| {
                let mut extra: Vec<(&str, i64)> = Vec::with_capacity(names.len());
                for (name, a) in names.iter().zip(args) {
                    let v = w.value_with(env, &extra, a)?;
                    extra.push((name.as_str(), v));
                }
                w.text_value_with(env, &extra, &text)
            };
            let site = format!("{} {verb} {}", st.name, self.prog.tensors[t].name);
            self.record(l.promo, site, t, lanes, &at);
        }
    }

    /// Adds one visit of an access: `at` gives a thread's element index.
    fn record(
        &mut self,
        promo: usize,
        site: String,
        tensor: usize,
        lanes: &Lanes<'a>,
        at: &dyn Fn(&Walker, &Env) -> Option<i64>,
    ) {
        if self.only.is_some_and(|p| p != promo) {
            return;
        }
        let esize = self.prog.tensors[tensor].dtype.size_bytes() as i64;
        let (width, shift) = self.vector_width(lanes, esize, at);
        let mut index = Vec::with_capacity(lanes.len());
        for l in lanes {
            let Some(env) = l else {
                index.push(None);
                continue;
            };
            let mut env = env.clone();
            if let Some((iter, by)) = &shift {
                if let Some(v) = env.get_mut(iter) {
                    *v += by;
                }
            }
            match at(self, &env) {
                Some(v) => index.push(Some(v)),
                None => {
                    self.failed = true;
                    return;
                }
            }
        }
        let bytes = esize * width;
        let degree = degree(&index, esize, bytes);
        let i = *self
            .site_at
            .entry((promo, site.clone()))
            .or_insert_with(|| {
                self.sites.push(SharedAccess {
                    site,
                    promo,
                    bytes,
                    degree: 0,
                    requests: 0.0,
                });
                self.sites.len() - 1
            });
        let s = &mut self.sites[i];
        s.degree = s.degree.max(degree);
        s.bytes = s.bytes.max(bytes);
        let per_vector = if self.forced_width.is_some() {
            1
        } else {
            width
        };
        s.requests = s.requests.max(self.weight / per_vector as f64);
    }

    /// Elements per vector access: the widest (up to 16 bytes) run of consecutive
    /// elements, starting at a multiple of its width, that an enclosing short loop walks
    /// through (seen from the first active thread), and how far to move that loop's
    /// iterator to the run's start; 1 and no move when none.
    fn vector_width(
        &self,
        lanes: &Lanes<'a>,
        esize: i64,
        at: &dyn Fn(&Walker, &Env) -> Option<i64>,
    ) -> (i64, Option<(&'a str, i64)>) {
        if let Some(w) = self.forced_width {
            return (w, None);
        }
        let Some(env) = lanes.iter().flatten().next() else {
            return (1, None);
        };
        let cur = |iter: &str| env.get(iter).copied().unwrap_or(0);
        let moved = |iter: &'a str, by: i64| {
            let mut e = env.clone();
            e.insert(iter, cur(iter) + by);
            at(self, &e)
        };
        for (iter, step, trip, pos) in self.loops.iter().rev() {
            if *trip > VECTOR_TRIP || *trip < 2 {
                continue;
            }
            let mut w = (16 / esize).min(*trip);
            while w >= 2 {
                let g = pos - pos % w;
                let run = g + w <= *trip
                    && moved(iter, (g - pos) * step).is_some_and(|base| {
                        base % w == 0
                            && (1..w).all(|m| moved(iter, (g + m - pos) * step) == Some(base + m))
                    });
                if run {
                    return (w, Some((*iter, (g - pos) * step)));
                }
                w /= 2;
            }
        }
        (1, None)
    }
}

/// The most distinct words one bank serves in one phase (at most 128 bytes of threads)
/// of a request whose threads access `bytes` from element `index` (elements of `esize`
/// bytes).
fn degree(index: &[Option<i64>], esize: i64, bytes: i64) -> usize {
    let per_phase = (128 / bytes.max(1)).clamp(1, 32) as usize;
    let mut most = 0;
    for phase in index.chunks(per_phase) {
        let mut banks: HashMap<i64, BTreeSet<i64>> = HashMap::new();
        for v in phase.iter().flatten() {
            let start = v * esize;
            for word in start.div_euclid(4)..=(start + bytes - 1).div_euclid(4) {
                banks.entry(word.rem_euclid(32)).or_default().insert(word);
            }
        }
        most = most.max(banks.values().map(BTreeSet::len).max().unwrap_or(0));
    }
    most
}

/// The last value a loop condition admits for `iter` (`iter <= e`, `iter < e`, their
/// mirror forms, or the smallest bound of a conjunction).
fn upper_value(iter: &str, cond: &KExpr, value: &dyn Fn(&KExpr) -> Option<i64>) -> Option<i64> {
    let is_iter = |e: &KExpr| matches!(e, KExpr::Var(v) if v == iter);
    match cond {
        KExpr::And(a, b) => match (upper_value(iter, a, value), upper_value(iter, b, value)) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        },
        KExpr::Cmp(KCmp::Le, a, b) if is_iter(a) => value(b),
        KExpr::Cmp(KCmp::Lt, a, b) if is_iter(a) => Some(value(b)? - 1),
        KExpr::Cmp(KCmp::Ge, a, b) if is_iter(b) => value(a),
        KExpr::Cmp(KCmp::Gt, a, b) if is_iter(b) => Some(value(a)? - 1),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::degree;

    #[test]
    fn degrees_of_strided_broadcast_and_vector_requests() {
        let idx = |f: &dyn Fn(i64) -> i64| (0..32).map(|t| Some(f(t))).collect::<Vec<_>>();
        // Consecutive words: conflict-free; a stride of 2 words: 2-way; of 32: 32-way.
        assert_eq!(degree(&idx(&|t| t), 4, 4), 1);
        assert_eq!(degree(&idx(&|t| 2 * t), 4, 4), 2);
        assert_eq!(degree(&idx(&|t| 32 * t), 4, 4), 32);
        // Every thread on one word: a broadcast.
        assert_eq!(degree(&idx(&|_| 7), 4, 4), 1);
        // 16-byte accesses, quarter warps: rows of 64 floats collide 8-way, rows of 68
        // (16 bytes of padding) do not.
        assert_eq!(degree(&idx(&|t| 64 * t), 4, 16), 8);
        assert_eq!(degree(&idx(&|t| 68 * t), 4, 16), 1);
        // f64: half warps of 8-byte accesses over consecutive elements.
        assert_eq!(degree(&idx(&|t| t), 8, 8), 1);
        assert_eq!(degree(&idx(&|t| 16 * t), 8, 8), 16);
    }
}
