//! A false-ENOSPC oracle for one kind of namespace, judged the way a user
//! would: a creation may fail with ENOSPC only if, at some instant during
//! the call, the namespaces of that kind that were alive (charged and not
//! yet released by their last user) in its user namespace or an ancestor
//! reached that level's `max_*`. Namespaces that every user has dropped
//! but whose deferred free has not run yet do not count.
//!
//! Creations that overlap the failing one and succeed count too: each may
//! have taken its place at any instant of its own call, so a call that
//! fails while another one is still charging may have lost to it. Such a
//! failure is judged once every call that overlapped it has ended.
//!
//! The subsystem that owns the kind says when a namespace is charged,
//! released and freed, and brackets each charge attempt with
//! [`EnospcOracle::begin_call`] and [`EnospcOracle::end_call`]. A false
//! ENOSPC is reported once the syscall that got it has returned to its
//! task ([`EnospcOracle::returned`]), so that the task's results show it:
//! the syscall may still do other work after the failed charge (a child
//! of `unshare -U true` exits first). "Charged to a level" is counted the
//! way the limit applies: per entry on the charge's path
//! ([`crate::charge_chain`]), i.e. (the caller's user namespace, its euid)
//! and, at each ancestor, (that ancestor, the owner of the namespace
//! below).
//!
//! Nothing here is a scheduling point: the oracle is bookkeeping beside the
//! model, kept in ordered maps so that every run reads the same.

use crate::{UcountType, UcountsNs, UcountsTable};
use sim::HostMutex as Mutex;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// The entries a charge goes through, leaf first.
pub type Chain = Vec<(Arc<UcountsNs>, u32)>;

/// The trace notes of an oracle's counters (views draw a note labelled
/// `counter:...` as a counter track), at every level of a charge's chain,
/// each on the object that names the level: the namespaces alive through
/// the level's entry, its limit, and what its ucount holds against the
/// limit (the alive and those released but not yet freed, which keep their
/// charge until the free); and the namespaces waiting to be freed.
#[derive(Debug, Clone, Copy)]
pub struct CounterLabels {
    pub alive: &'static str,
    pub limit: &'static str,
    pub charged: &'static str,
    pub pending: &'static str,
}

/// [`CounterLabels`] of the user-namespace oracle.
pub const USER_NAMESPACE_COUNTERS: CounterLabels = CounterLabels {
    alive: "counter:user namespaces alive",
    limit: "counter:max_user_namespaces",
    charged: "counter:user namespaces charged (the ucount)",
    pending: "counter:user namespaces pending free",
};

/// [`CounterLabels`] of the network-namespace oracle.
pub const NET_NAMESPACE_COUNTERS: CounterLabels = CounterLabels {
    alive: "counter:net namespaces alive",
    limit: "counter:max_net_namespaces",
    charged: "counter:net namespaces charged (the ucount)",
    pending: "counter:net namespaces pending free",
};

/// Whether the views draw the counters of `kind` at the level `ns`: its
/// limit is set (below the unlimited default), by the scenario or a task.
pub fn drawn_level(ns: &UcountsNs, kind: UcountType) -> bool {
    ns.peek_max(kind) < crate::UCOUNT_MAX_LIMIT
}

/// The levels of `chain` whose counters of `kind` the views draw: those
/// whose limit is set, or the leaf when none is.
pub fn drawn_levels(
    chain: &[(Arc<UcountsNs>, u32)],
    kind: UcountType,
) -> Vec<&(Arc<UcountsNs>, u32)> {
    let set: Vec<_> = chain.iter().filter(|l| drawn_level(&l.0, kind)).collect();
    match set.is_empty() {
        true => chain.first().into_iter().collect(),
        false => set,
    }
}

/// The trace labels of the counters [`note_levels`] notes.
pub struct LevelLabels {
    pub alive: &'static str,
    pub limit: &'static str,
    pub pending: &'static str,
}

