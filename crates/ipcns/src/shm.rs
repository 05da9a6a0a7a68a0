//! SysV shared memory segments of an ipc namespace, as far as their
//! lifetime goes: made by `shmget`, remembered on their creator's list
//! (`task->sysvshm.shm_clist`), destroyed by the creator's exit when
//! `kernel.shm_rmid_forced` is set, or with their namespace.
//!
//! Models ipc/shm.c: `newseg`, `shm_rmid`/`shm_destroy`, `shm_exit_ns`
//! (through `free_ipcs`), `exit_shm` and `shm_destroy_orphaned`. No
//! segment is ever attached (`shm_nattch` is 0), so `shm_may_destroy`
//! is the namespace's `shm_rmid_forced` alone.
//!
//! Until "shm: extend forced shm destroy to support objects from several
//! IPC nses" (v5.16, [`crate::IpcPatches::shm_own_namespace`]) `exit_shm` destroyed
//! the creator's segments through the namespace the task was in at exit,
//! though `setns` may have taken it out of the one they were made in: the
//! segment was freed while its own namespace still listed it, and that
//! namespace's free then read freed memory. From v5.16 each segment
//! records its namespace, `exit_shm` destroys it there (while that
//! namespace is alive, under its `shm_rmid_forced`), and a segment's
//! removal unlinks it from its creator's list under the creator's lock.

use crate::charge::RlimitCharge;
use crate::{Ipc, IpcNamespace};
use sim::{HostMutex, ObjId};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use ucounts::{RlimitType, Ucounts};

/// `PAGE_SIZE` on x86-64: RLIMIT_MEMLOCK counts locked pages.
pub const PAGE_SIZE: u64 = 4096;

/// One segment (`struct shmid_kernel`).
pub struct ShmSeg {
    pub obj: ObjId,
    /// Its index in its namespace's ids (`ipcid_to_idx`).
    pub idx: u32,
    /// Its size in bytes, and its creator's euid (`shm_perm.cuid`).
    pub size: u64,
    pub cuid: u32,
    /// Set by `SHM_LOCK`: the pages charged, and to what.
    mlock: HostMutex<Option<(i64, RlimitCharge)>>,
    /// `shp->ns` (v5.16; not refcounted): the namespace it was made in.
    ns: Weak<IpcNamespace>,
    /// `shp->shm_creator`'s list, while the creator is alive and the
    /// segment on it.
    creator: HostMutex<Option<Arc<ShmClist>>>,
}

/// A task's `sysvshm.shm_clist`: the segments it created, with the lock
/// that guards it from v5.16 (the task's `task_lock`).
pub struct ShmClist {
    pub lock: sync::SpinLock<()>,
    segs: HostMutex<Vec<Arc<ShmSeg>>>,
}

impl ShmClist {
    pub fn new() -> Arc<ShmClist> {
        Arc::new(ShmClist {
            lock: sync::SpinLock::new("task_lock (shm_clist)", ()),
            segs: HostMutex::new("task's shm_clist", Vec::new()),
        })
    }

    fn unlink(&self, seg: &ShmSeg) {
        self.segs.lock().retain(|s| !std::ptr::eq(&**s, seg));
    }

    fn first(&self) -> Option<Arc<ShmSeg>> {
        self.segs.lock().first().cloned()
    }

    /// The newest segment still on the list.
    pub fn newest(&self) -> Option<Arc<ShmSeg>> {
        self.segs.lock().last().cloned()
    }
}

/// An ipc namespace's shm ids (`shm_ids(ns)`: the idr and its rwsem) and
/// its `kernel.shm_rmid_forced`.
pub struct ShmIds {
    pub rwsem: sync::Mutex<()>,
    idr: HostMutex<BTreeMap<u32, Arc<ShmSeg>>>,
    pub rmid_forced: AtomicBool,
}

impl ShmIds {
    fn new() -> ShmIds {
        ShmIds {
            rwsem: sync::Mutex::new("shm_ids(ns).rwsem", ()),
            idr: HostMutex::new("shm_ids(ns) idr", BTreeMap::new()),
            rmid_forced: AtomicBool::new(false),
        }
    }
}

