//! Conformance cases for network-namespace uevents: the same question
//! asked of the model and of the running kernel.
//!
//! The kernel half is `probes/uevent_probe.py`, run by `python3` in a
//! child process (under `unshare` where a case needs a new namespace; the
//! probe itself drops to uid 1000 for an unprivileged sender), bounded by
//! `timeout`. The host
//! event of the listener cases is a synthetic `add` written to
//! `/sys/devices/virtual/mem/full/uevent`, as the kernel's own selftest
//! does; injections only go into network namespaces the probe created,
//! or are refused.
//!
//! The model half builds a fresh [`Uevent`] with the patches of the
//! running kernel's release ([`patches_for_release`]) over a user-namespace
//! subsystem ([`userns::Userns`]), and answers in the probe's words.

use crate::{Kobject, Uevent, UeventError, UeventPatches};
use probe::{Case, KernelAnswer, Skip};
use std::sync::Arc;
use userns::{CapSet, Cred, UserNamespace, Userns, UsernsPatches};

const PROBE: &str = include_str!("probes/uevent_probe.py");

/// The uevent patches of a kernel release (major, minor), by the releases
/// the kernel catalogue gives them (`uevent-inject` v4.17,
/// `uevent-restrict` v4.18, `uevent-atomic-seqnum` v6.9).
pub fn patches_for_release(release: (u32, u32)) -> UeventPatches {
    UeventPatches {
        inject: release >= (4, 17),
        restrict: release >= (4, 18),
        netns_seqnum: false,
        atomic_seqnum: release >= (6, 9),
    }
}

fn host_patches() -> UeventPatches {
    patches_for_release(probe::kernel_release().unwrap_or((6, 9)))
}

/// A model machine: the subsystem, the initial user namespace and a
/// child user namespace made by uid 1000 (as `unshare -U -r` by root
/// makes one owned by root; the owner's uid does not change the answers),
/// with the credentials its creator has in it (every capability).
struct Machine {
    uevent: Arc<Uevent>,
    init: Arc<UserNamespace>,
    child: Cred,
    wq: Arc<sync::Workqueue>,
}

impl Drop for Machine {
    fn drop(&mut self) {
        self.wq.shutdown();
    }
}

fn machine() -> Machine {
    let sys = Userns::standalone(UsernsPatches::NEWEST);
    let user = Cred::new(&sys.init, 1000, 1000, CapSet::EMPTY);
    let child = sys.create_user_ns(&user, "probe").expect("no limit");
    let wq = sync::Workqueue::new("netns");
    Machine {
        uevent: Uevent::new(host_patches(), &sys, &wq),
        init: Arc::clone(&sys.init),
        child,
        wq,
    }
}

/// Which namespaces a listener unshares, and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unshare {
    None,
    Net,
    User,
    UserNet,
}

impl Unshare {
    fn probe_name(self) -> &'static str {
        match self {
            Unshare::None => "init",
            Unshare::Net => "net",
            Unshare::User => "user",
            Unshare::UserNet => "user+net",
        }
    }
}

/// The model's answer: does a listener set up this way receive a host
/// device event? A socket keeps the network namespace it was made in.
fn host_event_model(unshare: Unshare, bind_first: bool) -> String {
    let m = machine();
    let u = &m.uevent;
    let net = match (unshare, bind_first) {
        (_, true) | (Unshare::None | Unshare::User, false) => Arc::clone(&u.init_net),
        (Unshare::Net, false) => u.copy_net_ns(&m.init, 0).expect("no limit"),
        (Unshare::UserNet, false) => u.copy_net_ns(&m.child.user_ns, 1000).expect("no limit"),
    };
    let l = u.uevent_listen(&net, "probe", 1 << 20);
    let full = Kobject {
        devpath: "/devices/virtual/mem/full".into(),
        subsystem: "mem".into(),
        tag: None,
    };
    u.kobject_uevent_env(&full, "add", &[]).expect("fits");
    match u.uevent_recv(&l) {
        Ok(_) => "received".into(),
        Err(_) => "none".into(),
    }
}

