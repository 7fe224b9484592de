//! Parametric tiling (issue 14, point 3): programs compiled with symbolic sizes are tiled
//! by the default policy, take their sizes as `int64_t` arguments, and one compiled
//! kernel runs and passes `--check` at many sizes given only at run time
//! (`polyc run --run-param`).

mod common;
use common::*;

/// The compiled C of `prog` with no size bound.
fn symbolic_c(prog: &str) -> String {
    polyc_ok(&[prog])
}

#[test]
fn symbolic_kernels_take_sizes_as_arguments() {
    for (prog, signature) in [
        (
            "examples/matmul.tc",
            "void matmul(int64_t M, int64_t K, int64_t N, const float *restrict A, const float *restrict B, float *restrict C) {",
        ),
        (
            "examples/conv_chain.tc",
            "void conv_chain(int64_t H, int64_t W, int64_t KH, int64_t KW, float *restrict A, const float *restrict B, float bias, float *restrict C) {",
        ),
        (
            "examples/softmax.tc",
            "void softmax(int64_t R, int64_t N, const float *restrict X, float *restrict Y) {",
        ),
    ] {
        let c = symbolic_c(prog);
        assert!(
            c.lines().any(|l| l == signature),
            "{prog}: no line `{signature}` in\n{c}"
        );
        // A bound size is checked by the entry point ("size M is compiled in"); none is.
        assert!(
            !c.contains("is compiled in"),
            "{prog}: a size is compiled in:\n{c}"
        );
    }
}

#[test]
fn default_policy_tiles_symbolic_bands() {
    // matmul with no size bound gets the spec it gets at 1024 x 1024 x 1024: the unknown
    // extents are sized as if they were 1024, and every footprint is a box bounded by the
    // tile sizes.
    let out = polyc_ok(&["explain", "examples/matmul.tc"]);
    let want = "\
tile spec:
S_1: 256@L2 8@reg, 1024@L2 32@reg, 128@L2

S_0: tiled band #0
S_1: tiled band #0

band #0 (S_0, S_1; spec of S_1): Band {S_0 -> (i, j, 0); S_1 -> (i, j, k)} permutable coincident=[1,1,0]
  level        sizes            tensor   box              elements      bytes
  L2           256 x 1024 x 128 A        256 x 128           32768     131072
                                B        128 x 1024         131072     524288
                                C        256 x 1024         262144    1048576
               total 1703936 bytes of 2097152 (393216 left)
  reg          8 x 32 x -       A        8 x 128              1024       4096
                                B        128 x 32             4096      16384
                                C        8 x 32                256       1024
               total 21504 bytes touched per tile; the 2048 bytes of reg hold only the register tiles
";
    assert!(out.starts_with(want), "explain output:\n{out}");
    let bound = polyc_ok(&[
        "explain",
        "examples/matmul.tc",
        "--param",
        "M=1024,N=1024,K=1024",
    ]);
    assert!(bound.starts_with("tile spec:\nS_1: 256@L2 8@reg, 1024@L2 32@reg, 128@L2\n"));
    assert!(
        out.contains(
            "  #0 B in L2 below S_0, S_1: 128 x 1024 = 524288 bytes, 1024.0 accesses per element, copy in; stored in blocks of 128 x 32 (the inner tiles)\n"
        ),
        "explain output:\n{out}"
    );

    // The softmax's normalisation and the conv chain's bias add: 2-D tiles, the last one
    // partial at run time.
    let out = polyc_ok(&["explain", "examples/softmax.tc"]);
    assert!(
        out.starts_with("tile spec:\nS_5: 128@L2 32@L1, 256@L2 64@L1\n"),
        "explain output:\n{out}"
    );
    // The conv chain at symbolic sizes: isl's fused schedule is skewed, so polyc schedules
    // the components apart; the convolution then gets register tiles, and the live-out's
    // 2-D tiles fuse it.
    let out = polyc_ok(&["explain", "examples/conv_chain.tc", "--param", "KH=3,KW=3"]);
    for line in [
        "S_2: 128@L2 4@reg, 1024@L2 32@reg",
        "S_4: 512@L2 64@L1, 512@L2 64@L1",
        "  copy of S_2 keeps its register tiles inside the fused tile",
    ] {
        assert!(
            out.lines().any(|l| l == line),
            "{line}: explain output:\n{out}"
        );
    }

    // The full tiles are a version of their own with constant trip counts: the register
    // tile's 8 x 32 loops and the 128 reduction steps, behind a branch marked likely.
    let c = symbolic_c("examples/matmul.tc");
    assert!(
        c.contains("if (__builtin_expect(!!(M - 256 * c2 - 1 >= 255 && K - 128 * c1 - 1 >= 127"),
        "no full-tile version in\n{c}"
    );
    assert!(c.contains("for (int64_t c5 = 1; c5 <= 127; c5 += 1) {"));
    assert!(c.contains("for (int64_t c6 = 0; c6 <= 7; c6 += 1) {"));
    assert!(c.contains("for (int64_t c7 = 0; c7 <= 31; c7 += 1) {"));
}

