//! The polyhedral model of one `def`: statement domains, access relations, tensor extents.
//!
//! [`Scop::build`] turns a [`Program`] into isl objects. Bound sizes are substituted as
//! constants, unbound ones stay isl parameters, and the context says that every symbolic
//! size is at least 1. Names follow the source: a statement domain is the tuple `S_i`
//! with the iterator names as dimension names, and a tensor is the tuple named like the
//! tensor:
//!
//! ```text
//! [H, W, KH, KW] -> { S_1[h, w, kh, kw] : 0 <= h <= H - KH and 0 <= w <= W - KW and … }
//! [H, W, KH, KW] -> { S_1[h, w, kh, kw] -> A[h + kh, w + kw] }
//! ```
//!
//! Building the model also checks that every access stays inside its tensor's shape for
//! every size the context allows; a violation is a located error with an example point.

use crate::diag::SourceFile;
use crate::ir::{Aff, OrderItem, Program, Span, Stmt, TensorId};
use crate::isl::ffi::model::set_text;
use crate::isl::{Ctx, IslResultExt};
use isl_rs::{DimType, Map, Set, Space, UnionMap, UnionSet};

/// Words isl's parser reserves (compared without case); no size, iterator or tensor may
/// be named like one, since the model is built from isl text.
const ISL_KEYWORDS: [&str; 18] = [
    "exists", "and", "or", "implies", "not", "infty", "infinity", "nan", "min", "max", "rat",
    "true", "false", "ceild", "floord", "mod", "ceil", "floor",
];

/// The text each size parameter is rendered as: its value if bound (`"64"`), else its
/// name (`"H"`). A negative value is parenthesised (`"(-3)"`) so that it can be
/// substituted anywhere in an isl expression.
pub fn param_texts(prog: &Program, values: &[Option<i64>]) -> Vec<String> {
    prog.params
        .iter()
        .enumerate()
        .map(|(k, p)| match values.get(k).copied().flatten() {
            Some(v) if v < 0 => format!("({v})"),
            Some(v) => v.to_string(),
            None => p.name.clone(),
        })
        .collect()
}

/// One tensor access of a statement, with its isl relation.
pub struct Access {
    /// The accessed tensor.
    pub tensor: TensorId,
    /// The index expressions, one per tensor dimension.
    pub index: Vec<Aff>,
    /// The access in the source.
    pub span: Span,
    /// `S_i[iters] -> T[index]`, restricted to the statement's domain.
    pub map: Map,
}

/// The polyhedral model of one def, with bound sizes substituted as constants and unbound
/// ones as isl parameters.
pub struct Scop {
    /// A number no other model built by this process has (keys caches of derived data).
    pub id: u64,
    /// The value of each size of [`Program::params`], `None` for a symbolic one.
    pub param_values: Vec<Option<i64>>,
    /// How each size is rendered in isl text (see [`param_texts`]).
    pub param_texts: Vec<String>,
    /// Names of the symbolic sizes, in [`Program::params`] order: the isl parameters.
    pub symbolic: Vec<String>,
    /// Parameters only: every symbolic size is `>= 1` (universe if all are bound).
    pub context: Set,
    /// All statement domains `S_i[iters]`.
    pub domain: UnionSet,
    /// The domain of each statement, by statement number.
    pub stmt_domains: Vec<Set>,
    /// Every read `S_i[..] -> T[..]` (for `op=` updates the left side is read too).
    pub reads: UnionMap,
    /// Every write `S_i[..] -> T[..]`.
    pub writes: UnionMap,
    /// The reads of each statement, in [`Stmt::reads`] order.
    pub stmt_reads: Vec<Vec<Access>>,
    /// The write of each statement.
    pub stmt_writes: Vec<Access>,
    /// Each tensor's index set `T[d0, …] : 0 <= d_k < extent_k`, by tensor id.
    pub tensor_extents: Vec<Set>,
    /// Statement names (`S_0`, …), by statement number.
    pub stmt_names: Vec<String>,
    /// Iterator names of each statement.
    pub iter_names: Vec<Vec<String>>,
    /// The sequential loops around each statement ([`crate::ir::Stmt::loops`]); their
    /// indices are its first iterators.
    pub stmt_loops: Vec<Vec<usize>>,
    /// Remarks that are not errors, e.g. a statement that never runs for the bound sizes.
    pub notes: Vec<String>,
}

