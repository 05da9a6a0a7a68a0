//! The SysV message queue and semaphore calls: `msgget`, `msgsnd`,
//! `msgrcv`, `msgctl`, `semget`, `semop` and `semctl`, each in the ipc
//! namespace the task is in when it calls, with the permission checks
//! that read credentials.
//!
//! Models ipc/msg.c (`ksys_msgget`, `do_msgsnd`, `do_msgrcv`,
//! `ksys_msgctl`), ipc/sem.c (`ksys_semget`, `do_semtimedop`,
//! `ksys_semctl`, `semctl_setval`) and ipc/util.c's `ipcget`, `ipcperms`
//! (the owner's, group's or others' bits of the object's mode; the rest
//! with CAP_IPC_OWNER over the namespace's owner) and
//! `ipcctl_obtain_check` (IPC_RMID by the owner, the creator, or with
//! CAP_SYS_ADMIN over the namespace's owner). The objects themselves are
//! the `ipcns` crate's [`ipcns::msg`] and [`ipcns::sem`].

use super::World;
use crate::costs::SYSCALL;
use crate::errno::Errno;
use crate::ops::{ipc_cmd, ipc_sysctl};
use crate::task::{SysvIds, Task};
use ipcns::msg::{MsgError, MsgQueue};
use ipcns::sem::{SemArray, SemError, SEMVMX};
use ipcns::util::{
    IpcIds, IpcObject, KernIpcPerm, Lookup, MODE_MASK, S_IRUGO as READ, S_IWUGO as WRITE,
};
use ipcns::IpcNamespace;
use sim::ObjId;
use std::sync::Arc;
use sync::Ordering;
use userns::caps::{CAP_IPC_OWNER, CAP_SYS_ADMIN};
use userns::{ns_capable, Cred};

impl World {
    /// `msgget(key, flags)`: the queue's id becomes the task's.
    pub(super) fn msgget(&self, task: &Task, key: u64, flags: u64) -> Result<(), Errno> {
        sim::point("msgget", ObjId::NONE, &SYSCALL);
        let ns = Arc::clone(&task.nsproxy().ipc_ns);
        let cred = task.cred();
        let msg = ns.msg_ids();
        let id = self.ipcget(
            &ns,
            &cred,
            &msg.ids,
            key,
            flags,
            |_| true,
            true,
            |perm| msg.newque(perm),
        )?;
        task.own.lock().sysv_ids.msqid = Some(id);
        Ok(())
    }

    /// `msgsnd` of `size` bytes without waiting to the task's queue.
    pub(super) fn msgsnd(&self, task: &Task, size: u64) -> Result<(), Errno> {
        sim::point("msgsnd", ObjId::NONE, &SYSCALL);
        let (ns, queue) = self.task_queue(task)?;
        if size > ns.msg_ids().msgmax.load(Ordering::Relaxed) {
            return Err(Errno::EINVAL);
        }
        self.may(&ns, &task.cred(), &queue, WRITE)?;
        let msgmax = ns.msg_ids().msgmax.load(Ordering::Relaxed);
        queue.send(size, msgmax).map_err(msg_errno)
    }

    /// `msgrcv` of the oldest message without waiting into `size` bytes:
    /// its size reported.
    pub(super) fn msgrcv(&self, task: &Task, size: u64) -> Result<(), Errno> {
        sim::point("msgrcv", ObjId::NONE, &SYSCALL);
        let (ns, queue) = self.task_queue(task)?;
        self.may(&ns, &task.cred(), &queue, READ)?;
        let got = queue.receive(size).map_err(msg_errno)?;
        task.own.lock().reported = vec![got];
        Ok(())
    }

