//! Tensor values in memory: typed, row-major, contiguous buffers.
//!
//! The reference interpreter, the input generator, `.npy` I/O and the runners that pass
//! buffers to compiled kernels all use [`TensorData`].

use crate::ir::{Aff, DType, InputRef, Program, TensorId};
use half::f16;
use rand::{RngCore, SeedableRng};

/// The elements of one tensor (or a scalar, with an empty shape), row-major.
#[derive(Clone, Debug, PartialEq)]
pub enum Buffer {
    /// f16 elements.
    F16(Vec<f16>),
    /// f32 elements.
    F32(Vec<f32>),
    /// f64 elements.
    F64(Vec<f64>),
    /// i8 elements.
    I8(Vec<i8>),
    /// i32 elements.
    I32(Vec<i32>),
    /// i64 elements.
    I64(Vec<i64>),
}

/// A tensor's value: shape plus typed elements.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorData {
    /// Extents, outermost first; empty for a scalar.
    pub shape: Vec<usize>,
    /// The elements (`shape.iter().product()` of them; one for a scalar).
    pub buf: Buffer,
}

impl Buffer {
    /// A buffer of `n` zeros.
    pub fn zeros(dtype: DType, n: usize) -> Buffer {
        match dtype {
            DType::F16 => Buffer::F16(vec![f16::ZERO; n]),
            DType::F32 => Buffer::F32(vec![0.0; n]),
            DType::F64 => Buffer::F64(vec![0.0; n]),
            DType::I8 => Buffer::I8(vec![0; n]),
            DType::I32 => Buffer::I32(vec![0; n]),
            DType::I64 => Buffer::I64(vec![0; n]),
        }
    }
    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            Buffer::F16(_) => DType::F16,
            Buffer::F32(_) => DType::F32,
            Buffer::F64(_) => DType::F64,
            Buffer::I8(_) => DType::I8,
            Buffer::I32(_) => DType::I32,
            Buffer::I64(_) => DType::I64,
        }
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            Buffer::F16(v) => v.len(),
            Buffer::F32(v) => v.len(),
            Buffer::F64(v) => v.len(),
            Buffer::I8(v) => v.len(),
            Buffer::I32(v) => v.len(),
            Buffer::I64(v) => v.len(),
        }
    }
    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Element `i` as f64 (exact for every type but i64 beyond 2^53).
    pub fn get_f64(&self, i: usize) -> f64 {
        match self {
            Buffer::F16(v) => v[i].to_f64(),
            Buffer::F32(v) => v[i] as f64,
            Buffer::F64(v) => v[i],
            Buffer::I8(v) => v[i] as f64,
            Buffer::I32(v) => v[i] as f64,
            Buffer::I64(v) => v[i] as f64,
        }
    }
    /// Element `i` as i64 (floats are truncated).
    pub fn get_i64(&self, i: usize) -> i64 {
        match self {
            Buffer::F16(v) => v[i].to_f64() as i64,
            Buffer::F32(v) => v[i] as i64,
            Buffer::F64(v) => v[i] as i64,
            Buffer::I8(v) => v[i] as i64,
            Buffer::I32(v) => v[i] as i64,
            Buffer::I64(v) => v[i],
        }
    }
    /// A mutable pointer to the first element, for passing to compiled kernels.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        match self {
            Buffer::F16(v) => v.as_mut_ptr() as *mut u8,
            Buffer::F32(v) => v.as_mut_ptr() as *mut u8,
            Buffer::F64(v) => v.as_mut_ptr() as *mut u8,
            Buffer::I8(v) => v.as_mut_ptr() as *mut u8,
            Buffer::I32(v) => v.as_mut_ptr() as *mut u8,
            Buffer::I64(v) => v.as_mut_ptr() as *mut u8,
        }
    }
}

impl TensorData {
    /// A zero-filled tensor.
    pub fn zeros(dtype: DType, shape: Vec<usize>) -> TensorData {
        let n = shape.iter().product();
        TensorData {
            shape,
            buf: Buffer::zeros(dtype, n),
        }
    }
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.buf.dtype()
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.buf.len()
    }
    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
}

// ---------------------------------------------------------------------------------------
// Shapes, poison, seeded random inputs, comparison.
// ---------------------------------------------------------------------------------------

