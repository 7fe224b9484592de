//! Shrinking a failing case to a minimal one, as C-Reduce and Csmith's reducers do, but on
//! the program's AST so that every candidate stays valid ([`Prog::validate`]).
//!
//! Greedy: the candidates of the current case are tried in order (settings first, then
//! whole statements, expressions, indices, sizes, the tile spec); the first that still
//! fails the same way becomes the current case, and the search starts again, until no
//! candidate fails or the budget ends.

use crate::case::{Case, CaseResult, Outcome, Tgt, Tiles};
use crate::gen::{Expr, Idx, Op, Prog, Role};
use std::time::{Duration, Instant};

/// Whether two failures are the same bug for the shrinker: the same class, and for errors
/// and panics the same first line with digits dropped (sizes and numbers change while
/// shrinking).
pub fn same_failure(a: &Outcome, b: &Outcome) -> bool {
    if a.class() != b.class() {
        return false;
    }
    match a {
        Outcome::CompileError(_) | Outcome::RunError(_) | Outcome::Panic(_) => {
            signature(a.message()) == signature(b.message())
        }
        _ => true,
    }
}

/// The first line of a message without its location and digits.
fn signature(m: &str) -> String {
    let first = m
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    // Drop the `file:line:col` location prefix and the numbers.
    let first = first.rsplit(".tc:").next().unwrap_or(first);
    first.chars().filter(|c| !c.is_ascii_digit()).collect()
}

/// The shrinker's budget.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// The most candidates run.
    pub attempts: usize,
    /// The most time spent.
    pub time: Duration,
}

/// Shrinks `case`, which failed with `failure` (and `first` is its result), with `run`
/// running a candidate. Returns the smallest case found, its result and the number of
/// candidates run.
///
/// The candidates come in levels, coarsest first ([`LEVELS`]): all settings at once,
/// whole statements, right sides replaced by one of their leaves, sub-expressions,
/// indices and operators, sizes, each setting alone, the spec. Within a level, a success
/// replaces the case and the level goes on from the same position in the new case's
/// candidates; rounds over all levels repeat while one of them succeeds.
pub fn shrink(
    case: &Case,
    first: &CaseResult,
    budget: Budget,
    run: &mut dyn FnMut(&Case) -> CaseResult,
) -> (Case, CaseResult, usize) {
    let start = Instant::now();
    let mut cur = case.clone();
    let mut cur_result = first.clone();
    let mut tried = 0;
    let failure = first.outcome.clone();
    // Candidates already run (and not failing the same way), to run none twice.
    let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut try_one =
        |cand: &Case, cur: &mut Case, cur_result: &mut CaseResult, tried: &mut usize| {
            let key = serde_json::to_string(&(&cand.prog, &cand.cfg)).unwrap_or_default();
            if !seen.insert(key) {
                return false;
            }
            *tried += 1;
            let r = run(cand);
            let same = same_failure(&failure, &r.outcome);
            if same {
                *cur = cand.clone();
                *cur_result = r;
            }
            same
        };
    for _round in 0..8 {
        let mut progress = false;
        for (k, level) in LEVELS.iter().enumerate() {
            if k == LEVELS.len() - 1 {
                // Freeze a random spec into its text before shrinking the text.
                if let (Tiles::Random(_), Some(text)) = (&cur.cfg.tiles, &cur_result.spec) {
                    let mut frozen = cur.clone();
                    frozen.cfg.tiles = Tiles::Text(text.clone());
                    try_one(&frozen, &mut cur, &mut cur_result, &mut tried);
                }
            }
            let mut pos = 0;
            let mut cands = valid(level(&cur));
            while pos < cands.len() {
                if tried >= budget.attempts || start.elapsed() > budget.time {
                    return (cur, cur_result, tried);
                }
                let cand = cands[pos].clone();
                if try_one(&cand, &mut cur, &mut cur_result, &mut tried) {
                    progress = true;
                    cands = valid(level(&cur));
                } else {
                    pos += 1;
                }
            }
        }
        if !progress {
            break;
        }
    }
    (cur, cur_result, tried)
}

