//! Tensor Comprehensions' meaning in TC files, checked on values the reference interpreter
//! computes from chosen inputs (the end-to-end `--check` runs compare the compiled code
//! with that interpreter, so they cannot see a wrong meaning; these tests can).

use polyhedral::data::{generate_inputs, Buffer};
use polyhedral::diag::{render_plain, SourceFile};
use polyhedral::interp::interpret;
use polyhedral::ir::{DType, Program};
use polyhedral::lang::{compile_as, def_names_as, Lang};

fn compile(text: &str) -> Program {
    let src = SourceFile::new("t.tc", text);
    compile_as(&src, None, Lang::Auto).unwrap_or_else(|e| panic!("{}", render_plain(e.as_ref())))
}

fn err(text: &str, lang: Lang) -> String {
    let src = SourceFile::new("t.tc", text);
    match compile_as(&src, None, lang) {
        Ok(p) => panic!("expected an error, got {p:#?}"),
        Err(e) => render_plain(e.as_ref()),
    }
}

/// Runs `prog` with every size `n`, the inputs set by `set`, and returns every tensor.
fn run(prog: &Program, n: i64, set: impl Fn(&str, &mut Buffer)) -> Vec<(String, Vec<f64>)> {
    let sizes = vec![n; prog.params.len()];
    let (mut ts, ss) = generate_inputs(prog, &sizes, 0);
    for (t, data) in prog.tensors.iter().zip(ts.iter_mut()) {
        set(&t.name, &mut data.buf);
    }
    interpret(prog, &sizes, &mut ts, &ss).expect("interprets");
    prog.tensors
        .iter()
        .zip(&ts)
        .map(|(t, d)| {
            (
                t.name.clone(),
                (0..d.len()).map(|i| d.buf.get_f64(i)).collect(),
            )
        })
        .collect()
}

fn get<'a>(out: &'a [(String, Vec<f64>)], name: &str) -> &'a [f64] {
    &out.iter().find(|(n, _)| n == name).expect("tensor").1
}

#[test]
fn integer_division_rounds_down_and_remainders_are_not_negative() {
    let prog = compile(
        "def d(int32(N) A) -> (Q, R, Qn, Rn, F) {\n\
           Q(i) = A(i) / 3\n\
           R(i) = A(i) % 3\n\
           Qn(i) = A(i) / (0 - 2)\n\
           Rn(i) = A(i) % (0 - 2)\n\
           F(i) = 0.5 * (A(i) / 2)\n\
         }",
    );
    let dtypes: Vec<DType> = prog.tensors.iter().map(|t| t.dtype).collect();
    assert_eq!(
        dtypes,
        [
            DType::I32,
            DType::I32,
            DType::I32,
            DType::I32,
            DType::I32,
            DType::F32
        ]
    );
    let a = [-7, -1, 0, 5, 7];
    let out = run(&prog, 5, |name, b| {
        if let (Buffer::I32(v), "A") = (b, name) {
            v.copy_from_slice(&a);
        }
    });
    assert_eq!(get(&out, "Q"), [-3.0, -1.0, 0.0, 1.0, 2.0]);
    assert_eq!(get(&out, "R"), [2.0, 2.0, 0.0, 2.0, 1.0]);
    // Halide's Euclidean division: a negative divisor rounds up, the remainder stays >= 0.
    assert_eq!(get(&out, "Qn"), [4.0, 1.0, 0.0, -2.0, -3.0]);
    assert_eq!(get(&out, "Rn"), [1.0, 1.0, 0.0, 1.0, 1.0]);
    // An integer division inside a float statement is still an integer division.
    assert_eq!(get(&out, "F"), [-2.0, -0.5, 0.0, 1.0, 1.5]);
}

#[test]
fn output_types_follow_tc_promotion() {
    let prog = compile(
        "def t(double(N) A, int8(N) B, float(N) C) -> (I, D, W, F, L) {\n\
           I(i) = i + N where i in 0:N\n\
           D(i) = A(i) * 2\n\
           W(i) = B(i) * 2\n\
           F(i) = C(i) + B(i)\n\
           L(i) = 1.5 where i in 0:N\n\
         }",
    );
    let dtypes: Vec<(String, DType)> = prog
        .tensors
        .iter()
        .map(|t| (t.name.clone(), t.dtype))
        .collect();
    let want = [
        ("A", DType::F64),
        ("B", DType::I8),
        ("C", DType::F32),
        ("I", DType::I32),
        ("D", DType::F64),
        ("W", DType::I32),
        ("F", DType::F32),
        ("L", DType::F32),
    ];
    assert_eq!(
        dtypes,
        want.map(|(n, d)| (n.to_string(), d)).to_vec(),
        "types"
    );
}

#[test]
fn fractional_literals_are_floats_widened_in_double_statements() {
    let prog = compile("def w(double(N) A) -> (B) {\n B(i) = A(i) * 0 + 0.1\n}");
    let out = run(&prog, 2, |_, _| {});
    assert_eq!(get(&out, "B"), [0.1f32 as f64, 0.1f32 as f64]);
}

#[test]
fn where_clauses_bindings_and_exists() {
    let prog = compile(
        "def w(float(N) A, float(M) B) -> (S, E, P) {\n\
           S(i) = x * y where x = A(i), y = x + 1.0\n\
           E(j) = 2.0 where exists B(j)\n\
           P(i) +=! A(i + k) where k in 0:2\n\
         }",
    );
    // P's index takes A's bounds with k over its whole range: i < N - 1.
    let p = prog.tensors.iter().find(|t| t.name == "P").unwrap();
    assert_eq!(format!("{:?}", p.shape), "[Sub(Param(0), Const(1))]");
    let out = run(&prog, 4, |name, b| {
        if let (Buffer::F32(v), "A") = (b, name) {
            v.copy_from_slice(&[1.0, 2.0, 3.0, 4.0]);
        }
    });
    assert_eq!(get(&out, "S"), [2.0, 6.0, 12.0, 20.0]);
    assert_eq!(get(&out, "E"), [2.0; 4]);
    assert_eq!(get(&out, "P"), [3.0, 5.0, 7.0]);
}

