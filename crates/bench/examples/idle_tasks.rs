//! Memory per idle task: N tasks each block (idle) in one execution; the
//! resident set size is read when all of them wait.
//!
//! `cargo run --release -p nssim-bench --example idle_tasks -- 10000 65536`

use sim::{ExecConfig, Execution, ObjId, Outcome, Schedule};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let tasks: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let stack: usize = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(128 * 1024);
    let before = rss_kib();
    let at_end = Arc::new(AtomicU64::new(0));
    let mut e = Execution::new(
        ExecConfig {
            stack_size: stack,
            ..ExecConfig::default()
        },
        &Schedule::Fair,
    );
    e.setup(|| {
        for i in 0..tasks {
            sim::spawn(format!("idle{i}"), true, || {
                sim::point("work", ObjId::NONE, &sim::costs::STEP);
                sim::block("idle", ObjId::NONE, true);
            });
        }
    });
    let seen = Arc::clone(&at_end);
    e.check_at_end(move || {
        seen.store(rss_kib(), Ordering::Relaxed);
        None
    });
    let t = std::time::Instant::now();
    let r = e.run();
    assert_eq!(r.outcome, Outcome::Pass);
    let during = at_end.load(Ordering::Relaxed);
    println!(
        "{tasks} idle tasks, {} KiB stacks: {} steps in {:.2?}; resident {} KiB before, {} KiB with every task waiting: {:.1} KiB per idle task",
        stack / 1024,
        r.steps,
        t.elapsed(),
        before,
        during,
        (during.saturating_sub(before)) as f64 / tasks as f64
    );
}
