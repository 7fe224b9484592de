//! The isl context and the glue around `isl-rs`.
//!
//! polyc uses `isl-rs` for everything it offers and declares the few isl C functions it
//! lacks in [`ffi`]. Every isl failure becomes a Rust error through [`IslResultExt::isl`];
//! the context is created with `on_error = continue`, so isl never aborts the process and
//! never prints on its own.

pub mod ffi;

pub use isl_rs;
use isl_rs::{Context, LibISLError};

/// isl's `ISL_ON_ERROR_CONTINUE`.
const ISL_ON_ERROR_CONTINUE: i32 = 1;

/// An isl context configured for polyc. Every isl object of one compilation belongs to one
/// `Ctx`; drop the objects before the context.
pub struct Ctx {
    /// The underlying `isl-rs` context.
    pub isl: Context,
}

impl Ctx {
    /// A fresh context whose errors are reported, not printed or fatal.
    pub fn new() -> Ctx {
        let isl = Context::alloc();
        // Setting an option on a fresh context cannot fail; ignore the status.
        let _ = isl_rs::Options::set_on_error(&isl, ISL_ON_ERROR_CONTINUE);
        Ctx { isl }
    }
    /// The raw `isl_ctx*`, for [`ffi`] calls.
    pub fn ptr(&self) -> usize {
        self.isl.ptr
    }
    /// The message of the last isl error, if any, and clears it.
    pub fn take_error(&self) -> Option<String> {
        let e = self.isl.last_error();
        if e == isl_rs::Error::None_ {
            return None;
        }
        let msg = self.isl.last_error_msg().to_string();
        self.isl.reset_error();
        Some(msg)
    }
}

impl Default for Ctx {
    fn default() -> Self {
        Ctx::new()
    }
}

/// Turns `isl-rs` results into polyc errors that say what polyc was doing.
pub trait IslResultExt<T> {
    /// Maps an isl failure to a diagnostic naming the operation (`what`).
    fn isl(self, what: &str) -> miette::Result<T>;
}

impl<T> IslResultExt<T> for Result<T, LibISLError> {
    fn isl(self, what: &str) -> miette::Result<T> {
        self.map_err(|e| {
            miette::miette!(
                help = "this is an internal error in polyc's use of isl; please report it with the program",
                "isl failed while {what}: {e}"
            )
        })
    }
}
