//! One reading of an execution's events, shared by the views.
//!
//! The model code records facts as notes (see the crate's conventions in
//! `docs/views.md`): `acquired`/`released` on a lock, `gp_start`/`gp_end`
//! of a grace period, `work_done` after a `work_run` step, a syscall's
//! result as a note with the syscall's label, `counter:NAME` with a
//! counter's new value, `queued`, `freed`, `use-after-free`, `exit`,
//! `panic`. [`Model::build`] turns them into spans, marks, flows and series.

use sim::{Event, EventKind, ExecReport, ObjId, TaskId};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

/// What the caller knows about the model's vocabulary.
pub struct Lexicon<'a> {
    /// Words for a note's value when known (e.g. `ENOSPC` for an `unshare`
    /// result of -28).
    pub describe: &'a dyn Fn(&Event) -> Option<String>,
    /// Whether a step label is the entry of a syscall (e.g. `unshare`).
    pub is_syscall: &'a dyn Fn(&str) -> bool,
    /// Whether a counter (named without its `counter:` prefix) is a limit.
    pub is_limit: &'a dyn Fn(&str) -> bool,
    /// Counters that are the sum of others, drawn against their limit:
    /// (name, the counters added up), named as their notes' labels are
    /// (`counter:...`).
    pub sums: &'a [(&'a str, &'a [&'a str])],
    /// The errno a kernel function's negative return is (`ENOSPC` for
    /// -28): a note of one is a failed call, drawn as an error.
    pub errno: &'a dyn Fn(i64) -> Option<&'static str>,
}

fn no_errno(_: i64) -> Option<&'static str> {
    None
}

fn no_words(_: &Event) -> Option<String> {
    None
}

fn no_syscalls(_: &str) -> bool {
    false
}

fn max_is_limit(name: &str) -> bool {
    name.starts_with("max_")
}

impl Lexicon<'static> {
    /// No kernel knowledge: values print as numbers, no step is a syscall,
    /// counters named `max_*` are limits.
    pub const PLAIN: Lexicon<'static> = Lexicon {
        describe: &no_words,
        is_syscall: &no_syscalls,
        is_limit: &max_is_limit,
        sums: &[],
        errno: &no_errno,
    };
}

/// What a span stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SpanKind {
    /// From the syscall's step to its result note (or the task's next
    /// syscall, or its exit).
    Syscall,
    /// A lock held: `acquired` to `released`.
    Lock,
    /// A task waiting for an RCU grace period: `gp_start` to `gp_end`.
    GracePeriod,
    /// A work item running on a kworker: `work_run` to `work_done`.
    Work,
    /// An RCU read-side critical section: `rcu_read_lock` to the step
    /// `rcu_read_unlock` that leaves the outermost one.
    RcuRead,
}

impl SpanKind {
    /// A short name, used as a CSS class and a Perfetto category.
    pub fn as_str(self) -> &'static str {
        match self {
            SpanKind::Syscall => "syscall",
            SpanKind::Lock => "lock",
            SpanKind::GracePeriod => "grace-period",
            SpanKind::Work => "work",
            SpanKind::RcuRead => "rcu-read",
        }
    }
}

/// Something a task was inside of for a while.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub kind: SpanKind,
    pub task: TaskId,
    /// The syscall, the lock, the work item, or `grace period` /
    /// `rcu read-side`.
    pub name: String,
    pub obj: ObjId,
    /// Index (in the events) of the event that opened it.
    pub first: usize,
    /// Index of the last event inside it; `None` when the execution ended
    /// while it was still open.
    pub last: Option<usize>,
    /// A syscall's result in words (`ok`, `ENOSPC`).
    pub result: Option<String>,
    /// A syscall that returned an error.
    pub failed: bool,
}

/// What a mark stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkKind {
    /// A syscall's result: success.
    Ok,
    /// A syscall's result: an error.
    Error,
    /// An object released into a free queue.
    Queued,
    Freed,
    UseAfterFree,
    Exit,
    Panic,
    /// Any other fact recorded by the model.
    Note,
}

/// A fact at one instant, from a note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mark {
    pub kind: MarkKind,
    pub event: usize,
    /// The fact in words, e.g. `unshare ENOSPC`, `freed ipc_ns#0`.
    pub text: String,
    /// A kernel function's failure inside a call that fails too, whose
    /// box already says so: the views leave its words to its tooltip.
    pub told_by_its_call: bool,
}

