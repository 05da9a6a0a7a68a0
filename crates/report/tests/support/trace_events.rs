//! Checks Chrome trace-event JSON as a loader (ui.perfetto.dev,
//! chrome://tracing) needs it: the fields each phase requires, names for
//! every track, matched flows, and complete slices that nest on every
//! track (none overlaps another without containing it).

use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// What a valid trace holds.
#[derive(Debug, Default)]
pub struct Summary {
    /// Events per phase.
    pub phases: BTreeMap<String, usize>,
    /// Track names by thread id.
    pub threads: BTreeMap<u64, String>,
    /// Names of the events of each phase.
    pub names: BTreeMap<String, Vec<String>>,
}

fn field<'a>(e: &'a Value, key: &str, at: usize) -> Result<&'a Value, String> {
    e.get(key)
        .ok_or_else(|| format!("event {at} has no `{key}`: {e}"))
}

fn number(e: &Value, key: &str, at: usize) -> Result<f64, String> {
    field(e, key, at)?
        .as_f64()
        .ok_or_else(|| format!("event {at}: `{key}` is not a number: {e}"))
}

fn id(e: &Value, key: &str, at: usize) -> Result<u64, String> {
    field(e, key, at)?
        .as_u64()
        .ok_or_else(|| format!("event {at}: `{key}` is not an unsigned integer: {e}"))
}

/// A complete slice: start and end in nanoseconds, index in the events.
type Slice = (i64, i64, usize);

/// Microseconds as integer nanoseconds, as the loader rounds them.
fn ns(us: f64) -> i64 {
    (us * 1000.0).round() as i64
}

/// Check `trace`; on success, say what it holds.
pub fn check(trace: &Value) -> Result<Summary, String> {
    let events = trace["traceEvents"]
        .as_array()
        .ok_or("no `traceEvents` array")?;
    match trace["displayTimeUnit"].as_str() {
        Some("ms" | "ns") => {}
        other => {
            return Err(format!(
                "displayTimeUnit is {other:?}, not \"ms\" or \"ns\""
            ))
        }
    }
    let mut summary = Summary::default();
    let mut slices: HashMap<(u64, u64), Vec<Slice>> = HashMap::new();
    let mut flows: HashMap<String, (usize, usize)> = HashMap::new();
    for (at, e) in events.iter().enumerate() {
        let name = field(e, "name", at)?
            .as_str()
            .ok_or_else(|| format!("event {at}: `name` is not a string"))?;
        let ph = field(e, "ph", at)?
            .as_str()
            .ok_or_else(|| format!("event {at}: `ph` is not a string"))?;
        let ts = number(e, "ts", at)?;
        let (pid, tid) = (id(e, "pid", at)?, id(e, "tid", at)?);
        *summary.phases.entry(ph.to_string()).or_default() += 1;
        summary
            .names
            .entry(ph.to_string())
            .or_default()
            .push(name.to_string());
        match ph {
            "X" => {
                let dur = number(e, "dur", at)?;
                if dur < 0.0 {
                    return Err(format!("event {at}: negative dur: {e}"));
                }
                let start = ns(ts);
                slices
                    .entry((pid, tid))
                    .or_default()
                    .push((start, start + ns(dur), at));
            }
            "i" | "I" => {
                if let Some(s) = e.get("s") {
                    if !matches!(s.as_str(), Some("t" | "p" | "g")) {
                        return Err(format!("event {at}: instant scope {s} is not t, p or g"));
                    }
                }
            }
            "C" => check_counter(e, at)?,
            "s" | "f" => {
                let flow = field(e, "id", at)?.to_string();
                if ph == "f" && e["bp"] != "e" {
                    return Err(format!("event {at}: flow end without bp \"e\": {e}"));
                }
                let entry = flows.entry(flow).or_default();
                if ph == "s" {
                    entry.0 += 1;
                } else {
                    entry.1 += 1;
                }
            }
            "M" => check_metadata(e, at, name, tid, &mut summary)?,
            other => return Err(format!("event {at}: unexpected phase {other:?}")),
        }
    }
    for (flow, (starts, ends)) in &flows {
        if (*starts, *ends) != (1, 1) {
            return Err(format!("flow {flow}: {starts} start(s), {ends} end(s)"));
        }
    }
    for ((_, tid), list) in &mut slices {
        if !summary.threads.contains_key(tid) {
            return Err(format!("track {tid} has slices but no thread_name"));
        }
        check_nesting(*tid, list)?;
    }
    Ok(summary)
}

fn check_counter(e: &Value, at: usize) -> Result<(), String> {
    let args = field(e, "args", at)?
        .as_object()
        .ok_or_else(|| format!("event {at}: counter args is not an object"))?;
    if args.is_empty() || !args.values().all(Value::is_number) {
        return Err(format!("event {at}: counter args must be numbers: {e}"));
    }
    Ok(())
}

fn check_metadata(
    e: &Value,
    at: usize,
    name: &str,
    tid: u64,
    summary: &mut Summary,
) -> Result<(), String> {
    let args = field(e, "args", at)?;
    match name {
        "process_name" | "thread_name" => {
            let value = args["name"]
                .as_str()
                .ok_or_else(|| format!("event {at}: {name} without args.name"))?;
            if name == "thread_name" {
                summary.threads.insert(tid, value.to_string());
            }
        }
        "thread_sort_index" | "process_sort_index" => {
            args["sort_index"]
                .as_i64()
                .ok_or_else(|| format!("event {at}: {name} without args.sort_index"))?;
        }
        other => return Err(format!("event {at}: unexpected metadata {other}")),
    }
    Ok(())
}

/// In the order a loader reads them (by start, longer first), each slice
/// lies within the innermost slice still open when it starts.
fn check_nesting(tid: u64, list: &mut [Slice]) -> Result<(), String> {
    list.sort_by_key(|&(start, end, at)| (start, std::cmp::Reverse(end), at));
    let mut open: Vec<Slice> = Vec::new();
    for &(start, end, at) in list.iter() {
        while open.last().is_some_and(|o| o.1 <= start) {
            open.pop();
        }
        if let Some(&(ps, pe, pat)) = open.last() {
            if end > pe {
                return Err(format!(
                    "track {tid}: slice {at} [{start}, {end}] ns overlaps slice {pat} [{ps}, {pe}] ns without nesting"
                ));
            }
        }
        open.push((start, end, at));
    }
    Ok(())
}
