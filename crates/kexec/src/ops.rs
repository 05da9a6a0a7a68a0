//! Every op's second implementation: the real syscalls it stands for.
//! Both matches are exhaustive, so an op declared in `kernel::ops` but not
//! given a kernel implementation (or a reason why it has none) does not
//! compile.
//!
//! The loop that runs a task's ops ([`run_ops`]) is here too, and its
//! exit (children first, as in the model's `do_exit`): a child that acts
//! runs the loop of its own from an op, so the two call each other.
//! `execve` replaces the process image with the executor's own binary,
//! which resumes the task at the next op (`resume`): credentials,
//! children and the uevent socket live on in the kernel as they would.

use crate::instance::{instance_named, pid_of, set_pid, EVENT_FDS};
use crate::lines::call_line;
use crate::netlink;
use crate::state::{resume_arg, Child, TaskCtx, TaskState, RESUME_COMMAND};
use crate::sys::{self, write_sysctl, SysResult};
use kernel::setup::Op;

/// The sysctl `write_shm_rmid_forced` writes (of the writer's ipc
/// namespace).
pub const SHM_RMID_FORCED: &str = "/proc/sys/kernel/shm_rmid_forced";

/// -1 as an id: the set*id calls leave that id as it is.
const UNCHANGED: u32 = u32::MAX;

/// Why an op cannot run on the running kernel, or `None` when it can.
pub fn unsupported(op: &Op) -> Option<&'static str> {
    match op {
        Op::MqPathWalk { .. } => Some(
            "mq_path_walk is the model's RCU reader of another task's mqueue mount, with no syscall of its own",
        ),
        Op::Lock { .. } | Op::Unlock { .. } => {
            Some("lock and unlock take the scenario's own mutexes, not kernel objects")
        }
        Op::Bug { .. } => Some("a kernel BUG() is not something to set off on the running kernel"),
        Op::UeventDeviceEvent { devpath, .. } if !is_device_path(devpath) => {
            Some("the device path is not a /devices/... path under sysfs")
        }
        Op::UeventDeviceEvent { .. }
        | Op::Post { .. }
        | Op::Wait { .. }
        | Op::UeventNetdevEvent { .. }
        | Op::Unshare { .. }
        | Op::SysctlWrite { .. }
        | Op::UeventListen { .. }
        | Op::UeventRecv {}
        | Op::UeventRecvWait {}
        | Op::UeventClose {}
        | Op::UeventInject { .. }
        | Op::Sleep { .. }
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
        | Op::UnshareAndExit { .. }
        | Op::Fork {}
        | Op::Clone { .. }
        | Op::ForkChild { .. }
        | Op::CloneChild { .. }
        | Op::FailAlloc { .. }
        | Op::Exit {}
        | Op::Setuid { .. }
        | Op::Setresuid { .. }
        | Op::Seteuid { .. }
        | Op::Setgid { .. }
        | Op::Setegid { .. }
        | Op::Setresgid { .. }
        | Op::Setgroups { .. }
        | Op::Open { .. }
        | Op::Getresuid {}
        | Op::Getresgid {}
        | Op::Capget {}
        | Op::NsId { .. }
        | Op::Execve {}
        | Op::Sigqueue { .. }
        | Op::Sigtimedwait {}
        | Op::MqOpen { .. }
        | Op::MqOpenExisting { .. }
        | Op::MqUnlink { .. }
        | Op::Shmget { .. }
        | Op::ShmLock {}
        | Op::ShmUnlock {}
        | Op::WriteShmRmidForced { .. }
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
        | Op::Getpid {}
        | Op::Getppid {}
        | Op::Setrlimit { .. } => None,
    }
}

/// A device's path under /sys: `/devices/...`, without `..`.
fn is_device_path(devpath: &str) -> bool {
    devpath.starts_with("/devices/") && !devpath.split('/').any(|c| c == "..")
}

