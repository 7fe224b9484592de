//! Target descriptions through the binary: every field out of its range, every buffer that
//! does not fit its role, scope or kind, and each kind's missing parts are errors located at
//! the offending YAML node, with the value, a label and a remedy, and exit code 1. The
//! order of a GPU's buffers does not change the code, and the default GPU policy never maps
//! more threads to a block than the description allows.

mod common;
use common::*;

const MM: &str = "examples/matmul.tc";

/// A shipped description with `from` (which must occur exactly once) replaced by `to`.
fn mutated(file: &str, from: &str, to: &str) -> String {
    let text = std::fs::read_to_string(root().join("specs/targets").join(file)).expect("read");
    assert_eq!(text.matches(from).count(), 1, "`{from}` in {file}");
    text.replacen(from, to, 1)
}

/// Compiles matmul for the description `text` (saved as `t.yaml`, so that the message
/// names it so); asserts exit code 1 and nothing on stdout; returns stderr with the report's
/// line wrapping undone.
fn desc_error(text: &str) -> String {
    let dir = tempdir();
    write(dir.path(), "t.yaml", text);
    let o = polyc_in(
        dir.path(),
        &[&abs(MM), "--param", "M=4,N=4,K=4", "--target", "t.yaml"],
    );
    assert_code(&o, 1);
    assert_eq!(stdout(&o), "");
    flat(&stderr(&o))
}

/// `s` without whitespace: the report wraps long lines anywhere, even inside a path.
fn squash(s: &str) -> String {
    s.split_whitespace().collect()
}

/// Asserts the error's message (with its location), the label under the caret and the
/// remedy, each exactly (up to the report's line wrapping).
fn assert_error(flat: &str, message: &str, label: &str, help: &str) {
    let head = flat
        .split(" ╭─[")
        .next()
        .expect("a message")
        .trim_start_matches("× ");
    assert_eq!(squash(head), squash(message), "{flat}");
    assert!(
        flat.contains(&format!("╰── {label} ")),
        "label `{label}`: {flat}"
    );
    let remedy = flat.split(" help: ").nth(1).expect("a remedy");
    assert_eq!(squash(remedy), squash(help), "{flat}");
}

macro_rules! desc_case {
    ($name:ident, $file:expr, $from:expr, $to:expr, $message:expr, $label:expr, $help:expr) => {
        #[test]
        fn $name() {
            assert_error(
                &desc_error(&mutated($file, $from, $to)),
                $message,
                $label,
                $help,
            );
        }
    };
}

