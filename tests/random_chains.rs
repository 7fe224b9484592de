//! Property test: random element-wise and reduction chains, written as `.tc` text and run
//! through the library pipeline under every scheduler (`initial`, `isl`, and `ilp` with
//! smart and max fusion), must match the interpreter. The ILP scheduler's result is also
//! checked against every dependence inside `compile` (`ilp_schedule` verifies it).
//!
//! A chain has 1–4 statements over 1-D and 2-D f32 tensors with sizes N, M in 1..=20. The
//! inputs are `X(N, M)`, `Y(M, N)` (read transposed), `u(N)`, `w(M)`; statement `k` writes
//! `T<k>`, of shape N×M, M×N, N or M, with `=`, `+=!`, `max=!` or `*=!`, from an
//! expression over reads of inputs and earlier `T`s with + - * max min abs relu and
//! exp(x * 0.1). Reading a 2-D tensor from a 1-D statement reduces (or, with `=`,
//! overwrites) over the other axis. Values are kept bounded: an expression whose bound
//! exceeds 50 (or 1 under `*=!`) is wrapped in `tanh`.

mod common;
use common::*;
use polyc::commands::run::{format_checks, run, OracleChoice, RunOptions};
use polyc::pipeline::driver::compile;
use polyc::pipeline::options::CompileOptions;
use polyc::pipeline::stages::Mode;
use polyhedral::ilp::Fuse;
use polyhedral::sched::SchedulerKind;
use proptest::prelude::*;

/// Shapes: 0 = N×M (indexed `(i, j)`), 1 = M×N (`(j, i)`), 2 = N (`(i)`), 3 = M (`(j)`).
const SHAPES: [(&str, &str); 4] = [("N, M", "i, j"), ("M, N", "j, i"), ("N", "i"), ("M", "j")];

#[derive(Clone, Debug)]
enum E {
    /// A read of the tensor `sel % available`.
    Read(u8),
    /// 0 +, 1 -, 2 *, 3 max, 4 min.
    Bin(u8, Box<E>, Box<E>),
    /// 0 abs, 1 relu, 2 exp(x * 0.1).
    Un(u8, Box<E>),
}

#[derive(Clone, Debug)]
struct StmtSpec {
    shape: usize,
    op: usize,
    expr: E,
    output: bool,
}

#[derive(Clone, Debug)]
struct Chain {
    n: i64,
    m: i64,
    stmts: Vec<StmtSpec>,
}

fn expr() -> impl Strategy<Value = E> {
    let leaf = any::<u8>().prop_map(E::Read);
    leaf.prop_recursive(3, 8, 2, |inner| {
        prop_oneof![
            (0u8..5, inner.clone(), inner.clone()).prop_map(|(o, a, b)| E::Bin(
                o,
                Box::new(a),
                Box::new(b)
            )),
            (0u8..3, inner).prop_map(|(o, a)| E::Un(o, Box::new(a))),
        ]
    })
}

fn chain() -> impl Strategy<Value = Chain> {
    let stmt =
        (0usize..4, 0usize..4, expr(), any::<bool>()).prop_map(|(shape, op, expr, output)| {
            StmtSpec {
                shape,
                op,
                expr,
                output,
            }
        });
    (1i64..=20, 1i64..=20, prop::collection::vec(stmt, 1..=4)).prop_map(|(n, m, stmts)| Chain {
        n,
        m,
        stmts,
    })
}

/// A tensor visible to later statements: name, shape kind, magnitude bound.
struct Visible {
    name: String,
    shape: usize,
    bound: f64,
}

fn render(e: &E, vis: &[Visible], read: &mut [bool]) -> (String, f64) {
    match e {
        E::Read(sel) => {
            let k = *sel as usize % vis.len();
            read[k] = true;
            let v = &vis[k];
            (format!("{}({})", v.name, SHAPES[v.shape].1), v.bound)
        }
        E::Bin(o, a, b) => {
            let (a, ba) = render(a, vis, read);
            let (b, bb) = render(b, vis, read);
            match o {
                0 => (format!("({a} + {b})"), ba + bb),
                1 => (format!("({a} - {b})"), ba + bb),
                2 => (format!("({a} * {b})"), ba * bb),
                3 => (format!("max({a}, {b})"), ba.max(bb)),
                _ => (format!("min({a}, {b})"), ba.max(bb)),
            }
        }
        E::Un(o, a) => {
            let (a, ba) = render(a, vis, read);
            match o {
                0 => (format!("abs({a})"), ba),
                1 => (format!("relu({a})"), ba),
                _ => (format!("exp({a} * 0.1)"), (0.1 * ba).exp()),
            }
        }
    }
}

