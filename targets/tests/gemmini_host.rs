//! The Gemmini host header: one C source written against `gemmini.h`'s API, (a) built with
//! the host compiler against polyc's header and run on the functional model, compared
//! exactly with a Rust reference; (b) compiled for RISC-V against the real `gemmini.h`.
//!
//! (b) needs `riscv64-unknown-elf-gcc` with picolibc (Debian: `gcc-riscv64-unknown-elf`,
//! `picolibc-riscv64-unknown-elf`) and the real header in `$POLYC_GEMMINI_API` (default:
//! `../shared/gemmini-api` next to the repository). Without them the test fails, unless
//! `POLYC_SKIP_RISCV=1`.

use std::ffi::c_void;
use std::path::PathBuf;
use std::process::Command;

use targets::gemmini::host::{compile_host, HostCcOptions};
use targets::gemmini::model::{
    Activation, Counters, Dataflow, Fp32, Gemmini, GemminiConfig, Insn, ACCUMULATE_BIT, ACC_BIT,
    FULL_ACC_BIT, GARBAGE_ADDR,
};

const SRC: &str = include_str!("gemmini/tiled_matmul.c");
const ALL_MACROS: &str = include_str!("gemmini/all_macros.c");

fn data(n: usize, seed: u64) -> Vec<i8> {
    let mut s = seed ^ 0x9e37_79b9_7f4a_7c15;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 24) as u8 as i8
        })
        .collect()
}

/// `x / 2^shift` rounded half to even, saturated to int8, in integer arithmetic.
fn scale_pow2(x: i32, shift: u32) -> i8 {
    let d = 1i64 << shift;
    let (q, r) = ((x as i64).div_euclid(d), (x as i64).rem_euclid(d));
    let q = if 2 * r > d || (2 * r == d && q & 1 == 1) {
        q + 1
    } else {
        q
    };
    q.clamp(-128, 127) as i8
}

/// The Rust reference: `act(round(A·B / 2^shift))`.
fn reference(a: &[i8], b: &[i8], m: usize, n: usize, k: usize, shift: u32, relu: bool) -> Vec<i8> {
    let mut c = vec![0i8; m * n];
    for i in 0..m {
        for j in 0..n {
            let s: i32 = (0..k)
                .map(|p| a[i * k + p] as i32 * b[p * n + j] as i32)
                .sum();
            let v = scale_pow2(s, shift);
            c[i * n + j] = if relu { v.max(0) } else { v };
        }
    }
    c
}

#[test]
fn host_header_runs_c_on_the_model_exactly() {
    let opts = HostCcOptions {
        extra_flags: vec!["-Wall".into(), "-Wextra".into(), "-Werror".into()],
        ..HostCcOptions::default()
    };
    let mut kernel = compile_host(SRC, &opts).expect("the C builds against the host header");
    // (M, N, K, relu, dataflow (1 = WS, 0 = OS), shift)
    let cases = [
        (37usize, 29usize, 23usize, false, 1i64, 8u32),
        (37, 29, 23, true, 1, 7),
        (20, 33, 40, true, 0, 6),
        (16, 16, 16, false, 0, 9),
        (1, 5, 3, false, 1, 0),
    ];
    for (m, n, k, relu, df, shift) in cases {
        let mut a = data(m * k, (m * 31 + k) as u64);
        let mut b = data(k * n, (n * 17 + k) as u64);
        let mut c = vec![0x55u8 as i8; m * n];
        let mut params: [i64; 5] = [m as i64, n as i64, k as i64, relu as i64, df];
        let mut scale: f32 = 1.0 / (1u32 << shift) as f32;
        let mut args: Vec<*mut c_void> = vec![
            a.as_mut_ptr() as *mut c_void,
            b.as_mut_ptr() as *mut c_void,
            c.as_mut_ptr() as *mut c_void,
            params.as_mut_ptr() as *mut c_void,
            &mut scale as *mut f32 as *mut c_void,
        ];
        let mut model = Gemmini::new(GemminiConfig::default());
        // SAFETY: the entry reads A and B and writes C within the sizes in `params`.
        let run = unsafe { kernel.run("polyc_gemmini_test", &mut args, &mut model) }
            .expect("the model runs the kernel");
        assert_eq!(run.status, 0);
        let want = reference(&a, &b, m, n, k, shift, relu);
        assert_eq!(c, want, "M={m} N={n} K={k} relu={relu} dataflow={df}");
        // Exact counts.
        let (ti, tj, tk) = (m.div_ceil(16), n.div_ceil(16), k.div_ceil(16));
        let tiles = (ti * tj * tk) as u64;
        let ws = df == 1;
        let want_counts = Counters {
            config_ex: 1,
            config_ld: 2,
            config_st: 1,
            mvin: 2 * tiles,
            mvout: (ti * tj) as u64,
            preload: tiles,
            compute_preloaded: if ws { tiles } else { (ti * tj) as u64 },
            compute_accumulated: if ws { 0 } else { tiles - (ti * tj) as u64 },
            fence: 1,
            dram_to_spad_rows: (m * tk * tj + k * tj * ti) as u64,
            dram_to_spad_bytes: (m * k * tj + k * n * ti) as u64,
            acc_to_dram_rows: (m * tj) as u64,
            acc_to_dram_bytes: (m * n) as u64,
            array_to_acc_rows: if ws {
                (m * tj * tk) as u64
            } else {
                (m * tj) as u64
            },
            macs: (m * n * k) as u64,
            array_macs: tiles * 4096,
            ..Counters::default()
        };
        assert_eq!(run.counters, want_counts, "M={m} N={n} K={k} dataflow={df}");
    }
}

