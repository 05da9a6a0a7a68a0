//! A bound on the simulator's memory: a counting global allocator, and a
//! limit past which an execution ends with outcome `limit` (memory) instead
//! of the process being killed when the machine runs out.
//!
//! A binary opts in by installing [`CountingAlloc`] (over the system
//! allocator, or another it names) as its global allocator and calling
//! [`set_limit`]; executions check the count every
//! 64 steps. The heap is not all a process holds (task stacks, memory the
//! allocator keeps after a free), so executions also compare the
//! process's resident set (`/proc/self/statm`) with the limit, every 16th
//! time they look at the clock and each time the heap has grown by 16 MiB
//! since the last look; a world's tasks are built and started before its
//! first step, so the bound is also looked at every 64 tasks made and
//! every 64 tasks started. Like the wall-clock timeout, the bound is a
//! resource of the process, not part of the model: it stops a run, it
//! never steers one.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Bytes allocated and not freed, as far as the threads have reported.
static LIVE: AtomicIsize = AtomicIsize::new(0);
static INSTALLED: AtomicBool = AtomicBool::new(false);
static LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);
/// The limit as messages name it (`--max-memory 512m`).
static GIVEN: Mutex<String> = Mutex::new(String::new());

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

/// An allocator (the system's by default), counting the bytes it has
/// handed out and not yet been given back.
pub struct CountingAlloc<A = System>(pub A);

impl CountingAlloc {
    /// The system allocator, counted.
    pub const SYSTEM: CountingAlloc = CountingAlloc(System);
}

// SAFETY: every call is forwarded to the inner allocator unchanged; only a
// counter is updated on the side.
unsafe impl<A: GlobalAlloc> GlobalAlloc for CountingAlloc<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { self.0.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { self.0.alloc_zeroed(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { self.0.dealloc(ptr, layout) };
        count(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { self.0.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        p
    }
}

/// Bound the process's memory at `bytes` (`None`: no bound): its heap,
/// when [`CountingAlloc`] is the global allocator, and its resident set.
pub fn set_limit(bytes: Option<usize>) {
    set_limit_as_given(bytes, &format!("{} bytes", bytes.unwrap_or(0)));
}

/// [`set_limit`], with the words that name the limit in messages, as the
/// user gave it (`--max-memory 512m`).
pub fn set_limit_as_given(bytes: Option<usize>, given: &str) {
    // A process that allocated nothing through the counter has not
    // installed it (a program allocates before it sets a limit).
    report_this_thread();
    INSTALLED.store(LIVE.load(Ordering::Relaxed) > 0, Ordering::Relaxed);
    LIMIT.store(bytes.unwrap_or(usize::MAX), Ordering::Relaxed);
    // A new limit is compared with the resident set at the next look.
    NEXT_RESIDENT_READ.store(0, Ordering::Relaxed);
    *GIVEN.lock().unwrap_or_else(|e| e.into_inner()) = given.to_string();
}

/// The limit as [`set_limit_as_given`] named it.
pub fn limit_as_given() -> String {
    GIVEN.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The process's resident set in bytes, where the system says (Linux).
pub fn resident_bytes() -> Option<usize> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: usize = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages.saturating_mul(page_size()))
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).unwrap_or(4096)
}

thread_local! {
    /// Looks at the clock left before this thread reads its resident set.
    static RESIDENT_COUNTDOWN: Cell<u32> = const { Cell::new(0) };
}

/// The resident set, when a limit is set and it is past it; read at most
/// every 16th call on a thread (each read is a system call or three).
pub(crate) fn resident_over_limit() -> Option<usize> {
    let limit = LIMIT.load(Ordering::Relaxed);
    if limit == usize::MAX {
        return None;
    }
    let due = RESIDENT_COUNTDOWN
        .try_with(|c| {
            let left = c.get();
            c.set(if left == 0 { 15 } else { left - 1 });
            left == 0
        })
        .unwrap_or(false);
    if !due {
        return None;
    }
    resident_bytes().filter(|r| *r > limit)
}

/// What the process holds, when a limit is set and it is past it: the live
/// bytes, else the resident set read now (for the moments when a world
/// grows without a step: its tasks built and started).
pub(crate) fn held_over_limit() -> Option<usize> {
    let limit = LIMIT.load(Ordering::Relaxed);
    if limit == usize::MAX {
        return None;
    }
    let live = reported();
    if live > limit {
        return Some(live);
    }
    resident_bytes().filter(|r| *r > limit)
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

/// The heap's growth after which the resident set is read again: an
/// allocator keeps more than it hands out (mimalloc some fifth more at
/// times), so a heap under the limit can stand for a resident set past it.
const RESIDENT_READ_EVERY: usize = 16 << 20;

/// The live bytes at which the resident set is read next.
static NEXT_RESIDENT_READ: AtomicUsize = AtomicUsize::new(0);

/// The bytes the process holds, when they are past the limit: the live
/// bytes, or the resident set, read each time the heap has grown by
/// [`RESIDENT_READ_EVERY`] since the last read.
#[inline]
pub(crate) fn over_limit() -> Option<usize> {
    let live = reported();
    let limit = LIMIT.load(Ordering::Relaxed);
    if live > limit {
        return Some(live);
    }
    if limit == usize::MAX || live < NEXT_RESIDENT_READ.load(Ordering::Relaxed) {
        return None;
    }
    resident_after_growth(live, limit)
}

#[cold]
fn resident_after_growth(live: usize, limit: usize) -> Option<usize> {
    NEXT_RESIDENT_READ.store(live + RESIDENT_READ_EVERY, Ordering::Relaxed);
    resident_bytes().filter(|r| *r > limit)
}
