//! User namespaces and uid/gid idmaps (kernel/user_namespace.c,
//! include/linux/user_namespace.h, kernel/capability.c, security/commoncap.c).
//!
//! * [`create_user_ns`]: the depth limit, the `max_user_namespaces` charge
//!   through ucounts, the mapping check, full capabilities in the new
//!   namespace.
//! * [`ns_capable`]: `cap_capable`'s walk up the tree (the owner of a
//!   child namespace has every capability in it).
//! * [`idmap`]: the three map layouts and the lock-free lookups.
//! * [`map_write`](mod@map_write): `map_write`, `new_idmap_permitted`,
//!   `/proc/PID/setgroups`, and reading a map back (`uid_m_show`).
//!
//! Patches (see [`UsernsPatches`]):
//! * `userns-ucounts-limits` (v4.9): `max_user_namespaces` through
//!   ucounts; the depth limit answers ENOSPC (EUSERS before).
//! * `idmap-340-extents` (v4.15): the 340-extent layout.
//! * `idmap-2017-proposal` (never merged): the 368-extent block layout.
//! * `idmap-sort-after-translate` (v4.20, v4.19.2): the CVE-2018-18955 fix;
//!   without it a v4.15 layout's reverse array keeps parent ids.
//! * `idmap-setfcap-root` (v5.12): mapping parent uid 0 needs CAP_SETFCAP.
//! * `idmap-relaxed-publication` (deliberately broken): `nr_extents`
//!   published without barriers.
//! * `userns-wait-pending-free` (a candidate fix, never merged): a user
//!   namespace whose last process has gone stays charged to
//!   `max_user_namespaces` until two deferred steps have run: the
//!   credentials' RCU callback (`put_cred_rcu`, which drops the last
//!   reference) and the `free_user_ns` work it queues (which returns the
//!   charge). Nothing waits for them, so a loop that makes and drops one
//!   namespace at a time under a small limit gets ENOSPC. With the patch,
//!   `create_user_ns` answers a failed charge in `inc_user_namespaces` by
//!   waiting for the frees already on their way and charging again:
//!   `rcu_barrier` (every queued `put_cred_rcu` has run, so every
//!   namespace whose last credential was put has its free queued), then a
//!   flush of the frees (in the kernel `free_user_ns` would need a
//!   workqueue of its own to flush; the model runs those works on the
//!   shared kworker and waits for each one queued). The second attempt is
//!   made whether or not the wait found anything, so a free that finished
//!   between the failed charge and the wait is seen too (the window ipc's
//!   v6.3 fix leaves); later attempts follow only a wait that began with
//!   frees on their way, so another task's free queued while this one
//!   waited is waited for as well. Touches [`Userns::create_user_ns`]
//!   (`inc_user_namespaces`, `wait_for_pending_frees`), and
//!   [`Userns::put_cred`] and [`Userns::put_user_ns_deferred`], which
//!   record the deferred steps. (The kernel puts a reaped task's
//!   credentials from the task's own RCU callback, a grace period before
//!   `put_cred_rcu` is even queued; the model starts at `put_cred`.)
//!
//! Whether an ENOSPC was deserved is judged by [`Userns::oracle`]
//! (`userns.no_false_enospc`): it counts a namespace as alive until its
//! last holder (a credential, a child namespace, a network namespace) is
//! gone, which [`Userns::holder_gone`] records when the reference itself is
//! put later.

pub mod bench_maps;
pub mod idmap;
pub mod invariants;
pub mod map_write;

pub use idmap::{Extent, IdMap, Layout, Publication, UNMAPPED};
pub use map_write::{
    from_kgid, from_kgid_munged, from_kuid, from_kuid_munged, make_kgid, make_kuid, map_write,
    map_write_extents, proc_setgroups_write, uid_m_show, MapKind, Rule, WriteOutcome,
};

use std::sync::atomic::{
    AtomicBool, AtomicI64 as StdAtomicI64, AtomicU32 as StdAtomicU32, Ordering as StdOrdering,
};
use sync::{flush_work, schedule_work, synchronize_rcu, Arc, Mutex, Refcount, Work, Workqueue};
use ucounts::enospc::EnospcOracle;
use ucounts::{charge_chain, UcountType, Ucounts, UcountsNs, UcountsTable};

/// `overflowuid` / `overflowgid`: what an unmapped id reads as.
pub const OVERFLOW_ID: u32 = 65534;
/// The deepest level a namespace may have: creation fails when the
/// parent's level is above 32.
pub const MAX_PARENT_LEVEL: u32 = 32;

/// The user-namespace behaviours that changed over kernel history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UsernsPatches {
    /// v3.11: user namespaces nest at most 32 levels below the initial one.
    pub nesting_limit: bool,
    /// v4.9: ucount limits; depth and count failures are ENOSPC.
    pub ucounts_limits: bool,
    /// The map layout in force.
    pub layout: Layout,
    /// v4.20/v4.19.2: sort (and build `reverse`) after translating.
    pub sort_after_translate: bool,
    /// v5.12: mapping parent uid 0 needs CAP_SETFCAP.
    pub setfcap_root: bool,
    /// Deliberately broken: relaxed publication of `nr_extents`.
    pub relaxed_publication: bool,
    /// Candidate fix (never merged): a failed charge waits for the pending
    /// frees (`rcu_barrier`, then the `free_user_ns` works) and charges
    /// again.
    pub wait_pending_free: bool,
}

impl UsernsPatches {
    /// The behaviour of the newest kernels.
    pub const NEWEST: UsernsPatches = UsernsPatches {
        nesting_limit: true,
        ucounts_limits: true,
        layout: Layout::Sorted340,
        sort_after_translate: true,
        setfcap_root: true,
        relaxed_publication: false,
        wait_pending_free: false,
    };

    pub fn publication(&self) -> Publication {
        if self.relaxed_publication {
            Publication::RELAXED
        } else {
            Publication::KERNEL
        }
    }
}

/// Errors of the user-namespace paths, named like the kernel's errnos.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, thiserror::Error)]
#[allow(clippy::upper_case_acronyms)]
pub enum Error {
    #[error("EPERM")]
    EPERM,
    #[error("EINVAL")]
    EINVAL,
    #[error("ENOSPC")]
    ENOSPC,
    #[error("EUSERS")]
    EUSERS,
    #[error("ENOMEM")]
    ENOMEM,
    #[error("EACCES")]
    EACCES,
}

