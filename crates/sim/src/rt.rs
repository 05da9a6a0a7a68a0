//! The task-side API: what model code calls while it runs inside an
//! execution. Outside an execution (real threads, plain tests) every call
//! is a no-op or returns a neutral value, so the same model code runs there.

use crate::cost::CostKey;
use crate::fiber::{Handle, TaskFn};
use crate::obj::{ObjId, ObjState};
use crate::outcome::Outcome;
use crate::sched::{core, decide_here, decide_in_task, with, with_running, Decided, Shared};
use crate::task::{new_task, RunState};
use crate::TaskId;

/// True inside a running execution (false on plain threads, during set-up
/// and while an aborted execution is being torn down).
#[inline]
pub fn active() -> bool {
    with_running(|_| ()).is_some()
}

/// What a task does after preparing a switch: go on to the pick, or stop
/// because the execution is being aborted.
enum Switch {
    /// `decide`: pick the next task here (else the run loop picks it).
    Pick {
        decide: bool,
    },
    Abort,
    /// The task holds a host lock: a defect of the model, which would
    /// deadlock the thread (see [`crate::HostMutex`]).
    HostLockHeld {
        lock: &'static str,
        point: &'static str,
    },
}

/// A [`HostMutex`](crate::HostMutex) named `name` was taken: counted when a
/// task of an execution runs (true), else not (false).
pub(crate) fn host_lock_taken(name: &'static str) -> bool {
    with_running(|s| s.host_locks.push(name)).is_some()
}

/// A counted host lock named `name` was released.
pub(crate) fn host_lock_dropped(name: &'static str) {
    let Some(core) = core() else {
        return;
    };
    let mut s = core.shared.borrow_mut();
    // Mostly the last taken, named by the same static string.
    if s.host_locks.last().is_some_and(|n| std::ptr::eq(*n, name)) {
        s.host_locks.pop();
    } else if let Some(i) = s.host_locks.iter().rposition(|n| *n == name) {
        s.host_locks.remove(i);
    }
}

impl Shared {
    /// Check the current task's stack: the one borrow of the execution's
    /// state that every scheduling point makes before switching. A task
    /// whose stack is nearly used up is stopped: overflowing the guard
    /// page would end the whole process.
    #[inline(always)]
    fn prepare_switch(&mut self) -> Switch {
        if let Some(&lock) = self.host_locks.last() {
            return Switch::HostLockHeld {
                lock,
                point: self.tasks[self.current].pending.label,
            };
        }
        let here = 0u8;
        let sp = std::ptr::addr_of!(here) as usize;
        let t = &self.tasks[self.current];
        if sp >= t.stack_limit {
            return Switch::Pick {
                decide: sp >= t.stack_limit + crate::sched::DECIDE_ROOM,
            };
        }
        self.sched.abort_with(Outcome::Limit {
            which: "stack".into(),
            value: self.current as u64,
        });
        Switch::Abort
    }
}

/// A scheduling point of the running task: `prepare` sets its pending
/// operation (and blocks it, for a wait), then the task picks the next step
/// itself, in the same borrow of the state when no invariant runs after
/// every step, and goes on if it is picked again; otherwise it switches to
/// the task picked, or hands the thread back to the run loop for what a
/// pick on a task's stack cannot do (see `fiber`). False outside a running
/// task.
#[inline(always)]
fn reschedule(prepare: impl FnOnce(&mut Shared)) -> bool {
    reschedule_then(prepare, |_| ()).is_some()
}

