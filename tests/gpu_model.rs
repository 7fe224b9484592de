//! The GPU timing model (`targets::gpu::timing`) through the `polyc` binary: `explain`
//! prints its terms per kernel, and `--search model` on a GPU description ranks the
//! search's points by its total.

mod common;
use common::*;

/// The model's total for a compile, summed over the kernels `explain` reports.
fn modelled_ms(explain: &str) -> f64 {
    let totals: Vec<f64> = explain
        .lines()
        .filter(|l| l.trim_start().starts_with("model: "))
        .map(|l| {
            let t = l.split(" ms in all").next().unwrap();
            t.rsplit(' ').next().unwrap().parse::<f64>().unwrap()
        })
        .collect();
    assert!(!totals.is_empty(), "no model line in\n{explain}");
    totals.iter().sum()
}

/// SGEMM 4096³ on the H100 under the default policy: 128 × 128 blocks of 256 threads
/// whose 8 × 8 register tiles and overhead give 104 registers, so 2 blocks per SM, 4
/// waves of 264 blocks, compute-bound at the description's 67 TFLOP/s.
#[test]
fn explain_prints_the_model_terms() {
    let out = polyc_ok(&[
        "explain",
        "examples/matmul.tc",
        "--param",
        "M=4096,N=4096,K=4096",
        "--target",
        "h100",
    ]);
    let want = "    model: 2 block(s) per SM (limited by registers), 4 wave(s) per launch; per wave 0.5289 ms of arithmetic (of which 0.0000 ms exposed load latency) and 0.3357 ms of DRAM traffic: 2.1184 ms in all, compute-bound\n";
    assert!(out.contains(want), "missing `{want}` in\n{out}");
    let inputs = "      (its inputs: 104 registers per thread, the register tiles' and 40 more, at most what one block per SM allows; 256 step(s) of the K loop in 2 stage(s))\n";
    assert!(out.contains(inputs), "missing `{inputs}` in\n{out}");
    // Softmax's traffic dominates its arithmetic.
    let out = polyc_ok(&[
        "explain",
        "examples/softmax.tc",
        "--param",
        "R=8192,N=4096",
        "--target",
        "h100",
    ]);
    assert!(out.contains(" ms in all, memory-bound\n"), "{out}");
}

/// `--search model` on the H100 compiles every legal point and keeps the one with the
/// smallest modelled time: each point's own `explain` agrees.
#[test]
fn the_search_ranks_gpu_tiles_by_the_model() {
    let dir = tempdir();
    let spec = write(
        dir.path(),
        "s.tiles",
        "S_1: {32, 64, 128}@shared 4@register, {32, 64, 128}@shared 4@register, 16@shared\n",
    );
    let args = [
        "examples/matmul.tc",
        "--param",
        "M=1024,N=1000,K=1024",
        "--target",
        "h100",
    ];
    let mut compile = args.to_vec();
    compile.extend(["--tile-spec", spec.as_str(), "-o", "/dev/null"]);
    let o = polyc(&compile);
    assert_code(&o, 0);
    let err = stderr(&o);
    assert!(
        err.contains("polyc: search: 9 candidates, 9 legal (model, exhaustive), ranked by the target's modelled time (ms) (9 points compiled; best modelled time (ms) "),
        "{err}"
    );
    let picked = err
        .split("picked ")
        .nth(1)
        .expect("a picked point")
        .lines()
        .next()
        .unwrap()
        .to_string();
    let mut best = (f64::INFINITY, String::new());
    let mut picked_ms = None;
    for a in [32, 64, 128] {
        for b in [32, 64, 128] {
            let point = format!("S_1: {a}@shared 4@register, {b}@shared 4@register, 16@shared");
            let f = write(
                dir.path(),
                &format!("p{a}_{b}.tiles"),
                &format!("{point}\n"),
            );
            let mut explain = vec!["explain"];
            explain.extend(args);
            explain.extend(["--tile-spec", f.as_str()]);
            let ms = modelled_ms(&polyc_ok(&explain));
            if ms < best.0 {
                best = (ms, point.clone());
            }
            if point == picked {
                picked_ms = Some(ms);
            }
        }
    }
    assert_eq!(picked_ms, Some(best.0), "picked `{picked}`, best {best:?}");
}
