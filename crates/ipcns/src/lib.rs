//! ipc namespaces and their asynchronous free queue.
//!
//! Models ipc/namespace.c (`create_ipc_ns`, `put_ipc_ns`, `free_ipc`,
//! `free_ipc_ns`), ipc/mqueue.c (`mq_init_ns`, `mq_clear_sbinfo`,
//! `mq_put_mnt`) and the parts of fs/namespace.c they use
//! (`mnt_make_shortterm`, `kern_unmount`, `mntput`).
//!
//! Patches (see [`IpcPatches`]):
//! * `ipc-async-free` (v5.7): the last put queues the namespace on
//!   `free_ipc_list` and `free_ipc_work` frees it later, one grace period
//!   per namespace. Before it, the last put freed synchronously.
//! * `ipc-wait-pending-free` (v6.3): `create_ipc_ns` retries after
//!   `flush_work` when the ucount is exhausted and frees were pending.
//! * `ipc-batch-free` (v6.3): one grace period for a whole batch.
//! * `ipc-free-no-grace-period` (never merged, deliberately broken): no
//!   grace period before the free, so RCU readers can touch freed memory.
//!
//! Two candidate fixes (never merged) for the windows v6.3 leaves open
//! (docs/from-finding-to-fix.md walks through them):
//! * `ipc-retry-after-free` closes window 1, where the free finishes between
//!   the failed charge and `flush_work`, which then finds the work idle and
//!   returns false. `free_ipc_ns` counts completed frees in
//!   `free_ipc_state`; `create_ipc_ns` reads the count before charging, and
//!   when the charge fails and `flush_work` had nothing to wait for, it
//!   retries if the count moved, since a free that completed in between
//!   gave a charge back.
//! * `ipc-pending-at-release` closes window 2, where a released namespace
//!   is on `free_ipc_list` (or about to be) but `put_ipc_ns` has not
//!   scheduled the work yet, so `flush_work` again returns false.
//!   `put_ipc_ns` raises a pending count at the last put, still under
//!   `mq_lock`, before the namespace is queued; `free_ipc_ns` lowers it
//!   in the same atomic add that counts the free done, once the charge is
//!   given back, and wakes the waiters. A failed charge with frees pending
//!   waits (`wait_var_event` on `free_ipc_state`) until one of them
//!   completes, and retries.
//!
//! A namespace holds a reference on the user namespace that owns it from
//! `create_ipc_ns` to `free_ipc_ns`, as the kernel's does: the owner (and
//! the ucounts entries its own charge went through) outlives every ipc
//! namespace it owns, queued ones included.
//!
//! The oracle for `ipc.no_false_enospc` lives in [`oracle`].

pub mod charge;
pub mod mqueue;
pub mod msg;
pub mod oracle;
pub mod sem;
pub mod shm;
pub mod util;

use oracle::Oracle;
use sim::{CostKey, ObjId};
use std::sync::{Arc, Weak};
use sync::{
    flush_work, rcu_read_lock, schedule_work, synchronize_rcu, wait_var_event, wake_up_var,
    AtomicBool, AtomicU64, LList, Ordering, Refcount, SpinLock, Work, Workqueue,
};
use ucounts::{UcountType, Ucounts, UcountsNs, UcountsTable};
use userns::{UserNamespace, Userns};

pub mod costs {
    use sim::CostKey;
    pub static KZALLOC: CostKey = CostKey::new("kzalloc", 250, "allocating a kernel object");
    pub static MQ_INIT_NS: CostKey = CostKey::new(
        "mq_init_ns",
        8_700,
        "mq_init_ns: the internal mqueue mount of a new ipc namespace",
    );
    pub static IPC_INIT_NS: CostKey = CostKey::new(
        "ipc_init_ns",
        2_500,
        "sysctl sets and sem/msg/shm ids of a new ipc namespace",
    );
    pub static FREE_IPC_NS: CostKey = CostKey::new(
        "free_ipc_ns",
        1_500,
        "free_ipc_ns besides its grace period: ids, sysctls, inode number, kfree",
    );
    pub static MNT: CostKey =
        CostKey::new("mnt", 100, "mntput, mnt_make_shortterm, a mount lookup");
    pub static ALL: &[&CostKey] = &[&KZALLOC, &MQ_INIT_NS, &IPC_INIT_NS, &FREE_IPC_NS, &MNT];
}

