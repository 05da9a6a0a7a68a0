//! The task-side API: what model code calls while it runs inside an
//! execution. Outside an execution (real threads, plain tests) every call
//! is a no-op or returns a neutral value, so the same model code runs there.

use crate::cost::{CostKey, ResolvedCosts};
use crate::exec::{decide_here, decide_in_task, Core, Decided, Sched};
use crate::fiber::{self, Handle};
use crate::footprint::{Footprint, EXIT_WAKES, OBJECT_TABLE};
use crate::keys::{Singleton, MAX_SINGLETONS, MAX_TASK_SLOTS};
use crate::outcome::Outcome;
use crate::runq::RunQueue;
use crate::trace::{Event, EventKind, Trace};
use crate::TaskId;
use std::cell::Cell;
use std::collections::{BTreeMap, VecDeque};

/// A modelled object (or a wait queue), numbered per execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjId(pub u32);

impl ObjId {
    /// Placeholder for steps that concern no object.
    pub const NONE: ObjId = ObjId(u32::MAX);
}

/// Lifetime of a modelled object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjState {
    Live,
    /// Released by its users but not yet freed; the model names what it
    /// waits in (see [`park_object`]).
    Parked(&'static str),
    /// Freed by `by` at step `step`.
    Freed {
        by: TaskId,
        step: u64,
    },
}

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
    /// [`DECIDE_ROOM`](crate::exec::DECIDE_ROOM) above it, the task
    /// switches out at a scheduling point rather than pick its successor
    /// on its own stack.
    pub stack_limit: usize,
}

pub(crate) struct ObjInfo {
    pub kind: &'static str,
    pub serial: u32,
    pub state: ObjState,
    pub owner: Option<TaskId>,
    /// Named by its kind alone: the one object of a [`Singleton`].
    pub singleton: bool,
}

pub(crate) type TaskFn = Box<dyn FnOnce() + 'static>;

pub(crate) struct Shared {
    /// This execution's number among all of the process's
    /// ([`execution_serial`]).
    pub serial: u64,
    /// The task that has just reached a yield ([`yield_point`]), until
    /// the pick that follows: there running another task is no
    /// preemption, and running this one is.
    pub yielder: Option<TaskId>,
    /// The scheduler: strategy, limits, and the hand-over between steps.
    pub sched: Sched,
    pub tasks: Vec<TaskState>,
    /// Each task's name, by id (read when something is reported).
    pub task_names: Vec<String>,
    /// Each task's words that static [`TaskSlot`](crate::TaskSlot)s name,
    /// apart from `tasks`, which every step reads.
    pub slots: Vec<[u64; MAX_TASK_SLOTS]>,
    pub current: TaskId,
    pub step: u64,
    pub costs: ResolvedCosts,
    pub cpus: Vec<u64>,
    pub objects: Vec<ObjInfo>,
    pub serials: BTreeMap<&'static str, u32>,
    /// The objects of the singletons used so far, by key number
    /// (`ObjId::NONE` for a key not used yet).
    pub singletons: [ObjId; MAX_SINGLETONS],
    /// Singletons whose waiters re-check when a task exits.
    pub exit_wakes: Vec<ObjId>,
    /// Tasks blocked on each object, in the order they blocked, by object
    /// id plus one (slot 0 is for `ObjId::NONE`); the queues keep their
    /// capacity, so blocking allocates nothing after warm-up, and waking
    /// the first moves no other.
    pub waiters: Vec<VecDeque<TaskId>>,
    /// The step of the last note: model code records a note for every
    /// result, free, wake-up or change of lock holder, so a long run of
    /// steps without one is tasks spinning without progress.
    pub last_progress: u64,
    pub trace: Trace,
    pub teardown: bool,
    /// True while the world is being built: objects and tasks may be made,
    /// but nothing runs, waits or is traced.
    pub setting_up: bool,
    /// True while a task's coroutine is resumed (checkers run outside).
    pub in_task: bool,
    /// The runnable tasks, ascending: kept up to date on every change of
    /// state so that no step scans all tasks.
    pub runnable: RunQueue,
    /// Exhaustive search and its tests: each step's task and footprint,
    /// the last one the step running now (`None`: not kept).
    pub footprints: Option<Vec<(TaskId, Footprint)>>,
    /// Tasks spawned and not yet finished.
    pub live: usize,
    /// The [`HostMutex`](crate::HostMutex)es the running task holds, by
    /// name, in the order taken.
    pub host_locks: Vec<&'static str>,
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

thread_local! {
    static CURRENT: Cell<*const Core> = const { Cell::new(std::ptr::null()) };
}

pub(crate) fn install(core: *const Core) {
    CURRENT.with(|c| c.set(core));
}

/// The current execution, if this thread runs one.
#[inline(always)]
fn core() -> Option<&'static Core> {
    let p = CURRENT.with(|c| c.get());
    // SAFETY: the pointer is set by `Execution::run` (and `setup`) for the
    // duration of the run and cleared before the execution is dropped; only
    // this thread uses it. The reference does not outlive the call it is
    // taken in.
    (!p.is_null()).then(|| unsafe { &*p })
}

