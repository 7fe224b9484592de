//! Malformed `.tc` programs: each error is compared exactly against a golden rendering
//! (file:line:col, the caret under the offending text, the label and the remedy).

use polyhedral::diag::{render_plain, SourceFile};
use polyhedral::lang::compile;

fn err(text: &str, entry: Option<&str>) -> String {
    let src = SourceFile::new("bad.tc", text);
    match compile(&src, entry) {
        Ok(p) => panic!("expected an error, got {p:#?}"),
        Err(e) => render_plain(e.as_ref()),
    }
}

macro_rules! case {
    ($name:ident, $text:expr) => {
        case!($name, $text, None);
    };
    ($name:ident, $text:expr, $entry:expr) => {
        #[test]
        fn $name() {
            insta::assert_snapshot!(stringify!($name), err($text, $entry), $text);
        }
    };
}

case!(
    undefined_tensor,
    "def f(f32(N) A) -> (f32(N) B) {\n  B(i) = X(i) + A(i)\n}\n"
);
case!(
    read_before_write,
    "def f(f32(N) A) -> (f32(N) B) {\n  B(i) = t(i)\n  t(i) = A(i)\n}\n"
);
case!(
    wrong_index_count,
    "def f(f32(M, N) A) -> (f32(M) B) {\n  B(i) = A(i, j, k)\n}\n"
);
case!(
    non_affine_product,
    "def f(f32(N, N) A) -> (f32(N) B) {\n  B(i) = A(i * j, j)\n}\n"
);
case!(
    non_affine_division,
    "def f(f32(N) A) -> (f32(N) B) {\n  B(i) = A(i / 2)\n}\n"
);
case!(
    tensor_in_index,
    "def f(f32(N) A, i32(N) P) -> (f32(N) B) {\n  B(i) = A(P(i))\n}\n"
);
case!(
    cannot_infer_range,
    "def f(f32(N) A) -> (f32(N) B) {\n  B(i) = A(i) * A(j + k)\n}\n"
);
case!(
    cannot_infer_shape,
    "def f(f32(N) A) -> (B) {\n  B(i + 1) = A(i)\n}\n"
);
case!(
    float_function_in_integer_statement,
    "def f(i32(N) A) -> (i32(N) B) {\n  B(i) = exp(A(i))\n}\n"
);
case!(
    fractional_literal_in_integer_statement,
    "def f(i32(N) A) -> (i32(N) B) {\n  B(i) = A(i) * 0.5\n}\n"
);
case!(
    unknown_function,
    "def f(f32(N) A) -> (f32(N) B) {\n  B(i) = sqr(A(i))\n}\n"
);
case!(
    wrong_argument_count,
    "def f(f32(N) A) -> (f32(N) B) {\n  B(i) = max(A(i))\n}\n"
);
case!(
    select_argument_count,
    "def f(f32(N) A) -> (f32(N) B) {\n  B(i) = select(A(i) > 0, A(i))\n}\n"
);
case!(
    where_uses_later_index,
    "def f(f32(N, N) L, f32(N) x) -> (f32(N) y) {\n  y(i) +=! L(i, k) * x(k) where i in 0:k\n}\n"
);
case!(
    where_unknown_index,
    "def f(f32(N) A) -> (f32(N) B) {\n  B(i) = A(i) where j in 0:N\n}\n"
);
case!(
    floordiv_by_non_constant,
    "def f(f32(N) A) -> (f32(N) B) {\n  B(i) = A(floordiv(i, N))\n}\n"
);
case!(
    modulo_by_zero,
    "def f(f32(N) A) -> (f32(N) B) {\n  B(i) = A(i % 0)\n}\n"
);
case!(
    duplicate_def,
    "def f(f32(N) A) -> (f32(N) B) {\n  B(i) = A(i)\n}\ndef f(f32(N) A) -> (f32(N) B) {\n  B(i) = -A(i)\n}\n"
);
case!(
    missing_entry,
    "def f(f32(N) A) -> (f32(N) B) {\n  B(i) = A(i)\n}\ndef g(f32(N) A) -> (f32(N) B) {\n  B(i) = -A(i)\n}\n"
);
case!(
    unknown_entry,
    "def f(f32(N) A) -> (f32(N) B) {\n  B(i) = A(i)\n}\n",
    Some("main")
);
case!(
    unterminated_def,
    "def f(f32(N) A) -> (f32(N) B) {\n  B(i) = A(i)\n"
);
case!(
    syntax_error_at_eof,
    "def f(f32(N) A) -> (f32(N) B) {\n  B(i) = A(i) +"
);
case!(
    missing_operand,
    "def f(f32(N) A) -> (f32(N) B) {\n  B(i) = A(i) * * 2\n}\n"
);
case!(
    unknown_type,
    "def f(float(N) A) -> (f32(N) B) {\n  B(i) = A(i)\n}\n"
);
case!(
    write_to_scalar,
    "def f(f32(N) A, f32 alpha) -> (f32(N) B) {\n  alpha() = A(0)\n}\n"
);
case!(
    integer_literal_overflow,
    "def f(i64(N) A) -> (i64(N) B) {\n  B(i) = A(i) + 99999999999999999999\n}\n"
);
case!(
    literal_does_not_fit_type,
    "def f(i8(N) A) -> (i8(N) B) {\n  B(i) = A(i) + 300\n}\n"
);
case!(
    unexpected_character,
    "def f(f32(N) A) -> (f32(N) B) {\n  B(i) = A(i) @ 2\n}\n"
);
case!(
    unexpected_non_ascii_character,
    "def f(f32(N) A) -> (f32(N) B) {\n  B(i) = A(i) × 2\n}\n"
);
case!(
    cannot_infer_type,
    "def f(f32(N) A) -> (B) {\n  B(i) = 1 where i in 0:N\n}\n"
);
case!(
    update_temporary_before_write,
    "def f(f32(N, K) A) -> (f32(N) B) {\n  t(i) += A(i, k)\n  B(i) = t(i)\n}\n"
);
case!(
    bang_on_plain_assignment,
    "def f(f32(N) A) -> (f32(N) B) {\n  B(i) =! A(i)\n}\n"
);
case!(
    duplicate_input,
    "def f(f32(N) A, f32(N) A) -> (f32(N) B) {\n  B(i) = A(i)\n}\n"
);
case!(
    missing_input_type,
    "def f(A) -> (f32(N) B) {\n  B(i) = 0 where i in 0:N\n}\n"
);
case!(
    unknown_value_name,
    "def f(f32(N) A) -> (f32(N) B) {\n  B(i) = A(i) * q\n}\n"
);
case!(
    tensor_without_indices,
    "def f(f32(N) A) -> (f32(N) B) {\n  B(i) = A + 1\n}\n"
);
case!(
    two_statements_on_a_line,
    "def f(f32(N) A) -> (f32(N) B) {\n  B(i) = A(i) B(i) = 2\n}\n"
);
case!(
    output_never_written,
    "def f(f32(N) A) -> (f32(N) B, C) {\n  B(i) = A(i)\n}\n"
);
case!(empty_file, "# nothing here\n");
case!(
    deep_nesting,
    &format!(
        "def f(f32(N) A) -> (f32(N) B) {{\n  B(i) = {}A(i){}\n}}\n",
        "(".repeat(300),
        ")".repeat(300)
    )
);
