//! Golden dumps and isl round trips of schedule trees with every node kind.

use polyhedral::isl::ffi::schedule_to_block_yaml;
use polyhedral::isl::Ctx;
use schedule_tree::{Band, Buffer, Mark, Node, NodeKind, ScheduleTree};

/// (a) One statement, one band.
const SINGLE: &str = r#"domain: "[N] -> { S_0[i, j] : 0 <= i < N and 0 <= j < N }"
child:
  schedule: "[N] -> [{ S_0[i, j] -> [(i)] }, { S_0[i, j] -> [(j)] }]"
  permutable: 1
  coincident: [ 1, 1 ]
"#;

/// (b) The conv chain: pad, convolve, bias, relu, store, one band each.
const CONV_CHAIN: &str = r#"domain: "[H, W, KH, KW] -> { S_0[h, w] : 0 <= h < H and 0 <= w < W; S_1[h, w, kh, kw] : 0 <= h <= H - KH and 0 <= w <= W - KW and 0 <= kh < KH and 0 <= kw < KW; S_2[h, w] : 0 <= h <= H - KH and 0 <= w <= W - KW; S_3[h, w] : 0 <= h <= H - KH and 0 <= w <= W - KW; S_4[h, w] : 0 <= h <= H - KH and 0 <= w <= W - KW }"
child:
  sequence:
  - filter: "[H, W, KH, KW] -> { S_0[h, w] }"
    child:
      schedule: "[H, W, KH, KW] -> [{ S_0[h, w] -> [(h)] }, { S_0[h, w] -> [(w)] }]"
      permutable: 1
      coincident: [ 1, 1 ]
  - filter: "[H, W, KH, KW] -> { S_1[h, w, kh, kw] }"
    child:
      schedule: "[H, W, KH, KW] -> [{ S_1[h, w, kh, kw] -> [(h)] }, { S_1[h, w, kh, kw] -> [(w)] }, { S_1[h, w, kh, kw] -> [(kh)] }, { S_1[h, w, kh, kw] -> [(kw)] }]"
      permutable: 1
      coincident: [ 1, 1, 0, 0 ]
  - filter: "[H, W, KH, KW] -> { S_2[h, w] }"
    child:
      schedule: "[H, W, KH, KW] -> [{ S_2[h, w] -> [(h)] }, { S_2[h, w] -> [(w)] }]"
      permutable: 1
      coincident: [ 1, 1 ]
  - filter: "[H, W, KH, KW] -> { S_3[h, w] }"
    child:
      schedule: "[H, W, KH, KW] -> [{ S_3[h, w] -> [(h)] }, { S_3[h, w] -> [(w)] }]"
      permutable: 1
      coincident: [ 1, 1 ]
  - filter: "[H, W, KH, KW] -> { S_4[h, w] }"
    child:
      schedule: "[H, W, KH, KW] -> [{ S_4[h, w] -> [(h)] }, { S_4[h, w] -> [(w)] }]"
      permutable: 1
      coincident: [ 1, 1 ]
"#;

