//! Regression tests for what a hostile-input campaign found (issue 22): each runs the
//! exact input through the polyc binary and compares the exact message, exit code or
//! result.

mod common;
use common::*;
use polyhedral::data::{Buffer, TensorData};
use std::path::Path;

fn hostile(name: &str) -> String {
    fixture(&format!("hostile/{name}"))
}

fn write_i32(dir: &Path, name: &str, values: &[i32]) {
    let t = TensorData {
        shape: vec![values.len()],
        buf: Buffer::I32(values.to_vec()),
    };
    polyhedral::npy::write_npy(&dir.join(format!("{name}.npy")), &t).expect("npy");
}

fn write_f32(dir: &Path, name: &str, values: &[f32]) {
    let t = TensorData {
        shape: vec![values.len()],
        buf: Buffer::F32(values.to_vec()),
    };
    polyhedral::npy::write_npy(&dir.join(format!("{name}.npy")), &t).expect("npy");
}

// ---- item 4: `--check` never says "ok" when nothing was checked ----------------------

#[test]
fn a_def_without_statements_is_an_error() {
    insta::assert_snapshot!(polyc_err(&[
        "run",
        &hostile("empty_def.tc"),
        "--param",
        "N=4",
        "--check"
    ]));
}

#[test]
fn a_negative_literal_extent_is_an_error() {
    insta::assert_snapshot!(polyc_err(&[
        "run",
        &hostile("negative_extent.tc"),
        "--param",
        "K=4",
        "--check"
    ]));
}

#[test]
fn an_output_no_instance_writes_is_an_error() {
    insta::assert_snapshot!(polyc_err(&[
        "run",
        &hostile("far_shift.tc"),
        "--param",
        "M=4,K=4",
        "--check"
    ]));
}

#[test]
fn a_declared_output_no_statement_writes_is_an_error() {
    insta::assert_snapshot!(polyc_err(&[
        &hostile("unwritten_output.tc"),
        "--param",
        "N=4"
    ]));
}

#[test]
fn nothing_checked_at_run_time_sizes_is_a_failure() {
    // Symbolic at compile time, so the domain is empty only at the run-time size.
    let o = polyc(&[
        "run",
        &hostile("far_shift.tc"),
        "--check",
        "--run-param",
        "M=4,K=4",
    ]);
    assert_code(&o, 3);
    assert_eq!(
        stdout(&o),
        "sizes M=4, K=4: kernel ran in ".to_string()
            + stdout(&o)
                .split("kernel ran in ")
                .nth(1)
                .and_then(|r| r.split('\n').next())
                .unwrap_or("")
            + "\n  oracle: reference interpreter (0 instances)\n  B: NOTHING CHECKED (the program writes none of its 4 elements at these sizes)\n"
    );
}

#[test]
fn elements_the_program_never_writes_are_counted() {
    // TC's declared output with a stencil: C's last KH - 1 elements keep their values.
    let dir = tempdir();
    let prog = write(
        dir.path(),
        "stencil.tc",
        "def s(float(H) A, float(KH) B) -> (float(H) C) {\n  C(h) +=! A(h + r_kh) * B(r_kh)\n}\n",
    );
    let o = polyc(&["run", &prog, "--param", "H=10,KH=3", "--check"]);
    assert_code(&o, 0);
    assert_eq!(
        stdout(&o),
        "C: max_abs_err=0.000e0 max_rel_err=0.000e0 (2 of 10 elements never written by the program) ok\n"
    );
}

// ---- item 5: a comprehension order that differs from the loop nest's ------------------

#[test]
fn lu_as_comprehensions_is_an_error_that_names_both_statements() {
    let err = polyc_err(&[
        "dump",
        &hostile("lu_comprehension.tc"),
        "--param",
        "N=5",
        "--stage",
        "initial",
    ]);
    insta::assert_snapshot!(err);
}

