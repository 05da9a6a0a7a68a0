//! SysV shared memory segments of an ipc namespace and their lifetime:
//! made or found by key by `shmget`, remembered on their creator's list
//! (`task->sysvshm.shm_clist`), attached by `shmat` (each attachment's
//! file holds the namespace it was looked up in), removed by
//! `shmctl(IPC_RMID)` (at once, or once the last attachment goes, the key
//! made private meanwhile), destroyed by the creator's exit when
//! `kernel.shm_rmid_forced` is set and nothing is attached, or with their
//! namespace.
//!
//! Models ipc/shm.c: `newseg`, `shm_more_checks`, `do_shmat`,
//! `shm_open`/`shm_close` (a mapping copied by fork, dropped by `shmdt`,
//! exec or exit), `shm_release`, `do_shm_rmid`, `shm_may_destroy`,
//! `shm_rmid`/`shm_destroy`, `shm_exit_ns` (through `free_ipcs`),
//! `exit_shm` and `shm_destroy_orphaned`.
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
use crate::util::{ipcid_to_idx, IpcIds, IpcObject, KernIpcPerm, IPC_PRIVATE};
use crate::{Ipc, IpcNamespace};
use sim::{HostMutex, ObjId};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use ucounts::{RlimitType, Ucounts};

/// `PAGE_SIZE` on x86-64: RLIMIT_MEMLOCK counts locked pages.
pub const PAGE_SIZE: u64 = 4096;

/// `SHMMNI`: a new namespace's `kernel.shmmni` (segments).
pub const SHMMNI: u64 = 4_096;

/// One segment (`struct shmid_kernel`).
pub struct ShmSeg {
    pub obj: ObjId,
    /// Its key when made, id, owner, creator and mode.
    pub perm: KernIpcPerm,
    /// Its size in bytes (`shm_segsz`).
    pub size: u64,
    /// What attachments and `IPC_RMID` change.
    state: HostMutex<SegState>,
    /// `shm_perm.lock`: held across SHM_LOCK's look at whether the
    /// segment is locked, its charge, and the mark (`shmctl_do_lock`), so
    /// two lockers of one segment charge it once.
    perm_lock: sync::SpinLock<()>,
    /// Set by `SHM_LOCK`: the pages charged, and to what.
    mlock: HostMutex<Option<(i64, RlimitCharge)>>,
    /// `shp->ns` (v5.16; not refcounted): the namespace it was made in.
    ns: Weak<IpcNamespace>,
    /// `shp->shm_creator`'s list, while the creator is alive and the
    /// segment on it.
    creator: HostMutex<Option<Arc<ShmClist>>>,
}

/// A segment's key now, attachments and `SHM_DEST`.
struct SegState {
    key: i64,
    nattch: u64,
    dest: bool,
    /// `shm_perm.deleted`: destroyed; a caller that looked it up before
    /// and takes its lock after finds it gone (EIDRM).
    deleted: bool,
}

impl IpcObject for ShmSeg {
    fn perm(&self) -> &KernIpcPerm {
        &self.perm
    }

    fn obj(&self) -> ObjId {
        self.obj
    }

    fn key(&self) -> i64 {
        self.state.lock().key
    }
}

impl ShmSeg {
    /// `shm_segsz` and `shm_nattch` (IPC_STAT).
    pub fn stat(&self) -> (u64, u64) {
        (self.size, self.state.lock().nattch)
    }

    /// The index its id names in its namespace's ids.
    fn idx(&self) -> u32 {
        ipcid_to_idx(self.perm.id)
    }

    /// `shm_may_destroy` under the namespace whose `shm_rmid_forced` is
    /// `forced`: nothing attached, and removed or forced.
    fn may_destroy(&self, forced: bool) -> bool {
        let state = self.state.lock();
        state.nattch == 0 && (forced || state.dest)
    }
}

/// Why SHM_LOCK or SHM_UNLOCK failed under the segment's lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShmLockError {
    /// EIDRM: destroyed since the look-up.
    Removed,
    /// ENOMEM: the pages would pass RLIMIT_MEMLOCK.
    NoMemory,
}

/// The file of an attachment (`struct shm_file_data`): the segment, the
/// namespace it was looked up in (referenced until the file goes,
/// `shm_release`), and the mappings of it (a fork copies them).
pub struct ShmFile {
    pub seg: Arc<ShmSeg>,
    ns: Arc<IpcNamespace>,
    maps: AtomicU64,
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
}

/// An ipc namespace's shm ids (`shm_ids(ns)`: the idr and its rwsem) and
/// its `kernel.shm_rmid_forced` and `kernel.shmmni`.
pub struct ShmIds {
    pub ids: IpcIds<ShmSeg>,
    pub rmid_forced: AtomicBool,
    pub shmmni: AtomicU64,
}

