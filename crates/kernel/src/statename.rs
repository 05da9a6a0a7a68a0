//! The simulated machine names its state for a stateful search
//! (`sim::Execution::name_state`, `dfs --no-reduction`): the search ends
//! an execution at a state it has explored from before.
//!
//! A task keeps part of its state on its stack while it is inside an op,
//! so the machine names its state only where no task is: every task waits
//! at the first scheduling point of an op (its syscall's entry, before it
//! reads anything shared), or has not started, or has exited, and the
//! kworker is idle (`sim::every_task_between_ops`). There each task is
//! named by where it is in its ops and by its process (credentials,
//! namespaces, limits, what it holds, its results so far), and the machine
//! by each subsystem's state: ipc (with its free queue and work), ucounts
//! (with the ledger), user namespaces (with their maps), network
//! namespaces and uevent sockets, process accounting, the workqueue, the
//! oracles, the scenario's locks and events. Each subsystem names its own
//! structs next to their definitions, taking them apart field by field so
//! that a field added to one does not compile until it is named or said to
//! be fixed. Where part of a state is not named yet (POSIX message queues,
//! SysV segments, pending signals, files a task keeps open, children that
//! act), the machine names no state and the search goes on as without the
//! cache.
//!
//! What belongs to one task goes in its part of the state, so that the
//! instances of a task, declared interchangeable, are recognised in any
//! order; the shared part never names a task.

use super::World;
use crate::setup::{Op, Setup};
use sim::{Execution, StateHasher};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// Whether `op`'s implementation begins with its syscall's scheduling
/// point, reading nothing shared before it, and keeps nothing of the
/// task's outside its process until then: a task waiting there is between
/// two ops. Every op is listed (no wildcard), so a new op is decided here.
pub(super) fn enters_at_its_first_point(op: &Op) -> bool {
    match op {
        Op::Unshare { .. }
        | Op::UnshareAndExit { .. }
        | Op::SysctlWrite { .. }
        | Op::MqPathWalk { .. }
        | Op::Lock { .. }
        | Op::Unlock { .. }
        | Op::Post { .. }
        | Op::Wait { .. }
        | Op::WriteUidMap { .. }
        | Op::WriteGidMap { .. }
        | Op::WriteSetgroups { .. }
        | Op::WriteUidMapOf { .. }
        | Op::WriteGidMapOf { .. }
        | Op::WriteSetgroupsOf { .. }
        | Op::OpenUidMapOf { .. }
        | Op::WriteOpened { .. }
        | Op::ReadUidMapOf { .. }
        | Op::ReadGidMapOf { .. }
        | Op::SetnsUser { .. }
        | Op::OpenNsUser { .. }
        | Op::SetnsFd { .. }
        | Op::CloseFd { .. }
        | Op::SetnsNet { .. }
        | Op::SetnsIpc { .. }
        | Op::UeventListen { .. }
        | Op::UeventRecv {}
        | Op::UeventRecvWait {}
        | Op::UeventClose {}
        | Op::UeventInject { .. }
        | Op::UeventDeviceEvent { .. }
        | Op::UeventNetdevEvent { .. }
        | Op::Fork {}
        | Op::Clone { .. }
        | Op::Exit {}
        | Op::Setgid { .. }
        | Op::Setegid { .. }
        | Op::Setresgid { .. }
        | Op::Setgroups { .. }
        | Op::Open { .. }
        | Op::Getresuid {}
        | Op::Getresgid {}
        | Op::Getpid {}
        | Op::Getppid {}
        | Op::Capget {}
        | Op::NsId { .. } => true,
        // The task's own state leaves it for the call (`Task::with_own`)
        // before the first point.
        Op::Setuid { .. }
        | Op::Setresuid { .. }
        | Op::Seteuid { .. }
        | Op::Execve {}
        | Op::Setrlimit { .. } => false,
        // A child that acts runs ops of its own.
        Op::ForkChild { .. } | Op::CloneChild { .. } => false,
        // Not named yet: signals, message queues, segments, injected
        // faults; a sleep's virtual time; a bug ends the run.
        Op::Sigqueue { .. }
        | Op::Sigtimedwait {}
        | Op::MqOpen { .. }
        | Op::MqOpenExisting { .. }
        | Op::MqUnlink { .. }
        | Op::Shmget { .. }
        | Op::WriteShmRmidForced { .. }
        | Op::ShmLock {}
        | Op::ShmUnlock {}
        | Op::Msgget { .. }
        | Op::Msgsnd { .. }
        | Op::Msgrcv { .. }
        | Op::Msgctl { .. }
        | Op::Semget { .. }
        | Op::Semop { .. }
        | Op::Semctl { .. }
        | Op::SemctlSetval { .. }
        | Op::ShmgetKey { .. }
        | Op::Shmat {}
        | Op::Shmdt {}
        | Op::Shmctl { .. }
        | Op::IpcSysctlWrite { .. }
        | Op::FailAlloc { .. }
        | Op::Sleep { .. }
        | Op::Bug { .. } => false,
    }
}

