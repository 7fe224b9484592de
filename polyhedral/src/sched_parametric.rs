//! isl's scheduler on the program with its large sizes as parameters: a shortcut before
//! the scaled instances of [`crate::sched_scaled`].
//!
//! With bound sizes, the sizes' values are constants of isl's scheduling problem, and on
//! some programs its cost hardly shrinks with them: heat-3d's problem takes about 0.3 s at
//! N = 32 as at N = 120 (a time-iterated stencil's proximity constraints), so the three
//! instances that carry its schedule over cost two of those runs one after the other, on
//! two cores. With the same sizes as parameters, in the context where each is at least
//! its base-instance value, isl schedules heat-3d in 40–80 ms: the constants are then
//! symbolic, and isl's problem is a small one.
//!
//! polyc only does this where every dependence is one-to-one (each piece relates one
//! instance to one other, as a stencil's shifts do: [`one_to_one`]). Then no instance
//! depends on a range of others whose length is a size, which is what makes the
//! parametric proximity cost count the sizes themselves: GEMM's reduction (`k < k'`, up
//! to `K`) is fused otherwise there, and on PolyBench 3mm then ran 12 % slower and
//! cholesky 40 %. (A one-to-one piece can still have a distance that grows with a size, a
//! transposed copy's `(i, j) -> (j, i)`: the checks at the real sizes keep such a schedule
//! valid, though not necessarily isl's choice at the real sizes.)
//!
//! So, for such programs, a worker schedules the program with the sizes that the scaled
//! instances move (every size of a scaled group) as parameters, for at most
//! [`PARAMETRIC_TIME`], while the compiling thread probes the real sizes; where the probe
//! gives nothing, polyc puts the real values in for the parameters ([`instantiate`]) and
//! keeps the result where it is a valid schedule of the real model with flags that hold
//! there (the checks a carried-over schedule passes). Otherwise the instances go on as
//! before. `--isl-option scale_parametric=0` leaves this step out.

use crate::deps::Deps;
use crate::isl::{Ctx, IslResultExt};
use crate::sched::{compute, with_settings, IslSchedOptions, SCHED_MAX_OPERATIONS};
use crate::sched_compute::{Computed, Limits};
use crate::scop::Scop;
use isl_rs::{Map, Set, UnionMap};

/// The longest isl's scheduler runs on the parametric model: isl's usual budget of one
/// run. (It takes 40–160 ms on PolyBench's stencils; with a budget of 150 ms it ran out
/// on a loaded machine, and the outcome then depended on the machine's load.)
pub const PARAMETRIC_TIME: std::time::Duration =
    std::time::Duration::from_millis(crate::sched::SCHED_TIME_BUDGET_MS);

/// isl's schedule of `scop` (the parametric model) in its context where each symbolic
/// size is at least its value in `at_least` (in [`Scop::symbolic`]'s order), with
/// `opts`' isl settings and at most [`PARAMETRIC_TIME`], as text; `None` when isl gives
/// none in that time. One run: none of the retries of [`crate::sched::run_isl`].
pub fn parametric_text(
    ctx: &Ctx,
    (scop, deps): (&Scop, &Deps),
    at_least: &[i64],
    opts: &IslSchedOptions,
) -> miette::Result<Option<String>> {
    let bounds: Vec<String> = scop
        .symbolic
        .iter()
        .zip(at_least)
        .map(|(name, v)| format!("{name} >= {v}"))
        .collect();
    let text = format!("{}{{ : {} }}", scop.param_prefix(), bounds.join(" and "));
    let context = Set::read_from_str(&ctx.isl, &text)
        .isl(&format!("reading `{text}`"))?
        .intersect(scop.context.copy().isl("copying the context")?)
        .isl("restricting the context to the scaled sizes")?;
    let validity = deps.validity()?;
    let limits = Limits {
        operations: opts.max_operations.unwrap_or(SCHED_MAX_OPERATIONS),
        time: PARAMETRIC_TIME,
        floor: 0,
        large_first: true,
    };
    with_settings(ctx, opts, || {
        Ok(match compute(ctx, scop, &validity, context, limits)? {
            Computed::Schedule(s) => {
                let text = crate::isl::ffi::model::schedule_text(&s);
                let _ = ctx.take_error();
                text
            }
            Computed::OutOfBudget | Computed::OutOfTime | Computed::NoSchedule(_) => None,
        })
    })
}