    /// `msgctl(cmd)` of the task's queue.
    pub(super) fn msgctl(&self, task: &Task, cmd: u64) -> Result<(), Errno> {
        sim::point("msgctl", ObjId::NONE, &SYSCALL);
        if Some(cmd) == ipc_cmd("IPC_RMID") {
            let ns = Arc::clone(&task.nsproxy().ipc_ns);
            let msg = ns.msg_ids();
            let _rwsem = msg.ids.rwsem.lock();
            let (_, queue) = self.task_queue(task)?;
            self.ipcctl_obtain_check(&ns, &task.cred(), &queue)?;
            msg.freeque(&queue);
            return Ok(());
        }
        let (ns, queue) = self.task_queue(task)?;
        self.may(&ns, &task.cred(), &queue, READ)?;
        let (qnum, cbytes) = queue.stat();
        task.own.lock().reported = vec![qnum, cbytes, queue.qbytes];
        Ok(())
    }

    /// `semget(key, nsems, flags)`: the set's id becomes the task's.
    pub(super) fn semget(
        &self,
        task: &Task,
        key: u64,
        nsems: u64,
        flags: u64,
    ) -> Result<(), Errno> {
        sim::point("semget", ObjId::NONE, &SYSCALL);
        let ns = Arc::clone(&task.nsproxy().ipc_ns);
        let cred = task.cred();
        let sem = ns.sem_ids();
        if nsems > sem.semmsl.load(Ordering::Relaxed) {
            return Err(Errno::EINVAL);
        }
        // sem_more_checks: a set with fewer semaphores than asked.
        let enough = |set: &SemArray| nsems <= set.nsems();
        let id = self.ipcget(
            &ns,
            &cred,
            &sem.ids,
            key,
            flags,
            enough,
            nsems > 0,
            |perm| sem.newary(perm, nsems),
        )?;
        task.own.lock().sysv_ids.semid = Some(id);
        Ok(())
    }

    /// `semop` of one operation without waiting on the task's set.
    pub(super) fn semop(&self, task: &Task, num: u64, op: i64) -> Result<(), Errno> {
        sim::point("semop", ObjId::NONE, &SYSCALL);
        let (ns, set) = self.task_set(task)?;
        if num >= set.nsems() {
            return Err(Errno::EFBIG);
        }
        let asks = if op == 0 { READ } else { WRITE };
        self.may(&ns, &task.cred(), &set, asks)?;
        set.semop(num, op).map_err(sem_errno)
    }

    /// `semctl(num, cmd)` of the task's set.
    pub(super) fn semctl(&self, task: &Task, num: u64, cmd: u64) -> Result<(), Errno> {
        sim::point("semctl", ObjId::NONE, &SYSCALL);
        if Some(cmd) == ipc_cmd("IPC_RMID") {
            let ns = Arc::clone(&task.nsproxy().ipc_ns);
            let sem = ns.sem_ids();
            let _rwsem = sem.ids.rwsem.lock();
            let (_, set) = self.task_set(task)?;
            self.ipcctl_obtain_check(&ns, &task.cred(), &set)?;
            sem.freeary(&set);
            return Ok(());
        }
        let (ns, set) = self.task_set(task)?;
        self.may(&ns, &task.cred(), &set, READ)?;
        let reported = if Some(cmd) == ipc_cmd("GETVAL") {
            let value = set.getval(num).map_err(|_| Errno::EINVAL)?;
            u64::try_from(value).unwrap_or(0)
        } else {
            set.nsems()
        };
        task.own.lock().reported = vec![reported];
        Ok(())
    }

    /// `semctl(num, SETVAL, value)` of the task's set.
    pub(super) fn semctl_setval(&self, task: &Task, num: u64, value: u64) -> Result<(), Errno> {
        sim::point("semctl", ObjId::NONE, &SYSCALL);
        // `ksys_semctl` refuses a negative id before SETVAL looks at the
        // value.
        if task.own.lock().sysv_ids.semid.is_none() {
            return Err(Errno::EINVAL);
        }
        if value > SEMVMX as u64 {
            return Err(Errno::ERANGE);
        }
        let (ns, set) = self.task_set(task)?;
        if num >= set.nsems() {
            return Err(Errno::EINVAL);
        }
        self.may(&ns, &task.cred(), &set, WRITE)?;
        set.setval(num, value).map_err(sem_errno)
    }

