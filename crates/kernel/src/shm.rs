//! SysV shared memory calls: `shmget` makes or finds a segment by key in
//! the task's ipc namespace (a new one goes on the task's list of
//! segments it created), and the task keeps its id, which `shmat`,
//! `shmctl` and the SHM_LOCK paths look up in the namespace the task is
//! in then; `shmdt`, exec and exit drop attachments; `exit_shm` (at exit,
//! and at an `unshare(CLONE_NEWIPC)` for the namespace left) destroys the
//! task's segments where `kernel.shm_rmid_forced` is set and nothing is
//! attached, or orphans them; a namespace's free destroys what it still
//! lists.
//!
//! Models ipc/shm.c (`ksys_shmget`, `do_shmat`, `ksys_shmdt`,
//! `ksys_shmctl`, `shmctl_do_lock`, `exit_shm`) and the
//! `kernel.shm_rmid_forced` handler of ipc/ipc_sysctl.c
//! (`proc_ipc_dointvec_minmax_orphans`, with the ownership rule of
//! `ipc_permissions`); the segments themselves are the `ipcns` crate's
//! [`ipcns::shm`], where patch `shm-destroy-own-namespace` (v5.16)
//! changes `exit_shm`.

use super::World;
use crate::costs::SYSCALL;
use crate::errno::Errno;
use crate::ops::{ipc_cmd, SHMGET_PRIVATE_FLAGS};
use crate::task::Task;
use ipcns::charge::RlimitCharge;
use ipcns::shm::{ShmLockError, ShmSeg, PAGE_SIZE};
use ipcns::util::{S_IRUGO as READ, S_IWUGO as WRITE};
use ipcns::IpcNamespace;
use sim::ObjId;
use std::sync::Arc;
use sync::Ordering;
use ucounts::{
    dec_rlimit_ucounts, draw_rlimit_levels, inc_rlimit_ucounts, RlimitType, LONG_MAX, RLIM_INFINITY,
};
use userns::caps::CAP_IPC_LOCK;
use userns::{ns_capable, Cred};

impl World {
    /// `shmget(IPC_PRIVATE, size, IPC_CREAT | 0600)` in the task's ipc
    /// namespace: EINVAL for a size of 0.
    pub(super) fn shmget(&self, task: &Task, size: u64) -> Result<(), Errno> {
        self.shmget_key(task, 0, size, SHMGET_PRIVATE_FLAGS)
    }

    /// `shmget(key, size, flags)`: the segment's id becomes the task's;
    /// a new one goes on the task's list of segments it made.
    pub(super) fn shmget_key(
        &self,
        task: &Task,
        key: u64,
        size: u64,
        flags: u64,
    ) -> Result<(), Errno> {
        sim::point("shmget", ObjId::NONE, &SYSCALL);
        let ns = Arc::clone(&task.nsproxy().ipc_ns);
        let cred = task.cred();
        let shm = ns.shm_ids();
        // shm_more_checks: a segment smaller than asked.
        let big_enough = |seg: &ShmSeg| size <= seg.size;
        let id = self.ipcget(
            &ns,
            &cred,
            &shm.ids,
            key,
            flags,
            big_enough,
            size > 0,
            |perm| self.ipc.newseg(&ns, &task.shm_clist, perm, size),
        )?;
        task.own.lock().sysv_ids.shmid = Some(id);
        Ok(())
    }

    /// `shmat` of the segment of the task's last `shmget` id, read and
    /// write: EINVAL when the id names none in the task's ipc namespace,
    /// EACCES without read and write permission.
    pub(super) fn shmat(&self, task: &Task) -> Result<(), Errno> {
        sim::point("shmat", ObjId::NONE, &SYSCALL);
        let (ns, seg) = self.task_segment(task)?;
        self.may(&ns, &task.cred(), &seg, READ | WRITE)?;
        let file = self.ipc.shm_attach(&ns, &seg).ok_or(Errno::EIDRM)?;
        task.own.lock().shm_maps.push(file);
        Ok(())
    }

