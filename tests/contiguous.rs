//! Contiguous inner loops through the `polyc` binary (`tiling::contiguous`): where the
//! innermost loops of isl's schedule walk tensors down their columns, polyc moves the loop
//! over the last index inward (below the inner loops, or last in a permutable band), when
//! the dependences allow it. PolyBench's gramschmidt, a column-wise program written with a
//! `for` loop in f32 and f64, symm, trmm, lu and doitgen match the interpreter at sizes
//! that are not powers of two, on one and two threads; a move that would break a
//! dependence is not made; register-tiled bands and short loops keep their order.

mod common;
use common::*;

/// The note polyc prints for a move (its list of statements between the two parts).
const NOTE: &str = "note: polyc moved a loop inward so that innermost loops walk the last index of the tensors they touch: ";

/// `polyc dump FILE --param PARAMS --stage scheduled [EXTRA...]` (exit code 0 checked).
fn scheduled(file: &str, params: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["dump", file, "--param", params, "--stage", "scheduled"];
    args.extend_from_slice(extra);
    let o = polyc(&args);
    assert_code(&o, 0);
    o
}

/// Column statistics and their use, written with a `for` loop over the columns.
fn columns(t: &str) -> String {
    format!(
        "def cs({t}(M, N) A) -> ({t}(M, N) B, {t}(N) s) {{\n  \
         for j in 0:N {{\n    \
         s(j) = 0.5\n    \
         s(j) += A(i, j) * A(i, j) where i in 0:M\n    \
         B(i, j) = A(i, j) / s(j) where i in 0:M\n  }}\n}}\n"
    )
}

#[test]
fn gramschmidt_walks_rows_innermost() {
    let file = abs("examples/polybench/gramschmidt.tc");
    let o = scheduled(&file, "M=37,N=29", &[]);
    assert_eq!(stdout(&o), TREE);
    assert!(
        stderr(&o).contains(&format!(
            "{NOTE}S_6 along j instead of i, S_7 along j instead of i (--isl-option contiguous=0 keeps isl's order)"
        )),
        "{}",
        stderr(&o)
    );
    // contiguous=0 keeps isl's band over k and j, with the i loops below it.
    let o = scheduled(&file, "M=37,N=29", &["--isl-option", "contiguous=0"]);
    assert!(!stderr(&o).contains(NOTE), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("S_6 -> (k, j); S_7 -> (k, j)}"),
        "{}",
        stdout(&o)
    );
}

/// The scheduled tree of gramschmidt at M = 37, N = 29.
const TREE: &str = concat!(
        "Domain {S_0(i, j) : 0 <= i <= 36 and 0 <= j <= 28; S_1(k) : 0 <= k <= 28; S_2(k, i) : 0 <= k <= 28 and 0 <= i <= 36; S_3(k) : 0 <= k <= 28; S_4(k, i) : 0 <= k <= 28 and 0 <= i <= 36; S_5(k, j) : 0 <= k <= 28 and k < j <= 28; S_6(k, j, i) : 0 <= k <= 28 and k < j <= 28 and 0 <= i <= 36; S_7(k, j, i) : 0 <= k <= 28 and k < j <= 28 and 0 <= i <= 36; S_8(i, j) : 0 <= i <= 36 and 0 <= j <= 28}\n",
        "  Sequence\n",
        "    Filter {S_0(i, j)}\n",
        "      Band {S_0 -> (i, j)} permutable coincident=[1,1]\n",
        "    Filter {S_1(k); S_2(k, i); S_3(k); S_4(k, i); S_5(k, j); S_6(k, j, i); S_7(k, j, i)}\n",
        "      Band {S_1 -> (k); S_2 -> (k); S_3 -> (k); S_4 -> (k); S_5 -> (k); S_6 -> (k); S_7 -> (k)} permutable coincident=[0]\n",
        "        Sequence\n",
        "          Filter {S_1(k); S_2(k, i); S_3(k)}\n",
        "            Band {S_1 -> (0); S_2 -> (i); S_3 -> (36)} permutable coincident=[0]\n",
        "              Sequence\n",
        "                Filter {S_1(k)}\n",
        "                Filter {S_2(k, i)}\n",
        "                Filter {S_3(k)}\n",
        "          Filter {S_4(k, i); S_5(k, j); S_6(k, j, i); S_7(k, j, i)}\n",
        "            Sequence\n",
        "              Filter {S_4(k, i); S_5(k, j); S_6(k, j, i)}\n",
        "                Band {S_4 -> (i); S_5 -> (0); S_6 -> (i)} permutable coincident=[0]\n",
        "                  Sequence\n",
        "                    Filter {S_4(k, i); S_5(k, j)}\n",
        "                      Sequence\n",
        "                        Filter {S_4(k, i)}\n",
        "                        Filter {S_5(k, j)}\n",
        "                          Band {S_5 -> (j)} permutable coincident=[1]\n",
        "                    Filter {S_6(k, j, i)}\n",
        "                      Band {S_6 -> (j)} permutable coincident=[1]\n",
        "              Filter {S_7(k, j, i)}\n",
        "                Band {S_7 -> (i)} permutable coincident=[1]\n",
        "                  Band {S_7 -> (j)} permutable coincident=[1]\n",
        "    Filter {S_8(i, j)}\n",
        "      Band {S_8 -> (i, j)} permutable coincident=[1,1]\n",
    );

