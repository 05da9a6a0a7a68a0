//! Host locks: the real mutexes that model code keeps its bookkeeping
//! behind (an oracle's state, a task's own fields).
//!
//! Every task of an execution runs on one OS thread, so a host lock that a
//! task holds across a scheduling point deadlocks the whole process as
//! soon as another task asks for it: the thread sleeps in the lock, and no
//! scheduler runs to resume the holder. A [`HostMutex`] counts its holders
//! in the running execution, and a scheduling point reached while the
//! running task holds one ends the task with a panic naming the lock and
//! the point (outcome `panic`), in every build: the model's defect is
//! reported where it is, rather than as a hang some other interleaving
//! runs into. Outside an execution (real threads, loom, plain tests) it is
//! a plain mutex.

use crate::rt;

/// A mutex of the host, counted while held by a task of the running
/// execution (see the module docs).
pub struct HostMutex<T> {
    name: &'static str,
    inner: parking_lot::Mutex<T>,
}

/// A held [`HostMutex`].
pub struct HostGuard<'a, T> {
    guard: parking_lot::MutexGuard<'a, T>,
    /// The lock's name, when counted in the running execution.
    counted: Option<&'static str>,
}

impl<T> HostMutex<T> {
    /// A lock named `name` in the report of a point taken while held.
    pub const fn new(name: &'static str, value: T) -> Self {
        HostMutex {
            name,
            inner: parking_lot::Mutex::new(value),
        }
    }

    /// Take the lock. Inside an execution it is never contended: no task
    /// can be switched away while holding it.
    pub fn lock(&self) -> HostGuard<'_, T> {
        let guard = self.inner.lock();
        let counted = rt::host_lock_taken(self.name).then_some(self.name);
        HostGuard { guard, counted }
    }

    pub fn into_inner(self) -> T {
        self.inner.into_inner()
    }

    pub fn get_mut(&mut self) -> &mut T {
        self.inner.get_mut()
    }
}

impl<T: Default> Default for HostMutex<T> {
    fn default() -> Self {
        HostMutex::new("host lock", T::default())
    }
}

impl<T> Drop for HostGuard<'_, T> {
    fn drop(&mut self) {
        if let Some(name) = self.counted {
            rt::host_lock_dropped(name);
        }
    }
}

impl<T> std::ops::Deref for HostGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T> std::ops::DerefMut for HostGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}
