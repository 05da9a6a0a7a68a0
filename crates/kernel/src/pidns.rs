//! Pid namespaces: made by `unshare(CLONE_NEWPID)` (for the children the
//! task forks afterwards) or `clone(CLONE_NEWPID)` (the child is the first
//! process, the init, of the new one), charged to `max_pid_namespaces` of
//! the owner's user namespace, and freed when the last reference goes:
//! the nsproxies whose children would be born in it, and the pid of every
//! process in it, which is put an RCU grace period after the process is
//! reaped. Until then the namespace stays charged, and a new one can be
//! refused (ENOSPC) although nothing alive uses the old: the running
//! kernel does it on a create-and-reap loop under a limit of 1.
//!
//! Models kernel/pid_namespace.c (`copy_pid_ns`, `create_pid_namespace`,
//! `put_pid_ns`, `destroy_pid_namespace`, `zap_pid_ns_processes`'s
//! `disable_pid_allocation`) and kernel/pid.c (`alloc_pid`, `free_pid`,
//! `delayed_put_pid`). The initial pid namespace is never counted, as the
//! kernel's `get_pid_ns`/`put_pid_ns` skip it. Not modelled: the check
//! that a new namespace's owner is the parent namespace's owner or one of
//! its descendants (EINVAL otherwise), which only a task that joined
//! another user namespace by setns could fail.

use super::World;
use crate::errno::Errno;
use crate::task::Task;
use sim::{HostMutex, ObjId};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use sync::{schedule_work, synchronize_rcu, Refcount, Work};
use ucounts::{UcountType, Ucounts};
use userns::Cred;

/// MAX_PID_NS_LEVEL: the deepest pid namespace below the initial one.
pub const MAX_PID_NS_LEVEL: u32 = 32;

/// The pid-namespace behaviours that changed over history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PidnsPatches {
    /// v3.11: no namespace deeper than [`MAX_PID_NS_LEVEL`].
    pub nesting_limit: bool,
    /// v4.9: `max_pid_namespaces` charged through ucounts; too deep is
    /// ENOSPC (EINVAL before).
    pub ucounts_limits: bool,
}

/// A pid namespace (`struct pid_namespace`).
pub struct PidNamespace {
    pub obj: ObjId,
    pub level: u32,
    /// `ns.count`; `None` for the initial namespace, which is not counted.
    count: Option<Refcount>,
    parent: Option<Arc<PidNamespace>>,
    /// The `max_pid_namespaces` charge (`inc_pid_namespaces`), returned
    /// when the namespace is destroyed.
    ucounts: Option<Arc<Ucounts>>,
    /// The owning user namespace, held until the namespace is destroyed
    /// (`get_user_ns` in `create_pid_namespace`); `None` for those the
    /// initial user namespace owns, which is never freed.
    user_ns: Option<Arc<userns::UserNamespace>>,
    /// PIDNS_ADDING: cleared when its init exits, after which no process
    /// is born in it (`alloc_pid` fails with ENOMEM).
    adding: AtomicBool,
    /// The pid of its init, the first process born in it.
    init: HostMutex<Option<u64>>,
}

impl PidNamespace {
    /// The initial pid namespace.
    pub fn initial() -> Arc<PidNamespace> {
        Arc::new(PidNamespace {
            obj: ObjId::NONE,
            level: 0,
            count: None,
            parent: None,
            ucounts: None,
            user_ns: None,
            adding: AtomicBool::new(true),
            init: HostMutex::new("init_pid_ns's init", Some(1)),
        })
    }

    /// The pid namespace `depth` levels below `init` that a set-up task
    /// starts in, as `unshare --pid --fork` run `depth` times by global
    /// root before the task takes its credentials leaves it: each level
    /// owned by the initial user namespace and charged to its root (from
    /// v4.9), the task the init of the deepest. Each level's reference is
    /// the one its child level holds on its parent; the deepest's is the
    /// task's nsproxy's, and the task's pid takes one more. (The waiting
    /// parents of the chain, which exit with the task, are not modelled.)
    pub(crate) fn setup_chain(
        init: &Arc<PidNamespace>,
        depth: u32,
        patches: PidnsPatches,
        ucounts: &ucounts::UcountsTable,
        init_ucounts: &Arc<ucounts::UcountsNs>,
        init_pid: u64,
    ) -> Arc<PidNamespace> {
        let mut ns = Arc::clone(init);
        for level in 1..=depth {
            let charge = patches.ucounts_limits.then(|| {
                ucounts
                    .inc_ucount(init_ucounts, 0, UcountType::PidNamespaces)
                    .expect("the set-up's pid namespaces are within max_pid_namespaces")
            });
            ns = Arc::new(PidNamespace {
                obj: sim::new_object("pid_namespace"),
                level,
                count: Some(Refcount::new("pid_ns.count", 1)),
                parent: Some(ns),
                ucounts: charge,
                user_ns: None,
                adding: AtomicBool::new(true),
                init: HostMutex::new("the pid namespace's init", None),
            });
        }
        if depth > 0 {
            ns.get();
            *ns.init.lock() = Some(init_pid);
        }
        ns
    }

    fn is_initial(&self) -> bool {
        self.count.is_none()
    }

    /// Whether a process of this namespace has a pid in `active` (the
    /// caller's): `active` is this namespace or one of its ancestors, as
    /// `access_pidfd_pidns` asks before a signal goes through a pidfd.
    pub fn is_seen_from(self: &Arc<Self>, active: &Arc<PidNamespace>) -> bool {
        let mut at = Some(self);
        while let Some(ns) = at {
            if Arc::ptr_eq(ns, active) {
                return true;
            }
            at = ns.parent.as_ref();
        }
        false
    }

    /// `get_pid_ns`.
    fn get(&self) {
        if let Some(count) = &self.count {
            count.inc();
        }
    }
}

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
    pub(super) fn alloc_pid(&self, child: &Task) -> Result<(), Errno> {
        let ns = Arc::clone(&child.nsproxy().pid_ns_for_children);
        if ns.is_initial() {
            return Ok(());
        }
        if !ns.adding.load(Ordering::Relaxed) {
            return Err(Errno::ENOMEM);
        }
        ns.get();
        ns.init.lock().get_or_insert(child.pid);
        child.set_pid_ns(ns);
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

impl PidNamespace {
    /// Name the namespace's state (`sim::Execution::name_state`), its
    /// ancestors' with it.
    pub fn name_state(&self, h: &mut dyn std::hash::Hasher) {
        let PidNamespace {
            obj,
            level: _,
            count,
            parent,
            ucounts,
            user_ns,
            adding,
            init,
        } = self;
        h.write_u32(obj.0);
        h.write_i64(count.as_ref().map_or(-1, |c| c.peek()));
        h.write_u32(ucounts.as_ref().map_or(0, |u| u.obj.0));
        h.write_u32(user_ns.as_ref().map_or(0, |u| u.obj.0));
        h.write_u8(adding.load(Ordering::SeqCst) as u8);
        h.write_u64(init.lock().map_or(0, |pid| pid + 1));
        match parent {
            Some(p) => p.name_state(h),
            None => h.write_u8(0xff),
        }
    }
}
