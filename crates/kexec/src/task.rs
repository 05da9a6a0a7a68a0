//! A task instance as a real process: its credentials as the model sets
//! them up (`Procs::setup_cred`), the barrier, its ops in order, and its
//! exit (children first, as in the model's `do_exit`).
//!
//! `execve` replaces the process image with the executor's own binary,
//! which resumes the task at the next op (`resume`): credentials,
//! children and the uevent socket live on in the kernel as they would.

use crate::lines::call_line;
use crate::sys::{self, SysResult};
use crate::world::{self, local_id, Instance};
use kernel::setup::{Op, Setup, INIT_USER_NS};
use std::collections::BTreeMap;

/// What a task process knows of its run.
#[derive(Clone, Copy)]
pub struct TaskCtx<'a> {
    pub setup: &'a Setup,
    pub instances: &'a [Instance],
    pub instance: usize,
    pub results: i32,
    pub plan: i32,
    /// The directory of the set-up's files (empty when it has none).
    pub files_dir: &'a str,
}

/// A live child of the task, and the write end of the pipe it waits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Child {
    pub pid: i32,
    pub life: i32,
}

/// What the task holds in the kernel between ops.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct TaskState {
    /// Live children, oldest first.
    pub children: Vec<Child>,
    pub sock: Option<i32>,
    /// The uid_map file `open_uid_map_of` keeps open.
    pub opened: Option<i32>,
    /// The `/proc/PID/ns/user` files `open_ns_user` keeps, by name.
    pub ns_files: BTreeMap<String, i32>,
    /// The words the op under way reports (the ACTION of a received
    /// uevent); empty between ops.
    pub texts: Vec<String>,
    /// The SysV segments `shmget` made, oldest first, as the kernel's list
    /// of the task's segments has them: an `unshare(CLONE_NEWIPC)` empties
    /// it, a child starts without (an execve loses it, which the model
    /// does not).
    pub shm_ids: Vec<i32>,
}

/// Set up the instance's credentials, wait at the barrier, run its ops.
pub fn start(
    ctx: TaskCtx<'_>,
    userns_fds: &BTreeMap<String, i32>,
    gate: Option<(i32, i32, i32)>,
) -> ! {
    if let Some((_, barrier_w, _)) = gate {
        sys::close(barrier_w);
    }
    if let Err(msg) = nest_pid_namespaces(&ctx, userns_fds, gate) {
        world::report_error(ctx.results, Some(ctx.instance), &msg);
        sys::exit_now(1);
    }
    if let Err(msg) = enter_credentials(&ctx, userns_fds) {
        world::report_error(ctx.results, Some(ctx.instance), &msg);
        sys::exit_now(1);
    }
    for fd in userns_fds.values() {
        sys::close(*fd);
    }
    world::set_dumpable();
    sys::block_queued_signal();
    if let Some((barrier_r, _, ready_w)) = gate {
        let _ = sys::write(ready_w, b"r");
        sys::close(ready_w);
        let mut byte = [0u8; 1];
        let _ = sys::read_full(barrier_r, &mut byte);
        sys::close(barrier_r);
    }
    run_ops(&ctx, 0, TaskState::default())
}

/// The set-up's nested pid namespaces (`pid_ns_depth`), made as global
/// root before the task takes its credentials: `unshare(CLONE_NEWPID)` and
/// a fork, again and again, until the process is that many levels below
/// the initial pid namespace, as `unshare --pid --fork` run in a loop
/// leaves it. The levels the process is in already (the run's own pid
/// namespace, and any the executor runs in, as /proc's NSpid shows them)
/// count. The task goes on in the deepest process, and publishes its pid.
fn nest_pid_namespaces(
    ctx: &TaskCtx<'_>,
    userns_fds: &BTreeMap<String, i32>,
    gate: Option<(i32, i32, i32)>,
) -> Result<(), String> {
    let spec = &ctx.setup.tasks[ctx.instances[ctx.instance].task];
    // Depth 0 is where every task starts: the run's pid namespace, which
    // stands for the initial one as it does for tasks without the key.
    let depth = match ctx.setup.processes.pid_ns_depth.get(&spec.name) {
        None | Some(0) => return Ok(()),
        Some(&depth) => depth,
    };
    let level = sys::pid_ns_level().ok_or("cannot read NSpid of /proc/self/status")?;
    if level > depth {
        return Err(format!(
            "the task's process is {level} pid namespaces deep already, past its pid_ns_depth {depth}"
        ));
    }
    for _ in level..depth {
        named(
            "unshare(CLONE_NEWPID)",
            sys::unshare(libc::CLONE_NEWPID as u64),
        )?;
        let child = sys::fork().map_err(|e| format!("fork: {}", sys::errno_name(e)))?;
        if child != 0 {
            wait_in_chain(child, userns_fds, gate);
        }
    }
    world::set_pid(ctx.instance, sys::proc_pid());
    Ok(())
}

