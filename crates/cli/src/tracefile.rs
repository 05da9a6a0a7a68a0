//! Trace files: one execution as JSON, with its token, its named schedule
//! and every event, stamped with a format version and the nssim version.
//! `nssim replay SCENARIO FILE` replays the execution a trace file holds.

use crate::run::CliError;
use scenario::Scenario;
use serde_json::{json, Value};
use sim::{EventKind, ExecReport, ObjId, Schedule, Token};
use std::path::Path;

pub const FORMAT: &str = "nssim-trace";
pub const FORMAT_VERSION: u64 = 1;

fn schedule_text(schedule: &Schedule) -> Value {
    match schedule {
        Schedule::Segments(segments) => Value::Array(
            segments
                .iter()
                .map(|s| Value::String(s.to_string()))
                .collect(),
        ),
        Schedule::Random { seed, iteration } => {
            json!(format!("random seed {seed} iteration {iteration}"))
        }
        Schedule::Pct {
            seed,
            iteration,
            depth,
            ..
        } => json!(format!(
            "pct depth {depth} seed {seed} iteration {iteration}"
        )),
        Schedule::Fair => json!("fair"),
        Schedule::Choices(c) => json!(format!("{} explicit choices", c.len())),
    }
}

fn object(report: &ExecReport, obj: ObjId) -> Value {
    if obj == ObjId::NONE {
        return Value::Null;
    }
    report
        .object_names
        .get(obj.0 as usize)
        .map_or(Value::Null, |n| Value::String(n.clone()))
}

/// The trace file of a recorded execution.
pub fn render(sc: &Scenario, kernel: &str, token: &Token, report: &ExecReport) -> String {
    let events: Vec<Value> = report
        .events
        .iter()
        .flatten()
        .map(|e| {
            json!({
                "step": e.step,
                "time": e.time,
                "task": report.task_names.get(e.task),
                "kind": if e.kind == EventKind::Step { "step" } else { "note" },
                "op": e.label,
                "object": object(report, e.obj),
                "value": e.value,
            })
        })
        .collect();
    let doc = json!({
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "nssim_version": env!("CARGO_PKG_VERSION"),
        "scenario": sc.name,
        "file": sc.path.display().to_string(),
        "kernel": kernel,
        "token": token.encode(),
        "schedule": schedule_text(&token.schedule),
        "outcome": report.outcome.kind(),
        "detail": report.outcome.is_failure().then(|| report.outcome.to_string()),
        "steps": report.steps,
        "virtual_ns": report.virtual_ns,
        "trace_hash": format!("{:016x}", report.trace_hash),
        "tasks": report.task_names,
        "events": events,
    });
    serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
}

/// What `replay` needs from a trace file: its token and trace hash.
pub struct Loaded {
    pub token: String,
    pub trace_hash: Option<String>,
}

/// Read a trace file, with errors that say where and what is wrong.
pub fn load(path: &Path) -> Result<Loaded, CliError> {
    let at = crate::run::shown(path);
    let text = std::fs::read(path)
        .map_err(|e| CliError(format!("error: cannot read trace file {at}: {e}")))?;
    let doc: Value = serde_json::from_slice(&text).map_err(|e| {
        CliError(format!(
            "error: {at}:{}:{}: not a valid trace file: {e}",
            e.line(),
            e.column()
        ))
    })?;
    if doc.get("format").and_then(Value::as_str) != Some(FORMAT) {
        return Err(CliError(format!(
            "error: {at}: not an nssim trace file (expected \"format\": \"{FORMAT}\")"
        )));
    }
    let version = doc.get("format_version").and_then(Value::as_u64);
    if version != Some(FORMAT_VERSION) {
        return Err(CliError(format!(
            "error: {at}: trace format version {} is not one this nssim reads (it reads {FORMAT_VERSION})",
            version.map_or("missing".to_string(), |v| v.to_string())
        )));
    }
    let token = doc.get("token").and_then(Value::as_str).ok_or_else(|| {
        CliError(format!(
            "error: {at}: the trace file has no \"token\" string"
        ))
    })?;
    Ok(Loaded {
        token: token.to_string(),
        trace_hash: doc
            .get("trace_hash")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

/// Write `text` to `path`, naming the file in the error.
pub fn write(path: &Path, text: &str) -> Result<(), CliError> {
    std::fs::write(path, text).map_err(|e| {
        CliError(format!(
            "error: cannot write trace file {}: {e}",
            crate::run::shown(path)
        ))
    })
}
