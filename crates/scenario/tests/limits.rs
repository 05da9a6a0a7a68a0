//! The `[explore]` ranges are those of `sim::limits`, with its messages:
//! each range's boundaries, and values the command line used to accept.

use scenario::parse;
use sim::limits::{self, Limit};

/// A valid file with `[explore] key = value`.
fn with_explore(key: &str, value: &str) -> String {
    format!(
        "name = \"x\"\nsummary = \"s\"\n[explore]\n{key} = {value}\n[[task]]\nname = \"a\"\n\
         ops = [\"unshare(CLONE_NEWIPC)\"]\n[[kernel]]\nprofile = \"v6.2\"\nexpect = \"pass\"\n"
    )
}

/// The message for `key = value`, or `None` when the file is accepted.
fn message_of(key: &str, value: &str) -> Option<String> {
    parse("t.toml", &with_explore(key, value))
        .err()
        .map(|e| e.message)
}

#[track_caller]
fn refused(limit: &Limit, v: i128) {
    assert_eq!(
        message_of(limit.name, &v.to_string()),
        Some(limit.message(v)),
        "{} = {v}",
        limit.name
    );
}

#[test]
fn boundaries_of_every_explore_range() {
    for limit in limits::EXPLORE {
        let (min, max) = (i128::from(limit.min), i128::from(limit.max));
        assert_eq!(
            message_of(limit.name, &min.to_string()),
            None,
            "{}",
            limit.name
        );
        assert_eq!(
            message_of(limit.name, &max.to_string()),
            None,
            "{}",
            limit.name
        );
        if min > 0 {
            refused(limit, min - 1);
        }
        // TOML integers stop at i64::MAX; above it the file is refused too.
        if max < i128::from(i64::MAX) {
            refused(limit, max + 1);
        } else {
            assert!(message_of(limit.name, &(max + 1).to_string()).is_some());
        }
    }
}

#[test]
fn values_the_command_line_used_to_accept_are_refused_here_too() {
    for (limit, v) in [
        (&limits::CPUS, 0),
        (&limits::CPUS, 1025),
        (&limits::CPUS, 4_294_967_295),
        (&limits::PCT_DEPTH, 0),
        (&limits::PCT_DEPTH, 4_294_967_295),
        (&limits::ITERATIONS, 0),
        (&limits::PREEMPTION_BOUND, 100_000),
    ] {
        refused(limit, v);
    }
    assert_eq!(
        message_of("cpus", "0"),
        Some("`cpus` must be in 1..=1_024, not 0".into())
    );
}

#[test]
fn a_duration_below_the_minimum_gets_the_shared_message() {
    assert_eq!(
        message_of("max_virtual_time", "\"0s\""),
        Some(limits::MAX_VIRTUAL_NS.message(0))
    );
}

/// A file with a task per entry of `instances`.
fn with_instances(instances: &[&str]) -> String {
    let mut text = String::from("name = \"x\"\nsummary = \"s\"\n");
    for (i, n) in instances.iter().enumerate() {
        text.push_str(&format!(
            "[[task]]\nname = \"t{i}\"\ninstances = {n}\nops = [\"unshare(CLONE_NEWIPC)\"]\n"
        ));
    }
    text + "[[kernel]]\nprofile = \"v6.2\"\nexpect = \"pass\"\n"
}

#[test]
fn instances_are_bounded_per_task_and_over_the_scenario() {
    let max = limits::INSTANCES.max;
    assert!(parse("t.toml", &with_instances(&[&max.to_string()])).is_ok());
    for v in [0, i128::from(max) + 1, 50_000, 100_000] {
        let e = parse("t.toml", &with_instances(&[&v.to_string()])).unwrap_err();
        assert_eq!(e.message, limits::INSTANCES.message(v));
    }
    // 8 000 and 8 001: one too many in all, pointed at the second task's.
    let e = parse("t.toml", &with_instances(&["8000", "8001"])).unwrap_err();
    assert!(
        e.message.contains("16_001 instances in all"),
        "{}",
        e.message
    );
    assert_eq!((e.line, e.column), (Some(9), Some(13)));
    assert!(parse("t.toml", &with_instances(&["8000", "8000"])).is_ok());
}