/// An output that no statement writes at these sizes (every statement writing it has an
/// empty domain) is an error: the kernel would compute nothing, and a check would compare
/// nothing. With every size bound (`values`) the error is for these sizes, else for all.
fn unwritten_outputs(
    prog: &Program,
    empty: &[bool],
    values: &[Option<i64>],
    src: &SourceFile,
) -> miette::Result<()> {
    let bound = values.iter().all(Option::is_some);
    for &t in &prog.outputs {
        let writers: Vec<&Stmt> = prog.stmts.iter().filter(|s| s.lhs == t).collect();
        let all_empty = prog
            .stmts
            .iter()
            .zip(empty)
            .filter(|(s, _)| s.lhs == t)
            .all(|(_, &e)| e);
        let Some(first) = writers.first() else {
            continue;
        };
        // An output with no element at these sizes (a convolution narrower than its
        // kernel) is rightly never written.
        let has_elements =
            !bound || crate::limits::tensor_bytes(prog, t, values).is_none_or(|(n, _)| n > 0);
        if !all_empty || !has_elements {
            continue;
        }
        let names: Vec<&str> = writers.iter().map(|s| s.name.as_str()).collect();
        let sizes = if bound {
            "at these sizes"
        } else {
            "for any sizes"
        };
        return Err(src
            .error(
                first.lhs_span,
                format!(
                    "output `{}` is never written {sizes}: the {} of {} {} empty",
                    prog.tensors[t].name,
                    if names.len() == 1 {
                        "domain"
                    } else {
                        "domains"
                    },
                    names.join(" and "),
                    if names.len() == 1 { "is" } else { "are" }
                ),
                "no instance of this statement runs",
                "check the sizes and the indices: the ranges inferred for an index from \
                 all its accesses (or its `where` range) do not overlap",
            )
            .into());
    }
    Ok(())
}

