//! Tensor values in memory: typed, row-major, contiguous buffers.
//!
//! The reference interpreter, the input generator, `.npy` I/O and the runners that pass
//! buffers to compiled kernels all use [`TensorData`].

use crate::ir::DType;
use half::f16;

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
