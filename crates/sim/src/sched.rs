//! The scheduler of one execution: its state (the tasks, the objects, the
//! strategy), the pick of the next step, and the invariants and the state
//! cache consulted between steps. A task at a scheduling point runs the
//! pick itself (see `rt`); the run loop of [`Execution`](crate::Execution)
//! runs it otherwise.

use crate::cost::{CostKey, CostTable, ResolvedCosts};
use crate::fiber::{self, TaskFn};
use crate::footprint::{Footprint, EXIT_WAKES, OBJECT_TABLE};
use crate::obj::{ObjId, ObjState};
use crate::outcome::{Outcome, WaitLink};
use crate::runq::RunQueue;
use crate::statecache::{FreeToGoOn, Probe, StateHasher};
use crate::strategy::{Chooser, PickCtx};
use crate::task::{
    ObjInfo, PendingOp, RunState, StateCell, TaskState, MAX_SINGLETONS, MAX_TASK_SLOTS,
};
use crate::trace::{Event, EventKind, Trace};
use crate::TaskId;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

pub(crate) struct Shared {
    /// This execution's number among all of the process's
    /// ([`execution_serial`](crate::execution_serial)).
    pub serial: u64,
    /// The task that has just reached a yield ([`yield_point`](crate::yield_point)), until
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
    /// What the views call objects by (`ucounts(ct-a, uid 100000)`) in
    /// place of their kind and serial; set only while the execution is
    /// recorded ([`crate::title_object`]).
    pub titles: std::collections::BTreeMap<u32, String>,
    /// Titles asked for the next step of a task ([`crate::title_next_step`]),
    /// and those given: (index in the recorded events, title).
    pub step_titles_wanted: Vec<(TaskId, String)>,
    pub step_titles: Vec<(usize, String)>,
    /// The next serial of each kind of object, kinds in order of first
    /// use (a kind is named by a static string, found by address first).
    pub serials: Vec<(&'static str, u32)>,
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

thread_local! {
    /// A task's code is running (its panics are the task's).
    pub(crate) static IN_TASK: Cell<bool> = const { Cell::new(false) };
    static CURRENT: Cell<*const Core> = const { Cell::new(std::ptr::null()) };
}

pub(crate) fn install(core: *const Core) {
    CURRENT.with(|c| c.set(core));
}

/// The current execution, if this thread runs one.
#[inline(always)]
pub(crate) fn core() -> Option<&'static Core> {
    let p = CURRENT.with(|c| c.get());
    // SAFETY: the pointer is set by `Execution::run` (and `setup`) for the
    // duration of the run and cleared before the execution is dropped; only
    // this thread uses it. The reference does not outlive the call it is
    // taken in.
    (!p.is_null()).then(|| unsafe { &*p })
}

/// Run `f` on the current execution's state, if a task of one is running.
#[inline(always)]
pub(crate) fn with<R>(f: impl FnOnce(&mut Shared) -> R) -> Option<R> {
    let mut s = core()?.shared.borrow_mut();
    if s.teardown {
        return None;
    }
    Some(f(&mut s))
}

/// Like [`with`], but only while tasks run (not during set-up).
#[inline(always)]
pub(crate) fn with_running<R>(f: impl FnOnce(&mut Shared) -> R) -> Option<R> {
    let mut s = core()?.shared.borrow_mut();
    // Set only while the run loop runs: never during set-up or tear-down.
    if !s.in_task {
        return None;
    }
    debug_assert!(!s.setting_up && !s.teardown);
    Some(f(&mut s))
}

/// Slots of [`KIND_HINTS`].
const KIND_SLOTS: usize = 64;

thread_local! {
    /// Where each kind of object was last found in an execution's list of
    /// kinds, by the address of its name: a hint checked before use, so
    /// it only spares a search.
    static KIND_HINTS: [std::cell::Cell<usize>; KIND_SLOTS] =
        const { [const { std::cell::Cell::new(usize::MAX) }; KIND_SLOTS] };
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
        // A world of many tasks is built before its first step: the
        // memory bound is looked at as it grows, every 64 tasks.
        if self.tasks.len().is_multiple_of(64) {
            if let Some(bytes) = crate::mem::held_over_limit() {
                self.sched.abort_unless_aborted(Outcome::Limit {
                    which: "memory".into(),
                    value: bytes as u64,
                });
                return None;
            }
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
    pub(crate) fn set_pending_op(&mut self, label: &'static str, obj: ObjId, cost: &CostKey) {
        let c = self.costs.get(cost);
        self.set_pending(label, obj, c);
    }

    pub(crate) fn set_pending(&mut self, label: &'static str, obj: ObjId, cost: u64) {
        let t = &mut self.tasks[self.current];
        t.pending = PendingOp {
            label,
            obj,
            cost,
            local: false,
            reads: false,
            between_ops: std::mem::take(&mut t.entering),
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
    pub(crate) fn created(&mut self) {
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
    pub(crate) fn note_event(&self, label: &'static str, obj: ObjId, value: i64) -> Event {
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
    pub(crate) fn waiter_slot(obj: ObjId) -> usize {
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
    pub(crate) fn add_waiter(&mut self, obj: ObjId, t: TaskId) {
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
        let serial = self.next_serial(kind);
        let this = *serial;
        *serial += 1;
        let id = ObjId(self.objects.len() as u32);
        self.objects.push(ObjInfo {
            kind,
            serial: this,
            state: ObjState::Live,
            owner: None,
            singleton: false,
        });
        id
    }

    /// The next serial of `kind`: most objects of a kind are named by one
    /// static string, compared by address before its bytes. Where the
    /// kind was in the last execution is tried first: executions of one
    /// model make their kinds in much the same order.
    fn next_serial(&mut self, kind: &'static str) -> &mut u32 {
        let same = |k: &&'static str| std::ptr::eq(*k, kind);
        let slot = (kind.as_ptr() as usize >> 3) % KIND_SLOTS;
        let hint = KIND_HINTS.with(|h| h[slot].get());
        if self.serials.get(hint).is_some_and(|(k, _)| same(k)) {
            return &mut self.serials[hint].1;
        }
        let at = match self.serials.iter().position(|(k, _)| same(k)) {
            Some(i) => i,
            None => match self.serials.iter().position(|(k, _)| *k == kind) {
                Some(i) => i,
                None => {
                    self.serials.push((kind, 0));
                    self.serials.len() - 1
                }
            },
        };
        KIND_HINTS.with(|h| h[slot].set(at));
        &mut self.serials[at].1
    }

    /// The object of singleton `key` (number `i`), made on first use.
    #[inline]
    pub(crate) fn singleton(&mut self, i: usize, kind: &'static str, wakes_on_exit: bool) -> ObjId {
        match self.singletons[i] {
            ObjId::NONE => self.new_singleton(i, kind, wakes_on_exit),
            obj => obj,
        }
    }

    #[cold]
    pub(crate) fn new_singleton(
        &mut self,
        i: usize,
        kind: &'static str,
        wakes_on_exit: bool,
    ) -> ObjId {
        self.created();
        let id = ObjId(self.objects.len() as u32);
        self.objects.push(ObjInfo {
            kind,
            serial: 0,
            state: ObjState::Live,
            owner: None,
            singleton: true,
        });
        self.singletons[i] = id;
        if wakes_on_exit {
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

impl Shared {
    #[inline(always)]
    pub(crate) fn try_acquire(&mut self, obj: ObjId) -> bool {
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
    pub(crate) fn release(&mut self, obj: ObjId) {
        self.touched(obj.0, true);
        self.note_lock("released", obj);
        if let Some(o) = self.objects.get_mut(obj.0 as usize) {
            o.owner = None;
        }
        self.wake_one(obj);
    }
}

/// Stack a task must have left, above the red zone, to pick its successor
/// and run the invariants on its own stack; with less it switches out.
pub(crate) const DECIDE_ROOM: usize = 32 * 1024;

pub(crate) type Check = Box<dyn FnMut() -> Option<Outcome>>;
pub(crate) type Namer = Box<dyn FnMut(&mut StateHasher) -> bool>;

/// Limits and resources of one execution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecConfig {
    pub cpus: u32,
    pub max_steps: u64,
    pub max_virtual_ns: u64,
    pub costs: CostTable,
    /// Keep every event (for printing); the hash is always computed.
    pub record: bool,
    /// Keep which task ran each step (for shrinking and named schedules).
    pub log_steps: bool,
    /// With an explicit schedule that stops fitting: end the execution at
    /// that step (true), or finish it in non-preemptive order (false).
    pub stop_on_divergence: bool,
    /// Named segments are followed loosely (shrinking): a segment that does
    /// not fit is skipped instead of ending the schedule.
    pub lenient_segments: bool,
    /// Steps in a row without any progress (no result, free, wake-up or
    /// lock hand-over recorded) after which the run ends as a livelock.
    pub livelock_steps: u64,
    /// Wall-clock deadline (`--timeout`): checked every few thousand steps;
    /// the only input a run takes from outside, and only to stop it.
    pub deadline: Option<std::time::Instant>,
    /// Wall-clock deadline of the replays that report an exploration's
    /// execution once the search has ended (its results, its events):
    /// later than `deadline`, so that a search stopped there can still be
    /// reported, and the whole run ends by this.
    pub report_deadline: Option<std::time::Instant>,
    /// Bytes of stack per task (its coroutine). Model code is shallow; a
    /// task that nears the end is stopped with outcome `limit` (stack).
    pub stack_size: usize,
    /// Keep each step's task and [`Footprint`] (what it touched) in
    /// [`ExecReport::footprints`](crate::ExecReport::footprints).
    pub footprints: bool,
}

impl Default for ExecConfig {
    fn default() -> Self {
        ExecConfig {
            cpus: 2,
            max_steps: 10_000_000,
            max_virtual_ns: 3_600_000_000_000,
            costs: CostTable::default(),
            record: false,
            log_steps: false,
            stop_on_divergence: false,
            lenient_segments: false,
            deadline: None,
            report_deadline: None,
            livelock_steps: 1_000_000,
            stack_size: 128 * 1024,
            footprints: false,
        }
    }
}

/// One step of the step log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepRec {
    pub task: TaskId,
    pub label: &'static str,
    /// The step switched away from a task that could have continued.
    pub preemption: bool,
}

/// What tasks reach through the thread's current-execution pointer: the
/// modelled state, and the scheduler, so that a task at a scheduling point
/// can pick the next task itself and, when it is picked again, go on
/// without a switch (most steps of a task that holds a lock do).
pub(crate) struct Core {
    /// The modelled state, and the scheduler's (`Shared::sched`): one
    /// borrow serves a whole pick.
    pub(crate) shared: StateCell<Shared>,
    /// The invariants, kept apart: they run while nothing is borrowed.
    pub(crate) checkers: RefCell<Vec<(bool, Check)>>,
    /// How the model names its state ([`Execution::name_state`](crate::Execution::name_state)).
    pub(crate) namer: RefCell<Option<Namer>>,
    /// A stateful search's visited set (see `statecache`).
    pub(crate) probe: RefCell<Option<Probe>>,
    /// Groups of interchangeable tasks ([`Execution::interchangeable`](crate::Execution::interchangeable)).
    pub(crate) interchangeable: RefCell<Vec<Vec<TaskId>>>,
    /// What the tasks and the run loop exchange when they switch.
    pub(crate) channel: fiber::Channel,
}

/// The scheduler's side of an execution.
pub(crate) struct Sched {
    pub(crate) chooser: Chooser,
    /// How many checkers run after every step.
    pub(crate) each_step: usize,
    /// No limit can be reached before this step (see `limit_reached`).
    pub(crate) next_check: u64,
    pub(crate) config: ExecConfig,
    pub(crate) step_log: Vec<StepRec>,
    /// An end of the run a step asked for (an abort), taken at the next
    /// pick or by the run loop. Set only through [`Sched::abort_with`]
    /// and [`Sched::abort_unless_aborted`], which make that pick look.
    pub(crate) abort: Option<Outcome>,
    /// Tasks spawned by the step running now, started by the run loop
    /// before the next pick; added only through [`Sched::start_later`].
    pub(crate) spawned: Vec<(TaskId, TaskFn)>,
    /// How far the task that last ran got in deciding its successor.
    pub(crate) handoff: Handoff,
    /// Why the execution ends, once something has ended it (kept here
    /// rather than returned, so that the common step moves no outcome).
    pub(crate) stop: Option<Outcome>,
    /// Picks among two or more runnable tasks so far.
    pub(crate) choice_points: u64,
    /// Steps so far that switched away from a task that could go on
    /// (counted where steps are logged).
    pub(crate) preemptions: u32,
    /// A pick also checks for divergence or logs its step (the config's
    /// `stop_on_divergence` or `log_steps`): one test on the common step.
    pub(crate) replaying: bool,
}

/// What the task that switched out left for the run loop to do.
#[derive(Clone, Copy)]
pub(crate) enum Handoff {
    /// Nothing: the step's checks and the pick are still to come.
    Undecided,
    /// The step's checks passed; tasks it spawned must start before the pick.
    Checked,
    /// The next step is picked and charged (where tasks switch through
    /// the run loop; elsewhere the task switched to it).
    Run(TaskId),
    /// The execution ends with `Sched::stop`.
    Stop,
}

/// What a pick decided.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    Run(TaskId),
    /// From a task: that task itself runs the next step.
    Same,
    /// From a task: the run loop must take this step over.
    Defer,
    /// The execution ends with `Sched::stop`.
    Stop,
    /// Nothing is runnable.
    Idle,
}

impl Core {
    /// After a step: an abort the step asked for, or a failed invariant.
    pub(crate) fn after_step(&self) -> Option<Outcome> {
        if let Some(o) = self.shared.borrow_mut().sched.abort.take() {
            return Some(o);
        }
        self.run_checks(false)
    }

    /// Nothing is runnable: a deadlock, or the end-of-run checks.
    pub(crate) fn end_of_run(&self) -> Outcome {
        if let Some(deadlock) = quiescent(&self.shared.borrow()) {
            return deadlock;
        }
        self.run_checks(true).unwrap_or(Outcome::Pass)
    }

    /// Run the invariants checked after every step (or at the end). They
    /// see the world from outside any task: model code they call takes no
    /// scheduling points, and a panic in one is not a task's.
    pub(crate) fn run_checks(&self, at_end: bool) -> Option<Outcome> {
        if !at_end && self.shared.borrow().sched.each_step == 0 {
            return None;
        }
        self.outside_tasks(|| {
            let failed = self
                .checkers
                .borrow_mut()
                .iter_mut()
                .filter(|(end, _)| *end == at_end)
                .find_map(|(_, f)| f());
            match failed {
                None if !at_end => self.state_seen_before().then_some(Outcome::Pass),
                failed => failed,
            }
        })
    }

    /// A stateful search: whether the state after this step, beyond the
    /// replayed prefix, was reached before (the execution then ends, as a
    /// pass: its future was searched from there).
    pub(crate) fn state_seen_before(&self) -> bool {
        let guard = self.probe.borrow();
        let Some(probe) = guard.as_ref() else {
            return false;
        };
        let preemptions = {
            let s = self.shared.borrow();
            if s.sched.choice_points < probe.prefix_len {
                return false;
            }

            // Without a bound, every visit has the whole budget.
            if probe.bounded {
                s.sched.preemptions
            } else {
                0
            }
        };
        let mut h = StateHasher::new();
        let named = match self.namer.borrow_mut().as_mut() {
            Some(name) => name(&mut h),
            None => false,
        };
        if !named {
            return false;
        }
        let groups = self.interchangeable.borrow();
        let members: Vec<TaskId> = groups.iter().flatten().copied().collect();
        let (refers, free) = {
            let s = self.shared.borrow();
            let free = match probe.bounded {
                true => FreeToGoOn {
                    last: Some(s.current).filter(|&l| matches!(s.tasks[l].run, RunState::Runnable)),
                    yielder: s.yielder,
                },
                false => FreeToGoOn::ALL,
            };
            (hash_scheduler_state(&s, &mut h, &members), free)
        };
        let mut parts = h.task_parts();
        // Under a bound, which task the scheduler switches to without a
        // preemption after a yield depends on the tasks' ids: the
        // permutations of a state are one state only without a bound.
        if !refers && !probe.bounded {
            for group in groups.iter() {
                sort_within(&mut parts, group);
            }
        }
        let order: Vec<u128> = parts.into_values().collect();
        let state = h.finish128(&order);
        let seen = probe
            .cache
            .borrow_mut()
            .seen_before(state, preemptions, free);
        seen
    }

    /// Run `f` as code outside every task (from the run loop, or at a
    /// task's scheduling point): its scheduling points are no-ops, and a
    /// panic in it is not a task's.
    pub(crate) fn outside_tasks<R>(&self, f: impl FnOnce() -> R) -> R {
        let in_task = std::mem::replace(&mut self.shared.borrow_mut().in_task, false);
        let in_task_flag = IN_TASK.with(|f| f.replace(false));
        let r = f();
        IN_TASK.with(|f| f.set(in_task_flag));
        self.shared.borrow_mut().in_task = in_task;
        r
    }
}

/// Pick the next task to run (`last` ran the previous step; from a task,
/// the current one did), log and charge its step; or end the run (an abort
/// or a limit), or find nothing runnable. Tasks spawned by the last step
/// have been started; from a task, a step that spawned tasks or asked for
/// an abort is deferred to the run loop.
#[inline(never)]
pub(crate) fn pick_in(s: &mut Shared, last: Option<TaskId>, from_task: bool) -> Next {
    // An abort, spawned tasks and every limit are looked at only when
    // `next_check` comes: setting either makes it come at once.
    if s.step >= s.sched.next_check {
        if let Some(next) = look_before_pick(s, from_task) {
            return next;
        }
    }
    if s.runnable.is_empty() {
        return Next::Idle;
    }
    let sched = &mut s.sched;
    let last = if from_task { Some(s.current) } else { last };
    let still_runnable = last.filter(|&l| matches!(s.tasks[l].run, RunState::Runnable));
    // After a yield the next task in round-robin order goes on as if it
    // had run last: choosing it is no preemption, the yielder is one.
    let continuing = match s.yielder {
        None => still_runnable,
        Some(y) => {
            s.yielder = None;
            continuing_after_yield(sched, s.runnable.as_slice(), still_runnable, y)
        }
    };
    sched.choice_points += u64::from(s.runnable.len() > 1);
    let t = match sched.chooser.pick_from_queue(&s.runnable) {
        Some(t) => t,
        // The context's builder is made here only: made before the choice,
        // its captured references were stored at every step, whatever the
        // strategy (thirteen instructions a point).
        None => sched.chooser.pick_with_context(&s.runnable, || PickCtx {
            runnable: s.runnable.as_slice(),
            last: continuing,
            tasks: &s.tasks,
            task_names: &s.task_names,
            step: s.step,
            previous: s.footprints.as_ref().and_then(|f| f.last()).map(|(_, f)| f),
        }),
    };
    if sched.replaying {
        if let Some(next) = replay_bookkeeping(sched, &s.tasks, t, continuing) {
            return next;
        }
    }
    if charge(s, t) > s.sched.config.max_virtual_ns {
        let max = s.sched.config.max_virtual_ns;
        return s.sched.stop_with(Outcome::Limit {
            which: "virtual-time".into(),
            value: max,
        });
    }
    if from_task && still_runnable == Some(t) {
        return Next::Same;
    }
    Next::Run(t)
}

/// The task a pick after `yielder`'s yield sees as the one that ran last
/// (the yielder, when another task ran since, is nothing special). Out of
/// line: most executions never yield, and their picks keep the short
/// path (on table (a) of the comparison, inlined here it cost nssim about
/// a tenth of its speed against shuttle's).
#[cold]
#[inline(never)]
pub(crate) fn continuing_after_yield(
    sched: &mut Sched,
    runnable: &[TaskId],
    still_runnable: Option<TaskId>,
    yielder: TaskId,
) -> Option<TaskId> {
    if still_runnable != Some(yielder) {
        return still_runnable;
    }
    sched.chooser.yielded(yielder);
    Some(after_yield(runnable, yielder))
}

/// The task that runs next without a preemption after `yielder` yielded:
/// the first runnable one after it in task order, wrapping around; the
/// yielder itself when it is the only one.
pub(crate) fn after_yield(runnable: &[TaskId], yielder: TaskId) -> TaskId {
    let after = runnable.iter().copied().find(|&t| t > yielder);
    let wrapped = runnable.iter().copied().find(|&t| t != yielder);
    after.or(wrapped).unwrap_or(yielder)
}

/// What a replay asks of a pick besides the pick (`Sched::replaying`):
/// stop where its schedule no longer fits, and log each step's task.
#[cold]
#[inline(never)]
pub(crate) fn replay_bookkeeping(
    sched: &mut Sched,
    tasks: &[TaskState],
    t: TaskId,
    still_runnable: Option<TaskId>,
) -> Option<Next> {
    if sched.config.stop_on_divergence {
        if let Some(step) = sched.chooser.diverged_step() {
            return Some(sched.stop_with(Outcome::Limit {
                which: "divergence".into(),
                value: step,
            }));
        }
    }
    if sched.config.log_steps {
        let preemption = still_runnable.is_some_and(|l| l != t);
        sched.preemptions += preemption as u32;
        sched.step_log.push(StepRec {
            task: t,
            label: tasks[t].pending.label,
            preemption,
        });
    }
    None
}

/// Put the parts of the tasks of `group` in sorted order at the group's
/// places: a state and its permutations of the group become one.
fn sort_within(parts: &mut std::collections::BTreeMap<TaskId, u128>, group: &[TaskId]) {
    let mut values: Vec<u128> = group.iter().filter_map(|t| parts.get(t).copied()).collect();
    values.sort_unstable();
    let mut places: Vec<TaskId> = group
        .iter()
        .copied()
        .filter(|t| parts.contains_key(t))
        .collect();
    places.sort_unstable();
    for (t, v) in places.into_iter().zip(values) {
        parts.insert(t, v);
    }
}

/// The scheduler's part of a named state: each task's run state, pending
/// step and slots (in the task's own part, with, under a preemption bound,
/// whether it is the task that may go on without a preemption or the one
/// that just yielded); each object's kind, lifetime and owner, and the
/// tasks waiting on it in the order they will be woken; the singletons and
/// what a task's exit wakes; tasks spawned and not yet started. Clocks are
/// left out: a search's choices do not depend on them (only `fair` reads
/// them); so are the step counts and the trace, which are the path's.
/// Returns whether the scheduler's state refers to one of `members` by its
/// id.
/// Every task has finished, or waits between two of its operations
/// ([`crate::entering_op`]), before its first, or idle.
pub(crate) fn every_task_between_ops(s: &Shared) -> bool {
    s.tasks
        .iter()
        .all(|t| matches!(t.run, RunState::Finished) || t.pending.between_ops)
}

pub(crate) fn hash_scheduler_state(s: &Shared, h: &mut StateHasher, members: &[TaskId]) -> bool {
    use std::hash::Hasher;
    h.write_usize(s.tasks.len());
    for (t, task) in s.tasks.iter().enumerate() {
        let p = h.task_part(t);
        match task.run {
            RunState::Runnable => p.write_u8(0),
            RunState::Blocked { on, idle } => {
                p.write_u8(1);
                p.write_u32(on.0);
                p.write_u8(idle as u8);
            }
            RunState::Finished => p.write_u8(2),
        }
        p.write_usize(task.pending.label.len());
        p.write(task.pending.label.as_bytes());
        p.write_u32(task.pending.obj.0);
        p.write_u8(task.daemon as u8);
        for word in s.slots.get(t).into_iter().flatten() {
            p.write_u64(*word);
        }
    }
    let mut refers = false;
    let mut task_ref = |h: &mut StateHasher, t: Option<TaskId>| {
        refers |= t.is_some_and(|t| members.contains(&t));
        h.write_usize(t.map_or(0, |t| t + 1));
    };
    h.write_usize(s.objects.len());
    for o in &s.objects {
        match o.state {
            ObjState::Live => h.write_u8(0),
            ObjState::Parked(why) => {
                h.write_u8(1);
                h.write_str(why);
            }
            ObjState::Freed { .. } => h.write_u8(2),
        }
        h.write_str(o.kind);
        h.write_u32(o.serial);
        h.write_u8(o.singleton as u8);
        task_ref(h, o.owner);
    }
    // Who a wake-up wakes first depends on the order of the waiters.
    for (slot, queue) in s.waiters.iter().enumerate().filter(|(_, q)| !q.is_empty()) {
        h.write_usize(slot);
        h.write_usize(queue.len());
        queue.iter().for_each(|t| task_ref(h, Some(*t)));
    }
    s.singletons.iter().for_each(|o| h.write_u32(o.0));
    s.exit_wakes.iter().for_each(|o| h.write_u32(o.0));
    h.write_usize(s.sched.spawned.len());
    s.sched
        .spawned
        .iter()
        .for_each(|(t, _)| task_ref(h, Some(*t)));
    refers
}

/// The checks a pick makes only when `Sched::next_check` comes, in the
/// order they apply: an abort the step asked for, tasks it spawned (from
/// a task: both are the run loop's), nothing runnable, then the limits.
/// `Some` when the pick ends here; otherwise the next check is set.
#[cold]
#[inline(never)]
pub(crate) fn look_before_pick(s: &mut Shared, from_task: bool) -> Option<Next> {
    if s.sched.abort.is_some() {
        if from_task {
            return Some(Next::Defer);
        }
        let abort = s.sched.abort.take().expect("checked");
        return Some(s.sched.stop_with(abort));
    }
    if from_task && !s.sched.spawned.is_empty() {
        return Some(Next::Defer);
    }
    if s.runnable.is_empty() {
        return Some(Next::Idle);
    }
    let sched = &mut s.sched;
    if let Some(limit) = sched.limit_reached(s.step, s.last_progress) {
        return Some(sched.stop_with(limit));
    }
    sched.next_check = sched.next_check_after(s.step, s.last_progress);
    None
}

impl Sched {
    /// Whether invariants run after every step.
    #[inline]
    pub(crate) fn checks_every_step(&self) -> bool {
        self.each_step > 0
    }

    /// End the run with `outcome` at the next pick (or in the run loop).
    pub(crate) fn abort_with(&mut self, outcome: Outcome) {
        self.abort = Some(outcome);
        self.next_check = 0;
    }

    /// Like [`Sched::abort_with`], unless an abort is already asked for.
    pub(crate) fn abort_unless_aborted(&mut self, outcome: Outcome) {
        self.abort.get_or_insert(outcome);
        self.next_check = 0;
    }

    /// Start task `id` with `f` before the next pick.
    pub(crate) fn start_later(&mut self, id: TaskId, f: TaskFn) {
        self.spawned.push((id, f));
        self.next_check = 0;
    }

    #[cold]
    pub(crate) fn stop_with(&mut self, outcome: Outcome) -> Next {
        self.stop = Some(outcome);
        Next::Stop
    }

    /// The first step after `step` at which a limit might be reached:
    /// the step limit; a livelock (progress only ever moves the bound
    /// later); the next look at the clock, every 4096 steps; and the next
    /// look at the heap, every 64 (the heap is not the run's to steer, only
    /// to stop, so when exactly it is looked at does not matter).
    pub(crate) fn next_check_after(&self, step: u64, last_progress: u64) -> u64 {
        let livelock = last_progress.saturating_add(self.config.livelock_steps) + 1;
        let clock = (step / 4096 + 1) * 4096;
        let heap = step + 64;
        self.config.max_steps.min(livelock).min(clock).min(heap)
    }

    /// The execution's limits, checked when `next_check` comes.
    #[cold]
    pub(crate) fn limit_reached(&self, step: u64, last_progress: u64) -> Option<Outcome> {
        let (which, value) = if step >= self.config.max_steps {
            ("steps", self.config.max_steps)
        } else if step - last_progress > self.config.livelock_steps {
            ("livelock", step)
        } else if let Some(bytes) = crate::mem::over_limit() {
            ("memory", bytes as u64)
        } else if step.is_multiple_of(4096) && self.past_deadline() {
            ("wall-time", step)
        } else if let Some(bytes) = step
            .is_multiple_of(4096)
            .then(crate::mem::resident_over_limit)
            .flatten()
        {
            ("memory", bytes as u64)
        } else {
            return None;
        };
        Some(Outcome::Limit {
            which: which.into(),
            value,
        })
    }

    pub(crate) fn past_deadline(&self) -> bool {
        self.config
            .deadline
            .is_some_and(|d| std::time::Instant::now() >= d)
    }
}

/// Where a task's scheduling point goes after its pick.
pub(crate) enum Decided {
    /// The task itself runs the next step.
    Same,
    /// It switches to this task, picked and charged.
    Task(TaskId),
    /// It hands the thread back to the run loop (`Sched::handoff` says
    /// how far it got).
    RunLoop,
}

/// Called by the running task at a scheduling point when invariants run
/// after every step (its pending operation set, no borrow held): do what
/// the run loop would do between this step and the next, in the same
/// order, then pick. Tasks it spawned, an abort, and the end of the run
/// are left to the run loop, which owns the tasks' stacks. (Without such
/// invariants the task calls [`decide_here`] in the borrow it already
/// holds.)
pub(crate) fn decide_in_task(core: &Core) -> Decided {
    {
        let s = core.shared.borrow();
        if !s.sched.spawned.is_empty() || s.sched.abort.is_some() {
            return Decided::RunLoop;
        }
    }
    if let Some(failed) = core.run_checks(false) {
        let sched = &mut core.shared.borrow_mut().sched;
        sched.stop = Some(failed);
        sched.handoff = Handoff::Stop;
        return Decided::RunLoop;
    }
    decide_here(&mut core.shared.borrow_mut(), true)
}

/// The pick of a task at its scheduling point, the state borrowed (the
/// step's invariants, if any, have run).
#[inline]
pub(crate) fn decide_here(s: &mut Shared, checked: bool) -> Decided {
    let next = pick_in(s, None, true);
    // Tested alone: "go on or switch" is as random as the schedule, and a
    // jump table over every answer would be mispredicted a second time.
    if next == Next::Same {
        return Decided::Same;
    }
    if let (true, Next::Run(t)) = (fiber::SYMMETRIC, next) {
        return Decided::Task(t);
    }
    hand_over(s, next, checked);
    Decided::RunLoop
}

/// Leave the run loop what a task's pick decided (anything but `Same`).
#[inline(never)]
pub(crate) fn hand_over(s: &mut Shared, next: Next, checked: bool) {
    let handoff = match next {
        Next::Run(t) => Handoff::Run(t),
        Next::Stop => Handoff::Stop,
        Next::Defer if checked => Handoff::Checked,
        Next::Defer => Handoff::Undecided,
        // Nothing runnable: the run loop ends the run.
        Next::Idle => Handoff::Checked,
        Next::Same => unreachable!("the task goes on"),
    };
    s.sched.handoff = handoff;
}

/// Charge task `t`'s pending operation and record the step; the task's
/// clock after it.
#[inline]
pub(crate) fn charge(s: &mut Shared, t: TaskId) -> u64 {
    s.current = t;
    s.step += 1;
    let (cpu, free_at) = earliest_free_cpu(&s.cpus);
    if let Some(steps) = &mut s.footprints {
        let pending = &s.tasks[t].pending;
        let f = Footprint::of_point(pending.obj, pending.local, pending.reads);
        steps.push((t, f));
    }
    let task = &mut s.tasks[t];
    let start = task.clock.max(free_at);
    // Saturating: a cost table may hold any number; the virtual-time limit
    // then ends the run.
    let clock = start.saturating_add(task.pending.cost);
    task.clock = clock;
    s.cpus[cpu] = clock;
    let e = Event {
        step: s.step,
        task: t,
        time: start,
        kind: EventKind::Step,
        label: task.pending.label,
        obj: task.pending.obj,
        value: 0,
    };
    s.trace.push(e);
    if !s.step_titles_wanted.is_empty() {
        give_step_title(s, t);
    }
    clock
}

/// The title task `t` asked for its next step goes to the step just
/// recorded.
fn give_step_title(s: &mut Shared, t: TaskId) {
    let Some(at) = s.step_titles_wanted.iter().position(|(task, _)| *task == t) else {
        return;
    };
    let (_, title) = s.step_titles_wanted.swap_remove(at);
    if let Some(events) = &s.trace.events {
        s.step_titles.push((events.len() - 1, title));
    }
}

/// Nothing is runnable: either every task is done (daemons idle) or the
/// rest wait forever.
pub(crate) fn quiescent(s: &Shared) -> Option<Outcome> {
    let stuck: Vec<TaskId> = s
        .tasks
        .iter()
        .enumerate()
        .filter(|(_, t)| match t.run {
            RunState::Blocked { idle, .. } => !idle || !t.daemon,
            _ => false,
        })
        .map(|(i, _)| i)
        .collect();
    if stuck.is_empty() {
        return None;
    }
    let link = |t: TaskId| {
        let on = match s.tasks[t].run {
            RunState::Blocked { on, .. } => on,
            _ => ObjId::NONE,
        };
        WaitLink {
            task: s.task_names[t].clone(),
            resource: s.object_name(on),
        }
    };
    let waiting = stuck.iter().map(|t| link(*t)).collect();
    Some(Outcome::Deadlock {
        cycle: wait_cycle(s, &stuck).into_iter().map(link).collect(),
        waiting,
    })
}

/// The CPU that frees up first (the lowest-numbered on a tie), and when.
#[inline]
pub(crate) fn earliest_free_cpu(cpus: &[u64]) -> (usize, u64) {
    if let [a, b] = *cpus {
        // The default machine: two CPUs, no loop.
        return if b < a { (1, b) } else { (0, a) };
    }
    let mut best = (0, cpus[0]);
    for (i, &free_at) in cpus.iter().enumerate() {
        if free_at < best.1 {
            best = (i, free_at);
        }
    }
    best
}

/// Follow task → awaited object → its owner until a task repeats.
pub(crate) fn wait_cycle(s: &Shared, stuck: &[TaskId]) -> Vec<TaskId> {
    for &start in stuck {
        let mut path: Vec<TaskId> = Vec::new();
        let mut t = start;
        loop {
            if let Some(pos) = path.iter().position(|x| *x == t) {
                return path[pos..].to_vec();
            }
            path.push(t);
            let RunState::Blocked { on, .. } = s.tasks[t].run else {
                break;
            };
            match s.objects.get(on.0 as usize).and_then(|o| o.owner) {
                Some(owner) => t = owner,
                None => break,
            }
        }
    }
    Vec::new()
}
