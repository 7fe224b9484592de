//! The machine: state, registers and the execution of instructions.

use super::*;

/// One load configuration (`config_ld` with its `id`).
#[derive(Clone, Debug, PartialEq)]
pub struct LoadConfig {
    /// DRAM bytes between rows.
    pub stride: u64,
    /// The `mvin` scale.
    pub scale: f32,
    /// Accumulator `mvin`s read int8.
    pub shrunk: bool,
    /// Local rows between DIM-column blocks.
    pub block_stride: u64,
    /// Pixel repeats (at least 1).
    pub pixel_repeats: u64,
}

/// The configuration registers.
///
/// At reset they hold what the shortest config macros would set (`config_ex(OS,
/// NO_ACTIVATION, 0)`, `config_ld(DIM)`, `config_st(DIM)`); programs should configure
/// before use, as on the chip.
#[derive(Clone, Debug, PartialEq)]
pub struct Registers {
    /// The dataflow.
    pub dataflow: Dataflow,
    /// The activation of array results written into the scratchpad.
    pub sys_act: Activation,
    /// The rounding right shift of OS results written into the scratchpad.
    pub sys_shift: u32,
    /// `config_ex`'s accumulator scale (stored, unused by the array).
    pub sys_acc_scale: f32,
    /// Row step of A reads.
    pub a_stride: u64,
    /// Row step of C writes.
    pub c_stride: u64,
    /// A is read transposed.
    pub a_transpose: bool,
    /// B is read transposed.
    pub b_transpose: bool,
    /// The three load configurations (`mvin`, `mvin2`, `mvin3`).
    pub load: [LoadConfig; 3],
    /// DRAM bytes between `mvout` rows.
    pub store_stride: u64,
    /// The activation on `mvout` from the accumulator.
    pub acc_act: Activation,
    /// The accumulator scale on `mvout`.
    pub acc_scale: f32,
}

/// The operands named by the last `preload`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PreloadState {
    /// B (WS) or D (OS).
    pub bd: u32,
    /// Columns of `bd`.
    pub bd_cols: u16,
    /// Rows of `bd`.
    pub bd_rows: u16,
    /// Where results go.
    pub c: u32,
    /// Columns written.
    pub c_cols: u16,
    /// Rows written.
    pub c_rows: u16,
}

/// A Gemmini: state plus counters. See the module documentation for the semantics. `T`
/// gives the element types: [`Int8`] (the default configuration) or [`Fp32`].
#[derive(Clone, Debug)]
pub struct Gemmini<T: ElemTypes = Int8> {
    cfg: GemminiConfig,
    spad: Vec<T::Elem>,
    acc: Vec<T::Acc>,
    /// WS: the weights; OS: the partial sums.
    pe: Vec<T::Acc>,
    /// Rows and columns of the weights loaded into the PEs (WS), for counting MACs.
    pe_extent: (usize, usize),
    regs: Registers,
    preload: PreloadState,
    counters: Counters,
    executed: u64,
    trace: Option<Vec<Insn>>,
}

impl Gemmini<Int8> {
    /// An int8 Gemmini in reset state (see [`Gemmini::with_types`]).
    pub fn new(cfg: GemminiConfig) -> Gemmini<Int8> {
        Self::with_types(cfg)
    }
}

