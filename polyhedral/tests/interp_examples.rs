//! Smoke test: every example of the repository's `examples/` (all must compile)
//! runs through the interpreter with every size 8, writes every element of every float
//! output (no poison NaN left), and executes exactly `count_instances` instances.

use polyhedral::data::generate_inputs;
use polyhedral::diag::SourceFile;
use polyhedral::interp::{count_instances, interpret};

#[test]
fn examples_run_in_the_interpreter() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples");
    let Ok(entries) = std::fs::read_dir(dir) else {
        panic!("no examples directory at {dir}");
    };
    let mut paths: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "tc"))
        .collect();
    paths.sort();
    let mut ran = 0;
    for path in paths {
        let src = SourceFile::read(path.to_str().unwrap()).unwrap();
        // Every bundled example must compile: a front-end error here is a failure.
        let prog = polyhedral::lang::compile(&src, None)
            .unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
        let sizes = vec![8i64; prog.params.len()];
        let (mut ts, ss) = generate_inputs(&prog, &sizes, 1);
        let st = interpret(&prog, &sizes, &mut ts, &ss)
            .unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
        assert_eq!(
            st.instances,
            count_instances(&prog, &sizes),
            "{}",
            path.display()
        );
        for &o in &prog.outputs {
            let t = &ts[o];
            let poisoned = (0..t.len()).filter(|&i| t.buf.get_f64(i).is_nan()).count();
            assert_eq!(
                poisoned,
                0,
                "{}: output {} keeps poison",
                path.display(),
                prog.tensors[o].name
            );
        }
        println!("{}: {} instances", path.display(), st.instances);
        ran += 1;
    }
    assert!(
        ran >= 12,
        "only {ran} examples ran; the repository ships at least 12"
    );
}
