//! The process accounting of a simulated machine, as RLIMIT_NPROC sees
//! it: credentials copied, committed and put (`prepare_creds`,
//! `copy_creds`, `commit_creds`, `set_cred_ucounts`), the RLIMIT_NPROC
//! checks of `fork`/`clone`, `setuid`, `setresuid`, `execve` and
//! `setrlimit(RLIMIT_NPROC)`, and the oracles that judge them. The
//! credentials are the `userns` crate's ([`userns::Cred`]); the syscall
//! paths that also touch namespaces (`copy_process`, `unshare`) are the
//! world's, which call in here.
//!
//! Models kernel/fork.c (`copy_process`'s RLIMIT_NPROC check), kernel/cred.c
//! (`copy_creds`, `commit_creds`, `set_cred_ucounts`), kernel/sys.c
//! (`__sys_setuid`, `__sys_setresuid`, `set_user`, `flag_nproc_exceeded`,
//! `do_prlimit`), fs/exec.c (the PF_NPROC_EXCEEDED check of
//! `do_execveat_common`), kernel/exit.c (`release_task`), kernel/user.c
//! (`user_struct`, `alloc_uid`) and the parts of kernel/user_namespace.c
//! that RLIMIT_NPROC needs (`create_user_ns`'s charge and recorded rlimit,
//! `free_user_ns`).
//!
//! Eras, each a patch of [`crate::catalog::PATCHES`] (see [`NprocPatches`]):
//! * before v5.14 the count is `user_struct->processes`, one per kuid for
//!   the whole machine; `copy_process` refuses (EAGAIN) when it is already
//!   at the limit, before the child is counted;
//! * `nproc-ucounts` (v5.14): the count lives in ucounts, per (user
//!   namespace, kuid), charged up the namespace tree; the check (still
//!   before the child is counted) asks `is_rlimit_overlimit`, whose `>`
//!   lets one process more than the limit through;
//! * `ucounts-rlimit-max-check` (v5.16): ancestors are compared with the
//!   rlimit recorded in the namespace below them;
//! * v5.17: `nproc-enforce-limit` (the check after `copy_creds`, on the
//!   child's ucounts), `nproc-flag-after-set-user` (PF_NPROC_EXCEEDED
//!   decided on the new ucounts after `set_cred_ucounts`),
//!   `nproc-ucounts-real-uid` (`set_cred_ucounts` keys on the real uid,
//!   not the effective one), `nproc-limitnproc-regression` (a namespace
//!   created by global root records no NPROC limit);
//! * `nproc-per-userns-rfc-2016` (never merged): the 2016 RFC, processes
//!   counted per (user namespace, uid) up the tree and the fork checked
//!   against the caller's own (namespace, uid) count only.
//!
//! Exemptions: the initial user (real kuid 0) and a caller with
//! CAP_SYS_RESOURCE or CAP_SYS_ADMIN in the initial user namespace.
//!

use crate::catalog::Patch;
use crate::costs::{CRED, EXECVE, EXIT_AND_REAP, SYSCALL};
use crate::errno::Errno;
use crate::invariants::Invariant;
use crate::profile::ActivePatches;
use crate::setup::{Op, Setup};
use crate::task::{Mm, Own, Task};
use sim::HostMutex as Mutex;
use sim::ObjId;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering as StdOrdering};
use std::sync::Arc;
use sync::Ordering;
use ucounts::{
    dec_rlimit_ucounts, draw_rlimit_levels, inc_rlimit_ucounts, is_rlimit_overlimit,
    is_rlimit_overlimit_watched, RlimitCheck, RlimitType, Ucounts, UcountsTable, RLIM_INFINITY,
};
use userns::caps::{CAP_SETGID, CAP_SETUID, CAP_SYS_ADMIN, CAP_SYS_RESOURCE};
use userns::{ns_capable, CapSet, Cred, UserNamespace, UserStruct, Userns, UNMAPPED};

pub use crate::setup::{ProcessSetup, UidMap};

pub use crate::profile::NprocPatches;

/// One process as the checkers see it.
#[derive(Clone)]
struct Live {
    /// The fork that made it has succeeded (else it is counted but may
    /// still be refused).
    committed: bool,
    ns: Arc<UserNamespace>,
    /// Its credential's ucounts (what it must be counted in).
    ucounts: Arc<Ucounts>,
    real_uid: u32,
}

/// The soft rlimits of a task that creates a user namespace, which the
/// namespace records (`set_userns_rlimit_max`).
#[derive(Debug, Clone, Copy)]
pub struct CreatorRlimits {
    pub nproc: u64,
    pub sigpending: u64,
    pub msgqueue: u64,
    pub memlock: u64,
}

impl CreatorRlimits {
    /// `task`'s, with its RLIMIT_NPROC from `own`.
    pub fn of(task: &Task, own: &Own) -> CreatorRlimits {
        CreatorRlimits {
            nproc: own.rlimit_nproc.0,
            sigpending: task.rlimit(RlimitType::Sigpending).0,
            msgqueue: task.rlimit(RlimitType::Msgqueue).0,
            memlock: task.rlimit(RlimitType::Memlock).0,
        }
    }
}

/// The process accounting of a simulated machine.
pub struct Procs {
    patches: NprocPatches,
    signal: crate::signal::SignalPatches,
    /// Whether the run accounts processes at all (see [`models_processes`]):
    /// runs without process operations take no scheduling point for it.
    pub enabled: bool,
    ucounts: Arc<UcountsTable>,
    userns: Arc<Userns>,
    users: Mutex<BTreeMap<u32, Arc<UserStruct>>>,
    next_pid: AtomicU64,
    /// Live processes, for the checkers.
    live: LiveProcs,
    /// Processes whose count is moving to new credentials (`commit_creds`
    /// between charging the new ucounts and uncharging the old): the
    /// kernel counts them under both meanwhile, and so does a refusal's
    /// explanation (`nproc.isolated`).
    moving: Mutex<BTreeMap<u64, Live>>,
    /// Operations half-way through changing counts.
    in_flight: AtomicU32,
    /// Changes so far of what `ucounts.balanced` compares here: the live
    /// processes, a user's count, and the end of each accounting
    /// operation (the ucounts counters are the ledger's changes).
    changes: AtomicU64,
    /// (`changes`, the ledger's changes) when `check_balanced` last passed.
    balanced_at: Mutex<Option<(u64, u64)>>,
    /// `nproc.execve_enforced`: by pid, whether the last set*uid moved the
    /// task to a user already over its limit.
    setuid_over: Mutex<BTreeMap<u64, bool>>,
    violation: Mutex<Option<(Invariant, String)>>,
    /// Which oracles the run asked for (the others cost nothing).
    oracles: Mutex<Vec<Invariant>>,
}

