//! Network namespaces and their uevent sockets.
//!
//! Models lib/kobject_uevent.c (`uevent_net_init`, `uevent_net_exit`,
//! `kobject_uevent_env`, `kobject_uevent_net_broadcast`,
//! `uevent_net_broadcast`, `uevent_net_rcv_skb`, the global
//! `uevent_sock_list` under `uevent_sock_mutex` and `uevent_seqnum`),
//! net/core/net_namespace.c (`copy_net_ns`, `setup_net`, `__put_net`,
//! `cleanup_net`: network namespaces charged as UCOUNT_NET_NAMESPACES and
//! destroyed asynchronously in batches, one RCU grace period per batch)
//! and the listener side of net/netlink/af_netlink.c (`netlink_broadcast`
//! delivery, `netlink_overrun`, ENOBUFS once on the next `recvmsg`).
//!
//! Patches (see [`UeventPatches`]):
//! * `uevent-inject` (v4.17): userspace may send a uevent to the kernel
//!   socket of its network namespace (`uevent_net_rcv_skb`); before it, the
//!   kernel socket had no input and a send was refused.
//! * `uevent-restrict` (v4.18): only namespaces owned by the initial user
//!   namespace are on `uevent_sock_list`, so untagged kernel events no
//!   longer reach containers.
//! * `uevent-netns-seqnum` (proposed 2018, never merged): a sequence number
//!   per network namespace; namespaces not owned by the initial user
//!   namespace get their own mutex (`sk_mutex`).
//! * `uevent-atomic-seqnum` (v6.9): the global sequence number is an
//!   atomic; the mutex covers only the walk of the list; the tagged path
//!   and injection take no lock.
//! * `skb-small-head-cache` (v6.3, net/core/skbuff.c): small skb heads
//!   come from a cache of their own, which changes the truesize a short
//!   uevent charges a listener's receive buffer.
//! * `netlink-rmem-after-charge` (v6.16, net/netlink/af_netlink.c):
//!   `netlink_broadcast_deliver` charges an skb before deciding whether
//!   the receive buffer takes it, so a full buffer holds one uevent fewer.
//! * `netns-wait-pending-free` (a candidate fix, never merged): a network
//!   namespace whose last reference went stays charged to
//!   `max_net_namespaces` until `cleanup_net` has run for it (from
//!   `net_cleanup_work` on `netns_wq`, after a grace period), and
//!   `copy_net_ns` does not wait for it: a loop that makes and drops one
//!   namespace at a time under a small limit gets ENOSPC. With the patch,
//!   `inc_net_namespaces` answers a failed charge as ipc's v6.3 fix does:
//!   `flush_work(&net_cleanup_work)`, and another attempt if that waited
//!   for a queued or running cleanup. Touches [`Uevent::copy_net_ns`]
//!   (`inc_net_namespaces`). It inherits ipc's windows: a cleanup that
//!   finishes between the failed charge and the flush, or a namespace put
//!   on `cleanup_list` whose work is not queued yet, leaves the flush
//!   nothing to wait for. (The kernel's `cleanup_net` also waits for an
//!   `rcu_barrier` before it uncharges; the model's waits one grace
//!   period, so its wait is the shorter.)
//!
//! Whether an ENOSPC was deserved is judged by [`Uevent::netns_oracle`]
//! (`netns.no_false_enospc`): a network namespace is alive until its last
//! reference goes (`put_net`), whenever `cleanup_net` frees it.
//!
//! A network namespace is owned by a user namespace of the `userns` crate
//! (`net->user_ns`, a reference taken by `copy_net_ns` and dropped by
//! `cleanup_net`), and the injection path asks that crate's
//! [`userns::ns_capable`] with the sender's credentials: the one model of
//! user namespaces and credentials, whoever calls.
//!
//! The invariants' bookkeeping is in [`oracle`]; the fast cost model of
//! the 2018 measurements in [`measure`].

pub mod measure;
pub mod oracle;

use oracle::{Oracle, Origin};
use sim::{CostKey, ObjId};
use std::collections::VecDeque;
use std::sync::{Arc, Weak};
use sync::{
    flush_work, schedule_work, synchronize_rcu, AtomicU64, LList, Mutex, Ordering, Refcount,
    SpinLock, Work, Workqueue,
};
use ucounts::enospc::EnospcOracle;
use ucounts::{charge_chain, UcountType, Ucounts, UcountsNs};
use userns::caps::CAP_SYS_ADMIN;
use userns::{ns_capable, Cred, UserNamespace, Userns};

/// Trace note carrying a listener's drop count (`sk_drops`); views draw
/// `counter:` notes as counter tracks.
pub const COUNTER_DROPS: &str = "counter:uevent drops (sk_drops)";

/// `UEVENT_BUFFER_SIZE`: the largest uevent message, SEQNUM included.
pub const UEVENT_BUFFER_SIZE: usize = 2048;

/// `NLMSG_HDRLEN`: an injected message still carries its netlink header
/// when its size is checked.
pub const NLMSG_HDRLEN: usize = 16;

/// What a queued skb costs a receiver beyond its data area (`sk_buff` and
/// `skb_shared_info`, each cache-aligned): receive buffers are charged by
/// truesize.
pub const SKB_OVERHEAD: usize = SKB_SIZE + SKB_SHINFO_SIZE;