/// The program text of a chain.
fn program(c: &Chain) -> String {
    let mut vis: Vec<Visible> = [("X", 0), ("Y", 1), ("u", 2), ("w", 3)]
        .iter()
        .map(|&(n, s)| Visible {
            name: n.into(),
            shape: s,
            bound: 1.0,
        })
        .collect();
    let mut read = vec![false; 4 + c.stmts.len()];
    let mut body = String::new();
    for (k, s) in c.stmts.iter().enumerate() {
        let (mut text, mut bound) = render(&s.expr, &vis, &mut read);
        let limit = if s.op == 3 { 1.0 } else { 50.0 };
        if bound > limit {
            text = format!("tanh({text})");
            bound = 1.0;
        }
        let op = ["=", "+=!", "max=!", "*=!"][s.op];
        let name = format!("T{k}");
        // A left-hand index no read uses has no inferable range: give it one.
        let mut ranges = Vec::new();
        for (index, size) in [("i", "N"), ("j", "M")] {
            let on_lhs = SHAPES[s.shape].1.contains(index);
            let read = text.contains(&format!("({index}")) || text.contains(&format!(" {index})"));
            if on_lhs && !read {
                ranges.push(format!("{index} in 0:{size}"));
            }
        }
        let ranges = if ranges.is_empty() {
            String::new()
        } else {
            format!(" where {}", ranges.join(", "))
        };
        body.push_str(&format!(
            "  {name}({}) {op} {text}{ranges}\n",
            SHAPES[s.shape].1
        ));
        let bound = match s.op {
            1 => bound * 20.0,
            3 => bound.max(1.0),
            _ => bound,
        };
        vis.push(Visible {
            name,
            shape: s.shape,
            bound,
        });
    }
    let last = c.stmts.len() - 1;
    let outputs: Vec<String> = c
        .stmts
        .iter()
        .enumerate()
        .filter(|&(k, s)| k == last || s.output || !read[4 + k])
        .map(|(k, s)| format!("f32({}) T{k}", SHAPES[s.shape].0))
        .collect();
    format!(
        "def chain(f32(N, M) X, f32(M, N) Y, f32(N) u, f32(M) w) -> ({}) {{\n{body}}}\n",
        outputs.join(", ")
    )
}

/// The schedulers (with the ILP fusion strategy) every random chain runs under.
const SCHEDULERS: [(SchedulerKind, Fuse); 4] = [
    (SchedulerKind::Initial, Fuse::Smart),
    (SchedulerKind::Isl, Fuse::Smart),
    (SchedulerKind::Ilp, Fuse::Smart),
    (SchedulerKind::Ilp, Fuse::Max),
];

/// Compiles and checks `text` with the given sizes and scheduler; `Err` describes the
/// failure.
fn check(text: &str, n: i64, m: i64, scheduler: SchedulerKind) -> Result<(), String> {
    check_fused(text, n, m, scheduler, Fuse::Smart)
}

