//! The ILP scheduler end to end through the binary: golden scheduled trees, the fusion
//! strategies, skewing, schedule-constraints files (pins and their errors),
//! `schedule-report`, and `run --check`.

mod common;
use common::*;

const CONV: &str = "examples/conv_chain.tc";
const CONV_PARAMS: &str = "H=16,W=16,KH=3,KW=3";
const MM2_PARAMS: &str = "NI=8,NJ=6,NK=4,NL=5";
const STENCIL_PARAMS: &str = "T=4,N=16";

/// `polyc dump --stage scheduled --format tree --scheduler ilp` of `program` at `params`,
/// with `extra` arguments.
fn ilp_tree(program: &str, params: &str, extra: &[&str]) -> String {
    let mut args = vec![
        "dump",
        program,
        "--param",
        params,
        "--stage",
        "scheduled",
        "--format",
        "tree",
        "--scheduler",
        "ilp",
    ];
    args.extend_from_slice(extra);
    polyc_ok(&args)
}

/// One band line of a tree dump: the member expressions per statement
/// (`("S_0", ["t", "t + i"])`) and whether the band is permutable.
type BandLine = (Vec<(String, Vec<String>)>, bool);

/// The bands of a tree dump, in order.
fn bands(tree: &str) -> Vec<BandLine> {
    let mut out = Vec::new();
    for line in tree.lines() {
        let Some(rest) = line.trim_start().strip_prefix("Band {") else {
            continue;
        };
        let (body, tail) = rest.split_once('}').expect("a band line has `}`");
        let stmts = body
            .split("; ")
            .map(|part| {
                let (name, exprs) = part.split_once(" -> (").expect("S -> (...)");
                let exprs = exprs.strip_suffix(')').expect("closing parenthesis");
                (
                    name.to_string(),
                    exprs.split(", ").map(str::to_string).collect(),
                )
            })
            .collect();
        out.push((stmts, tail.contains("permutable")));
    }
    out
}

/// The most members of one permutable band in a tree dump.
fn max_permutable_depth(tree: &str) -> usize {
    bands(tree)
        .iter()
        .filter(|(_, perm)| *perm)
        .map(|(stmts, _)| stmts.first().map_or(0, |(_, e)| e.len()))
        .max()
        .unwrap_or(0)
}

/// The number of outermost groups of a tree dump: the filters of a top-level sequence, or
/// 1 when the root's child is a band.
fn top_level_groups(tree: &str) -> usize {
    let mut lines = tree.lines().skip(1);
    let first = lines.next().expect("a node below the domain");
    if first.trim_start().starts_with("Sequence") {
        let indent = first.len() - first.trim_start().len() + 2;
        lines
            .filter(|l| {
                l.len() - l.trim_start().len() == indent && l.trim_start().starts_with("Filter")
            })
            .count()
    } else {
        1
    }
}

/// A schedule-constraints file under cargo's test scratch directory, as a path relative to
/// the repository root where possible (so messages do not depend on the checkout's
/// location).
fn constraints_file(name: &str, text: &str) -> String {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ilp_cli");
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write constraints");
    path.strip_prefix(root())
        .unwrap_or(&path)
        .display()
        .to_string()
}

/// `polyc run --check` passes: exit 0 and every checked tensor is `ok`.
fn run_checks(args: &[&str]) {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.push("--check");
    let out = polyc_ok(&all);
    assert!(!out.is_empty(), "nothing checked: polyc {}", all.join(" "));
    for line in out.lines() {
        assert!(
            line.contains(": max_abs_err=") && line.ends_with(" ok"),
            "polyc {}: {line}",
            all.join(" ")
        );
    }
}

macro_rules! golden {
    ($name:ident, $program:literal, $params:expr) => {
        #[test]
        fn $name() {
            insta::assert_snapshot!(ilp_tree($program, $params, &[]));
        }
    };
}

golden!(matmul_tree, "examples/matmul.tc", "M=8,N=6,K=4");
golden!(conv_chain_tree, "examples/conv_chain.tc", CONV_PARAMS);
golden!(jacobi1d_tree, "examples/jacobi1d.tc", STENCIL_PARAMS);
golden!(jacobi2d_tree, "examples/jacobi2d.tc", STENCIL_PARAMS);
golden!(trmm_tree, "examples/trmm.tc", "N=8,M=6");

