//! Cost-table entries of the primitives.

use sim::CostKey;

pub static MUTEX: CostKey = CostKey::new("mutex", 25, "taking or releasing a mutex");
pub static SPINLOCK: CostKey = CostKey::new("spinlock", 15, "taking or releasing a spinlock");
pub static ATOMIC: CostKey = CostKey::new("atomic", 5, "one atomic operation");
pub static RCU_READ: CostKey = CostKey::new("rcu_read", 2, "rcu_read_lock or rcu_read_unlock");
pub static RCU_GRACE_PERIOD: CostKey = CostKey::new(
    "rcu_grace_period",
    7_570_000,
    "one synchronize_rcu grace period (calibrated against the 2023 ipc measurements)",
);
pub static SCHEDULE_WORK: CostKey = CostKey::new("schedule_work", 100, "queueing a work item");
pub static KWORKER_WAKEUP: CostKey = CostKey::new(
    "kworker_wakeup",
    5_000,
    "latency from schedule_work until an idle kworker runs the item",
);
pub static WORK_RUN: CostKey = CostKey::new("work_run", 200, "a kworker picking up a work item");
pub static FLUSH_WORK: CostKey =
    CostKey::new("flush_work", 100, "flush_work checking the work item");
pub static LLIST: CostKey = CostKey::new("llist", 10, "llist_add or llist_del_all");

/// Every entry above, for catalogues.
pub static ALL: &[&CostKey] = &[
    &MUTEX,
    &SPINLOCK,
    &ATOMIC,
    &RCU_READ,
    &RCU_GRACE_PERIOD,
    &SCHEDULE_WORK,
    &KWORKER_WAKEUP,
    &WORK_RUN,
    &FLUSH_WORK,
    &LLIST,
];
