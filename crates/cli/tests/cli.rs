//! The `nssim` binary against the scenario library: the acceptance checks
//! of the foundation, each run the way a user runs them.

use crate::support;

use serde_json::Value;
use std::process::{Command, Output};
use support::{nssim, root, stderr, stdout, timeless};

fn json_lines(o: &Output) -> Vec<Value> {
    stdout(o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// Run nssim, expect exit 0, and parse its JSON lines.
fn run_json(args: &[&str]) -> Vec<Value> {
    let o = nssim(args);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    json_lines(&o)
}

fn by_kernel<'a>(lines: &'a [Value], kernel: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| l["kernel"] == kernel)
        .unwrap_or_else(|| panic!("no run for {kernel}"))
}

#[test]
fn the_race_is_found_on_v6_2_and_gone_on_v6_3() {
    let lines = run_json(&[
        "run",
        "sim-scenarios/ipc-alloc-vs-free.toml",
        "--format",
        "json",
    ]);
    let v62 = by_kernel(&lines, "v6.2");
    assert_eq!(v62["outcome"], "violation");
    assert_eq!(v62["invariant"], "ipc.no_false_enospc");
    assert_eq!(v62["as_expected"], true);
    assert!(v62["results"]["looper"]["unshare(CLONE_NEWIPC)"]["results"]["ENOSPC"] == 1);
    let v63 = by_kernel(&lines, "v6.3");
    assert_eq!(v63["outcome"], "pass");
    assert_eq!(v63["strategy"], "fair");
    assert_eq!(v63["as_expected"], true);
    for field in [
        "scenario",
        "kernel",
        "outcome",
        "invariant",
        "expected",
        "as_expected",
        "executions",
        "steps",
        "virtual_ns",
        "token",
        "trace_hash",
        "results",
    ] {
        assert!(v63.get(field).is_some(), "missing {field}");
    }
}

#[test]
fn random_and_pct_find_the_v6_2_violation_within_100_executions_for_seeds_1_to_20() {
    for strategy in ["random", "pct"] {
        for seed in 1..=20 {
            let seed = seed.to_string();
            let o = nssim(&[
                "run",
                "sim-scenarios/ipc-alloc-vs-free.toml",
                "--kernel",
                "v6.2",
                "--strategy",
                strategy,
                "--seed",
                &seed,
                "--iterations",
                "100",
                "--format",
                "json",
            ]);
            assert_eq!(
                o.status.code(),
                Some(0),
                "{strategy} seed {seed}: {}",
                stderr(&o)
            );
            let lines = json_lines(&o);
            assert_eq!(lines.len(), 1);
            assert_eq!(
                lines[0]["invariant"], "ipc.no_false_enospc",
                "{strategy} seed {seed}"
            );
            assert!(lines[0]["executions"].as_u64().unwrap() <= 100);
        }
    }
}

#[test]
fn replay_reproduces_the_trace_hash_and_runs_are_repeatable() {
    let args = [
        "run",
        "sim-scenarios/ipc-alloc-vs-free.toml",
        "--format",
        "json",
    ];
    let first = nssim(&args);
    let second = nssim(&args);
    assert_eq!(
        timeless(&stdout(&first)),
        timeless(&stdout(&second)),
        "same seed, same output"
    );
    for line in json_lines(&first) {
        let token = line["token"].as_str().unwrap();
        let r = nssim(&[
            "replay",
            "sim-scenarios/ipc-alloc-vs-free.toml",
            token,
            "--format",
            "json",
        ]);
        let replayed = json_lines(&r);
        assert_eq!(
            replayed[0]["trace_hash"], line["trace_hash"],
            "{}",
            line["kernel"]
        );
        assert_eq!(replayed[0]["outcome"], line["outcome"]);
        assert_eq!(replayed[0]["steps"], line["steps"]);
        assert_eq!(replayed[0]["virtual_ns"], line["virtual_ns"]);
    }
}

#[test]
fn replay_prints_every_step_with_the_failing_result() {
    let o = nssim(&[
        "run",
        "sim-scenarios/ipc-alloc-vs-free.toml",
        "--kernel",
        "v6.2",
        "--format",
        "json",
    ]);
    let token = json_lines(&o)[0]["token"].as_str().unwrap().to_string();
    let r = nssim(&["replay", "sim-scenarios/ipc-alloc-vs-free.toml", &token]);
    let text = stdout(&r);
    assert!(text.contains("looper"));
    // The shrunk schedule: the looper outruns the kworker, which never runs.
    assert!(text.contains("llist_add free_ipc_list"));
    assert!(text.contains("ENOSPC"), "{text}");
    let steps = json_lines(&o)[0]["steps"].as_u64().unwrap();
    assert!(
        text.contains(&format!("\n{steps:>7}  ")),
        "the last step is listed"
    );
}

fn within(actual_ns: u64, target_ns: f64, tolerance: f64) -> bool {
    ((actual_ns as f64) - target_ns).abs() <= target_ns * tolerance
}

