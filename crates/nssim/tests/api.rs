//! The library API from a Rust test: the std mirror, the entry points and
//! replay.

use nssim::sync::atomic::{AtomicU64, Ordering};
use nssim::sync::{Arc, Mutex};
use nssim::{check, check_report, replay, thread, Config, Dfs, Outcome, Random, ReplayError};

fn locked_counter() {
    let counter = Arc::new(Mutex::new(0));
    let handles: Vec<_> = (0..3)
        .map(|i| {
            let c = Arc::clone(&counter);
            thread::Builder::new()
                .name(format!("t{i}"))
                .spawn(move || *c.lock().unwrap() += 1)
                .unwrap()
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(*counter.lock().unwrap(), 3);
}

#[test]
fn a_correct_model_passes_every_explored_schedule() {
    check(
        Config::default().strategy(Random).iterations(300),
        locked_counter,
    );
    let r = check_report(
        Config::default()
            .strategy(Dfs {
                preemption_bound: 2,
            })
            .iterations(100_000),
        locked_counter,
    );
    assert_eq!(r.outcome, Outcome::Pass);
    assert!(!r.is_failure());
}

fn abba() {
    let a = Arc::new(Mutex::named("A", ()));
    let b = Arc::new(Mutex::named("B", ()));
    let (a2, b2) = (Arc::clone(&a), Arc::clone(&b));
    let t = thread::Builder::new()
        .name("other".into())
        .spawn(move || {
            let _b = b2.lock();
            let _a = a2.lock();
        })
        .unwrap();
    {
        let _a = a.lock();
        let _b = b.lock();
    }
    t.join().unwrap();
}

#[test]
fn a_deadlock_is_reported_with_a_token_that_replays_it() {
    let r = check_report(Config::default().iterations(500), abba);
    assert!(
        matches!(r.outcome, Outcome::Deadlock { .. }),
        "{}",
        r.outcome
    );
    let again = replay(abba, r.token()).unwrap();
    assert_eq!(again.outcome, r.outcome);
    assert_eq!(again.trace_hash, r.trace_hash);
    assert!(r.trace().contains("mutex_lock"));
    assert!(
        r.schedule.iter().any(|s| s.starts_with("other@")),
        "{:?}",
        r.schedule
    );
}

#[test]
#[should_panic(expected = "deadlock")]
fn check_panics_with_the_report() {
    check(Config::default().iterations(500), abba);
}

#[test]
fn a_bad_token_is_an_error_not_a_panic() {
    for bad in [
        "",
        "hello",
        "nss1_",
        "nss1_AAAA",
        "nss1_\u{1b}[31m",
        "nss1_AQ!",
    ] {
        let e = replay(abba, bad).unwrap_err();
        assert!(matches!(e, ReplayError::Token { .. }), "{bad:?}: {e}");
        assert!(!e.to_string().contains('\u{1b}'), "{e}");
    }
    // A token of a scenario file's run (its context names a kernel run).
    let file_token = "nss1_Aoic0twJAQR2Ni4yAoCt4gSAwOKF42gEAgZsb29wZXIFc3RhcnQBAAE76VoR8w";
    assert!(sim::Token::decode(file_token).is_ok());
    assert_eq!(
        replay(abba, file_token).unwrap_err(),
        ReplayError::NotFromTheApi
    );
}

/// A lost update, written as for std: unnamed threads and an atomic.
fn lost_update() {
    let counter = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let c = Arc::clone(&counter);
            thread::spawn(move || {
                let v = c.load(Ordering::SeqCst);
                c.store(v + 1, Ordering::SeqCst);
                v
            })
        })
        .collect();
    let seen: Vec<u64> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert!(seen.len() == 2);
    assert_eq!(counter.load(Ordering::SeqCst), 2, "lost update");
}

#[test]
fn every_entry_point_finds_the_lost_update_and_names_by_source_location() {
    for (which, r) in [
        ("random", nssim::check_random(lost_update, 1000)),
        ("pct", nssim::check_pct(lost_update, 1000, 2)),
        ("dfs", nssim::check_dfs(lost_update, 2)),
    ] {
        assert!(r.is_failure(), "{}", r.outcome);
        assert!(r.message().contains("lost update"), "{}", r.message());
        // The line to paste into a test that replays it.
        let paste = format!("replay: nssim::replay(model, \"{}\")", r.token());
        assert!(r.message().contains(&paste), "{}", r.message());
        // Unnamed tasks and objects carry their source location.
        assert!(r.trace().contains("tests/api.rs:"), "{}", r.trace());
        let again = replay(lost_update, r.token()).unwrap();
        assert_eq!(
            again.trace_hash,
            r.trace_hash,
            "{which}: {:?}\n{}\n---\n{}",
            r.schedule,
            r.trace(),
            again.trace()
        );
    }
}

#[test]
fn outside_an_execution_the_mirror_runs_real_threads() {
    // The same model, called directly: real threads, real atomics; the
    // join returns each thread's value.
    let counter = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = (0..4u64)
        .map(|i| {
            let c = Arc::clone(&counter);
            thread::spawn(move || {
                c.fetch_add(1, Ordering::SeqCst);
                i * 10
            })
        })
        .collect();
    let got: Vec<u64> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(got, vec![0, 10, 20, 30]);
    assert_eq!(counter.load(Ordering::SeqCst), 4);
    locked_counter();
}

