//! The conformance suite's models, written once against std's shapes: the
//! file is compiled twice, with `imp` as std (`std_suite.rs`, real
//! threads, a stress test) and as nssim (`nssim_suite.rs`, explored). It
//! covers what shuttle's and loom's own integration tests check, in this
//! project's words: each primitive's semantics, and bugs the explorer must
//! find (lost updates, deadlocks, a panic in a task, a bug that needs
//! several preemptions).
//!
//! `CORRECT` models hold in every schedule; `BUGGY` ones fail in some
//! schedule (nssim must find it; on real threads they are not run, since
//! a deadlock would hang the stress test).

use super::imp::future;
use super::imp::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use super::imp::sync::mpsc;
use super::imp::sync::{Arc, Barrier, Condvar, Mutex, Once, OnceLock, RwLock};
use super::imp::thread;

/// Models that hold in every schedule.
pub const CORRECT: &[(&str, fn())] = &[
    ("mutex_counter", mutex_counter),
    ("compare_exchange_spin_lock", compare_exchange_spin_lock),
    ("atomic_fetch_add_counter", atomic_fetch_add_counter),
    ("condvar_handshake", condvar_handshake),
    (
        "condvar_notify_all_wakes_every_waiter",
        condvar_notify_all_wakes_every_waiter,
    ),
    (
        "rwlock_readers_see_a_whole_write",
        rwlock_readers_see_a_whole_write,
    ),
    ("barrier_orders_phases", barrier_orders_phases),
    ("once_runs_once", once_runs_once),
    ("once_lock_one_value", once_lock_one_value),
    (
        "channel_keeps_order_per_sender",
        channel_keeps_order_per_sender,
    ),
    ("sync_channel_rendezvous", sync_channel_rendezvous),
    ("receiver_sees_disconnect", receiver_sees_disconnect),
    ("scoped_tasks_borrow_and_join", scoped_tasks_borrow_and_join),
    ("park_unpark_handshake", park_unpark_handshake),
    ("join_returns_the_value", join_returns_the_value),
    ("thread_names_and_ids", thread_names_and_ids),
    ("try_lock_fails_while_held", try_lock_fails_while_held),
    (
        "poisoned_mutex_after_caught_panic",
        poisoned_mutex_after_caught_panic,
    ),
    ("futures_join_their_outputs", futures_join_their_outputs),
    ("message_passing_publication", message_passing_publication),
];

/// Models with a bug some schedule shows, and what the failure says.
pub const BUGGY: &[(&str, fn(), &str)] = &[
    (
        "lost_update_load_store",
        lost_update_load_store,
        "lost update",
    ),
    ("abba_deadlock", abba_deadlock, "deadlock"),
    (
        "condvar_wait_without_check",
        condvar_wait_without_check,
        "deadlock",
    ),
    ("panic_in_a_spawned_task", panic_in_a_spawned_task, "boom"),
    (
        "check_then_act_on_a_map",
        check_then_act_on_a_map,
        "inserted twice",
    ),
    (
        "unsynchronized_flag_publication",
        unsynchronized_flag_publication,
        "saw the flag before the data",
    ),
    ("async_lost_update", async_lost_update, "lost update"),
    (
        "receive_with_no_sender_left_alive",
        receive_with_no_sender_left_alive,
        "deadlock",
    ),
];

fn mutex_counter() {
    let n = Arc::new(Mutex::new(0u64));
    let ts: Vec<_> = (0..3)
        .map(|_| {
            let n = Arc::clone(&n);
            thread::spawn(move || *n.lock().unwrap() += 1)
        })
        .collect();
    for t in ts {
        t.join().unwrap();
    }
    assert_eq!(*n.lock().unwrap(), 3);
}

fn atomic_fetch_add_counter() {
    let n = Arc::new(AtomicUsize::new(0));
    let ts: Vec<_> = (0..3)
        .map(|_| {
            let n = Arc::clone(&n);
            thread::spawn(move || n.fetch_add(1, Ordering::SeqCst))
        })
        .collect();
    let mut seen: Vec<usize> = ts.into_iter().map(|t| t.join().unwrap()).collect();
    seen.sort_unstable();
    assert_eq!(seen, [0, 1, 2], "each increment saw its own value");
}

