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

// ---- model: Scop, dependences, schedulers (scop.rs, deps.rs, sched.rs) ------------------

/// Printers for the model's isl objects that do not leak (unlike `isl-rs`'s `to_str`).
pub mod model {
    use std::os::raw::c_char;

    extern "C" {
        /// `char *isl_set_to_str(keep isl_set *set)` — caller frees.
        pub fn isl_set_to_str(set: usize) -> *mut c_char;
        /// `char *isl_union_set_to_str(keep isl_union_set *uset)` — caller frees.
        pub fn isl_union_set_to_str(uset: usize) -> *mut c_char;
        /// `char *isl_map_to_str(keep isl_map *map)` — caller frees.
        pub fn isl_map_to_str(map: usize) -> *mut c_char;
        /// `char *isl_union_map_to_str(keep isl_union_map *umap)` — caller frees.
        pub fn isl_union_map_to_str(umap: usize) -> *mut c_char;
        /// `char *isl_schedule_to_str(keep isl_schedule *schedule)` — caller frees; NULL
        /// when isl fails (a context whose operation budget ran out).
        pub fn isl_schedule_to_str(schedule: usize) -> *mut c_char;
    }

    /// isl's text form of a schedule (what `isl-rs`'s `to_str` gives), `None` when isl
    /// cannot print it: `isl-rs` reads the NULL that isl then returns as a string (a
    /// crash), which a worker whose budget another thread lowered reaches.
    pub fn schedule_text(schedule: &isl_rs::Schedule) -> Option<String> {
        // SAFETY: the schedule is borrowed; the returned string is ours to free.
        unsafe { super::take_isl_string(isl_schedule_to_str(schedule.ptr)) }
    }

    /// isl's text form of a set (`"<error>"` if isl cannot print it).
    pub fn set_text(set: &isl_rs::Set) -> String {
        // SAFETY: the set is borrowed; the returned string is ours to free.
        unsafe { super::take_isl_string(isl_set_to_str(set.ptr)) }
            .unwrap_or_else(|| "<error>".into())
    }
    /// isl's text form of a union set.
    pub fn union_set_text(uset: &isl_rs::UnionSet) -> String {
        // SAFETY: as above.
        unsafe { super::take_isl_string(isl_union_set_to_str(uset.ptr)) }
            .unwrap_or_else(|| "<error>".into())
    }
    /// isl's text form of a map.
    pub fn map_text(map: &isl_rs::Map) -> String {
        // SAFETY: as above.
        unsafe { super::take_isl_string(isl_map_to_str(map.ptr)) }
            .unwrap_or_else(|| "<error>".into())
    }
    /// isl's text form of a union map.
    pub fn union_map_text(umap: &isl_rs::UnionMap) -> String {
        // SAFETY: as above.
        unsafe { super::take_isl_string(isl_union_map_to_str(umap.ptr)) }
            .unwrap_or_else(|| "<error>".into())
    }
}

// ---- targets: AST generation (targets/src/codegen/lower.rs) -------------------------------------

/// isl's AST generator and the few id helpers that code generation needs.
pub mod ast_build {
    use std::os::raw::{c_char, c_int, c_void};

    extern "C" {
        /// `isl_ast_build *isl_ast_build_from_context(take isl_set *set)` — give.
        pub fn isl_ast_build_from_context(set: usize) -> usize;
        /// `isl_ast_node *isl_ast_build_node_from_schedule(keep isl_ast_build *build,
        /// take isl_schedule *schedule)` — give.
        pub fn isl_ast_build_node_from_schedule(build: usize, schedule: usize) -> usize;
        /// `isl_ast_build *isl_ast_build_free(take isl_ast_build *build)` — returns NULL.
        pub fn isl_ast_build_free(build: usize) -> usize;
        /// `isl_stat isl_options_set_ast_build_atomic_upper_bound(isl_ctx *ctx, int val)`.
        pub fn isl_options_set_ast_build_atomic_upper_bound(ctx: usize, val: c_int) -> c_int;
        /// `isl_stat isl_options_set_ast_build_detect_min_max(isl_ctx *ctx, int val)`.
        pub fn isl_options_set_ast_build_detect_min_max(ctx: usize, val: c_int) -> c_int;
        /// `isl_id *isl_id_alloc(isl_ctx *ctx, const char *name, void *user)` — give.
        pub fn isl_id_alloc(ctx: usize, name: *const c_char, user: *mut c_void) -> usize;
        /// `void *isl_id_get_user(keep isl_id *id)`.
        pub fn isl_id_get_user(id: usize) -> *mut c_void;
        /// `enum isl_ast_node_type isl_ast_node_get_type(keep isl_ast_node *node)`.
        /// (`isl-rs` 0.3.1 maps these values off by one, so use [`AstNodeKind`].)
        pub fn isl_ast_node_get_type(node: usize) -> c_int;
    }

