//! A simulated machine built from a [`Setup`]: user namespaces, the ipc
//! subsystem, a kworker, and one process per task instance running its
//! operations. Also the entry points that explore or replay one kernel run.

use crate::catalog::Patch;
use crate::clone_flags::{CLONE_NEWIPC, CLONE_NEWNET};
use crate::costs::SYSCALL;
use crate::errno::Errno;
use crate::invariants::Invariant;
use crate::profile::ActivePatches;
use crate::setup::{Op, Setup, TaskSpec, UsernsFile, INIT_USER_NS};
use crate::task::{Mm, Nsproxy, Task, TaskIdx};
use ipcns::{mq_path_walk, Ipc};
use parking_lot::Mutex;
use sim::{ExecReport, Execution, ExploreConfig, ExploreReport, HostMutex, ObjId, Schedule};
use std::collections::BTreeMap;
use std::sync::Arc;
use sync::Workqueue;
use ucounts::{UcountType, UcountsNs, UcountsTable, UCOUNT_MAX_LIMIT};
use userns::{caps, ns_capable, CapSet, MapKind, UserNamespace, Userns};

#[path = "userns_ops.rs"]
mod userns_ops;

#[path = "denials.rs"]
mod denials;

#[path = "checks.rs"]
mod checks;

#[path = "nsproxy.rs"]
mod nsproxy;

#[path = "fork.rs"]
mod fork;

#[path = "procfs.rs"]
mod procfs;

#[path = "open.rs"]
mod open;

#[path = "signal_ops.rs"]
mod signal_ops;

#[path = "pidns_ops.rs"]
mod pidns_ops;

#[path = "mqueue.rs"]
pub mod mqueue;

#[path = "shm.rs"]
mod shm;

#[path = "sysvipc.rs"]
mod sysvipc;

#[path = "fault.rs"]
pub mod fault;

#[path = "statename.rs"]
mod statename;

/// Results of one task's syscalls: for each operation, how many calls gave
/// each result (`ok` or an errno name) and the index of the first failure.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct SyscallStats {
    pub calls: u64,
    pub results: BTreeMap<String, u64>,
    pub first_failure: Option<u64>,
    /// What the calls reported, in call order, for ops that report a value
    /// (the SEQNUM a uevent listener received, the sequence number an
    /// injected uevent was given).
    pub values: Vec<u64>,
    /// The results of the first [`SyscallStats::FIRST_RESULTS_KEPT`]
    /// calls, in call order.
    pub first_results: Vec<String>,
    /// What the calls reported as words, in call order (the ACTION of a
    /// received uevent).
    pub texts: Vec<String>,
}

impl SyscallStats {
    /// How many calls' results are kept in order.
    pub const FIRST_RESULTS_KEPT: usize = 64;

    /// One call more, which returned `result` (`ok` or an errno name) and
    /// reported `values` and `texts` (words).
    pub fn record(
        &mut self,
        result: &str,
        values: impl IntoIterator<Item = u64>,
        texts: impl IntoIterator<Item = String>,
    ) {
        *self.results.entry(result.to_string()).or_default() += 1;
        self.values.extend(values);
        self.texts.extend(texts);
        if result != "ok" && self.first_failure.is_none() {
            self.first_failure = Some(self.calls);
        }
        if self.first_results.len() < Self::FIRST_RESULTS_KEPT {
            self.first_results.push(result.to_string());
        }
        self.calls += 1;
    }
}

/// Per task instance, per operation label.
pub type Results = BTreeMap<String, BTreeMap<String, SyscallStats>>;

/// Number the namespace identities `ns_id` reported (kernel inode
/// numbers, model object serials) 1, 2, ... in the order they first
/// appear in `results` (task by task, label by label, call by call), so
/// that the model's and the kernel's compare, and say only which
/// namespaces are the same.
pub fn number_namespaces(results: &mut Results) {
    let mut numbers: BTreeMap<u64, u64> = BTreeMap::new();
    for ops in results.values_mut() {
        for (_, stats) in ops
            .iter_mut()
            .filter(|(label, _)| crate::ops::reports_namespace_ids(label))
        {
            for v in &mut stats.values {
                let next = numbers.len() as u64 + 1;
                *v = *numbers.entry(*v).or_insert(next);
            }
        }
    }
}

/// How calls turned out, as every output says it: each result with its
/// count first (`3 ok, 1 ENOSPC`), and where calls gave different
/// results, which call failed first, counted from 1
/// (`(first failure: call 4)`).
pub fn results_summary(results: &BTreeMap<String, u64>, first_failure: Option<u64>) -> String {
    let counts: Vec<String> = results.iter().map(|(r, n)| format!("{n} {r}")).collect();
    let mut text = counts.join(", ");
    if let Some(f) = first_failure.filter(|_| results.len() > 1) {
        text.push_str(&format!(" (first failure: call {})", f + 1));
    }
    text
}

/// A scenario's named lock (`lock(A)`): a plain sleeping lock that records
/// its holder, so a deadlock report can show the wait-for cycle.
struct ScenarioLock {
    obj: ObjId,
    holder: HostMutex<Option<sim::TaskId>>,
}

