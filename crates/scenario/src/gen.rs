//! Scenarios nobody wrote: `nssim gen` makes them from the ops'
//! declarations ([`kernel::ops::OPS`]), the set-up keys and the newest
//! kernel profile, one per seed, so that the model can be held against
//! its invariants (no false alarm) and against the running kernel (every
//! outcome the kernel shows is one the model reaches) on scenarios of
//! every shape, not only the ones its authors thought of.
//!
//! A generated scenario is the text of a scenario file, checked by the
//! same parser as any other: a random tree of user namespaces (owned by
//! unprivileged users, mapped or not, with low `max_*` limits), then two
//! to five tasks of one to six ops each, with arguments that make sense
//! for the op (another task's name for a target, a map that maps the
//! writer's ids or someone else's), sometimes with two instances or
//! repeats. Everything comes from the seed: the same seed gives the same
//! text on every machine. Each scenario is small enough to explore in well
//! under a second.
//!
//! [`shrink`] makes a failing scenario minimal: it drops tasks and ops,
//! and simplifies repeats and instances, while the caller's test still
//! fails.

use kernel::ops::{ArgKind, OPS};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::fmt::Write as _;

/// Ops a generated task never performs: the scenario's own locks and
/// events (a lock taken and never released, or a wait never posted, ends
/// a run in a deadlock of the scenario's making), `bug`, which panics on
/// purpose, the waiting uevent receive (which waits for ever where no
/// uevent comes), and `open`, whose files a generated scenario does not
/// make. Every other declared op is drawn, each as likely as the others.
const NOT_GENERATED: &[&str] = &[
    "lock",
    "unlock",
    "post",
    "wait",
    "bug",
    "open",
    "uevent_recv_wait",
];

/// Ops the running kernel cannot be asked about (the model's own RCU
/// reader of a task's mqueue mount; fault injection, which runs only in
/// the lab's kernel built for it): drawn a third as often as the others,
/// so that most generated scenarios also run on the kernel.
const MODEL_ONLY: &[&str] = &["mq_path_walk", "fail_alloc"];

/// How often `op` is drawn, against the others.
fn weight(op: &str) -> u32 {
    match MODEL_ONLY.contains(&op) {
        true => 1,
        false => 3,
    }
}

/// An op of `ops`, drawn by [`weight`].
fn draw_op(rng: &mut ChaCha8Rng, ops: &[&'static str]) -> &'static str {
    let total: u32 = ops.iter().map(|o| weight(o)).sum();
    let mut at = rng.random_range(0..total);
    for op in ops {
        if at < weight(op) {
            return op;
        }
        at -= weight(op);
    }
    unreachable!("the weights add up to the total")
}

/// Ops a child that acts never performs: children of its own (one level
/// of `[[task.child]]` is enough to reach a parent that acts on its child
/// and a child that acts on its own).
const NOT_IN_A_CHILD: &[&str] = &["fork_child", "clone_child"];

/// The resources `setrlimit` lowers, each with limits around what the
/// generated ops charge (a process, a signal, a queue of a few bytes, a
/// page).
const RLIMITS: [(&str, &[u64]); 4] = [
    ("NPROC", &[1, 2, 3, 5]),
    ("SIGPENDING", &[0, 1, 2]),
    ("MSGQUEUE", &[0, 200, 819200]),
    ("MEMLOCK", &[0, 4096, 65536]),
];

/// The users a generated scenario is made of: root and two others.
const UIDS: [u32; 3] = [0, 1000, 1001];

/// Limits a generated namespace may lower.
const SYSCTLS: [&str; 3] = [
    "user.max_user_namespaces",
    "user.max_ipc_namespaces",
    "user.max_net_namespaces",
];

const CLONE_FLAGS: [&str; 8] = [
    "CLONE_NEWUSER",
    "CLONE_NEWIPC",
    "CLONE_NEWNET",
    "CLONE_NEWPID",
    "CLONE_NEWUSER|CLONE_NEWIPC",
    "CLONE_NEWUSER|CLONE_NEWNET",
    "CLONE_NEWUSER|CLONE_NEWPID",
    "CLONE_NEWIPC|CLONE_NEWNET",
];

/// Executions of a generated scenario's PCT run.
pub const PCT_ITERATIONS: u64 = 50;

/// Most executions of a generated scenario's dfs run.
pub const DFS_ITERATIONS: u64 = 200;

/// The newest kernel profile, which generated scenarios run on.
pub fn newest_profile() -> &'static str {
    kernel::catalog::PROFILES
        .last()
        .expect("at least one profile")
        .name
}

/// A generated scenario: its parts, which [`shrink`] edits, and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generated {
    pub seed: u64,
    pub namespaces: Vec<GenUserns>,
    pub tasks: Vec<GenTask>,
}

