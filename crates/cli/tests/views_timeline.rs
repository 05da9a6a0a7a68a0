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
        .env_remove("COLUMNS")
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

/// The widest line of `text`, in characters.
fn widest(text: &str) -> usize {
    text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

/// With `COLUMNS=100`, the timeline of every run of the library fits in
/// 100 columns: columns narrow, then counters go, then many tasks share
/// one column. (Read as it streams: the 100 000-call loop draws a
/// gigabyte.)
#[test]
fn every_library_timeline_fits_in_100_columns() {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_nssim"))
        .args(["run", "sim-scenarios/", "--timeline", "--format", "json"])
        .current_dir(root())
        .env("COLUMNS", "100")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("nssim runs");
    let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let (mut timelines, mut over) = (0, Vec::new());
    for line in stderr.lines() {
        let line = line.expect("UTF-8");
        if line.starts_with("   step ") {
            timelines += 1;
        }
        if line.chars().count() > 100 && over.len() < 5 {
            over.push(line);
        }
    }
    assert!(child.wait().unwrap().success());
    assert!(timelines > 100, "a timeline per run: {timelines}");
    assert!(over.is_empty(), "lines over 100 columns: {over:#?}");
}

/// `--width` fits a run of 45 tasks into 60 columns, the tasks sharing
/// one column each row names; a narrower one is refused. As wide as it
/// wants without a width, it is far wider.
#[test]
fn width_stacks_many_tasks_in_one_column() {
    let scenario = "sim-scenarios/uevent-thundering-herd.toml";
    let wide = nssim(&["run", scenario, "--timeline"]);
    assert!(widest(&String::from_utf8_lossy(&wide.stdout)) > 1000);
    let o = nssim(&[
        "run",
        scenario,
        "--timeline",
        "--width",
        "60",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let text = String::from_utf8_lossy(&o.stderr);
    assert!(widest(&text) <= 60, "{text}");
    let head = header(&text);
    assert!(head.contains("│ task") && head.contains("│ what"), "{head}");
    assert!(
        text.lines().any(|l| l.contains("│ container-udevd.19 │")),
        "each row names its task"
    );
    let narrow = nssim(&["run", scenario, "--timeline", "--width", "59"]);
    assert_eq!(narrow.status.code(), Some(2));
}

/// On a terminal, the timeline fits the terminal's width.
#[test]
fn on_a_terminal_the_timeline_fits_its_width() {
    if Command::new("script").arg("--version").output().is_err() {
        support::skip(
            "on_a_terminal_the_timeline_fits_its_width",
            "`script` (util-linux) is not installed",
            None,
        );
        return;
    }
    let bin = env!("CARGO_BIN_EXE_nssim");
    let command = format!(
        "stty cols 90; {bin} run sim-scenarios/ipc-alloc-vs-free.toml --kernel v6.2 --timeline 2>/dev/null"
    );
    let out = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .current_dir(root())
        .env("NO_COLOR", "1")
        .env_remove("COLUMNS")
        .output()
        .expect("script runs");
    let text = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    assert!(text.contains("violation of ipc.no_false_enospc"), "{text}");
    let timeline: String = text
        .lines()
        .take_while(|l| !l.starts_with("FAIL") && !l.starts_with("ok "))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(header(&timeline).contains("looper"), "{timeline}");
    assert!(widest(&timeline) <= 90, "{timeline}");
}

/// The views call the ucounts objects what they are: an entry by its
/// user namespace and uid, each counter after what it counts, each limit
/// after its sysctl and namespace.
#[test]
fn ucounts_objects_are_named_for_what_they_are() {
    let ipc = timeline("sim-scenarios/ipc-alloc-vs-free.toml", "v6.2");
    assert!(
        ipc.contains("atomic_read init: max_ipc_namespaces"),
        "{ipc}"
    );
    assert!(ipc.contains("atomic_cmpxchg ucounts(init, uid 0)"), "{ipc}");
    assert!(!ipc.contains("ucount#"), "{ipc}");
    let o = nssim(&[
        "replay",
        "sim-scenarios/userns-create-drop-fix-window.toml",
        "nss1_BL_AyPEDfdfISNEe5veZXxougHhz8QENdjYuMTYrZml4LWRmcwKAreIEgMDiheNoBAMIbG9vcGVyLjAFc3RhcnQIbG9vcGVyLjECAAEzAgEpiXCAgw",
    ]);
    let listing = String::from_utf8_lossy(&o.stdout);
    assert!(
        listing.contains("ucounts(container, uid 1000): user_namespaces"),
        "{listing}"
    );
}

/// The counters line at the end of a timeline, on one line.
fn counters_at_the_end(out: &str) -> String {
    let from = out
        .find("counters at the end:")
        .expect("counters at the end");
    let rest = &out[from..];
    let upto = rest
        .find("\nok ")
        .or_else(|| rest.find("\n\n"))
        .unwrap_or(rest.len());
    rest[..upto]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// An rlimit counter is drawn at every level its charge is checked at,
/// each with the maximum that level is compared with: from v5.14 on the
/// ucounts entries up the namespace tree (the leaf against the caller's
/// rlimit, an ancestor against the rlimit recorded in the namespace below
/// it), before v5.14 on the user_struct of the kuid, which is the one
/// count every namespace shares.
#[test]
fn rlimit_counters_are_drawn_at_each_level_against_its_maximum() {
    let nested = timeline("sim-scenarios/nproc-nested.toml", "v6.16-without-max-check");
    let end = counters_at_the_end(&nested);
    for level in ["ucounts(outer, uid 100000)", "ucounts(inner, uid 100000)"] {
        let count = format!("processes (RLIMIT_NPROC) · {level} ");
        let max = format!("max_processes (RLIMIT_NPROC) · {level} 4 (limit)");
        assert!(end.contains(&count), "{count} in {end}");
        assert!(end.contains(&max), "{max} in {end}");
    }
    let old = timeline("sim-scenarios/nproc-nested.toml", "v5.13");
    let end = counters_at_the_end(&old);
    assert!(end.contains("processes (RLIMIT_NPROC) 5"), "{end}");
    assert!(!end.contains("ucounts("), "one count per kuid: {end}");
    assert!(old.contains("atomic_add user_struct(uid 100000)"), "{old}");
    let signals = timeline("sim-scenarios/ucounts-sigpending-leak.toml", "v6.16");
    let end = counters_at_the_end(&signals);
    assert!(
        end.contains("pending signals (RLIMIT_SIGPENDING) · ucounts(init, uid 61004)"),
        "{end}"
    );
}