/// Why `copy_process` failed.
pub enum ForkError {
    /// EAGAIN from the RLIMIT_NPROC check.
    Nproc,
    Other(Errno),
}

impl From<Errno> for ForkError {
    fn from(e: Errno) -> Self {
        ForkError::Other(e)
    }
}

/// An accounting operation under way: the balance checker waits for it,
/// and compares again once it ended.
pub struct Flight<'a>(&'a AtomicU32, &'a AtomicU64);

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, StdOrdering::SeqCst);
        self.1.fetch_add(1, StdOrdering::SeqCst);
    }
}

/// The live processes, for the checkers: read freely, changed only
/// through [`LiveProcs::write`], which counts the change (so that a
/// checker's pass stands while nothing changed).
struct LiveProcs(Mutex<BTreeMap<u64, Live>>);

/// The live processes, read.
struct LiveRead<'a>(sim::HostGuard<'a, BTreeMap<u64, Live>>);

impl std::ops::Deref for LiveRead<'_> {
    type Target = BTreeMap<u64, Live>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl LiveProcs {
    fn read(&self) -> LiveRead<'_> {
        LiveRead(self.0.lock())
    }

    fn write(&self, changes: &AtomicU64) -> sim::HostGuard<'_, BTreeMap<u64, Live>> {
        changes.fetch_add(1, StdOrdering::SeqCst);
        self.0.lock()
    }
}

/// The maximum `ucounts.within_limits` holds each level of a child's chain
/// to: the caller's RLIMIT_NPROC at the leaf, the rlimit recorded in the
/// namespace below at each ancestor (the fixed rule, whichever the kernel
/// compares with, so that the check's own rule is judged too).
fn nproc_maxima(child: &Cred, limit: u64) -> Vec<i64> {
    ucounts::rlimit::level_maxima(
        ucounts_of(child),
        RlimitType::Nproc,
        limit,
        RlimitCheck::NamespaceBelow,
    )
}

/// The ucounts of a credential the machine accounts.
fn ucounts_of(c: &Cred) -> &Arc<Ucounts> {
    c.ucounts
        .as_ref()
        .expect("an accounted credential has ucounts")
}

fn user_of(c: &Cred) -> &Arc<UserStruct> {
    c.user.as_ref().expect("an accounted credential has a user")
}

/// `make_kgid`, `None` when `gid` is unmapped in `ns`.
fn make_kgid(ns: &UserNamespace, gid: u32) -> Option<u32> {
    Some(userns::make_kgid(ns, gid)).filter(|k| *k != UNMAPPED)
}

/// `make_kuid`, `None` when `uid` is unmapped in `ns`.
fn make_kuid(ns: &UserNamespace, uid: u32) -> Option<u32> {
    Some(userns::make_kuid(ns, uid)).filter(|k| *k != UNMAPPED)
}

impl Procs {
    pub fn new(
        patches: &ActivePatches,
        ucounts: &Arc<UcountsTable>,
        userns: &Arc<Userns>,
        enabled: bool,
    ) -> Arc<Procs> {
        Arc::new(Procs {
            patches: NprocPatches::from_active(patches),
            signal: patches.signal(),
            enabled,
            ucounts: Arc::clone(ucounts),
            userns: Arc::clone(userns),
            users: Mutex::new("procs.users", BTreeMap::new()),
            next_pid: AtomicU64::new(1),
            live: LiveProcs(Mutex::new("procs.live", BTreeMap::new())),
            moving: Mutex::new("procs.moving", BTreeMap::new()),
            in_flight: AtomicU32::new(0),
            changes: AtomicU64::new(0),
            balanced_at: Mutex::new("procs.balanced_at", None),
            setuid_over: Mutex::new("procs.setuid_over", BTreeMap::new()),
            violation: Mutex::new("procs.violation", None),
            oracles: Mutex::new("procs.oracles", Vec::new()),
        })
    }

    pub fn next_pid(&self) -> u64 {
        self.next_pid.fetch_add(1, StdOrdering::SeqCst)
    }

    /// The credentials a set-up task starts with: kernel uid and gid
    /// `kuid` in `ns`; every capability (within `bset`) for root of `ns`,
    /// and for the creator of a child namespace without a uid map (as
    /// `unshare -U` leaves it); none otherwise. Counted as one process of
    /// its user when the machine accounts processes.
    pub fn setup_cred(
        &self,
        pid: u64,
        ns: &Arc<UserNamespace>,
        kuid: u32,
        kgid: u32,
        bset: CapSet,
    ) -> Cred {
        let root = userns::from_kuid(ns, kuid) == 0;
        let creator = ns.parent.is_some() && ns.uid_map.nr_extents() == 0 && ns.owner == kuid;
        let caps = if root || creator {
            CapSet(CapSet::FULL.0 & bset.0)
        } else {
            CapSet::EMPTY
        };
        let mut cred = Cred::new(ns, kuid, kgid, caps);
        cred.cap_bset = bset;
        if self.enabled {
            cred.ucounts = Some(
                self.ucounts
                    .alloc_ucounts(&ns.ucounts_ns, kuid)
                    .expect("set-up ucounts"),
            );
            cred.user = Some(self.alloc_uid(kuid));
            self.count_process(&cred);
            self.live
                .write(&self.changes)
                .insert(pid, live_of(&cred, true));
        }
        ns.get();
        cred
    }

    /// `alloc_uid`: the user_struct of `kuid` (kept for the whole run).
    fn alloc_uid(&self, kuid: u32) -> Arc<UserStruct> {
        let mut users = self.users.lock();
        Arc::clone(
            users
                .entry(kuid)
                .or_insert_with(|| Arc::new(UserStruct::new(kuid))),
        )
    }

