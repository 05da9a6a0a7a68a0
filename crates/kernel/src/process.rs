//! Processes and credentials as RLIMIT_NPROC sees them: `fork`/`clone`
//! (with and without CLONE_NEWUSER), exit and reaping, `setuid`,
//! `setresuid`, `execve`, `setrlimit(RLIMIT_NPROC)`, and `unshare` of a
//! user namespace.
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
//! **Seam for the user-namespace crate.** User namespaces here are a
//! minimal stand-in ([`UserNs`]): an owner, a parent, at most one uid map
//! range (`inside outside count`), and the functions [`make_kuid`],
//! [`capable`] and [`ns_capable`]. Those are what the integration with
//! `crates/userns` replaces; everything RLIMIT_NPROC decides goes through
//! them.

use crate::catalog::Patch;
use crate::errno::Errno;
use crate::profile::ActivePatches;
use crate::setup::{Op, Setup, INIT_USER_NS};
use parking_lot::Mutex;
use sim::{CostKey, ObjId, Outcome};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering as StdOrdering};
use std::sync::Arc;
use sync::{AtomicI64, Ordering};
use ucounts::{
    dec_rlimit_ucounts, inc_rlimit_ucounts, is_rlimit_overlimit, RlimitCheck, RlimitType,
    UcountType, Ucounts, UcountsNs, UcountsTable, RLIM_INFINITY,
};

pub static COPY_PROCESS: CostKey = CostKey::new(
    "copy_process",
    19_000,
    "fork besides credentials: dup_task_struct, copy_mm, copy_files, wake_up_new_task",
);
pub static EXIT_AND_REAP: CostKey = CostKey::new(
    "exit_and_reap",
    20_000,
    "a child's do_exit, the parent's wait4 and release_task, besides credentials",
);
pub static CRED: CostKey = CostKey::new(
    "cred",
    150,
    "prepare_creds or commit_creds: copying or installing a struct cred",
);
pub static EXECVE: CostKey = CostKey::new(
    "execve",
    50_000,
    "execve besides the PF_NPROC_EXCEEDED check: loading the new image",
);
/// Cost-table entries of this module.
pub static COSTS: &[&CostKey] = &[&COPY_PROCESS, &EXIT_AND_REAP, &CRED, &EXECVE];

/// CLONE_NEWUSER.
const CLONE_NEWUSER: u64 = crate::setup::clone_flags::CLONE_NEWUSER;
/// The deepest user-namespace nesting (`create_user_ns`: EUSERS above 32).
const MAX_USER_NS_LEVEL: u32 = 32;

// ------------------------------------------------------------------ setup

/// A single-range uid map, `inside outside count` as in
/// `/proc/PID/uid_map`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UidMap {
    pub inside: u32,
    pub outside: u32,
    pub count: u32,
}

impl UidMap {
    /// Parse `"0 100000 65536"`.
    pub fn parse(text: &str) -> Result<UidMap, String> {
        let parts: Vec<&str> = text.split_whitespace().collect();
        let nums: Result<Vec<u32>, _> = parts.iter().map(|p| p.parse::<u32>()).collect();
        match nums.as_deref() {
            Ok([inside, outside, count]) if *count > 0 => {
                if inside.checked_add(count - 1).is_none() || outside.checked_add(count - 1).is_none() {
                    return Err(format!("uid map `{text}` runs past uid 4294967295"));
                }
                Ok(UidMap {
                    inside: *inside,
                    outside: *outside,
                    count: *count,
                })
            }
            Ok([_, _, 0]) => Err(format!("uid map `{text}` has a count of 0")),
            _ => Err(format!(
                "`{text}` is not a uid map line `inside outside count` (three non-negative integers)"
            )),
        }
    }
}

/// What processes need from a scenario beyond the common set-up: uid maps
/// and the creator's RLIMIT_NPROC of set-up user namespaces, and each
/// task's RLIMIT_NPROC.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProcessSetup {
    /// By set-up user namespace name.
    pub maps: BTreeMap<String, UidMap>,
    /// The RLIMIT_NPROC its creator had when it made the namespace (by
    /// set-up user namespace name; unlimited when absent).
    pub creator_nproc: BTreeMap<String, u64>,
    /// RLIMIT_NPROC (soft and hard) of each task (by task name; unlimited
    /// when absent).
    pub task_nproc: BTreeMap<String, u64>,
}

/// The RLIMIT_NPROC behaviours of a profile.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NprocPatches {
    pub ucounts: bool,
    pub rlimit_max_check: bool,
    pub enforce_limit: bool,
    pub flag_after_set_user: bool,
    pub real_uid: bool,
    pub limitnproc_regression: bool,
    pub rfc_2016: bool,
}

impl NprocPatches {
    pub fn from_active(p: &ActivePatches) -> Self {
        NprocPatches {
            ucounts: p.has(Patch::NprocUcounts),
            rlimit_max_check: p.has(Patch::UcountsRlimitMaxCheck),
            enforce_limit: p.has(Patch::NprocEnforceLimit),
            flag_after_set_user: p.has(Patch::NprocFlagAfterSetUser),
            real_uid: p.has(Patch::NprocUcountsRealUid),
            limitnproc_regression: p.has(Patch::NprocLimitnprocRegression),
            rfc_2016: p.has(Patch::NprocPerUsernsRfc2016),
        }
    }

    fn check(&self) -> RlimitCheck {
        if self.rlimit_max_check {
            RlimitCheck::NamespaceBelow
        } else {
            RlimitCheck::OwnNamespace
        }
    }

    /// Is NPROC counted in ucounts (v5.14, or the RFC)?
    fn in_ucounts(&self) -> bool {
        self.ucounts || self.rfc_2016
    }
}

// ------------------------------------------------- user namespaces (seam)

