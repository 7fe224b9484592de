//! Interpreter throughput on a 256³ f32 matmul (the oracle of every check).
//! Run: `cargo bench -p polyhedral --bench interp_speed`.

use polyhedral::data::generate_inputs;
use polyhedral::diag::SourceFile;
use polyhedral::interp::interpret;

fn main() {
    let src = SourceFile::new(
        "matmul.tc",
        "def matmul(f32(M, K) A, f32(K, N) B) -> (f32(M, N) C) {\n  C(i, j) +=! A(i, k) * B(k, j)\n}\n",
    );
    let prog = polyhedral::lang::compile(&src, None).expect("matmul compiles");
    let sizes = [256i64; 3];
    let mut best = f64::MAX;
    let mut instances = 0;
    for _ in 0..5 {
        let (mut ts, ss) = generate_inputs(&prog, &sizes, 1);
        let t0 = std::time::Instant::now();
        instances = interpret(&prog, &sizes, &mut ts, &ss)
            .expect("runs")
            .instances;
        best = best.min(t0.elapsed().as_secs_f64());
    }
    println!(
        "interpreter: {instances} instances in {best:.3} s (best of 5): {:.1} M instances/s",
        instances as f64 / best / 1e6
    );
}