/// The ipc behaviours that changed over kernel history.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IpcPatches {
    pub async_free: bool,
    pub wait_pending_free: bool,
    pub batch_free: bool,
    pub free_no_grace_period: bool,
    /// Candidate fix for window 1: retry when a free completed since the
    /// charge was tried.
    pub retry_after_free: bool,
    /// Candidate fix for window 2: count pending frees from the last put
    /// and wait for one when the charge fails while any is pending.
    pub pending_at_release: bool,
    /// v5.16: `exit_shm` destroys each segment in the namespace it was
    /// made in (see [`shm`]).
    pub shm_own_namespace: bool,
}

impl IpcPatches {
    /// Whether frees are counted in `free_ipc_state`.
    fn counts_frees(&self) -> bool {
        self.retry_after_free || self.pending_at_release
    }
}

/// Errors of the ipc paths, as the kernel's errno values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpcError {
    /// ENOSPC: the ucount limit of ipc namespaces is reached.
    NoSpace,
}

/// The internal mqueue mount of an ipc namespace (`ns->mq_mnt`).
pub struct MqMount {
    pub obj: ObjId,
    /// `real_mount(mnt)->mnt_ns != NULL`: still reachable by new lookups,
    /// so `mntput` may take the lockless fast path under RCU.
    mnt_ns: AtomicBool,
}

/// `struct ipc_namespace`.
pub struct IpcNamespace {
    pub obj: ObjId,
    count: Refcount,
    /// The user namespace that owns it (its ucounts side).
    pub user_ns: Arc<UcountsNs>,
    /// The owner itself, referenced (`get_user_ns` in `create_ipc_ns`,
    /// put by `free_ipc_ns`); `None` for the initial namespace and where
    /// no user-namespace subsystem is modelled.
    owner: Option<Arc<UserNamespace>>,
    /// The UCOUNT_IPC_NAMESPACES charge; `None` for the initial namespace.
    ucounts: Option<Arc<Ucounts>>,
    pub mq_mnt: MqMount,
    /// `mq_clear_sbinfo` ran: the mqueue superblock no longer points here.
    sb_cleared: sim::HostMutex<bool>,
    /// The queues of its mqueue filesystem.
    mq_sb: std::sync::OnceLock<mqueue::MqSb>,
    /// Its SysV shared memory segments.
    shm: std::sync::OnceLock<shm::ShmIds>,
    /// Its SysV message queues.
    msg: std::sync::OnceLock<msg::MsgIds>,
    /// Its SysV semaphore sets.
    sem: std::sync::OnceLock<sem::SemIds>,
}

impl IpcNamespace {
    pub fn is_init(&self) -> bool {
        self.ucounts.is_none()
    }

    /// `get_ipc_ns`: take a reference.
    pub fn get(&self) {
        self.count.inc();
    }

    /// The user namespace that owns it (`None` for the initial one).
    pub fn owner(&self) -> Option<&Arc<UserNamespace>> {
        self.owner.as_ref()
    }

    /// `get_ipc_ns_not_zero`: take a reference unless the last one is
    /// gone (the namespace is on its way to be freed).
    pub fn get_not_zero(&self) -> bool {
        self.count.inc_not_zero()
    }
}

