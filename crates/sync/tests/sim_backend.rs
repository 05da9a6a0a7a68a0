#![cfg(not(loom))]
//! The primitives inside the deterministic scheduler.

use sim::{explore, ExecConfig, Execution, ExploreConfig, Outcome, Schedule, StrategySpec};
use std::sync::atomic::{AtomicBool as StdBool, Ordering::SeqCst};
use sync::{
    flush_work, rcu_read_lock, schedule_work, synchronize_rcu, Arc, AtomicI64, Mutex, Ordering,
    Work, Workqueue,
};

fn cfg(strategy: StrategySpec, iterations: u64) -> ExploreConfig {
    ExploreConfig {
        shrink: false,
        ..ExploreConfig::new(strategy, 1, iterations, ExecConfig::default())
    }
}

/// Two tasks incrementing a counter without a lock; checked at the end.
fn lost_update(e: &mut Execution) {
    let counter = e.setup(|| {
        let counter = Arc::new(AtomicI64::new("counter", 0));
        for name in ["a", "b"] {
            let c = Arc::clone(&counter);
            sim::spawn(name, false, move || {
                let v = c.load(Ordering::SeqCst);
                c.store(v + 1, Ordering::SeqCst);
            });
        }
        counter
    });
    e.check_at_end(move || {
        (counter.peek() != 2).then(|| Outcome::Violation {
            invariant: "counter".into(),
            detail: format!("counter is {}", counter.peek()),
        })
    });
}

#[test]
fn random_search_finds_a_lost_update_and_dfs_exhausts_the_space() {
    let build = lost_update;
    let r = explore(&cfg(StrategySpec::Random, 200), &build);
    assert_eq!(r.report.outcome.invariant(), Some("counter"));

    let r = explore(
        &cfg(
            StrategySpec::Dfs {
                preemption_bound: 2,
            },
            1000,
        ),
        &build,
    );
    assert_eq!(r.report.outcome.invariant(), Some("counter"));
}

/// A search keeps no step log; the failing execution it reports is run
/// again with one (to be named in the token), and is the same execution.
#[test]
fn only_the_failing_execution_is_logged_and_it_is_the_one_found() {
    let mut plain = cfg(StrategySpec::Random, 200);
    plain.exec.record = true;
    let found = explore(&plain, &lost_update);
    assert_eq!(found.report.outcome.invariant(), Some("counter"));
    assert!(!found.report.step_log.is_empty());
    assert_eq!(found.report.step_log.len() as u64, found.report.steps);
    // Replaying the reported schedule gives the same trace.
    let mut e = Execution::new(plain.exec.clone(), &found.schedule);
    lost_update(&mut e);
    let again = e.run();
    assert_eq!(again.trace_hash, found.report.trace_hash);
    assert_eq!(again.events, found.report.events);

    // A passing search reports its last execution, unlogged.
    let passed = explore(&cfg(StrategySpec::Random, 3), &|e: &mut Execution| {
        e.setup(|| {
            sim::spawn("alone", false, || {
                sim::point("step", sim::ObjId::NONE, &sim::costs::STEP);
            });
        });
    });
    assert_eq!(passed.report.outcome, Outcome::Pass);
    assert!(passed.report.step_log.is_empty());
}

#[test]
fn a_mutex_prevents_the_lost_update_under_exhaustive_search() {
    let build = |e: &mut Execution| {
        let counter = e.setup(|| {
            let counter = Arc::new(Mutex::new("counter_lock", 0i64));
            for name in ["a", "b", "c"] {
                let c = Arc::clone(&counter);
                sim::spawn(name, false, move || {
                    let mut g = c.lock();
                    *g += 1;
                });
            }
            counter
        });
        e.check_at_end(move || {
            let v = *counter.lock();
            (v != 3).then(|| Outcome::Violation {
                invariant: "counter".into(),
                detail: format!("{v}"),
            })
        });
    };
    let r = explore(
        &cfg(
            StrategySpec::Dfs {
                preemption_bound: 3,
            },
            100_000,
        ),
        &build,
    );
    assert_eq!(r.report.outcome, Outcome::Pass);
    assert!(r.exhausted, "the space is small enough to exhaust");
    assert!(r.executions > 1);
}

