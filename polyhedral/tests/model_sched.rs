//! The initial and isl schedules, as isl block YAML.
mod model_support;

use model_support::*;
use polyhedral::deps::{check_schedule, Deps};
use polyhedral::isl::ffi::schedule_to_block_yaml;
use polyhedral::isl::isl_rs::Options;
use polyhedral::isl::Ctx;
use polyhedral::sched::{initial_schedule, isl_schedule, isl_schedule_or_initial, IslSchedOptions};
use polyhedral::scop::Scop;

fn schedules(case: &Case, vals: &[Option<i64>], opts: &[&str]) -> (String, String) {
    let ctx = Ctx::new();
    let scop = Scop::build(&ctx, &case.prog, vals, &case.src).expect("model builds");
    let deps = Deps::compute(&scop).expect("dependences");
    let init = initial_schedule(&scop, &deps).expect("initial schedule");
    let opts: Vec<String> = opts.iter().map(|s| s.to_string()).collect();
    let opts = IslSchedOptions::parse(&opts).expect("options");
    let isl = isl_schedule(&ctx, &scop, &deps, &opts).expect("isl schedule");
    assert_eq!(check_schedule(&deps, &isl).unwrap(), Ok(()));
    (
        schedule_to_block_yaml(&init).expect("prints"),
        schedule_to_block_yaml(&isl).expect("prints"),
    )
}

#[test]
fn matmul_schedules() {
    let (init, isl) = schedules(&matmul(), &bound(&[4, 5, 6]), &[]);
    insta::assert_snapshot!("matmul_initial_concrete", init);
    insta::assert_snapshot!("matmul_isl_concrete", isl);
    let (init, isl) = schedules(&matmul(), &symbolic(3), &[]);
    insta::assert_snapshot!("matmul_initial_symbolic", init);
    insta::assert_snapshot!("matmul_isl_symbolic", isl);
}

#[test]
fn conv_chain_schedules() {
    let (init, isl) = schedules(&conv_chain(), &bound(&[8, 8, 3, 3]), &[]);
    insta::assert_snapshot!("conv_chain_initial_concrete", init);
    insta::assert_snapshot!("conv_chain_isl_concrete", isl);
    let (init, isl) = schedules(&conv_chain(), &symbolic(4), &[]);
    insta::assert_snapshot!("conv_chain_initial_symbolic", init);
    insta::assert_snapshot!("conv_chain_isl_symbolic", isl);
    // serialize_sccs: no fusion across the chain.
    let (_, isl) = schedules(&conv_chain(), &bound(&[8, 8, 3, 3]), &["serialize_sccs=1"]);
    insta::assert_snapshot!("conv_chain_isl_serialize_sccs", isl);
}

#[test]
fn jacobi_schedules() {
    let (init, isl) = schedules(&jacobi(), &bound(&[10, 20]), &[]);
    // Not permutable (distance (1, -1)); i is parallel for a fixed t.
    assert_eq!(
        init,
        r#"domain: "{ S_0[t, i] : 0 <= t <= 8 and 0 < i <= 18 }"
child:
  schedule: "[{ S_0[t, i] -> [(t)] }, { S_0[t, i] -> [(i)] }]"
  coincident: [ 0, 1 ]
"#
    );
    // isl skews to make the band permutable.
    assert_eq!(
        isl,
        r#"domain: "{ S_0[t, i] : 0 <= t <= 8 and 0 < i <= 18 }"
child:
  schedule: "[{ S_0[t, i] -> [(t)] }, { S_0[t, i] -> [(t + i)] }]"
  permutable: 1
"#
    );
    let (init, isl) = schedules(&jacobi(), &symbolic(2), &[]);
    insta::assert_snapshot!("jacobi_initial_symbolic", init);
    insta::assert_snapshot!("jacobi_isl_symbolic", isl);
}

#[test]
fn triangular_and_sum_schedules() {
    let (init, isl) = schedules(&triangular(), &symbolic(1), &[]);
    insta::assert_snapshot!("trmv_initial_symbolic", init);
    insta::assert_snapshot!("trmv_isl_symbolic", isl);
    // A statement without iterators gets a filter and no band.
    let (init, _) = schedules(&sum(), &bound(&[4]), &[]);
    assert_eq!(
        init,
        r#"domain: "{ S_1[i] : 0 <= i <= 3; S_0[] }"
child:
  sequence:
  - filter: "{ S_0[] }"
  - filter: "{ S_1[i] : 0 <= i <= 3 }"
    child:
      schedule: "[{ S_1[i] -> [(i)] }]"
      permutable: 1
"#
    );
}

#[test]
fn empty_statements_get_no_filter() {
    let (init, _) = schedules(&conv_chain(), &bound(&[2, 8, 3, 3]), &[]);
    assert_eq!(
        init,
        r#"domain: "{ S_0[h, w] : 0 <= h <= 1 and 0 <= w <= 7 }"
child:
  schedule: "[{ S_0[h, w] -> [(h)] }, { S_0[h, w] -> [(w)] }]"
  permutable: 1
  coincident: [ 1, 1 ]
"#
    );
}

