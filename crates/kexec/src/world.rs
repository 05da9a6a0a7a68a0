//! One run of a scenario's world on the running kernel.
//!
//! The executor process clones a *world root* into a pid namespace of its
//! own: when the root dies, the kernel kills every process of the run, so
//! nothing outlives a run that ends early. The root takes a network and an
//! ipc namespace of its own (the run's stand-ins for the initial ones, so
//! that nothing the run does reaches the machine's), makes the scenario's
//! `[[userns]]` namespaces with their maps, sysctls and creators'
//! RLIMIT_NPROC, then forks one process per task instance with its
//! credentials. The instances start together when the root closes a
//! barrier pipe, and report each call's result on a results pipe. A
//! child that acts (`[[task.child]]`) is forked by its parent's process
//! when that runs `fork_child` or `clone_child`, and reports as an
//! instance of its own.
//!
//! A scenario that sets a sysctl of the initial user namespace runs in a
//! child user namespace mapping every id to itself: the machine's own
//! limits are never lowered.

use crate::instance::{instances, set_pid, EVENT_FDS, PID_TABLE_FD};
use crate::lines::{self, report_error, WorldRun};
use crate::machine::{Machine, WITHHELD_IN_INIT};
use crate::state::TaskCtx;
use crate::sys::{self, set_dumpable, write_sysctl, SysResult};
use crate::task;
use kernel::setup::{Op, Setup, UidMap, INIT_USER_NS};
use std::collections::BTreeMap;
use std::time::Instant;

