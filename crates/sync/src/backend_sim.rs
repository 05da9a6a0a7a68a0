//! The default backend: scheduling points inside a simulation, ordinary
//! `parking_lot` blocking on real threads.
//!
//! Inside an execution every task runs on the same OS thread, so the
//! `parking_lot` locks below are never contended for real: the scheduler
//! decides who may take them, and a task that finds a lock taken blocks in
//! the scheduler, not in the OS.

use crate::costs;
use parking_lot as pl;
use sim::{CostKey, ObjId};
use std::collections::VecDeque;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{self, Ordering};
use std::sync::Arc;

/// Register an object of `kind` in the running execution (or none outside).
fn object(kind: &'static str) -> ObjId {
    sim::new_object(kind)
}

/// A scheduling point before a primitive operation.
#[inline]
fn op(label: &'static str, obj: ObjId, cost: &CostKey) {
    sim::point(label, obj, cost);
}

// ---------------------------------------------------------------- locks

struct LockKind {
    lock: &'static str,
    unlock: &'static str,
    cost: &'static CostKey,
}

static MUTEX_KIND: LockKind = LockKind {
    lock: "mutex_lock",
    unlock: "mutex_unlock",
    cost: &costs::MUTEX,
};
static SPIN_KIND: LockKind = LockKind {
    lock: "spin_lock",
    unlock: "spin_unlock",
    cost: &costs::SPINLOCK,
};

struct RawLock<T> {
    inner: pl::Mutex<T>,
    obj: ObjId,
    kind: &'static LockKind,
}

impl<T> RawLock<T> {
    fn new(name: &'static str, kind: &'static LockKind, value: T) -> Self {
        RawLock {
            inner: pl::Mutex::new(value),
            obj: object(name),
            kind,
        }
    }

    fn lock(&self) -> LockGuard<'_, T> {
        // Inside a task the scheduler is the lock: the object's owner is
        // its holder, so no atomic instruction is spent on a lock that can
        // never be contended for real.
        let Some(mut acquired) = sim::lock_point(self.kind.lock, self.obj, self.kind.cost) else {
            return self.lock_outside_tasks();
        };
        while !acquired {
            sim::block(self.kind.lock, self.obj, false);
            acquired = sim::lock_try_acquire(self.obj);
        }
        LockGuard {
            guard: None,
            lock: self,
            simulated: true,
        }
    }

    /// `mutex_trylock`: the lock if no task holds it, at once; `None`
    /// when one does. A scheduling point either way.
    fn try_lock(&self) -> Option<LockGuard<'_, T>> {
        match sim::lock_point(self.kind.lock, self.obj, self.kind.cost) {
            Some(true) => Some(LockGuard {
                guard: None,
                lock: self,
                simulated: true,
            }),
            Some(false) => None,
            None => self.inner.try_lock().map(|g| LockGuard {
                guard: Some(g),
                lock: self,
                simulated: false,
            }),
        }
    }

    /// A real lock: on plain threads, and for invariants and set-up code
    /// of a run. The latter must not take a lock a task holds (the task's
    /// hold is the scheduler's, not the real lock's).
    fn lock_outside_tasks(&self) -> LockGuard<'_, T> {
        if let Some(holder) = sim::lock_holder(self.obj) {
            panic!(
                "{} is held by task {} of the running execution: an invariant \
                 or set-up code cannot take it",
                sim::object_name(self.obj),
                sim::task_name(holder)
            );
        }
        LockGuard {
            guard: Some(self.inner.lock()),
            lock: self,
            simulated: false,
        }
    }

    /// The protected value read outside every task (an invariant, a model
    /// naming its state), or `None` while a task holds the lock.
    fn peek_with<R>(&self, f: impl FnOnce(&T) -> R) -> Option<R> {
        if sim::lock_holder(self.obj).is_some() {
            return None;
        }
        Some(f(&self.inner.lock()))
    }

    /// The protected value, for the task that holds the lock.
    fn data(&self) -> *mut T {
        self.inner.data_ptr()
    }
}