impl Scop {
    /// Builds the model of `prog` for the size values `values` (one per
    /// [`Program::params`], `None` = symbolic) and checks that no access leaves its tensor.
    pub fn build(
        ctx: &Ctx,
        prog: &Program,
        values: &[Option<i64>],
        src: &SourceFile,
    ) -> miette::Result<Scop> {
        if values.len() != prog.params.len() {
            let (n, m) = (values.len(), prog.params.len());
            let msg = format!("{n} size values given for the {m} sizes of `{}`", prog.name);
            return Err(miette::miette!("internal error: {msg}"));
        }
        check_names(prog, src)?;
        crate::limits::check_tensor_sizes(prog, values, src)?;
        let ptexts = param_texts(prog, values);
        let symbolic: Vec<String> = prog
            .params
            .iter()
            .zip(values)
            .filter(|(_, v)| v.is_none())
            .map(|(p, _)| p.name.clone())
            .collect();
        let prefix = format!("[{}] -> ", symbolic.join(", "));

        let context_text = format!(
            "{prefix}{{ : {} }}",
            symbolic
                .iter()
                .map(|s| format!("{s} >= 1"))
                .collect::<Vec<_>>()
                .join(" and ")
        );
        let context = parse_set(ctx, &context_text)?;

        // Tensor index sets.
        let mut tensor_extents = Vec::with_capacity(prog.tensors.len());
        for t in &prog.tensors {
            let dims = fresh_names(t.shape.len(), prog);
            let cons: Vec<String> = t
                .shape
                .iter()
                .zip(&dims)
                .map(|(e, d)| format!("0 <= {d} < {}", e.to_isl(&[], &ptexts)))
                .collect();
            let text = format!(
                "{prefix}{{ {}[{}]{} }}",
                t.name,
                dims.join(", "),
                where_(&cons)
            );
            tensor_extents.push(parse_set(ctx, &text)?);
        }

        let mut stmt_domains = Vec::with_capacity(prog.stmts.len());
        let mut stmt_reads = Vec::with_capacity(prog.stmts.len());
        let mut stmt_writes = Vec::with_capacity(prog.stmts.len());
        let mut notes = Vec::new();
        let mut empty = vec![false; prog.stmts.len()];
        for (si, stmt) in prog.stmts.iter().enumerate() {
            let names = stmt.iter_names();
            let mut cons = Vec::new();
            for it in &stmt.iters {
                for lo in &it.lower {
                    cons.push(format!("{} <= {}", lo.to_isl(&names, &ptexts), it.name));
                }
                for hi in &it.upper {
                    cons.push(format!("{} < {}", it.name, hi.to_isl(&names, &ptexts)));
                }
            }
            let text = format!(
                "{prefix}{{ {}[{}]{} }}",
                stmt.name,
                names.join(", "),
                where_(&cons)
            );
            let dom = parse_set(ctx, &text)?;
            let never = dom
                .copy()
                .isl("copying a domain")?
                .intersect_params(context.copy().isl("copying the context")?)
                .isl("restricting a domain")?
                .is_empty()
                .isl("testing a domain for emptiness")?;
            empty[si] = never;
            if never {
                let sizes = if symbolic.is_empty() { "these" } else { "all" };
                notes.push(format!(
                    "{} never runs: its domain is empty for {sizes} sizes",
                    stmt.name
                ));
            }
            let access = |tensor: TensorId, index: &[Aff], span: Span| -> miette::Result<Access> {
                let t = &prog.tensors[tensor];
                let idx: Vec<String> = index.iter().map(|a| a.to_isl(&names, &ptexts)).collect();
                let text = format!(
                    "{prefix}{{ {}[{}] -> {}[{}] }}",
                    stmt.name,
                    names.join(", "),
                    t.name,
                    idx.join(", ")
                );
                let map = Map::read_from_str(&ctx.isl, &text)
                    .isl(&format!("reading the access `{text}`"))?
                    .intersect_domain(dom.copy().isl("copying a domain")?)
                    .isl("restricting an access to its domain")?;
                Ok(Access {
                    tensor,
                    index: index.to_vec(),
                    span,
                    map,
                })
            };
            let write = access(stmt.lhs, &stmt.lhs_index, stmt.lhs_span)?;
            let reads = stmt
                .reads()
                .into_iter()
                .map(|(t, idx, sp)| access(t, &idx, sp))
                .collect::<miette::Result<Vec<_>>>()?;
            stmt_domains.push(dom);
            stmt_writes.push(write);
            stmt_reads.push(reads);
        }

        unwritten_outputs(prog, &empty, values, src)?;
        if symbolic.is_empty() {
            crate::limits::check_domains(prog, &stmt_domains, src)?;
        }
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let scop = Scop {
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            param_values: values.to_vec(),
            param_texts: ptexts,
            symbolic,
            domain: union_of_sets(ctx, &prefix, &stmt_domains)?,
            reads: union_of_maps(ctx, &prefix, stmt_reads.iter().flatten().map(|a| &a.map))?,
            writes: union_of_maps(ctx, &prefix, stmt_writes.iter().map(|a| &a.map))?,
            context,
            stmt_domains,
            stmt_reads,
            stmt_writes,
            tensor_extents,
            stmt_names: prog.stmts.iter().map(|s| s.name.clone()).collect(),
            iter_names: prog.stmts.iter().map(|s| s.iter_names()).collect(),
            stmt_loops: prog.stmts.iter().map(|s| s.loops.clone()).collect(),
            notes,
        };
        scop.check_bounds(prog, src)?;
        Ok(scop)
    }