/// A `[[userns]]` of a generated scenario, a child of the initial one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenUserns {
    pub name: String,
    pub owner: u32,
    pub mapped: bool,
    pub sysctl: Option<(&'static str, u32)>,
}

/// A `[[task]]` of a generated scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenTask {
    pub name: String,
    /// `None`: the initial user namespace.
    pub userns: Option<String>,
    pub uid: u32,
    pub instances: u32,
    pub repeat: u32,
    pub ops: Vec<String>,
    /// Its `[[task.child]]` blocks, each forked by one of its ops.
    pub children: Vec<GenChild>,
}

/// A `[[task.child]]` of a generated task: a child that acts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenChild {
    pub name: String,
    pub ops: Vec<String>,
}

/// The scenario of `seed`.
pub fn generate(seed: u64) -> Generated {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let namespaces: Vec<GenUserns> = (0..rng.random_range(0..=2))
        .map(|i| GenUserns {
            name: format!("ns{i}"),
            owner: UIDS[rng.random_range(1..UIDS.len())],
            mapped: rng.random_bool(0.7),
            sysctl: rng.random_bool(0.5).then(|| {
                (
                    SYSCTLS[rng.random_range(0..SYSCTLS.len())],
                    rng.random_range(1..=3),
                )
            }),
        })
        .collect();
    let n_tasks = rng.random_range(2..=5);
    let names: Vec<String> = (0..n_tasks).map(|i| format!("t{i}")).collect();
    let ops = generated_ops();
    let tasks = names
        .iter()
        .map(|name| {
            let home = rng.random_range(0..=namespaces.len());
            let (userns, uid) = match namespaces.get(home) {
                Some(ns) => (Some(ns.name.clone()), ns.owner),
                None => (None, UIDS[rng.random_range(0..UIDS.len())]),
            };
            let others: Vec<&String> = names.iter().filter(|n| *n != name).collect();
            let n_ops = rng.random_range(1..=6);
            let mut children: Vec<GenChild> = Vec::new();
            let ops = (0..n_ops)
                .map(|_| {
                    let op = draw_op(&mut rng, &ops);
                    let text = op_text(&mut rng, op, uid, &others, children.len());
                    if NOT_IN_A_CHILD.contains(&op) {
                        let in_child = child_ops();
                        let n = rng.random_range(1..=3);
                        let ops = (0..n)
                            .map(|_| {
                                let op = draw_op(&mut rng, &in_child);
                                op_text(&mut rng, op, uid, &others, 0)
                            })
                            .collect();
                        children.push(GenChild {
                            name: child_name(children.len()),
                            ops,
                        });
                    }
                    text
                })
                .collect();
            // A task with children runs once.
            let (instances, repeat) = match children.is_empty() {
                true => (
                    if rng.random_bool(0.15) { 2 } else { 1 },
                    if rng.random_bool(0.2) {
                        rng.random_range(2..=3)
                    } else {
                        1
                    },
                ),
                false => (1, 1),
            };
            GenTask {
                name: name.clone(),
                userns,
                uid,
                instances,
                repeat,
                ops,
                children,
            }
        })
        .collect();
    Generated {
        seed,
        namespaces,
        tasks,
    }
}

/// The generated ops that target another task (an argument of kind
/// [`ArgKind::Task`]).
pub fn ops_targeting_a_task() -> Vec<&'static str> {
    generated_ops()
        .into_iter()
        .filter(|op| {
            OPS.iter()
                .any(|o| o.name == *op && o.args.contains(&ArgKind::Task))
        })
        .collect()
}

/// Every op a generated task may perform, in declaration order.
pub fn generated_ops() -> Vec<&'static str> {
    OPS.iter()
        .map(|o| o.name)
        .filter(|n| !NOT_GENERATED.contains(n))
        .collect()
}