/// No example (PolyBench's translations included) is refused for its statement order.
#[test]
fn no_example_is_refused_for_its_order() {
    for dir in ["examples", "examples/tc", "examples/polybench"] {
        for e in std::fs::read_dir(root().join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_none_or(|x| x != "tc") {
                continue;
            }
            let rel = format!("{dir}/{}", p.file_name().unwrap().to_string_lossy());
            // At symbolic sizes some kernels are refused for other reasons (deriche's
            // `y1(i, 1)` is outside `y1` when H = 1); none for its order.
            let o = polyc(&["dump", &rel, "--stage", "initial"]);
            assert!(!stderr(&o).contains("loop nest"), "{rel}: {}", stderr(&o));
        }
    }
}

// ---- item 6: integer division by zero ------------------------------------------------

#[test]
fn a_constant_zero_divisor_is_a_compile_error() {
    insta::assert_snapshot!(polyc_err(&[
        &hostile("div_const_zero.tc"),
        "--param",
        "N=5"
    ]));
}

#[test]
fn a_folded_constant_zero_divisor_is_a_compile_error() {
    insta::assert_snapshot!(polyc_err(&[
        &hostile("rem_const_zero.tc"),
        "--param",
        "N=5"
    ]));
}

#[test]
fn a_zero_divisor_in_the_data_is_a_located_status_of_the_kernel() {
    let dir = tempdir();
    write_i32(dir.path(), "A", &[0, 1, 2, 3, 4]);
    write_i32(dir.path(), "D", &[1, 2, 0, 3, 4]);
    let inputs = dir.path().display().to_string();
    // The kernel finds it first (with or without --check); the run fails with exit 1.
    let prog = hostile("div_by_data.tc");
    for check in [false, true] {
        let mut args = vec!["run", &prog[..], "--param", "N=5"];
        args.extend(["--inputs", &inputs]);
        if check {
            args.push("--check");
        }
        let err = polyc_err(&args);
        insta::assert_snapshot!("div_by_data_kernel", err);
    }
}

/// The GPU twin of the test above: the kernels (OpenCL here) compute 0 and record the
/// first faulting statement in their fault status, which the runner reads back after the
/// launches; the run fails with the CPU's located error and exit code.
#[test]
fn a_zero_divisor_in_the_data_is_a_located_status_of_the_gpu_kernel() {
    let dir = tempdir();
    let d = dir.path();
    write_i32(d, "A", &[0, 1, 2, 3, 4]);
    write_i32(d, "D", &[1, 2, 0, 3, 4]);
    let inputs = d.display().to_string();
    let prog = hostile("div_by_data.tc");
    for check in [false, true] {
        let mut args = vec!["run", &prog[..], "--param", "N=5", "--target", "gpu"];
        args.extend(["--inputs", &inputs]);
        if check {
            args.push("--check");
        }
        let err = polyc_err(&args);
        insta::assert_snapshot!("div_by_data_kernel", err);
    }
    // Only the second statement divides by zero, in i64, at an odd size.
    let n = 7;
    let ints = |name: &str, v: Vec<i64>| {
        let t = TensorData {
            shape: vec![v.len()],
            buf: Buffer::I64(v),
        };
        polyhedral::npy::write_npy(&d.join(format!("{name}.npy")), &t).expect("npy");
    };
    ints("A", (0..n).map(|i| 100 - 7 * i).collect());
    ints("E", (0..n).map(|i| i + 1).collect());
    ints(
        "D",
        (0..n).map(|i| if i == 5 { 0 } else { 3 - i }).collect(),
    );
    write(
        d,
        "rem.tc",
        "def q(i64(N) A, i64(N) D, i64(N) E) -> (i64(N) B, i64(N) R) {\n  B(i) = A(i) / E(i)\n  R(i) = A(i) % D(i)\n}\n",
    );
    for target in ["cpu", "gpu"] {
        let o = polyc_in(
            d,
            &[
                "run", "rem.tc", "--param", "N=7", "--inputs", ".", "--target", target, "--check",
            ],
        );
        assert_code(&o, 1);
        let err = flat(&stderr(&o));
        assert!(
            err.contains("rem.tc:3:3: S_1: integer division or remainder by zero (found by the kernel, which computed 0 there)"),
            "{target}: {err}"
        );
    }
    // Without a zero divisor the GPU run checks (MIN / -1 wraps as in the interpreter).
    write_i32(d, "A", &[i32::MIN, 7, -7, i32::MIN, 5]);
    write_i32(d, "D", &[-1, -1, 2, 3, -5]);
    run_checked(&[
        "run", &prog, "--param", "N=5", "--inputs", &inputs, "--target", "gpu", "--check",
    ]);
}

