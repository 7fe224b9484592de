//! Stable-Rust stand-in for the cargo-fuzz target `polyhedral/fuzz/fuzz_targets/parse.rs`:
//! random text, random token soups and mutated valid programs go through
//! `polyhedral::lang::compile`, which must return `Ok` or `Err` and never panic. Errors are
//! also rendered, so every span the front end produces must be drawable.

use polyhedral::diag::{render_plain, SourceFile};
use polyhedral::ir::{Aff, Program, StmtBody, TensorRole};
use polyhedral::lang::{compile, def_names};
use proptest::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Valid programs that mutations start from.
const SEEDS: &[&str] = &[
    "def conv_chain(f32(H, W) A, f32(KH, KW) B, f32 bias) -> (f32(H - KH + 1, W - KW + 1) C) {
  A(h, w) = A(h, w) + bias
  C(h, w) +=! A(h + kh, w + kw) * B(kh, kw)
  C(h, w) = abs(C(h, w))
  C(h, w) = relu(C(h, w))
}",
    "def tri(f64(N, N) L, f64(N) x) -> (f64(N) y) {
  y(i) +=! L(i, k) * x(k) where k in 0:i+1
}
def q(f32(H, W, 4) I) -> (f32(2 * H, 2 * W) O) {
  O(y, x) = I(floordiv(y, 2), floordiv(x, 2), 2 * (y % 2) + x % 2)
}",
    "def softmax(f32(R, N) X) -> (Y) {
  mx(r) max=! X(r, j)
  e(r, j) = exp(X(r, j) - mx(r)); s(r) +=! e(r, j)
  Y(r, j) = e(r, j) / s(r) + 0 * N
}",
    "def sel(f32(N) a, i8(N) b, f32 alpha) -> (i32(N) m, o) {
  m(i) = select(a(i) > b(i), cast<i32>(a(i)), b(i)) * 2 - min(i, N) % 3
  o(i) min=! m(i) >= 0 == 1 != (a(i) < b(i)) where i in 0:N
}",
    "def s2(f32(CI, H, W) I, f32(CO, CI, KH, KW) Wt) -> (O) {
  O(co, h, w) +=! I(ci, 2 * h + kh, 2 * w + kw) * Wt(co, ci, kh, kw)
  O(co, h, w) *= -1.5e-3
}",
];

/// Pieces of the language for token soups and insertions.
const VOCAB: &[&str] = &[
    "def",
    "f",
    "(",
    ")",
    "{",
    "}",
    "->",
    ",",
    ";",
    ":",
    "\n",
    " ",
    "f32",
    "i8",
    "i32",
    "f16",
    "f64",
    "i64",
    "A",
    "B",
    "C",
    "N",
    "M",
    "i",
    "j",
    "k",
    "=",
    "+=",
    "*=",
    "max=",
    "min=",
    "!",
    "+=!",
    "max",
    "min",
    "where",
    "in",
    "0",
    "1",
    "2",
    "-1",
    "2.5",
    "1e3",
    "+",
    "-",
    "*",
    "/",
    "%",
    "<",
    ">",
    "<=",
    "==",
    "!=",
    "floordiv",
    "select",
    "cast",
    "cast<",
    "exp",
    "relu",
    "#",
    "é",
    "×",
    "9999999999999999999999",
    "(((",
    ")))",
    "\t",
];

fn check(text: &str) {
    let src = SourceFile::new("fuzz.tc", text);
    let r = catch_unwind(AssertUnwindSafe(|| {
        let first = match def_names(&src) {
            Ok(names) => names.into_iter().next(),
            Err(e) => {
                render_plain(e.as_ref());
                None
            }
        };
        for entry in [None, first.as_deref()] {
            match compile(&src, entry) {
                Ok(p) => check_ir(&p),
                Err(e) => {
                    let text = render_plain(e.as_ref());
                    assert!(text.contains("fuzz.tc:"), "unlocated error: {text}");
                }
            }
        }
    }));
    assert!(r.is_ok(), "the front end panicked on:\n{text}");
}

/// The invariants the IR promises downstream stages.
fn check_ir(p: &Program) {
    fn aff_ok(a: &Aff, n_iters: usize, n_params: usize) -> bool {
        match a {
            Aff::Const(_) => true,
            Aff::Iter(i) => *i < n_iters,
            Aff::Param(q) => *q < n_params,
            Aff::Add(x, y) | Aff::Sub(x, y) => {
                aff_ok(x, n_iters, n_params) && aff_ok(y, n_iters, n_params)
            }
            Aff::Mul(_, x) | Aff::Neg(x) => aff_ok(x, n_iters, n_params),
            Aff::FloorDiv(x, c) | Aff::Mod(x, c) => *c > 0 && aff_ok(x, n_iters, n_params),
        }
    }
    let np = p.params.len();
    for t in &p.tensors {
        assert!(t
            .shape
            .iter()
            .all(|a| a.is_param_only() && aff_ok(a, 0, np)));
    }
    for o in &p.outputs {
        assert_eq!(p.tensors[*o].role, TensorRole::Output);
    }
    for (k, s) in p.stmts.iter().enumerate() {
        assert_eq!(s.name, format!("S_{k}"));
        assert!(s.n_lhs_iters <= s.iters.len());
        assert_eq!(s.dtype, p.tensors[s.lhs].dtype);
        assert_eq!(s.lhs_index.len(), p.tensors[s.lhs].shape.len());
        for (i, it) in s.iters.iter().enumerate() {
            assert!(!it.lower.is_empty() && !it.upper.is_empty());
            // Bounds use sizes and earlier iterators only.
            assert!(it.lower.iter().chain(&it.upper).all(|a| aff_ok(a, i, np)));
        }
        let n = s.iters.len();
        assert!(s.lhs_index.iter().all(|a| aff_ok(a, n, np)));
        for (t, idx, _) in s.reads() {
            assert_eq!(idx.len(), p.tensors[t].shape.len());
            assert!(idx.iter().all(|a| aff_ok(a, n, np)));
        }
        if let StmtBody::Init(_) = s.body {
            assert_eq!(s.n_lhs_iters, n);
        }
    }
}

