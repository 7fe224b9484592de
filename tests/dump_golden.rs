//! Golden schedule trees: `polyc dump` of the conv chain at every stage in every format,
//! and matmul with symbolic sizes.

mod common;
use common::*;

const CONV: &str = "examples/conv_chain.tc";
const CONV_PARAMS: &str = "H=16,W=16,KH=3,KW=3";

fn dump_conv(stage: &str, format: &str) -> String {
    polyc_ok(&[
        "dump",
        CONV,
        "--param",
        CONV_PARAMS,
        "--stage",
        stage,
        "--format",
        format,
    ])
}

macro_rules! golden {
    ($name:ident, $stage:literal, $format:literal) => {
        #[test]
        fn $name() {
            insta::assert_snapshot!(dump_conv($stage, $format));
        }
    };
}

golden!(conv_chain_initial_tree, "initial", "tree");
golden!(conv_chain_initial_isl, "initial", "isl");
golden!(conv_chain_initial_dot, "initial", "dot");
golden!(conv_chain_scheduled_tree, "scheduled", "tree");
golden!(conv_chain_scheduled_isl, "scheduled", "isl");
golden!(conv_chain_scheduled_dot, "scheduled", "dot");
golden!(conv_chain_final_tree, "final", "tree");
golden!(conv_chain_final_isl, "final", "isl");
golden!(conv_chain_final_dot, "final", "dot");

#[test]
fn matmul_symbolic_scheduled_tree() {
    insta::assert_snapshot!(polyc_ok(&[
        "dump",
        "examples/matmul.tc",
        "--stage",
        "scheduled",
        "--format",
        "tree"
    ]));
}

/// `final` is the default stage and `tree` the default format.
#[test]
fn defaults_are_final_tree() {
    assert_eq!(
        polyc_ok(&["dump", CONV, "--param", CONV_PARAMS]),
        dump_conv("final", "tree")
    );
}

/// `-o FILE` writes exactly what standard output would show.
#[test]
fn dump_to_file() {
    let dir = tempdir();
    let path = dir.path().join("t.yaml");
    let p = path.display().to_string();
    let out = polyc_ok(&[
        "dump",
        CONV,
        "--param",
        CONV_PARAMS,
        "--stage",
        "scheduled",
        "--format",
        "isl",
        "-o",
        &p,
    ]);
    assert_eq!(out, "");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        dump_conv("scheduled", "isl")
    );
}

/// The initial tree is program order: one sequence of the five statements, each with its
/// own band over its iteration space.
#[test]
fn initial_is_program_order() {
    let t = dump_conv("initial", "tree");
    let filters: Vec<&str> = t
        .lines()
        .filter(|l| l.trim_start().starts_with("Filter"))
        .map(|l| l.split_whitespace().nth(1).unwrap())
        .collect();
    assert_eq!(
        filters,
        ["{S_0(h,", "{S_1(h,", "{S_2(h,", "{S_3(h,", "{S_4(h,"]
    );
    assert_eq!(t.matches("Band").count(), 5);
    assert_eq!(t.matches("Sequence").count(), 1);
}

/// The conv chain in program order, tiled by `S_4: 8@L1, 8@L1` and fused after tiling.
fn dump_fused_conv(stage: &str, format: &str, extra: &[&str]) -> String {
    let mut args = vec![
        "dump",
        CONV,
        "--param",
        "H=37,W=29,KH=3,KW=3",
        "--scheduler",
        "initial",
        "--tile-spec",
        "tests/fixtures/conv_chain_8x8.tiles",
        "--stage",
        stage,
        "--format",
        format,
    ];
    args.extend_from_slice(extra);
    polyc_ok(&args)
}

/// Tiled: S_4's band gets a tile band and a `mem:L1` mark; nothing is fused yet.
#[test]
fn conv_chain_tiled_tree() {
    insta::assert_snapshot!(dump_fused_conv("tiled", "tree", &[]));
}

/// Fused: an extension node under S_4's tile band pulls in S_1..S_3 per tile; their original
/// subtrees are marked skipped; S_0 (an in-place update whose tiles overlap) stays.
#[test]
fn conv_chain_fused_tree_isl_dot() {
    let tree = dump_fused_conv("fused", "tree", &[]);
    assert!(tree.contains("Extension {"), "{tree}");
    assert_eq!(tree.matches("Mark \"skipped\"").count(), 3, "{tree}");
    insta::assert_snapshot!("conv_chain_fused_tree", tree);
    insta::assert_snapshot!("conv_chain_fused_isl", dump_fused_conv("fused", "isl", &[]));
    insta::assert_snapshot!("conv_chain_fused_dot", dump_fused_conv("fused", "dot", &[]));
}

