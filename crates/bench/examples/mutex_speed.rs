//! Workload (a) on nssim alone, for quick before/after comparisons of the
//! scheduler: 4 tasks x 1000 lock/increment/unlock, `N` executions (default
//! 300) per strategy, best of `ROUNDS` (default 5) rounds.
//!
//! `cargo run --release -p nssim-bench --example mutex_speed -- 300 [ROUNDS [random|pct]]`

use bench::nssim::{executions_run, mutex};
use sim::StrategySpec;
use std::time::Instant;

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(300);
    let rounds: u64 = std::env::args()
        .nth(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(5);
    let only = std::env::args().nth(3);
    for (name, strategy) in [
        ("random", StrategySpec::Random),
        ("pct", StrategySpec::Pct { depth: 3 }),
    ] {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let mut best = f64::MAX;
        let mut runs = 0;
        for round in 0..rounds {
            let start = Instant::now();
            let r = mutex(strategy, round + 1, n, 4, 1000);
            best = best.min(start.elapsed().as_secs_f64());
            runs = executions_run(strategy, &r);
        }
        println!(
            "{name:>6}: {runs} executions, best {:.1} ms, {:.0} executions/s, {:.2} M lock ops/s",
            best * 1e3,
            runs as f64 / best,
            runs as f64 * 4000.0 / best / 1e6
        );
    }
}
