//! `std::thread::park` and `Thread::unpark` inside an execution: each
//! task has a token, as each std thread does; `unpark` makes it
//! available (waking the task if it is parked), `park` takes it or waits
//! for it where the deadlock detector sees the wait. No park returns
//! spuriously here, so a model that parks without re-checking its
//! condition is held to it. The tokens live on the OS thread the
//! execution runs on and are forgotten when the next execution starts.

use std::cell::RefCell;
use std::collections::BTreeMap;

/// Each task's token, and what it blocks on while it waits for one.
struct Token {
    available: bool,
    obj: sim::ObjId,
}

thread_local! {
    static TOKENS: RefCell<BTreeMap<sim::TaskId, Token>> = const { RefCell::new(BTreeMap::new()) };
}

/// Every task's token goes (a new execution starts).
pub(crate) fn forget_tokens() {
    TOKENS.with(|t| t.borrow_mut().clear());
}

/// `f` on `task`'s token, made (unavailable) on first use.
fn with_token<R>(task: sim::TaskId, f: impl FnOnce(&mut Token) -> R) -> R {
    TOKENS.with(|t| {
        let mut tokens = t.borrow_mut();
        let token = tokens.entry(task).or_insert_with(|| Token {
            available: false,
            obj: sim::new_object("park"),
        });
        f(token)
    })
}

/// Take the current task's token, waiting for an `unpark` when there is
/// none; with a timeout, give up once the task's virtual clock has moved
/// on by `timeout_ns`.
pub(crate) fn park(timeout_ns: Option<u64>) {
    let me = sim::current_task().expect("inside an execution");
    let obj = with_token(me, |t| t.obj);
    sim::point("park", obj, &sim::costs::STEP);
    let take = || {
        with_token(me, |t| {
            let had = t.available;
            t.available = false;
            had
        })
    };
    match timeout_ns {
        None => sim::wait_until("park", obj, take),
        Some(ns) => {
            if !take() {
                sim::sleep("park_timeout", ns);
                take();
            }
        }
    }
}

/// Make `task`'s token available, and wake it if it waits for one.
pub(crate) fn unpark(task: sim::TaskId) {
    let obj = with_token(task, |t| {
        t.available = true;
        t.obj
    });
    sim::point("unpark", obj, &sim::costs::STEP);
    sim::wake_all(obj, 0);
}
