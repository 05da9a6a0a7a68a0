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

use sim::{HostMutex, ObjId};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use sync::Refcount;
use ucounts::{UcountType, Ucounts};

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
    pub(crate) count: Option<Refcount>,
    pub(crate) parent: Option<Arc<PidNamespace>>,
    /// The `max_pid_namespaces` charge (`inc_pid_namespaces`), returned
    /// when the namespace is destroyed.
    pub(crate) ucounts: Option<Arc<Ucounts>>,
    /// The owning user namespace, held until the namespace is destroyed
    /// (`get_user_ns` in `create_pid_namespace`); `None` for those the
    /// initial user namespace owns, which is never freed.
    pub(crate) user_ns: Option<Arc<userns::UserNamespace>>,
    /// PIDNS_ADDING: cleared when its init exits, after which no process
    /// is born in it (`alloc_pid` fails with ENOMEM).
    pub(crate) adding: AtomicBool,
    /// The pid of its init, the first process born in it.
    pub(crate) init: HostMutex<Option<u64>>,
    /// The number the next process born in it gets here (`idr_alloc_cyclic`
    /// of a namespace whose numbers have not wrapped: 1, 2, ...).
    pub(crate) next_nr: HostMutex<u32>,
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
            next_nr: HostMutex::new("pid_ns->idr", 1),
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
                next_nr: HostMutex::new("pid_ns->idr", 1),
            });
        }
        if depth > 0 {
            ns.get();
            *ns.init.lock() = Some(init_pid);
            ns.alloc_nr();
        }
        ns
    }

    /// The number of a process born in it now (`alloc_pid` at this level).
    pub(crate) fn alloc_nr(&self) -> u32 {
        let mut next = self.next_nr.lock();
        let nr = *next;
        *next += 1;
        nr
    }

    pub(crate) fn is_initial(&self) -> bool {
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
    pub(crate) fn get(&self) {
        if let Some(count) = &self.count {
            count.inc();
        }
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
            next_nr,
        } = self;
        h.write_u32(obj.0);
        h.write_i64(count.as_ref().map_or(-1, |c| c.peek()));
        h.write_u32(ucounts.as_ref().map_or(0, |u| u.obj.0));
        h.write_u32(user_ns.as_ref().map_or(0, |u| u.obj.0));
        h.write_u8(adding.load(Ordering::SeqCst) as u8);
        h.write_u64(init.lock().map_or(0, |pid| pid + 1));
        h.write_u32(*next_nr.lock());
        match parent {
            Some(p) => p.name_state(h),
            None => h.write_u8(0xff),
        }
    }
}
