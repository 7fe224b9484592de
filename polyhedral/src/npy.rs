//! numpy's `.npy` format: write version 1.0 (2.0 when the header needs it), read 1.0, 2.0
//! and 3.0.
//!
//! polyc handles little-endian, C-order arrays of the six language types, with numpy's
//! dtype strings `'<f2'` (f16), `'<f4'` (f32), `'<f8'` (f64), `'|i1'` (i8), `'<i4'` (i32)
//! and `'<i8'` (i64). Scalars are 0-d arrays (shape `()`).
//!
//! The layout: the magic string `\x93NUMPY`, two version bytes, the header length (u16 for
//! version 1.0, u32 for 2.0/3.0, little-endian), then the header — a Python dict literal
//! such as `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }` padded with spaces
//! and ended by `\n` so that the data starts at a multiple of 64 bytes — then the raw
//! elements. Files written here are byte-identical to `numpy.save`'s.
//!
//! Every malformed input is an error naming the file, the problem and what polyc expects;
//! nothing here panics.

use crate::data::{Buffer, TensorData};
use crate::ir::DType;
use half::f16;
use miette::{miette, Result};
use std::path::Path;

const MAGIC: &[u8] = b"\x93NUMPY";

/// What polyc reads, for the `help` of every error.
const EXPECTS: &str = "polyc reads .npy files (format 1.0, 2.0 or 3.0) holding a little-endian, \
C-order array of dtype '<f2', '<f4', '<f8', '|i1', '<i4' or '<i8' (numpy.save writes them)";

/// numpy's dtype string for `d`.
pub fn descr(d: DType) -> &'static str {
    match d {
        DType::F16 => "<f2",
        DType::F32 => "<f4",
        DType::F64 => "<f8",
        DType::I8 => "|i1",
        DType::I32 => "<i4",
        DType::I64 => "<i8",
    }
}

fn dtype_of_descr(s: &str) -> Option<DType> {
    DType::ALL.into_iter().find(|d| descr(*d) == s)
}

/// A shape as Python prints a tuple: `()`, `(5,)`, `(2, 3)`.
fn shape_repr(shape: &[usize]) -> String {
    match shape {
        [] => "()".to_string(),
        [n] => format!("({n},)"),
        _ => {
            let parts: Vec<String> = shape.iter().map(|n| n.to_string()).collect();
            format!("({})", parts.join(", "))
        }
    }
}

