//! POSIX message queues in an ipc namespace's mqueue filesystem, and what
//! each one is charged: the bytes RLIMIT_MSGQUEUE counts.
//!
//! Models ipc/mqueue.c: the queue's inode (`mqueue_get_inode`, which
//! charges its creator, and `mqueue_evict_inode`, which gives the charge
//! back), the namespace's count of queues (`mq_queues_count` against
//! `fs.mqueue.queues_max`) and the sizes `mq_attr_ok` admits. The
//! syscalls that use them (`mq_open`, `mq_unlink`, the close at exit) live
//! in the kernel crate, which knows the caller's credentials and rlimits.
//!
//! The charge went to the creator's `user_struct` (`mq_bytes`) before
//! v5.14 and to the ucounts of (its user namespace, its uid), at every
//! level up the tree, from v5.14 ("Reimplement RLIMIT_MSGQUEUE on top of
//! ucounts"). A queue outlives its creator: it stays in the filesystem
//! until it is unlinked and its last descriptor closed, or the namespace
//! is freed and its filesystem with it.

use crate::charge::RlimitCharge;
use crate::{Ipc, IpcNamespace};
use sim::ObjId;
use std::collections::BTreeMap;
use std::sync::Arc;
use sync::{Ordering, Refcount};
use ucounts::{RlimitType, Ucounts};

/// `DFLT_QUEUESMAX`: `fs.mqueue.queues_max` of a new namespace.
pub const DFLT_QUEUESMAX: u32 = 256;
/// `DFLT_MSGMAX`: `fs.mqueue.msg_max`, the most messages a queue of an
/// unprivileged creator may hold.
pub const DFLT_MSGMAX: i64 = 10;
/// `DFLT_MSGSIZEMAX`: `fs.mqueue.msgsize_max`.
pub const DFLT_MSGSIZEMAX: i64 = 8192;
/// `HARD_MSGMAX`: the most messages even a privileged creator may ask for.
pub const HARD_MSGMAX: i64 = 65_536;
/// `HARD_MSGSIZEMAX`: the largest message size anyone may ask for.
pub const HARD_MSGSIZEMAX: i64 = 16 * 1024 * 1024;
/// `MQ_PRIO_MAX`: the most priorities, so the most tree nodes a queue has.
pub const MQ_PRIO_MAX: i64 = 32_768;
/// `MQ_BYTES_MAX`: the RLIMIT_MSGQUEUE a process starts with.
pub const MQ_BYTES_MAX: u64 = 819_200;
/// `sizeof(struct msg_msg)` and `sizeof(struct posix_msg_tree_node)` on
/// x86-64, which every queue is charged for per message it may hold (the
/// running kernel charges 97 bytes for one one-byte message, 82 880 for
/// ten of 8 192).
const MSG_MSG_SIZE: i64 = 48;
const TREE_NODE_SIZE: i64 = 48;

/// What `mq_attr_ok` says of a queue's size: `Ok`, or the errno's reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttrError {
    /// EINVAL: not positive, or above the limits the caller is held to.
    Invalid,
    /// EOVERFLOW: the queue's bytes do not fit in a long.
    Overflow,
}

/// `mq_attr_ok`: a queue of `maxmsg` messages of `msgsize` bytes, for a
/// creator with CAP_SYS_RESOURCE in the initial namespace (`privileged`,
/// held to the hard limits only) or without (held to the namespace's
/// `msg_max` and `msgsize_max`).
pub fn mq_attr_ok(maxmsg: i64, msgsize: i64, privileged: bool) -> Result<i64, AttrError> {
    if maxmsg <= 0 || msgsize <= 0 {
        return Err(AttrError::Invalid);
    }
    let (msg_max, msgsize_max) = if privileged {
        (HARD_MSGMAX, HARD_MSGSIZEMAX)
    } else {
        (DFLT_MSGMAX, DFLT_MSGSIZEMAX)
    };
    if maxmsg > msg_max || msgsize > msgsize_max {
        return Err(AttrError::Invalid);
    }
    mq_bytes(maxmsg, msgsize).ok_or(AttrError::Overflow)
}

/// The bytes a queue is charged: per message it may hold a `msg_msg`
/// pointer slot and a tree node (at most one node per priority), plus
/// the messages' bytes.
pub fn mq_bytes(maxmsg: i64, msgsize: i64) -> Option<i64> {
    let tree = maxmsg
        .checked_mul(MSG_MSG_SIZE)?
        .checked_add(maxmsg.min(MQ_PRIO_MAX).checked_mul(TREE_NODE_SIZE)?)?;
    tree.checked_add(maxmsg.checked_mul(msgsize)?)
}

/// A queue's inode (`struct mqueue_inode_info`): its owner, its size in
/// bytes and the charge for them; alive while its name is linked or a
/// descriptor holds it (`i_count`).
pub struct MqInode {
    pub obj: ObjId,
    /// The creator's fsuid and fsgid, as kernel ids: the owner
    /// `mq_unlink` checks.
    pub uid: u32,
    pub gid: u32,
    pub bytes: i64,
    count: Refcount,
    charge: sim::HostMutex<Option<RlimitCharge>>,
    /// The namespace whose filesystem it is in.
    ns: std::sync::Weak<IpcNamespace>,
}

impl MqInode {
    /// `ihold`: a new reference (a descriptor, the name).
    pub fn hold(&self) {
        self.count.inc();
    }

