//! Random dependence-carrying programs for the ILP scheduler's property tests.
//! (`targets/tests/ilp_values.rs` includes this file too.)
#![allow(dead_code)]

/// `i + 2`, `i - 1`, `i`.
fn off(v: &str, o: i64) -> String {
    match o {
        0 => v.to_string(),
        o if o > 0 => format!("{v} + {o}"),
        o => format!("{v} - {}", -o),
    }
}

/// Number of program templates.
pub const TEMPLATES: usize = 5;

/// A program of template `t` (mod [`TEMPLATES`]) shaped by the choices `k` (each any
/// value; taken modulo what it selects), with the sizes it needs by name.
pub fn program(t: usize, k: &[u8]) -> (String, Vec<(&'static str, i64)>) {
    let g = |i: usize, m: u8| k.get(i).copied().unwrap_or(0) % m;
    match t % TEMPLATES {
        0 => {
            // A time-iterated 1-D stencil with 1 to 3 reads at offsets in [-2, 2].
            let n = 1 + g(0, 3) as usize;
            let offs: Vec<i64> = (0..n).map(|i| g(1 + i, 5) as i64 - 2).collect();
            let reads: Vec<String> = offs
                .iter()
                .map(|&o| format!("A(t, {})", off("i", o)))
                .collect();
            let text = format!(
                "def p(f32(T, N) A) -> (f32(N) Out) {{\n  A(t + 1, i) = ({}) * 0.5 where t in 0:T - 1, i in 2:N - 2\n  Out(i) = A(T - 1, i)\n}}\n",
                reads.join(" + ")
            );
            (
                text,
                vec![("T", 2 + g(5, 4) as i64), ("N", 5 + g(6, 6) as i64)],
            )
        }
        1 => {
            // A producer-consumer chain through a temporary, with shifted reads.
            let (a, b) = (g(0, 3) as i64, g(1, 3) as i64);
            let text = format!(
                "def p(f32(N, M) A) -> (f32(N - 2, M - 2) C) {{\n  B(i, j) = A(i, j) * 0.5 where i in 0:N, j in 0:M\n  C(i, j) = B({}, {}) - B(i, {}) where i in 0:N - 2, j in 0:M - 2\n}}\n",
                off("i", a),
                off("j", b),
                off("j", 2 - b)
            );
            (
                text,
                vec![("N", 4 + g(2, 5) as i64), ("M", 4 + g(3, 5) as i64)],
            )
        }
        2 => {
            // A reduction, then an element-wise use of its result.
            let order = g(0, 2);
            let red = if order == 0 {
                "s(i) +=! A(i, k) * x(k)"
            } else {
                "s(i) max=! A(i, k) * x(k)"
            };
            let text = format!(
                "def p(f32(N, K) A, f32(K) x) -> (f32(N) y) {{\n  {red}\n  y(i) = s(i) * 2 + s({})\n}}\n",
                if g(1, 2) == 0 { "i" } else { "N - 1 - i" }
            );
            (
                text,
                vec![("N", 1 + g(2, 7) as i64), ("K", 1 + g(3, 7) as i64)],
            )
        }
        3 => {
            // An in-place 2-D recurrence (a wavefront), then a copy out.
            let s = 1 + g(0, 2) as i64;
            let text = format!(
                "def p(f32(N, M) A) -> (f32(N, M) B) {{\n  A(i, j) = A(i - 1, j) * 0.5 + A(i, j - {s}) * 0.25 + A(i - 1, {}) where i in 1:N, j in {s}:M - 1\n  B(i, j) = A(i, j)\n}}\n",
                off("j", g(1, 2) as i64)
            );
            (
                text,
                vec![("N", 2 + g(2, 5) as i64), ("M", 3 + g(3, 5) as i64)],
            )
        }
        _ => {
            // A matmul with transposed operands and an epilogue.
            let a = if g(0, 2) == 0 { "A(i, k)" } else { "A(k, i)" };
            let b = if g(1, 2) == 0 { "B(k, j)" } else { "B(j, k)" };
            let (sa, sb) = (
                if a == "A(i, k)" { "M, K" } else { "K, M" },
                if b == "B(k, j)" { "K, N" } else { "N, K" },
            );
            let text = format!(
                "def p(f32({sa}) A, f32({sb}) B) -> (f32(M, N) D) {{\n  C(i, j) +=! {a} * {b}\n  D(i, j) = C(i, j) + C(i, {})\n}}\n",
                if g(2, 2) == 0 { "j" } else { "N - 1 - j" }
            );
            (
                text,
                vec![
                    ("M", 1 + g(3, 5) as i64),
                    ("N", 1 + g(4, 5) as i64),
                    ("K", 1 + g(5, 5) as i64),
                ],
            )
        }
    }
}
