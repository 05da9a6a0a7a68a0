//! `std::sync::mpsc` under nssim: `channel` and `sync_channel` with std's
//! types and errors. A channel made inside an execution is a queue the
//! scheduler sees: every send and receive is a scheduling point, a
//! receive waits (blocked where the deadlock detector sees it) while the
//! queue is empty and a sender is left, and a send on a full bounded
//! channel waits for room. A channel made outside an execution is std's.

use std::collections::VecDeque;
pub use std::sync::mpsc::{RecvError, RecvTimeoutError, SendError, TryRecvError, TrySendError};
use std::sync::{Arc, Mutex as HostMutex};

/// The queue of a channel made inside an execution.
struct Queue<T> {
    items: VecDeque<T>,
    /// `None`: unbounded; `Some(n)`: a send waits while `n` are queued.
    bound: Option<usize>,
    senders: usize,
    receiver: bool,
    /// `sync_channel(0)`: a send hands its value to a receiver, waiting
    /// until one has taken it, and `try_send` succeeds only while a
    /// receiver waits.
    rendezvous: bool,
    /// Receivers waiting in `recv` now.
    waiting: usize,
    /// Values queued and taken so far, for a rendezvous send to wait on.
    pushed: u64,
    taken: u64,
}

struct Shared<T> {
    queue: HostMutex<Queue<T>>,
    obj: sim::ObjId,
}

impl<T> Shared<T> {
    fn queue(&self) -> std::sync::MutexGuard<'_, Queue<T>> {
        crate::mirror::unpoisoned(&self.queue)
    }

    fn point(&self, label: &'static str) {
        sim::point(label, self.obj, &::sync::costs::MUTEX);
    }

    /// Put `v` in, waiting for room when `wait`; back with the reason it
    /// could not.
    fn send(&self, v: T, wait: bool) -> Result<(), TrySendError<T>> {
        self.point("mpsc_send");
        loop {
            {
                let mut q = self.queue();
                if !q.receiver {
                    return Err(TrySendError::Disconnected(v));
                }
                // A rendezvous holds the one value being handed over.
                let room = q.bound.is_none_or(|b| q.items.len() < b.max(1));
                let taker = !q.rendezvous || wait || q.waiting > q.items.len();
                if room && taker {
                    q.items.push_back(v);
                    q.pushed += 1;
                    let ticket = q.pushed;
                    let handoff = q.rendezvous && wait;
                    drop(q);
                    sim::wake_all(self.obj, 0);
                    if handoff {
                        // A rendezvous: wait until a receiver took it (or
                        // none is left to).
                        sim::wait_until("mpsc_send", self.obj, || {
                            let q = self.queue();
                            q.taken >= ticket || !q.receiver
                        });
                    }
                    return Ok(());
                }
            }
            if !wait {
                return Err(TrySendError::Full(v));
            }
            sim::block("mpsc_send", self.obj, false);
        }
    }

    /// Take the next value, waiting for one when `wait`.
    fn recv(&self, wait: bool) -> Result<T, TryRecvError> {
        self.point("mpsc_recv");
        loop {
            {
                let mut q = self.queue();
                if let Some(v) = q.items.pop_front() {
                    q.taken += 1;
                    drop(q);
                    sim::wake_all(self.obj, 0);
                    return Ok(v);
                }
                if q.senders == 0 {
                    return Err(TryRecvError::Disconnected);
                }
                if wait {
                    q.waiting += 1;
                }
            }
            if !wait {
                return Err(TryRecvError::Empty);
            }
            sim::block("mpsc_recv", self.obj, false);
            self.queue().waiting -= 1;
        }
    }
}

enum SenderInner<T> {
    Simulated(Arc<Shared<T>>),
    Real(std::sync::mpsc::Sender<T>),
    RealSync(std::sync::mpsc::SyncSender<T>),
}

enum ReceiverInner<T> {
    Simulated(Arc<Shared<T>>),
    Real(std::sync::mpsc::Receiver<T>),
}

/// The sending half of [`channel`].
pub struct Sender<T>(SenderInner<T>);

/// The sending half of [`sync_channel`].
pub struct SyncSender<T>(SenderInner<T>);

/// The receiving half of a channel.
pub struct Receiver<T>(ReceiverInner<T>);

#[track_caller]
fn simulated<T>(bound: Option<usize>) -> Arc<Shared<T>> {
    Arc::new(Shared {
        queue: HostMutex::new(Queue {
            items: VecDeque::new(),
            bound,
            senders: 1,
            receiver: true,
            rendezvous: bound == Some(0),
            waiting: 0,
            pushed: 0,
            taken: 0,
        }),
        obj: sim::new_object(crate::mirror::caller_site()),
    })
}

/// `std::sync::mpsc::channel`: an unbounded channel.
///
/// ```
/// use nssim::sync::mpsc::channel;
/// use nssim::thread;
///
/// let report = nssim::check_dfs(|| {
///     let (tx, rx) = channel();
///     let tx2 = tx.clone();
///     thread::spawn(move || tx.send(1).unwrap());
///     thread::spawn(move || tx2.send(2).unwrap());
///     let mut got = [rx.recv().unwrap(), rx.recv().unwrap()];
///     got.sort();
///     assert_eq!(got, [1, 2]);
///     assert!(rx.recv().is_err(), "every sender has gone");
/// }, 2);
/// assert!(!report.is_failure(), "{report}");
/// ```
#[track_caller]
pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    if sim::active() {
        let shared = simulated(None);
        let rx = Receiver(ReceiverInner::Simulated(Arc::clone(&shared)));
        return (Sender(SenderInner::Simulated(shared)), rx);
    }
    let (tx, rx) = std::sync::mpsc::channel();
    (
        Sender(SenderInner::Real(tx)),
        Receiver(ReceiverInner::Real(rx)),
    )
}

