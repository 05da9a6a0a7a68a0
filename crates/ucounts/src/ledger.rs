//! Shadow bookkeeping behind the `ucounts.balanced` invariant: how many
//! objects of each type were successfully charged through each entry, and
//! whether a charge or uncharge is half-way done.

use crate::{UcountType, Ucounts};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Default)]
pub struct Ledger {
    state: Mutex<LedgerState>,
}

#[derive(Default)]
struct LedgerState {
    in_flight: u32,
    entries: Vec<std::sync::Weak<Ucounts>>,
    charged: BTreeMap<(u32, u32, UcountType), i64>,
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
        self.state.lock().entries.push(Arc::downgrade(u));
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
}