    pub fn flight(&self) -> Flight<'_> {
        self.in_flight.fetch_add(1, StdOrdering::SeqCst);
        Flight(&self.in_flight, &self.changes)
    }

    // ----------------------------------------------------------- fork

    /// `copy_process`'s RLIMIT_NPROC check before v5.17: made on the
    /// parent's credentials before the child is counted. `Err` to refuse.
    pub fn check_before_copy(&self, parent: &Cred, own: &Own, pid: u64) -> Result<(), ForkError> {
        let limit = own.rlimit_nproc.0;
        if !self.patches.enforce_limit
            && self.over_before_copy(parent, limit)
            && !self.exempt(parent)
        {
            self.check_isolated(pid, parent, own, 1);
            return Err(ForkError::Nproc);
        }
        Ok(())
    }

    /// The v5.17 check after `copy_creds`, on the child's ucounts; a
    /// refused child is uncounted and its credentials put.
    pub fn check_after_copy(
        &self,
        parent: &Cred,
        own: &Own,
        parent_pid: u64,
        child: &Cred,
    ) -> Result<(), ForkError> {
        if !self.patches.enforce_limit {
            return Ok(());
        }
        let limit = own.rlimit_nproc.0;
        // Each level is judged as the kernel read it, against the maximum
        // the invariant holds it to (whatever rule the kernel compares
        // with): later, a task with a higher limit may fork past this one's
        // at a level they share, as the kernel lets it, before this check
        // reads the next level.
        let judged =
            self.enabled && self.wants(Invariant::UcountsWithinLimits) && !self.exempt(parent);
        let maxima = if judged {
            nproc_maxima(child, limit)
        } else {
            Vec::new()
        };
        let mut excess = None;
        draw_rlimit_levels(
            ucounts_of(child),
            RlimitType::Nproc,
            limit,
            self.patches.check(),
        );
        let over = is_rlimit_overlimit_watched(
            ucounts_of(child),
            RlimitType::Nproc,
            limit,
            self.patches.check(),
            &mut |at, level| {
                if let (Some(max), None) = (maxima.get(at), &excess) {
                    excess = self.level_over_its_maximum(level, *max);
                }
            },
        );
        if over && !self.exempt(parent) {
            self.check_isolated(parent_pid, parent, own, 0);
            return Err(ForkError::Nproc);
        }
        if let Some(detail) = excess {
            // The kernel let the fork through, on the child's count.
            self.fail(Invariant::UcountsWithinLimits, detail);
        }
        Ok(())
    }

    /// The child was made: the checkers count it as committed.
    pub fn fork_committed(&self, parent: &Cred, own: &mut Own, child: &Cred, child_pid: u64) {
        own.nproc_exceeded = false;
        if !self.enabled {
            return;
        }
        if !self.patches.enforce_limit {
            // Checked before the child was counted: a fork that checked at
            // the same time may have counted since, past this one's limit.
            self.check_within_limits(child, own.rlimit_nproc.0, parent);
        }
        if let Some(l) = self.live.write(&self.changes).get_mut(&child_pid) {
            l.committed = true;
        }
    }

    /// Undo a child that was counted but not made.
    pub fn fork_undone(&self, child: Cred, child_pid: u64) {
        if self.enabled {
            self.uncount_process(&child);
            self.live.write(&self.changes).remove(&child_pid);
        }
        self.put_cred(child);
    }

    /// The check made before the child is counted (before v5.17).
    fn over_before_copy(&self, cred: &Cred, limit: u64) -> bool {
        if !self.enabled {
            return false;
        }
        if self.patches.ucounts {
            return self.is_overlimit(ucounts_of(cred), limit);
        }
        if self.patches.rfc_2016 {
            // The RFC: the caller's own (namespace, uid) count only.
            return ucounts_nproc(ucounts_of(cred)) >= clamp(limit);
        }
        user_processes(cred, limit) >= clamp(limit)
    }

    fn is_overlimit(&self, u: &Arc<Ucounts>, limit: u64) -> bool {
        draw_rlimit_levels(u, RlimitType::Nproc, limit, self.patches.check());
        is_rlimit_overlimit(u, RlimitType::Nproc, limit, self.patches.check())
    }

    /// `capable(cap)`: `cap` in the initial user namespace.
    fn capable(&self, cred: &Cred, cap: u32) -> bool {
        ns_capable(cred, &self.userns.init, cap)
    }

    /// The RLIMIT_NPROC exemptions: the initial user (real kuid 0), or
    /// CAP_SYS_RESOURCE or CAP_SYS_ADMIN in the initial user namespace.
    fn exempt(&self, cred: &Cred) -> bool {
        cred.uid == 0 || self.capable(cred, CAP_SYS_RESOURCE) || self.capable(cred, CAP_SYS_ADMIN)
    }

    /// `copy_creds`: the child's credential (a new user namespace with
    /// CLONE_NEWUSER, made by the one `create_user_ns`), counted as one
    /// more process of its user.
    pub fn copy_creds(
        &self,
        old: &Cred,
        new_user_ns: Option<&str>,
        creator: CreatorRlimits,
        pid: u64,
    ) -> Result<Cred, Errno> {
        sim::point("prepare_creds", ObjId::NONE, &CRED);
        let mut new = self.get_cred(old);
        if let Some(name) = new_user_ns {
            new = self.create_user_cred(new, name, creator)?;
        }
        if self.enabled {
            // Known to the checkers before the count starts, so they never
            // see a charge they cannot attribute.
            self.live
                .write(&self.changes)
                .insert(pid, live_of(&new, false));
            self.count_process(&new);
        }
        Ok(new)
    }

    /// `create_user_ns` on `new` (its own copy of the caller's
    /// credentials), then `set_cred_ucounts`, as `copy_creds` does: the
    /// credentials in the new namespace, or `new` put and the errno.
    pub fn create_user_cred(
        &self,
        new: Cred,
        name: &str,
        creator: CreatorRlimits,
    ) -> Result<Cred, Errno> {
        let old = new.clone();
        let mut made = self.create_user_ns_cred(new, name, creator)?;
        // The reference `new` held on the parent namespace is the new
        // namespace's now (`ns->parent`); the new credentials hold the
        // new namespace's first reference.
        if let Err(e) = self.set_cred_ucounts(&mut made, &old) {
            self.put_cred(made);
            return Err(e);
        }
        Ok(made)
    }

    /// `create_user_ns` on `new` (its own copy of the caller's
    /// credentials): the credentials in the new namespace, still with the
    /// caller's ucounts (`ksys_unshare` calls `set_cred_ucounts` once the
    /// other namespaces are made), or `new` put and the errno.
    pub fn create_user_ns_cred(
        &self,
        new: Cred,
        name: &str,
        creator: CreatorRlimits,
    ) -> Result<Cred, Errno> {
        let rlimits = self.enabled.then(|| self.recorded_rlimits(&new, creator));
        let made = self.userns.create_user_ns_with_rlimits(&new, name, rlimits);
        let code = made
            .as_ref()
            .map_or_else(|e| crate::errno::from_userns(*e).as_return(), |_| 0);
        let obj = made.as_ref().map_or(ObjId::NONE, |c| c.user_ns.obj);
        sim::note("create_user_ns", obj, code);
        match made {
            Ok(c) => Ok(c),
            Err(e) => {
                self.put_cred(new);
                Err(crate::errno::from_userns(e))
            }
        }
    }

    /// What `set_userns_rlimits` records in a new namespace: the creator's
    /// RLIMIT_NPROC (`enforced_nproc_rlimit`: none for global root from
    /// v5.17) and RLIMIT_SIGPENDING.
    fn recorded_rlimits(&self, cred: &Cred, creator: CreatorRlimits) -> [u64; RlimitType::COUNT] {
        let global_root = cred.uid == 0 && cred.user_ns.parent.is_none();
        let nproc = if self.patches.limitnproc_regression && global_root {
            RLIM_INFINITY
        } else {
            creator.nproc
        };
        let mut rlimits = [RLIM_INFINITY; RlimitType::COUNT];
        rlimits[RlimitType::Nproc as usize] = nproc;
        rlimits[RlimitType::Sigpending as usize] = creator.sigpending;
        rlimits[RlimitType::Msgqueue as usize] = creator.msgqueue;
        rlimits[RlimitType::Memlock as usize] = creator.memlock;
        rlimits
    }

    /// The ucounts table the machine charges.
    pub(crate) fn ucounts(&self) -> &UcountsTable {
        &self.ucounts
    }

    /// The profile's RLIMIT_NPROC behaviours (which also say whether the
    /// rlimits live in ucounts).
    pub(crate) fn nproc_patches(&self) -> NprocPatches {
        self.patches
    }

    /// How the profile compares an rlimit counter's levels.
    pub(crate) fn rlimit_check(&self) -> RlimitCheck {
        self.patches.check()
    }

    /// The profile's signal-queue behaviours.
    pub(crate) fn signal_patches(&self) -> crate::signal::SignalPatches {
        self.signal
    }

    /// Count one process of `cred`'s user.
    fn count_process(&self, cred: &Cred) {
        if self.patches.in_ucounts() {
            inc_rlimit_ucounts(
                &self.ucounts,
                ucounts_of(cred),
                RlimitType::Nproc,
                1,
                self.patches.check(),
            );
        } else {
            user_of(cred).add_rlimit(RlimitType::Nproc, 1);
        }
        self.changes.fetch_add(1, StdOrdering::SeqCst);
    }

    fn uncount_process(&self, cred: &Cred) {
        if self.patches.in_ucounts() {
            dec_rlimit_ucounts(&self.ucounts, ucounts_of(cred), RlimitType::Nproc, 1);
        } else {
            user_of(cred).add_rlimit(RlimitType::Nproc, -1);
        }
        self.changes.fetch_add(1, StdOrdering::SeqCst);
    }

    /// `set_cred_ucounts`: when the real user or the namespace changed
    /// from `old`, point `new` at the ucounts of (its namespace, its uid):
    /// the real uid from v5.17, the effective one before.
    pub(crate) fn set_cred_ucounts(&self, new: &mut Cred, old: &Cred) -> Result<(), Errno> {
        if !self.enabled || (new.uid == old.uid && Arc::ptr_eq(&new.user_ns, &old.user_ns)) {
            return Ok(());
        }
        let key = if self.patches.real_uid || !self.patches.ucounts {
            new.uid
        } else {
            new.euid
        };
        let current = ucounts_of(new);
        if current.ns.id == new.user_ns.ucounts_ns.id && current.uid == key {
            return Ok(());
        }
        let site = Some(crate::ops::SET_CRED_UCOUNTS);
        let fresh = self
            .ucounts
            .alloc_ucounts_at(&new.user_ns.ucounts_ns, key, site)
            .ok_or(Errno::EAGAIN)?;
        let old = new.ucounts.replace(fresh).expect("accounted");
        self.ucounts.put_ucounts(&old);
        Ok(())
    }

    // ------------------------------------------------- credential refs

    /// `prepare_creds`: a copy holding its own references.
    pub fn get_cred(&self, c: &Cred) -> Cred {
        if let Some(u) = &c.ucounts {
            self.ucounts
                .get_ucounts(u)
                .expect("a live credential's ucounts");
        }
        c.user_ns.get();
        c.clone()
    }

    /// `put_cred`: drop the credential's references. The kernel drops
    /// them all from `put_cred_rcu` after a grace period; the model drops
    /// the ucounts reference at once (nothing observes the delay) and the
    /// user namespace after the grace period.
    pub fn put_cred(&self, c: Cred) {
        if let Some(u) = &c.ucounts {
            self.ucounts.put_ucounts(u);
        }
        self.userns.put_cred(c);
    }

    /// `commit_creds`: install `new`; when the real user or the namespace
    /// changes the process's count moves from the old ucounts to the new.
    pub fn commit_creds(&self, task: &Task, new: Cred) {
        sim::point("commit_creds", ObjId::NONE, &CRED);
        let _flight = self.flight();
        let old_cred = task.cred();
        let moved = self.enabled
            && (new.uid != old_cred.uid || !Arc::ptr_eq(&new.user_ns, &old_cred.user_ns));
        if moved {
            self.moving.lock().insert(task.pid, live_of(&new, true));
            self.count_process(&new);
        }
        // A process whose ids or capabilities change this way may hold
        // what its owner must not read: it stops being dumpable.
        if new.euid != old_cred.euid
            || new.egid != old_cred.egid
            || new.fsuid != old_cred.fsuid
            || !userns::cred_cap_issubset(&old_cred, &new)
        {
            task.set_dumpable(false);
        }
        let old = task.replace_cred(new);
        if moved {
            self.uncount_process(&old);
            self.moving.lock().remove(&task.pid);
        }
        if self.enabled {
            self.live
                .write(&self.changes)
                .insert(task.pid, live_of(&task.cred(), true));
        }
        self.put_cred(old);
    }

    /// `userns_install`'s new credentials: in `ns` (a reference taken),
    /// with every capability there, their ucounts moved by
    /// `set_cred_ucounts`, then committed.
    pub fn commit_setns_user(&self, task: &Task, ns: &Arc<UserNamespace>) -> Result<(), Errno> {
        let old = task.cred();
        let mut new = self.get_cred(&old);
        ns.get();
        self.userns.put_user_ns(&new.user_ns);
        new.user_ns = Arc::clone(ns);
        userns::set_cred_user_ns(&mut new);
        if let Err(e) = self.set_cred_ucounts(&mut new, &old) {
            self.put_cred(new);
            return Err(e);
        }
        self.commit_creds(task, new);
        Ok(())
    }

    /// `release_task`: the exiting process is uncounted and its
    /// credentials put.
    pub fn release(&self, task: &Task) {
        let cred = task.cred();
        if self.enabled {
            // Runs that account no processes take no step for it.
            sim::point("release_task", ObjId::NONE, &EXIT_AND_REAP);
            let _flight = self.flight();
            // Exiting: no longer a committed process for the limit
            // checkers, still counted (and so still an explanation for a
            // refusal).
            if let Some(l) = self.live.write(&self.changes).get_mut(&task.pid) {
                l.committed = false;
            }
            self.uncount_process(&cred);
            self.live.write(&self.changes).remove(&task.pid);
        }
        self.put_cred(cred);
    }

    // ---------------------------------------------------------- set*uid

    /// `setuid(uid)`: with CAP_SETUID in the namespace, all three uids;
    /// else the euid, to the real or saved uid only.
    pub fn setuid(&self, task: &Task, own: &mut Own, uid: u32) -> Result<(), Errno> {
        sim::point("setuid", ObjId::NONE, &SYSCALL);
        let cred = task.cred();
        let kuid = make_kuid(&cred.user_ns, uid).ok_or(Errno::EINVAL)?;
        let privileged = ns_capable(&cred, &cred.user_ns, CAP_SETUID);
        let (r, s) = (cred.uid, cred.suid);
        let ids = if privileged {
            [kuid, kuid, kuid]
        } else if kuid == r || kuid == s {
            [r, kuid, s]
        } else {
            return Err(Errno::EPERM);
        };
        self.change_uids(task, own, ids)
    }

    /// `setresuid(ruid, euid, suid)`, `None` for -1 (unchanged, as
    /// `seteuid` passes): each id given must be one of the current three
    /// unless the caller has CAP_SETUID in its namespace.
    pub fn setresuid(
        &self,
        task: &Task,
        own: &mut Own,
        ids: [Option<u32>; 3],
    ) -> Result<(), Errno> {
        sim::point("setresuid", ObjId::NONE, &SYSCALL);
        let cred = task.cred();
        let cur = [cred.uid, cred.euid, cred.suid];
        let privileged = ns_capable(&cred, &cred.user_ns, CAP_SETUID);
        let kuids = resolve_res_ids(ids, cur, privileged, |id| make_kuid(&cred.user_ns, id))?;
        self.change_uids(task, own, kuids)
    }

    // ---------------------------------------------------------- set*gid

    /// `setgid(gid)`: with CAP_SETGID in the namespace, all three gids
    /// (and the fs gid); else the egid, to the real or saved gid only.
    pub fn setgid(&self, task: &Task, gid: u32) -> Result<(), Errno> {
        sim::point("setgid", ObjId::NONE, &SYSCALL);
        let cred = task.cred();
        let kgid = make_kgid(&cred.user_ns, gid).ok_or(Errno::EINVAL)?;
        let ids = if ns_capable(&cred, &cred.user_ns, CAP_SETGID) {
            [kgid, kgid, kgid]
        } else if kgid == cred.gid || kgid == cred.sgid {
            [cred.gid, kgid, cred.sgid]
        } else {
            return Err(Errno::EPERM);
        };
        self.change_gids(task, ids);
        Ok(())
    }

    /// `setresgid(rgid, egid, sgid)`, `None` for -1: as `setresuid`, with
    /// CAP_SETGID.
    pub fn setresgid(&self, task: &Task, ids: [Option<u32>; 3]) -> Result<(), Errno> {
        sim::point("setresgid", ObjId::NONE, &SYSCALL);
        let cred = task.cred();
        let cur = [cred.gid, cred.egid, cred.sgid];
        let privileged = ns_capable(&cred, &cred.user_ns, CAP_SETGID);
        let kgids = resolve_res_ids(ids, cur, privileged, |id| make_kgid(&cred.user_ns, id))?;
        self.change_gids(task, kgids);
        Ok(())
    }

    /// `setgroups(gids)`: only with CAP_SETGID in the caller's namespace
    /// where that namespace allows it (`may_setgroups`), else EPERM; every
    /// gid must be mapped there (EINVAL); the list is kept sorted.
    pub fn setgroups(&self, task: &Task, gids: &[u32]) -> Result<(), Errno> {
        sim::point("setgroups", ObjId::NONE, &SYSCALL);
        let cred = task.cred();
        let may = ns_capable(&cred, &cred.user_ns, CAP_SETGID)
            && userns::userns_may_setgroups(&self.userns, &cred.user_ns);
        if !may {
            return Err(Errno::EPERM);
        }
        let mut kgids = Vec::with_capacity(gids.len());
        for gid in gids {
            kgids.push(make_kgid(&cred.user_ns, *gid).ok_or(Errno::EINVAL)?);
        }
        kgids.sort_unstable();
        sim::point("prepare_creds", ObjId::NONE, &CRED);
        let mut new = self.get_cred(&cred);
        new.groups = kgids;
        self.commit_creds(task, new);
        Ok(())
    }

    /// The tail of set*gid: the new gids (the fs gid follows the effective
    /// one) committed. No capability changes with a gid.
    fn change_gids(&self, task: &Task, [r, e, s]: [u32; 3]) {
        sim::point("prepare_creds", ObjId::NONE, &CRED);
        let old = task.cred();
        let mut new = self.get_cred(&old);
        (new.gid, new.egid, new.sgid, new.fsgid) = (r, e, s, e);
        self.commit_creds(task, new);
    }

    /// The common tail of set*uid: `set_user` when the real uid changes,
    /// the capability rules of `cap_task_fix_setuid`, `set_cred_ucounts`,
    /// `flag_nproc_exceeded` (v5.17) and `commit_creds`.
    fn change_uids(&self, task: &Task, own: &mut Own, [r, e, s]: [u32; 3]) -> Result<(), Errno> {
        let _flight = self.flight();
        sim::point("prepare_creds", ObjId::NONE, &CRED);
        let old = task.cred();
        let mut new = self.get_cred(&old);
        (new.uid, new.euid, new.suid, new.fsuid) = (r, e, s, e);
        cap_emulate_setxuid(&mut new, &old);
        if new.uid != old.uid && self.enabled {
            new.user = Some(self.alloc_uid(new.uid));
            if !self.patches.flag_after_set_user {
                own.nproc_exceeded = self.set_user_flag(&new, own.rlimit_nproc.0);
            }
        }
        if self.patches.ucounts || self.patches.rfc_2016 {
            if let Err(err) = self.set_cred_ucounts(&mut new, &old) {
                self.put_cred(new);
                return Err(err);
            }
        }
        if self.patches.flag_after_set_user && self.enabled {
            self.flag_nproc_exceeded(own, &old, &new);
        }
        self.note_setuid_oracle(task.pid, own, &old, &new);
        self.commit_creds(task, new);
        Ok(())
    }

    /// `set_user`'s PF_NPROC_EXCEEDED decision before v5.17: the new user
    /// is over its limit (before v5.14 by its user_struct; from v5.14 by
    /// `new->ucounts`, which at that point are still the old ones).
    fn set_user_flag(&self, new: &Cred, limit: u64) -> bool {
        if new.uid == 0 {
            return false;
        }
        if self.patches.in_ucounts() {
            self.is_overlimit(ucounts_of(new), limit)
        } else {
            user_processes(new, limit) >= clamp(limit)
        }
    }

    /// `flag_nproc_exceeded` (v5.17): decided on the new ucounts, after
    /// `set_cred_ucounts`; nothing when they did not change.
    fn flag_nproc_exceeded(&self, own: &mut Own, old: &Cred, new: &Cred) {
        if Arc::ptr_eq(ucounts_of(new), ucounts_of(old)) {
            return;
        }
        own.nproc_exceeded = self.is_overlimit(ucounts_of(new), own.rlimit_nproc.0) && new.uid != 0;
    }

    // ----------------------------------------------------------- execve

    /// `execve`: refused with EAGAIN when set*uid flagged the process and
    /// its user is still over the limit; capabilities are recomputed
    /// (root keeps them within the bounding set, anyone else loses them).
    pub fn execve(&self, task: &Task, own: &mut Own) -> Result<(), Errno> {
        sim::point("execve", ObjId::NONE, &SYSCALL);
        let limit = own.rlimit_nproc.0;
        let cred = task.cred();
        if own.nproc_exceeded && self.enabled {
            let over = if self.patches.in_ucounts() {
                self.is_overlimit(ucounts_of(&cred), limit)
            } else {
                user_processes(&cred, limit) > clamp(limit)
            };
            if over {
                return Err(Errno::EAGAIN);
            }
        }
        own.nproc_exceeded = false;
        self.check_execve(task.pid, &cred, own);
        sim::point("exec_binprm", ObjId::NONE, &EXECVE);
        let root = make_kuid(&cred.user_ns, 0);
        let is_root = |k: u32| Some(k) == root;
        let mut new = cred;
        // `cap_bprm_creds_from_file` for a file without capabilities: root
        // (by real or effective uid) is given the bounding set, made
        // effective only when the effective uid is root; anyone else
        // keeps nothing (no inheritable or ambient set is modelled).
        new.cap_permitted = if is_root(new.uid) || is_root(new.euid) {
            new.full_caps()
        } else {
            CapSet::EMPTY
        };
        new.cap_effective = if is_root(new.euid) {
            new.cap_permitted
        } else {
            CapSet::EMPTY
        };
        // `begin_new_exec`: the new image is dumpable when the real and
        // effective ids agree, and `mm->user_ns` is the caller's namespace.
        let mm = Mm {
            dumpable: new.uid == new.euid && new.gid == new.egid,
            user_ns: Arc::clone(&new.user_ns),
        };
        mm.user_ns.get();
        if let Some(old) = task.replace_mm(Some(mm)) {
            self.userns.put_user_ns(&old.user_ns);
        }
        // The new image's credentials keep the same references.
        task.replace_cred(new);
        Ok(())
    }

    // --------------------------------------------------------- setrlimit

    /// `setrlimit(resource, limit)` (soft and hard): raising the hard
    /// limit needs CAP_SYS_RESOURCE in the initial user namespace.
    pub fn setrlimit(
        &self,
        task: &Task,
        own: &mut Own,
        resource: RlimitType,
        limit: u64,
    ) -> Result<(), Errno> {
        sim::point("setrlimit", ObjId::NONE, &SYSCALL);
        let hard = match resource {
            RlimitType::Nproc => own.rlimit_nproc.1,
            t => task.rlimit(t).1,
        };
        if limit > hard && !self.capable(&task.cred(), CAP_SYS_RESOURCE) {
            return Err(Errno::EPERM);
        }
        match resource {
            RlimitType::Nproc => own.rlimit_nproc = (limit, limit),
            t => task.set_rlimit(t, (limit, limit)),
        }
        Ok(())
    }

    // ---------------------------------------------------------- oracles

    fn wants(&self, invariant: Invariant) -> bool {
        self.oracles.lock().contains(&invariant)
    }

    /// Run the oracle of `invariant` from now on.
    pub fn enable_oracle(&self, invariant: Invariant) {
        self.oracles.lock().push(invariant);
    }

    fn fail(&self, invariant: Invariant, detail: String) {
        let mut v = self.violation.lock();
        if v.is_none() {
            *v = Some((invariant, detail));
        }
    }

    /// `nproc.isolated`: a refused fork must be explained by the caller's
    /// own processes: those of its uid in its namespace, its ancestors and
    /// its descendants, never those in a sibling branch of the tree,
    /// against the smallest limit on its chain. (From v5.16 the kernel
    /// breaks this by design when the siblings share their creator's
    /// budget: `kernel::known` lists it.) A process whose count is moving
    /// to new credentials counts under both, as the kernel counts it.
    /// `uncounted` is 1 when the refused child is not counted yet.
    fn check_isolated(&self, _pid: u64, cred: &Cred, own: &Own, uncounted: u64) {
        if !self.wants(Invariant::NprocIsolated) {
            return;
        }
        let ns = &cred.user_ns;
        let counted = {
            let (live, moving) = (self.live.read(), self.moving.lock());
            live.values()
                .chain(moving.values())
                .filter(|l| {
                    l.real_uid == cred.uid
                        && (l.ns.ucounts_ns.is_same_or_descendant_of(&ns.ucounts_ns)
                            || ns.ucounts_ns.is_same_or_descendant_of(&l.ns.ucounts_ns))
                })
                .count() as u64
                + uncounted
        };
        // The smallest maximum on the caller's chain: its rlimit, or a
        // creator's recorded one above it.
        let limit = if self.patches.in_ucounts() {
            ucounts::rlimit::level_maxima(
                ucounts_of(cred),
                RlimitType::Nproc,
                own.rlimit_nproc.0,
                RlimitCheck::NamespaceBelow,
            )
            .into_iter()
            .min()
            .map_or(own.rlimit_nproc.0, |m| u64::try_from(m).unwrap_or(0))
        } else {
            own.rlimit_nproc.0
        };
        if counted <= limit {
            self.fail(
                Invariant::NprocIsolated,
                format!(
                    "fork refused with EAGAIN in user namespace {} for kuid {}, although with the new process its processes in that namespace, its ancestors and descendants would number {counted}, within the limit of {limit}: the rest of the count comes from sibling namespaces",
                    ns.name, cred.uid
                ),
            );
        }
    }

    /// Live processes counted at `level`, the child being made included.
    fn live_at(&self, level: &Ucounts) -> i64 {
        1 + self
            .live
            .read()
            .values()
            .filter(|l| l.committed)
            .filter(|l| {
                ucounts::levels(&l.ucounts)
                    .iter()
                    .any(|u| std::ptr::eq(&**u, level))
            })
            .count() as i64
    }

    /// `ucounts.within_limits` at one level of a v5.17 fork's check, as the
    /// check read it: no more live processes, the new one included, than
    /// the level's maximum.
    fn level_over_its_maximum(&self, level: &Ucounts, max: i64) -> Option<String> {
        let n = self.live_at(level);
        (n > max).then(|| format!(
            "after a fork, {n} live processes are counted at (user namespace {}, kuid {}), above its maximum {max}",
            level.ns.name, level.uid
        ))
    }

    /// `ucounts.within_limits` for a non-exempt fork the kernel let
    /// through before v5.17 (from v5.17 each level is judged as the check
    /// reads it, `check_after_copy`): no level holds more live processes,
    /// the new one included, than its maximum (the caller's rlimit at the
    /// leaf, the rlimit recorded below at each ancestor), once the child is
    /// made, since the check came before the count and a fork checking at
    /// the same time could slip past the limit.
    fn check_within_limits(&self, child: &Cred, limit: u64, parent: &Cred) {
        if !self.wants(Invariant::UcountsWithinLimits) || self.exempt(parent) {
            return;
        }
        if !self.patches.in_ucounts() {
            let live = self.live.read();
            let n = 1 + live
                .values()
                .filter(|l| l.committed && l.real_uid == child.uid)
                .count() as u64;
            if n > limit {
                self.fail(
                    Invariant::UcountsWithinLimits,
                    format!(
                        "kuid {} has {n} processes after a fork, above RLIMIT_NPROC {limit}",
                        child.uid
                    ),
                );
            }
            return;
        }
        let maxima = nproc_maxima(child, limit);
        for (u, max) in ucounts::levels(ucounts_of(child)).iter().zip(maxima) {
            if let Some(detail) = self.level_over_its_maximum(u, max) {
                self.fail(Invariant::UcountsWithinLimits, detail);
                return;
            }
        }
    }

    /// Remember, for `nproc.execve_enforced`, whether the set*uid moved the
    /// task to a (non-root) user already at or over its limit.
    fn note_setuid_oracle(&self, pid: u64, own: &Own, old: &Cred, new: &Cred) {
        if !self.wants(Invariant::NprocExecveEnforced) || new.uid == old.uid || new.uid == 0 {
            return;
        }
        let others = self
            .live
            .read()
            .iter()
            .filter(|(p, l)| {
                **p != pid
                    && l.committed
                    && l.real_uid == new.uid
                    && Arc::ptr_eq(&l.ns, &new.user_ns)
            })
            .count() as u64;
        self.setuid_over
            .lock()
            .insert(pid, others > own.rlimit_nproc.0);
    }

    /// `nproc.execve_enforced` at a successful execve: the task was moved
    /// to an over-limit user, and that user (the task included) is still
    /// over the limit now.
    fn check_execve(&self, pid: u64, cred: &Cred, own: &Own) {
        let armed = self.setuid_over.lock().remove(&pid).unwrap_or(false);
        let now = self
            .live
            .read()
            .values()
            .filter(|l| l.committed && l.real_uid == cred.uid && Arc::ptr_eq(&l.ns, &cred.user_ns))
            .count() as u64;
        if armed && now > own.rlimit_nproc.0 {
            self.fail(
                Invariant::NprocExecveEnforced,
                format!(
                    "execve succeeded after set*uid to kuid {}, which was over RLIMIT_NPROC {}",
                    cred.uid, own.rlimit_nproc.0
                ),
            );
        }
    }

    /// The first violation an oracle found, if it is `invariant`'s.
    pub fn take_violation(&self, invariant: Invariant) -> Option<String> {
        let mut v = self.violation.lock();
        match v.take() {
            Some((i, detail)) if i == invariant => Some(detail),
            other => {
                *v = other;
                None
            }
        }
    }

    /// `nproc.real_uid`: every live process is counted for its real uid
    /// (RLIMIT_NPROC limits a real user's processes).
    pub fn check_real_uid(&self) -> Option<String> {
        if !self.patches.in_ucounts() {
            return None;
        }
        let live = self.live.read();
        live.iter().find_map(|(pid, l)| {
            (l.committed && l.ucounts.uid != l.real_uid).then(|| {
                format!(
                    "process {pid} of real kuid {} is counted in the ucounts of kuid {} (user namespace {})",
                    l.real_uid, l.ucounts.uid, l.ucounts.ns.name
                )
            })
        })
    }

    /// `ucounts.balanced` for NPROC: each counter equals the live
    /// processes whose credentials are counted through it.
    pub fn check_balanced(&self) -> Option<String> {
        if self.in_flight.load(StdOrdering::SeqCst) > 0 {
            return None;
        }
        // A pass stands while nothing it compares changed.
        let inputs = (
            self.changes.load(StdOrdering::SeqCst),
            self.ucounts.ledger.changes(),
        );
        if *self.balanced_at.lock() == Some(inputs) {
            return None;
        }
        let found = self.find_unbalanced();
        if found.is_none() {
            *self.balanced_at.lock() = Some(inputs);
        }
        found
    }

    fn find_unbalanced(&self) -> Option<String> {
        let live = self.live.read();
        if !self.patches.in_ucounts() {
            for (uid, user) in self.users.lock().iter() {
                let want = live.values().filter(|l| l.real_uid == *uid).count() as i64;
                let have = user.peek_processes();
                if want != have {
                    return Some(format!(
                        "user_struct of kuid {uid} counts {have} processes, but {want} are alive"
                    ));
                }
            }
            return None;
        }
        self.ucounts.ledger.find_hashed(|u| {
            let want = live
                .values()
                .filter(|l| ucounts::charges_through(&l.ucounts, u))
                .count() as i64;
            let have = u.peek_rlimit(RlimitType::Nproc);
            (want != have).then(|| format!(
                "UCOUNT_RLIMIT_NPROC of kuid {} in user namespace {} is {have}, but {want} live processes are counted through it",
                u.uid, u.ns.name
            ))
        })
    }

    /// `ucounts.no_leak` at the end: every hashed entry is referenced by
    /// exactly the holders the model knows once every process has exited
    /// (the live namespaces' parent charges, the message queues still
    /// there, `queues`); an entry nobody holds is freed.
    pub fn check_no_leak(&self, queues: &[Arc<Ucounts>]) -> Option<String> {
        let mut holders: BTreeMap<(u32, u32), i64> = BTreeMap::new();
        for u in queues {
            *holders.entry(key(u)).or_default() += 1;
        }
        for ns in self.userns.namespaces() {
            if let Some(u) = ns.charge() {
                *holders.entry(key(u)).or_default() += 1;
            }
        }
        for u in self.ucounts.ledger.hashed_entries() {
            if u.is_freed() {
                return Some(format!(
                    "ucounts of kuid {} in {} is freed but still hashed",
                    u.uid, u.ns.name
                ));
            }
            let want = holders.get(&key(&u)).copied().unwrap_or(0);
            let pins = i64::from(u.peek_rlimit(RlimitType::Sigpending) > 0);
            if u.peek_refs() > want + pins {
                return Some(format!(
                    "ucounts of kuid {} in user namespace {} has {} references after every process exited, but only {want} holders remain",
                    u.uid,
                    u.ns.name,
                    u.peek_refs()
                ));
            }
        }
        None
    }

    /// Live processes (for reports and tests).
    pub fn peek_live(&self) -> usize {
        self.live.read().len()
    }
}