/// What a task of the initial namespace lacks in a run on this machine:
/// [`WITHHELD_IN_INIT`], and whatever the machine's own bounding set
/// lacks (a container's root often runs without some capabilities).
pub fn withheld_here() -> Vec<u32> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let bounding = status
        .lines()
        .find_map(|l| l.strip_prefix("CapBnd:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok());
    let mut withheld = WITHHELD_IN_INIT.to_vec();
    if let Some(set) = bounding {
        withheld.extend((0..=userns::caps::CAP_LAST_CAP).filter(|c| set & (1u64 << c) == 0));
    }
    withheld.sort_unstable();
    withheld.dedup();
    withheld
}

/// The set-up as a run has it: every task of the initial user namespace
/// with `withheld` dropped from its bounding set too (so also from what
/// it holds). The executor runs this set-up, and the model is held to
/// the kernel on it.
pub fn as_run(setup: &Setup, withheld: &[u32]) -> Setup {
    let mut run = setup.clone();
    for t in setup.tasks.iter().filter(|t| t.userns == INIT_USER_NS) {
        let drops = run
            .processes
            .bounding_drop
            .entry(t.name.clone())
            .or_default();
        for cap in withheld {
            if !drops.contains(cap) {
                drops.push(*cap);
            }
        }
    }
    run
}

/// Whether the run needs a stand-in for the initial user namespace: it
/// writes one of the initial namespace's sysctls.
pub fn needs_stand_in(setup: &Setup) -> bool {
    setup.sysctls.iter().any(|s| s.userns == INIT_USER_NS)
}

/// The run's own pid namespace is the first level below the initial one,
/// shared by every task: a task the model starts alone in a namespace of
/// level 1 has no counterpart on the kernel.
pub(crate) fn unsupported_pid_ns_depth(setup: &Setup) -> Option<String> {
    let (name, _) = setup
        .processes
        .pid_ns_depth
        .iter()
        .find(|(_, depth)| **depth == 1)?;
    Some(format!(
        "task {name} starts 1 pid namespace down (pid_ns_depth = 1): on the kernel that level is the run's own pid namespace, which every task shares"
    ))
}

/// The fds a run passes down to its task processes.
pub struct Pipes {
    /// Write end of the results pipe (kept across execve).
    pub results: i32,
    /// The request, in a memfd kept across execve.
    pub plan: i32,
    /// Where the set-up's files are (`files::SetupFiles`).
    pub files_dir: String,
}

/// Run the world of `setup` once, ending it at `deadline`.
pub fn run_world(
    setup: &Setup,
    machine: Machine,
    plan_fd: i32,
    files_dir: &str,
    deadline: Instant,
) -> WorldRun {
    let (results_r, results_w) = sys::pipe();
    sys::keep_on_exec(results_w);
    let (ask_r, ask_w) = sys::pipe();
    let (ack_r, ack_w) = sys::pipe();
    let stand_in = machine.stand_ins() && needs_stand_in(setup);
    let pid_namespace = match machine.own_pid_namespace() {
        true => libc::CLONE_NEWPID as u64,
        false => 0,
    };
    let root = match sys::clone_process(pid_namespace) {
        Ok(pid) => pid,
        Err(e) => {
            for fd in [results_r, results_w, ask_r, ask_w, ack_r, ack_w] {
                sys::close(fd);
            }
            return WorldRun {
                error: Some(format!(
                    "cannot make the run's pid namespace: {}",
                    sys::errno_name(e)
                )),
                ..WorldRun::default()
            };
        }
    };
    if root == 0 {
        sys::close(results_r);
        sys::close(ask_r);
        sys::close(ack_w);
        let pipes = Pipes {
            results: results_w,
            plan: plan_fd,
            files_dir: files_dir.to_string(),
        };
        let code = match world_root(setup, &pipes, machine, stand_in, ask_w, ack_r) {
            Ok(()) => 0,
            Err(msg) => {
                report_error(pipes.results, None, &msg);
                1
            }
        };
        sys::exit_now(code);
    }
    sys::close(results_w);
    sys::close(ask_w);
    sys::close(ack_r);
    let mut run = WorldRun::default();
    if stand_in {
        if let Err(msg) = map_stand_in(root, ask_r, ack_w) {
            run.error = Some(msg);
        }
    }
    sys::close(ask_r);
    sys::close(ack_w);
    run.timed_out = !lines::read_lines(results_r, deadline, |line| {
        lines::parse_line(line, &mut run)
    });
    if run.timed_out {
        sys::kill(root, libc::SIGKILL);
    }
    sys::close(results_r);
    let _ = sys::waitpid(root, 0);
    run
}

/// The stand-in initial namespace maps every uid and gid to itself.
fn map_stand_in(root: i32, ask: i32, ack: i32) -> Result<(), String> {
    let mut byte = [0u8; 1];
    if sys::read_full(ask, &mut byte) != Ok(1) {
        return Err("the world root ended before its user namespace was made".into());
    }
    for file in ["uid_map", "gid_map"] {
        sys::write_file_once(&format!("/proc/{root}/{file}"), "0 0 4294967295\n").map_err(|e| {
            format!(
                "cannot map the stand-in initial user namespace: {file}: {}",
                sys::errno_name(e)
            )
        })?;
    }
    sys::write(ack, b"m").map_err(|e| format!("world root gone: {}", sys::errno_name(e)))?;
    Ok(())
}

fn quiet_stdio() {
    if let Ok(null) = sys::open("/dev/null", libc::O_RDWR) {
        unsafe {
            libc::dup2(null, 0);
            libc::dup2(null, 1);
            libc::dup2(null, 2);
        }
        sys::close(null);
    }
}

/// Pid 1 of the run's pid namespace: builds the world, starts the tasks,
/// reaps every process until none is left.
fn world_root(
    setup: &Setup,
    pipes: &Pipes,
    machine: Machine,
    stand_in: bool,
    ask: i32,
    ack: i32,
) -> Result<(), String> {
    sys::die_with_parent();
    if !machine.own_pid_namespace() {
        // Not pid 1 of a namespace: the orphans of the run's tasks are
        // still the root's to reap.
        sys::become_subreaper()
            .map_err(|e| format!("PR_SET_CHILD_SUBREAPER: {}", sys::errno_name(e)))?;
    }
    quiet_stdio();
    sys::clear_groups().map_err(|e| format!("setgroups: {}", sys::errno_name(e)))?;
    // The model's tasks start without an RLIMIT_NPROC unless the scenario
    // gives one. Raising the hard limit needs the initial namespace's
    // CAP_SYS_RESOURCE (so before any stand-in user namespace), which a
    // machine's root may lack: then the soft limit is raised to the hard.
    sys::raise_nproc_limit().map_err(|e| format!("setrlimit(NPROC): {}", sys::errno_name(e)))?;
    // The run's network and ipc namespaces come first, so that in a
    // stand-in initial user namespace they are not charged to its limits
    // (the model's initial namespaces are charged to none).
    if machine.stand_ins() {
        sys::unshare((libc::CLONE_NEWNET | libc::CLONE_NEWIPC) as u64).map_err(|e| {
            format!(
                "cannot make the run's network and ipc namespaces: {}",
                sys::errno_name(e)
            )
        })?;
    }
    if stand_in {
        sys::unshare(libc::CLONE_NEWUSER as u64).map_err(|e| {
            format!(
                "cannot make the stand-in initial user namespace: {}",
                sys::errno_name(e)
            )
        })?;
        let _ = sys::write(ask, b"u");
        let mut byte = [0u8; 1];
        if sys::read_full(ack, &mut byte) != Ok(1) {
            return Err("the stand-in initial user namespace was not mapped".into());
        }
    }
    sys::close(ask);
    sys::close(ack);
    // As in the model, the sysctls apply once the set-up namespaces exist.
    let userns_fds = make_user_namespaces(setup)?;
    for s in setup.sysctls.iter().filter(|s| s.userns == INIT_USER_NS) {
        write_sysctl(&s.name, s.value)
            .map_err(|e| format!("sysctl {} = {}: {}", s.name, s.value, sys::errno_name(e)))?;
    }
    make_event_pipes(setup)?;
    crate::fault::arm_failslab(setup)?;
    if let Ok(text) = std::fs::read_to_string("/sys/kernel/uevent_seqnum") {
        let line = format!("B\t{}\n", text.trim());
        let _ = sys::write(pipes.results, line.as_bytes());
    }
    start_tasks(setup, pipes, &userns_fds)
}

/// One pipe per event of `setup`, at [`EVENT_FDS`]: a post writes a byte,
/// a wait reads one.
fn make_event_pipes(setup: &Setup) -> Result<(), String> {
    for i in 0..kernel::setup::event_names(setup).len() as i32 {
        let (r, w) = sys::pipe();
        for (from, to) in [(r, EVENT_FDS + 2 * i), (w, EVENT_FDS + 2 * i + 1)] {
            // dup2 leaves the new fd open across execve.
            if unsafe { libc::dup2(from, to) } < 0 {
                return Err(format!(
                    "cannot place an event pipe at fd {to}: {}",
                    sys::errno_name(sys::errno())
                ));
            }
            sys::close(from);
        }
    }
    Ok(())
}

/// The set-up user namespaces, parents first, each held by an fd of
/// `/proc/PID/ns/user` once its creator has exited.
fn make_user_namespaces(setup: &Setup) -> Result<BTreeMap<String, i32>, String> {
    let mut fds: BTreeMap<String, i32> = BTreeMap::new();
    for spec in &setup.user_namespaces {
        let fd = make_user_namespace(setup, spec, &fds)
            .map_err(|m| format!("user namespace {}: {m}", spec.name))?;
        fds.insert(spec.name.clone(), fd);
    }
    for s in setup.sysctls.iter().filter(|s| s.userns != INIT_USER_NS) {
        let fd = fds[&s.userns];
        sys::in_child(|| {
            sys::setns(fd, libc::CLONE_NEWUSER)?;
            write_sysctl(&s.name, s.value)
        })
        .map_err(|e| {
            format!(
                "sysctl {} = {} in {}: {}",
                s.name,
                s.value,
                s.userns,
                sys::errno_name(e)
            )
        })?;
    }
    Ok(fds)
}

fn make_user_namespace(
    setup: &Setup,
    spec: &kernel::setup::UserNsSpec,
    fds: &BTreeMap<String, i32>,
) -> Result<i32, String> {
    let parent_fd = fds.get(&spec.parent).copied();
    let owner = spec.owner;
    let nproc = setup.processes.creator_nproc.get(&spec.name).copied();
    let (ready_r, ready_w) = sys::pipe();
    let holder = sys::fork().map_err(|e| format!("fork: {}", sys::errno_name(e)))?;
    if holder == 0 {
        sys::close(ready_r);
        let made = (|| -> SysResult<()> {
            if let Some(n) = nproc {
                sys::set_nproc_limit(n)?;
            }
            // The creator: kuid and kgid `owner`, in the parent.
            sys::become_keeping_caps(owner, owner)?;
            if let Some(fd) = parent_fd {
                sys::setns(fd, libc::CLONE_NEWUSER)?;
            }
            sys::unshare(libc::CLONE_NEWUSER as u64)?;
            set_dumpable();
            Ok(())
        })();
        let line = match made {
            Ok(()) => format!("{}\n", sys::proc_pid()),
            Err(e) => format!("E {}\n", sys::errno_name(e)),
        };
        let _ = sys::write(ready_w, line.as_bytes());
        sys::pause_forever();
    }
    sys::close(ready_w);
    let mut buf = [0u8; 64];
    // One read: the holder writes its answer in one write and then waits.
    let n = sys::read_once(ready_r, &mut buf[..]).unwrap_or(0);
    sys::close(ready_r);
    let answer = String::from_utf8_lossy(&buf[..n]).to_string();
    let result = (|| {
        let pid: u32 = answer
            .trim()
            .parse()
            .map_err(|_| format!("its creator failed: {}", answer.trim()))?;
        let fd = sys::open(&format!("/proc/{pid}/ns/user"), libc::O_RDONLY)
            .map_err(|e| format!("open ns: {}", sys::errno_name(e)))?;
        for (file, map) in [
            ("uid_map", setup.processes.maps.get(&spec.name)),
            ("gid_map", gid_map_of(setup, &spec.name)),
        ] {
            if let Some(m) = map {
                let text = format!("{} {} {}\n", m.inside, m.outside, m.count);
                let path = format!("/proc/{pid}/{file}");
                let write = || sys::write_file_once(&path, &text);
                match parent_fd {
                    None => write(),
                    Some(pfd) => sys::in_child(|| {
                        sys::setns(pfd, libc::CLONE_NEWUSER)?;
                        write()
                    }),
                }
                .map_err(|e| format!("{file} `{}`: {}", text.trim(), sys::errno_name(e)))?;
            }
        }
        Ok(fd)
    })();
    sys::kill(holder, libc::SIGKILL);
    let _ = sys::waitpid(holder, 0);
    result
}

/// The gid map a set-up namespace gets: the scenario's, or, for a parent
/// of another set-up namespace, a copy of its uid map (its child's
/// creator needs a mapped gid, which the model does not ask for).
pub fn gid_map_of<'a>(setup: &'a Setup, ns: &str) -> Option<&'a UidMap> {
    let is_parent = setup.user_namespaces.iter().any(|s| s.parent == ns);
    setup
        .processes
        .gid_maps
        .get(ns)
        .or_else(|| is_parent.then(|| setup.processes.maps.get(ns)).flatten())
}