/// A level of candidates.
type Level = fn(&Case) -> Vec<Case>;

/// The levels, coarsest first.
const LEVELS: [Level; 8] = [
    all_settings,
    statements,
    leaves,
    expressions,
    indices_and_ops,
    sizes,
    each_setting,
    spec_texts,
];

/// The candidates that are valid programs, without repeats.
fn valid(mut v: Vec<Case>) -> Vec<Case> {
    v.retain(|c| c.prog.validate().is_ok());
    v.dedup();
    v
}

/// Every one-step simplification of `case` that is still a valid program (all levels).
pub fn candidates(case: &Case) -> Vec<Case> {
    valid(LEVELS.iter().flat_map(|l| l(case)).collect())
}

/// `case` with program `p`.
fn with(case: &Case, p: Prog) -> Case {
    Case {
        prog: p,
        ..case.clone()
    }
}

/// Every setting back to its default at once: on the case's target, then on the CPU.
fn all_settings(case: &Case) -> Vec<Case> {
    let mut out = Vec::new();
    for target in [case.cfg.target, Tgt::Cpu] {
        let mut c = case.clone();
        c.cfg = crate::case::Config {
            cc: case.cfg.cc,
            ..crate::case::Config::plain(target)
        };
        if c != *case {
            out.push(c);
        }
    }
    out
}

/// One statement dropped (last first).
fn statements(case: &Case) -> Vec<Case> {
    let p = &case.prog;
    (0..p.stmts.len())
        .rev()
        .map(|k| {
            let mut q = p.clone();
            q.stmts.remove(k);
            let pairing: Vec<Option<usize>> = (0..p.stmts.len())
                .map(|o| match o.cmp(&k) {
                    std::cmp::Ordering::Less => Some(o),
                    std::cmp::Ordering::Equal => None,
                    std::cmp::Ordering::Greater => Some(o - 1),
                })
                .collect();
            renumbered(case, tidy(q), &pairing)
        })
        .collect()
}

/// The `S_n` numbers of each statement of `p` (two for `op=!`: the init, then the update).
fn s_numbers(p: &Prog) -> Vec<Vec<usize>> {
    let mut next = 0;
    p.stmts
        .iter()
        .map(|s| {
            let n = if s.init && s.op != Op::Assign { 2 } else { 1 };
            next += n;
            (next - n..next).collect()
        })
        .collect()
}

/// `case` with program `q`, whose statement `k` was statement `pairing[k]`… of the old one
/// (`pairing[old] = Some(new)`, `None` when dropped); a spec text follows the statement
/// numbers (lines of dropped statements and of dropped inits go).
fn renumbered(case: &Case, q: Prog, pairing: &[Option<usize>]) -> Case {
    let mut c = with(case, q);
    let Tiles::Text(text) = &case.cfg.tiles else {
        return c;
    };
    let (old, new) = (s_numbers(&case.prog), s_numbers(&c.prog));
    let mut lines = Vec::new();
    for line in text.lines() {
        let Some((head, rest)) = line.split_once(':') else {
            continue;
        };
        let Some(n) = head
            .trim()
            .strip_prefix("S_")
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        let Some((k, pos)) = old
            .iter()
            .enumerate()
            .find_map(|(k, v)| v.iter().position(|&x| x == n).map(|p| (k, p)))
        else {
            continue;
        };
        let Some(Some(nk)) = pairing.get(k) else {
            continue;
        };
        // Aligned from the end: the update keeps its spec, a dropped init loses it.
        let from_end = old[k].len() - 1 - pos;
        if let Some(&m) = new[*nk]
            .len()
            .checked_sub(1 + from_end)
            .and_then(|i| new[*nk].get(i))
        {
            lines.push(format!("S_{m}:{rest}"));
        }
    }
    c.cfg.tiles = if lines.is_empty() {
        Tiles::Default
    } else {
        Tiles::Text(lines.join("\n") + "\n")
    };
    c
}

