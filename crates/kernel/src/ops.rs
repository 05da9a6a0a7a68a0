//! The operations a scenario's tasks perform, each declared once in
//! `declare_ops!`: its [`Op`] variant, its name, its arguments (each a
//! field of the variant and an [`ArgKind`] the scenario checker parses),
//! which arguments its result label shows, and its line of documentation.
//!
//! From that one declaration come the [`Op`] enum, the [`OPS`] table that
//! the scenario checker, `nssim kernels` and the format reference list,
//! [`Op::build`] (checked arguments to an op), [`Op::name`] and
//! [`Op::label`]. The model implementation is the exhaustive `match` in
//! `World::dispatch`: an op declared here but not implemented there does
//! not compile.

use crate::clone_flags::CLONE_FLAGS;

/// Kind of one operation argument, for checking scenario files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgKind {
    /// `CLONE_NEWIPC | CLONE_NEWUSER`.
    CloneFlags,
    /// A sysctl name such as `user.max_ipc_namespaces`.
    Sysctl,
    /// A non-negative integer.
    Int,
    /// The name of another task of the scenario.
    Task,
    /// A bare name (a scenario mutex).
    Name,
    /// A duration: `10us`, `8ms`, `1.5s`, or an integer of nanoseconds.
    Duration,
    /// A double-quoted string.
    Str,
    /// A resource limit name: `NPROC` (or `RLIMIT_NPROC`).
    Rlimit,
    /// The name of a file of the scenario's set-up (`[[file]]`).
    File,
    /// How a file is opened: `O_RDONLY`, `O_WRONLY` or `O_RDWR`.
    OpenAccess,
    /// A double-quoted list of ids separated by blanks: `"0 1000"`, `""`.
    IdList,
    /// A namespace type as `/proc/PID/ns` names it: `user`, `ipc`, `net`.
    NsType,
    /// The name of a `[[task.child]]` block of the task that forks it.
    Child,
    /// An allocation site of fault injection ([`FAULT_SITES`]).
    FaultSite,
    /// A SysV `*get`'s flags: `IPC_CREAT | IPC_EXCL | 0600`, or `0`
    /// ([`IPC_FLAGS`] and an octal mode).
    IpcFlags,
    /// An integer that may be negative: `-1`, `0`, `2`.
    SignedInt,
    /// A SysV `*ctl` command ([`IPC_CMDS`]): `IPC_STAT`, `IPC_RMID`.
    IpcCmd,
    /// An ipc sysctl ([`IPC_SYSCTLS`]): `kernel.msgmni`.
    IpcSysctl,
}

/// The flags an [`ArgKind::IpcFlags`] argument names, with their values.
pub const IPC_FLAGS: &[(&str, u64)] = &[
    ("IPC_CREAT", ipcns::util::IPC_CREAT),
    ("IPC_EXCL", ipcns::util::IPC_EXCL),
];

/// The flags of `shmget(size)`: `IPC_CREAT | 0600` of `IPC_PRIVATE`.
pub const SHMGET_PRIVATE_FLAGS: u64 = ipcns::util::IPC_CREAT | 0o600;

/// The commands an [`ArgKind::IpcCmd`] argument names: each with its
/// value and the ops that take it.
pub const IPC_CMDS: &[(&str, u64, &[&str])] = &[
    ("IPC_RMID", 0, &["msgctl", "semctl", "shmctl"]),
    ("IPC_STAT", 2, &["msgctl", "semctl", "shmctl"]),
    ("GETVAL", 12, &["semctl"]),
];

/// An ipc sysctl an [`ArgKind::IpcSysctl`] argument names: a limit of
/// the SysV objects of one ipc namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpcSysctlInfo {
    pub name: &'static str,
    /// The largest value a write takes (`extra2` of its table entry).
    pub max: u64,
    /// A new namespace's value.
    pub default: u64,
    pub summary: &'static str,
}

/// The ipc sysctls `ipc_sysctl_write` writes.
pub const IPC_SYSCTLS: &[IpcSysctlInfo] = &[
    IpcSysctlInfo {
        name: "kernel.msgmni",
        max: ipcns::util::IPCMNI as u64,
        default: ipcns::msg::MSGMNI,
        summary: "message queues of the namespace (msgget's ENOSPC)",
    },
    IpcSysctlInfo {
        name: "kernel.msgmax",
        max: i32::MAX as u64,
        default: ipcns::msg::MSGMAX,
        summary: "bytes of one message (msgsnd's EINVAL)",
    },
    IpcSysctlInfo {
        name: "kernel.msgmnb",
        max: i32::MAX as u64,
        default: ipcns::msg::MSGMNB,
        summary: "bytes of a queue made from then on (msgsnd's EAGAIN)",
    },
    IpcSysctlInfo {
        name: "kernel.shmmni",
        max: ipcns::util::IPCMNI as u64,
        default: ipcns::shm::SHMMNI,
        summary: "segments of the namespace (shmget's ENOSPC)",
    },
];

/// The ipc sysctl called `name`.
pub fn ipc_sysctl(name: &str) -> Option<&'static IpcSysctlInfo> {
    IPC_SYSCTLS.iter().find(|s| s.name == name)
}

/// `IPC_STAT`: the command's value.
pub fn ipc_cmd(name: &str) -> Option<u64> {
    IPC_CMDS.iter().find(|c| c.0 == name).map(|c| c.1)
}

/// `IPC_CREAT | IPC_EXCL | 0600`: flags written as the format writes
/// them (the mode in octal; `0` for none).
pub fn ipc_flag_names(flags: u64) -> String {
    let mut parts: Vec<String> = IPC_FLAGS
        .iter()
        .filter(|(_, v)| flags & v != 0)
        .map(|(n, _)| n.to_string())
        .collect();
    let mode = flags & ipcns::util::MODE_MASK;
    if mode != 0 || parts.is_empty() {
        parts.push(format!("0{mode:o}"));
    }
    parts.join(" | ")
}

/// An allocation site a scenario may make fail (`fail_alloc`), as the
/// kernel's fault injection (`failslab`) makes a slab allocation fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultSiteInfo {
    pub name: &'static str,
    /// The kernel function that allocates, with its file.
    pub function: &'static str,
    /// What fails when it does.
    pub summary: &'static str,
}

/// The site of the ucounts entry `set_cred_ucounts` allocates.
pub const SET_CRED_UCOUNTS: &str = "set_cred_ucounts";

/// Every allocation site fault injection may name. (The allocations of a
/// namespace's charge, `inc_ucount`, are not among them: that failure is
/// an ENOSPC the false-ENOSPC oracles would have to tell from a limit.)
pub const FAULT_SITES: &[FaultSiteInfo] = &[FaultSiteInfo {
    name: SET_CRED_UCOUNTS,
    function: "alloc_ucounts (kernel/ucount.c)",
    summary: "the ucounts entry that set_cred_ucounts (kernel/cred.c) allocates for new credentials whose (user namespace, uid) has none yet, in unshare, clone and the set*uid calls: the call fails with EAGAIN; a look-up that finds the entry allocates nothing",
}];

/// The declared site called `name`.
pub fn fault_site(name: &str) -> Option<&'static FaultSiteInfo> {
    FAULT_SITES.iter().find(|s| s.name == name)
}

pub use ucounts::RlimitType;

/// The resources an [`ArgKind::Rlimit`] argument names (with or without
/// `RLIMIT_`), and the counter each is.
pub const RLIMITS: &[(&str, RlimitType)] = &[
    ("NPROC", RlimitType::Nproc),
    ("SIGPENDING", RlimitType::Sigpending),
    ("MSGQUEUE", RlimitType::Msgqueue),
    ("MEMLOCK", RlimitType::Memlock),
];

/// The counter of resource `name` (as [`RLIMITS`] names it).
pub fn rlimit_named(name: &str) -> Option<RlimitType> {
    let bare = name.strip_prefix("RLIMIT_").unwrap_or(name);
    RLIMITS.iter().find(|(n, _)| *n == bare).map(|(_, t)| *t)
}

/// The namespace types an [`ArgKind::NsType`] argument names.
pub const NS_TYPES: &[&str] = &["user", "ipc", "net"];