/// `--tile-fusion-one-nest`: S_0 joins the extension too (run once, in the first tile that
/// needs it), so every producer's original subtree is skipped: one loop nest.
#[test]
fn conv_chain_one_nest_tree() {
    let tree = dump_fused_conv("fused", "tree", &["--tile-fusion-one-nest"]);
    assert_eq!(tree.matches("Mark \"skipped\"").count(), 4, "{tree}");
    insta::assert_snapshot!(tree);
}

/// `polyc dump --stage tensorised --target gemmini`: the tiles the Gemmini code generator
/// uses, with the accumulator and scratchpad marks and the tensorised DIM×DIM×DIM band.
fn dump_tensorised(prog: &str, params: &str) -> String {
    polyc_ok(&[
        "dump",
        prog,
        "--param",
        params,
        "--target",
        "gemmini",
        "--stage",
        "tensorised",
    ])
}

#[test]
fn gemmini_gemm_tensorised_tree() {
    insta::assert_snapshot!(dump_tensorised(
        "examples/gemmini/gemm.tc",
        "M=37,N=29,K=23"
    ));
}

#[test]
fn gemmini_gemm_bias_relu_i8_tensorised_tree() {
    insta::assert_snapshot!(dump_tensorised(
        "examples/gemmini/gemm_bias_relu_i8.tc",
        "M=37,N=29,K=23"
    ));
}

#[test]
fn gemmini_padded_conv_tensorised_tree() {
    insta::assert_snapshot!(dump_tensorised(
        "examples/gemmini/conv2d_pad.tc",
        "N=1,H=15,W=13,CI=7,CO=9,KH=5,KW=5"
    ));
}

/// A host statement keeps its `final` subtree next to the tensorised one.
#[test]
fn gemmini_host_and_tensorised_parts_tree() {
    insta::assert_snapshot!(dump_tensorised(
        "examples/gemmini/gemm_relu_host.tc",
        "M=23,N=17,K=29"
    ));
}

/// The tensorised tree comes from the same plan as the code: its tile band follows a
/// tile spec (`S_1: 32@accumulator, 16@accumulator, 16@scratchpad`), and its `isl` form
/// reads back (the marks round-trip through their isl names).
#[test]
fn gemmini_tensorised_tree_follows_the_tile_spec_and_reads_back() {
    let dir = tempdir();
    let spec = write(
        dir.path(),
        "t.spec",
        "S_1: 32@accumulator, 16@accumulator, 16@scratchpad\n",
    );
    let args = |format: &'static str| {
        vec![
            "dump".to_string(),
            "examples/gemmini/gemm.tc".into(),
            "--param".into(),
            "M=37,N=29,K=23".into(),
            "--target".into(),
            "gemmini".into(),
            "--stage".into(),
            "tensorised".into(),
            "--tile-spec".into(),
            spec.clone(),
            "--format".into(),
            format.into(),
        ]
    };
    let a = args("tree");
    let tree = polyc_ok(&a.iter().map(String::as_str).collect::<Vec<_>>());
    for want in [
        "Band {S_0 -> (i - (i) mod 32, j - (j) mod 16); S_1 -> (i - (i) mod 32, j - (j) mod 16)}",
        "Band {S_1 -> (k - (k) mod 16)}",
        "Mark \"holds:accumulator:C:double\"",
        "Mark \"tensorised:gemm:ws\"",
    ] {
        assert!(tree.contains(want), "no `{want}` in:\n{tree}");
    }
    let a = args("isl");
    let isl = polyc_ok(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let yaml = write(dir.path(), "t.yaml", &isl);
    // Loaded as the `final` tree of the CPU target, it is a valid schedule of the program.
    polyc_ok(&[
        "dump",
        "examples/gemmini/gemm.tc",
        "--param",
        "M=37,N=29,K=23",
        "--load-tree",
        &format!("final={yaml}"),
        "--stage",
        "final",
    ]);
}

/// Another target has no tensorised tree: an error that says which target has one.
#[test]
fn tensorised_stage_needs_a_tensorising_target() {
    let e = polyc_err(&[
        "dump",
        "examples/gemmini/gemm.tc",
        "--param",
        "M=37,N=29,K=23",
        "--stage",
        "tensorised",
    ]);
    assert!(
        e.contains("there is no stage `tensorised`: this target does not tensorise"),
        "{e}"
    );
    assert!(e.contains("--target gemmini (or gemmini-fp32)"), "{e}");
}
