//! The execution's side of `dfs` with partial-order reduction (the search
//! is `crate::dpor`): follow the plan, then run without preemptions,
//! avoiding the tasks asleep, and log what each step saw.

use super::pick::{default_choice, ChoicePoint, PickCtx, RunLog, StepSeen, Strategy, StrategyLog};
use crate::footprint::Footprint;
use crate::runq::RunQueue;
use crate::token::Schedule;
use crate::TaskId;

/// What one execution of the search is asked to do.
pub(crate) struct Plan {
    /// The task to run at each step, from the first.
    pub tasks: Vec<TaskId>,
    /// The step from which the sleep set below is followed (and kept up to
    /// date as steps run).
    pub sleep_from: usize,
    pub sleep: Vec<(TaskId, Footprint)>,
    pub bound: u32,
}

/// The scheduler's side: follow the plan, then run without preemptions,
/// avoiding the tasks asleep.
pub(crate) struct DporRun {
    plan: Plan,
    pos: usize,
    preemptions: u32,
    sleep: Vec<(TaskId, Footprint)>,
    deviated: bool,
    log: RunLog,
    choices: Vec<ChoicePoint>,
}

impl DporRun {
    pub(crate) fn new(plan: Plan) -> DporRun {
        DporRun {
            plan,
            pos: 0,
            preemptions: 0,
            sleep: Vec::new(),
            deviated: false,
            log: RunLog::default(),
            choices: Vec::new(),
        }
    }

    pub(crate) fn pick(&mut self, ctx: &PickCtx<'_>) -> TaskId {
        let pos = self.pos;
        let sleep_from = self.plan.sleep_from;
        if pos == sleep_from {
            self.sleep = std::mem::take(&mut self.plan.sleep);
        } else if pos > sleep_from && self.log.blocked.is_none() {
            let ran = self.log.steps[pos - 1].task;
            if let Some(done) = ctx.previous {
                self.sleep = asleep_after(&self.sleep, ran, done);
            }
        }
        let bound = self.plan.bound;
        let preemptions = self.preemptions;
        let fits = |t: TaskId| {
            let preempts = ctx.last.is_some_and(|l| l != t) as u32;
            preemptions.saturating_add(preempts) <= bound
        };
        let mut chosen = None;
        if !self.deviated && pos < self.plan.tasks.len() {
            let wanted = self.plan.tasks[pos];
            // A planned step whose task is asleep would repeat an explored
            // execution: the plan is left there, as where it cannot be
            // followed, and the search goes on from that state.
            let asleep = pos > sleep_from && self.sleep.iter().any(|(q, _)| *q == wanted);
            if ctx.runnable.binary_search(&wanted).is_ok() && fits(wanted) && !asleep {
                chosen = Some(wanted);
                self.log.followed = pos + 1;
            } else {
                self.deviated = true;
            }
        }
        let default = default_choice(ctx.runnable, ctx.last);
        let chosen = chosen.unwrap_or_else(|| {
            if self.log.blocked.is_some() {
                return default;
            }
            let asleep = |t: TaskId| self.sleep.iter().any(|(q, _)| *q == t);
            let awake = std::iter::once(default)
                .chain(ctx.runnable.iter().copied())
                .find(|&t| !asleep(t) && fits(t));
            awake.unwrap_or_else(|| {
                self.log.blocked = Some(pos);
                default
            })
        });
        if ctx.runnable.len() > 1 {
            self.choices.push(ChoicePoint {
                runnable: ctx.runnable.to_vec(),
                last: ctx.last,
                chosen,
            });
        }
        self.preemptions += ctx.last.is_some_and(|l| l != chosen) as u32;
        self.log.steps.push(StepSeen {
            task: chosen,
            runnable: ctx.runnable.to_vec(),
            last: ctx.last,
        });
        self.pos += 1;
        chosen
    }
}

impl Strategy for DporRun {
    /// A search's execution is set up from its plan
    /// ([`Execution::set_plan`](crate::Execution)), never from a schedule.
    fn new_execution(_schedule: &Schedule, _lenient: bool) -> Option<Self> {
        None
    }

    /// Sees every step: the plan and the log count them all.
    const SEES_FORCED_STEPS: bool = true;

    fn next_task<'a>(&mut self, _runnable: &RunQueue, ctx: impl FnOnce() -> PickCtx<'a>) -> TaskId {
        self.pick(&ctx())
    }

    fn take_log(&mut self) -> StrategyLog {
        StrategyLog {
            choices: std::mem::take(&mut self.choices),
            diverged_choice: None,
            search: Some(std::mem::take(&mut self.log)),
        }
    }
}

/// The sleep set after `ran` took a step with footprint `done`: the tasks
/// asleep before whose next step commutes with it.
pub(crate) fn asleep_after(
    sleep: &[(TaskId, Footprint)],
    ran: TaskId,
    done: &Footprint,
) -> Vec<(TaskId, Footprint)> {
    sleep
        .iter()
        .filter(|(q, f)| *q != ran && !f.conflicts(done))
        .cloned()
        .collect()
}
