//! nssim as a library: explore the interleavings of your own Rust code,
//! deterministically, and replay any execution from its token.
//!
//! [`thread`] and [`sync`] mirror std's signatures, so code written for
//! std (or shuttle) ports by changing its imports; the kernel primitives
//! (spinlocks, RCU, work items, llist, ...) keep their kernel-shaped API in
//! [`kernel`]. [`check_random`], [`check_pct`] and [`check_dfs`] run the
//! closure as the first task of many executions and return the
//! [`Report`] of the first failing one (a panic in any task, a deadlock,
//! a use of a freed object, a limit), shrunk, with its token and its
//! step-by-step trace; [`replay`] runs exactly that execution again.
//!
//! ```
//! use nssim::sync::atomic::{AtomicU64, Ordering};
//! use nssim::sync::Arc;
//! use nssim::thread;
//!
//! // Two threads increment a counter with a load and a store: a lost update.
//! fn model() {
//!     let counter = Arc::new(AtomicU64::new(0));
//!     let handles: Vec<_> = (0..2)
//!         .map(|_| {
//!             let c = Arc::clone(&counter);
//!             thread::spawn(move || {
//!                 let v = c.load(Ordering::SeqCst);
//!                 c.store(v + 1, Ordering::SeqCst);
//!             })
//!         })
//!         .collect();
//!     for h in handles {
//!         h.join().unwrap();
//!     }
//!     assert_eq!(counter.load(Ordering::SeqCst), 2, "lost update");
//! }
//!
//! let report = nssim::check_random(model, 1000);
//! assert!(report.is_failure());
//! assert!(report.message().contains("lost update"));
//! // The token replays the same execution, bit for bit.
//! let again = nssim::replay(model, report.token()).expect("a token of this API");
//! assert_eq!(again.trace_hash, report.trace_hash);
//! ```
//!
//! [`check`] takes a [`Config`] for full control and panics with the
//! report when an execution fails, which is what a `#[test]` wants.

pub use sim::StrategySpec::{Dfs, Fair, Pct, Random};
pub use sim::{Outcome, ShrinkReport, StrategySpec as Strategy};

use sim::{ExecConfig, Execution, ExploreConfig, Schedule, Token};
use std::fmt;
use std::sync::Arc;

/// How to search. Defaults: random strategy, seed 1, 1000 executions,
/// two virtual CPUs, shrinking on, one thread (`jobs`: more run executions
/// at once, with the same result).
#[derive(Debug, Clone)]
pub struct Config {
    explore: ExploreConfig,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            explore: ExploreConfig {
                strategy: Strategy::Random,
                seed: 1,
                iterations: 1000,
                exec: ExecConfig::default(),
                shrink: true,
                jobs: 1,
                shard: None,
                progress: Default::default(),
                reduction: true,
                split: sim::Split::DEFAULT,
                state_cache: true,
            },
        }
    }
}

impl Config {
    /// Panics, naming the setting and its range, when a number is out of
    /// the range nssim takes (the same ranges as a scenario's `[explore]`
    /// table and the command line: `sim::limits`).
    fn assert_in_range(&self) {
        use sim::limits::{ITERATIONS, PCT_DEPTH, PREEMPTION_BOUND};
        let e = &self.explore;
        let mut checks = vec![(ITERATIONS, e.iterations)];
        match e.strategy {
            Dfs { preemption_bound } => checks.push((PREEMPTION_BOUND, preemption_bound.into())),
            Pct { depth } => checks.push((PCT_DEPTH, depth.into())),
            Random | Fair => {}
        }
        for (limit, value) in checks {
            assert!(
                limit.contains(value.into()),
                "nssim: {} = {value} is out of its range {}",
                limit.name,
                limit.range_text()
            );
        }
    }

    pub fn strategy(mut self, s: Strategy) -> Self {
        self.explore.strategy = s;
        self
    }
    pub fn iterations(mut self, n: u64) -> Self {
        self.explore.iterations = n;
        self
    }
    pub fn seed(mut self, s: u64) -> Self {
        self.explore.seed = s;
        self
    }
    pub fn cpus(mut self, n: u32) -> Self {
        self.explore.exec.cpus = n.max(1);
        self
    }
    pub fn max_steps(mut self, n: u64) -> Self {
        self.explore.exec.max_steps = n;
        self
    }
    /// Threads running executions at once; the result does not change.
    /// Executions that use the std-shaped primitives of [`sync`] run one
    /// at a time even so: any of them may be a static whose value every
    /// execution shares.
    pub fn jobs(mut self, n: usize) -> Self {
        self.explore.jobs = n.clamp(1, sim::limits::JOBS.max as usize);
        self
    }
    pub fn shrink(mut self, on: bool) -> Self {
        self.explore.shrink = on;
        self
    }
}

