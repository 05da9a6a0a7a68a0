//! The invariant `security.denied_changes_nothing`: an operation the kernel
//! refuses (EPERM, EACCES, EAGAIN, EINVAL...) leaves what it targeted as it
//! was. Before each guarded operation the world notes the state it
//! targets; after a failure it compares. Another guarded operation on the
//! same target that ran meanwhile (even one that had started before) may
//! have changed it, so the comparison is made only when none did (for the
//! uid_map, gid_map and setgroups files, none on a file of the same kind:
//! a write to another task's file finds its namespace only inside the op).
//!
//! Targets: a uid/gid map write (also through a file another task's
//! credentials opened), the map of the namespace written; a
//! setgroups write, the namespace's setgroups flag; a `max_*` sysctl write,
//! the limit; a setns (also through a kept file), the task's namespaces;
//! set*uid, set*gid, setgroups, setrlimit, execve, fork and clone, the
//! task's ids, groups, RLIMIT_NPROC and children. (An injected uevent that is refused must not
//! be delivered: `uevent.injection_permitted` checks that.)

use super::World;
use crate::errno::Errno;
use crate::invariants::Invariant;
use crate::setup::{Op, UsernsFile};
use crate::task::Task;
use sim::Outcome;
use std::sync::Arc;
use ucounts::UcountType;
use userns::MapKind;

impl World {
    /// What guarded `op` by `p` targets (its key and its state), noted as
    /// the op starts; `None` when denials are not checked or `op` is not
    /// guarded.
    pub(super) fn denial_target(&self, p: &Task, op: &Op) -> Option<DenialWatch> {
        let (key, state, found) = self.targeted_state(p, op, None)?;
        let mut guarded = self.guarded.lock();
        let (in_flight, epoch) = guarded.entry(key.clone()).or_default();
        let alone = *in_flight == 0;
        *in_flight += 1;
        *epoch += 1;
        Some(DenialWatch {
            key,
            state,
            found,
            epoch: *epoch,
            alone,
        })
    }

    /// The key of what `op` targets (the namespace, limit or task), its
    /// state now, and the user namespace whose file it writes. A file of
    /// another task is bound to the namespace found when it was opened,
    /// so after the op its state is that of the namespace `found` before,
    /// not of the one the task may have moved to since.
    fn targeted_state(
        &self,
        p: &Task,
        op: &Op,
        found: Option<&Arc<userns::UserNamespace>>,
    ) -> Option<(String, String, Option<Arc<userns::UserNamespace>>)> {
        if !self.check_denials {
            return None;
        }
        if let Some(ns) = found {
            let (file, _) = userns_file_of(op).unwrap_or((UsernsFile::UidMap, None));
            let (key, state) = userns_file_state(file, ns);
            return Some((key, state, Some(Arc::clone(ns))));
        }
        let (key, state) = self.targeted_state_now(p, op)?;
        let ns = match op {
            Op::WriteUidMapOf { target, .. }
            | Op::WriteGidMapOf { target, .. }
            | Op::WriteSetgroupsOf { target, .. } => Some(self.task_named(target)?.user_ns()),
            _ => None,
        };
        Some((key, state, ns))
    }

    /// [`World::targeted_state`] as the world is now.
    fn targeted_state_now(&self, p: &Task, op: &Op) -> Option<(String, String)> {
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
                Some(userns_file_state(file, &ns))
            }
            Op::WriteOpened { .. } => {
                let ns = p
                    .own
                    .lock()
                    .opened_map
                    .as_ref()
                    .map(|f| Arc::clone(&f.ns))?;
                Some(userns_file_state(UsernsFile::UidMap, &ns))
            }
            Op::SetnsUser { .. }
            | Op::SetnsFd { .. }
            | Op::SetnsNet { .. }
            | Op::SetnsIpc { .. } => {
                let ns = p.nsproxy();
                Some((
                    format!("namespaces of {}", p.name),
                    format!(
                        "user namespace {}, ipc namespace {:?}, network namespace {}",
                        p.user_ns().name,
                        ns.ipc_ns.obj,
                        ns.net_ns.id
                    ),
                ))
            }
            Op::SysctlWrite { name, .. } => {
                let t = UcountType::from_sysctl(name)?;
                let ns = p.user_ns();
                Some((
                    format!("{name} of {}", ns.name),
                    format!("{name} = {}", ns.ucounts_ns.peek_max(t)),
                ))
            }
            Op::Setuid { .. }
            | Op::Setresuid { .. }
            | Op::Seteuid { .. }
            | Op::Setgid { .. }
            | Op::Setegid { .. }
            | Op::Setresgid { .. }
            | Op::Setgroups { .. }
            | Op::Setrlimit { .. }
            | Op::Execve {}
            | Op::Fork {}
            | Op::Clone { .. } => Some((format!("task {}", p.name), crate::process::peek_task(p))),
            _ => None,
        }
    }

    /// After guarded `op` by `p`: when it failed and no other guarded op
    /// on its target ran meanwhile, end the run if the target changed.
    pub(super) fn check_denial(
        &self,
        p: &Task,
        op: &Op,
        result: Result<(), Errno>,
        watch: DenialWatch,
    ) {
        let alone = {
            let mut guarded = self.guarded.lock();
            let (in_flight, epoch) = guarded.get_mut(&watch.key).expect("noted at the start");
            *in_flight -= 1;
            watch.alone && *epoch == watch.epoch
        };
        let Err(errno) = result else {
            return;
        };
        if !alone {
            return;
        }
        let Some((_, after, _)) = self.targeted_state(p, op, watch.found.as_ref()) else {
            return;
        };
        let before = watch.state;
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

/// A guarded op's target as it started: its key, its state, and whether
/// it was the only guarded op on it (`epoch` counts the ops started on
/// the key; another that starts later changes it).
pub(super) struct DenialWatch {
    key: String,
    state: String,
    /// The user namespace of another task's file, as found at the start.
    found: Option<Arc<userns::UserNamespace>>,
    epoch: u64,
    alone: bool,
}

/// The key of a uid_map, gid_map or setgroups file and its state now.
/// The key is the kind of file alone, not its namespace: a write to
/// another task's file finds the namespace when it opens the file, inside
/// the op, after its guard was noted (that task may have moved to a new
/// namespace meanwhile), so two writes of one namespace may start under
/// different namespaces. Any two writes of one kind that overlap leave
/// each other's failure unjudged.
fn userns_file_state(file: UsernsFile, ns: &userns::UserNamespace) -> (String, String) {
    let state = match file {
        UsernsFile::UidMap => format!("uid_map {:?}", ns.map(MapKind::Uid).peek_committed()),
        UsernsFile::GidMap => format!("gid_map {:?}", ns.map(MapKind::Gid).peek_committed()),
        UsernsFile::Setgroups => format!("setgroups allowed: {}", ns.setgroups_allowed()),
    };
    (file.name().to_string(), state)
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
