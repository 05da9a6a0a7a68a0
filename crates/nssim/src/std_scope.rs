//! `std::thread::scope` under nssim: tasks that may borrow from the
//! spawning task's stack, each joined before `scope` returns. Inside an
//! execution a scoped task is a task like any other (the wait at the end
//! of the scope is a wait the deadlock detector sees), and when an
//! execution is torn down, tasks are unwound newest first, so a scoped
//! task is gone before the stack it borrows from. Outside an execution,
//! real threads.

use crate::mirror::thread::{start, JoinHandle, Thread};
use crate::mirror::unpoisoned;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex as HostMutex};

/// That a scoped task has returned, for the end of its scope.
struct Finished {
    flag: AtomicBool,
    /// Inside an execution: what the end of the scope blocks on.
    obj: sim::ObjId,
    /// Outside one: a real wait.
    real: (HostMutex<bool>, Condvar),
}

impl Finished {
    fn set(&self) {
        self.flag.store(true, Ordering::SeqCst);
        if sim::active() {
            sim::wake_all(self.obj, 0);
        } else {
            *unpoisoned(&self.real.0) = true;
            self.real.1.notify_all();
        }
    }

    fn wait(&self) {
        if sim::active() {
            sim::wait_until("scope_end", self.obj, || self.flag.load(Ordering::SeqCst));
        } else {
            let done = unpoisoned(&self.real.0);
            drop(self.real.1.wait_while(done, |d| !*d));
        }
    }
}

/// The scope [`scope`] gives its closure: spawn tasks that borrow from
/// outside it.
pub struct Scope<'scope, 'env: 'scope> {
    started: HostMutex<Vec<Arc<Finished>>>,
    /// Invariant over both lifetimes, as std's is.
    scope: PhantomData<&'scope mut &'scope ()>,
    env: PhantomData<&'env mut &'env ()>,
}

/// A scoped task's handle: `join` waits for it and takes what it returned.
pub struct ScopedJoinHandle<'scope, T> {
    handle: JoinHandle<()>,
    result: Arc<HostMutex<Option<T>>>,
    scope: PhantomData<&'scope ()>,
}

/// `std::thread::scope`: run `f` with a scope; every task spawned in it
/// has returned when `scope` does.
///
/// ```
/// use nssim::sync::atomic::{AtomicU32, Ordering};
/// use nssim::thread;
///
/// let report = nssim::check_dfs(|| {
///     let hits = AtomicU32::new(0);
///     let mut words = vec!["a"];
///     thread::scope(|s| {
///         s.spawn(|| hits.fetch_add(1, Ordering::SeqCst));
///         let t = s.spawn(|| hits.fetch_add(1, Ordering::SeqCst) + 10);
///         assert!(t.join().unwrap() >= 10);
///     });
///     words.push("b");
///     assert_eq!(hits.load(Ordering::SeqCst), 2);
/// }, 2);
/// assert!(!report.is_failure(), "{report}");
/// ```
pub fn scope<'env, F, T>(f: F) -> T
where
    F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> T,
{
    let scope = Scope {
        started: HostMutex::new(Vec::new()),
        scope: PhantomData,
        env: PhantomData,
    };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&scope)));
    // An execution being torn down unwinds its tasks newest first: the
    // scoped ones are gone already, and nothing may wait now.
    if !sim::tearing_down() {
        let started = std::mem::take(&mut *unpoisoned(&scope.started));
        for finished in started {
            finished.wait();
        }
    }
    match result {
        Ok(v) => v,
        Err(payload) => std::panic::resume_unwind(payload),
    }
}

impl<'scope> Scope<'scope, '_> {
    /// Start a task that may borrow anything that outlives the scope.
    #[track_caller]
    pub fn spawn<F, T>(&'scope self, f: F) -> ScopedJoinHandle<'scope, T>
    where
        F: FnOnce() -> T + Send + 'scope,
        T: Send + 'scope,
    {
        let name = crate::mirror::thread::site_task_name(std::panic::Location::caller());
        let finished = Arc::new(Finished {
            flag: AtomicBool::new(false),
            obj: sim::new_object("scoped task"),
            real: (HostMutex::new(false), Condvar::new()),
        });
        let result = Arc::new(HostMutex::new(None));
        let (fin, res) = (Arc::clone(&finished), Arc::clone(&result));
        let body: Box<dyn FnOnce() + Send + 'scope> = Box::new(move || {
            let value = f();
            *unpoisoned(&res) = Some(value);
            fin.set();
        });
        // SAFETY: the task borrows nothing that does not outlive 'scope,
        // and `scope` waits for it to finish before 'scope ends (or, when
        // the execution is torn down, the task is unwound before the task
        // whose stack it borrows from).
        let body: Box<dyn FnOnce() + Send + 'static> = unsafe { std::mem::transmute(body) };
        unpoisoned(&self.started).push(finished);
        ScopedJoinHandle {
            handle: start(name, false, None, body),
            result,
            scope: PhantomData,
        }
    }
}

impl<T> ScopedJoinHandle<'_, T> {
    /// Wait for the task and take what it returned.
    pub fn join(self) -> std::thread::Result<T> {
        self.handle.join()?;
        Ok(unpoisoned(&self.result)
            .take()
            .expect("a finished task left its result"))
    }

    /// The task it waits for.
    pub fn thread(&self) -> &Thread {
        self.handle.thread()
    }

    /// Whether the task has returned.
    pub fn is_finished(&self) -> bool {
        self.handle.is_finished()
    }
}
