//! A simulated machine built from a [`Setup`]: user namespaces, the ipc
//! subsystem, a kworker, and one process per task instance running its
//! operations. Also the entry points that explore or replay one kernel run.

use crate::errno::Errno;
use crate::profile::ActivePatches;
use crate::setup::{clone_flags, Op, Setup, TaskSpec, UsernsFile, INIT_USER_NS};
use ipcns::{mq_path_walk, Ipc, IpcError, IpcNamespace};
use parking_lot::Mutex;
use sim::{CostKey, ExecReport, Execution, ExploreConfig, ExploreReport, ObjId, Outcome, Schedule};
use std::collections::BTreeMap;
use std::sync::Arc;
use sync::Workqueue;
use ucounts::{UcountType, UcountsNs, UcountsTable, UCOUNT_MAX_LIMIT};
use userns::{UserNamespace, Userns};

#[path = "userns_ops.rs"]
mod userns_ops;

#[path = "denials.rs"]
mod denials;

pub static SYSCALL: CostKey = CostKey::new("syscall", 150, "entering and leaving a syscall");
pub static SWITCH_NS: CostKey = CostKey::new(
    "switch_task_namespaces",
    200,
    "installing a new nsproxy and dropping the old one",
);

/// Results of one task's syscalls: for each operation, how many calls gave
/// each result (`ok` or an errno name) and the index of the first failure.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyscallStats {
    pub calls: u64,
    pub results: BTreeMap<String, u64>,
    pub first_failure: Option<u64>,
}

/// Per task instance, per operation label.
pub type Results = BTreeMap<String, BTreeMap<String, SyscallStats>>;

/// `struct nsproxy`, reduced to what the model uses.
struct Nsproxy {
    ipc_ns: Arc<IpcNamespace>,
}

/// A simulated process.
struct Process {
    name: String,
    uid: u32,
    /// `task->cred`: ids, user namespace and capabilities.
    cred: Mutex<userns::Cred>,
    nsproxy: Mutex<Nsproxy>,
}

impl Process {
    /// The ucounts side of the task's current user namespace.
    fn user_ns(&self) -> Arc<UcountsNs> {
        Arc::clone(&self.cred.lock().user_ns.ucounts_ns)
    }
}

/// A scenario's named lock (`lock(A)`): a plain sleeping lock that records
/// its holder, so a deadlock report can show the wait-for cycle.
struct ScenarioLock {
    obj: ObjId,
    holder: Mutex<Option<sim::TaskId>>,
}

struct World {
    ipc: Arc<Ipc>,
    ucounts: Arc<UcountsTable>,
    user_ns: BTreeMap<String, Arc<UcountsNs>>,
    userns: Arc<Userns>,
    /// User namespaces made so far by tasks (for their names).
    userns_made: std::sync::atomic::AtomicU32,
    procs: BTreeMap<String, Arc<Process>>,
    locks: BTreeMap<String, ScenarioLock>,
    results: Mutex<Results>,
    net: Arc<crate::net::NetWorld>,
    /// Processes and credentials (RLIMIT_NPROC).
    nproc: Arc<crate::process::Procs>,
    /// The scenario checks `security.denied_changes_nothing`.
    check_denials: bool,
    /// Guarded operations (see `denials.rs`) that succeeded so far.
    guarded_successes: std::sync::atomic::AtomicU64,
    /// The deliberately broken `sysctl-store-before-permission` patch.
    sysctl_store_first: bool,
}

/// What to run: a set-up under a kernel profile, with invariants and an
/// exploration.
pub struct RunSpec<'a> {
    pub setup: &'a Setup,
    pub patches: &'a ActivePatches,
    pub invariants: &'a [String],
    pub explore: ExploreConfig,
}

/// The reported execution of a run and its syscall results.
pub struct RunOutput {
    pub explore: ExploreReport,
    pub results: Results,
}

