//! `fair`: the discrete-event order. The task with the earliest virtual
//! clock runs; one deterministic execution, for timing experiments.

use super::{PickCtx, Strategy};
use crate::explore::{ExploreReport, Run};
use crate::runq::RunQueue;
use crate::token::Schedule;
use crate::TaskId;

pub(crate) struct Fair;

/// The exploration: the one execution there is.
pub(crate) fn explore(run: &Run<'_>) -> ExploreReport {
    let schedule = Schedule::Fair;
    let report = run(&schedule);
    ExploreReport {
        executions: 1,
        report,
        schedule,
        exhausted: false,
        shrink: None,
        unnamed_at_deadline: false,
        cut_short: 0,
        dfs_shard: None,
        states: None,
        iteration: 0,
    }
}

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