impl Error {
    pub fn name(self) -> &'static str {
        match self {
            Error::EPERM => "EPERM",
            Error::EINVAL => "EINVAL",
            Error::ENOSPC => "ENOSPC",
            Error::EUSERS => "EUSERS",
            Error::ENOMEM => "ENOMEM",
            Error::EACCES => "EACCES",
        }
    }
}

/// Capability numbers (include/uapi/linux/capability.h).
pub mod caps {
    pub const CAP_DAC_OVERRIDE: u32 = 1;
    pub const CAP_DAC_READ_SEARCH: u32 = 2;
    pub const CAP_FOWNER: u32 = 3;
    pub const CAP_KILL: u32 = 5;
    pub const CAP_SETGID: u32 = 6;
    pub const CAP_SETUID: u32 = 7;
    pub const CAP_NET_ADMIN: u32 = 12;
    pub const CAP_IPC_LOCK: u32 = 14;
    pub const CAP_IPC_OWNER: u32 = 15;
    pub const CAP_SYS_PTRACE: u32 = 19;
    pub const CAP_SYS_ADMIN: u32 = 21;
    pub const CAP_SYS_RESOURCE: u32 = 24;
    pub const CAP_SETFCAP: u32 = 31;
    /// `CAP_LAST_CAP` of recent kernels.
    pub const CAP_LAST_CAP: u32 = 40;

    /// Every capability's name, by number.
    pub const NAMES: [&str; CAP_LAST_CAP as usize + 1] = [
        "CAP_CHOWN",
        "CAP_DAC_OVERRIDE",
        "CAP_DAC_READ_SEARCH",
        "CAP_FOWNER",
        "CAP_FSETID",
        "CAP_KILL",
        "CAP_SETGID",
        "CAP_SETUID",
        "CAP_SETPCAP",
        "CAP_LINUX_IMMUTABLE",
        "CAP_NET_BIND_SERVICE",
        "CAP_NET_BROADCAST",
        "CAP_NET_ADMIN",
        "CAP_NET_RAW",
        "CAP_IPC_LOCK",
        "CAP_IPC_OWNER",
        "CAP_SYS_MODULE",
        "CAP_SYS_RAWIO",
        "CAP_SYS_CHROOT",
        "CAP_SYS_PTRACE",
        "CAP_SYS_PACCT",
        "CAP_SYS_ADMIN",
        "CAP_SYS_BOOT",
        "CAP_SYS_NICE",
        "CAP_SYS_RESOURCE",
        "CAP_SYS_TIME",
        "CAP_SYS_TTY_CONFIG",
        "CAP_MKNOD",
        "CAP_LEASE",
        "CAP_AUDIT_WRITE",
        "CAP_AUDIT_CONTROL",
        "CAP_SETFCAP",
        "CAP_MAC_OVERRIDE",
        "CAP_MAC_ADMIN",
        "CAP_SYSLOG",
        "CAP_WAKE_ALARM",
        "CAP_BLOCK_SUSPEND",
        "CAP_AUDIT_READ",
        "CAP_PERFMON",
        "CAP_BPF",
        "CAP_CHECKPOINT_RESTORE",
    ];

    /// The number of capability `name` (`CAP_SYS_ADMIN`).
    pub fn from_name(name: &str) -> Option<u32> {
        NAMES.iter().position(|n| *n == name).map(|i| i as u32)
    }
}

/// A capability set (`kernel_cap_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct CapSet(pub u64);

impl CapSet {
    pub const EMPTY: CapSet = CapSet(0);
    pub const FULL: CapSet = CapSet((1u64 << (caps::CAP_LAST_CAP + 1)) - 1);

    pub fn has(self, cap: u32) -> bool {
        self.0 & (1u64 << cap) != 0
    }

    pub fn with(self, cap: u32) -> CapSet {
        CapSet(self.0 | (1u64 << cap))
    }

    pub fn without(self, cap: u32) -> CapSet {
        CapSet(self.0 & !(1u64 << cap))
    }

    /// `cap_issubset`: every capability of `self` is in `of`.
    pub fn is_subset_of(self, of: CapSet) -> bool {
        self.0 & !of.0 == 0
    }
}

/// `USERNS_SETGROUPS_ALLOWED`.
const USERNS_SETGROUPS_ALLOWED: u32 = 1;

/// `struct user_namespace`.
pub struct UserNamespace {
    /// The object's lifetime in the simulator.
    pub obj: sim::ObjId,
    /// `ns.count`: creds and child namespaces hold references.
    pub count: Refcount,
    pub name: String,
    pub parent: Option<Arc<UserNamespace>>,
    pub level: u32,
    /// Kernel uid of the creator's euid.
    pub owner: u32,
    /// Kernel gid of the creator's egid.
    pub group: u32,
    pub uid_map: IdMap,
    pub gid_map: IdMap,
    /// `ns->flags`, changed under `userns_state_mutex` only.
    flags: StdAtomicU32,
    /// v5.12: the creator had CAP_SETFCAP when it made the namespace.
    pub parent_could_setfcap: bool,
    /// The ucounts side: limits, and the entry charged in the parent.
    pub ucounts_ns: Arc<UcountsNs>,
    /// Set once the namespace has been freed (its charge released).
    freed: AtomicBool,
    /// Holders not yet gone: `count` less the references whose holder has
    /// gone but whose put is deferred (oracle bookkeeping, no scheduling
    /// point; see [`Userns::holder_gone`]).
    users: StdAtomicI64,
    /// Made at set-up time (or the initial namespace): the simulated world
    /// holds it for the whole run, so its references are not counted.
    pub pinned: bool,
}

impl UserNamespace {
    /// Whether `ns->flags` has `USERNS_SETGROUPS_ALLOWED`.
    pub fn setgroups_allowed(&self) -> bool {
        self.flags.load(StdOrdering::SeqCst) & USERNS_SETGROUPS_ALLOWED != 0
    }

    fn deny_setgroups(&self) {
        self.flags
            .fetch_and(!USERNS_SETGROUPS_ALLOWED, StdOrdering::SeqCst);
    }

    /// `ns` is this namespace or one of its ancestors.
    pub fn is_descendant_of(self: &Arc<Self>, ns: &Arc<UserNamespace>) -> bool {
        let mut cur = Some(Arc::clone(self));
        while let Some(c) = cur {
            if Arc::ptr_eq(&c, ns) {
                return true;
            }
            cur = c.parent.clone();
        }
        false
    }

