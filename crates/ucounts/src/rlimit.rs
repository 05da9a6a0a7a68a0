//! rlimit counters in ucounts (v5.14, "Reimplement RLIMIT_{NPROC, MSGQUEUE,
//! SIGPENDING, MEMLOCK} on top of ucounts"): usage charged at every level
//! up the user-namespace tree, checked against the caller's rlimit at the
//! leaf and, at each ancestor, against the rlimit the creator of the
//! namespace below had when it made that namespace.
//!
//! Models kernel/ucount.c: `inc_rlimit_ucounts`, `dec_rlimit_ucounts`,
//! `inc_rlimit_get_ucounts` (v5.15, "ucounts: Fix signal ucount
//! refcounting"; `override_rlimit` from v6.12), `dec_rlimit_put_ucounts`
//! and `is_rlimit_overlimit` (`is_ucounts_overlimit` before v6.1).
//!
//! The comparison rule changed in v5.16 ("ucounts: Fix rlimit max values
//! check"): see [`RlimitCheck`].

use crate::{levels, Ucounts, UcountsTable};
use std::sync::Arc;
use sync::Ordering;

/// LONG_MAX: the largest value a counter may be compared with.
pub const LONG_MAX: i64 = i64::MAX;
/// RLIM_INFINITY (`~0UL`).
pub const RLIM_INFINITY: u64 = u64::MAX;

/// The rlimit counters of a ucounts entry (`enum rlimit_type` from v6.1,
/// appended to `enum ucount_type` in v5.14).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RlimitType {
    Nproc,
    Msgqueue,
    Sigpending,
    Memlock,
}

impl RlimitType {
    pub const ALL: [RlimitType; 4] = [
        RlimitType::Nproc,
        RlimitType::Msgqueue,
        RlimitType::Sigpending,
        RlimitType::Memlock,
    ];
    pub const COUNT: usize = Self::ALL.len();

    /// The kernel's name of the counter.
    pub fn name(self) -> &'static str {
        match self {
            RlimitType::Nproc => "UCOUNT_RLIMIT_NPROC",
            RlimitType::Msgqueue => "UCOUNT_RLIMIT_MSGQUEUE",
            RlimitType::Sigpending => "UCOUNT_RLIMIT_SIGPENDING",
            RlimitType::Memlock => "UCOUNT_RLIMIT_MEMLOCK",
        }
    }

    /// The resource limit it counts against.
    pub fn rlimit_name(self) -> &'static str {
        match self {
            RlimitType::Nproc => "RLIMIT_NPROC",
            RlimitType::Msgqueue => "RLIMIT_MSGQUEUE",
            RlimitType::Sigpending => "RLIMIT_SIGPENDING",
            RlimitType::Memlock => "RLIMIT_MEMLOCK",
        }
    }

    /// The trace label of its count (a `counter:` note, drawn by the
    /// views as a counter track), on the object that counts it.
    pub fn count_label(self) -> &'static str {
        match self {
            RlimitType::Nproc => "counter:processes (RLIMIT_NPROC)",
            RlimitType::Msgqueue => "counter:message queue bytes (RLIMIT_MSGQUEUE)",
            RlimitType::Sigpending => "counter:pending signals (RLIMIT_SIGPENDING)",
            RlimitType::Memlock => "counter:locked shm pages (RLIMIT_MEMLOCK)",
        }
    }

    /// The trace label of the maximum its count is compared with (a limit
    /// in the views: `max_` after `counter:`), on the same object.
    pub fn max_label(self) -> &'static str {
        match self {
            RlimitType::Nproc => "counter:max_processes (RLIMIT_NPROC)",
            RlimitType::Msgqueue => "counter:max_message queue bytes (RLIMIT_MSGQUEUE)",
            RlimitType::Sigpending => "counter:max_pending signals (RLIMIT_SIGPENDING)",
            RlimitType::Memlock => "counter:max_locked shm pages (RLIMIT_MEMLOCK)",
        }
    }

    /// All four moved into ucounts in v5.14.
    pub fn since(self) -> &'static str {
        "v5.14"
    }
}

/// Which maximum each level of an rlimit counter is compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RlimitCheck {
    /// v5.14-v5.15: every level with the value recorded in its own
    /// namespace (the leaf also with the caller's rlimit). The initial
    /// namespace records no limit, so the level that sums everything a
    /// user does in the namespaces it created is never limited.
    OwnNamespace,
    /// v5.16 ("ucounts: Fix rlimit max values check"): the leaf with the
    /// caller's rlimit, each ancestor with the value recorded in the
    /// namespace below it, i.e. the rlimit its creator carried in.
    #[default]
    NamespaceBelow,
}

/// `rlim_t` to `long`, as `set_userns_rlimit_max` stores it.
pub fn clamp_to_long(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(LONG_MAX)
}

