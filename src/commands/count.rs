//! `polyc count`: exact counts of a program as functions of its sizes.
//!
//! Per statement: the number of instances (the points of its domain) and the FLOPs (the
//! instances times [`flops_per_instance`]). Per tensor: the distinct elements read and
//! written (the points of the range of its read and write access relations). Everything
//! comes from the [`Scop`] built with the unbound sizes as isl parameters.
//!
//! - With symbolic sizes, barvinok ([`polyhedral::barvinok`], loaded at run time) counts
//!   them as Ehrhart quasi-polynomials in the sizes.
//! - With every size bound, polyc's own isl counts the points by enumeration
//!   (`isl_set_count_val`), and barvinok is not needed.
//!
//! Counts hold for the sizes where every size is at least 1 and every tensor has at least
//! one element (for the conv chain: `KH ≤ H` and `KW ≤ W`); the quasi-polynomials are
//! simplified under that context (`gist`), so they may differ from the true count outside.

use miette::{miette, Result};
use polyhedral::barvinok::{Barvinok, BarvinokError};
use polyhedral::diag::SourceFile;
use polyhedral::ir::Program;
use polyhedral::isl::ffi::count::set_count;
use polyhedral::isl::ffi::model::set_text;
use polyhedral::isl::isl_rs::Set;
use polyhedral::isl::{Ctx, IslResultExt};
use polyhedral::qpoly::QPoly;
use polyhedral::scop::Scop;

/// The counts of one statement. Counts are isl quasi-polynomial text over the symbolic
/// sizes (`[H, W] -> { H * W }`; a constant `{ 42 }` when every size is bound).
#[derive(Clone, Debug)]
pub struct StmtCount {
    /// `S_i`.
    pub name: String,
    /// Number of instances.
    pub instances: String,
    /// Arithmetic operations per instance ([`flops_per_instance`]).
    pub flops_per_instance: u64,
    /// `instances × flops_per_instance`.
    pub flops: String,
}

/// The distinct elements of one tensor that the program reads and writes.
#[derive(Clone, Debug)]
pub struct TensorCount {
    /// The tensor's name.
    pub name: String,
    /// Distinct elements read (`None`: never read).
    pub read: Option<String>,
    /// Distinct elements written (`None`: never written).
    pub written: Option<String>,
}

/// Every count of one `def`.
#[derive(Clone, Debug)]
pub struct Counts {
    /// The `def`'s name.
    pub program: String,
    /// The symbolic sizes (empty when every size is bound).
    pub symbolic: Vec<String>,
    /// The bound sizes and their values.
    pub bound: Vec<(String, i64)>,
    /// The parameter context the counts hold in (isl text).
    pub context: String,
    /// Per statement, in program order.
    pub stmts: Vec<StmtCount>,
    /// Per tensor, in declaration order.
    pub tensors: Vec<TensorCount>,
    /// The FLOPs of all statements.
    pub total_flops: String,
}

pub use polyhedral::ir::flops_per_instance;

/// Loads `program` (the `def` `entry`), binds `params`, and counts.
pub fn count_file(program: &str, entry: Option<&str>, params: &[(String, i64)]) -> Result<Counts> {
    let source = SourceFile::read(program)?;
    let prog = polyhedral::lang::compile(&source, entry)?;
    let values = crate::pipeline::stages::bind_params(&prog, params)?;
    let ctx = Ctx::new();
    let scop = Scop::build(&ctx, &prog, &values, &source)?;
    count(&prog, &scop)
}

/// How the points of a set are counted: barvinok for symbolic sizes, isl's enumeration
/// for bound ones.
enum Counter {
    Barvinok(Box<Barvinok>, String),
    Enumerate,
}