    /// The map of one kind.
    pub fn map(&self, kind: MapKind) -> &IdMap {
        match kind {
            MapKind::Uid => &self.uid_map,
            MapKind::Gid => &self.gid_map,
        }
    }

    /// The ucount charge taken in the parent at creation.
    pub fn charge(&self) -> Option<&Arc<Ucounts>> {
        self.ucounts_ns.ucounts.as_ref()
    }

    /// Whether `free_user_ns` has run for it.
    pub fn peek_freed(&self) -> bool {
        self.freed.load(StdOrdering::SeqCst)
    }

    /// `get_user_ns` (nothing to count for a pinned namespace).
    pub fn get(&self) {
        if !self.pinned {
            self.count.inc();
            self.users.fetch_add(1, StdOrdering::SeqCst);
        }
    }
}

/// `struct user_struct` (kernel/user.c): the per-kuid process count that
/// RLIMIT_NPROC checks before v5.14.
pub struct UserStruct {
    pub uid: u32,
    pub processes: sync::AtomicI64,
    /// Signals pending for the user (before v5.14).
    pub sigpending: sync::AtomicI64,
    /// Bytes of the user's POSIX message queues (before v5.14).
    pub mq_bytes: sync::AtomicI64,
    /// Pages of SysV shared memory the user has locked (before v5.14).
    pub locked_shm: sync::AtomicI64,
    /// Which counts the views draw (a finite limit was checked against
    /// them); trace notes only.
    drawn: [std::sync::atomic::AtomicBool; ucounts::RlimitType::COUNT],
}

impl UserStruct {
    pub fn new(uid: u32) -> UserStruct {
        let user = UserStruct {
            uid,
            processes: sync::AtomicI64::new("user_struct.processes", 0),
            sigpending: sync::AtomicI64::new("user_struct.sigpending", 0),
            mq_bytes: sync::AtomicI64::new("user_struct.mq_bytes", 0),
            locked_shm: sync::AtomicI64::new("user_struct.locked_shm", 0),
            drawn: Default::default(),
        };
        if sim::recording() {
            for (counter, field) in [
                (&user.processes, "processes"),
                (&user.sigpending, "sigpending"),
                (&user.mq_bytes, "mq_bytes"),
                (&user.locked_shm, "locked_shm"),
            ] {
                sim::title_object(counter.obj(), || format!("user_struct(uid {uid}).{field}"));
            }
        }
        user
    }

    pub fn peek_processes(&self) -> i64 {
        self.processes.peek()
    }

    /// The count of rlimit `t` (before v5.14, when it lived here).
    pub fn rlimit_counter(&self, t: ucounts::RlimitType) -> &sync::AtomicI64 {
        match t {
            ucounts::RlimitType::Nproc => &self.processes,
            ucounts::RlimitType::Sigpending => &self.sigpending,
            ucounts::RlimitType::Msgqueue => &self.mq_bytes,
            ucounts::RlimitType::Memlock => &self.locked_shm,
        }
    }

    /// Charge `amount` of rlimit `t` unless the count would pass `limit`
    /// (`None`, nothing charged).
    pub fn charge_rlimit(&self, t: ucounts::RlimitType, amount: i64, limit: i64) -> Option<()> {
        self.draw_rlimit(t, limit);
        let counter = self.rlimit_counter(t);
        let had = counter.fetch_add(amount, sync::Ordering::AcqRel);
        self.note_rlimit(t);
        if had.checked_add(amount).is_none_or(|n| n > limit) {
            counter.fetch_sub(amount, sync::Ordering::AcqRel);
            self.note_rlimit(t);
            return None;
        }
        Some(())
    }

    /// Add `amount` (negative to take back) to the count of rlimit `t`,
    /// unchecked.
    pub fn add_rlimit(&self, t: ucounts::RlimitType, amount: i64) {
        self.rlimit_counter(t)
            .fetch_add(amount, sync::Ordering::Relaxed);
        self.note_rlimit(t);
    }

    /// For the views: draw the count of `t` from now on, against `limit`,
    /// when that is finite (the caller's rlimit, as its charge is checked).
    pub fn draw_rlimit(&self, t: ucounts::RlimitType, limit: i64) {
        if limit < ucounts::LONG_MAX {
            self.drawn[t as usize].store(true, std::sync::atomic::Ordering::Relaxed);
            sim::note(t.max_label(), self.rlimit_counter(t).obj(), limit);
            self.note_rlimit(t);
        }
    }

    fn note_rlimit(&self, t: ucounts::RlimitType) {
        if self.drawn[t as usize].load(std::sync::atomic::Ordering::Relaxed) {
            let counter = self.rlimit_counter(t);
            sim::note(t.count_label(), counter.obj(), counter.peek());
        }
    }
}

/// Credentials (`struct cred`), ids as kernel ids: the one model of a
/// task's credentials, whichever syscall asks.
#[derive(Clone)]
pub struct Cred {
    pub uid: u32,
    pub euid: u32,
    pub suid: u32,
    pub fsuid: u32,
    pub gid: u32,
    pub egid: u32,
    pub sgid: u32,
    pub fsgid: u32,
    /// The supplementary groups (kgids), sorted (`group_info`).
    pub groups: Vec<u32>,
    pub user_ns: Arc<UserNamespace>,
    pub cap_effective: CapSet,
    /// `cap_permitted`: what the task may make effective again (what a
    /// uid change back to root restores).
    pub cap_permitted: CapSet,
    /// `cap_bset`: what the task can gain by an execve as root (a new user
    /// namespace starts with a full set again).
    pub cap_bset: CapSet,
    /// `cred->ucounts`: (user_ns, uid) of the process count. `None` for a
    /// credential made outside a simulated machine (tests, the idmap
    /// checker), which counts nothing.
    pub ucounts: Option<Arc<Ucounts>>,
    /// `cred->user`: the user_struct of the real uid (`None` likewise).
    pub user: Option<Arc<UserStruct>>,
}

impl Cred {
    /// `in_group_p`: whether kgid `kgid` is the fs gid or one of the
    /// supplementary groups.
    pub fn in_group_p(&self, kgid: u32) -> bool {
        self.fsgid == kgid || self.groups.binary_search(&kgid).is_ok()
    }

