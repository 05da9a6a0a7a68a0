//! One execution: spawn tasks, run them under a schedule until they finish,
//! something breaks, or a limit is reached.

use crate::cost::ResolvedCosts;
use crate::fiber::{self, stack_size_of, Back, Fibers, TaskFn, TaskStack, STACKS};
use crate::footprint::Footprint;
use crate::obj::ObjId;
use crate::outcome::Outcome;
use crate::runq::RunQueue;
use crate::sched::{
    install, pick_in, Core, ExecConfig, Handoff, Next, Sched, Shared, StepRec, IN_TASK,
};
use crate::statecache::{Probe, StateHasher};
use crate::strategy::dpor::{DporRun, Plan};
use crate::strategy::RunLog;
use crate::strategy::{ChoicePoint, Chooser};
use crate::task::{new_task, RunState, StateCell, StateMut};
use crate::token::Schedule;
use crate::trace::{Event, Trace};
use crate::TaskId;
use corosensei::stack::Stack;
use std::any::Any;
use std::cell::RefCell;
use std::panic;

/// Stack left when a task is stopped with outcome `limit` (stack).
const STACK_RED_ZONE: usize = 16 * 1024;

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
    /// What the model called some steps, by index in `events`
    /// ([`crate::title_next_step`]): a scenario op's step by the op.
    pub step_titles: std::collections::BTreeMap<usize, String>,
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
            step_titles: std::collections::BTreeMap::new(),
            footprints: Vec::new(),
            dpor: None,
        }
    }
}

/// An execution being set up, then run once.
pub struct Execution {
    core: Box<Core>,
    /// The tasks' stacks (or coroutines: see `fiber`).
    fibers: Fibers,
}

thread_local! {
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
            titles: std::collections::BTreeMap::new(),
            step_titles_wanted: Vec::new(),
            step_titles: Vec::new(),
            serials: Vec::new(),
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
                interchangeable: RefCell::new(Vec::new()),
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
        let id = s.add_task(name.into(), new_task(daemon, 0))?;
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
                install(std::ptr::null());
                self.0.shared.borrow_mut().setting_up = false;
            }
        }
        self.shared().setting_up = true;
        install(&*self.core);
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

    /// Declare `tasks` interchangeable: they run the same code from the
    /// same start, so a stateful search takes states that differ only by
    /// a permutation of them as one (see `statecache`). What the model
    /// names of each goes in its part ([`StateHasher::task`]).
    pub fn interchangeable(&mut self, tasks: impl IntoIterator<Item = TaskId>) {
        let group: Vec<TaskId> = tasks.into_iter().collect();
        if group.len() > 1 {
            self.core.interchangeable.borrow_mut().push(group);
        }
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
        let mut spawned = spawned.into_iter().enumerate();
        while let Some((started, (id, f))) = spawned.next() {
            // Each task touches its stack as it starts: the memory bound is
            // looked at every 64 of them, a world of thousands starting at
            // once.
            let held = started
                .is_multiple_of(64)
                .then(crate::mem::held_over_limit)
                .flatten();
            if let Some(bytes) = held {
                self.shared().sched.abort_unless_aborted(Outcome::Limit {
                    which: "memory".into(),
                    value: bytes as u64,
                });
                self.core.outside_tasks(|| drop((f, spawned)));
                return;
            }
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
            let shared: *const StateCell<Shared> = &self.core.shared;
            // Where a coroutine leaves its handle when it starts.
            let set_handle = move |h| {
                // SAFETY: the execution's state outlives its tasks.
                unsafe { (*shared).borrow_mut().tasks[id].fiber = h };
            };
            let handle = self
                .fibers
                .start(id, stack, f, &self.core.channel, set_handle);
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
                install(std::ptr::null());
            }
        }
        install(&*self.core);
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
                .map(|i| match s.titles.get(&(i as u32)) {
                    Some(title) => title.clone(),
                    None => s.object_name(ObjId(i as u32)),
                })
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
            step_titles: std::mem::take(&mut s.step_titles).into_iter().collect(),
            footprints: s.footprints.take().unwrap_or_default(),
            dpor,
        }
    }

    /// Resume tasks one step at a time. A task that reaches its next
    /// scheduling point usually picks its successor itself (see
    /// [`decide_in_task`](crate::sched::decide_in_task)); what it left undone is done here, in the same
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
        let stacks = self.fibers.unwind_all(
            &core.channel,
            |t| core.shared.borrow().tasks[t].fiber,
            |t| core.shared.borrow().tasks[t].returns_at_teardown,
        );
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