/// (c) After post-tiling fusion: the producer's own subtree is marked skipped, and the
/// consumer's tile band pulls the producer's tile in through an extension node.
const FUSED: &str = r#"domain: "[H, W] -> { S_0[h, w] : 0 <= h < H and 0 <= w < W; S_1[h, w] : 0 <= h < H and 0 <= w < W }"
child:
  sequence:
  - filter: "[H, W] -> { S_0[h, w] }"
    child:
      mark: "skipped"
      child:
        schedule: "[H, W] -> [{ S_0[h, w] -> [(h)] }, { S_0[h, w] -> [(w)] }]"
        permutable: 1
        coincident: [ 1, 1 ]
  - filter: "[H, W] -> { S_1[h, w] }"
    child:
      schedule: "[H, W] -> [{ S_1[h, w] -> [(floor((h)/16))] }, { S_1[h, w] -> [(floor((w)/16))] }]"
      permutable: 1
      coincident: [ 1, 1 ]
      child:
        mark: "mem:L1"
        child:
          extension: "[H, W] -> { [t0, t1] -> S_0[h, w] : 0 <= h < H and 0 <= w < W and 16t0 <= h <= 15 + 16t0 and 16t1 <= w <= 15 + 16t1 }"
          child:
            sequence:
            - filter: "[H, W] -> { S_0[h, w] }"
              child:
                schedule: "[H, W] -> [{ S_0[h, w] -> [(h - 16*floor((h)/16))] }, { S_0[h, w] -> [(w - 16*floor((w)/16))] }]"
                permutable: 1
                coincident: [ 1, 1 ]
            - filter: "[H, W] -> { S_1[h, w] }"
              child:
                schedule: "[H, W] -> [{ S_1[h, w] -> [(h - 16*floor((h)/16))] }, { S_1[h, w] -> [(w - 16*floor((w)/16))] }]"
                permutable: 1
                coincident: [ 1, 1 ]
"#;

/// (d) Every node kind: domain, context, band with AST options (loop types and an isolate
/// option), set, filter (one with constraints, one with an unnamed dimension), guard,
/// marks, extension, expansion, sequence, and a piecewise band member.
const EVERY_KIND: &str = r#"domain: "[N] -> { S_0[i] : 0 <= i < N; S_1[i, j] : 0 <= i < N and 0 <= j < N; S_2[i0] : 0 <= i0 < N }"
child:
  context: "[N] -> { : N >= 2 }"
  child:
    schedule: "[N] -> [{ S_0[i] -> [(i)]; S_1[i, j] -> [(i)]; S_2[i0] -> [(i0)] }]"
    permutable: 1
    coincident: [ 1 ]
    options: "[N] -> { isolate[[] -> [t]] : 0 <= t < N - 1; separate[0]; [isolate[] -> unroll[0]] }"
    child:
      set:
      - filter: "[N] -> { S_0[i] : i >= 1 }"
        child:
          guard: "[N] -> { [t] : N >= 4 }"
          child:
            mark: "skipped"
            child:
              leaf
      - filter: "[N] -> { S_1[i, j]; S_2[i0] }"
        child:
          schedule: "[N] -> [{ S_1[i, j] -> [(j)] : j >= 1; S_1[i, j] -> [(0)] : j <= 0; S_2[i0] -> [(0)] }]"
          child:
            mark: "mem:shared"
            child:
              extension: "[N] -> { [t, u] -> C[x] : 0 <= x <= 3 }"
              child:
                sequence:
                - filter: "[N] -> { C[x] }"
                - filter: "[N] -> { S_1[i, j]; S_2[i0] }"
                  child:
                    contraction: "[N] -> { S_1[i, j] -> T[i, j]; S_2[i0] -> U[i0] }"
                    expansion: "[N] -> { T[i, j] -> S_1[i, j]; U[i0] -> S_2[i0] }"
                    child:
                      schedule: "[N] -> [{ T[i, j] -> [(i + j)]; U[i0] -> [(2i0)] }]"
"#;

fn load(ctx: &Ctx, yaml: &str) -> (isl_rs::Schedule, ScheduleTree) {
    let s = isl_rs::Schedule::read_from_str(&ctx.isl, yaml).expect("test YAML is valid isl");
    let t = ScheduleTree::from_isl(&s).expect("converts");
    (s, t)
}