/// Run `f` on the current execution's state, if a task of one is running.
#[inline(always)]
fn with<R>(f: impl FnOnce(&mut Shared) -> R) -> Option<R> {
    let mut s = core()?.shared.borrow_mut();
    if s.teardown {
        return None;
    }
    Some(f(&mut s))
}

/// Like [`with`], but only while tasks run (not during set-up).
#[inline(always)]
fn with_running<R>(f: impl FnOnce(&mut Shared) -> R) -> Option<R> {
    let mut s = core()?.shared.borrow_mut();
    // Set only while the run loop runs: never during set-up or tear-down.
    if !s.in_task {
        return None;
    }
    debug_assert!(!s.setting_up && !s.teardown);
    Some(f(&mut s))
}

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
    if let Some(i) = s.host_locks.iter().rposition(|n| *n == name) {
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
                decide: sp >= t.stack_limit + crate::exec::DECIDE_ROOM,
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

impl Shared {
    /// Runnable task `t` blocks or ends (`run`), and leaves the runnable
    /// list. Each caller knows the change it makes, so no branch asks.
    #[inline]
    pub(crate) fn set_not_runnable(&mut self, t: TaskId, run: RunState) {
        debug_assert!(matches!(self.tasks[t].run, RunState::Runnable));
        debug_assert!(!matches!(run, RunState::Runnable));
        self.tasks[t].run = run;
        self.runnable.remove(t);
    }

    /// Blocked task `t` becomes runnable.
    #[inline]
    pub(crate) fn set_runnable(&mut self, t: TaskId) {
        debug_assert!(matches!(self.tasks[t].run, RunState::Blocked { .. }));
        self.tasks[t].run = RunState::Runnable;
        self.runnable.insert(t);
    }

    /// Add a new runnable task, unless [`limits::TASKS`] tasks are alive
    /// already: then the execution ends with outcome `limit` (tasks), the
    /// same whatever the machine or the number of threads.
    ///
    /// [`limits::TASKS`]: crate::limits::TASKS
    pub(crate) fn add_task(&mut self, name: String, task: TaskState) -> Option<TaskId> {
        let max = crate::limits::TASKS.max;
        if self.live as u64 >= max {
            self.sched.abort_unless_aborted(Outcome::Limit {
                which: "tasks".into(),
                value: max,
            });
            return None;
        }
        self.live += 1;
        let id = self.tasks.len();
        self.tasks.push(task);
        self.task_names.push(name);
        self.slots.push([0; MAX_TASK_SLOTS]);
        self.runnable.push_new(id);
        Some(id)
    }

    /// The current task's pending operation: `label` on `obj`, costing
    /// what `cost` costs in this run.
    #[inline(always)]
    fn set_pending_op(&mut self, label: &'static str, obj: ObjId, cost: &CostKey) {
        let c = self.costs.get(cost);
        self.set_pending(label, obj, c);
    }

    fn set_pending(&mut self, label: &'static str, obj: ObjId, cost: u64) {
        let t = &mut self.tasks[self.current];
        t.pending = PendingOp {
            label,
            obj,
            cost,
            local: false,
            reads: false,
        };
    }

    /// The step running now touched `obj` (`write`: and changed it); kept
    /// only while footprints are.
    #[inline]
    pub(crate) fn touched(&mut self, obj: u32, write: bool) {
        if let Some(steps) = &mut self.footprints {
            if let Some((_, f)) = steps.last_mut() {
                f.add(obj, write);
            }
        }
    }

    /// The step running now made an object or a task, while tasks run.
    fn created(&mut self) {
        if self.in_task {
            self.touched(OBJECT_TABLE, true);
        }
    }

    #[inline]
    pub(crate) fn note(&mut self, label: &'static str, obj: ObjId, value: i64) {
        self.last_progress = self.step;
        let e = self.note_event(label, obj, value);
        self.trace.push(e);
    }

    /// A note of the current task, at its clock.
    #[inline]
    fn note_event(&self, label: &'static str, obj: ObjId, value: i64) -> Event {
        Event {
            step: self.step,
            task: self.current,
            time: self.tasks[self.current].clock,
            kind: EventKind::Note,
            label,
            obj,
            value,
        }
    }

    /// A lock changed hands: recorded for the views, and progress, but not
    /// folded into the trace hash. The steps around it already are: a lock
    /// step followed by the holder's own next step was an acquire, one
    /// followed by a wake-up was a wait, and a release always follows an
    /// unlock step. Two hashes fewer per lock operation.
    #[inline]
    pub(crate) fn note_lock(&mut self, label: &'static str, obj: ObjId) {
        self.last_progress = self.step;
        if self.trace.events.is_some() {
            let e = self.note_event(label, obj, 0);
            self.trace.record_only(e);
        }
    }

    /// The waiter list of `obj`; `ObjId::NONE` (a wait on nothing in
    /// particular) has the slot after every object's.
    fn waiter_slot(obj: ObjId) -> usize {
        if obj == ObjId::NONE {
            0
        } else {
            obj.0 as usize + 1
        }
    }

    pub(crate) fn wake(&mut self, obj: ObjId, latency: u64) {
        self.touched(obj.0, true);
        let Some(list) = self.waiters.get_mut(Self::waiter_slot(obj)) else {
            return;
        };
        if list.is_empty() {
            return;
        }
        let mut ws = std::mem::take(list);
        let at = self.tasks[self.current].clock.saturating_add(latency);
        for &w in &ws {
            if matches!(self.tasks[w].run, RunState::Blocked { on, .. } if on == obj) {
                self.set_runnable(w);
                let t = &mut self.tasks[w];
                t.clock = t.clock.max(at);
            }
        }
        ws.clear();
        self.waiters[Self::waiter_slot(obj)] = ws;
    }

    /// Make the longest-waiting task blocked on `obj` runnable, as a
    /// released lock hands over to the first task in its wait queue.
    /// Waiters found no longer blocked on `obj` leave the queue too.
    #[inline]
    pub(crate) fn wake_one(&mut self, obj: ObjId) {
        self.touched(obj.0, true);
        let Some(list) = self.waiters.get_mut(Self::waiter_slot(obj)) else {
            return;
        };
        let tasks = &self.tasks;
        let first_blocked = std::iter::from_fn(|| list.pop_front())
            .find(|&w| matches!(tasks[w].run, RunState::Blocked { on, .. } if on == obj));
        let Some(w) = first_blocked else {
            return;
        };
        let at = self.tasks[self.current].clock;
        self.set_runnable(w);
        let t = &mut self.tasks[w];
        t.clock = t.clock.max(at);
    }

    #[inline]
    fn add_waiter(&mut self, obj: ObjId, t: TaskId) {
        let i = Self::waiter_slot(obj);
        if self.waiters.len() <= i {
            self.waiters.resize_with(i + 1, VecDeque::new);
        }
        self.waiters[i].push_back(t);
    }

    pub(crate) fn object_name(&self, obj: ObjId) -> String {
        match self.objects.get(obj.0 as usize) {
            Some(o) if o.singleton => o.kind.to_string(),
            Some(o) => format!("{}#{}", o.kind, o.serial),
            None => "-".to_string(),
        }
    }

    pub(crate) fn new_object(&mut self, kind: &'static str) -> ObjId {
        self.created();
        let serial = self.serials.entry(kind).or_insert(0);
        let id = ObjId(self.objects.len() as u32);
        self.objects.push(ObjInfo {
            kind,
            serial: *serial,
            state: ObjState::Live,
            owner: None,
            singleton: false,
        });
        *serial += 1;
        id
    }

    /// The object of singleton `key` (number `i`), made on first use.
    #[inline]
    fn singleton(&mut self, i: usize, key: &Singleton) -> ObjId {
        match self.singletons[i] {
            ObjId::NONE => self.new_singleton(i, key),
            obj => obj,
        }
    }

    #[cold]
    fn new_singleton(&mut self, i: usize, key: &Singleton) -> ObjId {
        self.created();
        let id = ObjId(self.objects.len() as u32);
        self.objects.push(ObjInfo {
            kind: key.kind(),
            serial: 0,
            state: ObjState::Live,
            owner: None,
            singleton: true,
        });
        self.singletons[i] = id;
        if key.wakes_on_exit() {
            self.exit_wakes.push(id);
            self.touched(EXIT_WAKES, true);
        }
        id
    }

    /// Task `t` has returned: its slots are cleared, and waiters on a
    /// condition over them re-check.
    pub(crate) fn exited(&mut self, t: TaskId) {
        self.set_not_runnable(t, RunState::Finished);
        self.live -= 1;
        self.slots[t] = [0; MAX_TASK_SLOTS];
        self.note("exit", ObjId::NONE, 0);
        self.touched(EXIT_WAKES, false);
        for i in 0..self.exit_wakes.len() {
            self.wake(self.exit_wakes[i], 0);
        }
    }
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
        let t = s.current;
        s.set_not_runnable(t, RunState::Blocked { on: obj, idle });
        s.add_waiter(obj, t);
        s.set_pending(label, obj, 0);
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
        },
        fiber: fiber::NO_HANDLE,
        stack_limit: 0,
    }
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

