//! The tasks' stacks: mapped within the process's budget, pooled per
//! thread between executions; and what a task runs and how it ends.

use crate::TaskId;
use corosensei::stack::{DefaultStack, Stack};
use std::any::Any;
use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What a task runs.
pub(crate) type TaskFn = Box<dyn FnOnce() + 'static>;

thread_local! {
    /// Stacks of finished tasks, kept for the next ones.
    pub(crate) static STACKS: RefCell<Vec<TaskStack>> = const { RefCell::new(Vec::new()) };
}

/// Most task stacks mapped at once by the whole process, in use or pooled.
/// A stack is two memory mappings (its pages and its guard page), and
/// Linux gives a process 65 530 by default (`vm.max_map_count`): past them
/// not even a thread can start, and the process aborts. Room for one
/// execution of [`limits::TASKS`](crate::limits::TASKS) tasks and more.
pub const STACK_BUDGET: usize = 24_000;

/// Stacks a thread keeps for later executions when an exploration ends.
const POOL_KEEP: usize = 1024;

/// Task stacks mapped by every thread, in use or pooled.
static MAPPED: AtomicUsize = AtomicUsize::new(0);

/// A task's stack, counted in [`MAPPED`] while it exists.
pub(crate) struct TaskStack(DefaultStack);

impl TaskStack {
    /// A new stack of `size` bytes, if the budget and the system allow.
    pub(crate) fn new(size: usize) -> Result<TaskStack, String> {
        if MAPPED.load(Ordering::Relaxed) >= STACK_BUDGET {
            // Stacks of other sizes this thread keeps are of no use now.
            STACKS.with(|p| p.borrow_mut().clear());
        }
        if MAPPED.fetch_add(1, Ordering::Relaxed) >= STACK_BUDGET {
            MAPPED.fetch_sub(1, Ordering::Relaxed);
            return Err(format!(
                "the process has {STACK_BUDGET} task stacks mapped already"
            ));
        }
        DefaultStack::new(size).map(TaskStack).map_err(|e| {
            MAPPED.fetch_sub(1, Ordering::Relaxed);
            e.to_string()
        })
    }
}

impl Drop for TaskStack {
    fn drop(&mut self) {
        MAPPED.fetch_sub(1, Ordering::Relaxed);
    }
}

// SAFETY: forwarded to the `DefaultStack` it owns.
unsafe impl Stack for TaskStack {
    fn base(&self) -> corosensei::stack::StackPointer {
        self.0.base()
    }
    fn limit(&self) -> corosensei::stack::StackPointer {
        self.0.limit()
    }
    #[cfg(windows)]
    fn teb_fields(&self) -> corosensei::stack::StackTebFields {
        self.0.teb_fields()
    }
    #[cfg(windows)]
    fn update_teb_fields(&mut self, stack_limit: usize, guaranteed_stack_bytes: usize) {
        self.0
            .update_teb_fields(stack_limit, guaranteed_stack_bytes)
    }
}

/// Unmap the stacks this thread keeps beyond `keep` (all with 0).
pub(crate) fn trim_stack_pool(keep: usize) {
    let _ = STACKS.try_with(|p| p.borrow_mut().truncate(keep));
}

/// Called when an exploration ends on this thread.
pub(crate) fn exploration_done() {
    trim_stack_pool(POOL_KEEP);
}

pub(crate) fn stack_size_of(s: &TaskStack) -> usize {
    s.base().get() - s.limit().get()
}

/// A task's panic, caught at the root of its stack.
pub(crate) type Payload = Box<dyn Any + Send>;

/// How the thread came back to the run loop.
pub(crate) enum Back {
    /// The task running now handed it back at a scheduling point.
    Yielded,
    /// `task` returned (`panic`: or panicked) and never runs again.
    Finished {
        task: TaskId,
        panic: Option<Payload>,
    },
}