/// A preemption bound past 64 (the exhaustive search's limit) is refused
/// with the setting and its range named, not taken as given.
#[test]
#[should_panic(expected = "nssim: preemption_bound = 65 is out of its range 0..=64")]
fn a_preemption_bound_past_its_limit_is_refused() {
    nssim::check_dfs(locked_counter, 65);
}

#[test]
#[should_panic(expected = "nssim: preemption_bound = 4294967295 is out of its range")]
fn the_largest_preemption_bound_is_refused_too() {
    nssim::check_dfs(locked_counter, u32::MAX);
}

#[test]
#[should_panic(expected = "nssim: iterations = 0 is out of its range 1..=")]
fn no_iterations_is_refused() {
    nssim::check_random(locked_counter, 0);
}

#[test]
fn the_largest_preemption_bound_is_taken() {
    let report = nssim::check_dfs(locked_counter, 64);
    assert!(!report.outcome.is_failure(), "{report}");
}

/// The report says how many times the model ran, which is more than the
/// iterations asked for (the trace is recorded by one run more, and a
/// failure is shrunk by others); a test that counts side effects can hold
/// its count to it.
#[test]
fn the_report_counts_every_run_of_the_model() {
    use std::sync::atomic::{AtomicU64 as Count, Ordering as Relaxed};
    static RUNS: Count = Count::new(0);
    let counted = || {
        RUNS.fetch_add(1, Relaxed::Relaxed);
        locked_counter();
    };
    let report = nssim::check_random(counted, 10);
    assert!(!report.is_failure(), "{report}");
    assert_eq!(report.model_runs, RUNS.load(Relaxed::Relaxed));
    assert_eq!(report.model_runs, 11, "ten executions and the recorded one");
}

/// `thread::yield_now` and `thread::sleep` as std has them: a spin-wait
/// that yields lets the other task run under random search, and a sleep is
/// a step of virtual time in the trace.
#[test]
fn a_task_may_yield_and_sleep_as_with_std() {
    use nssim::sync::atomic::AtomicBool;
    use std::time::Duration;
    let spin_wait = || {
        let flag = Arc::new(AtomicBool::new(false));
        let f = Arc::clone(&flag);
        let t = thread::spawn(move || {
            thread::sleep(Duration::from_millis(1));
            f.store(true, Ordering::SeqCst);
        });
        while !flag.load(Ordering::SeqCst) {
            thread::yield_now();
        }
        t.join().unwrap();
    };
    let report = nssim::check_random(spin_wait, 200);
    assert!(!report.is_failure(), "{report}");
    assert!(report.trace().contains("sleep"), "{}", report.trace());
    assert!(report.trace().contains("yield_now"), "{}", report.trace());
}

