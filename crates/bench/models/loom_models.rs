//! The loom side of the workloads, included by the benches and tests with
//! `#[path]` (loom is a dev-dependency of this crate only). Loom runs here
//! without `--cfg loom`: only this file uses it, directly.

use bench::FinalState;
use loom::model::Builder;
use loom::sync::atomic::{AtomicU32, Ordering};
use loom::sync::{Arc, Mutex};
use loom::thread;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64 as StdU64, Ordering as StdOrdering};
use std::sync::{Arc as StdArc, Mutex as StdMutex};

/// Exhaust `f` with loom (DPOR, no preemption bound); the number of
/// executions it took.
pub fn exhaust(f: impl Fn() + Sync + Send + 'static) -> u64 {
    let count = StdArc::new(StdU64::new(0));
    let c = StdArc::clone(&count);
    let mut b = Builder::new();
    b.preemption_bound = None;
    b.max_branches = 100_000;
    b.check(move || {
        c.fetch_add(1, StdOrdering::Relaxed);
        f();
    });
    count.load(StdOrdering::Relaxed)
}

/// (a) at a size loom can exhaust: `tasks` threads each doing `ops` times
/// lock; +1; unlock; the main thread joins them and checks the count.
pub fn mutex(tasks: usize, ops: usize) -> impl Fn() + Sync + Send + 'static {
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

/// (c): the same three tasks as nssim's `small_build` (the main thread is
/// task c); every final state is added to `states`.
pub fn small(states: StdArc<StdMutex<BTreeSet<FinalState>>>) -> impl Fn() + Sync + Send + 'static {
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