    /// The ucounts entry its charge holds (from v5.14), for checkers.
    pub fn charged_ucounts(&self) -> Option<Arc<Ucounts>> {
        self.charge.lock().as_ref()?.ucounts().cloned()
    }
}

/// An ipc namespace's mqueue filesystem: its root directory's lock
/// (`inode_lock` of the root, a sleeping lock, held by `mq_open` and
/// `mq_unlink` while they look a name up and link or unlink it), the
/// queues' names (changed only under that lock), and `mq_queues_count`
/// (changed under `mq_lock`).
pub struct MqSb {
    pub root_lock: sync::Mutex<()>,
    pub names: sim::HostMutex<BTreeMap<String, Arc<MqInode>>>,
    queues_count: std::sync::atomic::AtomicU32,
}

impl MqSb {
    fn new() -> MqSb {
        MqSb {
            root_lock: sync::Mutex::new("mqueue root i_rwsem", ()),
            names: sim::HostMutex::new("mqueue root's names", BTreeMap::new()),
            queues_count: std::sync::atomic::AtomicU32::new(0),
        }
    }
}

impl IpcNamespace {
    /// The namespace's mqueue filesystem (made at first use: runs that
    /// open no queue make none of its objects).
    pub fn mq_sb(&self) -> &MqSb {
        self.mq_sb.get_or_init(MqSb::new)
    }

    /// The owner of the filesystem's root directory: the fsuid of the
    /// namespace's creator (`mqueue_fill_super`), root for the initial one.
    pub fn mq_root_uid(&self) -> u32 {
        self.ucounts.as_ref().map_or(0, |u| u.uid)
    }

    /// Queues in the namespace's filesystem (for checkers and reports).
    pub fn peek_queues(&self) -> Vec<Arc<MqInode>> {
        self.mq_sb
            .get()
            .map(|sb| sb.names.lock().values().cloned().collect())
            .unwrap_or_default()
    }
}

impl Ipc {
    /// `mqueue_create_attr`'s count: one queue more in `ns`, refused
    /// (false) at `queues_max` unless `privileged` (CAP_SYS_RESOURCE in
    /// the initial namespace), under `mq_lock`.
    pub fn mq_count_queue(&self, ns: &IpcNamespace, privileged: bool) -> bool {
        let _mq_lock = self.mq_lock.lock();
        let count = &ns.mq_sb().queues_count;
        if count.load(Ordering::Relaxed) >= DFLT_QUEUESMAX && !privileged {
            return false;
        }
        count.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// The count taken back: the inode could not be made.
    pub fn mq_uncount_queue(&self, ns: &IpcNamespace) {
        let _mq_lock = self.mq_lock.lock();
        ns.mq_sb().queues_count.fetch_sub(1, Ordering::Relaxed);
    }

    /// `mqueue_get_inode`'s charge under `mq_lock`: `charge` runs there
    /// and says whether the bytes fit; the inode, with one reference (its
    /// name's), when they do.
    pub fn mq_new_inode(
        self: &Arc<Self>,
        ns: &Arc<IpcNamespace>,
        uid: u32,
        gid: u32,
        bytes: i64,
        charge: impl FnOnce() -> Option<RlimitCharge>,
    ) -> Option<Arc<MqInode>> {
        let charged = {
            let _mq_lock = self.mq_lock.lock();
            charge()
        }?;
        Some(Arc::new(MqInode {
            obj: sim::new_object("mqueue inode"),
            uid,
            gid,
            bytes,
            count: Refcount::new("mqueue inode.i_count", 1),
            charge: sim::HostMutex::new("mqueue inode charge", Some(charged)),
            ns: Arc::downgrade(ns),
        }))
    }

    /// `iput`: drop a reference; the last one evicts the queue.
    pub fn mq_iput(&self, inode: &MqInode) {
        sim::touch(inode.obj, "iput");
        if inode.count.dec_and_test() {
            self.mqueue_evict_inode(inode);
        }
    }

    /// `mqueue_evict_inode`: the charge given back under `mq_lock` and the
    /// reference on it dropped; the namespace, while its filesystem still
    /// points at it (`get_ns_from_inode`), counts one queue fewer.
    fn mqueue_evict_inode(&self, inode: &MqInode) {
        let charge = inode.charge.lock().take();
        let ns = inode.ns.upgrade().filter(|ns| !*ns.sb_cleared.lock());
        {
            let _mq_lock = self.mq_lock.lock();
            if let Some(charge) = &charge {
                charge.uncharge(&self.ucounts, RlimitType::Msgqueue, inode.bytes);
            }
            if let Some(ns) = &ns {
                ns.mq_sb().queues_count.fetch_sub(1, Ordering::Relaxed);
            }
        }
        if let Some(charge) = &charge {
            charge.put(&self.ucounts);
        }
        sim::free_object(inode.obj);
    }

    /// `kill_litter_super` at the namespace's free: every name goes, and
    /// each queue no descriptor holds is evicted.
    pub(crate) fn mq_drop_names(&self, ns: &IpcNamespace) {
        let Some(sb) = ns.mq_sb.get() else {
            return;
        };
        // Nobody reaches the filesystem any more: no lock to take.
        let names = std::mem::take(&mut *sb.names.lock());
        for inode in names.values() {
            self.mq_iput(inode);
        }
    }
}