    /// isl's `enum isl_ast_node_type`, with isl's values.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum AstNodeKind {
        /// `isl_ast_node_for` (1)
        For,
        /// `isl_ast_node_if` (2)
        If,
        /// `isl_ast_node_block` (3)
        Block,
        /// `isl_ast_node_mark` (4)
        Mark,
        /// `isl_ast_node_user` (5)
        User,
        /// `isl_ast_node_error` (-1) or anything else
        Error,
    }

    /// The kind of an AST node (`node` is a live `isl_ast_node *`).
    pub fn ast_node_kind(node: usize) -> AstNodeKind {
        // SAFETY: reads the type field of a live node (isl checks for NULL).
        match unsafe { isl_ast_node_get_type(node) } {
            1 => AstNodeKind::For,
            2 => AstNodeKind::If,
            3 => AstNodeKind::Block,
            4 => AstNodeKind::Mark,
            5 => AstNodeKind::User,
            _ => AstNodeKind::Error,
        }
    }
}

// ---- schedule_tree: printers for band schedules and expansions (schedule_tree/src/) -----

/// Printers for the schedule-tree objects `model` does not cover; they return `None` when
/// isl cannot print (NULL), and never leak.
pub mod schedule_tree {
    use std::os::raw::c_char;

    extern "C" {
        /// `char *isl_multi_union_pw_aff_to_str(keep isl_multi_union_pw_aff *mupa)` —
        /// caller frees.
        pub fn isl_multi_union_pw_aff_to_str(mupa: usize) -> *mut c_char;
        /// `char *isl_union_pw_multi_aff_to_str(keep isl_union_pw_multi_aff *upma)` —
        /// caller frees.
        pub fn isl_union_pw_multi_aff_to_str(upma: usize) -> *mut c_char;
    }

    /// isl's text form of a multi union piecewise affine expression (a band's schedule).
    pub fn multi_union_pw_aff_text(mupa: &isl_rs::MultiUnionPwAff) -> Option<String> {
        // SAFETY: the object is borrowed; the returned string is ours to free.
        unsafe { super::take_isl_string(isl_multi_union_pw_aff_to_str(mupa.ptr)) }
    }
    /// isl's text form of a union piecewise multi-affine expression (a contraction).
    pub fn union_pw_multi_aff_text(upma: &isl_rs::UnionPwMultiAff) -> Option<String> {
        // SAFETY: as above.
        unsafe { super::take_isl_string(isl_union_pw_multi_aff_to_str(upma.ptr)) }
    }
}

// ---- tiling: exact counts for post-tiling fusion (tiling/src/fuse.rs) --------------------

/// Exact counting of the points of a set, for the recomputation cost of post-tiling fusion.
pub mod count {
    extern "C" {
        /// `isl_val *isl_set_count_val(keep isl_set *set)` — the number of points of a
        /// bounded set without parameters (NaN or infinity otherwise).
        pub fn isl_set_count_val(set: usize) -> usize;
    }

    /// Sets whose bounding box holds at most this many points are counted by isl, which
    /// enumerates them (about 50 ns a point); larger ones that are not boxes need barvinok.
    pub const ENUMERATE_LIMIT: u128 = 1 << 24;

    /// The number of points of `set`, or `None` when no finite integer can be given at
    /// once (parameters that take several values, an unbounded set, a large non-box set
    /// while barvinok is not installed, or an isl error).
    ///
    /// isl counts by enumerating the points, so a 2^24 × 2^24 set would take days: a box
    /// (or a disjoint union of boxes) is counted from its bounds, a small set by isl, and
    /// a large one by barvinok when it is there.
    pub fn set_count(set: &isl_rs::Set) -> Option<u64> {
        // isl gives no number for a set whose parameters take more than one value, but
        // only after enumerating them as if they were variables (minutes for a convolution
        // with a symbolic kernel size next to a 2048-wide image): answer at once. Fixed
        // parameters (`N = 37`) count.
        let params = set.dim(isl_rs::DimType::Param).ok()?;
        for i in 0..params.max(0) as u32 {
            let v = set.plain_get_val_if_fixed(isl_rs::DimType::Param, i).ok()?;
            if !v.is_int().ok()? {
                return None;
            }
        }
        let fixed = set
            .copy()
            .ok()?
            .project_out(isl_rs::DimType::Param, 0, params.max(0) as u32)
            .ok()?;
        if let Some(n) = boxes_count(&fixed) {
            return u64::try_from(n).ok();
        }
        if bounding_volume(&fixed)? <= ENUMERATE_LIMIT {
            return isl_count(&fixed);
        }
        barvinok_count(&fixed)
    }

