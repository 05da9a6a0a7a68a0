//! ucounts: counters keyed by (user namespace, uid), charged at every level
//! up the user-namespace tree against each level's `max_*` limit.
//!
//! Models kernel/ucount.c: `alloc_ucounts` (look up or insert under
//! `ucounts_lock`), `get_ucounts`/`put_ucounts`, `inc_ucount` (an
//! increment-below-limit at each level, unwound on failure) and
//! `dec_ucount`. The namespace side of the tree ([`UcountsNs`]: parent,
//! limits, the entry charged in the parent) is what `struct user_namespace`
//! contributes; the user-namespace crate embeds it.
//!
//! The rlimit counters of v5.14 (`inc_rlimit_ucounts`,
//! `dec_rlimit_ucounts`, `inc_rlimit_get_ucounts`, `dec_rlimit_put_ucounts`,
//! `is_rlimit_overlimit`, and each namespace's `rlimit_max` recorded from
//! its creator) are in [`rlimit`]; the `/proc/sys/user/max_*` files (who may
//! read and write them, their defaults) in [`sysctl`]. The oracle that
//! judges a namespace creation's ENOSPC against the namespaces still in
//! use is [`enospc`].
//!
//! History kept as switches rather than releases (the kernel crate maps
//! releases to them):
//! * the lookup-versus-last-put race ([`UcountsTable::with_put_race`]): the
//!   last `put_ucounts` dropped the count to zero before taking
//!   `ucounts_lock` to unhash the entry, while a lookup under the lock took
//!   a reference on any entry it found, so it could hand out an entry that
//!   was about to be freed (4.9-4.10, and again during the v5.14 merge
//!   window until "ucounts: Fix race condition between alloc_ucounts and
//!   put_ucounts");
//! * the comparison rule of `is_rlimit_overlimit` ([`RlimitCheck`]): before
//!   v5.16 ("ucounts: Fix rlimit max values check") each level was compared
//!   with its own namespace's recorded maximum; since, each ancestor is
//!   compared with the value recorded in the namespace below it;
//! * an entry's reference on its user namespace
//!   ([`UcountsTable::hold_namespaces`]): from v5.17 ("ucount: Make
//!   get_ucount a safe get_user replacement", CVE-2022-24122) a new entry
//!   takes one and its last put drops it; before, a charge that pins an
//!   entry (a message queue, a pending signal) could outlive the namespace,
//!   whose walk up the tree ([`UcountsNs::touch`]) then read freed memory.

pub mod enospc;
mod ledger;
#[cfg(not(loom))]
mod name;
pub mod rlimit;
pub mod sysctl;

pub use ledger::Ledger;
pub use rlimit::{
    dec_rlimit_put_ucounts, dec_rlimit_ucounts, draw_rlimit_levels, inc_rlimit_get_ucounts,
    inc_rlimit_ucounts, is_rlimit_overlimit, is_rlimit_overlimit_watched, OverUnwind, RlimitCheck,
    RlimitType, LONG_MAX, RLIM_INFINITY,
};
pub use sysctl::SysctlError;

use std::collections::BTreeMap;
use std::sync::atomic::Ordering as StdOrdering;
use sync::{Arc, AtomicI64, Ordering, SpinLock};

/// `enum ucount_type`: what a namespace-level counter counts, in the
/// kernel's order. The rlimit counters that v5.14 appended to the same enum
/// (and v6.1 moved to `enum rlimit_type`) are [`RlimitType`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum UcountType {
    UserNamespaces,
    PidNamespaces,
    UtsNamespaces,
    IpcNamespaces,
    NetNamespaces,
    MntNamespaces,
    CgroupNamespaces,
    TimeNamespaces,
    InotifyInstances,
    InotifyWatches,
    FanotifyGroups,
    FanotifyMarks,
}

