//! The uevent model called directly (outside a simulation the primitives
//! are ordinary locks and the kworker is a thread).
#![cfg(not(loom))]

use std::sync::Arc;
use sync::{flush_work, Workqueue};
use ucounts::UcountType;
use uevent::oracle::Origin;
use uevent::{Kobject, Uevent, UeventError, UeventPatches};
use userns::{CapSet, Cred, UserNamespace, Userns, UsernsPatches};

/// The subsystem over a user-namespace model: the initial user namespace,
/// a container's user namespace made by uid 1000, and three senders.
struct World {
    uevent: Arc<Uevent>,
    init: Arc<UserNamespace>,
    container: Arc<UserNamespace>,
    /// Root of the initial user namespace: capable everywhere.
    host_root: Cred,
    /// The container's root (uid 1000, every capability in the
    /// container): capable over namespaces the container owns.
    container_root: Cred,
    /// uid 1001 of the host without capabilities: capable nowhere here.
    stranger: Cred,
    wq: Arc<Workqueue>,
}

impl Drop for World {
    fn drop(&mut self) {
        self.wq.shutdown();
    }
}

fn world(patches: UeventPatches) -> World {
    let sys = Userns::standalone(UsernsPatches::NEWEST);
    let user = Cred::new(&sys.init, 1000, 1000, CapSet::EMPTY);
    let container_root = sys.create_user_ns(&user, "container").unwrap();
    let wq = Workqueue::new("netns");
    wq.start_worker("kworker");
    World {
        uevent: Uevent::new(patches, &sys, &wq),
        init: Arc::clone(&sys.init),
        container: Arc::clone(&container_root.user_ns),
        host_root: sys.init_root(),
        container_root,
        stranger: Cred::new(&sys.init, 1001, 1001, CapSet::EMPTY),
        wq,
    }
}

fn v(inject: bool, restrict: bool) -> UeventPatches {
    UeventPatches {
        inject,
        restrict,
        ..UeventPatches::default()
    }
}

fn device() -> Kobject {
    Kobject {
        devpath: "/devices/virtual/mem/full".into(),
        subsystem: "mem".into(),
        tag: None,
    }
}

#[test]
fn an_untagged_host_event_reaches_containers_until_the_restrict_patch() {
    for (restrict, reaches) in [(false, true), (true, false)] {
        let w = world(v(true, restrict));
        let net = w.uevent.copy_net_ns(&w.container, 1000).unwrap();
        let host = w.uevent.uevent_listen(&w.uevent.init_net, "udevd", 1 << 16);
        let inside = w.uevent.uevent_listen(&net, "container-udevd", 1 << 16);
        w.uevent.kobject_uevent_env(&device(), "add", &[]).unwrap();
        let got = w.uevent.uevent_recv(&host).unwrap();
        assert_eq!(got.seqnum, 1);
        assert!(got
            .message
            .text
            .starts_with("add@/devices/virtual/mem/full\0"));
        assert_eq!(w.uevent.uevent_recv(&inside).is_ok(), reaches);
        let leak = w
            .uevent
            .oracle
            .take_violation(uevent::oracle::Watched::NoLeakIntoUnprivileged);
        assert_eq!(leak.is_some(), reaches, "{leak:?}");
    }
}

#[test]
fn a_network_namespace_owned_by_init_still_receives_host_events() {
    let w = world(v(true, true));
    let net = w.uevent.copy_net_ns(&w.init, 0).unwrap();
    let l = w.uevent.uevent_listen(&net, "l", 1 << 16);
    w.uevent.kobject_uevent_env(&device(), "add", &[]).unwrap();
    assert_eq!(w.uevent.uevent_recv(&l).unwrap().seqnum, 1);
}