/// The ipc subsystem's globals: `free_ipc_list`, `free_ipc_work`,
/// `mq_lock`, and the initial namespace.
pub struct Ipc {
    pub patches: IpcPatches,
    pub ucounts: Arc<UcountsTable>,
    free_ipc_list: LList<Arc<IpcNamespace>>,
    free_ipc_work: Arc<Work>,
    mq_lock: SpinLock<()>,
    /// `shmlock_user_lock` (mm/mlock.c): serialises the locked-memory
    /// charges of `SHM_LOCK` (made at first use).
    shmlock_user_lock: std::sync::OnceLock<SpinLock<()>>,
    /// The candidate fixes' count of frees, one word read at once: frees
    /// completed so far in the high half, namespaces released and not yet
    /// freed (`ipc-pending-at-release` only) in the low half.
    free_ipc_state: AtomicU64,
    pub init_ipc_ns: Arc<IpcNamespace>,
    pub oracle: Oracle,
    /// The user-namespace subsystem the owners' references go back to.
    userns: Option<Arc<Userns>>,
}

impl Ipc {
    /// Set up the subsystem; `wq` is the system workqueue whose kworker
    /// runs `free_ipc_work`; `userns`, where user namespaces are modelled,
    /// the subsystem that the owners' references go back to.
    pub fn new(
        patches: IpcPatches,
        ucounts: Arc<UcountsTable>,
        init_user_ns: &Arc<UcountsNs>,
        wq: &Arc<Workqueue>,
        userns: Option<&Arc<Userns>>,
    ) -> Arc<Ipc> {
        Arc::new_cyclic(|me: &Weak<Ipc>| {
            let me = me.clone();
            let work = Work::new("free_ipc_work", wq, move || {
                if let Some(ipc) = me.upgrade() {
                    ipc.free_ipc();
                }
            });
            let oracle = Oracle::new(&ucounts);
            Ipc {
                patches,
                ucounts,
                free_ipc_list: LList::new("free_ipc_list"),
                free_ipc_work: work,
                mq_lock: SpinLock::new("mq_lock", ()),
                shmlock_user_lock: std::sync::OnceLock::new(),
                free_ipc_state: AtomicU64::new("free_ipc_state", 0),
                init_ipc_ns: Arc::new(IpcNamespace {
                    obj: sim::new_object("init_ipc_ns"),
                    count: Refcount::new("ipc_ns.count", 1),
                    user_ns: Arc::clone(init_user_ns),
                    owner: None,
                    ucounts: None,
                    mq_mnt: MqMount {
                        obj: sim::new_object("mq_mnt"),
                        mnt_ns: AtomicBool::new("mnt_ns", true),
                    },
                    sb_cleared: sim::HostMutex::new("ipc_ns->mq_mnt sb cleared", false),
                    mq_sb: std::sync::OnceLock::new(),
                    shm: std::sync::OnceLock::new(),
                    msg: std::sync::OnceLock::new(),
                    sem: std::sync::OnceLock::new(),
                }),
                oracle,
                userns: userns.cloned(),
            }
        })
    }

    /// `create_ipc_ns`: charge the namespace to (user_ns, euid), then
    /// allocate it and its mqueue mount, and take a reference on its
    /// owner, `owner` (whose ucounts side is `user_ns`), when given.
    pub fn create_ipc_ns(
        &self,
        user_ns: &Arc<UcountsNs>,
        euid: u32,
        owner: Option<&Arc<UserNamespace>>,
    ) -> Result<Arc<IpcNamespace>, IpcError> {
        let ucounts = self.inc_ipc_namespaces(user_ns, euid)?;
        self.oracle.charged(&ucounts::charge_chain(user_ns, euid));
        sim::point("kzalloc", ObjId::NONE, &costs::KZALLOC);
        let obj = sim::new_object("ipc_ns");
        let mq_mnt = self.mq_init_ns();
        sim::point("setup_ipc_sysctls", obj, &costs::IPC_INIT_NS);
        // get_user_ns: the creator's credentials hold the owner meanwhile.
        if let Some(owner) = owner {
            owner.get();
        }
        Ok(Arc::new(IpcNamespace {
            obj,
            count: Refcount::new("ipc_ns.count", 1),
            user_ns: Arc::clone(user_ns),
            owner: owner.cloned(),
            ucounts: Some(ucounts),
            mq_mnt,
            sb_cleared: sim::HostMutex::new("ipc_ns->mq_mnt sb cleared", false),
            mq_sb: std::sync::OnceLock::new(),
            shm: std::sync::OnceLock::new(),
            msg: std::sync::OnceLock::new(),
            sem: std::sync::OnceLock::new(),
        }))
    }