#[test]
fn host_build_refuses_api_names_it_lacks() {
    // The hardware loops are not in the host header: using one fails to build.
    let src = "#include \"polyc_gemmini_host.h\"\n\
               int f(void **a) { gemmini_loop_ws(1, 1, 1, 0, 0, 0, a[0], a[0], 0, a[0], 16, 16, 16, 16, \
               0, 0, 0, 0, 1, 0, 0, 0, 0); return 0; }\n";
    let err = compile_host(src, &HostCcOptions::default()).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("implicit declaration of function") && text.contains("gemmini_loop_ws"),
        "{text}"
    );
}

#[test]
fn host_run_reports_model_errors() {
    // An mvin wider than one DMA row: the model refuses it and the run says which.
    let src = "#include \"polyc_gemmini_host.h\"\n\
               int bad(void **args) { gemmini_extended_mvin(args[0], 0, 65, 1); return 0; }\n";
    let mut kernel = compile_host(src, &HostCcOptions::default()).expect("builds");
    let mut buf = [0u8; 128];
    let mut args: Vec<*mut c_void> = vec![buf.as_mut_ptr() as *mut c_void];
    let mut model = Gemmini::new(GemminiConfig::default());
    // SAFETY: the one mvin would read 65 bytes of `buf` (it is refused before).
    let err = unsafe { kernel.run("bad", &mut args, &mut model) }.unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with(
            "the Gemmini model stopped running `bad`: instruction 0 \
                          `gemmini_extended_mvin(0x"
        ) && text
            .ends_with(", 0x0, 65, 1)`: mvin of 65 columns: at most 64 fit one DMA row (64 bytes)"),
        "{text}"
    );
    // SAFETY: as above.
    let err = unsafe { kernel.run("missing", &mut args, &mut model) }.unwrap_err();
    assert!(
        err.to_string()
            .starts_with("the Gemmini host library has no entry `missing`"),
        "{err}"
    );
}