/// Holding a [`Mutex`] or [`SpinLock`]; releasing is a scheduling point.
pub struct LockGuard<'a, T> {
    /// The real lock's guard; `None` when a task holds the lock through
    /// the scheduler.
    guard: Option<pl::MutexGuard<'a, T>>,
    lock: &'a RawLock<T>,
    /// Taken inside an execution (the release is a scheduling point).
    simulated: bool,
}

pub type MutexGuard<'a, T> = LockGuard<'a, T>;
pub type SpinLockGuard<'a, T> = LockGuard<'a, T>;

impl<T> Deref for LockGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        match &self.guard {
            Some(g) => g,
            // SAFETY: every task of an execution runs on one OS thread, the
            // scheduler lets one task at a time hold the lock, and code
            // outside the tasks refuses to take it while one does
            // (`lock_outside_tasks`): only this guard reaches the value.
            None => unsafe { &*self.lock.data() },
        }
    }
}

impl<T> DerefMut for LockGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        match &mut self.guard {
            Some(g) => g,
            // SAFETY: as in `deref`.
            None => unsafe { &mut *self.lock.data() },
        }
    }
}

impl<T> Drop for LockGuard<'_, T> {
    fn drop(&mut self) {
        let l = self.lock;
        if self.simulated {
            // The release is the scheduling point's operation: it happens
            // once the task runs again.
            sim::unlock_point(l.kind.unlock, l.obj, l.kind.cost);
        } else {
            drop(self.guard.take());
        }
    }
}

/// A sleeping lock (`struct mutex`).
pub struct Mutex<T>(RawLock<T>);

impl<T> Mutex<T> {
    pub fn new(name: &'static str, value: T) -> Self {
        Mutex(RawLock::new(name, &MUTEX_KIND, value))
    }
    pub fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock()
    }
    /// `mutex_trylock`: the lock if it is free, else `None`.
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        self.0.try_lock()
    }
    /// The value, for the one who owns the lock itself.
    pub fn get_mut(&mut self) -> &mut T {
        self.0.inner.get_mut()
    }
    pub fn into_inner(self) -> T {
        self.0.inner.into_inner()
    }
    pub fn obj(&self) -> ObjId {
        self.0.obj
    }
    /// The protected value read outside every task (an invariant, a
    /// model naming its state), or `None` while a task holds the lock.
    pub fn peek_with<R>(&self, f: impl FnOnce(&T) -> R) -> Option<R> {
        self.0.peek_with(f)
    }
}

/// A spinning lock (`spinlock_t`). In the model a spinner waits in the
/// scheduler, which is equivalent for ordering.
pub struct SpinLock<T>(RawLock<T>);

impl<T> SpinLock<T> {
    pub fn new(name: &'static str, value: T) -> Self {
        SpinLock(RawLock::new(name, &SPIN_KIND, value))
    }
    pub fn lock(&self) -> SpinLockGuard<'_, T> {
        self.0.lock()
    }
    pub fn obj(&self) -> ObjId {
        self.0.obj
    }
    /// The protected value read outside every task (an invariant, a
    /// model naming its state), or `None` while a task holds the lock.
    pub fn peek_with<R>(&self, f: impl FnOnce(&T) -> R) -> Option<R> {
        self.0.peek_with(f)
    }
}

// ---------------------------------------------------------------- atomics