/// Two tasks each set a bit of a word: by `fetch_or` (one scheduling
/// point) no bit is ever lost; by a load and a store (two) the search
/// finds the schedule that loses one. The same for `fetch_update`.
#[test]
fn a_read_modify_write_is_one_step_and_a_load_and_store_two() {
    use nssim::sync::atomic::{AtomicPtr, AtomicUsize};
    fn set_bits(rmw: bool) {
        let word = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = [0b01usize, 0b10]
            .into_iter()
            .map(|bit| {
                let w = Arc::clone(&word);
                thread::spawn(move || match rmw {
                    true => {
                        w.fetch_or(bit, Ordering::AcqRel);
                    }
                    false => {
                        let v = w.load(Ordering::Acquire);
                        w.store(v | bit, Ordering::Release);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(word.load(Ordering::SeqCst), 0b11, "a bit was lost");
    }
    let exhaustive = || {
        Config::default().strategy(Dfs {
            preemption_bound: 2,
        })
    };
    let report = check_report(exhaustive(), || set_bits(true));
    assert!(!report.is_failure(), "{report}");
    let report = check_report(exhaustive(), || set_bits(false));
    assert!(report.is_failure(), "the lost bit was not found");

    let report = check_report(exhaustive(), || {
        let n = Arc::new(AtomicUsize::new(0));
        let n2 = Arc::clone(&n);
        let add = move |n: &AtomicUsize| {
            n.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| Some(v + 1))
        };
        let t = thread::spawn(move || add(&n2).unwrap());
        add(&n).unwrap();
        t.join().unwrap();
        let mut slot = 7u8;
        let p = AtomicPtr::new(std::ptr::null_mut());
        assert!(p.swap(&mut slot, Ordering::SeqCst).is_null());
        assert_eq!(n.load(Ordering::SeqCst), 2);
    });
    assert!(!report.is_failure(), "{report}");
}

/// `try_lock` never waits: while another task holds the lock it gives
/// `WouldBlock` (some schedule shows it), else the lock; `into_inner` and
/// `get_mut` reach the value without a lock, and outside an execution the
/// same calls work on a real lock.
#[test]
fn try_lock_gives_would_block_while_another_task_holds_the_lock() {
    use nssim::sync::TryLockError;
    fn contend() -> bool {
        let m = Arc::new(Mutex::new(0));
        let m2 = Arc::clone(&m);
        let holder = thread::spawn(move || *m2.lock().unwrap() += 1);
        let busy = match m.try_lock() {
            Ok(mut g) => {
                *g += 10;
                false
            }
            Err(TryLockError::WouldBlock) => true,
            Err(TryLockError::Poisoned(_)) => unreachable!("never poisoned"),
        };
        holder.join().unwrap();
        let mut m = Arc::into_inner(m).expect("the only reference");
        *m.get_mut().unwrap() += 100;
        let v = m.into_inner().unwrap();
        assert_eq!(v, if busy { 101 } else { 111 });
        busy
    }
    let busy_seen = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = std::sync::Arc::clone(&busy_seen);
    let report = check_report(
        Config::default().strategy(Dfs {
            preemption_bound: 2,
        }),
        move || {
            if contend() {
                seen.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        },
    );
    assert!(!report.is_failure(), "{report}");
    assert!(
        busy_seen.load(std::sync::atomic::Ordering::Relaxed),
        "no schedule found the lock held"
    );
    // Outside an execution: real threads, a real lock.
    contend();
}

nssim::thread_local! {
    static RUNS_SEEN: std::cell::Cell<u32> = std::cell::Cell::new(0);
}

/// A thread-local starts afresh in every execution and in every task, so
/// a model's verdict cannot depend on the executions before it; and
/// `thread::current()` tells the tasks apart.
#[test]
fn thread_locals_are_per_task_and_per_execution() {
    let model = || {
        RUNS_SEEN.set(RUNS_SEEN.get() + 1);
        assert_eq!(RUNS_SEEN.get(), 1, "a value carried over");
        let main = thread::current().id();
        let t = thread::spawn(move || {
            assert_ne!(thread::current().id(), main);
            RUNS_SEEN.get()
        });
        assert_eq!(t.join().unwrap(), 0, "another task's value");
    };
    let report = check_report(Config::default().strategy(Random).iterations(50), model);
    assert!(!report.is_failure(), "{report}");
    assert!(report.executions >= 50);
    let report = check_report(
        Config::default().strategy(Dfs {
            preemption_bound: 2,
        }),
        model,
    );
    assert!(!report.is_failure(), "{report}");
}

std::thread_local! {
    static STD_SEEN: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// `std::thread_local!` cannot be per task (every task runs on one OS
/// thread): a model that uses one is told so, by the thread-local's path,
/// in the report (and once on stderr); one that uses nssim's is not.
#[test]
fn a_std_thread_local_used_in_a_model_is_reported() {
    if cfg!(not(all(target_os = "linux", target_env = "gnu"))) {
        eprintln!("skipped: std's thread-locals are found on Linux with glibc only");
        return;
    }
    let report = check_report(Config::default().strategy(Random).iterations(5), || {
        let t = thread::spawn(|| STD_SEEN.set(STD_SEEN.get() + 1));
        STD_SEEN.set(STD_SEEN.get() + 1);
        t.join().unwrap();
    });
    assert_eq!(report.std_thread_locals, ["api::STD_SEEN"], "{report}");
    assert!(
        report
            .message()
            .contains("std::thread_local! `api::STD_SEEN`"),
        "{report}"
    );
    let report = check_report(Config::default().strategy(Random).iterations(5), || {
        let t = thread::spawn(|| RUNS_SEEN.set(RUNS_SEEN.get() + 1));
        RUNS_SEEN.set(RUNS_SEEN.get() + 1);
        t.join().unwrap();
    });
    assert!(report.std_thread_locals.is_empty(), "{report}");
}

/// A barrier orders what comes before it in every task before what comes
/// after it in any; a barrier waiting for a party that never comes is a
/// deadlock the report names, not a hang.
#[test]
fn a_barrier_orders_tasks_and_a_missing_party_is_a_deadlock() {
    use nssim::sync::Barrier;
    let exhaustive = || {
        Config::default().strategy(Dfs {
            preemption_bound: 3,
        })
    };
    let report = check_report(exhaustive(), || {
        let (b, x) = (Arc::new(Barrier::new(2)), Arc::new(AtomicU64::new(0)));
        let (b2, x2) = (Arc::clone(&b), Arc::clone(&x));
        let t = thread::spawn(move || {
            x2.store(1, Ordering::SeqCst);
            b2.wait();
        });
        b.wait();
        assert_eq!(x.load(Ordering::SeqCst), 1, "the store before the barrier");
        t.join().unwrap();
    });
    assert!(!report.is_failure(), "{report}");
    let report = check_report(exhaustive(), || {
        let b = Arc::new(Barrier::new(3));
        let b2 = Arc::clone(&b);
        let t = thread::spawn(move || {
            b2.wait();
        });
        b.wait();
        t.join().unwrap();
    });
    assert!(
        matches!(report.outcome, Outcome::Deadlock { .. }),
        "{report}"
    );
}

/// An RwLock lets readers in together and a writer in alone: some
/// schedule has two readers inside at once, none has a reader beside the
/// writer; a task that asks to write while it reads waits for itself, a
/// deadlock the report names.
#[test]
fn an_rwlock_shares_reading_and_excludes_writing() {
    use nssim::sync::RwLock;
    let together = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = std::sync::Arc::clone(&together);
    let exhaustive = || {
        Config::default().strategy(Dfs {
            preemption_bound: 3,
        })
    };
    let report = check_report(exhaustive(), move || {
        let (l, inside) = (Arc::new(RwLock::new(0u32)), Arc::new(AtomicU64::new(0)));
        let spawn_reader = |l: &Arc<RwLock<u32>>, inside: &Arc<AtomicU64>| {
            let (l, inside) = (Arc::clone(l), Arc::clone(inside));
            thread::spawn(move || {
                let g = l.read().unwrap();
                let n = inside.fetch_add(1, Ordering::SeqCst) + 1;
                thread::yield_now();
                inside.fetch_sub(1, Ordering::SeqCst);
                (n, *g)
            })
        };
        let readers = [spawn_reader(&l, &inside), spawn_reader(&l, &inside)];
        {
            let mut w = l.write().unwrap();
            assert_eq!(
                inside.load(Ordering::SeqCst),
                0,
                "a reader beside the writer"
            );
            *w += 1;
        }
        for r in readers {
            if r.join().unwrap().0 == 2 {
                seen.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
    });
    assert!(!report.is_failure(), "{report}");
    assert!(
        together.load(std::sync::atomic::Ordering::Relaxed),
        "readers never shared"
    );
    // A task that asks to write while it reads would wait for itself: it
    // panics, saying so; a try by the holder fails.
    let report = check_report(exhaustive(), || {
        let l = RwLock::new(0);
        let _r = l.read().unwrap();
        assert!(l.try_read().is_err(), "a second read by the reader");
        let _w = l.write().unwrap();
    });
    assert!(
        report
            .message()
            .contains("tried to acquire a RwLock it already holds"),
        "{report}"
    );
}

/// A bounded channel makes a sender wait for room (the values still come
/// in order in every schedule); a receive with a sender left and nothing
/// sent is a deadlock the report names; a send after the receiver went
/// gives the value back.
#[test]
fn channels_wait_for_room_and_for_values_where_the_search_sees_it() {
    use nssim::sync::mpsc::{channel, sync_channel, TrySendError};
    let exhaustive = || {
        Config::default().strategy(Dfs {
            preemption_bound: 3,
        })
    };
    let report = check_report(exhaustive(), || {
        let (tx, rx) = sync_channel(1);
        let t = thread::spawn(move || {
            for i in 0..3 {
                tx.send(i).unwrap();
            }
        });
        let got: Vec<i32> = rx.iter().collect();
        assert_eq!(got, [0, 1, 2]);
        t.join().unwrap();
    });
    assert!(!report.is_failure(), "{report}");
    let report = check_report(exhaustive(), || {
        let (tx, rx) = sync_channel::<u8>(1);
        tx.try_send(1).unwrap();
        assert!(matches!(tx.try_send(2), Err(TrySendError::Full(2))));
        drop(rx);
        assert_eq!(tx.send(3).unwrap_err().0, 3);
    });
    assert!(!report.is_failure(), "{report}");
    let report = check_report(exhaustive(), || {
        let (_tx, rx) = channel::<u8>();
        let _ = rx.recv();
    });
    assert!(
        matches!(report.outcome, Outcome::Deadlock { .. }),
        "{report}"
    );
}

/// A condition variable: a waiter that re-checks its condition passes in
/// every schedule; one that waits without checking sleeps through a
/// notify made before its wait, a deadlock the search finds; a timed wait
/// ends by the notify in some schedule and by the timeout in another.
#[test]
fn a_condvar_wakes_its_waiters_and_a_lost_wakeup_is_a_deadlock() {
    use nssim::sync::Condvar;
    use std::time::Duration;
    let exhaustive = || {
        Config::default().strategy(Dfs {
            preemption_bound: 3,
        })
    };
    let signalled = |checks: bool| {
        move || {
            let pair = Arc::new((Mutex::new(false), Condvar::new()));
            let p2 = Arc::clone(&pair);
            let t = thread::spawn(move || {
                *p2.0.lock().unwrap() = true;
                p2.1.notify_all();
            });
            let (ready, cv) = &*pair;
            let guard = ready.lock().unwrap();
            let guard = match checks {
                true => cv.wait_while(guard, |r| !*r).unwrap(),
                false => cv.wait(guard).unwrap(),
            };
            assert!(*guard);
            drop(guard);
            t.join().unwrap();
        }
    };
    let report = check_report(exhaustive(), signalled(true));
    assert!(!report.is_failure(), "{report}");
    let report = check_report(exhaustive(), signalled(false));
    assert!(
        matches!(report.outcome, Outcome::Deadlock { .. }),
        "{report}"
    );
    let outcomes = std::sync::Arc::new(std::sync::Mutex::new(std::collections::BTreeSet::new()));
    let seen = std::sync::Arc::clone(&outcomes);
    let report = check_report(exhaustive(), move || {
        let pair = Arc::new((Mutex::new(()), Condvar::new()));
        let p2 = Arc::clone(&pair);
        let t = thread::spawn(move || p2.1.notify_one());
        let (m, cv) = &*pair;
        let (_g, r) = cv
            .wait_timeout(m.lock().unwrap(), Duration::from_millis(1))
            .unwrap();
        seen.lock().unwrap().insert(r.timed_out());
        t.join().unwrap();
    });
    assert!(!report.is_failure(), "{report}");
    assert_eq!(
        *outcomes.lock().unwrap(),
        [false, true].into(),
        "notified in some schedule, timed out in another"
    );
}

/// Primitives made outside an execution (a `static`, or before the check)
/// work in every execution, also with executions on several threads: a
/// condition variable made once is waited on and notified in each.
#[test]
fn a_condvar_made_outside_the_execution_works_in_every_execution() {
    use nssim::sync::Condvar;
    static CV: Condvar = Condvar::new();
    let report = check_report(Config::default().strategy(Random).iterations(200), || {
        let ready = Arc::new(Mutex::new(false));
        let r2 = Arc::clone(&ready);
        let t = thread::spawn(move || {
            *r2.lock().unwrap() = true;
            CV.notify_all();
        });
        drop(CV.wait_while(ready.lock().unwrap(), |r| !*r).unwrap());
        t.join().unwrap();
    });
    assert!(!report.is_failure(), "{report}");
    // And on real threads, outside any execution.
    let ready = std::sync::Arc::new(Mutex::new(false));
    let r2 = std::sync::Arc::clone(&ready);
    let t = thread::spawn(move || {
        *r2.lock().unwrap() = true;
        CV.notify_all();
    });
    drop(CV.wait_while(ready.lock().unwrap(), |r| !*r).unwrap());
    t.join().unwrap();
}

/// A mutex made outside the execution (a `static`, or before the check
/// and shared by every run of the model) is a lock in each execution: once
/// it was `NONE`, or the object of an earlier execution, and every wait on
/// it a false deadlock. Its value is one for every execution, and with
/// executions on several threads each still sees only its own updates.
#[test]
fn a_mutex_made_outside_the_execution_works_in_every_execution() {
    static COUNT: Mutex<u64> = Mutex::new(0);
    let before = Arc::new(Mutex::new(0u64));
    let shared = Arc::clone(&before);
    let model = move || {
        let t = thread::spawn(|| *COUNT.lock().unwrap() += 1);
        *COUNT.lock().unwrap() += 1;
        let s = Arc::clone(&shared);
        let u = thread::spawn(move || *s.lock().unwrap() += 1);
        *shared.lock().unwrap() += 1;
        t.join().unwrap();
        u.join().unwrap();
    };
    let model = std::sync::Arc::new(model);
    let m = std::sync::Arc::clone(&model);
    let report = check_report(
        Config::default().strategy(Random).iterations(300),
        move || m(),
    );
    assert!(!report.is_failure(), "{report}");
    let runs = report.model_runs;
    assert_eq!(*COUNT.lock().unwrap(), 2 * runs, "two increments a run");
    assert_eq!(*before.lock().unwrap(), 2 * runs);
    let (count, other) = (*COUNT.lock().unwrap(), *before.lock().unwrap());
    let report = check_report(
        Config::default().strategy(Random).iterations(300).jobs(4),
        move || model(),
    );
    assert!(!report.is_failure(), "{report}");
    let more = report.model_runs;
    assert_eq!(*COUNT.lock().unwrap(), count + 2 * more, "no update lost");
    assert_eq!(*before.lock().unwrap(), other + 2 * more);
}

/// A guard dropped while its task panics poisons the mutex, as std's
/// does: a panic caught inside the task leaves the execution running, and
/// the next lock sees `Err` with the guard; `clear_poison` forgets it.
#[test]
fn a_panic_while_holding_a_mutex_poisons_it_as_std_does() {
    let poisoning = || {
        let m = Arc::new(Mutex::new(1));
        let m2 = Arc::clone(&m);
        let caught = thread::spawn(move || {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let _g = m2.lock().unwrap();
                panic!("while holding the lock");
            }))
            .is_err()
        });
        assert!(caught.join().unwrap());
        assert!(m.is_poisoned());
        let value = match m.lock() {
            Ok(_) => panic!("a poisoned mutex locked without Err"),
            Err(poisoned) => *poisoned.into_inner(),
        };
        assert_eq!(value, 1);
        assert!(m.try_lock().is_err());
        m.clear_poison();
        assert_eq!(*m.lock().unwrap(), 1);
    };
    let report = check_report(
        Config::default().strategy(Dfs {
            preemption_bound: 2,
        }),
        poisoning,
    );
    assert!(!report.is_failure(), "{report}");
    // The same code on real threads, outside an execution.
    poisoning();
}

/// `Mutex<T>` takes an unsized `T` behind a pointer, as std's does.
#[test]
fn a_mutex_may_hold_an_unsized_value() {
    let report = check_report(Config::default().strategy(Random).iterations(20), || {
        let m: Arc<Mutex<[u32]>> = Arc::new(Mutex::new([1, 2, 3]));
        let m2 = Arc::clone(&m);
        let t = thread::spawn(move || m2.lock().unwrap()[0] = 7);
        m.lock().unwrap()[2] = 9;
        t.join().unwrap();
        assert_eq!(&*m.lock().unwrap(), &[7, 2, 9]);
    });
    assert!(!report.is_failure(), "{report}");
}

/// Async code: awaiting a handle that never finishes is a deadlock, an
/// aborted task gives `Cancelled`, and `yield_now` lets a spinning
/// future's partner run. The same code runs on real threads.
#[test]
fn futures_are_tasks_the_search_interleaves() {
    use nssim::future;
    // (A lost update between two spawned futures is the suite's
    // `async_lost_update`.)
    // Awaiting a future that waits for nothing anyone sends: a deadlock.
    let report = check_report(Config::default().strategy(Random).iterations(10), || {
        let (tx, rx) = nssim::sync::mpsc::channel::<u32>();
        let h = future::spawn(async move {
            // A blocking receive inside a future: its task waits.
            rx.recv().ok()
        });
        let _keep = tx;
        future::block_on(h).unwrap();
    });
    assert!(
        matches!(report.outcome, Outcome::Deadlock { .. }),
        "{report}"
    );
    // A spinning future that yields lets its partner set the flag; an
    // aborted future's handle gives Cancelled.
    let spin = || {
        let flag = Arc::new(AtomicU64::new(0));
        let f = Arc::clone(&flag);
        let setter = future::spawn(async move { f.store(1, Ordering::SeqCst) });
        future::block_on(async {
            while flag.load(Ordering::SeqCst) == 0 {
                future::yield_now().await;
            }
        });
        future::block_on(setter).unwrap();
        let never = future::spawn(std::future::pending::<()>());
        never.abort();
        assert_eq!(future::block_on(never), Err(future::JoinError::Cancelled));
    };
    let report = check_report(Config::default().strategy(Random).iterations(100), spin);
    assert!(!report.is_failure(), "{report}");
    spin();
}

/// An atomic made outside the execution (a `static`, as std's `const fn
/// new` allows) is an object of each execution: exhaustive search sees two
/// tasks' accesses to it conflict and finds the lost update (with no
/// object, every access was independent of every other and the search
/// explored one order).
#[test]
fn a_static_atomic_is_an_object_of_every_execution() {
    use nssim::sync::atomic::AtomicUsize;
    static N: AtomicUsize = AtomicUsize::new(0);
    let report = check_report(
        Config::default().strategy(Dfs {
            preemption_bound: 2,
        }),
        || {
            N.store(0, Ordering::SeqCst);
            let t = thread::spawn(|| {
                let v = N.load(Ordering::SeqCst);
                N.store(v + 1, Ordering::SeqCst);
            });
            let v = N.load(Ordering::SeqCst);
            N.store(v + 1, Ordering::SeqCst);
            t.join().unwrap();
            assert_eq!(N.load(Ordering::SeqCst), 2, "lost update");
        },
    );
    assert!(report.message().contains("lost update"), "{report}");
}

/// Statics of every blocking primitive work in every execution: a reader
/// and a writer of a static `RwLock`, two parties of a static `Barrier`,
/// a static `Once` that runs its function once in each execution (each
/// execution is one run of the program).
#[test]
fn static_rwlocks_barriers_and_onces_work_in_every_execution() {
    use nssim::sync::atomic::AtomicUsize;
    use nssim::sync::{Barrier, Once, RwLock};
    static LOCK: RwLock<u32> = RwLock::new(0);
    static BARRIER: Barrier = Barrier::new(2);
    static ONCE: Once = Once::new();
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let report = check_report(
        Config::default().strategy(Dfs {
            preemption_bound: 2,
        }),
        || {
            RUNS.store(0, Ordering::SeqCst);
            let t = thread::spawn(|| {
                ONCE.call_once(|| {
                    RUNS.fetch_add(1, Ordering::SeqCst);
                });
                *LOCK.write().unwrap() += 1;
                BARRIER.wait();
            });
            ONCE.call_once(|| {
                RUNS.fetch_add(1, Ordering::SeqCst);
            });
            let seen = *LOCK.read().unwrap();
            BARRIER.wait();
            t.join().unwrap();
            assert!(seen as u64 <= 1 + 1000, "one write an execution");
            assert_eq!(RUNS.load(Ordering::SeqCst), 1, "once in this execution");
        },
    );
    assert!(!report.is_failure(), "{report}");
    assert!(report.model_runs > 1);
    assert_eq!(*LOCK.read().unwrap() as u64, report.model_runs);
}

/// `park` waits for an `unpark` (a park nothing ends is a deadlock; a
/// token given before the park is kept), `scope` joins its tasks before
/// it returns (they may borrow from the spawning task), `Builder`
/// takes a stack size, and a `OnceLock` being initialized makes the other
/// task wait, so both see the one value.
#[test]
fn park_scope_and_once_lock_behave_as_std_does() {
    use nssim::sync::OnceLock;
    let exhaustive = || {
        Config::default().strategy(Dfs {
            preemption_bound: 3,
        })
    };
    let report = check_report(exhaustive(), || {
        let main = thread::current();
        let t = thread::Builder::new()
            .stack_size(1 << 20)
            .spawn(move || main.unpark())
            .unwrap();
        // The token may come before or after the park: never lost.
        thread::park();
        t.join().unwrap();
    });
    assert!(!report.is_failure(), "{report}");
    let report = check_report(exhaustive(), thread::park);
    assert!(
        matches!(report.outcome, Outcome::Deadlock { .. }),
        "{report}"
    );
    let report = check_report(exhaustive(), || {
        let mut counts = [0u32; 2];
        let cell = OnceLock::new();
        thread::scope(|s| {
            let (a, b) = counts.split_at_mut(1);
            let cell = &cell;
            s.spawn(move || {
                a[0] += 1;
                *cell.get_or_init(|| 7)
            });
            s.spawn(move || {
                b[0] += 2;
                *cell.get_or_init(|| 8)
            });
        });
        assert_eq!(
            counts,
            [1, 2],
            "both scoped tasks ran before scope returned"
        );
        let v = *cell.get().unwrap();
        assert!(v == 7 || v == 8);
        assert_eq!(cell.set(9), Err(9));
    });
    assert!(!report.is_failure(), "{report}");
}

/// `recv_timeout` waits in virtual time: a value sent meanwhile is
/// received in some schedule, and the wait times out in another.
#[test]
fn recv_timeout_receives_or_times_out_as_the_schedule_gives() {
    use nssim::sync::mpsc;
    use std::time::Duration;
    let outcomes = std::sync::Arc::new(std::sync::Mutex::new(std::collections::BTreeSet::new()));
    let seen = std::sync::Arc::clone(&outcomes);
    let report = check_report(
        Config::default().strategy(Dfs {
            preemption_bound: 2,
        }),
        move || {
            let (tx, rx) = mpsc::channel();
            let t = thread::spawn(move || tx.send(1u32).unwrap());
            let got = rx.recv_timeout(Duration::from_millis(1));
            seen.lock().unwrap().insert(got.is_ok());
            t.join().unwrap();
        },
    );
    assert!(!report.is_failure(), "{report}");
    assert_eq!(*outcomes.lock().unwrap(), [false, true].into());
}

/// loom's store-buffering test with `Relaxed` accesses: on real hardware
/// both loads may see 0, which no sequentially consistent execution shows.
/// nssim explores SC executions only, so the check passes; its report
/// names the accesses whose orderings allow more, and says what that
/// means. A model with `SeqCst` accesses only has nothing noted.
#[test]
fn weaker_orderings_than_seqcst_are_named_in_the_report() {
    let store_buffering = |order: Ordering| {
        move || {
            let (x, y) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
            let (x2, y2) = (Arc::clone(&x), Arc::clone(&y));
            let t = thread::spawn(move || {
                x2.store(1, order);
                y2.load(order)
            });
            y.store(1, order);
            let a = x.load(order);
            let b = t.join().unwrap();
            assert!(a == 1 || b == 1, "(0, 0): a store was buffered");
        }
    };
    let exhaustive = || {
        Config::default().strategy(Dfs {
            preemption_bound: 2,
        })
    };
    let relaxed = check_report(exhaustive(), store_buffering(Ordering::Relaxed));
    assert!(!relaxed.is_failure(), "{relaxed}");
    // Both atomics are made on one line: one site, its stores and loads.
    let notes = &relaxed.weak_orderings;
    let site = notes[0].split(": ").next().unwrap();
    assert!(site.starts_with(file!()), "{notes:?}");
    assert_eq!(
        *notes,
        [
            format!("{site}: atomic_set Relaxed"),
            format!("{site}: load Relaxed")
        ],
    );
    assert!(relaxed.message().contains("weaker than SeqCst"));
    let seqcst = check_report(exhaustive(), store_buffering(Ordering::SeqCst));
    assert!(
        seqcst.weak_orderings.is_empty(),
        "{:?}",
        seqcst.weak_orderings
    );
    assert!(!seqcst.message().contains("weaker than SeqCst"));
}

/// A spin-wait that yields (`thread::yield_now`, or `hint::spin_loop` as
/// std's spin loops are written) ends under exhaustive search: after a
/// yield the next task runs without a preemption and the spinner going on
/// is one, so it spins at most the bound more times (it once spun on to
/// the livelock limit). A spin that never yields cannot be told from
/// work, and still reaches that limit.
#[test]
fn a_spin_wait_that_yields_ends_under_exhaustive_search() {
    use nssim::sync::atomic::AtomicBool;
    let spin = |how: fn()| {
        move || {
            let ready = Arc::new(AtomicBool::new(false));
            let r = Arc::clone(&ready);
            let t = thread::spawn(move || r.store(true, Ordering::SeqCst));
            while !ready.load(Ordering::SeqCst) {
                how();
            }
            t.join().unwrap();
        }
    };
    for bound in [0, 2, 5] {
        let config = || {
            Config::default().strategy(Dfs {
                preemption_bound: bound,
            })
        };
        for how in [thread::yield_now as fn(), nssim::hint::spin_loop] {
            let report = check_report(config(), spin(how));
            assert!(!report.is_failure(), "bound {bound}: {report}");
        }
    }
    // PCT lowers a yielding task below every other, as shuttle's does: a
    // spinner of the highest priority lets the other run (it once spun to
    // the step limit in some iterations).
    for depth in [1, 2, 3] {
        let config = Config::default()
            .strategy(nssim::Pct { depth })
            .iterations(200)
            .max_steps(10_000);
        let report = check_report(config, spin(thread::yield_now));
        assert!(!report.is_failure(), "depth {depth}: {report}");
    }
    let report = check_report(
        Config::default()
            .strategy(Dfs {
                preemption_bound: 2,
            })
            .max_steps(10_000),
        spin(|| {}),
    );
    assert!(matches!(report.outcome, Outcome::Limit { .. }), "{report}");
}

/// `sync_channel(0)` is a rendezvous, as std's: `try_send` fails with
/// `Full` unless a receiver waits, and a send returns once a receiver has
/// taken its value (it once queued one value without any receiver).
#[test]
fn a_rendezvous_channel_hands_values_over() {
    use nssim::sync::mpsc::{self, TrySendError};
    let report = check_report(
        Config::default().strategy(Dfs {
            preemption_bound: 2,
        }),
        || {
            let (tx, rx) = mpsc::sync_channel::<u32>(0);
            assert!(matches!(tx.try_send(1), Err(TrySendError::Full(1))));
            let taken = Arc::new(AtomicU64::new(0));
            let t2 = Arc::clone(&taken);
            let r = thread::spawn(move || {
                let v = rx.recv().unwrap();
                t2.store(1, Ordering::SeqCst);
                v
            });
            tx.send(7).unwrap();
            assert_eq!(r.join().unwrap(), 7);
            assert_eq!(taken.load(Ordering::SeqCst), 1);
        },
    );
    assert!(!report.is_failure(), "{report}");
}

/// A task's `nssim::thread_local!` values are dropped when the task ends,
/// before a `join` of it returns, as a thread's are.
#[test]
fn a_tasks_thread_locals_are_dropped_when_it_ends() {
    use nssim::sync::atomic::AtomicUsize;
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    struct Counted;
    impl Drop for Counted {
        fn drop(&mut self) {
            DROPS.fetch_add(1, Ordering::SeqCst);
        }
    }
    nssim::thread_local! {
        static MINE: Counted = Counted;
    }
    let report = check_report(
        Config::default().strategy(Dfs {
            preemption_bound: 2,
        }),
        || {
            DROPS.store(0, Ordering::SeqCst);
            let ts: Vec<_> = (0..3)
                .map(|_| thread::spawn(|| MINE.with(|_| ())))
                .collect();
            for t in ts {
                t.join().unwrap();
            }
            assert_eq!(
                DROPS.load(Ordering::SeqCst),
                3,
                "each task's value dropped at its end"
            );
        },
    );
    assert!(!report.is_failure(), "{report}");
}

/// `lazy_static!` gives each execution its value, dropped when the
/// execution ends (as loom's and shuttle's do).
#[test]
fn lazy_statics_are_made_and_dropped_per_execution() {
    // std's counters: counting takes no scheduling point.
    use std::sync::atomic::{AtomicUsize, Ordering};
    static MADE: AtomicUsize = AtomicUsize::new(0);
    static DROPPED: AtomicUsize = AtomicUsize::new(0);
    struct Value(u32);
    impl Drop for Value {
        fn drop(&mut self) {
            DROPPED.fetch_add(1, Ordering::SeqCst);
        }
    }
    nssim::lazy_static! {
        static ref V: Value = {
            MADE.fetch_add(1, Ordering::SeqCst);
            Value(5)
        };
    }
    let report = check_report(Config::default().strategy(Random).iterations(20), || {
        let t = thread::spawn(|| V.0);
        assert_eq!(V.0 + t.join().unwrap(), 10);
    });
    assert!(!report.is_failure(), "{report}");
    let made = MADE.load(Ordering::SeqCst) as u64;
    assert_eq!(made, report.model_runs, "one value an execution");
    assert_eq!(
        DROPPED.load(Ordering::SeqCst) as u64,
        made,
        "each dropped at its end"
    );
}

/// loom's `UnsafeCell`: each access a scheduling point, so that a lost
/// update through the cell is found.
#[test]
fn an_unsafe_cells_accesses_are_interleaved() {
    use nssim::cell::UnsafeCell;
    let report = check_report(
        Config::default().strategy(Dfs {
            preemption_bound: 2,
        }),
        || {
            let cell = Arc::new(UnsafeCell::new(0u32));
            let c = Arc::clone(&cell);
            let t = thread::spawn(move || {
                let v = c.with(|p| unsafe { *p });
                c.with_mut(|p| unsafe { *p = v + 1 });
            });
            let v = cell.with(|p| unsafe { *p });
            cell.with_mut(|p| unsafe { *p = v + 1 });
            t.join().unwrap();
            assert_eq!(cell.with(|p| unsafe { *p }), 2, "lost update");
        },
    );
    assert!(report.message().contains("lost update"), "{report}");
}

/// Locking a mutex the task already holds panics and says so (std may
/// deadlock or panic; shuttle says the same).
#[test]
fn locking_a_held_mutex_again_says_so() {
    let report = check_report(Config::default().strategy(Random).iterations(5), || {
        let m = Mutex::new(0);
        let _g = m.lock().unwrap();
        let _again = m.lock().unwrap();
    });
    assert!(
        report
            .message()
            .contains("tried to acquire a Mutex it already holds"),
        "{report}"
    );
}

/// std's smaller items: a task spawned without a name has none (the first
/// is `main`), `LocalKey::try_with`, `Once::call_once_force`, the atomics'
/// `compare_and_swap`.
#[test]
fn std_names_and_small_items_behave_as_std() {
    use nssim::sync::atomic::AtomicUsize;
    use nssim::sync::Once;
    nssim::thread_local! {
        static K: std::cell::Cell<u32> = const { std::cell::Cell::new(3) };
    }
    let model = || {
        assert_eq!(thread::current().name(), Some("main"));
        let unnamed = thread::spawn(|| thread::current().name().map(String::from));
        assert_eq!(unnamed.join().unwrap(), None);
        assert_eq!(K.try_with(|k| k.get()), Ok(3));
        let once = Once::new();
        once.call_once_force(|state| assert!(!state.is_poisoned()));
        assert!(once.is_completed());
        let a = AtomicUsize::new(1);
        #[allow(deprecated)]
        let seen = (
            a.compare_and_swap(1, 2, Ordering::SeqCst),
            a.compare_and_swap(1, 3, Ordering::SeqCst),
        );
        assert_eq!(seen, (1, 2));
    };
    let report = check_report(Config::default().strategy(Random).iterations(5), model);
    assert!(!report.is_failure(), "{report}");
}