/// Every op a generated child may perform.
fn child_ops() -> Vec<&'static str> {
    generated_ops()
        .into_iter()
        .filter(|n| !NOT_IN_A_CHILD.contains(n))
        .collect()
}

/// The name of a task's `k`th child block.
fn child_name(k: usize) -> String {
    format!("c{k}")
}

/// A scenario of two root tasks: `a` performs op `first`, and `b` op
/// `second` with task `a` for its target, explored under `fair`, random
/// and dfs on `profile` with no expectation of their outcome but to end.
pub fn op_pair(first: &str, second: &str, profile: &str) -> String {
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let a = op_text(&mut rng, first, 0, &[&"b".to_string()], 0);
    let b = op_text(&mut rng, second, 0, &[&"a".to_string()], 0);
    // A fork of a child that acts forks a child that asks its ids.
    let child = |op: &str| match NOT_IN_A_CHILD.contains(&op) {
        true => format!(
            "\n  [[task.child]]\n  name = {:?}\n  ops = [\"getresuid()\"]\n",
            child_name(0)
        ),
        false => String::new(),
    };
    let mut t = format!(
        "name = \"pair-{first}-{second}\"\nsummary = \"{first} against {second}\"\n\n[[task]]\nname = \"a\"\nops = [{}]\n{}\n[[task]]\nname = \"b\"\nops = [{}]\n{}",
        toml_string(&a),
        child(first),
        toml_string(&b),
        child(second)
    );
    for (label, explore) in [
        ("fair", "strategy = \"fair\""),
        ("random", "strategy = \"random\", iterations = 20"),
        (
            "dfs",
            "strategy = \"dfs\", preemption_bound = 2, iterations = 300",
        ),
    ] {
        let _ = writeln!(
            t,
            "\n[[kernel]]\nprofile = {profile:?}\nlabel = \"{label}\"\nexpect = \"pass\"\nexplore = {{ {explore} }}"
        );
    }
    t
}

/// One call of `op` by a task of `uid`, its arguments drawn for the op;
/// a fork of a child that acts forks the task's `child`th block.
fn op_text(rng: &mut ChaCha8Rng, op: &str, uid: u32, others: &[&String], child: usize) -> String {
    if op == "setrlimit" {
        // The limit is drawn for the resource.
        let (resource, limits) = RLIMITS[rng.random_range(0..RLIMITS.len())];
        return format!("setrlimit({resource}, {})", pick(rng, limits));
    }
    let info = OPS.iter().find(|o| o.name == op).expect("a declared op");
    let args: Vec<String> = info
        .args
        .iter()
        .enumerate()
        .map(|(i, kind)| match kind {
            ArgKind::Child => child_name(child),
            _ => arg_text(rng, op, i, *kind, uid, others),
        })
        .collect();
    format!("{op}({})", args.join(", "))
}

fn pick<T: Copy>(rng: &mut ChaCha8Rng, from: &[T]) -> T {
    from[rng.random_range(0..from.len())]
}