#[test]
fn bands_parse() {
    let tree = "Domain {S_0(t, i) : 0 <= t <= 2}\n  Sequence\n    Filter {S_0(t, i)}\n      Band {S_0 -> (t, t + i)} permutable coincident=[0,0]\n    Filter {S_1(i)}\n      Band {S_1 -> (i)} coincident=[1]\n";
    assert_eq!(
        bands(tree),
        vec![
            (
                vec![(
                    "S_0".to_string(),
                    vec!["t".to_string(), "t + i".to_string()]
                )],
                true
            ),
            (vec![("S_1".to_string(), vec!["i".to_string()])], false),
        ]
    );
    assert_eq!(max_permutable_depth(tree), 2);
    assert_eq!(top_level_groups(tree), 2);
}

/// `--fuse max` fuses what `--fuse none` distributes.
fn fuse_pair(program: &str, params: &str) -> (String, String) {
    let max = ilp_tree(program, params, &["--fuse", "max"]);
    let none = ilp_tree(program, params, &["--fuse", "none"]);
    let (gm, gn) = (top_level_groups(&max), top_level_groups(&none));
    assert_ne!(gm, gn, "max:\n{max}\nnone:\n{none}");
    assert!(gm < gn, "max fuses less than none: {gm} vs {gn}");
    (max, none)
}

#[test]
fn conv_chain_fuse_max_versus_none() {
    let (max, none) = fuse_pair(CONV, CONV_PARAMS);
    assert_eq!((top_level_groups(&max), top_level_groups(&none)), (1, 5));
    insta::assert_snapshot!("conv_chain_fuse_max", max);
    insta::assert_snapshot!("conv_chain_fuse_none", none);
}

#[test]
fn mm2_fuse_max_versus_none() {
    let (max, none) = fuse_pair("examples/mm2.tc", MM2_PARAMS);
    assert_eq!((top_level_groups(&max), top_level_groups(&none)), (1, 4));
    insta::assert_snapshot!("mm2_fuse_max", max);
    insta::assert_snapshot!("mm2_fuse_none", none);
}

#[test]
fn stencils_get_deep_permutable_bands() {
    let j1 = ilp_tree("examples/jacobi1d.tc", STENCIL_PARAMS, &[]);
    assert!(max_permutable_depth(&j1) >= 2, "jacobi1d:\n{j1}");
    let j2 = ilp_tree("examples/jacobi2d.tc", STENCIL_PARAMS, &[]);
    assert!(max_permutable_depth(&j2) >= 3, "jacobi2d:\n{j2}");
    // Symbolic sizes too.
    let j2s = polyc_ok(&[
        "dump",
        "examples/jacobi2d.tc",
        "--stage",
        "scheduled",
        "--format",
        "tree",
        "--scheduler",
        "ilp",
    ]);
    assert!(max_permutable_depth(&j2s) >= 3, "jacobi2d symbolic:\n{j2s}");
    // The depth comes from skewing: some member combines two iterators.
    assert!(bands(&j1)
        .iter()
        .flat_map(|(stmts, _)| stmts.iter().flat_map(|(_, e)| e.iter()))
        .any(|e| e.contains(" + ") && e.contains('t') && e.contains('i')));
}

#[test]
fn no_skew_gives_single_iterator_rows() {
    let tree = ilp_tree("examples/jacobi1d.tc", STENCIL_PARAMS, &["--no-skew"]);
    let its = ["t", "i"];
    for (stmts, _) in bands(&tree) {
        for (s, exprs) in stmts {
            for e in exprs {
                let used: Vec<&str> = e
                    .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                    .filter(|w| its.contains(w))
                    .collect();
                assert!(used.len() <= 1, "{s} has a skewed row `{e}`:\n{tree}");
            }
        }
    }
    // Without skewing, jacobi1d cannot be tiled in both dimensions.
    assert_eq!(max_permutable_depth(&tree), 1, "{tree}");
    insta::assert_snapshot!(tree);
}

#[test]
fn legal_pins_change_the_schedule_and_run() {
    let plain = ilp_tree(CONV, CONV_PARAMS, &[]);
    // Unpinned, the 4-D reduction band skews its last row (`2kh + kw`).
    assert!(
        plain.contains("Band {S_2 -> (h, w, kh, 2kh + kw)}"),
        "{plain}"
    );
    for (name, text, want) in [
        (
            "pin_output_first.txt",
            "S_2 = h, w, kh, kw\n",
            "      Band {S_2 -> (h, w, kh)} permutable coincident=[1,1,0]\n        Band {S_2 -> (kw)} permutable coincident=[0]\n",
        ),
        (
            "pin_reduction_first.txt",
            "# the reduction loops outermost\nS_2 = kh, kw, h, w\n",
            "      Band {S_2 -> (kh)} permutable coincident=[0]\n        Band {S_2 -> (kw, h, w)} permutable coincident=[0,1,1]\n",
        ),
    ] {
        let file = constraints_file(name, text);
        let tree = ilp_tree(CONV, CONV_PARAMS, &["--schedule-constraints", &file]);
        assert_ne!(tree, plain);
        assert!(tree.contains(want), "{name}:\n{tree}");
        // Only S_2's rows change.
        let others = |t: &str| -> Vec<String> {
            t.lines()
                .filter(|l| !l.contains("S_2"))
                .map(str::to_string)
                .collect()
        };
        assert_eq!(others(&tree), others(&plain));
        run_checks(&[
            CONV,
            "--param",
            CONV_PARAMS,
            "--scheduler",
            "ilp",
            "--schedule-constraints",
            &file,
        ]);
    }
}