/// What a task's denied operations must leave as it was: its uids,
/// RLIMIT_NPROC and how many children it has.
pub fn peek_task(task: &Task) -> String {
    let c = task.cred();
    let own = task.own.lock();
    format!(
        "uids {}/{}/{}, gids {}/{}/{}, groups {:?}, rlimit {:?}, {} children",
        c.uid,
        c.euid,
        c.suid,
        c.gid,
        c.egid,
        c.sgid,
        c.groups,
        own.rlimit_nproc,
        own.children.len()
    )
}

/// Does `setup` use processes: a process operation, a user namespace made
/// by a task, a sysctl write (its permission depends on the credential), a
/// uid map or an RLIMIT_NPROC?
pub fn models_processes(setup: &Setup) -> bool {
    let process_op = |op: &Op| {
        matches!(
            op,
            Op::Fork {}
                | Op::UnshareAndExit { .. }
                | Op::Clone { .. }
                | Op::ForkChild { .. }
                | Op::CloneChild { .. }
                | Op::Exit {}
                | Op::Setuid { .. }
                | Op::Setresuid { .. }
                | Op::Seteuid { .. }
                | Op::Setgid { .. }
                | Op::Setegid { .. }
                | Op::Setresgid { .. }
                | Op::Setgroups { .. }
                | Op::Execve {}
                | Op::Setrlimit { .. }
                | Op::FailAlloc { .. }
        ) || matches!(op, Op::SysctlWrite { .. })
            || crate::ops::queues_or_takes(op)
            || crate::ops::uses_mqueue(op)
            || crate::ops::locks_memory(op)
    };
    setup.processes != ProcessSetup::default() || setup.every_op().any(process_op)
}

