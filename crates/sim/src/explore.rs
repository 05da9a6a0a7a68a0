//! Exploration: run executions of one set-up under a strategy until one
//! fails or the budget is spent.

use crate::exec::{ExecConfig, ExecReport, Execution};
use crate::outcome::Outcome;
use crate::statecache::{Probe, StateCache};
use crate::strategy::{self, ChoicePoint};
use crate::token::{Schedule, Segment};
use crate::TaskId;
use std::cell::RefCell;
use std::rc::Rc;

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

    fn tell(&self, done: u64) {
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
    pub split: crate::dpor::Split,
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
            split: crate::dpor::Split::DEFAULT,
            state_cache: true,
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

/// Most executions one shrink may run: a count, not a time, so that the
/// shrunk schedule is the same on every machine.
pub const SHRINK_BUDGET: usize = 2000;

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
    /// [`merge_dfs_shards`](crate::dpor::merge_dfs_shards).
    pub dfs_shard: Option<crate::dpor::DfsShard>,
    /// A stateful `dfs` search: the distinct states the model named.
    pub states: Option<u64>,
}

/// Explore the executions that `build` sets up (it is called once per
/// execution, on a fresh [`Execution`], and must spawn the same tasks).
///
/// `build` may be called from several threads at once when `cfg.jobs > 1`.
pub fn explore(cfg: &ExploreConfig, build: &(dyn Fn(&mut Execution) + Sync)) -> ExploreReport {
    // The search keeps no step log (a step's cheapest record is none);
    // the failing execution, if any, is run again with one to be named.
    let mut exec = cfg.exec.clone();
    exec.log_steps = false;
    let run_with = |config: &ExecConfig, schedule: &Schedule| {
        let mut e = Execution::new(config.clone(), schedule);
        build(&mut e);
        e.run()
    };
    let run = |schedule: &Schedule| run_with(&exec, schedule);
    let mut found = search(cfg, &run, build);
    let limit = matches!(found.report.outcome, Outcome::Limit { .. });
    if found.report.outcome.is_failure() && cfg.strategy != StrategySpec::Fair && !limit {
        exec.log_steps = true;
        if found.report.step_log.is_empty() {
            // Run once more with a step log, within the deadline: past
            // it the schedule stays the one found, unnamed and unshrunk.
            let logged = run_with(&exec, &found.schedule);
            if logged.trace_hash != found.report.trace_hash {
                debug_assert!(past(exec.deadline));
                found.unnamed_at_deadline = true;
                crate::exec::exploration_done();
                return found;
            }
            found.report = logged;
        }
        let mut loose = exec.clone();
        loose.lenient_segments = true;
        let mut run_loose = |schedule: &Schedule| {
            let mut e = Execution::new(loose.clone(), schedule);
            build(&mut e);
            e.run()
        };
        name_schedule(&mut found, cfg.shrink, exec.deadline, &mut run_loose);
    }
    crate::exec::exploration_done();
    found
}

pub(crate) type Run<'a> = dyn Fn(&Schedule) -> ExecReport + Sync + 'a;

/// Replace a failing execution's schedule by named segments, shrunk first
/// when asked.
fn name_schedule(
    found: &mut ExploreReport,
    shrink: bool,
    deadline: Option<std::time::Instant>,
    run: &mut dyn FnMut(&Schedule) -> ExecReport,
) {
    if shrink {
        let (segments, report, summary) = shrink_failure_until(run, found.report.clone(), deadline);
        found.schedule = Schedule::Segments(segments);
        found.report = report;
        found.shrink = Some(summary);
    } else if matches!(found.schedule, Schedule::Choices(_)) {
        found.schedule = Schedule::Segments(segments_of(&found.report));
    }
}

