//! SysV semaphore sets of an ipc namespace: made or found by `semget`,
//! changed by `semop` (one operation, without waiting: `IPC_NOWAIT`),
//! read, set and removed by `semctl`, and freed with their namespace.
//!
//! Models ipc/sem.c: `newary` (a set of 1 to `SEMMSL` semaphores, all 0;
//! the namespace's sets and semaphores counted against `kernel.sem`),
//! `sem_more_checks` (a set found by key with fewer semaphores than
//! asked: EINVAL), `perform_atomic_semop` for one operation (a result
//! below 0 would wait: EAGAIN; above `SEMVMX`: ERANGE; an operation of 0
//! waits for 0), `semctl_nolock` (IPC_STAT), `semctl_main`'s GETVAL and
//! `semctl_setval`, `freeary` and `sem_exit_ns`. `SEM_UNDO` is not
//! modelled (no op asks for it).

use crate::util::{IpcIds, IpcObject, KernIpcPerm};
use crate::IpcNamespace;
use sim::{HostMutex, ObjId};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// `SEMMSL`, `SEMMNS`, `SEMOPM` and `SEMMNI`: a new namespace's
/// `kernel.sem` (semaphores per set, in all, operations per call, sets).
pub const SEMMSL: u64 = 32_000;
pub const SEMMNS: u64 = 1_024_000_000;
pub const SEMOPM: u64 = 500;
pub const SEMMNI: u64 = 32_000;
/// `SEMVMX`: the largest value of a semaphore.
pub const SEMVMX: i64 = 32_767;

/// One set (`struct sem_array`).
pub struct SemArray {
    pub obj: ObjId,
    pub perm: KernIpcPerm,
    /// The values of its semaphores.
    values: HostMutex<Vec<i64>>,
}

impl IpcObject for SemArray {
    fn perm(&self) -> &KernIpcPerm {
        &self.perm
    }

    fn obj(&self) -> ObjId {
        self.obj
    }
}

/// Why `semop` or `semctl` failed, past the look-up and permissions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SemError {
    /// EFBIG (`semop`) or EINVAL (`semctl`): no semaphore of that number.
    NoSuchSemaphore,
    /// EAGAIN: the operation would wait.
    WouldWait,
    /// ERANGE: the value would pass `SEMVMX` (or a SETVAL outside
    /// 0..=SEMVMX).
    OutOfRange,
}

impl SemArray {
    /// `sem_nsems`.
    pub fn nsems(&self) -> u64 {
        self.values.lock().len() as u64
    }

    /// `perform_atomic_semop` of one operation `op` on semaphore `num`,
    /// without waiting.
    pub fn semop(&self, num: u64, op: i64) -> Result<(), SemError> {
        sim::touch(self.obj, "semop");
        let mut values = self.values.lock();
        let value = usize::try_from(num)
            .ok()
            .and_then(|n| values.get_mut(n))
            .ok_or(SemError::NoSuchSemaphore)?;
        let result = *value + op;
        if op == 0 && *value != 0 || result < 0 {
            return Err(SemError::WouldWait);
        }
        if result > SEMVMX {
            return Err(SemError::OutOfRange);
        }
        *value = result;
        Ok(())
    }

    /// GETVAL of semaphore `num`.
    pub fn getval(&self, num: u64) -> Result<i64, SemError> {
        let values = self.values.lock();
        usize::try_from(num)
            .ok()
            .and_then(|n| values.get(n).copied())
            .ok_or(SemError::NoSuchSemaphore)
    }

    /// `semctl_setval` of semaphore `num` to `value`.
    pub fn setval(&self, num: u64, value: u64) -> Result<(), SemError> {
        sim::touch(self.obj, "semctl(SETVAL)");
        let mut values = self.values.lock();
        let slot = usize::try_from(num)
            .ok()
            .and_then(|n| values.get_mut(n))
            .ok_or(SemError::NoSuchSemaphore)?;
        *slot = i64::try_from(value)
            .ok()
            .filter(|&v| v <= SEMVMX)
            .ok_or(SemError::OutOfRange)?;
        Ok(())
    }
}

/// `sem_ids(ns)` and the namespace's `kernel.sem`.
pub struct SemIds {
    pub ids: IpcIds<SemArray>,
    /// `used_sems`: the semaphores of every set.
    used_sems: AtomicU64,
    pub semmsl: AtomicU64,
    pub semmns: AtomicU64,
    pub semmni: AtomicU64,
}

impl IpcNamespace {
    /// The namespace's semaphore sets (made at first use).
    pub fn sem_ids(&self) -> &SemIds {
        self.sem.get_or_init(|| SemIds {
            ids: IpcIds::new("sem_ids(ns).rwsem"),
            used_sems: AtomicU64::new(0),
            semmsl: AtomicU64::new(SEMMSL),
            semmns: AtomicU64::new(SEMMNS),
            semmni: AtomicU64::new(SEMMNI),
        })
    }
}

impl SemIds {
    /// `newary` of `nsems` semaphores by the owner in `perm` (whose id is
    /// the next one), under the rwsem: `None` (ENOSPC) past the
    /// namespace's semaphores or sets.
    pub fn newary(&self, perm: KernIpcPerm, nsems: u64) -> Option<Arc<SemArray>> {
        let used = self.used_sems.load(Ordering::Relaxed);
        if used + nsems > self.semmns.load(Ordering::Relaxed)
            || self.ids.in_use() as u64 >= self.semmni.load(Ordering::Relaxed)
        {
            return None;
        }
        let array = Arc::new(SemArray {
            obj: sim::new_object("sem_array"),
            perm,
            values: HostMutex::new("sma->sems", vec![0; usize::try_from(nsems).ok()?]),
        });
        self.used_sems.fetch_add(nsems, Ordering::Relaxed);
        self.ids.ipc_addid(Arc::clone(&array));
        Some(array)
    }

    /// `freeary`: the set leaves the ids and is freed.
    pub fn freeary(&self, array: &SemArray) {
        sim::touch(array.obj, "freeary");
        self.ids.ipc_rmid(array);
        self.used_sems.fetch_sub(array.nsems(), Ordering::Relaxed);
        sim::free_object(array.obj);
    }
}

/// `sem_exit_ns`: every set of the namespace freed with it.
pub(crate) fn sem_exit_ns(ns: &IpcNamespace) {
    let Some(sem) = ns.sem.get() else {
        return;
    };
    for array in sem.ids.take_all() {
        sim::touch(array.obj, "free_ipcs");
        sim::free_object(array.obj);
    }
}
