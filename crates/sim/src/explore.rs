//! Exploration: run executions of one set-up under a strategy until one
//! fails or the budget is spent.

use crate::exec::{ExecConfig, ExecReport, Execution};
use crate::strategy::ChoicePoint;
use crate::token::Schedule;
use crate::TaskId;

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

#[derive(Debug, Clone)]
pub struct ExploreConfig {
    pub strategy: StrategySpec,
    pub seed: u64,
    /// Most executions to run.
    pub iterations: u64,
    pub exec: ExecConfig,
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
}

/// Explore the executions that `build` sets up (it is called once per
/// execution, on a fresh [`Execution`], and must spawn the same tasks).
pub fn explore(cfg: &ExploreConfig, build: &mut dyn FnMut(&mut Execution)) -> ExploreReport {
    let mut run = |schedule: &Schedule| {
        let mut e = Execution::new(cfg.exec.clone(), schedule);
        build(&mut e);
        e.run()
    };
    let iterations = cfg.iterations.max(1);
    match cfg.strategy {
        StrategySpec::Fair => {
            let schedule = Schedule::Fair;
            let report = run(&schedule);
            ExploreReport {
                executions: 1,
                report,
                schedule,
                exhausted: false,
            }
        }
        StrategySpec::Random => seeded(iterations, &mut run, |i| Schedule::Random {
            seed: cfg.seed,
            iteration: i,
        }),
        StrategySpec::Pct { depth } => {
            // The change points are spread over the length of a typical
            // execution, measured once by a probe that depends only on the seed.
            let probe = run(&Schedule::Random {
                seed: cfg.seed,
                iteration: u64::MAX,
            });
            let steps_hint = probe.steps.max(1);
            seeded(iterations, &mut run, |i| Schedule::Pct {
                seed: cfg.seed,
                iteration: i,
                depth,
                steps_hint,
            })
        }
        StrategySpec::Dfs { preemption_bound } => dfs(iterations, preemption_bound, &mut run),
    }
}

fn seeded(
    iterations: u64,
    run: &mut dyn FnMut(&Schedule) -> ExecReport,
    schedule_of: impl Fn(u64) -> Schedule,
) -> ExploreReport {
    let mut last = None;
    for i in 0..iterations {
        let schedule = schedule_of(i);
        let report = run(&schedule);
        let failed = report.outcome.is_failure();
        last = Some((report, schedule));
        if failed {
            break;
        }
    }
    let (report, schedule) = last.expect("at least one iteration");
    let executions = match &schedule {
        Schedule::Random { iteration, .. } | Schedule::Pct { iteration, .. } => iteration + 1,
        _ => 1,
    };
    ExploreReport {
        executions,
        report,
        schedule,
        exhausted: false,
    }
}

struct Frame {
    point: ChoicePoint,
    alternatives: Vec<TaskId>,
    next: usize,
    preemptions_before: u32,
}

fn frame(point: ChoicePoint, preemptions_before: u32) -> Frame {
    let default = point.default_choice();
    let mut alternatives = vec![default];
    alternatives.extend(point.runnable.iter().copied().filter(|t| *t != default));
    let next = alternatives
        .iter()
        .position(|t| *t == point.chosen)
        .map_or(1, |i| i + 1);
    Frame {
        point,
        alternatives,
        next,
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

fn dfs(iterations: u64, bound: u32, run: &mut dyn FnMut(&Schedule) -> ExecReport) -> ExploreReport {
    let mut stack: Vec<Frame> = Vec::new();
    let mut prefix: Vec<u32> = Vec::new();
    let mut executions = 0;
    loop {
        let report = run(&Schedule::Choices(prefix.clone()));
        executions += 1;
        for point in report.choices.iter().skip(stack.len()) {
            let before = stack
                .last()
                .map_or(0, |f| f.preemptions_before + preemptions(&f.point));
            stack.push(frame(point.clone(), before));
        }
        let schedule = Schedule::Choices(trimmed_choices(&report.choices));
        if report.outcome.is_failure() || executions >= iterations {
            return ExploreReport {
                executions,
                report,
                schedule,
                exhausted: false,
            };
        }
        if !backtrack(&mut stack, bound) {
            return ExploreReport {
                executions,
                report,
                schedule,
                exhausted: true,
            };
        }
        prefix = stack.iter().map(|f| f.point.chosen as u32).collect();
    }
}

/// Move to the next unexplored alternative within the preemption bound;
/// false when the space is exhausted.
fn backtrack(stack: &mut Vec<Frame>, bound: u32) -> bool {
    while let Some(top) = stack.last_mut() {
        while top.next < top.alternatives.len() {
            let alt = top.alternatives[top.next];
            top.next += 1;
            if top.preemptions_before + top.point.is_preemption(alt) as u32 <= bound {
                top.point.chosen = alt;
                return true;
            }
        }
        stack.pop();
    }
    false
}