/// Counter notes for the views at each level of `chain` that is drawn
/// ([`drawn_levels`]): the namespaces of `kind` alive through the level's
/// entry (`live`, by (user namespace id, uid)) on the entry, which names
/// the level, and its limit on the limit's object; then `pending`, the
/// namespaces released and waiting to be freed. An ENOSPC oracle notes
/// them wherever those change.
pub fn note_levels(
    table: Option<&UcountsTable>,
    chain: &[(Arc<UcountsNs>, u32)],
    kind: UcountType,
    labels: &LevelLabels,
    live: &BTreeMap<(u32, u32), i64>,
    pending: i64,
) {
    for level in drawn_levels(chain, kind) {
        // Once the entry is freed nothing is alive through it.
        if let Some(entry) = table.and_then(|t| t.ledger.hashed(level.0.id, level.1)) {
            let alive = live.get(&key(level)).copied().unwrap_or(0);
            sim::note(labels.alive, entry.obj, alive);
        }
        sim::note(labels.limit, level.0.max_obj(kind), level.0.peek_max(kind));
    }
    sim::note(labels.pending, sim::ObjId::NONE, pending);
}

/// The counters the oracle of `kind` draws, if it draws any.
pub fn counter_labels(kind: UcountType) -> Option<&'static CounterLabels> {
    match kind {
        UcountType::UserNamespaces => Some(&USER_NAMESPACE_COUNTERS),
        UcountType::NetNamespaces => Some(&NET_NAMESPACE_COUNTERS),
        _ => None,
    }
}

/// A call being judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallId(u64);

/// The oracle of one ucount type.
pub struct EnospcOracle {
    kind: UcountType,
    /// What is made, for messages: "user namespace", "network namespace".
    noun: &'static str,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Alive namespaces charged through each (user namespace id, uid)
    /// entry: the counters the kernel compares with the limits, less the
    /// namespaces already released.
    live: BTreeMap<(u32, u32), i64>,
    calls: BTreeMap<u64, Call>,
    next_call: u64,
    /// Released and not yet freed.
    pending: i64,
    /// Failed calls not justified by what was alive during them, waiting
    /// for the calls that overlapped them to end, or for their syscall to
    /// return.
    undecided: Vec<Undecided>,
    violation: Option<String>,
    /// The table whose ledger knows the charges under way.
    table: Option<Arc<UcountsTable>>,
    kind: Option<UcountType>,
    /// Changes so far of what this oracle keeps (see `judge_if_changed`).
    changes: u64,
    /// What the calls were last judged with.
    judged_with: LastJudged,
}

/// A call under way that an ENOSPC oracle judges (this one's, or the ipc
/// one's): what it saw so far.
pub struct Call {
    pub chain: Chain,
    /// Some level of the chain was seen at its limit during the call.
    pub justified: bool,
    /// Most namespaces seen alive at the leaf during the call.
    pub most_live: i64,
    /// Most namespaces seen released and waiting to be freed during the
    /// call: what the message reports, and what tells a known kernel
    /// behaviour (`kernel::known`) from a defect.
    pub most_pending: i64,
}

impl Call {
    /// A call that begins in the entry `chain[0]`, seen nothing yet.
    pub fn new(chain: Chain) -> Self {
        Call {
            chain,
            justified: false,
            most_live: 0,
            most_pending: 0,
        }
    }

    /// One judgement: `leaf_live` alive at the leaf, `pending` released
    /// and waiting to be freed, and whether some level was at its limit.
    pub fn saw(&mut self, leaf_live: i64, pending: i64, reached: bool) {
        self.most_live = self.most_live.max(leaf_live);
        self.most_pending = self.most_pending.max(pending);
        self.justified |= reached;
    }
}

struct Undecided {
    chain: Chain,
    /// Alive at each entry of `chain` when the call ended.
    live_at_end: Vec<i64>,
    /// Calls still open when it ended.
    overlapping: BTreeSet<u64>,
    /// Of those, the ones that charged since, at each entry of `chain`.
    won: Vec<i64>,
    task: Option<sim::TaskId>,
    returned: bool,
    /// The message, should it be a violation.
    verdict: String,
}

fn key(entry: &(Arc<UcountsNs>, u32)) -> (u32, u32) {
    (entry.0.id, entry.1)
}

/// What an ENOSPC oracle's calls were last judged with. Judging is
/// idempotent: with the same inputs (the oracle's own changes, the ledger's
/// charges under way, the `max_*` writes) it changes nothing, so it is
/// skipped while none of them changed (the oracles judge after every step).
#[derive(Default)]
pub struct LastJudged(Option<(u64, u64, u64)>);

