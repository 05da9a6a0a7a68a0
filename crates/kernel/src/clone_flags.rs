//! The clone/unshare flags the model understands (include/uapi/linux/sched.h),
//! and the names a scenario may write them by.

pub const CLONE_NEWIPC: u64 = 0x0800_0000;
pub const CLONE_NEWUSER: u64 = 0x1000_0000;
pub const CLONE_NEWNET: u64 = 0x4000_0000;

/// Clone flags a scenario may name: (name, value, modelled).
pub const CLONE_FLAGS: &[(&str, u64, bool)] = &[
    ("CLONE_NEWIPC", CLONE_NEWIPC, true),
    ("CLONE_NEWUSER", CLONE_NEWUSER, true),
    ("CLONE_NEWNET", CLONE_NEWNET, true),
];
