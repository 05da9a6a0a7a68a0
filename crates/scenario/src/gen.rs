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
/// a run in a deadlock of the scenario's making), `bug`, which panics on purpose, and the ops added after the
/// campaigns of docs/on-kernel.md were measured (an op more in the pool
/// changes every seed's scenario): the id, capability and namespace getters, the
/// gid calls and `seteuid`, the kept namespace files, the waiting uevent
/// receive (which waits for ever where no uevent comes), the signal ops,
/// and `open`, whose
/// files a generated scenario does not make.
const NOT_GENERATED: &[&str] = &[
    "lock",
    "unlock",
    "post",
    "wait",
    "bug",
    "getresuid",
    "getresgid",
    "capget",
    "ns_id",
    "open",
    "seteuid",
    "setgid",
    "setegid",
    "setresgid",
    "setgroups",
    "open_ns_user",
    "setns_fd",
    "close_fd",
    "uevent_recv_wait",
    "fork_child",
    "clone_child",
    "sigqueue",
    "sigtimedwait",
    "mq_open",
    "mq_unlink",
    "shmget",
    "write_shm_rmid_forced",
    "shm_lock",
    // Model only: the running kernel has no fault injection to compare.
    "fail_alloc",
];

/// The users a generated scenario is made of: root and two others.
const UIDS: [u32; 3] = [0, 1000, 1001];

/// Limits a generated namespace may lower.
const SYSCTLS: [&str; 3] = [
    "user.max_user_namespaces",
    "user.max_ipc_namespaces",
    "user.max_net_namespaces",
];

const CLONE_FLAGS: [&str; 6] = [
    "CLONE_NEWUSER",
    "CLONE_NEWIPC",
    "CLONE_NEWNET",
    "CLONE_NEWUSER|CLONE_NEWIPC",
    "CLONE_NEWUSER|CLONE_NEWNET",
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
            let ops = (0..n_ops)
                .map(|_| {
                    let op = ops[rng.random_range(0..ops.len())];
                    op_text(&mut rng, op, uid, &others)
                })
                .collect();
            GenTask {
                name: name.clone(),
                userns,
                uid,
                instances: if rng.random_bool(0.15) { 2 } else { 1 },
                repeat: if rng.random_bool(0.2) {
                    rng.random_range(2..=3)
                } else {
                    1
                },
                ops,
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

/// A scenario of two root tasks: `a` performs op `first`, and `b` op
/// `second` with task `a` for its target, explored under `fair`, random
/// and dfs on `profile` with no expectation of their outcome but to end.
pub fn op_pair(first: &str, second: &str, profile: &str) -> String {
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let a = op_text(&mut rng, first, 0, &[&"b".to_string()]);
    let b = op_text(&mut rng, second, 0, &[&"a".to_string()]);
    let mut t = format!(
        "name = \"pair-{first}-{second}\"\nsummary = \"{first} against {second}\"\n\n[[task]]\nname = \"a\"\nops = [{}]\n\n[[task]]\nname = \"b\"\nops = [{}]\n",
        toml_string(&a),
        toml_string(&b)
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

/// One call of `op` by a task of `uid`, its arguments drawn for the op.
fn op_text(rng: &mut ChaCha8Rng, op: &str, uid: u32, others: &[&String]) -> String {
    let info = OPS.iter().find(|o| o.name == op).expect("a declared op");
    let args: Vec<String> = info
        .args
        .iter()
        .enumerate()
        .map(|(i, kind)| arg_text(rng, op, i, *kind, uid, others))
        .collect();
    format!("{op}({})", args.join(", "))
}

fn pick<'a, T: ?Sized>(rng: &mut ChaCha8Rng, from: &[&'a T]) -> &'a T {
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
        ArgKind::Name => "A".to_string(),
        ArgKind::Rlimit => "NPROC".to_string(),
        // `open` is not generated (NOT_GENERATED): no file to name.
        ArgKind::File => "no_file".to_string(),
        ArgKind::OpenAccess => "O_RDONLY".to_string(),
        ArgKind::IdList => "\"\"".to_string(),
        ArgKind::NsType => "user".to_string(),
        // `fail_alloc` is not generated (NOT_GENERATED).
        ArgKind::FaultSite => kernel::ops::FAULT_SITES[0].name.to_string(),
        // `fork_child` and `clone_child` are not generated: no child block.
        ArgKind::Child => "no_child".to_string(),
        ArgKind::Duration => pick(rng, &["10us", "100us", "1ms"]).to_string(),
        ArgKind::Int => match op {
            "sysctl_write" => rng.random_range(0..=4).to_string(),
            "uevent_listen" => pick(rng, &["212992", "1", "4096"]).to_string(),
            "setrlimit" => rng.random_range(1..=5).to_string(),
            _ => some_uid(rng).to_string(),
        },
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
            let ops: Vec<String> = task.ops.iter().map(|o| toml_string(o)).collect();
            let _ = writeln!(t, "ops = [{}]", ops.join(", "));
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
                    g.tasks[i].ops.remove(j);
                    out.push(g);
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

    #[test]
    fn the_scenarios_use_every_generated_op() {
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..300 {
            for t in generate(seed).tasks {
                for op in t.ops {
                    seen.insert(op.split('(').next().unwrap_or("").to_string());
                }
            }
        }
        for op in OPS.iter().filter(|o| !NOT_GENERATED.contains(&o.name)) {
            assert!(seen.contains(op.name), "{} never generated", op.name);
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
