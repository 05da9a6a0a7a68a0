//! One execution: spawn tasks, run them under a schedule until they finish,
//! something breaks, or a limit is reached.

use crate::cost::{CostTable, ResolvedCosts};
use crate::dpor::{DporRun, Plan, RunLog};
use crate::fiber::{self, Back, Fibers};
use crate::footprint::Footprint;
use crate::outcome::{Outcome, WaitLink};
use crate::rt::{self, ObjId, RunState, Shared, StateCell, StateMut, TaskFn, TaskState};
use crate::runq::RunQueue;
use crate::statecache::{Probe, StateHasher};
use crate::strategy::{ChoicePoint, Chooser, PickCtx};
use crate::token::Schedule;
use crate::trace::{Event, EventKind, Trace};
use crate::TaskId;
use corosensei::stack::{DefaultStack, Stack};
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::panic;
use std::sync::atomic::{AtomicUsize, Ordering};

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
    fn new(size: usize) -> Result<TaskStack, String> {
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

/// Stack left when a task is stopped with outcome `limit` (stack).
const STACK_RED_ZONE: usize = 16 * 1024;

/// Stack a task must have left, above the red zone, to pick its successor
/// and run the invariants on its own stack; with less it switches out.
pub(crate) const DECIDE_ROOM: usize = 32 * 1024;

fn stack_size_of(s: &TaskStack) -> usize {
    s.base().get() - s.limit().get()
}
type Check = Box<dyn FnMut() -> Option<Outcome>>;
type Namer = Box<dyn FnMut(&mut StateHasher) -> bool>;

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
    /// [`ExecReport::footprints`].
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

/// What one execution did.
#[derive(Debug, Clone)]
pub struct ExecReport {
    pub outcome: Outcome,
    /// Scheduling points executed.
    pub steps: u64,
    /// Scheduling points with two or more runnable tasks: the points where
    /// a strategy chooses (PCT spreads its change points over these).
    pub choice_points: u64,
    /// Latest clock of a non-daemon task when the execution ended.
    pub virtual_ns: u64,
    pub trace_hash: u64,
    pub events: Option<Vec<Event>>,
    pub task_names: Vec<String>,
    /// Decisions among two or more runnable tasks (explicit schedules only).
    pub choices: Vec<ChoicePoint>,
    /// For explicit schedules: the choice index (`Choices`) or the step
    /// (`Segments`) where the recorded schedule no longer fitted.
    pub diverged_at: Option<usize>,
    /// Which task ran each step, when asked for (`log_steps`).
    pub step_log: Vec<StepRec>,
    /// Object names, by id, when events were recorded.
    pub object_names: Vec<String>,
    /// Each step's task and footprint, when asked for
    /// ([`ExecConfig::footprints`]).
    pub footprints: Vec<(TaskId, Footprint)>,
    /// What a search execution saw of its steps.
    pub(crate) dpor: Option<RunLog>,
}

impl ExecReport {
    /// The report of an execution that ended with `outcome` before it
    /// could report anything else (stopped from outside its thread).
    pub fn ended(outcome: Outcome) -> ExecReport {
        ExecReport {
            outcome,
            steps: 0,
            choice_points: 0,
            virtual_ns: 0,
            trace_hash: 0,
            events: None,
            task_names: Vec::new(),
            choices: Vec::new(),
            diverged_at: None,
            step_log: Vec::new(),
            object_names: Vec::new(),
            footprints: Vec::new(),
            dpor: None,
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

/// An execution being set up, then run once.
pub struct Execution {
    core: Box<Core>,
    /// The tasks' stacks (or coroutines: see `fiber`).
    fibers: Fibers,
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
    checkers: RefCell<Vec<(bool, Check)>>,
    /// How the model names its state ([`Execution::name_state`]).
    namer: RefCell<Option<Namer>>,
    /// A stateful search's visited set (see `statecache`).
    probe: RefCell<Option<Probe>>,
    /// What the tasks and the run loop exchange when they switch.
    pub(crate) channel: fiber::Channel,
}

/// The scheduler's side of an execution.
pub(crate) struct Sched {
    chooser: Chooser,
    /// How many checkers run after every step.
    each_step: usize,
    /// No limit can be reached before this step (see `limit_reached`).
    next_check: u64,
    config: ExecConfig,
    step_log: Vec<StepRec>,
    /// An end of the run a step asked for (an abort), taken at the next
    /// pick or by the run loop. Set only through [`Sched::abort_with`]
    /// and [`Sched::abort_unless_aborted`], which make that pick look.
    abort: Option<Outcome>,
    /// Tasks spawned by the step running now, started by the run loop
    /// before the next pick; added only through [`Sched::start_later`].
    spawned: Vec<(TaskId, TaskFn)>,
    /// How far the task that last ran got in deciding its successor.
    handoff: Handoff,
    /// Why the execution ends, once something has ended it (kept here
    /// rather than returned, so that the common step moves no outcome).
    stop: Option<Outcome>,
    /// Picks among two or more runnable tasks so far.
    choice_points: u64,
    /// Steps so far that switched away from a task that could go on
    /// (counted where steps are logged).
    preemptions: u32,
    /// A pick also checks for divergence or logs its step (the config's
    /// `stop_on_divergence` or `log_steps`): one test on the common step.
    replaying: bool,
}

/// What the task that switched out left for the run loop to do.
#[derive(Clone, Copy)]
enum Handoff {
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
enum Next {
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

thread_local! {
    static STACKS: RefCell<Vec<TaskStack>> = const { RefCell::new(Vec::new()) };
    static IN_TASK: Cell<bool> = const { Cell::new(false) };
    static PANIC_AT: RefCell<Option<String>> = const { RefCell::new(None) };
}

fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if IN_TASK.with(|t| t.get()) {
                let at = info
                    .location()
                    .map(|l| format!("{}:{}", l.file(), l.line()));
                PANIC_AT.with(|p| *p.borrow_mut() = at);
            } else {
                previous(info);
            }
        }));
    });
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    let msg = if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-string payload".to_string()
    };
    match PANIC_AT.with(|p| p.borrow_mut().take()) {
        Some(at) => format!("{msg} (at {at})"),
        None => msg,
    }
}

