//! `nssim run --on-kernel`: the executor against this machine's kernel.
//! Each test says why when the machine cannot run the executor (not root,
//! no user namespaces) and then checks nothing; the tests run one at a
//! time, since each counts the machine's processes and namespaces.

use crate::support;

use std::collections::BTreeSet;
use support::{nssim, stdout};

/// Why this machine cannot run the executor, if it cannot.
fn cannot_run() -> Option<String> {
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root".into());
    }
    let max = std::fs::read_to_string("/proc/sys/user/max_user_namespaces").unwrap_or_default();
    (max.trim().parse::<u64>().unwrap_or(0) == 0).then(|| "no user namespaces".into())
}

fn skip_unless_runnable(test: &str) -> bool {
    match cannot_run() {
        Some(why) => {
            eprintln!("SKIPPED {test}: the kernel executor cannot run here ({why})");
            false
        }
        None => true,
    }
}

/// Every namespace (user, net, ipc, pid) some process of the machine is
/// in, and the executor processes alive.
fn machine_state() -> (BTreeSet<String>, usize) {
    let mut namespaces = BTreeSet::new();
    let mut executors = 0;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains("__kernel-") {
            executors += 1;
        }
        for ns in ["user", "net", "ipc", "pid"] {
            if let Ok(link) = std::fs::read_link(entry.path().join("ns").join(ns)) {
                namespaces.insert(link.to_string_lossy().to_string());
            }
        }
    }
    (namespaces, executors)
}

fn assert_nothing_left(before: &BTreeSet<String>) {
    let (after, executors) = machine_state();
    assert_eq!(executors, 0, "executor processes are left behind");
    let new: Vec<&String> = after.difference(before).collect();
    assert!(new.is_empty(), "namespaces left behind: {new:?}");
}

#[test]
fn a_model_without_the_user_namespace_charge_misses_what_the_kernel_shows() {
    let _turn = support::kernel_turn();
    if !skip_unless_runnable("a_model_without_the_user_namespace_charge") {
        return;
    }
    let scenario = "sim-scenarios/userns-create-drop-loop.toml";
    let faithful = nssim(&["run", "--on-kernel", scenario, "--repeat", "3"]);
    let text = stdout(&faithful);
    assert_eq!(faithful.status.code(), Some(0), "{text}");
    assert!(text.contains(" agree ("), "{text}");
    let wrong = nssim(&[
        "run",
        "--on-kernel",
        scenario,
        "--repeat",
        "3",
        "--patch",
        "-userns-ucounts-limits",
    ]);
    let text = stdout(&wrong);
    assert_eq!(wrong.status.code(), Some(1), "{text}");
    assert!(text.contains(" model-misses ("), "{text}");
    assert!(text.contains("NOT REACHED BY THE MODEL"), "{text}");
    // A disagreement on the shared host names what else on the machine
    // could have caused it; an agreement says nothing of the kind.
    assert!(text.contains("note: this machine is shared"), "{text}");
    assert!(
        text.contains("device uevent") && text.contains("`--lab`"),
        "{text}"
    );
    assert!(!stdout(&faithful).contains("this machine is shared"));
}

#[test]
fn the_executor_leaves_no_process_and_no_namespace_behind() {
    let _turn = support::kernel_turn();
    if !skip_unless_runnable("the_executor_leaves_no_process_and_no_namespace_behind") {
        return;
    }
    let (before, _) = machine_state();
    let scenarios = [
        "sim-scenarios/nproc-setuid-execve.toml",
        "sim-scenarios/userns-limits-nested.toml",
        "sim-scenarios/netns-setns.toml",
        "sim-scenarios/ipc-v6.3-window-loopers.toml",
    ];
    let mut args = vec!["run", "--on-kernel", "--repeat", "2", "--format", "json"];
    args.extend(scenarios);
    let out = nssim(&args);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["on_kernel"]["verdict"], "agree", "{line}");
        assert!(v["on_kernel"]["repeats"].as_u64().unwrap() >= 1, "{line}");
    }
    assert_nothing_left(&before);
}

