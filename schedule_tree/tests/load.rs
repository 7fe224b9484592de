//! Loading trees from users' YAML files: good files load, bad ones give located errors.

use polyhedral::diag::{render_plain, SourceFile};
use polyhedral::isl::ffi::schedule_to_block_yaml;
use polyhedral::isl::Ctx;
use schedule_tree::{Mark, NodeKind, ScheduleTree};

fn load(name: &str, text: &str) -> miette::Result<ScheduleTree> {
    let ctx = Ctx::new();
    ScheduleTree::from_yaml_file(&ctx, &SourceFile::new(name, text))
}

fn error(name: &str, text: &str) -> String {
    let e = load(name, text).expect_err("the file is rejected");
    render_plain(e.as_ref())
}

const BLOCK: &str = r#"# a hand-edited tree
domain: "[N] -> { S_0[i] : 0 <= i < N; S_1[i] : 0 <= i < N }"
child:
  sequence:
  - filter: "[N] -> { S_0[i] }"   # the producer
    child:
      mark: "skipped"
      child:
        leaf
  - filter: "[N] -> { S_1[i] }"
    child:
      schedule: "[N] -> [{ S_1[i] -> [(i)] }]"
      permutable: 1
      coincident: [ 1 ]
"#;

const FLOW: &str = r#"{ domain: "[N] -> { S_0[i] : 0 <= i < N; S_1[i] : 0 <= i < N }",
  child: { sequence: [
    { filter: "[N] -> { S_0[i] }", child: { mark: "skipped", child: { leaf } } },
    { filter: "[N] -> { S_1[i] }",
      child: { schedule: "[N] -> [{ S_1[i] -> [(i)] }]", permutable: 1, coincident: [ 1 ] } } ] } }
"#;

#[test]
fn block_and_flow_files_load_to_the_same_tree() {
    let a = load("block.yaml", BLOCK).unwrap();
    let b = load("flow.yaml", FLOW).unwrap();
    assert_eq!(a, b);
    assert_eq!(
        a.to_tree_text(),
        "Domain {S_0(i) : 0 <= i < N; S_1(i) : 0 <= i < N}\n  Sequence\n    Filter {S_0(i)}\n      Mark \"skipped\"\n    Filter {S_1(i)}\n      Band {S_1 -> (i)} permutable coincident=[1]\n"
    );
    assert_eq!(a.marks(), vec![(vec![0, 0, 0], Mark::Skipped)]);
}

#[test]
fn isl_printed_trees_load_back() {
    // What `polyc dump --format isl` prints for a tree without marks at leaves.
    let ctx = Ctx::new();
    let t = load("block.yaml", BLOCK).unwrap();
    let NodeKind::Band(_) = &t.node_at(&[0, 1, 0]).unwrap().kind else {
        panic!("expected a band");
    };
    let mut t2 = t.clone();
    // Drop the mark at a leaf: isl prints it without a child and cannot read that back.
    t2.node_at_mut(&[0, 0]).unwrap().children = vec![schedule_tree::Node::leaf()];
    let printed = t2.to_isl_yaml(&ctx).unwrap();
    let again =
        ScheduleTree::from_yaml_file(&ctx, &SourceFile::new("dump.yaml", printed.clone())).unwrap();
    assert_eq!(again, t2);
    assert_eq!(
        schedule_to_block_yaml(&again.to_isl(&ctx).unwrap()).unwrap(),
        printed
    );
}

#[test]
fn unknown_key() {
    insta::assert_snapshot!(error(
        "tree.yaml",
        "domain: \"{ S_0[i] : 0 <= i < 8 }\"\nchild:\n  schedul: \"[{ S_0[i] -> [(i)] }]\"\n"
    ));
}

#[test]
fn key_in_the_wrong_node() {
    insta::assert_snapshot!(error(
        "tree.yaml",
        "domain: \"{ S_0[i] : 0 <= i < 8 }\"\nchild:\n  filter: \"{ S_0[i] }\"\n  permutable: 1\n"
    ));
}

#[test]
fn isl_syntax_error_in_a_set() {
    insta::assert_snapshot!(error(
        "tree.yaml",
        "domain: \"{ S_0[i] : 0 <= i < 8 }\"\nchild:\n  sequence:\n  - filter: \"{ S_0[i] : i < }\"\n"
    ));
}

#[test]
fn a_map_where_a_set_belongs() {
    insta::assert_snapshot!(error("tree.yaml", "{ domain: \"{ S_0[i] -> S_1[i] }\" }\n"));
}

#[test]
fn bad_band_schedule() {
    insta::assert_snapshot!(error(
        "tree.yaml",
        "domain: \"{ S_0[i] : 0 <= i < 8 }\"\nchild:\n  schedule: \"{ S_0[i] -> [i] }\"\n  coincident: [ 1 ]\n"
    ));
}

