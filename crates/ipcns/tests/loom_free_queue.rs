//! The ipc free queue under loom, every interleaving of two small models,
//! with max_ipc_namespaces = 1 and the kworker freeing in the background:
//! a task drops its only ipc namespace (which goes to the free queue) and
//! at once asks for a new one (window 1 of docs/ipc-free-queue.md); and a
//! task creates one while another drops the one it holds (window 2). Run
//! with
//! `RUSTFLAGS="--cfg loom" cargo test -p nssim-ipcns --profile loom --test loom_free_queue`.
#![cfg(loom)]

use ipcns::{Ipc, IpcNamespace, IpcPatches};
use loom::model::Builder;
use std::panic::{catch_unwind, AssertUnwindSafe};
use sync::{Arc, Workqueue};
use ucounts::{UcountType, UcountsNs, UcountsTable};

const FREE_PENDING: &str = "ENOSPC while a free was still pending";
const FREE_DONE: &str = "ENOSPC although the free had already completed";

/// The subsystem with its kworker under max_ipc_namespaces = 1, and the
/// one namespace that fits.
fn one_namespace_allowed(
    patches: IpcPatches,
) -> (Arc<Workqueue>, Arc<UcountsNs>, Arc<Ipc>, Arc<IpcNamespace>) {
    let wq = Workqueue::new("system_wq");
    wq.start_worker("kworker");
    let init = UcountsNs::init(0);
    init.set_max(UcountType::IpcNamespaces, 1);
    let ipc = Ipc::new(patches, Arc::new(UcountsTable::new()), &init, &wq, None);
    let first = ipc
        .create_ipc_ns(&init, 0, None)
        .expect("the first namespace fits");
    (wq, init, ipc, first)
}

/// Put the only namespace, then create another; panic with a message that
/// says in which state an ENOSPC happened.
fn put_then_create(patches: IpcPatches) {
    let (wq, init, ipc, first) = one_namespace_allowed(patches);
    ipc.put_ipc_ns(first);
    let second = ipc.create_ipc_ns(&init, 0, None);
    // No more puts follow, so a free seen pending here was pending when
    // create_ipc_ns gave up.
    let pending =
        ipc.peek_pending() > 0 || ipc.free_work().peek_pending() || ipc.free_work().peek_running();
    match second {
        Ok(ns) => ipc.put_ipc_ns(ns),
        Err(_) if pending => {
            wq.shutdown();
            panic!("{FREE_PENDING}");
        }
        Err(_) => {
            wq.shutdown();
            panic!("{FREE_DONE}");
        }
    }
    wq.shutdown();
}

fn patches(wait_pending_free: bool) -> IpcPatches {
    IpcPatches {
        async_free: true,
        wait_pending_free,
        batch_free: true,
        free_no_grace_period: false,
        ..IpcPatches::default()
    }
}

/// v6.3 with the candidate fixes: `ipc-retry-after-free` (window 1) and
/// `ipc-pending-at-release` (window 2).
fn fixed(retry_after_free: bool, pending_at_release: bool) -> IpcPatches {
    IpcPatches {
        retry_after_free,
        pending_at_release,
        ..patches(true)
    }
}

/// Window 2's model: another task holds the only namespace
/// (max_ipc_namespaces = 1) and drops it; once it is released this task
/// creates one, while the other may still be queueing it. The oracle of
/// `ipc.no_false_enospc` judges the create: an ENOSPC is false when no
/// namespace was alive at any instant of the call.
fn release_while_creating(patches: IpcPatches) {
    let (wq, init, ipc, held) = one_namespace_allowed(patches);
    let putter = {
        let ipc = Arc::clone(&ipc);
        loom::thread::spawn(move || ipc.put_ipc_ns(held))
    };
    // The call begins once the other namespace is released (its last
    // reference gone), while its queueing and work may still be to come.
    while ipc.oracle.released_and_freed().0 == 0 {
        loom::thread::yield_now();
    }
    let call = ipc.oracle.begin_call(ucounts::charge_chain(&init, 0));
    let created = ipc.create_ipc_ns(&init, 0, None);
    ipc.oracle.end_call(call, created.is_err(), "creator");
    putter.join().expect("the putter finishes");
    if let Ok(ns) = created {
        ipc.put_ipc_ns(ns);
    }
    wq.shutdown();
    if let Some(v) = ipc.oracle.take_violation() {
        panic!("{v}");
    }
}

/// The first false ENOSPC loom finds in window 2's model, if any.
fn window_2_failure(patches: IpcPatches) -> Option<String> {
    let mut b = Builder::new();
    b.preemption_bound = Some(2);
    catch_unwind(AssertUnwindSafe(|| {
        b.check(move || release_while_creating(patches))
    }))
    .err()
    .map(message)
}

fn message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// The first failure loom finds, if any.
fn first_failure(wait: bool) -> Option<String> {
    first_failure_with(patches(wait))
}

/// The first failure loom finds under `patches`, if any.
fn first_failure_with(patches: IpcPatches) -> Option<String> {
    let mut b = Builder::new();
    b.preemption_bound = Some(2);
    catch_unwind(AssertUnwindSafe(|| {
        b.check(move || put_then_create(patches))
    }))
    .err()
    .map(message)
}

#[test]
fn without_the_waiting_patch_allocation_fails_while_a_free_is_pending() {
    let found = first_failure(false).expect("loom finds the false ENOSPC");
    assert!(found.contains(FREE_PENDING), "unexpected failure: {found}");
}

/// The contract of the v6.3 fix ("fail the allocation only if no frees are
/// pending"): loom finds no ENOSPC while a free is pending or running. The
/// residual window, where the free completes between the failed charge and
/// flush_work, is the next test.
#[test]
fn with_the_waiting_patch_allocation_never_fails_while_a_free_is_pending() {
    let mut b = Builder::new();
    b.preemption_bound = Some(2);
    b.check(|| {
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| put_then_create(patches(true)))) {
            let msg = message(p);
            assert!(!msg.contains(FREE_PENDING), "{msg}");
        }
    });
}

/// flush_work returning false means "no free pending now", not "no free
/// since the charge failed": loom reaches v6.3's residual window, as the
/// simulator's exhaustive search does.
#[test]
fn with_the_waiting_patch_the_residual_window_is_reachable() {
    let found = first_failure(true).expect("loom reaches the residual window");
    assert!(found.contains(FREE_DONE), "{found}");
}

/// `ipc-retry-after-free` closes the residual window: with it, loom finds
/// no ENOSPC at all in the put-then-create model.
#[test]
fn with_the_retry_after_free_patch_the_residual_window_is_closed() {
    assert_eq!(first_failure_with(fixed(true, false)), None);
}

/// Window 2: a namespace released while another task's charge fails. v6.3
/// gives a false ENOSPC there, and so does v6.3 with only window 1's fix.
#[test]
fn without_the_pending_count_a_release_during_the_create_gives_a_false_enospc() {
    for patches in [patches(true), fixed(true, false)] {
        let found = window_2_failure(patches).expect("loom finds the false ENOSPC");
        assert!(found.contains("returned ENOSPC"), "{patches:?}: {found}");
    }
}

/// Both candidate fixes together: no false ENOSPC in either model.
#[test]
fn with_both_fixes_loom_finds_no_false_enospc() {
    assert_eq!(window_2_failure(fixed(true, true)), None);
    assert_eq!(first_failure_with(fixed(true, true)), None);
}
