//! Validation of a parsed description: every field in its range, every buffer consistent
//! with its role, scope and the target's kind, and each kind's own requirements. Every
//! error is located at the offending YAML node ([`super::locate`]), names the offending
//! value and says how to fix it.

use super::locate::{span_of, Seg};
use super::{BufferDesc, Scope, TargetDesc, TargetKind};
use polyhedral::diag::SourceFile;
use polyhedral::ir::{DType, Span};
use schedule_tree::{Buffer, BufferRole, Holds};

type Result = miette::Result<()>;

/// The largest buffer a description may declare: 1 PiB.
const MAX_BYTES: u64 = 1 << 50;
/// The largest Gemmini buffer: the functional model allocates it (256 MiB).
const MAX_GEMMINI_BYTES: u64 = 1 << 28;

/// The validator of one description.
pub(super) struct Check<'a> {
    file: &'a SourceFile,
    d: &'a TargetDesc,
}

/// A `u64` field's range, what the field means and an example for the remedy.
#[derive(Clone, Copy)]
struct Range<'a> {
    field: &'a str,
    lo: u64,
    hi: u64,
    meaning: &'a str,
    example: &'a str,
}

impl<'a> Check<'a> {
    /// A validator of `d`, read from `file`.
    pub(super) fn new(file: &'a SourceFile, d: &'a TargetDesc) -> Self {
        Check { file, d }
    }

    /// Every check, in the order of the description's fields.
    pub(super) fn all(&self) -> Result {
        self.name()?;
        self.kind_fields()?;
        self.figures()?;
        self.array_and_cost()?;
        for (i, b) in self.d.buffers.iter().enumerate() {
            self.buffer(i, b)?;
        }
        match self.d.kind {
            TargetKind::Gpu => self.gpu_buffers()?,
            TargetKind::Gemmini => self.gemmini()?,
            TargetKind::Cpu | TargetKind::Npu => {}
        }
        self.hierarchy()
    }

    /// A located error at the node at `path` (or the nearest enclosing node that exists).
    fn fail(&self, path: &[Seg], message: String, label: &str, help: String) -> miette::Report {
        let mut p = path;
        let span = loop {
            if let Some(s) = span_of(&self.file.text, p) {
                break s;
            }
            match p.split_last() {
                Some((_, rest)) if !rest.is_empty() => p = rest,
                _ => break Span::new(0, 0),
            }
        };
        miette::Report::new(self.file.error(span, message, label, help))
    }

    /// `v` within the range, else a located error.
    fn range(&self, path: &[Seg], v: u64, r: &Range) -> Result {
        if (r.lo..=r.hi).contains(&v) {
            return Ok(());
        }
        Err(self.fail(
            path,
            format!(
                "{} is {v}, outside {} to {}: {}",
                r.field, r.lo, r.hi, r.meaning
            ),
            "out of range",
            format!("give {}, e.g. `{}`", r.meaning, r.example),
        ))
    }

    fn name(&self) -> Result {
        let n = &self.d.name;
        let ok = n.len() <= 64
            && n.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if ok {
            return Ok(());
        }
        let what = if n.is_empty() {
            "the target's name is empty".to_string()
        } else {
            format!("`{n}` is not a target name")
        };
        Err(self.fail(
            &[Seg::Key("name")],
            what,
            "not a name",
            "name the target with a letter or digit followed by up to 63 letters, digits, `_`, `-` or `.`, e.g. `name: a100`".into(),
        ))
    }

    /// Fields only some kinds read: elsewhere they would be ignored, so they are errors.
    fn kind_fields(&self) -> Result {
        use TargetKind::*;
        let d = self.d;
        let fields: [(&str, bool, &[TargetKind]); 10] = [
            ("cores", d.cores.is_some(), &[Cpu, Npu]),
            ("vector_bytes", d.vector_bytes.is_some(), &[Cpu]),
            ("sms", d.sms.is_some(), &[Gpu]),
            ("warp_size", d.warp_size.is_some(), &[Gpu]),
            (
                "max_threads_per_block",
                d.max_threads_per_block.is_some(),
                &[Gpu],
            ),
            (
                "registers_per_thread",
                d.registers_per_thread.is_some(),
                &[Gpu],
            ),
            ("async_copy", d.async_copy.is_some(), &[Gpu]),
            ("cuda_arch", d.cuda_arch.is_some(), &[Gpu]),
            ("array", d.array.is_some(), &[Gemmini, Npu]),
            ("cost", d.cost.is_some(), &[Gemmini]),
        ];
        for (field, set, kinds) in fields {
            if set && !kinds.contains(&d.kind) {
                let names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
                return Err(self.fail(
                    &[Seg::KeyName(field)],
                    format!(
                        "`{field}` describes a {} target; a {} target does not use it",
                        names.join(" or "),
                        d.kind.name()
                    ),
                    "not used by this kind",
                    format!("remove `{field}`, or set `kind:` to {}", names.join(" or ")),
                ));
            }
        }
        Ok(())
    }