    /// The ucount charge, with the v6.3 wait for pending frees and the
    /// candidate fixes' retries.
    fn inc_ipc_namespaces(
        &self,
        user_ns: &Arc<UcountsNs>,
        euid: u32,
    ) -> Result<Arc<Ucounts>, IpcError> {
        loop {
            let seen = self.free_state();
            if let Some(u) = self
                .ucounts
                .inc_ucount(user_ns, euid, UcountType::IpcNamespaces)
            {
                return Ok(u);
            }
            if !self.may_retry_charge(seen) {
                return Err(IpcError::NoSpace);
            }
            sim::note("create_ipc_ns: retry", ObjId::NONE, 0);
        }
    }

    /// After a failed charge: whether a charge may have been given back
    /// since the state was `seen`, having waited for it where the profile
    /// waits.
    fn may_retry_charge(&self, seen: FreeState) -> bool {
        let now = self.free_state();
        if self.patches.pending_at_release && now.pending != 0 {
            // A released namespace still holds its charge, its work
            // scheduled or not: wait until some free completes.
            wait_var_event(&self.free_ipc_state, |s| {
                FreeState::from(s).completed != seen.completed
            });
            return true;
        }
        if self.patches.retry_after_free && now.completed != seen.completed {
            return true;
        }
        // Namespaces waiting in the free queue still hold their charge:
        // wait for the free to run, then try again.
        if self.patches.wait_pending_free && flush_work(&self.free_ipc_work) {
            return true;
        }
        // Without the pending count, a free may also have completed while
        // flush_work looked: it found the work idle, but the charge is back.
        self.patches.retry_after_free
            && !self.patches.pending_at_release
            && self.free_state().completed != seen.completed
    }

    /// `free_ipc_state`, where a candidate fix keeps it (zero otherwise).
    fn free_state(&self) -> FreeState {
        if self.patches.counts_frees() {
            FreeState::from(self.free_ipc_state.load(Ordering::Acquire))
        } else {
            FreeState::default()
        }
    }

    /// `mq_init_ns`: the namespace's internal mqueue mount.
    fn mq_init_ns(&self) -> MqMount {
        sim::point("mq_init_ns", ObjId::NONE, &costs::MQ_INIT_NS);
        MqMount {
            obj: sim::new_object("mq_mnt"),
            mnt_ns: AtomicBool::new("mnt_ns", true),
        }
    }

    /// `put_ipc_ns`: drop a reference; the last one detaches the mqueue
    /// superblock under `mq_lock` and frees the namespace (synchronously
    /// before v5.7, through the free queue after).
    pub fn put_ipc_ns(&self, ns: Arc<IpcNamespace>) {
        let Some(guard) = ns.count.dec_and_lock(&self.mq_lock) else {
            return;
        };
        mq_clear_sbinfo(&ns);
        if self.patches.async_free && self.patches.pending_at_release {
            self.free_ipc_state
                .fetch_add(FreeState::PENDING, Ordering::AcqRel);
        }
        drop(guard);
        if let Some(u) = &ns.ucounts {
            self.oracle
                .released(&ucounts::charge_chain(&ns.user_ns, u.uid));
        }
        // Its owner loses a holder now; the reference goes in free_ipc_ns.
        if let (Some(sys), Some(owner)) = (&self.userns, &ns.owner) {
            sys.holder_gone(owner);
        }
        if !self.patches.async_free {
            self.mq_put_mnt(&ns);
            self.free_ipc_ns(ns);
            return;
        }
        sim::park_object(ns.obj, "queued");
        if self.free_ipc_list.llist_add(ns) {
            schedule_work(&self.free_ipc_work);
        }
    }

