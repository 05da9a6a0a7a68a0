//! `nssim export --c`: a scenario as a standalone C program (libc and the
//! kernel's uapi headers only) that runs the scenario's world once per
//! repeat on the running kernel, as this executor does, and prints what
//! the executor's tasks report ([`crate::lines`]), so that the program's
//! output is read back as the executor's own.
//!
//! The program is a fixed runtime (`export_c/head.c`, `export_c/body.c`:
//! the world root, the set-up user namespaces and sysctls, credentials,
//! the barrier, one interpreter of ops) and tables written here from the
//! scenario. What can be decided before the run is decided here (which
//! instance an op names, the credentials' capability rule, the gid maps),
//! with the executor's own functions, so the two cannot drift apart.

#[path = "export_c/symptom.rs"]
pub mod symptom;

use crate::instance::{self, instance_named, Instance};
use crate::world;
use kernel::setup::{Op, Setup, INIT_USER_NS};
use scenario::{KernelRun, Scenario};
use std::fmt::Write as _;

const HEAD: &str = include_str!("export_c/head.c");

/// -1 as an id: the set*id calls leave that id as it is.
const UNCHANGED: u32 = u32::MAX;
const BODY: &str = include_str!("export_c/body.c");

/// The first op of the scenario the exported program cannot perform,
/// with why: those the executor cannot run, and a device's uevent, which
/// reaches the machine's own listeners (the executor checks for them
/// first; the program does not).
pub fn unsupported_in(setup: &Setup) -> Option<String> {
    let op = setup.ops_by_name().find_map(|(name, ops)| {
        ops.iter().find_map(|op| {
            let why = crate::ops::unsupported(op).or(match op {
                Op::UeventDeviceEvent { .. } => Some(
                    "an untagged device uevent reaches every network namespace of the initial user namespace, the machine's own listeners' too; only `nssim run --on-kernel`, which first checks that there are none, sends one",
                ),
                Op::FailAlloc { .. } => Some(
                    "fault injection sets the kernel's own failslab, which every process shares; only `nssim run --on-kernel --lab` injects faults, in a disposable VM",
                ),
                _ => None,
            })?;
            Some(format!("task {name} runs {}: {why}", op.name()))
        })
    });
    op.or_else(|| world::unsupported_pid_ns_depth(setup))
}

/// The C program of scenario `sc` (read from `file`), with `entry`'s
/// expectation in its opening comment; `Err` names the op it cannot
/// perform.
pub fn program(
    sc: &Scenario,
    file: &str,
    entry: Option<&KernelRun>,
    model: Option<&symptom::ModelSymptom>,
) -> Result<String, String> {
    if let Some(why) = unsupported_in(&sc.setup) {
        return Err(why);
    }
    let setup = &world::as_run(&sc.setup, crate::machine::WITHHELD_IN_INIT);
    let instances = instance::instances(setup);
    let symptoms = symptom::symptoms(setup, &instances, entry, model);
    let mut out = String::new();
    out.push_str(&opening_comment(sc, file, entry, &instances, &symptoms));
    out.push_str(HEAD);
    out.push_str("\n/* ---- the scenario ---- */\n\n");
    out.push_str(&errno_names());
    out.push_str(&tables(setup, &instances));
    out.push_str(&symptom_tables(&symptoms));
    out.push('\n');
    out.push_str(BODY);
    Ok(out)
}

/// Text safe inside a C comment.
fn comment_text(s: &str) -> String {
    s.replace("*/", "* /")
}

/// A C string literal of `s`: printable ASCII as it is, anything else
/// (and `"`, `\`, `?`) as a three-digit octal escape.
fn c_string(s: &str) -> String {
    let mut out = String::from("\"");
    for b in s.bytes() {
        // `?` too: two of them may start a trigraph.
        if (0x20..=0x7e).contains(&b) && !matches!(b, b'"' | b'\\' | b'?') {
            out.push(b as char);
        } else {
            let _ = write!(out, "\\{b:03o}");
        }
    }
    out.push('"');
    out
}

