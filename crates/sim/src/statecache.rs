//! States seen are not explored twice: the visited set of a stateful
//! depth-first search.
//!
//! A search replays each execution from the start (the tasks are real
//! code on stacks of their own, which cannot be copied), so a state is not
//! restored but recognised: after every step beyond the replayed prefix,
//! the model is asked to name the whole state it is in
//! ([`Execution::name_state`](crate::Execution::name_state)). It names it
//! only where nothing of it is hidden on a task's stack (every task between
//! two of its operations, say); the scheduler adds what it holds (which
//! tasks run, wait or have finished, on what, each task's pending step and
//! slots, each object's lifetime and owner). If that state was reached
//! before by a visit that covers this one, the execution ends there: the
//! subtree below was (or is being) searched from the earlier visit with as
//! large a budget. Under a preemption bound a visit covers another when it
//! used no more preemptions and either left the same choices free at the
//! next pick (the task that ran last, a yield's successor), or left every
//! choice free, or used fewer preemptions (a first pick costs at most one
//! preemption more under one configuration than under another); without a
//! bound every earlier visit covers. Each new state is checked by every
//! invariant as before.
//!
//! This is the plain stateful DFS of explicit-state model checkers
//! (Holzmann's SPIN; Godefroid, "Partial-Order Methods for the
//! Verification of Concurrent Systems", LNCS 1032, 1996, ch. 5), on the
//! search without partial-order reduction. Reduction and caching are not
//! combined: a dynamic partial-order reduction adds backtracking points
//! from races between the steps below a state and the steps of the path
//! that leads to it, and a search that stops at a state seen before never
//! sees the steps below it from the new path, so it misses those points
//! (Yang, Chen, Gopalakrishnan, Kirby, "Efficient Stateful Dynamic Partial
//! Order Reduction", SPIN 2008, show the lost executions and the summary
//! of a subtree's steps that repairs it). Until that summary exists, the
//! cache serves the search without reduction (`--no-reduction`), and the
//! reduced search keeps no cache.
//!
//! Symmetry: tasks the model declares interchangeable (the instances of
//! one task, which run the same operations from the same start) are told
//! apart only by their parts of the state: the parts of such a group are
//! taken in sorted order, so that states that differ by a permutation of
//! the group are one state (Ip and Dill, "Better verification through
//! symmetry", 1996; Emerson and Sistla, 1996). Where the scheduler's state
//! refers to a member by its id (a wait queue, a lock's owner, a task not
//! yet started) the parts keep their order: that state is not merged with
//! its permutations, which only costs the saving. Symmetry applies without
//! a preemption bound only: under one, the task the scheduler goes on with
//! after a yield is chosen by id. The model's shared part must not name a
//! member by its id either (the instances' names are the model's to keep
//! out of it or in the members' own parts).
//!
//! The fingerprint is 128 bits of SipHash-1-3 over the named state, with
//! fixed keys: the same on every run, thread and machine. Two different
//! states given one fingerprint would wrongly cut the second; among the
//! at most 2^32 states a search can keep, that happens with probability
//! below 2^-64.

use siphasher::sip128::{Hasher128, SipHasher13};
use std::collections::BTreeMap;
use std::hash::Hasher;

/// What a model writes to name its state (see
/// [`Execution::name_state`](crate::Execution::name_state)): every field
/// its future depends on, in an order of its own choosing but the same on
/// every path; never an address or a hash map's order. What belongs to
/// one task goes in [`StateHasher::task`], so that tasks declared
/// interchangeable ([`Execution::interchangeable`](crate::Execution::interchangeable))
/// can be recognised in any order.
pub struct StateHasher {
    main: SipHasher13,
    /// Each task's part, by task id.
    tasks: BTreeMap<usize, SipHasher13>,
}

fn sip() -> SipHasher13 {
    SipHasher13::new_with_keys(0x6e73_7369_6d00_0001, 0x7374_6174_6500_0002)
}

impl StateHasher {
    pub(crate) fn new() -> Self {
        StateHasher {
            main: sip(),
            tasks: BTreeMap::new(),
        }
    }

