//! Storage folding through the `polyc` binary (`targets::codegen::contract`): a temporary
//! whose values along one index are live only a few at a time under the final schedule is
//! stored modulo that many. Jacobi with an explicit time dimension keeps 2 of its planes
//! (at PolyBench's LARGE size, 13.5 MB instead of 3.4 GB), a three-step recurrence 3; a
//! temporary whose planes are all read at the end keeps its shape. Every folded program
//! matches the interpreter, in f32 and f64, at sizes with partial tiles, on one and two
//! threads. Temporaries declared in the body (`f32(T, N, N) U`) come with it.

mod common;
use common::*;

/// What every fold note says after its sizes.
const TAIL: &str = "(--no-fold keeps its full shape)";

#[test]
fn explicit_time_jacobi_keeps_two_planes() {
    let file = abs("examples/jacobi2d_time.tc");
    let (err, c) = compiled_c(&file, "N=23,T=20", &[]);
    assert!(
        err.contains(
            "polyc: U is stored modulo 2 along its first index: under the final schedule no \
             element is overwritten while another that shares its storage is still to be read: \
             4.2 kB instead of 42.3 kB (--no-fold keeps its full shape)\n"
        ),
        "{err}"
    );
    assert!(
        c.contains("float *restrict U = (float *)malloc(sizeof(float) * (size_t)polyc_max(1, 2 * 23 * 23));"),
        "{c}"
    );
    assert!(c.contains("U[((t % 2) * 23 + i) * 23 + j]"), "{c}");
    let (err, c) = compiled_c(&file, "N=23,T=20", &["--no-fold"]);
    assert!(!err.contains(TAIL), "{err}");
    assert!(c.contains("polyc_max(1, 20 * 23 * 23)"), "{c}");
    assert!(!c.contains("% 2"), "{c}");
}

#[test]
fn explicit_time_jacobi_at_polybench_large_fits_in_two_planes() {
    // PolyBench's LARGE jacobi-2d: N = 1300, 500 steps.
    let file = abs("examples/jacobi2d_time.tc");
    let (err, c) = compiled_c(&file, "N=1300,T=500", &[]);
    assert!(
        err.contains("U is stored modulo 2 along its first index")
            && err.contains(": 13.5 MB instead of 3.4 GB"),
        "{err}"
    );
    assert!(c.contains("polyc_max(1, 2 * 1300 * 1300)"), "{c}");
}

/// A three-step recurrence: step t + 3 reads steps t + 2 and t.
const REC3: &str = "def rec3(T(N) A) -> (T(N) Out) {
  T(S, N) U
  U(t, i) = A(i) + t where t in 0:3
  U(t + 3, i) = (U(t + 2, i) + U(t, i)) / 2 where t in 0:S - 3
  Out(i) = U(S - 1, i)
}
";

/// Jacobi whose planes are all read at the end: nothing can be folded.
const ALL_PLANES: &str = "def jsum(T(N, N) A) -> (T(N, N) Out) {
  T(S, N, N) U
  U(0, i, j) = A(i, j)
  U(t, 0, j) = A(0, j) where t in 1:S
  U(t, N - 1, j) = A(N - 1, j) where t in 1:S
  U(t, i, 0) = A(i, 0) where t in 1:S, i in 1:N - 1
  U(t, i, N - 1) = A(i, N - 1) where t in 1:S, i in 1:N - 1
  U(t + 1, i, j) = 0.2 * (U(t, i, j) + U(t, i - 1, j) + U(t, i + 1, j) + U(t, i, j - 1) + U(t, i, j + 1)) where t in 0:S - 1, i in 1:N - 1, j in 1:N - 1
  Out(i, j) +=! U(t, i, j)
}
";

#[test]
fn a_recurrence_keeps_as_many_planes_as_it_reads_back() {
    let dir = tempdir();
    for t in ["f32", "f64"] {
        let file = write(
            dir.path(),
            &format!("rec3_{t}.tc"),
            &REC3.replace("T(", &format!("{t}(")),
        );
        let (err, c) = compiled_c(&file, "N=37,S=29", &[]);
        assert!(
            err.contains("polyc: U is stored modulo 3 along its first index: "),
            "{err}"
        );
        assert!(c.contains("polyc_max(1, 3 * 37)"), "{c}");
        for threads in ["1", "2"] {
            checked_on(&file, "N=37,S=29", threads);
        }
    }
}

#[test]
fn planes_read_at_the_end_are_never_folded() {
    let dir = tempdir();
    let file = write(dir.path(), "jsum.tc", &ALL_PLANES.replace("T(", "f64("));
    let (err, c) = compiled_c(&file, "N=23,S=9", &[]);
    assert!(!err.contains(TAIL), "{err}");
    assert!(c.contains("polyc_max(1, 9 * 23 * 23)"), "{c}");
    checked_on(&file, "N=23,S=9", "2");
}

#[test]
fn folded_stencils_match_the_interpreter() {
    let dir = tempdir();
    let text = std::fs::read_to_string(abs("examples/jacobi2d_time.tc")).expect("the example");
    let f64_file = write(dir.path(), "j64.tc", &text.replace("f32", "f64"));
    // The form whose first statement fills every plane, which isl fuses into the time loop.
    let filled = "def jfill(f32(N, N) A) -> (f32(N, N) Out) {
  U(t, i, j) = A(i, j) where t in 0:T, i in 0:N, j in 0:N
  U(t + 1, i, j) = (U(t, i, j) + U(t, i - 1, j) + U(t, i + 1, j) + U(t, i, j - 1) + U(t, i, j + 1)) / 5 where t in 0:T - 1, i in 1:N - 1, j in 1:N - 1
  Out(i, j) = U(T - 1, i, j)
}
";
    let filled = write(dir.path(), "jfill.tc", filled);
    for file in [abs("examples/jacobi2d_time.tc"), f64_file, filled] {
        for params in ["N=37,T=13", "N=67,T=45"] {
            let (err, _) = compiled_c(&file, params, &[]);
            assert!(
                err.contains("U is stored modulo 2 along its first index"),
                "{file}: {err}"
            );
            for threads in ["1", "2"] {
                checked_on(&file, params, threads);
            }
        }
    }
}

#[test]
fn declared_temporaries_are_checked_like_other_declarations() {
    let dir = tempdir();
    let text = "def d(f32(N) A) -> (f32(N) B) {\n  f32(N) A\n  B(i) = A(i)\n}\n";
    let file = write(dir.path(), "twice.tc", text);
    let err = flat(&polyc_err(&["compile", &file, "--param", "N=4"]));
    assert!(
        err.contains("twice.tc:2:10: `A` is declared twice")
            && err.contains("give every input, output and temporary of a def its own name"),
        "{err}"
    );
    // A tensor named like a type is still a statement.
    let text = "def d(f32(N) A) -> (f32(N) B) {\n  f32(i) = A(i)\n  B(i) = f32(i)\n}\n";
    let file = write(dir.path(), "named.tc", text);
    checked_on(&file, "N=7", "1");
}
