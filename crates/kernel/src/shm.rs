//! SysV shared memory, as far as a segment's lifetime goes: `shmget`
//! makes one in the task's ipc namespace and puts it on the task's list
//! of segments it created; `exit_shm` (at exit, and at an
//! `unshare(CLONE_NEWIPC)` for the namespace left) destroys them where
//! `kernel.shm_rmid_forced` is set, or orphans them; a namespace's free
//! destroys what it still lists.
//!
//! Models ipc/shm.c (`ksys_shmget`, `newseg`, `exit_shm`) and the
//! `kernel.shm_rmid_forced` handler of ipc/ipc_sysctl.c
//! (`proc_ipc_dointvec_minmax_orphans`, with the ownership rule of
//! `ipc_permissions`); the segments themselves are the `ipcns` crate's
//! [`ipcns::shm`], where patch `shm-destroy-own-namespace` (v5.16)
//! changes `exit_shm`.

use super::World;
use crate::costs::SYSCALL;
use crate::errno::Errno;
use crate::task::Task;
use sim::ObjId;
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl World {
    /// `shmget(IPC_PRIVATE, size, IPC_CREAT | 0600)` in the task's ipc
    /// namespace: EINVAL for a size of 0.
    pub(super) fn shmget(&self, task: &Task, size: u64) -> Result<(), Errno> {
        sim::point("shmget", ObjId::NONE, &SYSCALL);
        if size == 0 {
            return Err(Errno::EINVAL);
        }
        let ns = Arc::clone(&task.nsproxy().ipc_ns);
        self.ipc.newseg(&ns, &task.shm_clist);
        Ok(())
    }

    /// A write of `value` to `/proc/sys/kernel/shm_rmid_forced` of the
    /// task's ipc namespace: EACCES unless the task's euid is root of the
    /// namespace's owner (`ipc_permissions`; the others may read it),
    /// EINVAL outside 0..=1. Setting it destroys the orphaned segments.
    pub(super) fn write_shm_rmid_forced(&self, task: &Task, value: u64) -> Result<(), Errno> {
        sim::point("proc_sys_write", ObjId::NONE, &SYSCALL);
        let ns = Arc::clone(&task.nsproxy().ipc_ns);
        let root = ns
            .owner()
            .map_or(0, |owner| userns::map_write::make_kuid(owner, 0));
        if task.cred().euid != root {
            return Err(Errno::EACCES);
        }
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
