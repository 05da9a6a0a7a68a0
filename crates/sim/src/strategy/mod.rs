//! Strategies: at every scheduling point, which runnable task goes next.
//! Each is a pure function of its seed and iteration (and, for explicit
//! choices, of the recorded prefix), so shards and replays agree.
//!
//! A strategy is one file: a type that implements [`Strategy`], made
//! anew for every execution from the [`Schedule`] it runs, and one line in
//! the [`strategies!`] list below, which makes the scheduler's dispatch
//! (an enum, so the common step is a direct call, not a virtual one).

mod choices;
pub(crate) mod dpor;
pub(crate) mod fair;
pub(crate) mod pct;
mod pick;
pub(crate) mod random;
mod segments;

pub use pick::ChoicePoint;
pub(crate) use pick::{PickCtx, RunLog, Strategy, StrategyLog};

use crate::runq::RunQueue;
use crate::token::Schedule;
use crate::TaskId;
use dpor::DporRun;

/// A strategy's step called out of line: the common steps (random, PCT)
/// are inlined into the pick and keep its frame small; the others'
/// steps, larger and run far less often, are not.
#[inline(never)]
fn next_task_out_of_line<'a, S: Strategy>(
    s: &mut S,
    runnable: &RunQueue,
    ctx: impl FnOnce() -> PickCtx<'a>,
) -> TaskId {
    s.next_task(runnable, ctx)
}

/// The context a strategy whose line says `inline` is given: it reads the
/// run queue alone, so the pick makes no builder of the context (whose
/// captured references cost every step their stores).
fn no_context() -> PickCtx<'static> {
    panic!("a strategy whose line in `strategies!` says `inline` reads the run queue alone, not the context")
}

/// A strategy's step from the run queue alone, where its line in
/// [`strategies!`] says `inline`; `None` for the others.
macro_rules! queue_step {
    (inline, $s:expr, $runnable:expr) => {
        Some($s.next_task($runnable, no_context))
    };
    (out_of_line, $s:expr, $runnable:expr) => {{
        let _ = ($s, $runnable);
        None
    }};
}

/// A strategy's step with its context, where its line in [`strategies!`]
/// places it.
macro_rules! context_step {
    (inline, $s:expr, $runnable:expr, $ctx:expr) => {
        $s.next_task($runnable, $ctx)
    };
    (out_of_line, $s:expr, $runnable:expr, $ctx:expr) => {
        next_task_out_of_line($s, $runnable, $ctx)
    };
}

/// Declares the strategies: the scheduler's [`Chooser`] has a variant per
/// line, and a new execution takes the first strategy whose
/// `new_execution` accepts its schedule. Each line says where the pick
/// calls the strategy's step: `inline` (inlined into the pick, reading
/// the run queue alone) or `out_of_line` (called with the whole context).
macro_rules! strategies {
    ($($(#[$doc:meta])* $variant:ident: $ty:ty => $placement:ident,)*) => {
        // A plain tag (no niche in a variant's fields): the pick's match
        // is one load and one jump.
        #[repr(u8)]
        pub(crate) enum Chooser {
            $($(#[$doc])* $variant($ty),)*
        }

        impl Chooser {
            pub(crate) fn new(schedule: &Schedule, lenient: bool) -> Chooser {
                $(if let Some(s) = <$ty as Strategy>::new_execution(schedule, lenient) {
                    return Chooser::$variant(s);
                })*
                unreachable!("every kind of schedule has a strategy (every_schedule_kind_has_a_strategy)")
            }

            /// The task to run next when the run queue alone decides it:
            /// a forced step (one task runnable) of a strategy that does
            /// not see those, or a step of a strategy whose line says
            /// `inline`. `None`: ask [`Chooser::pick_with_context`].
            #[inline(always)]
            pub(crate) fn pick_from_queue(&mut self, runnable: &RunQueue) -> Option<TaskId> {
                match self {
                    $(Chooser::$variant(s) => {
                        if !<$ty as Strategy>::SEES_FORCED_STEPS && runnable.len() == 1 {
                            return Some(runnable.select(0));
                        }
                        queue_step!($placement, s, runnable)
                    })*
                }
            }

            /// The task to run next, the strategy given the whole context.
            #[inline]
            pub(crate) fn pick_with_context<'a>(
                &mut self,
                runnable: &RunQueue,
                ctx: impl FnOnce() -> PickCtx<'a>,
            ) -> TaskId {
                match self {
                    $(Chooser::$variant(s) => context_step!($placement, s, runnable, ctx),)*
                }
            }

            /// Whether the strategy reads the whole runnable list.
            pub(crate) fn reads_list(&self) -> bool {
                match self {
                    $(Chooser::$variant(_) => <$ty as Strategy>::READS_LIST,)*
                }
            }

            pub(crate) fn diverged_step(&self) -> Option<u64> {
                match self {
                    $(Chooser::$variant(s) => s.diverged_step(),)*
                }
            }

            pub(crate) fn yielded(&mut self, task: TaskId) {
                match self {
                    $(Chooser::$variant(s) => s.yielded(task),)*
                }
            }

            pub(crate) fn take_log(&mut self) -> StrategyLog {
                match self {
                    $(Chooser::$variant(s) => s.take_log(),)*
                }
            }

            /// The strategy's name in the list.
            #[cfg(test)]
            fn name(&self) -> &'static str {
                match self {
                    $(Chooser::$variant(_) => stringify!($variant),)*
                }
            }
        }
    };
}

strategies! {
    Random: random::Random => inline,
    Pct: pct::Pct => inline,
    Fair: fair::Fair => out_of_line,
    Choices: choices::Explicit => out_of_line,
    Segments: segments::Segments => out_of_line,
    /// Exhaustive search with partial-order reduction (see `dpor`); set
    /// up from a plan, not from a schedule.
    Dpor: Box<DporRun> => out_of_line,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The strategy each kind of schedule is run by; a new kind of
    /// schedule does not compile until it is named here.
    fn runs(schedule: &Schedule) -> &'static str {
        match schedule {
            Schedule::Random { .. } => "Random",
            Schedule::Pct { .. } => "Pct",
            Schedule::Fair => "Fair",
            Schedule::Choices(_) => "Choices",
            Schedule::Segments(_) => "Segments",
        }
    }

    #[test]
    fn every_schedule_kind_has_a_strategy() {
        let kinds = [
            Schedule::Random {
                seed: 1,
                iteration: 2,
            },
            Schedule::Pct {
                seed: 1,
                iteration: 2,
                depth: 3,
                steps_hint: 4,
            },
            Schedule::Fair,
            Schedule::Choices(vec![1, 0]),
            Schedule::Segments(Vec::new()),
        ];
        for schedule in &kinds {
            assert_eq!(Chooser::new(schedule, false).name(), runs(schedule));
        }
    }
}
