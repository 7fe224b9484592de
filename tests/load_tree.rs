//! `--load-tree STAGE=FILE`: round trips, legal hand edits, and the checks that reject
//! trees that break a dependence or lose instances.

mod common;
use common::*;
use std::path::Path;

const CONV: &str = "examples/conv_chain.tc";
const CONV_PARAMS: &str = "H=16,W=16,KH=3,KW=3";

/// The isl YAML dump of `stage`.
fn dump_isl(prog: &str, params: &str, extra: &[&str], stage: &str) -> String {
    let mut args = vec![
        "dump", prog, "--param", params, "--stage", stage, "--format", "isl",
    ];
    args.extend_from_slice(extra);
    polyc_ok(&args)
}

/// Splits an isl YAML tree whose root child is a sequence into the text before the first
/// `- filter` of that sequence and one block of lines per sequence child.
fn sequence_children(yaml: &str) -> (String, Vec<String>) {
    assert!(
        yaml.contains("\nchild:\n  sequence:\n"),
        "not a root sequence:\n{yaml}"
    );
    let mut head = String::new();
    let mut blocks: Vec<String> = Vec::new();
    for line in yaml.lines() {
        if line.starts_with("  - filter:") {
            blocks.push(String::new());
        }
        match blocks.last_mut() {
            Some(b) => b.push_str(line),
            None => head.push_str(line),
        }
        match blocks.last_mut() {
            Some(b) => b.push('\n'),
            None => head.push('\n'),
        }
    }
    (head, blocks)
}

/// Runs `polyc CMD PROG --param PARAMS --scheduler initial --load-tree STAGE=NAME` in `dir`
/// (where NAME was written), expects exit 1 and nothing on stdout, and returns stderr.
fn load_err(dir: &Path, cmd: &str, prog: &str, params: &str, stage: &str, name: &str) -> String {
    let prog = abs(prog);
    let load = format!("{stage}={name}");
    let mut args = vec![cmd, prog.as_str(), "--param", params];
    if stage == "initial" {
        args.extend(["--scheduler", "initial"]);
    }
    args.extend(["--load-tree", load.as_str()]);
    if cmd == "run" {
        args.push("--check");
    }
    let o = polyc_in(dir, &args);
    assert_code(&o, 1);
    assert_eq!(stdout(&o), "");
    stderr(&o)
}

/// (a) The scheduled tree dumped as YAML loads back and dumps byte-identically, and the
/// loaded tree runs and checks.
#[test]
fn scheduled_round_trip() {
    let dir = tempdir();
    let yaml = dump_isl(CONV, CONV_PARAMS, &[], "scheduled");
    let file = write(dir.path(), "scheduled.yaml", &yaml);
    let load = format!("scheduled={file}");
    let again = dump_isl(CONV, CONV_PARAMS, &["--load-tree", &load], "scheduled");
    assert_eq!(again, yaml);
    let out = polyc_ok(&[
        "run",
        CONV,
        "--param",
        CONV_PARAMS,
        "--load-tree",
        &load,
        "--check",
    ]);
    assert_eq!(
        out,
        "C: max_abs_err=0.000e0 max_rel_err=0.000e0 ok\nA: max_abs_err=0.000e0 max_rel_err=0.000e0 ok\n"
    );
}

/// The initial tree round-trips too (under the initial scheduler, which reads it).
#[test]
fn initial_round_trip() {
    let dir = tempdir();
    let sched = ["--scheduler", "initial"];
    let yaml = dump_isl(CONV, CONV_PARAMS, &sched, "initial");
    let file = write(dir.path(), "initial.yaml", &yaml);
    let load = format!("initial={file}");
    let again = dump_isl(
        CONV,
        CONV_PARAMS,
        &["--scheduler", "initial", "--load-tree", &load],
        "initial",
    );
    assert_eq!(again, yaml);
}

