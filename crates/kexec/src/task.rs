//! A task instance as a real process: its credentials as the model sets
//! them up (`Procs::setup_cred`), its nested pid namespaces and the
//! barrier; then it runs its ops to its exit ([`run_ops`]).

use crate::instance::set_pid;
use crate::lines::report_error;
use crate::ops::run_ops;
use crate::state::{TaskCtx, TaskState};
use crate::sys::{self, SysResult};
use kernel::setup::{Setup, UidMap, INIT_USER_NS};
use std::collections::BTreeMap;

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
        report_error(ctx.results, Some(ctx.instance), &msg);
        sys::exit_now(1);
    }
    if let Err(msg) = enter_credentials(&ctx, userns_fds) {
        report_error(ctx.results, Some(ctx.instance), &msg);
        sys::exit_now(1);
    }
    for fd in userns_fds.values() {
        sys::close(*fd);
    }
    sys::set_dumpable();
    sys::block_queued_signal();
    if let Some((barrier_r, _, ready_w)) = gate {
        let _ = sys::write(ready_w, b"r");
        sys::close(ready_w);
        let mut byte = [0u8; 1];
        let _ = sys::read_full(barrier_r, &mut byte);
        sys::close(barrier_r);
    }
    // The pid namespace the task starts in: its numbers are the
    // machine's; those of namespaces below it the scenario's own.
    let state = TaskState {
        home_pid_level: sys::pid_ns_level().unwrap_or(0),
        ..TaskState::default()
    };
    run_ops(&ctx, 0, state)
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
    set_pid(ctx.instance, sys::proc_pid());
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

fn spec_of<'a>(setup: &'a Setup, ns: &str) -> Option<&'a kernel::setup::UserNsSpec> {
    setup.user_namespaces.iter().find(|s| s.name == ns)
}

fn through(map: &UidMap, outer: u32) -> Option<u32> {
    let offset = outer.checked_sub(map.outside)?;
    (offset < map.count).then(|| map.inside + offset)
}

/// `kuid` as seen in set-up namespace `ns` (the scenario's maps are each
/// relative to the namespace's parent).
pub fn local_id(setup: &Setup, ns: &str, kuid: u32, gid: bool) -> Option<u32> {
    if ns == INIT_USER_NS {
        return Some(kuid);
    }
    let spec = spec_of(setup, ns)?;
    let outer = local_id(setup, &spec.parent, kuid, gid)?;
    let maps = if gid {
        &setup.processes.gid_maps
    } else {
        &setup.processes.maps
    };
    through(maps.get(ns)?, outer)
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
