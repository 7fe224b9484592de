//! Unit tests of the Gemmini functional model.
//!
//! References are computed independently of the model's float path: int32 matmuls, and
//! scaling by powers of two as integer round-half-to-even, so that a wrong rounding or
//! saturation in the model shows.

use super::model::*;

/// A deterministic pseudo-random int8 sequence.
fn data(n: usize, seed: u64) -> Vec<i8> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 56) as u8 as i8
        })
        .collect()
}

fn matmul(a: &[i8], b: &[i8], m: usize, k: usize, n: usize) -> Vec<i32> {
    let mut c = vec![0i32; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k)
                .map(|p| a[i * k + p] as i32 * b[p * n + j] as i32)
                .sum();
        }
    }
    c
}

/// `x / 2^shift` rounded half to even, saturated to int8 (integer arithmetic only).
fn scale_pow2(x: i32, shift: u32) -> i8 {
    let d = 1i64 << shift;
    let x = x as i64;
    let q = x.div_euclid(d);
    let r = x.rem_euclid(d);
    let q = if 2 * r > d || (2 * r == d && q & 1 == 1) {
        q + 1
    } else {
        q
    };
    q.clamp(-128, 127) as i8
}

fn as_i8(bytes: &[u8]) -> Vec<i8> {
    bytes.iter().map(|&b| b as i8).collect()
}

