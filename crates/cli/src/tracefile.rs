//! Trace files: one execution as JSON, with its token, its named schedule
//! and every event, stamped with a format version and the nssim version.
//! `nssim replay SCENARIO FILE` replays the execution a trace file holds.

use crate::error::CliError;
use scenario::Scenario;
use serde::ser::{SerializeSeq, Serializer};
use serde::Serialize;
use serde_json::{json, Value};
use sim::{EventKind, ExecReport, ObjId, Schedule, Token};
use std::path::Path;
use std::time::Instant;

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

/// The trace file of a recorded execution, or `None` when `deadline`
/// passes while it is rendered (an execution of a million steps is a file
/// of hundreds of megabytes, and `--timeout` bounds the whole run).
pub fn render(
    sc: &Scenario,
    kernel: &str,
    token: &Token,
    report: &ExecReport,
    deadline: Option<Instant>,
) -> Option<String> {
    // The fields in alphabetical order: the order of a JSON object's keys
    // in serde_json, which earlier versions of the file were written in.
    #[derive(Serialize)]
    struct Doc<'a> {
        detail: Option<String>,
        events: Events<'a>,
        file: String,
        format: &'static str,
        format_version: u64,
        kernel: &'a str,
        nssim_version: &'static str,
        outcome: &'a str,
        scenario: &'a str,
        schedule: Value,
        steps: u64,
        tasks: &'a [String],
        token: String,
        trace_hash: String,
        virtual_ns: u64,
    }
    let doc = Doc {
        detail: report
            .outcome
            .is_failure()
            .then(|| report.outcome.to_string()),
        events: Events { report, deadline },
        file: sc.path.display().to_string(),
        format: FORMAT,
        format_version: FORMAT_VERSION,
        kernel,
        nssim_version: env!("CARGO_PKG_VERSION"),
        outcome: report.outcome.kind(),
        scenario: &sc.name,
        schedule: schedule_text(&token.schedule),
        steps: report.steps,
        tasks: &report.task_names,
        token: token.encode(),
        trace_hash: format!("{:016x}", report.trace_hash),
        virtual_ns: report.virtual_ns,
    };
    // The only error serialising can give is the deadline's.
    serde_json::to_string_pretty(&doc).ok().map(|s| s + "\n")
}

/// The events of a trace file, serialised one by one with the deadline
/// read every few thousand of them.
struct Events<'a> {
    report: &'a ExecReport,
    deadline: Option<Instant>,
}

impl Serialize for Events<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let report = self.report;
        let mut seq = serializer.serialize_seq(None)?;
        for (i, e) in report.events.iter().flatten().enumerate() {
            if i % 4096 == 4095 && self.deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(serde::ser::Error::custom("the --timeout deadline passed"));
            }
            seq.serialize_element(&json!({
                "step": e.step,
                "time": e.time,
                "task": report.task_names.get(e.task),
                "kind": if e.kind == EventKind::Step { "step" } else { "note" },
                "op": e.label,
                "object": object(report, e.obj),
                "value": e.value,
            }))?;
        }
        seq.end()
    }
}

/// What `replay` takes from a trace file: its token, and what the file
/// says the execution did, to be compared with the replay.
#[derive(Debug, Default)]
pub struct Loaded {
    pub token: String,
    pub trace_hash: Option<String>,
    pub scenario: Option<String>,
    pub kernel: Option<String>,
    pub outcome: Option<String>,
    pub steps: Option<u64>,
    /// Step events among `events`.
    pub step_events: Option<u64>,
}

/// The outcome names a trace file may hold.
const OUTCOMES: &[&str] = &[
    "pass",
    "violation",
    "deadlock",
    "panic",
    "use-after-free",
    "limit",
];

/// A JSON value as a message shows it: its kind and, cut, itself.
fn shown_value(v: &Value) -> String {
    let kind = match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "the number",
        Value::Number(n) if n.is_i64() && n.as_i64().is_some_and(|i| i < 0) => "the number",
        Value::Number(_) => "the integer",
        Value::String(_) => "the string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    match v {
        Value::Array(_) | Value::Object(_) | Value::Null => kind.to_string(),
        _ => format!("{kind} {}", sim::echo::echo(&v.to_string())),
    }
}

/// Checks of one trace file's fields, with errors naming the file.
struct Fields<'a> {
    at: &'a str,
    doc: &'a serde_json::Map<String, Value>,
}

impl Fields<'_> {
    fn wrong(&self, key: &str, want: &str, got: &Value) -> CliError {
        CliError(format!(
            "error: {}: \"{key}\" must be {want}, not {}",
            self.at,
            shown_value(got)
        ))
    }

    fn string(&self, key: &str) -> Result<Option<String>, CliError> {
        match self.doc.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(self.wrong(key, "a string", v)),
        }
    }

    fn unsigned(&self, key: &str) -> Result<Option<u64>, CliError> {
        match self.doc.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| self.wrong(key, "an integer of at least 0", v)),
        }
    }
}

