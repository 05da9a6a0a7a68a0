//! What every search shares: its configuration and report, and the
//! helpers the searches use (threads, the memory limit between
//! executions, the explicit schedule of a run).

use crate::exec::ExecReport;
use crate::outcome::Outcome;
use crate::sched::ExecConfig;
use crate::strategy::ChoicePoint;
use crate::token::Schedule;

/// Which strategy explores, with its parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrategySpec {
    /// Uniformly random choice at every scheduling point.
    Random,
    /// PCT with `depth` (d) priority change points.
    Pct { depth: u32 },
    /// Exhaustive depth-first search with at most `preemption_bound`
    /// preemptions per execution.
    Dfs { preemption_bound: u32 },
    /// Discrete-event order by virtual clock: one deterministic execution.
    Fair,
}

/// Told the number of executions finished so far (from any thread).
#[derive(Clone, Default)]
pub struct Progress(Option<std::sync::Arc<dyn Fn(u64) + Send + Sync>>);

impl Progress {
    pub fn new(f: impl Fn(u64) + Send + Sync + 'static) -> Self {
        Progress(Some(std::sync::Arc::new(f)))
    }

    pub(crate) fn tell(&self, done: u64) {
        if let Some(f) = &self.0 {
            f(done);
        }
    }
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Progress(on)"
        } else {
            "Progress(off)"
        })
    }
}

#[derive(Debug, Clone)]
pub struct ExploreConfig {
    pub strategy: StrategySpec,
    pub seed: u64,
    /// Most executions to run.
    pub iterations: u64,
    pub exec: ExecConfig,
    /// After a failure, look for a shorter schedule with the same failure.
    pub shrink: bool,
    /// Threads running executions at once (`random` and `pct`); the result
    /// is the same for any number.
    pub jobs: usize,
    /// `Some((k, n))`: run only the executions of shard k of n (1-based):
    /// iterations i with i mod n = k - 1; with `dfs` (and reduction), the
    /// subtrees below the top of the tree whose index i has i mod n =
    /// k - 1. The union of the n shards is the unsharded run. `fair` runs,
    /// and `dfs` runs without reduction, belong whole to shard 1.
    pub shard: Option<(u64, u64)>,
    /// Progress reports, for a progress bar; they never change a result.
    pub progress: Progress,
    /// `dfs`: run one execution per class of interleavings that only
    /// reorder independent steps (optimal partial-order reduction).
    pub reduction: bool,
    /// `dfs` with reduction: the top of the tree, whose subtrees are
    /// searched apart (on `jobs` threads). Part of what the search is: a
    /// different top may order and, under a preemption bound, choose the
    /// executions differently.
    pub split: Split,
    /// `dfs` without reduction: end an execution at a state the model
    /// names and the search reached before (see `statecache`).
    pub state_cache: bool,
}

impl ExploreConfig {
    /// A sequential, unsharded exploration.
    pub fn new(strategy: StrategySpec, seed: u64, iterations: u64, exec: ExecConfig) -> Self {
        ExploreConfig {
            strategy,
            seed,
            iterations,
            exec,
            shrink: true,
            jobs: 1,
            shard: None,
            progress: Progress::default(),
            reduction: true,
            split: Split::DEFAULT,
            state_cache: true,
        }
    }

    /// Whether the run's executions are divided among several shards (a
    /// random or PCT run's iterations, a reduced dfs search's subtrees),
    /// so that no shard alone sees the whole run.
    pub fn split_over_shards(&self) -> bool {
        match (self.shard, self.strategy) {
            (None, _) | (Some((_, 1)), _) => false,
            (Some(_), StrategySpec::Dfs { .. }) => self.reduction,
            (Some(_), StrategySpec::Fair) => false,
            (Some(_), _) => self.iterations > 1,
        }
    }

    /// False when this shard has nothing of the run to do.
    pub fn runs_in_shard(&self) -> bool {
        match (self.shard, self.strategy) {
            (None, _) => true,
            (Some((k, n)), StrategySpec::Dfs { .. }) if self.reduction => k <= n,
            (Some((k, _)), StrategySpec::Dfs { .. } | StrategySpec::Fair) => k == 1,
            (Some((k, n)), _) => k - 1 < self.iterations.max(1) && k <= n,
        }
    }
}

/// The shard (1-based, of `n`) that runs iteration `index` of a random or
/// PCT run, or subtree `index` of a `dfs` search: index mod n, plus one.
pub fn shard_of(index: u64, n: u64) -> u64 {
    index % n + 1
}

/// What shrinking achieved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShrinkReport {
    pub steps_before: u64,
    pub steps_after: u64,
    pub preemptions_before: u64,
    pub preemptions_after: u64,
    /// Executions the search ran.
    pub attempts: usize,
    /// The wall-clock deadline stopped the search: the schedule is the
    /// shortest found by then.
    pub stopped_at_deadline: bool,
}

