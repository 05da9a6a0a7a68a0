//! Runs that never end on their own stop at a limit, with outcome `limit`.

use sim::{costs::STEP, ExecConfig, Execution, ObjId, Outcome, Schedule};

fn spinning(config: ExecConfig) -> Outcome {
    let mut e = Execution::new(config, &Schedule::Fair);
    e.setup(|| {
        sim::spawn("spinner", false, || loop {
            sim::point("spin", ObjId::NONE, &STEP);
        });
    });
    e.run().outcome
}

#[test]
fn a_run_past_its_step_limit_ends_with_limit() {
    let o = spinning(ExecConfig {
        max_steps: 1000,
        ..ExecConfig::default()
    });
    assert_eq!(
        o,
        Outcome::Limit {
            which: "steps".into(),
            value: 1000
        }
    );
}

#[test]
fn a_run_past_its_virtual_time_limit_ends_with_limit() {
    let o = spinning(ExecConfig {
        max_virtual_ns: 5_000,
        ..ExecConfig::default()
    });
    assert_eq!(
        o,
        Outcome::Limit {
            which: "virtual-time".into(),
            value: 5_000
        }
    );
}

#[test]
fn virtual_time_follows_the_cost_table_and_the_cpus() {
    // Two tasks of 100 steps of 10 ns: 1 µs each on two CPUs, 2 µs on one.
    let run = |cpus| {
        let mut e = Execution::new(
            ExecConfig {
                cpus,
                ..ExecConfig::default()
            },
            &Schedule::Fair,
        );
        e.setup(|| {
            for name in ["a", "b"] {
                sim::spawn(name, false, || {
                    for _ in 0..100 {
                        sim::point("work", ObjId::NONE, &STEP);
                    }
                });
            }
        });
        e.run().virtual_ns
    };
    assert_eq!(run(2), 1_000);
    assert_eq!(run(1), 2_000);
}

#[test]
fn a_task_that_nears_the_end_of_its_stack_is_stopped_not_the_process() {
    fn deep(n: u64) -> u64 {
        let pad = [n; 64];
        sim::point("recurse", ObjId::NONE, &STEP);
        if n == 0 {
            0
        } else {
            pad[(n % 64) as usize] + deep(n - 1)
        }
    }
    let mut e = Execution::new(
        ExecConfig {
            stack_size: 64 * 1024,
            ..ExecConfig::default()
        },
        &Schedule::Fair,
    );
    e.setup(|| {
        sim::spawn("deep", false, || {
            std::hint::black_box(deep(100_000));
        });
    });
    let o = e.run().outcome;
    assert!(
        matches!(&o, Outcome::Limit { which, .. } if which == "stack"),
        "{o}"
    );
}

#[test]
fn ten_thousand_tasks_run_in_one_execution() {
    let mut e = Execution::new(
        ExecConfig {
            stack_size: 32 * 1024,
            ..ExecConfig::default()
        },
        &Schedule::Random {
            seed: 1,
            iteration: 0,
        },
    );
    e.setup(|| {
        for i in 0..10_000 {
            sim::spawn(format!("t{i}"), false, || {
                for _ in 0..3 {
                    sim::point("work", ObjId::NONE, &STEP);
                }
            });
        }
    });
    let r = e.run();
    assert_eq!(r.outcome, Outcome::Pass);
    assert_eq!(r.steps, 10_000 * 4);
}

#[test]
fn tasks_spinning_without_progress_are_a_livelock() {
    let mut e = Execution::new(
        ExecConfig {
            livelock_steps: 10_000,
            ..ExecConfig::default()
        },
        &Schedule::Random {
            seed: 1,
            iteration: 0,
        },
    );
    e.setup(|| {
        for name in ["a", "b"] {
            // Each waits for a flag nobody sets, polling it.
            sim::spawn(name, false, || loop {
                sim::point("poll flag", ObjId::NONE, &STEP);
            });
        }
    });
    let o = e.run().outcome;
    assert!(
        matches!(&o, Outcome::Limit { which, .. } if which == "livelock"),
        "{o}"
    );
}

/// Takes a scheduling point when dropped, as a value whose destructor
/// takes a lock does; `Send`, so that it can be a panic's payload too.
struct PointOnDrop(std::sync::Arc<std::sync::atomic::AtomicU32>);

