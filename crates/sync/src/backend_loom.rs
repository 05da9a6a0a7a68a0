//! The loom backend (`RUSTFLAGS="--cfg loom"`): the same API as the sim
//! backend, mapped onto `loom` primitives so that `loom::model` explores
//! every interleaving (and every weak-memory outcome loom models) of a small
//! model.
//!
//! Every object must be created inside `loom::model`. Names are accepted for
//! API compatibility and otherwise ignored; `obj()` is [`ObjId::NONE`].
//!
//! To keep the state space small, each object is one loom object (a mutex,
//! or a single atomic where the sim backend has a single atomic), and
//! condition variables are only notified when somebody may be waiting.
//!
//! Differences from the kernel worth knowing when reading a loom result:
//!
//! * RCU is a loom mutex-protected table of active readers: entering and
//!   leaving a read-side section synchronizes (acquire/release) with the
//!   other sections and grace periods, so loom does not explore the weaker
//!   orderings of a real `rcu_read_lock`, which is not a barrier;
//! * a [`Workqueue`]'s kworker is a `loom::thread`; the model must call
//!   [`Workqueue::shutdown`] before it ends, which here also joins the
//!   kworker, since loom requires every thread to finish (a kworker still
//!   waiting for work is reported as a deadlock);
//! * the RCU state is a `loom::lazy_static`, dropped when the model's main
//!   thread returns: join every thread that uses RCU before that.

use loom::sync::atomic;
use loom::sync::{Condvar, Mutex as LoomMutex, MutexGuard as LoomMutexGuard};
use sim::ObjId;
use std::collections::VecDeque;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Lock a loom mutex; poisoning only follows a panic that already failed
/// the model.
fn lock<T>(m: &LoomMutex<T>) -> LoomMutexGuard<'_, T> {
    m.lock().expect("loom mutex poisoned")
}

fn wait<'a, T>(cv: &Condvar, g: LoomMutexGuard<'a, T>) -> LoomMutexGuard<'a, T> {
    cv.wait(g).expect("loom mutex poisoned")
}

// ---------------------------------------------------------------- locks

/// Holding a [`Mutex`] or [`SpinLock`].
pub struct LockGuard<'a, T> {
    guard: LoomMutexGuard<'a, T>,
}

pub type MutexGuard<'a, T> = LockGuard<'a, T>;
pub type SpinLockGuard<'a, T> = LockGuard<'a, T>;

impl<T> Deref for LockGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T> DerefMut for LockGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}

/// A sleeping lock (`struct mutex`).
pub struct Mutex<T>(LoomMutex<T>);

impl<T> Mutex<T> {
    pub fn new(_name: &'static str, value: T) -> Self {
        Mutex(LoomMutex::new(value))
    }
    pub fn lock(&self) -> MutexGuard<'_, T> {
        LockGuard {
            guard: lock(&self.0),
        }
    }
    /// `mutex_trylock`: the lock if it is free, else `None`.
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        self.0.try_lock().ok().map(|guard| LockGuard { guard })
    }
    /// The value, for the one who owns the lock itself.
    pub fn get_mut(&mut self) -> &mut T {
        self.0.get_mut().expect("loom mutex poisoned")
    }
    pub fn into_inner(self) -> T {
        self.0.into_inner().expect("loom mutex poisoned")
    }
    pub fn obj(&self) -> ObjId {
        ObjId::NONE
    }
}

/// A spinning lock (`spinlock_t`); under loom a spinner blocks, which is
/// equivalent for ordering.
pub struct SpinLock<T>(LoomMutex<T>);

impl<T> SpinLock<T> {
    pub fn new(_name: &'static str, value: T) -> Self {
        SpinLock(LoomMutex::new(value))
    }
    pub fn lock(&self) -> SpinLockGuard<'_, T> {
        LockGuard {
            guard: lock(&self.0),
        }
    }
    pub fn obj(&self) -> ObjId {
        ObjId::NONE
    }
}

// ---------------------------------------------------------------- atomics