#[test]
fn the_100k_experiment_reproduces_the_seed_timings_in_virtual_time() {
    let lines = run_json(&[
        "run",
        "sim-scenarios/ipc-unshare-100k.toml",
        "--format",
        "json",
    ]);
    let v62 = by_kernel(&lines, "v6.2");
    assert_eq!(v62["outcome"], "violation");
    let enospc = &v62["results"]["looper"]["unshare(CLONE_NEWIPC)"];
    assert_eq!(enospc["results"]["ENOSPC"], 1);
    let wait_only = by_kernel(&lines, "v6.3-wait-only");
    assert_eq!(wait_only["outcome"], "pass");
    let t = wait_only["virtual_ns"].as_u64().unwrap();
    assert!(
        within(t, 379.197e9, 0.10),
        "waiting fix alone: {t} ns, seed: 6m19.197s"
    );
    let both = by_kernel(&lines, "v6.3");
    assert_eq!(both["outcome"], "pass");
    let t = both["virtual_ns"].as_u64().unwrap();
    assert!(within(t, 1.192e9, 0.10), "both fixes: {t} ns, seed: 1.192s");
    assert_eq!(
        both["results"]["looper"]["unshare(CLONE_NEWIPC)"]["results"]["ok"],
        100_000
    );
}

#[test]
fn the_broken_patch_deadlock_and_panic_are_reported_as_such() {
    let lines = run_json(&[
        "run",
        "sim-scenarios/ipc-no-grace-period.toml",
        "sim-scenarios/deadlock-abba.toml",
        "sim-scenarios/task-bug.toml",
        "--format",
        "json",
    ]);
    let uaf = by_kernel(&lines, "v6.3-no-grace-period");
    assert_eq!(uaf["outcome"], "use-after-free");
    let detail = uaf["detail"].as_str().unwrap();
    assert!(
        detail.contains("reader") && detail.contains("kworker"),
        "{detail}"
    );
    let dl = lines
        .iter()
        .find(|l| l["scenario"] == "deadlock-abba")
        .unwrap();
    assert_eq!(dl["outcome"], "deadlock");
    let detail = dl["detail"].as_str().unwrap();
    assert!(
        detail.contains("first waits for B") && detail.contains("second waits for A"),
        "{detail}"
    );
    assert!(detail.contains("cycle"));
    let bug = lines.iter().find(|l| l["scenario"] == "task-bug").unwrap();
    assert_eq!(bug["outcome"], "panic");
    assert!(bug["detail"].as_str().unwrap().contains("buggy"));
}