    /// The program order of statements `which` as a tree of loops
    /// ([`crate::ir::Program::order_items`]).
    pub fn order_items(&self, which: &[usize]) -> Vec<OrderItem> {
        let loops: Vec<&[usize]> = which
            .iter()
            .map(|&i| self.stmt_loops[i].as_slice())
            .collect();
        crate::ir::group_order(which, &loops, 0)
    }

    /// Program order of every statement as isl schedule text: for each item level its
    /// position, with each enclosing loop's index between, then its own iterators
    /// (`[2, t, 0, i, j]` for `S_i[t, i, j]` inside a loop that is the third item).
    pub fn order_vectors(&self) -> Vec<Vec<String>> {
        fn walk(
            scop: &Scop,
            items: &[OrderItem],
            prefix: &mut Vec<String>,
            out: &mut [Vec<String>],
        ) {
            for (pos, item) in items.iter().enumerate() {
                prefix.push(pos.to_string());
                match item {
                    OrderItem::Stmt(i) => {
                        let own = &scop.iter_names[*i][scop.stmt_loops[*i].len()..];
                        out[*i] = prefix.iter().chain(own).cloned().collect();
                    }
                    OrderItem::Loop(_, body) => {
                        let first = item.stmts()[0];
                        prefix.push(scop.iter_names[first][prefix.len() / 2].clone());
                        walk(scop, body, prefix, out);
                        prefix.pop();
                    }
                }
                prefix.pop();
            }
        }
        let all: Vec<usize> = (0..self.stmt_names.len()).collect();
        let mut out = vec![Vec::new(); all.len()];
        walk(self, &self.order_items(&all), &mut Vec::new(), &mut out);
        out
    }

    /// The `[P, …] -> ` prefix that introduces the symbolic sizes in isl text.
    pub fn param_prefix(&self) -> String {
        format!("[{}] -> ", self.symbolic.join(", "))
    }

    /// Restricts the context to `lo <= NAME <= hi` for each `(NAME, lo, hi)` of `ranges`
    /// (`--dynamic`): tiling then sizes these symbolic extents at their largest value.
    pub fn assume_sizes(&mut self, ctx: &Ctx, ranges: &[(String, i64, i64)]) -> miette::Result<()> {
        if ranges.is_empty() {
            return Ok(());
        }
        let names: Vec<&str> = ranges.iter().map(|r| r.0.as_str()).collect();
        let cons: Vec<String> = ranges
            .iter()
            .map(|(n, lo, hi)| format!("{lo} <= {n} <= {hi}"))
            .collect();
        let text = format!("[{}] -> {{ : {} }}", names.join(", "), cons.join(" and "));
        let assumed = parse_set(ctx, &text)?;
        let context = std::mem::replace(&mut self.context, parse_set(ctx, "{ : }")?);
        self.context = context
            .intersect_params(assumed)
            .isl("restricting the context to the dynamic sizes")?;
        Ok(())
    }

    /// The space of statement `i`'s domain.
    pub fn stmt_space(&self, i: usize) -> miette::Result<Space> {
        self.stmt_domains[i]
            .get_space()
            .isl("getting a domain's space")
    }

    /// Every access is inside its tensor for every size the context allows; otherwise a
    /// located error at the first offending access (the write first, then the reads).
    fn check_bounds(&self, prog: &Program, src: &SourceFile) -> miette::Result<()> {
        for (s, stmt) in prog.stmts.iter().enumerate() {
            for acc in std::iter::once(&self.stmt_writes[s]).chain(&self.stmt_reads[s]) {
                let ext = self.tensor_extents[acc.tensor]
                    .copy()
                    .isl("copying a tensor's extent")?;
                let bad = acc
                    .map
                    .copy()
                    .isl("copying an access")?
                    .subtract_range(ext)
                    .isl("computing out-of-bounds accesses")?
                    .domain()
                    .isl("computing out-of-bounds accesses")?
                    .intersect_params(self.context.copy().isl("copying the context")?)
                    .isl("computing out-of-bounds accesses")?;
                if !bad.is_empty().isl("testing out-of-bounds accesses")? {
                    return Err(self.bounds_error(prog, stmt, acc, bad, src));
                }
            }
        }
        Ok(())
    }