impl LastJudged {
    /// Whether the calls must be judged again, given the oracle's changes
    /// so far and the table whose ledger knows the charges under way; if
    /// so, the judgement about to be made is taken to have these inputs.
    pub fn stale(&mut self, changes: u64, table: Option<&UcountsTable>) -> bool {
        let charging = table.map_or(0, |t| t.ledger.charging_changes());
        let inputs = Some((changes, charging, crate::limits_set()));
        if self.0 == inputs {
            return false;
        }
        self.0 = inputs;
        true
    }
}

impl State {
    /// What the kernel's counter at `entry` holds, less the namespaces
    /// released and waiting to be freed: the alive ones, and the charges
    /// of creations under way (counted from their atomic operation on
    /// that level until they complete or are unwound).
    /// The first level of `chain`, leaf first, whose counter of `kind` is
    /// at its maximum now: the one whose limit refuses a charge.
    fn refusing_level(&self, chain: &Chain, kind: UcountType) -> Option<usize> {
        let table = self.table.as_ref()?;
        let entries = table.peek_entries();
        chain.iter().position(|(ns, uid)| {
            let count = entries
                .iter()
                .find(|u| u.ns.id == ns.id && u.uid == *uid)
                .map_or(0, |u| u.peek(kind));
            count >= ns.peek_max(kind)
        })
    }

    fn alive(&self, entry: &(Arc<UcountsNs>, u32)) -> i64 {
        self.live.get(&key(entry)).copied().unwrap_or(0) + self.in_progress(entry)
    }

    /// Charges under way at `entry`.
    fn in_progress(&self, entry: &(Arc<UcountsNs>, u32)) -> i64 {
        match (&self.table, self.kind) {
            (Some(table), Some(kind)) => {
                table.ledger.charges_in_progress(entry.0.id, entry.1, kind)
            }
            _ => 0,
        }
    }

    fn judge(&mut self, id: u64, kind: UcountType) {
        let Some(call) = self.calls.get(&id) else {
            return;
        };
        let leaf_live = self.alive(&call.chain[0]);
        let reached = call
            .chain
            .iter()
            .any(|entry| self.alive(entry) >= entry.0.peek_max(kind));
        let pending = self.pending;
        let call = self.calls.get_mut(&id).expect("just found");
        call.saw(leaf_live, pending, reached);
    }

    fn judge_if_changed(&mut self, kind: UcountType) {
        if self.judged_with.stale(self.changes, self.table.as_deref()) {
            self.judge_all(kind);
        }
    }

    fn judge_all(&mut self, kind: UcountType) {
        // After every step: walk the calls in order without collecting them.
        let mut next = 0;
        while let Some(id) = self.calls.range(next..).next().map(|(id, _)| *id) {
            self.judge(id, kind);
            next = id + 1;
        }
    }

    fn add(&mut self, chain: &[(Arc<UcountsNs>, u32)], by: i64) {
        for entry in chain {
            *self.live.entry(key(entry)).or_default() += by;
        }
    }

    /// Report the first undecided failure that nothing can justify any
    /// more; forget the justified ones.
    fn decide(&mut self, kind: UcountType) {
        let mut keep = Vec::new();
        for u in std::mem::take(&mut self.undecided) {
            if !u.overlapping.is_empty() || !u.returned {
                keep.push(u);
                continue;
            }
            let justified = u
                .chain
                .iter()
                .enumerate()
                .any(|(i, entry)| u.live_at_end[i] + u.won[i] >= entry.0.peek_max(kind));
            if !justified && self.violation.is_none() {
                self.violation = Some(u.verdict);
            }
        }
        self.undecided = keep;
    }
}

impl EnospcOracle {
    /// The oracle of `kind` for the charges of `table`.
    pub fn new(kind: UcountType, noun: &'static str, table: &Arc<UcountsTable>) -> Self {
        let state = State {
            table: Some(Arc::clone(table)),
            kind: Some(kind),
            ..State::default()
        };
        EnospcOracle {
            kind,
            noun,
            state: Mutex::new("the ENOSPC oracle", state),
        }
    }