    /// `(min, max)` of every dimension of a parameter-free, non-empty set (`None` when a
    /// bound is not an integer: symbolic sizes, an empty set).
    pub fn bounds(set: &isl_rs::Set) -> Option<Vec<(i128, i128)>> {
        let n = set.dim(isl_rs::DimType::Set).ok()?;
        let mut out = Vec::with_capacity(n.max(0) as usize);
        for d in 0..n {
            let lo = set.copy().ok()?.dim_min_val(d).ok()?;
            let hi = set.copy().ok()?.dim_max_val(d).ok()?;
            if !lo.is_int().ok()? || !hi.is_int().ok()? {
                return None;
            }
            let text = |v: &isl_rs::Val| v.to_str().ok()?.parse::<i128>().ok();
            out.push((text(&lo)?, text(&hi)?));
        }
        Some(out)
    }

    /// The number of points of the bounding box of a parameter-free set (0 when empty).
    fn bounding_volume(set: &isl_rs::Set) -> Option<u128> {
        if set.is_empty().ok()? {
            return Some(0);
        }
        Some(bounds(set)?.iter().fold(1u128, |v, (lo, hi)| {
            v.saturating_mul((hi - lo + 1).max(0) as u128)
        }))
    }

    /// The count of a parameter-free set that is a disjoint union of boxes, from their
    /// bounds; `None` when some piece is not a box.
    fn boxes_count(set: &isl_rs::Set) -> Option<u128> {
        let pieces = set.copy().ok()?.coalesce().ok()?.make_disjoint().ok()?;
        let list = pieces.get_basic_set_list().ok()?;
        let mut total: u128 = 0;
        for i in 0..list.size().ok()? {
            let piece = isl_rs::Set::from_basic_set(list.get_at(i).ok()?).ok()?;
            if piece.is_empty().ok()? {
                continue;
            }
            if !piece.is_box().ok()? {
                return None;
            }
            total = total.checked_add(bounding_volume(&piece)?)?;
        }
        Some(total)
    }

    /// isl's own count (enumeration).
    fn isl_count(set: &isl_rs::Set) -> Option<u64> {
        // SAFETY: the set is borrowed (`keep`); the returned value is ours and is freed by
        // the wrapper.
        let p = unsafe { isl_set_count_val(set.ptr) };
        if p == 0 {
            return None;
        }
        let v = isl_rs::Val {
            ptr: p,
            should_free_on_drop: true,
        };
        if !v.is_int().ok()? {
            return None;
        }
        u64::try_from(v.get_num_si().ok()?).ok()
    }

    thread_local! {
        static BARVINOK: Option<crate::barvinok::Barvinok> = crate::barvinok::Barvinok::load().ok();
    }

    /// barvinok's count of a parameter-free set, when barvinok is installed and no other
    /// barvinok computation is running (an abandoned explain bound may hold the lock for
    /// long: then there is no count rather than a wait).
    fn barvinok_count(set: &isl_rs::Set) -> Option<u64> {
        let _held = crate::barvinok::LOCK.try_lock().ok()?;
        let text = set.to_str().ok()?.to_string();
        let card = BARVINOK
            .with(|b| b.as_ref().map(|b| b.set_card(&text)))?
            .ok()?;
        // `{ 123 }`, or `{ 0 }` for an empty set.
        let inner = card
            .trim()
            .trim_start_matches('{')
            .trim_end_matches('}')
            .trim();
        inner.parse::<u64>().ok()
    }
}

// ---- targets: memory promotion in AST generation (targets/src/codegen/lower.rs, promote.rs) -----

/// AST-build callbacks for memory promotion: the generator reports each statement instance
/// and each mark it enters or leaves, so that accesses to promoted tensors can be
/// re-indexed in terms of the loop iterators (the way PPCG does it).
pub mod promote {
    use std::os::raw::{c_int, c_void};

