//! What a strategy is: the trait every strategy implements, what it sees at
//! a scheduling point, and what it records of an execution.

use crate::footprint::Footprint;
use crate::runq::RunQueue;
use crate::task::TaskState;
use crate::token::Schedule;
use crate::TaskId;

/// What a strategy sees at one scheduling point.
pub(crate) struct PickCtx<'a> {
    /// Runnable tasks, ascending by id; never empty.
    pub runnable: &'a [TaskId],
    /// The task that ran the previous step, if it is still runnable.
    pub last: Option<TaskId>,
    /// Every task, indexed by id (clocks, pending operations).
    pub tasks: &'a [TaskState],
    /// Every task's name, indexed by id.
    pub task_names: &'a [String],
    /// Steps taken so far.
    pub step: u64,
    /// The footprint of the step before, when footprints are kept.
    pub previous: Option<&'a Footprint>,
}

/// One recorded decision among two or more runnable tasks.
#[derive(Debug, Clone)]
pub struct ChoicePoint {
    pub runnable: Vec<TaskId>,
    pub last: Option<TaskId>,
    pub chosen: TaskId,
}

impl ChoicePoint {
    /// The task a non-preemptive scheduler would pick here.
    pub fn default_choice(&self) -> TaskId {
        default_choice(&self.runnable, self.last)
    }

    pub fn is_preemption(&self, t: TaskId) -> bool {
        matches!(self.last, Some(l) if l != t)
    }
}

pub(crate) fn default_choice(runnable: &[TaskId], last: Option<TaskId>) -> TaskId {
    last.unwrap_or(runnable[0])
}

/// A scheduling strategy, as the scheduler of one execution sees it.
pub(crate) trait Strategy: Sized {
    /// This strategy for one execution of `schedule`, if the schedule is
    /// of its kind. `lenient`: a replayed schedule that stops fitting is
    /// followed as far as it goes instead of diverging (shrinking).
    fn new_execution(schedule: &Schedule, lenient: bool) -> Option<Self>;

    /// Whether the strategy is asked at steps with one runnable task too;
    /// if not, those steps draw and count nothing.
    const SEES_FORCED_STEPS: bool = false;

    /// Whether the strategy reads the whole runnable list (its slice, or
    /// the context); if not, it reads only the queue's length and its
    /// k-th task, and the queue may keep many tasks in a tree.
    const READS_LIST: bool = true;

    /// The task to run next, among `runnable` (ascending, never empty).
    /// `ctx` builds the whole context, for a strategy that needs more than
    /// the runnable list; the common step then builds none.
    fn next_task<'a>(&mut self, runnable: &RunQueue, ctx: impl FnOnce() -> PickCtx<'a>) -> TaskId;

    /// The step where a replayed schedule stopped fitting, if it did.
    fn diverged_step(&self) -> Option<u64> {
        None
    }

    /// `task` yields at the point being decided (`sim::yield_point`).
    fn yielded(&mut self, _task: TaskId) {}

    /// What the execution recorded of its choices, taken at its end.
    fn take_log(&mut self) -> StrategyLog {
        StrategyLog::default()
    }
}

/// What a strategy recorded of one execution.
#[derive(Default)]
pub(crate) struct StrategyLog {
    /// Every choice point, with the task chosen.
    pub choices: Vec<ChoicePoint>,
    /// The choice point where explicit choices stopped fitting.
    pub diverged_choice: Option<usize>,
    /// What an exhaustive search's execution saw of its steps.
    pub search: Option<RunLog>,
}

impl<S: Strategy> Strategy for Box<S> {
    const SEES_FORCED_STEPS: bool = S::SEES_FORCED_STEPS;
    const READS_LIST: bool = S::READS_LIST;

    fn new_execution(schedule: &Schedule, lenient: bool) -> Option<Self> {
        S::new_execution(schedule, lenient).map(Box::new)
    }

    #[inline]
    fn next_task<'a>(&mut self, runnable: &RunQueue, ctx: impl FnOnce() -> PickCtx<'a>) -> TaskId {
        (**self).next_task(runnable, ctx)
    }

    fn diverged_step(&self) -> Option<u64> {
        (**self).diverged_step()
    }

    fn yielded(&mut self, task: TaskId) {
        (**self).yielded(task)
    }

    fn take_log(&mut self) -> StrategyLog {
        (**self).take_log()
    }
}

/// One step as the scheduler saw it.
#[derive(Debug, Clone)]
pub(crate) struct StepSeen {
    pub task: TaskId,
    /// Runnable tasks before it, ascending.
    pub runnable: Vec<TaskId>,
    /// The task that ran the step before, if it was still runnable.
    pub last: Option<TaskId>,
}

/// What the scheduler reports of a search execution.
#[derive(Debug, Clone, Default)]
pub(crate) struct RunLog {
    pub steps: Vec<StepSeen>,
    /// Steps that ran as planned (from the first).
    pub followed: usize,
    /// The step at which every runnable task was asleep: the rest of the
    /// execution repeats explored ones.
    pub blocked: Option<usize>,
}