#[test]
fn opposite_lock_order_is_a_deadlock_with_its_cycle() {
    let build = |e: &mut Execution| {
        e.setup(|| {
            let a = Arc::new(Mutex::new("A", ()));
            let b = Arc::new(Mutex::new("B", ()));
            for (name, first, second) in [("t1", &a, &b), ("t2", &b, &a)] {
                let (x, y) = (Arc::clone(first), Arc::clone(second));
                sim::spawn(name, false, move || {
                    let _g1 = x.lock();
                    let _g2 = y.lock();
                });
            }
        });
    };
    let r = explore(&cfg(StrategySpec::Random, 500), &build);
    match r.report.outcome {
        Outcome::Deadlock { cycle, .. } => {
            let mut names: Vec<_> = cycle.iter().map(|l| l.task.as_str()).collect();
            names.sort();
            assert_eq!(names, ["t1", "t2"]);
            assert!(cycle.iter().any(|l| l.resource == "A#0"));
        }
        other => panic!("expected a deadlock, got {other}"),
    }
}

#[test]
fn a_panicking_task_is_an_outcome() {
    let build = |e: &mut Execution| {
        e.setup(|| {
            sim::spawn("buggy", false, || {
                let empty: Vec<u8> = Vec::new();
                let _ = empty.first().expect("BUG: no value");
            });
        });
    };
    let r = explore(&cfg(StrategySpec::Random, 1), &build);
    assert_panicked(r.report.outcome, "buggy", "BUG: no value");
}

/// `outcome` is a panic of `task` whose message contains `needle`.
fn assert_panicked(outcome: Outcome, task: &str, needle: &str) {
    match outcome {
        Outcome::Panic { task: t, message } => {
            assert_eq!(t, task);
            assert!(message.contains(needle), "{message}");
        }
        other => panic!("expected a panic of {task}, got {other}"),
    }
}

#[test]
fn synchronize_rcu_waits_for_a_reader_that_began_before_it() {
    // The reader sets `inside` during its section; the updater checks after
    // its grace period that no reader that started earlier is still inside.
    let build = |e: &mut Execution| {
        let broken = e.setup(|| {
            let inside = Arc::new(StdBool::new(false));
            let broken = Arc::new(StdBool::new(false));
            let i = Arc::clone(&inside);
            sim::spawn("reader", false, move || {
                let _g = rcu_read_lock();
                i.store(true, SeqCst);
                sim::point("read", sim::ObjId::NONE, &sim::costs::STEP);
                i.store(false, SeqCst);
            });
            let (i, b) = (Arc::clone(&inside), Arc::clone(&broken));
            sim::spawn("updater", false, move || {
                let was_inside = i.load(SeqCst);
                synchronize_rcu();
                if was_inside && i.load(SeqCst) {
                    b.store(true, SeqCst);
                }
            });
            broken
        });
        e.check_each_step(move || {
            broken.load(SeqCst).then(|| Outcome::Violation {
                invariant: "rcu".into(),
                detail: String::new(),
            })
        });
    };
    let r = explore(
        &cfg(
            StrategySpec::Dfs {
                preemption_bound: 4,
            },
            10_000,
        ),
        &build,
    );
    assert_eq!(r.report.outcome, Outcome::Pass);
    assert!(r.exhausted);
}

fn dfs(preemption_bound: u32) -> ExploreConfig {
    cfg(StrategySpec::Dfs { preemption_bound }, 10_000)
}

#[test]
fn a_grace_period_waits_for_the_outer_section_of_a_nested_reader() {
    // The reader is `inside` from its outer lock to its outer unlock; the
    // inner section ends in between.
    let build = |e: &mut Execution| {
        let broken = e.setup(|| {
            let inside = Arc::new(StdBool::new(false));
            let broken = Arc::new(StdBool::new(false));
            let i = Arc::clone(&inside);
            sim::spawn("reader", false, move || {
                let outer = rcu_read_lock();
                i.store(true, SeqCst);
                drop(rcu_read_lock());
                sim::point("read", sim::ObjId::NONE, &sim::costs::STEP);
                i.store(false, SeqCst);
                drop(outer);
            });
            let (i, b) = (Arc::clone(&inside), Arc::clone(&broken));
            sim::spawn("updater", false, move || {
                let was_inside = i.load(SeqCst);
                synchronize_rcu();
                if was_inside && i.load(SeqCst) {
                    b.store(true, SeqCst);
                }
            });
            broken
        });
        e.check_at_end(move || {
            broken.load(SeqCst).then(|| Outcome::Violation {
                invariant: "rcu".into(),
                detail: String::new(),
            })
        });
    };
    let r = explore(&dfs(4), &build);
    assert_eq!(r.report.outcome, Outcome::Pass);
    assert!(r.exhausted);
}

#[test]
fn a_reader_that_exits_inside_its_section_holds_off_no_grace_period() {
    // A forgotten guard: the reader never leaves its section, but once it
    // has exited it reads nothing more.
    let build = |e: &mut Execution| {
        e.setup(|| {
            sim::spawn("reader", false, || {
                std::mem::forget(rcu_read_lock());
                sim::point("read", sim::ObjId::NONE, &sim::costs::STEP);
            });
            sim::spawn("updater", false, synchronize_rcu);
        });
    };
    let r = explore(&dfs(4), &build);
    assert_eq!(r.report.outcome, Outcome::Pass);
    assert!(r.exhausted);
}