impl Counter {
    /// The number of points of `set`, as quasi-polynomial text.
    fn card(&self, set: Set) -> Result<String> {
        match self {
            Counter::Barvinok(b, context) => {
                let q = b.set_card(&set_text(&set)).map_err(barvinok_error)?;
                b.gist_params(&q, context).map_err(barvinok_error)
            }
            Counter::Enumerate => {
                let n = set_count(&set).ok_or_else(|| {
                    miette!(
                        help = "this is an internal error in polyc's use of isl; please report it with the program",
                        "isl could not count the points of `{}`",
                        set_text(&set)
                    )
                })?;
                Ok(format!("{{ {n} }}"))
            }
        }
    }
    fn scale(&self, q: &str, k: u64) -> Result<String> {
        match self {
            Counter::Barvinok(b, _) => b.scale(q, k as i64).map_err(barvinok_error),
            Counter::Enumerate => Ok(format!("{{ {} }}", constant(q)? * k as i128)),
        }
    }
    fn add(&self, a: &str, b: &str) -> Result<String> {
        match self {
            Counter::Barvinok(bv, _) => bv.add(a, b).map_err(barvinok_error),
            Counter::Enumerate => Ok(format!("{{ {} }}", constant(a)? + constant(b)?)),
        }
    }
}

/// The integer of a constant `{ n }`.
fn constant(q: &str) -> Result<i128> {
    let p = QPoly::parse(q).map_err(|e| miette!("{e}"))?;
    match p.eval(&[]) {
        Some(r) if r.den == 1 => Ok(r.num),
        _ => Err(miette!("internal error: `{q}` is not an integer constant")),
    }
}

/// A barvinok failure as a diagnostic with its remedy.
pub fn barvinok_error(e: BarvinokError) -> miette::Report {
    miette!(help = e.help(), "{e}")
}

/// Counts the statements and tensors of `prog` in its model `scop`.
pub fn count(prog: &Program, scop: &Scop) -> Result<Counts> {
    // The context: every size ≥ 1 (the Scop's) and every tensor non-empty.
    let tiling::symbolic::SizeContext {
        set: context,
        text: context_text,
    } = tiling::symbolic::SizeContext::of(scop)?;
    let counter = if scop.symbolic.is_empty() {
        Counter::Enumerate
    } else {
        let b = Barvinok::load().map_err(barvinok_error)?;
        Counter::Barvinok(Box::new(b), context_text.clone())
    };
    let restrict = |s: &Set| -> Result<Set> {
        s.copy()
            .isl("copying a set")?
            .intersect_params(context.copy().isl("copying the context")?)
            .isl("restricting a set to the context")
    };

    let mut stmts = Vec::with_capacity(prog.stmts.len());
    let mut total: Option<String> = None;
    for (i, stmt) in prog.stmts.iter().enumerate() {
        let instances = counter.card(restrict(&scop.stmt_domains[i])?)?;
        let k = flops_per_instance(stmt);
        let flops = counter.scale(&instances, k)?;
        total = Some(match total {
            None => flops.clone(),
            Some(t) => counter.add(&t, &flops)?,
        });
        stmts.push(StmtCount {
            name: stmt.name.clone(),
            instances,
            flops_per_instance: k,
            flops,
        });
    }
    let total_flops = match total {
        Some(t) => t,
        None => "{ 0 }".to_string(),
    };

    let mut tensors = Vec::with_capacity(prog.tensors.len());
    for (t, tensor) in prog.tensors.iter().enumerate() {
        let reads = scop.stmt_reads.iter().flatten().filter(|a| a.tensor == t);
        let writes = scop.stmt_writes.iter().filter(|a| a.tensor == t);
        let read = match accessed(reads.map(|a| &a.map))? {
            Some(s) => Some(counter.card(restrict(&s)?)?),
            None => None,
        };
        let written = match accessed(writes.map(|a| &a.map))? {
            Some(s) => Some(counter.card(restrict(&s)?)?),
            None => None,
        };
        tensors.push(TensorCount {
            name: tensor.name.clone(),
            read,
            written,
        });
    }

    let bound = prog
        .params
        .iter()
        .zip(&scop.param_values)
        .filter_map(|(p, v)| v.map(|v| (p.name.clone(), v)))
        .collect();
    Ok(Counts {
        program: prog.name.clone(),
        symbolic: scop.symbolic.clone(),
        bound,
        context: context_text,
        stmts,
        tensors,
        total_flops,
    })
}