/// A user namespace as RLIMIT_NPROC sees it (seam: see the module docs).
pub struct UserNs {
    pub name: String,
    /// The ucounts side: limits, recorded rlimits, the parent charge.
    pub ns: Arc<UcountsNs>,
    pub parent: Option<Arc<UserNs>>,
    /// kuid of the creator's euid.
    pub owner: u32,
    pub map: Option<UidMap>,
    /// Made by a task (freed with its last credential), not at set-up.
    runtime: bool,
    refs: AtomicU64,
    obj: ObjId,
}

impl UserNs {
    pub fn is_init(&self) -> bool {
        self.parent.is_none()
    }
}

/// `make_kuid(ns, uid)`: the kuid `uid` of `ns` stands for. The initial
/// namespace maps every uid to itself; a namespace without a map maps
/// none.
pub fn make_kuid(ns: &UserNs, uid: u32) -> Option<u32> {
    if ns.is_init() {
        return Some(uid);
    }
    let m = ns.map?;
    let inner =
        (uid >= m.inside && uid - m.inside < m.count).then(|| m.outside + (uid - m.inside))?;
    make_kuid(ns.parent.as_ref()?, inner)
}

/// `from_kuid`: the uid of `ns` that `kuid` appears as, if mapped.
pub fn from_kuid(ns: &UserNs, kuid: u32) -> Option<u32> {
    if ns.is_init() {
        return Some(kuid);
    }
    let outer = from_kuid(ns.parent.as_ref()?, kuid)?;
    let m = ns.map?;
    (outer >= m.outside && outer - m.outside < m.count).then(|| m.inside + (outer - m.outside))
}

/// The capabilities the model tells apart: the ones RLIMIT_NPROC and the
/// `max_*` sysctls ask about. The model gives a credential all of them or
/// none (root or not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cap {
    SysResource,
    SysAdmin,
    Setuid,
}

/// `ns_capable(ns, cap)` for `cred` (`cap_capable`'s walk): full
/// capabilities in its own namespace if it has them, and in any
/// descendant namespace whose owner (or whose ancestor's owner, below the
/// credential's namespace) is the credential's euid.
pub fn ns_capable(cred: &Cred, target: &UserNs, _cap: Cap) -> bool {
    let mut ns = target;
    loop {
        if std::ptr::eq(Arc::as_ptr(&cred.user_ns), ns) {
            return cred.caps;
        }
        if ns.ns.level <= cred.user_ns.ns.level {
            return false;
        }
        let Some(parent) = ns.parent.as_deref() else {
            return false;
        };
        if std::ptr::eq(Arc::as_ptr(&cred.user_ns), parent) && ns.owner == cred.euid {
            return true;
        }
        ns = parent;
    }
}

/// `capable(cap)`: capable in the initial user namespace.
pub fn capable(cred: &Cred, init: &UserNs, cap: Cap) -> bool {
    ns_capable(cred, init, cap)
}

// -------------------------------------------------------- credentials

/// `struct user_struct`: the per-kuid process count before v5.14.
pub struct UserStruct {
    pub uid: u32,
    processes: AtomicI64,
}

impl UserStruct {
    pub fn peek_processes(&self) -> i64 {
        self.processes.peek()
    }
}

/// `struct cred`, reduced to what RLIMIT_NPROC uses. Each field that is a
/// reference is one (`get_*` when copied, `put_*` in [`Procs::put_cred`]).
#[derive(Clone)]
pub struct Cred {
    pub uid: u32,
    pub euid: u32,
    pub suid: u32,
    pub user_ns: Arc<UserNs>,
    /// Full effective capabilities in `user_ns` (else none).
    pub caps: bool,
    /// `cred->ucounts`: (user_ns, uid), keyed by the euid before v5.17.
    pub ucounts: Arc<Ucounts>,
    /// `cred->user`: the user_struct of the real uid.
    pub user: Arc<UserStruct>,
}

/// A process of the model: a scenario task, or a child it forked, which
/// stays alive until its parent's `exit()`.
struct Task {
    pid: u64,
    cred: Cred,
    /// RLIMIT_NPROC (soft, hard).
    rlimit: (u64, u64),
    /// PF_NPROC_EXCEEDED.
    nproc_exceeded: bool,
    /// Live children, newest last.
    children: Vec<Task>,
}

/// One process as the checkers see it.
#[derive(Clone)]
struct Live {
    /// The fork that made it has succeeded (else it is counted but may
    /// still be refused).
    committed: bool,
    ns: Arc<UserNs>,
    /// Its credential's ucounts (what it must be counted in).
    ucounts: Arc<Ucounts>,
    real_uid: u32,
}

/// The process side of a simulated machine.
pub struct Procs {
    patches: NprocPatches,
    ucounts: Arc<UcountsTable>,
    init_ns: Arc<UserNs>,
    user_ns: BTreeMap<String, Arc<UserNs>>,
    users: Mutex<BTreeMap<u32, Arc<UserStruct>>>,
    tasks: BTreeMap<String, Mutex<Task>>,
    next_pid: AtomicU64,
    next_ns_id: AtomicU32,
    /// Live processes, for the checkers.
    live: Mutex<BTreeMap<u64, Live>>,
    /// Namespaces made by tasks and still alive, for the checkers.
    runtime_ns: Mutex<Vec<Arc<UserNs>>>,
    /// Operations half-way through changing counts.
    in_flight: AtomicU32,
    /// `nproc.execve_enforced`: by pid, whether the last set*uid moved the
    /// task to a user already over its limit.
    setuid_over: Mutex<BTreeMap<u64, bool>>,
    violation: Mutex<Option<(String, String)>>,
    /// Which oracles the run asked for (the others cost nothing).
    oracles: Mutex<Vec<String>>,
}

/// Why `copy_process` failed.
enum ForkError {
    /// EAGAIN from the RLIMIT_NPROC check.
    Nproc,
    Other(Errno),
}

impl From<Errno> for ForkError {
    fn from(e: Errno) -> Self {
        ForkError::Other(e)
    }
}

struct Flight<'a>(&'a AtomicU32);

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, StdOrdering::SeqCst);
    }
}

