//! A bound on the simulator's memory: a counting global allocator, and a
//! limit past which an execution ends with outcome `limit` (memory) instead
//! of the process being killed when the machine runs out.
//!
//! A binary opts in by installing [`CountingAlloc`] as its global
//! allocator and calling [`set_limit`]; executions check the count at
//! every step. Like the wall-clock timeout, the bound is a resource of the
//! process, not part of the model: it stops a run, it never steers one.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

static LIVE: AtomicUsize = AtomicUsize::new(0);
static INSTALLED: AtomicBool = AtomicBool::new(false);
static LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);

/// The system allocator, counting the bytes it has handed out and not yet
/// been given back.
pub struct CountingAlloc;

// SAFETY: every call is forwarded to `System` unchanged; only a counter is
// updated on the side.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_add(new_size, Ordering::Relaxed);
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        p
    }
}

/// Bound the process's heap at `bytes` (`None`: no bound). Only effective
/// when [`CountingAlloc`] is the global allocator.
pub fn set_limit(bytes: Option<usize>) {
    INSTALLED.store(LIVE.load(Ordering::Relaxed) > 0, Ordering::Relaxed);
    LIMIT.store(bytes.unwrap_or(usize::MAX), Ordering::Relaxed);
}

/// Bytes currently allocated, when the counting allocator is installed.
pub fn live_bytes() -> Option<usize> {
    INSTALLED
        .load(Ordering::Relaxed)
        .then(|| LIVE.load(Ordering::Relaxed))
}

/// The live bytes, when they are past the limit.
#[inline]
pub(crate) fn over_limit() -> Option<usize> {
    let live = LIVE.load(Ordering::Relaxed);
    (live > LIMIT.load(Ordering::Relaxed)).then_some(live)
}