#[derive(Debug, Clone)]
pub struct ExploreReport {
    /// Executions run (the probe of `pct` not counted).
    pub executions: u64,
    /// The first failing execution, or the last one run.
    pub report: ExecReport,
    /// The schedule that reproduces `report`.
    pub schedule: Schedule,
    /// `dfs` only: every schedule within the preemption bound was run.
    pub exhausted: bool,
    /// Before and after, when a failure was shrunk.
    pub shrink: Option<ShrinkReport>,
    /// The wall-clock deadline (`exec.deadline`) passed before the failure
    /// could be run again to be named and shrunk: `schedule` is the one
    /// the search found.
    pub unnamed_at_deadline: bool,
    /// Where `report` is in the whole run's order, whatever the shard: the
    /// iteration of a seeded run, the execution's index in a search.
    pub iteration: u64,
    /// `dfs` only: runs cut short by sleep sets (every runnable task was
    /// asleep: the rest repeated explored executions), not counted in
    /// `executions`.
    pub cut_short: u64,
    /// A shard of a `dfs` search: the subtrees it searched, for
    /// [`merge_dfs_shards`](crate::merge_dfs_shards).
    pub dfs_shard: Option<DfsShard>,
    /// A stateful `dfs` search: the distinct states the model named.
    pub states: Option<u64>,
}

pub(crate) type Run<'a> = dyn Fn(&Schedule) -> ExecReport + Sync + 'a;

/// Run `work` on `jobs` threads, this one among them, until each returns;
/// what each thread mapped for its executions' stacks is not kept for a
/// later run. A thread that cannot be started leaves its share to the
/// others. True when another thread ran beside this one.
pub(crate) fn on_threads(jobs: usize, name: &str, work: &(dyn Fn() + Sync)) -> bool {
    let work = || {
        work();
        crate::fiber::trim_stack_pool(0);
    };
    let mut beside = false;
    std::thread::scope(|scope| {
        for i in 1..jobs {
            let spawned = std::thread::Builder::new()
                .name(format!("{name}-{i}"))
                .spawn_scoped(scope, work);
            if spawned.is_err() {
                break;
            }
            beside = true;
        }
        work();
    });
    beside
}

/// The explicit schedule of a run: its choices up to the last one that was
/// not the non-preemptive default.
pub(crate) fn trimmed_choices(points: &[ChoicePoint]) -> Vec<u32> {
    let keep = points
        .iter()
        .rposition(|p| p.chosen != p.default_choice())
        .map_or(0, |i| i + 1);
    points[..keep].iter().map(|p| p.chosen as u32).collect()
}

impl ExploreReport {
    /// The report of an exhaustive search that ended after `executions`,
    /// with the last execution's `report` and `schedule`.
    pub(crate) fn ended(
        executions: u64,
        report: ExecReport,
        schedule: Schedule,
        exhausted: bool,
    ) -> ExploreReport {
        ExploreReport {
            executions,
            report,
            schedule,
            exhausted,
            shrink: None,
            unnamed_at_deadline: false,
            iteration: executions.saturating_sub(1),
            cut_short: 0,
            dfs_shard: None,
            states: None,
        }
    }

    /// The report of an exhaustive search whose budget of `executions`
    /// ran out: it reports its first execution (`first`), which every
    /// shard of the search runs, so that merged shards report it too.
    pub(crate) fn budget_spent(executions: u64, first: (ExecReport, Schedule)) -> ExploreReport {
        let mut r = ExploreReport::ended(executions, first.0, first.1, false);
        r.iteration = 0;
        r
    }
}

/// Outcome `limit` (memory) once the process holds more than
/// `--max-memory`: a search checks between executions, where its own
/// memory grows and no execution looks.
pub(crate) fn memory_limit() -> Option<Outcome> {
    crate::mem::over_limit().map(|bytes| Outcome::Limit {
        which: "memory".into(),
        value: bytes as u64,
    })
}

/// The top of the search tree: the states where every runnable task not
/// asleep is tried, so that below them the tree falls into subtrees that
/// are searched apart, one per path through the top, in any order and on
/// any thread. A state is in the top when the one before it is, it is
/// among an execution's first `choices` choice points, and fewer than
/// `subtrees` branches were planned in the top before it (in depth-first
/// order, so the first paths, whose subtrees are the largest, are split
/// the deepest). It depends on the tree alone: never on threads, shards
/// or time.
#[derive(Debug, Clone, Copy, Default)]
pub struct Split {
    pub choices: u32,
    pub subtrees: usize,
}

impl Split {
    /// Deep enough that on two threads the largest subtree of the
    /// library's longest searches is a small part of the whole; the
    /// number of subtrees keeps the top small where tasks are independent
    /// (every path of independent steps is a subtree, most of them cut
    /// short by sleep sets).
    pub const DEFAULT: Split = Split {
        choices: 50,
        subtrees: 4096,
    };

    /// No top: one subtree, the whole search.
    pub const NONE: Split = Split {
        choices: 0,
        subtrees: 0,
    };
}

/// How a shard's search of one subtree ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SubtreeEnd {
    /// Every execution in it was run.
    Searched,
    /// Its last execution failed.
    Failed,
    /// It ran as many executions as the budget could leave it (the whole
    /// budget less the first executions of the subtrees before it).
    Budget,
}

/// One subtree a shard of a `dfs` search searched: subtree i is shard
/// k's of n when i mod n = k - 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubtreeCount {
    pub index: u64,
    pub executions: u64,
    pub end: SubtreeEnd,
}

/// What a shard of a `dfs` search reports besides its execution.
#[derive(Debug, Clone)]
pub struct DfsShard {
    /// Its subtrees in order, up to the first that failed or spent its
    /// budget (no later one can matter).
    pub subtrees: Vec<SubtreeCount>,
    /// The search's first execution, which every shard runs: what the
    /// search reports when its budget runs out.
    pub first: Box<(ExecReport, Schedule)>,
}