/// Whether the kernel implementation reports values the model's results
/// also hold (a received uevent's SEQNUM, the numbers of a map read
/// back). An injection's SEQNUM is the kernel's to give and no caller
/// sees it, so only the model reports it.
pub fn reports_values(op: &Op) -> bool {
    matches!(
        op,
        Op::UeventRecv {}
            | Op::UeventRecvWait {}
            | Op::ReadUidMapOf { .. }
            | Op::ReadGidMapOf { .. }
            | Op::Getresuid {}
            | Op::Getresgid {}
            | Op::Capget {}
            | Op::NsId { .. }
            | Op::Msgrcv { .. }
            | Op::Msgctl { .. }
            | Op::Semctl { .. }
            | Op::Shmctl { .. }
            | Op::Getpid {}
            | Op::Getppid {}
    )
}

/// Whether the values `op` reports are uevent sequence numbers, which
/// are counted from the machine's counter when the run starts.
pub fn reports_seqnums(op: &Op) -> bool {
    matches!(op, Op::UeventRecv {} | Op::UeventRecvWait {})
}

/// `/proc/PID/{uid,gid}_map` read back: every number of every line.
fn read_map(path: &str) -> SysResult<Vec<u64>> {
    let text = sys::read_file(path)?;
    Ok(text
        .split_whitespace()
        .filter_map(|n| n.parse().ok())
        .collect())
}

/// The read end of `event`'s pipe (its write end is the next fd).
fn event_fd(ctx: &TaskCtx<'_>, event: &str) -> i32 {
    let index = kernel::setup::event_names(ctx.setup)
        .iter()
        .position(|e| e == event)
        .unwrap_or(0);
    EVENT_FDS + 2 * index as i32
}

/// The /proc directory of the instance a task op names.
fn proc_of(ctx: &TaskCtx<'_>, target: &str) -> String {
    let pid = instance_named(ctx.instances, target).map_or(0, pid_of);
    format!("/proc/{pid}")
}

fn setns_into(dir: &str, file: &str, nstype: libc::c_int) -> SysResult<()> {
    let fd = sys::open(&format!("{dir}/ns/{file}"), libc::O_RDONLY)?;
    let r = sys::setns(fd, nstype);
    sys::close(fd);
    r
}

/// `clone(flags)` with a pipe made first, which both sides then hold:
/// (pid, read end, write end); the pipe is closed when the clone fails.
fn clone_with_pipe(flags: u64) -> SysResult<(i32, i32, i32)> {
    let (r, w) = sys::pipe();
    match sys::clone_process(flags) {
        Ok(pid) => Ok((pid, r, w)),
        Err(e) => {
            sys::close(r);
            sys::close(w);
            Err(e)
        }
    }
}

/// A child that stays alive until the task's `exit()` or its own end: it
/// waits for the end of a pipe only the task holds open (a kill could be
/// refused once the task has changed its uids, and the child would live
/// on).
fn keep_child(state: &mut TaskState, flags: u64) -> SysResult<()> {
    let (pid, life_r, life_w) = clone_with_pipe(flags)?;
    if pid == 0 {
        in_child_of(state);
        sys::close(life_w);
        let mut byte = [0u8; 1];
        let _ = sys::read_full(life_r, &mut byte);
        sys::exit_now(0);
    }
    sys::close(life_r);
    sys::keep_on_exec(life_w);
    state.children.push(Child { pid, life: life_w });
    Ok(())
}