impl Procs {
    /// Build the processes of `setup`: user namespaces over the set-up
    /// `ucounts_ns` (by name), one counted task per task instance.
    pub fn new(
        setup: &Setup,
        patches: &ActivePatches,
        ucounts: &Arc<UcountsTable>,
        ucounts_ns: &BTreeMap<String, Arc<UcountsNs>>,
        instances: &[(String, String)],
    ) -> Arc<Procs> {
        let user_ns = setup_user_namespaces(setup, ucounts_ns);
        let mut procs = Procs {
            patches: NprocPatches::from_active(patches),
            ucounts: Arc::clone(ucounts),
            init_ns: Arc::clone(&user_ns[INIT_USER_NS]),
            user_ns,
            users: Mutex::new(BTreeMap::new()),
            tasks: BTreeMap::new(),
            next_pid: AtomicU64::new(1),
            next_ns_id: AtomicU32::new(setup.user_namespaces.len() as u32 + 1),
            live: Mutex::new(BTreeMap::new()),
            runtime_ns: Mutex::new(Vec::new()),
            in_flight: AtomicU32::new(0),
            setuid_over: Mutex::new(BTreeMap::new()),
            violation: Mutex::new(None),
            oracles: Mutex::new(Vec::new()),
        };
        if !models_processes(setup) {
            // Nothing to account: the run stays exactly what it was
            // without this module (no objects, no scheduling points).
            return Arc::new(procs);
        }
        for (instance, task_name) in instances {
            let spec = setup.tasks.iter().find(|t| &t.name == task_name);
            let Some(spec) = spec else { continue };
            let task = procs.setup_task(spec, setup);
            procs.tasks.insert(instance.clone(), Mutex::new(task));
        }
        Arc::new(procs)
    }

    fn setup_task(&self, spec: &crate::setup::TaskSpec, setup: &Setup) -> Task {
        let ns = Arc::clone(&self.user_ns[&spec.userns]);
        let kuid = spec.uid;
        let root = from_kuid(&ns, kuid) == Some(0);
        // A set-up task in a namespace without a map is its creator having
        // entered it (as `unshare -U` leaves it): all capabilities there.
        let caps = root || (!ns.is_init() && ns.map.is_none() && ns.owner == kuid);
        let ucounts = self
            .ucounts
            .alloc_ucounts(&ns.ns, kuid)
            .expect("set-up ucounts");
        get_user_ns(&ns);
        let cred = Cred {
            uid: kuid,
            euid: kuid,
            suid: kuid,
            user_ns: ns,
            caps,
            ucounts,
            user: self.alloc_uid(kuid),
        };
        let limit = setup
            .processes
            .task_nproc
            .get(&spec.name)
            .copied()
            .unwrap_or(RLIM_INFINITY);
        let pid = self.next_pid.fetch_add(1, StdOrdering::SeqCst);
        self.count_process(&cred);
        self.live.lock().insert(pid, live_of(&cred, true));
        Task {
            pid,
            cred,
            rlimit: (limit, limit),
            nproc_exceeded: false,
            children: Vec::new(),
        }
    }

    /// `alloc_uid`: the user_struct of `kuid` (kept for the whole run).
    fn alloc_uid(&self, kuid: u32) -> Arc<UserStruct> {
        let mut users = self.users.lock();
        Arc::clone(users.entry(kuid).or_insert_with(|| {
            Arc::new(UserStruct {
                uid: kuid,
                processes: AtomicI64::new("user_struct.processes", 0),
            })
        }))
    }