/// (b) Two independent statements may run in either order: swapping their filters is
/// accepted, the dumped tree shows the new order, and the run checks.
#[test]
fn legal_swap_of_independent_statements() {
    let prog = fixture("independent.tc");
    let dir = tempdir();
    let sched = ["--scheduler", "initial"];
    let yaml = dump_isl(&prog, "N=8", &sched, "initial");
    let (head, blocks) = sequence_children(&yaml);
    assert_eq!(blocks.len(), 2);
    assert!(blocks[0].contains("S_0[i]") && blocks[1].contains("S_1[i]"));
    let swapped = format!("{head}{}{}", blocks[1], blocks[0]);
    let file = write(dir.path(), "swapped.yaml", &swapped);
    let load = format!("initial={file}");

    let tree = polyc_ok(&[
        "dump",
        &prog,
        "--param",
        "N=8",
        "--scheduler",
        "initial",
        "--load-tree",
        &load,
        "--stage",
        "initial",
    ]);
    assert_eq!(
        tree,
        "Domain {S_0(i) : 0 <= i <= 7; S_1(i) : 0 <= i <= 7}
  Sequence
    Filter {S_1(i) : 0 <= i <= 7}
      Band {S_1 -> (i)} permutable coincident=[1]
    Filter {S_0(i) : 0 <= i <= 7}
      Band {S_0 -> (i)} permutable coincident=[1]
"
    );
    assert_eq!(
        dump_isl(
            &prog,
            "N=8",
            &["--scheduler", "initial", "--load-tree", &load],
            "initial"
        ),
        swapped
    );
    let out = polyc_ok(&[
        "run",
        &prog,
        "--param",
        "N=8",
        "--scheduler",
        "initial",
        "--load-tree",
        &load,
        "--check",
    ]);
    assert_eq!(
        out,
        "A: max_abs_err=0.000e0 max_rel_err=0.000e0 ok\nB: max_abs_err=0.000e0 max_rel_err=0.000e0 ok\n"
    );
}

/// (c) Moving S_3 (abs) before S_1/S_2 (the convolution it reads) breaks a RAW dependence;
/// the error names the kind, the statements and an example pair.
#[test]
fn illegal_reorder_names_the_dependence() {
    let dir = tempdir();
    let sched = ["--scheduler", "initial"];
    let yaml = dump_isl(CONV, CONV_PARAMS, &sched, "initial");
    let (head, b) = sequence_children(&yaml);
    assert_eq!(b.len(), 5);
    let bad = format!("{head}{}{}{}{}{}", b[0], b[3], b[1], b[2], b[4]);
    write(dir.path(), "bad.yaml", &bad);
    for cmd in ["dump", "run"] {
        let err = load_err(dir.path(), cmd, CONV, CONV_PARAMS, "initial", "bad.yaml");
        insta::assert_snapshot!("illegal_reorder", err);
    }
}

/// (c) Reversing the time loop of a stencil breaks the flow dependence along `t`.
#[test]
fn reversed_stencil_band_is_rejected() {
    let dir = tempdir();
    let sched = ["--scheduler", "initial"];
    let yaml = dump_isl("examples/jacobi1d.tc", "T=4,N=8", &sched, "initial");
    let needle = "S_0[t, i] -> [(t)]";
    assert_eq!(yaml.matches(needle).count(), 1, "{yaml}");
    write(
        dir.path(),
        "reversed.yaml",
        &yaml.replace(needle, "S_0[t, i] -> [(-t)]"),
    );
    let err = load_err(
        dir.path(),
        "dump",
        "examples/jacobi1d.tc",
        "T=4,N=8",
        "initial",
        "reversed.yaml",
    );
    insta::assert_snapshot!(err);
}

/// (d) Deleting a filter from the sequence leaves S_3's instances unscheduled.
#[test]
fn deleted_filter_is_rejected() {
    let dir = tempdir();
    let sched = ["--scheduler", "initial"];
    let yaml = dump_isl(CONV, CONV_PARAMS, &sched, "initial");
    let (head, b) = sequence_children(&yaml);
    let bad = format!("{head}{}{}{}{}", b[0], b[1], b[2], b[4]);
    write(dir.path(), "missing.yaml", &bad);
    let err = load_err(
        dir.path(),
        "dump",
        CONV,
        CONV_PARAMS,
        "initial",
        "missing.yaml",
    );
    insta::assert_snapshot!(err);
}