#[test]
fn flush_work_waits_only_when_the_work_is_pending_or_running() {
    let build = |e: &mut Execution| {
        let seen = e.setup(|| {
            let wq = Workqueue::new("events");
            wq.start_worker("kworker/0");
            let ran = Arc::new(StdBool::new(false));
            let r2 = Arc::clone(&ran);
            let work = Work::new("test_work", &wq, move || r2.store(true, SeqCst));
            let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
            let s = Arc::clone(&seen);
            sim::spawn("caller", false, move || {
                s.lock().push(flush_work(&work)); // idle: no wait
                assert!(schedule_work(&work));
                s.lock().push(flush_work(&work)); // pending: waits
                s.lock().push(ran.load(SeqCst));
                s.lock().push(flush_work(&work)); // idle again
            });
            seen
        });
        e.check_at_end(move || {
            // The kworker may finish before the second flush looks (then it
            // does not wait); either way the work has run when flush returns.
            let v = seen.lock().clone();
            let ok = v.len() == 4 && !v[0] && v[2] && !v[3];
            WAITED.with(|w| w.set(w.get() || v.get(1) == Some(&true)));
            (!ok).then(|| Outcome::Violation {
                invariant: "flush_work".into(),
                detail: format!("{v:?}"),
            })
        });
    };
    let r = explore(
        &cfg(
            StrategySpec::Dfs {
                preemption_bound: 3,
            },
            10_000,
        ),
        &build,
    );
    assert_eq!(r.report.outcome, Outcome::Pass, "{}", r.report.outcome);
    assert!(r.exhausted);
    assert!(
        WAITED.with(|w| w.get()),
        "some schedule had flush_work wait"
    );
}

