//! The invariants a scenario may ask for, each declared once in
//! `declare_invariants!`: its [`Invariant`] variant, its name and what it
//! asserts. Its checker, and when it runs (after every step, at the end of
//! the run, or around the operations it guards), is the one arm of the
//! exhaustive `match` in the world's `install` (world/checks.rs): an
//! invariant declared here without a checker does not compile.

/// One entry of [`INVARIANTS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvariantInfo {
    pub invariant: Invariant,
    pub name: &'static str,
    pub summary: &'static str,
}

macro_rules! declare_invariants {
    ($($variant:ident = $name:literal, $summary:literal;)*) => {
        /// An invariant, by name in [`INVARIANTS`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Invariant {
            $($variant),*
        }

        /// Every invariant, in declaration order (`Invariant as usize`
        /// indexes it).
        pub const INVARIANTS: &[InvariantInfo] = &[
            $(InvariantInfo {
                invariant: Invariant::$variant,
                name: $name,
                summary: $summary,
            }),*
        ];
    };
}

impl Invariant {
    pub fn info(self) -> &'static InvariantInfo {
        &INVARIANTS[self as usize]
    }

    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// The errno a call returns where a kernel shows this invariant's
    /// violation, when it shows in call results at all: what a reproducer
    /// (`nssim export --c`) looks for. A false ENOSPC is the call's own
    /// ENOSPC; a fork refused for a sibling's processes, its EAGAIN. The
    /// others show in state no call returns (a count, a map, a queue).
    pub fn symptom(self) -> Option<&'static str> {
        use Invariant::*;
        match self {
            IpcNoFalseEnospc | UsernsNoFalseEnospc | NetnsNoFalseEnospc => Some("ENOSPC"),
            NprocIsolated => Some("EAGAIN"),
            UcountsBalanced
            | IpcFreedEventually
            | IdmapPublishedWhole
            | IdmapRoundtrip
            | IdmapConfined
            | UsernsDepth
            | UcountsWithinLimits
            | UcountsNoLeak
            | NprocRealUid
            | NprocExecveEnforced
            | UeventSeqnumInOrder
            | UeventNoLeakIntoUnprivileged
            | UeventInjectionPermitted
            | UeventNoSilentLoss
            | SecurityDeniedChangesNothing
            | Lifetime => None,
        }
    }

    pub fn from_name(name: &str) -> Option<Invariant> {
        INVARIANTS
            .iter()
            .find(|i| i.name == name)
            .map(|i| i.invariant)
    }
}

declare_invariants! {
    IpcNoFalseEnospc = "ipc.no_false_enospc",
        "an unshare(CLONE_NEWIPC) returns ENOSPC only if, at some instant during the call, the live (not yet released) ipc namespaces charged to its user namespace or an ancestor reached that level's max_ipc_namespaces";
    UcountsBalanced = "ucounts.balanced",
        "every ucount equals the live objects it counts, and all return to zero once every task has exited and the free queues have drained";
    IpcFreedEventually = "ipc.freed_eventually",
        "once every task has exited, every released ipc namespace has been freed";
    IdmapPublishedWhole = "idmap.published_whole",
        "a uid/gid map a reader can see is empty or exactly the map its writer installed (never nr_extents ahead of the extents)";
    IdmapRoundtrip = "idmap.roundtrip",
        "for every id a published map maps, map_id_up(map_id_down(id)) == id";
    IdmapConfined = "idmap.confined",
        "every extent of a map lies inside one extent of the parent namespace's map (kernel ids)";
    UsernsDepth = "userns.depth",
        "every user namespace's level is its parent's plus one, and at most 33";
    UsernsNoFalseEnospc = "userns.no_false_enospc",
        "create_user_ns returns ENOSPC for max_user_namespaces only if, at some instant during the call, the live user namespaces (some process, credential or namespace still holds them) charged to its user namespace or an ancestor reached that level's limit";
    NetnsNoFalseEnospc = "netns.no_false_enospc",
        "copy_net_ns returns ENOSPC only if, at some instant during the call, the live network namespaces (not yet put for the last time) charged to its user namespace or an ancestor reached that level's max_net_namespaces";
    UcountsWithinLimits = "ucounts.within_limits",
        "after a successful, non-exempt fork no ucounts level holds more live processes than its maximum: the caller's RLIMIT_NPROC at the leaf, the rlimit recorded in the namespace below at each ancestor (the user's RLIMIT_NPROC before v5.14); from v5.17 each level is judged when the fork's check reads it, before once the child is made";
    UcountsNoLeak = "ucounts.no_leak",
        "once every process has exited, every ucounts entry is referenced only by the namespaces still alive, and an entry whose last reference went is unhashed and freed (and never used after)";
    NprocIsolated = "nproc.isolated",
        "a process is refused a fork (EAGAIN) only when its own uid's processes in its user namespace and below reach its RLIMIT_NPROC, never because of processes counted in a sibling namespace";
    NprocRealUid = "nproc.real_uid",
        "every process is counted in the ucounts of its real uid, the user RLIMIT_NPROC limits";
    NprocExecveEnforced = "nproc.execve_enforced",
        "an execve after set*uid to a user (not root) that was already over the task's RLIMIT_NPROC fails with EAGAIN";
    UeventSeqnumInOrder = "uevent.seqnum_in_order",
        "each uevent listener is offered strictly increasing sequence numbers (in its namespace's numbering)";
    UeventNoLeakIntoUnprivileged = "uevent.no_leak_into_unprivileged",
        "no untagged kernel uevent reaches a listener whose network namespace is owned by a user namespace other than the initial one";
    UeventInjectionPermitted = "uevent.injection_permitted",
        "an injected uevent is delivered only if its sender had CAP_SYS_ADMIN over the network namespace's owning user namespace";
    UeventNoSilentLoss = "uevent.no_silent_loss",
        "every uevent offered to a listener is received, still queued, or counted as a drop, and a listener that dropped uevents was told ENOBUFS";
    SecurityDeniedChangesNothing = "security.denied_changes_nothing",
        "an operation the kernel refuses leaves what it targeted as it was: the map or setgroups flag it wrote, the max_* sysctl, the task's uids, RLIMIT_NPROC and children";
    Lifetime = "lifetime",
        "no task touches a kernel object after it was freed (reported as outcome use-after-free)";
}
