//! The one path every namespace kind takes: `unshare` (kernel/fork.c
//! `ksys_unshare`, `unshare_userns`), the `unshare -U true` child, and the
//! namespaces of `clone` (kernel/nsproxy.c `copy_namespaces`,
//! `create_new_namespaces`, `switch_task_namespaces`,
//! `exit_task_namespaces`).
//!
//! The checks come in the kernel's order: a new user namespace first
//! (`create_user_ns`: depth, `max_user_namespaces` charged up the tree,
//! the creator's ids mapped), then CAP_SYS_ADMIN over the user namespace
//! that will own the others, then each kind in `create_new_namespaces`'s
//! order (ipc, then net), each charged to its owner's ucounts. Each kind
//! is freed with the kernel's timing: ipc namespaces through the free
//! queue, network namespaces through `cleanup_net` (a work item and a
//! grace period), user namespaces from a work item after their last
//! credential's grace period.

use super::World;
use crate::costs::{SWITCH_NS, SYSCALL};
use crate::errno::Errno;
use crate::process::{CreatorRlimits, ForkError};
use crate::setup::clone_flags::{CLONE_NEWIPC, CLONE_NEWNET, CLONE_NEWPID, CLONE_NEWUSER};
use crate::task::{Nsproxy, Task};
use ipcns::{IpcError, IpcNamespace};
use sim::ObjId;
use std::sync::Arc;
use userns::{caps, ns_capable, Cred};

/// The flags that make a namespace other than a user namespace.
const CLONE_NEW_NSPROXY: u64 = CLONE_NEWIPC | CLONE_NEWPID | CLONE_NEWNET;

impl World {
    /// `ksys_unshare`: a new user namespace (new credentials), then new
    /// other namespaces made with those credentials; both installed only
    /// once everything was made.
    pub(super) fn ksys_unshare(&self, task: &Task, flags: u64) -> Result<(), Errno> {
        sim::point("unshare", ObjId::NONE, &SYSCALL);
        self.unshare_in(task, flags)
    }

    /// The body of `unshare(flags)` by `task`.
    fn unshare_in(&self, task: &Task, flags: u64) -> Result<(), Errno> {
        let old = task.cred();
        let mut new_cred = if flags & CLONE_NEWUSER != 0 {
            Some(self.unshare_userns(task, &old)?)
        } else {
            None
        };
        let new_nsproxy = if flags & CLONE_NEW_NSPROXY != 0 {
            let cred = new_cred.as_ref().unwrap_or(&old);
            match self.unshare_nsproxy_namespaces(task, flags, cred) {
                Ok(ns) => Some(ns),
                Err(e) => {
                    if let Some(c) = new_cred {
                        // abort_creds: the new namespace's only reference goes.
                        self.procs.put_cred(c);
                    }
                    return Err(e);
                }
            }
        } else {
            None
        };
        if let Some(c) = new_cred.as_mut() {
            if let Err(e) = self.procs.set_cred_ucounts(c, &old) {
                self.unshare_cleanup_nsproxy(new_nsproxy);
                if let Some(c) = new_cred {
                    self.procs.put_cred(c);
                }
                return Err(e);
            }
        }
        if flags & CLONE_NEWIPC != 0 {
            // Orphan (or destroy) the segments made in the namespace left.
            self.exit_shm(task);
        }
        if let Some(ns) = new_nsproxy {
            self.switch_task_namespaces(task, ns);
        }
        if let Some(c) = new_cred {
            self.procs.commit_creds(task, c);
        }
        Ok(())
    }

    /// `unshare_userns`: a copy of the caller's credentials in a new child
    /// namespace it owns (the caller points them at their ucounts and
    /// installs them once every other namespace was made).
    fn unshare_userns(&self, task: &Task, old: &Cred) -> Result<Cred, Errno> {
        let new = self.procs.get_cred(old);
        let creator = CreatorRlimits::of(task, &task.own.lock());
        let name = self.next_userns_name(task);
        self.procs.create_user_ns_cred(new, &name, creator)
    }

    /// `ksys_unshare`'s error path once `set_cred_ucounts` failed: the new
    /// namespaces are put ("unshare: fix nsproxy leak in ksys_unshare() on
    /// set_cred_ucounts() failure", v7.1). Before, the nsproxy was simply
    /// forgotten: its namespaces, and the new user namespace they hold,
    /// stay charged for good.
    fn unshare_cleanup_nsproxy(&self, new_nsproxy: Option<Arc<Nsproxy>>) {
        let Some(ns) = new_nsproxy else {
            return;
        };
        if self.unshare_puts_nsproxy {
            self.put_nsproxy(ns);
        } else {
            // Kept by the world only so that the host frees it with the
            // execution: in the kernel nothing refers to it any more.
            sim::note("nsproxy leaked", ns.ipc_ns.obj, 0);
            self.leaked_nsproxies.lock().push(ns);
        }
    }