    /// The machine figures: cores, SMs, warps, threads, registers, roofline, call costs,
    /// the vector width and the CUDA architecture.
    fn figures(&self) -> Result {
        let d = self.d;
        let r = |field, lo, hi, meaning, example| Range {
            field,
            lo,
            hi,
            meaning,
            example,
        };
        let plain: [(Option<u64>, Range); 7] = [
            (
                d.cores.map(u64::from),
                r("cores", 1, 65536, "the number of CPU cores", "cores: 8"),
            ),
            (
                d.sms.map(u64::from),
                r(
                    "sms",
                    1,
                    65536,
                    "the number of streaming multiprocessors",
                    "sms: 108",
                ),
            ),
            (
                d.warp_size.map(u64::from),
                r(
                    "warp_size",
                    1,
                    1024,
                    "the threads of a warp, a power of two",
                    "warp_size: 32",
                ),
            ),
            (
                d.max_threads_per_block.map(u64::from),
                r(
                    "max_threads_per_block",
                    1,
                    65536,
                    "the most threads a block may have, a multiple of the warp size",
                    "max_threads_per_block: 1024",
                ),
            ),
            (
                d.registers_per_thread.map(u64::from),
                r(
                    "registers_per_thread",
                    1,
                    65536,
                    "the most 32-bit registers a thread may use",
                    "registers_per_thread: 255",
                ),
            ),
            (
                d.peak_gflops,
                r(
                    "peak_gflops",
                    1,
                    1_000_000_000,
                    "the peak arithmetic rate in GFLOP/s",
                    "peak_gflops: 19500",
                ),
            ),
            (
                d.dram_gbytes_per_s,
                r(
                    "dram_gbytes_per_s",
                    1,
                    10_000_000,
                    "the DRAM bandwidth in GB/s",
                    "dram_gbytes_per_s: 1555",
                ),
            ),
        ];
        for (v, range) in &plain {
            if let Some(v) = v {
                self.range(&[Seg::Key(range.field)], *v, range)?;
            }
        }
        if let Some(w) = d.warp_size {
            if !w.is_power_of_two() {
                return Err(self.fail(
                    &[Seg::Key("warp_size")],
                    format!("warp_size is {w}, which is not a power of two"),
                    "not a power of two",
                    "give the threads of a warp: 32 on NVIDIA GPUs, 64 on AMD's".into(),
                ));
            }
            if let Some(m) = d.max_threads_per_block {
                if m % w != 0 {
                    return Err(self.fail(
                        &[Seg::Key("max_threads_per_block")],
                        format!("max_threads_per_block is {m}, which is not a multiple of the warp size {w}"),
                        "not whole warps",
                        "blocks are made of whole warps: give a multiple of warp_size, e.g. `max_threads_per_block: 1024`".into(),
                    ));
                }
            }
        }
        self.vector_width()?;
        self.call_ops()?;
        self.cuda_arch()
    }

    fn vector_width(&self) -> Result {
        let Some(v) = self.d.vector_bytes else {
            return Ok(());
        };
        if (16..=256).contains(&v) && v.is_power_of_two() {
            return Ok(());
        }
        Err(self.fail(
            &[Seg::Key("vector_bytes")],
            format!("vector_bytes is {v}, which is not a vector width"),
            "not a power of two from 16 to 256",
            "give the preferred SIMD vector width in bytes: 64 for AVX-512, 32 for AVX2, 16 for SSE or NEON".into(),
        ))
    }

    fn call_ops(&self) -> Result {
        let names: Vec<&str> = polyhedral::ir::Func::ALL.iter().map(|g| g.name()).collect();
        for (f, ops) in &self.d.call_ops {
            let path = [Seg::Key("call_ops"), Seg::KeyName(f)];
            if !names.contains(&f.as_str()) {
                return Err(self.fail(
                    &path,
                    format!("call_ops names `{f}`, which is not a built-in function"),
                    "not a built-in function",
                    format!("the built-in functions are {}", names.join(", ")),
                ));
            }
            let r = Range {
                field: &format!("call_ops.{f}"),
                lo: 1,
                hi: 1_000_000,
                meaning: "the operations one call costs",
                example: "tanh: 1490",
            };
            self.range(&[Seg::Key("call_ops"), Seg::Key(f)], *ops, &r)?;
        }
        Ok(())
    }