/// The words of `text` as comment lines of at most 78 columns, the first
/// after `prefix`, the others indented two columns more (a list item's).
fn wrapped(prefix: &str, text: &str) -> String {
    let more = if prefix.len() > 3 {
        format!("{prefix}  ")
    } else {
        prefix.to_string()
    };
    let mut out = String::new();
    let mut line = prefix.to_string();
    let mut fresh = true;
    for word in text.split_whitespace() {
        if !fresh && line.len() + 1 + word.len() > 78 {
            out.push_str(&line);
            out.push('\n');
            line = more.clone();
            fresh = true;
        }
        if !fresh {
            line.push(' ');
        }
        line.push_str(word);
        fresh = false;
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// The kernel functions each distinct op of the scenario runs through.
fn kernel_lines(setup: &Setup) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    let mut lines = Vec::new();
    for op in setup.every_op() {
        let label = op.label();
        if seen.contains(&label) {
            continue;
        }
        seen.push(label.clone());
        let functions = op.kernel_functions();
        if !functions.is_empty() {
            lines.push(format!("{label}: {}", functions.join(", ")));
        }
    }
    lines
}

fn expectation(entry: &KernelRun) -> String {
    let mut text = format!(
        "Kernel entry `{}` (profile {}{}): the model expects {}",
        entry.label,
        entry.profile,
        entry
            .patches
            .iter()
            .map(|p| format!(" {}{}", if p.enable { '+' } else { '-' }, p.name))
            .collect::<String>(),
        entry.expect.outcome
    );
    if let Some(inv) = &entry.expect.invariant {
        let _ = write!(text, " of {inv}");
    }
    let results: Vec<String> = entry
        .expect
        .results
        .iter()
        .map(|r| {
            let values = r
                .values
                .as_ref()
                .map(|v| format!(" values {v:?}"))
                .unwrap_or_default();
            format!("{} {} = {}{values}", r.task, r.op, r.written())
        })
        .collect();
    if !results.is_empty() {
        let _ = write!(text, "; results: {}", results.join(", "));
    }
    text.push('.');
    text
}

fn ns_name(ns: &str) -> String {
    if ns == INIT_USER_NS {
        "the initial user namespace".into()
    } else {
        format!("user namespace {ns}")
    }
}

/// The world's lines for the comment, each with its depth (an op under
/// its task).
fn world_lines(setup: &Setup, instances: &[Instance]) -> Vec<(usize, String)> {
    let mut lines = Vec::new();
    for u in &setup.user_namespaces {
        let map = |m: Option<&kernel::setup::UidMap>| {
            m.map_or("none".to_string(), |m| {
                format!("\"{} {} {}\"", m.inside, m.outside, m.count)
            })
        };
        lines.push((
            0,
            format!(
                "user namespace {}: child of {}, made by kuid {}; uid map {}, gid map {}",
                u.name,
                ns_name(&u.parent),
                u.owner,
                map(setup.processes.maps.get(&u.name)),
                map(world::gid_map_of(setup, &u.name)),
            ),
        ));
    }
    for s in &setup.sysctls {
        let mut line = format!("sysctl {} = {} in {}", s.name, s.value, ns_name(&s.userns));
        if s.userns == INIT_USER_NS {
            line.push_str(
                " (the program's stand-in for it: a child user namespace mapping every id to itself, so that the machine's own limit is never lowered)",
            );
        }
        lines.push((0, line));
    }
    for (t, task) in setup.tasks.iter().enumerate() {
        let numbers: Vec<String> = instances
            .iter()
            .enumerate()
            .filter(|(_, i)| i.task == t)
            .map(|(n, i)| format!("{n} ({})", i.name))
            .collect();
        let instance = if numbers.len() == 1 {
            "instance"
        } else {
            "instances"
        };
        let passes = match task.repeat {
            1 => "once".to_string(),
            n => format!("{n} times"),
        };
        lines.push((
            0,
            format!(
                "task {}: kuid {} in {}; {instance} {}{}; runs its ops {passes}:",
                task.name,
                task.uid,
                ns_name(&task.userns),
                numbers.join(", "),
                if task.sequential {
                    ", one after another"
                } else {
                    ""
                },
            ),
        ));
        for (i, op) in task.ops.iter().enumerate() {
            lines.push((1, format!("op {i}: {}", op.label())));
        }
    }
    for child in &setup.children {
        let n = instances.iter().position(|i| i.name == child.name);
        lines.push((
            0,
            format!(
                "child {}: instance {}, forked by {} with its credentials and namespaces; runs its ops once:",
                child.name,
                n.map_or("-".to_string(), |n| n.to_string()),
                child.parent,
            ),
        ));
        for (i, op) in child.ops.iter().enumerate() {
            lines.push((1, format!("op {i}: {}", op.label())));
        }
    }
    lines
}

/// The groups of calls that show the bug, as the program's tables.
fn symptom_tables(symptoms: &[symptom::Symptom]) -> String {
    let mut out = format!("#define N_SYMPTOMS {}\n", symptoms.len());
    let shows: Vec<String> = symptoms.iter().map(|s| c_string(&s.shows)).collect();
    out.push_str(&c_array("char *const SYMPTOM_SHOWS", &shows, "NULL"));
    let calls: Vec<String> = symptoms
        .iter()
        .enumerate()
        .flat_map(|(g, s)| {
            s.calls.iter().flat_map(move |(i, op)| {
                s.results.iter().map(move |r| {
                    format!(
                        "{{ .group = {g}, .instance = {i}, .op = {op}, .result = {} }}",
                        c_string(r)
                    )
                })
            })
        })
        .collect();
    out.push_str(&c_array(
        "struct symptom_call SYMPTOM_CALLS",
        &calls,
        "{ .group = -1 }",
    ));
    let _ = writeln!(out, "#define N_SYMPTOM_CALLS {}\n", calls.len());
    out
}

/// What the program's verdict looks for, for its opening comment.
fn verdict_text(symptoms: &[symptom::Symptom]) -> String {
    if symptoms.is_empty() {
        return "Its verdict: none. The entry names no symptom a call returns (no `results` errno, and no invariant whose violation a call's result shows), so it prints `no verdict` after its runs and exits 0; compare its output with the model (below).".to_string();
    }
    let shows: Vec<&str> = symptoms.iter().map(|s| s.shows.as_str()).collect();
    format!(
        "Its verdict: the bug reproduced in a run where {}. After its runs it prints `reproduced in K of N runs (first: run R): ...` and exits 1 when one did, else `not reproduced in N runs` and exits 0 (2: it could not run).",
        shows.join("; and ")
    )
}

fn opening_comment(
    sc: &Scenario,
    file: &str,
    entry: Option<&KernelRun>,
    instances: &[Instance],
    symptoms: &[symptom::Symptom],
) -> String {
    let mut c = String::from("/*\n");
    c.push_str(&wrapped(
        " * ",
        &comment_text(&format!("{}: {}", sc.name, sc.summary)),
    ));
    c.push_str(" *\n");
    c.push_str(&wrapped(
        " * ",
        &comment_text(&format!(
            "A reproducer written by `nssim export --c` from the scenario file {file}. It performs the scenario's ops on the running kernel as `nssim run --on-kernel` does: a pid namespace of its own per run, whose first process takes a network and an ipc namespace of its own, makes the scenario's user namespaces with their maps and sysctls, and starts one process per task instance with the scenario's credentials, all together behind a barrier."
        )),
    ));
    if let Some(entry) = entry {
        c.push_str(" *\n");
        c.push_str(&wrapped(" * ", &comment_text(&expectation(entry))));
    }
    c.push_str(" *\n");
    c.push_str(&wrapped(" * ", &comment_text(&verdict_text(symptoms))));
    c.push_str(" *\n * The kernel functions the ops run through:\n");
    for line in kernel_lines(&sc.setup) {
        c.push_str(&wrapped(" *   ", &comment_text(&line)));
    }
    c.push_str(" *\n * The world (op and instance numbers as the output gives them):\n");
    for (depth, line) in world_lines(&sc.setup, instances) {
        let prefix = format!(" *   {}", "  ".repeat(depth));
        c.push_str(&wrapped(&prefix, &comment_text(&line)));
    }
    c.push_str(&usage(sc, file));
    c.push_str(" */\n\n");
    c
}

/// How to build and run the program, what it prints, and how to check it.
fn usage(sc: &Scenario, file: &str) -> String {
    let execs = sc.setup.every_op().any(|op| matches!(op, Op::Execve {}));
    let mut c = String::from(
        " *\n * Build:  cc -Wall -Wextra -O2 -o repro repro.c\n * Run:    ./repro [--runs N] [-t SECONDS-PER-RUN], as root (-n N is --runs N)\n",
    );
    if execs {
        c.push_str(" *         from a directory the scenario's uids may search: an execve op\n *         runs the program again as the task's uid\n");
    }
    c.push_str(
        " *\n * It prints a line per event, its fields separated by tabs:\n *   K release                    the kernel's release, first\n *   N repeat                     a run begins\n *   B seqnum                     the machine's uevent sequence number as the\n *                                run's tasks start\n *   R instance op result values  a call: `ok` or an errno name, and what it\n *                                reported (comma-separated, `-` for nothing)\n *   E instance|- message         the world or an instance could not be set up\n *   T repeat                     the run was cut off at its time limit\n *\n * Whether the model reaches every outcome a saved output shows:\n *   ./repro -n 20 > out.txt\n",
    );
    c.push_str(&wrapped(
        " *   ",
        &comment_text(&format!(
            "nssim run --on-kernel --kernel-output out.txt {file}"
        )),
    ));
    c
}

/// `known_errno_name`: the errno names the executor records, from its
/// own table ([`crate::sys::errno_name`]).
fn errno_names() -> String {
    let mut out = String::from("static const char *known_errno_name(int e)\n{\n    switch (e) {\n");
    for e in 1..=133 {
        let name = crate::sys::errno_name(e);
        if name != format!("E{e}") {
            let _ = writeln!(out, "    case {name}: return \"{name}\";");
        }
    }
    out.push_str("    default: return NULL;\n    }\n}\n\n");
    out
}

/// `CLONE_NEWIPC | CLONE_NEWNET`, as the C headers name the flags.
fn c_flags(flags: u64) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut left = flags;
    for (name, value, ..) in kernel::clone_flags::CLONE_FLAGS {
        if flags & value != 0 {
            parts.push((*name).to_string());
            left &= !value;
        }
    }
    if left != 0 || parts.is_empty() {
        parts.push(format!("{left:#x}UL"));
    }
    parts.join(" | ")
}

