//! ucounts' concurrent core under loom, every interleaving of small models:
//! `inc_ucount` near the limit at two levels, and a look-up racing the
//! last `put_ucounts`. Run with
//! `RUSTFLAGS="--cfg loom" cargo test --profile loom -p nssim-ucounts --test loom_ucounts --target-dir target/loom`.
#![cfg(loom)]

use loom::model::Builder;
use loom::thread;
use std::panic::{catch_unwind, AssertUnwindSafe};
use sync::Arc;
use ucounts::{UcountType, UcountsNs, UcountsTable};

const T: UcountType = UcountType::UserNamespaces;

fn builder() -> Builder {
    let mut b = Builder::new();
    b.preemption_bound = Some(3);
    b
}

fn message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// init (max `init_max`) ─ "container" owned by uid 1000 (max `child_max`);
/// two tasks of the container, uids `uid_a` and `uid_b`, each charge one
/// object at once. Afterwards no level is above its maximum, the number of
/// successes is what the limits allow, and a failed charge left nothing
/// behind at any level.
fn two_charges(init_max: i64, child_max: i64, uid_a: u32, uid_b: u32, want_ok: usize) {
    builder().check(move || {
        let table = Arc::new(UcountsTable::new());
        let init = UcountsNs::init(0);
        let owner = table.alloc_ucounts(&init, 1000);
        let child = UcountsNs::child(1, "container", &init, owner.clone());
        init.set_max(T, init_max);
        child.set_max(T, child_max);
        let spawn = |uid: u32| {
            let (table, child) = (Arc::clone(&table), Arc::clone(&child));
            thread::spawn(move || table.inc_ucount(&child, uid, T))
        };
        let (a, b) = (spawn(uid_a), spawn(uid_b));
        let results = [a.join().unwrap(), b.join().unwrap()];
        let ok: Vec<_> = results.iter().flatten().collect();
        assert_eq!(ok.len(), want_ok, "successful charges");
        let parent = owner.as_ref().unwrap();
        assert!(parent.peek(T) <= init_max, "(init, 1000) above init's max");
        assert_eq!(
            parent.peek(T),
            ok.len() as i64,
            "a failed charge left (init, 1000) charged"
        );
        for uid in [uid_a, uid_b] {
            let charged_here = ok.iter().filter(|u| u.uid == uid).count() as i64;
            let leaf = table.peek_hashed(child.id, uid);
            let have = leaf.map_or(0, |l| l.peek(T));
            assert!(
                have <= child_max,
                "(container, {uid}) above the container's max"
            );
            assert_eq!(
                have, charged_here,
                "a failed charge left (container, {uid}) charged"
            );
        }
        assert_eq!(table.ledger.check(&table.peek_entries()), None);
    });
}

#[test]
fn two_users_near_the_parent_limit_one_charge_fits_and_the_other_unwinds() {
    // Each leaf has room; (init, 1000) has room for one.
    two_charges(1, 5, 7, 8, 1);
}

#[test]
fn one_user_near_its_own_limit_one_charge_fits_and_the_other_unwinds() {
    // (container, 7) has room for one; the parent for both.
    two_charges(5, 1, 7, 7, 1);
}

#[test]
fn both_levels_with_room_for_exactly_two_take_both() {
    two_charges(2, 2, 7, 7, 2);
}

/// One task drops the only reference to (init, 5) while another looks it
/// up (or inserts it anew) and then uses and drops what it got.
fn lookup_vs_last_put(table: UcountsTable) {
    let table = Arc::new(table);
    let init = UcountsNs::init(0);
    let first = table.alloc_ucounts(&init, 5).expect("first entry");
    let putter = {
        let (table, first) = (Arc::clone(&table), Arc::clone(&first));
        thread::spawn(move || table.put_ucounts(&first))
    };
    let got = table.alloc_ucounts(&init, 5).expect("an entry");
    // Using what the look-up returned: put_ucounts dereferences it.
    table.put_ucounts(&got);
    putter.join().unwrap();
    assert!(
        first.is_freed(),
        "every reference to the first entry was dropped"
    );
    assert!(got.is_freed(), "every reference to the entry was dropped");
    assert!(
        table.peek_hashed(0, 5).is_none(),
        "a freed entry is still hashed"
    );
}

#[test]
fn a_lookup_never_resurrects_an_entry_the_last_put_is_freeing() {
    builder().check(|| lookup_vs_last_put(UcountsTable::new()));
}

/// With the decrement outside the lock, the look-up finds the entry at
/// count zero, takes it back to one and returns it; the putter then
/// unhashes and frees it under the finder's feet, and the finder uses it
/// (or frees it a second time with its own last put).
#[test]
fn with_the_racy_put_a_lookup_returns_an_entry_that_is_then_freed() {
    let found = catch_unwind(AssertUnwindSafe(|| {
        builder().check(|| lookup_vs_last_put(UcountsTable::with_put_race()))
    }))
    .err()
    .map(message)
    .expect("loom finds the resurrected entry");
    assert!(
        found.contains("ucounts used after free"),
        "unexpected failure: {found}"
    );
}