/// The poison value of i8 buffers: the byte `0xA5` (−91).
///
/// Every integer poison value is the byte `0xA5` repeated, so a runner may equally
/// `memset(p, 0xA5, n)`. Floating-point buffers are poisoned with a quiet NaN whose
/// payload marks it ([`POISON_F32_BITS`] and its f16/f64 siblings).
pub const POISON_I8: i8 = 0xA5u8 as i8;
/// The poison value of i32 buffers: `0xA5A5A5A5` (−1 515 870 811).
pub const POISON_I32: i32 = 0xA5A5_A5A5u32 as i32;
/// The poison value of i64 buffers: `0xA5A5A5A5A5A5A5A5`.
pub const POISON_I64: i64 = 0xA5A5_A5A5_A5A5_A5A5u64 as i64;
/// The poison of f16 buffers: a quiet NaN whose payload is `0xA5`. Arithmetic never makes
/// this NaN (a computed NaN has the default payload), so an element that still holds it
/// after the oracle ran was never written.
pub const POISON_F16_BITS: u16 = 0x7EA5;
/// The poison of f32 buffers: a quiet NaN with payload `0xA5A5`.
pub const POISON_F32_BITS: u32 = 0x7FC0_A5A5;
/// The poison of f64 buffers: a quiet NaN with payload `0xA5A5_A5A5`.
pub const POISON_F64_BITS: u64 = 0x7FF8_0000_A5A5_A5A5;

/// Absolute and relative tolerance `(atol, rtol)` that [`compare`] allows for `dtype`.
///
/// An element passes when `|actual − reference| <= atol + rtol · |reference|`:
/// - f16: `atol = 1e-2`, `rtol = 1e-2` (an f16 ulp near 1 is ≈ 1e-3, and reductions
///   rounded per operation accumulate several),
/// - f32: `atol = 1e-4`, `rtol = 1e-3`,
/// - f64: `atol = 1e-9`, `rtol = 1e-9`,
/// - integer types: exact (`(0, 0)`).
///
/// They leave room for reductions that a schedule reassociates and for `exp`/`tanh`/…
/// implementations that differ in the last ulp.
pub fn tolerance(dtype: DType) -> (f64, f64) {
    match dtype {
        DType::F16 => (1e-2, 1e-2),
        DType::F32 => (1e-4, 1e-3),
        DType::F64 => (1e-9, 1e-9),
        DType::I8 | DType::I32 | DType::I64 => (0.0, 0.0),
    }
}