/// `std::sync::mpsc::sync_channel`: a channel of at most `bound` queued
/// values; with 0, a rendezvous (a send waits until a receiver took its
/// value, and `try_send` succeeds only while a receiver waits).
#[track_caller]
pub fn sync_channel<T>(bound: usize) -> (SyncSender<T>, Receiver<T>) {
    if sim::active() {
        let shared = simulated(Some(bound));
        let rx = Receiver(ReceiverInner::Simulated(Arc::clone(&shared)));
        return (SyncSender(SenderInner::Simulated(shared)), rx);
    }
    let (tx, rx) = std::sync::mpsc::sync_channel(bound);
    (
        SyncSender(SenderInner::RealSync(tx)),
        Receiver(ReceiverInner::Real(rx)),
    )
}

impl<T> SenderInner<T> {
    fn send(&self, v: T, wait: bool) -> Result<(), TrySendError<T>> {
        match self {
            SenderInner::Simulated(s) => s.send(v, wait),
            SenderInner::Real(tx) => tx.send(v).map_err(|e| TrySendError::Disconnected(e.0)),
            SenderInner::RealSync(tx) if wait => {
                tx.send(v).map_err(|e| TrySendError::Disconnected(e.0))
            }
            SenderInner::RealSync(tx) => tx.try_send(v),
        }
    }

    fn duplicate(&self) -> SenderInner<T> {
        match self {
            SenderInner::Simulated(s) => {
                s.queue().senders += 1;
                SenderInner::Simulated(Arc::clone(s))
            }
            SenderInner::Real(tx) => SenderInner::Real(tx.clone()),
            SenderInner::RealSync(tx) => SenderInner::RealSync(tx.clone()),
        }
    }
}

impl<T> Drop for SenderInner<T> {
    fn drop(&mut self) {
        if let SenderInner::Simulated(s) = self {
            let last = {
                let mut q = s.queue();
                q.senders -= 1;
                q.senders == 0
            };
            if last {
                // A waiting receiver learns that nothing more will come.
                sim::wake_all(s.obj, 0);
            }
        }
    }
}

fn blocking_send<T>(inner: &SenderInner<T>, v: T) -> Result<(), SendError<T>> {
    inner.send(v, true).map_err(|e| match e {
        TrySendError::Disconnected(v) | TrySendError::Full(v) => SendError(v),
    })
}

impl<T> Sender<T> {
    pub fn send(&self, v: T) -> Result<(), SendError<T>> {
        blocking_send(&self.0, v)
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        Sender(self.0.duplicate())
    }
}

impl<T> SyncSender<T> {
    /// Waits for room in the channel.
    pub fn send(&self, v: T) -> Result<(), SendError<T>> {
        blocking_send(&self.0, v)
    }

    pub fn try_send(&self, v: T) -> Result<(), TrySendError<T>> {
        self.0.send(v, false)
    }
}

impl<T> Clone for SyncSender<T> {
    fn clone(&self) -> Self {
        SyncSender(self.0.duplicate())
    }
}

impl<T> Receiver<T> {
    /// Waits for a value; an error once it is empty and every sender has
    /// gone.
    pub fn recv(&self) -> Result<T, RecvError> {
        match &self.0 {
            ReceiverInner::Simulated(s) => s.recv(true).map_err(|_| RecvError),
            ReceiverInner::Real(rx) => rx.recv(),
        }
    }

    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        match &self.0 {
            ReceiverInner::Simulated(s) => s.recv(false),
            ReceiverInner::Real(rx) => rx.try_recv(),
        }
    }

    /// Inside an execution, time is virtual: a value already sent or
    /// sendable in this schedule comes; none else does, and an empty
    /// channel whose senders remain times out at once.
    pub fn recv_timeout(&self, timeout: std::time::Duration) -> Result<T, RecvTimeoutError> {
        match &self.0 {
            ReceiverInner::Simulated(s) => {
                let convert = |e| match e {
                    TryRecvError::Empty => RecvTimeoutError::Timeout,
                    TryRecvError::Disconnected => RecvTimeoutError::Disconnected,
                };
                match s.recv(false) {
                    Err(TryRecvError::Empty) => {
                        // Others run while the clock moves on; a value sent
                        // among them is received, none times the wait out.
                        let ns = u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX);
                        sim::sleep("recv_timeout", ns);
                        s.recv(false).map_err(convert)
                    }
                    other => other.map_err(convert),
                }
            }
            ReceiverInner::Real(rx) => rx.recv_timeout(timeout),
        }
    }

    /// The values as they come, until every sender has gone.
    pub fn iter(&self) -> impl Iterator<Item = T> + '_ {
        std::iter::from_fn(move || self.recv().ok())
    }

    /// The values queued now.
    pub fn try_iter(&self) -> impl Iterator<Item = T> + '_ {
        std::iter::from_fn(move || self.try_recv().ok())
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        if let ReceiverInner::Simulated(s) = &self.0 {
            s.queue().receiver = false;
            // A sender waiting for room learns that none will come.
            sim::wake_all(s.obj, 0);
        }
    }
}