    /// Judge the calls under way as the counters are now (after every
    /// step: a charge under way at another level changes them), then
    /// take the violation found, if any, under one lock.
    pub fn verdict(&self) -> Option<String> {
        let mut s = self.state.lock();
        s.judge_if_changed(self.kind);
        s.violation.take()
    }

    /// This oracle's state, locked to be changed.
    fn change(&self) -> sim::HostGuard<'_, State> {
        let mut s = self.state.lock();
        s.changes += 1;
        s
    }

    fn count(&self, n: i64) -> String {
        match n {
            1 => format!("1 {} was", self.noun),
            n => format!("{n} {}s were", self.noun),
        }
    }

    /// A charge attempt begins for the entries of `chain`.
    pub fn begin_call(&self, chain: Chain) -> CallId {
        let mut s = self.change();
        let id = s.next_call;
        s.next_call += 1;
        s.calls.insert(id, Call::new(chain));
        s.judge(id, self.kind);
        CallId(id)
    }

    /// The attempt is over; `enospc` says whether it failed for the limit
    /// (else it charged). `what` names the call in the message
    /// (`create_user_ns making looper/userns1`).
    pub fn end_call(&self, id: CallId, enospc: bool, what: &str) {
        let mut s = self.change();
        s.judge(id.0, self.kind);
        let Some(call) = s.calls.remove(&id.0) else {
            return;
        };
        for u in &mut s.undecided {
            if u.overlapping.remove(&id.0) && !enospc {
                for (i, entry) in u.chain.iter().enumerate() {
                    if call.chain.iter().any(|c| key(c) == key(entry)) {
                        u.won[i] += 1;
                    }
                }
            }
        }
        if enospc && !call.justified {
            let verdict = self.false_enospc_verdict(&s, &call, what);
            let task = sim::current_task();
            let undecided = Undecided {
                live_at_end: call.chain.iter().map(|e| s.alive(e)).collect(),
                overlapping: s.calls.keys().copied().collect(),
                won: vec![0; call.chain.len()],
                chain: call.chain,
                returned: task.is_none(),
                task,
                verdict,
            };
            s.undecided.push(undecided);
        }
        s.decide(self.kind);
    }

    /// What a false ENOSPC's message says: the level whose limit refused
    /// the charge (the first, leaf first, whose counter is at its maximum;
    /// the leaf when none is by now), what was alive there, and what held
    /// the rest of its count (namespaces released and waiting to be freed).
    fn false_enospc_verdict(&self, s: &State, call: &Call, what: &str) -> String {
        let level = s.refusing_level(&call.chain, self.kind).unwrap_or(0);
        let (ns, uid) = &call.chain[level];
        let sysctl = self.kind.sysctl().trim_start_matches("user.");
        let max = ns.peek_max(self.kind);
        if level == 0 {
            return format!(
                "{what} returned ENOSPC, but at most {} alive or being charged for uid {uid} in user namespace {} during the call ({sysctl} = {max}); at most {} released and waiting to be freed",
                self.count(call.most_live),
                ns.name,
                self.count(call.most_pending.max(0)),
            );
        }
        let (leaf, leaf_uid) = &call.chain[0];
        format!(
            "{what} returned ENOSPC: the limit that refused it is that of uid {uid} in user namespace {} ({sysctl} = {max} there; uid {leaf_uid} in user namespace {} below it, where the call was made, allows {}), but at most {} alive or being charged there when the call ended, the rest of its count held by namespaces released but not yet freed; at most {} released and waiting to be freed during the call",
            ns.name,
            leaf.name,
            leaf.peek_max(self.kind),
            self.count(s.alive(&call.chain[level])),
            self.count(call.most_pending.max(0)),
        )
    }

    /// The current task's syscall has returned: a false ENOSPC it got is
    /// reported now (or once the calls it overlapped have ended).
    pub fn returned(&self) {
        let mut s = self.change();
        let me = sim::current_task();
        let mut any = false;
        for u in &mut s.undecided {
            if u.task == me {
                u.returned = true;
                any = true;
            }
        }
        if any {
            s.decide(self.kind);
        }
    }

    /// A namespace was charged at every entry of `chain` (made by a task,
    /// or by the set-up).
    pub fn charged(&self, chain: &[(Arc<UcountsNs>, u32)]) {
        let mut s = self.change();
        s.add(chain, 1);
        s.judge_all(self.kind);
        self.publish(&s, chain);
    }

    /// A charge was undone before the namespace was ever used (a later
    /// check of the creation failed).
    pub fn uncharged(&self, chain: &[(Arc<UcountsNs>, u32)]) {
        let mut s = self.change();
        s.add(chain, -1);
        self.publish(&s, chain);
    }

    /// Every user of a namespace has dropped it; its free may come later.
    pub fn released(&self, chain: &[(Arc<UcountsNs>, u32)]) {
        let mut s = self.change();
        s.add(chain, -1);
        s.pending += 1;
        self.publish(&s, chain);
    }

    /// A released namespace is in use again before its free ran (a new
    /// holder found it through something that still pinned it).
    pub fn revived(&self, chain: &[(Arc<UcountsNs>, u32)]) {
        let mut s = self.change();
        s.add(chain, 1);
        s.pending -= 1;
        s.judge_all(self.kind);
        self.publish(&s, chain);
    }

    /// A released namespace charged through `chain` was freed and its
    /// charge returned.
    pub fn freed(&self, chain: &[(Arc<UcountsNs>, u32)]) {
        let mut s = self.change();
        s.pending -= 1;
        self.publish(&s, chain);
    }

    /// Counter notes for the views ([`CounterLabels`]) at each level of
    /// `chain`, then the namespaces waiting to be freed. What the ucounts
    /// hold is noted where they change (inc_ucount, dec_ucount).
    fn publish(&self, s: &State, chain: &[(Arc<UcountsNs>, u32)]) {
        if let Some(labels) = counter_labels(self.kind) {
            let table = s.table.as_deref();
            let levels = LevelLabels {
                alive: labels.alive,
                limit: labels.limit,
                pending: labels.pending,
            };
            note_levels(table, chain, self.kind, &levels, &s.live, s.pending);
        }
    }

    /// A `max_*` changed.
    pub fn limits_changed(&self) {
        self.change().judge_all(self.kind);
    }

    pub fn take_violation(&self) -> Option<String> {
        self.state.lock().violation.take()
    }

    /// Alive namespaces charged through the entry (user namespace `id`, `uid`).
    pub fn live(&self, id: u32, uid: u32) -> i64 {
        self.state.lock().live.get(&(id, uid)).copied().unwrap_or(0)
    }

    /// Released namespaces not yet freed.
    pub fn pending(&self) -> i64 {
        self.state.lock().pending
    }
}