    /// A process of kernel uid/gid `uid`/`gid` in `ns` with `caps`.
    pub fn new(ns: &Arc<UserNamespace>, uid: u32, gid: u32, caps: CapSet) -> Cred {
        Cred {
            uid,
            euid: uid,
            suid: uid,
            fsuid: uid,
            gid,
            egid: gid,
            sgid: gid,
            fsgid: gid,
            groups: Vec::new(),
            user_ns: Arc::clone(ns),
            cap_effective: caps,
            cap_permitted: caps,
            cap_bset: CapSet::FULL,
            ucounts: None,
            user: None,
        }
    }

    /// Every capability the bounding set allows (root's set after execve,
    /// the creator's in a new user namespace).
    pub fn full_caps(&self) -> CapSet {
        CapSet(CapSet::FULL.0 & self.cap_bset.0)
    }
}

impl std::fmt::Debug for Cred {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Cred(euid {}, egid {}, in {}, caps {:#x})",
            self.euid, self.egid, self.user_ns.name, self.cap_effective.0
        )
    }
}

/// `set_cred_user_ns`: credentials entering a new user namespace (its
/// creator's, or a `setns` into it) start with every capability there and
/// a full bounding set, whatever they were bounded to before.
pub fn set_cred_user_ns(cred: &mut Cred) {
    cred.cap_effective = CapSet::FULL;
    cred.cap_permitted = CapSet::FULL;
    cred.cap_bset = CapSet::FULL;
}

/// `cap_capable`/`ns_capable`: does `cred` have `cap` in `target`? Walk
/// up from `target`: in the caller's own namespace the effective set
/// decides; the owner of a namespace whose parent is the caller's has
/// every capability in it; a namespace at or above the caller's level
/// that is not the caller's gives nothing.
pub fn ns_capable(cred: &Cred, target: &Arc<UserNamespace>, cap: u32) -> bool {
    let mut ns = Arc::clone(target);
    loop {
        if Arc::ptr_eq(&ns, &cred.user_ns) {
            return cred.cap_effective.has(cap);
        }
        if ns.level <= cred.user_ns.level {
            return false;
        }
        let parent = ns
            .parent
            .clone()
            .expect("a namespace above level 0 has a parent");
        if Arc::ptr_eq(&parent, &cred.user_ns) && ns.owner == cred.euid {
            return true;
        }
        ns = parent;
    }
}

/// `userns_may_setgroups` (kernel/user_namespace.c): setgroups(2) is
/// possible in a namespace once its gid map is written, unless its
/// `/proc/PID/setgroups` says `deny`; always in the initial namespace.
/// Decided under `userns_state_mutex`, as the map and setgroups writes.
pub fn userns_may_setgroups(sys: &Userns, ns: &UserNamespace) -> bool {
    if ns.parent.is_none() {
        return true;
    }
    let _guard = sys.state_mutex.lock();
    ns.gid_map.nr_extents() != 0 && ns.setgroups_allowed()
}

/// `privileged_wrt_inode_uidgid` (kernel/capability.c): a namespace's
/// capabilities reach a file only when it maps both the file's owner and
/// its group.
pub fn privileged_wrt_inode_uidgid(ns: &UserNamespace, kuid: u32, kgid: u32) -> bool {
    from_kuid(ns, kuid) != UNMAPPED && from_kgid(ns, kgid) != UNMAPPED
}

/// `fsuidgid_has_mapping` (fs/namei.c's `may_create`): the user namespace
/// of a filesystem maps the caller's fsuid and fsgid, so that what it
/// creates there has an owner the filesystem can show.
pub fn fsuidgid_has_mapping(ns: &UserNamespace, cred: &Cred) -> bool {
    from_kuid(ns, cred.fsuid) != UNMAPPED && from_kgid(ns, cred.fsgid) != UNMAPPED
}

/// `capable_wrt_inode_uidgid`: `cap` in the caller's own user namespace,
/// over a file (owner `kuid`, group `kgid`) that namespace maps.
pub fn capable_wrt_inode_uidgid(cred: &Cred, kuid: u32, kgid: u32, cap: u32) -> bool {
    ns_capable(cred, &cred.user_ns, cap) && privileged_wrt_inode_uidgid(&cred.user_ns, kuid, kgid)
}

/// `cred_cap_issubset(set, subset)` (kernel/cred.c): could `subset` hold
/// no capability `set` did not? In one namespace, when its set is within
/// `set`'s; across namespaces, when `subset`'s namespace descends from one
/// whose parent is `set`'s and whose owner is `set`'s euid. The sets
/// compared are the permitted ones.
pub fn cred_cap_issubset(set: &Cred, subset: &Cred) -> bool {
    if Arc::ptr_eq(&set.user_ns, &subset.user_ns) {
        return subset.cap_permitted.is_subset_of(set.cap_permitted);
    }
    let mut ns = Some(Arc::clone(&subset.user_ns));
    while let Some(n) = ns {
        let Some(parent) = n.parent.clone() else {
            return false;
        };
        if Arc::ptr_eq(&parent, &set.user_ns) && n.owner == set.euid {
            return true;
        }
        ns = Some(parent);
    }
    false
}

/// The user-namespace subsystem of one simulated machine: the initial
/// namespace, `userns_state_mutex`, the ucounts table, the patches.
pub struct Userns {
    pub patches: UsernsPatches,
    pub init: Arc<UserNamespace>,
    pub ucounts: Arc<UcountsTable>,
    /// `userns_state_mutex`: every map write and setgroups write.
    pub state_mutex: Mutex<()>,
    next_id: StdAtomicU32,
    /// Where `free_user_ns` runs; without one, frees are synchronous.
    wq: Option<Arc<Workqueue>>,
    /// Every namespace made, for invariant checkers (creation order).
    registry: sim::HostMutex<Vec<Arc<UserNamespace>>>,
    /// Namespaces registered so far (made or adopted): what a checker of
    /// the namespaces' fixed fields needs to look at again.
    registered: std::sync::atomic::AtomicU64,
    /// Judges each ENOSPC of the `max_user_namespaces` charge
    /// (`userns.no_false_enospc`).
    pub oracle: EnospcOracle,
    /// The deferred steps of frees under way, kept while
    /// `userns-wait-pending-free` is in force (what its wait waits for).
    pending: sim::HostMutex<PendingFrees>,
}

/// The deferred steps not yet done: queued or running work items.
#[derive(Default)]
struct PendingFrees {
    /// `put_cred_rcu` callbacks (what `rcu_barrier` waits for).
    cred_puts: Vec<Arc<Work>>,
    /// `free_user_ns` works.
    frees: Vec<Arc<Work>>,
}

