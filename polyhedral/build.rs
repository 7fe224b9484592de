//! Generates the FFI to barvinok's isl-level counting functions with bindgen.
//!
//! The declarations come from polyc's own header `barvinok/decl.h`. bindgen's
//! dynamic-library mode makes a struct that loads every function from a library opened
//! at run time (with libloading), so that polyc never links barvinok (GPL) or the isl it
//! was built against.

use std::env;
use std::path::PathBuf;

fn main() {
    let header = "barvinok/decl.h";
    println!("cargo:rerun-if-changed={header}");
    println!("cargo:rerun-if-changed=build.rs");
    let bindings = bindgen::Builder::default()
        .header(header)
        .dynamic_library_name("BarvinokLib")
        .dynamic_link_require_all(true)
        .allowlist_function("isl_.*")
        .allowlist_type("isl_.*")
        .rustified_enum("isl_fold")
        .layout_tests(false)
        .generate()
        .expect("bindgen could not read polyhedral/barvinok/decl.h (is libclang installed? scripts/install-deps installs libclang-dev)");
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    bindings
        .write_to_file(out.join("barvinok_ffi.rs"))
        .expect("writing the generated barvinok FFI");
}