/// The namespaces alive through each (user namespace id, uid) entry, as
/// the ENOSPC oracles (this one and the ipc one) keep them.
#[cfg(not(loom))]
pub fn name_live(live: &BTreeMap<(u32, u32), i64>, h: &mut dyn std::hash::Hasher) {
    h.write_usize(live.len());
    for ((ns, uid), n) in live {
        h.write_u32(*ns);
        h.write_u32(*uid);
        h.write_i64(*n);
    }
}

/// A chain of entries, by (namespace id, uid).
#[cfg(not(loom))]
pub fn name_chain(chain: &[(Arc<UcountsNs>, u32)], h: &mut dyn std::hash::Hasher) {
    h.write_usize(chain.len());
    for (ns, uid) in chain {
        h.write_u32(ns.id);
        h.write_u32(*uid);
    }
}

#[cfg(not(loom))]
impl EnospcOracle {
    /// Name the oracle's state (`sim::Execution::name_state`): what is
    /// alive, the calls open and the failures undecided (each in the part
    /// of the task whose syscall failed), the pending frees, a verdict.
    /// Which id the next call takes and the counts that spare a judgement
    /// only label calls and save work.
    pub fn name_state(&self, h: &mut sim::StateHasher) {
        use std::hash::Hasher;
        let s = self.state.lock();
        let State {
            live,
            calls,
            next_call: _,
            pending,
            undecided,
            violation,
            table: _,
            kind: _,
            changes: _,
            judged_with: _,
        } = &*s;
        name_live(live, h);
        h.write_usize(calls.len());
        for (id, c) in calls {
            h.write_u64(*id);
            c.name_state(h);
        }
        h.write_i64(*pending);
        h.write_usize(undecided.len());
        for (i, u) in undecided.iter().enumerate() {
            match u.task {
                Some(t) => h.task(t, |p| {
                    p.write_usize(i);
                    u.name_state(p);
                }),
                None => u.name_state(h),
            }
        }
        h.write_u8(violation.is_some() as u8);
    }
}

