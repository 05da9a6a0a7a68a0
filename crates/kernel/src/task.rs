//! A simulated process: `struct task_struct` reduced to what the model
//! uses (include/linux/sched.h). One value holds everything a syscall asks
//! about a process: its credentials (the `userns` crate's [`Cred`], the
//! one model of them), its nsproxy, its RLIMIT_NPROC, its children and its
//! uevent socket. Scenario tasks and the children they fork are both
//! [`Task`]s; tasks are found by [`TaskIdx`], never by name.

use ipcns::IpcNamespace;
use sim::HostMutex as Mutex;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use ucounts::RlimitType;
use uevent::{Listener, Net};
use userns::Cred;

/// What a scenario's process starts with as soft and hard limit of `t`
/// (RLIMIT_NPROC: the scenario's, or none).
pub fn initial_rlimit(t: RlimitType) -> u64 {
    match t {
        RlimitType::Sigpending => crate::signal::DEFAULT_RLIMIT_SIGPENDING,
        RlimitType::Msgqueue => ipcns::mqueue::MQ_BYTES_MAX,
        // MLOCK_LIMIT (8 MiB from v5.16; 64 KiB before).
        RlimitType::Memlock => 8 * 1024 * 1024,
        RlimitType::Nproc => ucounts::RLIM_INFINITY,
    }
}

/// The rlimit maxima the initial user namespace records: none from
/// `ucounts-init-rlimits-unlimited`, the boot task's rlimits between
/// v5.14-rc1 (`nproc-ucounts`, which moved the rlimits into ucounts) and
/// that fix.
pub fn init_rlimit_maxima(
    patches: &crate::profile::ActivePatches,
) -> Option<[u64; RlimitType::COUNT]> {
    if !patches.has(crate::catalog::Patch::NprocUcounts)
        || patches.has(crate::catalog::Patch::UcountsInitRlimitsUnlimited)
    {
        return None;
    }
    Some(RlimitType::ALL.map(boot_rlimit))
}

/// What the first process of a machine like the conformance cases' starts
/// with: half of `threads-max` processes and pending signals,
/// `MQ_BYTES_MAX` of queues, 64 KiB of locked memory (`MLOCK_LIMIT`
/// before v5.16).
fn boot_rlimit(t: RlimitType) -> u64 {
    match t {
        RlimitType::Nproc | RlimitType::Sigpending => crate::signal::DEFAULT_RLIMIT_SIGPENDING,
        RlimitType::Msgqueue => ipcns::mqueue::MQ_BYTES_MAX,
        RlimitType::Memlock => 64 * 1024,
    }
}

/// A scenario task instance's index in the world's task table.
pub type TaskIdx = usize;

/// `struct nsproxy`, reduced to the namespaces the model has. Shared by a
/// parent and the children it forks without CLONE_NEW* flags, as the
/// kernel's `get_nsproxy` shares it; replaced whole by
/// `switch_task_namespaces`.
pub struct Nsproxy {
    pub ipc_ns: Arc<IpcNamespace>,
    pub net_ns: Arc<Net>,
    /// The pid namespace the task's children are born in.
    pub pid_ns_for_children: Arc<crate::pidns::PidNamespace>,
}

