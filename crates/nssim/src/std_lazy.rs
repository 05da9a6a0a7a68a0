//! `std::sync::OnceLock` and `LazyLock` under nssim. The value is set
//! once, as std's is (a `static` one keeps its value across executions, as
//! it does across a process's threads); inside an execution a task that
//! finds another initializing it waits, where the deadlock detector sees
//! the wait, and the first look is a scheduling point. Outside an
//! execution, std's.

use crate::lazy_obj::PerExecution;
use std::ops::Deref;
use std::sync::Mutex as HostMutex;

/// Whether a task of the running execution is initializing the value.
#[derive(Default)]
struct Init {
    running: bool,
}

/// `std::sync::OnceLock`.
///
/// ```
/// use nssim::sync::{Arc, OnceLock};
/// use nssim::thread;
///
/// let report = nssim::check_dfs(|| {
///     let cell = Arc::new(OnceLock::new());
///     let c = Arc::clone(&cell);
///     let t = thread::spawn(move || *c.get_or_init(|| 1));
///     let mine = *cell.get_or_init(|| 2);
///     assert_eq!(mine, t.join().unwrap(), "one value for both");
/// }, 2);
/// assert!(!report.is_failure(), "{report}");
/// ```
pub struct OnceLock<T> {
    sim: PerExecution<Init>,
    value: std::sync::OnceLock<T>,
}

impl<T> OnceLock<T> {
    /// `const`, so that it may be a `static`.
    #[track_caller]
    pub const fn new() -> OnceLock<T> {
        OnceLock {
            sim: PerExecution::new(std::panic::Location::caller()),
            value: std::sync::OnceLock::new(),
        }
    }

    /// The value, if it is set (a read of it inside an execution).
    pub fn get(&self) -> Option<&T> {
        if sim::active() {
            sim::read_point("once_lock_get", self.sim.obj(), &::sync::costs::ATOMIC);
        }
        self.value.get()
    }

    /// The value, set by `f` if no task has set it; a task that finds
    /// another running its `f` waits for it.
    pub fn get_or_init(&self, f: impl FnOnce() -> T) -> &T {
        if !sim::active() {
            return self.value.get_or_init(f);
        }
        let obj = self.sim.obj();
        sim::point("once_lock", obj, &::sync::costs::MUTEX);
        let mut f = Some(f);
        loop {
            if let Some(v) = self.value.get() {
                return v;
            }
            let mine = self
                .sim
                .with(|_, init| !std::mem::replace(&mut init.running, true));
            if mine {
                let v = f.take().expect("a task initializes once")();
                let _ = self.value.set(v);
                self.sim.with(|_, init| init.running = false);
                sim::wake_all(obj, 0);
            } else {
                sim::block("once_lock_wait", obj, false);
            }
        }
    }

    /// Set the value if none is set (waiting while a task sets it);
    /// `Err(value)` when one is.
    pub fn set(&self, value: T) -> Result<(), T> {
        let mut value = Some(value);
        self.get_or_init(|| value.take().expect("taken once"));
        match value {
            None => Ok(()),
            Some(v) => Err(v),
        }
    }

    pub fn get_mut(&mut self) -> Option<&mut T> {
        self.value.get_mut()
    }

    pub fn into_inner(self) -> Option<T> {
        self.value.into_inner()
    }

    pub fn take(&mut self) -> Option<T> {
        self.value.take()
    }
}

impl<T> Default for OnceLock<T> {
    #[track_caller]
    fn default() -> Self {
        OnceLock::new()
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for OnceLock<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Not `get`: a look inside an execution is a scheduling point.
        f.debug_struct("OnceLock").finish_non_exhaustive()
    }
}

/// `std::sync::LazyLock`: a value made by its function on first use.
///
/// ```
/// use nssim::sync::LazyLock;
/// use nssim::thread;
///
/// static SQUARES: LazyLock<Vec<u32>> = LazyLock::new(|| (0..4).map(|i| i * i).collect());
/// let report = nssim::check_random(|| {
///     let t = thread::spawn(|| SQUARES[3]);
///     assert_eq!(SQUARES[2] + t.join().unwrap(), 13);
/// }, 50);
/// assert!(!report.is_failure(), "{report}");
/// ```
pub struct LazyLock<T, F = fn() -> T> {
    cell: OnceLock<T>,
    init: HostMutex<Option<F>>,
}

impl<T, F: FnOnce() -> T> LazyLock<T, F> {
    /// `const`, so that it may be a `static`.
    #[track_caller]
    pub const fn new(f: F) -> LazyLock<T, F> {
        LazyLock {
            cell: OnceLock::new(),
            init: HostMutex::new(Some(f)),
        }
    }

    /// The value, made now if it was not.
    pub fn force(this: &LazyLock<T, F>) -> &T {
        this.cell.get_or_init(|| {
            let f = crate::mirror::unpoisoned(&this.init).take();
            f.expect("a LazyLock's function runs once")()
        })
    }
}

impl<T, F: FnOnce() -> T> Deref for LazyLock<T, F> {
    type Target = T;
    fn deref(&self) -> &T {
        LazyLock::force(self)
    }
}

impl<T: std::fmt::Debug, F> std::fmt::Debug for LazyLock<T, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyLock").finish_non_exhaustive()
    }
}