impl UcountType {
    pub const ALL: [UcountType; 12] = [
        UcountType::UserNamespaces,
        UcountType::PidNamespaces,
        UcountType::UtsNamespaces,
        UcountType::IpcNamespaces,
        UcountType::NetNamespaces,
        UcountType::MntNamespaces,
        UcountType::CgroupNamespaces,
        UcountType::TimeNamespaces,
        UcountType::InotifyInstances,
        UcountType::InotifyWatches,
        UcountType::FanotifyGroups,
        UcountType::FanotifyMarks,
    ];
    pub const COUNT: usize = Self::ALL.len();

    /// The kernel's name of the enum value.
    pub fn kernel_name(self) -> &'static str {
        match self {
            UcountType::UserNamespaces => "UCOUNT_USER_NAMESPACES",
            UcountType::PidNamespaces => "UCOUNT_PID_NAMESPACES",
            UcountType::UtsNamespaces => "UCOUNT_UTS_NAMESPACES",
            UcountType::IpcNamespaces => "UCOUNT_IPC_NAMESPACES",
            UcountType::NetNamespaces => "UCOUNT_NET_NAMESPACES",
            UcountType::MntNamespaces => "UCOUNT_MNT_NAMESPACES",
            UcountType::CgroupNamespaces => "UCOUNT_CGROUP_NAMESPACES",
            UcountType::TimeNamespaces => "UCOUNT_TIME_NAMESPACES",
            UcountType::InotifyInstances => "UCOUNT_INOTIFY_INSTANCES",
            UcountType::InotifyWatches => "UCOUNT_INOTIFY_WATCHES",
            UcountType::FanotifyGroups => "UCOUNT_FANOTIFY_GROUPS",
            UcountType::FanotifyMarks => "UCOUNT_FANOTIFY_MARKS",
        }
    }

    /// The first release whose `enum ucount_type` had the value: the seven
    /// namespace types came with ucounts itself (v4.9), the inotify limits
    /// moved into it in v4.11, time namespaces in v5.7, fanotify in v5.13.
    pub fn since(self) -> &'static str {
        match self {
            UcountType::InotifyInstances | UcountType::InotifyWatches => "v4.11",
            UcountType::TimeNamespaces => "v5.7",
            UcountType::FanotifyGroups | UcountType::FanotifyMarks => "v5.13",
            _ => "v4.9",
        }
    }

    /// The sysctl under /proc/sys/user that limits it.
    /// The sysctl's name under `user.` (`max_user_namespaces`).
    pub fn sysctl_name(self) -> &'static str {
        self.sysctl().trim_start_matches("user.")
    }

    pub fn sysctl(self) -> &'static str {
        match self {
            UcountType::UserNamespaces => "user.max_user_namespaces",
            UcountType::PidNamespaces => "user.max_pid_namespaces",
            UcountType::UtsNamespaces => "user.max_uts_namespaces",
            UcountType::IpcNamespaces => "user.max_ipc_namespaces",
            UcountType::NetNamespaces => "user.max_net_namespaces",
            UcountType::MntNamespaces => "user.max_mnt_namespaces",
            UcountType::CgroupNamespaces => "user.max_cgroup_namespaces",
            UcountType::TimeNamespaces => "user.max_time_namespaces",
            UcountType::InotifyInstances => "user.max_inotify_instances",
            UcountType::InotifyWatches => "user.max_inotify_watches",
            UcountType::FanotifyGroups => "user.max_fanotify_groups",
            UcountType::FanotifyMarks => "user.max_fanotify_marks",
        }
    }

    pub fn from_sysctl(name: &str) -> Option<UcountType> {
        Self::ALL.into_iter().find(|t| t.sysctl() == name)
    }
}

/// The largest value a `max_*` sysctl accepts (INT_MAX), also the default
/// in every namespace in this model.
pub const UCOUNT_MAX_LIMIT: i64 = i32::MAX as i64;

