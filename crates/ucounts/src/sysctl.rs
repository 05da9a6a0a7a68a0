//! `/proc/sys/user/max_*` (kernel/ucount.c `user_table`, `set_lookup`,
//! `set_permissions`): each process sees the files of its own user
//! namespace; everyone may read them, and only a process with
//! CAP_SYS_RESOURCE in that namespace may write them (the file mode seen by
//! others is read-only, so the open for writing fails with EACCES). Values
//! are 0..INT_MAX.
//!
//! Defaults: INT_MAX in every child namespace (`create_user_ns`). In the
//! initial namespace `fork_init` sets every limit to `max_threads / 2`,
//! then inotify and fanotify set their own: 128 instances and groups, and
//! a number of watches and marks that depends on the memory size.

use crate::{UcountType, UcountsNs, UCOUNT_MAX_LIMIT};
use thiserror::Error;

/// Why a `max_*` write failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum SysctlError {
    /// EACCES: no CAP_SYS_RESOURCE in the namespace that owns the file.
    #[error("EACCES: writing max_* needs CAP_SYS_RESOURCE in the user namespace that owns it")]
    NotPermitted,
    /// EINVAL: outside 0..=INT_MAX.
    #[error("EINVAL: max_* takes a value in 0..=2147483647")]
    OutOfRange,
}

/// Default inotify and fanotify limits in the initial namespace
/// (`inotify_max_user_instances`, `fanotify_max_user_groups`).
pub const INIT_INOTIFY_INSTANCES: i64 = 128;
pub const INIT_FANOTIFY_GROUPS: i64 = 128;

/// The default of `max_*` for type `t`: INT_MAX in a child namespace; in
/// the initial one `max_threads / 2`, except the inotify and fanotify
/// limits (`watches_or_marks` stands for the memory-dependent default).
pub fn default_max(t: UcountType, is_init: bool, max_threads: i64, watches_or_marks: i64) -> i64 {
    if !is_init {
        return UCOUNT_MAX_LIMIT;
    }
    match t {
        UcountType::InotifyInstances => INIT_INOTIFY_INSTANCES,
        UcountType::FanotifyGroups => INIT_FANOTIFY_GROUPS,
        UcountType::InotifyWatches | UcountType::FanotifyMarks => watches_or_marks,
        _ => max_threads / 2,
    }
}

impl UcountsNs {
    /// Read `max_*` of this namespace (anyone may).
    pub fn sysctl_read(&self, t: UcountType) -> i64 {
        self.max(t)
    }

    /// Write `max_*` of this namespace. `cap_sys_resource` says whether
    /// the writer has CAP_SYS_RESOURCE in this namespace.
    pub fn sysctl_write(
        &self,
        t: UcountType,
        value: i64,
        cap_sys_resource: bool,
    ) -> Result<(), SysctlError> {
        if !cap_sys_resource {
            return Err(SysctlError::NotPermitted);
        }
        if !(0..=UCOUNT_MAX_LIMIT).contains(&value) {
            return Err(SysctlError::OutOfRange);
        }
        self.set_max(t, value);
        Ok(())
    }
}