// Machine figures out of range.
desc_case!(
    sms_zero,
    "a100.yaml",
    "sms: 108",
    "sms: 0",
    "t.yaml:6:6: sms is 0, outside 1 to 65536: the number of streaming multiprocessors",
    "out of range",
    "give the number of streaming multiprocessors, e.g. `sms: 108`"
);
desc_case!(
    warp_size_zero,
    "a100.yaml",
    "warp_size: 32",
    "warp_size: 0",
    "t.yaml:7:12: warp_size is 0, outside 1 to 1024: the threads of a warp, a power of two",
    "out of range",
    "give the threads of a warp, a power of two, e.g. `warp_size: 32`"
);
desc_case!(
    warp_size_not_a_power_of_two,
    "a100.yaml",
    "warp_size: 32",
    "warp_size: 48",
    "t.yaml:7:12: warp_size is 48, which is not a power of two",
    "not a power of two",
    "give the threads of a warp: 32 on NVIDIA GPUs, 64 on AMD's"
);
desc_case!(
    max_threads_zero,
    "a100.yaml",
    "max_threads_per_block: 1024",
    "max_threads_per_block: 0",
    "t.yaml:8:24: max_threads_per_block is 0, outside 1 to 65536: the most threads a block may have, a multiple of the warp size",
    "out of range",
    "give the most threads a block may have, a multiple of the warp size, e.g. `max_threads_per_block: 1024`"
);
desc_case!(
    max_threads_not_whole_warps,
    "a100.yaml",
    "max_threads_per_block: 1024",
    "max_threads_per_block: 1000",
    "t.yaml:8:24: max_threads_per_block is 1000, which is not a multiple of the warp size 32",
    "not whole warps",
    "blocks are made of whole warps: give a multiple of warp_size, e.g. `max_threads_per_block: 1024`"
);
desc_case!(
    registers_per_thread_zero,
    "a100.yaml",
    "registers_per_thread: 255",
    "registers_per_thread: 0",
    "t.yaml:9:23: registers_per_thread is 0, outside 1 to 65536: the most 32-bit registers a thread may use",
    "out of range",
    "give the most 32-bit registers a thread may use, e.g. `registers_per_thread: 255`"
);
desc_case!(
    peak_gflops_zero,
    "a100.yaml",
    "peak_gflops: 19500",
    "peak_gflops: 0",
    "t.yaml:13:14: peak_gflops is 0, outside 1 to 1000000000: the peak arithmetic rate in GFLOP/s",
    "out of range",
    "give the peak arithmetic rate in GFLOP/s, e.g. `peak_gflops: 19500`"
);
desc_case!(
    dram_bandwidth_zero,
    "a100.yaml",
    "dram_gbytes_per_s: 1555",
    "dram_gbytes_per_s: 0",
    "t.yaml:14:20: dram_gbytes_per_s is 0, outside 1 to 10000000: the DRAM bandwidth in GB/s",
    "out of range",
    "give the DRAM bandwidth in GB/s, e.g. `dram_gbytes_per_s: 1555`"
);
desc_case!(
    cuda_arch_sm_0,
    "a100.yaml",
    "cuda_arch: sm_80",
    "cuda_arch: sm_0",
    "t.yaml:16:12: cuda_arch is `sm_0`, which is not a CUDA architecture",
    "not sm_50 to sm_199",
    "give the architecture nvcc compiles for, `sm_` and the compute capability: `sm_80` (A100), `sm_90` (H100)"
);
desc_case!(
    cuda_arch_not_sm,
    "a100.yaml",
    "cuda_arch: sm_80",
    "cuda_arch: \"ampere\"",
    "t.yaml:16:12: cuda_arch is `ampere`, which is not a CUDA architecture",
    "not sm_50 to sm_199",
    "give the architecture nvcc compiles for, `sm_` and the compute capability: `sm_80` (A100), `sm_90` (H100)"
);
desc_case!(
    cores_zero,
    "cpu.yaml",
    "cores: 2",
    "cores: 0",
    "t.yaml:6:8: cores is 0, outside 1 to 65536: the number of CPU cores",
    "out of range",
    "give the number of CPU cores, e.g. `cores: 8`"
);
desc_case!(
    call_ops_zero,
    "cpu.yaml",
    "exp: 60",
    "exp: 0",
    "t.yaml:26:8: call_ops.exp is 0, outside 1 to 1000000: the operations one call costs",
    "out of range",
    "give the operations one call costs, e.g. `tanh: 1490`"
);
desc_case!(
    vector_bytes_not_a_width,
    "cpu.yaml",
    "vector_bytes: 64",
    "vector_bytes: 48",
    "t.yaml:11:15: vector_bytes is 48, which is not a vector width",
    "not a power of two from 16 to 256",
    "give the preferred SIMD vector width in bytes: 64 for AVX-512, 32 for AVX2, 16 for SSE or NEON"
);

// Names.
desc_case!(
    empty_name,
    "a100.yaml",
    "name: a100",
    "name: \"\"",
    "t.yaml:4:7: the target's name is empty",
    "not a name",
    "name the target with a letter or digit followed by up to 63 letters, digits, `_`, `-` or `.`, e.g. `name: a100`"
);
desc_case!(
    name_with_a_space,
    "a100.yaml",
    "name: a100",
    "name: my gpu",
    "t.yaml:4:7: `my gpu` is not a target name",
    "not a name",
    "name the target with a letter or digit followed by up to 63 letters, digits, `_`, `-` or `.`, e.g. `name: a100`"
);

