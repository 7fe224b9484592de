//! Gemmini instructions: the decoded form, the RoCC encoding, the macro-call text.

use std::fmt;

use super::*;

/// The dataflow (`config_ex`, `rs1[2]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dataflow {
    /// `OUTPUT_STATIONARY` (0): results stay in the PEs.
    OutputStationary,
    /// `WEIGHT_STATIONARY` (1): the weights stay in the PEs.
    WeightStationary,
}

/// An activation (`NO_ACTIVATION` = 0, `RELU` = 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activation {
    /// `NO_ACTIVATION`.
    None,
    /// `RELU`: negative values become 0.
    Relu,
}

impl Activation {
    fn code(self) -> u64 {
        match self {
            Activation::None => 0,
            Activation::Relu => 1,
        }
    }
    fn decode(code: u64, what: &str) -> Result<Activation, ModelError> {
        match code {
            0 => Ok(Activation::None),
            1 => Ok(Activation::Relu),
            2 => Err(ModelError::Unsupported(format!(
                "the LAYERNORM activation in {what}"
            ))),
            _ => Err(ModelError::Unsupported(format!(
                "the IGELU activation in {what}"
            ))),
        }
    }
    /// Applies the activation to an int8.
    pub fn apply(self, x: i8) -> i8 {
        match self {
            Activation::None => x,
            Activation::Relu => x.max(0),
        }
    }
}

/// One decoded Gemmini instruction, with the meaning of the `gemmini.h` macro that emits it.
///
/// Local addresses are the raw 32-bit values of the macros ([`ACC_BIT`], [`ACCUMULATE_BIT`],
/// [`FULL_ACC_BIT`], [`GARBAGE_ADDR`]). DRAM addresses are whatever the [`Dram`] in use
/// understands (host pointers for [`HostMemory`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Insn {
    /// `gemmini_extended3_config_ex(dataflow, act, sys_shift, acc_scale, C_stride,
    /// A_stride, A_transpose, B_transpose, set_only_strides)`; `gemmini_config_ex(df, act,
    /// shift)` is `A_stride = C_stride = 1`, no transposes, `acc_scale = 1.0`.
    ConfigEx {
        /// The dataflow.
        dataflow: Dataflow,
        /// The activation of results the array writes into the scratchpad.
        activation: Activation,
        /// The rounding right shift of OS results written into the scratchpad (< 32).
        sys_shift: u32,
        /// `sys_acc_scale` (kept in the state; the array does not use it).
        sys_acc_scale: f32,
        /// Row step between consecutive C rows written by the array.
        c_stride: u16,
        /// Row step between consecutive A rows read by the array.
        a_stride: u16,
        /// Read A transposed.
        a_transpose: bool,
        /// Read B transposed.
        b_transpose: bool,
        /// Only set `a_stride` and `c_stride`.
        set_only_strides: bool,
    },
    /// `gemmini_extended5_config_ld(stride, scale, shrunk, block_mvin_stride,
    /// pixel_repeats, id)`; `gemmini_extended_config_ld(stride, scale)` is `shrunk =
    /// false`, block stride DIM, one pixel, id 0.
    ConfigLd {
        /// DRAM bytes between consecutive rows of an `mvin`.
        stride: u64,
        /// The `mvin` scale (`scale_t`, float).
        scale: f32,
        /// Accumulator `mvin`s read int8 (scaled) instead of int32.
        shrunk: bool,
        /// Local rows between the DIM-column blocks of one `mvin` row.
        block_stride: u16,
        /// `pixel_repeats` (first-layer optimisation); 0 means 1.
        pixel_repeats: u8,
        /// Which `mvin` this configures: 0 `mvin`, 1 `mvin2`, 2 `mvin3`.
        id: u8,
    },
    /// `gemmini_extended_config_st(stride, act, acc_scale)` (pooling is not modelled).
    ConfigSt {
        /// DRAM bytes between consecutive rows of an `mvout`.
        stride: u32,
        /// The activation on `mvout` from the accumulator.
        activation: Activation,
        /// The accumulator scale (`acc_scale_t`, float).
        acc_scale: f32,
    },
    /// `gemmini_extended_mvin(dram_addr, local, cols, rows)` (`id` 0), `_mvin2` (1),
    /// `_mvin3` (2).
    Mvin {
        /// The load configuration used (0, 1, 2).
        id: u8,
        /// Source; 0 loads zeros.
        dram_addr: u64,
        /// Destination local address.
        local: u32,
        /// Elements per row.
        cols: u16,
        /// Rows.
        rows: u16,
    },
    /// `gemmini_extended_mvout(dram_addr, local, cols, rows)`.
    Mvout {
        /// Destination.
        dram_addr: u64,
        /// Source local address.
        local: u32,
        /// Elements per row.
        cols: u16,
        /// Rows.
        rows: u16,
    },
    /// `gemmini_extended_preload(BD, C, BD_cols, BD_rows, C_cols, C_rows)`.
    Preload {
        /// B (WS) or D (OS), loaded into the PEs by the next `compute_preloaded`.
        bd: u32,
        /// Where the next compute's result goes.
        c: u32,
        /// Columns of `bd`.
        bd_cols: u16,
        /// Rows of `bd`.
        bd_rows: u16,
        /// Columns of C written.
        c_cols: u16,
        /// Rows of C written.
        c_rows: u16,
    },
    /// `gemmini_extended_compute_preloaded(A, BD, A_cols, A_rows, BD_cols, BD_rows)`
    /// (`preloaded = true`) or `gemmini_extended_compute_accumulated(…)` (`false`).
    Compute {
        /// Whether the preloaded operand is loaded first (`compute_preloaded`).
        preloaded: bool,
        /// A.
        a: u32,
        /// D (WS) or B (OS).
        bd: u32,
        /// Columns of A.
        a_cols: u16,
        /// Rows of A.
        a_rows: u16,
        /// Columns of BD.
        bd_cols: u16,
        /// Rows of BD.
        bd_rows: u16,
    },
    /// `gemmini_flush(skip)`.
    Flush {
        /// The `skip` argument.
        skip: u64,
    },
    /// `gemmini_fence()`.
    Fence,
}

