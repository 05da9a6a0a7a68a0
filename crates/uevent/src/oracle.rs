//! The bookkeeping behind the uevent invariants, judged per listening
//! socket the way a listener (udevd) would see it:
//!
//! * `uevent.seqnum_in_order`: the sequence numbers offered to a socket
//!   (queued or dropped) strictly increase;
//! * `uevent.no_leak_into_unprivileged`: no untagged kernel event reaches a
//!   socket whose network namespace is owned by a user namespace other than
//!   the initial one;
//! * `uevent.injection_permitted`: no injected event from a sender without
//!   CAP_SYS_ADMIN over the namespace is delivered;
//! * `uevent.no_silent_loss`: every event offered to a socket is received,
//!   still queued, or counted as a drop, and a socket that dropped events
//!   has reported ENOBUFS (or has it pending).

use sim::HostMutex as Mutex;
use std::collections::BTreeMap;

/// Where a broadcast message came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `kobject_uevent_env`; `tagged` for kobjects with a network
    /// namespace tag (network devices).
    Kernel { tagged: bool },
    /// `uevent_net_rcv_skb`; `capable` says whether the sender had
    /// CAP_SYS_ADMIN over the namespace's owning user namespace.
    Injected { capable: bool },
}

/// What the oracle knows of one listening socket.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SocketBook {
    pub name: String,
    /// The socket's netns is owned by the initial user namespace.
    pub init_owned: bool,
    pub offered: u64,
    pub queued: u64,
    pub received: u64,
    pub dropped: u64,
    pub enobufs_reported: u64,
    pub enobufs_pending: bool,
    /// Sequence numbers in the order they were offered.
    pub last_seqnum: Option<u64>,
    /// Every sequence number queued, in order (small runs only).
    pub seen: Vec<u64>,
}

/// The properties the oracle watches as uevents are offered (the kernel
/// crate's invariants `uevent.seqnum_in_order`,
/// `uevent.no_leak_into_unprivileged` and `uevent.injection_permitted`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Watched {
    /// Each listener is offered strictly increasing sequence numbers.
    SeqnumInOrder,
    /// No untagged kernel uevent reaches a listener of a network namespace
    /// owned by a non-initial user namespace.
    NoLeakIntoUnprivileged,
    /// An injected uevent is delivered only if its sender was capable.
    InjectionPermitted,
}

#[derive(Default)]
pub struct Oracle {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    sockets: BTreeMap<u32, SocketBook>,
    violations: BTreeMap<Watched, String>,
}

/// Keep at most this many sequence numbers per socket for reports.
const SEEN_KEPT: usize = 64;

impl State {
    fn violate(&mut self, invariant: Watched, detail: String) {
        self.violations.entry(invariant).or_insert(detail);
    }
}

impl Oracle {
    /// A listening socket was bound.
    pub fn bound(&self, id: u32, name: &str, init_owned: bool) {
        self.state.lock().sockets.insert(
            id,
            SocketBook {
                name: name.to_string(),
                init_owned,
                ..SocketBook::default()
            },
        );
    }

    /// A message with `seqnum` was offered to socket `id`; `queued` is
    /// false when it was dropped (receive buffer full or congested).
    pub fn offered(&self, id: u32, seqnum: u64, origin: Origin, queued: bool) {
        let mut s = self.state.lock();
        let Some(book) = s.sockets.get_mut(&id) else {
            return;
        };
        book.offered += 1;
        if queued {
            book.queued += 1;
            if book.seen.len() < SEEN_KEPT {
                book.seen.push(seqnum);
            }
        } else {
            book.dropped += 1;
        }
        let previous = book.last_seqnum.replace(seqnum);
        let (name, init_owned) = (book.name.clone(), book.init_owned);
        if let Some(prev) = previous.filter(|p| *p >= seqnum) {
            s.violate(
                Watched::SeqnumInOrder,
                format!("listener {name} was offered SEQNUM={seqnum} after SEQNUM={prev}"),
            );
        }
        match origin {
            Origin::Kernel { tagged: false } if !init_owned && queued => s.violate(
                Watched::NoLeakIntoUnprivileged,
                format!(
                    "untagged kernel uevent SEQNUM={seqnum} reached listener {name}, whose network namespace is owned by a non-initial user namespace"
                ),
            ),
            Origin::Injected { capable: false } if queued => s.violate(
                Watched::InjectionPermitted,
                format!(
                    "uevent SEQNUM={seqnum} injected without CAP_SYS_ADMIN reached listener {name}"
                ),
            ),
            _ => {}
        }
    }

    /// The overrun set ENOBUFS on socket `id`.
    pub fn enobufs_set(&self, id: u32) {
        if let Some(b) = self.state.lock().sockets.get_mut(&id) {
            b.enobufs_pending = true;
        }
    }

    /// A receive on socket `id` returned a message (`Ok`) or ENOBUFS.
    pub fn received(&self, id: u32, message: bool) {
        if let Some(b) = self.state.lock().sockets.get_mut(&id) {
            if message {
                b.received += 1;
                b.queued -= 1;
            } else {
                b.enobufs_reported += 1;
                b.enobufs_pending = false;
            }
        }
    }

    /// What broke `watched` since the last call, if anything did.
    pub fn take_violation(&self, watched: Watched) -> Option<String> {
        self.state.lock().violations.remove(&watched)
    }

    /// `uevent.no_silent_loss`, checked over every socket.
    pub fn silent_loss(&self) -> Option<String> {
        let s = self.state.lock();
        s.sockets.values().find_map(|b| {
            if b.offered != b.received + b.queued + b.dropped {
                return Some(format!(
                    "listener {}: {} offered but {} received, {} queued, {} dropped",
                    b.name, b.offered, b.received, b.queued, b.dropped
                ));
            }
            (b.dropped > 0 && b.enobufs_reported == 0 && !b.enobufs_pending).then(|| {
                format!(
                    "listener {} lost {} uevents without ENOBUFS",
                    b.name, b.dropped
                )
            })
        })
    }

    /// Every socket's book, by socket id.
    pub fn books(&self) -> BTreeMap<u32, SocketBook> {
        self.state.lock().sockets.clone()
    }
}

#[cfg(not(loom))]
impl Oracle {
    /// Name the oracle's state (`sim::Execution::name_state`): each
    /// socket's book but its name (a task's, which the shared part of a
    /// state must not hold), and which properties were found broken.
    pub fn name_state(&self, h: &mut dyn std::hash::Hasher) {
        let s = self.state.lock();
        let State {
            sockets,
            violations,
        } = &*s;
        h.write_usize(sockets.len());
        for (key, book) in sockets {
            let SocketBook {
                name: _,
                init_owned,
                offered,
                queued,
                received,
                dropped,
                enobufs_reported,
                enobufs_pending,
                last_seqnum,
                seen,
            } = book;
            h.write_u32(*key);
            h.write_u8(*init_owned as u8 | (*enobufs_pending as u8) << 1);
            for n in [offered, queued, received, dropped, enobufs_reported] {
                h.write_u64(*n);
            }
            h.write_u64(last_seqnum.map_or(0, |s| s + 1));
            h.write_usize(seen.len());
            seen.iter().for_each(|s| h.write_u64(*s));
        }
        violations.keys().for_each(|w| h.write_u8(*w as u8));
    }
}
