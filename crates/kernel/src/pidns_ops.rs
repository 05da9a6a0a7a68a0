//! The pid-namespace paths of the syscalls: `copy_pid_ns` and
//! `create_pid_namespace` for unshare and clone, the references
//! (`get_pid_ns`, `put_pid_ns` and the deferred free), and a process's
//! pid (`alloc_pid`, `free_pid`, the exit of a namespace's init), on the
//! model of [`crate::pidns`].
//!
//! Models kernel/pid_namespace.c and kernel/pid.c.

use super::World;
use crate::errno::Errno;
use crate::pidns::{PidNamespace, MAX_PID_NS_LEVEL};
use crate::task::Task;
use sim::HostMutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use sync::{schedule_work, synchronize_rcu, Refcount, Work};
use ucounts::UcountType;
use userns::Cred;
impl World {
    /// `copy_pid_ns` with CLONE_NEWPID: EINVAL when the calling task
    /// (`current`, the parent of a clone) already made one for its
    /// children (its `pid_ns_for_children`, `old`, is not the namespace it
    /// is active in), else `create_pid_namespace` below it, owned by
    /// `cred`'s user namespace.
    pub(super) fn copy_pid_ns(
        &self,
        current: &Task,
        old: &Arc<PidNamespace>,
        cred: &Cred,
    ) -> Result<Arc<PidNamespace>, Errno> {
        if !Arc::ptr_eq(&current.pid_ns(), old) {
            return Err(Errno::EINVAL);
        }
        self.create_pid_namespace(old, cred)
    }

    /// `create_pid_namespace`: beyond [`MAX_PID_NS_LEVEL`] ENOSPC (EINVAL
    /// before v4.9, nothing before v3.11), and ENOSPC at the owner's
    /// `max_pid_namespaces` (charged to its euid up the tree, from v4.9).
    fn create_pid_namespace(
        &self,
        parent: &Arc<PidNamespace>,
        cred: &Cred,
    ) -> Result<Arc<PidNamespace>, Errno> {
        let patches = self.pidns_patches;
        let level = parent.level + 1;
        if patches.nesting_limit && level > MAX_PID_NS_LEVEL {
            return Err(match patches.ucounts_limits {
                true => Errno::ENOSPC,
                false => Errno::EINVAL,
            });
        }
        let ucounts = match patches.ucounts_limits {
            true => Some(
                self.ucounts
                    .inc_ucount(
                        &cred.user_ns.ucounts_ns,
                        cred.euid,
                        UcountType::PidNamespaces,
                    )
                    .ok_or(Errno::ENOSPC)?,
            ),
            false => None,
        };
        parent.get();
        cred.user_ns.get();
        let ns = Arc::new(PidNamespace {
            obj: sim::new_object("pid_namespace"),
            level,
            count: Some(Refcount::new("pid_ns.count", 1)),
            parent: Some(Arc::clone(parent)),
            ucounts,
            user_ns: Some(Arc::clone(&cred.user_ns)),
            adding: AtomicBool::new(true),
            init: HostMutex::new("the pid namespace's init", None),
            next_nr: HostMutex::new("pid_ns->idr", 1),
        });
        sim::note("create_pid_namespace", ns.obj, 0);
        Ok(ns)
    }

    /// `get_pid_ns`.
    pub(super) fn get_pid_ns(&self, ns: &PidNamespace) {
        ns.get();
    }

    /// `put_pid_ns`: the last reference destroys the namespace
    /// (`destroy_pid_namespace`) and puts its parent at once; its charge
    /// and its owner go an RCU grace period later (`delayed_free_pidns`).
    pub(super) fn put_pid_ns(&self, ns: &Arc<PidNamespace>) {
        let mut cur = Some(Arc::clone(ns));
        while let Some(ns) = cur.take() {
            let Some(count) = &ns.count else {
                return;
            };
            if !count.dec_and_test() {
                return;
            }
            sim::note("destroy_pid_namespace", ns.obj, 0);
            cur = ns.parent.clone();
            self.delayed_free_pidns(ns);
        }
    }

    /// `call_rcu(delayed_free_pidns)`: after a grace period the
    /// `max_pid_namespaces` charge is returned and the owner put. (The
    /// set-up's chain, owned by the initial user namespace, holds none.)
    fn delayed_free_pidns(&self, ns: Arc<PidNamespace>) {
        if ns.ucounts.is_none() && ns.user_ns.is_none() {
            return;
        }
        // Weak: a work still queued when the execution ends must not hold
        // the world that holds its workqueue.
        let world = self.me.clone();
        let work = Work::new("delayed_free_pidns", &self.wq, move || {
            synchronize_rcu();
            let Some(world) = world.upgrade() else {
                return;
            };
            if let Some(u) = &ns.ucounts {
                world.ucounts.dec_ucount(u, UcountType::PidNamespaces);
            }
            if let Some(owner) = &ns.user_ns {
                world.userns.put_user_ns(owner);
            }
        });
        schedule_work(&work);
    }

    /// `alloc_pid` in the namespace `child`'s nsproxy makes children in:
    /// ENOMEM once that namespace's init has exited; the first process
    /// born in a namespace is its init.
    /// Its number there (0 in the initial namespace, whose numbers are
    /// the machine's to give and no op reports).
    pub(super) fn alloc_pid(&self, child: &Task) -> Result<u32, Errno> {
        let ns = Arc::clone(&child.nsproxy().pid_ns_for_children);
        if ns.is_initial() {
            return Ok(0);
        }
        if !ns.adding.load(Ordering::Relaxed) {
            return Err(Errno::ENOMEM);
        }
        ns.get();
        ns.init.lock().get_or_insert(child.pid);
        let nr = ns.alloc_nr();
        child.set_pid_ns(ns);
        Ok(nr)
    }

    /// `getpid` (`0` for the pid) or `getppid`: the task's pid, or its
    /// parent's, as the task's pid namespace numbers them (a parent
    /// outside it is 0), reported where that namespace is below the one
    /// the scenario's task started in; nothing is reported in the
    /// scenario's own namespaces, whose numbers are the machine's.
    pub(super) fn getpid(&self, task: &Task, parent: bool) -> Result<(), Errno> {
        sim::point("getpid", sim::ObjId::NONE, &crate::costs::SYSCALL);
        let level = task.pid_ns().level;
        let mut own = task.own.lock();
        let nrs = own.pid_nrs;
        own.reported = match level > nrs.home_level {
            true => vec![u64::from(if parent { nrs.ppid } else { nrs.nr })],
            false => Vec::new(),
        };
        Ok(())
    }

    /// At `do_exit` of a namespace's init (`zap_pid_ns_processes`): no
    /// process is born in it any more.
    pub(super) fn exit_pid_ns_init(&self, task: &Task) {
        let ns = task.pid_ns();
        if !ns.is_initial() && *ns.init.lock() == Some(task.pid) {
            ns.adding.store(false, Ordering::Relaxed);
        }
    }

    /// `free_pid` at `release_task`: the pid's reference on its namespace
    /// is put an RCU grace period later (`delayed_put_pid`).
    pub(super) fn free_pid(&self, task: &Task) {
        let ns = task.pid_ns();
        if ns.is_initial() {
            return;
        }
        let world = self.me.clone();
        let work = Work::new("delayed_put_pid", &self.wq, move || {
            synchronize_rcu();
            if let Some(world) = world.upgrade() {
                world.put_pid_ns(&ns);
            }
        });
        schedule_work(&work);
    }
}
