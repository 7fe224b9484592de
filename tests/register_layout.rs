//! Register tiles and transposed copies through the `polyc` binary
//! (`tiling::regshape::RegisterShape::Clashed`): where isl's scheduler fuses a reduction
//! with a statement that touches the reduction's tensor through other indices (covariance's
//! `cov(i, j) = cov(j, i)`, fused as `(j, i)`), no register tile can hold that tensor and
//! the reduction ran as strided dot products. polyc schedules the components apart: the
//! reduction gets its register tile. Covariance, correlation, a form that writes the copy
//! the other way round, and f32, match the interpreter at sizes that are not powers of two,
//! on one and two threads; a reduction whose reads walk rows (a dot product) keeps isl's
//! fusion.

mod common;
use common::*;

/// The start of the note for a clashed register tile.
const NOTE: &str = "note: isl's fused schedule fuses ";

#[test]
fn covariance_gets_its_register_tile() {
    let file = abs("examples/polybench/covariance.tc");
    let (err, c) = compiled_c(&file, "N=37,M=29", &[]);
    assert!(
        err.contains(
            "polyc: note: isl's fused schedule fuses S_5 with S_7, which touches the tensor S_5 \
             writes through other indices (transposed), so no register tile holds that tensor; \
             polyc schedules the components apart and lets post-tiling fusion fuse them after \
             tiling (--isl-option serialize_sccs=0 keeps isl's fusion)\n"
        ),
        "{err}"
    );
    assert!(c.contains("/* tile of cov (4 x 16) */"), "{c}");
    // isl's fusion, kept: the reduction reads `data` down its columns, with no tile.
    let (err, c) = compiled_c(&file, "N=37,M=29", &["--isl-option", "serialize_sccs=0"]);
    assert!(!err.contains(NOTE), "{err}");
    assert!(!c.contains("/* tile of cov"), "{c}");
}

/// Covariance with the symmetric copy written from the upper triangle into the lower one.
const COPY_DOWN: &str = "def covariance(T(N, M) data) -> (T(M, M) cov, T(M) mean) {
  mean(j) +=! data(i, j)
  mean(j) = mean(j) / N
  for i in 0:N {
    data(i, j) -= mean(j)
  }
  cov(i, j) +=! data(k, i) * data(k, j) where j in i:M
  cov(i, j) = cov(i, j) / (N - 1.0) where j in i:M
  cov(j, i) = cov(i, j) where i in 0:j
}
";

#[test]
fn transposed_copies_match_the_interpreter() {
    let dir = tempdir();
    let mut cases = vec![
        (abs("examples/polybench/covariance.tc"), "N=37,M=29"),
        (abs("examples/polybench/correlation.tc"), "N=45,M=35"),
    ];
    for t in ["f32", "f64"] {
        let text = COPY_DOWN.replace("T(", &format!("{t}("));
        cases.push((
            write(dir.path(), &format!("down_{t}.tc"), &text),
            "N=37,M=29",
        ));
        let text = std::fs::read_to_string(abs("examples/polybench/covariance.tc"))
            .expect("covariance")
            .replace("f64", t);
        cases.push((
            write(dir.path(), &format!("cov_{t}.tc"), &text),
            "N=21,M=53",
        ));
    }
    for (file, params) in &cases {
        let (err, c) = compiled_c(file, params, &[]);
        assert!(err.contains(NOTE), "{file}: {err}");
        assert!(
            c.contains("/* tile of cov (4 x ") || c.contains("/* tile of corr (4 x "),
            "{file}: {c}"
        );
        for threads in ["1", "2"] {
            checked_on(file, params, threads);
        }
    }
}

#[test]
fn contiguous_dot_products_keep_the_fusion() {
    // The reduction reads A along its rows: fused with the copy, it runs as vectorised dot
    // products, and polyc keeps isl's schedule.
    let dir = tempdir();
    let text = "def syrks(f64(N, K) A) -> (f64(N, N) C) {\n  \
                C(i, j) +=! A(i, k) * A(j, k) where j in 0:i + 1\n  \
                C(i, j) = C(j, i) where j in i+1:N\n}\n";
    let file = write(dir.path(), "syrks.tc", text);
    let (err, _) = compiled_c(&file, "N=37,K=29", &[]);
    assert!(!err.contains(NOTE), "{err}");
    checked_on(&file, "N=37,K=29", "2");
}
