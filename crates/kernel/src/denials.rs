//! The invariant `security.denied_changes_nothing`: an operation the kernel
//! refuses (EPERM, EACCES, EAGAIN, EINVAL...) leaves what it targeted as it
//! was. Before each guarded operation the world notes the state it
//! targets; after a failure it compares. A guarded operation of another
//! task that succeeded in between may have changed the same state, so the
//! comparison is made only when none did.
//!
//! Targets: a uid/gid map write, the map of the namespace written; a
//! setgroups write, the namespace's setgroups flag; a `max_*` sysctl write,
//! the limit; a setns, the task's namespaces; set*uid, setrlimit, execve, fork and clone, the task's uids,
//! RLIMIT_NPROC and children. (An injected uevent that is refused must not
//! be delivered: `uevent.injection_permitted` checks that.)

use super::World;
use crate::errno::Errno;
use crate::invariants::Invariant;
use crate::setup::{Op, UsernsFile};
use crate::task::Task;
use sim::Outcome;
use std::sync::atomic::Ordering;
use ucounts::UcountType;
use userns::MapKind;

impl World {
    /// The state `op` targets and the count of guarded operations that
    /// succeeded so far, when denials are checked and `op` is guarded.
    pub(super) fn denial_target(&self, p: &Task, op: &Op) -> Option<(String, u64)> {
        let state = self.targeted_state(p, op)?;
        Some((state, self.guarded_successes.load(Ordering::Relaxed)))
    }

    fn targeted_state(&self, p: &Task, op: &Op) -> Option<String> {
        if !self.check_denials {
            return None;
        }
        match op {
            Op::WriteUidMap { .. }
            | Op::WriteGidMap { .. }
            | Op::WriteSetgroups { .. }
            | Op::WriteUidMapOf { .. }
            | Op::WriteGidMapOf { .. }
            | Op::WriteSetgroupsOf { .. } => {
                let (file, target) = userns_file_of(op)?;
                let ns = match target {
                    None => p.user_ns(),
                    Some(t) => self.task_named(t)?.user_ns(),
                };
                Some(match file {
                    UsernsFile::UidMap => {
                        format!("uid_map {:?}", ns.map(MapKind::Uid).peek_committed())
                    }
                    UsernsFile::GidMap => {
                        format!("gid_map {:?}", ns.map(MapKind::Gid).peek_committed())
                    }
                    UsernsFile::Setgroups => {
                        format!("setgroups allowed: {}", ns.setgroups_allowed())
                    }
                })
            }
            Op::SetnsUser { .. } | Op::SetnsNet { .. } | Op::SetnsIpc { .. } => {
                let ns = p.nsproxy();
                Some(format!(
                    "user namespace {}, ipc namespace {:?}, network namespace {}",
                    p.user_ns().name,
                    ns.ipc_ns.obj,
                    ns.net_ns.id
                ))
            }
            Op::SysctlWrite { name, .. } => {
                let t = UcountType::from_sysctl(name)?;
                Some(format!("{name} = {}", p.user_ns().ucounts_ns.peek_max(t)))
            }
            Op::Setuid { .. }
            | Op::Setresuid { .. }
            | Op::Setrlimit { .. }
            | Op::Execve {}
            | Op::Fork {}
            | Op::Clone { .. } => Some(crate::process::peek_task(p)),
            _ => None,
        }
    }

    /// After guarded `op` by `p`: count a success; after a failure, end the
    /// run if what it targeted changed and no other guarded operation
    /// succeeded meanwhile.
    pub(super) fn check_denial(
        &self,
        p: &Task,
        op: &Op,
        result: Result<(), Errno>,
        before: (String, u64),
        alone: bool,
    ) {
        let errno = match result {
            Ok(()) => {
                self.guarded_successes.fetch_add(1, Ordering::Relaxed);
                return;
            }
            Err(e) => e,
        };
        let (before, successes) = before;
        if !alone || self.guarded_successes.load(Ordering::Relaxed) != successes {
            return;
        }
        let Some(after) = self.targeted_state(p, op) else {
            return;
        };
        if after != before {
            sim::fail(Outcome::Violation {
                invariant: Invariant::SecurityDeniedChangesNothing.name().into(),
                detail: format!(
                    "{} by {} failed with {errno} but changed what it targeted: {before} became {after}",
                    op.label(),
                    p.name
                ),
            });
        }
    }
}

/// The `/proc/PID` file a write op names, and the task whose file it is
/// (`None`: the writer's own).
pub(super) fn userns_file_of(op: &Op) -> Option<(UsernsFile, Option<&str>)> {
    Some(match op {
        Op::WriteUidMap { .. } => (UsernsFile::UidMap, None),
        Op::WriteGidMap { .. } => (UsernsFile::GidMap, None),
        Op::WriteSetgroups { .. } => (UsernsFile::Setgroups, None),
        Op::WriteUidMapOf { target, .. } => (UsernsFile::UidMap, Some(target)),
        Op::WriteGidMapOf { target, .. } => (UsernsFile::GidMap, Some(target)),
        Op::WriteSetgroupsOf { target, .. } => (UsernsFile::Setgroups, Some(target)),
        _ => return None,
    })
}