/// The ucounts side of a user namespace.
pub struct UcountsNs {
    /// Stable id within a run (creation order), used as the table key.
    pub id: u32,
    pub name: String,
    pub parent: Option<Arc<UcountsNs>>,
    pub level: u32,
    /// `ucount_max[]`: the `max_*` sysctls of this namespace.
    ucount_max: Vec<AtomicI64>,
    /// `rlimit_max[]` (part of `ucount_max[]` before v6.1): the creator's
    /// rlimits when the namespace was made, fixed for its lifetime. An
    /// ancestor level's rlimit counter is compared with the value recorded
    /// here, in the namespace below it.
    rlimit_max: [i64; RlimitType::COUNT],
    /// `ns->ucounts`: the (parent, owner) entry charged when this namespace
    /// was made; the walk up the tree goes through it.
    pub ucounts: Option<Arc<Ucounts>>,
    /// The user namespace's object, where one is modelled: a walk up the
    /// tree reads the namespace (`iter->ns->ucounts`), which is a use
    /// after free once it has been freed.
    obj: std::sync::OnceLock<sim::ObjId>,
}

impl UcountsNs {
    /// The initial user namespace. Its recorded rlimit maxima are LONG_MAX:
    /// nothing above it is ever compared with them.
    pub fn init(id: u32) -> Arc<Self> {
        Self::init_with_rlimits(id, [RLIM_INFINITY; RlimitType::COUNT])
    }

    /// The initial user namespace recording `rlimits` as its maxima (the
    /// boot task's, as v5.14 did until "ucounts: Fix regression preventing
    /// increasing of rlimits in init_user_ns").
    pub fn init_with_rlimits(id: u32, rlimits: [u64; RlimitType::COUNT]) -> Arc<Self> {
        Arc::new(UcountsNs {
            id,
            name: "init".into(),
            parent: None,
            level: 0,
            ucount_max: limits("init"),
            rlimit_max: rlimits.map(rlimit::clamp_to_long),
            ucounts: None,
            obj: std::sync::OnceLock::new(),
        })
    }

    /// A child namespace whose creation was charged to `ucounts`, with no
    /// rlimit recorded (LONG_MAX: the creator had none).
    pub fn child(
        id: u32,
        name: &str,
        parent: &Arc<UcountsNs>,
        ucounts: Option<Arc<Ucounts>>,
    ) -> Arc<Self> {
        Self::child_with_rlimits(
            id,
            name,
            parent,
            ucounts,
            [RLIM_INFINITY; RlimitType::COUNT],
        )
    }

    /// `create_user_ns`'s part: a child namespace charged to `ucounts`,
    /// recording the creator's rlimits (clamped to LONG_MAX, as
    /// `set_userns_rlimit_max` does).
    pub fn child_with_rlimits(
        id: u32,
        name: &str,
        parent: &Arc<UcountsNs>,
        ucounts: Option<Arc<Ucounts>>,
        creator_rlimits: [u64; RlimitType::COUNT],
    ) -> Arc<Self> {
        Arc::new(UcountsNs {
            id,
            name: name.to_string(),
            parent: Some(Arc::clone(parent)),
            level: parent.level + 1,
            ucount_max: limits(name),
            rlimit_max: creator_rlimits.map(rlimit::clamp_to_long),
            ucounts,
            obj: std::sync::OnceLock::new(),
        })
    }

    /// The object of this namespace's `max_*` sysctl of `t`: what the
    /// views name a limit's level by.
    pub fn max_obj(&self, t: UcountType) -> sim::ObjId {
        self.ucount_max[t as usize].obj()
    }

    /// The user namespace this is the ucounts side of is object `obj`.
    pub fn set_obj(&self, obj: sim::ObjId) {
        let _ = self.obj.set(obj);
    }

    /// Read the namespace itself (`what` says where): a use after free
    /// once it has been freed.
    pub fn touch(&self, what: &'static str) {
        if let Some(obj) = self.obj.get() {
            sim::touch(*obj, what);
        }
    }

    /// Read `max_*` (a READ_ONCE in the kernel: a scheduling point).
    pub fn max(&self, t: UcountType) -> i64 {
        self.ucount_max[t as usize].load(Ordering::Relaxed)
    }

    /// Read `max_*` without a scheduling point (checkers, reports).
    pub fn peek_max(&self, t: UcountType) -> i64 {
        self.ucount_max[t as usize].peek()
    }

