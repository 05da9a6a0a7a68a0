//! rlimit counters: charged at every level, compared at the leaf with the
//! caller's rlimit and above with the creator's recorded rlimit (v5.16), or
//! each level with its own namespace's value (before).

use std::sync::Arc;
use ucounts::{
    dec_rlimit_put_ucounts, dec_rlimit_ucounts, inc_rlimit_get_ucounts, inc_rlimit_ucounts,
    is_rlimit_overlimit, OverUnwind, RlimitCheck, RlimitType, SysctlError, UcountType, Ucounts,
    UcountsNs, UcountsTable, LONG_MAX, RLIM_INFINITY,
};

const NPROC: RlimitType = RlimitType::Nproc;

/// init ─ "container" made by uid 1000 whose RLIMIT_NPROC was `creator`.
fn container(table: &UcountsTable, creator: u64) -> (Arc<UcountsNs>, Arc<UcountsNs>) {
    let init = UcountsNs::init(0);
    let owner = table.alloc_ucounts(&init, 1000);
    let mut rl = [RLIM_INFINITY; RlimitType::COUNT];
    rl[NPROC as usize] = creator;
    let child = UcountsNs::child_with_rlimits(1, "container", &init, owner, rl);
    (init, child)
}

fn charge(table: &UcountsTable, u: &Arc<Ucounts>, n: i64) {
    for _ in 0..n {
        inc_rlimit_ucounts(table, u, NPROC, 1, RlimitCheck::NamespaceBelow);
    }
}

#[test]
fn the_creators_rlimit_bounds_everything_its_namespaces_do_since_v5_16() {
    let table = UcountsTable::new();
    let (init, child) = container(&table, 10);
    // uid 1000 runs 4 processes on the host, 6 more in the container, as
    // several uids of the container.
    let host = table.alloc_ucounts(&init, 1000).unwrap();
    charge(&table, &host, 4);
    let a = table.alloc_ucounts(&child, 100_000).unwrap();
    let b = table.alloc_ucounts(&child, 100_001).unwrap();
    charge(&table, &a, 3);
    charge(&table, &b, 3);
    assert_eq!(host.peek_rlimit(NPROC), 10, "(init, 1000) sums all of them");
    // Each container uid is within its own rlimit of 10 ...
    assert!(!is_rlimit_overlimit(
        &a,
        NPROC,
        10,
        RlimitCheck::NamespaceBelow
    ));
    // ... and one more makes (init, 1000) exceed the creator's 10.
    charge(&table, &b, 1);
    assert!(is_rlimit_overlimit(
        &b,
        NPROC,
        10,
        RlimitCheck::NamespaceBelow
    ));
    assert!(is_rlimit_overlimit(
        &a,
        NPROC,
        10,
        RlimitCheck::NamespaceBelow
    ));
    // Before v5.16 (init, 1000) was compared with init's own (unlimited)
    // value: the container escapes its creator's limit.
    assert!(!is_rlimit_overlimit(
        &b,
        NPROC,
        10,
        RlimitCheck::OwnNamespace
    ));
}

#[test]
fn before_v5_16_a_level_is_also_held_to_its_own_namespace_value() {
    let table = UcountsTable::new();
    let (_init, child) = container(&table, 3);
    let u = table.alloc_ucounts(&child, 5).unwrap();
    charge(&table, &u, 4);
    // The leaf's own namespace recorded 3: over under the old rule even
    // with a caller rlimit of 100 ...
    assert!(is_rlimit_overlimit(
        &u,
        NPROC,
        100,
        RlimitCheck::OwnNamespace
    ));
    // ... under the new rule the leaf answers to the caller's rlimit, and
    // the parent level (4 of 3) to the namespace below: over too.
    assert!(is_rlimit_overlimit(
        &u,
        NPROC,
        100,
        RlimitCheck::NamespaceBelow
    ));
    assert_eq!(
        ucounts::rlimit::level_maxima(&u, NPROC, 100, RlimitCheck::NamespaceBelow),
        [100, 3]
    );
    assert_eq!(
        ucounts::rlimit::level_maxima(&u, NPROC, 100, RlimitCheck::OwnNamespace),
        [3, LONG_MAX]
    );
}

