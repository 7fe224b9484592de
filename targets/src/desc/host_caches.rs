//! The caches of the machine polyc runs on, as Linux reports them.

/// One cache of this machine, from `/sys/devices/system/cpu/cpu0/cache/index*`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostCache {
    /// 1, 2, 3, …
    pub level: u32,
    /// `Data`, `Instruction` or `Unified`.
    pub kind: String,
    /// Size in bytes.
    pub bytes: u64,
}

/// The caches of CPU 0 as Linux reports them (empty where `/sys` is not available), in
/// index order. Instruction caches are included; filter on [`HostCache::kind`].
pub fn detect_host_caches() -> Vec<HostCache> {
    let mut out = Vec::new();
    for i in 0..16 {
        let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
        let read = |f: &str| std::fs::read_to_string(format!("{dir}/{f}")).ok();
        let (Some(level), Some(kind), Some(size)) = (read("level"), read("type"), read("size"))
        else {
            continue;
        };
        let Ok(level) = level.trim().parse::<u32>() else {
            continue;
        };
        let Some(bytes) = parse_size(size.trim()) else {
            continue;
        };
        out.push(HostCache {
            level,
            kind: kind.trim().to_string(),
            bytes,
        });
    }
    out
}

/// `48K` → 49152, `2048K` → 2097152, `260M`, plain bytes.
pub(super) fn parse_size(s: &str) -> Option<u64> {
    let (num, mul) = match s.chars().last()? {
        'K' | 'k' => (&s[..s.len() - 1], 1024),
        'M' | 'm' => (&s[..s.len() - 1], 1024 * 1024),
        'G' | 'g' => (&s[..s.len() - 1], 1024 * 1024 * 1024),
        _ => (s, 1),
    };
    num.trim().parse::<u64>().ok().map(|v| v * mul)
}
