//! A bound on the simulator's memory: a counting global allocator, and a
//! limit past which an execution ends with outcome `limit` (memory) instead
//! of the process being killed when the machine runs out.
//!
//! A binary opts in by installing [`CountingAlloc`] as its global
//! allocator and calling [`set_limit`]; executions check the count every
//! 64 steps. Like the wall-clock timeout, the bound is a resource of the
//! process, not part of the model: it stops a run, it never steers one.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering};

/// Bytes allocated and not freed, as far as the threads have reported.
static LIVE: AtomicIsize = AtomicIsize::new(0);
static INSTALLED: AtomicBool = AtomicBool::new(false);
static LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);

/// Each thread keeps its own running count and reports it to `LIVE` only
/// once it has moved this far: one shared counter touched by every
/// allocation would make threads (`--jobs`) fight over its cache line.
/// The total is then known to within this much per thread.
const REPORT_EVERY: isize = 64 * 1024;

thread_local! {
    // Constant-initialised and without a destructor: usable from the
    // allocator at any point of a thread's life.
    static UNREPORTED: Cell<isize> = const { Cell::new(0) };
}

#[inline]
fn count(delta: isize) {
    let _ = UNREPORTED.try_with(|u| {
        let v = u.get() + delta;
        if v.abs() >= REPORT_EVERY {
            LIVE.fetch_add(v, Ordering::Relaxed);
            u.set(0);
        } else {
            u.set(v);
        }
    });
}

/// Report this thread's count now.
fn report_this_thread() {
    let _ = UNREPORTED.try_with(|u| {
        LIVE.fetch_add(u.replace(0), Ordering::Relaxed);
    });
}

/// The system allocator, counting the bytes it has handed out and not yet
/// been given back.
pub struct CountingAlloc;

// SAFETY: every call is forwarded to `System` unchanged; only a counter is
// updated on the side.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        count(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        p
    }
}

/// Bound the process's heap at `bytes` (`None`: no bound). Only effective
/// when [`CountingAlloc`] is the global allocator.
pub fn set_limit(bytes: Option<usize>) {
    // A process that allocated nothing through the counter has not
    // installed it (a program allocates before it sets a limit).
    report_this_thread();
    INSTALLED.store(LIVE.load(Ordering::Relaxed) > 0, Ordering::Relaxed);
    LIMIT.store(bytes.unwrap_or(usize::MAX), Ordering::Relaxed);
}

/// Bytes currently allocated (to within 64 KiB per thread), when the
/// counting allocator is installed.
pub fn live_bytes() -> Option<usize> {
    report_this_thread();
    INSTALLED.load(Ordering::Relaxed).then(reported)
}

/// The reported total; never negative, though a thread may have reported a
/// free before another reported the allocation.
fn reported() -> usize {
    LIVE.load(Ordering::Relaxed).max(0) as usize
}

/// The live bytes, when they are past the limit.
#[inline]
pub(crate) fn over_limit() -> Option<usize> {
    let live = reported();
    (live > LIMIT.load(Ordering::Relaxed)).then_some(live)
}