/// `SOCK_MIN_RCVBUF`: the smallest receive buffer `SO_RCVBUF` sets
/// (2048 bytes and an aligned `sk_buff`).
pub const SOCK_MIN_RCVBUF: usize = 2048 + SKB_SIZE;

/// `SKB_DATA_ALIGN(sizeof(struct sk_buff))` on x86-64.
const SKB_SIZE: usize = 256;

/// `SKB_DATA_ALIGN(sizeof(struct skb_shared_info))` on x86-64: the tail of
/// every skb head allocation.
const SKB_SHINFO_SIZE: usize = 320;

/// `SKB_SMALL_HEAD_CACHE_SIZE`: the object size of the dedicated cache
/// small skb heads come from (`skb-small-head-cache`).
const SKB_SMALL_HEAD_CACHE_SIZE: usize = 576;

/// `skb->truesize` of an skb allocated for `data` bytes (`__alloc_skb`):
/// the head holds the cache-aligned data and `skb_shared_info`; its size is
/// what the allocator hands out (a kmalloc bucket, a power of two at these
/// sizes, or the small-head cache's object), and truesize adds `sk_buff`.
pub fn skb_truesize(data: usize, small_head_cache: bool) -> usize {
    let head = data.next_multiple_of(64) + SKB_SHINFO_SIZE;
    let allocated = if small_head_cache && head <= SKB_SMALL_HEAD_CACHE_SIZE {
        SKB_SMALL_HEAD_CACHE_SIZE
    } else {
        head.next_power_of_two()
    };
    allocated - SKB_SHINFO_SIZE + SKB_OVERHEAD
}

pub mod costs {
    use sim::CostKey;
    pub static NET_ALLOC: CostKey = CostKey::new(
        "net_alloc",
        2_000,
        "net_alloc: a new struct net and its generic array",
    );
    pub static SETUP_NET: CostKey = CostKey::new(
        "setup_net",
        30_000,
        "setup_net: every pernet init (devices, sysctls, the uevent kernel socket)",
    );
    pub static NET_EXIT: CostKey = CostKey::new(
        "cleanup_net",
        20_000,
        "cleanup_net per namespace besides its grace period: pernet exits, net_free",
    );
    pub static UEVENT_ENV: CostKey = CostKey::new(
        "uevent_env",
        1_000,
        "kobject_uevent_env: building ACTION, DEVPATH, SUBSYSTEM and the kset's variables",
    );
    pub static UEVENT_SKB: CostKey = CostKey::new(
        "uevent_skb",
        400,
        "allocating and filling the uevent skb (or copying an injected one)",
    );
    pub static NETLINK_DELIVER: CostKey = CostKey::new(
        "netlink_deliver",
        300,
        "netlink broadcast to one listening socket: clone, queue, wake",
    );
    pub static NETLINK_RCV: CostKey = CostKey::new(
        "netlink_rcv",
        1_000,
        "netlink_sendmsg to the kernel socket and netlink_rcv_skb (injection)",
    );
    pub static RECVMSG: CostKey =
        CostKey::new("uevent_recvmsg", 500, "recvmsg of one uevent from a socket");
    pub static ALL: &[&CostKey] = &[
        &NET_ALLOC,
        &SETUP_NET,
        &NET_EXIT,
        &UEVENT_ENV,
        &UEVENT_SKB,
        &NETLINK_DELIVER,
        &NETLINK_RCV,
        &RECVMSG,
    ];
}

/// The uevent behaviours that changed over kernel history.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UeventPatches {
    pub inject: bool,
    pub restrict: bool,
    pub netns_seqnum: bool,
    pub atomic_seqnum: bool,
    /// `skb-small-head-cache` (v6.3): what a short uevent costs a listener.
    pub small_head_cache: bool,
    /// `netlink-rmem-after-charge` (v6.16): when a receive buffer is full.
    pub rmem_after_charge: bool,
    /// `netns-wait-pending-free` (candidate fix, never merged): a failed
    /// `max_net_namespaces` charge flushes `net_cleanup_work` and retries
    /// if that waited.
    pub wait_pending_free: bool,
}

/// How sequence numbers are handed out and which lock covers what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeqnumRegime {
    /// v3.4–v6.8: one global counter, taken and broadcast under
    /// `uevent_sock_mutex`.
    GlobalUnderMutex,
    /// v6.9: one global atomic counter; the mutex covers only the walk.
    GlobalAtomic,
    /// The 2018 proposal: a counter per network namespace, under the
    /// global mutex for namespaces owned by the initial user namespace and
    /// under the namespace's own `sk_mutex` for the others.
    PerNetns,
}

impl UeventPatches {
    pub fn regime(&self) -> SeqnumRegime {
        if self.netns_seqnum {
            SeqnumRegime::PerNetns
        } else if self.atomic_seqnum {
            SeqnumRegime::GlobalAtomic
        } else {
            SeqnumRegime::GlobalUnderMutex
        }
    }
}

/// Errors of the uevent and netns paths, as the kernel's errno values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum UeventError {
    #[error("ENOSPC: the ucount limit of network namespaces is reached")]
    NoSpace,
    #[error("EPERM: missing CAP_SYS_ADMIN capability")]
    Perm,
    #[error("EINVAL: uevent message too big")]
    Inval,
    #[error("ENOMEM: uevent environment too big")]
    NoMem,
    #[error("ECONNREFUSED: the kernel uevent socket takes no input")]
    ConnRefused,
    #[error("ENOBUFS: uevents were dropped")]
    NoBufs,
    #[error("EAGAIN: no uevent queued")]
    Again,
}