    /// `unshare_nsproxy_namespaces`: CAP_SYS_ADMIN over the user namespace
    /// of `cred` (the new one after CLONE_NEWUSER), then the namespaces.
    fn unshare_nsproxy_namespaces(
        &self,
        task: &Task,
        flags: u64,
        cred: &Cred,
    ) -> Result<Arc<Nsproxy>, Errno> {
        if !ns_capable(cred, &cred.user_ns, caps::CAP_SYS_ADMIN) {
            sim::note("unshare", ObjId::NONE, Errno::EPERM.as_return());
            return Err(Errno::EPERM);
        }
        self.create_new_namespaces(flags, task, task, cred)
    }

    /// `create_new_namespaces`: for each kind, a new namespace owned by
    /// `cred`'s user namespace when its flag is set, else a reference to
    /// the task's; what was made is put again when a later kind fails.
    /// `current` makes the call: `task` itself for unshare, the parent of
    /// the child `task` for clone.
    pub(super) fn create_new_namespaces(
        &self,
        flags: u64,
        task: &Task,
        current: &Task,
        cred: &Cred,
    ) -> Result<Arc<Nsproxy>, Errno> {
        let old = task.nsproxy();
        let ipc_ns = if flags & CLONE_NEWIPC != 0 {
            self.copy_ipc_ns(task, cred)?
        } else {
            old.ipc_ns.get();
            Arc::clone(&old.ipc_ns)
        };
        let pid_ns_for_children = if flags & CLONE_NEWPID != 0 {
            match self.copy_pid_ns(current, &old.pid_ns_for_children, cred) {
                Ok(ns) => ns,
                Err(e) => {
                    self.ipc.put_ipc_ns(ipc_ns);
                    return Err(e);
                }
            }
        } else {
            self.get_pid_ns(&old.pid_ns_for_children);
            Arc::clone(&old.pid_ns_for_children)
        };
        let net_ns = if flags & CLONE_NEWNET != 0 {
            match self.net.copy_net_ns(cred) {
                Ok(net) => net,
                Err(e) => {
                    self.ipc.put_ipc_ns(ipc_ns);
                    self.put_pid_ns(&pid_ns_for_children);
                    return Err(e);
                }
            }
        } else {
            old.net_ns.get();
            Arc::clone(&old.net_ns)
        };
        Ok(Arc::new(Nsproxy {
            ipc_ns,
            net_ns,
            pid_ns_for_children,
        }))
    }

    /// `copy_ipc_ns` with CLONE_NEWIPC: `create_ipc_ns` charged to the
    /// owner's (user namespace, euid), watched by the false-ENOSPC oracle.
    fn copy_ipc_ns(&self, task: &Task, cred: &Cred) -> Result<Arc<IpcNamespace>, Errno> {
        let user_ns = &cred.user_ns.ucounts_ns;
        let call = self
            .ipc
            .oracle
            .begin_call(ucounts::charge_chain(user_ns, cred.euid));
        let created = self
            .ipc
            .create_ipc_ns(user_ns, cred.euid, Some(&cred.user_ns));
        self.ipc.oracle.end_call(call, created.is_err(), &task.name);
        match created {
            Ok(ns) => {
                sim::note("unshare", ns.obj, 0);
                Ok(ns)
            }
            Err(IpcError::NoSpace) => {
                sim::note("unshare", ObjId::NONE, Errno::ENOSPC.as_return());
                Err(Errno::ENOSPC)
            }
        }
    }

    /// Install `new`, then put the old nsproxy.
    pub(super) fn switch_task_namespaces(&self, task: &Task, new: Arc<Nsproxy>) {
        sim::point("switch_task_namespaces", new.ipc_ns.obj, &SWITCH_NS);
        let old = {
            let _task_lock = task.alloc_lock.lock();
            task.replace_nsproxy(new)
        };
        self.put_nsproxy(old);
    }

    /// `put_nsproxy`: the last reference puts each namespace in it.
    pub(super) fn put_nsproxy(&self, ns: Arc<Nsproxy>) {
        if let Some(ns) = Arc::into_inner(ns) {
            self.ipc.put_ipc_ns(ns.ipc_ns);
            self.put_pid_ns(&ns.pid_ns_for_children);
            self.net.uevent.put_net(ns.net_ns);
        }
    }

    /// `do_exit` of `task` and its parent's `release_task` at once.
    pub(super) fn do_exit(&self, task: &Task) {
        self.exit_task(task);
        self.release_task(task);
    }