// Fields another kind uses.
desc_case!(
    warp_size_on_a_cpu,
    "cpu.yaml",
    "cores: 2",
    "cores: 2\nwarp_size: 32",
    "t.yaml:7:1: `warp_size` describes a gpu target; a cpu target does not use it",
    "not used by this kind",
    "remove `warp_size`, or set `kind:` to gpu"
);
desc_case!(
    cost_on_a_gpu,
    "a100.yaml",
    "cuda_arch: sm_80",
    "cuda_arch: sm_80\ncost: {mac_energy: 1, register_epa: 1, accumulator_epa_base: 1, accumulator_epa_slope: 1, scratchpad_epa_base: 1, scratchpad_epa_slope: 1, dram_epa: 1, dram_words_per_cycle: 1}",
    "t.yaml:17:1: `cost` describes a gemmini target; a gpu target does not use it",
    "not used by this kind",
    "remove `cost`, or set `kind:` to gemmini"
);

// Buffers.
desc_case!(
    four_byte_l1,
    "cpu.yaml",
    "bytes: 49152 ",
    "bytes: 4 ",
    "t.yaml:50:12: buffer `L1` has 4 bytes, less than one cache line (64 bytes)",
    "too small",
    "give the capacity in bytes one tile may use (per thread for registers, per block for shared memory), from 64 to 1125899906842624, e.g. `bytes: 49152` for a 48 KiB L1"
);
desc_case!(
    inverted_cache_hierarchy,
    "cpu.yaml",
    "bytes: 2097152 ",
    "bytes: 32768 ",
    "t.yaml:45:12: cache `L2` has 32768 bytes, less than `L1` inside it (49152 bytes)",
    "smaller than an inner level",
    "list buffers outermost first (L3, L2, L1, registers), each at least as large as the ones after it"
);
desc_case!(
    l1_smaller_than_the_registers,
    "cpu.yaml",
    "bytes: 49152 ",
    "bytes: 1024 ",
    "t.yaml:50:12: cache `L1` has 1024 bytes, less than `reg` inside it (2048 bytes)",
    "smaller than an inner level",
    "list buffers outermost first (L3, L2, L1, registers), each at least as large as the ones after it"
);
desc_case!(
    buffer_larger_than_a_pebibyte,
    "cpu.yaml",
    "bytes: 272629760 ",
    "bytes: 2251799813685248 ",
    "t.yaml:40:12: buffer `L3` has 2251799813685248 bytes, more than 1125899906842624 bytes",
    "too large",
    "give the capacity in bytes one tile may use (per thread for registers, per block for shared memory), from 64 to 1125899906842624, e.g. `bytes: 49152` for a 48 KiB L1"
);
desc_case!(
    cache_bandwidth_zero,
    "cpu.yaml",
    "gbytes_per_s: 364",
    "gbytes_per_s: 0",
    "t.yaml:51:19: buffer `L1`'s gbytes_per_s is 0, outside 1 to 10000000: the bandwidth in GB/s",
    "out of range",
    "give the bandwidth in GB/s, e.g. `gbytes_per_s: 364`"
);
desc_case!(
    registers_hold_less_than_their_bytes,
    "cpu.yaml",
    "registers: 32",
    "registers: 16",
    "t.yaml:58:12: buffer `reg` has 2048 bytes, more than its 16 registers of 64 bytes hold (1024)",
    "more than the registers hold",
    "give at most 1024 bytes, or more registers"
);
desc_case!(
    register_file_of_zero_registers,
    "a100.yaml",
    "registers: 128",
    "registers: 0",
    "t.yaml:33:16: buffer `register`'s registers is 0, outside 1 to 65536: the registers of the file",
    "out of range",
    "give the registers of the file, e.g. `registers: 128`"
);
desc_case!(
    row_bytes_zero,
    "a100.yaml",
    "row_bytes: 4",
    "row_bytes: 0",
    "t.yaml:34:16: buffer `register`'s row_bytes is 0, outside 1 to 4096: the bytes of one register or row",
    "out of range",
    "give the bytes of one register or row, e.g. `row_bytes: 4`"
);
desc_case!(
    shared_memory_banks_zero,
    "a100.yaml",
    "banks: 32 ",
    "banks: 0 ",
    "t.yaml:25:12: buffer `shared`'s banks is 0, outside 1 to 1024: the number of banks",
    "out of range",
    "give the number of banks, e.g. `banks: 4`"
);
desc_case!(
    shared_memory_of_a_thread,
    "a100.yaml",
    "scope: block",
    "scope: thread",
    "t.yaml:23:12: buffer `shared` (shared_memory of a gpu target) has scope thread",
    "wrong scope",
    "give it `scope: block`: a GPU's shared memory belongs to a block, its registers to a thread, and other buffers to a core or the chip"
);
desc_case!(
    gpu_registers_of_a_block,
    "a100.yaml",
    "scope: thread",
    "scope: block",
    "t.yaml:31:12: buffer `register` (registers of a gpu target) has scope block",
    "wrong scope",
    "give it `scope: thread`: a GPU's shared memory belongs to a block, its registers to a thread, and other buffers to a core or the chip"
);
desc_case!(
    cpu_cache_of_a_thread,
    "cpu.yaml",
    "scope: chip ",
    "scope: thread ",
    "t.yaml:39:12: buffer `L3` (cache of a cpu target) has scope thread",
    "wrong scope",
    "give it `scope: core` or `scope: chip`: a GPU's shared memory belongs to a block, its registers to a thread, and other buffers to a core or the chip"
);
desc_case!(
    scratchpad_on_a_gpu,
    "a100.yaml",
    "role: shared_memory",
    "role: scratchpad",
    "t.yaml:22:11: buffer `shared` has role scratchpad, which a gpu target does not have",
    "not a role of this kind",
    "a gpu target's buffers are cache, shared_memory, registers"
);
desc_case!(
    two_register_files_on_a_gpu,
    "a100.yaml",
    "row_bytes: 4",
    "row_bytes: 4\n  - name: more\n    role: registers\n    scope: thread\n    bytes: 256",
    "t.yaml:36:11: buffers `register` and `more` both have role registers",
    "a second one",
    "a GPU has one registers buffer: remove one"
);