#[test]
fn a_tile_that_grows_with_a_symbolic_size_is_refused() {
    let dir = tempdir();
    // k is left untiled, so an L2 tile holds 256 x K elements of A: no capacity holds for
    // every K.
    let spec = write(dir.path(), "mm.spec", "S_1: 256@L2, 1024@L2\n");
    let err = flat(&polyc_err(&["examples/matmul.tc", "--tile-spec", &spec]));
    for part in [
        "mm.spec:1:1: the L2 tile of `S_1` touches data that grows with the symbolic sizes (A, B), so it does not fit the 2097152 bytes of L2 for every size",
        "L2 footprint not bounded by the tile sizes",
        "help: give every band member with a symbolic extent that A, B span a size at L2 (or bind the sizes with --param)",
    ] {
        assert!(err.contains(part), "no `{part}` in {err}");
    }
    // With every member tiled the same spec family is accepted, and runs.
    let spec = write(dir.path(), "ok.spec", "S_1: 256@L2, 1024@L2, 128@L2\n");
    let out = polyc_ok(&[
        "run",
        "examples/matmul.tc",
        "--tile-spec",
        &spec,
        "--check",
        "--run-param",
        "M=300,N=1030,K=129",
    ]);
    assert!(
        out.contains("C: max_abs_err=0.000e0 max_rel_err=0.000e0 ok"),
        "{out}"
    );
}

/// Runs `prog`, compiled once with no size bound, at every set of sizes, and checks that
/// each run passed `--check` against the oracle.
fn run_many(prog: &str, sets: &[&str], outputs: &[&str]) {
    let mut args = vec!["run", prog, "--check"];
    for s in sets {
        args.push("--run-param");
        args.push(s);
    }
    let o = polyc(&args);
    assert_code(&o, 0);
    let out = stdout(&o);
    let err = stderr(&o);
    assert!(
        err.contains(&format!("ran at {} sizes", sets.len())),
        "{prog}: not one compile for all sizes:\n{err}"
    );
    let blocks: Vec<&str> = out.split("sizes ").skip(1).collect();
    assert_eq!(blocks.len(), sets.len(), "{prog}:\n{out}");
    for (set, block) in sets.iter().zip(&blocks) {
        let shown = set.replace(',', ", ");
        let header = block.lines().next().unwrap_or("");
        // The header lists every size in the program's order: compare as sets.
        let mut want: Vec<&str> = shown.split(", ").collect();
        let mut got: Vec<&str> = header.split(':').next().unwrap_or("").split(", ").collect();
        want.sort_unstable();
        got.sort_unstable();
        assert_eq!(got, want, "{prog}: header `{header}`");
        for t in outputs {
            assert!(
                block
                    .lines()
                    .any(|l| l.trim_start().starts_with(&format!("{t}: ")) && l.ends_with(" ok")),
                "{prog} at {set}: `{t}` not checked ok:\n{block}"
            );
        }
        assert!(!block.contains("MISMATCH"), "{prog} at {set}:\n{block}");
    }
}

#[test]
fn matmul_one_kernel_many_sizes() {
    run_many(
        "examples/matmul.tc",
        &[
            "M=1,K=1,N=1",
            "M=7,K=7,N=7",
            "M=53,K=97,N=7",
            "M=97,K=53,N=257",
            "M=64,K=64,N=64",
            "M=256,K=256,N=256",
            "M=1024,K=1024,N=1024",
        ],
        &["C"],
    );
}

#[test]
fn conv_chain_one_kernel_many_sizes() {
    run_many(
        "examples/conv_chain.tc",
        &[
            "H=1,W=1,KH=1,KW=1",
            "H=7,W=7,KH=3,KW=3",
            "H=53,W=97,KH=5,KW=2",
            "H=97,W=53,KH=3,KW=3",
            "H=64,W=64,KH=3,KW=3",
            "H=256,W=256,KH=3,KW=3",
        ],
        &["C", "A"],
    );
}

#[test]
fn softmax_one_kernel_many_sizes() {
    run_many(
        "examples/softmax.tc",
        &[
            "R=1,N=1",
            "R=7,N=7",
            "R=53,N=97",
            "R=97,N=53",
            "R=64,N=64",
            "R=256,N=256",
            "R=1024,N=1031",
        ],
        &["Y"],
    );
}

#[test]
fn run_param_errors() {
    let err = flat(&polyc_err(&[
        "run",
        "examples/matmul.tc",
        "--param",
        "M=5",
        "--run-param",
        "M=4,K=2,N=3",
    ]));
    assert!(
        err.contains(
            "--run-param: `M` is bound at compile time to 5 (--param), so the kernel cannot run with M=4"
        ),
        "{err}"
    );
    let err = flat(&polyc_err(&[
        "run",
        "examples/matmul.tc",
        "--run-param",
        "M=4,N=3",
    ]));
    assert!(
        err.contains("polyc run needs concrete sizes, but K is symbolic"),
        "{err}"
    );
    assert!(err.contains("--run-param K=64"), "{err}");
    let err = polyc_err(&[
        "run",
        "examples/matmul.tc",
        "--run-param",
        "M=4,N=3,K=2,Q=1",
    ]);
    assert!(
        err.contains("--run-param: `Q` is not a size of `matmul`"),
        "{err}"
    );
    let err = polyc_err(&["run", "examples/matmul.tc", "--run-param", "M=0,N=3,K=2"]);
    assert!(
        err.contains("--run-param: `M=0` is not a positive size"),
        "{err}"
    );
}
