//! Counted, not assumed: `dfs` with its partial-order reduction runs
//! exactly one execution per Mazurkiewicz trace, and reaches every final
//! state the unreduced search reaches.
//!
//! The traces are counted by brute force, without the search: every
//! interleaving is run (choices enumerated here, one `Schedule::Choices`
//! per maximal execution), each execution's steps are named by task and
//! index with the footprint the scheduler recorded, and the trace is the
//! set of ordered pairs of dependent steps (with each task's sequence of
//! footprints). Two interleavings are one trace exactly when these agree.
#![cfg(not(loom))]

use bench::nssim::small_build;
use bench::FinalState;
use sim::{
    ExecConfig, ExecReport, Execution, ExploreConfig, Footprint, Schedule, Split, StrategySpec,
};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex as StdMutex};
use sync::{flush_work, schedule_work, AtomicI64, Mutex, Ordering, Work, Workqueue};

type Outcomes = Arc<StdMutex<BTreeSet<String>>>;
type Build = Box<dyn Fn(&mut Execution) + Sync>;

/// A step: its task, its index among the task's steps.
type StepId = (usize, usize);

/// The trace of one execution: each task's footprints in order, and every
/// pair of dependent steps of different tasks in the order they ran.
type TraceKey = (BTreeMap<usize, Vec<Footprint>>, BTreeSet<(StepId, StepId)>);

fn trace_of(report: &ExecReport) -> TraceKey {
    let mut per_task: BTreeMap<usize, Vec<Footprint>> = BTreeMap::new();
    let mut ids: Vec<StepId> = Vec::new();
    for (task, f) in &report.footprints {
        let steps = per_task.entry(*task).or_default();
        ids.push((*task, steps.len()));
        steps.push(f.clone());
    }
    let mut order = BTreeSet::new();
    let steps = &report.footprints;
    for j in 0..steps.len() {
        for i in 0..j {
            if steps[i].0 != steps[j].0 && steps[i].1.conflicts(&steps[j].1) {
                order.insert((ids[i], ids[j]));
            }
        }
    }
    (per_task, order)
}

/// Every maximal interleaving, by brute force: the number of executions,
/// the distinct traces among them.
fn brute_force(build: &Build) -> (usize, BTreeSet<TraceKey>) {
    let config = ExecConfig {
        footprints: true,
        ..ExecConfig::default()
    };
    let mut pending: Vec<Vec<u32>> = vec![Vec::new()];
    let (mut executions, mut traces) = (0, BTreeSet::new());
    while let Some(prefix) = pending.pop() {
        let mut e = Execution::new(config.clone(), &Schedule::Choices(prefix.clone()));
        build(&mut e);
        let r = e.run();
        assert!(
            !r.outcome.is_failure(),
            "the models pass everywhere: {}",
            r.outcome
        );
        assert_eq!(r.diverged_at, None);
        executions += 1;
        traces.insert(trace_of(&r));
        // Every other choice at every choice point after the prefix.
        for (i, point) in r.choices.iter().enumerate().skip(prefix.len()) {
            let taken: Vec<u32> = r.choices[..i].iter().map(|p| p.chosen as u32).collect();
            for &alt in &point.runnable {
                if alt != point.chosen {
                    let mut next = taken.clone();
                    next.push(alt as u32);
                    pending.push(next);
                }
            }
        }
    }
    (executions, traces)
}

/// `dfs` unbounded, with or without reduction, with the top of the tree
/// `split` searched on `jobs` threads: executions, whether the space was
/// exhausted, and the runs sleep sets cut short.
fn dfs(build: &Build, reduction: bool, split: Split, jobs: usize) -> (u64, bool, u64) {
    let mut cfg = ExploreConfig::new(
        StrategySpec::Dfs {
            preemption_bound: u32::MAX,
        },
        1,
        10_000_000,
        ExecConfig::default(),
    );
    cfg.shrink = false;
    cfg.reduction = reduction;
    cfg.split = split;
    cfg.jobs = jobs;
    let r = sim::explore(&cfg, build);
    assert!(!r.report.outcome.is_failure(), "{}", r.report.outcome);
    (r.executions, r.exhausted, r.cut_short)
}

/// Tops of the tree: none, the first choice point, a few, every choice
/// point up to a number of subtrees.
const SHAPES: [Split; 5] = [
    Split::NONE,
    Split {
        choices: 1,
        subtrees: usize::MAX,
    },
    Split {
        choices: 3,
        subtrees: usize::MAX,
    },
    Split {
        choices: 6,
        subtrees: usize::MAX,
    },
    Split {
        choices: u32::MAX,
        subtrees: 8,
    },
];

fn record(outcomes: &Outcomes, state: String) {
    outcomes.lock().expect("not poisoned").insert(state);
}