    /// `shmdt` of the task's newest attachment: EINVAL when it has none.
    pub(super) fn shmdt(&self, task: &Task) -> Result<(), Errno> {
        sim::point("shmdt", ObjId::NONE, &SYSCALL);
        let file = task.own.lock().shm_maps.pop().ok_or(Errno::EINVAL)?;
        self.ipc.shm_close(&file);
        Ok(())
    }

    /// `shmctl(cmd)` of the segment of the task's last `shmget` id:
    /// IPC_STAT reports its size and attachments, IPC_RMID removes it
    /// (`do_shm_rmid`).
    pub(super) fn shmctl(&self, task: &Task, cmd: u64) -> Result<(), Errno> {
        sim::point("shmctl", ObjId::NONE, &SYSCALL);
        if Some(cmd) == ipc_cmd("IPC_RMID") {
            let ns = Arc::clone(&task.nsproxy().ipc_ns);
            let _rwsem = ns.shm_ids().ids.rwsem.lock();
            let (_, seg) = self.task_segment(task)?;
            self.ipcctl_obtain_check(&ns, &task.cred(), &seg)?;
            self.ipc.do_shm_rmid(&ns, &seg);
            return Ok(());
        }
        let (ns, seg) = self.task_segment(task)?;
        self.may(&ns, &task.cred(), &seg, READ)?;
        let (size, nattch) = seg.stat();
        task.own.lock().reported = vec![size, nattch];
        Ok(())
    }

    /// The segment the task's last `shmget` id names in its ipc namespace
    /// now, or EINVAL.
    fn task_segment(&self, task: &Task) -> Result<(Arc<IpcNamespace>, Arc<ShmSeg>), Errno> {
        self.task_object(task, |ids| ids.shmid, |ns| &ns.shm_ids().ids)
    }

    /// Every attachment of the task's image goes (`exit_mmap` at exit and
    /// exec): each mapping closed.
    pub(super) fn shm_detach_all(&self, task: &Task) {
        let maps = std::mem::take(&mut task.own.lock().shm_maps);
        for file in maps.iter().rev() {
            self.ipc.shm_close(file);
        }
    }

    /// `shmctl(id, SHM_LOCK)` of the segment of the task's last `shmget`
    /// id, looked up in the task's ipc namespace: EINVAL when it names
    /// none there; EPERM without CAP_IPC_LOCK over the
    /// namespace's owner when the task's euid did not make it or its
    /// RLIMIT_MEMLOCK is 0; ENOMEM when its pages would take the locker's
    /// user over RLIMIT_MEMLOCK (`user_shm_lock`; CAP_IPC_LOCK in the
    /// initial namespace lifts that).
    pub(super) fn shm_lock(&self, task: &Task) -> Result<(), Errno> {
        let limit = task.rlimit(RlimitType::Memlock).0;
        let (seg, cred) = self.shmctl_do_lock(task, limit == 0)?;
        let exempt = ns_capable(&cred, &self.userns.init, CAP_IPC_LOCK);
        self.ipc
            .user_shm_lock(&seg, |pages| {
                self.charge_locked(&cred, pages, limit, exempt)
            })
            .map_err(lock_errno)
    }

    /// `shmctl(SHM_UNLOCK)` of the segment of the task's last `shmget` id
    /// in its ipc namespace: EINVAL when it names none, EPERM
    /// without CAP_IPC_LOCK over the namespace's owner unless the task's
    /// euid made the segment; a locked segment is uncharged, an unlocked
    /// one left as it is.
    pub(super) fn shm_unlock(&self, task: &Task) -> Result<(), Errno> {
        let (seg, _) = self.shmctl_do_lock(task, false)?;
        self.ipc.shm_unlock_cmd(&seg).map_err(lock_errno)
    }