/// A right side replaced by one of its leaves (a read, a literal, a scalar).
fn leaves(case: &Case) -> Vec<Case> {
    let p = &case.prog;
    let mut out = Vec::new();
    for k in 0..p.stmts.len() {
        let mut leaves = Vec::new();
        p.stmts[k].rhs.visit(&mut |e| {
            if matches!(e, Expr::Read { .. } | Expr::Lit(_) | Expr::Scalar(_)) {
                leaves.push(e.clone());
            }
        });
        leaves.push(Expr::Lit(1.0));
        for l in leaves {
            if l != p.stmts[k].rhs {
                let mut q = p.clone();
                q.stmts[k].rhs = l;
                out.push(with(case, tidy(q)));
            }
        }
    }
    out
}

/// A sub-expression replaced by one of its operands or a literal.
fn expressions(case: &Case) -> Vec<Case> {
    let p = &case.prog;
    let mut out = Vec::new();
    for k in 0..p.stmts.len() {
        for pos in 0..p.stmts[k].rhs.size() {
            for rep in replacements(&p.stmts[k].rhs, pos) {
                let mut q = p.clone();
                q.stmts[k].rhs = rep;
                out.push(with(case, tidy(q)));
            }
        }
    }
    out
}

/// A reduction made a plain `=`, an inferred range, an unshifted or unwindowed index.
fn indices_and_ops(case: &Case) -> Vec<Case> {
    let p = &case.prog;
    let mut out = Vec::new();
    for k in 0..p.stmts.len() {
        let s = &p.stmts[k];
        if s.op != Op::Assign {
            let mut q = p.clone();
            q.stmts[k].op = Op::Assign;
            q.stmts[k].init = false;
            let same: Vec<Option<usize>> = (0..p.stmts.len()).map(Some).collect();
            out.push(renumbered(case, tidy(q), &same));
        }
        if s.explicit {
            let mut q = p.clone();
            q.stmts[k].explicit = false;
            out.push(with(case, q));
        }
        for pos in 0..s.rhs.size() {
            let mut q = p.clone();
            if simplify_index_at(&mut q.stmts[k].rhs, pos) {
                out.push(with(case, q));
            }
        }
    }
    out
}

/// A size made 1, halved, or one less.
fn sizes(case: &Case) -> Vec<Case> {
    let p = &case.prog;
    let mut out = Vec::new();
    for f in 0..5 {
        let v = p.sizes[f];
        for nv in [1, v / 2, v - 1] {
            if nv >= 1 && nv < v {
                let mut q = p.clone();
                q.sizes[f] = nv;
                out.push(with(case, q));
            }
        }
    }
    out
}

/// One setting back to its default.
fn each_setting(case: &Case) -> Vec<Case> {
    let mut out = Vec::new();
    config_candidates(case, &mut out);
    out
}

/// A shorter spec text.
fn spec_texts(case: &Case) -> Vec<Case> {
    let mut out = Vec::new();
    spec_candidates(case, &mut out);
    out
}

/// Simpler settings: drop each flag, the spec, the scheduler's options; the CPU target.
fn config_candidates(case: &Case, out: &mut Vec<Case>) {
    let mut push = |f: &dyn Fn(&mut Case)| {
        let mut c = case.clone();
        f(&mut c);
        if c != *case {
            out.push(c);
        }
    };
    push(&|c| c.cfg.tiles = Tiles::Default);
    push(&|c| c.cfg.target = Tgt::Cpu);
    push(&|c| c.cfg.isl_options.clear());
    push(&|c| c.cfg.fuse = None);
    push(&|c| c.cfg.pack = None);
    push(&|c| c.cfg.policy = None);
    push(&|c| c.cfg.via_c = false);
    push(&|c| c.cfg.no_hoist = false);
    push(&|c| c.cfg.no_tile_fusion = false);
    push(&|c| c.cfg.tile_fusion_one_nest = false);
    push(&|c| c.cfg.no_register_tiles = false);
    push(&|c| c.cfg.no_default_tiling = false);
    push(&|c| c.cfg.verify_passes = false);
    push(&|c| c.cfg.cc = crate::case::CcMode::Default);
    push(&|c| c.cfg.scheduler = "isl".into());
    push(&|c| c.cfg.scheduler = "initial".into());
}