#[test]
fn min_divided_by_minus_one_wraps_in_kernel_and_interpreter() {
    let dir = tempdir();
    write_i32(dir.path(), "A", &[i32::MIN, 7, -7, i32::MIN, 5]);
    write_i32(dir.path(), "D", &[-1, -1, 2, 3, -5]);
    let inputs = dir.path().display().to_string();
    let out = dir.path().join("out");
    let save = out.display().to_string();
    run_checked(&[
        "run",
        &hostile("div_by_data.tc"),
        "--param",
        "N=5",
        "--inputs",
        &inputs,
        "--check",
        "--save-io",
        &save,
    ]);
    let b = polyhedral::npy::read_npy(&out.join("B.npy")).unwrap();
    let r = polyhedral::npy::read_npy(&out.join("R.npy")).unwrap();
    assert_eq!(b.buf, Buffer::I32(vec![i32::MIN, -7, -3, -715827882, -1]));
    assert_eq!(r.buf, Buffer::I32(vec![0, 0, -1, -2, 0]));
}

#[test]
fn float_division_by_zero_follows_ieee() {
    let dir = tempdir();
    write_f32(dir.path(), "A", &[1.0, -1.0, 0.0, 2.0]);
    write_f32(dir.path(), "D", &[0.0, 0.0, 0.0, 4.0]);
    let inputs = dir.path().display().to_string();
    let out = dir.path().join("out");
    let save = out.display().to_string();
    run_checked(&[
        "run",
        &hostile("div_float.tc"),
        "--param",
        "N=4",
        "--inputs",
        &inputs,
        "--check",
        "--save-io",
        &save,
    ]);
    let b = polyhedral::npy::read_npy(&out.join("B.npy")).unwrap();
    let Buffer::F32(v) = b.buf else { panic!("f32") };
    assert_eq!(v[0], f32::INFINITY);
    assert_eq!(v[1], f32::NEG_INFINITY);
    assert!(v[2].is_nan());
    assert_eq!(v[3], 0.5);
}

// ---- items 7-9: huge sizes -----------------------------------------------------------

#[test]
fn sizes_whose_tensors_overflow_64_bit_indices_are_refused() {
    insta::assert_snapshot!(polyc_err(&[
        "examples/matmul.tc",
        "--param",
        "M=4611686018427387904,N=4611686018427387904,K=4611686018427387904"
    ]));
}

#[test]
fn a_literal_extent_of_2_to_the_62_is_refused() {
    let dir = tempdir();
    write(
        dir.path(),
        "big.tc",
        "def big(f32(4611686018427387904) A) -> (f32(4611686018427387904) B) {\n  B(i) = A(i)\n}\n",
    );
    let o = polyc_in(dir.path(), &["big.tc"]);
    assert_code(&o, 1);
    insta::assert_snapshot!(stderr(&o));
}

#[test]
fn a_huge_param_through_run_is_refused_before_allocating() {
    // Formerly a capacity overflow (panic) in TensorData::random.
    for args in [
        vec![
            "run",
            "examples/matmul.tc",
            "--param",
            "M=4611686018427387904,N=3,K=3",
        ],
        vec![
            "run",
            "examples/matmul.tc",
            "--run-param",
            "M=4611686018427387904,N=3,K=3",
        ],
    ] {
        let o = polyc(&args);
        assert_code(&o, 1);
        assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    }
}

