//! `fork`/`clone` and reaping (kernel/fork.c `copy_process`, kernel/exit.c
//! `wait4` and `release_task`): the child's credentials from
//! [`crate::process::Procs::copy_creds`] (a new user namespace with
//! CLONE_NEWUSER, through the one `create_user_ns`), the RLIMIT_NPROC check
//! of the era, and its namespaces from the one `create_new_namespaces`.

use super::World;
use crate::costs::COPY_PROCESS;
use crate::costs::SYSCALL;
use crate::errno::Errno;
use crate::process::ForkError;
use crate::setup::clone_flags::{CLONE_NEWIPC, CLONE_NEWNET, CLONE_NEWUSER};
use crate::task::{Own, Task};
use sim::ObjId;
use std::sync::Arc;

impl World {
    pub(super) fn fork(&self, task: &Task, flags: u64) -> Result<(), Errno> {
        sim::point("fork", ObjId::NONE, &SYSCALL);
        match task.with_own(|own| self.copy_process(task, own, flags)) {
            Ok(child) => {
                sim::note("fork", ObjId::NONE, child.pid as i64);
                task.own.lock().children.push(child);
                Ok(())
            }
            Err(ForkError::Nproc) => {
                sim::note("fork: RLIMIT_NPROC", ObjId::NONE, Errno::EAGAIN.as_return());
                Err(Errno::EAGAIN)
            }
            Err(ForkError::Other(e)) => {
                sim::note("fork", ObjId::NONE, e.as_return());
                Err(e)
            }
        }
    }

    /// `copy_process`: credentials, the RLIMIT_NPROC check, namespaces.
    pub(super) fn copy_process(
        &self,
        parent: &Task,
        own: &mut Own,
        flags: u64,
    ) -> Result<Arc<Task>, ForkError> {
        sim::point("copy_process", ObjId::NONE, &COPY_PROCESS);
        let procs = &self.procs;
        let _flight = procs.flight();
        let parent_cred = parent.cred();
        procs.check_before_copy(&parent_cred, own, parent.pid)?;
        let pid = procs.next_pid();
        let name = (flags & CLONE_NEWUSER != 0).then(|| self.next_userns_name(parent));
        let cred = procs.copy_creds(&parent_cred, name.as_deref(), own.rlimit_nproc.0, pid)?;
        if let Err(e) = procs.check_after_copy(&parent_cred, own, parent.pid, &cred) {
            procs.fork_undone(cred, pid);
            return Err(e);
        }
        // `dup_mm`: the child's image is a copy of the parent's.
        let mm = parent.mm().expect("a process forks before it exits");
        mm.user_ns.get();
        let child = Task::new(
            pid,
            format!("{}/{pid}", parent.name),
            cred.clone(),
            parent.nsproxy(),
            mm,
            own.rlimit_nproc.0,
        );
        child.own.lock().rlimit_nproc = own.rlimit_nproc;
        if flags & (CLONE_NEWIPC | CLONE_NEWNET) != 0 {
            if let Err(e) = self.copy_namespaces(&child, flags, &cred) {
                if let Some(mm) = child.replace_mm(None) {
                    self.userns.put_user_ns(&mm.user_ns);
                }
                procs.fork_undone(cred, pid);
                return Err(ForkError::Other(e));
            }
        }
        procs.fork_committed(&parent_cred, own, &cred, pid);
        Ok(Arc::new(child))
    }

    /// `copy_namespaces` with CLONE_NEW* flags: CAP_SYS_ADMIN over the
    /// child's user namespace, then its own nsproxy.
    fn copy_namespaces(&self, child: &Task, flags: u64, cred: &userns::Cred) -> Result<(), Errno> {
        if !userns::ns_capable(cred, &cred.user_ns, userns::caps::CAP_SYS_ADMIN) {
            return Err(Errno::EPERM);
        }
        let new = self.create_new_namespaces(flags, child, cred)?;
        let shared = child.replace_nsproxy(new);
        self.put_nsproxy(shared);
        Ok(())
    }

    /// The task's newest child exits and the task reaps it (`wait4`).
    pub(super) fn wait_child(&self, task: &Task) -> Result<(), Errno> {
        sim::point("wait4", ObjId::NONE, &SYSCALL);
        let Some(child) = task.own.lock().children.pop() else {
            return Err(Errno::ECHILD);
        };
        self.do_exit(&child);
        Ok(())
    }
}