/// Keep only the works still queued or running (no scheduling point).
fn unfinished(works: &mut Vec<Arc<Work>>) -> Vec<Arc<Work>> {
    works.retain(|w| w.peek_pending() || w.peek_running());
    works.clone()
}

impl Userns {
    /// A subsystem whose initial namespace is `init_ucounts` (whose
    /// `id` is 0); children get ids from `first_child_id` on.
    pub fn new(
        patches: UsernsPatches,
        ucounts: Arc<UcountsTable>,
        init_ucounts: &Arc<UcountsNs>,
        first_child_id: u32,
    ) -> Arc<Self> {
        let layout = patches.layout;
        let init = Arc::new(UserNamespace {
            obj: sim::new_object("user_namespace"),
            count: Refcount::new("user_ns.count", 1),
            name: init_ucounts.name.clone(),
            parent: None,
            level: 0,
            owner: 0,
            group: 0,
            uid_map: IdMap::identity(layout),
            gid_map: IdMap::identity(layout),
            flags: StdAtomicU32::new(USERNS_SETGROUPS_ALLOWED),
            parent_could_setfcap: true,
            ucounts_ns: Arc::clone(init_ucounts),
            freed: AtomicBool::new(false),
            users: StdAtomicI64::new(1),
            pinned: true,
        });
        let table = Arc::clone(&ucounts);
        Arc::new(Userns {
            patches,
            registry: sim::HostMutex::new("the user namespace registry", vec![Arc::clone(&init)]),
            registered: std::sync::atomic::AtomicU64::new(1),
            init,
            ucounts,
            state_mutex: Mutex::new("userns_state_mutex", ()),
            next_id: StdAtomicU32::new(first_child_id),
            wq: None,
            oracle: EnospcOracle::new(UcountType::UserNamespaces, "user namespace", &table),
            pending: sim::HostMutex::new("user namespaces pending free", PendingFrees::default()),
        })
    }

    /// As [`Userns::new`], with frees deferred to a work item on `wq` (as
    /// the kernel's `__put_user_ns` does).
    pub fn with_workqueue(
        patches: UsernsPatches,
        ucounts: Arc<UcountsTable>,
        init_ucounts: &Arc<UcountsNs>,
        first_child_id: u32,
        wq: &Arc<Workqueue>,
    ) -> Arc<Self> {
        let mut sys = Arc::into_inner(Userns::new(patches, ucounts, init_ucounts, first_child_id))
            .expect("just made");
        sys.wq = Some(Arc::clone(wq));
        Arc::new(sys)
    }