/// A scenario's named event (`post(E)`, `wait(E)`): a counting semaphore
/// of the scenario's own, which a wait the search can see blocks on.
struct ScenarioEvent {
    obj: ObjId,
    posted: HostMutex<u64>,
}

struct World {
    /// For each target of guarded ops (`denials`): how many run now, and
    /// how many have started.
    guarded: HostMutex<BTreeMap<String, (u32, u64)>>,
    /// The ucounts the set-up charged (its user namespaces).
    setup_charges: checks::Charged,
    ipc: Arc<Ipc>,
    ucounts: Arc<UcountsTable>,
    userns: Arc<Userns>,
    /// User namespaces made so far by tasks (for their names).
    userns_made: std::sync::atomic::AtomicU32,
    /// One task per scenario task instance, in set-up order.
    tasks: Vec<Arc<Task>>,
    /// Task instances by name, for the ops that name another task.
    task_index: BTreeMap<String, TaskIdx>,
    /// The set-up's children that act (`[[task.child]]`).
    setup_children: Vec<crate::setup::ChildSpec>,
    /// Those forked so far, by name, for the ops that name them.
    acting_children: HostMutex<BTreeMap<String, Arc<Task>>>,
    /// The world itself, for the tasks of children it starts.
    me: std::sync::Weak<World>,
    /// The namespaces a task points at once it has exited.
    init_nsproxy: Arc<Nsproxy>,
    locks: BTreeMap<String, ScenarioLock>,
    events: BTreeMap<String, ScenarioEvent>,
    results: HostMutex<Results>,
    /// The calls each of the run's invariants judged (`checks::judges`).
    judged: HostMutex<BTreeMap<Invariant, u64>>,
    net: Arc<crate::net::NetWorld>,
    /// Process accounting (RLIMIT_NPROC) and its oracles.
    procs: Arc<crate::process::Procs>,
    /// The scenario checks `security.denied_changes_nothing`.
    check_denials: bool,
    /// The deliberately broken `sysctl-store-before-permission` patch.
    sysctl_store_first: bool,
    /// The set-up's regular files, for `open`.
    files: Vec<crate::setup::FileSpec>,
    /// Where deferred frees and RCU callbacks run (the kworker).
    wq: Arc<Workqueue>,
    /// Some task queues or takes signals: only then does a release take
    /// the siglock (runs without signals take no step for it).
    uses_signals: bool,
    /// The pid-namespace behaviours of the profile.
    pidns_patches: crate::pidns::PidnsPatches,
    /// The allocations the tasks made fail (`fail_alloc`).
    faults: Arc<fault::FaultInjector>,
    /// "unshare: fix nsproxy leak in ksys_unshare() on set_cred_ucounts()
    /// failure" is in force.
    unshare_puts_nsproxy: bool,
    /// `ipc-sysctl-namespace-root`: an ipc namespace's sysctls belong to
    /// root of its owner.
    ipc_sysctl_namespace_root: bool,
    /// `vfs-create-mapped-owner`: a file is made only by a caller whose
    /// fsuid and fsgid the filesystem's user namespace maps.
    pub(crate) create_needs_mapped_owner: bool,
    /// The nsproxies `ksys_unshare` leaked without that fix.
    leaked_nsproxies: HostMutex<Vec<Arc<Nsproxy>>>,
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
    /// False when the wall-clock deadline of reporting
    /// (`ExecConfig::report_deadline`) cut the replay that collects the
    /// results: they are those of the steps it ran.
    pub results_complete: bool,
    /// What the executions of the search that ran to their end exercised.
    pub exercised: Exercised,
}

/// Task instance -> whether one of its calls succeeded (see
/// [`Exercised::succeeded`]).
pub type Succeeded = BTreeMap<String, bool>;

/// What a run exercised, over the executions of its search that ran to
/// their end.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exercised {
    /// Whether each task instance had a call succeed in some execution.
    pub succeeded: Succeeded,
    /// Whether each of the run's invariants judged a call in some
    /// execution (see `checks::judges`).
    pub judged: BTreeMap<String, bool>,
}

/// Explore a run; the report is its first failing execution or its last.
/// Its syscall results are those of that execution: kept from the one
/// execution of a `fair` run, else from running the reported schedule once
/// more (executions may run on several threads, and shrinking runs many).
pub fn explore_run(spec: &RunSpec<'_>) -> RunOutput {
    // A fair run is one execution, whose world holds its results; the
    // worlds of a search are not kept (with `--jobs`, one thread dropping
    // another's world would free all of it across threads).
    let fair = matches!(spec.explore.strategy, sim::StrategySpec::Fair);
    let last: Mutex<Option<Arc<World>>> = Mutex::new(None);
    let exercised: Arc<Mutex<Exercised>> = Arc::default();
    let build = |e: &mut Execution| {
        let world = build_world(e, spec);
        let (w, seen) = (Arc::clone(&world), Arc::clone(&exercised));
        e.check_at_end(move || {
            w.add_exercised(&mut seen.lock());
            None
        });
        if fair {
            *last.lock() = Some(world);
        }
    };
    let explore = sim::explore(&spec.explore, &build);
    let (results, results_complete) = match (&explore.schedule, last.into_inner()) {
        (Schedule::Fair, Some(world)) => (world.results(), true),
        _ => {
            // A run stopped by wall time or memory is replayed to the step
            // it stopped at, as its token says.
            let mut pinned = RunSpec {
                explore: spec.explore.clone(),
                ..*spec
            };
            if let sim::Outcome::Limit { which, value } = &explore.report.outcome {
                // Reached between executions, the one reported ran whole.
                let between = *value == sim::Outcome::BETWEEN_EXECUTIONS;
                if (which == "wall-time" && !between) || which == "memory" {
                    pinned.explore.exec.max_steps = explore.report.steps;
                }
            }
            let (report, results) = replay_run(&pinned, &explore.schedule, false);
            (results, !cut_by_deadline(&report, &explore.report))
        }
    };
    let exercised = exercised.lock().clone();
    RunOutput {
        explore,
        results,
        results_complete,
        exercised,
    }
}

