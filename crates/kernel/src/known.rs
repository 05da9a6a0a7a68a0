//! Violations that are the kernel's own behaviour, declared once: what an
//! invariant reports when the running kernel does it too. The invariants
//! that judge an ENOSPC (`*.no_false_enospc`) are there to catch exactly
//! these, so a scenario expecting them fails as it should; the scenario
//! generator's no-false-alarm campaign (`nssim gen --check model`) counts
//! them apart from the violations nothing explains, each of which is a
//! defect of the model until shown to be the kernel's.

use crate::catalog::Patch;
use crate::invariants::Invariant;

/// One known kernel behaviour.
#[derive(Debug, Clone, Copy)]
pub struct KnownBehaviour {
    pub name: &'static str,
    pub invariant: Invariant,
    pub summary: &'static str,
    /// Where the running kernel shows it, or the kernel change that makes
    /// it possible.
    pub evidence: &'static str,
    /// Known only on profiles with this patch.
    pub needs: Option<Patch>,
    /// Whether a violation's detail is this behaviour.
    pub matches: fn(&str) -> bool,
}

/// Every known kernel behaviour a violation may be.
pub const KNOWN_BEHAVIOURS: &[KnownBehaviour] = &[
    KnownBehaviour {
        name: "userns-create-after-drop",
        invariant: Invariant::UsernsNoFalseEnospc,
        summary: "a user namespace dropped by its last task keeps its max_user_namespaces charge until its credentials' grace period and the free_user_ns work have run: a creation meanwhile gets ENOSPC",
        evidence: "`nssim run --on-kernel sim-scenarios/userns-create-drop-loop.toml`: the running kernel gives the ENOSPC",
        needs: None,
        matches: a_free_was_pending,
    },
    KnownBehaviour {
        name: "netns-create-after-drop",
        invariant: Invariant::NetnsNoFalseEnospc,
        summary: "a network namespace dropped by its last task keeps its max_net_namespaces charge until cleanup_net has run: a creation meanwhile gets ENOSPC",
        evidence: "`nssim run --on-kernel sim-scenarios/netns-create-drop-loop.toml`: the running kernel gives the ENOSPC",
        needs: None,
        matches: a_free_was_pending,
    },
    KnownBehaviour {
        name: "ipc-free-pending",
        invariant: Invariant::IpcNoFalseEnospc,
        summary: "an ipc namespace released but not yet freed keeps its max_ipc_namespaces charge: before v6.3 always, from v6.3 in the windows the wait for pending frees leaves (the free not yet queued, or freed synchronously on v5.6)",
        evidence: "docs/ipc-free-queue.md and sim-scenarios/ipc-v6.3-window*.toml; the 2023 thread \"ipc,namespace: fix free vs allocation race\"",
        needs: None,
        matches: a_free_was_pending,
    },
    KnownBehaviour {
        name: "nproc-creator-budget-shared",
        invariant: Invariant::NprocIsolated,
        summary: "from v5.16 each user namespace records its creator's RLIMIT_NPROC, and the creator's level counts its uid's processes in every namespace below it: sibling namespaces made by one user share that user's budget, so a fork in one can be refused for processes in the other",
        evidence: "v5.16's \"ucounts: Fix rlimit max values check\"; sim-scenarios/nproc-unprivileged-siblings.toml, as the running kernel does it",
        needs: Some(Patch::UcountsRlimitMaxCheck),
        matches: |detail| detail.contains("comes from sibling namespaces"),
    },
    KnownBehaviour {
        name: "uevent-seqnum-reorder",
        invariant: Invariant::UeventSeqnumInOrder,
        summary: "since v6.9 a uevent's SEQNUM is taken with an atomic increment before uevent_sock_mutex, which covers only the walk of the socket list: two uevents sent at once can reach a listener in the other order",
        evidence: "v6.9's \"kobject: make uevent_seqnum atomic\" and \"kobject: reduce uevent_sock_mutex scope\"; sim-scenarios/uevent-v6.9-seqnum-order.toml",
        needs: Some(Patch::UeventAtomicSeqnum),
        matches: |_| true,
    },
];

/// The known behaviour a violation of `invariant` with `detail` is, if
/// any, on a profile that `has` the patches it names.
pub fn explain(
    invariant: &str,
    detail: &str,
    has: impl Fn(Patch) -> bool,
) -> Option<&'static KnownBehaviour> {
    KNOWN_BEHAVIOURS.iter().find(|k| {
        k.invariant.name() == invariant && k.needs.is_none_or(&has) && (k.matches)(detail)
    })
}

/// An ENOSPC judged false only because of namespaces released and waiting
/// to be freed: the detail counts them, at least one.
fn a_free_was_pending(detail: &str) -> bool {
    released_and_waiting(detail).is_some_and(|n| n > 0)
}

/// How many namespaces an ENOSPC oracle's message says were released and
/// waiting to be freed during the call (`...; at most 2 ipc namespaces
/// were released and waiting to be freed`).
fn released_and_waiting(detail: &str) -> Option<u64> {
    let (before, _) = detail.rsplit_once(" released and waiting to be freed")?;
    let clause = before.rsplit_once("; ").map_or(before, |(_, c)| c);
    let clause = clause.strip_prefix("at most ").unwrap_or(clause);
    clause.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_enospc_caused_by_a_pending_free_is_known_and_one_without_is_not() {
        let pending = "unshare(CLONE_NEWIPC) by looper returned ENOSPC, but at most 1 ipc namespace was alive or being charged for uid 0 in user namespace init during the call (max_ipc_namespaces = 2); at most 1 ipc namespace was released and waiting to be freed";
        assert_eq!(
            explain("ipc.no_false_enospc", pending, |_| true).map(|k| k.name),
            Some("ipc-free-pending")
        );
        // Refused by an ancestor's limit, the message names that level.
        let above = "create_user_ns making looper/4/userns2 returned ENOSPC: the limit that refused it is that of uid 1000 in user namespace init (max_user_namespaces = 3 there; uid 1000 in user namespace ct below it, where the call was made, allows 2147483647), but at most 1 user namespace was alive or being charged there when the call ended, the rest of its count held by namespaces released but not yet freed; at most 2 user namespaces were released and waiting to be freed during the call";
        assert_eq!(released_and_waiting(above), Some(2));
        let none = pending.replace("most 1 ipc namespace was", "most 0 ipc namespaces were");
        assert!(explain("ipc.no_false_enospc", &none, |_| true).is_none());
        assert!(explain("ucounts.balanced", pending, |_| true).is_none());
    }

    #[test]
    fn a_reordered_seqnum_is_known_only_where_the_number_is_taken_before_the_mutex() {
        let detail = "listener t0 was offered SEQNUM=3 after SEQNUM=4";
        let known = explain("uevent.seqnum_in_order", detail, |p| {
            p == Patch::UeventAtomicSeqnum
        });
        assert_eq!(known.map(|k| k.name), Some("uevent-seqnum-reorder"));
        assert!(explain("uevent.seqnum_in_order", detail, |_| false).is_none());
    }

    #[test]
    fn every_invariant_has_one_known_behaviour_at_most() {
        for k in KNOWN_BEHAVIOURS {
            let same = KNOWN_BEHAVIOURS
                .iter()
                .filter(|o| o.invariant == k.invariant)
                .count();
            assert_eq!(same, 1, "{}", k.name);
        }
    }
}
