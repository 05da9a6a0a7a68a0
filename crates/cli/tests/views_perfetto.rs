//! `--perfetto FILE` on the scenario library: valid Chrome trace-event
//! JSON with the fields each phase needs, and slices that nest per track.

#[path = "../../report/tests/support/trace_events.rs"]
mod trace_events;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use trace_events::Summary;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nssim-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir
}

/// Run `scenario` under `kernel`, write its trace, check it.
fn trace(scenario: &str, kernel: &str) -> (Value, Summary) {
    let stem = Path::new(scenario).file_stem().unwrap().to_string_lossy();
    let dir = temp_dir(&format!("perfetto-{stem}-{kernel}"));
    let file = dir.join(format!("{kernel}.json"));
    let o = Command::new(env!("CARGO_BIN_EXE_nssim"))
        .args(["run", scenario, "--kernel", kernel, "--perfetto"])
        .arg(&file)
        .current_dir(root())
        .output()
        .expect("nssim runs");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = std::fs::read_to_string(&file).expect("the trace was written");
    let _ = std::fs::remove_dir_all(&dir);
    let json: Value = serde_json::from_str(&text).expect("JSON");
    let summary = trace_events::check(&json).unwrap_or_else(|e| panic!("{scenario} {kernel}: {e}"));
    (json, summary)
}

fn has(summary: &Summary, ph: &str, name: &str) -> bool {
    summary
        .names
        .get(ph)
        .is_some_and(|names| names.iter().any(|n| n.starts_with(name)))
}

#[test]
fn the_v6_2_race_has_syscalls_locks_counters_and_the_breaking_step() {
    let (json, s) = trace("sim-scenarios/ipc-alloc-vs-free.toml", "v6.2");
    assert!(s.threads.values().any(|t| t == "looper"));
    assert!(s.threads.values().any(|t| t == "kworker"));
    assert!(has(&s, "X", "unshare(CLONE_NEWIPC) → ENOSPC"));
    assert!(has(&s, "X", "holds ucounts_lock#0"));
    assert!(has(&s, "i", "breaks the run: violation"));
    assert!(has(&s, "i", "queued ipc_ns#"));
    for counter in [
        "ipc namespaces alive",
        "ipc namespaces pending free",
        "max_ipc_namespaces",
    ] {
        assert!(has(&s, "C", counter), "no counter {counter}");
    }
    assert_eq!(json["displayTimeUnit"], "ns");
    assert!(json["otherData"]["replay"]
        .as_str()
        .unwrap()
        .starts_with("nssim replay sim-scenarios/ipc-alloc-vs-free.toml nss1_"));
}

#[test]
fn the_v6_3_run_has_work_flows_grace_periods_and_frees() {
    let (_, s) = trace("sim-scenarios/ipc-alloc-vs-free.toml", "v6.3");
    assert!(
        s.phases["s"] > 0 && s.phases["s"] == s.phases["f"],
        "{:?}",
        s.phases
    );
    assert!(has(&s, "X", "runs free_ipc_work#0"));
    assert!(has(&s, "X", "grace period"));
    assert!(has(&s, "i", "freed ipc_ns#"));
    assert!(s.threads.values().any(|t| t == "rcu grace periods"));
    assert!(!has(&s, "i", "breaks the run"), "a pass breaks nothing");
}

#[test]
fn the_deadlock_and_the_use_after_free_are_valid_traces_too() {
    let (_, s) = trace("sim-scenarios/deadlock-abba.toml", "v6.3");
    assert!(has(&s, "i", "breaks the run: deadlock"));
    let (_, s) = trace(
        "sim-scenarios/ipc-no-grace-period.toml",
        "v6.3-no-grace-period",
    );
    assert!(has(&s, "X", "rcu read-side (reader)"));
    assert!(has(&s, "i", "use-after-free of mq_mnt#"));
}