/// Each event of `events`: an object of the fields [`render`] writes.
fn check_events(at: &str, events: &[Value]) -> Result<u64, CliError> {
    let mut steps = 0;
    for (i, e) in events.iter().enumerate() {
        let bad = |key: &str, want: &str, got: &Value| {
            CliError(format!(
                "error: {at}: event {i}: \"{key}\" must be {want}, not {}",
                shown_value(got)
            ))
        };
        let Value::Object(map) = e else {
            return Err(bad("events", "an array of objects", e));
        };
        let missing = Value::Null;
        let get = |key: &str| map.get(key).unwrap_or(&missing);
        for key in ["step", "time"] {
            if get(key).as_u64().is_none() {
                return Err(bad(key, "an integer of at least 0", get(key)));
            }
        }
        if !get("value").is_i64() && !get("value").is_u64() {
            return Err(bad("value", "an integer", get("value")));
        }
        if !get("op").is_string() {
            return Err(bad("op", "a string", get("op")));
        }
        for key in ["task", "object"] {
            if !matches!(get(key), Value::String(_) | Value::Null) {
                return Err(bad(key, "a string or null", get(key)));
            }
        }
        match get("kind").as_str() {
            Some("step") => steps += 1,
            Some("note") => {}
            _ => return Err(bad("kind", "\"step\" or \"note\"", get("kind"))),
        }
    }
    Ok(steps)
}

/// Where serde_json puts an error at the end of a line (column 0 of the
/// next): just past the line's last character.
fn syntax_position(text: &[u8], line: usize, column: usize) -> (usize, usize) {
    if column > 0 || line <= 1 {
        return (line, column.max(1));
    }
    let text = String::from_utf8_lossy(text);
    let previous = text.split('\n').nth(line - 2).unwrap_or("");
    (line - 1, previous.chars().count() + 1)
}

/// Read a trace file, with errors that say where and what is wrong.
pub fn load(path: &Path) -> Result<Loaded, CliError> {
    let at = crate::error::shown(path);
    let text = sim::input::read_input(path)
        .map_err(|e| CliError(format!("error: cannot read trace file {at}: {e}")))?;
    let doc: Value = serde_json::from_slice(&text).map_err(|e| {
        let (line, column) = syntax_position(&text, e.line(), e.column());
        CliError(format!(
            "error: {at}:{line}:{column}: not a valid trace file: {}",
            sim::echo::echo_message(&e.to_string())
        ))
    })?;
    let Value::Object(doc) = &doc else {
        return Err(CliError(format!(
            "error: {at}: not an nssim trace file (a JSON object with \"format\": \"{FORMAT}\"), but {}",
            shown_value(&doc)
        )));
    };
    if doc.get("format").and_then(Value::as_str) != Some(FORMAT) {
        return Err(CliError(format!(
            "error: {at}: not an nssim trace file (expected \"format\": \"{FORMAT}\")"
        )));
    }
    let f = Fields { at: &at, doc };
    match doc.get("format_version") {
        None => {
            return Err(CliError(format!(
                "error: {at}: the trace file has no \"format_version\" (this nssim reads {FORMAT_VERSION})"
            )))
        }
        Some(Value::Number(n)) if n.as_u64() == Some(FORMAT_VERSION) => {}
        Some(v @ Value::Number(n)) if n.is_u64() || n.is_i64() => {
            return Err(CliError(format!(
                "error: {at}: trace format version {} is not one this nssim reads (it reads {FORMAT_VERSION})",
                sim::echo::echo(&v.to_string())
            )))
        }
        Some(v) => return Err(f.wrong("format_version", "an integer (1)", v)),
    }
    let token = f.string("token")?.ok_or_else(|| {
        CliError(format!(
            "error: {at}: the trace file has no \"token\" string"
        ))
    })?;
    let trace_hash = f.string("trace_hash")?;
    if let Some(h) = &trace_hash {
        if h.len() != 16 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(f.wrong(
                "trace_hash",
                "16 hexadecimal digits",
                &Value::String(h.clone()),
            ));
        }
    }
    let outcome = f.string("outcome")?;
    if let Some(o) = &outcome {
        if !OUTCOMES.contains(&o.as_str()) {
            return Err(f.wrong(
                "outcome",
                &format!("one of {}", OUTCOMES.join(", ")),
                &Value::String(o.clone()),
            ));
        }
    }
    let step_events = match doc.get("events") {
        None => None,
        Some(Value::Array(events)) => Some(check_events(&at, events)?),
        Some(v) => return Err(f.wrong("events", "an array of objects", v)),
    };
    Ok(Loaded {
        token,
        trace_hash,
        scenario: f.string("scenario")?,
        kernel: f.string("kernel")?,
        outcome,
        steps: f.unsigned("steps")?,
        step_events,
    })
}

/// What a trace file says that its replay did not do, one line each.
pub fn disagreements(
    loaded: &Loaded,
    scenario: &str,
    kernel: &str,
    report: &ExecReport,
) -> Vec<String> {
    let mut out = Vec::new();
    let mut differs = |what: &str, file: String, replay: String| {
        if file != replay {
            out.push(format!(
                "the trace file's {what} is {}, the replay's {}",
                sim::echo::echo(&file),
                sim::echo::echo(&replay)
            ));
        }
    };
    if let Some(s) = &loaded.scenario {
        differs("scenario", s.clone(), scenario.to_string());
    }
    if let Some(k) = &loaded.kernel {
        differs("kernel", k.clone(), kernel.to_string());
    }
    if let Some(o) = &loaded.outcome {
        differs("outcome", o.clone(), report.outcome.kind().to_string());
    }
    if let Some(n) = loaded.steps {
        differs("steps", n.to_string(), report.steps.to_string());
    }
    if let Some(n) = loaded.step_events {
        differs(
            "number of step events",
            n.to_string(),
            report.steps.to_string(),
        );
    }
    out
}

/// Write `text` to `path`, naming the file in the error.
pub fn write(path: &Path, text: &str) -> Result<(), CliError> {
    std::fs::write(path, text).map_err(|e| {
        CliError(format!(
            "error: cannot write trace file {}: {e}",
            crate::error::shown(path)
        ))
    })
}
