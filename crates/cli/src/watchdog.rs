//! The wall-clock watchdog behind `--timeout`: a thread of its own that
//! ends the process when something under a deadline has not returned by
//! it.
//!
//! A run stops itself at its deadline: the search checks the clock between
//! steps. A step that never returns (a model defect that waits on the host,
//! a loop inside one operation) would keep it from ever looking, so the
//! deadline is also enforced from outside the run's thread: [`GRACE`] past
//! it, the watchdog prints what each overdue run armed it with (its record,
//! outcome `limit` (wall-time)) and exits with status 1. Nothing nssim does
//! outlives its `--timeout` by more than a second.

use std::io::Write;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long past its deadline an armed run may go on before the process
/// is ended.
pub const GRACE: Duration = Duration::from_millis(500);

/// What to print for a run that is overdue.
type Report = Box<dyn FnOnce() + Send>;

struct Armed {
    id: u64,
    deadline: Instant,
    report: Report,
}

#[derive(Default)]
struct Dog {
    armed: Mutex<(u64, Vec<Armed>)>,
    changed: Condvar,
}

fn dog() -> &'static Dog {
    static DOG: OnceLock<&'static Dog> = OnceLock::new();
    DOG.get_or_init(|| {
        let dog: &'static Dog = Box::leak(Box::default());
        std::thread::Builder::new()
            .name("nssim-watchdog".into())
            .spawn(move || watch(dog))
            .expect("a thread for the watchdog");
        dog
    })
}

/// Disarms its run when dropped: the run returned.
pub struct Watched(u64);

impl Drop for Watched {
    fn drop(&mut self) {
        let dog = dog();
        let mut armed = dog.armed.lock().unwrap_or_else(|e| e.into_inner());
        armed.1.retain(|a| a.id != self.0);
        dog.changed.notify_all();
    }
}

/// Watch a run that must have returned by `deadline`; `report` prints
/// its record should it not have, [`GRACE`] later.
pub fn arm(deadline: Instant, report: impl FnOnce() + Send + 'static) -> Watched {
    let dog = dog();
    let mut armed = dog.armed.lock().unwrap_or_else(|e| e.into_inner());
    armed.0 += 1;
    let id = armed.0;
    armed.1.push(Armed {
        id,
        deadline,
        report: Box::new(report),
    });
    dog.changed.notify_all();
    Watched(id)
}

fn watch(dog: &'static Dog) {
    let mut armed = dog.armed.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let Some(first) = armed.1.iter().map(|a| a.deadline + GRACE).min() else {
            armed = dog.changed.wait(armed).unwrap_or_else(|e| e.into_inner());
            continue;
        };
        let now = Instant::now();
        if now < first {
            armed = dog
                .changed
                .wait_timeout(armed, first - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
            continue;
        }
        let (overdue, _): (Vec<Armed>, Vec<Armed>) = std::mem::take(&mut armed.1)
            .into_iter()
            .partition(|a| a.deadline + GRACE <= now);
        drop(armed);
        for a in overdue {
            (a.report)();
        }
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        std::process::exit(1);
    }
}
