//! The oracle behind `ipc.no_false_enospc`, judged the way a user would:
//! an `unshare(CLONE_NEWIPC)` may fail with ENOSPC only if, at some instant
//! during the call, the ipc namespaces that were alive (charged and not yet
//! released by their last put) in its user namespace or an ancestor
//! reached that level's `max_ipc_namespaces`. Namespaces waiting in the
//! free queue do not count: they are already released.
//!
//! "Charged to a level" is counted the way the limit applies: per ucounts
//! entry on the charge's path, i.e. (the caller's user namespace, its euid)
//! and, at each ancestor, (that ancestor, the owner of the namespace below).

use sim::HostMutex as Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;
pub use ucounts::enospc::Chain;
use ucounts::enospc::{Call, LastJudged};
use ucounts::{UcountType, UcountsNs, UcountsTable};

/// Trace notes whose label starts with `counter:` carry a counter's new
/// value; views draw them as counter tracks.
pub const COUNTER_ALIVE: &str = "counter:ipc namespaces alive";
pub const COUNTER_LIMIT: &str = "counter:max_ipc_namespaces";
pub const COUNTER_PENDING: &str = "counter:ipc namespaces pending free";
/// What the ucount holds against `max_ipc_namespaces`: the namespaces alive
/// and those released and waiting to be freed, which keep their charge
/// until the free; views draw it against the limit.
pub const COUNTER_CHARGED: (&str, &[&str]) = (
    "counter:ipc namespaces charged (alive + pending free)",
    &[COUNTER_ALIVE, COUNTER_PENDING],
);

fn namespaces(n: i64) -> String {
    match n {
        1 => "1 ipc namespace was".to_string(),
        n => format!("{n} ipc namespaces were"),
    }
}

pub struct Oracle {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Alive namespaces charged through each (user namespace id, uid)
    /// entry: the counters the kernel compares with the limits.
    live: BTreeMap<(u32, u32), i64>,
    calls: BTreeMap<u64, Call>,
    next_call: u64,
    released: u64,
    freed: u64,
    violation: Option<String>,
    /// The table whose ledger knows the charges under way.
    table: Option<Arc<UcountsTable>>,
    /// Changes so far of what a judgement reads here (the calls, the
    /// live counts, the pending frees).
    changes: u64,
    /// What the calls were last judged with.
    judged_with: LastJudged,
}

/// A call being judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallId(u64);

impl State {
    /// What the kernel's counter at (`level`, `uid`) holds, less the
    /// namespaces released and waiting to be freed: the alive ones, and
    /// the charges of creations under way (counted from their atomic
    /// operation on that level until they complete or are unwound).
    fn alive(&self, level: &UcountsNs, uid: u32) -> i64 {
        let live = self.live.get(&(level.id, uid)).copied().unwrap_or(0);
        let charging = self.table.as_ref().map_or(0, |t| {
            t.ledger
                .charges_in_progress(level.id, uid, UcountType::IpcNamespaces)
        });
        live + charging
    }

    fn judge(&mut self, id: u64) {
        let Some(call) = self.calls.get(&id) else {
            return;
        };
        let (leaf, uid) = &call.chain[0];
        let leaf_live = self.alive(leaf, *uid);
        let reached = call.chain.iter().any(|(level, uid)| {
            self.alive(level, *uid) >= level.peek_max(UcountType::IpcNamespaces)
        });
        let pending = (self.released - self.freed) as i64;
        let call = self.calls.get_mut(&id).expect("just found");
        call.saw(leaf_live, pending, reached);
    }

    /// Counter notes for the views: at each level of `chain`, the
    /// namespaces alive through its entry and its limit, each on the
    /// object that names the level; then the namespaces waiting to be
    /// freed.
    fn publish(&self, chain: &[(Arc<UcountsNs>, u32)]) {
        let labels = ucounts::enospc::LevelLabels {
            alive: COUNTER_ALIVE,
            limit: COUNTER_LIMIT,
            pending: COUNTER_PENDING,
        };
        let pending = (self.released - self.freed) as i64;
        let (table, kind) = (self.table.as_deref(), UcountType::IpcNamespaces);
        ucounts::enospc::note_levels(table, chain, kind, &labels, &self.live, pending);
    }

    fn judge_if_changed(&mut self) {
        if self.judged_with.stale(self.changes, self.table.as_deref()) {
            self.judge_all();
        }
    }