/// A `schedule_work` step and the `work_run` step it caused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flow {
    pub obj: ObjId,
    pub from: usize,
    pub to: usize,
}

/// The values of one `counter:` note label over the execution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Series {
    /// The label without `counter:`; with the level it counts at when
    /// the run drew the counter at several (see [`name_levels`]).
    pub name: String,
    /// The level the counter counts at: the name of its note's object
    /// (`ucounts(ct-a, uid 100000)` for an entry, `ct-a: max_ipc_namespaces`
    /// for a limit), empty for none.
    pub level: String,
    /// The counter is a limit (drawn as such).
    pub limit: bool,
    /// (event index, new value).
    pub points: Vec<(usize, i64)>,
}

/// Where an interval sits among others that must nest: its sub-lane (a new
/// one only for an interval that overlaps another without nesting) and its
/// depth there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Place {
    pub sub: usize,
    pub depth: usize,
}

/// Place half-open intervals `[start, end)` so that, within a sub-lane,
/// any two either nest or do not overlap. Sub-lane 0 takes all it can.
pub fn nest(intervals: &[(u64, u64)]) -> Vec<Place> {
    let mut order: Vec<usize> = (0..intervals.len()).collect();
    order.sort_by_key(|&i| (intervals[i].0, std::cmp::Reverse(intervals[i].1), i));
    let mut stacks: Vec<Vec<u64>> = Vec::new();
    let mut places = vec![Place::default(); intervals.len()];
    for i in order {
        let (start, end) = intervals[i];
        let sub = (0..stacks.len())
            .find(|&s| fits(&mut stacks[s], start, end))
            .unwrap_or_else(|| {
                stacks.push(Vec::new());
                stacks.len() - 1
            });
        places[i] = Place {
            sub,
            depth: stacks[sub].len(),
        };
        stacks[sub].push(end);
    }
    places
}

/// Close what ended by `start`; true if `[start, end)` nests in what is open.
fn fits(stack: &mut Vec<u64>, start: u64, end: u64) -> bool {
    while stack.last().is_some_and(|&top| top <= start) {
        stack.pop();
    }
    stack.last().is_none_or(|&top| end <= top)
}

/// The series `name` that adds up the series named `parts` (labels with
/// their `counter:` prefix), a point wherever one of them changed; `None`
/// when the run drew none of them.
fn sum_of(series: &[Series], name: &str, parts: &[&str]) -> Option<Series> {
    let unprefixed = |label: &str| label.strip_prefix("counter:").unwrap_or(label).to_string();
    // Every part, each at one level: a sum across levels would add up
    // counters of different entries.
    let parts: Vec<&Series> = parts
        .iter()
        .map(|p| series.iter().find(|s| s.name == unprefixed(p)))
        .collect::<Option<_>>()?;
    let mut changes: Vec<(usize, usize, i64)> = parts
        .iter()
        .enumerate()
        .flat_map(|(k, s)| s.points.iter().map(move |&(i, v)| (i, k, v)))
        .collect();
    if changes.is_empty() {
        return None;
    }
    changes.sort_by_key(|&(i, k, _)| (i, k));
    let mut now = vec![0; parts.len()];
    let mut points: Vec<(usize, i64)> = Vec::new();
    for (i, k, v) in changes {
        now[k] = v;
        let total = now.iter().sum();
        match points.last_mut() {
            Some(last) if last.0 == i => last.1 = total,
            _ => points.push((i, total)),
        }
    }
    Some(Series {
        name: unprefixed(name),
        level: String::new(),
        limit: false,
        points,
    })
}

/// A counter drawn at several levels (the entries of nested user
/// namespaces) is one series per level, each named with its level: a
/// limit by its level alone when that names it (`ct-a:
/// max_user_namespaces`), any other counter with it (`user namespaces
/// alive · ucounts(ct-a, uid 100000)`).
/// One drawn at a single level keeps its plain name.
fn name_levels(series: &mut [Series]) {
    let names: Vec<String> = series.iter().map(|s| s.name.clone()).collect();
    for s in series.iter_mut() {
        let levels = names.iter().filter(|n| **n == s.name).count();
        if levels < 2 || s.level.is_empty() {
            continue;
        }
        s.name = if s.limit && s.level.ends_with(&s.name) {
            s.level.clone()
        } else {
            format!("{} · {}", s.name, s.level)
        };
    }
}