/// Whether the values of result label `label` are namespace identities:
/// the op's arguments name a namespace type ([`ArgKind::NsType`]).
pub fn reports_namespace_ids(label: &str) -> bool {
    let name = label.split('(').next().unwrap_or(label);
    OPS.iter()
        .any(|o| o.name == name && o.args.contains(&ArgKind::NsType))
}

/// The most ids an [`ArgKind::IdList`] argument lists.
pub const ID_LIST_MAX: usize = 64;

/// The ids of an [`ArgKind::IdList`] argument; `None` when one is not a
/// non-negative integer below 2^32 - 1, or there are more than
/// [`ID_LIST_MAX`].
pub fn id_list(text: &str) -> Option<Vec<u32>> {
    let ids: Option<Vec<u32>> = text
        .split_whitespace()
        .map(|id| id.parse::<u32>().ok().filter(|&v| v != u32::MAX))
        .collect();
    ids.filter(|ids| ids.len() <= ID_LIST_MAX)
}

/// The access modes of `open(2)`, with their flag values (`O_ACCMODE`).
pub const OPEN_ACCESS: &[(&str, u64)] = &[("O_RDONLY", 0), ("O_WRONLY", 1), ("O_RDWR", 2)];

/// Whether op `name` takes the `UNSHARE_ONLY` clone flags
/// (`crate::clone_flags`): `unshare` alone.
pub fn takes_unshare_only(name: &str) -> bool {
    name == Op::Unshare { flags: 0 }.name()
}

/// `O_WRONLY`: the name of an access mode's value.
pub fn access_name(access: u64) -> &'static str {
    OPEN_ACCESS
        .iter()
        .find(|(_, v)| *v == access)
        .map_or("O_RDONLY", |(n, _)| n)
}

/// One checked argument, as the scenario checker hands it to [`Op::build`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgValue {
    Flags(u64),
    Int(i64),
    Duration(u64),
    /// A sysctl, task, name, resource or string argument.
    Text(String),
}

/// One operation a task may perform, with its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpInfo {
    pub name: &'static str,
    pub args: &'static [ArgKind],
    pub summary: &'static str,
    /// The kernel functions the op's syscall runs through and the model
    /// models, each `function (file)`; none for an op that is no syscall
    /// (`sleep`, the scenario's own mutexes).
    pub kernel: &'static [&'static str],
    /// The errors the op returns and when, for the ops that declare them
    /// (the format's table of errors; a test holds the results of the
    /// scenarios that use them to it).
    pub errors: &'static [(crate::errno::Errno, &'static str)],
}

/// A field of an [`Op`] variant: made from a checked argument, and shown
/// in a result label.
trait ArgField: Sized {
    fn from_arg(value: ArgValue) -> Option<Self>;
    fn render(&self, kind: ArgKind) -> String;
}

impl ArgField for u64 {
    fn from_arg(value: ArgValue) -> Option<Self> {
        match value {
            ArgValue::Flags(v) | ArgValue::Duration(v) => Some(v),
            ArgValue::Int(v) => u64::try_from(v).ok(),
            ArgValue::Text(_) => None,
        }
    }

    fn render(&self, kind: ArgKind) -> String {
        match kind {
            ArgKind::CloneFlags => flag_names(*self),
            ArgKind::OpenAccess => access_name(*self).to_string(),
            ArgKind::IpcFlags => ipc_flag_names(*self),
            ArgKind::IpcCmd => IPC_CMDS
                .iter()
                .find(|c| c.1 == *self)
                .map_or_else(|| self.to_string(), |c| c.0.to_string()),
            _ => self.to_string(),
        }
    }
}

impl ArgField for u32 {
    fn from_arg(value: ArgValue) -> Option<Self> {
        match value {
            ArgValue::Int(v) => u32::try_from(v).ok(),
            _ => None,
        }
    }

    fn render(&self, _: ArgKind) -> String {
        self.to_string()
    }
}

impl ArgField for i64 {
    fn from_arg(value: ArgValue) -> Option<Self> {
        match value {
            ArgValue::Int(v) => Some(v),
            _ => None,
        }
    }

    fn render(&self, _: ArgKind) -> String {
        self.to_string()
    }
}

impl ArgField for String {
    fn from_arg(value: ArgValue) -> Option<Self> {
        match value {
            ArgValue::Text(s) => Some(s),
            _ => None,
        }
    }

    fn render(&self, _: ArgKind) -> String {
        self.clone()
    }
}

/// `CLONE_NEWIPC|CLONE_NEWNET`: the names of the flags set in `flags`.
pub fn flag_names(flags: u64) -> String {
    let names: Vec<&str> = CLONE_FLAGS
        .iter()
        .filter(|(_, v, ..)| flags & v != 0)
        .map(|(n, ..)| *n)
        .collect();
    names.join("|")
}

