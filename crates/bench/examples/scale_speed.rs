//! The scale row of `nssim bench` alone, under the system allocator and
//! with a choice of rows: one execution of each `TOTAL` tasks of three steps,
//! at most `ALIVE` alive at once, rows interleaved, best of `ROUNDS`.
//!
//! `cargo run --release -p nssim-bench --example scale_speed -- [ALIVE [ROUNDS [TOTAL...]]]`
//! (default: 10000 alive, 7 rounds, 10000 and 30000 tasks).

use bench::nssim::scale_run;
use std::time::Duration;

fn main() {
    let mut args = std::env::args().skip(1);
    let alive: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(7);
    let mut totals: Vec<usize> = args.filter_map(|a| a.parse().ok()).collect();
    if totals.is_empty() {
        totals = vec![alive, 3 * alive];
    }
    let mut best = vec![Duration::MAX; totals.len()];
    let mut steps = vec![0; totals.len()];
    let mut outcomes = vec![String::new(); totals.len()];
    // One round more than counted: the first maps the stacks.
    for round in 0..=rounds {
        for (i, &total) in totals.iter().enumerate() {
            let (r, d) = scale_run(total, alive);
            steps[i] = r.steps;
            outcomes[i] = r.outcome.to_string();
            if round > 0 {
                best[i] = best[i].min(d);
            }
        }
    }
    for (i, &total) in totals.iter().enumerate() {
        println!(
            "{total:>7} tasks: {:>7} steps, best {:.1} ms, {:.0} ns/step, {:.2}x the first row, {}",
            steps[i],
            best[i].as_secs_f64() * 1e3,
            best[i].as_secs_f64() * 1e9 / steps[i] as f64,
            best[i].as_secs_f64() / best[0].as_secs_f64(),
            outcomes[i]
        );
    }
}