    /// What `shmctl_do_lock` checks for SHM_LOCK and SHM_UNLOCK alike: the
    /// segment of the task's last `shmget` id in its ipc namespace (EINVAL
    /// when none), and, without CAP_IPC_LOCK over the namespace's
    /// owner, that the task's euid made it and the lock is not refused
    /// for another reason (`refused`: SHM_LOCK under RLIMIT_MEMLOCK 0),
    /// else EPERM. The segment and the caller's credentials.
    fn shmctl_do_lock(
        &self,
        task: &Task,
        refused: bool,
    ) -> Result<(Arc<ipcns::shm::ShmSeg>, Cred), Errno> {
        sim::point("shmctl", ObjId::NONE, &SYSCALL);
        let (ns, seg) = self.task_segment(task)?;
        let cred = task.cred();
        let owner = ns.owner().unwrap_or(&self.userns.init);
        if !ns_capable(&cred, owner, CAP_IPC_LOCK) && (cred.euid != seg.perm.cuid || refused) {
            return Err(Errno::EPERM);
        }
        Ok((seg, cred))
    }

    /// `user_shm_lock`'s charge of `pages` against `limit` bytes of
    /// RLIMIT_MEMLOCK (none at RLIM_INFINITY; `exempt` with CAP_IPC_LOCK):
    /// on the locker's `user_struct` before v5.14, on its ucounts (every
    /// level, referenced) after.
    fn charge_locked(
        &self,
        cred: &Cred,
        pages: i64,
        limit: u64,
        exempt: bool,
    ) -> Option<RlimitCharge> {
        let limit_pages = if limit == RLIM_INFINITY {
            LONG_MAX
        } else {
            i64::try_from(limit / PAGE_SIZE).unwrap_or(LONG_MAX)
        };
        if !self.procs.nproc_patches().in_ucounts() {
            let user = Arc::clone(cred.user.as_ref()?);
            let limit = if exempt { LONG_MAX } else { limit_pages };
            user.charge_rlimit(RlimitType::Memlock, pages, limit)?;
            return Some(RlimitCharge::User(user));
        }
        let table = self.procs.ucounts();
        let leaf = cred.ucounts.as_ref()?;
        let check = self.procs.rlimit_check();
        if !exempt {
            let max = u64::try_from(limit_pages).unwrap_or(RLIM_INFINITY);
            draw_rlimit_levels(leaf, RlimitType::Memlock, max, check);
        }
        let n = inc_rlimit_ucounts(table, leaf, RlimitType::Memlock, pages, check);
        if (n == LONG_MAX || n > limit_pages) && !exempt {
            dec_rlimit_ucounts(table, leaf, RlimitType::Memlock, pages);
            return None;
        }
        let Some(held) = table.get_ucounts(leaf) else {
            dec_rlimit_ucounts(table, leaf, RlimitType::Memlock, pages);
            return None;
        };
        Some(RlimitCharge::Ucounts(held))
    }

    /// A write of `value` to `/proc/sys/kernel/shm_rmid_forced` of the
    /// task's ipc namespace: EACCES unless the task's euid is root of the
    /// namespace's owner (`ipc_permissions`, patch
    /// `ipc-sysctl-namespace-root`; before it, the initial namespace's
    /// root: the table's owner in `test_perm`), EINVAL outside 0..=1.
    /// Setting it destroys the orphaned segments.
    pub(super) fn write_shm_rmid_forced(&self, task: &Task, value: u64) -> Result<(), Errno> {
        sim::point("proc_sys_write", ObjId::NONE, &SYSCALL);
        let ns = Arc::clone(&task.nsproxy().ipc_ns);
        self.ipc_permissions(task, &ns)?;
        if value > 1 {
            return Err(Errno::EINVAL);
        }
        ns.shm_ids()
            .rmid_forced
            .store(value == 1, Ordering::Relaxed);
        if value == 1 {
            self.ipc.shm_destroy_orphaned(&ns);
        }
        Ok(())
    }

    /// `exit_shm` of the task, in the ipc namespace it is in now.
    pub(super) fn exit_shm(&self, task: &Task) {
        let ns = Arc::clone(&task.nsproxy().ipc_ns);
        self.ipc.exit_shm(&task.shm_clist, &ns);
    }
}

fn lock_errno(e: ShmLockError) -> Errno {
    match e {
        ShmLockError::Removed => Errno::EIDRM,
        ShmLockError::NoMemory => Errno::ENOMEM,
    }
}
