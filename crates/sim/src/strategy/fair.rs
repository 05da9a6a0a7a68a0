//! `fair`: the discrete-event order. The task with the earliest virtual
//! clock runs; one deterministic execution, for timing experiments.

use super::pick::{PickCtx, Strategy};
use crate::runq::RunQueue;
use crate::token::Schedule;
use crate::TaskId;

pub(crate) struct Fair;

impl Strategy for Fair {
    fn new_execution(schedule: &Schedule, _lenient: bool) -> Option<Self> {
        matches!(schedule, Schedule::Fair).then_some(Fair)
    }

    fn next_task<'a>(&mut self, _runnable: &RunQueue, ctx: impl FnOnce() -> PickCtx<'a>) -> TaskId {
        fair_pick(&ctx())
    }
}

/// The discrete-event order: earliest clock first; on a tie keep running
/// the same task, else the lowest id.
fn fair_pick(ctx: &PickCtx<'_>) -> TaskId {
    let mut best = ctx.runnable[0];
    for &t in ctx.runnable {
        let (ct, cb) = (ctx.tasks[t].clock, ctx.tasks[best].clock);
        if ct < cb || (ct == cb && Some(t) == ctx.last) {
            best = t;
        }
    }
    best
}