macro_rules! atomic_int {
    ($name:ident, $std:ty, $int:ty) => {
        /// An atomic integer; every operation is a scheduling point and
        /// takes an explicit memory ordering.
        pub struct $name {
            v: $std,
            obj: ObjId,
        }

        impl $name {
            pub fn new(name: &'static str, v: $int) -> Self {
                $name {
                    v: <$std>::new(v),
                    obj: object(name),
                }
            }
            pub fn obj(&self) -> ObjId {
                self.obj
            }
            pub fn load(&self, o: Ordering) -> $int {
                sim::read_point("atomic_read", self.obj, &costs::ATOMIC);
                self.v.load(o)
            }
            pub fn store(&self, v: $int, o: Ordering) {
                op("atomic_set", self.obj, &costs::ATOMIC);
                self.v.store(v, o)
            }
            pub fn fetch_add(&self, v: $int, o: Ordering) -> $int {
                op("atomic_add", self.obj, &costs::ATOMIC);
                self.v.fetch_add(v, o)
            }
            pub fn fetch_sub(&self, v: $int, o: Ordering) -> $int {
                op("atomic_sub", self.obj, &costs::ATOMIC);
                self.v.fetch_sub(v, o)
            }
            pub fn compare_exchange(
                &self,
                current: $int,
                new: $int,
                success: Ordering,
                failure: Ordering,
            ) -> Result<$int, $int> {
                op("atomic_cmpxchg", self.obj, &costs::ATOMIC);
                self.v.compare_exchange(current, new, success, failure)
            }
            /// Read without a scheduling point, for invariant checkers and
            /// reports (never from model code).
            pub fn peek(&self) -> $int {
                self.v.load(Ordering::SeqCst)
            }
        }
    };
}

atomic_int!(AtomicI64, atomic::AtomicI64, i64);
atomic_int!(AtomicU64, atomic::AtomicU64, u64);
atomic_int!(AtomicU32, atomic::AtomicU32, u32);

/// `wait_var_event`: sleep until `until` holds of `var`'s value, checked
/// again each time [`wake_up_var`] is called on it.
pub fn wait_var_event(var: &AtomicU64, until: impl Fn(u64) -> bool) {
    op("wait_var_event", var.obj, &costs::ATOMIC);
    sim::wait_until("wait_var_event: wait", var.obj, || {
        until(var.v.load(Ordering::Acquire))
    });
}

/// `wake_up_var`: the waiters of `var` check their condition again.
pub fn wake_up_var(var: &AtomicU64) {
    sim::wake_all(var.obj, 0);
}

/// An atomic flag.
pub struct AtomicBool {
    v: atomic::AtomicBool,
    obj: ObjId,
}

impl AtomicBool {
    pub fn new(name: &'static str, v: bool) -> Self {
        AtomicBool {
            v: atomic::AtomicBool::new(v),
            obj: object(name),
        }
    }
    pub fn load(&self, o: Ordering) -> bool {
        sim::read_point("atomic_read", self.obj, &costs::ATOMIC);
        self.v.load(o)
    }
    pub fn store(&self, v: bool, o: Ordering) {
        op("atomic_set", self.obj, &costs::ATOMIC);
        self.v.store(v, o)
    }
    pub fn swap(&self, v: bool, o: Ordering) -> bool {
        op("atomic_xchg", self.obj, &costs::ATOMIC);
        self.v.swap(v, o)
    }
    /// Read without a scheduling point, for invariant checkers and a
    /// model naming its state (never from model code).
    pub fn peek(&self) -> bool {
        self.v.load(Ordering::SeqCst)
    }
}

// ---------------------------------------------------------------- RCU

/// Outside a simulation, RCU is a reader-writer lock: a grace period takes
/// it for writing, which waits for every reader that holds it.
static RCU_REAL: pl::RwLock<()> = pl::RwLock::new(());

/// The RCU state of an execution: every RCU step names it, and grace
/// periods wait on it. A task that exits inside a section (a forgotten
/// guard) has left it, so an exit wakes them too.
static RCU: sim::Singleton = sim::Singleton::woken_on_exit("rcu");

/// A task's reader state, one word so that entering or leaving a section
/// is one look-up: the nesting depth in the low half, and in the high half
/// the number of outermost sections entered, so that a grace period waits
/// for the section a reader was in when it began and not for the next.
static RCU_READER: sim::TaskSlot = sim::TaskSlot::new("rcu_reader");
const DEPTH: u64 = 0xffff_ffff;
const SECTION: u64 = 1 << 32;