    /// `sm_XY` (with an optional `a` or `f` suffix), XY from 50 (Maxwell) to 199.
    fn cuda_arch(&self) -> Result {
        let Some(a) = &self.d.cuda_arch else {
            return Ok(());
        };
        let digits = a
            .strip_prefix("sm_")
            .map(|r| r.strip_suffix(['a', 'f']).unwrap_or(r));
        let ok = digits.is_some_and(|x| {
            !x.is_empty()
                && x.chars().all(|c| c.is_ascii_digit())
                && x.parse::<u32>().is_ok_and(|n| (50..=199).contains(&n))
        });
        if ok {
            return Ok(());
        }
        Err(self.fail(
            &[Seg::Key("cuda_arch")],
            format!("cuda_arch is `{a}`, which is not a CUDA architecture"),
            "not sm_50 to sm_199",
            "give the architecture nvcc compiles for, `sm_` and the compute capability: `sm_80` (A100), `sm_90` (H100)".into(),
        ))
    }

    /// The systolic array and BACO's cost model.
    fn array_and_cost(&self) -> Result {
        if let Some(a) = &self.d.array {
            let r = Range {
                field: "array.dim",
                lo: 1,
                hi: 256,
                meaning: "the side of the DIM x DIM array",
                example: "dim: 16",
            };
            self.range(&[Seg::Key("array"), Seg::Key("dim")], u64::from(a.dim), &r)?;
            for (i, f) in a.dataflows.iter().enumerate() {
                let path = [Seg::Key("array"), Seg::Key("dataflows"), Seg::Index(i)];
                if f != "ws" && f != "os" {
                    return Err(self.fail(
                        &path,
                        format!("unknown dataflow `{f}`"),
                        "not a dataflow",
                        "dataflows are ws (weight-stationary) and os (output-stationary)".into(),
                    ));
                }
                if a.dataflows[..i].contains(f) {
                    return Err(self.fail(
                        &path,
                        format!("dataflow `{f}` is listed twice"),
                        "duplicate",
                        "list each dataflow once, e.g. `dataflows: [ws, os]`".into(),
                    ));
                }
            }
        }
        let Some(c) = &self.d.cost else {
            return Ok(());
        };
        let figures = [
            ("mac_energy", c.mac_energy, false),
            ("register_epa", c.register_epa, false),
            ("accumulator_epa_base", c.accumulator_epa_base, false),
            ("accumulator_epa_slope", c.accumulator_epa_slope, true),
            ("scratchpad_epa_base", c.scratchpad_epa_base, false),
            ("scratchpad_epa_slope", c.scratchpad_epa_slope, true),
            ("dram_epa", c.dram_epa, false),
            ("dram_words_per_cycle", c.dram_words_per_cycle, false),
        ];
        for (field, v, zero_ok) in figures {
            let ok = v.is_finite() && v <= 1e12 && (v > 0.0 || (zero_ok && v == 0.0));
            if !ok {
                let lo = if zero_ok { "from 0" } else { "above 0" };
                return Err(self.fail(
                    &[Seg::Key("cost"), Seg::Key(field)],
                    format!("cost.{field} is {v}, not a figure {lo} to 1e12"),
                    "out of range",
                    "give BACO's figures (thesis Tables 6.2 and 6.3), as specs/targets/gemmini.yaml does".into(),
                ));
            }
        }
        Ok(())
    }
}

/// `n bytes` or `1 byte`.
fn bytes(n: u64) -> String {
    if n == 1 {
        "1 byte".into()
    } else {
        format!("{n} bytes")
    }
}

/// The smallest capacity a buffer may have on a target of `kind`, and why (Gemmini's
/// buffers are checked by rows, [`Check::gemmini`]).
fn min_bytes(b: &BufferDesc, kind: TargetKind) -> (u64, String) {
    if kind == TargetKind::Gemmini {
        return (1, "1 byte".into());
    }
    match b.role() {
        BufferRole::Cache => (64, "one cache line (64 bytes)".into()),
        BufferRole::Registers => {
            let r = b.row_bytes.unwrap_or(4).max(1);
            (r, format!("one register ({r} bytes)"))
        }
        _ => (
            8,
            "one element of the widest type (8 bytes, f64 or i64)".into(),
        ),
    }
}

