//! `std::sync::RwLock` under nssim: many readers or one writer. Inside an
//! execution the scheduler is the lock: taking it is a scheduling point
//! and, while it cannot be had, a block the search and the deadlock
//! detector see; releasing it is a scheduling point too. No host lock is
//! held across a scheduling point: the value is reached through the
//! guard the scheduler's permission stands for. Outside an execution, a
//! real reader-writer lock.

use crate::lazy_obj::PerExecution;
use parking_lot::{RwLock as RealLock, RwLockReadGuard as RealRead, RwLockWriteGuard as RealWrite};
use std::ops::{Deref, DerefMut};
use std::sync::{LockResult, TryLockError, TryLockResult};

/// Who holds the lock inside an execution.
#[derive(Default)]
struct Holders {
    /// The tasks reading, once per read guard.
    readers: Vec<sim::TaskId>,
    writer: Option<sim::TaskId>,
}

impl Holders {
    fn holds(&self, task: sim::TaskId) -> bool {
        self.writer == Some(task) || self.readers.contains(&task)
    }

    fn take_read(&mut self) {
        self.readers.extend(sim::current_task());
    }

    fn take_write(&mut self) {
        self.writer = sim::current_task();
    }

    fn free(&self) -> bool {
        self.writer.is_none() && self.readers.is_empty()
    }
}

/// `std::sync::RwLock`, explored (never poisoned: a panic ends the
/// execution).
///
/// ```
/// use nssim::sync::{Arc, RwLock};
/// use nssim::thread;
///
/// let report = nssim::check_dfs(|| {
///     let l = Arc::new(RwLock::new(1));
///     let l2 = Arc::clone(&l);
///     let t = thread::spawn(move || *l2.write().unwrap() += 1);
///     let seen = *l.read().unwrap();
///     assert!(seen == 1 || seen == 2);
///     t.join().unwrap();
///     assert_eq!(*l.read().unwrap(), 2);
/// }, 2);
/// assert!(!report.is_failure(), "{report}");
/// ```
pub struct RwLock<T> {
    /// Inside an execution: its object and who holds it, made on first
    /// use in each execution (so a `static` works in every one).
    sim: PerExecution<Holders>,
    real: RealLock<T>,
}

/// Reading through an [`RwLock`].
pub struct RwLockReadGuard<'a, T> {
    lock: &'a RwLock<T>,
    real: Option<RealRead<'a, T>>,
}

/// Writing through an [`RwLock`].
pub struct RwLockWriteGuard<'a, T> {
    lock: &'a RwLock<T>,
    real: Option<RealWrite<'a, T>>,
}

impl<T> RwLock<T> {
    /// Named by where it is made; `const`, so that it may be a `static`.
    #[track_caller]
    pub const fn new(value: T) -> RwLock<T> {
        RwLock {
            sim: PerExecution::new(std::panic::Location::caller()),
            real: RealLock::new(value),
        }
    }

    /// Take the scheduler's permission: `may` says whether the holders
    /// allow it, `take` records it. A block while they do not, unless
    /// `wait` is false.
    fn acquire(
        &self,
        label: &'static str,
        wait: bool,
        may: impl Fn(&Holders) -> bool,
        take: impl Fn(&mut Holders),
    ) -> bool {
        let obj = self.sim.obj();
        let me = sim::current_task().expect("inside an execution");
        if self.sim.with(|_, h| h.holds(me)) {
            // std may deadlock or panic; shuttle panics, and a try fails.
            if wait {
                panic!(
                    "tried to acquire a RwLock it already holds ({})",
                    self.sim.name()
                );
            }
            sim::point(label, obj, &::sync::costs::MUTEX);
            return false;
        }
        sim::point(label, obj, &::sync::costs::MUTEX);
        loop {
            let taken = self.sim.with(|_, h| {
                let ok = may(h);
                if ok {
                    take(h);
                }
                ok
            });
            if taken {
                return true;
            }
            if !wait {
                return false;
            }
            sim::block(label, obj, false);
        }
    }

    /// Give the permission back: a scheduling point, then the waiters
    /// look again.
    fn release(&self, give: impl Fn(&mut Holders)) {
        if sim::execution_serial().is_none() {
            // A guard dropped while an ended execution is torn down: no
            // task will look again.
            return;
        }
        let obj = self.sim.obj();
        sim::point("rwlock_unlock", obj, &::sync::costs::MUTEX);
        self.sim.with(|_, h| give(h));
        sim::wake_all(obj, 0);
    }