impl<T: ElemTypes> Gemmini<T> {
    /// A Gemmini in reset state: memories zero, registers as documented on [`Registers`].
    pub fn with_types(cfg: GemminiConfig) -> Gemmini<T> {
        let dim = cfg.dim;
        let load = LoadConfig {
            stride: dim as u64,
            scale: 1.0,
            shrunk: false,
            block_stride: dim as u64,
            pixel_repeats: 1,
        };
        Gemmini {
            spad: vec![T::Elem::default(); cfg.sp_rows() * dim],
            acc: vec![T::Acc::default(); cfg.acc_rows * dim],
            pe: vec![T::Acc::default(); dim * dim],
            pe_extent: (0, 0),
            regs: Registers {
                dataflow: Dataflow::OutputStationary,
                sys_act: Activation::None,
                sys_shift: 0,
                sys_acc_scale: 1.0,
                a_stride: 1,
                c_stride: 1,
                a_transpose: false,
                b_transpose: false,
                load: [load.clone(), load.clone(), load],
                store_stride: dim as u64,
                acc_act: Activation::None,
                acc_scale: 1.0,
            },
            preload: PreloadState {
                bd: GARBAGE_ADDR,
                bd_cols: 0,
                bd_rows: 0,
                c: GARBAGE_ADDR,
                c_cols: 0,
                c_rows: 0,
            },
            counters: Counters::default(),
            executed: 0,
            trace: None,
            cfg,
        }
    }

    /// The sizes.
    pub fn config(&self) -> &GemminiConfig {
        &self.cfg
    }
    /// The configuration registers.
    pub fn registers(&self) -> &Registers {
        &self.regs
    }
    /// The last `preload`'s operands.
    pub fn preload_state(&self) -> &PreloadState {
        &self.preload
    }
    /// What was counted so far.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }
    /// Zeroes the counters.
    pub fn reset_counters(&mut self) {
        self.counters = Counters::default();
    }
    /// Starts (`true`, with an empty trace) or stops (`false`, dropping it) recording the
    /// instructions that execute successfully.
    pub fn record_trace(&mut self, on: bool) {
        self.trace = on.then(Vec::new);
    }
    /// The recorded instructions (empty when not recording).
    pub fn trace(&self) -> &[Insn] {
        self.trace.as_deref().unwrap_or(&[])
    }
    /// Scratchpad row `row` (panics when out of range).
    pub fn spad_row(&self, row: usize) -> &[T::Elem] {
        let d = self.cfg.dim;
        &self.spad[row * d..(row + 1) * d]
    }
    /// Accumulator row `row` (panics when out of range).
    pub fn acc_row(&self, row: usize) -> &[T::Acc] {
        let d = self.cfg.dim;
        &self.acc[row * d..(row + 1) * d]
    }

    /// Decodes and executes one RoCC instruction (see [`Insn::decode`]).
    pub fn execute_raw(
        &mut self,
        funct: u32,
        rs1: u64,
        rs2: u64,
        mem: &mut dyn Dram,
    ) -> Result<(), ModelError> {
        match Insn::decode(funct, rs1, rs2) {
            Ok(insn) => self.execute(&insn, mem),
            Err(e) => Err(ModelError::At {
                index: self.executed,
                insn: format!("funct {funct}, rs1 {rs1:#x}, rs2 {rs2:#x}"),
                source: Box::new(e),
            }),
        }
    }

    /// Executes one instruction. An error leaves the state as far as the instruction got
    /// and names the instruction ([`ModelError::At`]).
    pub fn execute(&mut self, insn: &Insn, mem: &mut dyn Dram) -> Result<(), ModelError> {
        let r = self.step(insn, mem);
        let index = self.executed;
        self.executed += 1;
        match r {
            Ok(()) => {
                self.counters.bump(insn.kind());
                if let Some(t) = &mut self.trace {
                    t.push(insn.clone());
                }
                Ok(())
            }
            Err(e) => Err(ModelError::At {
                index,
                insn: insn.to_string(),
                source: Box::new(e),
            }),
        }
    }

    /// Executes instructions in order, stopping at the first error.
    pub fn run(&mut self, insns: &[Insn], mem: &mut dyn Dram) -> Result<(), ModelError> {
        insns.iter().try_for_each(|i| self.execute(i, mem))
    }