/// The execution's RCU object while a task runs, for notes about RCU
/// ([`ObjId::NONE`] elsewhere).
pub fn rcu_obj() -> ObjId {
    RCU.id().unwrap_or(ObjId::NONE)
}

/// Inside an `rcu_read_lock()` section; dropping it is `rcu_read_unlock()`.
pub struct RcuReadGuard {
    real: Option<pl::RwLockReadGuard<'static, ()>>,
    /// The execution's RCU object, for a section entered inside a task.
    rcu: ObjId,
    _not_send: std::marker::PhantomData<*const ()>,
}

pub fn rcu_read_lock() -> RcuReadGuard {
    let Some(rcu) = RCU.id() else {
        return RcuReadGuard {
            real: Some(RCU_REAL.read_recursive()),
            rcu: ObjId::NONE,
            _not_send: Default::default(),
        };
    };
    op("rcu_read_lock", rcu, &costs::RCU_READ);
    RCU_READER.update(rcu_enter);
    RcuReadGuard {
        real: None,
        rcu,
        _not_send: Default::default(),
    }
}

impl Drop for RcuReadGuard {
    fn drop(&mut self) {
        if self.real.take().is_none() && sim::active() {
            op("rcu_read_unlock", self.rcu, &costs::RCU_READ);
            if RCU_READER.update(rcu_exit) == Some(true) {
                sim::wake_all(self.rcu, 0);
            }
        }
    }
}

/// The current task enters a read-side section.
#[inline]
fn rcu_enter(reader: &mut u64) {
    if *reader & DEPTH == 0 {
        *reader = reader.wrapping_add(SECTION);
    }
    // No depth reaches 2^32: the add is not checked.
    *reader = reader.wrapping_add(1);
}

/// The current task leaves a read-side section: true if it was the
/// outermost, so that grace-period waiters re-check.
#[inline]
fn rcu_exit(reader: &mut u64) -> bool {
    if *reader & DEPTH != 0 {
        *reader = reader.wrapping_sub(1);
    }
    *reader & DEPTH == 0
}

/// Wait until every reader that was inside a read-side section when the
/// call began has left it. In virtual time it lasts at least one grace
/// period (`rcu_grace_period` in the cost table).
pub fn synchronize_rcu() {
    let Some(rcu) = RCU.id() else {
        drop(RCU_REAL.write());
        return;
    };
    op("synchronize_rcu", rcu, &sim::costs::STEP);
    let start = sim::now();
    sim::note("gp_start", rcu, 0);
    // Each reader inside a section now, with its state then.
    let readers = RCU_READER.scan(|t, reader| (reader & DEPTH != 0).then_some((t, reader)));
    sim::wait_until("synchronize_rcu: wait for readers", rcu, || {
        readers
            .iter()
            .all(|&(t, then)| left_section(RCU_READER.get(t), then))
    });
    let end = start + sim::cost(&costs::RCU_GRACE_PERIOD);
    sim::sleep("grace period", end.saturating_sub(sim::now()));
    sim::note("gp_end", rcu, 0);
}

/// A reader whose state was `then` inside a section has left that section
/// by the time its state is `now`: it is outside any (an exited task's
/// slot is clear), or inside a later one.
fn left_section(now: u64, then: u64) -> bool {
    now & DEPTH == 0 || now >> 32 != then >> 32
}

// ---------------------------------------------------------------- llist

/// A lockless list (`struct llist_head`): producers add one node at a
/// time, the consumer takes the whole list at once.
pub struct LList<T> {
    nodes: pl::Mutex<Vec<T>>,
    obj: ObjId,
}

impl<T> LList<T> {
    pub fn new(name: &'static str) -> Self {
        LList {
            nodes: pl::Mutex::new(Vec::new()),
            obj: object(name),
        }
    }

    /// Add a node; true if the list was empty before (the caller then
    /// schedules the consumer).
    pub fn llist_add(&self, node: T) -> bool {
        op("llist_add", self.obj, &costs::LLIST);
        let mut nodes = self.nodes.lock();
        let was_empty = nodes.is_empty();
        nodes.push(node);
        was_empty
    }