/// Whether `replayed`, a replay of the execution `reported`, was cut short
/// by the wall-clock deadline before it got as far.
pub fn cut_by_deadline(replayed: &ExecReport, reported: &ExecReport) -> bool {
    matches!(&replayed.outcome, sim::Outcome::Limit { which, .. } if which == "wall-time")
        && replayed.trace_hash != reported.trace_hash
}

/// What one execution's results come to, for [`explore_outcomes`].
pub type OutcomeOf = Arc<dyn Fn(&Results) -> String + Send + Sync>;

/// Explore a run and count the distinct outcomes that `outcome` makes of
/// the results of each execution that ends (failing or not).
pub fn explore_outcomes(
    spec: &RunSpec<'_>,
    outcome: &OutcomeOf,
) -> (ExploreReport, BTreeMap<String, u64>) {
    let seen: Arc<Mutex<BTreeMap<String, u64>>> = Arc::default();
    let build = |e: &mut Execution| {
        let world = build_world(e, spec);
        let (seen, outcome) = (Arc::clone(&seen), Arc::clone(outcome));
        e.check_at_end(move || {
            let o = outcome(&world.results());
            *seen.lock().entry(o).or_default() += 1;
            None
        });
    };
    let explore = sim::explore(&spec.explore, &build);
    let seen = std::mem::take(&mut *seen.lock());
    (explore, seen)
}