/// A child that acts: it publishes its pid, tells the task it has (so
/// that the task's next op finds it), and runs the ops of its block with
/// the task's kept namespace files and opened uid_map, as the model's
/// `copy_process` gives it them. The task reaps it when it has run them all.
fn start_child(ctx: &TaskCtx<'_>, state: &mut TaskState, flags: u64, child: &str) -> SysResult<()> {
    let name = kernel::setup::child_name(&ctx.instances[ctx.instance].name, child);
    let index = instance_named(ctx.instances, &name).ok_or(libc::EINVAL)?;
    let (pid, ready_r, ready_w) = clone_with_pipe(flags)?;
    if pid == 0 {
        sys::close(ready_r);
        let inherited = TaskState {
            ns_files: std::mem::take(&mut state.ns_files),
            opened: state.opened.take(),
            msqid: state.msqid,
            semid: state.semid,
            shmid: state.shmid,
            shm_addrs: state.shm_addrs.clone(),
            home_pid_level: state.home_pid_level,
            ..TaskState::default()
        };
        in_child_of(state);
        set_pid(index, sys::proc_pid());
        let _ = sys::write(ready_w, b"r");
        sys::close(ready_w);
        let ctx = TaskCtx {
            instance: index,
            ..*ctx
        };
        run_ops(&ctx, 0, inherited)
    }
    sys::close(ready_w);
    let mut byte = [0u8; 1];
    let _ = sys::read_full(ready_r, &mut byte);
    sys::close(ready_r);
    state.children.push(Child { pid, life: -1 });
    Ok(())
}

/// A child of the task lets go of what the task holds: the ends of its
/// other children's pipes, the task's uevent socket and its kept files.
fn in_child_of(state: &TaskState) {
    for c in state.children.iter().filter(|c| c.life >= 0) {
        sys::close(c.life);
    }
    for fd in state
        .sock
        .iter()
        .chain(&state.opened)
        .chain(state.ns_files.values())
    {
        sys::close(*fd);
    }
}

/// A kept SysV id, or -1 (which every call refuses with EINVAL, as the
/// model refuses a task that has none).
fn kept(id: Option<i32>) -> i32 {
    id.unwrap_or(-1)
}

/// The child exits (its pipe closed) and is reaped; a child that acts
/// (no pipe) is waited for until it has run its ops.
pub fn end_child(child: Child) -> SysResult<()> {
    if child.life >= 0 {
        sys::close(child.life);
    }
    sys::waitpid(child.pid, 0).map(drop)
}