impl TensorData {
    /// The concrete shape of tensor `t` of `prog` for the given sizes (one value per
    /// [`Program::params`] entry). Negative extents become 0. Never panics: a malformed
    /// shape (an iterator, a missing size, a non-positive divisor) evaluates that part as
    /// 0, and the interpreter rejects such programs before it uses their shapes.
    pub fn shape_of(prog: &Program, t: TensorId, sizes: &[i64]) -> Vec<usize> {
        fn ev(a: &Aff, p: &[i64]) -> i64 {
            match a {
                Aff::Const(c) => *c,
                Aff::Iter(_) => 0,
                Aff::Param(q) => p.get(*q).copied().unwrap_or(0),
                Aff::Add(x, y) => ev(x, p).wrapping_add(ev(y, p)),
                Aff::Sub(x, y) => ev(x, p).wrapping_sub(ev(y, p)),
                Aff::Mul(c, x) => c.wrapping_mul(ev(x, p)),
                Aff::Neg(x) => ev(x, p).wrapping_neg(),
                Aff::FloorDiv(x, c) if *c > 0 => ev(x, p).div_euclid(*c),
                Aff::Mod(x, c) if *c > 0 => ev(x, p).rem_euclid(*c),
                Aff::FloorDiv(..) | Aff::Mod(..) => 0,
            }
        }
        prog.tensors
            .get(t)
            .map(|d| {
                d.shape
                    .iter()
                    .map(|a| ev(a, sizes).max(0) as usize)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// A tensor filled with the poison value: a marked NaN for floats, the byte `0xA5` repeated
    /// for integers ([`POISON_I8`], [`POISON_I32`], [`POISON_I64`]).
    pub fn poisoned(dtype: DType, shape: Vec<usize>) -> TensorData {
        let n = shape.iter().product();
        let buf = match dtype {
            DType::F16 => Buffer::F16(vec![f16::from_bits(POISON_F16_BITS); n]),
            DType::F32 => Buffer::F32(vec![f32::from_bits(POISON_F32_BITS); n]),
            DType::F64 => Buffer::F64(vec![f64::from_bits(POISON_F64_BITS); n]),
            DType::I8 => Buffer::I8(vec![POISON_I8; n]),
            DType::I32 => Buffer::I32(vec![POISON_I32; n]),
            DType::I64 => Buffer::I64(vec![POISON_I64; n]),
        };
        TensorData { shape, buf }
    }

    /// How many elements still hold the poison value of [`TensorData::poisoned`], bit for
    /// bit: in an oracle's result, the elements the program never writes.
    pub fn count_poison(&self) -> usize {
        match &self.buf {
            Buffer::F16(v) => v.iter().filter(|x| x.to_bits() == POISON_F16_BITS).count(),
            Buffer::F32(v) => v.iter().filter(|x| x.to_bits() == POISON_F32_BITS).count(),
            Buffer::F64(v) => v.iter().filter(|x| x.to_bits() == POISON_F64_BITS).count(),
            Buffer::I8(v) => v.iter().filter(|&&x| x == POISON_I8).count(),
            Buffer::I32(v) => v.iter().filter(|&&x| x == POISON_I32).count(),
            Buffer::I64(v) => v.iter().filter(|&&x| x == POISON_I64).count(),
        }
    }

    /// A tensor of random values drawn from `rng`, one `next_u64` per element in row-major
    /// order: floats uniform in `[-1, 1)` (on a grid of 2^-11 for f16, 2^-23 for f32,
    /// 2^-52 for f64, so every value is exact in its type), integers uniform in `[-8, 8]`.
    ///
    /// Only the raw 64-bit stream is used (no `rand` distribution), so the values depend
    /// on nothing but the generator's output.
    pub fn random<R: RngCore + ?Sized>(dtype: DType, shape: Vec<usize>, rng: &mut R) -> Self {
        let n: usize = shape.iter().product();
        // Integers in [-8, 8]: the high 32 bits scaled to [0, 17) (Lemire's multiply).
        let int = |x: u64| -> i64 { (((x >> 32) * 17) >> 32) as i64 - 8 };
        let buf = match dtype {
            DType::F16 => Buffer::F16(
                (0..n)
                    .map(|_| {
                        let k = (rng.next_u64() >> 52) as i64 - 2048;
                        f16::from_f64(k as f64 / 2048.0)
                    })
                    .collect(),
            ),
            DType::F32 => Buffer::F32(
                (0..n)
                    .map(|_| {
                        let k = (rng.next_u64() >> 40) as i64 - (1 << 23);
                        k as f32 / (1u32 << 23) as f32
                    })
                    .collect(),
            ),
            DType::F64 => Buffer::F64(
                (0..n)
                    .map(|_| {
                        let k = (rng.next_u64() >> 11) as i64 - (1 << 52);
                        k as f64 / (1u64 << 52) as f64
                    })
                    .collect(),
            ),
            DType::I8 => Buffer::I8((0..n).map(|_| int(rng.next_u64()) as i8).collect()),
            DType::I32 => Buffer::I32((0..n).map(|_| int(rng.next_u64()) as i32).collect()),
            DType::I64 => Buffer::I64((0..n).map(|_| int(rng.next_u64())).collect()),
        };
        TensorData { shape, buf }
    }

    /// A 0-d tensor holding the f64 value `v` converted to `dtype` (as Rust `as` does).
    pub fn scalar(dtype: DType, v: f64) -> TensorData {
        let buf = match dtype {
            DType::F16 => Buffer::F16(vec![f16::from_f64(v)]),
            DType::F32 => Buffer::F32(vec![v as f32]),
            DType::F64 => Buffer::F64(vec![v]),
            DType::I8 => Buffer::I8(vec![v as i8]),
            DType::I32 => Buffer::I32(vec![v as i32]),
            DType::I64 => Buffer::I64(vec![v as i64]),
        };
        TensorData {
            shape: Vec::new(),
            buf,
        }
    }
}

/// Deterministic inputs for `seed`: the tensors (indexed by [`TensorId`]) and the scalars
/// (indexed by [`crate::ir::ScalarId`], each 0-d).
///
/// One `rand_chacha::ChaCha8Rng::seed_from_u64(seed)` stream fills the `def`'s parameters
/// in [`Program::inputs`] order (tensor and scalar inputs interleaved as in the source),
/// each with [`TensorData::random`]. Outputs, temporaries and any tensor not listed as an
/// input are [`TensorData::poisoned`]. The same seed gives the same data on every machine.
pub fn generate_inputs(
    prog: &Program,
    sizes: &[i64],
    seed: u64,
) -> (Vec<TensorData>, Vec<TensorData>) {
    generate_data(prog, sizes, seed, true)
}

/// [`generate_inputs`], with temporaries as empty tensors of their rank unless
/// `temps`: what a kernel that allocates its own temporaries is handed (the data are the
/// same otherwise).
pub fn generate_data(
    prog: &Program,
    sizes: &[i64],
    seed: u64,
    temps: bool,
) -> (Vec<TensorData>, Vec<TensorData>) {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut tensors: Vec<Option<TensorData>> = vec![None; prog.tensors.len()];
    let mut scalars: Vec<Option<TensorData>> = vec![None; prog.scalars.len()];
    for input in &prog.inputs {
        match *input {
            InputRef::Tensor(t) if t < tensors.len() => {
                let shape = TensorData::shape_of(prog, t, sizes);
                tensors[t] = Some(TensorData::random(prog.tensors[t].dtype, shape, &mut rng));
            }
            InputRef::Scalar(s) if s < scalars.len() => {
                scalars[s] = Some(TensorData::random(
                    prog.scalars[s].dtype,
                    Vec::new(),
                    &mut rng,
                ));
            }
            _ => {}
        }
    }
    let tensors = tensors
        .into_iter()
        .enumerate()
        .map(|(t, d)| {
            d.unwrap_or_else(|| {
                let ten = &prog.tensors[t];
                let shape = if temps || ten.role != crate::ir::TensorRole::Temp {
                    TensorData::shape_of(prog, t, sizes)
                } else {
                    vec![0; ten.shape.len()]
                };
                TensorData::poisoned(ten.dtype, shape)
            })
        })
        .collect();
    let scalars = scalars
        .into_iter()
        .enumerate()
        .map(|(s, d)| {
            d.unwrap_or_else(|| TensorData::random(prog.scalars[s].dtype, Vec::new(), &mut rng))
        })
        .collect();
    (tensors, scalars)
}

/// The result of [`compare`].
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// Largest `|actual − reference|` over the elements (infinite when a NaN or an
    /// infinity stands against a different value).
    pub max_abs_err: f64,
    /// Largest `|actual − reference| / |reference|` (0 where they are equal, infinite
    /// where the reference is 0 and the actual value is not).
    pub max_rel_err: f64,
    /// Number of elements outside the tolerance.
    pub mismatches: usize,
    /// The first (row-major) mismatching element: its index, the actual value, the
    /// reference value.
    pub first_mismatch: Option<(Vec<usize>, f64, f64)>,
    /// True when the shapes and types agree and there are no mismatches.
    pub ok: bool,
}

/// The multi-index of row-major position `flat` in `shape`.
pub fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for (d, &n) in shape.iter().enumerate().rev() {
        if n > 0 {
            idx[d] = flat % n;
            flat /= n;
        }
    }
    idx
}

/// Compares `actual` against `reference` element by element.
///
/// Floats pass when `|a − r| <= atol + rtol·|r|` with [`tolerance`] of the reference's
/// type; equal values (including equal infinities) always pass; NaN passes only against
/// NaN, so a poisoned (NaN) element where the reference has a number is a mismatch.
/// Integers must be equal (i64 is compared as i64, not through f64).
///
/// If the shapes or the element types differ, nothing is compared element-wise: the
/// result has `ok == false`, `mismatches` = the larger element count, no
/// `first_mismatch`, and infinite errors.
pub fn compare(reference: &TensorData, actual: &TensorData) -> Comparison {
    if reference.shape != actual.shape || reference.dtype() != actual.dtype() {
        return Comparison {
            max_abs_err: f64::INFINITY,
            max_rel_err: f64::INFINITY,
            mismatches: reference.len().max(actual.len()),
            first_mismatch: None,
            ok: false,
        };
    }
    let (atol, rtol) = tolerance(reference.dtype());
    let mut c = Comparison {
        max_abs_err: 0.0,
        max_rel_err: 0.0,
        mismatches: 0,
        first_mismatch: None,
        ok: true,
    };
    let n = reference.len();
    let is_i64 = matches!(reference.buf, Buffer::I64(_));
    for i in 0..n {
        let r = reference.buf.get_f64(i);
        let a = actual.buf.get_f64(i);
        let (abs, pass) = if is_i64 {
            let (ri, ai) = (reference.buf.get_i64(i), actual.buf.get_i64(i));
            ((ai as i128 - ri as i128).unsigned_abs() as f64, ri == ai)
        } else if a == r || (a.is_nan() && r.is_nan()) {
            (0.0, true)
        } else if a.is_nan() || r.is_nan() || a.is_infinite() || r.is_infinite() {
            (f64::INFINITY, false)
        } else {
            let d = (a - r).abs();
            (d, d <= atol + rtol * r.abs())
        };
        let rel = if abs == 0.0 { 0.0 } else { abs / r.abs() };
        if abs > c.max_abs_err {
            c.max_abs_err = abs;
        }
        if rel > c.max_rel_err || rel.is_nan() {
            c.max_rel_err = if rel.is_nan() { f64::INFINITY } else { rel };
        }
        if !pass {
            c.mismatches += 1;
            if c.first_mismatch.is_none() {
                c.first_mismatch = Some((unravel(i, &reference.shape), a, r));
            }
        }
    }
    c.ok = c.mismatches == 0;
    c
}

/// Outputs whose first write reads the old value (`C(i) += …` without `!`): the kernel
/// updates what the caller passed in, so they start from generated data, not poison.
pub fn inout_outputs(program: &Program) -> Vec<usize> {
    program
        .outputs
        .iter()
        .copied()
        .filter(|&t| {
            program.stmts.iter().find(|s| s.lhs == t).is_some_and(
                |s| matches!(&s.body, crate::ir::StmtBody::Update(op, _) if *op != crate::ir::AssignOp::Assign),
            )
        })
        .collect()
}

/// Bytes of memory available to this process: `MemAvailable` of `/proc/meminfo`, capped
/// by the address-space limit (`ulimit -v`); `None` where neither is known.
fn available_memory() -> Option<u128> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
    let avail = meminfo.as_deref().and_then(|m| {
        m.lines()
            .find(|l| l.starts_with("MemAvailable:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u128>().ok())
            .map(|kb| kb * 1024)
    });
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given.
    let as_limit = (unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut lim) } == 0
        && lim.rlim_cur != libc::RLIM_INFINITY)
        .then_some(lim.rlim_cur as u128);
    match (avail, as_limit) {
        (Some(a), Some(l)) => Some(a.min(l)),
        (a, l) => a.or(l),
    }
}

