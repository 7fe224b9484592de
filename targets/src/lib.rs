//! polyc's targets (being written).