#[test]
fn isl_options_are_restored() {
    let ctx = Ctx::new();
    let get = |c: &Ctx| {
        (
            Options::get_schedule_serialize_sccs(&c.isl).unwrap(),
            Options::get_schedule_max_coefficient(&c.isl).unwrap(),
            Options::get_schedule_outer_coincidence(&c.isl).unwrap(),
            Options::get_schedule_algorithm(&c.isl).unwrap(),
        )
    };
    let before = get(&ctx);
    let m = matmul();
    let scop = Scop::build(&ctx, &m.prog, &bound(&[4, 5, 6]), &m.src).unwrap();
    let deps = Deps::compute(&scop).unwrap();
    let opts = IslSchedOptions::parse(&[
        "serialize_sccs=1".into(),
        "max_coefficient=2".into(),
        "outer_coincidence=1".into(),
        "algorithm=feautrier".into(),
    ])
    .unwrap();
    let s = isl_schedule(&ctx, &scop, &deps, &opts).unwrap();
    assert_eq!(check_schedule(&deps, &s).unwrap(), Ok(()));
    assert_eq!(get(&ctx), before);
    assert_eq!(before, (0, -1, 0, 0));
}

/// The Scop of an example program at bound sizes (`name=value` pairs).
fn example_scop(ctx: &Ctx, path: &str, sizes: &[(&str, i64)]) -> Scop {
    let src = polyhedral::diag::SourceFile::read(path).expect("the example reads");
    let prog = polyhedral::lang::compile_as(&src, None, Default::default()).expect("compiles");
    let vals: Vec<Option<i64>> = prog
        .params
        .iter()
        .map(|p| sizes.iter().find(|s| s.0 == p.name).map(|s| s.1))
        .collect();
    Scop::build(ctx, &prog, &vals, &src).expect("model builds")
}

/// Loops of extent 2 (a 2 × 2 window): coalesced whole, the reduction's dependences form a
/// polyhedron whose rational points isl cannot carry. The dependence analysis keeps them
/// apart (coalescing would add constraints), and isl schedules them at once; coalesced by
/// hand, they are split by program order, isl schedules them, validly, and says so; where
/// isl still finds nothing, program order.
#[test]
fn isl_schedules_dependences_it_cannot_carry_merged() {
    let ctx = Ctx::new();
    let sizes = [
        ("CI", 2),
        ("CO", 2),
        ("H", 2),
        ("W", 2),
        ("KH", 2),
        ("KW", 2),
    ];
    let scop = example_scop(&ctx, "../examples/conv2d_stride2.tc", &sizes);
    let mut deps = Deps::compute(&scop).unwrap();
    let opts = IslSchedOptions::default();
    let r = isl_schedule_or_initial(&ctx, &scop, &deps, &opts).unwrap();
    assert!(!r.fell_back);
    assert!(r.notes.is_empty(), "{:?}", r.notes);
    assert_eq!(check_schedule(&deps, &r.schedule).unwrap(), Ok(()));
    // Every dependence in one relation, coalesced whole, as the analysis did before it
    // kept pieces apart.
    let empty = deps
        .war
        .copy()
        .unwrap()
        .subtract(deps.war.copy().unwrap())
        .unwrap();
    deps.raw = deps
        .raw
        .copy()
        .unwrap()
        .union(deps.war.copy().unwrap())
        .unwrap()
        .union(deps.waw.copy().unwrap())
        .unwrap()
        .coalesce()
        .unwrap();
    deps.war = empty.copy().unwrap();
    deps.waw = empty;
    let s = isl_schedule(&ctx, &scop, &deps, &opts).expect("isl schedules");
    assert_eq!(check_schedule(&deps, &s).unwrap(), Ok(()));
    let r = isl_schedule_or_initial(&ctx, &scop, &deps, &opts).unwrap();
    assert!(!r.fell_back);
    assert_eq!(check_schedule(&deps, &r.schedule).unwrap(), Ok(()));
    assert_eq!(
        r.notes,
        [
            "note: isl's scheduler could not carry the dependences as merged by the dependence \
          analysis (unable to carry dependences); polyc split them by the loop that carries \
          each in program order, and isl scheduled them"
        ]
    );
    // No coefficient allowed: no isl schedule at all.
    let zero = IslSchedOptions::parse(&["max_coefficient=0".into()]).unwrap();
    let Err(err) = isl_schedule(&ctx, &scop, &deps, &zero) else {
        panic!("isl schedules with every coefficient 0");
    };
    assert_eq!(
        err.to_string(),
        "isl's scheduler found no schedule: unable to carry dependences"
    );
    let r = isl_schedule_or_initial(&ctx, &scop, &deps, &zero).unwrap();
    assert!(r.fell_back);
    assert_eq!(
        schedule_to_block_yaml(&r.schedule),
        schedule_to_block_yaml(&initial_schedule(&scop, &deps).unwrap())
    );
    assert_eq!(
        r.notes,
        [
            "note: isl's scheduler found no schedule (unable to carry dependences); polyc uses \
          the program-order schedule instead, as `--scheduler initial` does"
        ]
    );
}

/// Program order as 2d+1 vectors: positions among each body's items, loop indices
/// between them, then the statement's own iterators (lu: the init and the product of
/// `A = M·Mᵀ`, the diagonal, then three statements inside `for i`, two of them inside
/// `for j`).
#[test]
fn order_vectors_interleave_positions_and_loop_indices() {
    let ctx = Ctx::new();
    let scop = example_scop(&ctx, "../examples/polybench/lu.tc", &[("N", 5)]);
    let got: Vec<String> = scop.order_vectors().iter().map(|v| v.join(" ")).collect();
    assert_eq!(
        got,
        [
            "0 i j",
            "1 i j k",
            "2 i",
            "3 i 0 j 0 k",
            "3 i 0 j 1",
            "3 i 1 j 0 k",
        ]
    );
}