    /// Write a `max_*` sysctl; the caller has checked the permission and
    /// the range (see [`sysctl`] for the checked path).
    pub fn set_max(&self, t: UcountType, v: i64) {
        self.ucount_max[t as usize].store(v, Ordering::Relaxed);
        LIMITS_SET.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// `get_userns_rlimit_max`: the rlimit recorded at creation.
    pub fn rlimit_max(&self, t: RlimitType) -> i64 {
        self.rlimit_max[t as usize]
    }

    /// This namespace and its ancestors, leaf first.
    pub fn chain(self: &Arc<Self>) -> Vec<Arc<UcountsNs>> {
        let mut out = vec![Arc::clone(self)];
        while let Some(p) = out.last().and_then(|n| n.parent.clone()) {
            out.push(p);
        }
        out
    }

    /// Is `self` `other` or one of its descendants?
    pub fn is_same_or_descendant_of(&self, other: &UcountsNs) -> bool {
        let mut cur = Some(self);
        while let Some(ns) = cur {
            if ns.id == other.id {
                return true;
            }
            cur = ns.parent.as_deref();
        }
        false
    }
}

/// The `max_*` sysctls of the user namespace `ns`, each called after
/// its sysctl in the views (`ct-a: max_user_namespaces`).
fn limits(ns: &str) -> Vec<AtomicI64> {
    let titled = sim::recording();
    UcountType::ALL
        .into_iter()
        .map(|t| {
            let max = AtomicI64::new("ucount_max", UCOUNT_MAX_LIMIT);
            if titled {
                sim::title_object(max.obj(), || format!("{ns}: {}", t.sysctl_name()));
            }
            max
        })
        .collect()
}

/// `struct ucounts`: the counters of one uid in one user namespace.
pub struct Ucounts {
    /// The entry's lifetime in the simulator (live until the last put).
    pub obj: sim::ObjId,
    pub ns: Arc<UcountsNs>,
    pub uid: u32,
    /// Which entry of (ns, uid) this is, in the order the table made them:
    /// the ledger keeps each entry's charges apart from those of an entry
    /// made again for the same key after this one was freed.
    pub(crate) serial: u64,
    count: AtomicI64,
    ucount: Vec<AtomicI64>,
    /// `rlimit[]`: RLIMIT_NPROC, MSGQUEUE, SIGPENDING, MEMLOCK usage.
    rlimit: Vec<AtomicI64>,
    /// Set when the entry is freed; any later use panics. The simulator's
    /// own object tracking reports such a use first (outcome
    /// use-after-free); this flag is what loom models see.
    freed: std::sync::atomic::AtomicBool,
    /// Which rlimit counters the views draw at this level (its maximum was
    /// finite when a charge was checked: [`rlimit::draw_rlimit_levels`]);
    /// bookkeeping for the trace notes only, never a scheduling point.
    rlimit_drawn: [std::sync::atomic::AtomicBool; RlimitType::COUNT],
}

impl Ucounts {
    fn new(ns: &Arc<UcountsNs>, uid: u32, serial: u64) -> Self {
        let entry = Ucounts {
            obj: sim::new_object("ucounts"),
            ns: Arc::clone(ns),
            uid,
            serial,
            count: AtomicI64::new("ucounts.count", 1),
            ucount: (0..UcountType::COUNT)
                .map(|_| AtomicI64::new("ucount", 0))
                .collect(),
            rlimit: (0..RlimitType::COUNT)
                .map(|_| AtomicI64::new("ucounts.rlimit", 0))
                .collect(),
            freed: std::sync::atomic::AtomicBool::new(false),
            rlimit_drawn: Default::default(),
        };
        entry.title();
        entry
    }

