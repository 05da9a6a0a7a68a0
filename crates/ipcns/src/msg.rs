//! SysV message queues of an ipc namespace: made or found by `msgget`,
//! filled by `msgsnd` and emptied by `msgrcv` (both without waiting,
//! `IPC_NOWAIT`), looked at and removed by `msgctl`, and freed with their
//! namespace.
//!
//! Models ipc/msg.c: `newque` (a queue's byte limit is the namespace's
//! `kernel.msgmnb` when it is made), `do_msgsnd` (a message over
//! `kernel.msgmax` is EINVAL; one that does not fit, in bytes or in
//! count, EAGAIN), `do_msgrcv` with a message type of 0 (the oldest
//! message; ENOMSG when there is none, E2BIG when it is longer than the
//! buffer), `msgctl_stat`, `freeque` and `msg_exit_ns`. No message queue
//! is charged to a user: the kernel charges none.

use crate::util::{IpcIds, IpcObject, KernIpcPerm};
use crate::IpcNamespace;
use sim::{HostMutex, ObjId};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// `MSGMNI`, `MSGMAX` and `MSGMNB`: a new namespace's `kernel.msgmni`
/// (queues), `kernel.msgmax` (bytes of one message) and `kernel.msgmnb`
/// (bytes of one queue).
pub const MSGMNI: u64 = 32_000;
pub const MSGMAX: u64 = 8_192;
pub const MSGMNB: u64 = 16_384;

/// One queue (`struct msg_queue`).
pub struct MsgQueue {
    pub obj: ObjId,
    pub perm: KernIpcPerm,
    /// `q_qbytes`: the most bytes (and messages) it holds.
    pub qbytes: u64,
    /// The sizes of its messages, oldest first.
    messages: HostMutex<VecDeque<u64>>,
}

impl IpcObject for MsgQueue {
    fn perm(&self) -> &KernIpcPerm {
        &self.perm
    }

    fn obj(&self) -> ObjId {
        self.obj
    }
}

/// Why `msgsnd` or `msgrcv` failed, past the look-up and permissions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MsgError {
    /// EINVAL: a message longer than `kernel.msgmax`.
    TooLong,
    /// EAGAIN: the message does not fit and the caller does not wait.
    Full,
    /// ENOMSG: no message and the caller does not wait.
    Empty,
    /// E2BIG: the oldest message is longer than the buffer.
    TooBig,
}

impl MsgQueue {
    /// `msg_qnum` and `msg_cbytes`.
    pub fn stat(&self) -> (u64, u64) {
        let messages = self.messages.lock();
        (messages.len() as u64, messages.iter().sum())
    }

    /// `do_msgsnd` of a message of `size` bytes without waiting, against
    /// `msgmax`.
    pub fn send(&self, size: u64, msgmax: u64) -> Result<(), MsgError> {
        sim::touch(self.obj, "msgsnd");
        if size > msgmax {
            return Err(MsgError::TooLong);
        }
        let mut messages = self.messages.lock();
        let bytes: u64 = messages.iter().sum();
        let fits = bytes + size <= self.qbytes && (messages.len() as u64) < self.qbytes;
        if !fits {
            return Err(MsgError::Full);
        }
        messages.push_back(size);
        Ok(())
    }

    /// `do_msgrcv` of the oldest message into a buffer of `size` bytes,
    /// without waiting: its size.
    pub fn receive(&self, size: u64) -> Result<u64, MsgError> {
        sim::touch(self.obj, "msgrcv");
        let mut messages = self.messages.lock();
        match messages.front() {
            None => Err(MsgError::Empty),
            Some(&len) if len > size => Err(MsgError::TooBig),
            Some(_) => Ok(messages.pop_front().unwrap_or(0)),
        }
    }
}

/// `msg_ids(ns)` and the namespace's `kernel.msg*` sysctls.
pub struct MsgIds {
    pub ids: IpcIds<MsgQueue>,
    pub msgmni: AtomicU64,
    pub msgmax: AtomicU64,
    pub msgmnb: AtomicU64,
}

impl IpcNamespace {
    /// The namespace's message queues (made at first use).
    pub fn msg_ids(&self) -> &MsgIds {
        self.msg.get_or_init(|| MsgIds {
            ids: IpcIds::new("msg_ids(ns).rwsem"),
            msgmni: AtomicU64::new(MSGMNI),
            msgmax: AtomicU64::new(MSGMAX),
            msgmnb: AtomicU64::new(MSGMNB),
        })
    }
}

impl MsgIds {
    /// `newque` by the owner in `perm` (whose id is the next one), under
    /// the rwsem: `None` (ENOSPC) at `kernel.msgmni` queues.
    pub fn newque(&self, perm: KernIpcPerm) -> Option<Arc<MsgQueue>> {
        if self.ids.in_use() as u64 >= self.msgmni.load(Ordering::Relaxed) {
            return None;
        }
        let queue = Arc::new(MsgQueue {
            obj: sim::new_object("msg_queue"),
            perm,
            qbytes: self.msgmnb.load(Ordering::Relaxed),
            messages: HostMutex::new("msq->q_messages", VecDeque::new()),
        });
        self.ids.ipc_addid(Arc::clone(&queue));
        Some(queue)
    }

    /// `freeque`: the queue leaves the ids and its messages are freed.
    pub fn freeque(&self, queue: &MsgQueue) {
        sim::touch(queue.obj, "freeque");
        self.ids.ipc_rmid(queue);
        queue.messages.lock().clear();
        sim::free_object(queue.obj);
    }
}

/// `msg_exit_ns`: every queue of the namespace freed with it.
pub(crate) fn msg_exit_ns(ns: &IpcNamespace) {
    let Some(msg) = ns.msg.get() else {
        return;
    };
    for queue in msg.ids.take_all() {
        sim::touch(queue.obj, "free_ipcs");
        sim::free_object(queue.obj);
    }
}
