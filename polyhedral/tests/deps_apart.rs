//! The dependences computed one tensor at a time equal those of the whole program at once
//! (`Deps::compute_by`), on every example, every PolyBench kernel, and a long program that
//! mixes element-wise statements, reductions, transposed reads and in-place updates.

use polyhedral::deps::Deps;
use polyhedral::diag::SourceFile;
use polyhedral::isl::isl_rs::UnionMap;
use polyhedral::isl::Ctx;
use polyhedral::lang::{parser, sema};
use polyhedral::scop::Scop;
use std::path::Path;

/// Whether the two ways agree on `text` (every def) at sizes `value` for every size, and
/// with every size symbolic. Returns how many models were compared.
fn agree(name: &str, text: &str, value: i64) -> usize {
    let src = SourceFile::new(name, text);
    let tc = name.contains("/tc/");
    let Ok(defs) = parser::parse_lang(&src, tc) else {
        return 0;
    };
    let mut compared = 0;
    for def in &defs {
        let Ok(prog) = sema::lower_lang(&src, def, tc) else {
            continue;
        };
        let n = prog.params.len();
        for sizes in [vec![Some(value); n], vec![None; n]] {
            let ctx = Ctx::new();
            let Ok(scop) = Scop::build(&ctx, &prog, &sizes, &src) else {
                continue;
            };
            let whole = Deps::compute_by(&scop, false).expect("whole-program dependences");
            let apart = Deps::compute_by(&scop, true).expect("per-tensor dependences");
            let same = |a: &UnionMap, b: &UnionMap| a.is_equal(b).expect("comparing");
            assert!(same(&whole.raw, &apart.raw), "RAW of {name} at {sizes:?}");
            assert!(same(&whole.war, &apart.war), "WAR of {name} at {sizes:?}");
            assert!(same(&whole.waw, &apart.waw), "WAW of {name} at {sizes:?}");
            compared += 1;
        }
    }
    compared
}

fn tc_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "tc"))
        .collect();
    out.sort();
    out
}

#[test]
fn per_tensor_equals_whole_program_on_examples_and_polybench() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("examples");
    let mut compared = 0;
    let mut files = tc_files(&root);
    files.extend(tc_files(&root.join("polybench")));
    files.extend(tc_files(&root.join("tc")));
    for f in &files {
        let text = std::fs::read_to_string(f).expect("readable");
        // Odd sizes, so that no tile or loop divides evenly.
        compared += agree(&f.display().to_string(), &text, 13);
    }
    // Every PolyBench kernel (30) and the examples, at two sizes each, at the least.
    assert!(compared >= 2 * 45, "only {compared} models compared");
}

#[test]
fn per_tensor_equals_whole_program_on_a_long_mixed_program() {
    let mut s = String::from("def mixed(f64(N, N) X, f64(N) v) -> (f64(N, N) Y29, f64(N) r) {\n");
    s.push_str("  Y0(i, j) = X(i, j) * 2\n");
    for k in 1usize..30 {
        let p = k - 1;
        let line = match k % 5 {
            0 => format!("  Y{k}(i, j) = Y{p}(j, i) + v(j)\n"),
            1 => format!("  Y{k}(i, j) +=! Y{p}(i, m) * X(m, j)\n"),
            2 => format!("  Y{k}(i, j) = Y{p}(i, j) - X(i, j)\n  Y{k}(i, j) = Y{k}(i, j) * 0.5\n"),
            3 => format!(
                "  Y{k}(i, j) = Y{p}(i, j) + Y{}(i, j)\n",
                p.saturating_sub(2)
            ),
            _ => format!("  Y{k}(i, j) = tanh(Y{p}(i, j))\n"),
        };
        s.push_str(&line);
    }
    s.push_str("  r(i) +=! Y29(i, j)\n}\n");
    assert_eq!(agree("mixed.tc", &s, 11), 2, "the program must build:\n{s}");
}