impl Check<'_> {
    /// One buffer: its name, role, `holds`, scope, capacity, element type and figures.
    fn buffer(&self, i: usize, b: &BufferDesc) -> Result {
        let at = |key: &'static str| [Seg::Key("buffers"), Seg::Index(i), Seg::Key(key)];
        if !Buffer::is_valid_name(&b.name) {
            return Err(self.fail(
                &at("name"),
                format!("`{}` is not a buffer name", b.name),
                "not an identifier",
                "name buffers with a letter followed by letters, digits and `_`, e.g. `L1` or `L0A`".into(),
            ));
        }
        if self.d.buffers[..i].iter().any(|o| o.name == b.name) {
            return Err(self.fail(
                &at("name"),
                format!("buffer `{}` is listed twice", b.name),
                "duplicate",
                "list each buffer once, outermost first".into(),
            ));
        }
        let Some(role) = BufferRole::from_name(&b.role) else {
            let roles: Vec<&str> = BufferRole::ALL.iter().map(|r| r.name()).collect();
            return Err(self.fail(
                &at("role"),
                format!("unknown buffer role `{}`", b.role),
                "not a role",
                format!("roles are {}", roles.join(", ")),
            ));
        };
        if let Some(h) = &b.holds {
            if Holds::from_name(h).is_none() {
                let names: Vec<&str> = Holds::ALL.iter().map(|h| h.name()).collect();
                return Err(self.fail(
                    &at("holds"),
                    format!("unknown `holds` value `{h}`"),
                    "not a kind of tensor",
                    format!(
                        "a buffer holds {} of a tile's tensors (all: every tensor; results: the tensors the tile writes; operands: the tensors it only reads)",
                        names.join(", ")
                    ),
                ));
            }
        }
        if let Some(e) = &b.elem {
            if DType::from_name(e).is_none() {
                let names: Vec<&str> = DType::ALL.iter().map(|d| d.name()).collect();
                return Err(self.fail(
                    &at("elem"),
                    format!("unknown element type `{e}`"),
                    "not a type",
                    format!("element types are {}", names.join(", ")),
                ));
            }
        }
        self.role_and_scope(i, b, role)?;
        self.buffer_figures(i, b)
    }

    /// Which roles and scopes the kind has, and which scope each role lives in.
    fn role_and_scope(&self, i: usize, b: &BufferDesc, role: BufferRole) -> Result {
        use BufferRole::*;
        let kind = self.d.kind;
        let roles: &[BufferRole] = match kind {
            TargetKind::Cpu => &[Cache, Registers],
            TargetKind::Gpu => &[Cache, SharedMemory, Registers],
            TargetKind::Gemmini => &[Scratchpad, Accumulator],
            TargetKind::Npu => &[Cache, Scratchpad, Accumulator, Registers],
        };
        if !roles.contains(&role) {
            let names: Vec<&str> = roles.iter().map(|r| r.name()).collect();
            return Err(self.fail(
                &[Seg::Key("buffers"), Seg::Index(i), Seg::Key("role")],
                format!(
                    "buffer `{}` has role {}, which a {} target does not have",
                    b.name,
                    role.name(),
                    kind.name()
                ),
                "not a role of this kind",
                format!(
                    "a {} target's buffers are {}",
                    kind.name(),
                    names.join(", ")
                ),
            ));
        }
        // Shared memory is a block's, a thread's registers are a GPU thread's.
        let want = match (role, kind) {
            (SharedMemory, _) => Some(Scope::Block),
            (Registers, TargetKind::Gpu) => Some(Scope::Thread),
            _ => None,
        };
        let gpu_scope = matches!(b.scope, Scope::Block | Scope::Thread);
        let bad = match want {
            Some(w) => b.scope != w,
            None => gpu_scope,
        };
        if bad {
            let scopes = match want {
                Some(w) => format!("`scope: {}`", w.name()),
                None => "`scope: core` or `scope: chip`".to_string(),
            };
            return Err(self.fail(
                &[Seg::Key("buffers"), Seg::Index(i), Seg::Key("scope")],
                format!(
                    "buffer `{}` ({} of a {} target) has scope {}",
                    b.name,
                    role.name(),
                    kind.name(),
                    b.scope.name()
                ),
                "wrong scope",
                format!("give it {scopes}: a GPU's shared memory belongs to a block, its registers to a thread, and other buffers to a core or the chip"),
            ));
        }
        Ok(())
    }

    /// A buffer's capacity and its other numbers.
    fn buffer_figures(&self, i: usize, b: &BufferDesc) -> Result {
        let at = |key: &'static str| [Seg::Key("buffers"), Seg::Index(i), Seg::Key(key)];
        let (min, why) = min_bytes(b, self.d.kind);
        let max = if self.d.kind == TargetKind::Gemmini {
            MAX_GEMMINI_BYTES
        } else {
            MAX_BYTES
        };
        if b.bytes < min || b.bytes > max {
            let (what, label) = if b.bytes < min {
                (format!("less than {why}"), "too small")
            } else {
                (format!("more than {max} bytes"), "too large")
            };
            return Err(self.fail(
                &at("bytes"),
                format!("buffer `{}` has {}, {what}", b.name, bytes(b.bytes)),
                label,
                format!(
                    "give the capacity in bytes one tile may use (per thread for registers, per block for shared memory), from {min} to {max}, e.g. `bytes: 49152` for a 48 KiB L1"
                ),
            ));
        }
        let r = |field, lo, hi, meaning, example| Range {
            field,
            lo,
            hi,
            meaning,
            example,
        };
        let numbers: [(Option<u64>, Range); 5] = [
            (
                b.registers,
                r(
                    "registers",
                    1,
                    65536,
                    "the registers of the file",
                    "registers: 128",
                ),
            ),
            (
                b.row_bytes,
                r(
                    "row_bytes",
                    1,
                    4096,
                    "the bytes of one register or row",
                    "row_bytes: 4",
                ),
            ),
            (
                b.row_elems,
                r(
                    "row_elems",
                    1,
                    65536,
                    "the elements of one row",
                    "row_elems: 16",
                ),
            ),
            (
                b.banks.map(u64::from),
                r("banks", 1, 1024, "the number of banks", "banks: 4"),
            ),
            (
                b.gbytes_per_s,
                r(
                    "gbytes_per_s",
                    1,
                    10_000_000,
                    "the bandwidth in GB/s",
                    "gbytes_per_s: 364",
                ),
            ),
        ];
        for (v, range) in &numbers {
            if let Some(v) = v {
                let field = format!("buffer `{}`'s {}", b.name, range.field);
                let named = Range {
                    field: &field,
                    ..*range
                };
                self.range(&at(range.field), *v, &named)?;
            }
        }
        if let (Some(r), Some(w)) = (b.registers, b.row_bytes) {
            if b.bytes > r * w {
                return Err(self.fail(
                    &at("bytes"),
                    format!(
                        "buffer `{}` has {} bytes, more than its {r} registers of {w} bytes hold ({})",
                        b.name,
                        b.bytes,
                        r * w
                    ),
                    "more than the registers hold",
                    format!("give at most {} bytes, or more registers", r * w),
                ));
            }
        }
        Ok(())
    }

    /// A GPU has at most one shared memory and one register file (the passes use the
    /// first of each role).
    fn gpu_buffers(&self) -> Result {
        for role in [BufferRole::SharedMemory, BufferRole::Registers] {
            let of: Vec<usize> = (0..self.d.buffers.len())
                .filter(|&i| self.d.buffers[i].role() == role)
                .collect();
            if let [first, second, ..] = of[..] {
                return Err(self.fail(
                    &[Seg::Key("buffers"), Seg::Index(second), Seg::Key("role")],
                    format!(
                        "buffers `{}` and `{}` both have role {}",
                        self.d.buffers[first].name,
                        self.d.buffers[second].name,
                        role.name()
                    ),
                    "a second one",
                    format!("a GPU has one {} buffer: remove one", role.name()),
                ));
            }
        }
        Ok(())
    }

    /// Gemmini: an array, one scratchpad and one accumulator with element types, rows of
    /// DIM elements, and room for at least one DIM x DIM block per bank.
    fn gemmini(&self) -> Result {
        let Some(array) = &self.d.array else {
            return Err(self.fail(
                &[Seg::Key("kind")],
                "a Gemmini description has no `array`".into(),
                "needs an array",
                "describe the systolic array, e.g. `array: {dim: 16, dataflows: [ws, os]}`".into(),
            ));
        };
        let dim = u64::from(array.dim);
        for role in [BufferRole::Scratchpad, BufferRole::Accumulator] {
            let of: Vec<usize> = (0..self.d.buffers.len())
                .filter(|&i| self.d.buffers[i].role() == role)
                .collect();
            let i = match of[..] {
                [i] => i,
                [] => {
                    return Err(self.fail(
                        &[Seg::KeyName("buffers")],
                        format!("target `{}` has no buffer with role {}", self.d.name, role.name()),
                        "no such buffer",
                        "a Gemmini description needs a scratchpad and an accumulator (see specs/targets/gemmini.yaml)".into(),
                    ))
                }
                [_, j, ..] => {
                    return Err(self.fail(
                        &[Seg::Key("buffers"), Seg::Index(j), Seg::Key("role")],
                        format!("target `{}` has two buffers with role {}", self.d.name, role.name()),
                        "a second one",
                        format!("Gemmini has one {}: remove one", role.name()),
                    ))
                }
            };
            self.gemmini_buffer(i, dim)?;
        }
        Ok(())
    }

    fn gemmini_buffer(&self, i: usize, dim: u64) -> Result {
        let b = &self.d.buffers[i];
        let at = |key: &'static str| [Seg::Key("buffers"), Seg::Index(i), Seg::Key(key)];
        let Some(elem) = b.elem_type() else {
            return Err(self.fail(
                &at("name"),
                format!("buffer `{}` has no element type", b.name),
                "needs `elem`",
                "give the type its rows hold, e.g. `elem: i8` for the scratchpad, `elem: i32` for the accumulator".into(),
            ));
        };
        let row_elems = b.row_elems.unwrap_or(dim);
        if row_elems != dim {
            return Err(self.fail(
                &at("row_elems"),
                format!(
                    "buffer `{}` has rows of {row_elems} elements, but the array is {dim} x {dim}",
                    b.name
                ),
                "not DIM",
                format!("a Gemmini row holds DIM elements: `row_elems: {dim}`"),
            ));
        }
        let banks = u64::from(b.banks.unwrap_or(1));
        let bank_rows = b.bytes / (row_elems * elem.size_bytes() as u64) / banks;
        if bank_rows < dim {
            return Err(self.fail(
                &at("bytes"),
                format!(
                    "buffer `{}` has {}: {bank_rows} rows of {row_elems} {} per bank, fewer than the {dim} rows of one block",
                    b.name,
                    bytes(b.bytes),
                    elem.name()
                ),
                "too small",
                format!(
                    "give at least {} bytes ({banks} bank(s) of {dim} rows of {row_elems} {})",
                    banks * dim * row_elems * elem.size_bytes() as u64,
                    elem.name()
                ),
            ));
        }
        Ok(())
    }

    /// Nested caches (and the registers inside them) never grow inwards: a cache is at
    /// least as large as every cache or register file it holds. Checked in the nesting
    /// order ([`nesting_order`]).
    fn hierarchy(&self) -> Result {
        let order = nesting_order(self.d);
        let nested = |b: &BufferDesc| {
            matches!(b.role(), BufferRole::Cache | BufferRole::Registers)
                && b.holds.as_deref().is_none_or(|h| h == "all")
        };
        for (k, &o) in order.iter().enumerate() {
            let outer = &self.d.buffers[o];
            if outer.role() != BufferRole::Cache || !nested(outer) {
                continue;
            }
            for &n in &order[k + 1..] {
                let inner = &self.d.buffers[n];
                if nested(inner) && inner.bytes > outer.bytes {
                    return Err(self.fail(
                        &[Seg::Key("buffers"), Seg::Index(o), Seg::Key("bytes")],
                        format!(
                            "cache `{}` has {} bytes, less than `{}` inside it ({} bytes)",
                            outer.name, outer.bytes, inner.name, inner.bytes
                        ),
                        "smaller than an inner level",
                        "list buffers outermost first (L3, L2, L1, registers), each at least as large as the ones after it".into(),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// How wide a scope is: the chip holds cores, a core (an SM) holds blocks, a block threads.
fn scope_rank(s: Scope) -> u8 {
    match s {
        Scope::Chip => 0,
        Scope::Core => 1,
        Scope::Block => 2,
        Scope::Thread => 3,
    }
}

/// The buffers' indices from outermost to innermost: by scope (chip, core, block,
/// thread), in the listed order within a scope. A thread's registers are inside a block's
/// shared memory wherever the description lists them.
pub(super) fn nesting_order(d: &TargetDesc) -> Vec<usize> {
    let mut order: Vec<usize> = (0..d.buffers.len()).collect();
    order.sort_by_key(|&i| scope_rank(d.buffers[i].scope));
    order
}
