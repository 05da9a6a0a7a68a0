//! The plain-data description of one simulated world: user namespaces,
//! sysctls, tasks and what each task does. The scenario crate builds a
//! [`Setup`] from a scenario file; the world (`world.rs`) turns it into a run.

use std::collections::BTreeMap;

/// Name of the initial user namespace in a [`Setup`].
pub const INIT_USER_NS: &str = "init";

/// Clone/unshare flags understood by the model.
pub use crate::clone_flags;

/// Everything a run starts from.
#[derive(Clone, Default, PartialEq)]
pub struct Setup {
    /// Child user namespaces created before any task runs, parents first.
    pub user_namespaces: Vec<UserNsSpec>,
    /// Sysctl values set before any task runs.
    pub sysctls: Vec<SysctlSpec>,
    /// The tasks; each instance becomes one simulated process.
    pub tasks: Vec<TaskSpec>,
    /// Uid maps, creators' and tasks' RLIMIT_NPROC (see [`crate::process`]).
    pub processes: ProcessSetup,
    /// Regular files that exist before any task runs, for `open`.
    pub files: Vec<FileSpec>,
    /// The children that act (`[[task.child]]`): each runs its ops once a
    /// `fork_child` or `clone_child` of its parent made it.
    pub children: Vec<ChildSpec>,
}

impl Setup {
    /// Every task's and child's name and ops, tasks first.
    pub fn ops_by_name(&self) -> impl Iterator<Item = (&str, &[Op])> {
        let tasks = self.tasks.iter().map(|t| (t.name.as_str(), &t.ops[..]));
        tasks.chain(self.children.iter().map(|c| (c.name.as_str(), &c.ops[..])))
    }

    /// Every op of every task and child, tasks first.
    pub fn every_op(&self) -> impl Iterator<Item = &Op> {
        self.ops_by_name().flat_map(|(_, ops)| ops)
    }

    /// The child that acts under its full name (`parent/child`).
    pub fn child(&self, name: &str) -> Option<&ChildSpec> {
        self.children.iter().find(|c| c.name == name)
    }
}

/// A child that acts: a `[[task.child]]` block, run by the child process
/// that its parent's `fork_child(NAME)` or `clone_child(FLAGS, NAME)`
/// makes. It is a task of its own in traces and results, named after its
/// parent ([`child_name`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ChildSpec {
    /// `parent/child`.
    pub name: String,
    /// The full name of the task (or child) that forks it.
    pub parent: String,
    pub ops: Vec<Op>,
}

/// The full name of child block `child` of task `parent`: `parent/child`.
pub fn child_name(parent: &str, child: &str) -> String {
    format!("{parent}/{child}")
}

/// As derived, but without `files` or `children` when there are none: a
/// scenario's content hash digests this text, and the tokens of scenarios
/// made before they existed stay valid.
impl std::fmt::Debug for Setup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut s = f.debug_struct("Setup");
        s.field("user_namespaces", &self.user_namespaces)
            .field("sysctls", &self.sysctls)
            .field("tasks", &self.tasks)
            .field("processes", &self.processes);
        if !self.files.is_empty() {
            s.field("files", &self.files);
        }
        if !self.children.is_empty() {
            s.field("children", &self.children);
        }
        s.finish()
    }
}

/// As derived, but without `pid_ns_depth` when no task has one (the
/// content hash digests this text, as [`Setup`]'s).
impl std::fmt::Debug for ProcessSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut s = f.debug_struct("ProcessSetup");
        s.field("maps", &self.maps)
            .field("gid_maps", &self.gid_maps)
            .field("creator_nproc", &self.creator_nproc)
            .field("task_nproc", &self.task_nproc)
            .field("cap_drop", &self.cap_drop)
            .field("bounding_drop", &self.bounding_drop);
        if !self.pid_ns_depth.is_empty() {
            s.field("pid_ns_depth", &self.pid_ns_depth);
        }
        s.finish()
    }
}

/// A regular file made at set-up time, in a directory every task may
/// search: its owner, group and permission bits (`[[file]]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSpec {
    pub name: String,
    /// Owner kuid and group kgid, as seen from the initial user namespace.
    pub uid: u32,
    pub gid: u32,
    /// The permission bits, `0o700` (no set-id or sticky bits).
    pub mode: u32,
}

/// A user namespace made at set-up time.
#[derive(Debug, Clone, PartialEq)]
pub struct UserNsSpec {
    pub name: String,
    /// Name of the parent namespace (`"init"` for the initial one).
    pub parent: String,
    /// Owner kuid, as seen from the initial user namespace.
    pub owner: u32,
}