    /// Call the entry and its counters what they are in the views:
    /// `ucounts(ct-a, uid 100000)`, its `.count`, and each counter after
    /// what it counts (`ucounts(ct-a, uid 100000): user_namespaces`).
    fn title(&self) {
        if !sim::recording() {
            return;
        }
        let me = || format!("ucounts({}, uid {})", self.ns.name, self.uid);
        sim::title_object(self.obj, me);
        sim::title_object(self.count.obj(), || format!("{}.count", me()));
        for t in UcountType::ALL {
            let counted = t.sysctl_name().trim_start_matches("max_");
            sim::title_object(self.ucount[t as usize].obj(), || {
                format!("{}: {counted}", me())
            });
        }
        for r in RlimitType::ALL {
            sim::title_object(self.rlimit[r as usize].obj(), || {
                format!("{}: {}", me(), r.name())
            });
        }
    }

    /// For the views: what the counter of `t` holds now, at a level whose
    /// limit the scenario set (`enospc::CounterLabels`).
    fn note_charged(&self, t: UcountType) {
        if let Some(labels) = enospc::counter_labels(t).filter(|_| enospc::drawn_level(&self.ns, t))
        {
            sim::note(labels.charged, self.obj, self.peek(t));
        }
    }

    /// For the views: the count of rlimit `t` now, at a level drawn.
    pub(crate) fn note_rlimit(&self, t: RlimitType) {
        if self.rlimit_drawn[t as usize].load(StdOrdering::Relaxed) {
            sim::note(t.count_label(), self.obj, self.peek_rlimit(t));
        }
    }

    /// Draw the counter of rlimit `t` at this level from now on, against
    /// `max` (what this level is compared with).
    pub(crate) fn draw_rlimit(&self, t: RlimitType, max: i64) {
        self.rlimit_drawn[t as usize].store(true, StdOrdering::Relaxed);
        sim::note(t.max_label(), self.obj, max);
        self.note_rlimit(t);
    }

    /// The current value of one counter, without a scheduling point.
    pub fn peek(&self, t: UcountType) -> i64 {
        self.ucount[t as usize].peek()
    }

    /// The current value of one rlimit counter, without a scheduling point.
    pub fn peek_rlimit(&self, t: RlimitType) -> i64 {
        self.rlimit[t as usize].peek()
    }

    pub fn peek_refs(&self) -> i64 {
        self.count.peek()
    }

    /// Has the last put freed the entry?
    pub fn is_freed(&self) -> bool {
        self.freed.load(StdOrdering::SeqCst)
    }

    /// Dereference the entry: a freed entry is a use-after-free.
    pub(crate) fn touch(&self, what: &'static str) {
        sim::touch(self.obj, what);
        assert!(!self.is_freed(), "ucounts used after free: {what}");
    }

    pub(crate) fn rlimit_counter(&self, t: RlimitType) -> &AtomicI64 {
        &self.rlimit[t as usize]
    }

    /// The next level up: the entry charged when this entry's namespace
    /// was made (`iter->ns->ucounts`).
    pub fn up(&self) -> Option<&Arc<Ucounts>> {
        self.ns.ucounts.as_ref()
    }
}

/// What an entry's reference on its user namespace does (from v5.17,
/// "ucount: Make get_ucount a safe get_user replacement"): the user
/// namespace subsystem, which sits above this crate, implements it.
pub trait UsernsPins: Send + Sync {
    /// `get_user_ns` as a new entry is hashed (its creator holds the
    /// namespace meanwhile).
    fn get_user_ns(&self, ns: &UcountsNs);
    /// `put_user_ns` as an entry is freed.
    fn put_user_ns(&self, ns: &UcountsNs);
}

/// Fault injection, as the kernel's `failslab` does it: asked at an
/// allocation site whether this allocation fails. The machine above this
/// crate implements it (it knows which task is running).
pub trait FailAllocation: Send + Sync {
    /// Whether the allocation at `site` the running task makes now fails.
    fn fails(&self, site: &'static str) -> bool;
}

/// The ucounts hash table with its lock (`ucounts_hashtable`,
/// `ucounts_lock`). A BTreeMap keeps iteration order deterministic.
pub struct UcountsTable {
    table: SpinLock<BTreeMap<(u32, u32), Arc<Ucounts>>>,
    /// Shadow bookkeeping for the `ucounts.balanced` invariant.
    pub ledger: Ledger,
    /// The unfixed lookup-versus-last-put race (see the crate docs).
    put_race: bool,
    /// Each entry holds its user namespace (v5.17); unset before, when an
    /// entry may outlive it.
    ns_pins: std::sync::OnceLock<Box<dyn UsernsPins>>,
    /// Fault injection, when a scenario asks for it.
    faults: std::sync::OnceLock<std::sync::Arc<dyn FailAllocation>>,
}

impl Default for UcountsTable {
    fn default() -> Self {
        Self::new()
    }
}

impl UcountsTable {
    pub fn new() -> Self {
        UcountsTable {
            table: SpinLock::new("ucounts_lock", BTreeMap::new()),
            ledger: Ledger::default(),
            put_race: false,
            ns_pins: std::sync::OnceLock::new(),
            faults: std::sync::OnceLock::new(),
        }
    }

