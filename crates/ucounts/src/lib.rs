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
//! This is the part of ucounts that namespace limits need; rlimit counters
//! (`inc_rlimit_ucounts`, RLIMIT_NPROC) extend the same entries.

mod ledger;

pub use ledger::Ledger;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering as StdOrdering};
use sync::{Arc, AtomicI64, Ordering, SpinLock};

/// `enum ucount_type`: what a namespace-level counter counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum UcountType {
    UserNamespaces,
    PidNamespaces,
    UtsNamespaces,
    IpcNamespaces,
    NetNamespaces,
    MntNamespaces,
    CgroupNamespaces,
}

impl UcountType {
    pub const ALL: [UcountType; 7] = [
        UcountType::UserNamespaces,
        UcountType::PidNamespaces,
        UcountType::UtsNamespaces,
        UcountType::IpcNamespaces,
        UcountType::NetNamespaces,
        UcountType::MntNamespaces,
        UcountType::CgroupNamespaces,
    ];
    pub const COUNT: usize = Self::ALL.len();

    /// The sysctl under /proc/sys/user that limits it.
    pub fn sysctl(self) -> &'static str {
        match self {
            UcountType::UserNamespaces => "user.max_user_namespaces",
            UcountType::PidNamespaces => "user.max_pid_namespaces",
            UcountType::UtsNamespaces => "user.max_uts_namespaces",
            UcountType::IpcNamespaces => "user.max_ipc_namespaces",
            UcountType::NetNamespaces => "user.max_net_namespaces",
            UcountType::MntNamespaces => "user.max_mnt_namespaces",
            UcountType::CgroupNamespaces => "user.max_cgroup_namespaces",
        }
    }

    pub fn from_sysctl(name: &str) -> Option<UcountType> {
        Self::ALL.into_iter().find(|t| t.sysctl() == name)
    }
}

/// The largest value a `max_*` sysctl accepts (INT_MAX), also the default
/// in every namespace in this model.
pub const UCOUNT_MAX_LIMIT: i64 = i32::MAX as i64;

static NEXT_NS_ID: AtomicU32 = AtomicU32::new(0);

/// The ucounts side of a user namespace.
pub struct UcountsNs {
    /// Stable id within a run (creation order), used as the table key.
    pub id: u32,
    pub name: String,
    pub parent: Option<Arc<UcountsNs>>,
    pub level: u32,
    /// `ucount_max[]`: the `max_*` sysctls of this namespace.
    ucount_max: Vec<AtomicI64>,
    /// `ns->ucounts`: the (parent, owner) entry charged when this namespace
    /// was made; the walk up the tree goes through it.
    pub ucounts: Option<Arc<Ucounts>>,
}

impl UcountsNs {
    /// The initial user namespace.
    pub fn init(id: u32) -> Arc<Self> {
        Arc::new(UcountsNs {
            id,
            name: "init".into(),
            parent: None,
            level: 0,
            ucount_max: limits(),
            ucounts: None,
        })
    }

    /// A child namespace whose creation was charged to `ucounts`.
    pub fn child(
        id: u32,
        name: &str,
        parent: &Arc<UcountsNs>,
        ucounts: Option<Arc<Ucounts>>,
    ) -> Arc<Self> {
        Arc::new(UcountsNs {
            id,
            name: name.to_string(),
            parent: Some(Arc::clone(parent)),
            level: parent.level + 1,
            ucount_max: limits(),
            ucounts,
        })
    }

    /// A fresh id for a namespace made outside a simulation run.
    pub fn next_id() -> u32 {
        NEXT_NS_ID.fetch_add(1, StdOrdering::Relaxed)
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
    /// the range.
    pub fn set_max(&self, t: UcountType, v: i64) {
        self.ucount_max[t as usize].store(v, Ordering::Relaxed);
    }

    /// This namespace and its ancestors, leaf first.
    pub fn chain(self: &Arc<Self>) -> Vec<Arc<UcountsNs>> {
        let mut out = vec![Arc::clone(self)];
        while let Some(p) = out.last().and_then(|n| n.parent.clone()) {
            out.push(p);
        }
        out
    }
}

fn limits() -> Vec<AtomicI64> {
    (0..UcountType::COUNT)
        .map(|_| AtomicI64::new("ucount_max", UCOUNT_MAX_LIMIT))
        .collect()
}

/// `struct ucounts`: the counters of one uid in one user namespace.
pub struct Ucounts {
    /// The entry's lifetime in the simulator (live until the last put).
    pub obj: sim::ObjId,
    pub ns: Arc<UcountsNs>,
    pub uid: u32,
    count: AtomicI64,
    ucount: Vec<AtomicI64>,
}

impl Ucounts {
    /// The current value of one counter, without a scheduling point.
    pub fn peek(&self, t: UcountType) -> i64 {
        self.ucount[t as usize].peek()
    }