/// isl → typed → isl prints identically, and typed → isl → typed is the identity.
fn assert_round_trip(yaml: &str) -> ScheduleTree {
    let ctx = Ctx::new();
    let (s, t) = load(&ctx, yaml);
    let before = schedule_to_block_yaml(&s).unwrap();
    let back = t.to_isl(&ctx).expect("typed tree converts back to isl");
    let after = schedule_to_block_yaml(&back).unwrap();
    assert_eq!(before, after);
    // polyc's YAML is isl's, with `leaf` under a mark that ends its branch, which isl
    // prints without a child but reads only with one; it reads back to the same schedule.
    let ours = t.to_isl_yaml(&ctx).unwrap();
    assert_eq!(ours, schedule_tree::leaf_under_marks(&before));
    let reread = isl_rs::Schedule::read_from_str(&ctx.isl, &ours).expect("polyc's YAML reads back");
    assert_eq!(schedule_to_block_yaml(&reread).unwrap(), before);
    assert_eq!(ScheduleTree::from_isl(&back).unwrap(), t);
    t
}

fn dumps(yaml: &str) -> String {
    let ctx = Ctx::new();
    let (_, t) = load(&ctx, yaml);
    format!(
        "--- isl\n{}--- tree\n{}--- dot\n{}",
        t.to_isl_yaml(&ctx).unwrap(),
        t.to_tree_text(),
        t.to_dot()
    )
}

#[test]
fn single_band_dumps() {
    insta::assert_snapshot!(dumps(SINGLE));
}

#[test]
fn conv_chain_dumps() {
    insta::assert_snapshot!(dumps(CONV_CHAIN));
}

#[test]
fn fused_tree_dumps() {
    insta::assert_snapshot!(dumps(FUSED));
}

#[test]
fn every_kind_dumps() {
    insta::assert_snapshot!(dumps(EVERY_KIND));
}

#[test]
fn every_tree_round_trips_through_isl() {
    for y in [SINGLE, CONV_CHAIN, FUSED, EVERY_KIND] {
        assert_round_trip(y);
    }
}

#[test]
fn every_node_kind_is_present_in_the_all_kinds_tree() {
    let t = assert_round_trip(EVERY_KIND);
    let mut kinds: Vec<&str> = t.nodes().iter().map(|n| n.kind.name()).collect();
    kinds.sort();
    kinds.dedup();
    assert_eq!(
        kinds,
        [
            "Band",
            "Context",
            "Domain",
            "Expansion",
            "Extension",
            "Filter",
            "Guard",
            "Leaf",
            "Mark",
            "Sequence",
            "Set"
        ]
    );
    assert_eq!(
        t.marks(),
        vec![
            (vec![0, 0, 0, 0, 0, 0], Mark::Skipped),
            (
                vec![0, 0, 0, 1, 0, 0],
                Mark::Mem(Buffer::from_static("shared"))
            ),
        ]
    );
}

#[test]
fn the_typed_conv_chain_has_the_expected_shape() {
    let t = assert_round_trip(CONV_CHAIN);
    assert_eq!(
        t.statements(),
        ["S_0", "S_1", "S_2", "S_3", "S_4"]
            .map(String::from)
            .to_vec()
    );
    let seq = t.node_at(&[0]).unwrap();
    assert_eq!(seq.kind, NodeKind::Sequence);
    assert_eq!(seq.children.len(), 5);
    assert_eq!(t.bands().len(), 5);
    // Domain, Sequence, 5 × (Filter, Band, Leaf)
    assert_eq!(t.node_count(), 17);
    let NodeKind::Band(b) = &t.node_at(&[0, 1, 0]).unwrap().kind else {
        panic!("expected a band");
    };
    assert_eq!(
        b,
        &Band {
            schedule: "[H, W, KH, KW] -> [{ S_1[h, w, kh, kw] -> [(h)] }, { S_1[h, w, kh, kw] -> [(w)] }, { S_1[h, w, kh, kw] -> [(kh)] }, { S_1[h, w, kh, kw] -> [(kw)] }]".into(),
            permutable: true,
            coincident: vec![true, true, false, false],
            ast_options: None,
        }
    );
    assert_eq!(t.root.check_shape(), Ok(()));
}