    /// `isl_ast_node *(*)(take isl_ast_node *node, keep isl_ast_build *build, void *user)`.
    pub type NodeCallback = unsafe extern "C" fn(usize, usize, *mut c_void) -> usize;
    /// `isl_stat (*)(keep isl_id *mark, keep isl_ast_build *build, void *user)`.
    pub type MarkCallback = unsafe extern "C" fn(usize, usize, *mut c_void) -> c_int;

    extern "C" {
        /// `isl_ast_build *isl_ast_build_set_at_each_domain(take isl_ast_build *build,
        /// fn, void *user)` — give.
        pub fn isl_ast_build_set_at_each_domain(
            build: usize,
            f: NodeCallback,
            user: *mut c_void,
        ) -> usize;
        /// `isl_ast_build *isl_ast_build_set_before_each_mark(take isl_ast_build *build,
        /// fn, void *user)` — give.
        pub fn isl_ast_build_set_before_each_mark(
            build: usize,
            f: MarkCallback,
            user: *mut c_void,
        ) -> usize;
        /// `isl_ast_build *isl_ast_build_set_after_each_mark(take isl_ast_build *build,
        /// fn, void *user)` — give.
        pub fn isl_ast_build_set_after_each_mark(
            build: usize,
            f: NodeCallback,
            user: *mut c_void,
        ) -> usize;
        /// `isl_union_map *isl_ast_build_get_schedule(keep isl_ast_build *build)` — give:
        /// from the statement instances to the outer schedule dimensions.
        pub fn isl_ast_build_get_schedule(build: usize) -> usize;
        /// `isl_ast_expr *isl_ast_build_expr_from_pw_aff(keep isl_ast_build *build,
        /// take isl_pw_aff *pa)` — give.
        pub fn isl_ast_build_expr_from_pw_aff(build: usize, pa: usize) -> usize;
        /// `isl_ast_node *isl_ast_node_free(take isl_ast_node *node)` — returns NULL.
        pub fn isl_ast_node_free(node: usize) -> usize;
    }
}

// ---- model: isl's scheduler under an operation budget (sched.rs) ------------------------

/// isl's scheduler called directly, so that the caller reads the context's error kind
/// (`isl-rs` clears it before returning) and tells an exhausted budget from a failure.
pub mod sched {
    extern "C" {
        /// `isl_schedule *isl_schedule_constraints_compute_schedule(take
        /// isl_schedule_constraints *sc)` — give; NULL on error.
        pub fn isl_schedule_constraints_compute_schedule(sc: usize) -> usize;
        /// `void isl_ctx_set_max_operations(isl_ctx *ctx, unsigned long max_operations)`:
        /// the running computation stops with `isl_error_quota` once it has done that many
        /// operations.
        pub fn isl_ctx_set_max_operations(ctx: usize, max_operations: u64);
    }
}

#[cfg(test)]
mod tests {
    use super::count::set_count;
    use crate::isl::Ctx;

    fn count(text: &str) -> Option<u64> {
        let ctx = Ctx::new();
        set_count(&isl_rs::Set::read_from_str(&ctx.isl, text).expect("a set"))
    }

    #[test]
    fn sets_with_parameters_have_no_count() {
        assert_eq!(count("{ [i, j] : 0 <= i < 10 and 0 <= j <= i }"), Some(55));
        // isl counts only where the parameters take one value.
        assert_eq!(count("[N] -> { [i] : 0 <= i < 10 }"), None);
        assert_eq!(count("[N] -> { [i] : 0 <= i < N and N = 7 }"), Some(7));
        assert_eq!(count("[N] -> { [i] : 0 <= i < N }"), None);
        // A symbolic kernel size next to a large bound image size (isl would enumerate
        // KW as a variable for minutes).
        assert_eq!(
            count("[KW] -> { [h, w] : 0 <= h < 2048 and 0 <= w <= 2048 - KW and KW >= 1 }"),
            None
        );
    }

    #[test]
    fn huge_boxes_count_from_their_bounds() {
        // 2^48 points: isl would enumerate them for days.
        assert_eq!(
            count("{ [i, j] : 0 <= i < 16777216 and 0 <= j < 16777216 }"),
            Some(1 << 48)
        );
        // Two boxes side by side, one with fixed parameters.
        assert_eq!(
            count("[N] -> { [i, j] : N = 1000000 and 0 <= i < N and 0 <= j < 3; [i, j] : N = 1000000 and 2 * N <= i < 3 * N and 0 <= j < 2 }"),
            Some(5_000_000)
        );
        // Small non-boxes are still exact.
        assert_eq!(
            count("{ [i, j] : 0 <= i < 100 and 0 <= j <= i }"),
            Some(5050)
        );
    }
}