#[test]
fn moved_loops_match_the_interpreter() {
    let dir = tempdir();
    let mut cases: Vec<(String, &str)> = vec![
        (abs("examples/polybench/gramschmidt.tc"), "M=37,N=29"),
        (abs("examples/polybench/symm.tc"), "M=37,N=29"),
        (abs("examples/polybench/trmm.tc"), "M=37,N=29"),
        (abs("examples/polybench/lu.tc"), "N=37"),
        (abs("examples/polybench/doitgen.tc"), "NQ=13,NR=11,NP=23"),
    ];
    for t in ["f32", "f64"] {
        cases.push((
            write(dir.path(), &format!("cs_{t}.tc"), &columns(t)),
            "M=37,N=29",
        ));
    }
    // Column statistics written as comprehensions: isl's band is (c, shifted n); c moves
    // last.
    let coln = "def coln(f64(N, C) X) -> (f64(N, C) Y) {\n  mean(c) +=! X(n, c)\n  \
                var(c) +=! (X(n, c) - mean(c) / N) * (X(n, c) - mean(c) / N)\n  \
                Y(n, c) = (X(n, c) - mean(c) / N) * rsqrt(var(c) / N + 0.00001)\n}\n";
    cases.push((write(dir.path(), "coln.tc", coln), "N=37,C=45"));
    for (file, params) in &cases {
        let o = scheduled(file, params, &[]);
        assert!(stderr(&o).contains(NOTE), "{file}: {}", stderr(&o));
        for threads in ["1", "2"] {
            checked_on(file, params, threads);
        }
    }
}

#[test]
fn a_move_that_breaks_a_dependence_is_not_made() {
    // Column j reads column j - 1 upside down: with i outermost, row i would read row
    // M - 1 - i of the previous column before it is written.
    let dir = tempdir();
    let text = "def f(f64(M, N) A) -> (f64(M, N) B) {\n  B(i, j) = A(i, j)\n  \
                for j in 1:N {\n    B(i, j) = B(i, j) + B(M - 1 - i, j - 1) where i in 0:M\n  }\n}\n";
    let file = write(dir.path(), "flip.tc", text);
    let o = scheduled(&file, "M=37,N=29", &[]);
    assert!(!stderr(&o).contains(NOTE), "{}", stderr(&o));
    assert!(
        stdout(&o)
            .contains("Band {S_1 -> (j)} permutable coincident=[0]\n        Band {S_1 -> (i)}"),
        "{}",
        stdout(&o)
    );
    checked_on(&file, "M=37,N=29", "2");
}

#[test]
fn register_tiles_and_short_loops_keep_their_order() {
    let dir = tempdir();
    // y(j) += A(i, j) x(i): accumulator rows in vector lanes along j already walk rows.
    let mtv = "def mtv(f32(M, N) A, f32(M) x) -> (f32(N) y) {\n  y(j) +=! A(i, j) * x(i)\n}\n";
    let mtv = write(dir.path(), "mtv.tc", mtv);
    // The pooling window's rows are two iterations: the C compiler unrolls them.
    let pool = abs("examples/maxpool.tc");
    for (file, params) in [(&mtv, "M=45,N=203"), (&pool, "C=3,H=38,W=46")] {
        let o = scheduled(file, params, &[]);
        assert!(!stderr(&o).contains(NOTE), "{file}: {}", stderr(&o));
        checked_on(file, params, "2");
    }
}