/// Declares every op once. Each entry:
/// `Variant = "name" { field: Type = Kind [label], ... } "summary" kernel: ["function (file)", ...];`
/// where `[label]` marks the fields its result label shows
/// (`unshare(CLONE_NEWIPC)`; an op without one is labelled by its name)
/// and `kernel` lists the kernel functions its syscall runs through; then,
/// optionally, `errors: [(ERRNO, "when"), ...]` before the `;`, every
/// error it returns.
macro_rules! declare_ops {
    ($(
        $(#[$doc:meta])*
        $variant:ident = $name:literal {
            $($field:ident : $ty:ty = $kind:ident $([$shown:ident])?),*
        } $summary:literal
        kernel: [$($kernel:literal),*]
        $(errors: [$(($errno:ident, $when:literal)),* $(,)?])?;
    )*) => {
        /// One operation of a task, declared in `declare_ops!`.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Op {
            $($(#[$doc])* $variant { $($field: $ty),* },)*
        }

        /// Every op, in declaration order.
        pub const OPS: &[OpInfo] = &[
            $(OpInfo {
                name: $name,
                args: &[$(ArgKind::$kind),*],
                summary: $summary,
                kernel: &[$($kernel),*],
                errors: &[$($((crate::errno::Errno::$errno, $when)),*)?],
            }),*
        ];

        impl Op {
            /// The op's name, as scenarios write it.
            pub fn name(&self) -> &'static str {
                match self {
                    $(Op::$variant { .. } => $name,)*
                }
            }

            /// The op `name` with checked `args` (as many as [`OPS`] lists,
            /// of its kinds); `None` when they do not fit.
            pub fn build(name: &str, args: Vec<ArgValue>) -> Option<Op> {
                let mut args = args.into_iter();
                let op = match name {
                    $($name => Op::$variant {
                        $($field: <$ty as ArgField>::from_arg(args.next()?)?,)*
                    },)*
                    _ => return None,
                };
                args.next().is_none().then_some(op)
            }

            /// The label its results are filed under: the name, with the
            /// arguments that tell calls apart
            /// (`sysctl_write(user.max_ipc_namespaces)`).
            pub fn label(&self) -> String {
                match self {
                    $(Op::$variant { $($field),* } => {
                        #[allow(unused_mut)]
                        let mut shown: Vec<String> = Vec::new();
                        $(if shown!($($shown)?) {
                            shown.push(ArgField::render($field, ArgKind::$kind));
                        })*
                        $(let _ = $field;)*
                        label_of($name, &shown)
                    })*
                }
            }
        }
    };
}

/// Whether a field of `declare_ops!` is marked `[label]`.
macro_rules! shown {
    () => {
        false
    };
    ($marker:ident) => {
        true
    };
}

fn label_of(name: &str, shown: &[String]) -> String {
    if shown.is_empty() {
        name.to_string()
    } else {
        format!("{name}({})", shown.join(", "))
    }
}

declare_ops! {
    /// `unshare(flags)`.
    Unshare = "unshare" { flags: u64 = CloneFlags [label] }
        "unshare(2); CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID (the task's children are born in the new pid namespace; EINVAL for a second one before its first child) and CLONE_NEWNET are modelled, and CLONE_FS and CLONE_FILES (a copy of the fs information or file table of its own, which always succeeds)"
        kernel: ["ksys_unshare (kernel/fork.c)"]
        errors: [
            (EPERM, "a namespace other than a user namespace without CAP_SYS_ADMIN in the user namespace that will own it; a user namespace whose creator's ids its parent does not map"),
            (EINVAL, "CLONE_NEWPID when the task already made a pid namespace for its children; a pid namespace 33 levels deep from v3.11 to v4.8"),
            (ENOSPC, "a max_*_namespaces limit reached at some level of the owner's tree, or a user or pid namespace 33 levels deep (from v4.9)"),
            (EUSERS, "a user namespace 33 levels deep from v3.11 to v4.8"),
            (EAGAIN, "with CLONE_NEWUSER, set_cred_ucounts could not allocate the ucounts entry of the new credentials (fail_alloc)"),
        ];
    /// Write a sysctl of the task's own user namespace.
    SysctlWrite = "sysctl_write" { name: String = Sysctl [label], value: i64 = Int }
        "write /proc/sys/<name> of the task's user namespace"
        kernel: ["proc_sys_write (fs/proc/proc_sysctl.c)", "set_permissions (kernel/ucount.c)"];
    /// A reader that, under `rcu_read_lock`, walks to the mqueue mount of
    /// the ipc namespace that task `target` (instance 0) is in.
    MqPathWalk = "mq_path_walk" { target: String = Task [label] }
        "under rcu_read_lock, walk to the mqueue mount of the named task's ipc namespace and read it"
        kernel: [];
    /// Open a uevent socket in the task's network namespace.
    UeventListen = "uevent_listen" { rcvbuf: u64 = Int }
        "open a NETLINK_KOBJECT_UEVENT socket in the task's network namespace and bind it to group 1, with a receive buffer of this many bytes"
        kernel: ["netlink_bind (net/netlink/af_netlink.c)"];
    /// Receive one uevent without waiting.
    UeventRecv = "uevent_recv" {}
        "receive one uevent without waiting: ok, EAGAIN when none is queued, ENOBUFS once after an overrun; reports its SEQNUM as a value and its ACTION as a word"
        kernel: ["netlink_recvmsg (net/netlink/af_netlink.c)"];
    /// Receive one uevent, waiting for one.
    UeventRecvWait = "uevent_recv_wait" {}
        "receive one uevent, waiting until one is queued: ok, ENOBUFS once after an overrun; reports its SEQNUM as a value and its ACTION as a word (a wait nothing ends is a deadlock in the model, and a run cut off at its time limit on the kernel)"
        kernel: ["netlink_recvmsg (net/netlink/af_netlink.c)"];
    /// Close the task's uevent socket.
    UeventClose = "uevent_close" {}
        "close the task's uevent socket"
        kernel: ["netlink_release (net/netlink/af_netlink.c)"];
    /// Send `payload` to the kernel uevent socket of the task's netns.
    UeventInject = "uevent_inject" { payload: String = Str }
        "send a uevent (the string is its payload) to the kernel uevent socket of the task's network namespace"
        kernel: ["uevent_net_rcv_skb (lib/kobject_uevent.c)"];
    /// The kernel sends an untagged uevent for a device.
    UeventDeviceEvent = "uevent_device_event" { action: String = Str [label], devpath: String = Str }
        "a write of the action to /sys<devpath>/uevent (root's, mode 0200: EACCES for others), which sends an untagged uevent for the device: kobject_uevent_env"
        kernel: ["uevent_store (drivers/base/core.c)", "kobject_uevent_env (lib/kobject_uevent.c)"];
    /// The kernel sends a uevent tagged with the task's network namespace.
    UeventNetdevEvent = "uevent_netdev_event" { action: String = Str [label], devpath: String = Str }
        "a rename of a network device of the task's network namespace (CAP_NET_ADMIN over its owner, else EPERM), which sends a `move` uevent tagged with the namespace (the action names the call in the results)"
        kernel: ["dev_change_name (net/core/dev.c)", "kobject_uevent_env (lib/kobject_uevent.c)"];
    /// Take a named scenario mutex.
    Lock = "lock" { name: String = Name [label] }
        "take a scenario mutex (for deadlock scenarios)"
        kernel: [];
    /// Release a named scenario mutex.
    Unlock = "unlock" { name: String = Name [label] }
        "release a scenario mutex"
        kernel: [];
    /// Let one `wait` on a scenario event go on.
    Post = "post" { event: String = Name [label] }
        "post a scenario event: one wait for it, by any task, goes on (a counting semaphore of the scenario's own, a pipe on the kernel); orders tasks in the search and on the kernel alike"
        kernel: [];
    /// Wait for a `post` of a scenario event.
    Wait = "wait" { event: String = Name [label] }
        "wait until the scenario event has been posted, taking one post (blocks while none is left)"
        kernel: [];
    /// Spend virtual time without a syscall.
    Sleep = "sleep" { ns: u64 = Duration }
        "spend virtual time"
        kernel: [];
    /// A kernel `BUG()`: the task panics with this message.
    Bug = "bug" { message: String = Str }
        "BUG(): the task panics with the message"
        kernel: [];
    /// One write(2) to the task's own `/proc/self/uid_map`.
    WriteUidMap = "write_uid_map" { text: String = Str }
        "one write(2) of the text to /proc/self/uid_map (map_write)"
        kernel: ["proc_uid_map_write, map_write (kernel/user_namespace.c)"];
    /// One write(2) to the task's own `/proc/self/gid_map`.
    WriteGidMap = "write_gid_map" { text: String = Str }
        "one write(2) of the text to /proc/self/gid_map (map_write)"
        kernel: ["proc_gid_map_write, map_write (kernel/user_namespace.c)"];
    /// One write(2) to the task's own `/proc/self/setgroups`.
    WriteSetgroups = "write_setgroups" { text: String = Str }
        "one write(2) of the text (\"allow\"/\"deny\") to /proc/self/setgroups"
        kernel: ["proc_setgroups_write (kernel/user_namespace.c)"];
    /// The uid_map of task `target`'s user namespace, opened by this task.
    WriteUidMapOf = "write_uid_map_of" { target: String = Task [label], text: String = Str }
        "write the uid_map of the named task's user namespace, opened by this task"
        kernel: ["proc_uid_map_write, map_write (kernel/user_namespace.c)"];
    /// The gid_map of task `target`'s user namespace, opened by this task.
    WriteGidMapOf = "write_gid_map_of" { target: String = Task [label], text: String = Str }
        "write the gid_map of the named task's user namespace, opened by this task"
        kernel: ["proc_gid_map_write, map_write (kernel/user_namespace.c)"];
    /// `/proc/PID/setgroups` of task `target`, opened by this task.
    WriteSetgroupsOf = "write_setgroups_of" { target: String = Task [label], text: String = Str }
        "write /proc/PID/setgroups of the named task, opened by this task"
        kernel: ["proc_setgroups_write (kernel/user_namespace.c)"];
    /// Open the uid_map of task `target`'s user namespace for writing and
    /// keep the file: a later `write_opened` writes through it.
    OpenUidMapOf = "open_uid_map_of" { target: String = Task [label] }
        "open the uid_map of the named task's user namespace for writing and keep the file (the opener's credentials go with it)"
        kernel: ["proc_id_map_open (kernel/user_namespace.c)"];
    /// One write(2) through the file `open_uid_map_of` kept.
    WriteOpened = "write_opened" { text: String = Str }
        "one write(2) of the text to the file open_uid_map_of kept, with the task's credentials now: map_write checks the opener's and the writer's"
        kernel: ["proc_uid_map_write, map_write (kernel/user_namespace.c)"];
    /// Read the uid_map of task `target`'s user namespace.
    ReadUidMapOf = "read_uid_map_of" { target: String = Task [label] }
        "read the uid_map of the named task's user namespace, as this task sees it; reports first, lower and count of every line"
        kernel: ["uid_m_show (kernel/user_namespace.c)"];
    /// Read the gid_map of task `target`'s user namespace.
    ReadGidMapOf = "read_gid_map_of" { target: String = Task [label] }
        "read the gid_map of the named task's user namespace, as this task sees it; reports first, lower and count of every line"
        kernel: ["gid_m_show (kernel/user_namespace.c)"];
    /// `setns(fd, CLONE_NEWUSER)` into the user namespace task `target` is in.
    SetnsUser = "setns_user" { target: String = Task [label] }
        "setns(2) into the user namespace of the named task (userns_install)"
        kernel: ["userns_install (kernel/user_namespace.c)"];
    /// Open `/proc/PID/ns/user` of task `target` and keep the file as `fd`.
    OpenNsUser = "open_ns_user" { fd: String = Name, target: String = Task [label] }
        "open /proc/PID/ns/user of the named task (the ptrace read check of the opener) and keep the file under the name given first: setns_fd and close_fd use it, later, whatever the task has become"
        kernel: ["proc_ns_get_link (fs/proc/namespaces.c)", "ns_get_path (fs/nsfs.c)"];
    /// `setns(fd, CLONE_NEWUSER)` through a file `open_ns_user` kept.
    SetnsFd = "setns_fd" { fd: String = Name [label] }
        "setns(2) through the file kept under the name (userns_install: CAP_SYS_ADMIN in its namespace, which must not be the caller's own); EBADF when no file has that name"
        kernel: ["userns_install (kernel/user_namespace.c)"];
    /// Close a file `open_ns_user` kept.
    CloseFd = "close_fd" { fd: String = Name [label] }
        "close(2) of the file kept under the name, which lets go of its namespace; EBADF when no file has that name"
        kernel: ["close_fd (fs/file.c)"];
    /// `setns(fd, CLONE_NEWNET)` into the network namespace task `target` is in.
    SetnsNet = "setns_net" { target: String = Task [label] }
        "setns(2) into the network namespace of the named task (netns_install): CAP_SYS_ADMIN over its owner and over the caller's own user namespace"
        kernel: ["netns_install (net/core/net_namespace.c)"];
    /// `setns(fd, CLONE_NEWIPC)` into the ipc namespace task `target` is in.
    SetnsIpc = "setns_ipc" { target: String = Task [label] }
        "setns(2) into the ipc namespace of the named task (ipcns_install): CAP_SYS_ADMIN over its owner and over the caller's own user namespace"
        kernel: ["ipcns_install (ipc/namespace.c)"];
    /// A child process with the task's credentials calls `unshare(flags)`
    /// and exits (the shell's `unshare -U true`).
    UnshareAndExit = "unshare_and_exit" { flags: u64 = CloneFlags [label] }
        "a child process calls unshare(flags) and exits (`unshare -U true`)"
        kernel: ["ksys_unshare (kernel/fork.c)", "do_exit (kernel/exit.c)"];
    /// `fork()`: a child that stays alive until the task's `exit()`.
    Fork = "fork" {}
        "fork(2): a child that stays alive until the task's exit(); EAGAIN at RLIMIT_NPROC, ENOMEM when the pid namespace it would be born in has lost its init"
        kernel: ["copy_process (kernel/fork.c)"]
        errors: [
            (EAGAIN, "the task's user is at RLIMIT_NPROC"),
            (ENOMEM, "the pid namespace the child would be born in has lost its init"),
        ];
    /// `clone(flags)`: a fork; with CLONE_NEW* flags the child is in new
    /// namespaces.
    Clone = "clone" { flags: u64 = CloneFlags [label] }
        "clone(2) of a child process; CLONE_NEW* flags put it in new namespaces (with CLONE_NEWPID it is the init of the new pid namespace); ENOMEM when the pid namespace it would be born in has lost its init"
        kernel: ["copy_process (kernel/fork.c)"]
        errors: [
            (EAGAIN, "the task's user is at RLIMIT_NPROC"),
            (EPERM, "a namespace other than a user namespace without CAP_SYS_ADMIN in the child's user namespace; a user namespace whose creator's ids its parent does not map"),
            (EINVAL, "CLONE_NEWPID when the task already made a pid namespace for its children; a pid namespace 33 levels deep from v3.11 to v4.8"),
            (ENOSPC, "a max_*_namespaces limit reached at some level of the owner's tree, or a user or pid namespace 33 levels deep (from v4.9)"),
            (EUSERS, "a user namespace 33 levels deep from v3.11 to v4.8"),
            (ENOMEM, "the pid namespace the child would be born in has lost its init"),
        ];
    /// `fork()` of a child that runs the ops of a `[[task.child]]` block.
    ForkChild = "fork_child" { child: String = Child [label] }
        "fork(2) of a child that runs the ops of the task's [[task.child]] block of that name, as a task of its own named `task/child`, with the task's credentials, namespaces, kept ns files and opened uid_map; EAGAIN at RLIMIT_NPROC (and the child never runs)"
        kernel: ["copy_process (kernel/fork.c)"];
    /// `clone(flags)` of a child that runs the ops of a `[[task.child]]`
    /// block.
    CloneChild = "clone_child" { flags: u64 = CloneFlags [label], child: String = Child [label] }
        "clone(2) of a child that runs the ops of the task's [[task.child]] block of that name, as fork_child does; CLONE_NEW* flags put it in new namespaces"
        kernel: ["copy_process (kernel/fork.c)"];
    /// The task's newest live child exits and the task reaps it.
    Exit = "exit" {}
        "the task's newest live child exits and is reaped (ECHILD if none); a child that acts is waited for until it has run its ops"
        kernel: ["do_exit, release_task (kernel/exit.c)"];
    /// `setuid(uid)`, `uid` as seen in the task's user namespace.
    Setuid = "setuid" { uid: u32 = Int [label] }
        "setuid(2), the uid as seen in the task's user namespace"
        kernel: ["__sys_setuid (kernel/sys.c)"];
    /// `setresuid(ruid, euid, suid)`, as seen in the task's namespace.
    Setresuid = "setresuid" { ruid: u32 = Int [label], euid: u32 = Int [label], suid: u32 = Int [label] }
        "setresuid(2), the uids as seen in the task's user namespace"
        kernel: ["__sys_setresuid (kernel/sys.c)"];
    /// `seteuid(euid)`: `setresuid(-1, euid, -1)`, as the C library makes it.
    Seteuid = "seteuid" { euid: u32 = Int [label] }
        "seteuid(3): setresuid(-1, euid, -1), the uid as seen in the task's user namespace"
        kernel: ["__sys_setresuid (kernel/sys.c)"];
    /// `setgid(gid)`, as seen in the task's namespace.
    Setgid = "setgid" { gid: u32 = Int [label] }
        "setgid(2), the gid as seen in the task's user namespace: all three gids with CAP_SETGID there, else the effective one to the real or saved gid"
        kernel: ["__sys_setgid (kernel/sys.c)"];
    /// `setegid(egid)`: `setresgid(-1, egid, -1)`.
    Setegid = "setegid" { egid: u32 = Int [label] }
        "setegid(3): setresgid(-1, egid, -1), the gid as seen in the task's user namespace"
        kernel: ["__sys_setresgid (kernel/sys.c)"];
    /// `setresgid(rgid, egid, sgid)`, as seen in the task's namespace.
    Setresgid = "setresgid" { rgid: u32 = Int [label], egid: u32 = Int [label], sgid: u32 = Int [label] }
        "setresgid(2), the gids as seen in the task's user namespace; without CAP_SETGID there each must be one of the current three"
        kernel: ["__sys_setresgid (kernel/sys.c)"];
    /// `setgroups(gids)`: the supplementary groups.
    Setgroups = "setgroups" { gids: String = IdList }
        "setgroups(2) of the listed gids: EPERM without CAP_SETGID in the task's user namespace, or before its gid_map is written, or after `deny` in its setgroups file; EINVAL for a gid it does not map"
        kernel: ["__do_sys_setgroups (kernel/groups.c)", "userns_may_setgroups (kernel/user_namespace.c)"];
    /// `execve()` of a new image.
    Execve = "execve" {}
        "execve(2) of a new image: EAGAIN if set*uid left the task over RLIMIT_NPROC"
        kernel: ["do_execveat_common (fs/exec.c)"];
    /// `setrlimit(resource, limit)`: soft and hard limit.
    Setrlimit = "setrlimit" { resource: String = Rlimit [label], limit: u64 = Int [label] }
        "setrlimit(2) of soft and hard limit; NPROC, SIGPENDING, MSGQUEUE and MEMLOCK are modelled: raising the hard limit needs CAP_SYS_RESOURCE in the initial user namespace (EPERM)"
        kernel: ["do_prlimit (kernel/sys.c)"]
        errors: [(EPERM, "the limit is above the hard limit and the task has no CAP_SYS_RESOURCE in the initial user namespace")];
    /// `open(file, access)` of a set-up file, closed again at once.
    Open = "open" { file: String = File [label], access: u64 = OpenAccess [label] }
        "open(2) of a file of the set-up ([[file]]) for reading (O_RDONLY), writing (O_WRONLY) or both (O_RDWR), closed again at once: EACCES unless its mode bits allow it, or CAP_DAC_OVERRIDE (CAP_DAC_READ_SEARCH to read) in a namespace that maps the file's owner and group"
        kernel: ["do_sys_open (fs/open.c)", "generic_permission (fs/namei.c)", "capable_wrt_inode_uidgid (kernel/capability.c)"];
    /// `getresuid()`: the task's real, effective and saved uids.
    Getresuid = "getresuid" {}
        "getresuid(2): reports the real, effective and saved uids as the task's user namespace sees them, 65534 (overflowuid) for one it does not map"
        kernel: ["__do_sys_getresuid (kernel/sys.c)"];
    /// `ns_id(type)`: the identity of the task's namespace of a type.
    NsId = "ns_id" { ns: String = NsType [label] }
        "reports which namespace of the type (user, ipc or net) the task is in, as the inode of /proc/self/ns/<type>; the results number the namespaces 1, 2, ... in the order they first appear, so the same namespace gives the same number in every task, on the model and on the kernel"
        kernel: ["proc_ns_get_link (fs/proc/namespaces.c)", "ns_get_path (fs/nsfs.c)"];
    /// `capget()`: the task's own capability sets.
    Capget = "capget" {}
        "capget(2) of the task itself: reports its effective, permitted and inheritable sets, each a number whose bit N is capability N (every capability: 2199023255551)"
        kernel: ["__do_sys_capget (kernel/capability.c)", "cap_capget (security/commoncap.c)"];
    /// `rt_sigqueueinfo(pid, SIGRTMIN)` to task `target`, which blocks it.
    Sigqueue = "sigqueue" { target: String = Task [label] }
        "sigqueue(3) of SIGRTMIN to the named task (itself too), which blocks it, sent through a pidfd of its /proc directory (pidfd_send_signal, as a task in a pid namespace of its own must): the signal stays pending, charged to the receiver's user against the receiver's RLIMIT_SIGPENDING (EAGAIN when over it), until sigtimedwait takes it or the receiver is reaped; EPERM without the right to signal it (a real or effective uid of the sender's that is not the receiver's real or saved uid, and no CAP_KILL in its user namespace), ESRCH once it is reaped; to a process that has exited but is not reaped yet the signal is dropped with success, nothing queued or charged"
        kernel: ["__do_sys_pidfd_send_signal (kernel/signal.c)", "__sigqueue_alloc (kernel/signal.c)", "inc_rlimit_get_ucounts (kernel/ucount.c)"]
        errors: [
            (ESRCH, "the receiver has been reaped"),
            (EINVAL, "the receiver has no pid in the sender's pid namespace (it is outside it): the signal goes through a pidfd (pidfd_send_signal)"),
            (EPERM, "no real or effective uid of the sender's is the receiver's real or saved uid, and the sender has no CAP_KILL in the receiver's user namespace"),
            (EAGAIN, "the receiver's user is over its RLIMIT_SIGPENDING at the leaf, or a level above it over the RLIMIT_SIGPENDING its namespace's creator carried in (before v6.12 also when an earlier refusal leaked a count there)"),
        ];
    /// `sigtimedwait()` of SIGRTMIN with a zero timeout.
    Sigtimedwait = "sigtimedwait" {}
        "sigtimedwait(2) of SIGRTMIN with a zero timeout: takes the oldest pending one and frees its charge; EAGAIN when none is pending"
        kernel: ["do_sigtimedwait (kernel/signal.c)", "__sigqueue_free (kernel/signal.c)", "dec_rlimit_put_ucounts (kernel/ucount.c)"]
        errors: [(EAGAIN, "no signal is pending")];
    /// `mq_open("/NAME", O_CREAT | O_EXCL | O_RDWR, 0600, attr)`.
    MqOpen = "mq_open" { name: String = Name [label], maxmsg: u64 = Int [label], msgsize: u64 = Int [label] }
        "mq_open(3) of a new POSIX message queue /NAME (O_CREAT | O_EXCL) of MAXMSG messages of MSGSIZE bytes in the task's ipc namespace; the descriptor stays open until the task exits. The queue is charged MAXMSG * (48 + 48 + MSGSIZE) bytes (one tree node per priority, at most 32768) to its creator against RLIMIT_MSGQUEUE until it is unlinked and closed"
        kernel: ["do_mq_open (ipc/mqueue.c)", "mqueue_get_inode (ipc/mqueue.c)", "inc_rlimit_ucounts (kernel/ucount.c)"]
        errors: [
            (EEXIST, "a queue of that name exists in the task's ipc namespace"),
            (EOVERFLOW, "the user namespace that owns the task's ipc namespace maps not both the task's fsuid and fsgid (from v4.8)"),
            (EINVAL, "MAXMSG or MSGSIZE is 0, or above fs.mqueue.msg_max (10) or msgsize_max (8192) for a task without CAP_SYS_RESOURCE in the initial user namespace (65536 and 16 MiB with it)"),
            (ENOSPC, "the ipc namespace has fs.mqueue.queues_max (256) queues and the task has no CAP_SYS_RESOURCE in the initial user namespace"),
            (EMFILE, "the queue's bytes would take the creator's user over its RLIMIT_MSGQUEUE at the leaf, or a level above it over its maximum (before v5.15 the initial namespace's level over the RLIMIT_MSGQUEUE the machine booted with)"),
        ];
    /// `mq_open("/NAME", O_RDWR)` of an existing queue.
    MqOpenExisting = "mq_open_existing" { name: String = Name [label] }
        "mq_open(3) of the existing POSIX message queue /NAME with O_RDWR and no O_CREAT, in the task's ipc namespace; the descriptor stays open until the task exits and holds the queue (an mq_unlink meanwhile leaves it, charged, until the close)"
        kernel: ["do_mq_open (ipc/mqueue.c)", "prepare_open (ipc/mqueue.c)"]
        errors: [
            (ENOENT, "no queue of that name exists in the task's ipc namespace"),
            (EACCES, "the queue (made 0600) is not the task's fsuid's, and the task has no CAP_DAC_OVERRIDE in a user namespace that maps the queue's owner and group"),
        ];
    /// `mq_unlink("/NAME")`.
    MqUnlink = "mq_unlink" { name: String = Name [label] }
        "mq_unlink(3) of the POSIX message queue /NAME in the task's ipc namespace; the queue and its charge go once no descriptor holds it"
        kernel: ["do_mq_unlink (ipc/mqueue.c)", "mqueue_evict_inode (ipc/mqueue.c)", "dec_rlimit_ucounts (kernel/ucount.c)"]
        errors: [
            (ENOENT, "no queue of that name exists in the task's ipc namespace"),
            (EPERM, "the task's fsuid owns neither the queue nor the namespace's queue directory (sticky), and it has no CAP_FOWNER over the queue"),
        ];
    /// `shmget(IPC_PRIVATE, size, IPC_CREAT | 0600)`.
    Shmget = "shmget" { size: u64 = Int [label] }
        "shmget(2) of a new private SysV shared memory segment of SIZE bytes in the task's ipc namespace, which the task's exit destroys where kernel.shm_rmid_forced is set (an unshare(CLONE_NEWIPC) likewise for the namespace it leaves), and the namespace's free otherwise"
        kernel: ["ksys_shmget (ipc/shm.c)", "newseg (ipc/shm.c)", "exit_shm (ipc/shm.c)"]
        errors: [(EINVAL, "SIZE is 0")];
    /// `shmget(key, size, flags)`.
    ShmgetKey = "shmget_key" { key: u64 = Int, size: u64 = Int, flags: u64 = IpcFlags }
        "shmget(2) of the SysV shared memory segment of KEY (0 is IPC_PRIVATE: always a new one) of SIZE bytes in the task's ipc namespace, FLAGS as msgget's; a new segment goes on the task's list as shmget's do. The task's later shmat and shmctl use the segment it returns (as they do after shmget; a child that acts starts with its parent's)"
        kernel: ["ksys_shmget (ipc/shm.c)", "ipcget (ipc/util.c)", "newseg (ipc/shm.c)", "shm_more_checks (ipc/shm.c)"]
        errors: [
            (EINVAL, "a new segment of SIZE 0, or SIZE above the size of the segment KEY names"),
            (ENOENT, "no segment of the namespace has KEY and FLAGS has no IPC_CREAT"),
            (EEXIST, "a segment has KEY and FLAGS has IPC_CREAT and IPC_EXCL"),
            (EACCES, "a segment has KEY and its mode grants the task not every permission FLAGS's mode asks, and the task has no CAP_IPC_OWNER over the ipc namespace's owner"),
            (ENOSPC, "a new segment, and the namespace has kernel.shmmni (4096) segments"),
        ];
    /// `shmat(id, NULL, 0)`.
    Shmat = "shmat" {}
        "shmat(2) of the segment of the task's last shmget or shmget_key, for reading and writing: one more attachment (shm_nattch), which forks copy and shmdt, execve and exit drop, and whose file holds the ipc namespace the segment was looked up in until its last mapping goes"
        kernel: ["do_shmat (ipc/shm.c)", "shm_open (ipc/shm.c)"]
        errors: [
            (EINVAL, "the id of the task's last shmget names no segment of its ipc namespace"),
            (EACCES, "the segment's mode grants the task not both read and write permission, and it has no CAP_IPC_OWNER over the ipc namespace's owner"),
            (EIDRM, "the segment was destroyed between the look-up and the attachment"),
        ];
    /// `shmdt(addr)` of the task's newest attachment.
    Shmdt = "shmdt" {}
        "shmdt(2) of the task's newest attachment: a segment removed meanwhile (IPC_RMID), or whose namespace has kernel.shm_rmid_forced set and whose creator is gone, is destroyed with its last attachment"
        kernel: ["ksys_shmdt (ipc/shm.c)", "shm_close (ipc/shm.c)", "shm_may_destroy (ipc/shm.c)"]
        errors: [(EINVAL, "the task has no attachment")];
    /// `shmctl(id, cmd)`.
    Shmctl = "shmctl" { cmd: u64 = IpcCmd [label] }
        "shmctl(2) of the segment of the task's last shmget or shmget_key: IPC_STAT reports its size and attachments (shm_segsz, shm_nattch); IPC_RMID destroys it when nothing is attached, else marks it to go with its last attachment and makes its key private (a look-up by key no longer finds it; its id still works)"
        kernel: ["ksys_shmctl (ipc/shm.c)", "shmctl_stat (ipc/shm.c)", "do_shm_rmid (ipc/shm.c)", "ipcctl_obtain_check (ipc/util.c)"]
        errors: [
            (EINVAL, "the id of the task's last shmget names no segment of its ipc namespace"),
            (EACCES, "IPC_STAT, and the segment's mode grants the task no read permission, and it has no CAP_IPC_OWNER over the ipc namespace's owner"),
            (EPERM, "IPC_RMID by a task whose euid neither owns nor made the segment, without CAP_SYS_ADMIN over the ipc namespace's owner"),
        ];
    /// `shmctl(id, SHM_LOCK)` of the task's last segment.
    ShmLock = "shm_lock" {}
        "shmctl(2) SHM_LOCK of the segment of the task's last shmget or shmget_key, looked up in the task's ipc namespace: its pages are charged to the task's user against RLIMIT_MEMLOCK until the segment is destroyed"
        kernel: ["shmctl_do_lock (ipc/shm.c)", "user_shm_lock (mm/mlock.c)", "inc_rlimit_ucounts (kernel/ucount.c)"]
        errors: [
            (EINVAL, "the id of the task's last shmget names no segment of its ipc namespace"),
            (EPERM, "no CAP_IPC_LOCK over the ipc namespace's owner, and the task's euid did not make the segment or its RLIMIT_MEMLOCK is 0"),
            (ENOMEM, "the segment's pages would take the task's user over RLIMIT_MEMLOCK (counted in pages; CAP_IPC_LOCK in the initial user namespace lifts the limit)"),
            (EIDRM, "the segment was destroyed between the look-up and the lock"),
        ];
    /// `shmctl(id, SHM_UNLOCK)` of the task's last segment.
    ShmUnlock = "shm_unlock" {}
        "shmctl(2) SHM_UNLOCK of the segment of the task's last shmget or shmget_key, looked up in the task's ipc namespace: a locked segment's pages are uncharged from the user that locked it; an unlocked one is left as it is (ok)"
        kernel: ["shmctl_do_lock (ipc/shm.c)", "user_shm_unlock (mm/mlock.c)", "dec_rlimit_ucounts (kernel/ucount.c)"]
        errors: [
            (EINVAL, "the id of the task's last shmget names no segment of its ipc namespace"),
            (EPERM, "no CAP_IPC_LOCK over the ipc namespace's owner, and the task's euid did not make the segment"),
            (EIDRM, "the segment was destroyed between the look-up and the unlock"),
        ];
    /// Write `/proc/sys/kernel/shm_rmid_forced` of the task's ipc namespace.
    WriteShmRmidForced = "write_shm_rmid_forced" { value: u64 = Int [label] }
        "write VALUE to /proc/sys/kernel/shm_rmid_forced of the task's ipc namespace; setting it destroys the segments whose creator is gone"
        kernel: ["proc_ipc_dointvec_minmax_orphans (ipc/ipc_sysctl.c)", "shm_destroy_orphaned (ipc/shm.c)"]
        errors: [
            (EACCES, "the task's euid is not root of the user namespace that owns its ipc namespace"),
            (EINVAL, "VALUE is not 0 or 1"),
        ];
    /// `msgget(key, flags)`.
    Msgget = "msgget" { key: u64 = Int, flags: u64 = IpcFlags }
        "msgget(2) of the SysV message queue of KEY (0 is IPC_PRIVATE: always a new queue) in the task's ipc namespace, FLAGS being IPC_CREAT, IPC_EXCL and a mode (`IPC_CREAT | 0600`, or 0); the task's later msgsnd, msgrcv and msgctl use the queue it returns (a child that acts starts with its parent's). A queue lives until msgctl(IPC_RMID) or its namespace's end, whoever made it"
        kernel: ["ksys_msgget (ipc/msg.c)", "ipcget (ipc/util.c)", "newque (ipc/msg.c)"]
        errors: [
            (ENOENT, "no queue of the namespace has KEY and FLAGS has no IPC_CREAT"),
            (EEXIST, "a queue has KEY and FLAGS has IPC_CREAT and IPC_EXCL"),
            (EACCES, "a queue has KEY and its mode grants the task (as its owner or creator, in its group, or other) not every permission FLAGS's mode asks, and the task has no CAP_IPC_OWNER over the ipc namespace's owner"),
            (ENOSPC, "a new queue, and the namespace has kernel.msgmni (32000) queues"),
        ];
    /// `msgsnd(id, msg, size, IPC_NOWAIT)`.
    Msgsnd = "msgsnd" { size: u64 = Int }
        "msgsnd(2) of a message of SIZE bytes (type 1) with IPC_NOWAIT to the queue of the task's last msgget"
        kernel: ["do_msgsnd (ipc/msg.c)", "ipcperms (ipc/util.c)"]
        errors: [
            (EINVAL, "SIZE is above kernel.msgmax (8192), or the id of the task's last msgget names no queue of its ipc namespace (none, removed, or of another namespace)"),
            (EACCES, "the queue's mode grants the task no write permission, and it has no CAP_IPC_OWNER over the ipc namespace's owner"),
            (EAGAIN, "the message does not fit: the queue's bytes, or its messages, would pass its limit (kernel.msgmnb, 16384, when it was made)"),
        ];
    /// `msgrcv(id, msg, size, 0, IPC_NOWAIT)`.
    Msgrcv = "msgrcv" { size: u64 = Int }
        "msgrcv(2) of the oldest message (type 0) with IPC_NOWAIT into a buffer of SIZE bytes, from the queue of the task's last msgget; reports the message's size"
        kernel: ["do_msgrcv (ipc/msg.c)", "ipcperms (ipc/util.c)"]
        errors: [
            (EINVAL, "the id of the task's last msgget names no queue of its ipc namespace"),
            (EACCES, "the queue's mode grants the task no read permission, and it has no CAP_IPC_OWNER over the ipc namespace's owner"),
            (ENOMSG, "the queue has no message"),
            (E2BIG, "the oldest message is longer than SIZE (it stays queued)"),
        ];
    /// `msgctl(id, cmd)`.
    Msgctl = "msgctl" { cmd: u64 = IpcCmd [label] }
        "msgctl(2) of the queue of the task's last msgget: IPC_STAT reports its messages, their bytes and its byte limit (msg_qnum, msg_cbytes, msg_qbytes); IPC_RMID removes it with its messages"
        kernel: ["ksys_msgctl (ipc/msg.c)", "msgctl_stat (ipc/msg.c)", "freeque (ipc/msg.c)", "ipcctl_obtain_check (ipc/util.c)"]
        errors: [
            (EINVAL, "the id of the task's last msgget names no queue of its ipc namespace"),
            (EACCES, "IPC_STAT, and the queue's mode grants the task no read permission, and it has no CAP_IPC_OWNER over the ipc namespace's owner"),
            (EPERM, "IPC_RMID by a task whose euid neither owns nor made the queue, without CAP_SYS_ADMIN over the ipc namespace's owner"),
        ];
    /// `semget(key, nsems, flags)`.
    Semget = "semget" { key: u64 = Int, nsems: u64 = Int, flags: u64 = IpcFlags }
        "semget(2) of the SysV semaphore set of KEY (0 is IPC_PRIVATE: always a new set) of NSEMS semaphores, each 0, in the task's ipc namespace, FLAGS as msgget's; the task's later semop and semctl use the set it returns (a child that acts starts with its parent's). A set lives until semctl(IPC_RMID) or its namespace's end"
        kernel: ["ksys_semget (ipc/sem.c)", "ipcget (ipc/util.c)", "newary (ipc/sem.c)", "sem_more_checks (ipc/sem.c)"]
        errors: [
            (EINVAL, "NSEMS is above 32000 (kernel.sem's SEMMSL), or 0 for a new set, or above the semaphores of the set KEY names"),
            (ENOENT, "no set of the namespace has KEY and FLAGS has no IPC_CREAT"),
            (EEXIST, "a set has KEY and FLAGS has IPC_CREAT and IPC_EXCL"),
            (EACCES, "a set has KEY and its mode grants the task not every permission FLAGS's mode asks, and the task has no CAP_IPC_OWNER over the ipc namespace's owner"),
            (ENOSPC, "a new set, and the namespace has kernel.sem's SEMMNI (32000) sets or would pass its SEMMNS semaphores"),
        ];
    /// `semop(id, {num, op, IPC_NOWAIT}, 1)`.
    Semop = "semop" { num: u64 = Int, op: i64 = SignedInt }
        "semop(2) of one operation OP on semaphore NUM with IPC_NOWAIT (no SEM_UNDO), on the set of the task's last semget: a positive OP adds to the value, a negative one takes from it, 0 waits for the value to be 0"
        kernel: ["do_semtimedop (ipc/sem.c)", "perform_atomic_semop (ipc/sem.c)", "ipcperms (ipc/util.c)"]
        errors: [
            (EINVAL, "the id of the task's last semget names no set of its ipc namespace"),
            (EFBIG, "NUM is not below the set's semaphores"),
            (EACCES, "the set's mode grants the task no write permission (no read permission for an OP of 0), and it has no CAP_IPC_OWNER over the ipc namespace's owner"),
            (EAGAIN, "the operation would wait: OP takes more than the value, or OP is 0 and the value is not"),
            (ERANGE, "the value would pass 32767 (SEMVMX)"),
        ];
    /// `semctl(id, num, cmd)`.
    Semctl = "semctl" { num: u64 = Int, cmd: u64 = IpcCmd [label] }
        "semctl(2) of the set of the task's last semget: GETVAL reports semaphore NUM's value; IPC_STAT reports the set's semaphores (sem_nsems); IPC_RMID removes the set (NUM unused)"
        kernel: ["ksys_semctl (ipc/sem.c)", "semctl_main (ipc/sem.c)", "semctl_stat (ipc/sem.c)", "freeary (ipc/sem.c)"]
        errors: [
            (EINVAL, "the id of the task's last semget names no set of its ipc namespace, or GETVAL of a NUM not below its semaphores"),
            (EACCES, "GETVAL or IPC_STAT, and the set's mode grants the task no read permission, and it has no CAP_IPC_OWNER over the ipc namespace's owner"),
            (EPERM, "IPC_RMID by a task whose euid neither owns nor made the set, without CAP_SYS_ADMIN over the ipc namespace's owner"),
        ];
    /// `semctl(id, num, SETVAL, value)`.
    SemctlSetval = "semctl_setval" { num: u64 = Int, value: u64 = Int }
        "semctl(2) SETVAL of semaphore NUM of the set of the task's last semget to VALUE"
        kernel: ["semctl_setval (ipc/sem.c)"]
        errors: [
            (EINVAL, "the task has no set (its id is -1, refused before the value is looked at), its last semget's id names no set of its ipc namespace, or NUM is not below its semaphores"),
            (ERANGE, "VALUE is above 32767 (SEMVMX)"),
            (EACCES, "the set's mode grants the task no write permission, and it has no CAP_IPC_OWNER over the ipc namespace's owner"),
        ];
    /// Write an ipc sysctl of the task's ipc namespace.
    IpcSysctlWrite = "ipc_sysctl_write" { name: String = IpcSysctl [label], value: u64 = Int }
        "write VALUE to /proc/sys/NAME of the task's ipc namespace: kernel.msgmni (queues, 32000 in a new namespace, at most 32768), kernel.msgmax (bytes of a message, 8192), kernel.msgmnb (bytes of a queue made from then on, 16384) or kernel.shmmni (segments, 4096, at most 32768)"
        kernel: ["proc_ipc_dointvec_minmax (ipc/ipc_sysctl.c)", "ipc_permissions (ipc/ipc_sysctl.c)"]
        errors: [
            (EACCES, "the task's euid is not root of the user namespace that owns its ipc namespace (before v6.1, patch ipc-sysctl-namespace-root: not global root)"),
            (EINVAL, "VALUE is above the sysctl's most"),
        ];
    /// `getpid()`.
    Getpid = "getpid" {}
        "getpid(2): reports the task's pid as its own pid namespace numbers it (1 for a namespace's init, then 2, 3, ... for the processes born in it), where that namespace is one the scenario's ops made (clone or unshare with CLONE_NEWPID); in the namespace the scenario's task started in the numbers are the machine's, and nothing is reported"
        kernel: ["__task_pid_nr_ns (kernel/pid.c)"];
    /// `getppid()`.
    Getppid = "getppid" {}
        "getppid(2): reports the task's parent's pid as the task's pid namespace numbers it, 0 when the parent is outside it (the init of a namespace the scenario made); reported where getpid reports"
        kernel: ["__task_pid_nr_ns (kernel/pid.c)", "task_tgid_nr_ns (kernel/pid.c)"];
    /// `getresgid()`: the task's real, effective and saved gids.
    Getresgid = "getresgid" {}
        "getresgid(2): reports the real, effective and saved gids as the task's user namespace sees them, 65534 (overflowgid) for one it does not map"
        kernel: ["__do_sys_getresgid (kernel/sys.c)"];
    /// Fault injection: the task's `nth` allocation at `site` from now on
    /// fails.
    FailAlloc = "fail_alloc" { site: String = FaultSite [label], nth: u64 = Int }
        "fault injection, as the kernel's failslab with /proc/thread-self/fail-nth but counting one site: the NTH allocation (from 1) that the task's later calls make at the named site fails, once, and the call returns what its error path makes of it. On a kernel: the first allocation (NTH 1) under the site's function, through failslab's stack-trace filter, in a disposable VM of the lab (`nssim lab build-fault-kernel`)"
        kernel: ["should_failslab (mm/failslab.c)"];
}

/// A part of the kernel the model covers: what a patch changes and what an
/// op runs through, so that a report can name the patches that bear on a
/// scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Area {
    /// ipc/namespace.c: creating and freeing ipc namespaces.
    Ipc,
    /// kernel/user_namespace.c and the ucount limits on it.
    Userns,
    /// The uid/gid maps of kernel/user_namespace.c.
    Idmap,
    /// RLIMIT_NPROC: copy_process, the set*uid paths, execve, prlimit.
    Nproc,
    /// Uevents and the netlink sockets that carry them.
    Uevent,
    /// net/core/net_namespace.c.
    Netns,
    /// The max_* sysctls of kernel/ucount.c.
    Sysctl,
    /// kernel/ucount.c's entries and counters, which every namespace
    /// creation and every credential of v5.14 and later go through.
    Ucounts,
    /// kernel/signal.c's queued signals and RLIMIT_SIGPENDING, charged
    /// to ucounts from v5.14.
    Signal,
    /// ipc/mqueue.c's POSIX message queues and RLIMIT_MSGQUEUE, charged
    /// to ucounts from v5.14.
    Mqueue,
    /// ipc/shm.c's SysV shared memory segments and their lifetime.
    Shm,
    /// The rlimit counters of kernel/ucount.c (RLIMIT_NPROC, MSGQUEUE,
    /// SIGPENDING and MEMLOCK from v5.14) and the maxima they are held to.
    Rlimit,
    /// kernel/pid_namespace.c: creating, nesting and freeing pid
    /// namespaces.
    Pidns,
}