#[test]
fn unknown_mark() {
    insta::assert_snapshot!(error(
        "tree.yaml",
        "domain: \"{ S_0[i] : 0 <= i < 8 }\"\nchild:\n  mark: \"mem:4L\"\n  child:\n    leaf\n"
    ));
}

#[test]
fn a_mark_without_child_as_isl_prints_it() {
    insta::assert_snapshot!(error(
        "tree.yaml",
        "domain: \"{ S_0[i] : 0 <= i < 8 }\"\nchild:\n  mark: \"skipped\"\n"
    ));
}

#[test]
fn unterminated_string() {
    insta::assert_snapshot!(error(
        "tree.yaml",
        "domain: \"{ S_0[i] : 0 <= i < 8 }\nchild:\n  leaf\n"
    ));
}

#[test]
fn bad_indentation() {
    insta::assert_snapshot!(error(
        "tree.yaml",
        "domain: \"{ S_0[i] : 0 <= i < 8 }\"\n  child:\n  schedule: \"[{ S_0[i] -> [(i)] }]\"\n"
    ));
}

#[test]
fn unquoted_set() {
    insta::assert_snapshot!(error("tree.yaml", "domain: { S_0[i] : 0 <= i < 8 }\n"));
}

#[test]
fn sequence_child_that_is_not_a_filter() {
    insta::assert_snapshot!(error(
        "tree.yaml",
        "domain: \"{ S_0[i] : 0 <= i < 8 }\"\nchild:\n  sequence:\n  - schedule: \"[{ S_0[i] -> [(i)] }]\"\n"
    ));
}

#[test]
fn root_that_is_not_a_domain() {
    insta::assert_snapshot!(error("tree.yaml", "filter: \"{ S_0[i] }\"\n"));
}

#[test]
fn flow_mapping_missing_a_comma() {
    insta::assert_snapshot!(error(
        "tree.yaml",
        "{ domain: \"{ S_0[i] }\" child: { schedule: \"[{ S_0[i] -> [(i)] }]\" } }\n"
    ));
}

#[test]
fn an_empty_file() {
    insta::assert_snapshot!(error("tree.yaml", "# nothing\n"));
}

#[test]
fn duplicate_key() {
    insta::assert_snapshot!(error(
        "tree.yaml",
        "domain: \"{ S_0[i] : 0 <= i < 8 }\"\nchild:\n  schedule: \"[{ S_0[i] -> [(i)] }]\"\n  permutable: 1\n  permutable: 0\n"
    ));
}

#[test]
fn the_test_trees_of_every_shape_load_from_isl_dumps() {
    // Everything isl prints (except a mark directly above a leaf) loads back unchanged.
    let ctx = Ctx::new();
    let text = "domain: \"[N] -> { S_0[i] : 0 <= i < N; S_1[i, j] : 0 <= i < N and 0 <= j < N }\"\nchild:\n  context: \"[N] -> {  : N >= 2 }\"\n  child:\n    schedule: \"[N] -> [{ S_0[i] -> [(i)]; S_1[i, j] -> [(i)] }]\"\n    options: \"{ separate[0] }\"\n    child:\n      set:\n      - filter: \"[N] -> { S_0[i] }\"\n        child:\n          guard: \"[N] -> { [t] : N >= 4 }\"\n      - filter: \"[N] -> { S_1[i, j] }\"\n        child:\n          mark: \"mem:L1\"\n          child:\n            extension: \"[N] -> { [t] -> C[x] : 0 <= x <= 3 }\"\n            child:\n              sequence:\n              - filter: \"[N] -> { C[x] }\"\n              - filter: \"[N] -> { S_1[i, j] }\"\n                child:\n                  contraction: \"[N] -> { S_1[i, j] -> T[(i), (j)] }\"\n                  expansion: \"[N] -> { T[i, j] -> S_1[i, j] }\"\n";
    let t = ScheduleTree::from_yaml_file(&ctx, &SourceFile::new("t.yaml", text)).unwrap();
    let printed = t.to_isl_yaml(&ctx).unwrap();
    // isl reorders the statements of a union (hash order) and nothing else.
    assert_eq!(
        printed,
        text.replace(
            "S_0[i] : 0 <= i < N; S_1[i, j] : 0 <= i < N and 0 <= j < N",
            "S_1[i, j] : 0 <= i < N and 0 <= j < N; S_0[i] : 0 <= i < N"
        )
        .replace(
            "{ S_0[i] -> [(i)]; S_1[i, j] -> [(i)] }",
            "{ S_1[i, j] -> [(i)]; S_0[i] -> [(i)] }"
        )
    );
    let again =
        ScheduleTree::from_yaml_file(&ctx, &SourceFile::new("p.yaml", printed.clone())).unwrap();
    assert_eq!(again, t);
}

#[test]
fn a_stray_non_ascii_character() {
    insta::assert_snapshot!(error("tree.yaml", "{ domain: \"{ S_0[i] }\" é }\n"));
}