impl IpcNamespace {
    /// The namespace's shm ids (made at first use).
    pub fn shm_ids(&self) -> &ShmIds {
        self.shm.get_or_init(ShmIds::new)
    }

    /// Segments the namespace lists (for checkers and reports).
    pub fn peek_segments(&self) -> usize {
        self.shm.get().map_or(0, |ids| ids.idr.lock().len())
    }

    /// The ucounts entries its locked segments hold (for checkers).
    pub fn peek_shm_lock_charges(&self) -> Vec<Arc<Ucounts>> {
        let Some(ids) = self.shm.get() else {
            return Vec::new();
        };
        let segs: Vec<Arc<ShmSeg>> = ids.idr.lock().values().cloned().collect();
        segs.iter()
            .filter_map(|s| s.mlock.lock().as_ref()?.1.ucounts().cloned())
            .collect()
    }

    /// Whether `seg` is listed here (its id found by a lookup in this
    /// namespace).
    pub fn lists_segment(&self, seg: &Arc<ShmSeg>) -> bool {
        self.shm.get().is_some_and(|ids| {
            ids.idr
                .lock()
                .get(&seg.idx)
                .is_some_and(|s| Arc::ptr_eq(s, seg))
        })
    }
}

impl Ipc {
    /// `newseg`: a segment of `size` bytes by `cuid` in `ns` (under its
    /// ids' rwsem), on `clist`.
    pub fn newseg(&self, ns: &Arc<IpcNamespace>, clist: &Arc<ShmClist>, size: u64, cuid: u32) {
        let ids = ns.shm_ids();
        let _rwsem = ids.rwsem.lock();
        // ipc_addid takes the lowest free index.
        let idx = (0..)
            .find(|i| !ids.idr.lock().contains_key(i))
            .expect("a free index");
        let seg = Arc::new(ShmSeg {
            obj: sim::new_object("shmid_kernel"),
            idx,
            size,
            cuid,
            mlock: HostMutex::new("shp->mlock_ucounts", None),
            ns: Arc::downgrade(ns),
            creator: HostMutex::new("shp->shm_creator", Some(Arc::clone(clist))),
        });
        ids.idr.lock().insert(idx, Arc::clone(&seg));
        let _task_lock = self.patches.shm_own_namespace.then(|| clist.lock.lock());
        clist.segs.lock().push(seg);
    }

    /// `shm_destroy` of `seg` through `ns` (whose rwsem the caller holds):
    /// `shm_rmid` takes it off its creator's list (under the creator's
    /// lock from v5.16) and removes index `seg.idx` from `ns`'s ids, then
    /// the segment is freed.
    fn shm_destroy(&self, ns: &IpcNamespace, seg: &ShmSeg) {
        sim::touch(seg.obj, "shm_rmid");
        let creator = seg.creator.lock().take();
        if let Some(clist) = creator {
            let _task_lock = self.patches.shm_own_namespace.then(|| clist.lock.lock());
            clist.unlink(seg);
        }
        // ipc_rmid: whatever `ns` has at that index goes.
        ns.shm_ids().idr.lock().remove(&seg.idx);
        self.user_shm_unlock(seg);
        sim::free_object(seg.obj);
    }

    fn shmlock_user_lock(&self) -> &sync::SpinLock<()> {
        self.shmlock_user_lock
            .get_or_init(|| sync::SpinLock::new("shmlock_user_lock", ()))
    }

    /// `user_shm_lock` of `seg` (`SHM_LOCK`), under `shmlock_user_lock`:
    /// `charge` runs there and says whether the pages fit; true when the
    /// segment is locked (already, or now).
    pub fn user_shm_lock(
        &self,
        seg: &ShmSeg,
        charge: impl FnOnce(i64) -> Option<RlimitCharge>,
    ) -> bool {
        sim::touch(seg.obj, "shmctl(SHM_LOCK)");
        if seg.mlock.lock().is_some() {
            return true;
        }
        let pages = i64::try_from(seg.size.div_ceil(PAGE_SIZE)).unwrap_or(i64::MAX);
        let charged = {
            let _lock = self.shmlock_user_lock().lock();
            charge(pages)
        };
        let Some(charged) = charged else {
            return false;
        };
        *seg.mlock.lock() = Some((pages, charged));
        true
    }