impl ShmIds {
    fn new() -> ShmIds {
        ShmIds {
            ids: IpcIds::new("shm_ids(ns).rwsem"),
            rmid_forced: AtomicBool::new(false),
            shmmni: AtomicU64::new(SHMMNI),
        }
    }

    fn forced(&self) -> bool {
        self.rmid_forced.load(Ordering::Relaxed)
    }
}

impl IpcNamespace {
    /// The namespace's shm ids (made at first use).
    pub fn shm_ids(&self) -> &ShmIds {
        self.shm.get_or_init(ShmIds::new)
    }

    /// Segments the namespace lists (for checkers and reports).
    pub fn peek_segments(&self) -> usize {
        self.shm.get().map_or(0, |ids| ids.ids.in_use())
    }

    /// The ucounts entries its locked segments hold (for checkers).
    pub fn peek_shm_lock_charges(&self) -> Vec<Arc<Ucounts>> {
        let Some(ids) = self.shm.get() else {
            return Vec::new();
        };
        ids.ids
            .all()
            .iter()
            .filter_map(|s| s.mlock.lock().as_ref()?.1.ucounts().cloned())
            .collect()
    }
}

impl Ipc {
    /// `newseg`: a segment of `size` bytes with `perm` (whose id is the
    /// next one) in `ns`, on `clist`; the caller holds the ids' rwsem.
    /// `None` (ENOSPC) at `kernel.shmmni` segments.
    pub fn newseg(
        &self,
        ns: &Arc<IpcNamespace>,
        clist: &Arc<ShmClist>,
        perm: KernIpcPerm,
        size: u64,
    ) -> Option<Arc<ShmSeg>> {
        let ids = ns.shm_ids();
        if ids.ids.in_use() as u64 >= ids.shmmni.load(Ordering::Relaxed) {
            return None;
        }
        let seg = Arc::new(ShmSeg {
            obj: sim::new_object("shmid_kernel"),
            state: HostMutex::new(
                "shp->shm_perm",
                SegState {
                    key: perm.key,
                    nattch: 0,
                    dest: false,
                    deleted: false,
                },
            ),
            perm,
            size,
            perm_lock: sync::SpinLock::new("shp->shm_perm.lock", ()),
            mlock: HostMutex::new("shp->mlock_ucounts", None),
            ns: Arc::downgrade(ns),
            creator: HostMutex::new("shp->shm_creator", Some(Arc::clone(clist))),
        });
        ids.ids.ipc_addid(Arc::clone(&seg));
        let _task_lock = self.patches.shm_own_namespace.then(|| clist.lock.lock());
        clist.segs.lock().push(Arc::clone(&seg));
        Some(seg)
    }

    /// `do_shmat` of `seg`, looked up in `ns`: one more attachment, whose
    /// file references `ns`, made under the segment's lock.
    /// `None` (EIDRM) when it was destroyed since the look-up.
    pub fn shm_attach(&self, ns: &Arc<IpcNamespace>, seg: &Arc<ShmSeg>) -> Option<Arc<ShmFile>> {
        let _perm = seg.perm_lock.lock();
        if seg.state.lock().deleted {
            return None;
        }
        sim::touch(seg.obj, "do_shmat");
        seg.state.lock().nattch += 1;
        ns.get();
        Some(Arc::new(ShmFile {
            seg: Arc::clone(seg),
            ns: Arc::clone(ns),
            maps: AtomicU64::new(1),
        }))
    }

    /// `shm_open` of a mapping a fork copies: one more attachment of the
    /// same file.
    pub fn shm_open(&self, file: &ShmFile) {
        sim::touch(file.seg.obj, "shm_open");
        file.seg.state.lock().nattch += 1;
        file.maps.fetch_add(1, Ordering::Relaxed);
    }

    /// `shm_close` of one mapping (`shmdt`, exec, exit): one attachment
    /// less, the segment destroyed if that may destroy it, and the
    /// file's reference on its namespace put with its last mapping
    /// (`shm_release`).
    pub fn shm_close(&self, file: &ShmFile) {
        let ns = &file.ns;
        let ids = ns.shm_ids();
        {
            let _rwsem = ids.ids.rwsem.lock();
            sim::touch(file.seg.obj, "shm_close");
            file.seg.state.lock().nattch -= 1;
            let valid = ids
                .ids
                .at_index(file.seg.idx())
                .is_some_and(|s| Arc::ptr_eq(&s, &file.seg));
            if valid && file.seg.may_destroy(ids.forced()) {
                self.shm_destroy(ns, &file.seg);
            }
        }
        if file.maps.fetch_sub(1, Ordering::Relaxed) == 1 {
            self.put_ipc_ns(Arc::clone(ns));
        }
    }