fn as_i32(bytes: &[u8]) -> Vec<i32> {
    bytes
        .chunks(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn put_i8(mem: &mut FlatMemory, off: usize, v: &[i8]) {
    for (i, x) in v.iter().enumerate() {
        mem.bytes[off + i] = *x as u8;
    }
}

fn put_i32(mem: &mut FlatMemory, off: usize, v: &[i32]) {
    for (i, x) in v.iter().enumerate() {
        mem.bytes[off + 4 * i..off + 4 * i + 4].copy_from_slice(&x.to_le_bytes());
    }
}

const A_OFF: usize = 0;
const B_OFF: usize = 0x1000;
const C_OFF: usize = 0x2000;
const CF_OFF: usize = 0x4000;

fn model() -> Gemmini {
    Gemmini::new(GemminiConfig::default())
}

/// One 16×16×16 product: A at scratchpad row 0, B at row 16, C at accumulator row 0;
/// mvout scaled by 2^-8 into C_OFF, and full int32 into CF_OFF.
fn single_block(dataflow: Dataflow) -> (Gemmini, FlatMemory, Vec<i32>) {
    let a = data(256, 1);
    let b = data(256, 2);
    let mut mem = FlatMemory::zeroed(0x8000);
    put_i8(&mut mem, A_OFF, &a);
    put_i8(&mut mem, B_OFF, &b);
    let acc0 = ACC_BIT;
    let (pre, comp) = match dataflow {
        Dataflow::WeightStationary => (
            Insn::preload(16, acc0, 16, 16, 16, 16),
            Insn::compute_preloaded(0, GARBAGE_ADDR, 16, 16, 16, 16),
        ),
        Dataflow::OutputStationary => (
            Insn::preload(GARBAGE_ADDR, acc0, 16, 16, 16, 16),
            Insn::compute_preloaded(0, 16, 16, 16, 16, 16),
        ),
    };
    let prog = vec![
        Insn::config_ex(dataflow, Activation::None, 0),
        Insn::config_ld(16, 1.0, 16),
        Insn::config_st(16, Activation::None, 1.0 / 256.0),
        Insn::mvin(mem.addr(A_OFF), 0, 16, 16),
        Insn::mvin(mem.addr(B_OFF), 16, 16, 16),
        pre,
        comp,
        Insn::mvout(mem.addr(C_OFF), acc0, 16, 16),
        Insn::config_st(64, Activation::None, 1.0),
        Insn::mvout(mem.addr(CF_OFF), acc0 | FULL_ACC_BIT, 16, 16),
        Insn::Fence,
    ];
    let mut g = model();
    g.record_trace(true);
    g.run(&prog, &mut mem).expect("runs");
    assert_eq!(g.trace(), &prog[..]);
    (g, mem, matmul(&a, &b, 16, 16, 16))
}

#[test]
fn ws_16x16x16_matches_matmul() {
    let (_, mem, want) = single_block(Dataflow::WeightStationary);
    assert_eq!(as_i32(&mem.bytes[CF_OFF..CF_OFF + 1024]), want);
    let scaled: Vec<i8> = want.iter().map(|&x| scale_pow2(x, 8)).collect();
    assert_eq!(as_i8(&mem.bytes[C_OFF..C_OFF + 256]), scaled);
    // The data exercises both saturation and plain rounding.
    assert!(scaled.contains(&127) || scaled.contains(&-128));
    assert!(scaled.iter().any(|&x| x.abs() < 100));
}

#[test]
fn os_16x16x16_matches_matmul() {
    let (_, mem, want) = single_block(Dataflow::OutputStationary);
    assert_eq!(as_i32(&mem.bytes[CF_OFF..CF_OFF + 1024]), want);
    let scaled: Vec<i8> = want.iter().map(|&x| scale_pow2(x, 8)).collect();
    assert_eq!(as_i8(&mem.bytes[C_OFF..C_OFF + 256]), scaled);
}

#[test]
fn counters_of_one_block() {
    let (g, _, _) = single_block(Dataflow::WeightStationary);
    let want = Counters {
        config_ex: 1,
        config_ld: 1,
        config_st: 2,
        mvin: 2,
        mvout: 2,
        preload: 1,
        compute_preloaded: 1,
        fence: 1,
        dram_to_spad_rows: 32,
        dram_to_spad_bytes: 512,
        acc_to_dram_rows: 32,
        acc_to_dram_bytes: 256 + 1024,
        array_to_acc_rows: 16,
        macs: 4096,
        array_macs: 4096,
        ..Counters::default()
    };
    assert_eq!(g.counters(), &want);
    assert_eq!(g.counters().total_insns(), 11);
    assert_eq!(g.counters().insns(InsnKind::Mvin), 2);
}

#[test]
fn counters_of_a_small_ragged_case() {
    // C[5×7] = A[5×3] · B[3×7] in WS, plus a 40-column block mvin (3 blocks per row).
    let a = data(15, 3);
    let b = data(21, 4);
    let mut mem = FlatMemory::zeroed(0x8000);
    put_i8(&mut mem, A_OFF, &a);
    put_i8(&mut mem, B_OFF, &b);
    let mut g = model();
    let prog = vec![
        Insn::config_ex(Dataflow::WeightStationary, Activation::None, 0),
        Insn::config_ld(3, 1.0, 16),
        Insn::mvin(mem.addr(A_OFF), 0, 3, 5),
        Insn::config_ld(7, 1.0, 16),
        Insn::mvin(mem.addr(B_OFF), 16, 7, 3),
        Insn::preload(16, ACC_BIT, 7, 3, 7, 5),
        Insn::compute_preloaded(0, GARBAGE_ADDR, 3, 5, 16, 16),
        Insn::config_st(28, Activation::None, 1.0),
        Insn::mvout(mem.addr(C_OFF), ACC_BIT | FULL_ACC_BIT, 7, 5),
        Insn::config_ld(40, 1.0, 16),
        Insn::mvin(mem.addr(0x3000), 64, 40, 2),
    ];
    g.run(&prog, &mut mem).expect("runs");
    assert_eq!(
        as_i32(&mem.bytes[C_OFF..C_OFF + 140]),
        matmul(&a, &b, 5, 3, 7)
    );
    let c = g.counters();
    assert_eq!(
        (c.mvin, c.dram_to_spad_rows, c.dram_to_spad_bytes),
        (3, 5 + 3 + 2 * 3, 15 + 21 + 80)
    );
    assert_eq!((c.acc_to_dram_rows, c.acc_to_dram_bytes), (5, 140));
    assert_eq!((c.macs, c.array_macs), (105, 4096));
    assert_eq!(c.array_to_acc_rows, 5);
    assert_eq!((c.config_ld, c.config_st, c.config_ex), (3, 1, 1));
}

/// C[M×N] = A[M×K] · B[K×N], tiled by 16 with the rows/cols arguments, instruction by
/// instruction; mvout scaled by 2^-`shift` with `act`.
fn tiled(
    dataflow: Dataflow,
    m: usize,
    k: usize,
    n: usize,
    shift: u32,
    act: Activation,
) -> (Vec<i8>, Vec<i32>, Counters) {
    let a = data(m * k, 11);
    let b = data(k * n, 12);
    let mut mem = FlatMemory::zeroed(0x10000);
    put_i8(&mut mem, A_OFF, &a);
    put_i8(&mut mem, B_OFF, &b);
    let mut prog = vec![
        Insn::config_ex(dataflow, Activation::None, 0),
        Insn::config_ld(k as u64, 1.0, 16),
        Insn::ConfigLd {
            stride: n as u64,
            scale: 1.0,
            shrunk: false,
            block_stride: 16,
            pixel_repeats: 1,
            id: 1,
        },
        Insn::config_st(n as u32, act, 1.0 / (1u32 << shift) as f32),
    ];
    let kt = k.div_ceil(16);
    for i0 in (0..m).step_by(16) {
        for j0 in (0..n).step_by(16) {
            let rows = (m - i0).min(16) as u16;
            let cols = (n - j0).min(16) as u16;
            for (t, k0) in (0..k).step_by(16).enumerate() {
                let kk = (k - k0).min(16) as u16;
                let a_sp = (2 * t * 16) as u32;
                let b_sp = a_sp + 16;
                prog.push(Insn::mvin(mem.addr(A_OFF + i0 * k + k0), a_sp, kk, rows));
                prog.push(Insn::Mvin {
                    id: 1,
                    dram_addr: mem.addr(B_OFF + k0 * n + j0),
                    local: b_sp,
                    cols,
                    rows: kk,
                });
                match dataflow {
                    Dataflow::WeightStationary => {
                        let c = if t == 0 {
                            ACC_BIT
                        } else {
                            ACC_BIT | ACCUMULATE_BIT
                        };
                        prog.push(Insn::preload(b_sp, c, cols, kk, cols, rows));
                        prog.push(Insn::compute_preloaded(
                            a_sp,
                            GARBAGE_ADDR,
                            kk,
                            rows,
                            16,
                            16,
                        ));
                    }
                    Dataflow::OutputStationary => {
                        let c = if t + 1 == kt { ACC_BIT } else { GARBAGE_ADDR };
                        prog.push(Insn::preload(GARBAGE_ADDR, c, 16, 16, cols, rows));
                        prog.push(if t == 0 {
                            Insn::compute_preloaded(a_sp, b_sp, kk, rows, cols, kk)
                        } else {
                            Insn::compute_accumulated(a_sp, b_sp, kk, rows, cols, kk)
                        });
                    }
                }
            }
            prog.push(Insn::mvout(
                mem.addr(C_OFF + i0 * n + j0),
                ACC_BIT,
                cols,
                rows,
            ));
        }
    }
    prog.push(Insn::Fence);
    let mut g = model();
    g.run(&prog, &mut mem).expect("runs");
    let want = matmul(&a, &b, m, k, n);
    (
        as_i8(&mem.bytes[C_OFF..C_OFF + m * n]),
        want,
        g.counters().clone(),
    )
}

#[test]
fn tiled_37x23x29_ws_and_os_match_exactly() {
    for df in [Dataflow::WeightStationary, Dataflow::OutputStationary] {
        let (got, want, c) = tiled(df, 37, 23, 29, 8, Activation::None);
        let want: Vec<i8> = want.iter().map(|&x| scale_pow2(x, 8)).collect();
        assert_eq!(got, want, "{df:?}");
        // 3 × 2 output tiles, 2 k-tiles each.
        assert_eq!(c.mvout, 6, "{df:?}");
        assert_eq!(c.preload, 12, "{df:?}");
        assert_eq!(c.mvin, 24, "{df:?}");
        assert_eq!(c.macs, 37 * 23 * 29, "{df:?}");
        assert_eq!(c.acc_to_dram_bytes, 37 * 29, "{df:?}");
        // Each A element once per j-tile, each B element once per i-tile.
        assert_eq!(
            c.dram_to_spad_bytes,
            (37 * 23 * 2 + 23 * 29 * 3) as u64,
            "{df:?}"
        );
    }
}

#[test]
fn relu_on_mvout() {
    let (got, want, _) = tiled(Dataflow::WeightStationary, 20, 16, 18, 7, Activation::Relu);
    let want: Vec<i8> = want.iter().map(|&x| scale_pow2(x, 7).max(0)).collect();
    assert_eq!(got, want);
    assert!(want.iter().filter(|&&x| x == 0).count() > 50);
}

#[test]
fn rounding_and_saturation_edges() {
    assert_eq!(acc_scale(5, 0.5), 2); // 2.5 → 2
    assert_eq!(acc_scale(7, 0.5), 4); // 3.5 → 4
    assert_eq!(acc_scale(-5, 0.5), -2); // −2.5 → −2
    assert_eq!(acc_scale(-7, 0.5), -4); // −3.5 → −4
    assert_eq!(acc_scale(3, 0.5), 2); // 1.5 → 2
    assert_eq!(acc_scale(254, 0.5), 127);
    assert_eq!(acc_scale(255, 0.5), 127); // 127.5 → 128 → saturates
    assert_eq!(acc_scale(-256, 0.5), -128);
    assert_eq!(acc_scale(-258, 0.5), -128); // −129 clamps
    assert_eq!(acc_scale(i32::MAX, 1.0), 127);
    assert_eq!(acc_scale(i32::MIN, 1.0), -128);
    assert_eq!(acc_scale(10, 0.3), 3);
    assert_eq!(mvin_scale(5, 0.5), 2);
    assert_eq!(mvin_scale(3, 0.5), 2);
    assert_eq!(mvin_scale(100, 2.0), 127);
    assert_eq!(mvin_scale(-100, 2.0), -128);
    assert_eq!(mvin_scale(-128, 1.0), -128);
    assert_eq!(rounding_right_shift(5, 1), 2);
    assert_eq!(rounding_right_shift(7, 1), 4);
    assert_eq!(rounding_right_shift(-5, 1), -2);
    assert_eq!(rounding_right_shift(-7, 1), -4);
    assert_eq!(rounding_right_shift(6, 2), 2);
    assert_eq!(rounding_right_shift(10, 2), 2);
    assert_eq!(rounding_right_shift(11, 2), 3);
    assert_eq!(rounding_right_shift(-11, 2), -3);
    assert_eq!(sys_shift(1000, 2), 127);
    assert_eq!(sys_shift(-1000, 2), -128);
    for x in -3000..3000 {
        for s in 0..5 {
            assert_eq!(
                acc_scale(x, 1.0 / (1 << s) as f32),
                scale_pow2(x, s),
                "{x} {s}"
            );
            assert_eq!(sys_shift(x, s), scale_pow2(x, s), "{x} {s}");
        }
    }
}

#[test]
fn scaling_through_the_instructions() {
    // Accumulator values → mvout with scale 0.5; int8 → mvin with scale 0.5 → mvout.
    let vals = [
        5, 7, -5, -7, 3, 255, -258, 254, 0, 1, -1, 300, -300, 129, -129, 2,
    ];
    let mut mem = FlatMemory::zeroed(0x1000);
    put_i32(&mut mem, 0, &vals);
    let bytes: Vec<i8> = vec![5, 7, -5, -7, 3, 127, -128, 1, -1, 0, 9, 11, 100, -100, 2, 6];
    put_i8(&mut mem, 0x100, &bytes);
    let mut g = model();
    let prog = vec![
        Insn::config_ld(64, 1.0, 16),
        Insn::mvin(mem.addr(0), ACC_BIT | 3, 16, 1),
        Insn::config_st(16, Activation::None, 0.5),
        Insn::mvout(mem.addr(0x200), ACC_BIT | 3, 16, 1),
        Insn::config_ld(16, 0.5, 16),
        Insn::mvin(mem.addr(0x100), 7, 16, 1),
        Insn::mvout(mem.addr(0x300), 7, 16, 1),
    ];
    g.run(&prog, &mut mem).expect("runs");
    assert_eq!(
        as_i8(&mem.bytes[0x200..0x210]),
        vec![2, 4, -2, -4, 2, 127, -128, 127, 0, 0, 0, 127, -128, 64, -64, 1]
    );
    assert_eq!(
        as_i8(&mem.bytes[0x300..0x310]),
        vec![2, 4, -2, -4, 2, 64, -64, 0, 0, 0, 4, 6, 50, -50, 1, 3]
    );
    assert_eq!(g.acc_row(3), &vals);
    assert_eq!(g.counters().dram_to_acc_bytes, 64);
    assert_eq!(g.counters().dram_to_acc_rows, 1);
    assert_eq!(g.counters().spad_to_dram_bytes, 16);
}

#[test]
fn accumulate_versus_overwrite() {
    let x: Vec<i32> = (0..16).map(|i| 1000 * i - 7000).collect();
    let y: Vec<i32> = (0..16).map(|i| 3 * i + 1).collect();
    let a = data(256, 5);
    let b = data(256, 6);
    let ab = matmul(&a, &b, 16, 16, 16);
    let mut mem = FlatMemory::zeroed(0x4000);
    put_i32(&mut mem, 0, &x);
    put_i32(&mut mem, 0x100, &y);
    put_i8(&mut mem, A_OFF + 0x1000, &a);
    put_i8(&mut mem, B_OFF + 0x1000, &b);
    let row = 40u32;
    let mut g = model();
    let prog = vec![
        Insn::config_ex(Dataflow::WeightStationary, Activation::None, 0),
        Insn::config_ld(0, 1.0, 16), // stride 0: every row the same
        Insn::mvin(mem.addr(0), ACC_BIT | row, 16, 16),
        Insn::mvin(mem.addr(0x100), ACC_BIT | ACCUMULATE_BIT | row, 16, 16),
    ];
    g.run(&prog, &mut mem).expect("runs");
    for r in 0..16 {
        let want: Vec<i32> = (0..16).map(|j| x[j] + y[j]).collect();
        assert_eq!(g.acc_row(row as usize + r), &want);
    }
    let prog = vec![
        Insn::config_ld(16, 1.0, 16),
        Insn::mvin(mem.addr(A_OFF + 0x1000), 0, 16, 16),
        Insn::mvin(mem.addr(B_OFF + 0x1000), 16, 16, 16),
        Insn::preload(16, ACC_BIT | ACCUMULATE_BIT | row, 16, 16, 16, 16),
        Insn::compute_preloaded(0, GARBAGE_ADDR, 16, 16, 16, 16),
    ];
    g.run(&prog, &mut mem).expect("runs");
    for r in 0..16 {
        let want: Vec<i32> = (0..16).map(|j| x[j] + y[j] + ab[r * 16 + j]).collect();
        assert_eq!(g.acc_row(row as usize + r), &want, "row {r}");
    }
    // Overwrite, reusing the weights (compute_accumulated).
    let prog = vec![
        Insn::preload(GARBAGE_ADDR, ACC_BIT | row, 16, 16, 16, 16),
        Insn::compute_accumulated(0, GARBAGE_ADDR, 16, 16, 16, 16),
    ];
    g.run(&prog, &mut mem).expect("runs");
    for r in 0..16 {
        assert_eq!(g.acc_row(row as usize + r), &ab[r * 16..r * 16 + 16]);
    }
    // A mvin of zeros (DRAM address 0) overwrites.
    g.execute(&Insn::mvin(0, ACC_BIT | row, 16, 2), &mut mem)
        .expect("runs");
    assert_eq!(g.acc_row(row as usize), &[0; 16]);
    assert_eq!(g.acc_row(row as usize + 2), &ab[32..48]);
}

#[test]
fn ws_bias_and_os_preloaded_d_and_spad_output() {
    // WS: C = D + A·B with D from the scratchpad, written to the scratchpad (saturated).
    let a: Vec<i8> = data(256, 7).iter().map(|x| x / 16).collect();
    let b: Vec<i8> = data(256, 8).iter().map(|x| x / 16).collect();
    let d = data(256, 9);
    let ab = matmul(&a, &b, 16, 16, 16);
    let mut mem = FlatMemory::zeroed(0x4000);
    put_i8(&mut mem, A_OFF, &a);
    put_i8(&mut mem, B_OFF, &b);
    put_i8(&mut mem, C_OFF, &d);
    let mut g = model();
    let prog = vec![
        Insn::config_ex(Dataflow::WeightStationary, Activation::Relu, 0),
        Insn::config_ld(16, 1.0, 16),
        Insn::mvin(mem.addr(A_OFF), 0, 16, 16),
        Insn::mvin(mem.addr(B_OFF), 16, 16, 16),
        Insn::mvin(mem.addr(C_OFF), 32, 16, 16),
        Insn::preload(16, 100, 16, 16, 16, 16),
        Insn::compute_preloaded(0, 32, 16, 16, 16, 16),
    ];
    g.run(&prog, &mut mem).expect("runs");
    for r in 0..16 {
        let want: Vec<i8> = (0..16)
            .map(|j| scale_pow2(ab[r * 16 + j] + d[r * 16 + j] as i32, 0).max(0))
            .collect();
        assert_eq!(g.spad_row(100 + r), &want[..], "row {r}");
    }
    // OS: PEs start from D (preloaded from the scratchpad), result to the scratchpad
    // shifted right by 3 with rounding, no activation.
    let prog = vec![
        Insn::config_ex(Dataflow::OutputStationary, Activation::None, 3),
        Insn::preload(32, 200, 16, 16, 16, 16),
        Insn::compute_preloaded(0, 16, 16, 16, 16, 16),
    ];
    g.run(&prog, &mut mem).expect("runs");
    assert_eq!(g.counters().array_to_spad_rows, 32);
    for r in 0..16 {
        let want: Vec<i8> = (0..16)
            .map(|j| scale_pow2(ab[r * 16 + j] + d[r * 16 + j] as i32, 3))
            .collect();
        assert_eq!(g.spad_row(200 + r), &want[..], "row {r}");
    }
}

#[test]
fn transposed_a_in_ws_and_c_stride() {
    // A stored transposed (K×M); config_ex with A_transpose; C rows 2 apart.
    let a = data(256, 21);
    let b = data(256, 22);
    let mut at = vec![0i8; 256];
    for i in 0..16 {
        for k in 0..16 {
            at[k * 16 + i] = a[i * 16 + k];
        }
    }
    let ab = matmul(&a, &b, 16, 16, 16);
    let mut mem = FlatMemory::zeroed(0x4000);
    put_i8(&mut mem, A_OFF, &at);
    put_i8(&mut mem, B_OFF, &b);
    let mut g = model();
    let prog = vec![
        Insn::ConfigEx {
            dataflow: Dataflow::WeightStationary,
            activation: Activation::None,
            sys_shift: 0,
            sys_acc_scale: 1.0,
            c_stride: 2,
            a_stride: 1,
            a_transpose: true,
            b_transpose: false,
            set_only_strides: false,
        },
        Insn::config_ld(16, 1.0, 16),
        Insn::mvin(mem.addr(A_OFF), 0, 16, 16),
        Insn::mvin(mem.addr(B_OFF), 16, 16, 16),
        Insn::preload(16, ACC_BIT, 16, 16, 16, 16),
        Insn::compute_preloaded(0, GARBAGE_ADDR, 16, 16, 16, 16),
    ];
    g.run(&prog, &mut mem).expect("runs");
    for r in 0..16 {
        assert_eq!(g.acc_row(2 * r), &ab[r * 16..r * 16 + 16], "row {r}");
    }
}

#[test]
fn block_mvin_uses_the_block_stride() {
    let v = data(48 * 2, 31);
    let mut mem = FlatMemory::zeroed(0x1000);
    put_i8(&mut mem, 0, &v);
    let mut g = model();
    let prog = vec![
        Insn::ConfigLd {
            stride: 48,
            scale: 1.0,
            shrunk: false,
            block_stride: 100,
            pixel_repeats: 1,
            id: 0,
        },
        Insn::mvin(mem.addr(0), 10, 48, 2),
    ];
    g.run(&prog, &mut mem).expect("runs");
    for r in 0..2 {
        for blk in 0..3 {
            assert_eq!(
                g.spad_row(10 + r + 100 * blk),
                &v[r * 48 + blk * 16..r * 48 + blk * 16 + 16]
            );
        }
    }
}

#[test]
fn encode_decode_round_trip() {
    let insns = vec![
        Insn::config_ex(Dataflow::WeightStationary, Activation::Relu, 3),
        Insn::ConfigEx {
            dataflow: Dataflow::OutputStationary,
            activation: Activation::None,
            sys_shift: 7,
            sys_acc_scale: 0.25,
            c_stride: 3,
            a_stride: 5,
            a_transpose: true,
            b_transpose: true,
            set_only_strides: false,
        },
        Insn::config_ld(1234, 0.125, 16),
        Insn::ConfigLd {
            stride: 1 << 40,
            scale: -2.0,
            shrunk: true,
            block_stride: 77,
            pixel_repeats: 2,
            id: 2,
        },
        Insn::config_st(999, Activation::Relu, 1.5),
        Insn::mvin(0x00de_adbe_ef00, ACC_BIT | ACCUMULATE_BIT | 5, 16, 9),
        Insn::Mvin {
            id: 1,
            dram_addr: 42,
            local: 7,
            cols: 64,
            rows: 3,
        },
        Insn::mvout(0x1234, ACC_BIT | FULL_ACC_BIT | 8, 13, 2),
        Insn::preload(GARBAGE_ADDR, ACC_BIT, 16, 16, 5, 6),
        Insn::compute_preloaded(1, 2, 3, 4, 5, 6),
        Insn::compute_accumulated(GARBAGE_ADDR, 2, 16, 15, 14, 13),
        Insn::Flush { skip: 0 },
        Insn::Fence,
    ];
    for i in insns {
        let (f, rs1, rs2) = i.encode();
        assert_eq!(Insn::decode(f, rs1, rs2), Ok(i.clone()), "{i}");
    }
    // The exact bits of `gemmini_config_ld(16)`: scale 1.0f, block stride DIM, 1 pixel.
    assert_eq!(
        Insn::config_ld(16, 1.0, 16).encode(),
        (0, (0x3f80_0000u64 << 32) | (16 << 16) | (1 << 8) | 1, 16)
    );
    assert_eq!(
        Insn::mvin(0x80, 0x8000_0010, 16, 4).encode(),
        (2, 0x80, (4u64 << 48) | (16 << 32) | 0x8000_0010)
    );
}

#[test]
fn refusals_name_the_problem() {
    assert_eq!(
        Insn::decode(8, 0, 0).unwrap_err().to_string(),
        "not modelled: the hardware loop instructions (funct 8: gemmini_loop_ws / \
         gemmini_loop_conv_ws)"
    );
    assert_eq!(
        Insn::decode(0, 2 | (1 << 4), 0).unwrap_err().to_string(),
        "not modelled: pooling on mvout (config_st with a pool stride)"
    );
    assert_eq!(
        Insn::decode(0, 2 << 3, 0).unwrap_err().to_string(),
        "not modelled: the LAYERNORM activation in config_ex"
    );
    let mut mem = FlatMemory::zeroed(0x100);
    let mut g = model();
    let e = g
        .execute(&Insn::mvin(mem.addr(0), 16384, 16, 1), &mut mem)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "instruction 0 `gemmini_extended_mvin(0x10000000, 0x4000, 16, 1)`: mvin: scratchpad row \
         16384 is beyond the 16384 rows"
    );
    let e = g
        .execute(&Insn::mvin(mem.addr(0), ACC_BIT, 17, 1), &mut mem)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "instruction 1 `gemmini_extended_mvin(0x10000000, 0x80000000, 17, 1)`: mvin of 17 \
         columns: at most 16 fit one DMA row (64 bytes)"
    );
    let e = g
        .execute(&Insn::mvin(mem.addr(0xf8), 0, 16, 1), &mut mem)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "instruction 2 `gemmini_extended_mvin(0x100000f8, 0x0, 16, 1)`: DRAM access of 16 bytes \
         at 0x100000f8 is outside the model's memory"
    );
    let e = g
        .execute(
            &Insn::compute_preloaded(ACC_BIT, GARBAGE_ADDR, 16, 16, 16, 16),
            &mut mem,
        )
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "instruction 3 `gemmini_extended_compute_preloaded(0x80000000, GARBAGE_ADDR, 16, 16, \
         16, 16)`: not modelled: A from the accumulator (address 0x80000000)"
    );
    // Nothing was counted for refused instructions.
    assert_eq!(g.counters().total_insns(), 0);
}