/// `struct uevent_sock`: a network namespace's kernel uevent socket and,
/// in the model, the group-1 listeners bound in that namespace.
pub struct UeventSock {
    pub obj: ObjId,
    /// The namespace's owning user namespace is the initial one.
    pub init_owned: bool,
    /// The 2018 proposal's per-namespace mutex (`sk_mutex`).
    sk_mutex: Mutex<()>,
    /// Sockets bound to group 1 in this namespace (`mc_list` entries).
    listeners: SpinLock<Vec<Arc<Listener>>>,
    /// The 2018 proposal's per-namespace counter (`net->uevent_seqnum`).
    uevent_seqnum: AtomicU64,
}

/// `struct net`.
pub struct Net {
    pub obj: ObjId,
    /// Creation order; 0 is `init_net`.
    pub id: u32,
    count: Refcount,
    /// The user namespace that owns it (`net->user_ns`): the creator's,
    /// with a reference held until `cleanup_net` frees the namespace;
    /// the initial one for `init_net`.
    pub user_ns: Arc<UserNamespace>,
    /// The UCOUNT_NET_NAMESPACES charge; `None` for `init_net`.
    ucounts: Option<Arc<Ucounts>>,
    pub uevent_sock: Arc<UeventSock>,
}

impl Net {
    pub fn is_init(&self) -> bool {
        self.ucounts.is_none()
    }

    /// `get_net` (no operation on `init_net`, which is never freed).
    pub fn get(&self) {
        if !self.is_init() {
            self.count.inc();
        }
    }

    /// Owned by the initial user namespace.
    pub fn init_owned(&self) -> bool {
        self.user_ns.level == 0
    }
}

/// One uevent received by a listener: the shared message and the
/// sequence number it carried for this listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    pub message: Arc<Message>,
    pub seqnum: u64,
    /// What it was charged to the receive buffer.
    truesize: usize,
}

/// A broadcast message (one skb shared by every receiver).
#[derive(Debug, PartialEq, Eq)]
pub struct Message {
    /// `ACTION@DEVPATH` and the variables, NUL-separated, without SEQNUM.
    pub text: String,
    pub origin: Origin,
}

impl Message {
    /// Its ACTION: the word of its `ACTION@DEVPATH` header before the `@`.
    pub fn action(&self) -> &str {
        let header = self.text.split(['\0', '\n']).next().unwrap_or_default();
        header.split('@').next().unwrap_or_default()
    }

    /// Bytes on the wire with `SEQNUM=n\0` appended.
    pub fn len_with(&self, seqnum: u64) -> usize {
        self.text.len() + seqnum_var_len(seqnum)
    }

    /// What the message costs a receive buffer (`skb->truesize`): a
    /// kernel uevent's skb is allocated for the message
    /// (`alloc_uevent_skb`), an injected one is the sender's copied with
    /// room for SEQNUM, its netlink header still in the allocation
    /// (`skb_copy_expand` in `uevent_net_broadcast`).
    pub fn truesize(&self, seqnum: u64, small_head_cache: bool) -> usize {
        let header = match self.origin {
            Origin::Injected { .. } => NLMSG_HDRLEN,
            Origin::Kernel { .. } => 0,
        };
        skb_truesize(header + self.len_with(seqnum), small_head_cache)
    }
}

/// `SEQNUM=n\0`.
fn seqnum_var_len(seqnum: u64) -> usize {
    "SEQNUM=".len() + seqnum.to_string().len() + 1
}

#[derive(Default)]
struct RecvQueue {
    queue: VecDeque<Received>,
    /// `sk_rmem_alloc`: the truesize of the queued messages.
    rmem: usize,
    /// `NETLINK_S_CONGESTED`.
    congested: bool,
    /// `sk_err = ENOBUFS`, reported once by the next receive.
    sk_err: bool,
    /// `sk_drops`.
    drops: u64,
    closed: bool,
}

/// A process's NETLINK_KOBJECT_UEVENT socket bound to group 1. It keeps
/// the network namespace it was created in.
pub struct Listener {
    pub obj: ObjId,
    /// The oracle's key: creation order within the subsystem.
    pub key: u32,
    pub name: String,
    pub net: Arc<Net>,
    /// `sk_rcvbuf` in bytes.
    pub rcvbuf: usize,
    state: sim::HostMutex<RecvQueue>,
}

impl Listener {
    /// Dropped messages so far (`sk_drops`).
    pub fn drops(&self) -> u64 {
        self.state.lock().drops
    }

    /// Messages waiting in the receive queue.
    pub fn queued(&self) -> usize {
        self.state.lock().queue.len()
    }
}

/// A kobject as far as uevents care.
#[derive(Clone)]
pub struct Kobject {
    pub devpath: String,
    pub subsystem: String,
    /// The network namespace tag (network devices); `None` for untagged.
    pub tag: Option<Arc<Net>>,
}

/// Counters for experiments (thundering herd): deliveries and drops.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    pub kernel_events: u64,
    pub injected: u64,
    /// Listener wake-ups: messages queued on a listening socket.
    pub wakeups: u64,
    pub drops: u64,
}

/// The global list and counter under `uevent_sock_mutex`.
struct SockList {
    socks: Vec<Arc<UeventSock>>,
    /// `uevent_seqnum` while it is a plain u64 under the mutex.
    seqnum: u64,
}

