//! Exploration: run executions of one set-up under a strategy until one
//! fails or the budget is spent.

use crate::dfs::dfs;
use crate::exec::{ExecReport, Execution};
use crate::outcome::Outcome;
use crate::sched::ExecConfig;
use crate::search::{ExploreConfig, ExploreReport, Run, StrategySpec};
use crate::shrink::{past, segments_of, shrink_failure_until};
use crate::statecache::StateCache;
use crate::token::Schedule;
use std::cell::RefCell;
use std::rc::Rc;

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
    if began_past_deadline(&found) {
        report_first_whole(&mut found, cfg, &exec, &run_with);
    }
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
                crate::fiber::exploration_done();
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
    crate::fiber::exploration_done();
    found
}

/// Whether the search ended at an execution the deadline stopped before
/// its first step: it stopped between two executions.
fn began_past_deadline(found: &ExploreReport) -> bool {
    let at_start = matches!(
        &found.report.outcome,
        Outcome::Limit { which, value: 0 } if which == "wall-time"
    );
    at_start && found.report.steps == 0 && found.executions > 1
}

/// The search's first execution, as its schedule names it.
fn first_schedule(cfg: &ExploreConfig, stopped: &Schedule) -> Option<Schedule> {
    let first = cfg.shard.map_or(0, |(k, _)| k - 1);
    match (cfg.strategy, stopped) {
        (StrategySpec::Random, _) => Some(Schedule::Random {
            seed: cfg.seed,
            iteration: first,
        }),
        (
            StrategySpec::Pct { .. },
            Schedule::Pct {
                seed,
                depth,
                steps_hint,
                ..
            },
        ) => Some(Schedule::Pct {
            seed: *seed,
            iteration: first,
            depth: *depth,
            steps_hint: *steps_hint,
        }),
        (StrategySpec::Dfs { .. }, _) => Some(Schedule::Choices(Vec::new())),
        _ => None,
    }
}

/// The deadline passed between two executions: nothing of the one it
/// stopped had run, so the search reports its first execution instead,
/// run whole within the reporting deadline, its outcome the limit (with
/// [`Outcome::BETWEEN_EXECUTIONS`]): a token that replays what ran.
fn report_first_whole(
    found: &mut ExploreReport,
    cfg: &ExploreConfig,
    exec: &ExecConfig,
    run_with: &dyn Fn(&ExecConfig, &Schedule) -> ExecReport,
) {
    let Some(schedule) = first_schedule(cfg, &found.schedule) else {
        return;
    };
    let mut whole = exec.clone();
    whole.deadline = exec.report_deadline;
    let mut report = run_with(&whole, &schedule);
    if report.outcome.is_failure() {
        return;
    }
    report.outcome = Outcome::Limit {
        which: "wall-time".into(),
        value: Outcome::BETWEEN_EXECUTIONS,
    };
    if let Schedule::Random { iteration, .. } | Schedule::Pct { iteration, .. } = &schedule {
        found.iteration = *iteration;
    } else {
        found.iteration = 0;
    }
    found.report = report;
    found.schedule = schedule;
}

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
        StrategySpec::Fair => crate::seeded::fair(run),
        StrategySpec::Random => crate::seeded::random(cfg, run),
        StrategySpec::Pct { depth } => crate::seeded::pct(cfg, run, depth),
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
