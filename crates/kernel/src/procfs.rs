//! Opening another task's files under `/proc/PID` (fs/proc/base.c,
//! fs/proc/namespaces.c, kernel/ptrace.c, security/commoncap.c). The open is the path walk and
//! then the file's own `open`, and the task may be reaped at any point
//! between them:
//! - `proc_pid_lookup` finds no task once it has been reaped (ENOENT);
//! - the walk then checks the permission of the `/proc/PID` directory,
//!   and `proc_pid_permission` fails with ESRCH for a task reaped since
//!   the lookup;
//! - its namespace links open only for a caller that may ptrace-read it
//!   (`ptrace_may_access` with PTRACE_MODE_READ_FSCREDS and commoncap's
//!   `cap_ptrace_access_check`, else EACCES), and not once the exiting
//!   task has let go of its namespaces (ENOENT);
//! - its uid_map, gid_map and setgroups (mode 0644, owned as
//!   `task_dump_owner` says: by the task's euid while it is dumpable, by
//!   root once a change of ids made it not dumpable or once it exited)
//!   open for writing only for their owner or a caller with
//!   CAP_DAC_OVERRIDE over the owner (`generic_permission`, else EACCES);
//!   anyone may open them for reading;
//! - those id files' own open finds the task again with `get_proc_task`:
//!   for a task reaped since the walk, `proc_id_map_open` fails with
//!   EINVAL and `proc_setgroups_open` with ESRCH.
//!
//! A namespace link's open (`proc_ns_get_link`, `ns_get_path`) takes a
//! reference on the task's namespace of that kind, which the open file
//! holds until it is closed: [`World::open_ns_user`] and
//! [`World::open_ns_of`]. The walk is an RCU-mode path walk, so the
//! namespace found cannot be freed before that reference is taken.

use super::World;
use crate::costs::{PROC_FILE_OPEN, PROC_PID_WALK};
use crate::errno::Errno;
use crate::setup::clone_flags::CLONE_NEWNET;
use crate::setup::UsernsFile;
use crate::task::{Mm, Nsproxy, Task};
use sim::ObjId;
use std::sync::Arc;
use userns::{caps, from_kgid, from_kuid, make_kgid, make_kuid, ns_capable, Cred, UNMAPPED};

/// `ptrace_may_access(task, PTRACE_MODE_READ_FSCREDS)`
/// (`__ptrace_may_access`, then commoncap's `cap_ptrace_access_check`):
/// - the caller's fs ids are the task's real, effective and saved ids, or
///   it has CAP_SYS_PTRACE over the task's user namespace;
/// - a task that is not dumpable only to a caller with CAP_SYS_PTRACE
///   over its `mm->user_ns`;
/// - and the caller is in the task's user namespace with every
///   capability the task is permitted in its effective set, or has
///   CAP_SYS_PTRACE over the task's namespace.
fn ptrace_may_read(caller: &Cred, target: &Cred, mm: Option<&Mm>) -> bool {
    let may_ptrace = |ns| ns_capable(caller, ns, caps::CAP_SYS_PTRACE);
    let same_ids = [target.uid, target.euid, target.suid]
        .iter()
        .all(|u| *u == caller.fsuid)
        && [target.gid, target.egid].iter().all(|g| *g == caller.egid);
    if !same_ids && !may_ptrace(&target.user_ns) {
        return false;
    }
    if let Some(mm) = mm.filter(|mm| !mm.dumpable) {
        if !may_ptrace(&mm.user_ns) {
            return false;
        }
    }
    // With PTRACE_MODE_FSCREDS the caller's effective set is held against
    // what the task is permitted.
    let within = Arc::ptr_eq(&caller.user_ns, &target.user_ns)
        && target.cap_permitted.is_subset_of(caller.cap_effective);
    within || may_ptrace(&target.user_ns)
}