    pub fn peek_refs(&self) -> i64 {
        self.count.peek()
    }
}

/// The ucounts hash table with its lock (`ucounts_hashtable`,
/// `ucounts_lock`). A BTreeMap keeps iteration order deterministic.
pub struct UcountsTable {
    table: SpinLock<BTreeMap<(u32, u32), Arc<Ucounts>>>,
    /// Shadow bookkeeping for the `ucounts.balanced` invariant.
    pub ledger: Ledger,
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
        }
    }

    /// `alloc_ucounts`: find the entry of (ns, uid) and take a reference,
    /// or insert a new one. The look-up and the reference are taken under
    /// `ucounts_lock`, as is the last put's unhash, so a look-up never
    /// returns an entry that is being freed; the re-check after allocating
    /// keeps two racing callers from inserting twice.
    pub fn alloc_ucounts(&self, ns: &Arc<UcountsNs>, uid: u32) -> Option<Arc<Ucounts>> {
        let key = (ns.id, uid);
        {
            let table = self.table.lock();
            if let Some(u) = table.get(&key) {
                return get_ucounts(u).then(|| Arc::clone(u));
            }
        }
        let new = Arc::new(Ucounts {
            obj: sim::new_object("ucounts"),
            ns: Arc::clone(ns),
            uid,
            count: AtomicI64::new("ucounts.count", 1),
            ucount: (0..UcountType::COUNT)
                .map(|_| AtomicI64::new("ucount", 0))
                .collect(),
        });
        let mut table = self.table.lock();
        if let Some(u) = table.get(&key) {
            return get_ucounts(u).then(|| Arc::clone(u));
        }
        table.insert(key, Arc::clone(&new));
        self.ledger.register(&new);
        Some(new)
    }

    /// `put_ucounts`: drop a reference; the last one unhashes the entry
    /// under the lock, so no lookup can find it being freed.
    pub fn put_ucounts(&self, u: &Arc<Ucounts>) {
        let mut table = self.table.lock();
        if u.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            table.remove(&(u.ns.id, u.uid));
            sim::free_object(u.obj);
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
            sim::touch(u.obj, "inc_ucount");
            let max = u.ns.max(t);
            if !atomic_long_inc_below(&u.ucount[t as usize], max) {
                for c in charged.iter().rev() {
                    c.ucount[t as usize].fetch_sub(1, Ordering::Relaxed);
                }
                self.put_ucounts(&leaf);
                return None;
            }
            charged.push(Arc::clone(&u));
            iter = u.ns.ucounts.clone();
        }
        self.ledger.charge(&charged, t);
        Some(leaf)
    }

    /// `dec_ucount`: uncharge every level, then drop the reference.
    pub fn dec_ucount(&self, leaf: &Arc<Ucounts>, t: UcountType) {
        let _flight = self.ledger.in_flight();
        let mut levels = Vec::new();
        let mut iter = Some(Arc::clone(leaf));
        while let Some(u) = iter {
            levels.push(Arc::clone(&u));
            iter = u.ns.ucounts.clone();
        }
        self.ledger.uncharge(&levels, t);
        for u in &levels {
            sim::touch(u.obj, "dec_ucount");
            let dec = atomic_long_dec_if_positive(&u.ucount[t as usize]);
            debug_assert!(dec >= 0, "ucount underflow");
        }
        self.put_ucounts(leaf);
    }

    /// Every entry, in key order, without scheduling points (checkers).
    pub fn peek_entries(&self) -> Vec<Arc<Ucounts>> {
        self.ledger.entries()
    }
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

/// `get_ucounts`: take a reference unless the count would wrap (it never
/// meets a dying entry: callers hold `ucounts_lock` or a reference).
fn get_ucounts(u: &Ucounts) -> bool {
    sim::touch(u.obj, "get_ucounts");
    let mut cur = u.count.load(Ordering::Relaxed);
    loop {
        if cur <= 0 {
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
