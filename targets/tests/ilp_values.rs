//! Property: random dependence-carrying programs (stencils, chains, reductions,
//! recurrences, matmuls; `polyhedral/tests/ilp_support`) scheduled by the ILP scheduler
//! compute the same values as the reference interpreter, through lower → C → cc → run.
//!
//! `targets` has no proptest dependency, so the cases come from a fixed-seed generator
//! (every case is reproducible from its number, printed on failure).

#[path = "../../polyhedral/tests/ilp_support/mod.rs"]
mod ilp_support;

use polyhedral::data::{compare, generate_inputs, TensorData};
use polyhedral::deps::{check_schedule, Deps};
use polyhedral::diag::{render_plain, SourceFile};
use polyhedral::ilp::{ilp_schedule, Fuse, IlpOptions};
use polyhedral::interp::interpret;
use polyhedral::ir::{Program, TensorRole};
use polyhedral::isl::Ctx;
use polyhedral::scop::Scop;
use targets::{compile_c, emit_c, lower, run, CcOptions, EmitOptions};

/// xorshift64*.
struct Gen(u64);
impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// Outputs, then inputs written in place.
fn compared(prog: &Program) -> Vec<usize> {
    let mut v = prog.outputs.clone();
    for (i, t) in prog.tensors.iter().enumerate() {
        if t.role == TensorRole::Input && prog.stmts.iter().any(|s| s.lhs == i) {
            v.push(i);
        }
    }
    v
}

fn check_case(case: u64) {
    let mut g = Gen(0x9e37_79b9_7f4a_7c15 ^ (case + 1).wrapping_mul(0x1234_5678_9abc_def1));
    let t = (g.next() % ilp_support::TEMPLATES as u64) as usize;
    let k: Vec<u8> = (0..8).map(|_| g.next() as u8).collect();
    let fuse = [Fuse::Max, Fuse::Smart, Fuse::None][(g.next() % 3) as usize];
    let no_skew = g.next() & 1 == 0;
    let (text, sizes) = ilp_support::program(t, &k);
    let what = format!("case {case} (fuse {fuse}, no_skew {no_skew}):\n{text}{sizes:?}");

    let src = SourceFile::new("p.tc", text.clone());
    let prog = polyhedral::lang::compile(&src, None)
        .unwrap_or_else(|e| panic!("{what}\n{}", render_plain(e.as_ref())));
    let values: Vec<i64> = prog
        .params
        .iter()
        .map(|p| sizes.iter().find(|(n, _)| *n == p.name).expect("size").1)
        .collect();
    let ctx = Ctx::new();
    let bound: Vec<Option<i64>> = values.iter().map(|v| Some(*v)).collect();
    let scop = Scop::build(&ctx, &prog, &bound, &src).expect("model");
    let deps = Deps::compute(&scop).expect("deps");
    let opts = IlpOptions {
        fuse,
        no_skew,
        ..IlpOptions::default()
    };
    let schedule = ilp_schedule(&ctx, &scop, &deps, &opts)
        .unwrap_or_else(|e| panic!("{what}\n{}", render_plain(e.as_ref())));
    assert_eq!(check_schedule(&deps, &schedule).unwrap(), Ok(()), "{what}");

    let kernel = lower(&ctx, &prog, &schedule).unwrap_or_else(|e| panic!("{what}\n{e:?}"));
    let c = emit_c(
        &prog,
        &scop.param_texts,
        &kernel,
        &EmitOptions {
            poison_temps: true,
            ..Default::default()
        },
    );
    let compiled =
        compile_c(&c, &CcOptions::default()).unwrap_or_else(|e| panic!("{what}\n{e:?}\n{c}"));
    let (inputs, scalars) = generate_inputs(&prog, &values, case);
    let mut got: Vec<TensorData> = inputs.clone();
    run(&compiled, &prog, &values, &mut got, &scalars).unwrap_or_else(|e| panic!("{what}\n{e:?}"));
    let mut want = inputs;
    interpret(&prog, &values, &mut want, &scalars).unwrap_or_else(|e| panic!("{what}\n{e:?}"));
    for tid in compared(&prog) {
        let cmp = compare(&want[tid], &got[tid]);
        assert!(
            cmp.ok,
            "{what}\ntensor {}: {} mismatches, first {:?}\n{c}",
            prog.tensors[tid].name, cmp.mismatches, cmp.first_mismatch
        );
    }
}

#[test]
fn ilp_schedules_compute_the_interpreters_values() {
    for case in 0..48 {
        check_case(case);
    }
}
