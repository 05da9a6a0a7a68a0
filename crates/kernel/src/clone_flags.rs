//! The clone/unshare flags the model understands (include/uapi/linux/sched.h),
//! and the names a scenario may write them by.

pub const CLONE_NEWIPC: u64 = 0x0800_0000;
pub const CLONE_NEWUSER: u64 = 0x1000_0000;
pub const CLONE_NEWNET: u64 = 0x4000_0000;

/// Clone flags a scenario may name: (name, value, modelled, the kernel
/// function that makes the flag's new namespace, as `function (file)`).
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
        "CLONE_NEWNET",
        CLONE_NEWNET,
        true,
        "copy_net_ns (net/core/net_namespace.c)",
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