/// What only the task's own syscalls touch: a syscall that takes
/// scheduling points works on it through [`Task::with_own`], never under
/// its lock.
#[derive(Default)]
pub struct Own {
    /// RLIMIT_NPROC (soft, hard).
    pub rlimit_nproc: (u64, u64),
    /// PF_NPROC_EXCEEDED.
    pub nproc_exceeded: bool,
    /// Live children, newest last.
    pub children: Vec<Arc<Task>>,
    /// Its NETLINK_KOBJECT_UEVENT socket, if it opened one.
    pub uevent_sock: Option<Arc<Listener>>,
    /// The uid_map file `open_uid_map_of` keeps.
    pub opened_map: Option<OpenedMap>,
    /// The `/proc/PID/ns/user` files `open_ns_user` keeps, by the names
    /// the scenario gives them: each holds a reference on its namespace.
    pub ns_files: BTreeMap<String, Arc<userns::UserNamespace>>,
    /// The POSIX message queues it opened (`mq_open` descriptors, kept
    /// until it exits).
    pub mq_fds: Vec<Arc<ipcns::mqueue::MqInode>>,
    /// The ids its last `msgget`, `semget` and `shmget` returned.
    pub sysv_ids: SysvIds,
    /// Its pid and its parent's as its pid namespace numbers them.
    pub pid_nrs: PidNrs,
    /// Its image's SysV shared memory attachments, oldest first (a fork
    /// copies them; exec and exit drop them).
    pub shm_maps: Vec<Arc<ipcns::shm::ShmFile>>,
    /// The values the op under way reports in the results, if any.
    pub reported: Vec<u64>,
    /// The words it reports (the ACTION of a received uevent).
    pub reported_texts: Vec<String>,
}

/// A task's pid and its parent's in its own pid namespace, and the level
/// of the namespace the scenario's task it descends from started in:
/// numbers below that level are the scenario's own, those at it the
/// machine's.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PidNrs {
    pub nr: u32,
    pub ppid: u32,
    pub home_level: u32,
}

/// The SysV ids the task's last `msgget`, `semget` and `shmget` returned: numbers
/// the program keeps, which hold nothing in the kernel (a child that acts
/// starts with its parent's; an id means whatever object has it in the
/// ipc namespace the task is in when it uses it).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SysvIds {
    pub msqid: Option<i32>,
    pub semid: Option<i32>,
    pub shmid: Option<i32>,
}

/// A `/proc/PID/uid_map` file kept open: the namespace it belongs to, its
/// opener's credentials (`file->f_cred`) and its offset, which a child
/// that inherits it shares (one open file description, `dup_fd`).
#[derive(Clone)]
pub struct OpenedMap {
    pub ns: Arc<userns::UserNamespace>,
    pub opener: Cred,
    pub pos: Arc<std::sync::atomic::AtomicU64>,
}

/// The part of `task->mm` that the permission checks on a task's `/proc`
/// files read (include/linux/mm_types.h, fs/exec.c): whether the process
/// is dumpable, and `mm->user_ns`, the user namespace its image was
/// exec'd in. A scenario task's image was exec'd in the initial namespace
/// (the executor's processes are forked from one) and made dumpable; a
/// child shares its parent's (`dup_mm`).
#[derive(Clone)]
pub struct Mm {
    /// `get_dumpable(mm) == SUID_DUMP_USER`: cleared by a `commit_creds`
    /// that changes the effective or fs ids or gains capabilities
    /// (`fs.suid_dumpable` is 0), set again by an `execve` whose real and
    /// effective ids agree.
    pub dumpable: bool,
    /// `mm->user_ns`, a reference the process holds until it exits.
    pub user_ns: Arc<userns::UserNamespace>,
}

