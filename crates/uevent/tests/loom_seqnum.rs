//! Sequence numbers under loom, every interleaving (up to two preemptions)
//! of two tasks that inject uevents into two network namespaces at once.
//! Run with `RUSTFLAGS="--cfg loom" cargo test --profile loom -p nssim-uevent
//! --test loom_seqnum --target-dir target/loom`.
//!
//! * With the 2018 per-namespace proposal (`uevent-netns-seqnum`), each
//!   namespace not owned by the initial user namespace counts under its
//!   own `sk_mutex`: no number is handed out twice within a namespace.
//! * With the global counter, under `uevent_sock_mutex` (v3.4–v6.8) or
//!   atomic (v6.9), no number is handed out twice at all.
//! * The per-namespace numbering does repeat numbers across namespaces,
//!   which the global-uniqueness check finds: the check can fail.
#![cfg(loom)]

use loom::model::Builder;
use loom::thread;
use std::panic::{catch_unwind, AssertUnwindSafe};
use sync::{Arc, Workqueue};
use uevent::{Net, Uevent, UeventPatches};
use userns::{CapSet, Cred, Userns, UsernsPatches};

fn builder() -> Builder {
    let mut b = Builder::new();
    b.preemption_bound = Some(2);
    b
}

/// Injections into namespaces `a` (index 0) and `b` (index 1): one task
/// injects into a then b, the other into b then a. Returns the
/// (namespace, seqnum) pairs handed out.
fn inject_crosswise(patches: UeventPatches) -> Vec<(usize, u64)> {
    let wq = Workqueue::new("netns");
    let sys = Userns::standalone(UsernsPatches::NEWEST);
    let user = Cred::new(&sys.init, 1000, 1000, CapSet::EMPTY);
    // The container's root, capable over the namespaces it owns.
    let root = Arc::new(sys.create_user_ns(&user, "container").expect("no limit"));
    let u = Uevent::new(patches, &sys, &wq);
    let nets: Arc<Vec<Arc<Net>>> = Arc::new(
        (0..2)
            .map(|_| u.copy_net_ns(&root.user_ns, 1000).expect("below the limit"))
            .collect(),
    );
    let task = |order: [usize; 2]| {
        let (u, nets, root) = (Arc::clone(&u), Arc::clone(&nets), Arc::clone(&root));
        thread::spawn(move || {
            order
                .iter()
                .map(|&i| {
                    let seqnum = u
                        .uevent_net_rcv_skb(&nets[i], &root, "add@/devices/x")
                        .expect("a capable injection");
                    (i, seqnum)
                })
                .collect::<Vec<_>>()
        })
    };
    let t1 = task([0, 1]);
    let t2 = task([1, 0]);
    let mut all = t1.join().unwrap();
    all.extend(t2.join().unwrap());
    all
}

fn duplicates(numbers: impl Iterator<Item = u64>) -> Option<u64> {
    let mut seen = std::collections::BTreeSet::new();
    numbers.into_iter().find(|n| !seen.insert(*n))
}

fn per_netns() -> UeventPatches {
    UeventPatches {
        inject: true,
        restrict: true,
        netns_seqnum: true,
        ..UeventPatches::default()
    }
}

fn global(atomic_seqnum: bool) -> UeventPatches {
    UeventPatches {
        netns_seqnum: false,
        atomic_seqnum,
        ..per_netns()
    }
}

#[test]
fn per_namespace_locks_never_repeat_a_number_within_a_namespace() {
    builder().check(|| {
        let all = inject_crosswise(per_netns());
        for ns in 0..2 {
            let mine = all.iter().filter(|(i, _)| *i == ns).map(|(_, n)| *n);
            assert_eq!(duplicates(mine), None, "namespace {ns}: {all:?}");
        }
        let mut a: Vec<u64> = all
            .iter()
            .filter(|(i, _)| *i == 0)
            .map(|(_, n)| *n)
            .collect();
        a.sort();
        assert_eq!(a, [1, 2], "each namespace counts from 1");
    });
}

#[test]
fn the_global_counter_never_repeats_a_number() {
    for atomic in [false, true] {
        builder().check(move || {
            let all = inject_crosswise(global(atomic));
            assert_eq!(duplicates(all.iter().map(|(_, n)| *n)), None, "{all:?}");
        });
    }
}

#[test]
fn per_namespace_numbers_repeat_across_namespaces() {
    let failure = catch_unwind(AssertUnwindSafe(|| {
        builder().check(|| {
            let all = inject_crosswise(per_netns());
            assert_eq!(
                duplicates(all.iter().map(|(_, n)| *n)),
                None,
                "a number handed out twice"
            );
        })
    }));
    let message = failure.expect_err("per-namespace numbering repeats numbers globally");
    let text = message
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(text.contains("a number handed out twice"), "{text}");
}
