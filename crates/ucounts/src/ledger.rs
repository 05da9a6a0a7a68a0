//! Shadow bookkeeping behind the `ucounts.balanced` and `ucounts.no_leak`
//! invariants: how many objects of each type were successfully charged
//! through each entry, the rlimit amounts charged, which entries are
//! hashed, and whether a charge or uncharge is half-way done.

use crate::{RlimitType, UcountType, Ucounts};
use sim::HostMutex as Mutex;
use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

#[derive(Default)]
pub struct Ledger {
    state: Mutex<LedgerState>,
    /// Changes of the charges under way so far, changed under the lock
    /// and read without it (the oracles ask after every step).
    charging_changes: std::sync::atomic::AtomicU64,
    /// Changes so far of what `check_live` compares: the entries, what
    /// was charged, and the end of each charge or uncharge (every change
    /// of a counter is made inside one, see [`Ledger::in_flight`]).
    /// Changed under the lock, read without it.
    changes: std::sync::atomic::AtomicU64,
}

#[derive(Default)]
struct LedgerState {
    in_flight: u32,
    entries: Vec<Weak<Ucounts>>,
    hashed: BTreeMap<(u32, u32), Weak<Ucounts>>,
    /// By entry ([`Ucounts::serial`]): its (namespace id, uid) and what
    /// was charged through it, one slot per type (one look-up an entry
    /// when the checker runs after every step). An entry freed and made
    /// again for the same key is a new entry, as in the kernel.
    charged: BTreeMap<u64, ((u32, u32), Charged)>,
    next_serial: u64,
    /// By (namespace id, uid, type): levels that an `inc_ucount` under
    /// way has charged and not yet completed or unwound. The kernel's
    /// counter already holds them: the ENOSPC oracles count them as the
    /// kernel does.
    charging: BTreeMap<(u32, u32, UcountType), i64>,
    /// `changes` when `check_live` last found every counter as charged.
    passed_at: Option<u64>,
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
        let mut s = self.0.state.lock();
        s.in_flight -= 1;
        self.0.changed();
    }
}