/// Three tasks, each two operations on an atomic of its own.
fn independent(out: Outcomes) -> Build {
    Box::new(move |e: &mut Execution| {
        let counters = e.setup(|| {
            let counters: Vec<Arc<AtomicI64>> = ["x", "y", "z"]
                .iter()
                .map(|n| Arc::new(AtomicI64::new(n, 0)))
                .collect();
            for (i, c) in counters.iter().enumerate() {
                let c = Arc::clone(c);
                sim::spawn(["a", "b", "c"][i], false, move || {
                    let v = c.load(Ordering::SeqCst);
                    c.store(v + 1, Ordering::SeqCst);
                });
            }
            counters
        });
        let out = Arc::clone(&out);
        e.check_at_end(move || {
            let vs: Vec<i64> = counters.iter().map(|c| c.peek()).collect();
            record(&out, format!("{vs:?}"));
            None
        });
    })
}

/// Store buffering: a: x = 1; read y. b: y = 1; read x. With `observer`,
/// a third task reads x, then y.
fn store_buffering(out: Outcomes, observer: bool) -> Build {
    Box::new(move |e: &mut Execution| {
        let seen = Arc::new(StdMutex::new([0i64; 4]));
        let s = Arc::clone(&seen);
        e.setup(move || {
            let x = Arc::new(AtomicI64::new("x", 0));
            let y = Arc::new(AtomicI64::new("y", 0));
            let (xa, ya, sa) = (Arc::clone(&x), Arc::clone(&y), Arc::clone(&s));
            sim::spawn("a", false, move || {
                xa.store(1, Ordering::SeqCst);
                sa.lock().expect("not poisoned")[0] = ya.load(Ordering::SeqCst);
            });
            let (xb, yb, sb) = (Arc::clone(&x), Arc::clone(&y), Arc::clone(&s));
            sim::spawn("b", false, move || {
                yb.store(1, Ordering::SeqCst);
                sb.lock().expect("not poisoned")[1] = xb.load(Ordering::SeqCst);
            });
            if observer {
                sim::spawn("c", false, move || {
                    let vx = x.load(Ordering::SeqCst);
                    let vy = y.load(Ordering::SeqCst);
                    let mut g = s.lock().expect("not poisoned");
                    g[2] = vx;
                    g[3] = vy;
                });
            }
        });
        let out = Arc::clone(&out);
        e.check_at_end(move || {
            record(&out, format!("{:?}", *seen.lock().expect("not poisoned")));
            None
        });
    })
}

/// Message passing: a: data = 1; flag = 1. b: read flag; read data.
fn message_passing(out: Outcomes) -> Build {
    Box::new(move |e: &mut Execution| {
        let seen = Arc::new(StdMutex::new((0i64, 0i64)));
        let s = Arc::clone(&seen);
        e.setup(move || {
            let data = Arc::new(AtomicI64::new("data", 0));
            let flag = Arc::new(AtomicI64::new("flag", 0));
            let (da, fa) = (Arc::clone(&data), Arc::clone(&flag));
            sim::spawn("a", false, move || {
                da.store(1, Ordering::SeqCst);
                fa.store(1, Ordering::SeqCst);
            });
            sim::spawn("b", false, move || {
                let f = flag.load(Ordering::SeqCst);
                let d = data.load(Ordering::SeqCst);
                *s.lock().expect("not poisoned") = (f, d);
            });
        });
        let out = Arc::clone(&out);
        e.check_at_end(move || {
            record(&out, format!("{:?}", *seen.lock().expect("not poisoned")));
            None
        });
    })
}

/// Three tasks each lock a mutex, append their name, unlock.
fn three_lockers(out: Outcomes) -> Build {
    Box::new(move |e: &mut Execution| {
        let m = e.setup(|| {
            let m = Arc::new(Mutex::new("m", String::new()));
            for name in ["a", "b", "c"] {
                let m = Arc::clone(&m);
                sim::spawn(name, false, move || m.lock().push_str(name));
            }
            m
        });
        let out = Arc::clone(&out);
        e.check_at_end(move || {
            record(&out, m.lock().clone());
            None
        });
    })
}

/// A work item and `flush_work`: a schedules the work (which increments a
/// counter) and flushes it, then reads the counter; b schedules it too.
fn work_and_flush(out: Outcomes) -> Build {
    Box::new(move |e: &mut Execution| {
        let seen = Arc::new(StdMutex::new((false, 0i64)));
        let s = Arc::clone(&seen);
        let counter = e.setup(move || {
            let wq = Workqueue::new("wq");
            let counter = Arc::new(AtomicI64::new("counter", 0));
            let c = Arc::clone(&counter);
            let work = Work::new("work", &wq, move || {
                c.fetch_add(1, Ordering::SeqCst);
            });
            wq.start_worker("kworker");
            let (wa, ca) = (Arc::clone(&work), Arc::clone(&counter));
            sim::spawn("a", false, move || {
                schedule_work(&wa);
                let waited = flush_work(&wa);
                let v = ca.load(Ordering::SeqCst);
                *s.lock().expect("not poisoned") = (waited, v);
            });
            sim::spawn("b", false, move || {
                schedule_work(&work);
            });
            counter
        });
        let out = Arc::clone(&out);
        e.check_at_end(move || {
            let (waited, v) = *seen.lock().expect("not poisoned");
            record(
                &out,
                format!("waited={waited} a_saw={v} end={}", counter.peek()),
            );
            None
        });
    })
}