/// The model: a network device's uevent, tagged with a new network
/// namespace, with listeners in that namespace and in the host's.
fn tagged_model() -> String {
    let m = machine();
    let u = &m.uevent;
    let host = u.uevent_listen(&u.init_net, "host", 1 << 20);
    let net = u.copy_net_ns(&m.init, 0).expect("no limit");
    let own = u.uevent_listen(&net, "own", 1 << 20);
    let lo = Kobject {
        devpath: "/devices/virtual/net/lo".into(),
        subsystem: "net".into(),
        tag: Some(Arc::clone(&net)),
    };
    u.kobject_uevent_env(&lo, "add", &[]).expect("fits");
    let seen = |l: &crate::Listener| match u.uevent_recv(l) {
        Ok(_) => "received",
        Err(_) => "none",
    };
    format!("own={} host={}", seen(&own), seen(&host))
}

/// How the injecting probe runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sender {
    /// Root in a new network namespace (`unshare -n`).
    RootNewNet,
    /// Root of a new user namespace, in a new network namespace it owns
    /// (`unshare -U -r -n`).
    RootNewUserNet,
    /// Root of a new user namespace, in the host's network namespace
    /// (`unshare -U -r`).
    RootNewUserOnly,
    /// uid 1000 without capabilities in a new network namespace made by
    /// root (`unshare -n`, then the probe drops to uid 1000).
    UnprivilegedNewNet,
}

impl Sender {
    fn prefix(self) -> &'static str {
        match self {
            Sender::RootNewNet => "unshare -n",
            Sender::RootNewUserNet => "unshare -U -r -n",
            Sender::RootNewUserOnly => "unshare -U -r",
            Sender::UnprivilegedNewNet => "unshare -n",
        }
    }

    /// The probe's trailing argument: the uid to drop to.
    fn drop_to(self) -> &'static str {
        match self {
            Sender::UnprivilegedNewNet => " 1000",
            _ => "",
        }
    }

    fn needs_userns(self) -> bool {
        matches!(self, Sender::RootNewUserNet | Sender::RootNewUserOnly)
    }
}

/// The payloads the injection probe sends.
fn payload(kind: &str) -> String {
    match kind {
        "small" => {
            "add@/devices/nssim-probe\0ACTION=add\0DEVPATH=/devices/nssim-probe\0SUBSYSTEM=nssim\0"
                .into()
        }
        "empty" => String::new(),
        n => "x".repeat(n.parse().unwrap_or(0)),
    }
}

/// The model's answer for an injection: the error of the ack (or `ok`),
/// and whether the sender's own listener got the event.
fn inject_model(sender: Sender, kind: &str) -> String {
    let m = machine();
    let u = &m.uevent;
    let root = u.userns.init_root();
    let unprivileged = Cred::new(&m.init, 1000, 1000, CapSet::EMPTY);
    let (net, cred) = match sender {
        Sender::RootNewNet => (u.copy_net_ns(&m.init, 0), root),
        Sender::RootNewUserNet => (u.copy_net_ns(&m.child.user_ns, 1000), m.child.clone()),
        Sender::RootNewUserOnly => (Ok(Arc::clone(&u.init_net)), m.child.clone()),
        Sender::UnprivilegedNewNet => (u.copy_net_ns(&m.init, 0), unprivileged),
    };
    let net = net.expect("no limit");
    let l = u.uevent_listen(&net, "probe", 1 << 20);
    let ack = match u.uevent_net_rcv_skb(&net, &cred, &payload(kind)) {
        Ok(_) => "ok",
        Err(e) => errno_name(e),
    };
    let event = if u.uevent_recv(&l).is_ok() {
        "event"
    } else {
        "noevent"
    };
    format!("{ack} {event}")
}

fn errno_name(e: UeventError) -> &'static str {
    match e {
        UeventError::NoSpace => "ENOSPC",
        UeventError::Perm => "EPERM",
        UeventError::Inval => "EINVAL",
        UeventError::NoMem => "ENOMEM",
        UeventError::ConnRefused => "ECONNREFUSED",
        UeventError::NoBufs => "ENOBUFS",
        UeventError::Again => "EAGAIN",
    }
}

