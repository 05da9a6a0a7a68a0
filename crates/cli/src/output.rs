//! What `nssim` prints.

use crate::junit;
use crate::Format;
use kernel::{catalog, ActivePatches, Errno, Results};
use scenario::{Expect, Scenario};
use serde_json::{json, Map, Value};
use sim::{Event, ExecReport, ShrinkReport};
use std::collections::BTreeMap;

/// The outcome of one (scenario, kernel) run, ready to print.
pub struct RunRecord {
    pub as_expected: bool,
    json: Value,
    text: String,
    case: junit::Case,
}

impl RunRecord {
    /// The record as the text output prints it.
    pub fn text(&self) -> &str {
        &self.text
    }
}

fn results_json(results: &Results) -> Value {
    let mut tasks = Map::new();
    for (task, ops) in results {
        let mut per_op = Map::new();
        for (op, stats) in ops {
            per_op.insert(
                op.clone(),
                json!({
                    "calls": stats.calls,
                    "results": stats.results,
                    "first_failure": stats.first_failure,
                    "values": stats.values,
                }),
            );
        }
        tasks.insert(task.clone(), Value::Object(per_op));
    }
    Value::Object(tasks)
}

fn results_text(results: &Results) -> String {
    let mut lines = Vec::new();
    for (task, ops) in results {
        for (op, stats) in ops {
            let counts: Vec<String> = stats
                .results
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect();
            let first = stats
                .first_failure
                .map(|i| format!(", first failure at call {i}"))
                .unwrap_or_default();
            let values = if stats.values.is_empty() {
                String::new()
            } else {
                let v: Vec<String> = stats.values.iter().map(u64::to_string).collect();
                format!("; values {}", v.join(", "))
            };
            lines.push(format!(
                "    {task}: {op}: {}{first}{values}",
                counts.join(", ")
            ));
        }
    }
    lines.join("\n")
}

impl RunRecord {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        sc: &Scenario,
        label: &str,
        patches: &ActivePatches,
        strategy: &str,
        seed: u64,
        expect: Option<&Expect>,
        executions: u64,
        exhausted: bool,
        shrink: Option<ShrinkReport>,
        report: &ExecReport,
        token: String,
        results: &Results,
    ) -> RunRecord {
        let outcome = &report.outcome;
        let mismatches = expect.map_or_else(Vec::new, |e| result_mismatches(&e.results, results));
        let as_expected = mismatches.is_empty()
            && expect.is_none_or(|e| {
                e.outcome.as_str() == outcome.kind()
                    && e.invariant
                        .as_deref()
                        .is_none_or(|i| Some(i) == outcome.invariant())
            });
        let expected = expect.map(|e| e.outcome.as_str());
        let json = json!({
            "scenario": sc.name,
            "file": sc.path.display().to_string(),
            "kernel": label,
            "profile": patches.profile,
            "patches": patches.names(),
            "strategy": strategy,
            "seed": seed,
            "outcome": outcome.kind(),
            "invariant": outcome.invariant(),
            "detail": if outcome.is_failure() { Value::String(outcome.to_string()) } else { Value::Null },
            "expected": expected,
            "expected_invariant": expect.and_then(|e| e.invariant.clone()),
            "as_expected": as_expected,
            "executions": executions,
            "exhausted": exhausted,
            "shrink": shrink.map(|s| json!({
                "steps_before": s.steps_before,
                "steps_after": s.steps_after,
                "preemptions_before": s.preemptions_before,
                "preemptions_after": s.preemptions_after,
                "attempts": s.attempts,
                "stopped_at_deadline": s.stopped_at_deadline,
            })),
            "steps": report.steps,
            "virtual_ns": report.virtual_ns,
            "token": token,
            "trace_hash": format!("{:016x}", report.trace_hash),
            "results": results_json(results),
            "result_mismatches": mismatches,
        });
        let mark = if as_expected { "ok  " } else { "FAIL" };
        let expectation = match expect {
            Some(e) => match &e.invariant {
                Some(i) => format!("expected {} of {i}", e.outcome.as_str()),
                None => format!("expected {}", e.outcome.as_str()),
            },
            None => "no expectation".into(),
        };
        let exhausted_note = if exhausted { ", search exhausted" } else { "" };
        let mut text = format!(
            "{mark} {} [{label}] {} ({expectation}) after {executions} execution(s) of {strategy} seed {seed}{exhausted_note}; {} steps, {} virtual",
            sc.name,
            outcome.kind(),
            report.steps,
            scenario::format_duration(report.virtual_ns),
        );
        if outcome.is_failure() {
            text.push_str(&format!("\n    {outcome}"));
        }
        for m in &mismatches {
            text.push_str(&format!("\n    not as expected: {m}"));
        }
        if let Some(s) = shrink {
            text.push_str(&format!(
                "\n    shrunk from {} steps ({} preemptions) to {} steps ({} preemptions) in {} executions",
                s.steps_before, s.preemptions_before, s.steps_after, s.preemptions_after, s.attempts
            ));
            if s.stopped_at_deadline {
                text.push_str(
                    ", stopped at the --timeout deadline: the shortest schedule found by then",
                );
            }
        }
        let res = results_text(results);
        if !res.is_empty() {
            text.push('\n');
            text.push_str(&res);
        }
        text.push_str(&format!(
            "\n    token {token}\n    replay: nssim replay {} {token}",
            crate::run::shown(&sc.path)
        ));
        let case = junit::Case {
            scenario: sc.name.clone(),
            kernel: label.to_string(),
            passed: as_expected,
            message: format!("{} ({expectation})", outcome),
            details: format!(
                "token {token}\nreplay: nssim replay {} {token}",
                sc.path.display()
            ),
        };
        RunRecord {
            as_expected,
            json,
            text,
            case,
        }
    }

    /// Add notes on what the run could not do in time.
    pub fn with_notes(mut self, notes: Vec<String>) -> RunRecord {
        if notes.is_empty() {
            return self;
        }
        let replay_at = self.text.find("\n    token ").unwrap_or(self.text.len());
        let lines: String = notes.iter().map(|n| format!("\n    note: {n}")).collect();
        self.text.insert_str(replay_at, &lines);
        self.json["notes"] = notes.into();
        self
    }

    /// This run as a JUnit test case.
    pub fn junit_case(self) -> junit::Case {
        self.case
    }
}