#[test]
fn a_guarded_read_splits_the_statement() {
    // Only the taken branch is evaluated: X(t - 2) is read for t >= 2 only.
    let prog = compile(
        "def g(float(T) X) -> (Y) {\n\
           Y(t) = t >= 2 ? X(t - 2) : float(-1) where t in 0:T\n\
         }",
    );
    assert_eq!(prog.stmts.len(), 2);
    let out = run(&prog, 5, |name, b| {
        if let (Buffer::F32(v), "X") = (b, name) {
            v.copy_from_slice(&[10.0, 11.0, 12.0, 13.0, 14.0]);
        }
    });
    assert_eq!(get(&out, "Y"), [-1.0, -1.0, 10.0, 11.0, 12.0]);
    // A branch that adds zero is left out.
    let prog = compile(
        "def g(float(T) X, float(K) W) -> (Y) {\n\
           Y(t) +=! t - r_k >= 0 ? X(t - r_k) * W(r_k) : 0.0 where t in 0:T, r_k in 0:K\n\
         }",
    );
    assert_eq!(prog.stmts.len(), 2, "{:#?}", prog.stmts);
}

#[test]
fn newlines_do_not_end_statements() {
    let prog = compile(
        "def m(float(M, K) A, float(K, N) B) -> (C) { C(m, n)\n +=!\n A(m, r_k)\n *\n B(r_k, n) }",
    );
    assert_eq!(prog.stmts.len(), 2);
    let src = SourceFile::new(
        "t.tc",
        "def a(float(N) A) -> (B) { B(i) = A(i) }\ndef b(float(N) A) -> (B) { B(i) = A(i) }",
    );
    assert_eq!(def_names_as(&src, Lang::Tc).unwrap(), ["a", "b"]);
}

#[test]
fn detection_needs_tc_type_names_in_a_header() {
    // polyc's own language is not detected as TC.
    let p = compile("def f(f32(N) A) -> (B) {\n B(i) = A(i)\n}");
    assert_eq!(p.tensors[1].dtype, DType::F32);
    // `--lang polyc` refuses TC's types, with a hint.
    let e = err("def f(float(N) A) -> (B) { B(i) = A(i) }", Lang::Polyc);
    assert!(e.contains("unknown type `float`"), "{e}");
}

/// Random edits of the TC examples never make the front end panic: every input gets a
/// program or a located error.
#[test]
fn mutated_tc_programs_never_panic() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/tc");
    let mut seeds: Vec<String> = std::fs::read_dir(dir)
        .expect("examples/tc")
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    seeds.sort();
    assert!(seeds.len() >= 10);
    const PIECES: [&str; 24] = [
        "?", ":", " where ", "(", ")", "float", "!", "&&", "||", "=", ",", "+=!", " exists ",
        "for ", "<=>", ".1", "int32(", " r_k ", "max=!", "\n", "0:N", " x = ", "-", "uint8",
    ];
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n.max(1) as u64) as usize
    };
    for round in 0..20000 {
        let mut text = seeds[round % seeds.len()].clone().into_bytes();
        for _ in 0..1 + next(3) {
            let at = next(text.len() + 1);
            match next(3) {
                0 => {
                    let end = (at + next(12)).min(text.len());
                    text.drain(at..end);
                }
                1 => {
                    let p = PIECES[next(PIECES.len())].as_bytes();
                    text.splice(at..at, p.iter().copied());
                }
                _ => {
                    let end = (at + next(20)).min(text.len());
                    let dup: Vec<u8> = text[at..end].to_vec();
                    let to = next(text.len() + 1);
                    text.splice(to..to, dup);
                }
            }
        }
        let Ok(text) = String::from_utf8(text) else {
            continue;
        };
        let src = SourceFile::new("m.tc", text.clone());
        for lang in [Lang::Tc, Lang::Auto] {
            let r = std::panic::catch_unwind(|| {
                let names = def_names_as(&src, lang).unwrap_or_default();
                let _ = compile_as(&src, names.first().map(String::as_str), lang);
            });
            assert!(r.is_ok(), "the front end panicked on:\n{text}");
        }
    }
}

/// The left side takes no part in TC's range inference: the output index of a stencil is
/// bounded by its reads (h < H - KH + 1), not by the declared output (h < H), so the
/// stencil reads inside `A`. polyc's own language bounds `h` by `C` as well.
#[test]
fn the_left_side_does_not_bound_indices() {
    let prog = compile(
        "def conv(float(H) A, float(KH) B) -> (float(H) C) {\n\
           C(h) = 0.0 where h in 0:H\n\
           C(h) += A(h + r_kh) * B(r_kh)\n\
         }",
    );
    let h = &prog.stmts[1].iters[0];
    assert_eq!(
        format!("{:?} {:?}", h.lower, h.upper),
        "[Const(0)] [Add(Sub(Param(0), Param(1)), Const(1))]"
    );
    let out = run(&prog, 3, |name, b| {
        if let Buffer::F32(v) = b {
            match name {
                "A" => v.copy_from_slice(&[1.0, 2.0, 3.0]),
                "B" => v.copy_from_slice(&[1.0, 10.0, 100.0]),
                _ => {}
            }
        }
    });
    // Only h = 0 reads inside A; C(1) and C(2) keep the first statement's zeros.
    assert_eq!(get(&out, "C"), [321.0, 0.0, 0.0]);
}
