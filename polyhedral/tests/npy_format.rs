//! `.npy` reading and writing.

use half::f16;
use polyhedral::data::{Buffer, TensorData};
use polyhedral::npy::{from_npy_bytes, read_npy, to_npy_bytes, write_npy};

/// The exact bytes numpy 1.x writes for `np.save(f, np.arange(6, dtype='<f4').reshape(2, 3))`.
fn numpy_arange_2x3_f32() -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(b"\x93NUMPY\x01\x00");
    b.extend_from_slice(&118u16.to_le_bytes());
    let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    b.extend_from_slice(dict.as_bytes());
    b.extend_from_slice(&[b' '; 58]);
    b.push(b'\n');
    assert_eq!(b.len(), 128);
    for v in 0..6 {
        b.extend_from_slice(&(v as f32).to_le_bytes());
    }
    b
}

fn arange_2x3() -> TensorData {
    TensorData {
        shape: vec![2, 3],
        buf: Buffer::F32(vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]),
    }
}

#[test]
fn reads_and_writes_numpys_bytes_exactly() {
    let bytes = numpy_arange_2x3_f32();
    assert_eq!(from_npy_bytes(&bytes, "a.npy").unwrap(), arange_2x3());
    assert_eq!(to_npy_bytes(&arange_2x3()), bytes);
}

#[test]
fn headers_of_scalars_and_vectors() {
    let t = TensorData::scalar(polyhedral::ir::DType::F64, 2.5);
    let b = to_npy_bytes(&t);
    let header = std::str::from_utf8(&b[10..128]).unwrap();
    assert_eq!(
        header.trim_end(),
        "{'descr': '<f8', 'fortran_order': False, 'shape': (), }"
    );
    assert_eq!(b.len(), 128 + 8);
    assert_eq!(from_npy_bytes(&b, "s.npy").unwrap(), t);
    let v = TensorData {
        shape: vec![5],
        buf: Buffer::I8(vec![1, -2, 3, -4, 127]),
    };
    let b = to_npy_bytes(&v);
    let header = std::str::from_utf8(&b[10..128]).unwrap();
    assert_eq!(
        header.trim_end(),
        "{'descr': '|i1', 'fortran_order': False, 'shape': (5,), }"
    );
    assert!(header.ends_with(" \n"));
    assert_eq!(&b[128..], &[1, 254, 3, 252, 127]);
}