/// Whether every piece (basic relation) of `validity` is one-to-one: single-valued and
/// injective.
pub fn one_to_one(validity: &UnionMap) -> miette::Result<bool> {
    let maps = validity.get_map_list().isl("listing dependences")?;
    for m in 0..maps.size().isl("counting dependences")? {
        let pieces = maps
            .get_at(m)
            .isl("reading a dependence")?
            .get_basic_map_list()
            .isl("listing a dependence's pieces")?;
        for p in 0..pieces.size().isl("counting a dependence's pieces")? {
            let piece = Map::from_basic_map(pieces.get_at(p).isl("reading a piece")?)
                .isl("a piece as a map")?;
            if !piece.is_bijective().isl("testing a piece for one-to-one")? {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// `text` (a schedule of the parametric model, as isl prints it) with each parameter of
/// `names` replaced by its value in `values`, and the parameter tuple `[names] -> `
/// removed: the schedule's text at those sizes. `None` when a value is missing.
pub fn instantiate(text: &str, names: &[String], values: &[Option<i64>]) -> Option<String> {
    let text = text.replace(&format!("[{}] -> ", names.join(", ")), "");
    let bytes = text.as_bytes();
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'\'';
    let mut out = String::with_capacity(text.len());
    let (mut k, mut after_number) = (0, false);
    while k < bytes.len() {
        let c = bytes[k];
        let end = if c.is_ascii_alphabetic() || c == b'_' {
            (k..bytes.len())
                .find(|&e| !ident(bytes[e]))
                .unwrap_or(bytes.len())
        } else if c.is_ascii_digit() {
            (k..bytes.len())
                .find(|&e| !bytes[e].is_ascii_digit())
                .unwrap_or(bytes.len())
        } else {
            // (isl prints ASCII; any other byte is copied with the rest of its character.)
            k + text[k..].chars().next().map_or(1, char::len_utf8)
        };
        let word = &text[k..end];
        match names.iter().position(|n| n == word) {
            Some(p) => {
                // isl prints `2N` for 2 × N: the product needs its `*` once N is a number.
                if after_number {
                    out.push('*');
                }
                out.push_str(&format!("({})", values.get(p).copied().flatten()?));
            }
            None => out.push_str(word),
        }
        after_number = c.is_ascii_digit();
        k = end;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_become_their_values() {
        let names = vec!["N".to_string(), "T".to_string()];
        let text = "[N, T] -> { S_2[i] -> [(2T + i)]; S_0[t, i] -> [(t)] : 0 <= t < T and \
                    0 < i <= -2 + N }";
        assert_eq!(
            instantiate(text, &names, &[Some(120), Some(500)]).unwrap(),
            "{ S_2[i] -> [(2*(500) + i)]; S_0[t, i] -> [(t)] : 0 <= t < (500) and \
             0 < i <= -2 + (120) }"
        );
        // Names that only contain a parameter's name are left alone.
        let other = "[N] -> { S_1[i, N2, Nx] -> [(i + N2 + N_1)] }";
        assert_eq!(
            instantiate(other, &names[..1], &[Some(7)]).unwrap(),
            "{ S_1[i, N2, Nx] -> [(i + N2 + N_1)] }"
        );
        assert_eq!(instantiate(text, &names, &[Some(1), None]), None);
    }

    #[test]
    fn one_to_one_pieces() {
        let ctx = Ctx::new();
        let m = |t: &str| UnionMap::read_from_str(&ctx.isl, t).unwrap();
        // A stencil's shift, and a last step's copy.
        let shifts = m("{ S[t, i] -> S[t + 1, i - 1] : 0 <= t < 9 and 0 < i < 9; \
                        S[t, i] -> T[i] : t = 9 and 0 <= i < 9 }");
        assert!(one_to_one(&shifts).unwrap());
        // A reduction's order (each instance before every later one), and a broadcast.
        let reduction = m("{ S[i, k] -> S[i, k2] : 0 <= i < 9 and 0 <= k < k2 < 9 }");
        assert!(!one_to_one(&reduction).unwrap());
        let broadcast = m("{ S[i] -> T[i, j] : 0 <= i < 9 and 0 <= j < 9 }");
        assert!(!one_to_one(&shifts.union(broadcast).unwrap()).unwrap());
    }
}