    /// From now on a new entry's allocation asks `faults` whether it
    /// fails (and `alloc_ucounts` then returns `None`).
    pub fn inject_faults(&self, faults: std::sync::Arc<dyn FailAllocation>) {
        let _ = self.faults.set(faults);
    }

    /// From now on each entry holds its user namespace, through `pins`
    /// (v5.17's `alloc_ucounts` and `put_ucounts`).
    pub fn hold_namespaces(&self, pins: Box<dyn UsernsPins>) {
        let _ = self.ns_pins.set(pins);
    }

    /// The entry is gone: its reference on its namespace too.
    fn put_entry_ns(&self, u: &Ucounts) {
        if let Some(pins) = self.ns_pins.get() {
            pins.put_user_ns(&u.ns);
        }
    }

    /// The table with the lookup-versus-last-put race left in: the last
    /// put decrements outside `ucounts_lock`, and a lookup takes a
    /// reference even on an entry whose count already reached zero.
    pub fn with_put_race() -> Self {
        UcountsTable {
            put_race: true,
            ..Self::new()
        }
    }

    /// `alloc_ucounts`: find the entry of (ns, uid) and take a reference,
    /// or insert a new one. The look-up and the reference are taken under
    /// `ucounts_lock`, as is the last put's unhash, so a look-up never
    /// returns an entry that is being freed; the re-check after allocating
    /// keeps two racing callers from inserting twice.
    pub fn alloc_ucounts(&self, ns: &Arc<UcountsNs>, uid: u32) -> Option<Arc<Ucounts>> {
        self.alloc_ucounts_at(ns, uid, None)
    }

    /// [`UcountsTable::alloc_ucounts`] for a caller that fault injection
    /// names `site`: a new entry's allocation asks the injected faults
    /// whether it fails (`None` then).
    pub fn alloc_ucounts_at(
        &self,
        ns: &Arc<UcountsNs>,
        uid: u32,
        site: Option<&'static str>,
    ) -> Option<Arc<Ucounts>> {
        let key = (ns.id, uid);
        {
            let table = self.table.lock();
            if let Some(u) = table.get(&key) {
                return self.get_locked(u);
            }
        }
        if let Some(site) = site {
            if self.faults.get().is_some_and(|f| f.fails(site)) {
                return None;
            }
        }
        let new = Arc::new(Ucounts::new(ns, uid, self.ledger.next_serial()));
        let mut table = self.table.lock();
        if let Some(u) = table.get(&key) {
            // Another caller inserted it meanwhile: ours is dropped unused.
            sim::free_object(new.obj);
            return self.get_locked(u);
        }
        table.insert(key, Arc::clone(&new));
        self.ledger.register(&new);
        if let Some(pins) = self.ns_pins.get() {
            pins.get_user_ns(ns);
        }
        Some(new)
    }

    /// The reference a look-up under `ucounts_lock` takes.
    fn get_locked(&self, u: &Arc<Ucounts>) -> Option<Arc<Ucounts>> {
        let got = if self.put_race {
            get_ucounts_or_wrap(u)
        } else {
            get_ucounts(u)
        };
        got.then(|| Arc::clone(u))
    }