#[test]
fn same_c_runs_on_the_float_configuration() {
    // The C is written with elem_t and sizeof(elem_t): with -DPOLYC_GEMMINI_FP32 it is a
    // float matmul on a 4×4 array.
    let opts = HostCcOptions {
        extra_flags: vec![
            "-DPOLYC_GEMMINI_FP32".into(),
            "-Wall".into(),
            "-Werror".into(),
        ],
        ..HostCcOptions::default()
    };
    let mut kernel = compile_host(SRC, &opts).expect("the C builds against the fp32 header");
    for (m, n, k, relu, df) in [(10usize, 9usize, 7usize, true, 1i64), (5, 6, 11, false, 0)] {
        // Quarter steps: every sum is exact in f32, whatever the order.
        let mut a: Vec<f32> = data(m * k, 71)
            .iter()
            .map(|&x| (x / 8) as f32 / 4.0)
            .collect();
        let mut b: Vec<f32> = data(k * n, 72)
            .iter()
            .map(|&x| (x / 8) as f32 / 4.0)
            .collect();
        let mut c = vec![f32::NAN; m * n];
        let mut params: [i64; 5] = [m as i64, n as i64, k as i64, relu as i64, df];
        let mut scale: f32 = 0.5;
        let mut args: Vec<*mut c_void> = vec![
            a.as_mut_ptr() as *mut c_void,
            b.as_mut_ptr() as *mut c_void,
            c.as_mut_ptr() as *mut c_void,
            params.as_mut_ptr() as *mut c_void,
            &mut scale as *mut f32 as *mut c_void,
        ];
        let mut model: Gemmini<Fp32> = Gemmini::with_types(GemminiConfig::fp32());
        // SAFETY: the entry reads A and B and writes C within the sizes in `params`.
        let run = unsafe { kernel.run("polyc_gemmini_test", &mut args, &mut model) }
            .expect("the model runs the kernel");
        assert_eq!(run.status, 0);
        let want: Vec<f32> = (0..m * n)
            .map(|x| {
                let (i, j) = (x / n, x % n);
                let s: f64 = (0..k)
                    .map(|p| a[i * k + p] as f64 * b[p * n + j] as f64)
                    .sum();
                let v = (s * 0.5) as f32;
                if relu && v <= 0.0 {
                    0.0
                } else {
                    v
                }
            })
            .collect();
        assert_eq!(c, want, "M={m} N={n} K={k}");
        assert_eq!(run.counters.macs, (m * n * k) as u64);
        assert_eq!(run.counters.acc_to_dram_bytes, (4 * m * n) as u64);
    }
    // An fp32 library on an int8 model is refused.
    let mut model = Gemmini::new(GemminiConfig::default());
    // SAFETY: the call is refused before the entry runs.
    let err = unsafe { kernel.run("polyc_gemmini_test", &mut [], &mut model) }.unwrap_err();
    assert_eq!(
        err.to_string(),
        "the host header was built for DIM = 4 and 4-byte elements but the model has DIM = 16 \
         and 1-byte elements"
    );
}

#[test]
fn every_macro_form_decodes_to_its_instruction() {
    // Each macro of the host header, with the instruction the model decodes from its bits.
    let mut kernel = compile_host(ALL_MACROS, &HostCcOptions::default()).expect("builds");
    let mut buf = vec![0u8; 4096];
    let base = buf.as_mut_ptr() as u64;
    let mut args: Vec<*mut c_void> = vec![buf.as_mut_ptr() as *mut c_void];
    let mut model = Gemmini::new(GemminiConfig::default());
    model.record_trace(true);
    // SAFETY: every mvin/mvout stays inside `buf` (at most 16 rows, strides ≤ 64 bytes).
    unsafe { kernel.run("all", &mut args, &mut model) }.expect("runs");
    let cex = |dataflow, activation, sys_shift, sys_acc_scale, c_stride, a_stride, at, bt| {
        Insn::ConfigEx {
            dataflow,
            activation,
            sys_shift,
            sys_acc_scale,
            c_stride,
            a_stride,
            a_transpose: at,
            b_transpose: bt,
            set_only_strides: false,
        }
    };
    let cld = |stride, scale, shrunk, block_stride, pixel_repeats, id| Insn::ConfigLd {
        stride,
        scale,
        shrunk,
        block_stride,
        pixel_repeats,
        id,
    };
    let (ws, os) = (Dataflow::WeightStationary, Dataflow::OutputStationary);
    let want = vec![
        cex(ws, Activation::Relu, 3, 1.0, 1, 1, false, false),
        cex(os, Activation::None, 2, 1.0, 1, 5, true, true),
        cex(ws, Activation::None, 0, 0.5, 7, 9, true, false),
        cld(48, 1.0, false, 16, 1, 0),
        cld(32, 0.25, false, 16, 1, 0),
        cld(20, 2.0, true, 16, 1, 2),
        cld(21, 1.5, false, 33, 2, 1),
        Insn::config_st(64, Activation::None, 1.0),
        Insn::config_st(17, Activation::Relu, 0.125),
        Insn::mvin(base, 3, 16, 16),
        Insn::mvin(base + 1, 40, 32, 16),
        Insn::Mvin {
            id: 1,
            dram_addr: base + 2,
            local: 64,
            cols: 5,
            rows: 6,
        },
        Insn::Mvin {
            id: 2,
            dram_addr: base + 3,
            local: ACC_BIT | ACCUMULATE_BIT | 8,
            cols: 16,
            rows: 2,
        },
        Insn::mvout(base + 4, 3, 16, 16),
        Insn::mvout(base + 5, ACC_BIT | FULL_ACC_BIT | 8, 4, 2),
        Insn::preload(16, ACC_BIT, 16, 16, 16, 16),
        Insn::preload(GARBAGE_ADDR, 32, 16, 16, 16, 16),
        Insn::preload(GARBAGE_ADDR, ACC_BIT | ACCUMULATE_BIT | 4, 16, 16, 7, 9),
        Insn::compute_preloaded(0, GARBAGE_ADDR, 16, 16, 16, 16),
        Insn::compute_accumulated(0, 16, 16, 16, 16, 16),
        Insn::compute_preloaded(48, 64, 3, 4, 5, 6),
        Insn::compute_accumulated(48, GARBAGE_ADDR, 16, 1, 16, 16),
        Insn::Flush { skip: 0 },
        Insn::Fence,
    ];
    assert_eq!(model.trace(), &want[..]);
}

