//! Bugs that are known and not fixed yet: failures they explain are counted and listed,
//! but do not fail the run.
//!
//! **This list is temporary.** Each entry names an item of issue 22 being fixed elsewhere,
//! or a finding of this fuzzer (`FUZZ_FINDINGS.md`, `F<n>`); when its fix is merged,
//! delete the entry, so that the fuzzer reports the bug again if it comes back.
//! An entry matches narrowly: it checks the failure's class and message, the case's
//! settings, and where it can, that the failure goes away when the feature at fault is
//! switched off (a re-run of the case with one setting changed).

use crate::case::{Case, CcMode, Outcome, Tgt, Tiles};
use crate::gen::{Expr, Op};

/// Runs a variant of a case and says how it ended.
pub type Rerun<'a> = dyn FnMut(&Case) -> Outcome + 'a;

/// A known bug: a name, what it is, and a test of whether it explains a failure.
#[derive(Debug)]
pub struct Known {
    /// Short name, printed with each failure it explains.
    pub name: &'static str,
    /// The issue item and a one-line description.
    pub what: &'static str,
    /// Whether the bug explains `outcome` of `case`; `rerun` runs a variant of the case.
    pub explains: fn(&Case, &Outcome, &mut Rerun) -> bool,
}

/// Known bugs: issue 22's being fixed in parallel, then this fuzzer's findings. Empty this
/// list as the fixes land.
pub const KNOWN_BUGS: &[Known] = &[
    Known {
        name: "tile-fusion-transposed-product",
        what: "issue 22 item 1: post-tiling fusion miscompiles a transposed product under --scheduler initial/ilp",
        explains: tile_fusion_transposed,
    },
    Known {
        name: "gpu-partial-blocks",
        what: "issue 22 item 2: the GPU target leaves rows of a reduction's output unwritten with partial blocks and partial K steps",
        explains: gpu_partial_blocks,
    },
    Known {
        name: "isl-cannot-carry",
        what: "issue 22 item 11: isl finds no schedule (\"unable to carry dependences\") on small shapes",
        explains: isl_cannot_carry,
    },
    Known {
        name: "gpu-policy-too-many-threads",
        what: "issue 22 item 15: the GPU's default policy maps more threads to a block than the target allows, then refuses them",
        explains: gpu_policy_threads,
    },
    Known {
        name: "gcc-loop-vectorizer",
        what: "FUZZ_FINDINGS.md F1: gcc 12 -O3's loop vectoriser miscompiles a sequential stencil loop (passes with -fno-tree-loop-vectorize)",
        explains: gcc_loop_vectorizer,
    },
    Known {
        name: "ilp-no-legal-hyperplane",
        what: "FUZZ_FINDINGS.md F4: the ILP scheduler finds no hyperplane for a statement that overwrites one element from several indices",
        explains: ilp_no_hyperplane,
    },
    Known {
        name: "gpu-register-tile-shared",
        what: "FUZZ_FINDINGS.md F5: a GPU register tile that several threads read is filled by thread 0 only (passes without the spec)",
        explains: gpu_register_tile,
    },
];

/// The first known bug that explains `outcome`, if any (none when the environment sets
/// `POLYC_FUZZ_NO_KNOWN=1`: every failure is then shrunk and reported).
pub fn explain(case: &Case, outcome: &Outcome, rerun: &mut Rerun) -> Option<&'static Known> {
    let off = std::env::var("POLYC_FUZZ_NO_KNOWN").is_ok_and(|v| v == "1");
    if *outcome == Outcome::Pass || off {
        return None;
    }
    KNOWN_BUGS
        .iter()
        .find(|k| (k.explains)(case, outcome, rerun))
}

/// Whether some statement reduces (any operator but `=`).
fn has_reduction(case: &Case) -> bool {
    case.prog.stmts.iter().any(|s| s.op != Op::Assign)
}

