//! The scheduler state of a primitive that may be made outside an
//! execution (a `static`, or before `check_*` is called): its object and
//! its bookkeeping are made on first use in each execution, and kept per
//! execution, so that the same value works in every one. The object's
//! name is where the primitive was made.
//!
//! The value such a primitive guards is one for all executions, as a
//! static is, and executions that run at once on several threads (`jobs`
//! above 1) would touch it at once. Which primitives were made outside an
//! execution cannot be told (a `const fn` constructor runs at compile
//! time for a static), so an execution takes [`EXCLUSIVE`] before it
//! first uses any of them and keeps it until it ends: executions that use
//! these primitives run one at a time, whatever `jobs` says (the default
//! is 1), and the results are the same. One lock, taken by an execution
//! that holds nothing else and kept to its end, cannot deadlock.

use std::collections::BTreeMap;
use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex as HostMutex;

/// The execution that may use these primitives now, if any, by serial.
static EXCLUSIVE: (HostMutex<Option<u64>>, std::sync::Condvar) =
    (HostMutex::new(None), std::sync::Condvar::new());

/// Wait until no other execution holds [`EXCLUSIVE`], and take it for
/// execution `serial`.
fn take_exclusive(serial: u64) {
    let (owner, freed) = &EXCLUSIVE;
    let mut o = crate::mirror::unpoisoned(owner);
    while o.is_some_and(|s| s != serial) {
        o = freed.wait(o).unwrap_or_else(|e| e.into_inner());
    }
    *o = Some(serial);
}

thread_local! {
    /// What runs when the execution on this thread ends: the drops of its
    /// per-execution values (`lazy_static!`).
    static AT_END: std::cell::RefCell<Vec<Box<dyn FnOnce()>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Run `f` when the execution running on this thread ends.
pub(crate) fn at_end(f: impl FnOnce() + 'static) {
    AT_END.with(|a| a.borrow_mut().push(Box::new(f)));
}

/// An execution of the nssim API, running until this is dropped (with the
/// execution): it then runs what [`at_end`] was given, and lets go of
/// [`EXCLUSIVE`] if it took it.
pub(crate) struct Running(u64);

impl Running {
    /// The running execution's mark (`None` outside one).
    pub(crate) fn mark() -> Option<Running> {
        sim::execution_serial().map(Running)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let ends = AT_END.with(|a| std::mem::take(&mut *a.borrow_mut()));
        for end in ends {
            end();
        }
        let (owner, freed) = &EXCLUSIVE;
        let mut o = crate::mirror::unpoisoned(owner);
        if *o == Some(self.0) {
            *o = None;
            freed.notify_all();
        }
    }
}

/// Executions whose state is kept at once: at least as many as run at
/// once (one per thread); the oldest goes first, long finished by then.
const KEPT: usize = 1024;

pub(crate) struct PerExecution<S> {
    name: Name,
    /// The last execution's serial (high half) and object (low half), read
    /// without a lock on every use after the first in an execution.
    cache: AtomicU64,
    /// By execution serial: the object there and its state.
    made: HostMutex<BTreeMap<u64, (sim::ObjId, S)>>,
}

/// What the object is called: where the primitive was made, or a name
/// given to it.
enum Name {
    Site(&'static Location<'static>),
    Given(&'static str),
}

impl<S: Default> PerExecution<S> {
    pub(crate) const fn new(site: &'static Location<'static>) -> PerExecution<S> {
        PerExecution {
            name: Name::Site(site),
            cache: AtomicU64::new(0),
            made: HostMutex::new(BTreeMap::new()),
        }
    }

    pub(crate) const fn named(name: &'static str) -> PerExecution<S> {
        PerExecution {
            name: Name::Given(name),
            cache: AtomicU64::new(0),
            made: HostMutex::new(BTreeMap::new()),
        }
    }

    /// `f` with the object and state of the running execution. No
    /// scheduling point may be taken in `f`. Outside one (a guard dropped
    /// while an ended execution is torn down) `f` gets no object and a
    /// state of its own, which nothing reads again.
    pub(crate) fn with<R>(&self, f: impl FnOnce(sim::ObjId, &mut S) -> R) -> R {
        let Some(serial) = sim::execution_serial() else {
            return f(sim::ObjId::NONE, &mut S::default());
        };
        take_exclusive(serial);
        let mut made = crate::mirror::unpoisoned(&self.made);
        if !made.contains_key(&serial) {
            if made.len() >= KEPT {
                made.pop_first();
            }
            let obj = sim::new_object(self.name());
            made.insert(serial, (obj, S::default()));
        }
        let (obj, state) = made.get_mut(&serial).expect("made above");
        f(*obj, state)
    }

    /// What the object is called in traces.
    pub(crate) fn name(&self) -> &'static str {
        match self.name {
            Name::Site(site) => crate::mirror::site_name(site),
            Name::Given(name) => name,
        }
    }

    /// The running execution's object (`ObjId::NONE` outside one).
    pub(crate) fn obj(&self) -> sim::ObjId {
        let Some(serial) = sim::execution_serial() else {
            return sim::ObjId::NONE;
        };
        let cached = self.cache.load(Ordering::Relaxed);
        if serial < 1 << 32 && cached >> 32 == serial {
            return sim::ObjId(cached as u32);
        }
        let obj = self.with(|obj, _| obj);
        self.cache
            .store(serial << 32 | u64::from(obj.0), Ordering::Relaxed);
        obj
    }
}