/// The result of a search: the reported execution (the first failure, or
/// the last execution run).
#[derive(Debug, Clone)]
pub struct Report {
    pub outcome: Outcome,
    pub executions: u64,
    pub steps: u64,
    pub trace_hash: u64,
    pub shrink: Option<ShrinkReport>,
    /// Replays the execution with [`replay`].
    pub token: String,
    /// The reported (shrunk) schedule: each task's stretch of steps,
    /// `task@point xN`, in order.
    pub schedule: Vec<String>,
    /// The execution step by step.
    pub trace: String,
    /// How many times the model closure ran: every execution searched,
    /// those run while shrinking a failure, and the one recorded for the
    /// trace, so more often than `iterations`.
    pub model_runs: u64,
    /// The atomics accessed with an ordering weaker than `SeqCst`
    /// (`site: op Ordering`): nssim explores sequentially consistent
    /// executions only, so outcomes those orderings allow on real hardware
    /// may be missing from what was explored.
    pub weak_orderings: Vec<String>,
    /// The program's `std::thread_local!`s the model used (by path): one
    /// value for every task of an execution, carried over to the next, so
    /// that what was explored may depend on earlier executions. Use
    /// `nssim::thread_local!` instead (found on Linux with glibc).
    pub std_thread_locals: Vec<String>,
}

impl Report {
    /// Whether the reported execution failed (a panic, a deadlock, a
    /// violated invariant, a limit).
    pub fn is_failure(&self) -> bool {
        self.outcome.is_failure()
    }

    /// The token that [`replay`] runs again.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The execution step by step.
    pub fn trace(&self) -> &str {
        &self.trace
    }

