//! inc_ucount charges every level up the tree and unwinds on failure.

use ucounts::{UcountType, UcountsNs, UcountsTable};

const IPC: UcountType = UcountType::IpcNamespaces;

#[test]
fn a_charge_is_refused_at_the_first_level_at_its_limit_and_unwound() {
    let table = UcountsTable::new();
    let init = UcountsNs::init(0);
    // The child namespace was created by uid 1000 of init: its charges
    // climb to (init, 1000).
    let owner = table.alloc_ucounts(&init, 1000);
    let child = UcountsNs::child(1, "container", &init, owner.clone());
    init.set_max(IPC, 2);
    child.set_max(IPC, 5);

    let a = table.inc_ucount(&child, 0, IPC).expect("first fits");
    let _b = table.inc_ucount(&child, 0, IPC).expect("second fits");
    assert!(
        table.inc_ucount(&child, 0, IPC).is_none(),
        "the parent's limit of 2 applies to the child's charges"
    );
    assert_eq!(
        a.peek(IPC),
        2,
        "the failed charge was unwound at the child level"
    );
    assert_eq!(owner.as_ref().unwrap().peek(IPC), 2);
    assert_eq!(table.ledger.check(&table.peek_entries()), None);

    table.dec_ucount(&a, IPC);
    let c = table
        .inc_ucount(&child, 0, IPC)
        .expect("room again after a release");
    assert_eq!(c.peek(IPC), 2);
    assert_eq!(table.ledger.check(&table.peek_entries()), None);
}

#[test]
fn a_limit_applies_to_each_user_of_a_namespace_separately() {
    // The leaf counter is per (namespace, uid); the ancestors' counters are
    // per (ancestor, owner of the child namespace), shared by all its users.
    let table = UcountsTable::new();
    let init = UcountsNs::init(0);
    let owner = table.alloc_ucounts(&init, 1000);
    let child = UcountsNs::child(1, "container", &init, owner);
    child.set_max(IPC, 1);
    init.set_max(IPC, 2);
    let _u7 = table.inc_ucount(&child, 7, IPC).expect("uid 7 fits");
    assert!(
        table.inc_ucount(&child, 7, IPC).is_none(),
        "uid 7 is at the child's limit"
    );
    let _u8 = table
        .inc_ucount(&child, 8, IPC)
        .expect("uid 8 has its own counter");
    assert!(
        table.inc_ucount(&child, 9, IPC).is_none(),
        "but (init, 1000) holds both charges and is at init's limit of 2"
    );
    let chain = ucounts::charge_chain(&child, 9);
    let keys: Vec<(u32, u32)> = chain.iter().map(|(ns, uid)| (ns.id, *uid)).collect();
    assert_eq!(keys, [(1, 9), (0, 1000)]);
    assert_eq!(table.ledger.check(&table.peek_entries()), None);
}