/// The subsystem's globals: `uevent_sock_list`, `uevent_sock_mutex`,
/// `uevent_seqnum`, `init_net`, and the netns cleanup queue.
pub struct Uevent {
    pub patches: UeventPatches,
    /// The user-namespace subsystem: the owners of network namespaces,
    /// their ucounts, and `put_user_ns` when a namespace is freed.
    pub userns: Arc<Userns>,
    uevent_sock_mutex: Mutex<SockList>,
    /// `uevent_seqnum` as an atomic (v6.9).
    seqnum_atomic: AtomicU64,
    cleanup_list: LList<Arc<Net>>,
    net_cleanup_work: Arc<Work>,
    pub init_net: Arc<Net>,
    next_net: std::sync::atomic::AtomicU32,
    next_listener: std::sync::atomic::AtomicU32,
    pub oracle: Oracle,
    /// Judges each ENOSPC of the `max_net_namespaces` charge
    /// (`netns.no_false_enospc`).
    pub netns_oracle: EnospcOracle,
    stats: sim::HostMutex<Stats>,
    released_freed: sim::HostMutex<(u64, u64)>,
}

impl Uevent {
    /// Set up the subsystem and `init_net` (owned by the initial user
    /// namespace of `userns`, charged to its ucounts); `wq` runs
    /// `net_cleanup_work`.
    pub fn new(patches: UeventPatches, userns: &Arc<Userns>, wq: &Arc<Workqueue>) -> Arc<Uevent> {
        let me = Arc::new_cyclic(|me: &Weak<Uevent>| {
            let me = me.clone();
            let work = Work::new("net_cleanup_work", wq, move || {
                if let Some(u) = me.upgrade() {
                    u.cleanup_net();
                }
            });
            let init_sock = new_uevent_sock(true);
            Uevent {
                patches,
                userns: Arc::clone(userns),
                uevent_sock_mutex: Mutex::new(
                    "uevent_sock_mutex",
                    SockList {
                        socks: Vec::new(),
                        seqnum: 0,
                    },
                ),
                seqnum_atomic: AtomicU64::new("uevent_seqnum", 0),
                cleanup_list: LList::new("cleanup_list"),
                net_cleanup_work: work,
                init_net: Arc::new(Net {
                    obj: sim::new_object("init_net"),
                    id: 0,
                    count: Refcount::new("net.ns.count", 1),
                    user_ns: Arc::clone(&userns.init),
                    ucounts: None,
                    uevent_sock: init_sock,
                }),
                next_net: std::sync::atomic::AtomicU32::new(1),
                next_listener: std::sync::atomic::AtomicU32::new(0),
                oracle: Oracle::default(),
                netns_oracle: EnospcOracle::new(
                    UcountType::NetNamespaces,
                    "network namespace",
                    &userns.ucounts,
                ),
                stats: sim::HostMutex::new("uevent stats", Stats::default()),
                released_freed: sim::HostMutex::new("netns released and freed", (0, 0)),
            }
        });
        // init_net's socket is on the list from boot; nothing runs yet.
        me.uevent_sock_mutex
            .lock()
            .socks
            .push(Arc::clone(&me.init_net.uevent_sock));
        me
    }

    // ------------------------------------------------------------ netns

    /// `copy_net_ns` with CLONE_NEWNET: charge the namespace to
    /// (user_ns, euid), allocate it, run `setup_net`. The new namespace is
    /// owned by `user_ns` and holds a reference on it (`get_user_ns`),
    /// dropped by `cleanup_net`.
    pub fn copy_net_ns(
        &self,
        user_ns: &Arc<UserNamespace>,
        euid: u32,
    ) -> Result<Arc<Net>, UeventError> {
        let chain = charge_chain(&user_ns.ucounts_ns, euid);
        let call = self.netns_oracle.begin_call(chain.clone());
        let ucounts = self.inc_net_namespaces(&user_ns.ucounts_ns, euid);
        if ucounts.is_some() {
            self.netns_oracle.charged(&chain);
        }
        let what = format!("copy_net_ns in user namespace {}", user_ns.name);
        self.netns_oracle.end_call(call, ucounts.is_none(), &what);
        let ucounts = ucounts.ok_or(UeventError::NoSpace)?;
        sim::point("net_alloc", ObjId::NONE, &costs::NET_ALLOC);
        let obj = sim::new_object("net");
        let id = self
            .next_net
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let init_owned = user_ns.level == 0;
        sim::point("setup_net", obj, &costs::SETUP_NET);
        let sock = self.uevent_net_init(init_owned);
        let net = Arc::new(Net {
            obj,
            id,
            count: Refcount::new("net.ns.count", 1),
            user_ns: Arc::clone(user_ns),
            ucounts: Some(ucounts),
            uevent_sock: sock,
        });
        // get_user_ns. The kernel takes it before setup_net; taking it
        // last is indistinguishable (the creator's credentials hold the
        // namespace meanwhile) and keeps the step order of every run.
        user_ns.get();
        Ok(net)
    }