/// A simulated process.
pub struct Task {
    pub pid: u64,
    pub name: String,
    /// `task->cred`: replaced by `commit_creds`, read by other tasks (the
    /// kernel publishes it under RCU; here a lock held only for the copy).
    cred: Mutex<Cred>,
    /// `task->nsproxy`, likewise read by other tasks (`setns`,
    /// `/proc/PID/ns`).
    nsproxy: Mutex<Arc<Nsproxy>>,
    /// `task->mm`: read by other tasks' `/proc/PID` opens; `None` once
    /// the exiting process has let go of it (`exit_mm`).
    mm: Mutex<Option<Mm>>,
    pub own: Mutex<Own>,
    /// `task_lock` (`task->alloc_lock`): held while the nsproxy is
    /// replaced, and by a `/proc/PID/ns` open while it takes its reference
    /// on one of the namespaces in it, so that it never takes one on a
    /// namespace whose last reference is being put.
    pub alloc_lock: sync::SpinLock<()>,
    /// Exited and released (`release_task`): its pid no longer finds it.
    released: AtomicBool,
    /// `task->nsproxy` is NULL: the exiting process let go of its
    /// namespaces, and a `/proc/PID/ns` open finds none (ENOENT).
    namespaces_gone: AtomicBool,
    /// `task_active_pid_ns`: the pid namespace the task was born in.
    pid_ns: Mutex<Arc<crate::pidns::PidNamespace>>,
    /// `sighand->siglock` with the signals pending for the task (which
    /// blocks them: they stay until `sigtimedwait` takes them or the task
    /// is reaped).
    pub sighand: sync::SpinLock<crate::signal::Sighand>,
    /// `task->signal->rlim`: (soft, hard) of each rlimit but RLIMIT_NPROC
    /// (which is the task's [`Own`]), read by other tasks too (a sender's
    /// `__sigqueue_alloc` reads the receiver's RLIMIT_SIGPENDING).
    rlim: Mutex<[(u64, u64); RlimitType::COUNT]>,
    /// `task->sysvshm.shm_clist`: the SysV segments it created (a child
    /// starts with none, `shm_init_task`).
    pub shm_clist: Arc<ipcns::shm::ShmClist>,
    /// Set for a child that acts (`fork_child`): it runs ops of its own
    /// and exits by itself, and its parent waits for that before it reaps
    /// it.
    pub acting: Option<Acting>,
    /// Where the task is in its work (for a stateful search's name of the
    /// state): the index of the op it is at, counted over its repeats;
    /// [`Task::EXITING`] once it has done them all.
    position: std::sync::atomic::AtomicU64,
    /// The simulator's task that runs it, once started.
    pub(crate) sim_task: std::sync::OnceLock<sim::TaskId>,
}

/// The exit of a child that acts, as its parent's `wait4` waits for it.
pub struct Acting {
    /// What the waiting parent blocks on.
    pub obj: sim::ObjId,
    /// The child has run its ops and `do_exit` (a zombie until reaped).
    exited: AtomicBool,
}

impl Acting {
    /// Inside an execution: its object is made now.
    pub(crate) fn new() -> Acting {
        Acting {
            obj: sim::new_object("child"),
            exited: AtomicBool::new(false),
        }
    }

    pub fn has_exited(&self) -> bool {
        self.exited.load(Ordering::Relaxed)
    }

    pub(crate) fn set_exited(&self) {
        self.exited.store(true, Ordering::Relaxed);
    }
}

impl Task {
    /// A process holding `mm`, whose reference on `mm.user_ns` the caller
    /// has taken.
    pub fn new(
        pid: u64,
        name: String,
        cred: Cred,
        nsproxy: Arc<Nsproxy>,
        mm: Mm,
        rlimit: u64,
    ) -> Task {
        let pid_ns = Arc::clone(&nsproxy.pid_ns_for_children);
        // A set-up task in nested namespaces is the init of the deepest.
        let pid_nrs = PidNrs {
            nr: u32::from(pid_ns.level > 0),
            ppid: 0,
            home_level: pid_ns.level,
        };
        Task {
            pid,
            name,
            cred: Mutex::new("task->cred", cred),
            nsproxy: Mutex::new("task->nsproxy", nsproxy),
            mm: Mutex::new("task->mm", Some(mm)),
            released: AtomicBool::new(false),
            namespaces_gone: AtomicBool::new(false),
            acting: None,
            position: std::sync::atomic::AtomicU64::new(0),
            sim_task: std::sync::OnceLock::new(),
            shm_clist: ipcns::shm::ShmClist::new(),
            pid_ns: Mutex::new("task's pid namespace", pid_ns),
            alloc_lock: sync::SpinLock::new("task_lock", ()),
            sighand: sync::SpinLock::new("siglock", crate::signal::Sighand::default()),
            rlim: Mutex::new(
                "task->signal->rlim",
                RlimitType::ALL.map(|t| {
                    let v = initial_rlimit(t);
                    (v, v)
                }),
            ),
            own: Mutex::new(
                "task's own state",
                Own {
                    rlimit_nproc: (rlimit, rlimit),
                    nproc_exceeded: false,
                    children: Vec::new(),
                    uevent_sock: None,
                    opened_map: None,
                    ns_files: BTreeMap::new(),
                    mq_fds: Vec::new(),
                    sysv_ids: SysvIds::default(),
                    pid_nrs,
                    shm_maps: Vec::new(),
                    reported_texts: Vec::new(),
                    reported: Vec::new(),
                },
            ),
        }
    }