    /// Every namespace made so far, the initial one first (checkers).
    /// Namespaces registered so far, freed ones included.
    pub fn registered(&self) -> u64 {
        self.registered.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn namespaces(&self) -> Vec<Arc<UserNamespace>> {
        self.registry.lock().clone()
    }

    /// A namespace made at set-up time around an existing ucounts side
    /// (its maps empty, as after `create_user_ns`; the owner had every
    /// capability when it made it).
    pub fn adopt(
        &self,
        parent: &Arc<UserNamespace>,
        owner: u32,
        group: u32,
        ucounts_ns: Arc<UcountsNs>,
    ) -> Arc<UserNamespace> {
        let mut ns = self.build_ns(parent, owner, group, true, ucounts_ns);
        Arc::get_mut(&mut ns).expect("just made").pinned = true;
        self.register(ns)
    }

    fn register(&self, ns: Arc<UserNamespace>) -> Arc<UserNamespace> {
        self.registry.lock().push(Arc::clone(&ns));
        self.registered
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        ns
    }

    /// A stand-alone subsystem (tests, the idmap checker).
    pub fn standalone(patches: UsernsPatches) -> Arc<Self> {
        Userns::new(
            patches,
            Arc::new(UcountsTable::new()),
            &UcountsNs::init(0),
            1,
        )
    }

    /// Root of the initial namespace with every capability.
    pub fn init_root(&self) -> Cred {
        Cred::new(&self.init, 0, 0, CapSet::FULL)
    }

    /// A namespace object with empty maps (used by [`create_user_ns`]
    /// and by set-ups that build a tree directly).
    #[allow(clippy::too_many_arguments)]
    fn alloc_ns(
        &self,
        name: &str,
        parent: &Arc<UserNamespace>,
        owner: u32,
        group: u32,
        parent_could_setfcap: bool,
        charge: Option<Arc<Ucounts>>,
        rlimits: Option<[u64; ucounts::RlimitType::COUNT]>,
    ) -> Arc<UserNamespace> {
        let id = self.next_id.fetch_add(1, StdOrdering::Relaxed);
        let ucounts_ns = match rlimits {
            Some(r) => UcountsNs::child_with_rlimits(id, name, &parent.ucounts_ns, charge, r),
            None => UcountsNs::child(id, name, &parent.ucounts_ns, charge),
        };
        let ns = self.build_ns(parent, owner, group, parent_could_setfcap, ucounts_ns);
        self.register(ns)
    }

    fn build_ns(
        &self,
        parent: &Arc<UserNamespace>,
        owner: u32,
        group: u32,
        parent_could_setfcap: bool,
        ucounts_ns: Arc<UcountsNs>,
    ) -> Arc<UserNamespace> {
        let publication = self.patches.publication();
        let obj = sim::new_object("user_namespace");
        ucounts_ns.set_obj(obj);
        Arc::new(UserNamespace {
            obj,
            count: Refcount::new("user_ns.count", 1),
            name: ucounts_ns.name.clone(),
            parent: Some(Arc::clone(parent)),
            level: parent.level + 1,
            owner,
            group,
            uid_map: IdMap::new(self.patches.layout, publication),
            gid_map: IdMap::new(self.patches.layout, publication),
            flags: StdAtomicU32::new(parent.flags.load(StdOrdering::SeqCst)),
            parent_could_setfcap,
            ucounts_ns,
            freed: AtomicBool::new(false),
            users: StdAtomicI64::new(1),
            pinned: false,
        })
    }

    /// `create_user_ns`: make a child of `cred.user_ns` owned by the
    /// caller, and return the caller's new credentials (full capabilities
    /// in the new namespace, ids unchanged).
    pub fn create_user_ns(&self, cred: &Cred, name: &str) -> Result<Cred, Error> {
        self.create_user_ns_with_rlimits(cred, name, None)
    }

    /// [`Userns::create_user_ns`], recording `rlimits` (the creator's, as
    /// `set_userns_rlimits` does from v5.14) in the new namespace.
    pub fn create_user_ns_with_rlimits(
        &self,
        cred: &Cred,
        name: &str,
        rlimits: Option<[u64; ucounts::RlimitType::COUNT]>,
    ) -> Result<Cred, Error> {
        let parent = &cred.user_ns;
        if self.patches.nesting_limit && parent.level > MAX_PARENT_LEVEL {
            return Err(self.limit_errno());
        }
        let charge = if self.patches.ucounts_limits {
            let chain = charge_chain(&parent.ucounts_ns, cred.euid);
            let call = self.oracle.begin_call(chain.clone());
            let c = self.inc_user_namespaces(&parent.ucounts_ns, cred.euid);
            if c.is_some() {
                self.oracle.charged(&chain);
            }
            let what = format!("create_user_ns making {name}");
            self.oracle.end_call(call, c.is_none(), &what);
            Some(c.ok_or(Error::ENOSPC)?)
        } else {
            None
        };
        let mapped = |m: &IdMap, id: u32| m.map_id_up(id) != UNMAPPED;
        if !mapped(&parent.uid_map, cred.euid) || !mapped(&parent.gid_map, cred.egid) {
            if let Some(c) = &charge {
                self.ucounts.dec_ucount(c, UcountType::UserNamespaces);
                self.oracle.uncharged(&charge_chain(&c.ns, c.uid));
            }
            return Err(Error::EPERM);
        }
        let could_setfcap = cred.cap_effective.has(caps::CAP_SETFCAP);
        let ns = {
            // The parent's flags are copied under userns_state_mutex.
            let _g = self.state_mutex.lock();
            self.alloc_ns(
                name,
                parent,
                cred.euid,
                cred.egid,
                could_setfcap,
                charge,
                rlimits,
            )
        };
        let mut new = cred.clone();
        new.user_ns = ns;
        set_cred_user_ns(&mut new);
        Ok(new)
    }

    /// `inc_user_namespaces`: charge (`ns`, `uid`). With
    /// `userns-wait-pending-free`, a failed charge waits for the frees
    /// already on their way and is tried again: after the first wait in
    /// any case (a free may have finished just before it), after a later
    /// one only if frees were on their way when it began.
    fn inc_user_namespaces(&self, ns: &Arc<UcountsNs>, uid: u32) -> Option<Arc<Ucounts>> {
        let mut retry = true;
        loop {
            let charge = self.ucounts.inc_ucount(ns, uid, UcountType::UserNamespaces);
            if charge.is_some() || !self.patches.wait_pending_free || !retry {
                return charge;
            }
            retry = self.wait_for_pending_frees();
            sim::note("create_user_ns: retry", sim::ObjId::NONE, 0);
        }
    }

    /// The patch's wait: `rcu_barrier` (every `put_cred_rcu` queued so far
    /// has run, and with it every last `put_user_ns` it made), then the
    /// flush of the `free_user_ns` works queued by then. True if either
    /// found any on its way (whether or not it finished before the flush
    /// got to it).
    fn wait_for_pending_frees(&self) -> bool {
        let cred_puts = unfinished(&mut self.pending.lock().cred_puts);
        for work in &cred_puts {
            flush_work(work);
        }
        let frees = unfinished(&mut self.pending.lock().frees);
        for work in &frees {
            flush_work(work);
        }
        !(cred_puts.is_empty() && frees.is_empty())
    }

    fn limit_errno(&self) -> Error {
        if self.patches.ucounts_limits {
            Error::ENOSPC
        } else {
            Error::EUSERS
        }
    }

    /// Free one namespace whose last reference is gone: release its
    /// `max_user_namespaces` charge and the object. Freeing twice is a
    /// no-op. (Tests outside a world call it directly.)
    pub fn free_user_ns(&self, ns: &UserNamespace) {
        if ns.freed.swap(true, StdOrdering::SeqCst) {
            return;
        }
        if let Some(c) = ns.charge() {
            self.ucounts.dec_ucount(c, UcountType::UserNamespaces);
            if ns.users.load(StdOrdering::SeqCst) <= 0 {
                self.oracle.freed(&charge_chain(&c.ns, c.uid));
            }
        }
        sim::free_object(ns.obj);
        // Checkers look at live namespaces only; long loops must not
        // keep every freed one.
        self.registry
            .lock()
            .retain(|n| !std::ptr::eq(Arc::as_ptr(n), ns));
    }

    /// `put_user_ns` by a holder that goes now: drop a reference; the last
    /// one hands the namespace to `free_user_ns` on the work queue
    /// (`__put_user_ns`), or frees it at once without one.
    pub fn put_user_ns(self: &Arc<Self>, ns: &Arc<UserNamespace>) {
        self.holder_gone(ns);
        self.put_user_ns_deferred(ns);
    }

    /// `get_user_ns` by a new holder that found `ns` through something
    /// that still pins it (an RCU-protected credential whose put waits
    /// for its grace period, say): a namespace every holder had dropped
    /// is in use again, and so are the ancestors it had stopped holding.
    /// The reverse of [`Userns::holder_gone`].
    pub fn get_user_ns(&self, ns: &Arc<UserNamespace>) {
        if ns.pinned {
            return;
        }
        ns.count.inc();
        self.holders_change(ns, 1);
    }

    /// `get_user_ns` by a holder of another reference on `ns` (a new
    /// ucounts entry of it, made by a caller that holds it): no
    /// scheduling point (see `Refcount::inc_held`).
    fn get_user_ns_held(&self, ns: &Arc<UserNamespace>) {
        if ns.pinned {
            return;
        }
        ns.count.inc_held();
        self.holders_change(ns, 1);
    }

    /// The live namespace whose ucounts side is `side`.
    fn namespace_of(&self, side: &UcountsNs) -> Option<Arc<UserNamespace>> {
        self.registry
            .lock()
            .iter()
            .find(|n| n.ucounts_ns.id == side.id)
            .cloned()
    }

    /// A holder of a reference on `ns` is gone, though the reference is put
    /// later ([`Userns::put_user_ns_deferred`]): a credential waiting for
    /// its grace period, a network namespace waiting for `cleanup_net`.
    /// When no holder is left the namespace is released: nobody can use it
    /// any more, and the oracle no longer counts it as alive. Its parent
    /// then loses the holder the child was. Bookkeeping only: no
    /// scheduling point.
    pub fn holder_gone(&self, ns: &Arc<UserNamespace>) {
        self.holders_change(ns, -1);
    }

    /// `ns` gains (`by` 1) or loses (`by` -1) a holder. Where that brings
    /// it into use again (from none) or out of use (to none), the oracle
    /// is told, and its parent gains or loses the holder it is.
    fn holders_change(&self, ns: &Arc<UserNamespace>, by: i64) {
        let boundary = if by > 0 { 0 } else { 1 };
        let mut cur = Some(Arc::clone(ns));
        while let Some(ns) = cur {
            if ns.pinned || ns.users.fetch_add(by, StdOrdering::SeqCst) != boundary {
                return;
            }
            if let Some(c) = ns.charge() {
                let chain = charge_chain(&c.ns, c.uid);
                if by > 0 {
                    self.oracle.revived(&chain);
                } else {
                    self.oracle.released(&chain);
                }
            }
            cur = ns.parent.clone();
        }
    }

    /// The put itself, for a holder that [`Userns::holder_gone`] reported
    /// gone before.
    pub fn put_user_ns_deferred(self: &Arc<Self>, ns: &Arc<UserNamespace>) {
        if ns.pinned || !ns.count.dec_and_test() {
            return;
        }
        let Some(wq) = &self.wq else {
            self.free_user_ns_work(Arc::clone(ns));
            return;
        };
        // Weak: a work still queued when the execution ends must not hold
        // the subsystem that holds its workqueue.
        let (sys, ns) = (Arc::downgrade(self), Arc::clone(ns));
        let work = Work::new("free_user_ns", wq, move || {
            if let Some(sys) = sys.upgrade() {
                sys.free_user_ns_work(Arc::clone(&ns))
            }
        });
        schedule_work(&work);
        if self.patches.wait_pending_free {
            let mut pending = self.pending.lock();
            unfinished(&mut pending.frees);
            pending.frees.push(work);
        }
    }

    /// The body of the `free_user_ns` work: free the namespace, then its
    /// parent if that was the parent's last reference, and so on up.
    fn free_user_ns_work(&self, ns: Arc<UserNamespace>) {
        let mut cur = Some(ns);
        while let Some(ns) = cur {
            self.free_user_ns(&ns);
            cur = ns
                .parent
                .clone()
                .filter(|p| !p.pinned && p.count.dec_and_test());
        }
    }

    /// The last put of a task's credentials: `put_cred` frees them after
    /// an RCU grace period (`put_cred_rcu`), which then puts the user
    /// namespace. Modelled as a work item that waits for the grace period.
    pub fn put_cred(self: &Arc<Self>, cred: Cred) {
        if cred.user_ns.pinned {
            return;
        }
        self.holder_gone(&cred.user_ns);
        let Some(wq) = &self.wq else {
            self.put_user_ns_deferred(&cred.user_ns);
            return;
        };
        let sys = Arc::downgrade(self);
        let cred = sim::HostMutex::new("put_cred_rcu's credential", Some(cred));
        let work = Work::new("put_cred_rcu", wq, move || {
            synchronize_rcu();
            let cred = cred.lock().take();
            if let (Some(c), Some(sys)) = (cred, sys.upgrade()) {
                sys.put_user_ns_deferred(&c.user_ns);
            }
        });
        schedule_work(&work);
        if self.patches.wait_pending_free {
            let mut pending = self.pending.lock();
            unfinished(&mut pending.cred_puts);
            pending.cred_puts.push(work);
        }
    }

    /// Give a set-up namespace the one-range map `inside outside count`
    /// (`outside` as the parent sees it), as if its creator had written it:
    /// translated to kernel ids through the parent's map, no permission
    /// asked. A range the parent does not map is left unmapped.
    pub fn install_setup_map(
        &self,
        ns: &UserNamespace,
        kind: MapKind,
        inside: u32,
        outside: u32,
        count: u32,
    ) {
        let Some(parent) = &ns.parent else {
            return;
        };
        let lower = parent.map(kind).map_id_range_down(outside, count);
        if lower == UNMAPPED {
            return;
        }
        let extent = [Extent::new(inside, lower, count)];
        ns.map(kind).install(&extent, &extent);
    }

    /// `kuid_has_mapping` for both the euid and egid of `cred` in `ns`.
    pub fn ids_mapped_in(cred: &Cred, ns: &UserNamespace) -> bool {
        ns.uid_map.map_id_up(cred.euid) != UNMAPPED && ns.gid_map.map_id_up(cred.egid) != UNMAPPED
    }
}

/// Each ucounts entry's reference on its user namespace (v5.17, "ucount:
/// Make get_ucount a safe get_user replacement"): a new entry takes one, a
/// freed entry puts it, so that what a charge pins (a pending signal, a
/// message queue) keeps the namespace its walk up the tree reads.
pub struct EntryPins(std::sync::Weak<Userns>);

impl EntryPins {
    pub fn new(sys: &Arc<Userns>) -> Box<EntryPins> {
        Box::new(EntryPins(Arc::downgrade(sys)))
    }
}

impl ucounts::UsernsPins for EntryPins {
    fn get_user_ns(&self, side: &UcountsNs) {
        if let Some(sys) = self.0.upgrade() {
            if let Some(ns) = sys.namespace_of(side) {
                sys.get_user_ns_held(&ns);
            }
        }
    }

