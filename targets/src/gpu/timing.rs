//! An analytical model of a GPU kernel's time, in the spirit of ALCOP's: how many blocks
//! an SM holds at once (threads, registers and shared memory), how many waves the grid
//! takes, the arithmetic and the DRAM traffic of a wave at the description's peak and
//! bandwidth, and the load latency that a pipeline's stages and the other resident blocks
//! leave exposed. `polyc explain` prints it per kernel with its terms, and `--search
//! model` ranks tile sizes on GPU targets by its total ([`crate::Target::model_cost`]).
//!
//! For one launch of a kernel with `B` blocks of `T` threads, `S` bytes of shared memory
//! and `R` registers per thread, whose blocks each do `F` operations in `n` steps of its
//! pipelined loop (1 without one) with `s` stages, and move `G` bytes of DRAM traffic:
//!
//! ```text
//! b          = min(2048 / T, 65536 / (R·T), 32, S_sm / S)  blocks resident per SM
//! full, rest = B div (SMs·b), B mod (SMs·b)                full waves, blocks of the last
//! c          = F / n / (P / SMs)                           one step of one block, alone on its SM
//! wave(x, a) = max(x·F / (P / SMs) + n·max(0, L − (x·s − 1)·c),   x blocks per SM,
//!                  a·G / W)                                       a blocks in all
//! time       = full·wave(b, SMs·b) + wave(ceil(rest / SMs), rest) + launch
//! ```
//!
//! (the last term only where `rest > 0`), with the description's peak `P` (FLOP/s), DRAM
//! bandwidth `W`, SMs and shared memory per SM `S_sm`, a DRAM latency `L` of
//! [`LOAD_LATENCY_NS`] and a launch overhead of [`LAUNCH_US`]. While one block waits for a
//! step's loads, the SM can run the `s − 1` staged steps of every resident block and the
//! current steps of the others: `x·s − 1` steps of work hide the latency. A kernel's registers are estimated as its register
//! tiles plus [`REGISTER_OVERHEAD`], at most 255 and at most what lets one block fit an SM
//! (ptxas caps them there and spills; its own count, which `explain` prints beside, needs
//! nvcc and is not used, so that the figure is the same on every machine).
//!
//! Not modelled: the coalescing of global accesses, shared-memory bandwidth and bank
//! conflicts, instruction issue and spills. The model ranks tile sizes; it does not
//! predict times (the README compares it with the last H100 measurements).

use crate::gpu::module::{BlockModel, BLOCKS_PER_SM, REGISTERS_PER_SM, THREADS_PER_SM};

/// The latency of a DRAM load, in nanoseconds (about 800 cycles at 1.6 GHz; an
/// assumption of the model, not a figure of the description).
pub const LOAD_LATENCY_NS: f64 = 500.0;
/// The host's overhead per kernel launch, in microseconds.
pub const LAUNCH_US: f64 = 3.0;
/// Registers a thread needs beyond its register tiles (addresses, indices, loop
/// counters, staged operands).
pub const REGISTER_OVERHEAD: i64 = 40;

/// The figures of the GPU the model needs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Machine {
    /// Occupancy figures: SMs and shared memory per SM.
    pub blocks: BlockModel,
    /// Peak arithmetic, in GFLOP/s.
    pub peak_gflops: f64,
    /// DRAM bandwidth, in GB/s.
    pub dram_gbytes_per_s: f64,
}

/// What the model needs of one kernel, over all its launches.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KernelLoad {
    /// Blocks per launch.
    pub blocks: i64,
    /// Threads per block.
    pub threads: i64,
    /// Shared memory per block, in bytes.
    pub shared: i64,
    /// Registers per thread.
    pub registers: i64,
    /// Operations over all launches.
    pub flops: u64,
    /// DRAM bytes over all launches.
    pub bytes: u64,
    /// Launches.
    pub launches: u64,
    /// Steps of the block's pipelined loop (1 without one).
    pub steps: i64,
    /// The pipeline's stages (1 without one).
    pub stages: i64,
}

/// The model's terms for one kernel (times in milliseconds).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// Blocks resident per SM.
    pub resident: i64,
    /// What limits them: `threads`, `registers`, `blocks` or `shared memory`.
    pub limit: &'static str,
    /// Waves per launch.
    pub waves: i64,
    /// One wave's arithmetic, exposed latency included.
    pub compute_ms: f64,
    /// Of which the exposed load latency.
    pub stall_ms: f64,
    /// One wave's DRAM traffic.
    pub memory_ms: f64,
    /// All launches: waves × the larger of the two, plus the launch overhead.
    pub total_ms: f64,
}

