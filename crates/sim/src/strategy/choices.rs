//! Explicit choices: the task chosen at each choice point, then
//! non-preemptive order. What exhaustive search without reduction runs,
//! and a schedule a test can write by hand.

use super::pick::{default_choice, ChoicePoint, PickCtx, Strategy, StrategyLog};
use crate::runq::RunQueue;
use crate::token::Schedule;
use crate::TaskId;

/// Explicit choices at the points with a choice, then non-preemptive order.
pub(crate) struct Explicit {
    prefix: Vec<u32>,
    pos: usize,
    log: Vec<ChoicePoint>,
    diverged: Option<usize>,
}

impl Strategy for Explicit {
    fn new_execution(schedule: &Schedule, _lenient: bool) -> Option<Self> {
        let Schedule::Choices(prefix) = schedule else {
            return None;
        };
        Some(Explicit {
            prefix: prefix.clone(),
            pos: 0,
            log: Vec::new(),
            diverged: None,
        })
    }

    /// Sees every step, those without a choice too.
    const SEES_FORCED_STEPS: bool = true;

    fn next_task<'a>(&mut self, _runnable: &RunQueue, ctx: impl FnOnce() -> PickCtx<'a>) -> TaskId {
        self.pick(&ctx())
    }

    fn take_log(&mut self) -> StrategyLog {
        StrategyLog {
            choices: std::mem::take(&mut self.log),
            diverged_choice: self.diverged,
            search: None,
        }
    }
}

impl Explicit {
    fn pick(&mut self, ctx: &PickCtx<'_>) -> TaskId {
        if ctx.runnable.len() == 1 {
            ctx.runnable[0]
        } else if self.pos < self.prefix.len() {
            self.replay(ctx)
        } else {
            let chosen = default_choice(ctx.runnable, ctx.last);
            self.record(ctx, chosen);
            chosen
        }
    }

    fn replay(&mut self, ctx: &PickCtx<'_>) -> TaskId {
        let wanted = self.prefix[self.pos] as TaskId;
        let chosen = if ctx.runnable.binary_search(&wanted).is_ok() {
            wanted
        } else {
            self.diverged.get_or_insert(self.pos);
            default_choice(ctx.runnable, ctx.last)
        };
        self.record(ctx, chosen);
        self.pos += 1;
        chosen
    }

    fn record(&mut self, ctx: &PickCtx<'_>, chosen: TaskId) {
        self.log.push(ChoicePoint {
            runnable: ctx.runnable.to_vec(),
            last: ctx.last,
            chosen,
        });
    }
}
