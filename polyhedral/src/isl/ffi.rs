//! isl C functions that `isl-rs` 0.3 does not wrap, declared here and nowhere else.
//!
//! isl itself is built and linked by `isl-rs` (static `libisl.a`), so these declarations
//! resolve against the same library. Pointers are `usize`, as in `isl-rs`, so objects move
//! freely between the two: take `obj.ptr` (after `do_not_free_on_drop` when isl takes
//! ownership) and wrap results in the `isl-rs` struct with `should_free_on_drop: true`.
//!
//! Sections are grouped by the part of polyc that needs them. Each function keeps isl's
//! ownership annotations in its comment: `take` consumes the argument, `keep` borrows it,
//! `give` returns a new reference.
#![allow(missing_docs)]

use std::os::raw::{c_char, c_int};

extern "C" {
    // ---- strings and printers -------------------------------------------------------
    /// `isl_printer *isl_printer_to_str(isl_ctx *ctx)` — give.
    pub fn isl_printer_to_str(ctx: usize) -> usize;
    /// `isl_printer *isl_printer_set_yaml_style(take isl_printer *p, int yaml_style)`.
    pub fn isl_printer_set_yaml_style(p: usize, style: c_int) -> usize;
    /// `isl_printer *isl_printer_print_schedule(take p, keep isl_schedule *s)`.
    pub fn isl_printer_print_schedule(p: usize, s: usize) -> usize;
    /// `char *isl_printer_get_str(keep isl_printer *p)` — caller frees.
    pub fn isl_printer_get_str(p: usize) -> *mut c_char;
    /// `isl_printer *isl_printer_free(take isl_printer *p)`.
    pub fn isl_printer_free(p: usize) -> usize;
}

/// isl's `ISL_YAML_STYLE_BLOCK`.
pub const ISL_YAML_STYLE_BLOCK: c_int = 0;
/// isl's `ISL_YAML_STYLE_FLOW`.
pub const ISL_YAML_STYLE_FLOW: c_int = 1;

/// Takes ownership of a string isl allocated, copies it and frees it. `None` for NULL.
///
/// # Safety
/// `p` must be NULL or a string allocated by isl with `malloc` that nobody else frees.
pub unsafe fn take_isl_string(p: *mut c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    let s = std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned();
    libc::free(p as *mut libc::c_void);
    Some(s)
}

/// Prints a schedule in isl's YAML block style (what `polyc dump --format isl` shows and
/// what isl's own parser reads back).
pub fn schedule_to_block_yaml(schedule: &isl_rs::Schedule) -> Option<String> {
    let ctx = schedule.get_ctx();
    // SAFETY: the printer is created, used and freed here; the schedule is only borrowed.
    unsafe {
        let p = isl_printer_to_str(ctx.ptr);
        let p = isl_printer_set_yaml_style(p, ISL_YAML_STYLE_BLOCK);
        let p = isl_printer_print_schedule(p, schedule.ptr);
        let s = take_isl_string(isl_printer_get_str(p));
        isl_printer_free(p);
        s
    }
}

/// Prints a schedule in isl's flow style (one line).
pub fn schedule_to_flow_yaml(schedule: &isl_rs::Schedule) -> Option<String> {
    let ctx = schedule.get_ctx();
    // SAFETY: as above.
    unsafe {
        let p = isl_printer_to_str(ctx.ptr);
        let p = isl_printer_set_yaml_style(p, ISL_YAML_STYLE_FLOW);
        let p = isl_printer_print_schedule(p, schedule.ptr);
        let s = take_isl_string(isl_printer_get_str(p));
        isl_printer_free(p);
        s
    }
}