    fn read_guard(&self) -> RwLockReadGuard<'_, T> {
        RwLockReadGuard {
            lock: self,
            real: None,
        }
    }

    fn write_guard(&self) -> RwLockWriteGuard<'_, T> {
        RwLockWriteGuard {
            lock: self,
            real: None,
        }
    }

    pub fn read(&self) -> LockResult<RwLockReadGuard<'_, T>> {
        if !sim::active() {
            return Ok(RwLockReadGuard {
                lock: self,
                real: Some(self.real.read()),
            });
        }
        self.acquire(
            "rwlock_read",
            true,
            |h| h.writer.is_none(),
            Holders::take_read,
        );
        Ok(self.read_guard())
    }

    pub fn write(&self) -> LockResult<RwLockWriteGuard<'_, T>> {
        if !sim::active() {
            return Ok(RwLockWriteGuard {
                lock: self,
                real: Some(self.real.write()),
            });
        }
        self.acquire("rwlock_write", true, Holders::free, Holders::take_write);
        Ok(self.write_guard())
    }

    pub fn try_read(&self) -> TryLockResult<RwLockReadGuard<'_, T>> {
        if !sim::active() {
            let real = self.real.try_read().ok_or(TryLockError::WouldBlock)?;
            return Ok(RwLockReadGuard {
                lock: self,
                real: Some(real),
            });
        }
        match self.acquire(
            "rwlock_read",
            false,
            |h| h.writer.is_none(),
            Holders::take_read,
        ) {
            true => Ok(self.read_guard()),
            false => Err(TryLockError::WouldBlock),
        }
    }

    pub fn try_write(&self) -> TryLockResult<RwLockWriteGuard<'_, T>> {
        if !sim::active() {
            let real = self.real.try_write().ok_or(TryLockError::WouldBlock)?;
            return Ok(RwLockWriteGuard {
                lock: self,
                real: Some(real),
            });
        }
        match self.acquire("rwlock_write", false, Holders::free, Holders::take_write) {
            true => Ok(self.write_guard()),
            false => Err(TryLockError::WouldBlock),
        }
    }

    pub fn get_mut(&mut self) -> LockResult<&mut T> {
        Ok(self.real.get_mut())
    }

    pub fn into_inner(self) -> LockResult<T> {
        Ok(self.real.into_inner())
    }

    /// Never poisoned: a panic ends the execution.
    pub fn is_poisoned(&self) -> bool {
        false
    }
}

// As std's (see `Mutex`).
impl<T> std::panic::UnwindSafe for RwLock<T> {}
impl<T> std::panic::RefUnwindSafe for RwLock<T> {}

impl<T: Default> Default for RwLock<T> {
    #[track_caller]
    fn default() -> Self {
        RwLock::new(T::default())
    }
}

impl<T> std::fmt::Debug for RwLock<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RwLock").finish_non_exhaustive()
    }
}

impl<T> Deref for RwLockReadGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        match &self.real {
            Some(g) => g,
            // SAFETY: every task of an execution runs on one OS thread and
            // the scheduler gives a reader's permission only while no task
            // may write, so only shared references to the value exist.
            None => unsafe { &*self.lock.real.data_ptr() },
        }
    }
}

impl<T> Deref for RwLockWriteGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        match &self.real {
            Some(g) => g,
            // SAFETY: as in `deref_mut`.
            None => unsafe { &*self.lock.real.data_ptr() },
        }
    }
}

impl<T> DerefMut for RwLockWriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        match &mut self.real {
            Some(g) => g,
            // SAFETY: every task of an execution runs on one OS thread and
            // the scheduler gives a writer's permission to one task while
            // no other reads or writes: this guard is the only way in.
            None => unsafe { &mut *self.lock.real.data_ptr() },
        }
    }
}

impl<T> Drop for RwLockReadGuard<'_, T> {
    fn drop(&mut self) {
        if self.real.take().is_none() {
            self.lock.release(|h| {
                let me = sim::current_task();
                if let Some(i) = h.readers.iter().position(|t| Some(*t) == me) {
                    h.readers.swap_remove(i);
                }
            });
        }
    }
}

impl<T> Drop for RwLockWriteGuard<'_, T> {
    fn drop(&mut self) {
        if self.real.take().is_none() {
            self.lock.release(|h| h.writer = None);
        }
    }
}