/// The bytes of a `.npy` file holding `t`.
pub fn to_npy_bytes(t: &TensorData) -> Vec<u8> {
    let dict = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
        descr(t.dtype()),
        shape_repr(&t.shape)
    );
    // Version 1.0 unless the padded header does not fit in a u16.
    let (version, len_bytes) = if dict.len() + 1 + 64 <= u16::MAX as usize {
        (1u8, 2usize)
    } else {
        (2u8, 4usize)
    };
    let preamble = MAGIC.len() + 2 + len_bytes;
    let unpadded = preamble + dict.len() + 1;
    let pad = (64 - unpadded % 64) % 64;
    let hlen = dict.len() + pad + 1;
    let mut out = Vec::with_capacity(preamble + hlen + t.len() * t.dtype().size_bytes());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[version, 0]);
    if version == 1 {
        out.extend_from_slice(&(hlen as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(hlen as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out.extend(std::iter::repeat_n(b' ', pad));
    out.push(b'\n');
    match &t.buf {
        Buffer::F16(v) => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        Buffer::F32(v) => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        Buffer::F64(v) => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        Buffer::I8(v) => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        Buffer::I32(v) => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        Buffer::I64(v) => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
    }
    out
}

/// Writes `t` to `path` as a `.npy` file.
/// Refuses to overwrite an input file (see [`crate::files::write_output`]).
pub fn write_npy(path: &Path, t: &TensorData) -> Result<()> {
    crate::files::write_output("--save-io", path, &to_npy_bytes(t))
}

/// Reads a `.npy` file.
pub fn read_npy(path: &Path) -> Result<TensorData> {
    let bytes = std::fs::read(path).map_err(|e| {
        miette!(
            help = "polyc expects one NAME.npy per input in the --inputs directory (numpy's np.save writes them; `polyc run --save-io DIR` shows the layout)",
            "cannot read {}: {e}",
            path.display()
        )
    })?;
    crate::files::register_input(path);
    from_npy_bytes(&bytes, &path.display().to_string())
}

/// A header value.
#[derive(Debug)]
enum Value {
    Str(String),
    Bool(bool),
    Tuple(Vec<u64>),
}

/// A parser for the Python dict literal of a header.
struct HeaderParser<'a> {
    s: &'a [u8],
    pos: usize,
}

impl HeaderParser<'_> {
    fn skip_ws(&mut self) {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }
    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.pos).copied()
    }
    fn expect(&mut self, c: u8, after: &str) -> std::result::Result<(), String> {
        match self.peek() {
            Some(x) if x == c => {
                self.pos += 1;
                Ok(())
            }
            Some(x) => Err(format!(
                "expected '{}' {after}, found '{}'",
                c as char, x as char
            )),
            None => Err(format!("expected '{}' {after}, found the end", c as char)),
        }
    }
    fn string(&mut self) -> std::result::Result<String, String> {
        let q = match self.peek() {
            Some(q @ (b'\'' | b'"')) => q,
            _ => return Err("expected a quoted string".to_string()),
        };
        self.pos += 1;
        let start = self.pos;
        while self.pos < self.s.len() && self.s[self.pos] != q {
            self.pos += 1;
        }
        if self.pos >= self.s.len() {
            return Err("unterminated string".to_string());
        }
        let v = String::from_utf8_lossy(&self.s[start..self.pos]).into_owned();
        self.pos += 1;
        Ok(v)
    }
    fn word(&mut self) -> String {
        self.skip_ws();
        let start = self.pos;
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_alphanumeric() {
            self.pos += 1;
        }
        String::from_utf8_lossy(&self.s[start..self.pos]).into_owned()
    }
    fn value(&mut self, key: &str) -> std::result::Result<Value, String> {
        match self.peek() {
            Some(b'\'' | b'"') => Ok(Value::Str(self.string()?)),
            Some(b'(') => {
                self.pos += 1;
                let mut v = Vec::new();
                loop {
                    if self.peek() == Some(b')') {
                        self.pos += 1;
                        break;
                    }
                    let w = self.word();
                    let digits = w.strip_suffix('L').unwrap_or(&w);
                    let n: u64 = digits.parse().map_err(|_| {
                        format!("the value of '{key}' must be a tuple of non-negative integers")
                    })?;
                    v.push(n);
                    match self.peek() {
                        Some(b',') => self.pos += 1,
                        Some(b')') => {}
                        _ => return Err(format!("unterminated tuple in the value of '{key}'")),
                    }
                }
                Ok(Value::Tuple(v))
            }
            _ => match self.word().as_str() {
                "True" => Ok(Value::Bool(true)),
                "False" => Ok(Value::Bool(false)),
                w => Err(format!("cannot read the value of '{key}' (found {w:?})")),
            },
        }
    }
    /// The dict's entries in order.
    fn dict(&mut self) -> std::result::Result<Vec<(String, Value)>, String> {
        self.expect(b'{', "at the start of the header")?;
        let mut out = Vec::new();
        loop {
            if self.peek() == Some(b'}') {
                self.pos += 1;
                break;
            }
            let key = self.string()?;
            self.expect(b':', &format!("after the key '{key}'"))?;
            let v = self.value(&key)?;
            out.push((key, v));
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {}
                _ => return Err("expected ',' or '}' after a value".to_string()),
            }
        }
        self.skip_ws();
        if self.pos != self.s.len() {
            return Err("unexpected text after the closing '}'".to_string());
        }
        Ok(out)
    }
}