    /// `free_ipc`, the work function: take the whole queue and free it.
    fn free_ipc(&self) {
        let batch = self.free_ipc_list.llist_del_all();
        sim::note("free_ipc: batch", ObjId::NONE, batch.len() as i64);
        if !self.patches.batch_free {
            for ns in batch {
                self.mq_put_mnt(&ns);
                self.free_ipc_ns(ns);
            }
            return;
        }
        for ns in &batch {
            mnt_make_shortterm(&ns.mq_mnt);
        }
        // Wait for any last users of the mounts to have gone away.
        self.grace_period();
        for ns in batch {
            self.free_ipc_ns(ns);
        }
    }

    /// `mq_put_mnt` → `kern_unmount`: make the mount short-term, wait a
    /// grace period, then drop it.
    fn mq_put_mnt(&self, ns: &IpcNamespace) {
        mnt_make_shortterm(&ns.mq_mnt);
        self.grace_period();
    }

    fn grace_period(&self) {
        if self.patches.free_no_grace_period {
            sim::note("grace period skipped (broken patch)", sync::rcu_obj(), 0);
            return;
        }
        synchronize_rcu();
    }

    /// `free_ipc_ns`: drop the mount, tear down the ids and sysctls,
    /// uncharge the ucount, free.
    fn free_ipc_ns(&self, ns: Arc<IpcNamespace>) {
        sim::point("mntput", ns.mq_mnt.obj, &costs::MNT);
        self.mq_drop_names(&ns);
        sim::free_object(ns.mq_mnt.obj);
        self.shm_exit_ns(&ns);
        msg::msg_exit_ns(&ns);
        sem::sem_exit_ns(&ns);
        sim::point("free_ipc_ns", ns.obj, &costs::FREE_IPC_NS);
        if let Some(u) = &ns.ucounts {
            self.ucounts.dec_ucount(u, UcountType::IpcNamespaces);
        }
        if let (Some(sys), Some(owner)) = (&self.userns, &ns.owner) {
            sys.put_user_ns_deferred(owner);
        }
        sim::free_object(ns.obj);
        self.oracle.freed();
        // Gone before the fix's bookkeeping step: the namespace no longer
        // holds its ucounts reference there.
        drop(ns);
        self.free_completed();
    }

    /// A free gave its charge back: count it and, in the same atomic
    /// step, drop it from the pending ones, so that a creator that sees
    /// no free pending also sees every completed one.
    fn free_completed(&self) {
        if !(self.patches.async_free && self.patches.counts_frees()) {
            return;
        }
        let mut delta = FreeState::COMPLETED;
        if self.patches.pending_at_release {
            delta -= FreeState::PENDING;
        }
        self.free_ipc_state.fetch_add(delta, Ordering::AcqRel);
        wake_up_var(&self.free_ipc_state);
    }

    /// Namespaces waiting in the free queue (for checkers and reports).
    pub fn peek_pending(&self) -> usize {
        self.free_ipc_list.peek_len()
    }

    pub fn free_work(&self) -> &Arc<Work> {
        &self.free_ipc_work
    }
}

/// `free_ipc_state` split into its halves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct FreeState {
    completed: u64,
    pending: u64,
}

impl FreeState {
    /// One namespace released and not yet freed.
    const PENDING: u64 = 1;
    /// One free completed.
    const COMPLETED: u64 = 1 << 32;
}

impl From<u64> for FreeState {
    fn from(word: u64) -> Self {
        FreeState {
            completed: word >> 32,
            pending: word & 0xffff_ffff,
        }
    }
}