    /// A write of `value` to the ipc sysctl `name` (kernel.msgmni, ...)
    /// of the task's ipc namespace: EACCES as `ipc_permissions` says,
    /// EINVAL outside the sysctl's range.
    pub(super) fn ipc_sysctl_write(
        &self,
        task: &Task,
        name: &str,
        value: u64,
    ) -> Result<(), Errno> {
        sim::point("proc_sys_write", ObjId::NONE, &SYSCALL);
        let ns = Arc::clone(&task.nsproxy().ipc_ns);
        self.ipc_permissions(task, &ns)?;
        let sysctl = ipc_sysctl(name).ok_or(Errno::EINVAL)?;
        if value > sysctl.max {
            return Err(Errno::EINVAL);
        }
        let slot = match sysctl.name {
            "kernel.msgmni" => &ns.msg_ids().msgmni,
            "kernel.msgmax" => &ns.msg_ids().msgmax,
            "kernel.msgmnb" => &ns.msg_ids().msgmnb,
            _ => &ns.shm_ids().shmmni,
        };
        slot.store(value, Ordering::Relaxed);
        Ok(())
    }

    /// `ipc_permissions` of a sysctl of `ns` (mode 0644): EACCES unless
    /// the task's euid is root of the namespace's owner (patch
    /// `ipc-sysctl-namespace-root`; before it, the initial namespace's
    /// root: the table's owner in `test_perm`).
    pub(super) fn ipc_permissions(&self, task: &Task, ns: &IpcNamespace) -> Result<(), Errno> {
        let owner = ns.owner().filter(|_| self.ipc_sysctl_namespace_root);
        let root = owner.map_or(0, |owner| userns::map_write::make_kuid(owner, 0));
        if task.cred().euid != root {
            return Err(Errno::EACCES);
        }
        Ok(())
    }

    /// The queue the task's last `msgget` id names in its ipc namespace
    /// now, or EINVAL.
    fn task_queue(&self, task: &Task) -> Result<(Arc<IpcNamespace>, Arc<MsgQueue>), Errno> {
        self.task_object(task, |ids| ids.msqid, |ns| &ns.msg_ids().ids)
    }

    /// The set the task's last `semget` id names in its ipc namespace now.
    fn task_set(&self, task: &Task) -> Result<(Arc<IpcNamespace>, Arc<SemArray>), Errno> {
        self.task_object(task, |ids| ids.semid, |ns| &ns.sem_ids().ids)
    }

    /// The object the id `id` picks of the task's kept ones names in
    /// `ids` of the task's ipc namespace now (`ipc_obtain_object_check`):
    /// EINVAL when the task has none or it names nothing there.
    pub(super) fn task_object<T: IpcObject>(
        &self,
        task: &Task,
        id: impl FnOnce(&SysvIds) -> Option<i32>,
        ids: impl FnOnce(&IpcNamespace) -> &IpcIds<T>,
    ) -> Result<(Arc<IpcNamespace>, Arc<T>), Errno> {
        let ns = Arc::clone(&task.nsproxy().ipc_ns);
        let id = id(&task.own.lock().sysv_ids).ok_or(Errno::EINVAL)?;
        let object = ids(&ns).obtain_object_check(id).ok_or(Errno::EINVAL)?;
        sim::touch(object.obj(), "ipc_obtain_object_check");
        Ok((ns, object))
    }