/// The views' reading of one recorded execution.
pub struct Model<'r> {
    pub report: &'r ExecReport,
    pub events: &'r [Event],
    pub spans: Vec<Span>,
    pub marks: Vec<Mark>,
    pub flows: Vec<Flow>,
    /// `schedule_work` steps whose work had not started when the run ended.
    pub unrun: Vec<usize>,
    pub series: Vec<Series>,
    /// The lexicon's sums of series, where the run drew any part.
    pub sums: Vec<Series>,
    /// The step that broke the run (its last step), when it failed.
    pub breaking: Option<usize>,
    next_in_task: Vec<Option<usize>>,
}

impl<'r> Model<'r> {
    /// Read `report`'s events (none when it was not recorded).
    pub fn build(report: &'r ExecReport, lexicon: &Lexicon<'_>) -> Model<'r> {
        let events = report.events.as_deref().unwrap_or(&[]);
        let mut b = Builder::new(report, events, lexicon);
        for (i, e) in events.iter().enumerate() {
            match e.kind {
                EventKind::Step => b.step(i, e),
                EventKind::Note => b.note(i, e),
            }
            b.last_of_task.insert(e.task, i);
        }
        let breaking = report
            .outcome
            .is_failure()
            .then(|| events.iter().rposition(|e| e.kind == EventKind::Step))
            .flatten();
        let mut unrun: Vec<usize> = b.queued_by.values().copied().collect();
        unrun.sort_unstable();
        name_levels(&mut b.series);
        let sums = lexicon
            .sums
            .iter()
            .filter_map(|(name, parts)| sum_of(&b.series, name, parts))
            .collect();
        Model {
            report,
            events,
            spans: b.spans,
            marks: b.marks,
            flows: b.flows,
            unrun,
            series: b.series,
            sums,
            breaking,
            next_in_task: next_in_task(events),
        }
    }

    pub fn task_name(&self, t: TaskId) -> &str {
        self.report.task_names.get(t).map_or("?", |s| s.as_str())
    }

    /// An object's name, or an empty string for [`ObjId::NONE`].
    pub fn object(&self, obj: ObjId) -> Cow<'_, str> {
        if obj == ObjId::NONE {
            return Cow::Borrowed("");
        }
        match self.report.object_names.get(obj.0 as usize) {
            Some(name) => Cow::Borrowed(name),
            None => Cow::Owned(format!("obj{}", obj.0)),
        }
    }

    /// Whether `obj` is the execution's RCU state (its steps and notes go
    /// in the rcu lane).
    pub fn is_rcu(&self, obj: ObjId) -> bool {
        obj != ObjId::NONE && self.object(obj) == "rcu"
    }

    /// The task's next event after event `i`.
    pub fn next_in_task(&self, i: usize) -> Option<usize> {
        self.next_in_task.get(i).copied().flatten()
    }

    /// Tasks in the order views show them: those that made a syscall first
    /// (the scenario's tasks), then the others (kworkers), each in spawn
    /// order.
    pub fn task_order(&self) -> Vec<TaskId> {
        let callers: HashSet<TaskId> = self
            .spans
            .iter()
            .filter(|s| s.kind == SpanKind::Syscall)
            .map(|s| s.task)
            .collect();
        let (mut order, rest): (Vec<TaskId>, Vec<TaskId>) =
            (0..self.report.task_names.len()).partition(|t| callers.contains(t));
        order.extend(rest);
        order
    }

    /// The latest virtual time of the execution.
    pub fn end_time(&self) -> u64 {
        let latest = self.events.iter().map(|e| e.time).max().unwrap_or(0);
        latest.max(self.report.virtual_ns)
    }

    /// The step of the last event (0 without events).
    pub fn last_step(&self) -> u64 {
        self.events.last().map_or(0, |e| e.step)
    }

    /// Where step `i` ends: the task's next event (index and time), or the
    /// step itself when the task did nothing after it.
    pub fn step_end(&self, i: usize) -> (usize, u64) {
        match self.next_in_task(i) {
            Some(n) => (n, self.events[n].time),
            None => (i + 1, self.events[i].time),
        }
    }

    /// Where a span ends, as an exclusive event index and a time: at its
    /// last note, after its last step, or at the end of the execution.
    pub fn span_end(&self, s: &Span) -> (usize, u64) {
        match s.last {
            None => (self.events.len(), self.end_time()),
            Some(l) if self.events[l].kind == EventKind::Note => (l, self.events[l].time),
            Some(l) => self.step_end(l),
        }
    }

    /// A span's virtual time: (start, end).
    pub fn span_time(&self, s: &Span) -> (u64, u64) {
        let start = self.events[s.first].time;
        (start, self.span_end(s).1.max(start))
    }

    /// The value of each series at the end.
    pub fn final_counters(&self) -> Vec<(&Series, i64)> {
        self.series
            .iter()
            .filter_map(|s| s.points.last().map(|p| (s, p.1)))
            .collect()
    }

    /// A syscall span's call: its name and the object of its step
    /// (`lock A#0`), and its result when it has one (`unshare → ENOSPC`).
    pub fn call(&self, s: &Span) -> String {
        // The scenario's op as it wrote it (`unshare(CLONE_NEWIPC)`), when
        // the model called the step so; else the step and its object.
        if let Some(op) = self.report.step_titles.get(&s.first) {
            return match &s.result {
                Some(r) => format!("{op} → {r}"),
                None => op.clone(),
            };
        }
        let obj = self.object(self.events[s.first].obj);
        let call = if obj.is_empty() {
            s.name.clone()
        } else {
            format!("{} {obj}", s.name)
        };
        match &s.result {
            Some(r) => format!("{call} → {r}"),
            None => call,
        }
    }

    /// A one-line summary of a span, for tooltips and the end state.
    pub fn describe_span(&self, s: &Span) -> String {
        let what = match s.kind {
            SpanKind::Syscall => format!("in {}", self.call(s)),
            SpanKind::Lock => format!("holds {}", s.name),
            SpanKind::GracePeriod => "waits for an RCU grace period".into(),
            SpanKind::Work => format!("runs {}", s.name),
            SpanKind::RcuRead => "inside an RCU read-side section".into(),
        };
        let from = self.events[s.first].step;
        match s.last {
            Some(l) => format!(
                "{}: {what}, steps {from}–{}",
                self.task_name(s.task),
                self.events[l].step
            ),
            None => format!(
                "{}: {what}, since step {from} (to the end)",
                self.task_name(s.task)
            ),
        }
    }
}