/// A scenario whose tasks outlive the executor's wall-clock bound.
fn sleepers(dir: &std::path::Path) -> std::path::PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let file = dir.join("sleepers.toml");
    std::fs::write(&file, SLEEPERS).unwrap();
    file
}

const SLEEPERS: &str = r#"name = "sleepers"
summary = "tasks that sleep past the executor's wall-clock bound"

[[userns]]
name = "c"
owner = 1000
map = "0 1000 1"

[[task]]
name = "sleeper"
instances = 3
userns = "c"
uid = 1000
ops = ["fork()", "unshare(CLONE_NEWNET)", "sleep(60s)"]

[[kernel]]
profile = "v6.9"
expect = "pass"
"#;

/// Wait (a bounded number of times) until `done` holds.
fn eventually(mut done: impl FnMut() -> bool) -> bool {
    (0..200).any(|_| {
        if done() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        false
    })
}

#[test]
fn an_interrupted_run_leaves_nothing_behind() {
    let _turn = support::kernel_turn();
    if !skip_unless_runnable("an_interrupted_run_leaves_nothing_behind") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("nssim-onkernel-int-{}", std::process::id()));
    let file = sleepers(&dir);
    let (before, _) = machine_state();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_nssim"))
        .args([
            "run",
            "--on-kernel",
            "--repeat",
            "1",
            file.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    assert!(eventually(|| machine_state().1 > 0), "the executor started");
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    child.wait().unwrap();
    assert!(
        eventually(|| machine_state().1 == 0),
        "the executor's processes died with nssim"
    );
    assert!(eventually(|| machine_state().0.is_subset(&before)));
    assert_nothing_left(&before);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_run_cut_off_by_its_wall_clock_bound_leaves_nothing_behind() {
    let _turn = support::kernel_turn();
    if !skip_unless_runnable("a_run_cut_off_by_its_wall_clock_bound") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("nssim-onkernel-{}", std::process::id()));
    let file = sleepers(&dir);
    let (before, _) = machine_state();
    // --timeout shortens the kernel side's 15 s.
    let out = nssim(&[
        "run",
        "--on-kernel",
        "--repeat",
        "1",
        "--timeout",
        "2s",
        file.to_str().unwrap(),
    ]);
    let text = stdout(&out);
    assert!(
        text.contains("skipped: no repeat finished within 2s"),
        "{text}"
    );
    assert_nothing_left(&before);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Eight processes execve at once: each reads the run's plan back from
/// the memfd they share (and whose file offset they share), and every
/// one goes on with its ops. Reading it by offset once lost a task's
/// results in about one run in ten.
#[test]
fn tasks_that_execve_at_once_all_resume() {
    let _turn = support::kernel_turn();
    if !skip_unless_runnable("tasks_that_execve_at_once_all_resume") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("nssim-execve-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("execve-together.toml");
    std::fs::write(
        &file,
        r#"name = "execve-together"
summary = "eight processes execve at once, then fork and reap"
[explore]
strategy = "fair"
[[task]]
name = "t"
instances = 8
ops = ["execve()", "fork()", "exit()"]
[[kernel]]
profile = "v6.16"
expect = "pass"
"#,
    )
    .unwrap();
    let out = nssim(&[
        "run",
        "--on-kernel",
        "--repeat",
        "60",
        "--format",
        "json",
        file.to_str().unwrap(),
    ]);
    std::fs::remove_dir_all(&dir).unwrap();
    let text = stdout(&out);
    let v: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    let k = &v["on_kernel"];
    assert_eq!(k["verdict"], "agree", "{text}");
    assert_eq!(k["kernel_outcomes"].as_array().unwrap().len(), 1, "{text}");
    assert_eq!(out.status.code(), Some(0), "{text}");
}

/// A second `unshare(CLONE_NEWPID)` before a first child: the kernel
/// answers EINVAL where the entry that models it expects every call ok.
const UNMET: &str = r#"name = "unmet"
summary = "a second unshare(CLONE_NEWPID) before a first child"
invariants = ["ucounts.balanced"]

[[task]]
name = "t"
ops = ["unshare(CLONE_NEWPID)", "unshare(CLONE_NEWPID)"]

[[kernel]]
profile = "PROFILE"
expect = { outcome = "pass", results = { t = { unshare = "ok" } } }
"#;

/// Under `max_ipc_namespaces = 1`, a second ipc namespace: ENOSPC, the
/// symptom of the violation the entry expects.
const SYMPTOM: &str = r#"name = "symptom"
summary = "a second ipc namespace under max_ipc_namespaces = 1"
invariants = ["ipc.no_false_enospc"]

[sysctl]
"user.max_ipc_namespaces" = 1

[[task]]
name = "t"
ops = ["unshare(CLONE_NEWIPC)", "unshare(CLONE_NEWIPC)"]

[[kernel]]
profile = "PROFILE"
expect = { outcome = "violation", invariant = "ipc.no_false_enospc" }
"#;

/// `--on-kernel` says whether the scenario's own expectations held on
/// the kernel: a check whose kernel never met its `results` is `unmet`
/// (exit status 1), not `agree`; one that met them says in how many
/// repeats; an expected violation's symptom is counted.
#[test]
fn on_kernel_says_whether_the_scenarios_expectations_held() {
    let _turn = support::kernel_turn();
    if !skip_unless_runnable("on_kernel_says_whether_the_scenarios_expectations_held") {
        return;
    }
    let dir = support::empty_dir("on-kernel-expectations");
    let profile = host_profile();
    let write = |name: &str, text: &str| {
        let file = dir.join(name);
        std::fs::write(&file, text.replace("PROFILE", &profile)).unwrap();
        file.display().to_string()
    };
    let unmet = write("unmet.toml", UNMET);
    let out = nssim(&["run", "--on-kernel", &unmet, "--repeat", "3"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    // Unmet in 3 repeats, the kernel is asked 12 more times before the
    // verdict.
    assert!(text.contains(" unmet (15 repeats"), "{text}");
    assert!(
        text.contains("results (PROFILE) held in 0 of 15 repeats on the kernel; where they did not: t unshare: expected ok, got 1 EINVAL, 1 ok".replace("PROFILE", &profile).as_str()),
        "{text}"
    );
    assert!(text.contains("0 agree, 0 model-misses, 1 unmet"), "{text}");
    let json = nssim(&[
        "run",
        "--on-kernel",
        &unmet,
        "--repeat",
        "3",
        "--format",
        "json",
    ]);
    let record: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(record["on_kernel"]["verdict"], "unmet");
    assert_eq!(record["on_kernel"]["expectations"]["results_held"], 0);
    // Expectations the kernel meets: agree, and how often.
    let met = write(
        "met.toml",
        &UNMET.replace(
            r#"unshare = "ok""#,
            r#"unshare = { calls = ["ok", "EINVAL"] }"#,
        ),
    );
    let out = nssim(&["run", "--on-kernel", &met, "--repeat", "3"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains(" agree (3 repeats"), "{text}");
    assert!(
        text.contains("held in 3 of 3 repeats on the kernel"),
        "{text}"
    );
    let symptom = write("symptom.toml", SYMPTOM);
    let out = nssim(&["run", "--on-kernel", &symptom, "--repeat", "2"]);
    let text = stdout(&out);
    assert!(
        text.contains("the violation of ipc.no_false_enospc that PROFILE expects showed (ENOSPC) in 2 of 2 repeats on the kernel".replace("PROFILE", &profile).as_str()),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The profile `--on-kernel` models this machine's kernel with, as its
/// summary line names it.
fn host_profile() -> String {
    let out = nssim(&[
        "run",
        "--on-kernel",
        "--repeat",
        "1",
        "sim-scenarios/ipc-alloc-vs-free.toml",
    ]);
    let text = stdout(&out);
    let line = text
        .lines()
        .find(|l| l.contains("scenarios on the kernel ("))
        .unwrap_or_else(|| panic!("no summary line: {text}"));
    line.split("on the kernel (")
        .nth(1)
        .unwrap()
        .split(')')
        .next()
        .unwrap()
        .to_string()
}
