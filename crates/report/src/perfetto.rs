//! Chrome trace-event JSON (the object form, `{"traceEvents": [...]}`),
//! which ui.perfetto.dev and chrome://tracing load.
//!
//! One process for the execution, one thread track per task and one for
//! RCU grace periods. On a task's track: a complete slice (`X`) for every
//! step, and around them slices for syscalls, lock holds, grace-period
//! waits, work runs and RCU read-side sections; instants (`i`) for results,
//! frees and the breaking step; counters (`C`) for every `counter:` note;
//! a flow (`s` → `f`) from each `schedule_work` to the `work_run` it caused.
//! Slices on one track always nest: one that would overlap another without
//! nesting goes on an extra track of the same task.

use crate::model::{nest, Mark, MarkKind, Model, Span, SpanKind};
use serde_json::json;
use sim::EventKind;
use std::collections::HashMap;
use std::fmt::Write;

/// What the trace says about where it comes from.
pub struct Meta<'a> {
    pub scenario: &'a str,
    pub kernel: &'a str,
    pub token: &'a str,
    pub replay_command: &'a str,
}

const PID: u64 = 1;
/// First thread id of the extra tracks.
const EXTRA_TIDS: u64 = 1000;

/// Virtual nanoseconds as trace-event microseconds (JSON number).
fn us(ns: u64) -> String {
    if ns.is_multiple_of(1000) {
        (ns / 1000).to_string()
    } else {
        (ns as f64 / 1000.0).to_string()
    }
}

/// A JSON string.
fn js(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// A JSON object from keys and values that are JSON already.
fn object(pairs: &[(&str, String)]) -> String {
    let fields: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{}:{v}", js(k)))
        .collect();
    format!("{{{}}}", fields.join(","))
}

/// A complete slice before it is placed on a track.
struct Slice {
    name: String,
    cat: &'static str,
    start: u64,
    end: u64,
    /// JSON object.
    args: String,
    /// The step event it draws, for flows.
    step: Option<usize>,
}

/// Writes the events as JSON text, one a line.
struct Writer<'m> {
    m: &'m Model<'m>,
    out: String,
    events: usize,
    next_extra: u64,
    sort_index: u64,
    /// Track of each step's slice.
    step_tid: HashMap<usize, u64>,
}

/// Render `m` as trace-event JSON.
pub fn render(m: &Model, meta: &Meta) -> String {
    let mut w = Writer {
        m,
        out: String::from("{\"traceEvents\":[\n"),
        events: 0,
        next_extra: EXTRA_TIDS,
        sort_index: 0,
        step_tid: HashMap::new(),
    };
    let process = format!("nssim {} [{}]", meta.scenario, meta.kernel);
    w.metadata("process_name", 0, &object(&[("name", js(&process))]));
    for t in m.task_order() {
        let slices = task_slices(m, t);
        w.track(task_tid(t), m.task_name(t), slices);
    }
    w.track(rcu_tid(m), "rcu grace periods", rcu_slices(m));
    w.instants();
    w.counters();
    w.flows();
    let other = json!({
        "scenario": meta.scenario,
        "kernel": meta.kernel,
        "outcome": m.report.outcome.to_string(),
        "token": meta.token,
        "replay": meta.replay_command,
        "steps": m.report.steps,
        "virtual_ns": m.report.virtual_ns,
    });
    let _ = write!(
        w.out,
        "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{other}}}\n"
    );
    w.out
}

fn task_tid(t: usize) -> u64 {
    t as u64 + 1
}

fn rcu_tid(m: &Model) -> u64 {
    m.report.task_names.len() as u64 + 1
}