/// The name of `obj` in `report` (empty for no object).
pub fn object_name(report: &ExecReport, obj: ObjId) -> String {
    if obj == ObjId::NONE {
        return String::new();
    }
    report
        .object_names
        .get(obj.0 as usize)
        .cloned()
        .unwrap_or_else(|| format!("obj{}", obj.0))
}

fn next_in_task(events: &[Event]) -> Vec<Option<usize>> {
    let mut next = vec![None; events.len()];
    let mut later: HashMap<TaskId, usize> = HashMap::new();
    for (i, e) in events.iter().enumerate().rev() {
        next[i] = later.insert(e.task, i);
    }
    next
}

type OpenKey = (SpanKind, TaskId, u32);

struct Builder<'a, 'r> {
    report: &'r ExecReport,
    events: &'r [Event],
    lexicon: &'a Lexicon<'a>,
    spans: Vec<Span>,
    open: HashMap<OpenKey, usize>,
    rcu_depth: HashMap<TaskId, u32>,
    last_of_task: HashMap<TaskId, usize>,
    /// Per work item: the `schedule_work` that queued it since it last ran.
    queued_by: HashMap<u32, usize>,
    marks: Vec<Mark>,
    flows: Vec<Flow>,
    series: Vec<Series>,
}

impl<'a, 'r> Builder<'a, 'r> {
    fn new(report: &'r ExecReport, events: &'r [Event], lexicon: &'a Lexicon<'a>) -> Self {
        Builder {
            report,
            events,
            lexicon,
            spans: Vec::new(),
            open: HashMap::new(),
            rcu_depth: HashMap::new(),
            last_of_task: HashMap::new(),
            queued_by: HashMap::new(),
            marks: Vec::new(),
            flows: Vec::new(),
            series: Vec::new(),
        }
    }

    fn object(&self, obj: ObjId) -> String {
        object_name(self.report, obj)
    }

    /// Open a span at event `i`, found again by (`kind`, task, `key`).
    fn open(&mut self, kind: SpanKind, i: usize, key: ObjId, name: String) {
        let e = &self.events[i];
        self.open.insert((kind, e.task, key.0), self.spans.len());
        self.spans.push(Span {
            kind,
            task: e.task,
            name,
            obj: e.obj,
            first: i,
            last: None,
            result: None,
            failed: false,
        });
    }

