//! The views' reading of a trace: spans, marks, flows, series.

#[allow(dead_code)]
use crate::support;

use report::{nest, MarkKind, Model, Place, SpanKind};
use support::{execution, find, LEXICON};

#[test]
fn a_syscall_ends_at_its_result_note() {
    let r = execution("caller", false);
    let m = Model::build(&r, &LEXICON);
    let calls: Vec<_> = m
        .spans
        .iter()
        .filter(|s| s.kind == SpanKind::Syscall)
        .collect();
    assert_eq!(calls.len(), 1);
    let call = calls[0];
    assert_eq!(call.name, "unshare");
    assert_eq!(call.result.as_deref(), Some("ENOSPC"));
    assert!(call.failed);
    let result = m.events.iter().rposition(|e| e.label == "unshare").unwrap();
    assert_eq!(call.last, Some(result));
    let mark = m.marks.iter().find(|mk| mk.event == result).unwrap();
    assert_eq!(
        (mark.kind, mark.text.as_str()),
        (MarkKind::Error, "unshare ENOSPC")
    );
}

#[test]
fn locks_taken_hand_over_hand_are_two_overlapping_spans() {
    let r = execution("caller", false);
    let m = Model::build(&r, &LEXICON);
    let locks: Vec<_> = m
        .spans
        .iter()
        .filter(|s| s.kind == SpanKind::Lock)
        .collect();
    let names: Vec<&str> = locks.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["A#0", "B#0"]);
    let (a, b) = (locks[0], locks[1]);
    assert!(a.first < b.first && b.first < a.last.unwrap() && a.last < b.last);
}

#[test]
fn nested_rcu_read_sections_are_one_span() {
    let r = execution("caller", false);
    let m = Model::build(&r, &LEXICON);
    let reads: Vec<_> = m
        .spans
        .iter()
        .filter(|s| s.kind == SpanKind::RcuRead)
        .collect();
    assert_eq!(reads.len(), 1);
    assert_eq!(reads[0].first, find(&r, "rcu_read_lock"));
    let outer_unlock = m.events.iter().rposition(|e| e.label == "rcu_read_unlock");
    assert_eq!(reads[0].last, outer_unlock);
}

#[test]
fn schedule_work_flows_to_the_work_run_and_the_run_holds_the_grace_period() {
    let r = execution("caller", false);
    let m = Model::build(&r, &LEXICON);
    assert_eq!(m.flows.len(), 1);
    assert_eq!(m.flows[0].from, find(&r, "schedule_work"));
    assert_eq!(m.flows[0].to, find(&r, "work_run"));
    assert!(m.unrun.is_empty(), "the work ran");
    let work = m.spans.iter().find(|s| s.kind == SpanKind::Work).unwrap();
    let gp = m
        .spans
        .iter()
        .find(|s| s.kind == SpanKind::GracePeriod)
        .unwrap();
    assert_eq!(work.name, "work#0");
    assert!(work.first < gp.first && gp.last < work.last);
    let (start, end) = m.span_time(gp);
    assert_eq!(end - start, 1000, "the grace period lasts its sleep");
    let kinds: Vec<MarkKind> = m.marks.iter().map(|mk| mk.kind).collect();
    assert!(kinds.contains(&MarkKind::Queued) && kinds.contains(&MarkKind::Freed));
}

#[test]
fn counters_become_series_and_max_ones_are_limits() {
    let r = execution("caller", false);
    let m = Model::build(&r, &LEXICON);
    let series: Vec<(&str, bool, Vec<i64>)> = m
        .series
        .iter()
        .map(|s| {
            (
                s.name.as_str(),
                s.limit,
                s.points.iter().map(|p| p.1).collect(),
            )
        })
        .collect();
    assert_eq!(
        series,
        [
            ("widgets", false, vec![1, 0]),
            ("max_widgets", true, vec![2])
        ]
    );
}

#[test]
fn the_last_step_of_a_failed_run_breaks_it_and_a_pass_has_none() {
    let failed = execution("caller", true);
    let m = Model::build(&failed, &LEXICON);
    assert_eq!(m.breaking, Some(find(&failed, "check")));
    let passed = execution("caller", false);
    assert!(Model::build(&passed, &LEXICON).breaking.is_none());
}

#[test]
fn tasks_that_made_syscalls_come_first() {
    let r = execution("caller", false);
    let m = Model::build(&r, &LEXICON);
    let order: Vec<&str> = m.task_order().iter().map(|&t| m.task_name(t)).collect();
    assert_eq!(order, ["caller", "idler"]);
}

#[test]
fn nest_gives_overlapping_intervals_their_own_sub_lane() {
    let places = nest(&[(0, 10), (2, 4), (5, 12), (10, 11), (4, 4)]);
    let at = |sub, depth| Place { sub, depth };
    assert_eq!(places[0], at(0, 0));
    assert_eq!(places[1], at(0, 1), "[2,4) nests in [0,10)");
    assert_eq!(
        places[2],
        at(1, 0),
        "[5,12) overlaps [0,10) without nesting"
    );
    assert_eq!(places[3], at(0, 0), "[10,11) starts when [0,10) ends");
    assert_eq!(places[4], at(0, 1), "an empty interval nests anywhere");
}