impl Writer<'_> {
    /// One event: `name`, `ph`, `ts`, `tid` and further `"key":value` text.
    fn event(&mut self, name: &str, ph: &str, ts: &str, tid: u64, rest: &str) {
        if self.events > 0 {
            self.out.push_str(",\n");
        }
        self.events += 1;
        let _ = write!(
            self.out,
            "{{\"name\":{},\"ph\":\"{ph}\",\"ts\":{ts},\"pid\":{PID},\"tid\":{tid}{rest}}}",
            js(name)
        );
    }

    fn metadata(&mut self, name: &str, tid: u64, args: &str) {
        self.event(name, "M", "0", tid, &format!(",\"args\":{args}"));
    }

    fn thread(&mut self, tid: u64, name: &str) {
        self.metadata("thread_name", tid, &object(&[("name", js(name))]));
        let index = object(&[("sort_index", self.sort_index.to_string())]);
        self.metadata("thread_sort_index", tid, &index);
        self.sort_index += 1;
    }

    /// Place `slices` on `tid` and, where they would not nest, extra tracks.
    fn track(&mut self, tid: u64, name: &str, slices: Vec<Slice>) {
        let intervals: Vec<(u64, u64)> = slices.iter().map(|s| (s.start, s.end)).collect();
        let places = nest(&intervals);
        let subs = places.iter().map(|p| p.sub + 1).max().unwrap_or(1);
        let mut tids = vec![tid];
        self.thread(tid, name);
        for k in 1..subs {
            tids.push(self.next_extra);
            self.thread(self.next_extra, &format!("{name} ({})", k + 1));
            self.next_extra += 1;
        }
        let mut order: Vec<usize> = (0..slices.len()).collect();
        order.sort_by_key(|&i| (intervals[i].0, std::cmp::Reverse(intervals[i].1), i));
        for i in order {
            let s = &slices[i];
            let tid = tids[places[i].sub];
            if let Some(step) = s.step {
                self.step_tid.insert(step, tid);
            }
            let rest = format!(
                ",\"cat\":\"{}\",\"dur\":{},\"args\":{}",
                s.cat,
                us(s.end - s.start),
                s.args
            );
            self.event(&s.name, "X", &us(s.start), tid, &rest);
        }
    }

    fn instants(&mut self) {
        let m = self.m;
        for mark in m.marks.iter().filter(|mk| mk.kind != MarkKind::Note) {
            let e = &m.events[mark.event];
            let args = object(&[("step", e.step.to_string())]);
            self.instant(&mark.text, mark_cat(mark), e.time, task_tid(e.task), &args);
        }
        if let Some(b) = m.breaking {
            let e = &m.events[b];
            let name = format!("breaks the run: {}", m.report.outcome.kind());
            let args = object(&[
                ("step", e.step.to_string()),
                ("outcome", js(&m.report.outcome.to_string())),
            ]);
            self.instant(&name, "outcome", e.time, task_tid(e.task), &args);
        }
    }

    fn instant(&mut self, name: &str, cat: &str, time: u64, tid: u64, args: &str) {
        let rest = format!(",\"cat\":\"{cat}\",\"s\":\"t\",\"args\":{args}");
        self.event(name, "i", &us(time), tid, &rest);
    }

    fn counters(&mut self) {
        let m = self.m;
        for series in &m.series {
            for &(i, value) in &series.points {
                let e = &m.events[i];
                let rest = format!(",\"cat\":\"counter\",\"args\":{{\"value\":{value}}}");
                self.event(&series.name, "C", &us(e.time), task_tid(e.task), &rest);
            }
        }
    }

    fn flows(&mut self) {
        let m = self.m;
        for (id, f) in m.flows.iter().enumerate() {
            let name = format!("schedule_work {}", m.object(f.obj));
            for (ph, i) in [("s", f.from), ("f", f.to)] {
                let e = &m.events[i];
                let tid = self.step_tid.get(&i).copied().unwrap_or(task_tid(e.task));
                let (_, end) = m.step_end(i);
                let mid = e.time + end.saturating_sub(e.time) / 2;
                let rest = format!(",\"cat\":\"work\",\"id\":{},\"bp\":\"e\"", id + 1);
                self.event(&name, ph, &us(mid), tid, &rest);
            }
        }
    }
}

fn mark_cat(mark: &Mark) -> &'static str {
    match mark.kind {
        MarkKind::Ok | MarkKind::Error => "result",
        MarkKind::Queued | MarkKind::Freed | MarkKind::UseAfterFree => "lifetime",
        MarkKind::Exit | MarkKind::Panic => "task",
        MarkKind::Note => "note",
    }
}

/// Every step of task `t`, and every span of it.
fn task_slices(m: &Model, t: usize) -> Vec<Slice> {
    let mut slices: Vec<Slice> = m
        .spans
        .iter()
        .filter(|s| s.task == t)
        .map(|s| span_slice(m, s, span_title(m, s)))
        .collect();
    for (i, e) in m.events.iter().enumerate() {
        if e.task != t || e.kind != EventKind::Step {
            continue;
        }
        let name = format!("{} {}", e.label, m.object(e.obj));
        slices.push(Slice {
            name: name.trim_end().to_string(),
            cat: "step",
            start: e.time,
            end: m.step_end(i).1.max(e.time),
            args: object(&[("step", e.step.to_string())]),
            step: Some(i),
        });
    }
    slices
}

/// Grace periods of every task, on the rcu track.
fn rcu_slices(m: &Model) -> Vec<Slice> {
    m.spans
        .iter()
        .filter(|s| s.kind == SpanKind::GracePeriod)
        .map(|s| span_slice(m, s, format!("grace period ({})", m.task_name(s.task))))
        .collect()
}

fn span_title(m: &Model, s: &Span) -> String {
    match s.kind {
        SpanKind::Syscall => m.call(s),
        SpanKind::Lock => format!("holds {}", s.name),
        SpanKind::GracePeriod => "grace period".into(),
        SpanKind::Work => format!("runs {}", s.name),
        SpanKind::RcuRead => format!("rcu read-side ({})", m.task_name(s.task)),
    }
}

fn span_slice(m: &Model, s: &Span, name: String) -> Slice {
    let (start, end) = m.span_time(s);
    let mut args = vec![
        ("first step", m.events[s.first].step.to_string()),
        ("summary", js(&m.describe_span(s))),
    ];
    if let Some(l) = s.last {
        args.push(("last step", m.events[l].step.to_string()));
    }
    let obj = m.object(s.obj);
    if !obj.is_empty() {
        args.push(("object", js(&obj)));
    }
    if let Some(r) = &s.result {
        args.push(("result", js(r)));
    }
    Slice {
        name,
        cat: s.kind.as_str(),
        start,
        end,
        args: object(&args),
        step: None,
    }
}