#[test]
fn inc_rlimit_ucounts_reports_a_level_over_its_maximum_and_dec_undoes_it() {
    let table = UcountsTable::new();
    let (_init, child) = container(&table, 2);
    let u = table.alloc_ucounts(&child, 7).unwrap();
    assert_eq!(
        inc_rlimit_ucounts(&table, &u, NPROC, 1, RlimitCheck::NamespaceBelow),
        1
    );
    assert_eq!(
        inc_rlimit_ucounts(&table, &u, NPROC, 1, RlimitCheck::NamespaceBelow),
        2
    );
    assert_eq!(
        inc_rlimit_ucounts(&table, &u, NPROC, 1, RlimitCheck::NamespaceBelow),
        LONG_MAX,
        "the parent level is at 3, above the recorded 2"
    );
    assert!(!dec_rlimit_ucounts(&table, &u, NPROC, 1));
    assert!(!dec_rlimit_ucounts(&table, &u, NPROC, 1));
    assert!(
        dec_rlimit_ucounts(&table, &u, NPROC, 1),
        "the leaf is back at 0"
    );
    assert_eq!(table.ledger.check(&table.peek_entries()), None);
    assert!(table.ledger.outstanding_rlimits().is_empty());
}

#[test]
fn inc_rlimit_get_ucounts_pins_each_level_from_zero_and_unwinds_all_on_failure() {
    let table = UcountsTable::new();
    let (init, child) = container(&table, 1);
    let u = table.alloc_ucounts(&child, 7).unwrap();
    let parent = table.alloc_ucounts(&init, 1000).unwrap();
    let (refs_leaf, refs_parent) = (u.peek_refs(), parent.peek_refs());
    let sig = RlimitType::Sigpending;
    let mut rl = [RLIM_INFINITY; RlimitType::COUNT];
    rl[sig as usize] = 1;
    let tight = UcountsNs::child_with_rlimits(2, "tight", &init, Some(Arc::clone(&parent)), rl);
    let t = table.alloc_ucounts(&tight, 7).unwrap();
    let charge = || {
        inc_rlimit_get_ucounts(
            &table,
            &t,
            sig,
            false,
            RlimitCheck::NamespaceBelow,
            OverUnwind::TakesBack,
        )
    };
    assert_eq!(charge(), 1);
    assert_eq!(t.peek_refs(), 2, "0 -> 1 at the leaf takes a reference");
    assert_eq!(parent.peek_refs(), refs_parent + 1, "and at the parent");
    // A second signal: the parent level reaches 2, above the recorded 1.
    assert_eq!(charge(), 0);
    assert_eq!(t.peek_rlimit(sig), 1, "fully unwound");
    assert_eq!(parent.peek_rlimit(sig), 1);
    // v6.12's override_rlimit skips the maxima.
    assert_eq!(
        inc_rlimit_get_ucounts(
            &table,
            &t,
            sig,
            true,
            RlimitCheck::NamespaceBelow,
            OverUnwind::TakesBack
        ),
        2
    );
    dec_rlimit_put_ucounts(&table, &t, sig);
    dec_rlimit_put_ucounts(&table, &t, sig);
    assert_eq!(t.peek_refs(), 1, "the last decrement dropped the pin");
    assert_eq!(parent.peek_refs(), refs_parent);
    assert_eq!(u.peek_refs(), refs_leaf);
    assert_eq!(table.ledger.check(&table.peek_entries()), None);
}

/// Before v6.12 the level found over its maximum kept the one it was
/// given: each refused charge leaks a count there, the ledger's check
/// names it, and a later charge is refused although nothing is counted.
#[test]
fn inc_rlimit_get_ucounts_before_v6_12_leaks_the_level_over_its_maximum() {
    let table = UcountsTable::new();
    let (init, _) = container(&table, 1);
    let parent = table.alloc_ucounts(&init, 1000).unwrap();
    let sig = RlimitType::Sigpending;
    let mut rl = [RLIM_INFINITY; RlimitType::COUNT];
    rl[sig as usize] = 1;
    let tight = UcountsNs::child_with_rlimits(2, "tight", &init, Some(Arc::clone(&parent)), rl);
    let t = table.alloc_ucounts(&tight, 7).unwrap();
    let charge = |unwind| {
        inc_rlimit_get_ucounts(&table, &t, sig, false, RlimitCheck::NamespaceBelow, unwind)
    };
    assert_eq!(charge(OverUnwind::Leaks), 1);
    assert_eq!(charge(OverUnwind::Leaks), 0, "the parent level is over 1");
    assert_eq!(
        parent.peek_rlimit(sig),
        2,
        "the refused charge stays at the parent"
    );
    dec_rlimit_put_ucounts(&table, &t, sig);
    assert_eq!((t.peek_rlimit(sig), parent.peek_rlimit(sig)), (0, 1));
    assert!(
        table.ledger.check(&table.peek_entries()).is_some(),
        "the leak is seen"
    );
    assert_eq!(charge(OverUnwind::Leaks), 0, "refused with nothing counted");
}

