//! One execution: spawn tasks, run them under a schedule until they finish,
//! something breaks, or a limit is reached.

use crate::cost::{CostTable, ResolvedCosts};
use crate::outcome::{Outcome, WaitLink};
use crate::rt::{self, ObjId, RunState, Shared, TaskFn};
use crate::strategy::{ChoicePoint, Chooser, PickCtx};
use crate::token::Schedule;
use crate::trace::{Event, EventKind, Trace};
use crate::TaskId;
use corosensei::stack::{DefaultStack, Stack};
use corosensei::{Coroutine, CoroutineResult};
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::panic::{self, AssertUnwindSafe};

type Co = Coroutine<(), (), (), DefaultStack>;

/// Stack left when a task is stopped with outcome `limit` (stack).
const STACK_RED_ZONE: usize = 16 * 1024;

fn stack_size_of(s: &DefaultStack) -> usize {
    s.base().get() - s.limit().get()
}
type Check = Box<dyn FnMut() -> Option<Outcome>>;

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
    /// Bytes of stack per task (its coroutine). Model code is shallow; a
    /// task that nears the end is stopped with outcome `limit` (stack).
    pub stack_size: usize,
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
            livelock_steps: 1_000_000,
            stack_size: 128 * 1024,
        }
    }
}

/// What one execution did.
#[derive(Debug, Clone)]
pub struct ExecReport {
    pub outcome: Outcome,
    /// Scheduling points executed.
    pub steps: u64,
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
    shared: Box<RefCell<Shared>>,
    coroutines: Vec<Option<Co>>,
    chooser: Chooser,
    checkers: Vec<(bool, Check)>,
    config: ExecConfig,
    step_log: Vec<StepRec>,
}