    /// What went wrong, with the token, the line that replays it, and the
    /// trace.
    pub fn message(&self) -> String {
        let mut notes = String::new();
        if let Some(first) = self.weak_orderings.first() {
            notes = format!(
                "note: {} atomic access(es) use an ordering weaker than SeqCst ({first}{}); nssim explores sequentially consistent executions only, so outcomes those orderings allow on real hardware may be missing\n",
                self.weak_orderings.len(),
                if self.weak_orderings.len() > 1 { ", ..." } else { "" },
            );
        }
        for path in &self.std_thread_locals {
            notes.push_str(&format!("note: {}\n", std_tls::message(path)));
        }
        format!(
            "nssim: {} after {} execution(s)\n{notes}token: {}\nreplay: nssim::replay(model, \"{}\")\n{}",
            self.outcome, self.executions, self.token, self.token, self.trace
        )
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

/// The token context that names the library API instead of a scenario
/// file (whose tokens name a kernel run first).
const API_KERNEL: &str = "api";

fn spawn_main(e: &mut Execution, model: &Arc<dyn Fn() + Send + Sync>, tls: &std_tls::Noted) {
    let m = Arc::clone(model);
    // Each execution's tasks start with thread-locals of their own.
    mirror::thread::forget_locals();
    // std's own thread-locals cannot be: those the model changes are noted
    // when the execution is dropped.
    let std_locals = std_tls::Snapshot::take(tls);
    let running = e.setup(|| {
        sim::spawn("main", false, move || {
            m();
            mirror::thread::drop_task_locals();
        });
        lazy_obj::Running::mark()
    });
    // Kept by a check the execution drops when it is dropped: the mark
    // says the execution runs until then.
    e.check_at_end(move || {
        let _ = (&running, &std_locals);
        None
    });
}

fn no_describe(_: &sim::Event) -> Option<String> {
    None
}

fn run_once(
    exec: &ExecConfig,
    schedule: &Schedule,
    model: &Arc<dyn Fn() + Send + Sync>,
    tls: &std_tls::Noted,
) -> sim::ExecReport {
    let mut cfg = exec.clone();
    cfg.record = true;
    let mut e = Execution::new(cfg, schedule);
    spawn_main(&mut e, model, tls);
    e.run()
}

/// Explore `model` and return the report, failing or not.
pub fn check_report(config: Config, model: impl Fn() + Send + Sync + 'static) -> Report {
    config.assert_in_range();
    let runs = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counted = Arc::clone(&runs);
    let notes = weak::Noted::default();
    let noting = Arc::clone(&notes);
    let model: Arc<dyn Fn() + Send + Sync> = Arc::new(move || {
        counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        weak::install(&noting);
        model()
    });
    let tls = std_tls::Noted::default();
    let found = sim::explore(&config.explore, &|e| spawn_main(e, &model, &tls));
    let exec = &config.explore.exec;
    let token = Token {
        scenario: 0,
        content: Some(sim::ContentHash::Digest(0)),
        context: vec![API_KERNEL.into()],
        cpus: exec.cpus,
        max_steps: exec.max_steps,
        max_virtual_ns: exec.max_virtual_ns,
        schedule: found.schedule.clone(),
    };
    let recorded = run_once(exec, &found.schedule, &model, &tls);
    Report {
        outcome: found.report.outcome.clone(),
        executions: found.executions,
        steps: found.report.steps,
        trace_hash: found.report.trace_hash,
        shrink: found.shrink,
        token: token.encode(),
        schedule: schedule_text(&found.schedule),
        trace: report::steps::render(&recorded, &no_describe),
        model_runs: runs.load(std::sync::atomic::Ordering::Relaxed),
        weak_orderings: noted(&notes),
        std_thread_locals: noted(&tls),
    }
}

/// What a check noted, in order.
fn noted(notes: &weak::Noted) -> Vec<String> {
    mirror::unpoisoned(notes).iter().cloned().collect()
}

/// A schedule as its named stretches (a seeded schedule names itself).
fn schedule_text(schedule: &Schedule) -> Vec<String> {
    match schedule {
        Schedule::Segments(segments) => segments.iter().map(ToString::to_string).collect(),
        other => vec![format!("{other:?}")],
    }
}

/// Explore `f` under `iterations` random schedules: the report of the
/// first failing execution, shrunk, or of the last one.
pub fn check_random(f: impl Fn() + Send + Sync + 'static, iterations: u64) -> Report {
    check_report(Config::default().strategy(Random).iterations(iterations), f)
}

/// Explore `f` under `iterations` PCT schedules of depth `depth` (the
/// number of ordering constraints of the bugs it is sure to find with
/// probability at least 1/(n k^(depth-1))).
pub fn check_pct(f: impl Fn() + Send + Sync + 'static, iterations: u64, depth: u32) -> Report {
    check_report(
        Config::default()
            .strategy(Pct { depth })
            .iterations(iterations),
        f,
    )
}

/// Explore every schedule of `f` with at most `preemption_bound`
/// preemptions, one per class of schedules that only reorder independent
/// steps (`report.executions` says how many that took).
pub fn check_dfs(f: impl Fn() + Send + Sync + 'static, preemption_bound: u32) -> Report {
    let most = sim::limits::ITERATIONS.max;
    check_report(
        Config::default()
            .strategy(Dfs { preemption_bound })
            .iterations(most),
        f,
    )
}

/// Explore `model`; panic with the report when an execution fails.
pub fn check(config: Config, model: impl Fn() + Send + Sync + 'static) {
    let report = check_report(config, model);
    if report.outcome.is_failure() {
        panic!("{report}");
    }
}

/// Why [`replay`] could not run a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// Not a token, or a corrupted one, or one with fields out of range.
    #[error("nssim::replay: bad token `{}`: {error}", sim::echo::echo(.token))]
    Token {
        token: String,
        error: sim::TokenError,
    },
    /// A token of `nssim run`, which names a scenario file's kernel run.
    #[error(
        "nssim::replay: this token names a scenario file's run; use `nssim replay SCENARIO TOKEN`"
    )]
    NotFromTheApi,
}

/// Run exactly the execution `token` names (as printed by [`check`]); an
/// error when the token is malformed or was not made by this API.
pub fn replay(
    model: impl Fn() + Send + Sync + 'static,
    token: &str,
) -> Result<Report, ReplayError> {
    let t = Token::decode(token).map_err(|error| ReplayError::Token {
        token: token.to_string(),
        error,
    })?;
    if t.context != [API_KERNEL] {
        return Err(ReplayError::NotFromTheApi);
    }
    let exec = ExecConfig {
        cpus: t.cpus,
        max_steps: t.max_steps,
        max_virtual_ns: t.max_virtual_ns,
        ..ExecConfig::default()
    };
    let notes = weak::Noted::default();
    let noting = Arc::clone(&notes);
    let model: Arc<dyn Fn() + Send + Sync> = Arc::new(move || {
        weak::install(&noting);
        model()
    });
    let tls = std_tls::Noted::default();
    let r = run_once(&exec, &t.schedule, &model, &tls);
    let weak_orderings = noted(&notes);
    Ok(Report {
        outcome: r.outcome.clone(),
        executions: 1,
        steps: r.steps,
        trace_hash: r.trace_hash,
        shrink: None,
        token: token.to_string(),
        schedule: schedule_text(&t.schedule),
        trace: report::steps::render(&r, &no_describe),
        model_runs: 1,
        weak_orderings,
        std_thread_locals: noted(&tls),
    })
}

