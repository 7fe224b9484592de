//! `polyc-house [ROOT] [--max-lines N]`: prints every import circle between files and every
//! function over the limit (150 lines by default) in polyc's sources; exits 1 if it found
//! any, 2 if a source could not be read.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut max = 150;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--help" || a == "-h" {
            println!("usage: polyc-house [ROOT] [--max-lines N]\n\nReports import circles between files, imports that break the layer rule, and\nfunctions over N lines (default 150) in the crates of the polyc checkout at ROOT\n(default: this checkout). Exit code 0: none; 1: some; 2: the sources could not be read.");
            return ExitCode::SUCCESS;
        }
        if a == "--max-lines" {
            match args.next().and_then(|n| n.parse().ok()) {
                Some(n) => max = n,
                None => {
                    eprintln!("polyc-house: --max-lines needs a number, e.g. --max-lines 150");
                    return ExitCode::from(2);
                }
            }
        } else {
            root = PathBuf::from(a);
        }
    }
    match polyc_house::check(&root, max) {
        Err(e) => {
            eprintln!("polyc-house: {e}");
            ExitCode::from(2)
        }
        Ok(report) if report.files == 0 => {
            eprintln!(
                "polyc-house: no crate of polyc under {} (give the checkout's root folder)",
                root.display()
            );
            ExitCode::from(2)
        }
        Ok(report) => {
            let text = polyc_house::render(&report, max);
            print!("{text}");
            if text.is_empty() {
                println!(
                    "polyc-house: {} files, no import circle, no function over {max} lines",
                    report.files
                );
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
    }
}
