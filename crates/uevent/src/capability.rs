//! The capability question the uevent paths ask: does a task have
//! CAP_SYS_ADMIN over a user namespace (`ns_capable`, security/commoncap.c
//! `cap_capable`)?
//!
//! In a simulated machine the kernel crate asks the user-namespace model
//! (`userns::ns_capable` with the task's real credentials) and passes the
//! answer to [`crate::Uevent::uevent_net_rcv_skb`]. This module is the
//! stand-in the crate's own models use (its tests and the model half of
//! its conformance cases), with the rule below, which needs only the
//! ucounts side of user namespaces.
//!
//! The rule, walking from `target` up to the root like `cap_capable`:
//! * at the task's own user namespace: capable if the task is root there:
//!   kuid 0 in the initial namespace, or the namespace's owner in a child
//!   namespace (as after `unshare -U -r`, which maps the owner to uid 0);
//! * at a namespace whose parent is the task's namespace: capable if the
//!   task's euid owns it (the owner of a namespace has every capability in
//!   it).

use std::sync::Arc;
use ucounts::UcountsNs;

/// `CAP_SYS_ADMIN`.
pub const CAP_SYS_ADMIN: u32 = 21;

/// The credentials the question needs: the euid (as a kuid, seen from the
/// initial namespace) and the task's user namespace.
#[derive(Clone)]
pub struct Cred {
    pub euid: u32,
    pub user_ns: Arc<UcountsNs>,
}

/// The owner of a child user namespace (the uid its creation was charged
/// to); `None` for the initial one.
pub fn owner(ns: &UcountsNs) -> Option<u32> {
    ns.ucounts.as_ref().map(|u| u.uid)
}

/// Root in its own user namespace, in this model.
fn root_in_own_ns(cred: &Cred) -> bool {
    match owner(&cred.user_ns) {
        None => cred.euid == 0,
        Some(o) => cred.euid == o,
    }
}

/// `ns_capable(target, cap)` for a task with `cred`, by the stand-in rule
/// (see the module documentation): every capability is treated alike.
pub fn ns_capable(cred: &Cred, target: &Arc<UcountsNs>, _cap: u32) -> bool {
    let mut ns = Some(Arc::clone(target));
    while let Some(n) = ns {
        if n.id == cred.user_ns.id {
            return root_in_own_ns(cred);
        }
        let parent_is_mine = n.parent.as_ref().is_some_and(|p| p.id == cred.user_ns.id);
        if parent_is_mine && owner(&n) == Some(cred.euid) {
            return true;
        }
        ns = n.parent.clone();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use ucounts::UcountsTable;

    #[test]
    fn root_and_owners_are_capable_others_are_not() {
        let table = UcountsTable::new();
        let init = UcountsNs::init(0);
        let c = UcountsNs::child(1, "c", &init, table.alloc_ucounts(&init, 1000));
        let host_root = Cred {
            euid: 0,
            user_ns: Arc::clone(&init),
        };
        let host_user = Cred {
            euid: 1000,
            user_ns: Arc::clone(&init),
        };
        let stranger = Cred {
            euid: 1001,
            user_ns: Arc::clone(&init),
        };
        let container_root = Cred {
            euid: 1000,
            user_ns: Arc::clone(&c),
        };
        let container_user = Cred {
            euid: 1001,
            user_ns: Arc::clone(&c),
        };
        assert!(ns_capable(&host_root, &init, CAP_SYS_ADMIN));
        assert!(ns_capable(&host_root, &c, CAP_SYS_ADMIN));
        assert!(!ns_capable(&host_user, &init, CAP_SYS_ADMIN));
        assert!(ns_capable(&host_user, &c, CAP_SYS_ADMIN), "the owner");
        assert!(!ns_capable(&stranger, &c, CAP_SYS_ADMIN));
        assert!(ns_capable(&container_root, &c, CAP_SYS_ADMIN));
        assert!(!ns_capable(&container_root, &init, CAP_SYS_ADMIN));
        assert!(!ns_capable(&container_user, &c, CAP_SYS_ADMIN));
    }
}