/// [`reschedule`], then `then` on the state once the task runs again (the
/// operation the point was before): in the borrow the pick was made in
/// when the task goes on without a switch (as it mostly does under PCT)
/// and no invariant runs after every step. `None` outside a running task.
#[inline(always)]
fn reschedule_then<R>(
    prepare: impl FnOnce(&mut Shared),
    then: impl FnOnce(&mut Shared) -> R,
) -> Option<R> {
    let core = core()?;
    let mut s = core.shared.borrow_mut();
    if !s.in_task {
        return None;
    }
    debug_assert!(!s.setting_up && !s.teardown);
    prepare(&mut s);
    let decide = match s.prepare_switch() {
        Switch::Pick { decide } => decide,
        Switch::Abort => {
            drop(s);
            abort_current()
        }
        Switch::HostLockHeld { lock, point } => {
            drop(s);
            // Unwinding drops the guard, so nothing is left locked.
            panic!("host lock `{lock}` held across the scheduling point `{point}`: the model must not hold a host lock where another task may run");
        }
    };
    let me = s.current;
    let decided = if !decide {
        Decided::RunLoop
    } else if !s.sched.checks_every_step() {
        decide_here(&mut s, false)
    } else {
        // The invariants run with nothing borrowed.
        drop(s);
        let decided = decide_in_task(core);
        s = core.shared.borrow_mut();
        decided
    };
    let next = match decided {
        Decided::Same => return Some(then(&mut s)),
        Decided::Task(next) => Some(next),
        Decided::RunLoop => None,
    };
    let save: *mut Handle = &mut s.tasks[me].fiber;
    match next {
        Some(next) => {
            let to = s.tasks[next].fiber;
            drop(s);
            // SAFETY: `save` is this task's handle, and `next` is runnable,
            // so suspended (no other borrow of the tasks exists till then).
            unsafe { core.channel.switch(save, to) };
        }
        None => {
            drop(s);
            // SAFETY: `save` is this task's handle.
            unsafe { core.channel.suspend(save) };
        }
    }
    // Resumed: the execution runs on (a task resumed at tear-down unwinds
    // from its switch instead).
    Some(then(&mut core.shared.borrow_mut()))
}

/// Give the OS thread back to the scheduler.
fn switch_out() {
    let Some(core) = core() else {
        return;
    };
    let save = {
        let mut s = core.shared.borrow_mut();
        if !s.in_task {
            return;
        }
        let t = s.current;
        &mut s.tasks[t].fiber as *mut Handle
    };
    // SAFETY: `save` is the running task's handle.
    unsafe { core.channel.suspend(save) };
}

/// A scheduling point: the current task is about to perform `label` on
/// `obj`, costing `cost`. Other tasks may run before it continues.
#[inline]
pub fn point(label: &'static str, obj: ObjId, cost: &CostKey) {
    reschedule(|s| s.set_pending_op(label, obj, cost));
}

/// A scheduling point where the current task yields (`thread::yield_now`,
/// a spinner's wait): the task that would run next in round-robin order
/// is the one that runs without a preemption, and the yielding task
/// itself is a preemption's choice. So a task that spins, yielding, until
/// another acts does not spin for free in exhaustive search: within a
/// preemption bound it spins at most that many times more.
pub fn yield_point(label: &'static str, obj: ObjId, cost: &CostKey) {
    reschedule(|s| {
        s.set_pending_op(label, obj, cost);
        s.yielder = Some(s.current);
    });
}

/// A scheduling point before an operation that only reads `obj` (an
/// atomic load): for exhaustive search it commutes with other reads of
/// `obj`; otherwise it is [`point`].
#[inline]
pub fn read_point(label: &'static str, obj: ObjId, cost: &CostKey) {
    reschedule(|s| {
        s.set_pending_op(label, obj, cost);
        s.tasks[s.current].pending.reads = true;
    });
}

/// The virtual-time cost of `key` in the current execution (its default
/// outside one).
pub fn cost(key: &CostKey) -> u64 {
    with(|s| s.costs.get(key)).unwrap_or(key.default_ns)
}

/// Record a fact in the trace (a syscall's result, a counter's value).
#[inline]
pub fn note(label: &'static str, obj: ObjId, value: i64) {
    with_running(|s| s.note(label, obj, value));
}

