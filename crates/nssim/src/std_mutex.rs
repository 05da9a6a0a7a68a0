//! `std::sync::Mutex` under nssim. Inside an execution the scheduler is
//! the lock: taking it is a scheduling point and, while another task
//! holds it, a block the search and the deadlock detector see; releasing
//! it is a scheduling point too. Its scheduler object is made on first
//! use in each execution, so a mutex made outside one (a `static`, or
//! before `check_*`) works in every one. A guard dropped while its task
//! panics poisons the mutex, as std's does (a panic caught inside a task
//! leaves the execution running). Outside an execution, a real lock.

use crate::lazy_obj::PerExecution;
use parking_lot::{Mutex as RealLock, MutexGuard as RealGuard};
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LockResult, PoisonError, TryLockError, TryLockResult};

const LOCK: &str = "mutex_lock";
const UNLOCK: &str = "mutex_unlock";

/// A mutual-exclusion lock as `std::sync::Mutex` has it, named by where
/// it is made.
///
/// ```
/// use nssim::sync::{Arc, Mutex};
/// use nssim::thread;
///
/// let report = nssim::check_dfs(|| {
///     let m = Arc::new(Mutex::new(0));
///     let m2 = Arc::clone(&m);
///     let t = thread::spawn(move || *m2.lock().unwrap() += 1);
///     *m.lock().unwrap() += 1;
///     t.join().unwrap();
///     assert_eq!(*m.lock().unwrap(), 2);
/// }, 2);
/// assert!(!report.is_failure(), "{report}");
/// ```
pub struct Mutex<T: ?Sized> {
    sim: PerExecution<()>,
    poisoned: AtomicBool,
    real: RealLock<T>,
}

/// Holding a [`Mutex`]; dropping it releases the lock.
pub struct MutexGuard<'a, T: ?Sized> {
    lock: &'a Mutex<T>,
    /// The real lock's guard outside an execution; inside one the
    /// scheduler's hold stands for it, on this object.
    real: Option<RealGuard<'a, T>>,
    obj: sim::ObjId,
    /// The task was panicking already when it took the lock (std poisons
    /// only for a panic that starts while the guard is held).
    panicking: bool,
}

impl<T> Mutex<T> {
    /// A mutex, named by where it is made; `const`, so that it may be a
    /// `static`.
    #[track_caller]
    pub const fn new(value: T) -> Mutex<T> {
        Mutex {
            sim: PerExecution::new(std::panic::Location::caller()),
            poisoned: AtomicBool::new(false),
            real: RealLock::new(value),
        }
    }

    /// A lock with a name of its own in traces.
    pub const fn named(name: &'static str, value: T) -> Mutex<T> {
        Mutex {
            sim: PerExecution::named(name),
            poisoned: AtomicBool::new(false),
            real: RealLock::new(value),
        }
    }

    pub fn into_inner(self) -> LockResult<T> {
        let poisoned = self.is_poisoned();
        let value = self.real.into_inner();
        match poisoned {
            true => Err(PoisonError::new(value)),
            false => Ok(value),
        }
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Wait for the lock: a scheduling point, and a wait while another
    /// task holds it. `Err` (with the guard) once a task panicked holding
    /// it.
    pub fn lock(&self) -> LockResult<MutexGuard<'_, T>> {
        let guard = match sim::active() {
            true => self.acquire(true).expect("a waiting acquire gets the lock"),
            false => self.guard(Some(self.real.lock()), sim::ObjId::NONE),
        };
        self.poison_checked(guard)
    }