    /// `inc_net_namespaces`: charge (`ns`, `uid`). With
    /// `netns-wait-pending-free`, a failed charge waits for a pending
    /// `cleanup_net` and is tried again as long as the flush waited.
    fn inc_net_namespaces(&self, ns: &Arc<UcountsNs>, uid: u32) -> Option<Arc<Ucounts>> {
        loop {
            let charge = self
                .userns
                .ucounts
                .inc_ucount(ns, uid, UcountType::NetNamespaces);
            if charge.is_some() {
                return charge;
            }
            // Namespaces on cleanup_list still hold their charge: wait for
            // cleanup_net, then try again.
            if !(self.patches.wait_pending_free && flush_work(&self.net_cleanup_work)) {
                return None;
            }
            sim::note("copy_net_ns: retry", ObjId::NONE, 0);
        }
    }

    /// `uevent_net_init`: the namespace's kernel socket, on the list
    /// unless the restrict patch keeps non-initial owners off it.
    fn uevent_net_init(&self, init_owned: bool) -> Arc<UeventSock> {
        let sock = new_uevent_sock(init_owned);
        if !self.patches.restrict || init_owned {
            self.uevent_sock_mutex.lock().socks.push(Arc::clone(&sock));
        }
        sock
    }

    /// `uevent_net_exit`: off the list (same condition), release.
    fn uevent_net_exit(&self, net: &Net) {
        let sock = &net.uevent_sock;
        if !self.patches.restrict || sock.init_owned {
            self.uevent_sock_mutex
                .lock()
                .socks
                .retain(|s| !Arc::ptr_eq(s, sock));
        }
        sim::free_object(sock.obj);
    }

    /// `put_net`: the last reference queues the namespace on
    /// `cleanup_list` and kicks `net_cleanup_work`.
    ///
    /// `init_net` is never freed, so its references are not counted: a get
    /// or put of it is no operation in the model.
    pub fn put_net(&self, net: Arc<Net>) {
        if net.is_init() || !net.count.dec_and_test() {
            return;
        }
        self.released_freed.lock().0 += 1;
        if let Some(u) = &net.ucounts {
            self.netns_oracle.released(&charge_chain(&u.ns, u.uid));
        }
        // Its owner loses a holder now; the reference goes in cleanup_net.
        self.userns.holder_gone(&net.user_ns);
        sim::park_object(net.obj, "queued");
        if self.cleanup_list.llist_add(net) {
            schedule_work(&self.net_cleanup_work);
        }
    }

    /// `cleanup_net`, the work function: take the whole queue, run the
    /// pernet exits, wait one grace period for the batch, then free and
    /// uncharge every namespace and drop its owner (`put_user_ns`).
    fn cleanup_net(&self) {
        let batch = self.cleanup_list.llist_del_all();
        sim::note("cleanup_net: batch", ObjId::NONE, batch.len() as i64);
        for net in &batch {
            self.uevent_net_exit(net);
        }
        synchronize_rcu();
        for net in batch {
            sim::point("net_free", net.obj, &costs::NET_EXIT);
            if let Some(u) = &net.ucounts {
                self.userns.ucounts.dec_ucount(u, UcountType::NetNamespaces);
                self.netns_oracle.freed(&charge_chain(&u.ns, u.uid));
            }
            self.userns.put_user_ns_deferred(&net.user_ns);
            sim::free_object(net.obj);
            self.released_freed.lock().1 += 1;
        }
    }

    /// (released, freed) network namespaces so far.
    pub fn released_and_freed(&self) -> (u64, u64) {
        *self.released_freed.lock()
    }

    /// Namespaces waiting in the cleanup queue.
    pub fn peek_pending(&self) -> usize {
        self.cleanup_list.peek_len()
    }

    pub fn cleanup_work(&self) -> &Arc<Work> {
        &self.net_cleanup_work
    }

    // ------------------------------------------------------------ listeners

    /// `socket(AF_NETLINK, SOCK_DGRAM, NETLINK_KOBJECT_UEVENT)` and
    /// `bind(groups = 1)` in `net`, with `rcvbuf` bytes of receive buffer
    /// (`SO_RCVBUF` of half of it: the kernel doubles the value and keeps
    /// at least [`SOCK_MIN_RCVBUF`]). The socket holds a reference to `net`.
    pub fn uevent_listen(&self, net: &Arc<Net>, name: &str, rcvbuf: usize) -> Arc<Listener> {
        let rcvbuf = (rcvbuf / 2 * 2).max(SOCK_MIN_RCVBUF);
        net.get();
        let id = self
            .next_listener
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let l = Arc::new(Listener {
            obj: sim::new_object("uevent_listener"),
            key: id,
            name: name.to_string(),
            net: Arc::clone(net),
            rcvbuf,
            state: sim::HostMutex::new("a socket's receive queue", RecvQueue::default()),
        });
        self.oracle.bound(id, name, net.init_owned());
        net.uevent_sock.listeners.lock().push(Arc::clone(&l));
        l
    }

    /// Close a listening socket: unbind and drop its namespace reference.
    pub fn uevent_close(&self, l: &Arc<Listener>) {
        l.net
            .uevent_sock
            .listeners
            .lock()
            .retain(|x| !Arc::ptr_eq(x, l));
        l.state.lock().closed = true;
        self.put_net(Arc::clone(&l.net));
    }

    /// `recvmsg(MSG_DONTWAIT)`: ENOBUFS once after an overrun, else the
    /// oldest message, else EAGAIN.
    pub fn uevent_recv(&self, l: &Listener) -> Result<Received, UeventError> {
        sim::point("recvmsg", l.obj, &costs::RECVMSG);
        let mut st = l.state.lock();
        if std::mem::take(&mut st.sk_err) {
            drop(st);
            self.oracle.received(l.key, false);
            return Err(UeventError::NoBufs);
        }
        let Some(r) = st.queue.pop_front() else {
            return Err(UeventError::Again);
        };
        st.rmem -= r.truesize;
        // netlink_rcv_wake: a drained queue is no longer congested.
        if st.queue.is_empty() {
            st.congested = false;
        }
        drop(st);
        self.oracle.received(l.key, true);
        Ok(r)
    }