// ---- The float configuration ---------------------------------------------------------

fn put_f32(mem: &mut FlatMemory, off: usize, v: &[f32]) {
    for (i, x) in v.iter().enumerate() {
        mem.bytes[off + 4 * i..off + 4 * i + 4].copy_from_slice(&x.to_le_bytes());
    }
}

fn get_f32(mem: &FlatMemory, off: usize, n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| {
            let b = &mem.bytes[off + 4 * i..off + 4 * i + 4];
            f32::from_le_bytes([b[0], b[1], b[2], b[3]])
        })
        .collect()
}

/// Quarter steps in [−4, 4): sums of products are exact in f32 whatever the order.
fn fdata(n: usize, seed: u64) -> Vec<f32> {
    data(n, seed)
        .iter()
        .map(|&x| (x / 8) as f32 / 4.0)
        .collect()
}

#[test]
fn fp32_tiled_matmul_ws_and_os() {
    let (m, k, n) = (10usize, 7usize, 9usize);
    let cfg = GemminiConfig::fp32();
    let d = cfg.dim;
    assert_eq!(d, 4);
    let a = fdata(m * k, 41);
    let b = fdata(k * n, 42);
    let mut want = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let s: f64 = (0..k)
                .map(|p| a[i * k + p] as f64 * b[p * n + j] as f64)
                .sum();
            want[i * n + j] = ((s * 0.5) as f32).max(0.0);
        }
    }
    for df in [Dataflow::WeightStationary, Dataflow::OutputStationary] {
        let mut mem = FlatMemory::zeroed(0x10000);
        put_f32(&mut mem, A_OFF, &a);
        put_f32(&mut mem, B_OFF, &b);
        let mut prog = vec![
            Insn::config_ex(df, Activation::None, 0),
            Insn::config_ld((k * 4) as u64, 1.0, d),
            Insn::ConfigLd {
                stride: (n * 4) as u64,
                scale: 1.0,
                shrunk: false,
                block_stride: d as u16,
                pixel_repeats: 1,
                id: 1,
            },
            Insn::config_st((n * 4) as u32, Activation::Relu, 0.5),
        ];
        let kt = k.div_ceil(d);
        for i0 in (0..m).step_by(d) {
            for j0 in (0..n).step_by(d) {
                let rows = (m - i0).min(d) as u16;
                let cols = (n - j0).min(d) as u16;
                for (t, k0) in (0..k).step_by(d).enumerate() {
                    let kk = (k - k0).min(d) as u16;
                    let a_sp = (2 * t * d) as u32;
                    let b_sp = a_sp + d as u32;
                    prog.push(Insn::mvin(
                        mem.addr(A_OFF + 4 * (i0 * k + k0)),
                        a_sp,
                        kk,
                        rows,
                    ));
                    prog.push(Insn::Mvin {
                        id: 1,
                        dram_addr: mem.addr(B_OFF + 4 * (k0 * n + j0)),
                        local: b_sp,
                        cols,
                        rows: kk,
                    });
                    let dd = d as u16;
                    if df == Dataflow::WeightStationary {
                        let c = if t == 0 {
                            ACC_BIT
                        } else {
                            ACC_BIT | ACCUMULATE_BIT
                        };
                        prog.push(Insn::preload(b_sp, c, cols, kk, cols, rows));
                        prog.push(Insn::compute_preloaded(
                            a_sp,
                            GARBAGE_ADDR,
                            kk,
                            rows,
                            dd,
                            dd,
                        ));
                    } else {
                        let c = if t + 1 == kt { ACC_BIT } else { GARBAGE_ADDR };
                        prog.push(Insn::preload(GARBAGE_ADDR, c, dd, dd, cols, rows));
                        prog.push(Insn::Compute {
                            preloaded: t == 0,
                            a: a_sp,
                            bd: b_sp,
                            a_cols: kk,
                            a_rows: rows,
                            bd_cols: cols,
                            bd_rows: kk,
                        });
                    }
                }
                prog.push(Insn::mvout(
                    mem.addr(C_OFF + 4 * (i0 * n + j0)),
                    ACC_BIT,
                    cols,
                    rows,
                ));
            }
        }
        let mut g: Gemmini<Fp32> = Gemmini::with_types(cfg.clone());
        g.run(&prog, &mut mem).expect("runs");
        assert_eq!(get_f32(&mem, C_OFF, m * n), want, "{df:?}");
        assert_eq!(g.counters().macs, (m * n * k) as u64);
        assert_eq!(g.counters().acc_to_dram_bytes, (4 * m * n) as u64);
        assert_eq!(g.counters().array_macs, 64 * 3 * 3 * 2);
    }
}