    /// `ipcget` of `key` with `flags` in `ids` of `ns` for `cred`, under
    /// the ids' rwsem: a new object that `newobj` makes from its
    /// permission record (EINVAL first unless `new_ok`, the new object's
    /// own check of its size; ENOSPC when the ids are full), or the one the
    /// key names, which `more_checks` must pass (else EINVAL) before the
    /// mode `flags` asks is checked (`ipc_check_perms`); its id. ENOENT
    /// and EEXIST as the flags say.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn ipcget<T: IpcObject>(
        &self,
        ns: &IpcNamespace,
        cred: &Cred,
        ids: &IpcIds<T>,
        key: u64,
        flags: u64,
        more_checks: impl FnOnce(&T) -> bool,
        new_ok: bool,
        newobj: impl FnOnce(KernIpcPerm) -> Option<Arc<T>>,
    ) -> Result<i32, Errno> {
        let key = i64::try_from(key).map_err(|_| Errno::EINVAL)?;
        let _rwsem = ids.rwsem.lock();
        match ids.ipcget(key, flags) {
            Lookup::New if !new_ok => Err(Errno::EINVAL),
            Lookup::New => {
                let id = ids.next_id().ok_or(Errno::ENOSPC)?;
                let perm = KernIpcPerm::new(key, id, flags, cred.euid, cred.egid);
                Ok(newobj(perm).ok_or(Errno::ENOSPC)?.perm().id)
            }
            Lookup::Found(object) if !more_checks(&object) => Err(Errno::EINVAL),
            Lookup::Found(object) => {
                self.may(ns, cred, &object, flags & MODE_MASK)?;
                Ok(object.perm().id)
            }
            Lookup::NoEntry => Err(Errno::ENOENT),
            Lookup::Exists => Err(Errno::EEXIST),
        }
    }

    /// `ipcperms`: EACCES unless the object's mode grants the caller, as
    /// its owner or creator, in its group, or other, every bit `asks`
    /// asks of any class, or the caller has CAP_IPC_OWNER over the
    /// namespace's owner.
    pub(super) fn may(
        &self,
        ns: &IpcNamespace,
        cred: &Cred,
        object: &(impl IpcObject + ?Sized),
        asks: u64,
    ) -> Result<(), Errno> {
        let perm = object.perm();
        let requested = (asks >> 6) | (asks >> 3) | asks;
        let granted = if cred.euid == perm.cuid || cred.euid == perm.uid {
            perm.mode >> 6
        } else if cred.in_group_p(perm.cgid) || cred.in_group_p(perm.gid) {
            perm.mode >> 3
        } else {
            perm.mode
        };
        let owner = ns.owner().unwrap_or(&self.userns.init);
        if requested & !granted & 0o7 != 0 && !ns_capable(cred, owner, CAP_IPC_OWNER) {
            return Err(Errno::EACCES);
        }
        Ok(())
    }

    /// `ipcctl_obtain_check` for IPC_RMID: the caller's euid owns or made
    /// the object, or it has CAP_SYS_ADMIN over the namespace's owner;
    /// else EPERM.
    pub(super) fn ipcctl_obtain_check(
        &self,
        ns: &IpcNamespace,
        cred: &Cred,
        object: &(impl IpcObject + ?Sized),
    ) -> Result<(), Errno> {
        let perm = object.perm();
        let owner = ns.owner().unwrap_or(&self.userns.init);
        if cred.euid == perm.cuid || cred.euid == perm.uid || ns_capable(cred, owner, CAP_SYS_ADMIN)
        {
            Ok(())
        } else {
            Err(Errno::EPERM)
        }
    }
}

fn msg_errno(e: MsgError) -> Errno {
    match e {
        MsgError::TooLong => Errno::EINVAL,
        MsgError::Full => Errno::EAGAIN,
        MsgError::Empty => Errno::ENOMSG,
        MsgError::TooBig => Errno::E2BIG,
    }
}

fn sem_errno(e: SemError) -> Errno {
    match e {
        SemError::NoSuchSemaphore => Errno::EINVAL,
        SemError::WouldWait => Errno::EAGAIN,
        SemError::OutOfRange => Errno::ERANGE,
    }
}
