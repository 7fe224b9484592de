//! polyc's own sources keep the rules: no import circle between files, no import that
//! breaks the layer rule, no function over 150 lines (see `ARCHITECTURE.md`).

#[test]
fn polyc_keeps_its_house_rules() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let report = polyc_house::check(&root, 150).expect("the sources parse");
    assert!(report.files > 100, "only {} files read", report.files);
    assert_eq!(polyc_house::render(&report, 150), "");
}