#[test]
fn tagged_events_stay_in_their_namespace() {
    let w = world(v(true, false));
    let net = w.uevent.copy_net_ns(&w.container, 1000).unwrap();
    let host = w.uevent.uevent_listen(&w.uevent.init_net, "host", 1 << 16);
    let inside = w.uevent.uevent_listen(&net, "inside", 1 << 16);
    let veth = Kobject {
        devpath: "/devices/virtual/net/veth0".into(),
        subsystem: "net".into(),
        tag: Some(Arc::clone(&net)),
    };
    w.uevent.kobject_uevent_env(&veth, "add", &[]).unwrap();
    assert_eq!(w.uevent.uevent_recv(&host), Err(UeventError::Again));
    let got = w.uevent.uevent_recv(&inside).unwrap();
    assert_eq!(got.message.origin, Origin::Kernel { tagged: true });
}

#[test]
fn injection_needs_cap_sys_admin_and_room_for_seqnum() {
    let w = world(v(true, true));
    let net = w.uevent.copy_net_ns(&w.container, 1000).unwrap();
    let inside = w.uevent.uevent_listen(&net, "inside", 1 << 16);
    let host = w.uevent.uevent_listen(&w.uevent.init_net, "host", 1 << 16);
    let u = &w.uevent;
    assert_eq!(
        u.uevent_net_rcv_skb(&net, &w.stranger, "add@/x"),
        Err(UeventError::Perm)
    );
    assert_eq!(
        u.uevent_net_rcv_skb(&net, &w.stranger, ""),
        Err(UeventError::Perm)
    );
    // Header (16) + payload + "SEQNUM=1\0" (9) must fit in 2048 bytes.
    let fits = "x".repeat(uevent::UEVENT_BUFFER_SIZE - 16 - 9);
    assert_eq!(u.uevent_net_rcv_skb(&net, &w.container_root, &fits), Ok(1));
    let big = "x".repeat(uevent::UEVENT_BUFFER_SIZE - 16 - 8);
    assert_eq!(
        u.uevent_net_rcv_skb(&net, &w.container_root, &big),
        Err(UeventError::Inval)
    );
    // The failed big one used a sequence number, as the kernel's does; an
    // empty payload is broadcast like any other.
    assert_eq!(u.uevent_net_rcv_skb(&net, &w.container_root, ""), Ok(3));
    assert_eq!(u.uevent_recv(&inside).unwrap().seqnum, 1);
    assert_eq!(u.uevent_recv(&inside).unwrap().seqnum, 3);
    assert_eq!(u.uevent_recv(&host), Err(UeventError::Again));
}

#[test]
fn before_4_17_the_kernel_socket_refuses_input() {
    let w = world(v(false, false));
    let r = w
        .uevent
        .uevent_net_rcv_skb(&w.uevent.init_net, &w.host_root, "add@/x");
    assert_eq!(r, Err(UeventError::ConnRefused));
}

/// Five injected uevents of 34 bytes (50 with the netlink header the
/// copy keeps) into a listener asking for 1500 bytes, which gets the
/// smallest buffer, 2304 bytes. What it holds depends on the truesize a
/// short skb charges and on when netlink looks at the buffer.
#[test]
fn an_overrun_drops_counts_and_reports_enobufs_once() {
    let v6_3 = UeventPatches {
        small_head_cache: true,
        ..v(true, true)
    };
    let v6_16 = UeventPatches {
        rmem_after_charge: true,
        ..v6_3
    };
    // kmalloc-512 heads (768 bytes of truesize), checked before charging:
    // queued at 0, 768, 1536 and 2304 bytes.
    overrun(v(true, true), 4);
    // Heads from the small-head cache (832): the fourth finds 2496.
    overrun(v6_3, 3);
    // Charged first: the third would make 2496, over 2304.
    overrun(v6_16, 2);
}

fn overrun(patches: UeventPatches, queued: u64) {
    let w = world(patches);
    let u = &w.uevent;
    let l = u.uevent_listen(&u.init_net, "slow", 1500);
    assert_eq!(l.rcvbuf, uevent::SOCK_MIN_RCVBUF);
    for _ in 0..5 {
        u.uevent_net_rcv_skb(&u.init_net, &w.host_root, "add@/devices/x\0ACTION=add")
            .unwrap();
    }
    assert_eq!(l.drops(), 5 - queued, "{patches:?}");
    assert_eq!(u.uevent_recv(&l), Err(UeventError::NoBufs));
    let seqnums: Vec<u64> = (0..queued)
        .map(|_| u.uevent_recv(&l).unwrap().seqnum)
        .collect();
    assert_eq!(seqnums, (1..=queued).collect::<Vec<_>>());
    assert_eq!(u.uevent_recv(&l), Err(UeventError::Again));
    assert_eq!(u.oracle.silent_loss(), None);
    assert_eq!(u.stats().drops, 5 - queued);
}