/// Whether the machine of `setup` can name its states at all: with no
/// guarded op checked around (`security.denied_changes_nothing` reads the
/// world before the op's first point) and no child that acts.
pub(super) fn can_name(setup: &Setup, check_denials: bool) -> bool {
    !check_denials && setup.children.is_empty()
}

/// Have the execution ask `world` to name its state, and declare the
/// instances of each task interchangeable.
pub(super) fn install(e: &mut Execution, world: &Arc<World>, setup: &Setup) {
    let mut next = 0;
    for t in &setup.tasks {
        let range = next..next + t.instances.max(1) as usize;
        next = range.end;
        if !t.sequential {
            let ids = range.filter_map(|i| world.tasks[i].sim_task.get().copied());
            e.interchangeable(ids);
        }
    }
    let w = Arc::clone(world);
    e.name_state(move |h| sim::every_task_between_ops() && w.name_state(h));
}

impl World {
    /// Name the machine's state (see the module doc); false where part of
    /// it is not named yet.
    fn name_state(&self, h: &mut StateHasher) -> bool {
        let World {
            // Fixed for the run:
            me: _,
            setup_children: _,
            task_index: _,
            init_nsproxy: _,
            check_denials: _,
            sysctl_store_first: _,
            setup_charges: _,
            files: _,
            uses_signals: _,
            pidns_patches: _,
            unshare_puts_nsproxy: _,
            ipc_sysctl_namespace_root: _,
            create_needs_mapped_owner: _,
            // Labels the namespaces tasks make, nothing more.
            userns_made: _,
            // What the run has judged so far, which no future depends on.
            judged: _,
            tasks,
            acting_children,
            results,
            locks,
            events,
            guarded,
            ipc,
            ucounts,
            userns,
            net,
            procs,
            faults,
            leaked_nsproxies,
            wq,
        } = self;
        if !acting_children.lock().is_empty() || !guarded.lock().is_empty() || faults.armed() {
            return false;
        }
        let mut named = self.name_tasks(tasks, &results.lock(), h);
        for (i, lock) in locks.values().enumerate() {
            let holder = *lock.holder.lock();
            h.write_u8(holder.is_some() as u8);
            if let Some(t) = holder {
                h.task(t, |p| p.write_usize(i));
            }
        }
        events.values().for_each(|e| h.write_u64(*e.posted.lock()));
        named &= ipc.name_state(h);
        named &= ucounts.name_state(h);
        userns.name_state(h);
        named &= net.uevent.name_state(h);
        procs.name_state(h);
        wq.name_state(h);
        let leaked = leaked_nsproxies.lock();
        h.write_usize(leaked.len());
        for n in leaked.iter() {
            named &= n.name_state(h);
        }
        named
    }

    /// Each task in its own part: its process and its results so far. A
    /// task not started yet (an instance of a sequential task) is named in
    /// the shared part, by its place in the task table.
    fn name_tasks(
        &self,
        tasks: &[Arc<crate::task::Task>],
        results: &super::Results,
        h: &mut StateHasher,
    ) -> bool {
        let mut named = true;
        for (i, task) in tasks.iter().enumerate() {
            let mut name = |p: &mut dyn Hasher| {
                named &= task.name_state(p);
                match results.get(&task.name) {
                    Some(r) => r.hash(&mut &mut *p),
                    None => p.write_u8(0xff),
                }
            };
            match task.sim_task.get() {
                Some(t) => h.task(*t, name),
                None => {
                    h.write_usize(i);
                    name(h);
                }
            }
        }
        named
    }
}
