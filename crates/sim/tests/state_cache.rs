//! The state cache of `dfs` without reduction: a state the model names is
//! explored once, and the search still reaches every final state and
//! every violation the plain search reaches. The model here keeps what a
//! task has loaded in its shared state, so that every state can be named,
//! the task's position in its add included.

use sim::{costs::STEP, explore, ExecConfig, ExploreConfig, ObjId, Outcome, StrategySpec};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::hash::Hasher;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

/// Tasks that each add one to a counter `ops` times, by a load and a
/// store (updates can be lost), with a scheduling point between two adds
/// where the task holds nothing.
#[derive(Default)]
struct Counter {
    value: u64,
    done: Vec<u32>,
    /// Where each task is in its add: 0 between adds, 1 about to load,
    /// 2 loaded `loaded[t]`, about to store.
    phase: Vec<u8>,
    loaded: Vec<u64>,
}

#[derive(Clone, Copy)]
struct Model {
    tasks: usize,
    ops: u32,
    /// Name the state (else never).
    names_state: bool,
    /// The end check fails when updates were lost.
    lost_update_fails: bool,
    /// Declare the adders interchangeable (symmetry).
    symmetric: bool,
    /// Name the state only where every task is between two adds (as a
    /// model does that keeps what it loaded on its tasks' stacks).
    between_adds_only: bool,
}

type Finals = Arc<Mutex<BTreeSet<(u64, Vec<u32>)>>>;

impl Model {
    fn build(self, finals: Finals) -> impl Fn(&mut sim::Execution) + Sync {
        move |e: &mut sim::Execution| {
            let m = Rc::new(RefCell::new(Counter {
                done: vec![0; self.tasks],
                phase: vec![0; self.tasks],
                loaded: vec![0; self.tasks],
                ..Counter::default()
            }));
            let adders = e.setup(|| {
                let obj = sim::new_object("counter");
                let mut adders = Vec::new();
                for t in 0..self.tasks {
                    let m = Rc::clone(&m);
                    adders.extend(sim::spawn(format!("adder{t}"), false, move || {
                        for _ in 0..self.ops {
                            sim::entering_op();
                            sim::point("next", ObjId::NONE, &STEP);
                            m.borrow_mut().phase[t] = 1;
                            sim::point("load", obj, &STEP);
                            let v = m.borrow().value;
                            m.borrow_mut().phase[t] = 2;
                            m.borrow_mut().loaded[t] = v;
                            sim::point("store", obj, &STEP);
                            let mut c = m.borrow_mut();
                            c.value = v + 1;
                            c.done[t] += 1;
                            c.phase[t] = 0;
                        }
                    }));
                }
                adders
            });
            if self.symmetric {
                e.interchangeable(adders.iter().copied());
            }
            if self.names_state {
                let m = Rc::clone(&m);
                let adders = adders.clone();
                let between_adds_only = self.between_adds_only;
                e.name_state(move |h| {
                    if between_adds_only && !sim::every_task_between_ops() {
                        return false;
                    }
                    let c = m.borrow();
                    h.write_u64(c.value);
                    for (t, adder) in adders.iter().enumerate() {
                        h.task(*adder, |h| {
                            h.write_u32(c.done[t]);
                            h.write_u8(c.phase[t]);
                            // What a task loaded matters only until it stores.
                            h.write_u64(if c.phase[t] == 2 { c.loaded[t] } else { 0 });
                        });
                    }
                    true
                });
            }
            let (m, finals) = (Rc::clone(&m), Arc::clone(&finals));
            let total = self.tasks as u64 * self.ops as u64;
            let fails = self.lost_update_fails;
            e.check_at_end(move || {
                let c = m.borrow();
                finals.lock().unwrap().insert((c.value, c.done.clone()));
                (fails && c.value != total).then(|| Outcome::Violation {
                    invariant: "counter.no_lost_update".into(),
                    detail: format!("{} of {total}", c.value),
                })
            });
        }
    }

    /// Search without reduction, with or without the state cache: the
    /// report and the final states reached.
    fn search(
        self,
        bound: u32,
        state_cache: bool,
    ) -> (sim::ExploreReport, BTreeSet<(u64, Vec<u32>)>) {
        let finals = Finals::default();
        let mut cfg = ExploreConfig::new(
            StrategySpec::Dfs {
                preemption_bound: bound,
            },
            1,
            10_000_000,
            ExecConfig::default(),
        );
        cfg.reduction = false;
        cfg.shrink = false;
        cfg.state_cache = state_cache;
        let r = explore(&cfg, &self.build(Arc::clone(&finals)));
        let finals = finals.lock().unwrap().clone();
        (r, finals)
    }
}

const RACY: Model = Model {
    tasks: 3,
    ops: 2,
    names_state: true,
    lost_update_fails: false,
    symmetric: false,
    between_adds_only: false,
};

const TWO_ADDERS: Model = Model { tasks: 2, ..RACY };

#[test]
fn the_cached_search_reaches_the_same_final_states_in_fewer_executions() {
    for bound in [1, 2, 3, u32::MAX] {
        // Unbounded, the plain search of three adders is 399 million runs.
        let model = if bound == u32::MAX { TWO_ADDERS } else { RACY };
        let (plain, plain_finals) = model.search(bound, false);
        let (cached, cached_finals) = model.search(bound, true);
        assert!(plain.exhausted && cached.exhausted, "bound {bound}");
        assert_eq!(cached_finals, plain_finals, "bound {bound}");
        // Lost updates are among them: the search is not trivial.
        let total = model.tasks as u64 * model.ops as u64;
        assert!(
            plain_finals.iter().any(|(v, _)| *v < total),
            "{plain_finals:?}"
        );
        // Within one preemption few paths meet again at one state with
        // the same task free to go on; beyond it many do.
        assert!(
            cached.executions < plain.executions
                || bound == 1 && cached.executions == plain.executions,
            "bound {bound}: {} cached, {} plain",
            cached.executions,
            plain.executions
        );
        assert_eq!(plain.states, None);
        let states = cached.states.expect("a stateful search counts its states");
        assert!(states > 0, "bound {bound}");
    }
}