/// Whether task `task` (an index of `setup.tasks`; children follow them)
/// starts in pid namespaces its executor nests.
pub fn nests_pid_namespaces(setup: &Setup, task: usize) -> bool {
    setup
        .tasks
        .get(task)
        .and_then(|t| setup.processes.pid_ns_depth.get(&t.name))
        .is_some_and(|d| *d > 0)
}

/// A parent in the chain of nested pid namespaces: it lets go of the
/// barrier and the set-up's namespace files (the results pipe and the pid
/// table it keeps, and they go when it exits with the task), waits for
/// its child, and exits as it did.
fn wait_in_chain(
    child: i32,
    userns_fds: &BTreeMap<String, i32>,
    gate: Option<(i32, i32, i32)>,
) -> ! {
    if let Some((barrier_r, _, ready_w)) = gate {
        sys::close(barrier_r);
        sys::close(ready_w);
    }
    for fd in userns_fds.values() {
        sys::close(*fd);
    }
    // A child that did not exit normally, or could not be waited for,
    // counts as a failure.
    let code = match sys::waitpid(child, 0) {
        Ok((_, status)) if libc::WIFEXITED(status) => libc::WEXITSTATUS(status),
        _ => 1,
    };
    sys::exit_now(code)
}

fn named(what: &str, r: SysResult<()>) -> Result<(), String> {
    r.map_err(|e| format!("{what}: {}", sys::errno_name(e)))
}

/// The credentials the model's `setup_cred` gives the task: kuid and
/// kgid `uid` in its user namespace, every capability there when it is
/// root in it or the namespace's creator, none otherwise; RLIMIT_NPROC,
/// dropped capabilities and bounding set as the scenario says.
///
/// The ids are set in the initial namespace while capabilities are kept
/// (`PR_SET_KEEPCAPS`), and the task then joins its namespace (which
/// gives it every capability there), so that a uid the namespace does
/// not map is possible too, as in the model.
fn enter_credentials(ctx: &TaskCtx<'_>, fds: &BTreeMap<String, i32>) -> Result<(), String> {
    let setup = ctx.setup;
    let spec = &setup.tasks[ctx.instances[ctx.instance].task];
    let uid = spec.uid;
    if let Some(n) = setup.processes.task_nproc.get(&spec.name) {
        named("setrlimit(NPROC)", sys::set_nproc_limit(*n))?;
    }
    // A new user namespace gives a full bounding set (set_cred_user_ns),
    // so the scenario's drops are made in the task's own namespace; and
    // the model's capabilities are the full set within the bounding set
    // (`setup_cred`), so what is dropped from it is not held either.
    let dropped: &[u32] = setup
        .processes
        .bounding_drop
        .get(&spec.name)
        .map_or(&[], |c| c.as_slice());
    let drop_bounding = || -> Result<(), String> {
        for cap in dropped {
            named("drop from the bounding set", sys::drop_bounding(*cap))?;
        }
        named("capset", sys::drop_held(dropped))
    };
    if spec.userns == INIT_USER_NS {
        drop_bounding()?;
        if uid != 0 {
            named("setresgid", sys::setresgid(uid, uid, uid))?;
            named("setresuid", sys::setresuid(uid, uid, uid))?;
        }
    } else {
        if !setup.user_namespaces.iter().any(|s| s.name == spec.userns) {
            return Err("no such user namespace".into());
        }
        named("become", sys::become_keeping_caps(uid, uid))?;
        named(
            "setns(CLONE_NEWUSER)",
            sys::setns(fds[&spec.userns], libc::CLONE_NEWUSER),
        )?;
        drop_bounding()?;
        if !keeps_capabilities(setup, spec) {
            named("capset", sys::clear_capabilities())?;
        }
    }
    if let Some(caps) = setup.processes.cap_drop.get(&spec.name) {
        named("capset", sys::drop_effective(caps))?;
    }
    Ok(())
}

