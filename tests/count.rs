//! `polyc count`: barvinok's quasi-polynomials against isl's enumeration.
//!
//! For every example, the counts at symbolic sizes (Ehrhart quasi-polynomials through
//! barvinok) evaluated at several bound shapes equal the counts of the model built at
//! those shapes (isl enumerates the points). The readable (factored) form is evaluated
//! too, where it has one piece. Then the exact output of `polyc count` on the conv chain,
//! and the error without the library. Needs barvinok (`scripts/install-barvinok`).

mod common;
use common::*;

use polyc::commands::count::{count, Counts};
use polyhedral::barvinok::Barvinok;
use polyhedral::diag::SourceFile;
use polyhedral::ir::Program;
use polyhedral::isl::Ctx;
use polyhedral::qpoly::{QPoly, Rat};
use polyhedral::scop::Scop;

/// Every count of `c` with a label, in a fixed order.
fn all_counts(c: &Counts) -> Vec<(String, String)> {
    let mut v = Vec::new();
    for s in &c.stmts {
        v.push((format!("{} instances", s.name), s.instances.clone()));
        v.push((format!("{} FLOPs", s.name), s.flops.clone()));
    }
    v.push(("total FLOPs".into(), c.total_flops.clone()));
    for t in &c.tensors {
        if let Some(r) = &t.read {
            v.push((format!("{} read", t.name), r.clone()));
        }
        if let Some(w) = &t.written {
            v.push((format!("{} written", t.name), w.clone()));
        }
    }
    v
}

/// Up to `n` shapes (values of every size) where the model builds and every tensor is
/// non-empty, from a fixed list of candidates with sizes 1 to 11.
fn shapes(prog: &Program, src: &SourceFile, n: usize) -> Vec<Vec<i64>> {
    let np = prog.params.len();
    let mut out = Vec::new();
    for t in 0..200i64 {
        let values: Vec<i64> = (0..np as i64)
            .map(|k| 1 + (t * (k + 3) + 5 * k + t / 3 + t * t * (k + 1)) % 11)
            .collect();
        if out.contains(&values) {
            continue;
        }
        let ctx = Ctx::new();
        let bound: Vec<Option<i64>> = values.iter().map(|v| Some(*v)).collect();
        let Ok(scop) = Scop::build(&ctx, prog, &bound, src) else {
            continue;
        };
        let nonempty = scop
            .tensor_extents
            .iter()
            .all(|e| !e.is_empty().expect("emptiness test"));
        if nonempty {
            out.push(values);
            if out.len() == n {
                break;
            }
        }
    }
    out
}

fn integer(q: &str) -> Rat {
    QPoly::parse(q)
        .unwrap_or_else(|e| panic!("{e}"))
        .eval(&[])
        .unwrap_or_else(|| panic!("`{q}` is not a constant"))
}

#[test]
fn quasi_polynomials_equal_enumeration_on_every_example() {
    let b = Barvinok::load().unwrap_or_else(|e| panic!("{e}: {}", e.help()));
    let mut files: Vec<String> = std::fs::read_dir(root().join("examples"))
        .expect("examples/")
        .filter_map(|e| e.ok())
        .map(|e| e.path().display().to_string())
        .filter(|p| p.ends_with(".tc"))
        .collect();
    files.sort();
    assert!(files.len() >= 15, "only {} examples", files.len());
    let (mut checked, mut pretty_checked) = (0usize, 0usize);
    for file in &files {
        let src = SourceFile::read(file).expect("readable example");
        let prog = polyhedral::lang::compile(&src, None).expect("valid example");
        let ctx = Ctx::new();
        let sym =
            Scop::build(&ctx, &prog, &vec![None; prog.params.len()], &src).expect("symbolic model");
        let sym_counts = count(&prog, &sym).unwrap_or_else(|e| panic!("{file}: {e:?}"));
        let shapes = shapes(&prog, &src, 4);
        assert!(
            shapes.len() >= 3 || prog.params.is_empty(),
            "{file}: only {} valid shapes found",
            shapes.len()
        );
        for shape in &shapes {
            let bound: Vec<Option<i64>> = shape.iter().map(|v| Some(*v)).collect();
            let scop = Scop::build(&ctx, &prog, &bound, &src).expect("bound model");
            let enumerated = count(&prog, &scop).expect("enumerated counts");
            let at: Vec<(String, i64)> = prog
                .params
                .iter()
                .zip(shape)
                .map(|(p, v)| (p.name.clone(), *v))
                .collect();
            let sym_all = all_counts(&sym_counts);
            let enum_all = all_counts(&enumerated);
            assert_eq!(sym_all.len(), enum_all.len(), "{file}");
            for ((label, q), (_, e)) in sym_all.iter().zip(&enum_all) {
                let want = integer(e);
                let got = b.eval(q, &at).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(
                    got,
                    want.to_string(),
                    "{file} {label} at {at:?}: barvinok `{q}` gives {got}, enumeration {want}"
                );
                checked += 1;
                let readable = QPoly::parse(q).unwrap_or_else(|e| panic!("{e}"));
                if let Some(v) = readable.eval(&at) {
                    assert_eq!(
                        v,
                        want,
                        "{file} {label} at {at:?}: `{}` gives {v}, enumeration {want}",
                        readable.pretty()
                    );
                    pretty_checked += 1;
                }
            }
        }
    }
    eprintln!("{checked} counts checked against enumeration ({pretty_checked} in readable form)");
    assert!(checked > 500, "only {checked} counts checked");
    assert!(
        pretty_checked * 10 > checked * 8,
        "{pretty_checked} of {checked} in readable form"
    );
}