fn search(
    cfg: &ExploreConfig,
    run: &Run<'_>,
    build: &(dyn Fn(&mut Execution) + Sync),
) -> ExploreReport {
    let iterations = cfg.iterations.max(1);
    match cfg.strategy {
        StrategySpec::Fair => strategy::fair::explore(run),
        StrategySpec::Random => strategy::random::explore(cfg, run),
        StrategySpec::Pct { depth } => strategy::pct::explore(cfg, run, depth),
        StrategySpec::Dfs { preemption_bound } => {
            let done = std::sync::atomic::AtomicU64::new(0);
            let tell = || {
                let done = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                cfg.progress.tell(done);
            };
            let mut exec = cfg.exec.clone();
            exec.log_steps = true;
            if cfg.reduction {
                return crate::dpor::search(
                    iterations,
                    preemption_bound,
                    cfg.jobs,
                    cfg.split,
                    cfg.shard,
                    &|plan| {
                        tell();
                        let mut e = Execution::new(exec.clone(), &Schedule::Choices(Vec::new()));
                        e.set_plan(plan);
                        build(&mut e);
                        e.run()
                    },
                );
            }
            let cache = cfg
                .state_cache
                .then(|| Rc::new(RefCell::new(StateCache::default())));
            let mut report = dfs(
                iterations,
                preemption_bound,
                cache.as_ref(),
                &mut |s, probe| {
                    tell();
                    let mut e = Execution::new(exec.clone(), s);
                    if let Some(probe) = probe {
                        e.set_probe(probe);
                    }
                    build(&mut e);
                    e.run()
                },
            );
            report.states = cache.map(|c| c.borrow().states());
            report
        }
    }
}

/// The iterations of this shard, in order: position p is iteration
/// `first + p * stride`. Computed, not listed (a run may have 10^9).
#[derive(Clone, Copy)]
struct ShardIterations {
    first: u64,
    stride: u64,
    len: usize,
}

impl ShardIterations {
    fn of(cfg: &ExploreConfig) -> Self {
        let (k, n) = cfg.shard.unwrap_or((1, 1));
        let total = cfg.iterations.max(1);
        let first = k - 1;
        let len = if first >= total {
            0
        } else {
            (total - first).div_ceil(n)
        };
        ShardIterations {
            first,
            stride: n,
            len: len as usize,
        }
    }

    fn at(&self, position: usize) -> u64 {
        self.first + position as u64 * self.stride
    }
}

/// Seeded strategies: iteration i is a pure function of (seed, i), so any
/// number of threads can run them; the reported failure is the one with the
/// lowest index, exactly as a sequential run finds it.
pub(crate) fn seeded(
    cfg: &ExploreConfig,
    run: &Run<'_>,
    schedule_of: &(dyn Fn(u64) -> Schedule + Sync),
) -> ExploreReport {
    let indices = ShardIterations::of(cfg);
    let jobs = cfg
        .jobs
        .clamp(1, indices.len.max(1))
        .min(crate::limits::JOBS.max as usize);
    let done = std::sync::atomic::AtomicU64::new(0);
    let counted = |schedule: &Schedule| {
        let r = run(schedule);
        cfg.progress
            .tell(done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1);
        r
    };
    let (position, report) = if jobs == 1 {
        first_failure_sequential(indices, &counted, schedule_of)
    } else {
        first_failure_parallel(indices, jobs, &counted, schedule_of)
    };
    ExploreReport {
        executions: position as u64 + 1,
        report,
        schedule: schedule_of(indices.at(position)),
        exhausted: false,
        shrink: None,
        unnamed_at_deadline: false,
        iteration: indices.at(position),
        cut_short: 0,
        dfs_shard: None,
        states: None,
    }
}

fn first_failure_sequential(
    indices: ShardIterations,
    run: &Run<'_>,
    schedule_of: &(dyn Fn(u64) -> Schedule + Sync),
) -> (usize, ExecReport) {
    let mut last = None;
    for pos in 0..indices.len.max(1) {
        let report = run(&schedule_of(indices.at(pos)));
        let failed = report.outcome.is_failure();
        last = Some((pos, report));
        if failed {
            break;
        }
    }
    last.expect("at least one iteration")
}