/// Run one op: its result, and the values it reported (the SEQNUM a
/// listener received, a map read back).
pub fn run(ctx: &TaskCtx<'_>, state: &mut TaskState, op: &Op) -> (SysResult<()>, Vec<u64>) {
    let done = |r: SysResult<()>| (r, Vec::new());
    match op {
        Op::Unshare { flags } => done(sys::unshare(*flags)),
        Op::Post { event } => done(sys::write(event_fd(ctx, event) + 1, b"e").map(drop)),
        Op::Wait { event } => {
            let mut byte = [0u8; 1];
            done(match sys::read_full(event_fd(ctx, event), &mut byte) {
                Ok(1) => Ok(()),
                Ok(_) => Err(libc::EPIPE),
                Err(e) => Err(e),
            })
        }
        Op::SysctlWrite { name, value } => done(write_sysctl(name, *value)),
        Op::UeventListen { rcvbuf } => done(netlink::listen(*rcvbuf).map(|fd| {
            if let Some(old) = state.sock.replace(fd) {
                sys::close(old);
            }
        })),
        Op::UeventRecv {} | Op::UeventRecvWait {} => match state.sock {
            None => done(Err(libc::ENOENT)),
            Some(fd) => match netlink::recv(fd, matches!(op, Op::UeventRecvWait {})) {
                Ok((seqnum, action)) => {
                    state.texts.extend(action);
                    (Ok(()), seqnum.into_iter().collect())
                }
                Err(e) => done(Err(e)),
            },
        },
        Op::UeventClose {} => done(match state.sock.take() {
            Some(fd) => {
                sys::close(fd);
                Ok(())
            }
            None => Err(libc::ENOENT),
        }),
        Op::UeventInject { payload } => done(netlink::inject(payload)),
        Op::Sleep { ns } => {
            sys::nanosleep(*ns);
            done(Ok(()))
        }
        Op::WriteUidMap { text } => done(sys::write_file_once("/proc/self/uid_map", text)),
        Op::WriteGidMap { text } => done(sys::write_file_once("/proc/self/gid_map", text)),
        Op::WriteSetgroups { text } => done(sys::write_file_once("/proc/self/setgroups", text)),
        Op::WriteUidMapOf { target, text } => done(sys::write_file_once(
            &format!("{}/uid_map", proc_of(ctx, target)),
            text,
        )),
        Op::WriteGidMapOf { target, text } => done(sys::write_file_once(
            &format!("{}/gid_map", proc_of(ctx, target)),
            text,
        )),
        Op::WriteSetgroupsOf { target, text } => done(sys::write_file_once(
            &format!("{}/setgroups", proc_of(ctx, target)),
            text,
        )),
        Op::OpenUidMapOf { target } => done(
            sys::open_kept(&format!("{}/uid_map", proc_of(ctx, target)), libc::O_WRONLY).map(
                |fd| {
                    if let Some(old) = state.opened.replace(fd) {
                        sys::close(old);
                    }
                },
            ),
        ),
        Op::WriteOpened { text } => done(match state.opened {
            Some(fd) => sys::write(fd, text.as_bytes()).map(drop),
            None => Err(libc::EBADF),
        }),
        Op::ReadUidMapOf { target } => {
            match read_map(&format!("{}/uid_map", proc_of(ctx, target))) {
                Ok(values) => (Ok(()), values),
                Err(e) => done(Err(e)),
            }
        }
        Op::ReadGidMapOf { target } => {
            match read_map(&format!("{}/gid_map", proc_of(ctx, target))) {
                Ok(values) => (Ok(()), values),
                Err(e) => done(Err(e)),
            }
        }
        Op::SetnsUser { target } => done(setns_into(
            &proc_of(ctx, target),
            "user",
            libc::CLONE_NEWUSER,
        )),
        Op::OpenNsUser { fd, target } => done(
            sys::open_kept(&format!("{}/ns/user", proc_of(ctx, target)), libc::O_RDONLY).map(
                |file| {
                    if let Some(old) = state.ns_files.insert(fd.clone(), file) {
                        sys::close(old);
                    }
                },
            ),
        ),
        Op::SetnsFd { fd } => done(match state.ns_files.get(fd) {
            Some(file) => sys::setns(*file, libc::CLONE_NEWUSER),
            None => Err(libc::EBADF),
        }),
        Op::CloseFd { fd } => done(match state.ns_files.remove(fd) {
            Some(file) => {
                sys::close(file);
                Ok(())
            }
            None => Err(libc::EBADF),
        }),
        Op::SetnsNet { target } => {
            done(setns_into(&proc_of(ctx, target), "net", libc::CLONE_NEWNET))
        }
        Op::SetnsIpc { target } => {
            done(setns_into(&proc_of(ctx, target), "ipc", libc::CLONE_NEWIPC))
        }
        Op::UnshareAndExit { flags } => done(unshare_and_exit(state, *flags)),
        Op::Fork {} => done(keep_child(state, 0)),
        Op::Clone { flags } => done(keep_child(state, *flags)),
        Op::ForkChild { child } => done(start_child(ctx, state, 0, child)),
        Op::CloneChild { flags, child } => done(start_child(ctx, state, *flags, child)),
        Op::Exit {} => done(match state.children.pop() {
            Some(child) => end_child(child),
            None => Err(libc::ECHILD),
        }),
        Op::Setuid { uid } => done(sys::setuid(*uid)),
        Op::Setresuid { ruid, euid, suid } => done(sys::setresuid(*ruid, *euid, *suid)),
        Op::Seteuid { euid } => done(sys::setresuid(UNCHANGED, *euid, UNCHANGED)),
        Op::Setgid { gid } => done(sys::setgid(*gid)),
        Op::Setegid { egid } => done(sys::setresgid(UNCHANGED, *egid, UNCHANGED)),
        Op::Setresgid { rgid, egid, sgid } => done(sys::setresgid(*rgid, *egid, *sgid)),
        Op::Setgroups { gids } => done(sys::setgroups(
            &kernel::ops::id_list(gids).unwrap_or_default(),
        )),
        Op::Open { file, access } => done(sys::open_and_close(
            &format!("{}/{file}", ctx.files_dir),
            *access as libc::c_int,
        )),
        Op::Getresuid {} => (Ok(()), sys::getresuid().map(u64::from).to_vec()),
        Op::Getresgid {} => (Ok(()), sys::getresgid().map(u64::from).to_vec()),
        Op::NsId { ns } => match sys::ns_inode(ns) {
            Ok(inode) => (Ok(()), vec![inode]),
            Err(e) => done(Err(e)),
        },
        Op::Capget {} => match sys::capget() {
            Ok(sets) => (Ok(()), sets.to_vec()),
            Err(e) => done(Err(e)),
        },
        Op::Setrlimit { resource, limit } => {
            let resource = kernel::ops::rlimit_named(resource)
                .expect("the scenario checker admits only these");
            done(sys::set_rlimit(resource, *limit))
        }
        Op::Sigqueue { target } => done(sys::sigqueue(&proc_of(ctx, target))),
        Op::Sigtimedwait {} => done(sys::sigtimedwait_now()),
        Op::MqOpen {
            name,
            maxmsg,
            msgsize,
        } => done(sys::mq_open_kept(name, *maxmsg, *msgsize)),
        Op::MqOpenExisting { name } => done(sys::mq_open_existing_kept(name)),
        Op::MqUnlink { name } => done(sys::mq_unlink(name)),
        Op::Shmget { size } => done(
            sys::shmget(0, *size, kernel::ops::SHMGET_PRIVATE_FLAGS)
                .map(|id| state.shmid = Some(id)),
        ),
        Op::ShmgetKey { key, size, flags } => {
            done(sys::shmget(*key, *size, *flags).map(|id| state.shmid = Some(id)))
        }
        Op::ShmLock {} => done(sys::shmctl(kept(state.shmid), libc::SHM_LOCK)),
        Op::ShmUnlock {} => done(sys::shmctl(kept(state.shmid), libc::SHM_UNLOCK)),
        Op::Shmat {} => done(sys::shmat(kept(state.shmid)).map(|addr| state.shm_addrs.push(addr))),
        Op::Shmdt {} => done(match state.shm_addrs.pop() {
            Some(addr) => sys::shmdt(addr),
            None => Err(libc::EINVAL),
        }),
        Op::Shmctl { cmd } => match sys::shmctl_stat(kept(state.shmid), *cmd) {
            Ok(values) => (Ok(()), values),
            Err(e) => done(Err(e)),
        },
        Op::Msgget { key, flags } => {
            done(sys::msgget(*key, *flags).map(|id| state.msqid = Some(id)))
        }
        Op::Msgsnd { size } => done(sys::msgsnd(kept(state.msqid), *size)),
        Op::Msgrcv { size } => match sys::msgrcv(kept(state.msqid), *size) {
            Ok(got) => (Ok(()), vec![got]),
            Err(e) => done(Err(e)),
        },
        Op::Msgctl { cmd } => match sys::msgctl(kept(state.msqid), *cmd) {
            Ok(values) => (Ok(()), values),
            Err(e) => done(Err(e)),
        },
        Op::Semget { key, nsems, flags } => {
            done(sys::semget(*key, *nsems, *flags).map(|id| state.semid = Some(id)))
        }
        Op::Semop { num, op } => done(sys::semop(kept(state.semid), *num, *op)),
        Op::Semctl { num, cmd } => match sys::semctl(kept(state.semid), *num, *cmd) {
            Ok(values) => (Ok(()), values),
            Err(e) => done(Err(e)),
        },
        Op::SemctlSetval { num, value } => {
            done(sys::semctl_setval(kept(state.semid), *num, *value))
        }
        Op::Getpid {} | Op::Getppid {} => {
            let below = sys::pid_ns_level().is_some_and(|l| l > state.home_pid_level);
            let nr = match op {
                Op::Getpid {} => unsafe { libc::getpid() },
                _ => unsafe { libc::getppid() },
            };
            (Ok(()), if below { vec![nr as u64] } else { Vec::new() })
        }
        Op::IpcSysctlWrite { name, value } => done(sys::write_file_once(
            &crate::sys::sysctl_path(name),
            &format!("{value}\n"),
        )),
        Op::WriteShmRmidForced { value } => {
            done(sys::write_file_once(SHM_RMID_FORCED, &format!("{value}\n")))
        }
        Op::Execve {} => unreachable!("the task loop runs execve itself"),
        Op::UeventDeviceEvent { action, devpath } => done(sys::write_file_once(
            &format!("/sys{devpath}/uevent"),
            action,
        )),
        Op::UeventNetdevEvent { .. } => done(netlink::rename_loopback()),
        Op::MqPathWalk { .. } | Op::Lock { .. } | Op::Unlock { .. } | Op::Bug { .. } => {
            done(Err(libc::ENOSYS))
        }
        Op::FailAlloc { .. } => done(crate::fault::fail_alloc()),
    }
}