    /// Take every node, newest first (the order the kernel's list has).
    pub fn llist_del_all(&self) -> Vec<T> {
        op("llist_del_all", self.obj, &costs::LLIST);
        let mut all = std::mem::take(&mut *self.nodes.lock());
        all.reverse();
        all
    }

    /// Number of nodes, without a scheduling point (for checkers).
    pub fn peek_len(&self) -> usize {
        self.nodes.lock().len()
    }

    /// Each node, oldest first, without a scheduling point (for checkers
    /// and a model naming its state).
    pub fn peek_each(&self, mut f: impl FnMut(&T)) {
        self.nodes.lock().iter().for_each(&mut f);
    }
}

// ---------------------------------------------------------------- refcount

/// `refcount_t`.
pub struct Refcount {
    v: atomic::AtomicI64,
    obj: ObjId,
}

impl Refcount {
    pub fn new(name: &'static str, v: i64) -> Self {
        Refcount {
            v: atomic::AtomicI64::new(v),
            obj: object(name),
        }
    }

    pub fn inc(&self) {
        op("refcount_inc", self.obj, &costs::ATOMIC);
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
        op("refcount_inc_not_zero", self.obj, &costs::ATOMIC);
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
        op("refcount_dec_and_test", self.obj, &costs::ATOMIC);
        self.v.fetch_sub(1, Ordering::AcqRel) == 1
    }

    /// `refcount_dec_and_lock`: decrement, and when the count reaches zero
    /// return with `lock` held. The fast path decrements without the lock
    /// unless this is the last reference.
    pub fn dec_and_lock<'a, T>(&self, lock: &'a SpinLock<T>) -> Option<SpinLockGuard<'a, T>> {
        op("refcount_dec_not_one", self.obj, &costs::ATOMIC);
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
}

/// A workqueue served by one kworker.
pub struct Workqueue {
    obj: ObjId,
    state: pl::Mutex<WqState>,
    cv: pl::Condvar,
}

impl Workqueue {
    pub fn new(name: &'static str) -> Arc<Self> {
        Arc::new(Workqueue {
            obj: object(name),
            state: pl::Mutex::new(WqState {
                queue: VecDeque::new(),
                shutdown: false,
            }),
            cv: pl::Condvar::new(),
        })
    }

    /// Start the kworker: a daemon task inside a simulation (call it while
    /// the execution is set up), a thread outside one.
    pub fn start_worker(self: &Arc<Self>, name: &str) -> Option<std::thread::JoinHandle<()>> {
        let wq = Arc::clone(self);
        if sim::spawn(name, true, move || wq.worker_loop()).is_some() {
            return None;
        }
        let wq = Arc::clone(self);
        Some(std::thread::spawn(move || wq.worker_loop()))
    }

    /// Name the workqueue's state (`sim::Execution::name_state`): the
    /// works queued, in order, and whether it shuts down.
    pub fn name_state(&self, h: &mut dyn std::hash::Hasher) {
        let st = self.state.lock();
        h.write_usize(st.queue.len());
        st.queue.iter().for_each(|w| h.write_u32(w.obj.0));
        h.write_u8(st.shutdown as u8);
    }

    /// Let the kworker exit once the queue is empty.
    pub fn shutdown(&self) {
        self.state.lock().shutdown = true;
        self.cv.notify_all();
        sim::wake_all(self.obj, 0);
    }

    fn worker_loop(&self) {
        while let Some(work) = self.next_work() {
            work.run();
        }
    }