/// Explore a run and nothing else (no replay of the reported execution
/// for its results); with `count_steps`, also the steps of all its
/// executions, counted by one checker more after every step. For
/// benchmarks that divide a run's time by its steps: count once, time
/// without counting.
pub fn explore_steps(spec: &RunSpec<'_>, count_steps: bool) -> (ExploreReport, Option<u64>) {
    let steps = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let build = |e: &mut Execution| {
        build_world(e, spec);
        if count_steps {
            let steps = Arc::clone(&steps);
            e.check_each_step(move || {
                steps.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                None
            });
        }
    };
    let explore = sim::explore(&spec.explore, &build);
    let counted = count_steps.then(|| steps.load(std::sync::atomic::Ordering::Relaxed));
    (explore, counted)
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
/// `record` is set; by the reporting deadline (`report_deadline`), if the
/// configuration has one.
pub fn replay_run(spec: &RunSpec<'_>, schedule: &Schedule, record: bool) -> (ExecReport, Results) {
    let mut cfg = spec.explore.exec.clone();
    cfg.record = record;
    if cfg.report_deadline.is_some() {
        cfg.deadline = cfg.report_deadline;
    }
    let mut e = Execution::new(cfg, schedule);
    let w = build_world(&mut e, spec);
    let report = e.run();
    let results = w.results();
    (report, results)
}

/// Whether the results so far of an execution can still become the
/// wanted ones, for [`directed_run`].
pub type MayBecome = Arc<dyn Fn(&Results) -> bool + Send + Sync>;

/// The invariant a [`directed_run`] is stopped by: not a claim about the
/// kernel, only that the execution left the outcome it looked for.
pub const LEFT_THE_WANTED_OUTCOME: &str = "directed search: left the wanted outcome";

/// Run one execution under `schedule`, stopped at the first step after
/// which `may_become` says its results can no longer become the wanted
/// ones. Also returns how many calls had returned when they last could.
pub fn directed_run(
    spec: &RunSpec<'_>,
    schedule: &Schedule,
    may_become: MayBecome,
) -> (ExecReport, Results, u64) {
    let mut e = Execution::new(spec.explore.exec.clone(), schedule);
    let w = build_world(&mut e, spec);
    let consistent = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let world = Arc::clone(&w);
    let calls_seen = Arc::clone(&consistent);
    let mut last_checked = 0;
    e.check_each_step(move || {
        let results = world.results();
        let calls: u64 = results
            .values()
            .flat_map(|ops| ops.values())
            .map(|s| s.calls)
            .sum();
        if calls == last_checked {
            return None;
        }
        last_checked = calls;
        if may_become(&results) {
            calls_seen.store(calls, std::sync::atomic::Ordering::Relaxed);
            return None;
        }
        Some(sim::Outcome::Violation {
            invariant: LEFT_THE_WANTED_OUTCOME.into(),
            detail: format!("after {calls} calls"),
        })
    });
    let report = e.run();
    let results = w.results();
    let consistent = consistent.load(std::sync::atomic::Ordering::Relaxed);
    (report, results, consistent)
}

fn build_world(e: &mut Execution, spec: &RunSpec<'_>) -> Arc<World> {
    let world = e.setup(|| {
        let ucounts = Arc::new(match spec.patches.ucounts_put_race() {
            true => UcountsTable::with_put_race(),
            false => UcountsTable::new(),
        });
        let faults = Arc::new(fault::FaultInjector::new());
        if spec
            .setup
            .every_op()
            .any(|op| matches!(op, Op::FailAlloc { .. }))
        {
            ucounts.inject_faults(Arc::clone(&faults) as Arc<dyn ucounts::FailAllocation>);
        }
        let wq = Workqueue::new("system_wq");
        wq.start_worker("kworker");
        let (userns, user_namespaces) = make_user_namespaces(spec, &ucounts, &wq);
        let setup_charges = checks::Charged::of(&ucounts);
        apply_sysctls(spec.setup, &user_namespaces);
        let init_ucounts = &user_namespaces[INIT_USER_NS].ucounts_ns;
        let ipc = Ipc::new(
            spec.patches.ipc(),
            Arc::clone(&ucounts),
            init_ucounts,
            &wq,
            Some(&userns),
        );
        let net = crate::net::NetWorld::new(spec.patches.uevent(), &userns, &wq);
        let procs = crate::process::Procs::new(
            spec.patches,
            &ucounts,
            &userns,
            crate::process::models_processes(spec.setup),
        );
        let init_pid_ns = crate::pidns::PidNamespace::initial();
        let init_nsproxy = Arc::new(Nsproxy {
            ipc_ns: Arc::clone(&ipc.init_ipc_ns),
            net_ns: Arc::clone(&net.uevent.init_net),
            pid_ns_for_children: Arc::clone(&init_pid_ns),
        });
        let pid_setup = PidSetup {
            init: &init_pid_ns,
            patches: spec.patches.pidns(),
            ucounts: &ucounts,
            init_ucounts,
        };
        let (tasks, task_index) =
            make_tasks(spec.setup, &user_namespaces, &ipc, &net, &procs, &pid_setup);
        let world = Arc::new_cyclic(|me| World {
            me: me.clone(),
            setup_children: spec.setup.children.clone(),
            acting_children: HostMutex::new("the children that act", BTreeMap::new()),
            ipc,
            ucounts,
            userns,
            userns_made: std::sync::atomic::AtomicU32::new(0),
            tasks,
            task_index,
            init_nsproxy,
            locks: make_locks(spec.setup),
            events: make_events(spec.setup),
            results: HostMutex::new("the world's results", Results::new()),
            judged: HostMutex::new("the calls judged", judged_none(spec.invariants)),
            net,
            procs,
            check_denials: spec
                .invariants
                .iter()
                .any(|i| i == Invariant::SecurityDeniedChangesNothing.name()),
            guarded: HostMutex::new("the guarded targets", BTreeMap::new()),
            sysctl_store_first: spec.patches.has(Patch::SysctlStoreBeforePermission),
            setup_charges,
            files: spec.setup.files.clone(),
            uses_signals: spec.setup.every_op().any(crate::ops::queues_or_takes),
            pidns_patches: spec.patches.pidns(),
            faults,
            unshare_puts_nsproxy: spec.patches.has(Patch::UnshareNsproxyLeakFix),
            ipc_sysctl_namespace_root: spec.patches.has(Patch::IpcSysctlNamespaceRoot),
            create_needs_mapped_owner: spec.patches.has(Patch::VfsCreateMappedOwner),
            leaked_nsproxies: HostMutex::new("the leaked nsproxies", Vec::new()),
            wq: Arc::clone(&wq),
        });
        spawn_tasks(spec.setup, &world);
        world
    });
    for name in spec.invariants {
        if let Some(invariant) = Invariant::from_name(name) {
            checks::install(e, &world, invariant);
        }
    }
    if statename::can_name(spec.setup, world.check_denials) {
        statename::install(e, &world, spec.setup);
    }
    world
}

/// Each of `invariants` (by name), with no call judged yet.
fn judged_none(invariants: &[String]) -> BTreeMap<Invariant, u64> {
    invariants
        .iter()
        .filter_map(|name| Invariant::from_name(name))
        .map(|i| (i, 0))
        .collect()
}

/// The user-namespace subsystem and the set-up's namespaces, parents
/// first: each charged to (parent, owner), recording its creator's
/// rlimits, with the uid and gid maps the scenario gives it.
fn make_user_namespaces(
    spec: &RunSpec<'_>,
    table: &Arc<UcountsTable>,
    wq: &Arc<Workqueue>,
) -> (Arc<Userns>, BTreeMap<String, Arc<UserNamespace>>) {
    let setup = spec.setup;
    let first_child_id = setup.user_namespaces.len() as u32 + 1;
    let init = match crate::task::init_rlimit_maxima(spec.patches) {
        Some(boot) => UcountsNs::init_with_rlimits(0, boot),
        None => UcountsNs::init(0),
    };
    let sys = Userns::with_workqueue(
        spec.patches.userns(),
        Arc::clone(table),
        &init,
        first_child_id,
        wq,
    );
    if spec.patches.has(Patch::UcountsHoldUserns) {
        table.hold_namespaces(userns::EntryPins::new(&sys));
    }
    let mut all = BTreeMap::new();
    all.insert(INIT_USER_NS.to_string(), Arc::clone(&sys.init));
    for (i, s) in setup.user_namespaces.iter().enumerate() {
        let parent: Arc<UserNamespace> = Arc::clone(&all[&s.parent]);
        // inc_user_namespaces: a set-up namespace counts against its
        // ancestors' max_user_namespaces as one a task makes does.
        let charge = table.inc_ucount(&parent.ucounts_ns, s.owner, UcountType::UserNamespaces);
        if charge.is_some() {
            // Alive for the whole run, as the false-ENOSPC oracle counts.
            sys.oracle
                .charged(&ucounts::charge_chain(&parent.ucounts_ns, s.owner));
        }
        let rlimits = crate::process::setup_rlimits(setup, i, spec.patches);
        let ucounts_ns = UcountsNs::child_with_rlimits(
            i as u32 + 1,
            &s.name,
            &parent.ucounts_ns,
            charge,
            rlimits,
        );
        let ns = sys.adopt(&parent, s.owner, s.owner, ucounts_ns);
        if let Some(m) = setup.processes.maps.get(&s.name) {
            sys.install_setup_map(&ns, MapKind::Uid, m.inside, m.outside, m.count);
        }
        if let Some(m) = setup.processes.gid_maps.get(&s.name) {
            sys.install_setup_map(&ns, MapKind::Gid, m.inside, m.outside, m.count);
        }
        all.insert(s.name.clone(), ns);
    }
    (sys, all)
}

fn apply_sysctls(setup: &Setup, user_ns: &BTreeMap<String, Arc<UserNamespace>>) {
    for s in &setup.sysctls {
        if let (Some(ns), Some(t)) = (user_ns.get(&s.userns), UcountType::from_sysctl(&s.name)) {
            ns.ucounts_ns.set_max(t, s.value);
        }
    }
}

/// One task per instance: its credentials in its user namespace, and an
/// nsproxy of its own in the initial namespaces (each holds a reference
/// to the initial ipc namespace).
/// What the set-up needs to put a task in its pid namespace.
struct PidSetup<'a> {
    init: &'a Arc<crate::pidns::PidNamespace>,
    patches: crate::pidns::PidnsPatches,
    ucounts: &'a UcountsTable,
    init_ucounts: &'a Arc<UcountsNs>,
}