thread_local! {
    static WAITED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[test]
fn the_same_schedule_gives_the_same_trace() {
    let build = |e: &mut Execution| {
        e.setup(|| {
            let m = Arc::new(Mutex::new("m", 0));
            for n in ["a", "b", "c"] {
                let m = Arc::clone(&m);
                sim::spawn(n, false, move || {
                    for _ in 0..5 {
                        *m.lock() += 1;
                    }
                });
            }
        });
    };
    let run = |s: &Schedule, build: &dyn Fn(&mut Execution)| {
        let mut e = Execution::new(ExecConfig::default(), s);
        build(&mut e);
        e.run()
    };
    let s = Schedule::Random {
        seed: 9,
        iteration: 3,
    };
    let a = run(&s, &build);
    let b = run(&s, &build);
    assert_eq!(a.trace_hash, b.trace_hash);
    assert_eq!(a.steps, b.steps);
    let c = run(
        &Schedule::Random {
            seed: 9,
            iteration: 4,
        },
        &build,
    );
    assert_ne!(a.trace_hash, c.trace_hash);
}

thread_local! {
    static FINAL_STATES: std::cell::RefCell<std::collections::BTreeSet<(i64, i64, i64)>> =
        const { std::cell::RefCell::new(std::collections::BTreeSet::new()) };
}

/// Two writers on different atomics, a reader of both, and a lock-protected
/// counter: many interleavings only reorder independent operations.
fn independent_model(e: &mut Execution) {
    let (x, y, seen, counter) = e.setup(|| {
        let x = Arc::new(AtomicI64::new("x", 0));
        let y = Arc::new(AtomicI64::new("y", 0));
        let counter = Arc::new(Mutex::new("counter", 0i64));
        let seen = Arc::new(parking_lot::Mutex::new((0, 0)));
        let (x1, c1) = (Arc::clone(&x), Arc::clone(&counter));
        sim::spawn("wx", false, move || {
            x1.fetch_add(1, Ordering::SeqCst);
            *c1.lock() += 1;
        });
        let (y1, c2) = (Arc::clone(&y), Arc::clone(&counter));
        sim::spawn("wy", false, move || {
            y1.fetch_add(1, Ordering::SeqCst);
            *c2.lock() += 1;
        });
        let (x2, y2, s) = (Arc::clone(&x), Arc::clone(&y), Arc::clone(&seen));
        sim::spawn("reader", false, move || {
            let a = x2.load(Ordering::SeqCst);
            let b = y2.load(Ordering::SeqCst);
            *s.lock() = (a, b);
        });
        (x, y, seen, counter)
    });
    e.check_at_end(move || {
        let (a, b) = *seen.lock();
        let c = *counter.lock() + x.peek() * 10 + y.peek() * 100;
        FINAL_STATES.with(|f| f.borrow_mut().insert((a, b, c)));
        None
    });
}

#[test]
fn reduction_covers_the_same_final_states_with_fewer_executions() {
    let run = |reduction: bool| {
        FINAL_STATES.with(|f| f.borrow_mut().clear());
        let mut c = cfg(
            StrategySpec::Dfs {
                preemption_bound: 10,
            },
            1_000_000,
        );
        c.reduction = reduction;
        let r = explore(&c, &independent_model);
        assert!(r.exhausted);
        (r.executions, FINAL_STATES.with(|f| f.borrow().clone()))
    };
    let (full, full_states) = run(false);
    let (reduced, reduced_states) = run(true);
    assert_eq!(reduced_states, full_states);
    assert_eq!(full_states.len(), 4, "{full_states:?}");
    eprintln!("dfs executions: {full} without reduction, {reduced} with");
    assert!(
        reduced < full,
        "{reduced} executions with reduction, {full} without"
    );
}

/// Releasing a mutex hands it to the task that has waited longest, as
/// `mutex_unlock` wakes the first task on the wait list: one waiter wakes
/// per release, so no waiter retries and blocks again.
#[test]
fn a_released_mutex_wakes_only_its_longest_waiter() {
    let order = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let mut e = Execution::new(
        ExecConfig {
            record: true,
            ..ExecConfig::default()
        },
        &Schedule::Fair,
    );
    let got = Arc::clone(&order);
    e.setup(move || {
        let m = Arc::new(Mutex::new("m", ()));
        let holder = Arc::clone(&m);
        sim::spawn("holder", false, move || {
            let g = holder.lock();
            sim::sleep("hold", 1_000_000);
            drop(g);
        });
        for name in ["w1", "w2", "w3"] {
            let (m, got) = (Arc::clone(&m), Arc::clone(&got));
            sim::spawn(name, false, move || {
                let _g = m.lock();
                got.lock().push(name);
            });
        }
    });
    let r = e.run();
    assert_eq!(r.outcome, Outcome::Pass);
    let events = r.events.expect("recorded");
    // The waiters get the lock in the order they blocked on it.
    let mut blocked: Vec<&str> = Vec::new();
    for ev in &events {
        let name = r.task_names[ev.task].as_str();
        if ev.kind == sim::EventKind::Step && ev.label == "mutex_lock" && !blocked.contains(&name) {
            blocked.push(name);
        }
    }
    blocked.retain(|n| *n != "holder");
    assert_eq!(*order.lock(), blocked);
    // Each waiter takes two steps at the lock: the attempt that blocks and
    // the retry after its wake-up, which succeeds.
    for (i, name) in r.task_names.iter().enumerate().skip(1) {
        let lock_steps = events
            .iter()
            .filter(|ev| {
                ev.task == i && ev.kind == sim::EventKind::Step && ev.label == "mutex_lock"
            })
            .count();
        assert_eq!(lock_steps, 2, "{name}");
    }
}

/// Model code keeps its overflow checks in release builds (only the
/// scheduler crate drops them), so this holds under `--release` too.
#[test]
fn an_arithmetic_overflow_in_model_code_is_a_panic_outcome() {
    let mut e = Execution::new(ExecConfig::default(), &Schedule::Fair);
    e.setup(|| {
        sim::spawn("counter", false, || {
            let mut c: u8 = std::hint::black_box(250);
            for _ in 0..10 {
                sim::point("add", sim::ObjId::NONE, &sim::costs::STEP);
                c += 1;
            }
            std::hint::black_box(c);
        });
    });
    assert_panicked(e.run().outcome, "counter", "overflow");
}

/// A task's hold on a mutex is the scheduler's, not the real lock's: an
/// invariant that tries to take the mutex while a task holds it is stopped
/// with a message, instead of reading the value under the holder's feet.
#[test]
fn an_invariant_cannot_take_a_mutex_a_task_holds() {
    let mut e = Execution::new(ExecConfig::default(), &Schedule::Fair);
    let m = e.setup(|| {
        let m = Arc::new(Mutex::new("held", 0u32));
        let held = Arc::clone(&m);
        sim::spawn("holder", false, move || {
            let mut g = held.lock();
            *g += 1;
            sim::point("inside", sim::ObjId::NONE, &sim::costs::STEP);
            *g += 1;
        });
        m
    });
    let peek = Arc::clone(&m);
    e.check_each_step(move || {
        let _ = *peek.lock();
        None
    });
    // The invariant ran at the holder's scheduling point, on its stack.
    assert_panicked(e.run().outcome, "holder", "held#0 is held by task holder");
    // The run ended there, its holder unwound: code outside the tasks now
    // takes the real lock and sees the holder's first increment only.
    assert_eq!(*m.lock(), 1);
}
