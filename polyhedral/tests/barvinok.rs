//! barvinok loaded at run time next to polyc's own isl (linked statically by isl-rs):
//! counts, sums, bounds and evaluation through isl text, with both isl copies in use in
//! one process. Needs the library (`scripts/install-barvinok`, run by install-deps).

use polyhedral::barvinok::{Barvinok, BarvinokError, BoundKind};
use polyhedral::isl::ffi::count::set_count;
use polyhedral::isl::isl_rs::{DimType, Set};
use polyhedral::isl::Ctx;

fn barvinok() -> Barvinok {
    Barvinok::load().unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn triangle_count_sum_bound_eval() {
    let b = barvinok();
    // polyc's isl, before and after barvinok's.
    let ctx = Ctx::new();
    let tri = "[N] -> { [i, j] : 0 <= i < N and 0 <= j <= i }";
    let own = Set::read_from_str(&ctx.isl, tri).unwrap();

    let card = b.set_card(tri).unwrap();
    assert_eq!(card, "[N] -> { (1/2 * N + 1/2 * N^2) : N > 0 }");
    assert_eq!(b.eval(&card, &[("N".into(), 1000)]).unwrap(), "500500");
    assert_eq!(b.eval(&card, &[("N".into(), -3)]).unwrap(), "0");

    let fixed = own
        .fix_si(DimType::Param, 0, 37)
        .expect("fixing N in polyc's isl");
    assert_eq!(set_count(&fixed), Some(37 * 38 / 2));

    let per_row = b
        .map_card("[N] -> { [i] -> [j] : 0 <= i < N and 0 <= j <= i }")
        .unwrap();
    assert_eq!(per_row, "[N] -> { [i] -> (1 + i) : 0 <= i < N }");
    let sum = b.sum(&per_row).unwrap();
    assert_eq!(b.eval(&sum, &[("N".into(), 10)]).unwrap(), "55");

    let (max, tight) = b
        .bound("[N] -> { [i] -> (1 + i) : 0 <= i < N }", BoundKind::Max)
        .unwrap();
    assert!(tight, "{max}");
    assert_eq!(max, "[N] -> { max(N) : N > 0 }");

    let stride = b
        .set_card("[N] -> { [i] : 0 <= i < N and i mod 3 = 0 }")
        .unwrap();
    assert_eq!(stride, "[N] -> { floor((2 + N)/3) : N > 0 }");
    assert_eq!(b.eval(&stride, &[("N".into(), 7)]).unwrap(), "3");
    assert_eq!(
        b.scale(&stride, 4).unwrap(),
        "[N] -> { 4 * floor((2 + N)/3) : N > 0 }"
    );
    let g = b
        .gist_params("[N] -> { (2 * N) : N > 0 }", "[N] -> { : N >= 1 }")
        .unwrap();
    assert_eq!(g, "[N] -> { 2 * N }");
}

#[test]
fn parameter_order_and_unused_parameters_in_eval() {
    let b = barvinok();
    let card = b
        .set_card("[A, B] -> { [i, j] : 0 <= i < A and 0 <= j < 2B }")
        .unwrap();
    let v = b
        .eval(&card, &[("B".into(), 5), ("C".into(), 9), ("A".into(), 3)])
        .unwrap();
    assert_eq!(v, "30");
}

#[test]
fn bad_text_is_an_error() {
    let b = barvinok();
    match b.set_card("[N] -> { [i] : 0 <= i < }") {
        Err(BarvinokError::Isl { what, .. }) => assert!(what.contains("reading"), "{what}"),
        other => panic!("expected an isl error, got {other:?}"),
    }
}

#[test]
fn missing_library_says_how_to_install() {
    let dir = std::env::temp_dir().join(format!("polyc-no-barvinok-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let e = Barvinok::load_from(&dir)
        .err()
        .expect("an empty folder has no barvinok");
    let msg = e.to_string();
    assert!(
        e.help().starts_with("run scripts/install-barvinok"),
        "{}",
        e.help()
    );
    assert!(
        msg.contains(&format!("no libbarvinok*.so in {}", dir.display())),
        "{msg}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