    fn next_work(&self) -> Option<Arc<Work>> {
        // The queue is this workqueue's: the step that takes work from it
        // (or finds it empty) touches it, whatever its scheduling point.
        sim::access(self.obj);
        let mut st = self.state.lock();
        loop {
            if let Some(w) = st.queue.pop_front() {
                return Some(w);
            }
            if st.shutdown {
                return None;
            }
            if sim::active() {
                drop(st);
                // At the end of the execution the idle kworker returns
                // rather than be unwound.
                if !sim::idle_wait("kworker wakes", self.obj) {
                    return None;
                }
                sim::access(self.obj);
                st = self.state.lock();
            } else {
                self.cv.wait(&mut st);
            }
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
}

type WorkFn = Box<dyn Fn() + Send + Sync>;

/// `struct work_struct`: a function a kworker runs when it is scheduled.
pub struct Work {
    obj: ObjId,
    func: WorkFn,
    /// Weak: the queue holds the works queued on it, and an execution that
    /// ends with work queued (a failure, a state seen before) must not
    /// leave the two holding each other.
    wq: std::sync::Weak<Workqueue>,
    state: pl::Mutex<WorkState>,
    cv: pl::Condvar,
}

impl Work {
    pub fn new(
        name: &'static str,
        wq: &Arc<Workqueue>,
        func: impl Fn() + Send + Sync + 'static,
    ) -> Arc<Self> {
        Arc::new(Work {
            obj: object(name),
            func: Box::new(func),
            wq: Arc::downgrade(wq),
            state: pl::Mutex::new(WorkState::default()),
            cv: pl::Condvar::new(),
        })
    }

    pub fn obj(&self) -> ObjId {
        self.obj
    }

    /// Queued and not yet started (for checkers).
    pub fn peek_pending(&self) -> bool {
        self.state.lock().pending
    }

    /// Being run by the kworker (for checkers).
    pub fn peek_running(&self) -> bool {
        self.state.lock().running
    }

    /// Name the work's state (`sim::Execution::name_state`): queued,
    /// running, and how many runs a `flush_work` would still wait for.
    /// The counts of runs themselves matter only to a flush under way.
    pub fn name_state(&self, h: &mut dyn std::hash::Hasher) {
        let st = self.state.lock();
        h.write_u32(self.obj.0);
        h.write_u8(st.pending as u8 | (st.running as u8) << 1);
        h.write_u64(st.started - st.done);
    }

    fn run(&self) {
        sim::point("work_run", self.obj, &costs::WORK_RUN);
        {
            // The kernel clears PENDING before calling the function, so a
            // schedule_work during the run queues it again.
            let mut st = self.state.lock();
            st.pending = false;
            st.running = true;
            st.started += 1;
        }
        sim::set_owner(self.obj, sim::current_task());
        (self.func)();
        {
            let mut st = self.state.lock();
            st.running = false;
            st.done += 1;
        }
        sim::set_owner(self.obj, None);
        sim::note("work_done", self.obj, 0);
        self.cv.notify_all();
        sim::wake_all(self.obj, 0);
    }
}

/// Queue `work` unless it is already pending; true if it was queued.
pub fn schedule_work(work: &Arc<Work>) -> bool {
    op("schedule_work", work.obj, &costs::SCHEDULE_WORK);
    // Its kworker (and whoever made the work) holds the workqueue.
    let Some(wq) = work.wq.upgrade() else {
        return false;
    };
    {
        let mut st = work.state.lock();
        if st.pending {
            return false;
        }
        st.pending = true;
    }
    wq.state.lock().queue.push_back(Arc::clone(work));
    wq.cv.notify_one();
    sim::wake_all(wq.obj, sim::cost(&costs::KWORKER_WAKEUP));
    true
}

/// Wait for the last queued instance of `work` to finish: the pending one
/// if it is queued, else the running one. False (no wait) when it is idle.
pub fn flush_work(work: &Work) -> bool {
    op("flush_work", work.obj, &costs::FLUSH_WORK);
    let target = {
        let st = work.state.lock();
        if st.pending {
            st.started + 1
        } else if st.running {
            st.started
        } else {
            return false;
        }
    };
    if sim::active() {
        sim::wait_until("flush_work: wait", work.obj, || {
            work.state.lock().done >= target
        });
    } else {
        let mut st = work.state.lock();
        while st.done < target {
            work.cv.wait(&mut st);
        }
    }
    true
}
