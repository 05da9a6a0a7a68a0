//! The std mirror: `thread` and `sync` with std's signatures, so that code
//! written for std (or shuttle) explores under nssim by changing its
//! imports. Inside an execution every operation is a scheduling point of
//! nssim's; outside one (a plain test, real threads) the same code runs on
//! real threads.
//!
//! An object or task needs no name: one made without is named by where in
//! the source it was made (`tests/race.rs:12`), which is what the trace
//! and the token's schedule then show.

use std::collections::BTreeMap;
use std::panic::Location;

/// The name of the objects made at `site`: its file and line, made once per
/// site for the life of the process (objects take `&'static str` names).
pub(crate) fn site_name(site: &'static Location<'static>) -> &'static str {
    type Names = BTreeMap<(&'static str, u32, u32), &'static str>;
    static NAMES: std::sync::Mutex<Names> = std::sync::Mutex::new(BTreeMap::new());
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    names
        .entry((site.file(), site.line(), site.column()))
        .or_insert_with(|| Box::leak(format!("{}:{}", site.file(), site.line()).into_boxed_str()))
}

/// The name of the objects made where the caller's caller is (through
/// `#[track_caller]` constructors).
#[track_caller]
pub(crate) fn caller_site() -> &'static str {
    site_name(Location::caller())
}

/// A host lock of the mirror's own bookkeeping, held only between two
/// scheduling points (never poisoned in practice: a panic ends the
/// execution).
pub(crate) fn unpoisoned<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Tasks of the model, as `std::thread` has them.
pub mod thread {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

    /// Waits for a spawned task and takes what it returned.
    pub struct JoinHandle<T> {
        inner: Inner<T>,
        thread: Thread,
    }

    enum Inner<T> {
        Simulated {
            done: Arc<AtomicBool>,
            result: Arc<Mutex<Option<T>>>,
            obj: sim::ObjId,
        },
        Real(std::thread::JoinHandle<T>),
    }

    /// A handle on a task, as `std::thread::current()` gives one on a
    /// thread: its name and an id, each its own task's inside an
    /// execution (the model's first task is `main`).
    #[derive(Clone, Debug)]
    pub struct Thread {
        name: Option<String>,
        id: ThreadId,
        /// The real thread, outside an execution.
        real: Option<std::thread::Thread>,
    }

    impl Thread {
        pub fn name(&self) -> Option<&str> {
            self.name.as_deref()
        }

        pub fn id(&self) -> ThreadId {
            self.id
        }

        /// Make the task's park token available, waking it if it is
        /// parked (a scheduling point inside an execution).
        pub fn unpark(&self) {
            match (self.id.0, &self.real) {
                (ThreadKey::Task(t), _) if sim::active() => crate::std_park::unpark(t),
                (_, Some(real)) => real.unpark(),
                _ => {}
            }
        }

        fn of_real(real: std::thread::Thread) -> Thread {
            Thread {
                name: real.name().map(String::from),
                id: ThreadId(ThreadKey::Real(real.id())),
                real: Some(real),
            }
        }
    }

    pub use crate::std_scope::{scope, Scope, ScopedJoinHandle};

    /// `std::thread::park`: wait until the current task's token is
    /// available (an `unpark`), and take it. Inside an execution no park
    /// returns without one, and a park that no unpark can end is a
    /// deadlock the report names.
    ///
    /// ```
    /// use nssim::sync::atomic::{AtomicBool, Ordering};
    /// use nssim::sync::Arc;
    /// use nssim::thread;
    ///
    /// let report = nssim::check_dfs(|| {
    ///     let flag = Arc::new(AtomicBool::new(false));
    ///     let f = Arc::clone(&flag);
    ///     let parked = thread::spawn(move || {
    ///         while !f.load(Ordering::SeqCst) {
    ///             thread::park();
    ///         }
    ///     });
    ///     flag.store(true, Ordering::SeqCst);
    ///     parked.thread().unpark();
    ///     parked.join().unwrap();
    /// }, 2);
    /// assert!(!report.is_failure(), "{report}");
    /// ```
    pub fn park() {
        match sim::active() {
            true => crate::std_park::park(None),
            false => std::thread::park(),
        }
    }

