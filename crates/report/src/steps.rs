//! The step-by-step listing of an execution: one line per scheduling point
//! (task, virtual time, operation, object) and one per recorded result.

use sim::{Event, EventKind, ExecReport};
use std::fmt::Write;

/// Virtual time for listings: nanoseconds with a unit.
pub fn time(ns: u64) -> String {
    match ns {
        0..=9_999 => format!("{ns}ns"),
        10_000..=9_999_999 => format!("{:.3}us", ns as f64 / 1e3),
        10_000_000..=9_999_999_999 => format!("{:.3}ms", ns as f64 / 1e6),
        _ => format!("{:.3}s", ns as f64 / 1e9),
    }
}

/// Render every event; `describe` turns a note into words when it knows it.
pub fn render(report: &ExecReport, describe: &dyn Fn(&Event) -> Option<String>) -> String {
    let mut out = String::new();
    let Some(events) = &report.events else {
        return out;
    };
    let width = report
        .task_names
        .iter()
        .map(|n| n.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let _ = writeln!(
        out,
        "{:>7}  {:>12}  {:<width$}  operation",
        "step", "time", "task"
    );
    for e in events {
        let task = report.task_names.get(e.task).map_or("?", |s| s.as_str());
        let obj = crate::model::object_name(report, e.obj);
        match e.kind {
            EventKind::Step => {
                let _ = writeln!(
                    out,
                    "{:>7}  {:>12}  {task:<width$}  {} {obj}",
                    e.step,
                    time(e.time),
                    e.label
                );
            }
            EventKind::Note => {
                let what = describe(e).unwrap_or_else(|| {
                    if e.value == 0 {
                        String::new()
                    } else {
                        e.value.to_string()
                    }
                });
                let _ = writeln!(
                    out,
                    "{:>7}  {:>12}  {task:<width$}    = {} {obj} {what}",
                    "", "", e.label
                );
            }
        }
    }
    out
}