impl Execution {
    pub fn new(config: ExecConfig, schedule: &Schedule) -> Self {
        let costs = ResolvedCosts::new(&config.costs);
        let cpus = vec![0; config.cpus.max(1) as usize];
        let trace = Trace::new(config.record);
        let footprints = config.footprints.then(Vec::new);
        let chooser = Chooser::new(schedule, config.lenient_segments);
        let indexable = !chooser.reads_list();
        let replaying = config.stop_on_divergence || config.log_steps;
        let sched = Sched {
            chooser,
            each_step: 0,
            next_check: 0,
            config,
            step_log: Vec::new(),
            abort: None,
            spawned: Vec::new(),
            handoff: Handoff::Undecided,
            stop: None,
            choice_points: 0,
            preemptions: 0,
            replaying,
        };
        static SERIALS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let shared = Shared {
            serial: SERIALS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            yielder: None,
            sched,
            tasks: Vec::new(),
            task_names: Vec::new(),
            slots: Vec::new(),
            current: 0,
            step: 0,
            costs,
            cpus,
            objects: Vec::new(),
            serials: BTreeMap::new(),
            singletons: [ObjId::NONE; crate::MAX_SINGLETONS],
            exit_wakes: Vec::new(),
            waiters: Vec::new(),
            trace,
            teardown: false,
            setting_up: false,
            in_task: false,
            runnable: RunQueue::new(indexable),
            live: 0,
            host_locks: Vec::new(),
            last_progress: 0,
            footprints,
        };
        Execution {
            core: Box::new(Core {
                shared: StateCell::new(shared),
                checkers: RefCell::new(Vec::new()),
                namer: RefCell::new(None),
                probe: RefCell::new(None),
                channel: fiber::Channel::default(),
            }),
            fibers: Fibers::default(),
        }
    }

