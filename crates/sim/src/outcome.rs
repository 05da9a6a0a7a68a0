//! How an execution ended.

use std::fmt;

/// One link of a wait-for cycle: `task` waits for `resource`, which is held
/// by the next link's task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitLink {
    pub task: String,
    pub resource: String,
}

/// The end of one execution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every task finished, the system drained, no invariant broke.
    Pass,
    /// A named invariant broke; `detail` is the state that broke it.
    Violation { invariant: String, detail: String },
    /// No task can run while some wait. `cycle` is the wait-for cycle when
    /// there is one; `waiting` lists every blocked task and what it waits on.
    Deadlock {
        cycle: Vec<WaitLink>,
        waiting: Vec<WaitLink>,
    },
    /// A task panicked (a `BUG()`, an arithmetic overflow, ...).
    Panic { task: String, message: String },
    /// A task touched an object after another task freed it.
    UseAfterFree {
        object: String,
        freed_by: String,
        touched_by: String,
        at: String,
    },
    /// The run passed a limit: `which` is `steps`, `virtual-time`,
    /// `wall-time`, `divergence`, `livelock`, `stack`, `tasks` (more than
    /// [`limits::TASKS`](crate::limits::TASKS) alive at once), `stacks`
    /// (the process had no stack left for task `value`) or `memory`.
    Limit { which: String, value: u64 },
}

impl Outcome {
    /// The `value` of a `wall-time` limit reached inside a step, which a
    /// watchdog outside the execution's thread reports.
    pub const INSIDE_A_STEP: u64 = u64::MAX;

    /// The `value` of a `wall-time` limit reached between two executions
    /// of a search: the search stopped, and the execution it reports is
    /// its first, run whole (nothing of the next one had run).
    pub const BETWEEN_EXECUTIONS: u64 = u64::MAX - 1;

    /// A limit of the whole process (its memory, its stacks), not of the
    /// execution: another thread's use may have brought it about, so an
    /// execution it stopped beside others is run again alone.
    pub fn is_shared_resource_limit(&self) -> bool {
        matches!(self, Outcome::Limit { which, .. } if which == "memory" || which == "stacks")
    }

    /// The outcome's name as printed in reports: `pass`, `violation`, ...
    pub fn kind(&self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Violation { .. } => "violation",
            Outcome::Deadlock { .. } => "deadlock",
            Outcome::Panic { .. } => "panic",
            Outcome::UseAfterFree { .. } => "use-after-free",
            Outcome::Limit { .. } => "limit",
        }
    }

    pub fn invariant(&self) -> Option<&str> {
        match self {
            Outcome::Violation { invariant, .. } => Some(invariant),
            _ => None,
        }
    }

    pub fn is_failure(&self) -> bool {
        !matches!(self, Outcome::Pass)
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Pass => write!(f, "pass"),
            Outcome::Violation { invariant, detail } => {
                write!(f, "violation of {invariant}: {detail}")
            }
            Outcome::Deadlock { cycle, waiting } => {
                let links = if cycle.is_empty() { waiting } else { cycle };
                write!(f, "deadlock: ")?;
                for (i, l) in links.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{} waits for {}", l.task, l.resource)?;
                }
                if !cycle.is_empty() {
                    write!(f, " (cycle)")?;
                }
                Ok(())
            }
            Outcome::Panic { task, message } => write!(f, "panic in {task}: {message}"),
            Outcome::UseAfterFree {
                object,
                freed_by,
                touched_by,
                at,
            } => write!(
                f,
                "use-after-free: {touched_by} touched {object} ({at}) after {freed_by} freed it"
            ),
            Outcome::Limit { which, value } => match which.as_str() {
                "steps" => write!(f, "limit: the steps limit ({value}) was reached"),
                "virtual-time" => {
                    write!(f, "limit: the virtual-time limit ({value} ns) was reached")
                }
                "wall-time" if *value == Outcome::INSIDE_A_STEP => write!(
                    f,
                    "limit: the wall-time limit (--timeout) was reached inside a step that did not return"
                ),
                "wall-time" if *value == Outcome::BETWEEN_EXECUTIONS => write!(
                    f,
                    "limit: the wall-time limit (--timeout) was reached between two executions, which ended the search; the execution shown is its first, run whole"
                ),
                "wall-time" => write!(
                    f,
                    "limit: the wall-time limit (--timeout) was reached at step {value}"
                ),
                "divergence" => write!(f, "limit: the schedule diverged at step {value}"),
                "livelock" => write!(f, "limit: livelock: tasks ran to step {value} without any progress (no result, free, wake-up or lock hand-over)"),
                "stack" => write!(
                    f,
                    "limit: task {value} nearly overflowed its stack (raise --stack-size)"
                ),
                "tasks" => write!(
                    f,
                    "limit: the tasks limit ({value} alive at once) was reached"
                ),
                "stacks" => write!(
                    f,
                    "limit: no stack could be mapped for task {value} (the process has at most {} task stacks, and the system may allow fewer)",
                    crate::fiber::STACK_BUDGET
                ),
                "memory" => write!(
                    f,
                    "limit: the process held {:.1} MiB, past {}",
                    *value as f64 / (1u64 << 20) as f64,
                    crate::mem::limit_as_given()
                ),
                _ => write!(f, "limit: {which} ({value})"),
            },
        }
    }
}