/// [`check`] with the ILP scheduler's fusion strategy.
fn check_fused(
    text: &str,
    n: i64,
    m: i64,
    scheduler: SchedulerKind,
    fuse: Fuse,
) -> Result<(), String> {
    let dir = tempdir();
    let path = write(dir.path(), "chain.tc", text);
    let opts = CompileOptions {
        params: vec![("N".into(), n), ("M".into(), m)],
        scheduler,
        fuse,
        ..CompileOptions::for_program(path)
    };
    let compiled = compile(&opts, Mode::Optimised).map_err(|e| format!("compile failed: {e:?}"))?;
    let ropts = RunOptions {
        check: true,
        seed: 0,
        inputs_dir: None,
        save_io: None,
        oracle: OracleChoice::Interpreter,
        max_interp_instances: u64::MAX,
        repeat: 1,
    };
    let report = run(&compiled, &opts, &ropts).map_err(|e| format!("run failed: {e:?}"))?;
    if report.checks.is_empty() {
        return Err("no tensor was checked".into());
    }
    if !report.all_ok() {
        return Err(format!(
            "mismatch:\n{}\nC:\n{}",
            format_checks(&report),
            compiled.code
        ));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn random_chains_match_the_interpreter(c in chain()) {
        let text = program(&c);
        for (scheduler, fuse) in SCHEDULERS {
            let result = check_fused(&text, c.n, c.m, scheduler, fuse);
            prop_assert!(
                result.is_ok(),
                "scheduler {:?} (fuse {}), N={} M={}\n--- program ---\n{}--- error ---\n{}",
                scheduler,
                fuse,
                c.n,
                c.m,
                text,
                result.err().unwrap_or_default()
            );
        }
    }
}

/// The generator writes the programs it claims: one fixed chain, checked as text.
#[test]
fn generator_text() {
    let c = Chain {
        n: 3,
        m: 2,
        stmts: vec![
            StmtSpec {
                shape: 2,
                op: 1,
                expr: E::Bin(2, Box::new(E::Read(0)), Box::new(E::Read(3))),
                output: false,
            },
            StmtSpec {
                shape: 1,
                op: 3,
                expr: E::Bin(0, Box::new(E::Read(4)), Box::new(E::Read(1))),
                output: false,
            },
            StmtSpec {
                shape: 3,
                op: 2,
                expr: E::Un(2, Box::new(E::Read(5))),
                output: false,
            },
        ],
    };
    let text = program(&c);
    assert_eq!(
        text,
        "def chain(f32(N, M) X, f32(M, N) Y, f32(N) u, f32(M) w) -> (f32(M) T2) {
  T0(i) +=! (X(i, j) * w(j))
  T1(j, i) *=! tanh((T0(i) + Y(j, i)))
  T2(j) max=! exp(T1(j, i) * 0.1)
}
"
    );
    assert_eq!(check(&text, c.n, c.m, SchedulerKind::Isl), Ok(()));
    assert_eq!(check(&text, c.n, c.m, SchedulerKind::Ilp), Ok(()));
}

/// A left-hand index that no read uses gets an explicit range, and a temporary nobody
/// reads becomes an output.
#[test]
fn generator_adds_ranges() {
    let c = Chain {
        n: 1,
        m: 4,
        stmts: vec![
            StmtSpec {
                shape: 0,
                op: 0,
                expr: E::Un(0, Box::new(E::Read(2))),
                output: false,
            },
            StmtSpec {
                shape: 3,
                op: 1,
                expr: E::Un(1, Box::new(E::Read(2))),
                output: false,
            },
        ],
    };
    let text = program(&c);
    assert_eq!(
        text,
        "def chain(f32(N, M) X, f32(M, N) Y, f32(N) u, f32(M) w) -> (f32(N, M) T0, f32(M) T1) {
  T0(i, j) = abs(u(i)) where j in 0:M
  T1(j) +=! relu(u(i)) where j in 0:M
}
"
    );
    assert_eq!(check(&text, c.n, c.m, SchedulerKind::Initial), Ok(()));
    assert_eq!(check(&text, c.n, c.m, SchedulerKind::Isl), Ok(()));
    assert_eq!(check(&text, c.n, c.m, SchedulerKind::Ilp), Ok(()));
}

/// A chain the property test found failing in CI: the ILP scheduler fuses `T0`'s fill
/// with `T1`'s zero-fill and update, and gcc 12.2 at `-O3` (with `-fopenmp` and AVX-512)
/// distributed that loop, turned the zero-fill into a `memset` and placed it after the
/// update, so `T1` came out zero. The emitted C turns gcc's loop distribution off.
#[test]
fn fill_then_update_survives_gcc_loop_distribution() {
    let text =
        "def chain(f32(N, M) X, f32(M, N) Y, f32(N) u, f32(M) w) -> (f32(N, M) T0, f32(M, N) T1) {
  T0(i, j) = (w(j) + abs(w(j))) where i in 0:N
  T1(j, i) +=! (exp(X(i, j) * 0.1) + X(i, j))
}
";
    for (scheduler, fuse) in SCHEDULERS {
        assert_eq!(
            check_fused(text, 1, 3, scheduler, fuse),
            Ok(()),
            "{scheduler:?} {fuse}"
        );
    }
}