    /// The lock if no task holds it, at once (`WouldBlock` when one
    /// does): a scheduling point either way.
    pub fn try_lock(&self) -> TryLockResult<MutexGuard<'_, T>> {
        let guard = match sim::active() {
            true => self.acquire(false),
            false => self
                .real
                .try_lock()
                .map(|g| self.guard(Some(g), sim::ObjId::NONE)),
        };
        match guard {
            None => Err(TryLockError::WouldBlock),
            Some(g) => self.poison_checked(g).map_err(TryLockError::Poisoned),
        }
    }

    /// The value, through the one reference there is.
    pub fn get_mut(&mut self) -> LockResult<&mut T> {
        let poisoned = self.is_poisoned();
        let value = self.real.get_mut();
        match poisoned {
            true => Err(PoisonError::new(value)),
            false => Ok(value),
        }
    }

    /// Whether a task panicked while holding the lock.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned.load(Ordering::SeqCst)
    }

    /// Forget a poisoning.
    pub fn clear_poison(&self) {
        self.poisoned.store(false, Ordering::SeqCst);
    }

    /// The scheduler's hold, inside an execution: `wait` blocks while
    /// another task has it; without, `None` then.
    fn acquire(&self, wait: bool) -> Option<MutexGuard<'_, T>> {
        let obj = self.sim.obj();
        if wait && sim::lock_holder(obj).is_some() && sim::lock_holder(obj) == sim::current_task() {
            // std may deadlock or panic here; a report of the deadlock
            // would name only this task waiting for itself.
            panic!(
                "tried to acquire a Mutex it already holds ({})",
                self.sim.name()
            );
        }
        let mut acquired = sim::lock_point(LOCK, obj, &::sync::costs::MUTEX)?;
        while !acquired && wait {
            sim::block(LOCK, obj, false);
            acquired = sim::lock_try_acquire(obj);
        }
        acquired.then(|| self.guard(None, obj))
    }

    fn guard<'a>(&'a self, real: Option<RealGuard<'a, T>>, obj: sim::ObjId) -> MutexGuard<'a, T> {
        MutexGuard {
            lock: self,
            real,
            obj,
            panicking: std::thread::panicking(),
        }
    }

    fn poison_checked<'a>(&'a self, guard: MutexGuard<'a, T>) -> LockResult<MutexGuard<'a, T>> {
        match self.is_poisoned() {
            true => Err(PoisonError::new(guard)),
            false => Ok(guard),
        }
    }
}

impl<'a, T: ?Sized> MutexGuard<'a, T> {
    /// Release the lock, run `f` (which may block), and take the lock
    /// again: a condition variable's wait.
    pub(crate) fn unlocked<R>(self, f: impl FnOnce() -> R) -> (MutexGuard<'a, T>, R) {
        let lock = self.lock;
        drop(self);
        let r = f();
        let guard = match lock.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        (guard, r)
    }
}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        match &self.real {
            Some(g) => g,
            // SAFETY: every task of an execution runs on one OS thread, and
            // the scheduler lets one task at a time hold the lock: only
            // this guard reaches the value.
            None => unsafe { &*self.lock.real.data_ptr() },
        }
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        match &mut self.real {
            Some(g) => g,
            // SAFETY: as in `deref`.
            None => unsafe { &mut *self.lock.real.data_ptr() },
        }
    }
}

impl<T: ?Sized> Drop for MutexGuard<'_, T> {
    fn drop(&mut self) {
        if !self.panicking && std::thread::panicking() {
            self.lock.poisoned.store(true, Ordering::SeqCst);
        }
        match self.real.take() {
            Some(g) => drop(g),
            // The release is the scheduling point's operation: it happens
            // once the task runs again.
            None => {
                sim::unlock_point(UNLOCK, self.obj, &::sync::costs::MUTEX);
            }
        }
    }
}

impl<T: ?Sized + std::fmt::Debug> std::fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

// As std's: a lock poisoned by a panic says so, so the value behind it is
// never seen half-changed without warning.
impl<T: ?Sized> std::panic::UnwindSafe for Mutex<T> {}
impl<T: ?Sized> std::panic::RefUnwindSafe for Mutex<T> {}

impl<T: Default> Default for Mutex<T> {
    #[track_caller]
    fn default() -> Self {
        Mutex::new(T::default())
    }
}

impl<T> From<T> for Mutex<T> {
    #[track_caller]
    fn from(value: T) -> Self {
        Mutex::new(value)
    }
}

impl<T: ?Sized> std::fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Not the value: reading it would take the lock, a scheduling
        // point.
        f.debug_struct("Mutex")
            .field("poisoned", &self.is_poisoned())
            .finish_non_exhaustive()
    }
}
