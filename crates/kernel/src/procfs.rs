//! Opening another task's files under `/proc/PID` (fs/proc/base.c,
//! fs/proc/namespaces.c, kernel/ptrace.c): the file is gone once the task
//! has exited and been reaped (ENOENT); its namespace links open only for
//! a caller that may ptrace-read it (`ptrace_may_access` with
//! PTRACE_MODE_READ_FSCREDS, else EACCES); its uid_map, gid_map and
//! setgroups (mode 0644, owned by the task's euid, the task being
//! dumpable) open for writing only for their owner or a caller with
//! CAP_DAC_OVERRIDE over the owner (`generic_permission`, else EACCES);
//! anyone may open them for reading.

use super::World;
use crate::errno::Errno;
use crate::task::Task;
use std::sync::Arc;
use userns::{caps, from_kgid, from_kuid, ns_capable, Cred, UNMAPPED};

/// `__ptrace_may_access`: the caller's fs ids are the task's real,
/// effective and saved ids, or it has CAP_SYS_PTRACE over the task's
/// user namespace.
fn ptrace_may_read(caller: &Cred, target: &Cred) -> bool {
    let same_ids = [target.uid, target.euid, target.suid]
        .iter()
        .all(|u| *u == caller.fsuid)
        && [target.gid, target.egid].iter().all(|g| *g == caller.egid);
    same_ids || ns_capable(caller, &target.user_ns, caps::CAP_SYS_PTRACE)
}

/// `generic_permission` for a write to a 0644 file owned by `owner`.
fn may_write_owned_by(caller: &Cred, owner: &Cred) -> bool {
    let ns = &caller.user_ns;
    let owner_mapped =
        from_kuid(ns, owner.euid) != UNMAPPED && from_kgid(ns, owner.egid) != UNMAPPED;
    caller.fsuid == owner.euid || (owner_mapped && ns_capable(caller, ns, caps::CAP_DAC_OVERRIDE))
}

/// Which of a task's `/proc/PID` files is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcFile {
    /// `ns/user`, `ns/net`, `ns/ipc`, opened for reading.
    NsLink,
    /// `uid_map`, `gid_map` or `setgroups`, opened for writing.
    IdFile,
    /// `uid_map` or `gid_map` (mode 0444 for reading), opened for reading.
    IdFileRead,
}

impl World {
    /// Task `name` of the scenario, its `file` opened by `opener`.
    pub(super) fn open_proc_file(
        &self,
        opener: &Task,
        name: &str,
        file: ProcFile,
    ) -> Result<Arc<Task>, Errno> {
        let target = Arc::clone(self.task_named(name).ok_or(Errno::ENOENT)?);
        if std::ptr::eq(Arc::as_ptr(&target), opener) {
            return Ok(target);
        }
        if target.own.lock().released {
            return Err(Errno::ENOENT);
        }
        let (caller, theirs) = (opener.cred(), target.cred());
        let permitted = match file {
            ProcFile::NsLink => ptrace_may_read(&caller, &theirs),
            ProcFile::IdFile => may_write_owned_by(&caller, &theirs),
            ProcFile::IdFileRead => true,
        };
        if permitted {
            Ok(target)
        } else {
            Err(Errno::EACCES)
        }
    }
}