/// One sysctl write at set-up time, e.g. `user.max_ipc_namespaces = 3`
/// in user namespace `init`.
#[derive(Debug, Clone, PartialEq)]
pub struct SysctlSpec {
    pub userns: String,
    pub name: String,
    pub value: i64,
}

/// A task of the scenario; `instances` copies of it run concurrently.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskSpec {
    pub name: String,
    pub instances: u32,
    /// User namespace the task starts in.
    pub userns: String,
    /// The task's uid (and euid), as seen from the initial user namespace.
    pub uid: u32,
    /// How many times `ops` run, one after another.
    pub repeat: u64,
    /// Instances run one after another rather than concurrently: instance
    /// `i + 1` starts once instance `i` has exited, like a shell loop that
    /// waits for each child (`for i in ...; do unshare --ipc true; done`).
    pub sequential: bool,
    pub ops: Vec<Op>,
}

impl TaskSpec {
    /// One instance of `ops`, run once, by `uid` in user namespace `userns`.
    pub fn new(name: &str, userns: &str, uid: u32, ops: Vec<Op>) -> TaskSpec {
        TaskSpec {
            name: name.into(),
            instances: 1,
            userns: userns.into(),
            uid,
            repeat: 1,
            sequential: false,
            ops,
        }
    }

    /// Its instances' names: the task's own name for one instance,
    /// `name.0`, `name.1`, ... for several.
    pub fn instance_names(&self) -> Vec<String> {
        if self.instances <= 1 {
            vec![self.name.clone()]
        } else {
            (0..self.instances)
                .map(|i| format!("{}.{i}", self.name))
                .collect()
        }
    }
}

pub use crate::ops::Op;

/// The scenario's events (`post(E)`, `wait(E)`), in name order: the
/// kernel executor and an exported program give event `i` the `i`-th
/// pipe.
pub fn event_names(setup: &Setup) -> Vec<String> {
    let mut names: Vec<String> = setup
        .every_op()
        .filter_map(|op| match op {
            Op::Post { event } | Op::Wait { event } => Some(event.clone()),
            _ => None,
        })
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// The ops that nest `levels` user namespaces, each mapping root onto its
/// parent's root as `unshare -U -r` does (setgroups `deny`, then the uid
/// and gid maps), so that the next level may be made.
pub fn nested_user_namespaces(levels: usize) -> Vec<Op> {
    let level = [
        Op::Unshare {
            flags: clone_flags::CLONE_NEWUSER,
        },
        Op::WriteSetgroups {
            text: "deny".into(),
        },
        Op::WriteUidMap {
            text: "0 0 1".into(),
        },
        Op::WriteGidMap {
            text: "0 0 1".into(),
        },
    ];
    level.iter().cycle().take(4 * levels).cloned().collect()
}

/// The per-namespace files of `/proc/PID` a task may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsernsFile {
    UidMap,
    GidMap,
    Setgroups,
}

impl UsernsFile {
    pub fn name(self) -> &'static str {
        match self {
            UsernsFile::UidMap => "uid_map",
            UsernsFile::GidMap => "gid_map",
            UsernsFile::Setgroups => "setgroups",
        }
    }
}

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
#[derive(Clone, Default, PartialEq)]
pub struct ProcessSetup {
    /// Uid maps, by set-up user namespace name.
    pub maps: BTreeMap<String, UidMap>,
    /// Gid maps, by set-up user namespace name (no gid is mapped without
    /// one).
    pub gid_maps: BTreeMap<String, UidMap>,
    /// The RLIMIT_NPROC its creator had when it made the namespace (by
    /// set-up user namespace name; unlimited when absent).
    pub creator_nproc: BTreeMap<String, u64>,
    /// RLIMIT_NPROC (soft and hard) of each task (by task name; unlimited
    /// when absent).
    pub task_nproc: BTreeMap<String, u64>,
    /// How many levels below the initial pid namespace each task starts
    /// (by task name; 0, the initial one, when absent): the set-up nests
    /// them as global root, by `unshare --pid --fork` that many times.
    pub pid_ns_depth: BTreeMap<String, u32>,
    /// Capabilities dropped from a task's effective set before it starts
    /// (by task name), as `capsh --drop` or `setpriv --inh-caps` leave it.
    pub cap_drop: BTreeMap<String, Vec<u32>>,
    /// Capabilities dropped from a task's bounding set (by task name): an
    /// execve as root does not give them back; a new user namespace starts
    /// with a full set again (`set_cred_user_ns`).
    pub bounding_drop: BTreeMap<String, Vec<u32>>,
}