fn target_of(instances: &[Instance], target: &str) -> i64 {
    instance_named(instances, target).map_or(-1, |i| i as i64)
}

/// One op of the task or child named `by` as a C initializer of `struct
/// op`.
fn c_op(op: &Op, by: &str, instances: &[Instance], ns_files: &[&str], events: &[String]) -> String {
    let slot = |name: &str| ns_files.iter().position(|n| *n == name).unwrap_or(0);
    let event_slot = |name: &str| events.iter().position(|n| n == name).unwrap_or(0);
    let write = |path: &str, text: &str| {
        format!(
            "{{ .kind = OP_WRITE_FILE, .path = {}, .text = {} }}",
            c_string(path),
            c_string(text)
        )
    };
    let write_of = |target: &str, file: &str, text: &str| {
        format!(
            "{{ .kind = OP_WRITE_FILE_OF, .target = {}, .path = {}, .text = {} }}",
            target_of(instances, target),
            c_string(file),
            c_string(text)
        )
    };
    let read_of = |target: &str, file: &str| {
        format!(
            "{{ .kind = OP_READ_MAP_OF, .target = {}, .path = {} }}",
            target_of(instances, target),
            c_string(file)
        )
    };
    let setns = |target: &str, ns: &str, flag: &str| {
        format!(
            "{{ .kind = OP_SETNS, .target = {}, .path = {}, .flags = {flag} }}",
            target_of(instances, target),
            c_string(ns)
        )
    };
    match op {
        Op::Unshare { flags } => format!("{{ .kind = OP_UNSHARE, .flags = {} }}", c_flags(*flags)),
        Op::SysctlWrite { name, value } => format!(
            "{{ .kind = OP_SYSCTL_WRITE, .path = {}, .value = {} }}",
            c_string(&crate::sys::sysctl_path(name)),
            c_signed(*value)
        ),
        Op::UeventListen { rcvbuf } => {
            format!(
                "{{ .kind = OP_UEVENT_LISTEN, .value = {} }}",
                c_long_long(*rcvbuf)
            )
        }
        Op::UeventRecv {} => "{ .kind = OP_UEVENT_RECV, .value = 0 }".into(),
        Op::UeventRecvWait {} => "{ .kind = OP_UEVENT_RECV, .value = 1 }".into(),
        Op::UeventClose {} => "{ .kind = OP_UEVENT_CLOSE }".into(),
        Op::UeventInject { payload } => format!(
            "{{ .kind = OP_UEVENT_INJECT, .text = {} }}",
            c_string(payload)
        ),
        Op::UeventNetdevEvent { .. } => "{ .kind = OP_UEVENT_NETDEV_EVENT }".into(),
        Op::Sleep { ns } => format!("{{ .kind = OP_SLEEP, .value = {} }}", c_long_long(*ns)),
        Op::WriteUidMap { text } => write("/proc/self/uid_map", text),
        Op::WriteGidMap { text } => write("/proc/self/gid_map", text),
        Op::WriteSetgroups { text } => write("/proc/self/setgroups", text),
        Op::WriteUidMapOf { target, text } => write_of(target, "uid_map", text),
        Op::WriteGidMapOf { target, text } => write_of(target, "gid_map", text),
        Op::WriteSetgroupsOf { target, text } => write_of(target, "setgroups", text),
        Op::OpenUidMapOf { target } => format!(
            "{{ .kind = OP_OPEN_UID_MAP_OF, .target = {} }}",
            target_of(instances, target)
        ),
        Op::WriteOpened { text } => {
            format!("{{ .kind = OP_WRITE_OPENED, .text = {} }}", c_string(text))
        }
        Op::ReadUidMapOf { target } => read_of(target, "uid_map"),
        Op::ReadGidMapOf { target } => read_of(target, "gid_map"),
        Op::SetnsUser { target } => setns(target, "user", "CLONE_NEWUSER"),
        Op::OpenNsUser { fd, target } => format!(
            "{{ .kind = OP_OPEN_NS_USER, .target = {}, .value = {} }}",
            target_of(instances, target),
            slot(fd)
        ),
        Op::Post { event } => format!("{{ .kind = OP_POST, .value = {} }}", event_slot(event)),
        Op::Wait { event } => format!("{{ .kind = OP_WAIT, .value = {} }}", event_slot(event)),
        Op::SetnsFd { fd } => format!("{{ .kind = OP_SETNS_FD, .value = {} }}", slot(fd)),
        Op::CloseFd { fd } => format!("{{ .kind = OP_CLOSE_FD, .value = {} }}", slot(fd)),
        Op::SetnsNet { target } => setns(target, "net", "CLONE_NEWNET"),
        Op::SetnsIpc { target } => setns(target, "ipc", "CLONE_NEWIPC"),
        Op::UnshareAndExit { flags } => format!(
            "{{ .kind = OP_UNSHARE_AND_EXIT, .flags = {} }}",
            c_flags(*flags)
        ),
        Op::Fork {} => "{ .kind = OP_FORK, .flags = 0 }".into(),
        Op::Clone { flags } => format!("{{ .kind = OP_FORK, .flags = {} }}", c_flags(*flags)),
        Op::ForkChild { child } => format!(
            "{{ .kind = OP_FORK_CHILD, .flags = 0, .target = {} }}",
            target_of(instances, &kernel::setup::child_name(by, child))
        ),
        Op::CloneChild { flags, child } => format!(
            "{{ .kind = OP_FORK_CHILD, .flags = {}, .target = {} }}",
            c_flags(*flags),
            target_of(instances, &kernel::setup::child_name(by, child))
        ),
        Op::Exit {} => "{ .kind = OP_EXIT }".into(),
        Op::Setuid { uid } => format!("{{ .kind = OP_SETUID, .value = {uid}LL }}"),
        Op::Setresuid { ruid, euid, suid } => {
            format!("{{ .kind = OP_SETRESUID, .ids = {{ {ruid}u, {euid}u, {suid}u }} }}")
        }
        Op::Seteuid { euid } => {
            format!("{{ .kind = OP_SETRESUID, .ids = {{ {UNCHANGED}u, {euid}u, {UNCHANGED}u }} }}")
        }
        Op::Setgid { gid } => format!("{{ .kind = OP_SETGID, .value = {gid}LL }}"),
        Op::Setegid { egid } => {
            format!("{{ .kind = OP_SETRESGID, .ids = {{ {UNCHANGED}u, {egid}u, {UNCHANGED}u }} }}")
        }
        Op::Setresgid { rgid, egid, sgid } => {
            format!("{{ .kind = OP_SETRESGID, .ids = {{ {rgid}u, {egid}u, {sgid}u }} }}")
        }
        Op::Setgroups { gids } => {
            format!("{{ .kind = OP_SETGROUPS, .text = {} }}", c_string(gids))
        }
        Op::Execve {} => "{ .kind = OP_EXECVE }".into(),
        Op::Open { file, access } => format!(
            "{{ .kind = OP_OPEN, .path = {}, .value = {access} }}",
            c_string(file)
        ),
        Op::Capget {} => "{ .kind = OP_CAPGET }".into(),
        Op::NsId { ns } => format!(
            "{{ .kind = OP_NS_ID, .path = {} }}",
            c_string(&format!("/proc/self/ns/{ns}"))
        ),
        Op::Getresuid {} => "{ .kind = OP_GETRESUID }".into(),
        Op::Getresgid {} => "{ .kind = OP_GETRESGID }".into(),
        Op::Setrlimit { resource, limit } => format!(
            "{{ .kind = OP_SETRLIMIT, .flags = RLIMIT_{}, .value = (long long){} }}",
            resource.strip_prefix("RLIMIT_").unwrap_or(resource),
            c_u64(*limit)
        ),
        Op::Sigqueue { target } => format!(
            "{{ .kind = OP_SIGQUEUE, .target = {} }}",
            target_of(instances, target)
        ),
        Op::Sigtimedwait {} => "{ .kind = OP_SIGTIMEDWAIT }".into(),
        Op::MqOpen {
            name,
            maxmsg,
            msgsize,
        } => format!(
            "{{ .kind = OP_MQ_OPEN, .path = {}, .value = (long long){}, .flags = {}UL }}",
            c_string(name),
            c_u64(*maxmsg),
            msgsize
        ),
        Op::Shmget { size } => format!(
            "{{ .kind = OP_SHMGET, .value = 0, .ids = {{ {} }}, .flags = 0{:o}UL }}",
            c_uint(*size),
            kernel::ops::SHMGET_PRIVATE_FLAGS
        ),
        Op::ShmgetKey { key, size, flags } => format!(
            "{{ .kind = OP_SHMGET, .value = (long long){}, .ids = {{ {} }}, .flags = 0{flags:o}UL }}",
            c_u64(*key),
            c_uint(*size)
        ),
        Op::IpcSysctlWrite { name, value } => format!(
            "{{ .kind = OP_WRITE_FILE, .path = {}, .text = {} }}",
            c_string(&crate::sys::sysctl_path(name)),
            c_string(&format!("{value}\n"))
        ),
        Op::Shmat {} => "{ .kind = OP_SHMAT }".into(),
        Op::Getpid {} => "{ .kind = OP_GETPID, .value = 0 }".into(),
        Op::Getppid {} => "{ .kind = OP_GETPID, .value = 1 }".into(),
        Op::Shmdt {} => "{ .kind = OP_SHMDT }".into(),
        Op::Shmctl { cmd } => format!("{{ .kind = OP_SHMCTL, .flags = {cmd}UL }}"),
        Op::ShmLock {} => "{ .kind = OP_SHM_LOCK }".into(),
        Op::ShmUnlock {} => "{ .kind = OP_SHM_UNLOCK }".into(),
        Op::WriteShmRmidForced { value } => format!(
            "{{ .kind = OP_WRITE_FILE, .path = {}, .text = {} }}",
            c_string(crate::ops::SHM_RMID_FORCED),
            c_string(&format!("{value}\n"))
        ),
        Op::MqOpenExisting { name } => {
            format!(
                "{{ .kind = OP_MQ_OPEN_EXISTING, .path = {} }}",
                c_string(name)
            )
        }
        Op::MqUnlink { name } => format!("{{ .kind = OP_MQ_UNLINK, .path = {} }}", c_string(name)),
        Op::Msgget { key, flags } => format!(
            "{{ .kind = OP_MSGGET, .value = (long long){}, .flags = 0{flags:o}UL }}",
            c_u64(*key)
        ),
        Op::Msgsnd { size } => format!(
            "{{ .kind = OP_MSGSND, .value = (long long){} }}",
            c_u64(*size)
        ),
        Op::Msgrcv { size } => format!(
            "{{ .kind = OP_MSGRCV, .value = (long long){} }}",
            c_u64(*size)
        ),
        Op::Msgctl { cmd } => format!("{{ .kind = OP_MSGCTL, .flags = {cmd}UL }}"),
        Op::Semget { key, nsems, flags } => format!(
            "{{ .kind = OP_SEMGET, .value = (long long){}, .ids = {{ {} }}, .flags = 0{flags:o}UL }}",
            c_u64(*key),
            c_uint(*nsems)
        ),
        Op::Semop { num, op } => format!(
            "{{ .kind = OP_SEMOP, .ids = {{ {} }}, .value = {op} }}",
            c_uint(*num)
        ),
        Op::Semctl { num, cmd } => format!(
            "{{ .kind = OP_SEMCTL, .ids = {{ {} }}, .flags = {cmd}UL }}",
            c_uint(*num)
        ),
        Op::SemctlSetval { num, value } => format!(
            "{{ .kind = OP_SEMCTL_SETVAL, .ids = {{ {} }}, .value = (long long){} }}",
            c_uint(*num),
            c_u64(*value)
        ),
        // Refused by `unsupported_in` before any table is written.
        Op::UeventDeviceEvent { .. }
        | Op::MqPathWalk { .. }
        | Op::Lock { .. }
        | Op::Unlock { .. }
        | Op::Bug { .. }
        | Op::FailAlloc { .. } => unreachable!("{} is refused before the tables", op.name()),
    }
}