#[test]
fn data_larger_than_the_memory_is_refused_with_the_bytes() {
    // Formerly "memory allocation of … failed" and exit 134.
    let unwrap = |e: String| e.replace("\n  │ ", " ");
    let err = unwrap(polyc_err(&[
        "run",
        "examples/matmul.tc",
        "--param",
        "M=2147483648,N=3,K=3",
    ]));
    assert!(
        err.contains("polyc run needs about 96.0 GiB for the data at M=2147483648, K=3, N=3 (A: 24.0 GiB, C: 24.0 GiB, B: 36 bytes, with the oracle's copy), but this machine has"),
        "{err}"
    );
    let err = unwrap(polyc_err(&[
        "run",
        "examples/matmul.tc",
        "--param",
        "M=100000,N=100000,K=100000",
    ]));
    assert!(err.contains("polyc run needs about 223.5 GiB"), "{err}");
}

#[test]
fn softmax_at_2_to_the_24_compiles_at_once() {
    // Formerly a stall after tiling: isl enumerated 2^48 points to count them.
    let dir = tempdir();
    let out = dir.path().join("sm.c").display().to_string();
    polyc_ok(&[
        "examples/softmax.tc",
        "--param",
        "R=16777216,N=16777216",
        "-o",
        &out,
    ]);
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .contains("void softmax("));
}

// ---- item 10: caps --------------------------------------------------------------------

#[test]
fn more_statements_than_the_cap_is_a_located_error() {
    insta::assert_snapshot!(polyc_err(&[
        &hostile("many_statements.tc"),
        "--param",
        "N=64"
    ]));
}

#[test]
fn the_cap_can_be_raised() {
    let o = polyc(&[
        "dump",
        &hostile("many_statements.tc"),
        "--param",
        "N=4",
        "--max-statements",
        "300",
        "--stage",
        "initial",
        "--no-default-tiling",
    ]);
    assert_code(&o, 0);
}

/// The largest product of the trip counts of nested `#pragma GCC unroll` loops in `c`.
fn unrolled_product(c: &str) -> i64 {
    let mut stack: Vec<(usize, i64)> = Vec::new(); // (brace depth, trip) of unrolled loops
    let mut depth = 0usize;
    let mut pending = false;
    let mut worst = 1;
    for line in c.lines() {
        let t = line.trim();
        if t.starts_with("#pragma GCC unroll") {
            pending = true;
            continue;
        }
        if pending && t.starts_with("for (") {
            // for (int64_t c3 = A; c3 <= B; c3 += 1) {
            let nums: Vec<i64> = t
                .split(|ch: char| !ch.is_ascii_digit() && ch != '-')
                .filter_map(|x| x.parse().ok())
                .collect();
            let trip = match nums.as_slice() {
                [_, a, b, ..] => b - a + 1,
                _ => 1,
            };
            stack.push((depth, trip));
            worst = worst.max(stack.iter().map(|s| s.1).product());
        }
        pending = false;
        depth += t.matches('{').count();
        depth -= t.matches('}').count();
        while stack.last().is_some_and(|s| s.0 >= depth) {
            stack.pop();
        }
    }
    worst
}

#[test]
fn group_norm_at_size_7_asks_gcc_for_a_bounded_unroll_and_checks() {
    // Formerly 27 nested `unroll 8` pragmas over 5-deep nests: gcc ran for minutes.
    let c = polyc_ok(&[
        "examples/tc/group_norm.tc",
        "--param",
        "N=7,G=7,D=7,H=7,W=7",
    ]);
    let p = unrolled_product(&c);
    assert!(p <= 128, "nested unrolling asks for {p} copies");
    run_checked(&[
        "run",
        "examples/tc/group_norm.tc",
        "--param",
        "N=7,G=7,D=7,H=7,W=7",
        "--check",
    ]);
}