macro_rules! atomic_int {
    ($name:ident, $loom:ty, $int:ty) => {
        /// An atomic integer over a loom atomic, which explores the values
        /// each explicit memory ordering allows a load to see.
        pub struct $name {
            v: $loom,
        }

        impl $name {
            pub fn new(_name: &'static str, v: $int) -> Self {
                $name { v: <$loom>::new(v) }
            }
            pub fn obj(&self) -> ObjId {
                ObjId::NONE
            }
            pub fn load(&self, o: Ordering) -> $int {
                self.v.load(o)
            }
            pub fn store(&self, v: $int, o: Ordering) {
                self.v.store(v, o)
            }
            pub fn fetch_add(&self, v: $int, o: Ordering) -> $int {
                self.v.fetch_add(v, o)
            }
            pub fn fetch_sub(&self, v: $int, o: Ordering) -> $int {
                self.v.fetch_sub(v, o)
            }
            pub fn compare_exchange(
                &self,
                current: $int,
                new: $int,
                success: Ordering,
                failure: Ordering,
            ) -> Result<$int, $int> {
                self.v.compare_exchange(current, new, success, failure)
            }
            /// A `SeqCst` load, for invariant checkers at the end of a
            /// model (never from model code). Under loom it is an ordinary
            /// loom operation.
            pub fn peek(&self) -> $int {
                self.v.load(Ordering::SeqCst)
            }
        }
    };
}

atomic_int!(AtomicI64, atomic::AtomicI64, i64);
atomic_int!(AtomicU64, atomic::AtomicU64, u64);
atomic_int!(AtomicU32, atomic::AtomicU32, u32);

/// `wait_var_event`: here a loop that yields to the other loom threads
/// until `until` holds of `var`'s value.
pub fn wait_var_event(var: &AtomicU64, until: impl Fn(u64) -> bool) {
    while !until(var.load(Ordering::Acquire)) {
        loom::thread::yield_now();
    }
}

/// `wake_up_var`: nothing to do, the waiter polls.
pub fn wake_up_var(_var: &AtomicU64) {}

/// An atomic flag.
pub struct AtomicBool {
    v: atomic::AtomicBool,
}

impl AtomicBool {
    pub fn new(_name: &'static str, v: bool) -> Self {
        AtomicBool {
            v: atomic::AtomicBool::new(v),
        }
    }
    pub fn load(&self, o: Ordering) -> bool {
        self.v.load(o)
    }
    pub fn store(&self, v: bool, o: Ordering) {
        self.v.store(v, o)
    }
    pub fn swap(&self, v: bool, o: Ordering) -> bool {
        self.v.swap(v, o)
    }
}

// ---------------------------------------------------------------- RCU

/// The readers inside a read-side section, by ticket. A grace period
/// waits for the tickets handed out before it began, and only those, like
/// the sim backend's reader snapshot. Nested sections simply hold two
/// tickets.
struct RcuState {
    next_ticket: u64,
    active: Vec<u64>,
    /// `synchronize_rcu` callers waiting, so readers only notify when one is.
    waiters: usize,
}

struct Rcu {
    state: LoomMutex<RcuState>,
    cv: Condvar,
}

loom::lazy_static! {
    /// One per loom execution.
    static ref RCU: Rcu = Rcu {
        state: LoomMutex::new(RcuState {
            next_ticket: 0,
            active: Vec::new(),
            waiters: 0,
        }),
        cv: Condvar::new(),
    };
}

/// Notes about RCU name no object under loom.
pub fn rcu_obj() -> ObjId {
    ObjId::NONE
}

/// Inside an `rcu_read_lock()` section; dropping it is `rcu_read_unlock()`.
pub struct RcuReadGuard {
    ticket: u64,
    _not_send: std::marker::PhantomData<*const ()>,
}

pub fn rcu_read_lock() -> RcuReadGuard {
    let mut st = lock(&RCU.state);
    let ticket = st.next_ticket;
    st.next_ticket += 1;
    st.active.push(ticket);
    RcuReadGuard {
        ticket,
        _not_send: Default::default(),
    }
}

impl Drop for RcuReadGuard {
    fn drop(&mut self) {
        let wake = {
            let mut st = lock(&RCU.state);
            st.active.retain(|&t| t != self.ticket);
            st.waiters > 0
        };
        if wake {
            RCU.cv.notify_all();
        }
    }
}

