//! The uevent model called directly (outside a simulation the primitives
//! are ordinary locks and the kworker is a thread).
#![cfg(not(loom))]

use std::sync::Arc;
use sync::{flush_work, Workqueue};
use ucounts::{UcountType, UcountsNs, UcountsTable};
use uevent::oracle::Origin;
use uevent::{Kobject, Uevent, UeventError, UeventPatches};

struct World {
    uevent: Arc<Uevent>,
    init: Arc<UcountsNs>,
    container: Arc<UcountsNs>,
    wq: Arc<Workqueue>,
}

impl Drop for World {
    fn drop(&mut self) {
        self.wq.shutdown();
    }
}

fn world(patches: UeventPatches) -> World {
    let table = Arc::new(UcountsTable::new());
    let init = UcountsNs::init(0);
    let charge = table.alloc_ucounts(&init, 1000);
    let container = UcountsNs::child(1, "container", &init, charge);
    let wq = Workqueue::new("netns");
    wq.start_worker("kworker");
    World {
        uevent: Uevent::new(patches, table, &init, &wq),
        init,
        container,
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
            .take_violation("uevent.no_leak_into_unprivileged");
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
        u.uevent_net_rcv_skb(&net, false, "add@/x"),
        Err(UeventError::Perm)
    );
    assert_eq!(
        u.uevent_net_rcv_skb(&net, false, ""),
        Err(UeventError::Perm)
    );
    // Header (16) + payload + "SEQNUM=1\0" (9) must fit in 2048 bytes.
    let fits = "x".repeat(uevent::UEVENT_BUFFER_SIZE - 16 - 9);
    assert_eq!(u.uevent_net_rcv_skb(&net, true, &fits), Ok(1));
    let big = "x".repeat(uevent::UEVENT_BUFFER_SIZE - 16 - 8);
    assert_eq!(
        u.uevent_net_rcv_skb(&net, true, &big),
        Err(UeventError::Inval)
    );
    // The failed big one used a sequence number, as the kernel's does; an
    // empty payload is broadcast like any other.
    assert_eq!(u.uevent_net_rcv_skb(&net, true, ""), Ok(3));
    assert_eq!(u.uevent_recv(&inside).unwrap().seqnum, 1);
    assert_eq!(u.uevent_recv(&inside).unwrap().seqnum, 3);
    assert_eq!(u.uevent_recv(&host), Err(UeventError::Again));
}

#[test]
fn before_4_17_the_kernel_socket_refuses_input() {
    let w = world(v(false, false));
    let r = w
        .uevent
        .uevent_net_rcv_skb(&w.uevent.init_net, true, "add@/x");
    assert_eq!(r, Err(UeventError::ConnRefused));
}

#[test]
fn an_overrun_drops_counts_and_reports_enobufs_once() {
    let w = world(v(true, true));
    let u = &w.uevent;
    let l = u.uevent_listen(&u.init_net, "slow", 1500);
    for _ in 0..5 {
        u.uevent_net_rcv_skb(&u.init_net, true, "add@/devices/x\0ACTION=add")
            .unwrap();
    }
    // 34 bytes each, charged 64 + 576 = 640: the fourth finds rmem (1920)
    // above rcvbuf (1500).
    assert_eq!(l.drops(), 2);
    assert_eq!(u.uevent_recv(&l), Err(UeventError::NoBufs));
    let seqnums: Vec<u64> = (0..3).map(|_| u.uevent_recv(&l).unwrap().seqnum).collect();
    assert_eq!(seqnums, [1, 2, 3]);
    assert_eq!(u.uevent_recv(&l), Err(UeventError::Again));
    assert_eq!(u.oracle.silent_loss(), None);
    assert_eq!(u.stats().drops, 2);
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
    assert_eq!(u.uevent_net_rcv_skb(&a, true, "add@/a"), Ok(1));
    assert_eq!(u.uevent_net_rcv_skb(&a, true, "add@/a"), Ok(2));
    assert_eq!(u.uevent_net_rcv_skb(&b, true, "add@/b"), Ok(1));
    assert_eq!(u.uevent_net_rcv_skb(&u.init_net, true, "add@/h"), Ok(1));
}

#[test]
fn namespaces_are_charged_and_freed_by_the_cleanup_work() {
    let w = world(v(true, true));
    let u = &w.uevent;
    w.container.set_max(UcountType::NetNamespaces, 1);
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
