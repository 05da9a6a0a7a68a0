//! `--timeout` bounds the whole run: the search, shrinking and reporting.
//! The wall time measured here is only a hang guard with the margin the
//! hardening issue gives (a 2 s timeout ends within 3 s), not a measure of
//! speed.

mod support;

use std::time::Duration;
use support::ends_within;

/// A copy of a library scenario with its text edited, in a directory of
/// this test.
fn scenario(name: &str, from: &str, edit: impl Fn(&str) -> String) -> String {
    let dir = std::env::temp_dir().join(format!("nssim-timeout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string(support::root().join(from)).unwrap();
    let file = dir.join(name);
    std::fs::write(&file, edit(&text)).unwrap();
    file.to_str().unwrap().to_string()
}

const ALLOC_VS_FREE: &str = "sim-scenarios/ipc-alloc-vs-free.toml";

#[test]
fn a_timeout_bounds_the_search_shrinking_and_reporting() {
    let guard = Duration::from_secs(3);
    // 1 000 loopers under seed 8: one failing execution of about 216 000
    // steps that the shrinker cannot shorten, so every one of its up to
    // 2 000 candidates replays the whole run (about 80 of them took ten
    // seconds here, the search itself well under one). Other seeds shrink
    // in 20 short executions, within the timeout.
    let loopers = scenario("loopers.toml", ALLOC_VS_FREE, |t| {
        t.replace("repeat = 20", "instances = 1000\nrepeat = 20")
    });
    let run = [
        "run",
        &loopers,
        "--kernel",
        "v6.2",
        "--seed",
        "8",
        "--timeout",
        "2s",
    ];
    let out = ends_within(&run, guard);
    assert!(out.contains("violation"), "{out}");
    assert!(
        out.contains("stopped at the --timeout deadline")
            || out.contains("note: the --timeout deadline passed"),
        "the output says the shrinking was cut short: {out}"
    );
    // Also with a trace file and a view to write.
    let dir = std::env::temp_dir().join(format!("nssim-timeout-{}", std::process::id()));
    let trace = dir.join("trace.json");
    let with_trace = ["--trace", trace.to_str().unwrap(), "--jobs", "2"];
    ends_within(&[&run[..], &with_trace[..]].concat(), guard);
    // Many short executions: the clock is read as each one starts.
    let out = ends_within(
        &[
            "run",
            ALLOC_VS_FREE,
            "--kernel",
            "v5.6",
            "--iterations",
            "1000000000",
            "--timeout",
            "2s",
        ],
        guard,
    );
    assert!(out.contains("wall-time"), "{out}");
    // dfs over 5 000 tasks took 31 s with --timeout 1s.
    let dfs = scenario("dfs.toml", ALLOC_VS_FREE, |t| {
        t.replace("repeat = 20", "instances = 5000\nrepeat = 3")
    });
    for (timeout, guard) in [("2s", guard), ("1s", Duration::from_secs(2))] {
        ends_within(
            &[
                "run",
                &dfs,
                "--kernel",
                "v6.3",
                "--strategy",
                "dfs",
                "--timeout",
                timeout,
            ],
            guard,
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A search the deadline stops between two executions reports, in every
/// format, the executions it reached and why it stopped, and an execution
/// that ran (its first, whole) whose token replays it: not "step 0" of an
/// execution that never began.
#[test]
fn a_search_stopped_between_executions_reports_what_ran() {
    for (kernel, strategy) in [("v6.3+fix", "dfs"), ("v6.3+fix", "pct")] {
        let out = ends_within(
            &[
                "run",
                "sim-scenarios/ipc-v6.3-window-loopers.toml",
                "--kernel",
                kernel,
                "--strategy",
                strategy,
                "--preemption-bound",
                "4",
                "--iterations",
                "100000000",
                "--timeout",
                "1s",
                "--format",
                "json",
            ],
            Duration::from_secs(3),
        );
        let record: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(record["outcome"], "limit", "{record}");
        let detail = record["detail"].as_str().unwrap();
        assert!(
            detail.contains("reached between two executions, which ended the search"),
            "{detail}"
        );
        assert!(record["steps"].as_u64().unwrap() > 0, "{record}");
        assert!(record["executions"].as_u64().unwrap() > 1, "{record}");
        let token = record["token"].as_str().unwrap();
        let replayed = support::nssim(&[
            "replay",
            "sim-scenarios/ipc-v6.3-window-loopers.toml",
            token,
            "--format",
            "json",
        ]);
        let again: serde_json::Value =
            serde_json::from_str(support::stdout(&replayed).trim()).unwrap();
        assert_eq!(again["trace_hash"], record["trace_hash"], "{again}");
        assert_eq!(again["steps"], record["steps"], "{again}");
    }
}