/// Argument `i` (of kind `kind`) of `op`, as scenario text.
fn arg_text(
    rng: &mut ChaCha8Rng,
    op: &str,
    i: usize,
    kind: ArgKind,
    uid: u32,
    others: &[&String],
) -> String {
    let some_uid = |rng: &mut ChaCha8Rng| UIDS[rng.random_range(0..UIDS.len())];
    match kind {
        ArgKind::CloneFlags => CLONE_FLAGS[rng.random_range(0..CLONE_FLAGS.len())].to_string(),
        ArgKind::Sysctl => SYSCTLS[rng.random_range(0..SYSCTLS.len())].to_string(),
        ArgKind::Task => pick(rng, others).to_string(),
        // Queue names that collide, and one kept namespace file.
        ArgKind::Name => match op {
            "mq_open" | "mq_open_existing" | "mq_unlink" => pick(rng, &["A", "B"]).to_string(),
            _ => "f".to_string(),
        },
        // `setrlimit` draws its resource with its limit (`op_text`).
        ArgKind::Rlimit => "NPROC".to_string(),
        // `open` is not generated (NOT_GENERATED): no file to name.
        ArgKind::File => "no_file".to_string(),
        ArgKind::OpenAccess => "O_RDONLY".to_string(),
        ArgKind::IdList => {
            let ids = [
                String::new(),
                "0".to_string(),
                uid.to_string(),
                format!("0 {uid}"),
            ];
            format!("{:?}", ids[rng.random_range(0..ids.len())])
        }
        ArgKind::NsType => pick(rng, &["user", "ipc", "net"]).to_string(),
        ArgKind::FaultSite => pick(rng, kernel::ops::FAULT_SITES).name.to_string(),
        // Named by `op_text`, which knows the task's blocks.
        ArgKind::Child => child_name(0),
        ArgKind::Duration => pick(rng, &["10us", "100us", "1ms"]).to_string(),
        ArgKind::Int => match op {
            "sysctl_write" => rng.random_range(0..=4).to_string(),
            "uevent_listen" => pick(rng, &["212992", "1", "4096"]).to_string(),
            "shmget" => pick(rng, &["1", "4096", "8192"]).to_string(),
            "mq_open" if i == 1 => rng.random_range(1..=3).to_string(),
            "mq_open" => pick(rng, &["16", "64", "1024"]).to_string(),
            "write_shm_rmid_forced" => rng.random_range(0..=1).to_string(),
            // Keys that collide (0 is IPC_PRIVATE), sets of a few
            // semaphores, numbers inside and past them, messages that fit
            // and one past kernel.msgmax.
            "msgget" | "semget" | "shmget_key" if i == 0 => {
                pick(rng, &["0", "7", "7", "8"]).to_string()
            }
            "shmget_key" => pick(rng, &["0", "1", "4096", "8192"]).to_string(),
            "ipc_sysctl_write" => pick(rng, &["0", "1", "2", "100"]).to_string(),
            "semget" => rng.random_range(0..=3).to_string(),
            "semop" | "semctl" | "semctl_setval" if i == 0 => rng.random_range(0..=2).to_string(),
            "semctl_setval" => pick(rng, &["0", "1", "5", "32768"]).to_string(),
            "msgsnd" | "msgrcv" => pick(rng, &["0", "16", "100", "8192", "8193"]).to_string(),
            _ => some_uid(rng).to_string(),
        },
        ArgKind::SignedInt => rng.random_range(-2..=2).to_string(),
        ArgKind::IpcSysctl => pick(rng, kernel::ops::IPC_SYSCTLS).name.to_string(),
        ArgKind::IpcFlags => pick(
            rng,
            &[
                "0",
                "IPC_CREAT | 0600",
                "IPC_CREAT | 0666",
                "IPC_CREAT | IPC_EXCL | 0600",
                "0400",
            ],
        )
        .to_string(),
        ArgKind::IpcCmd => {
            let cmds: Vec<&str> = kernel::ops::IPC_CMDS
                .iter()
                .filter(|c| c.2.contains(&op))
                .map(|c| c.0)
                .collect();
            pick(rng, &cmds).to_string()
        }
        ArgKind::Str => {
            let text = match op {
                "write_setgroups" | "write_setgroups_of" => {
                    pick(rng, &["deny", "allow"]).to_string()
                }
                "uevent_inject" => pick(
                    rng,
                    &[
                        "add@/devices/virtual/net/veth0",
                        "change@/devices/virtual/mem/full",
                    ],
                )
                .to_string(),
                "uevent_device_event" | "uevent_netdev_event" if i == 0 => {
                    pick(rng, &["add", "remove"]).to_string()
                }
                "uevent_device_event" => "/devices/virtual/mem/full".to_string(),
                "uevent_netdev_event" => "/devices/virtual/net/veth0".to_string(),
                // A map of one id: the writer's own, or someone else's.
                _ => {
                    let outside = if rng.random_bool(0.6) {
                        uid
                    } else {
                        some_uid(rng)
                    };
                    format!("0 {outside} 1")
                }
            };
            format!("\"{text}\"")
        }
    }
}

impl Generated {
    /// The scenario's name: `gen-<seed>`.
    pub fn name(&self) -> String {
        format!("gen-{}", self.seed)
    }