thread_local! {
    static STACKS: RefCell<Vec<DefaultStack>> = const { RefCell::new(Vec::new()) };
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
        let mut shared = Shared {
            tasks: Vec::new(),
            current: 0,
            step: 0,
            costs: ResolvedCosts::new(&config.costs),
            cpus: vec![0; config.cpus.max(1) as usize],
            objects: Vec::new(),
            serials: BTreeMap::new(),
            waiters: Vec::new(),
            abort: None,
            trace: Trace::new(config.record),
            spawned: Vec::new(),
            teardown: false,
            setting_up: false,
            in_task: false,
            runnable: Vec::new(),
            last_progress: 0,
        };
        let rcu = shared.new_object("rcu");
        debug_assert_eq!(rcu, ObjId::RCU);
        Execution {
            shared: Box::new(RefCell::new(shared)),
            coroutines: Vec::new(),
            chooser: Chooser::new(schedule, config.lenient_segments),
            checkers: Vec::new(),
            config,
            step_log: Vec::new(),
        }
    }

    /// Add a task before the run starts. Daemon tasks (kworkers) may stay
    /// blocked in an idle wait when everything else has finished.
    pub fn spawn(
        &mut self,
        name: impl Into<String>,
        daemon: bool,
        f: impl FnOnce() + 'static,
    ) -> TaskId {
        let mut s = self.shared.borrow_mut();
        let id = s.add_task(rt::new_task(name.into(), daemon, 0));
        s.spawned.push((id, Box::new(f)));
        id
    }

    /// Build the world: inside `f`, [`crate::new_object`] registers objects
    /// and [`crate::spawn`] adds tasks of this execution; nothing runs yet.
    pub fn setup<R>(&mut self, f: impl FnOnce() -> R) -> R {
        /// Leaves set-up mode even if `f` panics.
        struct Done<'a>(&'a RefCell<Shared>);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                rt::install(std::ptr::null());
                self.0.borrow_mut().setting_up = false;
            }
        }
        self.shared.borrow_mut().setting_up = true;
        rt::install(&*self.shared);
        let _done = Done(&self.shared);
        f()
    }

    /// Exhaustive search: the sleep set in force once the prefix of an
    /// explicit schedule has been replayed.
    pub(crate) fn set_sleep_after_prefix(&mut self, sleep: Vec<(TaskId, ObjId)>) {
        self.chooser.set_sleep_after_prefix(sleep);
    }

    /// An invariant checked after every step.
    pub fn check_each_step(&mut self, f: impl FnMut() -> Option<Outcome> + 'static) {
        self.checkers.push((false, Box::new(f)));
    }

    /// An invariant checked once, when every task has finished and the
    /// daemons are idle.
    pub fn check_at_end(&mut self, f: impl FnMut() -> Option<Outcome> + 'static) {
        self.checkers.push((true, Box::new(f)));
    }

    fn start_spawned(&mut self) {
        let spawned: Vec<(TaskId, TaskFn)> = std::mem::take(&mut self.shared.borrow_mut().spawned);
        for (id, f) in spawned {
            let size = self.config.stack_size;
            let pooled = STACKS.with(|p| {
                let mut pool = p.borrow_mut();
                let i = pool.iter().position(|s| stack_size_of(s) >= size)?;
                Some(pool.swap_remove(i))
            });
            let stack = pooled.map(Ok).unwrap_or_else(|| DefaultStack::new(size));
            let stack = match stack {
                Ok(s) => s,
                Err(e) => {
                    self.shared.borrow_mut().abort = Some(Outcome::Limit {
                        which: format!("memory (no stack for a new task: {e})"),
                        value: self.coroutines.len() as u64,
                    });
                    return;
                }
            };
            // A task is stopped when its stack is this close to full; the
            // guard page below would otherwise kill the whole process.
            let limit = stack.limit().get() + STACK_RED_ZONE.min(size / 4);
            self.shared.borrow_mut().tasks[id].stack_limit = limit;
            let shared: *const RefCell<Shared> = &*self.shared;
            let co = Coroutine::with_stack(stack, move |y: &corosensei::Yielder<(), ()>, ()| {
                // SAFETY: see rt::with; the state outlives every coroutine.
                unsafe { (*shared).borrow_mut().tasks[id].yielder = y as *const _ };
                f();
            });
            if self.coroutines.len() <= id {
                self.coroutines.resize_with(id + 1, || None);
            }
            self.coroutines[id] = Some(co);
        }
    }

    /// Charge the chosen task's pending operation and record the step.
    fn charge(&mut self, t: TaskId) -> Option<Outcome> {
        let mut s = self.shared.borrow_mut();
        let s = &mut *s;
        s.current = t;
        s.step += 1;
        let (cpu, free_at) = earliest_free_cpu(&s.cpus);
        let task = &mut s.tasks[t];
        let start = task.clock.max(free_at);
        task.clock = start + task.pending.cost;
        s.cpus[cpu] = task.clock;
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
        (s.tasks[t].clock > self.config.max_virtual_ns).then(|| Outcome::Limit {
            which: "virtual-time".into(),
            value: self.config.max_virtual_ns,
        })
    }

    fn resume(&mut self, t: TaskId) -> Option<Outcome> {
        let co = self.coroutines[t]
            .as_mut()
            .expect("runnable task has a coroutine");
        IN_TASK.with(|f| f.set(true));
        self.shared.borrow_mut().in_task = true;
        let result = panic::catch_unwind(AssertUnwindSafe(|| co.resume(())));
        self.shared.borrow_mut().in_task = false;
        IN_TASK.with(|f| f.set(false));
        match result {
            Ok(CoroutineResult::Yield(())) => None,
            Ok(CoroutineResult::Return(())) => {
                self.finish(t);
                None
            }
            Err(payload) => {
                let message = panic_message(&*payload);
                let mut s = self.shared.borrow_mut();
                s.set_run(t, RunState::Finished);
                s.note("panic", ObjId::NONE, 0);
                Some(Outcome::Panic {
                    task: s.tasks[t].name.clone(),
                    message,
                })
            }
        }
    }

    fn finish(&mut self, t: TaskId) {
        let mut s = self.shared.borrow_mut();
        s.set_run(t, RunState::Finished);
        s.note("exit", ObjId::NONE, 0);
        // Grace periods waiting on a finished reader must re-check.
        s.wake(ObjId::RCU, 0);
        drop(s);
        if let Some(co) = self.coroutines[t].take() {
            STACKS.with(|p| p.borrow_mut().push(co.into_stack()));
        }
    }

    fn run_checks(&mut self, at_end: bool) -> Option<Outcome> {
        self.checkers
            .iter_mut()
            .filter(|(end, _)| *end == at_end)
            .find_map(|(_, f)| f())
    }

    /// Nothing is runnable: either every task is done (daemons idle) or the
    /// rest wait forever.
    fn quiescent(&mut self) -> Option<Outcome> {
        let s = self.shared.borrow();
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
                task: s.tasks[t].name.clone(),
                resource: s.object_name(on),
            }
        };
        let waiting = stuck.iter().map(|t| link(*t)).collect();
        Some(Outcome::Deadlock {
            cycle: wait_cycle(&s, &stuck).into_iter().map(link).collect(),
            waiting,
        })
    }

    /// Run to the end. The execution is consumed; its tasks are unwound.
    pub fn run(mut self) -> ExecReport {
        install_panic_hook();
        let shared_ptr: *const RefCell<Shared> = &*self.shared;
        rt::install(shared_ptr);
        let outcome = self.run_loop();
        self.teardown();
        rt::install(std::ptr::null());
        let (choices, mut diverged_at) = self.chooser.take_log();
        if let Some(step) = self.chooser.diverged_step() {
            diverged_at = Some(step as usize);
        }
        let step_log = std::mem::take(&mut self.step_log);
        let mut s = self.shared.borrow_mut();
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
            virtual_ns,
            trace_hash: s.trace.hash,
            events: s.trace.events.take(),
            task_names: s.tasks.iter().map(|t| t.name.clone()).collect(),
            choices,
            diverged_at,
            step_log,
            object_names,
        }
    }

    fn run_loop(&mut self) -> Outcome {
        let mut last: Option<TaskId> = None;
        loop {
            let (t, still_runnable) = match self.next_task(last) {
                Ok(next) => next,
                Err(Some(outcome)) => return outcome,
                Err(None) => {
                    if let Some(deadlock) = self.quiescent() {
                        return deadlock;
                    }
                    return self.run_checks(true).unwrap_or(Outcome::Pass);
                }
            };
            if self.config.log_steps {
                let label = self.shared.borrow().tasks[t].pending.label;
                self.step_log.push(StepRec {
                    task: t,
                    label,
                    preemption: still_runnable.is_some_and(|l| l != t),
                });
            }
            if let Some(limit) = self.charge(t) {
                return limit;
            }
            if let Some(o) = self.resume(t) {
                return o;
            }
            last = Some(t);
            if let Some(o) = self.shared.borrow_mut().abort.take() {
                return o;
            }
            if let Some(o) = self.run_checks(false) {
                return o;
            }
        }
    }

    /// Start tasks spawned by the last step, then pick the next task to
    /// run (and whether the last one could have gone on), or end the run:
    /// `Err(Some(_))` for an abort or a limit, `Err(None)` when nothing is
    /// runnable. One borrow of the state in the common case.
    fn next_task(
        &mut self,
        last: Option<TaskId>,
    ) -> Result<(TaskId, Option<TaskId>), Option<Outcome>> {
        if !self.shared.borrow().spawned.is_empty() {
            self.start_spawned();
        }
        let s = &mut *self.shared.borrow_mut();
        if let Some(o) = s.abort.take() {
            return Err(Some(o));
        }
        if s.runnable.is_empty() {
            return Err(None);
        }
        let step = s.step;
        if step >= self.config.max_steps {
            return Err(Some(Outcome::Limit {
                which: "steps".into(),
                value: self.config.max_steps,
            }));
        }
        if step - s.last_progress > self.config.livelock_steps {
            return Err(Some(Outcome::Limit {
                which: "livelock".into(),
                value: step,
            }));
        }
        if let Some(bytes) = crate::mem::over_limit() {
            return Err(Some(Outcome::Limit {
                which: "memory".into(),
                value: bytes as u64,
            }));
        }
        if step.is_multiple_of(4096) && self.past_deadline() {
            return Err(Some(Outcome::Limit {
                which: "wall-time".into(),
                value: step,
            }));
        }
        let still_runnable = last.filter(|l| s.runnable.binary_search(l).is_ok());
        let ctx = PickCtx {
            runnable: &s.runnable,
            last: still_runnable,
            tasks: &s.tasks,
            step,
        };
        let t = self.chooser.pick(&ctx);
        if self.config.stop_on_divergence {
            if let Some(step) = self.chooser.diverged_step() {
                return Err(Some(Outcome::Limit {
                    which: "divergence".into(),
                    value: step,
                }));
            }
        }
        Ok((t, still_runnable))
    }

    fn past_deadline(&self) -> bool {
        self.config
            .deadline
            .is_some_and(|d| std::time::Instant::now() >= d)
    }

    fn teardown(&mut self) {
        self.shared.borrow_mut().teardown = true;
        for co in self.coroutines.iter_mut() {
            if let Some(mut c) = co.take() {
                IN_TASK.with(|f| f.set(true));
                let _ = panic::catch_unwind(AssertUnwindSafe(|| c.force_unwind()));
                IN_TASK.with(|f| f.set(false));
                if c.done() {
                    STACKS.with(|p| p.borrow_mut().push(c.into_stack()));
                }
            }
        }
    }
}

/// The CPU that frees up first (the lowest-numbered on a tie), and when.
#[inline]
fn earliest_free_cpu(cpus: &[u64]) -> (usize, u64) {
    let mut best = (0, cpus[0]);
    for (i, &free_at) in cpus.iter().enumerate().skip(1) {
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
