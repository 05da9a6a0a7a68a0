//! Named segments: each named task runs its number of steps from the
//! named scheduling point, then non-preemptive order. The form a token
//! gives a failing schedule: names survive small changes of the model,
//! and a segment that no longer fits is reported as a divergence.

use super::pick::{default_choice, PickCtx, Strategy};
use crate::runq::RunQueue;
use crate::token::{Schedule, Segment};
use crate::TaskId;

/// Replaying named segments.
pub(crate) struct Segments {
    segments: Vec<Segment>,
    index: usize,
    /// The task of the current segment and the steps it has left.
    current: Option<(TaskId, u64)>,
    /// The step at which the schedule stopped fitting.
    pub diverged: Option<u64>,
    /// Shrinking: a segment whose task is not runnable, or is elsewhere
    /// than recorded, is skipped or taken as it is instead of diverging.
    lenient: bool,
    /// The ids of the tasks of each name, ascending, for the first
    /// `indexed` tasks: a segment finds its task without a scan of every
    /// runnable one (a lenient replay may skip many segments in one step).
    by_name: std::collections::BTreeMap<String, Vec<TaskId>>,
    indexed: usize,
}

impl Strategy for Segments {
    fn new_execution(schedule: &Schedule, lenient: bool) -> Option<Self> {
        let Schedule::Segments(segments) = schedule else {
            return None;
        };
        Some(Segments {
            segments: segments.clone(),
            index: 0,
            current: None,
            diverged: None,
            lenient,
            by_name: Default::default(),
            indexed: 0,
        })
    }

    /// Sees every step, those without a choice too.
    const SEES_FORCED_STEPS: bool = true;

    fn next_task<'a>(&mut self, _runnable: &RunQueue, ctx: impl FnOnce() -> PickCtx<'a>) -> TaskId {
        self.pick(&ctx())
    }

    fn diverged_step(&self) -> Option<u64> {
        self.diverged
    }
}

impl Segments {
    fn pick(&mut self, ctx: &PickCtx<'_>) -> TaskId {
        let fallback = default_choice(ctx.runnable, ctx.last);
        if self.diverged.is_some() {
            return fallback;
        }
        for (id, name) in ctx.task_names.iter().enumerate().skip(self.indexed) {
            self.by_name.entry(name.clone()).or_default().push(id);
        }
        self.indexed = ctx.task_names.len();
        loop {
            if let Some((t, left)) = self.current {
                if ctx.runnable.binary_search(&t).is_err() {
                    if self.lenient {
                        self.current = None;
                        continue;
                    }
                    return self.diverge(ctx, fallback);
                }
                self.current = (left > 1).then_some((t, left - 1));
                return t;
            }
            let Some(seg) = self.segments.get(self.index) else {
                return fallback;
            };
            self.index += 1;
            if seg.steps == 0 {
                continue;
            }
            let lenient = self.lenient;
            // The first runnable task, by id, of the segment's name (and
            // point).
            let found = self.by_name.get(&seg.task).and_then(|ids| {
                ids.iter().copied().find(|&t| {
                    ctx.runnable.binary_search(&t).is_ok()
                        && (lenient || ctx.tasks[t].pending.label == seg.at)
                })
            });
            match found {
                Some(t) => self.current = Some((t, seg.steps)),
                None if lenient => continue,
                None => return self.diverge(ctx, fallback),
            }
        }
    }

    fn diverge(&mut self, ctx: &PickCtx<'_>, fallback: TaskId) -> TaskId {
        self.diverged = Some(ctx.step + 1);
        fallback
    }
}