    fn step(&mut self, insn: &Insn, mem: &mut dyn Dram) -> Result<(), ModelError> {
        match *insn {
            Insn::ConfigEx {
                dataflow,
                activation,
                sys_shift,
                sys_acc_scale,
                c_stride,
                a_stride,
                a_transpose,
                b_transpose,
                set_only_strides,
            } => {
                if sys_shift >= 32 {
                    return Err(ModelError::Invalid(format!(
                        "config_ex: sys_shift {sys_shift} is not below 32"
                    )));
                }
                if !set_only_strides {
                    match dataflow {
                        Dataflow::OutputStationary if !a_transpose && b_transpose => {
                            return Err(ModelError::Invalid(
                                "config_ex: OS does not support transposing B alone".into(),
                            ))
                        }
                        Dataflow::WeightStationary if a_transpose && b_transpose => {
                            return Err(ModelError::Invalid(
                                "config_ex: WS does not support transposing both A and B".into(),
                            ))
                        }
                        _ => {}
                    }
                    self.regs.dataflow = dataflow;
                    self.regs.sys_act = activation;
                    self.regs.sys_shift = sys_shift;
                    self.regs.sys_acc_scale = sys_acc_scale;
                    self.regs.a_transpose = a_transpose;
                    self.regs.b_transpose = b_transpose;
                }
                self.regs.c_stride = c_stride as u64;
                self.regs.a_stride = a_stride as u64;
                Ok(())
            }
            Insn::ConfigLd {
                stride,
                scale,
                shrunk,
                block_stride,
                pixel_repeats,
                id,
            } => {
                let l = self.regs.load.get_mut(id as usize).ok_or_else(|| {
                    ModelError::Invalid(format!("load configuration id {id} does not exist"))
                })?;
                *l = LoadConfig {
                    stride,
                    scale,
                    shrunk,
                    block_stride: block_stride as u64,
                    pixel_repeats: (pixel_repeats as u64).max(1),
                };
                Ok(())
            }
            Insn::ConfigSt {
                stride,
                activation,
                acc_scale,
            } => {
                self.regs.store_stride = stride as u64;
                self.regs.acc_act = activation;
                self.regs.acc_scale = acc_scale;
                Ok(())
            }
            Insn::Mvin {
                id,
                dram_addr,
                local,
                cols,
                rows,
            } => self.mvin(id, dram_addr, local, cols as usize, rows as usize, mem),
            Insn::Mvout {
                dram_addr,
                local,
                cols,
                rows,
            } => self.mvout(dram_addr, local, cols as usize, rows as usize, mem),
            Insn::Preload {
                bd,
                c,
                bd_cols,
                bd_rows,
                c_cols,
                c_rows,
            } => {
                self.preload = PreloadState {
                    bd,
                    bd_cols,
                    bd_rows,
                    c,
                    c_cols,
                    c_rows,
                };
                Ok(())
            }
            Insn::Compute {
                preloaded,
                a,
                bd,
                a_cols,
                a_rows,
                bd_cols,
                bd_rows,
            } => self.compute(
                preloaded,
                (a, a_cols as usize, a_rows as usize),
                (bd, bd_cols as usize, bd_rows as usize),
            ),
            Insn::Flush { .. } | Insn::Fence => Ok(()),
        }
    }

    fn spad_index(&self, row: u64, col: usize, what: &str) -> Result<usize, ModelError> {
        if row >= self.cfg.sp_rows() as u64 {
            return Err(ModelError::Invalid(format!(
                "{what}: scratchpad row {row} is beyond the {} rows",
                self.cfg.sp_rows()
            )));
        }
        Ok(row as usize * self.cfg.dim + col)
    }

    fn acc_index(&self, row: u64, col: usize, what: &str) -> Result<usize, ModelError> {
        if row >= self.cfg.acc_rows as u64 {
            return Err(ModelError::Invalid(format!(
                "{what}: accumulator row {row} is beyond the {} rows",
                self.cfg.acc_rows
            )));
        }
        Ok(row as usize * self.cfg.dim + col)
    }

