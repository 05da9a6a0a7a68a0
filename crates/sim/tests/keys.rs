//! What crates above register with an execution: task slots, singleton
//! objects, and the states they name for an object's lifetime.

use sim::{
    costs::STEP, ExecConfig, ExecReport, Execution, ObjId, ObjState, Outcome, Schedule, Singleton,
    TaskSlot,
};
use std::cell::{Cell, RefCell};
use std::rc::Rc;

static DEPTH: TaskSlot = TaskSlot::new("test depth");
static GATE: Singleton = Singleton::woken_on_exit("gate");
static OTHER: Singleton = Singleton::new("other");

fn run(schedule: Schedule, setup: impl FnOnce()) -> ExecReport {
    let config = ExecConfig {
        record: true,
        ..ExecConfig::default()
    };
    let mut e = Execution::new(config, &schedule);
    e.setup(setup);
    e.run()
}

fn step() {
    sim::point("step", ObjId::NONE, &STEP);
}

#[test]
fn a_slot_is_each_tasks_own_and_is_cleared_when_it_exits() {
    let seen = Rc::new(RefCell::new(Vec::new()));
    let s = Rc::clone(&seen);
    let r = run(
        Schedule::Random {
            seed: 1,
            iteration: 0,
        },
        move || {
            let phase = Rc::new(Cell::new(0));
            let wait = sim::new_object("phase");
            let p = Rc::clone(&phase);
            let a = sim::spawn("a", false, move || {
                DEPTH.update(|d| *d += 2);
                p.set(1);
                sim::wake_all(wait, 0);
                sim::wait_until("wait for b", wait, || p.get() == 2);
            })
            .unwrap();
            sim::spawn("b", false, move || {
                assert_eq!(DEPTH.update(|d| *d), Some(0), "a task starts at zero");
                DEPTH.update(|d| *d += 5);
                sim::wait_until("wait for a", wait, || phase.get() == 1);
                s.borrow_mut()
                    .push(DEPTH.scan(|t, d| (d > 0).then_some((t, d))));
                phase.set(2);
                sim::wake_all(wait, 0);
                let gate = GATE.id().unwrap();
                sim::wait_until("wait for a to exit", gate, || DEPTH.get(a) == 0);
                s.borrow_mut().push(vec![(a, DEPTH.get(a))]);
            });
        },
    );
    assert_eq!(r.outcome, Outcome::Pass);
    let seen = seen.borrow();
    assert_eq!(seen[0], [(0, 2), (1, 5)]);
    assert_eq!(seen[1], [(0, 0)], "a's slot once it has exited");
}

#[test]
fn slots_and_singletons_are_only_a_running_tasks() {
    assert_eq!(DEPTH.update(|d| *d), None);
    assert_eq!(DEPTH.get(0), 0);
    assert_eq!(GATE.id(), None);
    let r = run(Schedule::Fair, || {
        assert_eq!(GATE.id(), None, "not during set-up");
        sim::spawn("t", false, || assert!(GATE.id().is_some()));
    });
    assert_eq!(r.outcome, Outcome::Pass);
}

#[test]
fn a_singleton_is_one_object_per_execution_named_by_its_kind() {
    let ids = Rc::new(RefCell::new(Vec::new()));
    let i = Rc::clone(&ids);
    let r = run(Schedule::Fair, move || {
        let before = sim::new_object("lock");
        sim::spawn("t", false, move || {
            let (gate, other) = (GATE.id().unwrap(), OTHER.id().unwrap());
            i.borrow_mut()
                .extend([before, gate, GATE.id().unwrap(), other]);
            assert_eq!(sim::object_name(gate), "gate");
            assert_eq!(sim::object_name(before), "lock#0");
        });
    });
    assert_eq!(r.outcome, Outcome::Pass);
    let ids = ids.borrow();
    assert_eq!(ids[1], ids[2], "the same object on every use");
    assert!(ids[0] < ids[1] && ids[1] < ids[3], "made on first use");
    assert_eq!(r.object_names[ids[1].0 as usize], "gate");
}

#[test]
fn an_exit_wakes_the_waiters_of_a_singleton_woken_on_exit() {
    // The waiter waits until the holder has set its slot and the slot is
    // clear again; the holder never clears it, and wakes nobody: it exits.
    let r = run(Schedule::Fair, || {
        let started = Rc::new(Cell::new(false));
        let s = Rc::clone(&started);
        // The waiter is spawned first, so that it waits before the holder runs.
        sim::spawn("waiter", false, move || {
            let holder = sim::current_task().unwrap() + 1;
            let gate = GATE.id().unwrap();
            let cleared = || started.get() && DEPTH.get(holder) == 0;
            sim::wait_until("wait for the holder", gate, cleared);
            sim::note("through", gate, 0);
        });
        sim::spawn("holder", false, move || {
            DEPTH.update(|d| *d = 1);
            s.set(true);
            step();
        });
    });
    assert_eq!(r.outcome, Outcome::Pass);
    let events = r.events.unwrap();
    assert!(events.iter().any(|e| e.label == "through"));
}

#[test]
fn a_parked_object_is_neither_live_nor_freed() {
    let states = Rc::new(RefCell::new(Vec::new()));
    let s = Rc::clone(&states);
    let r = run(Schedule::Fair, move || {
        let obj = sim::new_object("ns");
        sim::spawn("t", false, move || {
            sim::park_object(obj, "queued");
            s.borrow_mut().push(sim::object_state(obj));
            sim::touch(obj, "a parked object may still be touched");
            sim::free_object(obj);
            s.borrow_mut().push(sim::object_state(obj));
        });
    });
    assert_eq!(r.outcome, Outcome::Pass);
    let states = states.borrow();
    assert_eq!(states[0], ObjState::Parked("queued"));
    assert!(matches!(states[1], ObjState::Freed { by: 0, .. }));
    let events = r.events.unwrap();
    assert!(events.iter().any(|e| e.label == "queued"));
}