mod lazy_obj;
mod mirror;
mod std_barrier;
mod std_cell;
mod std_condvar;
mod std_future;
mod std_lazy;
mod std_lazy_static;
#[doc(hidden)]
pub use std_lazy_static::LazyStatic;
mod std_mpsc;
mod std_mutex;
mod std_park;
mod std_rwlock;
mod std_scope;
mod std_tls;
mod weak;

/// `std::thread_local!` for a model: each task has its own value, made on
/// its first use in each execution (a value never carries over to the
/// next execution, so a token replays what it recorded); outside an
/// execution, each real thread has its own.
///
/// ```
/// use std::cell::Cell;
/// use nssim::thread;
///
/// nssim::thread_local! {
///     static CALLS: Cell<u32> = Cell::new(0);
/// }
///
/// let report = nssim::check_dfs(|| {
///     CALLS.set(CALLS.get() + 1);
///     let t = thread::spawn(|| {
///         CALLS.set(CALLS.get() + 10);
///         CALLS.get()
///     });
///     assert_eq!(t.join().unwrap(), 10, "the other task's value is its own");
///     assert_eq!(CALLS.get(), 1, "and this execution's own");
/// }, 2);
/// assert!(!report.is_failure(), "{report}");
/// ```
#[macro_export]
macro_rules! thread_local {
    () => {};
    // std's `const { .. }` form: the same here (a value per task, made on
    // its first use).
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty = const { $init:expr }; $($rest:tt)*) => {
        $crate::thread_local!($(#[$attr])* $vis static $name: $t = $init; $($rest)*);
    };
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty = const { $init:expr }) => {
        $crate::thread_local!($(#[$attr])* $vis static $name: $t = $init);
    };
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty = $init:expr; $($rest:tt)*) => {
        $(#[$attr])* $vis static $name: $crate::thread::LocalKey<$t> =
            $crate::thread::LocalKey::new(|| $init);
        $crate::thread_local!($($rest)*);
    };
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty = $init:expr) => {
        $(#[$attr])* $vis static $name: $crate::thread::LocalKey<$t> =
            $crate::thread::LocalKey::new(|| $init);
    };
}
mod std_atomic;
pub use mirror::{sync, thread};

/// loom's `cell::UnsafeCell`: shared data reached through `with` and
/// `with_mut`, each a scheduling point.
pub mod cell {
    pub use crate::std_cell::{ConstPtr, MutPtr, UnsafeCell};
}

/// `std::hint`'s `spin_loop`: inside an execution a yield
/// ([`thread::yield_now`]), so that a spin-wait ported by its imports
/// lets the task it waits for run; outside one, std's.
pub mod hint {
    /// The body of a spin-wait.
    ///
    /// ```
    /// use nssim::sync::atomic::{AtomicBool, Ordering};
    /// use nssim::sync::Arc;
    /// use nssim::{hint, thread};
    ///
    /// let report = nssim::check_dfs(|| {
    ///     let ready = Arc::new(AtomicBool::new(false));
    ///     let r = Arc::clone(&ready);
    ///     let t = thread::spawn(move || r.store(true, Ordering::Release));
    ///     while !ready.load(Ordering::Acquire) {
    ///         hint::spin_loop();
    ///     }
    ///     t.join().unwrap();
    /// }, 2);
    /// assert!(!report.is_failure(), "{report}");
    /// ```
    pub fn spin_loop() {
        if sim::active() {
            sim::yield_point("spin_loop", sim::ObjId::NONE, &sim::costs::STEP);
        } else {
            std::hint::spin_loop();
        }
    }
}

/// Async code explored, with shuttle's `future` API: `spawn` makes a
/// future a task of its own, `block_on` runs one to its end, and a
/// spawned future's [`JoinHandle`](future::JoinHandle) is a future too.
pub mod future {
    pub use crate::std_future::{block_on, spawn, yield_now, JoinError, JoinHandle};
}

/// The kernel primitives with their kernel-shaped API (every object
/// named): spinlocks, RCU, work items and `flush_work`, llist, refcounts,
/// and the named mutex and atomics. Each example below runs as a doctest.
///
/// A spinlock (`spinlock_t`): a spinner waits in the scheduler.
///
/// ```
/// use nssim::kernel::SpinLock;
/// use nssim::sync::Arc;
/// use nssim::thread;
///
/// let report = nssim::check_dfs(|| {
///     let lock = Arc::new(SpinLock::new("counter_lock", 0));
///     let l = Arc::clone(&lock);
///     let t = thread::spawn(move || *l.lock() += 1);
///     *lock.lock() += 1;
///     t.join().unwrap();
///     assert_eq!(*lock.lock(), 2);
/// }, 2);
/// assert!(!report.is_failure(), "{report}");
/// ```
///
/// RCU: `synchronize_rcu` waits for every read-side section that began
/// before it.
///
/// ```
/// use nssim::kernel::{rcu_read_lock, synchronize_rcu, AtomicU32};
/// use nssim::sync::atomic::Ordering;
/// use nssim::sync::Arc;
/// use nssim::thread;
///
/// let report = nssim::check_dfs(|| {
///     let freed = Arc::new(AtomicU32::new("freed", 0));
///     let f = Arc::clone(&freed);
///     let reader = thread::spawn(move || {
///         let _section = rcu_read_lock();
///         f.load(Ordering::SeqCst)
///     });
///     synchronize_rcu();
///     freed.store(1, Ordering::SeqCst);
///     // A reader that saw the object live had finished before the free.
///     let _seen = reader.join().unwrap();
/// }, 2);
/// assert!(!report.is_failure(), "{report}");
/// ```
///
/// A work item on a kworker: `schedule_work` queues it, `flush_work` waits
/// until the run that was queued has finished.
///
/// ```
/// use nssim::kernel::{flush_work, schedule_work, AtomicU32, Work, Workqueue};
/// use nssim::sync::atomic::Ordering;
/// use nssim::sync::Arc;
///
/// let report = nssim::check_random(|| {
///     let wq = Workqueue::new("events");
///     wq.start_worker("kworker");
///     let runs = Arc::new(AtomicU32::new("runs", 0));
///     let r = Arc::clone(&runs);
///     let work = Work::new("free_work", &wq, move || {
///         r.fetch_add(1, Ordering::SeqCst);
///     });
///     schedule_work(&work);
///     flush_work(&work);
///     assert_eq!(runs.load(Ordering::SeqCst), 1, "flush_work waited for the run");
/// }, 200);
/// assert!(!report.is_failure(), "{report}");
/// ```
///
/// A lockless list (`llist`): `llist_add` says whether the list was
/// empty, `llist_del_all` takes every node at once.
///
/// ```
/// use nssim::kernel::LList;
/// use nssim::sync::Arc;
/// use nssim::thread;
///
/// let report = nssim::check_dfs(|| {
///     let list = Arc::new(LList::new("free_list"));
///     let l = Arc::clone(&list);
///     let t = thread::spawn(move || l.llist_add(1));
///     list.llist_add(2);
///     t.join().unwrap();
///     let mut all = list.llist_del_all();
///     all.sort();
///     assert_eq!(all, vec![1, 2]);
/// }, 2);
/// assert!(!report.is_failure(), "{report}");
/// ```
///
/// A refcount whose last put takes a lock (`refcount_dec_and_lock`): only
/// the last of two puts gets the lock back.
///
/// ```
/// use nssim::kernel::{Refcount, SpinLock};
/// use nssim::sync::Arc;
/// use nssim::thread;
///
/// let report = nssim::check_dfs(|| {
///     let count = Arc::new(Refcount::new("count", 2));
///     let lock = Arc::new(SpinLock::new("list_lock", ()));
///     let (c, l) = (Arc::clone(&count), Arc::clone(&lock));
///     let other = thread::spawn(move || c.dec_and_lock(&l).is_some());
///     let mine = count.dec_and_lock(&lock).is_some();
///     let theirs = other.join().unwrap();
///     assert!(mine != theirs, "exactly one put is the last");
/// }, 2);
/// assert!(!report.is_failure(), "{report}");
/// ```
pub use ::sync as kernel;
