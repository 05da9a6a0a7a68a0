//! One `dfs` search on several threads reports what it reports on one:
//! the same failure after the same executions, the same execution where
//! a budget runs out, the same runs cut short, whatever the top of the
//! tree whose subtrees the threads take.
#![cfg(not(loom))]

use bench::nssim::{ipc_loopers, small_build};
use sim::{ExecConfig, Execution, ExploreConfig, ExploreReport, Split, StrategySpec};
use std::sync::{Arc, Mutex};

fn config(bound: u32, iterations: u64, split: Split, jobs: usize) -> ExploreConfig {
    let mut cfg = ExploreConfig::new(
        StrategySpec::Dfs {
            preemption_bound: bound,
        },
        1,
        iterations,
        ExecConfig::default(),
    );
    cfg.shrink = false;
    cfg.split = split;
    cfg.jobs = jobs;
    cfg
}

/// What a report says, for comparison.
fn summary(r: &ExploreReport) -> String {
    format!(
        "{} executions, {} cut short, exhausted {}, iteration {}, {} with trace {:016x}, schedule {:?}",
        r.executions,
        r.cut_short,
        r.exhausted,
        r.iteration,
        r.report.outcome,
        r.report.trace_hash,
        r.schedule
    )
}

const TOPS: [Split; 3] = [
    Split::DEFAULT,
    Split {
        choices: 2,
        subtrees: usize::MAX,
    },
    Split {
        choices: u32::MAX,
        subtrees: 5,
    },
];

/// `search(bound, iterations, split, jobs)` reports the same on 2 and 3
/// threads as on one, for every top and budget.
fn same_on_every_thread_count(
    search: &dyn Fn(u32, u64, Split, usize) -> ExploreReport,
    bound: u32,
    budgets: &[u64],
) {
    for split in TOPS {
        for &iterations in budgets {
            let one = summary(&search(bound, iterations, split, 1));
            for jobs in [2, 3] {
                let many = summary(&search(bound, iterations, split, jobs));
                assert_eq!(many, one, "{split:?}, budget {iterations}, {jobs} threads");
            }
        }
    }
}

#[test]
fn a_failure_is_the_one_thread_failure() {
    // The ipc free-queue race of two loopers on v6.3: dfs finds the false
    // ENOSPC after some executions.
    let search =
        |bound, iterations, split, jobs| ipc_loopers(&[], config(bound, iterations, split, jobs));
    let found = search(2, 100_000, Split::DEFAULT, 1);
    assert!(found.report.outcome.is_failure(), "{}", summary(&found));
    assert!(found.executions > 10, "{}", summary(&found));
    // Budgets that end the search before, at and after the failure.
    let at = found.executions;
    same_on_every_thread_count(&search, 2, &[1, at / 2, at, at + 1, 100_000]);
}

#[test]
fn a_budget_ends_where_it_ends_on_one_thread() {
    // Workload (c): it passes; every budget below its size cuts the search.
    let build = small_build(Arc::new(Mutex::new(Default::default())));
    let search = |bound, iterations, split, jobs| -> ExploreReport {
        let build: &(dyn Fn(&mut Execution) + Sync) = &build;
        sim::explore(&config(bound, iterations, split, jobs), build)
    };
    let whole = search(u32::MAX, 1_000_000, Split::DEFAULT, 1);
    assert!(
        whole.exhausted && whole.executions > 20,
        "{}",
        summary(&whole)
    );
    let budgets: Vec<u64> = (1..=whole.executions + 1).step_by(3).collect();
    same_on_every_thread_count(&search, u32::MAX, &budgets);
    same_on_every_thread_count(&search, 1, &budgets);
}

/// What the unsharded search reports, made from the reports of its `n`
/// shards as `nssim merge` makes it.
fn merged(iterations: u64, shards: &[ExploreReport]) -> String {
    let counts = shards
        .iter()
        .flat_map(|r| part_of(r).subtrees.iter().copied());
    let n = shards.len() as u64;
    let m = sim::merge_dfs_shards(iterations, counts).expect("the shards merge");
    let (report, schedule) = match m.reported {
        sim::Reported::Failure { subtree } | sim::Reported::LastOf { subtree } => {
            let r = &shards[(subtree % n) as usize];
            (&r.report, &r.schedule)
        }
        sim::Reported::First => {
            let first = &part_of(&shards[0]).first;
            (&first.0, &first.1)
        }
    };
    format!(
        "{} executions, exhausted {}, iteration {}, {} with trace {:016x}, schedule {:?}",
        m.executions, m.exhausted, m.iteration, report.outcome, report.trace_hash, schedule
    )
}

/// [`summary`] less the runs cut short, which shards do not report.
fn unsharded(r: &ExploreReport) -> String {
    format!(
        "{} executions, exhausted {}, iteration {}, {} with trace {:016x}, schedule {:?}",
        r.executions, r.exhausted, r.iteration, r.report.outcome, r.report.trace_hash, r.schedule
    )
}

fn part_of(shard: &ExploreReport) -> &sim::DfsShard {
    shard.dfs_shard.as_ref().expect("a shard's report")
}

/// `search(bound, iterations, split, jobs, shard)`, cut into 1, 2 and 3
/// shards (on one and two threads each) and merged, reports what the
/// unsharded search reports, for every top and budget.
/// A search of (bound, iterations, split, jobs, shard).
type ShardedSearch<'a> = dyn Fn(u32, u64, Split, usize, Option<(u64, u64)>) -> ExploreReport + 'a;

fn same_when_sharded(search: &ShardedSearch<'_>, bound: u32, budgets: &[u64]) {
    for split in TOPS {
        for &iterations in budgets {
            let whole = unsharded(&search(bound, iterations, split, 1, None));
            for n in 1..=3 {
                for jobs in [1, 2] {
                    let shards: Vec<ExploreReport> = (1..=n)
                        .map(|k| search(bound, iterations, split, jobs, Some((k, n))))
                        .collect();
                    assert_eq!(
                        merged(iterations, &shards),
                        whole,
                        "{split:?}, budget {iterations}, {n} shards on {jobs} threads"
                    );
                }
            }
        }
    }
}

#[test]
fn shards_merge_into_the_unsharded_search() {
    let sharded = |cfg: ExploreConfig, shard| ExploreConfig { shard, ..cfg };
    // A failure, with budgets before, at and after it.
    let loopers = |bound, iterations, split, jobs, shard| {
        ipc_loopers(&[], sharded(config(bound, iterations, split, jobs), shard))
    };
    let found = loopers(2, 100_000, Split::DEFAULT, 1, None);
    assert!(found.report.outcome.is_failure(), "{}", summary(&found));
    let at = found.executions;
    same_when_sharded(&loopers, 2, &[1, at / 2, at, at + 1, 100_000]);
    // A pass, exhausted or cut by every budget below its size.
    let build = small_build(Arc::new(Mutex::new(Default::default())));
    let small = |bound, iterations, split, jobs, shard| -> ExploreReport {
        let build: &(dyn Fn(&mut Execution) + Sync) = &build;
        sim::explore(
            &sharded(config(bound, iterations, split, jobs), shard),
            build,
        )
    };
    let whole = small(u32::MAX, 1_000_000, Split::DEFAULT, 1, None);
    assert!(whole.exhausted, "{}", summary(&whole));
    let size = whole.executions;
    let mut budgets: Vec<u64> = (1..size).step_by(7).collect();
    budgets.extend([size - 1, size, size + 1]);
    same_when_sharded(&small, u32::MAX, &budgets);
}
