//! The library API from a Rust test.

use nssim::sync::{Arc, Mutex};
use nssim::{check, check_report, replay, thread, Config, Dfs, Outcome, Random, ReplayError};

fn locked_counter() {
    let counter = Arc::new(Mutex::new("counter", 0));
    let handles: Vec<_> = (0..3)
        .map(|i| {
            let c = Arc::clone(&counter);
            thread::spawn(&format!("t{i}"), move || *c.lock() += 1)
        })
        .collect();
    for h in handles {
        h.join();
    }
    assert_eq!(*counter.lock(), 3);
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
}

fn abba() {
    let a = Arc::new(Mutex::new("A", ()));
    let b = Arc::new(Mutex::new("B", ()));
    let (a2, b2) = (Arc::clone(&a), Arc::clone(&b));
    let t = thread::spawn("other", move || {
        let _b = b2.lock();
        let _a = a2.lock();
    });
    {
        let _a = a.lock();
        let _b = b.lock();
    }
    t.join();
}

#[test]
fn a_deadlock_is_reported_with_a_token_that_replays_it() {
    let r = check_report(Config::default().iterations(500), abba);
    assert!(
        matches!(r.outcome, Outcome::Deadlock { .. }),
        "{}",
        r.outcome
    );
    let again = replay(&r.token, abba).unwrap();
    assert_eq!(again.outcome, r.outcome);
    assert_eq!(again.trace_hash, r.trace_hash);
    assert!(r.trace.contains("mutex_lock"));
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
        let e = replay(bad, abba).unwrap_err();
        assert!(matches!(e, ReplayError::Token { .. }), "{bad:?}: {e}");
        assert!(!e.to_string().contains('\u{1b}'), "{e}");
    }
    // A token of a scenario file's run (its context names a kernel run).
    let file_token = "nss1_Aoic0twJAQR2Ni4yAoCt4gSAwOKF42gEAgZsb29wZXIFc3RhcnQBAAE76VoR8w";
    assert!(sim::Token::decode(file_token).is_ok());
    assert_eq!(
        replay(file_token, abba).unwrap_err(),
        ReplayError::NotFromTheApi
    );
}