fn key(u: &Ucounts) -> (u32, u32) {
    (u.ns.id, u.uid)
}

fn live_of(c: &Cred, committed: bool) -> Live {
    Live {
        committed,
        ns: Arc::clone(&c.user_ns),
        ucounts: Arc::clone(ucounts_of(c)),
        real_uid: c.uid,
    }
}

fn clamp(limit: u64) -> i64 {
    ucounts::rlimit::clamp_to_long(limit)
}

/// The processes `cred`'s user_struct counts (before v5.14), read to be
/// compared with `limit` (drawn against it in the views).
fn user_processes(cred: &Cred, limit: u64) -> i64 {
    let user = user_of(cred);
    user.draw_rlimit(RlimitType::Nproc, clamp(limit));
    user.processes.load(Ordering::Relaxed)
}

fn ucounts_nproc(u: &Ucounts) -> i64 {
    u.peek_rlimit(RlimitType::Nproc)
}

/// The rlimits a set-up user namespace records: its creator's
/// RLIMIT_NPROC (none for global root from v5.17).
pub fn setup_rlimits(
    setup: &Setup,
    index: usize,
    patches: &ActivePatches,
) -> [u64; RlimitType::COUNT] {
    let spec = &setup.user_namespaces[index];
    let creator = setup
        .processes
        .creator_nproc
        .get(&spec.name)
        .copied()
        .unwrap_or(RLIM_INFINITY);
    let root_creator = spec.owner == 0 && spec.parent == crate::setup::INIT_USER_NS;
    let recorded = if root_creator && patches.has(Patch::NprocLimitnprocRegression) {
        RLIM_INFINITY
    } else {
        creator
    };
    // The set-up's creator has the rlimits every process starts with.
    let mut rlimits = RlimitType::ALL.map(crate::task::initial_rlimit);
    rlimits[RlimitType::Nproc as usize] = recorded;
    rlimits
}

