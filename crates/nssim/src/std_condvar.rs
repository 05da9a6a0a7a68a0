//! `std::sync::Condvar` under nssim: a wait releases the mutex, blocks
//! where the deadlock detector sees it until a notify picks it, and takes
//! the mutex again; `notify_one` wakes the longest waiter, `notify_all`
//! every one. No wakeup is spurious inside an execution, so a model that
//! forgets to re-check its condition is not saved by luck; a timed wait
//! ends either by a notify or when the task's virtual clock has moved on
//! by the timeout, whichever the schedule gives. Outside an execution the
//! same calls wait on real threads.

use crate::lazy_obj::PerExecution;
use crate::mirror::unpoisoned;
use crate::sync::{LockResult, MutexGuard};
use std::collections::{BTreeSet, VecDeque};
use std::sync::Mutex as HostMutex;
use std::time::Duration;

/// `std::sync::Condvar`.
///
/// ```
/// use nssim::sync::{Arc, Condvar, Mutex};
/// use nssim::thread;
///
/// let report = nssim::check_dfs(|| {
///     let pair = Arc::new((Mutex::new(false), Condvar::new()));
///     let p2 = Arc::clone(&pair);
///     thread::spawn(move || {
///         *p2.0.lock().unwrap() = true;
///         p2.1.notify_one();
///     });
///     let (ready, cv) = &*pair;
///     let guard = cv.wait_while(ready.lock().unwrap(), |r| !*r).unwrap();
///     assert!(*guard);
/// }, 2);
/// assert!(!report.is_failure(), "{report}");
/// ```
pub struct Condvar {
    /// Inside an execution: what a waiter blocks on, who waits and who
    /// has been picked, made on first use in each execution.
    sim: PerExecution<Waiters>,
    /// Outside one: a generation a notify moves on.
    real: (HostMutex<u64>, std::sync::Condvar),
}

#[derive(Default)]
struct Waiters {
    next: u64,
    waiting: VecDeque<u64>,
    notified: BTreeSet<u64>,
}

/// Whether a timed wait ended by its timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitTimeoutResult(bool);

impl WaitTimeoutResult {
    pub fn timed_out(&self) -> bool {
        self.0
    }
}

impl Default for Condvar {
    #[track_caller]
    fn default() -> Condvar {
        Condvar::new()
    }
}

impl std::fmt::Debug for Condvar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Condvar").finish_non_exhaustive()
    }
}

impl Condvar {
    /// A condition variable, named by where it is made; one made outside
    /// an execution (a `static`) works inside every execution.
    #[track_caller]
    pub const fn new() -> Condvar {
        Condvar {
            sim: PerExecution::new(std::panic::Location::caller()),
            real: (HostMutex::new(0), std::sync::Condvar::new()),
        }
    }

    /// Release `guard`'s mutex, wait for a notify, take the mutex again.
    pub fn wait<'a, T>(&self, guard: MutexGuard<'a, T>) -> LockResult<MutexGuard<'a, T>> {
        Ok(self.wait_for(guard, None).0)
    }

    /// Wait while `condition` holds of the value (checked first).
    pub fn wait_while<'a, T, F>(
        &self,
        mut guard: MutexGuard<'a, T>,
        mut condition: F,
    ) -> LockResult<MutexGuard<'a, T>>
    where
        F: FnMut(&mut T) -> bool,
    {
        while condition(&mut *guard) {
            guard = self.wait_for(guard, None).0;
        }
        Ok(guard)
    }

    /// [`Condvar::wait`], ending by the timeout if no notify comes first
    /// (in an execution: before the task's virtual clock has moved on by
    /// `dur`).
    pub fn wait_timeout<'a, T>(
        &self,
        guard: MutexGuard<'a, T>,
        dur: Duration,
    ) -> LockResult<(MutexGuard<'a, T>, WaitTimeoutResult)> {
        let (guard, timed_out) = self.wait_for(guard, Some(dur));
        Ok((guard, WaitTimeoutResult(timed_out)))
    }

    /// [`Condvar::wait_while`] with a timeout over the whole wait.
    pub fn wait_timeout_while<'a, T, F>(
        &self,
        mut guard: MutexGuard<'a, T>,
        dur: Duration,
        mut condition: F,
    ) -> LockResult<(MutexGuard<'a, T>, WaitTimeoutResult)>
    where
        F: FnMut(&mut T) -> bool,
    {
        while condition(&mut *guard) {
            let (g, timed_out) = self.wait_for(guard, Some(dur));
            guard = g;
            if timed_out {
                let still = condition(&mut *guard);
                return Ok((guard, WaitTimeoutResult(still)));
            }
        }
        Ok((guard, WaitTimeoutResult(false)))
    }

    /// Wake the task that has waited longest, if any.
    pub fn notify_one(&self) {
        self.notify(false);
    }

    /// Wake every waiting task.
    pub fn notify_all(&self) {
        self.notify(true);
    }

    fn notify(&self, all: bool) {
        if !sim::active() {
            *unpoisoned(&self.real.0) += 1;
            match all {
                true => self.real.1.notify_all(),
                false => self.real.1.notify_one(),
            }
            return;
        }
        let obj = self.sim.obj();
        // The notify is this scheduling point's operation on the condvar.
        sim::point("notify", obj, &sync::costs::MUTEX);
        self.sim.with(|_, w| {
            let picked: Vec<u64> = match all {
                true => w.waiting.drain(..).collect(),
                false => w.waiting.pop_front().into_iter().collect(),
            };
            w.notified.extend(picked);
        });
        sim::wake_all(obj, 0);
    }

    /// The wait: `(guard, timed out)`.
    fn wait_for<'a, T>(
        &self,
        guard: MutexGuard<'a, T>,
        timeout: Option<Duration>,
    ) -> (MutexGuard<'a, T>, bool) {
        if !sim::active() {
            return self.wait_real(guard, timeout);
        }
        // Registered while the mutex is still held, so that a notify made
        // once it is released finds this waiter.
        let (obj, ticket) = self.sim.with(|obj, w| {
            let t = w.next;
            w.next += 1;
            w.waiting.push_back(t);
            (obj, t)
        });
        let picked = || self.sim.with(|_, w| w.notified.remove(&ticket));
        guard.unlocked(|| match timeout {
            None => {
                sim::wait_until("condvar wait", obj, picked);
                false
            }
            Some(dur) => {
                // Others run while the clock moves on; a notify among them
                // ends the wait, none times it out.
                let ns = u64::try_from(dur.as_nanos()).unwrap_or(u64::MAX);
                sim::sleep("condvar wait_timeout", ns);
                if picked() {
                    return false;
                }
                self.sim.with(|_, w| w.waiting.retain(|t| *t != ticket));
                true
            }
        })
    }

    /// On real threads: wait for the generation to move on (or the
    /// timeout), the mutex released meanwhile.
    fn wait_real<'a, T>(
        &self,
        guard: MutexGuard<'a, T>,
        timeout: Option<Duration>,
    ) -> (MutexGuard<'a, T>, bool) {
        let seen = *unpoisoned(&self.real.0);
        guard.unlocked(|| {
            let gen = unpoisoned(&self.real.0);
            let moved = |g: &mut u64| *g == seen;
            match timeout {
                None => {
                    drop(self.real.1.wait_while(gen, moved));
                    false
                }
                Some(dur) => {
                    let (gen, r) = self
                        .real
                        .1
                        .wait_timeout_while(gen, dur, moved)
                        .unwrap_or_else(|e| e.into_inner());
                    drop(gen);
                    r.timed_out()
                }
            }
        })
    }
}
