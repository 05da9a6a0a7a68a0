//! `loom::cell::UnsafeCell`'s API: shared mutable data reached through
//! `with` (a read) and `with_mut` (a write), each a scheduling point inside
//! an execution, so that the search interleaves the accesses of tasks that
//! share the cell. Unlike loom's, nssim does not track happens-before, so
//! it does not report two unsynchronized accesses as a data race; a model
//! whose invariant a race breaks still fails on it.

use crate::lazy_obj::PerExecution;

/// A cell of data shared between tasks, written as for loom.
///
/// ```
/// use nssim::cell::UnsafeCell;
/// use nssim::sync::{Arc, Mutex};
/// use nssim::thread;
///
/// let report = nssim::check_dfs(|| {
///     let (lock, cell) = (Arc::new(Mutex::new(())), Arc::new(UnsafeCell::new(0u32)));
///     let (l, c) = (Arc::clone(&lock), Arc::clone(&cell));
///     let t = thread::spawn(move || {
///         let _g = l.lock().unwrap();
///         c.with_mut(|p| unsafe { *p += 1 });
///     });
///     {
///         let _g = lock.lock().unwrap();
///         cell.with_mut(|p| unsafe { *p += 1 });
///     }
///     t.join().unwrap();
///     assert_eq!(cell.with(|p| unsafe { *p }), 2);
/// }, 2);
/// assert!(!report.is_failure(), "{report}");
/// ```
pub struct UnsafeCell<T: ?Sized> {
    obj: PerExecution<()>,
    data: std::cell::UnsafeCell<T>,
}

// SAFETY: as loom's: the cell is shared between tasks, and the model keeps
// its accesses apart (the explorer checks the model, not the cell).
unsafe impl<T: ?Sized + Send> Send for UnsafeCell<T> {}
unsafe impl<T: ?Sized + Send> Sync for UnsafeCell<T> {}

impl<T> UnsafeCell<T> {
    /// Named by where it is made; `const`, so that it may be a `static`.
    #[track_caller]
    pub const fn new(data: T) -> UnsafeCell<T> {
        UnsafeCell {
            obj: PerExecution::new(std::panic::Location::caller()),
            data: std::cell::UnsafeCell::new(data),
        }
    }

    pub fn into_inner(self) -> T {
        self.data.into_inner()
    }
}

impl<T: ?Sized> UnsafeCell<T> {
    /// Read through a pointer to the data: a scheduling point (a read).
    pub fn with<F, R>(&self, f: F) -> R
    where
        F: FnOnce(*const T) -> R,
    {
        if sim::active() {
            sim::read_point("cell_read", self.obj.obj(), &::sync::costs::ATOMIC);
        }
        f(self.data.get())
    }

    /// Write through a pointer to the data: a scheduling point (a write).
    pub fn with_mut<F, R>(&self, f: F) -> R
    where
        F: FnOnce(*mut T) -> R,
    {
        if sim::active() {
            sim::point("cell_write", self.obj.obj(), &::sync::costs::ATOMIC);
        }
        f(self.data.get())
    }

    /// A pointer to read through later (a scheduling point now).
    pub fn get(&self) -> ConstPtr<T> {
        self.with(|p| ConstPtr(p))
    }

    /// A pointer to write through later (a scheduling point now).
    pub fn get_mut(&self) -> MutPtr<T> {
        self.with_mut(|p| MutPtr(p))
    }
}

impl<T: Default> Default for UnsafeCell<T> {
    #[track_caller]
    fn default() -> Self {
        UnsafeCell::new(T::default())
    }
}

impl<T> From<T> for UnsafeCell<T> {
    #[track_caller]
    fn from(data: T) -> Self {
        UnsafeCell::new(data)
    }
}

impl<T: ?Sized> std::fmt::Debug for UnsafeCell<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UnsafeCell").finish_non_exhaustive()
    }
}

/// A read pointer from [`UnsafeCell::get`].
#[derive(Debug)]
pub struct ConstPtr<T: ?Sized>(*const T);

impl<T: ?Sized> ConstPtr<T> {
    /// # Safety
    /// As dereferencing the raw pointer: the data is not written meanwhile.
    pub unsafe fn deref(&self) -> &T {
        unsafe { &*self.0 }
    }

    pub fn with<F, R>(&self, f: F) -> R
    where
        F: FnOnce(*const T) -> R,
    {
        f(self.0)
    }
}

/// A write pointer from [`UnsafeCell::get_mut`].
#[derive(Debug)]
pub struct MutPtr<T: ?Sized>(*mut T);

impl<T: ?Sized> MutPtr<T> {
    /// # Safety
    /// As dereferencing the raw pointer: no other reference to the data
    /// is used meanwhile.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn deref(&self) -> &mut T {
        unsafe { &mut *self.0 }
    }

    pub fn with<F, R>(&self, f: F) -> R
    where
        F: FnOnce(*mut T) -> R,
    {
        f(self.0)
    }
}
