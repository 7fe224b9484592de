//! Sub-step timings: the named parts of a pipeline stage (`tile:footprints`,
//! `codegen:ast_build`, ...). A pass opens a [`span`] around a part; the span adds its wall
//! time and one call to that name's total on this thread when it ends. The pipeline
//! [`take`]s the totals after each stage, so `--timings` can print every stage broken down.
//!
//! Spans nest: an inner span's time is also counted in the outer one's. The name of the
//! innermost open span is also published process-wide ([`current`]), so the progress note of
//! a long compile can say which sub-step it is in.

use std::cell::RefCell;
use std::sync::Mutex;
use std::time::Instant;

/// One sub-step's totals since the last [`take`].
#[derive(Debug, Clone, PartialEq)]
pub struct SubStep {
    /// The sub-step's name, `stage:part`.
    pub name: &'static str,
    /// Total wall time, milliseconds.
    pub ms: f64,
    /// How many times it ran.
    pub calls: u64,
}

thread_local! {
    static TOTALS: RefCell<Vec<SubStep>> = const { RefCell::new(Vec::new()) };
    static OPEN: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
}

/// The innermost open span of the compiling thread (read by the progress watcher).
static CURRENT: Mutex<Option<&'static str>> = Mutex::new(None);

/// A running sub-step; its time is added to the totals when it is dropped.
pub struct Span {
    name: &'static str,
    start: Instant,
}

/// Starts timing the sub-step `name` until the returned guard is dropped.
pub fn span(name: &'static str) -> Span {
    OPEN.with(|o| o.borrow_mut().push(name));
    publish(Some(name));
    Span {
        name,
        start: Instant::now(),
    }
}

/// Times `f` as the sub-step `name`.
pub fn timed<T>(name: &'static str, f: impl FnOnce() -> T) -> T {
    let _s = span(name);
    f()
}

fn publish(name: Option<&'static str>) {
    if let Ok(mut c) = CURRENT.lock() {
        *c = name;
    }
}

impl Drop for Span {
    fn drop(&mut self) {
        let ms = self.start.elapsed().as_secs_f64() * 1e3;
        add(vec![SubStep {
            name: self.name,
            ms,
            calls: 1,
        }]);
        let outer = OPEN.with(|o| {
            let mut o = o.borrow_mut();
            o.pop();
            o.last().copied()
        });
        publish(outer);
    }
}

/// The totals on this thread since the last call, in the order the sub-steps first ran;
/// resets them.
pub fn take() -> Vec<SubStep> {
    TOTALS.with(|t| std::mem::take(&mut *t.borrow_mut()))
}

/// Adds `steps` (another thread's [`take`]n totals) to this thread's totals: a sub-step
/// that ran on several threads at once then counts the time of each.
pub fn add(steps: Vec<SubStep>) {
    TOTALS.with(|t| {
        let mut t = t.borrow_mut();
        for step in steps {
            match t.iter_mut().find(|s| s.name == step.name) {
                Some(s) => {
                    s.ms += step.ms;
                    s.calls += step.calls;
                }
                None => t.push(step),
            }
        }
    });
}

/// The innermost sub-step open now on the compiling thread, if any.
pub fn current() -> Option<&'static str> {
    CURRENT.lock().ok().and_then(|c| *c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_nest_and_count() {
        take();
        {
            let _a = span("t:outer");
            for _ in 0..3 {
                let _b = span("t:inner");
            }
        }
        let got = take();
        let names: Vec<_> = got.iter().map(|s| (s.name, s.calls)).collect();
        assert_eq!(names, vec![("t:inner", 3), ("t:outer", 1)]);
        assert!(got[1].ms >= got[0].ms);
        assert!(take().is_empty());
    }

    #[test]
    fn another_threads_totals_add_up() {
        take();
        {
            let _a = span("t:model");
        }
        let theirs = std::thread::spawn(|| {
            for _ in 0..2 {
                let _b = span("t:model");
            }
            let _c = span("t:isl");
            drop(_c);
            take()
        })
        .join()
        .unwrap();
        let before: f64 = theirs.iter().map(|s| s.ms).sum();
        add(theirs);
        let got = take();
        let names: Vec<_> = got.iter().map(|s| (s.name, s.calls)).collect();
        assert_eq!(names, vec![("t:model", 3), ("t:isl", 1)]);
        assert!(got.iter().map(|s| s.ms).sum::<f64>() >= before);
    }
}
