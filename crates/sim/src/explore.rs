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
