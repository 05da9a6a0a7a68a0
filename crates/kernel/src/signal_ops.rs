//! The signal paths of the syscalls: `pidfd_send_signal` of a queued
//! signal (its permission, the charge, a receiver that is dying or gone),
//! `sigtimedwait`, and what exiting and release do to the signals
//! pending, on the model of [`crate::signal`].
//!
//! Models kernel/signal.c (`__sigqueue_alloc`, `__sigqueue_free`,
//! `prepare_signal`, `flush_sigqueue`) and the rlimit paths of
//! kernel/ucount.c it calls.

use super::World;
use crate::costs::SYSCALL;
use crate::errno::Errno;
use crate::signal::{kill_ok_by_cred, Sigqueue};
use crate::task::Task;
use sim::ObjId;
use std::sync::Arc;
use ucounts::{
    dec_rlimit_put_ucounts, dec_rlimit_ucounts, draw_rlimit_levels, inc_rlimit_get_ucounts,
    inc_rlimit_ucounts, OverUnwind, RlimitType, LONG_MAX,
};

impl World {
    /// `rt_sigqueueinfo(pid, SIGRTMIN, SI_QUEUE)` to task `target`, which
    /// blocks the signal: ESRCH once it is reaped, EPERM without the right
    /// to signal it, EAGAIN when the signal cannot be queued (its user
    /// over RLIMIT_SIGPENDING); else it is pending.
    pub(super) fn sigqueue(&self, task: &Task, target: &str) -> Result<(), Errno> {
        sim::point("rt_sigqueueinfo", ObjId::NONE, &SYSCALL);
        let t = self.task_named(target).ok_or(Errno::ESRCH)?;
        if t.is_released() {
            return Err(Errno::ESRCH);
        }
        // `pidfd_send_signal`: a receiver with no pid in the sender's
        // pid namespace (outside it, or in a sibling) is EINVAL.
        if !t.pid_ns().is_seen_from(&task.pid_ns()) {
            return Err(Errno::EINVAL);
        }
        let same = std::ptr::eq(Arc::as_ptr(&t), task);
        if !same && !kill_ok_by_cred(&task.cred(), &t.cred()) {
            return Err(Errno::EPERM);
        }
        // `lock_task_sighand`: the receiver's credentials, which the
        // charge goes to, stay alive while its siglock is held (its
        // release frees them only after it has flushed under the lock).
        let mut sighand = t.sighand.lock();
        if sighand.gone {
            return Err(Errno::ESRCH);
        }
        // `prepare_signal`: to a process in the middle of dying the signal
        // is dropped, and the send succeeds, with nothing charged.
        if sighand.exiting {
            return Ok(());
        }
        let q = self.sigqueue_alloc(&t).ok_or(Errno::EAGAIN)?;
        sighand.pending.push(q);
        Ok(())
    }

    /// `sigtimedwait` with a zero timeout for the blocked signal: the
    /// oldest pending one is taken and freed, EAGAIN when none is.
    pub(super) fn sigtimedwait(&self, task: &Task) -> Result<(), Errno> {
        sim::point("rt_sigtimedwait", ObjId::NONE, &SYSCALL);
        let mut sighand = task.sighand.lock();
        if sighand.pending.is_empty() {
            return Err(Errno::EAGAIN);
        }
        let q = sighand.pending.remove(0);
        self.sigqueue_free(q);
        Ok(())
    }

    /// `do_group_exit`: SIGNAL_GROUP_EXIT set under the siglock, before
    /// the process starts to exit; it stays pending until released.
    pub(super) fn group_exit(&self, task: &Task) {
        if self.uses_signals {
            task.sighand.lock().exiting = true;
        }
    }

    /// `__exit_signal` at `release_task`, under the siglock: every signal
    /// still pending is freed (`flush_sigqueue`) and the task is gone for
    /// senders, before its credentials are put.
    pub(super) fn exit_signal(&self, task: &Task) {
        if !self.uses_signals {
            return;
        }
        let mut sighand = task.sighand.lock();
        for q in std::mem::take(&mut sighand.pending) {
            self.sigqueue_free(q);
        }
        sighand.gone = true;
    }

    /// `__sigqueue_alloc` for receiver `t` (under its siglock): the
    /// charge, compared with `t`'s RLIMIT_SIGPENDING; `None` (and the
    /// charge taken back) when over it.
    fn sigqueue_alloc(&self, t: &Task) -> Option<Sigqueue> {
        let cred = t.cred();
        let rlimit = t.rlimit(RlimitType::Sigpending).0;
        let limit = i64::try_from(rlimit).unwrap_or(LONG_MAX);
        let procs = &self.procs;
        let table = procs.ucounts();
        let patches = procs.signal_patches();
        if !patches.ucounts {
            let user = Arc::clone(cred.user.as_ref()?);
            user.charge_rlimit(RlimitType::Sigpending, 1, limit)?;
            return Some(Sigqueue::User(user));
        }
        let leaf = Arc::clone(cred.ucounts.as_ref()?);
        let check = procs.rlimit_check();
        draw_rlimit_levels(&leaf, RlimitType::Sigpending, rlimit, check);
        if !patches.refcount_fix {
            let n = inc_rlimit_ucounts(table, &leaf, RlimitType::Sigpending, 1, check);
            let kept = if n == 1 {
                table.get_ucounts(&leaf)
            } else {
                Some(leaf)
            };
            if n < LONG_MAX && n <= limit {
                return Some(Sigqueue::Leaf(kept));
            }
            if let Some(leaf) = kept {
                if dec_rlimit_ucounts(table, &leaf, RlimitType::Sigpending, 1) {
                    table.put_ucounts(&leaf);
                }
            }
            return None;
        }
        let unwind = if patches.no_leak {
            OverUnwind::TakesBack
        } else {
            OverUnwind::Leaks
        };
        let n = inc_rlimit_get_ucounts(table, &leaf, RlimitType::Sigpending, false, check, unwind);
        if n == 0 {
            return None;
        }
        if n > limit {
            dec_rlimit_put_ucounts(table, &leaf, RlimitType::Sigpending);
            return None;
        }
        Some(Sigqueue::Levels(leaf))
    }

    /// `__sigqueue_free`: the charge taken back.
    fn sigqueue_free(&self, q: Sigqueue) {
        let table = self.procs.ucounts();
        match q {
            Sigqueue::User(user) => {
                user.add_rlimit(RlimitType::Sigpending, -1);
            }
            Sigqueue::Leaf(None) => {}
            Sigqueue::Leaf(Some(leaf)) => {
                if dec_rlimit_ucounts(table, &leaf, RlimitType::Sigpending, 1) {
                    table.put_ucounts(&leaf);
                }
            }
            Sigqueue::Levels(leaf) => dec_rlimit_put_ucounts(table, &leaf, RlimitType::Sigpending),
        }
    }
}
