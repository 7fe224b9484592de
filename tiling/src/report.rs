//! What tiling reports: notes, warnings and, per tiled band and level, the sizes and the
//! exact footprints. [`ExplainReport`] adds the per-statement view and prints as a table.

use crate::analysis::TensorFootprint;
use schedule_tree::Buffer;
use std::fmt;

/// One level of one tiled band.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LevelReport {
    /// The buffer the tile's data lives in.
    pub buffer: Buffer,
    /// The size of each band member at this level (`None`: not tiled at this level).
    pub sizes: Vec<Option<i64>>,
    /// The window of each member one tile of this level spans (this level's size, else the
    /// nearest outer level's; `None`: the whole extent).
    pub windows: Vec<Option<i64>>,
    /// The data one tile touches, per tensor.
    pub footprints: Vec<TensorFootprint>,
    /// Their sum in bytes (`None` if some footprint is not a fixed-size box).
    pub total_bytes: Option<u64>,
    /// The buffer's capacity in bytes, if the target gives one.
    pub capacity: Option<u64>,
    /// The buffer is a register file (only promoted register tiles occupy it).
    pub register_file: bool,
}

impl LevelReport {
    /// Capacity minus footprint (negative when it does not fit).
    pub fn left(&self) -> Option<i64> {
        Some(self.capacity? as i64 - self.total_bytes? as i64)
    }
}

/// One tiled band.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BandReport {
    /// Child positions of the band in the input tree.
    pub path: Vec<usize>,
    /// The band as the tree dump shows it.
    pub line: String,
    /// The statements in the band.
    pub statements: Vec<String>,
    /// The statement whose spec gave the sizes (`None` for the default policy).
    pub spec_stmt: Option<String>,
    /// One entry per level, outer first.
    pub levels: Vec<LevelReport>,
}

/// The result of tiling besides the tree.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct TileReport {
    /// Remarks (sizes clamped to extents, capacities not checked).
    pub notes: Vec<String>,
    /// Warnings (a spec that names a statement whose tiles are derived).
    pub warnings: Vec<String>,
    /// Every tiled band.
    pub bands: Vec<BandReport>,
}

/// `polyc explain-tiles`: per statement, its band and the sizes, footprints and capacity
/// left per level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExplainReport {
    /// Per statement (every statement of the program): its name and the indices into
    /// `tiles.bands` of the tiled bands that enclose it, outermost first.
    pub statements: Vec<(String, Vec<usize>)>,
    /// The tiling report.
    pub tiles: TileReport,
    /// With symbolic sizes (and barvinok): per tiled level, the exact per-tile footprints
    /// and the data moved, as quasi-polynomials.
    pub movement: Vec<crate::symbolic::LevelMovement>,
}

fn sizes_text(v: &[Option<i64>]) -> String {
    v.iter()
        .map(|s| s.map_or("-".to_string(), |x| x.to_string()))
        .collect::<Vec<_>>()
        .join(" x ")
}

fn opt(v: Option<u64>) -> String {
    v.map_or("?".into(), |x| x.to_string())
}

impl fmt::Display for ExplainReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (stmt, bands) in &self.statements {
            if bands.is_empty() {
                writeln!(f, "{stmt}: not tiled")?;
                continue;
            }
            let list: Vec<String> = bands.iter().map(|b| format!("#{b}")).collect();
            writeln!(f, "{stmt}: tiled band {}", list.join(", "))?;
        }
        for (i, b) in self.tiles.bands.iter().enumerate() {
            writeln!(f)?;
            let from = b
                .spec_stmt
                .as_ref()
                .map_or("default policy".to_string(), |s| format!("spec of {s}"));
            writeln!(
                f,
                "band #{i} ({}; {from}): {}",
                b.statements.join(", "),
                b.line
            )?;
            writeln!(
                f,
                "  {:<12} {:<16} {:<8} {:<14} {:>10} {:>10}",
                "level", "sizes", "tensor", "box", "elements", "bytes"
            )?;
            for l in &b.levels {
                let mut first = true;
                for fp in &l.footprints {
                    let (lv, sz) = if first {
                        (l.buffer.to_string(), sizes_text(&l.sizes))
                    } else {
                        (String::new(), String::new())
                    };
                    first = false;
                    let apart = (fp.boxes > 1).then(|| format!("{} boxes", fp.boxes));
                    let boxt = fp
                        .box_sizes
                        .as_ref()
                        .map_or(apart.unwrap_or("?".into()), |v| {
                            v.iter()
                                .map(|x| x.to_string())
                                .collect::<Vec<_>>()
                                .join(" x ")
                        });
                    match (&fp.symbolic, fp.elements) {
                        (Some(sym), None) => writeln!(
                            f,
                            "  {:<12} {:<16} {:<8} {:<14} {:>10} {:>10}",
                            lv, sz, fp.tensor, boxt, sym.elements, sym.bytes
                        )?,
                        _ => writeln!(
                            f,
                            "  {:<12} {:<16} {:<8} {:<14} {:>10} {:>10}",
                            lv,
                            sz,
                            fp.tensor,
                            boxt,
                            opt(fp.elements),
                            opt(fp.bytes)
                        )?,
                    }
                }
                if l.register_file {
                    // Only the promoted register tiles live in it (see "promotion").
                    writeln!(
                        f,
                        "  {:<12} total {} bytes touched per tile; the {} bytes of {} hold only the register tiles",
                        "",
                        opt(l.total_bytes),
                        opt(l.capacity),
                        l.buffer
                    )?;
                } else {
                    writeln!(
                        f,
                        "  {:<12} total {} bytes of {} ({} left)",
                        "",
                        opt(l.total_bytes),
                        opt(l.capacity),
                        l.left().map_or("?".into(), |x| x.to_string())
                    )?;
                }
            }
        }
        write!(f, "{}", crate::symbolic::format_movement(&self.movement))?;
        for n in &self.tiles.notes {
            writeln!(f, "note: {n}")?;
        }
        for w in &self.tiles.warnings {
            writeln!(f, "warning: {w}")?;
        }
        Ok(())
    }
}