    /// `std::thread::park_timeout`: as [`park`], giving up once the
    /// task's virtual clock has moved on by `dur`.
    pub fn park_timeout(dur: std::time::Duration) {
        match sim::active() {
            true => crate::std_park::park(Some(u64::try_from(dur.as_nanos()).unwrap_or(u64::MAX))),
            false => std::thread::park_timeout(dur),
        }
    }

    /// Which task (or, outside an execution, which thread) a [`Thread`]
    /// is: equal for the same one within an execution.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct ThreadId(ThreadKey);

    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    enum ThreadKey {
        Task(sim::TaskId),
        Real(std::thread::ThreadId),
    }

    /// `std::thread::current`: the running task, with the name it was
    /// spawned with (or given by `Builder::name`); outside an execution,
    /// the real thread.
    ///
    /// ```
    /// use nssim::thread;
    ///
    /// let report = nssim::check_dfs(|| {
    ///     let me = thread::current().id();
    ///     let t = thread::Builder::new()
    ///         .name("worker".to_string())
    ///         .spawn(|| (thread::current().id(), thread::current().name().map(String::from)))
    ///         .unwrap();
    ///     let (worker, name) = t.join().unwrap();
    ///     assert_ne!(me, worker);
    ///     assert_eq!(name.as_deref(), Some("worker"));
    ///     assert_eq!(thread::current().id(), me);
    /// }, 1);
    /// assert!(!report.is_failure(), "{report}");
    /// ```
    pub fn current() -> Thread {
        match sim::current_task() {
            Some(t) => Thread {
                // As std's: the first task is `main`, one spawned without
                // a name has none (its trace name is where it was spawned).
                name: (t == 0 || NAMED.with(|n| n.borrow().contains(&t)))
                    .then(|| sim::task_name(t)),
                id: ThreadId(ThreadKey::Task(t)),
                real: None,
            },
            None => Thread::of_real(std::thread::current()),
        }
    }

    /// The values of [`LocalKey`]s: one per key and task (or, outside an
    /// execution, per key on the real thread), on the OS thread the
    /// execution runs on, forgotten when the next execution starts.
    type Locals = std::collections::BTreeMap<(usize, Option<sim::TaskId>), Box<dyn std::any::Any>>;

    std::thread_local! {
        static LOCALS: std::cell::RefCell<Locals> = std::cell::RefCell::new(Locals::new());
        /// The tasks of the running execution spawned with a name.
        static NAMED: std::cell::RefCell<std::collections::BTreeSet<sim::TaskId>> =
            const { std::cell::RefCell::new(std::collections::BTreeSet::new()) };
    }

    /// The current task's thread-locals go, as a thread's do when it
    /// exits (before a `join` of it returns).
    pub(crate) fn drop_task_locals() {
        let me = sim::current_task();
        let mine: Vec<Box<dyn std::any::Any>> = LOCALS.with(|l| {
            let mut l = l.borrow_mut();
            let keys: Vec<_> = l.keys().filter(|(_, t)| *t == me).copied().collect();
            keys.iter().filter_map(|k| l.remove(k)).collect()
        });
        // Dropped outside the borrow: a value's drop may use a local.
        drop(mine);
    }

    /// Every task's thread-locals go (a new execution starts).
    pub(crate) fn forget_locals() {
        crate::std_park::forget_tokens();
        NAMED.with(|n| n.borrow_mut().clear());
        let old = LOCALS.with(|l| std::mem::take(&mut *l.borrow_mut()));
        // Dropped outside the borrow: a value's drop may use a local.
        drop(old);
    }

    /// Why [`LocalKey::try_with`] could not reach its value (never, here).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct AccessError;

