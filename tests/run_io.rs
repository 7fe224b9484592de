//! `polyc run` data: `--save-io`, `--inputs`, `--seed`, `.npy` files, and the oracle choice.

mod common;
use common::*;
use polyhedral::data::{Buffer, TensorData};
use polyhedral::ir::DType;
use polyhedral::npy::{read_npy, write_npy};
use std::path::Path;

const CONV: &str = "examples/conv_chain.tc";
const CONV_PARAMS: &str = "H=8,W=8,KH=3,KW=3";
const MM: &str = "examples/matmul.tc";

fn load(dir: &Path, name: &str) -> TensorData {
    read_npy(&dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e:?}"))
}

fn f32s(t: &TensorData) -> &[f32] {
    match &t.buf {
        Buffer::F32(v) => v,
        other => panic!("expected f32, got {:?}", other.dtype()),
    }
}

fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Runs the conv chain with `--save-io` into a fresh `dir/name` and returns the path.
fn save_conv(dir: &Path, name: &str, extra: &[&str]) -> std::path::PathBuf {
    let out = dir.join(name);
    let o = out.display().to_string();
    let mut args = vec!["run", CONV, "--param", CONV_PARAMS, "--save-io", &o];
    args.extend_from_slice(extra);
    polyc_ok(&args);
    out
}

/// Every input is saved as NAME.npy, the output C as C.npy, the in-place input A after
/// the run as A.out.npy; shapes and dtypes are the program's; the scalar is 0-d; and the
/// saved values are what the program computes.
#[test]
fn save_io_writes_every_tensor() {
    let tmp = tempdir();
    let dir = save_conv(tmp.path(), "io", &["--check"]);
    assert_eq!(
        files(&dir),
        ["A.npy", "A.out.npy", "B.npy", "C.npy", "bias.npy"]
    );
    let a = load(&dir, "A.npy");
    let a_out = load(&dir, "A.out.npy");
    let b = load(&dir, "B.npy");
    let bias = load(&dir, "bias.npy");
    let c = load(&dir, "C.npy");
    for (t, shape) in [
        (&a, vec![8, 8]),
        (&a_out, vec![8, 8]),
        (&b, vec![3, 3]),
        (&bias, vec![]),
        (&c, vec![6, 6]),
    ] {
        assert_eq!(t.dtype(), DType::F32);
        assert_eq!(t.shape, shape);
    }
    assert_eq!(bias.len(), 1);
    let (a, a_out, b, bias, c) = (f32s(&a), f32s(&a_out), f32s(&b), f32s(&bias)[0], f32s(&c));
    // Generated floats are in [-1, 1).
    assert!(a.iter().chain(b).all(|x| (-1.0..1.0).contains(x)));
    assert!((-1.0..1.0).contains(&bias));
    // S_0: A = A + bias, exactly in f32.
    for (o, i) in a_out.iter().zip(a) {
        assert_eq!(o.to_bits(), (i + bias).to_bits());
    }
    // S_1..S_4: C = relu(abs(conv(A', B))).
    for h in 0..6 {
        for w in 0..6 {
            let mut s = 0f64;
            for kh in 0..3 {
                for kw in 0..3 {
                    s += a_out[(h + kh) * 8 + w + kw] as f64 * b[kh * 3 + kw] as f64;
                }
            }
            let got = c[h * 6 + w] as f64;
            assert!(
                (got - s.abs()).abs() < 1e-5,
                "C[{h},{w}] = {got}, want {}",
                s.abs()
            );
        }
    }
}

/// Integer programs save integer arrays: i8 inputs in [-8, 8], an i32 output.
#[test]
fn save_io_integer_dtypes() {
    let tmp = tempdir();
    let dir = tmp.path().join("io");
    let d = dir.display().to_string();
    polyc_ok(&[
        "run",
        "examples/gemm_i8.tc",
        "--param",
        "M=3,N=4,K=5",
        "--save-io",
        &d,
    ]);
    assert_eq!(files(&dir), ["A.npy", "B.npy", "C.npy"]);
    let (a, b, c) = (
        load(&dir, "A.npy"),
        load(&dir, "B.npy"),
        load(&dir, "C.npy"),
    );
    assert_eq!((a.dtype(), a.shape.clone()), (DType::I8, vec![3, 5]));
    assert_eq!((b.dtype(), b.shape.clone()), (DType::I8, vec![5, 4]));
    assert_eq!((c.dtype(), c.shape.clone()), (DType::I32, vec![3, 4]));
    let (Buffer::I8(a), Buffer::I8(b), Buffer::I32(c)) = (&a.buf, &b.buf, &c.buf) else {
        panic!("dtypes")
    };
    assert!(a.iter().chain(b).all(|x| (-8..=8).contains(x)));
    for i in 0..3 {
        for j in 0..4 {
            let want: i32 = (0..5)
                .map(|k| a[i * 5 + k] as i32 * b[k * 4 + j] as i32)
                .sum();
            assert_eq!(c[i * 4 + j], want, "C[{i},{j}]");
        }
    }
}

