//! The conformance suite (`suite/models.rs`) against nssim: every model
//! that holds in every schedule passes an exhaustive search within two
//! preemptions and a random one, and every buggy model's failure is found
//! by both, with what it says. Beside them, what only an explorer can
//! check: a bug needing several preemptions is found by PCT of that
//! depth, and a failure's token replays it exactly.

mod imp {
    pub use nssim::{future, sync, thread};
}

#[path = "suite/models.rs"]
mod models;

use nssim::{check_report, Config, Dfs, Outcome, Pct, Random};

fn searches() -> [Config; 2] {
    [
        Config::default()
            .strategy(Dfs {
                preemption_bound: 2,
            })
            .iterations(50_000),
        Config::default().strategy(Random).iterations(300),
    ]
}

#[test]
fn every_correct_model_passes_every_search() {
    for (name, model) in models::CORRECT {
        for config in searches() {
            let report = check_report(config, model);
            assert!(!report.is_failure(), "{name}: {report}");
            // The suite uses no std thread-local: nssim's runtime's own are
            // never reported as the model's.
            assert!(report.std_thread_locals.is_empty(), "{name}: {report}");
        }
    }
}

#[test]
fn every_buggy_model_fails_in_every_search_with_its_message() {
    for (name, model, says) in models::BUGGY {
        for config in searches() {
            let report = check_report(config, model);
            assert!(report.is_failure(), "{name}: no failure found\n{report}");
            let text = match report.outcome {
                Outcome::Deadlock { .. } => "deadlock".to_string(),
                _ => report.message(),
            };
            assert!(text.contains(says), "{name}: {text}");
        }
    }
}

/// Three tasks must run in one order, 2 then 1 then 0, against the order
/// they are spawned in: a bug of depth 3 that PCT of depth 3 finds within
/// its bound, as its guarantee says.
#[test]
fn pct_of_depth_three_finds_a_bug_of_depth_three() {
    use imp::sync::atomic::{AtomicU64, Ordering};
    use imp::sync::Arc;
    use imp::thread;
    let model = || {
        let order = Arc::new(AtomicU64::new(0));
        let ts: Vec<_> = (0..3u64)
            .map(|i| {
                let order = Arc::clone(&order);
                thread::spawn(move || {
                    let seen = order.fetch_add(1, Ordering::SeqCst);
                    seen == 2 - i
                })
            })
            .collect();
        let backwards = ts.into_iter().all(|t| t.join().unwrap());
        assert!(!backwards, "ran backwards");
    };
    let report = check_report(
        Config::default()
            .strategy(Pct { depth: 3 })
            .iterations(2000),
        model,
    );
    assert!(report.message().contains("ran backwards"), "{report}");
}

/// A failure's token replays the same execution, bit for bit.
#[test]
fn a_failing_models_token_replays_it() {
    for (name, model, _) in models::BUGGY {
        let report = check_report(Config::default().strategy(Random).iterations(300), model);
        let again = nssim::replay(model, report.token()).expect("a token of this API");
        assert_eq!(again.trace_hash, report.trace_hash, "{name}");
    }
}
