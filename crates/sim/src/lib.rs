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
//!
//! The files are layered, each importing only files below it
//! (`tests/layers.rs` holds the order): the leaves (object and task
//! numbers, limits, tokens, footprints, traces, the state cache's set);
//! the task runtime (`fiber`: stacks and switches; `task`: what each task
//! and object is); the strategies, each one file behind the trait of
//! `strategy/pick.rs`; one execution (`sched`: its state, the pick, the
//! checks between steps; `rt`: the task-side API; `exec`: the execution
//! and its run loop); and the searches (`seeded`: random, PCT and fair;
//! `dfs`: without reduction, with the state cache; `dpor`: with it;
//! `shrink`; `explore`, which chooses among them). The scheduler calls
//! the strategies through one enum over them (`strategy/mod.rs`), so that
//! the common step is a direct call: they sit below the execution, as
//! shuttle's schedulers sit below its runtime, and import nothing of it.

mod cost;
mod dfs;
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
mod obj;
mod outcome;
mod rt;
mod runq;
mod sched;
mod search;
mod seeded;
mod shrink;
mod statecache;
mod strategy;
mod task;
pub mod token;
mod trace;

pub use cost::{CostKey, CostTable};
pub use dpor::{merge_dfs_shards, Merged, Reported};
pub use exec::{ExecReport, Execution};
pub use explore::explore;
pub use footprint::Footprint;
pub use host::{HostGuard, HostMutex};
pub use keys::{Singleton, TaskSlot, MAX_SINGLETONS, MAX_TASK_SLOTS};
pub use obj::{ObjId, ObjState, TaskId};
pub use outcome::{Outcome, WaitLink};
pub use rt::{
    access, active, block, cost, current_task, entering_op, every_task_between_ops,
    execution_serial, fail, free_object, idle_wait, lock_holder, lock_point, lock_try_acquire,
    new_object, next_task_id, note, now, object_name, object_state, park_object, point, read_point,
    recording, set_owner, sleep, spawn, task_name, tearing_down, title_next_step, title_object,
    touch, unlock_point, wait_until, wake_all, yield_point,
};
pub use sched::{ExecConfig, StepRec};
pub use search::{
    shard_of, DfsShard, ExploreConfig, ExploreReport, Progress, ShrinkReport, Split, StrategySpec,
    SubtreeCount, SubtreeEnd,
};
pub use seeded::{pct_hint, pct_probe};
pub use shrink::{segments_of, shrink_failure, shrink_failure_until, SHRINK_BUDGET};
pub use statecache::StateHasher;
pub use strategy::ChoicePoint;
pub use token::{ContentHash, Schedule, Segment, Token, TokenError};
pub use trace::{Event, EventKind};

pub mod mem;

/// The scheduler's own cost-table entries.
pub mod costs {
    pub use crate::cost::STEP;
}