    /// `get_ucounts`: take another reference on an entry the caller holds.
    pub fn get_ucounts(&self, u: &Arc<Ucounts>) -> Option<Arc<Ucounts>> {
        get_ucounts(u).then(|| Arc::clone(u))
    }

    /// `put_ucounts`: drop a reference. The last one unhashes and frees
    /// the entry; the decrement happens under `ucounts_lock` (what
    /// `atomic_dec_and_lock` guarantees for the decrement to zero), so no
    /// look-up can find the entry dying.
    pub fn put_ucounts(&self, u: &Arc<Ucounts>) {
        u.touch("put_ucounts");
        if self.put_race {
            return self.put_ucounts_racy(u);
        }
        let mut table = self.table.lock();
        if u.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            unhash(&mut table, u);
            self.ledger.unhashed(u);
            drop(table);
            self.put_entry_ns(u);
            free_ucounts(u);
        }
    }

    /// The unfixed put: the count reaches zero before the lock is taken.
    fn put_ucounts_racy(&self, u: &Arc<Ucounts>) {
        if u.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            let mut table = self.table.lock();
            unhash(&mut table, u);
            self.ledger.unhashed(u);
            drop(table);
            self.put_entry_ns(u);
            free_ucounts(u);
        }
    }

    /// `inc_ucount`: charge one object of type `t` to (ns, uid) and to the
    /// owner's entry at every ancestor level, each below its level's
    /// limit. On failure the levels already charged are uncharged and
    /// `None` is returned (the caller reports ENOSPC).
    pub fn inc_ucount(&self, ns: &Arc<UcountsNs>, uid: u32, t: UcountType) -> Option<Arc<Ucounts>> {
        let _flight = self.ledger.in_flight();
        let leaf = self.alloc_ucounts(ns, uid)?;
        let mut charged: Vec<Arc<Ucounts>> = Vec::new();
        let mut iter = Some(Arc::clone(&leaf));
        while let Some(u) = iter {
            u.touch("inc_ucount");
            let max = u.ns.max(t);
            if !atomic_long_inc_below(&u.ucount[t as usize], max) {
                for c in charged.iter().rev() {
                    c.ucount[t as usize].fetch_sub(1, Ordering::Relaxed);
                    self.ledger.charging(c, t, -1);
                    c.note_charged(t);
                }
                self.put_ucounts(&leaf);
                return None;
            }
            self.ledger.charging(&u, t, 1);
            u.note_charged(t);
            charged.push(Arc::clone(&u));
            iter = u.ns.ucounts.clone();
        }
        for c in &charged {
            self.ledger.charging(c, t, -1);
        }
        self.ledger.charge(&charged, t);
        Some(leaf)
    }

    /// `dec_ucount`: uncharge every level, then drop the reference.
    pub fn dec_ucount(&self, leaf: &Arc<Ucounts>, t: UcountType) {
        let _flight = self.ledger.in_flight();
        let levels = levels(leaf);
        self.ledger.uncharge(&levels, t);
        for u in &levels {
            u.touch("dec_ucount");
            let dec = atomic_long_dec_if_positive(&u.ucount[t as usize]);
            debug_assert!(dec >= 0, "ucount underflow");
            u.note_charged(t);
        }
        self.put_ucounts(leaf);
    }

    /// Every entry, in key order, without scheduling points (checkers).
    pub fn peek_entries(&self) -> Vec<Arc<Ucounts>> {
        self.ledger.entries()
    }

    /// Is (ns, uid) hashed now? Without a scheduling point (checkers).
    pub fn peek_hashed(&self, ns: u32, uid: u32) -> Option<Arc<Ucounts>> {
        self.ledger.hashed(ns, uid)
    }
}