    fn bounds_error(
        &self,
        prog: &Program,
        stmt: &Stmt,
        acc: &Access,
        bad: Set,
        src: &SourceFile,
    ) -> miette::Report {
        let t = &prog.tensors[acc.tensor];
        let pnames = prog.param_names();
        let shape: Vec<String> = t.shape.iter().map(|e| display_extent(e, &pnames)).collect();
        let mut shape_text = shape.join(" x ");
        if t.shape.iter().any(|e| !is_literal(e)) && self.symbolic.is_empty() {
            let vals: Vec<i64> = self.param_values.iter().map(|v| v.unwrap_or(0)).collect();
            let concrete: Vec<String> = t
                .shape
                .iter()
                .map(|e| e.eval(&[], &vals).to_string())
                .collect();
            shape_text = format!("{shape_text} = {}", concrete.join(" x "));
        }
        let names = stmt.iter_names();
        let access_text = src
            .text
            .get(acc.span.start..acc.span.end)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .unwrap_or_else(|| {
                let idx: Vec<String> = acc
                    .index
                    .iter()
                    .map(|a| display_aff(a, &names, &pnames))
                    .collect();
                format!("{}({})", t.name, idx.join(", "))
            });
        let label = match self.example_point(bad, prog, stmt, acc) {
            Some(ex) => format!("out of bounds {ex}"),
            None => "out of bounds for some iterations".to_string(),
        };
        miette::Report::new(src.error(
            acc.span,
            format!(
                "`{access_text}` may access outside `{}` (shape {shape_text})",
                t.name
            ),
            label,
            "restrict the iterators with `where`, or enlarge the tensor",
        ))
    }

    /// `for h = 62, kh = 2 (index (64, 0))`, plus `when H = 1, …` for symbolic sizes.
    fn example_point(&self, bad: Set, prog: &Program, stmt: &Stmt, acc: &Access) -> Option<String> {
        let pt = bad.copy().ok()?.sample_point().ok()?;
        if pt.is_void().ok()? {
            return None;
        }
        let coord = |ty: DimType, k: usize| -> Option<i64> {
            pt.get_coordinate_val(ty, k as i32).ok()?.get_num_si().ok()
        };
        // Sizes: the bound values, and the symbolic ones from the point (by name, since
        // isl keeps its own parameter order).
        let n_par = bad.dim(DimType::Param).ok()? as usize;
        let mut sampled = Vec::with_capacity(n_par);
        for k in 0..n_par {
            let name = bad.get_dim_name(DimType::Param, k as u32).ok()?.to_string();
            sampled.push((name, coord(DimType::Param, k)?));
        }
        let mut params = Vec::with_capacity(prog.params.len());
        let mut sym_parts = Vec::new();
        for (k, v) in self.param_values.iter().enumerate() {
            match v {
                Some(v) => params.push(*v),
                None => {
                    let name = &prog.params[k].name;
                    let val = sampled
                        .iter()
                        .find(|(n, _)| n == name)
                        .map_or(1, |(_, v)| *v);
                    sym_parts.push(format!("{name} = {val}"));
                    params.push(val);
                }
            }
        }
        let mut iters = Vec::with_capacity(stmt.iters.len());
        for k in 0..stmt.iters.len() {
            iters.push(coord(DimType::Set, k)?);
        }
        let it_parts: Vec<String> = stmt
            .iters
            .iter()
            .zip(&iters)
            .map(|(it, v)| format!("{} = {v}", it.name))
            .collect();
        let idx: Vec<String> = acc
            .index
            .iter()
            .map(|a| a.eval(&iters, &params).to_string())
            .collect();
        let mut out = String::new();
        if !it_parts.is_empty() {
            out.push_str(&format!("for {} ", it_parts.join(", ")));
        }
        if !sym_parts.is_empty() {
            out.push_str(&format!("when {} ", sym_parts.join(", ")));
        }
        out.push_str(&format!("(index ({}))", idx.join(", ")));
        Some(out)
    }