/// An `i64` as a C `long long` constant (the least one is no literal).
fn c_signed(v: i64) -> String {
    if v == i64::MIN {
        "(-9223372036854775807LL - 1)".into()
    } else {
        format!("{v}LL")
    }
}

/// A `u64` as a C `long long`, wrapped as the C conversion wraps it.
fn c_long_long(v: u64) -> String {
    match i64::try_from(v) {
        Ok(v) => format!("{v}LL"),
        Err(_) => format!("(long long){v}ULL"),
    }
}

/// An `unsigned` of the op's `ids`: every value the checker admits
/// (at most 2147483647) fits.
fn c_uint(v: u64) -> String {
    format!("{}U", v.min(u64::from(u32::MAX)))
}

fn c_u64(v: u64) -> String {
    if v == u64::MAX {
        "ULLONG_MAX".into()
    } else {
        format!("{v}ULL")
    }
}

/// A C array of `rows` (one placeholder row when empty: C has no empty
/// arrays; the count says how many are real).
fn c_array(decl: &str, rows: &[String], placeholder: &str) -> String {
    let mut out = format!("static const {decl}[] = {{\n");
    if rows.is_empty() {
        let _ = writeln!(out, "    {placeholder},   /* none */");
    }
    for row in rows {
        let _ = writeln!(out, "    {row},");
    }
    out.push_str("};\n\n");
    out
}