#[test]
fn round_trips_every_dtype() {
    let cases = [
        TensorData {
            shape: vec![3],
            buf: Buffer::F16(vec![f16::from_f32(0.5), f16::NAN, f16::NEG_INFINITY]),
        },
        TensorData {
            shape: vec![2, 2],
            buf: Buffer::F32(vec![1.5, -0.0, f32::MAX, f32::MIN_POSITIVE]),
        },
        TensorData {
            shape: vec![1, 2, 1],
            buf: Buffer::F64(vec![std::f64::consts::PI, -1e300]),
        },
        TensorData {
            shape: vec![4],
            buf: Buffer::I8(vec![i8::MIN, -1, 0, i8::MAX]),
        },
        TensorData {
            shape: vec![2],
            buf: Buffer::I32(vec![i32::MIN, i32::MAX]),
        },
        TensorData {
            shape: vec![2],
            buf: Buffer::I64(vec![i64::MIN, 0x0102_0304_0506_0708]),
        },
        TensorData {
            shape: vec![],
            buf: Buffer::I32(vec![-7]),
        },
        TensorData {
            shape: vec![0, 3],
            buf: Buffer::F32(vec![]),
        },
    ];
    let dir = std::env::temp_dir().join(format!("polyc-npy-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (k, t) in cases.iter().enumerate() {
        let b = to_npy_bytes(t);
        let hlen = u16::from_le_bytes([b[8], b[9]]) as usize;
        assert_eq!(
            (10 + hlen) % 64,
            0,
            "case {k}: data must start 64-byte aligned"
        );
        assert_eq!(b[10 + hlen - 1], b'\n');
        let back = from_npy_bytes(&b, "x.npy").unwrap();
        // Compare bitwise so NaN round-trips count.
        assert_eq!(to_npy_bytes(&back), b, "case {k}");
        assert_eq!(back.shape, t.shape);
        let path = dir.join(format!("t{k}.npy"));
        write_npy(&path, t).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b);
        assert_eq!(to_npy_bytes(&read_npy(&path).unwrap()), b);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A file with this header text (padded like numpy) and data, in format `version`.
fn file(version: u8, dict: &str, data: &[u8]) -> Vec<u8> {
    let mut b = b"\x93NUMPY".to_vec();
    b.push(version);
    b.push(0);
    let pre = if version == 1 { 10 } else { 12 };
    let pad = (64 - (pre + dict.len() + 1) % 64) % 64;
    let hlen = dict.len() + pad + 1;
    if version == 1 {
        b.extend_from_slice(&(hlen as u16).to_le_bytes());
    } else {
        b.extend_from_slice(&(hlen as u32).to_le_bytes());
    }
    b.extend_from_slice(dict.as_bytes());
    b.extend(std::iter::repeat_n(b' ', pad));
    b.push(b'\n');
    b.extend_from_slice(data);
    b
}

fn data_2x3() -> Vec<u8> {
    (0..6).flat_map(|v| (v as f32).to_le_bytes()).collect()
}

#[test]
fn reads_versions_2_and_3_and_other_spellings() {
    let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    for v in [2, 3] {
        assert_eq!(
            from_npy_bytes(&file(v, dict, &data_2x3()), "v.npy").unwrap(),
            arange_2x3()
        );
    }
    // Key order, double quotes, no trailing comma, Python 2 longs.
    let dict = "{\"shape\": (2L, 3L), \"fortran_order\": False, \"descr\": \"<f4\"}";
    assert_eq!(
        from_npy_bytes(&file(1, dict, &data_2x3()), "v.npy").unwrap(),
        arange_2x3()
    );
}

const HELP: &str = "polyc reads .npy files (format 1.0, 2.0 or 3.0) holding a little-endian, C-order array of dtype '<f2', '<f4', '<f8', '|i1', '<i4' or '<i8' (numpy.save writes them)";

fn err(bytes: &[u8]) -> String {
    let e = from_npy_bytes(bytes, "in.npy").unwrap_err();
    assert_eq!(e.help().unwrap().to_string(), HELP);
    e.to_string()
}

#[test]
fn malformed_files_are_errors_with_exact_text() {
    let good = numpy_arange_2x3_f32();
    let hdr = |d: &str| file(1, d, &data_2x3());
    assert_eq!(
        err(b"PK\x03\x04"),
        "in.npy: not a .npy file: it does not start with the magic string \\x93NUMPY"
    );
    assert_eq!(
        err(b""),
        "in.npy: not a .npy file: it does not start with the magic string \\x93NUMPY"
    );
    let mut v4 = good.clone();
    v4[6] = 4;
    assert_eq!(err(&v4), "in.npy: unsupported .npy format version 4.0");
    assert_eq!(
        err(&good[..9]),
        "in.npy: the file ends inside the header length"
    );
    assert_eq!(
        err(&good[..100]),
        "in.npy: the header is truncated: it declares 118 bytes but only 90 follow"
    );
    assert_eq!(
        err(&hdr(
            "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }"
        )),
        "in.npy: the array is stored in Fortran order (fortran_order: True)"
    );
    assert_eq!(
        err(&hdr(
            "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }"
        )),
        "in.npy: unsupported dtype '>f4'"
    );
    assert_eq!(
        err(&hdr(
            "{'descr': '<i2', 'fortran_order': False, 'shape': (2, 3), }"
        )),
        "in.npy: unsupported dtype '<i2'"
    );
    assert_eq!(
        err(&hdr(
            "{'descr': '|b1', 'fortran_order': False, 'shape': (2, 3), }"
        )),
        "in.npy: unsupported dtype '|b1'"
    );
    assert_eq!(
        err(&hdr("{'fortran_order': False, 'shape': (2, 3), }")),
        "in.npy: the header has no 'descr' key"
    );
    assert_eq!(
        err(&hdr("{'descr': '<f4', 'fortran_order': False, }")),
        "in.npy: the header has no 'shape' key"
    );
    assert_eq!(
        err(&hdr("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1, }")),
        "in.npy: malformed header \"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1, }\": cannot read the value of 'x' (found \"1\")"
    );
    assert_eq!(
        err(&hdr(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': True, }"
        )),
        "in.npy: unexpected key 'x' in the header"
    );
    assert_eq!(
        err(&hdr("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }")),
        "in.npy: malformed header \"{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }\": the value of 'shape' must be a tuple of non-negative integers"
    );
    assert_eq!(
        err(&hdr("{'descr': '<f4' 'fortran_order': False}")),
        "in.npy: malformed header \"{'descr': '<f4' 'fortran_order': False}\": expected ',' or '}' after a value"
    );
    assert_eq!(
        err(&hdr("{'descr': 3}")),
        "in.npy: malformed header \"{'descr': 3}\": cannot read the value of 'descr' (found \"3\")"
    );
    assert_eq!(
        err(&hdr(
            "{'descr': '<f4', 'fortran_order': 'no', 'shape': (2, 3)}"
        )),
        "in.npy: the header's 'fortran_order' must be True or False"
    );
    assert_eq!(
        err(&good[..good.len() - 3]),
        "in.npy: the data is truncated: shape (2, 3) of '<f4' needs 24 bytes, the file has 21"
    );
    let mut long = good.clone();
    long.push(0);
    assert_eq!(
        err(&long),
        "in.npy: 1 unexpected bytes after the data of shape (2, 3) of '<f4'"
    );
    assert_eq!(
        err(&hdr("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }")),
        "in.npy: the shape (4294967296, 4294967296, 4294967296) is too large"
    );
    let mut bad_text = good.clone();
    bad_text[20] = 0xff;
    assert_eq!(err(&bad_text), "in.npy: the header is not ASCII text");
}

#[test]
fn missing_file_is_an_error_naming_it() {
    let e = read_npy(std::path::Path::new("/nonexistent/polyc/x.npy")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "cannot read /nonexistent/polyc/x.npy: No such file or directory (os error 2)"
    );
}

proptest::proptest! {
    /// Damaged files give errors, never panics.
    #[test]
    fn damaged_files_never_panic(pos in 0usize..160, byte in proptest::num::u8::ANY, cut in 0usize..160) {
        let mut b = numpy_arange_2x3_f32();
        let p = pos % b.len();
        b[p] = byte;
        let _ = from_npy_bytes(&b, "x.npy");
        b.truncate(cut.min(b.len()));
        let _ = from_npy_bytes(&b, "x.npy");
    }
}
