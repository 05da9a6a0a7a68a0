//! Shrinking a failing execution: a shorter schedule, with fewer
//! preemptions, that fails the same way; and the named segments of a
//! schedule.

use crate::exec::ExecReport;
use crate::outcome::Outcome;
use crate::search::ShrinkReport;
use crate::token::{Schedule, Segment};
use crate::TaskId;

/// Most executions one shrink may run: a count, not a time, so that the
/// shrunk schedule is the same on every machine.
pub const SHRINK_BUDGET: usize = 2000;

/// The named segments of an execution: its step log, run-length encoded by
/// task.
pub fn segments_of(report: &ExecReport) -> Vec<Segment> {
    let mut out: Vec<Segment> = Vec::new();
    let mut last: Option<TaskId> = None;
    for rec in &report.step_log {
        match out.last_mut() {
            Some(seg) if last == Some(rec.task) => seg.steps += 1,
            _ => out.push(Segment {
                task: report.task_names[rec.task].clone(),
                at: rec.label.to_string(),
                steps: 1,
            }),
        }
        last = Some(rec.task);
    }
    out
}

fn preemptions_of(report: &ExecReport) -> u64 {
    report.step_log.iter().filter(|s| s.preemption).count() as u64
}

/// Same kind of failure: the same outcome kind, and for a violation the
/// same invariant.
fn same_failure(a: &Outcome, b: &Outcome) -> bool {
    a.kind() == b.kind() && a.invariant() == b.invariant()
}

fn score(r: &ExecReport) -> (u64, u64) {
    (r.steps, preemptions_of(r))
}

/// Whether the wall-clock `deadline` has passed.
pub(crate) fn past(deadline: Option<std::time::Instant>) -> bool {
    deadline.is_some_and(|d| std::time::Instant::now() >= d)
}

/// Search for a schedule that fails the same way in fewer steps and with
/// fewer preemptions. Greedy: take the first candidate that improves, and
/// start a new pass from it, until none does or the budget is spent.
pub fn shrink_failure(
    run: &mut dyn FnMut(&Schedule) -> ExecReport,
    failing: ExecReport,
) -> (Vec<Segment>, ExecReport, ShrinkReport) {
    shrink_failure_until(run, failing, None)
}

/// [`shrink_failure`], stopped when the wall-clock `deadline` passes (the
/// shortest schedule found by then is the result, and says so).
pub fn shrink_failure_until(
    run: &mut dyn FnMut(&Schedule) -> ExecReport,
    failing: ExecReport,
    deadline: Option<std::time::Instant>,
) -> (Vec<Segment>, ExecReport, ShrinkReport) {
    let (steps_before, preemptions_before) = score(&failing);
    let mut s = Shrinker {
        run,
        target: failing.outcome.clone(),
        segments: segments_of(&failing),
        best: failing,
        attempts: 0,
        deadline,
        stopped: false,
    };
    s.shortest_prefix();
    while s.attempts < SHRINK_BUDGET
        && !s.stopped
        && (s.drop_segments() | s.merge_segments() | s.halve_segments())
    {}
    let (steps_after, preemptions_after) = score(&s.best);
    let summary = ShrinkReport {
        steps_before,
        steps_after,
        preemptions_before,
        preemptions_after,
        attempts: s.attempts,
        stopped_at_deadline: s.stopped,
    };
    (s.segments, s.best, summary)
}

/// The state of one shrink: the best failing execution so far and its
/// segments.
struct Shrinker<'a> {
    run: &'a mut dyn FnMut(&Schedule) -> ExecReport,
    target: Outcome,
    segments: Vec<Segment>,
    best: ExecReport,
    attempts: usize,
    deadline: Option<std::time::Instant>,
    /// The deadline passed: no more candidates.
    stopped: bool,
}

impl Shrinker<'_> {
    /// Run `candidate`; keep it when it fails the same way with a better
    /// (steps, preemptions) score.
    fn try_candidate(&mut self, candidate: Vec<Segment>) -> bool {
        if self.attempts >= SHRINK_BUDGET || self.stopped {
            return false;
        }
        if past(self.deadline) {
            self.stopped = true;
            return false;
        }
        self.attempts += 1;
        let r = (self.run)(&Schedule::Segments(candidate));
        if same_failure(&r.outcome, &self.target) && score(&r) < score(&self.best) {
            self.segments = segments_of(&r);
            self.best = r;
            return true;
        }
        false
    }

    /// Binary search for the shortest prefix of segments that still fails
    /// (the rest of the run in non-preemptive order).
    fn shortest_prefix(&mut self) {
        let (mut lo, mut hi) = (0, self.segments.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            let candidate = self.segments[..mid].to_vec();
            let before = self.segments.len();
            if self.try_candidate(candidate) {
                hi = mid.min(self.segments.len());
                if self.segments.len() != before {
                    lo = 0;
                }
            } else {
                lo = mid + 1;
            }
        }
    }

    /// Try without each segment, last first. True if anything improved.
    fn drop_segments(&mut self) -> bool {
        let mut improved = false;
        let mut i = self.segments.len();
        while i > 0 && self.attempts < SHRINK_BUDGET && !self.stopped {
            i = (i - 1).min(self.segments.len().saturating_sub(1));
            let mut c = self.segments.clone();
            if c.is_empty() {
                break;
            }
            c.remove(i);
            improved |= self.try_candidate(c);
        }
        improved
    }

    /// Move each segment's steps into the same task's previous segment (a
    /// switch moved earlier, one preemption fewer), last first.
    fn merge_segments(&mut self) -> bool {
        let mut improved = false;
        let mut i = self.segments.len();
        while i > 1 && self.attempts < SHRINK_BUDGET && !self.stopped {
            i = (i - 1).min(self.segments.len().saturating_sub(1));
            let task = &self.segments[i].task;
            let Some(j) = self.segments[..i].iter().rposition(|s| &s.task == task) else {
                continue;
            };
            let mut c = self.segments.clone();
            c[j].steps += c[i].steps;
            c.remove(i);
            improved |= self.try_candidate(c);
        }
        improved
    }

    /// Try each segment at half its length, last first.
    fn halve_segments(&mut self) -> bool {
        let mut improved = false;
        let mut i = self.segments.len();
        while i > 0 && self.attempts < SHRINK_BUDGET && !self.stopped {
            i = (i - 1).min(self.segments.len().saturating_sub(1));
            if self.segments.get(i).is_none_or(|s| s.steps < 2) {
                continue;
            }
            let mut c = self.segments.clone();
            c[i].steps /= 2;
            improved |= self.try_candidate(c);
        }
        improved
    }
}
