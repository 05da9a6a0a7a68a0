//! Static keys: state that a crate above registers with every execution
//! without the scheduler knowing what it means. A [`TaskSlot`] is a word
//! each task carries (a nesting depth, a count of sections entered); a
//! [`Singleton`] is an object of which each execution has exactly one (the
//! wait queue of a condition over every task's slot).
//!
//! Keys are statics, numbered on their first use in the process. The
//! numbers only index tables: they never reach a trace, so the order in
//! which threads first use keys changes nothing in any execution.

use crate::obj::ObjId;
use crate::sched::with_running;
use crate::TaskId;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

pub use crate::task::{MAX_SINGLETONS, MAX_TASK_SLOTS};

/// A key's number, or `UNSET` until its first use.
struct KeyIndex(AtomicU32);

const UNSET: u32 = u32::MAX;

impl KeyIndex {
    const fn new() -> Self {
        KeyIndex(AtomicU32::new(UNSET))
    }

    /// The number, once assigned. Only the number is published, so a
    /// relaxed load suffices.
    #[inline(always)]
    fn get(&self) -> Option<usize> {
        match self.0.load(Ordering::Relaxed) {
            UNSET => None,
            i => Some(i as usize),
        }
    }

    /// Assign the next number from `next` (the key's `name` if it is one
    /// too many).
    #[cold]
    #[inline(never)]
    fn assign(&self, next: &Mutex<u32>, max: usize, name: &str) -> usize {
        let mut n = next.lock().unwrap_or_else(|e| e.into_inner());
        // Another thread may have numbered this key while we waited.
        if let Some(i) = self.get() {
            return i;
        }
        assert!(
            (*n as usize) < max,
            "`{name}`: a process may declare at most {max}"
        );
        self.0.store(*n, Ordering::Relaxed);
        *n += 1;
        *n as usize - 1
    }
}

static NEXT_SLOT: Mutex<u32> = Mutex::new(0);
static NEXT_SINGLETON: Mutex<u32> = Mutex::new(0);

/// One word of per-task state, zero when a task starts and again once it
/// has exited. Declare it as a `static`.
pub struct TaskSlot {
    name: &'static str,
    index: KeyIndex,
}

impl TaskSlot {
    pub const fn new(name: &'static str) -> Self {
        TaskSlot {
            name,
            index: KeyIndex::new(),
        }
    }

    /// Run `f` on the current task's word; `None` outside a running task.
    #[inline]
    pub fn update<R>(&self, f: impl FnOnce(&mut u64) -> R) -> Option<R> {
        update_slot(self.index(), f)
    }

    /// Task `t`'s word (zero outside a running execution).
    pub fn get(&self, t: TaskId) -> u64 {
        slot_of(self.index(), t)
    }

    /// What `f` picks from each task's word, in spawn order; empty outside
    /// a running execution.
    pub fn scan<T>(&self, f: impl FnMut(TaskId, u64) -> Option<T>) -> Vec<T> {
        scan_slot(self.index(), f)
    }

    #[inline(always)]
    fn index(&self) -> usize {
        let i = match self.index.get() {
            Some(i) => i,
            None => self.index.assign(&NEXT_SLOT, MAX_TASK_SLOTS, self.name),
        };
        // Always below: the remainder lets the compiler drop bounds checks.
        i % MAX_TASK_SLOTS
    }
}

/// An object of which every execution has one, made on its first use and
/// named by its kind alone. Declare it as a `static`.
pub struct Singleton {
    kind: &'static str,
    wake_on_exit: bool,
    index: KeyIndex,
}

impl Singleton {
    pub const fn new(kind: &'static str) -> Self {
        Singleton {
            kind,
            wake_on_exit: false,
            index: KeyIndex::new(),
        }
    }

    /// A singleton whose waiters are woken whenever a task exits: the wait
    /// queue of a condition over task slots, which an exit clears.
    pub const fn woken_on_exit(kind: &'static str) -> Self {
        Singleton {
            wake_on_exit: true,
            ..Singleton::new(kind)
        }
    }

    /// This execution's object while one of its tasks runs (made now if
    /// this is its first use); `None` elsewhere: on plain threads, during
    /// set-up and tear-down, and in invariants.
    #[inline]
    pub fn id(&self) -> Option<ObjId> {
        singleton(self)
    }

    #[inline(always)]
    pub(crate) fn index(&self) -> usize {
        let i = match self.index.get() {
            Some(i) => i,
            None => self
                .index
                .assign(&NEXT_SINGLETON, MAX_SINGLETONS, self.kind),
        };
        // Always below: the remainder lets the compiler drop bounds checks.
        i % MAX_SINGLETONS
    }

    pub(crate) fn kind(&self) -> &'static str {
        self.kind
    }

    pub(crate) fn wakes_on_exit(&self) -> bool {
        self.wake_on_exit
    }
}

/// The object of singleton `key` while a task runs.
#[inline]
fn singleton(key: &Singleton) -> Option<ObjId> {
    let i = key.index();
    with_running(|s| s.singleton(i, key.kind(), key.wakes_on_exit()))
}

/// Run `f` on the current task's word `i`.
#[inline]
fn update_slot<R>(i: usize, f: impl FnOnce(&mut u64) -> R) -> Option<R> {
    with_running(|s| {
        let t = s.current;
        f(&mut s.slots[t][i])
    })
}

/// Task `t`'s word `i`.
fn slot_of(i: usize, t: TaskId) -> u64 {
    with_running(|s| s.slots.get(t).map(|w| w[i]))
        .flatten()
        .unwrap_or(0)
}

/// What `f` picks from every task's word `i`.
fn scan_slot<T>(i: usize, mut f: impl FnMut(TaskId, u64) -> Option<T>) -> Vec<T> {
    with_running(|s| {
        s.slots
            .iter()
            .enumerate()
            .filter_map(|(t, w)| f(t, w[i]))
            .collect()
    })
    .unwrap_or_default()
}