#[test]
fn conv_chain_symbolic_output() {
    let out = polyc_ok(&["count", "examples/conv_chain.tc"]);
    assert_eq!(
        out,
        "\
conv_chain: exact counts in H, W, KH, KW (for sizes ≥ 1 where every tensor is non-empty)

statement  instances                        FLOPs/instance  FLOPs
S_0        H·W                              1               H·W
S_1        (H - KH + 1)·(W - KW + 1)        0               0
S_2        (H - KH + 1)·(W - KW + 1)·KH·KW  2               2·(H - KH + 1)·(W - KW + 1)·KH·KW
S_3        (H - KH + 1)·(W - KW + 1)        1               (H - KH + 1)·(W - KW + 1)
S_4        (H - KH + 1)·(W - KW + 1)        1               (H - KH + 1)·(W - KW + 1)
total                                                       2·H·W·KH·KW - 2·H·KH·KW² - 2·W·KH²·KW + 2·KH²·KW² + 2·H·KH·KW + 2·W·KH·KW - 2·KH²·KW - 2·KH·KW² + 3·H·W - 2·H·KW - 2·W·KH + 4·KH·KW + 2·H + 2·W - 2·KH - 2·KW + 2

tensor  elements read              elements written
A       H·W                        H·W
B       KH·KW                      -
C       (H - KH + 1)·(W - KW + 1)  (H - KH + 1)·(W - KW + 1)
"
    );
}

#[test]
fn conv_chain_partly_and_fully_bound() {
    let out = polyc_ok(&["count", "examples/conv_chain.tc", "--param", "KH=3,KW=3"]);
    assert!(
        out.contains("\nS_2        9·(H - 2)·(W - 2)  2               18·(H - 2)·(W - 2)\n"),
        "{out}"
    );
    let out = polyc_ok(&[
        "count",
        "examples/conv_chain.tc",
        "--param",
        "H=64,W=64,KH=3,KW=3",
    ]);
    assert_eq!(
        out,
        "\
conv_chain: exact counts at H=64, W=64, KH=3, KW=3

statement  instances  FLOPs/instance  FLOPs
S_0        4096       1               4096
S_1        3844       0               0
S_2        34596      2               69192
S_3        3844       1               3844
S_4        3844       1               3844
total                                 80976

tensor  elements read  elements written
A       4096           4096
B       9              -
C       3844           3844
"
    );
}

#[test]
fn missing_library_error_says_how_to_install() {
    // Run in a fresh folder with POLYC_BARVINOK naming an empty folder there, by a
    // relative path (so that the message, and its wrapping, do not depend on where the
    // temporary folder is).
    let dir = tempdir();
    std::fs::create_dir(dir.path().join("empty")).expect("mkdir");
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_polyc"))
            .args(args)
            .env("POLYC_BARVINOK", "empty")
            .current_dir(dir.path())
            .output()
            .expect("polyc starts")
    };
    let matmul = root().join("examples/matmul.tc").display().to_string();
    let o = run(&["count", &matmul]);
    assert_code(&o, 1);
    assert_eq!(stdout(&o), "");
    assert_eq!(
        stderr(&o),
        "  × symbolic counting needs the barvinok library, which is not installed: no libbarvinok*.so in\n  \
         │ empty ($POLYC_BARVINOK)\n  \
         help: run scripts/install-barvinok (it fetches the islpy-barvinok wheel from PyPI, checks its\n        \
         sha256 and unpacks its libraries), or set POLYC_BARVINOK to a folder holding\n        \
         libbarvinok-*.so and its libraries\n"
    );
    // Bound sizes need no barvinok; neither does anything else.
    let o = run(&["count", &matmul, "--param", "M=2,K=3,N=4"]);
    assert_code(&o, 0);
    assert!(
        stdout(&o).contains("\nS_1        24         2               48\n"),
        "{}",
        stdout(&o)
    );
    let o = run(&["run", &matmul, "--param", "M=2,K=3,N=4", "--check"]);
    assert_code(&o, 0);
}

#[test]
fn explain_shows_symbolic_footprints_per_tile() {
    let dir = tempdir();
    // `k` untiled: a register tile holds whole rows of A and columns of B, K elements per
    // row/column. (At a checked level such a tile is refused, since no capacity holds for
    // every K; the register file is not checked.)
    let spec = write(dir.path(), "mm.tiles", "S_1: 32@reg, 32@reg\n");
    let out = polyc_ok(&["explain", "examples/matmul.tc", "--tile-spec", &spec]);
    // M ≤ 32: one tile of M rows; otherwise at most 32 rows (the last tile may be
    // smaller). B's bound is not known to be tight (`≤`): its last column tile has N - 32
    // columns when 33 ≤ N ≤ 63.
    let a_row = out
        .lines()
        .find(|l| {
            l.trim_start()
                .starts_with("reg          32 x 32 x -      A")
        })
        .unwrap_or_else(|| panic!("no A row in\n{out}"));
    assert_eq!(
        a_row,
        "  reg          32 x 32 x -      A        ?              32·K if M ≥ 33 and (M ≥ 65 or M ≤ 64); M·K if M ≤ 32 (else 0) 128·K if M ≥ 33 and (M ≥ 65 or M ≤ 64); 4·M·K if M ≤ 32 (else 0)"
    );
    assert!(
        out.contains(
            "\n                                C        32 x 32              1024       4096\n"
        ),
        "{out}"
    );
}