    /// `netlink_recvmsg` without MSG_DONTWAIT: as [`Uevent::uevent_recv`],
    /// but while nothing is queued the receiver sleeps until a delivery
    /// (or an overrun) wakes it.
    pub fn uevent_recv_wait(&self, l: &Listener) -> Result<Received, UeventError> {
        loop {
            match self.uevent_recv(l) {
                Err(UeventError::Again) => sim::block("recvmsg", l.obj, false),
                got => return got,
            }
        }
    }

    /// `netlink_broadcast` on one namespace's kernel socket: offer the
    /// message to every listener bound there.
    fn netlink_broadcast(&self, sock: &UeventSock, msg: &Arc<Message>, seqnum: u64) {
        let listeners: Vec<Arc<Listener>> = sock.listeners.lock().clone();
        for l in listeners {
            sim::point("netlink_broadcast", l.obj, &costs::NETLINK_DELIVER);
            self.deliver(&l, msg, seqnum);
        }
    }

    /// Whether a receive buffer holding `rmem` bytes takes an skb of
    /// `truesize`: with `netlink-rmem-after-charge` the skb is charged
    /// first and kept if the total fits or it is alone; before, it was
    /// queued whenever the bytes already held fitted, one skb past the
    /// buffer.
    fn fits(&self, rmem: usize, truesize: usize, rcvbuf: usize) -> bool {
        if self.patches.rmem_after_charge {
            rmem == 0 || rmem + truesize <= rcvbuf
        } else {
            rmem <= rcvbuf
        }
    }

    /// `netlink_broadcast_deliver` or `netlink_overrun`.
    fn deliver(&self, l: &Listener, msg: &Arc<Message>, seqnum: u64) {
        let mut st = l.state.lock();
        if st.closed {
            return;
        }
        let truesize = msg.truesize(seqnum, self.patches.small_head_cache);
        let queued = self.fits(st.rmem, truesize, l.rcvbuf) && !st.congested;
        let mut set_err = false;
        if queued {
            st.rmem += truesize;
            st.queue.push_back(Received {
                message: Arc::clone(msg),
                seqnum,
                truesize,
            });
        } else {
            if !st.congested {
                st.congested = true;
                st.sk_err = true;
                set_err = true;
            }
            st.drops += 1;
        }
        let drops = st.drops;
        drop(st);
        {
            let mut s = self.stats.lock();
            if queued {
                s.wakeups += 1;
            } else {
                s.drops += 1;
            }
        }
        // `sk_data_ready` (or `sk_error_report`): a waiting receiver runs.
        sim::wake_all(l.obj, 0);
        let key = l.key;
        self.oracle.offered(key, seqnum, msg.origin, queued);
        if set_err {
            self.oracle.enobufs_set(key);
        }
        sim::note(
            if queued {
                "uevent queued"
            } else {
                "uevent dropped"
            },
            l.obj,
            seqnum as i64,
        );
        if !queued {
            sim::note(COUNTER_DROPS, l.obj, drops as i64);
        }
        sim::wake_all(l.obj, 0);
    }

    // ------------------------------------------------------------ kernel events

    /// `kobject_uevent_env`: build the environment, take a sequence number
    /// and broadcast: tagged events into their own namespace, untagged
    /// ones into every socket on `uevent_sock_list`.
    pub fn kobject_uevent_env(
        &self,
        kobj: &Kobject,
        action: &str,
        envp: &[String],
    ) -> Result<(), UeventError> {
        sim::point("kobject_uevent_env", ObjId::NONE, &costs::UEVENT_ENV);
        let text = uevent_text(kobj, action, envp);
        // add_uevent_var: the environment (SEQNUM included) must fit.
        if text.len() + seqnum_var_len(u64::MAX) > UEVENT_BUFFER_SIZE {
            return Err(UeventError::NoMem);
        }
        let msg = Arc::new(Message {
            text,
            origin: Origin::Kernel {
                tagged: kobj.tag.is_some(),
            },
        });
        self.stats.lock().kernel_events += 1;
        match self.patches.regime() {
            SeqnumRegime::GlobalUnderMutex => {
                let mut list = self.uevent_sock_mutex.lock();
                list.seqnum += 1;
                let seqnum = list.seqnum;
                sim::point("uevent_alloc_skb", ObjId::NONE, &costs::UEVENT_SKB);
                match &kobj.tag {
                    Some(net) => self.netlink_broadcast(&net.uevent_sock, &msg, seqnum),
                    None => {
                        for sock in &list.socks {
                            self.netlink_broadcast(sock, &msg, seqnum);
                        }
                    }
                }
            }
            SeqnumRegime::GlobalAtomic => {
                let seqnum = self.seqnum_atomic.fetch_add(1, Ordering::Relaxed) + 1;
                sim::point("uevent_alloc_skb", ObjId::NONE, &costs::UEVENT_SKB);
                match &kobj.tag {
                    Some(net) => self.netlink_broadcast(&net.uevent_sock, &msg, seqnum),
                    None => {
                        let list = self.uevent_sock_mutex.lock();
                        for sock in &list.socks {
                            self.netlink_broadcast(sock, &msg, seqnum);
                        }
                    }
                }
            }
            SeqnumRegime::PerNetns => match &kobj.tag {
                Some(net) => {
                    self.with_netns_lock(&net.uevent_sock, |sock| {
                        let seqnum = bump_netns_seqnum(sock);
                        self.netlink_broadcast(sock, &msg, seqnum);
                    });
                }
                None => {
                    let list = self.uevent_sock_mutex.lock();
                    sim::point("uevent_alloc_skb", ObjId::NONE, &costs::UEVENT_SKB);
                    for sock in &list.socks {
                        let seqnum = bump_netns_seqnum(sock);
                        self.netlink_broadcast(sock, &msg, seqnum);
                    }
                }
            },
        }
        Ok(())
    }