/// Explore a run; the report is its first failing execution or its last.
/// Its syscall results are those of that execution: kept from the one
/// execution of a `fair` run, else from running the reported schedule once
/// more (executions may run on several threads, and shrinking runs many).
pub fn explore_run(spec: &RunSpec<'_>) -> RunOutput {
    let last: Mutex<Option<Arc<World>>> = Mutex::new(None);
    let build = |e: &mut Execution| {
        *last.lock() = Some(build_world(e, spec));
    };
    let explore = sim::explore(&spec.explore, &build);
    let results = match (&explore.schedule, last.into_inner()) {
        (Schedule::Fair, Some(world)) => world.results.lock().clone(),
        _ => replay_run(spec, &explore.schedule, false).1,
    };
    RunOutput { explore, results }
}

/// Explore `setup` on kernel `profile` with every invariant checked and no
/// shrinking: the short way for tests and conformance cases.
pub fn explore_profile(
    setup: &Setup,
    profile: &str,
    strategy: sim::StrategySpec,
    seed: u64,
    iterations: u64,
) -> RunOutput {
    let patches = crate::resolve_patches(profile, &[]).expect("a catalogued profile");
    let invariants = crate::catalog::all_invariants();
    let mut explore = ExploreConfig::new(strategy, seed, iterations, sim::ExecConfig::default());
    explore.shrink = false;
    explore_run(&RunSpec {
        setup,
        patches: &patches,
        invariants: &invariants,
        explore,
    })
}

/// Run exactly one execution under `schedule`, recording its events when
/// `record` is set.
pub fn replay_run(spec: &RunSpec<'_>, schedule: &Schedule, record: bool) -> (ExecReport, Results) {
    let mut cfg = spec.explore.exec.clone();
    cfg.record = record;
    let mut e = Execution::new(cfg, schedule);
    let w = build_world(&mut e, spec);
    let report = e.run();
    let results = w.results.lock().clone();
    (report, results)
}

fn build_world(e: &mut Execution, spec: &RunSpec<'_>) -> Arc<World> {
    let world = e.setup(|| {
        let ucounts = Arc::new(UcountsTable::new());
        let user_ns = make_user_namespaces(spec.setup, &ucounts, spec.patches);
        apply_sysctls(spec.setup, &user_ns);
        let wq = Workqueue::new("system_wq");
        wq.start_worker("kworker");
        let (userns, user_namespaces) = adopt_user_namespaces(spec, &ucounts, &user_ns, &wq);
        let ipc = Ipc::new(
            spec.patches.ipc(),
            Arc::clone(&ucounts),
            &user_ns[INIT_USER_NS],
            &wq,
        );
        let procs = make_processes(spec.setup, &user_namespaces, &ipc);
        let net = crate::net::NetWorld::new(spec.patches.uevent(), &userns, &wq, procs.keys());
        let locks = make_locks(spec.setup);
        let instances: Vec<(String, String)> = spec
            .setup
            .tasks
            .iter()
            .flat_map(|t| {
                instance_names(&t.name, t.instances)
                    .into_iter()
                    .map(|i| (i, t.name.clone()))
            })
            .collect();
        let nproc =
            crate::process::Procs::new(spec.setup, spec.patches, &ucounts, &user_ns, &instances);
        let world = Arc::new(World {
            ipc,
            ucounts,
            user_ns,
            userns,
            userns_made: std::sync::atomic::AtomicU32::new(0),
            procs,
            locks,
            results: Mutex::new(Results::new()),
            net,
            nproc,
            check_denials: spec.invariants.iter().any(|i| i == denials::INVARIANT),
            guarded_successes: std::sync::atomic::AtomicU64::new(0),
            sysctl_store_first: spec
                .patches
                .has(crate::catalog::Patch::SysctlStoreBeforePermission),
        });
        spawn_tasks(spec.setup, &world);
        world
    });
    install_invariants(e, &world, spec.invariants);
    crate::net::install_invariants(e, &world.net, spec.invariants);
    crate::process::install_invariants(e, &world.nproc, spec.invariants);
    world
}

fn make_user_namespaces(
    setup: &Setup,
    table: &UcountsTable,
    patches: &ActivePatches,
) -> BTreeMap<String, Arc<UcountsNs>> {
    let mut map = BTreeMap::new();
    map.insert(INIT_USER_NS.to_string(), UcountsNs::init(0));
    for (i, spec) in setup.user_namespaces.iter().enumerate() {
        let parent = Arc::clone(&map[&spec.parent]);
        // The namespace's creation is charged to (parent, owner).
        let charge = table.alloc_ucounts(&parent, spec.owner);
        let ns = crate::process::setup_ucounts_ns(setup, i, &parent, charge, patches);
        map.insert(spec.name.clone(), ns);
    }
    map
}

