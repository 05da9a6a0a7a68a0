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
    charged: BTreeMap<(u32, u32, UcountType), i64>,
    rlimits: BTreeMap<(u32, u32, RlimitType), i64>,
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
        let mut s = self.state.lock();
        for u in levels {
            *s.charged.entry((u.ns.id, u.uid, t)).or_default() += 1;
        }
    }

    pub(crate) fn uncharge(&self, levels: &[Arc<Ucounts>], t: UcountType) {
        let mut s = self.state.lock();
        for u in levels {
            *s.charged.entry((u.ns.id, u.uid, t)).or_default() -= 1;
        }
    }

    /// Record `v` (negative to uncharge) of rlimit `t` at every level.
    pub(crate) fn charge_rlimit(&self, levels: &[Arc<Ucounts>], t: RlimitType, v: i64) {
        let mut s = self.state.lock();
        for u in levels {
            *s.rlimits.entry((u.ns.id, u.uid, t)).or_default() += v;
        }
    }

    /// When no charge is half-way done, every counter must equal what was
    /// charged through it. Returns the first mismatch.
    pub fn check(&self, entries: &[Arc<Ucounts>]) -> Option<String> {
        let s = self.state.lock();
        if s.in_flight > 0 {
            return None;
        }
        for u in entries {
            for t in UcountType::ALL {
                let want = s.charged.get(&(u.ns.id, u.uid, t)).copied().unwrap_or(0);
                let have = u.peek(t);
                if want != have {
                    return Some(format!(
                        "ucount {t:?} of uid {} in user namespace {} is {have}, but {want} objects are charged to it",
                        u.uid, u.ns.name
                    ));
                }
            }
            for t in RlimitType::ALL {
                let want = s.rlimits.get(&(u.ns.id, u.uid, t)).copied().unwrap_or(0);
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
        }
        None
    }

    /// Objects still charged, by (namespace id, uid, type).
    pub fn outstanding(&self) -> Vec<((u32, u32, UcountType), i64)> {
        let s = self.state.lock();
        s.charged
            .iter()
            .filter(|(_, v)| **v != 0)
            .map(|(k, v)| (*k, *v))
            .collect()
    }

    /// Rlimit amounts still charged, by (namespace id, uid, type).
    pub fn outstanding_rlimits(&self) -> Vec<((u32, u32, RlimitType), i64)> {
        let s = self.state.lock();
        s.rlimits
            .iter()
            .filter(|(_, v)| **v != 0)
            .map(|(k, v)| (*k, *v))
            .collect()
    }
}