impl Area {
    /// The areas a kernel function (`name (file)`, as ops declare them)
    /// belongs to.
    pub fn of_function(function: &str) -> &'static [Area] {
        let (name, file) = function
            .split_once(" (")
            .map_or((function, ""), |(n, f)| (n, f.trim_end_matches(')')));
        match file {
            "ipc/namespace.c" if name == "create_ipc_ns" => &[Area::Ipc, Area::Ucounts],
            "ipc/namespace.c" => &[Area::Ipc],
            "ipc/mqueue.c" => &[Area::Mqueue, Area::Ucounts, Area::Rlimit],
            "ipc/shm.c" | "ipc/ipc_sysctl.c" => &[Area::Shm, Area::Ipc],
            "mm/mlock.c" => &[Area::Shm, Area::Ucounts, Area::Rlimit],
            "kernel/user_namespace.c" if name == "create_user_ns" => {
                &[Area::Userns, Area::Idmap, Area::Ucounts]
            }
            "kernel/user_namespace.c" => &[Area::Userns, Area::Idmap],
            "kernel/ucount.c" if name.contains("rlimit") => &[Area::Rlimit, Area::Ucounts],
            "kernel/ucount.c" | "fs/proc/proc_sysctl.c" => &[Area::Sysctl, Area::Userns],
            // A gid call goes through the maps, not the process count.
            "kernel/sys.c" if name.contains("gid") => &[Area::Idmap],
            "kernel/groups.c" => &[Area::Idmap, Area::Userns],
            "kernel/sys.c" | "fs/exec.c" => &[Area::Nproc, Area::Ucounts, Area::Rlimit],
            "kernel/fork.c" if name == "copy_process" => {
                &[Area::Nproc, Area::Ucounts, Area::Rlimit]
            }
            "kernel/signal.c" => &[Area::Signal, Area::Ucounts, Area::Rlimit],
            "net/core/net_namespace.c" if name == "copy_net_ns" => &[Area::Netns, Area::Ucounts],
            "kernel/pid_namespace.c" => &[Area::Pidns, Area::Ucounts],
            "lib/kobject_uevent.c"
            | "net/netlink/af_netlink.c"
            | "drivers/base/core.c"
            | "net/core/dev.c" => &[Area::Uevent],
            "net/core/net_namespace.c" => &[Area::Netns],
            // A capability over a file counts only where the namespace
            // maps the file's owner and group.
            "kernel/capability.c" if name == "capable_wrt_inode_uidgid" => &[Area::Idmap],
            _ => &[],
        }
    }
}