    /// `do_shm_rmid` of `seg` in `ns` (the caller holds the ids' rwsem):
    /// destroyed when nothing is attached; else marked `SHM_DEST` with
    /// its key made private, to go with its last attachment.
    pub fn do_shm_rmid(&self, ns: &IpcNamespace, seg: &ShmSeg) {
        sim::touch(seg.obj, "do_shm_rmid");
        {
            let mut state = seg.state.lock();
            if state.nattch > 0 {
                state.dest = true;
                state.key = IPC_PRIVATE;
                return;
            }
        }
        self.shm_destroy(ns, seg);
    }

    /// `shm_destroy` of `seg` through `ns` (whose rwsem the caller holds):
    /// `shm_rmid` takes it off its creator's list (under the creator's
    /// lock from v5.16) and removes index `seg.idx` from `ns`'s ids, then
    /// the segment is freed.
    fn shm_destroy(&self, ns: &IpcNamespace, seg: &ShmSeg) {
        {
            let _perm = seg.perm_lock.lock();
            seg.state.lock().deleted = true;
        }
        sim::touch(seg.obj, "shm_rmid");
        let creator = seg.creator.lock().take();
        if let Some(clist) = creator {
            let _task_lock = self.patches.shm_own_namespace.then(|| clist.lock.lock());
            clist.unlink(seg);
        }
        // ipc_rmid: whatever `ns` has at that index goes.
        ns.shm_ids().ids.ipc_rmid(seg);
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
    ) -> Result<(), ShmLockError> {
        let _perm = seg.perm_lock.lock();
        if seg.state.lock().deleted {
            return Err(ShmLockError::Removed);
        }
        sim::touch(seg.obj, "shmctl(SHM_LOCK)");
        if seg.mlock.lock().is_some() {
            return Ok(());
        }
        let pages = i64::try_from(seg.size.div_ceil(PAGE_SIZE)).unwrap_or(i64::MAX);
        let charged = {
            let _lock = self.shmlock_user_lock().lock();
            charge(pages)
        };
        let Some(charged) = charged else {
            return Err(ShmLockError::NoMemory);
        };
        *seg.mlock.lock() = Some((pages, charged));
        Ok(())
    }

    /// SHM_UNLOCK of `seg` under its lock: `user_shm_unlock`, or EIDRM
    /// when it was destroyed since the look-up.
    pub fn shm_unlock_cmd(&self, seg: &ShmSeg) -> Result<(), ShmLockError> {
        let taken = {
            let _perm = seg.perm_lock.lock();
            if seg.state.lock().deleted {
                return Err(ShmLockError::Removed);
            }
            sim::touch(seg.obj, "shmctl(SHM_UNLOCK)");
            // Taken before the segment's lock is let go: the host lock
            // of the charge must not outlive it (its release is a point).
            let taken = seg.mlock.lock().take();
            taken
        };
        self.uncharge_locked(taken);
        Ok(())
    }

    /// `user_shm_unlock` (`SHM_UNLOCK`, or as a locked segment goes): its
    /// pages uncharged and the reference its charge held put; nothing for
    /// a segment that is not locked.
    pub fn user_shm_unlock(&self, seg: &ShmSeg) {
        let taken = seg.mlock.lock().take();
        self.uncharge_locked(taken);
    }

    /// A lock's charge of `pages` given back, its reference put.
    fn uncharge_locked(&self, taken: Option<(i64, RlimitCharge)>) {
        let Some((pages, charge)) = taken else {
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
        let _rwsem = ids.ids.rwsem.lock();
        // An attachment holds the namespace: nothing is attached here.
        while let Some(seg) = ids.ids.all().into_iter().next() {
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
        let forced = ids.forced();
        let _rwsem = ids.ids.rwsem.lock();
        let segs = std::mem::take(&mut *clist.segs.lock());
        for seg in segs {
            // shp->shm_creator = NULL
            sim::touch(seg.obj, "exit_shm: shp->shm_creator");
            *seg.creator.lock() = None;
            if forced && seg.may_destroy(forced) {
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
                .filter(|ns| ns.shm_ids().forced())
                .filter(|ns| ns.get_not_zero());
            clist.unlink(&seg);
            *seg.creator.lock() = None;
            drop(task_lock);
            let Some(ns) = ns else {
                continue;
            };
            let ids = ns.shm_ids();
            let rwsem = ids.ids.rwsem.lock();
            let valid = ids
                .ids
                .at_index(seg.idx())
                .is_some_and(|s| Arc::ptr_eq(&s, &seg));
            if valid && seg.may_destroy(ids.forced()) {
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
        let _rwsem = ids.ids.rwsem.lock();
        let orphans: Vec<Arc<ShmSeg>> = ids
            .ids
            .all()
            .into_iter()
            .filter(|s| s.creator.lock().is_none() && s.may_destroy(true))
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