// Gemmini.
desc_case!(
    gemmini_row_elems_zero,
    "gemmini.yaml",
    "    row_elems: 16\n    banks: 4",
    "    row_elems: 0\n    banks: 4",
    "t.yaml:18:16: buffer `scratchpad`'s row_elems is 0, outside 1 to 65536: the elements of one row",
    "out of range",
    "give the elements of one row, e.g. `row_elems: 16`"
);
desc_case!(
    gemmini_row_elems_not_dim,
    "gemmini.yaml",
    "    row_elems: 16\n    banks: 4",
    "    row_elems: 8\n    banks: 4",
    "t.yaml:18:16: buffer `scratchpad` has rows of 8 elements, but the array is 16 x 16",
    "not DIM",
    "a Gemmini row holds DIM elements: `row_elems: 16`"
);
desc_case!(
    gemmini_banks_zero,
    "gemmini.yaml",
    "banks: 4",
    "banks: 0",
    "t.yaml:19:12: buffer `scratchpad`'s banks is 0, outside 1 to 1024: the number of banks",
    "out of range",
    "give the number of banks, e.g. `banks: 4`"
);
desc_case!(
    gemmini_array_dim_zero,
    "gemmini.yaml",
    "dim: 16 ",
    "dim: 0 ",
    "t.yaml:7:8: array.dim is 0, outside 1 to 256: the side of the DIM x DIM array",
    "out of range",
    "give the side of the DIM x DIM array, e.g. `dim: 16`"
);
desc_case!(
    gemmini_one_byte_scratchpad,
    "gemmini.yaml",
    "bytes: 262144",
    "bytes: 1",
    "t.yaml:16:12: buffer `scratchpad` has 1 byte: 0 rows of 16 i8 per bank, fewer than the 16 rows of one block",
    "too small",
    "give at least 1024 bytes (4 bank(s) of 16 rows of 16 i8)"
);
desc_case!(
    gemmini_without_a_scratchpad,
    "gemmini.yaml",
    "role: scratchpad",
    "role: accumulator",
    "t.yaml:9:1: target `gemmini` has no buffer with role scratchpad",
    "no such buffer",
    "a Gemmini description needs a scratchpad and an accumulator (see specs/targets/gemmini.yaml)"
);
desc_case!(
    gemmini_without_an_element_type,
    "gemmini.yaml",
    "    elem: i32\n",
    "",
    "t.yaml:22:11: buffer `accumulator` has no element type",
    "needs `elem`",
    "give the type its rows hold, e.g. `elem: i8` for the scratchpad, `elem: i32` for the accumulator"
);
desc_case!(
    gemmini_misspelt_field,
    "gemmini.yaml",
    "array:\n  dim: 16 ",
    "xarray:\n  dim: 16 ",
    "t.yaml:6:1: invalid target description: unknown field `xarray`, expected one of `name`, `kind`, `cores`, `sms`, `warp_size`, `max_threads_per_block`, `registers_per_thread`, `async_copy`, `peak_gflops`, `dram_gbytes_per_s`, `call_ops`, `cuda_arch`, `array`, `vector_bytes`, `cost`, `buffers`",
    "here",
    "see specs/targets/cpu.yaml for the schema: name, kind (cpu, gpu, gemmini, npu), buffers (name, role, scope, bytes, …) from outermost to innermost"
);
desc_case!(
    gemmini_unknown_dataflow,
    "gemmini.yaml",
    "dataflows: [ws, os]",
    "dataflows: [ws, xs]",
    "t.yaml:8:19: unknown dataflow `xs`",
    "not a dataflow",
    "dataflows are ws (weight-stationary) and os (output-stationary)"
);
desc_case!(
    gemmini_negative_energy,
    "gemmini.yaml",
    "mac_energy: 0.561",
    "mac_energy: -0.561",
    "t.yaml:34:15: cost.mac_energy is -0.561, not a figure above 0 to 1e12",
    "out of range",
    "give BACO's figures (thesis Tables 6.2 and 6.3), as specs/targets/gemmini.yaml does"
);