/// The model: an injected event carries the global counter's new value
/// (what `/sys/kernel/uevent_seqnum` shows right after), as its last
/// variable.
fn seqnum_model() -> String {
    let m = machine();
    let u = &m.uevent;
    let net = u.copy_net_ns(&m.init, 0).expect("no limit");
    let l = u.uevent_listen(&net, "probe", 1 << 20);
    let root = u.userns.init_root();
    u.uevent_net_rcv_skb(&net, &root, "add@/devices/nssim-probe\0ACTION=add\0")
        .expect("small and capable");
    let got = u.uevent_recv(&l).expect("delivered");
    let current = if got.seqnum == u.peek_seqnum() {
        "seqnum=current".to_string()
    } else {
        format!("seqnum={} current={}", got.seqnum, u.peek_seqnum())
    };
    // The model appends SEQNUM after the payload, as the kernel's
    // uevent_net_broadcast does.
    format!("{current} last")
}

/// The model: `injections` uevents into a listener with the smallest
/// receive buffer the kernel allows (SOCK_MIN_RCVBUF, 2304 bytes).
fn overrun_model(injections: u32) -> String {
    let m = machine();
    let u = &m.uevent;
    let net = u.copy_net_ns(&m.init, 0).expect("no limit");
    let l = u.uevent_listen(&net, "probe", 2304);
    let root = u.userns.init_root();
    for _ in 0..injections {
        u.uevent_net_rcv_skb(&net, &root, "add@/devices/nssim-probe\0ACTION=add\0")
            .expect("small and capable");
    }
    let mut first = None;
    let (mut enobufs, mut events) = (0, 0);
    loop {
        match u.uevent_recv(&l) {
            Ok(_) => events += 1,
            Err(UeventError::NoBufs) => enobufs += 1,
            Err(_) => break,
        }
        first.get_or_insert(if enobufs > 0 { "ENOBUFS" } else { "event" });
    }
    let lost = if events < injections { "yes" } else { "no" };
    format!(
        "first={} enobufs={enobufs} lost={lost}",
        first.unwrap_or("nothing")
    )
}

/// Run the probe with `args` under `prefix` (an `unshare`/`setpriv`
/// command line, or empty), as the host's root.
fn run_probe(prefix: &str, args: &str, needs_userns: bool) -> KernelAnswer {
    if !probe::host_is_root() {
        return Err(Skip(
            "the uevent probes need root (sysfs writes, unshare -n)".into(),
        ));
    }
    if needs_userns {
        probe::host_allows_userns()?;
    }
    let script = format!(
        "PY=$(python3 -c 'import sys; print(sys.executable)') || exit 3; exec {prefix} timeout 15 \"$PY\" -c {} {args}",
        probe::shell_quote(PROBE)
    );
    let out = probe::sh_as_host(&script, 30)?;
    match (out.status, out.stdout.lines().last()) {
        (Some(0), Some(line)) if !line.trim().is_empty() => Ok(line.trim().to_string()),
        _ => Err(Skip(format!(
            "the probe did not answer (status {:?}): {}",
            out.status,
            out.stderr.trim()
        ))),
    }
}

fn case(
    name: &str,
    question: &str,
    model: impl Fn() -> String + Send + Sync + 'static,
    kernel: impl Fn() -> KernelAnswer + Send + Sync + 'static,
) -> Case {
    Case {
        subsystem: "uevent",
        name: format!("uevent.{name}"),
        question: question.to_string(),
        model: Box::new(model),
        kernel: Box::new(kernel),
    }
}

fn host_event_case(name: &str, unshare: Unshare, bind_first: bool) -> Case {
    let when = if bind_first { "after" } else { "before" };
    let setup = format!("{when}:{}", unshare.probe_name());
    let question = format!(
        "a listener that unshares {} {} binding: does it receive a host device uevent?",
        match unshare {
            Unshare::None => "nothing",
            Unshare::Net => "its network namespace",
            Unshare::User => "its user namespace",
            Unshare::UserNet => "its user and network namespaces",
        },
        when
    );
    let needs_userns = matches!(unshare, Unshare::User | Unshare::UserNet);
    case(
        name,
        &question,
        move || host_event_model(unshare, bind_first),
        move || run_probe("", &format!("host_event {setup}"), needs_userns),
    )
}