/// The kinds of instructions, for counting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum InsnKind {
    /// `config_ex`.
    ConfigEx,
    /// `config_ld`.
    ConfigLd,
    /// `config_st`.
    ConfigSt,
    /// `mvin`, `mvin2`, `mvin3`.
    Mvin,
    /// `mvout`.
    Mvout,
    /// `preload`.
    Preload,
    /// `compute_preloaded`.
    ComputePreloaded,
    /// `compute_accumulated`.
    ComputeAccumulated,
    /// `flush`.
    Flush,
    /// `fence`.
    Fence,
}

impl Insn {
    /// `gemmini_config_ex(dataflow, act, shift)`.
    pub fn config_ex(dataflow: Dataflow, activation: Activation, sys_shift: u32) -> Insn {
        Insn::ConfigEx {
            dataflow,
            activation,
            sys_shift,
            sys_acc_scale: 1.0,
            c_stride: 1,
            a_stride: 1,
            a_transpose: false,
            b_transpose: false,
            set_only_strides: false,
        }
    }
    /// `gemmini_extended_config_ld(stride, scale)`; `DIM` is the block stride.
    pub fn config_ld(stride: u64, scale: f32, dim: usize) -> Insn {
        Insn::ConfigLd {
            stride,
            scale,
            shrunk: false,
            block_stride: dim as u16,
            pixel_repeats: 1,
            id: 0,
        }
    }
    /// `gemmini_extended_config_st(stride, act, acc_scale)`.
    pub fn config_st(stride: u32, activation: Activation, acc_scale: f32) -> Insn {
        Insn::ConfigSt {
            stride,
            activation,
            acc_scale,
        }
    }
    /// `gemmini_extended_mvin(dram_addr, local, cols, rows)`.
    pub fn mvin(dram_addr: u64, local: u32, cols: u16, rows: u16) -> Insn {
        Insn::Mvin {
            id: 0,
            dram_addr,
            local,
            cols,
            rows,
        }
    }
    /// `gemmini_extended_mvout(dram_addr, local, cols, rows)`.
    pub fn mvout(dram_addr: u64, local: u32, cols: u16, rows: u16) -> Insn {
        Insn::Mvout {
            dram_addr,
            local,
            cols,
            rows,
        }
    }
    /// `gemmini_extended_preload(bd, c, bd_cols, bd_rows, c_cols, c_rows)`.
    pub fn preload(bd: u32, c: u32, bd_cols: u16, bd_rows: u16, c_cols: u16, c_rows: u16) -> Insn {
        Insn::Preload {
            bd,
            c,
            bd_cols,
            bd_rows,
            c_cols,
            c_rows,
        }
    }
    /// `gemmini_extended_compute_preloaded(a, bd, a_cols, a_rows, bd_cols, bd_rows)`.
    pub fn compute_preloaded(
        a: u32,
        bd: u32,
        a_cols: u16,
        a_rows: u16,
        bd_cols: u16,
        bd_rows: u16,
    ) -> Insn {
        Insn::Compute {
            preloaded: true,
            a,
            bd,
            a_cols,
            a_rows,
            bd_cols,
            bd_rows,
        }
    }
    /// `gemmini_extended_compute_accumulated(a, bd, a_cols, a_rows, bd_cols, bd_rows)`.
    pub fn compute_accumulated(
        a: u32,
        bd: u32,
        a_cols: u16,
        a_rows: u16,
        bd_cols: u16,
        bd_rows: u16,
    ) -> Insn {
        Insn::Compute {
            preloaded: false,
            a,
            bd,
            a_cols,
            a_rows,
            bd_cols,
            bd_rows,
        }
    }