    fn mvin(
        &mut self,
        id: u8,
        dram_addr: u64,
        local: u32,
        cols: usize,
        rows: usize,
        mem: &mut dyn Dram,
    ) -> Result<(), ModelError> {
        let dim = self.cfg.dim;
        let to_acc = local & ACC_BIT != 0;
        let accumulate = local & ACCUMULATE_BIT != 0;
        let base = (local & ROW_MASK) as u64;
        let lc = self.regs.load[id as usize].clone();
        let elem_bytes = if to_acc && !lc.shrunk {
            T::ACC_BYTES
        } else {
            T::ELEM_BYTES
        };
        // The DMA moves at most MAX_BYTES of DRAM elements per row.
        let max_cols = self.cfg.max_block_len(elem_bytes) * dim;
        if local == GARBAGE_ADDR {
            return Err(ModelError::Invalid(
                "mvin into GARBAGE_ADDR (no destination)".into(),
            ));
        }
        if cols > max_cols {
            return Err(ModelError::Invalid(format!(
                "mvin of {cols} columns: at most {max_cols} fit one DMA row ({} bytes)",
                self.cfg.max_bytes
            )));
        }
        let zeros = dram_addr == 0;
        let mut row_bytes = vec![0u8; cols * elem_bytes];
        for r in 0..rows {
            if !zeros {
                let a = dram_addr.wrapping_add(r as u64 * lc.stride);
                mem.read(a, &mut row_bytes)?;
            }
            for c in 0..cols {
                let block = (c / dim) as u64;
                let lcol = c % dim;
                let lrow = base + r as u64 + block * lc.block_stride;
                let mut pixel = 0u64;
                while pixel < lc.pixel_repeats && pixel <= lrow {
                    let trow = lrow - pixel;
                    let tcol = lcol + pixel as usize * cols;
                    if tcol >= dim {
                        return Err(ModelError::Invalid(format!(
                            "mvin with {} pixel repeats writes column {tcol} of a {dim}-wide row",
                            lc.pixel_repeats
                        )));
                    }
                    let bytes = &row_bytes[c * elem_bytes..(c + 1) * elem_bytes];
                    if to_acc {
                        let v = if zeros {
                            T::Acc::default()
                        } else if lc.shrunk {
                            T::widen(T::mvin_scale(T::elem_from_le(bytes), lc.scale))
                        } else {
                            T::mvin_scale_acc(T::acc_from_le(bytes), lc.scale)
                        };
                        let i = self.acc_index(trow, tcol, "mvin")?;
                        if accumulate {
                            self.acc[i] = T::add(self.acc[i], v);
                        } else {
                            self.acc[i] = v;
                        }
                    } else {
                        let v = if zeros {
                            T::Elem::default()
                        } else {
                            T::mvin_scale(T::elem_from_le(bytes), lc.scale)
                        };
                        let i = self.spad_index(trow, tcol, "mvin")?;
                        self.spad[i] = v;
                    }
                    pixel += 1;
                }
            }
        }
        let blocks = cols.div_ceil(dim) as u64;
        let bytes = if zeros {
            0
        } else {
            (rows * cols * elem_bytes) as u64
        };
        if to_acc {
            self.counters.dram_to_acc_rows += rows as u64 * blocks;
            self.counters.dram_to_acc_bytes += bytes;
        } else {
            self.counters.dram_to_spad_rows += rows as u64 * blocks;
            self.counters.dram_to_spad_bytes += bytes;
        }
        Ok(())
    }