/// The user-namespace subsystem around the set-up's namespaces.
fn adopt_user_namespaces(
    spec: &RunSpec<'_>,
    ucounts: &Arc<UcountsTable>,
    user_ns: &BTreeMap<String, Arc<UcountsNs>>,
    wq: &Arc<Workqueue>,
) -> (Arc<Userns>, BTreeMap<String, Arc<UserNamespace>>) {
    let first_child_id = spec.setup.user_namespaces.len() as u32 + 1;
    let sys = Userns::with_workqueue(
        spec.patches.userns(),
        Arc::clone(ucounts),
        &user_ns[INIT_USER_NS],
        first_child_id,
        wq,
    );
    let mut all = BTreeMap::new();
    all.insert(INIT_USER_NS.to_string(), Arc::clone(&sys.init));
    for s in &spec.setup.user_namespaces {
        let parent = Arc::clone(&all[&s.parent]);
        let ns = sys.adopt(&parent, s.owner, s.owner, Arc::clone(&user_ns[&s.name]));
        all.insert(s.name.clone(), ns);
    }
    (sys, all)
}

fn apply_sysctls(setup: &Setup, user_ns: &BTreeMap<String, Arc<UcountsNs>>) {
    for s in &setup.sysctls {
        if let (Some(ns), Some(t)) = (user_ns.get(&s.userns), UcountType::from_sysctl(&s.name)) {
            ns.set_max(t, s.value);
        }
    }
}

fn instance_names(name: &str, instances: u32) -> Vec<String> {
    if instances <= 1 {
        vec![name.to_string()]
    } else {
        (0..instances).map(|i| format!("{name}.{i}")).collect()
    }
}

fn make_processes(
    setup: &Setup,
    user_ns: &BTreeMap<String, Arc<UserNamespace>>,
    ipc: &Arc<Ipc>,
) -> BTreeMap<String, Arc<Process>> {
    let mut procs = BTreeMap::new();
    for t in &setup.tasks {
        for name in instance_names(&t.name, t.instances) {
            // Every process starts in the initial ipc namespace and holds a
            // reference to it through its nsproxy.
            ipc.init_ipc_ns.get();
            let p = Process {
                name: name.clone(),
                uid: t.uid,
                cred: Mutex::new(userns_ops::initial_cred(&user_ns[&t.userns], t.uid)),
                nsproxy: Mutex::new(Nsproxy {
                    ipc_ns: Arc::clone(&ipc.init_ipc_ns),
                }),
            };
            procs.insert(name, Arc::new(p));
        }
    }
    procs
}

fn make_locks(setup: &Setup) -> BTreeMap<String, ScenarioLock> {
    let mut locks = BTreeMap::new();
    for t in &setup.tasks {
        for op in &t.ops {
            if let Op::Lock { name } | Op::Unlock { name } = op {
                locks.entry(name.clone()).or_insert_with(|| ScenarioLock {
                    obj: sim::new_object(intern(name)),
                    holder: Mutex::new(None),
                });
            }
        }
    }
    locks
}

/// Scenario names become object kinds, which are `&'static str`.
fn intern(name: &str) -> &'static str {
    static NAMES: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let mut names = NAMES.lock();
    if let Some(n) = names.iter().find(|n| **n == name) {
        return n;
    }
    let leaked: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.push(leaked);
    leaked
}

fn spawn_tasks(setup: &Setup, world: &Arc<World>) {
    for t in &setup.tasks {
        let names = instance_names(&t.name, t.instances);
        if t.sequential {
            spawn_instance(world, Arc::new(t.clone()), Arc::new(names), 0);
        } else {
            for name in &names {
                spawn_one(world, &t.ops, t.repeat, name);
            }
        }
    }
}

fn spawn_one(world: &Arc<World>, ops: &[Op], repeat: u64, name: &str) {
    let w = Arc::clone(world);
    let proc_ = Arc::clone(&world.procs[name]);
    let ops = ops.to_vec();
    sim::spawn(name, false, move || w.run_task(&proc_, &ops, repeat));
}

