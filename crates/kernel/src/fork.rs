//! `fork`/`clone` and reaping (kernel/fork.c `copy_process`, kernel/exit.c
//! `wait4` and `release_task`): the child's credentials from
//! [`crate::process::Procs::copy_creds`] (a new user namespace with
//! CLONE_NEWUSER, through the one `create_user_ns`), the RLIMIT_NPROC check
//! of the era, and its namespaces from the one `create_new_namespaces`.

use super::World;
use crate::costs::COPY_PROCESS;
use crate::costs::SYSCALL;
use crate::errno::Errno;
use crate::process::{CreatorRlimits, ForkError};
use crate::setup::child_name;
use crate::setup::clone_flags::{CLONE_NEWIPC, CLONE_NEWNET, CLONE_NEWPID, CLONE_NEWUSER};
use crate::task::{Acting, Own, Task};
use sim::ObjId;
use std::sync::Arc;

impl World {
    /// `fork`/`clone(flags)`; with `acting`, the child runs the ops of its
    /// `[[task.child]]` block as a task of its own.
    pub(super) fn fork(&self, task: &Task, flags: u64, acting: Option<&str>) -> Result<(), Errno> {
        sim::point("fork", ObjId::NONE, &SYSCALL);
        let name = acting.map(|child| child_name(&task.name, child));
        match task.with_own(|own| self.copy_process(task, own, flags, name.as_deref())) {
            Ok(child) => {
                sim::note("fork", ObjId::NONE, child.pid as i64);
                task.own.lock().children.push(Arc::clone(&child));
                if child.acting.is_some() {
                    self.start_acting_child(child);
                }
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

    /// The child runs its block's ops as a task of its own, then exits by
    /// itself; its parent reaps it ([`World::reap`]). Other tasks find it
    /// by its name from now on.
    fn start_acting_child(&self, child: Arc<Task>) {
        let ops = self
            .setup_children
            .iter()
            .find(|c| c.name == child.name)
            .map(|c| c.ops.clone())
            .unwrap_or_default();
        self.acting_children
            .lock()
            .insert(child.name.clone(), Arc::clone(&child));
        let world = self.me.upgrade().expect("the world outlives its tasks");
        sim::spawn(child.name.clone(), false, move || {
            for op in &ops {
                world.do_op(&child, op);
            }
            world.exit_task(&child);
            let acting = child.acting.as_ref().expect("a child that acts");
            acting.set_exited();
            sim::wake_all(acting.obj, 0);
        });
    }

    /// `copy_process`: credentials, the RLIMIT_NPROC check, namespaces.
    /// A child named `acting` runs ops of its own ([`Task::acting`]) and
    /// has its parent's kept namespace files and opened uid_map (`dup_fd`);
    /// another keeps none of them (the kernel executor's `in_child_of`
    /// closes them).
    pub(super) fn copy_process(
        &self,
        parent: &Task,
        own: &mut Own,
        flags: u64,
        acting: Option<&str>,
    ) -> Result<Arc<Task>, ForkError> {
        sim::point("copy_process", ObjId::NONE, &COPY_PROCESS);
        let procs = &self.procs;
        let _flight = procs.flight();
        let parent_cred = parent.cred();
        procs.check_before_copy(&parent_cred, own, parent.pid)?;
        let pid = procs.next_pid();
        let name = (flags & CLONE_NEWUSER != 0).then(|| self.next_userns_name(parent));
        let creator = CreatorRlimits::of(parent, own);
        let cred = procs.copy_creds(&parent_cred, name.as_deref(), creator, pid)?;
        if let Err(e) = procs.check_after_copy(&parent_cred, own, parent.pid, &cred) {
            procs.fork_undone(cred, pid);
            return Err(e);
        }
        // `dup_mm`: the child's image is a copy of the parent's.
        let mm = parent.mm().expect("a process forks before it exits");
        mm.user_ns.get();
        let mut child = Task::new(
            pid,
            acting.map_or_else(|| format!("{}/{pid}", parent.name), str::to_string),
            cred.clone(),
            parent.nsproxy(),
            mm,
            own.rlimit_nproc.0,
        );
        child.own.lock().rlimit_nproc = own.rlimit_nproc;
        child.copy_rlimits_of(parent);
        let made = if flags & (CLONE_NEWIPC | CLONE_NEWPID | CLONE_NEWNET) != 0 {
            self.copy_namespaces(&child, parent, flags, &cred)
        } else {
            Ok(())
        };
        let nr = match made.and_then(|()| self.alloc_pid(&child)) {
            Ok(nr) => nr,
            Err(e) => {
                if let Some(mm) = child.replace_mm(None) {
                    self.userns.put_user_ns(&mm.user_ns);
                }
                let shared = child.replace_nsproxy(parent.nsproxy());
                self.put_nsproxy(shared);
                procs.fork_undone(cred, pid);
                return Err(ForkError::Other(e));
            }
        };
        // `getppid`: the parent's number where the child's namespace
        // numbers it, 0 when the parent is outside it.
        let same_ns = Arc::ptr_eq(&child.pid_ns(), &parent.pid_ns());
        child.own.lock().pid_nrs = crate::task::PidNrs {
            nr,
            ppid: if same_ns { own.pid_nrs.nr } else { 0 },
            home_level: own.pid_nrs.home_level,
        };
        if acting.is_some() {
            child.acting = Some(Acting::new());
            for ns in own.ns_files.values() {
                self.userns.get_user_ns(ns);
            }
            for q in &own.mq_fds {
                q.hold();
            }
            let mut inherited = child.own.lock();
            inherited.ns_files = own.ns_files.clone();
            inherited.mq_fds = own.mq_fds.clone();
            inherited.opened_map = own.opened_map.clone();
            inherited.sysv_ids = own.sysv_ids;
        }
        // `dup_mmap`: the image's SysV attachments are the child's too.
        for file in &own.shm_maps {
            self.ipc.shm_open(file);
        }
        child.own.lock().shm_maps = own.shm_maps.clone();
        procs.fork_committed(&parent_cred, own, &cred, pid);
        Ok(Arc::new(child))
    }

    /// `copy_namespaces` with CLONE_NEW* flags: CAP_SYS_ADMIN over the
    /// child's user namespace, then its own nsproxy, made as `parent`
    /// (the caller of clone) asks.
    fn copy_namespaces(
        &self,
        child: &Task,
        parent: &Task,
        flags: u64,
        cred: &userns::Cred,
    ) -> Result<(), Errno> {
        if !userns::ns_capable(cred, &cred.user_ns, userns::caps::CAP_SYS_ADMIN) {
            return Err(Errno::EPERM);
        }
        let new = self.create_new_namespaces(flags, child, parent, cred)?;
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
        self.reap(&child);
        Ok(())
    }

    /// A child is reaped: one that acts is waited for until it has exited
    /// by itself, then released (`wait4`); any other exits here first.
    pub(super) fn reap(&self, child: &Task) {
        match &child.acting {
            Some(acting) => {
                sim::wait_until("wait4", acting.obj, || acting.has_exited());
                self.release_task(child);
            }
            None => self.do_exit(child),
        }
    }
}