impl Estimate {
    /// The line `polyc explain` prints.
    pub fn describe(&self) -> String {
        format!(
            "model: {} block(s) per SM (limited by {}), {} wave(s) per launch; per wave {:.4} ms of arithmetic (of which {:.4} ms exposed load latency) and {:.4} ms of DRAM traffic: {:.4} ms in all, {}",
            self.resident,
            self.limit,
            self.waves,
            self.compute_ms,
            self.stall_ms,
            self.memory_ms,
            self.total_ms,
            if self.compute_ms >= self.memory_ms {
                "compute-bound"
            } else {
                "memory-bound"
            }
        )
    }
}

/// Blocks of `k` that one SM holds at once, and what limits them.
fn residency(m: &Machine, k: &KernelLoad) -> (i64, &'static str) {
    let threads = k.threads.max(1);
    let mut limits = vec![
        (THREADS_PER_SM / threads, "threads"),
        (
            REGISTERS_PER_SM / (threads * k.registers.max(1)),
            "registers",
        ),
        (BLOCKS_PER_SM, "blocks"),
    ];
    if k.shared > 0 {
        limits.push((m.blocks.shared_bytes / k.shared, "shared memory"));
    }
    limits
        .into_iter()
        .min_by_key(|(n, _)| *n)
        .unwrap_or((1, "blocks"))
}

/// The model's estimate for `k` on `m` (see the module documentation); `None` where a
/// block does not fit an SM at all, or the machine's figures are not positive.
pub fn estimate(m: &Machine, k: &KernelLoad) -> Option<Estimate> {
    let (resident, limit) = residency(m, k);
    if resident < 1 || m.peak_gflops <= 0.0 || m.dram_gbytes_per_s <= 0.0 {
        return None;
    }
    let sms = m.blocks.sms.max(1);
    let launches = k.launches.max(1);
    let blocks = k.blocks.max(1);
    let slots = sms * resident;
    let (full, rest) = (blocks / slots, blocks % slots);
    let wave = Wave::of(m, k);
    // The first wave's terms are the ones printed: a full wave's, or the only one.
    let first = if full > 0 {
        wave.at(resident, slots)
    } else {
        wave.at((rest + sms - 1) / sms, rest)
    };
    let mut per_launch = full as f64 * wave.at(resident, slots).time();
    if rest > 0 {
        per_launch += wave.at((rest + sms - 1) / sms, rest).time();
    }
    Some(Estimate {
        resident,
        limit,
        waves: full + i64::from(rest > 0),
        compute_ms: first.0,
        stall_ms: first.1,
        memory_ms: first.2,
        total_ms: launches as f64 * (per_launch + LAUNCH_US * 1e-3),
    })
}

/// One block's work, as a wave's time needs it (milliseconds and bytes).
struct Wave {
    /// A block's arithmetic alone on its SM.
    block_ms: f64,
    /// One step of it.
    step_ms: f64,
    /// Steps and stages.
    steps: f64,
    stages: f64,
    /// A block's DRAM traffic over the bandwidth.
    block_memory_ms: f64,
}

impl Wave {
    fn of(m: &Machine, k: &KernelLoad) -> Wave {
        let per_block = (k.launches.max(1) * k.blocks.max(1) as u64) as f64;
        let sm_flops_per_ms = m.peak_gflops * 1e6 / m.blocks.sms.max(1) as f64;
        let block_ms = k.flops as f64 / per_block / sm_flops_per_ms;
        let steps = k.steps.max(1) as f64;
        Wave {
            block_ms,
            step_ms: block_ms / steps,
            steps,
            stages: k.stages.max(1) as f64,
            block_memory_ms: k.bytes as f64 / per_block / (m.dram_gbytes_per_s * 1e6),
        }
    }

    /// A wave with `per_sm` blocks on each SM and `active` blocks in all: its arithmetic
    /// (stall included), its exposed load latency and its DRAM traffic.
    fn at(&self, per_sm: i64, active: i64) -> WaveTerms {
        let b = per_sm.max(1) as f64;
        let hidden = (b * self.stages - 1.0) * self.step_ms;
        let stall = self.steps * (LOAD_LATENCY_NS * 1e-6 - hidden).max(0.0);
        WaveTerms(
            b * self.block_ms + stall,
            stall,
            active as f64 * self.block_memory_ms,
        )
    }
}

/// A wave's arithmetic (stall included), stall and DRAM traffic, in milliseconds.
#[derive(Clone, Copy)]
struct WaveTerms(f64, f64, f64);

