//! What an ipc object's rlimit charge went to, and giving it back: a
//! message queue's bytes (RLIMIT_MSGQUEUE) and a locked SysV segment's
//! pages (RLIMIT_MEMLOCK) are charged to their creator's (or locker's)
//! `user_struct` before v5.14 and to its ucounts, which the object then
//! holds, from v5.14.

use std::sync::Arc;
use ucounts::{dec_rlimit_ucounts, RlimitType, Ucounts, UcountsTable};
use userns::UserStruct;

/// `info->user` / `info->ucounts`, `shp->mlock_ucounts`.
pub enum RlimitCharge {
    User(Arc<UserStruct>),
    Ucounts(Arc<Ucounts>),
}

impl RlimitCharge {
    /// The ucounts entry the charge holds (from v5.14), for checkers.
    pub fn ucounts(&self) -> Option<&Arc<Ucounts>> {
        match self {
            RlimitCharge::Ucounts(u) => Some(u),
            RlimitCharge::User(_) => None,
        }
    }

    /// Take `amount` of counter `t` back, under the lock the charge was
    /// taken under (the caller's).
    pub(crate) fn uncharge(&self, table: &UcountsTable, t: RlimitType, amount: i64) {
        match self {
            RlimitCharge::User(user) => {
                user.add_rlimit(t, -amount);
            }
            RlimitCharge::Ucounts(u) => {
                dec_rlimit_ucounts(table, u, t, amount);
            }
        }
    }

    /// Drop the reference a ucounts charge held, once that lock is gone.
    pub(crate) fn put(&self, table: &UcountsTable) {
        if let RlimitCharge::Ucounts(u) = self {
            table.put_ucounts(u);
        }
    }
}
