//! The element types of a configuration and their arithmetic (scaling, rounding,
//! saturation).

use std::fmt;

/// The element types of a Gemmini configuration and their arithmetic, as Gemmini's
/// reference simulator computes them.
pub trait ElemTypes: Clone + fmt::Debug + Default + 'static {
    /// `elem_t` (scratchpad, inputs, weights).
    type Elem: Copy + Default + PartialEq + fmt::Debug;
    /// `acc_t` (accumulator, PE sums).
    type Acc: Copy + Default + PartialEq + fmt::Debug;
    /// `sizeof(elem_t)`.
    const ELEM_BYTES: usize;
    /// `sizeof(acc_t)`.
    const ACC_BYTES: usize;
    /// Decodes a little-endian `elem_t`.
    fn elem_from_le(b: &[u8]) -> Self::Elem;
    /// Encodes a little-endian `elem_t`.
    fn elem_to_le(e: Self::Elem, out: &mut [u8]);
    /// Decodes a little-endian `acc_t`.
    fn acc_from_le(b: &[u8]) -> Self::Acc;
    /// Encodes a little-endian `acc_t`.
    fn acc_to_le(a: Self::Acc, out: &mut [u8]);
    /// `elem_t` → `acc_t` (exact).
    fn widen(e: Self::Elem) -> Self::Acc;
    /// `MVIN_SCALE` (into the scratchpad, or into the accumulator from `elem_t`).
    fn mvin_scale(e: Self::Elem, scale: f32) -> Self::Elem;
    /// `MVIN_SCALE_ACC` (into the accumulator from `acc_t`).
    fn mvin_scale_acc(a: Self::Acc, scale: f32) -> Self::Acc;
    /// `ACC_SCALE` with saturation to `elem_t` (`mvout` from the accumulator).
    fn acc_scale(a: Self::Acc, scale: f32) -> Self::Elem;
    /// `ROUNDING_RIGHT_SHIFT` with saturation to `elem_t` (array results into the
    /// scratchpad).
    fn sys_shift(a: Self::Acc, shift: u32) -> Self::Elem;
    /// ReLU.
    fn relu(e: Self::Elem) -> Self::Elem;
    /// Accumulating addition.
    fn add(x: Self::Acc, y: Self::Acc) -> Self::Acc;
    /// `acc + a × b` (a multiply, then an add).
    fn mac(acc: Self::Acc, a: Self::Acc, b: Self::Acc) -> Self::Acc;
}

/// The default configuration's types: `elem_t` = int8, `acc_t` = int32, float scales.
/// Integer arithmetic wraps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Int8;

impl ElemTypes for Int8 {
    type Elem = i8;
    type Acc = i32;
    const ELEM_BYTES: usize = 1;
    const ACC_BYTES: usize = 4;
    fn elem_from_le(b: &[u8]) -> i8 {
        b[0] as i8
    }
    fn elem_to_le(e: i8, out: &mut [u8]) {
        out[0] = e as u8;
    }
    fn acc_from_le(b: &[u8]) -> i32 {
        i32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }
    fn acc_to_le(a: i32, out: &mut [u8]) {
        out.copy_from_slice(&a.to_le_bytes());
    }
    fn widen(e: i8) -> i32 {
        e as i32
    }
    fn mvin_scale(e: i8, scale: f32) -> i8 {
        mvin_scale(e, scale)
    }
    /// The default configuration has no `HAS_MVIN_ACC_SCALE`: int32 loads are not scaled.
    fn mvin_scale_acc(a: i32, _scale: f32) -> i32 {
        a
    }
    fn acc_scale(a: i32, scale: f32) -> i8 {
        acc_scale(a, scale)
    }
    fn sys_shift(a: i32, shift: u32) -> i8 {
        sys_shift(a, shift)
    }
    fn relu(e: i8) -> i8 {
        e.max(0)
    }
    fn add(x: i32, y: i32) -> i32 {
        x.wrapping_add(y)
    }
    fn mac(acc: i32, a: i32, b: i32) -> i32 {
        acc.wrapping_add(a.wrapping_mul(b))
    }
}

/// The float configuration's types: `elem_t` = `acc_t` = f32, float scales. Scaling is a
/// plain f32 multiply (no rounding to integers, no saturation), the shift of array
/// results divides by `2^shift`, and a MAC is an f32 multiply followed by an f32 add (no
/// fused multiply-add).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fp32;

impl ElemTypes for Fp32 {
    type Elem = f32;
    type Acc = f32;
    const ELEM_BYTES: usize = 4;
    const ACC_BYTES: usize = 4;
    fn elem_from_le(b: &[u8]) -> f32 {
        f32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }
    fn elem_to_le(e: f32, out: &mut [u8]) {
        out.copy_from_slice(&e.to_le_bytes());
    }
    fn acc_from_le(b: &[u8]) -> f32 {
        Self::elem_from_le(b)
    }
    fn acc_to_le(a: f32, out: &mut [u8]) {
        Self::elem_to_le(a, out)
    }
    fn widen(e: f32) -> f32 {
        e
    }
    fn mvin_scale(e: f32, scale: f32) -> f32 {
        e * scale
    }
    fn mvin_scale_acc(a: f32, scale: f32) -> f32 {
        a * scale
    }
    fn acc_scale(a: f32, scale: f32) -> f32 {
        a * scale
    }
    fn sys_shift(a: f32, shift: u32) -> f32 {
        a / (1u64 << shift) as f32
    }
    /// `value > 0 ? value : 0` (NaN and −0 give +0).
    fn relu(e: f32) -> f32 {
        if e > 0.0 {
            e
        } else {
            0.0
        }
    }
    fn add(x: f32, y: f32) -> f32 {
        x + y
    }
    fn mac(acc: f32, a: f32, b: f32) -> f32 {
        let p = a * b;
        acc + p
    }
}

/// `MVIN_SCALE`: `x × scale` in f32, rounded to nearest even, saturated to int8.
pub fn mvin_scale(x: i8, scale: f32) -> i8 {
    saturate_i8((x as f32) * scale)
}

/// `ACC_SCALE`: `x × scale` in f32 (the int32 rounded to f32 first, as C converts it),
/// rounded to nearest even, saturated to int8. NaN gives 0.
pub fn acc_scale(x: i32, scale: f32) -> i8 {
    saturate_i8((x as f32) * scale)
}

fn saturate_i8(y: f32) -> i8 {
    let y = y.round_ties_even();
    if y > 127.0 {
        127
    } else if y < -128.0 {
        -128
    } else {
        y as i8
    }
}

/// `ROUNDING_RIGHT_SHIFT(x, shift)` (round half to even), then saturation to int8.
pub fn sys_shift(x: i32, shift: u32) -> i8 {
    let v = rounding_right_shift(x, shift);
    v.clamp(i8::MIN as i32, i8::MAX as i32) as i8
}

/// `ROUNDING_RIGHT_SHIFT(x, shift)` of `gemmini_params.h`: an arithmetic right shift by
/// `shift` that rounds half to even (`shift < 32`).
pub fn rounding_right_shift(x: i32, shift: u32) -> i32 {
    if shift == 0 {
        return x;
    }
    let q = x >> shift;
    let half = (x >> (shift - 1)) & 1;
    let rest = if shift <= 1 {
        0
    } else {
        x & ((1i32 << (shift - 1)) - 1)
    };
    q + (half & (((rest != 0) as i32) | (q & 1)))
}
