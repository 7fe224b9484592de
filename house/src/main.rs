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