/// The ids `setresuid`/`setresgid` set: each given id made a kernel id
/// by `make` (EINVAL when unmapped), and, for a caller without the
/// capability, one of the current three (EPERM otherwise); `None` keeps
/// the current one.
fn resolve_res_ids(
    ids: [Option<u32>; 3],
    cur: [u32; 3],
    privileged: bool,
    make: impl Fn(u32) -> Option<u32>,
) -> Result<[u32; 3], Errno> {
    let mut out = cur;
    for (slot, id) in out.iter_mut().zip(ids) {
        if let Some(id) = id {
            *slot = make(id).ok_or(Errno::EINVAL)?;
        }
    }
    let changed = out.iter().zip(ids).filter(|(_, id)| id.is_some());
    if !privileged && changed.clone().any(|(k, _)| !cur.contains(k)) {
        return Err(Errno::EPERM);
    }
    Ok(out)
}

/// `cap_emulate_setxuid` (security/commoncap.c), the capability rules of
/// a uid change, without keep-caps: giving up every root id loses the
/// permitted and effective sets; giving up root as effective uid the
/// effective set; becoming root by effective uid makes the permitted set
/// effective again.
fn cap_emulate_setxuid(new: &mut Cred, old: &Cred) {
    let root = make_kuid(&new.user_ns, 0);
    let is_root = |k: u32| Some(k) == root;
    let any_root = |c: &Cred| [c.uid, c.euid, c.suid].into_iter().any(is_root);
    if any_root(old) && !any_root(new) {
        new.cap_permitted = CapSet::EMPTY;
        new.cap_effective = CapSet::EMPTY;
    }
    if is_root(old.euid) && !is_root(new.euid) {
        new.cap_effective = CapSet::EMPTY;
    }
    if !is_root(old.euid) && is_root(new.euid) {
        new.cap_effective = new.cap_permitted;
    }
}