#[test]
fn band_options_keep_loop_types_and_isolation() {
    let ctx = Ctx::new();
    let (_, t) = load(&ctx, EVERY_KIND);
    let NodeKind::Band(b) = &t.node_at(&[0, 0]).unwrap().kind else {
        panic!("expected a band");
    };
    let back = t.to_isl(&ctx).unwrap();
    let band = back.get_root().unwrap().child(0).unwrap().child(0).unwrap();
    assert_eq!(
        band.band_member_get_ast_loop_type(0).unwrap(),
        isl_rs::ASTLoopType::Separate
    );
    assert_eq!(
        band.band_member_get_isolate_ast_loop_type(0).unwrap(),
        isl_rs::ASTLoopType::Unroll
    );
    assert!(b
        .ast_options
        .as_deref()
        .unwrap()
        .contains("isolate[[] -> [t]]"));
}

#[test]
fn a_typed_tree_built_by_hand_converts_to_isl() {
    let ctx = Ctx::new();
    let band = Band {
        permutable: true,
        coincident: vec![true, false],
        ..Band::new("[{ S_0[i, j] -> [(i)] }, { S_0[i, j] -> [(j)] }]", 2)
    };
    let t = ScheduleTree::new(Node::with_child(
        NodeKind::Domain {
            domain: "{ S_0[i, j] : 0 <= i < 4 and\n 0 <= j < 4 }".into(),
        },
        Node::with_child(
            NodeKind::Mark(Mark::Parallel),
            Node::with_child(NodeKind::Band(band), Node::leaf()),
        ),
    ));
    assert_eq!(
        t.to_yaml_input().unwrap(),
        "domain: \"{ S_0[i, j] : 0 <= i < 4 and  0 <= j < 4 }\"\nchild:\n  mark: \"parallel\"\n  child:\n    schedule: \"[{ S_0[i, j] -> [(i)] }, { S_0[i, j] -> [(j)] }]\"\n    permutable: 1\n    coincident: [ 1, 0 ]\n"
    );
    assert_eq!(
        t.to_isl_yaml(&ctx).unwrap(),
        "domain: \"{ S_0[i, j] : 0 <= i <= 3 and 0 <= j <= 3 }\"\nchild:\n  mark: \"parallel\"\n  child:\n    schedule: \"[{ S_0[i, j] -> [(i)] }, { S_0[i, j] -> [(j)] }]\"\n    permutable: 1\n    coincident: [ 1, 0 ]\n"
    );
    assert_eq!(
        t.to_tree_text(),
        "Domain {S_0(i, j) : 0 <= i < 4 and\n 0 <= j < 4}\n  Mark \"parallel\"\n    Band {S_0 -> (i, j)} permutable coincident=[1,0]\n"
    );
}

#[test]
fn a_mark_at_a_leaf_converts_to_isl() {
    let ctx = Ctx::new();
    let t = ScheduleTree::new(Node::with_child(
        NodeKind::Domain {
            domain: "{ S_0[i] }".into(),
        },
        Node::with_child(NodeKind::Mark(Mark::Skipped), Node::leaf()),
    ));
    let s = t.to_isl(&ctx).unwrap();
    assert_eq!(ScheduleTree::from_isl(&s).unwrap(), t);
}