/// Whether some access lists its index families out of order (a transposed layout).
fn reads_transposed(case: &Case) -> bool {
    // A read whose index families are not in increasing order.
    case.prog.stmts.iter().any(|s| {
        let mut found = false;
        s.rhs.visit(&mut |e| {
            if let Expr::Read { t, .. } = e {
                let fams: Vec<u8> = case.prog.tensors[*t].dims.iter().map(|d| d.fam).collect();
                found |= fams.windows(2).any(|w| w[0] > w[1]);
            }
        });
        let lhs: Vec<u8> = case.prog.tensors[s.lhs]
            .dims
            .iter()
            .map(|d| d.fam)
            .collect();
        found || lhs.windows(2).any(|w| w[0] > w[1])
    })
}

/// Item 1: a mismatch under `initial`/`ilp` with a transposed access that passes
/// with `--no-tile-fusion`.
fn tile_fusion_transposed(case: &Case, outcome: &Outcome, rerun: &mut Rerun) -> bool {
    if !matches!(outcome, Outcome::Mismatch(_))
        || case.cfg.scheduler == "isl"
        || case.cfg.no_tile_fusion
        || !reads_transposed(case)
    {
        return false;
    }
    let mut off = case.clone();
    off.cfg.no_tile_fusion = true;
    rerun(&off) == Outcome::Pass
}

/// Item 2's symptom: on the GPU, output elements the kernel never writes (they keep the
/// poison NaN, or the integer sentinel 0xA5A5A5A5 = -1515870811).
fn gpu_partial_blocks(case: &Case, outcome: &Outcome, _rerun: &mut Rerun) -> bool {
    let unwritten = |m: &str| m.contains("got NaN") || m.contains("got -1515870811");
    case.cfg.target == Tgt::Gpu
        && matches!(outcome, Outcome::Mismatch(m) if unwritten(m))
        && has_reduction(case)
}

/// Item 11: isl's "unable to carry dependences" where `--scheduler initial` passes.
fn isl_cannot_carry(case: &Case, outcome: &Outcome, rerun: &mut Rerun) -> bool {
    if case.cfg.scheduler != "isl"
        || !matches!(outcome, Outcome::CompileError(m) if m.contains("unable to carry dependences"))
    {
        return false;
    }
    let mut initial = case.clone();
    initial.cfg.scheduler = "initial".into();
    initial.cfg.isl_options.clear();
    rerun(&initial) == Outcome::Pass
}

/// F1: a CPU mismatch at `-O3` that passes with `-fno-tree-loop-vectorize`.
fn gcc_loop_vectorizer(case: &Case, outcome: &Outcome, rerun: &mut Rerun) -> bool {
    if case.cfg.target != Tgt::Cpu
        || case.cfg.cc != CcMode::Default
        || !matches!(outcome, Outcome::Mismatch(_))
    {
        return false;
    }
    let mut novec = case.clone();
    novec.cfg.cc = CcMode::NoLoopVectorize;
    rerun(&novec) == Outcome::Pass
}

/// F4: the ILP scheduler's "found no legal hyperplane".
fn ilp_no_hyperplane(case: &Case, outcome: &Outcome, _rerun: &mut Rerun) -> bool {
    case.cfg.scheduler == "ilp"
        && matches!(outcome, Outcome::CompileError(m) if m.contains("the ILP scheduler found no legal hyperplane"))
}

/// F5: a GPU mismatch with a spec that passes without it.
fn gpu_register_tile(case: &Case, outcome: &Outcome, rerun: &mut Rerun) -> bool {
    if case.cfg.target != Tgt::Gpu
        || case.cfg.tiles == Tiles::Default
        || !matches!(outcome, Outcome::Mismatch(_))
    {
        return false;
    }
    let mut plain = case.clone();
    plain.cfg.tiles = Tiles::Default;
    rerun(&plain) == Outcome::Pass
}

/// Item 15: the GPU policy maps more threads than a block may have.
fn gpu_policy_threads(case: &Case, outcome: &Outcome, _rerun: &mut Rerun) -> bool {
    case.cfg.target == Tgt::Gpu
        && matches!(outcome, Outcome::CompileError(m) if m.contains("threads to a block, more than the"))
}