/// Block the current task on `obj` until [`wake_all`] on it; `idle` marks a
/// daemon's wait for work (not a deadlock when nothing else can run).
/// Callers re-check their condition after waking.
#[inline]
pub fn block(label: &'static str, obj: ObjId, idle: bool) {
    reschedule(|s| {
        block_current(s, label, obj, idle);
    });
}

/// The current task waits on `obj`; the task.
fn block_current(s: &mut Shared, label: &'static str, obj: ObjId, idle: bool) -> TaskId {
    let t = s.current;
    s.set_not_runnable(t, RunState::Blocked { on: obj, idle });
    s.add_waiter(obj, t);
    s.set_pending(label, obj, 0);
    // A daemon's idle wait is where it holds nothing (a kworker between
    // two works): its state is what the model names.
    s.tasks[t].pending.between_ops |= idle;
    t
}

/// A daemon's wait for work (a kworker between two works): [`block`] on
/// `obj` as idle, until [`wake_all`] on it (true). When the execution ends
/// with the daemon still waiting, the wait returns false instead, and the
/// daemon must return from its function without another scheduling point:
/// it then ends as any task does, where unwinding its stack would cost a
/// panic at the end of every execution.
pub fn idle_wait(label: &'static str, obj: ObjId) -> bool {
    let blocked = reschedule(|s| {
        let t = block_current(s, label, obj, true);
        s.tasks[t].returns_at_teardown = true;
    });
    if !blocked {
        return true;
    }
    let Some(core) = core() else {
        return true;
    };
    let mut s = core.shared.borrow_mut();
    // At tear-down the running task is not `current`: its flag no longer
    // matters then.
    if s.teardown {
        return false;
    }
    let t = s.current;
    s.tasks[t].returns_at_teardown = false;
    true
}

/// Every task of the running execution has finished, or waits between
/// two of its operations ([`entering_op`]), before its first, or idle:
/// what a model that keeps part of its state on its tasks' stacks asks
/// before it names a state. False outside an execution.
pub fn every_task_between_ops() -> bool {
    with(|s| crate::sched::every_task_between_ops(s)).unwrap_or(false)
}

/// The current task is between two of its operations: its next
/// scheduling point begins the next one, and while it waits there all of
/// its state is what the model names ([`Execution::name_state`]), so a
/// stateful search may name the state there. Call it only where the task
/// keeps nothing it read of shared state since its last scheduling point
/// for after the next one (the next point is the first thing the
/// operation does).
///
/// [`Execution::name_state`]: crate::Execution::name_state
pub fn entering_op() {
    with_running(|s| {
        let t = s.current;
        s.tasks[t].entering = true;
    });
}

/// Block on `obj` until `ready()` holds.
pub fn wait_until(label: &'static str, obj: ObjId, mut ready: impl FnMut() -> bool) {
    while !ready() {
        if !active() {
            std::thread::yield_now();
            continue;
        }
        block(label, obj, false);
    }
}

/// Make every task blocked on `obj` runnable, no earlier than the current
/// task's clock plus `latency_ns`.
pub fn wake_all(obj: ObjId, latency_ns: u64) {
    with_running(|s| s.wake(obj, latency_ns));
}

/// Advance the current task's clock by `ns` without holding a CPU (a
/// sleep, a timed wait), then let others run.
pub fn sleep(label: &'static str, ns: u64) {
    reschedule(|s| {
        let t = s.current;
        s.tasks[t].clock = s.tasks[t].clock.saturating_add(ns);
        s.set_pending(label, ObjId::NONE, 0);
    });
}

/// The current task's virtual clock (0 outside an execution).
pub fn now() -> u64 {
    with_running(|s| s.tasks[s.current].clock).unwrap_or(0)
}

/// The current task's id.
pub fn current_task() -> Option<TaskId> {
    with_running(|s| s.current)
}

pub fn task_name(t: TaskId) -> String {
    with(|s| s.task_names.get(t).cloned())
        .flatten()
        .unwrap_or_else(|| format!("task{t}"))
}