    /// isl text of statement `i`'s domain.
    pub fn stmt_domain_text(&self, i: usize) -> String {
        set_text(&self.stmt_domains[i])
    }
}

/// ` : c1 and c2` or nothing.
fn where_(cons: &[String]) -> String {
    if cons.is_empty() {
        String::new()
    } else {
        format!(" : {}", cons.join(" and "))
    }
}

fn parse_set(ctx: &Ctx, text: &str) -> miette::Result<Set> {
    Set::read_from_str(&ctx.isl, text).isl(&format!("reading `{text}`"))
}

fn union_of_sets(ctx: &Ctx, prefix: &str, sets: &[Set]) -> miette::Result<UnionSet> {
    let mut u = UnionSet::read_from_str(&ctx.isl, &format!("{prefix}{{ }}"))
        .isl("creating an empty union set")?;
    for s in sets {
        let s = UnionSet::from_set(s.copy().isl("copying a set")?).isl("converting a set")?;
        u = u.union(s).isl("uniting domains")?;
    }
    Ok(u)
}

fn union_of_maps<'a>(
    ctx: &Ctx,
    prefix: &str,
    maps: impl Iterator<Item = &'a Map>,
) -> miette::Result<UnionMap> {
    let mut u = UnionMap::read_from_str(&ctx.isl, &format!("{prefix}{{ }}"))
        .isl("creating an empty union map")?;
    for m in maps {
        let m = UnionMap::from_map(m.copy().isl("copying a map")?).isl("converting a map")?;
        u = u.union(m).isl("uniting accesses")?;
    }
    Ok(u)
}

/// `n` dimension names that no size uses (`d0`, `d1`, … with extra `_` if needed).
fn fresh_names(n: usize, prog: &Program) -> Vec<String> {
    let mut stem = "d".to_string();
    while prog.params.iter().any(|p| p.name.starts_with(&stem)) {
        stem.insert(0, '_');
    }
    (0..n).map(|k| format!("{stem}{k}")).collect()
}

/// Sizes, iterators and tensors must not be isl keywords, and an iterator must not be
/// named like a size (isl would read it as the size).
fn check_names(prog: &Program, src: &SourceFile) -> miette::Result<()> {
    let reserved = |n: &str| ISL_KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(n));
    let err = |span: Span, what: &str, name: &str| {
        miette::Report::new(src.error(
            span,
            format!("the {what} name `{name}` is reserved by isl"),
            "reserved name",
            format!(
                "rename it; polyc cannot use these names (in any case): {}",
                ISL_KEYWORDS.join(", ")
            ),
        ))
    };
    for p in &prog.params {
        if reserved(&p.name) {
            return Err(err(p.span, "size", &p.name));
        }
    }
    for t in &prog.tensors {
        if reserved(&t.name) {
            return Err(err(t.span, "tensor", &t.name));
        }
    }
    for s in &prog.stmts {
        for it in &s.iters {
            if reserved(&it.name) {
                return Err(err(it.span, "iterator", &it.name));
            }
            if prog.param_index(&it.name).is_some() {
                return Err(miette::Report::new(src.error(
                    it.span,
                    format!("the iterator `{}` has the name of a size", it.name),
                    "also a size",
                    "rename the iterator",
                )));
            }
        }
    }
    Ok(())
}

fn is_literal(e: &Aff) -> bool {
    matches!(e, Aff::Const(_))
}

/// An extent as the user would write it, parenthesised unless it is one name or number.
fn display_extent(e: &Aff, params: &[String]) -> String {
    let s = display_aff(e, &[], params);
    if matches!(e, Aff::Const(_) | Aff::Param(_)) {
        s
    } else {
        format!("({s})")
    }
}