fn userns_index(setup: &Setup, ns: &str) -> i64 {
    setup
        .user_namespaces
        .iter()
        .position(|u| u.name == ns)
        .map_or(-1, |i| i as i64)
}

fn map_text(m: Option<&kernel::setup::UidMap>) -> String {
    m.map_or("NULL".into(), |m| {
        c_string(&format!("{} {} {}\n", m.inside, m.outside, m.count))
    })
}

fn ident(prefix: &str, t: usize) -> String {
    format!("{prefix}_{t}")
}

fn int_list(name: &str, caps: &[u32]) -> String {
    let rows: Vec<String> = caps.iter().map(u32::to_string).collect();
    c_array(&format!("int {name}"), &rows, "-1")
}

/// The names of the files `open_ns_user` keeps, in name order: the C
/// program keeps file `name` in slot `position of name`.
fn ns_file_names(setup: &Setup) -> Vec<&str> {
    let mut names: Vec<&str> = setup
        .every_op()
        .filter_map(|op| match op {
            Op::OpenNsUser { fd, .. } | Op::SetnsFd { fd } | Op::CloseFd { fd } => {
                Some(fd.as_str())
            }
            _ => None,
        })
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

fn task_tables(setup: &Setup, instances: &[Instance]) -> String {
    let ns_files = ns_file_names(setup);
    let events = kernel::setup::event_names(setup);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "#define N_EVENTS {}\n#define EVENT_FDS {}\n#define PID_TABLE_FD {}",
        events.len(),
        instance::EVENT_FDS,
        instance::PID_TABLE_FD
    );
    // At least one slot: C has no arrays of none.
    let _ = writeln!(out, "#define N_NS_FILES {}\n", ns_files.len().max(1));
    let mut rows = Vec::new();
    let specs = setup
        .tasks
        .iter()
        .map(|t| (&t.name, &t.ops, Some(t)))
        .chain(setup.children.iter().map(|c| (&c.name, &c.ops, None)));
    for (t, (name, ops, task)) in specs.enumerate() {
        let ops: Vec<String> = ops
            .iter()
            .enumerate()
            .map(|(i, op)| {
                format!(
                    "/* {i}: {} */ {}",
                    comment_text(&op.label()),
                    c_op(op, name, instances, &ns_files, &events)
                )
            })
            .collect();
        let what = if task.is_some() { "task" } else { "child" };
        out.push_str(&format!(
            "/* {what} {} */
",
            comment_text(name)
        ));
        out.push_str(&c_array(
            &format!("struct op {}", ident("OPS", t)),
            &ops,
            "{ .kind = OP_SLEEP }",
        ));
        let Some(task) = task else {
            // A child: its parent's credentials, its ops once.
            rows.push(format!(
                "{{ .name = {}, .userns = -1, .repeat = 1ULL, .child = 1, .ops = {}, .n_ops = {} }}",
                c_string(name),
                ident("OPS", t),
                ops.len(),
            ));
            continue;
        };
        let none = Vec::new();
        let bounding = setup
            .processes
            .bounding_drop
            .get(&task.name)
            .unwrap_or(&none);
        let dropped = setup.processes.cap_drop.get(&task.name).unwrap_or(&none);
        out.push_str(&int_list(&ident("BOUNDING_DROP", t), bounding));
        out.push_str(&int_list(&ident("CAP_DROP", t), dropped));
        let nproc = setup.processes.task_nproc.get(&task.name);
        let pid_ns_depth = setup.processes.pid_ns_depth.get(&task.name);
        rows.push(format!(
            "{{ .name = {}, .userns = {}, .uid = {}u, .repeat = {}ULL, .sequential = {}, .keeps_caps = {}, .has_nproc = {}, .nproc = {}, .pid_ns_depth = {}, .ops = {}, .n_ops = {}, .bounding_drop = {}, .n_bounding_drop = {}, .cap_drop = {}, .n_cap_drop = {} }}",
            c_string(&task.name),
            userns_index(setup, &task.userns),
            task.uid,
            task.repeat,
            i32::from(task.sequential),
            i32::from(crate::task::keeps_capabilities(setup, task)),
            i32::from(nproc.is_some()),
            c_u64(nproc.copied().unwrap_or(0)),
            pid_ns_depth.copied().unwrap_or(0),
            ident("OPS", t),
            task.ops.len(),
            ident("BOUNDING_DROP", t),
            bounding.len(),
            ident("CAP_DROP", t),
            dropped.len(),
        ));
    }
    out.push_str(&c_array(
        "struct task_spec TASKS",
        &rows,
        "{ .name = NULL }",
    ));
    out
}