/// `1.5 GiB`.
fn bytes_text(b: u128) -> String {
    let units = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} bytes")
    } else {
        format!("{v:.1} {}", units[u])
    }
}

/// Refuses, before anything is allocated, a run whose data would not fit in the memory
/// this machine has available: every input and output twice (the run's data and the
/// oracle's copy), and on a GPU target the device copies once more; each temporary once
/// for the kernel (divided by its extent and times its modulus along a folded index:
/// `folds` lists (tensor, index, modulus)) and, when `interpreted`, once for the
/// interpreter. A size whose tensors cannot even be counted in 128 bits is refused the
/// same way.
pub fn ensure_memory(
    program: &Program,
    sizes: &[i64],
    device_copies: bool,
    folds: &[(usize, usize, i64)],
    interpreted: bool,
) -> miette::Result<()> {
    let known: Vec<Option<i64>> = sizes.iter().map(|&v| Some(v)).collect();
    let mut total: u128 = 0;
    let mut biggest: Vec<(u128, &str)> = Vec::new();
    for (t, ten) in program.tensors.iter().enumerate() {
        let bytes = crate::limits::tensor_bytes(program, t, &known).map_or(u128::MAX, |(_, b)| b);
        // Each tensor is listed with its own bytes (a temporary as the kernel stores it).
        let (need, listed) = if ten.role == crate::ir::TensorRole::Temp {
            let kernel = match folds.iter().find(|f| f.0 == t) {
                Some(&(_, d, m)) => {
                    let extent = crate::limits::eval_wide(&ten.shape[d], &known).unwrap_or(1);
                    bytes / (extent.max(1) as u128) * (m as u128)
                }
                None => bytes,
            };
            (
                kernel.saturating_add(if interpreted { bytes } else { 0 }),
                kernel,
            )
        } else {
            (bytes.saturating_mul(2 + u128::from(device_copies)), bytes)
        };
        total = total.saturating_add(need);
        biggest.push((listed, &ten.name));
    }
    let Some(avail) = available_memory() else {
        return Ok(());
    };
    if total <= avail / 10 * 9 {
        return Ok(());
    }
    biggest.sort_by_key(|b| std::cmp::Reverse(b.0));
    let list: Vec<String> = biggest
        .iter()
        .take(3)
        .map(|(b, n)| format!("{n}: {}", bytes_text(*b)))
        .collect();
    Err(miette::miette!(
        help = "run at smaller sizes (--param / --run-param); compiling (`polyc PROG -o out.c`) needs no memory for the data",
        "polyc run needs about {} for the data at {} ({}, with the oracle's copy), but this machine has {} available",
        bytes_text(total),
        sizes_text(program, sizes),
        list.join(", "),
        bytes_text(avail)
    ))
}

/// `M=7, K=7, N=7`: the sizes of one run.
pub fn sizes_text(program: &Program, sizes: &[i64]) -> String {
    program
        .params
        .iter()
        .zip(sizes)
        .map(|(p, v)| format!("{}={v}", p.name))
        .collect::<Vec<_>>()
        .join(", ")
}
