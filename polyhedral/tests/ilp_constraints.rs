//! The schedule-constraints file (pinned loop orders): parsing, diagnostics, and pins
//! honoured or rejected by the ILP scheduler.

use polyhedral::deps::{check_schedule, Deps};
use polyhedral::diag::{render_plain, SourceFile};
use polyhedral::ilp::{ilp_schedule, parse_constraints, IlpOptions};
use polyhedral::isl::ffi::schedule_to_block_yaml;
use polyhedral::isl::Ctx;
use polyhedral::scop::Scop;

const CONV: &str = "def conv(f32(H, W) A, f32(KH, KW) B) -> (f32(H - KH + 1, W - KW + 1) C) {
  C(h, w) +=! A(h + kh, w + kw) * B(kh, kw)
}
";

const JACOBI: &str = "def jacobi1d(f32(T, N) A) -> (f32(N) Out) {
  A(t + 1, i) = (A(t, i - 1) + A(t, i) + A(t, i + 1)) / 3 where t in 0:T - 1, i in 1:N - 1
  Out(i) = A(T - 1, i)
}
";

/// Parses `constraints` against `program`; on success schedules with the pins and returns
/// the block YAML, otherwise the rendered error.
fn pinned(program: &str, constraints: &str) -> Result<String, String> {
    let src = SourceFile::new("p.tc", program);
    let prog = polyhedral::lang::compile(&src, None).expect("compiles");
    let ctx = Ctx::new();
    let scop = Scop::build(&ctx, &prog, &vec![None; prog.params.len()], &src).expect("model");
    let deps = Deps::compute(&scop).expect("deps");
    let file = SourceFile::new("pins.txt", constraints);
    let pins = parse_constraints(&file, &scop).map_err(|e| render_plain(e.as_ref()))?;
    let opts = IlpOptions {
        pins,
        ..IlpOptions::default()
    };
    let s = ilp_schedule(&ctx, &scop, &deps, &opts).map_err(|e| render_plain(e.as_ref()))?;
    assert_eq!(check_schedule(&deps, &s).unwrap(), Ok(()));
    Ok(schedule_to_block_yaml(&s).expect("prints"))
}

fn err(program: &str, constraints: &str) -> String {
    match pinned(program, constraints) {
        Ok(y) => panic!("expected an error, got\n{y}"),
        Err(e) => e,
    }
}

#[test]
fn pins_are_honoured() {
    // The reduction loops outermost: legal (the band stays permutable).
    let y = pinned(CONV, "# reduction first\n\nS_1 = kh, kw, h, w  # comment\n").unwrap();
    // (The accumulation chain from (kh, KW - 1) to (kh + 1, 0) ends the band after kh.)
    assert!(y.contains("[{ S_1[h, w, kh, kw] -> [(kh)] }]"), "{y}");
    assert!(
        y.contains("[{ S_1[h, w, kh, kw] -> [(kw)] }, { S_1[h, w, kh, kw] -> [(h)] }, { S_1[h, w, kh, kw] -> [(w)] }]"),
        "{y}"
    );
    insta::assert_snapshot!("pin_conv_reduction_first", y);
    // An empty file pins nothing.
    let free = pinned(CONV, "").unwrap();
    assert!(free.contains("S_1[h, w, kh, kw] -> [(h)] }, { S_1[h, w, kh, kw] -> [(w)]"));
    // Pins on both statements of Jacobi, in program order: legal.
    let y = pinned(JACOBI, "S_0=t,i\nS_1=i\n").unwrap();
    assert!(y.contains("S_0[t, i] -> [(t)] }"), "{y}");
    assert!(y.contains("S_0[t, i] -> [(i)] }"), "{y}");
}

#[test]
fn illegal_pin_names_the_dependence() {
    insta::assert_snapshot!("pin_illegal", err(JACOBI, "S_0 = i, t\n"));
}

#[test]
fn unknown_statement() {
    insta::assert_snapshot!("pin_unknown_statement", err(CONV, "S_7=h,w,kh,kw\n"));
}

#[test]
fn unknown_iterator() {
    insta::assert_snapshot!("pin_unknown_iterator", err(CONV, "S_1=h, x, kh, kw\n"));
}

#[test]
fn not_a_permutation() {
    insta::assert_snapshot!("pin_repeated_iterator", err(CONV, "S_1=h,w,h,kw\n"));
    insta::assert_snapshot!("pin_missing_iterator", err(CONV, "S_1=h,w,kh\n"));
}

#[test]
fn duplicate_statement() {
    insta::assert_snapshot!(
        "pin_duplicate_statement",
        err(CONV, "S_1=h,w,kh,kw\n# again\nS_1=kh,kw,h,w\n")
    );
}

#[test]
fn syntax_errors() {
    insta::assert_snapshot!("pin_no_equals", err(CONV, "S_1 h,w,kh,kw\n"));
    insta::assert_snapshot!("pin_no_statement", err(CONV, " = h,w\n"));
    insta::assert_snapshot!("pin_empty_entry", err(CONV, "S_1=h,,w,kh,kw\n"));
    insta::assert_snapshot!("pin_bad_name", err(CONV, "S-1=h,w,kh,kw\n"));
}