fn make_tasks(
    setup: &Setup,
    user_ns: &BTreeMap<String, Arc<UserNamespace>>,
    ipc: &Arc<Ipc>,
    net: &crate::net::NetWorld,
    procs: &crate::process::Procs,
    pid_setup: &PidSetup<'_>,
) -> (Vec<Arc<Task>>, BTreeMap<String, TaskIdx>) {
    let mut tasks = Vec::new();
    let mut index = BTreeMap::new();
    for t in &setup.tasks {
        let limit = setup
            .processes
            .task_nproc
            .get(&t.name)
            .copied()
            .unwrap_or(ucounts::RLIM_INFINITY);
        for name in t.instance_names() {
            ipc.init_ipc_ns.get();
            let pid = procs.next_pid();
            let depth = setup.processes.pid_ns_depth.get(&t.name).copied();
            let nsproxy = Arc::new(Nsproxy {
                ipc_ns: Arc::clone(&ipc.init_ipc_ns),
                net_ns: Arc::clone(&net.uevent.init_net),
                pid_ns_for_children: crate::pidns::PidNamespace::setup_chain(
                    pid_setup.init,
                    depth.unwrap_or(0),
                    pid_setup.patches,
                    pid_setup.ucounts,
                    pid_setup.init_ucounts,
                    pid,
                ),
            });
            let dropped = |m: &BTreeMap<String, Vec<u32>>| {
                m.get(&t.name)
                    .into_iter()
                    .flatten()
                    .fold(CapSet::FULL, |set, cap| set.without(*cap))
            };
            let bset = dropped(&setup.processes.bounding_drop);
            let mut cred = procs.setup_cred(pid, &user_ns[&t.userns], t.uid, t.uid, bset);
            cred.cap_effective =
                CapSet(cred.cap_effective.0 & dropped(&setup.processes.cap_drop).0);
            let mm = Mm {
                dumpable: true,
                user_ns: Arc::clone(&user_ns[INIT_USER_NS]),
            };
            index.insert(name.clone(), tasks.len());
            tasks.push(Arc::new(Task::new(pid, name, cred, nsproxy, mm, limit)));
        }
    }
    (tasks, index)
}

fn make_events(setup: &Setup) -> BTreeMap<String, ScenarioEvent> {
    crate::setup::event_names(setup)
        .into_iter()
        .map(|name| {
            let event = ScenarioEvent {
                obj: sim::new_object(intern(&name)),
                posted: HostMutex::new("a scenario event's posts", 0),
            };
            (name, event)
        })
        .collect()
}

