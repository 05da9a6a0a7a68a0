//! Tasks hand the thread to one another at scheduling points (directly,
//! where `fiber/symmetric.rs` is the switch): whatever way an execution ends,
//! every task's stack is unwound, so the values a task holds are dropped
//! once, and the outcome names the task it happened in.

use sim::{costs::STEP, ExecConfig, Execution, ObjId, Outcome, Schedule};
use std::cell::Cell;
use std::rc::Rc;

/// Counts its drops.
struct Held(Rc<Cell<u32>>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.set(self.0.get() + 1);
    }
}

/// `tasks` tasks, each holding a `Held` across `points` scheduling points;
/// task `bad` (if any) does `end` at its point number `at`.
fn run(
    schedule: &Schedule,
    tasks: usize,
    points: usize,
    bad: Option<(usize, usize, fn())>,
) -> (sim::ExecReport, u32) {
    let drops = Rc::new(Cell::new(0));
    let mut e = Execution::new(ExecConfig::default(), schedule);
    e.setup(|| {
        for t in 0..tasks {
            let held = Held(Rc::clone(&drops));
            sim::spawn(format!("t{t}"), false, move || {
                let _held = held;
                for i in 0..points {
                    sim::point("work", ObjId::NONE, &STEP);
                    if let Some((b, at, end)) = bad {
                        if b == t && at == i {
                            end();
                        }
                    }
                }
            });
        }
    });
    let report = e.run();
    (report, drops.get())
}

fn random(iteration: u64) -> Schedule {
    Schedule::Random {
        seed: 11,
        iteration,
    }
}

#[test]
fn every_task_ends_and_drops_what_it_holds() {
    for i in 0..20 {
        let (r, drops) = run(&random(i), 4, 50, None);
        assert_eq!(r.outcome, Outcome::Pass, "iteration {i}");
        assert_eq!(drops, 4, "iteration {i}");
        assert_eq!(r.steps, 4 * 51, "a start and 50 points per task");
    }
}

#[test]
fn a_panic_names_its_task_and_the_suspended_tasks_are_unwound() {
    for i in 0..20 {
        let (r, drops) = run(&random(i), 4, 50, Some((2, 17, || panic!("bad step"))));
        match &r.outcome {
            Outcome::Panic { task, message } => {
                assert_eq!(task, "t2", "iteration {i}");
                assert!(message.starts_with("bad step"), "{message}");
            }
            o => panic!("iteration {i}: {o:?}"),
        }
        assert_eq!(
            drops, 4,
            "iteration {i}: the panicking task's and the others'"
        );
    }
}

#[test]
fn an_abort_unwinds_every_task_and_drops_the_ones_never_started() {
    fn fail() {
        sim::fail(Outcome::Violation {
            invariant: "stop".into(),
            detail: "at once".into(),
        });
    }
    // `fair` runs task 0 first (the lowest id at equal clocks): it fails at
    // its first point, before any other task started.
    let (r, drops) = run(&Schedule::Fair, 3, 5, Some((0, 0, fail)));
    assert!(
        matches!(r.outcome, Outcome::Violation { .. }),
        "{:?}",
        r.outcome
    );
    assert_eq!(r.steps, 2, "task 0's start and its first point");
    assert_eq!(drops, 3);
    // At random, some tasks are mid-way when one fails.
    for i in 0..20 {
        let (r, drops) = run(&random(i), 4, 30, Some((1, 9, fail)));
        assert!(
            matches!(r.outcome, Outcome::Violation { .. }),
            "{:?}",
            r.outcome
        );
        assert_eq!(drops, 4, "iteration {i}");
    }
}

#[test]
fn the_same_schedule_gives_the_same_trace() {
    for i in 0..10 {
        let (a, _) = run(&random(i), 5, 40, None);
        let (b, _) = run(&random(i), 5, 40, None);
        assert_eq!(a.trace_hash, b.trace_hash, "iteration {i}");
    }
}

#[test]
fn a_panic_of_the_run_loop_still_unwinds_the_tasks() {
    let drops = Rc::new(Cell::new(0));
    let done = Rc::new(Cell::new(false));
    let mut e = Execution::new(ExecConfig::default(), &Schedule::Fair);
    e.setup(|| {
        for t in 0..4 {
            let held = Held(Rc::clone(&drops));
            let done = Rc::clone(&done);
            sim::spawn(format!("t{t}"), false, move || {
                let _held = held;
                let points = if t == 0 { 1 } else { 100 };
                for _ in 0..points {
                    sim::point("work", ObjId::NONE, &STEP);
                }
                if t == 0 {
                    done.set(true);
                }
            });
        }
    });
    // Checked after every step: the first check after task 0 has returned
    // is the run loop's, on its own stack, while the others are suspended.
    let seen = Rc::clone(&done);
    e.check_each_step(move || {
        assert!(!seen.get(), "an invariant that panics");
        None
    });
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| e.run()));
    assert!(ran.is_err(), "the invariant's panic leaves the run");
    assert_eq!(
        drops.get(),
        4,
        "task 0's at its return, the others' unwound"
    );
}