/// Whether a task keeps every capability in its own user namespace, as
/// the model's `setup_cred` gives them: when it is root there, or the
/// namespace's creator (no uid map written). A task of the initial
/// namespace keeps what it has.
pub fn keeps_capabilities(setup: &Setup, spec: &kernel::setup::TaskSpec) -> bool {
    let Some(ns) = setup.user_namespaces.iter().find(|s| s.name == spec.userns) else {
        return true;
    };
    let root = local_id(setup, &spec.userns, spec.uid, false) == Some(0);
    let creator = !setup.processes.maps.contains_key(&ns.name) && ns.owner == spec.uid;
    root || creator
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
            _ => crate::ops::run(ctx, &mut state, op),
        };
        let texts = std::mem::take(&mut state.texts);
        record(ctx, index, op, result, value, &texts);
    }
    finish(state)
}

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
        let _ = crate::ops::end_child(child);
    }
    for fd in kept {
        sys::close(fd);
    }
    sys::exit_now(0)
}

/// The argument that resumes a task after its execve.
pub fn resume_arg(ctx: &TaskCtx<'_>, pos: u64, state: &TaskState) -> String {
    let children: Vec<String> = state
        .children
        .iter()
        .map(|c| format!("{}:{}", c.pid, c.life))
        .collect();
    // Names are identifiers: no `:`, `,`, `;` or `=` in them.
    let ns_files: Vec<String> = state
        .ns_files
        .iter()
        .map(|(name, fd)| format!("{name}:{fd}"))
        .collect();
    format!(
        "plan={};results={};instance={};pos={pos};sock={};opened={};children={};nsfiles={}",
        ctx.plan,
        ctx.results,
        ctx.instance,
        state.sock.map_or(-1, |s| s as i64),
        state.opened.map_or(-1, |s| s as i64),
        children.join(","),
        ns_files.join(","),
    )
}

/// A resumed task's position and state.
pub struct Resume {
    pub plan: i32,
    pub results: i32,
    pub instance: usize,
    pub pos: u64,
    pub state: TaskState,
}

fn ns_files(text: &str) -> Option<BTreeMap<String, i32>> {
    if text.is_empty() {
        return Some(BTreeMap::new());
    }
    text.split(',')
        .map(|f| {
            let (name, fd) = f.split_once(':')?;
            Some((name.to_string(), fd.parse().ok()?))
        })
        .collect()
}

fn children(text: &str) -> Option<Vec<Child>> {
    if text.is_empty() {
        return Some(Vec::new());
    }
    text.split(',')
        .map(|c| {
            let (pid, life) = c.split_once(':')?;
            Some(Child {
                pid: pid.parse().ok()?,
                life: life.parse().ok()?,
            })
        })
        .collect()
}

pub fn parse_resume(arg: &str) -> Option<Resume> {
    let mut fields: BTreeMap<&str, &str> = BTreeMap::new();
    for part in arg.split(';') {
        let (k, v) = part.split_once('=')?;
        fields.insert(k, v);
    }
    let sock: i32 = fields.get("sock")?.parse().ok()?;
    let opened: i32 = fields.get("opened")?.parse().ok()?;
    Some(Resume {
        plan: fields.get("plan")?.parse().ok()?,
        results: fields.get("results")?.parse().ok()?,
        instance: fields.get("instance")?.parse().ok()?,
        pos: fields.get("pos")?.parse().ok()?,
        state: TaskState {
            children: children(fields.get("children")?)?,
            sock: (sock >= 0).then_some(sock),
            opened: (opened >= 0).then_some(opened),
            ns_files: ns_files(fields.get("nsfiles")?)?,
            texts: Vec::new(),
            shm_ids: Vec::new(),
        },
    })
}

/// `execve` of the executor's own binary, resuming at `pos + 1`; returns
/// only when the kernel refused it.
fn execve(ctx: &TaskCtx<'_>, pos: u64, state: &TaskState) -> sys::Errno {
    let path = sys::cstring("/proc/self/exe");
    let args = [
        sys::cstring("nssim"),
        sys::cstring(crate::RESUME_COMMAND),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resume_argument_reads_back() {
        let setup = Setup::default();
        let ctx = TaskCtx {
            setup: &setup,
            instances: &[],
            instance: 3,
            results: 5,
            plan: 6,
            files_dir: "",
        };
        let state = TaskState {
            children: vec![Child { pid: 100, life: 8 }, Child { pid: 101, life: 9 }],
            sock: Some(7),
            opened: Some(11),
            ns_files: [("one".to_string(), 12), ("two".to_string(), 13)].into(),
            texts: Vec::new(),
            shm_ids: Vec::new(),
        };
        let back = parse_resume(&resume_arg(&ctx, 9, &state)).unwrap();
        assert_eq!(
            (back.plan, back.results, back.instance, back.pos),
            (6, 5, 3, 9)
        );
        assert_eq!(back.state, state);
        let empty = TaskState::default();
        let back = parse_resume(&resume_arg(&ctx, 0, &empty)).unwrap();
        assert_eq!(back.state, empty);
        assert!(parse_resume("plan=x").is_none());
    }
}