/// Make the pid table for `len` instances at [`PID_TABLE_FD`].
fn make_pid_table(len: usize) -> Result<(), String> {
    let name = sys::cstring("nssim-pids");
    let fd = unsafe { libc::memfd_create(name.as_ptr(), 0) };
    let placed = fd >= 0
        && unsafe { libc::ftruncate(fd, (len.max(1) * 4) as libc::off_t) } == 0
        && unsafe { libc::dup2(fd, PID_TABLE_FD) } == PID_TABLE_FD;
    let err = sys::errno();
    if fd >= 0 {
        sys::close(fd);
    }
    match placed {
        true => Ok(()),
        false => Err(format!(
            "cannot make the pid table: {}",
            sys::errno_name(err)
        )),
    }
}

/// Fork every instance (the first of a sequential task), open the
/// barrier once all are ready, then reap until no process is left,
/// forking a sequential task's next instance when one exits.
fn start_tasks(
    setup: &Setup,
    pipes: &Pipes,
    userns_fds: &BTreeMap<String, i32>,
) -> Result<(), String> {
    let instances = instances(setup);
    make_pid_table(instances.len())?;
    let (barrier_r, barrier_w) = sys::pipe();
    let (ready_r, ready_w) = sys::pipe();
    let first_of = |i: usize| i == 0 || instances[i - 1].task != instances[i].task;
    // A child that acts starts when its parent forks it.
    let starts_now = |i: usize| match setup.tasks.get(instances[i].task) {
        Some(t) => !t.sequential || first_of(i),
        None => false,
    };
    let mut running: BTreeMap<i32, usize> = BTreeMap::new();
    let spawn = |i: usize, gate: Option<(i32, i32, i32)>| -> Result<i32, String> {
        let pid = sys::fork()
            .map_err(|e| format!("fork of {}: {}", instances[i].name, sys::errno_name(e)))?;
        if pid == 0 {
            // A task in nested pid namespaces publishes the pid of the
            // process at the end of its chain, once it is there.
            if !task::nests_pid_namespaces(setup, instances[i].task) {
                set_pid(i, sys::proc_pid());
            }
            let ctx = TaskCtx {
                setup,
                instances: &instances,
                instance: i,
                results: pipes.results,
                plan: pipes.plan,
                files_dir: &pipes.files_dir,
            };
            task::start(ctx, userns_fds, gate);
        }
        Ok(pid)
    };
    for i in (0..instances.len()).filter(|i| starts_now(*i)) {
        let pid = spawn(i, Some((barrier_r, barrier_w, ready_w)))?;
        running.insert(pid, i);
    }
    sys::close(ready_w);
    sys::close(barrier_r);
    let expected = running.len();
    let mut got = vec![0u8; expected];
    let ready = sys::read_full(ready_r, &mut got).unwrap_or(0);
    sys::close(ready_r);
    sys::close(barrier_w);
    // An instance that failed to start reported why; the others see the
    // barrier open and run, and are reaped below.
    let _ = ready;
    while let Ok((pid, _)) = sys::waitpid(-1, 0) {
        if let Some(i) = running.remove(&pid) {
            let next = i + 1;
            if next < instances.len()
                && instances[next].task == instances[i].task
                && !starts_now(next)
            {
                let pid = spawn(next, None)?;
                running.insert(pid, next);
            }
        }
    }
    remove_queues(setup);
    Ok(())
}

