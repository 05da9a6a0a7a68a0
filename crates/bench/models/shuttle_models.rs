//! The shuttle side of the workloads, included by the benches and tests
//! with `#[path]` (shuttle is a dev-dependency of this crate only).

use bench::FinalState;
use shuttle::scheduler::{Schedule, Scheduler, Task, TaskId};
use shuttle::sync::atomic::{AtomicI64, AtomicU32, Ordering};
use shuttle::sync::{Condvar, Mutex};
use shuttle::{thread, Config, FailurePersistence, Runner};
use std::cell::Cell;
use std::collections::BTreeSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64 as StdU64, Ordering as StdOrdering};
use std::sync::{Arc, Mutex as StdMutex};

pub use shuttle::scheduler::{DfsScheduler, PctScheduler, RandomScheduler};

/// Shuttle's default configuration without printing failing schedules
/// (the benches provoke failures on purpose).
pub fn config() -> Config {
    let mut c = Config::new();
    c.failure_persistence = FailurePersistence::None;
    c
}

/// Run `f` under `scheduler`; the number of executions run.
pub fn run<S: Scheduler + 'static>(scheduler: S, f: impl Fn() + Send + Sync + 'static) -> usize {
    Runner::new(scheduler, config()).run(f)
}

/// A scheduler that counts the decisions (scheduling points) of another.
#[derive(Debug)]
pub struct Counting<S> {
    pub inner: S,
    pub steps: Rc<Cell<u64>>,
}

impl<S: Scheduler> Scheduler for Counting<S> {
    fn new_execution(&mut self) -> Option<Schedule> {
        self.inner.new_execution()
    }

    fn next_task(
        &mut self,
        runnable_tasks: &[&Task],
        current_task: Option<TaskId>,
        is_yielding: bool,
    ) -> Option<TaskId> {
        self.steps.set(self.steps.get() + 1);
        self.inner
            .next_task(runnable_tasks, current_task, is_yielding)
    }

    fn next_u64(&mut self) -> u64 {
        self.inner.next_u64()
    }
}

/// Run `f` under `scheduler` and count its scheduling points.
pub fn count_steps<S: Scheduler + 'static>(
    scheduler: S,
    f: impl Fn() + Send + Sync + 'static,
) -> (usize, u64) {
    let steps = Rc::new(Cell::new(0));
    let counting = Counting {
        inner: scheduler,
        steps: Rc::clone(&steps),
    };
    let n = run(counting, f);
    (n, steps.get())
}

/// (a): `tasks` threads each doing `ops` times lock; +1; unlock; the main
/// thread joins them and checks the count.
pub fn mutex(tasks: usize, ops: usize) -> impl Fn() + Send + Sync + 'static {
    move || {
        let m = Arc::new(Mutex::new(0u64));
        let handles: Vec<_> = (0..tasks)
            .map(|_| {
                let m = Arc::clone(&m);
                thread::spawn(move || {
                    for _ in 0..ops {
                        *m.lock().unwrap() += 1;
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(*m.lock().unwrap(), (tasks * ops) as u64);
    }
}

struct Queue {
    items: Vec<u32>,
    shutdown: bool,
}

/// (b) with shuttle's primitives: the allocator (the main thread) loops
/// "charge below the limit, release the previous item to the queue, kick
/// the worker"; the worker waits on a condition variable, drains the queue
/// and uncharges. A failed charge while fewer than `limit` items are alive
/// panics (false ENOSPC).
pub fn ipc(limit: i64, rounds: u32) -> impl Fn() + Send + Sync + 'static {
    move || {
        let counter = Arc::new(AtomicI64::new(0));
        let queue = Arc::new((
            Mutex::new(Queue {
                items: Vec::new(),
                shutdown: false,
            }),
            Condvar::new(),
        ));
        let (c, q) = (Arc::clone(&counter), Arc::clone(&queue));
        let worker = thread::spawn(move || loop {
            let batch = {
                let (lock, cv) = &*q;
                let mut st = lock.lock().unwrap();
                while st.items.is_empty() && !st.shutdown {
                    st = cv.wait(st).unwrap();
                }
                if st.items.is_empty() {
                    return;
                }
                std::mem::take(&mut st.items)
            };
            for _item in batch {
                c.fetch_sub(1, Ordering::SeqCst);
            }
        });
        let mut prev: Option<u32> = None;
        for i in 0..rounds {
            let alive = prev.is_some() as i64;
            if !inc_below(&counter, limit) {
                assert!(
                    alive >= limit,
                    "false ENOSPC: charge failed at round {i} with {alive} of {limit} alive"
                );
                break;
            }
            if let Some(p) = prev.replace(i) {
                let (lock, cv) = &*queue;
                let was_empty = {
                    let mut st = lock.lock().unwrap();
                    st.items.push(p);
                    st.items.len() == 1
                };
                if was_empty {
                    cv.notify_one();
                }
            }
        }
        let (lock, cv) = &*queue;
        lock.lock().unwrap().shutdown = true;
        cv.notify_one();
        worker.join().unwrap();
    }
}

fn inc_below(v: &AtomicI64, limit: i64) -> bool {
    let mut c = v.load(Ordering::SeqCst);
    loop {
        if c >= limit {
            return false;
        }
        match v.compare_exchange(c, c + 1, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => return true,
            Err(now) => c = now,
        }
    }
}

/// Run `f` under `scheduler` until it panics: the number of the failing
/// execution (1-based), or `None` if every execution passed.
pub fn first_failure<S: Scheduler + 'static>(
    scheduler: S,
    f: impl Fn() + Send + Sync + 'static,
) -> Option<u64> {
    let count = Arc::new(StdU64::new(0));
    let c = Arc::clone(&count);
    let counted = move || {
        c.fetch_add(1, StdOrdering::Relaxed);
        f();
    };
    let failed = catch_unwind(AssertUnwindSafe(|| run(scheduler, counted))).is_err();
    failed.then(|| count.load(StdOrdering::Relaxed))
}

/// (c): the same three tasks as nssim's `small_build` (the main thread is
/// task c); every final state is added to `states`.
pub fn small(states: Arc<StdMutex<BTreeSet<FinalState>>>) -> impl Fn() + Send + Sync + 'static {
    move || {
        let m = Arc::new(Mutex::new(Vec::<u8>::new()));
        let flag = Arc::new(AtomicU32::new(0));
        let (ma, fa) = (Arc::clone(&m), Arc::clone(&flag));
        let a = thread::spawn(move || {
            ma.lock().unwrap().push(1);
            fa.store(1, Ordering::SeqCst);
        });
        let mb = Arc::clone(&m);
        let b = thread::spawn(move || {
            mb.lock().unwrap().push(2);
        });
        // The main thread is task c, so that the model has three threads
        // like nssim's (whose tasks need no parent).
        let flag_seen = flag.load(Ordering::SeqCst);
        let seen = m.lock().unwrap().clone();
        a.join().unwrap();
        b.join().unwrap();
        let last = m.lock().unwrap().clone();
        states.lock().unwrap().insert(FinalState {
            flag_seen,
            seen,
            last,
        });
    }
}