    fn judge_all(&mut self) {
        // After every step: walk the calls in order without collecting them.
        let mut next = 0;
        while let Some(id) = self.calls.range(next..).next().map(|(id, _)| *id) {
            self.judge(id);
            next = id + 1;
        }
    }
}

impl Oracle {
    /// The oracle for the charges of `table`.
    pub fn new(table: &Arc<UcountsTable>) -> Self {
        let state = State {
            table: Some(Arc::clone(table)),
            ..State::default()
        };
        Oracle {
            state: Mutex::new("the ipc ENOSPC oracle", state),
        }
    }

    /// Judge the calls under way as the counters are now (after every
    /// step: a charge under way at another level changes them), then
    /// take the violation found, if any, under one lock.
    pub fn verdict(&self) -> Option<String> {
        let mut s = self.state.lock();
        s.judge_if_changed();
        s.violation.take()
    }

    /// An `unshare(CLONE_NEWIPC)` begins in the user namespace `chain[0]`.
    pub fn begin_call(&self, chain: Chain) -> CallId {
        let mut s = self.state.lock();
        s.changes += 1;
        let id = s.next_call;
        s.next_call += 1;
        s.calls.insert(id, Call::new(chain));
        s.judge(id);
        CallId(id)
    }

    /// The call returned; `enospc` says whether it failed with ENOSPC.
    pub fn end_call(&self, id: CallId, enospc: bool, task: &str) {
        let mut s = self.state.lock();
        s.judge(id.0);
        let Some(call) = s.calls.remove(&id.0) else {
            return;
        };
        if enospc && !call.justified && s.violation.is_none() {
            let (leaf, uid) = &call.chain[0];
            let pending = call.most_pending;
            s.violation = Some(format!(
                "unshare(CLONE_NEWIPC) by {task} returned ENOSPC, but at most {} alive or being charged for uid {uid} in user namespace {} during the call (max_ipc_namespaces = {}); at most {} released and waiting to be freed",
                namespaces(call.most_live),
                leaf.name,
                leaf.peek_max(UcountType::IpcNamespaces),
                namespaces(pending),
            ));
        }
    }

    /// A namespace was charged at every entry of `chain`.
    pub fn charged(&self, chain: &[(Arc<UcountsNs>, u32)]) {
        let mut s = self.state.lock();
        s.changes += 1;
        for (level, uid) in chain {
            *s.live.entry((level.id, *uid)).or_default() += 1;
        }
        s.judge_all();
        s.publish(chain);
    }

    /// A namespace's last reference was dropped.
    pub fn released(&self, chain: &[(Arc<UcountsNs>, u32)]) {
        let mut s = self.state.lock();
        s.changes += 1;
        for (level, uid) in chain {
            *s.live.entry((level.id, *uid)).or_default() -= 1;
        }
        s.released += 1;
        s.publish(chain);
    }

    /// A `max_ipc_namespaces` changed.
    pub fn limits_changed(&self) {
        self.state.lock().judge_all();
    }

    pub fn freed(&self) {
        let mut s = self.state.lock();
        s.changes += 1;
        s.freed += 1;
        sim::note(
            COUNTER_PENDING,
            sim::ObjId::NONE,
            (s.released - s.freed) as i64,
        );
    }

    pub fn take_violation(&self) -> Option<String> {
        self.state.lock().violation.take()
    }

    /// (released, freed) so far.
    pub fn released_and_freed(&self) -> (u64, u64) {
        let s = self.state.lock();
        (s.released, s.freed)
    }

    /// Alive namespaces charged through the entry (user namespace `id`, `uid`).
    pub fn live(&self, id: u32, uid: u32) -> i64 {
        self.state.lock().live.get(&(id, uid)).copied().unwrap_or(0)
    }
}

#[cfg(not(loom))]
impl Oracle {
    /// Name the oracle's state (`sim::Execution::name_state`): what is
    /// alive, the calls open, the namespaces released and freed, a
    /// verdict. Which id the next call takes and the counts that spare a
    /// judgement only label calls and save work.
    pub fn name_state(&self, h: &mut dyn std::hash::Hasher) {
        let s = self.state.lock();
        let State {
            live,
            calls,
            next_call: _,
            released,
            freed,
            violation,
            table: _,
            changes: _,
            judged_with: _,
        } = &*s;
        ucounts::enospc::name_live(live, h);
        h.write_usize(calls.len());
        for (id, call) in calls {
            h.write_u64(*id);
            call.name_state(h);
        }
        h.write_u64(*released);
        h.write_u64(*freed);
        h.write_u8(violation.is_some() as u8);
    }
}