/// Parses the bytes of a `.npy` file; `name` (the file name) is used in errors.
pub fn from_npy_bytes(bytes: &[u8], name: &str) -> Result<TensorData> {
    let err = |msg: String| miette!(help = EXPECTS, "{name}: {msg}");
    if bytes.len() < MAGIC.len() + 2 || &bytes[..MAGIC.len()] != MAGIC {
        return Err(err(
            "not a .npy file: it does not start with the magic string \\x93NUMPY".to_string(),
        ));
    }
    let (major, minor) = (bytes[6], bytes[7]);
    let len_bytes = match (major, minor) {
        (1, 0) => 2,
        (2, 0) | (3, 0) => 4,
        _ => {
            return Err(err(format!(
                "unsupported .npy format version {major}.{minor}"
            )))
        }
    };
    let preamble = 8 + len_bytes;
    if bytes.len() < preamble {
        return Err(err("the file ends inside the header length".to_string()));
    }
    let hlen = if len_bytes == 2 {
        u16::from_le_bytes([bytes[8], bytes[9]]) as usize
    } else {
        u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize
    };
    let avail = bytes.len() - preamble;
    if hlen > avail {
        return Err(err(format!(
            "the header is truncated: it declares {hlen} bytes but only {avail} follow"
        )));
    }
    let header = &bytes[preamble..preamble + hlen];
    let text = std::str::from_utf8(header)
        .ok()
        .filter(|t| major == 3 || t.is_ascii())
        .ok_or_else(|| err("the header is not ASCII text".to_string()))?;
    let entries = HeaderParser {
        s: text.as_bytes(),
        pos: 0,
    }
    .dict()
    .map_err(|e| err(format!("malformed header {:?}: {e}", text.trim_end())))?;
    let (mut dt, mut fortran, mut shape) = (None, None, None);
    for (k, v) in entries {
        match (k.as_str(), v) {
            ("descr", Value::Str(s)) => dt = Some(s),
            ("fortran_order", Value::Bool(b)) => fortran = Some(b),
            ("shape", Value::Tuple(t)) => shape = Some(t),
            ("descr", _) => return Err(err("the header's 'descr' must be a string".to_string())),
            ("fortran_order", _) => {
                return Err(err(
                    "the header's 'fortran_order' must be True or False".to_string()
                ))
            }
            ("shape", _) => {
                return Err(err(
                    "the header's 'shape' must be a tuple of integers".to_string()
                ))
            }
            _ => return Err(err(format!("unexpected key '{k}' in the header"))),
        }
    }
    let dt = dt.ok_or_else(|| err("the header has no 'descr' key".to_string()))?;
    let fortran =
        fortran.ok_or_else(|| err("the header has no 'fortran_order' key".to_string()))?;
    let shape = shape.ok_or_else(|| err("the header has no 'shape' key".to_string()))?;
    let dtype = dtype_of_descr(&dt).ok_or_else(|| err(format!("unsupported dtype '{dt}'")))?;
    if fortran {
        return Err(err(
            "the array is stored in Fortran order (fortran_order: True)".to_string(),
        ));
    }
    let shape: Vec<usize> = shape
        .iter()
        .map(|&n| usize::try_from(n).ok())
        .collect::<Option<_>>()
        .ok_or_else(|| err("the shape is too large".to_string()))?;
    let shape_txt = shape_repr(&shape);
    let n = shape
        .iter()
        .try_fold(1usize, |a, &b| a.checked_mul(b))
        .and_then(|n| n.checked_mul(dtype.size_bytes()).map(|b| (n, b)));
    let (n, nbytes) = n.ok_or_else(|| err(format!("the shape {shape_txt} is too large")))?;
    let data = &bytes[preamble + hlen..];
    if data.len() < nbytes {
        return Err(err(format!(
            "the data is truncated: shape {shape_txt} of '{dt}' needs {nbytes} bytes, the file has {}",
            data.len()
        )));
    }
    if data.len() > nbytes {
        return Err(err(format!(
            "{} unexpected bytes after the data of shape {shape_txt} of '{dt}'",
            data.len() - nbytes
        )));
    }
    let sz = dtype.size_bytes();
    let chunks = data.chunks_exact(sz);
    let buf = match dtype {
        DType::F16 => Buffer::F16(chunks.map(|c| f16::from_le_bytes([c[0], c[1]])).collect()),
        DType::F32 => Buffer::F32(
            chunks
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        ),
        DType::F64 => Buffer::F64(
            chunks
                .map(|c| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect(),
        ),
        DType::I8 => Buffer::I8(chunks.map(|c| c[0] as i8).collect()),
        DType::I32 => Buffer::I32(
            chunks
                .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        ),
        DType::I64 => Buffer::I64(
            chunks
                .map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect(),
        ),
    };
    debug_assert_eq!(buf.len(), n);
    Ok(TensorData { shape, buf })
}