desc_case!(
    gemmini_array_dim_too_large,
    "gemmini.yaml",
    "dim: 16 ",
    "dim: 300 ",
    "t.yaml:7:8: array.dim is 300, outside 1 to 256: the side of the DIM x DIM array",
    "out of range",
    "give the side of the DIM x DIM array, e.g. `dim: 16`"
);
desc_case!(
    gemmini_dataflow_twice,
    "gemmini.yaml",
    "dataflows: [ws, os]",
    "dataflows: [ws, ws]",
    "t.yaml:8:19: dataflow `ws` is listed twice",
    "duplicate",
    "list each dataflow once, e.g. `dataflows: [ws, os]`"
);
desc_case!(
    gemmini_two_accumulators,
    "gemmini.yaml",
    "    banks: 2\n",
    "    banks: 2\n  - name: acc2\n    role: accumulator\n    scope: core\n    bytes: 65536\n    elem: i32\n",
    "t.yaml:31:11: target `gemmini` has two buffers with role accumulator",
    "a second one",
    "Gemmini has one accumulator: remove one"
);
desc_case!(
    shared_memory_on_an_npu,
    "ascend.yaml",
    "role: scratchpad        # the unified buffer of the vector unit",
    "role: shared_memory",
    "t.yaml:20:11: buffer `UB` has role shared_memory, which a npu target does not have",
    "not a role of this kind",
    "a npu target's buffers are cache, scratchpad, accumulator, registers"
);

/// A Gemmini description with no `array` at all (not a misspelt one) is located at its
/// kind.
#[test]
fn gemmini_needs_an_array() {
    let text = mutated("gemmini.yaml", "array:\n", "")
        .replace(
            "  dim: 16                   # a DIM x DIM systolic array, one MAC per PE per cycle\n",
            "",
        )
        .replace(
            "  dataflows: [ws, os]       # weight-stationary and output-stationary\n",
            "",
        );
    assert_error(
        &desc_error(&text),
        "t.yaml:5:7: a Gemmini description has no `array`",
        "needs an array",
        "describe the systolic array, e.g. `array: {dim: 16, dataflows: [ws, os]}`",
    );
}