    /// The scenario file, on `profile`: a run under PCT and one under
    /// dfs, each expected to pass (no invariant broken).
    pub fn text(&self, profile: &str) -> String {
        let mut t = String::new();
        let _ = writeln!(t, "# Generated by `nssim gen --seed {}`.", self.seed);
        let _ = writeln!(t, "name = {:?}", self.name());
        let _ = writeln!(
            t,
            "summary = \"a generated scenario (seed {}): {} tasks\"",
            self.seed,
            self.tasks.len()
        );
        for ns in &self.namespaces {
            let _ = writeln!(
                t,
                "\n[[userns]]\nname = {:?}\nowner = {}",
                ns.name, ns.owner
            );
            if ns.mapped {
                let _ = writeln!(t, "map = \"0 {0} 1\"\ngid_map = \"0 {0} 1\"", ns.owner);
            }
            if let Some((name, value)) = ns.sysctl {
                let _ = writeln!(t, "sysctl = {{ {name:?} = {value} }}");
            }
        }
        for task in &self.tasks {
            let _ = writeln!(t, "\n[[task]]\nname = {:?}", task.name);
            if let Some(ns) = &task.userns {
                let _ = writeln!(t, "userns = {ns:?}");
            }
            let _ = writeln!(t, "uid = {}", task.uid);
            if task.instances > 1 {
                let _ = writeln!(t, "instances = {}", task.instances);
            }
            if task.repeat > 1 {
                let _ = writeln!(t, "repeat = {}", task.repeat);
            }
            let _ = writeln!(t, "ops = [{}]", ops_list(&task.ops));
            for child in &task.children {
                let _ = writeln!(
                    t,
                    "\n  [[task.child]]\n  name = {:?}\n  ops = [{}]",
                    child.name,
                    ops_list(&child.ops)
                );
            }
        }
        // The searches of the no-false-alarm campaign: PCT, and dfs
        // within two preemptions, each bounded to stay well under a second.
        for (label, explore) in [
            (
                "pct",
                format!("strategy = \"pct\", iterations = {PCT_ITERATIONS}"),
            ),
            (
                "dfs",
                format!("strategy = \"dfs\", preemption_bound = 2, iterations = {DFS_ITERATIONS}"),
            ),
        ] {
            let _ = writeln!(
                t,
                "\n[[kernel]]\nprofile = {profile:?}\nlabel = \"{profile}-{label}\"\nexpect = \"pass\"\nexplore = {{ {explore} }}"
            );
        }
        t
    }

    /// Simpler variants, each one edit away: a task dropped, an op
    /// dropped, a repeat or an instance count brought to one, a
    /// namespace's limit or map dropped.
    fn simpler(&self) -> Vec<Generated> {
        let mut out = Vec::new();
        for i in 0..self.tasks.len() {
            if self.tasks.len() > 1 {
                let mut g = self.clone();
                let gone = g.tasks.remove(i).name;
                // Ops that named the task go with it.
                for t in &mut g.tasks {
                    t.ops.retain(|o| !names_task(o, &gone));
                }
                g.tasks.retain(|t| !t.ops.is_empty());
                if !g.tasks.is_empty() {
                    out.push(g);
                }
            }
            for j in 0..self.tasks[i].ops.len() {
                if self.tasks[i].ops.len() > 1 {
                    let mut g = self.clone();
                    let gone = g.tasks[i].ops.remove(j);
                    // A child block goes with the op that forked it.
                    g.tasks[i].children.retain(|c| !names_child(&gone, &c.name));
                    out.push(g);
                }
            }
            for (k, child) in self.tasks[i].children.iter().enumerate() {
                for j in 0..child.ops.len() {
                    if child.ops.len() > 1 {
                        let mut g = self.clone();
                        g.tasks[i].children[k].ops.remove(j);
                        out.push(g);
                    }
                }
            }
            for edit in [
                |t: &mut GenTask| t.repeat = 1,
                |t: &mut GenTask| t.instances = 1,
            ] {
                let mut g = self.clone();
                edit(&mut g.tasks[i]);
                if g != *self {
                    out.push(g);
                }
            }
        }
        for i in 0..self.namespaces.len() {
            let mut g = self.clone();
            g.namespaces[i].sysctl = None;
            if g != *self {
                out.push(g);
            }
        }
        out
    }
}

/// Does op text `op` name task `task` as its target?
fn names_task(op: &str, task: &str) -> bool {
    op.split(['(', ',', ')']).skip(1).any(|a| a.trim() == task)
}