#[test]
fn the_bench_kernels_keep_their_unroll_pragmas() {
    // The budget leaves the register tiles and filter windows of the bench kernels as
    // they were: the pragma counts of their C before the budget existed.
    for (prog, sizes, pragmas) in [
        ("examples/conv_chain.tc", "H=2048,W=2048,KH=5,KW=5", 12),
        ("examples/conv_chain_temp.tc", "H=2048,W=2048,KH=5,KW=5", 14),
        ("examples/matmul.tc", "M=1024,N=1024,K=1024", 4),
    ] {
        let c = polyc_ok(&[prog, "--param", sizes]);
        assert_eq!(c.matches("#pragma GCC unroll").count(), pragmas, "{prog}");
    }
}

// ---- items 12 and 14: files -----------------------------------------------------------

#[test]
fn an_output_over_the_program_is_refused_and_the_program_kept() {
    let dir = tempdir();
    let text = std::fs::read_to_string(root().join("examples/matmul.tc")).unwrap();
    write(dir.path(), "self.tc", &text);
    let o = polyc_in(
        dir.path(),
        &["self.tc", "--param", "M=4,N=4,K=4", "-o", "self.tc"],
    );
    assert_code(&o, 1);
    insta::assert_snapshot!(stderr(&o));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("self.tc")).unwrap(),
        text
    );
    // Through a hard link, and for a tile spec or a description given as the output.
    std::fs::hard_link(dir.path().join("self.tc"), dir.path().join("link.c")).unwrap();
    let o = polyc_in(
        dir.path(),
        &["self.tc", "--param", "M=4,N=4,K=4", "-o", "link.c"],
    );
    assert_code(&o, 1);
    let spec = write(dir.path(), "s.tiles", "S_1: 2@L1, 2@L1, 2@L1\n");
    let o = polyc_in(
        dir.path(),
        &[
            "self.tc",
            "--param",
            "M=4,N=4,K=4",
            "--tile-spec",
            &spec,
            "-o",
            "s.tiles",
        ],
    );
    assert_code(&o, 1);
    assert_eq!(
        std::fs::read_to_string(&spec).unwrap(),
        "S_1: 2@L1, 2@L1, 2@L1\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("self.tc")).unwrap(),
        text
    );
}

#[test]
fn save_io_never_overwrites_the_inputs_it_read() {
    let dir = tempdir();
    write_i32(dir.path(), "A", &[1, 2, 3, 4, 5]);
    write_i32(dir.path(), "D", &[1, 1, 1, 1, 1]);
    let before = std::fs::read(dir.path().join("A.npy")).unwrap();
    let d = dir.path().display().to_string();
    let err = polyc_err(&[
        "run",
        &hostile("div_by_data.tc"),
        "--param",
        "N=5",
        "--inputs",
        &d,
        "--save-io",
        &d,
    ]);
    assert!(err.contains("this is an input file"), "{err}");
    assert_eq!(std::fs::read(dir.path().join("A.npy")).unwrap(), before);
}

#[test]
fn dash_is_standard_input_and_standard_output() {
    let dir = tempdir();
    let text = std::fs::read_to_string(root().join("examples/matmul.tc")).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_polyc"))
        .args(["-", "--param", "M=4,N=4,K=4", "-o", "-"])
        .current_dir(dir.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_code(&o, 0);
    assert!(stdout(&o).contains("void matmul("), "{}", stdout(&o));
    assert!(
        !dir.path().join("-").exists(),
        "a file named `-` was created"
    );
    let direct = polyc_ok(&["examples/matmul.tc", "--param", "M=4,N=4,K=4"]);
    assert_eq!(stdout(&o), direct);
}

#[test]
fn an_endless_program_file_is_refused() {
    insta::assert_snapshot!(polyc_err(&["/dev/zero"]));
}

#[test]
fn an_output_is_written_whole_or_not_at_all() {
    let dir = tempdir();
    let out = dir.path().join("mm.c");
    std::fs::write(&out, "old").unwrap();
    let o = polyc(&[
        "examples/matmul.tc",
        "--param",
        "M=4,N=4,K=4",
        "-o",
        &out.display().to_string(),
    ]);
    assert_code(&o, 0);
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .contains("void matmul("));
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, vec!["mm.c".to_string()]);
    // A compile error leaves the old file as it was.
    let bad = write(
        dir.path(),
        "bad.tc",
        "def f(f32(N) A) -> (f32(N) B) {\n  B(i) = X(i)\n}\n",
    );
    let o = polyc(&[&bad, "-o", &out.display().to_string()]);
    assert_code(&o, 1);
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .contains("void matmul("));
}