/// Shorter specs: a line dropped, a line's last entry dropped, a size halved.
fn spec_candidates(case: &Case, out: &mut Vec<Case>) {
    let Tiles::Text(text) = &case.cfg.tiles else {
        return;
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut push = |ls: Vec<String>| {
        let mut c = case.clone();
        c.cfg.tiles = if ls.is_empty() {
            Tiles::Default
        } else {
            Tiles::Text(ls.join("\n") + "\n")
        };
        out.push(c);
    };
    for k in 0..lines.len() {
        let mut ls: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
        ls.remove(k);
        push(ls.clone());
        let line = lines[k];
        if let Some((head, entries)) = line.split_once(": ") {
            let parts: Vec<&str> = entries.split(", ").collect();
            if parts.len() > 1 {
                let mut ls2: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
                ls2[k] = format!("{head}: {}", parts[..parts.len() - 1].join(", "));
                push(ls2);
            }
            let halved: Vec<String> = parts.iter().map(|e| halve_sizes(e)).collect();
            if halved.join(", ") != entries {
                let mut ls3: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
                ls3[k] = format!("{head}: {}", halved.join(", "));
                push(ls3);
            }
        }
    }
}

/// `8@L2 4@L1` → `4@L2 2@L1` (sizes halved, at least 1).
fn halve_sizes(entry: &str) -> String {
    entry
        .split(' ')
        .map(|lv| match lv.split_once('@') {
            Some((n, b)) => match n.parse::<i64>() {
                Ok(v) => format!("{}@{b}", (v / 2).max(1)),
                Err(_) => lv.to_string(),
            },
            None => lv.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The expression with node `pos` (pre-order) replaced by each of its children, by its
/// first read, or by a literal.
fn replacements(e: &Expr, pos: usize) -> Vec<Expr> {
    let Some(node) = nth(e, pos) else {
        return Vec::new();
    };
    let mut subs: Vec<Expr> = match &node {
        Expr::Bin(_, a, b) => vec![(**a).clone(), (**b).clone()],
        Expr::Un(_, a) => vec![(**a).clone()],
        Expr::Select(v) => vec![v[2].clone(), v[3].clone()],
        _ => Vec::new(),
    };
    if !matches!(node, Expr::Lit(_)) {
        subs.push(Expr::Lit(1.0));
    }
    subs.into_iter()
        .map(|r| {
            let mut e2 = e.clone();
            replace_nth(&mut e2, pos, &r);
            e2
        })
        .collect()
}

/// Node `pos` of `e` in pre-order.
fn nth(e: &Expr, pos: usize) -> Option<Expr> {
    let mut k = 0;
    let mut found = None;
    e.visit(&mut |x| {
        if k == pos {
            found = Some(x.clone());
        }
        k += 1;
    });
    found
}

/// Replaces node `pos` of `e` (pre-order) by `with`.
fn replace_nth(e: &mut Expr, pos: usize, with: &Expr) {
    /// Walks to node `pos`, counting nodes in `k`; true once replaced.
    fn go(e: &mut Expr, k: &mut usize, pos: usize, with: &Expr) -> bool {
        if *k == pos {
            *e = with.clone();
            return true;
        }
        *k += 1;
        match e {
            Expr::Bin(_, a, b) => go(a, k, pos, with) || go(b, k, pos, with),
            Expr::Un(_, a) => go(a, k, pos, with),
            Expr::Select(v) => v.iter_mut().any(|x| go(x, k, pos, with)),
            _ => false,
        }
    }
    let mut k = 0;
    go(e, &mut k, pos, with);
}

/// At node `pos`, a read: its first shifted index unshifted, or its first window made a
/// plain index. Returns whether anything changed.
fn simplify_index_at(e: &mut Expr, pos: usize) -> bool {
    let Some(Expr::Read { t, idx }) = nth(e, pos) else {
        return false;
    };
    let mut idx2 = idx.clone();
    let Some(i) = idx2.iter().position(|x| {
        matches!(x, Idx::Var { off, .. } if *off != 0) || matches!(x, Idx::Win { .. })
    }) else {
        return false;
    };
    idx2[i] = match idx2[i] {
        Idx::Var { fam, .. } | Idx::Win { fam } => Idx::Var { fam, off: 0 },
        Idx::Zero => Idx::Zero,
    };
    replace_nth(e, pos, &Expr::Read { t, idx: idx2 });
    true
}

/// Drops tensors and scalars nothing uses (renumbering the rest), makes written tensors
/// that nothing reads afterwards outputs, and drops outputs nothing writes.
pub fn tidy(mut p: Prog) -> Prog {
    let mut used = vec![false; p.tensors.len()];
    let mut scalars = vec![false; p.scalars.len()];
    for s in &p.stmts {
        used[s.lhs] = true;
        s.rhs.visit(&mut |e| match e {
            Expr::Read { t, .. } => used[*t] = true,
            Expr::Scalar(k) => scalars[*k] = true,
            _ => {}
        });
    }
    for (k, t) in p.tensors.iter_mut().enumerate() {
        let last_write = p.stmts.iter().rposition(|s| s.lhs == k);
        if let (Some(w), Role::Temp) = (last_write, t.role) {
            let read_after = p.stmts[w + 1..].iter().any(|s| {
                let mut r = false;
                s.rhs
                    .visit(&mut |e| r |= matches!(e, Expr::Read { t, .. } if *t == k));
                r
            });
            if !read_after {
                t.role = Role::Output { inout: false };
            }
        }
    }
    let tmap: Vec<Option<usize>> = remap(&used);
    let smap: Vec<Option<usize>> = remap(&scalars);
    p.tensors = p
        .tensors
        .into_iter()
        .zip(&used)
        .filter(|(_, u)| **u)
        .map(|(t, _)| t)
        .collect();
    p.scalars = p
        .scalars
        .into_iter()
        .zip(&scalars)
        .filter(|(_, u)| **u)
        .map(|(s, _)| s)
        .collect();
    for s in &mut p.stmts {
        s.lhs = tmap[s.lhs].unwrap_or(0);
        renumber(&mut s.rhs, &tmap, &smap);
    }
    p
}

/// New positions of the kept entries (`None` for dropped ones).
fn remap(used: &[bool]) -> Vec<Option<usize>> {
    let mut k = 0;
    used.iter()
        .map(|&u| {
            u.then(|| {
                k += 1;
                k - 1
            })
        })
        .collect()
}

/// Renumbers the tensors and scalars `e` reads.
fn renumber(e: &mut Expr, tmap: &[Option<usize>], smap: &[Option<usize>]) {
    match e {
        Expr::Read { t, .. } => *t = tmap[*t].unwrap_or(0),
        Expr::Scalar(k) => *k = smap[*k].unwrap_or(0),
        Expr::Bin(_, a, b) => {
            renumber(a, tmap, smap);
            renumber(b, tmap, smap);
        }
        Expr::Un(_, a) => renumber(a, tmap, smap),
        Expr::Select(v) => v.iter_mut().for_each(|x| renumber(x, tmap, smap)),
        _ => {}
    }
}