/// Does op text `op` fork the child block `child`?
fn names_child(op: &str, child: &str) -> bool {
    (op.starts_with("fork_child(") || op.starts_with("clone_child(")) && names_task(op, child)
}

/// Ops as the items of a TOML array.
fn ops_list(ops: &[String]) -> String {
    let items: Vec<String> = ops.iter().map(|o| toml_string(o)).collect();
    items.join(", ")
}

/// `s` as a TOML string: single quotes when it holds double ones.
fn toml_string(s: &str) -> String {
    if s.contains('"') && !s.contains('\'') {
        format!("'{s}'")
    } else {
        format!("{s:?}")
    }
}

/// The smallest variant of `g` that `fails` still holds for, one edit at
/// a time (at most `budget` candidates tried).
pub fn shrink(
    g: &Generated,
    budget: usize,
    mut fails: impl FnMut(&Generated) -> bool,
) -> Generated {
    let mut best = g.clone();
    let mut tried = 0;
    'outer: loop {
        for candidate in best.simpler() {
            if tried >= budget {
                break 'outer;
            }
            tried += 1;
            if fails(&candidate) {
                best = candidate;
                continue 'outer;
            }
        }
        break;
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_seed_gives_a_valid_scenario_and_the_same_one_each_time() {
        for seed in 0..300 {
            let g = generate(seed);
            let text = g.text(newest_profile());
            assert_eq!(text, generate(seed).text(newest_profile()));
            let sc = crate::parse("gen.toml", &text)
                .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
            assert!((2..=5).contains(&sc.setup.tasks.len()), "{text}");
            assert!(sc
                .setup
                .tasks
                .iter()
                .all(|t| (1..=6).contains(&t.ops.len())));
        }
    }

    /// Every op but those a generated scenario cannot use is drawn, each
    /// in at least one scenario in twenty.
    #[test]
    fn the_scenarios_use_every_generated_op_often() {
        const SEEDS: u64 = 1000;
        let mut scenarios_with: std::collections::BTreeMap<String, u64> = Default::default();
        for seed in 0..SEEDS {
            let g = generate(seed);
            let used: std::collections::BTreeSet<String> = g
                .tasks
                .iter()
                .flat_map(|t| t.ops.iter().chain(t.children.iter().flat_map(|c| &c.ops)))
                .map(|op| op.split('(').next().unwrap_or("").to_string())
                .collect();
            for op in used {
                *scenarios_with.entry(op).or_default() += 1;
            }
        }
        for op in OPS.iter().filter(|o| !NOT_GENERATED.contains(&o.name)) {
            let n = scenarios_with.get(op.name).copied().unwrap_or(0);
            assert!(
                n * 20 >= SEEDS,
                "{} is in {n} of {SEEDS} scenarios",
                op.name
            );
        }
        assert_eq!(
            NOT_GENERATED.len(),
            7,
            "an op left out of the draw says why above"
        );
    }

    /// The lists that leave ops out of the draw, or draw them less, name
    /// declared ops: a renamed op cannot slip out of them unseen.
    #[test]
    fn the_ops_left_out_or_drawn_less_are_declared() {
        for name in NOT_GENERATED.iter().chain(NOT_IN_A_CHILD).chain(MODEL_ONLY) {
            assert!(
                OPS.iter().any(|o| o.name == *name),
                "{name} is not a declared op"
            );
        }
    }

    #[test]
    fn every_pair_of_ops_is_a_scenario() {
        for first in generated_ops() {
            for second in ops_targeting_a_task() {
                let text = op_pair(first, second, newest_profile());
                crate::parse("pair.toml", &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
            }
        }
    }

    #[test]
    fn shrinking_keeps_what_the_failure_needs() {
        let g = (0..100)
            .map(generate)
            .find(|g| {
                g.tasks.len() >= 3 && g.tasks.iter().any(|t| t.ops.iter().any(|o| o == "fork()"))
            })
            .expect("a scenario with a fork among three tasks");
        let has_fork = |g: &Generated| g.tasks.iter().any(|t| t.ops.iter().any(|o| o == "fork()"));
        let small = shrink(&g, 1000, has_fork);
        assert_eq!(small.tasks.len(), 1);
        assert_eq!(small.tasks[0].ops, vec!["fork()".to_string()]);
        crate::parse("gen.toml", &small.text(newest_profile())).expect("still a scenario");
    }
}