    /// Run `f` under the lock that protects `sock`'s per-namespace counter
    /// (the 2018 proposal): the global mutex for namespaces owned by the
    /// initial user namespace, `sk_mutex` for the others.
    fn with_netns_lock<R>(&self, sock: &UeventSock, f: impl FnOnce(&UeventSock) -> R) -> R {
        if sock.init_owned {
            let _g = self.uevent_sock_mutex.lock();
            f(sock)
        } else {
            let _g = sock.sk_mutex.lock();
            f(sock)
        }
    }

    // ------------------------------------------------------------ injection

    /// `uevent_net_rcv_skb`: a uevent sent by userspace, with credentials
    /// `sender`, to the kernel socket of `net`. The sender needs
    /// CAP_SYS_ADMIN over `net`'s owning user namespace
    /// ([`userns::ns_capable`]; the kernel asks it of the socket's opener
    /// and of the sending task, both `sender` here). Returns the sequence
    /// number the event carried.
    pub fn uevent_net_rcv_skb(
        &self,
        net: &Net,
        sender: &Cred,
        payload: &str,
    ) -> Result<u64, UeventError> {
        if !self.patches.inject {
            sim::point("netlink_unicast", ObjId::NONE, &costs::NETLINK_RCV);
            return Err(UeventError::ConnRefused);
        }
        sim::point("netlink_rcv_skb", net.uevent_sock.obj, &costs::NETLINK_RCV);
        // The kernel's "no data" check tests the data pointer of the
        // netlink message, which is never NULL: an empty payload passes
        // (the running kernel broadcasts it; see the conformance cases).
        let capable = ns_capable(sender, &net.user_ns, CAP_SYS_ADMIN);
        if !capable {
            return Err(UeventError::Perm);
        }
        let msg = Arc::new(Message {
            text: payload.to_string(),
            origin: Origin::Injected { capable },
        });
        self.stats.lock().injected += 1;
        match self.patches.regime() {
            SeqnumRegime::GlobalUnderMutex => {
                let mut list = self.uevent_sock_mutex.lock();
                list.seqnum += 1;
                let seqnum = list.seqnum;
                self.uevent_net_broadcast(net, &msg, seqnum)
            }
            SeqnumRegime::GlobalAtomic => {
                let seqnum = self.seqnum_atomic.fetch_add(1, Ordering::Relaxed) + 1;
                self.uevent_net_broadcast(net, &msg, seqnum)
            }
            SeqnumRegime::PerNetns => self.with_netns_lock(&net.uevent_sock, |sock| {
                let seqnum = bump_netns_seqnum(sock);
                self.uevent_net_broadcast(net, &msg, seqnum)
            }),
        }
    }

    /// `uevent_net_broadcast`: append SEQNUM (or fail when the message,
    /// netlink header included, would not fit), copy the skb without the
    /// header, broadcast into `net` only.
    fn uevent_net_broadcast(
        &self,
        net: &Net,
        msg: &Arc<Message>,
        seqnum: u64,
    ) -> Result<u64, UeventError> {
        if NLMSG_HDRLEN + msg.len_with(seqnum) > UEVENT_BUFFER_SIZE {
            return Err(UeventError::Inval);
        }
        sim::point("skb_copy_expand", ObjId::NONE, &costs::UEVENT_SKB);
        self.netlink_broadcast(&net.uevent_sock, msg, seqnum);
        Ok(seqnum)
    }

    /// `/sys/kernel/uevent_seqnum` (global counter). For checkers and
    /// reports outside tasks, where taking the mutex is no scheduling point.
    pub fn peek_seqnum(&self) -> u64 {
        match self.patches.regime() {
            SeqnumRegime::GlobalAtomic => self.seqnum_atomic.peek(),
            _ => self.uevent_sock_mutex.lock().seqnum,
        }
    }

    /// The per-namespace counter of the 2018 proposal.
    pub fn peek_netns_seqnum(net: &Net) -> u64 {
        net.uevent_sock.uevent_seqnum.peek()
    }

    pub fn stats(&self) -> Stats {
        *self.stats.lock()
    }

    /// Namespaces whose sockets are on `uevent_sock_list` (for checkers
    /// and reports outside tasks).
    pub fn listed(&self) -> usize {
        self.uevent_sock_mutex.lock().socks.len()
    }
}

fn new_uevent_sock(init_owned: bool) -> Arc<UeventSock> {
    Arc::new(UeventSock {
        obj: sim::new_object("uevent_sock"),
        init_owned,
        sk_mutex: Mutex::new("sk_mutex", ()),
        listeners: SpinLock::new("nl_table_lock", Vec::new()),
        uevent_seqnum: AtomicU64::new("net.uevent_seqnum", 0),
    })
}