#[test]
fn bad_typed_trees_are_errors() {
    let ctx = Ctx::new();
    let render = |r: miette::Report| {
        format!(
            "{r}\nhelp: {}",
            r.help().map(|h| h.to_string()).unwrap_or_default()
        )
    };
    // invalid isl text: the error names the node and the key
    let t = ScheduleTree::new(Node::with_child(
        NodeKind::Domain {
            domain: "{ S_0[i] }".into(),
        },
        Node::with_child(
            NodeKind::Filter {
                filter: "{ S_0[i] : i < }".into(),
            },
            Node::leaf(),
        ),
    ));
    assert_eq!(
        render(t.to_isl(&ctx).err().expect("an error")),
        "isl could not build a schedule from the typed tree: the `filter` of the Filter node at path [0] is not a valid isl union set (syntax error): `{ S_0[i] : i < }`\nhelp: the typed tree holds isl texts; make sure each is valid isl syntax of the right kind"
    );
    // a sequence child that is not a filter
    let t = ScheduleTree::new(Node::with_child(
        NodeKind::Domain {
            domain: "{ S_0[i] }".into(),
        },
        Node::new(NodeKind::Sequence, vec![Node::leaf()]),
    ));
    assert_eq!(
        render(t.to_isl(&ctx).err().expect("an error")),
        "the schedule tree is malformed: node at path [0]: a child of a Sequence is a Leaf, not a Filter\nhelp: sequence and set nodes have filter children; leaves have none; every other node has exactly one"
    );
    // a double quote cannot be written to isl's YAML
    let t = ScheduleTree::new(Node::with_child(
        NodeKind::Domain {
            domain: "{ S_0[i] }\"".into(),
        },
        Node::leaf(),
    ));
    assert_eq!(
        render(t.to_isl(&ctx).err().expect("an error")),
        "the `domain` text of the schedule-tree node at path [] contains a double quote\nhelp: isl texts never contain double quotes or NUL characters; build the text with isl's printer"
    );
    // the root must be a domain
    let t = ScheduleTree::new(Node::with_child(NodeKind::Sequence, Node::leaf()));
    assert_eq!(
        render(t.to_isl(&ctx).err().expect("an error")),
        "the root of the schedule tree is a Sequence node\nhelp: isl schedules start at a domain node (or an extension node for a subtree)"
    );
}

#[test]
fn an_unknown_mark_in_an_isl_schedule_is_an_error() {
    let ctx = Ctx::new();
    let s = isl_rs::Schedule::read_from_str(
        &ctx.isl,
        "{ domain: \"{ S_0[i] }\", child: { mark: \"kernel0\", child: { leaf } } }",
    )
    .unwrap();
    let e = ScheduleTree::from_isl(&s).unwrap_err();
    assert_eq!(
        e.to_string(),
        "the schedule tree has a mark `kernel0` that polyc does not know"
    );
    assert_eq!(
        e.help().unwrap().to_string(),
        "polyc knows the marks: skipped, parallel, kernel, thread, reduce, mem:<buffer> (a buffer of the target description), holds:<buffer>:<tensor>:double|single, tensorised:gemm|conv:ws|os, folded:init|preload|mvout"
    );
}

/// A pass that marks the outermost band parallel, as the CPU pipeline would.
struct MarkOuterParallel;

impl schedule_tree::Pass<()> for MarkOuterParallel {
    fn name(&self) -> &'static str {
        "mark-parallel"
    }
    fn run(&self, mut tree: ScheduleTree, _cx: &()) -> miette::Result<ScheduleTree> {
        let Some(path) = tree.bands().into_iter().next() else {
            return Ok(tree);
        };
        let node = tree
            .node_at_mut(&path)
            .expect("the path comes from the tree");
        let band = std::mem::replace(node, Node::leaf());
        *node = Node::with_child(NodeKind::Mark(Mark::Parallel), band);
        Ok(tree)
    }
}

#[test]
fn passes_compose_over_typed_trees() {
    use schedule_tree::Pass;
    let ctx = Ctx::new();
    let (_, t) = load(&ctx, SINGLE);
    let passes: Vec<Box<dyn Pass<()>>> = vec![Box::new(MarkOuterParallel)];
    let mut t = t;
    for p in &passes {
        t = p.run(t, &()).unwrap();
    }
    assert_eq!(passes[0].name(), "mark-parallel");
    assert_eq!(
        t.to_tree_text(),
        "Domain {S_0(i, j) : 0 <= i < N and 0 <= j < N}\n  Mark \"parallel\"\n    Band {S_0 -> (i, j)} permutable coincident=[1,1]\n"
    );
    // and isl accepts the result
    assert_eq!(ScheduleTree::from_isl(&t.to_isl(&ctx).unwrap()).unwrap(), t);
}