fn make_locks(setup: &Setup) -> BTreeMap<String, ScenarioLock> {
    let mut locks = BTreeMap::new();
    for op in setup.every_op() {
        if let Op::Lock { name } | Op::Unlock { name } = op {
            locks.entry(name.clone()).or_insert_with(|| ScenarioLock {
                obj: sim::new_object(intern(name)),
                holder: HostMutex::new("a scenario lock's holder", None),
            });
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
    let mut next = 0;
    for t in &setup.tasks {
        let first = next;
        next += t.instances.max(1) as usize;
        if t.sequential {
            spawn_instance(world, Arc::new(t.clone()), first..next, first);
        } else {
            for idx in first..next {
                spawn_one(world, &t.ops, t.repeat, idx);
            }
        }
    }
}

fn spawn_one(world: &Arc<World>, ops: &[Op], repeat: u64, idx: TaskIdx) {
    let w = Arc::clone(world);
    let task = Arc::clone(&world.tasks[idx]);
    let ops = ops.to_vec();
    let me = Arc::clone(&task);
    let id = sim::spawn(task.name.clone(), false, move || {
        w.run_task(&task, &ops, repeat)
    });
    if let Some(id) = id {
        let _ = me.sim_task.set(id);
    }
}

/// Instance `i` of a sequential task; when it exits it starts `i + 1`, as
/// a shell loop forks the next child once `wait` returns.
fn spawn_instance(
    world: &Arc<World>,
    t: Arc<TaskSpec>,
    range: std::ops::Range<TaskIdx>,
    i: TaskIdx,
) {
    let w = Arc::clone(world);
    let task = Arc::clone(&world.tasks[i]);
    let me = Arc::clone(&task);
    let id = sim::spawn(task.name.clone(), false, move || {
        w.run_task(&task, &t.ops, t.repeat);
        if i + 1 < range.end {
            spawn_instance(&w, t, range, i + 1);
        }
    });
    if let Some(id) = id {
        let _ = me.sim_task.set(id);
    }
}

impl World {
    fn run_task(&self, task: &Task, ops: &[Op], repeat: u64) {
        let mut position = 0;
        for _ in 0..repeat {
            for op in ops {
                task.set_position(position);
                position += 1;
                self.do_op(task, op);
            }
        }
        task.set_position(Task::EXITING);
        self.do_exit(task);
    }

    fn do_op(&self, task: &Task, op: &Op) {
        // The views call the op's first step what the scenario wrote.
        sim::title_next_step(|| op.label());
        let watch = self.denial_target(task, op);
        if watch.is_none() && statename::enters_at_its_first_point(op) {
            // Nothing shared was read since the last op's last point: a
            // task waiting at this op's first one is between two ops.
            sim::entering_op();
        }
        let result = self.dispatch(task, op);
        if let Some(watch) = watch {
            self.check_denial(task, op, result, watch);
        }
        self.record(task, op, result);
    }

    /// Every op's model implementation (no wildcard arm: an op declared
    /// in `ops.rs` must be implemented here).
    fn dispatch(&self, task: &Task, op: &Op) -> Result<(), Errno> {
        let procs = &self.procs;
        match op {
            Op::Unshare { flags } => self.ksys_unshare(task, *flags),
            Op::SysctlWrite { name, value } => self.sysctl_write(task, name, *value),
            Op::MqPathWalk { target } => self.mq_path_walk(target),
            Op::Lock { name } => self.lock(name),
            Op::Unlock { name } => self.unlock(name),
            Op::Post { event } => self.post(event),
            Op::Wait { event } => self.wait(event),
            Op::Sleep { ns } => {
                sim::sleep("sleep", *ns);
                Ok(())
            }
            Op::Bug { message } => panic!("BUG: {message}"),
            Op::WriteUidMap { text } => {
                self.write_userns_file(task, UsernsFile::UidMap, None, text)
            }
            Op::WriteGidMap { text } => {
                self.write_userns_file(task, UsernsFile::GidMap, None, text)
            }
            Op::WriteSetgroups { text } => {
                self.write_userns_file(task, UsernsFile::Setgroups, None, text)
            }
            Op::WriteUidMapOf { target, text } => {
                self.write_userns_file(task, UsernsFile::UidMap, Some(target), text)
            }
            Op::WriteGidMapOf { target, text } => {
                self.write_userns_file(task, UsernsFile::GidMap, Some(target), text)
            }
            Op::WriteSetgroupsOf { target, text } => {
                self.write_userns_file(task, UsernsFile::Setgroups, Some(target), text)
            }
            Op::OpenUidMapOf { target } => self.open_uid_map(task, target),
            Op::WriteOpened { text } => self.write_opened_map(task, text),
            Op::ReadUidMapOf { target } => self.read_id_map(task, MapKind::Uid, target),
            Op::ReadGidMapOf { target } => self.read_id_map(task, MapKind::Gid, target),
            Op::SetnsUser { target } => self.setns_user(task, target),
            Op::OpenNsUser { fd, target } => self.open_ns_user_kept(task, fd, target),
            Op::SetnsFd { fd } => self.setns_kept(task, fd),
            Op::CloseFd { fd } => self.close_kept(task, fd),
            Op::SetnsNet { target } => self.setns_nsproxy(task, target, CLONE_NEWNET),
            Op::SetnsIpc { target } => self.setns_nsproxy(task, target, CLONE_NEWIPC),
            Op::UnshareAndExit { flags } => self.unshare_and_exit(task, *flags),
            Op::UeventListen { rcvbuf } => self.net.listen(task, *rcvbuf),
            Op::UeventRecv {} => self.net.recv(task, false),
            Op::UeventRecvWait {} => self.net.recv(task, true),
            Op::UeventClose {} => self.net.close(task),
            Op::UeventInject { payload } => self.net.inject(task, payload),
            Op::UeventDeviceEvent { action, devpath } => {
                self.net.sysfs_uevent_write(task, action, devpath)
            }
            Op::UeventNetdevEvent { devpath, .. } => self.net.netdev_rename(task, devpath),
            Op::Fork {} => self.fork(task, 0, None),
            Op::Clone { flags } => self.fork(task, *flags, None),
            Op::ForkChild { child } => self.fork(task, 0, Some(child)),
            Op::CloneChild { flags, child } => self.fork(task, *flags, Some(child)),
            Op::Exit {} => self.wait_child(task),
            Op::Setuid { uid } => task.with_own(|own| procs.setuid(task, own, *uid)),
            Op::Setresuid { ruid, euid, suid } => task.with_own(|own| {
                procs.setresuid(task, own, [Some(*ruid), Some(*euid), Some(*suid)])
            }),
            Op::Seteuid { euid } => {
                task.with_own(|own| procs.setresuid(task, own, [None, Some(*euid), None]))
            }
            Op::Setgid { gid } => procs.setgid(task, *gid),
            Op::Setegid { egid } => procs.setresgid(task, [None, Some(*egid), None]),
            Op::Setresgid { rgid, egid, sgid } => {
                procs.setresgid(task, [Some(*rgid), Some(*egid), Some(*sgid)])
            }
            Op::Setgroups { gids } => {
                let gids = crate::ops::id_list(gids).expect("the scenario checker admits only ids");
                procs.setgroups(task, &gids)
            }
            Op::Execve {} => {
                let done = task.with_own(|own| procs.execve(task, own));
                // `exec_mmap`: the old image's attachments go with it.
                if done.is_ok() {
                    self.shm_detach_all(task);
                }
                done
            }
            Op::Setrlimit { resource, limit } => {
                let resource = crate::ops::rlimit_named(resource)
                    .expect("the scenario checker admits only these");
                task.with_own(|own| procs.setrlimit(task, own, resource, *limit))
            }
            Op::Sigqueue { target } => self.sigqueue(task, target),
            Op::Sigtimedwait {} => self.sigtimedwait(task),
            Op::Open { file, access } => self.open_file(task, file, *access),
            Op::Getresuid {} => self.getresid(task, MapKind::Uid),
            Op::Getresgid {} => self.getresid(task, MapKind::Gid),
            Op::Capget {} => self.capget(task),
            Op::NsId { ns } => self.ns_id(task, ns),
            Op::MqOpen {
                name,
                maxmsg,
                msgsize,
            } => self.mq_open(task, name, clamp_int(*maxmsg), clamp_int(*msgsize)),
            Op::MqOpenExisting { name } => self.mq_open_existing(task, name),
            Op::MqUnlink { name } => self.mq_unlink(task, name),
            Op::Shmget { size } => self.shmget(task, *size),
            Op::WriteShmRmidForced { value } => self.write_shm_rmid_forced(task, *value),
            Op::ShmLock {} => self.shm_lock(task),
            Op::ShmUnlock {} => self.shm_unlock(task),
            Op::Msgget { key, flags } => self.msgget(task, *key, *flags),
            Op::Msgsnd { size } => self.msgsnd(task, *size),
            Op::Msgrcv { size } => self.msgrcv(task, *size),
            Op::Msgctl { cmd } => self.msgctl(task, *cmd),
            Op::Semget { key, nsems, flags } => self.semget(task, *key, *nsems, *flags),
            Op::Semop { num, op } => self.semop(task, *num, *op),
            Op::Semctl { num, cmd } => self.semctl(task, *num, *cmd),
            Op::SemctlSetval { num, value } => self.semctl_setval(task, *num, *value),
            Op::ShmgetKey { key, size, flags } => self.shmget_key(task, *key, *size, *flags),
            Op::Shmat {} => self.shmat(task),
            Op::Shmdt {} => self.shmdt(task),
            Op::Shmctl { cmd } => self.shmctl(task, *cmd),
            Op::IpcSysctlWrite { name, value } => self.ipc_sysctl_write(task, name, *value),
            Op::Getpid {} => self.getpid(task, false),
            Op::Getppid {} => self.getpid(task, true),
            Op::FailAlloc { site, nth } => {
                if let Some(site) = crate::ops::fault_site(site) {
                    self.faults.arm(site.name, *nth);
                }
                Ok(())
            }
        }
    }

    fn record(&self, task: &Task, op: &Op, result: Result<(), Errno>) {
        if matches!(op, Op::Sleep { .. }) {
            return;
        }
        let mut results = self.results.lock();
        let stats = results
            .entry(task.name.clone())
            .or_default()
            .entry(op.label())
            .or_default();
        let key = match result {
            Ok(()) => "ok",
            Err(e) => e.name(),
        };
        let (values, texts) = {
            let mut own = task.own.lock();
            (
                std::mem::take(&mut own.reported),
                std::mem::take(&mut own.reported_texts),
            )
        };
        stats.record(key, values, texts);
        drop(results);
        for (invariant, n) in self.judged.lock().iter_mut() {
            *n += u64::from(checks::judges(*invariant, op, result));
        }
        // The op has returned to the task: a false ENOSPC it got may now
        // be reported, with the result above.
        self.userns.oracle.returned();
        self.net.uevent.netns_oracle.returned();
    }

    /// Add to `seen` what this execution exercised: which task instances
    /// had a call succeed, and the calls each invariant judged.
    fn add_exercised(&self, seen: &mut Exercised) {
        for (task, ops) in self.results.lock().iter() {
            let ok = ops.values().any(|s| s.results.contains_key("ok"));
            *seen.succeeded.entry(task.clone()).or_default() |= ok;
        }
        for (invariant, n) in self.judged.lock().iter() {
            *seen.judged.entry(invariant.name().to_string()).or_default() |= *n > 0;
        }
    }

    /// The results so far, namespaces numbered (`number_namespaces`).
    fn results(&self) -> Results {
        let mut results = self.results.lock().clone();
        number_namespaces(&mut results);
        results
    }

    /// A task instance by name, instance 0 of a task with instances, or
    /// a child that acts once it has been forked.
    fn task_named(&self, name: &str) -> Option<Arc<Task>> {
        let idx = self
            .task_index
            .get(name)
            .or_else(|| self.task_index.get(&format!("{name}.0")));
        match idx {
            Some(idx) => Some(Arc::clone(&self.tasks[*idx])),
            None => self.acting_children.lock().get(name).cloned(),
        }
    }

    /// Write a `max_*` sysctl of the task's own user namespace: the file
    /// is writable with CAP_SYS_RESOURCE in that namespace (kernel/ucount.c
    /// `set_permissions`), read-only to anyone else (EACCES).
    fn sysctl_write(&self, task: &Task, name: &str, value: i64) -> Result<(), Errno> {
        sim::point("sysctl_write", ObjId::NONE, &SYSCALL);
        let t = UcountType::from_sysctl(name).ok_or(Errno::ENOENT)?;
        let cred = task.cred();
        let ns = &cred.user_ns.ucounts_ns;
        if self.sysctl_store_first && (0..=UCOUNT_MAX_LIMIT).contains(&value) {
            ns.set_max(t, value);
        }
        if !ns_capable(&cred, &cred.user_ns, caps::CAP_SYS_RESOURCE) {
            return Err(Errno::EACCES);
        }
        if !(0..=UCOUNT_MAX_LIMIT).contains(&value) {
            return Err(Errno::EINVAL);
        }
        ns.set_max(t, value);
        self.ipc.oracle.limits_changed();
        self.userns.oracle.limits_changed();
        self.net.uevent.netns_oracle.limits_changed();
        Ok(())
    }

    fn mq_path_walk(&self, target: &str) -> Result<(), Errno> {
        sim::point("mq_path_walk", ObjId::NONE, &SYSCALL);
        let Some(target) = self.task_named(target) else {
            return Err(Errno::ENOENT);
        };
        let reached = mq_path_walk(|| Arc::clone(&target.nsproxy().ipc_ns));
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

    /// `post(E)`: one more post; the waiters look again.
    fn post(&self, name: &str) -> Result<(), Errno> {
        let e = &self.events[name];
        sim::point("post", e.obj, &sync::costs::MUTEX);
        let posted = {
            let mut p = e.posted.lock();
            *p += 1;
            *p
        };
        sim::note("posted", e.obj, posted as i64);
        sim::wake_all(e.obj, 0);
        Ok(())
    }

    /// `wait(E)`: take a post, blocking while there is none.
    fn wait(&self, name: &str) -> Result<(), Errno> {
        let e = &self.events[name];
        sim::point("wait", e.obj, &sync::costs::MUTEX);
        loop {
            {
                let mut p = e.posted.lock();
                if *p > 0 {
                    *p -= 1;
                    return Ok(());
                }
            }
            sim::block("wait", e.obj, false);
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

/// A scenario's non-negative integer as the kernel's `long`.
fn clamp_int(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(values: &[u64]) -> SyscallStats {
        SyscallStats {
            values: values.to_vec(),
            ..SyscallStats::default()
        }
    }

    /// Namespace identities become their order of first appearance, the
    /// same identity the same number in every task; other values stay.
    #[test]
    fn namespaces_are_numbered_by_first_appearance() {
        let mut results = Results::new();
        let a = results.entry("a".into()).or_default();
        a.insert("ns_id(user)".into(), stats(&[4026531837, 77]));
        a.insert("getresuid".into(), stats(&[1000, 1000, 1000]));
        let b = results.entry("b".into()).or_default();
        b.insert("ns_id(net)".into(), stats(&[9]));
        b.insert("ns_id(user)".into(), stats(&[77, 4026531837]));
        number_namespaces(&mut results);
        assert_eq!(results["a"]["ns_id(user)"].values, [1, 2]);
        assert_eq!(results["a"]["getresuid"].values, [1000, 1000, 1000]);
        assert_eq!(results["b"]["ns_id(net)"].values, [3]);
        assert_eq!(results["b"]["ns_id(user)"].values, [2, 1]);
    }
}
