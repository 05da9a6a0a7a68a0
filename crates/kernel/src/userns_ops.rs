//! The user-namespace syscalls of a simulated process: `unshare` and
//! `clone` with CLONE_NEWUSER (kernel/fork.c `unshare_userns`,
//! kernel/user_namespace.c `create_user_ns`), `setns` into a user
//! namespace (`userns_install`), writes to `/proc/PID/{uid_map,gid_map,
//! setgroups}` (fs/proc/base.c, kernel/user_namespace.c `map_write`), and
//! the user-namespace invariants.

use super::procfs::ProcFile;
use super::World;
use crate::errno::{from_userns, Errno};
use crate::setup::UsernsFile;
use crate::task::{OpenedMap, Task};
use sim::ObjId;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use userns::{caps, ns_capable, MapKind};

impl World {
    /// `setns(fd, CLONE_NEWUSER)`: `userns_install`. The caller needs
    /// CAP_SYS_ADMIN in the target namespace; its new credentials have
    /// every capability there (within its bounding set).
    pub(super) fn setns_user(&self, task: &Task, target: &str) -> Result<(), Errno> {
        sim::point("setns", ObjId::NONE, &crate::costs::SYSCALL);
        let ns = self.open_ns_user(task, target)?;
        let result = self.userns_install(task, &ns);
        self.close_ns_user(&ns);
        result
    }

    /// `open("/proc/PID/ns/user")` of task `target`, kept under `name`
    /// (a file of that name already kept is closed first).
    pub(super) fn open_ns_user_kept(
        &self,
        task: &Task,
        name: &str,
        target: &str,
    ) -> Result<(), Errno> {
        sim::point("open", ObjId::NONE, &crate::costs::SYSCALL);
        let ns = self.open_ns_user(task, target)?;
        let old = task.own.lock().ns_files.insert(name.to_string(), ns);
        if let Some(old) = old {
            self.close_ns_user(&old);
        }
        Ok(())
    }

    /// `setns(fd, CLONE_NEWUSER)` through the file kept under `name`
    /// (EBADF when there is none).
    pub(super) fn setns_kept(&self, task: &Task, name: &str) -> Result<(), Errno> {
        sim::point("setns", ObjId::NONE, &crate::costs::SYSCALL);
        let ns = task.own.lock().ns_files.get(name).cloned();
        self.userns_install(task, &ns.ok_or(Errno::EBADF)?)
    }

    /// `close` of the file kept under `name` (EBADF when there is none).
    pub(super) fn close_kept(&self, task: &Task, name: &str) -> Result<(), Errno> {
        sim::point("close", ObjId::NONE, &crate::costs::SYSCALL);
        let ns = task.own.lock().ns_files.remove(name);
        self.close_ns_user(&ns.ok_or(Errno::EBADF)?);
        Ok(())
    }

    /// `exit_files`: every kept file is closed.
    pub(super) fn close_all_kept(&self, task: &Task) {
        let files = std::mem::take(&mut task.own.lock().ns_files);
        for ns in files.values() {
            self.close_ns_user(ns);
        }
    }

    /// `userns_install` of `ns`, which the caller's open file holds.
    fn userns_install(&self, task: &Task, ns: &Arc<userns::UserNamespace>) -> Result<(), Errno> {
        let cred = task.cred();
        if Arc::ptr_eq(ns, &cred.user_ns) {
            return Err(Errno::EINVAL);
        }
        if !ns_capable(&cred, ns, caps::CAP_SYS_ADMIN) {
            return Err(Errno::EPERM);
        }
        self.procs.commit_setns_user(task, ns)
    }

    /// A read of `/proc/PID/{uid,gid}_map` of `target` (`uid_m_show`):
    /// each line's first id, lower id (as the reader's namespace sees it,
    /// or the parent's when the reader is in the map's own namespace) and
    /// count, reported in that order.
    pub(super) fn read_id_map(
        &self,
        task: &Task,
        kind: MapKind,
        target: &str,
    ) -> Result<(), Errno> {
        sim::point("read", ObjId::NONE, &crate::costs::SYSCALL);
        let ns = self
            .open_proc_file(task, target, ProcFile::IdFileRead)?
            .user_ns();
        let shown = userns::uid_m_show(&ns, kind, &task.user_ns());
        let values: Vec<u64> = shown
            .split_whitespace()
            .filter_map(|n| n.parse().ok())
            .collect();
        task.own.lock().reported = values;
        Ok(())
    }

    /// `getresuid`/`getresgid`: the task's three ids of `kind`, as its
    /// user namespace sees them (`from_kuid_munged`), reported.
    pub(super) fn getresid(&self, task: &Task, kind: MapKind) -> Result<(), Errno> {
        sim::point("getresid", ObjId::NONE, &crate::costs::SYSCALL);
        let cred = task.cred();
        let ns = &cred.user_ns;
        let ids = match kind {
            MapKind::Uid => {
                [cred.uid, cred.euid, cred.suid].map(|k| userns::from_kuid_munged(ns, k))
            }
            MapKind::Gid => {
                [cred.gid, cred.egid, cred.sgid].map(|k| userns::from_kgid_munged(ns, k))
            }
        };
        task.own.lock().reported = ids.iter().map(|&id| u64::from(id)).collect();
        Ok(())
    }