#[cfg(not(loom))]
impl Call {
    /// Name the call (`sim::Execution::name_state`): its chain, whether it
    /// is justified, and the most it saw alive and pending.
    pub fn name_state(&self, h: &mut dyn std::hash::Hasher) {
        let Call {
            chain,
            justified,
            most_live,
            most_pending,
        } = self;
        name_chain(chain, h);
        h.write_u8(*justified as u8);
        h.write_i64(*most_live);
        h.write_i64(*most_pending);
    }
}

#[cfg(not(loom))]
impl Undecided {
    fn name_state(&self, h: &mut dyn std::hash::Hasher) {
        let Undecided {
            chain,
            live_at_end,
            overlapping,
            won,
            task: _,
            returned,
            verdict,
        } = self;
        name_chain(chain, h);
        live_at_end.iter().chain(won).for_each(|n| h.write_i64(*n));
        overlapping.iter().for_each(|c| h.write_u64(*c));
        h.write_u8(*returned as u8);
        h.write_usize(verdict.len());
        h.write(verdict.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oracle() -> (EnospcOracle, Chain) {
        let ns = UcountsNs::init(0);
        ns.set_max(UcountType::NetNamespaces, 1);
        let o = EnospcOracle::new(
            UcountType::NetNamespaces,
            "network namespace",
            &Arc::new(UcountsTable::new()),
        );
        (o, vec![(ns, 0)])
    }

    #[test]
    fn an_enospc_with_the_limit_reached_by_live_namespaces_is_justified() {
        let (o, chain) = oracle();
        o.charged(&chain);
        let call = o.begin_call(chain.clone());
        o.end_call(call, true, "copy_net_ns");
        assert_eq!(o.take_violation(), None);
        assert_eq!(o.live(0, 0), 1);
    }

    #[test]
    fn an_enospc_while_the_only_namespace_waits_for_its_free_is_false() {
        let (o, chain) = oracle();
        o.charged(&chain);
        o.released(&chain);
        let call = o.begin_call(chain.clone());
        o.end_call(call, true, "copy_net_ns");
        let v = o.take_violation().expect("a violation");
        assert!(
            v.contains("at most 0 network namespaces were alive or being charged"),
            "{v}"
        );
        assert!(v.contains("max_net_namespaces = 1"), "{v}");
        assert!(v.contains("1 network namespace was released"), "{v}");
        o.freed(&chain);
        assert_eq!(o.pending(), 0);
    }

    #[test]
    fn a_namespace_charged_during_the_call_justifies_it() {
        let (o, chain) = oracle();
        let call = o.begin_call(chain.clone());
        o.charged(&chain);
        o.released(&chain);
        o.end_call(call, true, "copy_net_ns");
        assert_eq!(o.take_violation(), None);
    }

    #[test]
    fn a_failure_is_judged_once_the_calls_it_overlapped_have_ended() {
        // Another creation is still charging when this one fails: if it
        // succeeds, it may have taken the last place first.
        let (o, chain) = oracle();
        let other = o.begin_call(chain.clone());
        let call = o.begin_call(chain.clone());
        o.end_call(call, true, "copy_net_ns");
        assert_eq!(o.take_violation(), None, "undecided while `other` runs");
        o.charged(&chain);
        o.end_call(other, false, "copy_net_ns");
        assert_eq!(o.take_violation(), None);
        // If it fails too, neither had a reason.
        o.released(&chain);
        let other = o.begin_call(chain.clone());
        let call = o.begin_call(chain.clone());
        o.end_call(call, true, "copy_net_ns");
        o.end_call(other, true, "copy_net_ns");
        assert!(o.take_violation().is_some());
    }
}
