//! The model built from `.tc` source through the front end agrees with the hand-built IR.
mod model_support;

use model_support::*;
use polyhedral::deps::{DepKind, Deps};
use polyhedral::diag::SourceFile;
use polyhedral::isl::ffi::model::{union_map_text, union_set_text};
use polyhedral::isl::Ctx;
use polyhedral::scop::Scop;

fn texts(prog: &polyhedral::ir::Program, src: &SourceFile, vals: &[Option<i64>]) -> Vec<String> {
    let ctx = Ctx::new();
    let scop = Scop::build(&ctx, prog, vals, src).expect("model builds");
    let deps = Deps::compute(&scop).expect("deps");
    vec![
        union_set_text(&scop.domain),
        union_map_text(&scop.reads),
        union_map_text(&scop.writes),
        deps.text(DepKind::Raw),
        deps.text(DepKind::War),
        deps.text(DepKind::Waw),
    ]
}

fn same_model(case: Case, vals: &[Option<i64>]) {
    let prog = match polyhedral::lang::compile(&case.src, None) {
        Ok(p) => p,
        Err(e) => panic!("{}", polyhedral::diag::render_plain(e.as_ref())),
    };
    assert_eq!(
        prog.params, case.prog.params,
        "params of {}",
        case.prog.name
    );
    assert_eq!(
        texts(&prog, &case.src, vals),
        texts(&case.prog, &case.src, vals),
        "{}",
        case.prog.name
    );
}

#[test]
fn front_end_and_hand_built_models_agree() {
    same_model(matmul(), &symbolic(3));
    same_model(conv_chain(), &symbolic(4));
    same_model(conv_chain(), &bound(&[8, 8, 3, 3]));
    same_model(triangular(), &symbolic(1));
    same_model(chain(), &bound(&[5]));
}