/// `task_dump_owner`: a dumpable task's files belong to its effective
/// ids; a task that is not dumpable's to root of its `mm->user_ns` where
/// that maps root, else to the initial namespace's root, as are those of
/// an exiting task that has no `mm` any more.
fn dump_owner(target: &Cred, mm: Option<&Mm>) -> (u32, u32) {
    let Some(mm) = mm else {
        return (0, 0);
    };
    if mm.dumpable {
        return (target.euid, target.egid);
    }
    let root = |kid: u32| if kid == UNMAPPED { 0 } else { kid };
    (
        root(make_kuid(&mm.user_ns, 0)),
        root(make_kgid(&mm.user_ns, 0)),
    )
}

/// `generic_permission` for a write to a 0644 file owned by `owner`:
/// its owner, or CAP_DAC_OVERRIDE in the caller's namespace when that
/// maps the owner (`capable_wrt_inode_uidgid`). In that order: the
/// owner's write looks at no map, and the maps are read only for a
/// caller with the capability.
fn may_write_owned_by(caller: &Cred, (uid, gid): (u32, u32)) -> bool {
    let ns = &caller.user_ns;
    let owner_mapped = || from_kuid(ns, uid) != UNMAPPED && from_kgid(ns, gid) != UNMAPPED;
    caller.fsuid == uid || (ns_capable(caller, ns, caps::CAP_DAC_OVERRIDE) && owner_mapped())
}

/// Which of a task's `/proc/PID` files is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcFile {
    /// `ns/user`, `ns/net`, `ns/ipc`, opened for reading.
    NsLink,
    /// `uid_map` or `gid_map`, opened for writing.
    IdFile,
    /// `setgroups`, opened for writing.
    Setgroups,
    /// `uid_map` or `gid_map` (mode 0444 for reading), opened for reading.
    IdFileRead,
}

impl ProcFile {
    /// The `/proc/PID` file a write to `file` opens.
    pub fn written(file: UsernsFile) -> ProcFile {
        match file {
            UsernsFile::UidMap | UsernsFile::GidMap => ProcFile::IdFile,
            UsernsFile::Setgroups => ProcFile::Setgroups,
        }
    }

    /// What the file's own open returns when its task was reaped after
    /// the walk; `None` where that window is not modelled.
    fn open_without_task(self) -> Option<Errno> {
        match self {
            ProcFile::NsLink => None,
            ProcFile::IdFile | ProcFile::IdFileRead => Some(Errno::EINVAL),
            ProcFile::Setgroups => Some(Errno::ESRCH),
        }
    }
}

impl World {
    /// Task `name` of the scenario, its `file` opened by `opener`.
    pub(super) fn open_proc_file(
        &self,
        opener: &Task,
        name: &str,
        file: ProcFile,
    ) -> Result<Arc<Task>, Errno> {
        let target = self.task_named(name).ok_or(Errno::ENOENT)?;
        if std::ptr::eq(Arc::as_ptr(&target), opener) {
            Self::may_open_own(opener, file)?;
            return Ok(target);
        }
        Self::proc_pid_walk(&target)?;
        let (caller, theirs, mm) = (opener.cred(), target.cred(), target.mm());
        let permitted = match file {
            ProcFile::NsLink => ptrace_may_read(&caller, &theirs, mm.as_ref()),
            ProcFile::IdFile | ProcFile::Setgroups => {
                may_write_owned_by(&caller, dump_owner(&theirs, mm.as_ref()))
            }
            ProcFile::IdFileRead => true,
        };
        if !permitted {
            return Err(Errno::EACCES);
        }
        if let Some(gone) = file.open_without_task() {
            sim::point("proc_id_map_open", ObjId::NONE, &PROC_FILE_OPEN);
            if target.is_released() {
                return Err(gone);
            }
        }
        Ok(target)
    }