/// Writes `prog(t)` for f32 and f64 into `dir`, and runs each (f32 for `params[..2]`, f64
/// for `params[2..]`) under each of `schedulers`, `repeats` times, with `--check`.
/// Returns the f32 and f64 files.
fn checked_in_both_types(
    dir: &std::path::Path,
    stem: &str,
    prog: &dyn Fn(&str) -> String,
    params: [&str; 4],
    schedulers: &[&str],
    repeats: usize,
) -> (String, String) {
    let f32_prog = write(dir, &format!("{stem}32.tc"), &prog("f32"));
    let f64_prog = write(dir, &format!("{stem}64.tc"), &prog("f64"));
    for (k, p) in params.iter().enumerate() {
        let file = if k < 2 { &f32_prog } else { &f64_prog };
        for scheduler in schedulers {
            for _ in 0..repeats {
                run_checked(&[
                    "run",
                    file,
                    "--param",
                    p,
                    "--scheduler",
                    scheduler,
                    "--check",
                ]);
            }
        }
    }
    (f32_prog, f64_prog)
}

// ---- fuzzer finding F9: a tile loop marked parallel across a carried dependence -------

/// `T1(i, j, k) +=! T1(i - 2, j - 1, k)`: the dependence (2, 1) is carried by `i`, so `j`
/// is coincident in the point band, but with `i` tiled by 5 two `j` tiles within one `i`
/// tile depend on each other. The `j` tile loop ran under `omp parallel for` and a thread
/// read `T1(2, 1)` before another wrote it (1 of 3,000 cases, seed 496722589). A tile
/// band's member is now coincident only where no dependence joins two of its tiles within
/// one tile of the earlier members.
#[test]
fn a_tile_loop_across_a_carried_dependence_is_not_parallel() {
    let dir = tempdir();
    let prog = |t: &str| {
        format!(
            "def f() -> ({t}(N, M, K) T1) {{\n  T1(i, j, k) = 1.0\n  T1(i, j, k) +=! T1(i - 2, j - 1, k) where i in 2:N, j in 1:M\n}}\n"
        )
    };
    // Several runs each: the race showed in about half of them.
    let (f32_prog, _) = checked_in_both_types(
        dir.path(),
        "carried",
        &prog,
        [
            "N=7,M=3,K=1",
            "N=23,M=9,K=3",
            "N=7,M=3,K=1",
            "N=19,M=13,K=2",
        ],
        &["initial"],
        3,
    );
    let c = polyc_ok(&[
        &f32_prog,
        "--param",
        "N=7,M=3,K=1",
        "--scheduler",
        "initial",
    ]);
    let update = c.find("+= T1[").expect("the update");
    let last_nest = c[..update].rfind("\n  for (").expect("its outer loop");
    assert!(!c[last_nest..update].contains("omp parallel"), "{c}");
}

// ---- fuzzer finding F8: gcc 12's masked load of a select's strided branch ------------

