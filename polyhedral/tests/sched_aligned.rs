//! The schedule without search (`sched_aligned`) is isl's schedule where it applies, and
//! does not apply where isl's schedule is another.

use polyhedral::deps::{check_schedule, Deps};
use polyhedral::diag::SourceFile;
use polyhedral::isl::ffi::schedule_to_block_yaml;
use polyhedral::isl::Ctx;
use polyhedral::lang::{parser, sema};
use polyhedral::sched::{isl_schedule, IslSchedOptions};
use polyhedral::sched_aligned::aligned_schedule;
use polyhedral::scop::Scop;

/// The aligned schedule (if any) and isl's, both as isl block YAML, for `text` at `sizes`
/// (`None`: symbolic).
fn both(text: &str, sizes: &[Option<i64>]) -> (Option<String>, String) {
    let src = SourceFile::new("aligned.tc", text);
    let defs = parser::parse(&src).unwrap_or_else(|e| panic!("{e:?}"));
    let prog = sema::lower(&src, &defs[0]).unwrap_or_else(|e| panic!("{e:?}"));
    let ctx = Ctx::new();
    let scop = Scop::build(&ctx, &prog, sizes, &src).expect("model builds");
    let deps = Deps::compute(&scop).expect("dependences");
    let isl = isl_schedule(&ctx, &scop, &deps, &IslSchedOptions::default()).expect("isl");
    let aligned = aligned_schedule(&scop, &deps).expect("aligned");
    if let Some(a) = &aligned {
        assert_eq!(check_schedule(&deps, a).unwrap(), Ok(()));
    }
    (
        aligned.map(|a| schedule_to_block_yaml(&a).expect("prints")),
        schedule_to_block_yaml(&isl).expect("prints"),
    )
}

/// Every size bound to `values`, and every size symbolic.
fn size_sets(values: &[i64]) -> [Vec<Option<i64>>; 2] {
    [
        values.iter().map(|v| Some(*v)).collect(),
        vec![None; values.len()],
    ]
}

fn chain(n: usize, dtype: &str) -> String {
    let mut s = format!("def chain({dtype}(N, M) T0) -> ({dtype}(N, M) T{n}) {{\n");
    for k in 1..=n {
        s.push_str(&format!("  T{k}(i, j) = T{}(i, j) * 1.01 + 0.5\n", k - 1));
    }
    s + "}\n"
}

#[test]
fn equals_isl_where_it_applies() {
    let programs = [
        (chain(5, "f32"), vec![37, 53]),
        (chain(3, "f64"), vec![1024, 7]),
        // Three dimensions, two outputs, one of them updated in place.
        (
            "def e(f64(B, H, W) X, f64(W) g) -> (f64(B, H, W) Y, f64(B, H, W) Z) {\n  \
             Y(b, h, w) = X(b, h, w) * g(w)\n  Y(b, h, w) = Y(b, h, w) + 1\n  \
             Z(b, h, w) = tanh(Y(b, h, w)) + X(b, h, w)\n}\n"
                .to_string(),
            vec![3, 17, 29],
        ),
        // One dimension, a long fan-in.
        (
            "def f(f32(N) A, f32(N) B) -> (f32(N) E) {\n  C(i) = A(i) + B(i)\n  \
             D(i) = C(i) * A(i)\n  E(i) = D(i) + C(i) + B(i)\n}\n"
                .to_string(),
            vec![1000],
        ),
    ];
    for (text, values) in &programs {
        for sizes in size_sets(values) {
            let (aligned, isl) = both(text, &sizes);
            let aligned = aligned.unwrap_or_else(|| panic!("not aligned:\n{text}"));
            assert_eq!(aligned, isl, "\n{text} at {sizes:?}");
        }
    }
}

#[test]
fn leaves_other_programs_to_isl() {
    let programs = [
        // A transposed read: distance not zero.
        "def t(f32(N, N) A) -> (f32(N, N) C) {\n  B(i, j) = A(i, j) * 2\n  C(i, j) = B(j, i)\n}\n",
        // A shifted read (a stencil): isl shifts the statements.
        "def s(f32(N) A) -> (f32(N) C) {\n  B(i) = A(i) * 2 where i in 0:N\n  \
         C(i) = B(i) + B(i + 1) where i in 0:N-1\n}\n",
        // A reduction: a self-dependence.
        "def r(f32(N, M) A) -> (f32(N) C) {\n  B(i, j) = A(i, j) * 2\n  C(i) +=! B(i, j)\n}\n",
        // Statements of different depths.
        "def m(f32(N, M) A, f32(N) b) -> (f32(N, M) C) {\n  B(i) = b(i) * 2\n  \
         C(i, j) = A(i, j) + B(i)\n}\n",
        // A diamond: the first two statements may run in either order, and isl puts
        // them under a set node.
        "def d(f32(N, M) A) -> (f32(N, M) D) {\n  B(i, j) = A(i, j) * 2\n  \
         C(i, j) = A(i, j) + 1\n  D(i, j) = B(i, j) - C(i, j) * A(i, j)\n}\n",
        // Two independent parts: isl schedules each apart.
        "def p(f32(N) A, f32(N) B) -> (f32(N) C, f32(N) D) {\n  C(i) = A(i) * 2\n  \
         D(i) = B(i) + 1\n}\n",
    ];
    for text in programs {
        let n_sizes = if text.contains("M)") { 2 } else { 1 };
        let (aligned, _) = both(text, &vec![Some(40); n_sizes]);
        assert_eq!(aligned, None, "\n{text}");
    }
}