fn compare_exchange_spin_lock() {
    let (lock, data) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicU64::new(0)),
    );
    let critical = |lock: &AtomicBool, data: &AtomicU64| {
        while lock
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            thread::yield_now();
        }
        let v = data.load(Ordering::Relaxed);
        data.store(v + 1, Ordering::Relaxed);
        lock.store(false, Ordering::Release);
    };
    let (l, d) = (Arc::clone(&lock), Arc::clone(&data));
    let t = thread::spawn(move || critical(&l, &d));
    critical(&lock, &data);
    t.join().unwrap();
    assert_eq!(data.load(Ordering::SeqCst), 2);
}

fn condvar_handshake() {
    let pair = Arc::new((Mutex::new(false), Condvar::new()));
    let p = Arc::clone(&pair);
    let t = thread::spawn(move || {
        *p.0.lock().unwrap() = true;
        p.1.notify_one();
    });
    let (ready, cv) = &*pair;
    let mut r = ready.lock().unwrap();
    while !*r {
        r = cv.wait(r).unwrap();
    }
    drop(r);
    t.join().unwrap();
}

fn condvar_notify_all_wakes_every_waiter() {
    let state = Arc::new((Mutex::new((false, 0u32)), Condvar::new()));
    let waiters: Vec<_> = (0..2)
        .map(|_| {
            let s = Arc::clone(&state);
            thread::spawn(move || {
                let mut g = s.1.wait_while(s.0.lock().unwrap(), |(go, _)| !*go).unwrap();
                g.1 += 1;
            })
        })
        .collect();
    state.0.lock().unwrap().0 = true;
    state.1.notify_all();
    for w in waiters {
        w.join().unwrap();
    }
    assert_eq!(state.0.lock().unwrap().1, 2);
}

fn rwlock_readers_see_a_whole_write() {
    let pair = Arc::new(RwLock::new((0u32, 0u32)));
    let w = Arc::clone(&pair);
    let writer = thread::spawn(move || {
        let mut g = w.write().unwrap();
        g.0 = 1;
        thread::yield_now();
        g.1 = 1;
    });
    let r = Arc::clone(&pair);
    let reader = thread::spawn(move || {
        let g = r.read().unwrap();
        assert_eq!(g.0, g.1, "a reader saw half a write");
    });
    writer.join().unwrap();
    reader.join().unwrap();
}

fn barrier_orders_phases() {
    let (b, x) = (Arc::new(Barrier::new(2)), Arc::new(AtomicU64::new(0)));
    let (b2, x2) = (Arc::clone(&b), Arc::clone(&x));
    let t = thread::spawn(move || {
        x2.store(1, Ordering::SeqCst);
        b2.wait().is_leader()
    });
    let me = b.wait().is_leader();
    assert_eq!(x.load(Ordering::SeqCst), 1, "the store before the barrier");
    assert!(me ^ t.join().unwrap(), "exactly one leader");
}

fn once_runs_once() {
    let (once, runs) = (Arc::new(Once::new()), Arc::new(AtomicU64::new(0)));
    let ts: Vec<_> = (0..2)
        .map(|_| {
            let (o, r) = (Arc::clone(&once), Arc::clone(&runs));
            thread::spawn(move || {
                o.call_once(|| {
                    r.fetch_add(1, Ordering::SeqCst);
                });
                assert_eq!(
                    r.load(Ordering::SeqCst),
                    1,
                    "call_once returned before the run"
                );
            })
        })
        .collect();
    for t in ts {
        t.join().unwrap();
    }
    assert!(once.is_completed());
}

fn once_lock_one_value() {
    let cell = Arc::new(OnceLock::new());
    let c = Arc::clone(&cell);
    let t = thread::spawn(move || *c.get_or_init(|| 1u32));
    let mine = *cell.get_or_init(|| 2);
    assert_eq!(mine, t.join().unwrap());
}

