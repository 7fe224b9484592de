//! Symbolic sizes at the extent the default tiling policy assumes for them
//! ([`tiling::ASSUMED_EXTENT`]), for the decisions that need a number (promotion's
//! footprints, the CPU's choice of a parallel loop).

use isl_rs::{DimType, Set, Space};
use miette::Result;
use polyhedral::isl::IslResultExt;

/// The parameter set of `space` with every size parameter at [`tiling::ASSUMED_EXTENT`]
/// (the extent the default policy assumes for a symbolic size); `None` without
/// parameters.
pub fn assumed_sizes(space: Space) -> Result<Option<Set>> {
    let n = space.dim(DimType::Param).isl("counting parameters")?;
    if n <= 0 {
        return Ok(None);
    }
    let names = (0..n as u32)
        .map(|i| {
            space
                .get_dim_name(DimType::Param, i)
                .map(str::to_string)
                .isl("reading a parameter's name")
        })
        .collect::<Result<Vec<String>>>()?;
    let text = format!(
        "[{}] -> {{ : {} }}",
        names.join(", "),
        names
            .iter()
            .map(|p| format!("{p} = {}", tiling::ASSUMED_EXTENT))
            .collect::<Vec<_>>()
            .join(" and ")
    );
    Set::read_from_str(&space.get_ctx(), &text)
        .isl(&format!("reading `{text}`"))
        .map(Some)
}
