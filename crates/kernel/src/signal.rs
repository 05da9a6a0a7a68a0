//! Queued signals and RLIMIT_SIGPENDING: a real-time signal sent with
//! `rt_sigqueueinfo` to a task that blocks it stays pending, and each
//! pending signal is charged to the receiver's user until it is taken
//! (`sigtimedwait`) or the receiver is reaped.
//!
//! Models kernel/signal.c (`kill_ok_by_cred`, `check_kill_permission`,
//! `__sigqueue_alloc`, `__sigqueue_free`, `flush_sigqueue`) and the
//! rlimit paths of kernel/ucount.c it calls. Eras, each a patch of
//! [`crate::catalog::PATCHES`]:
//! * before v5.14 the count is `user_struct->sigpending`, one per kuid for
//!   the whole machine, compared with the receiver's RLIMIT_SIGPENDING;
//! * `sigpending-ucounts` (v5.14): the count lives in ucounts per (user
//!   namespace, kuid) of the receiver's credentials, charged at every
//!   level up the namespace tree (`inc_rlimit_ucounts`), and the signal
//!   pins only the leaf's entry (`get_ucounts` when the leaf's count
//!   goes from 0 to 1, `put_ucounts` when it returns to 0);
//! * `ucounts-signal-refcount` (v5.15): `inc_rlimit_get_ucounts` pins
//!   every level that goes from 0 to 1 and refuses when a level is over
//!   its maximum, `dec_rlimit_put_ucounts` unpins them;
//! * `ucounts-rlimit-get-no-leak` (v6.12): a refusal takes back the count
//!   of the level found over its maximum too (before, it stayed there:
//!   see [`ucounts::OverUnwind`]).

use std::sync::Arc;
use ucounts::Ucounts;
use userns::caps::CAP_KILL;
use userns::{ns_capable, Cred, UserStruct};

/// RLIMIT_SIGPENDING a scenario's process starts with (soft and hard):
/// what `fork_init` gives the first process, half of `threads-max`, on a
/// machine of 24 GiB like the one the conformance cases ran on.
pub const DEFAULT_RLIMIT_SIGPENDING: u64 = 96_368;

/// The signal-queue behaviours of a profile.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SignalPatches {
    pub ucounts: bool,
    pub refcount_fix: bool,
    pub no_leak: bool,
}

/// One pending signal (`struct sigqueue`) and what it is charged to.
pub enum Sigqueue {
    /// Before v5.14: the receiver's user.
    User(Arc<UserStruct>),
    /// v5.14: the receiver's ucounts, charged at every level and pinned
    /// at the leaf only; `None` when the charge took the leaf from 0 to 1
    /// and its `get_ucounts` failed (the charge is then never taken
    /// back).
    Leaf(Option<Arc<Ucounts>>),
    /// From v5.15: every level pinned that the charge took from 0 to 1.
    Levels(Arc<Ucounts>),
}

/// `task->sighand` as a sender sees it, under its `siglock`: the signals
/// pending for the task, and whether the task is gone (`__exit_signal`
/// flushed them and cleared `sighand`, so `lock_task_sighand` fails).
#[derive(Default)]
pub struct Sighand {
    pub pending: Vec<Sigqueue>,
    pub gone: bool,
    /// SIGNAL_GROUP_EXIT: the process is exiting (`do_group_exit`), and a
    /// signal sent to it from now on is dropped (`prepare_signal`).
    pub exiting: bool,
}

/// `kill_ok_by_cred`: the sender's real or effective uid is the
/// receiver's real or saved uid, or the sender has CAP_KILL in the
/// receiver's user namespace.
pub(crate) fn kill_ok_by_cred(cred: &Cred, tcred: &Cred) -> bool {
    let same_user = [cred.euid, cred.uid]
        .iter()
        .any(|u| *u == tcred.suid || *u == tcred.uid);
    same_user || ns_capable(cred, &tcred.user_ns, CAP_KILL)
}