    /// `do_exit` of `task`: its live children are reaped first (a
    /// simplification: the kernel reparents them, and the kernel executor
    /// waits for them as here), then its image, files (the uevent socket)
    /// and namespaces go. It stays counted until it is released.
    pub(super) fn exit_task(&self, task: &Task) {
        self.group_exit(task);
        let children = std::mem::take(&mut task.own.lock().children);
        for child in children {
            self.reap(&child);
        }
        // `exit_mm`: the image goes, and its reference on the namespace it
        // was exec'd in; until it is reaped, the process's `/proc` files
        // belong to root.
        if let Some(mm) = task.replace_mm(None) {
            self.userns.put_user_ns(&mm.user_ns);
        }
        self.shm_detach_all(task);
        self.exit_shm(task);
        self.close_all_kept(task);
        self.mq_close_all(task);
        self.exit_pid_ns_init(task);
        self.exit_task_namespaces(task);
    }

    /// `release_task`: the exited task is uncounted, its credentials put
    /// and its pid no longer finds it.
    pub(super) fn release_task(&self, task: &Task) {
        self.exit_signal(task);
        self.free_pid(task);
        self.procs.release(task);
        task.set_released();
    }

    /// `exit_files` and `exit_task_namespaces`: the socket is closed, the
    /// task points at the initial namespaces and its nsproxy is put. A
    /// child that shares its parent's nsproxy only drops a count.
    fn exit_task_namespaces(&self, task: &Task) {
        let shared = Arc::strong_count(&task.nsproxy()) > 2;
        if !shared {
            sim::point("exit_task_namespaces", ObjId::NONE, &SWITCH_NS);
        }
        let sock = task.own.lock().uevent_sock.take();
        if let Some(sock) = sock {
            self.net.uevent.uevent_close(&sock);
        }
        let old = {
            let _task_lock = task.alloc_lock.lock();
            task.set_namespaces_gone();
            task.replace_nsproxy(Arc::clone(&self.init_nsproxy))
        };
        self.put_nsproxy(old);
    }

    /// A child process with the task's credentials and namespaces calls
    /// `unshare(flags)` and exits at once (`unshare -U true`): whatever it
    /// made is freed the way the kernel frees it, later.
    pub(super) fn unshare_and_exit(&self, task: &Task, flags: u64) -> Result<(), Errno> {
        sim::point("clone", ObjId::NONE, &SYSCALL);
        // A child like any other: counted against RLIMIT_NPROC (EAGAIN at
        // the limit), so that a new user namespace moves a count it has.
        let forked = task.with_own(|own| self.copy_process(task, own, 0, None));
        let child = forked.map_err(|e| match e {
            ForkError::Nproc => Errno::EAGAIN,
            ForkError::Other(e) => e,
        })?;
        let result = self.unshare_in(&child, flags);
        self.do_exit(&child);
        result
    }

    /// `setns(fd, CLONE_NEWNET or CLONE_NEWIPC)` into the namespace of that
    /// kind `target` is in (`netns_install`, `ipcns_install`): the caller
    /// needs CAP_SYS_ADMIN over the namespace's owner and over its own user
    /// namespace (EPERM); its other namespaces stay as they are.
    pub(super) fn setns_nsproxy(&self, task: &Task, target: &str, kind: u64) -> Result<(), Errno> {
        sim::point("setns", ObjId::NONE, &SYSCALL);
        let new = self.open_ns_of(task, target, kind)?;
        let cred = task.cred();
        let owner = if kind == CLONE_NEWNET {
            Some(Arc::clone(&new.net_ns.user_ns))
        } else {
            self.owner_of_ucounts(&new.ipc_ns.user_ns)
        };
        let permitted = owner.is_some_and(|o| ns_capable(&cred, &o, caps::CAP_SYS_ADMIN))
            && ns_capable(&cred, &cred.user_ns, caps::CAP_SYS_ADMIN);
        if !permitted {
            // The file is closed: its reference goes.
            self.put_nsproxy(new);
            return Err(Errno::EPERM);
        }
        self.switch_task_namespaces(task, new);
        Ok(())
    }

    /// The user namespace whose ucounts side is `ns` (the ipc crate keeps
    /// only that side of its owner).
    fn owner_of_ucounts(&self, ns: &Arc<ucounts::UcountsNs>) -> Option<Arc<userns::UserNamespace>> {
        self.userns
            .namespaces()
            .into_iter()
            .find(|u| Arc::ptr_eq(&u.ucounts_ns, ns))
    }

    /// A name for the next namespace a task makes: `<task>/userns<N>`.
    pub(super) fn next_userns_name(&self, task: &Task) -> String {
        let n = self
            .userns_made
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("{}/userns{n}", task.name)
    }
}
