//! The direct switch from one task's stack to another's: 64-bit x86_64,
//! System V (unless `nssim_coroutines`).

use super::stack::{Back, Payload, TaskFn, TaskStack};
use crate::TaskId;
use corosensei::stack::Stack;
use std::arch::naked_asm;
use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};

/// Tasks switch to one another directly.
pub(crate) const SYMMETRIC: bool = true;

/// A suspended task: its saved stack pointer (its registers and the
/// address it resumes at are on its stack, below it).
pub(crate) type Handle = usize;

/// The handle of a task not started.
pub(crate) const NO_HANDLE: Handle = 0;

/// Save the callee-saved registers on the stack running now, store its
/// stack pointer in `*save`, and resume the context suspended at `to`.
/// Returns when a switch resumes the saved one.
///
/// # Safety
/// `to` is the stack pointer a switch saved (or [`Fibers::start`]
/// prepared) of a context not resumed since; `save` is writable.
#[unsafe(naked)]
unsafe extern "C" fn switch_stacks(save: *mut Handle, to: Handle) {
    naked_asm!(
        // The return address is on the stack already (the call's).
        "push rbp",
        "push rbx",
        "push r12",
        "push r13",
        "push r14",
        "push r15",
        "mov [rdi], rsp",
        "mov rsp, rsi",
        "pop r15",
        "pop r14",
        "pop r13",
        "pop r12",
        "pop rbx",
        "pop rbp",
        "ret",
    )
}

/// Where a new task's first switch returns to: calls [`task_root`]
/// with the `Start` left in r12. It has no caller: unwinding and
/// backtraces stop here.
#[unsafe(naked)]
unsafe extern "C" fn entry_trampoline() -> ! {
    naked_asm!(
        ".cfi_startproc",
        ".cfi_undefined rip",
        "mov rdi, r12",
        "call {root}",
        "ud2",
        ".cfi_endproc",
        root = sym task_root,
    )
}

/// What a new task needs at its first switch.
struct Start {
    f: TaskFn,
    task: TaskId,
    channel: *const Channel,
}

/// The bottom frame of a task's stack: run it, catch its panic, and
/// hand the thread back to the run loop for good.
extern "C" fn task_root(start: *mut Start) -> ! {
    // SAFETY: `Fibers::start` leaked the box for this first switch.
    let Start { f, task, channel } = *unsafe { Box::from_raw(start) };
    // SAFETY: the channel is the execution's, which outlives its tasks.
    let channel = unsafe { &*channel };
    let panic = if channel.unwinding.get() {
        // Torn down before it ran.
        drop(f);
        None
    } else {
        panic::catch_unwind(AssertUnwindSafe(f)).err()
    };
    channel.ended.set(Some((task, panic)));
    let mut gone: Handle = 0;
    // SAFETY: the run loop is suspended at `main`; this stack is never
    // resumed again.
    unsafe { switch_stacks(&mut gone, channel.main.get()) };
    unreachable!("a finished task was resumed");
}

/// Tear-down's request to a resumed task: unwind its stack.
struct Unwind;

/// What tasks and the run loop of one execution exchange.
#[derive(Default)]
pub(crate) struct Channel {
    /// The run loop's stack pointer while a task runs.
    main: Cell<Handle>,
    /// The task that just finished, and its panic.
    ended: Cell<Option<(TaskId, Option<Payload>)>>,
    /// Set during tear-down: a resumed task unwinds.
    unwinding: Cell<bool>,
    /// Set during tear-down for a task that returns from its wait
    /// instead ([`crate::idle_wait`]).
    returns: Cell<bool>,
}

impl Channel {
    /// Switch from the running task (its handle at `save`) to the
    /// suspended task `to`.
    ///
    /// # Safety
    /// `save` is the running task's handle; `to` a suspended task's.
    #[inline(always)]
    pub(crate) unsafe fn switch(&self, save: *mut Handle, to: Handle) {
        unsafe { switch_stacks(save, to) };
        self.resumed();
    }