/// Every task has exited: the queues the scenario made are unlinked, so
/// that their charge (on users of namespaces that outlive the run) is
/// back before the next run; the run's ipc namespace would free them
/// only later, from a work item.
fn remove_queues(setup: &Setup) {
    for op in setup.every_op() {
        if let Op::MqOpen { name, .. } = op {
            let _ = sys::mq_unlink(name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use userns::caps::{CAP_NET_ADMIN, CAP_SYS_RESOURCE};

    const SCENARIO: &str = r#"
name = "as-run"
summary = "tasks in and out of the initial user namespace"
[[userns]]
name = "theirs"
owner = 1000
[[task]]
name = "root"
uid = 0
ops = ["sysctl_write(user.max_ipc_namespaces, 5)"]
[[task]]
name = "dropped"
uid = 0
drop_bounding = ["CAP_NET_ADMIN"]
ops = ["fork()"]
[[task]]
name = "inside"
userns = "theirs"
uid = 1000
ops = ["sysctl_write(user.max_ipc_namespaces, 5)"]
[[kernel]]
profile = "v6.16"
expect = "pass"
"#;

    #[test]
    fn a_run_withholds_sys_resource_from_the_initial_namespace_only() {
        let setup = scenario::parse("as-run.toml", SCENARIO).unwrap().setup;
        let run = as_run(&setup, WITHHELD_IN_INIT);
        let drops = |name: &str| run.processes.bounding_drop.get(name).cloned();
        assert_eq!(drops("root"), Some(vec![CAP_SYS_RESOURCE]));
        assert_eq!(
            drops("dropped"),
            Some(vec![CAP_NET_ADMIN, CAP_SYS_RESOURCE])
        );
        assert_eq!(drops("inside"), None, "a child namespace gives a full set");
        assert_eq!(
            as_run(&run, WITHHELD_IN_INIT),
            run,
            "withholding twice adds nothing"
        );
    }

    #[test]
    fn this_machine_withholds_at_least_what_every_run_does() {
        let here = withheld_here();
        assert!(WITHHELD_IN_INIT.iter().all(|c| here.contains(c)));
        assert!(here.windows(2).all(|w| w[0] < w[1]), "sorted, once each");
    }

    #[test]
    fn a_task_one_pid_namespace_down_has_no_kernel_counterpart() {
        let mut setup = Setup::default();
        assert_eq!(unsupported_pid_ns_depth(&setup), None);
        setup.processes.pid_ns_depth.insert("deep".into(), 32);
        assert_eq!(unsupported_pid_ns_depth(&setup), None);
        setup.processes.pid_ns_depth.insert("shallow".into(), 1);
        let why = unsupported_pid_ns_depth(&setup).expect("refused");
        assert!(
            why.starts_with("task shallow starts 1 pid namespace down"),
            "{why}"
        );
    }
}
