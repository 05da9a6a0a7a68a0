//! Task creation cannot abort the process: past `limits::TASKS` tasks
//! alive at once an execution ends with outcome `limit` (tasks), and an
//! exploration reports the same execution for any number of threads,
//! also when the threads together hold more stacks than the process may
//! map (an execution that ran short is run again alone).

use sim::limits;
use sim::{costs::STEP, explore, ExecConfig, ExploreConfig, ObjId, Outcome, StrategySpec};

/// A task that starts `n` tasks, each of one step.
fn spawner(n: usize) -> impl Fn(&mut sim::Execution) + Sync {
    move |e: &mut sim::Execution| {
        e.setup(|| {
            sim::spawn("main", false, move || {
                for i in 0..n {
                    if sim::spawn(format!("t{i}"), false, || {
                        sim::point("work", ObjId::NONE, &STEP);
                    })
                    .is_none()
                    {
                        // The execution ends at the next scheduling point.
                        sim::point("refused", ObjId::NONE, &STEP);
                    }
                }
            });
        });
    }
}

fn run(n: usize, jobs: usize) -> sim::ExploreReport {
    let mut cfg = ExploreConfig::new(StrategySpec::Random, 7, 3, ExecConfig::default());
    cfg.jobs = jobs;
    cfg.shrink = false;
    explore(&cfg, &spawner(n))
}

#[test]
fn spawning_past_the_tasks_limit_ends_with_its_name_and_value() {
    let max = limits::TASKS.max as usize;
    let r = run(max + 10, 1);
    assert_eq!(
        r.report.outcome,
        Outcome::Limit {
            which: "tasks".into(),
            value: limits::TASKS.max
        }
    );
    assert!(r
        .report
        .outcome
        .to_string()
        .contains("the tasks limit (16384 alive at once)"));
    // Below the limit, the same set-up passes.
    assert_eq!(run(100, 1).report.outcome, Outcome::Pass);
}

#[test]
fn the_reported_execution_does_not_depend_on_the_threads() {
    // Three executions of 16 000 tasks on up to three threads: more stacks
    // than the process maps at once, so some run short and again alone.
    let n = limits::INSTANCES.max as usize;
    let one = run(n, 1);
    for jobs in [2, 3] {
        let many = run(n, jobs);
        assert_eq!(many.report.outcome, one.report.outcome, "--jobs {jobs}");
        assert_eq!(many.executions, one.executions);
        assert_eq!(many.report.steps, one.report.steps);
        assert_eq!(many.report.trace_hash, one.report.trace_hash);
    }
    assert_eq!(one.report.outcome, Outcome::Pass);
}

#[test]
fn jobs_past_the_limit_are_clamped() {
    let mut cfg = ExploreConfig::new(StrategySpec::Random, 1, 4, ExecConfig::default());
    cfg.jobs = usize::MAX;
    let r = explore(&cfg, &spawner(2));
    assert_eq!(r.report.outcome, Outcome::Pass);
    assert_eq!(r.executions, 4);
}