    fn shared(&self) -> StateMut<'_, Shared> {
        self.core.shared.borrow_mut()
    }

    /// Add a task before the run starts. Daemon tasks (kworkers) may stay
    /// blocked in an idle wait when everything else has finished. `None`
    /// when [`limits::TASKS`](crate::limits::TASKS) tasks exist already:
    /// the run then ends with outcome `limit` (tasks) at once.
    pub fn spawn(
        &mut self,
        name: impl Into<String>,
        daemon: bool,
        f: impl FnOnce() + 'static,
    ) -> Option<TaskId> {
        let mut s = self.shared();
        let id = s.add_task(name.into(), rt::new_task(daemon, 0))?;
        s.sched.start_later(id, Box::new(f));
        Some(id)
    }

    /// Build the world: inside `f`, [`crate::new_object`] registers objects
    /// and [`crate::spawn`] adds tasks of this execution; nothing runs yet.
    pub fn setup<R>(&mut self, f: impl FnOnce() -> R) -> R {
        /// Leaves set-up mode even if `f` panics.
        struct Done<'a>(&'a Core);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                rt::install(std::ptr::null());
                self.0.shared.borrow_mut().setting_up = false;
            }
        }
        self.shared().setting_up = true;
        rt::install(&*self.core);
        let _done = Done(&self.core);
        f()
    }

    /// Exhaustive search: run `plan` (and keep the steps' footprints).
    pub(crate) fn set_plan(&mut self, plan: Plan) {
        let mut s = self.shared();
        s.sched.chooser = Chooser::Dpor(Box::new(DporRun::new(plan)));
        s.runnable.set_indexable(false);
        s.footprints.get_or_insert_with(Vec::new);
    }

    /// An invariant checked after every step.
    pub fn check_each_step(&mut self, f: impl FnMut() -> Option<Outcome> + 'static) {
        self.core.checkers.borrow_mut().push((false, Box::new(f)));
        self.shared().sched.each_step += 1;
    }

    /// How the model names its state, for a search that does not explore
    /// a state twice (see `statecache`): `f` writes every field the
    /// future depends on and returns true, or returns false where part
    /// of the state is hidden (on a task's stack, mid-operation). Called
    /// after steps, outside every task, after the invariants.
    pub fn name_state(&mut self, f: impl FnMut(&mut StateHasher) -> bool + 'static) {
        *self.core.namer.borrow_mut() = Some(Box::new(f));
    }

    /// A stateful search: end the execution at a state seen before.
    pub(crate) fn set_probe(&mut self, probe: Probe) {
        *self.core.probe.borrow_mut() = Some(probe);
        // The probe runs where the invariants do, after every step.
        self.shared().sched.each_step += 1;
    }

    /// An invariant checked once, when every task has finished and the
    /// daemons are idle.
    pub fn check_at_end(&mut self, f: impl FnMut() -> Option<Outcome> + 'static) {
        self.core.checkers.borrow_mut().push((true, Box::new(f)));
    }

    fn start_spawned(&mut self) {
        let spawned: Vec<(TaskId, TaskFn)> = std::mem::take(&mut self.shared().sched.spawned);
        let size = self.core.shared.borrow().sched.config.stack_size;
        let mut spawned = spawned.into_iter();
        while let Some((id, f)) = spawned.next() {
            let pooled = STACKS.with(|p| {
                let mut pool = p.borrow_mut();
                let i = pool.iter().position(|s| stack_size_of(s) >= size)?;
                Some(pool.swap_remove(i))
            });
            let stack = pooled.map(Ok).unwrap_or_else(|| TaskStack::new(size));
            let stack = match stack {
                Ok(s) => s,
                Err(_) => {
                    // The process's resource, not the model's: the value is
                    // the task that found no stack.
                    self.shared().sched.abort_unless_aborted(Outcome::Limit {
                        which: "stacks".into(),
                        value: id as u64,
                    });
                    // What the tasks that never ran hold is dropped here, on
                    // the run loop's stack: a scheduling point in a
                    // destructor must find no task running.
                    self.core.outside_tasks(|| drop((f, spawned)));
                    return;
                }
            };
            // A task is stopped when its stack is this close to full; the
            // guard page below would otherwise kill the whole process.
            let red_zone = STACK_RED_ZONE.min(size / 4);
            let stack_limit = stack.limit().get() + red_zone;
            let handle = self
                .fibers
                .start(id, stack, f, &self.core.channel, &self.core.shared);
            let mut s = self.shared();
            let task = &mut s.tasks[id];
            task.stack_limit = stack_limit;
            task.fiber = handle;
        }
    }

    /// Resume task `t` until a task (`t`, or one it switched to) hands
    /// the thread back; `Some` if that task panicked.
    fn resume(&mut self, t: TaskId) -> Option<Outcome> {
        let handle = self.shared().tasks[t].fiber;
        let Back::Finished { task, panic } = self.fibers.resume(&self.core.channel, t, handle)
        else {
            return None;
        };
        // Its stack is free for another task, whether it returned or not.
        if let Some(stack) = self.fibers.take_stack(task) {
            STACKS.with(|p| p.borrow_mut().push(stack));
        }
        let Some(payload) = panic else {
            self.shared().exited(task);
            return None;
        };
        let message = panic_message(&*payload);
        // A payload may be any value, its destructor any code.
        self.core.outside_tasks(|| drop(payload));
        let mut s = self.shared();
        s.set_not_runnable(task, RunState::Finished);
        s.note("panic", ObjId::NONE, 0);
        Some(Outcome::Panic {
            task: s.task_names[task].clone(),
            message,
        })
    }

    /// Run to the end. The execution is consumed; its tasks are unwound.
    pub fn run(mut self) -> ExecReport {
        install_panic_hook();
        /// Uninstalls the execution even if the run loop panics, before
        /// the execution (and the tasks' stacks) is dropped: task code
        /// unwound then must not reach freed state.
        struct Installed;
        impl Drop for Installed {
            fn drop(&mut self) {
                IN_TASK.with(|f| f.set(false));
                rt::install(std::ptr::null());
            }
        }
        rt::install(&*self.core);
        let installed = Installed;
        // Task code may run from here until tear-down; only the invariants
        // run outside it (see `Core::run_checks`).
        self.shared().in_task = true;
        IN_TASK.with(|f| f.set(true));
        let outcome = self.run_loop();
        IN_TASK.with(|f| f.set(false));
        self.shared().in_task = false;
        self.teardown();
        drop(installed);
        let mut s = self.core.shared.borrow_mut();
        let sched = &mut s.sched;
        let crate::strategy::StrategyLog {
            choices,
            diverged_choice: mut diverged_at,
            search: dpor,
        } = sched.chooser.take_log();
        if let Some(step) = sched.chooser.diverged_step() {
            diverged_at = Some(step as usize);
        }
        let step_log = std::mem::take(&mut sched.step_log);
        let virtual_ns = s
            .tasks
            .iter()
            .filter(|t| !t.daemon)
            .map(|t| t.clock)
            .max()
            .unwrap_or(0);
        let object_names = if s.trace.events.is_some() {
            (0..s.objects.len())
                .map(|i| s.object_name(ObjId(i as u32)))
                .collect()
        } else {
            Vec::new()
        };
        ExecReport {
            outcome,
            steps: s.step,
            choice_points: s.sched.choice_points,
            virtual_ns,
            trace_hash: s.trace.hash,
            events: s.trace.events.take(),
            task_names: s.task_names.clone(),
            choices,
            diverged_at,
            step_log,
            object_names,
            footprints: s.footprints.take().unwrap_or_default(),
            dpor,
        }
    }

    /// Resume tasks one step at a time. A task that reaches its next
    /// scheduling point usually picks its successor itself (see
    /// [`decide_in_task`]); what it left undone is done here, in the same
    /// order, so the schedule and the trace do not depend on where a
    /// decision was made.
    fn run_loop(&mut self) -> Outcome {
        let mut next = self.start_and_pick(None);
        loop {
            let Some(t) = next else {
                return self.shared().sched.stop.take().unwrap_or(Outcome::Pass);
            };
            if let Some(o) = self.resume(t) {
                return o;
            }
            // The task that handed the thread back ran the last step.
            let t = self.shared().current;
            let handoff = std::mem::replace(&mut self.shared().sched.handoff, Handoff::Undecided);
            next = match handoff {
                Handoff::Run(t) => Some(t),
                Handoff::Stop => None,
                Handoff::Checked => self.start_and_pick(Some(t)),
                Handoff::Undecided => match self.core.after_step() {
                    Some(o) => return o,
                    None => self.start_and_pick(Some(t)),
                },
            };
        }
    }

    /// Start the tasks the last step spawned, then pick and charge the
    /// next step; `None` when the run ends (with `Sched::stop`).
    fn start_and_pick(&mut self, last: Option<TaskId>) -> Option<TaskId> {
        if !self.core.shared.borrow().sched.spawned.is_empty() {
            self.start_spawned();
        }
        // The pick's borrow ends before the end of the run borrows again.
        let next = pick_in(&mut self.shared(), last, false);
        match next {
            Next::Run(t) => Some(t),
            Next::Stop => None,
            Next::Same | Next::Defer => unreachable!("only a task's own pick continues or defers"),
            Next::Idle => {
                let end = self.core.end_of_run();
                self.shared().sched.stop = Some(end);
                None
            }
        }
    }

    fn teardown(&mut self) {
        self.shared().teardown = true;
        let core = &self.core;
        IN_TASK.with(|f| f.set(true));
        let stacks = self
            .fibers
            .unwind_all(&core.channel, |t| core.shared.borrow().tasks[t].fiber);
        IN_TASK.with(|f| f.set(false));
        let _ = STACKS.try_with(|p| p.borrow_mut().extend(stacks));
    }
}