/// The id the next [`spawn`] gives its task (tasks are numbered in spawn
/// order), inside an execution: a name that must be unique may carry it.
pub fn next_task_id() -> Option<TaskId> {
    with(|s| s.tasks.len())
}

/// Start a new task; it becomes runnable at the current task's clock.
/// `None` outside an execution, or when [`limits::TASKS`] tasks are alive
/// (the execution then ends with outcome `limit`).
///
/// [`limits::TASKS`]: crate::limits::TASKS
pub fn spawn(name: impl Into<String>, daemon: bool, f: impl FnOnce() + 'static) -> Option<TaskId> {
    let name = name.into();
    let mut f = Some(Box::new(f) as TaskFn);
    with(|s| {
        s.created();
        let clock = s.tasks.get(s.current).map_or(0, |t| t.clock);
        let id = s.add_task(name, new_task(daemon, clock))?;
        s.sched.start_later(id, f.take().expect("taken once"));
        Some(id)
    })
    .flatten()
}

/// Register a modelled object of `kind`; it starts live.
/// True while an ended execution unwinds its tasks: code that runs in a
/// task's destructors then must not wait for anything.
pub fn tearing_down() -> bool {
    core().is_some_and(|c| c.shared.borrow_mut().teardown)
}

/// The running execution's number, unique among the executions this
/// process has made (`None` outside one): what an object made outside an
/// execution keys its per-execution state by. It names no execution in
/// any result, so it does not break determinism.
pub fn execution_serial() -> Option<u64> {
    with(|s| s.serial)
}

pub fn new_object(kind: &'static str) -> ObjId {
    with(|s| s.new_object(kind)).unwrap_or(ObjId::NONE)
}

/// Whether the running execution is recorded (its events kept for the
/// views): what is only for the views is worth making.
pub fn recording() -> bool {
    with(|s| s.trace.events.is_some()).unwrap_or(false)
}

/// Call `obj` what `title` says (`ucounts(ct-a, uid 100000)`) in the
/// views of a recorded execution, instead of its kind and serial. `title`
/// runs only while the execution is recorded, so that a search, which
/// draws nothing, pays nothing for it; the trace and its hash never see
/// it.
pub fn title_object(obj: ObjId, title: impl FnOnce() -> String) {
    if obj == ObjId::NONE || !recording() {
        return;
    }
    let title = title();
    with(|s| s.titles.insert(obj.0, title));
}

/// Call the current task's next step what `title` says in the views of a
/// recorded execution (a scenario op's first step by the op as the
/// scenario writes it, `unshare(CLONE_NEWIPC)`). Like [`title_object`],
/// `title` runs only while the execution is recorded, and the trace never
/// sees it.
pub fn title_next_step(title: impl FnOnce() -> String) {
    let Some(task) = current_task().filter(|_| recording()) else {
        return;
    };
    let title = title();
    with(|s| {
        s.step_titles_wanted.retain(|(t, _)| *t != task);
        s.step_titles_wanted.push((task, title));
    });
}

pub fn object_name(obj: ObjId) -> String {
    with(|s| s.object_name(obj)).unwrap_or_else(|| format!("obj{}", obj.0))
}

pub fn object_state(obj: ObjId) -> ObjState {
    with(|s| s.objects.get(obj.0 as usize).map(|o| o.state))
        .flatten()
        .unwrap_or(ObjState::Live)
}

/// Mark `obj` released by its users but not yet freed, waiting in what
/// `state` names (`"queued"`, say); the trace notes `state` on `obj`.
pub fn park_object(obj: ObjId, state: &'static str) {
    with_running(|s| {
        s.touched(obj.0, true);
        if let Some(o) = s.objects.get_mut(obj.0 as usize) {
            o.state = ObjState::Parked(state);
        }
        s.note(state, obj, 0);
    });
}