/// `--inputs` with the saved inputs reproduces the outputs bit for bit, whatever the seed.
#[test]
fn inputs_reproduce_outputs() {
    let tmp = tempdir();
    let first = save_conv(tmp.path(), "first", &[]);
    let inputs = first.display().to_string();
    let second = save_conv(tmp.path(), "second", &["--inputs", &inputs, "--seed", "7"]);
    assert_eq!(files(&first), files(&second));
    for f in files(&first) {
        assert_eq!(
            std::fs::read(first.join(&f)).unwrap(),
            std::fs::read(second.join(&f)).unwrap(),
            "{f} differs"
        );
    }
    // And the loaded inputs also check against the oracle.
    let out = polyc_ok(&[
        "run",
        CONV,
        "--param",
        CONV_PARAMS,
        "--inputs",
        &inputs,
        "--check",
    ]);
    assert_eq!(
        out,
        "C: max_abs_err=0.000e0 max_rel_err=0.000e0 ok\nA: max_abs_err=0.000e0 max_rel_err=0.000e0 ok\n"
    );
}

/// The seed decides the inputs: the same seed gives the same files, another seed others.
#[test]
fn seed_changes_inputs() {
    let tmp = tempdir();
    let s0 = save_conv(tmp.path(), "s0", &[]);
    let s0b = save_conv(tmp.path(), "s0b", &["--seed", "0"]);
    let s1 = save_conv(tmp.path(), "s1", &["--seed", "1"]);
    for f in ["A.npy", "B.npy", "bias.npy", "C.npy"] {
        let a = std::fs::read(s0.join(f)).unwrap();
        assert_eq!(a, std::fs::read(s0b.join(f)).unwrap(), "{f}: same seed");
        assert_ne!(a, std::fs::read(s1.join(f)).unwrap(), "{f}: other seed");
    }
}

/// Copies the saved inputs of a conv chain run to `dir/bad` and returns that directory.
fn inputs_copy(tmp: &Path) -> std::path::PathBuf {
    let src = save_conv(tmp, "good", &[]);
    let bad = tmp.join("bad");
    std::fs::create_dir(&bad).unwrap();
    for f in ["A.npy", "B.npy", "bias.npy"] {
        std::fs::copy(src.join(f), bad.join(f)).unwrap();
    }
    bad
}

fn run_with_inputs_in(tmp: &Path) -> String {
    let prog = abs(CONV);
    let o = polyc_in(
        tmp,
        &[
            "run",
            &prog,
            "--param",
            CONV_PARAMS,
            "--inputs",
            "bad",
            "--check",
        ],
    );
    assert_code(&o, 1);
    assert_eq!(stdout(&o), "");
    stderr(&o)
}

#[test]
fn inputs_wrong_shape() {
    let tmp = tempdir();
    let bad = inputs_copy(tmp.path());
    let b = TensorData {
        shape: vec![2, 2],
        buf: Buffer::F32(vec![0.5; 4]),
    };
    write_npy(&bad.join("B.npy"), &b).unwrap();
    insta::assert_snapshot!(run_with_inputs_in(tmp.path()));
}

#[test]
fn inputs_wrong_dtype() {
    let tmp = tempdir();
    let bad = inputs_copy(tmp.path());
    let b = TensorData {
        shape: vec![3, 3],
        buf: Buffer::F64(vec![0.5; 9]),
    };
    write_npy(&bad.join("B.npy"), &b).unwrap();
    insta::assert_snapshot!(run_with_inputs_in(tmp.path()));
}

#[test]
fn inputs_scalar_not_0d() {
    let tmp = tempdir();
    let bad = inputs_copy(tmp.path());
    let bias = TensorData {
        shape: vec![1],
        buf: Buffer::F32(vec![0.5]),
    };
    write_npy(&bad.join("bias.npy"), &bias).unwrap();
    insta::assert_snapshot!(run_with_inputs_in(tmp.path()));
}

