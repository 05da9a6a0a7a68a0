//! Nothing nssim does hangs, and nothing outlives `--timeout`: every pair
//! of ops that targets another task against any other op, under `fair`,
//! random and dfs (a host lock held across a scheduling point once
//! deadlocked the process on such pairs); a step that runs for ever (the
//! top of a dfs search over a task of 10 000 ops, built before the search
//! could look at the clock). The wall times measured are hang guards
//! with the margin (a 2 s timeout ends within 3 s), not speed.

use crate::support;
use std::time::Duration;
use support::{nssim, stderr, stdout};

const GUARD: Duration = Duration::from_secs(3);

/// `nssim args` ends within [`GUARD`]; its standard output.
#[track_caller]
fn ends_in_time(args: &[&str]) -> String {
    support::ends_within(args, GUARD)
}

fn workdir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("nssim-no-hang-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn every_op_against_every_op_that_targets_a_task_ends_under_every_strategy() {
    let dir = workdir("pairs");
    let profile = scenario::gen::newest_profile();
    let mut pairs = Vec::new();
    for first in scenario::gen::generated_ops() {
        for second in scenario::gen::ops_targeting_a_task() {
            let file = dir.join(format!("{first}-{second}.toml"));
            std::fs::write(&file, scenario::gen::op_pair(first, second, profile)).unwrap();
            pairs.push(file);
        }
    }
    assert!(pairs.len() >= 63, "{} pairs", pairs.len());
    let check = |file: &std::path::PathBuf| {
        let out = ends_in_time(&[
            "run",
            file.to_str().unwrap(),
            "--timeout",
            "2s",
            "--format",
            "json",
        ]);
        let records: Vec<serde_json::Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON record"))
            .collect();
        assert_eq!(records.len(), 3, "{}: {out}", file.display());
        for r in records {
            // Whatever the ops do to each other, the model neither panics
            // (a host lock held across a point is one) nor runs past the
            // deadline.
            assert_ne!(r["outcome"], "panic", "{}: {r}", file.display());
            let detail = r["detail"].as_str().unwrap_or("");
            assert!(!detail.contains("wall-time"), "{}: {r}", file.display());
        }
    };
    // Two at a time: the harness runs other tests beside this one.
    let (even, odd): (Vec<_>, Vec<_>) = pairs.iter().enumerate().partition(|(i, _)| i % 2 == 0);
    std::thread::scope(|s| {
        s.spawn(|| even.iter().for_each(|(_, f)| check(f)));
        odd.iter().for_each(|(_, f)| check(f));
    });
    let _ = std::fs::remove_dir_all(&dir);
}

/// A scenario whose one task performs `n` times `op`.
fn long_task(dir: &std::path::Path, n: usize, op: &str) -> String {
    let ops = vec![format!("{op:?}"); n].join(", ");
    let file = dir.join(format!("long-{n}.toml"));
    std::fs::write(
        &file,
        format!(
            "name = \"long\"\nsummary = \"one long task\"\n\n[explore]\nstrategy = \"dfs\"\n\n[[task]]\nname = \"a\"\nops = [{ops}]\n\n[[kernel]]\nprofile = \"v6.16\"\nexpect = \"pass\"\n"
        ),
    )
    .unwrap();
    file.to_str().unwrap().to_string()
}

#[test]
fn a_step_that_does_not_return_is_ended_by_the_watchdog_at_the_timeout() {
    let dir = workdir("long");
    // Building the top of the dfs search over 10 000 ops takes far longer
    // than the timeout, and looks at no clock while it does.
    let file = long_task(&dir, 10_000, "unshare(CLONE_NEWIPC)");
    let out = ends_in_time(&["run", &file, "--timeout", "2s"]);
    assert!(
        out.contains("limit: the wall-time limit (--timeout) was reached"),
        "{out}"
    );
    assert!(out.contains("0 passed, 1 failed"), "{out}");
    let json = ends_in_time(&["run", &file, "--timeout", "2s", "--format", "json"]);
    let record: serde_json::Value = serde_json::from_str(json.trim()).expect("one record");
    assert_eq!(record["outcome"], "limit");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_timeout_too_short_to_run_anything_is_refused() {
    for t in ["0s", "1ns", "99ms"] {
        let o = nssim(&[
            "run",
            "sim-scenarios/ipc-alloc-vs-free.toml",
            "--timeout",
            t,
        ]);
        assert_eq!(o.status.code(), Some(2), "--timeout {t}");
        assert!(stderr(&o).contains("too short"), "{}", stderr(&o));
    }
    // A bare number has no unit, and is refused for that first.
    let o = nssim(&[
        "run",
        "sim-scenarios/ipc-alloc-vs-free.toml",
        "--timeout",
        "0",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("has no unit"), "{}", stderr(&o));
}

#[test]
fn a_replay_ends_at_its_timeout() {
    // A token whose fields are all in range but whose step limit is
    // lifted to 10^12, of a task that loops a billion times: the replay
    // would run for hours.
    let dir = workdir("replay");
    let file = dir.join("endless.toml");
    std::fs::write(
        &file,
        "name = \"endless\"\nsummary = \"a billion unshares\"\n\n[[task]]\nname = \"looper\"\nrepeat = 1000000000\nops = [\"unshare(CLONE_NEWIPC)\"]\n\n[[kernel]]\nprofile = \"v6.16\"\nexpect = \"pass\"\nexplore = { strategy = \"fair\" }\n",
    )
    .unwrap();
    let file = file.to_str().unwrap();
    let run = nssim(&["run", file, "--max-steps", "1000", "--format", "json"]);
    let line: serde_json::Value =
        serde_json::from_str(stdout(&run).lines().next().expect("a record")).unwrap();
    let mut token = sim::Token::decode(line["token"].as_str().expect("a token")).unwrap();
    token.max_steps = 1_000_000_000_000;
    let token = token.encode();
    let out = ends_in_time(&[
        "replay",
        file,
        &token,
        "--timeout",
        "2s",
        "--format",
        "json",
    ]);
    let replayed: serde_json::Value = serde_json::from_str(out.trim()).expect("one record");
    assert_eq!(replayed["outcome"], "limit", "{replayed}");
    assert!(
        replayed["detail"]
            .as_str()
            .unwrap_or("")
            .contains("wall-time"),
        "{replayed}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_memory_limit_past_what_a_machine_can_address_is_refused() {
    let o = nssim(&[
        "run",
        "sim-scenarios/ipc-alloc-vs-free.toml",
        "--max-memory",
        "17179869184g",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("more than this machine can address"),
        "{}",
        stderr(&o)
    );
}