    /// Write what belongs to task `t` alone (its position in its work,
    /// what it holds) with `f`. A task's part must not name another task
    /// by its id.
    pub fn task(&mut self, t: usize, f: impl FnOnce(&mut dyn Hasher)) {
        f(self.tasks.entry(t).or_insert_with(sip));
    }

    /// Task `t`'s part so far (the model's, then what the scheduler adds).
    pub(crate) fn task_part(&mut self, t: usize) -> &mut SipHasher13 {
        self.tasks.entry(t).or_insert_with(sip)
    }

    /// Each task's part, finished, by task id.
    pub(crate) fn task_parts(&self) -> BTreeMap<usize, u128> {
        self.tasks
            .iter()
            .map(|(t, h)| (*t, h.finish128().as_u128()))
            .collect()
    }

    /// A string, with its length (so that `"ab", "c"` and `"a", "bc"`
    /// differ).
    pub fn write_str(&mut self, s: &str) {
        self.main.write_usize(s.len());
        self.main.write(s.as_bytes());
    }

    /// The fingerprint: the shared part, then the tasks' parts in `order`
    /// (each task's once).
    pub(crate) fn finish128(mut self, order: &[u128]) -> u128 {
        for part in order {
            self.main.write_u128(*part);
        }
        self.main.finish128().as_u128()
    }
}

impl Hasher for StateHasher {
    fn finish(&self) -> u64 {
        self.main.finish()
    }

    fn write(&mut self, bytes: &[u8]) {
        self.main.write(bytes);
    }
}

/// Which choices at a state's next pick cost a preemption: switching
/// away from the task that ran last while it can go on, and after a yield
/// the rules of a yield (see `sim::yield_point`). With neither, every
/// choice is free.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct FreeToGoOn {
    pub last: Option<usize>,
    pub yielder: Option<usize>,
}

impl FreeToGoOn {
    /// Every choice free (also what a search without a bound uses).
    pub(crate) const ALL: FreeToGoOn = FreeToGoOn {
        last: None,
        yielder: None,
    };
}

/// One visit of a state: the preemptions used to reach it, and which
/// choices at its next pick are free.
#[derive(Clone, Copy, Debug)]
struct Visit {
    preemptions: u32,
    free: FreeToGoOn,
}

impl Visit {
    /// The search from this visit covered every execution a visit with
    /// `other` would search: it had at least as much budget left and the
    /// same free choices, or every choice free, or one preemption more to
    /// spend (a first pick costs one preemption more under one
    /// configuration than under another, at most).
    fn covers(&self, other: &Visit) -> bool {
        self.preemptions <= other.preemptions
            && (self.free == other.free
                || self.free == FreeToGoOn::ALL
                || self.preemptions < other.preemptions)
    }
}

/// The visited set of one search: for each state, the visits that no
/// other visit of it covers.
#[derive(Default)]
pub(crate) struct StateCache {
    seen: BTreeMap<u128, Vec<Visit>>,
    /// Executions that ended at a state seen before.
    cut: u64,
}

impl StateCache {
    /// Record a visit of `state` with `preemptions` used and the choices
    /// `free` at its next pick; true when an earlier visit covers it, and
    /// the execution ends here.
    pub(crate) fn seen_before(&mut self, state: u128, preemptions: u32, free: FreeToGoOn) -> bool {
        let visit = Visit { preemptions, free };
        let visits = self.seen.entry(state).or_default();
        if visits.iter().any(|v| v.covers(&visit)) {
            self.cut += 1;
            return true;
        }
        visits.retain(|v| !visit.covers(v));
        visits.push(visit);
        false
    }

    /// Distinct states named so far.
    pub(crate) fn states(&self) -> u64 {
        self.seen.len() as u64
    }

    /// Executions that ended at a state seen before.
    pub(crate) fn cut(&self) -> u64 {
        self.cut
    }
}

/// What one execution of a stateful search holds: the search's visited
/// set, and where the replayed prefix ends.
pub(crate) struct Probe {
    pub cache: std::rc::Rc<std::cell::RefCell<StateCache>>,
    /// Choice points the execution replays: the states before the last of
    /// them were visited by earlier executions and are not looked up.
    pub prefix_len: u64,
    /// A preemption bound applies: the task that may go on without a
    /// preemption is part of the state.
    pub bounded: bool,
}