    fn mvout(
        &mut self,
        dram_addr: u64,
        local: u32,
        cols: usize,
        rows: usize,
        mem: &mut dyn Dram,
    ) -> Result<(), ModelError> {
        let dim = self.cfg.dim;
        if local == GARBAGE_ADDR {
            return Err(ModelError::Invalid(
                "mvout from GARBAGE_ADDR (no source)".into(),
            ));
        }
        let from_acc = local & ACC_BIT != 0;
        let full = from_acc && local & FULL_ACC_BIT != 0;
        if (local >> 26) & 7 != 0 && from_acc && !full {
            return Err(ModelError::Unsupported(
                "normalisation commands in mvout addresses (bits 28..26)".into(),
            ));
        }
        let base = (local & MVOUT_ROW_MASK) as u64;
        let elem_bytes = if full { T::ACC_BYTES } else { T::ELEM_BYTES };
        let max_cols = self.cfg.max_block_len(elem_bytes) * dim;
        if cols > max_cols {
            return Err(ModelError::Invalid(format!(
                "mvout of {cols} columns: at most {max_cols} fit one DMA row ({} bytes)",
                self.cfg.max_bytes
            )));
        }
        let mut out = vec![0u8; cols * elem_bytes];
        for r in 0..rows {
            for c in 0..cols {
                let lrow = base + (c / dim * dim) as u64 + r as u64;
                let lcol = c % dim;
                let slot = &mut out[c * elem_bytes..(c + 1) * elem_bytes];
                if from_acc {
                    let v = self.acc[self.acc_index(lrow, lcol, "mvout")?];
                    if full {
                        T::acc_to_le(v, slot);
                    } else {
                        let e =
                            activate::<T>(self.regs.acc_act, T::acc_scale(v, self.regs.acc_scale));
                        T::elem_to_le(e, slot);
                    }
                } else {
                    T::elem_to_le(self.spad[self.spad_index(lrow, lcol, "mvout")?], slot);
                }
            }
            let a = dram_addr.wrapping_add(r as u64 * self.regs.store_stride);
            mem.write(a, &out)?;
        }
        let blocks = cols.div_ceil(dim) as u64;
        let bytes = (rows * cols * elem_bytes) as u64;
        if from_acc {
            self.counters.acc_to_dram_rows += rows as u64 * blocks;
            self.counters.acc_to_dram_bytes += bytes;
        } else {
            self.counters.spad_to_dram_rows += rows as u64 * blocks;
            self.counters.spad_to_dram_bytes += bytes;
        }
        Ok(())
    }

    /// Reads an operand element from the scratchpad: `addr` must be a scratchpad address.
    fn operand(&self, addr: u32, row: u64, col: usize, what: &str) -> Result<T::Acc, ModelError> {
        if addr & (ACC_BIT | ACCUMULATE_BIT) != 0 {
            return Err(ModelError::Unsupported(format!(
                "{what} from the accumulator (address {addr:#x})"
            )));
        }
        let i = self.spad_index(addr as u64 + row, col, what)?;
        Ok(T::widen(self.spad[i]))
    }