impl Shared {
    #[inline(always)]
    fn try_acquire(&mut self, obj: ObjId) -> bool {
        let t = self.current;
        self.touched(obj.0, true);
        let Some(o) = self.objects.get_mut(obj.0 as usize) else {
            return false;
        };
        if o.owner.is_some() {
            return false;
        }
        o.owner = Some(t);
        self.note_lock("acquired", obj);
        true
    }

    #[inline(always)]
    fn release(&mut self, obj: ObjId) {
        self.touched(obj.0, true);
        self.note_lock("released", obj);
        if let Some(o) = self.objects.get_mut(obj.0 as usize) {
            o.owner = None;
        }
        self.wake_one(obj);
    }
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

/// The object of singleton `key` while a task runs.
#[inline]
pub(crate) fn singleton(key: &Singleton) -> Option<ObjId> {
    let i = key.index();
    with_running(|s| s.singleton(i, key))
}

/// Run `f` on the current task's word `i`.
#[inline]
pub(crate) fn update_slot<R>(i: usize, f: impl FnOnce(&mut u64) -> R) -> Option<R> {
    with_running(|s| {
        let t = s.current;
        f(&mut s.slots[t][i])
    })
}

/// Task `t`'s word `i`.
pub(crate) fn slot_of(i: usize, t: TaskId) -> u64 {
    with_running(|s| s.slots.get(t).map(|w| w[i]))
        .flatten()
        .unwrap_or(0)
}

/// What `f` picks from every task's word `i`.
pub(crate) fn scan_slot<T>(i: usize, mut f: impl FnMut(TaskId, u64) -> Option<T>) -> Vec<T> {
    with_running(|s| {
        s.slots
            .iter()
            .enumerate()
            .filter_map(|(t, w)| f(t, w[i]))
            .collect()
    })
    .unwrap_or_default()
}
