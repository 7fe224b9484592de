//! The default policy's accumulator rows through the `polyc` binary: matrix-vector
//! products and column sums, written in several forms, f32 and f64, at sizes with partial
//! tiles, get a `reg` size on their one parallel member (rows of scalar accumulators, or
//! vector lanes when the accumulators run along their last dimension), and their kernels
//! match the interpreter on one and two threads.

mod common;
use common::*;

/// The tile spec `polyc explain` prints for `file` at `params` (the lines after `tile spec:`
/// up to the first blank one).
fn default_spec(file: &str, params: &str) -> String {
    let out = polyc_ok(&["explain", file, "--param", params]);
    let mut lines = out.lines().skip_while(|l| *l != "tile spec:").skip(1);
    let mut spec = String::new();
    for l in lines.by_ref() {
        if l.is_empty() {
            break;
        }
        spec.push_str(l);
        spec.push('\n');
    }
    spec
}

/// (name, program, sizes, the default spec)
fn cases(t: &str) -> Vec<(String, String, &'static str, String)> {
    let lanes = if t == "f64" { 32 } else { 64 };
    vec![
        (
            format!("mv_{t}"),
            format!(
                "def mv({t}(M, N) A, {t}(N) x) -> ({t}(M) y) {{\n  y(i) +=! A(i, j) * x(j)\n}}\n"
            ),
            "M=67,N=45",
            "S_1: 8@reg\n".to_string(),
        ),
        (
            // Two accumulators and a final combination: three tensors written, 8 rows of
            // them would take 24 registers, so 4 rows.
            format!("gesummv_{t}"),
            format!(
                "def g({t}(N, N) A, {t}(N, N) B, {t}(N) x) -> ({t}(N) y) {{\n  \
                 t(i) +=! A(i, j) * x(j)\n  u(i) +=! B(i, j) * x(j)\n  \
                 y(i) = 1.5 * t(i) + 1.25 * u(i)\n}}\n"
            ),
            "N=67",
            "S_4: 4@reg\n".to_string(),
        ),
        (
            // The transposed product: the accumulators are vectors along y's last dimension.
            format!("mtv_{t}"),
            format!(
                "def mtv({t}(M, N) A, {t}(M) x) -> ({t}(N) y) {{\n  y(j) +=! A(i, j) * x(i)\n}}\n"
            ),
            "M=45,N=203",
            format!("S_1: {lanes}@reg\n"),
        ),
        (
            // Column sums with the mean computed in the same band.
            format!("colmean_{t}"),
            format!(
                "def cm({t}(M, N) A) -> ({t}(N) m) {{\n  m(j) +=! A(i, j)\n  m(j) = m(j) / M\n}}\n"
            ),
            "M=45,N=203",
            format!("S_2: {lanes}@reg\n"),
        ),
    ]
}

#[test]
fn matrix_vector_forms_get_accumulator_rows_and_match_the_interpreter() {
    let dir = tempdir();
    for t in ["f32", "f64"] {
        for (name, text, params, spec) in cases(t) {
            let file = write(dir.path(), &format!("{name}.tc"), &text);
            assert_eq!(default_spec(&file, params), spec, "{name}");
            for threads in ["1", "2"] {
                checked_on(&file, params, threads);
            }
        }
    }
}

#[test]
fn bands_whose_writes_run_along_the_reduction_keep_their_cache_tiles() {
    // Y(r, j) runs along j, the member the row statistics reduce over: no accumulator rows.
    let dir = tempdir();
    let text = "def sm(f32(R, N) X) -> (f32(R, N) Y) {\n  \
                s(r) +=! X(r, j)\n  Y(r, j) = X(r, j) / s(r)\n}\n";
    let file = write(dir.path(), "rows.tc", text);
    let spec = default_spec(&file, "R=512,N=1024");
    assert!(!spec.contains("@reg"), "{spec}");
    checked_on(&file, "R=67,N=45", "2");
}

#[test]
fn accumulator_rows_that_do_not_fit_half_of_l2_keep_their_cache_tiles() {
    // 8 rows of 40 000 doubles (2.5 MB) exceed half of the 2 MiB L2.
    let dir = tempdir();
    let text = "def mv(f64(M, N) A, f64(N) x) -> (f64(M) y) {\n  y(i) +=! A(i, j) * x(j)\n}\n";
    let file = write(dir.path(), "wide.tc", text);
    let spec = default_spec(&file, "M=64,N=40000");
    assert!(!spec.contains("@reg"), "{spec}");
    assert!(spec.contains("@L1"), "{spec}");
}
