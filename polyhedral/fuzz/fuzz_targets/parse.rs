//! Fuzzes the `.tc` front end: any UTF-8 input must make `polyhedral::lang::compile` return
//! `Ok` or `Err` (and the error must render), never panic or overflow the stack.
//!
//! Run it (needs a nightly toolchain, which this project's build machine does not have):
//!
//! ```sh
//! cargo install cargo-fuzz
//! cd polyhedral/fuzz
//! cargo +nightly fuzz run parse
//! ```
//!
//! On stable Rust, `cargo test -p polyhedral --test lang_fuzz` runs the same property over
//! random text, token soups and mutated valid programs with proptest.
#![no_main]

use libfuzzer_sys::fuzz_target;
use polyhedral::diag::{render_plain, SourceFile};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let src = SourceFile::new("fuzz.tc", text);
    let entry = polyhedral::lang::def_names(&src)
        .ok()
        .and_then(|names| names.into_iter().next());
    for e in [None, entry.as_deref()] {
        if let Err(report) = polyhedral::lang::compile(&src, e) {
            let _ = render_plain(report.as_ref());
        }
    }
});
