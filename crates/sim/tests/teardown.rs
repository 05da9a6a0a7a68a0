//! The end of an execution: a daemon idle in `sim::idle_wait` returns from
//! its function (no panic unwinds it), and one idle in a plain `block` is
//! unwound; both drop what they hold.

use sim::{costs::STEP, explore, ExecConfig, ExploreConfig, ObjId, StrategySpec};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Counts its drops.
struct Held(&'static AtomicUsize);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// What the daemons of one test saw.
struct Seen {
    returned: AtomicUsize,
    dropped: AtomicUsize,
    woken: AtomicUsize,
}

impl Seen {
    const fn new() -> Self {
        Seen {
            returned: AtomicUsize::new(0),
            dropped: AtomicUsize::new(0),
            woken: AtomicUsize::new(0),
        }
    }
}

/// A daemon that waits for work on an object a worker wakes twice.
fn model(seen: &'static Seen, idle_wait: bool) -> impl Fn(&mut sim::Execution) + Sync {
    move |e: &mut sim::Execution| {
        e.setup(|| {
            let queue = sim::new_object("queue");
            sim::spawn("kworker", true, move || {
                let _held = Held(&seen.dropped);
                loop {
                    if idle_wait {
                        if !sim::idle_wait("idle", queue) {
                            break;
                        }
                    } else {
                        sim::block("idle", queue, true);
                    }
                    seen.woken.fetch_add(1, Ordering::SeqCst);
                }
                seen.returned.fetch_add(1, Ordering::SeqCst);
            });
            sim::spawn("worker", false, move || {
                for _ in 0..2 {
                    sim::point("queue work", ObjId::NONE, &STEP);
                    sim::wake_all(queue, 0);
                }
            });
        });
    }
}

fn run(seen: &'static Seen, idle_wait: bool) -> u64 {
    let mut cfg = ExploreConfig::new(StrategySpec::Random, 7, 20, ExecConfig::default());
    cfg.shrink = false;
    let report = explore(&cfg, &model(seen, idle_wait));
    assert!(
        matches!(report.report.outcome, sim::Outcome::Pass),
        "{:?}",
        report.report.outcome
    );
    report.executions
}

#[test]
fn a_daemon_idle_in_idle_wait_returns_at_the_end_of_the_execution() {
    static SEEN: Seen = Seen::new();
    let executions = run(&SEEN, true) as usize;
    assert_eq!(executions, 20);
    assert_eq!(SEEN.returned.load(Ordering::SeqCst), executions);
    assert_eq!(SEEN.dropped.load(Ordering::SeqCst), executions);
    assert!(
        SEEN.woken.load(Ordering::SeqCst) > 0,
        "the wait returns true when woken"
    );
}

#[test]
fn a_daemon_idle_in_a_plain_block_is_unwound_at_the_end_of_the_execution() {
    static SEEN: Seen = Seen::new();
    let executions = run(&SEEN, false) as usize;
    assert_eq!(executions, 20);
    assert_eq!(SEEN.returned.load(Ordering::SeqCst), 0);
    assert_eq!(SEEN.dropped.load(Ordering::SeqCst), executions);
}
