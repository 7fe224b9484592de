//! Packed tiles nested in packed tiles of the same tensor (FUZZ_FINDINGS.md F2): a tile
//! stored in blocks of the register tiles below it is read in its own layout by every
//! mark in between, never as if it were stored row by row. Each case runs through the
//! binary and is checked against the interpreter, under f32 and f64, at odd sizes, under
//! every scheduler, with the default packing and with `--pack all`.

mod common;
use common::*;

/// `T(i, j) +=! X(k, j)`: `X`'s `L2` tile is stored in column blocks of the register
/// tiles; the `L1` tiles between them take the whole tile (F2's first case).
fn columns(ty: &str) -> String {
    format!("def f({ty}(K, M) X) -> ({ty}(N, M) T) {{\n  T(i, j) +=! X(k, j)\n}}\n")
}

/// A max-plus reduction over the last index of a 3-d input (F2, seed 4242).
fn max_plus(ty: &str) -> String {
    format!(
        "def f({ty}(N, M) X2, {ty}(N, M, K) X3) -> ({ty}(N, M) T2) {{\n  \
         T2(i, k) max=! (X2(i, k) + X3(i, k, j))\n}}\n"
    )
}

/// A sum over the last index of a 3-d input (F2, seed 4242).
fn last_sum(ty: &str) -> String {
    format!("def f({ty}(N, M, K) X3) -> ({ty}(N, M) T1) {{\n  T1(i, k) +=! X3(i, k, j)\n}}\n")
}

/// Runs `prog` (a program text for `ty`) with `spec` at each of `shapes`, under every
/// scheduler, with and without `--pack all`, each checked against the interpreter.
fn check_all(name: &str, prog: fn(&str) -> String, spec: &str, shapes: &[&str]) {
    let dir = tempdir();
    let tiles = write(dir.path(), &format!("{name}.tiles"), spec);
    for ty in ["f32", "f64"] {
        let file = write(dir.path(), &format!("{name}_{ty}.tc"), &prog(ty));
        for scheduler in ["isl", "initial", "ilp"] {
            for shape in shapes {
                for extra in [&[][..], &["--pack", "all"][..]] {
                    let mut args = vec![
                        "run",
                        &file,
                        "--param",
                        shape,
                        "--tile-spec",
                        &tiles,
                        "--scheduler",
                        scheduler,
                        "--check",
                    ];
                    args.extend_from_slice(extra);
                    run_checked(&args);
                }
            }
        }
    }
}

#[test]
fn blocked_pack_under_whole_tile_marks_reads_its_blocks() {
    check_all(
        "columns",
        columns,
        "S_1: 4@L1, 1@reg, 2@L2\n",
        &["N=4,M=2,K=2", "N=5,M=3,K=7", "N=9,M=5,K=3"],
    );
}

#[test]
fn blocked_pack_of_a_3d_input_reads_its_blocks() {
    check_all(
        "max_plus",
        max_plus,
        "S_1: 9@L3 3@L1, 2@reg, 4@L2\n",
        &["N=2,M=4,K=3", "N=3,M=7,K=5", "N=5,M=9,K=2"],
    );
}

#[test]
fn register_packs_of_a_3d_input_read_the_outer_pack() {
    check_all(
        "last_sum",
        last_sum,
        "S_1: 3@L3 3@L1, 1@L2, 8@reg\n",
        &["N=3,M=11,K=5", "N=7,M=5,K=3", "N=5,M=9,K=2"],
    );
}

/// F2's third case as found: `K=1` leaves a two-member band under `isl` and `ilp`, so
/// the three-entry spec applies under `initial` only.
#[test]
fn register_packs_with_a_unit_extent_read_the_outer_pack() {
    let dir = tempdir();
    let tiles = write(dir.path(), "s.tiles", "S_1: 3@L3 3@L1, 1@L2, 8@reg\n");
    for ty in ["f32", "f64"] {
        let file = write(dir.path(), &format!("p_{ty}.tc"), &last_sum(ty));
        for shape in ["N=2,M=9,K=1", "N=5,M=13,K=1"] {
            for extra in [&["--pack", "all"][..], &[][..], &["--no-hoist"][..]] {
                let mut args = vec![
                    "run",
                    &file,
                    "--param",
                    shape,
                    "--tile-spec",
                    &tiles,
                    "--scheduler",
                    "initial",
                    "--check",
                ];
                args.extend_from_slice(extra);
                run_checked(&args);
            }
        }
    }
}

/// The promotion report of F2's first case: `X` is packed once, in blocks of the
/// register tiles; the `L1` tiles in between (whose box of `X` is the whole tile) read
/// the pack in place instead of copying it again.
#[test]
fn blocked_pack_is_not_copied_again_by_whole_tile_marks() {
    let dir = tempdir();
    let file = write(dir.path(), "columns.tc", &columns("f64"));
    let tiles = write(dir.path(), "columns.tiles", "S_1: 4@L1, 1@reg, 2@L2\n");
    let out = polyc_ok(&[
        "explain",
        &file,
        "--param",
        "N=4,M=2,K=2",
        "--tile-spec",
        &tiles,
    ]);
    let start = out.find("promotion:\n").expect("a promotion report");
    let rest = &out[start..];
    let report = rest[..rest.find("\n\n").unwrap_or(rest.len())].trim_end();
    assert_eq!(report.matches(" X in ").count(), 1, "{report}");
    assert!(report.contains("stored in blocks of"), "{report}");
}