    /// Run `f`, which may take scheduling points, on the task's own state:
    /// the state leaves its lock for the call (only the task's own
    /// syscalls use it), so no host lock is held while other tasks run.
    pub fn with_own<R>(&self, f: impl FnOnce(&mut Own) -> R) -> R {
        let mut own = std::mem::take(&mut *self.own.lock());
        let r = f(&mut own);
        *self.own.lock() = own;
        r
    }

    /// `task_active_pid_ns`.
    pub fn pid_ns(&self) -> Arc<crate::pidns::PidNamespace> {
        Arc::clone(&self.pid_ns.lock())
    }

    pub(crate) fn set_pid_ns(&self, ns: Arc<crate::pidns::PidNamespace>) {
        *self.pid_ns.lock() = ns;
    }

    /// Rlimit `t` (soft, hard); RLIMIT_NPROC is [`Own::rlimit_nproc`].
    pub fn rlimit(&self, t: RlimitType) -> (u64, u64) {
        debug_assert_ne!(t, RlimitType::Nproc);
        self.rlim.lock()[t as usize]
    }

    pub fn set_rlimit(&self, t: RlimitType, limits: (u64, u64)) {
        debug_assert_ne!(t, RlimitType::Nproc);
        self.rlim.lock()[t as usize] = limits;
    }

    /// `copy_signal`: a child starts with its parent's rlimits.
    pub(crate) fn copy_rlimits_of(&self, parent: &Task) {
        *self.rlim.lock() = *parent.rlim.lock();
    }

    /// Has `release_task` run: is the task gone from the pid table?
    pub fn is_released(&self) -> bool {
        self.released.load(Ordering::Relaxed)
    }

    pub(crate) fn set_released(&self) {
        self.released.store(true, Ordering::Relaxed);
    }

    /// The task's current credentials (`current_cred()`, `__task_cred`).
    pub fn cred(&self) -> Cred {
        self.cred.lock().clone()
    }

    /// Install `new` as the task's credentials; the old ones are returned
    /// for the caller to put.
    pub fn replace_cred(&self, new: Cred) -> Cred {
        std::mem::replace(&mut *self.cred.lock(), new)
    }

    /// The user namespace of the task's credentials.
    pub fn user_ns(&self) -> Arc<userns::UserNamespace> {
        Arc::clone(&self.cred.lock().user_ns)
    }

    /// The task's `mm` as other tasks see it now (`None` once it exited).
    pub fn mm(&self) -> Option<Mm> {
        self.mm.lock().clone()
    }

    /// `set_dumpable`.
    pub fn set_dumpable(&self, dumpable: bool) {
        if let Some(mm) = self.mm.lock().as_mut() {
            mm.dumpable = dumpable;
        }
    }

    /// Install `new` (an execve's new image, or `None` at `exit_mm`); the
    /// old one is returned for the caller to put its namespace reference.
    pub fn replace_mm(&self, new: Option<Mm>) -> Option<Mm> {
        std::mem::replace(&mut *self.mm.lock(), new)
    }

    /// Has `exit_task_namespaces` let go of the task's namespaces? Read
    /// under `task_lock`, which that holds while it does.
    pub fn namespaces_gone(&self) -> bool {
        self.namespaces_gone.load(Ordering::Relaxed)
    }

    pub(crate) fn set_namespaces_gone(&self) {
        self.namespaces_gone.store(true, Ordering::Relaxed);
    }

    pub fn nsproxy(&self) -> Arc<Nsproxy> {
        Arc::clone(&self.nsproxy.lock())
    }

    /// Install `new`; the old nsproxy is returned for the caller to put.
    pub fn replace_nsproxy(&self, new: Arc<Nsproxy>) -> Arc<Nsproxy> {
        std::mem::replace(&mut *self.nsproxy.lock(), new)
    }
}

