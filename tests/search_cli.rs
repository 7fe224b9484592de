//! The tile-size search through the binary: the model's exact pick, `--search-out`,
//! `polyc explain`, `polyc run --check` with a search spec, `--search measure`, and the
//! located errors (plain text, since stderr is not a terminal here).

mod common;
use common::*;

const MM: &str = "examples/matmul.tc";

/// The search note on stderr (the line starting `polyc: search: `), if any.
fn search_note(err: &str) -> Option<String> {
    err.lines()
        .find(|l| l.starts_with("polyc: search: ") && l.contains("picked"))
        .map(str::to_string)
}

// 96 x 80 x 72 matmul, one L1 level: 8 candidates per dimension (powers of two and the
// extent) = 512 points, enumerated. A tile (a, b, c) needs 4 (ac + cb + ab) bytes of the
// 48 KiB L1; 504 points fit. The model's cost is ceil(96/a) ceil(80/b) ceil(72/c) x bytes
// per tile x 4 (L1's weight); 32 x 80 x 72 (3 tiles of 42496 bytes) is the cheapest
// (computed independently of polyc for this test).
const L1_SEARCH: &str = "S_1: ?@L1, ?@L1, ?@L1\n";
const PARAMS: &str = "M=96,N=80,K=72";

#[test]
fn model_picks_the_expected_spec_and_writes_it() {
    let dir = tempdir();
    let spec = write(dir.path(), "tiles.txt", L1_SEARCH);
    let out = dir.path().join("picked.txt").display().to_string();
    let o = polyc(&[
        MM,
        "--param",
        PARAMS,
        "--tile-spec",
        &spec,
        "--search-out",
        &out,
    ]);
    assert_code(&o, 0);
    assert_eq!(
        search_note(&stderr(&o)).as_deref(),
        Some(
            "polyc: search: 512 candidates, 504 legal (model, exhaustive); picked S_1: 32@L1, 80@L1, 72@L1"
        )
    );
    let written = std::fs::read_to_string(&out).expect("--search-out wrote the file");
    assert_eq!(
        written,
        format!(
            "# tile spec resolved by the tile-size search\n# found by `polyc` from {spec} on {MM}: 512 candidates, 504 legal (model, exhaustive)\nS_1: 32@L1, 80@L1, 72@L1\n"
        )
    );
    // The written file is a valid fixed spec: compiling with it gives the same C.
    let with_search = stdout(&o);
    let fixed = polyc_ok(&[MM, "--param", PARAMS, "--tile-spec", &out]);
    assert_eq!(fixed, with_search);
}

#[test]
fn explain_shows_the_picked_spec() {
    let dir = tempdir();
    let spec = write(dir.path(), "tiles.txt", L1_SEARCH);
    let text = polyc_ok(&["explain", MM, "--param", PARAMS, "--tile-spec", &spec]);
    let head: Vec<&str> = text.lines().take(3).collect();
    assert_eq!(
        head,
        vec![
            "search: 512 candidates, 504 legal (model, exhaustive); picked S_1: 32@L1, 80@L1, 72@L1",
            "the model's best points (cost = bytes moved x 4^levels outward):",
            "  #1 S_1: 32@L1, 80@L1, 72@L1  cost 509952 (bytes moved: L1 127488; 3 tiles)",
        ]
    );
    assert!(
        text.contains("tile spec:\nS_1: 32@L1, 80@L1, 72@L1\n"),
        "explain:\n{text}"
    );
}

#[test]
fn run_check_with_a_search_spec_passes() {
    let dir = tempdir();
    let spec = write(dir.path(), "tiles.txt", L1_SEARCH);
    let o = polyc(&[
        "run",
        MM,
        "--param",
        PARAMS,
        "--tile-spec",
        &spec,
        "--check",
    ]);
    assert_code(&o, 0);
    assert_eq!(
        stdout(&o),
        "C: max_abs_err=0.000e0 max_rel_err=0.000e0 ok\n",
        "stderr:\n{}",
        stderr(&o)
    );
    assert_eq!(
        search_note(&stderr(&o)).as_deref(),
        Some(
            "polyc: search: 512 candidates, 504 legal (model, exhaustive); picked S_1: 32@L1, 80@L1, 72@L1"
        )
    );
}