fn tables(setup: &Setup, instances: &[Instance]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "#define N_USERNS {}", setup.user_namespaces.len());
    let _ = writeln!(out, "#define N_SYSCTLS {}", setup.sysctls.len());
    let _ = writeln!(
        out,
        "#define N_TASKS {}",
        setup.tasks.len() + setup.children.len()
    );
    let _ = writeln!(out, "#define N_INSTANCES {}", instances.len());
    let _ = writeln!(
        out,
        "/* A sysctl of the initial user namespace is written in a stand-in for it. */\n#define STAND_IN {}\n",
        i32::from(world::needs_stand_in(setup))
    );
    let userns: Vec<String> = setup
        .user_namespaces
        .iter()
        .map(|u| {
            let nproc = setup.processes.creator_nproc.get(&u.name);
            format!(
                "{{ .name = {}, .parent = {}, .owner = {}u, .has_nproc = {}, .creator_nproc = {}, .uid_map = {}, .gid_map = {} }}",
                c_string(&u.name),
                userns_index(setup, &u.parent),
                u.owner,
                i32::from(nproc.is_some()),
                c_u64(nproc.copied().unwrap_or(0)),
                map_text(setup.processes.maps.get(&u.name)),
                map_text(world::gid_map_of(setup, &u.name)),
            )
        })
        .collect();
    out.push_str(&c_array(
        "struct userns_spec USERNS",
        &userns,
        "{ .name = NULL }",
    ));
    let sysctls: Vec<String> = setup
        .sysctls
        .iter()
        .map(|s| {
            format!(
                "{{ .userns = {}, .path = {}, .value = {} }}",
                userns_index(setup, &s.userns),
                c_string(&crate::sys::sysctl_path(&s.name)),
                c_signed(s.value)
            )
        })
        .collect();
    out.push_str(&c_array(
        "struct sysctl_spec SYSCTLS",
        &sysctls,
        "{ .path = NULL }",
    ));
    let _ = writeln!(out, "#define N_FILES {}", setup.files.len());
    let files: Vec<String> = setup
        .files
        .iter()
        .map(|f| {
            format!(
                "{{ .name = {}, .uid = {}u, .gid = {}u, .mode = 0{:o} }}",
                c_string(&f.name),
                f.uid,
                f.gid,
                f.mode
            )
        })
        .collect();
    out.push_str(&c_array(
        "struct file_spec FILES",
        &files,
        "{ .name = NULL }",
    ));
    out.push_str(&task_tables(setup, instances));
    let rows: Vec<String> = instances
        .iter()
        .map(|i| format!("{{ .task = {}, .name = {} }}", i.task, c_string(&i.name)))
        .collect();
    out.push_str(&c_array(
        "struct instance INSTANCES",
        &rows,
        "{ .task = -1 }",
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_escaped_for_c() {
        assert_eq!(c_string("0 0 1\n"), "\"0 0 1\\012\"");
        assert_eq!(c_string("a\"b\\c??="), "\"a\\042b\\134c\\077\\077=\"");
        assert_eq!(comment_text("a */ b"), "a * / b");
    }

    #[test]
    fn numbers_are_c_constants_of_their_type() {
        assert_eq!(c_signed(-5), "-5LL");
        assert_eq!(c_signed(i64::MIN), "(-9223372036854775807LL - 1)");
        assert_eq!(c_long_long(7), "7LL");
        assert_eq!(c_long_long(u64::MAX), "(long long)18446744073709551615ULL");
        assert_eq!(c_u64(u64::MAX), "ULLONG_MAX");
    }

    #[test]
    fn flags_are_named_as_the_c_headers_name_them() {
        use kernel::clone_flags::*;
        assert_eq!(
            c_flags(CLONE_NEWIPC | CLONE_NEWNET),
            "CLONE_NEWIPC | CLONE_NEWNET"
        );
        assert_eq!(c_flags(0), "0x0UL");
    }
}
