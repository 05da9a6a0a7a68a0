//! The conformance suite (`suite/models.rs`) against std: every model
//! that holds in every schedule, run many times on real threads, as a
//! stress test of the models themselves (the buggy ones are nssim's to
//! find: a deadlock would hang a real run).

#[path = "suite/std_future.rs"]
pub mod std_future;

mod imp {
    pub use super::std_future as future;
    pub use std::sync;
    pub use std::thread;
}

// The buggy models are nssim's to find; against std they are compiled
// only, so that the file is one for both.
#[allow(dead_code)]
#[path = "suite/models.rs"]
mod models;

/// Runs of each model on real threads.
const RUNS: usize = 50;

#[test]
fn every_correct_model_holds_on_real_threads() {
    for (name, model) in models::CORRECT {
        for _ in 0..RUNS {
            // A failing run panics here, naming the model below.
            let r = std::panic::catch_unwind(*model);
            assert!(r.is_ok(), "{name} failed on real threads");
        }
    }
}
