//! The checker finds what it is for, on small made-up crates (so that a clean report on
//! polyc's own sources means something).

use std::fs;
use std::path::Path;

fn write(root: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let p = root.join(path);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }
}

fn report(files: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), files);
    let r = polyc_house::check(dir.path(), 5).unwrap();
    polyc_house::render(&r, 5)
}

#[test]
fn a_circle_between_two_files_is_found_with_its_names() {
    let text = report(&[
        ("tiling/src/lib.rs", "mod a;\nmod b;\n"),
        ("tiling/src/a.rs", "use crate::b::B;\npub struct A(B);\n"),
        (
            "tiling/src/b.rs",
            "pub struct B;\npub fn f() -> crate::a::A { todo!() }\n",
        ),
    ]);
    assert_eq!(
        text,
        "import circle: tiling/src/a.rs ↔ tiling/src/b.rs\n  \
         tiling/src/a.rs → tiling/src/b.rs (b::B)\n  \
         tiling/src/b.rs → tiling/src/a.rs (a::A)\n"
    );
}

#[test]
fn a_re_export_through_the_crate_root_is_followed_to_the_defining_file() {
    let text = report(&[
        (
            "tiling/src/lib.rs",
            "mod a;\nmod b;\npub use a::A;\npub use b::B;\n",
        ),
        (
            "tiling/src/a.rs",
            "pub struct A;\npub fn g(_: crate::B) {}\n",
        ),
        ("tiling/src/b.rs", "use crate::A;\npub struct B(A);\n"),
    ]);
    assert!(
        text.starts_with("import circle: tiling/src/a.rs ↔ tiling/src/b.rs\n"),
        "{text}"
    );
    assert!(!text.contains("lib.rs"), "{text}");
}

#[test]
fn a_parent_that_defines_what_its_children_share_and_re_exports_them_is_no_circle() {
    let text = report(&[
        ("tiling/src/lib.rs", "mod m;\n"),
        (
            "tiling/src/m/mod.rs",
            "mod c;\npub use c::C;\npub struct Shared;\n",
        ),
        (
            "tiling/src/m/c.rs",
            "use super::Shared;\npub struct C(Shared);\n",
        ),
    ]);
    assert_eq!(text, "");
}

#[test]
fn a_glob_import_ties_files_only_through_the_names_used() {
    let files = |used: &str| {
        vec![
            ("tiling/src/lib.rs", "mod a;\nmod b;\n".to_string()),
            (
                "tiling/src/a.rs",
                "use crate::b::*;\npub struct A;\n".to_string() + used,
            ),
            (
                "tiling/src/b.rs",
                "pub struct B;\npub fn f(_: crate::a::A) {}\n".to_string(),
            ),
        ]
    };
    let as_refs = |v: &Vec<(&'static str, String)>| {
        v.iter().map(|(p, t)| (*p, t.clone())).collect::<Vec<_>>()
    };
    let unused = as_refs(&files(""));
    let used = as_refs(&files("pub fn g(_: B) {}\n"));
    let r = |v: &Vec<(&str, String)>| {
        report(&v.iter().map(|(p, t)| (*p, t.as_str())).collect::<Vec<_>>())
    };
    assert_eq!(r(&unused), "");
    assert!(
        r(&used).contains("tiling/src/a.rs → tiling/src/b.rs (B)"),
        "{}",
        r(&used)
    );
}

#[test]
fn a_shared_layer_importing_a_target_folder_breaks_the_layer_rule() {
    let text = report(&[
        ("targets/src/lib.rs", "pub mod passes;\npub mod gpu;\n"),
        (
            "targets/src/passes/mod.rs",
            "pub fn p() { crate::gpu::launch(); }\n",
        ),
        ("targets/src/gpu/mod.rs", "pub fn launch() {}\n"),
    ]);
    assert_eq!(
        text,
        "layer rule: targets/src/passes/mod.rs must not import targets/src/gpu/mod.rs (gpu::launch)\n"
    );
}

#[test]
fn long_functions_are_counted_from_fn_to_the_closing_brace_and_tests_are_left_out() {
    let text = report(&[(
        "tiling/src/lib.rs",
        "pub struct S;\nimpl S {\n    pub fn long(&self) {\n        let _a = 1;\n        let _b = 2;\n        let _c = 3;\n        let _d = 4;\n    }\n}\n\
         pub fn short() {\n}\n\
         #[cfg(test)]\nmod tests {\n    #[test]\n    fn long_test() {\n        let _a = 1;\n        let _b = 2;\n        let _c = 3;\n        let _d = 4;\n    }\n}\n",
    )]);
    assert_eq!(
        text,
        "tiling/src/lib.rs:3: `S::long` is 6 lines (at most 5)\n"
    );
}

#[test]
fn target_folders_do_not_import_each_other_and_the_pipeline_no_command() {
    let text = report(&[
        (
            "targets/src/lib.rs",
            "pub mod cpu;\npub mod gpu;\npub mod passes;\n",
        ),
        (
            "targets/src/cpu/mod.rs",
            "pub fn c() { crate::gpu::g(); crate::passes::p(); }\n",
        ),
        ("targets/src/gpu/mod.rs", "pub fn g() {}\n"),
        ("targets/src/passes/mod.rs", "pub fn p() {}\n"),
        ("src/lib.rs", "pub mod commands;\npub mod pipeline;\n"),
        (
            "src/commands/mod.rs",
            "pub fn run() { crate::pipeline::compile(); }\n",
        ),
        (
            "src/pipeline/mod.rs",
            "pub fn compile() {}\npub fn bad() { crate::commands::run(); }\n",
        ),
    ]);
    assert_eq!(
        text,
        "import circle: src/commands/mod.rs ↔ src/pipeline/mod.rs\n  \
         src/commands/mod.rs → src/pipeline/mod.rs (pipeline::compile)\n  \
         src/pipeline/mod.rs → src/commands/mod.rs (commands::run)\n\
         layer rule: src/pipeline/mod.rs must not import src/commands/mod.rs (commands::run)\n\
         layer rule: targets/src/cpu/mod.rs must not import targets/src/gpu/mod.rs (gpu::g)\n"
    );
}