/// Mark `obj` freed by the current task.
pub fn free_object(obj: ObjId) {
    with_running(|s| {
        s.touched(obj.0, true);
        let (by, step) = (s.current, s.step);
        if let Some(o) = s.objects.get_mut(obj.0 as usize) {
            o.state = ObjState::Freed { by, step };
        }
        s.note("freed", obj, 0);
    });
}

/// The current task dereferences `obj` (`what` says how). Touching a freed
/// object ends the execution with outcome `use-after-free`.
pub fn touch(obj: ObjId, what: &'static str) {
    let aborted = with_running(|s| {
        s.touched(obj.0, false);
        let Some(ObjState::Freed { by, .. }) = s.objects.get(obj.0 as usize).map(|o| o.state)
        else {
            return false;
        };
        s.note("use-after-free", obj, by as i64);
        let uaf = Outcome::UseAfterFree {
            object: s.object_name(obj),
            freed_by: s.task_names[by].clone(),
            touched_by: s.task_names[s.current].clone(),
            at: what.to_string(),
        };
        s.sched.abort_with(uaf);
        s.set_pending("use-after-free", obj, 0);
        true
    });
    if aborted == Some(true) {
        abort_current();
    }
}

/// The current step touches `obj` besides the object its scheduling point
/// named: a primitive declares what it changes (the queue a consumer
/// takes items from, say), so that exhaustive search does not take two
/// steps that touch it for independent. No scheduling point, no
/// trace; nothing outside a running task.
#[inline]
pub fn access(obj: ObjId) {
    if obj != ObjId::NONE {
        with_running(|s| s.touched(obj.0, true));
    }
}

/// End the execution now with `outcome` (model code found a violation).
pub fn fail(outcome: Outcome) {
    if with_running(|s| s.sched.abort_with(outcome)).is_some() {
        abort_current();
    }
}

fn abort_current() -> ! {
    // The scheduler never resumes a task after an abort; it is unwound
    // during tear-down.
    switch_out();
    unreachable!("an aborted task was resumed");
}

/// A scheduling point before taking lock `obj`, then the attempt: the
/// task becomes its owner, and the trace notes `acquired`, if no task
/// holds it. `Some(false)`: another task holds it, or `obj` is not an
/// object of this execution (see
/// [`lock_try_acquire`] for the next attempts); `None` outside a running
/// task (the caller then takes its real lock). One call where `point` and
/// `lock_try_acquire` would be two.
#[inline]
pub fn lock_point(label: &'static str, obj: ObjId, cost: &CostKey) -> Option<bool> {
    reschedule_then(
        |s| s.set_pending_op(label, obj, cost),
        |s| s.try_acquire(obj),
    )
}

/// The current task takes lock `obj` if no task holds it: it becomes the
/// owner and the trace notes `acquired`. False if another task holds it
/// (or outside a running task).
#[inline]
pub fn lock_try_acquire(obj: ObjId) -> bool {
    with_running(|s| s.try_acquire(obj)).unwrap_or(false)
}

/// The task holding lock `obj` in the current execution, if one does.
pub fn lock_holder(obj: ObjId) -> Option<TaskId> {
    with(|s| s.objects.get(obj.0 as usize).and_then(|o| o.owner)).flatten()
}

/// A scheduling point before releasing lock `obj`, then the release: the
/// trace notes `released`, the lock has no owner, and the task that has
/// waited longest for it becomes runnable (a mutex's unlock wakes the
/// first task on its wait list; a queued spinlock passes to the next in
/// its queue). False outside a running task.
#[inline]
pub fn unlock_point(label: &'static str, obj: ObjId, cost: &CostKey) -> bool {
    reschedule_then(|s| s.set_pending_op(label, obj, cost), |s| s.release(obj)).is_some()
}

/// Record that `owner` holds `obj` (for wait-for cycles in deadlock reports).
pub fn set_owner(obj: ObjId, owner: Option<TaskId>) {
    with(|s| {
        if let Some(o) = s.objects.get_mut(obj.0 as usize) {
            o.owner = owner;
        }
    });
}