    fn compute(
        &mut self,
        preloaded: bool,
        (a, a_cols, a_rows): (u32, usize, usize),
        (bd, bd_cols, bd_rows): (u32, usize, usize),
    ) -> Result<(), ModelError> {
        let dim = self.cfg.dim;
        let ws = self.regs.dataflow == Dataflow::WeightStationary;
        let p = self.preload;
        for (what, v) in [
            ("A columns", a_cols),
            ("A rows", a_rows),
            ("BD columns", bd_cols),
            ("BD rows", bd_rows),
            ("preloaded columns", p.bd_cols as usize),
            ("preloaded rows", p.bd_rows as usize),
            ("C columns", p.c_cols as usize),
            ("C rows", p.c_rows as usize),
        ] {
            if v > dim {
                return Err(ModelError::Invalid(format!(
                    "{v} {what} exceed the {dim}×{dim} array"
                )));
            }
        }
        // Load the preloaded operand into the PEs.
        if preloaded {
            let transpose = ws && self.regs.b_transpose;
            let (pr, pc) = (p.bd_rows as usize, p.bd_cols as usize);
            for i in 0..dim {
                for j in 0..dim {
                    let (r, c) = if transpose { (j, i) } else { (i, j) };
                    self.pe[i * dim + j] = if p.bd != GARBAGE_ADDR && i < pr && j < pc {
                        self.operand(p.bd, r as u64, c, "preload")?
                    } else {
                        T::Acc::default()
                    };
                }
            }
            self.pe_extent = if p.bd == GARBAGE_ADDR {
                (0, 0)
            } else {
                (pr, pc)
            };
        }
        // A, padded with zeros.
        let mut am = vec![T::Acc::default(); dim * dim];
        if a != GARBAGE_ADDR {
            for i in 0..a_rows {
                for k in 0..a_cols {
                    let (r, c) = if self.regs.a_transpose {
                        (self.regs.a_stride * k as u64, i)
                    } else {
                        (self.regs.a_stride * i as u64, k)
                    };
                    am[i * dim + k] = self.operand(a, r, c, "A")?;
                }
            }
        }
        // BD, padded with zeros (WS: D as given; OS: B, transposed when configured).
        let mut bdm = vec![T::Acc::default(); dim * dim];
        if bd != GARBAGE_ADDR {
            let transpose = !ws && self.regs.b_transpose;
            for i in 0..bd_rows {
                for j in 0..bd_cols {
                    let (r, c) = if transpose { (j, i) } else { (i, j) };
                    bdm[i * dim + j] = self.operand(bd, r as u64, c, "BD")?;
                }
            }
        }
        let a_eff_rows = if a == GARBAGE_ADDR { 0 } else { a_rows };
        let mut results = vec![T::Acc::default(); dim * dim];
        if ws {
            // results = D + A · W
            for i in 0..dim {
                for j in 0..dim {
                    let mut s = bdm[i * dim + j];
                    for k in 0..dim {
                        s = T::mac(s, am[i * dim + k], self.pe[k * dim + j]);
                    }
                    results[i * dim + j] = s;
                }
            }
            let (wr, wc) = self.pe_extent;
            self.counters.macs += (a_eff_rows * a_cols.min(wr) * wc) as u64;
        } else {
            // PEs += A · B
            for i in 0..dim {
                for j in 0..dim {
                    let mut s = self.pe[i * dim + j];
                    for k in 0..dim {
                        s = T::mac(s, am[i * dim + k], bdm[k * dim + j]);
                    }
                    self.pe[i * dim + j] = s;
                }
            }
            let (br, bc) = if bd == GARBAGE_ADDR {
                (0, 0)
            } else {
                (bd_rows, bd_cols)
            };
            self.counters.macs += (a_eff_rows * a_cols.min(br) * bc) as u64;
        }
        self.counters.array_macs += (dim * dim * dim) as u64;
        // Write the results to C.
        if p.c != GARBAGE_ADDR {
            let to_acc = p.c & ACC_BIT != 0;
            let accumulate = p.c & ACCUMULATE_BIT != 0;
            let base = (p.c & ROW_MASK) as u64;
            for i in 0..p.c_rows as usize {
                let row = base + self.regs.c_stride * i as u64;
                for j in 0..p.c_cols as usize {
                    let v = if ws {
                        results[i * dim + j]
                    } else {
                        self.pe[i * dim + j]
                    };
                    if to_acc {
                        let x = self.acc_index(row, j, "compute output")?;
                        self.acc[x] = if accumulate {
                            T::add(self.acc[x], v)
                        } else {
                            v
                        };
                    } else {
                        let shift = if ws { 0 } else { self.regs.sys_shift };
                        let e = activate::<T>(self.regs.sys_act, T::sys_shift(v, shift));
                        let x = self.spad_index(row, j, "compute output")?;
                        self.spad[x] = e;
                    }
                }
            }
            if to_acc {
                self.counters.array_to_acc_rows += p.c_rows as u64;
            } else {
                self.counters.array_to_spad_rows += p.c_rows as u64;
            }
        }
        Ok(())
    }
}

/// Applies an activation to an `elem_t`.
fn activate<T: ElemTypes>(act: Activation, e: T::Elem) -> T::Elem {
    match act {
        Activation::None => e,
        Activation::Relu => T::relu(e),
    }
}