impl Task {
    /// [`Task::position`] once the task has done all its ops.
    pub const EXITING: u64 = u64::MAX;

    /// The task is at op `index` of its work (counted over its repeats),
    /// or [`Task::EXITING`].
    pub(crate) fn set_position(&self, index: u64) {
        self.position.store(index, Ordering::Relaxed);
    }

    /// Name the process's state (`sim::Execution::name_state`): where it
    /// is in its work, its credentials, namespaces, image, limits, and
    /// what it holds (its children whole). False where it holds what is
    /// not named yet (an open map, namespace files,
    /// message queues, segments, pending signals).
    pub fn name_state(&self, h: &mut dyn std::hash::Hasher) -> bool {
        let Task {
            // Fixed for its life:
            pid: _,
            name: _,
            acting: _,
            sim_task: _,
            // Held only within a step:
            alloc_lock: _,
            position,
            cred,
            nsproxy,
            mm,
            own,
            released,
            namespaces_gone,
            pid_ns,
            sighand,
            rlim,
            shm_clist,
        } = self;
        h.write_u64(position.load(Ordering::Relaxed));
        cred.lock().name_state(h);
        let nsproxy = Arc::clone(&nsproxy.lock());
        let mut named = nsproxy.name_state(h);
        match &*mm.lock() {
            Some(mm) => {
                h.write_u8(mm.dumpable as u8);
                h.write_u32(mm.user_ns.obj.0);
            }
            None => h.write_u8(0xff),
        }
        named &= own.lock().name_state(h);
        h.write_u8(released.load(Ordering::Relaxed) as u8);
        h.write_u8(namespaces_gone.load(Ordering::Relaxed) as u8);
        pid_ns.lock().name_state(h);
        let signals = sighand.peek_with(|s| {
            h.write_u8(s.gone as u8);
            h.write_u8(s.exiting as u8);
            s.pending.is_empty()
        });
        named &= signals == Some(true);
        for (soft, hard) in rlim.lock().iter() {
            h.write_u64(*soft);
            h.write_u64(*hard);
        }
        named && shm_clist.is_empty()
    }
}

impl Nsproxy {
    /// Name the namespaces (`sim::Execution::name_state`): the ipc one
    /// whole, the others by identity and references.
    pub fn name_state(&self, h: &mut dyn std::hash::Hasher) -> bool {
        let Nsproxy {
            ipc_ns,
            net_ns,
            pid_ns_for_children,
        } = self;
        let named = ipc_ns.name_state(h);
        net_ns.name_state(h);
        pid_ns_for_children.name_state(h);
        named
    }
}

impl Own {
    fn name_state(&self, h: &mut dyn std::hash::Hasher) -> bool {
        let Own {
            rlimit_nproc,
            nproc_exceeded,
            children,
            uevent_sock,
            opened_map,
            ns_files,
            mq_fds,
            sysv_ids,
            pid_nrs,
            shm_maps,
            reported,
            reported_texts,
        } = self;
        h.write_u32(pid_nrs.nr);
        h.write_u32(pid_nrs.ppid);
        h.write_u32(pid_nrs.home_level);
        for id in [sysv_ids.msqid, sysv_ids.semid, sysv_ids.shmid] {
            h.write_i64(id.map_or(-1, i64::from));
        }
        h.write_u64(rlimit_nproc.0);
        h.write_u64(rlimit_nproc.1);
        h.write_u8(*nproc_exceeded as u8);
        h.write_usize(children.len());
        let mut named = true;
        for child in children {
            h.write_u64(child.pid);
            named &= child.acting.is_none() && child.name_state(h);
        }
        h.write_usize(reported.len());
        reported.iter().for_each(|v| h.write_u64(*v));
        match uevent_sock {
            Some(l) => l.name_state(h),
            None => h.write_u8(0xff),
        }
        named
            && opened_map.is_none()
            && ns_files.is_empty()
            && mq_fds.is_empty()
            && shm_maps.is_empty()
            && reported_texts.is_empty()
    }
}
