//! The machine a measurement ran on ([`Host`]), recorded with every timed result so that
//! results from different machines are never compared.

use serde::{Deserialize, Serialize};

/// The machine a shard or a measurement ran on.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Host {
    /// The host name (`/proc/sys/kernel/hostname`, else `$HOSTNAME`, else `unknown`).
    pub hostname: String,
    /// The CPU model (`model name` in `/proc/cpuinfo`, else `unknown`).
    pub cpu: String,
    /// Cores polyc may use.
    pub cores: usize,
}

impl Host {
    /// This machine.
    pub fn this() -> Host {
        let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .or_else(|| std::env::var("HOSTNAME").ok())
            .unwrap_or_else(|| "unknown".into());
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|t| {
                t.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        Host {
            hostname,
            cpu,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}
