//! Every invariant's checker, and when it runs: one arm each of the
//! exhaustive `match` in [`install`] (the declarations are in
//! `invariants.rs`).

use super::World;
use crate::clone_flags::{CLONE_NEWIPC, CLONE_NEWNET, CLONE_NEWUSER};
use crate::errno::Errno;
use crate::invariants::Invariant;
use crate::ops::Op;
use sim::{Execution, Outcome};
use std::collections::BTreeMap;
use std::sync::Arc;
use ucounts::UcountType;
use uevent::oracle::Watched;

fn violation(invariant: Invariant, detail: String) -> Outcome {
    Outcome::Violation {
        invariant: invariant.name().to_string(),
        detail,
    }
}

/// Check `f` after every step of the run.
fn each_step(
    e: &mut Execution,
    world: &Arc<World>,
    invariant: Invariant,
    f: impl Fn(&World) -> Option<String> + 'static,
) {
    let w = Arc::clone(world);
    e.check_each_step(move || f(&w).map(|d| violation(invariant, d)));
}

/// Check `f` once every task has exited and the queues have drained.
fn at_end(
    e: &mut Execution,
    world: &Arc<World>,
    invariant: Invariant,
    f: impl Fn(&World) -> Option<String> + 'static,
) {
    let w = Arc::clone(world);
    e.check_at_end(move || f(&w).map(|d| violation(invariant, d)));
}

/// Install the checker of `invariant` on the run.
pub(super) fn install(e: &mut Execution, world: &Arc<World>, invariant: Invariant) {
    use Invariant::*;
    match invariant {
        IpcNoFalseEnospc => each_step(e, world, invariant, |w| w.ipc.oracle.verdict()),
        UcountsBalanced => {
            each_step(e, world, invariant, |w| {
                w.ucounts
                    .ledger
                    .check_live()
                    .or_else(|| w.procs.check_balanced())
            });
            at_end(e, world, invariant, counters_back_to_zero);
        }
        IpcFreedEventually => at_end(e, world, invariant, |w| {
            let (released, freed) = w.ipc.oracle.released_and_freed();
            (released != freed || w.ipc.peek_pending() != 0)
                .then(|| format!("{released} ipc namespaces were released but only {freed} freed"))
        }),
        IdmapPublishedWhole => each_step(e, world, invariant, |w| {
            userns::invariants::published_whole(&w.userns)
        }),
        IdmapRoundtrip => each_step(e, world, invariant, |w| {
            userns::invariants::roundtrip(&w.userns)
        }),
        IdmapConfined => each_step(e, world, invariant, |w| {
            userns::invariants::confined(&w.userns)
        }),
        UsernsDepth => {
            // A namespace's level and parent never change: the check has
            // news only when a namespace was registered since it passed.
            let passed_at = std::cell::Cell::new(0);
            each_step(e, world, invariant, move |w| {
                let registered = w.userns.registered();
                if passed_at.get() == registered {
                    return None;
                }
                let found = userns::invariants::depth(&w.userns);
                if found.is_none() {
                    passed_at.set(registered);
                }
                found
            })
        }
        UsernsNoFalseEnospc => each_step(e, world, invariant, |w| w.userns.oracle.verdict()),
        NetnsNoFalseEnospc => {
            each_step(e, world, invariant, |w| w.net.uevent.netns_oracle.verdict())
        }
        // The process oracles judge each fork, set*uid and execve as it
        // happens and keep what they found for the step's end.
        UcountsWithinLimits | NprocIsolated | NprocExecveEnforced => {
            world.procs.enable_oracle(invariant);
            each_step(e, world, invariant, move |w| {
                w.procs.take_violation(invariant)
            });
        }
        NprocRealUid => each_step(e, world, invariant, |w| w.procs.check_real_uid()),
        UcountsNoLeak => at_end(e, world, invariant, |w| {
            w.procs.check_no_leak(&w.pinned_charges())
        }),
        UeventSeqnumInOrder => uevent_watch(e, world, invariant, Watched::SeqnumInOrder),
        UeventNoLeakIntoUnprivileged => {
            uevent_watch(e, world, invariant, Watched::NoLeakIntoUnprivileged)
        }
        UeventInjectionPermitted => uevent_watch(e, world, invariant, Watched::InjectionPermitted),
        UeventNoSilentLoss => at_end(e, world, invariant, |w| w.net.uevent.oracle.silent_loss()),
        // Checked around each guarded operation (denials.rs), when the
        // world was built with it.
        SecurityDeniedChangesNothing => {}
        // The scheduler reports a touch of a freed object itself (outcome
        // use-after-free).
        Lifetime => {}
    }
}

