//! Row statistics and their use, through the `polyc` binary: where isl fuses a row's
//! reductions and the element-wise statement that uses them into one band by shifting the
//! phases apart, polyc runs them one after the other under the parallel row loop
//! (`polyhedral::sched_phases`), and the row's costly invariant subexpressions (`rsqrt(v(r)
//! / N + eps)`) are computed once per row (`targets/src/codegen/invariant_print.rs`). Layer
//! norm in three forms, f32 and f64, at sizes with partial tiles, matches the interpreter
//! on one and two threads.

mod common;
use common::*;

/// Layer norm with the statistics inside the element-wise statement.
fn inside(t: &str) -> String {
    format!(
        "def layernorm({t}(R, N) X, {t}(N) g, {t}(N) b) -> ({t}(R, N) Y) {{\n  \
         mean(r) +=! X(r, j)\n  \
         var(r) +=! (X(r, j) - mean(r) / N) * (X(r, j) - mean(r) / N)\n  \
         Y(r, j) = (X(r, j) - mean(r) / N) * rsqrt(var(r) / N + 0.00001) * g(j) + b(j)\n}}\n"
    )
}

/// Layer norm with the mean divided in place and the scale in a temporary.
fn temps(t: &str) -> String {
    format!(
        "def layernorm({t}(R, N) X, {t}(N) g, {t}(N) b) -> ({t}(R, N) Y) {{\n  \
         mean(r) +=! X(r, j)\n  mean(r) = mean(r) / N\n  \
         var(r) +=! (X(r, j) - mean(r)) * (X(r, j) - mean(r))\n  \
         s(r) = rsqrt(var(r) / N + 0.00001)\n  \
         Y(r, j) = (X(r, j) - mean(r)) * s(r) * g(j) + b(j)\n}}\n"
    )
}

/// Layer norm from the sums of x and x² (one pass over the row for both statistics).
fn sums(t: &str) -> String {
    format!(
        "def layernorm({t}(R, N) X, {t}(N) g, {t}(N) b) -> ({t}(R, N) Y) {{\n  \
         s1(r) +=! X(r, j)\n  s2(r) +=! X(r, j) * X(r, j)\n  \
         Y(r, j) = (X(r, j) - s1(r) / N) * rsqrt(s2(r) / N - (s1(r) / N) * (s1(r) / N) + 0.00001) * g(j) + b(j)\n}}\n"
    )
}

/// `polyc dump FILE --param PARAMS --stage scheduled` (exit code 0 checked).
fn scheduled(file: &str, params: &str) -> std::process::Output {
    let o = polyc(&["dump", file, "--param", params, "--stage", "scheduled"]);
    assert_code(&o, 0);
    o
}

/// Fails when polyc said it split a band into phases.
fn assert_no_split(o: &std::process::Output) {
    assert!(!stderr(o).contains("phases"), "{}", stderr(o));
}

#[test]
fn shifted_phases_run_one_after_the_other_under_the_row_loop() {
    let dir = tempdir();
    let file = write(dir.path(), "ln.tc", &inside("f64"));
    let o = scheduled(&file, "R=37,N=45");
    assert_eq!(
        stdout(&o),
        "Domain {S_0(r) : 0 <= r <= 36; S_1(r, j) : 0 <= r <= 36 and 0 <= j <= 44; S_2(r) : 0 <= r <= 36; S_3(r, j) : 0 <= r <= 36 and 0 <= j <= 44; S_4(r, j) : 0 <= r <= 36 and 0 <= j <= 44}\n  \
         Band {S_0 -> (r); S_1 -> (r); S_2 -> (r); S_3 -> (r); S_4 -> (r)} permutable coincident=[1]\n    \
         Sequence\n      \
         Filter {S_0(r) : 0 <= r <= 36}\n      \
         Filter {S_1(r, j) : 0 <= r <= 36 and 0 <= j <= 44}\n        \
         Band {S_1 -> (j)} permutable coincident=[0]\n      \
         Filter {S_2(r) : 0 <= r <= 36}\n      \
         Filter {S_3(r, j) : 0 <= r <= 36 and 0 <= j <= 44}\n        \
         Band {S_3 -> (j)} permutable coincident=[0]\n      \
         Filter {S_4(r, j) : 0 <= r <= 36 and 0 <= j <= 44}\n        \
         Band {S_4 -> (j)} permutable coincident=[1]\n"
    );
    assert!(
        stderr(&o).contains(
            "note: isl's schedule fused 5 phases into one band by shifting them apart along its member 1 \
             (S_0, then S_1, then S_2, then S_3, then S_4); polyc runs them one after the other below \
             its parallel outer member (--isl-option phases=0 keeps isl's band)"
        ),
        "{}",
        stderr(&o)
    );
    // Without the split, isl's shifted band stays.
    let kept = polyc_ok(&[
        "dump",
        &file,
        "--param",
        "R=37,N=45",
        "--stage",
        "scheduled",
        "--isl-option",
        "phases=0",
    ]);
    assert!(
        kept.contains(
            "Band {S_0 -> (r, 0); S_1 -> (r, j); S_2 -> (r, 44); S_3 -> (r, 44 + j); S_4 -> (r, 88 + j)} permutable coincident=[1,0]"
        ),
        "{kept}"
    );
}