    /// `capget` of the task itself (`cap_capget`): its effective,
    /// permitted and inheritable sets reported; no op sets an inheritable
    /// capability, so that set is empty.
    pub(super) fn capget(&self, task: &Task) -> Result<(), Errno> {
        sim::point("capget", ObjId::NONE, &crate::costs::SYSCALL);
        let cred = task.cred();
        task.own.lock().reported = vec![cred.cap_effective.0, cred.cap_permitted.0, 0];
        Ok(())
    }

    /// `ns_id(type)`: the task's namespace of `ns` (user, ipc or net),
    /// reported by its object's serial, which [`super::number_namespaces`]
    /// turns into the order of first appearance.
    pub(super) fn ns_id(&self, task: &Task, ns: &str) -> Result<(), Errno> {
        sim::point("proc_ns_get_link", ObjId::NONE, &crate::costs::SYSCALL);
        let obj = match ns {
            "user" => task.cred().user_ns.obj,
            "ipc" => task.nsproxy().ipc_ns.obj,
            _ => task.nsproxy().net_ns.obj,
        };
        task.own.lock().reported = vec![u64::from(obj.0)];
        Ok(())
    }

    /// One write(2) to `/proc/PID/<file>` of `target` (the writer itself
    /// when `None`), the file opened by the writer.
    pub(super) fn write_userns_file(
        &self,
        task: &Task,
        file: UsernsFile,
        target: Option<&str>,
        text: &str,
    ) -> Result<(), Errno> {
        sim::point("write", ObjId::NONE, &crate::costs::SYSCALL);
        let ns = match target {
            None => {
                Self::may_open_own(task, ProcFile::written(file))?;
                task.user_ns()
            }
            Some(t) => self
                .open_proc_file(task, t, ProcFile::written(file))?
                .user_ns(),
        };
        let cred = task.cred();
        match file {
            UsernsFile::UidMap => self.map_write_as(&ns, MapKind::Uid, &cred, &cred, text),
            UsernsFile::GidMap => self.map_write_as(&ns, MapKind::Gid, &cred, &cred, text),
            UsernsFile::Setgroups => {
                let result =
                    userns::proc_setgroups_write(&self.userns, &ns, &cred, text.as_bytes(), 0).0;
                noted(file, &ns, result.map(|_| ()))
            }
        }
    }

    /// `map_write` of `ns`'s map with the credentials of the file's opener
    /// and of the writer, noted in the trace.
    fn map_write_as(
        &self,
        ns: &Arc<userns::UserNamespace>,
        kind: MapKind,
        opener: &userns::Cred,
        writer: &userns::Cred,
        text: &str,
    ) -> Result<(), Errno> {
        let result = userns::map_write(&self.userns, ns, kind, opener, writer, text.as_bytes(), 0);
        let file = match kind {
            MapKind::Uid => UsernsFile::UidMap,
            MapKind::Gid => UsernsFile::GidMap,
        };
        noted(file, ns, result.result.map(|_| ()))
    }

    /// `open("/proc/PID/uid_map", O_WRONLY)` kept open: the file records
    /// the namespace and its opener's credentials, at offset 0.
    pub(super) fn open_uid_map(&self, task: &Task, target: &str) -> Result<(), Errno> {
        sim::point("open", ObjId::NONE, &crate::costs::SYSCALL);
        let ns = self
            .open_proc_file(task, target, ProcFile::IdFile)?
            .user_ns();
        task.own.lock().opened_map = Some(OpenedMap {
            ns,
            opener: task.cred(),
            pos: Arc::default(),
        });
        Ok(())
    }

    /// One write(2) through the kept uid_map file: `map_write` with the
    /// opener's credentials from the file, the writer's from the task now
    /// and the file's offset, which a write that succeeds moves past what
    /// it wrote (EINVAL for any write after it); EBADF when nothing was
    /// opened.
    pub(super) fn write_opened_map(&self, task: &Task, text: &str) -> Result<(), Errno> {
        sim::point("write", ObjId::NONE, &crate::costs::SYSCALL);
        let file = task.own.lock().opened_map.clone().ok_or(Errno::EBADF)?;
        let pos = file.pos.load(Ordering::Relaxed);
        let result = userns::map_write(
            &self.userns,
            &file.ns,
            MapKind::Uid,
            &file.opener,
            &task.cred(),
            text.as_bytes(),
            pos,
        );
        if let Ok(written) = &result.result {
            file.pos.store(pos + *written as u64, Ordering::Relaxed);
        }
        noted(UsernsFile::UidMap, &file.ns, result.result.map(|_| ()))
    }
}

/// A write's result in the trace, as the kernel's errno.
fn noted(
    file: UsernsFile,
    ns: &userns::UserNamespace,
    result: Result<(), userns::Error>,
) -> Result<(), Errno> {
    let code = result.map_or_else(|e| from_userns(e).as_return(), |_| 0);
    sim::note(file.name(), ns.obj, code);
    result.map_err(from_userns)
}
