//! Fault injection: the allocations a scenario makes fail (`fail_alloc`),
//! as the kernel's `failslab` with `/proc/thread-self/fail-nth` makes the
//! Nth slab allocation of a task fail, so that the error paths behind an
//! allocation run. The model counts the allocations of one declared site
//! ([`crate::ops::FAULT_SITES`]) rather than every slab allocation, so
//! that a scenario names the one it means however the model's allocation
//! count differs from the kernel's.
//!
//! Models mm/failslab.c (`should_failslab`) and lib/fault-inject.c
//! (`should_fail`, the task's `fail_nth`).

use sim::{HostMutex, TaskId};

/// One armed injection: the `remaining`-th allocation at `site` by the
/// task fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Armed {
    task: TaskId,
    site: &'static str,
    remaining: u64,
}

/// The injections the tasks armed, asked by the allocation sites.
pub struct FaultInjector {
    armed: HostMutex<Vec<Armed>>,
}

impl FaultInjector {
    pub fn new() -> FaultInjector {
        FaultInjector {
            armed: HostMutex::new("the armed fault injections", Vec::new()),
        }
    }

    /// The running task's `nth` allocation at `site` from now on fails
    /// (a later arming of the same site replaces it, as a write to
    /// `fail-nth` does).
    pub fn arm(&self, site: &'static str, nth: u64) {
        let Some(task) = sim::current_task() else {
            return;
        };
        let mut armed = self.armed.lock();
        armed.retain(|a| !(a.task == task && a.site == site));
        if nth > 0 {
            armed.push(Armed {
                task,
                site,
                remaining: nth,
            });
        }
    }
}

impl Default for FaultInjector {
    fn default() -> Self {
        Self::new()
    }
}

impl ucounts::FailAllocation for FaultInjector {
    /// `should_fail`: counts the running task's allocation at `site` down,
    /// and fails the one that reaches zero (once).
    fn fails(&self, site: &'static str) -> bool {
        let Some(task) = sim::current_task() else {
            return false;
        };
        let mut armed = self.armed.lock();
        let Some(i) = armed.iter().position(|a| a.task == task && a.site == site) else {
            return false;
        };
        armed[i].remaining -= 1;
        let fails = armed[i].remaining == 0;
        if fails {
            armed.remove(i);
            sim::note("should_failslab", sim::ObjId::NONE, -12);
        }
        fails
    }
}

impl FaultInjector {
    /// Some allocation is armed to fail (a state a stateful search does
    /// not name yet).
    pub fn armed(&self) -> bool {
        !self.armed.lock().is_empty()
    }
}
