//! What the runtime keeps of each task and object of one execution, and
//! the cell that holds an execution's state.

use crate::fiber::{self, Handle};
use crate::obj::{ObjId, ObjState};
use crate::TaskId;
#[cfg(debug_assertions)]
use std::cell::Cell;

/// Task slots a process may declare: every task carries this many words.
pub const MAX_TASK_SLOTS: usize = 4;

/// Singletons a process may declare: every execution has room for them.
pub const MAX_SINGLETONS: usize = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RunState {
    Runnable,
    Blocked { on: ObjId, idle: bool },
    Finished,
}

pub(crate) struct PendingOp {
    pub label: &'static str,
    pub obj: ObjId,
    pub cost: u64,
    /// A task's `start`: the step touches nothing shared by itself (its
    /// footprint is what it is seen to touch), though it names no object.
    pub local: bool,
    /// The operation only reads its object (an atomic load): it commutes
    /// with other reads of it.
    pub reads: bool,
    /// The task waits here between two of its operations (see
    /// [`crate::entering_op`]), or has not started, or is a daemon idle:
    /// nothing of its state is on its stack but what the model names.
    pub between_ops: bool,
}

/// What a scheduling point reads of a task, kept small: the records of
/// the tasks alive at once are read in random order (the random strategy)
/// and should stay in the processor's caches. Names are kept apart.
pub(crate) struct TaskState {
    pub daemon: bool,
    pub run: RunState,
    pub clock: u64,
    pub pending: PendingOp,
    /// Where the task resumes when it is switched to (see `fiber`).
    pub fiber: Handle,
    /// Lowest stack address the task may reach before it is stopped;
    /// [`DECIDE_ROOM`](crate::sched::DECIDE_ROOM) above it, the task
    /// switches out at a scheduling point rather than pick its successor
    /// on its own stack.
    pub stack_limit: usize,
    /// The task's next scheduling point begins an operation
    /// ([`crate::entering_op`]).
    pub entering: bool,
    /// The task waits in [`crate::idle_wait`]: at tear-down the wait
    /// returns and the task returns from its function, instead of being
    /// unwound.
    pub returns_at_teardown: bool,
}

pub(crate) struct ObjInfo {
    pub kind: &'static str,
    pub serial: u32,
    pub state: ObjState,
    pub owner: Option<TaskId>,
    /// Named by its kind alone: the one object of a [`Singleton`](crate::Singleton).
    pub singleton: bool,
}

/// The state of the running execution: a `RefCell` whose release builds
/// skip the borrow flag. Every borrow is made and dropped within one
/// scheduler or task-side function that calls no model code, so two never
/// overlap; debug builds (every test) keep the flag and stop at once if
/// they ever did. The hot path takes a dozen borrows an operation.
pub(crate) struct StateCell<T> {
    value: std::cell::UnsafeCell<T>,
    #[cfg(debug_assertions)]
    borrowed: Cell<bool>,
}

/// A borrow of a [`StateCell`].
pub(crate) struct StateMut<'a, T> {
    cell: &'a StateCell<T>,
}

impl<T> StateCell<T> {
    pub(crate) fn new(value: T) -> Self {
        StateCell {
            value: std::cell::UnsafeCell::new(value),
            #[cfg(debug_assertions)]
            borrowed: Cell::new(false),
        }
    }

    #[inline(always)]
    pub(crate) fn borrow_mut(&self) -> StateMut<'_, T> {
        #[cfg(debug_assertions)]
        assert!(
            !self.borrowed.replace(true),
            "the execution's state borrowed twice"
        );
        StateMut { cell: self }
    }

    #[inline(always)]
    pub(crate) fn borrow(&self) -> StateMut<'_, T> {
        self.borrow_mut()
    }
}

impl<T> std::ops::Deref for StateMut<'_, T> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        // SAFETY: see `StateCell`: this is the only borrow alive.
        unsafe { &*self.cell.value.get() }
    }
}

impl<T> std::ops::DerefMut for StateMut<'_, T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: see `StateCell`: this is the only borrow alive.
        unsafe { &mut *self.cell.value.get() }
    }
}

#[cfg(debug_assertions)]
impl<T> Drop for StateMut<'_, T> {
    fn drop(&mut self) {
        self.cell.borrowed.set(false);
    }
}

pub(crate) fn new_task(daemon: bool, clock: u64) -> TaskState {
    TaskState {
        daemon,
        run: RunState::Runnable,
        clock,
        pending: PendingOp {
            label: "start",
            obj: ObjId::NONE,
            cost: 0,
            local: true,
            reads: false,
            between_ops: true,
        },
        fiber: fiber::NO_HANDLE,
        stack_limit: 0,
        entering: false,
        returns_at_teardown: false,
    }
}