/// Renders an affine expression in `.tc` syntax with minimal parentheses.
pub fn display_aff(e: &Aff, iters: &[String], params: &[String]) -> String {
    fn go(e: &Aff, it: &[String], pa: &[String], level: u8) -> String {
        // level: 0 = sum operand (anything), 1 = product operand, 2 = atom
        let (s, own) = match e {
            Aff::Const(c) => (c.to_string(), if *c < 0 { 0 } else { 2 }),
            Aff::Iter(i) => (it[*i].clone(), 2),
            Aff::Param(p) => (pa[*p].clone(), 2),
            Aff::Add(a, b) => match b.as_ref() {
                Aff::Const(c) if *c < 0 => (format!("{} - {}", go(a, it, pa, 0), -c), 0),
                Aff::Neg(x) => (format!("{} - {}", go(a, it, pa, 0), go(x, it, pa, 1)), 0),
                _ => (format!("{} + {}", go(a, it, pa, 0), go(b, it, pa, 0)), 0),
            },
            Aff::Sub(a, b) => (format!("{} - {}", go(a, it, pa, 0), go(b, it, pa, 1)), 0),
            Aff::Mul(c, a) => (format!("{c} * {}", go(a, it, pa, 2)), 1),
            Aff::Neg(a) => (format!("-{}", go(a, it, pa, 2)), 0),
            Aff::FloorDiv(a, c) => (format!("floordiv({}, {c})", go(a, it, pa, 0)), 2),
            Aff::Mod(a, c) => (format!("{} % {c}", go(a, it, pa, 2)), 1),
        };
        if own < level {
            format!("({s})")
        } else {
            s
        }
    }
    go(e, iters, params, 0)
}

/// How one access of a statement moves when a band member takes one step: see
/// [`Scop::member_steps`].
pub struct AccessStep {
    /// The statement.
    pub stmt: usize,
    /// The accessed tensor.
    pub tensor: TensorId,
    /// The differences of the accessed index (tensor space) between an instance and the
    /// instance one step of the member later.
    pub deltas: UnionSet,
}

impl Scop {
    /// For every statement that band `schedule` (isl text of its multi-union-pw-aff, with
    /// `n` members) schedules, and whose iterators include one that a step of member `m`
    /// advances by one: each access (the reads, then the write) and how that step moves
    /// its index. Accesses the step leaves out are omitted (a statement the member does
    /// not move has none).
    pub fn member_steps(
        &self,
        isl: &isl_rs::Context,
        schedule: &str,
        n: usize,
        m: usize,
    ) -> miette::Result<Vec<AccessStep>> {
        let mupa =
            isl_rs::MultiUnionPwAff::read_from_str(isl, schedule).isl("reading a band schedule")?;
        let sched = UnionMap::from_multi_union_pw_aff(mupa).isl("a band schedule as a map")?;
        let prefix = self.param_prefix();
        let unit: Vec<&str> = (0..n).map(|k| if k == m { "1" } else { "0" }).collect();
        let unit = UnionSet::read_from_str(isl, &format!("{prefix}{{ [{}] }}", unit.join(", ")))
            .isl("reading a unit step")?;
        let mut out = Vec::new();
        for s in 0..self.stmt_names.len() {
            let dom = UnionSet::from_set(self.stmt_domains[s].copy().isl("copying a domain")?)
                .isl("a domain as a union set")?;
            let sched_s = sched
                .copy()
                .isl("copying a map")?
                .intersect_domain(dom.copy().isl("copying a set")?)
                .isl("a statement's band schedule")?;
            if sched_s.is_empty().isl("testing a map for emptiness")? {
                continue;
            }
            // The iterator whose step is one step of member m.
            let name = &self.stmt_names[s];
            let its = &self.iter_names[s];
            let mut next = None;
            for k in 0..its.len() {
                let after: Vec<String> = its
                    .iter()
                    .enumerate()
                    .map(|(j, v)| {
                        if j == k {
                            format!("{v} + 1")
                        } else {
                            v.clone()
                        }
                    })
                    .collect();
                let r = UnionMap::read_from_str(
                    isl,
                    &format!(
                        "{prefix}{{ {name}[{}] -> {name}[{}] }}",
                        its.join(", "),
                        after.join(", ")
                    ),
                )
                .isl("reading an iterator step")?
                .intersect_domain(dom.copy().isl("copying a set")?)
                .isl("restricting a step")?
                .intersect_range(dom.copy().isl("copying a set")?)
                .isl("restricting a step")?;
                if r.is_empty().isl("testing a map for emptiness")? {
                    continue;
                }
                let moves = r
                    .copy()
                    .isl("copying a map")?
                    .apply_domain(sched_s.copy().isl("copying a map")?)
                    .isl("scheduling a step")?
                    .apply_range(sched_s.copy().isl("copying a map")?)
                    .isl("scheduling a step")?
                    .deltas()
                    .isl("a step's schedule distance")?;
                if moves.is_equal(&unit).isl("comparing a step")? {
                    next = Some(r);
                    break;
                }
            }
            let Some(next) = next else { continue };
            for a in self.stmt_reads[s]
                .iter()
                .chain(std::iter::once(&self.stmt_writes[s]))
            {
                let acc = UnionMap::from_map(a.map.copy().isl("copying an access")?)
                    .isl("an access as a union map")?;
                let moved = next
                    .copy()
                    .isl("copying a map")?
                    .apply_domain(acc.copy().isl("copying an access")?)
                    .isl("accessed before a step")?
                    .apply_range(acc)
                    .isl("accessed after a step")?;
                if moved.is_empty().isl("testing a map for emptiness")? {
                    continue;
                }
                out.push(AccessStep {
                    stmt: s,
                    tensor: a.tensor,
                    deltas: moved.deltas().isl("access steps")?,
                });
            }
        }
        Ok(out)
    }