/// Several threads take iterations in order; the lowest failing one is
/// reported, as [`first_failure_sequential`] finds it. An execution that
/// ran out of a resource of the process (memory, stacks) is run again
/// alone once the threads are done, so that what is reported never
/// depends on what the other threads held. A thread that cannot be
/// started leaves its share to the others (and to this one).
fn first_failure_parallel(
    indices: ShardIterations,
    jobs: usize,
    run: &Run<'_>,
    schedule_of: &(dyn Fn(u64) -> Schedule + Sync),
) -> (usize, ExecReport) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let next = AtomicUsize::new(0);
    let first_failure = AtomicUsize::new(usize::MAX);
    let kept: Mutex<Vec<(usize, ExecReport)>> = Mutex::new(Vec::new());
    let deferred: Mutex<Vec<usize>> = Mutex::new(Vec::new());
    let work = || loop {
        let pos = next.fetch_add(1, Ordering::Relaxed);
        if pos >= indices.len || pos > first_failure.load(Ordering::Relaxed) {
            break;
        }
        let report = run(&schedule_of(indices.at(pos)));
        if report.outcome.is_shared_resource_limit() {
            deferred.lock().unwrap_or_else(|e| e.into_inner()).push(pos);
            continue;
        }
        let failed = report.outcome.is_failure();
        if failed {
            first_failure.fetch_min(pos, Ordering::Relaxed);
        }
        if failed || pos == indices.len - 1 {
            kept.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((pos, report));
        }
    };
    on_threads(jobs, "nssim-job", &work);
    let mut kept = kept.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut deferred = deferred.into_inner().unwrap_or_else(|e| e.into_inner());
    deferred.sort_unstable();
    let mut wanted = first_failure.into_inner().min(indices.len - 1);
    for pos in deferred.into_iter().filter(|p| *p <= wanted) {
        let report = run(&schedule_of(indices.at(pos)));
        let failed = report.outcome.is_failure();
        if failed || pos == indices.len - 1 {
            kept.push((pos, report));
        }
        if failed {
            wanted = pos;
            break;
        }
    }
    let at = kept
        .iter()
        .position(|(pos, _)| *pos == wanted)
        .expect("the reported execution was kept");
    kept.swap_remove(at)
}