/// `max=!` over `select(data < data, X14(j, k, i, s), 1.0)`: gcc 12.2 with `-fopenmp`
/// if-converted the conditional load of `X14`'s stride-2 elements into a masked load with
/// a wrongly permuted mask (a lane took its neighbour's element). A select whose branch
/// reads a tensor is emitted as `polyc_select_<type>(c, a, b)`, which loads both branches
/// first (every read is in bounds at every instance); one whose branch divides integers
/// keeps `c ? a : b`, so that no division by zero is reported for an untaken branch.
#[test]
fn a_select_with_a_strided_read_in_a_branch_checks() {
    let dir = tempdir();
    let prog = |t: &str| {
        format!(
            "def f({t}(N, S, M - S + 1, K) X12, {t}(M - S + 1, K, N, S) X13, {t}(M - S + 1, K, N, S) X14) -> ({t}(M - S + 1, K) T2) {{\n  T2(j, k) max=! select(X12(i, s, j, k) < X13(j, k, i, s), X14(j, k, i, s), 1.0)\n}}\n"
        )
    };
    let (f32_prog, _) = checked_in_both_types(
        dir.path(),
        "sel",
        &prog,
        [
            "N=1,M=2,K=6,S=2",
            "N=3,M=9,K=13,S=2",
            "N=1,M=2,K=6,S=2",
            "N=2,M=7,K=11,S=3",
        ],
        &["initial", "isl"],
        1,
    );
    let c = polyc_ok(&[
        &f32_prog,
        "--param",
        "N=1,M=2,K=6,S=2",
        "--scheduler",
        "initial",
    ]);
    assert!(
        c.contains("polyc_select_f32((X12[") && !c.contains(" ? X14["),
        "{c}"
    );
    let int_div = write(
        dir.path(),
        "div.tc",
        "def f(i32(N) A, i32(N) B) -> (i32(N) C) {\n  C(i) = select(B(i) != 0, A(i) / B(i), 0)\n}\n",
    );
    let c = polyc_ok(&[&int_div, "--param", "N=7"]);
    assert!(
        !c.contains("polyc_select_i32((") && c.contains(") != 0 ? polyc_div_i32("),
        "{c}"
    );
    run_checked(&["run", &int_div, "--param", "N=7", "--check"]);
}

// ---- fuzzer finding F1: gcc 12's loop vectoriser on a sequential stencil loop ---------

/// `X(j, k) = relu(X(j - 1, k - 1))` at small sizes: gcc 12.2 vectorised the sequential
/// `j` loop once it had unrolled the `k` loop, loading row `j - 1` before storing it. The
/// C turns gcc's loop vectoriser off for such kernels, and only for them.
#[test]
fn a_shifted_self_read_over_short_inner_loops_checks() {
    for (prog, params) in [
        ("shifted_self_read.tc", "M=5,K=3"),
        ("shifted_self_read.tc", "M=9,K=4"),
        ("shifted_self_read.tc", "M=17,K=2"),
        ("shifted_self_read_f64.tc", "M=7,K=3"),
        ("shifted_self_read_f64.tc", "M=13,K=5"),
    ] {
        for scheduler in ["ilp", "isl", "initial"] {
            run_checked(&[
                "run",
                &hostile(prog),
                "--param",
                params,
                "--scheduler",
                scheduler,
                "--check",
            ]);
        }
    }
    let pragma = "#pragma GCC optimize(\"no-tree-loop-vectorize\")";
    let jacobi = |params: &str| polyc_ok(&["examples/jacobi1d.tc", "--param", params]);
    // jacobi-1d at a real size keeps its vectorised inner loop; at T = 10, N = 7 its inner
    // loops are short, and the pragma is there.
    assert!(!jacobi("T=1000,N=100000").contains(pragma));
    assert!(jacobi("T=10,N=7").contains(pragma));
    let small = polyc_ok(&[
        &hostile("shifted_self_read.tc"),
        "--param",
        "M=5,K=3",
        "--scheduler",
        "ilp",
    ]);
    assert!(small.contains(pragma), "{small}");
    let gemm = polyc_ok(&["examples/matmul.tc", "--param", "M=5,N=3,K=2"]);
    assert!(!gemm.contains(pragma), "{gemm}");
}
