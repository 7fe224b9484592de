//! The magnitudes polyc's 64-bit index arithmetic can hold, proven with isl.
//!
//! Emitted code computes loop bounds, tile offsets and element offsets in `int64_t`. polyc
//! refuses (with a located error) sizes for which one of them could overflow:
//!
//! - every tensor holds at most [`MAX_MAGNITUDE`] bytes (so every element offset, and
//!   every byte offset, fits);
//! - every statement iterator, and every value of every schedule dimension, lies within
//!   ±[`MAX_MAGNITUDE`] (isl computes the exact bounds over the statement domains and the
//!   schedule's range).
//!
//! [`MAX_MAGNITUDE`] is 2^56, so the affine expressions of loop bounds and accesses, which
//! combine such values with small coefficients (their absolute values summing to at most
//! 2^6 = 64), stay below 2^62 and never overflow. No machine addresses 2^56 bytes (64 PiB).

use crate::diag::SourceFile;
use crate::ir::{Aff, Program};
use crate::isl::IslResultExt;
use isl_rs::{DimType, Schedule, Set};

/// The largest magnitude of a size, a tensor's byte count, an iterator or a schedule value:
/// 2^56.
pub const MAX_MAGNITUDE: i64 = 1 << 56;

/// `2^k` when `v` is a power of two, else the number: for messages.
pub fn magnitude_text(v: u128) -> String {
    if v.is_power_of_two() && v >= 1024 {
        format!("2^{}", v.trailing_zeros())
    } else {
        v.to_string()
    }
}

/// The value of a shape expression in 128-bit arithmetic; `None` when it mentions an
/// iterator or an unknown size, or overflows even 128 bits.
pub fn eval_wide(a: &Aff, sizes: &[Option<i64>]) -> Option<i128> {
    Some(match a {
        Aff::Const(c) => *c as i128,
        Aff::Iter(_) => return None,
        Aff::Param(p) => (*sizes.get(*p)?)? as i128,
        Aff::Add(x, y) => eval_wide(x, sizes)?.checked_add(eval_wide(y, sizes)?)?,
        Aff::Sub(x, y) => eval_wide(x, sizes)?.checked_sub(eval_wide(y, sizes)?)?,
        Aff::Mul(c, x) => (*c as i128).checked_mul(eval_wide(x, sizes)?)?,
        Aff::Neg(x) => eval_wide(x, sizes)?.checked_neg()?,
        Aff::FloorDiv(x, c) if *c > 0 => eval_wide(x, sizes)?.div_euclid(*c as i128),
        Aff::Mod(x, c) if *c > 0 => eval_wide(x, sizes)?.rem_euclid(*c as i128),
        Aff::FloorDiv(..) | Aff::Mod(..) => return None,
    })
}

/// The number of elements and of bytes of tensor `t` at `sizes` (one value per size),
/// computed without overflow (saturating at `u128::MAX`); `None` when an extent uses an
/// unknown size. A non-positive extent counts as 0.
pub fn tensor_bytes(prog: &Program, t: usize, sizes: &[Option<i64>]) -> Option<(u128, u128)> {
    let mut elems: u128 = 1;
    for e in &prog.tensors[t].shape {
        let v = eval_wide(e, sizes)?;
        elems = elems.saturating_mul(v.max(0) as u128);
    }
    Some((
        elems,
        elems.saturating_mul(prog.tensors[t].dtype.size_bytes() as u128),
    ))
}