impl Op {
    /// The areas of the kernel the op runs through.
    pub fn areas(&self) -> Vec<Area> {
        let mut areas: Vec<Area> = self
            .kernel_functions()
            .iter()
            .flat_map(|f| Area::of_function(f).iter().copied())
            .collect();
        areas.sort();
        areas.dedup();
        areas
    }

    /// The kernel functions the op runs through: its declaration's, then,
    /// for each CLONE_NEW* flag it passes, the one that makes that new
    /// namespace (`unshare(CLONE_NEWIPC)`: `ksys_unshare`, `create_ipc_ns`).
    pub fn kernel_functions(&self) -> Vec<&'static str> {
        let flags = match self {
            Op::Unshare { flags }
            | Op::Clone { flags }
            | Op::CloneChild { flags, .. }
            | Op::UnshareAndExit { flags } => *flags,
            _ => 0,
        };
        let mut out = self.info().kernel.to_vec();
        out.extend(crate::clone_flags::creators(flags));
        out
    }

    /// Its declaration in [`OPS`].
    pub fn info(&self) -> &'static OpInfo {
        let name = self.name();
        OPS.iter()
            .find(|o| o.name == name)
            .expect("every op is declared in OPS")
    }
}

/// The declaration of op `name`.
pub fn op(name: &str) -> Option<&'static OpInfo> {
    OPS.iter().find(|o| o.name == name)
}