/// Flow-style YAML is located as precisely as block style.
#[test]
fn flow_style_buffers_are_located() {
    let text = "name: x\nkind: gpu\nbuffers: [{name: shared, role: shared_memory, scope: block, bytes: 4096}, {name: r, role: registers, scope: thread, bytes: 0}]\n";
    assert_error(
        &desc_error(text),
        "t.yaml:3:124: buffer `r` has 0 bytes, less than one register (4 bytes)",
        "too small",
        "give the capacity in bytes one tile may use (per thread for registers, per block for shared memory), from 4 to 1125899906842624, e.g. `bytes: 49152` for a 48 KiB L1",
    );
}

/// Every shipped description loads (through `explain`, which prints the target).
#[test]
fn shipped_descriptions_pass() {
    for d in ["cpu", "a100", "h100", "gemmini", "gemmini-fp32", "ascend"] {
        let program = if d == "gemmini" {
            "examples/gemmini/gemm.tc"
        } else {
            MM
        };
        let o = polyc(&[
            "explain",
            program,
            "--param",
            "M=16,N=16,K=16",
            "--target",
            &format!("specs/targets/{d}.yaml"),
        ]);
        assert_code(&o, 0);
    }
}

/// Item 3 of the hostile-input issue: an A100 whose `buffers:` lists the register file
/// before shared memory gave zeros (993 of 1,073 elements). Buffers nest by scope, so the
/// order does not change the code: the same CUDA as the A100's, and a run that checks.
#[test]
fn gpu_buffer_order_does_not_change_the_code() {
    let a100 = std::fs::read_to_string(root().join("specs/targets/a100.yaml")).expect("a100");
    let shared = a100.find("  # 192 KiB").expect("shared");
    let register = a100.find("  # Registers:").expect("register");
    let swapped = format!(
        "{}{}{}",
        &a100[..shared],
        &a100[register..],
        &a100[shared..register]
    );
    assert!(swapped.find("name: register") < swapped.find("name: shared"));
    let dir = tempdir();
    let desc = write(dir.path(), "swapped.yaml", &swapped);
    let args = |t: &str| {
        vec![
            MM.to_string(),
            "--param".into(),
            "M=37,N=29,K=23".into(),
            "--target".into(),
            t.to_string(),
        ]
    };
    let with = |t: &str| {
        let a = args(t);
        polyc_ok(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    assert_eq!(with(&desc), with("gpu"));
    let out = polyc_ok(&[
        "run",
        MM,
        "--param",
        "M=37,N=29,K=23",
        "--target",
        &desc,
        "--check",
    ]);
    assert!(
        out.trim_end()
            .ends_with("C: max_abs_err=0.000e0 max_rel_err=0.000e0 ok"),
        "{out}"
    );
}

/// Item 15: without a register file, the default policy mapped 37 x 29 = 1,073 threads to a
/// block and then refused them. Now it keeps blocks at 256 threads or fewer, and the run
/// checks.
#[test]
fn gpu_policy_without_registers_respects_the_thread_limit() {
    let a100 = std::fs::read_to_string(root().join("specs/targets/a100.yaml")).expect("a100");
    let register = a100.find("  # Registers:").expect("register");
    let dir = tempdir();
    let desc = write(dir.path(), "noreg.yaml", &a100[..register]);
    let out = polyc_ok(&[
        "run",
        MM,
        "--param",
        "M=37,N=29,K=23",
        "--target",
        &desc,
        "--check",
    ]);
    assert!(out.trim_end().ends_with(" ok"), "{out}");
    let explain = polyc_ok(&[
        "explain",
        MM,
        "--param",
        "M=37,N=29,K=23",
        "--target",
        &desc,
    ]);
    assert!(
        explain.contains("block 15 x 10 x 1 = 150 threads"),
        "{explain}"
    );
}