#[test]
fn an_unexpected_outcome_exits_1() {
    // v6.3 without the waiting patch is the v6.2 race again, but the
    // scenario expects v6.3 to pass.
    let o = nssim(&[
        "run",
        "sim-scenarios/ipc-alloc-vs-free.toml",
        "--kernel",
        "v6.3",
        "--patch",
        "-ipc-wait-pending-free",
        "--strategy",
        "random",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let lines = json_lines(&o);
    assert_eq!(lines[0]["outcome"], "violation");
    assert_eq!(lines[0]["as_expected"], false);
}

/// The values a call reports are part of its expected results: the
/// library's scenario passes, and the same scenario expecting another
/// sequence number fails and says what it got.
#[test]
fn reported_values_are_checked_against_the_expectation() {
    let path = "sim-scenarios/uevent-seqnum-values.toml";
    let o = nssim(&["run", path, "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let lines = json_lines(&o);
    assert_eq!(
        lines[0]["results"]["root"]["uevent_inject"]["values"],
        serde_json::json!([1, 2])
    );
    let text = std::fs::read_to_string(root().join(path)).unwrap();
    let wrong = text.replace("values = [1, 2] } }, user", "values = [1, 3] } }, user");
    assert_ne!(wrong, text);
    let dir = std::env::temp_dir().join(format!("nssim-values-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("wrong.toml");
    std::fs::write(&file, wrong).unwrap();
    let o = nssim(&["run", file.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("root uevent_inject: expected values [1, 3], got [1, 2]"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_malformed_scenario_names_line_and_column_and_exits_2() {
    let dir = std::env::temp_dir().join(format!("nssim-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.toml");
    std::fs::write(
        &bad,
        "name = \"bad\"\nsummary = \"x\"\n\n[[task]]\nname = \"t\"\nops = [\"unshare(CLONE_NEWIPC)\"]\n\n[[kernel]]\nprofile = \"v9.9\"\nexpect = \"pass\"\n",
    )
    .unwrap();
    let o = nssim(&["run", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("bad.toml:9:11"), "{err}");
    assert!(err.contains("v9.9"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_tokens_and_arguments_are_errors_not_panics() {
    let cases: &[&[&str]] = &[
        &[
            "replay",
            "sim-scenarios/ipc-alloc-vs-free.toml",
            "nss1_garbage",
        ],
        &["replay", "sim-scenarios/ipc-alloc-vs-free.toml", "hello"],
        &[
            "run",
            "sim-scenarios/ipc-alloc-vs-free.toml",
            "--patch",
            "ipc-batch-free",
        ],
        &[
            "run",
            "sim-scenarios/ipc-alloc-vs-free.toml",
            "--patch",
            "+no-such-patch",
        ],
        &[
            "run",
            "sim-scenarios/ipc-alloc-vs-free.toml",
            "--kernel",
            "v0.1",
        ],
        &[
            "run",
            "sim-scenarios/ipc-alloc-vs-free.toml",
            "--max-virtual-time",
            "soon",
        ],
        &["run", "no/such/dir"],
        &[
            "run",
            "sim-scenarios/ipc-alloc-vs-free.toml",
            "--strategy",
            "bogus",
        ],
        &["frobnicate"],
        &["bench", "--jobs", "many"],
        &["bench", "--quick", "extra"],
        &["conformance", "--format", "xml"],
        &["conformance", "--subsystem", "no-such-subsystem"],
        &["kernels", "--verbose"],
    ];
    for args in cases {
        let o = nssim(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{args:?}");
        assert!(!stderr(&o).is_empty());
    }
    // A token from another scenario.
    let o = nssim(&["run", "sim-scenarios/task-bug.toml", "--format", "json"]);
    let token = json_lines(&o)[0]["token"].as_str().unwrap().to_string();
    let r = nssim(&["replay", "sim-scenarios/ipc-alloc-vs-free.toml", &token]);
    assert_eq!(r.status.code(), Some(2));
    assert!(stderr(&r).contains("another scenario"), "{}", stderr(&r));
}

#[test]
fn kernels_lists_profiles_patches_and_costs() {
    let o = nssim(&["kernels"]);
    assert_eq!(o.status.code(), Some(0));
    let text = stdout(&o);
    for name in [
        "v5.6",
        "v5.7",
        "v6.2",
        "v6.3",
        "ipc-async-free",
        "ipc-wait-pending-free",
        "ipc-batch-free",
        "ipc-free-no-grace-period",
        "ipc.no_false_enospc",
        "rcu_grace_period",
    ] {
        assert!(text.contains(name), "{name} missing");
    }
}

/// `exhausted = true` holds only when the search ran to its end: the same
/// entry cut short by `--iterations` is not as expected.
#[test]
fn an_exhausted_expectation_fails_when_the_search_is_cut_short() {
    let file = "sim-scenarios/ipc-v6.3-window.toml";
    let full = nssim(&["run", file, "--kernel", "v6.3+fix"]);
    assert_eq!(full.status.code(), Some(0), "{}", stdout(&full));
    assert!(
        stdout(&full).contains("search exhausted"),
        "{}",
        stdout(&full)
    );
    let cut = nssim(&["run", file, "--kernel", "v6.3+fix", "--iterations", "100"]);
    assert_eq!(cut.status.code(), Some(1), "{}", stdout(&cut));
    assert!(
        stdout(&cut).contains("not as expected: the search was not exhausted"),
        "{}",
        stdout(&cut)
    );
}

#[test]
fn the_whole_library_runs_as_expected_and_deterministically() {
    let o = nssim(&["run", "sim-scenarios/", "--format", "json", "--jobs", "1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    for line in json_lines(&o) {
        assert_eq!(line["as_expected"], true, "{line}");
    }
    // Same seed, other thread count, other environment, the copy built
    // into the binary run from another directory: the same bytes, trace
    // hashes included.
    let elsewhere = support::empty_dir("whole");
    let again = Command::new(env!("CARGO_BIN_EXE_nssim"))
        .args(["run", "--library", "--format", "json", "--jobs", "2"])
        .current_dir(&elsewhere)
        .env("NO_COLOR", "1")
        .env("TZ", "Pacific/Kiritimati")
        .env("LANG", "de_DE.UTF-8")
        .env("NSSIM_UNRELATED", "x".repeat(1000))
        .output()
        .unwrap();
    assert_eq!(timeless(&stdout(&o)), timeless(&stdout(&again)));
    let _ = std::fs::remove_dir_all(&elsewhere);
}

#[test]
fn junit_output_is_valid_xml_with_a_case_per_run_and_a_summary_line() {
    let dir = std::env::temp_dir().join(format!("nssim-junit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("results.xml");
    let o = nssim(&[
        "run",
        "sim-scenarios/ipc-alloc-vs-free.toml",
        "--kernel",
        "v6.3",
        "--patch",
        "-ipc-wait-pending-free",
        "--strategy",
        "random",
        "--junit",
        file.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).lines().any(|l| l == "0 passed, 1 failed"),
        "{}",
        stdout(&o)
    );
    let xml = std::fs::read_to_string(&file).unwrap();
    let doc = roxmltree::Document::parse(&xml).expect("valid XML");
    let cases: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    assert_eq!(cases.len(), 1);
    assert_eq!(cases[0].attribute("classname"), Some("ipc-alloc-vs-free"));
    let failure = cases[0]
        .children()
        .find(|n| n.has_tag_name("failure"))
        .expect("a failure element");
    assert!(failure
        .attribute("message")
        .unwrap()
        .contains("ipc.no_false_enospc"));
    assert!(failure
        .text()
        .unwrap()
        .contains("nssim replay sim-scenarios/ipc-alloc-vs-free.toml nss1_"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn failures_are_shrunk_unless_asked_not_to() {
    let args = [
        "run",
        "sim-scenarios/ipc-alloc-vs-free.toml",
        "--kernel",
        "v6.2",
        "--format",
        "json",
    ];
    let shrunk = json_lines(&nssim(&args))[0].clone();
    let s = &shrunk["shrink"];
    assert!(s["steps_after"].as_u64().unwrap() < s["steps_before"].as_u64().unwrap());
    assert_eq!(shrunk["steps"], s["steps_after"]);
    let mut raw_args = args.to_vec();
    raw_args.push("--no-shrink");
    let raw = json_lines(&nssim(&raw_args))[0].clone();
    assert!(raw["shrink"].is_null());
    assert_eq!(raw["steps"], s["steps_before"]);
    assert_ne!(raw["token"], shrunk["token"]);
}

fn token_with_segments(segments: Vec<sim::Segment>) -> String {
    let o = nssim(&[
        "run",
        "sim-scenarios/ipc-alloc-vs-free.toml",
        "--kernel",
        "v6.2",
        "--format",
        "json",
    ]);
    let token = json_lines(&o)[0]["token"].as_str().unwrap().to_string();
    let mut t = sim::Token::decode(&token).unwrap();
    t.schedule = sim::Schedule::Segments(segments);
    t.encode()
}

#[test]
fn a_token_that_no_longer_fits_reports_the_divergence_step() {
    // As if the code had changed: the second segment names a scheduling
    // point the looper no longer reaches there.
    let token = token_with_segments(vec![
        sim::Segment {
            task: "looper".into(),
            at: "start".into(),
            steps: 3,
        },
        sim::Segment {
            task: "looper".into(),
            at: "renamed_point".into(),
            steps: 5,
        },
    ]);
    let r = nssim(&["replay", "sim-scenarios/ipc-alloc-vs-free.toml", &token]);
    assert_eq!(r.status.code(), Some(2));
    let err = stderr(&r);
    assert!(err.contains("diverges from the token at step 4"), "{err}");
    assert!(err.contains("looper@renamed_point"), "{err}");
    let r = nssim(&[
        "replay",
        "sim-scenarios/ipc-alloc-vs-free.toml",
        &token,
        "--continue-after-divergence",
        "--format",
        "json",
    ]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert!(stderr(&r).contains("diverged from the token at step 4"));
    assert_eq!(json_lines(&r)[0]["outcome"], "violation");
}

#[test]
fn jobs_do_not_change_the_results() {
    for file in [
        "sim-scenarios/ipc-alloc-vs-free.toml",
        "sim-scenarios/ipc-no-grace-period.toml",
        "sim-scenarios/ipc-v6.3-window.toml",
    ] {
        let one = nssim(&["run", file, "--format", "json", "--jobs", "1"]);
        let two = nssim(&["run", file, "--format", "json", "--jobs", "2"]);
        assert_eq!(timeless(&stdout(&one)), timeless(&stdout(&two)), "{file}");
    }
}

fn iteration_of(token: &str) -> u64 {
    match sim::Token::decode(token).unwrap().schedule {
        sim::Schedule::Random { iteration, .. } => iteration,
        other => panic!("not a random schedule: {other:?}"),
    }
}

#[test]
fn shards_split_the_executions_of_a_run() {
    // A passing run: every execution runs in exactly one shard.
    let file = "sim-scenarios/ipc-no-grace-period.toml";
    let whole = json_lines(&nssim(&[
        "run", file, "--kernel", "v6.3", "--format", "json",
    ]));
    let mut executions = 0;
    for k in 1..=3 {
        let shard = format!("{k}/3");
        let part = json_lines(&nssim(&[
            "run", file, "--kernel", "v6.3", "--format", "json", "--shard", &shard,
        ]));
        assert_eq!(part[0]["outcome"], "pass");
        executions += part[0]["executions"].as_u64().unwrap();
    }
    assert_eq!(executions, whole[0]["executions"].as_u64().unwrap());

    // A failing run: the earliest failure over the shards is the unsharded one.
    let args = [
        "run",
        "sim-scenarios/ipc-no-grace-period.toml",
        "--kernel",
        "v6.3-no-grace-period",
        "--format",
        "json",
        "--no-shrink",
    ];
    let whole = json_lines(&nssim(&args));
    let first = iteration_of(whole[0]["token"].as_str().unwrap());
    let earliest = (1..=4)
        .filter_map(|k| {
            let shard = format!("{k}/4");
            let mut a = args.to_vec();
            a.extend(["--shard", &shard]);
            let part = json_lines(&nssim(&a));
            if part[0]["outcome"] == "pass" {
                return None;
            }
            let i = iteration_of(part[0]["token"].as_str().unwrap());
            assert_eq!(i % 4, k - 1, "shard {shard} ran only its own iterations");
            Some(i)
        })
        .min()
        .unwrap();
    assert_eq!(earliest, first);
}

#[test]
fn a_bad_shard_or_jobs_value_is_a_usage_error() {
    for args in [
        ["--shard", "0/3"],
        ["--shard", "4/3"],
        ["--shard", "x"],
        ["--jobs", "0"],
    ] {
        let mut a = vec!["run", "sim-scenarios/task-bug.toml"];
        a.extend(args);
        let o = nssim(&a);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
    }
}

#[test]
fn a_trace_file_carries_its_versions_and_replays() {
    let dir = std::env::temp_dir().join(format!("nssim-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("race.json");
    let f = file.to_str().unwrap();
    let o = nssim(&[
        "run",
        "sim-scenarios/ipc-alloc-vs-free.toml",
        "--kernel",
        "v6.2",
        "--format",
        "json",
        "--trace",
        f,
    ]);
    let run = &json_lines(&o)[0];
    let trace: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(trace["format"], "nssim-trace");
    assert_eq!(trace["format_version"], 1);
    assert_eq!(trace["nssim_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(trace["token"], run["token"]);
    assert_eq!(trace["trace_hash"], run["trace_hash"]);
    assert!(trace["schedule"][0]
        .as_str()
        .unwrap()
        .starts_with("looper@"));
    assert_eq!(
        trace["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["kind"] == "step")
            .count() as u64,
        run["steps"].as_u64().unwrap()
    );
    // The file replays like its token.
    let r = nssim(&[
        "replay",
        "sim-scenarios/ipc-alloc-vs-free.toml",
        f,
        "--format",
        "json",
    ]);
    assert_eq!(json_lines(&r)[0]["trace_hash"], run["trace_hash"]);
    assert!(stderr(&r).is_empty(), "{}", stderr(&r));

    // Damaged files are clear errors.
    let cases = [
        (
            "{\"format\": \"nssim-trace\",\n \"format_version\": 1,\n \"token\": ",
            "race.json:3:",
        ),
        (
            "{\"format\": \"something-else\"}",
            "not an nssim trace file",
        ),
        (
            "{\"format\": \"nssim-trace\", \"format_version\": 9, \"token\": \"x\"}",
            "version 9",
        ),
        (
            "{\"format\": \"nssim-trace\", \"format_version\": 1}",
            "no \"token\"",
        ),
    ];
    for (text, message) in cases {
        std::fs::write(&file, text).unwrap();
        let r = nssim(&["replay", "sim-scenarios/ipc-alloc-vs-free.toml", f]);
        assert_eq!(r.status.code(), Some(2), "{text}");
        assert!(stderr(&r).contains(message), "{}", stderr(&r));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_limit_ends_with_outcome_limit_and_a_token() {
    let file = "sim-scenarios/ipc-unshare-100k.toml";
    for (args, which) in [
        (["--max-steps", "5000"], "steps"),
        (["--max-virtual-time", "1ms"], "virtual-time"),
        (["--timeout", "100ms"], "wall-time"),
    ] {
        let mut a = vec!["run", file, "--kernel", "v6.3", "--format", "json"];
        a.extend(args);
        let o = nssim(&a);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        let line = &json_lines(&o)[0];
        assert_eq!(line["outcome"], "limit", "{args:?}");
        assert!(line["detail"].as_str().unwrap().contains(which), "{line}");
        assert!(line["token"].as_str().unwrap().starts_with("nss1_"));
    }
    // Every limit's token replays to the same point: the step limit by
    // itself, the resource limits (wall time, memory) because their token
    // carries the step they stopped at.
    for args in [
        ["--max-steps", "5000"],
        ["--timeout", "100ms"],
        ["--max-memory", "16m"],
    ] {
        let mut a = vec!["run", file, "--kernel", "v6.3", "--format", "json"];
        a.extend(args);
        let line = &json_lines(&nssim(&a))[0];
        let r = nssim(&[
            "replay",
            file,
            line["token"].as_str().unwrap(),
            "--format",
            "json",
        ]);
        let replayed = &json_lines(&r)[0];
        assert_eq!(replayed["outcome"], "limit", "{args:?}");
        assert_eq!(replayed["steps"], line["steps"], "{args:?}");
        assert_eq!(replayed["trace_hash"], line["trace_hash"], "{args:?}");
    }
}

/// `nssim bench --quick` measures every workload; parallel exploration
/// gives the same result as one thread, and the race is found every time.
#[test]
fn nssim_bench_prints_every_table() {
    let out = nssim(&["bench", "--quick", "--jobs", "2"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    for heading in [
        "## (a)",
        "## (b)",
        "## (c)",
        "## (k) the kernel model's step against a bare scheduling point",
        "## PCT on bugs of depth 2 and 3",
        "## Parallel exploration",
        "## Scale",
    ] {
        assert!(text.contains(heading), "{heading} missing:\n{text}");
    }
    let row = |prefix: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with(prefix))
            .map(String::from)
            .collect()
    };
    // The scale rows: 1, 3 and 10 times the tasks alive at once, in one
    // execution each, all pass.
    for tasks in [1000, 3000, 10000] {
        let rows = row(&format!("| {tasks} | {} |", 4 * tasks));
        assert!(
            rows.len() == 1 && rows[0].ends_with("| pass |"),
            "scale row of {tasks} tasks:\n{text}"
        );
    }
    assert!(text.contains("A bare coroutine round trip"), "{text}");
    // Table (k): the bare point, then each kernel scenario's step and its
    // ratio to the bare point.
    for prefix in ["| a bare point:", "| the ipc race:", "| user namespaces:"] {
        let rows = row(prefix);
        assert!(
            rows.len() == 1 && rows[0].trim_end().ends_with("× |"),
            "table (k) row {prefix}:\n{text}"
        );
    }
    // Table (a)'s floors: the parts of a random point at their barest,
    // each against the round trip.
    let floors = row("| ").into_iter().filter(|l| {
        [
            "| coroutine round trip",
            "| 4 bare corosensei coroutines",
            "| an nssim point of a lone task",
            "| an nssim point of 4 tasks of bare points",
        ]
        .iter()
        .any(|p| l.starts_with(p))
    });
    assert_eq!(floors.count(), 4, "the floors of table (a):\n{text}");
    let parallel = row("| 2 | ");
    assert!(parallel.iter().any(|l| l.ends_with("| yes |")), "{text}");
    assert!(!text.contains("| NO |"), "{text}");
    for line in row("| 3 | ").iter().chain(row("| 6 | ").iter()) {
        assert!(line.contains("| 5/5 |"), "{line}");
    }
    assert!(
        text.contains("| 9 |"),
        "(c) finds the nine final states:\n{text}"
    );
    // PCT finds both bugs at least at its bound 1/(n k^(d-1)).
    for line in row("| d = ") {
        let cells: Vec<f64> = line
            .split('|')
            .filter_map(|c| c.trim().parse().ok())
            .collect();
        let (bound, found) = (cells[3], cells[4]);
        assert!(found >= bound, "{line}");
    }
}

/// A run whose model outgrows `--max-memory` ends with outcome `limit`
/// (memory), with its token, rather than exhausting the machine.
#[test]
fn a_run_past_max_memory_ends_with_a_memory_limit() {
    let lines = json_lines(&nssim(&[
        "run",
        "sim-scenarios/ipc-unshare-100k.toml",
        "--kernel",
        "v6.3",
        "--max-memory",
        "16m",
        "--format",
        "json",
    ]));
    let line = &lines[0];
    assert_eq!(line["outcome"], "limit", "{line}");
    assert!(
        line["detail"]
            .as_str()
            .unwrap()
            .contains("past --max-memory 16m"),
        "{line}"
    );
    assert!(line["token"].as_str().unwrap().starts_with("nss1_"));
    let bad = nssim(&[
        "run",
        "sim-scenarios/ipc-unshare-100k.toml",
        "--max-memory",
        "1k",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("too small"), "{}", stderr(&bad));
}

/// A scenario's `results` expectation is checked: the library's scenario
/// meets it, and the same file expecting another result fails, saying why.
#[test]
fn expected_syscall_results_are_checked() {
    let file = "sim-scenarios/ipc-limit-conformance.toml";
    let ok = nssim(&["run", file]);
    assert_eq!(ok.status.code(), Some(0), "{}", stdout(&ok));
    let dir = std::env::temp_dir().join(format!("nssim-results-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let wrong = dir.join("wrong.toml");
    let text = std::fs::read_to_string(root().join(file)).unwrap();
    let edited = text.replace(
        r#"late = { unshare = "ENOSPC" }"#,
        r#"late = { unshare = "ok" }"#,
    );
    assert_ne!(text, edited, "the scenario expects late's ENOSPC");
    std::fs::write(&wrong, edited).unwrap();
    let o = nssim(&["run", wrong.to_str().unwrap(), "--format", "json"]);
    assert_eq!(o.status.code(), Some(1));
    let line = &json_lines(&o)[0];
    assert_eq!(line["outcome"], "pass");
    assert_eq!(line["as_expected"], false);
    assert_eq!(
        line["result_mismatches"][0],
        "late unshare: expected ok, got 1 ENOSPC"
    );
    // "one of" and "not": held, then not held.
    for (expect, holds) in [
        ("ok or ENOSPC", true),
        ("not EPERM", true),
        ("not ENOSPC", false),
        ("EPERM or EACCES", false),
    ] {
        let edited = text.replace(
            r#"late = { unshare = "ENOSPC" }"#,
            &format!("late = {{ unshare = \"{expect}\" }}"),
        );
        std::fs::write(&wrong, edited).unwrap();
        let o = nssim(&["run", wrong.to_str().unwrap(), "--format", "json"]);
        let line = &json_lines(&o)[0];
        assert_eq!(line["as_expected"], holds, "{expect}: {line}");
        if !holds {
            assert_eq!(
                line["result_mismatches"][0],
                format!("late unshare: expected {expect}, got 1 ENOSPC")
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 4's acceptance: one container exhausts another's processes on
/// v5.13 (found within 100 executions), not on v5.17.
#[test]
fn shared_kuid_exhausts_a_sibling_container_on_v5_13_within_100_executions_for_seeds_1_to_20() {
    for seed in 1..=20 {
        let s = seed.to_string();
        let lines = run_json(&[
            "run",
            "sim-scenarios/nproc-shared-kuid.toml",
            "--format",
            "json",
            "--seed",
            &s,
        ]);
        let old = by_kernel(&lines, "v5.13");
        assert_eq!(old["outcome"], "violation", "seed {seed}");
        assert_eq!(old["invariant"], "nproc.isolated", "seed {seed}");
        assert!(old["executions"].as_u64().unwrap() <= 100, "seed {seed}");
        assert_eq!(old["as_expected"], true);
        let new = by_kernel(&lines, "v5.17");
        assert_eq!(new["outcome"], "pass", "seed {seed}");
        assert_eq!(new["as_expected"], true);
        // On v5.17 container B's one fork always succeeds.
        assert_eq!(new["results"]["b"]["fork"]["results"]["ok"], 1);
    }
}

/// `dfs --no-reduction` keeps a state cache and says how many states it
/// saw (`states`); `--no-state-cache` turns it off. The kernel model names
/// no state yet, so both searches run the same executions.
#[test]
fn a_search_without_reduction_reports_its_distinct_states() {
    let args = [
        "run",
        "sim-scenarios/deadlock-abba.toml",
        "--strategy",
        "dfs",
        "--no-reduction",
        "--format",
        "json",
    ];
    let cached = run_json(&args);
    let plain = run_json(&[&args[..], &["--no-state-cache"]].concat());
    assert_eq!(cached.len(), plain.len());
    for (c, p) in cached.iter().zip(&plain) {
        assert_eq!(c["states"], 0, "{c}");
        assert!(p.get("states").is_none(), "{p}");
        assert_eq!(c["executions"], p["executions"]);
        assert_eq!(c["token"], p["token"]);
    }
    let text = nssim(&args[..5]);
    assert!(
        stdout(&text).contains("(the model named no state)"),
        "{}",
        stdout(&text)
    );
}

/// `--preemption-bound none`: dfs without a bound exhausts a small
/// scenario, in at least as many executions as under any bound.
#[test]
fn a_search_without_a_preemption_bound_exhausts_a_small_scenario() {
    let args = |bound: &'static str| {
        [
            "run",
            "sim-scenarios/ucounts-sigpending-refcount.toml",
            "--strategy",
            "dfs",
            "--preemption-bound",
            bound,
            "--format",
            "json",
        ]
    };
    let passing = |records: Vec<serde_json::Value>| -> Vec<serde_json::Value> {
        records
            .into_iter()
            .filter(|r| r["outcome"] == "pass")
            .collect()
    };
    let unbounded = passing(run_json(&args("none")));
    let bounded = passing(run_json(&args("0")));
    assert_eq!(unbounded.len(), bounded.len());
    assert!(!unbounded.is_empty());
    for (u, b) in unbounded.iter().zip(&bounded) {
        assert_eq!(u["exhausted"], true, "{u}");
        assert_eq!(u["unbounded"], true, "{u}");
        assert!(b.get("unbounded").is_none(), "{b}");
        assert!(
            u["executions"].as_u64() >= b["executions"].as_u64(),
            "{u} {b}"
        );
    }
    assert!(unbounded
        .iter()
        .zip(&bounded)
        .any(|(u, b)| u["executions"].as_u64() > b["executions"].as_u64()));
    let text = stdout(&nssim(&args("none")[..6]));
    assert!(
        text.contains("search exhausted without a preemption bound"),
        "{text}"
    );
}

/// What a dashboard reads holds everything: a scenario file that does not
/// parse is a record in JSON and a failed test case in JUnit (the command
/// still exits 2), every test case has its time, and a violation on a
/// kernel the file does not list is a failure.
#[test]
fn junit_and_json_show_unreadable_files_times_and_unlisted_kernels() {
    let dir = support::empty_dir("dashboard");
    std::fs::write(dir.join("broken.toml"), "name = \"broken\"\n[[task]\n").unwrap();
    std::fs::copy(
        root().join("sim-scenarios/ipc-alloc-vs-free.toml"),
        dir.join("ipc-alloc-vs-free.toml"),
    )
    .unwrap();
    let xml = dir.join("out.xml");
    let out = nssim(&[
        "run",
        dir.to_str().unwrap(),
        "--format",
        "json",
        "--junit",
        xml.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let records = json_lines(&out);
    let unreadable: Vec<&Value> = records.iter().filter(|r| r["unreadable"] == true).collect();
    assert_eq!(unreadable.len(), 1, "{records:?}");
    assert!(unreadable[0]["file"]
        .as_str()
        .unwrap()
        .ends_with("broken.toml"));
    assert!(
        unreadable[0]["error"]
            .as_str()
            .unwrap()
            .contains("broken.toml:2:"),
        "{}",
        unreadable[0]["error"]
    );
    assert_eq!(unreadable[0]["as_expected"], false);
    let text = std::fs::read_to_string(&xml).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap();
    let cases: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    assert_eq!(
        cases.len(),
        4,
        "three kernels and the unreadable file: {text}"
    );
    for case in &cases {
        let time = case
            .attribute("time")
            .expect("every test case has its time");
        assert!(time.parse::<f64>().is_ok_and(|t| t >= 0.0), "{time}");
    }
    let failed: Vec<_> = cases
        .iter()
        .filter(|c| c.children().any(|n| n.has_tag_name("failure")))
        .collect();
    assert_eq!(failed.len(), 1, "{text}");
    assert!(failed[0]
        .attribute("classname")
        .unwrap()
        .ends_with("broken.toml"));
    let root_node = doc.root_element();
    assert_eq!(root_node.attribute("failures"), Some("1"));
    let _ = std::fs::remove_dir_all(&dir);

    let unlisted = nssim(&[
        "run",
        "sim-scenarios/ipc-alloc-vs-free.toml",
        "--kernel",
        "v6.1",
    ]);
    assert_eq!(unlisted.status.code(), Some(1), "{}", stdout(&unlisted));
    assert!(
        stdout(&unlisted).contains(
            "FAIL ipc-alloc-vs-free [v6.1] violation (not listed in the file: expected pass)"
        ),
        "{}",
        stdout(&unlisted)
    );
}

/// A kernel named as a release no profile is named after is pointed at the
/// profile that models it, not at the name spelt most alike (`v4.17`).
#[test]
fn a_release_between_profiles_suggests_the_profile_that_models_it() {
    let out = nssim(&[
        "run",
        "sim-scenarios/ipc-alloc-vs-free.toml",
        "--kernel",
        "v6.17",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("help: Linux 6.17 is modelled by `v6.16`"),
        "{err}"
    );
    assert!(!err.contains("v4.17`?"), "{err}");
}

/// An entry that expects its dfs search exhausted, run with another
/// strategy, is told why it cannot be: raising `iterations` would not help.
#[test]
fn an_exhaustive_entry_run_with_random_is_told_why_it_cannot_be_exhausted() {
    let out = nssim(&[
        "run",
        "sim-scenarios/ipc-v6.3-window.toml",
        "--kernel",
        "v6.3+fix",
        "--strategy",
        "random",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(text.contains("a random run never exhausts one"), "{text}");
    assert!(!text.contains("raise `iterations`"), "{text}");
}

/// A container with a uid map and no gid map: every call of every task
/// gets EPERM, so the invariant under test never has a call to judge.
const VACUOUS: &str = r#"name = "vacuous"
summary = "a container with a uid map and no gid map: every call fails"
invariants = ["userns.no_false_enospc"]

[explore]
strategy = "random"
iterations = 20

[[userns]]
name = "container"
owner = 1000
map = "0 1000 1"

[[task]]
name = "nester"
userns = "container"
uid = 0
repeat = 3
ops = ["unshare(CLONE_NEWUSER)"]

[[kernel]]
profile = "v6.16"
expect = "pass"
"#;

/// A pass that tested nothing is not as expected, in every format and
/// when sharded (the merge judges the shards' executions together),
/// unless the entry's `results` say that every call fails.
#[test]
fn a_pass_in_which_no_call_succeeded_is_not_as_expected() {
    let dir = support::empty_dir("vacuous");
    let file = dir.join("vacuous.toml");
    std::fs::write(&file, VACUOUS).unwrap();
    let path = file.to_str().unwrap();
    let text = nssim(&["run", path]);
    assert_eq!(text.status.code(), Some(1), "{}", stdout(&text));
    assert!(
        stdout(&text).contains("not as expected: nothing was tested: no call of any task succeeded in any of the 20 execution(s) (the reported one: 3 EPERM)"),
        "{}",
        stdout(&text)
    );
    let json = nssim(&["run", path, "--format", "json"]);
    let record = &json_lines(&json)[0];
    assert_eq!(record["as_expected"], false);
    assert_eq!(record["succeeded"], serde_json::json!({ "nester": false }));
    let shards: Vec<String> = (1..=2)
        .map(|k| {
            let out = nssim(&[
                "run",
                path,
                "--shard",
                &format!("{k}/2"),
                "--format",
                "json",
            ]);
            assert_eq!(out.status.code(), Some(0), "shard {k}: {}", stdout(&out));
            let shard = dir.join(format!("shard-{k}.json"));
            std::fs::write(&shard, &out.stdout).unwrap();
            shard.display().to_string()
        })
        .collect();
    let merged = nssim(&["merge", &shards[0], &shards[1]]);
    assert_eq!(merged.status.code(), Some(1), "{}", stdout(&merged));
    assert!(stdout(&merged).contains("nothing was tested"));
    let said = VACUOUS.replace(
        "expect = \"pass\"",
        "expect = { outcome = \"pass\", results = { nester = { unshare = \"EPERM\" } } }",
    );
    std::fs::write(&file, said).unwrap();
    let expected = nssim(&["run", path]);
    assert_eq!(expected.status.code(), Some(0), "{}", stdout(&expected));
    // One task that succeeds once is something tested.
    let works = nssim(&[
        "run",
        "sim-scenarios/ipc-alloc-vs-free.toml",
        "--format",
        "json",
    ]);
    for record in json_lines(&works).iter().filter(|r| r["outcome"] == "pass") {
        assert!(record["succeeded"]["looper"] == true, "{record}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Calls that succeed but that the invariant under test is not about:
/// forks, judged by `ipc.no_false_enospc`, which asserts about ipc
/// namespace creations only.
const UNJUDGED: &str = r#"name = "unjudged"
summary = "forks under an invariant about ipc namespace creation"
invariants = ["ipc.no_false_enospc"]

[explore]
strategy = "random"
iterations = 5

[[task]]
name = "forker"
ops = ["fork()", "exit()"]

[[kernel]]
profile = "v6.16"
expect = "pass"
"#;

/// Each invariant counts the calls it judged; a pass whose invariants
/// judged none is not as expected, and one with an invariant among
/// others that judged none says so.
#[test]
fn a_pass_whose_invariants_judged_no_call_is_not_as_expected() {
    let dir = support::empty_dir("unjudged");
    let file = dir.join("unjudged.toml");
    std::fs::write(&file, UNJUDGED).unwrap();
    let path = file.to_str().unwrap();
    let text = nssim(&["run", path]);
    assert_eq!(text.status.code(), Some(1), "{}", stdout(&text));
    assert!(
        stdout(&text).contains("not as expected: nothing was tested: ipc.no_false_enospc judged no call in any of the 5 execution(s)"),
        "{}",
        stdout(&text)
    );
    let json = nssim(&["run", path, "--format", "json"]);
    let record = &json_lines(&json)[0];
    assert_eq!(record["as_expected"], false);
    assert_eq!(
        record["judged"],
        serde_json::json!({ "ipc.no_false_enospc": false })
    );
    // With an invariant about forks beside it, the run tested something:
    // it passes, and names the invariant that judged nothing.
    let both = UNJUDGED.replace(
        r#"invariants = ["ipc.no_false_enospc"]"#,
        r#"invariants = ["ipc.no_false_enospc", "nproc.real_uid"]"#,
    );
    std::fs::write(&file, both).unwrap();
    let text = nssim(&["run", path]);
    assert_eq!(text.status.code(), Some(0), "{}", stdout(&text));
    assert!(
        stdout(&text).contains("not exercised: ipc.no_false_enospc"),
        "{}",
        stdout(&text)
    );
    let json = nssim(&["run", path, "--format", "json"]);
    let record = &json_lines(&json)[0];
    assert_eq!(
        record["judged"],
        serde_json::json!({ "ipc.no_false_enospc": false, "nproc.real_uid": true })
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A false ENOSPC refused by an ancestor's limit names that level (its
/// namespace, uid and limit), the leaf's own limit beside it, and that
/// namespaces released but not yet freed held the rest of the count.
#[test]
fn a_false_enospc_names_the_level_whose_limit_refused_it() {
    let dir = support::empty_dir("refusing-level");
    let file = dir.join("nested.toml");
    std::fs::write(
        &file,
        r#"name = "nested-limit"
summary = "a container's loop of unshare -U true refused by the initial namespace's limit for its owner"
invariants = ["userns.no_false_enospc"]

[explore]
strategy = "fair"

[sysctl]
"user.max_user_namespaces" = 3

[[userns]]
name = "ct"
owner = 1000
map = "1000 1000 1"
gid_map = "1000 1000 1"

[[task]]
name = "looper"
userns = "ct"
uid = 1000
repeat = 6
ops = ["unshare_and_exit(CLONE_NEWUSER)"]

[[kernel]]
profile = "v6.16"
expect = { outcome = "violation", invariant = "userns.no_false_enospc" }
"#,
    )
    .unwrap();
    let out = nssim(&["run", file.to_str().unwrap()]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("the limit that refused it is that of uid 1000 in user namespace init (max_user_namespaces = 3 there; uid 1000 in user namespace ct below it, where the call was made, allows 2147483647)"),
        "{text}"
    );
    assert!(
        text.contains("the rest of its count held by namespaces released but not yet freed; at most 2 user namespaces were released and waiting to be freed during the call"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