impl Drop for PointOnDrop {
    fn drop(&mut self) {
        sim::point("drop", ObjId::NONE, &STEP);
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

#[test]
fn tasks_left_unstarted_for_want_of_a_stack_are_dropped_outside_any_task() {
    let drops = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let mut e = Execution::new(
        ExecConfig {
            // No machine maps this much: the first task finds no stack.
            stack_size: usize::MAX / 4,
            ..ExecConfig::default()
        },
        &Schedule::Fair,
    );
    e.setup(|| {
        for i in 0..3 {
            let held = PointOnDrop(std::sync::Arc::clone(&drops));
            sim::spawn(format!("t{i}"), false, move || {
                let _held = held;
                sim::point("work", ObjId::NONE, &STEP);
            });
        }
    });
    let r = e.run();
    assert!(
        matches!(&r.outcome, Outcome::Limit { which, value: 0 } if which == "stacks"),
        "{}",
        r.outcome
    );
    // Each closure is dropped once, its point a no-op outside the tasks.
    assert_eq!(drops.load(std::sync::atomic::Ordering::Relaxed), 3);
    assert_eq!(r.steps, 0);
}

#[test]
fn a_panic_payload_is_dropped_outside_any_task() {
    let drops = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let mut e = Execution::new(ExecConfig::default(), &Schedule::Fair);
    let payload = std::sync::Arc::clone(&drops);
    e.setup(move || {
        sim::spawn("t0", false, move || {
            sim::point("work", ObjId::NONE, &STEP);
            std::panic::panic_any(PointOnDrop(payload));
        });
    });
    let r = e.run();
    assert!(
        matches!(&r.outcome, Outcome::Panic { task, .. } if task == "t0"),
        "{}",
        r.outcome
    );
    assert_eq!(drops.load(std::sync::atomic::Ordering::Relaxed), 1);
}

/// Two tasks of one execution share its one OS thread: a host lock held
/// across a scheduling point would deadlock it on the other's `lock()`.
/// The runtime ends the holder at the point instead, naming the lock and
/// the point, and the other task takes the lock as usual.
#[test]
fn a_scheduling_point_under_a_host_lock_is_refused_naming_both() {
    let shared = std::sync::Arc::new(sim::HostMutex::new("the shared bookkeeping", 0u32));
    let mut e = Execution::new(ExecConfig::default(), &Schedule::Fair);
    let (a, b) = (
        std::sync::Arc::clone(&shared),
        std::sync::Arc::clone(&shared),
    );
    e.setup(move || {
        sim::spawn("holder", false, move || {
            let mut held = a.lock();
            *held += 1;
            sim::point("copy_process", ObjId::NONE, &STEP);
            *held += 1;
        });
        sim::spawn("walker", false, move || {
            sim::point("proc_pid_lookup", ObjId::NONE, &STEP);
            *b.lock() += 10;
        });
    });
    let r = e.run();
    match &r.outcome {
        Outcome::Panic { task, message } => {
            assert_eq!(task, "holder");
            assert!(
                message.contains("host lock `the shared bookkeeping`"),
                "{message}"
            );
            assert!(message.contains("`copy_process`"), "{message}");
        }
        other => panic!("expected the holder's panic, got {other}"),
    }
    // The guard was dropped as the holder unwound: the lock is free.
    assert_eq!(*shared.lock(), 1);
}

/// Taken and released between two points, a host lock is bookkeeping as
/// any other: the run goes on.
#[test]
fn a_host_lock_released_before_the_point_is_fine() {
    let shared = std::sync::Arc::new(sim::HostMutex::new("the shared bookkeeping", 0u32));
    let mut e = Execution::new(ExecConfig::default(), &Schedule::Fair);
    let tasks = [
        std::sync::Arc::clone(&shared),
        std::sync::Arc::clone(&shared),
    ];
    e.setup(move || {
        for (i, s) in tasks.into_iter().enumerate() {
            sim::spawn(format!("t{i}"), false, move || {
                *s.lock() += 1;
                sim::point("work", ObjId::NONE, &STEP);
                *s.lock() += 1;
            });
        }
    });
    let r = e.run();
    assert_eq!(r.outcome, Outcome::Pass);
    assert_eq!(*shared.lock(), 4);
}
