//! tiling