/// `++net->uevent_seqnum` under the caller's lock: a plain read and write,
/// so a wrong lock would lose or repeat numbers.
fn bump_netns_seqnum(sock: &UeventSock) -> u64 {
    let n = sock.uevent_seqnum.load(Ordering::Relaxed) + 1;
    sock.uevent_seqnum.store(n, Ordering::Relaxed);
    n
}

/// `ACTION@DEVPATH\0ACTION=..\0DEVPATH=..\0SUBSYSTEM=..\0` and the
/// caller's variables.
fn uevent_text(kobj: &Kobject, action: &str, envp: &[String]) -> String {
    let mut t = format!(
        "{action}@{}\0ACTION={action}\0DEVPATH={}\0SUBSYSTEM={}\0",
        kobj.devpath, kobj.devpath, kobj.subsystem
    );
    for v in envp {
        t.push_str(v);
        t.push('\0');
    }
    t
}

/// Costs this crate adds to the cost table.
pub fn cost_keys() -> &'static [&'static CostKey] {
    costs::ALL
}

#[cfg(not(loom))]
impl Net {
    /// Name the namespace's state (`sim::Execution::name_state`): its
    /// identity, references and charge, and its uevent socket with the
    /// listeners bound in it.
    pub fn name_state(&self, h: &mut dyn std::hash::Hasher) {
        let Net {
            obj,
            id: _,
            user_ns: _,
            count,
            ucounts,
            uevent_sock,
        } = self;
        h.write_u32(obj.0);
        h.write_i64(count.peek());
        h.write_u32(ucounts.as_ref().map_or(0, |u| u.obj.0));
        uevent_sock.name_state(h);
    }
}

#[cfg(not(loom))]
impl UeventSock {
    fn name_state(&self, h: &mut dyn std::hash::Hasher) {
        let UeventSock {
            obj,
            init_owned: _,
            // Held only within a step:
            sk_mutex: _,
            listeners,
            uevent_seqnum,
        } = self;
        h.write_u32(obj.0);
        let named = listeners.peek_with(|l| {
            h.write_usize(l.len());
            l.iter().for_each(|l| l.name_state(h));
        });
        h.write_u8(named.is_some() as u8);
        h.write_u64(uevent_seqnum.peek());
    }
}

#[cfg(not(loom))]
impl Listener {
    /// Name the socket's state (`sim::Execution::name_state`): its
    /// identity, buffer and receive queue (not its name, a task's).
    pub fn name_state(&self, h: &mut dyn std::hash::Hasher) {
        let Listener {
            obj,
            key,
            name: _,
            net,
            rcvbuf,
            state,
        } = self;
        h.write_u32(obj.0);
        h.write_u32(*key);
        h.write_u32(net.obj.0);
        h.write_usize(*rcvbuf);
        let q = state.lock();
        let RecvQueue {
            queue,
            rmem,
            congested,
            sk_err,
            drops,
            closed,
        } = &*q;
        h.write_usize(queue.len());
        for r in queue {
            let Received {
                message,
                seqnum,
                truesize,
            } = r;
            h.write_usize(message.text.len());
            h.write(message.text.as_bytes());
            let origin = match message.origin {
                Origin::Kernel { tagged } => tagged as u8,
                Origin::Injected { capable } => 2 | capable as u8,
            };
            h.write_u8(origin);
            h.write_u64(*seqnum);
            h.write_usize(*truesize);
        }
        h.write_usize(*rmem);
        h.write_u8(*congested as u8 | (*sk_err as u8) << 1 | (*closed as u8) << 2);
        h.write_u64(*drops);
    }
}

#[cfg(not(loom))]
impl Uevent {
    /// Name the subsystem's state (`sim::Execution::name_state`): the
    /// sockets and the sequence number, the namespaces waiting for
    /// cleanup (each whole), the work, `init_net`, the oracles, the
    /// counters. The ids the next namespace and listener take only label
    /// them. False while a task holds `uevent_sock_mutex`.
    pub fn name_state(&self, h: &mut sim::StateHasher) -> bool {
        use std::hash::Hasher;
        let Uevent {
            patches: _,
            userns: _,
            next_net: _,
            next_listener: _,
            uevent_sock_mutex,
            seqnum_atomic,
            cleanup_list,
            net_cleanup_work,
            init_net,
            oracle,
            netns_oracle,
            stats,
            released_freed,
        } = self;
        let socks = uevent_sock_mutex.peek_with(|l| {
            h.write_usize(l.socks.len());
            l.socks.iter().for_each(|s| h.write_u32(s.obj.0));
            h.write_u64(l.seqnum);
        });
        h.write_u64(seqnum_atomic.peek());
        h.write_usize(cleanup_list.peek_len());
        cleanup_list.peek_each(|net| net.name_state(h));
        net_cleanup_work.name_state(h);
        init_net.name_state(h);
        oracle.name_state(h);
        netns_oracle.name_state(h);
        let Stats {
            kernel_events,
            injected,
            wakeups,
            drops,
        } = *stats.lock();
        for n in [kernel_events, injected, wakeups, drops] {
            h.write_u64(n);
        }
        let (released, freed) = *released_freed.lock();
        h.write_u64(released);
        h.write_u64(freed);
        socks.is_some()
    }
}