    /// Hand the thread back to the run loop from the running task.
    ///
    /// # Safety
    /// `save` is the running task's handle.
    #[inline(always)]
    pub(crate) unsafe fn suspend(&self, save: *mut Handle) {
        unsafe { switch_stacks(save, self.main.get()) };
        self.resumed();
    }

    /// A task goes on after a switch: tear-down has it unwind (or return
    /// from its idle wait).
    #[inline(always)]
    fn resumed(&self) {
        if self.unwinding.get() && !self.returns.get() {
            panic::resume_unwind(Box::new(Unwind));
        }
    }
}

/// The stacks of one execution's tasks, by task id (the execution
/// unwinds the tasks not finished before it drops them).
#[derive(Default)]
pub(crate) struct Fibers {
    stacks: Vec<Option<TaskStack>>,
}

impl Fibers {
    /// Prepare `stack` so that the first switch to it runs `f` as
    /// task `task`; the task's handle.
    pub(crate) fn start(
        &mut self,
        task: TaskId,
        stack: TaskStack,
        f: TaskFn,
        channel: &Channel,
        _set_handle: impl FnOnce(Handle) + 'static,
    ) -> Handle {
        let start = Box::into_raw(Box::new(Start { f, task, channel }));
        // The frame a switch pops: r15, r14, r13, r12 (the start),
        // rbx, rbp, then the address it returns to. The base is
        // 16-byte aligned, and so the stack is when the trampoline
        // calls the root.
        let frame = [
            0,
            0,
            0,
            start as usize,
            0,
            0,
            entry_trampoline as *const () as usize,
        ];
        let base = stack.base().get();
        let sp = base - std::mem::size_of_val(&frame);
        // SAFETY: the top of a fresh stack, mapped and unused.
        unsafe { std::ptr::copy_nonoverlapping(frame.as_ptr(), sp as *mut usize, frame.len()) };
        if self.stacks.len() <= task {
            self.stacks.resize_with(task + 1, || None);
        }
        self.stacks[task] = Some(stack);
        sp
    }

    /// From the run loop: resume task `_t` at `handle`, until a task
    /// (maybe another: tasks switch among themselves) hands the thread
    /// back.
    pub(crate) fn resume(&mut self, channel: &Channel, _t: TaskId, handle: Handle) -> Back {
        // SAFETY: `handle` is a suspended task's (the caller's state
        // says it is runnable).
        unsafe { switch_stacks(channel.main.as_ptr(), handle) };
        match channel.ended.take() {
            None => Back::Yielded,
            Some((task, panic)) => Back::Finished { task, panic },
        }
    }

    /// The stack of finished task `t`, for another task.
    pub(crate) fn take_stack(&mut self, t: TaskId) -> Option<TaskStack> {
        self.stacks.get_mut(t)?.take()
    }

    /// Unwind every task not finished (`handle`: each one's), but resume
    /// those that `returns` says return from their wait at tear-down; their
    /// stacks, for other tasks.
    pub(crate) fn unwind_all(
        &mut self,
        channel: &Channel,
        handle: impl Fn(TaskId) -> Handle,
        returns: impl Fn(TaskId) -> bool,
    ) -> Vec<TaskStack> {
        channel.unwinding.set(true);
        let mut stacks = Vec::new();
        // Newest first: a task spawned by another (a scoped thread) may
        // borrow from its stack, and must be gone before that is.
        for t in (0..self.stacks.len()).rev() {
            if self.stacks[t].is_none() {
                continue;
            }
            channel.returns.set(returns(t));
            // A panic in a destructor during the unwinding ends at the
            // task's root too.
            if let Back::Finished { task, .. } = self.resume(channel, t, handle(t)) {
                debug_assert_eq!(task, t);
                stacks.extend(self.take_stack(task));
            }
        }
        channel.unwinding.set(false);
        channel.returns.set(false);
        stacks
    }
}