#[test]
fn the_last_put_unhashes_and_frees_and_a_new_lookup_makes_a_new_entry() {
    let table = UcountsTable::new();
    let init = UcountsNs::init(0);
    let a = table.alloc_ucounts(&init, 5).unwrap();
    let again = table.alloc_ucounts(&init, 5).unwrap();
    assert!(Arc::ptr_eq(&a, &again));
    assert_eq!(a.peek_refs(), 2);
    table.put_ucounts(&again);
    table.put_ucounts(&a);
    assert!(a.is_freed());
    assert!(table.peek_hashed(0, 5).is_none());
    let b = table.alloc_ucounts(&init, 5).unwrap();
    assert!(!Arc::ptr_eq(&a, &b) && !b.is_freed());
}

#[test]
fn every_ucount_type_has_a_sysctl_and_a_release() {
    for t in UcountType::ALL {
        assert_eq!(UcountType::from_sysctl(t.sysctl()), Some(t));
        assert!(t.since().starts_with('v'));
        assert!(t.kernel_name().starts_with("UCOUNT_"));
    }
    assert_eq!(UcountType::TimeNamespaces.since(), "v5.7");
    assert_eq!(UcountType::InotifyWatches.since(), "v4.11");
}

#[test]
fn max_sysctls_need_cap_sys_resource_and_a_range() {
    let init = UcountsNs::init(0);
    let t = UcountType::UserNamespaces;
    assert_eq!(
        init.sysctl_write(t, 5, false),
        Err(SysctlError::NotPermitted)
    );
    assert_eq!(init.sysctl_read(t), ucounts::UCOUNT_MAX_LIMIT);
    assert_eq!(init.sysctl_write(t, -1, true), Err(SysctlError::OutOfRange));
    assert_eq!(init.sysctl_write(t, 5, true), Ok(()));
    assert_eq!(init.sysctl_read(t), 5);
    use ucounts::sysctl::default_max;
    assert_eq!(default_max(t, true, 126_000, 1 << 20), 63_000);
    assert_eq!(
        default_max(UcountType::InotifyInstances, true, 126_000, 1 << 20),
        128
    );
    assert_eq!(
        default_max(t, false, 126_000, 1 << 20),
        ucounts::UCOUNT_MAX_LIMIT
    );
}

/// `ucounts.balanced`'s ledger check passes once and stands until the
/// ledger changes: a charge that ends with a counter it did not charge
/// (the v5.15 to v6.11 leak of a level over its maximum) is found after a
/// pass, by the check right after it.
#[test]
fn the_balance_check_looks_again_once_a_charge_ended() {
    let table = UcountsTable::new();
    let (_init, child) = container(&table, 1);
    let leaf = table.alloc_ucounts(&child, 100_000).unwrap();
    let get = |table: &UcountsTable| {
        inc_rlimit_get_ucounts(
            table,
            &leaf,
            NPROC,
            false,
            RlimitCheck::NamespaceBelow,
            OverUnwind::Leaks,
        )
    };
    assert_eq!(table.ledger.check_live(), None);
    assert_eq!(get(&table), 1, "within the creator's 1");
    assert_eq!(
        table.ledger.check_live(),
        None,
        "balanced, and so it stands"
    );
    assert_eq!(table.ledger.check_live(), None);
    assert_eq!(get(&table), 0, "(init, 1000) over the creator's 1");
    let found = table.ledger.check_live().expect("the leaked count");
    assert!(found.contains("is 2, but 1 is charged"), "{found}");
}