    /// The instruction's kind.
    pub fn kind(&self) -> InsnKind {
        match self {
            Insn::ConfigEx { .. } => InsnKind::ConfigEx,
            Insn::ConfigLd { .. } => InsnKind::ConfigLd,
            Insn::ConfigSt { .. } => InsnKind::ConfigSt,
            Insn::Mvin { .. } => InsnKind::Mvin,
            Insn::Mvout { .. } => InsnKind::Mvout,
            Insn::Preload { .. } => InsnKind::Preload,
            Insn::Compute {
                preloaded: true, ..
            } => InsnKind::ComputePreloaded,
            Insn::Compute {
                preloaded: false, ..
            } => InsnKind::ComputeAccumulated,
            Insn::Flush { .. } => InsnKind::Flush,
            Insn::Fence => InsnKind::Fence,
        }
    }

    /// The RoCC encoding `(funct, rs1, rs2)`, bit for bit what `gemmini.h`'s macros pass
    /// to the instruction (fence: [`funct::HOST_FENCE`], zeros).
    pub fn encode(&self) -> (u32, u64, u64) {
        fn sized(addr: u32, cols: u16, rows: u16) -> u64 {
            ((rows as u64) << 48) | ((cols as u64) << 32) | addr as u64
        }
        match *self {
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
                let df = matches!(dataflow, Dataflow::WeightStationary) as u64;
                let rs1 = ((sys_acc_scale.to_bits() as u64) << 32)
                    | ((a_stride as u64) << 16)
                    | ((b_transpose as u64) << 9)
                    | ((a_transpose as u64) << 8)
                    | ((set_only_strides as u64) << 7)
                    | (activation.code() << 3)
                    | (df << 2);
                let rs2 = ((c_stride as u64) << 48) | sys_shift as u64;
                (funct::CONFIG, rs1, rs2)
            }
            Insn::ConfigLd {
                stride,
                scale,
                shrunk,
                block_stride,
                pixel_repeats,
                id,
            } => {
                let rs1 = ((scale.to_bits() as u64) << 32)
                    | ((block_stride as u64) << 16)
                    | ((pixel_repeats as u64) << 8)
                    | ((id as u64) << 3)
                    | ((shrunk as u64) << 2)
                    | 1;
                (funct::CONFIG, rs1, stride)
            }
            Insn::ConfigSt {
                stride,
                activation,
                acc_scale,
            } => {
                let rs1 = (activation.code() << 2) | 2;
                let rs2 = ((acc_scale.to_bits() as u64) << 32) | stride as u64;
                (funct::CONFIG, rs1, rs2)
            }
            Insn::Mvin {
                id,
                dram_addr,
                local,
                cols,
                rows,
            } => {
                let f = match id {
                    1 => funct::MVIN2,
                    2 => funct::MVIN3,
                    _ => funct::MVIN,
                };
                (f, dram_addr, sized(local, cols, rows))
            }
            Insn::Mvout {
                dram_addr,
                local,
                cols,
                rows,
            } => (funct::MVOUT, dram_addr, sized(local, cols, rows)),
            Insn::Preload {
                bd,
                c,
                bd_cols,
                bd_rows,
                c_cols,
                c_rows,
            } => (
                funct::PRELOAD,
                sized(bd, bd_cols, bd_rows),
                sized(c, c_cols, c_rows),
            ),
            Insn::Compute {
                preloaded,
                a,
                bd,
                a_cols,
                a_rows,
                bd_cols,
                bd_rows,
            } => (
                if preloaded {
                    funct::COMPUTE_PRELOADED
                } else {
                    funct::COMPUTE_ACCUMULATED
                },
                sized(a, a_cols, a_rows),
                sized(bd, bd_cols, bd_rows),
            ),
            Insn::Flush { skip } => (funct::FLUSH, skip, 0),
            Insn::Fence => (funct::HOST_FENCE, 0, 0),
        }
    }

    /// Decodes a RoCC instruction as Gemmini's reference simulator does. Instructions this
    /// model does not cover are [`ModelError::Unsupported`]; unknown instructions are
    /// [`ModelError::Invalid`]. Operand values are checked when the instruction executes.
    pub fn decode(funct: u32, rs1: u64, rs2: u64) -> Result<Insn, ModelError> {
        let addr = |r: u64| r as u32;
        let cols = |r: u64| (r >> 32) as u16;
        let rows = |r: u64| (r >> 48) as u16;
        match funct {
            funct::CONFIG => match rs1 & 3 {
                0 => {
                    let dataflow = if (rs1 >> 2) & 1 == 1 {
                        Dataflow::WeightStationary
                    } else {
                        Dataflow::OutputStationary
                    };
                    let activation = Activation::decode((rs1 >> 3) & 3, "config_ex")?;
                    let sys_shift = rs2 as u32;
                    let a_transpose = (rs1 >> 8) & 1 == 1;
                    let b_transpose = (rs1 >> 9) & 1 == 1;
                    let set_only_strides = (rs1 >> 7) & 1 == 1;
                    Ok(Insn::ConfigEx {
                        dataflow,
                        activation,
                        sys_shift,
                        sys_acc_scale: f32::from_bits((rs1 >> 32) as u32),
                        c_stride: (rs2 >> 48) as u16,
                        a_stride: (rs1 >> 16) as u16,
                        a_transpose,
                        b_transpose,
                        set_only_strides,
                    })
                }
                1 => {
                    let id = ((rs1 >> 3) & 3) as u8;
                    if id > 2 {
                        return Err(ModelError::Invalid(
                            "config_ld: load configuration id 3 does not exist".into(),
                        ));
                    }
                    Ok(Insn::ConfigLd {
                        stride: rs2,
                        scale: f32::from_bits((rs1 >> 32) as u32),
                        shrunk: (rs1 >> 2) & 1 == 1,
                        block_stride: (rs1 >> 16) as u16,
                        pixel_repeats: (rs1 >> 8) as u8,
                        id,
                    })
                }
                2 => {
                    if (rs1 >> 4) & 3 != 0 {
                        return Err(ModelError::Unsupported(
                            "pooling on mvout (config_st with a pool stride)".into(),
                        ));
                    }
                    Ok(Insn::ConfigSt {
                        stride: rs2 as u32,
                        activation: Activation::decode((rs1 >> 2) & 3, "config_st")?,
                        acc_scale: f32::from_bits((rs2 >> 32) as u32),
                    })
                }
                _ => Err(ModelError::Unsupported(
                    "config_norm (normalisation activations)".into(),
                )),
            },
            funct::MVIN | funct::MVIN2 | funct::MVIN3 => Ok(Insn::Mvin {
                id: match funct {
                    funct::MVIN => 0,
                    funct::MVIN2 => 1,
                    _ => 2,
                },
                dram_addr: rs1,
                local: addr(rs2),
                cols: cols(rs2),
                rows: rows(rs2),
            }),
            funct::MVOUT => Ok(Insn::Mvout {
                dram_addr: rs1,
                local: addr(rs2),
                cols: cols(rs2),
                rows: rows(rs2),
            }),
            funct::PRELOAD => Ok(Insn::Preload {
                bd: addr(rs1),
                c: addr(rs2),
                bd_cols: cols(rs1),
                bd_rows: rows(rs1),
                c_cols: cols(rs2),
                c_rows: rows(rs2),
            }),
            funct::COMPUTE_PRELOADED | funct::COMPUTE_ACCUMULATED => Ok(Insn::Compute {
                preloaded: funct == funct::COMPUTE_PRELOADED,
                a: addr(rs1),
                bd: addr(rs2),
                a_cols: cols(rs1),
                a_rows: rows(rs1),
                bd_cols: cols(rs2),
                bd_rows: rows(rs2),
            }),
            funct::FLUSH => Ok(Insn::Flush { skip: rs1 }),
            funct::HOST_FENCE => Ok(Insn::Fence),
            8..=13 | 15..=21 => Err(ModelError::Unsupported(format!(
                "the hardware loop instructions (funct {funct}: gemmini_loop_ws / \
                 gemmini_loop_conv_ws)"
            ))),
            126 => Err(ModelError::Unsupported("the performance counters".into())),
            _ => Err(ModelError::Invalid(format!(
                "unknown Gemmini instruction funct {funct}"
            ))),
        }
    }
}