/// A run that did not reach its tear-down (the run loop itself panicked:
/// an invariant it checked, say) still unwinds its tasks, so what they
/// hold is dropped before their stacks are unmapped. After a tear-down
/// there is nothing left to unwind.
impl Drop for Execution {
    fn drop(&mut self) {
        self.teardown();
    }
}

impl Core {
    /// After a step: an abort the step asked for, or a failed invariant.
    fn after_step(&self) -> Option<Outcome> {
        if let Some(o) = self.shared.borrow_mut().sched.abort.take() {
            return Some(o);
        }
        self.run_checks(false)
    }

    /// Nothing is runnable: a deadlock, or the end-of-run checks.
    fn end_of_run(&self) -> Outcome {
        if let Some(deadlock) = quiescent(&self.shared.borrow()) {
            return deadlock;
        }
        self.run_checks(true).unwrap_or(Outcome::Pass)
    }

    /// Run the invariants checked after every step (or at the end). They
    /// see the world from outside any task: model code they call takes no
    /// scheduling points, and a panic in one is not a task's.
    fn run_checks(&self, at_end: bool) -> Option<Outcome> {
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
    fn state_seen_before(&self) -> bool {
        let guard = self.probe.borrow();
        let Some(probe) = guard.as_ref() else {
            return false;
        };
        let (preemptions, context) = {
            let s = self.shared.borrow();
            if s.sched.choice_points < probe.prefix_len {
                return false;
            }
            // Without a bound, every visit has the whole budget.
            let preemptions = if probe.bounded {
                s.sched.preemptions
            } else {
                0
            };
            (preemptions, state_context(&s, probe.bounded))
        };
        let mut h = StateHasher::new();
        let named = match self.namer.borrow_mut().as_mut() {
            Some(name) => name(&mut h),
            None => false,
        };
        if !named {
            return false;
        }
        hash_scheduler_state(&self.shared.borrow(), &mut h);
        std::hash::Hasher::write_u64(&mut h, context);
        let state = h.finish128();
        let seen = probe.cache.borrow_mut().seen_before(state, preemptions);
        seen
    }

    /// Run `f` as code outside every task (from the run loop, or at a
    /// task's scheduling point): its scheduling points are no-ops, and a
    /// panic in it is not a task's.
    fn outside_tasks<R>(&self, f: impl FnOnce() -> R) -> R {
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
fn pick_in(s: &mut Shared, last: Option<TaskId>, from_task: bool) -> Next {
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
fn continuing_after_yield(
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
fn after_yield(runnable: &[TaskId], yielder: TaskId) -> TaskId {
    let after = runnable.iter().copied().find(|&t| t > yielder);
    let wrapped = runnable.iter().copied().find(|&t| t != yielder);
    after.or(wrapped).unwrap_or(yielder)
}

/// What a replay asks of a pick besides the pick (`Sched::replaying`):
/// stop where its schedule no longer fits, and log each step's task.
#[cold]
#[inline(never)]
fn replay_bookkeeping(
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

/// What decides, beside the state, which choices at the next pick are
/// preemptions (under a bound): the task that may go on without one.
fn state_context(s: &Shared, bounded: bool) -> u64 {
    if !bounded {
        return 0;
    }
    let last = Some(s.current).filter(|&l| matches!(s.tasks[l].run, RunState::Runnable));
    let code = |t: Option<TaskId>| t.map_or(0, |t| t as u64 + 1);
    code(last) | code(s.yielder) << 32
}

/// The scheduler's part of a named state: each task's run state, pending
/// step and slots, and each object's lifetime and owner. Clocks are left
/// out: a search's choices do not depend on them (only `fair` reads them).
fn hash_scheduler_state(s: &Shared, h: &mut StateHasher) {
    use std::hash::Hasher;
    h.write_usize(s.tasks.len());
    for (t, task) in s.tasks.iter().enumerate() {
        match task.run {
            RunState::Runnable => h.write_u8(0),
            RunState::Blocked { on, idle } => {
                h.write_u8(1);
                h.write_u32(on.0);
                h.write_u8(idle as u8);
            }
            RunState::Finished => h.write_u8(2),
        }
        h.write_str(task.pending.label);
        h.write_u32(task.pending.obj.0);
        for word in s.slots.get(t).into_iter().flatten() {
            h.write_u64(*word);
        }
    }
    h.write_usize(s.objects.len());
    for o in &s.objects {
        match o.state {
            rt::ObjState::Live => h.write_u8(0),
            rt::ObjState::Parked(why) => {
                h.write_u8(1);
                h.write_str(why);
            }
            rt::ObjState::Freed { .. } => h.write_u8(2),
        }
        h.write_u64(o.owner.map_or(0, |t| t as u64 + 1));
    }
}

/// The checks a pick makes only when `Sched::next_check` comes, in the
/// order they apply: an abort the step asked for, tasks it spawned (from
/// a task: both are the run loop's), nothing runnable, then the limits.
/// `Some` when the pick ends here; otherwise the next check is set.
#[cold]
#[inline(never)]
fn look_before_pick(s: &mut Shared, from_task: bool) -> Option<Next> {
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
    fn stop_with(&mut self, outcome: Outcome) -> Next {
        self.stop = Some(outcome);
        Next::Stop
    }

    /// The first step after `step` at which a limit might be reached:
    /// the step limit; a livelock (progress only ever moves the bound
    /// later); the next look at the clock, every 4096 steps; and the next
    /// look at the heap, every 64 (the heap is not the run's to steer, only
    /// to stop, so when exactly it is looked at does not matter).
    fn next_check_after(&self, step: u64, last_progress: u64) -> u64 {
        let livelock = last_progress.saturating_add(self.config.livelock_steps) + 1;
        let clock = (step / 4096 + 1) * 4096;
        let heap = step + 64;
        self.config.max_steps.min(livelock).min(clock).min(heap)
    }

    /// The execution's limits, checked when `next_check` comes.
    #[cold]
    fn limit_reached(&self, step: u64, last_progress: u64) -> Option<Outcome> {
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

    fn past_deadline(&self) -> bool {
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
fn hand_over(s: &mut Shared, next: Next, checked: bool) {
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
fn charge(s: &mut Shared, t: TaskId) -> u64 {
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
    clock
}

/// Nothing is runnable: either every task is done (daemons idle) or the
/// rest wait forever.
fn quiescent(s: &Shared) -> Option<Outcome> {
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
fn earliest_free_cpu(cpus: &[u64]) -> (usize, u64) {
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
fn wait_cycle(s: &Shared, stuck: &[TaskId]) -> Vec<TaskId> {
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