/// Snaps a byte position to a char boundary.
fn boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[derive(Clone, Debug)]
enum Mutation {
    Delete(usize, usize),
    Insert(usize, usize),
    Duplicate(usize, usize, usize),
    Swap(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 0usize..8).prop_map(|(a, n)| Mutation::Delete(a, n)),
        (any::<usize>(), 0..VOCAB.len()).prop_map(|(a, v)| Mutation::Insert(a, v)),
        (any::<usize>(), 0usize..30, any::<usize>())
            .prop_map(|(a, n, b)| Mutation::Duplicate(a, n, b)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::Swap(a, b)),
    ]
}

fn apply(mut s: String, muts: &[Mutation]) -> String {
    for m in muts {
        let len = s.len().max(1);
        match *m {
            Mutation::Delete(a, n) => {
                let a = boundary(&s, a % len);
                let b = boundary(&s, a + n);
                s.replace_range(a..b, "");
            }
            Mutation::Insert(a, v) => {
                let a = boundary(&s, a % len);
                s.insert_str(a, VOCAB[v]);
            }
            Mutation::Duplicate(a, n, b) => {
                let a = boundary(&s, a % len);
                let e = boundary(&s, a + n);
                let piece = s[a..e].to_string();
                let b = boundary(&s, b % len);
                s.insert_str(b, &piece);
            }
            Mutation::Swap(a, b) => {
                // Swap two characters.
                let chars: Vec<char> = s.chars().collect();
                if chars.len() > 1 {
                    let (a, b) = (a % chars.len(), b % chars.len());
                    let mut chars = chars;
                    chars.swap(a, b);
                    s = chars.into_iter().collect();
                }
            }
        }
    }
    s
}

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(20000))]

    #[test]
    fn mutated_valid_programs(seed in 0..SEEDS.len(), muts in prop::collection::vec(mutation(), 1..6)) {
        check(&apply(SEEDS[seed].to_string(), &muts));
    }
}

proptest! {
    #![proptest_config(config(10000))]

    #[test]
    fn token_soup(toks in prop::collection::vec(0..VOCAB.len(), 0..60), header in any::<bool>()) {
        let body: String = toks.iter().map(|&t| VOCAB[t]).collect::<Vec<_>>().join(" ");
        let text = if header {
            format!("def f(f32(N, M) A, f32 s) -> (B) {{\n  {body}\n}}")
        } else {
            body
        };
        check(&text);
    }

    #[test]
    fn statement_soup(toks in prop::collection::vec(0..VOCAB.len(), 0..25)) {
        // A well-formed header and left side; random right-hand sides stress sema.
        let rhs: String = toks.iter().map(|&t| VOCAB[t]).collect::<Vec<_>>().join("");
        check(&format!("def f(f32(N, M) A, i8(N) C, f32 s) -> (B) {{\n  B(i, j) +=! {rhs}\n}}"));
    }
}

proptest! {
    #![proptest_config(config(5000))]

    #[test]
    fn arbitrary_text(text in "\\PC{0,200}") {
        check(&text);
    }
}

#[test]
fn seeds_are_valid() {
    for s in SEEDS {
        let src = SourceFile::new("seed.tc", *s);
        for name in def_names(&src).unwrap() {
            if let Err(e) = compile(&src, Some(&name)) {
                panic!("{}", render_plain(e.as_ref()));
            }
        }
    }
}

#[test]
fn pathological_inputs() {
    check(&"(".repeat(100_000));
    check(&format!(
        "def f(f32(N) A) -> (B) {{ B(i) = {}A(i) }}",
        "-".repeat(100_000)
    ));
    check(&format!(
        "def f(f32(N) A) -> (B) {{ B(i) = A(i){} }}",
        " * 2".repeat(100_000)
    ));
    check(&format!(
        "def f(f32(N) A) -> (B) {{ B(i) = A({}) }}",
        "floordiv(".repeat(1000) + "i" + &", 2)".repeat(1000)
    ));
    check("def f(i64(N) A) -> (B) { B(i) = A(9223372036854775807 * i + 9223372036854775807) }");
    check("def f(i64(N) A) -> (B) { B(i) = A(-9223372036854775807 - 1 - i) }");
    check("def f(f32(9223372036854775807) A) -> (B) { B(i) = A(2 * i) }");
    check("def f(f32(N) A) -> (B) { B(i) = A(i) where i in 0:9223372036854775807 * 2 }");
    check("\u{feff}def f(f32(N) A) -> (B) { B(i) = A(i) }");
    check("def f(f32(N) A) -> (B) { B(i) = A(i) }\r\n");
    check("");
}