impl Ledger {
    fn changed(&self) {
        self.changes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Changes so far of the entries, what was charged through them, and
    /// their counters (see `changes`): a judgement of them stands while
    /// this is the same.
    pub fn changes(&self) -> u64 {
        self.changes.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A charge or uncharge begins: every change of a counter is made
    /// while one is in flight, so that the counters are compared only
    /// between them, and compared again only after one ended.
    pub(crate) fn in_flight(&self) -> InFlight<'_> {
        self.state.lock().in_flight += 1;
        InFlight(self)
    }

    /// The serial of the next entry the table makes.
    pub(crate) fn next_serial(&self) -> u64 {
        let mut s = self.state.lock();
        s.next_serial += 1;
        s.next_serial
    }

    pub(crate) fn register(&self, u: &Arc<Ucounts>) {
        let mut s = self.state.lock();
        self.changed();
        s.entries.push(Arc::downgrade(u));
        s.hashed.insert((u.ns.id, u.uid), Arc::downgrade(u));
    }

    pub(crate) fn unhashed(&self, u: &Arc<Ucounts>) {
        let mut s = self.state.lock();
        self.changed();
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

    /// The first of `f`'s findings over the hashed entries, in key order
    /// (without collecting them: checkers ask it after every step). `f`
    /// runs with the ledger locked: it must not call the ledger.
    pub fn find_hashed<T>(&self, mut f: impl FnMut(&Ucounts) -> Option<T>) -> Option<T> {
        let s = self.state.lock();
        s.hashed
            .values()
            .filter_map(Weak::upgrade)
            .find_map(|u| f(&u))
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

    /// One level of an `inc_ucount` under way was charged (`by` 1) or
    /// unwound (`by` -1), in the step of its atomic operation.
    pub(crate) fn charging(&self, u: &Ucounts, t: UcountType, by: i64) {
        let mut s = self.state.lock();
        self.charging_changes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let n = s.charging.entry((u.ns.id, u.uid, t)).or_default();
        *n += by;
        if *n == 0 {
            s.charging.remove(&(u.ns.id, u.uid, t));
        }
    }

    /// How many times the charges under way changed: a judgement made
    /// with them stands while this is the same.
    pub fn charging_changes(&self) -> u64 {
        self.charging_changes
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Charges of type `t` under way at the entry (namespace `ns`, `uid`).
    pub fn charges_in_progress(&self, ns: u32, uid: u32, t: UcountType) -> i64 {
        let s = self.state.lock();
        s.charging.get(&(ns, uid, t)).copied().unwrap_or(0)
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
        self.changed();
        for u in levels {
            s.charged_mut(u).objects[i] += v;
        }
    }

    /// Record `v` (negative to uncharge) of rlimit `t` at every level.
    pub(crate) fn charge_rlimit(&self, levels: &[Arc<Ucounts>], t: RlimitType, v: i64) {
        let i = slot(&RlimitType::ALL, &t);
        let mut s = self.state.lock();
        self.changed();
        for u in levels {
            s.charged_mut(u).rlimits[i] += v;
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
    /// collecting them first (it runs after every step). A pass stands
    /// until the ledger changes: no counter changes but in a charge or
    /// uncharge, whose end is a change (an entry freed meanwhile only
    /// leaves fewer to compare).
    pub fn check_live(&self) -> Option<String> {
        let mut s = self.state.lock();
        let changes = self.changes();
        if s.in_flight > 0 || s.passed_at == Some(changes) {
            return None;
        }
        let found = s
            .entries
            .iter()
            .filter_map(Weak::upgrade)
            .find_map(|u| s.mismatch(&u));
        if found.is_none() {
            s.passed_at = Some(changes);
        }
        found
    }

    /// Objects still charged, by (namespace id, uid, type).
    pub fn outstanding(&self) -> Vec<((u32, u32, UcountType), i64)> {
        let s = self.state.lock();
        let mut out = Vec::new();
        for (&(ns, uid), c) in &s.by_key() {
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
        for (&(ns, uid), c) in &s.by_key() {
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
    fn charged_mut(&mut self, u: &Ucounts) -> &mut Charged {
        &mut self
            .charged
            .entry(u.serial)
            .or_insert(((u.ns.id, u.uid), Charged::default()))
            .1
    }

    /// What was charged, summed over the entries of each (namespace id,
    /// uid) key.
    fn by_key(&self) -> BTreeMap<(u32, u32), Charged> {
        let mut out: BTreeMap<(u32, u32), Charged> = BTreeMap::new();
        for (key, c) in self.charged.values() {
            let sum = out.entry(*key).or_default();
            for (a, b) in sum.objects.iter_mut().zip(c.objects) {
                *a += b;
            }
            for (a, b) in sum.rlimits.iter_mut().zip(c.rlimits) {
                *a += b;
            }
        }
        out
    }

    /// How `u`'s counters differ from what was charged through it.
    fn mismatch(&self, u: &Ucounts) -> Option<String> {
        let c = self
            .charged
            .get(&u.serial)
            .map(|(_, c)| *c)
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

#[cfg(not(loom))]
impl Ledger {
    /// Name the ledger's state (`sim::Execution::name_state`): the entries
    /// made (each still alive named whole), those hashed, what was
    /// charged through each, the charges under way. The serial to come
    /// and the count of changes only tell entries and judgements apart.
    pub(crate) fn name_state(&self, h: &mut dyn std::hash::Hasher) -> bool {
        let s = self.state.lock();
        let LedgerState {
            in_flight,
            entries,
            hashed,
            charged,
            next_serial: _,
            charging,
            passed_at: _,
        } = &*s;
        h.write_u32(*in_flight);
        h.write_usize(entries.len());
        for e in entries {
            match e.upgrade() {
                Some(u) => u.name_state(h),
                None => h.write_u8(0xff),
            }
        }
        h.write_usize(hashed.len());
        for ((ns, uid), e) in hashed {
            h.write_u32(*ns);
            h.write_u32(*uid);
            h.write_u32(e.upgrade().map_or(0, |u| u.obj.0));
        }
        h.write_usize(charged.len());
        for (serial, ((ns, uid), c)) in charged {
            h.write_u64(*serial);
            h.write_u32(*ns);
            h.write_u32(*uid);
            c.objects
                .iter()
                .chain(&c.rlimits)
                .for_each(|n| h.write_i64(*n));
        }
        h.write_usize(charging.len());
        for ((ns, uid, t), n) in charging {
            h.write_u32(*ns);
            h.write_u32(*uid);
            h.write_u8(*t as u8);
            h.write_i64(*n);
        }
        true
    }
}