/// The maximum the level above `level` is compared with, and this level's
/// own under the old rule.
fn own_max(level: &Ucounts, t: RlimitType) -> i64 {
    level.ns.rlimit_max(t)
}

/// `inc_rlimit_ucounts`: add `v` at every level without checking. Returns
/// LONG_MAX if some level went negative or above its maximum, else the
/// leaf's new value (which the caller compares with its own rlimit).
pub fn inc_rlimit_ucounts(
    table: &UcountsTable,
    leaf: &Arc<Ucounts>,
    t: RlimitType,
    v: i64,
    check: RlimitCheck,
) -> i64 {
    let _flight = table.ledger.in_flight();
    let levels = levels(leaf);
    let mut ret = 0;
    let mut max = LONG_MAX;
    for (i, u) in levels.iter().enumerate() {
        u.touch("inc_rlimit_ucounts");
        if check == RlimitCheck::OwnNamespace {
            max = own_max(u, t);
        }
        let new = u.rlimit_counter(t).fetch_add(v, Ordering::AcqRel) + v;
        u.note_rlimit(t);
        u.ns.touch("inc_rlimit_ucounts: iter->ns");
        if new < 0 || new > max {
            ret = LONG_MAX;
        } else if i == 0 {
            ret = new;
        }
        max = own_max(u, t);
    }
    table.ledger.charge_rlimit(&levels, t, v);
    ret
}

/// `dec_rlimit_ucounts`: subtract `v` at every level; true if the leaf
/// reached zero.
pub fn dec_rlimit_ucounts(
    table: &UcountsTable,
    leaf: &Arc<Ucounts>,
    t: RlimitType,
    v: i64,
) -> bool {
    let _flight = table.ledger.in_flight();
    let levels = levels(leaf);
    let mut leaf_zero = false;
    for (i, u) in levels.iter().enumerate() {
        u.touch("dec_rlimit_ucounts");
        let dec = u.rlimit_counter(t).fetch_sub(v, Ordering::AcqRel) - v;
        u.note_rlimit(t);
        u.ns.touch("dec_rlimit_ucounts: iter->ns");
        debug_assert!(dec >= 0, "rlimit counter underflow");
        if i == 0 {
            leaf_zero = dec == 0;
        }
    }
    table.ledger.charge_rlimit(&levels, t, -v);
    leaf_zero
}

/// How [`inc_rlimit_get_ucounts`] takes back the level found over its
/// maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OverUnwind {
    /// v6.12 ("ucounts: fix counter leak in inc_rlimit_get_ucounts()"):
    /// the level over its maximum is taken back with the levels below it.
    #[default]
    TakesBack,
    /// v5.15 to v6.11: the level over its maximum keeps the one it was
    /// given; only the levels below it are taken back, so each refusal
    /// leaks one count there, and later charges are refused early.
    Leaks,
}

/// `inc_rlimit_get_ucounts`: add 1 at every level; a level that goes from
/// 0 to 1 takes a reference on its entry, so what is counted (pending
/// signals) pins the entries. Any level over its maximum (unless
/// `override_rlimit`) unwinds (as `unwind` says) and returns 0; else the
/// leaf's new value.
pub fn inc_rlimit_get_ucounts(
    table: &UcountsTable,
    leaf: &Arc<Ucounts>,
    t: RlimitType,
    override_rlimit: bool,
    check: RlimitCheck,
    unwind: OverUnwind,
) -> i64 {
    let _flight = table.ledger.in_flight();
    let levels = levels(leaf);
    let mut ret = 0;
    let mut max = LONG_MAX;
    for (i, u) in levels.iter().enumerate() {
        u.touch("inc_rlimit_get_ucounts");
        if check == RlimitCheck::OwnNamespace {
            max = own_max(u, t);
        }
        let new = u.rlimit_counter(t).fetch_add(1, Ordering::AcqRel) + 1;
        u.note_rlimit(t);
        u.ns.touch("inc_rlimit_get_ucounts: iter->ns");
        let over = new < 0 || (!override_rlimit && new > max);
        let pinned = !over && (new != 1 || table.get_ucounts(u).is_some());
        if !pinned {
            // This level is taken back here (unless the leak leaves it
            // charged: its counter then holds one that nothing charged,
            // which `ucounts.balanced` sees), the levels below it with
            // their references.
            if !(over && unwind == OverUnwind::Leaks) {
                u.rlimit_counter(t).fetch_sub(1, Ordering::AcqRel);
                u.note_rlimit(t);
            }
            table.ledger.charge_rlimit(&levels[..i], t, 1);
            do_dec_rlimit_put_ucounts(table, &levels[..i], t);
            return 0;
        }
        if i == 0 {
            ret = new;
        }
        max = own_max(u, t);
    }
    table.ledger.charge_rlimit(&levels, t, 1);
    ret
}