/// A child calls `unshare(flags)` and exits with its errno; the task
/// reaps it (`unshare -U true`).
fn unshare_and_exit(state: &TaskState, flags: u64) -> SysResult<()> {
    sys::in_child(|| {
        in_child_of(state);
        sys::unshare(flags)
    })
}

/// Run the task's ops from flattened position `from` (op `from mod n` of
/// pass `from / n`) to the end, then exit.
pub fn run_ops(ctx: &TaskCtx<'_>, from: u64, mut state: TaskState) -> ! {
    let me = &ctx.instances[ctx.instance];
    let ops = me.ops(ctx.setup);
    let n = ops.len() as u64;
    let total = n.saturating_mul(me.repeat(ctx.setup));
    for pos in from..total {
        let index = (pos % n) as usize;
        let op = &ops[index];
        let (result, value) = match op {
            Op::Execve {} => (Err(execve(ctx, pos, &state)), Vec::new()),
            _ => run(ctx, &mut state, op),
        };
        let texts = std::mem::take(&mut state.texts);
        record(ctx, index, op, result, value, &texts);
    }
    finish(state)
}

/// Write the call's line on the results pipe; a sleep has none, as the
/// model's `World::record` files none.
pub fn record(
    ctx: &TaskCtx<'_>,
    index: usize,
    op: &Op,
    result: SysResult<()>,
    values: Vec<u64>,
    texts: &[String],
) {
    if matches!(op, Op::Sleep { .. }) {
        return;
    }
    let name = match result {
        Ok(()) => "ok".to_string(),
        Err(e) => sys::errno_name(e),
    };
    let _ = sys::write(
        ctx.results,
        call_line(ctx.instance, index, &name, &values, texts).as_bytes(),
    );
}

/// The task exits: its children exit first and are reaped.
fn finish(state: TaskState) -> ! {
    let kept: Vec<i32> = state
        .sock
        .iter()
        .chain(&state.opened)
        .chain(state.ns_files.values())
        .copied()
        .collect();
    for child in state.children.into_iter().rev() {
        let _ = end_child(child);
    }
    for fd in kept {
        sys::close(fd);
    }
    sys::exit_now(0)
}

/// `execve` of the executor's own binary, resuming at `pos + 1`; returns
/// only when the kernel refused it.
fn execve(ctx: &TaskCtx<'_>, pos: u64, state: &TaskState) -> sys::Errno {
    let path = sys::cstring("/proc/self/exe");
    let args = [
        sys::cstring("nssim"),
        sys::cstring(RESUME_COMMAND),
        sys::cstring(&resume_arg(ctx, pos, state)),
    ];
    let mut argv: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    let envp: [*const libc::c_char; 1] = [std::ptr::null()];
    unsafe {
        libc::execve(path.as_ptr(), argv.as_ptr(), envp.as_ptr());
    }
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}
