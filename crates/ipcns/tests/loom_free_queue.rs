//! The ipc free queue under loom, every interleaving of a small model: a
//! task drops its only ipc namespace (which goes to the free queue) and at
//! once asks for a new one, with max_ipc_namespaces = 1, while the kworker
//! frees the old one. Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p nssim-ipcns --profile loom --test loom_free_queue`.
#![cfg(loom)]

use ipcns::{Ipc, IpcPatches};
use loom::model::Builder;
use std::panic::{catch_unwind, AssertUnwindSafe};
use sync::{Arc, Workqueue};
use ucounts::{UcountType, UcountsNs, UcountsTable};

const FREE_PENDING: &str = "ENOSPC while a free was still pending";
const FREE_DONE: &str = "ENOSPC although the free had already completed";

/// Put the only namespace, then create another; panic with a message that
/// says in which state an ENOSPC happened.
fn put_then_create(patches: IpcPatches) {
    let wq = Workqueue::new("system_wq");
    wq.start_worker("kworker");
    let init = UcountsNs::init(0);
    init.set_max(UcountType::IpcNamespaces, 1);
    let ipc = Ipc::new(patches, Arc::new(UcountsTable::new()), &init, &wq);
    let first = ipc
        .create_ipc_ns(&init, 0)
        .expect("the first namespace fits");
    ipc.put_ipc_ns(first);
    let second = ipc.create_ipc_ns(&init, 0);
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
    }
}

fn message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// The first failure loom finds, if any.
fn first_failure(wait: bool) -> Option<String> {
    let mut b = Builder::new();
    b.preemption_bound = Some(2);
    catch_unwind(AssertUnwindSafe(|| {
        b.check(move || put_then_create(patches(wait)))
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
