//! `--timeline` on the scenario library: the v6.2 ipc race, the ABBA
//! deadlock and the use-after-free without a grace period.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Run nssim with standard output piped (not a terminal) and NO_COLOR unset.
fn nssim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nssim"))
        .args(args)
        .current_dir(root())
        .env_remove("NO_COLOR")
        .output()
        .expect("nssim runs")
}

fn timeline(scenario: &str, kernel: &str) -> String {
    let o = nssim(&["run", scenario, "--kernel", kernel, "--timeline"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    String::from_utf8(o.stdout).expect("UTF-8")
}

/// The header line naming the columns.
fn header(out: &str) -> &str {
    out.lines()
        .find(|l| l.trim_start().starts_with("step") && l.contains("time"))
        .expect("a header")
}

#[test]
fn the_v6_2_race_shows_the_false_enospc_with_the_counters_that_refute_it() {
    let out = timeline("sim-scenarios/ipc-alloc-vs-free.toml", "v6.2");
    assert!(!out.contains('\x1b'), "no colour when piped");
    let h = header(&out);
    let (looper, kworker) = (h.find("looper").unwrap(), h.find("kworker").unwrap());
    assert!(looper < kworker, "the scenario's task first: {h}");
    assert!(h.contains("ipc"), "counter columns: {h}");
    let enospc = out
        .lines()
        .find(|l| l.contains("= unshare ENOSPC"))
        .unwrap();
    assert!(
        enospc.find("= unshare").unwrap() < kworker,
        "in looper's column"
    );
    assert!(out.lines().any(|l| l.starts_with('▶')), "the breaking step");
    assert!(out.contains("violation of ipc.no_false_enospc"));
    assert!(out.contains("max_ipc_namespaces 3 (limit)"));
    assert!(out.contains("┏spin_lock ucounts_lock#0"), "lock gutters");
    assert!(out.lines().any(|l| l.contains("= queued ipc_ns#")));
    let queued = out
        .lines()
        .find(|l| l.contains("schedule_work free_ipc_work#0"));
    let queued = queued.expect("the free is queued");
    assert!(
        queued.contains('→'),
        "where the work ran, or that it did not: {queued}"
    );
    assert!(
        out.contains("ok   ipc-alloc-vs-free [v6.2] violation"),
        "then the record"
    );
}

#[test]
fn the_deadlock_ends_on_the_cycle_and_what_each_task_was_in() {
    let out = timeline("sim-scenarios/deadlock-abba.toml", "v6.3");
    let h = header(&out);
    assert!(h.find("first").unwrap() < h.find("kworker").unwrap(), "{h}");
    assert!(out
        .lines()
        .any(|l| l.starts_with('▶') && l.contains("lock")));
    assert!(out.contains("deadlock: first waits for B#0, second waits for A#0 (cycle)"));
    assert!(out.contains("still open at the end:"));
}

#[test]
fn the_use_after_free_shows_the_reader_inside_its_read_side_section() {
    let out = timeline(
        "sim-scenarios/ipc-no-grace-period.toml",
        "v6.3-no-grace-period",
    );
    let h = header(&out);
    let reader = h.find("reader").unwrap();
    assert!(h.contains("rcu"), "an rcu column: {h}");
    let uaf = out
        .lines()
        .find(|l| l.contains("= use-after-free of mq_mnt#"))
        .unwrap();
    assert!(uaf.find("= use-after-free").unwrap() > reader);
    assert!(out.contains("╭rcu_read_lock rcu"), "read-side gutters");
    assert!(
        out.contains("grace period skipped"),
        "the broken patch's note"
    );
    assert!(out.contains("reader: inside an RCU read-side section"));
}

#[test]
fn replay_with_timeline_draws_the_timeline_instead_of_the_listing() {
    let o = nssim(&[
        "run",
        "sim-scenarios/deadlock-abba.toml",
        "--format",
        "json",
    ]);
    let line = String::from_utf8_lossy(&o.stdout)
        .lines()
        .next()
        .unwrap()
        .to_string();
    let record: serde_json::Value = serde_json::from_str(&line).unwrap();
    let token = record["token"].as_str().unwrap();
    let o = nssim(&[
        "replay",
        "sim-scenarios/deadlock-abba.toml",
        token,
        "--timeline",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(header(&out).contains('│'), "{out}");
    assert!(
        !out.contains("task     operation"),
        "no step listing: {out}"
    );
}

#[test]
fn colour_on_a_terminal_unless_no_color() {
    if Command::new("script").arg("--version").output().is_err() {
        support::skip(
            "colour_on_a_terminal_unless_no_color",
            "`script` (util-linux) is not installed",
            None,
        );
        return;
    }
    let bin = env!("CARGO_BIN_EXE_nssim");
    let on_terminal = |no_color: Option<&str>| {
        let command = format!("{bin} run sim-scenarios/deadlock-abba.toml --timeline 2>/dev/null");
        let mut c = Command::new("script");
        c.args(["-qec", &command, "/dev/null"]).current_dir(root());
        match no_color {
            Some(v) => c.env("NO_COLOR", v),
            None => c.env_remove("NO_COLOR"),
        };
        String::from_utf8_lossy(&c.output().expect("script runs").stdout).into_owned()
    };
    assert!(on_terminal(None).contains("\x1b[1;31m▶"));
    assert!(!on_terminal(Some("1")).contains('\x1b'));
}
