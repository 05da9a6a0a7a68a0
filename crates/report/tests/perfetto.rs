//! Perfetto trace-event JSON of a synthetic execution, checked field by
//! field and for nesting.

#[allow(dead_code)]
use crate::support;

use report::{perfetto, Model};
use serde_json::Value;
use support::{execution, trace_events, LEXICON};

fn trace(fail: bool) -> Value {
    let r = execution("caller", fail);
    let m = Model::build(&r, &LEXICON);
    let meta = perfetto::Meta {
        scenario: "synthetic",
        kernel: "v0",
        token: "nss1_x",
        replay_command: "nssim replay synthetic.toml nss1_x",
    };
    serde_json::from_str(&perfetto::render(&m, &meta)).expect("valid JSON")
}

#[test]
fn every_event_has_the_fields_of_its_phase_and_slices_nest() {
    let t = trace(true);
    let s = trace_events::check(&t).unwrap_or_else(|e| panic!("{e}"));
    for ph in ["M", "X", "i", "C", "s", "f"] {
        assert!(s.phases.contains_key(ph), "no {ph} event: {:?}", s.phases);
    }
    let slices = &s.names["X"];
    for name in [
        "unshare → ENOSPC",
        "holds A#0",
        "holds B#0",
        "grace period",
        "runs work#0",
    ] {
        assert!(
            slices.iter().any(|n| n == name),
            "no slice {name}: {slices:?}"
        );
    }
    let instants = &s.names["i"];
    assert!(instants.iter().any(|n| n == "breaks the run: violation"));
    assert!(instants.iter().any(|n| n == "freed ns#0"));
    assert_eq!(s.names["C"], ["widgets", "widgets", "max_widgets"]);
    assert_eq!(t["otherData"]["token"], "nss1_x");
}

#[test]
fn locks_held_hand_over_hand_go_on_a_second_track_of_the_task() {
    let s = trace_events::check(&trace(false)).unwrap_or_else(|e| panic!("{e}"));
    let mut names: Vec<&str> = s.threads.values().map(String::as_str).collect();
    names.sort();
    assert_eq!(
        names,
        ["caller", "caller (2)", "idler", "rcu grace periods"]
    );
}

#[test]
fn times_are_microseconds() {
    let t = trace(false);
    let gp = t["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "grace period" && e["ph"] == "X")
        .unwrap();
    assert_eq!(gp["dur"], 1, "1000 ns of grace period: {gp}");
}