/// `dec_rlimit_put_ucounts`: subtract 1 at every level and drop the
/// reference of each level that reaches zero.
pub fn dec_rlimit_put_ucounts(table: &UcountsTable, leaf: &Arc<Ucounts>, t: RlimitType) {
    let _flight = table.ledger.in_flight();
    do_dec_rlimit_put_ucounts(table, &levels(leaf), t);
}

fn do_dec_rlimit_put_ucounts(table: &UcountsTable, levels: &[Arc<Ucounts>], t: RlimitType) {
    table.ledger.charge_rlimit(levels, t, -1);
    for u in levels {
        u.touch("dec_rlimit_put_ucounts");
        let dec = u.rlimit_counter(t).fetch_sub(1, Ordering::AcqRel) - 1;
        u.note_rlimit(t);
        debug_assert!(dec >= 0, "rlimit counter underflow");
        u.ns.touch("dec_rlimit_put_ucounts: iter->ns");
        if dec == 0 {
            table.put_ucounts(u);
        }
    }
}

/// `is_rlimit_overlimit`: is any level negative or above its maximum? The
/// leaf is compared with `rlimit` (the caller's current limit, clamped to
/// LONG_MAX); the ancestors as [`RlimitCheck`] says.
pub fn is_rlimit_overlimit(
    leaf: &Arc<Ucounts>,
    t: RlimitType,
    rlimit: u64,
    check: RlimitCheck,
) -> bool {
    is_rlimit_overlimit_watched(leaf, t, rlimit, check, &mut |_, _| ())
}

/// [`is_rlimit_overlimit`], telling `passed` of each level that passed
/// (its place in the chain, the leaf 0), in the step that read the level's
/// count: an oracle judges the level at the instant the kernel did.
pub fn is_rlimit_overlimit_watched(
    leaf: &Arc<Ucounts>,
    t: RlimitType,
    rlimit: u64,
    check: RlimitCheck,
    passed: &mut dyn FnMut(usize, &Ucounts),
) -> bool {
    let rlimit = clamp_to_long(rlimit);
    let mut max = rlimit;
    let mut iter = Some(Arc::clone(leaf));
    let mut first = true;
    let mut level = 0;
    while let Some(u) = iter {
        u.touch("is_rlimit_overlimit");
        let val = u.rlimit_counter(t).load(Ordering::Relaxed);
        match check {
            RlimitCheck::NamespaceBelow => {
                if val < 0 || val > max {
                    return true;
                }
                max = own_max(&u, t);
            }
            RlimitCheck::OwnNamespace => {
                if (first && val > rlimit) || val > own_max(&u, t) {
                    return true;
                }
            }
        }
        passed(level, &u);
        level += 1;
        first = false;
        u.ns.touch("is_rlimit_overlimit: iter->ns");
        iter = u.up().cloned();
    }
    false
}

/// The maximum each level of `leaf`'s chain is held to under `check`, for
/// an rlimit of `rlimit` at the leaf (for checkers and reports).
pub fn level_maxima(
    leaf: &Arc<Ucounts>,
    t: RlimitType,
    rlimit: u64,
    check: RlimitCheck,
) -> Vec<i64> {
    let mut out = Vec::new();
    let mut below = clamp_to_long(rlimit);
    for u in levels(leaf) {
        out.push(match check {
            RlimitCheck::NamespaceBelow => below,
            RlimitCheck::OwnNamespace if out.is_empty() => below.min(own_max(&u, t)),
            RlimitCheck::OwnNamespace => own_max(&u, t),
        });
        below = own_max(&u, t);
    }
    out
}

/// For the views: from now on, draw the count of `t` at each level of
/// `leaf`'s chain whose maximum is finite, with that maximum (the leaf's
/// is `rlimit`, the caller's; the others as `check` says), as the charge
/// of a caller with `rlimit` is checked. The trace notes only: nothing
/// here is a scheduling point.
pub fn draw_rlimit_levels(leaf: &Arc<Ucounts>, t: RlimitType, rlimit: u64, check: RlimitCheck) {
    for (u, max) in levels(leaf)
        .iter()
        .zip(level_maxima(leaf, t, rlimit, check))
    {
        if max < LONG_MAX {
            u.draw_rlimit(t, max);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The views pair a count with its maximum by their labels: both name
    /// the rlimit, and the maximum's is the count's with `max_`.
    #[test]
    fn each_rlimit_counts_and_limits_under_labels_that_name_it() {
        for t in RlimitType::ALL {
            let count = t.count_label();
            assert!(count.starts_with("counter:"), "{count}");
            assert!(
                count.ends_with(&format!(" ({})", t.rlimit_name())),
                "{count}"
            );
            let max = t.max_label();
            assert_eq!(max, count.replacen("counter:", "counter:max_", 1));
        }
    }
}