/// Run `work` on `jobs` threads, this one among them, until each returns;
/// what each thread mapped for its executions' stacks is not kept for a
/// later run. A thread that cannot be started leaves its share to the
/// others. True when another thread ran beside this one.
pub(crate) fn on_threads(jobs: usize, name: &str, work: &(dyn Fn() + Sync)) -> bool {
    let work = || {
        work();
        crate::exec::trim_stack_pool(0);
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

struct Frame {
    point: ChoicePoint,
    /// Non-preemptive choice first, then the others by id.
    alternatives: Vec<TaskId>,
    /// Alternatives already explored from this point.
    done: Vec<TaskId>,
    preemptions_before: u32,
}

fn frame(point: ChoicePoint, preemptions_before: u32) -> Frame {
    let default = point.default_choice();
    let mut alternatives = vec![default];
    alternatives.extend(point.runnable.iter().copied().filter(|t| *t != default));
    Frame {
        done: vec![point.chosen],
        point,
        alternatives,
        preemptions_before,
    }
}

fn preemptions(point: &ChoicePoint) -> u32 {
    point.is_preemption(point.chosen) as u32
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

/// Runs one execution of an explicit schedule, with the probe of a
/// stateful search.
type DfsRun<'a> = dyn FnMut(&Schedule, Option<Probe>) -> ExecReport + 'a;

/// Every interleaving within the bound, without reduction; with a state
/// cache, every state the model names within the bound, each explored
/// once (see `statecache`).
fn dfs(
    iterations: u64,
    bound: u32,
    cache: Option<&Rc<RefCell<StateCache>>>,
    run: &mut DfsRun<'_>,
) -> ExploreReport {
    let mut stack: Vec<Frame> = Vec::new();
    let mut prefix: Vec<u32> = Vec::new();
    let mut executions = 0;
    let mut first = None;
    let mut last_whole: Option<(ExecReport, Schedule)> = None;
    loop {
        let probe = cache.map(|cache| Probe {
            cache: Rc::clone(cache),
            prefix_len: prefix.len() as u64,
            bounded: bound != u32::MAX,
        });
        let cut_before = cache.map_or(0, |c| c.borrow().cut());
        let mut report = run(&Schedule::Choices(prefix.clone()), probe);
        executions += 1;
        // An execution that ended at a state seen before is no whole run
        // to report: the last whole one is.
        let whole = cache.is_none_or(|c| c.borrow().cut() == cut_before);
        let schedule = Schedule::Choices(trimmed_choices(&report.choices));
        // The choice points are the search's memory: moved into its frames
        // when it goes on, dropped at once when it ends.
        let choices = std::mem::take(&mut report.choices);
        if report.outcome.is_failure() {
            return ExploreReport::ended(executions, report, schedule, false);
        }
        let first = first.get_or_insert_with(|| (report.clone(), schedule.clone()));
        if whole {
            last_whole = Some((report, schedule));
        }
        if executions >= iterations {
            return ExploreReport::budget_spent(executions, first.clone());
        }
        for point in choices.into_iter().skip(stack.len()) {
            let before = stack
                .last()
                .map_or(0, |f| f.preemptions_before + preemptions(&f.point));
            stack.push(frame(point, before));
        }
        let (report, schedule) = last_whole.as_ref().unwrap_or(first);
        // The frames grow between executions, where no execution looks.
        if let Some(limit) = memory_limit() {
            let mut report = report.clone();
            report.outcome = limit;
            return ExploreReport::ended(executions, report, schedule.clone(), false);
        }
        match backtrack(&mut stack, bound) {
            Some(()) => {}
            None => {
                return ExploreReport::ended(executions, report.clone(), schedule.clone(), true)
            }
        }
        prefix = stack.iter().map(|f| f.point.chosen as u32).collect();
    }
}

/// Move to the next unexplored alternative within the preemption bound;
/// `None` when the space is exhausted.
fn backtrack(stack: &mut Vec<Frame>, bound: u32) -> Option<()> {
    while let Some(top) = stack.last_mut() {
        let next = top.alternatives.iter().copied().find(|alt| {
            !top.done.contains(alt)
                && top.preemptions_before + top.point.is_preemption(*alt) as u32 <= bound
        });
        if let Some(alt) = next {
            top.done.push(alt);
            top.point.chosen = alt;
            return Some(());
        }
        stack.pop();
    }
    None
}

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
fn past(deadline: Option<std::time::Instant>) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The iterations a shard runs are the ones `shard_of` gives it, and
    /// the shards together run every iteration once.
    #[test]
    fn a_shards_iterations_are_the_ones_shard_of_names() {
        for total in [1u64, 2, 7, 30] {
            for n in 1..=5u64 {
                let mut seen = vec![0; total as usize];
                for k in 1..=n {
                    let mut cfg =
                        ExploreConfig::new(StrategySpec::Random, 1, total, ExecConfig::default());
                    cfg.shard = Some((k, n));
                    let its = ShardIterations::of(&cfg);
                    for p in 0..its.len {
                        let i = its.at(p);
                        assert_eq!(shard_of(i, n), k, "iteration {i} of {total}, {n} shards");
                        seen[i as usize] += 1;
                    }
                }
                assert!(seen.iter().all(|&c| c == 1), "{total} over {n}: {seen:?}");
            }
        }
    }
}