    /// `{ T[0, …, 0]; T[0, …, 1, …, 0] }` for the tensor named `name` of rank `rank`:
    /// standing still, or one step along dimension `d` (with `d = rank - 1`, the steps a
    /// contiguous access makes).
    pub fn unit_steps(
        &self,
        isl: &isl_rs::Context,
        name: &str,
        rank: usize,
        d: usize,
    ) -> miette::Result<UnionSet> {
        let still = vec!["0"; rank];
        let mut by_one = still.clone();
        if let Some(x) = by_one.get_mut(d) {
            *x = "1";
        }
        UnionSet::read_from_str(
            isl,
            &format!(
                "{}{{ {name}[{}]; {name}[{}] }}",
                self.param_prefix(),
                still.join(", "),
                by_one.join(", ")
            ),
        )
        .isl("reading the steps along a dimension")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_aff_minimal_parens() {
        let it = vec!["h".to_string(), "kh".to_string()];
        let pa = vec!["H".to_string(), "KH".to_string()];
        let e = Aff::Add(
            Box::new(Aff::Sub(Box::new(Aff::Param(0)), Box::new(Aff::Param(1)))),
            Box::new(Aff::Const(1)),
        );
        assert_eq!(display_aff(&e, &it, &pa), "H - KH + 1");
        let e = Aff::Sub(
            Box::new(Aff::Iter(0)),
            Box::new(Aff::Add(Box::new(Aff::Iter(1)), Box::new(Aff::Const(-1)))),
        );
        assert_eq!(display_aff(&e, &it, &pa), "h - (kh - 1)");
        let e = Aff::Mul(
            2,
            Box::new(Aff::Add(Box::new(Aff::Iter(0)), Box::new(Aff::Iter(1)))),
        );
        assert_eq!(display_aff(&e, &it, &pa), "2 * (h + kh)");
        let e = Aff::Mod(Box::new(Aff::FloorDiv(Box::new(Aff::Iter(0)), 4)), 3);
        assert_eq!(display_aff(&e, &it, &pa), "floordiv(h, 4) % 3");
    }
}