fn fmt_local(addr: u32) -> String {
    if addr == GARBAGE_ADDR {
        "GARBAGE_ADDR".to_string()
    } else {
        format!("{addr:#x}")
    }
}

impl fmt::Display for Insn {
    /// The instruction as the `gemmini.h` macro call that emits it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let act = |a: &Activation| match a {
            Activation::None => "NO_ACTIVATION",
            Activation::Relu => "RELU",
        };
        match self {
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
            } => write!(
                f,
                "gemmini_extended3_config_ex({}, {}, {sys_shift}, {sys_acc_scale:?}, {c_stride}, \
                 {a_stride}, {}, {}, {})",
                match dataflow {
                    Dataflow::OutputStationary => "OUTPUT_STATIONARY",
                    Dataflow::WeightStationary => "WEIGHT_STATIONARY",
                },
                act(activation),
                *a_transpose as u8,
                *b_transpose as u8,
                *set_only_strides as u8
            ),
            Insn::ConfigLd {
                stride,
                scale,
                shrunk,
                block_stride,
                pixel_repeats,
                id,
            } => write!(
                f,
                "gemmini_extended5_config_ld({stride}, {scale:?}, {}, {block_stride}, \
                 {pixel_repeats}, {id})",
                *shrunk as u8
            ),
            Insn::ConfigSt {
                stride,
                activation,
                acc_scale,
            } => write!(
                f,
                "gemmini_extended_config_st({stride}, {}, {acc_scale:?})",
                act(activation)
            ),
            Insn::Mvin {
                id,
                dram_addr,
                local,
                cols,
                rows,
            } => {
                let n = match id {
                    0 => String::new(),
                    i => (i + 1).to_string(),
                };
                write!(
                    f,
                    "gemmini_extended_mvin{n}({dram_addr:#x}, {}, {cols}, {rows})",
                    fmt_local(*local)
                )
            }
            Insn::Mvout {
                dram_addr,
                local,
                cols,
                rows,
            } => write!(
                f,
                "gemmini_extended_mvout({dram_addr:#x}, {}, {cols}, {rows})",
                fmt_local(*local)
            ),
            Insn::Preload {
                bd,
                c,
                bd_cols,
                bd_rows,
                c_cols,
                c_rows,
            } => write!(
                f,
                "gemmini_extended_preload({}, {}, {bd_cols}, {bd_rows}, {c_cols}, {c_rows})",
                fmt_local(*bd),
                fmt_local(*c)
            ),
            Insn::Compute {
                preloaded,
                a,
                bd,
                a_cols,
                a_rows,
                bd_cols,
                bd_rows,
            } => write!(
                f,
                "gemmini_extended_compute_{}({}, {}, {a_cols}, {a_rows}, {bd_cols}, {bd_rows})",
                if *preloaded {
                    "preloaded"
                } else {
                    "accumulated"
                },
                fmt_local(*a),
                fmt_local(*bd)
            ),
            Insn::Flush { skip } => write!(f, "gemmini_flush({skip})"),
            Insn::Fence => write!(f, "gemmini_fence()"),
        }
    }
}