#[test]
fn constraints_unknown_statement() {
    let file = constraints_file("unknown_statement.txt", "S_9 = h, w\n");
    insta::assert_snapshot!(polyc_err(&[
        "dump",
        CONV,
        "--param",
        CONV_PARAMS,
        "--scheduler",
        "ilp",
        "--schedule-constraints",
        &file,
    ]));
}

#[test]
fn constraints_unknown_iterator() {
    let file = constraints_file("unknown_iterator.txt", "S_2 = h, w, kh, q\n");
    insta::assert_snapshot!(polyc_err(&[
        "dump",
        CONV,
        "--param",
        CONV_PARAMS,
        "--scheduler",
        "ilp",
        "--schedule-constraints",
        &file,
    ]));
}

#[test]
fn constraints_illegal_pin_names_the_dependence() {
    let file = constraints_file("illegal_pin.txt", "S_0 = i, t\n");
    let err = polyc_err(&[
        "run",
        "examples/jacobi1d.tc",
        "--param",
        STENCIL_PARAMS,
        "--scheduler",
        "ilp",
        "--schedule-constraints",
        &file,
        "--check",
    ]);
    assert!(err.contains("violates the"), "{err}");
    assert!(err.contains("RAW"), "{err}");
    insta::assert_snapshot!(err);
}

#[test]
fn schedule_report_says_ilp_is_at_least_as_deep() {
    let out = polyc_ok(&["schedule-report"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines.last().copied(),
        Some("the ilp scheduler's permutable band is at least as deep as isl's on every program"),
        "{out}"
    );
    // A header, one row per smoke-suite case, and the verdict.
    assert!(lines[0].starts_with("program"), "{out}");
    for name in ["matmul", "softmax", "jacobi2d", "conv_chain"] {
        let row = lines
            .iter()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no row for {name}:\n{out}"));
        let cols: Vec<usize> = row
            .split_whitespace()
            .skip(1)
            .take(2)
            .map(|c| c.parse().expect("a depth"))
            .collect();
        assert!(cols[1] >= cols[0], "{row}");
    }
}

#[test]
fn run_check_under_ilp() {
    for (program, params) in [
        ("examples/matmul.tc", "M=17,N=13,K=9"),
        ("examples/softmax.tc", "R=7,N=53"),
        ("examples/conv_chain.tc", CONV_PARAMS),
        ("examples/jacobi1d.tc", "T=10,N=64"),
        ("examples/jacobi2d.tc", "T=5,N=32"),
        ("examples/mm2.tc", MM2_PARAMS),
        ("examples/trmm.tc", "N=11,M=7"),
    ] {
        run_checks(&[program, "--param", params, "--scheduler", "ilp"]);
        for fuse in ["max", "none"] {
            run_checks(&[
                program,
                "--param",
                params,
                "--scheduler",
                "ilp",
                "--fuse",
                fuse,
            ]);
        }
    }
    run_checks(&[
        "examples/jacobi2d.tc",
        "--param",
        "T=5,N=32",
        "--scheduler",
        "ilp",
        "--no-skew",
    ]);
}

/// A stencil whose dependence distances, projected from the dependence, have integer
/// divisions (isl's Farkas step refuses them; the scheduler drops them first). Found by
/// `polyhedral/tests/ilp_props.rs`.
#[test]
fn distances_with_divisions_schedule_and_run() {
    let dir = tempdir();
    let program = write(
        dir.path(),
        "stencil.tc",
        "def p(f32(T, N) A) -> (f32(N) Out) {\n  A(t + 1, i) = (A(t, i - 1) + A(t, i + 1) + A(t, i + 1)) * 0.5 where t in 0:T - 1, i in 2:N - 2\n  Out(i) = A(T - 1, i)\n}\n",
    );
    for fuse in ["max", "smart", "none"] {
        run_checks(&[
            &program,
            "--param",
            "T=3,N=6",
            "--scheduler",
            "ilp",
            "--fuse",
            fuse,
        ]);
    }
}