    fn close(&mut self, key: OpenKey, last: usize) -> Option<usize> {
        let s = self.open.remove(&key)?;
        self.spans[s].last = Some(last);
        Some(s)
    }

    /// Close the task's open syscall at its last event before now.
    fn end_syscall(&mut self, task: TaskId) {
        let last = self.last_of_task.get(&task).copied();
        if let Some(last) = last {
            self.close((SpanKind::Syscall, task, ObjId::NONE.0), last);
        }
    }

    fn step(&mut self, i: usize, e: &Event) {
        if (self.lexicon.is_syscall)(e.label) {
            self.end_syscall(e.task);
            self.open(SpanKind::Syscall, i, ObjId::NONE, e.label.to_string());
            return;
        }
        match e.label {
            "rcu_read_lock" => self.rcu_read(i, e, 1),
            "rcu_read_unlock" => self.rcu_read(i, e, -1),
            "schedule_work" => {
                self.queued_by.entry(e.obj.0).or_insert(i);
            }
            "work_run" => {
                if let Some(from) = self.queued_by.remove(&e.obj.0) {
                    self.flows.push(Flow {
                        obj: e.obj,
                        from,
                        to: i,
                    });
                }
                self.open(SpanKind::Work, i, e.obj, self.object(e.obj));
            }
            _ => {}
        }
    }

    fn rcu_read(&mut self, i: usize, e: &Event, delta: i32) {
        let depth = self.rcu_depth.entry(e.task).or_insert(0);
        let before = *depth;
        *depth = (before as i32 + delta).max(0) as u32;
        let key = (SpanKind::RcuRead, e.task, e.obj.0);
        match (before, delta) {
            (0, 1) => self.open(SpanKind::RcuRead, i, e.obj, "rcu read-side".into()),
            (1, -1) => {
                self.close(key, i);
            }
            _ => {}
        }
    }

    fn note(&mut self, i: usize, e: &Event) {
        if let Some(name) = e.label.strip_prefix("counter:") {
            self.counter(i, name, e.obj, e.value);
            return;
        }
        let closes = match e.label {
            "acquired" => return self.open(SpanKind::Lock, i, e.obj, self.object(e.obj)),
            "gp_start" => return self.open(SpanKind::GracePeriod, i, e.obj, "grace period".into()),
            "released" => SpanKind::Lock,
            "gp_end" => SpanKind::GracePeriod,
            "work_done" => SpanKind::Work,
            _ => return self.fact(i, e),
        };
        self.close((closes, e.task, e.obj.0), i);
    }

    /// A counter's new value, at the level its note's object names.
    fn counter(&mut self, i: usize, name: &str, obj: ObjId, value: i64) {
        let level = self.object(obj);
        let at = match self
            .series
            .iter()
            .position(|s| s.name == name && s.level == level)
        {
            Some(at) => at,
            None => {
                self.series.push(Series {
                    name: name.to_string(),
                    level,
                    limit: (self.lexicon.is_limit)(name),
                    points: Vec::new(),
                });
                self.series.len() - 1
            }
        };
        self.series[at].points.push((i, value));
    }

    /// A note that is a fact at one instant: a result, a free, an exit...
    fn fact(&mut self, i: usize, e: &Event) {
        let obj = self.object(e.obj);
        let words = (self.lexicon.describe)(e);
        let syscall = (SpanKind::Syscall, e.task, ObjId::NONE.0);
        let is_result = self
            .open
            .get(&syscall)
            .is_some_and(|&s| self.spans[s].name == e.label);
        let (kind, text) = if is_result {
            self.result(i, e, words.clone())
        } else {
            self.plain_fact(e, &obj, words)
        };
        if e.label == "exit" {
            self.end_syscall(e.task);
        }
        self.marks.push(Mark {
            kind,
            event: i,
            text,
            told_by_its_call: false,
        });
    }