fn skip_riscv() -> bool {
    std::env::var("POLYC_SKIP_RISCV").is_ok_and(|v| v == "1")
}

#[test]
fn same_c_compiles_for_riscv_against_the_real_header() {
    let api = std::env::var_os("POLYC_GEMMINI_API")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/gemmini-api")
        });
    if !api.join("include/gemmini.h").is_file() {
        if skip_riscv() {
            eprintln!("POLYC_SKIP_RISCV=1: skipping the RISC-V compile check");
            return;
        }
        panic!(
            "the real Gemmini header is not at {}: set POLYC_GEMMINI_API to the directory \
             holding include/gemmini.h (ucb-bar/gemmini-rocc-tests), or POLYC_SKIP_RISCV=1 to \
             skip this check",
            api.join("include/gemmini.h").display()
        );
    }
    let dir = tempfile::tempdir().expect("temporary directory");
    for (name, src) in [("tiled_matmul", SRC), ("all_macros", ALL_MACROS)] {
        if !riscv_compile(&api, dir.path(), name, src) {
            return;
        }
    }
}

/// Compiles `src` for RISC-V against the real header; `false` when skipped.
fn riscv_compile(api: &std::path::Path, dir: &std::path::Path, name: &str, src: &str) -> bool {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, src).expect("writing the C");
    let obj = dir.join(format!("{name}.o"));
    let cc = "riscv64-unknown-elf-gcc";
    let out = Command::new(cc)
        .args([
            "--specs=picolibc.specs",
            "-march=rv64gc",
            "-mabi=lp64d",
            "-O2",
            // An API name the real header lacks must fail, not become an implicit call.
            "-Werror=implicit-function-declaration",
            "-I",
        ])
        .arg(api)
        .arg("-c")
        .arg(&c)
        .arg("-o")
        .arg(&obj)
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            if skip_riscv() {
                eprintln!("POLYC_SKIP_RISCV=1: skipping the RISC-V compile check ({e})");
                return false;
            }
            panic!(
                "could not run `{cc}` ({e}): install Debian's gcc-riscv64-unknown-elf and \
                 picolibc-riscv64-unknown-elf (scripts/install-deps), or set POLYC_SKIP_RISCV=1"
            );
        }
    };
    assert!(
        out.status.success(),
        "{cc} failed on {name}.c against the real gemmini.h:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let len = std::fs::metadata(&obj).map(|m| m.len()).unwrap_or(0);
    assert!(len > 0, "{cc} wrote no object file for {name}.c");
    true
}