/// Whether `op` queues or takes a signal.
pub fn queues_or_takes(op: &Op) -> bool {
    matches!(op, Op::Sigqueue { .. } | Op::Sigtimedwait {})
}

/// Whether `op` makes, opens or removes a message queue.
pub fn uses_mqueue(op: &Op) -> bool {
    matches!(
        op,
        Op::MqOpen { .. } | Op::MqOpenExisting { .. } | Op::MqUnlink { .. }
    )
}

/// Whether `op` charges locked memory to the task's user (SHM_LOCK), so
/// that the run needs credentials that hold what is charged.
pub fn locks_memory(op: &Op) -> bool {
    matches!(op, Op::ShmLock {})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_show_the_marked_arguments() {
        let unshare = Op::build("unshare", vec![ArgValue::Flags(0x0800_0000)]).unwrap();
        assert_eq!(unshare.label(), "unshare(CLONE_NEWIPC)");
        let setres = Op::build(
            "setresuid",
            vec![ArgValue::Int(0), ArgValue::Int(1), ArgValue::Int(2)],
        );
        assert_eq!(setres.unwrap().label(), "setresuid(0, 1, 2)");
        let rl = Op::build(
            "setrlimit",
            vec![ArgValue::Text("NPROC".into()), ArgValue::Int(3)],
        );
        assert_eq!(rl.unwrap().label(), "setrlimit(NPROC, 3)");
        assert_eq!(Op::build("fork", vec![]).unwrap().label(), "fork");
        let write = Op::build("write_uid_map", vec![ArgValue::Text("0 0 1".into())]);
        assert_eq!(write.unwrap().label(), "write_uid_map");
    }

    #[test]
    fn kernel_functions_add_the_makers_of_the_new_namespaces() {
        let unshare = Op::build("unshare", vec![ArgValue::Flags(0x0800_0000)]).unwrap();
        assert_eq!(
            unshare.kernel_functions(),
            [
                "ksys_unshare (kernel/fork.c)",
                "create_ipc_ns (ipc/namespace.c)"
            ]
        );
        let sleep = Op::build("sleep", vec![ArgValue::Duration(1)]).unwrap();
        assert!(sleep.kernel_functions().is_empty());
        // Every function is named with its file.
        for op in OPS {
            for f in op.kernel {
                assert!(f.ends_with(".c)") && f.contains(" ("), "{}: {f}", op.name);
            }
        }
    }

    #[test]
    fn build_refuses_arguments_that_do_not_fit() {
        assert!(Op::build("fork", vec![ArgValue::Int(1)]).is_none());
        assert!(Op::build("setuid", vec![]).is_none());
        assert!(Op::build("setuid", vec![ArgValue::Text("x".into())]).is_none());
        assert!(Op::build("nope", vec![]).is_none());
    }

    #[test]
    fn every_declared_op_has_a_unique_name() {
        let mut names: Vec<&str> = OPS.iter().map(|o| o.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), OPS.len());
    }
}
