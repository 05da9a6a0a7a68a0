//! The terminal timeline of a synthetic execution.

#[allow(dead_code)]
use crate::support;

use report::{timeline, Model};
use support::{execution, LEXICON};

fn render(task: &str, fail: bool, color: bool) -> String {
    let r = execution(task, fail);
    let m = Model::build(&r, &LEXICON);
    timeline::render(&m, &timeline::Options { color, width: None })
}

#[test]
fn a_column_per_task_results_in_their_column_and_the_breaking_step_marked() {
    let out = render("caller", true, false);
    let header = out
        .lines()
        .find(|l| l.contains("step") && l.contains("time"))
        .unwrap();
    let caller = header.find("caller").expect("a caller column");
    assert!(
        header.find("idler").unwrap() > caller,
        "syscall makers first: {header}"
    );
    assert!(header.contains("rcu"), "an rcu column: {header}");
    assert!(header.contains("widgets"), "a counter column: {header}");
    let result = out
        .lines()
        .find(|l| l.contains("= unshare ENOSPC"))
        .unwrap();
    assert_eq!(
        result.find("= unshare"),
        Some(caller + 2),
        "after the gutters:\n{out}"
    );
    let breaking = out.lines().find(|l| l.starts_with('▶')).expect("a ▶ row");
    assert!(breaking.contains("check"), "{breaking}");
    assert!(out.contains("violation of widgets.bounded: <b>too many</b>"));
    assert!(out.contains("counters at the end: widgets 0, max_widgets 2 (limit)"));
}

#[test]
fn gutters_show_locks_work_grace_periods_and_read_sections() {
    let out = render("caller", false, false);
    let row = |label: &str| out.lines().find(|l| l.contains(label)).unwrap().to_string();
    // A and B overlap: two gutters, the second opened while the first is open.
    assert!(row("spin_lock A#0").contains("┏"), "{out}");
    assert!(row("spin_lock B#0").contains("┃┏"), "{out}");
    assert!(row("rcu_read_lock").contains("╭"), "{out}");
    assert!(row("work_run work#0").contains("╓"), "{out}");
    assert!(
        row("work_run work#0").contains("←"),
        "the step that queued it: {out}"
    );
    assert!(row("schedule_work work#0").contains("→"), "{out}");
    assert!(row("grace period").contains("┆"), "{out}");
}

#[test]
fn colours_only_when_asked() {
    assert!(!render("caller", true, false).contains('\x1b'));
    let coloured = render("caller", true, true);
    assert!(coloured.contains("\x1b[1;31m▶"), "the breaking step in red");
    assert!(coloured.contains("\x1b[0m"));
}

#[test]
fn long_names_are_cut_with_an_ellipsis() {
    let long = "a-task-with-a-name-much-longer-than-any-column-should-be";
    let out = render(long, false, false);
    assert!(!out.contains(long));
    let title = out
        .lines()
        .find(|l| l.contains("a-task-with-a-name"))
        .unwrap();
    assert!(title.contains("… │"), "{title}");
    let widest = out.lines().map(|l| l.chars().count()).max().unwrap();
    assert!(widest < 200, "a line of {widest} characters");
}