#[test]
fn fp32_scaling_does_not_round_or_saturate() {
    let cfg = GemminiConfig::fp32();
    let mut mem = FlatMemory::zeroed(0x1000);
    let v = [1000.0f32, -3.3, 0.1, -0.0];
    put_f32(&mut mem, 0, &v);
    let mut g: Gemmini<Fp32> = Gemmini::with_types(cfg);
    let prog = vec![
        Insn::config_ld(16, 3.0, 4),
        Insn::mvin(mem.addr(0), 5, 4, 1),
        Insn::mvout(mem.addr(0x100), 5, 4, 1),
        Insn::mvin(mem.addr(0), ACC_BIT | 9, 4, 1),
        Insn::config_st(16, Activation::Relu, 0.25),
        Insn::mvout(mem.addr(0x200), ACC_BIT | 9, 4, 1),
        Insn::mvout(mem.addr(0x300), ACC_BIT | FULL_ACC_BIT | 9, 4, 1),
    ];
    g.run(&prog, &mut mem).expect("runs");
    let scaled: Vec<f32> = v.iter().map(|x| x * 3.0).collect();
    assert_eq!(get_f32(&mem, 0x100, 4), scaled);
    // HAS_MVIN_ACC_SCALE: float loads into the accumulator are scaled too.
    assert_eq!(get_f32(&mem, 0x300, 4), scaled);
    let out: Vec<f32> = scaled
        .iter()
        .map(|x| if x * 0.25 > 0.0 { x * 0.25 } else { 0.0 })
        .collect();
    assert_eq!(get_f32(&mem, 0x200, 4), out);
    assert_eq!(get_f32(&mem, 0x200, 1)[0], 750.0);
    // A DMA row holds 64 bytes: 16 f32.
    let e = g
        .execute(&Insn::mvin(mem.addr(0), 0, 17, 1), &mut mem)
        .unwrap_err();
    assert!(
        e.to_string()
            .ends_with("mvin of 17 columns: at most 16 fit one DMA row (64 bytes)"),
        "{e}"
    );
}

