//! Everywhere else: every task a corosensei coroutine, switching through
//! the run loop.

use super::stack::{Back, Payload, TaskFn, TaskStack};
use crate::TaskId;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use std::panic::{self, AssertUnwindSafe};

/// Tasks switch through the run loop.
pub(crate) const SYMMETRIC: bool = false;

/// A task's way back to the run loop.
pub(crate) type Handle = *const Yielder<(), ()>;

/// The handle of a task not started.
pub(crate) const NO_HANDLE: Handle = std::ptr::null();

type Co = Coroutine<(), (), Option<Payload>, TaskStack>;

/// Nothing to exchange: the coroutines carry it.
#[derive(Default)]
pub(crate) struct Channel(());

impl Channel {
    /// Never called: a pick hands over through the run loop.
    pub(crate) unsafe fn switch(&self, _save: *mut Handle, _to: Handle) {
        unreachable!("tasks switch through the run loop here");
    }

    /// Hand the thread back to the run loop from the running task.
    ///
    /// # Safety
    /// `save` is the running task's handle.
    #[inline(always)]
    pub(crate) unsafe fn suspend(&self, save: *mut Handle) {
        // SAFETY: the yielder lives on the task's stack while it runs.
        unsafe { (**save).suspend(()) }
    }
}

/// The coroutines of one execution's tasks, by task id.
#[derive(Default)]
pub(crate) struct Fibers {
    cos: Vec<Option<Co>>,
}

impl Fibers {
    pub(crate) fn start(
        &mut self,
        task: TaskId,
        stack: TaskStack,
        f: TaskFn,
        _channel: &Channel,
        set_handle: impl FnOnce(Handle) + 'static,
    ) -> Handle {
        let co = Coroutine::with_stack(stack, move |y: &Yielder<(), ()>, ()| {
            set_handle(y as *const _);
            panic::catch_unwind(AssertUnwindSafe(f)).err()
        });
        if self.cos.len() <= task {
            self.cos.resize_with(task + 1, || None);
        }
        self.cos[task] = Some(co);
        std::ptr::null()
    }

    pub(crate) fn resume(&mut self, _channel: &Channel, t: TaskId, _handle: Handle) -> Back {
        let co = self.cos[t].as_mut().expect("runnable task has a coroutine");
        match co.resume(()) {
            CoroutineResult::Yield(()) => Back::Yielded,
            CoroutineResult::Return(panic) => Back::Finished { task: t, panic },
        }
    }

    pub(crate) fn take_stack(&mut self, t: TaskId) -> Option<TaskStack> {
        let co = self.cos.get_mut(t)?.take()?;
        Some(co.into_stack())
    }

    /// Unwind every task not finished, but resume those that `returns`
    /// says return from their wait at tear-down; their stacks.
    pub(crate) fn unwind_all(
        &mut self,
        _channel: &Channel,
        _handle: impl Fn(TaskId) -> Handle,
        returns: impl Fn(TaskId) -> bool,
    ) -> Vec<TaskStack> {
        let mut stacks = Vec::new();
        // Newest first, as the symmetric fibers do.
        for (t, co) in self.cos.iter_mut().enumerate().rev() {
            if let Some(mut c) = co.take() {
                if returns(t) && c.started() && !c.done() {
                    let _ = c.resume(());
                }
                let _ = panic::catch_unwind(AssertUnwindSafe(|| c.force_unwind()));
                if c.done() {
                    stacks.push(c.into_stack());
                }
            }
        }
        stacks
    }
}