    /// `user_shm_unlock` (`SHM_UNLOCK`, or as a locked segment goes): its
    /// pages uncharged and the reference its charge held put; nothing for
    /// a segment that is not locked.
    pub fn user_shm_unlock(&self, seg: &ShmSeg) {
        let Some((pages, charge)) = seg.mlock.lock().take() else {
            return;
        };
        {
            let _lock = self.shmlock_user_lock().lock();
            charge.uncharge(&self.ucounts, RlimitType::Memlock, pages);
        }
        charge.put(&self.ucounts);
    }

    /// `shm_exit_ns` at the namespace's free: every segment it lists is
    /// destroyed.
    pub(crate) fn shm_exit_ns(&self, ns: &IpcNamespace) {
        let Some(ids) = ns.shm.get() else {
            return;
        };
        let _rwsem = ids.rwsem.lock();
        loop {
            let Some(seg) = ids.idr.lock().values().next().cloned() else {
                break;
            };
            sim::touch(seg.obj, "free_ipcs");
            self.shm_destroy(ns, &seg);
        }
    }

    /// `exit_shm` of a task whose list is `clist`, in namespace `current`
    /// (the task's at exit, or the one it leaves by `unshare`).
    pub fn exit_shm(&self, clist: &ShmClist, current: &Arc<IpcNamespace>) {
        // Only the task itself adds to its list: seen empty, it stays
        // empty, and the kernel's check under the lock finds the same.
        if clist.first().is_none() {
            return;
        }
        if self.patches.shm_own_namespace {
            return self.exit_shm_own_namespace(clist);
        }
        let ids = current.shm_ids();
        let forced = ids.rmid_forced.load(Ordering::Relaxed);
        let _rwsem = ids.rwsem.lock();
        let segs = std::mem::take(&mut *clist.segs.lock());
        for seg in segs {
            // shp->shm_creator = NULL
            sim::touch(seg.obj, "exit_shm: shp->shm_creator");
            *seg.creator.lock() = None;
            if forced {
                self.shm_destroy(current, &seg);
            }
        }
    }

    /// v5.16's `exit_shm`: each segment in the namespace it records, taken
    /// off the list under the task's lock, destroyed there if that
    /// namespace is still alive and forces it.
    fn exit_shm_own_namespace(&self, clist: &ShmClist) {
        loop {
            let task_lock = clist.lock.lock();
            let Some(seg) = clist.first() else {
                break;
            };
            sim::touch(seg.obj, "exit_shm: shp->ns");
            let ns = seg
                .ns
                .upgrade()
                .filter(|ns| ns.shm_ids().rmid_forced.load(Ordering::Relaxed))
                .filter(|ns| ns.get_not_zero());
            clist.unlink(&seg);
            *seg.creator.lock() = None;
            drop(task_lock);
            let Some(ns) = ns else {
                continue;
            };
            let ids = ns.shm_ids();
            let rwsem = ids.rwsem.lock();
            let valid = ids
                .idr
                .lock()
                .get(&seg.idx)
                .is_some_and(|s| Arc::ptr_eq(s, &seg));
            if valid {
                self.shm_destroy(&ns, &seg);
            }
            drop(rwsem);
            self.put_ipc_ns(ns);
        }
    }

    /// `shm_destroy_orphaned`, run when `shm_rmid_forced` is set: the
    /// segments of `ns` whose creator is gone are destroyed.
    pub fn shm_destroy_orphaned(&self, ns: &IpcNamespace) {
        let ids = ns.shm_ids();
        let _rwsem = ids.rwsem.lock();
        let orphans: Vec<Arc<ShmSeg>> = ids
            .idr
            .lock()
            .values()
            .filter(|s| s.creator.lock().is_none())
            .cloned()
            .collect();
        for seg in orphans {
            self.shm_destroy(ns, &seg);
        }
    }
}

#[cfg(not(loom))]
impl ShmClist {
    /// The task holds no segment (a state with segments is not named yet).
    pub fn is_empty(&self) -> bool {
        self.segs.lock().is_empty()
    }
}