/// How the reported execution's syscall results differ from the
/// scenario's `results` expectations, one line each.
fn result_mismatches(expected: &[scenario::ExpectedResult], results: &Results) -> Vec<String> {
    let mut out = Vec::new();
    for want in expected {
        let mut got: BTreeMap<&str, u64> = BTreeMap::new();
        let mut values: Vec<u64> = Vec::new();
        for ops in results
            .iter()
            .filter(|(t, _)| want.matches_task(t))
            .map(|(_, ops)| ops)
        {
            for stats in ops
                .iter()
                .filter(|(l, _)| want.matches_label(l))
                .map(|(_, s)| s)
            {
                for (result, n) in &stats.results {
                    *got.entry(result.as_str()).or_default() += n;
                }
                values.extend(&stats.values);
            }
        }
        let as_wanted = if want.at_least_once {
            got.contains_key(want.result.as_str())
        } else {
            !got.is_empty() && got.keys().all(|r| *r == want.result)
        };
        if !as_wanted {
            let seen = if got.is_empty() {
                "no call".to_string()
            } else {
                got.iter()
                    .map(|(r, n)| format!("{r} {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            out.push(format!(
                "{} {}: expected {}{}, got {seen}",
                want.task,
                want.op,
                if want.at_least_once { "some " } else { "" },
                want.result
            ));
        }
        if let Some(want_values) = &want.values {
            if *want_values != values {
                out.push(format!(
                    "{} {}: expected values {want_values:?}, got {values:?}",
                    want.task, want.op
                ));
            }
        }
    }
    out
}

/// A run this shard leaves to another (dfs and fair runs belong to shard 1).
pub fn print_skipped(sc: &Scenario, label: &str, format: Format) {
    if format == Format::Text {
        println!("skip {} [{label}]: not in this shard", sc.name);
    }
}

/// The closing line, `N passed, N failed`: on standard output for text, on
/// standard error for JSON (whose output stays one object per line).
pub fn print_summary(passed: usize, failed: usize, format: Format) {
    let line = format!("{passed} passed, {failed} failed");
    match format {
        Format::Text => println!("\n{line}"),
        Format::Json => eprintln!("{line}"),
    }
}

pub fn print_record(r: &RunRecord, format: Format) {
    match format {
        Format::Json => println!("{}", r.json),
        Format::Text => println!("{}", r.text),
    }
}

/// How a note's value reads: syscall results as errno names.
fn describe(e: &Event) -> Option<String> {
    match e.label {
        "unshare" | "syscall" => Some(if e.value == 0 {
            "ok".into()
        } else {
            Errno::from_return(e.value).map_or(e.value.to_string(), |x| x.name().to_string())
        }),
        "free_ipc: batch" => Some(format!("{} namespaces", e.value)),
        _ => None,
    }
}

pub fn print_steps(report: &ExecReport) {
    print!("{}", report::steps::render(report, &describe));
}

pub fn print_kernels() {
    println!("Kernel profiles (a release and the patches it has):");
    for p in catalog::PROFILES {
        let patches = if p.patches().is_empty() {
            "-".to_string()
        } else {
            p.patches().join(", ")
        };
        println!(
            "  {:<8} {}\n           patches: {patches}",
            p.name, p.summary
        );
    }
    println!("\nPatches (turn on or off with --patch +NAME / --patch -NAME):");
    for p in catalog::PATCHES {
        let merged = p
            .merged_in
            .map_or("never merged".to_string(), |v| format!("merged in {v}"));
        println!("  {:<26} ({merged}) {}", p.name, p.summary);
    }
    println!("\nInvariants:");
    for i in catalog::INVARIANTS {
        println!("  {:<22} {}", i.name, i.summary);
    }
    println!("\nCost table (defaults; a scenario's [costs] overrides them):");
    for c in catalog::costs() {
        println!(
            "  {:<24} {:>10}  {}",
            c.name,
            scenario::format_duration(c.default_ns),
            c.summary
        );
    }
}
