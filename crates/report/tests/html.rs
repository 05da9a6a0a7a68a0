//! The HTML report of a synthetic execution: self-contained, escaped, and
//! drawn for both axes.

#[allow(dead_code)]
use crate::support;

use report::{html, Model};
use support::{execution, LEXICON};

const NASTY: &str = "<script>alert('x')</script> & \"quotes\"";

fn page(task: &str, fail: bool) -> String {
    let r = execution(task, fail);
    let m = Model::build(&r, &LEXICON);
    let describe = LEXICON.describe;
    let meta = html::Page {
        scenario: NASTY,
        summary: "a <summary> & more",
        file: "sim-scenarios/x&y.toml".into(),
        kernel: "v6.2",
        profile: "v6.2",
        patches: vec!["ipc-async-free"],
        other_patches: vec!["uevent-inject"],
        token: "nss1_abc",
        replay_command: "nssim replay sim-scenarios/x&y.toml nss1_abc",
        describe,
    };
    html::render(&m, &meta)
}

#[test]
fn the_page_needs_nothing_from_the_network() {
    let p = page("caller", true);
    assert!(p.starts_with("<!DOCTYPE html>"));
    for needle in [
        "<link",
        "<script src",
        "src=\"http",
        "href=\"http",
        "@import",
        "url(http",
    ] {
        assert!(!p.contains(needle), "found {needle}");
    }
    let outside: Vec<&str> = p
        .match_indices("http")
        .map(|(i, _)| &p[i..(i + 30).min(p.len())])
        .filter(|s| !s.starts_with("http://www.w3.org/2000/svg"))
        .collect();
    assert!(outside.is_empty(), "{outside:?}");
    assert!(p.contains("<style>") && p.contains("<script>"));
}

#[test]
fn text_from_the_scenario_and_the_trace_is_escaped() {
    let p = page("<b>tasky</b>", true);
    assert!(!p.contains("<script>alert"));
    assert!(!p.contains("<b>tasky</b>"));
    assert!(!p.contains("<b>too many</b>"));
    assert!(p.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;quotes&quot;"));
    assert!(p.contains("&lt;b&gt;tasky&lt;/b&gt;"));
    assert!(p.contains("sim-scenarios/x&amp;y.toml"));
}

#[test]
fn the_page_has_the_outcome_lanes_boxes_counters_and_the_replay_command() {
    let p = page("caller", true);
    assert!(p.contains("Violation of widgets.bounded"));
    // The command's words, each kept whole (a line breaks between them).
    assert!(p.contains(
        "<span class=\"word\">nssim</span> <span class=\"word\">replay</span> \
         <span class=\"word\">sim-scenarios/x&amp;y.toml</span> <span class=\"word\">nss1_abc</span>"
    ));
    assert!(p.contains("nss1_abc"));
    assert_eq!(
        p.matches("<rect class=\"lane").count(),
        3,
        "caller, idler, rcu"
    );
    for class in [
        "span syscall failed",
        "span lock",
        "span grace-period",
        "span work",
        "span rcu-read",
    ] {
        assert!(p.contains(&format!("<g class=\"{class}")), "no {class} box");
    }
    assert!(p.contains("class=\"flow\""));
    assert!(p.contains("<g class=\"breaking\">"));
    assert_eq!(p.matches("<polyline class=\"series").count(), 2);
    assert!(p.contains("<polyline class=\"series limit\""));
}

#[test]
fn every_element_that_moves_has_positions_for_both_axes() {
    let p = page("caller", true);
    let steps = p.matches(" data-step=\"").count();
    let times = p.matches(" data-time=\"").count();
    assert!(steps > 20);
    assert_eq!(steps, times);
    assert!(p.contains("<g class=\"axis time\" style=\"display:none\">"));
}