fn channel_keeps_order_per_sender() {
    let (tx, rx) = mpsc::channel();
    let tx2 = tx.clone();
    let a = thread::spawn(move || {
        for i in 0..3 {
            tx.send(("a", i)).unwrap();
        }
    });
    let b = thread::spawn(move || {
        for i in 0..3 {
            tx2.send(("b", i)).unwrap();
        }
    });
    let got: Vec<_> = rx.iter().collect();
    a.join().unwrap();
    b.join().unwrap();
    for who in ["a", "b"] {
        let mine: Vec<u32> = got
            .iter()
            .filter(|(w, _)| *w == who)
            .map(|(_, i)| *i)
            .collect();
        assert_eq!(mine, [0, 1, 2], "{who}'s values in order");
    }
}

fn sync_channel_rendezvous() {
    let (tx, rx) = mpsc::sync_channel(0);
    let sent = Arc::new(AtomicBool::new(false));
    let s = Arc::clone(&sent);
    let t = thread::spawn(move || {
        tx.send(7u32).unwrap();
        s.store(true, Ordering::SeqCst);
    });
    assert_eq!(rx.recv().unwrap(), 7);
    t.join().unwrap();
    assert!(sent.load(Ordering::SeqCst));
}

fn receiver_sees_disconnect() {
    let (tx, rx) = mpsc::channel::<u32>();
    let t = thread::spawn(move || drop(tx));
    assert!(rx.recv().is_err(), "no sender left: the receive ends");
    t.join().unwrap();
}

fn scoped_tasks_borrow_and_join() {
    let mut halves = [0u32; 2];
    let total = AtomicU64::new(0);
    thread::scope(|s| {
        let (a, b) = halves.split_at_mut(1);
        let total = &total;
        s.spawn(move || {
            a[0] = 1;
            total.fetch_add(1, Ordering::SeqCst);
        });
        s.spawn(move || {
            b[0] = 2;
            total.fetch_add(2, Ordering::SeqCst);
        });
    });
    assert_eq!(halves, [1, 2]);
    assert_eq!(total.load(Ordering::SeqCst), 3);
}

fn park_unpark_handshake() {
    let flag = Arc::new(AtomicBool::new(false));
    let f = Arc::clone(&flag);
    let parked = thread::spawn(move || {
        while !f.load(Ordering::SeqCst) {
            thread::park();
        }
    });
    flag.store(true, Ordering::SeqCst);
    parked.thread().unpark();
    parked.join().unwrap();
}

fn join_returns_the_value() {
    let t = thread::spawn(|| (1..=4u32).product::<u32>());
    assert_eq!(t.join().unwrap(), 24);
}

fn thread_names_and_ids() {
    let me = thread::current().id();
    let t = thread::Builder::new()
        .name("worker".to_string())
        .spawn(|| {
            (
                thread::current().id(),
                thread::current().name().map(String::from),
            )
        })
        .unwrap();
    let (id, name) = t.join().unwrap();
    assert_ne!(id, me);
    assert_eq!(name.as_deref(), Some("worker"));
}

fn try_lock_fails_while_held() {
    let m = Arc::new(Mutex::new(()));
    let held = m.lock().unwrap();
    let m2 = Arc::clone(&m);
    let t = thread::spawn(move || m2.try_lock().is_err());
    assert!(t.join().unwrap(), "try_lock got a held lock");
    drop(held);
    assert!(m.try_lock().is_ok());
}

fn poisoned_mutex_after_caught_panic() {
    let m = Arc::new(Mutex::new(1u32));
    let m2 = Arc::clone(&m);
    let t = thread::spawn(move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _g = m2.lock().unwrap();
            panic!("while holding the lock (caught)");
        }));
        r.is_err()
    });
    assert!(t.join().unwrap());
    assert!(m.is_poisoned());
    assert_eq!(*m.lock().unwrap_or_else(|e| e.into_inner()), 1);
}

fn futures_join_their_outputs() {
    let a = future::spawn(async { 6u32 });
    let b = future::spawn(async { 7u32 });
    let product = future::block_on(async { a.await.unwrap() * b.await.unwrap() });
    assert_eq!(product, 42);
}

