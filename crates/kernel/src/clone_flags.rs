//! The clone/unshare flags the model understands (include/uapi/linux/sched.h),
//! and the names a scenario may write them by.

pub const CLONE_FS: u64 = 0x0000_0200;
pub const CLONE_FILES: u64 = 0x0000_0400;
pub const CLONE_NEWIPC: u64 = 0x0800_0000;
pub const CLONE_NEWUSER: u64 = 0x1000_0000;
pub const CLONE_NEWPID: u64 = 0x2000_0000;
pub const CLONE_NEWNET: u64 = 0x4000_0000;

/// Flags that `unshare` takes and `clone` must not: unsharing gives the
/// task a copy of its fs information or file table of its own, which
/// holds nothing the model keeps; with `clone` they would share them
/// instead, which it does not tell apart.
pub const UNSHARE_ONLY: u64 = CLONE_FS | CLONE_FILES;

/// Clone flags a scenario may name: (name, value, modelled, the kernel
/// function that makes the flag's new namespace or copy, as `function
/// (file)`).
pub const CLONE_FLAGS: &[(&str, u64, bool, &str)] = &[
    (
        "CLONE_NEWIPC",
        CLONE_NEWIPC,
        true,
        "create_ipc_ns (ipc/namespace.c)",
    ),
    (
        "CLONE_NEWUSER",
        CLONE_NEWUSER,
        true,
        "create_user_ns (kernel/user_namespace.c)",
    ),
    (
        "CLONE_NEWPID",
        CLONE_NEWPID,
        true,
        "create_pid_namespace (kernel/pid_namespace.c)",
    ),
    (
        "CLONE_NEWNET",
        CLONE_NEWNET,
        true,
        "copy_net_ns (net/core/net_namespace.c)",
    ),
    ("CLONE_FS", CLONE_FS, true, "unshare_fs (kernel/fork.c)"),
    (
        "CLONE_FILES",
        CLONE_FILES,
        true,
        "unshare_fd (kernel/fork.c)",
    ),
];

/// The kernel functions that make the new namespaces of `flags`, in
/// [`CLONE_FLAGS`] order.
pub fn creators(flags: u64) -> impl Iterator<Item = &'static str> {
    CLONE_FLAGS
        .iter()
        .filter(move |f| flags & f.1 != 0)
        .map(|f| f.3)
}