/// Instance `i` of a sequential task; when it exits it starts `i + 1`, as
/// a shell loop forks the next child once `wait` returns.
fn spawn_instance(world: &Arc<World>, t: Arc<TaskSpec>, names: Arc<Vec<String>>, i: usize) {
    let w = Arc::clone(world);
    let proc_ = Arc::clone(&world.procs[&names[i]]);
    sim::spawn(names[i].clone(), false, move || {
        w.run_task(&proc_, &t.ops, t.repeat);
        if i + 1 < names.len() {
            spawn_instance(&w, t, names, i + 1);
        }
    });
}

impl World {
    fn run_task(&self, p: &Process, ops: &[Op], repeat: u64) {
        for _ in 0..repeat {
            for op in ops {
                self.do_op(p, op);
            }
        }
        self.exit_task_namespaces(p);
        self.nproc.exit_task(&p.name);
    }

    fn do_op(&self, p: &Process, op: &Op) {
        let target = self.denial_target(p, op);
        let result = self.dispatch(p, op);
        if let Some(before) = target {
            self.check_denial(p, op, result, before);
        }
        self.record(p, op, result);
    }

    fn dispatch(&self, p: &Process, op: &Op) -> Result<(), Errno> {
        match op {
            Op::Unshare { flags } => self.ksys_unshare(p, *flags),
            Op::SysctlWrite { name, value } => self.sysctl_write(p, name, *value),
            Op::MqPathWalk { target } => self.mq_path_walk(target),
            Op::Lock { name } => self.lock(name),
            Op::Unlock { name } => self.unlock(name),
            Op::Sleep { ns } => {
                sim::sleep("sleep", *ns);
                Ok(())
            }
            Op::Bug { message } => panic!("BUG: {message}"),
            Op::WriteUidMap { text } => self.write_userns_file(p, UsernsFile::UidMap, None, text),
            Op::WriteGidMap { text } => self.write_userns_file(p, UsernsFile::GidMap, None, text),
            Op::WriteSetgroups { text } => {
                self.write_userns_file(p, UsernsFile::Setgroups, None, text)
            }
            Op::WriteUidMapOf { target, text } => {
                self.write_userns_file(p, UsernsFile::UidMap, Some(target), text)
            }
            Op::WriteGidMapOf { target, text } => {
                self.write_userns_file(p, UsernsFile::GidMap, Some(target), text)
            }
            Op::WriteSetgroupsOf { target, text } => {
                self.write_userns_file(p, UsernsFile::Setgroups, Some(target), text)
            }
            Op::SetnsUser { target } => self.setns_user(p, target),
            Op::UnshareAndExit { flags } => self.unshare_and_exit(p, *flags),
            other => match self.net.do_op(&p.name, &self.cred(p), other) {
                Some(r) => r,
                None => self.nproc.do_op(&p.name, op).unwrap_or(Err(Errno::ENOENT)),
            },
        }
    }

    fn record(&self, p: &Process, op: &Op, result: Result<(), Errno>) {
        if matches!(op, Op::Sleep { .. }) {
            return;
        }
        let mut results = self.results.lock();
        let stats = results
            .entry(p.name.clone())
            .or_default()
            .entry(op.label())
            .or_default();
        let key = match result {
            Ok(()) => "ok",
            Err(e) => e.name(),
        };
        *stats.results.entry(key.to_string()).or_default() += 1;
        if result.is_err() && stats.first_failure.is_none() {
            stats.first_failure = Some(stats.calls);
        }
        stats.calls += 1;
    }

