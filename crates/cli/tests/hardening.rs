//! Bad input gets a clear error and exit status 2, never a panic or an
//! abort: numbers out of the ranges of `sim::limits` (on the command line
//! and in tokens), and input that would drive or flood the terminal.

use crate::support;

use sim::limits::{self, Limit};
use sim::{Schedule, Segment, Token};
use support::{nssim, stderr};

const SCENARIO: &str = "sim-scenarios/ipc-alloc-vs-free.toml";

/// Exit status 2 and the stderr, which must not carry a control character
/// other than a line break.
#[track_caller]
fn usage_error(args: &[&str]) -> String {
    let o = nssim(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(!err.chars().any(|c| c.is_control() && c != '\n'), "{err:?}");
    err
}

/// The command-line option of a range of `sim::limits`.
fn flag(limit: &Limit) -> String {
    format!("--{}", limit.name.replace('_', "-"))
}

/// `nssim run` of a path that does not exist: a valid number gets past the
/// argument parser to the missing file, so nothing runs.
fn run_missing_with(flag: &str, value: &str) -> String {
    // `--flag=-1`: clap would take a separate `-1` for an option.
    usage_error(&["run", "no/such/dir", &format!("{flag}={value}")])
}

#[test]
fn values_the_command_line_used_to_accept_are_refused() {
    for (limit, v) in [
        (&limits::CPUS, 4_294_967_295),
        (&limits::PCT_DEPTH, 4_294_967_295),
        (&limits::CPUS, 0),
        (&limits::PCT_DEPTH, 0),
        (&limits::ITERATIONS, 0),
        (&limits::PREEMPTION_BOUND, 100_000),
    ] {
        let err = usage_error(&["run", SCENARIO, &flag(limit), &v.to_string()]);
        assert!(err.contains(&limit.message(v)), "{err}");
    }
    let err = usage_error(&["run", SCENARIO, "--cpus", "0"]);
    assert!(err.contains("`cpus` must be in 1..=1_024, not 0"), "{err}");
    let err = usage_error(&["run", SCENARIO, "--max-virtual-time", "0s"]);
    assert!(err.contains(&limits::MAX_VIRTUAL_NS.message(0)), "{err}");
    // No bound is `none`; another word is refused with what is taken.
    let err = usage_error(&["run", SCENARIO, "--preemption-bound", "nope"]);
    assert!(
        err.contains(
            "`preemption_bound` must be an integer in 0..=64 or `none` (no bound), not `nope`"
        ),
        "{err}"
    );
}

#[test]
fn boundaries_of_every_range_on_the_command_line() {
    // max_virtual_time is a duration option, checked above.
    for limit in limits::EXPLORE.iter().filter(|l| l.unit.is_empty()) {
        let (min, max) = (i128::from(limit.min), i128::from(limit.max));
        let f = flag(limit);
        for v in [min, max] {
            let err = run_missing_with(&f, &v.to_string());
            assert!(!err.contains("must be"), "{f} {v}: {err}");
        }
        for v in [min - 1, max + 1] {
            let err = run_missing_with(&f, &v.to_string());
            assert!(err.contains(&limit.message(v)), "{f} {v}: {err}");
        }
    }
}

fn content_hash() -> sim::ContentHash {
    scenario::load(&support::root().join(SCENARIO))
        .unwrap()
        .content_hash()
}

/// A token for the v6.2 run of [`SCENARIO`].
fn token(schedule: Schedule) -> Token {
    Token {
        scenario: sim::token::hash32(b"ipc-alloc-vs-free"),
        content: Some(content_hash()),
        context: vec!["v6.2".into()],
        cpus: 2,
        max_steps: 10_000_000,
        max_virtual_ns: 3_600_000_000_000,
        schedule,
    }
}

fn replay_error(t: &Token) -> String {
    usage_error(&["replay", SCENARIO, &t.encode()])
}

#[test]
fn tokens_with_out_of_range_fields_are_refused() {
    for cpus in [0, 1025] {
        let err = replay_error(&Token {
            cpus,
            ..token(Schedule::Fair)
        });
        assert!(
            err.contains(&format!(
                "the token's {}",
                limits::CPUS.message(cpus.into())
            )),
            "{err}"
        );
    }
    let err = replay_error(&Token {
        max_steps: 10,
        ..token(Schedule::Choices(vec![0; 11]))
    });
    assert!(err.contains("explicit choices must be at most 10"), "{err}");
}

#[test]
fn a_made_up_token_in_range_replays() {
    let o = nssim(&["replay", SCENARIO, &token(Schedule::Fair).encode()]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
}

#[test]
fn segment_steps_near_u64_max_report_the_divergence() {
    let seg = |at: &str, steps| Segment {
        task: "looper".into(),
        at: at.into(),
        steps,
    };
    // The steps add up to u64::MAX, and one more counting from step 1.
    let t = token(Schedule::Segments(vec![
        seg("start", 3),
        seg("renamed_point", u64::MAX - 3),
    ]));
    let err = replay_error(&t);
    assert!(err.contains("diverges from the token at step 4"), "{err}");
    assert!(err.contains("looper@renamed_point"), "{err}");
    // Past u64::MAX the token is refused as it is read.
    let t = token(Schedule::Segments(vec![
        seg("start", 3),
        seg("renamed_point", u64::MAX),
    ]));
    let err = replay_error(&t);
    assert!(err.contains("too many steps in the segments"), "{err}");
}

#[test]
fn a_token_with_an_escape_is_shown_escaped() {
    let err = usage_error(&["replay", SCENARIO, "nss1_\u{1b}[31mRED\u{7}"]);
    assert!(err.contains("`nss1_\\u{1b}[31mRED\\u{7}`"), "{err}");
    // Also where clap quotes the value.
    let err = usage_error(&["run", SCENARIO, "--cpus", "\u{1b}[31m1"]);
    assert!(err.contains("`\\u{1b}[31m1`"), "{err}");
}

#[test]
fn a_huge_token_is_cut_in_the_message() {
    // An argument is at most 128 KiB on Linux: the 5 MB token comes from
    // a trace file.
    let dir = std::env::temp_dir().join(format!("nssim-hardening-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("huge.json");
    let huge = format!("nss1_{}", "A".repeat(5 << 20));
    let doc = serde_json::json!({"format": "nssim-trace", "format_version": 1, "token": huge});
    std::fs::write(&file, doc.to_string()).unwrap();
    let err = usage_error(&["replay", SCENARIO, file.to_str().unwrap()]);
    assert!(err.len() < 1000, "{} bytes", err.len());
    assert!(
        err.contains("bad token `nss1_AAAA") && err.contains('…'),
        "{err}"
    );
    let long = format!("nss1_{}!", "A".repeat(100_000));
    let err = usage_error(&["replay", SCENARIO, &long]);
    assert!(err.len() < 1000, "{} bytes", err.len());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_scenario_file_name_with_a_control_character_is_escaped() {
    let dir = std::env::temp_dir().join(format!("nssim-hardening-name-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("evil\u{1b}[31m.toml");
    std::fs::write(&file, "name = 1\n").unwrap();
    let err = usage_error(&["run", file.to_str().unwrap()]);
    assert!(err.contains("evil\\u{1b}[31m.toml"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A scenario of one task with `instances` copies under two kernels.
fn many_instances(dir: &std::path::Path, instances: u64, strategy: &str) -> std::path::PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let file = dir.join(format!("many-{instances}-{strategy}.toml"));
    std::fs::write(
        &file,
        format!(
            "name = \"many\"\nsummary = \"many tasks\"\n[explore]\nstrategy = \"{strategy}\"\n\
             [[task]]\nname = \"looper\"\ninstances = {instances}\nops = [\"unshare(CLONE_NEWIPC)\"]\n\
             [[kernel]]\nprofile = \"v6.2\"\nexpect = \"pass\"\n[[kernel]]\nprofile = \"v6.3\"\nexpect = \"pass\"\n"
        ),
    )
    .unwrap();
    file
}

#[test]
fn instances_that_used_to_abort_are_refused_up_front() {
    let dir = std::env::temp_dir().join(format!("nssim-hardening-many-{}", std::process::id()));
    // They aborted the process (stack guard page, thread spawn) with
    // several threads.
    for (n, strategy) in [(50_000, "random"), (100_000, "pct")] {
        let file = many_instances(&dir, n, strategy);
        for jobs in ["1", "2"] {
            let err = usage_error(&["run", file.to_str().unwrap(), "--jobs", jobs]);
            assert!(err.contains(&limits::INSTANCES.message(n.into())), "{err}");
            assert!(err.contains(":7:13"), "{err}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn jobs_are_checked_against_their_range() {
    for v in [0, 1025, 65_536] {
        let err = usage_error(&["run", SCENARIO, "--jobs", &v.to_string()]);
        assert!(err.contains(&limits::JOBS.message(v)), "{err}");
    }
}

/// A copy of [`SCENARIO`] in `dir`, edited by `edit`, and its path.
fn edited_copy(dir: &std::path::Path, name: &str, edit: impl Fn(&str) -> String) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let text = std::fs::read_to_string(support::root().join(SCENARIO)).unwrap();
    let file = dir.join(name);
    std::fs::write(&file, edit(&text)).unwrap();
    file.to_str().unwrap().to_string()
}

/// The v6.2 token `nssim run` prints for `file`.
fn token_of_run(file: &str) -> String {
    let o = nssim(&["run", file, "--kernel", "v6.2", "--format", "json"]);
    let line = support::stdout(&o);
    let first = line.lines().next().unwrap();
    let v: serde_json::Value = serde_json::from_str(first).unwrap();
    v["token"].as_str().unwrap().to_string()
}

#[test]
fn a_token_replayed_on_an_edited_scenario_warns_and_strict_refuses_it() {
    let dir = std::env::temp_dir().join(format!("nssim-hardening-edit-{}", std::process::id()));
    let original = edited_copy(&dir, "original.toml", str::to_string);
    let token = token_of_run(&original);
    assert!(sim::Token::decode(&token).unwrap().content.is_some());
    // The same scenario with another comment: no warning.
    let commented = edited_copy(&dir, "commented.toml", |t| format!("# edited\n{t}"));
    let o = nssim(&["replay", &commented, &token, "--strict"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
    // Another cost table: the same steps, but not the same scenario.
    let costs = edited_copy(&dir, "costs.toml", |t| {
        format!("{t}\n[costs]\nstep = \"20ns\"\n")
    });
    let o = nssim(&["replay", &costs, &token]);
    let err = stderr(&o);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{err}");
    assert!(
        err.contains("warning: `ipc-alloc-vs-free`")
            && err.contains("changed since the token was made"),
        "{err}"
    );
    let err = usage_error(&["replay", &costs, &token, "--strict"]);
    assert!(err.contains("changed since the token was made"), "{err}");
    assert!(err.contains("costs.toml"), "{err}");
    // Other operations: replayed as far as the token still fits.
    let ops = edited_copy(&dir, "ops.toml", |t| t.replace("repeat = 20", "repeat = 2"));
    let o = nssim(&["replay", &ops, &token]);
    let err = stderr(&o);
    assert!(err.contains("changed since the token was made"), "{err}");
    assert!(matches!(o.status.code(), Some(0..=2)), "{err}");
    if o.status.code() == Some(2) {
        assert!(err.contains("diverges from the token at step"), "{err}");
        assert!(
            support::stdout(&o).contains("looper"),
            "the steps replayed so far"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_token_of_format_2_replays_with_a_warning_and_strict_refuses_it() {
    let v2 = Token {
        content: None,
        ..token(Schedule::Fair)
    }
    .encode();
    assert!(v2.starts_with("nss1_A"));
    let o = nssim(&["replay", SCENARIO, &v2]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("token is of format 2"),
        "{}",
        stderr(&o)
    );
    let err = usage_error(&["replay", SCENARIO, &v2, "--strict"]);
    assert!(err.contains("token is of format 2"), "{err}");
}

/// A token of format 3 carries a 32-bit FNV-1a of the scenario's content,
/// which another scenario can be made to match: it replays with a
/// warning, and `--strict` refuses it, even when the hash would match.
#[test]
fn a_token_of_format_3_is_not_trusted_to_bind_its_scenario() {
    let content = scenario::load(&support::root().join(SCENARIO))
        .unwrap()
        .content_text();
    let v3 = Token {
        content: Some(sim::ContentHash::Fnv32(sim::token::hash32(
            content.as_bytes(),
        ))),
        ..token(Schedule::Fair)
    }
    .encode();
    let o = nssim(&["replay", SCENARIO, &v3]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("token is of format 3"),
        "{}",
        stderr(&o)
    );
    let err = usage_error(&["replay", SCENARIO, &v3, "--strict"]);
    assert!(err.contains("cannot tell whether"), "{err}");
    // The token of this version is trusted.
    let v4 = token(Schedule::Fair).encode();
    let o = nssim(&["replay", SCENARIO, &v4, "--strict"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
}

#[test]
fn trace_files_are_checked_field_by_field() {
    let dir = std::env::temp_dir().join(format!("nssim-hardening-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("t.json");
    let f = file.to_str().unwrap();
    let o = nssim(&["run", SCENARIO, "--kernel", "v6.2", "--trace", f]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let good: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let with = |key: &str, v: serde_json::Value| {
        let mut d = good.clone();
        d[key] = v;
        d.to_string()
    };
    use serde_json::json;
    let mut event = good["events"][0].clone();
    event["kind"] = json!(1);
    let cases = [
        (
            with("format_version", json!("1")),
            "\"format_version\" must be an integer (1), not the string \"1\"",
        ),
        (
            with("format_version", json!(1.0)),
            "\"format_version\" must be an integer (1), not the number 1.0",
        ),
        (
            with("format_version", json!(-1)),
            "trace format version -1 is not one this nssim reads",
        ),
        (
            with("outcome", json!(5)),
            "\"outcome\" must be a string, not the integer 5",
        ),
        (
            with("outcome", json!("bogus")),
            "\"outcome\" must be one of pass, violation",
        ),
        (
            with("steps", json!("59")),
            "\"steps\" must be an integer of at least 0, not the string \"59\"",
        ),
        (
            with("events", json!("x")),
            "\"events\" must be an array of objects",
        ),
        (
            with("events", json!([event])),
            "event 0: \"kind\" must be \"step\" or \"note\", not the integer 1",
        ),
        (with("scenario", json!(7)), "\"scenario\" must be a string"),
        (
            with("kernel", json!([])),
            "\"kernel\" must be a string, not an array",
        ),
        (
            with("trace_hash", json!("xyz")),
            "\"trace_hash\" must be 16 hexadecimal digits",
        ),
        ("[1]".to_string(), "not an nssim trace file"),
    ];
    for (text, message) in cases {
        std::fs::write(&file, &text).unwrap();
        let err = usage_error(&["replay", SCENARIO, f]);
        assert!(err.contains(message), "{message}: {err}");
        assert!(err.contains("t.json"), "the file is named: {err}");
    }
    // An error at the end of the file has a real column.
    std::fs::write(&file, "{\"format\": \"nssim-trace\",\n \"token\": \"a\"\n").unwrap();
    let err = usage_error(&["replay", SCENARIO, f]);
    assert!(err.contains("t.json:2:14:"), "{err}");
    // Fields the replay does not reproduce are named in warnings.
    std::fs::write(&file, with("outcome", json!("pass"))).unwrap();
    let o = nssim(&["replay", SCENARIO, f]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("warning: the trace file's outcome is pass, the replay's violation"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
