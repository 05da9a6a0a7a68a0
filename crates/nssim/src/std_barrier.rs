//! `std::sync::Barrier` and `std::sync::Once` under nssim: each wait is a
//! scheduling point and a wait the deadlock detector sees, so that a task
//! left waiting forever is reported rather than hanging the run. Outside
//! an execution, std's own.

use crate::lazy_obj::PerExecution;

/// `std::sync::Barrier`: `n` tasks wait until all `n` have arrived.
///
/// ```
/// use nssim::sync::{Arc, Barrier};
/// use nssim::thread;
///
/// let report = nssim::check_dfs(|| {
///     let b = Arc::new(Barrier::new(2));
///     let b2 = Arc::clone(&b);
///     let t = thread::spawn(move || b2.wait().is_leader());
///     let me = b.wait().is_leader();
///     assert!(me ^ t.join().unwrap(), "exactly one leader");
/// }, 2);
/// assert!(!report.is_failure(), "{report}");
/// ```
pub struct Barrier {
    n: usize,
    /// Inside an execution: how many wait now, and how many times the
    /// barrier has opened, made on first use in each execution.
    sim: PerExecution<(usize, u64)>,
    real: std::sync::Barrier,
}

/// What [`Barrier::wait`] returns: whether this task was the leader (the
/// one whose arrival opened the barrier).
#[derive(Debug)]
pub struct BarrierWaitResult(bool);

impl BarrierWaitResult {
    pub fn is_leader(&self) -> bool {
        self.0
    }
}

impl Barrier {
    #[track_caller]
    pub const fn new(n: usize) -> Barrier {
        Barrier {
            n,
            sim: PerExecution::new(std::panic::Location::caller()),
            real: std::sync::Barrier::new(n),
        }
    }

    /// Wait until `n` tasks (this one included) have called `wait`.
    pub fn wait(&self) -> BarrierWaitResult {
        if !sim::active() {
            return BarrierWaitResult(self.real.wait().is_leader());
        }
        // The arrival is the operation of this scheduling point on the
        // barrier, so that the search sees two arrivals conflict.
        let obj = self.sim.obj();
        sim::point("barrier_wait", obj, &::sync::costs::MUTEX);
        let generation = self.sim.with(|_, s| {
            s.0 += 1;
            if s.0 >= self.n {
                *s = (0, s.1 + 1);
                None
            } else {
                Some(s.1)
            }
        });
        match generation {
            None => {
                sim::wake_all(obj, 0);
                BarrierWaitResult(true)
            }
            Some(generation) => {
                while self.sim.with(|_, s| s.1) == generation {
                    sim::block("barrier_wait", obj, false);
                }
                BarrierWaitResult(false)
            }
        }
    }
}

impl std::fmt::Debug for Barrier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Barrier").finish_non_exhaustive()
    }
}

/// What [`Once::call_once_force`] tells its function.
#[derive(Debug)]
pub struct OnceState {
    poisoned: bool,
}

impl OnceState {
    /// Whether an earlier call panicked.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned
    }
}

/// Where a [`Once`] stands inside an execution.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
enum Progress {
    #[default]
    New,
    Running,
    Done,
}

/// `std::sync::Once`: the first `call_once` runs its function; the others
/// wait until it has returned, then return at once. Inside executions a
/// `static` one runs its function once in each execution (each is one run
/// of the program), and std's once per process outside.
///
/// ```
/// use nssim::sync::{Arc, Once};
/// use nssim::sync::atomic::{AtomicU32, Ordering};
/// use nssim::thread;
///
/// let report = nssim::check_dfs(|| {
///     let (once, runs) = (Arc::new(Once::new()), Arc::new(AtomicU32::new(0)));
///     let (o, r) = (Arc::clone(&once), Arc::clone(&runs));
///     let t = thread::spawn(move || o.call_once(|| { r.fetch_add(1, Ordering::SeqCst); }));
///     once.call_once(|| { runs.fetch_add(1, Ordering::SeqCst); });
///     assert!(once.is_completed());
///     t.join().unwrap();
///     assert_eq!(runs.load(Ordering::SeqCst), 1);
/// }, 2);
/// assert!(!report.is_failure(), "{report}");
/// ```
pub struct Once {
    sim: PerExecution<Progress>,
    real: std::sync::Once,
}

impl Once {
    /// `const`, so that it may be a `static`.
    #[track_caller]
    pub const fn new() -> Once {
        Once {
            sim: PerExecution::new(std::panic::Location::caller()),
            real: std::sync::Once::new(),
        }
    }

    fn state(&self) -> Progress {
        self.sim.with(|_, s| *s)
    }

    fn set_state(&self, state: Progress) {
        self.sim.with(|_, s| *s = state);
    }

    pub fn call_once<F: FnOnce()>(&self, f: F) {
        if !sim::active() {
            return self.real.call_once(f);
        }
        let obj = self.sim.obj();
        sim::point("once", obj, &::sync::costs::MUTEX);
        let first = self.state() == Progress::New;
        if first {
            self.set_state(Progress::Running);
            f();
            self.set_state(Progress::Done);
            sim::wake_all(obj, 0);
        } else {
            while self.state() != Progress::Done {
                sim::block("once_wait", obj, false);
            }
        }
    }

    /// As [`Once::call_once`], with the state (never poisoned here: a
    /// panic in the function ends the execution).
    pub fn call_once_force<F: FnOnce(&OnceState)>(&self, f: F) {
        self.call_once(|| f(&OnceState { poisoned: false }));
    }

    pub fn is_completed(&self) -> bool {
        match sim::active() {
            true => self.state() == Progress::Done,
            false => self.real.is_completed(),
        }
    }
}

impl Default for Once {
    #[track_caller]
    fn default() -> Self {
        Once::new()
    }
}

impl std::fmt::Debug for Once {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Once").finish_non_exhaustive()
    }
}