/// Wait until every reader that was inside a read-side section when the
/// call began has left it. Readers that enter afterwards are not waited
/// for. Calling it inside a read-side section deadlocks (loom reports it).
pub fn synchronize_rcu() {
    let mut st = lock(&RCU.state);
    let horizon = st.next_ticket;
    st.waiters += 1;
    while st.active.iter().any(|&t| t < horizon) {
        st = wait(&RCU.cv, st);
    }
    st.waiters -= 1;
}

// ---------------------------------------------------------------- llist

/// A lockless list (`struct llist_head`): producers add one node at a
/// time, the consumer takes the whole list at once.
pub struct LList<T> {
    nodes: LoomMutex<Vec<T>>,
}

impl<T> LList<T> {
    pub fn new(_name: &'static str) -> Self {
        LList {
            nodes: LoomMutex::new(Vec::new()),
        }
    }

    /// Add a node; true if the list was empty before (the caller then
    /// schedules the consumer).
    pub fn llist_add(&self, node: T) -> bool {
        let mut nodes = lock(&self.nodes);
        let was_empty = nodes.is_empty();
        nodes.push(node);
        was_empty
    }

    /// Take every node, newest first (the order the kernel's list has).
    pub fn llist_del_all(&self) -> Vec<T> {
        let mut all = std::mem::take(&mut *lock(&self.nodes));
        all.reverse();
        all
    }

    /// Number of nodes (for checkers; a loom operation like any other).
    pub fn peek_len(&self) -> usize {
        lock(&self.nodes).len()
    }
}

// ---------------------------------------------------------------- refcount

/// `refcount_t`, over one loom atomic with the sim backend's orderings.
pub struct Refcount {
    v: atomic::AtomicI64,
}

impl Refcount {
    pub fn new(_name: &'static str, v: i64) -> Self {
        Refcount {
            v: atomic::AtomicI64::new(v),
        }
    }

    pub fn inc(&self) {
        self.v.fetch_add(1, Ordering::Relaxed);
    }

    /// `refcount_inc` by a holder of another reference: it commutes with
    /// every other operation on the count but the last put, which cannot
    /// come while the caller holds its own, so it takes no scheduling
    /// point.
    pub fn inc_held(&self) {
        self.v.fetch_add(1, Ordering::Relaxed);
    }

    /// `refcount_inc_not_zero`: take a reference unless the count is 0.
    pub fn inc_not_zero(&self) -> bool {
        crate::inc_unless_zero(
            || self.v.load(Ordering::Relaxed),
            |cur, new| {
                self.v
                    .compare_exchange(cur, new, Ordering::Acquire, Ordering::Relaxed)
            },
        )
    }

    /// Decrement; true when it reached zero.
    pub fn dec_and_test(&self) -> bool {
        self.v.fetch_sub(1, Ordering::AcqRel) == 1
    }

    /// `refcount_dec_and_lock`: decrement, and when the count reaches zero
    /// return with `lock` held. The fast path decrements without the lock
    /// unless this is the last reference.
    pub fn dec_and_lock<'a, T>(&self, lock: &'a SpinLock<T>) -> Option<SpinLockGuard<'a, T>> {
        let mut cur = self.v.load(Ordering::Relaxed);
        while cur != 1 {
            match self
                .v
                .compare_exchange(cur, cur - 1, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return None,
                Err(now) => cur = now,
            }
        }
        let guard = lock.lock();
        if self.dec_and_test() {
            Some(guard)
        } else {
            None
        }
    }

    pub fn peek(&self) -> i64 {
        self.v.load(Ordering::SeqCst)
    }
}

// ---------------------------------------------------------------- work items

struct WqState {
    queue: VecDeque<Arc<Work>>,
    shutdown: bool,
    /// Kworkers waiting on `cv`.
    idle: usize,
    /// Kworkers started and not yet joined by `shutdown`.
    workers: Vec<loom::thread::JoinHandle<()>>,
}

/// A workqueue served by one kworker (a `loom::thread`).
pub struct Workqueue {
    state: LoomMutex<WqState>,
    cv: Condvar,
}

impl Workqueue {
    pub fn new(_name: &'static str) -> Arc<Self> {
        Arc::new(Workqueue {
            state: LoomMutex::new(WqState {
                queue: VecDeque::new(),
                shutdown: false,
                idle: 0,
                workers: Vec::new(),
            }),
            cv: Condvar::new(),
        })
    }

