//! Kernel primitives for nssim's models: mutex, spinlock, atomics with
//! explicit orderings, RCU (`rcu_read_lock`, `synchronize_rcu`), work items
//! run by kworkers (`schedule_work`, `flush_work`), waiting on a variable
//! (`wait_var_event`, `wake_up_var`), lockless lists
//! (`llist_add`, `llist_del_all`) and refcounts with
//! `refcount_dec_and_lock`.
//!
//! Model code is written once against this API. What the primitives do
//! depends on where it runs:
//!
//! * **sim** (default): inside an [`sim::Execution`], every operation is a
//!   scheduling point, waits block the task in the scheduler, and costs
//!   advance the virtual clock;
//! * **real threads**: outside an execution, the same types are ordinary
//!   blocking primitives over `parking_lot`, for stress runs;
//! * **loom** (`RUSTFLAGS="--cfg loom"`): the primitives map to `loom`,
//!   which explores every interleaving of a small model.
//!
//! Inside an execution, RCU is state this crate registers with the
//! scheduler, which knows nothing of it: the execution's `rcu` object (a
//! [`sim::Singleton`], woken when a task exits) and each task's reader
//! state (a [`sim::TaskSlot`]).
//!
//! Models kernel/locking, kernel/rcu (the grace-period guarantee only),
//! kernel/workqueue.c (`flush_work` semantics), kernel/sched/wait_bit.c
//! (`wait_var_event`), lib/llist.c, lib/refcount.c.

pub mod costs;

#[cfg(not(loom))]
mod backend_sim;
#[cfg(not(loom))]
pub use backend_sim::*;

#[cfg(loom)]
mod backend_loom;
#[cfg(loom)]
pub use backend_loom::*;

pub use std::sync::atomic::Ordering;
pub use std::sync::Arc;

/// `refcount_inc_not_zero`'s loop, over either backend's atomic (`load`
/// and `compare_exchange` of its count): one more unless it is 0.
fn inc_unless_zero(load: impl Fn() -> i64, cas: impl Fn(i64, i64) -> Result<i64, i64>) -> bool {
    let mut cur = load();
    while cur != 0 {
        match cas(cur, cur + 1) {
            Ok(_) => return true,
            Err(now) => cur = now,
        }
    }
    false
}