    /// `ksys_unshare` with the namespaces the model has: create the new
    /// ones, then switch the task to them and drop the old ones.
    fn ksys_unshare(&self, p: &Process, flags: u64) -> Result<(), Errno> {
        sim::point("unshare", ObjId::NONE, &SYSCALL);
        // The user namespace comes first; the other namespaces are made
        // with the new credentials, which are installed last.
        let new_cred = if flags & clone_flags::CLONE_NEWUSER != 0 {
            Some(self.unshare_userns(p, &self.cred(p))?)
        } else {
            None
        };
        if flags & clone_flags::CLONE_NEWIPC == 0 {
            let cred = new_cred.clone().unwrap_or_else(|| self.cred(p));
            if let Err(e) = self.unshare_net(p, flags, &cred, None) {
                if let Some(c) = new_cred {
                    self.userns.put_cred(c);
                }
                return Err(e);
            }
            if let Some(c) = new_cred {
                *p.cred.lock() = c;
            }
            return Ok(());
        }
        let user_ns = new_cred
            .as_ref()
            .map_or_else(|| p.user_ns(), |c| Arc::clone(&c.user_ns.ucounts_ns));
        let call = self
            .ipc
            .oracle
            .begin_call(ucounts::charge_chain(&user_ns, p.uid));
        let created = self.ipc.create_ipc_ns(&user_ns, p.uid);
        self.ipc.oracle.end_call(call, created.is_err(), &p.name);
        let new_ns = match created {
            Ok(ns) => ns,
            Err(IpcError::NoSpace) => {
                sim::note("unshare", ObjId::NONE, Errno::ENOSPC.as_return());
                if let Some(c) = new_cred {
                    // abort_creds: the new namespace's only reference goes.
                    self.userns.put_cred(c);
                }
                return Err(Errno::ENOSPC);
            }
        };
        sim::note("unshare", new_ns.obj, 0);
        let cred = new_cred.clone().unwrap_or_else(|| self.cred(p));
        if let Err(e) = self.unshare_net(p, flags, &cred, Some(new_ns)) {
            if let Some(c) = new_cred {
                self.userns.put_cred(c);
            }
            return Err(e);
        }
        if let Some(c) = new_cred {
            *p.cred.lock() = c;
        }
        Ok(())
    }

    /// The rest of `create_new_namespaces` after the ipc namespace: the
    /// network namespace, made with `cred` (the new credentials after a
    /// CLONE_NEWUSER), unwinding `new_ipc` when it fails; then switch.
    fn unshare_net(
        &self,
        p: &Process,
        flags: u64,
        cred: &userns::Cred,
        new_ipc: Option<Arc<IpcNamespace>>,
    ) -> Result<(), Errno> {
        let new_net = if flags & clone_flags::CLONE_NEWNET != 0 {
            match self.net.copy_net_ns(cred) {
                Ok(net) => Some(net),
                Err(e) => {
                    if let Some(ipc) = new_ipc {
                        self.ipc.put_ipc_ns(ipc);
                    }
                    return Err(e);
                }
            }
        } else {
            None
        };
        if let Some(ipc) = new_ipc {
            self.switch_task_namespaces(p, ipc);
        }
        if let Some(net) = new_net {
            self.net.install(&p.name, net);
        }
        Ok(())
    }

    /// Install the new namespace, then put the old one.
    fn switch_task_namespaces(&self, p: &Process, new_ns: Arc<IpcNamespace>) {
        sim::point("switch_task_namespaces", new_ns.obj, &SWITCH_NS);
        let old = std::mem::replace(&mut p.nsproxy.lock().ipc_ns, new_ns);
        self.ipc.put_ipc_ns(old);
    }

    /// `exit_task_namespaces`: the exiting task drops its namespaces.
    fn exit_task_namespaces(&self, p: &Process) {
        sim::point("exit_task_namespaces", ObjId::NONE, &SWITCH_NS);
        let old = std::mem::replace(
            &mut p.nsproxy.lock().ipc_ns,
            Arc::clone(&self.ipc.init_ipc_ns),
        );
        self.ipc.put_ipc_ns(old);
        self.net.exit_task(&p.name);
        // exit_creds: the task's credentials go after a grace period.
        self.userns.put_cred(self.cred(p));
    }