/// Every tensor whose extents are known holds at most [`MAX_MAGNITUDE`] bytes; otherwise a
/// located error at its declaration.
pub fn check_tensor_sizes(
    prog: &Program,
    sizes: &[Option<i64>],
    src: &SourceFile,
) -> miette::Result<()> {
    for (t, ten) in prog.tensors.iter().enumerate() {
        let Some((elems, bytes)) = tensor_bytes(prog, t, sizes) else {
            continue;
        };
        if bytes > MAX_MAGNITUDE as u128 {
            return Err(src
                .error(
                    ten.span,
                    format!(
                        "tensor `{}` would hold {} elements ({} bytes) at these sizes, more than polyc's 64-bit index arithmetic allows ({} bytes)",
                        ten.name,
                        magnitude_text(elems),
                        magnitude_text(bytes),
                        magnitude_text(MAX_MAGNITUDE as u128)
                    ),
                    "too large",
                    "use smaller sizes: every tensor must fit in 2^56 bytes so that no index computation overflows",
                )
                .into());
        }
    }
    Ok(())
}

/// The first `(dimension, value)` of `set` whose dimension reaches beyond
/// ±[`MAX_MAGNITUDE`]. The set must have no parameters.
fn out_of_range(set: &Set) -> miette::Result<Option<(usize, String)>> {
    if set.is_empty().isl("testing a set for emptiness")? {
        return Ok(None);
    }
    let n = set.dim(DimType::Set).isl("counting dimensions")?;
    for d in 0..n {
        for max in [true, false] {
            let s = set.copy().isl("copying a set")?;
            let v = if max {
                s.dim_max_val(d).isl("bounding a dimension")?
            } else {
                s.dim_min_val(d).isl("bounding a dimension")?
            };
            let finite = v.is_int().isl("reading a bound")?;
            let big = !finite
                || v.cmp_si(MAX_MAGNITUDE).isl("comparing a bound")? > 0
                || v.cmp_si(-MAX_MAGNITUDE).isl("comparing a bound")? < 0;
            if big {
                let text = v
                    .to_str()
                    .map(str::to_string)
                    .unwrap_or_else(|_| "?".into());
                return Ok(Some((d as usize, text)));
            }
        }
    }
    Ok(None)
}

/// Every iterator of every statement (bound sizes only: `domains` have no parameters)
/// lies within ±[`MAX_MAGNITUDE`]; otherwise an error naming the statement and iterator.
pub fn check_domains(prog: &Program, domains: &[Set], src: &SourceFile) -> miette::Result<()> {
    for (st, dom) in prog.stmts.iter().zip(domains) {
        if let Some((d, v)) = out_of_range(dom)? {
            let it = st.iters.get(d).map_or("?", |i| i.name.as_str());
            return Err(src
                .error(
                    st.span,
                    format!(
                        "{}: the index `{it}` reaches {v} at these sizes, beyond what polyc's 64-bit index arithmetic allows (±2^56)",
                        st.name
                    ),
                    "index too large",
                    "use smaller sizes or ranges",
                )
                .into());
        }
    }
    Ok(())
}

/// Every value of every dimension of `schedule` over its domain (bound sizes only) lies
/// within ±[`MAX_MAGNITUDE`]; otherwise an error naming the statement and dimension.
pub fn check_schedule(schedule: &Schedule) -> miette::Result<()> {
    let smap = schedule
        .get_map()
        .isl("getting the schedule map")?
        .intersect_domain(schedule.get_domain().isl("getting the schedule domain")?)
        .isl("restricting the schedule map")?;
    let list = smap.get_map_list().isl("listing the schedule's maps")?;
    for i in 0..list.size().isl("counting maps")? {
        let m = list.get_at(i).isl("getting a map")?;
        // isl-rs reads a missing tuple name as a null string: ask first.
        let stmt = if m.has_tuple_name(DimType::In).isl("reading a tuple name")? {
            m.get_tuple_name(DimType::In)
                .map(|s| s.to_string())
                .unwrap_or_default()
        } else {
            "a statement".to_string()
        };
        let range = m.range().isl("the schedule's range")?;
        if let Some((d, v)) = out_of_range(&range)? {
            return Err(miette::miette!(
                help = "use smaller sizes, or --scheduler initial (the schedule combines indices into larger values)",
                "the schedule of {stmt} reaches {v} in its dimension {d} at these sizes, beyond what polyc's 64-bit index arithmetic allows (±2^56)"
            ));
        }
    }
    Ok(())
}
