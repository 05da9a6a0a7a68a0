//! Accesses with orderings weaker than `SeqCst`, noted for the report.
//! nssim explores sequentially consistent executions only: a `Relaxed`,
//! `Acquire` or `Release` access may allow, on real hardware, outcomes no
//! explored execution shows (loom's store-buffering test's `(0, 0)`). A
//! check notes every atomic that is accessed so, and its report says
//! which, so that a pass is not read as covering them.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// What one check has noted: `site: op Ordering`.
pub(crate) type Noted = Arc<Mutex<BTreeSet<String>>>;

thread_local! {
    /// The running check's notes, on the OS thread its executions run on.
    static NOTES: RefCell<Option<Noted>> = const { RefCell::new(None) };
}

/// The executions that run on this thread from now on note into `notes`.
pub(crate) fn install(notes: &Noted) {
    NOTES.with(|n| *n.borrow_mut() = Some(Arc::clone(notes)));
}

/// Note an access of the atomic named `site` by `op` with `order`, if the
/// order is weaker than `SeqCst` and a check runs.
pub(crate) fn noted(site: &str, op: &str, order: Ordering) {
    if order == Ordering::SeqCst || !sim::active() {
        return;
    }
    NOTES.with(|n| {
        if let Some(notes) = &*n.borrow() {
            let line = format!("{site}: {op} {order:?}");
            crate::mirror::unpoisoned(notes).insert(line);
        }
    });
}