/// Whether `invariant` had something to judge in a call of `op` that
/// returned `result`: the call is one of those it asserts about, and got
/// as far as what it asserts (it succeeded, or failed with the
/// invariant's symptom). A run in which no call was judged tested
/// nothing of the invariant.
pub(super) fn judges(invariant: Invariant, op: &Op, result: Result<(), Errno>) -> bool {
    use Invariant::*;
    let reached = match result {
        Ok(()) => true,
        Err(e) => invariant.symptom() == Some(e.name()),
    };
    match invariant {
        IpcNoFalseEnospc | IpcFreedEventually => reached && creates(op, CLONE_NEWIPC),
        UsernsNoFalseEnospc | UsernsDepth => reached && creates(op, CLONE_NEWUSER),
        NetnsNoFalseEnospc => reached && creates(op, CLONE_NEWNET),
        IdmapPublishedWhole | IdmapRoundtrip | IdmapConfined => reached && uses_a_map(op),
        UcountsWithinLimits | NprocIsolated => reached && forks(op),
        NprocRealUid => reached && (forks(op) || changes_uids(op)),
        NprocExecveEnforced => reached && matches!(op, Op::Execve {}),
        UeventSeqnumInOrder | UeventNoLeakIntoUnprivileged | UeventNoSilentLoss => {
            reached && receives_uevents(op)
        }
        UeventInjectionPermitted => reached && matches!(op, Op::UeventInject { .. }),
        // What it judges is a refusal.
        SecurityDeniedChangesNothing => result.is_err(),
        // Every call that did something charges, holds or frees.
        UcountsBalanced | UcountsNoLeak | Lifetime => reached,
    }
}

/// A call that makes a namespace of `flag`'s kind.
fn creates(op: &Op, flag: u64) -> bool {
    match op {
        Op::Unshare { flags }
        | Op::UnshareAndExit { flags }
        | Op::Clone { flags }
        | Op::CloneChild { flags, .. } => flags & flag != 0,
        _ => false,
    }
}

fn uses_a_map(op: &Op) -> bool {
    matches!(
        op,
        Op::WriteUidMap { .. }
            | Op::WriteGidMap { .. }
            | Op::WriteUidMapOf { .. }
            | Op::WriteGidMapOf { .. }
            | Op::WriteOpened { .. }
            | Op::ReadUidMapOf { .. }
            | Op::ReadGidMapOf { .. }
            | Op::Getresuid {}
            | Op::Getresgid {}
    )
}

fn forks(op: &Op) -> bool {
    matches!(
        op,
        Op::Fork {} | Op::Clone { .. } | Op::ForkChild { .. } | Op::CloneChild { .. }
    )
}

fn changes_uids(op: &Op) -> bool {
    matches!(
        op,
        Op::Setuid { .. } | Op::Setresuid { .. } | Op::Seteuid { .. }
    )
}

/// The calls that bring uevents to a listener: the events sent, and the
/// receives that take them.
fn receives_uevents(op: &Op) -> bool {
    matches!(
        op,
        Op::UeventRecv {}
            | Op::UeventRecvWait {}
            | Op::UeventInject { .. }
            | Op::UeventDeviceEvent { .. }
            | Op::UeventNetdevEvent { .. }
    )
}

