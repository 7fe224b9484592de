//! Printing a pipelined loop (see [`crate::codegen::pipeline`]): prologue copies, then per
//! step a wait for the step's own copies, one barrier, the copies `s - 1` steps ahead into
//! the stage read last, and the compute; one barrier after the loop.

use std::fmt::Write;

use super::{indent, Emitter};
use crate::codegen::kir::{KExpr, KNode};

impl Emitter<'_> {
    /// Prints `n` as a pipeline when it is one of the kernel's pipelined loops; `false`
    /// (nothing printed) otherwise.
    pub(super) fn pipelined_for(&self, out: &mut String, n: &KNode, level: usize) -> bool {
        let Some((promos, stages)) = self.pipelined.get(&(n as *const KNode)) else {
            return false;
        };
        let stages = *stages;
        let KNode::For {
            iter,
            init,
            cond,
            step,
            ..
        } = n
        else {
            return false;
        };
        let shared = |p: usize| self.shared.contains(&p);
        let Some((copies, rest, _)) = crate::codegen::pipeline::split(n, &shared) else {
            return false;
        };
        let stage = format!("polyc_stage_{iter}");
        let next = format!("{iter}_next");
        let init_c = self.kexpr(init, 0);
        indent(out, level);
        let _ = writeln!(
            out,
            "{{ /* pipelined, {stages} stages: the copies of step {iter} + {} load while step {iter} computes */",
            (stages - 1) * step
        );
        // Prologue: the first `stages - 1` steps' copies, one group each.
        for j in 0..stages - 1 {
            indent(out, level + 1);
            out.push_str("{\n");
            indent(out, level + 2);
            let _ = writeln!(out, "const {} {iter} = {init_c} + {};", self.ix(), j * step);
            let into = self.issue_stage(&j.to_string(), stages);
            self.staged_copies(out, &copies, promos, &into, cond, level + 2);
            indent(out, level + 1);
            out.push_str("}\n");
            self.commit(out, level + 1);
        }
        indent(out, level + 1);
        let _ = writeln!(
            out,
            "for ({} {iter} = {init_c}; {}; {iter} += {step}) {{",
            self.ix(),
            self.kexpr(cond, 0)
        );
        indent(out, level + 2);
        let _ = writeln!(
            out,
            "const {} {stage} = (({iter} - ({init_c})) / {step}) % {stages};",
            self.ix()
        );
        // This step's copies have landed (all but the `stages - 2` most recent groups,
        // which are later steps'), and after the barrier every thread sees them, and
        // every thread has finished the last step, which read the stage refilled next.
        // `POLYC_PIPELINE_FAULT=no-wait` (tests only) drops the wait, which `run --check`
        // must catch in the mode where copies land at their wait.
        let fault = std::env::var("POLYC_PIPELINE_FAULT").ok();
        if fault.as_deref() != Some("no-wait") {
            self.wait(out, promos, &stage, stages, level + 2);
        }
        indent(out, level + 2);
        let _ = writeln!(out, "{}", self.dialect.block_sync());
        // The copies `stages - 1` steps ahead, into the stage the last step read.
        indent(out, level + 2);
        out.push_str("{\n");
        indent(out, level + 3);
        let _ = writeln!(
            out,
            "const {} {next} = {iter} + {};",
            self.ix(),
            (stages - 1) * step
        );
        let renamed: Vec<KNode> = copies.iter().map(|c| rename(c, iter, &next)).collect();
        let renamed_refs: Vec<&KNode> = renamed.iter().collect();
        let next_cond = cond.substitute(&|v| (v == iter.as_str()).then(|| KExpr::var(&next)));
        // `POLYC_PIPELINE_FAULT=same-stage` (tests only) writes the copies into the stage
        // being read, to show that `run --check` catches a broken pipeline.
        let next_stage = if fault.as_deref() == Some("same-stage") {
            stage.clone()
        } else {
            format!("({stage} + {}) % {stages}", stages - 1)
        };
        let next_stage = self.issue_stage(&next_stage, stages);
        self.staged_copies(
            out,
            &renamed_refs,
            promos,
            &next_stage,
            &next_cond,
            level + 3,
        );
        indent(out, level + 2);
        out.push_str("}\n");
        self.commit(out, level + 2);
        for p in promos {
            self.stage_expr.borrow_mut().insert(*p, stage.clone());
        }
        // The compute, without its trailing barrier: the next step's barrier separates
        // it from the next step's copies, and the one after the loop from what follows.
        let compute = rest.split_last().map_or(&rest[..], |(last, init)| {
            if matches!(last, KNode::Barrier) {
                init
            } else {
                &rest[..]
            }
        });
        for r in compute {
            self.node(out, r, level + 2);
        }
        for p in promos {
            self.stage_expr.borrow_mut().remove(p);
        }
        indent(out, level + 1);
        out.push_str("}\n");
        indent(out, level + 1);
        let _ = writeln!(out, "{}", self.dialect.block_sync());
        indent(out, level);
        out.push_str("}\n");
        true
    }

    /// The copies of one step into stage `stage`, under the loop's condition `cond`.
    fn staged_copies(
        &self,
        out: &mut String,
        copies: &[&KNode],
        promos: &[usize],
        stage: &str,
        cond: &KExpr,
        level: usize,
    ) {
        indent(out, level);
        let _ = writeln!(out, "if ({}) {{", self.kexpr(cond, 0));
        for p in promos {
            self.stage_expr.borrow_mut().insert(*p, stage.to_string());
        }
        self.async_copies.set(true);
        for c in copies {
            self.node(out, c, level + 1);
        }
        self.async_copies.set(false);
        for p in promos {
            self.stage_expr.borrow_mut().remove(p);
        }
        indent(out, level);
        out.push_str("}\n");
    }

    /// The stage expression copies write: `stage` itself, or, for a dialect that emulates
    /// asynchronous copies, its shadow when the source is built to land copies at their
    /// wait ([`crate::codegen::cfamily::Dialect::async_land`]).
    fn issue_stage(&self, stage: &str, stages: i64) -> String {
        if self.dialect.async_land(&[], "0", stages).is_some() {
            format!("({stage}) + {} * {stages}", super::ASYNC_SHADOW)
        } else {
            stage.to_string()
        }
    }

    /// The wait for step `stage`'s copies: the dialect's wait for asynchronous copies, or
    /// the emulation's landing of that stage.
    fn wait(&self, out: &mut String, promos: &[usize], stage: &str, stages: i64, level: usize) {
        if let Some(wait) = self.dialect.async_wait_prior(stages - 2) {
            indent(out, level);
            let _ = writeln!(out, "{wait}");
        }
        let tiles: Vec<(String, i64)> = promos
            .iter()
            .filter_map(|&p| {
                let t = *self.promo_tensor.get(&p)?;
                Some((super::tile_name(p), self.stage_elems(p, t)))
            })
            .collect();
        if let Some(land) = self.dialect.async_land(&tiles, stage, stages) {
            for line in land.lines() {
                indent(out, level);
                let _ = writeln!(out, "{line}");
            }
        }
    }

    fn commit(&self, out: &mut String, level: usize) {
        if let Some(c) = self.dialect.async_commit() {
            indent(out, level);
            let _ = writeln!(out, "{c}");
        }
    }
}

/// `n` with loop iterator `from` read as `to` (the next step's copies).
fn rename(n: &KNode, from: &str, to: &str) -> KNode {
    n.clone()
        .map_exprs(&|e| e.substitute(&|v| (v == from).then(|| KExpr::var(to))))
}