    fn flight(&self) -> Flight<'_> {
        self.in_flight.fetch_add(1, StdOrdering::SeqCst);
        Flight(&self.in_flight)
    }

    /// The machine's initial user namespace.
    pub fn init_user_ns(&self) -> &Arc<UserNs> {
        &self.init_ns
    }

    /// Run one process operation of task `name`; `None` if `op` is not
    /// one of this module's.
    pub fn do_op(&self, name: &str, op: &Op) -> Option<Result<(), Errno>> {
        let task = self.tasks.get(name)?;
        let mut t = task.lock();
        Some(match op {
            Op::Fork {} => self.fork(&mut t, 0),
            Op::Clone { flags } => self.fork(&mut t, *flags),
            Op::Exit {} => self.exit_child(&mut t),
            Op::Setuid { uid } => self.setuid(&mut t, *uid),
            Op::Setresuid { ruid, euid, suid } => self.setresuid(&mut t, [*ruid, *euid, *suid]),
            Op::Execve {} => self.execve(&mut t),
            Op::Setrlimit { limit, .. } => self.setrlimit_nproc(&mut t, *limit),
            _ => return None,
        })
    }

    // ----------------------------------------------------------- fork

    fn fork(&self, parent: &mut Task, flags: u64) -> Result<(), Errno> {
        sim::point("fork", ObjId::NONE, &crate::world::SYSCALL);
        match self.copy_process(parent, flags) {
            Ok(child) => {
                sim::note("fork", ObjId::NONE, child.pid as i64);
                parent.children.push(child);
                Ok(())
            }
            Err(ForkError::Nproc) => {
                sim::note("fork: RLIMIT_NPROC", ObjId::NONE, Errno::EAGAIN.as_return());
                Err(Errno::EAGAIN)
            }
            Err(ForkError::Other(e)) => {
                sim::note("fork", ObjId::NONE, e.as_return());
                Err(e)
            }
        }
    }

    /// `copy_process`, as far as credentials and RLIMIT_NPROC go.
    fn copy_process(&self, parent: &mut Task, flags: u64) -> Result<Task, ForkError> {
        sim::point("copy_process", ObjId::NONE, &COPY_PROCESS);
        let _flight = self.flight();
        let limit = parent.rlimit.0;
        if !self.patches.enforce_limit
            && self.over_before_copy(&parent.cred, limit)
            && !self.exempt(&parent.cred)
        {
            self.check_isolated(parent, 1);
            return Err(ForkError::Nproc);
        }
        let pid = self.next_pid.fetch_add(1, StdOrdering::SeqCst);
        let cred = self.copy_creds(&parent.cred, flags, limit, pid)?;
        if self.patches.enforce_limit
            && self.is_overlimit(&cred.ucounts, limit)
            && !self.exempt(&parent.cred)
        {
            self.check_isolated(parent, 0);
            self.uncount_process(&cred);
            self.live.lock().remove(&pid);
            self.put_cred(cred);
            return Err(ForkError::Nproc);
        }
        parent.nproc_exceeded = false;
        self.check_within_limits(&cred, limit, &parent.cred);
        if let Some(l) = self.live.lock().get_mut(&pid) {
            l.committed = true;
        }
        Ok(Task {
            pid,
            cred,
            rlimit: parent.rlimit,
            nproc_exceeded: false,
            children: Vec::new(),
        })
    }

    /// The check made before the child is counted (before v5.17).
    fn over_before_copy(&self, cred: &Cred, limit: u64) -> bool {
        if self.patches.ucounts {
            return self.is_overlimit(&cred.ucounts, limit);
        }
        if self.patches.rfc_2016 {
            // The RFC: the caller's own (namespace, uid) count only.
            return ucounts_nproc(&cred.ucounts) >= clamp(limit);
        }
        cred.user.processes.load(Ordering::Relaxed) >= clamp(limit)
    }

    fn is_overlimit(&self, u: &Arc<Ucounts>, limit: u64) -> bool {
        is_rlimit_overlimit(u, RlimitType::Nproc, limit, self.patches.check())
    }

    /// The RLIMIT_NPROC exemptions: the initial user (real kuid 0), or
    /// CAP_SYS_RESOURCE or CAP_SYS_ADMIN in the initial user namespace.
    fn exempt(&self, cred: &Cred) -> bool {
        cred.user.uid == 0
            || capable(cred, &self.init_ns, Cap::SysResource)
            || capable(cred, &self.init_ns, Cap::SysAdmin)
    }

    /// `copy_creds`: the child's credential (a new user namespace with
    /// CLONE_NEWUSER), counted as one more process of its user.
    fn copy_creds(
        &self,
        old: &Cred,
        flags: u64,
        creator_nproc: u64,
        pid: u64,
    ) -> Result<Cred, Errno> {
        sim::point("prepare_creds", ObjId::NONE, &CRED);
        let mut new = self.get_cred(old);
        if flags & CLONE_NEWUSER != 0 {
            if let Err(e) = self.create_user_ns(&mut new, creator_nproc) {
                self.put_cred(new);
                return Err(e);
            }
            if let Err(e) = self.set_cred_ucounts(&mut new, old) {
                self.put_cred(new);
                return Err(e);
            }
        }
        // Known to the checkers before the count starts, so they never see
        // a charge they cannot attribute.
        self.live.lock().insert(pid, live_of(&new, false));
        self.count_process(&new);
        Ok(new)
    }

    /// Count one process of `cred`'s user.
    fn count_process(&self, cred: &Cred) {
        if self.patches.in_ucounts() {
            inc_rlimit_ucounts(
                &self.ucounts,
                &cred.ucounts,
                RlimitType::Nproc,
                1,
                self.patches.check(),
            );
        } else {
            cred.user.processes.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn uncount_process(&self, cred: &Cred) {
        if self.patches.in_ucounts() {
            dec_rlimit_ucounts(&self.ucounts, &cred.ucounts, RlimitType::Nproc, 1);
        } else {
            cred.user.processes.fetch_sub(1, Ordering::Relaxed);
        }
    }

    // ------------------------------------------------- user namespaces

    /// `create_user_ns`: charge the new namespace to (parent, euid) up the
    /// tree, record the creator's RLIMIT_NPROC, and give `new` all
    /// capabilities in it.
    fn create_user_ns(&self, new: &mut Cred, creator_nproc: u64) -> Result<(), Errno> {
        let parent = Arc::clone(&new.user_ns);
        if parent.ns.level >= MAX_USER_NS_LEVEL {
            return Err(Errno::EUSERS);
        }
        let charge = self
            .ucounts
            .inc_ucount(&parent.ns, new.euid, UcountType::UserNamespaces)
            .ok_or(Errno::ENOSPC)?;
        let mut rlimits = [RLIM_INFINITY; RlimitType::COUNT];
        rlimits[RlimitType::Nproc as usize] = self.enforced_nproc_rlimit(new, creator_nproc);
        let id = self.next_ns_id.fetch_add(1, StdOrdering::SeqCst);
        let name = format!("userns{id}");
        let ns = UcountsNs::child_with_rlimits(id, &name, &parent.ns, Some(charge), rlimits);
        let user_ns = Arc::new(UserNs {
            name,
            ns,
            parent: Some(parent),
            owner: new.euid,
            map: None,
            runtime: true,
            refs: AtomicU64::new(1),
            obj: sim::new_object("user_ns"),
        });
        self.runtime_ns.lock().push(Arc::clone(&user_ns));
        let old = std::mem::replace(&mut new.user_ns, user_ns);
        self.put_user_ns(&old);
        new.caps = true;
        Ok(())
    }

    /// `enforced_nproc_rlimit` (v5.17): global root records no limit.
    fn enforced_nproc_rlimit(&self, cred: &Cred, rlimit: u64) -> u64 {
        if self.patches.limitnproc_regression && cred.uid == 0 && cred.user_ns.is_init() {
            RLIM_INFINITY
        } else {
            rlimit
        }
    }

    /// `set_cred_ucounts`: when the real user or the namespace changed
    /// from `old`, point `new` at the ucounts of (its namespace, its uid):
    /// the real uid from v5.17, the effective one before.
    fn set_cred_ucounts(&self, new: &mut Cred, old: &Cred) -> Result<(), Errno> {
        if new.uid == old.uid && new.user_ns.ns.id == old.user_ns.ns.id {
            return Ok(());
        }
        let key = if self.patches.real_uid || !self.patches.ucounts {
            new.uid
        } else {
            new.euid
        };
        if new.ucounts.ns.id == new.user_ns.ns.id && new.ucounts.uid == key {
            return Ok(());
        }
        let fresh = self
            .ucounts
            .alloc_ucounts(&new.user_ns.ns, key)
            .ok_or(Errno::EAGAIN)?;
        let old = std::mem::replace(&mut new.ucounts, fresh);
        self.ucounts.put_ucounts(&old);
        Ok(())
    }

    /// `put_user_ns`: the last reference to a namespace a task made frees
    /// it (`free_user_ns`): its UCOUNT_USER_NAMESPACES charge goes, and
    /// the reference on its parent.
    fn put_user_ns(&self, ns: &Arc<UserNs>) {
        if !ns.runtime {
            return;
        }
        sim::touch(ns.obj, "put_user_ns");
        if ns.refs.fetch_sub(1, StdOrdering::SeqCst) != 1 {
            return;
        }
        self.runtime_ns.lock().retain(|n| !Arc::ptr_eq(n, ns));
        if let Some(charge) = &ns.ns.ucounts {
            self.ucounts.dec_ucount(charge, UcountType::UserNamespaces);
        }
        sim::free_object(ns.obj);
        if let Some(parent) = &ns.parent {
            self.put_user_ns(parent);
        }
    }

    /// `unshare(CLONE_NEWUSER)` of task `name`: a new user namespace for
    /// the task itself, its count moved to its new ucounts by
    /// `commit_creds`.
    pub fn unshare_user(&self, name: &str) -> Option<Result<(), Errno>> {
        let task = self.tasks.get(name)?;
        let mut t = task.lock();
        sim::point("unshare_userns", ObjId::NONE, &CRED);
        let _flight = self.flight();
        let mut new = self.get_cred(&t.cred);
        let limit = t.rlimit.0;
        if let Err(e) = self.create_user_ns(&mut new, limit) {
            self.put_cred(new);
            return Some(Err(e));
        }
        if let Err(e) = self.set_cred_ucounts(&mut new, &t.cred) {
            self.put_cred(new);
            return Some(Err(e));
        }
        self.commit_creds(&mut t, new);
        Some(Ok(()))
    }

    // ------------------------------------------------- credential refs

    fn get_cred(&self, c: &Cred) -> Cred {
        let ucounts = self
            .ucounts
            .get_ucounts(&c.ucounts)
            .expect("a live credential's ucounts");
        get_user_ns(&c.user_ns);
        Cred {
            ucounts,
            ..c.clone()
        }
    }

    /// `put_cred`: drop the credential's references.
    pub fn put_cred(&self, c: Cred) {
        self.ucounts.put_ucounts(&c.ucounts);
        self.put_user_ns(&c.user_ns);
    }

    /// `commit_creds`: install `new`; when the real user or the namespace
    /// changes the process's count moves from the old ucounts to the new.
    fn commit_creds(&self, t: &mut Task, new: Cred) {
        sim::point("commit_creds", ObjId::NONE, &CRED);
        let moved = new.user.uid != t.cred.user.uid || new.user_ns.ns.id != t.cred.user_ns.ns.id;
        if moved {
            self.count_process(&new);
        }
        let old = std::mem::replace(&mut t.cred, new);
        if moved {
            self.uncount_process(&old);
        }
        self.live.lock().insert(t.pid, live_of(&t.cred, true));
        self.put_cred(old);
    }

    // ----------------------------------------------------------- exit

    /// The newest child exits and the task reaps it (`release_task`
    /// uncounts it and drops its credential).
    fn exit_child(&self, t: &mut Task) -> Result<(), Errno> {
        sim::point("wait4", ObjId::NONE, &crate::world::SYSCALL);
        let Some(child) = t.children.pop() else {
            return Err(Errno::ECHILD);
        };
        self.release(child);
        Ok(())
    }

    fn release(&self, mut t: Task) {
        for c in std::mem::take(&mut t.children) {
            self.release(c);
        }
        sim::point("release_task", ObjId::NONE, &EXIT_AND_REAP);
        let _flight = self.flight();
        // Exiting: no longer a committed process for the limit checkers,
        // still counted (and so still an explanation for a refusal).
        if let Some(l) = self.live.lock().get_mut(&t.pid) {
            l.committed = false;
        }
        self.uncount_process(&t.cred);
        self.live.lock().remove(&t.pid);
        self.put_cred(t.cred);
    }

    /// Task `name` exits: its children first, then itself.
    pub fn exit_task(&self, name: &str) {
        let Some(task) = self.tasks.get(name) else {
            return;
        };
        let mut guard = task.lock();
        let placeholder = Task {
            pid: 0,
            cred: guard.cred.clone(),
            rlimit: guard.rlimit,
            nproc_exceeded: false,
            children: Vec::new(),
        };
        let t = std::mem::replace(&mut *guard, placeholder);
        drop(guard);
        self.release(t);
    }

    // ---------------------------------------------------------- set*uid

    /// `setuid(uid)`: with CAP_SETUID in the namespace, all three uids;
    /// else the euid, to the real or saved uid only.
    fn setuid(&self, t: &mut Task, uid: u32) -> Result<(), Errno> {
        sim::point("setuid", ObjId::NONE, &crate::world::SYSCALL);
        let kuid = make_kuid(&t.cred.user_ns, uid).ok_or(Errno::EINVAL)?;
        let privileged = ns_capable(&t.cred, &t.cred.user_ns, Cap::Setuid);
        let (r, s) = (t.cred.uid, t.cred.suid);
        let ids = if privileged {
            [kuid, kuid, kuid]
        } else if kuid == r || kuid == s {
            [r, kuid, s]
        } else {
            return Err(Errno::EPERM);
        };
        self.change_uids(t, ids)
    }

    /// `setresuid(ruid, euid, suid)`: each must be one of the current three
    /// unless the caller has CAP_SETUID in its namespace.
    fn setresuid(&self, t: &mut Task, ids: [u32; 3]) -> Result<(), Errno> {
        sim::point("setresuid", ObjId::NONE, &crate::world::SYSCALL);
        let mut kuids = [0; 3];
        for (k, id) in kuids.iter_mut().zip(ids) {
            *k = make_kuid(&t.cred.user_ns, id).ok_or(Errno::EINVAL)?;
        }
        let cur = [t.cred.uid, t.cred.euid, t.cred.suid];
        if !ns_capable(&t.cred, &t.cred.user_ns, Cap::Setuid)
            && kuids.iter().any(|k| !cur.contains(k))
        {
            return Err(Errno::EPERM);
        }
        self.change_uids(t, kuids)
    }

    /// The common tail of set*uid: `set_user` when the real uid changes,
    /// the capability rules of `cap_task_fix_setuid`, `set_cred_ucounts`,
    /// `flag_nproc_exceeded` (v5.17) and `commit_creds`.
    fn change_uids(&self, t: &mut Task, [r, e, s]: [u32; 3]) -> Result<(), Errno> {
        let _flight = self.flight();
        sim::point("prepare_creds", ObjId::NONE, &CRED);
        let mut new = self.get_cred(&t.cred);
        let root = make_kuid(&new.user_ns, 0);
        let was_root = [new.uid, new.euid, new.suid]
            .iter()
            .any(|k| Some(*k) == root);
        (new.uid, new.euid, new.suid) = (r, e, s);
        let now_root = Some(new.euid) == root;
        if now_root {
            new.caps = true;
        } else if was_root && t.cred.euid != new.euid {
            new.caps = false;
        }
        if new.uid != t.cred.uid {
            new.user = self.alloc_uid(new.uid);
            if !self.patches.flag_after_set_user {
                t.nproc_exceeded = self.set_user_flag(&new, t.rlimit.0);
            }
        }
        if self.patches.ucounts || self.patches.rfc_2016 {
            if let Err(err) = self.set_cred_ucounts(&mut new, &t.cred) {
                self.put_cred(new);
                return Err(err);
            }
        }
        if self.patches.flag_after_set_user {
            self.flag_nproc_exceeded(t, &new);
        }
        self.note_setuid_oracle(t, &new);
        self.commit_creds(t, new);
        Ok(())
    }

    /// `set_user`'s PF_NPROC_EXCEEDED decision before v5.17: the new user
    /// is over its limit (before v5.14 by its user_struct; from v5.14 by
    /// `new->ucounts`, which at that point are still the old ones).
    fn set_user_flag(&self, new: &Cred, limit: u64) -> bool {
        if new.user.uid == 0 {
            return false;
        }
        if self.patches.in_ucounts() {
            self.is_overlimit(&new.ucounts, limit)
        } else {
            new.user.processes.load(Ordering::Relaxed) >= clamp(limit)
        }
    }

    /// `flag_nproc_exceeded` (v5.17): decided on the new ucounts, after
    /// `set_cred_ucounts`; nothing when they did not change.
    fn flag_nproc_exceeded(&self, t: &mut Task, new: &Cred) {
        if Arc::ptr_eq(&new.ucounts, &t.cred.ucounts) {
            return;
        }
        t.nproc_exceeded = self.is_overlimit(&new.ucounts, t.rlimit.0) && new.user.uid != 0;
    }

    // ----------------------------------------------------------- execve

    /// `execve`: refused with EAGAIN when set*uid flagged the process and
    /// its user is still over the limit; capabilities are recomputed
    /// (root keeps them, anyone else loses them).
    fn execve(&self, t: &mut Task) -> Result<(), Errno> {
        sim::point("execve", ObjId::NONE, &crate::world::SYSCALL);
        let limit = t.rlimit.0;
        if t.nproc_exceeded {
            let over = if self.patches.in_ucounts() {
                self.is_overlimit(&t.cred.ucounts, limit)
            } else {
                t.cred.user.processes.load(Ordering::Relaxed) > clamp(limit)
            };
            if over {
                return Err(Errno::EAGAIN);
            }
        }
        t.nproc_exceeded = false;
        self.check_execve(t);
        sim::point("exec_binprm", ObjId::NONE, &EXECVE);
        let root = make_kuid(&t.cred.user_ns, 0);
        t.cred.caps = Some(t.cred.euid) == root;
        Ok(())
    }

    // --------------------------------------------------------- setrlimit

    /// `setrlimit(RLIMIT_NPROC, limit)` (soft and hard): raising the hard
    /// limit needs CAP_SYS_RESOURCE in the initial user namespace.
    fn setrlimit_nproc(&self, t: &mut Task, limit: u64) -> Result<(), Errno> {
        sim::point("setrlimit", ObjId::NONE, &crate::world::SYSCALL);
        if limit > t.rlimit.1 && !capable(&t.cred, &self.init_ns, Cap::SysResource) {
            return Err(Errno::EPERM);
        }
        t.rlimit = (limit, limit);
        Ok(())
    }

    /// May task `name` write the `max_*` sysctls of its own user namespace
    /// (CAP_SYS_RESOURCE there)?
    pub fn may_write_max_sysctl(&self, name: &str) -> Option<bool> {
        let t = self.tasks.get(name)?.lock();
        Some(ns_capable(&t.cred, &t.cred.user_ns, Cap::SysResource))
    }

    // ---------------------------------------------------------- oracles

    fn wants(&self, invariant: &str) -> bool {
        self.oracles.lock().iter().any(|o| o == invariant)
    }

    fn fail(&self, invariant: &str, detail: String) {
        let mut v = self.violation.lock();
        if v.is_none() {
            *v = Some((invariant.to_string(), detail));
        }
    }

    /// `nproc.isolated`: a refused fork must be explained by the caller's
    /// own processes: those of its uid in its namespace, its ancestors and
    /// its descendants, never those in a sibling branch of the tree,
    /// against the smallest limit on its chain.
    /// `uncounted` is 1 when the refused child is not counted yet.
    fn check_isolated(&self, t: &Task, uncounted: u64) {
        if !self.wants("nproc.isolated") {
            return;
        }
        let ns = &t.cred.user_ns;
        let own = self
            .live
            .lock()
            .values()
            .filter(|l| {
                l.real_uid == t.cred.uid
                    && (l.ns.ns.is_same_or_descendant_of(&ns.ns)
                        || ns.ns.is_same_or_descendant_of(&l.ns.ns))
            })
            .count() as u64
            + uncounted;
        // The smallest maximum on the caller's chain: its rlimit, or a
        // creator's recorded one above it.
        let limit = if self.patches.in_ucounts() {
            ucounts::rlimit::level_maxima(
                &t.cred.ucounts,
                RlimitType::Nproc,
                t.rlimit.0,
                RlimitCheck::NamespaceBelow,
            )
            .into_iter()
            .min()
            .map_or(t.rlimit.0, |m| u64::try_from(m).unwrap_or(0))
        } else {
            t.rlimit.0
        };
        if own <= limit {
            self.fail(
                "nproc.isolated",
                format!(
                    "fork refused with EAGAIN in user namespace {} for kuid {}, although with the new process its processes in that namespace, its ancestors and descendants would number {own}, within the limit of {limit}: the rest of the count comes from sibling namespaces",
                    ns.name, t.cred.uid
                ),
            );
        }
    }

    /// `ucounts.within_limits` after a successful, non-exempt fork: no
    /// level holds more live processes than its maximum (the caller's
    /// rlimit at the leaf, the rlimit recorded below at each ancestor).
    fn check_within_limits(&self, child: &Cred, limit: u64, parent: &Cred) {
        if !self.wants("ucounts.within_limits") || self.exempt(parent) {
            return;
        }
        let live = self.live.lock();
        let count_at = |level: &Ucounts| {
            1 + live
                .values()
                .filter(|l| l.committed)
                .filter(|l| {
                    ucounts::levels(&l.ucounts)
                        .iter()
                        .any(|u| std::ptr::eq(&**u, level))
                })
                .count() as i64
        };
        if !self.patches.in_ucounts() {
            let n = 1 + live
                .values()
                .filter(|l| l.committed && l.real_uid == child.uid)
                .count() as u64;
            if n > limit {
                self.fail(
                    "ucounts.within_limits",
                    format!(
                        "kuid {} has {n} processes after a fork, above RLIMIT_NPROC {limit}",
                        child.uid
                    ),
                );
            }
            return;
        }
        let maxima = ucounts::rlimit::level_maxima(
            &child.ucounts,
            RlimitType::Nproc,
            limit,
            RlimitCheck::NamespaceBelow,
        );
        for (u, max) in ucounts::levels(&child.ucounts).iter().zip(maxima) {
            let n = count_at(u);
            if n > max {
                self.fail(
                    "ucounts.within_limits",
                    format!(
                        "after a fork, {n} live processes are counted at (user namespace {}, kuid {}), above its maximum {max}",
                        u.ns.name, u.uid
                    ),
                );
                return;
            }
        }
    }

    /// Remember, for `nproc.execve_enforced`, whether the set*uid moved the
    /// task to a (non-root) user already at or over its limit.
    fn note_setuid_oracle(&self, t: &mut Task, new: &Cred) {
        if !self.wants("nproc.execve_enforced") || new.uid == t.cred.uid || new.uid == 0 {
            return;
        }
        let others = self
            .live
            .lock()
            .iter()
            .filter(|(pid, l)| {
                **pid != t.pid
                    && l.committed
                    && l.real_uid == new.uid
                    && l.ns.ns.id == new.user_ns.ns.id
            })
            .count() as u64;
        self.setuid_over.lock().insert(t.pid, others > t.rlimit.0);
    }

    /// `nproc.execve_enforced` at a successful execve: the task was moved
    /// to an over-limit user, and that user (the task included) is still
    /// over the limit now.
    fn check_execve(&self, t: &Task) {
        let armed = self.setuid_over.lock().remove(&t.pid).unwrap_or(false);
        let now = self
            .live
            .lock()
            .values()
            .filter(|l| {
                l.committed && l.real_uid == t.cred.uid && l.ns.ns.id == t.cred.user_ns.ns.id
            })
            .count() as u64;
        if armed && now > t.rlimit.0 {
            self.fail(
                "nproc.execve_enforced",
                format!(
                    "execve succeeded after set*uid to kuid {}, which was over RLIMIT_NPROC {}",
                    t.cred.uid, t.rlimit.0
                ),
            );
        }
    }

    /// The first violation an oracle found, if any.
    pub fn take_violation(&self) -> Option<Outcome> {
        self.violation
            .lock()
            .take()
            .map(|(invariant, detail)| Outcome::Violation { invariant, detail })
    }

    /// `nproc.real_uid`: every live process is counted for its real uid
    /// (RLIMIT_NPROC limits a real user's processes).
    pub fn check_real_uid(&self) -> Option<String> {
        if !self.patches.in_ucounts() {
            return None;
        }
        let live = self.live.lock();
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
        let live = self.live.lock();
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
        for u in self.ucounts.ledger.hashed_entries() {
            let want = live
                .values()
                .filter(|l| {
                    ucounts::levels(&l.ucounts)
                        .iter()
                        .any(|x| Arc::ptr_eq(x, &u))
                })
                .count() as i64;
            let have = u.peek_rlimit(RlimitType::Nproc);
            if want != have {
                return Some(format!(
                    "UCOUNT_RLIMIT_NPROC of kuid {} in user namespace {} is {have}, but {want} live processes are counted through it",
                    u.uid, u.ns.name
                ));
            }
        }
        None
    }

    /// `ucounts.no_leak` at the end: every hashed entry is referenced by
    /// exactly the holders the model knows (live credentials and live
    /// namespaces' parent charges); an entry nobody holds is freed.
    pub fn check_no_leak(&self) -> Option<String> {
        let mut holders: BTreeMap<(u32, u32), i64> = BTreeMap::new();
        for t in self.tasks.values() {
            let t = t.lock();
            if t.pid != 0 {
                *holders.entry(key(&t.cred.ucounts)).or_default() += 1;
            }
        }
        for ns in self.user_ns.values().chain(self.runtime_ns.lock().iter()) {
            if let Some(u) = &ns.ns.ucounts {
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
        self.live.lock().len()
    }

    /// What a task's denied operations must leave as it was: its uids,
    /// RLIMIT_NPROC and how many children it has (`None` for a task the model does not
    /// track).
    pub fn peek_task(&self, name: &str) -> Option<String> {
        let t = self.tasks.get(name)?.lock();
        let c = &t.cred;
        Some(format!(
            "uids {}/{}/{}, rlimit {:?}, {} children",
            c.uid,
            c.euid,
            c.suid,
            t.rlimit,
            t.children.len()
        ))
    }
}

/// Does `setup` use processes: a process operation, a user namespace made
/// by a task, a sysctl write (its permission depends on the credential), a
/// uid map or an RLIMIT_NPROC?
pub fn models_processes(setup: &Setup) -> bool {
    let process_op = |op: &Op| {
        matches!(
            op,
            Op::Fork {}
                | Op::Clone { .. }
                | Op::Exit {}
                | Op::Setuid { .. }
                | Op::Setresuid { .. }
                | Op::Execve {}
                | Op::Setrlimit { .. }
        ) || matches!(op, Op::SysctlWrite { .. })
    };
    setup.processes != ProcessSetup::default()
        || setup.tasks.iter().any(|t| t.ops.iter().any(process_op))
}

fn key(u: &Ucounts) -> (u32, u32) {
    (u.ns.id, u.uid)
}

fn live_of(c: &Cred, committed: bool) -> Live {
    Live {
        committed,
        ns: Arc::clone(&c.user_ns),
        ucounts: Arc::clone(&c.ucounts),
        real_uid: c.uid,
    }
}

fn get_user_ns(ns: &UserNs) {
    if ns.runtime {
        sim::touch(ns.obj, "get_user_ns");
        ns.refs.fetch_add(1, StdOrdering::SeqCst);
    }
}

fn clamp(limit: u64) -> i64 {
    ucounts::rlimit::clamp_to_long(limit)
}

fn ucounts_nproc(u: &Ucounts) -> i64 {
    u.peek_rlimit(RlimitType::Nproc)
}

/// The set-up user namespaces over their ucounts side, with their maps.
fn setup_user_namespaces(
    setup: &Setup,
    ucounts_ns: &BTreeMap<String, Arc<UcountsNs>>,
) -> BTreeMap<String, Arc<UserNs>> {
    let mut map: BTreeMap<String, Arc<UserNs>> = BTreeMap::new();
    map.insert(
        INIT_USER_NS.to_string(),
        Arc::new(UserNs {
            name: INIT_USER_NS.to_string(),
            ns: Arc::clone(&ucounts_ns[INIT_USER_NS]),
            parent: None,
            owner: 0,
            map: None,
            runtime: false,
            refs: AtomicU64::new(1),
            obj: ObjId::NONE,
        }),
    );
    for spec in &setup.user_namespaces {
        let ns = Arc::new(UserNs {
            name: spec.name.clone(),
            ns: Arc::clone(&ucounts_ns[&spec.name]),
            parent: Some(Arc::clone(&map[&spec.parent])),
            owner: spec.owner,
            map: setup.processes.maps.get(&spec.name).copied(),
            runtime: false,
            refs: AtomicU64::new(1),
            obj: ObjId::NONE,
        });
        map.insert(spec.name.clone(), ns);
    }
    map
}

/// The ucounts side of set-up user namespace number `index` of `setup`:
/// charged to (parent, owner), recording its creator's RLIMIT_NPROC (none
/// for global root from v5.17).
pub fn setup_ucounts_ns(
    setup: &Setup,
    index: usize,
    parent: &Arc<UcountsNs>,
    charge: Option<Arc<Ucounts>>,
    patches: &ActivePatches,
) -> Arc<UcountsNs> {
    let spec = &setup.user_namespaces[index];
    let creator = setup
        .processes
        .creator_nproc
        .get(&spec.name)
        .copied()
        .unwrap_or(RLIM_INFINITY);
    let root_creator = spec.owner == 0 && spec.parent == INIT_USER_NS;
    let recorded = if root_creator && NprocPatches::from_active(patches).limitnproc_regression {
        RLIM_INFINITY
    } else {
        creator
    };
    let mut rlimits = [RLIM_INFINITY; RlimitType::COUNT];
    rlimits[RlimitType::Nproc as usize] = recorded;
    UcountsNs::child_with_rlimits(index as u32 + 1, &spec.name, parent, charge, rlimits)
}

/// Install the process invariants a run asks for.
pub fn install_invariants(e: &mut sim::Execution, procs: &Arc<Procs>, invariants: &[String]) {
    let wants = |n: &str| invariants.iter().any(|i| i == n);
    let oracles = [
        "nproc.isolated",
        "ucounts.within_limits",
        "nproc.execve_enforced",
    ];
    let enabled: Vec<String> = oracles
        .iter()
        .filter(|o| wants(o))
        .map(|o| o.to_string())
        .collect();
    procs.oracles.lock().clone_from(&enabled);
    if !enabled.is_empty() {
        let p = Arc::clone(procs);
        e.check_each_step(move || match p.take_violation() {
            Some(Outcome::Violation { invariant, detail }) if enabled.contains(&invariant) => {
                Some(Outcome::Violation { invariant, detail })
            }
            _ => None,
        });
    }
    if wants("ucounts.balanced") {
        let p = Arc::clone(procs);
        e.check_each_step(move || {
            p.check_balanced().map(|detail| Outcome::Violation {
                invariant: "ucounts.balanced".into(),
                detail,
            })
        });
    }
    if wants("nproc.real_uid") {
        let p = Arc::clone(procs);
        e.check_each_step(move || {
            p.check_real_uid().map(|detail| Outcome::Violation {
                invariant: "nproc.real_uid".into(),
                detail,
            })
        });
    }
    if wants("ucounts.no_leak") {
        let p = Arc::clone(procs);
        e.check_at_end(move || {
            p.check_no_leak().map(|detail| Outcome::Violation {
                invariant: "ucounts.no_leak".into(),
                detail,
            })
        });
    }
}