#[test]
fn the_cached_search_finds_the_violation_the_plain_search_finds() {
    let model = Model {
        lost_update_fails: true,
        ..RACY
    };
    for bound in [1, u32::MAX] {
        let model = if bound == u32::MAX {
            Model { tasks: 2, ..model }
        } else {
            model
        };
        let (plain, _) = model.search(bound, false);
        let (cached, _) = model.search(bound, true);
        assert_eq!(
            plain.report.outcome.invariant(),
            Some("counter.no_lost_update")
        );
        assert_eq!(cached.report.outcome, plain.report.outcome, "bound {bound}");
    }
}

#[test]
fn a_model_that_names_no_state_is_searched_as_without_the_cache() {
    let model = Model {
        names_state: false,
        ..RACY
    };
    let (plain, plain_finals) = model.search(2, false);
    let (cached, cached_finals) = model.search(2, true);
    assert_eq!(cached.executions, plain.executions);
    assert_eq!(cached_finals, plain_finals);
    assert_eq!(cached.states, Some(0));
}

#[test]
fn a_cached_search_is_the_same_on_every_run() {
    let (a, _) = RACY.search(2, true);
    let (b, _) = RACY.search(2, true);
    assert_eq!(
        (a.executions, a.states, a.report.trace_hash),
        (b.executions, b.states, b.report.trace_hash)
    );
}

/// Unbounded, three adders of two adds: the plain search would run
/// 399 million executions (21! / (7!)^3 interleavings of seven steps each); the cached one
/// runs a few thousand, each state once.
#[test]
fn an_unbounded_cached_search_is_exhausted_where_the_plain_one_cannot_be() {
    let (cached, finals) = RACY.search(u32::MAX, true);
    assert!(cached.exhausted);
    assert!(cached.executions < 10_000, "{}", cached.executions);
    let values: BTreeSet<u64> = finals.iter().map(|(v, _)| *v).collect();
    // Each add can be lost but the last of each task: from 2 to 6.
    assert_eq!(values, (2..=6).collect());
}

/// Symmetry: the three adders are interchangeable, so states that differ
/// only by which adder is where are one. Without a bound the symmetric
/// search keeps fewer states and runs fewer executions, and reaches the
/// same final values and the same violation.
#[test]
fn interchangeable_tasks_make_one_state_of_their_permutations() {
    let symmetric = Model {
        symmetric: true,
        ..RACY
    };
    let (plain, plain_finals) = RACY.search(u32::MAX, true);
    let (sym, sym_finals) = symmetric.search(u32::MAX, true);
    assert!(sym.exhausted);
    let values = |f: &BTreeSet<(u64, Vec<u32>)>| f.iter().map(|(v, _)| *v).collect::<BTreeSet<_>>();
    assert_eq!(values(&sym_finals), values(&plain_finals));
    assert!(
        sym.states.unwrap() < plain.states.unwrap() && sym.executions < plain.executions,
        "{:?} states in {} executions with symmetry, {:?} in {} without",
        sym.states,
        sym.executions,
        plain.states,
        plain.executions
    );
    let failing = |m: Model| Model {
        lost_update_fails: true,
        ..m
    };
    let (a, _) = failing(RACY).search(u32::MAX, true);
    let (b, _) = failing(symmetric).search(u32::MAX, true);
    assert_eq!(a.report.outcome.invariant(), b.report.outcome.invariant());
    assert_eq!(b.report.outcome.invariant(), Some("counter.no_lost_update"));
    // Under a bound symmetry is not applied: the same search as without.
    let (bounded, _) = symmetric.search(2, true);
    let (bounded_plain, _) = RACY.search(2, true);
    assert_eq!(bounded.executions, bounded_plain.executions);
}

/// A model that keeps what a task loaded on the task's stack names its
/// state only where every task is between two adds
/// (`sim::entering_op`, `sim::every_task_between_ops`): the search cuts
/// fewer paths than where every state is named, and reaches the same
/// final states and the same violation as the plain search.
#[test]
fn a_model_that_names_its_state_between_operations_only_is_searched_soundly() {
    let between = Model {
        between_adds_only: true,
        ..RACY
    };
    for bound in [2, 3] {
        let (plain, plain_finals) = RACY.search(bound, false);
        let (everywhere, _) = RACY.search(bound, true);
        let (cached, cached_finals) = between.search(bound, true);
        assert!(cached.exhausted);
        assert_eq!(cached_finals, plain_finals, "bound {bound}");
        assert!(
            everywhere.executions < cached.executions && cached.executions < plain.executions,
            "bound {bound}: {} named everywhere, {} between adds, {} plain",
            everywhere.executions,
            cached.executions,
            plain.executions
        );
        assert!(cached.states.unwrap() < everywhere.states.unwrap());
    }
    let failing = Model {
        lost_update_fails: true,
        ..between
    };
    let (found, _) = failing.search(u32::MAX, true);
    assert_eq!(
        found.report.outcome.invariant(),
        Some("counter.no_lost_update")
    );
}