/// `mq_clear_sbinfo`: the mqueue superblock forgets the namespace.
fn mq_clear_sbinfo(ns: &IpcNamespace) {
    sim::touch(ns.obj, "mq_clear_sbinfo");
    *ns.sb_cleared.lock() = true;
}

/// `mnt_make_shortterm`: no new lookups; a grace period must pass before
/// the mount is freed.
fn mnt_make_shortterm(mnt: &MqMount) {
    sim::touch(mnt.obj, "mnt_make_shortterm");
    mnt.mnt_ns.store(false, Ordering::Release);
}

/// A reader in the mqueue filesystem: under `rcu_read_lock` it reaches the
/// namespace's mount and, while the mount is still long-term, takes the
/// lockless `mntput` fast path. The grace period before the free is what
/// makes this safe.
pub fn mq_path_walk(find_ns: impl FnOnce() -> Arc<IpcNamespace>) -> bool {
    let _rcu = rcu_read_lock();
    let ns = find_ns();
    sim::touch(ns.obj, "read ns->mq_mnt");
    sim::point("lookup_mnt", ns.mq_mnt.obj, &costs::MNT);
    sim::touch(ns.mq_mnt.obj, "read mnt->mnt_ns");
    if !ns.mq_mnt.mnt_ns.load(Ordering::Acquire) {
        return false;
    }
    sim::point("mntput fast path", ns.mq_mnt.obj, &costs::MNT);
    sim::touch(ns.mq_mnt.obj, "mntput fast path");
    true
}

/// Costs this crate adds to the cost table.
pub fn cost_keys() -> &'static [&'static CostKey] {
    costs::ALL
}

#[cfg(not(loom))]
impl IpcNamespace {
    /// Name the namespace's state (`sim::Execution::name_state`): its
    /// identity, references, owner and charge, and its mqueue mount.
    /// False where it has queues or segments (not named yet).
    pub fn name_state(&self, h: &mut dyn std::hash::Hasher) -> bool {
        let IpcNamespace {
            obj,
            count,
            user_ns,
            owner,
            ucounts,
            mq_mnt,
            sb_cleared,
            mq_sb,
            shm,
            msg,
            sem,
        } = self;
        h.write_u32(obj.0);
        h.write_i64(count.peek());
        h.write_u32(user_ns.id);
        h.write_u32(owner.as_ref().map_or(0, |o| o.obj.0));
        h.write_u32(ucounts.as_ref().map_or(0, |u| u.obj.0));
        h.write_u32(mq_mnt.obj.0);
        h.write_u8(mq_mnt.mnt_ns.peek() as u8);
        h.write_u8(*sb_cleared.lock() as u8);
        mq_sb.get().is_none() && shm.get().is_none() && msg.get().is_none() && sem.get().is_none()
    }
}

#[cfg(not(loom))]
impl Ipc {
    /// Name the subsystem's state (`sim::Execution::name_state`): the
    /// namespaces waiting on `free_ipc_list` (each whole), the free work,
    /// the candidate fixes' count of frees, the initial namespace and the
    /// oracle. False where part of it cannot be named yet.
    pub fn name_state(&self, h: &mut dyn std::hash::Hasher) -> bool {
        let Ipc {
            // Fixed for the run, or named by their owners:
            patches: _,
            ucounts: _,
            userns: _,
            // Held only within a step of a task:
            mq_lock: _,
            shmlock_user_lock: _,
            free_ipc_list,
            free_ipc_work,
            free_ipc_state,
            init_ipc_ns,
            oracle,
        } = self;
        let mut named = true;
        h.write_usize(free_ipc_list.peek_len());
        free_ipc_list.peek_each(|ns| named &= ns.name_state(h));
        free_ipc_work.name_state(h);
        h.write_u64(free_ipc_state.peek());
        named &= init_ipc_ns.name_state(h);
        oracle.name_state(h);
        named
    }
}