    impl std::fmt::Display for AccessError {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("already destroyed")
        }
    }

    impl std::error::Error for AccessError {}

    /// A thread-local of the model (`nssim::thread_local!`): each task has
    /// its own value, made by the initializer on its first use in each
    /// execution; outside an execution, each real thread has its own.
    pub struct LocalKey<T: 'static> {
        init: fn() -> T,
    }

    impl<T: 'static> LocalKey<T> {
        #[doc(hidden)]
        pub const fn new(init: fn() -> T) -> LocalKey<T> {
            LocalKey { init }
        }

        /// As [`LocalKey::with`]; a value is always there to reach.
        pub fn try_with<F, R>(&'static self, f: F) -> Result<R, AccessError>
        where
            F: FnOnce(&T) -> R,
        {
            Ok(self.with(f))
        }

        /// `f` with this task's value.
        pub fn with<F, R>(&'static self, f: F) -> R
        where
            F: FnOnce(&T) -> R,
        {
            let key = (self as *const Self as usize, sim::current_task());
            let existing = LOCALS.with(|l| {
                l.borrow()
                    .get(&key)
                    .and_then(|v| v.downcast_ref::<T>())
                    .map(|v| v as *const T)
            });
            let value = match existing {
                Some(v) => v,
                None => {
                    // Made outside the borrow: the initializer may use
                    // another thread-local.
                    let made: Box<dyn std::any::Any> = Box::new((self.init)());
                    LOCALS.with(|l| {
                        let mut l = l.borrow_mut();
                        let v = l.entry(key).or_insert(made);
                        v.downcast_ref::<T>().expect("one type per key") as *const T
                    })
                }
            };
            // SAFETY: a value is boxed (its address does not move) and is
            // dropped only by `forget_locals`, between executions, never
            // while a task runs `f`.
            f(unsafe { &*value })
        }
    }

    impl<T: 'static> LocalKey<std::cell::Cell<T>> {
        pub fn get(&'static self) -> T
        where
            T: Copy,
        {
            self.with(|c| c.get())
        }

        pub fn set(&'static self, v: T) {
            self.with(|c| c.set(v))
        }
    }

    impl<T: 'static> LocalKey<std::cell::RefCell<T>> {
        pub fn with_borrow<F, R>(&'static self, f: F) -> R
        where
            F: FnOnce(&T) -> R,
        {
            self.with(|c| f(&c.borrow()))
        }

        pub fn with_borrow_mut<F, R>(&'static self, f: F) -> R
        where
            F: FnOnce(&mut T) -> R,
        {
            self.with(|c| f(&mut c.borrow_mut()))
        }
    }

    /// `std::thread::yield_now`: a scheduling point, where the explorer
    /// may run another task; outside an execution, the real one. A task
    /// that spins until another acts should yield in its loop: the next
    /// task in round-robin order then runs without a preemption, and the
    /// yielder going on is the preemption, so exhaustive search lets it
    /// spin at most its preemption bound more times, random search runs
    /// the other task, and PCT lowers the yielder below every other task,
    /// as shuttle's does.
    ///
    /// ```
    /// use nssim::sync::atomic::{AtomicBool, Ordering};
    /// use nssim::sync::Arc;
    /// use nssim::thread;
    ///
    /// let report = nssim::check_random(|| {
    ///     let flag = Arc::new(AtomicBool::new(false));
    ///     let f = Arc::clone(&flag);
    ///     let t = thread::spawn(move || f.store(true, Ordering::SeqCst));
    ///     while !flag.load(Ordering::SeqCst) {
    ///         thread::yield_now();
    ///     }
    ///     t.join().unwrap();
    /// }, 100);
    /// assert!(!report.is_failure(), "{report}");
    /// ```
    pub fn yield_now() {
        if sim::active() {
            sim::yield_point("yield_now", sim::ObjId::NONE, &sim::costs::STEP);
        } else {
            std::thread::yield_now();
        }
    }

    /// `std::thread::sleep`: inside an execution the task's virtual clock
    /// moves on by `dur` (a scheduling point; no time passes on the wall
    /// clock); outside one, a real sleep.
    ///
    /// ```
    /// use nssim::thread;
    /// use std::time::Duration;
    ///
    /// let report = nssim::check_dfs(|| thread::sleep(Duration::from_millis(5)), 0);
    /// assert!(!report.is_failure());
    /// ```
    pub fn sleep(dur: std::time::Duration) {
        if sim::active() {
            let ns = u64::try_from(dur.as_nanos()).unwrap_or(u64::MAX);
            sim::sleep("sleep", ns);
        } else {
            std::thread::sleep(dur);
        }
    }

    /// Start a task running `f`, named by where it is spawned; `join`
    /// gives what it returned.
    ///
    /// ```
    /// use nssim::thread;
    ///
    /// let report = nssim::check_dfs(|| {
    ///     let t = thread::spawn(|| 6 * 7);
    ///     assert_eq!(t.join().unwrap(), 42);
    /// }, 1);
    /// assert!(!report.is_failure());
    /// // Called outside a check, the same code runs on a real thread.
    /// assert_eq!(thread::spawn(|| 6 * 7).join().unwrap(), 42);
    /// ```
    #[track_caller]
    pub fn spawn<F, T>(f: F) -> JoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        start(
            site_task_name(std::panic::Location::caller()),
            false,
            None,
            f,
        )
    }

    /// An unnamed task's name: where it was spawned and its task number,
    /// so that tasks spawned in a loop have names of their own (a token's
    /// schedule names its tasks).
    pub(crate) fn site_task_name(site: &'static std::panic::Location<'static>) -> String {
        let at = super::site_name(site);
        match sim::next_task_id() {
            Some(id) => format!("{at}#{id}"),
            None => at.to_string(),
        }
    }

    /// A task's settings before it starts: its name.
    ///
    /// ```
    /// use nssim::thread;
    ///
    /// let report = nssim::check_random(|| {
    ///     let t = thread::Builder::new().name("worker".into()).spawn(|| ()).unwrap();
    ///     t.join().unwrap();
    /// }, 10);
    /// assert!(report.trace().contains("worker"));
    /// ```
    #[derive(Debug, Default)]
    pub struct Builder {
        name: Option<String>,
        stack_size: Option<usize>,
    }

    impl Builder {
        pub fn new() -> Builder {
            Builder::default()
        }

        /// The task's name in traces and tokens.
        pub fn name(mut self, name: String) -> Builder {
            self.name = Some(name);
            self
        }

        /// The stack size of a real thread, outside an execution; inside
        /// one every task has the stack nssim gives each task.
        pub fn stack_size(mut self, size: usize) -> Builder {
            self.stack_size = Some(size);
            self
        }

        /// Start the task; unnamed, it is named by where it is spawned.
        #[track_caller]
        pub fn spawn<F, T>(self, f: F) -> std::io::Result<JoinHandle<T>>
        where
            F: FnOnce() -> T + Send + 'static,
            T: Send + 'static,
        {
            let site = std::panic::Location::caller();
            let given = self.name.is_some();
            let name = self.name.unwrap_or_else(|| site_task_name(site));
            Ok(start(name, given, self.stack_size, f))
        }
    }

    /// Start a task named `name` (`given`: by the model, so that it is the
    /// name `Thread::name` gives, as std's).
    pub(crate) fn start<F, T>(
        name: String,
        given: bool,
        stack_size: Option<usize>,
        f: F,
    ) -> JoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        if !sim::active() {
            let mut builder = std::thread::Builder::new();
            if given {
                builder = builder.name(name);
            }
            if let Some(size) = stack_size {
                builder = builder.stack_size(size);
            }
            let thread = builder.spawn(f).expect("the system starts a thread");
            let handle = Thread::of_real(thread.thread().clone());
            return JoinHandle {
                inner: Inner::Real(thread),
                thread: handle,
            };
        }
        let done = Arc::new(AtomicBool::new(false));
        let result = Arc::new(Mutex::new(None));
        let obj = sim::new_object("task");
        let (d, r) = (Arc::clone(&done), Arc::clone(&result));
        let mut body = Some(move || {
            let value = f();
            drop_task_locals();
            *r.lock().unwrap_or_else(|e| e.into_inner()) = Some(value);
            d.store(true, Ordering::SeqCst);
            sim::wake_all(obj, 0);
        });
        // Past the tasks limit the execution ends at its next scheduling
        // point with outcome `limit`; the handle is then never joined.
        let id = sim::spawn(name.clone(), false, move || {
            (body.take().expect("runs once"))()
        });
        if let (Some(id), true) = (id, given) {
            NAMED.with(|n| n.borrow_mut().insert(id));
        }
        let thread = Thread {
            name: given.then_some(name),
            id: ThreadId(ThreadKey::Task(id.unwrap_or(usize::MAX))),
            real: None,
        };
        JoinHandle {
            inner: Inner::Simulated { done, result, obj },
            thread,
        }
    }

    impl<T> JoinHandle<T> {
        /// The task it waits for.
        pub fn thread(&self) -> &Thread {
            &self.thread
        }

        /// Whether the task has returned (a look, not a scheduling point).
        pub fn is_finished(&self) -> bool {
            match &self.inner {
                Inner::Simulated { done, .. } => done.load(Ordering::SeqCst),
                Inner::Real(thread) => thread.is_finished(),
            }
        }

        /// Block until the task has finished; what it returned. In an
        /// execution a task that panics ends the execution (outcome
        /// `panic`), so `Err` comes only from real threads.
        pub fn join(self) -> std::thread::Result<T> {
            match self.inner {
                Inner::Real(thread) => thread.join(),
                Inner::Simulated { done, result, obj } => {
                    sim::wait_until("join", obj, || done.load(Ordering::SeqCst));
                    let value = result.lock().unwrap_or_else(|e| e.into_inner()).take();
                    Ok(value.expect("a finished task left its result"))
                }
            }
        }
    }
}