/// The outcomes the builds recorded while `f` ran.
fn outcomes_of<R>(out: &Outcomes, f: impl FnOnce() -> R) -> (R, BTreeSet<String>) {
    out.lock().expect("not poisoned").clear();
    let r = f();
    let seen = out.lock().expect("not poisoned").clone();
    (r, seen)
}

/// Executions equal traces, and the reduced search reaches every outcome
/// of the unreduced one. Returns (interleavings, traces, reduced runs).
fn check(name: &str, make: impl Fn(Outcomes) -> Build) -> (usize, usize, u64) {
    let out: Outcomes = Arc::default();
    let build = make(Arc::clone(&out));
    let ((interleavings, traces), brute) = outcomes_of(&out, || brute_force(&build));
    let ((full, full_done, _), unreduced) =
        outcomes_of(&out, || dfs(&build, false, Split::DEFAULT, 1));
    let ((reduced, reduced_done, cut_short), found) =
        outcomes_of(&out, || dfs(&build, true, Split::DEFAULT, 1));
    eprintln!(
        "{name}: {interleavings} interleavings, {} traces; dfs {reduced} executions and {cut_short} cut short ({full} without reduction); {} outcomes",
        traces.len(),
        brute.len()
    );
    assert!(full_done && reduced_done, "{name}: exhausted");
    assert_eq!(full as usize, interleavings, "{name}: the unreduced search");
    assert_eq!(unreduced, brute, "{name}: unreduced outcomes");
    assert_eq!(found, unreduced, "{name}: reduced outcomes");
    assert_eq!(
        reduced as usize,
        traces.len(),
        "{name}: one execution per trace"
    );
    // Whatever the top of the tree whose subtrees are searched apart, and
    // on one thread or two: the same executions, one per trace.
    for split in SHAPES {
        for jobs in [1, 2] {
            let ((n, done, _), seen) = outcomes_of(&out, || dfs(&build, true, split, jobs));
            assert!(done, "{name}: exhausted with {split:?} on {jobs} threads");
            assert_eq!(seen, unreduced, "{name}: outcomes with {split:?}");
            assert_eq!(
                n as usize,
                traces.len(),
                "{name}: one execution per trace with {split:?} on {jobs} threads"
            );
        }
    }
    (interleavings, traces.len(), reduced)
}

#[test]
fn independent_tasks_are_one_trace() {
    let (_, traces, _) = check("independent", independent);
    assert_eq!(traces, 1);
}

#[test]
fn store_buffering_explores_one_execution_per_trace() {
    check("store buffering", |o| store_buffering(o, false));
    let (interleavings, traces, _) = check("store buffering and an observer", |o| {
        store_buffering(o, true)
    });
    // Three tasks of two steps each and a start each: with the starts
    // independent of everything, 11 traces.
    assert!(interleavings > traces);
    assert_eq!(traces, 11);
}

#[test]
fn message_passing_explores_one_execution_per_trace() {
    check("message passing", message_passing);
}

#[test]
fn three_lockers_explore_one_execution_per_trace() {
    check("three lockers", three_lockers);
}

#[test]
fn work_and_flush_explore_one_execution_per_trace() {
    check("work item and flush_work", work_and_flush);
}

#[test]
fn workload_c_explores_one_execution_per_trace() {
    let states: Arc<StdMutex<BTreeSet<FinalState>>> = Arc::default();
    let (interleavings, traces, reduced) = check("workload (c)", |o| {
        let states = Arc::clone(&states);
        let inner: Build = Box::new(small_build(Arc::clone(&states)));
        Box::new(move |e: &mut Execution| {
            inner(e);
            // Runs after the workload's own check, which added this
            // execution's final state.
            let (o, states) = (Arc::clone(&o), Arc::clone(&states));
            e.check_at_end(move || {
                let mut s = states.lock().expect("not poisoned");
                for state in std::mem::take(&mut *s) {
                    record(&o, state.to_string());
                }
                None
            });
        })
    });
    assert!(reduced < interleavings as u64);
    assert_eq!(reduced as usize, traces);
    // The final states themselves: the reduced search finds all nine.
    let (_, found) = bench::nssim::small(u32::MAX);
    assert_eq!(found.len(), 9, "{found:?}");
}