/// Remove `u` from the table, unless the key now names another entry.
fn unhash(table: &mut BTreeMap<(u32, u32), Arc<Ucounts>>, u: &Arc<Ucounts>) {
    let key = (u.ns.id, u.uid);
    if table.get(&key).is_some_and(|t| Arc::ptr_eq(t, u)) {
        table.remove(&key);
    }
}

fn free_ucounts(u: &Ucounts) {
    // A second free is a use of freed memory: the simulator reports it as
    // such; under loom the flag below does.
    sim::touch(u.obj, "kfree");
    let again = u.freed.swap(true, StdOrdering::SeqCst);
    assert!(!again, "ucounts used after free: freed twice");
    sim::free_object(u.obj);
}

/// Whether a charge through `leaf` goes through `entry` (without
/// collecting the levels: checkers ask it after every step).
pub fn charges_through(leaf: &Arc<Ucounts>, entry: &Ucounts) -> bool {
    let mut at: Option<&Arc<Ucounts>> = Some(leaf);
    while let Some(u) = at {
        if std::ptr::eq(Arc::as_ptr(u), entry) {
            return true;
        }
        at = u.up();
    }
    false
}

/// Writes of any `max_*` limit so far, by any thread: a checker that
/// judges with the limits can skip a judgement when neither this nor its
/// other inputs changed (a write on another thread only makes it judge
/// again, never skip).
static LIMITS_SET: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// See [`LIMITS_SET`].
pub fn limits_set() -> u64 {
    LIMITS_SET.load(std::sync::atomic::Ordering::Relaxed)
}

/// The entries a charge through `leaf` goes through, leaf first.
pub fn levels(leaf: &Arc<Ucounts>) -> Vec<Arc<Ucounts>> {
    let mut out = vec![Arc::clone(leaf)];
    while let Some(up) = out.last().and_then(|u| u.up().cloned()) {
        out.push(up);
    }
    out
}

/// The (namespace, uid) entries a charge by `uid` in `ns` goes through:
/// the leaf, then at each ancestor the owner of the namespace below it.
pub fn charge_chain(ns: &Arc<UcountsNs>, uid: u32) -> Vec<(Arc<UcountsNs>, u32)> {
    let mut out = vec![(Arc::clone(ns), uid)];
    let mut next = ns.ucounts.clone();
    while let Some(u) = next {
        out.push((Arc::clone(&u.ns), u.uid));
        next = u.ns.ucounts.clone();
    }
    out
}

/// `get_ucounts`: take a reference unless the entry is dying (count zero)
/// or the count would wrap.
fn get_ucounts(u: &Ucounts) -> bool {
    u.touch("get_ucounts");
    let mut cur = u.count.load(Ordering::Relaxed);
    loop {
        if cur <= 0 || cur == i64::MAX {
            return false;
        }
        match u
            .count
            .compare_exchange(cur, cur + 1, Ordering::AcqRel, Ordering::Relaxed)
        {
            Ok(_) => return true,
            Err(now) => cur = now,
        }
    }
}

/// The unfixed look-up's get: an increment that only refuses to wrap, so
/// a count of zero becomes one (the entry is resurrected).
fn get_ucounts_or_wrap(u: &Ucounts) -> bool {
    u.touch("get_ucounts");
    u.count.fetch_add(1, Ordering::AcqRel) >= 0
}

/// Increment unless the value is already at or above `limit`.
fn atomic_long_inc_below(v: &AtomicI64, limit: i64) -> bool {
    let mut cur = v.load(Ordering::Relaxed);
    loop {
        if cur >= limit {
            return false;
        }
        match v.compare_exchange(cur, cur + 1, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => return true,
            Err(now) => cur = now,
        }
    }
}

/// Decrement unless the value is already zero; returns the new value (or
/// -1 when it was zero: an underflow the kernel warns about).
fn atomic_long_dec_if_positive(v: &AtomicI64) -> i64 {
    let mut cur = v.load(Ordering::Relaxed);
    loop {
        if cur <= 0 {
            return -1;
        }
        match v.compare_exchange(cur, cur - 1, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => return cur - 1,
            Err(now) => cur = now,
        }
    }
}