#[test]
fn bands_of_one_sweep_or_sequential_rows_stay_whole() {
    let dir = tempdir();
    // A GEMM's initialisation at k = 0 is one point, not a phase that sweeps.
    let gemm = write(
        dir.path(),
        "mm.tc",
        "def mm(f32(M, K) A, f32(K, N) B) -> (f32(M, N) C) {\n  C(i, j) +=! A(i, k) * B(k, j)\n}\n",
    );
    assert_no_split(&scheduled(&gemm, "M=67,N=45,K=53"));
    // Statistics over columns: the phases would walk columns, so isl's tiled band stays
    // (without the contiguous pass, which then moves `c` last; see tests/contiguous.rs).
    let cols = write(
        dir.path(),
        "cols.tc",
        "def coln(f64(N, C) X) -> (f64(N, C) Y) {\n  mean(c) +=! X(n, c)\n  \
         var(c) +=! (X(n, c) - mean(c) / N) * (X(n, c) - mean(c) / N)\n  \
         Y(n, c) = (X(n, c) - mean(c) / N) * rsqrt(var(c) / N + 0.00001)\n}\n",
    );
    let o = polyc(&[
        "dump",
        &cols,
        "--param",
        "N=37,C=45",
        "--stage",
        "scheduled",
        "--isl-option",
        "contiguous=0",
    ]);
    assert_code(&o, 0);
    assert!(
        stdout(&o).contains(
            "Band {S_0 -> (c, 0); S_1 -> (c, n); S_2 -> (c, 36); S_3 -> (c, 36 + n); S_4 -> (c, 72 + n)} permutable coincident=[1,0]"
        ),
        "{}",
        stdout(&o)
    );
    assert_no_split(&o);
    // PolyBench's doitgen: the phases sit under a sequential member, so isl's band stays.
    let doitgen = abs("examples/polybench/doitgen.tc");
    assert_no_split(&scheduled(&doitgen, "NR=15,NQ=14,NP=16"));
}

/// The C that `polyc compile` writes for `file` at `params` (into `dir`).
fn compiled_c(dir: &std::path::Path, file: &str, params: &str) -> String {
    let c = dir.join("out.c");
    let c = c.to_str().unwrap();
    polyc_ok(&["compile", file, "--param", params, "-o", c]);
    std::fs::read_to_string(c).unwrap()
}

#[test]
fn row_invariants_are_computed_once_per_row() {
    let dir = tempdir();
    let file = write(dir.path(), "ln.tc", &inside("f64"));
    let text = compiled_c(dir.path(), &file, "N=45,R=37");
    // The scale and the mean are locals of the row, and the element loop uses them.
    assert!(
        text.contains(
            "const double polyc_inv1_1 = (1.0 / sqrt(((polyc_tile3[(polyc_inv1_r - 32 * c0)] / ((double)45)) + ((double)1e-5))));"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "Y[r * 45 + j] = ((((X[r * 45 + j] - polyc_inv1_0) * polyc_inv1_1) * polyc_tile1[(j - 0)]) + polyc_tile0[(j - 0)]);"
        ),
        "{text}"
    );
    assert!(!text.contains("sqrt((X"), "{text}");
    // A triangle: the row's loop is empty for the last row, so the local is computed only
    // where the loop runs.
    let tri = write(
        dir.path(),
        "tri.tc",
        "def tri(f64(N, N) X, f64(N) s) -> (f64(N, N) Y) {\n  \
         Y(i, j) = X(i, j) / sqrt(s(i) + 1.0) where j in i + 1:N\n}\n",
    );
    let text = compiled_c(dir.path(), &tri, "N=45");
    assert!(
        text.contains(
            "const double polyc_inv0_0 = (0 <= polyc_min(-polyc_c3_start + 44, 32 * c0 + 32 * c1 - polyc_c3_start + 31)) ? sqrt((polyc_tile0[(polyc_inv0_i - 32 * c0)] + ((double)1.0))) : (double)0;"
        ),
        "{text}"
    );
    for n in ["N=45", "N=2", "N=67"] {
        checked_on(&tri, n, "1");
    }
    checked_on(&tri, "N=67", "2");
}

#[test]
fn layer_norm_forms_match_the_interpreter() {
    let dir = tempdir();
    for t in ["f32", "f64"] {
        for (name, text) in [
            ("inside", inside(t)),
            ("temps", temps(t)),
            ("sums", sums(t)),
        ] {
            let file = write(dir.path(), &format!("{name}_{t}.tc"), &text);
            for (params, threads) in [
                ("R=37,N=45", "1"),
                ("R=37,N=45", "2"),
                ("R=5,N=130", "2"),
                ("R=67,N=53", "2"),
            ] {
                checked_on(&file, params, threads);
            }
        }
    }
    // Symbolic sizes: the phases start at multiples of N, and the locals are guarded.
    let file = write(dir.path(), "inside_sym.tc", &inside("f32"));
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_polyc"))
        .args(["run", &file, "--run-param", "R=9,N=33", "--check"])
        .output()
        .expect("polyc runs");
    assert_code(&o, 0);
    let out = stdout(&o);
    let checks: Vec<&str> = out.lines().filter(|l| l.contains("max_abs_err")).collect();
    assert!(
        checks.len() == 1 && checks.iter().all(|l| l.ends_with(" ok")),
        "{out}"
    );
}