    fn result(&mut self, i: usize, e: &Event, words: Option<String>) -> (MarkKind, String) {
        let words = words.unwrap_or_else(|| e.value.to_string());
        let failed = e.value < 0;
        if let Some(s) = self.close((SpanKind::Syscall, e.task, ObjId::NONE.0), i) {
            self.spans[s].result = Some(words.clone());
            self.spans[s].failed = failed;
            if failed {
                self.told_by(s);
            }
        }
        let obj = self.object(e.obj);
        let text = [e.label, &words, &obj]
            .iter()
            .filter(|s| !s.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join(" ");
        let kind = if failed {
            MarkKind::Error
        } else {
            MarkKind::Ok
        };
        (kind, text)
    }

    /// The failures inside the failed call `span` are told by its box.
    fn told_by(&mut self, span: usize) {
        let (task, first) = (self.spans[span].task, self.spans[span].first);
        for mk in self.marks.iter_mut().rev() {
            if mk.event < first {
                break;
            }
            if mk.kind == MarkKind::Error && self.events[mk.event].task == task {
                mk.told_by_its_call = true;
            }
        }
    }

    fn plain_fact(&self, e: &Event, obj: &str, words: Option<String>) -> (MarkKind, String) {
        match e.label {
            "queued" => (MarkKind::Queued, format!("queued {obj}")),
            "freed" => (MarkKind::Freed, format!("freed {obj}")),
            "use-after-free" => {
                let by = usize::try_from(e.value)
                    .ok()
                    .and_then(|t| self.report.task_names.get(t))
                    .map_or_else(|| e.value.to_string(), |n| n.clone());
                (
                    MarkKind::UseAfterFree,
                    format!("use-after-free of {obj} (freed by {by})"),
                )
            }
            "exit" => (MarkKind::Exit, "exit".into()),
            "panic" => (MarkKind::Panic, "panic".into()),
            _ => {
                let errno = (e.value < 0)
                    .then(|| (self.lexicon.errno)(e.value))
                    .flatten();
                let value = match errno {
                    Some(name) => name.to_string(),
                    None => words.unwrap_or_else(|| match e.value {
                        0 => String::new(),
                        v => v.to_string(),
                    }),
                };
                let text = [e.label, obj, &value]
                    .iter()
                    .filter(|s| !s.is_empty())
                    .copied()
                    .collect::<Vec<_>>()
                    .join(" ");
                let kind = match errno {
                    Some(_) => MarkKind::Error,
                    None => MarkKind::Note,
                };
                (kind, text)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{name_levels, sum_of, Series};

    fn series(name: &str, points: &[(usize, i64)]) -> Series {
        Series {
            level: String::new(),
            name: name.into(),
            limit: false,
            points: points.to_vec(),
        }
    }

    #[test]
    fn a_sum_changes_where_a_part_does() {
        let alive = series("alive", &[(1, 1), (5, 2), (9, 1)]);
        let pending = series("pending", &[(1, 0), (9, 1), (12, 2)]);
        let sum = sum_of(
            &[alive, pending],
            "counter:charged",
            &["counter:alive", "counter:pending"],
        )
        .unwrap();
        assert_eq!(sum.name, "charged");
        assert_eq!(sum.points, [(1, 1), (5, 2), (9, 2), (12, 3)]);
    }

    #[test]
    fn no_sum_without_its_parts() {
        let other = series("other", &[(1, 1)]);
        assert!(sum_of(&[other], "counter:charged", &["counter:alive"]).is_none());
        // Nor with only some of them: alive at two levels is no part.
        let pending = series("pending", &[(1, 0)]);
        assert!(sum_of(
            &[pending],
            "counter:charged",
            &["counter:alive", "counter:pending"]
        )
        .is_none());
    }

    #[test]
    fn a_counter_at_several_levels_is_named_with_each() {
        let at = |name: &str, level: &str, limit: bool| Series {
            level: level.into(),
            limit,
            ..series(name, &[(1, 1)])
        };
        let mut drawn = vec![
            at("alive", "ucounts(init, uid 0)", false),
            at("alive", "ucounts(ct, uid 0)", false),
            at("max", "init: max", true),
            at("max", "ct: max", true),
            at("max_nproc", "ucounts(init, uid 0)", true),
            at("max_nproc", "ucounts(ct, uid 0)", true),
            at("pending", "", false),
        ];
        name_levels(&mut drawn);
        let names: Vec<&str> = drawn.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "alive · ucounts(init, uid 0)",
                "alive · ucounts(ct, uid 0)",
                "init: max",
                "ct: max",
                "max_nproc · ucounts(init, uid 0)",
                "max_nproc · ucounts(ct, uid 0)",
                "pending"
            ]
        );
        let mut one = vec![at("alive", "ucounts(init, uid 0)", false)];
        name_levels(&mut one);
        assert_eq!(one[0].name, "alive", "one level keeps the plain name");
    }
}
