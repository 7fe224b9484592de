//! polyc: the library pipeline behind the `polyc` binary.
