//! Shadow bookkeeping behind the `ucounts.balanced` and `ucounts.no_leak`
//! invariants: how many objects of each type were successfully charged
//! through each entry, the rlimit amounts charged, which entries are
//! hashed, and whether a charge or uncharge is half-way done.

use crate::{RlimitType, UcountType, Ucounts};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

#[derive(Default)]
pub struct Ledger {
    state: Mutex<LedgerState>,
}

#[derive(Default)]
struct LedgerState {
    in_flight: u32,
    entries: Vec<Weak<Ucounts>>,
    hashed: BTreeMap<(u32, u32), Weak<Ucounts>>,
    /// By (namespace id, uid): what was charged, one slot per type (one
    /// look-up an entry when the checker runs after every step).
    charged: BTreeMap<(u32, u32), Charged>,
}

/// What was charged through one (namespace, uid) entry.
#[derive(Default, Clone, Copy)]
struct Charged {
    objects: [i64; UcountType::ALL.len()],
    rlimits: [i64; RlimitType::ALL.len()],
}

fn slot<T: PartialEq>(all: &[T], t: &T) -> usize {
    all.iter().position(|x| x == t).expect("a listed type")
}

/// Marks a charge or uncharge in progress while it lives.
pub struct InFlight<'a>(&'a Ledger);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.state.lock().in_flight -= 1;
    }
}

impl Ledger {
    pub(crate) fn in_flight(&self) -> InFlight<'_> {
        self.state.lock().in_flight += 1;
        InFlight(self)
    }

    pub(crate) fn register(&self, u: &Arc<Ucounts>) {
        let mut s = self.state.lock();
        s.entries.push(Arc::downgrade(u));
        s.hashed.insert((u.ns.id, u.uid), Arc::downgrade(u));
    }

    pub(crate) fn unhashed(&self, u: &Arc<Ucounts>) {
        let mut s = self.state.lock();
        let key = (u.ns.id, u.uid);
        if s.hashed
            .get(&key)
            .is_some_and(|w| std::ptr::eq(w.as_ptr(), Arc::as_ptr(u)))
        {
            s.hashed.remove(&key);
        }
    }

    /// The entry hashed under (ns, uid), if any.
    pub fn hashed(&self, ns: u32, uid: u32) -> Option<Arc<Ucounts>> {
        self.state
            .lock()
            .hashed
            .get(&(ns, uid))
            .and_then(Weak::upgrade)
    }

    /// Every hashed entry, in key order.
    pub fn hashed_entries(&self) -> Vec<Arc<Ucounts>> {
        let s = self.state.lock();
        s.hashed.values().filter_map(Weak::upgrade).collect()
    }

    /// Entries still referenced, in creation order.
    pub fn entries(&self) -> Vec<Arc<Ucounts>> {
        let mut s = self.state.lock();
        s.entries.retain(|w| w.strong_count() > 0);
        s.entries.iter().filter_map(|w| w.upgrade()).collect()
    }

    pub(crate) fn charge(&self, levels: &[Arc<Ucounts>], t: UcountType) {
        self.add_objects(levels, t, 1);
    }

    pub(crate) fn uncharge(&self, levels: &[Arc<Ucounts>], t: UcountType) {
        self.add_objects(levels, t, -1);
    }

    fn add_objects(&self, levels: &[Arc<Ucounts>], t: UcountType, v: i64) {
        let i = slot(&UcountType::ALL, &t);
        let mut s = self.state.lock();
        for u in levels {
            s.charged.entry((u.ns.id, u.uid)).or_default().objects[i] += v;
        }
    }

    /// Record `v` (negative to uncharge) of rlimit `t` at every level.
    pub(crate) fn charge_rlimit(&self, levels: &[Arc<Ucounts>], t: RlimitType, v: i64) {
        let i = slot(&RlimitType::ALL, &t);
        let mut s = self.state.lock();
        for u in levels {
            s.charged.entry((u.ns.id, u.uid)).or_default().rlimits[i] += v;
        }
    }

    /// When no charge is half-way done, every counter must equal what was
    /// charged through it. Returns the first mismatch.
    pub fn check(&self, entries: &[Arc<Ucounts>]) -> Option<String> {
        let s = self.state.lock();
        if s.in_flight > 0 {
            return None;
        }
        entries.iter().find_map(|u| s.mismatch(u))
    }

    /// [`Ledger::check`] over every entry still referenced, without
    /// collecting them first (it runs after every step).
    pub fn check_live(&self) -> Option<String> {
        let s = self.state.lock();
        if s.in_flight > 0 {
            return None;
        }
        s.entries
            .iter()
            .filter_map(Weak::upgrade)
            .find_map(|u| s.mismatch(&u))
    }

    /// Objects still charged, by (namespace id, uid, type).
    pub fn outstanding(&self) -> Vec<((u32, u32, UcountType), i64)> {
        let s = self.state.lock();
        let mut out = Vec::new();
        for (&(ns, uid), c) in &s.charged {
            for (t, v) in UcountType::ALL.into_iter().zip(c.objects) {
                if v != 0 {
                    out.push(((ns, uid, t), v));
                }
            }
        }
        out
    }

    /// Rlimit amounts still charged, by (namespace id, uid, type).
    pub fn outstanding_rlimits(&self) -> Vec<((u32, u32, RlimitType), i64)> {
        let s = self.state.lock();
        let mut out = Vec::new();
        for (&(ns, uid), c) in &s.charged {
            for (t, v) in RlimitType::ALL.into_iter().zip(c.rlimits) {
                if v != 0 {
                    out.push(((ns, uid, t), v));
                }
            }
        }
        out
    }
}

impl LedgerState {
    /// How `u`'s counters differ from what was charged through it.
    fn mismatch(&self, u: &Ucounts) -> Option<String> {
        let c = self
            .charged
            .get(&(u.ns.id, u.uid))
            .copied()
            .unwrap_or_default();
        for (t, want) in UcountType::ALL.into_iter().zip(c.objects) {
            let have = u.peek(t);
            if want != have {
                return Some(format!(
                    "ucount {t:?} of uid {} in user namespace {} is {have}, but {want} objects are charged to it",
                    u.uid, u.ns.name
                ));
            }
        }
        for (t, want) in RlimitType::ALL.into_iter().zip(c.rlimits) {
            let have = u.peek_rlimit(t);
            if want != have {
                return Some(format!(
                    "rlimit counter {} of uid {} in user namespace {} is {have}, but {want} is charged to it",
                    t.name(),
                    u.uid,
                    u.ns.name
                ));
            }
        }
        None
    }
}