/// The union of the ranges of some access relations of one tensor (`None` if none).
fn accessed<'a>(
    maps: impl Iterator<Item = &'a polyhedral::isl::isl_rs::Map>,
) -> Result<Option<Set>> {
    let mut out: Option<Set> = None;
    for m in maps {
        let r = m
            .copy()
            .isl("copying an access")?
            .range()
            .isl("computing the elements an access touches")?;
        out = Some(match out {
            None => r,
            Some(u) => u.union(r).isl("uniting accessed elements")?,
        });
    }
    Ok(out)
}

/// A count in readable form (`(H - KH + 1)·(W - KW + 1)·KH·KW`, or a number).
pub fn pretty(q: &str) -> Result<String> {
    Ok(QPoly::parse(q).map_err(|e| miette!("{e}"))?.pretty())
}

/// The report `polyc count` prints.
pub fn format_counts(c: &Counts) -> Result<String> {
    let mut out = String::new();
    let bound = c
        .bound
        .iter()
        .map(|(n, v)| format!("{n}={v}"))
        .collect::<Vec<_>>()
        .join(", ");
    if c.symbolic.is_empty() {
        if bound.is_empty() {
            out.push_str(&format!("{}: exact counts\n", c.program));
        } else {
            out.push_str(&format!("{}: exact counts at {bound}\n", c.program));
        }
    } else {
        out.push_str(&format!(
            "{}: exact counts in {}{} (for sizes ≥ 1 where every tensor is non-empty)\n",
            c.program,
            c.symbolic.join(", "),
            if bound.is_empty() {
                String::new()
            } else {
                format!(", at {bound}")
            }
        ));
    }
    out.push('\n');

    let mut rows = vec![vec![
        "statement".to_string(),
        "instances".to_string(),
        "FLOPs/instance".to_string(),
        "FLOPs".to_string(),
    ]];
    for s in &c.stmts {
        rows.push(vec![
            s.name.clone(),
            pretty(&s.instances)?,
            s.flops_per_instance.to_string(),
            pretty(&s.flops)?,
        ]);
    }
    rows.push(vec![
        "total".to_string(),
        String::new(),
        String::new(),
        pretty(&c.total_flops)?,
    ]);
    out.push_str(&table(&rows));
    out.push('\n');

    let mut rows = vec![vec![
        "tensor".to_string(),
        "elements read".to_string(),
        "elements written".to_string(),
    ]];
    for t in &c.tensors {
        let cell = |q: &Option<String>| -> Result<String> {
            match q {
                Some(q) => pretty(q),
                None => Ok("-".to_string()),
            }
        };
        rows.push(vec![t.name.clone(), cell(&t.read)?, cell(&t.written)?]);
    }
    out.push_str(&table(&rows));
    Ok(out)
}

/// Cells longer than this do not widen their column (the row's next cell follows two
/// spaces after them).
const MAX_COLUMN: usize = 48;

/// Left-aligned columns, two spaces apart (widths in characters, at most [`MAX_COLUMN`]),
/// no trailing spaces.
fn table(rows: &[Vec<String>]) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> = (0..n)
        .map(|k| {
            rows.iter()
                .filter_map(|r| r.get(k))
                .map(|s| s.chars().count().min(MAX_COLUMN))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (k, cell) in r.iter().enumerate() {
            line.push_str(cell);
            if k + 1 < r.len() {
                let pad = width[k].saturating_sub(cell.chars().count()) + 2;
                line.push_str(&" ".repeat(pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
