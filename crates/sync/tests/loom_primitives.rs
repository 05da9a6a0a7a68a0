//! The primitives under loom: each test is a `loom::model` whose assertions
//! fail on a wrong interleaving. Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p nssim-sync --profile loom --test loom_primitives`.
#![cfg(loom)]

use loom::model::Builder;
use loom::thread;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize as StdUsize, Ordering as StdOrdering};
use std::sync::{OnceLock, Weak};
use sync::{
    flush_work, rcu_read_lock, schedule_work, synchronize_rcu, Arc, AtomicBool, AtomicI64,
    AtomicU32, AtomicU64, LList, LockGuard, Mutex, MutexGuard, Ordering, RcuReadGuard, Refcount,
    SpinLock, SpinLockGuard, Work, Workqueue,
};

/// Every model is explored with at most two preemptions, which keeps each
/// test well under a second.
fn builder() -> Builder {
    let mut b = Builder::new();
    b.preemption_bound = Some(2);
    b
}

/// Run `model` and return the message it failed with, if it did.
fn failure(model: impl Fn() + Sync + Send + 'static) -> Option<String> {
    let b = builder();
    catch_unwind(AssertUnwindSafe(|| b.check(model)))
        .err()
        .map(|p| {
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        })
}

#[test]
fn mutex_excludes_a_read_modify_write() {
    builder().check(|| {
        let counter = Arc::new(Mutex::new("counter_lock", 0i64));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let c = Arc::clone(&counter);
                thread::spawn(move || {
                    let mut g = c.lock();
                    let v = *g;
                    thread::yield_now();
                    *g = v + 1;
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*counter.lock(), 2);
    });
}

#[test]
fn relaxed_load_then_store_loses_an_update() {
    let msg = failure(|| {
        let counter = Arc::new(AtomicI64::new("counter", 0));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let c = Arc::clone(&counter);
                thread::spawn(move || {
                    let v = c.load(Ordering::Relaxed);
                    c.store(v + 1, Ordering::Relaxed);
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(counter.peek(), 2, "lost update");
    });
    let msg = msg.expect("loom should find the interleaving that loses an update");
    assert!(
        msg.contains("lost update"),
        "failed for another reason: {msg}"
    );
}

/// The classic RCU pattern: unpublish, wait for a grace period, free. A
/// reader that found the object must never see it freed.
fn rcu_unpublish_then_free(grace_period: bool) {
    let published = Arc::new(AtomicBool::new("published", true));
    let freed = Arc::new(AtomicBool::new("freed", false));
    let reader = {
        let (published, freed) = (Arc::clone(&published), Arc::clone(&freed));
        thread::spawn(move || {
            let _rcu = rcu_read_lock();
            if published.load(Ordering::Acquire) {
                thread::yield_now();
                assert!(!freed.load(Ordering::Relaxed), "use after free");
            }
        })
    };
    published.store(false, Ordering::Release);
    if grace_period {
        synchronize_rcu();
    }
    freed.store(true, Ordering::Relaxed);
    reader.join().unwrap();
}

#[test]
fn synchronize_rcu_waits_for_a_reader_that_started_before_it() {
    builder().check(|| rcu_unpublish_then_free(true));
    // The model has teeth: without the grace period loom finds the reader
    // using the freed object.
    let msg = failure(|| rcu_unpublish_then_free(false)).expect("use after free not found");
    assert!(
        msg.contains("use after free"),
        "failed for another reason: {msg}"
    );
}

#[test]
fn nested_rcu_sections_hold_off_a_grace_period_until_the_outer_ends() {
    builder().check(|| {
        let gp_done = Arc::new(AtomicBool::new("gp_done", false));
        let outer_entered = Arc::new(AtomicBool::new("outer_entered", false));
        let (g, entered) = (Arc::clone(&gp_done), Arc::clone(&outer_entered));
        let reader = thread::spawn(move || {
            let outer: RcuReadGuard = rcu_read_lock();
            entered.store(true, Ordering::SeqCst);
            let inner = rcu_read_lock();
            drop(inner);
            thread::yield_now();
            // Only the outer section is left, and it began before the grace
            // period if the writer saw `entered`.
            assert!(
                !g.load(Ordering::SeqCst),
                "grace period ended inside a reader"
            );
            drop(outer);
        });
        // Wait for the reader to be inside, so it started before the GP.
        while !outer_entered.load(Ordering::SeqCst) {
            thread::yield_now();
        }
        synchronize_rcu();
        gp_done.store(true, Ordering::SeqCst);
        reader.join().unwrap();
    });
}

#[test]
fn flush_work_waits_for_the_queued_run_and_is_false_when_idle() {
    // Executions in which the flush after schedule_work returned false, true.
    let outcomes = Arc::new([StdUsize::new(0), StdUsize::new(0)]);
    let seen = Arc::clone(&outcomes);
    builder().check(move || {
        let outcomes = &seen;
        let wq = Workqueue::new("wq");
        assert!(wq.start_worker("kworker").is_none());
        let runs = Arc::new(AtomicU64::new("runs", 0));
        let work = {
            let runs = Arc::clone(&runs);
            Work::new("work", &wq, move || {
                runs.fetch_add(1, Ordering::Relaxed);
            })
        };
        assert!(!flush_work(&work), "flush_work of an idle work waited");

        let mut queued = u64::from(schedule_work(&work));
        assert_eq!(queued, 1);
        // Pending still (false), or already picked up by the kworker, which
        // cleared PENDING first (true: queued again).
        queued += u64::from(schedule_work(&work));
        // False only if the kworker already finished every queued run.
        let waited = flush_work(&work);
        outcomes[usize::from(waited)].fetch_add(1, StdOrdering::Relaxed);
        // flush_work waited for the last queued instance, and its effect is
        // visible even through a relaxed load.
        assert_eq!(runs.load(Ordering::Relaxed), queued);
        assert!(!work.peek_pending() && !work.peek_running());
        assert!(!flush_work(&work), "flush_work of an idle work waited");
        wq.shutdown();
    });
    let [idle, waited] = outcomes.each_ref().map(|n| n.load(StdOrdering::Relaxed));
    assert!(idle > 0 && waited > 0, "idle {idle}, waited {waited}");
}

#[test]
fn work_requeued_from_its_own_run_runs_again() {
    builder().check(|| {
        let wq = Workqueue::new("wq");
        wq.start_worker("kworker");
        let runs = Arc::new(AtomicU32::new("runs", 0));
        let me: Arc<OnceLock<Weak<Work>>> = Arc::new(OnceLock::new());
        let work = {
            let (runs, me) = (Arc::clone(&runs), Arc::clone(&me));
            Work::new("work", &wq, move || {
                if runs.fetch_add(1, Ordering::Relaxed) == 0 {
                    let w = me.get().and_then(Weak::upgrade).expect("work is alive");
                    // PENDING was cleared before the function was called.
                    assert!(schedule_work(&w), "re-queue during the run was dropped");
                }
            })
        };
        me.set(Arc::downgrade(&work)).ok().unwrap();
        assert!(schedule_work(&work));
        // After the first flush the first run is over, and it queued the
        // second; the second flush waits for that one.
        flush_work(&work);
        assert!(runs.load(Ordering::Relaxed) >= 1);
        flush_work(&work);
        assert_eq!(runs.load(Ordering::Relaxed), 2);
        wq.shutdown();
    });
}

#[test]
fn llist_add_reports_the_empty_list_to_exactly_one_producer() {
    builder().check(|| {
        let list = Arc::new(LList::new("list"));
        let producers: Vec<_> = [1u32, 2]
            .into_iter()
            .map(|node| {
                let l = Arc::clone(&list);
                thread::spawn(move || (node, l.llist_add(node)))
            })
            .collect();
        let results: Vec<(u32, bool)> = producers.into_iter().map(|p| p.join().unwrap()).collect();
        let firsts: Vec<u32> = results.iter().filter(|r| r.1).map(|r| r.0).collect();
        assert_eq!(firsts.len(), 1, "llist_add results {results:?}");
        let second = results.iter().find(|r| !r.1).unwrap().0;
        assert_eq!(list.peek_len(), 2);
        // Newest first: the node added to a non-empty list comes first.
        assert_eq!(list.llist_del_all(), vec![second, firsts[0]]);
        assert_eq!(list.peek_len(), 0);
        assert!(
            list.llist_add(3),
            "list should be empty after llist_del_all"
        );
    });
}

#[test]
fn refcount_dec_and_lock_returns_the_lock_to_the_last_putter_only() {
    builder().check(|| {
        let rc = Arc::new(Refcount::new("rc", 2));
        let lock = Arc::new(SpinLock::new("lock", 0u32));
        let putters: Vec<_> = (0..2)
            .map(|_| {
                let (rc, lock) = (Arc::clone(&rc), Arc::clone(&lock));
                thread::spawn(move || match rc.dec_and_lock(&lock) {
                    Some(mut g) => {
                        *g += 1;
                        true
                    }
                    None => false,
                })
            })
            .collect();
        let got: u32 = putters
            .into_iter()
            .map(|p| u32::from(p.join().unwrap()))
            .sum();
        assert_eq!(got, 1);
        assert_eq!(*lock.lock(), 1);
        assert_eq!(rc.peek(), 0);
        rc.inc();
        assert!(rc.dec_and_test());
    });
}

/// Compile-time check that the loom backend has the sim backend's
/// signatures (the same list compiles against the sim backend).
#[test]
fn api_has_the_sim_backend_signatures() {
    use sim::ObjId;
    type T = u8;
    let _: fn(&'static str, T) -> Mutex<T> = Mutex::new;
    let _: for<'a> fn(&'a Mutex<T>) -> MutexGuard<'a, T> = Mutex::lock;
    let _: fn(&Mutex<T>) -> ObjId = Mutex::obj;
    let _: fn(&'static str, T) -> SpinLock<T> = SpinLock::new;
    let _: for<'a> fn(&'a SpinLock<T>) -> SpinLockGuard<'a, T> = SpinLock::lock;
    let _: fn(&SpinLock<T>) -> ObjId = SpinLock::obj;
    let _: for<'a> fn(LockGuard<'a, T>) -> MutexGuard<'a, T> = |g| g;
    macro_rules! atomic {
        ($a:ty, $i:ty) => {{
            let _: fn(&'static str, $i) -> $a = <$a>::new;
            let _: fn(&$a) -> ObjId = <$a>::obj;
            let _: fn(&$a, Ordering) -> $i = <$a>::load;
            let _: fn(&$a, $i, Ordering) = <$a>::store;
            let _: fn(&$a, $i, Ordering) -> $i = <$a>::fetch_add;
            let _: fn(&$a, $i, Ordering) -> $i = <$a>::fetch_sub;
            let _: fn(&$a, $i, $i, Ordering, Ordering) -> Result<$i, $i> = <$a>::compare_exchange;
            let _: fn(&$a) -> $i = <$a>::peek;
        }};
    }
    atomic!(AtomicI64, i64);
    atomic!(AtomicU64, u64);
    atomic!(AtomicU32, u32);
    let _: fn(&'static str, bool) -> AtomicBool = AtomicBool::new;
    let _: fn(&AtomicBool, Ordering) -> bool = AtomicBool::load;
    let _: fn(&AtomicBool, bool, Ordering) = AtomicBool::store;
    let _: fn(&AtomicBool, bool, Ordering) -> bool = AtomicBool::swap;
    let _: fn() -> RcuReadGuard = rcu_read_lock;
    let _: fn() = synchronize_rcu;
    let _: fn() -> ObjId = sync::rcu_obj;
    let _: fn(&'static str) -> LList<T> = LList::new;
    let _: fn(&LList<T>, T) -> bool = LList::llist_add;
    let _: fn(&LList<T>) -> Vec<T> = LList::llist_del_all;
    let _: fn(&LList<T>) -> usize = LList::peek_len;
    let _: fn(&'static str, i64) -> Refcount = Refcount::new;
    let _: fn(&Refcount) = Refcount::inc;
    let _: fn(&Refcount) -> bool = Refcount::dec_and_test;
    let _: for<'a> fn(&Refcount, &'a SpinLock<T>) -> Option<SpinLockGuard<'a, T>> =
        Refcount::dec_and_lock;
    let _: fn(&Refcount) -> i64 = Refcount::peek;
    let _: fn(&'static str) -> Arc<Workqueue> = Workqueue::new;
    let _: fn(&Arc<Workqueue>, &str) -> Option<std::thread::JoinHandle<()>> =
        Workqueue::start_worker;
    let _: fn(&Workqueue) = Workqueue::shutdown;
    type NewWork = fn(&'static str, &Arc<Workqueue>, fn()) -> Arc<Work>;
    let _: NewWork = Work::new;
    let _: fn(&Work) -> ObjId = Work::obj;
    let _: fn(&Work) -> bool = Work::peek_pending;
    let _: fn(&Work) -> bool = Work::peek_running;
    let _: fn(&Arc<Work>) -> bool = schedule_work;
    let _: fn(&Work) -> bool = flush_work;

    // Shareable between threads, like the sim backend's.
    fn send_sync<S: Send + Sync>() {}
    send_sync::<Mutex<T>>();
    send_sync::<SpinLock<T>>();
    send_sync::<AtomicI64>();
    send_sync::<AtomicU64>();
    send_sync::<AtomicU32>();
    send_sync::<AtomicBool>();
    send_sync::<LList<T>>();
    send_sync::<Refcount>();
    send_sync::<Workqueue>();
    send_sync::<Work>();
}