#[test]
fn truesize_follows_the_allocator() {
    use uevent::skb_truesize;
    // Measured on 6.18 (/proc/net/netlink Rmem per queued uevent): data
    // of 36 to 230 bytes 832, 260 to 530 bytes 1280, 730 to 1530 bytes
    // 2304, 2030 bytes 4352.
    for (data, truesize) in [
        (36, 832),
        (230, 832),
        (260, 1280),
        (530, 1280),
        (730, 2304),
        (1530, 2304),
        (2030, 4352),
    ] {
        assert_eq!(skb_truesize(data, true), truesize, "{data} bytes");
    }
    // Before the small-head cache, kmalloc-512 held up to 192 bytes.
    assert_eq!(skb_truesize(50, false), 768);
    assert_eq!(skb_truesize(230, false), 1280);
}

#[test]
fn per_netns_sequence_numbers_count_from_one_in_each_namespace() {
    let w = world(UeventPatches {
        netns_seqnum: true,
        ..v(true, true)
    });
    let u = &w.uevent;
    let a = u.copy_net_ns(&w.container, 1000).unwrap();
    let b = u.copy_net_ns(&w.container, 1000).unwrap();
    let (root, host) = (&w.container_root, &w.host_root);
    assert_eq!(u.uevent_net_rcv_skb(&a, root, "add@/a"), Ok(1));
    assert_eq!(u.uevent_net_rcv_skb(&a, root, "add@/a"), Ok(2));
    assert_eq!(u.uevent_net_rcv_skb(&b, root, "add@/b"), Ok(1));
    assert_eq!(u.uevent_net_rcv_skb(&u.init_net, host, "add@/h"), Ok(1));
}

#[test]
fn namespaces_are_charged_and_freed_by_the_cleanup_work() {
    let w = world(v(true, true));
    let u = &w.uevent;
    w.container.ucounts_ns.set_max(UcountType::NetNamespaces, 1);
    let a = u.copy_net_ns(&w.container, 1000).unwrap();
    assert!(matches!(
        u.copy_net_ns(&w.container, 1000),
        Err(UeventError::NoSpace)
    ));
    let l = u.uevent_listen(&a, "l", 1000);
    u.put_net(a);
    assert_eq!(
        u.released_and_freed(),
        (0, 0),
        "the socket holds a reference"
    );
    u.uevent_close(&l);
    flush_work(u.cleanup_work());
    assert_eq!(u.released_and_freed(), (1, 1));
    assert!(u.copy_net_ns(&w.container, 1000).is_ok());
}

#[test]
fn a_network_namespace_holds_its_owner_until_cleanup_net_frees_it() {
    let w = world(v(true, true));
    let u = &w.uevent;
    let sys = &u.userns;
    let user = Cred::new(&w.init, 2000, 2000, CapSet::EMPTY);
    let owner = sys.create_user_ns(&user, "short-lived").unwrap();
    let net = u.copy_net_ns(&owner.user_ns, 2000).unwrap();
    assert!(Arc::ptr_eq(&net.user_ns, &owner.user_ns));
    assert!(!net.init_owned());
    // The creator's credentials go; the network namespace keeps it alive.
    sys.put_cred(owner.clone());
    assert!(!owner.user_ns.peek_freed());
    u.put_net(net);
    flush_work(u.cleanup_work());
    assert_eq!(u.released_and_freed(), (1, 1));
    assert!(owner.user_ns.peek_freed(), "put_user_ns by cleanup_net");
    assert!(Arc::ptr_eq(&u.init_net.user_ns, &w.init));
}
