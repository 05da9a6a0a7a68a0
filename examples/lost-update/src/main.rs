//! Two threads increment a counter with a load and a store, written as
//! for std; nssim finds the schedule that loses an update.

use nssim::sync::atomic::{AtomicU64, Ordering};
use nssim::sync::Arc;
use nssim::thread;

fn two_increments() {
    let counter = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let c = Arc::clone(&counter);
            thread::spawn(move || {
                let v = c.load(Ordering::SeqCst);
                c.store(v + 1, Ordering::SeqCst);
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(counter.load(Ordering::SeqCst), 2, "lost update");
}

fn main() {
    let report = nssim::check_random(two_increments, 1000);
    if !report.is_failure() {
        eprintln!("no lost update in {} executions", report.executions);
        std::process::exit(1);
    }
    println!("{}", report.outcome);
    println!("token: {}", report.token());
    let again = nssim::replay(two_increments, report.token()).expect("a token of this API");
    assert_eq!(again.trace_hash, report.trace_hash, "the token replays it");
}
