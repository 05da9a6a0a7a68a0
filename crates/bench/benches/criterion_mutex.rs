//! Criterion benches of workload (a): one execution of N tasks each doing
//! M lock/increment/unlock on one mutex, under nssim's and shuttle's random
//! and PCT schedulers, and loom exhausting the tiny size.
//!
//! ```text
//! cargo bench -p nssim-bench --features compare --bench criterion_mutex
//! ```

#[cfg(not(loom))]
#[path = "../models/loom_models.rs"]
#[allow(dead_code)]
mod loom_models;
#[cfg(not(loom))]
#[path = "../models/shuttle_models.rs"]
#[allow(dead_code)]
mod shuttle_models;

#[cfg(loom)]
fn main() {}

#[cfg(not(loom))]
fn main() {
    imp::benches();
    criterion::Criterion::default()
        .configure_from_args()
        .final_summary();
}

#[cfg(not(loom))]
mod imp {
    use crate::{loom_models, shuttle_models as sh};
    use bench::*;
    use criterion::{criterion_group, Criterion, Throughput};
    use sim::{ExecConfig, Execution, Schedule};
    use std::hint::black_box;
    use std::time::Duration;

    /// One nssim execution of (a) under `schedule`, configured as
    /// `sim::explore` configures its executions (the steps are logged).
    fn nssim_once(schedule: &Schedule) -> u64 {
        let cfg = ExecConfig {
            log_steps: true,
            ..ExecConfig::default()
        };
        let mut e = Execution::new(cfg, schedule);
        nssim::mutex_build(MUTEX_TASKS, MUTEX_OPS)(&mut e);
        let r = e.run();
        assert!(!r.outcome.is_failure(), "{}", r.outcome);
        r.steps
    }

    fn mutex(c: &mut Criterion) {
        let (t, m) = (MUTEX_TASKS, MUTEX_OPS);
        let mut g = c.benchmark_group(format!("mutex_{t}x{m}"));
        g.throughput(Throughput::Elements((t * m) as u64));
        g.sample_size(20);
        g.warm_up_time(Duration::from_secs(1));
        g.measurement_time(Duration::from_secs(4));
        let mut i = 0u64;
        g.bench_function("nssim_random", |b| {
            b.iter(|| {
                i += 1;
                black_box(nssim_once(&Schedule::Random {
                    seed: 1,
                    iteration: i,
                }))
            })
        });
        // PCT spreads its change points over a typical execution's length,
        // which sim::explore measures once with a probe; take it from one
        // random execution here.
        let steps_hint = nssim_once(&Schedule::Random {
            seed: 1,
            iteration: u64::MAX,
        });
        g.bench_function("nssim_pct", |b| {
            b.iter(|| {
                i += 1;
                black_box(nssim_once(&Schedule::Pct {
                    seed: 1,
                    iteration: i,
                    depth: PCT_DEPTH,
                    steps_hint,
                }))
            })
        });
        let mut seed = 0u64;
        g.bench_function("shuttle_random", |b| {
            b.iter(|| {
                seed += 1;
                sh::run(sh::RandomScheduler::new_from_seed(seed, 1), sh::mutex(t, m))
            })
        });
        g.bench_function("shuttle_pct", |b| {
            b.iter(|| {
                seed += 1;
                let s = sh::PctScheduler::new_from_seed(seed, PCT_DEPTH as usize, 1);
                sh::run(s, sh::mutex(t, m))
            })
        });
        g.finish();

        let (t, m) = (MUTEX_TINY_TASKS, MUTEX_TINY_OPS);
        let mut g = c.benchmark_group(format!("mutex_{t}x{m}_exhaustive"));
        g.sample_size(20);
        g.warm_up_time(Duration::from_secs(1));
        g.measurement_time(Duration::from_secs(3));
        g.bench_function("nssim_dfs", |b| {
            b.iter(|| {
                let build = nssim::mutex_build(t, m);
                let unbounded = sim::StrategySpec::Dfs {
                    preemption_bound: DFS_UNBOUNDED,
                };
                let cfg = nssim::config(unbounded, 0, 10_000_000);
                black_box(sim::explore(&cfg, &build).executions)
            })
        });
        g.bench_function("loom_dpor", |b| {
            b.iter(|| loom_models::exhaust(loom_models::mutex(t, m)))
        });
        g.bench_function("shuttle_dfs", |b| {
            b.iter(|| sh::run(sh::DfsScheduler::new(None, false), sh::mutex(t, m)))
        });
        g.finish();
    }

    criterion_group!(benches, mutex);
}