/// What the uevent oracle watched for `invariant`, after every step.
fn uevent_watch(e: &mut Execution, world: &Arc<World>, invariant: Invariant, watched: Watched) {
    each_step(e, world, invariant, move |w| {
        w.net.uevent.oracle.take_violation(watched)
    });
}

/// A count of each ucount type, by (user namespace id, uid, type).
pub(super) type Counts = BTreeMap<(u32, u32, UcountType), i64>;

/// The ucounts still charged: the objects the ledger has charged, and
/// what the counters hold, each only where not zero.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Charged {
    pub objects: Counts,
    pub counters: Counts,
}

impl Charged {
    pub(super) fn of(table: &ucounts::UcountsTable) -> Charged {
        let objects = table.ledger.outstanding().into_iter().collect();
        let mut counters = Counts::new();
        for u in table.peek_entries() {
            for t in UcountType::ALL {
                *counters.entry((u.ns.id, u.uid, t)).or_default() += u.peek(t);
            }
        }
        counters.retain(|_, v| *v != 0);
        Charged { objects, counters }
    }

    /// One more object of `t` charged at each level of `leaf`'s chain.
    fn add_chain(&mut self, leaf: &Arc<ucounts::Ucounts>, t: UcountType) {
        for level in ucounts::levels(leaf) {
            let key = (level.ns.id, level.uid, t);
            *self.objects.entry(key).or_default() += 1;
            *self.counters.entry(key).or_default() += 1;
        }
    }
}

/// The user namespaces that may outlive every task: those a queue or a
/// locked segment still charges (through its ucounts entry, which holds
/// its namespace from v5.17), and their ancestors, made by the run and
/// not freed. Each keeps its own creation charged, as on the kernel.
fn held_user_namespaces(w: &World) -> Vec<Arc<userns::UserNamespace>> {
    let pinned = w.pinned_charges();
    let namespaces = w.userns.namespaces();
    let holds = |ns: &Arc<userns::UserNamespace>| {
        pinned.iter().any(|u| {
            let mut at = namespaces
                .iter()
                .find(|n| Arc::ptr_eq(&n.ucounts_ns, &u.ns));
            while let Some(n) = at {
                if Arc::ptr_eq(n, ns) {
                    return true;
                }
                at = n.parent.as_ref();
            }
            false
        })
    };
    namespaces
        .iter()
        .filter(|ns| !ns.pinned && !ns.peek_freed() && holds(ns))
        .cloned()
        .collect()
}

/// Every counter back where the set-up left it (the set-up's user
/// namespaces stay charged for the whole run), but for what the objects
/// that outlive the tasks still hold ([`held_user_namespaces`]).
fn counters_back_to_zero(w: &World) -> Option<String> {
    let now = Charged::of(&w.ucounts);
    let mut want = w.setup_charges.clone();
    for ns in held_user_namespaces(w) {
        if let Some(charge) = ns.charge() {
            want.add_chain(charge, UcountType::UserNamespaces);
        }
    }
    (now != want).then(|| {
        let names: BTreeMap<u32, String> = w
            .userns
            .namespaces()
            .iter()
            .map(|n| (n.ucounts_ns.id, n.ucounts_ns.name.clone()))
            .collect();
        let differ: Vec<String> = now
            .counters
            .keys()
            .chain(want.counters.keys())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .filter(|k| now.counters.get(k) != want.counters.get(k))
            .map(|&(ns, uid, t)| {
                let name = names.get(&ns).map_or("?", String::as_str);
                let count = |c: &Counts| c.get(&(ns, uid, t)).copied().unwrap_or(0);
                format!(
                    "{t:?} of uid {uid} in {name} is {} ({} expected)",
                    count(&now.counters),
                    count(&want.counters)
                )
            })
            .collect();
        format!(
            "after every task exited and the queues drained, counters are not what the set-up and the objects that outlive the tasks hold: {}",
            match differ.is_empty() {
                true => "the objects charged differ".to_string(),
                false => differ.join("; "),
            }
        )
    })
}