    /// The open of one of `task`'s own `/proc/self` files: no walk and no
    /// ptrace check (a task may always look at itself), but a map or
    /// `setgroups` file opened for writing is still judged by its owner,
    /// which is root once the task's ids changed and it stopped being
    /// dumpable: EACCES, before any `map_write` rule.
    pub(super) fn may_open_own(task: &Task, file: ProcFile) -> Result<(), Errno> {
        let writes = matches!(file, ProcFile::IdFile | ProcFile::Setgroups);
        let cred = task.cred();
        if writes && !may_write_owned_by(&cred, dump_owner(&cred, task.mm().as_ref())) {
            return Err(Errno::EACCES);
        }
        Ok(())
    }

    /// `open("/proc/PID/ns/user")` of task `name`: the walk, then
    /// `userns_get`'s reference on the namespace of its credentials, held
    /// by the open file until [`World::close_ns_user`].
    pub(super) fn open_ns_user(
        &self,
        opener: &Task,
        name: &str,
    ) -> Result<Arc<userns::UserNamespace>, Errno> {
        let _rcu = sync::rcu_read_lock();
        let target = self.open_proc_file(opener, name, ProcFile::NsLink)?;
        let ns = target.user_ns();
        self.userns.get_user_ns(&ns);
        Ok(ns)
    }

    /// The file of [`World::open_ns_user`] is closed.
    pub(super) fn close_ns_user(&self, ns: &Arc<userns::UserNamespace>) {
        self.userns.put_user_ns(ns);
    }

    /// `open("/proc/PID/ns/ipc")` or `ns/net` of task `name`: the walk,
    /// then (`ipcns_get`, `netns_get`) a reference on that namespace of
    /// its nsproxy, returned in an nsproxy of its own (the other kind is
    /// the opener's, referenced too) that the caller installs or puts.
    pub(super) fn open_ns_of(
        &self,
        opener: &Task,
        name: &str,
        kind: u64,
    ) -> Result<Arc<Nsproxy>, Errno> {
        let _rcu = sync::rcu_read_lock();
        let target = self.open_proc_file(opener, name, ProcFile::NsLink)?;
        // `ipcns_get`, `netns_get`: the reference is taken under the
        // target's task_lock, while its nsproxy still holds the namespace.
        // The nsproxies are let go of before the next scheduling point: a
        // copy held across one would keep its last put from putting the
        // namespaces in it (`put_nsproxy` counts the copies).
        let task_lock = target.alloc_lock.lock();
        if target.namespaces_gone() {
            return Err(Errno::ENOENT);
        }
        let pid_ns_for_children = Arc::clone(&opener.nsproxy().pid_ns_for_children);
        let (ipc_ns, net_ns) = {
            let (theirs, mine) = (target.nsproxy(), opener.nsproxy());
            if kind == CLONE_NEWNET {
                (Arc::clone(&mine.ipc_ns), Arc::clone(&theirs.net_ns))
            } else {
                (Arc::clone(&theirs.ipc_ns), Arc::clone(&mine.net_ns))
            }
        };
        // The target's namespace under its lock, then the opener's own.
        if kind == CLONE_NEWNET {
            net_ns.get();
            drop(task_lock);
            ipc_ns.get();
        } else {
            ipc_ns.get();
            drop(task_lock);
            net_ns.get();
        }
        self.get_pid_ns(&pid_ns_for_children);
        Ok(Arc::new(Nsproxy {
            ipc_ns,
            net_ns,
            pid_ns_for_children,
        }))
    }

    /// The walk to `/proc/PID`: the pid's lookup, then the directory's
    /// permission, each of which finds the task only until it is reaped.
    fn proc_pid_walk(target: &Task) -> Result<(), Errno> {
        if target.is_released() {
            return Err(Errno::ENOENT);
        }
        sim::point("proc_pid_permission", ObjId::NONE, &PROC_PID_WALK);
        if target.is_released() {
            return Err(Errno::ESRCH);
        }
        Ok(())
    }
}
