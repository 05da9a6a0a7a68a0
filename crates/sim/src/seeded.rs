//! The searches that run a schedule per iteration: `random` and `pct`,
//! whose iteration i is a pure function of (seed, i), so that any number
//! of threads and shards run them; and `fair`, whose one execution is
//! the discrete-event order.

use crate::exec::ExecReport;
use crate::search::{on_threads, ExploreConfig, ExploreReport, Run};
use crate::token::Schedule;

/// The exploration: iteration i runs stream i of the seed.
pub(crate) fn random(cfg: &ExploreConfig, run: &Run<'_>) -> ExploreReport {
    seeded(cfg, run, &|i| Schedule::Random {
        seed: cfg.seed,
        iteration: i,
    })
}

/// The exploration: the change points are spread over the choice points of
/// a typical execution (PCT counts only those), measured once by a probe
/// that depends only on the seed; iteration i then runs stream i.
pub(crate) fn pct(cfg: &ExploreConfig, run: &Run<'_>, depth: u32) -> ExploreReport {
    let steps_hint = pct_hint(&run(&pct_probe(cfg.seed)));
    seeded(cfg, run, &|i| Schedule::Pct {
        seed: cfg.seed,
        iteration: i,
        depth,
        steps_hint,
    })
}

/// The execution PCT measures a model with before its search: a random
/// one that depends on the seed alone.
pub fn pct_probe(seed: u64) -> Schedule {
    Schedule::Random {
        seed,
        iteration: u64::MAX,
    }
}

/// How many choice points PCT spreads its change points over, from its
/// probe: those are the only steps it counts.
pub fn pct_hint(probe: &ExecReport) -> u64 {
    probe.choice_points.max(1)
}

/// The exploration: the one execution there is.
pub(crate) fn fair(run: &Run<'_>) -> ExploreReport {
    let schedule = Schedule::Fair;
    let report = run(&schedule);
    ExploreReport {
        executions: 1,
        report,
        schedule,
        exhausted: false,
        shrink: None,
        unnamed_at_deadline: false,
        cut_short: 0,
        dfs_shard: None,
        states: None,
        iteration: 0,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::ExecConfig;
    use crate::search::{shard_of, StrategySpec};

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