impl WaveTerms {
    fn time(self) -> f64 {
        self.0.max(self.2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h100() -> Machine {
        Machine {
            blocks: BlockModel {
                sms: 132,
                warp: 32,
                registers_per_thread: 128,
                shared_bytes: 232448,
            },
            peak_gflops: 67000.0,
            dram_gbytes_per_s: 3350.0,
        }
    }

    fn sgemm() -> KernelLoad {
        // 4096³ in 128 × 128 blocks of 256 threads, 16-deep K steps, 2 stages.
        KernelLoad {
            blocks: 1024,
            threads: 256,
            shared: 33280,
            registers: 104,
            flops: 2 * 4096u64.pow(3),
            bytes: 4362076160,
            launches: 1,
            steps: 256,
            stages: 2,
        }
    }

    #[test]
    fn occupancy_waves_and_terms_follow_the_equations() {
        let e = estimate(&h100(), &sgemm()).unwrap();
        // 65536 / (104 · 256) = 2 blocks by registers (threads allow 8, shared 6).
        assert_eq!((e.resident, e.limit), (2, "registers"));
        // 1024 blocks over 132 · 2 slots.
        assert_eq!(e.waves, 4);
        let per_block = 2.0 * 4096f64.powi(3) / 1024.0;
        let sm = 67000.0e6 / 132.0;
        let step = per_block / 256.0 / sm;
        let stall = 256.0 * (500e-6 - 3.0 * step).max(0.0);
        assert!((e.stall_ms - stall).abs() < 1e-12, "{e:?}");
        assert!((e.compute_ms - (2.0 * per_block / sm + stall)).abs() < 1e-12);
        let memory = 2.0 * 132.0 * (4362076160.0 / 1024.0) / 3350.0e6;
        assert!((e.memory_ms - memory).abs() < 1e-12);
        assert!((e.total_ms - (4.0 * e.compute_ms.max(memory) + 0.003)).abs() < 1e-12);
    }

    #[test]
    fn stages_and_resident_blocks_hide_the_load_latency() {
        let m = h100();
        let k = KernelLoad {
            steps: 4096,
            ..sgemm()
        };
        let two = estimate(&m, &k).unwrap();
        let four = estimate(&m, &KernelLoad { stages: 4, ..k }).unwrap();
        assert!(four.stall_ms < two.stall_ms, "{two:?} {four:?}");
        // One stage and one resident block: every step waits the whole latency.
        let alone = KernelLoad {
            stages: 1,
            registers: 255,
            ..k
        };
        let e = estimate(&m, &alone).unwrap();
        assert_eq!(e.resident, 1);
        assert!((e.stall_ms - 4096.0 * 500e-6).abs() < 1e-9, "{e:?}");
    }

    #[test]
    fn a_partial_wave_runs_its_blocks_alone() {
        // 56 blocks on 132 SMs: one per SM, each at the SM's whole peak, whatever the
        // occupancy would allow; the traffic is the 56 blocks'.
        let k = KernelLoad {
            blocks: 56,
            flops: 56 * 1_000_000_000,
            bytes: 56 * 1_000_000,
            ..sgemm()
        };
        let e = estimate(&h100(), &k).unwrap();
        assert_eq!((e.resident, e.waves), (2, 1));
        let block = 1e9 / (67000.0e6 / 132.0);
        assert!((e.compute_ms - block).abs() < 1e-9, "{e:?}");
        assert!((e.memory_ms - 56.0 * 1e6 / 3350.0e6).abs() < 1e-12, "{e:?}");
        // 1024 blocks: 3 full waves of 264, then 232 blocks, 2 per SM.
        let e = estimate(&h100(), &sgemm()).unwrap();
        let last = 232.0 * (4362076160.0 / 1024.0) / 3350.0e6;
        assert!(
            (e.total_ms - (3.0 * e.compute_ms.max(e.memory_ms) + e.compute_ms.max(last) + 0.003))
                .abs()
                < 1e-12
        );
    }

    #[test]
    fn a_block_that_does_not_fit_has_no_estimate() {
        let k = KernelLoad {
            shared: 300_000,
            ..sgemm()
        };
        assert_eq!(estimate(&h100(), &k), None);
        let e = estimate(
            &h100(),
            &KernelLoad {
                shared: 200_000,
                ..sgemm()
            },
        )
        .unwrap();
        assert_eq!((e.resident, e.limit), (1, "shared memory"));
    }

    #[test]
    fn the_line_names_every_term() {
        let e = estimate(&h100(), &sgemm()).unwrap();
        let line = e.describe();
        assert!(
            line.starts_with(
                "model: 2 block(s) per SM (limited by registers), 4 wave(s) per launch; per wave "
            ),
            "{line}"
        );
        assert!(line.ends_with("compute-bound"), "{line}");
    }
}
