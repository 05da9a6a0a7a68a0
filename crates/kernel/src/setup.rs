//! The plain-data description of one simulated world: user namespaces,
//! sysctls, tasks and what each task does. The scenario crate builds a
//! [`Setup`] from a scenario file; [`crate::World`] turns it into a run.

/// Name of the initial user namespace in a [`Setup`].
pub const INIT_USER_NS: &str = "init";

/// Clone/unshare flags understood by the model.
pub mod clone_flags {
    pub const CLONE_NEWIPC: u64 = 0x0800_0000;
    pub const CLONE_NEWUSER: u64 = 0x1000_0000;
    pub const CLONE_NEWNET: u64 = 0x4000_0000;
}

/// Everything a run starts from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Setup {
    /// Child user namespaces created before any task runs, parents first.
    pub user_namespaces: Vec<UserNsSpec>,
    /// Sysctl values set before any task runs.
    pub sysctls: Vec<SysctlSpec>,
    /// The tasks; each instance becomes one simulated process.
    pub tasks: Vec<TaskSpec>,
    /// Uid maps, creators' and tasks' RLIMIT_NPROC (see [`crate::process`]).
    pub processes: crate::process::ProcessSetup,
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
}

/// One operation of a task. Syscalls model the kernel paths of the same
/// name; the others are scaffolding for scenarios (locks, sleeps, bugs).
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// `unshare(flags)`.
    Unshare { flags: u64 },
    /// Write a sysctl of the task's own user namespace.
    SysctlWrite { name: String, value: i64 },
    /// A reader that, under `rcu_read_lock`, walks to the mqueue mount of
    /// the ipc namespace that task `target` (instance 0) is in and touches it.
    MqPathWalk { target: String },
    /// Take a named scenario mutex.
    Lock { name: String },
    /// Release a named scenario mutex.
    Unlock { name: String },
    /// Spend virtual time without a syscall.
    Sleep { ns: u64 },
    /// A kernel `BUG()`: the task panics with this message.
    Bug { message: String },
    /// Open a uevent socket in the task's network namespace, bound to
    /// group 1, with `rcvbuf` bytes of receive buffer.
    UeventListen { rcvbuf: u64 },
    /// Receive one uevent without waiting.
    UeventRecv,
    /// Close the task's uevent socket.
    UeventClose,
    /// Send `payload` to the kernel uevent socket of the task's netns.
    UeventInject { payload: String },
    /// The kernel sends an untagged uevent for a device.
    UeventDeviceEvent { action: String, devpath: String },
    /// The kernel sends a tagged uevent for a network device of the
    /// task's network namespace.
    UeventNetdevEvent { action: String, devpath: String },
    /// One write(2) of `text` to `/proc/PID/{uid_map,gid_map,setgroups}`
    /// of task `target` (the writer itself when `None`), opened by the
    /// writer.
    WriteUsernsFile {
        file: UsernsFile,
        target: Option<String>,
        text: String,
    },
    /// `setns(fd, CLONE_NEWUSER)` into the user namespace task `target` is in.
    SetnsUser { target: String },
    /// A child process with the task's credentials calls `unshare(flags)`
    /// and exits (the shell's `unshare -U true`).
    UnshareAndExit { flags: u64 },
    /// `fork()`: a child that stays alive until the task's `exit()`.
    Fork,
    /// `clone(flags)`: a fork; with CLONE_NEWUSER the child is in a new
    /// user namespace.
    Clone { flags: u64 },
    /// The task's newest live child exits and the task reaps it.
    Exit,
    /// `setuid(uid)`, `uid` as seen in the task's user namespace.
    Setuid { uid: u32 },
    /// `setresuid(ruid, euid, suid)`, as seen in the task's namespace.
    Setresuid { ruid: u32, euid: u32, suid: u32 },
    /// `execve()` of a new image.
    Execve,
    /// `setrlimit(RLIMIT_NPROC, limit)`: soft and hard limit.
    SetrlimitNproc { limit: u64 },
}

/// The per-namespace files of `/proc/PID` a scenario may write.
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