/// (d) A tree whose domain lacks S_4 does not cover the program's instances.
#[test]
fn smaller_domain_is_rejected() {
    let dir = tempdir();
    let sched = ["--scheduler", "initial"];
    let yaml = dump_isl(CONV, CONV_PARAMS, &sched, "initial");
    let (head, b) = sequence_children(&yaml);
    let s4 = "; S_4[h, w] : 0 <= h <= 13 and 0 <= w <= 13";
    assert_eq!(head.matches(s4).count(), 1, "{head}");
    let bad = format!("{}{}{}{}{}", head.replace(s4, ""), b[0], b[1], b[2], b[3]);
    write(dir.path(), "small.yaml", &bad);
    let err = load_err(
        dir.path(),
        "dump",
        CONV,
        CONV_PARAMS,
        "initial",
        "small.yaml",
    );
    insta::assert_snapshot!(err);
}

/// A tree for other sizes than the program's does not cover its instances.
#[test]
fn tree_of_other_sizes_is_rejected() {
    let dir = tempdir();
    let yaml = dump_isl("examples/matmul.tc", "M=4,N=4,K=4", &[], "scheduled");
    write(dir.path(), "other.yaml", &yaml);
    let err = load_err(
        dir.path(),
        "run",
        "examples/matmul.tc",
        "M=4,N=5,K=4",
        "scheduled",
        "other.yaml",
    );
    insta::assert_snapshot!(err);
}

/// (e) Errors in the request itself and in the file.
#[test]
fn unknown_stage() {
    let err = polyc_err(&[
        "dump",
        CONV,
        "--param",
        CONV_PARAMS,
        "--load-tree",
        "nosuch=examples/matmul.tc",
    ]);
    insta::assert_snapshot!(err);
}

#[test]
fn malformed_request() {
    for bad in ["scheduled", "=x.yaml", "scheduled="] {
        let err = polyc_err(&["dump", CONV, "--param", CONV_PARAMS, "--load-tree", bad]);
        assert_eq!(
            err,
            format!(
                "  × --load-tree: `{bad}` is not of the form STAGE=FILE\n  help: write --load-tree STAGE=FILE, e.g. --load-tree scheduled=my_tree.yaml\n"
            )
        );
    }
}

#[test]
fn file_not_found() {
    let err = polyc_err(&[
        "dump",
        CONV,
        "--param",
        CONV_PARAMS,
        "--load-tree",
        "scheduled=tests/fixtures/no_such_tree.yaml",
    ]);
    insta::assert_snapshot!(err);
}

#[test]
fn unknown_yaml_key() {
    let dir = tempdir();
    let prog = fixture("independent.tc");
    let yaml = dump_isl(&prog, "N=8", &[], "scheduled");
    let bad = yaml.replacen("child:\n", "child:\n  bogus: 1\n", 1);
    assert_ne!(bad, yaml);
    write(dir.path(), "bogus.yaml", &bad);
    let err = load_err(dir.path(), "dump", &prog, "N=8", "scheduled", "bogus.yaml");
    insta::assert_snapshot!(err);
}

#[test]
fn not_yaml() {
    let err = polyc_err(&[
        "dump",
        CONV,
        "--param",
        CONV_PARAMS,
        "--load-tree",
        "scheduled=examples/matmul.tc",
    ]);
    insta::assert_snapshot!(err);
}

/// The isl scheduler does not read the initial tree, so loading one is refused.
#[test]
fn initial_load_with_isl_scheduler() {
    let dir = tempdir();
    let yaml = dump_isl(CONV, CONV_PARAMS, &[], "initial");
    write(dir.path(), "initial.yaml", &yaml);
    let o = polyc_in(
        dir.path(),
        &[
            "dump",
            &abs(CONV),
            "--param",
            CONV_PARAMS,
            "--load-tree",
            "initial=initial.yaml",
        ],
    );
    assert_code(&o, 1);
    insta::assert_snapshot!(stderr(&o));
}