#[test]
fn transposed_b_in_ws_and_both_in_os() {
    let a = data(256, 23);
    let b = data(256, 24);
    let t = |m: &[i8]| -> Vec<i8> { (0..256).map(|x| m[(x % 16) * 16 + x / 16]).collect() };
    let ab = matmul(&a, &b, 16, 16, 16);
    let mut mem = FlatMemory::zeroed(0x4000);
    put_i8(&mut mem, A_OFF, &a);
    put_i8(&mut mem, A_OFF + 0x100, &t(&a));
    put_i8(&mut mem, B_OFF, &t(&b));
    let cfg = |df, a_transpose, b_transpose| Insn::ConfigEx {
        dataflow: df,
        activation: Activation::None,
        sys_shift: 0,
        sys_acc_scale: 1.0,
        c_stride: 1,
        a_stride: 1,
        a_transpose,
        b_transpose,
        set_only_strides: false,
    };
    let mut g = model();
    let prog = vec![
        Insn::config_ld(16, 1.0, 16),
        Insn::mvin(mem.addr(A_OFF), 0, 16, 16),
        Insn::mvin(mem.addr(A_OFF + 0x100), 32, 16, 16),
        Insn::mvin(mem.addr(B_OFF), 16, 16, 16),
        // WS, B stored transposed.
        cfg(Dataflow::WeightStationary, false, true),
        Insn::preload(16, ACC_BIT, 16, 16, 16, 16),
        Insn::compute_preloaded(0, GARBAGE_ADDR, 16, 16, 16, 16),
        // OS, A and B stored transposed.
        cfg(Dataflow::OutputStationary, true, true),
        Insn::preload(GARBAGE_ADDR, ACC_BIT | 16, 16, 16, 16, 16),
        Insn::compute_preloaded(32, 16, 16, 16, 16, 16),
    ];
    g.run(&prog, &mut mem).expect("runs");
    for r in 0..16 {
        assert_eq!(g.acc_row(r), &ab[r * 16..r * 16 + 16], "WS row {r}");
        assert_eq!(g.acc_row(16 + r), &ab[r * 16..r * 16 + 16], "OS row {r}");
    }
    // The combinations the simulator rejects.
    let e = g
        .execute(&cfg(Dataflow::OutputStationary, false, true), &mut mem)
        .unwrap_err();
    assert!(
        e.to_string()
            .ends_with("OS does not support transposing B alone"),
        "{e}"
    );
}

#[test]
fn shrunk_mvin_into_the_accumulator() {
    // config_ld's `shrunk`: int8 DRAM elements, scaled, widened into the accumulator; a
    // DMA row then holds 64 of them (4 blocks, one accumulator row each).
    let v = data(64, 51);
    let mut mem = FlatMemory::zeroed(0x100);
    put_i8(&mut mem, 0, &v);
    let mut g = model();
    let prog = vec![
        Insn::ConfigLd {
            stride: 64,
            scale: 2.0,
            shrunk: true,
            block_stride: 16,
            pixel_repeats: 1,
            id: 0,
        },
        Insn::mvin(mem.addr(0), ACC_BIT | 100, 64, 1),
    ];
    g.run(&prog, &mut mem).expect("runs");
    for blk in 0..4 {
        let want: Vec<i32> = v[blk * 16..blk * 16 + 16]
            .iter()
            .map(|&x| (2 * x as i32).clamp(-128, 127))
            .collect();
        assert_eq!(g.acc_row(100 + 16 * blk), &want[..], "block {blk}");
    }
    let c = g.counters();
    assert_eq!((c.dram_to_acc_rows, c.dram_to_acc_bytes), (4, 64));
}