fn inject_case(name: &str, question: &str, sender: Sender, kind: &'static str) -> Case {
    case(
        name,
        question,
        move || inject_model(sender, kind),
        move || {
            let args = format!("inject {kind}{}", sender.drop_to());
            run_probe(sender.prefix(), &args, sender.needs_userns())
        },
    )
}

/// Every uevent conformance case.
pub fn conformance_cases() -> Vec<Case> {
    vec![
        host_event_case("listener.initial_namespaces", Unshare::None, false),
        host_event_case("listener.new_netns", Unshare::Net, false),
        host_event_case("listener.new_userns", Unshare::User, false),
        host_event_case("listener.new_userns_and_netns", Unshare::UserNet, false),
        host_event_case("listener.bind_then_unshare_netns", Unshare::Net, true),
        host_event_case("listener.bind_then_unshare_userns", Unshare::User, true),
        host_event_case("listener.bind_then_unshare_both", Unshare::UserNet, true),
        case(
            "listener.tagged_network_device",
            "a network device's uevent in a new network namespace: does its listener get it, and the host's?",
            tagged_model,
            || run_probe("", "tagged", false),
        ),
        inject_case(
            "inject.root_in_new_netns",
            "root injects a uevent into a new network namespace: answer and delivery",
            Sender::RootNewNet,
            "small",
        ),
        inject_case(
            "inject.userns_root_in_own_netns",
            "root of a new user namespace injects into a network namespace that namespace owns",
            Sender::RootNewUserNet,
            "small",
        ),
        inject_case(
            "inject.userns_root_in_host_netns",
            "root of a new user namespace injects into the host's network namespace (no CAP_SYS_ADMIN over its owner)",
            Sender::RootNewUserOnly,
            "small",
        ),
        inject_case(
            "inject.unprivileged_user",
            "uid 1000 without capabilities injects into a network namespace owned by the initial user namespace",
            Sender::UnprivilegedNewNet,
            "small",
        ),
        inject_case(
            "inject.empty_payload",
            "root injects a netlink message with no payload",
            Sender::RootNewNet,
            "empty",
        ),
        inject_case(
            "inject.empty_payload_unprivileged",
            "uid 1000 without capabilities injects an empty message: which check answers first?",
            Sender::UnprivilegedNewNet,
            "empty",
        ),
        inject_case(
            "inject.fits",
            "a 2000-byte payload: header, payload and SEQNUM fit in 2048 bytes",
            Sender::RootNewNet,
            "2000",
        ),
        inject_case(
            "inject.too_big",
            "a 2030-byte payload: header, payload and SEQNUM exceed 2048 bytes",
            Sender::RootNewNet,
            "2030",
        ),
        case(
            "inject.seqnum",
            "an injected uevent's SEQNUM: the global counter's new value, appended as the last variable?",
            seqnum_model,
            || run_probe("unshare -n", "seqnum", false),
        ),
        case(
            "listener.overrun_enobufs_once",
            "50 uevents into a listener with the smallest receive buffer: ENOBUFS first and once, uevents lost",
            || overrun_model(50),
            || run_probe("unshare -n", "overrun 50", false),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_selftest_matrix_in_the_model() {
        assert_eq!(host_event_model(Unshare::None, false), "received");
        assert_eq!(host_event_model(Unshare::UserNet, false), "none");
        assert_eq!(host_event_model(Unshare::UserNet, true), "received");
    }

    #[test]
    fn releases_map_to_the_uevent_eras() {
        assert!(!patches_for_release((4, 16)).inject);
        assert!(patches_for_release((4, 17)).inject && !patches_for_release((4, 17)).restrict);
        assert!(patches_for_release((6, 18)).atomic_seqnum);
    }
}
