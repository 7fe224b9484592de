//! `polyc explain` for Gemmini: instructions by kind, rows and bytes moved per level, MACs,
//! and BACO's latency, energy and EDP (thesis ch. 6; the constants are the description's
//! `cost` section).
//!
//! Accesses per level are counted in words (elements): DRAM words are the elements that
//! `mvin` and `mvout` move; scratchpad words are those `mvin` writes plus the A and B
//! elements the array reads (`DIM` words per row read: A's rows per compute, B's rows per
//! `preload` of weights, i.e. one row per scratchpad row moved in); accumulator words are
//! the rows the array writes and the rows `mvin`/`mvout` move, `DIM` words each; register
//! accesses are one per MAC. Latency: the compute latency is the array's MACs over the
//! `N_PE` PEs; each level's latency is the largest of the level below and its own
//! transfer time (words ÷ bandwidth), BACO's max(read, write, compute) summed over the
//! trips (the totals already include the trip counts); EDP = energy × latency.

use std::fmt::Write;

use super::codegen::Geometry;
use super::model::Counters;
use crate::desc::TargetDesc;

/// BACO's figures for one kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct Cost {
    /// Word accesses: registers, accumulator, scratchpad, DRAM.
    pub accesses: [f64; 4],
    /// Cycles.
    pub latency: f64,
    /// Energy (the EPA table's units).
    pub energy: f64,
    /// Energy × latency.
    pub edp: f64,
}

/// BACO's latency, energy and EDP for these counts, or `None` without a cost model.
pub fn cost(desc: &TargetDesc, geo: &Geometry, c: &Counters) -> Option<Cost> {
    let m = desc.cost.as_ref()?;
    let d = geo.dim as f64;
    let n_pe = d * d;
    let dram = (c.dram_to_spad_bytes
        + c.dram_to_acc_bytes / 4
        + c.acc_to_dram_bytes / 4
        + c.spad_to_dram_bytes) as f64;
    let spad = (c.dram_to_spad_rows + c.spad_to_dram_rows) as f64 * d
        + (c.compute_preloaded + c.compute_accumulated) as f64 * d * 2.0;
    let acc = (c.array_to_acc_rows + c.dram_to_acc_rows + c.acc_to_dram_rows) as f64 * d;
    let regs = c.macs as f64;
    let bytes = |role: schedule_tree::BufferRole| {
        desc.buffers
            .iter()
            .find(|b| b.role() == role)
            .map(|b| b.bytes as f64 / 1024.0)
            .unwrap_or(0.0)
    };
    let c1 = bytes(schedule_tree::BufferRole::Accumulator);
    let c2 = bytes(schedule_tree::BufferRole::Scratchpad);
    let epa = [
        m.register_epa,
        m.accumulator_epa_base + m.accumulator_epa_slope * c1 / n_pe.sqrt(),
        m.scratchpad_epa_base + m.scratchpad_epa_slope * c2,
        m.dram_epa,
    ];
    let accesses = [regs, acc, spad, dram];
    let bw = [
        2.0 * n_pe,
        2.0 * n_pe.sqrt(),
        2.0 * n_pe.sqrt(),
        m.dram_words_per_cycle,
    ];
    let mut latency = c.array_macs as f64 / n_pe;
    for l in 0..4 {
        latency = latency.max(accesses[l] / bw[l]);
    }
    let energy = c.macs as f64 * m.mac_energy + (0..4).map(|l| accesses[l] * epa[l]).sum::<f64>();
    Some(Cost {
        accesses,
        latency,
        energy,
        edp: energy * latency,
    })
}

/// The explain section for one kernel.
pub fn report(desc: &TargetDesc, geo: &Geometry, c: &Counters) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "gemmini kernel (counted from the instruction program):");
    let _ = writeln!(
        s,
        "  instructions: {} (config_ex {}, config_ld {}, config_st {}, mvin {}, mvout {}, preload {}, compute_preloaded {}, compute_accumulated {}, fence {})",
        c.total_insns(),
        c.config_ex,
        c.config_ld,
        c.config_st,
        c.mvin,
        c.mvout,
        c.preload,
        c.compute_preloaded,
        c.compute_accumulated,
        c.fence
    );
    let _ = writeln!(
        s,
        "  DRAM → scratchpad: {} rows, {} bytes",
        c.dram_to_spad_rows, c.dram_to_spad_bytes
    );
    let _ = writeln!(
        s,
        "  DRAM → accumulator: {} rows, {} bytes",
        c.dram_to_acc_rows, c.dram_to_acc_bytes
    );
    let _ = writeln!(
        s,
        "  accumulator → DRAM: {} rows, {} bytes",
        c.acc_to_dram_rows, c.acc_to_dram_bytes
    );
    let _ = writeln!(s, "  array → accumulator: {} rows", c.array_to_acc_rows);
    let _ = writeln!(
        s,
        "  MACs: {} (array MACs incl. padding: {})",
        c.macs, c.array_macs
    );
    match cost(desc, geo, c) {
        Some(k) => {
            let _ = writeln!(
                s,
                "  BACO: accesses (words) registers {:.0}, accumulator {:.0}, scratchpad {:.0}, DRAM {:.0}",
                k.accesses[0], k.accesses[1], k.accesses[2], k.accesses[3]
            );
            let _ = writeln!(
                s,
                "  BACO: latency {:.0} cycles, energy {:.4e}, EDP {:.4e}",
                k.latency, k.energy, k.edp
            );
        }
        None => {
            let _ = writeln!(s, "  BACO: the description has no `cost` section");
        }
    }
    s
}