    /// Start the kworker as a `loom::thread`. Always `None`: the handle of
    /// a loom thread is not a `std::thread::JoinHandle`, so the workqueue
    /// keeps it and [`Workqueue::shutdown`] joins it.
    pub fn start_worker(self: &Arc<Self>, name: &str) -> Option<std::thread::JoinHandle<()>> {
        let wq = Arc::clone(self);
        let handle = loom::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || wq.worker_loop())
            .expect("spawning a loom thread");
        lock(&self.state).workers.push(handle);
        None
    }

    /// Let the kworker exit once the queue is empty, and wait until it has
    /// (loom requires every thread to finish before the model does, and the
    /// per-execution RCU state is gone once the model's main thread
    /// returns). The wait is skipped when called from the kworker itself.
    pub fn shutdown(&self) {
        let (wake, workers) = {
            let mut st = lock(&self.state);
            st.shutdown = true;
            (st.idle > 0, std::mem::take(&mut st.workers))
        };
        if wake {
            self.cv.notify_all();
        }
        let me = loom::thread::current().id();
        for h in workers {
            if h.thread().id() != me {
                h.join().expect("kworker panicked");
            }
        }
    }

    fn worker_loop(&self) {
        while let Some(work) = self.next_work() {
            work.run();
        }
    }

    fn next_work(&self) -> Option<Arc<Work>> {
        let mut st = lock(&self.state);
        loop {
            if let Some(w) = st.queue.pop_front() {
                return Some(w);
            }
            if st.shutdown {
                return None;
            }
            st.idle += 1;
            st = wait(&self.cv, st);
            st.idle -= 1;
        }
    }
}

#[derive(Default)]
struct WorkState {
    pending: bool,
    running: bool,
    /// Executions started and finished, for `flush_work`.
    started: u64,
    done: u64,
    /// `flush_work` callers waiting on `cv`.
    flushers: usize,
}

type WorkFn = Box<dyn Fn() + Send + Sync>;

/// `struct work_struct`: a function a kworker runs when it is scheduled.
pub struct Work {
    func: WorkFn,
    wq: Arc<Workqueue>,
    state: LoomMutex<WorkState>,
    cv: Condvar,
}

impl Work {
    pub fn new(
        _name: &'static str,
        wq: &Arc<Workqueue>,
        func: impl Fn() + Send + Sync + 'static,
    ) -> Arc<Self> {
        Arc::new(Work {
            func: Box::new(func),
            wq: Arc::clone(wq),
            state: LoomMutex::new(WorkState::default()),
            cv: Condvar::new(),
        })
    }

    pub fn obj(&self) -> ObjId {
        ObjId::NONE
    }

    /// Queued and not yet started (for checkers).
    pub fn peek_pending(&self) -> bool {
        lock(&self.state).pending
    }

    /// Being run by the kworker (for checkers).
    pub fn peek_running(&self) -> bool {
        lock(&self.state).running
    }

    fn run(&self) {
        {
            // The kernel clears PENDING before calling the function, so a
            // schedule_work during the run queues it again.
            let mut st = lock(&self.state);
            st.pending = false;
            st.running = true;
            st.started += 1;
        }
        (self.func)();
        let wake = {
            let mut st = lock(&self.state);
            st.running = false;
            st.done += 1;
            st.flushers > 0
        };
        if wake {
            self.cv.notify_all();
        }
    }
}

/// Queue `work` unless it is already pending; true if it was queued.
pub fn schedule_work(work: &Arc<Work>) -> bool {
    {
        let mut st = lock(&work.state);
        if st.pending {
            return false;
        }
        st.pending = true;
    }
    let wq = &work.wq;
    let wake = {
        let mut st = lock(&wq.state);
        st.queue.push_back(Arc::clone(work));
        st.idle > 0
    };
    if wake {
        wq.cv.notify_one();
    }
    true
}

/// Wait for the last queued instance of `work` to finish: the pending one
/// if it is queued, else the running one. False (no wait) when it is idle.
pub fn flush_work(work: &Work) -> bool {
    let mut st = lock(&work.state);
    let target = if st.pending {
        st.started + 1
    } else if st.running {
        st.started
    } else {
        return false;
    };
    st.flushers += 1;
    while st.done < target {
        st = wait(&work.cv, st);
    }
    st.flushers -= 1;
    true
}