/// `std::sync`'s shapes: `Arc`, `Mutex`, `atomic`. Beside them, the
/// kernel primitives keep their kernel-shaped API (see [`crate::kernel`]).
pub mod sync {
    pub use crate::std_barrier::{Barrier, BarrierWaitResult, Once, OnceState};
    pub use crate::std_condvar::{Condvar, WaitTimeoutResult};
    pub use crate::std_lazy::{LazyLock, OnceLock};
    pub use crate::std_mutex::{Mutex, MutexGuard};
    pub use crate::std_rwlock::{RwLock, RwLockReadGuard, RwLockWriteGuard};
    pub use ::sync::Ordering as AtomicOrdering;
    pub use ::sync::{
        flush_work, rcu_read_lock, schedule_work, synchronize_rcu, LList, Refcount, SpinLock, Work,
        Workqueue,
    };
    pub use std::sync::{Arc, LockResult, PoisonError, TryLockError, TryLockResult};

    /// Atomics as `std::sync::atomic` has them, named by where they are
    /// made; every operation is a scheduling point.
    ///
    /// ```
    /// use nssim::sync::atomic::{fence, AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering};
    ///
    /// let report = nssim::check_dfs(|| {
    ///     let (b, i, u, w) = (AtomicBool::new(false), AtomicI64::new(-1), AtomicU32::new(1), AtomicU64::new(2));
    ///     b.store(true, Ordering::SeqCst);
    ///     i.fetch_add(1, Ordering::SeqCst);
    ///     assert_eq!(u.compare_exchange(1, 5, Ordering::SeqCst, Ordering::SeqCst), Ok(1));
    ///     w.fetch_sub(2, Ordering::SeqCst);
    ///     assert!(b.load(Ordering::SeqCst));
    ///     assert_eq!((i.load(Ordering::SeqCst), u.load(Ordering::SeqCst), w.load(Ordering::SeqCst)), (0, 5, 0));
    ///     let flags = AtomicUsize::new(0b01);
    ///     assert_eq!(flags.fetch_or(0b10, Ordering::AcqRel), 0b01);
    ///     assert_eq!(flags.swap(7, Ordering::SeqCst), 0b11);
    ///     fence(Ordering::SeqCst);
    ///     assert_eq!(flags.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| v.checked_sub(7)), Ok(7));
    ///     assert_eq!(flags.into_inner(), 0);
    /// }, 0);
    /// assert!(!report.is_failure(), "{report}");
    /// ```
    pub mod atomic {
        pub use crate::std_atomic::*;
    }

    /// `std::sync::mpsc`, explored.
    pub mod mpsc {
        pub use crate::std_mpsc::*;
    }
}