impl Live {
    fn name_state(&self, h: &mut dyn std::hash::Hasher) {
        let Live {
            committed,
            ns,
            ucounts,
            real_uid,
        } = self;
        h.write_u8(*committed as u8);
        h.write_u32(ns.obj.0);
        h.write_u32(ucounts.obj.0);
        h.write_u32(*real_uid);
    }
}

impl Procs {
    /// Name the process accounting's state (`sim::Execution::name_state`):
    /// the user_structs, the pid to come, the processes counted and
    /// moving, the oracles' findings.
    pub fn name_state(&self, h: &mut dyn std::hash::Hasher) {
        let Procs {
            patches: _,
            signal: _,
            enabled: _,
            ucounts: _,
            userns: _,
            oracles: _,
            users,
            next_pid,
            live,
            moving,
            in_flight,
            changes: _,
            balanced_at: _,
            setuid_over,
            violation,
        } = self;
        let users = users.lock();
        h.write_usize(users.len());
        users.values().for_each(|u| u.name_state(h));
        h.write_u64(next_pid.load(StdOrdering::SeqCst));
        for processes in [&*live.read(), &*moving.lock()] {
            h.write_usize(processes.len());
            for (pid, p) in processes {
                h.write_u64(*pid);
                p.name_state(h);
            }
        }
        h.write_u32(in_flight.load(StdOrdering::SeqCst));
        let setuid_over = setuid_over.lock();
        h.write_usize(setuid_over.len());
        for (pid, over) in setuid_over.iter() {
            h.write_u64(*pid);
            h.write_u8(*over as u8);
        }
        h.write_u8(violation.lock().is_some() as u8);
    }
}