#[test]
fn inputs_missing_file() {
    let tmp = tempdir();
    let bad = inputs_copy(tmp.path());
    std::fs::remove_file(bad.join("B.npy")).unwrap();
    insta::assert_snapshot!(run_with_inputs_in(tmp.path()));
}

#[test]
fn inputs_not_npy() {
    let tmp = tempdir();
    let bad = inputs_copy(tmp.path());
    std::fs::write(bad.join("B.npy"), "not an array\n").unwrap();
    insta::assert_snapshot!(run_with_inputs_in(tmp.path()));
}

/// The `polyc: oracle: …` line of a matmul 8×8×8 check (576 statement instances).
fn oracle_line(extra: &[&str]) -> String {
    let mut args = vec!["run", MM, "--param", "M=8,N=8,K=8", "--check"];
    args.extend_from_slice(extra);
    let o = polyc(&args);
    assert_code(&o, 0);
    assert_eq!(
        stdout(&o),
        "C: max_abs_err=0.000e0 max_rel_err=0.000e0 ok\n"
    );
    let err = stderr(&o);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("polyc: oracle: "))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    lines[0].to_string()
}

#[test]
fn oracle_auto_uses_interpreter() {
    assert_eq!(
        oracle_line(&[]),
        "polyc: oracle: reference interpreter (576 instances)"
    );
}

#[test]
fn oracle_interp() {
    assert_eq!(
        oracle_line(&["--oracle", "interp"]),
        "polyc: oracle: reference interpreter (576 instances)"
    );
    // Forced, the interpreter is used even above the limit.
    assert_eq!(
        oracle_line(&["--oracle", "interp", "--max-interp-instances", "10"]),
        "polyc: oracle: reference interpreter (576 instances)"
    );
}

#[test]
fn oracle_auto_over_limit_uses_untransformed() {
    assert_eq!(
        oracle_line(&["--max-interp-instances", "10"]),
        "polyc: oracle: untransformed program through the C emitter (576 instances is over the interpreter's limit of 10)"
    );
    assert_eq!(
        oracle_line(&["--max-interp-instances", "576"]),
        "polyc: oracle: reference interpreter (576 instances)"
    );
}

#[test]

fn oracle_untransformed() {
    let line = oracle_line(&["--oracle", "untransformed"]);
    assert!(
        line.starts_with("polyc: oracle: untransformed program through the C emitter"),
        "{line}"
    );
    assert!(!line.contains("over the interpreter's limit"), "{line}");
}

/// Without `--check` there is no oracle and no check lines.
#[test]
fn run_without_check_prints_no_checks() {
    let o = polyc(&["run", MM, "--param", "M=8,N=8,K=8"]);
    assert_code(&o, 0);
    assert_eq!(stdout(&o), "");
    assert!(!stderr(&o).contains("oracle"), "{}", stderr(&o));
}

/// `--target-desc` reaches the C compiler: its `vector_bytes` becomes the
/// `-mprefer-vector-width` flag of `run`'s compilation (here through a `$CC` wrapper that
/// logs its arguments). The flag exists on x86 only.
#[test]
#[cfg(target_arch = "x86_64")]
fn target_desc_vector_width_reaches_the_c_compiler() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempdir();
    let builtin = std::fs::read_to_string(root().join("specs/targets/cpu.yaml")).unwrap();
    assert!(builtin.contains("\nvector_bytes: 64\n"));
    let desc = write(
        dir.path(),
        "cpu256.yaml",
        &builtin.replace("\nvector_bytes: 64\n", "\nvector_bytes: 32\n"),
    );
    let log = dir.path().join("cc.log");
    let cc = write(
        dir.path(),
        "cc.sh",
        &format!(
            "#!/bin/sh\necho \"$@\" >> '{}'\nexec cc \"$@\"\n",
            log.display()
        ),
    );
    std::fs::set_permissions(&cc, std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = |extra: &[&str]| -> String {
        let _ = std::fs::remove_file(&log);
        let mut args = vec!["run", MM, "--param", "M=8,N=8,K=8", "--check"];
        args.extend_from_slice(extra);
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_polyc"))
            .args(&args)
            .current_dir(root())
            .env("CC", &cc)
            .output()
            .unwrap();
        assert_code(&o, 0);
        std::fs::read_to_string(&log).unwrap()
    };
    let custom = run(&["--target-desc", &desc]);
    assert!(custom.contains(" -mprefer-vector-width=256"), "{custom}");
    assert!(!custom.contains("=512"), "{custom}");
    let default = run(&[]);
    assert!(default.contains(" -mprefer-vector-width=512"), "{default}");
}
