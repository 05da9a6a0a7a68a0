//! The deterministic scheduler of nssim.
//!
//! Tasks are stackful coroutines that all run on the one OS thread that
//! calls [`Execution::run`], each on a stack of its own; a task that picks
//! another switches to it directly on x86_64 (`fiber/symmetric.rs`), and
//! through the run loop, with [`corosensei`], elsewhere. Model code calls
//! [`point`] (and the blocking helpers) at every primitive operation; there
//! the task suspends and the [strategy](token::Schedule) picks the next
//! task among the runnable ones. Because nothing else decides the order, an
//! execution is a pure function of its set-up and its schedule.
//!
//! Each task has a virtual clock. An operation costs virtual time from the
//! [cost table](CostTable) and runs on one of a configurable number of
//! virtual CPUs; waits (a grace period, a sleep) advance the clock without
//! holding a CPU. The `fair` schedule runs the task with the earliest clock,
//! which makes timing experiments a discrete-event simulation.
//!
//! The crate knows nothing of the kernel: objects are named by kind and
//! serial number, invariants are closures supplied by the model, and what
//! a primitive means is the business of the crate that registers it:
//!
//! * a [`TaskSlot`] (a `static`) names a word of state every task carries,
//!   zero when it starts and cleared when it exits: the current task
//!   updates its own in one borrow, and anyone may read or scan every
//!   task's (a reader-side section's nesting depth and count, say);
//! * a [`Singleton`] (a `static`) is an object of which each execution has
//!   one, made on first use and named by its kind: the wait queue of a
//!   condition over every task's slot, woken when a task exits if so
//!   declared;
//! * an object's lifetime is live, then optionally parked in a state the
//!   model names ([`park_object`]: released but waiting to be freed), then
//!   freed; touching a freed object ends the run;
//! * a schedule [`Token`] carries the caller's context (which run of its
//!   set-up the schedule belongs to) as opaque strings.

mod cost;
mod dpor;
pub mod echo;
mod exec;
mod explore;
mod fiber;
mod footprint;
mod host;
pub mod input;
mod keys;
pub mod limits;
mod outcome;
mod rt;
mod runq;
mod statecache;
mod strategy;
pub mod token;
mod trace;

pub use cost::{CostKey, CostTable};
pub use dpor::{merge_dfs_shards, DfsShard, Merged, Reported, Split, SubtreeCount, SubtreeEnd};
pub use exec::{ExecConfig, ExecReport, Execution, StepRec};
pub use explore::{
    explore, segments_of, shard_of, shrink_failure, shrink_failure_until, ExploreConfig,
    ExploreReport, Progress, ShrinkReport, StrategySpec, SHRINK_BUDGET,
};
pub use footprint::Footprint;
pub use host::{HostGuard, HostMutex};
pub use keys::{Singleton, TaskSlot, MAX_SINGLETONS, MAX_TASK_SLOTS};
pub use outcome::{Outcome, WaitLink};
pub use rt::{
    access, active, block, cost, current_task, execution_serial, fail, free_object, lock_holder,
    lock_point, lock_try_acquire, new_object, next_task_id, note, now, object_name, object_state,
    park_object, point, read_point, set_owner, sleep, spawn, task_name, tearing_down, touch,
    unlock_point, wait_until, wake_all, yield_point, ObjId, ObjState,
};
pub use statecache::StateHasher;
pub use strategy::{pct_hint, pct_probe, ChoicePoint};
pub use token::{ContentHash, Schedule, Segment, Token, TokenError};
pub use trace::{Event, EventKind};

/// Index of a task in its execution, in spawn order.
pub type TaskId = usize;

/// The scheduler's own cost-table entries.
pub mod mem;

pub mod costs {
    use crate::CostKey;
    /// A scheduling point whose caller names no cost.
    pub static STEP: CostKey =
        CostKey::new("step", 10, "any scheduling point not listed elsewhere");
}