    /// Write a `max_*` sysctl of the task's own user namespace.
    fn sysctl_write(&self, p: &Process, name: &str, value: i64) -> Result<(), Errno> {
        sim::point("sysctl_write", ObjId::NONE, &SYSCALL);
        let t = UcountType::from_sysctl(name).ok_or(Errno::ENOENT)?;
        if self.sysctl_store_first && (0..=UCOUNT_MAX_LIMIT).contains(&value) {
            p.user_ns().set_max(t, value);
        }
        // Only CAP_SYS_RESOURCE in the file's user namespace may write it.
        if self.nproc.may_write_max_sysctl(&p.name) == Some(false) {
            return Err(Errno::EACCES);
        }
        if !(0..=UCOUNT_MAX_LIMIT).contains(&value) {
            return Err(Errno::EINVAL);
        }
        p.user_ns().set_max(t, value);
        self.ipc.oracle.limits_changed();
        Ok(())
    }

    fn mq_path_walk(&self, target: &str) -> Result<(), Errno> {
        sim::point("mq_path_walk", ObjId::NONE, &SYSCALL);
        let Some(target) = self
            .procs
            .get(target)
            .or_else(|| self.procs.get(&format!("{target}.0")))
        else {
            return Err(Errno::ENOENT);
        };
        let reached = mq_path_walk(|| Arc::clone(&target.nsproxy.lock().ipc_ns));
        if reached {
            Ok(())
        } else {
            Err(Errno::ENOENT)
        }
    }

    fn lock(&self, name: &str) -> Result<(), Errno> {
        let l = &self.locks[name];
        sim::point("lock", l.obj, &sync::costs::MUTEX);
        let me = sim::current_task();
        loop {
            {
                let mut h = l.holder.lock();
                if h.is_none() {
                    *h = me;
                    sim::set_owner(l.obj, me);
                    sim::note("acquired", l.obj, 0);
                    return Ok(());
                }
            }
            sim::block("lock", l.obj, false);
        }
    }

    fn unlock(&self, name: &str) -> Result<(), Errno> {
        let l = &self.locks[name];
        sim::point("unlock", l.obj, &sync::costs::MUTEX);
        let mut h = l.holder.lock();
        if *h != sim::current_task() {
            return Err(Errno::EPERM);
        }
        *h = None;
        sim::set_owner(l.obj, None);
        sim::note("released", l.obj, 0);
        drop(h);
        sim::wake_all(l.obj, 0);
        Ok(())
    }
}

fn violation(invariant: &str, detail: String) -> Outcome {
    Outcome::Violation {
        invariant: invariant.to_string(),
        detail,
    }
}

fn install_invariants(e: &mut Execution, world: &Arc<World>, invariants: &[String]) {
    let wants = |n: &str| invariants.iter().any(|i| i == n);
    if wants("ipc.no_false_enospc") {
        let w = Arc::clone(world);
        e.check_each_step(move || {
            w.ipc
                .oracle
                .take_violation()
                .map(|d| violation("ipc.no_false_enospc", d))
        });
    }
    if wants("ucounts.balanced") {
        let w = Arc::clone(world);
        e.check_each_step(move || {
            w.ucounts
                .ledger
                .check_live()
                .map(|d| violation("ucounts.balanced", d))
        });
        let w = Arc::clone(world);
        e.check_at_end(move || {
            let outstanding = w.ucounts.ledger.outstanding();
            let nonzero: Vec<String> = w
                .ucounts
                .peek_entries()
                .iter()
                .flat_map(|u| {
                    UcountType::ALL
                        .into_iter()
                        .filter(|t| u.peek(*t) != 0)
                        .map(|t| {
                            format!("{t:?} of uid {} in {} is {}", u.uid, u.ns.name, u.peek(t))
                        })
                        .collect::<Vec<_>>()
                })
                .collect();
            (!outstanding.is_empty() || !nonzero.is_empty()).then(|| {
                violation(
                    "ucounts.balanced",
                    format!(
                        "after every task exited and the queues drained, counters are not zero: {}",
                        nonzero.join("; ")
                    ),
                )
            })
        });
    }
    if wants("ipc.freed_eventually") {
        let w = Arc::clone(world);
        e.check_at_end(move || {
            let (released, freed) = w.ipc.oracle.released_and_freed();
            (released != freed || w.ipc.peek_pending() != 0).then(|| {
                violation(
                    "ipc.freed_eventually",
                    format!("{released} ipc namespaces were released but only {freed} freed"),
                )
            })
        });
    }
    userns_ops::install_userns_invariants(e, world, wants);
    let _ = &world.user_ns;
}
