//! `--max-memory` bounds what the process holds, not only what its
//! allocator counted: a `dfs` run of 5 000 tasks with `--max-memory 512m`
//! never has more than 600 MB resident. The peak is the kernel's count for
//! that child alone (`ru_maxrss` from `wait4` on it), whatever the other
//! tests of this binary run.

use crate::support;
use std::io::Read;
use std::process::{Command, Stdio};

/// Run `nssim args`: its exit code, standard output and peak resident set
/// in bytes. The child is reaped by `wait4`, which the lint cannot see.
#[allow(clippy::zombie_processes)]
fn nssim_with_peak(args: &[&str]) -> (Option<i32>, String, u64) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nssim"))
        .args(args)
        .current_dir(support::root())
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("nssim starts");
    let mut out = String::new();
    child
        .stdout
        .take()
        .expect("piped")
        .read_to_string(&mut out)
        .expect("its output is text");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: wait4 writes the status and the struct it is given; the
    // child is ours and not waited for elsewhere.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::wait4(pid, &mut status, 0, &mut usage) }, pid);
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    // Kilobytes on Linux.
    (code, out, usage.ru_maxrss as u64 * 1024)
}

/// `ipc-alloc-vs-free` with `instances` loopers of three calls each, in
/// a directory of this test (`name`): the directory and the file.
fn loopers(name: &str, instances: u32) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("nssim-max-memory-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text =
        std::fs::read_to_string(support::root().join("sim-scenarios/ipc-alloc-vs-free.toml"))
            .unwrap();
    let file = dir.join(format!("{name}.toml"));
    let many = format!("instances = {instances}\nrepeat = 3");
    std::fs::write(&file, text.replace("repeat = 20", &many)).unwrap();
    (dir, file)
}

#[test]
fn a_run_under_max_memory_never_holds_more_than_600_mb() {
    let (dir, file) = loopers("dfs", 5000);
    let (code, out, peak) = nssim_with_peak(&[
        "run",
        file.to_str().unwrap(),
        "--kernel",
        "v6.3",
        "--strategy",
        "dfs",
        "--max-memory",
        "512m",
    ]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("limit: the process held") && out.contains("past --max-memory 512m"),
        "{out}"
    );
    assert!(peak > 64 << 20, "the child was measured: {peak}");
    assert!(peak <= 600_000_000, "peak resident set {peak} bytes");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Executions that end with work still queued (a state seen before, a
/// failure) leave nothing behind: a work holds its workqueue weakly, and
/// the works the model queues hold their subsystem weakly, so the queue
/// and what it holds go with the execution. A stateful search that ends
/// most of its 86 000 executions that way runs within `--max-memory 24m`
/// (before, each held on to what its queue held: 470 bytes an execution,
/// 40 MB of heap by the end). The limit is the run's own measure (its
/// heap and its resident set now): a child's peak from `wait4` may carry
/// the resident set of the test process it was forked from.
#[test]
fn executions_that_end_with_work_queued_leave_nothing_behind() {
    let (code, out, _) = nssim_with_peak(&[
        "run",
        "sim-scenarios/ipc-v6.3-window-loopers.toml",
        "--kernel",
        "v6.3+fix",
        "--strategy",
        "dfs",
        "--preemption-bound",
        "2",
        "--no-reduction",
        "--iterations",
        "1000000",
        "--max-memory",
        "24m",
    ]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("86091 execution(s)") && out.contains("distinct states"),
        "{out}"
    );
}

/// A world of 16 000 tasks is built and started before its first step:
/// the bound is looked at as its tasks are made and start (every 64), so
/// that the run stops within a few percent of `--max-memory 64m` (it held
/// 115 MiB when the bound was first looked at after the world was
/// built). The measure is the run's own, at the moment it stopped.
#[test]
fn a_world_of_many_tasks_stops_within_a_few_percent_of_the_bound() {
    let (dir, file) = loopers("many", 16_000);
    let (code, out, _) = nssim_with_peak(&[
        "run",
        file.to_str().unwrap(),
        "--kernel",
        "v6.3",
        "--max-memory",
        "64m",
    ]);
    assert_eq!(code, Some(1), "{out}");
    let held = out
        .split("limit: the process held ")
        .nth(1)
        .and_then(|rest| rest.split(" MiB, past --max-memory 64m").next())
        .and_then(|mib| mib.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("a memory limit: {out}"));
    assert!(
        held <= 64.0 * 1.05,
        "held {held} MiB under --max-memory 64m"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