fn message_passing_publication() {
    let (data, ready) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicBool::new(false)),
    );
    let (d, r) = (Arc::clone(&data), Arc::clone(&ready));
    let t = thread::spawn(move || {
        d.store(42, Ordering::Relaxed);
        r.store(true, Ordering::Release);
    });
    if ready.load(Ordering::Acquire) {
        assert_eq!(data.load(Ordering::Relaxed), 42);
    }
    t.join().unwrap();
}

fn lost_update_load_store() {
    let n = Arc::new(AtomicU64::new(0));
    let ts: Vec<_> = (0..2)
        .map(|_| {
            let n = Arc::clone(&n);
            thread::spawn(move || {
                let v = n.load(Ordering::SeqCst);
                n.store(v + 1, Ordering::SeqCst);
            })
        })
        .collect();
    for t in ts {
        t.join().unwrap();
    }
    assert_eq!(n.load(Ordering::SeqCst), 2, "lost update");
}

fn abba_deadlock() {
    let (a, b) = (Arc::new(Mutex::new(())), Arc::new(Mutex::new(())));
    let (a2, b2) = (Arc::clone(&a), Arc::clone(&b));
    let t = thread::spawn(move || {
        let _b = b2.lock().unwrap();
        let _a = a2.lock().unwrap();
    });
    {
        let _a = a.lock().unwrap();
        let _b = b.lock().unwrap();
    }
    t.join().unwrap();
}

fn condvar_wait_without_check() {
    let pair = Arc::new((Mutex::new(false), Condvar::new()));
    let p = Arc::clone(&pair);
    let t = thread::spawn(move || {
        *p.0.lock().unwrap() = true;
        p.1.notify_one();
    });
    let (m, cv) = &*pair;
    // The bug: waiting without looking at the flag first.
    drop(cv.wait(m.lock().unwrap()).unwrap());
    t.join().unwrap();
}

fn panic_in_a_spawned_task() {
    let flag = Arc::new(AtomicBool::new(false));
    let f = Arc::clone(&flag);
    let t = thread::spawn(move || {
        if f.load(Ordering::SeqCst) {
            panic!("boom");
        }
    });
    flag.store(true, Ordering::SeqCst);
    let _ = t.join();
}

fn check_then_act_on_a_map() {
    let map = Arc::new(Mutex::new(std::collections::BTreeMap::new()));
    let inserts = Arc::new(AtomicU64::new(0));
    let ts: Vec<_> = (0..2)
        .map(|i| {
            let (map, inserts) = (Arc::clone(&map), Arc::clone(&inserts));
            thread::spawn(move || {
                let present = map.lock().unwrap().contains_key("k");
                if !present {
                    map.lock().unwrap().insert("k", i);
                    inserts.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    for t in ts {
        t.join().unwrap();
    }
    assert_eq!(inserts.load(Ordering::SeqCst), 1, "inserted twice");
}

fn unsynchronized_flag_publication() {
    let (data, ready) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicBool::new(false)),
    );
    let (d, r) = (Arc::clone(&data), Arc::clone(&ready));
    let t = thread::spawn(move || {
        // The bug: the flag is set before the data it announces.
        r.store(true, Ordering::SeqCst);
        d.store(42, Ordering::SeqCst);
    });
    if ready.load(Ordering::SeqCst) {
        assert_eq!(
            data.load(Ordering::SeqCst),
            42,
            "saw the flag before the data"
        );
    }
    t.join().unwrap();
}

fn async_lost_update() {
    let n = Arc::new(AtomicU64::new(0));
    let hs: Vec<_> = (0..2)
        .map(|_| {
            let n = Arc::clone(&n);
            future::spawn(async move {
                let v = n.load(Ordering::SeqCst);
                future::yield_now().await;
                n.store(v + 1, Ordering::SeqCst);
            })
        })
        .collect();
    future::block_on(async {
        for h in hs {
            h.await.unwrap();
        }
    });
    assert_eq!(n.load(Ordering::SeqCst), 2, "lost update");
}

fn receive_with_no_sender_left_alive() {
    let (tx, rx) = mpsc::channel::<u32>();
    let t = thread::spawn(move || {
        let _ = rx.recv();
    });
    // The bug: the sender is kept, and nothing is sent, so the receiver
    // waits for ever while this task waits for it.
    t.join().unwrap();
    drop(tx);
}