    fn put_user_ns(&self, side: &UcountsNs) {
        if let Some(sys) = self.0.upgrade() {
            if let Some(ns) = sys.namespace_of(side) {
                sys.put_user_ns(&ns);
            }
        }
    }
}

#[cfg(not(loom))]
impl UserNamespace {
    /// Name the namespace's state (`sim::Execution::name_state`): its
    /// identity, references, maps, flags, limits, and whether it is freed.
    pub fn name_state(&self, h: &mut dyn std::hash::Hasher) {
        let UserNamespace {
            obj,
            count,
            // Fixed from creation, or named by `obj`:
            name: _,
            parent: _,
            level: _,
            owner: _,
            group: _,
            parent_could_setfcap: _,
            pinned: _,
            uid_map,
            gid_map,
            flags,
            ucounts_ns,
            freed,
            users,
        } = self;
        h.write_u32(obj.0);
        h.write_i64(count.peek());
        uid_map.name_state(h);
        gid_map.name_state(h);
        h.write_u32(flags.load(StdOrdering::SeqCst));
        ucounts_ns.name_state(h);
        h.write_u8(freed.load(StdOrdering::SeqCst) as u8);
        h.write_i64(users.load(StdOrdering::SeqCst));
    }
}

#[cfg(not(loom))]
impl Userns {
    /// Name the subsystem's state (`sim::Execution::name_state`): every
    /// namespace made, the oracle, the frees under way. The id the next
    /// namespace takes only labels it.
    pub fn name_state(&self, h: &mut sim::StateHasher) {
        use std::hash::Hasher;
        let Userns {
            patches: _,
            init: _,
            ucounts: _,
            wq: _,
            registered: _,
            next_id: _,
            // Held only within a step of a task (its owner is the
            // scheduler's).
            state_mutex: _,
            registry,
            oracle,
            pending,
        } = self;
        let registry = registry.lock();
        h.write_usize(registry.len());
        registry.iter().for_each(|ns| ns.name_state(h));
        oracle.name_state(h);
        let pending = pending.lock();
        let PendingFrees { cred_puts, frees } = &*pending;
        for works in [cred_puts, frees] {
            h.write_usize(works.len());
            works.iter().for_each(|w| w.name_state(h));
        }
    }
}

#[cfg(not(loom))]
impl UserStruct {
    /// Name its counters (`sim::Execution::name_state`).
    pub fn name_state(&self, h: &mut dyn std::hash::Hasher) {
        let UserStruct {
            uid,
            processes,
            sigpending,
            mq_bytes,
            locked_shm,
            drawn: _,
        } = self;
        h.write_u32(*uid);
        for c in [processes, sigpending, mq_bytes, locked_shm] {
            h.write_i64(c.peek());
        }
    }
}

#[cfg(not(loom))]
impl Cred {
    /// Name a credential (`sim::Execution::name_state`): its ids, groups,
    /// capabilities, and what it holds, by identity.
    pub fn name_state(&self, h: &mut dyn std::hash::Hasher) {
        let Cred {
            uid,
            euid,
            suid,
            fsuid,
            gid,
            egid,
            sgid,
            fsgid,
            groups,
            user_ns,
            cap_effective,
            cap_permitted,
            cap_bset,
            ucounts,
            user,
        } = self;
        for id in [uid, euid, suid, fsuid, gid, egid, sgid, fsgid] {
            h.write_u32(*id);
        }
        h.write_usize(groups.len());
        groups.iter().for_each(|g| h.write_u32(*g));
        h.write_u32(user_ns.obj.0);
        for caps in [cap_effective, cap_permitted, cap_bset] {
            h.write_u64(caps.0);
        }
        h.write_u32(ucounts.as_ref().map_or(0, |u| u.obj.0));
        h.write_u32(user.as_ref().map_or(u32::MAX, |u| u.uid));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capability_names_match_their_numbers() {
        assert_eq!(caps::from_name("CAP_SYS_ADMIN"), Some(caps::CAP_SYS_ADMIN));
        assert_eq!(caps::from_name("CAP_SETUID"), Some(caps::CAP_SETUID));
        assert_eq!(
            caps::from_name("CAP_SYS_RESOURCE"),
            Some(caps::CAP_SYS_RESOURCE)
        );
        assert_eq!(caps::from_name("CAP_SETFCAP"), Some(caps::CAP_SETFCAP));
        assert_eq!(caps::from_name("CAP_NOPE"), None);
    }

    #[test]
    fn the_depth_limit_is_33_levels_with_the_errno_of_the_era() {
        for (ucounts_limits, errno) in [(true, Error::ENOSPC), (false, Error::EUSERS)] {
            let sys = Userns::standalone(UsernsPatches {
                ucounts_limits,
                ..UsernsPatches::NEWEST
            });
            let mut cred = sys.init_root();
            for level in 1..=33 {
                cred = sys.create_user_ns(&cred, &format!("l{level}")).unwrap();
                // Map root onto the parent's root so the next level may be made.
                cred.user_ns
                    .uid_map
                    .install(&[Extent::new(0, 0, 1)], &[Extent::new(0, 0, 1)]);
                cred.user_ns
                    .gid_map
                    .install(&[Extent::new(0, 0, 1)], &[Extent::new(0, 0, 1)]);
            }
            assert_eq!(cred.user_ns.level, 33);
            assert_eq!(sys.create_user_ns(&cred, "l34").unwrap_err(), errno);
        }
    }

    #[test]
    fn max_user_namespaces_is_charged_to_the_creator() {
        let sys = Userns::standalone(UsernsPatches::NEWEST);
        sys.init.ucounts_ns.set_max(UcountType::UserNamespaces, 1);
        let root = sys.init_root();
        let child = sys.create_user_ns(&root, "a").unwrap();
        assert_eq!(sys.create_user_ns(&root, "b").unwrap_err(), Error::ENOSPC);
        sys.free_user_ns(&child.user_ns);
        assert!(sys.create_user_ns(&root, "c").is_ok());
    }

    #[test]
    fn an_unmapped_creator_gets_eperm() {
        let sys = Userns::standalone(UsernsPatches::NEWEST);
        let root = sys.init_root();
        let child = sys.create_user_ns(&root, "a").unwrap();
        // Maps are still empty: the creator's ids are unmapped in `a`.
        assert_eq!(sys.create_user_ns(&child, "b").unwrap_err(), Error::EPERM);
    }

    #[test]
    fn the_owner_of_a_child_namespace_has_every_capability_in_it() {
        let sys = Userns::standalone(UsernsPatches::NEWEST);
        let user = Cred::new(&sys.init, 1000, 1000, CapSet::EMPTY);
        let child = sys.create_user_ns(&user, "a").unwrap();
        assert!(ns_capable(&user, &child.user_ns, caps::CAP_SYS_ADMIN));
        assert!(!ns_capable(&user, &sys.init, caps::CAP_SYS_ADMIN));
        let other = Cred::new(&sys.init, 1001, 1001, CapSet::EMPTY);
        assert!(!ns_capable(&other, &child.user_ns, caps::CAP_SYS_ADMIN));
        assert!(ns_capable(&child, &child.user_ns, caps::CAP_SETUID));
        assert!(!ns_capable(&child, &sys.init, caps::CAP_SETUID));
        assert!(ns_capable(
            &sys.init_root(),
            &child.user_ns,
            caps::CAP_SETUID
        ));
    }
}