#[test]
fn coordinate_descent_when_over_budget() {
    let dir = tempdir();
    let spec = write(dir.path(), "tiles.txt", L1_SEARCH);
    let o = polyc(&[
        "dump",
        MM,
        "--param",
        PARAMS,
        "--tile-spec",
        &spec,
        "--search-budget",
        "100",
        "--stage",
        "tiled",
    ]);
    assert_code(&o, 0);
    let note = search_note(&stderr(&o)).expect("a search note");
    assert!(
        note.contains("(model, coordinate descent); picked S_1: "),
        "{note}"
    );
}

#[test]
fn measure_mode_runs_and_checks() {
    let dir = tempdir();
    let spec = write(
        dir.path(),
        "tiles.txt",
        "S_1: {8, 16, 32}@L1, {16, 32}@L1\n",
    );
    let o = polyc(&[
        "run",
        MM,
        "--param",
        "M=32,N=32,K=32",
        "--tile-spec",
        &spec,
        "--search",
        "measure",
        "--search-top",
        "2",
        "--check",
    ]);
    assert_code(&o, 0);
    assert_eq!(
        stdout(&o),
        "C: max_abs_err=0.000e0 max_rel_err=0.000e0 ok\n",
        "stderr:\n{}",
        stderr(&o)
    );
    let err = stderr(&o);
    // Plain progress lines (stderr is not a terminal), one per measured point.
    assert_eq!(
        err.lines()
            .filter(|l| l.starts_with("polyc: search: measured "))
            .count(),
        2,
        "{err}"
    );
    let note = search_note(&err).expect("a search note");
    assert!(
        note.starts_with(
            "polyc: search: 6 candidates, 6 legal (model, exhaustive), 2 measured (fastest "
        ),
        "{note}"
    );
}

/// Runs polyc in a temporary directory holding `tiles.txt`, expecting a user error.
fn spec_error(args: &[&str], text: &str) -> String {
    let dir = tempdir();
    write(dir.path(), "tiles.txt", text);
    let prog = abs(MM);
    let mut all: Vec<&str> = vec![args[0], &prog];
    all.extend(&args[1..]);
    all.extend(["--tile-spec", "tiles.txt"]);
    let o = polyc_in(dir.path(), &all);
    assert_code(&o, 1);
    assert_eq!(stdout(&o), "", "a failing polyc printed on stdout");
    stderr(&o)
}

#[test]
fn empty_range_is_an_error() {
    insta::assert_snapshot!(spec_error(
        &["compile", "--param", "M=64,N=64,K=64"],
        "S_1: [64..16]@L1, 32@L1\n"
    ));
}

#[test]
fn empty_set_is_an_error() {
    insta::assert_snapshot!(spec_error(
        &["compile", "--param", "M=64,N=64,K=64"],
        "S_1: 32@L1, {}@L1\n"
    ));
}

#[test]
fn no_legal_candidate_is_an_error() {
    // L1 holds 48 KiB; with k whole (256), even a 128 x 64 L1 tile needs 229376 bytes.
    insta::assert_snapshot!(spec_error(
        &["run", "--param", "M=256,N=256,K=256"],
        "S_1: {128, 256}@L1, {64, 128}@L1\n"
    ));
}

#[test]
fn measure_needs_bound_sizes() {
    insta::assert_snapshot!(spec_error(
        &["compile", "--search", "measure"],
        "S_1: ?@L1\n"
    ));
}

#[test]
fn unknown_search_mode() {
    insta::assert_snapshot!(spec_error(
        &["compile", "--param", "M=64,N=64,K=64", "--search", "fast"],
        "S_1: ?@L1\n"
    ));
}
